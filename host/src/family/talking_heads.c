/* talking_heads.c - the talking-heads prefill family: fused talking-heads
 * attention over a whole query block (clattn_talking_heads).  Its plan is
 * in talking_heads_plan.c, its costs in talking_heads_cost.c, its kernels
 * in cl/talking_heads.cl. */
#include "family/attn_opts.h"
#include "family/common.h"
#include "family/family.h"
#include "family/talking_heads.h"
#include "reference/ref_th.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum { Q, K, V, P_L, P_W, KV_LENS, O };

/* A head count in 1..CLATTN_TH_MAX_HEADS. */
static clattn_status check_count(const char *what, int x, char *why,
                                 size_t cap) {
  if (x < 1) {
    snprintf(why, cap, "%s (%d) must be >= 1", what, x);
    return CLATTN_ERR_SHAPE;
  }
  if (x > CLATTN_TH_MAX_HEADS) {
    snprintf(why, cap, "%s (%d): at most %d supported", what, x,
             CLATTN_TH_MAX_HEADS);
    return CLATTN_ERR_UNSUPPORTED;
  }
  return CLATTN_OK;
}

static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn_th_desc *d = desc;
  clattn_status rc;
  if (d->batch < 1 || d->n_q < 1 || d->n_kv < 1) {
    snprintf(why, cap, "batch (%d), n_q (%d) and n_kv (%d) must be >= 1",
             d->batch, d->n_q, d->n_kv);
    return CLATTN_ERR_SHAPE;
  }
  if ((rc = check_count("heads_k", d->heads_k, why, cap)) ||
      (rc = check_count("heads", d->heads, why, cap)) ||
      (rc = check_count("heads_v", d->heads_v, why, cap)) ||
      (rc = clattn__check_heads(d->heads_k, d->heads_k, d->head_dim_k,
                                d->head_dim_v, d->dtype, why, cap)))
    return rc;
  if (!clattn__is_layout(d->q_layout) || !clattn__is_layout(d->kv_layout)) {
    snprintf(why, cap, "unknown layout");
    return CLATTN_ERR_INVALID_ARG;
  }
  if ((rc = clattn__check_scale(d->scale, why, cap)))
    return rc;
  /* the window alone: it masks after the P_l mix, where the causal mask
   * is; the others would change the logits each head mixes */
  const clattn__opts o = CLATTN__OPTS_OF(d);
  if ((rc = clattn__opts_check(&o, d->heads, CLATTN__OPT_WINDOW,
                               "clattn_talking_heads", why, cap)))
    return rc;
  const size_t es = clattn_dtype_size(d->dtype);
  /* the staging kernel's (sequence, head) item is an int32 */
  if ((rc = clattn__check_tensor("q", es, d->batch, d->n_q, d->heads_k,
                                 d->head_dim_k, why, cap)) ||
      (rc = clattn__check_tensor("k", es, d->batch, d->n_kv, d->heads_k,
                                 d->head_dim_k, why, cap)) ||
      (rc = clattn__check_tensor("v", es, d->batch, d->n_kv, d->heads_v,
                                 d->head_dim_v, why, cap)) ||
      (rc = clattn__check_tensor("o", es, d->batch, d->n_q, d->heads_v,
                                 d->head_dim_v, why, cap)) ||
      (rc = clattn__check_tensor(
           "the staged K and V tiles", 4, d->batch, CLATTN_TH_MAX_HEADS,
           d->n_kv + 256L, (long)d->head_dim_k + d->head_dim_v, why, cap)) ||
      (rc = clattn__check_int32("batch x max(heads_k, heads_v)",
                                (long long)d->batch * (d->heads_k > d->heads_v
                                                           ? d->heads_k
                                                           : d->heads_v),
                                why, cap)))
    return rc;
  return CLATTN_OK;
}

static void buffers(const void *desc, clattn__buf_spec *b) {
  const clattn_th_desc *d = desc;
  const clattn_dtype dt = d->dtype;
  const size_t B = (size_t)d->batch, n = (size_t)d->n_q, m = (size_t)d->n_kv;
  const size_t hk = (size_t)d->heads_k, h = (size_t)d->heads,
               hv = (size_t)d->heads_v;
  b[Q] = (clattn__buf_spec){
      "q", CLATTN__BUF_IN, B * n * hk * d->head_dim_k, dt, 0, 0};
  b[K] = (clattn__buf_spec){
      "k", CLATTN__BUF_IN, B * m * hk * d->head_dim_k, dt, 0, 0};
  b[V] = (clattn__buf_spec){
      "v", CLATTN__BUF_IN, B * m * hv * d->head_dim_v, dt, 0, 0};
  b[P_L] = (clattn__buf_spec){"p_l", CLATTN__BUF_IN, hk * h, CLATTN_F32, 0, 0};
  b[P_W] = (clattn__buf_spec){"p_w", CLATTN__BUF_IN, h * hv, CLATTN_F32, 0, 0};
  b[KV_LENS] =
      (clattn__buf_spec){"kv_lens", CLATTN__BUF_INTS, B, CLATTN_F32, 1, 0};
  b[O] = (clattn__buf_spec){
      "o", CLATTN__BUF_OUT, B * n * hv * d->head_dim_v, dt, 0, 0};
}

static int full_int(const void *desc) {
  return ((const clattn_th_desc *)desc)->n_kv;
}

static void shape_class(const void *desc, char *buf, size_t cap) {
  const clattn_th_desc *d = desc;
  if (buf == NULL || cap == 0)
    return;
  snprintf(buf, cap, "%s k%d v%d hk%d h%d hv%d b%ld n%ld m%ld c%d",
           clattn__dtype_name(d->dtype), d->head_dim_k, d->head_dim_v,
           d->heads_k, d->heads, d->heads_v, clattn__pow2_round(d->batch),
           clattn__pow2_round(d->n_q), clattn__pow2_round(d->n_kv),
           d->causal ? 1 : 0);
  const clattn__opts o = CLATTN__OPTS_OF(d);
  clattn__opts_class(&o, buf, cap);
}

#define SHAPE_KEYS                                                             \
  "batch seq kv-seq heads-k heads heads-v head-dim head-dim-v dtype causal "   \
  "layout kv-layout " CLATTN__OPTS_SHAPE_KEYS

static clattn_status parse_shape(const char *text, void *desc, char *why,
                                 size_t cap) {
  clattn__attn_shape s = {1, 0,          0,           0,          0,
                          0, CLATTN_F32, CLATTN_BSHD, CLATTN_BSHD};
  int heads_k = 0, heads, heads_v;
  clattn__opts o;
  clattn_status rc;
  if ((rc = clattn__shape_attn(text, SHAPE_KEYS, &s, why, cap)) ||
      (rc = clattn__shape_int(text, "heads-k", 1, CLATTN_TH_MAX_HEADS, &heads_k,
                              why, cap)))
    return rc;
  heads = heads_v = heads_k;
  if ((rc = clattn__shape_int(text, "heads", 1, CLATTN_TH_MAX_HEADS, &heads,
                              why, cap)) ||
      (rc = clattn__shape_int(text, "heads-v", 1, CLATTN_TH_MAX_HEADS, &heads_v,
                              why, cap)) ||
      (rc = clattn__opts_shape(text, heads, &o, why, cap)))
    return rc;
  if (s.n_q < 1 || heads_k < 1 || s.head_dim_k < 1) {
    snprintf(why, cap, "the shape needs seq=, heads-k= and head-dim=");
    return CLATTN_ERR_INVALID_ARG;
  }
  *(clattn_th_desc *)desc = (clattn_th_desc){.batch = s.batch,
                                             .n_q = s.n_q,
                                             .n_kv = s.n_kv,
                                             .heads_k = heads_k,
                                             .heads = heads,
                                             .heads_v = heads_v,
                                             .head_dim_k = s.head_dim_k,
                                             .head_dim_v = s.head_dim_v,
                                             .dtype = s.dtype,
                                             .q_layout = s.q_layout,
                                             .kv_layout = s.kv_layout,
                                             .causal = s.causal};
  CLATTN__OPTS_PUT((clattn_th_desc *)desc, o);
  return CLATTN_OK;
}

static void set_options(void *desc, clattn__opts o) {
  CLATTN__OPTS_PUT((clattn_th_desc *)desc, o);
}

/* Its tunables, in the order of clattn__th_tunables (talking_heads.h). */
static const clattn__tunable tunables[] = {
    {"variant", 1, 2, "1 on CPUs or with scheme 3, 2 on GPUs",
     "1 register-blocked tiles (CPU-shaped), 2 local-memory work-group tiles "
     "(GPU-shaped)",
     CLATTN__TUNABLE_KERNEL},
    {"rows", 1, 32, "by the scheme and the vector registers",
     "variant 1: query positions a work-item", 0},
    {"keys", 1, 256, "by the device",
     "keys a tile (variant 1: a multiple of 16)", 0},
    {"wg", 1, 1 << 20, "64 or the device's limit (variant 2), 1 (variant 1)",
     "work-items a work-group", CLATTN__TUNABLE_WG},
    {"scheme", 1, 3, "the one with the least work a (query, key) pair",
     "1 one pass with an accumulator per (logit head, value head), 2 two "
     "passes (softmax statistics, then the exact weights mixed by P_w), 3 "
     "(variant 1) two passes with pass 1's logits kept in local memory",
     0}};
CLATTN__TUNABLES_MATCH(clattn__th_tunables, tunables);

static clattn_status plan(const clattn__target *t, const void *desc,
                          const clattn__params *p, void *pl, char *why,
                          size_t cap) {
  return clattn__th_plan_make(t, desc, p, pl, why, cap);
}

static int fits(const clattn__target *t, const void *desc, const void *pl,
                char *why, size_t cap) {
  return clattn__th_fits(t, desc, pl, why, cap);
}

static clattn__params resolved(const void *pl) {
  return clattn__th_resolved(pl);
}

static int add(const clattn__target *t, const void *d, clattn__th_tunables p,
               clattn__space *s) {
  const clattn__params v = clattn__tunables_put(&p, sizeof p);
  return clattn__space_try(&clattn__family_talking_heads, t, d, &v, s);
}

/* Every scheme x variant 1 (positions {1,2,4,8,16} x keys {16,32,64}) and
 * schemes 1 and 2 x variant 2 (work-group {16..256} x keys {4,8,16,32}). */
static clattn_status space(const clattn__target *t, const void *desc,
                           clattn__space *s) {
  static const int rows1[] = {1, 2, 4, 8, 16}, keys1[] = {16, 32, 64},
                   wg2[] = {16, 32, 64, 128, 256}, keys2[] = {4, 8, 16, 32};
  clattn__space_init_family(s, &clattn__family_talking_heads);
  int i = add(t, desc, (clattn__th_tunables){0, 0, 0, 0, 0}, s);
  if (i == -2)
    return CLATTN_ERR_NOMEM;
  s->def = i;
  for (int sc = 1; sc <= 3; sc++) {
    for (int a = 0; a < 5; a++)
      for (int b = 0; b < 3; b++)
        if (add(t, desc, (clattn__th_tunables){1, rows1[a], keys1[b], 0, sc},
                s) == -2)
          return CLATTN_ERR_NOMEM;
    for (int a = 0; sc <= 2 && a < 5; a++)
      for (int b = 0; b < 4; b++)
        if (add(t, desc, (clattn__th_tunables){2, 0, keys2[b], wg2[a], sc},
                s) == -2)
          return CLATTN_ERR_NOMEM;
  }
  return CLATTN_OK;
}

/* -D options of a talking-heads program. */
static void options(const clattn_th_desc *d, const clattn__th_plan *pl,
                    clattn__defs *df) {
  df->n = 0;
  clattn__def(df, "DTYPE", (int)d->dtype);
  clattn__def(df, "HK", d->heads_k);
  clattn__def(df, "H", d->heads);
  clattn__def(df, "HV", d->heads_v);
  clattn__def(df, "DK", d->head_dim_k);
  clattn__def(df, "DV", d->head_dim_v);
  clattn__def(df, "VWK", clattn__vec_width(d->head_dim_k));
  clattn__def(df, "VWV", clattn__vec_width(d->head_dim_v));
  clattn__def(df, "CAUSAL", d->causal ? 1 : 0);
  clattn__def(df, "SCHEME", pl->scheme);
  if (pl->variant == 1) {
    clattn__def(df, "RB", pl->rb);
    clattn__def(df, "KB", pl->kb);
  } else {
    clattn__def(df, "WG", pl->wg);
    clattn__def(df, "KT", pl->kt);
  }
  const clattn__opts o = CLATTN__OPTS_OF(d);
  clattn__opts_defs(&o, df);
}

/* Variant 1: th_stage writes K^T and V as float32 rows of ld keys, then
 * th_fwd_reg runs rb query positions a work-item. */
static clattn_status enqueue_reg(clattn_ctx *ctx, const clattn_th_desc *d,
                                 const clattn__th_plan *pl, const cl_mem *bufs,
                                 const clattn__defs *df,
                                 const clattn_events *ev) {
  clattn_status rc;
  const int b = d->batch, n = d->n_q, m = d->n_kv, ld = pl->ld;
  const int hk = d->heads_k, hv = d->heads_v, dk = d->head_dim_k;
  const int hmax = hk > hv ? hk : hv;
  const clattn__strides qs = clattn__layout_strides(d->q_layout, n, hk, dk);
  const clattn__strides ks = clattn__layout_strides(d->kv_layout, m, hk, dk);
  const clattn__strides vs =
      clattn__layout_strides(d->kv_layout, m, hv, d->head_dim_v);
  const clattn__strides os =
      clattn__layout_strides(d->q_layout, n, hv, d->head_dim_v);
  const float scale = clattn__kernel_scale(d->scale, dk);
  const clattn__opts opts = CLATTN__OPTS_OF(d);
  cl_kernel st_kern = NULL, kern = NULL;
  cl_mem kt = NULL, vc = NULL;
  /* whole tiles of kb keys (th_stage's layout) */
  const int tiled = (ld + pl->kb - 1) / pl->kb * pl->kb;
  const size_t ktb = clattn__bytes(4, b, hk, dk, tiled);
  const size_t vcb = clattn__bytes(4, b, hv, d->head_dim_v, tiled);
  if (ktb == 0 || vcb == 0 || ld < m)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE, "tensor sizes overflow");
  if ((rc = clattn__kernel_defs(ctx, "talking_heads.cl", df, "th_stage",
                                &st_kern)) ||
      (rc = clattn__kernel_defs(ctx, "talking_heads.cl", df, "th_fwd_reg",
                                &kern)))
    return rc;
  const size_t lgs = clattn__th_local_bytes(d, pl);
  if ((pl->wg || lgs) &&
      (rc = clattn__check_wg(ctx, kern, pl->wg ? (size_t)pl->wg : 1, lgs,
                             "th_fwd_reg")))
    return rc;
  if ((rc = clattn__scratch(ctx, 0, ktb, &kt)) ||
      (rc = clattn__scratch(ctx, 3, vcb, &vc)))
    return rc;
  const cl_int si[2] = {m, ld};
  const long sst[6] = {ks.b, ks.s, ks.h, vs.b, vs.s, vs.h};
  const cl_mem sb[4] = {bufs[K], bufs[V], kt, vc};
  const cl_int sl[2] = {bufs[KV_LENS] != NULL, n};
  cl_uint a = 0;
  if ((rc = clattn__args(ctx, st_kern, &a, 4, sizeof(cl_mem), sb)) ||
      (rc = clattn__scalars(ctx, st_kern, &a, 2, sizeof(cl_int), si)) ||
      (rc = clattn__scalars(ctx, st_kern, &a, 6, sizeof(cl_long), sst)) ||
      (rc =
           clattn__args(ctx, st_kern, &a, 1, sizeof(cl_mem), &bufs[KV_LENS])) ||
      (rc = clattn__scalars(ctx, st_kern, &a, 2, sizeof(cl_int), sl)) ||
      (rc = clattn__opts_args(ctx, st_kern, &a, &opts, d->heads)))
    return rc;
  const cl_int ri[4] = {n, m, ld, bufs[KV_LENS] != NULL};
  const cl_mem rb[7] = {bufs[Q],       kt,     vc, bufs[P_L], bufs[P_W],
                        bufs[KV_LENS], bufs[O]};
  const long rst[6] = {qs.b, qs.s, qs.h, os.b, os.s, os.h};
  a = 0;
  if ((rc = clattn__args(ctx, kern, &a, 7, sizeof(cl_mem), rb)) ||
      (rc = clattn__scalars(ctx, kern, &a, 4, sizeof(cl_int), ri)) ||
      (rc = clattn__scalars(ctx, kern, &a, 1, sizeof(cl_float), &scale)) ||
      (rc = clattn__scalars(ctx, kern, &a, 6, sizeof(cl_long), rst)) ||
      (lgs &&
       ((rc = clattn__arg(ctx, kern, a++, lgs, NULL)) ||
        (rc = clattn__scalars(ctx, kern, &a, 1, sizeof(cl_int), &pl->keep)))) ||
      (rc = clattn__opts_args(ctx, kern, &a, &opts, d->heads)))
    return rc;
  /* default: one work-item per work-group, which PoCL schedules best */
  const size_t wg1 = pl->wg ? (size_t)pl->wg : 1;
  size_t blocks = (size_t)(n + pl->rb - 1) / (size_t)pl->rb;
  blocks = (blocks + wg1 - 1) / wg1 * wg1;
  const size_t lws[2] = {wg1, 1}, one[2] = {1, 1};
  const size_t gws[2] = {blocks, (size_t)b};
  const size_t sg[2] = {(size_t)ld / 16, (size_t)b * hmax};
  if ((rc = clattn__launch(ctx, st_kern, 2, sg, one, ev ? ev->num_wait : 0,
                           ev ? ev->wait : NULL, NULL)))
    return rc;
  return clattn__launch(ctx, kern, 2, gws, lws, 0, NULL, ev ? ev->out : NULL);
}

/* Variant 2: th_fwd_local, work-groups sharing K/V tiles of every head in
 * local memory. */
static clattn_status enqueue_local(clattn_ctx *ctx, const clattn_th_desc *d,
                                   clattn__th_plan *pl, int auto_wg,
                                   const cl_mem *bufs, clattn__defs *df,
                                   const clattn_events *ev) {
  clattn_status rc;
  const int b = d->batch, n = d->n_q, m = d->n_kv;
  const int hk = d->heads_k, hv = d->heads_v, dk = d->head_dim_k;
  cl_kernel kern = NULL;
  if ((rc = clattn__kernel_defs(ctx, "talking_heads.cl", df, "th_fwd_local",
                                &kern)))
    return rc;
  size_t kwg = 0;
  if (auto_wg && (rc = clattn__kernel_wg(ctx, kern, &kwg)))
    return rc;
  if (auto_wg && kwg < (size_t)pl->wg) {
    /* an automatic work-group may exceed what the compiled kernel allows
     * (registers): rebuild once at the kernel's own limit */
    pl->wg = clattn__pow2_floor(kwg);
    options(d, pl, df);
    if ((rc = clattn__kernel_defs(ctx, "talking_heads.cl", df, "th_fwd_local",
                                  &kern)))
      return rc;
  }
  if ((rc = clattn__check_wg(ctx, kern, (size_t)pl->wg,
                             clattn__th_local_bytes(d, pl), "th_fwd_local")))
    return rc;
  const clattn__strides qs = clattn__layout_strides(d->q_layout, n, hk, dk);
  const clattn__strides ks = clattn__layout_strides(d->kv_layout, m, hk, dk);
  const clattn__strides vs =
      clattn__layout_strides(d->kv_layout, m, hv, d->head_dim_v);
  const clattn__strides os =
      clattn__layout_strides(d->q_layout, n, hv, d->head_dim_v);
  const float scale = clattn__kernel_scale(d->scale, dk);
  const clattn__opts opts = CLATTN__OPTS_OF(d);
  const cl_int ci[3] = {n, m, bufs[KV_LENS] != NULL};
  const cl_mem kb[7] = {bufs[Q],   bufs[K],       bufs[V], bufs[P_L],
                        bufs[P_W], bufs[KV_LENS], bufs[O]};
  const long st[12] = {qs.b, qs.s, qs.h, ks.b, ks.s, ks.h,
                       vs.b, vs.s, vs.h, os.b, os.s, os.h};
  cl_uint a = 0;
  if ((rc = clattn__args(ctx, kern, &a, 7, sizeof(cl_mem), kb)) ||
      (rc = clattn__scalars(ctx, kern, &a, 3, sizeof(cl_int), ci)) ||
      (rc = clattn__scalars(ctx, kern, &a, 1, sizeof(cl_float), &scale)) ||
      (rc = clattn__scalars(ctx, kern, &a, 12, sizeof(cl_long), st)) ||
      (rc = clattn__opts_args(ctx, kern, &a, &opts, d->heads)))
    return rc;
  const size_t groups = (size_t)(n + pl->wg - 1) / (size_t)pl->wg;
  const size_t gws[2] = {groups * (size_t)pl->wg, (size_t)b};
  const size_t lws[2] = {(size_t)pl->wg, 1};
  return clattn__launch(ctx, kern, 2, gws, lws, ev ? ev->num_wait : 0,
                        ev ? ev->wait : NULL, ev ? ev->out : NULL);
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *plan_,
                             int auto_wg, const cl_mem *bufs,
                             const clattn_events *ev) {
  const clattn_th_desc *d = desc;
  clattn__th_plan *pl = plan_;
  clattn__defs df;
  options(d, pl, &df);
  if (pl->variant == 1)
    return enqueue_reg(ctx, d, pl, bufs, &df, ev);
  return enqueue_local(ctx, d, pl, auto_wg, bufs, &df, ev);
}

/* Odd sizes that no tile divides, two sequences of different lengths. */
static void check_case(const void *desc, clattn__check_case *c) {
  clattn_th_desc *s = (clattn_th_desc *)c->desc;
  *s = *(const clattn_th_desc *)desc;
  s->params = NULL;
  s->batch = 2;
  s->n_q = 19;
  s->n_kv = 45;
  c->ints[0] = 45;
  c->ints[1] = 29;
}

static void reference(const void *desc, void *const *b) {
  const clattn_th_desc *d = desc;
  const ref_th a = {d->batch,
                    d->n_q,
                    d->n_kv,
                    d->heads_k,
                    d->heads,
                    d->heads_v,
                    d->head_dim_k,
                    d->head_dim_v,
                    (int)d->q_layout,
                    (int)d->kv_layout,
                    d->scale > 0 ? d->scale : 1.0 / sqrt((double)d->head_dim_k),
                    d->causal,
                    b[KV_LENS],
                    d->window};
  ref_talking_heads(&a, b[Q], b[K], b[V], b[P_L], b[P_W], b[O]);
}

static const char *const standard[] = {
    "batch=1 seq=512 heads-k=8 head-dim=64 causal=1",
    "batch=1 seq=1024 heads-k=8 heads=4 heads-v=8 head-dim=64 causal=1", NULL};

const clattn__family clattn__family_talking_heads = {
    .name = "talking-heads",
    .summary = "fused talking-heads attention over a block of queries "
               "(clattn_talking_heads)",
    .api = "clattn_talking_heads",
    .source = "talking_heads.cl",
    .desc_size = sizeof(clattn_th_desc),
    .plan_size = sizeof(clattn__th_plan),
    .nbufs = 7,
    .tune_method = 1,
    .standard_shapes = standard,
    .check = check,
    .buffers = buffers,
    .full_int = full_int,
    .shape_class = shape_class,
    .shape_keys = SHAPE_KEYS,
    .parse_shape = parse_shape,
    .set_options = set_options,
    CLATTN__TUNABLES(tunables),
    .plan = plan,
    .fits = fits,
    .resolved = resolved,
    .space = space,
    .cost = clattn__th_cost,
    .enqueue = enqueue,
    .check_case = check_case,
    .reference = reference,
};
