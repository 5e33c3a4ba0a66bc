/* prefill.c - the prefill family: fused attention over a whole query block
 * (clattn_attention).  Its plans are in plan.c, its costs in
 * prefill_cost.c, its kernels in cl/attention.cl. */
#include "base/versioned.h"
#include "family/attn_opts.h"
#include "family/common.h"
#include "family/decode.h"
#include "family/family.h"
#include "reference/ref.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum { Q, K, V, KV_LENS, O };

static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn_attn_desc *d = desc;
  clattn_status rc;
  if (d->batch < 1 || d->n_q < 1 || d->n_kv < 1) {
    snprintf(why, cap, "batch (%d), n_q (%d) and n_kv (%d) must be >= 1",
             d->batch, d->n_q, d->n_kv);
    return CLATTN_ERR_SHAPE;
  }
  if ((rc = clattn__check_heads(d->heads_q, d->heads_kv, d->head_dim_k,
                                d->head_dim_v, d->dtype, why, cap)))
    return rc;
  if (!clattn__is_layout(d->q_layout) || !clattn__is_layout(d->kv_layout)) {
    snprintf(why, cap, "unknown layout");
    return CLATTN_ERR_INVALID_ARG;
  }
  if ((rc = clattn__check_scale(d->scale, why, cap)))
    return rc;
  const clattn__opts o = CLATTN__OPTS_OF(d);
  if ((rc = clattn__opts_check(&o, d->heads_q, CLATTN__OPT_ALL,
                               "clattn_attention", why, cap)))
    return rc;
  const size_t es = clattn_dtype_size(d->dtype);
  /* an item's query row is an int32 of n_q * heads_q, its (sequence, KV head)
   * one of batch * heads_kv */
  if ((rc = clattn__check_tensor("q", es, d->batch, d->n_q, d->heads_q,
                                 d->head_dim_k, why, cap)) ||
      (rc = clattn__check_tensor("k", es, d->batch, d->n_kv, d->heads_kv,
                                 d->head_dim_k, why, cap)) ||
      (rc = clattn__check_tensor("v", es, d->batch, d->n_kv, d->heads_kv,
                                 d->head_dim_v, why, cap)) ||
      (rc = clattn__check_tensor("o", es, d->batch, d->n_q, d->heads_q,
                                 d->head_dim_v, why, cap)) ||
      (rc = clattn__check_int32("n_q x heads_q", (long long)d->n_q * d->heads_q,
                                why, cap)) ||
      (rc = clattn__check_int32("batch x heads_q",
                                (long long)d->batch * d->heads_q, why, cap)))
    return rc;
  return CLATTN_OK;
}

static void buffers(const void *desc, clattn__buf_spec *b) {
  const clattn_attn_desc *d = desc;
  const clattn_dtype dt = d->dtype;
  const size_t B = (size_t)d->batch, n = (size_t)d->n_q, m = (size_t)d->n_kv;
  b[Q] = (clattn__buf_spec){
      "q", CLATTN__BUF_IN, B * n * d->heads_q * d->head_dim_k, dt, 0, 0};
  b[K] = (clattn__buf_spec){
      "k", CLATTN__BUF_IN, B * m * d->heads_kv * d->head_dim_k, dt, 0, 0};
  b[V] = (clattn__buf_spec){
      "v", CLATTN__BUF_IN, B * m * d->heads_kv * d->head_dim_v, dt, 0, 0};
  b[KV_LENS] =
      (clattn__buf_spec){"kv_lens", CLATTN__BUF_INTS, B, CLATTN_F32, 1, 0};
  b[O] = (clattn__buf_spec){
      "o", CLATTN__BUF_OUT, B * n * d->heads_q * d->head_dim_v, dt, 0, 0};
}

static int full_int(const void *desc) {
  return ((const clattn_attn_desc *)desc)->n_kv;
}

static void shape_class(const void *desc, char *buf, size_t cap) {
  const clattn_attn_desc *d = desc;
  if (d->heads_kv < 1) {
    buf[0] = '\0';
    return;
  }
  snprintf(buf, cap, "%s k%d v%d g%d bh%ld n%ld m%ld c%d",
           clattn__dtype_name(d->dtype), d->head_dim_k, d->head_dim_v,
           d->heads_q / d->heads_kv,
           clattn__pow2_round((long)d->batch * d->heads_kv),
           clattn__pow2_round(d->n_q), clattn__pow2_round(d->n_kv),
           d->causal ? 1 : 0);
  const clattn__opts o = CLATTN__OPTS_OF(d);
  clattn__opts_class(&o, buf, cap);
}

void clattn_shape_class_attention(const clattn_attn_desc *d, char *buf,
                                  size_t cap) {
  clattn_attn_desc own;
  char why[160];
  if (buf == NULL || cap == 0)
    return;
  buf[0] = '\0';
  if (d != NULL && clattn__struct_in(&own, sizeof own, d, "clattn_attn_desc",
                                     why, sizeof why) == CLATTN_OK)
    shape_class(&own, buf, cap);
}

#define SHAPE_KEYS                                                             \
  "batch seq kv-seq heads kv-heads head-dim head-dim-v dtype causal layout "   \
  "kv-layout " CLATTN__OPTS_SHAPE_KEYS

static clattn_status parse_shape(const char *text, void *desc, char *why,
                                 size_t cap) {
  clattn__attn_shape s = {1, 0,          0,           0,          0,
                          0, CLATTN_F32, CLATTN_BSHD, CLATTN_BSHD};
  int heads_q = 0, heads_kv;
  clattn__opts o;
  clattn_status rc;
  if ((rc = clattn__shape_heads(text, SHAPE_KEYS, &s, &heads_q, &heads_kv, why,
                                cap)) ||
      (rc = clattn__opts_shape(text, heads_q, &o, why, cap)))
    return rc;
  if (s.n_q < 1 || heads_q < 1 || s.head_dim_k < 1) {
    snprintf(why, cap, "the shape needs seq=, heads= and head-dim=");
    return CLATTN_ERR_INVALID_ARG;
  }
  *(clattn_attn_desc *)desc = (clattn_attn_desc){.batch = s.batch,
                                                 .n_q = s.n_q,
                                                 .n_kv = s.n_kv,
                                                 .heads_q = heads_q,
                                                 .heads_kv = heads_kv,
                                                 .head_dim_k = s.head_dim_k,
                                                 .head_dim_v = s.head_dim_v,
                                                 .dtype = s.dtype,
                                                 .q_layout = s.q_layout,
                                                 .kv_layout = s.kv_layout,
                                                 .causal = s.causal};
  CLATTN__OPTS_PUT((clattn_attn_desc *)desc, o);
  return CLATTN_OK;
}

static void set_options(void *desc, clattn__opts o) {
  CLATTN__OPTS_PUT((clattn_attn_desc *)desc, o);
}

/* Its tunables, in the order of clattn__prefill_tunables (plan.h). */
const clattn__tunable clattn__prefill_tunable_table[] = {
    {"variant", 1, 3, "1 on CPUs, 2 on GPUs",
     "1 register-blocked tiles (CPU-shaped), 2 local-memory work-group tiles "
     "(GPU-shaped), 3 a subgroup a work-group, a key a lane, the softmax "
     "statistics reduced and the probabilities broadcast across it (devices "
     "with cl_khr_subgroups or cl_intel_subgroups)",
     CLATTN__TUNABLE_KERNEL},
    {"rows", 1, 32,
     "by the head dims and the vector registers (variant 1), 8 (variant 3)",
     "query rows a work-item (variant 1) or a work-group (variant 3)", 0},
    {"keys", 1, 256, "by the device",
     "keys a tile (variant 1: a multiple of 16)", 0},
    {"wg", 1, 1 << 20, "64 or the device's limit (variant 2), 1 (variant 1)",
     "work-items a work-group", CLATTN__TUNABLE_WG},
    {"sg", 1, 1024, "the device's own size",
     "variant 3: the subgroup size the kernel requires "
     "(cl_intel_required_subgroup_size), and its work-group",
     0}};
CLATTN__TUNABLES_MATCH(clattn__prefill_tunables, clattn__prefill_tunable_table);

static clattn_status plan(const clattn__target *t, const void *desc,
                          const clattn__params *p, void *pl, char *why,
                          size_t cap) {
  return clattn__plan_prefill(t, desc, p, pl, why, cap);
}

static int fits(const clattn__target *t, const void *desc, const void *pl,
                char *why, size_t cap) {
  return clattn__prefill_fits(t, desc, pl, why, cap);
}

static clattn__params resolved(const void *pl) {
  return clattn__prefill_resolved(pl);
}

/* Add candidate p of d to s if it plans and fits (clattn__space_try). */
static int add(const clattn__target *t, const void *d,
               clattn__prefill_tunables p, clattn__space *s) {
  const clattn__params v = clattn__tunables_put(&p, sizeof p);
  return clattn__space_try(&clattn__family_prefill, t, d, &v, s);
}

/* Variant 1 (register-blocked): rows {1,2,4,8} x keys {16,32,64,128} x
 * work-group {1 (written 0),2,4}; variant 2 (local-memory tiles):
 * work-group {16..256} x keys {8,16,32,64}; with subgroups, variant 3:
 * rows {4, 8, 16} x (the device's own subgroup size, wg 0, found at
 * launch, and the sizes 8, 16, 32, 64 it offers a kernel to require). */
static clattn_status space(const clattn__target *t, const void *desc,
                           clattn__space *s) {
  static const int rows1[] = {1, 2, 4, 8}, keys1[] = {16, 32, 64, 128},
                   wg1[] = {1, 2, 4}, wg2[] = {16, 32, 64, 128, 256},
                   keys2[] = {8, 16, 32, 64};
  const clattn_attn_desc *d = desc;
  clattn__space_init_family(s, &clattn__family_prefill);
  int i = add(t, d, (clattn__prefill_tunables){0, 0, 0, 0, 0}, s);
  if (i == -2)
    return CLATTN_ERR_NOMEM;
  s->def = i;
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++)
      for (int c = 0; c < 3; c++)
        if (add(t, d,
                (clattn__prefill_tunables){1, rows1[a], keys1[b], wg1[c], 0},
                s) == -2)
          return CLATTN_ERR_NOMEM;
  for (int a = 0; a < 5; a++)
    for (int b = 0; b < 4; b++)
      if (add(t, d, (clattn__prefill_tunables){2, 0, keys2[b], wg2[a], 0}, s) ==
          -2)
        return CLATTN_ERR_NOMEM;
  for (int r = 4; t->subgroups && r <= 16; r *= 2)
    for (int c = 0; c < 5; c++) {
      /* the device's own size (sg 0), found at launch; required 8 .. 64 */
      const int sg = c == 0 ? 0 : 4 << c;
      if (sg && !(t->sg_sizes & (unsigned)sg))
        continue;
      if (add(t, d, (clattn__prefill_tunables){3, r, 0, 0, sg}, s) == -2)
        return CLATTN_ERR_NOMEM;
    }
  return CLATTN_OK;
}

/* -D options of a prefill program. */
static void options(const clattn_attn_desc *d, const clattn__prefill_plan *pl,
                    clattn__defs *df) {
  df->n = 0;
  clattn__def(df, "DTYPE", (int)d->dtype);
  clattn__def(df, "DK", d->head_dim_k);
  clattn__def(df, "DV", d->head_dim_v);
  clattn__def(df, "VWK", clattn__vec_width(d->head_dim_k));
  clattn__def(df, "VWV", clattn__vec_width(d->head_dim_v));
  clattn__def(df, "CAUSAL", d->causal ? 1 : 0);
  if (pl->variant == 1) {
    clattn__def(df, "RB", pl->rb);
    clattn__def(df, "KB", pl->kb);
  } else if (pl->variant == 3) {
    /* one subgroup a work-group: the required size, else a guess of the
     * device's own that clattn__subgroup_kernel corrects */
    clattn__def(df, "RW", pl->rb);
    clattn__def(df, "SG", pl->wg);
    clattn__def(df, "SG_REQD", pl->sg != 0);
  } else {
    clattn__def(df, "WG", pl->wg);
    clattn__def(df, "KT", pl->kt);
  }
  if (pl->kv_same)
    clattn__def(df, "KV_SAME", 1);
  const clattn__opts o = CLATTN__OPTS_OF(d);
  clattn__opts_defs(&o, df);
}

/* Variant 1: kv_stage writes K^T and V as float32 rows of ld keys, then
 * attn_fwd_reg runs rb query rows a work-item. */
static clattn_status enqueue_reg(clattn_ctx *ctx, const clattn_attn_desc *d,
                                 const clattn__prefill_plan *pl,
                                 const cl_mem *bufs, const clattn__defs *df,
                                 const clattn_events *ev) {
  clattn_status rc;
  const int b = d->batch, n = d->n_q, m = d->n_kv, hkv = d->heads_kv;
  const int g = d->heads_q / hkv, dk = d->head_dim_k, ld = pl->ld;
  const clattn__strides qs =
      clattn__layout_strides(d->q_layout, n, d->heads_q, dk);
  const clattn__strides ks = clattn__layout_strides(d->kv_layout, m, hkv, dk);
  const clattn__strides vs =
      clattn__layout_strides(d->kv_layout, m, hkv, d->head_dim_v);
  const clattn__strides os =
      clattn__layout_strides(d->q_layout, n, d->heads_q, d->head_dim_v);
  const float scale = clattn__kernel_scale(d->scale, dk);
  const clattn__opts opts = CLATTN__OPTS_OF(d);
  cl_kernel st_kern = NULL, kern = NULL;
  cl_mem kt = NULL, vc = NULL;
  const size_t ktb = clattn__bytes(4, b, hkv, dk, ld);
  const size_t vcb = clattn__bytes(4, b, hkv, d->head_dim_v, ld);
  if (ktb == 0 || vcb == 0 || ld < m)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE, "tensor sizes overflow");
  if ((rc = clattn__kernel_defs(ctx, "attention.cl", df, "kv_stage",
                                &st_kern)) ||
      (rc =
           clattn__kernel_defs(ctx, "attention.cl", df, "attn_fwd_reg", &kern)))
    return rc;
  if (pl->wg &&
      (rc = clattn__check_wg(ctx, kern, (size_t)pl->wg, 0, "attn_fwd_reg")))
    return rc;
  if ((rc = clattn__scratch(ctx, 0, ktb, &kt)) ||
      (rc = clattn__scratch(ctx, 3, vcb, &vc)))
    return rc;
  const cl_int si[3] = {m, ld, hkv};
  const long sst[6] = {ks.b, ks.s, ks.h, vs.b, vs.s, vs.h};
  const cl_mem sb[4] = {bufs[K], bufs[V], kt, vc};
  cl_uint a = 0;
  const cl_int swin[3] = {n, bufs[KV_LENS] != NULL, opts.window};
  if ((rc = clattn__args(ctx, st_kern, &a, 4, sizeof(cl_mem), sb)) ||
      (rc = clattn__scalars(ctx, st_kern, &a, 3, sizeof(cl_int), si)) ||
      (rc = clattn__scalars(ctx, st_kern, &a, 6, sizeof(cl_long), sst)) ||
      (rc =
           clattn__args(ctx, st_kern, &a, 1, sizeof(cl_mem), &bufs[KV_LENS])) ||
      (rc = clattn__scalars(ctx, st_kern, &a, 3, sizeof(cl_int), swin)))
    return rc;
  const cl_int ri[6] = {n, m, ld, hkv, g, bufs[KV_LENS] != NULL};
  const cl_mem rb[5] = {bufs[Q], kt, vc, bufs[KV_LENS], bufs[O]};
  const long rst[6] = {qs.b, qs.s, qs.h, os.b, os.s, os.h};
  a = 0;
  if ((rc = clattn__args(ctx, kern, &a, 5, sizeof(cl_mem), rb)) ||
      (rc = clattn__scalars(ctx, kern, &a, 6, sizeof(cl_int), ri)) ||
      (rc = clattn__scalars(ctx, kern, &a, 1, sizeof(cl_float), &scale)) ||
      (rc = clattn__scalars(ctx, kern, &a, 6, sizeof(cl_long), rst)) ||
      (rc = clattn__opts_args(ctx, kern, &a, &opts, d->heads_q)))
    return rc;
  /* default: one work-item per work-group, which PoCL schedules best */
  const size_t wg1 = pl->wg ? (size_t)pl->wg : 1;
  size_t blocks = (size_t)(n * g + pl->rb - 1) / (size_t)pl->rb;
  blocks = (blocks + wg1 - 1) / wg1 * wg1;
  const size_t lws[2] = {wg1, 1}, one[2] = {1, 1};
  const size_t gws[2] = {blocks, (size_t)b * hkv};
  const size_t sg[2] = {(size_t)ld / 16, (size_t)b * hkv};
  if ((rc = clattn__launch(ctx, st_kern, 2, sg, one, ev ? ev->num_wait : 0,
                           ev ? ev->wait : NULL, NULL)))
    return rc;
  return clattn__launch(ctx, kern, 2, gws, lws, 0, NULL, ev ? ev->out : NULL);
}

/* Variant 2: attn_fwd_local, work-groups sharing K/V tiles in local
 * memory; variant 3: attn_fwd_sg, the same arguments, a subgroup a
 * work-group. */
static clattn_status enqueue_local(clattn_ctx *ctx, const clattn_attn_desc *d,
                                   clattn__prefill_plan *pl, int auto_wg,
                                   const cl_mem *bufs, clattn__defs *df,
                                   const clattn_events *ev) {
  clattn_status rc;
  const int b = d->batch, n = d->n_q, m = d->n_kv, hkv = d->heads_kv;
  const int g = d->heads_q / hkv, dk = d->head_dim_k;
  cl_kernel kern = NULL;
  const char *name = pl->variant == 3 ? "attn_fwd_sg" : "attn_fwd_local";
  if (pl->variant == 3) {
    /* variant 3: a subgroup a work-group over rb rows, its size from the
     * device */
    if ((rc = clattn__subgroup_kernel(ctx, "attention.cl", df, name,
                                      pl->sg != 0, auto_wg, pl->rb,
                                      d->head_dim_v, &pl->wg, &kern)))
      return rc;
  } else if ((rc = clattn__kernel_defs(ctx, "attention.cl", df, name, &kern)))
    return rc;
  size_t kwg = 0;
  if (pl->variant == 2 && auto_wg && (rc = clattn__kernel_wg(ctx, kern, &kwg)))
    return rc;
  if (pl->variant == 2 && auto_wg && kwg < (size_t)pl->wg) {
    /* an automatic work-group may exceed what the compiled kernel allows
     * (registers): rebuild once at the kernel's own limit */
    pl->wg = pl->rb = clattn__pow2_floor(kwg);
    options(d, pl, df);
    if ((rc = clattn__kernel_defs(ctx, "attention.cl", df, "attn_fwd_local",
                                  &kern)))
      return rc;
  }
  if ((rc = clattn__check_wg(ctx, kern, (size_t)pl->wg,
                             clattn__prefill_local_bytes(d, pl), name)))
    return rc;
  const clattn__strides qs =
      clattn__layout_strides(d->q_layout, n, d->heads_q, dk);
  const clattn__strides ks = clattn__layout_strides(d->kv_layout, m, hkv, dk);
  const clattn__strides vs =
      clattn__layout_strides(d->kv_layout, m, hkv, d->head_dim_v);
  const clattn__strides os =
      clattn__layout_strides(d->q_layout, n, d->heads_q, d->head_dim_v);
  const float scale = clattn__kernel_scale(d->scale, dk);
  const clattn__opts opts = CLATTN__OPTS_OF(d);
  const cl_int ci[5] = {n, m, hkv, g, bufs[KV_LENS] != NULL};
  const cl_mem kb[5] = {bufs[Q], bufs[K], bufs[V], bufs[KV_LENS], bufs[O]};
  const long st[12] = {qs.b, qs.s, qs.h, ks.b, ks.s, ks.h,
                       vs.b, vs.s, vs.h, os.b, os.s, os.h};
  cl_uint a = 0;
  if ((rc = clattn__args(ctx, kern, &a, 5, sizeof(cl_mem), kb)) ||
      (rc = clattn__scalars(ctx, kern, &a, 5, sizeof(cl_int), ci)) ||
      (rc = clattn__scalars(ctx, kern, &a, 1, sizeof(cl_float), &scale)) ||
      (rc = clattn__scalars(ctx, kern, &a, 12, sizeof(cl_long), st)) ||
      (rc = clattn__opts_args(ctx, kern, &a, &opts, d->heads_q)))
    return rc;
  /* rows a work-group: one an item (variant 2), rb (variant 3) */
  const size_t per = (size_t)(pl->variant == 3 ? pl->rb : pl->wg);
  const size_t groups = ((size_t)n * g + per - 1) / per;
  const size_t gws[2] = {groups * (size_t)pl->wg, (size_t)b * hkv};
  const size_t lws[2] = {(size_t)pl->wg, 1};
  return clattn__launch(ctx, kern, 2, gws, lws, ev ? ev->num_wait : 0,
                        ev ? ev->wait : NULL, ev ? ev->out : NULL);
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *plan_,
                             int auto_wg, const cl_mem *bufs,
                             const clattn_events *ev) {
  const clattn_attn_desc *d = desc;
  clattn__prefill_plan *pl = plan_;
  clattn__defs df;
  options(d, pl, &df);
  if (pl->variant == 1)
    return enqueue_reg(ctx, d, pl, bufs, &df, ev);
  return enqueue_local(ctx, d, pl, auto_wg, bufs, &df, ev);
}

/* Odd sizes that no tile divides, two sequences of different lengths. */
static void check_case(const void *desc, clattn__check_case *c) {
  clattn_attn_desc *s = (clattn_attn_desc *)c->desc;
  const clattn_attn_desc *d = desc;
  *s = *d;
  s->params = NULL;
  s->batch = 2;
  s->n_q = 19;
  s->n_kv = 45;
  /* no more query heads than the call's: its per-head option arrays */
  s->heads_kv = d->heads_kv >= 2 ? 2 : 1;
  s->heads_q = s->heads_kv * (d->heads_q / d->heads_kv);
  c->ints[0] = 45;
  c->ints[1] = 29;
}

static void reference(const void *desc, void *const *b) {
  const clattn_attn_desc *d = desc;
  const ref_attn a = {d->batch,
                      d->n_q,
                      d->n_kv,
                      d->heads_q,
                      d->heads_kv,
                      d->head_dim_k,
                      d->head_dim_v,
                      (int)d->q_layout,
                      (int)d->kv_layout,
                      d->scale > 0 ? d->scale
                                   : 1.0 / sqrt((double)d->head_dim_k),
                      d->causal,
                      b[KV_LENS],
                      clattn__opts_ref(CLATTN__OPTS_OF(d))};
  ref_attention(&a, b[Q], b[K], b[V], b[O]);
}

clattn_status clattn__prefill_cost(const void *desc, const void *plan,
                                   const int *ints, const clattn_profile *prof,
                                   clattn_prediction *out, double *dram_reads);

/* The unfused baseline of `clattn bench` (prefill_unfused.c). */
extern const clattn__baseline clattn__prefill_unfused;
static const clattn__baseline *const baselines[] = {&clattn__prefill_unfused,
                                                    NULL};

static const char *const standard[] = {
    "batch=1 seq=512 heads=8 kv-heads=8 head-dim=64 causal=1",
    "batch=1 seq=1024 heads=32 kv-heads=8 head-dim=128 causal=1", NULL};

const clattn__family clattn__family_prefill = {
    .name = "prefill",
    .summary = "fused attention over a block of queries (clattn_attention)",
    .api = "clattn_attention",
    .source = "attention.cl",
    .desc_size = sizeof(clattn_attn_desc),
    .plan_size = sizeof(clattn__prefill_plan),
    .nbufs = 5,
    .tune_method = 1,
    .standard_shapes = standard,
    .baselines = baselines,
    .check = check,
    .buffers = buffers,
    .full_int = full_int,
    .shape_class = shape_class,
    .shape_keys = SHAPE_KEYS,
    .parse_shape = parse_shape,
    .set_options = set_options,
    CLATTN__TUNABLES(clattn__prefill_tunable_table),
    .plan = plan,
    .fits = fits,
    .resolved = resolved,
    .space = space,
    .cost = clattn__prefill_cost,
    .enqueue = enqueue,
    .check_case = check_case,
    .reference = reference,
};
