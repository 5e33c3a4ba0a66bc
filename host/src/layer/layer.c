/* layer.c - a whole attention layer (float32), whatever its kind: CLBlast
 * projections around the kind's fused core calls, over the layer's own
 * activations or the library-owned KV cache (kv_cache.c).  What the layer
 * holds and calls (weights, projections, cache shape, core descriptions)
 * is its kind (layer.h); the code here walks it. */
#include "call/call.h"
#include "family/cvmm.h"
#include "layer/layer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- helpers */

/* Make the layer's activation buffer i hold at least `size` bytes.  Only
 * allocates; never enqueues. */
static clattn_status ensure_buf(clattn_layer *l, int i, size_t size) {
  clattn_ctx *ctx = l->ctx;
  cl_int err = CL_SUCCESS;
  cl_mem m;
  if (l->buf[i] != NULL && l->buf_size[i] >= size)
    return CLATTN_OK;
  m = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, size, NULL, &err);
  if (err != CL_SUCCESS || m == NULL)
    return clattn__cl_fail(ctx, err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES,
                           "clCreateBuffer(layer scratch)", __FILE__, __LINE__);
  if (l->buf[i] != NULL)
    clReleaseMemObject(l->buf[i]); /* in-order queue: freed when idle */
  l->buf[i] = m;
  l->buf_size[i] = size;
  return CLATTN_OK;
}

clattn_status clattn__layer_check(const clattn_layer *l) {
  if (l == NULL)
    return CLATTN_ERR_INVALID_ARG;
  if (l->magic != CLATTN__LAYER_MAGIC)
    return CLATTN_ERR_MISUSE;
  return clattn__ctx_check(l->ctx);
}

clattn_status clattn__layer_wait(clattn_ctx *ctx, const clattn_events *ev) {
  cl_int err;
  if (ev == NULL || ev->num_wait == 0)
    return CLATTN_OK;
  err = clEnqueueBarrierWithWaitList(ctx->queue, ev->num_wait, ev->wait, NULL);
  if (err != CL_SUCCESS)
    return clattn__cl_fail(ctx, err, "clEnqueueBarrierWithWaitList", __FILE__,
                           __LINE__);
  return CLATTN_OK;
}

/* Fill an int32 [batch] buffer with `value` (the pattern is copied at
 * enqueue time, so nothing blocks). */
static clattn_status fill_int(clattn_ctx *ctx, cl_mem m, int batch, int value,
                              const clattn_events *ev) {
  cl_int v = (cl_int)value;
  cl_uint nw = ev != NULL ? ev->num_wait : 0;
  cl_int err = clEnqueueFillBuffer(ctx->queue, m, &v, sizeof v, 0,
                                   (size_t)batch * sizeof v, nw,
                                   nw > 0 ? ev->wait : NULL, NULL);
  if (err != CL_SUCCESS)
    return clattn__cl_fail(ctx, err, "clEnqueueFillBuffer(int32 lengths)",
                           __FILE__, __LINE__);
  return CLATTN_OK;
}

const clattn__family *clattn__layer_family(clattn_ctx *ctx,
                                           const clattn__layer_kind *K,
                                           clattn__core_op op) {
  if (K->family[op] == NULL)
    return NULL;
  const clattn__family *F = clattn__family_find(K->family[op]);
  if (F == NULL && ctx != NULL)
    clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                 "%s layer: its core family '%s' is not in this build", K->name,
                 K->family[op]);
  return F;
}

/* -------------------------------------------------------------- layer */

/* Weight i has no columns for this description: the layer does without
 * it (layer.h). */
static int weight_absent(const clattn__layer_kind *K, const void *d, int i) {
  long inner, cols;
  K->weight_shape(d, i, &inner, &cols);
  return cols == 0;
}

/* The description's attention options into l, their per-head arrays
 * copied into memory the layer owns. */
static clattn_status copy_options(clattn_layer *l, const void *d) {
  int heads = 0;
  const clattn__opts o = l->kind->options(d, &heads);
  l->opts = o;
  l->opts.alibi = l->opts.sinks = NULL;
  const int arrays = (o.alibi != NULL) + (o.sinks != NULL);
  if (arrays == 0)
    return CLATTN_OK;
  l->opt_arrays = malloc(sizeof(float) * (size_t)heads * (size_t)arrays);
  if (l->opt_arrays == NULL)
    return clattn__fail(l->ctx, CLATTN_ERR_NOMEM, "layer: out of host memory");
  float *next = l->opt_arrays;
  if (o.alibi != NULL) {
    memcpy(next, o.alibi, sizeof(float) * (size_t)heads);
    l->opts.alibi = next;
    next += heads;
  }
  if (o.sinks != NULL) {
    memcpy(next, o.sinks, sizeof(float) * (size_t)heads);
    l->opts.sinks = next;
  }
  return CLATTN_OK;
}

static clattn_status layer_create(clattn_ctx *ctx, const clattn__layer_kind *K,
                                  const void *d, const cl_mem *w,
                                  clattn_layer **out) {
  clattn_status rc;
  char why[200];

  if (out != NULL)
    *out = NULL;
  rc = clattn__ctx_check(ctx);
  if (rc != CLATTN_OK)
    return rc;
  if (d == NULL || out == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "%s layer create: NULL %s",
                        K->name, d == NULL ? "descriptor" : "out pointer");
  /* the description first: it says which weights are absent */
  why[0] = '\0';
  if ((rc = K->check(d, why, sizeof why)))
    return clattn__fail(ctx, rc, "%s", why);
  for (int i = 0; i < K->nweights; i++)
    if (w[i] == NULL && !weight_absent(K, d, i))
      return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                          "%s layer create: NULL weight buffer %s", K->name,
                          K->weights[i]);
  for (int i = 0; i < K->nweights; i++) {
    long inner, cols;
    if (weight_absent(K, d, i))
      continue;
    K->weight_shape(d, i, &inner, &cols);
    const size_t bytes = clattn__bytes(4, inner, cols, 1, 1);
    if (bytes == 0)
      return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                          "layer: weight sizes overflow");
    if ((rc = clattn__check_buffer(ctx, w[i], bytes, K->weights[i])))
      return rc;
  }
  for (int op = 0; op < CLATTN__CORE_OPS; op++)
    if (K->family[op] != NULL &&
        clattn__layer_family(ctx, K, (clattn__core_op)op) == NULL)
      return CLATTN_ERR_UNSUPPORTED;
  /* The projections' GEMMs settled before the first one (with the
   * context's opt-in, the tuned Xgemm parameters set on CLBlast). */
  if (ctx->gemm_prepare && (rc = ctx->gemm_prepare(ctx, 1)))
    return rc;

  clattn_layer *l = calloc(1, sizeof *l);
  if (l == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "layer: out of host memory");
  l->magic = CLATTN__LAYER_MAGIC;
  l->ctx = ctx;
  l->kind = K;
  memcpy(l->d.bytes, d, K->desc_size);
  if ((rc = copy_options(l, d))) {
    clattn_layer_destroy(l);
    return rc;
  }
  for (int i = 0; i < K->nweights; i++) {
    if (weight_absent(K, d, i))
      continue;
    cl_int err = clRetainMemObject(w[i]);
    if (err != CL_SUCCESS) {
      rc = clattn__cl_fail(ctx, err, "clRetainMemObject(weight)", __FILE__,
                           __LINE__);
      clattn_layer_destroy(l);
      return rc;
    }
    l->w[i] = w[i];
  }
  *out = l;
  return CLATTN_OK;
}

/* Every public layer function holds the context's lock for its whole
 * step: its core calls share the context's scratch buffers. */
clattn_status clattn__layer_create(clattn_ctx *ctx, const clattn__layer_kind *K,
                                   const void *d, const cl_mem *w,
                                   clattn_layer **out) {
  _Alignas(16) unsigned char own[CLATTN__LAYER_DESC_BYTES];
  clattn_status rc =
      clattn__ctx_struct_in(ctx, &d, own, K->desc_size, K->desc_type);
  if (rc)
    return rc;
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  rc = layer_create(ctx, K, d, w, out);
  clattn__ctx_leave(locked);
  return rc;
}

void clattn_layer_destroy(clattn_layer *l) {
  if (l == NULL || l->magic != CLATTN__LAYER_MAGIC)
    return;
  for (int i = 0; i < CLATTN__MAX_WEIGHTS; i++)
    if (l->w[i] != NULL)
      clReleaseMemObject(l->w[i]);
  for (int i = 0; i < CLATTN__ACTS; i++)
    if (l->buf[i] != NULL)
      clReleaseMemObject(l->buf[i]);
  free(l->opt_arrays);
  l->magic = 0;
  free(l);
}

/* ---------------------------------------------------------- forward */

/* Bytes of every activation of a call of batch * n positions, from the
 * projections that read or write it; x and y are checked, the others are
 * the layer's own buffers. */
typedef struct call_sizes {
  size_t act[CLATTN__ACTS];
} call_sizes;

static clattn_status call_sizes_get(clattn_layer *l, int batch, int n,
                                    call_sizes *s) {
  const clattn__layer_kind *K = l->kind;
  const long long rows = (long long)batch * n;
  memset(s, 0, sizeof *s);
  for (int i = 0; i < K->nproj; i++) {
    const clattn__projection *p = &K->proj[i];
    long inner, cols;
    K->weight_shape(l->d.bytes, p->weight, &inner, &cols);
    const size_t in = clattn__bytes(4, rows, inner, 1, 1),
                 out = clattn__bytes(4, rows, cols, 1, 1);
    if (in == 0 || out == 0)
      return clattn__fail(l->ctx, CLATTN_ERR_SHAPE,
                          "layer: batch %d x n %d overflows the buffer sizes",
                          batch, n);
    s->act[p->from] = in > s->act[p->from] ? in : s->act[p->from];
    s->act[p->to] = out > s->act[p->to] ? out : s->act[p->to];
  }
  for (int a = 0; K->core_act_cols != NULL && a < CLATTN__ACTS; a++) {
    const long cols = K->core_act_cols(l->d.bytes, (clattn__layer_act)a);
    const size_t bytes = cols > 0 ? clattn__bytes(4, rows, cols, 1, 1) : 0;
    if (cols > 0 && bytes == 0)
      return clattn__fail(l->ctx, CLATTN_ERR_SHAPE,
                          "layer: batch %d x n %d overflows the buffer sizes",
                          batch, n);
    s->act[a] = bytes > s->act[a] ? bytes : s->act[a];
  }
  return CLATTN_OK;
}

/* Allocate the layer's activation buffers (before anything is enqueued). */
static clattn_status ensure_all(clattn_layer *l, const call_sizes *s) {
  clattn_status rc = CLATTN_OK;
  for (int a = 0; a < CLATTN__ACTS && rc == CLATTN_OK; a++)
    if (a != CLATTN__ACT_X && a != CLATTN__ACT_Y && s->act[a] > 0)
      rc = ensure_buf(l, a, s->act[a]);
  return rc;
}

clattn_status clattn__layer_project(clattn_layer *l, int first, int last,
                                    size_t rows, cl_mem x, cl_mem y,
                                    cl_event *event) {
  const clattn__layer_kind *K = l->kind;
  clattn_status rc = CLATTN_OK;
  for (int i = first; i < last && rc == CLATTN_OK; i++) {
    const clattn__projection *p = &K->proj[i];
    long inner, cols;
    K->weight_shape(l->d.bytes, p->weight, &inner, &cols);
    if (inner > INT32_MAX || cols > INT32_MAX)
      return clattn__fail(l->ctx, CLATTN_ERR_SHAPE,
                          "layer: projection %s of %ld x %ld is too large",
                          p->name, inner, cols);
    /* rows fit an int: check_call refused more */
    const clattn__gemm_desc d = {(int)rows, (int)cols, (int)inner};
    const cl_mem bufs[3] = {p->from == CLATTN__ACT_X ? x : l->buf[p->from],
                            l->w[p->weight],
                            p->to == CLATTN__ACT_Y ? y : l->buf[p->to]};
    const clattn_events ev = {sizeof ev, 0, NULL, i == last - 1 ? event : NULL};
    rc = clattn__call(l->ctx, &clattn__family_projection, &d, NULL, bufs, &ev);
  }
  return rc;
}

clattn_status clattn__layer_rows(clattn_layer *l, int batch, int n, cl_mem x,
                                 cl_mem y) {
  clattn_ctx *ctx = l->ctx;
  if (x == NULL || y == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "layer: NULL %s buffer",
                        x == NULL ? "x" : "y");
  if (batch <= 0 || n <= 0)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "layer: batch %d and n %d must be positive", batch, n);
  if ((long long)batch * n > INT32_MAX)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "layer: batch %d x n %d positions is too many", batch,
                        n);
  return CLATTN_OK;
}

clattn_status clattn__layer_acts(clattn_layer *l, int batch, int n, cl_mem x,
                                 cl_mem y) {
  call_sizes s;
  clattn_status rc = call_sizes_get(l, batch, n, &s);
  if (rc == CLATTN_OK)
    rc = clattn__check_buffer(l->ctx, x, s.act[CLATTN__ACT_X], "x");
  if (rc == CLATTN_OK)
    rc = clattn__check_buffer(l->ctx, y, s.act[CLATTN__ACT_Y], "y");
  if (rc == CLATTN_OK)
    rc = ensure_all(l, &s);
  return rc;
}

/* Checks shared by prefill and decode, before anything is enqueued. */
static clattn_status check_call(clattn_layer *l, clattn_kv_cache *c, int batch,
                                int n, int causal, cl_mem x, cl_mem y) {
  clattn_ctx *ctx = l->ctx;
  clattn_status rc;
  if (x == NULL || y == NULL)
    return clattn__layer_rows(l, batch, n, x, y);
  if (c != NULL) {
    rc = clattn__kv_cache_check(l, c);
    if (rc != CLATTN_OK)
      return rc;
  }
  if ((rc = clattn__layer_rows(l, batch, n, x, y)))
    return rc;
  if (c != NULL && batch != c->batch)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "layer: batch %d differs from the KV cache's %d", batch,
                        c->batch);
  if (c != NULL && (long long)c->len + n > c->capacity)
    return clattn__fail(ctx, CLATTN_ERR_CAPACITY,
                        "layer: %d cached + %d new positions exceed the KV "
                        "cache capacity %d",
                        c->len, n, c->capacity);
  if (l->kind->check_call != NULL) {
    char why[200] = "";
    rc = l->kind->check_call(l->d.bytes, (c != NULL ? c->len : 0) + n,
                             c != NULL, causal != 0, why, sizeof why);
    if (rc != CLATTN_OK)
      return clattn__fail(ctx, rc, "%s", why);
  }
  return clattn__layer_acts(l, batch, n, x, y);
}

/* The projections before the core, and after it (the last command unless
 * the kind makes a MIX_OUT call: then that one's event goes to ev->out). */
static clattn_status project_in(clattn_layer *l, size_t rows, cl_mem x) {
  return clattn__layer_project(l, 0, l->kind->nproj_in, rows, x, NULL, NULL);
}

static clattn_status project_out(clattn_layer *l, size_t rows, cl_mem y,
                                 const clattn_events *ev) {
  const int last = l->kind->family[CLATTN__CORE_MIX_OUT] == NULL;
  return clattn__layer_project(l, l->kind->nproj_in, l->kind->nproj, rows, NULL,
                               y, last && ev != NULL ? ev->out : NULL);
}

void clattn__layer_args(const clattn_layer *l, int batch, int n, int causal,
                        cl_mem x, cl_mem y, clattn__core_args *a) {
  memset(a, 0, sizeof *a);
  a->batch = batch;
  a->n = n;
  a->causal = causal != 0;
  for (int i = 0; i < CLATTN__ACTS; i++)
    if (i != CLATTN__ACT_X && i != CLATTN__ACT_Y)
      a->act[i] = l->buf[i];
  a->act[CLATTN__ACT_X] = x;
  a->act[CLATTN__ACT_Y] = y;
  a->w = l->w;
  a->opts = l->opts;
}

/* The arguments of the core calls of one step: the layer's activations
 * and, with a cache, its buffers. */
static void core_args(const clattn_layer *l, const clattn_kv_cache *c,
                      int batch, int n, int causal, cl_mem x, cl_mem y,
                      clattn__core_args *a) {
  clattn__layer_args(l, batch, n, causal, x, y, a);
  if (c != NULL) {
    a->capacity = c->capacity;
    a->cached = c->len;
    a->k_cache = c->k;
    a->v_cache = c->v;
    a->pos = c->pos;
    a->lens = c->lens;
  }
}

/* Core call `op` of the layer's kind through the family's call path (none
 * when the kind makes no such call); `out` (may be NULL) receives its
 * event. */
static clattn_status core(clattn_layer *l, clattn__core_op op,
                          const clattn__core_args *a, cl_event *out) {
  if (l->kind->family[op] == NULL)
    return CLATTN_OK;
  const clattn__family *F = clattn__layer_family(l->ctx, l->kind, op);
  if (F == NULL)
    return CLATTN_ERR_UNSUPPORTED;
  clattn__core_call call;
  memset(&call, 0, sizeof call);
  l->kind->core(l->d.bytes, op, a, &call);
  const clattn_events ev = {sizeof ev, 0, NULL, out};
  return clattn__call(l->ctx, F, call.desc.bytes, NULL, call.buf,
                      out != NULL ? &ev : NULL);
}

/* The step's end: the projections out, then the MIX_OUT call, the last
 * command (its event to ev->out; layer.h). */
static clattn_status step_out(clattn_layer *l, const clattn__core_args *a,
                              cl_mem y, const clattn_events *ev) {
  const size_t rows = (size_t)a->batch * (size_t)a->n;
  clattn_status rc = project_out(l, rows, y, ev);
  if (rc == CLATTN_OK)
    rc = core(l, CLATTN__CORE_MIX_OUT, a, ev != NULL ? ev->out : NULL);
  return rc;
}

/* One call through the cache, n new positions a sequence (decode: 1):
 * the append position and the lengths, the projections in, the MIX_IN,
 * append and values calls, the attention `op`, the step's end (step_out);
 * the cache grows only when everything was enqueued. */
static clattn_status cached_step(clattn_layer *l, clattn_kv_cache *c,
                                 clattn__core_op op, const clattn__core_args *a,
                                 cl_mem x, cl_mem y, const clattn_events *ev) {
  const size_t rows = (size_t)a->batch * (size_t)a->n;
  clattn_status rc = fill_int(l->ctx, c->pos, a->batch, c->len, ev);
  if (rc == CLATTN_OK)
    rc = fill_int(l->ctx, c->lens, a->batch, c->len + a->n, NULL);
  if (rc == CLATTN_OK)
    rc = project_in(l, rows, x);
  if (rc == CLATTN_OK)
    rc = core(l, CLATTN__CORE_MIX_IN, a, NULL);
  if (rc == CLATTN_OK)
    rc = core(l, CLATTN__CORE_APPEND, a, NULL);
  if (rc == CLATTN_OK)
    rc = core(l, CLATTN__CORE_VALUES, a, NULL);
  if (rc == CLATTN_OK)
    rc = core(l, op, a, NULL);
  if (rc == CLATTN_OK)
    rc = step_out(l, a, y, ev);
  if (rc == CLATTN_OK)
    c->len += a->n;
  return rc;
}

static clattn_status layer_prefill(clattn_layer *l, clattn_kv_cache *c,
                                   int batch, int n, int causal, cl_mem x,
                                   cl_mem y, const clattn_events *ev) {
  clattn_status rc;
  clattn_ctx *ctx;
  clattn__core_args a;

  if (ev != NULL && ev->out != NULL)
    *ev->out = NULL;
  rc = clattn__layer_check(l);
  if (rc != CLATTN_OK)
    return rc;
  ctx = l->ctx;
  if (c != NULL && c->magic != CLATTN__KVC_MAGIC)
    return clattn__fail(ctx, CLATTN_ERR_MISUSE,
                        "KV cache handle is not a live cache");
  rc = check_call(l, c, batch, n, causal, x, y);
  if (rc != CLATTN_OK)
    return rc;
  const size_t rows = (size_t)batch * (size_t)n;
  core_args(l, c, batch, n, causal, x, y, &a);

  if (c == NULL) {
    rc = clattn__layer_wait(ctx, ev);
    if (rc == CLATTN_OK)
      rc = project_in(l, rows, x);
    if (rc == CLATTN_OK)
      rc = core(l, CLATTN__CORE_MIX_IN, &a, NULL);
    if (rc == CLATTN_OK)
      rc = core(l, CLATTN__CORE_VALUES, &a, NULL);
    if (rc == CLATTN_OK)
      rc = core(l, CLATTN__CORE_PREFILL, &a, NULL);
    if (rc == CLATTN_OK)
      rc = step_out(l, &a, y, ev);
    return rc;
  }

  return cached_step(l, c, CLATTN__CORE_PREFILL, &a, x, y, ev);
}

static clattn_status layer_decode(clattn_layer *l, clattn_kv_cache *c, cl_mem x,
                                  cl_mem y, const clattn_events *ev) {
  clattn_status rc;
  clattn_ctx *ctx;
  clattn__core_args a;

  if (ev != NULL && ev->out != NULL)
    *ev->out = NULL;
  rc = clattn__layer_check(l);
  if (rc != CLATTN_OK)
    return rc;
  ctx = l->ctx;
  if (c == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "clattn_layer_decode: NULL KV cache");
  rc = check_call(l, c, c->magic == CLATTN__KVC_MAGIC ? c->batch : 1, 1, 1, x,
                  y);
  if (rc != CLATTN_OK)
    return rc;
  core_args(l, c, c->batch, 1, 1, x, y, &a);
  return cached_step(l, c, CLATTN__CORE_DECODE, &a, x, y, ev);
}

clattn_ctx *clattn__layer_ctx(const clattn_layer *l) {
  return l != NULL && l->magic == CLATTN__LAYER_MAGIC ? l->ctx : NULL;
}

clattn_status clattn_layer_prefill(clattn_layer *l, clattn_kv_cache *c,
                                   int batch, int n, int causal, cl_mem x,
                                   cl_mem y, const clattn_events *ev) {
  clattn__public_args own;
  const void *none = NULL;
  clattn_status rc = clattn__ctx_args_in(clattn__layer_ctx(l), &own, NULL, "",
                                         &none, 0, CLATTN__NO_PARAMS, &ev);
  if (rc)
    return rc;
  clattn_ctx *locked = clattn__ctx_enter(clattn__layer_ctx(l));
  rc = layer_prefill(l, c, batch, n, causal, x, y, ev);
  clattn__ctx_leave(locked);
  return rc;
}

clattn_status clattn_layer_decode(clattn_layer *l, clattn_kv_cache *c, cl_mem x,
                                  cl_mem y, const clattn_events *ev) {
  clattn__public_args own;
  const void *none = NULL;
  clattn_status rc = clattn__ctx_args_in(clattn__layer_ctx(l), &own, NULL, "",
                                         &none, 0, CLATTN__NO_PARAMS, &ev);
  if (rc)
    return rc;
  clattn_ctx *locked = clattn__ctx_enter(clattn__layer_ctx(l));
  rc = layer_decode(l, c, x, y, ev);
  clattn__ctx_leave(locked);
  return rc;
}
