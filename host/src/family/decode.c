/* decode.c - incremental decoding over a KV cache (split-KV + combine) and
 * the in-place cache append: validate, pick parameters, enqueue. */
#include "runtime/runtime.h"

#include <math.h>
#include <stdio.h>

#define LOG2E 1.4426950408889634f

static clattn_status check_cache(clattn_ctx *ctx, const clattn_decode_desc *d,
                                 cl_mem k_cache, cl_mem v_cache) {
  clattn_status rc;
  if (d == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "desc is NULL");
  if (d->batch < 1 || d->capacity < 1)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "batch (%d) and capacity (%d) must be >= 1", d->batch,
                        d->capacity);
  if ((rc = clattn__check_heads(ctx, d->heads_q, d->heads_kv, d->head_dim_k,
                                d->head_dim_v, d->dtype)))
    return rc;
  if (!clattn__is_layout(d->cache_layout))
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "unknown cache layout");
  if (!(d->scale >= 0.0f) || isinf(d->scale))
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "scale must be finite and >= 0 (0: 1/sqrt(k))");
  const size_t es = clattn_dtype_size(d->dtype);
  const size_t kb =
      clattn__bytes(es, d->batch, d->capacity, d->heads_kv, d->head_dim_k);
  const size_t vb =
      clattn__bytes(es, d->batch, d->capacity, d->heads_kv, d->head_dim_v);
  if (kb == 0 || vb == 0)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE, "cache sizes overflow");
  if ((rc = clattn__check_buffer(ctx, k_cache, kb, "k_cache")) ||
      (rc = clattn__check_buffer(ctx, v_cache, vb, "v_cache")))
    return rc;
  return CLATTN_OK;
}

/* -D options of a decode program; returns its local-memory bytes. */
static size_t decode_options(const clattn_decode_desc *d,
                             const clattn__decode_plan *pl, int direct,
                             char *opts, size_t cap) {
  const int g = d->heads_q / d->heads_kv;
  const int dk = d->head_dim_k, dv = d->head_dim_v;
  int len = snprintf(opts, cap,
                     "-DDTYPE=%d -DDK=%d -DDV=%d -DG=%d -DVWK=%d -DVWV=%d "
                     "-DDIRECT=%d",
                     (int)d->dtype, dk, dv, g, clattn__vec_width(dk),
                     clattn__vec_width(dv), direct);
  if (len < 0 || (size_t)len >= cap)
    return 0;
  if (pl->variant == 1) {
    snprintf(opts + len, cap - (size_t)len,
             " -DKB=%d -DPVH=%d -DPF=%d -DLANES=%d", pl->kb, pl->pvh, pl->pf,
             pl->lanes);
    return 0;
  }
  snprintf(opts + len, cap - (size_t)len, " -DWG=%d -DKT=%d -DPAIRS=%d",
           pl->wg, pl->kb, (g * dv + pl->wg - 1) / pl->wg);
  return clattn__decode_local_bytes(d, pl);
}

clattn_status clattn_decode(clattn_ctx *ctx, const clattn_decode_desc *d,
                            cl_mem q, cl_mem k_cache, cl_mem v_cache,
                            cl_mem lens, cl_mem o, const clattn_events *ev) {
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  ctx->errmsg[0] = '\0';
  if ((rc = check_cache(ctx, d, k_cache, v_cache)))
    return rc;
  const size_t es = clattn_dtype_size(d->dtype);
  const int b = d->batch, hq = d->heads_q, hkv = d->heads_kv;
  const int dk = d->head_dim_k, dv = d->head_dim_v;
  if ((rc = clattn__check_buffer(ctx, q, clattn__bytes(es, b, hq, dk, 1),
                                 "q")) ||
      (rc = clattn__check_buffer(ctx, o, clattn__bytes(es, b, hq, dv, 1),
                                 "o")) ||
      (rc = clattn__check_buffer(ctx, lens, (size_t)b * 4, "lens")))
    return rc;
  clattn__decode_plan pl;
  clattn_choice ch;
  if ((rc = clattn__choose_decode(ctx, d, &ch, &pl)))
    return rc;
  ctx->last = ch;
  ctx->has_last = 1;
  const int S = pl.splits, direct = S == 1;
  const int vwv = clattn__vec_width(dv);
  char opts[256];
  size_t lbytes = decode_options(d, &pl, direct, opts, sizeof opts);
  const char *name = pl.variant == 1 ? "decode_split_reg" : "decode_split_local";
  cl_kernel kern = NULL, comb = NULL;
  if ((rc = clattn__kernel(ctx, CLATTN_SRC_DECODE, opts, name, &kern)))
    return rc;
  if (pl.variant == 2 && !ch.params.wg) {
    /* an automatic work-group may exceed what the compiled kernel allows
     * (registers): rebuild once at the kernel's own limit */
    size_t kwg = 0;
    if ((rc = clattn__kernel_wg(ctx, kern, &kwg)))
      return rc;
    if (kwg < (size_t)pl.wg) {
      pl.wg = clattn__pow2_floor(kwg);
      lbytes = decode_options(d, &pl, direct, opts, sizeof opts);
      if ((rc = clattn__kernel(ctx, CLATTN_SRC_DECODE, opts, name, &kern)))
        return rc;
    }
  }
  if ((pl.variant == 2 || pl.wg) &&
      (rc = clattn__check_wg(ctx, kern, (size_t)pl.wg, lbytes, name)))
    return rc;
  cl_mem opart = NULL, lse = NULL;
  if (!direct) {
    const size_t pb = clattn__bytes(4, b, hq, S, dv);
    if (pb == 0)
      return clattn__fail(ctx, CLATTN_ERR_SHAPE, "partial sizes overflow");
    if ((rc = clattn__kernel(ctx, CLATTN_SRC_DECODE, opts, "decode_combine",
                             &comb)) ||
        (rc = clattn__scratch(ctx, 1, pb, &opart)) ||
        (rc = clattn__scratch(ctx, 2, clattn__bytes(4, b, hq, S, 1), &lse)))
      return rc;
  }
  const float scale =
      (d->scale > 0.0f ? d->scale : 1.0f / sqrtf((float)dk)) * LOG2E;
  const clattn__strides ks =
      clattn__layout_strides(d->cache_layout, d->capacity, hkv, dk);
  const clattn__strides vs =
      clattn__layout_strides(d->cache_layout, d->capacity, hkv, dv);
  const cl_int ci[4] = {d->capacity, hkv, S, pl.chunk};
  const cl_mem bufs[7] = {q, k_cache, v_cache, lens, o, opart, lse};
  const long st[6] = {ks.b, ks.s, ks.h, vs.b, vs.s, vs.h};
  cl_uint a = 0;
  if ((rc = clattn__args(ctx, kern, &a, 7, sizeof(cl_mem), bufs)))
    return rc;
  if ((rc = clattn__args(ctx, kern, &a, 4, sizeof(cl_int), ci)))
    return rc;
  if ((rc = clattn__arg(ctx, kern, a++, sizeof(cl_float), &scale)))
    return rc;
  if ((rc = clattn__args(ctx, kern, &a, 6, sizeof(cl_long), st)))
    return rc;
  const cl_int rows = b * hq;
  if (!direct) {
    const cl_mem cb[3] = {opart, lse, o};
    const cl_int cn[2] = {rows, S};
    cl_uint ca = 0;
    if ((rc = clattn__args(ctx, comb, &ca, 3, sizeof(cl_mem), cb)) ||
        (rc = clattn__args(ctx, comb, &ca, 2, sizeof(cl_int), cn)))
      return rc;
  }
  const cl_uint nw = ev ? ev->num_wait : 0;
  const cl_event *wait = ev ? ev->wait : NULL;
  cl_event *out = ev ? ev->out : NULL;
  /* variant 1 defaults to one work-item per work-group: PoCL otherwise
   * packs the few work-items of a decode step into one group (one core) */
  const size_t wg1 = pl.wg ? (size_t)pl.wg : 1;
  size_t gws[2], lws[2] = {pl.variant == 1 ? wg1 : (size_t)pl.wg, 1};
  if (pl.variant == 1) {
    gws[0] = ((size_t)S + wg1 - 1) / wg1 * wg1;
  } else {
    gws[0] = (size_t)S * (size_t)pl.wg;
  }
  gws[1] = (size_t)b * hkv;
  if ((rc = clattn__launch(ctx, kern, 2, gws, lws, nw, wait,
                           direct ? out : NULL)) ||
      direct)
    return rc;
  const size_t cg[2] = {(size_t)rows, (size_t)(dv / vwv)};
  return clattn__launch(ctx, comb, 2, cg, NULL, 0, NULL, out);
}

clattn_status clattn_kv_append(clattn_ctx *ctx, const clattn_decode_desc *d,
                               int n_new, cl_mem k_new, cl_mem v_new,
                               cl_mem pos, cl_mem k_cache, cl_mem v_cache,
                               const clattn_events *ev) {
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  ctx->errmsg[0] = '\0';
  if ((rc = check_cache(ctx, d, k_cache, v_cache)))
    return rc;
  if (n_new < 1)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE, "n_new (%d) must be >= 1",
                        n_new);
  const size_t es = clattn_dtype_size(d->dtype);
  const int b = d->batch, hkv = d->heads_kv;
  const int dk = d->head_dim_k, dv = d->head_dim_v;
  if ((rc = clattn__check_buffer(ctx, k_new,
                                 clattn__bytes(es, b, n_new, hkv, dk),
                                 "k_new")) ||
      (rc = clattn__check_buffer(ctx, v_new,
                                 clattn__bytes(es, b, n_new, hkv, dv),
                                 "v_new")) ||
      (rc = clattn__check_buffer(ctx, pos, (size_t)b * 4, "pos")))
    return rc;
  char opts[96];
  snprintf(opts, sizeof opts, "-DDTYPE=%d -DDK=%d -DDV=%d", (int)d->dtype, dk,
           dv);
  cl_kernel kern = NULL;
  if ((rc = clattn__kernel(ctx, CLATTN_SRC_DECODE, opts, "kv_append", &kern)))
    return rc;
  const clattn__strides ks =
      clattn__layout_strides(d->cache_layout, d->capacity, hkv, dk);
  const clattn__strides vs =
      clattn__layout_strides(d->cache_layout, d->capacity, hkv, dv);
  const cl_mem bufs[5] = {k_new, v_new, pos, k_cache, v_cache};
  const cl_int ci[3] = {n_new, d->capacity, hkv};
  const long st[6] = {ks.b, ks.s, ks.h, vs.b, vs.s, vs.h};
  cl_uint a = 0;
  if ((rc = clattn__args(ctx, kern, &a, 5, sizeof(cl_mem), bufs)))
    return rc;
  if ((rc = clattn__args(ctx, kern, &a, 3, sizeof(cl_int), ci)))
    return rc;
  if ((rc = clattn__args(ctx, kern, &a, 6, sizeof(cl_long), st)))
    return rc;
  const size_t gws[2] = {(size_t)n_new * hkv, (size_t)b};
  return clattn__launch(ctx, kern, 2, gws, NULL, ev ? ev->num_wait : 0,
                        ev ? ev->wait : NULL, ev ? ev->out : NULL);
}
