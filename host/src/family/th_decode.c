/* th_decode.c - the talking-heads decode family: one query per sequence
 * over a KV cache with three head counts, split-KV and exact
 * (clattn_talking_heads_decode).  Its costs are in th_decode_cost.c, its
 * kernels in cl/th_decode.cl. */
#include "family/th_decode.h"
#include "family/attn_opts.h"
#include "family/common.h"
#include "family/family.h"
#include "reference/ref_th.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum { Q, K_CACHE, V_CACHE, P_L, P_W, LENS, O };

#define SHAPE_KEYS                                                             \
  "batch kv-seq heads-k heads heads-v head-dim head-dim-v dtype "              \
  "layout " CLATTN__OPTS_SHAPE_KEYS

clattn_status clattn__th_check_cache(const clattn_th_decode_desc *d, char *why,
                                     size_t cap) {
  clattn_status rc;
  if (d->batch < 1 || d->capacity < 1) {
    snprintf(why, cap, "batch (%d) and capacity (%d) must be >= 1", d->batch,
             d->capacity);
    return CLATTN_ERR_SHAPE;
  }
  if (d->heads_k < 1 || d->heads < 1 || d->heads_v < 1 ||
      d->heads_k > CLATTN_TH_MAX_HEADS || d->heads > CLATTN_TH_MAX_HEADS ||
      d->heads_v > CLATTN_TH_MAX_HEADS) {
    snprintf(why, cap,
             "head counts must be 1..%d (heads_k %d, heads %d, heads_v %d)",
             CLATTN_TH_MAX_HEADS, d->heads_k, d->heads, d->heads_v);
    return CLATTN_ERR_SHAPE;
  }
  /* heads_q == heads_kv: the common checks of head dims and dtype */
  if ((rc = clattn__check_heads(1, 1, d->head_dim_k, d->head_dim_v, d->dtype,
                                why, cap)))
    return rc;
  if (!clattn__is_layout(d->cache_layout)) {
    snprintf(why, cap, "unknown cache layout");
    return CLATTN_ERR_INVALID_ARG;
  }
  if ((rc = clattn__check_scale(d->scale, why, cap)))
    return rc;
  const size_t es = clattn_dtype_size(d->dtype);
  const int hm = d->heads > d->heads_v ? d->heads : d->heads_v;
  /* the combine's row (sequence, value head) is an int32 */
  if ((rc = clattn__check_tensor("k_cache", es, d->batch, d->capacity,
                                 d->heads_k, d->head_dim_k, why, cap)) ||
      (rc = clattn__check_tensor("v_cache", es, d->batch, d->capacity,
                                 d->heads_v, d->head_dim_v, why, cap)) ||
      (rc = clattn__check_tensor("the logits and weights scratch", 4, d->batch,
                                 d->capacity, hm, 1, why, cap)) ||
      (rc = clattn__check_int32("batch x heads_v",
                                (long long)d->batch * d->heads_v, why, cap)))
    return rc;
  return CLATTN_OK;
}

clattn_status clattn__th_parse_cache(const char *text, const char *known,
                                     clattn_th_decode_desc *out, char *why,
                                     size_t cap) {
  clattn__attn_shape s = {1, 0,          0,           0,          0,
                          0, CLATTN_F32, CLATTN_BHSD, CLATTN_BHSD};
  int heads = 0, heads_k, heads_v;
  clattn_status rc;
  if ((rc = clattn__shape_attn(text, known, &s, why, cap)) ||
      (rc = clattn__shape_int(text, "heads", 1, CLATTN_TH_MAX_HEADS, &heads,
                              why, cap)))
    return rc;
  heads_k = heads_v = heads;
  if ((rc = clattn__shape_int(text, "heads-k", 1, CLATTN_TH_MAX_HEADS, &heads_k,
                              why, cap)) ||
      (rc = clattn__shape_int(text, "heads-v", 1, CLATTN_TH_MAX_HEADS, &heads_v,
                              why, cap)))
    return rc;
  if (s.n_kv < 1 || heads < 1 || s.head_dim_k < 1) {
    snprintf(why, cap, "the shape needs kv-seq=, heads= and head-dim=");
    return CLATTN_ERR_INVALID_ARG;
  }
  *out = (clattn_th_decode_desc){.batch = s.batch,
                                 .capacity = s.n_kv,
                                 .heads_k = heads_k,
                                 .heads = heads,
                                 .heads_v = heads_v,
                                 .head_dim_k = s.head_dim_k,
                                 .head_dim_v = s.head_dim_v,
                                 .dtype = s.dtype,
                                 .cache_layout = s.q_layout};
  return CLATTN_OK;
}

void clattn__th_shape_class(const clattn_th_decode_desc *d, char *buf,
                            size_t cap) {
  snprintf(buf, cap, "%s k%d v%d h%d.%d.%d b%ld m%ld %s",
           clattn__dtype_name(d->dtype), d->head_dim_k, d->head_dim_v,
           d->heads_k, d->heads, d->heads_v, clattn__pow2_round(d->batch),
           clattn__pow2_round(d->capacity),
           d->cache_layout == CLATTN_BHSD ? "bhsd" : "bshd");
}

int clattn__th_head_width(int n) {
  for (int w = 16; w > 1; w /= 2)
    if (w != 2 && n % w == 0)
      return w;
  return 1;
}

/* The cache's checks, then the options: the window alone, as for the
 * prefill (talking_heads.c).  The append, which shares the cache checks,
 * ignores the options: they do not change what it writes. */
static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn_th_decode_desc *d = desc;
  clattn_status rc = clattn__th_check_cache(d, why, cap);
  if (rc)
    return rc;
  const clattn__opts o = CLATTN__OPTS_OF(d);
  return clattn__opts_check(&o, d->heads, CLATTN__OPT_WINDOW,
                            "clattn_talking_heads_decode", why, cap);
}

static void buffers(const void *desc, clattn__buf_spec *b) {
  const clattn_th_decode_desc *d = desc;
  const clattn_dtype dt = d->dtype;
  const size_t B = (size_t)d->batch, m = (size_t)d->capacity;
  const size_t hk = (size_t)d->heads_k, hv = (size_t)d->heads_v;
  b[Q] =
      (clattn__buf_spec){"q", CLATTN__BUF_IN, B * hk * d->head_dim_k, dt, 0, 0};
  b[K_CACHE] = (clattn__buf_spec){
      "k_cache", CLATTN__BUF_IN, B * m * hk * d->head_dim_k, dt, 0, 1};
  b[V_CACHE] = (clattn__buf_spec){
      "v_cache", CLATTN__BUF_IN, B * m * hv * d->head_dim_v, dt, 0, 1};
  b[P_L] = (clattn__buf_spec){
      "p_l", CLATTN__BUF_IN, hk * d->heads, CLATTN_F32, 0, 0};
  b[P_W] = (clattn__buf_spec){
      "p_w", CLATTN__BUF_IN, (size_t)d->heads * hv, CLATTN_F32, 0, 0};
  b[LENS] = (clattn__buf_spec){"lens", CLATTN__BUF_INTS, B, CLATTN_F32, 0, 0};
  b[O] = (clattn__buf_spec){"o", CLATTN__BUF_OUT, B * hv * d->head_dim_v, dt, 0,
                            0};
}

static int full_int(const void *desc) {
  return ((const clattn_th_decode_desc *)desc)->capacity;
}

static void shape_class(const void *desc, char *buf, size_t cap) {
  const clattn_th_decode_desc *d = desc;
  if (buf == NULL || cap == 0)
    return;
  clattn__th_shape_class(d, buf, cap);
  const clattn__opts o = CLATTN__OPTS_OF(d);
  clattn__opts_class(&o, buf, cap);
}

static clattn_status parse_shape(const char *text, void *desc, char *why,
                                 size_t cap) {
  clattn_th_decode_desc *d = desc;
  clattn__opts o;
  clattn_status rc;
  if ((rc = clattn__th_parse_cache(text, SHAPE_KEYS, d, why, cap)) ||
      (rc = clattn__opts_shape(text, d->heads, &o, why, cap)))
    return rc;
  CLATTN__OPTS_PUT(d, o);
  return CLATTN_OK;
}

static void set_options(void *desc, clattn__opts o) {
  CLATTN__OPTS_PUT((clattn_th_decode_desc *)desc, o);
}

/* Its tunables, in the order of its table. */
typedef struct th_decode_tunables {
  int variant, keys, wg, splits;
} th_decode_tunables;
static const clattn__tunable tunables[] = {
    {"variant", 1, 1, "1", "1 (its one kernel)", CLATTN__TUNABLE_KERNEL},
    {"keys", 1, 4096, "64", "keys a block", 0},
    {"wg", 1, 1 << 20, "1", "work-items a work-group", CLATTN__TUNABLE_WG},
    {"splits", 1, 1 << 16, "by the cache length and the compute units",
     "KV splits a sequence, combined by a second kernel", 0}};
CLATTN__TUNABLES_MATCH(th_decode_tunables, tunables);

/* The most keys a step sees: the capacity, or the window's W. */
static int keys_seen(const clattn_th_decode_desc *d) {
  return d->window > 0 && d->window < d->capacity ? d->window : d->capacity;
}

static clattn_status plan(const clattn__target *t, const void *desc,
                          const clattn__params *values, void *pl_, char *why,
                          size_t cap) {
  const clattn_th_decode_desc *d = desc;
  th_decode_tunables own;
  const th_decode_tunables *p = &own;
  clattn__tunables_get(&own, sizeof own, values);
  clattn__th_decode_plan *pl = pl_;
  (void)why;
  (void)cap;
  *pl = (clattn__th_decode_plan){0, 0, 0, 0};
  pl->kb = p->keys ? p->keys : 64;
  pl->wg = p->wg;
  /* Splits: two a compute unit on a CPU (a few waves on a GPU), each at
   * least 256 keys long so that the statistics, the partial outputs and
   * the combine stay small beside the K/V bytes a split reads.  They
   * divide the keys a step can see: the capacity, or a window's W. */
  const int span = keys_seen(d);
  int s = p->splits;
  if (s == 0) {
    const long target = (t->is_cpu ? 2L : 4L) * (long)t->compute_units;
    s = (int)((target + d->batch - 1) / d->batch);
    const int most = (int)((span + 255L) / 256L);
    s = s > most ? most : s;
    s = s < 1 ? 1 : s;
  }
  if (s > span)
    s = span;
  long chunk = ((long)span + s - 1) / s;
  chunk = (chunk + pl->kb - 1) / pl->kb * pl->kb;
  pl->chunk = (int)(chunk < span ? chunk : span);
  pl->splits = (span + pl->chunk - 1) / pl->chunk;
  return CLATTN_OK;
}

static int fits(const clattn__target *t, const void *desc, const void *pl_,
                char *why, size_t cap) {
  const clattn__th_decode_plan *pl = pl_;
  (void)desc;
  return clattn__plan_fits(t, pl->wg, 0, why, cap);
}

static clattn__params resolved(const void *pl_) {
  const clattn__th_decode_plan *pl = pl_;
  const th_decode_tunables r = {1, pl->kb, pl->wg == 1 ? 0 : pl->wg,
                                pl->splits};
  return clattn__tunables_put(&r, sizeof r);
}

static int add(const clattn__target *t, const void *d, th_decode_tunables p,
               clattn__space *s) {
  const clattn__params v = clattn__tunables_put(&p, sizeof p);
  return clattn__space_try(&clattn__family_th_decode, t, d, &v, s);
}

/* keys {32, 64, 256} x work-group {1, 2} x splits 1, 2, 4, ... while a
 * split keeps >= 64 of the keys a step sees (at most 64 splits). */
static clattn_status space(const clattn__target *t, const void *desc,
                           clattn__space *s) {
  static const int keys[] = {32, 64, 256}, wgs[] = {0, 2};
  const clattn_th_decode_desc *d = desc;
  clattn__space_init_family(s, &clattn__family_th_decode);
  int i = add(t, d, (th_decode_tunables){0, 0, 0, 0}, s);
  if (i == -2)
    return CLATTN_ERR_NOMEM;
  s->def = i;
  for (int sp = 1; sp <= 64 && (sp == 1 || keys_seen(d) / sp >= 64); sp *= 2)
    for (int a = 0; a < 3; a++)
      for (int w = 0; w < 2; w++)
        if (add(t, d, (th_decode_tunables){1, keys[a], wgs[w], sp}, s) == -2)
          return CLATTN_ERR_NOMEM;
  return CLATTN_OK;
}

/* -D options of the decode program. */
static void options(const clattn_th_decode_desc *d, int direct,
                    clattn__defs *df) {
  df->n = 0;
  clattn__def(df, "DTYPE", (int)d->dtype);
  clattn__def(df, "DK", d->head_dim_k);
  clattn__def(df, "DV", d->head_dim_v);
  clattn__def(df, "HK", d->heads_k);
  clattn__def(df, "H", d->heads);
  clattn__def(df, "HV", d->heads_v);
  clattn__def(df, "VH", clattn__th_head_width(d->heads));
  clattn__def(df, "VU", clattn__th_head_width(d->heads_v));
  clattn__def(df, "VWK", clattn__vec_width(d->head_dim_k));
  clattn__def(df, "VWV", clattn__vec_width(d->head_dim_v));
  clattn__def(df, "DIRECT", direct);
  const clattn__opts o = CLATTN__OPTS_OF(d);
  clattn__opts_defs(&o, df);
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *pl_,
                             int auto_wg, const cl_mem *bufs,
                             const clattn_events *ev) {
  const clattn_th_decode_desc *d = desc;
  clattn__th_decode_plan *pl = pl_;
  clattn_status rc;
  const int b = d->batch, S = pl->splits, direct = S == 1;
  const int hk = d->heads_k, hv = d->heads_v, dv = d->head_dim_v;
  (void)auto_wg;
  clattn__defs df;
  options(d, direct, &df);
  cl_kernel kl = NULL, kv = NULL, kc = NULL;
  if ((rc = clattn__kernel_defs(ctx, "th_decode.cl", &df, "th_logits", &kl)) ||
      (rc = clattn__kernel_defs(ctx, "th_decode.cl", &df, "th_values", &kv)) ||
      (!direct &&
       (rc = clattn__kernel_defs(ctx, "th_decode.cl", &df, "th_combine", &kc))))
    return rc;
  if (pl->wg &&
      ((rc = clattn__check_wg(ctx, kl, (size_t)pl->wg, 0, "th_logits")) ||
       (rc = clattn__check_wg(ctx, kv, (size_t)pl->wg, 0, "th_values"))))
    return rc;
  /* scratch: logits [b][cap][h], statistics [b][S][2][h], U [b][cap][hv],
   * the splits' shares [b][S][hv][dv] */
  const size_t lb = clattn__bytes(4, b, d->capacity, d->heads, 1);
  const size_t sb = clattn__bytes(4, b, S, 2, d->heads);
  const size_t ub = clattn__bytes(4, b, d->capacity, hv, 1);
  const size_t pb = clattn__bytes(4, b, S, hv, dv);
  if (!lb || !sb || !ub || !pb)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE, "scratch sizes overflow");
  cl_mem logit = NULL, stats = NULL, uw = NULL, opart = NULL;
  if ((rc = clattn__scratch(ctx, 0, lb, &logit)) ||
      (rc = clattn__scratch(ctx, 1, sb, &stats)) ||
      (rc = clattn__scratch(ctx, 2, ub, &uw)) ||
      (!direct && (rc = clattn__scratch(ctx, 3, pb, &opart))))
    return rc;
  if (direct)
    opart = stats; /* unused by a DIRECT program, but an argument */
  const float scale = clattn__kernel_scale(d->scale, d->head_dim_k);
  const clattn__strides ks =
      clattn__layout_strides(d->cache_layout, d->capacity, hk, d->head_dim_k);
  const clattn__strides vs =
      clattn__layout_strides(d->cache_layout, d->capacity, hv, dv);
  const cl_int ci[3] = {d->capacity, S, pl->chunk};
  const clattn__opts opts = CLATTN__OPTS_OF(d);
  const cl_mem l_bufs[6] = {bufs[Q],   bufs[K_CACHE], bufs[LENS],
                            bufs[P_L], logit,         stats};
  const long kst[3] = {ks.b, ks.s, ks.h}, vst[3] = {vs.b, vs.s, vs.h};
  cl_uint a = 0;
  if ((rc = clattn__args(ctx, kl, &a, 6, sizeof(cl_mem), l_bufs)) ||
      (rc = clattn__scalars(ctx, kl, &a, 3, sizeof(cl_int), ci)) ||
      (rc = clattn__scalars(ctx, kl, &a, 1, sizeof(cl_float), &scale)) ||
      (rc = clattn__scalars(ctx, kl, &a, 3, sizeof(cl_long), kst)) ||
      (rc = clattn__opts_args(ctx, kl, &a, &opts, d->heads)))
    return rc;
  const cl_mem v_bufs[8] = {bufs[V_CACHE], bufs[LENS], bufs[P_W], logit,
                            stats,         uw,         bufs[O],   opart};
  a = 0;
  if ((rc = clattn__args(ctx, kv, &a, 8, sizeof(cl_mem), v_bufs)) ||
      (rc = clattn__scalars(ctx, kv, &a, 3, sizeof(cl_int), ci)) ||
      (rc = clattn__scalars(ctx, kv, &a, 3, sizeof(cl_long), vst)) ||
      (rc = clattn__opts_args(ctx, kv, &a, &opts, d->heads)))
    return rc;
  const cl_int rows = b * hv;
  if (!direct) {
    const cl_mem c_bufs[2] = {opart, bufs[O]};
    const cl_int cn[2] = {rows, S};
    a = 0;
    if ((rc = clattn__args(ctx, kc, &a, 2, sizeof(cl_mem), c_bufs)) ||
        (rc = clattn__scalars(ctx, kc, &a, 2, sizeof(cl_int), cn)))
      return rc;
  }
  const cl_uint nw = ev ? ev->num_wait : 0;
  const cl_event *wait = ev ? ev->wait : NULL;
  cl_event *out = ev ? ev->out : NULL;
  /* one work-item a group by default: PoCL otherwise packs a step's few
   * work-items into one group, which runs on one core */
  const size_t wg = pl->wg ? (size_t)pl->wg : 1;
  const size_t gws[2] = {((size_t)S + wg - 1) / wg * wg, (size_t)b};
  const size_t lws[2] = {wg, 1};
  if ((rc = clattn__launch(ctx, kl, 2, gws, lws, nw, wait, NULL)) ||
      (rc = clattn__launch(ctx, kv, 2, gws, lws, 0, NULL,
                           direct ? out : NULL)) ||
      direct)
    return rc;
  const size_t cg[2] = {(size_t)rows, (size_t)(dv / clattn__vec_width(dv))};
  return clattn__launch(ctx, kc, 2, cg, NULL, 0, NULL, out);
}

/* A capacity that no block divides, three head counts that differ, two
 * sequences of different lengths. */
static void check_case(const void *desc, clattn__check_case *c) {
  clattn_th_decode_desc *s = (clattn_th_decode_desc *)c->desc;
  *s = *(const clattn_th_decode_desc *)desc;
  s->params = NULL;
  s->batch = 2;
  s->capacity = 301;
  s->heads_k = 3;
  s->heads = 5;
  s->heads_v = 2;
  c->ints[0] = 301;
  c->ints[1] = 188;
}

static void reference(const void *desc, void *const *b) {
  const clattn_th_decode_desc *d = desc;
  ref_th_decode_window(
      d->batch, d->capacity, d->heads_k, d->heads, d->heads_v, d->head_dim_k,
      d->head_dim_v, (int)d->cache_layout,
      d->scale > 0 ? d->scale : 1.0 / sqrt((double)d->head_dim_k), d->window,
      b[LENS], b[Q], b[K_CACHE], b[V_CACHE], b[P_L], b[P_W], b[O]);
}

static const char *const standard[] = {
    "batch=1 kv-seq=4096 heads=8 head-dim=64",
    "batch=1 kv-seq=8192 heads-k=8 heads=16 heads-v=8 head-dim=64",
    "batch=8 kv-seq=2048 heads=12 head-dim=64", NULL};

const clattn__family clattn__family_th_decode = {
    .name = "talking-heads-decode",
    .summary = "talking-heads: one query per sequence over a KV cache, "
               "split-KV, exact (clattn_talking_heads_decode)",
    .api = "clattn_talking_heads_decode",
    .source = "th_decode.cl",
    .desc_size = sizeof(clattn_th_decode_desc),
    .plan_size = sizeof(clattn__th_decode_plan),
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
    .cost = clattn__th_decode_cost,
    .enqueue = enqueue,
    .check_case = check_case,
    .reference = reference,
};
