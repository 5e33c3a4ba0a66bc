/* paged_api.c - the public functions of the paged and ragged caches'
 * families: clattn_paged_attention (a decode step or a chunked prefill by
 * n_q), clattn_paged_append and clattn_varlen_attention, and their model
 * calls; thin wrappers as api.c's. */
#include "call/call.h"
#include "family/family.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define PAGED_PARAMS ((long)offsetof(clattn_paged_desc, params))
#define VARLEN_PARAMS ((long)offsetof(clattn_varlen_desc, params))

/* A step of one query a sequence is the split-KV decode's; more queries
 * are the chunked prefill's.  (NULL or a bad n_q: the decode's checks name
 * it.) */
static const clattn__family *paged_family(const clattn_paged_desc *d) {
  return d != NULL &&
                 d->size >= offsetof(clattn_paged_desc, n_q) + sizeof d->n_q &&
                 d->n_q > 1
             ? &clattn__family_paged_prefill
             : &clattn__family_paged_decode;
}

clattn_status clattn_paged_attention(clattn_ctx *ctx,
                                     const clattn_paged_desc *d, cl_mem q,
                                     cl_mem k_cache, cl_mem v_cache,
                                     cl_mem k_scale, cl_mem v_scale,
                                     cl_mem block_table, cl_mem kv_lens,
                                     cl_mem o, const clattn_events *ev) {
  clattn__public_args own;
  const void *desc = d;
  const clattn__family *F = paged_family(d);
  clattn_status rc = clattn__ctx_args_in(ctx, &own, F, "clattn_paged_desc",
                                         &desc, sizeof *d, PAGED_PARAMS, &ev);
  if (rc)
    return rc;
  const cl_mem bufs[9] = {q,           k_cache, v_cache, k_scale, v_scale,
                          block_table, kv_lens, o,       NULL};
  return clattn__call(ctx, F, desc, own.params, bufs, ev);
}

/* The description's params are the attention's: the append has no
 * tunables and never reads them. */
clattn_status clattn_paged_append(clattn_ctx *ctx, const clattn_paged_desc *d,
                                  cl_mem k_new, cl_mem v_new,
                                  cl_mem block_table, cl_mem kv_lens,
                                  cl_mem k_cache, cl_mem v_cache,
                                  cl_mem k_scale, cl_mem v_scale,
                                  const clattn_events *ev) {
  clattn__public_args own;
  const void *desc = d;
  const clattn__family *F = &clattn__family_paged_append;
  clattn_status rc =
      clattn__ctx_args_in(ctx, &own, F, "clattn_paged_desc", &desc, sizeof *d,
                          CLATTN__NO_PARAMS, &ev);
  if (rc)
    return rc;
  const cl_mem bufs[8] = {k_new,   v_new,   block_table, kv_lens,
                          k_cache, v_cache, k_scale,     v_scale};
  return clattn__call(ctx, F, desc, NULL, bufs, ev);
}

clattn_status clattn_varlen_attention(clattn_ctx *ctx,
                                      const clattn_varlen_desc *d, cl_mem q,
                                      cl_mem k, cl_mem v, cl_mem cu_seqlens_q,
                                      cl_mem cu_seqlens_k, cl_mem o,
                                      const clattn_events *ev) {
  clattn__public_args own;
  const void *desc = d;
  const clattn__family *F = &clattn__family_varlen;
  clattn_status rc = clattn__ctx_args_in(ctx, &own, F, "clattn_varlen_desc",
                                         &desc, sizeof *d, VARLEN_PARAMS, &ev);
  if (rc)
    return rc;
  const cl_mem bufs[6] = {q, k, v, cu_seqlens_q, cu_seqlens_k, o};
  return clattn__call(ctx, F, desc, own.params, bufs, ev);
}

/* The model's calls have no context: a failure's reason goes to the
 * prediction's message. */
static clattn_status model_call(const clattn__family *F, const char *type,
                                const void *d, size_t size, long params,
                                const int *ints, const clattn_profile *prof,
                                clattn_prediction *out) {
  clattn__public_args own_args;
  clattn_prediction own;
  clattn_profile own_prof;
  const void *desc = d;
  clattn_status rc = clattn__model_in(&prof, &own_prof, out, &own);
  if (rc == CLATTN_OK)
    rc = clattn__args_in(&own_args, F, type, &desc, size, params, NULL,
                         own.errmsg, sizeof own.errmsg);
  if (rc == CLATTN_OK)
    rc = clattn__model(F, desc, own_args.params, ints, prof, &own);
  return clattn__model_out(rc, &own, out);
}

clattn_status clattn_model_paged_attention(const clattn_paged_desc *d,
                                           const int *kv_lens,
                                           const clattn_profile *prof,
                                           clattn_prediction *out) {
  return model_call(paged_family(d), "clattn_paged_desc", d, sizeof *d,
                    PAGED_PARAMS, kv_lens, prof, out);
}

clattn_status clattn_model_paged_append(const clattn_paged_desc *d,
                                        const int *kv_lens,
                                        const clattn_profile *prof,
                                        clattn_prediction *out) {
  return model_call(&clattn__family_paged_append, "clattn_paged_desc", d,
                    sizeof *d, CLATTN__NO_PARAMS, kv_lens, prof, out);
}

/* The varlen family's costs read both offset arrays, one after the other. */
clattn_status clattn_model_varlen_attention(const clattn_varlen_desc *d,
                                            const int *cu_seqlens_q,
                                            const int *cu_seqlens_k,
                                            const clattn_profile *prof,
                                            clattn_prediction *out) {
  int *both = NULL;
  if (d != NULL && cu_seqlens_q != NULL && cu_seqlens_k != NULL &&
      d->size >= offsetof(clattn_varlen_desc, batch) + sizeof d->batch &&
      d->batch >= 1 && d->batch < (1 << 24)) {
    const size_t n = (size_t)d->batch + 1;
    if ((both = malloc(2 * n * sizeof *both)) != NULL) {
      memcpy(both, cu_seqlens_q, n * sizeof *both);
      memcpy(both + n, cu_seqlens_k, n * sizeof *both);
    }
  }
  const clattn_status rc =
      model_call(&clattn__family_varlen, "clattn_varlen_desc", d,
                 d ? sizeof *d : 0, VARLEN_PARAMS, both, prof, out);
  free(both);
  return rc;
}
