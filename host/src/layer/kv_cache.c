/* kv_cache.c - the library-owned KV cache of a layer: K and V in BHSD
 * float32 with the key and value heads of the layer's kind, and the int32
 * append positions and lengths its core calls read. */
#include "layer/layer.h"

#include <stdlib.h>
#include <string.h>

clattn_status clattn__kv_cache_check(const clattn_layer *l,
                                     const clattn_kv_cache *c) {
  clattn_ctx *ctx = l->ctx;
  if (c->magic != CLATTN__KVC_MAGIC)
    return clattn__fail(ctx, CLATTN_ERR_MISUSE,
                        "KV cache handle is not a live cache");
  if (c->ctx != ctx)
    return clattn__fail(ctx, CLATTN_ERR_MISUSE,
                        "KV cache belongs to another context");
  clattn__cache_shape s;
  memset(&s, 0, sizeof s);
  l->kind->cache_shape(l->d.bytes, &s);
  const clattn__cache_shape *h = &c->shape;
  if (h->heads_k != s.heads_k || h->dim_k != s.dim_k ||
      h->heads_v != s.heads_v || h->dim_v != s.dim_v || h->shared != s.shared)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "KV cache shape (key heads %d x %d, value heads %d x "
                        "%d%s) does not match the layer (%d x %d, %d x %d%s)",
                        h->heads_k, h->dim_k, h->heads_v, h->dim_v,
                        h->shared ? ", one tensor" : "", s.heads_k, s.dim_k,
                        s.heads_v, s.dim_v, s.shared ? ", one tensor" : "");
  return CLATTN_OK;
}

/* A device buffer of `bytes`, zeroed when `zero`: cache rows beyond the
 * valid length then hold finite values even if a kernel reads a whole
 * tile and masks it. */
static clattn_status new_buffer(clattn_ctx *ctx, size_t bytes, int zero,
                                const char *what, cl_mem *out) {
  cl_int err = CL_SUCCESS;
  *out = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
  if (err != CL_SUCCESS || *out == NULL)
    return clattn__cl_fail(ctx, err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES,
                           what, __FILE__, __LINE__);
  if (!zero)
    return CLATTN_OK;
  const float z = 0.0f;
  err = clEnqueueFillBuffer(ctx->queue, *out, &z, sizeof z, 0, bytes, 0, NULL,
                            NULL);
  if (err != CL_SUCCESS)
    return clattn__cl_fail(ctx, err, "clEnqueueFillBuffer(KV cache)", __FILE__,
                           __LINE__);
  return CLATTN_OK;
}

static clattn_status cache_create(clattn_layer *l, int batch, int capacity,
                                  clattn_kv_cache **out) {
  clattn_status rc;
  clattn_ctx *ctx;
  clattn_kv_cache *c;
  size_t kb, vb;

  if (out != NULL)
    *out = NULL;
  if (l == NULL)
    return CLATTN_ERR_INVALID_ARG;
  if (l->magic != CLATTN__LAYER_MAGIC)
    return CLATTN_ERR_MISUSE;
  if ((rc = clattn__ctx_check(l->ctx)))
    return rc;
  ctx = l->ctx;
  if (out == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "clattn_kv_cache_create: NULL out pointer");
  if (batch <= 0 || capacity <= 0)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "KV cache: batch %d and capacity %d must be positive",
                        batch, capacity);
  clattn__cache_shape s;
  memset(&s, 0, sizeof s);
  l->kind->cache_shape(l->d.bytes, &s);
  if (l->kind->check_call) {
    char why[200] = "";
    if ((rc = l->kind->check_call(l->d.bytes, capacity, 1, 1, why, sizeof why)))
      return clattn__fail(ctx, rc, "KV cache: %s", why);
  }
  if (!(kb = clattn__bytes(1, batch, s.heads_k, capacity,
                           (long long)s.dim_k * 4)) ||
      !(vb = clattn__bytes(1, batch, s.heads_v, capacity,
                           (long long)s.dim_v * 4)))
    return clattn__fail(ctx, CLATTN_ERR_SHAPE, "KV cache: size overflows");
  if ((cl_ulong)kb > ctx->dev.max_alloc || (cl_ulong)vb > ctx->dev.max_alloc)
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "KV cache: %zu-byte K or %zu-byte V buffer exceeds "
                        "the device's max allocation (%llu bytes)",
                        kb, vb, (unsigned long long)ctx->dev.max_alloc);

  c = calloc(1, sizeof *c);
  if (c == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "KV cache: out of host memory");
  c->magic = CLATTN__KVC_MAGIC;
  c->ctx = ctx;
  c->batch = batch;
  c->capacity = capacity;
  c->shape = s;
  const size_t ib = (size_t)batch * sizeof(cl_int);
  if ((rc = new_buffer(ctx, kb, 1, "clCreateBuffer(K cache)", &c->k)) ||
      (!s.shared &&
       (rc = new_buffer(ctx, vb, 1, "clCreateBuffer(V cache)", &c->v))) ||
      (rc = new_buffer(ctx, ib, 0, "clCreateBuffer(cache positions)",
                       &c->pos)) ||
      (rc =
           new_buffer(ctx, ib, 0, "clCreateBuffer(cache lengths)", &c->lens))) {
    clattn_kv_cache_destroy(c);
    return rc;
  }
  if (s.shared)
    c->v = c->k;
  *out = c;
  return CLATTN_OK;
}

/* The context's lock: the cache is made and cleared on its queue. */
clattn_status clattn_kv_cache_create(clattn_layer *l, int batch, int capacity,
                                     clattn_kv_cache **out) {
  clattn_ctx *locked = clattn__ctx_enter(
      l != NULL && l->magic == CLATTN__LAYER_MAGIC ? l->ctx : NULL);
  clattn_status rc = cache_create(l, batch, capacity, out);
  clattn__ctx_leave(locked);
  return rc;
}

void clattn_kv_cache_destroy(clattn_kv_cache *c) {
  if (c == NULL || c->magic != CLATTN__KVC_MAGIC)
    return;
  cl_mem m[4] = {c->k, c->v != c->k ? c->v : NULL, c->pos, c->lens};
  for (int i = 0; i < 4; i++)
    if (m[i] != NULL)
      clReleaseMemObject(m[i]);
  c->magic = 0;
  free(c);
}

int clattn_kv_cache_len(const clattn_kv_cache *c) {
  if (c == NULL || c->magic != CLATTN__KVC_MAGIC)
    return 0;
  return c->len;
}

void clattn_kv_cache_reset(clattn_kv_cache *c) {
  if (c == NULL || c->magic != CLATTN__KVC_MAGIC)
    return;
  c->len = 0;
}
