/* probe.cl - device ceilings for clattn_probe (host/src/device/probe.c).
 *
 * Built once per vector width VW (1, 2, 4, 8, 16).  PROBE_FP16=1 builds the
 * half-precision FMA kernel only (a separate program, built only on devices
 * with cl_khr_fp16).
 *
 * Bandwidth kernels use one work-item per vector element and no loop: PoCL
 * then vectorises across work-items, and GPUs get coalesced accesses.  The
 * read kernel makes every work-item sum NREAD vectors (strided by the global
 * size, so neighbouring work-items read neighbouring vectors) and write one
 * float, so nothing it reads can be optimised away.
 *
 * The FMA kernel runs 8 independent VW-wide chains x = x * a + b for a
 * compile-time FMA_ITERS, a and b being kernel arguments (a < 1 keeps the
 * values bounded), and writes the sum of the chains.  Eight chains cover
 * an FMA latency of 4 cycles on 2 pipes; the probe's vector widths then
 * give 8 or 16 chains of the native width (float16 is two AVX2 registers).
 * Sixteen chains plus a and b do not fit 16 AVX2 registers and spill to
 * about half the peak.  The host builds it with -cl-mad-enable, so the
 * compiler contracts each line into the device's fused multiply-add (as
 * clpeak does): fma() must be correctly rounded, which rusticl/llvmpipe
 * emulates in software, and mad() stays a multiply and an add on PoCL
 * (bench/RESULTS.md, probe). */
#ifndef VW
#define VW 1
#endif
#ifndef PROBE_FP16
#define PROBE_FP16 0
#endif
#ifndef FMA_ITERS
#define FMA_ITERS 1024
#endif
#ifndef FMA_CHAINS
#define FMA_CHAINS 8
#endif
#if FMA_CHAINS != 8
#error "probe_fma runs 8 chains (CLATTN__PROBE_FMA_CHAINS)"
#endif
#ifndef LOCAL_ITERS
#define LOCAL_ITERS 256
#endif
#ifndef EXP2_ITERS
#define EXP2_ITERS 256
#endif
#ifndef CACHED_ITERS
#define CACHED_ITERS 256
#endif
#ifndef BARRIER_ITERS
#define BARRIER_ITERS 64
#endif
#define NREAD 16

#if VW == 1
#define VEC(t) t
#define CONVF(x) ((float)(x))
#else
#define VEC(t) CAT(t, VW)
#define CONVF(x) CAT(convert_float, VW)(x)
#endif

/* the prelude's horizontal sums (cl/common.cl) */
#define HSUM(x) HSUMW(VW, x)

#define FMAS(a, b)                                                             \
  x0 = x0 * a + b;                                                             \
  x1 = x1 * a + b;                                                             \
  x2 = x2 * a + b;                                                             \
  x3 = x3 * a + b;                                                             \
  x4 = x4 * a + b;                                                             \
  x5 = x5 * a + b;                                                             \
  x6 = x6 * a + b;                                                             \
  x7 = x7 * a + b;

#if PROBE_FP16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
typedef VEC(half) real_v;
typedef half real_s;
#else
typedef VEC(float) real_v;
typedef float real_s;
#endif

/* 8 chains x FMA_ITERS FMAs of VW lanes per work-item (FP32 or FP16). */
__kernel void probe_fma(__global float *restrict out, float fa, float fb) {
  real_v a = (real_v)((real_s)fa), b = (real_v)((real_s)fb);
  real_v x0 = (real_v)((real_s)((float)(get_global_id(0) & 255u) * 1e-3f));
  real_v x1 = x0 + (real_s)0.01f, x2 = x0 + (real_s)0.02f;
  real_v x3 = x0 + (real_s)0.03f, x4 = x0 + (real_s)0.04f;
  real_v x5 = x0 + (real_s)0.05f, x6 = x0 + (real_s)0.06f;
  real_v x7 = x0 + (real_s)0.07f;
  for (int i = 0; i < FMA_ITERS; i++) {
    FMAS(a, b)
  }
  real_v s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
  out[get_global_id(0)] = HSUM(CONVF(s));
}

#if !PROBE_FP16
typedef VEC(float) vf;

/* Read-only: NREAD vectors per work-item, one float written. */
__kernel void probe_read(__global const vf *restrict a,
                         __global float *restrict out) {
  size_t g = get_global_id(0), n = get_global_size(0);
#define R_(k) a[g + (size_t)(k) * n]
  vf s0 = R_(0) + R_(4) + R_(8) + R_(12);
  vf s1 = R_(1) + R_(5) + R_(9) + R_(13);
  vf s2 = R_(2) + R_(6) + R_(10) + R_(14);
  vf s3 = R_(3) + R_(7) + R_(11) + R_(15);
#undef R_
  out[g] = HSUM((s0 + s1) + (s2 + s3));
}

/* b = a */
__kernel void probe_copy(__global const vf *restrict a,
                         __global vf *restrict b) {
  size_t g = get_global_id(0);
  b[g] = a[g];
}

/* a = b + s * c (STREAM triad) */
__kernel void probe_triad(__global vf *restrict a,
                          __global const vf *restrict b,
                          __global const vf *restrict c, float s) {
  size_t g = get_global_id(0);
  a[g] = b[g] + s * c[g];
}

/* Local memory: each work-item writes one vector, then (after a barrier)
 * reads 4 * LOCAL_ITERS vectors written by others, then writes and reads
 * once more around barriers.  The work-group size must be a power of two. */
__kernel void probe_local(__global float *restrict out, __local vf *lm) {
  uint lid = (uint)get_local_id(0);
  uint mask = (uint)get_local_size(0) - 1u;
  lm[lid] = (vf)((float)lid * 1e-3f);
  barrier(CLK_LOCAL_MEM_FENCE);
  vf s0 = (vf)(0.0f), s1 = (vf)(0.0f), s2 = (vf)(0.0f), s3 = (vf)(0.0f);
  for (uint i = 0; i < LOCAL_ITERS; i++) {
    uint b = lid + 4u * i;
    s0 += lm[(b + 1u) & mask];
    s1 += lm[(b + 2u) & mask];
    s2 += lm[(b + 3u) & mask];
    s3 += lm[(b + 4u) & mask];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  lm[lid] = (s0 + s1) + (s2 + s3);
  barrier(CLK_LOCAL_MEM_FENCE);
  out[get_global_id(0)] = HSUM(lm[(lid + 1u) & mask]);
}

/* Launch latency. */
__kernel void probe_empty(__global float *out) {}

/* exp2 through the kernels' own polynomial (exp2s, cl/common.cl): 8
 * independent chains x = 2^(-x / 2), which stays in [0.7, 1], EXP2_ITERS
 * times; the same chains keep the polynomial's latency hidden as the FMA
 * kernel's do.  exp2s has widths 1, 4, 8 and 16. */
#if VW == 1 || VW == 4 || VW == 8 || VW == 16
#define EXP2V CAT(exp2s, VW)
__kernel void probe_exp2(__global float *restrict out, float fa) {
  vf x0 = (vf)((float)(get_global_id(0) & 255u) * 1e-3f);
  vf x1 = x0 + 0.01f, x2 = x0 + 0.02f, x3 = x0 + 0.03f;
  vf x4 = x0 + 0.04f, x5 = x0 + 0.05f, x6 = x0 + 0.06f, x7 = x0 + 0.07f;
  for (int i = 0; i < EXP2_ITERS; i++) {
    x0 = EXP2V(x0 * fa);
    x1 = EXP2V(x1 * fa);
    x2 = EXP2V(x2 * fa);
    x3 = EXP2V(x3 * fa);
    x4 = EXP2V(x4 * fa);
    x5 = EXP2V(x5 * fa);
    x6 = EXP2V(x6 * fa);
    x7 = EXP2V(x7 * fa);
  }
  vf s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
  out[get_global_id(0)] = HSUM(s);
}
#undef EXP2V
#endif

/* Global loads the cache serves: each work-item reads 4 * CACHED_ITERS
 * vectors of a window of `mask` + 1 vectors (a power of two, small enough
 * to stay in the cache), from its work-group's own start, a work-group's
 * items neighbouring vectors: in groups of one (CPUs) a sequential run of
 * vectors as a register-blocked kernel re-reads a K/V tile, in larger
 * groups the coalesced rows of a local-memory kernel's tile loads. */
__kernel void probe_cached(__global const vf *restrict a,
                           __global float *restrict out, uint mask) {
  const uint lsz = (uint)get_local_size(0);
  const uint start = (uint)get_group_id(0) * 4096u + (uint)get_local_id(0);
  vf s0 = (vf)(0.0f), s1 = (vf)(0.0f), s2 = (vf)(0.0f), s3 = (vf)(0.0f);
  for (uint i = 0; i < CACHED_ITERS; i++) {
    const uint b = start + 4u * i * lsz;
    s0 += a[b & mask];
    s1 += a[(b + lsz) & mask];
    s2 += a[(b + 2u * lsz) & mask];
    s3 += a[(b + 3u * lsz) & mask];
  }
  out[get_global_id(0)] = HSUM((s0 + s1) + (s2 + s3));
}

/* Barriers: BARRIER_ITERS rounds of a local store, a barrier, a load of
 * a neighbour's value and a second barrier (the pattern of a tile loop),
 * on one float a work-item.  The work-group size must be a power of two. */
__kernel void probe_barrier(__global float *restrict out,
                            __local float *lm) {
  uint lid = (uint)get_local_id(0);
  uint mask = (uint)get_local_size(0) - 1u;
  float x = (float)lid;
  for (int i = 0; i < BARRIER_ITERS; i++) {
    lm[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    x += lm[(lid + 1u) & mask];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  out[get_global_id(0)] = x;
}

/* Memory and arithmetic at once: the read kernel's NREAD vectors, each
 * folded into one of 8 chains by `reps` FMAs (x = x * a + r), so that the
 * host can balance the two and see how much of the shorter the longer
 * hides. */
__kernel void probe_mix(__global const vf *restrict a,
                        __global float *restrict out, float fa, int reps) {
  size_t g = get_global_id(0), n = get_global_size(0);
  vf x0 = (vf)(0.0f), x1 = x0, x2 = x0, x3 = x0, x4 = x0, x5 = x0, x6 = x0,
     x7 = x0;
  for (int h = 0; h < NREAD; h += 8) {
    const vf r0 = a[g + (size_t)(h + 0) * n], r1 = a[g + (size_t)(h + 1) * n];
    const vf r2 = a[g + (size_t)(h + 2) * n], r3 = a[g + (size_t)(h + 3) * n];
    const vf r4 = a[g + (size_t)(h + 4) * n], r5 = a[g + (size_t)(h + 5) * n];
    const vf r6 = a[g + (size_t)(h + 6) * n], r7 = a[g + (size_t)(h + 7) * n];
    for (int i = 0; i < reps; i++) {
      x0 = x0 * fa + r0;
      x1 = x1 * fa + r1;
      x2 = x2 * fa + r2;
      x3 = x3 * fa + r3;
      x4 = x4 * fa + r4;
      x5 = x5 * fa + r5;
      x6 = x6 * fa + r6;
      x7 = x7 * fa + r7;
    }
  }
  out[g] = HSUM(((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7)));
}

/* A launch as the library issues them: six buffers, set anew for each
 * launch; one work-item writes one float. */
__kernel void probe_args(__global float *restrict out,
                         __global const float *restrict a,
                         __global const float *restrict b,
                         __global const float *restrict c,
                         __global const float *restrict d,
                         __global const float *restrict e) {
  if (get_global_id(0) == 0)
    out[0] = a[0] + b[0] + c[0] + d[0] + e[0];
}
#endif
