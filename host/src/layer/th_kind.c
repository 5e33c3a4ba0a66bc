/* th_kind.c - the talking-heads layer as a layer kind (layer.h): six
 * weights (the four projections' and the core's P_l, P_w), heads_k key and
 * heads_v value heads in the cache, and the talking-heads families (the
 * append family with heads_k key and heads_v value heads) as its core; its
 * public create. */
#include "family/append.h"
#include "family/th_decode.h"
#include "layer/layer.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { W_Q, W_K, W_V, W_O, P_L, P_W };

static const char *const weights[] = {"w_q", "w_k", "w_v", "w_o", "p_l", "p_w"};

static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn_th_layer_desc *d = desc;
  if (d->heads_k < 1 || d->heads < 1 || d->heads_v < 1 ||
      d->heads_k > CLATTN_TH_MAX_HEADS || d->heads > CLATTN_TH_MAX_HEADS ||
      d->heads_v > CLATTN_TH_MAX_HEADS) {
    /* as the talking-heads families say it */
    snprintf(why, cap,
             "talking-heads layer: head counts must be 1..%d (heads_k %d, "
             "heads %d, heads_v %d)",
             CLATTN_TH_MAX_HEADS, d->heads_k, d->heads, d->heads_v);
    return CLATTN_ERR_SHAPE;
  }
  if (d->d_model <= 0 || d->head_dim_k <= 0 || d->head_dim_v <= 0) {
    snprintf(why, cap,
             "talking-heads layer: d_model %d and head dims %d/%d must be "
             "positive",
             d->d_model, d->head_dim_k, d->head_dim_v);
    return CLATTN_ERR_SHAPE;
  }
  if (d->head_dim_k > CLATTN_MAX_HEAD_DIM ||
      d->head_dim_v > CLATTN_MAX_HEAD_DIM) {
    snprintf(why, cap,
             "talking-heads layer: head dims %d/%d exceed "
             "CLATTN_MAX_HEAD_DIM %d",
             d->head_dim_k, d->head_dim_v, CLATTN_MAX_HEAD_DIM);
    return CLATTN_ERR_UNSUPPORTED;
  }
  if (!isfinite(d->scale) || d->scale < 0.0f) {
    snprintf(why, cap,
             "talking-heads layer: scale %g must be finite and >= 0 "
             "(0: auto)",
             (double)d->scale);
    return CLATTN_ERR_INVALID_ARG;
  }
  /* the window alone, as its core families */
  const clattn__opts o = CLATTN__OPTS_OF(d);
  return clattn__opts_check(&o, d->heads, CLATTN__OPT_WINDOW,
                            "clattn_layer_create_talking_heads", why, cap);
}

static clattn__opts options(const void *desc, int *heads) {
  const clattn_th_layer_desc *d = desc;
  *heads = d->heads;
  return CLATTN__OPTS_OF(d);
}

static void weight_shape(const void *desc, int i, long *inner, long *cols) {
  const clattn_th_layer_desc *d = desc;
  const long k = (long)d->heads_k * d->head_dim_k,
             v = (long)d->heads_v * d->head_dim_v;
  switch (i) {
  case W_Q:
  case W_K:
    *inner = d->d_model, *cols = k;
    break;
  case W_V:
    *inner = d->d_model, *cols = v;
    break;
  case W_O:
    *inner = v, *cols = d->d_model;
    break;
  case P_L:
    *inner = d->heads_k, *cols = d->heads;
    break;
  default:
    *inner = d->heads, *cols = d->heads_v;
    break;
  }
}

static const clattn__projection proj[] = {
    {"x*w_q", W_Q, CLATTN__ACT_X, CLATTN__ACT_Q},
    {"x*w_k", W_K, CLATTN__ACT_X, CLATTN__ACT_K},
    {"x*w_v", W_V, CLATTN__ACT_X, CLATTN__ACT_V},
    {"o*w_o", W_O, CLATTN__ACT_O, CLATTN__ACT_Y},
};

static void cache_shape(const void *desc, clattn__cache_shape *s) {
  const clattn_th_layer_desc *d = desc;
  s->heads_k = d->heads_k;
  s->dim_k = d->head_dim_k;
  s->heads_v = d->heads_v;
  s->dim_v = d->head_dim_v;
}

/* The cache's description, which the decode takes with the layer's
 * window (the append ignores it). */
static clattn_th_decode_desc cache_desc(const clattn_th_layer_desc *d,
                                        const clattn__core_args *a) {
  const clattn_th_decode_desc dd = {
      sizeof dd,      a->batch,        a->capacity,   d->heads_k,
      d->heads,       d->heads_v,      d->head_dim_k, d->head_dim_v,
      CLATTN_F32,     CLATTN_BHSD,     d->scale,      NULL,
      a->opts.window, a->opts.softcap, a->opts.alibi, a->opts.sinks};
  return dd;
}

_Static_assert(sizeof(clattn_th_desc) <= CLATTN__CORE_DESC_BYTES &&
                   sizeof(clattn__append_desc) <= CLATTN__CORE_DESC_BYTES &&
                   sizeof(clattn_th_layer_desc) <= CLATTN__LAYER_DESC_BYTES,
               "the talking-heads descriptions fit the layer's byte stores");

static void core(const void *desc, clattn__core_op op,
                 const clattn__core_args *a, clattn__core_call *call) {
  const clattn_th_layer_desc *d = desc;
  const cl_mem q = a->act[CLATTN__ACT_Q], o = a->act[CLATTN__ACT_O];
  const cl_mem p_l = a->w != NULL ? a->w[P_L] : NULL,
               p_w = a->w != NULL ? a->w[P_W] : NULL;
  if (op == CLATTN__CORE_APPEND) {
    /* k_new [batch, n, heads_k, dim_k] is the [batch*n, heads_k*dim_k]
     * rows, v_new likewise */
    const clattn_th_decode_desc dd = cache_desc(d, a);
    const clattn__append_desc ad = clattn__append_of_th(&dd, a->n);
    memcpy(call->desc.bytes, &ad, sizeof ad);
    const cl_mem b[5] = {a->act[CLATTN__ACT_K], a->act[CLATTN__ACT_V], a->pos,
                         a->k_cache, a->v_cache};
    memcpy(call->buf, b, sizeof b);
  } else if (op == CLATTN__CORE_DECODE) {
    /* q [batch, heads_k, dim_k] and o [batch, heads_v, dim_v] likewise */
    const clattn_th_decode_desc dd = cache_desc(d, a);
    memcpy(call->desc.bytes, &dd, sizeof dd);
    const cl_mem b[7] = {q, a->k_cache, a->v_cache, p_l, p_w, a->lens, o};
    memcpy(call->buf, b, sizeof b);
  } else {
    const int cached = a->capacity > 0;
    const clattn_th_desc td = {sizeof td,
                               a->batch,
                               a->n,
                               cached ? a->capacity : a->n,
                               d->heads_k,
                               d->heads,
                               d->heads_v,
                               d->head_dim_k,
                               d->head_dim_v,
                               CLATTN_F32,
                               CLATTN_BSHD,
                               cached ? CLATTN_BHSD : CLATTN_BSHD,
                               d->scale,
                               a->causal,
                               NULL,
                               a->opts.window,
                               a->opts.softcap,
                               a->opts.alibi,
                               a->opts.sinks};
    memcpy(call->desc.bytes, &td, sizeof td);
    const cl_mem b[7] = {q,
                         cached ? a->k_cache : a->act[CLATTN__ACT_K],
                         cached ? a->v_cache : a->act[CLATTN__ACT_V],
                         p_l,
                         p_w,
                         cached ? a->lens : NULL,
                         o};
    memcpy(call->buf, b, sizeof b);
  }
}

const clattn__layer_kind clattn__layer_th = {
    .name = "talking-heads",
    .summary = "talking-heads attention, heads_k/heads/heads_v mixed by P_l, "
               "P_w (clattn_layer_create_talking_heads)",
    .desc_size = sizeof(clattn_th_layer_desc),
    .desc_type = "clattn_th_layer_desc",
    .check = check,
    .options = options,
    .nweights = 6,
    .weights = weights,
    .weight_shape = weight_shape,
    .nproj = 4,
    .nproj_in = 3,
    .proj = proj,
    .cache_shape = cache_shape,
    .family = {"talking-heads", "talking-heads-decode", "append"},
    .core = core,
};

clattn_status clattn_layer_create_talking_heads(
    clattn_ctx *ctx, const clattn_th_layer_desc *d, cl_mem w_q, cl_mem w_k,
    cl_mem w_v, cl_mem w_o, cl_mem p_l, cl_mem p_w, clattn_layer **out) {
  const cl_mem w[6] = {w_q, w_k, w_v, w_o, p_l, p_w};
  return clattn__layer_create(ctx, &clattn__layer_th, d, w, out);
}
