/* model.c - the model's arithmetic (model.h): from a kernel's issued
 * FLOPs, exp2 evaluations, bytes and barriers, its DRAM bytes, its
 * roofline times, its in-core term (each count at the profile's rate of it,
 * combined as docs/MODEL.md says), bound and intensity on a device
 * profile.
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

/* The launch term: a launch as the library issues them, else the
 * pipelined launch of an empty kernel, else the default. */
static double launch_s(const clattn_profile *p) {
  const double us = p->launch_call_us > 0        ? p->launch_call_us
                    : p->launch_pipelined_us > 0 ? p->launch_pipelined_us
                    : p->launch_us > 0           ? p->launch_us
                                                 : DEFAULT_LAUNCH_US;
  return us * 1e-6;
}

/* The in-core term of one kernel (clattn_core): each count at its rate;
 * an operation the profile has no rate for is priced as its field says
 * (clattn_profile). */
static void in_core(const clattn_cost *c, double dram_reads,
                    const clattn_profile *p, clattn_core *k) {
  /* a kernel in groups of one work-item runs at the rates measured so;
   * on a CPU the launch makes groups of one where it passes no size */
  const int one =
      k->group_items == 1 || (k->group_items == 0 && p->is_cpu != 0);
  if (!(k->fma_gflops > 0))
    k->fma_gflops =
        one && p->fp32_wg1_gflops > 0 ? p->fp32_wg1_gflops : p->fp32_gflops;
  const double exp2_rate =
      one && p->exp2_wg1_gops > 0 ? p->exp2_wg1_gops : p->exp2_gops;
  double lanes = c->fma_issued + c->fma_spilled;
  if (exp2_rate > 0) { /* the polynomial's FMAs are the exp2's time */
    lanes -= CLATTN__EXP2_FMAS * c->exp2_issued;
    k->t_exp2 = c->exp2_issued / (exp2_rate * 1e9);
  }
  k->t_fma = k->fma_gflops > 0 ? 2.0 * lanes / (k->fma_gflops * 1e9) : 0.0;
  k->cached_bytes = clattn__dmax(c->bytes_read - dram_reads, 0.0);
  k->t_cache = p->cache_gbs > 0 ? k->cached_bytes / (p->cache_gbs * 1e9) : 0.0;
  k->t_local = p->local_gbs > 0 ? c->local_bytes / (p->local_gbs * 1e9) : 0.0;
  k->t_barrier = k->barriers * p->barrier_ns * 1e-9;
  k->t_core = k->t_fma + k->t_exp2;
  k->t_data = k->t_cache + k->t_local + c->t_memory;
}

/* The arithmetic and the data path together: the longer, the share of
 * the shorter of the arithmetic and DRAM's time that the one does not
 * hide under the other (the profile's `unhidden`, which probe_mix
 * measures between exactly those two), and the barriers, which wait for
 * both.  Loads the caches serve overlap the arithmetic, as the ECM
 * model's in-core loads do. */
static double busy(const clattn_core *k, double t_memory,
                   const clattn_profile *p) {
  const double u = p->unhidden > 0 ? clattn__dmin(p->unhidden, 1.0) : 0.0;
  return clattn__dmax(k->t_core, k->t_data) +
         u * clattn__dmin(k->t_core, t_memory) + k->t_barrier;
}

/* Launch where the launches outlast the rest; memory where DRAM is the
 * largest part; else compute: the work stays in the cores (their
 * arithmetic, or the loads their caches and local memory serve). */
static clattn_bound bound_of(double t_launch, double t_memory,
                             const clattn_core *k) {
  const double in_cores = clattn__dmax(k->t_core, k->t_cache + k->t_local);
  return t_launch > k->t_busy   ? CLATTN_BOUND_LAUNCH
         : t_memory >= in_cores ? CLATTN_BOUND_MEMORY
                                : CLATTN_BOUND_COMPUTE;
}

/* Times, intensity and bound of one kernel from its counts. */
static void timing(clattn_cost *c, clattn_core *k, double dram_reads,
                   const clattn_profile *p) {
  const double rd = p->bw_read_gbs > 0 ? p->bw_read_gbs : p->bw_copy_gbs;
  const double wr = p->bw_copy_gbs > 0 ? p->bw_copy_gbs : rd;
  const double writes = c->bytes_dram - dram_reads;
  c->t_memory = (rd > 0 ? dram_reads / (rd * 1e9) : 0.0) +
                (wr > 0 ? writes / (wr * 1e9) : 0.0);
  c->t_compute = p->fp32_gflops > 0 ? 2.0 * (c->fma_issued + c->fma_spilled) /
                                          (p->fp32_gflops * 1e9)
                                    : 0.0;
  in_core(c, dram_reads, p, k);
  c->t_launch = c->launches * launch_s(p);
  k->t_busy = busy(k, c->t_memory, p);
  c->t_pred = k->t_busy + c->t_launch;
  c->bound = bound_of(c->t_launch, c->t_memory, k);
  c->intensity = c->bytes_dram > 0 ? c->flops / c->bytes_dram : 0.0;
}

void clattn__model_finish(clattn_prediction *out, const double *dram_reads,
                          const clattn_profile *p) {
  clattn_cost *t = &out->total;
  clattn_core *kt = &out->core_total;
  double fma_flops = 0;
  memset(t, 0, sizeof *t);
  memset(kt, 0, sizeof *kt);
  snprintf(t->kernel, sizeof t->kernel, "total");
  for (int i = 0; i < out->n_kernels; i++) {
    clattn_cost *c = &out->kernel[i];
    clattn_core *k = &out->core[i];
    timing(c, k, dram_reads[i], p);
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
    kt->barriers += k->barriers;
    kt->cached_bytes += k->cached_bytes;
    kt->t_fma += k->t_fma;
    fma_flops += k->t_fma * k->fma_gflops * 1e9;
    kt->t_exp2 += k->t_exp2;
    kt->t_cache += k->t_cache;
    kt->t_local += k->t_local;
    kt->t_barrier += k->t_barrier;
    kt->t_core += k->t_core;
    kt->t_data += k->t_data;
    kt->t_busy += k->t_busy;
  }
  /* the total's rate: its lanes over their time */
  kt->fma_gflops =
      kt->t_fma > 0 ? fma_flops / kt->t_fma * 1e-9 : p->fp32_gflops;
  t->intensity = t->bytes_dram > 0 ? t->flops / t->bytes_dram : 0.0;
  t->bound = bound_of(t->t_launch, t->t_memory, kt);
  const double bw = p->bw_read_gbs > 0 ? p->bw_read_gbs : p->bw_copy_gbs;
  out->ridge = bw > 0 ? p->fp32_gflops / bw : 0.0;
}
