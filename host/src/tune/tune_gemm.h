/* tune_gemm.h - internal: CLBlast's Xgemm tuning space and the tuned
 * parameters the layers apply (host/src/tune_gemm.c). */
#ifndef CLATTN_TUNE_GEMM_H
#define CLATTN_TUNE_GEMM_H

#include "tune/tune.h"

/* CLBlast's Xgemm parameters, in CLBlast's (alphabetical) order: the
 * space's dimension names and the names passed to
 * CLBlastOverrideParameters. */
#define CLATTN_XGEMM_NPARAMS 16
extern const char *const clattn__xgemm_names[CLATTN_XGEMM_NPARAMS];

/* The Xgemm space of the context's device: every candidate satisfies
 * CLBlast's tuner constraints and the device limits (see tune_gemm.c).
 * Free with clattn__space_free. */
clattn_status clattn__xgemm_space(clattn_ctx *ctx, clattn__space *out);

/* Nonzero when candidate v (CLATTN_XGEMM_NPARAMS values) satisfies
 * CLBlast's constraints and the device's limits; `why` (may be NULL) gets
 * the first violated rule. */
int clattn__xgemm_valid(const clattn_ctx *ctx, const int *v, char *why,
                        size_t cap);

/* Evaluate one candidate outside a search (the tests): check it against
 * the plain-C GEMM, then time CLBlastSgemm at m x n x k, filling e's
 * status, times and message as clattn_tune_gemm would.  Afterwards
 * CLBlast runs XgemmDirect only (the candidate may be a wrong one). */
clattn_status clattn__xgemm_eval(clattn_ctx *ctx, int m, int n, int k,
                                 const int *values, int repeats,
                                 clattn_tune_entry *e);

/* Apply the device's best tuned Xgemm entry from the context's tuning
 * database (once per context; later calls return at once).  A missing or
 * unreadable database, or no entry, leaves CLBlast's own parameters; what
 * happened is recorded for clattn_explain_gemm.  Fails only when out of
 * host memory. */
clattn_status clattn__gemm_apply(clattn_ctx *ctx);

#endif /* CLATTN_TUNE_GEMM_H */
