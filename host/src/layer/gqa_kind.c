/* gqa_kind.c - the GQA layer as a layer kind (layer.h): four weights, the
 * Q, K, V projections before the core and the output one after it, and the
 * prefill, decode and append families as its core. */
#include "layer/layer.h"

enum { W_Q, W_K, W_V, W_O };

static const char *const weights[] = {"w_q", "w_k", "w_v", "w_o"};

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

const clattn__layer_kind clattn__layer_gqa = {
    .name = "gqa",
    .nweights = 4,
    .weights = weights,
    .weight_shape = weight_shape,
    .nproj = 4,
    .nproj_in = 3,
    .proj = proj,
    .prefill = &clattn__family_prefill,
    .decode = &clattn__family_decode,
    .append = &clattn__family_append,
};
