/* tune_gemm.h - internal: CLBlast's Xgemm tuning space (gemm_space.c),
 * the tuner family (tune_gemm.c) and what the layers' projections do with
 * the tuned parameters (gemm_apply.c).
 *
 * How CLBlast 1.5.3 runs a GEMM.  CLBlastSgemm picks one of two kernels:
 * XgemmDirect when m*n*k < XGEMM_MIN_INDIRECT_SIZE^3 (the "GemmRoutine"
 * parameter; 576 for this PoCL CPU device, so 512^3 runs direct), else
 * the "indirect" Xgemm kernel with pre- and post-processing kernels that
 * transpose and pad the operands to multiples of MWG/NWG/KWG.  Only Xgemm
 * is tuned here.  So that the tuner's check and its timing both run Xgemm
 * whatever the shape, tuning overrides GemmRoutine with
 * XGEMM_MIN_INDIRECT_SIZE = the cube root of the smaller of the check's and
 * the class's m*n*k.  Applying a tuned entry sets it to the cube root of
 * the smallest tuned shape class, so every shape from there up runs the
 * tuned Xgemm (the shapes it was measured at) and smaller ones keep
 * XgemmDirect with CLBlast's own parameters.  The value is part of the
 * kernel source, so with one tuned class the applied program is the one
 * the tuner already built (no second build).
 *
 * CLBlast keeps one parameter set per (device, precision, kernel) for the
 * whole process, and its C API (1.5.3) can set parameters but not read
 * them (RetrieveParameters is C++ only), so the defaults cannot be
 * restored once overridden.  Hence a context applies a tuned entry only
 * with clattn_ctx_opts.clblast_override; without it, the projections in
 * the entry's range (the same cube root) run the library's own GEMM
 * kernel instead.  A tuning run overrides while it measures and leaves the
 * device on the best tuned entry of the database (or, if none is valid,
 * XgemmDirect only, whose parameters are never touched), for the whole
 * process.  Every override changes the kernel source, so the first GEMM
 * after it compiles CLBlast's whole GEMM program again (long on PoCL with
 * a cold cache: bench/RESULTS.md, figures that shaped the code). */
#ifndef CLATTN_TUNE_GEMM_H
#define CLATTN_TUNE_GEMM_H

#include "db/db.h"
#include "tune/tune.h"

#include <clblast_c.h>

/* CLBlast's Xgemm parameters, in CLBlast's (alphabetical) order: the
 * space's dimension names and the names passed to
 * CLBlastOverrideParameters. */
#define CLATTN_XGEMM_NPARAMS 16
extern const char *const clattn__xgemm_names[CLATTN_XGEMM_NPARAMS];

/* The Xgemm space of the context's device: every candidate satisfies
 * CLBlast's tuner constraints and the device limits (see gemm_space.c).
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

/* Settle the projections' GEMMs from the device's best tuned Xgemm entry
 * of the context's tuning database, else the shipped data (once per
 * context; later calls return at once): with clblast_override, set it on
 * CLBlast (apply 1 only: before a GEMM); without, never touch CLBlast and
 * set ctx->gemm_own_from to the entry's range.  A missing or unreadable
 * database, or no entry, leaves CLBlast's own parameters; what happened is
 * recorded for clattn_explain_gemm.  Fails only when out of host memory.
 * The context's gemm_prepare hook. */
clattn_status clattn__gemm_prepare(clattn_ctx *ctx, int apply);

/* After a tuning run: set the device's best entry of db on CLBlast, else
 * make it run XgemmDirect only (the last candidate evaluated may be a
 * wrong one), for the whole process; the context settles again at its
 * next use.  db may be NULL. */
clattn_status clattn__gemm_restore(clattn_ctx *ctx, clattn_db *db);

/* Set CLBlast's Xgemm parameters for dev to v (CLATTN_XGEMM_NPARAMS
 * values, clattn__xgemm_names' order). */
CLBlastStatusCode clattn__xgemm_override(cl_device_id dev, const int *v);

/* Set CLBlast's GemmRoutine for dev: GEMMs with m*n*k >= size^3 run the
 * indirect Xgemm kernel, smaller ones XgemmDirect. */
CLBlastStatusCode clattn__xgemm_min_indirect(cl_device_id dev, size_t size);

#endif /* CLATTN_TUNE_GEMM_H */
