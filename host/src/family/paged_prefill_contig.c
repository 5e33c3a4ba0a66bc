/* paged_prefill_contig.c - the paged-prefill family's "contiguous" baseline
 * of `clattn bench`: the same call run by the prefill family (through
 * clattn__call) over a contiguous copy of each sequence's keys, so a bench
 * row compares paging's cost with the contiguous cache's kernel.  The copy
 * (dequantized for an int8 cache) is gathered on the host by the first
 * call, outside the timed ones; it computes f32 calls only. */
#include "call/call.h"
#include "family/paged_prefill.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct contig {
  cl_mem k, v; /* [batch, max_blocks * page_size, heads_kv, head_dim] f32 */
  int gathered;
} contig;

static void destroy(void *state) {
  contig *c = state;
  if (c == NULL)
    return;
  if (c->k)
    clReleaseMemObject(c->k);
  if (c->v)
    clReleaseMemObject(c->v);
  free(c);
}

static size_t rows_of(const clattn_paged_desc *d) {
  return (size_t)d->batch * d->max_blocks * d->page_size * d->heads_kv;
}

static clattn_status create(clattn_ctx *ctx, const void *desc, void **state) {
  const clattn_paged_desc *d = desc;
  cl_int e1 = CL_SUCCESS, e2 = CL_SUCCESS;
  *state = NULL;
  if (d->dtype != CLATTN_F32)
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "the contiguous baseline computes f32 only");
  contig *c = calloc(1, sizeof *c);
  if (c == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  c->k = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE,
                        rows_of(d) * d->head_dim_k * 4, NULL, &e1);
  c->v = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE,
                        rows_of(d) * d->head_dim_v * 4, NULL, &e2);
  if (e1 != CL_SUCCESS || e2 != CL_SUCCESS) {
    destroy(c);
    return clattn__cl_fail(ctx, e1 != CL_SUCCESS ? e1 : e2,
                           "clCreateBuffer(contiguous cache)", __FILE__,
                           __LINE__);
  }
  *state = c;
  return CLATTN_OK;
}

/* One cache (K or V, dims dh) gathered page by page into out, f32. */
static void gather(const clattn_paged_desc *d, int dh, const void *pool,
                   const float *scales, const int *table, const int *lens,
                   float *out) {
  const int P = d->page_size, mb = d->max_blocks, hkv = d->heads_kv;
  const size_t row = (size_t)hkv * dh;
  const long cap = (long)mb * P;
  for (int b = 0; b < d->batch; b++)
    for (long t = 0; t < cap; t++) {
      float *dst = out + ((size_t)b * cap + t) * row;
      const int page = t < lens[b] ? table[(long)b * mb + t / P] : -1;
      if (page < 0 || page >= d->num_blocks) {
        memset(dst, 0, row * sizeof *dst);
        continue;
      }
      const size_t src = ((size_t)page * P + t % P) * row;
      for (size_t e = 0; e < row; e++)
        dst[e] = scales ? ((const int8_t *)pool)[src + e] *
                              scales[((size_t)page * P + t % P) * hkv + e / dh]
                        : ((const float *)pool)[src + e];
    }
}

/* Read the paged cache back and write its contiguous copy. */
static clattn_status gather_all(clattn_ctx *ctx, const clattn_paged_desc *d,
                                contig *c, const cl_mem *bufs) {
  const int i8 = clattn__paged_cache_dtype(d) == CLATTN_I8;
  const size_t pool = (size_t)d->num_blocks * d->page_size * d->heads_kv;
  const size_t ce = i8 ? 1 : 4, nt = (size_t)d->batch * d->max_blocks;
  const int dims[2] = {d->head_dim_k, d->head_dim_v};
  const cl_mem src[2] = {bufs[PA_K_CACHE], bufs[PA_V_CACHE]};
  const cl_mem sc[2] = {bufs[PA_K_SCALE], bufs[PA_V_SCALE]};
  const cl_mem dst[2] = {c->k, c->v};
  int *table = malloc(nt * sizeof *table);
  int *lens = malloc((size_t)d->batch * sizeof *lens);
  clattn_status rc = CLATTN_OK;
  cl_int err = CL_SUCCESS;
  if (table == NULL || lens == NULL)
    rc = clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  if (rc == CLATTN_OK &&
      (err = clattn__paged_read_tables(ctx, d, bufs, table, lens)))
    rc = clattn__cl_fail(ctx, err, "clEnqueueReadBuffer", __FILE__, __LINE__);
  for (int i = 0; i < 2 && rc == CLATTN_OK; i++) {
    void *raw = malloc(pool * dims[i] * ce);
    float *scales = i8 ? malloc(pool * sizeof *scales) : NULL;
    float *out = malloc(rows_of(d) * dims[i] * sizeof *out);
    if (raw == NULL || out == NULL || (i8 && scales == NULL))
      rc = clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
    else if ((err = clEnqueueReadBuffer(ctx->queue, src[i], CL_TRUE, 0,
                                        pool * dims[i] * ce, raw, 0, NULL,
                                        NULL)) ||
             (i8 && (err = clEnqueueReadBuffer(ctx->queue, sc[i], CL_TRUE, 0,
                                               pool * sizeof *scales, scales, 0,
                                               NULL, NULL))))
      rc = clattn__cl_fail(ctx, err, "clEnqueueReadBuffer", __FILE__, __LINE__);
    if (rc == CLATTN_OK) {
      gather(d, dims[i], raw, scales, table, lens, out);
      if ((err = clEnqueueWriteBuffer(ctx->queue, dst[i], CL_TRUE, 0,
                                      rows_of(d) * dims[i] * sizeof *out, out,
                                      0, NULL, NULL)))
        rc = clattn__cl_fail(ctx, err, "clEnqueueWriteBuffer", __FILE__,
                             __LINE__);
    }
    free(raw);
    free(scales);
    free(out);
  }
  free(table);
  free(lens);
  return rc;
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *state,
                             const cl_mem *bufs) {
  const clattn_paged_desc *d = desc;
  contig *c = state;
  clattn_status rc;
  if (!c->gathered) {
    if ((rc = gather_all(ctx, d, c, bufs)))
      return rc;
    c->gathered = 1;
  }
  const clattn_attn_desc a = {.size = sizeof a,
                              .batch = d->batch,
                              .n_q = d->n_q,
                              .n_kv = d->max_blocks * d->page_size,
                              .heads_q = d->heads_q,
                              .heads_kv = d->heads_kv,
                              .head_dim_k = d->head_dim_k,
                              .head_dim_v = d->head_dim_v,
                              .dtype = d->dtype,
                              .q_layout = CLATTN_BSHD,
                              .kv_layout = CLATTN_BSHD,
                              .scale = d->scale,
                              .causal = d->causal,
                              .window = d->window,
                              .softcap = d->softcap,
                              .alibi_slopes = d->alibi_slopes,
                              .sinks = d->sinks};
  const cl_mem b[5] = {bufs[PA_Q], c->k, c->v, bufs[PA_LENS], bufs[PA_O]};
  return clattn__call(ctx, &clattn__family_prefill, &a, NULL, b, NULL);
}

const clattn__baseline clattn__paged_prefill_contig = {
    .name = "contiguous",
    .create = create,
    .enqueue = enqueue,
    .destroy = destroy,
};
