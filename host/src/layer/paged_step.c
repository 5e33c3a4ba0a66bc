/* paged_step.c - a layer step over a paged KV pool the application owns
 * (clattn_layer_step_paged): the layer's projections around its kind's
 * paged core calls (layer.h: paged_core).  The pool is borrowed for the
 * call: never allocated, grown or retained; the application keeps the
 * block tables and lengths, so sequences join, leave and reuse pages
 * between steps without the library knowing. */
#include "call/call.h"
#include "layer/layer.h"

#include <limits.h>
#include <string.h>

/* The step's core calls, in the kind interface's order (layer.h). */
static void step_ops(int n, clattn__core_op ops[5]) {
  ops[0] = CLATTN__CORE_MIX_IN;
  ops[1] = CLATTN__CORE_APPEND;
  ops[2] = CLATTN__CORE_VALUES;
  ops[3] = n == 1 ? CLATTN__CORE_DECODE : CLATTN__CORE_PREFILL;
  ops[4] = CLATTN__CORE_MIX_OUT;
}

static int power_of_two(int v) { return v > 0 && (v & (v - 1)) == 0; }

/* One pool buffer of `bytes` (0: the sizes overflow), named as the pool's
 * field in the message. */
static clattn_status check_pool_buffer(clattn_ctx *ctx, cl_mem m, size_t bytes,
                                       const char *field) {
  char what[32] = "pool->";
  if (bytes == 0)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "paged pool: the size of %s overflows", field);
  strncat(what, field, sizeof what - strlen(what) - 1);
  return clattn__check_buffer(ctx, m, bytes, what);
}

/* The pool's fields and buffers against the layer's cache shape; the
 * messages name the pool's fields (the families' own checks, run after
 * these, would name their buffers: k_cache, ...). */
static clattn_status check_pool(clattn_layer *l, const clattn_paged_pool *p) {
  clattn_ctx *ctx = l->ctx;
  clattn_status rc;
  if (p->num_blocks < 1 || p->max_blocks < 1)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "paged pool: num_blocks %d and max_blocks %d must be "
                        ">= 1",
                        p->num_blocks, p->max_blocks);
  if (!power_of_two(p->page_size) || p->page_size > 256)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "paged pool: page_size %d is not a power of two from "
                        "1 to 256",
                        p->page_size);
  if (p->cache_dtype != CLATTN_F32 && p->cache_dtype != CLATTN_I8)
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "paged pool: cache_dtype %d: a layer's pool is "
                        "float32 (0) or int8 (CLATTN_I8)",
                        (int)p->cache_dtype);
  const int i8 = p->cache_dtype == CLATTN_I8;
  if (p->k_pool == NULL || p->v_pool == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "paged pool: NULL %s",
                        p->k_pool == NULL ? "k_pool" : "v_pool");
  if (i8 && (p->k_scale == NULL || p->v_scale == NULL))
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "paged pool: NULL %s: an int8 pool (cache_dtype "
                        "CLATTN_I8) needs k_scale and v_scale",
                        p->k_scale == NULL ? "k_scale" : "v_scale");
  if (!i8 && (p->k_scale != NULL || p->v_scale != NULL))
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "paged pool: %s given for a float32 pool (cache_dtype "
                        "0); an int8 pool sets cache_dtype CLATTN_I8",
                        p->k_scale != NULL ? "k_scale" : "v_scale");
  clattn__cache_shape s;
  memset(&s, 0, sizeof s);
  l->kind->cache_shape(l->d.bytes, &s);
  const size_t elem = i8 ? 1 : sizeof(float);
  if ((rc = check_pool_buffer(
           ctx, p->k_pool,
           clattn__bytes(elem, p->num_blocks, p->page_size, s.heads_k, s.dim_k),
           "k_pool")) ||
      (rc = check_pool_buffer(
           ctx, p->v_pool,
           clattn__bytes(elem, p->num_blocks, p->page_size, s.heads_v, s.dim_v),
           "v_pool")))
    return rc;
  if (i8 && ((rc = check_pool_buffer(ctx, p->k_scale,
                                     clattn__bytes(sizeof(float), p->num_blocks,
                                                   p->page_size, s.heads_k, 1),
                                     "k_scale")) ||
             (rc = check_pool_buffer(ctx, p->v_scale,
                                     clattn__bytes(sizeof(float), p->num_blocks,
                                                   p->page_size, s.heads_v, 1),
                                     "v_scale"))))
    return rc;
  return CLATTN_OK;
}

/* The kind's paged core call `op` (none when the kind makes no such
 * call): only its checks when check_only, else enqueued with its event
 * into `out` (may be NULL). */
static clattn_status paged_call(clattn_layer *l, clattn__core_op op,
                                const clattn__core_args *a, int check_only,
                                const clattn_events *ev, cl_event *out) {
  clattn__core_call call;
  memset(&call, 0, sizeof call);
  const clattn__family *F = l->kind->paged_core(l->d.bytes, op, a, &call);
  if (F == NULL)
    return CLATTN_OK;
  if (check_only)
    return clattn__call_check(l->ctx, F, call.desc.bytes, call.buf, ev);
  const clattn_events own = {sizeof own, 0, NULL, out};
  return clattn__call(l->ctx, F, call.desc.bytes, NULL, call.buf,
                      out != NULL ? &own : NULL);
}

static int makes_call(const clattn_layer *l, clattn__core_op op,
                      const clattn__core_args *a) {
  clattn__core_call call;
  memset(&call, 0, sizeof call);
  return l->kind->paged_core(l->d.bytes, op, a, &call) != NULL;
}

static clattn_status step_paged(clattn_layer *l, const clattn_paged_pool *pool,
                                int batch, int n, int causal,
                                cl_mem block_table, cl_mem kv_lens, cl_mem x,
                                cl_mem y, const clattn_events *ev) {
  clattn_status rc;
  if (ev != NULL && ev->out != NULL)
    *ev->out = NULL;
  if ((rc = clattn__layer_check(l)))
    return rc;
  clattn_ctx *ctx = l->ctx;
  const clattn__layer_kind *K = l->kind;
  if (K->paged_core == NULL)
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "%s layer: no paged KV pool: its cache holds other "
                        "tensors than the K and V heads of a "
                        "clattn_paged_pool's pages (the GQA layer of "
                        "clattn_layer_create runs over one); this layer runs "
                        "on a clattn_kv_cache",
                        K->name);
  if (pool == NULL || block_table == NULL || kv_lens == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "clattn_layer_step_paged: NULL %s",
                        pool == NULL          ? "pool"
                        : block_table == NULL ? "block_table"
                                              : "kv_lens");
  if ((rc = clattn__layer_rows(l, batch, n, x, y)) ||
      (rc = check_pool(l, pool)))
    return rc;
  if (K->check_call != NULL) {
    /* the longest sequence the table can hold */
    const long long most = (long long)pool->max_blocks * pool->page_size;
    char why[200] = "";
    rc = K->check_call(l->d.bytes, most > INT_MAX ? INT_MAX : (int)most, 1,
                       causal != 0, why, sizeof why);
    if (rc != CLATTN_OK)
      return clattn__fail(ctx, rc, "%s", why);
  }
  if ((rc = clattn__layer_acts(l, batch, n, x, y)))
    return rc;

  clattn__core_args a;
  clattn__layer_args(l, batch, n, causal, x, y, &a);
  a.pool = pool;
  a.block_table = block_table;
  a.lens = kv_lens;
  a.unchecked = pool->unchecked != 0;
  clattn__core_op ops[5];
  step_ops(n, ops);
  /* Every core call's checks (the tables read back and checked by each
   * family) before the first command, so a refusal enqueues nothing; the
   * calls then skip the reads. */
  for (int i = 0; i < 5 && rc == CLATTN_OK; i++)
    rc = paged_call(l, ops[i], &a, 1, ev, NULL);
  if (rc != CLATTN_OK)
    return rc;
  a.unchecked = 1;

  /* the step's last command's event goes to ev->out (layer.h) */
  cl_event *out = ev != NULL ? ev->out : NULL;
  const int mix_out = makes_call(l, CLATTN__CORE_MIX_OUT, &a);
  const size_t rows = (size_t)batch * (size_t)n;
  rc = clattn__layer_wait(ctx, ev);
  if (rc == CLATTN_OK)
    rc = clattn__layer_project(l, 0, K->nproj_in, rows, x, NULL, NULL);
  for (int i = 0; i < 4 && rc == CLATTN_OK; i++)
    rc = paged_call(l, ops[i], &a, 0, NULL, NULL);
  if (rc == CLATTN_OK)
    rc = clattn__layer_project(l, K->nproj_in, K->nproj, rows, NULL, y,
                               mix_out ? NULL : out);
  if (rc == CLATTN_OK)
    rc = paged_call(l, ops[4], &a, 0, NULL, out);
  return rc;
}

clattn_status clattn_layer_step_paged(clattn_layer *layer,
                                      const clattn_paged_pool *pool, int batch,
                                      int n, int causal, cl_mem block_table,
                                      cl_mem kv_lens, cl_mem x, cl_mem y,
                                      const clattn_events *ev) {
  clattn__public_args own;
  clattn_paged_pool own_pool;
  const void *none = NULL, *p = pool;
  clattn_ctx *ctx = clattn__layer_ctx(layer);
  clattn_status rc = clattn__ctx_args_in(ctx, &own, NULL, "", &none, 0,
                                         CLATTN__NO_PARAMS, &ev);
  if (rc == CLATTN_OK)
    rc = clattn__ctx_struct_in(ctx, &p, &own_pool, sizeof own_pool,
                               "clattn_paged_pool");
  if (rc)
    return rc;
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  rc = step_paged(layer, p, batch, n, causal, block_table, kv_lens, x, y, ev);
  clattn__ctx_leave(locked);
  return rc;
}
