/* probe_model.c - what each probe kernel issues (cl/probe.cl), for the
 * model's exact check against Oclgrind and the probe's own figures. */
#include "device/probe.h"
#include "model/model.h"

#include <stdio.h>
#include <string.h>

const char *clattn__probe_name(clattn__probe_kernel k) {
  static const char *const names[CLATTN__PROBE_KERNELS] = {
      "probe_read",    "probe_copy",  "probe_triad", "probe_fma",
      "probe_local",   "probe_empty", "probe_exp2",  "probe_cached",
      "probe_barrier", "probe_mix",   "probe_args"};
  return k >= 0 && k < CLATTN__PROBE_KERNELS ? names[k] : "";
}

int clattn__probe_has_width(clattn__probe_kernel k, int vw) {
  return k != CLATTN__PROBE_EXP2 || vw != 2;
}

double clattn__probe_barriers(clattn__probe_kernel k, double items,
                              double lws) {
  const double groups = lws > 0 ? items / lws : 0.0;
  return k == CLATTN__PROBE_BARRIER ? groups * 2.0 * CLATTN__PROBE_BARRIER_ITERS
         : k == CLATTN__PROBE_LOCAL ? groups * 3.0
                                    : 0.0;
}

void clattn__model_probe(clattn__probe_kernel k, int vw, double items, int reps,
                         clattn_cost *c) {
  const double vb = 4.0 * vw; /* bytes of one float vector */
  memset(c, 0, sizeof *c);
  snprintf(c->kernel, sizeof c->kernel, "%s", clattn__probe_name(k));
  c->launches = 1;
  switch (k) {
  case CLATTN__PROBE_READ: /* NREAD vectors in, one float out */
    c->bytes_read = items * CLATTN__PROBE_NREAD * vb;
    c->bytes_written = items * 4.0;
    break;
  case CLATTN__PROBE_COPY:
    c->bytes_read = c->bytes_written = items * vb;
    break;
  case CLATTN__PROBE_TRIAD: /* a = b + s * c */
    c->bytes_read = 2.0 * items * vb;
    c->bytes_written = items * vb;
    c->fma_issued = items * vw;
    break;
  case CLATTN__PROBE_FMA: /* the chains; one float out */
    c->fma_issued =
        items * CLATTN__PROBE_FMA_ITERS * CLATTN__PROBE_FMA_CHAINS * (double)vw;
    c->bytes_written = items * 4.0;
    break;
  case CLATTN__PROBE_LOCAL: /* 4 * LOCAL_ITERS + 1 vector reads, 2 writes */
    c->local_bytes = items * (4.0 * CLATTN__PROBE_LOCAL_ITERS + 3.0) * vb;
    c->bytes_written = items * 4.0;
    break;
  case CLATTN__PROBE_EXP2: /* 8 chains of exp2s; one float out */
    c->exp2_issued = items * CLATTN__PROBE_EXP2_ITERS * 8.0 * vw;
    c->fma_issued = CLATTN__EXP2_FMAS * c->exp2_issued;
    c->bytes_written = items * 4.0;
    break;
  case CLATTN__PROBE_CACHED: /* 4 vectors a trip; one float out */
    c->bytes_read = items * CLATTN__PROBE_CACHED_ITERS * 4.0 * vb;
    c->bytes_written = items * 4.0;
    break;
  case CLATTN__PROBE_BARRIER: /* a float stored and one loaded a trip */
    c->local_bytes = items * CLATTN__PROBE_BARRIER_ITERS * 8.0;
    c->bytes_written = items * 4.0;
    break;
  case CLATTN__PROBE_MIX: /* the read kernel's vectors, reps FMAs each */
    c->bytes_read = items * CLATTN__PROBE_NREAD * vb;
    c->bytes_written = items * 4.0;
    c->fma_issued = items * CLATTN__PROBE_NREAD * (double)reps * vw;
    break;
  case CLATTN__PROBE_ARGS_KERNEL: /* item 0 reads one float of five */
    c->bytes_read = items > 0 ? 5.0 * 4.0 : 0.0;
    c->bytes_written = items > 0 ? 4.0 : 0.0;
    break;
  default:
    break;
  }
  c->flops = 2.0 * c->fma_issued;
  c->bytes_compulsory = c->bytes_read + c->bytes_written;
  c->bytes_dram = c->bytes_compulsory;
}
