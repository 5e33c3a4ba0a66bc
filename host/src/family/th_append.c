/* th_append.c - the talking-heads KV-append family: n_new rows per
 * sequence written into a cache in place, heads_k key heads and heads_v
 * value heads (clattn_talking_heads_append).  It has no tunables: its one
 * candidate is the default. */
#include "family/common.h"
#include "family/decode.h"
#include "family/family.h"
#include "family/th_decode.h"
#include "reference/ref_th.h"

#include <stdio.h>
#include <string.h>

enum { K_NEW, V_NEW, POS, K_CACHE, V_CACHE };

#define SHAPE_KEYS                                                             \
  "batch kv-seq heads-k heads heads-v head-dim head-dim-v dtype layout new"

static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn__th_append_desc *a = desc;
  clattn_status rc = clattn__th_check_cache(&a->cache, why, cap);
  if (rc)
    return rc;
  if (a->n_new < 1) {
    snprintf(why, cap, "n_new (%d) must be >= 1", a->n_new);
    return CLATTN_ERR_SHAPE;
  }
  const clattn_th_decode_desc *d = &a->cache;
  const size_t es = clattn_dtype_size(d->dtype);
  if (!clattn__bytes(es, d->batch, a->n_new, d->heads_k, d->head_dim_k) ||
      !clattn__bytes(es, d->batch, a->n_new, d->heads_v, d->head_dim_v) ||
      !clattn__bytes(1, a->n_new, CLATTN_TH_MAX_HEADS, 1, 1) ||
      (long)a->n_new * CLATTN_TH_MAX_HEADS > 0x7fffffffL) {
    snprintf(why, cap, "tensor sizes overflow");
    return CLATTN_ERR_SHAPE;
  }
  return CLATTN_OK;
}

static void buffers(const void *desc, clattn__buf_spec *b) {
  const clattn__th_append_desc *a = desc;
  const clattn_th_decode_desc *d = &a->cache;
  const clattn_dtype dt = d->dtype;
  const size_t B = (size_t)d->batch, n = (size_t)a->n_new,
               m = (size_t)d->capacity;
  const size_t kr = (size_t)d->heads_k * d->head_dim_k,
               vr = (size_t)d->heads_v * d->head_dim_v;
  b[K_NEW] = (clattn__buf_spec){"k_new", CLATTN__BUF_IN, B * n * kr, dt, 0, 0};
  b[V_NEW] = (clattn__buf_spec){"v_new", CLATTN__BUF_IN, B * n * vr, dt, 0, 0};
  b[POS] = (clattn__buf_spec){"pos", CLATTN__BUF_INTS, B, CLATTN_F32, 0, 0};
  b[K_CACHE] = (clattn__buf_spec){"k_cache", CLATTN__BUF_INOUT, B * m * kr,
                                  dt, 0, 0};
  b[V_CACHE] = (clattn__buf_spec){"v_cache", CLATTN__BUF_INOUT, B * m * vr,
                                  dt, 0, 0};
}

static void shape_class(const void *desc, char *buf, size_t cap) {
  const clattn__th_append_desc *a = desc;
  char cache[96];
  clattn__th_shape_class(&a->cache, cache, sizeof cache);
  snprintf(buf, cap, "%s t%ld", cache, clattn__pow2_round(a->n_new));
}

static clattn_status parse_shape(const char *text, void *desc, char *why,
                                 size_t cap) {
  clattn__th_append_desc a = {{0}, 1};
  clattn_status rc =
      clattn__th_parse_cache(text, SHAPE_KEYS, &a.cache, why, cap);
  if (rc == CLATTN_OK)
    rc = clattn__shape_int(text, "new", 1, 1 << 24, &a.n_new, why, cap);
  if (rc == CLATTN_OK)
    *(clattn__th_append_desc *)desc = a;
  return rc;
}

/* The cache description's params are the decode's, not the append's. */
static const clattn_params *params(const void *desc) {
  (void)desc;
  return NULL;
}

static void with_params(const void *desc, const clattn_params *p, void *copy) {
  clattn__th_append_desc *c = copy;
  *c = *(const clattn__th_append_desc *)desc;
  c->cache.params = p;
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *pl,
                             int auto_wg, const cl_mem *bufs,
                             const clattn_events *ev) {
  const clattn__th_append_desc *a = desc;
  const clattn_th_decode_desc *d = &a->cache;
  const int hk = d->heads_k, hv = d->heads_v;
  clattn_status rc;
  (void)pl;
  (void)auto_wg;
  clattn__defs df = {0};
  clattn__def(&df, "DTYPE", (int)d->dtype);
  clattn__def(&df, "DK", d->head_dim_k);
  clattn__def(&df, "DV", d->head_dim_v);
  clattn__def(&df, "HK", hk);
  clattn__def(&df, "HV", hv);
  cl_kernel kern = NULL;
  if ((rc = clattn__kernel_defs(ctx, "th_decode.cl", &df, "th_kv_append",
                                &kern)))
    return rc;
  const clattn__strides ks =
      clattn__layout_strides(d->cache_layout, d->capacity, hk, d->head_dim_k);
  const clattn__strides vs =
      clattn__layout_strides(d->cache_layout, d->capacity, hv, d->head_dim_v);
  const cl_int ci[2] = {a->n_new, d->capacity};
  const long st[6] = {ks.b, ks.s, ks.h, vs.b, vs.s, vs.h};
  cl_uint n = 0;
  if ((rc = clattn__args(ctx, kern, &n, 5, sizeof(cl_mem), bufs)) ||
      (rc = clattn__scalars(ctx, kern, &n, 2, sizeof(cl_int), ci)) ||
      (rc = clattn__scalars(ctx, kern, &n, 6, sizeof(cl_long), st)))
    return rc;
  const size_t gws[2] = {(size_t)a->n_new * (size_t)(hk > hv ? hk : hv),
                         (size_t)d->batch};
  return clattn__launch(ctx, kern, 2, gws, NULL, ev ? ev->num_wait : 0,
                        ev ? ev->wait : NULL, ev ? ev->out : NULL);
}

/* Three rows into a cache of 37, one sequence's last row past the end,
 * more value heads than key heads. */
static void check_case(const void *desc, clattn__check_case *c) {
  clattn__th_append_desc *s = (clattn__th_append_desc *)c->desc;
  *s = *(const clattn__th_append_desc *)desc;
  s->cache.params = NULL;
  s->cache.batch = 2;
  s->cache.capacity = 37;
  s->cache.heads_k = 2;
  s->cache.heads = 3;
  s->cache.heads_v = 3;
  s->n_new = 3;
  c->ints[0] = 5;
  c->ints[1] = 35;
}

static void reference(const void *desc, void *const *b) {
  const clattn__th_append_desc *a = desc;
  const clattn_th_decode_desc *d = &a->cache;
  ref_th_append(d->batch, d->capacity, d->heads_k, d->heads_v, d->head_dim_k,
                d->head_dim_v, (int)d->cache_layout, a->n_new, b[POS],
                b[K_NEW], b[V_NEW], b[K_CACHE], b[V_CACHE]);
}

const clattn__family clattn__family_th_append = {
    .name = "talking-heads-append",
    .summary = "talking-heads: new K/V rows written into a cache in place "
               "(clattn_talking_heads_append)",
    .api = "clattn_talking_heads_append",
    .source = "th_decode.cl",
    .desc_size = sizeof(clattn__th_append_desc),
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
    .cost = clattn__th_append_cost,
    .enqueue = enqueue,
    .check_case = check_case,
    .reference = reference,
};
