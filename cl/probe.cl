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
#endif
