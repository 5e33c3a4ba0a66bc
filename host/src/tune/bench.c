/* bench.c - clattn_bench_shape: one call of a family, given as shape text,
 * timed with the library's choice (as a user's call makes it) and with the
 * family's baselines on the same buffers of the tuner's harness
 * (harness.c), in interleaved rounds so that a drift of the machine's
 * bandwidth hits every implementation alike; the model's prediction of the
 * chosen plan beside it; the rows stored in the database together, only
 * when every implementation was measured.
 *
 * "copy", every family's baseline, is the probe's copy kernel
 * (clattn_copy_ref) moving the call's compulsory bytes (half read, half
 * written; at least 1 MiB each way), over buffers rotated past the
 * last-level cache like the call's cold inputs: the floor of a
 * memory-bound kernel measured in the same run.  A family's own baselines
 * (clattn__baseline, family.h) run on the call's buffers, and their error
 * is taken against the library's output on the same inputs. */
#include "base/stats.h"
#include "base/versioned.h"
#include "choice/choice.h"
#include "device/profile.h"
#include "base/tolerance.h"
#include "call/call.h"
#include "db/db.h"
#include "tune/tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  DEFAULT_REPEATS = 7,
  SLOW_REPEATS = 3, /* the default for a call longer than SLOW_CALL_S */
  MAX_REPEATS = 1000,
  MAX_COPY_REFS = 64,
  MAX_IMPLS = CLATTN_BENCH_MAX_IMPLS
};

#define SLOW_CALL_S 0.25

/* The copy baseline: copy references rotated past the cache. */
typedef struct copy_base {
  clattn_copy_ref *ref[MAX_COPY_REFS];
  int n, next;
  size_t bytes; /* each way, per reference */
} copy_base;

/* A family baseline's state and its enqueue on the harness's buffers. */
typedef struct family_base {
  clattn_ctx *ctx;
  const void *desc;
  const clattn__baseline *b;
  void *state;
} family_base;

/* One implementation timed: clattn (index 0), a family baseline or copy. */
typedef struct impl {
  const char *name;
  family_base fam; /* fam.b NULL: clattn or copy */
  int is_copy;
  double *t;
} impl;

static clattn_status run_family_base(void *user, const cl_mem *bufs) {
  family_base *f = user;
  return f->b->enqueue(f->ctx, f->desc, f->state, bufs);
}

typedef struct clattn_run {
  clattn__harness *H;
} clattn_run;

static clattn_status run_clattn(void *user, const cl_mem *bufs) {
  clattn_run *r = user;
  return clattn__harness_run_params(r->H, NULL, bufs);
}

static void copy_free(copy_base *c) {
  for (int i = 0; i < c->n; i++)
    clattn_copy_ref_destroy(c->ref[i]);
  c->n = 0;
}

/* References enough for compulsory bytes moved cold: their buffers
 * together more than twice the cache (at most 2 GB). */
static clattn_status copy_setup(clattn_ctx *ctx, double compulsory,
                                size_t cache, copy_base *c) {
  size_t bytes = (size_t)(compulsory / 2.0);
  bytes = (bytes + 63) / 64 * 64;
  if (bytes < ((size_t)1 << 20))
    bytes = (size_t)1 << 20;
  c->bytes = bytes;
  int n = (int)ceil(2.0 * (double)cache / (2.0 * (double)bytes)) + 1;
  if (n > MAX_COPY_REFS)
    n = MAX_COPY_REFS;
  while (n > 1 && 2.0 * (double)bytes * n > 2e9)
    n--;
  for (c->n = 0; c->n < n;) {
    double gbs;
    clattn_status rc = clattn_copy_ref_create(ctx, bytes, &c->ref[c->n]);
    if (rc != CLATTN_OK)
      return rc;
    c->n++;
    /* a first launch writes pages never touched (page faults, not
     * bandwidth), and the rotation reaches each reference once a round */
    if ((rc = clattn_copy_ref_run(c->ref[c->n - 1], &gbs)) != CLATTN_OK)
      return rc;
  }
  return CLATTN_OK;
}

/* One launch of the next reference: its time in seconds. */
static clattn_status copy_time(copy_base *c, double *sec) {
  double gbs = 0;
  c->next = (c->next + 1) % c->n;
  clattn_status rc = clattn_copy_ref_run(c->ref[c->next], &gbs);
  if (rc != CLATTN_OK)
    return rc;
  *sec = 2.0 * (double)c->bytes / (gbs > 0 ? gbs * 1e9 : 1e-30);
  return CLATTN_OK;
}

/* One timed run of implementation m. */
static clattn_status time_impl(clattn__harness *H, impl *m, copy_base *c,
                               double *sec) {
  if (m->is_copy)
    return copy_time(c, sec);
  if (m->fam.b)
    return clattn__harness_time(H, run_family_base, &m->fam, sec);
  return clattn__harness_time_params(H, NULL, sec);
}

/* Largest |got - want| relative to want's largest magnitude. */
static double rel_error(const float *got, const float *want, size_t n) {
  double num = 0, den = 1e-30;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(got[i]))
      return INFINITY;
    num = fmax(num, fabs((double)got[i] - (double)want[i]));
    den = fmax(den, fabs((double)want[i]));
  }
  return num / den;
}

static const char *bound_str(clattn_bound b) {
  return b == CLATTN_BOUND_MEMORY    ? "memory"
         : b == CLATTN_BOUND_COMPUTE ? "compute"
                                     : "launch";
}

/* Finite and >= 0, else 0 (a prediction the model could not make). */
static double time_or_zero(double t) { return isfinite(t) && t > 0 ? t : 0; }

typedef struct bench {
  clattn_ctx *ctx;
  const clattn__family *F;
  _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
  clattn__harness *H;
  copy_base copy;
  impl m[MAX_IMPLS];
  int n;
  float *want, *got;
} bench;

static void bench_free(bench *B) {
  for (int i = 0; i < B->n; i++) {
    if (B->m[i].fam.b && B->m[i].fam.b->destroy)
      B->m[i].fam.b->destroy(B->m[i].fam.state);
    free(B->m[i].t);
  }
  copy_free(&B->copy);
  clattn__harness_close(B->H);
  free(B->want);
  free(B->got);
}

/* The family's baselines that can compute the call, then copy. */
static clattn_status add_baselines(bench *B, double compulsory) {
  clattn_ctx *ctx = B->ctx;
  clattn_status rc;
  for (int i = 0; B->F->baselines && B->F->baselines[i]; i++) {
    const clattn__baseline *b = B->F->baselines[i];
    void *state = NULL;
    if (B->n >= MAX_IMPLS - 1)
      break; /* room for copy */
    rc = b->create(ctx, B->desc, &state);
    if (rc == CLATTN_ERR_UNSUPPORTED) {
      ctx->errmsg[0] = '\0';
      continue;
    }
    if (rc != CLATTN_OK)
      return rc;
    impl *m = &B->m[B->n++];
    m->name = b->name;
    m->fam = (family_base){ctx, B->desc, b, state};
  }
  rc = copy_setup(ctx, compulsory, clattn__harness_cache_bytes(B->H), &B->copy);
  if (rc != CLATTN_OK)
    return rc;
  B->m[B->n].name = "copy";
  B->m[B->n++].is_copy = 1;
  return CLATTN_OK;
}

/* The baselines' errors against the library's output on the same inputs
 * (copy: 0). */
static clattn_status baseline_errors(bench *B, double *err) {
  const size_t n = clattn__harness_out_elems(B->H);
  clattn_run cr = {B->H};
  clattn_status rc;
  for (int i = 1; i < B->n; i++)
    err[i] = 0;
  if (B->n < 2 || (B->n == 2 && B->m[1].is_copy) || n == 0)
    return CLATTN_OK;
  B->want = malloc(n * sizeof *B->want);
  B->got = malloc(n * sizeof *B->got);
  if (B->want == NULL || B->got == NULL)
    return clattn__fail(B->ctx, CLATTN_ERR_NOMEM, "out of host memory");
  if ((rc = clattn__harness_output(B->H, run_clattn, &cr, B->want)))
    return rc;
  for (int i = 1; i < B->n; i++) {
    if (B->m[i].is_copy)
      continue;
    if ((rc = clattn__harness_output(B->H, run_family_base, &B->m[i].fam,
                                     B->got)))
      return rc;
    err[i] = rel_error(B->got, B->want, n);
  }
  return CLATTN_OK;
}

/* What one bench of a shape measured: rows[0] is clattn's, the rest the
 * family's baselines. */
typedef struct bench_result {
  clattn_bench_entry rows[CLATTN_BENCH_MAX_IMPLS];
  int n;
} bench_result;

/* Store the rows in one transaction: all or none. */
static clattn_status store(clattn_ctx *ctx, clattn_db *db,
                           const bench_result *r) {
  clattn_status rc = clattn__db_begin(db);
  for (int i = 0; rc == CLATTN_OK && i < r->n; i++)
    rc = clattn__db_put_bench(db, &r->rows[i]);
  if (rc == CLATTN_OK)
    rc = clattn__db_commit(db);
  if (rc != CLATTN_OK) {
    clattn__db_rollback(db);
    return clattn__fail(ctx, rc, "storing the bench rows: %s",
                        clattn_db_errmsg(db));
  }
  return CLATTN_OK;
}

static clattn_status bench_unlocked(clattn_ctx *ctx, clattn_db *db,
                                    const char *family, const char *shape,
                                    const clattn_bench_opts *opts,
                                    bench_result *out) {
  bench B;
  clattn__choice ch;
  clattn_profile prof;
  clattn_tune_entry id;
  clattn_prediction pred;
  char why[256], run[sizeof out->rows[0].run];
  double err[MAX_IMPLS] = {0};
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  ctx->errmsg[0] = '\0';
  memset(&B, 0, sizeof B);
  if (out == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "out is NULL");
  memset(out, 0, sizeof *out);
  int repeats = opts && opts->repeats ? opts->repeats : DEFAULT_REPEATS;
  if (repeats < 1 || repeats > MAX_REPEATS)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "repeats %d out of range (1 .. %d; 0: %d)", repeats,
                        MAX_REPEATS, DEFAULT_REPEATS);
  if (opts && opts->run) {
    if (!opts->run[0] || strlen(opts->run) >= sizeof run ||
        clattn__text_check(opts->run, strlen(opts->run), 0) != NULL)
      return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                          "run name \"%.60s\": 1 to %zu characters of UTF-8 "
                          "text without control characters",
                          opts->run, sizeof run - 1);
    snprintf(run, sizeof run, "%s", opts->run);
  } else {
    clattn__bench_run_name(run, sizeof run);
  }
  clattn__params none;
  if ((rc = clattn__shape_parse(family, shape, NULL, &B.F, B.desc, &none, why,
                                sizeof why)))
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "%s", why);
  /* the rows hold the shape text as given */
  if (strlen(shape) >= sizeof out->rows[0].shape)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "shape text of %zu characters (at most %zu)",
                        strlen(shape), sizeof out->rows[0].shape - 1);
  B.ctx = ctx;
  /* the call's own checks, before any buffer is allocated */
  if ((rc = clattn__explain(ctx, B.F, B.desc, NULL, &ch)))
    return rc;
  rc = clattn__profile_for(ctx, db, &prof);
  if (rc == CLATTN_ERR_NOMEM)
    return rc;
  const int has_prof =
      rc == CLATTN_OK && prof.fp32_gflops > 0 && prof.bw_read_gbs > 0;
  ctx->errmsg[0] = '\0';
  CLATTN_TRY(clattn__tune_identity(ctx, &id));
  CLATTN_TRY(
      clattn__harness_open(ctx, B.F, B.desc, has_prof ? &prof : NULL, &B.H));
  B.m[0].name = "clattn";
  B.n = 1;

  /* the library's call as a user's: warm (kernels built), then its
   * choice as it ran */
  double t0;
  CLATTN_TRY(clattn__harness_time_params(B.H, NULL, &t0));
  const clattn__thread_slot *mine = clattn__ctx_thread_slot(ctx);
  if (mine == NULL || !mine->has_last)
    CLATTN_TRY(clattn__fail(ctx, CLATTN_ERR_NOMEM,
                            "the call's choice was "
                            "not recorded"));
  clattn__memo_last(mine, &ch);
  /* a call of seconds (a slow device) varies little against its length,
   * and seven rounds of every implementation would take minutes */
  if (!(opts && opts->repeats) && t0 > SLOW_CALL_S)
    repeats = SLOW_REPEATS;
  /* the model's prediction of that plan */
  memset(&pred, 0, sizeof pred);
  if (has_prof)
    rc = clattn__model(B.F, B.desc, &ch.resolved, NULL, &prof, &pred);
  else {
    clattn_profile rep;
    rc = clattn__profile_reported(ctx, &rep);
    if (rc == CLATTN_OK)
      rc = clattn__model(B.F, B.desc, &ch.resolved, NULL, &rep, &pred);
  }
  if (rc != CLATTN_OK) {
    rc = clattn__fail(ctx, rc, "the model of the chosen plan: %s", pred.errmsg);
    goto done;
  }
  /* its error on the check case, with the chosen plan's params (the
   * automatic choice where they do not fit the small case) */
  if (clattn__harness_check(B.H, &ch.resolved, &err[0]) != CLATTN_OK)
    CLATTN_TRY(clattn__harness_check(B.H, NULL, &err[0]));
  ctx->errmsg[0] = '\0';

  const int baselines = !(opts && opts->no_baselines);
  if (baselines) {
    double compulsory = pred.total.bytes_compulsory;
    if (!(compulsory > 0))
      compulsory = pred.total.bytes_dram;
    CLATTN_TRY(add_baselines(&B, compulsory));
  }
  for (int i = 0; i < B.n; i++) {
    B.m[i].t = calloc((size_t)repeats, sizeof *B.m[i].t);
    if (B.m[i].t == NULL) {
      rc = clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
      goto done;
    }
    double warm;
    if (i > 0)
      CLATTN_TRY(time_impl(B.H, &B.m[i], &B.copy, &warm));
  }
  /* interleaved rounds */
  for (int r = 0; r < repeats; r++)
    for (int i = 0; i < B.n; i++)
      CLATTN_TRY(time_impl(B.H, &B.m[i], &B.copy, &B.m[i].t[r]));
  CLATTN_TRY(baseline_errors(&B, err));

  for (int i = 0; i < B.n; i++) {
    clattn_bench_entry *e = &out->rows[i];
    const impl *m = &B.m[i];
    snprintf(e->fingerprint, sizeof e->fingerprint, "%s", id.fingerprint);
    snprintf(e->device, sizeof e->device, "%s", id.device);
    snprintf(e->vendor, sizeof e->vendor, "%s", id.vendor);
    snprintf(e->arch, sizeof e->arch, "%s", id.arch);
    snprintf(e->driver, sizeof e->driver, "%s", id.driver);
    snprintf(e->family, sizeof e->family, "%s", B.F->name);
    snprintf(e->shape, sizeof e->shape, "%s", shape);
    B.F->shape_class(B.desc, e->shape_class, sizeof e->shape_class);
    snprintf(e->impl, sizeof e->impl, "%s", m->name);
    e->median_s = clattn__median(m->t, repeats); /* sorts t */
    e->spread =
        e->median_s > 0 ? (m->t[repeats - 1] - m->t[0]) / e->median_s : 0;
    e->max_err = err[i];
    snprintf(e->run, sizeof e->run, "%s", run);
    snprintf(e->library_version, sizeof e->library_version, "%s",
             clattn_version());
    clattn__db_iso_now(e->updated, sizeof e->updated);
    if (m->is_copy) {
      e->bytes = 2.0 * (double)B.copy.bytes;
      e->roof_s = has_prof && prof.bw_copy_gbs > 0
                      ? e->bytes / (prof.bw_copy_gbs * 1e9)
                      : 0;
      snprintf(e->bound, sizeof e->bound, "memory");
      continue;
    }
    /* the same call: the work of the library's call */
    e->flops = pred.total.flops;
    e->bytes = pred.total.bytes_dram;
    if (has_prof) {
      e->roof_s = time_or_zero(fmax(pred.total.t_memory, pred.total.t_compute));
      snprintf(e->bound, sizeof e->bound, "%s", bound_str(pred.total.bound));
    }
    if (i == 0) {
      clattn__params_format(B.F, &ch.resolved, e->params, sizeof e->params);
      snprintf(e->params_source, sizeof e->params_source, "%s",
               clattn_choice_source_str(ch.source));
      snprintf(e->params_device, sizeof e->params_device, "%s",
               ch.entry_device);
      if (has_prof)
        e->predicted_s = time_or_zero(pred.total.t_pred);
    }
  }
  out->n = B.n;
  if (db && !(opts && opts->no_store))
    CLATTN_TRY(store(ctx, db, out));
done:
  bench_free(&B);
  if (rc != CLATTN_OK)
    out->n = 0;
  return rc;
}

clattn_status clattn_bench_shape(clattn_ctx *ctx, clattn_db *db,
                                 const char *family, const char *shape,
                                 const clattn_bench_opts *opts, size_t row_size,
                                 clattn_bench_entry *rows, int *n) {
  clattn_bench_opts own_opts;
  bench_result out;
  char why[256];
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  if (rows == NULL || n == NULL || row_size < sizeof(size_t))
    return clattn__fail_outside(ctx, CLATTN_ERR_INVALID_ARG,
                                "rows or n is NULL, or row_size below "
                                "sizeof(size_t)");
  if ((rc = clattn__struct_in_ptr((const void **)&opts, &own_opts,
                                  sizeof own_opts, "clattn_bench_opts", why,
                                  sizeof why)))
    return clattn__fail_outside(ctx, rc, why);
  memset(&out, 0, sizeof out);
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  rc = bench_unlocked(ctx, db, family, shape, opts, &out);
  clattn__ctx_leave(locked);
  *n = out.n;
  for (int i = 0; i < out.n; i++) {
    void *row = (unsigned char *)rows + (size_t)i * row_size;
    memcpy(row, &row_size, sizeof row_size);
    clattn__struct_out(row, &out.rows[i], sizeof out.rows[i],
                       "clattn_bench_entry", why, sizeof why);
  }
  return rc;
}
