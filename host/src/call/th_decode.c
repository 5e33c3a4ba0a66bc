/* th_decode.c - the public functions of the talking-heads decode and of
 * the append into its cache (the append family's, with heads_k key and
 * heads_v value heads): thin wrappers that read the caller's versioned
 * structs, put their arguments in the family's order and take the generic
 * path. */
#include "call/call.h"
#include "family/append.h"
#include "family/th_decode.h"

#include <stddef.h>

#define TH_DECODE_PARAMS ((long)offsetof(clattn_th_decode_desc, params))

clattn_status clattn_talking_heads_decode(clattn_ctx *ctx,
                                          const clattn_th_decode_desc *d,
                                          cl_mem q, cl_mem k_cache,
                                          cl_mem v_cache, cl_mem p_l,
                                          cl_mem p_w, cl_mem lens, cl_mem o,
                                          const clattn_events *ev) {
  clattn__public_args own;
  const void *desc = d;
  const clattn__family *F = &clattn__family_th_decode;
  clattn_status rc =
      clattn__ctx_args_in(ctx, &own, F, "clattn_th_decode_desc", &desc,
                          sizeof *d, TH_DECODE_PARAMS, &ev);
  if (rc)
    return rc;
  const cl_mem bufs[7] = {q, k_cache, v_cache, p_l, p_w, lens, o};
  return clattn__call(ctx, F, desc, own.params, bufs, ev);
}

/* The cache description passes the talking-heads decode's checks (its
 * logit heads included), then the append takes its heads_k and heads_v. */
static clattn_status check_cache(const void *d, char *why, size_t cap) {
  return clattn__th_check_cache(d, why, cap);
}

clattn_status clattn_talking_heads_append(clattn_ctx *ctx,
                                          const clattn_th_decode_desc *d,
                                          int n_new, cl_mem k_new, cl_mem v_new,
                                          cl_mem pos, cl_mem k_cache,
                                          cl_mem v_cache,
                                          const clattn_events *ev) {
  clattn__public_args own;
  const void *desc = d;
  /* the cache description's params are the decode's, checked as such */
  clattn_status rc = clattn__ctx_args_in(
      ctx, &own, &clattn__family_th_decode, "clattn_th_decode_desc", &desc,
      sizeof *d, TH_DECODE_PARAMS, &ev);
  if (rc)
    return rc;
  const cl_mem bufs[5] = {k_new, v_new, pos, k_cache, v_cache};
  const clattn__append_desc a =
      desc ? clattn__append_of_th(desc, n_new) : (clattn__append_desc){0};
  return clattn__call_of(ctx, &clattn__family_append, check_cache, desc,
                         desc ? &a : NULL, bufs, ev);
}
