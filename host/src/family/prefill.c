/* attention.c - fused prefill attention: validate, pick parameters, enqueue.
 */
#include "runtime/runtime.h"

#include <math.h>
#include <stdio.h>

#define LOG2E 1.4426950408889634f

/* -D options of a prefill program. */
static void prefill_options(const clattn_attn_desc *d,
                            const clattn__prefill_plan *pl,
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
  clattn__prefill_plan pl;
  clattn_choice ch;
  if ((rc = clattn__choose_prefill(ctx, d, &ch, &pl)))
    return rc;
  ctx->last = ch;
  ctx->has_last = 1;

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
    const int ld = pl.ld;
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
  if (!ch.params.wg) {
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
  const size_t lbytes = clattn__prefill_local_bytes(d, &pl);
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
