/* hh_kind.c - Hosseini & Hosseini's Optimised, Efficient and Super
 * attention layers as layer kinds (layer.h; spec 7, Decision 7): head i
 * reads channel slice X_i of x, so x itself is the BSHD tensor of h heads
 * of D/h that serves as V (Optimised), as K and V (Efficient) or as K and
 * the source of V' = W_a X (Super).  Their public creates, parameter
 * counts and model. */
#include "base/versioned.h"
#include "family/append.h"
#include "family/common.h"
#include "family/super_values.h"
#include "layer/layer.h"
#include "model/model.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Weight indices of each kind, in its create call's order. */
enum { OPT_Q, OPT_K, OPT_O };
enum { EFF_Q, EFF_O };
enum { SUP_Q, SUP_A, SUP_O };

static const char *const opt_weights[] = {"w_q", "w_k", "w_o"};
static const char *const eff_weights[] = {"w_q", "w_o"};
static const char *const sup_weights[] = {"w_q", "w_a", "w_o"};

static int head_dim(const clattn_hh_layer_desc *d) {
  return d->d_model / d->heads;
}

static clattn_status check_desc(const clattn_hh_layer_desc *d, int super,
                                char *why, size_t cap) {
  if (d->d_model < 1 || d->heads < 1 || d->d_model % d->heads != 0) {
    snprintf(why, cap,
             "hh layer: heads (%d) must be >= 1 and divide d_model (%d)",
             d->heads, d->d_model);
    return CLATTN_ERR_SHAPE;
  }
  if (head_dim(d) > CLATTN_MAX_HEAD_DIM) {
    snprintf(why, cap,
             "hh layer: head width d_model/heads = %d exceeds "
             "CLATTN_MAX_HEAD_DIM %d",
             head_dim(d), CLATTN_MAX_HEAD_DIM);
    return CLATTN_ERR_UNSUPPORTED;
  }
  if (super ? d->max_len < 1 : d->max_len != 0) {
    snprintf(why, cap,
             super ? "super layer: max_len (%d) must be >= 1 (W_a is "
                     "[max_len, max_len])"
                   : "hh layer: max_len (%d) is Super's alone; it must be 0",
             d->max_len);
    return CLATTN_ERR_SHAPE;
  }
  if ((long long)d->d_model * d->d_model > INT32_MAX ||
      (long long)d->max_len * d->max_len > INT32_MAX) {
    snprintf(why, cap, "hh layer: weight sizes overflow");
    return CLATTN_ERR_SHAPE;
  }
  if (!isfinite(d->scale) || d->scale < 0.0f) {
    snprintf(why, cap, "hh layer: scale %g must be finite and >= 0 (0: auto)",
             (double)d->scale);
    return CLATTN_ERR_INVALID_ARG;
  }
  /* every option: they apply to the attention's softmax (Super's value
   * mix W_a is unchanged by them) */
  const clattn__opts o = CLATTN__OPTS_OF(d);
  return clattn__opts_check(&o, d->heads, CLATTN__OPT_ALL,
                            "the Hosseini & Hosseini layers", why, cap);
}

static clattn__opts options(const void *desc, int *heads) {
  const clattn_hh_layer_desc *d = desc;
  *heads = d->heads;
  return CLATTN__OPTS_OF(d);
}

static clattn_status check_plain(const void *desc, char *why, size_t cap) {
  return check_desc(desc, 0, why, cap);
}

static clattn_status check_super(const void *desc, char *why, size_t cap) {
  return check_desc(desc, 1, why, cap);
}

/* Every weight is [D, D] but Super's W_a, [max_len, max_len]. */
static void weight_shape_dd(const void *desc, int i, long *inner, long *cols) {
  const clattn_hh_layer_desc *d = desc;
  (void)i;
  *inner = *cols = d->d_model;
}

static void weight_shape_super(const void *desc, int i, long *inner,
                               long *cols) {
  const clattn_hh_layer_desc *d = desc;
  *inner = *cols = i == SUP_A ? d->max_len : d->d_model;
}

static const clattn__projection opt_proj[] = {
    {"x*w_q", OPT_Q, CLATTN__ACT_X, CLATTN__ACT_Q},
    {"x*w_k", OPT_K, CLATTN__ACT_X, CLATTN__ACT_K},
    {"o*w_o", OPT_O, CLATTN__ACT_O, CLATTN__ACT_Y},
};
static const clattn__projection eff_proj[] = {
    {"x*w_q", EFF_Q, CLATTN__ACT_X, CLATTN__ACT_Q},
    {"o*w_o", EFF_O, CLATTN__ACT_O, CLATTN__ACT_Y},
};
static const clattn__projection sup_proj[] = {
    {"x*w_q", SUP_Q, CLATTN__ACT_X, CLATTN__ACT_Q},
    {"o*w_o", SUP_O, CLATTN__ACT_O, CLATTN__ACT_Y},
};

/* h heads of D/h for K and V; Efficient's are one tensor, X. */
static void cache_shape_two(const void *desc, clattn__cache_shape *s) {
  const clattn_hh_layer_desc *d = desc;
  s->heads_k = s->heads_v = d->heads;
  s->dim_k = s->dim_v = head_dim(d);
  s->shared = 0;
}

static void cache_shape_one(const void *desc, clattn__cache_shape *s) {
  cache_shape_two(desc, s);
  s->shared = 1;
}

/* Super: W_a has max_len rows, and V' rows already cached must not depend
 * on later positions, so a cache needs the causal (lower-triangular) W_a. */
static clattn_status check_call_super(const void *desc, int positions,
                                      int cache, int causal, char *why,
                                      size_t cap) {
  const clattn_hh_layer_desc *d = desc;
  if (positions > d->max_len) {
    snprintf(why, cap,
             "super layer: %d positions exceed max_len %d (W_a is "
             "[max_len, max_len])",
             positions, d->max_len);
    return CLATTN_ERR_SHAPE;
  }
  if (cache && !causal) {
    snprintf(why, cap,
             "super layer: a non-causal prefill into a KV cache is refused "
             "(cached V' rows would depend on later positions)");
    return CLATTN_ERR_UNSUPPORTED;
  }
  return CLATTN_OK;
}

/* Super's V' without a cache is the layer's V activation, D a position. */
static long core_act_cols_super(const void *desc, clattn__layer_act a) {
  const clattn_hh_layer_desc *d = desc;
  return a == CLATTN__ACT_V ? d->d_model : 0;
}

/* ------------------------------------------------- core descriptions */

/* The cache's description, which the decode takes with the layer's
 * options (the append ignores them). */
static clattn_decode_desc cache_desc(const clattn_hh_layer_desc *d,
                                     const clattn__core_args *a) {
  const int dh = head_dim(d);
  const clattn_decode_desc dd = {sizeof dd,
                                 a->batch,
                                 a->capacity,
                                 d->heads,
                                 d->heads,
                                 dh,
                                 dh,
                                 CLATTN_F32,
                                 CLATTN_BHSD,
                                 d->scale,
                                 NULL,
                                 a->opts.window,
                                 a->opts.softcap,
                                 a->opts.alibi,
                                 a->opts.sinks};
  return dd;
}

static clattn_attn_desc attn_desc(const clattn_hh_layer_desc *d,
                                  const clattn__core_args *a) {
  const int cached = a->capacity > 0, dh = head_dim(d);
  const clattn_attn_desc ad = {sizeof ad,
                               a->batch,
                               a->n,
                               cached ? a->capacity : a->n,
                               d->heads,
                               d->heads,
                               dh,
                               dh,
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
  return ad;
}

_Static_assert(sizeof(clattn_attn_desc) <= CLATTN__CORE_DESC_BYTES &&
                   sizeof(clattn__append_desc) <= CLATTN__CORE_DESC_BYTES &&
                   sizeof(clattn__super_values_desc) <=
                       CLATTN__CORE_DESC_BYTES &&
                   sizeof(clattn_hh_layer_desc) <= CLATTN__LAYER_DESC_BYTES,
               "the hh descriptions fit the layer's byte stores");

/* A call of a standard core (prefill, decode) over K and V, and an append
 * of k_new (and v_new unless NULL: one tensor) into the cache. */
static void attend(const clattn_hh_layer_desc *d, clattn__core_op op,
                   const clattn__core_args *a, cl_mem k, cl_mem v, int kv_same,
                   clattn__core_call *call) {
  const cl_mem q = a->act[CLATTN__ACT_Q], o = a->act[CLATTN__ACT_O];
  const int cached = a->capacity > 0;
  const cl_mem lens = cached ? a->lens : NULL;
  if (op == CLATTN__CORE_DECODE) {
    const clattn_decode_desc dd = cache_desc(d, a);
    memcpy(call->desc.bytes, &dd, sizeof dd);
  } else {
    const clattn_attn_desc ad = attn_desc(d, a);
    memcpy(call->desc.bytes, &ad, sizeof ad);
  }
  const cl_mem kc = cached ? a->k_cache : k, vc = cached ? a->v_cache : v;
  if (kv_same) {
    const cl_mem b[4] = {q, kc, lens, o};
    memcpy(call->buf, b, sizeof b);
  } else {
    const cl_mem b[5] = {q, kc, vc, lens, o};
    memcpy(call->buf, b, sizeof b);
  }
}

static void append(const clattn_hh_layer_desc *d, const clattn__core_args *a,
                   cl_mem k_new, cl_mem v_new, clattn__core_call *call) {
  const clattn_decode_desc dd = cache_desc(d, a);
  const clattn__append_desc ad = clattn__append_of_decode(&dd, a->n);
  memcpy(call->desc.bytes, &ad, sizeof ad);
  if (v_new == NULL) {
    const cl_mem b[3] = {k_new, a->pos, a->k_cache};
    memcpy(call->buf, b, sizeof b);
  } else {
    const cl_mem b[5] = {k_new, v_new, a->pos, a->k_cache, a->v_cache};
    memcpy(call->buf, b, sizeof b);
  }
}

/* Optimised: K = x W_k, V = x; the cache holds K and X. */
static void core_optimised(const void *desc, clattn__core_op op,
                           const clattn__core_args *a,
                           clattn__core_call *call) {
  const cl_mem x = a->act[CLATTN__ACT_X], k = a->act[CLATTN__ACT_K];
  if (op == CLATTN__CORE_APPEND)
    append(desc, a, k, x, call);
  else
    attend(desc, op, a, k, x, 0, call);
}

/* Efficient: K = V = x, one tensor, in the cache too. */
static void core_efficient(const void *desc, clattn__core_op op,
                           const clattn__core_args *a,
                           clattn__core_call *call) {
  const cl_mem x = a->act[CLATTN__ACT_X];
  if (op == CLATTN__CORE_APPEND)
    append(desc, a, x, NULL, call);
  else
    attend(desc, op, a, x, x, 1, call);
}

/* Super: K = x, V' = W_a x (the VALUES call, after the append of x into
 * the cache's K tensor and before the attention); the cache holds X and
 * V'. */
static void core_super(const void *desc, clattn__core_op op,
                       const clattn__core_args *a, clattn__core_call *call) {
  const clattn_hh_layer_desc *d = desc;
  const cl_mem x = a->act[CLATTN__ACT_X], v = a->act[CLATTN__ACT_V];
  const int cached = a->capacity > 0;
  if (op == CLATTN__CORE_APPEND) {
    append(d, a, x, NULL, call);
  } else if (op == CLATTN__CORE_VALUES) {
    const clattn_layout lay = cached ? CLATTN_BHSD : CLATTN_BSHD;
    const clattn__super_values_desc sd = {
        a->batch, a->n,        a->cached,  cached ? a->capacity : a->n,
        d->heads, head_dim(d), d->max_len, a->causal,
        lay,      lay};
    memcpy(call->desc.bytes, &sd, sizeof sd);
    const cl_mem b[3] = {a->w != NULL ? a->w[SUP_A] : NULL,
                         cached ? a->k_cache : x, cached ? a->v_cache : v};
    memcpy(call->buf, b, sizeof b);
  } else {
    attend(d, op, a, x, v, 0, call);
  }
}

/* ----------------------------------------------------------- the kinds */

const clattn__layer_kind clattn__layer_optimised = {
    .name = "optimised",
    .summary = "Hosseini & Hosseini's Optimised: K projected, V = x "
               "(clattn_layer_create_optimised)",
    .desc_size = sizeof(clattn_hh_layer_desc),
    .desc_type = "clattn_hh_layer_desc",
    .check = check_plain,
    .options = options,
    .nweights = 3,
    .weights = opt_weights,
    .weight_shape = weight_shape_dd,
    .nproj = 3,
    .nproj_in = 2,
    .proj = opt_proj,
    .cache_shape = cache_shape_two,
    .family = {"prefill", "decode", "append", NULL},
    .core = core_optimised,
};

const clattn__layer_kind clattn__layer_efficient = {
    .name = "efficient",
    .summary = "Hosseini & Hosseini's Efficient: K = V = x, one cache tensor "
               "(clattn_layer_create_efficient)",
    .desc_size = sizeof(clattn_hh_layer_desc),
    .desc_type = "clattn_hh_layer_desc",
    .check = check_plain,
    .options = options,
    .nweights = 2,
    .weights = eff_weights,
    .weight_shape = weight_shape_dd,
    .nproj = 2,
    .nproj_in = 1,
    .proj = eff_proj,
    .cache_shape = cache_shape_one,
    .family = {"efficient-prefill", "efficient-decode", "efficient-append",
               NULL},
    .core = core_efficient,
};

const clattn__layer_kind clattn__layer_super = {
    .name = "super",
    .summary = "Hosseini & Hosseini's Super: K = x, V' = W_a x "
               "(clattn_layer_create_super)",
    .desc_size = sizeof(clattn_hh_layer_desc),
    .desc_type = "clattn_hh_layer_desc",
    .check = check_super,
    .options = options,
    .nweights = 3,
    .weights = sup_weights,
    .weight_shape = weight_shape_super,
    .nproj = 2,
    .nproj_in = 1,
    .proj = sup_proj,
    .cache_shape = cache_shape_two,
    .check_call = check_call_super,
    .core_act_cols = core_act_cols_super,
    .family = {"prefill", "decode", "efficient-append", "super-values"},
    .core = core_super,
};

static const clattn__layer_kind *kind_of(clattn_hh_variant v) {
  switch (v) {
  case CLATTN_HH_OPTIMISED:
    return &clattn__layer_optimised;
  case CLATTN_HH_EFFICIENT:
    return &clattn__layer_efficient;
  case CLATTN_HH_SUPER:
    return &clattn__layer_super;
  }
  return NULL;
}

/* ------------------------------------------------------- public calls */

clattn_status clattn_layer_create_optimised(clattn_ctx *ctx,
                                            const clattn_hh_layer_desc *d,
                                            cl_mem w_q, cl_mem w_k, cl_mem w_o,
                                            clattn_layer **out) {
  const cl_mem w[3] = {w_q, w_k, w_o};
  return clattn__layer_create(ctx, &clattn__layer_optimised, d, w, out);
}

clattn_status clattn_layer_create_efficient(clattn_ctx *ctx,
                                            const clattn_hh_layer_desc *d,
                                            cl_mem w_q, cl_mem w_o,
                                            clattn_layer **out) {
  const cl_mem w[2] = {w_q, w_o};
  return clattn__layer_create(ctx, &clattn__layer_efficient, d, w, out);
}

clattn_status clattn_layer_create_super(clattn_ctx *ctx,
                                        const clattn_hh_layer_desc *d,
                                        cl_mem w_q, cl_mem w_a, cl_mem w_o,
                                        clattn_layer **out) {
  const cl_mem w[3] = {w_q, w_a, w_o};
  return clattn__layer_create(ctx, &clattn__layer_super, d, w, out);
}

long long clattn_hh_layer_params(clattn_hh_variant v,
                                 const clattn_hh_layer_desc *d) {
  const clattn__layer_kind *K = kind_of(v);
  clattn_hh_layer_desc own;
  char why[160];
  if (K == NULL || d == NULL ||
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

static clattn_status model_hh_layer(clattn_hh_variant v,
                                    const clattn_hh_layer_desc *d, int batch,
                                    int n, int cache_len, int causal,
                                    const clattn_profile *prof,
                                    clattn_prediction *out) {
  clattn_hh_layer_desc own;
  if (prof == NULL || out == NULL || d == NULL)
    return CLATTN_ERR_INVALID_ARG;
  memset(out, 0, sizeof *out);
  const clattn__layer_kind *K = kind_of(v);
  if (K == NULL)
    return clattn__model_fail(out, CLATTN_ERR_INVALID_ARG,
                              "unknown Hosseini & Hosseini variant");
  clattn_status rc = clattn__struct_in(&own, sizeof own, d, K->desc_type,
                                       out->errmsg, sizeof out->errmsg);
  if (rc)
    return rc;
  d = &own;
  if (batch < 1 || n < 1 || cache_len < 0)
    return clattn__model_fail(out, CLATTN_ERR_SHAPE,
                              "batch and n must be >= 1, cache_len >= 0");
  rc = K->check(d, out->errmsg, sizeof out->errmsg);
  /* one position is modelled as a decode step, which is causal */
  if (rc == CLATTN_OK && K->check_call != NULL)
    rc = K->check_call(d, cache_len + n, cache_len > 0, causal || n == 1,
                       out->errmsg, sizeof out->errmsg);
  if (rc != CLATTN_OK)
    return rc;
  return clattn__layer_model(K, d, batch, n, cache_len, causal, prof, out);
}

clattn_status clattn_model_hh_layer(clattn_hh_variant v,
                                    const clattn_hh_layer_desc *d, int batch,
                                    int n, int cache_len, int causal,
                                    const clattn_profile *prof,
                                    clattn_prediction *out) {
  clattn_prediction own;
  clattn_profile own_prof;
  clattn_status rc = clattn__model_in(&prof, &own_prof, out, &own);
  if (rc == CLATTN_OK)
    rc = model_hh_layer(v, d, batch, n, cache_len, causal, prof, &own);
  return clattn__model_out(rc, &own, out);
}
