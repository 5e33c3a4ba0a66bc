/* tunables.c - a call's values of its family's tunables as text and from
 * the public clattn_params (tunables.h). */
#include "family/family.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* clattn_params' named fields, in its order: the names they stand for. */
static const char *const v1_names[] = {"variant", "rows",     "keys",  "wg",
                                       "splits",  "prefetch", "scheme"};
enum { V1_FIELDS = sizeof v1_names / sizeof v1_names[0] };

static int v1_value(const clattn_params *p, int i) {
  const int v[V1_FIELDS] = {p->variant, p->rows,     p->keys,  p->wg,
                            p->splits,  p->prefetch, p->scheme};
  return v[i];
}

static int find(const clattn__family *F, const char *name, size_t len) {
  for (int i = 0; i < F->ntunables; i++)
    if (strlen(F->tunables[i].name) == len &&
        strncmp(F->tunables[i].name, name, len) == 0)
      return i;
  return -1;
}

static int is_v1_name(const char *name, size_t len) {
  for (int i = 0; i < V1_FIELDS; i++)
    if (strlen(v1_names[i]) == len && strncmp(v1_names[i], name, len) == 0)
      return 1;
  return 0;
}

clattn__params clattn__params_of(const clattn__family *F, const int *values) {
  clattn__params p;
  memset(&p, 0, sizeof p);
  memcpy(p.v, values, (size_t)F->ntunables * sizeof *values);
  return p;
}

int clattn__params_any(const clattn__params *p) {
  if (p == NULL)
    return 0;
  for (int i = 0; i < CLATTN__TUNABLES_MAX; i++)
    if (p->v[i])
      return 1;
  return 0;
}

int clattn__params_flagged(const clattn__family *F, const clattn__params *p,
                           unsigned flag) {
  for (int i = 0; i < F->ntunables; i++)
    if (F->tunables[i].flags & flag)
      return p ? p->v[i] : 0;
  return 0;
}

void clattn__tunable_names(const clattn__family *F, char *buf, size_t cap) {
  if (cap)
    buf[0] = '\0';
  for (int i = 0; i < F->ntunables; i++)
    clattn__appendf(buf, cap, "%s%s", i ? ", " : "", F->tunables[i].name);
  if (F->ntunables == 0)
    clattn__appendf(buf, cap, "none");
}

void clattn__params_format(const clattn__family *F, const clattn__params *p,
                           char *buf, size_t cap) {
  if (buf == NULL || cap == 0)
    return;
  buf[0] = '\0';
  if (F == NULL || p == NULL)
    return;
  int n = 0;
  for (int i = 0; i < F->ntunables; i++)
    if (p->v[i])
      clattn__appendf(buf, cap, "%s%s=%d", n++ ? " " : "", F->tunables[i].name,
                      p->v[i]);
}

/* Value v of tunable i of F, or the reason it is out of range. */
static clattn_status set_value(const clattn__family *F, int i, long v,
                               clattn__params *p, char *why, size_t cap) {
  const clattn__tunable *T = &F->tunables[i];
  if (v != 0 && (v < T->min || v > T->max)) {
    snprintf(why, cap, "%s=%ld: the %s family's %s is %d to %d (or 0: %s)",
             T->name, v, F->name, T->name, T->min, T->max, T->automatic);
    return CLATTN_ERR_INVALID_ARG;
  }
  p->v[i] = (int)v;
  return CLATTN_OK;
}

static int separator(char c) { return c == ' ' || c == ',' || c == '\t'; }

clattn_status clattn__params_parse(const clattn__family *F, const char *text,
                                   clattn__params *p, char *why, size_t cap) {
  char names[160];
  const char *s = text ? text : "";
  for (;;) {
    while (separator(*s))
      s++;
    if (!*s)
      return CLATTN_OK;
    const char *eq = s;
    while (*eq && *eq != '=' && !separator(*eq))
      eq++;
    const size_t len = (size_t)(eq - s);
    const int i = find(F, s, len);
    if (*eq != '=' || (i < 0 && !is_v1_name(s, len))) {
      clattn__tunable_names(F, names, sizeof names);
      snprintf(why, cap,
               "\"%.*s\": expected name=value with a tunable of the %s "
               "family (%s)",
               (int)(len < 40 ? len : 40), s, F->name, names);
      return CLATTN_ERR_INVALID_ARG;
    }
    char *end = NULL;
    const long v = strtol(eq + 1, &end, 10);
    if (end == eq + 1 || (*end && !separator(*end))) {
      snprintf(why, cap, "%.*s: expected a whole number, got \"%.16s\"",
               (int)len, s, eq + 1);
      return CLATTN_ERR_INVALID_ARG;
    }
    if (i < 0 && v != 0) {
      clattn__tunable_names(F, names, sizeof names);
      snprintf(why, cap, "%.*s: the %s family has no such tunable (%s)",
               (int)len, s, F->name, names);
      return CLATTN_ERR_INVALID_ARG;
    }
    clattn_status rc;
    if (i >= 0 && (rc = set_value(F, i, v, p, why, cap)))
      return rc;
    s = end;
  }
}

clattn_status clattn__params_in(const clattn__family *F,
                                const clattn_params *pub, clattn__params *out,
                                char *why, size_t cap) {
  char names[160];
  memset(out, 0, sizeof *out);
  if (pub == NULL)
    return CLATTN_OK;
  for (int f = 0; f < V1_FIELDS; f++) {
    const int v = v1_value(pub, f);
    if (v == 0)
      continue;
    const int i = find(F, v1_names[f], strlen(v1_names[f]));
    if (i < 0) {
      clattn__tunable_names(F, names, sizeof names);
      snprintf(why, cap,
               "clattn_params.%s: the %s family has no such tunable (%s)",
               v1_names[f], F->name, names);
      return CLATTN_ERR_INVALID_ARG;
    }
    clattn_status rc = set_value(F, i, v, out, why, cap);
    if (rc)
      return rc;
  }
  return clattn__params_parse(F, pub->text, out, why, cap);
}
