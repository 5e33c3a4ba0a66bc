/* th_decode.c - the public functions of the talking-heads decode and
 * append families: thin wrappers that put their arguments in the family's
 * order and take the generic path. */
#include "call/call.h"
#include "family/th_decode.h"

clattn_status clattn_talking_heads_decode(
    clattn_ctx *ctx, const clattn_th_decode_desc *d, cl_mem q, cl_mem k_cache,
    cl_mem v_cache, cl_mem p_l, cl_mem p_w, cl_mem lens, cl_mem o,
    const clattn_events *ev) {
  const cl_mem bufs[7] = {q, k_cache, v_cache, p_l, p_w, lens, o};
  return clattn__call(ctx, &clattn__family_th_decode, d, bufs, ev);
}

clattn_status clattn_talking_heads_append(
    clattn_ctx *ctx, const clattn_th_decode_desc *d, int n_new, cl_mem k_new,
    cl_mem v_new, cl_mem pos, cl_mem k_cache, cl_mem v_cache,
    const clattn_events *ev) {
  const cl_mem bufs[5] = {k_new, v_new, pos, k_cache, v_cache};
  clattn__th_append_desc a;
  if (d == NULL)
    return clattn__call(ctx, &clattn__family_th_append, NULL, bufs, ev);
  a.cache = *d;
  a.n_new = n_new;
  return clattn__call(ctx, &clattn__family_th_append, &a, bufs, ev);
}
