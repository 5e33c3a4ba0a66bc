/* util.h - shared helpers of the clattn Criterion tests.
 *
 * Accuracy metric (tu_check): for one output tensor,
 *     rel = max_i |got_i - ref_i| / max(max_i |ref_i|, 1e-30)
 * i.e. the worst absolute error normalised by the tensor's largest
 * reference magnitude (attention outputs are convex combinations of V rows,
 * so their scale is the scale of V; per-element relative error would blow
 * up on outputs that cancel to ~0), over the elements where the reference
 * is finite.  Where it is not (clattn.h: NaN propagates), `got` must be
 * non-finite too; any NaN/inf in `got` where it is finite fails.
 *
 * Tolerances: clattn__tolerance (host/src/base/tolerance.h, with the
 * reasons), the same bar as `clattn run --check`.
 * Fully masked rows are checked separately for exact zeros.
 */
#ifndef CLATTN_TESTS_UTIL_H
#define CLATTN_TESTS_UTIL_H

#include "base/tolerance.h"
#include "clattn_tools.h"
#include "reference/ref.h"

#include <stddef.h>
#include <stdint.h>

/* A context on the default device ($CLATTN_DEVICE, else the first); fails
 * the test (with clattn_ctx_errmsg) when creation fails. */
clattn_ctx *tu_ctx(void);

/* Params text (clattn_choice.params, .resolved) read back as a struct;
 * a text that does not parse fails the test. */
clattn_params tu_params(const char *text);

/* Deterministic xorshift64* generator. */
typedef struct tu_rng {
  uint64_t s;
} tu_rng;
tu_rng tu_rng_seed(uint64_t seed);
uint64_t tu_next(tu_rng *r);
/* Uniform in [-1, 1). */
float tu_uniform(tu_rng *r);
/* Uniform integer in [0, n). */
int tu_randint(tu_rng *r, int n);
/* x[0..n) uniform in [-1,1) times amp. */
void tu_fill(tu_rng *r, float *x, size_t n, float amp);

/* Round x in place to what storage type dt can hold (identity for f32). */
void tu_round(float *x, size_t n, clattn_dtype dt);
/* The five inputs of a talking-heads call, each in [-1, 1) from *r in the
 * order q, k, v, p_l, p_w; q, k and v rounded to dt as the device reads
 * them (the mixing matrices are float32). */
void tu_fill_th(tu_rng *r, clattn_dtype dt, float *q, size_t nq, float *k,
                size_t nk, float *v, size_t nv, float *pl, size_t npl,
                float *pw, size_t npw);

/* Rows [r0, r0+nr) of every sequence of y [b, n, D] into out [b, nr, D],
 * and back (a layer test feeds a sequence's positions in chunks). */
void tu_rows_get(const float *y, int b, int n, int D, int r0, int nr,
                 float *out);
void tu_rows_put(float *y, int b, int n, int D, int r0, int nr,
                 const float *in);

/* Rows [r0, r0+nr) of every sequence of x [b, n, D] through one
 * clattn_layer_prefill (c may be NULL), into the same rows of y; and
 * positions r0 .. n-1 one clattn_layer_decode step each, the cache's
 * length checked after every step.  A failed call fails the test. */
void tu_layer_prefill_rows(clattn_ctx *ctx, clattn_layer *l, clattn_kv_cache *c,
                           int b, int n, int D, const float *x, int r0, int nr,
                           int causal, float *y);
void tu_layer_decode_rows(clattn_ctx *ctx, clattn_layer *l, clattn_kv_cache *c,
                          int b, int n, int D, const float *x, int r0,
                          float *y);

/* The cache's equivalences of layer l on x [b, n, D], in a cache of
 * `capacity` positions: a causal prefill of n/3 + 1 positions then one
 * decode step per remaining position, and a causal prefill in two chunks
 * (after a reset), each equal to ylib (the layer's causal prefill without a
 * cache); the first also to yref (the reference's).  `what` names the
 * shape in the messages. */
void tu_layer_cache_checks(clattn_ctx *ctx, clattn_layer *l, int b, int n,
                           int D, int capacity, const float *x,
                           const float *ylib, const float *yref,
                           const char *what);

/* Host allocation that fails the test when out of memory (n may be 0). */
void *tu_alloc(size_t bytes);

/* Device buffer of `bytes` (at least 1), contents unspecified. */
cl_mem tu_buffer(clattn_ctx *ctx, size_t bytes);
/* Device buffer holding x converted to dt (n elements). */
cl_mem tu_upload(clattn_ctx *ctx, const float *x, size_t n, clattn_dtype dt);
/* Write x converted to dt into an existing buffer at element offset 0. */
void tu_write(clattn_ctx *ctx, cl_mem m, const float *x, size_t n,
              clattn_dtype dt);
/* Device buffer of n int32. */
cl_mem tu_upload_int(clattn_ctx *ctx, const int *x, size_t n);
/* Device buffer of n elements of dt, every byte set to `byte`
 * (0xff: NaN in f32, f16 and bf16 - a sentinel for unwritten outputs). */
cl_mem tu_sentinel(clattn_ctx *ctx, size_t n, clattn_dtype dt, uint8_t byte);
/* Set the first `bytes` of m to `byte` (0xff: poison an output that is
 * used again, before the next call). */
void tu_set_bytes(clattn_ctx *ctx, cl_mem m, size_t bytes, uint8_t byte);
/* Read n elements of dt and convert to float (blocking, after clFinish). */
void tu_download(clattn_ctx *ctx, cl_mem m, float *out, size_t n,
                 clattn_dtype dt);
/* Raw bytes (blocking, after clFinish). */
void tu_read_bytes(clattn_ctx *ctx, cl_mem m, void *out, size_t bytes);
void tu_release(cl_mem m);

/* Storage-type name. */
const char *tu_dtype_name(clattn_dtype dt);

typedef struct tu_err {
  double max_abs;   /* max |got - ref| */
  double max_ref;   /* max |ref| */
  double rel;       /* max_abs / max(max_ref, 1e-30) */
  size_t worst;     /* index of max_abs */
  size_t nonfinite; /* count of NaN/inf in got where ref is finite */
  size_t missing;   /* count of finite got where ref is NaN/inf */
} tu_err;
tu_err tu_compare(const float *got, const float *ref, size_t n);

/* Expect got == ref within tol (metric above); `what` names the case in the
 * failure message.  Returns 1 when it passed. */
int tu_check(const char *what, const float *got, const float *ref, size_t n,
             double tol);

/* Nonzero when a call with explicit params may legitimately be refused:
 * st is CLATTN_ERR_UNSUPPORTED, p sets a work-group size (wg > 0) and
 * $CLATTN_TEST_ALLOW_UNSUPPORTED_WG is set (tests/rusticl.sh and
 * tests/oclgrind.sh: devices whose compiled kernels allow fewer work-items
 * than the sweep's explicit choices).  Logs a warning with the message.
 * Automatic parameters are never excused. */
int tu_unsupported_ok(clattn_ctx *ctx, clattn_status st,
                      const clattn_params *p);

/* A Criterion-owned copy (cr_malloc) of n parameter records of `size`
 * bytes, for ParameterizedTestParameters; frees src (malloc'ed). */
void *tu_param_copy(void *src, size_t n, size_t size);

/* Nonzero when environment variable CLATTN_TEST_SUBSET equals `name`. */
int tu_subset(const char *name);
/* The most reference cases a sweep runs: $CLATTN_TEST_CASES (a tier where
 * each case's programs compile slowly, rusticl), else no limit. */
int tu_case_limit(void);

/* Whether the default device reports subgroups (cl_khr_subgroups or
 * cl_intel_subgroups, clattn_profile_reported): where variant 3 runs. */
int tu_has_subgroups(void);
/* Whether variant 3 may run on the default device with subgroups of sg
 * lanes: sg 0, its own size, wherever it has subgroups; else a size it
 * lists in CL_DEVICE_SUB_GROUP_SIZES_INTEL with
 * cl_intel_required_subgroup_size, asked of the device itself. */
int tu_sg_offered(int sg);

/* 1 if all `bytes` bytes of m still equal `byte` (a sentinel fill). */
int tu_untouched(clattn_ctx *ctx, cl_mem m, size_t bytes, uint8_t byte);

#endif
