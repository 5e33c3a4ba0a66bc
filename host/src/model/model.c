/* model.c - the roofline model's arithmetic (model.h): from a kernel's
 * issued FLOPs, exp2 evaluations and bytes, its DRAM bytes, times, bound
 * and intensity on a device profile.
 * Each family counts its kernels in its room (family/); the model's
 * dispatch (call/model.c) sums them.  Pure functions: no OpenCL, no
 * context. */
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Launch latency assumed when a profile has none (datasheet GPUs). */
#define DEFAULT_LAUNCH_US 5.0

clattn_status clattn__model_fail(clattn_prediction *out, clattn_status st,
                                 const char *why) {
  snprintf(out->errmsg, sizeof out->errmsg, "%s", why);
  return st;
}

clattn_cost *clattn__model_kernel(clattn_prediction *out, const char *name) {
  if (out->n_kernels >= CLATTN_MODEL_MAX_KERNELS)
    return NULL;
  clattn_cost *c = &out->kernel[out->n_kernels++];
  memset(c, 0, sizeof *c);
  memset(clattn__model_core(out, c), 0, sizeof(clattn_core));
  snprintf(c->kernel, sizeof c->kernel, "%s", name);
  c->launches = 1;
  return c;
}

void clattn__model_dram(clattn_cost *c, double compulsory_reads, double ws,
                        const clattn_profile *p) {
  double reads = c->bytes_read;
  if (reads > compulsory_reads && p->cache_bytes > 0 &&
      ws <= 0.5 * (double)p->cache_bytes)
    reads = compulsory_reads;
  c->bytes_dram = reads + c->bytes_written;
}

/* Times, intensity and bound of one kernel from its counts. */
static void timing(clattn_cost *c, double dram_reads, const clattn_profile *p) {
  const double rd = p->bw_read_gbs > 0 ? p->bw_read_gbs : p->bw_copy_gbs;
  const double wr = p->bw_copy_gbs > 0 ? p->bw_copy_gbs : rd;
  const double writes = c->bytes_dram - dram_reads;
  c->t_memory = (rd > 0 ? dram_reads / (rd * 1e9) : 0.0) +
                (wr > 0 ? writes / (wr * 1e9) : 0.0);
  c->t_compute = p->fp32_gflops > 0 ? 2.0 * (c->fma_issued + c->fma_spilled) /
                                          (p->fp32_gflops * 1e9)
                                    : 0.0;
  double lat = p->launch_pipelined_us > 0 ? p->launch_pipelined_us
               : p->launch_us > 0         ? p->launch_us
                                          : DEFAULT_LAUNCH_US;
  c->t_launch = c->launches * lat * 1e-6;
  const double busy = fmax(c->t_memory, c->t_compute);
  c->t_pred = busy + c->t_launch;
  c->bound = c->t_launch > busy           ? CLATTN_BOUND_LAUNCH
             : c->t_compute > c->t_memory ? CLATTN_BOUND_COMPUTE
                                          : CLATTN_BOUND_MEMORY;
  c->intensity = c->bytes_dram > 0 ? c->flops / c->bytes_dram : 0.0;
}

void clattn__model_finish(clattn_prediction *out, const double *dram_reads,
                          const clattn_profile *p) {
  clattn_cost *t = &out->total;
  memset(t, 0, sizeof *t);
  snprintf(t->kernel, sizeof t->kernel, "total");
  for (int i = 0; i < out->n_kernels; i++) {
    clattn_cost *c = &out->kernel[i];
    timing(c, dram_reads[i], p);
    t->launches += c->launches;
    t->flops += c->flops;
    t->softmax_ops += c->softmax_ops;
    t->fma_issued += c->fma_issued;
    t->exp2_issued += c->exp2_issued;
    t->fma_spilled += c->fma_spilled;
    t->bytes_read += c->bytes_read;
    t->bytes_written += c->bytes_written;
    t->bytes_compulsory += c->bytes_compulsory;
    t->bytes_dram += c->bytes_dram;
    t->local_bytes += c->local_bytes;
    t->t_memory += c->t_memory;
    t->t_compute += c->t_compute;
    t->t_launch += c->t_launch;
    t->t_pred += c->t_pred;
  }
  t->intensity = t->bytes_dram > 0 ? t->flops / t->bytes_dram : 0.0;
  const double busy = fmax(t->t_memory, t->t_compute);
  t->bound = t->t_launch > busy           ? CLATTN_BOUND_LAUNCH
             : t->t_compute > t->t_memory ? CLATTN_BOUND_COMPUTE
                                          : CLATTN_BOUND_MEMORY;
  const double bw = p->bw_read_gbs > 0 ? p->bw_read_gbs : p->bw_copy_gbs;
  out->ridge = bw > 0 ? p->fp32_gflops / bw : 0.0;
}
