/* paged_append.c - the paged-append family: n_q new K/V rows per sequence
 * written into the pages a block table names (clattn_paged_append), into
 * a float cache of the rows' dtype or an int8 cache quantized on write
 * (cl/paged_append.cl).  It has no tunables: its one candidate is the
 * default. */
#include "family/common.h"
#include "family/family.h"
#include "family/paged_common.h"
#include "model/model.h"
#include "reference/ref_paged.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum {
  K_NEW,
  V_NEW,
  BLOCK_TABLE,
  KV_LENS,
  K_CACHE,
  V_CACHE,
  K_SCALE,
  V_SCALE,
  NBUFS
};

/* kv-seq: the lengths after the append in the tuner's full call (rounded
 * up to whole pages: the table's capacity). */
#define SHAPE_KEYS                                                             \
  "batch kv-seq new heads kv-heads head-dim head-dim-v dtype cache-dtype page"

typedef struct plan {
  int none;
} plan;

static int is_i8(const clattn_paged_desc *d) {
  return d->cache_dtype == CLATTN_I8;
}

static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn_paged_desc *d = desc;
  clattn_status rc;
  if (d->batch < 1 || d->n_q < 1) {
    snprintf(why, cap, "batch (%d) and n_q (%d) must be >= 1", d->batch,
             d->n_q);
    return CLATTN_ERR_SHAPE;
  }
  /* heads_q is the attention's: the append writes KV heads alone */
  if ((rc = clattn__check_heads(d->heads_kv, d->heads_kv, d->head_dim_k,
                                d->head_dim_v, d->dtype, why, cap)))
    return rc;
  if ((rc = clattn__paged_check_cache(d, why, cap)))
    return rc;
  if ((rc = clattn__paged_check_page(d, why, cap)))
    return rc;
  if ((rc = clattn__paged_check_blocks(d, why, cap)))
    return rc;
  const size_t es = clattn_dtype_size(d->dtype);
  if ((rc = clattn__check_tensor("k_new", es, d->batch, d->n_q, d->heads_kv,
                                 d->head_dim_k, why, cap)) ||
      (rc = clattn__check_tensor("v_new", es, d->batch, d->n_q, d->heads_kv,
                                 d->head_dim_v, why, cap)) ||
      (rc = clattn__paged_check_pool(d, why, cap)) ||
      (rc = clattn__check_tensor("block_table", 4, d->batch, d->max_blocks, 1,
                                 1, why, cap)) ||
      (rc = clattn__check_int32("n_q x heads_kv",
                                (long long)d->n_q * d->heads_kv, why, cap)))
    return rc;
  return CLATTN_OK;
}

static void buffers(const void *desc, clattn__buf_spec *b) {
  const clattn_paged_desc *d = desc;
  const clattn_dtype dt = d->dtype, ct = clattn__paged_cache_dtype(d);
  const size_t B = (size_t)d->batch, n = (size_t)d->n_q,
               h = (size_t)d->heads_kv;
  const size_t pool = (size_t)d->num_blocks * (size_t)d->page_size * h;
  const int no_scales = !is_i8(d);
  b[K_NEW] = (clattn__buf_spec){
      "k_new", CLATTN__BUF_IN, B * n * h * (size_t)d->head_dim_k, dt, 0, 0};
  b[V_NEW] = (clattn__buf_spec){
      "v_new", CLATTN__BUF_IN, B * n * h * (size_t)d->head_dim_v, dt, 0, 0};
  clattn__paged_int_specs(d, &b[BLOCK_TABLE], &b[KV_LENS]);
  b[K_CACHE] = (clattn__buf_spec){
      "k_cache", CLATTN__BUF_INOUT, pool * (size_t)d->head_dim_k, ct, 0, 0};
  b[V_CACHE] = (clattn__buf_spec){
      "v_cache", CLATTN__BUF_INOUT, pool * (size_t)d->head_dim_v, ct, 0, 0};
  b[K_SCALE] = (clattn__buf_spec){"k_scale",  CLATTN__BUF_INOUT, pool,
                                  CLATTN_F32, no_scales,         0};
  b[V_SCALE] = (clattn__buf_spec){"v_scale",  CLATTN__BUF_INOUT, pool,
                                  CLATTN_F32, no_scales,         0};
}

/* The block table is shuffled pages; kv_lens the lengths. */
static void fill_ints(const void *desc, int buf, const int *per_seq, int full,
                      int *out) {
  clattn__paged_fill_ints(desc, buf == BLOCK_TABLE, per_seq, full, out);
}

static clattn_status check_ints(const void *desc, const int *const *ints,
                                char *why, size_t cap) {
  return clattn__paged_check_tables(desc, ints[BLOCK_TABLE], ints[KV_LENS], why,
                                    cap);
}

static void shape_class(const void *desc, char *buf, size_t cap) {
  const clattn_paged_desc *d = desc;
  snprintf(buf, cap, "%s c%s k%d v%d hkv%d p%d b%ld m%ld t%ld",
           clattn__dtype_name(d->dtype),
           clattn__dtype_name(clattn__paged_cache_dtype(d)), d->head_dim_k,
           d->head_dim_v, d->heads_kv, d->page_size,
           clattn__pow2_round(d->batch),
           clattn__pow2_round(clattn__paged_capacity(d)),
           clattn__pow2_round(d->n_q));
}

/* cache-dtype=f32|f16|bf16|i8 (the common helper reads "dtype" alone). */
static clattn_status shape_cache_dtype(const char *text, clattn_dtype *out,
                                       char *why, size_t cap) {
  static const char key[] = "cache-dtype=";
  for (const char *s = strstr(text, key); s; s = strstr(s + 1, key)) {
    if (s != text && s[-1] != ' ' && s[-1] != '\t')
      continue;
    const char *v = s + sizeof key - 1;
    const size_t len = strcspn(v, " \t\n");
    static const clattn_dtype all[] = {CLATTN_F32, CLATTN_F16, CLATTN_BF16,
                                       CLATTN_I8};
    for (int i = 0; i < 4; i++) {
      const char *n = clattn__dtype_name(all[i]);
      if (len == strlen(n) && strncmp(v, n, len) == 0) {
        *out = all[i];
        return CLATTN_OK;
      }
    }
    snprintf(why, cap,
             "cache-dtype: expected f32, f16, bf16 or i8, got \"%.*s\"",
             (int)(len < 16 ? len : 16), v);
    return CLATTN_ERR_INVALID_ARG;
  }
  return CLATTN_OK;
}

static clattn_status parse_shape(const char *text, void *desc, char *why,
                                 size_t cap) {
  clattn__attn_shape s = {1, 0,          0,           0,          0,
                          0, CLATTN_F32, CLATTN_BSHD, CLATTN_BSHD};
  int heads = 0, kv_heads = 0, n_new = 1, page = 16;
  clattn_dtype cache = CLATTN_F32;
  clattn_status rc;
  if ((rc = clattn__shape_attn(text, SHAPE_KEYS, &s, why, cap)) ||
      (rc = clattn__shape_int(text, "heads", 1, 1 << 16, &heads, why, cap)) ||
      (rc = clattn__shape_int(text, "kv-heads", 1, 1 << 16, &kv_heads, why,
                              cap)) ||
      (rc = clattn__shape_int(text, "new", 1, 1 << 30, &n_new, why, cap)) ||
      (rc = clattn__shape_int(text, "page", 1, 256, &page, why, cap)) ||
      (rc = shape_cache_dtype(text, &cache, why, cap)))
    return rc;
  kv_heads = kv_heads ? kv_heads : heads;
  heads = heads ? heads : kv_heads;
  if (s.n_kv < 1 || kv_heads < 1 || s.head_dim_k < 1) {
    snprintf(why, cap,
             "the shape needs kv-seq=, head-dim= and heads= (or kv-heads=)");
    return CLATTN_ERR_INVALID_ARG;
  }
  const int max_blocks = (int)(((long)s.n_kv + page - 1) / page);
  *(clattn_paged_desc *)desc = (clattn_paged_desc){
      .size = sizeof(clattn_paged_desc),
      .batch = s.batch,
      .n_q = n_new,
      .heads_q = heads,
      .heads_kv = kv_heads,
      .head_dim_k = s.head_dim_k,
      .head_dim_v = s.head_dim_v,
      .num_blocks = (int)((long)s.batch * max_blocks < INT32_MAX
                              ? (long)s.batch * max_blocks
                              : INT32_MAX),
      .page_size = page,
      .max_blocks = max_blocks,
      .dtype = s.dtype,
      .cache_dtype = cache == s.dtype ? CLATTN_F32 : cache};
  return CLATTN_OK;
}

/* No tunables: one plan. */
static clattn_status plan_none(const clattn__target *t, const void *desc,
                               const clattn__params *p, void *pl, char *why,
                               size_t cap) {
  (void)t;
  (void)desc;
  (void)p;
  (void)why;
  (void)cap;
  memset(pl, 0, sizeof(plan));
  return CLATTN_OK;
}

static clattn_status space(const clattn__target *t, const void *desc,
                           clattn__space *s) {
  (void)t;
  (void)desc;
  return clattn__space_none(&clattn__family_paged_append, s);
}

/* (Sequence, row, head) items each read their length; a row at a position
 * >= 0 reads its table entry, then per head its key and value rows (twice
 * for an int8 cache: the maximum, then the quantization) and writes them
 * (int8 rows and a scale each; one fma a value and three a row to correct
 * the float divisions).  kv_lens NULL: every sequence full. */
static clattn_status cost(const void *desc, const void *pl, const int *kv_lens,
                          const clattn_profile *prof, clattn_prediction *out,
                          double *dram_reads) {
  const clattn_paged_desc *d = desc;
  (void)pl;
  (void)prof;
  const long capacity = clattn__paged_capacity(d);
  double rows = 0; /* (sequence, row) pairs written */
  for (long b = 0; b < clattn__distinct_seqs(kv_lens, d->batch); b++) {
    long len = kv_lens ? kv_lens[b] : capacity;
    len = len < capacity ? len : capacity;
    rows += (double)(len < 0 ? 0 : len < d->n_q ? len : d->n_q);
  }
  rows *= clattn__seq_weight(kv_lens, d->batch);
  const double es = (double)clattn_dtype_size(d->dtype);
  const double h = d->heads_kv, dk = d->head_dim_k, dv = d->head_dim_v;
  const double items = (double)d->batch * d->n_q * h;
  const double row_in = es * (dk + dv); /* one head's key and value rows */
  const int i8 = is_i8(d);
  clattn_cost *c = clattn__model_kernel(out, "paged_append");
  clattn__model_core(out, c)->group_items = 0; /* launched without one */
  c->bytes_read = 4.0 * items + rows * h * (4.0 + (i8 ? 2.0 : 1.0) * row_in);
  c->bytes_written = rows * h * (i8 ? dk + dv + 8.0 : row_in);
  if (i8) {
    c->flops = rows * h * (dk + dv);
    c->fma_issued = rows * h * (dk + dv + 6.0);
  }
  c->bytes_compulsory =
      4.0 * d->batch + rows * (4.0 + h * row_in) + c->bytes_written;
  c->bytes_dram = c->bytes_compulsory;
  dram_reads[0] = c->bytes_compulsory - c->bytes_written;
  return CLATTN_OK;
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *pl,
                             int auto_wg, const cl_mem *bufs,
                             const clattn_events *ev) {
  const clattn_paged_desc *d = desc;
  clattn_status rc;
  (void)pl;
  (void)auto_wg;
  clattn__defs df = {0};
  clattn__def(&df, "DTYPE", (int)d->dtype);
  clattn__def(&df, "DK", d->head_dim_k);
  clattn__def(&df, "DV", d->head_dim_v);
  clattn__def(&df, "I8", is_i8(d));
  cl_kernel kern = NULL;
  if ((rc = clattn__kernel_defs(ctx, "paged_append.cl", &df, "paged_append",
                                &kern)))
    return rc;
  const cl_int ci[5] = {d->n_q, d->heads_kv, d->page_size, d->max_blocks,
                        d->num_blocks};
  cl_uint n = 0;
  if ((rc = clattn__args(ctx, kern, &n, NBUFS, sizeof(cl_mem), bufs)) ||
      (rc = clattn__scalars(ctx, kern, &n, 5, sizeof(cl_int), ci)))
    return rc;
  const size_t gws[2] = {(size_t)d->n_q * (size_t)d->heads_kv,
                         (size_t)d->batch};
  return clattn__launch(ctx, kern, 2, gws, NULL, ev ? ev->num_wait : 0,
                        ev ? ev->wait : NULL, ev ? ev->out : NULL);
}

/* Three rows a sequence into pages of 4 (odd head dims, GQA's two KV
 * heads): a sequence shorter than the rows, one whose rows cross a page
 * boundary, one that starts a new page; pages to spare. */
static void check_case(const void *desc, clattn__check_case *c) {
  clattn_paged_desc *s = (clattn_paged_desc *)c->desc;
  *s = *(const clattn_paged_desc *)desc;
  s->batch = 3;
  s->n_q = 3;
  s->heads_q = 4;
  s->heads_kv = 2;
  s->page_size = 4;
  s->max_blocks = 5;
  s->num_blocks = 13;
  s->unchecked = 0;
  c->ints[0] = 2;
  c->ints[1] = 11;
  c->ints[2] = 13;
}

static void reference(const void *desc, void *const *b) {
  const clattn_paged_desc *d = desc;
  const ref_paged a = {.b = d->batch,
                       .n = d->n_q,
                       .hq = d->heads_q,
                       .hkv = d->heads_kv,
                       .dk = d->head_dim_k,
                       .dv = d->head_dim_v,
                       .num_blocks = d->num_blocks,
                       .page_size = d->page_size,
                       .max_blocks = d->max_blocks,
                       .scale = 1.0};
  const int i8 = is_i8(d);
  ref_paged_append(&a, b[K_NEW], b[V_NEW], b[BLOCK_TABLE], b[KV_LENS],
                   b[K_CACHE], b[V_CACHE], i8 ? b[K_SCALE] : NULL,
                   i8 ? b[V_SCALE] : NULL);
}

const clattn__family clattn__family_paged_append = {
    .name = "paged-append",
    .summary = "new K/V rows written into the pages a block table names, "
               "int8 caches quantized on write (clattn_paged_append)",
    .api = "clattn_paged_append",
    .source = "paged_append.cl",
    .desc_size = sizeof(clattn_paged_desc),
    .plan_size = sizeof(plan),
    .nbufs = NBUFS,
    .tune_method = 1,
    .standard_shapes = NULL,
    .check = check,
    .buffers = buffers,
    .full_int = clattn__paged_full_int,
    .fill_ints = fill_ints,
    .check_ints = check_ints,
    .ints_unchecked = clattn__paged_ints_unchecked,
    .shape_class = shape_class,
    .shape_keys = SHAPE_KEYS,
    .parse_shape = parse_shape,
    .plan = plan_none,
    .resolved = clattn__resolved_none,
    .space = space,
    .cost = cost,
    .enqueue = enqueue,
    .check_case = check_case,
    .reference = reference,
};
