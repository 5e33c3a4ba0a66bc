/* layer.c - a whole attention layer (float32): CLBlast projections around
 * the fused attention kernels, and the library-owned KV cache. */
#include "base/clblast_status.h"
#include "runtime/runtime.h"
#include "tune/tune_gemm.h"

#include <clblast_c.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define CLATTN_LAYER_MAGIC 0x6c617972u /* "layr" */
#define CLATTN_KVC_MAGIC 0x6b766361u   /* "kvca" */

/* Projection scratch buffers owned by a layer. */
enum { BUF_Q = 0, BUF_K = 1, BUF_V = 2, BUF_O = 3, BUF_COUNT = 4 };

struct clattn_layer {
  unsigned magic;
  clattn_ctx *ctx;
  clattn_layer_desc d;
  cl_mem w_q, w_k, w_v, w_o;
  cl_mem buf[BUF_COUNT];
  size_t buf_size[BUF_COUNT];
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

/* Make layer scratch buffer i hold at least `size` bytes.  Only allocates;
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
  size_t nq, nk, nv, no;

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
  if (!(nq = clattn__bytes(1, d->d_model, d->heads_q, d->head_dim_k, 4)) ||
      !(nk = clattn__bytes(1, d->d_model, d->heads_kv, d->head_dim_k, 4)) ||
      !(nv = clattn__bytes(1, d->d_model, d->heads_kv, d->head_dim_v, 4)) ||
      !(no = clattn__bytes(1, d->heads_q, d->head_dim_v, d->d_model, 4)) ||
      (long long)d->heads_q * d->head_dim_k > INT32_MAX ||
      (long long)d->heads_q * d->head_dim_v > INT32_MAX)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE, "layer: weight sizes overflow");
  rc = clattn__check_buffer(ctx, w_q, nq, "w_q");
  if (rc == CLATTN_OK)
    rc = clattn__check_buffer(ctx, w_k, nk, "w_k");
  if (rc == CLATTN_OK)
    rc = clattn__check_buffer(ctx, w_v, nv, "w_v");
  if (rc == CLATTN_OK)
    rc = clattn__check_buffer(ctx, w_o, no, "w_o");
  /* The device's tuned Xgemm parameters, before the first GEMM. */
  if (rc == CLATTN_OK)
    rc = clattn__gemm_apply(ctx);
  if (rc != CLATTN_OK)
    return rc;

  l = calloc(1, sizeof *l);
  if (l == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "layer: out of host memory");
  l->magic = CLATTN_LAYER_MAGIC;
  l->ctx = ctx;
  l->d = *d;
  {
    cl_mem w[4] = {w_q, w_k, w_v, w_o};
    cl_mem *dst[4] = {&l->w_q, &l->w_k, &l->w_v, &l->w_o};
    for (int i = 0; i < 4; i++) {
      cl_int err = clRetainMemObject(w[i]);
      if (err != CL_SUCCESS) {
        rc = clattn__cl_fail(ctx, err, "clRetainMemObject(weight)", __FILE__,
                             __LINE__);
        clattn_layer_destroy(l);
        return rc;
      }
      *dst[i] = w[i];
    }
  }
  *out = l;
  return CLATTN_OK;
}

void clattn_layer_destroy(clattn_layer *l)
{
  if (l == NULL || l->magic != CLATTN_LAYER_MAGIC)
    return;
  cl_mem w[4] = {l->w_q, l->w_k, l->w_v, l->w_o};
  for (int i = 0; i < 4; i++)
    if (w[i] != NULL)
      clReleaseMemObject(w[i]);
  for (int i = 0; i < BUF_COUNT; i++)
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
typedef struct call_sizes {
  size_t x;            /* bytes of x and of y */
  size_t q, k, v, o;   /* bytes of the projection buffers */
} call_sizes;

static clattn_status call_sizes_get(clattn_layer *l, int batch, int n,
                                    call_sizes *s)
{
  const clattn_layer_desc *d = &l->d;
  long long rows = (long long)batch * n;
  if (!(s->x = clattn__bytes(1, rows, d->d_model, 4, 1)) ||
      !(s->q = clattn__bytes(1, rows, d->heads_q, d->head_dim_k, 4)) ||
      !(s->k = clattn__bytes(1, rows, d->heads_kv, d->head_dim_k, 4)) ||
      !(s->v = clattn__bytes(1, rows, d->heads_kv, d->head_dim_v, 4)) ||
      !(s->o = clattn__bytes(1, rows, d->heads_q, d->head_dim_v, 4)))
    return clattn__fail(l->ctx, CLATTN_ERR_SHAPE,
                        "layer: batch %d x n %d overflows the buffer sizes",
                        batch, n);
  return CLATTN_OK;
}

/* Allocate the four projection buffers (before anything is enqueued). */
static clattn_status ensure_all(clattn_layer *l, const call_sizes *s)
{
  clattn_status rc = ensure_buf(l, BUF_Q, s->q);
  if (rc == CLATTN_OK)
    rc = ensure_buf(l, BUF_K, s->k);
  if (rc == CLATTN_OK)
    rc = ensure_buf(l, BUF_V, s->v);
  if (rc == CLATTN_OK)
    rc = ensure_buf(l, BUF_O, s->o);
  return rc;
}

/* Q, K, V projections of `rows` rows of x. */
static clattn_status project_qkv(clattn_layer *l, size_t rows, cl_mem x)
{
  const clattn_layer_desc *d = &l->d;
  size_t dm = (size_t)d->d_model;
  clattn_status rc = gemm(l->ctx, "x*w_q", rows,
                          (size_t)d->heads_q * (size_t)d->head_dim_k, dm, x,
                          l->w_q, l->buf[BUF_Q], NULL);
  if (rc == CLATTN_OK)
    rc = gemm(l->ctx, "x*w_k", rows,
              (size_t)d->heads_kv * (size_t)d->head_dim_k, dm, x, l->w_k,
              l->buf[BUF_K], NULL);
  if (rc == CLATTN_OK)
    rc = gemm(l->ctx, "x*w_v", rows,
              (size_t)d->heads_kv * (size_t)d->head_dim_v, dm, x, l->w_v,
              l->buf[BUF_V], NULL);
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
  rc = clattn__check_buffer(ctx, x, s->x, "x");
  if (rc == CLATTN_OK)
    rc = clattn__check_buffer(ctx, y, s->x, "y");
  if (rc == CLATTN_OK)
    rc = ensure_all(l, s);
  return rc;
}

/* Y = O W_o, the last command; its event goes to ev->out. */
static clattn_status project_out(clattn_layer *l, size_t rows, cl_mem y,
                                 const clattn_events *ev)
{
  const clattn_layer_desc *d = &l->d;
  return gemm(l->ctx, "o*w_o", rows, (size_t)d->d_model,
              (size_t)d->heads_q * (size_t)d->head_dim_v, l->buf[BUF_O],
              l->w_o, y, ev != NULL ? ev->out : NULL);
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
      rc = project_qkv(l, rows, x);
    if (rc == CLATTN_OK)
      rc = clattn_attention(ctx, &ad, l->buf[BUF_Q], l->buf[BUF_K],
                            l->buf[BUF_V], NULL, l->buf[BUF_O], NULL);
    if (rc == CLATTN_OK)
      rc = project_out(l, rows, y, ev);
    return rc;
  }

  {
    clattn_decode_desc dd;
    decode_desc_init(l, c, &dd);
    ad.n_kv = c->capacity;
    ad.kv_layout = CLATTN_BHSD;
    rc = fill_int(ctx, c->pos, batch, c->len, ev);
    if (rc == CLATTN_OK)
      rc = fill_int(ctx, c->lens, batch, c->len + n, NULL);
    if (rc == CLATTN_OK)
      rc = project_qkv(l, rows, x);
    if (rc == CLATTN_OK)
      rc = clattn_kv_append(ctx, &dd, n, l->buf[BUF_K], l->buf[BUF_V], c->pos,
                            c->k, c->v, NULL);
    if (rc == CLATTN_OK)
      rc = clattn_attention(ctx, &ad, l->buf[BUF_Q], c->k, c->v, c->lens,
                            l->buf[BUF_O], NULL);
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
    rc = project_qkv(l, rows, x);
  /* k_new [batch, 1, heads_kv, dim] is the [batch, heads_kv*dim] rows. */
  if (rc == CLATTN_OK)
    rc = clattn_kv_append(ctx, &dd, 1, l->buf[BUF_K], l->buf[BUF_V], c->pos,
                          c->k, c->v, NULL);
  /* q [batch, heads_q, dim] and o [batch, heads_q, dim_v] likewise. */
  if (rc == CLATTN_OK)
    rc = clattn_decode(ctx, &dd, l->buf[BUF_Q], c->k, c->v, c->lens,
                       l->buf[BUF_O], NULL);
  if (rc == CLATTN_OK)
    rc = project_out(l, rows, y, ev);
  if (rc == CLATTN_OK)
    c->len += 1;
  return rc;
}
