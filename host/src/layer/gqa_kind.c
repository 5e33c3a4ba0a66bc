/* gqa_kind.c - the GQA/MHA/MQA layer as a layer kind (layer.h): four
 * weights, the Q, K, V projections before the core and the output one
 * after it, heads_kv key and value heads in the cache, and the prefill,
 * decode and append families as its core; its public create and model. */
#include "base/versioned.h"
#include "family/append.h"
#include "family/common.h"
#include "layer/layer.h"
#include "model/model.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { W_Q, W_K, W_V, W_O };

static const char *const weights[] = {"w_q", "w_k", "w_v", "w_o"};

static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn_layer_desc *d = desc;
  if (d->d_model <= 0 || d->heads_q <= 0 || d->heads_kv <= 0 ||
      d->head_dim_k <= 0 || d->head_dim_v <= 0) {
    snprintf(why, cap,
             "layer: d_model %d, heads_q %d, heads_kv %d, head dims %d/%d "
             "must all be positive",
             d->d_model, d->heads_q, d->heads_kv, d->head_dim_k, d->head_dim_v);
    return CLATTN_ERR_SHAPE;
  }
  if (d->heads_q % d->heads_kv != 0) {
    snprintf(why, cap, "layer: heads_q %d is not a multiple of heads_kv %d",
             d->heads_q, d->heads_kv);
    return CLATTN_ERR_SHAPE;
  }
  if (d->head_dim_k > CLATTN_MAX_HEAD_DIM ||
      d->head_dim_v > CLATTN_MAX_HEAD_DIM) {
    snprintf(why, cap, "layer: head dims %d/%d exceed CLATTN_MAX_HEAD_DIM %d",
             d->head_dim_k, d->head_dim_v, CLATTN_MAX_HEAD_DIM);
    return CLATTN_ERR_UNSUPPORTED;
  }
  if (!isfinite(d->scale) || d->scale < 0.0f) {
    snprintf(why, cap, "layer: scale %g must be finite and >= 0 (0: auto)",
             (double)d->scale);
    return CLATTN_ERR_INVALID_ARG;
  }
  if ((long long)d->heads_q * d->head_dim_k > INT32_MAX ||
      (long long)d->heads_q * d->head_dim_v > INT32_MAX) {
    snprintf(why, cap, "layer: weight sizes overflow");
    return CLATTN_ERR_SHAPE;
  }
  const clattn__opts o = CLATTN__OPTS_OF(d);
  return clattn__opts_check(&o, d->heads_q, CLATTN__OPT_ALL,
                            "clattn_layer_create", why, cap);
}

static clattn__opts options(const void *desc, int *heads) {
  const clattn_layer_desc *d = desc;
  *heads = d->heads_q;
  return CLATTN__OPTS_OF(d);
}

static void weight_shape(const void *desc, int i, long *inner, long *cols) {
  const clattn_layer_desc *d = desc;
  const long q = (long)d->heads_q * d->head_dim_k,
             k = (long)d->heads_kv * d->head_dim_k,
             v = (long)d->heads_kv * d->head_dim_v,
             o = (long)d->heads_q * d->head_dim_v;
  *inner = i == W_O ? o : d->d_model;
  *cols = i == W_Q ? q : i == W_K ? k : i == W_V ? v : d->d_model;
}

static const clattn__projection proj[] = {
    {"x*w_q", W_Q, CLATTN__ACT_X, CLATTN__ACT_Q},
    {"x*w_k", W_K, CLATTN__ACT_X, CLATTN__ACT_K},
    {"x*w_v", W_V, CLATTN__ACT_X, CLATTN__ACT_V},
    {"o*w_o", W_O, CLATTN__ACT_O, CLATTN__ACT_Y},
};

static void cache_shape(const void *desc, clattn__cache_shape *s) {
  const clattn_layer_desc *d = desc;
  s->heads_k = d->heads_kv;
  s->dim_k = d->head_dim_k;
  s->heads_v = d->heads_kv;
  s->dim_v = d->head_dim_v;
}

/* The cache's description, which the decode takes with the layer's
 * options (the append ignores them). */
static clattn_decode_desc cache_desc(const clattn_layer_desc *d,
                                     const clattn__core_args *a) {
  const clattn_decode_desc dd = {sizeof dd,       a->batch,      a->capacity,
                                 d->heads_q,      d->heads_kv,   d->head_dim_k,
                                 d->head_dim_v,   CLATTN_F32,    CLATTN_BHSD,
                                 d->scale,        NULL,          a->opts.window,
                                 a->opts.softcap, a->opts.alibi, a->opts.sinks};
  return dd;
}

_Static_assert(sizeof(clattn_attn_desc) <= CLATTN__CORE_DESC_BYTES &&
                   sizeof(clattn_paged_desc) <= CLATTN__CORE_DESC_BYTES &&
                   sizeof(clattn__append_desc) <= CLATTN__CORE_DESC_BYTES &&
                   sizeof(clattn_layer_desc) <= CLATTN__LAYER_DESC_BYTES,
               "the GQA descriptions fit the layer's byte stores");

static void core(const void *desc, clattn__core_op op,
                 const clattn__core_args *a, clattn__core_call *call) {
  const clattn_layer_desc *d = desc;
  const cl_mem q = a->act[CLATTN__ACT_Q], o = a->act[CLATTN__ACT_O];
  if (op == CLATTN__CORE_APPEND) {
    /* k_new [batch, n, heads_kv, dim] is the [batch*n, heads_kv*dim] rows */
    const clattn_decode_desc dd = cache_desc(d, a);
    const clattn__append_desc ad = clattn__append_of_decode(&dd, a->n);
    memcpy(call->desc.bytes, &ad, sizeof ad);
    const cl_mem b[5] = {a->act[CLATTN__ACT_K], a->act[CLATTN__ACT_V], a->pos,
                         a->k_cache, a->v_cache};
    memcpy(call->buf, b, sizeof b);
  } else if (op == CLATTN__CORE_DECODE) {
    /* q [batch, heads_q, dim] and o [batch, heads_q, dim_v] likewise */
    const clattn_decode_desc dd = cache_desc(d, a);
    memcpy(call->desc.bytes, &dd, sizeof dd);
    const cl_mem b[5] = {q, a->k_cache, a->v_cache, a->lens, o};
    memcpy(call->buf, b, sizeof b);
  } else {
    const int cached = a->capacity > 0;
    const clattn_attn_desc ad = {sizeof ad,
                                 a->batch,
                                 a->n,
                                 cached ? a->capacity : a->n,
                                 d->heads_q,
                                 d->heads_kv,
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
    memcpy(call->desc.bytes, &ad, sizeof ad);
    const cl_mem b[5] = {q, cached ? a->k_cache : a->act[CLATTN__ACT_K],
                         cached ? a->v_cache : a->act[CLATTN__ACT_V],
                         cached ? a->lens : NULL, o};
    memcpy(call->buf, b, sizeof b);
  }
}

/* A step over the application's pool: the paged append of the new K and V
 * rows ([batch, n, heads_kv, dim], the projections' rows), then the paged
 * attention of the queries, their description the pool's with the
 * layer's heads and options. */
static const clattn__family *paged_core(const void *desc, clattn__core_op op,
                                        const clattn__core_args *a,
                                        clattn__core_call *call) {
  const clattn_layer_desc *d = desc;
  const clattn_paged_pool *p = a->pool;
  if (op != CLATTN__CORE_APPEND && op != CLATTN__CORE_DECODE &&
      op != CLATTN__CORE_PREFILL)
    return NULL;
  const clattn_paged_desc pd = {.size = sizeof pd,
                                .batch = a->batch,
                                .n_q = a->n,
                                .heads_q = d->heads_q,
                                .heads_kv = d->heads_kv,
                                .head_dim_k = d->head_dim_k,
                                .head_dim_v = d->head_dim_v,
                                .num_blocks = p->num_blocks,
                                .page_size = p->page_size,
                                .max_blocks = p->max_blocks,
                                .dtype = CLATTN_F32,
                                .cache_dtype = p->cache_dtype,
                                .scale = d->scale,
                                .causal = a->causal,
                                .window = a->opts.window,
                                .softcap = a->opts.softcap,
                                .alibi_slopes = a->opts.alibi,
                                .sinks = a->opts.sinks,
                                .unchecked = a->unchecked};
  memcpy(call->desc.bytes, &pd, sizeof pd);
  if (op == CLATTN__CORE_APPEND) {
    const cl_mem b[8] = {a->act[CLATTN__ACT_K],
                         a->act[CLATTN__ACT_V],
                         a->block_table,
                         a->lens,
                         p->k_pool,
                         p->v_pool,
                         p->k_scale,
                         p->v_scale};
    memcpy(call->buf, b, sizeof b);
    return &clattn__family_paged_append;
  }
  const cl_mem b[9] = {a->act[CLATTN__ACT_Q],
                       p->k_pool,
                       p->v_pool,
                       p->k_scale,
                       p->v_scale,
                       a->block_table,
                       a->lens,
                       a->act[CLATTN__ACT_O],
                       NULL};
  memcpy(call->buf, b, sizeof b);
  return op == CLATTN__CORE_DECODE ? &clattn__family_paged_decode
                                   : &clattn__family_paged_prefill;
}

const clattn__layer_kind clattn__layer_gqa = {
    .name = "gqa",
    .summary = "grouped-query attention (MHA: heads_kv = heads_q, MQA: 1) "
               "(clattn_layer_create)",
    .desc_size = sizeof(clattn_layer_desc),
    .desc_type = "clattn_layer_desc",
    .check = check,
    .options = options,
    .nweights = 4,
    .weights = weights,
    .weight_shape = weight_shape,
    .nproj = 4,
    .nproj_in = 3,
    .proj = proj,
    .cache_shape = cache_shape,
    .family = {"prefill", "decode", "append"},
    .core = core,
    .paged_core = paged_core,
};

clattn_status clattn_layer_create(clattn_ctx *ctx, const clattn_layer_desc *d,
                                  cl_mem w_q, cl_mem w_k, cl_mem w_v,
                                  cl_mem w_o, clattn_layer **out) {
  const cl_mem w[4] = {w_q, w_k, w_v, w_o};
  return clattn__layer_create(ctx, &clattn__layer_gqa, d, w, out);
}

static clattn_status model_layer(const clattn_layer_desc *d, int batch, int n,
                                 int cache_len, int causal,
                                 const clattn_profile *prof,
                                 clattn_prediction *out) {
  clattn_layer_desc own;
  if (prof == NULL || out == NULL || d == NULL)
    return CLATTN_ERR_INVALID_ARG;
  memset(out, 0, sizeof *out);
  clattn_status rc = clattn__struct_in(&own, sizeof own, d, "clattn_layer_desc",
                                       out->errmsg, sizeof out->errmsg);
  if (rc)
    return rc;
  d = &own;
  if (d->d_model < 1 || batch < 1 || n < 1 || cache_len < 0)
    return clattn__model_fail(out, CLATTN_ERR_SHAPE,
                              "d_model, batch and n must be >= 1, "
                              "cache_len >= 0");
  if ((rc = clattn__check_heads(d->heads_q, d->heads_kv, d->head_dim_k,
                                d->head_dim_v, CLATTN_F32, out->errmsg,
                                sizeof out->errmsg)))
    return rc;
  return clattn__layer_model(&clattn__layer_gqa, d, batch, n, cache_len, causal,
                             prof, out);
}

clattn_status clattn_model_layer(const clattn_layer_desc *d, int batch, int n,
                                 int cache_len, int causal,
                                 const clattn_profile *prof,
                                 clattn_prediction *out) {
  clattn_prediction own;
  clattn_profile own_prof;
  clattn_status rc = clattn__model_in(&prof, &own_prof, out, &own);
  if (rc == CLATTN_OK)
    rc = model_layer(d, batch, n, cache_len, causal, prof, &own);
  return clattn__model_out(rc, &own, out);
}
