/* append.c - the KV-append family: n_new rows per sequence written into a
 * cache in place (clattn_kv_append).  It has no tunables: its one
 * candidate is the default. */
#include "family/common.h"
#include "family/decode.h"
#include "family/family.h"
#include "reference/ref.h"

#include <stdio.h>
#include <string.h>

enum { K_NEW, V_NEW, POS, K_CACHE, V_CACHE };

#define SHAPE_KEYS                                                             \
  "batch kv-seq heads kv-heads head-dim head-dim-v dtype layout new"

static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn__append_desc *a = desc;
  clattn_status rc = clattn__check_cache(&a->cache, why, cap);
  if (rc)
    return rc;
  if (a->n_new < 1) {
    snprintf(why, cap, "n_new (%d) must be >= 1", a->n_new);
    return CLATTN_ERR_SHAPE;
  }
  const clattn_decode_desc *d = &a->cache;
  const size_t es = clattn_dtype_size(d->dtype);
  if (!clattn__bytes(es, d->batch, a->n_new, d->heads_kv, d->head_dim_k) ||
      !clattn__bytes(es, d->batch, a->n_new, d->heads_kv, d->head_dim_v)) {
    snprintf(why, cap, "tensor sizes overflow");
    return CLATTN_ERR_SHAPE;
  }
  return CLATTN_OK;
}

static void buffers(const void *desc, clattn__buf_spec *b) {
  const clattn__append_desc *a = desc;
  const clattn_decode_desc *d = &a->cache;
  const clattn_dtype dt = d->dtype;
  const size_t B = (size_t)d->batch, n = (size_t)a->n_new,
               m = (size_t)d->capacity;
  b[K_NEW] = (clattn__buf_spec){
      "k_new", CLATTN__BUF_IN, B * n * d->heads_kv * d->head_dim_k, dt, 0, 0};
  b[V_NEW] = (clattn__buf_spec){
      "v_new", CLATTN__BUF_IN, B * n * d->heads_kv * d->head_dim_v, dt, 0, 0};
  b[POS] = (clattn__buf_spec){"pos", CLATTN__BUF_INTS, B, CLATTN_F32, 0, 0};
  b[K_CACHE] = (clattn__buf_spec){
      "k_cache", CLATTN__BUF_INOUT, B * m * d->heads_kv * d->head_dim_k, dt, 0,
      0};
  b[V_CACHE] = (clattn__buf_spec){
      "v_cache", CLATTN__BUF_INOUT, B * m * d->heads_kv * d->head_dim_v, dt, 0,
      0};
}

int clattn__append_full_int(const void *desc) {
  (void)desc;
  return 0;
}

static void shape_class(const void *desc, char *buf, size_t cap) {
  const clattn__append_desc *a = desc;
  char cache[96];
  clattn__shape_class_decode(&a->cache, cache, sizeof cache);
  snprintf(buf, cap, "%s t%ld", cache, clattn__pow2_round(a->n_new));
}

static clattn_status parse_shape(const char *text, void *desc, char *why,
                                 size_t cap) {
  clattn__append_desc a = {{0}, 1};
  clattn_status rc = clattn__parse_cache(text, SHAPE_KEYS, &a.cache, why, cap);
  if (rc == CLATTN_OK)
    rc = clattn__shape_int(text, "new", 1, 1 << 30, &a.n_new, why, cap);
  if (rc == CLATTN_OK)
    *(clattn__append_desc *)desc = a;
  return rc;
}

/* The cache description's params are the decode's, not the append's. */
static const clattn_params *params(const void *desc) {
  (void)desc;
  return NULL;
}

static void with_params(const void *desc, const clattn_params *p, void *copy) {
  clattn__append_desc *c = copy;
  *c = *(const clattn__append_desc *)desc;
  c->cache.params = p;
}

clattn_status clattn__append_plan_none(const clattn__target *t,
                                      const void *desc, void *pl, char *why,
                                      size_t cap) {
  (void)t;
  (void)desc;
  (void)why;
  (void)cap;
  memset(pl, 0, sizeof(clattn__append_plan));
  return CLATTN_OK;
}

clattn_params clattn__append_resolved(const void *pl) {
  (void)pl;
  return (clattn_params){sizeof(clattn_params), 0, 0, 0, 0, 0, 0, 0};
}

clattn_status clattn__append_space(const clattn__target *t,
                                  const void *desc, clattn__space *s) {
  (void)t;
  (void)desc;
  clattn__space_init_params(s);
  const int none[CLATTN__NPARAMS] = {0};
  s->def = clattn__space_add(s, none);
  return s->def < 0 ? CLATTN_ERR_NOMEM : CLATTN_OK;
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *pl,
                             int auto_wg, const cl_mem *bufs,
                             const clattn_events *ev) {
  const clattn__append_desc *a = desc;
  const clattn_decode_desc *d = &a->cache;
  const int hkv = d->heads_kv, dk = d->head_dim_k, dv = d->head_dim_v;
  const clattn__append_plan *plan = pl;
  clattn_status rc;
  (void)auto_wg;
  clattn__defs df = {0};
  clattn__def(&df, "DTYPE", (int)d->dtype);
  clattn__def(&df, "DK", dk);
  clattn__def(&df, "DV", dv);
  clattn__def(&df, "KV_SAME", plan->kv_same);
  cl_kernel kern = NULL;
  if ((rc = clattn__kernel_defs(ctx, "decode.cl", &df, "kv_append", &kern)))
    return rc;
  const clattn__strides ks =
      clattn__layout_strides(d->cache_layout, d->capacity, hkv, dk);
  const clattn__strides vs =
      clattn__layout_strides(d->cache_layout, d->capacity, hkv, dv);
  const cl_int ci[3] = {a->n_new, d->capacity, hkv};
  const long st[6] = {ks.b, ks.s, ks.h, vs.b, vs.s, vs.h};
  cl_uint n = 0;
  if ((rc = clattn__args(ctx, kern, &n, 5, sizeof(cl_mem), bufs)) ||
      (rc = clattn__scalars(ctx, kern, &n, 3, sizeof(cl_int), ci)) ||
      (rc = clattn__scalars(ctx, kern, &n, 6, sizeof(cl_long), st)))
    return rc;
  const size_t gws[2] = {(size_t)a->n_new * hkv, (size_t)d->batch};
  return clattn__launch(ctx, kern, 2, gws, NULL, ev ? ev->num_wait : 0,
                        ev ? ev->wait : NULL, ev ? ev->out : NULL);
}

/* Three rows into a cache of 37, one sequence's last row past the end. */
static void check_case(const void *desc, clattn__check_case *c) {
  clattn__append_desc *s = (clattn__append_desc *)c->desc;
  *s = *(const clattn__append_desc *)desc;
  s->cache.params = NULL;
  s->cache.batch = 2;
  s->cache.capacity = 37;
  s->cache.heads_kv = 2;
  s->cache.heads_q = 2;
  s->n_new = 3;
  c->ints[0] = 5;
  c->ints[1] = 35;
}

static void reference(const void *desc, void *const *b) {
  const clattn__append_desc *a = desc;
  const clattn_decode_desc *d = &a->cache;
  ref_kv_append(d->batch, d->capacity, d->heads_kv, d->head_dim_k,
                d->head_dim_v, (int)d->cache_layout, a->n_new, b[POS], b[K_NEW],
                b[V_NEW], b[K_CACHE], b[V_CACHE]);
}

const clattn__family clattn__family_append = {
    .name = "append",
    .summary = "new K/V rows written into a cache in place "
               "(clattn_kv_append)",
    .api = "clattn_kv_append",
    .source = "decode.cl",
    .desc_size = sizeof(clattn__append_desc),
    .plan_size = sizeof(clattn__append_plan),
    .nbufs = 5,
    .tune_method = 1,
    .standard_shapes = NULL,
    .check = check,
    .buffers = buffers,
    .full_int = clattn__append_full_int,
    .shape_class = shape_class,
    .shape_keys = SHAPE_KEYS,
    .parse_shape = parse_shape,
    .params = params,
    .with_params = with_params,
    .plan = clattn__append_plan_none,
    .resolved = clattn__append_resolved,
    .space = clattn__append_space,
    .cost = clattn__append_cost,
    .enqueue = enqueue,
    .check_case = check_case,
    .reference = reference,
};
