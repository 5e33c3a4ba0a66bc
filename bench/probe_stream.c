/* probe_stream.c - clattn-bench-probe: are clattn_probe's triad and FMA
 * peak honest?
 *
 * Runs, in one process and one after the other, a plain C STREAM triad
 * a = b + s*c (OpenMP over all cores, arrays of 256 MiB each initialised
 * by first touch in parallel, 3 arrays x bytes counted per pass), a C FMA
 * peak (OpenMP over all cores, 12 independent chains of the widest FMA
 * the x86 CPU has, AVX-512 or AVX2, through intrinsics), and clattn_probe
 * with the same array size, and prints both triads, both FMA rates and
 * their ratios (target: the probe's triad within 30% of the C triad on a
 * CPU device).
 *
 * usage: clattn-bench-probe [--device SEL] [--reps N] [--mib M] */
#include "clattn_tools.h"

#include <omp.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86_FMA 1
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

/* Best and median GB/s of `reps` triad passes over n floats. */
static int c_triad(size_t n, int reps, double *best, double *median) {
  float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  float *c = malloc(n * sizeof *c);
  double *t = malloc((size_t)reps * sizeof *t);
  const float s = 0.25f;
  long nn = (long)n;
  if (!a || !b || !c || !t) {
    fprintf(stderr, "clattn-bench-probe: out of host memory\n");
    free(a), free(b), free(c), free(t);
    return 1;
  }
#pragma omp parallel for schedule(static)
  for (long i = 0; i < nn; i++) { /* first touch by the thread that uses it */
    a[i] = 0.0f;
    b[i] = (float)(i % 1024) * 1e-3f;
    c[i] = (float)(i % 977) * 1e-3f;
  }
  /* restrict: without it GCC's -O2 vectoriser refuses the loop (it would
   * need run-time alias checks) and the triad runs slower */
  float *restrict ra = a;
  const float *restrict rb = b, *restrict rc = c;
  for (int r = 0; r < reps + 1; r++) { /* pass 0 is a warm-up */
    double t0 = clattn__now();
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < nn; i++)
      ra[i] = rb[i] + s * rc[i];
    if (r > 0)
      t[r - 1] = clattn__now() - t0;
  }
  volatile float sink = a[n / 2]; /* keep the result observable */
  (void)sink;
  qsort(t, (size_t)reps, sizeof *t, clattn__cmp_double);
  double bytes = 3.0 * (double)n * sizeof(float);
  *best = bytes / t[0] * 1e-9;
  *median = bytes / t[reps / 2] * 1e-9;
  free(a), free(b), free(c), free(t);
  return 0;
}

#define FMA_CHAINS 12
#if HAVE_X86_FMA
/* FMA_CHAINS chains x = x * a + b of one register each, `iters` times;
 * returns a sum of the chains so that nothing is optimised away. */
#define FMA_LOOP(V, SET1, FMADD, ADD, STOREU, W)                               \
  V x[FMA_CHAINS], a = SET1(0.999f), b = SET1(0.001f);                         \
  for (int c = 0; c < FMA_CHAINS; c++)                                         \
    x[c] = SET1(0.01f * (float)c);                                             \
  for (long i = 0; i < iters; i++) {                                           \
    _Pragma("GCC unroll 12") for (int c = 0; c < FMA_CHAINS; c++) x[c] =       \
        FMADD(x[c], a, b);                                                     \
  }                                                                            \
  for (int c = 1; c < FMA_CHAINS; c++)                                         \
    x[0] = ADD(x[0], x[c]);                                                    \
  float lanes[W];                                                              \
  STOREU(lanes, x[0]);                                                         \
  return lanes[0];
__attribute__((target("avx512f"))) static float fma_avx512(long iters) {
  FMA_LOOP(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps,
           _mm512_storeu_ps, 16)
}
__attribute__((target("avx2,fma"))) static float fma_avx2(long iters) {
  FMA_LOOP(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps,
           _mm256_storeu_ps, 8)
}

/* GFLOP/s of the FMA chains on every OpenMP thread at once (the median
 * of `reps` timed runs after a warm-up); 0 if the CPU has no FMA. */
static double c_fma_peak(int reps, int *lanes_out) {
  int lanes = __builtin_cpu_supports("avx512f") ? 16
              : __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2")
                  ? 8
                  : 0;
  *lanes_out = lanes;
  if (!lanes)
    return 0.0;
  const long iters = 20L << 20;
  double *t = malloc((size_t)reps * sizeof *t);
  volatile float sink = 0.0f;
  int threads = omp_get_max_threads();
  if (!t)
    return 0.0;
  for (int r = 0; r < reps + 1; r++) {
    double t0 = clattn__now();
#pragma omp parallel
    {
      float v = lanes == 16 ? fma_avx512(iters) : fma_avx2(iters);
#pragma omp atomic
      sink += v;
    }
    if (r > 0)
      t[r - 1] = clattn__now() - t0;
  }
  qsort(t, (size_t)reps, sizeof *t, clattn__cmp_double);
  double flops = 2.0 * lanes * FMA_CHAINS * (double)iters * threads;
  double med = t[reps / 2];
  free(t);
  return flops / med * 1e-9;
}
#endif

int main(int argc, char **argv) {
  const char *device = NULL;
  int reps = 10;
  size_t mib = 256;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc)
      device = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--mib") && i + 1 < argc)
      mib = (size_t)atol(argv[++i]);
    else {
      fprintf(stderr, "usage: clattn-bench-probe [--device SEL] [--reps N] "
                      "[--mib M]\n");
      return 2;
    }
  }
  if (reps < 1 || mib < 1) {
    fprintf(stderr, "clattn-bench-probe: --reps and --mib must be >= 1\n");
    return 2;
  }
  size_t n = mib << 20 >> 2;
  double c_best = 0, c_med = 0;
  printf("C STREAM triad: %d threads, 3 x %zu MiB, %d passes\n",
         omp_get_max_threads(), mib, reps);
  if (c_triad(n, reps, &c_best, &c_med))
    return 1;
  printf("  best %.2f GB/s, median %.2f GB/s\n", c_best, c_med);
  double c_fma = 0.0;
  int c_lanes = 0;
#if HAVE_X86_FMA
  c_fma = c_fma_peak(reps < 5 ? reps : 5, &c_lanes);
#endif
  if (c_fma > 0)
    printf("C FMA peak: %d threads x %d chains of %d-lane FMA intrinsics: "
           "%.1f GFLOP/s (median)\n",
           omp_get_max_threads(), FMA_CHAINS, c_lanes, c_fma);
  else
    printf("C FMA peak: not measured (needs an x86 CPU with AVX2+FMA or "
           "AVX-512)\n");

  clattn_ctx *ctx = NULL;
  clattn_ctx_opts co = {.size = sizeof(clattn_ctx_opts), .device = device};
  clattn_status st = clattn_ctx_create(&co, &ctx);
  if (st != CLATTN_OK) {
    fprintf(stderr, "clattn-bench-probe: clattn_ctx_create: %s: %s\n",
            clattn_status_str(st), clattn_ctx_errmsg(NULL));
    return 1;
  }
  clattn_probe_opts po = {.size = sizeof(clattn_probe_opts),
                          .buffer_bytes = mib << 20};
  clattn_probe_result r = {.size = sizeof(clattn_probe_result)};
  clattn_profile r_prof = {.size = sizeof(clattn_profile)};
  st = clattn_probe(ctx, &po, &r_prof, &r);
  if (st != CLATTN_OK) {
    fprintf(stderr, "clattn-bench-probe: clattn_probe: %s: %s\n",
            clattn_status_str(st), clattn_ctx_errmsg(ctx));
    clattn_ctx_destroy(ctx);
    return 1;
  }
  printf("clattn_probe on %s: 3 x %zu MiB, %.1f s\n", r_prof.name,
         r.buffer_bytes >> 20, r.seconds);
  printf("  triad GB/s per width 1/2/4/8/16:");
  for (int i = 0; i < CLATTN_PROBE_WIDTHS; i++)
    printf(" %.2f", r.triad_gbs[i]);
  printf("\n  best %.2f GB/s (copy %.2f, read %.2f)\n", r_prof.bw_triad_gbs,
         r_prof.bw_copy_gbs, r_prof.bw_read_gbs);
  double ratio = r_prof.bw_triad_gbs / c_best;
  printf("ratio probe / C triad (best): %.2f (%s 30%%); vs C median: %.2f\n",
         ratio, ratio >= 0.7 && ratio <= 1.3 ? "within" : "NOT within",
         r_prof.bw_triad_gbs / c_med);
  printf("  FMA GFLOP/s per width 1/2/4/8/16:");
  for (int i = 0; i < CLATTN_PROBE_WIDTHS; i++)
    printf(" %.1f", r.fma_gflops[i]);
  printf("\n");
  if (c_fma > 0)
    printf("ratio probe / C FMA peak: %.2f (probe best %.1f GFLOP/s)\n",
           r_prof.fp32_gflops / c_fma, r_prof.fp32_gflops);
  clattn_ctx_destroy(ctx);
  return 0;
}
