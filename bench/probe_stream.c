/* probe_stream.c - clattn-bench-probe: is clattn_probe's triad honest?
 *
 * Runs, in one process and one after the other, a plain C STREAM triad
 * a = b + s*c (OpenMP over all cores, arrays of 256 MiB each initialised
 * by first touch in parallel, 3 arrays x bytes counted per pass) and
 * clattn_probe with the same array size, and prints both triads and their
 * ratio (target: the probe within 30% of the C triad on a CPU device).
 *
 * usage: clattn-bench-probe [--device SEL] [--reps N] [--mib M] */
#include "clattn.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"


/* Best and median GB/s of `reps` triad passes over n floats. */
static int c_triad(size_t n, int reps, double *best, double *median)
{
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
   * need run-time alias checks) and the triad ran ~25% slower here */
  float *restrict ra = a;
  const float *restrict rb = b, *restrict rc = c;
  for (int r = 0; r < reps + 1; r++) { /* pass 0 is a warm-up */
    double t0 = now_s();
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < nn; i++)
      ra[i] = rb[i] + s * rc[i];
    if (r > 0)
      t[r - 1] = now_s() - t0;
  }
  volatile float sink = a[n / 2]; /* keep the result observable */
  (void)sink;
  qsort(t, (size_t)reps, sizeof *t, cmp_double);
  double bytes = 3.0 * (double)n * sizeof(float);
  *best = bytes / t[0] * 1e-9;
  *median = bytes / t[reps / 2] * 1e-9;
  free(a), free(b), free(c), free(t);
  return 0;
}

int main(int argc, char **argv)
{
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
      fprintf(stderr,
              "usage: clattn-bench-probe [--device SEL] [--reps N] "
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

  clattn_ctx *ctx = NULL;
  clattn_ctx_opts co = {.device = device};
  clattn_status st = clattn_ctx_create(&co, &ctx);
  if (st != CLATTN_OK) {
    fprintf(stderr, "clattn-bench-probe: clattn_ctx_create: %s: %s\n",
            clattn_status_str(st), clattn_ctx_errmsg(NULL));
    return 1;
  }
  clattn_probe_opts po = {.buffer_bytes = mib << 20};
  clattn_probe_result r;
  st = clattn_probe(ctx, &po, &r);
  if (st != CLATTN_OK) {
    fprintf(stderr, "clattn-bench-probe: clattn_probe: %s: %s\n",
            clattn_status_str(st), clattn_ctx_errmsg(ctx));
    clattn_ctx_destroy(ctx);
    return 1;
  }
  printf("clattn_probe on %s: 3 x %zu MiB, %.1f s\n", r.profile.name,
         r.buffer_bytes >> 20, r.seconds);
  printf("  triad GB/s per width 1/2/4/8/16:");
  for (int i = 0; i < CLATTN_PROBE_WIDTHS; i++)
    printf(" %.2f", r.triad_gbs[i]);
  printf("\n  best %.2f GB/s (copy %.2f, read %.2f)\n", r.profile.bw_triad_gbs,
         r.profile.bw_copy_gbs, r.profile.bw_read_gbs);
  double ratio = r.profile.bw_triad_gbs / c_best;
  printf("ratio probe / C triad (best): %.2f (%s 30%%); vs C median: %.2f\n",
         ratio, ratio >= 0.7 && ratio <= 1.3 ? "within" : "NOT within",
         r.profile.bw_triad_gbs / c_med);
  clattn_ctx_destroy(ctx);
  return 0;
}
