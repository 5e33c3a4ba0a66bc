/* harness.c - how the tuner measures any kernel family's candidate, from
 * the family's buffer specs alone (family.h): clattn_tune_attention,
 * clattn_tune_decode and `clattn tune FAMILY`.
 *
 * Evaluation: the candidate runs through the generic call path (the
 * library's own launch path), first on the family's small check case
 * against its plain-C reference (double accumulation), then it is timed on
 * the call's shape: a warm-up, then `repeats` runs, median kept.  Buffers
 * the family marks cold (a decode's K/V cache) are rotated over copies
 * larger than twice the device's global-memory cache, one rotation shared
 * by all candidates, so each call reads cold data; a run is the call on up
 * to 8 consecutive copies, enqueued back to back and finished once (see
 * timed_run).  The bench (bench.c) measures the library's choice and its
 * baselines with the same harness (clattn__harness_*, tune.h). */
#include "base/stats.h"
#include "device/profile.h"
#include "base/tolerance.h"
#include "call/call.h"
#include "choice/choice.h"
#include "reference/ref.h"
#include "tune/tune.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_COPIES = 64, NB = CLATTN__MAX_BUFS };

typedef struct clattn__harness {
  clattn_ctx *ctx;
  const clattn__family *F;
  _Alignas(16) unsigned char desc[CLATTN__DESC_MAX]; /* the call */
  clattn__check_case small;
  clattn__buf_spec spec[NB], sspec[NB];
  int copies, next; /* copies of the cold buffers; the next one to read */
  cl_mem buf[MAX_COPIES][NB]; /* the call's: [0] all, [i > 0] cold ones */
  cl_mem sbuf[NB];            /* the small check's */
  void *shost[NB];            /* its host data; outputs: the reference's */
  void *sinit[NB];            /* INOUT: the stored form before the call */
  void *sraw;                 /* a device output read back, raw */
  float *sgot;                /* ... as float */
  clattn_profile prof;        /* the model's: prof0 scaled to the bandwidth of
                                 the moment (refresh) */
  clattn_profile prof0;       /* as stored */
  int has_prof;
  clattn_copy_ref *ref; /* the bandwidth reference of cold families */
} harness;

static int has_cold(const harness *H) {
  for (int i = 0; i < H->F->nbufs; i++)
    if (H->spec[i].cold)
      return 1;
  return 0;
}

static unsigned lcg(unsigned *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

/* Host data in [-1, 1), rounded to dtype (so the reference sees what the
 * kernel reads; int8: the integers -127 .. 127); raw gets the stored form;
 * x may be NULL. */
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
    } else if (dt == CLATTN_I8) {
      const int8_t q = (int8_t)lrintf(f * 127.0f);
      ((int8_t *)raw)[i] = q;
      f = (float)q;
    } else {
      ((float *)raw)[i] = f;
    }
    if (x)
      x[i] = f;
  }
}

static void to_float(const void *raw, float *x, size_t n, clattn_dtype dt) {
  for (size_t i = 0; i < n; i++)
    x[i] = dt == CLATTN_F16    ? ref_f16_to_f32(((const uint16_t *)raw)[i])
           : dt == CLATTN_BF16 ? ref_bf16_to_f32(((const uint16_t *)raw)[i])
           : dt == CLATTN_I8   ? (float)((const int8_t *)raw)[i]
                               : ((const float *)raw)[i];
}

/* A device buffer of spec b (buffer `index` of desc): random data for
 * inputs (host values to x if not NULL, the stored form kept in *keep if
 * not NULL), zeros for outputs, for INTS the family's fill_ints of ints[]
 * (or `fill_int` for every sequence), else ints[] itself. */
static clattn_status make_buffer(harness *H, const void *desc, int index,
                                 const clattn__buf_spec *b, const int *ints,
                                 int fill_int, unsigned *seed, void *x,
                                 void **keep, cl_mem *out) {
  clattn_ctx *ctx = H->ctx;
  clattn_status rc = CLATTN_OK;
  const size_t bytes = clattn__buf_bytes(b);
  void *raw = calloc(bytes ? bytes : 1, 1);
  cl_int err = CL_SUCCESS;
  if (raw == NULL || bytes == 0)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  if (b->role == CLATTN__BUF_INTS && H->F->fill_ints) {
    H->F->fill_ints(desc, index, ints, fill_int, raw);
    if (x)
      memcpy(x, raw, bytes);
  } else if (b->role == CLATTN__BUF_INTS) {
    for (size_t i = 0; i < b->elems; i++)
      ((int *)raw)[i] = ints ? ints[i] : fill_int;
    if (x)
      memcpy(x, raw, bytes);
  } else if (b->role != CLATTN__BUF_OUT) {
    fill(x, raw, b->elems, b->dtype, seed);
  }
  *out = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                        bytes, raw, &err);
  CLATTN_CL_RET(ctx, err, "clCreateBuffer");
  if (keep) {
    *keep = raw;
    raw = NULL;
  }
done:
  free(raw);
  return rc;
}

static void release(cl_mem *m) {
  if (*m)
    clReleaseMemObject(*m);
  *m = NULL;
}

static void harness_free(harness *H) {
  for (int c = 0; c < MAX_COPIES; c++)
    for (int i = 0; i < NB; i++)
      release(&H->buf[c][i]);
  for (int i = 0; i < NB; i++) {
    release(&H->sbuf[i]);
    free(H->shost[i]);
    free(H->sinit[i]);
  }
  clattn_copy_ref_destroy(H->ref);
  free(H->sraw);
  free(H->sgot);
}

/* The small check: its buffers, host data and the reference's outputs. */
static clattn_status setup_check(harness *H) {
  const clattn__family *F = H->F;
  unsigned seed = 12345u;
  size_t most = 1;
  F->check_case(H->desc, &H->small);
  F->buffers(H->small.desc, H->sspec);
  for (int i = 0; i < F->nbufs; i++) {
    const clattn__buf_spec *b = &H->sspec[i];
    const size_t each =
        b->role == CLATTN__BUF_INTS ? sizeof(int) : sizeof(float);
    H->shost[i] = calloc(b->elems ? b->elems : 1, each);
    if (H->shost[i] == NULL)
      return clattn__fail(H->ctx, CLATTN_ERR_NOMEM, "out of host memory");
    clattn_status rc = make_buffer(
        H, H->small.desc, i, b, H->small.ints, 0, &seed, H->shost[i],
        b->role == CLATTN__BUF_INOUT ? &H->sinit[i] : NULL, &H->sbuf[i]);
    if (rc)
      return rc;
    if (b->role == CLATTN__BUF_OUT || b->role == CLATTN__BUF_INOUT)
      most = b->elems > most ? b->elems : most;
  }
  H->sraw = malloc(most * sizeof(float));
  H->sgot = malloc(most * sizeof *H->sgot);
  if (!H->sraw || !H->sgot)
    return clattn__fail(H->ctx, CLATTN_ERR_NOMEM, "out of host memory");
  ref_out_of_memory = 0;
  F->reference(H->small.desc, H->shost);
  if (ref_out_of_memory)
    return clattn__fail(H->ctx, CLATTN_ERR_NOMEM,
                        "out of host memory for the plain-C reference");
  return CLATTN_OK;
}

/* The call's buffers; enough copies of the cold ones for cold caches. */
static clattn_status setup_call(harness *H) {
  const clattn__family *F = H->F;
  unsigned seed = 777u;
  double cold = 0;
  F->buffers(H->desc, H->spec);
  for (int i = 0; i < F->nbufs; i++)
    if (H->spec[i].cold)
      cold += (double)clattn__buf_bytes(&H->spec[i]);
  H->copies = 1;
  if (cold > 0) {
    double cache = (double)H->ctx->dev.global_cache;
    if (H->has_prof && H->prof.cache_bytes)
      cache = (double)H->prof.cache_bytes;
    H->copies = (int)ceil(2.0 * cache / cold) + 1;
    if (H->copies > MAX_COPIES)
      H->copies = MAX_COPIES;
    while (H->copies > 1 && cold * H->copies > 2e9)
      H->copies--;
  }
  const int full = F->full_int(H->desc);
  for (int c = 0; c < H->copies; c++)
    for (int i = 0; i < F->nbufs; i++) {
      const clattn__buf_spec *b = &H->spec[i];
      if ((c > 0 && !b->cold) || (b->role == CLATTN__BUF_INTS && b->optional))
        continue;
      clattn_status rc = make_buffer(H, H->desc, i, b, NULL, full, &seed, NULL,
                                     NULL, &H->buf[c][i]);
      if (rc)
        return rc;
    }
  return CLATTN_OK;
}

/* The call's buffers with copy `copy` of the cold ones. */
static void call_buffers(const harness *H, int copy, cl_mem *bufs) {
  for (int i = 0; i < H->F->nbufs; i++)
    bufs[i] = H->buf[H->spec[i].cold ? copy : 0][i];
}

/* One call with params p: the small check's (small 1) or the real one's
 * on copy `copy` of the cold buffers; finished when `finish`. */
static clattn_status call(harness *H, const clattn__params *p, int small,
                          int copy, int finish) {
  cl_mem bufs[NB];
  const clattn__family *F = H->F;
  const void *d = small ? H->small.desc : H->desc;
  if (small)
    memcpy(bufs, H->sbuf, sizeof bufs);
  else
    call_buffers(H, copy, bufs);
  clattn_status rc = clattn__call(H->ctx, F, d, p, bufs, NULL);
  if (rc == CLATTN_OK && finish) {
    cl_int err = clFinish(H->ctx->queue);
    if (err != CL_SUCCESS)
      rc = clattn__cl_fail(H->ctx, err, "clFinish", __FILE__, __LINE__);
  }
  return rc;
}

/* Largest error of the small check's outputs against the reference,
 * relative to the reference's largest magnitude per buffer (INFINITY for a
 * non-finite output), and the tolerance of that buffer's dtype (tol may be
 * NULL): the worst buffer is the one furthest over its own tolerance, since
 * a call's outputs may differ in storage (an int8 cache and float32
 * scales). */
static clattn_status check_error(harness *H, double *err_out, double *tol) {
  clattn_ctx *ctx = H->ctx;
  double worst = 0, worst_tol = clattn__tolerance(H->spec[0].dtype);
  for (int i = 0; i < H->F->nbufs; i++) {
    const clattn__buf_spec *b = &H->sspec[i];
    if (b->role != CLATTN__BUF_OUT && b->role != CLATTN__BUF_INOUT)
      continue;
    cl_int err =
        clEnqueueReadBuffer(ctx->queue, H->sbuf[i], CL_TRUE, 0,
                            clattn__buf_bytes(b), H->sraw, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      return clattn__cl_fail(ctx, err, "clEnqueueReadBuffer", __FILE__,
                             __LINE__);
    to_float(H->sraw, H->sgot, b->elems, b->dtype);
    const float *ref = H->shost[i];
    double num = 0, den = 1e-30;
    for (size_t j = 0; j < b->elems; j++) {
      if (!isfinite(H->sgot[j])) {
        num = INFINITY;
        break;
      }
      num = fmax(num, fabs((double)H->sgot[j] - (double)ref[j]));
      den = fmax(den, fabs((double)ref[j]));
    }
    const double t = clattn__tolerance(b->dtype);
    if (num / den / t > worst / worst_tol) {
      worst = num / den;
      worst_tol = t;
    }
  }
  *err_out = worst;
  if (tol)
    *tol = worst_tol;
  return CLATTN_OK;
}

/* Put the INOUT buffers of the small check back as they were, so every
 * candidate starts from the reference's input. */
static clattn_status reset_check(harness *H) {
  for (int i = 0; i < H->F->nbufs; i++) {
    if (H->sinit[i] == NULL)
      continue;
    cl_int err = clEnqueueWriteBuffer(H->ctx->queue, H->sbuf[i], CL_TRUE, 0,
                                      clattn__buf_bytes(&H->sspec[i]),
                                      H->sinit[i], 0, NULL, NULL);
    if (err != CL_SUCCESS)
      return clattn__cl_fail(H->ctx, err, "clEnqueueWriteBuffer", __FILE__,
                             __LINE__);
  }
  return CLATTN_OK;
}

/* One timed run on the call's shape: the call on the next STREAM copies
 * of the rotation (every copy when there are fewer), enqueued back to
 * back and finished once, as a model's layers are; *sec is the time per
 * call.  A clFinish after each call would add the queue's round trip to
 * every time and favour parameters with fewer launches over faster ones
 * (bench/RESULTS.md, tuner). */
enum { STREAM = 8 };

static clattn_status time_stream(harness *H, clattn__harness_run run,
                                 void *user, double *sec) {
  clattn_status rc = CLATTN_OK;
  cl_mem bufs[NB];
  const int n = H->copies < STREAM ? H->copies : STREAM;
  const double a = clattn__now();
  for (int i = 0; i < n && rc == CLATTN_OK; i++) {
    /* one rotation over every copy for all candidates: a copy is read
     * again only after all the others (more than twice the cache) */
    H->next = (H->next + 1) % H->copies;
    call_buffers(H, H->next, bufs);
    rc = run(user, bufs);
  }
  if (rc != CLATTN_OK) {
    clFinish(H->ctx->queue); /* drain what was enqueued; rc says why */
    return rc;
  }
  cl_int err = clFinish(H->ctx->queue);
  if (err != CL_SUCCESS)
    return clattn__cl_fail(H->ctx, err, "clFinish", __FILE__, __LINE__);
  *sec = (clattn__now() - a) / n;
  return CLATTN_OK;
}

/* The library's call with params p on bufs (a clattn__harness_run). */
typedef struct params_run {
  harness *H;
  const clattn__params *p;
} params_run;

static clattn_status run_params(void *user, const cl_mem *bufs) {
  const params_run *r = user;
  return clattn__call(r->H->ctx, r->H->F, r->H->desc, r->p, bufs, NULL);
}

static clattn_status timed_run(harness *H, const clattn__params *p,
                               double *sec) {
  params_run r = {H, p};
  return time_stream(H, run_params, &r, sec);
}

static void reject(clattn_tune_entry *e, const char *status, const char *msg) {
  snprintf(e->status, sizeof e->status, "%s", status);
  snprintf(e->message, sizeof e->message, "%s", msg);
}

static clattn_status eval(void *self, const int *values, double best_s,
                          double timeout_s, int repeats, clattn_tune_entry *e) {
  harness *H = self;
  const clattn__params p = clattn__params_of(H->F, values);
  const double t0 = clattn__now();
  clattn_status rc;
  /* 1. correct on the small input? */
  if ((rc = reset_check(H)))
    return rc;
  if ((rc = call(H, &p, 1, 0, 1)) != CLATTN_OK) {
    if (rc == CLATTN_ERR_NOMEM)
      return rc;
    reject(e, "failed", clattn_ctx_errmsg(H->ctx));
    return CLATTN_OK;
  }
  double tol = 0;
  if ((rc = check_error(H, &e->max_err, &tol)))
    return rc;
  if (!(e->max_err <= tol)) {
    char msg[128];
    snprintf(msg, sizeof msg,
             "relative error %.3g against the reference (tolerance %.3g)",
             e->max_err, tol);
    reject(e, "wrong", msg);
    return CLATTN_OK;
  }
  /* 2. time it on the call's shape */
  if ((rc = call(H, &p, 0, 0, 1)) != CLATTN_OK) {
    if (rc == CLATTN_ERR_NOMEM)
      return rc;
    reject(e, "failed", clattn_ctx_errmsg(H->ctx));
    return CLATTN_OK;
  }
  double t[64];
  int n = repeats < 64 ? repeats : 64;
  int done = 0;
  for (int r = 0; r < n; r++) {
    if ((rc = timed_run(H, &p, &t[done])) != CLATTN_OK) {
      reject(e, "failed", clattn_ctx_errmsg(H->ctx));
      return CLATTN_OK;
    }
    done++;
    if (clattn__now() - t0 > timeout_s) {
      char msg[96];
      snprintf(msg, sizeof msg, "over the %.3g s candidate timeout", timeout_s);
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
  e->median_s = clattn__median(t, done);
  e->spread = (t[done - 1] - t[0]) / e->median_s;
  snprintf(e->status, sizeof e->status, "ok");
  return CLATTN_OK;
}

static int predict(void *self, const int *values, double *t_pred,
                   double *t_roof) {
  harness *H = self;
  const clattn__params p = clattn__params_of(H->F, values);
  if (!H->has_prof)
    return 0;
  return clattn__predict(H->F, H->desc, &p, &H->prof, t_pred, t_roof);
}

/* A cold family's bandwidth of the moment: the best of three launches of
 * the probe's copy kernel (buffers of at least the profile's last-level
 * cache, 64 MiB or more), and the stored profile scaled to it.  The
 * search's roofline stop compares measurements taken now with the
 * profile's bound, and a shared machine's bandwidth drifts: a profile of a
 * slower moment would stop the search early.  A failure to time leaves
 * the profile as it was. */
static int refresh(void *self) {
  harness *H = self;
  if (!has_cold(H) || !H->has_prof || !(H->prof0.bw_copy_gbs > 0))
    return 0;
  if (H->ref == NULL) {
    size_t bytes = (size_t)64 << 20;
    if (H->prof0.cache_bytes > bytes)
      bytes = (size_t)H->prof0.cache_bytes / 64 * 64;
    if (clattn_copy_ref_create(H->ctx, bytes, &H->ref) != CLATTN_OK) {
      H->ref = NULL;
      return 0;
    }
  }
  double best = 0.0;
  for (int r = 0; r < 3; r++) {
    double g = 0.0;
    if (clattn_copy_ref_run(H->ref, &g) != CLATTN_OK)
      return 0;
    if (g > best)
      best = g;
  }
  H->prof = H->prof0;
  clattn__profile_at_copy(&H->prof, best);
  return 1;
}

/* One timed run of a candidate on the call's shape (timed_run). */
static double time1(void *self, const int *values) {
  harness *H = self;
  const clattn__params p = clattn__params_of(H->F, values);
  double t = -1.0;
  return timed_run(H, &p, &t) == CLATTN_OK ? t : -1.0;
}

/* Check ctx and the call (valid with automatic params) and set up H. */
static clattn_status begin(clattn_ctx *ctx, const clattn__family *F,
                           const void *desc, harness *H) {
  clattn__choice ch;
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  ctx->errmsg[0] = '\0';
  memset(H, 0, sizeof *H);
  H->ctx = ctx;
  H->F = F;
  if (desc == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "desc is NULL");
  /* the tuner's candidates replace the caller's params (the public
   * boundary dropped them) */
  memcpy(H->desc, desc, F->desc_size);
  return clattn__explain(ctx, F, H->desc, NULL, &ch);
}

static clattn_status tune_unlocked(clattn_ctx *ctx, clattn_db *db,
                                   const clattn__family *F, const void *desc,
                                   const clattn_tune_opts *opts,
                                   clattn_tune_result *out) {
  const double started = clattn__now(); /* the setup counts too */
  harness H;
  clattn__space s;
  clattn__tune_family fam;
  clattn_tune_entry id;
  clattn_profile prof;
  clattn_status rc = begin(ctx, F, desc, &H);
  memset(&s, 0, sizeof s);
  memset(&fam, 0, sizeof fam);
  fam.started = started;
  if (rc)
    goto done;
  if (db == NULL || out == NULL) {
    rc = clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "db or out is NULL");
    goto done;
  }
  memset(out, 0, sizeof *out);
  /* begin's explain settled the context's GEMMs (clattn__choice_target) */
  const clattn__target t = clattn__ctx_target(ctx);
  rc = clattn__profile_for(ctx, db, &prof);
  if (rc == CLATTN_ERR_NOMEM)
    goto done;
  if (rc == CLATTN_OK && prof.fp32_gflops > 0 && prof.bw_read_gbs > 0) {
    H.prof = H.prof0 = prof;
    H.has_prof = 1;
  }
  CLATTN_TRY(clattn__tune_identity(ctx, &id));
  if ((rc = F->space(&t, H.desc, &s))) {
    rc = clattn__fail(ctx, rc, "out of host memory");
    goto done;
  }
  CLATTN_TRY(setup_check(&H));
  CLATTN_TRY(setup_call(&H));
  fam.kernel = F->name;
  F->shape_class(H.desc, fam.shape_class, sizeof fam.shape_class);
  fam.self = &H;
  fam.eval = eval;
  fam.predict = predict;
  fam.refresh = refresh;
  fam.time1 = time1;
  rc = clattn__tune_run(ctx, db, &s, &fam, &id, opts, out);
  /* later calls on ctx see the new entries */
  clattn__choice_reload(ctx);
done:
  clattn__space_free(&s);
  harness_free(&H);
  return rc;
}

clattn_status clattn_tune_attention(clattn_ctx *ctx, clattn_db *db,
                                    const clattn_attn_desc *d,
                                    const clattn_tune_opts *opts,
                                    clattn_tune_result *out) {
  clattn__public_args own;
  const void *desc = d;
  const clattn__family *F = &clattn__family_prefill;
  clattn_status rc =
      clattn__ctx_args_in(ctx, &own, F, "clattn_attn_desc", &desc, sizeof *d,
                          (long)offsetof(clattn_attn_desc, params), NULL);
  if (rc)
    return rc;
  return clattn__tune(ctx, db, F, desc, opts, out);
}

clattn_status clattn_tune_decode(clattn_ctx *ctx, clattn_db *db,
                                 const clattn_decode_desc *d,
                                 const clattn_tune_opts *opts,
                                 clattn_tune_result *out) {
  clattn__public_args own;
  const void *desc = d;
  const clattn__family *F = &clattn__family_decode;
  clattn_status rc =
      clattn__ctx_args_in(ctx, &own, F, "clattn_decode_desc", &desc, sizeof *d,
                          (long)offsetof(clattn_decode_desc, params), NULL);
  if (rc)
    return rc;
  return clattn__tune(ctx, db, F, desc, opts, out);
}

static clattn_status tune_run(clattn_ctx *ctx, const clattn__tune_call *c,
                              const clattn_tune_opts *opts,
                              clattn_tune_result *out) {
  return tune_unlocked(ctx, c->db, c->F, c->desc, opts, out);
}

clattn_status clattn__tune(clattn_ctx *ctx, clattn_db *db,
                           const clattn__family *F, const void *desc,
                           const clattn_tune_opts *opts,
                           clattn_tune_result *out) {
  const clattn__tune_call c = {.run = tune_run, .db = db, .F = F, .desc = desc};
  return clattn__tune_public(ctx, &c, opts, out);
}

/* ------------------------------------------------ the bench's harness */

clattn_status clattn__harness_open(clattn_ctx *ctx, const clattn__family *F,
                                   const void *desc, const clattn_profile *prof,
                                   clattn__harness **out) {
  clattn_status rc = CLATTN_OK;
  harness *H = calloc(1, sizeof *H);
  *out = NULL;
  if (H == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  H->ctx = ctx;
  H->F = F;
  memcpy(H->desc, desc, F->desc_size);
  if (prof && prof->fp32_gflops > 0 && prof->bw_read_gbs > 0) {
    H->prof = H->prof0 = *prof;
    H->has_prof = 1;
  }
  CLATTN_TRY(setup_check(H));
  CLATTN_TRY(setup_call(H));
  *out = H;
  return CLATTN_OK;
done:
  clattn__harness_close(H);
  return rc;
}

void clattn__harness_close(clattn__harness *H) {
  if (H == NULL)
    return;
  harness_free(H);
  free(H);
}

clattn_status clattn__harness_check(clattn__harness *H, const clattn__params *p,
                                    double *max_err) {
  clattn_status rc;
  if ((rc = reset_check(H)) || (rc = call(H, p, 1, 0, 1)))
    return rc;
  return check_error(H, max_err, NULL);
}

clattn_status clattn__harness_time(clattn__harness *H, clattn__harness_run run,
                                   void *user, double *sec) {
  return time_stream(H, run, user, sec);
}

clattn_status clattn__harness_time_params(clattn__harness *H,
                                          const clattn__params *p,
                                          double *sec) {
  return timed_run(H, p, sec);
}

clattn_status clattn__harness_run_params(clattn__harness *H,
                                         const clattn__params *p,
                                         const cl_mem *bufs) {
  params_run r = {H, p};
  return run_params(&r, bufs);
}

size_t clattn__harness_out_elems(const clattn__harness *H) {
  size_t n = 0;
  for (int i = 0; i < H->F->nbufs; i++)
    if (H->spec[i].role == CLATTN__BUF_OUT)
      n += H->spec[i].elems;
  return n;
}

clattn_status clattn__harness_output(clattn__harness *H,
                                     clattn__harness_run run, void *user,
                                     float *out) {
  clattn_ctx *ctx = H->ctx;
  cl_mem bufs[NB];
  clattn_status rc;
  call_buffers(H, 0, bufs);
  if ((rc = run(user, bufs)) != CLATTN_OK) {
    clFinish(ctx->queue);
    return rc;
  }
  for (int i = 0; i < H->F->nbufs; i++) {
    const clattn__buf_spec *b = &H->spec[i];
    if (b->role != CLATTN__BUF_OUT)
      continue;
    const size_t bytes = clattn__buf_bytes(b);
    void *raw = malloc(bytes ? bytes : 1);
    if (raw == NULL)
      return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
    cl_int err = clEnqueueReadBuffer(ctx->queue, bufs[i], CL_TRUE, 0, bytes,
                                     raw, 0, NULL, NULL);
    if (err == CL_SUCCESS)
      to_float(raw, out, b->elems, b->dtype);
    free(raw);
    if (err != CL_SUCCESS)
      return clattn__cl_fail(ctx, err, "clEnqueueReadBuffer", __FILE__,
                             __LINE__);
    out += b->elems;
  }
  return CLATTN_OK;
}

size_t clattn__harness_cache_bytes(const clattn__harness *H) {
  if (H->has_prof && H->prof.cache_bytes)
    return (size_t)H->prof.cache_bytes;
  return (size_t)H->ctx->dev.global_cache;
}
