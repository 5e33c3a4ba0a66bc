/* overhead.c - clattn-bench-overhead: the host time of a repeated
 * clattn_decode and clattn_attention call against a bare
 * clEnqueueNDRangeKernel of the same kernels, in one run.
 *
 * Each call type runs on small shapes, so that the host dominates, in a
 * context with the default tuning (the shipped data present; the
 * explanation's source is printed) and in one with tuning off.  One call
 * is recorded first: clEnqueueNDRangeKernel is wrapped at link time
 * (-Wl,--wrap), so the bare side replays exactly the launches the library
 * made (the same cl_kernel objects, global and local sizes), with the
 * arguments the call left set.  Then, in interleaved rounds, a batch of
 * library calls and a batch of bare replays are each timed on the host:
 * a marker waiting for a user event heads each batch, so that nothing
 * runs on the device while the batch is enqueued (the device's threads
 * would share the host's cores), and the queue is drained outside the
 * timing.  It prints microseconds per call of each side and their ratio
 * (the median of the rounds' ratios); nothing here passes or fails.
 *
 *   clattn-bench-overhead [--device D] [--rounds R] [--calls N] */
#include "bench_util.h"

#include "clattn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------- the recorded launches */

#define MAX_LAUNCHES 8

typedef struct launch {
  cl_kernel k;
  cl_uint dims;
  size_t gws[3], lws[3];
  int has_lws;
} launch;

static int recording;
static int n_launches;
static launch launches[MAX_LAUNCHES];

cl_int __real_clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k,
                                     cl_uint dims, const size_t *off,
                                     const size_t *gws, const size_t *lws,
                                     cl_uint nw, const cl_event *wait,
                                     cl_event *ev);

cl_int __wrap_clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k,
                                     cl_uint dims, const size_t *off,
                                     const size_t *gws, const size_t *lws,
                                     cl_uint nw, const cl_event *wait,
                                     cl_event *ev);

cl_int __wrap_clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k,
                                     cl_uint dims, const size_t *off,
                                     const size_t *gws, const size_t *lws,
                                     cl_uint nw, const cl_event *wait,
                                     cl_event *ev) {
  if (recording && n_launches < MAX_LAUNCHES && dims <= 3) {
    launch *l = &launches[n_launches++];
    memset(l, 0, sizeof *l);
    l->k = k;
    l->dims = dims;
    l->has_lws = lws != NULL;
    for (cl_uint i = 0; i < dims; i++) {
      l->gws[i] = gws[i];
      l->lws[i] = lws ? lws[i] : 0;
    }
  }
  return __real_clEnqueueNDRangeKernel(q, k, dims, off, gws, lws, nw, wait, ev);
}

/* ------------------------------------------------------------- helpers */

static void die(const char *what, const char *msg) {
  fprintf(stderr, "clattn-bench-overhead: %s: %s\n", what, msg);
  exit(1);
}

static void cl_check(cl_int err, const char *what) {
  if (err != CL_SUCCESS)
    die(what, clattn_cl_errstr(err));
}

/* A buffer of bytes whose 32-bit words all hold `word`. */
static cl_mem filled_buffer(clattn_ctx *ctx, size_t bytes, cl_int word) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(clattn_ctx_cl_context(ctx), CL_MEM_READ_WRITE,
                            bytes, NULL, &err);
  cl_check(err, "clCreateBuffer");
  cl_check(clEnqueueFillBuffer(clattn_ctx_queue(ctx), m, &word, sizeof word, 0,
                               bytes, 0, NULL, NULL),
           "clEnqueueFillBuffer");
  return m;
}

static cl_mem zero_buffer(clattn_ctx *ctx, size_t bytes) {
  return filled_buffer(ctx, bytes, 0);
}

/* One call type: its description, buffers and the call. */
typedef struct call_case {
  const char *name;
  int decode;
  clattn_decode_desc d;
  clattn_attn_desc a;
  cl_mem b[5];
} call_case;

static clattn_status run_call(clattn_ctx *ctx, const call_case *c) {
  if (c->decode)
    return clattn_decode(ctx, &c->d, c->b[0], c->b[1], c->b[2], c->b[3],
                         c->b[4], NULL);
  return clattn_attention(ctx, &c->a, c->b[0], c->b[1], c->b[2], c->b[3],
                          c->b[4], NULL);
}

static void make_buffers(clattn_ctx *ctx, call_case *c) {
  if (c->decode) {
    const clattn_decode_desc *d = &c->d;
    const size_t kv = (size_t)d->batch * d->capacity * d->heads_kv;
    c->b[0] = zero_buffer(ctx, 4u * d->batch * d->heads_q * d->head_dim_k);
    c->b[1] = zero_buffer(ctx, 4u * kv * d->head_dim_k);
    c->b[2] = zero_buffer(ctx, 4u * kv * d->head_dim_v);
    c->b[3] = filled_buffer(ctx, 4u * d->batch, d->capacity); /* lens */
    c->b[4] = zero_buffer(ctx, 4u * d->batch * d->heads_q * d->head_dim_v);
  } else {
    const clattn_attn_desc *a = &c->a;
    const size_t kv = (size_t)a->batch * a->n_kv * a->heads_kv;
    c->b[0] =
        zero_buffer(ctx, 4u * a->batch * a->n_q * a->heads_q * a->head_dim_k);
    c->b[1] = zero_buffer(ctx, 4u * kv * a->head_dim_k);
    c->b[2] = zero_buffer(ctx, 4u * kv * a->head_dim_v);
    c->b[3] = NULL;
    c->b[4] =
        zero_buffer(ctx, 4u * a->batch * a->n_q * a->heads_q * a->head_dim_v);
  }
}

static void free_buffers(call_case *c) {
  for (int i = 0; i < 5; i++)
    if (c->b[i])
      clReleaseMemObject(c->b[i]);
}

/* A batch's gate: a user event that a marker at the batch's head waits
 * for; open() enqueues it, release() lets the batch run and drains it. */
static cl_event gate_open(clattn_ctx *ctx) {
  cl_int err = CL_SUCCESS;
  cl_event u = clCreateUserEvent(clattn_ctx_cl_context(ctx), &err);
  cl_check(err, "clCreateUserEvent");
  cl_check(clEnqueueMarkerWithWaitList(clattn_ctx_queue(ctx), 1, &u, NULL),
           "clEnqueueMarkerWithWaitList");
  return u;
}

static void gate_release(clattn_ctx *ctx, cl_event u) {
  cl_check(clSetUserEventStatus(u, CL_COMPLETE), "clSetUserEventStatus");
  cl_check(clFinish(clattn_ctx_queue(ctx)), "clFinish");
  clReleaseEvent(u);
}

/* Seconds per call of n library calls. */
static double time_calls(clattn_ctx *ctx, const call_case *c, int n) {
  cl_event u = gate_open(ctx);
  const double t0 = clattn__now();
  for (int i = 0; i < n; i++) {
    clattn_status st = run_call(ctx, c);
    if (st != CLATTN_OK)
      die(c->name, clattn_ctx_errmsg(ctx));
  }
  const double t = clattn__now() - t0;
  gate_release(ctx, u);
  return t / n;
}

/* Seconds per call of n replays of the recorded launches. */
static double time_bare(clattn_ctx *ctx, int n) {
  cl_command_queue q = clattn_ctx_queue(ctx);
  cl_event u = gate_open(ctx);
  const double t0 = clattn__now();
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n_launches; j++) {
      const launch *l = &launches[j];
      cl_int err = __real_clEnqueueNDRangeKernel(q, l->k, l->dims, NULL, l->gws,
                                                 l->has_lws ? l->lws : NULL, 0,
                                                 NULL, NULL);
      if (err != CL_SUCCESS)
        die("clEnqueueNDRangeKernel", clattn_cl_errstr(err));
    }
  const double t = clattn__now() - t0;
  gate_release(ctx, u);
  return t / n;
}

static void bench_case(const char *device, int no_tuning, call_case *c,
                       int rounds, int calls) {
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  o.device = device;
  o.no_tuning = no_tuning;
  clattn_ctx *ctx = NULL;
  if (clattn_ctx_create(&o, &ctx) != CLATTN_OK)
    die("clattn_ctx_create", clattn_ctx_errmsg(NULL));
  make_buffers(ctx, c);
  /* the first call builds the programs; the second is recorded */
  if (run_call(ctx, c) != CLATTN_OK)
    die(c->name, clattn_ctx_errmsg(ctx));
  cl_check(clFinish(clattn_ctx_queue(ctx)), "clFinish");
  n_launches = 0;
  recording = 1;
  clattn_status st = run_call(ctx, c);
  recording = 0;
  if (st != CLATTN_OK)
    die(c->name, clattn_ctx_errmsg(ctx));
  cl_check(clFinish(clattn_ctx_queue(ctx)), "clFinish");
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  if (clattn_ctx_last_choice(ctx, &ch) != CLATTN_OK)
    die("clattn_ctx_last_choice", clattn_ctx_errmsg(ctx));
  const char *params = ch.resolved;
  double *lib = malloc((size_t)rounds * sizeof *lib);
  double *bare = malloc((size_t)rounds * sizeof *bare);
  double *ratio = malloc((size_t)rounds * sizeof *ratio);
  if (!lib || !bare || !ratio)
    die("malloc", "out of memory");
  time_calls(ctx, c, calls); /* warm both paths */
  time_bare(ctx, calls);
  for (int r = 0; r < rounds; r++) {
    lib[r] = time_calls(ctx, c, calls);
    bare[r] = time_bare(ctx, calls);
    ratio[r] = lib[r] / bare[r];
  }
  const double rmed = clattn__median(ratio, rounds);
  printf("%-10s %-8s %-8s %2d %9.2f %9.2f %7.2fx  %s\n", c->name,
         no_tuning ? "off" : "default", clattn_choice_source_str(ch.source),
         n_launches, 1e6 * clattn__median(lib, rounds),
         1e6 * clattn__median(bare, rounds), rmed, params);
  fflush(stdout);
  free(lib);
  free(bare);
  free(ratio);
  free_buffers(c);
  clattn_ctx_destroy(ctx);
}

int main(int argc, char **argv) {
  const char *device = NULL;
  int rounds = 31, calls = 200;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
      device = argv[++i];
    else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
      calls = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: clattn-bench-overhead [--device D] [--rounds "
                      "R] [--calls N]\n");
      return 2;
    }
  }
  if (rounds < 1 || calls < 1) {
    fprintf(stderr, "clattn-bench-overhead: rounds and calls must be >= 1\n");
    return 2;
  }
  call_case cases[2];
  memset(cases, 0, sizeof cases);
  cases[0].name = "decode";
  cases[0].decode = 1;
  cases[0].d = (clattn_decode_desc){.size = sizeof(clattn_decode_desc),
                                    .batch = 1,
                                    .capacity = 128,
                                    .heads_q = 8,
                                    .heads_kv = 2,
                                    .head_dim_k = 64,
                                    .head_dim_v = 64,
                                    .dtype = CLATTN_F32,
                                    .cache_layout = CLATTN_BHSD};
  cases[1].name = "attention";
  cases[1].a = (clattn_attn_desc){.size = sizeof(clattn_attn_desc),
                                  .batch = 1,
                                  .n_q = 16,
                                  .n_kv = 16,
                                  .heads_q = 4,
                                  .heads_kv = 4,
                                  .head_dim_k = 32,
                                  .head_dim_v = 32,
                                  .dtype = CLATTN_F32,
                                  .q_layout = CLATTN_BSHD,
                                  .kv_layout = CLATTN_BSHD,
                                  .causal = 1};
  printf("host time a call, %d rounds of %d calls (median), against bare "
         "clEnqueueNDRangeKernel of the same launches\n",
         rounds, calls);
  printf("%-10s %-8s %-8s %2s %9s %9s %8s  %s\n", "call", "tuning", "source",
         "nk", "lib us", "bare us", "ratio", "resolved params");
  for (int c = 0; c < 2; c++)
    for (int off = 0; off <= 1; off++)
      bench_case(device, off, &cases[c], rounds, calls);
  return 0;
}
