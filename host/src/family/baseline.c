/* baseline.c - what the bench baselines that run another family's call
 * share (paged_decode_contig.c, varlen_padded.c): the plan of that call,
 * made once, and its launches. */
#include "family/family.h"

#include <string.h>

clattn_status clattn__baseline_plan(clattn_ctx *ctx, const clattn__family *F,
                                    const void *desc, void *plan, char *why,
                                    size_t cap) {
  const clattn__target t = clattn__ctx_target(ctx);
  clattn_status rc = F->check(desc, why, cap);
  if (rc == CLATTN_OK)
    rc = clattn__plan_params(F, &t, desc, NULL, plan, why, cap);
  return rc;
}

clattn_status clattn__baseline_enqueue(clattn_ctx *ctx, const clattn__family *F,
                                       const void *desc, const void *plan,
                                       const cl_mem *bufs) {
  _Alignas(16) unsigned char copy[CLATTN__PLAN_MAX];
  memcpy(copy, plan, sizeof copy);
  return F->enqueue(ctx, desc, copy, 1, bufs, NULL);
}
