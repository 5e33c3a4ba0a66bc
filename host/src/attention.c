/* attention.c - fused prefill attention: validate, pick parameters, enqueue.
 */
#include "runtime.h"

#include <math.h>
#include <stdio.h>

#define LOG2E 1.4426950408889634f

/* Resolved kernel shape for one call. */
typedef struct prefill_plan {
  int variant; /* 1 register-blocked, 2 local-memory tiles */
  int rb, kb;  /* variant 1 */
  int wg, kt;  /* variant 2 (wg also optional for variant 1) */
} prefill_plan;

static clattn_status plan_prefill(clattn_ctx *ctx, const clattn_attn_desc *d,
                                  prefill_plan *pl) {
  const clattn_params none = {0, 0, 0, 0, 0};
  const clattn_params *p = d->params ? d->params : &none;
  const int dk = d->head_dim_k, dv = d->head_dim_v;
  if (p->variant < 0 || p->variant > 2 || p->rows < 0 || p->keys < 0 ||
      p->wg < 0 || p->splits < 0)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "params: variant must be 0, 1 or 2 and sizes >= 0");
  pl->variant = p->variant ? p->variant
                : (ctx->dev.type & CL_DEVICE_TYPE_CPU) ? 1
                                                       : 2;
  if (pl->variant == 1) {
    pl->rb = p->rows ? p->rows : (dk + dv <= 192 ? 4 : 2);
    pl->kb = p->keys ? p->keys : (dk <= 128 ? 64 : 32);
    pl->wg = p->wg;
    if (pl->kb % 16 != 0 || pl->kb > 256 || pl->rb > 32)
      return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                          "params: variant 1 needs keys a multiple of 16 up "
                          "to 256 (got %d) and rows <= 32 (got %d)",
                          pl->kb, pl->rb);
    return CLATTN_OK;
  }
  /* variant 2: one row per work-item, K/V tiles in local memory */
  size_t maxwg = ctx->dev.max_wg < ctx->dev.max_item[0] ? ctx->dev.max_wg
                                                        : ctx->dev.max_item[0];
  pl->wg = p->wg ? p->wg : (int)(maxwg < 64 ? maxwg : 64);
  pl->rb = pl->wg;
  if (p->keys) {
    pl->kt = p->keys;
  } else {
    size_t budget = ctx->dev.local_mem > 1024 ? ctx->dev.local_mem - 1024 : 0;
    pl->kt = 32;
    while (pl->kt > 1 && (size_t)pl->kt * (dk + dv) * 4 > budget)
      pl->kt /= 2;
  }
  if (pl->kt > 256)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "params: variant 2 keys per tile must be <= 256");
  return CLATTN_OK;
}

/* -D options of a prefill program. */
static void prefill_options(const clattn_attn_desc *d, const prefill_plan *pl,
                            char *buf, size_t cap) {
  int n = snprintf(buf, cap,
                   "-DDTYPE=%d -DDK=%d -DDV=%d -DVWK=%d -DVWV=%d -DCAUSAL=%d",
                   (int)d->dtype, d->head_dim_k, d->head_dim_v,
                   clattn__vec_width(d->head_dim_k),
                   clattn__vec_width(d->head_dim_v), d->causal ? 1 : 0);
  if (n < 0 || (size_t)n >= cap)
    return;
  if (pl->variant == 1)
    snprintf(buf + n, cap - (size_t)n, " -DRB=%d -DKB=%d", pl->rb, pl->kb);
  else
    snprintf(buf + n, cap - (size_t)n, " -DWG=%d -DKT=%d", pl->wg, pl->kt);
}

static clattn_status check_desc(clattn_ctx *ctx, const clattn_attn_desc *d,
                                cl_mem q, cl_mem k, cl_mem v, cl_mem kv_lens,
                                cl_mem o) {
  clattn_status rc;
  if (d == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "desc is NULL");
  if (d->batch < 1 || d->n_q < 1 || d->n_kv < 1)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "batch (%d), n_q (%d) and n_kv (%d) must be >= 1",
                        d->batch, d->n_q, d->n_kv);
  rc = clattn__check_heads(ctx, d->heads_q, d->heads_kv, d->head_dim_k, d->head_dim_v,
                   d->dtype);
  if (rc)
    return rc;
  if (!clattn__is_layout(d->q_layout) || !clattn__is_layout(d->kv_layout))
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "unknown layout");
  if (!(d->scale >= 0.0f) || isinf(d->scale))
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "scale must be finite and >= 0 (0: 1/sqrt(k))");
  const size_t es = clattn_dtype_size(d->dtype);
  const size_t qb = clattn__bytes(es, d->batch, d->n_q, d->heads_q,
                                  d->head_dim_k);
  const size_t kb = clattn__bytes(es, d->batch, d->n_kv, d->heads_kv,
                                  d->head_dim_k);
  const size_t vb = clattn__bytes(es, d->batch, d->n_kv, d->heads_kv,
                                  d->head_dim_v);
  const size_t ob = clattn__bytes(es, d->batch, d->n_q, d->heads_q,
                                  d->head_dim_v);
  if (!qb || !kb || !vb || !ob || (long)d->n_q * d->heads_q > 0x7fffffffL)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE, "tensor sizes overflow");
  if ((rc = clattn__check_buffer(ctx, q, qb, "q")) ||
      (rc = clattn__check_buffer(ctx, k, kb, "k")) ||
      (rc = clattn__check_buffer(ctx, v, vb, "v")) ||
      (rc = clattn__check_buffer(ctx, o, ob, "o")))
    return rc;
  if (kv_lens &&
      (rc = clattn__check_buffer(ctx, kv_lens, (size_t)d->batch * 4,
                                 "kv_lens")))
    return rc;
  return CLATTN_OK;
}

clattn_status clattn_attention(clattn_ctx *ctx, const clattn_attn_desc *d,
                               cl_mem q, cl_mem k, cl_mem v, cl_mem kv_lens,
                               cl_mem o, const clattn_events *ev) {
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  ctx->errmsg[0] = '\0';
  if ((rc = check_desc(ctx, d, q, k, v, kv_lens, o)))
    return rc;
  prefill_plan pl = {0, 0, 0, 0, 0};
  if ((rc = plan_prefill(ctx, d, &pl)))
    return rc;

  const int b = d->batch, n = d->n_q, m = d->n_kv;
  const int hq = d->heads_q, hkv = d->heads_kv, g = hq / hkv;
  const int dk = d->head_dim_k;
  const float scale =
      (d->scale > 0.0f ? d->scale : 1.0f / sqrtf((float)dk)) * LOG2E;
  const cl_int has_lens = kv_lens != NULL;
  const clattn__strides qs = clattn__layout_strides(d->q_layout, n, hq, dk);
  const clattn__strides ks = clattn__layout_strides(d->kv_layout, m, hkv, dk);
  const clattn__strides vs =
      clattn__layout_strides(d->kv_layout, m, hkv, d->head_dim_v);
  const clattn__strides os =
      clattn__layout_strides(d->q_layout, n, hq, d->head_dim_v);
  cl_uint nw = ev ? ev->num_wait : 0;
  const cl_event *wait = ev ? ev->wait : NULL;
  cl_event *out = ev ? ev->out : NULL;
  char opts[256];
  prefill_options(d, &pl, opts, sizeof opts);
  const int rows = n * g;
  cl_kernel kern = NULL;

  if (pl.variant == 1) {
    cl_kernel st_kern = NULL;
    cl_mem kt = NULL, vc = NULL;
    /* staged row length: covers every tile, and an odd number of 64-byte
     * lines so the rows of a K^T tile spread over the cache sets */
    int ld = (m + pl.kb - 1) / pl.kb * pl.kb;
    if ((ld / 16) % 2 == 0)
      ld += 16;
    const size_t ktb = clattn__bytes(4, b, hkv, dk, ld);
    const size_t vcb = clattn__bytes(4, b, hkv, d->head_dim_v, ld);
    if (ktb == 0 || vcb == 0 || ld < m)
      return clattn__fail(ctx, CLATTN_ERR_SHAPE, "tensor sizes overflow");
    if ((rc = clattn__kernel(ctx, CLATTN_SRC_ATTENTION, opts, "kv_stage",
                             &st_kern)) ||
        (rc = clattn__kernel(ctx, CLATTN_SRC_ATTENTION, opts, "attn_fwd_reg",
                             &kern)))
      return rc;
    if (pl.wg && (rc = clattn__check_wg(ctx, kern, (size_t)pl.wg, 0,
                                        "attn_fwd_reg")))
      return rc;
    if ((rc = clattn__scratch(ctx, 0, ktb, &kt)) ||
        (rc = clattn__scratch(ctx, 3, vcb, &vc)))
      return rc;
    const cl_int si[3] = {m, ld, hkv};
    const long sst[6] = {ks.b, ks.s, ks.h, vs.b, vs.s, vs.h};
    const cl_mem sb[4] = {k, v, kt, vc};
    cl_uint a = 0;
    if ((rc = clattn__args(ctx, st_kern, &a, 4, sizeof(cl_mem), sb)))
      return rc;
    if ((rc = clattn__args(ctx, st_kern, &a, 3, sizeof(cl_int), si)))
      return rc;
    if ((rc = clattn__args(ctx, st_kern, &a, 6, sizeof(cl_long), sst)))
      return rc;
    const cl_int ri[6] = {n, m, ld, hkv, g, has_lens};
    const cl_mem rb[5] = {q, kt, vc, kv_lens, o};
    const long rst[6] = {qs.b, qs.s, qs.h, os.b, os.s, os.h};
    a = 0;
    if ((rc = clattn__args(ctx, kern, &a, 5, sizeof(cl_mem), rb)))
      return rc;
    if ((rc = clattn__args(ctx, kern, &a, 6, sizeof(cl_int), ri)))
      return rc;
    if ((rc = clattn__arg(ctx, kern, a++, sizeof(cl_float), &scale)))
      return rc;
    if ((rc = clattn__args(ctx, kern, &a, 6, sizeof(cl_long), rst)))
      return rc;
    /* default: one work-item per work-group, which PoCL schedules best */
    const size_t wg1 = pl.wg ? (size_t)pl.wg : 1;
    size_t blocks = (size_t)(rows + pl.rb - 1) / (size_t)pl.rb;
    blocks = (blocks + wg1 - 1) / wg1 * wg1;
    const size_t lws[2] = {wg1, 1}, one[2] = {1, 1};
    const size_t gws[2] = {blocks, (size_t)b * hkv};
    const size_t sg[2] = {(size_t)ld / 16, (size_t)b * hkv};
    if ((rc = clattn__launch(ctx, st_kern, 2, sg, one, nw, wait, NULL)))
      return rc;
    return clattn__launch(ctx, kern, 2, gws, lws, 0, NULL, out);
  }

  /* variant 2 */
  if ((rc = clattn__kernel(ctx, CLATTN_SRC_ATTENTION, opts, "attn_fwd_local",
                           &kern)))
    return rc;
  if (!(d->params && d->params->wg)) {
    /* an automatic work-group may exceed what the compiled kernel allows
     * (registers): rebuild once at the kernel's own limit */
    size_t kwg = 0;
    if ((rc = clattn__kernel_wg(ctx, kern, &kwg)))
      return rc;
    if (kwg < (size_t)pl.wg) {
      pl.wg = pl.rb = clattn__pow2_floor(kwg);
      prefill_options(d, &pl, opts, sizeof opts);
      if ((rc = clattn__kernel(ctx, CLATTN_SRC_ATTENTION, opts,
                               "attn_fwd_local", &kern)))
        return rc;
    }
  }
  const size_t lbytes = (size_t)pl.kt * (dk + d->head_dim_v) * 4;
  if ((rc = clattn__check_wg(ctx, kern, (size_t)pl.wg, lbytes,
                             "attn_fwd_local")))
    return rc;
  const cl_int ci[5] = {n, m, hkv, g, has_lens};
  const cl_mem bufs[5] = {q, k, v, kv_lens, o};
  cl_uint a = 0;
  if ((rc = clattn__args(ctx, kern, &a, 5, sizeof(cl_mem), bufs)) ||
      (rc = clattn__args(ctx, kern, &a, 5, sizeof(cl_int), ci)))
    return rc;
  if ((rc = clattn__arg(ctx, kern, a++, sizeof(cl_float), &scale)))
    return rc;
  const long st[12] = {qs.b, qs.s, qs.h, ks.b, ks.s, ks.h,
                       vs.b, vs.s, vs.h, os.b, os.s, os.h};
  if ((rc = clattn__args(ctx, kern, &a, 12, sizeof(cl_long), st)))
    return rc;
  const size_t groups = (size_t)(rows + pl.wg - 1) / (size_t)pl.wg;
  const size_t gws[2] = {groups * (size_t)pl.wg, (size_t)b * hkv};
  const size_t lws[2] = {(size_t)pl.wg, 1};
  return clattn__launch(ctx, kern, 2, gws, lws, nw, wait, out);
}
