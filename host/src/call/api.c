/* api.c - the public functions of the kernel families: thin wrappers that
 * put their arguments in the family's order and take the generic path. */
#include "call/call.h"
#include "choice/choice.h"
#include "family/decode.h"

#include <string.h>

clattn_status clattn_attention(clattn_ctx *ctx, const clattn_attn_desc *d,
                               cl_mem q, cl_mem k, cl_mem v, cl_mem kv_lens,
                               cl_mem o, const clattn_events *ev) {
  const cl_mem bufs[5] = {q, k, v, kv_lens, o};
  return clattn__call(ctx, &clattn__family_prefill, d, bufs, ev);
}

clattn_status clattn_decode(clattn_ctx *ctx, const clattn_decode_desc *d,
                            cl_mem q, cl_mem k_cache, cl_mem v_cache,
                            cl_mem lens, cl_mem o, const clattn_events *ev) {
  const cl_mem bufs[5] = {q, k_cache, v_cache, lens, o};
  return clattn__call(ctx, &clattn__family_decode, d, bufs, ev);
}

clattn_status clattn_kv_append(clattn_ctx *ctx, const clattn_decode_desc *d,
                               int n_new, cl_mem k_new, cl_mem v_new,
                               cl_mem pos, cl_mem k_cache, cl_mem v_cache,
                               const clattn_events *ev) {
  const cl_mem bufs[5] = {k_new, v_new, pos, k_cache, v_cache};
  clattn__append_desc a;
  if (d == NULL)
    return clattn__call(ctx, &clattn__family_append, NULL, bufs, ev);
  a.cache = *d;
  a.n_new = n_new;
  return clattn__call(ctx, &clattn__family_append, &a, bufs, ev);
}

clattn_status clattn_explain_attention(clattn_ctx *ctx,
                                       const clattn_attn_desc *d,
                                       clattn_choice *out) {
  return clattn__explain(ctx, &clattn__family_prefill, d, out);
}

clattn_status clattn_explain_decode(clattn_ctx *ctx,
                                    const clattn_decode_desc *d,
                                    clattn_choice *out) {
  return clattn__explain(ctx, &clattn__family_decode, d, out);
}

clattn_status clattn_model_attention(const clattn_attn_desc *d,
                                     const int *kv_lens,
                                     const clattn_profile *prof,
                                     clattn_prediction *out) {
  return clattn__model(&clattn__family_prefill, d, kv_lens, prof, out);
}

clattn_status clattn_model_decode(const clattn_decode_desc *d, const int *lens,
                                  const clattn_profile *prof,
                                  clattn_prediction *out) {
  return clattn__model(&clattn__family_decode, d, lens, prof, out);
}

clattn_status clattn_model_kv_append(const clattn_decode_desc *d, int n_new,
                                     const int *pos, const clattn_profile *prof,
                                     clattn_prediction *out) {
  clattn__append_desc a;
  if (d == NULL)
    return clattn__model(&clattn__family_append, NULL, pos, prof, out);
  a.cache = *d;
  a.n_new = n_new;
  return clattn__model(&clattn__family_append, &a, pos, prof, out);
}

clattn_status clattn_ctx_last_choice(const clattn_ctx *ctx,
                                     clattn_choice *out) {
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  if (out == NULL)
    return CLATTN_ERR_INVALID_ARG;
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  if (locked == NULL)
    return CLATTN_ERR_MISUSE;
  const clattn__thread_slot *mine = clattn__ctx_thread_slot(locked);
  rc = CLATTN_ERR_NOT_FOUND;
  if (mine != NULL && mine->has_last) {
    clattn__memo_last(mine, out);
    rc = CLATTN_OK;
  }
  clattn__ctx_leave(locked);
  return rc;
}
