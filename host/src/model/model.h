/* model.h - internal: the roofline model's arithmetic, shared by every
 * family's cost.  Pure functions of counts and a profile: no OpenCL, no
 * context. */
#ifndef CLATTN_MODEL_H
#define CLATTN_MODEL_H

#include "clattn_tools.h"

#include <math.h>

/* Lanes of FMA in one exp2 evaluation (the Cephes polynomial in
 * cl/common.cl). */
#define CLATTN__EXP2_FMAS 6.0
/* Nominal softmax operations per valid logit (spec 1.2). */
#define CLATTN__C_SM 5.0

/* A new kernel row of out (launches 1), or NULL when out is full. */
clattn_cost *clattn__model_kernel(clattn_prediction *out, const char *name);
/* The in-core record of kernel c of out (a row clattn__model_kernel
 * returned). */
static inline clattn_core *clattn__model_core(clattn_prediction *out,
                                             const clattn_cost *c) {
  return &out->core[c - out->kernel];
}
/* DRAM bytes of a kernel whose issued reads exceed the compulsory ones by
 * re-reads of a working set of ws bytes: the cache serves them when the
 * working set fits in half of it. */
void clattn__model_dram(clattn_cost *c, double compulsory_reads, double ws,
                        const clattn_profile *p);
/* Times, bounds and the total of every kernel of out; dram_reads[i] is
 * the DRAM read bytes of kernel i. */
void clattn__model_finish(clattn_prediction *out, const double *dram_reads,
                          const clattn_profile *p);
/* Write a failure's reason to out->errmsg and return st. */
clattn_status clattn__model_fail(clattn_prediction *out, clattn_status st,
                                 const char *why);

static inline double clattn__dmin(double a, double b) { return a < b ? a : b; }
static inline double clattn__dmax(double a, double b) { return a > b ? a : b; }
static inline double clattn__cdiv(double a, double b) { return ceil(a / b); }
/* Sequence b's valid length: lens[b] clamped to [0, cap], cap without
 * lens (the kernels clamp the same way). */
static inline long clattn__valid_len(const int *lens, long b, long cap) {
  return lens ? (long)clattn__dmin(clattn__dmax(lens[b], 0), cap) : cap;
}
/* Without lens every sequence is the same: the cost loops visit one and
 * weigh it by the batch, so a huge batch costs no time to predict. */
static inline long clattn__distinct_seqs(const int *lens, long batch) {
  return lens ? batch : (batch > 0 ? 1 : 0);
}
static inline double clattn__seq_weight(const int *lens, long batch) {
  return lens ? 1.0 : (double)batch;
}
/* Rows a KV append writes: of pos[b] .. pos[b]+n_new-1 (pos NULL: 0 ..),
 * those inside [0, capacity), in closed form (n_new may be large). */
static inline double clattn__append_rows(const int *pos, long batch, long n_new,
                                         long capacity) {
  double rows = 0;
  for (long b = 0; b < clattn__distinct_seqs(pos, batch); b++) {
    const long p0 = pos ? pos[b] : 0;
    const long lo = p0 > 0 ? p0 : 0;
    const long hi = p0 + n_new < capacity ? p0 + n_new : capacity;
    rows += (double)(hi > lo ? hi - lo : 0);
  }
  return rows * clattn__seq_weight(pos, batch);
}

#endif /* CLATTN_MODEL_H */
