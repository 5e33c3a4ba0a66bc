/* call_host_time.c - clattn-bench-call: the host time of one
 * clattn_attention call from C, the baseline bench/python_overhead.py sets
 * the Python binding's call against (the same shape, device and method).
 *
 * Each call is timed alone: a marker that waits for a user event heads the
 * queue, so that nothing runs on the device while the call enqueues (the
 * device's threads would share the host's cores); the call is timed on the
 * host; then the event is set and the queue drained, outside the timing.
 * The first calls build the programs and warm the context's memo.  It
 * prints the median, the quartiles and the minimum in microseconds.
 *
 *   clattn-bench-call [--device D] [--calls N] [--batch B] [--n N]
 *                     [--heads H] [--dim D] [--causal 0|1] */
#include "bench_util.h"

#include "clattn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, const char *msg) {
  fprintf(stderr, "clattn-bench-call: %s: %s\n", what, msg);
  exit(1);
}

static void cl_check(cl_int err, const char *what) {
  if (err != CL_SUCCESS)
    die(what, clattn_cl_errstr(err));
}

static cl_mem zero_buffer(clattn_ctx *ctx, size_t bytes) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(clattn_ctx_cl_context(ctx), CL_MEM_READ_WRITE,
                            bytes, NULL, &err);
  cl_check(err, "clCreateBuffer");
  const float zero = 0.0f;
  cl_check(clEnqueueFillBuffer(clattn_ctx_queue(ctx), m, &zero, sizeof zero, 0,
                               bytes, 0, NULL, NULL),
           "clEnqueueFillBuffer");
  return m;
}

/* Seconds of one call's host time, the device held back behind a gate. */
static double time_one_call(clattn_ctx *ctx, const clattn_attn_desc *d,
                            cl_mem q, cl_mem k, cl_mem v, cl_mem o) {
  cl_command_queue queue = clattn_ctx_queue(ctx);
  cl_int err = CL_SUCCESS;
  cl_event gate = clCreateUserEvent(clattn_ctx_cl_context(ctx), &err);
  cl_check(err, "clCreateUserEvent");
  cl_check(clEnqueueMarkerWithWaitList(queue, 1, &gate, NULL),
           "clEnqueueMarkerWithWaitList");
  const double t0 = clattn__now();
  const clattn_status st = clattn_attention(ctx, d, q, k, v, NULL, o, NULL);
  const double t = clattn__now() - t0;
  if (st != CLATTN_OK)
    die("clattn_attention", clattn_ctx_errmsg(ctx));
  cl_check(clSetUserEventStatus(gate, CL_COMPLETE), "clSetUserEventStatus");
  cl_check(clFinish(queue), "clFinish");
  clReleaseEvent(gate);
  return t;
}

static int positive_arg(const char *name, const char *value) {
  const int n = atoi(value);
  if (n < 1) {
    fprintf(stderr, "clattn-bench-call: %s must be >= 1, got '%s'\n", name,
            value);
    exit(2);
  }
  return n;
}

int main(int argc, char **argv) {
  const char *device = NULL;
  int calls = 2000, batch = 1, n = 16, heads = 4, dim = 32, causal = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!val)
      goto usage;
    if (strcmp(a, "--device") == 0)
      device = val;
    else if (strcmp(a, "--calls") == 0)
      calls = positive_arg(a, val);
    else if (strcmp(a, "--batch") == 0)
      batch = positive_arg(a, val);
    else if (strcmp(a, "--n") == 0)
      n = positive_arg(a, val);
    else if (strcmp(a, "--heads") == 0)
      heads = positive_arg(a, val);
    else if (strcmp(a, "--dim") == 0)
      dim = positive_arg(a, val);
    else if (strcmp(a, "--causal") == 0)
      causal = atoi(val) != 0;
    else
      goto usage;
    i++;
  }
  clattn_ctx_opts opts = {.size = sizeof opts, .device = device};
  clattn_ctx *ctx = NULL;
  if (clattn_ctx_create(&opts, &ctx) != CLATTN_OK)
    die("clattn_ctx_create", clattn_ctx_errmsg(NULL));
  const clattn_attn_desc d = {.size = sizeof d,
                              .batch = batch,
                              .n_q = n,
                              .n_kv = n,
                              .heads_q = heads,
                              .heads_kv = heads,
                              .head_dim_k = dim,
                              .head_dim_v = dim,
                              .dtype = CLATTN_F32,
                              .q_layout = CLATTN_BSHD,
                              .kv_layout = CLATTN_BSHD,
                              .causal = causal};
  const size_t bytes = sizeof(float) * (size_t)batch * n * heads * dim;
  cl_mem q = zero_buffer(ctx, bytes), k = zero_buffer(ctx, bytes),
         v = zero_buffer(ctx, bytes), o = zero_buffer(ctx, bytes);
  for (int i = 0; i < 50; i++) /* the programs, the memo, the caches */
    time_one_call(ctx, &d, q, k, v, o);
  double *t = malloc((size_t)calls * sizeof *t);
  if (!t)
    die("malloc", "out of memory");
  for (int i = 0; i < calls; i++)
    t[i] = time_one_call(ctx, &d, q, k, v, o);
  const double median = clattn__median(t, calls); /* sorts t */
  printf("clattn_attention b=%d n=%d heads=%d d=%d f32 causal=%d on %s: "
         "median %.3f us, quartiles %.3f %.3f us, min %.3f us, %d calls\n",
         batch, n, heads, dim, causal, device ? device : "the default device",
         1e6 * median, 1e6 * t[calls / 4], 1e6 * t[(3 * calls) / 4], 1e6 * t[0],
         calls);
  free(t);
  cl_mem bufs[] = {q, k, v, o};
  for (int i = 0; i < 4; i++)
    clReleaseMemObject(bufs[i]);
  clattn_ctx_destroy(ctx);
  return 0;
usage:
  fprintf(stderr, "usage: clattn-bench-call [--device D] [--calls N] "
                  "[--batch B] [--n N] [--heads H] [--dim D] [--causal 0|1]\n");
  return 2;
}
