/* consts.c - small read-only device buffers kept by their contents: the
 * attention options' per-head arrays (ALiBi slopes, sinks) arrive as host
 * memory at every call, and a serving loop passes the same few arrays over
 * and over; a call pays a hash and a compare, not an upload.  The cache is
 * a few slots, the least recently used refilled; a released buffer stays
 * alive while queued kernels read it (OpenCL's reference counting).
 * Everything here runs under the context's lock. */
#include "runtime/runtime.h"

#include <stdlib.h>
#include <string.h>

static uint64_t contents_hash(const void *data, size_t bytes) {
  clattn__hash h = clattn__hash_init();
  clattn__hash_bytes(&h, data, bytes);
  return h.a ^ h.b;
}

static void slot_clear(clattn__const_buf *c) {
  if (c->mem != NULL)
    clReleaseMemObject(c->mem);
  free(c->data);
  memset(c, 0, sizeof *c);
}

clattn_status clattn__const_buffer(clattn_ctx *ctx, const void *data,
                                   size_t bytes, cl_mem *out) {
  const uint64_t hash = contents_hash(data, bytes);
  clattn__const_buf *victim = &ctx->consts[0];
  for (int i = 0; i < CLATTN__CONST_SLOTS; i++) {
    clattn__const_buf *c = &ctx->consts[i];
    if (c->mem != NULL && c->hash == hash && c->bytes == bytes &&
        memcmp(c->data, data, bytes) == 0) {
      c->used = ++ctx->consts_clock;
      *out = c->mem;
      return CLATTN_OK;
    }
    if (c->mem == NULL || (victim->mem != NULL && c->used < victim->used))
      victim = c;
  }
  void *copy = malloc(bytes);
  if (copy == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  memcpy(copy, data, bytes);
  cl_int err = CL_SUCCESS;
  /* the copy is made at creation: nothing is enqueued, nothing waits */
  cl_mem m = clCreateBuffer(
      ctx->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, copy, &err);
  if (err != CL_SUCCESS) {
    free(copy);
    return clattn__cl_fail(ctx, err, "clCreateBuffer", __FILE__, __LINE__);
  }
  slot_clear(victim);
  *victim = (clattn__const_buf){m, hash, bytes, copy, ++ctx->consts_clock};
  *out = m;
  return CLATTN_OK;
}

void clattn__consts_free(clattn_ctx *ctx) {
  for (int i = 0; i < CLATTN__CONST_SLOTS; i++)
    slot_clear(&ctx->consts[i]);
}
