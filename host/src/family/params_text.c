/* params_text.c - clattn_params_format and clattn_params_parse: the text of
 * clattn_params' named fields ("variant=1 rows=4"), which need no family.
 * A family's own names, and the library's use of the text, are
 * tunables.c's. */
#include "base/base.h"
#include "base/versioned.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"variant", "rows",     "keys",  "wg",
                                    "splits",  "prefetch", "scheme"};
enum { FIELDS = sizeof names / sizeof names[0] };

static int *field(clattn_params *p, int i) {
  int *f[FIELDS] = {&p->variant, &p->rows,     &p->keys,  &p->wg,
                    &p->splits,  &p->prefetch, &p->scheme};
  return f[i];
}

void clattn_params_format(const clattn_params *p, char *buf, size_t cap) {
  clattn_params own;
  char why[128];
  if (buf == NULL || cap == 0)
    return;
  buf[0] = '\0';
  if (p == NULL || clattn__struct_in(&own, sizeof own, p, "clattn_params", why,
                                     sizeof why) != CLATTN_OK)
    return;
  int n = 0;
  for (int i = 0; i < FIELDS; i++)
    if (*field(&own, i))
      clattn__appendf(buf, cap, "%s%s=%d", n++ ? " " : "", names[i],
                      *field(&own, i));
  if (own.text != NULL && own.text[0])
    clattn__appendf(buf, cap, "%s%s", n ? " " : "", own.text);
}

static clattn_status parse(const char *s, clattn_params *p) {
  for (;;) {
    while (*s == ' ' || *s == ',' || *s == '\t')
      s++;
    if (!*s)
      return CLATTN_OK;
    const char *eq = s;
    while (*eq && *eq != '=' && *eq != ' ' && *eq != ',')
      eq++;
    int f = -1;
    for (int i = 0; i < FIELDS; i++)
      if ((size_t)(eq - s) == strlen(names[i]) &&
          strncmp(s, names[i], (size_t)(eq - s)) == 0)
        f = i;
    char *end = NULL;
    const long v = f < 0 || *eq != '=' ? -1 : strtol(eq + 1, &end, 10);
    if (v < 0 || v > 1 << 20 || end == eq + 1 ||
        (*end && *end != ' ' && *end != ',' && *end != '\t'))
      return CLATTN_ERR_INVALID_ARG;
    *field(p, f) = (int)v;
    s = end;
  }
}

clattn_status clattn_params_parse(const char *text, clattn_params *out) {
  clattn_params own = {.size = sizeof own};
  char why[128];
  if (text == NULL || out == NULL)
    return CLATTN_ERR_INVALID_ARG;
  clattn_status rc = parse(text, &own);
  if (rc != CLATTN_OK)
    own = (clattn_params){.size = sizeof own};
  clattn_status wrc = clattn__struct_out(out, &own, sizeof own, "clattn_params",
                                         why, sizeof why);
  return wrc ? wrc : rc;
}
