/* target.h - internal: what planning needs to know about a device, from a
 * live context (runtime) or from a profile (the model, datasheet GPUs). */
#ifndef CLATTN_TARGET_H
#define CLATTN_TARGET_H

#include "clattn_tools.h"

/* What planning needs to know about a device. */
typedef struct clattn__target {
  int is_cpu;
  /* A CPU whose OpenCL compiler wants explicit vectors (preferred float
   * vector width > 1, as PoCL reports): the register-blocked kernels
   * (variant 1) are its default.  Elsewhere the work-group kernels
   * (variant 2): GPUs, and CPU runtimes that vectorise across work-items
   * and report 1 (Mesa's llvmpipe), whose compilers make their vectors
   * from work-items, not from variant 1's explicit ones (bench/RESULTS.md,
   * prefill). */
  int cpu_vectors;
  /* With cpu_vectors: the preferred float vector width and the number of
   * architectural vector registers (clattn__cpu_vregs). */
  int vec_width, vregs;
  unsigned compute_units;
  size_t max_wg;                /* min(max work-group, max item size 0) */
  unsigned long long local_mem; /* bytes per work-group */
  /* m*n*k from which the projection family's own picks run its GEMM
   * kernel rather than CLBlast (0: none; a context's gemm_own_from). */
  double gemm_own_from;
  /* cl_khr_subgroups or cl_intel_subgroups: the subgroup kernels (variant
   * 3) may run.  sg_sizes: the sizes a kernel may require
   * (cl_intel_required_subgroup_size), bit k for size 2^k; 0: the
   * device's own size only (queried per kernel at launch). */
  int subgroups;
  unsigned sg_sizes;
} clattn__target;

clattn__target clattn__target_of_profile(const clattn_profile *p);

/* A CPU's vector registers, which OpenCL does not report: 32 where the
 * preferred float width is 16 (AVX-512) or the vendor is not an x86 one
 * (AArch64 has 32), else 16 (x86 with SSE or AVX2). */
int clattn__cpu_vregs(int vec_width, const char *vendor);

#endif /* CLATTN_TARGET_H */
