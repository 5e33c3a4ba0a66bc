/* prefill_unfused.c - the prefill family's "unfused" baseline of `clattn
 * bench`: per batch and query head, S = Q K^T (CLBlast's Sgemm), the
 * softmax of cl/unfused.cl over S in place, then O = P V (Sgemm), straight
 * from the call's tensors through offsets and leading dimensions.  It
 * computes what the fused kernels do for f32 with either layout, GQA head
 * groups and the causal mask, over the full key length (the bench passes
 * no kv_lens); any other call has no unfused baseline. */
#include "base/clblast_status.h"
#include "family/common.h"
#include "family/family.h"

#include <clblast_c.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { Q, K, V, KV_LENS, O };

typedef struct unfused {
  cl_mem s; /* the logits and probabilities, [batch, heads_q, n, m] */
} unfused;

static void destroy(void *state) {
  unfused *u = state;
  if (u == NULL)
    return;
  if (u->s)
    clReleaseMemObject(u->s);
  free(u);
}

static clattn_status create(clattn_ctx *ctx, const void *desc, void **state) {
  const clattn_attn_desc *d = desc;
  cl_int err = CL_SUCCESS;
  *state = NULL;
  if (d->dtype != CLATTN_F32)
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "the unfused baseline computes f32 only");
  const double bytes =
      4.0 * d->batch * d->heads_q * (double)d->n_q * (double)d->n_kv;
  if (bytes > (double)ctx->dev.max_alloc || bytes > 0x7fffffffffffLL)
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "the unfused baseline's logits (%.0f bytes) exceed "
                        "the device's largest buffer",
                        bytes);
  unfused *u = calloc(1, sizeof *u);
  if (u == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  u->s = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, (size_t)bytes, NULL,
                        &err);
  if (err != CL_SUCCESS) {
    destroy(u);
    return clattn__cl_fail(ctx, err, "clCreateBuffer(unfused logits)", __FILE__,
                           __LINE__);
  }
  *state = u;
  return CLATTN_OK;
}

/* Offset and leading dimension of head h of sequence b in a tensor of
 * `heads` heads of `dim`, seq rows, in layout l. */
static void head_at(clattn_layout l, size_t b, size_t h, size_t seq,
                    size_t heads, size_t dim, size_t *off, size_t *ld) {
  if (l == CLATTN_BHSD) {
    *off = (b * heads + h) * seq * dim;
    *ld = dim;
  } else {
    *off = (b * seq * heads + h) * dim;
    *ld = heads * dim;
  }
}

static clattn_status gemm_fail(clattn_ctx *ctx, const char *what,
                               CLBlastStatusCode s) {
  return clattn__fail(ctx, CLATTN_ERR_CLBLAST,
                      "unfused baseline: CLBlastSgemm (%s) failed: %s (%d)",
                      what, clattn__clblast_status_str(s), (int)s);
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *state,
                             const cl_mem *bufs) {
  const clattn_attn_desc *d = desc;
  unfused *u = state;
  cl_command_queue q = ctx->queue;
  const size_t n = (size_t)d->n_q, m = (size_t)d->n_kv;
  const size_t hq = (size_t)d->heads_q, hkv = (size_t)d->heads_kv;
  const size_t dk = (size_t)d->head_dim_k, dv = (size_t)d->head_dim_v;
  const size_t group = hq / hkv;
  clattn_status rc = CLATTN_OK;
  cl_kernel k;
  for (size_t b = 0; b < (size_t)d->batch; b++)
    for (size_t h = 0; h < hq; h++) {
      size_t qo, qld, ko, kld;
      head_at(d->q_layout, b, h, n, hq, dk, &qo, &qld);
      head_at(d->kv_layout, b, h / group, m, hkv, dk, &ko, &kld);
      CLBlastStatusCode s = CLBlastSgemm(
          CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeYes, n, m,
          dk, 1.0f, bufs[Q], qo, qld, bufs[K], ko, kld, 0.0f, u->s,
          (b * hq + h) * n * m, m, &q, NULL);
      if (s != CLBlastSuccess)
        return gemm_fail(ctx, "Q K^T", s);
    }
  const cl_int ni = (cl_int)n, mi = (cl_int)m, causal = d->causal != 0;
  const float scale = d->scale > 0 ? d->scale : 1.0f / sqrtf((float)dk);
  const size_t rows = (size_t)d->batch * hq * n;
  CLATTN_TRY(clattn__kernel(ctx, "unfused.cl", "", "softmax_rows", &k));
  CLATTN_TRY(clattn__arg(ctx, k, 0, sizeof(cl_mem), &u->s));
  CLATTN_TRY(clattn__arg(ctx, k, 1, sizeof ni, &ni));
  CLATTN_TRY(clattn__arg(ctx, k, 2, sizeof mi, &mi));
  CLATTN_TRY(clattn__arg(ctx, k, 3, sizeof scale, &scale));
  CLATTN_TRY(clattn__arg(ctx, k, 4, sizeof causal, &causal));
  CLATTN_TRY(clattn__launch(ctx, k, 1, &rows, NULL, 0, NULL, NULL));
  for (size_t b = 0; b < (size_t)d->batch; b++)
    for (size_t h = 0; h < hq; h++) {
      size_t vo, vld, oo, old;
      head_at(d->kv_layout, b, h / group, m, hkv, dv, &vo, &vld);
      head_at(d->q_layout, b, h, n, hq, dv, &oo, &old);
      CLBlastStatusCode s = CLBlastSgemm(
          CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, dv,
          m, 1.0f, u->s, (b * hq + h) * n * m, m, bufs[V], vo, vld, 0.0f,
          bufs[O], oo, old, &q, NULL);
      if (s != CLBlastSuccess)
        return gemm_fail(ctx, "P V", s);
    }
done:
  return rc;
}

const clattn__baseline clattn__prefill_unfused = {
    .name = "unfused",
    .create = create,
    .enqueue = enqueue,
    .destroy = destroy,
};
