/* decode.c - the decode family: one query per sequence over a KV cache,
 * split across work-groups and combined with the log-sum-exp rule
 * (clattn_decode).  Its plans are in plan.c, its costs in decode_cost.c,
 * its kernels in cl/decode.cl. */
#include "family/decode.h"
#include "base/versioned.h"
#include "family/attn_opts.h"
#include "family/common.h"
#include "family/family.h"
#include "reference/ref.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum { Q, K_CACHE, V_CACHE, LENS, O };

clattn_status clattn__check_cache(const clattn_decode_desc *d, char *why,
                                  size_t cap) {
  clattn_status rc;
  if (d->batch < 1 || d->capacity < 1) {
    snprintf(why, cap, "batch (%d) and capacity (%d) must be >= 1", d->batch,
             d->capacity);
    return CLATTN_ERR_SHAPE;
  }
  if ((rc = clattn__check_heads(d->heads_q, d->heads_kv, d->head_dim_k,
                                d->head_dim_v, d->dtype, why, cap)))
    return rc;
  if (!clattn__is_layout(d->cache_layout)) {
    snprintf(why, cap, "unknown cache layout");
    return CLATTN_ERR_INVALID_ARG;
  }
  if ((rc = clattn__check_scale(d->scale, why, cap)))
    return rc;
  const size_t es = clattn_dtype_size(d->dtype);
  /* the combine's row (sequence, query head) is an int32 */
  if ((rc = clattn__check_tensor("k_cache", es, d->batch, d->capacity,
                                 d->heads_kv, d->head_dim_k, why, cap)) ||
      (rc = clattn__check_tensor("v_cache", es, d->batch, d->capacity,
                                 d->heads_kv, d->head_dim_v, why, cap)) ||
      (rc = clattn__check_tensor("q", es, d->batch, d->heads_q, d->head_dim_k,
                                 1, why, cap)) ||
      (rc = clattn__check_tensor("o", es, d->batch, d->heads_q, d->head_dim_v,
                                 1, why, cap)) ||
      (rc = clattn__check_int32("batch x heads_q",
                                (long long)d->batch * d->heads_q, why, cap)))
    return rc;
  return CLATTN_OK;
}

#define SHAPE_KEYS                                                             \
  "batch kv-seq heads kv-heads head-dim head-dim-v dtype "                     \
  "layout " CLATTN__OPTS_SHAPE_KEYS

clattn_status clattn__parse_cache(const char *text, const char *known,
                                  clattn_decode_desc *out, char *why,
                                  size_t cap) {
  clattn__attn_shape s = {1, 0,          0,           0,          0,
                          0, CLATTN_F32, CLATTN_BHSD, CLATTN_BHSD};
  int heads_q = 0, heads_kv;
  clattn_status rc;
  if ((rc =
           clattn__shape_heads(text, known, &s, &heads_q, &heads_kv, why, cap)))
    return rc;
  if (s.n_kv < 1 || heads_q < 1 || s.head_dim_k < 1) {
    snprintf(why, cap, "the shape needs kv-seq=, heads= and head-dim=");
    return CLATTN_ERR_INVALID_ARG;
  }
  *out = (clattn_decode_desc){.batch = s.batch,
                              .capacity = s.n_kv,
                              .heads_q = heads_q,
                              .heads_kv = heads_kv,
                              .head_dim_k = s.head_dim_k,
                              .head_dim_v = s.head_dim_v,
                              .dtype = s.dtype,
                              .cache_layout = s.q_layout};
  return CLATTN_OK;
}

static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn_decode_desc *d = desc;
  clattn_status rc;
  if ((rc = clattn__check_cache(d, why, cap)))
    return rc;
  const clattn__opts o = CLATTN__OPTS_OF(d);
  return clattn__opts_check(&o, d->heads_q, CLATTN__OPT_ALL, "clattn_decode",
                            why, cap);
}

static void buffers(const void *desc, clattn__buf_spec *b) {
  const clattn_decode_desc *d = desc;
  const clattn_dtype dt = d->dtype;
  const size_t B = (size_t)d->batch, m = (size_t)d->capacity;
  b[Q] = (clattn__buf_spec){
      "q", CLATTN__BUF_IN, B * d->heads_q * d->head_dim_k, dt, 0, 0};
  b[K_CACHE] = (clattn__buf_spec){
      "k_cache", CLATTN__BUF_IN, B * m * d->heads_kv * d->head_dim_k, dt, 0, 1};
  b[V_CACHE] = (clattn__buf_spec){
      "v_cache", CLATTN__BUF_IN, B * m * d->heads_kv * d->head_dim_v, dt, 0, 1};
  b[LENS] = (clattn__buf_spec){"lens", CLATTN__BUF_INTS, B, CLATTN_F32, 0, 0};
  b[O] = (clattn__buf_spec){
      "o", CLATTN__BUF_OUT, B * d->heads_q * d->head_dim_v, dt, 0, 0};
}

static int full_int(const void *desc) {
  return ((const clattn_decode_desc *)desc)->capacity;
}

static void shape_class(const void *desc, char *buf, size_t cap) {
  clattn__shape_class_decode(desc, buf, cap);
}

void clattn_shape_class_decode(const clattn_decode_desc *d, char *buf,
                               size_t cap) {
  clattn_decode_desc own;
  char why[160];
  if (buf == NULL || cap == 0)
    return;
  buf[0] = '\0';
  if (d != NULL && clattn__struct_in(&own, sizeof own, d, "clattn_decode_desc",
                                     why, sizeof why) == CLATTN_OK)
    clattn__shape_class_decode(&own, buf, cap);
}

void clattn__shape_class_decode(const clattn_decode_desc *d, char *buf,
                                size_t cap) {
  if (d->heads_kv < 1) {
    buf[0] = '\0';
    return;
  }
  snprintf(buf, cap, "%s k%d v%d g%d bh%ld m%ld %s",
           clattn__dtype_name(d->dtype), d->head_dim_k, d->head_dim_v,
           d->heads_q / d->heads_kv,
           clattn__pow2_round((long)d->batch * d->heads_kv),
           clattn__pow2_round(d->capacity),
           d->cache_layout == CLATTN_BHSD ? "bhsd" : "bshd");
  const clattn__opts o = CLATTN__OPTS_OF(d);
  clattn__opts_class(&o, buf, cap);
}

static clattn_status parse_shape(const char *text, void *desc, char *why,
                                 size_t cap) {
  clattn_decode_desc *d = desc;
  clattn__opts o;
  clattn_status rc;
  if ((rc = clattn__parse_cache(text, SHAPE_KEYS, d, why, cap)) ||
      (rc = clattn__opts_shape(text, d->heads_q, &o, why, cap)))
    return rc;
  CLATTN__OPTS_PUT(d, o);
  return CLATTN_OK;
}

static void set_options(void *desc, clattn__opts o) {
  CLATTN__OPTS_PUT((clattn_decode_desc *)desc, o);
}

/* Its tunables, in the order of clattn__decode_tunables (plan.h). */
const clattn__tunable clattn__decode_tunable_table[] = {
    {"variant", 1, 3, "1 on CPUs, 2 on GPUs",
     "1 register-blocked key blocks (CPU-shaped), 2 local-memory work-group "
     "tiles (GPU-shaped), 3 a subgroup a work-group, a key a lane, the "
     "softmax statistics reduced and the probabilities broadcast across it "
     "(devices with cl_khr_subgroups or cl_intel_subgroups)",
     CLATTN__TUNABLE_KERNEL},
    {"rows", 1, 1 << 16, "by the dtype and the vector registers",
     "variant 1: query heads a P V pass after the first, or all the heads of "
     "a KV head for passes over slices of the value dims",
     0},
    {"keys", 1, 4096, "by the device", "keys a block (variant 1) or tile", 0},
    {"wg", 1, 1 << 20, "64 or the device's limit (variant 2), 1 (variant 1)",
     "work-items a work-group", CLATTN__TUNABLE_WG},
    {"splits", 1, 1 << 16, "by the cache length and the compute units",
     "KV splits a (sequence, KV head), combined by a second kernel", 0},
    {"prefetch", 1, 2, "on with 32 vector registers",
     "variant 1: 1 off, 2 software prefetch of the next key block in the P V "
     "passes after the first",
     0},
    {"sg", 1, 1024, "the device's own size",
     "variant 3: the subgroup size the kernel requires "
     "(cl_intel_required_subgroup_size), and its work-group",
     0}};
CLATTN__TUNABLES_MATCH(clattn__decode_tunables, clattn__decode_tunable_table);

static clattn_status plan(const clattn__target *t, const void *desc,
                          const clattn__params *p, void *pl, char *why,
                          size_t cap) {
  return clattn__plan_decode(t, desc, p, pl, why, cap);
}

static int fits(const clattn__target *t, const void *desc, const void *pl,
                char *why, size_t cap) {
  return clattn__decode_fits(t, desc, pl, why, cap);
}

static clattn__params resolved(const void *pl) {
  return clattn__decode_resolved(pl);
}

/* Add candidate p of d to s if it plans and fits (clattn__space_try). */
static int add(const clattn__target *t, const void *d,
               clattn__decode_tunables p, clattn__space *s) {
  const clattn__params v = clattn__tunables_put(&p, sizeof p);
  return clattn__space_try(&clattn__family_decode, t, d, &v, s);
}

/* Variant 1: keys {16,32,64,128} x work-group {1 (written 0),4} x splits x
 * prefetch {off, on} x heads per P V pass after the first (rows) {1,2,4}
 * and the whole group a pass by slices of the value dims (rows G, which is
 * rows 4 when G <= 4) without prefetch; variant 2: work-group {16..256} x
 * keys {8,16,32,64} x splits; with subgroups, variant 3: the device's own
 * subgroup size (wg 0, found at launch) and the sizes 8, 16, 32, 64 it
 * offers a kernel to require, x splits; splits 1, 2, 4, ...
 * while a split keeps >= 64 keys (at most 256).  A candidate is stored as the
 * plan resolves it, so two requests that run the same launch are one candidate.
 */
static clattn_status space(const clattn__target *t, const void *desc,
                           clattn__space *s) {
  static const int keys1[] = {16, 32, 64, 128}, wg1[] = {1, 4},
                   wg2[] = {16, 32, 64, 128, 256}, keys2[] = {8, 16, 32, 64};
  const clattn_decode_desc *d = desc;
  const int g = d->heads_kv > 0 ? d->heads_q / d->heads_kv : 1;
  const int rows1[] = {1, 2, 4, g > 4 ? g : 4};
  int splits[10], ns = 0;
  /* with a window a step reads at most W keys of a sequence */
  const int span =
      d->window > 0 && d->window < d->capacity ? d->window : d->capacity;
  clattn__space_init_family(s, &clattn__family_decode);
  int i = add(t, d, (clattn__decode_tunables){0, 0, 0, 0, 0, 0, 0}, s);
  if (i == -2)
    return CLATTN_ERR_NOMEM;
  s->def = i;
  for (int sp = 1; ns < 10 && sp <= 256 && (sp == 1 || span / sp >= 64);
       sp *= 2)
    splits[ns++] = sp;
  for (int k = 0; k < ns; k++) {
    for (int a = 0; a < 4; a++)
      for (int b = 0; b < 2; b++)
        for (int f = 1; f <= 2; f++)
          for (int r = 0; r < 4; r++)
            if (add(t, d,
                    (clattn__decode_tunables){1, rows1[r], keys1[a], wg1[b],
                                              splits[k], f, 0},
                    s) == -2)
              return CLATTN_ERR_NOMEM;
    for (int a = 0; a < 5; a++)
      for (int b = 0; b < 4; b++)
        if (add(t, d,
                (clattn__decode_tunables){2, 0, keys2[b], wg2[a], splits[k], 0,
                                          0},
                s) == -2)
          return CLATTN_ERR_NOMEM;
    for (int c = 0; t->subgroups && c < 5; c++) {
      /* the device's own size (sg 0), found at launch; required 8 .. 64 */
      const int sg = c == 0 ? 0 : 4 << c;
      if (sg && !(t->sg_sizes & (unsigned)sg))
        continue;
      if (add(t, d, (clattn__decode_tunables){3, 0, 0, 0, splits[k], 0, sg},
              s) == -2)
        return CLATTN_ERR_NOMEM;
    }
  }
  return CLATTN_OK;
}

/* -D options of a decode program; returns its local-memory bytes. */
static size_t options(const clattn_decode_desc *d,
                      const clattn__decode_plan *pl, int direct,
                      clattn__defs *df) {
  const int g = d->heads_q / d->heads_kv;
  const int dk = d->head_dim_k, dv = d->head_dim_v;
  df->n = 0;
  clattn__def(df, "DTYPE", (int)d->dtype);
  clattn__def(df, "DK", dk);
  clattn__def(df, "DV", dv);
  clattn__def(df, "G", g);
  clattn__def(df, "VWK", clattn__vec_width(dk));
  clattn__def(df, "VWV", clattn__vec_width(dv));
  clattn__def(df, "DIRECT", direct);
  clattn__def(df, "KV_SAME", pl->kv_same);
  const clattn__opts o = CLATTN__OPTS_OF(d);
  clattn__opts_defs(&o, df);
  if (pl->variant == 1) {
    clattn__def(df, "KB", pl->kb);
    clattn__def(df, "PVH", pl->pvh);
    clattn__def(df, "PF", pl->pf);
    clattn__def(df, "LANES", pl->lanes);
    return 0;
  }
  clattn__def(df, "WG", pl->wg);
  clattn__def(df, "KT", pl->kb);
  if (pl->variant == 3) {
    /* one subgroup a work-group: the required size, else a guess of the
     * device's own that clattn__subgroup_kernel corrects */
    clattn__def(df, "SG", pl->wg);
    clattn__def(df, "SG_REQD", pl->sg != 0);
    return clattn__decode_local_bytes(d, pl);
  }
  clattn__def(df, "PAIRS", (g * dv + pl->wg - 1) / pl->wg);
  return clattn__decode_local_bytes(d, pl);
}

clattn_status clattn__subgroup_kernel(clattn_ctx *ctx, const char *source,
                                      clattn__defs *df, const char *name,
                                      int required, int auto_wg, int rows,
                                      int dv, int *wg, cl_kernel *out) {
  int at_wg = -1, at_sg = -1;
  for (int i = 0; i < df->n; i++) {
    if (strcmp(df->name[i], "WG") == 0)
      at_wg = i;
    if (strcmp(df->name[i], "SG") == 0)
      at_sg = i;
  }
  if (at_sg < 0)
    return clattn__fail(ctx, CLATTN_ERR_MISUSE, "%s: no SG define", name);
  for (int pass = 0; pass < 2; pass++) {
    size_t got = 0;
    clattn_status rc = clattn__kernel_defs(ctx, source, df, name, out);
    if (rc || (rc = clattn__kernel_subgroup(ctx, *out, (size_t)*wg, &got)))
      return rc;
    if (got == (size_t)*wg)
      return CLATTN_OK;
    if (required || !auto_wg)
      return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                          "%s runs one subgroup a work-group: a work-group "
                          "of %d items gets subgroups of %zu here%s",
                          name, *wg, got,
                          required ? "" : " (leave wg out, or set it to that)");
    /* the device's own size is smaller than the guess: build for it, if
     * a lane's accumulators still fit */
    char why[192];
    if ((rc = clattn__subgroup_fits(rows, dv, (int)got, why, sizeof why)))
      return clattn__fail(ctx, rc, "%s: %s", name, why);
    *wg = (int)got;
    df->value[at_sg] = (int)got;
    if (at_wg >= 0)
      df->value[at_wg] = (int)got;
  }
  return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                      "%s: the device's subgroup size changed between two "
                      "builds of the kernel",
                      name);
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *plan_,
                             int auto_wg, const cl_mem *bufs,
                             const clattn_events *ev) {
  const clattn_decode_desc *d = desc;
  clattn__decode_plan *pl = plan_;
  clattn_status rc;
  const int b = d->batch, hq = d->heads_q, hkv = d->heads_kv;
  const int dk = d->head_dim_k, dv = d->head_dim_v;
  const int S = pl->splits, direct = S == 1;
  clattn__defs df;
  size_t lbytes = options(d, pl, direct, &df);
  const char *name = pl->variant == 1   ? "decode_split_reg"
                     : pl->variant == 2 ? "decode_split_local"
                                        : "decode_split_sg";
  cl_kernel kern = NULL, comb = NULL;
  if (pl->variant == 3)
    rc = clattn__subgroup_kernel(ctx, "decode.cl", &df, name, pl->sg != 0,
                                 auto_wg, hq / hkv, dv, &pl->wg, &kern);
  else
    rc = clattn__kernel_defs(ctx, "decode.cl", &df, name, &kern);
  if (rc)
    return rc;
  if (pl->variant == 2 && auto_wg) {
    /* an automatic work-group may exceed what the compiled kernel allows
     * (registers): rebuild once at the kernel's own limit */
    size_t kwg = 0;
    if ((rc = clattn__kernel_wg(ctx, kern, &kwg)))
      return rc;
    if (kwg < (size_t)pl->wg) {
      pl->wg = clattn__pow2_floor(kwg);
      lbytes = options(d, pl, direct, &df);
      if ((rc = clattn__kernel_defs(ctx, "decode.cl", &df, name, &kern)))
        return rc;
    }
  }
  if ((pl->variant != 1 || pl->wg) &&
      (rc = clattn__check_wg(ctx, kern, (size_t)pl->wg, lbytes, name)))
    return rc;
  cl_mem opart = NULL, lse = NULL;
  if (!direct) {
    const size_t pb = clattn__bytes(4, b, hq, S, dv);
    if (pb == 0)
      return clattn__fail(ctx, CLATTN_ERR_SHAPE, "partial sizes overflow");
    if ((rc = clattn__kernel_defs(ctx, "decode.cl", &df, "decode_combine",
                                  &comb)) ||
        (rc = clattn__scratch(ctx, 1, pb, &opart)) ||
        (rc = clattn__scratch(ctx, 2, clattn__bytes(4, b, hq, S, 1), &lse)))
      return rc;
  }
  const float scale = clattn__kernel_scale(d->scale, dk);
  const clattn__strides ks =
      clattn__layout_strides(d->cache_layout, d->capacity, hkv, dk);
  const clattn__strides vs =
      clattn__layout_strides(d->cache_layout, d->capacity, hkv, dv);
  const cl_int ci[4] = {d->capacity, hkv, S, pl->chunk};
  const cl_mem kb[7] = {
      bufs[Q], bufs[K_CACHE], bufs[V_CACHE], bufs[LENS], bufs[O], opart, lse};
  const long st[6] = {ks.b, ks.s, ks.h, vs.b, vs.s, vs.h};
  const clattn__opts opts = CLATTN__OPTS_OF(d);
  cl_uint a = 0;
  if ((rc = clattn__args(ctx, kern, &a, 7, sizeof(cl_mem), kb)) ||
      (rc = clattn__scalars(ctx, kern, &a, 4, sizeof(cl_int), ci)) ||
      (rc = clattn__scalars(ctx, kern, &a, 1, sizeof(cl_float), &scale)) ||
      (rc = clattn__scalars(ctx, kern, &a, 6, sizeof(cl_long), st)) ||
      (rc = clattn__opts_args(ctx, kern, &a, &opts, hq)))
    return rc;
  const cl_int rows = b * hq;
  if (!direct) {
    const cl_mem cb[3] = {opart, lse, bufs[O]};
    const cl_int cn[3] = {rows, S, hq};
    cl_uint ca = 0;
    if ((rc = clattn__args(ctx, comb, &ca, 3, sizeof(cl_mem), cb)) ||
        (rc = clattn__scalars(ctx, comb, &ca, 3, sizeof(cl_int), cn)) ||
        (rc = clattn__opts_args(ctx, comb, &ca, &opts, hq)))
      return rc;
  }
  const cl_uint nw = ev ? ev->num_wait : 0;
  const cl_event *wait = ev ? ev->wait : NULL;
  cl_event *out = ev ? ev->out : NULL;
  /* variant 1 defaults to one work-item per work-group: PoCL otherwise
   * packs the few work-items of a decode step into one group (one core) */
  const size_t wg1 = pl->wg ? (size_t)pl->wg : 1;
  size_t gws[2], lws[2] = {pl->variant == 1 ? wg1 : (size_t)pl->wg, 1};
  gws[0] = pl->variant == 1 ? ((size_t)S + wg1 - 1) / wg1 * wg1
                            : (size_t)S * (size_t)pl->wg; /* 2, 3 */
  gws[1] = (size_t)b * hkv;
  if ((rc = clattn__launch(ctx, kern, 2, gws, lws, nw, wait,
                           direct ? out : NULL)) ||
      direct)
    return rc;
  const size_t cg[2] = {(size_t)rows, (size_t)(dv / clattn__vec_width(dv))};
  return clattn__launch(ctx, comb, 2, cg, NULL, 0, NULL, out);
}

/* A capacity that no block divides, two sequences of different lengths
 * (the call's options kept). */
static void check_case(const void *desc, clattn__check_case *c) {
  clattn_decode_desc *s = (clattn_decode_desc *)c->desc;
  const clattn_decode_desc *d = desc;
  *s = *d;
  s->params = NULL;
  s->batch = 2;
  s->capacity = 301;
  /* no more query heads than the call's: its per-head option arrays */
  s->heads_kv = d->heads_kv >= 2 ? 2 : 1;
  s->heads_q = s->heads_kv * (d->heads_q / d->heads_kv);
  c->ints[0] = 301;
  c->ints[1] = 188;
}

static void reference(const void *desc, void *const *b) {
  const clattn_decode_desc *d = desc;
  const ref_opts o = clattn__opts_ref(CLATTN__OPTS_OF(d));
  ref_decode_opts(d->batch, d->capacity, d->heads_q, d->heads_kv, d->head_dim_k,
                  d->head_dim_v, (int)d->cache_layout,
                  d->scale > 0 ? d->scale : 1.0 / sqrt((double)d->head_dim_k),
                  b[LENS], &o, b[Q], b[K_CACHE], b[V_CACHE], b[O]);
}

static const char *const standard[] = {
    "batch=1 kv-seq=4096 heads=8 kv-heads=8 head-dim=64",
    "batch=1 kv-seq=8192 heads=8 kv-heads=1 head-dim=64",
    "batch=1 kv-seq=4096 heads=32 kv-heads=8 head-dim=128",
    "batch=8 kv-seq=2048 heads=8 kv-heads=8 head-dim=64", NULL};

/* The standard shapes and the MHA / GQA / MQA trio of one size that a
 * report compares (its GQA member is standard[2]). */
static const char *const bench[] = {
    "batch=1 kv-seq=4096 heads=8 kv-heads=8 head-dim=64",
    "batch=1 kv-seq=8192 heads=8 kv-heads=1 head-dim=64",
    "batch=1 kv-seq=4096 heads=32 kv-heads=8 head-dim=128",
    "batch=8 kv-seq=2048 heads=8 kv-heads=8 head-dim=64",
    "batch=1 kv-seq=4096 heads=32 kv-heads=32 head-dim=128",
    "batch=1 kv-seq=4096 heads=32 kv-heads=1 head-dim=128",
    NULL};

const clattn__family clattn__family_decode = {
    .name = "decode",
    .summary = "one query per sequence over a KV cache, split-KV "
               "(clattn_decode)",
    .api = "clattn_decode",
    .source = "decode.cl",
    .desc_size = sizeof(clattn_decode_desc),
    .plan_size = sizeof(clattn__decode_plan),
    .nbufs = 5,
    .tune_method = 2,
    .standard_shapes = standard,
    .bench_shapes = bench,
    .check = check,
    .buffers = buffers,
    .full_int = full_int,
    .shape_class = shape_class,
    .shape_keys = SHAPE_KEYS,
    .parse_shape = parse_shape,
    .set_options = set_options,
    CLATTN__TUNABLES(clattn__decode_tunable_table),
    .plan = plan,
    .fits = fits,
    .resolved = resolved,
    .space = space,
    .cost = clattn__decode_cost,
    .enqueue = enqueue,
    .check_case = check_case,
    .reference = reference,
};
