/* context.c - clattn_ctx_create and clattn_ctx_destroy: the runtime's
 * context (devices, programs, launch) with the parameter choice added, so
 * that the runtime knows nothing of choosing or tuning. */
#include "base/versioned.h"
#include "choice/choice.h"
#include "tune/tune_gemm.h"

clattn_status clattn_ctx_create(const clattn_ctx_opts *opts, clattn_ctx **out) {
  static const clattn_ctx_opts defaults;
  clattn_ctx_opts own;
  char why[256];
  clattn_ctx *ctx = NULL;
  if (out == NULL)
    return clattn__ctx_open(opts, NULL); /* it records the message */
  *out = NULL;
  clattn_status rc =
      clattn__struct_in_ptr((const void **)&opts, &own, sizeof own,
                            "clattn_ctx_opts", why, sizeof why);
  if (rc) {
    clattn__create_errmsg(why);
    return rc;
  }
  rc = clattn__ctx_open(opts, &ctx);
  if (rc)
    return rc;
  if ((rc = clattn__choice_init(ctx, opts ? opts : &defaults))) {
    clattn__create_errmsg(ctx->errmsg);
    clattn_ctx_destroy(ctx);
    return rc;
  }
  ctx->clblast_override = opts != NULL && opts->clblast_override != 0;
  ctx->gemm_prepare = clattn__gemm_prepare;
  *out = ctx;
  return CLATTN_OK;
}

void clattn_ctx_destroy(clattn_ctx *ctx) {
  if (clattn__ctx_check(ctx) != CLATTN_OK)
    return;
  clattn__choice_free(ctx);
  clattn__ctx_close(ctx);
}
