/* gqa.c - a whole attention layer (float32): CLBlast projections around
 * the fused attention kernels, and the library-owned KV cache.  What the
 * layer holds and calls (weights, projections, core families) is its kind
 * (layer.h, gqa_kind.c); the code here walks it. */
#include "base/clblast_status.h"
#include "call/call.h"
#include "family/decode.h"
#include "layer/layer.h"
#include "tune/tune_gemm.h"

#include <clblast_c.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

#define CLATTN_LAYER_MAGIC 0x6c617972u /* "layr" */
#define CLATTN_KVC_MAGIC 0x6b766361u   /* "kvca" */

struct clattn_layer {
  unsigned magic;
  clattn_ctx *ctx;
  const clattn__layer_kind *kind;
  clattn_layer_desc d;
  cl_mem w[CLATTN__MAX_WEIGHTS];
  /* the activations between the steps, owned by the layer (x and y are
   * the caller's) */
  cl_mem buf[CLATTN__ACTS];
  size_t buf_size[CLATTN__ACTS];
};

struct clattn_kv_cache {
  unsigned magic;
  clattn_ctx *ctx;
  int batch;
  int capacity;
  int heads_kv;
  int head_dim_k;
  int head_dim_v;
  int len;      /* positions stored in every sequence (P) */
  cl_mem k, v;  /* [batch, heads_kv, capacity, head_dim] float32 (BHSD) */
  cl_mem pos;   /* int32 [batch]: append position */
  cl_mem lens;  /* int32 [batch]: valid keys for attention */
};

/* ------------------------------------------------------------- helpers */

/* Up to this many rows, a projection runs as one CLBlast GEMV per row:
 * CLBlast's GEMM pads a single row to a whole tile (on PoCL a 1x512x512
 * GEMM costs about ten times the GEMV), which dominated decode steps. */


/* Row-major C[m, n] = A[m, k] B[k, n] with tightly packed rows.  `event`
 * (may be NULL) receives the last command's event. */
static clattn_status gemm(clattn_ctx *ctx, const char *what, size_t m,
                          size_t n, size_t k, cl_mem a, cl_mem b, cl_mem c,
                          cl_event *event)
{
  cl_command_queue q = ctx->queue;
  CLBlastStatusCode s;
  if (m <= CLATTN_LAYER_GEMV_ROWS) {
    /* CLBlast's GEMV computes alpha*A^T x + beta*y even for beta == 0, so
     * a NaN already in y would survive: zero the rows first. */
    const float zero = 0.0f;
    cl_int err = clEnqueueFillBuffer(q, c, &zero, sizeof zero, 0,
                                     m * n * sizeof(float), 0, NULL, NULL);
    if (err != CL_SUCCESS)
      return clattn__cl_fail(ctx, err, "clEnqueueFillBuffer(GEMV output)",
                             __FILE__, __LINE__);
    for (size_t r = 0; r < m; r++) {
      /* c[r, :] = b^T a[r, :], b being [k, n] row-major. */
      s = CLBlastSgemv(CLBlastLayoutRowMajor, CLBlastTransposeYes, k, n, 1.0f,
                       b, 0, n, a, r * k, 1, 0.0f, c, r * n, 1, &q,
                       r + 1 == m ? event : NULL);
      if (s != CLBlastSuccess)
        return clattn__fail(ctx, CLATTN_ERR_CLBLAST,
                            "CLBlastSgemv (%s, row %zu, %zux%zu) failed: %s "
                            "(%d)",
                            what, r, k, n, clattn__clblast_status_str(s),
                            (int)s);
    }
    return CLATTN_OK;
  }
  s = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                   CLBlastTransposeNo, m, n, k, 1.0f, a, 0, k, b, 0, n, 0.0f,
                   c, 0, n, &q, event);
  if (s != CLBlastSuccess)
    return clattn__fail(ctx, CLATTN_ERR_CLBLAST,
                        "CLBlastSgemm (%s, %zux%zux%zu) failed: %s (%d)", what,
                        m, n, k, clattn__clblast_status_str(s), (int)s);
  return CLATTN_OK;
}

/* Make the layer's activation buffer i hold at least `size` bytes.  Only allocates;
 * never enqueues. */
static clattn_status ensure_buf(clattn_layer *l, int i, size_t size)
{
  clattn_ctx *ctx = l->ctx;
  cl_int err = CL_SUCCESS;
  cl_mem m;
  if (l->buf[i] != NULL && l->buf_size[i] >= size)
    return CLATTN_OK;
  m = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, size, NULL, &err);
  if (err != CL_SUCCESS || m == NULL)
    return clattn__cl_fail(ctx, err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES,
                           "clCreateBuffer(layer scratch)", __FILE__,
                           __LINE__);
  if (l->buf[i] != NULL)
    clReleaseMemObject(l->buf[i]); /* in-order queue: freed when idle */
  l->buf[i] = m;
  l->buf_size[i] = size;
  return CLATTN_OK;
}

/* Common checks on a layer handle (no message: there may be no context). */
static clattn_status check_layer(const clattn_layer *l)
{
  if (l == NULL)
    return CLATTN_ERR_INVALID_ARG;
  if (l->magic != CLATTN_LAYER_MAGIC)
    return CLATTN_ERR_MISUSE;
  return clattn__ctx_check(l->ctx);
}

static clattn_status check_cache(clattn_layer *l, const clattn_kv_cache *c)
{
  clattn_ctx *ctx = l->ctx;
  if (c->magic != CLATTN_KVC_MAGIC)
    return clattn__fail(ctx, CLATTN_ERR_MISUSE,
                        "KV cache handle is not a live cache");
  if (c->ctx != ctx)
    return clattn__fail(ctx, CLATTN_ERR_MISUSE,
                        "KV cache belongs to another context");
  if (c->heads_kv != l->d.heads_kv || c->head_dim_k != l->d.head_dim_k ||
      c->head_dim_v != l->d.head_dim_v)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "KV cache shape (heads_kv %d, head dims %d/%d) does "
                        "not match the layer (%d, %d/%d)",
                        c->heads_kv, c->head_dim_k, c->head_dim_v,
                        l->d.heads_kv, l->d.head_dim_k, l->d.head_dim_v);
  return CLATTN_OK;
}

static clattn_status check_events(clattn_ctx *ctx, const clattn_events *ev)
{
  if (ev == NULL)
    return CLATTN_OK;
  if (ev->num_wait > 0 && ev->wait == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "events: num_wait is %u but wait is NULL",
                        (unsigned)ev->num_wait);
  for (cl_uint i = 0; i < ev->num_wait; i++)
    if (ev->wait[i] == NULL)
      return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                          "events: wait[%u] is NULL", (unsigned)i);
  return CLATTN_OK;
}

/* Make the next command on the in-order queue wait for the caller's
 * events (CLBlast takes no wait list). */
static clattn_status wait_barrier(clattn_ctx *ctx, const clattn_events *ev)
{
  cl_int err;
  if (ev == NULL || ev->num_wait == 0)
    return CLATTN_OK;
  err = clEnqueueBarrierWithWaitList(ctx->queue, ev->num_wait, ev->wait,
                                     NULL);
  if (err != CL_SUCCESS)
    return clattn__cl_fail(ctx, err, "clEnqueueBarrierWithWaitList",
                           __FILE__, __LINE__);
  return CLATTN_OK;
}

/* Fill an int32 [batch] buffer with `value` (the pattern is copied at
 * enqueue time, so nothing blocks). */
static clattn_status fill_int(clattn_ctx *ctx, cl_mem m, int batch, int value,
                              const clattn_events *ev)
{
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

/* -------------------------------------------------------------- layer */

clattn_status clattn_layer_create(clattn_ctx *ctx, const clattn_layer_desc *d,
                                  cl_mem w_q, cl_mem w_k, cl_mem w_v,
                                  cl_mem w_o, clattn_layer **out)
{
  clattn_status rc;
  clattn_layer *l;

  if (out != NULL)
    *out = NULL;
  rc = clattn__ctx_check(ctx);
  if (rc != CLATTN_OK)
    return rc;
  if (d == NULL || out == NULL || w_q == NULL || w_k == NULL || w_v == NULL ||
      w_o == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "clattn_layer_create: NULL %s",
                        d == NULL     ? "descriptor"
                        : out == NULL ? "out pointer"
                                      : "weight buffer");
  if (d->d_model <= 0 || d->heads_q <= 0 || d->heads_kv <= 0 ||
      d->head_dim_k <= 0 || d->head_dim_v <= 0)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "layer: d_model %d, heads_q %d, heads_kv %d, head "
                        "dims %d/%d must all be positive",
                        d->d_model, d->heads_q, d->heads_kv, d->head_dim_k,
                        d->head_dim_v);
  if (d->heads_q % d->heads_kv != 0)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "layer: heads_q %d is not a multiple of heads_kv %d",
                        d->heads_q, d->heads_kv);
  if (d->head_dim_k > CLATTN_MAX_HEAD_DIM ||
      d->head_dim_v > CLATTN_MAX_HEAD_DIM)
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "layer: head dims %d/%d exceed CLATTN_MAX_HEAD_DIM %d",
                        d->head_dim_k, d->head_dim_v, CLATTN_MAX_HEAD_DIM);
  if (!isfinite(d->scale) || d->scale < 0.0f)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "layer: scale %g must be finite and >= 0 (0: auto)",
                        (double)d->scale);
  if ((long long)d->heads_q * d->head_dim_k > INT32_MAX ||
      (long long)d->heads_q * d->head_dim_v > INT32_MAX)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE, "layer: weight sizes overflow");
  const clattn__layer_kind *K = &clattn__layer_gqa;
  const cl_mem w[4] = {w_q, w_k, w_v, w_o};
  for (int i = 0; i < K->nweights; i++) {
    long inner, cols;
    K->weight_shape(d, i, &inner, &cols);
    const size_t bytes = clattn__bytes(4, inner, cols, 1, 1);
    if (bytes == 0)
      return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                          "layer: weight sizes overflow");
    if ((rc = clattn__check_buffer(ctx, w[i], bytes, K->weights[i])))
      return rc;
  }
  /* The device's tuned Xgemm parameters, before the first GEMM. */
  if ((rc = clattn__gemm_apply(ctx)))
    return rc;

  l = calloc(1, sizeof *l);
  if (l == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "layer: out of host memory");
  l->magic = CLATTN_LAYER_MAGIC;
  l->ctx = ctx;
  l->kind = K;
  l->d = *d;
  for (int i = 0; i < K->nweights; i++) {
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

void clattn_layer_destroy(clattn_layer *l)
{
  if (l == NULL || l->magic != CLATTN_LAYER_MAGIC)
    return;
  for (int i = 0; i < CLATTN__MAX_WEIGHTS; i++)
    if (l->w[i] != NULL)
      clReleaseMemObject(l->w[i]);
  for (int i = 0; i < CLATTN__ACTS; i++)
    if (l->buf[i] != NULL)
      clReleaseMemObject(l->buf[i]);
  l->magic = 0;
  free(l);
}

/* ------------------------------------------------------------ KV cache */

clattn_status clattn_kv_cache_create(clattn_layer *l, int batch, int capacity,
                                     clattn_kv_cache **out)
{
  clattn_status rc;
  clattn_ctx *ctx;
  clattn_kv_cache *c;
  size_t kb, vb;
  cl_int err = CL_SUCCESS;
  const float zero = 0.0f;

  if (out != NULL)
    *out = NULL;
  rc = check_layer(l);
  if (rc != CLATTN_OK)
    return rc;
  ctx = l->ctx;
  if (out == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "clattn_kv_cache_create: NULL out pointer");
  if (batch <= 0 || capacity <= 0)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "KV cache: batch %d and capacity %d must be positive",
                        batch, capacity);
  if (!(kb = clattn__bytes(1, batch, l->d.heads_kv, capacity,
                 (long long)l->d.head_dim_k * 4)) ||
      !(vb = clattn__bytes(1, batch, l->d.heads_kv, capacity,
                 (long long)l->d.head_dim_v * 4)))
    return clattn__fail(ctx, CLATTN_ERR_SHAPE, "KV cache: size overflows");
  if ((cl_ulong)kb > ctx->dev.max_alloc || (cl_ulong)vb > ctx->dev.max_alloc)
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "KV cache: %zu-byte K or %zu-byte V buffer exceeds "
                        "the device's max allocation (%llu bytes)",
                        kb, vb, (unsigned long long)ctx->dev.max_alloc);

  c = calloc(1, sizeof *c);
  if (c == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "KV cache: out of host memory");
  c->magic = CLATTN_KVC_MAGIC;
  c->ctx = ctx;
  c->batch = batch;
  c->capacity = capacity;
  c->heads_kv = l->d.heads_kv;
  c->head_dim_k = l->d.head_dim_k;
  c->head_dim_v = l->d.head_dim_v;

  c->k = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, kb, NULL, &err);
  if (err != CL_SUCCESS)
    goto clfail;
  c->v = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, vb, NULL, &err);
  if (err != CL_SUCCESS)
    goto clfail;
  c->pos = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE,
                          (size_t)batch * sizeof(cl_int), NULL, &err);
  if (err != CL_SUCCESS)
    goto clfail;
  c->lens = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE,
                           (size_t)batch * sizeof(cl_int), NULL, &err);
  if (err != CL_SUCCESS)
    goto clfail;
  /* Zero the caches once: rows beyond the valid length then hold finite
   * values even if a kernel reads a whole tile and masks it. */
  err = clEnqueueFillBuffer(ctx->queue, c->k, &zero, sizeof zero, 0, kb, 0,
                            NULL, NULL);
  if (err != CL_SUCCESS) {
    rc = clattn__cl_fail(ctx, err, "clEnqueueFillBuffer(k cache)", __FILE__,
                         __LINE__);
    goto fail;
  }
  err = clEnqueueFillBuffer(ctx->queue, c->v, &zero, sizeof zero, 0, vb, 0,
                            NULL, NULL);
  if (err != CL_SUCCESS) {
    rc = clattn__cl_fail(ctx, err, "clEnqueueFillBuffer(v cache)", __FILE__,
                         __LINE__);
    goto fail;
  }
  *out = c;
  return CLATTN_OK;

clfail:
  rc = clattn__cl_fail(ctx, err, "clCreateBuffer(KV cache)", __FILE__,
                       __LINE__);
fail:
  clattn_kv_cache_destroy(c);
  return rc;
}

void clattn_kv_cache_destroy(clattn_kv_cache *c)
{
  if (c == NULL || c->magic != CLATTN_KVC_MAGIC)
    return;
  cl_mem m[4] = {c->k, c->v, c->pos, c->lens};
  for (int i = 0; i < 4; i++)
    if (m[i] != NULL)
      clReleaseMemObject(m[i]);
  c->magic = 0;
  free(c);
}

int clattn_kv_cache_len(const clattn_kv_cache *c)
{
  if (c == NULL || c->magic != CLATTN_KVC_MAGIC)
    return 0;
  return c->len;
}

void clattn_kv_cache_reset(clattn_kv_cache *c)
{
  if (c == NULL || c->magic != CLATTN_KVC_MAGIC)
    return;
  c->len = 0;
}

/* ---------------------------------------------------------- forward */

/* Sizes of one layer call over `rows` = batch * n positions. */
/* Bytes of every activation of a call of `rows` positions, from the
 * projections that read or write it; x and y are checked, the others are
 * the layer's own buffers. */
typedef struct call_sizes {
  size_t act[CLATTN__ACTS];
} call_sizes;

static clattn_status call_sizes_get(clattn_layer *l, int batch, int n,
                                    call_sizes *s)
{
  const clattn__layer_kind *K = l->kind;
  const long long rows = (long long)batch * n;
  memset(s, 0, sizeof *s);
  for (int i = 0; i < K->nproj; i++) {
    const clattn__projection *p = &K->proj[i];
    long inner, cols;
    K->weight_shape(&l->d, p->weight, &inner, &cols);
    const size_t in = clattn__bytes(4, rows, inner, 1, 1),
                 out = clattn__bytes(4, rows, cols, 1, 1);
    if (in == 0 || out == 0)
      return clattn__fail(l->ctx, CLATTN_ERR_SHAPE,
                          "layer: batch %d x n %d overflows the buffer sizes",
                          batch, n);
    s->act[p->from] = in > s->act[p->from] ? in : s->act[p->from];
    s->act[p->to] = out > s->act[p->to] ? out : s->act[p->to];
  }
  return CLATTN_OK;
}

/* Allocate the layer's activation buffers (before anything is enqueued). */
static clattn_status ensure_all(clattn_layer *l, const call_sizes *s)
{
  clattn_status rc = CLATTN_OK;
  for (int a = 0; a < CLATTN__ACTS && rc == CLATTN_OK; a++)
    if (a != CLATTN__ACT_X && a != CLATTN__ACT_Y && s->act[a] > 0)
      rc = ensure_buf(l, a, s->act[a]);
  return rc;
}

/* Projections first .. last-1 of the kind over `rows` rows; x and y are
 * the caller's; the last one's event goes to *event (may be NULL). */
static clattn_status project(clattn_layer *l, int first, int last,
                             size_t rows, cl_mem x, cl_mem y,
                             cl_event *event)
{
  const clattn__layer_kind *K = l->kind;
  clattn_status rc = CLATTN_OK;
  for (int i = first; i < last && rc == CLATTN_OK; i++) {
    const clattn__projection *p = &K->proj[i];
    long inner, cols;
    K->weight_shape(&l->d, p->weight, &inner, &cols);
    const cl_mem in = p->from == CLATTN__ACT_X ? x : l->buf[p->from];
    const cl_mem out = p->to == CLATTN__ACT_Y ? y : l->buf[p->to];
    rc = gemm(l->ctx, p->name, rows, (size_t)cols, (size_t)inner, in,
              l->w[p->weight], out, i == last - 1 ? event : NULL);
  }
  return rc;
}

static void decode_desc_init(const clattn_layer *l, const clattn_kv_cache *c,
                             clattn_decode_desc *dd)
{
  dd->batch = c->batch;
  dd->capacity = c->capacity;
  dd->heads_q = l->d.heads_q;
  dd->heads_kv = l->d.heads_kv;
  dd->head_dim_k = l->d.head_dim_k;
  dd->head_dim_v = l->d.head_dim_v;
  dd->dtype = CLATTN_F32;
  dd->cache_layout = CLATTN_BHSD;
  dd->scale = l->d.scale;
  dd->params = NULL;
}

/* Checks shared by prefill and decode, before anything is enqueued. */
static clattn_status check_call(clattn_layer *l, clattn_kv_cache *c,
                                int batch, int n, cl_mem x, cl_mem y,
                                const clattn_events *ev, call_sizes *s)
{
  clattn_ctx *ctx = l->ctx;
  clattn_status rc;
  if (x == NULL || y == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "layer: NULL %s buffer",
                        x == NULL ? "x" : "y");
  if (c != NULL) {
    rc = check_cache(l, c);
    if (rc != CLATTN_OK)
      return rc;
  }
  if (batch <= 0 || n <= 0)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "layer: batch %d and n %d must be positive", batch, n);
  if ((long long)batch * n > INT32_MAX)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "layer: batch %d x n %d positions is too many", batch,
                        n);
  if (c != NULL && batch != c->batch)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "layer: batch %d differs from the KV cache's %d", batch,
                        c->batch);
  if (c != NULL && (long long)c->len + n > c->capacity)
    return clattn__fail(ctx, CLATTN_ERR_CAPACITY,
                        "layer: %d cached + %d new positions exceed the KV "
                        "cache capacity %d",
                        c->len, n, c->capacity);
  rc = check_events(ctx, ev);
  if (rc != CLATTN_OK)
    return rc;
  rc = call_sizes_get(l, batch, n, s);
  if (rc != CLATTN_OK)
    return rc;
  rc = clattn__check_buffer(ctx, x, s->act[CLATTN__ACT_X], "x");
  if (rc == CLATTN_OK)
    rc = clattn__check_buffer(ctx, y, s->act[CLATTN__ACT_Y], "y");
  if (rc == CLATTN_OK)
    rc = ensure_all(l, s);
  return rc;
}

/* The projections before the core, and after it (the last command: its
 * event goes to ev->out). */
static clattn_status project_in(clattn_layer *l, size_t rows, cl_mem x)
{
  return project(l, 0, l->kind->nproj_in, rows, x, NULL, NULL);
}

static clattn_status project_out(clattn_layer *l, size_t rows, cl_mem y,
                                 const clattn_events *ev)
{
  return project(l, l->kind->nproj_in, l->kind->nproj, rows, NULL, y,
                 ev != NULL ? ev->out : NULL);
}

/* The core's append of the new K/V rows at c->pos. */
static clattn_status append(clattn_layer *l, clattn_kv_cache *c, int n)
{
  clattn__append_desc a;
  decode_desc_init(l, c, &a.cache);
  a.n_new = n;
  const cl_mem b[5] = {l->buf[CLATTN__ACT_K], l->buf[CLATTN__ACT_V], c->pos,
                       c->k, c->v};
  return clattn__call(l->ctx, l->kind->append, &a, b, NULL);
}

clattn_status clattn_layer_prefill(clattn_layer *l, clattn_kv_cache *c,
                                   int batch, int n, int causal, cl_mem x,
                                   cl_mem y, const clattn_events *ev)
{
  clattn_status rc;
  clattn_ctx *ctx;
  call_sizes s;
  clattn_attn_desc ad;
  size_t rows;

  if (ev != NULL && ev->out != NULL)
    *ev->out = NULL;
  rc = check_layer(l);
  if (rc != CLATTN_OK)
    return rc;
  ctx = l->ctx;
  if (c != NULL && c->magic != CLATTN_KVC_MAGIC)
    return clattn__fail(ctx, CLATTN_ERR_MISUSE,
                        "KV cache handle is not a live cache");
  rc = check_call(l, c, batch, n, x, y, ev, &s);
  if (rc != CLATTN_OK)
    return rc;
  rows = (size_t)batch * (size_t)n;

  ad.batch = batch;
  ad.n_q = n;
  ad.heads_q = l->d.heads_q;
  ad.heads_kv = l->d.heads_kv;
  ad.head_dim_k = l->d.head_dim_k;
  ad.head_dim_v = l->d.head_dim_v;
  ad.dtype = CLATTN_F32;
  ad.q_layout = CLATTN_BSHD;
  ad.scale = l->d.scale;
  ad.causal = causal != 0;
  ad.params = NULL;

  if (c == NULL) {
    /* [batch*n rows, heads*dim] row-major is BSHD. */
    ad.n_kv = n;
    ad.kv_layout = CLATTN_BSHD;
    rc = wait_barrier(ctx, ev);
    if (rc == CLATTN_OK)
      rc = project_in(l, rows, x);
    if (rc == CLATTN_OK)
      rc = clattn__call(ctx, l->kind->prefill, &ad,
                        (const cl_mem[5]){l->buf[CLATTN__ACT_Q],
                                          l->buf[CLATTN__ACT_K],
                                          l->buf[CLATTN__ACT_V], NULL,
                                          l->buf[CLATTN__ACT_O]},
                        NULL);
    if (rc == CLATTN_OK)
      rc = project_out(l, rows, y, ev);
    return rc;
  }

  {
    ad.n_kv = c->capacity;
    ad.kv_layout = CLATTN_BHSD;
    rc = fill_int(ctx, c->pos, batch, c->len, ev);
    if (rc == CLATTN_OK)
      rc = fill_int(ctx, c->lens, batch, c->len + n, NULL);
    if (rc == CLATTN_OK)
      rc = project_in(l, rows, x);
    if (rc == CLATTN_OK)
      rc = append(l, c, n);
    if (rc == CLATTN_OK)
      rc = clattn__call(ctx, l->kind->prefill, &ad,
                        (const cl_mem[5]){l->buf[CLATTN__ACT_Q], c->k, c->v,
                                          c->lens, l->buf[CLATTN__ACT_O]},
                        NULL);
    if (rc == CLATTN_OK)
      rc = project_out(l, rows, y, ev);
    if (rc == CLATTN_OK)
      c->len += n;
    return rc;
  }
}

clattn_status clattn_layer_decode(clattn_layer *l, clattn_kv_cache *c,
                                  cl_mem x, cl_mem y, const clattn_events *ev)
{
  clattn_status rc;
  clattn_ctx *ctx;
  call_sizes s;
  clattn_decode_desc dd;
  size_t rows;

  if (ev != NULL && ev->out != NULL)
    *ev->out = NULL;
  rc = check_layer(l);
  if (rc != CLATTN_OK)
    return rc;
  ctx = l->ctx;
  if (c == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "clattn_layer_decode: NULL KV cache");
  rc = check_call(l, c, c->magic == CLATTN_KVC_MAGIC ? c->batch : 1, 1, x, y,
                  ev, &s);
  if (rc != CLATTN_OK)
    return rc;
  rows = (size_t)c->batch;
  decode_desc_init(l, c, &dd);

  rc = fill_int(ctx, c->pos, c->batch, c->len, ev);
  if (rc == CLATTN_OK)
    rc = fill_int(ctx, c->lens, c->batch, c->len + 1, NULL);
  if (rc == CLATTN_OK)
    rc = project_in(l, rows, x);
  /* k_new [batch, 1, heads_kv, dim] is the [batch, heads_kv*dim] rows. */
  if (rc == CLATTN_OK)
    rc = append(l, c, 1);
  /* q [batch, heads_q, dim] and o [batch, heads_q, dim_v] likewise. */
  if (rc == CLATTN_OK)
    rc = clattn__call(ctx, l->kind->decode, &dd,
                      (const cl_mem[5]){l->buf[CLATTN__ACT_Q], c->k, c->v,
                                        c->lens, l->buf[CLATTN__ACT_O]},
                      NULL);
  if (rc == CLATTN_OK)
    rc = project_out(l, rows, y, ev);
  if (rc == CLATTN_OK)
    c->len += 1;
  return rc;
}
