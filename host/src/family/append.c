/* append.c - the KV-append family: n_new rows per sequence written into a
 * cache in place, heads_k key heads and heads_v value heads (append.h), for
 * clattn_kv_append, clattn_talking_heads_append and every layer's cache.
 * It has no tunables: its one candidate is the default.  Its former name
 * "talking-heads-append" is an alias in the registry. */
#include "family/append.h"
#include "family/common.h"
#include "family/family.h"
#include "model/model.h"
#include "reference/ref.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { K_NEW, V_NEW, POS, K_CACHE, V_CACHE };

/* heads-k and heads-v default to kv-heads, which defaults to heads: a GQA
 * cache's shape text and a talking-heads cache's both read as they did in
 * their own families. */
#define SHAPE_KEYS                                                             \
  "batch kv-seq heads kv-heads heads-k heads-v head-dim head-dim-v dtype "     \
  "layout new"

clattn__append_desc clattn__append_of_decode(const clattn_decode_desc *d,
                                             int n_new) {
  const clattn__append_desc a = {d->batch,    d->capacity,     d->heads_kv,
                                 d->heads_kv, d->head_dim_k,   d->head_dim_v,
                                 d->dtype,    d->cache_layout, n_new};
  return a;
}

clattn__append_desc clattn__append_of_th(const clattn_th_decode_desc *d,
                                         int n_new) {
  const clattn__append_desc a = {d->batch,   d->capacity,     d->heads_k,
                                 d->heads_v, d->head_dim_k,   d->head_dim_v,
                                 d->dtype,   d->cache_layout, n_new};
  return a;
}

static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn__append_desc *a = desc;
  clattn_status rc;
  if (a->batch < 1 || a->capacity < 1) {
    snprintf(why, cap, "batch (%d) and capacity (%d) must be >= 1", a->batch,
             a->capacity);
    return CLATTN_ERR_SHAPE;
  }
  if (a->heads_k < 1 || a->heads_v < 1) {
    snprintf(why, cap, "heads_k (%d) and heads_v (%d) must be >= 1", a->heads_k,
             a->heads_v);
    return CLATTN_ERR_SHAPE;
  }
  /* one head of each: the common checks of head dims and dtype */
  if ((rc = clattn__check_heads(1, 1, a->head_dim_k, a->head_dim_v, a->dtype,
                                why, cap)))
    return rc;
  if (!clattn__is_layout(a->cache_layout)) {
    snprintf(why, cap, "unknown cache layout");
    return CLATTN_ERR_INVALID_ARG;
  }
  if (a->n_new < 1) {
    snprintf(why, cap, "n_new (%d) must be >= 1", a->n_new);
    return CLATTN_ERR_SHAPE;
  }
  /* the kernel's first index is (row, head) as an int */
  const int hm = a->heads_k > a->heads_v ? a->heads_k : a->heads_v;
  const size_t es = clattn_dtype_size(a->dtype);
  if ((rc = clattn__check_tensor("k_cache", es, a->batch, a->capacity,
                                 a->heads_k, a->head_dim_k, why, cap)) ||
      (rc = clattn__check_tensor("v_cache", es, a->batch, a->capacity,
                                 a->heads_v, a->head_dim_v, why, cap)) ||
      (rc = clattn__check_tensor("k_new", es, a->batch, a->n_new, a->heads_k,
                                 a->head_dim_k, why, cap)) ||
      (rc = clattn__check_tensor("v_new", es, a->batch, a->n_new, a->heads_v,
                                 a->head_dim_v, why, cap)) ||
      (rc = clattn__check_int32("n_new x max(heads_k, heads_v)",
                                (long long)a->n_new * hm, why, cap)))
    return rc;
  return CLATTN_OK;
}

static void buffers(const void *desc, clattn__buf_spec *b) {
  const clattn__append_desc *a = desc;
  const clattn_dtype dt = a->dtype;
  const size_t B = (size_t)a->batch, n = (size_t)a->n_new,
               m = (size_t)a->capacity;
  const size_t kr = (size_t)a->heads_k * a->head_dim_k,
               vr = (size_t)a->heads_v * a->head_dim_v;
  b[K_NEW] = (clattn__buf_spec){"k_new", CLATTN__BUF_IN, B * n * kr, dt, 0, 0};
  b[V_NEW] = (clattn__buf_spec){"v_new", CLATTN__BUF_IN, B * n * vr, dt, 0, 0};
  b[POS] = (clattn__buf_spec){"pos", CLATTN__BUF_INTS, B, CLATTN_F32, 0, 0};
  b[K_CACHE] =
      (clattn__buf_spec){"k_cache", CLATTN__BUF_INOUT, B * m * kr, dt, 0, 0};
  b[V_CACHE] =
      (clattn__buf_spec){"v_cache", CLATTN__BUF_INOUT, B * m * vr, dt, 0, 0};
}

/* A full call writes at the cache's start. */
static int full_int(const void *desc) {
  (void)desc;
  return 0;
}

static void shape_class(const void *desc, char *buf, size_t cap) {
  const clattn__append_desc *a = desc;
  snprintf(buf, cap, "%s k%d v%d hk%d hv%d b%ld m%ld %s t%ld",
           clattn__dtype_name(a->dtype), a->head_dim_k, a->head_dim_v,
           a->heads_k, a->heads_v, clattn__pow2_round(a->batch),
           clattn__pow2_round(a->capacity),
           a->cache_layout == CLATTN_BHSD ? "bhsd" : "bshd",
           clattn__pow2_round(a->n_new));
}

static clattn_status parse_shape(const char *text, void *desc, char *why,
                                 size_t cap) {
  clattn__attn_shape s = {1, 0,          0,           0,          0,
                          0, CLATTN_F32, CLATTN_BHSD, CLATTN_BHSD};
  int heads = 0, kv_heads = 0, heads_k = 0, heads_v = 0, n_new = 1;
  clattn_status rc;
  if ((rc = clattn__shape_attn(text, SHAPE_KEYS, &s, why, cap)) ||
      (rc = clattn__shape_int(text, "heads", 1, 1 << 16, &heads, why, cap)) ||
      (rc = clattn__shape_int(text, "kv-heads", 1, 1 << 16, &kv_heads, why,
                              cap)) ||
      (rc = clattn__shape_int(text, "heads-k", 1, 1 << 16, &heads_k, why,
                              cap)) ||
      (rc = clattn__shape_int(text, "heads-v", 1, 1 << 16, &heads_v, why,
                              cap)) ||
      (rc = clattn__shape_int(text, "new", 1, 1 << 30, &n_new, why, cap)))
    return rc;
  kv_heads = kv_heads ? kv_heads : heads;
  heads_k = heads_k ? heads_k : kv_heads;
  heads_v = heads_v ? heads_v : kv_heads;
  if (s.n_kv < 1 || heads_k < 1 || heads_v < 1 || s.head_dim_k < 1) {
    snprintf(why, cap,
             "the shape needs kv-seq=, head-dim= and heads= (or kv-heads=, "
             "or heads-k= and heads-v=)");
    return CLATTN_ERR_INVALID_ARG;
  }
  *(clattn__append_desc *)desc =
      (clattn__append_desc){.batch = s.batch,
                            .capacity = s.n_kv,
                            .heads_k = heads_k,
                            .heads_v = heads_v,
                            .head_dim_k = s.head_dim_k,
                            .head_dim_v = s.head_dim_v,
                            .dtype = s.dtype,
                            .cache_layout = s.q_layout,
                            .n_new = n_new};
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
  memset(pl, 0, sizeof(clattn__append_plan));
  return CLATTN_OK;
}

static clattn_status space(const clattn__target *t, const void *desc,
                           clattn__space *s) {
  (void)t;
  (void)desc;
  return clattn__space_none(&clattn__family_append, s);
}

/* kv_append (cl/decode.cl): each in-range (row, head) item reads its
 * position, then copies the key row of a key head and the value row of a
 * value head (none with kv_same: V is K). */
static clattn_status cost(const void *desc, const void *plan, const int *pos,
                          const clattn_profile *prof, clattn_prediction *out,
                          double *dram_reads) {
  const clattn__append_desc *a = desc;
  const clattn__append_plan *pl = plan;
  (void)prof;
  const double es = (double)clattn_dtype_size(a->dtype);
  const double row =
      es * ((double)a->heads_k * a->head_dim_k +
            (pl->kv_same ? 0.0 : (double)a->heads_v * a->head_dim_v));
  const double rows = clattn__append_rows(pos, a->batch, a->n_new, a->capacity);
  const int hm = a->heads_k > a->heads_v ? a->heads_k : a->heads_v;
  clattn_cost *c = clattn__model_kernel(out, "kv_append");
  clattn__model_core(out, c)->group_items = 0; /* launched without one */
  const double items = (double)a->batch * a->n_new * hm;
  c->bytes_read = 4.0 * items + rows * row;
  c->bytes_written = rows * row;
  c->bytes_compulsory = c->bytes_read + c->bytes_written;
  c->bytes_dram = c->bytes_compulsory;
  dram_reads[0] = c->bytes_read;
  return CLATTN_OK;
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *pl,
                             int auto_wg, const cl_mem *bufs,
                             const clattn_events *ev) {
  const clattn__append_desc *a = desc;
  const int hk = a->heads_k, hv = a->heads_v;
  const clattn__append_plan *plan = pl;
  clattn_status rc;
  (void)auto_wg;
  clattn__defs df = {0};
  clattn__def(&df, "DTYPE", (int)a->dtype);
  clattn__def(&df, "DK", a->head_dim_k);
  clattn__def(&df, "DV", a->head_dim_v);
  clattn__def(&df, "KV_SAME", plan->kv_same);
  cl_kernel kern = NULL;
  if ((rc = clattn__kernel_defs(ctx, "decode.cl", &df, "kv_append", &kern)))
    return rc;
  const clattn__strides ks =
      clattn__layout_strides(a->cache_layout, a->capacity, hk, a->head_dim_k);
  const clattn__strides vs =
      clattn__layout_strides(a->cache_layout, a->capacity, hv, a->head_dim_v);
  const cl_int ci[4] = {a->n_new, a->capacity, hk, hv};
  const long st[6] = {ks.b, ks.s, ks.h, vs.b, vs.s, vs.h};
  cl_uint n = 0;
  if ((rc = clattn__args(ctx, kern, &n, 5, sizeof(cl_mem), bufs)) ||
      (rc = clattn__scalars(ctx, kern, &n, 4, sizeof(cl_int), ci)) ||
      (rc = clattn__scalars(ctx, kern, &n, 6, sizeof(cl_long), st)))
    return rc;
  const size_t gws[2] = {(size_t)a->n_new * (size_t)(hk > hv ? hk : hv),
                         (size_t)a->batch};
  return clattn__launch(ctx, kern, 2, gws, NULL, ev ? ev->num_wait : 0,
                        ev ? ev->wait : NULL, ev ? ev->out : NULL);
}

/* Three rows into a cache of 37, one sequence's last row past the end,
 * more value heads than key heads. */
static void check_case(const void *desc, clattn__check_case *c) {
  clattn__append_desc *s = (clattn__append_desc *)c->desc;
  *s = *(const clattn__append_desc *)desc;
  s->batch = 2;
  s->capacity = 37;
  s->heads_k = 2;
  s->heads_v = 3;
  s->n_new = 3;
  c->ints[0] = 5;
  c->ints[1] = 35;
}

static void reference(const void *desc, void *const *b) {
  const clattn__append_desc *a = desc;
  ref_kv_append(a->batch, a->capacity, a->heads_k, a->heads_v, a->head_dim_k,
                a->head_dim_v, (int)a->cache_layout, a->n_new, b[POS], b[K_NEW],
                b[V_NEW], b[K_CACHE], b[V_CACHE]);
}

const clattn__family clattn__family_append = {
    .name = "append",
    .summary = "new K/V rows written into a cache in place, heads_k key and "
               "heads_v value heads (clattn_kv_append, "
               "clattn_talking_heads_append)",
    .api = "clattn_kv_append, clattn_talking_heads_append",
    .source = "decode.cl",
    .desc_size = sizeof(clattn__append_desc),
    .plan_size = sizeof(clattn__append_plan),
    .nbufs = 5,
    .tune_method = 1,
    .standard_shapes = NULL,
    .check = check,
    .buffers = buffers,
    .full_int = full_int,
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
