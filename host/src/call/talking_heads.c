/* talking_heads.c - the public function of the talking-heads prefill
 * family: a thin wrapper that reads the caller's versioned structs, puts
 * its arguments in the family's order and takes the generic path. */
#include "call/call.h"

#include <stddef.h>

clattn_status clattn_talking_heads(clattn_ctx *ctx, const clattn_th_desc *d,
                                   cl_mem q, cl_mem k, cl_mem v, cl_mem p_l,
                                   cl_mem p_w, cl_mem kv_lens, cl_mem o,
                                   const clattn_events *ev) {
  clattn__public_args own;
  const void *desc = d;
  const clattn__family *F = &clattn__family_talking_heads;
  clattn_status rc =
      clattn__ctx_args_in(ctx, &own, F, "clattn_th_desc", &desc, sizeof *d,
                          (long)offsetof(clattn_th_desc, params), &ev);
  if (rc)
    return rc;
  const cl_mem bufs[7] = {q, k, v, p_l, p_w, kv_lens, o};
  return clattn__call(ctx, F, desc, own.params, bufs, ev);
}
