/* bench_common.c - the plumbing clattn-bench's sections share (see
 * bench_common.h). */
#include "bench_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bench *g_bench;

void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "clattn-bench: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  if (g_bench != NULL)
    bench_cleanup(g_bench);
  exit(1);
}

void *xmalloc(size_t n) {
  void *p = malloc(n != 0 ? n : 1);
  if (p == NULL)
    die("out of host memory (%zu bytes)", n);
  return p;
}

/* Record one figure for --json. */
void rec(bench *B, const char *section, const char *name, const char *metric,
         double value) {
  char buf[512];
  if (B->json_path == NULL)
    return;
  snprintf(buf, sizeof buf,
           "{\"section\": \"%s\", \"case\": \"%s\", \"metric\": \"%s\", "
           "\"value\": %.6g}",
           section, name, metric, isfinite(value) ? value : -1.0);
  if (B->nrecs == B->caprecs) {
    size_t cap = B->caprecs ? 2 * B->caprecs : 64;
    char **r = realloc(B->recs, cap * sizeof *r);
    if (r == NULL)
      die("out of host memory");
    B->recs = r;
    B->caprecs = cap;
  }
  B->recs[B->nrecs] = xmalloc(strlen(buf) + 1);
  memcpy(B->recs[B->nrecs], buf, strlen(buf) + 1);
  B->nrecs++;
}

cl_mem buf_new(bench *B, size_t bytes) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(B->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
  if (err != CL_SUCCESS || m == NULL)
    die("clCreateBuffer(%zu bytes) failed: %d", bytes, (int)err);
  return m;
}

void buf_fill(bench *B, cl_mem m, size_t bytes, float value) {
  CK(clEnqueueFillBuffer(B->queue, m, &value, sizeof value, 0, bytes, 0, NULL,
                         NULL));
}

/* A buffer of `count` floats, uniform in [-amp, amp], deterministic. */
cl_mem buf_random(bench *B, size_t count, float amp, unsigned seed) {
  float *h = xmalloc(count * sizeof *h);
  unsigned long long s = 0x9e3779b97f4a7c15ull ^ seed;
  for (size_t i = 0; i < count; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    h[i] = amp * ((float)(s >> 40) / (float)(1u << 24) * 2.0f - 1.0f);
  }
  cl_mem m = buf_new(B, count * sizeof *h);
  CK(clEnqueueWriteBuffer(B->queue, m, CL_TRUE, 0, count * sizeof *h, h, 0,
                          NULL, NULL));
  free(h);
  return m;
}

cl_program bench_program(bench *B, const char *src, const char *what) {
  cl_int err = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(B->context, 1, &src, NULL, &err);
  if (err != CL_SUCCESS)
    die("clCreateProgramWithSource (%s) failed: %d", what, (int)err);
  err = clBuildProgram(p, 1, &B->device, "-cl-mad-enable", NULL, NULL);
  if (err != CL_SUCCESS) {
    char log[8192] = "";
    clGetProgramBuildInfo(p, B->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1,
                          log, NULL);
    clReleaseProgram(p);
    die("%s failed to build (%d):\n%s", what, (int)err, log);
  }
  return p;
}

size_t cold_bytes(bench *B) {
  /* more than twice the last-level cache the device reports, and at least
   * 512 MiB (256 with --quick) */
  size_t target = (size_t)(B->quick ? 256 : 512) << 20;
  clattn_profile prof = {.size = sizeof(clattn_profile)};
  if (clattn_profile_reported(B->ctx, &prof) == CLATTN_OK &&
      2 * (size_t)prof.cache_bytes >= target)
    target = 2 * (size_t)prof.cache_bytes + ((size_t)64 << 20);
  return target;
}

void rel(cl_mem *m) {
  if (*m != NULL)
    clReleaseMemObject(*m);
  *m = NULL;
}

double time_median(bench *B, run_fn fn, void *arg, int warm, int reps) {
  double *t = xmalloc((size_t)reps * sizeof *t);
  double r;
  CK(clFinish(B->queue));
  for (int i = 0; i < warm; i++) {
    if (fn(B, arg) != 0) {
      free(t);
      return -1.0;
    }
    CK(clFinish(B->queue));
  }
  for (int i = 0; i < reps; i++) {
    double t0 = clattn__now();
    if (fn(B, arg) != 0) {
      free(t);
      return -1.0;
    }
    CK(clFinish(B->queue));
    t[i] = clattn__now() - t0;
  }
  r = clattn__median(t, reps);
  free(t);
  return r;
}

void bench_cleanup(bench *B) {
  g_bench = NULL;
  if (B->queue != NULL)
    clFinish(B->queue);
  if (B->prog != NULL)
    clReleaseProgram(B->prog);
  clattn_ctx_destroy(B->ctx);
  for (size_t i = 0; i < B->nrecs; i++)
    free(B->recs[i]);
  free(B->recs);
  memset(B, 0, sizeof *B);
}

/* The 1-minute load average ("?" if unknown): the machine may be shared. */
void print_load(const char *when) {
  char buf[128] = "?";
  FILE *f = fopen("/proc/loadavg", "r");
  if (f != NULL) {
    if (fgets(buf, sizeof buf, f) == NULL)
      snprintf(buf, sizeof buf, "?");
    fclose(f);
  }
  buf[strcspn(buf, "\n")] = '\0';
  printf("load average %s: %s\n", when, buf);
}

/* The device's ceilings, measured now by the library's probe (clattn_probe:
 * clpeak-style, random data, buffers beyond the last-level cache, best of
 * vector widths 1-16): copy and read-only bandwidth and the FP32 FMA rate.
 * Updates B's ceilings and prints them. */
void measure_ceilings(bench *B, const char *tag, int with_fma) {
  clattn_probe_opts po = {.size = sizeof(clattn_probe_opts)};
  clattn_probe_result r = {.size = sizeof(clattn_probe_result)};
  clattn_profile r_prof = {.size = sizeof(clattn_profile)};
  char name[96];
  memset(&po, 0, sizeof po);
  po.size = sizeof po;
  if (B->quick) {
    po.target_s = 0.02;
    po.repeats = 3;
  }
  CKA(B, clattn_probe(B->ctx, &po, &r_prof, &r));
  B->copy_gbs = r_prof.bw_copy_gbs;
  B->read_gbs = r_prof.bw_read_gbs;
  snprintf(name, sizeof name, "copy%s (read+write)", tag);
  printf("  %-46s %9.1f GB/s\n", name, B->copy_gbs);
  snprintf(name, sizeof name, "read%s (read only)", tag);
  printf("  %-46s %9.1f GB/s\n", name, B->read_gbs);
  if (!with_fma)
    clattn_profile_at_copy(&B->prof, B->copy_gbs);
  rec(B, "ceiling", tag[0] ? "copy (before decode)" : "copy", "GB/s",
      B->copy_gbs);
  rec(B, "ceiling", tag[0] ? "read (before decode)" : "read", "GB/s",
      B->read_gbs);
  if (with_fma) {
    B->prof = r_prof;
    B->fma_gflops = r_prof.fp32_gflops;
    printf("  %-46s %9.1f GFLOP/s\n", "FP32 FMA peak", B->fma_gflops);
    rec(B, "ceiling", "fma", "GFLOP/s", B->fma_gflops);
  }
  printf("  (clattn_probe, best of vector widths 1-16, %zu MiB per array, "
         "%.1f s)\n",
         r.buffer_bytes >> 20, r.seconds);
}

double max_abs_diff(bench *B, cl_mem x, cl_mem y, size_t count) {
  float *hx = xmalloc(count * sizeof *hx), *hy = xmalloc(count * sizeof *hy);
  double mx = 0.0;
  CK(clEnqueueReadBuffer(B->queue, x, CL_TRUE, 0, count * sizeof *hx, hx, 0,
                         NULL, NULL));
  CK(clEnqueueReadBuffer(B->queue, y, CL_TRUE, 0, count * sizeof *hy, hy, 0,
                         NULL, NULL));
  for (size_t i = 0; i < count; i++) {
    double e = fabs((double)hx[i] - (double)hy[i]);
    if (!(e <= mx))
      mx = e; /* NaN propagates */
  }
  free(hx);
  free(hy);
  return mx;
}
