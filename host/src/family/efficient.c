/* efficient.c - the families of Efficient attention's core (Hosseini &
 * Hosseini, spec 7): K and V are one tensor, the head slices of X.  Each
 * is its base family (prefill, decode, the cache's append) with one buffer
 * where the base has K and V, and a plan whose kv_same makes the kernels
 * read each row once for both (cl/attention.cl and cl/decode.cl KV_SAME),
 * which the model counts so. */
#include "family/append.h"
#include "family/attn_opts.h"
#include "family/common.h"
#include "family/decode.h"
#include "family/family.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* A base family and how its buffers map onto the K == V family's:
 * base buffer i is buffer map[i] here (K and V map to one). */
typedef struct kv_same_map {
  const clattn__family *base;
  int map[CLATTN__MAX_BUFS];
  const char *name[CLATTN__MAX_BUFS]; /* this family's buffer names */
} kv_same_map;

static const kv_same_map prefill_map = {
    &clattn__family_prefill, {0, 1, 1, 2, 3}, {"q", "x", "kv_lens", "o"}};
static const kv_same_map decode_map = {
    &clattn__family_decode, {0, 1, 1, 2, 3}, {"q", "x_cache", "lens", "o"}};
static const kv_same_map append_map = {
    &clattn__family_append, {0, 0, 1, 2, 2}, {"x_new", "pos", "x_cache"}};

static void map_buffers(const kv_same_map *m, const void *desc,
                        clattn__buf_spec *out) {
  clattn__buf_spec base[CLATTN__MAX_BUFS];
  int seen[CLATTN__MAX_BUFS] = {0};
  m->base->buffers(desc, base);
  for (int i = 0; i < m->base->nbufs; i++) {
    const int j = m->map[i];
    if (seen[j]++)
      continue;
    out[j] = base[i];
    out[j].name = m->name[j];
  }
}

static clattn_status map_enqueue(const kv_same_map *m, clattn_ctx *ctx,
                                 const void *desc, void *plan, int auto_wg,
                                 const cl_mem *bufs, const clattn_events *ev) {
  cl_mem base[CLATTN__MAX_BUFS];
  for (int i = 0; i < m->base->nbufs; i++)
    base[i] = bufs[m->map[i]];
  return m->base->enqueue(ctx, desc, plan, auto_wg, base, ev);
}

static void map_reference(const kv_same_map *m, const void *desc,
                          void *const *bufs) {
  void *base[CLATTN__MAX_BUFS];
  for (int i = 0; i < m->base->nbufs; i++)
    base[i] = bufs[m->map[i]];
  m->base->reference(desc, base);
}

static clattn_status same_dims(int dk, int dv, char *why, size_t cap) {
  if (dk == dv)
    return CLATTN_OK;
  snprintf(why, cap,
           "K and V are one tensor here: head-dim-v (%d) must equal "
           "head-dim (%d)",
           dv, dk);
  return CLATTN_ERR_SHAPE;
}

/* The operations that are the base family's, called through it (a member
 * of another object is no constant initializer in C). */
#define FORWARD_OPS(p, B)                                                      \
  static int p##_full_int(const void *d) { return B.full_int(d); }             \
  static void p##_shape_class(const void *d, char *buf, size_t cap) {          \
    B.shape_class(d, buf, cap);                                                \
  }                                                                            \
  static clattn_status p##_parse_shape(const char *text, void *d, char *why,   \
                                       size_t cap) {                           \
    return B.parse_shape(text, d, why, cap);                                   \
  }                                                                            \
  static clattn__params p##_resolved(const void *pl) {                         \
    return B.resolved(pl);                                                     \
  }                                                                            \
  static clattn_status p##_space(const clattn__target *t, const void *d,       \
                                 clattn__space *s) {                           \
    return B.space(t, d, s);                                                   \
  }                                                                            \
  static clattn_status p##_cost(const void *d, const void *pl,                 \
                                const int *ints, const clattn_profile *prof,   \
                                clattn_prediction *out, double *dram) {        \
    return B.cost(d, pl, ints, prof, out, dram);                               \
  }                                                                            \
  static void p##_buffers(const void *d, clattn__buf_spec *out) {              \
    map_buffers(&p##_map, d, out);                                             \
  }                                                                            \
  static clattn_status p##_enqueue(clattn_ctx *ctx, const void *d, void *pl,   \
                                   int auto_wg, const cl_mem *bufs,            \
                                   const clattn_events *ev) {                  \
    return map_enqueue(&p##_map, ctx, d, pl, auto_wg, bufs, ev);               \
  }                                                                            \
  static void p##_reference(const void *d, void *const *bufs) {                \
    map_reference(&p##_map, d, bufs);                                          \
  }

/* The base families' descriptions, with their options. */
static void prefill_set_options(void *d, clattn__opts o) {
  CLATTN__OPTS_PUT((clattn_attn_desc *)d, o);
}
static void decode_set_options(void *d, clattn__opts o) {
  CLATTN__OPTS_PUT((clattn_decode_desc *)d, o);
}

FORWARD_OPS(prefill, clattn__family_prefill)
FORWARD_OPS(decode, clattn__family_decode)
FORWARD_OPS(append, clattn__family_append)

/* ------------------------------------------------------------ prefill */

static clattn_status prefill_check(const void *desc, char *why, size_t cap) {
  const clattn_attn_desc *d = desc;
  clattn_status rc = clattn__family_prefill.check(desc, why, cap);
  return rc ? rc : same_dims(d->head_dim_k, d->head_dim_v, why, cap);
}

static clattn_status prefill_plan(const clattn__target *t, const void *desc,
                                  const clattn__params *p, void *plan, char *why,
                                  size_t cap) {
  clattn_status rc = clattn__family_prefill.plan(t, desc, p, plan, why, cap);
  ((clattn__prefill_plan *)plan)->kv_same = 1;
  return rc;
}

static int prefill_fits(const clattn__target *t, const void *desc,
                        const void *plan, char *why, size_t cap) {
  return clattn__family_prefill.fits(t, desc, plan, why, cap);
}

static void prefill_check_case(const void *desc, clattn__check_case *c) {
  clattn__family_prefill.check_case(desc, c);
  clattn_attn_desc *s = (clattn_attn_desc *)c->desc;
  s->head_dim_v = s->head_dim_k;
}

static const char *const prefill_standard[] = {
    "batch=1 seq=512 heads=8 head-dim=64 causal=1", NULL};

const clattn__family clattn__family_efficient = {
    .name = "efficient-prefill",
    .summary = "fused attention with K == V, one tensor X (Efficient "
               "attention's core; clattn_layer_create_efficient)",
    .api = "clattn_layer_prefill (Efficient)",
    .source = "attention.cl",
    .desc_size = sizeof(clattn_attn_desc),
    .plan_size = sizeof(clattn__prefill_plan),
    .nbufs = 4,
    .tune_method = 1,
    .standard_shapes = prefill_standard,
    .check = prefill_check,
    .buffers = prefill_buffers,
    .full_int = prefill_full_int,
    .shape_class = prefill_shape_class,
    .shape_keys = "batch seq kv-seq heads kv-heads head-dim head-dim-v dtype "
                  "causal layout kv-layout",
    .parse_shape = prefill_parse_shape,
    .set_options = prefill_set_options,
    CLATTN__TUNABLES(clattn__prefill_tunable_table),
    .plan = prefill_plan,
    .fits = prefill_fits,
    .resolved = prefill_resolved,
    .space = prefill_space,
    .cost = prefill_cost,
    .enqueue = prefill_enqueue,
    .check_case = prefill_check_case,
    .reference = prefill_reference,
};

/* ------------------------------------------------------------- decode */

static clattn_status decode_check(const void *desc, char *why, size_t cap) {
  const clattn_decode_desc *d = desc;
  clattn_status rc = clattn__family_decode.check(desc, why, cap);
  return rc ? rc : same_dims(d->head_dim_k, d->head_dim_v, why, cap);
}

static clattn_status decode_plan(const clattn__target *t, const void *desc,
                                 const clattn__params *p, void *plan, char *why,
                                 size_t cap) {
  clattn_status rc = clattn__family_decode.plan(t, desc, p, plan, why, cap);
  ((clattn__decode_plan *)plan)->kv_same = 1;
  return rc;
}

static int decode_fits(const clattn__target *t, const void *desc,
                       const void *plan, char *why, size_t cap) {
  return clattn__family_decode.fits(t, desc, plan, why, cap);
}

static void decode_check_case(const void *desc, clattn__check_case *c) {
  clattn__family_decode.check_case(desc, c);
  clattn_decode_desc *s = (clattn_decode_desc *)c->desc;
  s->head_dim_v = s->head_dim_k;
}

static const char *const decode_standard[] = {
    "batch=1 kv-seq=8192 heads=8 head-dim=64", NULL};

const clattn__family clattn__family_efficient_decode = {
    .name = "efficient-decode",
    .summary = "one query per sequence over a cache of X alone (K == V), "
               "split-KV (Efficient attention's decode)",
    .api = "clattn_layer_decode (Efficient)",
    .source = "decode.cl",
    .desc_size = sizeof(clattn_decode_desc),
    .plan_size = sizeof(clattn__decode_plan),
    .nbufs = 4,
    .tune_method = 1,
    .standard_shapes = decode_standard,
    .check = decode_check,
    .buffers = decode_buffers,
    .full_int = decode_full_int,
    .shape_class = decode_shape_class,
    .shape_keys = "batch kv-seq heads kv-heads head-dim head-dim-v dtype "
                  "layout " CLATTN__OPTS_SHAPE_KEYS,
    .parse_shape = decode_parse_shape,
    .set_options = decode_set_options,
    CLATTN__TUNABLES(clattn__decode_tunable_table),
    .plan = decode_plan,
    .fits = decode_fits,
    .resolved = decode_resolved,
    .space = decode_space,
    .cost = decode_cost,
    .enqueue = decode_enqueue,
    .check_case = decode_check_case,
    .reference = decode_reference,
};

/* ------------------------------------------------------------- append */

static clattn_status append_check(const void *desc, char *why, size_t cap) {
  const clattn__append_desc *a = desc;
  clattn_status rc = clattn__family_append.check(desc, why, cap);
  if (rc == CLATTN_OK && a->heads_k != a->heads_v) {
    snprintf(why, cap,
             "K and V are one tensor here: heads-v (%d) must equal heads-k "
             "(%d)",
             a->heads_v, a->heads_k);
    rc = CLATTN_ERR_SHAPE;
  }
  return rc ? rc : same_dims(a->head_dim_k, a->head_dim_v, why, cap);
}

static clattn_status append_plan(const clattn__target *t, const void *desc,
                                 const clattn__params *p, void *plan, char *why,
                                 size_t cap) {
  clattn_status rc = clattn__family_append.plan(t, desc, p, plan, why, cap);
  ((clattn__append_plan *)plan)->kv_same = 1;
  return rc;
}

static void append_check_case(const void *desc, clattn__check_case *c) {
  clattn__family_append.check_case(desc, c);
  clattn__append_desc *s = (clattn__append_desc *)c->desc;
  s->heads_v = s->heads_k;
  s->head_dim_v = s->head_dim_k;
}

const clattn__family clattn__family_efficient_append = {
    .name = "efficient-append",
    .summary = "new X rows written into an Efficient attention cache (K == "
               "V) in place",
    .api = "clattn_layer_decode (Efficient)",
    .source = "decode.cl",
    .desc_size = sizeof(clattn__append_desc),
    .plan_size = sizeof(clattn__append_plan),
    .nbufs = 3,
    .tune_method = 1,
    .standard_shapes = NULL,
    .check = append_check,
    .buffers = append_buffers,
    .full_int = append_full_int,
    .shape_class = append_shape_class,
    .shape_keys =
        "batch kv-seq heads kv-heads head-dim head-dim-v dtype layout new",
    .parse_shape = append_parse_shape,
    .plan = append_plan,
    .resolved = append_resolved,
    .space = append_space,
    .cost = append_cost,
    .enqueue = append_enqueue,
    .check_case = append_check_case,
    .reference = append_reference,
};
