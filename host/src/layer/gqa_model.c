/* gqa_model.c - the model of a whole GQA layer call: its kind's
 * projections as ideal GEMMs (or GEMV rows) around the core families'
 * kernels. */
#include "family/common.h"
#include "family/decode.h"
#include "layer/layer.h"
#include "model/model.h"

#include <stdio.h>
#include <string.h>

/* An ideal GEMM (or the GEMV rows the layer uses for short inputs):
 * C[m,n] = A[m,k] B[k,n], each matrix moved once, 2mnk FLOPs. */
static void add_gemm(clattn_prediction *out, double *dram_reads,
                     const char *name, double m, double n, double k) {
  clattn_cost *c = clattn__model_kernel(out, name);
  if (c == NULL)
    return;
  c->launches = m <= CLATTN_LAYER_GEMV_ROWS ? (int)m + 1 : 1;
  c->flops = 2.0 * m * n * k;
  c->fma_issued = m * n * k;
  c->bytes_read = 4.0 * (m * k + k * n);
  c->bytes_written = 4.0 * m * n;
  c->bytes_compulsory = c->bytes_read + c->bytes_written;
  c->bytes_dram = c->bytes_compulsory;
  dram_reads[out->n_kernels - 1] = c->bytes_read;
}

/* Projection i of the kind over `rows` rows, as add_gemm. */
static void add_projection(clattn_prediction *out, double *dram_reads,
                           const clattn__layer_kind *K,
                           const clattn_layer_desc *d, int i, double rows) {
  long inner, cols;
  K->weight_shape(d, K->proj[i].weight, &inner, &cols);
  char name[32];
  snprintf(name, sizeof name, "gemm %s", K->proj[i].name);
  add_gemm(out, dram_reads, name, rows, (double)cols, (double)inner);
}

/* Append the kernels of sub-prediction `sub` to `out`. */
static void merge(clattn_prediction *out, double *dram_reads,
                  const clattn_prediction *sub) {
  for (int i = 0; i < sub->n_kernels; i++) {
    if (out->n_kernels >= CLATTN_MODEL_MAX_KERNELS)
      return;
    const clattn_cost *c = &sub->kernel[i];
    dram_reads[out->n_kernels] = c->bytes_dram - c->bytes_written;
    out->kernel[out->n_kernels++] = *c;
  }
}

clattn_status clattn_model_layer(const clattn_layer_desc *d, int batch, int n,
                                 int cache_len, int causal,
                                 const clattn_profile *prof,
                                 clattn_prediction *out) {
  if (prof == NULL || out == NULL || d == NULL)
    return CLATTN_ERR_INVALID_ARG;
  memset(out, 0, sizeof *out);
  clattn_status rc;
  if (d->d_model < 1 || batch < 1 || n < 1 || cache_len < 0)
    return clattn__model_fail(out, CLATTN_ERR_SHAPE,
                              "d_model, batch and n must be >= 1, "
                              "cache_len >= 0");
  if ((rc = clattn__check_heads(d->heads_q, d->heads_kv, d->head_dim_k,
                                d->head_dim_v, CLATTN_F32, out->errmsg,
                                sizeof out->errmsg)))
    return rc;
  const clattn__layer_kind *K = &clattn__layer_gqa;
  double dram_reads[CLATTN_MODEL_MAX_KERNELS] = {0};
  const double rows = (double)batch * n;
  for (int i = 0; i < K->nproj_in; i++)
    add_projection(out, dram_reads, K, d, i, rows);
  clattn_prediction sub;
  const int m = cache_len + n;
  if (cache_len == 0 && n > 1) {
    const clattn_attn_desc ad = {batch,         n,           n,
                                 d->heads_q,    d->heads_kv, d->head_dim_k,
                                 d->head_dim_v, CLATTN_F32,  CLATTN_BSHD,
                                 CLATTN_BSHD,   d->scale,    causal != 0,
                                 NULL};
    rc = clattn__model(K->prefill, &ad, NULL, prof, &sub);
  } else {
    /* every sequence appends its n rows at cache_len < m: all are written,
     * as with pos = 0 (NULL) */
    const clattn__append_desc a = {{batch, m, d->heads_q, d->heads_kv,
                                    d->head_dim_k, d->head_dim_v, CLATTN_F32,
                                    CLATTN_BHSD, d->scale, NULL},
                                   n};
    rc = clattn__model(K->append, &a, NULL, prof, &sub);
    if (rc == CLATTN_OK) {
      merge(out, dram_reads, &sub);
      if (n == 1) {
        rc = clattn__model(K->decode, &a.cache, NULL, prof, &sub);
      } else {
        const clattn_attn_desc ad = {batch,         n,           m,
                                     d->heads_q,    d->heads_kv, d->head_dim_k,
                                     d->head_dim_v, CLATTN_F32,  CLATTN_BSHD,
                                     CLATTN_BHSD,   d->scale,    causal != 0,
                                     NULL};
        rc = clattn__model(K->prefill, &ad, NULL, prof, &sub);
      }
    }
  }
  if (rc != CLATTN_OK) {
    snprintf(out->errmsg, sizeof out->errmsg, "%s", sub.errmsg);
    return rc;
  }
  merge(out, dram_reads, &sub);
  for (int i = K->nproj_in; i < K->nproj; i++)
    add_projection(out, dram_reads, K, d, i, rows);
  clattn__model_finish(out, dram_reads, prof);
  return CLATTN_OK;
}
