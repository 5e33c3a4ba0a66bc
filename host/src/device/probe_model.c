/* probe_model.c - what each probe kernel issues (cl/probe.cl), for the
 * model's exact check against Oclgrind and the probe's own figures. */
#include "device/probe.h"

#include <stdio.h>
#include <string.h>

const char *clattn__probe_name(clattn__probe_kernel k) {
  static const char *const names[CLATTN__PROBE_KERNELS] = {
      "probe_read", "probe_copy",  "probe_triad",
      "probe_fma",  "probe_local", "probe_empty"};
  return k >= 0 && k < CLATTN__PROBE_KERNELS ? names[k] : "";
}

void clattn__model_probe(clattn__probe_kernel k, int vw, double items,
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
  default:
    break;
  }
  c->flops = 2.0 * c->fma_issued;
  c->bytes_compulsory = c->bytes_read + c->bytes_written;
  c->bytes_dram = c->bytes_compulsory;
}
