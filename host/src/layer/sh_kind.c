/* sh_kind.c - the SwitchHead layer (Csordas et al., spec 6, Decision 6) as
 * a layer kind (layer.h): Q and K are dense GEMM projections; the
 * expert-mixed V is a "cvmm" call (MIX_IN, before the append, so the cache
 * holds mixed V), the attention is the standard GQA families with H heads,
 * and the expert-mixed output is a second "cvmm" call (MIX_OUT) that
 * writes y.  Its public create, parameter count and model. */
#include "base/versioned.h"
#include "family/cvmm.h"
#include "layer/layer.h"
#include "model/model.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Weight indices, in the create call's order. */
enum { W_Q, W_K, W_V, W_O, W_S, W_D };

static const char *const weights[] = {"w_q", "w_k", "w_v", "w_o", "w_s", "w_d"};

static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn_switchhead_layer_desc *d = desc;
  if (d->d_model < 1 || d->heads < 1 || d->head_dim < 1) {
    snprintf(why, cap,
             "switchhead layer: d_model %d, heads %d and head_dim %d must "
             "all be >= 1",
             d->d_model, d->heads, d->head_dim);
    return CLATTN_ERR_SHAPE;
  }
  if (d->experts < 1 || d->experts > CLATTN_SH_MAX_EXPERTS) {
    snprintf(why, cap,
             "switchhead layer: experts %d outside 1 .. "
             "CLATTN_SH_MAX_EXPERTS %d",
             d->experts, CLATTN_SH_MAX_EXPERTS);
    return CLATTN_ERR_SHAPE;
  }
  if (d->topk < 1 || d->topk > d->experts) {
    snprintf(why, cap, "switchhead layer: topk %d outside 1 .. experts %d",
             d->topk, d->experts);
    return CLATTN_ERR_SHAPE;
  }
  if (d->head_dim > CLATTN_MAX_HEAD_DIM) {
    snprintf(why, cap,
             "switchhead layer: head_dim %d exceeds CLATTN_MAX_HEAD_DIM %d",
             d->head_dim, CLATTN_MAX_HEAD_DIM);
    return CLATTN_ERR_UNSUPPORTED;
  }
  /* every weight's [inner, cols] and the activations' widths fit int32 */
  const long long he = (long long)d->heads * d->experts;
  if ((long long)d->heads * d->head_dim > INT32_MAX ||
      he * d->d_model > INT32_MAX || he * d->head_dim > INT32_MAX) {
    snprintf(why, cap, "switchhead layer: weight sizes overflow");
    return CLATTN_ERR_SHAPE;
  }
  if (!isfinite(d->scale) || d->scale < 0.0f) {
    snprintf(why, cap,
             "switchhead layer: scale %g must be finite and >= 0 (0: auto)",
             (double)d->scale);
    return CLATTN_ERR_INVALID_ARG;
  }
  const clattn__opts o = CLATTN__OPTS_OF(d);
  return clattn__opts_check(&o, d->heads, CLATTN__OPT_ALL,
                            "clattn_layer_create_switchhead", why, cap);
}

static clattn__opts options(const void *desc, int *heads) {
  const clattn_switchhead_layer_desc *d = desc;
  *heads = d->heads;
  return CLATTN__OPTS_OF(d);
}

/* w_q, w_k [D, H d_h]; w_v [H, E, D, d_h] as [H E D, d_h]; w_o
 * [H, E, d_h, D] as [H E d_h, D]; w_s, w_d [D, H E].  With one expert W_s
 * has no columns: the value side is ungated and the layer goes without
 * it (layer.h). */
static void weight_shape(const void *desc, int i, long *inner, long *cols) {
  const clattn_switchhead_layer_desc *d = desc;
  const long D = d->d_model, H = d->heads, E = d->experts, dh = d->head_dim;
  switch (i) {
  case W_Q:
  case W_K:
    *inner = D, *cols = H * dh;
    break;
  case W_V:
    *inner = H * E * D, *cols = dh;
    break;
  case W_O:
    *inner = H * E * dh, *cols = D;
    break;
  case W_S:
    *inner = D, *cols = E > 1 ? H * E : 0;
    break;
  default:
    *inner = D, *cols = H * E;
    break;
  }
}

static const clattn__projection proj[] = {
    {"x*w_q", W_Q, CLATTN__ACT_X, CLATTN__ACT_Q},
    {"x*w_k", W_K, CLATTN__ACT_X, CLATTN__ACT_K},
};

/* H heads of d_h for K and for the mixed V. */
static void cache_shape(const void *desc, clattn__cache_shape *s) {
  const clattn_switchhead_layer_desc *d = desc;
  s->heads_k = s->heads_v = d->heads;
  s->dim_k = s->dim_v = d->head_dim;
  s->shared = 0;
}

/* V (MIX_IN's output) and O are H d_h a position, y (MIX_OUT's) D: no
 * projection sizes them. */
static long core_act_cols(const void *desc, clattn__layer_act a) {
  const clattn_switchhead_layer_desc *d = desc;
  if (a == CLATTN__ACT_V || a == CLATTN__ACT_O)
    return (long)d->heads * d->head_dim;
  return a == CLATTN__ACT_Y ? d->d_model : 0;
}

/* ------------------------------------------------- core descriptions */

_Static_assert(sizeof(clattn__cvmm_desc) <= CLATTN__CORE_DESC_BYTES &&
                   sizeof(clattn_switchhead_layer_desc) <=
                       CLATTN__LAYER_DESC_BYTES,
               "the SwitchHead descriptions fit the layer's byte stores");

/* The expert mixes: V = the top-k gated sum over x W_v[h, e] a head
 * (SPLIT; one expert: ungated), y = the gated sum over heads and experts
 * of O_h W_o[h, e] (SUM; one expert: the head's sigmoid gate). */
static void mix(const clattn_switchhead_layer_desc *d, clattn__core_op op,
                const clattn__core_args *a, clattn__core_call *call) {
  const int in = op == CLATTN__CORE_MIX_IN, dense_v = d->experts == 1;
  const clattn__cvmm_desc cd = {
      .rows = a->batch * a->n,
      .inner = in ? d->d_model : d->head_dim,
      .cols = in ? d->head_dim : d->d_model,
      .heads = d->heads,
      .experts = d->experts,
      .topk = d->topk,
      .sel_inner = d->d_model,
      .mode = in ? CLATTN__CVMM_SPLIT : CLATTN__CVMM_SUM,
      .gate = in && dense_v ? CLATTN__CVMM_NONE : CLATTN__CVMM_TOPK};
  memcpy(call->desc.bytes, &cd, sizeof cd);
  const cl_mem x = a->act[CLATTN__ACT_X];
  const cl_mem *w = a->w;
  if (in) {
    const cl_mem b[5] = {x, dense_v ? NULL : x,
                         w != NULL && !dense_v ? w[W_S] : NULL,
                         w != NULL ? w[W_V] : NULL, a->act[CLATTN__ACT_V]};
    memcpy(call->buf, b, sizeof b);
  } else {
    const cl_mem b[5] = {a->act[CLATTN__ACT_O], x, w != NULL ? w[W_D] : NULL,
                         w != NULL ? w[W_O] : NULL, a->act[CLATTN__ACT_Y]};
    memcpy(call->buf, b, sizeof b);
  }
}

/* The mixes, or the attention calls, which are a GQA layer's with H
 * heads of d_h (gqa_kind.c): Q, K, the mixed V and O are its activations
 * and the cache its cache; the attention options go with the arguments
 * (a->opts), so the GQA core sets them on its calls. */
static void core(const void *desc, clattn__core_op op,
                 const clattn__core_args *a, clattn__core_call *call) {
  const clattn_switchhead_layer_desc *d = desc;
  if (op == CLATTN__CORE_MIX_IN || op == CLATTN__CORE_MIX_OUT) {
    mix(d, op, a, call);
    return;
  }
  const clattn_layer_desc gqa = {sizeof gqa,  d->d_model,  d->heads, d->heads,
                                 d->head_dim, d->head_dim, d->scale};
  clattn__layer_gqa.core(&gqa, op, a, call);
}

const clattn__layer_kind clattn__layer_sh = {
    .name = "switchhead",
    .summary = "SwitchHead: expert-mixed V and output around GQA attention "
               "(clattn_layer_create_switchhead)",
    .desc_size = sizeof(clattn_switchhead_layer_desc),
    .desc_type = "clattn_switchhead_layer_desc",
    .check = check,
    .options = options,
    .nweights = 6,
    .weights = weights,
    .weight_shape = weight_shape,
    .nproj = 2,
    .nproj_in = 2,
    .proj = proj,
    .cache_shape = cache_shape,
    .core_act_cols = core_act_cols,
    .family = {[CLATTN__CORE_PREFILL] = "prefill",
               [CLATTN__CORE_DECODE] = "decode",
               [CLATTN__CORE_APPEND] = "append",
               [CLATTN__CORE_MIX_IN] = "cvmm",
               [CLATTN__CORE_MIX_OUT] = "cvmm"},
    .core = core,
};

/* ------------------------------------------------------- public calls */

clattn_status
clattn_layer_create_switchhead(clattn_ctx *ctx,
                               const clattn_switchhead_layer_desc *d,
                               cl_mem w_q, cl_mem w_k, cl_mem w_v, cl_mem w_o,
                               cl_mem w_s, cl_mem w_d, clattn_layer **out) {
  const cl_mem w[6] = {w_q, w_k, w_v, w_o, w_s, w_d};
  return clattn__layer_create(ctx, &clattn__layer_sh, d, w, out);
}

long long
clattn_switchhead_layer_params(const clattn_switchhead_layer_desc *d) {
  const clattn__layer_kind *K = &clattn__layer_sh;
  clattn_switchhead_layer_desc own;
  char why[160];
  if (d == NULL ||
      clattn__struct_in(&own, sizeof own, d, K->desc_type, why, sizeof why) ||
      K->check(&own, why, sizeof why) != CLATTN_OK)
    return -1;
  d = &own;
  long long n = 0;
  for (int i = 0; i < K->nweights; i++) {
    long inner, cols;
    K->weight_shape(d, i, &inner, &cols);
    n += (long long)inner * cols;
  }
  return n;
}

static clattn_status
model_switchhead_layer(const clattn_switchhead_layer_desc *d, int batch, int n,
                       int cache_len, int causal, const clattn_profile *prof,
                       clattn_prediction *out) {
  clattn_switchhead_layer_desc own;
  if (prof == NULL || out == NULL || d == NULL)
    return CLATTN_ERR_INVALID_ARG;
  memset(out, 0, sizeof *out);
  clattn_status rc =
      clattn__struct_in(&own, sizeof own, d, clattn__layer_sh.desc_type,
                        out->errmsg, sizeof out->errmsg);
  if (rc)
    return rc;
  d = &own;
  if (batch < 1 || n < 1 || cache_len < 0)
    return clattn__model_fail(out, CLATTN_ERR_SHAPE,
                              "batch and n must be >= 1, cache_len >= 0");
  if ((long long)batch * n > INT32_MAX)
    return clattn__model_fail(out, CLATTN_ERR_SHAPE,
                              "batch x n positions is too many");
  rc = clattn__layer_sh.check(d, out->errmsg, sizeof out->errmsg);
  if (rc != CLATTN_OK)
    return rc;
  return clattn__layer_model(&clattn__layer_sh, d, batch, n, cache_len, causal,
                             prof, out);
}

clattn_status clattn_model_switchhead_layer(
    const clattn_switchhead_layer_desc *d, int batch, int n, int cache_len,
    int causal, const clattn_profile *prof, clattn_prediction *out) {
  clattn_prediction own;
  clattn_profile own_prof;
  clattn_status rc = clattn__model_in(&prof, &own_prof, out, &own);
  if (rc == CLATTN_OK)
    rc = model_switchhead_layer(d, batch, n, cache_len, causal, prof, &own);
  return clattn__model_out(rc, &own, out);
}
