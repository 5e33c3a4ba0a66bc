/* attn_opts.c - the attention options every family that takes them
 * shares (attn_opts.h). */
#include "family/attn_opts.h"
#include "family/common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

unsigned clattn__opts_used(const clattn__opts *o) {
  return (o->window != 0 ? CLATTN__OPT_WINDOW : 0u) |
         (o->softcap != 0.0f ? CLATTN__OPT_SOFTCAP : 0u) |
         (o->alibi != NULL ? CLATTN__OPT_ALIBI : 0u) |
         (o->sinks != NULL ? CLATTN__OPT_SINKS : 0u);
}

static const char *const option_name[] = {"window", "softcap", "alibi_slopes",
                                          "sinks"};

/* The per-head arrays' values: slopes finite, sinks neither NaN nor +inf
 * (-inf: no sink). */
static clattn_status check_arrays(const clattn__opts *o, int heads, char *why,
                                  size_t cap) {
  for (int h = 0; o->alibi != NULL && h < heads; h++)
    if (!isfinite(o->alibi[h])) {
      snprintf(why, cap, "alibi_slopes[%d] (%g) is not finite", h,
               (double)o->alibi[h]);
      return CLATTN_ERR_INVALID_ARG;
    }
  for (int h = 0; o->sinks != NULL && h < heads; h++)
    if (isnan(o->sinks[h]) || o->sinks[h] == INFINITY) {
      snprintf(why, cap, "sinks[%d] (%g) must be finite, or -inf for no sink",
               h, (double)o->sinks[h]);
      return CLATTN_ERR_INVALID_ARG;
    }
  return CLATTN_OK;
}

clattn_status clattn__opts_check(const clattn__opts *o, int heads,
                                 unsigned taken, const char *api, char *why,
                                 size_t cap) {
  const unsigned extra = clattn__opts_used(o) & ~taken;
  for (int i = 0; i < 4; i++)
    if (extra & (1u << i)) {
      snprintf(why, cap, "%s does not take the attention option %s", api,
               option_name[i]);
      return CLATTN_ERR_UNSUPPORTED;
    }
  if (o->window < 0) {
    snprintf(why, cap, "window (%d) must be >= 1, or 0 for none", o->window);
    return CLATTN_ERR_INVALID_ARG;
  }
  if (o->softcap < 0.0f || !isfinite(o->softcap)) {
    snprintf(why, cap, "softcap (%g) must be finite and > 0, or 0 for none",
             (double)o->softcap);
    return CLATTN_ERR_INVALID_ARG;
  }
  return check_arrays(o, heads, why, cap);
}

void clattn__opts_defs(const clattn__opts *o, clattn__defs *df) {
  if (o->window != 0)
    clattn__def(df, "WINDOW", 1);
  if (o->softcap != 0.0f)
    clattn__def(df, "SOFTCAP", 1);
  if (o->alibi != NULL)
    clattn__def(df, "ALIBI", 1);
  if (o->sinks != NULL)
    clattn__def(df, "SINKS", 1);
}

clattn_status clattn__opts_args(clattn_ctx *ctx, cl_kernel k, cl_uint *next,
                                const clattn__opts *o, int heads) {
  char why[160];
  clattn_status rc;
  if ((rc = check_arrays(o, heads, why, sizeof why)))
    return clattn__fail(ctx, rc, "%s", why);
  cl_mem arr[2] = {NULL, NULL};
  const size_t bytes = sizeof(float) * (size_t)heads;
  if ((o->alibi != NULL &&
       (rc = clattn__const_buffer(ctx, o->alibi, bytes, &arr[0]))) ||
      (o->sinks != NULL &&
       (rc = clattn__const_buffer(ctx, o->sinks, bytes, &arr[1]))))
    return rc;
  const cl_int window = o->window;
  const cl_float softcap2 = o->softcap * 1.4426950408889634f; /* log2 e */
  if ((rc = clattn__scalars(ctx, k, next, 1, sizeof window, &window)) ||
      (rc = clattn__scalars(ctx, k, next, 1, sizeof softcap2, &softcap2)))
    return rc;
  /* an array not set is NULL in every call of this kernel (its option is
   * compiled out), so it is set once, as a scalar: a plain call pays no
   * driver call for the options */
  for (int i = 0; i < 2; i++)
    if ((rc = arr[i] == NULL
                  ? clattn__scalars(ctx, k, next, 1, sizeof(cl_mem), &arr[i])
                  : clattn__args(ctx, k, next, 1, sizeof(cl_mem), &arr[i])))
      return rc;
  return CLATTN_OK;
}

void clattn__opts_class(const clattn__opts *o, char *buf, size_t cap) {
  size_t len = strlen(buf);
  if (o->window != 0 && len < cap)
    len += (size_t)snprintf(buf + len, cap - len, " w%ld",
                            clattn__pow2_round(o->window));
  if (o->softcap != 0.0f && len < cap)
    len += (size_t)snprintf(buf + len, cap - len, " sc");
  if (o->alibi != NULL && len < cap)
    len += (size_t)snprintf(buf + len, cap - len, " alibi");
  if (o->sinks != NULL && len < cap)
    snprintf(buf + len, cap - len, " sinks");
}

int clattn__opts_class_word(const char *name) {
  return strcmp(name, "w") == 0 || strcmp(name, "sc") == 0 ||
         strcmp(name, "alibi") == 0 || strcmp(name, "sinks") == 0;
}

/* The arrays of shape text's alibi=1 and sinks=1: BLOOM's slopes for 64
 * heads, 2^(-8 (h + 1) / 64), and sinks spread over [-1.5, 1.5]. */
static const float shape_slopes[CLATTN__OPTS_SHAPE_HEADS] = {
    0.917004043f,   0.840896415f,   0.771105413f,   0.707106781f,
    0.648419777f,   0.594603558f,   0.545253866f,   0.5f,
    0.458502022f,   0.420448208f,   0.385552706f,   0.353553391f,
    0.324209889f,   0.297301779f,   0.272626933f,   0.25f,
    0.229251011f,   0.210224104f,   0.192776353f,   0.176776695f,
    0.162104944f,   0.148650889f,   0.136313467f,   0.125f,
    0.114625505f,   0.105112052f,   0.0963881766f,  0.0883883476f,
    0.0810524722f,  0.0743254447f,  0.0681567333f,  0.0625f,
    0.0573127527f,  0.052556026f,   0.0481940883f,  0.0441941738f,
    0.0405262361f,  0.0371627223f,  0.0340783666f,  0.03125f,
    0.0286563764f,  0.026278013f,   0.0240970441f,  0.0220970869f,
    0.020263118f,   0.0185813612f,  0.0170391833f,  0.015625f,
    0.0143281882f,  0.0131390065f,  0.0120485221f,  0.0110485435f,
    0.010131559f,   0.00929068059f, 0.00851959166f, 0.0078125f,
    0.00716409409f, 0.00656950324f, 0.00602426104f, 0.00552427173f,
    0.00506577951f, 0.00464534029f, 0.00425979583f, 0.00390625f,
};
static const float shape_sinks[CLATTN__OPTS_SHAPE_HEADS] = {
    -1.5f,  0.25f,  -1.25f, 0.5f,   -1.0f,  0.75f,  -0.75f, 1.0f,
    -0.5f,  1.25f,  -0.25f, 1.5f,   0.0f,   -1.5f,  0.25f,  -1.25f,
    0.5f,   -1.0f,  0.75f,  -0.75f, 1.0f,   -0.5f,  1.25f,  -0.25f,
    1.5f,   0.0f,   -1.5f,  0.25f,  -1.25f, 0.5f,   -1.0f,  0.75f,
    -0.75f, 1.0f,   -0.5f,  1.25f,  -0.25f, 1.5f,   0.0f,   -1.5f,
    0.25f,  -1.25f, 0.5f,   -1.0f,  0.75f,  -0.75f, 1.0f,   -0.5f,
    1.25f,  -0.25f, 1.5f,   0.0f,   -1.5f,  0.25f,  -1.25f, 0.5f,
    -1.0f,  0.75f,  -0.75f, 1.0f,   -0.5f,  1.25f,  -0.25f, 1.5f,
};

clattn_status clattn__opts_shape(const char *text, int heads, clattn__opts *o,
                                 char *why, size_t cap) {
  clattn__opts r = {0, 0.0f, NULL, NULL};
  int softcap = 0, alibi = 0, sinks = 0;
  clattn_status rc;
  if ((rc = clattn__shape_int(text, "window", 0, 1 << 30, &r.window, why,
                              cap)) ||
      (rc = clattn__shape_int(text, "softcap", 0, 1 << 20, &softcap, why,
                              cap)) ||
      (rc = clattn__shape_int(text, "alibi", 0, 1, &alibi, why, cap)) ||
      (rc = clattn__shape_int(text, "sinks", 0, 1, &sinks, why, cap)))
    return rc;
  if ((alibi || sinks) && heads > CLATTN__OPTS_SHAPE_HEADS) {
    snprintf(why, cap, "alibi=1 and sinks=1 take at most %d heads",
             CLATTN__OPTS_SHAPE_HEADS);
    return CLATTN_ERR_INVALID_ARG;
  }
  r.softcap = (float)softcap;
  r.alibi = alibi ? shape_slopes : NULL;
  r.sinks = sinks ? shape_sinks : NULL;
  *o = r;
  return CLATTN_OK;
}

ref_opts clattn__opts_ref(clattn__opts o) {
  return (ref_opts){o.window, (double)o.softcap, o.alibi, o.sinks};
}
