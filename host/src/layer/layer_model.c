/* layer_model.c - the model of a whole layer call of any kind: its
 * projections as the projection family predicts them (what the layer's calls
 * run) around the kernels of the core calls the kind builds, in the order
 * layer.c makes them. */
#include "family/cvmm.h"
#include "layer/layer.h"
#include "model/model.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Append the kernels of sub-prediction `sub` to `out`; name, when not
 * NULL, replaces their names. */
static void merge(clattn_prediction *out, double *dram_reads,
                  const clattn_prediction *sub, const char *name) {
  for (int i = 0; i < sub->n_kernels; i++) {
    if (out->n_kernels >= CLATTN_MODEL_MAX_KERNELS)
      return;
    const clattn_cost *c = &sub->kernel[i];
    dram_reads[out->n_kernels] = c->bytes_dram - c->bytes_written;
    out->kernel[out->n_kernels] = *c;
    /* its in-core record (barriers) goes with it, as core[i] of kernel[i] */
    out->core[out->n_kernels] = sub->core[i];
    if (name)
      snprintf(out->kernel[out->n_kernels].kernel, sizeof out->kernel[0].kernel,
               "%s", name);
    out->n_kernels++;
  }
}

/* Projection i of the kind over `rows` rows: the projection family's model of
 * the call the layer makes, its kernels named "gemm <projection>". */
static clattn_status add_projection(clattn_prediction *out, double *dram_reads,
                                    const clattn__layer_kind *K, const void *d,
                                    int i, double rows,
                                    const clattn_profile *prof) {
  long inner, cols;
  K->weight_shape(d, K->proj[i].weight, &inner, &cols);
  if (inner > INT32_MAX || cols > INT32_MAX || rows > INT32_MAX)
    return clattn__model_fail(out, CLATTN_ERR_SHAPE,
                              "a projection's sizes overflow");
  const clattn__gemm_desc g = {(int)rows, (int)cols, (int)inner};
  clattn_prediction sub;
  clattn_status rc =
      clattn__model(&clattn__family_projection, &g, NULL, NULL, prof, &sub);
  if (rc != CLATTN_OK) {
    snprintf(out->errmsg, sizeof out->errmsg, "%s", sub.errmsg);
    return rc;
  }
  char name[32];
  snprintf(name, sizeof name, "gemm %s", K->proj[i].name);
  merge(out, dram_reads, &sub, name);
  return CLATTN_OK;
}

/* The model of core call `op` merged into out. */
static clattn_status add_core(clattn_prediction *out, double *dram_reads,
                              const clattn__layer_kind *K, const void *d,
                              clattn__core_op op, const clattn__core_args *a,
                              const clattn_profile *prof) {
  if (K->family[op] == NULL)
    return CLATTN_OK; /* the kind makes no such call */
  const clattn__family *F = clattn__layer_family(NULL, K, op);
  if (F == NULL)
    return clattn__model_fail(out, CLATTN_ERR_UNSUPPORTED,
                              "its core family is not in this build");
  clattn__core_call call;
  memset(&call, 0, sizeof call);
  K->core(d, op, a, &call);
  clattn_prediction sub;
  clattn_status rc = clattn__model(F, call.desc.bytes, NULL, NULL, prof, &sub);
  if (rc != CLATTN_OK) {
    snprintf(out->errmsg, sizeof out->errmsg, "%s", sub.errmsg);
    return rc;
  }
  merge(out, dram_reads, &sub, NULL);
  return CLATTN_OK;
}

clattn_status clattn__layer_model(const clattn__layer_kind *K, const void *d,
                                  int batch, int n, int cache_len, int causal,
                                  const clattn_profile *prof,
                                  clattn_prediction *out) {
  double dram_reads[CLATTN_MODEL_MAX_KERNELS] = {0};
  const double rows = (double)batch * n;
  clattn_status rc = CLATTN_OK;
  for (int i = 0; i < K->nproj_in && rc == CLATTN_OK; i++)
    rc = add_projection(out, dram_reads, K, d, i, rows, prof);
  if (rc != CLATTN_OK)
    return rc;
  clattn__core_args a;
  memset(&a, 0, sizeof a);
  a.batch = batch;
  a.n = n;
  a.causal = causal != 0;
  int heads;
  a.opts = K->options(d, &heads);
  if (cache_len == 0 && n > 1) {
    rc = add_core(out, dram_reads, K, d, CLATTN__CORE_MIX_IN, &a, prof);
    if (rc == CLATTN_OK)
      rc = add_core(out, dram_reads, K, d, CLATTN__CORE_VALUES, &a, prof);
    if (rc == CLATTN_OK)
      rc = add_core(out, dram_reads, K, d, CLATTN__CORE_PREFILL, &a, prof);
  } else {
    /* every sequence appends its n rows at cache_len < capacity: all are
     * written, as with pos = 0 (NULL) */
    a.capacity = cache_len + n;
    a.cached = cache_len;
    rc = add_core(out, dram_reads, K, d, CLATTN__CORE_MIX_IN, &a, prof);
    if (rc == CLATTN_OK)
      rc = add_core(out, dram_reads, K, d, CLATTN__CORE_APPEND, &a, prof);
    if (rc == CLATTN_OK)
      rc = add_core(out, dram_reads, K, d, CLATTN__CORE_VALUES, &a, prof);
    if (rc == CLATTN_OK)
      rc = add_core(out, dram_reads, K, d,
                    n == 1 ? CLATTN__CORE_DECODE : CLATTN__CORE_PREFILL, &a,
                    prof);
  }
  if (rc != CLATTN_OK)
    return rc;
  for (int i = K->nproj_in; i < K->nproj && rc == CLATTN_OK; i++)
    rc = add_projection(out, dram_reads, K, d, i, rows, prof);
  if (rc == CLATTN_OK)
    rc = add_core(out, dram_reads, K, d, CLATTN__CORE_MIX_OUT, &a, prof);
  if (rc != CLATTN_OK)
    return rc;
  clattn__model_finish(out, dram_reads, prof);
  return CLATTN_OK;
}
