/* paged_decode.c - the paged-decode family: one query per sequence over a
 * paged KV cache (clattn_paged_attention with n_q == 1), split over whole
 * pages across work-items and combined with the log-sum-exp rule.  Its
 * costs are in paged_decode_cost.c, its bench baseline in
 * paged_decode_contig.c, its kernels in cl/paged_decode.cl. */
#include "family/paged_decode.h"
#include "base/versioned.h"
#include "family/attn_opts.h"
#include "family/common.h"
#include "reference/ref_paged.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define API "clattn_paged_attention"

static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn_paged_desc *d = desc;
  clattn_status rc;
  if (d->batch < 1) {
    snprintf(why, cap, "batch (%d) must be >= 1", d->batch);
    return CLATTN_ERR_SHAPE;
  }
  if (d->n_q != 1) {
    snprintf(why, cap,
             "n_q = %d: the paged-decode family runs one query a sequence "
             "(n_q = 1); clattn_paged_attention sends n_q > 1 to the "
             "paged-prefill family",
             d->n_q);
    return d->n_q < 1 ? CLATTN_ERR_SHAPE : CLATTN_ERR_UNSUPPORTED;
  }
  if ((rc = clattn__check_heads(d->heads_q, d->heads_kv, d->head_dim_k,
                                d->head_dim_v, d->dtype, why, cap)))
    return rc;
  if ((rc = clattn__paged_check_cache(d, why, cap)))
    return rc;
  if ((rc = clattn__paged_check_page(d, why, cap)))
    return rc;
  if ((rc = clattn__paged_check_blocks(d, why, cap)))
    return rc;
  if ((rc = clattn__check_scale(d->scale, why, cap)))
    return rc;
  const size_t es = clattn_dtype_size(d->dtype);
  if ((rc = clattn__paged_check_pool(d, why, cap)) ||
      (rc = clattn__check_tensor("q", es, d->batch, d->heads_q, d->head_dim_k,
                                 1, why, cap)) ||
      (rc = clattn__check_tensor("o", es, d->batch, d->heads_q, d->head_dim_v,
                                 1, why, cap)))
    return rc;
  const clattn__opts o = CLATTN__OPTS_OF(d);
  return clattn__opts_check(&o, d->heads_q, CLATTN__OPT_ALL, API, why, cap);
}

static void buffers(const void *desc, clattn__buf_spec *b) {
  const clattn_paged_desc *d = desc;
  const clattn_dtype dt = d->dtype, ct = clattn__paged_cache_dtype(d);
  const int i8 = ct == CLATTN_I8;
  const size_t B = (size_t)d->batch;
  const size_t rows = (size_t)d->num_blocks * (size_t)d->page_size;
  const size_t hkv = (size_t)d->heads_kv;
  b[PA_Q] = (clattn__buf_spec){
      "q", CLATTN__BUF_IN, B * d->heads_q * d->head_dim_k, dt, 0, 0};
  b[PA_K_CACHE] = (clattn__buf_spec){
      "k_cache", CLATTN__BUF_IN, rows * hkv * d->head_dim_k, ct, 0, 1};
  b[PA_V_CACHE] = (clattn__buf_spec){
      "v_cache", CLATTN__BUF_IN, rows * hkv * d->head_dim_v, ct, 0, 1};
  /* the scales of an int8 cache; a float cache needs none (NULL) and
   * reads none */
  b[PA_K_SCALE] = (clattn__buf_spec){
      "k_scale", CLATTN__BUF_IN, rows * hkv, CLATTN_F32, !i8, i8};
  b[PA_V_SCALE] = (clattn__buf_spec){
      "v_scale", CLATTN__BUF_IN, rows * hkv, CLATTN_F32, !i8, i8};
  clattn__paged_int_specs(d, &b[PA_TABLE], &b[PA_LENS]);
  b[PA_O] = (clattn__buf_spec){
      "o", CLATTN__BUF_OUT, B * d->heads_q * d->head_dim_v, dt, 0, 0};
}

static void shape_class(const void *desc, char *buf, size_t cap) {
  const clattn_paged_desc *d = desc;
  if (d->heads_kv < 1) {
    buf[0] = '\0';
    return;
  }
  snprintf(buf, cap, "%s c%s k%d v%d g%d bh%ld m%ld p%d",
           clattn__dtype_name(d->dtype),
           clattn__dtype_name(clattn__paged_cache_dtype(d)), d->head_dim_k,
           d->head_dim_v, d->heads_q / d->heads_kv,
           clattn__pow2_round((long)d->batch * d->heads_kv),
           clattn__pow2_round((long)d->max_blocks * d->page_size),
           d->page_size);
  const clattn__opts o = CLATTN__OPTS_OF(d);
  clattn__opts_class(&o, buf, cap);
}

#define SHAPE_KEYS                                                             \
  "batch kv-seq heads kv-heads head-dim head-dim-v dtype cache-dtype page "    \
  "causal " CLATTN__OPTS_SHAPE_KEYS

/* cache-dtype=f32|f16|bf16|i8: read by the dtype reader from the text at
 * the key's "dtype=" (the first such key there); absent: the dtype's. */
static clattn_status shape_cache_dtype(const char *text, clattn_dtype *out,
                                       char *why, size_t cap) {
  for (const char *p = strstr(text, "cache-dtype="); p != NULL;
       p = strstr(p + 1, "cache-dtype="))
    if (p == text || p[-1] == ' ' || p[-1] == '\t')
      return clattn__shape_dtype(p + strlen("cache-"), out, why, cap);
  return CLATTN_OK;
}

static clattn_status parse_shape(const char *text, void *desc, char *why,
                                 size_t cap) {
  clattn_paged_desc *d = desc;
  clattn__attn_shape s = {1, 1,          0,           0,          0,
                          0, CLATTN_F32, CLATTN_BSHD, CLATTN_BSHD};
  int heads_q = 0, heads_kv, page = 16;
  clattn_dtype cache = CLATTN_F32;
  clattn__opts o;
  clattn_status rc;
  if ((rc = clattn__paged_shape_heads(text, SHAPE_KEYS, &s, &heads_q, &heads_kv,
                                      &page, why, cap)))
    return rc;
  cache = s.dtype;
  if ((rc = shape_cache_dtype(text, &cache, why, cap)))
    return rc;
  if (s.n_kv < 1 || heads_q < 1 || s.head_dim_k < 1) {
    snprintf(why, cap, "the shape needs kv-seq=, heads= and head-dim=");
    return CLATTN_ERR_INVALID_ARG;
  }
  *d = clattn__paged_shape_desc(&s, 1, heads_q, heads_kv, page,
                                cache == CLATTN_I8 ? CLATTN_I8 : CLATTN_F32);
  if (cache != CLATTN_I8 && cache != s.dtype) {
    snprintf(why, cap,
             "cache-dtype: the cache is in the dtype (%s) or i8, not %s",
             clattn__dtype_name(s.dtype), clattn__dtype_name(cache));
    return CLATTN_ERR_INVALID_ARG;
  }
  if ((rc = clattn__opts_shape(text, d->heads_q, &o, why, cap)))
    return rc;
  CLATTN__OPTS_PUT(d, o);
  return CLATTN_OK;
}

static void set_options(void *desc, clattn__opts o) {
  CLATTN__OPTS_PUT((clattn_paged_desc *)desc, o);
}

/* In the order of clattn__paged_decode_tunables. */
static const clattn__tunable tunable_table[] = {
    {"splits", 1, 1 << 16, "by the pages and the compute units",
     "work-items a (sequence, KV head), each an equal share of whole pages, "
     "combined by a second kernel",
     0},
    {"wg", 1, 1 << 20, "1 on CPUs, 64 or the device's limit elsewhere",
     "work-items a work-group (splits of one (sequence, KV head))",
     CLATTN__TUNABLE_WG},
    {"keys", 1, 256, "min(page size, 32)",
     "keys a block (scored, then one softmax step), a power of two; at most "
     "the page size",
     0}};
CLATTN__TUNABLES_MATCH(clattn__paged_decode_tunables, tunable_table);

/* The keys a step reads of a sequence at most (a window's or the table's
 * capacity). */
static long span_of(const clattn_paged_desc *d) {
  const long cap = clattn__paged_capacity(d);
  return d->window > 0 && d->window < cap ? d->window : cap;
}

static clattn_status plan(const clattn__target *t, const void *desc,
                          const clattn__params *values, void *pl_, char *why,
                          size_t cap) {
  const clattn_paged_desc *d = desc;
  clattn__paged_decode_plan *pl = pl_;
  clattn__paged_decode_tunables p;
  clattn__tunables_get(&p, sizeof p, values);
  *pl = (clattn__paged_decode_plan){0, 0, 0};
  if (p.keys && !clattn__is_pow2(p.keys)) {
    snprintf(why, cap, "params: keys must be a power of two (got %d)", p.keys);
    return CLATTN_ERR_INVALID_ARG;
  }
  const int kb = p.keys ? p.keys : 32;
  pl->kb = kb < d->page_size ? kb : d->page_size;
  /* A work-item a split: on CPUs one a work-group (PoCL packs the few
   * work-items of a step into one group, one core, otherwise). */
  pl->wg = p.wg ? p.wg : t->is_cpu ? 0 : (int)(t->max_wg < 64 ? t->max_wg : 64);
  if (pl->wg == 1)
    pl->wg = 0;
  /* Splits: enough work-items for every compute unit (two a core on a CPU,
   * more on a GPU), each at least 256 keys of whole pages so that its
   * partials stay small beside what it reads (decode's reasoning,
   * family/plan.c). */
  const long span = span_of(d);
  const long span_pages = (span + d->page_size - 1) / d->page_size + 1;
  long s = p.splits;
  if (s == 0) {
    const long target = (t->is_cpu ? 2L : 16L) * (long)t->compute_units;
    const long units = (long)d->batch * d->heads_kv;
    s = (target + units - 1) / units;
    const long min_pages = (256 + d->page_size - 1) / d->page_size;
    const long most = (span_pages + min_pages - 1) / min_pages;
    if (s > most)
      s = most;
  }
  if (s > span_pages)
    s = span_pages;
  pl->splits = s < 1 ? 1 : (int)s;
  return CLATTN_OK;
}

static int fits(const clattn__target *t, const void *desc, const void *pl,
                char *why, size_t cap) {
  (void)desc;
  return clattn__plan_fits(t, ((const clattn__paged_decode_plan *)pl)->wg, 0,
                           why, cap);
}

static clattn__params resolved(const void *pl_) {
  const clattn__paged_decode_plan *pl = pl_;
  const clattn__paged_decode_tunables v = {pl->splits, pl->wg, pl->kb};
  return clattn__tunables_put(&v, sizeof v);
}

static int add(const clattn__target *t, const void *d,
               clattn__paged_decode_tunables p, clattn__space *s) {
  const clattn__params v = clattn__tunables_put(&p, sizeof p);
  return clattn__space_try(&clattn__family_paged_decode, t, d, &v, s);
}

/* Splits 1, 2, 4, ... while a split keeps >= 64 keys (at most 256) x
 * work-group {1, 4, 16, 64} x keys {8, 16, 32, 64} (those up to the page
 * size: one candidate for each plan). */
static clattn_status space(const clattn__target *t, const void *desc,
                           clattn__space *s) {
  static const int wgs[] = {1, 4, 16, 64}, keys[] = {8, 16, 32, 64};
  const clattn_paged_desc *d = desc;
  clattn__space_init_family(s, &clattn__family_paged_decode);
  int i = add(t, d, (clattn__paged_decode_tunables){0, 0, 0}, s);
  if (i == -2)
    return CLATTN_ERR_NOMEM;
  s->def = i;
  const long span = span_of(d);
  for (int sp = 1; sp <= 256 && (sp == 1 || span / sp >= 64); sp *= 2)
    for (int w = 0; w < 4; w++)
      for (int k = 0; k < 4; k++)
        if (add(t, d, (clattn__paged_decode_tunables){sp, wgs[w], keys[k]},
                s) == -2)
          return CLATTN_ERR_NOMEM;
  return CLATTN_OK;
}

static void options(const clattn_paged_desc *d,
                    const clattn__paged_decode_plan *pl, clattn__defs *df) {
  df->n = 0;
  clattn__def(df, "DTYPE", (int)d->dtype);
  clattn__def(df, "DK", d->head_dim_k);
  clattn__def(df, "DV", d->head_dim_v);
  clattn__def(df, "G", d->heads_q / d->heads_kv);
  clattn__def(df, "VWK", clattn__vec_width(d->head_dim_k));
  clattn__def(df, "VWV", clattn__vec_width(d->head_dim_v));
  clattn__def(df, "PAGE", d->page_size);
  clattn__def(df, "KB", pl->kb);
  clattn__def(df, "CACHE_I8", clattn__paged_cache_dtype(d) == CLATTN_I8);
  clattn__def(df, "DIRECT", pl->splits == 1);
  const clattn__opts o = CLATTN__OPTS_OF(d);
  clattn__opts_defs(&o, df);
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *plan_,
                             int auto_wg, const cl_mem *bufs,
                             const clattn_events *ev) {
  const clattn_paged_desc *d = desc;
  clattn__paged_decode_plan *pl = plan_;
  clattn_status rc;
  const int hq = d->heads_q, hkv = d->heads_kv, dv = d->head_dim_v;
  const int S = pl->splits, direct = S == 1;
  const char *name = "paged_decode_split";
  clattn__defs df;
  options(d, pl, &df);
  cl_kernel kern = NULL, comb = NULL;
  if ((rc = clattn__kernel_defs(ctx, "paged_decode.cl", &df, name, &kern)))
    return rc;
  if (pl->wg && auto_wg) {
    /* an automatic work-group may exceed what the compiled kernel allows */
    size_t kwg = 0;
    if ((rc = clattn__kernel_wg(ctx, kern, &kwg)))
      return rc;
    if (kwg < (size_t)pl->wg)
      pl->wg = kwg > 1 ? (int)clattn__pow2_floor(kwg) : 0;
  }
  if (pl->wg && (rc = clattn__check_wg(ctx, kern, (size_t)pl->wg, 0, name)))
    return rc;
  cl_mem opart = NULL, lse = NULL;
  if (!direct) {
    const size_t pb = clattn__bytes(4, d->batch, hq, S, dv);
    if (pb == 0)
      return clattn__fail(ctx, CLATTN_ERR_SHAPE, "partial sizes overflow");
    if ((rc = clattn__kernel_defs(ctx, "paged_decode.cl", &df,
                                  "paged_decode_combine", &comb)) ||
        (rc = clattn__scratch(ctx, 1, pb, &opart)) ||
        (rc = clattn__scratch(ctx, 2, clattn__bytes(4, d->batch, hq, S, 1),
                              &lse)))
      return rc;
  }
  const float scale = clattn__kernel_scale(d->scale, d->head_dim_k);
  const cl_mem kb[10] = {bufs[PA_Q],
                         bufs[PA_K_CACHE],
                         bufs[PA_V_CACHE],
                         bufs[PA_K_SCALE],
                         bufs[PA_V_SCALE],
                         bufs[PA_TABLE],
                         bufs[PA_LENS],
                         bufs[PA_O],
                         opart,
                         lse};
  const cl_int ci[4] = {hkv, d->num_blocks, d->max_blocks, S};
  const clattn__opts opts = CLATTN__OPTS_OF(d);
  cl_uint a = 0;
  if ((rc = clattn__args(ctx, kern, &a, 10, sizeof(cl_mem), kb)) ||
      (rc = clattn__scalars(ctx, kern, &a, 4, sizeof(cl_int), ci)) ||
      (rc = clattn__scalars(ctx, kern, &a, 1, sizeof(cl_float), &scale)) ||
      (rc = clattn__opts_args(ctx, kern, &a, &opts, hq)))
    return rc;
  const cl_int rows = d->batch * hq;
  if (!direct) {
    const cl_mem cb[3] = {opart, lse, bufs[PA_O]};
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
  const size_t wg = pl->wg ? (size_t)pl->wg : 1;
  const size_t gws[2] = {((size_t)S + wg - 1) / wg * wg,
                         (size_t)d->batch * hkv};
  const size_t lws[2] = {wg, 1};
  if ((rc = clattn__launch(ctx, kern, 2, gws, lws, nw, wait,
                           direct ? out : NULL)) ||
      direct)
    return rc;
  const size_t cg[2] = {(size_t)rows, (size_t)(dv / clattn__vec_width(dv))};
  return clattn__launch(ctx, comb, 2, cg, NULL, 0, NULL, out);
}

/* Four sequences of lengths 301, 188, 1 and page_size + 1 in a table with
 * room to spare, the call's page size, dtypes and options kept. */
static void check_case(const void *desc, clattn__check_case *c) {
  clattn_paged_desc *s = (clattn_paged_desc *)c->desc;
  const clattn_paged_desc *d = desc;
  *s = *d;
  s->params = NULL;
  s->batch = 4;
  s->unchecked = 0;
  s->heads_kv = d->heads_kv >= 2 ? 2 : 1;
  s->heads_q = s->heads_kv * (d->heads_q / d->heads_kv);
  s->max_blocks = (301 + d->page_size - 1) / d->page_size + 1;
  s->num_blocks = s->batch * s->max_blocks + 3;
  c->ints[0] = 301;
  c->ints[1] = 188;
  c->ints[2] = 1;
  c->ints[3] = d->page_size + 1;
}

static void reference(const void *desc, void *const *b) {
  const clattn_paged_desc *d = desc;
  const int i8 = clattn__paged_cache_dtype(d) == CLATTN_I8;
  const ref_paged a = {
      .b = d->batch,
      .n = 1,
      .hq = d->heads_q,
      .hkv = d->heads_kv,
      .dk = d->head_dim_k,
      .dv = d->head_dim_v,
      .num_blocks = d->num_blocks,
      .page_size = d->page_size,
      .max_blocks = d->max_blocks,
      .scale = d->scale > 0 ? d->scale : 1.0 / sqrt((double)d->head_dim_k),
      .causal = d->causal,
      .opts = clattn__opts_ref(CLATTN__OPTS_OF(d))};
  ref_paged_attention(&a, b[PA_Q], b[PA_K_CACHE], b[PA_V_CACHE],
                      i8 ? b[PA_K_SCALE] : NULL, i8 ? b[PA_V_SCALE] : NULL,
                      b[PA_TABLE], b[PA_LENS], b[PA_O]);
}

static const char *const standard[] = {
    "batch=1 kv-seq=4096 heads=8 kv-heads=8 head-dim=64 page=16",
    "batch=1 kv-seq=8192 heads=8 kv-heads=1 head-dim=64 page=16",
    "batch=1 kv-seq=4096 heads=32 kv-heads=8 head-dim=128 page=16",
    "batch=8 kv-seq=2048 heads=8 kv-heads=8 head-dim=64 page=16", NULL};

/* m = 8192, page 16, in f32, f16 and int8 storage (the ratios:
 * paged beside contiguous, int8 beside f32 and f16), and the standard
 * shapes. */
static const char *const bench[] = {
    "batch=1 kv-seq=8192 heads=8 kv-heads=8 head-dim=64 page=16 dtype=f32",
    "batch=1 kv-seq=8192 heads=8 kv-heads=8 head-dim=64 page=16 dtype=f16 "
    "cache-dtype=f16",
    "batch=1 kv-seq=8192 heads=8 kv-heads=8 head-dim=64 page=16 dtype=f32 "
    "cache-dtype=i8",
    "batch=1 kv-seq=8192 heads=8 kv-heads=1 head-dim=64 page=16",
    "batch=1 kv-seq=4096 heads=32 kv-heads=8 head-dim=128 page=16",
    "batch=8 kv-seq=2048 heads=8 kv-heads=8 head-dim=64 page=16",
    NULL};

static const clattn__baseline *const baselines[] = {
    &clattn__paged_decode_contiguous, NULL};

const clattn__family clattn__family_paged_decode = {
    .name = "paged-decode",
    .summary = "one query per sequence over a paged KV cache (block table), "
               "split-KV over pages (clattn_paged_attention, n_q = 1)",
    .api = API,
    .source = "paged_decode.cl",
    .desc_size = sizeof(clattn_paged_desc),
    .plan_size = sizeof(clattn__paged_decode_plan),
    .nbufs = PA_NBUFS,
    .tune_method = 2,
    .standard_shapes = standard,
    .bench_shapes = bench,
    .baselines = baselines,
    .check = check,
    .buffers = buffers,
    .full_int = clattn__paged_full_int,
    .fill_ints = clattn__paged_attn_fill_ints,
    .check_ints = clattn__paged_attn_check_ints,
    .ints_unchecked = clattn__paged_ints_unchecked,
    .shape_class = shape_class,
    .shape_keys = SHAPE_KEYS,
    .parse_shape = parse_shape,
    .set_options = set_options,
    CLATTN__TUNABLES(tunable_table),
    .plan = plan,
    .fits = fits,
    .resolved = resolved,
    .space = space,
    .cost = clattn__paged_decode_cost,
    .enqueue = enqueue,
    .check_case = check_case,
    .reference = reference,
};
