/* tune_kernels.c - the fused kernels' tuning spaces and their evaluation:
 * clattn_tune_attention, clattn_tune_decode.
 *
 * Spaces (pruned by the plan's own validation and by the device's
 * work-group size and local memory, before anything is compiled):
 *   prefill variant 1 (register-blocked): rows {1,2,4,8} x keys
 *     {16,32,64,128} x work-group {1 (written 0),2,4};
 *   prefill variant 2 (local-memory tiles): work-group {16..256} x keys
 *     {8,16,32,64};
 *   decode variant 1: keys {16,32,64,128} x work-group {1 (0),4} x splits
 *     x prefetch {off, on} x heads per P V pass after the first (rows)
 *     {1,2,4} and the whole group a pass, by slices of the value dims
 *     (rows G, which is rows 4 when G <= 4) without prefetch (one
 *     candidate where the group has no P V pass to prefetch in);
 *   decode variant 2: work-group {16..256} x keys {8,16,32,64} x splits;
 *   splits: 1, 2, 4, ... while a split keeps >= 64 keys (at most 256).
 * A candidate is stored as the plan resolves it (e.g. the split count the
 * chunk rounding gives), so two requests that run the same launch are one
 * candidate.
 *
 * Evaluation: the candidate runs through clattn_attention / clattn_decode
 * (the library's launch path), first on a small input of the same head
 * dims, group, dtype, mask and layout, against the plain-C reference
 * (tests/ref.c, double accumulation); then it is timed on the call's shape:
 * a warm-up, then `repeats` runs, median kept.  Decode rotates over copies
 * of the K/V cache larger than twice the device's global-memory cache, one
 * rotation shared by all candidates, so each call reads cold data; a run is
 * the call on up to 8 consecutive copies, enqueued back to back and
 * finished once (the time per call of a stream, as a model's layers issue
 * it, without the queue's round trip; see timed_run). */
#include "tune/tune.h"

#include "reference/ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- spaces */

/* A candidate's values (the space's dimensions are clattn_params' fields,
 * clattn__param_names) as params, and back. */
static clattn_params params_of(const int *v) {
  clattn_params p;
  for (int i = 0; i < CLATTN__NPARAMS; i++)
    *clattn__param(&p, i) = v[i];
  return p;
}

static void values_of(clattn_params p, int *v) {
  for (int i = 0; i < CLATTN__NPARAMS; i++)
    v[i] = *clattn__param(&p, i);
}

clattn_params clattn__space_params(const clattn__space *s, int i) {
  return params_of(&s->val[i * s->ndims]);
}

static void space_init(clattn__space *s) {
  memset(s, 0, sizeof *s);
  s->ndims = CLATTN__NPARAMS;
  for (int i = 0; i < CLATTN__NPARAMS; i++)
    s->dim[i] = clattn__param_names[i];
  s->def = -1;
}

/* Plan p for d; add the resolved candidate if it fits.  Returns its index,
 * -1 if pruned, -2 out of memory. */
static int add_prefill(const clattn__target *t, const clattn_attn_desc *d,
                       clattn_params p, clattn__space *s) {
  clattn_attn_desc c = *d;
  clattn__prefill_plan pl;
  char why[160];
  c.params = &p;
  if (clattn__plan_prefill(t, &c, &pl, why, sizeof why) != CLATTN_OK ||
      !clattn__prefill_fits(t, &c, &pl, why, sizeof why)) {
    s->pruned++;
    return -1;
  }
  int v[CLATTN__NPARAMS];
  values_of(clattn__prefill_resolved(&pl), v);
  int i = clattn__space_add(s, v);
  return i < 0 ? -2 : i;
}

clattn_status clattn__space_prefill(const clattn__target *t,
                                    const clattn_attn_desc *d,
                                    clattn__space *s) {
  static const int rows1[] = {1, 2, 4, 8}, keys1[] = {16, 32, 64, 128},
                   wg1[] = {1, 2, 4}, wg2[] = {16, 32, 64, 128, 256},
                   keys2[] = {8, 16, 32, 64};
  space_init(s);
  int i = add_prefill(t, d, (clattn_params){0, 0, 0, 0, 0, 0}, s);
  if (i == -2)
    return CLATTN_ERR_NOMEM;
  s->def = i;
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++)
      for (int c = 0; c < 3; c++)
        if (add_prefill(t, d,
                        (clattn_params){1, rows1[a], keys1[b], wg1[c], 0, 0},
                        s) == -2)
          return CLATTN_ERR_NOMEM;
  for (int a = 0; a < 5; a++)
    for (int b = 0; b < 4; b++)
      if (add_prefill(t, d, (clattn_params){2, 0, keys2[b], wg2[a], 0, 0}, s) ==
          -2)
        return CLATTN_ERR_NOMEM;
  return CLATTN_OK;
}

static int add_decode(const clattn__target *t, const clattn_decode_desc *d,
                      clattn_params p, clattn__space *s) {
  clattn_decode_desc c = *d;
  clattn__decode_plan pl;
  char why[160];
  c.params = &p;
  if (clattn__plan_decode(t, &c, &pl, why, sizeof why) != CLATTN_OK ||
      !clattn__decode_fits(t, &c, &pl, why, sizeof why)) {
    s->pruned++;
    return -1;
  }
  int v[CLATTN__NPARAMS];
  values_of(clattn__decode_resolved(&pl), v);
  int i = clattn__space_add(s, v);
  return i < 0 ? -2 : i;
}

clattn_status clattn__space_decode(const clattn__target *t,
                                   const clattn_decode_desc *d,
                                   clattn__space *s) {
  static const int keys1[] = {16, 32, 64, 128}, wg1[] = {1, 4},
                   wg2[] = {16, 32, 64, 128, 256}, keys2[] = {8, 16, 32, 64};
  /* heads a pass; g (> 4): the whole group, by slices */
  const int g = d->heads_kv > 0 ? d->heads_q / d->heads_kv : 1;
  const int rows1[] = {1, 2, 4, g > 4 ? g : 4};
  int splits[10], ns = 0;
  space_init(s);
  int i = add_decode(t, d, (clattn_params){0, 0, 0, 0, 0, 0}, s);
  if (i == -2)
    return CLATTN_ERR_NOMEM;
  s->def = i;
  for (int sp = 1; ns < 10 && sp <= 256 && (sp == 1 || d->capacity / sp >= 64);
       sp *= 2)
    splits[ns++] = sp;
  for (int k = 0; k < ns; k++) {
    for (int a = 0; a < 4; a++)
      for (int b = 0; b < 2; b++)
        for (int f = 1; f <= 2; f++)
          for (int r = 0; r < 4; r++)
            if (add_decode(t, d, (clattn_params){1, rows1[r], keys1[a],
                                                 wg1[b], splits[k], f},
                           s) == -2)
              return CLATTN_ERR_NOMEM;
    for (int a = 0; a < 5; a++)
      for (int b = 0; b < 4; b++)
        if (add_decode(t, d, (clattn_params){2, 0, keys2[b], wg2[a],
                                             splits[k], 0},
                       s) == -2)
          return CLATTN_ERR_NOMEM;
  }
  return CLATTN_OK;
}

/* ------------------------------------------------------------ evaluation */

/* Largest error against the reference relative to its largest magnitude,
 * as the tests measure it; INFINITY for a non-finite output. */
static double rel_error(const float *got, const float *ref, size_t n) {
  double num = 0, den = 1e-30;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(got[i]))
      return INFINITY;
    double a = fabs((double)got[i] - (double)ref[i]);
    if (a > num)
      num = a;
    if (fabs((double)ref[i]) > den)
      den = fabs((double)ref[i]);
  }
  return num / den;
}

/* The tests' tolerances (tests/util.h explains them). */
static double tolerance(clattn_dtype dt) {
  return dt == CLATTN_F32 ? 1e-4 : dt == CLATTN_F16 ? 1e-3 : 8e-3;
}

enum { MAX_COPIES = 64 };

typedef struct kfam {
  clattn_ctx *ctx;
  int decode;
  clattn_attn_desc ad;       /* the call (prefill) */
  clattn_decode_desc dd;     /* the call (decode) */
  clattn_attn_desc sad;      /* the small check's (prefill) */
  clattn_decode_desc sdd;    /* the small check's (decode) */
  cl_mem q, o, lens;         /* the call's */
  int copies, next; /* K/V copies; the next one a timed run reads */
  cl_mem k[MAX_COPIES], v[MAX_COPIES];
  cl_mem sq, sk, sv, so, slens; /* the small check's */
  size_t so_elems;
  float *sref;               /* reference output of the small check */
  void *sraw;                /* its device output, raw */
  float *sgot;
  clattn_profile prof;  /* the model's: prof0 scaled to the bandwidth of
                           the moment (decode; kfam_refresh) */
  clattn_profile prof0; /* as stored */
  int has_prof;
  clattn_copy_ref *ref; /* decode: the bandwidth reference */
} kfam;

static unsigned lcg(unsigned *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

/* Host data in [-1, 1), rounded to dtype (so the reference sees what the
 * kernel reads); raw gets the stored form. */
static void fill(float *x, void *raw, size_t n, clattn_dtype dt,
                 unsigned *seed) {
  for (size_t i = 0; i < n; i++) {
    float f = (float)lcg(seed) / 8388608.0f - 1.0f;
    if (dt == CLATTN_F16) {
      uint16_t h = ref_f32_to_f16(f);
      ((uint16_t *)raw)[i] = h;
      f = ref_f16_to_f32(h);
    } else if (dt == CLATTN_BF16) {
      uint16_t h = ref_f32_to_bf16(f);
      ((uint16_t *)raw)[i] = h;
      f = ref_bf16_to_f32(h);
    } else {
      ((float *)raw)[i] = f;
    }
    x[i] = f;
  }
}

static void to_float(const void *raw, float *x, size_t n, clattn_dtype dt) {
  for (size_t i = 0; i < n; i++)
    x[i] = dt == CLATTN_F16    ? ref_f16_to_f32(((const uint16_t *)raw)[i])
           : dt == CLATTN_BF16 ? ref_bf16_to_f32(((const uint16_t *)raw)[i])
                               : ((const float *)raw)[i];
}

/* A device buffer of n elements of dtype: random data (x may be NULL: the
 * host values are then discarded) or zeros (data 0). */
static clattn_status buffer(kfam *F, size_t n, clattn_dtype dt, int data,
                            float *x, unsigned *seed, cl_mem *out) {
  clattn_ctx *ctx = F->ctx;
  clattn_status rc = CLATTN_OK;
  const size_t es = clattn_dtype_size(dt);
  void *raw = calloc(n ? n : 1, es);
  float *tmp = x ? NULL : malloc((n ? n : 1) * sizeof *tmp);
  cl_int err = CL_SUCCESS;
  if (raw == NULL || (!x && tmp == NULL)) {
    rc = clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
    goto done;
  }
  if (data)
    fill(x ? x : tmp, raw, n, dt, seed);
  *out = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                        n * es, raw, &err);
  CLATTN_CL(ctx, err);
done:
  free(raw);
  free(tmp);
  return rc;
}

static clattn_status int_buffer(kfam *F, const int *v, int n, cl_mem *out) {
  clattn_status rc = CLATTN_OK;
  cl_int err = CL_SUCCESS;
  *out = clCreateBuffer(F->ctx->context,
                        CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                        (size_t)n * sizeof(cl_int), (void *)v, &err);
  CLATTN_CL(F->ctx, err);
done:
  return rc;
}

static void kfam_free(kfam *F) {
  cl_mem *m[] = {&F->q, &F->o, &F->lens, &F->sq, &F->sk, &F->sv, &F->so,
                 &F->slens};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
    if (*m[i])
      clReleaseMemObject(*m[i]);
  for (int i = 0; i < F->copies; i++) {
    if (F->k[i])
      clReleaseMemObject(F->k[i]);
    if (F->v[i])
      clReleaseMemObject(F->v[i]);
  }
  clattn_copy_ref_destroy(F->ref);
  free(F->sref);
  free(F->sraw);
  free(F->sgot);
}

/* The small check's shape: the call's head dims, group, dtype, mask and
 * layouts; odd sizes that no tile divides, two sequences of different
 * lengths. */
static clattn_status setup_check(kfam *F) {
  clattn_status rc = CLATTN_OK;
  unsigned seed = 12345u;
  float *q = NULL, *k = NULL, *v = NULL;
  static const int lens2[2] = {45, 29};
  const int g = F->decode ? F->dd.heads_q / F->dd.heads_kv
                          : F->ad.heads_q / F->ad.heads_kv;
  const int hkv = 2, hq = 2 * g;
  int dk, dv, b = 2;
  clattn_dtype dt;
  size_t nq, nk, nv, no;
  if (F->decode) {
    F->sdd = F->dd;
    F->sdd.batch = b;
    F->sdd.capacity = 301;
    F->sdd.heads_q = hq;
    F->sdd.heads_kv = hkv;
    dk = F->dd.head_dim_k;
    dv = F->dd.head_dim_v;
    dt = F->dd.dtype;
    nq = (size_t)b * hq * dk;
    nk = (size_t)b * 301 * hkv * dk;
    nv = (size_t)b * 301 * hkv * dv;
    no = (size_t)b * hq * dv;
  } else {
    F->sad = F->ad;
    F->sad.batch = b;
    F->sad.n_q = 19;
    F->sad.n_kv = 45;
    F->sad.heads_q = hq;
    F->sad.heads_kv = hkv;
    dk = F->ad.head_dim_k;
    dv = F->ad.head_dim_v;
    dt = F->ad.dtype;
    nq = (size_t)b * 19 * hq * dk;
    nk = (size_t)b * 45 * hkv * dk;
    nv = (size_t)b * 45 * hkv * dv;
    no = (size_t)b * 19 * hq * dv;
  }
  q = malloc(nq * sizeof *q);
  k = malloc(nk * sizeof *k);
  v = malloc(nv * sizeof *v);
  F->sref = malloc(no * sizeof *F->sref);
  F->sgot = malloc(no * sizeof *F->sgot);
  F->sraw = malloc(no * clattn_dtype_size(dt));
  F->so_elems = no;
  if (!q || !k || !v || !F->sref || !F->sgot || !F->sraw) {
    rc = clattn__fail(F->ctx, CLATTN_ERR_NOMEM, "out of host memory");
    goto done;
  }
  CLATTN_TRY(buffer(F, nq, dt, 1, q, &seed, &F->sq));
  CLATTN_TRY(buffer(F, nk, dt, 1, k, &seed, &F->sk));
  CLATTN_TRY(buffer(F, nv, dt, 1, v, &seed, &F->sv));
  CLATTN_TRY(buffer(F, no, dt, 0, NULL, &seed, &F->so));
  if (F->decode) {
    static const int dlens[2] = {301, 188};
    const clattn_decode_desc *d = &F->sdd;
    CLATTN_TRY(int_buffer(F, dlens, 2, &F->slens));
    ref_decode(b, d->capacity, hq, hkv, dk, dv, (int)d->cache_layout,
               d->scale > 0 ? d->scale : 1.0 / sqrt((double)dk), dlens, q, k,
               v, F->sref);
  } else {
    const clattn_attn_desc *d = &F->sad;
    CLATTN_TRY(int_buffer(F, lens2, 2, &F->slens));
    ref_attn a = {b,
                  d->n_q,
                  d->n_kv,
                  hq,
                  hkv,
                  dk,
                  dv,
                  (int)d->q_layout,
                  (int)d->kv_layout,
                  d->scale > 0 ? d->scale : 1.0 / sqrt((double)dk),
                  d->causal,
                  lens2};
    ref_attention(&a, q, k, v, F->sref);
  }
done:
  free(q);
  free(k);
  free(v);
  return rc;
}

/* The call's buffers; decode gets enough K/V copies for cold caches. */
static clattn_status setup_call(kfam *F) {
  clattn_status rc = CLATTN_OK;
  unsigned seed = 777u;
  if (F->decode) {
    const clattn_decode_desc *d = &F->dd;
    const size_t nk = (size_t)d->batch * d->capacity * d->heads_kv *
                      d->head_dim_k,
                 nv = (size_t)d->batch * d->capacity * d->heads_kv *
                      d->head_dim_v;
    const size_t es = clattn_dtype_size(d->dtype);
    const double kv = (double)(nk + nv) * (double)es;
    double cache = (double)F->ctx->dev.global_cache;
    if (F->has_prof && F->prof.cache_bytes)
      cache = (double)F->prof.cache_bytes;
    int copies = (int)ceil(2.0 * cache / kv) + 1;
    if (copies > MAX_COPIES)
      copies = MAX_COPIES;
    while (copies > 1 && kv * copies > 2e9)
      copies--;
    int *lens = malloc((size_t)d->batch * sizeof *lens);
    if (lens == NULL)
      return clattn__fail(F->ctx, CLATTN_ERR_NOMEM, "out of host memory");
    for (int i = 0; i < d->batch; i++)
      lens[i] = d->capacity;
    rc = int_buffer(F, lens, d->batch, &F->lens);
    free(lens);
    if (rc)
      return rc;
    CLATTN_TRY(buffer(F, (size_t)d->batch * d->heads_q * d->head_dim_k,
                      d->dtype, 1, NULL, &seed, &F->q));
    CLATTN_TRY(buffer(F, (size_t)d->batch * d->heads_q * d->head_dim_v,
                      d->dtype, 0, NULL, &seed, &F->o));
    for (int i = 0; i < copies; i++) {
      F->copies = i + 1;
      CLATTN_TRY(buffer(F, nk, d->dtype, 1, NULL, &seed, &F->k[i]));
      CLATTN_TRY(buffer(F, nv, d->dtype, 1, NULL, &seed, &F->v[i]));
    }
  } else {
    const clattn_attn_desc *d = &F->ad;
    F->copies = 1;
    CLATTN_TRY(buffer(F, (size_t)d->batch * d->n_q * d->heads_q *
                             d->head_dim_k,
                      d->dtype, 1, NULL, &seed, &F->q));
    CLATTN_TRY(buffer(F, (size_t)d->batch * d->n_kv * d->heads_kv *
                             d->head_dim_k,
                      d->dtype, 1, NULL, &seed, &F->k[0]));
    CLATTN_TRY(buffer(F, (size_t)d->batch * d->n_kv * d->heads_kv *
                             d->head_dim_v,
                      d->dtype, 1, NULL, &seed, &F->v[0]));
    CLATTN_TRY(buffer(F, (size_t)d->batch * d->n_q * d->heads_q *
                             d->head_dim_v,
                      d->dtype, 0, NULL, &seed, &F->o));
  }
done:
  return rc;
}

/* One call with params p: the small check's (small 1) or the real one's
 * on K/V copy `copy`; finished when `finish`. */
static clattn_status call(kfam *F, const clattn_params *p, int small,
                          int copy, int finish) {
  clattn_status rc;
  if (F->decode) {
    clattn_decode_desc d = small ? F->sdd : F->dd;
    d.params = p;
    rc = small ? clattn_decode(F->ctx, &d, F->sq, F->sk, F->sv, F->slens,
                               F->so, NULL)
               : clattn_decode(F->ctx, &d, F->q, F->k[copy], F->v[copy],
                               F->lens, F->o, NULL);
  } else {
    clattn_attn_desc d = small ? F->sad : F->ad;
    d.params = p;
    rc = small ? clattn_attention(F->ctx, &d, F->sq, F->sk, F->sv, F->slens,
                                  F->so, NULL)
               : clattn_attention(F->ctx, &d, F->q, F->k[copy], F->v[copy],
                                  NULL, F->o, NULL);
  }
  if (rc == CLATTN_OK && finish) {
    cl_int err = clFinish(F->ctx->queue);
    if (err != CL_SUCCESS)
      rc = clattn__cl_fail(F->ctx, err, "clFinish", __FILE__, __LINE__);
  }
  return rc;
}

/* One timed run on the call's shape: the call on the next STREAM copies
 * of the rotation (every copy for prefill's one), enqueued back to back
 * and finished once, as a model's layers are; *sec is the time per call.
 * A clFinish after each call would add the queue's round trip to every
 * time (~50 us enqueue-to-finish on PoCL, against a cold MQA step of
 * ~130 us) and favour parameters with fewer launches over faster ones. */
enum { STREAM = 8 };

static clattn_status timed_run(kfam *F, const clattn_params *p,
                               double *sec) {
  clattn_status rc = CLATTN_OK;
  const int n = F->copies < STREAM ? F->copies : STREAM;
  const double a = clattn__now();
  for (int i = 0; i < n && rc == CLATTN_OK; i++) {
    /* one rotation over every copy for all candidates: a copy is read
     * again only after all the others (more than twice the cache) */
    F->next = (F->next + 1) % F->copies;
    rc = call(F, p, 0, F->next, i == n - 1);
  }
  if (rc != CLATTN_OK) {
    clFinish(F->ctx->queue); /* drain what was enqueued; rc says why */
    return rc;
  }
  *sec = (clattn__now() - a) / n;
  return CLATTN_OK;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void reject(clattn_tune_entry *e, const char *status,
                   const char *msg) {
  snprintf(e->status, sizeof e->status, "%s", status);
  snprintf(e->message, sizeof e->message, "%s", msg);
}

static clattn_status kfam_eval(void *self, const int *values, double best_s,
                               double timeout_s, int repeats,
                               clattn_tune_entry *e) {
  kfam *F = self;
  const clattn_params p = params_of(values);
  const clattn_dtype dt = F->decode ? F->dd.dtype : F->ad.dtype;
  const double t0 = clattn__now();
  clattn_status rc;
  /* 1. correct on the small input? */
  if ((rc = call(F, &p, 1, 0, 1)) != CLATTN_OK) {
    if (rc == CLATTN_ERR_NOMEM)
      return rc;
    reject(e, "failed", clattn_ctx_errmsg(F->ctx));
    return CLATTN_OK;
  }
  cl_int err = clEnqueueReadBuffer(F->ctx->queue, F->so, CL_TRUE, 0,
                                   F->so_elems * clattn_dtype_size(dt),
                                   F->sraw, 0, NULL, NULL);
  if (err != CL_SUCCESS)
    return clattn__cl_fail(F->ctx, err, "clEnqueueReadBuffer", __FILE__,
                           __LINE__);
  to_float(F->sraw, F->sgot, F->so_elems, dt);
  e->max_err = rel_error(F->sgot, F->sref, F->so_elems);
  if (!(e->max_err <= tolerance(dt))) {
    char msg[128];
    snprintf(msg, sizeof msg,
             "relative error %.3g against the reference (tolerance %.3g)",
             e->max_err, tolerance(dt));
    reject(e, "wrong", msg);
    return CLATTN_OK;
  }
  /* 2. time it on the call's shape */
  if ((rc = call(F, &p, 0, 0, 1)) != CLATTN_OK) {
    if (rc == CLATTN_ERR_NOMEM)
      return rc;
    reject(e, "failed", clattn_ctx_errmsg(F->ctx));
    return CLATTN_OK;
  }
  double t[64];
  int n = repeats < 64 ? repeats : 64;
  int done = 0;
  for (int r = 0; r < n; r++) {
    if ((rc = timed_run(F, &p, &t[done])) != CLATTN_OK) {
      reject(e, "failed", clattn_ctx_errmsg(F->ctx));
      return CLATTN_OK;
    }
    done++;
    if (clattn__now() - t0 > timeout_s) {
      char msg[96];
      snprintf(msg, sizeof msg, "over the %.3g s candidate timeout",
               timeout_s);
      e->median_s = t[0];
      reject(e, "timeout", msg);
      return CLATTN_OK;
    }
    /* early abandon: clearly slower than the best */
    double lo = t[0];
    for (int j = 1; j < done; j++)
      lo = t[j] < lo ? t[j] : lo;
    if (best_s > 0 && ((done == 1 && lo > 2.0 * best_s) ||
                       (done >= 3 && lo > 1.3 * best_s))) {
      char msg[96];
      snprintf(msg, sizeof msg, "abandoned after %d runs: %.3g x the best",
               done, lo / best_s);
      e->median_s = lo;
      reject(e, "slow", msg);
      return CLATTN_OK;
    }
  }
  qsort(t, (size_t)done, sizeof t[0], cmp_double);
  e->median_s = done % 2 ? t[done / 2] : 0.5 * (t[done / 2 - 1] + t[done / 2]);
  e->spread = (t[done - 1] - t[0]) / e->median_s;
  snprintf(e->status, sizeof e->status, "ok");
  return CLATTN_OK;
}

int clattn__predict(const clattn_profile *prof, const clattn_attn_desc *a,
                    const clattn_decode_desc *d, const clattn_params *p,
                    double *t_pred, double *t_roof) {
  clattn_prediction pr;
  clattn_status rc;
  if (d) {
    clattn_decode_desc c = *d;
    c.params = p;
    rc = clattn_model_decode(&c, NULL, prof, &pr);
  } else {
    clattn_attn_desc c = *a;
    c.params = p;
    rc = clattn_model_attention(&c, NULL, prof, &pr);
  }
  if (rc != CLATTN_OK)
    return 0;
  *t_pred = pr.total.t_pred;
  if (t_roof)
    *t_roof = pr.total.t_memory > pr.total.t_compute ? pr.total.t_memory
                                                     : pr.total.t_compute;
  return 1;
}

static int kfam_predict(void *self, const int *values, double *t_pred,
                        double *t_roof) {
  kfam *F = self;
  const clattn_params p = params_of(values);
  return F->has_prof && clattn__predict(&F->prof, &F->ad,
                                        F->decode ? &F->dd : NULL, &p,
                                        t_pred, t_roof);
}

/* Decode's bandwidth of the moment: the best of three launches of the
 * probe's copy kernel (clattn_copy_ref; buffers of at least the profile's
 * last-level cache, 64 MiB or more), and the stored profile scaled to it.
 * The search's roofline stop compares measurements taken now with the
 * profile's bound, and this machine's copy moved between ~41 and ~77 GB/s
 * within minutes: with a profile of the slow moment, the auto strategy
 * stopped on GQA h=32/8 k=128 after 4 of 410 candidates, 8.5% behind the
 * exhaustive best.  A failure to time leaves the profile as it was. */
static int kfam_refresh(void *self) {
  kfam *F = self;
  if (!F->decode || !F->has_prof || !(F->prof0.bw_copy_gbs > 0))
    return 0;
  if (F->ref == NULL) {
    size_t bytes = (size_t)64 << 20;
    if (F->prof0.cache_bytes > bytes)
      bytes = (size_t)F->prof0.cache_bytes / 64 * 64;
    if (clattn_copy_ref_create(F->ctx, bytes, &F->ref) != CLATTN_OK) {
      F->ref = NULL;
      return 0;
    }
  }
  double best = 0.0;
  for (int r = 0; r < 3; r++) {
    double g = 0.0;
    if (clattn_copy_ref_run(F->ref, &g) != CLATTN_OK)
      return 0;
    if (g > best)
      best = g;
  }
  F->prof = F->prof0;
  clattn_profile_at_copy(&F->prof, best);
  return 1;
}

/* One timed run of a candidate on the call's shape (timed_run). */
static double kfam_time1(void *self, const int *values) {
  kfam *F = self;
  const clattn_params p = params_of(values);
  double t = -1.0;
  return timed_run(F, &p, &t) == CLATTN_OK ? t : -1.0;
}

/* Shared by both entry points. */
static clattn_status tune(clattn_ctx *ctx, clattn_db *db, kfam *F,
                          const clattn_tune_opts *opts,
                          clattn_tune_result *out) {
  clattn_status rc;
  clattn__space s;
  clattn__tune_family fam;
  clattn_tune_entry id;
  const clattn__target t = clattn__ctx_target(ctx);
  memset(&s, 0, sizeof s);
  memset(&fam, 0, sizeof fam);
  if (db == NULL || out == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "db or out is NULL");
  memset(out, 0, sizeof *out);
  clattn_profile prof;
  if (clattn_profile_for(ctx, db, &prof) == CLATTN_OK &&
      prof.fp32_gflops > 0 && prof.bw_read_gbs > 0) {
    F->prof = F->prof0 = prof;
    F->has_prof = 1;
  }
  CLATTN_TRY(clattn__tune_identity(ctx, &id));
  rc = F->decode ? clattn__space_decode(&t, &F->dd, &s)
                 : clattn__space_prefill(&t, &F->ad, &s);
  if (rc) {
    rc = clattn__fail(ctx, rc, "out of host memory");
    goto done;
  }
  CLATTN_TRY(setup_check(F));
  CLATTN_TRY(setup_call(F));
  fam.kernel = F->decode ? "decode" : "prefill";
  if (F->decode)
    clattn_shape_class_decode(&F->dd, fam.shape_class,
                              sizeof fam.shape_class);
  else
    clattn_shape_class_attention(&F->ad, fam.shape_class,
                                 sizeof fam.shape_class);
  fam.self = F;
  fam.eval = kfam_eval;
  fam.predict = kfam_predict;
  fam.refresh = kfam_refresh;
  fam.time1 = kfam_time1;
  rc = clattn__tune_run(ctx, db, &s, &fam, &id, opts, out);
  /* later calls on ctx see the new entries */
  clattn__choice_reload(ctx);
done:
  clattn__space_free(&s);
  kfam_free(F);
  return rc;
}

/* Check ctx and the call (valid with automatic params) and set up F for
 * it; d is a clattn_attn_desc or, with decode, a clattn_decode_desc. */
static clattn_status begin(clattn_ctx *ctx, const void *d, int decode,
                           kfam *F) {
  clattn_status rc = clattn__ctx_check(ctx);
  clattn_choice ch;
  if (rc)
    return rc;
  ctx->errmsg[0] = '\0';
  if (d == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "desc is NULL");
  memset(F, 0, sizeof *F);
  F->ctx = ctx;
  F->decode = decode;
  /* the tuner's candidates replace the caller's params */
  if (decode) {
    F->dd = *(const clattn_decode_desc *)d;
    F->dd.params = NULL;
    return clattn_explain_decode(ctx, &F->dd, &ch);
  }
  F->ad = *(const clattn_attn_desc *)d;
  F->ad.params = NULL;
  return clattn_explain_attention(ctx, &F->ad, &ch);
}

clattn_status clattn_tune_attention(clattn_ctx *ctx, clattn_db *db,
                                    const clattn_attn_desc *d,
                                    const clattn_tune_opts *opts,
                                    clattn_tune_result *out) {
  kfam F;
  clattn_status rc = begin(ctx, d, 0, &F);
  return rc ? rc : tune(ctx, db, &F, opts, out);
}

clattn_status clattn_tune_decode(clattn_ctx *ctx, clattn_db *db,
                                 const clattn_decode_desc *d,
                                 const clattn_tune_opts *opts,
                                 clattn_tune_result *out) {
  kfam F;
  clattn_status rc = begin(ctx, d, 1, &F);
  return rc ? rc : tune(ctx, db, &F, opts, out);
}

/* ---------------------------------------------------------- space API */

static clattn_status space_api(clattn_ctx *ctx, const void *d, int decode,
                               clattn_params *out, int cap, int *n,
                               int *pruned) {
  kfam F;
  clattn__space s;
  clattn_status rc = begin(ctx, d, decode, &F);
  if (rc)
    return rc;
  const clattn__target t = clattn__ctx_target(ctx);
  rc = decode ? clattn__space_decode(&t, &F.dd, &s)
              : clattn__space_prefill(&t, &F.ad, &s);
  if (rc == CLATTN_OK) {
    for (int i = 0; i < s.n && i < cap && out; i++)
      out[i] = clattn__space_params(&s, i);
    if (n)
      *n = s.n;
    if (pruned)
      *pruned = s.pruned;
  }
  clattn__space_free(&s);
  return rc ? clattn__fail(ctx, rc, "out of host memory") : rc;
}

clattn_status clattn_tune_space_attention(clattn_ctx *ctx,
                                          const clattn_attn_desc *d,
                                          clattn_params *out, int cap, int *n,
                                          int *pruned) {
  return space_api(ctx, d, 0, out, cap, n, pruned);
}

clattn_status clattn_tune_space_decode(clattn_ctx *ctx,
                                       const clattn_decode_desc *d,
                                       clattn_params *out, int cap, int *n,
                                       int *pruned) {
  return space_api(ctx, d, 1, out, cap, n, pruned);
}
