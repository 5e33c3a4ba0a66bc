/* probe.h - internal: the shape of the probe's microkernels (cl/probe.cl),
 * shared by the probe (probe.c), which times them, and the model
 * (model.c), which counts what they move and compute. */
#ifndef CLATTN_PROBE_H
#define CLATTN_PROBE_H

#include "clattn_tools.h"

#define CLATTN__PROBE_NREAD 16       /* vectors read per item (probe_read) */
#define CLATTN__PROBE_FMA_ITERS 1024 /* loop trips of probe_fma */
#define CLATTN__PROBE_FMA_CHAINS                                               \
  8 /* independent FMA chains per item (probe.cl) */
#define CLATTN__PROBE_LOCAL_ITERS 256  /* loop trips of probe_local */
#define CLATTN__PROBE_EXP2_ITERS 256   /* loop trips of probe_exp2 */
#define CLATTN__PROBE_CACHED_ITERS 256 /* loop trips of probe_cached */
#define CLATTN__PROBE_BARRIER_ITERS 64 /* loop trips of probe_barrier */
#define CLATTN__PROBE_ARGS 6           /* buffers of probe_args */
#define CLATTN__PROBE_LAUNCH_REPS 2    /* probe_mix's reps in probe_launch */

/* The probe's kernels. */
typedef enum clattn__probe_kernel {
  CLATTN__PROBE_READ,
  CLATTN__PROBE_COPY,
  CLATTN__PROBE_TRIAD,
  CLATTN__PROBE_FMA,
  CLATTN__PROBE_LOCAL,
  CLATTN__PROBE_EMPTY,
  CLATTN__PROBE_EXP2,
  CLATTN__PROBE_CACHED,
  CLATTN__PROBE_BARRIER,
  CLATTN__PROBE_MIX,
  CLATTN__PROBE_ARGS_KERNEL,
  CLATTN__PROBE_KERNELS
} clattn__probe_kernel;

/* The kernel's name in cl/probe.cl. */
const char *clattn__probe_name(clattn__probe_kernel k);

/* What one launch of probe kernel k at vector width vw over `items`
 * work-items issues (model.c): global bytes read and written, FMA lanes
 * (fma_issued; multiply-adds of the FMA chains, 6 an exp2), exp2 lanes,
 * local-memory bytes; reps: probe_mix's FMAs a vector read (ignored by
 * the other kernels).  The probe divides these by its times. */
void clattn__model_probe(clattn__probe_kernel k, int vw, double items, int reps,
                         clattn_cost *c);
/* Work-group barriers one launch of probe kernel k passes over `items`
 * work-items in groups of lws (one per barrier a work-group passes). */
double clattn__probe_barriers(clattn__probe_kernel k, double items,
                              double lws);
/* Whether probe kernel k is built at vector width vw (probe_exp2 only at
 * the widths of the kernels' exp2s). */
int clattn__probe_has_width(clattn__probe_kernel k, int vw);

/* One launch of probe kernel k over `items` work-items in groups of lws,
 * on small zero-filled buffers (the exact model check runs it under
 * Oclgrind's instruction counter). */
clattn_status clattn__probe_launch(clattn_ctx *ctx, clattn__probe_kernel k,
                                   int vw, size_t items, size_t lws);

#endif
