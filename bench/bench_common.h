/* bench_common.h - what clattn-bench's sections share: the run's state
 * (context, queue, the ceilings measured in this run, JSON records), error
 * exits, buffers, the median timer and the ceilings' probe. */
#ifndef CLATTN_BENCH_COMMON_H
#define CLATTN_BENCH_COMMON_H

#include "clattn_tools.h"

#include <clblast_c.h>
#include <stddef.h>

#include "bench_util.h"

typedef struct bench {
  clattn_ctx *ctx;
  cl_context context;
  cl_command_queue queue;
  cl_device_id device;
  cl_program prog;
  cl_kernel k_softmax; /* cl/unfused.cl's softmax_rows (the context's) */
  int quick;
  int reps;
  const char *json_path;
  double copy_gbs; /* measured ceilings (latest) */
  double read_gbs;
  double fma_gflops;
  clattn_profile prof; /* the probe's profile, bandwidths at the latest copy */
  /* JSON records */
  char **recs;
  size_t nrecs, caprecs;
} bench;

extern bench *g_bench; /* for cleanup on fatal errors only */

void bench_cleanup(bench *B);

#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 1, 2)))
#endif
void die(const char *fmt, ...);

#define CK(call)                                                               \
  do {                                                                         \
    cl_int e_ = (call);                                                        \
    if (e_ != CL_SUCCESS)                                                      \
      die("%s:%d: %s failed: %d", __FILE__, __LINE__, #call, (int)e_);         \
  } while (0)

#define CKB(call)                                                              \
  do {                                                                         \
    CLBlastStatusCode s_ = (call);                                             \
    if (s_ != CLBlastSuccess)                                                  \
      die("%s:%d: %s failed: CLBlast status %d", __FILE__, __LINE__, #call,    \
          (int)s_);                                                            \
  } while (0)

#define CKA(B, call)                                                           \
  do {                                                                         \
    clattn_status a_ = (call);                                                 \
    if (a_ != CLATTN_OK)                                                       \
      die("%s:%d: %s failed: %s: %s", __FILE__, __LINE__, #call,               \
          clattn_status_str(a_), clattn_ctx_errmsg((B)->ctx));                 \
  } while (0)

void *xmalloc(size_t n);

/* Record one figure for --json. */
void rec(bench *B, const char *section, const char *name, const char *metric,
         double value);

cl_mem buf_new(bench *B, size_t bytes);
void buf_fill(bench *B, cl_mem m, size_t bytes, float value);
/* A buffer of `count` floats, uniform in [-amp, amp], deterministic. */
cl_mem buf_random(bench *B, size_t count, float amp, unsigned seed);
void rel(cl_mem *m);
/* The bytes of K/V a cold-cache decode case rotates over, so that no step
 * finds its K/V still in the last-level cache. */
size_t cold_bytes(bench *B);
/* max |x - y| over `count` floats of two buffers (NaN if either has one). */
double max_abs_diff(bench *B, cl_mem x, cl_mem y, size_t count);

/* Build an OpenCL program for B's device (dies with the build log). */
cl_program bench_program(bench *B, const char *src, const char *what);

/* A timed workload: enqueue once; nonzero return = failure (the status). */
typedef int (*run_fn)(bench *B, void *arg);

/* Median wall time in seconds of `reps` runs after `warm` warm-ups, each
 * clFinish'ed.  Returns a negative value if a run failed. */
double time_median(bench *B, run_fn fn, void *arg, int warm, int reps);

/* The device's ceilings, measured now by the library's probe; updates B's
 * ceilings (the FMA rate and B->prof only with with_fma) and prints them. */
void measure_ceilings(bench *B, const char *tag, int with_fma);

/* The 1-minute load average: the machine may be shared. */
void print_load(const char *when);

/* Sections. */
void bench_talking_heads(bench *B);
void bench_hh(bench *B);
void bench_switchhead(bench *B);
void bench_options(bench *B);

#endif
