/* params.c - the per-family overrides of
 * clattn_ctx_set_params and $CLATTN_PARAMS ("prefill: variant=1; decode:
 * splits=8"), keyed by the registry's family names (or former names). */
#include "choice/choice.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const clattn__params *clattn__override(const clattn_ctx *ctx, int f,
                                       const char **from) {
  const clattn__choice_state *c = ctx->choice;
  if (c == NULL || f < 0 || !c->has_override[f])
    return NULL;
  *from = c->override_from[f];
  return &c->override[f];
}

/* "prefill: ...", "decode: ..." for every family, for messages. */
static void expected(char *buf, size_t cap) {
  buf[0] = '\0';
  for (int i = 0; i < clattn__family_count(); i++)
    clattn__appendf(buf, cap, "%s\"%s: ...\"", i ? " or " : "",
                    clattn__family_at(i)->name);
}

clattn_status clattn__set_overrides(clattn_ctx *ctx, const char *spec,
                                    const char *from) {
  const int nf = clattn__family_count();
  clattn__choice_state *c = ctx->choice;
  int *has = calloc((size_t)nf, sizeof *has);
  clattn__params *ov = calloc((size_t)nf, sizeof *ov);
  char buf[1024], why[256], names[256];
  clattn_status rc = CLATTN_OK;
  if (has == NULL || ov == NULL) {
    rc = clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
    goto done;
  }
  if (spec && strlen(spec) >= sizeof buf) {
    rc = clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "%s: too long", from);
    goto done;
  }
  snprintf(buf, sizeof buf, "%s", spec ? spec : "");
  char *save = NULL;
  for (char *seg = strtok_r(buf, ";", &save); seg;
       seg = strtok_r(NULL, ";", &save)) {
    while (isspace((unsigned char)*seg))
      seg++;
    if (!*seg)
      continue;
    char *colon = strchr(seg, ':');
    int f = -1;
    if (colon != NULL) {
      /* a family's name or former name (clattn__family_find) */
      char name[64];
      const size_t len = (size_t)(colon - seg);
      if (len < sizeof name) {
        memcpy(name, seg, len);
        name[len] = '\0';
        f = clattn__family_index(clattn__family_find(name));
      }
    }
    if (f < 0) {
      expected(names, sizeof names);
      rc = clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "%s: \"%.40s\": expected %s", from, seg, names);
      goto done;
    }
    const clattn__family *F = clattn__family_at(f);
    if (clattn__params_parse(F, colon + 1, &ov[f], why, sizeof why)) {
      rc = clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "%s %s: %s", from,
                        F->name, why);
      goto done;
    }
    has[f] = clattn__params_any(&ov[f]);
  }
  for (int f = 0; f < nf; f++) {
    c->has_override[f] = has[f];
    c->override[f] = ov[f];
    snprintf(c->override_from[f], sizeof c->override_from[f], "%s", from);
  }
  clattn__memo_invalidate(c->memo); /* choices made under the old ones */
done:
  free(has);
  free(ov);
  return rc;
}

clattn_status clattn_ctx_set_params(clattn_ctx *ctx, const char *spec) {
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  if (locked == NULL)
    return CLATTN_ERR_MISUSE;
  ctx->errmsg[0] = '\0';
  clattn_status rc = clattn__set_overrides(ctx, spec, "clattn_ctx_set_params");
  clattn__ctx_leave(locked);
  return rc;
}
