/* params_text.c - clattn_params as text ("variant=1 rows=4 ..."): the
 * tuning database's params column, the overrides' fields and the CLI's;
 * pure, below the database and the choice that read it. */
#include "base/base.h"
#include "base/versioned.h"
#include "family/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void clattn__params_format(const clattn_params *p, char *buf, size_t cap) {
  if (buf == NULL || cap == 0)
    return;
  buf[0] = '\0';
  if (p == NULL)
    return;
  clattn_params q = *p;
  for (int i = 0; i < CLATTN__NPARAMS; i++)
    if (i < CLATTN__NPARAMS_ALWAYS || *clattn__param(&q, i) != 0)
      clattn__appendf(buf, cap, "%s%s=%d", i ? " " : "", clattn__param_names[i],
                      *clattn__param(&q, i));
}

void clattn_params_format(const clattn_params *p, char *buf, size_t cap) {
  clattn_params own;
  char why[128];
  if (buf == NULL || cap == 0)
    return;
  buf[0] = '\0';
  if (p != NULL && clattn__struct_in(&own, sizeof own, p, "clattn_params", why,
                                     sizeof why) == CLATTN_OK)
    clattn__params_format(&own, buf, cap);
}

clattn_status clattn__params_fields(const char *text, clattn_params *out,
                                    char *why, size_t cap) {
  const char *s = text;
  while (*s) {
    while (*s == ' ' || *s == ',' || *s == '\t')
      s++;
    if (!*s)
      break;
    const char *eq = s;
    while (*eq && *eq != '=' && *eq != ' ' && *eq != ',')
      eq++;
    int f = -1;
    for (int i = 0; i < CLATTN__NPARAMS; i++)
      if ((size_t)(eq - s) == strlen(clattn__param_names[i]) &&
          strncmp(s, clattn__param_names[i], (size_t)(eq - s)) == 0)
        f = i;
    if (f < 0 || *eq != '=') {
      snprintf(why, cap,
               "\"%.*s\": expected variant=, rows=, keys=, wg=, splits=, "
               "prefetch= or scheme=",
               (int)(eq - s + (*eq == '=')), s);
      return CLATTN_ERR_INVALID_ARG;
    }
    char *end = NULL;
    long v = strtol(eq + 1, &end, 10);
    if (end == eq + 1 || v < 0 || v > 1 << 20 ||
        (*end && *end != ' ' && *end != ',' && *end != '\t')) {
      snprintf(why, cap, "%s: expected a count >= 0, got \"%.16s\"",
               clattn__param_names[f], eq + 1);
      return CLATTN_ERR_INVALID_ARG;
    }
    *clattn__param(out, f) = (int)v;
    s = end;
  }
  return CLATTN_OK;
}

clattn_status clattn__params_parse(const char *text, clattn_params *out) {
  char why[128];
  clattn_params p = {.size = sizeof p};
  clattn_status rc = clattn__params_fields(text, &p, why, sizeof why);
  if (rc != CLATTN_OK)
    p = (clattn_params){.size = sizeof p};
  *out = p;
  return rc;
}

clattn_status clattn_params_parse(const char *text, clattn_params *out) {
  clattn_params own;
  char why[128];
  if (text == NULL || out == NULL)
    return CLATTN_ERR_INVALID_ARG;
  clattn_status rc = clattn__params_parse(text, &own);
  clattn_status wrc = clattn__struct_out(out, &own, sizeof own, "clattn_params",
                                         why, sizeof why);
  return wrc ? wrc : rc;
}

int clattn__params_set(const clattn_params *p) {
  clattn_params q;
  if (p == NULL)
    return 0;
  q = *p;
  for (int i = 0; i < CLATTN__NPARAMS; i++)
    if (*clattn__param(&q, i))
      return 1;
  return 0;
}
