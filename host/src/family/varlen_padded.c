/* varlen_padded.c - the varlen family's "padded" baseline of `clattn
 * bench`: the same ragged batch run the way a library without ragged
 * batches runs it, as the prefill family's call over a padded batch
 * [batch, longest, heads, dim] with kv_lens (each sequence's queries the
 * last len_q rows of its block, so that they sit at the positions the
 * ragged call gives them; its keys the first len_k).  The padded tensors
 * are made once (create); each call copies the packed rows in and the
 * output rows out (a few megabytes beside the attention's work) so that
 * the bench compares its output with the library's.  It plans the prefill
 * family's automatic choice on the context's device, as the ragged call
 * without tuning does.  The lengths are the full call's (the mixed
 * pattern, varlen.h), which is what the bench passes. */
#include "family/family.h"
#include "family/varlen.h"

#include <stdlib.h>

enum { Q, K, V, CU_Q, CU_K, O };
enum { PQ, PK, PV, PLENS, PO };

typedef struct padded {
  clattn_attn_desc pd;
  _Alignas(16) unsigned char plan[CLATTN__PLAN_MAX];
  cl_mem buf[5];
  int *cu_q, *cu_k; /* [batch + 1] each */
} padded;

static void destroy(void *state) {
  padded *p = state;
  if (p == NULL)
    return;
  for (int i = 0; i < 5; i++)
    if (p->buf[i])
      clReleaseMemObject(p->buf[i]);
  free(p->cu_q);
  free(p->cu_k);
  free(p);
}

/* Offsets of the full call's lengths. */
static void offsets(int batch, int total, int *cu) {
  cu[0] = 0;
  clattn__varlen_pattern(batch, total, cu + 1);
  for (int b = 0; b < batch; b++)
    cu[b + 1] += cu[b];
}

static clattn_status create(clattn_ctx *ctx, const void *desc, void **state) {
  const clattn_varlen_desc *d = desc;
  cl_int err = CL_SUCCESS;
  char why[256];
  *state = NULL;
  padded *p = calloc(1, sizeof *p);
  if (p == NULL || (p->cu_q = malloc((d->batch + 1) * sizeof(int))) == NULL ||
      (p->cu_k = malloc((d->batch + 1) * sizeof(int))) == NULL) {
    destroy(p);
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  }
  offsets(d->batch, d->total_q, p->cu_q);
  offsets(d->batch, d->total_k, p->cu_k);
  int most_q = 1, most_k = 1;
  int *lens = malloc(d->batch * sizeof *lens);
  if (lens == NULL) {
    destroy(p);
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  }
  for (int b = 0; b < d->batch; b++) {
    const int nq = p->cu_q[b + 1] - p->cu_q[b];
    lens[b] = p->cu_k[b + 1] - p->cu_k[b];
    most_q = nq > most_q ? nq : most_q;
    most_k = lens[b] > most_k ? lens[b] : most_k;
  }
  p->pd = (clattn_attn_desc){.size = sizeof p->pd,
                             .batch = d->batch,
                             .n_q = most_q,
                             .n_kv = most_k,
                             .heads_q = d->heads_q,
                             .heads_kv = d->heads_kv,
                             .head_dim_k = d->head_dim_k,
                             .head_dim_v = d->head_dim_v,
                             .dtype = d->dtype,
                             .q_layout = CLATTN_BSHD,
                             .kv_layout = CLATTN_BSHD,
                             .scale = d->scale,
                             .causal = d->causal};
  CLATTN__OPTS_PUT(&p->pd, CLATTN__OPTS_OF(d));
  const clattn__family *F = &clattn__family_prefill;
  clattn__buf_spec spec[CLATTN__MAX_BUFS];
  if (clattn__baseline_plan(ctx, F, &p->pd, p->plan, why, sizeof why)) {
    free(lens);
    destroy(p);
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED, "the padded baseline: %s",
                        why);
  }
  F->buffers(&p->pd, spec);
  for (int i = 0; i < 5 && err == CL_SUCCESS; i++) {
    const size_t bytes =
        spec[i].elems *
        (i == PLENS ? sizeof(cl_int) : clattn_dtype_size(spec[i].dtype));
    p->buf[i] =
        clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err == CL_SUCCESS && i != PLENS) {
      const cl_uchar zero = 0;
      err = clEnqueueFillBuffer(ctx->queue, p->buf[i], &zero, 1, 0, bytes, 0,
                                NULL, NULL);
    }
  }
  if (err == CL_SUCCESS)
    err = clEnqueueWriteBuffer(ctx->queue, p->buf[PLENS], CL_TRUE, 0,
                               d->batch * sizeof(int), lens, 0, NULL, NULL);
  if (err == CL_SUCCESS)
    err = clFinish(ctx->queue);
  free(lens);
  if (err != CL_SUCCESS) {
    destroy(p);
    return clattn__cl_fail(ctx, err, "the padded baseline's buffers", __FILE__,
                           __LINE__);
  }
  *state = p;
  return CLATTN_OK;
}

/* Rows a .. a + rows - 1 of a [*, row] tensor from src into dst's rows
 * from b on (row: bytes a row). */
static cl_int copy_rows(clattn_ctx *ctx, cl_mem src, size_t a, cl_mem dst,
                        size_t b, size_t rows, size_t row) {
  if (rows == 0)
    return CL_SUCCESS;
  return clEnqueueCopyBuffer(ctx->queue, src, dst, a * row, b * row, rows * row,
                             0, NULL, NULL);
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *state,
                             const cl_mem *bufs) {
  const clattn_varlen_desc *d = desc;
  padded *p = state;
  const size_t es = clattn_dtype_size(d->dtype);
  const size_t nq = (size_t)p->pd.n_q, nk = (size_t)p->pd.n_kv;
  const size_t qrow = es * d->heads_q * d->head_dim_k;
  const size_t krow = es * d->heads_kv * d->head_dim_k;
  const size_t vrow = es * d->heads_kv * d->head_dim_v;
  const size_t orow = es * d->heads_q * d->head_dim_v;
  cl_int err = CL_SUCCESS;
  for (int b = 0; b < d->batch && err == CL_SUCCESS; b++) {
    const size_t lq = (size_t)(p->cu_q[b + 1] - p->cu_q[b]);
    const size_t lk = (size_t)(p->cu_k[b + 1] - p->cu_k[b]);
    err = copy_rows(ctx, bufs[Q], p->cu_q[b], p->buf[PQ], b * nq + nq - lq, lq,
                    qrow);
    if (err == CL_SUCCESS)
      err = copy_rows(ctx, bufs[K], p->cu_k[b], p->buf[PK], b * nk, lk, krow);
    if (err == CL_SUCCESS)
      err = copy_rows(ctx, bufs[V], p->cu_k[b], p->buf[PV], b * nk, lk, vrow);
  }
  if (err != CL_SUCCESS)
    return clattn__cl_fail(ctx, err, "clEnqueueCopyBuffer(padded batch)",
                           __FILE__, __LINE__);
  clattn_status rc = clattn__baseline_enqueue(ctx, &clattn__family_prefill,
                                              &p->pd, p->plan, p->buf);
  if (rc)
    return rc;
  for (int b = 0; b < d->batch && err == CL_SUCCESS; b++) {
    const size_t lq = (size_t)(p->cu_q[b + 1] - p->cu_q[b]);
    err = copy_rows(ctx, p->buf[PO], b * nq + nq - lq, bufs[O], p->cu_q[b], lq,
                    orow);
  }
  if (err != CL_SUCCESS)
    return clattn__cl_fail(ctx, err, "clEnqueueCopyBuffer(padded output)",
                           __FILE__, __LINE__);
  return CLATTN_OK;
}

const clattn__baseline clattn__varlen_padded = {
    .name = "padded",
    .create = create,
    .enqueue = enqueue,
    .destroy = destroy,
};
