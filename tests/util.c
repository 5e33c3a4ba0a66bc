/* util.c - shared helpers of the clattn Criterion tests (see util.h). */
#include "util.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

clattn_ctx *tu_ctx(void) {
  clattn_ctx *ctx = NULL;
  clattn_status st = clattn_ctx_create(NULL, &ctx);
  cr_assert(st == CLATTN_OK && ctx != NULL,
            "clattn_ctx_create failed: %d (%s): %s", (int)st,
            clattn_status_str(st), clattn_ctx_errmsg(ctx));
  return ctx;
}

tu_rng tu_rng_seed(uint64_t seed) {
  tu_rng r;
  /* splitmix64 of the seed, so nearby seeds give unrelated streams */
  uint64_t z = seed + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  r.s = z ? z : 0x2545f4914f6cdd1dull;
  return r;
}

uint64_t tu_next(tu_rng *r) {
  uint64_t x = r->s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  r->s = x;
  return x * 0x2545f4914f6cdd1dull;
}

float tu_uniform(tu_rng *r) {
  /* 24 random bits -> [-1, 1) exactly representable in float */
  uint32_t b = (uint32_t)(tu_next(r) >> 40);
  return (float)((double)b / 8388608.0 - 1.0);
}

int tu_randint(tu_rng *r, int n) {
  return n <= 0 ? 0 : (int)(tu_next(r) % (uint64_t)n);
}

void tu_fill(tu_rng *r, float *x, size_t n, float amp) {
  for (size_t i = 0; i < n; i++)
    x[i] = amp * tu_uniform(r);
}

void tu_round(float *x, size_t n, clattn_dtype dt) {
  if (dt == CLATTN_F16)
    for (size_t i = 0; i < n; i++)
      x[i] = ref_f16_to_f32(ref_f32_to_f16(x[i]));
  else if (dt == CLATTN_BF16)
    for (size_t i = 0; i < n; i++)
      x[i] = ref_bf16_to_f32(ref_f32_to_bf16(x[i]));
}

void tu_fill_th(tu_rng *r, clattn_dtype dt, float *q, size_t nq, float *k,
                size_t nk, float *v, size_t nv, float *pl, size_t npl,
                float *pw, size_t npw) {
  tu_fill(r, q, nq, 1.0f);
  tu_fill(r, k, nk, 1.0f);
  tu_fill(r, v, nv, 1.0f);
  tu_fill(r, pl, npl, 1.0f);
  tu_fill(r, pw, npw, 1.0f);
  tu_round(q, nq, dt);
  tu_round(k, nk, dt);
  tu_round(v, nv, dt);
}

void *tu_alloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  cr_assert(p != NULL, "out of host memory (%zu bytes)", bytes);
  return p;
}

static size_t esize(clattn_dtype dt) { return dt == CLATTN_F32 ? 4 : 2; }

cl_mem tu_buffer(clattn_ctx *ctx, size_t bytes) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(clattn_ctx_cl_context(ctx), CL_MEM_READ_WRITE,
                            bytes ? bytes : 1, NULL, &err);
  cr_assert(err == CL_SUCCESS && m != NULL, "clCreateBuffer(%zu) failed: %d",
            bytes, (int)err);
  return m;
}

/* x converted to dt in a fresh host array of n * esize(dt) bytes. */
static void *pack(const float *x, size_t n, clattn_dtype dt) {
  void *p = tu_alloc(n * esize(dt));
  if (dt == CLATTN_F32) {
    if (n)
      memcpy(p, x, n * 4);
  } else {
    uint16_t *h = p;
    for (size_t i = 0; i < n; i++)
      h[i] = dt == CLATTN_F16 ? ref_f32_to_f16(x[i]) : ref_f32_to_bf16(x[i]);
  }
  return p;
}

void tu_write(clattn_ctx *ctx, cl_mem m, const float *x, size_t n,
              clattn_dtype dt) {
  if (n == 0)
    return;
  void *p = pack(x, n, dt);
  cl_int err = clEnqueueWriteBuffer(clattn_ctx_queue(ctx), m, CL_TRUE, 0,
                                    n * esize(dt), p, 0, NULL, NULL);
  free(p);
  cr_assert(err == CL_SUCCESS, "clEnqueueWriteBuffer failed: %d", (int)err);
}

cl_mem tu_upload(clattn_ctx *ctx, const float *x, size_t n, clattn_dtype dt) {
  cl_mem m = tu_buffer(ctx, n * esize(dt));
  tu_write(ctx, m, x, n, dt);
  return m;
}

cl_mem tu_upload_int(clattn_ctx *ctx, const int *x, size_t n) {
  cl_mem m = tu_buffer(ctx, n * sizeof(int32_t));
  if (n) {
    cl_int err = clEnqueueWriteBuffer(clattn_ctx_queue(ctx), m, CL_TRUE, 0,
                                      n * sizeof(int32_t), x, 0, NULL, NULL);
    cr_assert(err == CL_SUCCESS, "clEnqueueWriteBuffer failed: %d", (int)err);
  }
  return m;
}

void tu_set_bytes(clattn_ctx *ctx, cl_mem m, size_t bytes, uint8_t byte) {
  if (bytes == 0)
    return;
  void *p = tu_alloc(bytes);
  memset(p, byte, bytes);
  cl_int err = clEnqueueWriteBuffer(clattn_ctx_queue(ctx), m, CL_TRUE, 0, bytes,
                                    p, 0, NULL, NULL);
  free(p);
  cr_assert(err == CL_SUCCESS, "clEnqueueWriteBuffer failed: %d", (int)err);
}

cl_mem tu_sentinel(clattn_ctx *ctx, size_t n, clattn_dtype dt, uint8_t byte) {
  size_t bytes = n * esize(dt);
  cl_mem m = tu_buffer(ctx, bytes);
  tu_set_bytes(ctx, m, bytes, byte);
  return m;
}

void tu_read_bytes(clattn_ctx *ctx, cl_mem m, void *out, size_t bytes) {
  cl_int err = clFinish(clattn_ctx_queue(ctx));
  cr_assert(err == CL_SUCCESS, "clFinish failed: %d", (int)err);
  if (bytes == 0)
    return;
  err = clEnqueueReadBuffer(clattn_ctx_queue(ctx), m, CL_TRUE, 0, bytes, out, 0,
                            NULL, NULL);
  cr_assert(err == CL_SUCCESS, "clEnqueueReadBuffer failed: %d", (int)err);
}

void tu_download(clattn_ctx *ctx, cl_mem m, float *out, size_t n,
                 clattn_dtype dt) {
  if (dt == CLATTN_F32) {
    tu_read_bytes(ctx, m, out, n * 4);
    return;
  }
  uint16_t *h = tu_alloc(n * 2);
  tu_read_bytes(ctx, m, h, n * 2);
  for (size_t i = 0; i < n; i++)
    out[i] = dt == CLATTN_F16 ? ref_f16_to_f32(h[i]) : ref_bf16_to_f32(h[i]);
  free(h);
}

void tu_release(cl_mem m) {
  if (m)
    clReleaseMemObject(m);
}

const char *tu_dtype_name(clattn_dtype dt) {
  switch (dt) {
  case CLATTN_F32:
    return "f32";
  case CLATTN_F16:
    return "f16";
  case CLATTN_BF16:
    return "bf16";
  case CLATTN_I8:
    return "i8";
  }
  return "?";
}

tu_err tu_compare(const float *got, const float *ref, size_t n) {
  tu_err e = {0, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < n; i++) {
    /* non-finite where the reference is (clattn.h: NaN propagates, masked
     * keys never leak), finite within the tolerance elsewhere */
    if (!isfinite(ref[i])) {
      if (isfinite(got[i]) && e.missing++ == 0 && e.nonfinite == 0) {
        e.max_abs = INFINITY;
        e.worst = i;
      }
      continue;
    }
    double r = fabs((double)ref[i]);
    if (r > e.max_ref)
      e.max_ref = r;
    if (!isfinite(got[i])) {
      if (e.nonfinite++ == 0 && e.missing == 0) {
        e.max_abs = INFINITY;
        e.worst = i;
      }
      continue;
    }
    double a = fabs((double)got[i] - (double)ref[i]);
    if (a > e.max_abs) {
      e.max_abs = a;
      e.worst = i;
    }
  }
  e.rel = e.max_abs / (e.max_ref > 1e-30 ? e.max_ref : 1e-30);
  return e;
}

int tu_check(const char *what, const float *got, const float *ref, size_t n,
             double tol) {
  tu_err e = tu_compare(got, ref, n);
  int ok = e.nonfinite == 0 && e.missing == 0 && e.rel <= tol;
  cr_expect(ok,
            "%s: rel err %.3g > tol %.3g (max abs %.3g, max |ref| %.3g, "
            "worst index %zu: got %.9g ref %.9g, %zu non-finite where the "
            "reference is finite, %zu finite where it is not, of %zu)",
            what, e.rel, tol, e.max_abs, e.max_ref, e.worst,
            n ? (double)got[e.worst] : 0.0, n ? (double)ref[e.worst] : 0.0,
            e.nonfinite, e.missing, n);
  return ok;
}

int tu_subset(const char *name) {
  const char *s = getenv("CLATTN_TEST_SUBSET");
  return s && strcmp(s, name) == 0;
}

int tu_case_limit(void) {
  const char *s = getenv("CLATTN_TEST_CASES");
  const int n = s ? atoi(s) : 0;
  return n > 0 ? n : INT_MAX;
}

int tu_unsupported_ok(clattn_ctx *ctx, clattn_status st,
                      const clattn_params *p) {
  const char *e = getenv("CLATTN_TEST_ALLOW_UNSUPPORTED_WG");
  if (st != CLATTN_ERR_UNSUPPORTED || p == NULL || p->wg <= 0 || e == NULL ||
      *e == '\0' || strcmp(e, "0") == 0)
    return 0;
  cr_log_info("explicit wg=%d refused on this device: %s", p->wg,
              clattn_ctx_errmsg(ctx));
  return 1;
}

int tu_has_subgroups(void) {
  clattn_ctx *ctx = tu_ctx();
  clattn_profile p = {.size = sizeof p};
  clattn_status st = clattn_profile_reported(ctx, &p);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  clattn_ctx_destroy(ctx);
  return p.has_subgroups;
}

int tu_sg_offered(int sg) {
  if (!tu_has_subgroups())
    return 0;
  if (sg == 0)
    return 1;
  clattn_ctx *ctx = tu_ctx();
  cl_device_id dev = clattn_ctx_device(ctx);
  size_t sizes[64], n = 0;
  int offered = 0;
  cr_assert_eq(clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &n),
               CL_SUCCESS);
  char *ext = tu_alloc(n + 1);
  cr_assert_eq(clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, n, ext, NULL),
               CL_SUCCESS);
  ext[n] = '\0';
  const int required = strstr(ext, "cl_intel_required_subgroup_size") != NULL;
  free(ext);
  n = 0;
  if (required &&
      clGetDeviceInfo(dev, 0x4108 /* CL_DEVICE_SUB_GROUP_SIZES_INTEL */,
                      sizeof sizes, sizes, &n) == CL_SUCCESS)
    for (size_t i = 0; i < n / sizeof sizes[0] && i < 64; i++)
      offered |= sizes[i] == (size_t)sg;
  clattn_ctx_destroy(ctx);
  return offered;
}

int tu_untouched(clattn_ctx *ctx, cl_mem m, size_t bytes, uint8_t byte) {
  uint8_t *buf = tu_alloc(bytes);
  tu_read_bytes(ctx, m, buf, bytes);
  size_t i = 0;
  while (i < bytes && buf[i] == byte)
    i++;
  free(buf);
  return i == bytes;
}

void *tu_param_copy(void *src, size_t n, size_t size) {
  /* runs in Criterion's runner, outside any test: no cr_assert here */
  void *p = cr_malloc(size * (n ? n : 1));
  if (p == NULL || src == NULL)
    abort();
  memcpy(p, src, size * n);
  free(src);
  return p;
}

void tu_rows_get(const float *y, int b, int n, int D, int r0, int nr,
                 float *out) {
  for (int bi = 0; bi < b; bi++)
    memcpy(out + (size_t)bi * nr * D, y + ((size_t)bi * n + r0) * D,
           (size_t)nr * D * 4);
}

void tu_rows_put(float *y, int b, int n, int D, int r0, int nr,
                 const float *in) {
  for (int bi = 0; bi < b; bi++)
    memcpy(y + ((size_t)bi * n + r0) * D, in + (size_t)bi * nr * D,
           (size_t)nr * D * 4);
}

void tu_layer_prefill_rows(clattn_ctx *ctx, clattn_layer *l, clattn_kv_cache *c,
                           int b, int n, int D, const float *x, int r0, int nr,
                           int causal, float *y) {
  const size_t cnt = (size_t)b * nr * D;
  float *t = tu_alloc(cnt * 4);
  tu_rows_get(x, b, n, D, r0, nr, t);
  cl_mem dx = tu_upload(ctx, t, cnt, CLATTN_F32);
  cl_mem dy = tu_sentinel(ctx, cnt, CLATTN_F32, 0xff);
  clattn_status st = clattn_layer_prefill(l, c, b, nr, causal, dx, dy, NULL);
  cr_assert(st == CLATTN_OK, "prefill rows %d..%d: %d %s: %s", r0, r0 + nr,
            (int)st, clattn_status_str(st), clattn_ctx_errmsg(ctx));
  tu_download(ctx, dy, t, cnt, CLATTN_F32);
  tu_rows_put(y, b, n, D, r0, nr, t);
  tu_release(dx);
  tu_release(dy);
  free(t);
}

void tu_layer_decode_rows(clattn_ctx *ctx, clattn_layer *l, clattn_kv_cache *c,
                          int b, int n, int D, const float *x, int r0,
                          float *y) {
  float *tmp = tu_alloc((size_t)b * D * 4);
  cl_mem dx = tu_buffer(ctx, (size_t)b * D * 4);
  cl_mem dy = tu_buffer(ctx, (size_t)b * D * 4);
  for (int t = r0; t < n; t++) {
    tu_rows_get(x, b, n, D, t, 1, tmp);
    tu_write(ctx, dx, tmp, (size_t)b * D, CLATTN_F32);
    clattn_status st = clattn_layer_decode(l, c, dx, dy, NULL);
    cr_assert(st == CLATTN_OK, "decode step %d: %d %s", t, (int)st,
              clattn_ctx_errmsg(ctx));
    cr_expect_eq(clattn_kv_cache_len(c), t + 1);
    tu_download(ctx, dy, tmp, (size_t)b * D, CLATTN_F32);
    tu_rows_put(y, b, n, D, t, 1, tmp);
  }
  tu_release(dx);
  tu_release(dy);
  free(tmp);
}

void tu_layer_cache_checks(clattn_ctx *ctx, clattn_layer *l, int b, int n,
                           int D, int capacity, const float *x,
                           const float *ylib, const float *yref,
                           const char *what) {
  const size_t nx = (size_t)b * n * D;
  const double tol = clattn__tolerance(CLATTN_F32);
  float *yc = tu_alloc(nx * 4);
  char msg[256];
  clattn_kv_cache *cache = NULL;
  clattn_status st = clattn_kv_cache_create(l, b, capacity, &cache);
  cr_assert(st == CLATTN_OK && cache, "kv_cache_create: %d %s", (int)st,
            clattn_ctx_errmsg(ctx));
  const int p0 = n / 3 + 1;
  tu_layer_prefill_rows(ctx, l, cache, b, n, D, x, 0, p0, 1, yc);
  cr_expect_eq(clattn_kv_cache_len(cache), p0);
  tu_layer_decode_rows(ctx, l, cache, b, n, D, x, p0, yc);
  snprintf(msg, sizeof msg, "prefill+decode vs one causal prefill %s", what);
  tu_check(msg, yc, ylib, nx, tol);
  snprintf(msg, sizeof msg, "prefill+decode vs ref %s", what);
  tu_check(msg, yc, yref, nx, tol);

  clattn_kv_cache_reset(cache);
  const int c1 = n / 2;
  tu_layer_prefill_rows(ctx, l, cache, b, n, D, x, 0, c1, 1, yc);
  tu_layer_prefill_rows(ctx, l, cache, b, n, D, x, c1, n - c1, 1, yc);
  cr_expect_eq(clattn_kv_cache_len(cache), n);
  snprintf(msg, sizeof msg, "two cached chunks vs one causal prefill %s", what);
  tu_check(msg, yc, ylib, nx, tol);
  clattn_kv_cache_destroy(cache);
  free(yc);
}

clattn_params tu_params(const char *text) {
  clattn_params p = {.size = sizeof p};
  cr_assert_eq(clattn_params_parse(text, &p), CLATTN_OK, "params \"%s\"", text);
  return p;
}
