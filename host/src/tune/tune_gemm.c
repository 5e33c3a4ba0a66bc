/* tune_gemm.c - the Xgemm tuner family (clattn_tune_gemm): each candidate
 * checked against a plain-C GEMM, then timed at the class's shape; see
 * tune_gemm.h for how CLBlast runs what it tunes. */
#include "tune/tune_gemm.h"
#include "device/profile.h"

#include "base/clblast_status.h"
#include "base/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The call the layers make (layer/gemm.c): row-major C[m,n] = A[m,k] B[k,n]. */
static CLBlastStatusCode sgemm(clattn_ctx *ctx, int m, int n, int k, cl_mem a,
                               cl_mem b, cl_mem c) {
  cl_command_queue q = ctx->queue;
  return CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                      CLBlastTransposeNo, (size_t)m, (size_t)n, (size_t)k, 1.0f,
                      a, 0, (size_t)k, b, 0, (size_t)n, 0.0f, c, 0, (size_t)n,
                      &q, NULL);
}

/* ------------------------------------------------------------- family */

/* The correctness check's shape: odd in every dimension, so CLBlast pads
 * all three operands, and more than one 128-wide tile in m. */
#define CHECK_M 131
#define CHECK_N 75
#define CHECK_K 53
#define CHECK_TOL 1e-4

typedef struct xgemm_tuner {
  clattn_ctx *ctx;
  int m, n, k;
  cl_mem a, b, c;    /* timing operands */
  cl_mem ca, cb, cc; /* check operands */
  float *got;        /* [CHECK_M * CHECK_N] */
  double *ref;       /* the plain-C result, double accumulation */
  double ref_max;    /* max |ref| */
  double peak;       /* FP32 FLOP/s of the device profile; 0: unknown */
} xgemm_tuner;

static void set_text(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src);
}

static void blast_failed(clattn_tune_entry *e, const char *what,
                         CLBlastStatusCode s) {
  set_text(e->status, sizeof e->status, "failed");
  snprintf(e->message, sizeof e->message, "%s: %s (%d)", what,
           clattn__clblast_status_str(s), (int)s);
}

static clattn_status xg_eval(void *self, const int *values, double best_s,
                             double timeout_s, int repeats,
                             clattn_tune_entry *e) {
  xgemm_tuner *t = self;
  clattn_ctx *ctx = t->ctx;
  clattn_status rc = CLATTN_OK;
  CLBlastStatusCode s;
  double t0 = clattn__now(), t1, first, *times = NULL;
  double worst = 0.0;
  int bad = 0;

  if (repeats < 1)
    repeats = 7;
  e->median_s = e->spread = e->max_err = 0.0;
  e->message[0] = '\0';
  s = clattn__xgemm_override(ctx->device, values);
  if (s != CLBlastSuccess) {
    blast_failed(e, "CLBlastOverrideParameters(Xgemm)", s);
    return CLATTN_OK;
  }
  /* Check: the first call also builds the candidate's program. */
  s = sgemm(ctx, CHECK_M, CHECK_N, CHECK_K, t->ca, t->cb, t->cc);
  if (s != CLBlastSuccess) {
    blast_failed(e, "CLBlastSgemm (check)", s);
    return CLATTN_OK;
  }
  CLATTN_CL(ctx, clEnqueueReadBuffer(ctx->queue, t->cc, CL_TRUE, 0,
                                     sizeof(float) * CHECK_M * CHECK_N, t->got,
                                     0, NULL, NULL));
  for (int i = 0; i < CHECK_M * CHECK_N; i++) {
    double d = fabs((double)t->got[i] - t->ref[i]);
    if (!isfinite(t->got[i]))
      bad++;
    else if (d > worst)
      worst = d;
  }
  e->max_err = worst / (t->ref_max > 1e-30 ? t->ref_max : 1e-30);
  if (bad > 0 || !(e->max_err <= CHECK_TOL)) {
    set_text(e->status, sizeof e->status, "wrong");
    snprintf(e->message, sizeof e->message,
             "check %dx%dx%d against the plain-C GEMM: max relative error "
             "%.3g (limit %g), %d non-finite values",
             CHECK_M, CHECK_N, CHECK_K, e->max_err, CHECK_TOL, bad);
    return CLATTN_OK;
  }
  /* Warm-up at the class's shape; it decides timeout and early abandon. */
  t1 = clattn__now();
  s = sgemm(ctx, t->m, t->n, t->k, t->a, t->b, t->c);
  if (s != CLBlastSuccess) {
    blast_failed(e, "CLBlastSgemm (timing)", s);
    return CLATTN_OK;
  }
  CLATTN_CL(ctx, clFinish(ctx->queue));
  first = clattn__now() - t1;
  if (timeout_s > 0 && clattn__now() - t0 > timeout_s) {
    set_text(e->status, sizeof e->status, "timeout");
    e->median_s = first;
    snprintf(e->message, sizeof e->message,
             "build, check and first run took %.1f s (limit %.1f s)",
             clattn__now() - t0, timeout_s);
    return CLATTN_OK;
  }
  if (best_s > 0 && first > 2.0 * best_s) {
    set_text(e->status, sizeof e->status, "slow");
    e->median_s = first;
    snprintf(e->message, sizeof e->message,
             "first run %.3g s > 2x the best %.3g s", first, best_s);
    return CLATTN_OK;
  }
  times = malloc(sizeof *times * (size_t)repeats);
  if (times == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "Xgemm tuner: out of memory");
  for (int r = 0; r < repeats; r++) {
    t1 = clattn__now();
    s = sgemm(ctx, t->m, t->n, t->k, t->a, t->b, t->c);
    if (s != CLBlastSuccess) {
      blast_failed(e, "CLBlastSgemm (timing)", s);
      goto done;
    }
    CLATTN_CL(ctx, clFinish(ctx->queue));
    times[r] = clattn__now() - t1;
  }
  e->median_s = clattn__median(times, repeats); /* sorts times */
  e->spread = (times[repeats - 1] - times[0]) / e->median_s;
  set_text(e->status, sizeof e->status, "ok");
done:
  free(times);
  return rc;
}

/* The roofline bound 2mnk / FP32 peak, the same for every candidate:
 * returns 1 with both times set, 0 (times 0) when the peak is unknown. */
static int xg_predict(void *self, const int *values, double *t_pred,
                      double *t_roof) {
  const xgemm_tuner *t = self;
  double tt = 0.0;
  (void)values;
  if (t->peak > 0)
    tt = 2.0 * t->m * (double)t->n * t->k / t->peak;
  if (t_pred != NULL)
    *t_pred = tt;
  if (t_roof != NULL)
    *t_roof = tt;
  return tt > 0;
}

static void tuner_free(xgemm_tuner *t) {
  cl_mem m[6] = {t->a, t->b, t->c, t->ca, t->cb, t->cc};
  for (int i = 0; i < 6; i++)
    if (m[i] != NULL)
      clReleaseMemObject(m[i]);
  free(t->got);
  free(t->ref);
}

static clattn_status make_buffer(clattn_ctx *ctx, size_t bytes,
                                 const float *init, cl_mem *out) {
  cl_int err = CL_SUCCESS;
  *out = clCreateBuffer(ctx->context,
                        CL_MEM_READ_WRITE |
                            (init != NULL ? CL_MEM_COPY_HOST_PTR : 0),
                        bytes, (void *)init, &err);
  if (err != CL_SUCCESS || *out == NULL) {
    *out = NULL;
    return clattn__cl_fail(ctx, err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES,
                           "clCreateBuffer(Xgemm tuner)", __FILE__, __LINE__);
  }
  return CLATTN_OK;
}

/* Deterministic values in [-1, 1) (xorshift64*). */
static void fill_random(float *x, size_t n, uint64_t seed) {
  uint64_t s = seed | 1;
  for (size_t i = 0; i < n; i++) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    x[i] = (float)((double)((s * 2685821657736338717ull) >> 11) /
                       (double)(1ull << 52) -
                   1.0);
  }
}

static clattn_status tuner_init(clattn_ctx *ctx, clattn_db *db, int m, int n,
                                int k, xgemm_tuner *t) {
  clattn_status rc = CLATTN_OK;
  float *ha = NULL, *hb = NULL, *big = NULL;
  size_t sa = clattn__bytes(4, m, k, 1, 1), sb = clattn__bytes(4, k, n, 1, 1),
         sc = clattn__bytes(4, m, n, 1, 1);
  clattn_profile prof;

  memset(t, 0, sizeof *t);
  t->ctx = ctx;
  t->m = m;
  t->n = n;
  t->k = k;
  if (sa == 0 || sb == 0 || sc == 0 || (cl_ulong)sa > ctx->dev.max_alloc ||
      (cl_ulong)sb > ctx->dev.max_alloc || (cl_ulong)sc > ctx->dev.max_alloc)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "clattn_tune_gemm: %dx%dx%d operands exceed the "
                        "device's max allocation (%llu bytes)",
                        m, n, k, (unsigned long long)ctx->dev.max_alloc);
  ha = malloc(sizeof(float) * CHECK_M * CHECK_K);
  hb = malloc(sizeof(float) * CHECK_K * CHECK_N);
  t->got = malloc(sizeof(float) * CHECK_M * CHECK_N);
  t->ref = malloc(sizeof(double) * CHECK_M * CHECK_N);
  if (ha == NULL || hb == NULL || t->got == NULL || t->ref == NULL) {
    rc = clattn__fail(ctx, CLATTN_ERR_NOMEM, "Xgemm tuner: out of memory");
    goto done;
  }
  fill_random(ha, (size_t)CHECK_M * CHECK_K, 0x9e3779b97f4a7c15ull);
  fill_random(hb, (size_t)CHECK_K * CHECK_N, 0xd1b54a32d192ed03ull);
  for (int i = 0; i < CHECK_M; i++)
    for (int j = 0; j < CHECK_N; j++) {
      double acc = 0.0;
      for (int p = 0; p < CHECK_K; p++)
        acc += (double)ha[i * CHECK_K + p] * (double)hb[p * CHECK_N + j];
      t->ref[i * CHECK_N + j] = acc;
      if (fabs(acc) > t->ref_max)
        t->ref_max = fabs(acc);
    }
  CLATTN_TRY(make_buffer(ctx, sizeof(float) * CHECK_M * CHECK_K, ha, &t->ca));
  CLATTN_TRY(make_buffer(ctx, sizeof(float) * CHECK_K * CHECK_N, hb, &t->cb));
  CLATTN_TRY(make_buffer(ctx, sizeof(float) * CHECK_M * CHECK_N, NULL, &t->cc));
  /* Timing operands: random values (no denormals); C is write-only. */
  big = malloc(sa > sb ? sa : sb);
  if (big == NULL) {
    rc = clattn__fail(ctx, CLATTN_ERR_NOMEM, "Xgemm tuner: out of memory");
    goto done;
  }
  fill_random(big, sa / 4, 1);
  CLATTN_TRY(make_buffer(ctx, sa, big, &t->a));
  fill_random(big, sb / 4, 2);
  CLATTN_TRY(make_buffer(ctx, sb, big, &t->b));
  CLATTN_TRY(make_buffer(ctx, sc, NULL, &t->c));
  CLATTN_TRY(clattn__profile_for(ctx, db, &prof));
  t->peak = prof.fp32_gflops * 1e9;
done:
  free(ha);
  free(hb);
  free(big);
  if (rc != CLATTN_OK)
    tuner_free(t);
  return rc;
}

/* --------------------------------------------------------------- tune */

/* Check and timing run the Xgemm kernel (see the top of the file). */
static clattn_status force_indirect(clattn_ctx *ctx, int m, int n, int k) {
  double vol = (double)m * n * k, check = (double)CHECK_M * CHECK_N * CHECK_K;
  size_t size = (size_t)floor(cbrt(vol < check ? vol : check) + 1e-6);
  CLBlastStatusCode s = clattn__xgemm_min_indirect(ctx->device, size);
  if (s != CLBlastSuccess)
    return clattn__fail(ctx, CLATTN_ERR_CLBLAST,
                        "CLBlastOverrideParameters(GemmRoutine, "
                        "XGEMM_MIN_INDIRECT_SIZE=%zu) failed: %s (%d)",
                        size, clattn__clblast_status_str(s), (int)s);
  return CLATTN_OK;
}

static clattn_status check_args(clattn_ctx *ctx, int m, int n, int k) {
  if (m <= 0 || n <= 0 || k <= 0)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "clattn_tune_gemm: m %d, n %d, k %d must be positive",
                        m, n, k);
  return CLATTN_OK;
}

clattn_status clattn__xgemm_eval(clattn_ctx *ctx, int m, int n, int k,
                                 const int *values, int repeats,
                                 clattn_tune_entry *e) {
  clattn_status rc = clattn__ctx_check(ctx), rc2;
  xgemm_tuner t;
  if (rc != CLATTN_OK)
    return rc;
  if (values == NULL || e == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "clattn__xgemm_eval: NULL values or entry");
  CLATTN_TRY(check_args(ctx, m, n, k));
  CLATTN_TRY(tuner_init(ctx, NULL, m, n, k, &t));
  rc = force_indirect(ctx, m, n, k);
  if (rc == CLATTN_OK)
    rc = xg_eval(&t, values, 0.0, 0.0, repeats, e);
  rc2 = clattn__gemm_restore(ctx, NULL);
  if (rc == CLATTN_OK)
    rc = rc2;
  tuner_free(&t);
done:
  return rc;
}

static clattn_status tune_gemm_unlocked(clattn_ctx *ctx, clattn_db *db, int m,
                                        int n, int k,
                                        const clattn_tune_opts *opts,
                                        clattn_tune_result *out) {
  const double started = clattn__now(); /* the setup counts too */
  clattn_status rc = clattn__ctx_check(ctx), rc2;
  clattn__space space;
  clattn__tune_family fam;
  clattn_tune_entry fp;
  clattn_tune_opts o;
  clattn_tune_result local;
  xgemm_tuner t;

  if (rc != CLATTN_OK)
    return rc;
  if (out == NULL)
    out = &local;
  memset(out, 0, sizeof *out);
  if (db == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "clattn_tune_gemm: NULL database");
  CLATTN_TRY(check_args(ctx, m, n, k));
  memset(&o, 0, sizeof o);
  if (opts != NULL)
    o = *opts;
  /* A candidate's first call builds CLBlast's whole GEMM program, which
   * on PoCL with a cold cache outlasts the engine's 10 s default, so that
   * default would reject every candidate. */
  if (o.timeout_s <= 0)
    o.timeout_s = 120.0;
  memset(&fp, 0, sizeof fp);
  CLATTN_TRY(clattn__tune_identity(ctx, &fp));
  CLATTN_TRY(clattn__xgemm_space(ctx, &space));
  rc = tuner_init(ctx, db, m, n, k, &t);
  if (rc != CLATTN_OK) {
    clattn__space_free(&space);
    return rc;
  }
  memset(&fam, 0, sizeof fam);
  fam.started = started;
  fam.kernel = CLATTN_XGEMM_KERNEL;
  snprintf(fam.shape_class, sizeof fam.shape_class, "m%d n%d k%d", m, n, k);
  fam.self = &t;
  fam.eval = xg_eval;
  fam.predict = xg_predict;
  rc = force_indirect(ctx, m, n, k);
  if (rc == CLATTN_OK)
    rc = clattn__tune_run(ctx, db, &space, &fam, &fp, &o, out);
  /* Leave CLBlast in a defined state whatever happened. */
  rc2 = clattn__gemm_restore(ctx, db);
  if (rc == CLATTN_OK)
    rc = rc2;
  tuner_free(&t);
  clattn__space_free(&space);
done:
  return rc;
}

static clattn_status tune_gemm_run(clattn_ctx *ctx, const clattn__tune_call *c,
                                   const clattn_tune_opts *opts,
                                   clattn_tune_result *out) {
  return tune_gemm_unlocked(ctx, c->db, c->m, c->n, c->k, opts, out);
}

clattn_status clattn_tune_gemm(clattn_ctx *ctx, clattn_db *db, int m, int n,
                               int k, const clattn_tune_opts *opts,
                               clattn_tune_result *out) {
  const clattn__tune_call c = {
      .run = tune_gemm_run, .db = db, .m = m, .n = n, .k = k};
  return clattn__tune_public(ctx, &c, opts, out);
}
