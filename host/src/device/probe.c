/* probe.c - clattn_probe: the device's ceilings, measured clpeak-style.
 *
 * Protocol for every figure: one untimed warm-up unit, a timed calibration
 * that sizes a repeat to about target_s (a whole number of units, at least
 * one), then `repeats` timed repeats; the median time per unit is kept.
 * Times are wall-clock around clFinish, so no profiling queue is needed.
 * Slow devices stay bounded: the FMA and local-memory grids grow from one
 * work-group per compute unit only while a launch stays under target_s / 2,
 * and a unit whose warm-up takes over 2 * target_s skips the calibration
 * and gets at most 3 repeats (rusticl on llvmpipe is that slow).
 *
 * Bandwidth arrays are filled from the host with splitmix64 floats (so
 * memory compression cannot inflate the figures) and are, by default, 4x
 * the device's global-memory cache (at least 64 MiB), capped by
 * CL_DEVICE_MAX_MEM_ALLOC_SIZE and a quarter of global memory.
 *
 * Work-group sizes come from the device and the compiled kernel
 * (CL_KERNEL_WORK_GROUP_SIZE), never assumed: the preferred sizes below are
 * only upper bounds.
 *
 * Also here: clattn_copy_ref, the copy kernel at width 16 as a bandwidth
 * reference that measurements time beside their own passes (one launch,
 * no calibration). */
#include "base/clock.h"
#include "base/stats.h"
#include "base/versioned.h"
#include "device/probe.h"
#include "device/profile.h"
#include "runtime/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB ((size_t)1 << 20)
#define MIN_DEFAULT_BUFFER (64 * MIB)
#define HOST_CHUNK (16 * MIB)
#define XFER_BYTES (64 * MIB)
#define PIPELINE_LAUNCHES 200
#define CACHED_WINDOW ((size_t)256 << 10)
#define MAX_UNITS 1000000
#define NREAD CLATTN__PROBE_NREAD
#define FMA_ITERS CLATTN__PROBE_FMA_ITERS
#define LOCAL_ITERS CLATTN__PROBE_LOCAL_ITERS

/* Upper bounds of the work-group sizes (the device and kernel may allow
 * less).  GPUs want 64-256 items; PoCL runs the items of a group in a loop,
 * vectorised across items only for loop-free kernels. */
#define GPU_WG 256
#define CPU_BW_WG 1024
#define CPU_FMA_WG 8
#define CPU_LOCAL_WG 64

static const int probe_widths[CLATTN_PROBE_WIDTHS] = {1, 2, 4, 8, 16};

typedef enum unit_kind { U_KERNEL, U_ARGS, U_WRITE, U_READ } unit_kind;

/* One timed unit of work: `count` kernel launches or transfers, with a
 * clFinish after each when finish_each is set.  U_ARGS: launches of
 * probe_args, its buffers set before each (two sets in turn). */
typedef struct unit {
  unit_kind kind;
  cl_kernel k;
  size_t gws, lws;
  int count;
  int finish_each;
} unit;

typedef struct probe {
  clattn_ctx *ctx;
  int is_cpu;
  double target_s;
  int repeats;
  int calib_rounds;
  size_t buf; /* bytes per bandwidth array */
  size_t out_bytes;
  cl_mem a, b, c, out;
  void *host; /* transfer source/destination */
  size_t host_bytes;
} probe;

/* splitmix64 floats uniform in [-1, 1), two per 64-bit output. */
static void random_fill(uint64_t *state, float *x, size_t n) {
  for (size_t i = 0; i < n; i += 2) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    x[i] = (float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
    if (i + 1 < n)
      x[i + 1] = (float)((z >> 8) & 0xffffffu) * (2.0f / 16777216.0f) - 1.0f;
  }
}

/* --------------------------------------------------------------- timing */

/* probe_args' buffers for launch i: two sets in turn, so that every
 * launch sets them anew, as a stream of calls over several layers does. */
static clattn_status set_args(probe *P, cl_kernel k, int i) {
  const cl_mem set[2][CLATTN__PROBE_ARGS] = {
      {P->out, P->a, P->b, P->c, P->a, P->b},
      {P->out, P->b, P->c, P->a, P->b, P->c}};
  return clattn__args(P->ctx, k, &(cl_uint){0}, CLATTN__PROBE_ARGS,
                      sizeof(cl_mem), set[i & 1]);
}

static clattn_status run_unit(probe *P, const unit *u) {
  clattn_status rc = CLATTN_OK;
  clattn_ctx *ctx = P->ctx;
  for (int i = 0; i < u->count; i++) {
    switch (u->kind) {
    case U_ARGS:
    case U_KERNEL:
      if (u->kind == U_ARGS)
        CLATTN_TRY(set_args(P, u->k, i));
      CLATTN_TRY(clattn__launch(ctx, u->k, 1, &u->gws, &u->lws, 0, NULL, NULL));
      break;
    case U_WRITE:
      CLATTN_CL(ctx,
                clEnqueueWriteBuffer(ctx->queue, P->a, CL_TRUE, 0,
                                     P->host_bytes, P->host, 0, NULL, NULL));
      break;
    case U_READ:
      CLATTN_CL(ctx,
                clEnqueueReadBuffer(ctx->queue, P->a, CL_TRUE, 0, P->host_bytes,
                                    P->host, 0, NULL, NULL));
      break;
    }
    if (u->finish_each)
      CLATTN_CL(ctx, clFinish(ctx->queue));
  }
done:
  return rc;
}

/* Time n units and a clFinish. */
static clattn_status time_units(probe *P, const unit *u, long n, double *t) {
  clattn_status rc = CLATTN_OK;
  double t0 = clattn__now();
  for (long i = 0; i < n; i++)
    CLATTN_TRY(run_unit(P, u));
  CLATTN_CL(P->ctx, clFinish(P->ctx->queue));
  *t = clattn__now() - t0;
done:
  return rc;
}

/* Median seconds per unit: warm-up, calibration to target_s, repeats. */
static clattn_status measure(probe *P, const unit *u, double *sec) {
  clattn_status rc = CLATTN_OK;
  double t = 0, *rep = NULL;
  long n = 1;
  CLATTN_CL(P->ctx, clFinish(P->ctx->queue));
  CLATTN_TRY(time_units(P, u, 1, &t)); /* warm-up */
  int slow = t > 2 * P->target_s;
  int reps = slow && P->repeats > 3 ? 3 : P->repeats;
  for (int r = 0; !slow && r < P->calib_rounds; r++) {
    CLATTN_TRY(time_units(P, u, n, &t));
    double want = t > 0 ? ceil((double)n * P->target_s / t) : MAX_UNITS;
    n = want < 1 ? 1 : want > MAX_UNITS ? MAX_UNITS : (long)want;
  }
  rep = malloc((size_t)reps * sizeof *rep);
  if (rep == NULL)
    return clattn__fail(P->ctx, CLATTN_ERR_NOMEM, "out of host memory");
  for (int r = 0; r < reps; r++) {
    CLATTN_TRY(time_units(P, u, n, &t));
    rep[r] = t / (double)n;
  }
  *sec = clattn__median(rep, reps);
  if (!(*sec > 0))
    *sec = 1e-9; /* below the clock's resolution */
done:
  free(rep);
  return rc;
}

/* ------------------------------------------------------------ buffers */

static clattn_status new_buffer(probe *P, size_t bytes, cl_mem *out) {
  cl_int err = CL_SUCCESS;
  *out = clCreateBuffer(P->ctx->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
  if (err == CL_SUCCESS)
    return CLATTN_OK;
  *out = NULL;
  return clattn__fail(P->ctx,
                      err == CL_OUT_OF_HOST_MEMORY ? CLATTN_ERR_NOMEM
                                                   : CLATTN_ERR_OPENCL,
                      "clCreateBuffer(%zu bytes) for the probe failed: %s "
                      "(%d)",
                      bytes, clattn_cl_errstr(err), (int)err);
}

/* Fill m with random floats from the host, chunk by chunk. */
static clattn_status fill_random(probe *P, cl_mem m, size_t bytes,
                                 uint64_t seed) {
  clattn_status rc = CLATTN_OK;
  size_t chunk = bytes < HOST_CHUNK ? bytes : HOST_CHUNK;
  float *h = malloc(chunk);
  uint64_t state = seed;
  if (h == NULL)
    return clattn__fail(P->ctx, CLATTN_ERR_NOMEM, "out of host memory");
  for (size_t off = 0; off < bytes; off += chunk) {
    size_t n = bytes - off < chunk ? bytes - off : chunk;
    random_fill(&state, h, n / sizeof(float));
    CLATTN_CL(P->ctx, clEnqueueWriteBuffer(P->ctx->queue, m, CL_TRUE, off, n, h,
                                           0, NULL, NULL));
  }
done:
  free(h);
  return rc;
}

/* Bytes per bandwidth array (see the file comment). */
static clattn_status choose_buffer(probe *P, const clattn_probe_opts *o) {
  const clattn__devinfo *d = &P->ctx->dev;
  const cl_ulong llc = d->global_cache;
  cl_ulong want;
  if (o->buffer_bytes > 0)
    want = o->buffer_bytes;
  else
    want = 4 * llc > MIN_DEFAULT_BUFFER ? 4 * llc : MIN_DEFAULT_BUFFER;
  cl_ulong cap =
      d->max_alloc < d->global_mem / 4 ? d->max_alloc : d->global_mem / 4;
  if (want > cap)
    want = cap;
  want -= want % MIB;
  if (want < MIB)
    return clattn__fail(
        P->ctx,
        o->buffer_bytes > 0 ? CLATTN_ERR_INVALID_ARG : CLATTN_ERR_UNSUPPORTED,
        "probe buffers of %llu bytes: at least 1 MiB needed "
        "(device max allocation %llu, global memory %llu)",
        (unsigned long long)want, (unsigned long long)d->max_alloc,
        (unsigned long long)d->global_mem);
  P->buf = (size_t)want;
  return CLATTN_OK;
}

/* --------------------------------------------------------- work-groups */

/* Largest power of two <= min(pref, device and kernel limits) dividing
 * items. */
static clattn_status pick_wg(probe *P, cl_kernel k, size_t items, size_t pref,
                             size_t *out) {
  clattn_status rc = CLATTN_OK;
  size_t kwg = 0, lim = pref;
  CLATTN_TRY(clattn__kernel_wg(P->ctx, k, &kwg));
  if (kwg < lim)
    lim = kwg;
  if (P->ctx->dev.max_wg < lim)
    lim = P->ctx->dev.max_wg;
  if (P->ctx->dev.max_item[0] < lim)
    lim = P->ctx->dev.max_item[0];
  size_t wg = (size_t)clattn__pow2_floor(lim);
  while (wg > 1 && items % wg != 0)
    wg /= 2;
  *out = wg;
done:
  return rc;
}

static size_t pref_wg(const probe *P, size_t cpu) {
  return P->is_cpu ? cpu : GPU_WG;
}

/* -------------------------------------------------------------- figures */

static clattn_status kernel_for(clattn_ctx *ctx, int vw, int fp16,
                                clattn__probe_kernel which, cl_kernel *k) {
  char opts[256];
  snprintf(opts, sizeof opts,
           "-cl-mad-enable -D VW=%d -D PROBE_FP16=%d -D FMA_ITERS=%d "
           "-D FMA_CHAINS=%d -D LOCAL_ITERS=%d -D EXP2_ITERS=%d "
           "-D CACHED_ITERS=%d -D BARRIER_ITERS=%d",
           vw, fp16, FMA_ITERS, CLATTN__PROBE_FMA_CHAINS, LOCAL_ITERS,
           CLATTN__PROBE_EXP2_ITERS, CLATTN__PROBE_CACHED_ITERS,
           CLATTN__PROBE_BARRIER_ITERS);
  return clattn__kernel(ctx, "probe.cl", opts, clattn__probe_name(which), k);
}

/* Global bytes one launch of k over `items` moves (the model's count). */
static double moved(clattn__probe_kernel k, int vw, size_t items) {
  clattn_cost c;
  clattn__model_probe(k, vw, (double)items, 0, &c);
  return c.bytes_read + c.bytes_written;
}

/* Read, copy and triad GB/s at vector width vw. */
static clattn_status bandwidth(probe *P, int vw, double *rd, double *cp,
                               double *tr) {
  clattn_status rc = CLATTN_OK;
  cl_kernel kr, kc, kt;
  size_t vecs = P->buf / (sizeof(float) * (size_t)vw);
  float s = 0.25f;
  double t = 0;
  unit u = {U_KERNEL, NULL, 0, 0, 1, 0};
  CLATTN_TRY(kernel_for(P->ctx, vw, 0, CLATTN__PROBE_READ, &kr));
  CLATTN_TRY(kernel_for(P->ctx, vw, 0, CLATTN__PROBE_COPY, &kc));
  CLATTN_TRY(kernel_for(P->ctx, vw, 0, CLATTN__PROBE_TRIAD, &kt));

  u.k = kr;
  u.gws = vecs / NREAD;
  CLATTN_TRY(pick_wg(P, kr, u.gws, pref_wg(P, CPU_BW_WG), &u.lws));
  CLATTN_TRY(clattn__arg(P->ctx, kr, 0, sizeof(cl_mem), &P->a));
  CLATTN_TRY(clattn__arg(P->ctx, kr, 1, sizeof(cl_mem), &P->out));
  CLATTN_TRY(measure(P, &u, &t));
  *rd = moved(CLATTN__PROBE_READ, vw, u.gws) / t * 1e-9;

  u.k = kc;
  u.gws = vecs;
  CLATTN_TRY(pick_wg(P, kc, u.gws, pref_wg(P, CPU_BW_WG), &u.lws));
  CLATTN_TRY(clattn__arg(P->ctx, kc, 0, sizeof(cl_mem), &P->a));
  CLATTN_TRY(clattn__arg(P->ctx, kc, 1, sizeof(cl_mem), &P->b));
  CLATTN_TRY(measure(P, &u, &t));
  *cp = moved(CLATTN__PROBE_COPY, vw, u.gws) / t * 1e-9;

  u.k = kt;
  CLATTN_TRY(pick_wg(P, kt, u.gws, pref_wg(P, CPU_BW_WG), &u.lws));
  CLATTN_TRY(clattn__arg(P->ctx, kt, 0, sizeof(cl_mem), &P->a));
  CLATTN_TRY(clattn__arg(P->ctx, kt, 1, sizeof(cl_mem), &P->b));
  CLATTN_TRY(clattn__arg(P->ctx, kt, 2, sizeof(cl_mem), &P->c));
  CLATTN_TRY(clattn__arg(P->ctx, kt, 3, sizeof s, &s));
  CLATTN_TRY(measure(P, &u, &t));
  *tr = moved(CLATTN__PROBE_TRIAD, vw, u.gws) / t * 1e-9;
done:
  return rc;
}

/* Grid of the FMA and local kernels (u->lws set): from one work-group per
 * compute unit, doubled while a launch stays under target_s / 2, up to
 * groups_per_cu per unit (several per unit on GPUs to hide latency) and
 * the output buffer.  Sets u->gws. */
static clattn_status size_grid(probe *P, unit *u, size_t groups_per_cu) {
  clattn_status rc = CLATTN_OK;
  size_t cu = P->ctx->dev.compute_units ? P->ctx->dev.compute_units : 1;
  size_t cap = P->out_bytes / sizeof(float);
  size_t max = cu * groups_per_cu * u->lws;
  double t = 0;
  if (max > cap)
    max = cap - cap % u->lws;
  u->gws = cu * u->lws < max ? cu * u->lws : max;
  CLATTN_TRY(time_units(P, u, 1, &t)); /* warm-up */
  for (;;) {
    CLATTN_TRY(time_units(P, u, 1, &t));
    if (2 * u->gws > max || 2 * t > 0.5 * P->target_s)
      break;
    u->gws *= 2;
  }
done:
  return rc;
}

/* One timed launch of a chains kernel (probe_fma, probe_exp2) at width
 * vw, in work-groups of one work-item with wg1 (as the register-blocked
 * kernels run: a device that runs a group's items across SIMD lanes then
 * fills one): its arguments the output and the floats fa (and fb for the
 * FMA), its grid sized to target_s; *c what the launch issues, *t its
 * time. */
static clattn_status chains(probe *P, clattn__probe_kernel which, int vw,
                            int fp16, int wg1, float fa, float fb,
                            clattn_cost *c, double *t) {
  clattn_status rc = CLATTN_OK;
  cl_kernel k;
  unit u = {U_KERNEL, NULL, 0, 0, 1, 0};
  CLATTN_TRY(kernel_for(P->ctx, vw, fp16, which, &k));
  u.k = k;
  CLATTN_TRY(
      pick_wg(P, k, (size_t)1 << 30, wg1 ? 1 : pref_wg(P, CPU_FMA_WG), &u.lws));
  CLATTN_TRY(clattn__arg(P->ctx, k, 0, sizeof(cl_mem), &P->out));
  CLATTN_TRY(clattn__arg(P->ctx, k, 1, sizeof fa, &fa));
  if (which == CLATTN__PROBE_FMA)
    CLATTN_TRY(clattn__arg(P->ctx, k, 2, sizeof fb, &fb));
  CLATTN_TRY(size_grid(P, &u, P->is_cpu ? 64 : 32));
  CLATTN_TRY(measure(P, &u, t));
  clattn__model_probe(which, vw, (double)u.gws, 0, c);
done:
  return rc;
}

/* FMA GFLOP/s at width vw (fp16: half vectors; wg1: in groups of one). */
static clattn_status fma_rate(probe *P, int vw, int fp16, int wg1,
                              double *gflops) {
  clattn_cost c;
  double t = 0;
  clattn_status rc =
      chains(P, CLATTN__PROBE_FMA, vw, fp16, wg1, 0.999f, 0.001f, &c, &t);
  *gflops = rc == CLATTN_OK ? c.flops / t * 1e-9 : 0.0;
  return rc;
}

/* Local-memory GB/s at width vw (whole device). */
static clattn_status local_rate(probe *P, int vw, double *gbs) {
  clattn_status rc = CLATTN_OK;
  cl_kernel k;
  cl_ulong used = 0;
  double t = 0;
  size_t vbytes = sizeof(float) * (size_t)vw;
  unit u = {U_KERNEL, NULL, 0, 0, 1, 0};
  CLATTN_TRY(kernel_for(P->ctx, vw, 0, CLATTN__PROBE_LOCAL, &k));
  u.k = k;
  CLATTN_TRY(pick_wg(P, k, (size_t)1 << 30, pref_wg(P, CPU_LOCAL_WG), &u.lws));
  CLATTN_CL(P->ctx, clGetKernelWorkGroupInfo(k, P->ctx->device,
                                             CL_KERNEL_LOCAL_MEM_SIZE,
                                             sizeof used, &used, NULL));
  cl_ulong avail =
      P->ctx->dev.local_mem > used ? P->ctx->dev.local_mem - used : 0;
  while (u.lws > 1 && u.lws * vbytes > avail)
    u.lws /= 2;
  if (u.lws * vbytes > avail)
    return clattn__fail(P->ctx, CLATTN_ERR_UNSUPPORTED,
                        "probe_local: %zu bytes of local memory needed, the "
                        "device offers %llu",
                        vbytes, (unsigned long long)avail);
  CLATTN_TRY(clattn__arg(P->ctx, k, 0, sizeof(cl_mem), &P->out));
  CLATTN_TRY(clattn__arg(P->ctx, k, 1, u.lws * vbytes, NULL));
  CLATTN_TRY(size_grid(P, &u, P->is_cpu ? 16 : 32));
  CLATTN_TRY(measure(P, &u, &t));
  clattn_cost c;
  clattn__model_probe(CLATTN__PROBE_LOCAL, vw, (double)u.gws, 0, &c);
  *gbs = c.local_bytes / t * 1e-9;
done:
  return rc;
}

/* exp2 lanes a second at width vw, through the kernels' polynomial (wg1:
 * in groups of one). */
static clattn_status exp2_rate(probe *P, int vw, int wg1, double *gops) {
  clattn_cost c;
  double t = 0;
  clattn_status rc =
      chains(P, CLATTN__PROBE_EXP2, vw, 0, wg1, -0.5f, 0.0f, &c, &t);
  *gops = rc == CLATTN_OK ? c.exp2_issued / t * 1e-9 : 0.0;
  return rc;
}

/* GB/s of global loads the cache serves at width vw: every work-item
 * re-reads a window of CACHED_WINDOW bytes (less where a quarter of the
 * last-level cache is less), as the kernels re-read a K/V tile set that a
 * CPU core's or a GPU's L2 holds. */
static clattn_status cached_rate(probe *P, int vw, double *gbs) {
  clattn_status rc = CLATTN_OK;
  cl_kernel k;
  const cl_ulong llc = P->ctx->dev.global_cache;
  double t = 0;
  const size_t vbytes = sizeof(float) * (size_t)vw;
  unit u = {U_KERNEL, NULL, 0, 0, 1, 0};
  size_t window = CACHED_WINDOW;
  if (llc > 0 && llc / 4 < window)
    window = (size_t)(llc / 4);
  if (window < 64 * vbytes)
    window = 64 * vbytes;
  const cl_uint mask = (cl_uint)clattn__pow2_floor(window / vbytes) - 1u;
  CLATTN_TRY(kernel_for(P->ctx, vw, 0, CLATTN__PROBE_CACHED, &k));
  u.k = k;
  CLATTN_TRY(pick_wg(P, k, (size_t)1 << 30, pref_wg(P, 1), &u.lws));
  CLATTN_TRY(clattn__arg(P->ctx, k, 0, sizeof(cl_mem), &P->a));
  CLATTN_TRY(clattn__arg(P->ctx, k, 1, sizeof(cl_mem), &P->out));
  CLATTN_TRY(clattn__arg(P->ctx, k, 2, sizeof mask, &mask));
  CLATTN_TRY(size_grid(P, &u, P->is_cpu ? 64 : 32));
  CLATTN_TRY(measure(P, &u, &t));
  clattn_cost c;
  clattn__model_probe(CLATTN__PROBE_CACHED, vw, (double)u.gws, 0, &c);
  *gbs = c.bytes_read / t * 1e-9;
done:
  return rc;
}

/* Nanoseconds of device time a work-group barrier takes, work-groups in
 * flight overlapping as the device runs them. */
static clattn_status barrier_time(probe *P, double *ns) {
  clattn_status rc = CLATTN_OK;
  cl_kernel k;
  double t = 0;
  unit u = {U_KERNEL, NULL, 0, 0, 1, 0};
  CLATTN_TRY(kernel_for(P->ctx, 1, 0, CLATTN__PROBE_BARRIER, &k));
  u.k = k;
  CLATTN_TRY(pick_wg(P, k, (size_t)1 << 30, pref_wg(P, CPU_LOCAL_WG), &u.lws));
  CLATTN_TRY(clattn__arg(P->ctx, k, 0, sizeof(cl_mem), &P->out));
  CLATTN_TRY(clattn__arg(P->ctx, k, 1, u.lws * sizeof(float), NULL));
  CLATTN_TRY(size_grid(P, &u, P->is_cpu ? 16 : 32));
  CLATTN_TRY(measure(P, &u, &t));
  *ns = t /
        clattn__probe_barriers(CLATTN__PROBE_BARRIER, (double)u.gws,
                               (double)u.lws) *
        1e9;
done:
  return rc;
}

/* The share of the shorter of memory and FMA time that the longer does
 * not hide (0: max, 1: sum), from probe_mix at width vw, its FMAs per
 * vector read chosen so that the two take about as long, against the
 * read and FMA rates measured at that width. */
static clattn_status overlap(probe *P, int vw, double read_gbs,
                             double fma_gflops, double *unhidden) {
  clattn_status rc = CLATTN_OK;
  cl_kernel k;
  float fa = 0.999f;
  double t = 0;
  unit u = {U_KERNEL, NULL, 0, 0, 1, 0};
  *unhidden = 0;
  if (!(read_gbs > 0) || !(fma_gflops > 0))
    return CLATTN_OK;
  const double balance = 2.0 * fma_gflops / read_gbs;
  const cl_int reps = balance < 1 ? 1 : balance > 4096 ? 4096 : (cl_int)balance;
  CLATTN_TRY(kernel_for(P->ctx, vw, 0, CLATTN__PROBE_MIX, &k));
  u.k = k;
  u.gws = P->buf / (sizeof(float) * (size_t)vw) / NREAD;
  CLATTN_TRY(pick_wg(P, k, u.gws, pref_wg(P, CPU_BW_WG), &u.lws));
  CLATTN_TRY(clattn__arg(P->ctx, k, 0, sizeof(cl_mem), &P->a));
  CLATTN_TRY(clattn__arg(P->ctx, k, 1, sizeof(cl_mem), &P->out));
  CLATTN_TRY(clattn__arg(P->ctx, k, 2, sizeof fa, &fa));
  CLATTN_TRY(clattn__arg(P->ctx, k, 3, sizeof reps, &reps));
  CLATTN_TRY(measure(P, &u, &t));
  clattn_cost c;
  clattn__model_probe(CLATTN__PROBE_MIX, vw, (double)u.gws, reps, &c);
  const double t_mem = c.bytes_read / (read_gbs * 1e9);
  const double t_fma = c.flops / (fma_gflops * 1e9);
  const double lo = fmin(t_mem, t_fma), hi = fmax(t_mem, t_fma);
  const double share = (t - hi) / lo;
  *unhidden = share < 0 ? 0 : share > 1 ? 1 : share;
done:
  return rc;
}

static clattn_status transfers(probe *P, double *h2d, double *d2h) {
  clattn_status rc = CLATTN_OK;
  double t = 0;
  unit u = {U_WRITE, NULL, 0, 0, 1, 0};
  uint64_t seed = 0x5eed;
  P->host_bytes = P->buf < XFER_BYTES ? P->buf : XFER_BYTES;
  P->host = malloc(P->host_bytes);
  if (P->host == NULL)
    return clattn__fail(P->ctx, CLATTN_ERR_NOMEM, "out of host memory");
  random_fill(&seed, P->host, P->host_bytes / sizeof(float));
  CLATTN_TRY(measure(P, &u, &t));
  *h2d = (double)P->host_bytes / t * 1e-9;
  u.kind = U_READ;
  CLATTN_TRY(measure(P, &u, &t));
  *d2h = (double)P->host_bytes / t * 1e-9;
done:
  return rc;
}

static clattn_status launch_latency(probe *P, double *each_us,
                                    double *pipelined_us) {
  clattn_status rc = CLATTN_OK;
  cl_kernel k;
  double t = 0;
  unit u = {U_KERNEL, NULL, 1, 1, 1, 1};
  CLATTN_TRY(kernel_for(P->ctx, 1, 0, CLATTN__PROBE_EMPTY, &k));
  CLATTN_TRY(clattn__arg(P->ctx, k, 0, sizeof(cl_mem), &P->out));
  u.k = k;
  CLATTN_TRY(measure(P, &u, &t));
  *each_us = t * 1e6;
  u.count = PIPELINE_LAUNCHES;
  u.finish_each = 0;
  CLATTN_TRY(measure(P, &u, &t));
  *pipelined_us = t / PIPELINE_LAUNCHES * 1e6;
done:
  return rc;
}

/* Per launch in a stream of launches of probe_args, its six buffers set
 * anew for each, as the library's calls set theirs, over work-groups for
 * every compute unit (a launch that wakes them all, as the kernels' grids
 * do). */
static clattn_status launch_call(probe *P, double *us) {
  clattn_status rc = CLATTN_OK;
  double t = 0;
  const size_t cu = P->ctx->dev.compute_units ? P->ctx->dev.compute_units : 1;
  unit u = {U_ARGS, NULL, 4 * cu, 1, PIPELINE_LAUNCHES, 0};
  CLATTN_TRY(kernel_for(P->ctx, 1, 0, CLATTN__PROBE_ARGS_KERNEL, &u.k));
  CLATTN_TRY(measure(P, &u, &t));
  *us = t / PIPELINE_LAUNCHES * 1e6;
done:
  return rc;
}

static double best_of(const double *v) {
  double b = 0;
  for (int i = 0; i < CLATTN_PROBE_WIDTHS; i++)
    if (v[i] > b)
      b = v[i];
  return b;
}

/* ------------------------------------------------------------ the probe */

/* What a probe writes: the profile and the figures behind it. */
typedef struct probe_out {
  clattn_profile profile;
  clattn_probe_result detail;
} probe_out;

static clattn_status
probe_unlocked(clattn_ctx *ctx, const clattn_probe_opts *opts, probe_out *out) {
  static const clattn_probe_opts defaults;
  clattn_status rc = clattn__ctx_check(ctx);
  probe P;
  double t_start = clattn__now();
  if (rc != CLATTN_OK)
    return rc;
  if (out == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "out is NULL");
  memset(out, 0, sizeof *out);
  const clattn_probe_opts *o = opts ? opts : &defaults;
  if (!(o->target_s >= 0) || o->target_s > 60 || o->repeats < 0 ||
      o->repeats > 1000)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "probe options: target_s %g (0..60), repeats %d "
                        "(0..1000)",
                        o->target_s, o->repeats);
  memset(&P, 0, sizeof P);
  P.ctx = ctx;
  P.is_cpu = (ctx->dev.type & CL_DEVICE_TYPE_CPU) != 0;
  P.target_s = o->target_s > 0 ? o->target_s : o->thorough ? 0.2 : 0.05;
  P.repeats = o->repeats > 0 ? o->repeats : o->thorough ? 11 : 5;
  P.calib_rounds = o->thorough ? 2 : 1;
  CLATTN_TRY(clattn__profile_reported(ctx, &out->profile));
  CLATTN_TRY(choose_buffer(&P, o));
  out->detail.buffer_bytes = P.buf;

  /* read kernel: one float per NREAD scalars; FMA and local kernels: one
   * float per work-item (grid_items keeps within this) */
  P.out_bytes = P.buf / NREAD > 16 * MIB ? P.buf / NREAD : 16 * MIB;
  if (P.out_bytes > P.buf)
    P.out_bytes = P.buf;
  CLATTN_TRY(new_buffer(&P, P.buf, &P.a));
  CLATTN_TRY(new_buffer(&P, P.buf, &P.b));
  CLATTN_TRY(new_buffer(&P, P.buf, &P.c));
  CLATTN_TRY(new_buffer(&P, P.out_bytes, &P.out));
  CLATTN_TRY(fill_random(&P, P.a, P.buf, 1));
  CLATTN_TRY(fill_random(&P, P.b, P.buf, 2));
  CLATTN_TRY(fill_random(&P, P.c, P.buf, 3));

  clattn_profile *pr = &out->profile;
  double local[CLATTN_PROBE_WIDTHS] = {0}, half[CLATTN_PROBE_WIDTHS] = {0};
  for (int i = 0; i < CLATTN_PROBE_WIDTHS; i++) {
    int vw = probe_widths[i];
    CLATTN_TRY(bandwidth(&P, vw, &out->detail.read_gbs[i],
                         &out->detail.copy_gbs[i], &out->detail.triad_gbs[i]));
    CLATTN_TRY(fma_rate(&P, vw, 0, 0, &out->detail.fma_gflops[i]));
    CLATTN_TRY(fma_rate(&P, vw, 0, 1, &out->detail.fma_wg1_gflops[i]));
    if (ctx->dev.has_fp16)
      CLATTN_TRY(fma_rate(&P, vw, 1, 0, &half[i]));
    CLATTN_TRY(local_rate(&P, vw, &local[i]));
    if (clattn__probe_has_width(CLATTN__PROBE_EXP2, vw)) {
      CLATTN_TRY(exp2_rate(&P, vw, 0, &out->detail.exp2_gops[i]));
      CLATTN_TRY(exp2_rate(&P, vw, 1, &out->detail.exp2_wg1_gops[i]));
    }
    CLATTN_TRY(cached_rate(&P, vw, &out->detail.cache_gbs[i]));
  }
  CLATTN_TRY(transfers(&P, &pr->h2d_gbs, &pr->d2h_gbs));
  CLATTN_TRY(launch_latency(&P, &pr->launch_us, &pr->launch_pipelined_us));
  CLATTN_TRY(launch_call(&P, &pr->launch_call_us));
  CLATTN_TRY(barrier_time(&P, &pr->barrier_ns));
  {
    /* at the width of the best FMA rate, the width the model's peak is */
    int w = 0;
    for (int i = 1; i < CLATTN_PROBE_WIDTHS; i++)
      if (out->detail.fma_gflops[i] > out->detail.fma_gflops[w])
        w = i;
    CLATTN_TRY(overlap(&P, probe_widths[w], out->detail.read_gbs[w],
                       out->detail.fma_gflops[w], &pr->unhidden));
  }

  out->detail.fp16_gflops = best_of(half);
  pr->source = CLATTN_PROFILE_MEASURED;
  pr->probe_method = CLATTN_PROBE_METHOD;
  pr->bw_read_gbs = best_of(out->detail.read_gbs);
  pr->bw_copy_gbs = best_of(out->detail.copy_gbs);
  pr->bw_triad_gbs = best_of(out->detail.triad_gbs);
  pr->fp32_gflops = best_of(out->detail.fma_gflops);
  pr->fp16_gflops = out->detail.fp16_gflops;
  pr->local_gbs = best_of(local);
  pr->exp2_gops = best_of(out->detail.exp2_gops);
  pr->cache_gbs = best_of(out->detail.cache_gbs);
  pr->fp32_wg1_gflops = best_of(out->detail.fma_wg1_gflops);
  pr->exp2_wg1_gops = best_of(out->detail.exp2_wg1_gops);
  {
    char date[32] = "unknown-date";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm) != NULL)
      strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(pr->note, sizeof pr->note,
             "%s clattn %s probe: target_s %g, repeats %d, buffer %zu MiB "
             "per array, thorough %d",
             date, clattn_version(), P.target_s, P.repeats, P.buf / MIB,
             o->thorough ? 1 : 0);
  }
  out->detail.seconds = clattn__now() - t_start;
done:
  if (P.a)
    clReleaseMemObject(P.a);
  if (P.b)
    clReleaseMemObject(P.b);
  if (P.c)
    clReleaseMemObject(P.c);
  if (P.out)
    clReleaseMemObject(P.out);
  free(P.host);
  if (rc != CLATTN_OK)
    memset(out, 0, sizeof *out);
  return rc;
}

/* ------------------------------------------------- bandwidth reference */

#define REF_VW 16

/* The kernel is looked up at every run (the context's program cache owns
 * it, and clattn_ctx_clear_programs may drop it). */
struct clattn_copy_ref {
  clattn_ctx *ctx;
  cl_mem a, b;
  size_t gws, lws;
};

void clattn_profile_at_copy(clattn_profile *p, double copy_gbs) {
  clattn_profile own;
  char why[128];
  if (p == NULL || clattn__struct_in(&own, sizeof own, p, "clattn_profile", why,
                                     sizeof why) != CLATTN_OK)
    return;
  clattn__profile_at_copy(&own, copy_gbs);
  clattn__struct_out(p, &own, sizeof own, "clattn_profile", why, sizeof why);
}

void clattn__profile_at_copy(clattn_profile *p, double copy_gbs) {
  if (p == NULL || !(p->bw_copy_gbs > 0) || !(copy_gbs > 0))
    return;
  const double f = copy_gbs / p->bw_copy_gbs;
  p->bw_read_gbs *= f;
  p->bw_triad_gbs *= f;
  p->bw_copy_gbs = copy_gbs;
}

void clattn_copy_ref_destroy(clattn_copy_ref *ref) {
  if (ref == NULL)
    return;
  if (ref->a)
    clReleaseMemObject(ref->a);
  if (ref->b)
    clReleaseMemObject(ref->b);
  free(ref);
}

static clattn_status copy_ref_create_unlocked(clattn_ctx *ctx, size_t bytes,
                                              clattn_copy_ref **out) {
  clattn_status rc = clattn__ctx_check(ctx);
  clattn_copy_ref *r = NULL;
  cl_kernel k;
  probe P;
  if (rc != CLATTN_OK)
    return rc;
  if (out == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "out is NULL");
  *out = NULL;
  if (bytes < MIB || bytes % (sizeof(float) * REF_VW) != 0)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "copy reference: %zu bytes a buffer (a multiple of "
                        "64, at least 1 MiB)",
                        bytes);
  if ((r = calloc(1, sizeof *r)) == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  memset(&P, 0, sizeof P);
  P.ctx = r->ctx = ctx;
  P.is_cpu = (ctx->dev.type & CL_DEVICE_TYPE_CPU) != 0;
  CLATTN_TRY(new_buffer(&P, bytes, &r->a));
  CLATTN_TRY(new_buffer(&P, bytes, &r->b));
  CLATTN_TRY(fill_random(&P, r->a, bytes, 4));
  CLATTN_TRY(kernel_for(ctx, REF_VW, 0, CLATTN__PROBE_COPY, &k));
  r->gws = bytes / (sizeof(float) * REF_VW);
  CLATTN_TRY(pick_wg(&P, k, r->gws, pref_wg(&P, CPU_BW_WG), &r->lws));
  *out = r;
  r = NULL;
done:
  clattn_copy_ref_destroy(r);
  return rc;
}

static clattn_status copy_ref_run_unlocked(clattn_copy_ref *ref, double *gbs) {
  if (ref == NULL)
    return CLATTN_ERR_INVALID_ARG;
  clattn_ctx *ctx = ref->ctx;
  clattn_status rc = clattn__ctx_check(ctx);
  cl_kernel k;
  if (rc != CLATTN_OK)
    return rc;
  if (gbs == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "gbs is NULL");
  *gbs = 0;
  CLATTN_TRY(kernel_for(ctx, REF_VW, 0, CLATTN__PROBE_COPY, &k));
  CLATTN_TRY(clattn__arg(ctx, k, 0, sizeof(cl_mem), &ref->a));
  CLATTN_TRY(clattn__arg(ctx, k, 1, sizeof(cl_mem), &ref->b));
  CLATTN_CL(ctx, clFinish(ctx->queue));
  const double t0 = clattn__now();
  CLATTN_TRY(clattn__launch(ctx, k, 1, &ref->gws, &ref->lws, 0, NULL, NULL));
  CLATTN_CL(ctx, clFinish(ctx->queue));
  const double t = clattn__now() - t0;
  *gbs =
      moved(CLATTN__PROBE_COPY, REF_VW, ref->gws) / (t > 0 ? t : 1e-9) * 1e-9;
done:
  return rc;
}

clattn_status clattn__probe_launch(clattn_ctx *ctx, clattn__probe_kernel k,
                                   int vw, size_t items, size_t lws) {
  clattn_status rc = clattn__ctx_check(ctx);
  cl_mem m[3] = {NULL, NULL, NULL}, out = NULL;
  void *zeros = NULL;
  cl_int err;
  cl_kernel kern;
  if (rc != CLATTN_OK)
    return rc;
  if (k < 0 || k >= CLATTN__PROBE_KERNELS || items == 0 || lws == 0 ||
      items % lws != 0 ||
      (vw != 1 && vw != 2 && vw != 4 && vw != 8 && vw != 16) ||
      !clattn__probe_has_width(k, vw))
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "probe launch: bad kernel, width or sizes");
  CLATTN_TRY(kernel_for(ctx, vw, 0, k, &kern));
  const size_t vb = sizeof(float) * (size_t)vw;
  const size_t n = k == CLATTN__PROBE_READ || k == CLATTN__PROBE_MIX
                       ? items * NREAD * vb
                       : items * vb;
  zeros = calloc(1, n);
  if (zeros == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  for (int i = 0; i < 3; i++) {
    m[i] = clCreateBuffer(
        ctx->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n, zeros, &err);
    CLATTN_CL_RET(ctx, err, "clCreateBuffer");
  }
  out = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                       items * sizeof(float), zeros, &err);
  CLATTN_CL_RET(ctx, err, "clCreateBuffer");
  const float s = 0.25f, fa = 0.999f, fb = 0.001f;
  switch (k) {
  case CLATTN__PROBE_READ:
    CLATTN_TRY(clattn__arg(ctx, kern, 0, sizeof(cl_mem), &m[0]));
    CLATTN_TRY(clattn__arg(ctx, kern, 1, sizeof(cl_mem), &out));
    break;
  case CLATTN__PROBE_COPY:
    CLATTN_TRY(clattn__args(ctx, kern, &(cl_uint){0}, 2, sizeof(cl_mem), m));
    break;
  case CLATTN__PROBE_TRIAD:
    CLATTN_TRY(clattn__args(ctx, kern, &(cl_uint){0}, 3, sizeof(cl_mem), m));
    CLATTN_TRY(clattn__arg(ctx, kern, 3, sizeof s, &s));
    break;
  case CLATTN__PROBE_FMA:
    CLATTN_TRY(clattn__arg(ctx, kern, 0, sizeof(cl_mem), &out));
    CLATTN_TRY(clattn__arg(ctx, kern, 1, sizeof fa, &fa));
    CLATTN_TRY(clattn__arg(ctx, kern, 2, sizeof fb, &fb));
    break;
  case CLATTN__PROBE_LOCAL:
  case CLATTN__PROBE_BARRIER:
    if (lws & (lws - 1)) {
      rc = clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "%s needs a power-of-two work-group",
                        clattn__probe_name(k));
      goto done;
    }
    CLATTN_TRY(clattn__arg(ctx, kern, 0, sizeof(cl_mem), &out));
    CLATTN_TRY(clattn__arg(
        ctx, kern, 1, lws * (k == CLATTN__PROBE_LOCAL ? vb : sizeof(float)),
        NULL));
    break;
  case CLATTN__PROBE_EXP2:
    CLATTN_TRY(clattn__arg(ctx, kern, 0, sizeof(cl_mem), &out));
    CLATTN_TRY(clattn__arg(ctx, kern, 1, sizeof fa, &(float){-0.5f}));
    break;
  case CLATTN__PROBE_CACHED: {
    const cl_uint mask = (cl_uint)clattn__pow2_floor(items) - 1u;
    CLATTN_TRY(clattn__arg(ctx, kern, 0, sizeof(cl_mem), &m[0]));
    CLATTN_TRY(clattn__arg(ctx, kern, 1, sizeof(cl_mem), &out));
    CLATTN_TRY(clattn__arg(ctx, kern, 2, sizeof mask, &mask));
    break;
  }
  case CLATTN__PROBE_MIX: {
    const cl_int reps = CLATTN__PROBE_LAUNCH_REPS;
    CLATTN_TRY(clattn__arg(ctx, kern, 0, sizeof(cl_mem), &m[0]));
    CLATTN_TRY(clattn__arg(ctx, kern, 1, sizeof(cl_mem), &out));
    CLATTN_TRY(clattn__arg(ctx, kern, 2, sizeof fa, &fa));
    CLATTN_TRY(clattn__arg(ctx, kern, 3, sizeof reps, &reps));
    break;
  }
  case CLATTN__PROBE_ARGS_KERNEL: {
    const cl_mem set[CLATTN__PROBE_ARGS] = {out, m[0], m[1], m[2], m[0], m[1]};
    CLATTN_TRY(clattn__args(ctx, kern, &(cl_uint){0}, CLATTN__PROBE_ARGS,
                            sizeof(cl_mem), set));
    break;
  }
  default:
    CLATTN_TRY(clattn__arg(ctx, kern, 0, sizeof(cl_mem), &out));
    break;
  }
  CLATTN_TRY(clattn__launch(ctx, kern, 1, &items, &lws, 0, NULL, NULL));
  CLATTN_CL(ctx, clFinish(ctx->queue));
done:
  for (int i = 0; i < 3; i++)
    if (m[i])
      clReleaseMemObject(m[i]);
  if (out)
    clReleaseMemObject(out);
  free(zeros);
  return rc;
}

clattn_status clattn_probe(clattn_ctx *ctx, const clattn_probe_opts *opts,
                           clattn_profile *profile,
                           clattn_probe_result *detail) {
  clattn_probe_opts own_opts;
  probe_out out;
  char why[256];
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  if (profile == NULL)
    return clattn__fail_outside(ctx, CLATTN_ERR_INVALID_ARG, "profile is NULL");
  if (clattn__struct_size(profile) < sizeof(size_t) ||
      (detail && clattn__struct_size(detail) < sizeof(size_t)))
    return clattn__fail_outside(ctx, CLATTN_ERR_INVALID_ARG,
                                "clattn_profile.size or "
                                "clattn_probe_result.size is 0: set it to "
                                "the struct's sizeof");
  if ((rc = clattn__struct_in_ptr((const void **)&opts, &own_opts,
                                  sizeof own_opts, "clattn_probe_opts", why,
                                  sizeof why)))
    return clattn__fail_outside(ctx, rc, why);
  memset(&out, 0, sizeof out);
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  rc = probe_unlocked(ctx, opts, &out);
  clattn__ctx_leave(locked);
  clattn__struct_out(profile, &out.profile, sizeof out.profile,
                     "clattn_profile", why, sizeof why);
  if (detail)
    clattn__struct_out(detail, &out.detail, sizeof out.detail,
                       "clattn_probe_result", why, sizeof why);
  return rc;
}

clattn_status clattn_copy_ref_create(clattn_ctx *ctx, size_t bytes,
                                     clattn_copy_ref **out) {
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  clattn_status rc = copy_ref_create_unlocked(ctx, bytes, out);
  clattn__ctx_leave(locked);
  return rc;
}

clattn_status clattn_copy_ref_run(clattn_copy_ref *ref, double *gbs) {
  clattn_ctx *locked = clattn__ctx_enter(ref ? ref->ctx : NULL);
  clattn_status rc = copy_ref_run_unlocked(ref, gbs);
  clattn__ctx_leave(locked);
  return rc;
}
