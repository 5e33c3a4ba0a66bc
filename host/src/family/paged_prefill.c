/* paged_prefill.c - the paged-prefill family: a chunked prefill of n_q new
 * queries per sequence over a paged KV cache, K and V read through the
 * block table (clattn_paged_attention with n_q > 1; any n_q >= 1 works).
 * Its costs are in paged_prefill_cost.c, its bench baseline in
 * paged_prefill_contig.c, its kernel in cl/paged_prefill.cl. */
#include "family/paged_prefill.h"
#include "family/attn_opts.h"
#include "family/common.h"
#include "reference/ref_paged.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn_paged_desc *d = desc;
  clattn_status rc;
  if (d->batch < 1 || d->n_q < 1 || d->num_blocks < 1 || d->max_blocks < 1) {
    snprintf(why, cap,
             "batch (%d), n_q (%d), num_blocks (%d) and max_blocks (%d) must "
             "be >= 1",
             d->batch, d->n_q, d->num_blocks, d->max_blocks);
    return CLATTN_ERR_SHAPE;
  }
  if ((rc = clattn__paged_check_page(d, why, cap)) ||
      (rc = clattn__paged_check_blocks(d, why, cap)))
    return rc;
  if ((rc = clattn__check_heads(d->heads_q, d->heads_kv, d->head_dim_k,
                                d->head_dim_v, d->dtype, why, cap)))
    return rc;
  if ((rc = clattn__paged_check_cache(d, why, cap)))
    return rc;
  if ((rc = clattn__check_scale(d->scale, why, cap)))
    return rc;
  const clattn__opts o = CLATTN__OPTS_OF(d);
  if ((rc = clattn__opts_check(&o, d->heads_q, CLATTN__OPT_ALL,
                               "clattn_paged_attention", why, cap)))
    return rc;
  const size_t es = clattn_dtype_size(d->dtype);
  if ((rc = clattn__check_tensor("q", es, d->batch, d->n_q, d->heads_q,
                                 d->head_dim_k, why, cap)) ||
      (rc = clattn__check_tensor("o", es, d->batch, d->n_q, d->heads_q,
                                 d->head_dim_v, why, cap)) ||
      (rc = clattn__paged_check_pool(d, why, cap)) ||
      (rc = clattn__check_int32("batch x max_blocks",
                                (long long)d->batch * d->max_blocks, why,
                                cap)) ||
      (rc = clattn__check_int32("n_q x heads_q", (long long)d->n_q * d->heads_q,
                                why, cap)))
    return rc;
  return CLATTN_OK;
}

static void buffers(const void *desc, clattn__buf_spec *b) {
  const clattn_paged_desc *d = desc;
  const clattn_dtype dt = d->dtype, ct = clattn__paged_cache_dtype(d);
  const size_t B = (size_t)d->batch, n = (size_t)d->n_q;
  const size_t pool = (size_t)d->num_blocks * (size_t)d->page_size;
  const int no_scales = ct != CLATTN_I8;
  b[PA_Q] = (clattn__buf_spec){
      "q", CLATTN__BUF_IN, B * n * d->heads_q * d->head_dim_k, dt, 0, 0};
  b[PA_K_CACHE] = (clattn__buf_spec){
      "k_cache", CLATTN__BUF_IN, pool * d->heads_kv * d->head_dim_k, ct, 0, 1};
  b[PA_V_CACHE] = (clattn__buf_spec){
      "v_cache", CLATTN__BUF_IN, pool * d->heads_kv * d->head_dim_v, ct, 0, 1};
  b[PA_K_SCALE] = (clattn__buf_spec){
      "k_scale", CLATTN__BUF_IN, pool * d->heads_kv, CLATTN_F32, no_scales, 0};
  b[PA_V_SCALE] = (clattn__buf_spec){
      "v_scale", CLATTN__BUF_IN, pool * d->heads_kv, CLATTN_F32, no_scales, 0};
  clattn__paged_int_specs(d, &b[PA_TABLE], &b[PA_LENS]);
  b[PA_O] = (clattn__buf_spec){
      "o", CLATTN__BUF_OUT, B * n * d->heads_q * d->head_dim_v, dt, 0, 0};
}

static void shape_class(const void *desc, char *buf, size_t cap) {
  const clattn_paged_desc *d = desc;
  if (d->heads_kv < 1) {
    buf[0] = '\0';
    return;
  }
  snprintf(buf, cap, "%s %s k%d v%d g%d bh%ld n%ld m%ld p%d c%d",
           clattn__dtype_name(d->dtype),
           clattn__dtype_name(clattn__paged_cache_dtype(d)), d->head_dim_k,
           d->head_dim_v, d->heads_q / d->heads_kv,
           clattn__pow2_round((long)d->batch * d->heads_kv),
           clattn__pow2_round(d->n_q),
           clattn__pow2_round((long)d->max_blocks * d->page_size), d->page_size,
           d->causal ? 1 : 0);
  const clattn__opts o = CLATTN__OPTS_OF(d);
  clattn__opts_class(&o, buf, cap);
}

#define SHAPE_KEYS                                                             \
  "batch seq kv-seq heads kv-heads head-dim head-dim-v dtype cache-dtype "     \
  "page causal " CLATTN__OPTS_SHAPE_KEYS

/* cache-dtype=f32|f16|bf16|i8, read as the dtype key's value. */
static clattn_status shape_cache_dtype(const char *text, clattn_dtype *out,
                                       char *why, size_t cap) {
  static const char key[] = "cache-dtype=";
  for (const char *w = text; (w = strstr(w, key)) != NULL; w++) {
    if (w != text && w[-1] != ' ' && w[-1] != '\t' && w[-1] != ',')
      continue;
    const char *v = w + sizeof key - 1;
    const size_t len = strcspn(v, " \t,");
    char one[40];
    snprintf(one, sizeof one, "dtype=%.*s", (int)(len < 30 ? len : 30), v);
    const clattn_status rc = clattn__shape_dtype(one, out, why, cap);
    if (rc)
      snprintf(why, cap, "cache-dtype: expected f32, f16, bf16 or i8");
    return rc;
  }
  return CLATTN_OK;
}

static clattn_status parse_shape(const char *text, void *desc, char *why,
                                 size_t cap) {
  clattn__attn_shape s = {1, 0,          0,           0,          0,
                          0, CLATTN_F32, CLATTN_BSHD, CLATTN_BSHD};
  int heads_q = 0, heads_kv, page = 16;
  clattn_dtype cache = 0;
  clattn__opts o;
  clattn_status rc;
  if ((rc = clattn__paged_shape_heads(text, SHAPE_KEYS, &s, &heads_q, &heads_kv,
                                      &page, why, cap)) ||
      (rc = shape_cache_dtype(text, &cache, why, cap)) ||
      (rc = clattn__opts_shape(text, heads_q, &o, why, cap)))
    return rc;
  if (s.n_q < 1 || heads_q < 1 || s.head_dim_k < 1) {
    snprintf(why, cap, "the shape needs seq=, heads= and head-dim=");
    return CLATTN_ERR_INVALID_ARG;
  }
  clattn_paged_desc *d = desc;
  *d = clattn__paged_shape_desc(&s, s.n_q, heads_q, heads_kv, page,
                                cache == s.dtype ? 0 : cache);
  CLATTN__OPTS_PUT(d, o);
  return CLATTN_OK;
}

static void set_options(void *desc, clattn__opts o) {
  CLATTN__OPTS_PUT((clattn_paged_desc *)desc, o);
}

/* Its tunables, in the order of clattn__paged_prefill_tunables. */
static const clattn__tunable tunable_table[] = {
    {"rows", 1, 1 << 12, "2 rows an item on CPUs, 1 on GPUs",
     "query rows a work-group, a multiple of wg up to 8 a work-item", 0},
    {"keys", 1, 256,
     "64 on CPUs, 32 on GPUs (fewer where local memory is short)",
     "keys a tile (a power of two: part of one page or whole pages)", 0},
    {"wg", 1, 1 << 12, "64 or the device's limit", "work-items a work-group",
     CLATTN__TUNABLE_WG}};
CLATTN__TUNABLES_MATCH(clattn__paged_prefill_tunables, tunable_table);

size_t clattn__paged_prefill_local(const clattn_paged_desc *d,
                                   const clattn__paged_prefill_plan *pl) {
  const size_t per_key = (size_t)d->head_dim_k + d->head_dim_v + 1 +
                         (clattn__paged_cache_dtype(d) == CLATTN_I8 ? 2 : 0);
  return (size_t)pl->kt * per_key * 4;
}

static clattn_status plan(const clattn__target *t, const void *desc,
                          const clattn__params *values, void *plan_, char *why,
                          size_t cap) {
  const clattn_paged_desc *d = desc;
  clattn__paged_prefill_plan *pl = plan_;
  clattn__paged_prefill_tunables p;
  clattn__tunables_get(&p, sizeof p, values);
  const size_t most = t->max_wg < 64 ? t->max_wg : 64;
  pl->wg = p.wg ? p.wg : clattn__pow2_floor(most ? most : 1);
  /* CPUs (the compiler vectorising each item's loops along the keys) take
   * two rows an item and 64-key tiles, so each K and V tile loaded serves
   * more scores; GPUs one row an item, 32-key tiles, more work-groups */
  pl->rq = p.rows ? p.rows : t->cpu_vectors ? 2 * pl->wg : pl->wg;
  if (pl->rq % pl->wg != 0 || pl->rq / pl->wg > 8) {
    snprintf(why, cap,
             "params: rows (%d) must be wg (%d) times 1 to 8 (rows a "
             "work-item)",
             pl->rq, pl->wg);
    return CLATTN_ERR_INVALID_ARG;
  }
  if (p.keys) {
    pl->kt = p.keys;
  } else {
    pl->kt = t->cpu_vectors ? 64 : 32;
    while (pl->kt > 1 &&
           clattn__paged_prefill_local(d, pl) > clattn__local_budget(t))
      pl->kt /= 2;
  }
  if (!clattn__is_pow2(pl->kt) || pl->kt > 256) {
    snprintf(why, cap, "params: keys (%d) must be a power of two up to 256",
             pl->kt);
    return CLATTN_ERR_INVALID_ARG;
  }
  return CLATTN_OK;
}

static int fits(const clattn__target *t, const void *desc, const void *pl,
                char *why, size_t cap) {
  const clattn__paged_prefill_plan *p = pl;
  return clattn__plan_fits(t, p->wg, clattn__paged_prefill_local(desc, p), why,
                           cap);
}

static clattn__params resolved(const void *pl) {
  const clattn__paged_prefill_plan *p = pl;
  const clattn__paged_prefill_tunables r = {p->rq, p->kt, p->wg};
  return clattn__tunables_put(&r, sizeof r);
}

static int add(const clattn__target *t, const void *d,
               clattn__paged_prefill_tunables p, clattn__space *s) {
  const clattn__params v = clattn__tunables_put(&p, sizeof p);
  return clattn__space_try(&clattn__family_paged_prefill, t, d, &v, s);
}

/* Work-group {16..128} x rows a work-item {1, 2} x keys {8..64}. */
static clattn_status space(const clattn__target *t, const void *desc,
                           clattn__space *s) {
  static const int wgs[] = {16, 32, 64, 128}, keys[] = {8, 16, 32, 64};
  clattn__space_init_family(s, &clattn__family_paged_prefill);
  const int i = add(t, desc, (clattn__paged_prefill_tunables){0, 0, 0}, s);
  if (i == -2)
    return CLATTN_ERR_NOMEM;
  s->def = i;
  for (int a = 0; a < 4; a++)
    for (int r = 1; r <= 2; r++)
      for (int k = 0; k < 4; k++)
        if (add(t, desc,
                (clattn__paged_prefill_tunables){r * wgs[a], keys[k], wgs[a]},
                s) == -2)
          return CLATTN_ERR_NOMEM;
  return CLATTN_OK;
}

static void options(const clattn_paged_desc *d,
                    const clattn__paged_prefill_plan *pl, clattn__defs *df) {
  df->n = 0;
  clattn__def(df, "DTYPE", (int)d->dtype);
  clattn__def(df, "DK", d->head_dim_k);
  clattn__def(df, "DV", d->head_dim_v);
  clattn__def(df, "CAUSAL", d->causal ? 1 : 0);
  clattn__def(df, "PAGE", d->page_size);
  clattn__def(df, "WG", pl->wg);
  clattn__def(df, "RQ", pl->rq);
  clattn__def(df, "KT", pl->kt);
  if (clattn__paged_cache_dtype(d) == CLATTN_I8)
    clattn__def(df, "CACHE_I8", 1);
  const clattn__opts o = CLATTN__OPTS_OF(d);
  clattn__opts_defs(&o, df);
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *plan_,
                             int auto_wg, const cl_mem *bufs,
                             const clattn_events *ev) {
  const clattn_paged_desc *d = desc;
  clattn__paged_prefill_plan *pl = plan_;
  const char *name = "paged_prefill";
  clattn__defs df;
  clattn_status rc;
  cl_kernel kern = NULL;
  options(d, pl, &df);
  if ((rc = clattn__kernel_defs(ctx, "paged_prefill.cl", &df, name, &kern)))
    return rc;
  size_t kwg = 0;
  if (auto_wg && (rc = clattn__kernel_wg(ctx, kern, &kwg)))
    return rc;
  if (auto_wg && kwg < (size_t)pl->wg) {
    /* an automatic work-group may exceed what the compiled kernel allows
     * (registers): rebuild once at the kernel's own limit */
    const int per_item = pl->rq / pl->wg;
    pl->wg = clattn__pow2_floor(kwg);
    pl->rq = pl->wg * per_item;
    options(d, pl, &df);
    if ((rc = clattn__kernel_defs(ctx, "paged_prefill.cl", &df, name, &kern)))
      return rc;
  }
  if ((rc = clattn__check_wg(ctx, kern, (size_t)pl->wg,
                             clattn__paged_prefill_local(d, pl), name)))
    return rc;
  const int g = d->heads_q / d->heads_kv;
  const float scale = clattn__kernel_scale(d->scale, d->head_dim_k);
  const clattn__opts opts = CLATTN__OPTS_OF(d);
  const cl_int ci[5] = {d->n_q, d->heads_kv, g, d->num_blocks, d->max_blocks};
  cl_uint a = 0;
  if ((rc = clattn__args(ctx, kern, &a, 8, sizeof(cl_mem), bufs)) ||
      (rc = clattn__scalars(ctx, kern, &a, 5, sizeof(cl_int), ci)) ||
      (rc = clattn__scalars(ctx, kern, &a, 1, sizeof(cl_float), &scale)) ||
      (rc = clattn__opts_args(ctx, kern, &a, &opts, d->heads_q)))
    return rc;
  const size_t rows = (size_t)d->n_q * g;
  const size_t groups = (rows + pl->rq - 1) / (size_t)pl->rq;
  const size_t gws[2] = {groups * (size_t)pl->wg,
                         (size_t)d->batch * d->heads_kv};
  const size_t lws[2] = {(size_t)pl->wg, 1};
  return clattn__launch(ctx, kern, 2, gws, lws, ev ? ev->num_wait : 0,
                        ev ? ev->wait : NULL, ev ? ev->out : NULL);
}

/* Three sequences: one over three pages and a part, one of a page and a
 * key, one shorter than the chunk (its first queries see nothing when
 * causal); 7 queries, which no tile divides; two spare pages. */
static void check_case(const void *desc, clattn__check_case *c) {
  clattn_paged_desc *s = (clattn_paged_desc *)c->desc;
  const clattn_paged_desc *d = desc;
  const int P = d->page_size > 0 ? d->page_size : 16;
  *s = *d;
  s->params = NULL;
  s->unchecked = 0;
  s->batch = 3;
  s->n_q = 7;
  s->page_size = P;
  s->max_blocks = (3 * P + 5 + P - 1) / P;
  s->num_blocks = 3 * s->max_blocks + 2;
  /* no more query heads than the call's: its per-head option arrays */
  s->heads_kv = d->heads_kv >= 2 ? 2 : 1;
  s->heads_q = s->heads_kv * (d->heads_q / d->heads_kv);
  c->ints[0] = 3 * P + 5;
  c->ints[1] = P + 1;
  c->ints[2] = 5;
}

static void reference(const void *desc, void *const *b) {
  const clattn_paged_desc *d = desc;
  const int i8 = clattn__paged_cache_dtype(d) == CLATTN_I8;
  const ref_paged a = {
      d->batch,
      d->n_q,
      d->heads_q,
      d->heads_kv,
      d->head_dim_k,
      d->head_dim_v,
      d->num_blocks,
      d->page_size,
      d->max_blocks,
      d->scale > 0 ? d->scale : 1.0 / sqrt((double)d->head_dim_k),
      d->causal,
      clattn__opts_ref(CLATTN__OPTS_OF(d))};
  ref_paged_attention(&a, b[PA_Q], b[PA_K_CACHE], b[PA_V_CACHE],
                      i8 ? b[PA_K_SCALE] : NULL, i8 ? b[PA_V_SCALE] : NULL,
                      b[PA_TABLE], b[PA_LENS], b[PA_O]);
}

static const clattn__baseline *const baselines[] = {
    &clattn__paged_prefill_contig, NULL};

static const char *const standard[] = {
    "batch=1 seq=512 kv-seq=4096 heads=8 kv-heads=8 head-dim=64 page=16 "
    "causal=1",
    "batch=1 seq=512 kv-seq=4096 heads=8 kv-heads=8 head-dim=64 page=16 "
    "cache-dtype=i8 causal=1",
    NULL};

const clattn__family clattn__family_paged_prefill = {
    .name = "paged-prefill",
    .summary = "chunked prefill over a paged KV cache "
               "(clattn_paged_attention, n_q > 1)",
    .api = "clattn_paged_attention",
    .source = "paged_prefill.cl",
    .desc_size = sizeof(clattn_paged_desc),
    .plan_size = sizeof(clattn__paged_prefill_plan),
    .nbufs = PA_NBUFS,
    .tune_method = 1,
    .standard_shapes = standard,
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
    .cost = clattn__paged_prefill_cost,
    .enqueue = enqueue,
    .check_case = check_case,
    .reference = reference,
};
