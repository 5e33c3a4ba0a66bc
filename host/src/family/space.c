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
    int *g = realloc(s->val, (size_t)nc * (size_t)s->ndims * sizeof *g);
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
  for (int d = 0; d < s->ndims; d++)
    clattn__appendf(buf, cap, "%s%s=%d", d ? " " : "", s->dim[d],
                    s->val[i * s->ndims + d]);
}

void clattn__space_init_params(clattn__space *s) {
  memset(s, 0, sizeof *s);
  s->ndims = CLATTN__NPARAMS;
  for (int i = 0; i < CLATTN__NPARAMS; i++)
    s->dim[i] = clattn__param_names[i];
  s->def = -1;
}

clattn_params clattn__params_of(const int *values) {
  clattn_params p = {.size = sizeof p};
  for (int d = 0; d < CLATTN__NPARAMS; d++)
    *clattn__param(&p, d) = values[d];
  return p;
}

clattn_params clattn__space_params(const clattn__space *s, int i) {
  return clattn__params_of(&s->val[i * s->ndims]);
}

void clattn__params_values(const clattn_params *p, int *values) {
  clattn_params q = *p;
  for (int d = 0; d < CLATTN__NPARAMS; d++)
    values[d] = *clattn__param(&q, d);
}

clattn_status clattn__plan_params(const clattn__family *F,
                                  const clattn__target *t, const void *desc,
                                  const clattn_params *p, void *copy,
                                  void *plan, char *why, size_t cap) {
  clattn__desc_with_params(F, desc, p, copy);
  clattn_status rc = F->plan(t, copy, plan, why, cap);
  if (rc == CLATTN_OK && F->fits && !F->fits(t, copy, plan, why, cap))
    rc = CLATTN_ERR_UNSUPPORTED;
  return rc;
}

int clattn__space_try(const clattn__family *F, const clattn__target *t,
                      const void *desc, clattn_params p, clattn__space *s) {
  _Alignas(16) unsigned char copy[CLATTN__DESC_MAX];
  _Alignas(16) unsigned char plan[CLATTN__PLAN_MAX];
  char why[160];
  if (clattn__plan_params(F, t, desc, &p, copy, plan, why, sizeof why)) {
    s->pruned++;
    return -1;
  }
  int v[CLATTN__NPARAMS];
  const clattn_params r = F->resolved(plan);
  clattn__params_values(&r, v);
  int i = clattn__space_add(s, v);
  return i < 0 ? -2 : i;
}
