/* varlen.c - the varlen family: ragged (packed) prefill over sequences of
 * different lengths in FlashAttention-2's varlen layout
 * (clattn_varlen_attention), work spread over the query tiles of all
 * sequences.  Its kernel is cl/varlen.cl, its costs varlen_cost.c, its
 * bench baseline (the padded batch) varlen_padded.c. */
#include "family/varlen.h"
#include "base/base.h"
#include "family/attn_opts.h"
#include "family/common.h"
#include "family/family.h"
#include "reference/ref_paged.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { Q, K, V, CU_Q, CU_K, O };

static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn_varlen_desc *d = desc;
  clattn_status rc;
  if (d->batch < 1 || d->batch >= (1 << 24) || d->total_q < 1 ||
      d->total_k < 1) {
    snprintf(why, cap,
             "batch (%d) must be 1 .. 2^24 - 1, total_q (%d) and total_k (%d) "
             ">= 1",
             d->batch, d->total_q, d->total_k);
    return CLATTN_ERR_SHAPE;
  }
  if ((rc = clattn__check_heads(d->heads_q, d->heads_kv, d->head_dim_k,
                                d->head_dim_v, d->dtype, why, cap)) ||
      (rc = clattn__check_scale(d->scale, why, cap)))
    return rc;
  const clattn__opts o = CLATTN__OPTS_OF(d);
  if ((rc = clattn__opts_check(&o, d->heads_q, CLATTN__OPT_ALL,
                               "clattn_varlen_attention", why, cap)))
    return rc;
  const size_t es = clattn_dtype_size(d->dtype);
  /* the query tiles of all sequences are counted in an int32 */
  if ((rc = clattn__check_tensor("q", es, d->total_q, d->heads_q, d->head_dim_k,
                                 1, why, cap)) ||
      (rc = clattn__check_tensor("k", es, d->total_k, d->heads_kv,
                                 d->head_dim_k, 1, why, cap)) ||
      (rc = clattn__check_tensor("v", es, d->total_k, d->heads_kv,
                                 d->head_dim_v, 1, why, cap)) ||
      (rc = clattn__check_tensor("o", es, d->total_q, d->heads_q, d->head_dim_v,
                                 1, why, cap)) ||
      (rc = clattn__check_int32("total_q + batch",
                                (long long)d->total_q + d->batch, why, cap)))
    return rc;
  return CLATTN_OK;
}

static void buffers(const void *desc, clattn__buf_spec *b) {
  const clattn_varlen_desc *d = desc;
  const clattn_dtype dt = d->dtype;
  const size_t tq = (size_t)d->total_q, tk = (size_t)d->total_k;
  const size_t cu = (size_t)d->batch + 1;
  b[Q] = (clattn__buf_spec){
      "q", CLATTN__BUF_IN, tq * d->heads_q * d->head_dim_k, dt, 0, 0};
  b[K] = (clattn__buf_spec){
      "k", CLATTN__BUF_IN, tk * d->heads_kv * d->head_dim_k, dt, 0, 0};
  b[V] = (clattn__buf_spec){
      "v", CLATTN__BUF_IN, tk * d->heads_kv * d->head_dim_v, dt, 0, 0};
  b[CU_Q] = (clattn__buf_spec){
      "cu_seqlens_q", CLATTN__BUF_INTS, cu, CLATTN_F32, 0, 0};
  b[CU_K] = (clattn__buf_spec){
      "cu_seqlens_k", CLATTN__BUF_INTS, cu, CLATTN_F32, 0, 0};
  b[O] = (clattn__buf_spec){
      "o", CLATTN__BUF_OUT, tq * d->heads_q * d->head_dim_v, dt, 0, 0};
}

/* The INTS buffers are offsets that fill_ints makes; no single value. */
static int full_int(const void *desc) {
  (void)desc;
  return 0;
}

void clattn__varlen_pattern(int batch, int total, int *lens) {
  static const int weight[8] = {1, 3, 2, 8, 1, 5, 4, 8};
  double sum = 0;
  for (int b = 0; b < batch; b++)
    sum += weight[b % 8];
  long used = 0;
  for (int b = 0; b < batch; b++) {
    lens[b] = b + 1 < batch ? (int)((double)total * weight[b % 8] / sum)
                            : (int)(total - used);
    used += lens[b];
  }
}

/* Offsets from per-sequence lengths (check_case's ints: len_q, len_k of
 * each sequence in turn; NULL: the mixed pattern), the last offset made the
 * total whatever the lengths add up to. */
static void fill_ints(const void *desc, int buf, const int *per_seq, int full,
                      int *out) {
  const clattn_varlen_desc *d = desc;
  const int total = buf == CU_Q ? d->total_q : d->total_k;
  (void)full;
  out[0] = 0;
  if (per_seq == NULL) {
    clattn__varlen_pattern(d->batch, total, out + 1);
    for (int b = 0; b < d->batch; b++)
      out[b + 1] += out[b];
  } else {
    for (int b = 0; b < d->batch; b++) {
      const long next = (long)out[b] + per_seq[2 * b + (buf == CU_K)];
      out[b + 1] = (int)(next < total ? next : total);
    }
  }
  out[d->batch] = total;
}

/* One offsets array: 0 first, never decreasing, the total last. */
static clattn_status check_offsets(const int *cu, int batch, int total,
                                   const char *name, const char *total_name,
                                   char *why, size_t cap) {
  if (cu[0] != 0) {
    snprintf(why, cap, "%s[0] = %d: the offsets must start at 0", name, cu[0]);
    return CLATTN_ERR_SHAPE;
  }
  for (int b = 1; b <= batch; b++)
    if (cu[b] < cu[b - 1]) {
      snprintf(why, cap,
               "%s[%d] = %d < %s[%d] = %d: the offsets must not "
               "decrease",
               name, b, cu[b], name, b - 1, cu[b - 1]);
      return CLATTN_ERR_SHAPE;
    }
  if (cu[batch] != total) {
    snprintf(why, cap,
             "%s[%d] = %d: the last offset (batch %d) must be %s (%d)", name,
             batch, cu[batch], batch, total_name, total);
    return CLATTN_ERR_SHAPE;
  }
  return CLATTN_OK;
}

static clattn_status check_ints(const void *desc, const int *const *ints,
                                char *why, size_t cap) {
  const clattn_varlen_desc *d = desc;
  clattn_status rc = check_offsets(ints[CU_Q], d->batch, d->total_q,
                                   "cu_seqlens_q", "total_q", why, cap);
  return rc ? rc
            : check_offsets(ints[CU_K], d->batch, d->total_k, "cu_seqlens_k",
                            "total_k", why, cap);
}

static int ints_unchecked(const void *desc) {
  return ((const clattn_varlen_desc *)desc)->unchecked != 0;
}

static void shape_class(const void *desc, char *buf, size_t cap) {
  const clattn_varlen_desc *d = desc;
  if (d->heads_kv < 1) {
    buf[0] = '\0';
    return;
  }
  snprintf(buf, cap, "%s k%d v%d g%d h%ld b%ld n%ld m%ld c%d",
           clattn__dtype_name(d->dtype), d->head_dim_k, d->head_dim_v,
           d->heads_q / d->heads_kv, clattn__pow2_round(d->heads_kv),
           clattn__pow2_round(d->batch), clattn__pow2_round(d->total_q),
           clattn__pow2_round(d->total_k), d->causal ? 1 : 0);
  const clattn__opts o = CLATTN__OPTS_OF(d);
  clattn__opts_class(&o, buf, cap);
}

/* seq and kv-seq are the total tokens, total_q and total_k. */
#define SHAPE_KEYS                                                             \
  "batch seq kv-seq heads kv-heads head-dim head-dim-v dtype causal "          \
  "" CLATTN__OPTS_SHAPE_KEYS

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
  clattn_varlen_desc *d = desc;
  *d = (clattn_varlen_desc){.size = sizeof *d,
                            .batch = s.batch,
                            .total_q = s.n_q,
                            .total_k = s.n_kv,
                            .heads_q = heads_q,
                            .heads_kv = heads_kv,
                            .head_dim_k = s.head_dim_k,
                            .head_dim_v = s.head_dim_v,
                            .dtype = s.dtype,
                            .causal = s.causal};
  CLATTN__OPTS_PUT(d, o);
  return CLATTN_OK;
}

static void set_options(void *desc, clattn__opts o) {
  CLATTN__OPTS_PUT((clattn_varlen_desc *)desc, o);
}

typedef struct varlen_tunables {
  int variant, rows, keys, wg;
} varlen_tunables;

static const clattn__tunable tunable_table[] = {
    {"variant", 1, 2, "1 on CPUs, 2 on GPUs",
     "1 K/V staged as float32 (K transposed: keys along the vectors), 2 "
     "K/V read in place",
     CLATTN__TUNABLE_KERNEL},
    {"rows", 1, 256,
     "8 (4 below 32 vector registers) / heads per KV head on CPUs, wg / "
     "heads on GPUs",
     "query positions a tile (a work-group)", 0},
    {"keys", 16, 256, "32 on CPUs, 16 on GPUs",
     "keys a tile (a multiple of 16)", 0},
    {"wg", 1, 1024, "1 on CPUs, 64 or the device's limit on GPUs",
     "work-items a work-group (they share the tile's rows)",
     CLATTN__TUNABLE_WG}};
CLATTN__TUNABLES_MATCH(varlen_tunables, tunable_table);

static clattn_status plan(const clattn__target *t, const void *desc,
                          const clattn__params *values, void *plan_, char *why,
                          size_t cap) {
  const clattn_varlen_desc *d = desc;
  clattn__varlen_plan *pl = plan_;
  varlen_tunables p;
  clattn__tunables_get(&p, sizeof p, values);
  const int g = d->heads_q / d->heads_kv;
  pl->variant = p.variant ? p.variant : t->cpu_vectors ? 1 : 2;
  pl->wg = p.wg ? p.wg
           : t->cpu_vectors
               ? 1
               : clattn__pow2_floor(t->max_wg < 64 ? t->max_wg : 64);
  if (pl->wg < 1)
    pl->wg = 1;
  /* CPUs: as many rows an item as keep QK^T's accumulators (rows x keys /
   * 16 float16 vectors) in the vector registers; GPUs: a row an item */
  const int rows_item = t->cpu_vectors && t->vregs >= 32 ? 8 : 4;
  pl->bq = p.rows           ? p.rows
           : t->cpu_vectors ? (g < rows_item ? rows_item / g : 1)
                            : (pl->wg >= g ? pl->wg / g : 1);
  pl->kb = p.keys ? p.keys : t->cpu_vectors ? 32 : 16;
  if (pl->kb % 16) {
    snprintf(why, cap, "params: keys (%d) must be a multiple of 16", pl->kb);
    return CLATTN_ERR_INVALID_ARG;
  }
  pl->rpi = (pl->bq * g + pl->wg - 1) / pl->wg;
  if (pl->rpi > CLATTN__VARLEN_MAX_RPI) {
    snprintf(why, cap,
             "params: rows (%d) x heads per KV head (%d) / wg (%d) gives %d "
             "rows a work-item, at most %d",
             pl->bq, g, pl->wg, pl->rpi, CLATTN__VARLEN_MAX_RPI);
    return CLATTN_ERR_INVALID_ARG;
  }
  pl->ld = 0;
  if (pl->variant != 1)
    return CLATTN_OK;
  /* variant 1: a tile may start at any sequence's last key */
  if (d->total_k > 0x7fffffff - 512) {
    snprintf(why, cap, "total_k (%d) too large", d->total_k);
    return CLATTN_ERR_SHAPE;
  }
  return clattn__plan_staged(d->total_k + pl->kb, pl->rpi, pl->kb, &pl->ld, why,
                             cap);
}

static int fits(const clattn__target *t, const void *desc, const void *plan_,
                char *why, size_t cap) {
  (void)desc;
  return clattn__plan_fits(t, ((const clattn__varlen_plan *)plan_)->wg, 0, why,
                           cap);
}

static clattn__params resolved(const void *plan_) {
  const clattn__varlen_plan *pl = plan_;
  const varlen_tunables v = {pl->variant, pl->bq, pl->kb, pl->wg};
  return clattn__tunables_put(&v, sizeof v);
}

static int add(const clattn__target *t, const void *d, varlen_tunables p,
               clattn__space *s) {
  const clattn__params v = clattn__tunables_put(&p, sizeof p);
  return clattn__space_try(&clattn__family_varlen, t, d, &v, s);
}

/* Each variant: work-group {1, 4, 16, 64} x rows {1 .. 64} x keys
 * {16, 32, 64}, those that hold at most CLATTN__VARLEN_MAX_RPI rows an
 * item. */
static clattn_status space(const clattn__target *t, const void *desc,
                           clattn__space *s) {
  static const int wgs[] = {1, 4, 16, 64}, rows[] = {1, 2, 4, 8, 16, 64},
                   keys[] = {16, 32, 64};
  clattn__space_init_family(s, &clattn__family_varlen);
  int i = add(t, desc, (varlen_tunables){0, 0, 0, 0}, s);
  if (i == -2)
    return CLATTN_ERR_NOMEM;
  s->def = i;
  for (int v = 1; v <= 2; v++)
    for (int a = 0; a < 4; a++)
      for (int b = 0; b < 6; b++)
        for (int c = 0; c < 3; c++)
          if (add(t, desc, (varlen_tunables){v, rows[b], keys[c], wgs[a]}, s) ==
              -2)
            return CLATTN_ERR_NOMEM;
  return CLATTN_OK;
}

long clattn__varlen_groups(const clattn_varlen_desc *d, int bq) {
  return (long)d->total_q / bq + d->batch;
}

static void options(const clattn_varlen_desc *d, const clattn__varlen_plan *pl,
                    clattn__defs *df) {
  df->n = 0;
  clattn__def(df, "DTYPE", (int)d->dtype);
  clattn__def(df, "DK", d->head_dim_k);
  clattn__def(df, "DV", d->head_dim_v);
  clattn__def(df, "VWK", clattn__vec_width(d->head_dim_k));
  clattn__def(df, "VWV", clattn__vec_width(d->head_dim_v));
  clattn__def(df, "CAUSAL", d->causal ? 1 : 0);
  clattn__def(df, "G", d->heads_q / d->heads_kv);
  clattn__def(df, "BQ", pl->bq);
  clattn__def(df, "KB", pl->kb);
  clattn__def(df, "WG", pl->wg);
  const clattn__opts o = CLATTN__OPTS_OF(d);
  clattn__opts_defs(&o, df);
}

/* Variant 1's staging of K^T and V into two scratch buffers (slots 0 and
 * 3, as the prefill's variant 1). */
static clattn_status stage(clattn_ctx *ctx, const clattn_varlen_desc *d,
                           const clattn__varlen_plan *pl, const cl_mem *bufs,
                           const clattn__defs *df, cl_mem *kt, cl_mem *vc,
                           const clattn_events *ev) {
  clattn_status rc;
  cl_kernel st = NULL;
  const size_t ktb = clattn__bytes(4, d->heads_kv, d->head_dim_k, pl->ld, 1);
  const size_t vcb = clattn__bytes(4, d->heads_kv, d->head_dim_v, pl->ld, 1);
  if (ktb == 0 || vcb == 0)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE, "tensor sizes overflow");
  if ((rc = clattn__kernel_defs(ctx, "varlen.cl", df, "varlen_stage", &st)) ||
      (rc = clattn__scratch(ctx, 0, ktb, kt)) ||
      (rc = clattn__scratch(ctx, 3, vcb, vc)))
    return rc;
  const cl_mem sb[4] = {bufs[K], bufs[V], *kt, *vc};
  const cl_int si[3] = {d->total_k, d->heads_kv, pl->ld};
  cl_uint a = 0;
  if ((rc = clattn__args(ctx, st, &a, 4, sizeof(cl_mem), sb)) ||
      (rc = clattn__scalars(ctx, st, &a, 3, sizeof(cl_int), si)))
    return rc;
  const size_t gws[2] = {(size_t)pl->ld / 16, (size_t)d->heads_kv};
  const size_t one[2] = {1, 1};
  return clattn__launch(ctx, st, 2, gws, one, ev ? ev->num_wait : 0,
                        ev ? ev->wait : NULL, NULL);
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *plan_,
                             int auto_wg, const cl_mem *bufs,
                             const clattn_events *ev) {
  const clattn_varlen_desc *d = desc;
  clattn__varlen_plan *pl = plan_;
  const int g = d->heads_q / d->heads_kv;
  const char *name = pl->variant == 1 ? "varlen_fwd_staged" : "varlen_fwd";
  clattn__defs df;
  cl_kernel kern = NULL;
  clattn_status rc;
  options(d, pl, &df);
  if ((rc = clattn__kernel_defs(ctx, "varlen.cl", &df, name, &kern)))
    return rc;
  size_t kwg = 0;
  if (auto_wg && (rc = clattn__kernel_wg(ctx, kern, &kwg)))
    return rc;
  if (auto_wg && kwg < (size_t)pl->wg) {
    /* an automatic work-group may exceed what the compiled kernel allows
     * (registers): rebuild once at the kernel's own limit, a row an item */
    pl->wg = clattn__pow2_floor(kwg);
    pl->bq = pl->wg >= g ? pl->wg / g : 1;
    pl->rpi = (pl->bq * g + pl->wg - 1) / pl->wg;
    options(d, pl, &df);
    if ((rc = clattn__kernel_defs(ctx, "varlen.cl", &df, name, &kern)))
      return rc;
  }
  if ((rc = clattn__check_wg(ctx, kern, (size_t)pl->wg, 0, name)))
    return rc;
  cl_mem in[3] = {bufs[Q], bufs[K], bufs[V]};
  const clattn_events *wait = ev;
  if (pl->variant == 1) {
    if ((rc = stage(ctx, d, pl, bufs, &df, &in[1], &in[2], ev)))
      return rc;
    wait = NULL; /* the in-order queue runs the staging first */
  }
  const float scale = clattn__kernel_scale(d->scale, d->head_dim_k);
  const clattn__opts opts = CLATTN__OPTS_OF(d);
  /* the staged kernel's row length ld follows the ints */
  const cl_int ci[5] = {d->batch, d->total_q, d->total_k, d->heads_kv, pl->ld};
  const cl_mem rest[3] = {bufs[CU_Q], bufs[CU_K], bufs[O]};
  cl_uint a = 0;
  if ((rc = clattn__args(ctx, kern, &a, 3, sizeof(cl_mem), in)) ||
      (rc = clattn__args(ctx, kern, &a, 3, sizeof(cl_mem), rest)) ||
      (rc = clattn__scalars(ctx, kern, &a, pl->variant == 1 ? 5 : 4,
                            sizeof(cl_int), ci)) ||
      (rc = clattn__scalars(ctx, kern, &a, 1, sizeof(cl_float), &scale)) ||
      (rc = clattn__opts_args(ctx, kern, &a, &opts, d->heads_q)))
    return rc;
  const size_t groups = (size_t)clattn__varlen_groups(d, pl->bq);
  const size_t gws[2] = {groups * (size_t)pl->wg, (size_t)d->heads_kv};
  const size_t lws[2] = {(size_t)pl->wg, 1};
  return clattn__launch(ctx, kern, 2, gws, lws, wait ? wait->num_wait : 0,
                        wait ? wait->wait : NULL, ev ? ev->out : NULL);
}

/* Odd lengths that divide no tile: a full sequence, an empty query with
 * keys, a chunk of 5 queries after 28 cached keys, and a query with no
 * key (len_q, len_k in turn). */
static void check_case(const void *desc, clattn__check_case *c) {
  clattn_varlen_desc *s = (clattn_varlen_desc *)c->desc;
  const clattn_varlen_desc *d = desc;
  static const int lens[8] = {19, 19, 0, 7, 5, 33, 1, 0};
  *s = *d;
  s->params = NULL;
  s->unchecked = 0;
  s->batch = 4;
  s->total_q = 25;
  s->total_k = 59;
  /* no more query heads than the call's: its per-head option arrays */
  s->heads_kv = d->heads_kv >= 2 ? 2 : 1;
  s->heads_q = s->heads_kv * (d->heads_q / d->heads_kv);
  memcpy(c->ints, lens, sizeof lens);
}

static void reference(const void *desc, void *const *b) {
  const clattn_varlen_desc *d = desc;
  const ref_paged a = {
      .b = d->batch,
      .hq = d->heads_q,
      .hkv = d->heads_kv,
      .dk = d->head_dim_k,
      .dv = d->head_dim_v,
      .scale = d->scale > 0 ? d->scale : 1.0 / sqrt((double)d->head_dim_k),
      .causal = d->causal,
      .opts = clattn__opts_ref(CLATTN__OPTS_OF(d))};
  ref_varlen_attention(&a, b[Q], b[K], b[V], b[CU_Q], b[CU_K], b[O]);
}

/* The padded batch through the prefill family (varlen_padded.c). */
extern const clattn__baseline clattn__varlen_padded;
static const clattn__baseline *const baselines[] = {&clattn__varlen_padded,
                                                    NULL};

/* The ragged batch: 8 sequences of mixed lengths, 4,096 tokens;
 * tuned as is, benched causal and not. */
static const char *const standard[] = {
    "batch=8 seq=4096 heads=8 kv-heads=8 head-dim=64 causal=1", NULL};
static const char *const bench[] = {
    "batch=8 seq=4096 heads=8 kv-heads=8 head-dim=64 causal=1",
    "batch=8 seq=4096 heads=8 kv-heads=8 head-dim=64 causal=0", NULL};

const clattn__family clattn__family_varlen = {
    .name = "varlen",
    .summary = "ragged prefill over packed sequences (clattn_varlen_attention)",
    .api = "clattn_varlen_attention",
    .source = "varlen.cl",
    .desc_size = sizeof(clattn_varlen_desc),
    .plan_size = sizeof(clattn__varlen_plan),
    .nbufs = 6,
    .tune_method = 1,
    .standard_shapes = standard,
    .bench_shapes = bench,
    .baselines = baselines,
    .check = check,
    .buffers = buffers,
    .full_int = full_int,
    .fill_ints = fill_ints,
    .check_ints = check_ints,
    .ints_unchecked = ints_unchecked,
    .shape_class = shape_class,
    .shape_keys = SHAPE_KEYS,
    .parse_shape = parse_shape,
    .set_options = set_options,
    CLATTN__TUNABLES(tunable_table),
    .plan = plan,
    .fits = fits,
    .resolved = resolved,
    .space = space,
    .cost = clattn__varlen_cost,
    .enqueue = enqueue,
    .check_case = check_case,
    .reference = reference,
};
