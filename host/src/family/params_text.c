/* params_text.c - clattn_params as text ("variant=1 rows=4 ..."): the
 * tuning database's params column, the overrides' fields and the CLI's;
 * pure, below the database and the choice that read it. */
#include "base/base.h"
#include "family/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void clattn_params_format(const clattn_params *p, char *buf, size_t cap) {
  if (buf == NULL || cap == 0)
    return;
  if (p == NULL) {
    buf[0] = '\0';
    return;
  }
  clattn_params q = *p;
  buf[0] = '\0';
  for (int i = 0; i < CLATTN__NPARAMS; i++)
    if (i < CLATTN__NPARAMS_ALWAYS || *clattn__param(&q, i) != 0)
      clattn__appendf(buf, cap, "%s%s=%d", i ? " " : "",
                      clattn__param_names[i], *clattn__param(&q, i));
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

clattn_status clattn_params_parse(const char *text, clattn_params *out) {
  char why[128];
  if (text == NULL || out == NULL)
    return CLATTN_ERR_INVALID_ARG;
  clattn_params p = {0, 0, 0, 0, 0, 0, 0};
  clattn_status rc = clattn__params_fields(text, &p, why, sizeof why);
  *out = rc == CLATTN_OK ? p : (clattn_params){0, 0, 0, 0, 0, 0, 0};
  return rc;
}

int clattn__params_set(const clattn_params *p) {
  clattn_params q = p ? *p : (clattn_params){0, 0, 0, 0, 0, 0, 0};
  for (int i = 0; i < CLATTN__NPARAMS; i++)
    if (*clattn__param(&q, i))
      return 1;
  return 0;
}
