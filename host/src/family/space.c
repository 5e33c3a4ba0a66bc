/* space.c - tuning spaces (space.h). */
#include "family/family.h"

#include <stdlib.h>
#include <string.h>

int clattn__space_add(clattn__space *s, const int *values) {
  for (int i = 0; i < s->n; i++)
    if (memcmp(&s->val[i * s->ndims], values,
               (size_t)s->ndims * sizeof *values) == 0)
      return i;
  if (s->n == s->cap) {
    int nc = s->cap ? 2 * s->cap : 64;
    /* a space of no dimensions (a family without tunables) has one
     * candidate, which still needs a block */
    const size_t dims = s->ndims > 0 ? (size_t)s->ndims : 1;
    int *g = realloc(s->val, (size_t)nc * dims * sizeof *g);
    if (g == NULL)
      return -1;
    s->val = g;
    s->cap = nc;
  }
  memcpy(&s->val[s->n * s->ndims], values, (size_t)s->ndims * sizeof *values);
  return s->n++;
}

void clattn__space_free(clattn__space *s) {
  free(s->val);
  s->val = NULL;
  s->n = s->cap = 0;
}

void clattn__space_format(const clattn__space *s, int i, char *buf,
                          size_t cap) {
  if (cap)
    buf[0] = '\0';
  int n = 0;
  for (int d = 0; d < s->ndims; d++)
    if (!s->sparse || s->val[i * s->ndims + d] != 0)
      clattn__appendf(buf, cap, "%s%s=%d", n++ ? " " : "", s->dim[d],
                      s->val[i * s->ndims + d]);
}

void clattn__space_init_family(clattn__space *s, const clattn__family *F) {
  memset(s, 0, sizeof *s);
  s->ndims = F->ntunables;
  s->sparse = 1;
  for (int i = 0; i < F->ntunables; i++)
    s->dim[i] = F->tunables[i].name;
  s->def = -1;
}

clattn__params clattn__space_params(const clattn__space *s, int i) {
  clattn__params p;
  memset(&p, 0, sizeof p);
  memcpy(p.v, &s->val[i * s->ndims], (size_t)s->ndims * sizeof *p.v);
  return p;
}

clattn_status clattn__plan_params(const clattn__family *F,
                                  const clattn__target *t, const void *desc,
                                  const clattn__params *p, void *plan,
                                  char *why, size_t cap) {
  clattn_status rc = F->plan(t, desc, p, plan, why, cap);
  if (rc == CLATTN_OK && F->fits && !F->fits(t, desc, plan, why, cap))
    rc = CLATTN_ERR_UNSUPPORTED;
  return rc;
}

int clattn__space_try(const clattn__family *F, const clattn__target *t,
                      const void *desc, const clattn__params *p,
                      clattn__space *s) {
  _Alignas(16) unsigned char plan[CLATTN__PLAN_MAX];
  char why[160];
  if (clattn__plan_params(F, t, desc, p, plan, why, sizeof why)) {
    s->pruned++;
    return -1;
  }
  const clattn__params r = F->resolved(plan);
  int i = clattn__space_add(s, r.v);
  return i < 0 ? -2 : i;
}

clattn__params clattn__resolved_none(const void *plan) {
  (void)plan;
  return (clattn__params){.v = {0}};
}

clattn_status clattn__space_none(const clattn__family *F, clattn__space *s) {
  clattn__space_init_family(s, F);
  const int none[1] = {0};
  s->def = clattn__space_add(s, none);
  return s->def < 0 ? CLATTN_ERR_NOMEM : CLATTN_OK;
}
