/* test_tune.c - the autotuner and the run-time parameter choice.
 *
 *  - spaces: every candidate of the prefill and decode spaces plans and
 *    fits on CPU-like and GPU-like targets (work-group and local-memory
 *    limits), is its own resolved plan (no duplicates), and small devices
 *    prune;
 *  - tuning small shapes stores one row per evaluated candidate, every ok
 *    row within the reference tolerance, and a rerun resumes (nothing
 *    measured again); the stop flag and the budget are honoured (nothing
 *    started that the time left cannot pay for);
 *  - a re-measurement (fresh) keeps the better row of each candidate,
 *    also between two tuners at once; replace overwrites;
 *  - a tuning run killed with SIGKILL midway (the clattn command) leaves
 *    the database intact and the rerun reuses every stored row;
 *  - the library uses tuned entries at run time: exact class, nearest
 *    class, another device of the same vendor and architecture, in that
 *    order; entries that do not fit or are not "ok" are passed over; the
 *    caller's params and overrides ($CLATTN_PARAMS, clattn_ctx_set_params)
 *    come first; the output stays correct with the tuned parameters; with
 *    a measured profile and no entry, the model's pick is considered;
 *  - a context keeps its choices until its tuning is read again (a tuning
 *    run on it, clattn_ctx_reload_tuning, an override), and reports its
 *    last call as it ran;
 *  - the nearest tuned class compares a class's numbers, each head count
 *    of a talking-heads class ("h8.16.8") on its own.
 */
#include "choice/choice.h"
#include "family/plan.h"
#include "tune/tune.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------- spaces */

static const clattn__target targets[] = {
    {1, 1, 8, 16, 2, 4096, 4u << 20, 0},  /* PoCL-like CPU (AVX2) */
    {0, 0, 1, 0, 80, 1024, 48u << 10, 0}, /* a GPU */
    {0, 0, 1, 0, 8, 64, 16u << 10, 0},    /* a small GPU */
    {1, 0, 1, 0, 8, 1024, 32u << 10, 0},  /* llvmpipe-like: implicit SIMD */
};

static void check_space(const clattn__target *t, const clattn__space *s,
                        const void *desc, int decode) {
  cr_assert(s->n > 0 && s->def == 0, "space of %d, default %d", s->n, s->def);
  for (int i = 0; i < s->n; i++) {
    clattn__params p = clattn__space_params(s, i);
    char why[160];
    clattn__params r;
    if (decode) {
      clattn_decode_desc d = *(const clattn_decode_desc *)desc;
      clattn__decode_plan pl;
      cr_assert_eq(clattn__plan_decode(t, &d, &p, &pl, why, sizeof why),
                   CLATTN_OK, "%s", why);
      cr_assert(clattn__decode_fits(t, &d, &pl, why, sizeof why), "%s", why);
      cr_assert(pl.wg <= (int)t->max_wg);
      cr_assert(clattn__decode_local_bytes(&d, &pl) <= t->local_mem);
      r = clattn__decode_resolved(&pl);
    } else {
      clattn_attn_desc d = *(const clattn_attn_desc *)desc;
      clattn__prefill_plan pl;
      cr_assert_eq(clattn__plan_prefill(t, &d, &p, &pl, why, sizeof why),
                   CLATTN_OK, "%s", why);
      cr_assert(clattn__prefill_fits(t, &d, &pl, why, sizeof why), "%s", why);
      cr_assert(pl.wg <= (int)t->max_wg);
      cr_assert(clattn__prefill_local_bytes(&d, &pl) <= t->local_mem);
      r = clattn__prefill_resolved(&pl);
    }
    cr_assert(memcmp(&r, &p, sizeof r) == 0, "candidate %d is not its own plan",
              i);
    for (int j = 0; j < i; j++) {
      clattn__params q = clattn__space_params(s, j);
      cr_assert(memcmp(&p, &q, sizeof p) != 0, "candidates %d and %d equal", i,
                j);
    }
  }
}

Test(space, prefill_constraints) {
  static const int dims[] = {32, 64, 128, 256};
  int pruned_small = 0;
  for (int ti = 0; ti < 4; ti++)
    for (int di = 0; di < 4; di++) {
      clattn_attn_desc d = {sizeof(clattn_attn_desc),
                            1,
                            300,
                            300,
                            8,
                            2,
                            dims[di],
                            dims[di],
                            CLATTN_F32,
                            CLATTN_BSHD,
                            CLATTN_BSHD,
                            0.0f,
                            1,
                            NULL};
      clattn__space s;
      cr_assert_eq(clattn__family_prefill.space(&targets[ti], &d, &s),
                   CLATTN_OK);
      check_space(&targets[ti], &s, &d, 0);
      if (ti == 2)
        pruned_small += s.pruned;
      else if (ti == 0)
        cr_assert_eq(s.pruned, 0, "CPU target pruned %d", s.pruned);
      clattn__space_free(&s);
    }
  cr_assert(pruned_small > 0, "the small GPU pruned nothing");
}

Test(space, decode_constraints) {
  static const int g[] = {1, 4, 8, 32};
  int pruned_small = 0;
  for (int ti = 0; ti < 4; ti++)
    for (int gi = 0; gi < 4; gi++) {
      clattn_decode_desc d = {sizeof(clattn_decode_desc),
                              2,
                              3000,
                              2 * g[gi],
                              2,
                              128,
                              128,
                              CLATTN_F16,
                              CLATTN_BHSD,
                              0.0f,
                              NULL};
      clattn__space s;
      cr_assert_eq(clattn__family_decode.space(&targets[ti], &d, &s),
                   CLATTN_OK);
      check_space(&targets[ti], &s, &d, 1);
      if (ti == 2)
        pruned_small += s.pruned;
      clattn__space_free(&s);
    }
  cr_assert(pruned_small > 0, "the small GPU pruned nothing");
}

/* The untuned default kernel shape: register-blocked (variant 1) only on a
 * CPU whose compiler wants explicit vectors; work-group kernels (variant 2)
 * on GPUs and on CPU runtimes that vectorise across work-items. */
Test(space, default_variant) {
  static const int expect[] = {1, 2, 2, 2};
  for (int ti = 0; ti < 4; ti++) {
    char why[160];
    clattn_attn_desc a = {sizeof(clattn_attn_desc),
                          1,
                          100,
                          100,
                          8,
                          2,
                          64,
                          64,
                          CLATTN_F32,
                          CLATTN_BSHD,
                          CLATTN_BSHD,
                          0.0f,
                          1,
                          NULL};
    clattn__prefill_plan pp;
    cr_assert_eq(
        clattn__plan_prefill(&targets[ti], &a, NULL, &pp, why, sizeof why),
        CLATTN_OK, "%s", why);
    cr_assert_eq(pp.variant, expect[ti], "target %d: prefill variant %d", ti,
                 pp.variant);
    clattn_decode_desc d = {sizeof(clattn_decode_desc),
                            1,
                            1000,
                            8,
                            1,
                            64,
                            64,
                            CLATTN_F32,
                            CLATTN_BHSD,
                            0.0f,
                            NULL};
    clattn__decode_plan dp;
    cr_assert_eq(
        clattn__plan_decode(&targets[ti], &d, NULL, &dp, why, sizeof why),
        CLATTN_OK, "%s", why);
    cr_assert_eq(dp.variant, expect[ti], "target %d: decode variant %d", ti,
                 dp.variant);
  }
  /* a CPU profile keeps its preferred vector width as wave_width */
  clattn_profile prof = {.size = sizeof(clattn_profile)};
  prof.is_cpu = 1;
  prof.wave_width = 16;
  cr_assert(clattn__target_of_profile(&prof).cpu_vectors);
  prof.wave_width = 1;
  cr_assert(!clattn__target_of_profile(&prof).cpu_vectors);
}

/* -------------------------------------------------------------- tuning */

/* The databases a test made, removed when its process exits (Criterion
 * runs each test in a process of its own). */
enum { MAX_TMP_DB = 8 };
static char tmp_paths[MAX_TMP_DB][512];
static int n_tmp;

static void unlink_db(const char *path) {
  char side[560];
  unlink(path);
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
}

static void drop_tmp_dbs(void) {
  for (int i = 0; i < n_tmp; i++)
    unlink_db(tmp_paths[i]);
}

/* A fresh database path for this test (removed at exit). */
static char *tmp_db(const char *name) {
  static char path[512];
  snprintf(path, sizeof path, "/tmp/clattn-test-tune-%d-%s.db", (int)getpid(),
           name);
  unlink_db(path);
  int known = 0;
  for (int i = 0; i < n_tmp; i++)
    known |= strcmp(tmp_paths[i], path) == 0;
  if (!known && n_tmp < MAX_TMP_DB) {
    if (n_tmp == 0)
      atexit(drop_tmp_dbs);
    snprintf(tmp_paths[n_tmp++], sizeof tmp_paths[0], "%s", path);
  }
  return path;
}

/* Set the tuning method of every row of `kernel` to `method`. */
static void set_method(clattn_db *db, const char *kernel, int method) {
  clattn_tune_entry *e = NULL;
  int n = 0;
  cr_assert_eq(clattn_db_list_tune(db, NULL, kernel, NULL, sizeof *e, &e, &n),
               CLATTN_OK);
  for (int i = 0; i < n; i++) {
    e[i].tune_method = method;
    cr_assert_eq(clattn_db_put_tune(db, &e[i]), CLATTN_OK);
  }
  clattn_free(e);
}

static int count_rows(clattn_db *db, const char *kernel) {
  clattn_tune_entry *e = NULL;
  int n = 0;
  cr_assert_eq(clattn_db_list_tune(db, NULL, kernel, NULL, sizeof *e, &e, &n),
               CLATTN_OK, "%s", clattn_db_errmsg(db));
  clattn_free(e);
  return n;
}

static void check_rows(clattn_db *db, const char *kernel, double tol) {
  clattn_tune_entry *e = NULL;
  int n = 0;
  cr_assert_eq(clattn_db_list_tune(db, NULL, kernel, NULL, sizeof *e, &e, &n),
               CLATTN_OK);
  for (int i = 0; i < n; i++) {
    cr_assert(!strcmp(e[i].status, "ok") || !strcmp(e[i].status, "slow") ||
                  !strcmp(e[i].status, "failed") ||
                  !strcmp(e[i].status, "timeout") ||
                  !strcmp(e[i].status, "wrong"),
              "status %s", e[i].status);
    if (!strcmp(e[i].status, "ok")) {
      cr_assert(e[i].max_err <= tol, "ok row with error %g", e[i].max_err);
      cr_assert(e[i].median_s > 0);
    }
    cr_assert(e[i].fingerprint[0] && e[i].updated[0] &&
              e[i].library_version[0]);
  }
  clattn_free(e);
}

Test(tune, prefill_resume) {
  clattn_ctx *ctx = tu_ctx();
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(tmp_db("prefill"), &db), CLATTN_OK);
  const clattn_attn_desc d = {sizeof(clattn_attn_desc),
                              1,
                              40,
                              70,
                              2,
                              2,
                              32,
                              32,
                              CLATTN_F32,
                              CLATTN_BSHD,
                              CLATTN_BSHD,
                              0.0f,
                              1,
                              NULL};
  clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
  o.strategy = CLATTN_TUNE_RANDOM;
  o.max_candidates = 4;
  o.repeats = 3;
  clattn_tune_result r = {.size = sizeof(clattn_tune_result)};
  cr_assert_eq(clattn_tune_attention(ctx, db, &d, &o, &r), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  cr_assert_eq(r.measured, 4);
  cr_assert_eq(r.reused, 0);
  cr_assert(r.best_s > 0 && r.default_s > 0 && r.best_s <= r.default_s);
  cr_assert_eq(count_rows(db, "prefill"), 4);
  check_rows(db, "prefill", 1e-4);
  /* the rerun resumes: the same candidates, none measured again */
  clattn_tune_result r2 = {.size = sizeof(clattn_tune_result)};
  cr_assert_eq(clattn_tune_attention(ctx, db, &d, &o, &r2), CLATTN_OK);
  cr_assert_eq(r2.measured, 0);
  cr_assert_eq(r2.reused, 4);
  cr_assert_str_eq(r2.best_params, r.best_params);
  /* a larger cap continues where it stopped */
  o.max_candidates = 6;
  cr_assert_eq(clattn_tune_attention(ctx, db, &d, &o, &r2), CLATTN_OK);
  cr_assert_eq(r2.measured, 2);
  cr_assert_eq(r2.reused, 4);
  cr_assert_eq(count_rows(db, "prefill"), 6);
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
}

/* A synthetic family for the engine alone: a 3-dimensional space whose
 * candidates "run" in a time fixed by their values (a bumpy bowl), so that
 * the searches are deterministic. */
static clattn_status fake_eval(void *self, const int *v, double best_s,
                               double timeout_s, int repeats,
                               clattn_tune_entry *e) {
  (void)self, (void)best_s, (void)timeout_s, (void)repeats;
  const double t =
      1e-3 * (1.0 + 0.1 * abs(v[0] - 3) + 0.07 * abs(v[1] - 5) +
              0.05 * ((v[0] * 7 + v[1] * 3 + v[2]) % 4) + 0.02 * v[2]);
  snprintf(e->status, sizeof e->status, "ok");
  e->median_s = t;
  e->spread = 0.0;
  e->max_err = 0.0;
  return CLATTN_OK;
}

static double fake_time1(void *self, const int *v) {
  clattn_tune_entry e = {.size = sizeof(clattn_tune_entry)};
  fake_eval(self, v, 0, 0, 1, &e);
  return e.median_s;
}

/* The bowl's space: rows 0-5 x keys 0-7 x splits 0-2, default the first. */
static void bowl_space(clattn__space *s) {
  memset(s, 0, sizeof *s);
  s->ndims = 3;
  s->dim[0] = "rows";
  s->dim[1] = "keys";
  s->dim[2] = "splits";
  for (int a = 0; a < 6; a++)
    for (int b = 0; b < 8; b++)
      for (int c = 0; c < 3; c++)
        cr_assert_geq(clattn__space_add(s, (const int[3]){a, b, c}), 0);
  s->def = 0;
}

static void bowl_family(clattn__tune_family *f, void *self) {
  memset(f, 0, sizeof *f);
  f->kernel = "fake";
  snprintf(f->shape_class, sizeof f->shape_class, "bowl");
  f->self = self;
  f->eval = fake_eval;
  f->time1 = fake_time1;
}

/* The cap is a cap: whatever step the search is at when the budget of
 * candidates runs out (an annealing move, or a restart from an unmeasured
 * candidate: unchecked, auto with a cap of 17 measured 18 here, anneal 30
 * with 29), no strategy measures more than max_candidates. */
Test(tune, cap_honoured) {
  clattn_ctx *ctx = tu_ctx();
  clattn__space s;
  bowl_space(&s);
  clattn__tune_family f;
  bowl_family(&f, NULL);
  clattn_tune_entry fp = {.size = sizeof(clattn_tune_entry)};
  cr_assert_eq(clattn__tune_identity(ctx, &fp), CLATTN_OK);
  static const clattn_tune_strategy strat[] = {
      CLATTN_TUNE_AUTO, CLATTN_TUNE_ANNEAL, CLATTN_TUNE_RANDOM};
  for (int k = 0; k < 3; k++)
    for (int cap = 2; cap <= 40; cap++) {
      clattn_db *db = NULL;
      cr_assert_eq(clattn_db_open(tmp_db("cap"), &db), CLATTN_OK);
      clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
      o.strategy = strat[k];
      o.max_candidates = cap;
      o.seed = 3u + (unsigned)cap;
      clattn_tune_result r = {.size = sizeof(clattn_tune_result)};
      cr_assert_eq(clattn__tune_run(ctx, db, &s, &f, &fp, &o, &r), CLATTN_OK,
                   "%s", clattn_ctx_errmsg(ctx));
      cr_expect(r.measured == cap, "%s, cap %d: %d measured",
                clattn_tune_strategy_str(strat[k]), cap, r.measured);
      clattn_db_close(db);
    }
  unlink(tmp_db("cap"));
  clattn__space_free(&s);
  clattn_ctx_destroy(ctx);
}

/* The model's bound for the bowl: its true time (the predicted time
 * orders the walk) and a roofline `*(double *)self` times the bowl's
 * fastest candidate. */
static int fake_predict(void *self, const int *v, double *t_pred,
                        double *t_roof) {
  *t_pred = fake_time1(NULL, v);
  *t_roof = *(const double *)self * 1e-3; /* the bowl's minimum is 1 ms */
  return 1;
}

/* The model strategy, capped at 20 candidates, on the bowl with family f
 * and a fresh temporary database. */
static clattn_tune_result model_walk(clattn_ctx *ctx, const clattn__space *s,
                                     const clattn__tune_family *f,
                                     const char *db_name) {
  clattn_tune_entry fp = {.size = sizeof(clattn_tune_entry)};
  cr_assert_eq(clattn__tune_identity(ctx, &fp), CLATTN_OK);
  clattn_db *db = NULL;
  unlink(tmp_db(db_name));
  cr_assert_eq(clattn_db_open(tmp_db(db_name), &db), CLATTN_OK);
  clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
  o.strategy = CLATTN_TUNE_MODEL;
  o.max_candidates = 20;
  clattn_tune_result r = {.size = sizeof(clattn_tune_result)};
  cr_assert_eq(clattn__tune_run(ctx, db, s, f, &fp, &o, &r), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  clattn_db_close(db);
  unlink(tmp_db(db_name));
  return r;
}

/* The model strategy stops once a candidate is within 95% of the roofline;
 * a roofline that a measurement beats by more than that margin (a profile
 * that understates the device) neither stops nor prunes the search. */
Test(tune, roofline_stop) {
  clattn_ctx *ctx = tu_ctx();
  clattn__space s;
  bowl_space(&s);
  static const struct {
    double roof; /* x the fastest candidate's time */
    const char *stopped;
    int measured;
  } c[] = {{0.97, "roofline", 2}, {1.2, "max", 20}};
  for (int k = 0; k < 2; k++) {
    double roof = c[k].roof;
    clattn__tune_family f;
    bowl_family(&f, &roof);
    f.predict = fake_predict;
    const clattn_tune_result r = model_walk(ctx, &s, &f, "roof");
    cr_expect_str_eq(r.stopped, c[k].stopped, "roofline x%.2f: stopped %s",
                     roof, r.stopped);
    cr_expect_eq(r.measured, c[k].measured, "roofline x%.2f: %d measured", roof,
                 r.measured);
    cr_expect_eq(r.best_s, 1e-3, "best %g", r.best_s);
  }
  clattn__space_free(&s);
  clattn_ctx_destroy(ctx);
}

/* A family whose bandwidth of the moment differs from its profile's: each
 * refresh sets the roofline factor to the next of `seq` (the first call
 * comes before the first prediction, the next ones before a roofline
 * stop).  The roof must stay the first member (fake_predict reads it). */
typedef struct drift {
  double roof;
  const double *seq;
  int n, calls;
} drift;

static int fake_refresh(void *self) {
  drift *d = self;
  if (d->calls >= d->n)
    return 0;
  d->roof = d->seq[d->calls++];
  return 1;
}

/* Before it stops at the roofline the search has the family time the
 * device again: a stop that the bandwidth of the moment no longer
 * supports (the profile was of a slower moment) is not taken. */
Test(tune, roofline_refresh) {
  clattn_ctx *ctx = tu_ctx();
  clattn__space s;
  bowl_space(&s);
  static const double stale[] = {0.97, 0.5}, steady[] = {0.97, 0.97};
  static const struct {
    const double *seq;
    const char *stopped;
    int measured, refreshes;
  } c[] = {{stale, "max", 20, 2}, {steady, "roofline", 2, 2}};
  for (int k = 0; k < 2; k++) {
    drift d = {2.0, c[k].seq, 2, 0};
    clattn__tune_family f;
    bowl_family(&f, &d);
    f.predict = fake_predict;
    f.refresh = fake_refresh;
    const clattn_tune_result r = model_walk(ctx, &s, &f, "refresh");
    cr_expect_str_eq(r.stopped, c[k].stopped, "case %d: stopped %s", k,
                     r.stopped);
    cr_expect_eq(r.measured, c[k].measured, "case %d: %d measured", k,
                 r.measured);
    cr_expect_eq(r.refreshes, c[k].refreshes, "case %d: %d refreshes", k,
                 r.refreshes);
    cr_expect_eq(r.roofline_s, c[k].seq[1] * 1e-3, "case %d: roofline %g", k,
                 r.roofline_s);
  }
  clattn__space_free(&s);
  clattn_ctx_destroy(ctx);
}

/* Decode's roofline follows the device's bandwidth of the moment: with a
 * stored profile of 0.5 GB/s, the run times a copy first and its roofline
 * is that of the copy's bandwidth, not the profile's (which would put the
 * K/V read alone at 2 s a GB); prefill, warm and compute-bound, keeps the
 * profile as stored. */
Test(tune, decode_roofline_at_copy) {
  clattn_ctx *ctx = tu_ctx();
  clattn_profile p = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_profile_reported(ctx, &p), CLATTN_OK);
  p.source = CLATTN_PROFILE_MEASURED;
  p.bw_read_gbs = p.bw_copy_gbs = p.bw_triad_gbs = 0.5;
  p.fp32_gflops = 100.0;
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(tmp_db("at-copy"), &db), CLATTN_OK);
  cr_assert_eq(clattn_db_put_profile(db, &p), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  const clattn_decode_desc d = {sizeof(clattn_decode_desc),
                                1,
                                4096,
                                8,
                                2,
                                64,
                                64,
                                CLATTN_F32,
                                CLATTN_BHSD,
                                0.0f,
                                NULL};
  const double kv = 4096.0 * 2 * (64 + 64) * 4;
  clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
  o.strategy = CLATTN_TUNE_MODEL;
  o.max_candidates = 3;
  o.repeats = 3;
  clattn_tune_result r = {.size = sizeof(clattn_tune_result)};
  cr_assert_eq(clattn_tune_decode(ctx, db, &d, &o, &r), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  cr_expect(r.refreshes >= 1, "refreshes %d", r.refreshes);
  cr_expect(r.roofline_s > 0 && r.roofline_s < kv / 0.5e9 / 4,
            "roofline %g s; the stored profile's K/V read alone %g s",
            r.roofline_s, kv / 0.5e9);
  const clattn_attn_desc a = {sizeof(clattn_attn_desc),
                              1,
                              64,
                              64,
                              2,
                              2,
                              16,
                              16,
                              CLATTN_F32,
                              CLATTN_BSHD,
                              CLATTN_BSHD,
                              0.0f,
                              0,
                              NULL};
  cr_assert_eq(clattn_tune_attention(ctx, db, &a, &o, &r), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  cr_expect_eq(r.refreshes, 0, "prefill refreshes %d", r.refreshes);
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
}

Test(tune, decode_fresh_anneal) {
  clattn_ctx *ctx = tu_ctx();
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(tmp_db("decode"), &db), CLATTN_OK);
  const clattn_decode_desc d = {sizeof(clattn_decode_desc),
                                2,
                                600,
                                4,
                                2,
                                64,
                                64,
                                CLATTN_F16,
                                CLATTN_BHSD,
                                0.0f,
                                NULL};
  clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
  o.strategy = CLATTN_TUNE_ANNEAL;
  o.max_candidates = 5;
  o.repeats = 3;
  clattn_tune_result r = {.size = sizeof(clattn_tune_result)};
  cr_assert_eq(clattn_tune_decode(ctx, db, &d, &o, &r), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  cr_assert_eq(r.measured + r.reused, 5);
  cr_assert(r.best_s > 0);
  check_rows(db, "decode", 1e-3);
  o.fresh = 1;
  cr_assert_eq(clattn_tune_decode(ctx, db, &d, &o, &r), CLATTN_OK);
  cr_assert_eq(r.measured, 5, "fresh measured %d", r.measured);
  cr_assert_eq(r.reused, 0);
  clattn_db_close(db);
  /* rows of an older tuning method are measured again, not reused (the
   * exhaustive order visits the same candidates each run) */
  cr_assert_eq(clattn_db_open(tmp_db("decode-method"), &db), CLATTN_OK);
  o.fresh = 0;
  o.strategy = CLATTN_TUNE_EXHAUSTIVE;
  cr_assert_eq(clattn_tune_decode(ctx, db, &d, &o, &r), CLATTN_OK);
  cr_assert_eq(r.measured, 5);
  /* the verification (the best six and the default) timed all five again
   * if they are ok and stored their figures; the winner's is the result's */
  clattn_tune_entry *v = NULL;
  int nv = 0, ok = 0, verified = 0, winner = 0;
  cr_assert_eq(
      clattn_db_list_tune(db, NULL, "decode", NULL, sizeof *v, &v, &nv),
      CLATTN_OK);
  for (int i = 0; i < nv; i++) {
    if (strcmp(v[i].status, "ok") != 0)
      continue;
    ok++;
    verified += strncmp(v[i].message, "verified: median of", 19) == 0;
    winner +=
        strcmp(v[i].params, r.best_params) == 0 && v[i].median_s == r.best_s;
  }
  clattn_free(v);
  cr_assert(ok >= 2, "ok candidates: %d", ok);
  cr_assert_eq(r.verified, ok, "verified %d of %d", r.verified, ok);
  cr_assert_eq(verified, r.verified);
  cr_assert_eq(winner, 1, "the winner's stored figure is the result's");
  cr_assert_eq(clattn_tune_decode(ctx, db, &d, &o, &r), CLATTN_OK);
  cr_assert_eq(r.reused, 5, "a rerun reuses the rows: %d", r.reused);
  cr_assert_eq(r.stale, 0);
  set_method(db, "decode", clattn_tune_method("decode") - 1);
  cr_assert_eq(clattn_tune_decode(ctx, db, &d, &o, &r), CLATTN_OK);
  cr_assert_eq(r.stale, 5, "stale rows %d", r.stale);
  cr_assert_eq(r.reused, 0);
  cr_assert_eq(r.measured, 5);
  clattn_tune_entry *rows = NULL;
  int n = 0;
  cr_assert_eq(
      clattn_db_list_tune(db, NULL, "decode", NULL, sizeof *rows, &rows, &n),
      CLATTN_OK);
  cr_assert_eq(n, 5, "the measured rows replace the old ones: %d", n);
  for (int i = 0; i < n; i++)
    cr_expect_eq(rows[i].tune_method, clattn_tune_method("decode"));
  clattn_free(rows);
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
}

Test(tune, stop_and_budget) {
  clattn_ctx *ctx = tu_ctx();
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(tmp_db("stop"), &db), CLATTN_OK);
  clattn_decode_desc d = {sizeof(clattn_decode_desc),
                          1,
                          1000,
                          2,
                          1,
                          32,
                          32,
                          CLATTN_F32,
                          CLATTN_BSHD,
                          0.0f,
                          NULL};
  volatile int stop = 1;
  clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
  o.strategy = CLATTN_TUNE_EXHAUSTIVE;
  o.stop = &stop;
  clattn_tune_result r = {.size = sizeof(clattn_tune_result)};
  cr_assert_eq(clattn_tune_decode(ctx, db, &d, &o, &r), CLATTN_OK);
  cr_assert_eq(r.measured, 0);
  cr_assert_str_eq(r.stopped, "stop");
  cr_assert_eq(count_rows(db, "decode"), 0);
  /* a 2 s budget over a space that takes far longer (MQA-like over 32768
   * keys: 612 candidates, 20 s even when every program is in the disk
   * cache, minutes when none is; the small shape above took 0.4 s warm);
   * a candidate (one compile, which cannot be interrupted, and its runs)
   * has 4 s */
  stop = 0;
  d = (clattn_decode_desc){sizeof(clattn_decode_desc),
                           1,
                           32768,
                           8,
                           1,
                           64,
                           64,
                           CLATTN_F32,
                           CLATTN_BSHD,
                           0.0f,
                           NULL};
  o.budget_s = 2.0;
  o.timeout_s = 4.0;
  o.repeats = 3;
  cr_assert_eq(clattn_tune_decode(ctx, db, &d, &o, &r), CLATTN_OK);
  cr_assert_str_eq(r.stopped, "budget");
  cr_assert(r.measured >= 1 && r.measured < r.space, "measured %d of %d",
            r.measured, r.space);
  /* over by at most one candidate's timeout (and its last run) */
  cr_assert(r.elapsed_s < o.budget_s + o.timeout_s + 1.0, "elapsed %.2f s",
            r.elapsed_s);
  cr_assert_eq(count_rows(db, "decode"), r.measured);
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
}

/* ------------------------------------------- stored rows and the budget */

/* A family for the rules of the stored rows and of the budget: the bowl's
 * times scaled by `scale`, every candidate given `status`; an evaluation
 * sleeps eval_s (a compile, the check and the repeats), a timed run the
 * candidate's time; the start of every call is recorded. */
typedef struct paced {
  double scale;
  const char *status; /* "ok", or the failure every candidate gets */
  double eval_s;      /* an evaluation's sleep */
  double started;     /* clattn__tune_family.started */
  int calls;
  double call_at[512]; /* each call's start, after `started` */
  double longest;      /* the longest call */
} paced;

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

static void paced_begin(paced *p, double *t0) {
  *t0 = clattn__now();
  if (p->calls < (int)(sizeof p->call_at / sizeof p->call_at[0]))
    p->call_at[p->calls++] = *t0 - p->started;
}

static void paced_end(paced *p, double t0) {
  const double d = clattn__now() - t0;
  p->longest = d > p->longest ? d : p->longest;
}

static clattn_status paced_eval(void *self, const int *v, double best_s,
                                double timeout_s, int repeats,
                                clattn_tune_entry *e) {
  paced *p = self;
  double t0;
  paced_begin(p, &t0);
  fake_eval(NULL, v, best_s, timeout_s, repeats, e);
  e->median_s *= p->scale;
  snprintf(e->status, sizeof e->status, "%s", p->status);
  sleep_s(p->eval_s);
  paced_end(p, t0);
  return CLATTN_OK;
}

static double paced_time1(void *self, const int *v) {
  paced *p = self;
  double t0;
  paced_begin(p, &t0);
  const double t = fake_time1(NULL, v) * p->scale;
  sleep_s(t);
  paced_end(p, t0);
  return t;
}

/* Run the bowl with family p (time1: verification by single runs, else
 * by whole evaluations). */
static clattn_tune_result run_paced(clattn_ctx *ctx, clattn_db *db, paced *p,
                                    const clattn_tune_opts *o, int time1) {
  clattn__space s;
  bowl_space(&s);
  clattn__tune_family f;
  bowl_family(&f, p);
  f.eval = paced_eval;
  f.time1 = time1 ? paced_time1 : NULL;
  clattn_tune_entry fp = {.size = sizeof(clattn_tune_entry)};
  cr_assert_eq(clattn__tune_identity(ctx, &fp), CLATTN_OK);
  clattn_tune_result r = {.size = sizeof(clattn_tune_result)};
  p->calls = 0;
  p->longest = 0.0;
  p->started = f.started = clattn__now();
  cr_assert_eq(clattn__tune_run(ctx, db, &s, &f, &fp, o, &r), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  clattn__space_free(&s);
  return r;
}

/* The bowl's time of a row's params. */
static double bowl_time(const char *params) {
  int v[3];
  cr_assert_eq(sscanf(params, "rows=%d keys=%d splits=%d", &v[0], &v[1], &v[2]),
               3, "%s", params);
  return fake_time1(NULL, v);
}

/* Every "fake" row: status, and median the bowl's time times scale. */
static void expect_rows(clattn_db *db, int n_want, const char *status,
                        double scale, const char *what) {
  clattn_tune_entry *e = NULL;
  int n = 0;
  cr_assert_eq(clattn_db_list_tune(db, NULL, "fake", NULL, sizeof *e, &e, &n),
               CLATTN_OK, "%s", clattn_db_errmsg(db));
  cr_expect_eq(n, n_want, "%s: %d rows", what, n);
  int wrong = 0;
  for (int i = 0; i < n; i++) {
    const double want = bowl_time(e[i].params) * scale;
    if (strcmp(e[i].status, status) != 0 ||
        (!strcmp(status, "ok") && e[i].median_s != want)) {
      if (wrong++ < 3)
        cr_expect(0, "%s: %s: %s %.6g s, want %s %.6g s", what, e[i].params,
                  e[i].status, e[i].median_s, status, want);
    }
  }
  cr_expect_eq(wrong, 0, "%s: %d of %d rows not as wanted", what, wrong, n);
  clattn_free(e);
}

/* A re-measurement keeps the better row unless asked: --fresh with every
 * candidate timing out, or slower, leaves the ok rows as they were; faster
 * ones replace them (the verified ones by the new verification); replace
 * overwrites even with failures. */
Test(tune, fresh_keeps_the_better_row) {
  clattn_ctx *ctx = tu_ctx();
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(tmp_db("better"), &db), CLATTN_OK);
  paced p = {.scale = 1.0, .status = "ok"};
  clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
  o.strategy = CLATTN_TUNE_EXHAUSTIVE;
  o.max_candidates = 12;
  clattn_tune_result r = run_paced(ctx, db, &p, &o, 1);
  cr_assert_eq(r.measured, 12);
  cr_assert_gt(r.verified, 1);
  expect_rows(db, 12, "ok", 1.0, "first run");
  o.fresh = 1;
  p.status = "timeout";
  r = run_paced(ctx, db, &p, &o, 1);
  cr_assert_eq(r.measured, 12, "fresh measured %d", r.measured);
  expect_rows(db, 12, "ok", 1.0, "fresh, every candidate timing out");
  p.status = "ok";
  p.scale = 2.0;
  run_paced(ctx, db, &p, &o, 1);
  expect_rows(db, 12, "ok", 1.0, "fresh, every candidate slower");
  p.scale = 0.5;
  run_paced(ctx, db, &p, &o, 1);
  expect_rows(db, 12, "ok", 0.5, "fresh, every candidate faster");
  o.replace = 1;
  p.status = "timeout";
  run_paced(ctx, db, &p, &o, 1);
  expect_rows(db, 12, "timeout", 0.5, "replace, every candidate timing out");
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
}

/* Two tuners at once on one database, one measuring every candidate twice
 * as slow: each candidate keeps the faster row, whichever wrote last.
 * Each tuner is a process of its own with its own context. */
Test(tune, concurrent_writers_keep_the_faster) {
  const char *path = tmp_db("race");
  pid_t pid[2];
  for (int k = 0; k < 2; k++) {
    pid[k] = fork();
    cr_assert_neq(pid[k], -1);
    if (pid[k] == 0) {
      clattn_ctx_opts co = {.size = sizeof(clattn_ctx_opts)};
      clattn_ctx *ctx = NULL;
      clattn_db *db = NULL;
      if (clattn_ctx_create(&co, &ctx) != CLATTN_OK ||
          clattn_db_open(path, &db) != CLATTN_OK)
        _exit(2);
      static paced p;
      p.scale = k ? 2.0 : 1.0;
      p.status = "ok";
      p.eval_s = 1e-3; /* the two interleave */
      clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
      o.strategy = CLATTN_TUNE_EXHAUSTIVE;
      o.fresh = 1;
      clattn__space s;
      bowl_space(&s);
      clattn__tune_family f;
      bowl_family(&f, &p);
      f.eval = paced_eval;
      f.time1 = paced_time1;
      clattn_tune_entry fp = {.size = sizeof(clattn_tune_entry)};
      clattn_tune_result r = {.size = sizeof(clattn_tune_result)};
      const int ok =
          clattn__tune_identity(ctx, &fp) == CLATTN_OK &&
          clattn__tune_run(ctx, db, &s, &f, &fp, &o, &r) == CLATTN_OK &&
          r.measured == s.n;
      if (!ok)
        fprintf(stderr, "tuner %d: %s\n", k, clattn_ctx_errmsg(ctx));
      clattn_db_close(db);
      clattn_ctx_destroy(ctx);
      _exit(ok ? 0 : 1);
    }
  }
  for (int k = 0; k < 2; k++) {
    int status = 0;
    cr_assert_eq(waitpid(pid[k], &status, 0), pid[k]);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "tuner %d: status %d", k, status);
  }
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
  expect_rows(db, 6 * 8 * 3, "ok", 1.0, "two tuners at once");
  clattn_db_close(db);
}

/* The budget counts from the call's start (clattn__tune_family.started)
 * and nothing is started that the time left cannot pay for: over a space
 * that takes several times the budget, no candidate and no verification
 * run starts later than the budget plus the one piece of work that overran
 * it, and the run ends within 10% of the budget plus that piece; with
 * verification by single runs and by whole evaluations. */
Test(tune, budget_starts_nothing_it_cannot_pay_for) {
  clattn_ctx *ctx = tu_ctx();
  for (int time1 = 1; time1 >= 0; time1--) {
    clattn_db *db = NULL;
    cr_assert_eq(clattn_db_open(tmp_db("budget"), &db), CLATTN_OK);
    static paced p;
    memset(&p, 0, sizeof p);
    p.scale = 1.0;
    p.status = "ok";
    p.eval_s = 0.04; /* 144 candidates: 5.8 s */
    clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
    o.strategy = CLATTN_TUNE_EXHAUSTIVE;
    o.budget_s = 0.8;
    const clattn_tune_result r = run_paced(ctx, db, &p, &o, time1);
    cr_expect_str_eq(r.stopped, "budget", "time1 %d", time1);
    cr_expect(r.measured > 1 && r.measured < r.space, "time1 %d: %d measured",
              time1, r.measured);
    double last = 0.0;
    for (int k = 0; k < p.calls; k++)
      last = p.call_at[k] > last ? p.call_at[k] : last;
    cr_expect(last <= o.budget_s + p.longest,
              "time1 %d: a call started at %.3f s, past the %.3f s budget "
              "(the longest call took %.3f s); %d calls, %d verified",
              time1, last, o.budget_s, p.longest, p.calls, r.verified);
    cr_expect(r.elapsed_s <= 1.1 * o.budget_s + p.longest,
              "time1 %d: %.3f s for a %.3f s budget", time1, r.elapsed_s,
              o.budget_s);
    clattn_db_close(db);
  }
  clattn_ctx_destroy(ctx);
}

Test(tune, bad_input) {
  clattn_ctx *ctx = tu_ctx();
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(tmp_db("bad"), &db), CLATTN_OK);
  clattn_attn_desc d = {sizeof(clattn_attn_desc),
                        1,
                        8,
                        8,
                        3,
                        2,
                        32,
                        32,
                        CLATTN_F32,
                        CLATTN_BSHD,
                        CLATTN_BSHD,
                        0.0f,
                        0,
                        NULL};
  clattn_tune_result r = {.size = sizeof(clattn_tune_result)};
  cr_assert_neq(clattn_tune_attention(ctx, db, &d, NULL, &r), CLATTN_OK);
  cr_assert(strstr(clattn_ctx_errmsg(ctx), "head") != NULL, "%s",
            clattn_ctx_errmsg(ctx));
  d.heads_q = 2;
  cr_assert_eq(clattn_tune_attention(ctx, NULL, &d, NULL, &r),
               CLATTN_ERR_INVALID_ARG);
  clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
  o.strategy = (clattn_tune_strategy)42;
  cr_assert_eq(clattn_tune_attention(ctx, db, &d, &o, &r),
               CLATTN_ERR_INVALID_ARG);
  cr_assert(strstr(clattn_ctx_errmsg(ctx), "strategy") != NULL);
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
}

/* -------------------------------------------------------------- SIGKILL */

static int rows_in(const char *path) {
  sqlite3 *h = NULL;
  sqlite3_stmt *st = NULL;
  int n = -1;
  if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
      sqlite3_busy_timeout(h, 5000) == SQLITE_OK &&
      sqlite3_prepare_v2(h, "SELECT count(*) FROM tuning", -1, &st, NULL) ==
          SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(h);
  return n;
}

static pid_t spawn_tune(const char *cli, const char *db, const char *max,
                        const char *out) {
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    if (out && freopen(out, "w", stdout) == NULL)
      _exit(99);
    const char *argv[] = {
        cli,    "tune",       "decode",     "--batch",    "1", "--kv-seq",
        "2048", "--heads",    "4",          "--kv-heads", "1", "--head-dim",
        "64",   "--strategy", "exhaustive", "--max",      max, "--db",
        db,     "--quiet",    NULL};
    execv(cli, (char *const *)argv);
    _exit(98);
  }
  return pid;
}

Test(tune, sigkill_resume, .timeout = 600) {
  const char *cli = getenv("CLATTN_CLI");
  cr_assert(cli != NULL, "CLATTN_CLI (the clattn command) is not set");
  const char *db = tmp_db("kill");
  pid_t pid = spawn_tune(cli, db, "60", NULL);
  /* kill it once at least 3 candidates are stored */
  int n = 0;
  for (int i = 0; i < 6000 && n < 3; i++) {
    nanosleep(&(struct timespec){0, 20000000L}, NULL);
    n = rows_in(db);
    int status;
    cr_assert_eq(waitpid(pid, &status, WNOHANG), 0,
                 "the tuner ended before it was killed");
  }
  cr_assert(n >= 3, "only %d rows after the wait", n);
  cr_assert_eq(kill(pid, SIGKILL), 0);
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  /* intact: integrity check, and every stored row readable */
  sqlite3 *h = NULL;
  sqlite3_stmt *st = NULL;
  cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
  cr_assert_eq(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL),
               SQLITE_OK);
  cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
  cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
  sqlite3_finalize(st);
  sqlite3_close(h);
  const int before = rows_in(db);
  cr_assert(before >= n);
  clattn_db *d = NULL;
  cr_assert_eq(clattn_db_open(db, &d), CLATTN_OK);
  check_rows(d, "decode", 1e-4);
  clattn_db_close(d);
  /* the rerun (exhaustive, same order) reuses all of them and adds 2 */
  char max[16], out[600];
  snprintf(max, sizeof max, "%d", before + 2);
  snprintf(out, sizeof out, "%s.out", db);
  pid = spawn_tune(cli, db, max, out);
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "rerun exit status %d", status);
  cr_assert_eq(rows_in(db), before + 2);
  FILE *f = fopen(out, "r");
  cr_assert(f != NULL);
  char line[512], want[64];
  int found = 0;
  snprintf(want, sizeof want, "(2 measured now, %d from the database)", before);
  while (fgets(line, sizeof line, f))
    found |= strstr(line, want) != NULL;
  fclose(f);
  unlink(out);
  cr_assert(found, "the rerun did not report \"%s\"", want);
}

/* ------------------------------------------------------ run-time choice */

/* An entry of this device (or another fingerprint of its vendor/arch). */
static void put_entry(clattn_db *db, clattn_ctx *ctx, int kin,
                      const char *kernel, const char *cls, const char *params,
                      const char *status, double t) {
  clattn_profile p = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_profile_reported(ctx, &p), CLATTN_OK);
  clattn_tune_entry e = {.size = sizeof(clattn_tune_entry)};
  snprintf(e.fingerprint, sizeof e.fingerprint, "%s",
           kin ? "0123456789abcdef0123456789abcdef" : p.fingerprint);
  snprintf(e.device, sizeof e.device, "%s", kin ? "a sibling" : p.name);
  snprintf(e.vendor, sizeof e.vendor, "%s", p.vendor);
  snprintf(e.arch, sizeof e.arch, "%s", p.arch);
  snprintf(e.kernel, sizeof e.kernel, "%s", kernel);
  snprintf(e.shape_class, sizeof e.shape_class, "%s", cls);
  snprintf(e.params, sizeof e.params, "%s", params);
  snprintf(e.status, sizeof e.status, "%s", status);
  snprintf(e.strategy, sizeof e.strategy, "test");
  e.median_s = t;
  e.tune_method = clattn_tune_method(kernel);
  cr_assert_eq(clattn_db_put_tune(db, &e), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
}

static clattn_ctx *ctx_with_db(const char *path) {
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  o.tuning_db = path;
  clattn_ctx *ctx = NULL;
  cr_assert_eq(clattn_ctx_create(&o, &ctx), CLATTN_OK, "%s",
               clattn_ctx_errmsg(NULL));
  return ctx;
}

/* Run prefill d on random data and compare with the reference. */
static void run_prefill(clattn_ctx *ctx, const clattn_attn_desc *d) {
  tu_rng rng = tu_rng_seed(99);
  const size_t nq = (size_t)d->batch * d->n_q * d->heads_q * d->head_dim_k,
               nk = (size_t)d->batch * d->n_kv * d->heads_kv * d->head_dim_k,
               nv = (size_t)d->batch * d->n_kv * d->heads_kv * d->head_dim_v,
               no = (size_t)d->batch * d->n_q * d->heads_q * d->head_dim_v;
  float *q = tu_alloc(nq * 4), *k = tu_alloc(nk * 4), *v = tu_alloc(nv * 4),
        *o = tu_alloc(no * 4), *ref = tu_alloc(no * 4);
  tu_fill(&rng, q, nq, 1.0f);
  tu_fill(&rng, k, nk, 1.0f);
  tu_fill(&rng, v, nv, 1.0f);
  cl_mem bq = tu_upload(ctx, q, nq, CLATTN_F32),
         bk = tu_upload(ctx, k, nk, CLATTN_F32),
         bv = tu_upload(ctx, v, nv, CLATTN_F32), bo = tu_buffer(ctx, no * 4);
  cr_assert_eq(clattn_attention(ctx, d, bq, bk, bv, NULL, bo, NULL), CLATTN_OK,
               "%s", clattn_ctx_errmsg(ctx));
  tu_download(ctx, bo, o, no, CLATTN_F32);
  ref_attn a = {d->batch,
                d->n_q,
                d->n_kv,
                d->heads_q,
                d->heads_kv,
                d->head_dim_k,
                d->head_dim_v,
                0,
                0,
                1.0 / sqrt((double)d->head_dim_k),
                d->causal,
                NULL};
  ref_attention(&a, q, k, v, ref);
  cr_assert(
      tu_check("tuned prefill", o, ref, no, clattn__tolerance(CLATTN_F32)));
  tu_release(bq);
  tu_release(bk);
  tu_release(bv);
  tu_release(bo);
  free(q);
  free(k);
  clattn_free(v);
  free(o);
  free(ref);
}

static clattn_choice last(clattn_ctx *ctx) {
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  cr_assert_eq(clattn_ctx_last_choice(ctx, &ch), CLATTN_OK);
  return ch;
}

Test(choice, tuned_entries) {
  const char *path = tmp_db("choice");
  clattn_ctx *probe_ctx = tu_ctx();
  clattn_attn_desc d = {sizeof(clattn_attn_desc),
                        1,
                        50,
                        50,
                        4,
                        2,
                        32,
                        32,
                        CLATTN_F32,
                        CLATTN_BSHD,
                        CLATTN_BSHD,
                        0.0f,
                        1,
                        NULL};
  char cls[96];
  clattn_shape_class_attention(&d, cls, sizeof cls);
  cr_assert_str_eq(cls, "f32 k32 v32 g2 bh2 n64 m64 c1");
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);

  /* nothing stored: the default */
  clattn_ctx *ctx = ctx_with_db(path);
  run_prefill(ctx, &d);
  cr_assert_eq(last(ctx).source, CLATTN_CHOICE_DEFAULT, "%s", last(ctx).why);
  clattn_ctx_destroy(ctx);

  /* a sibling device's entry (same vendor and architecture) */
  put_entry(db, probe_ctx, 1, "prefill", cls,
            "variant=1 rows=2 keys=16 wg=2 splits=0", "ok", 1e-3);
  ctx = ctx_with_db(path);
  run_prefill(ctx, &d);
  clattn_choice ch = last(ctx);
  cr_assert_eq(ch.source, CLATTN_CHOICE_TUNED_ARCH, "%s", ch.why);
  cr_assert_eq(tu_params(ch.params).rows, 2);
  cr_assert_eq(tu_params(ch.params).keys, 16);
  cr_assert_str_eq(ch.entry_device, "a sibling");
  clattn_ctx_destroy(ctx);

  /* this device, a nearby class: preferred over the sibling's exact one */
  put_entry(db, probe_ctx, 0, "prefill", "f32 k32 v32 g2 bh2 n128 m128 c1",
            "variant=1 rows=8 keys=32 wg=0 splits=0", "ok", 2e-3);
  /* not ok, or not fitting: never used */
  put_entry(db, probe_ctx, 0, "prefill", "f32 k32 v32 g2 bh2 n64 m64 c0",
            "variant=1 rows=4 keys=64 wg=0 splits=0", "wrong", 1e-6);
  ctx = ctx_with_db(path);
  run_prefill(ctx, &d);
  ch = last(ctx);
  cr_assert_eq(ch.source, CLATTN_CHOICE_TUNED_NEAREST, "%s", ch.why);
  cr_assert_eq(tu_params(ch.params).rows, 8);
  cr_assert_str_eq(ch.entry_class, "f32 k32 v32 g2 bh2 n128 m128 c1");
  clattn_ctx_destroy(ctx);

  /* this device, this class */
  put_entry(db, probe_ctx, 0, "prefill", cls,
            "variant=1 rows=1 keys=48 wg=4 splits=0", "ok", 5e-4);
  ctx = ctx_with_db(path);
  run_prefill(ctx, &d);
  ch = last(ctx);
  cr_assert_eq(ch.source, CLATTN_CHOICE_TUNED, "%s", ch.why);
  cr_assert_eq(tu_params(ch.resolved).variant, 1);
  cr_assert_eq(tu_params(ch.resolved).rows, 1);
  cr_assert_eq(tu_params(ch.resolved).keys, 48);
  cr_assert_eq(tu_params(ch.resolved).wg, 4);
  /* explain says the same without running */
  clattn_choice ex = {.size = sizeof(clattn_choice)};
  cr_assert_eq(clattn_explain_attention(ctx, &d, &ex), CLATTN_OK);
  cr_assert_eq(ex.source, CLATTN_CHOICE_TUNED);
  cr_assert(memcmp(&ex.resolved, &ch.resolved, sizeof ch.resolved) == 0);
  /* the caller's params come first */
  const clattn_params mine = {
      .size = sizeof(clattn_params), .variant = 1, .rows = 2, .keys = 32};
  d.params = &mine;
  run_prefill(ctx, &d);
  cr_assert_eq(last(ctx).source, CLATTN_CHOICE_CALLER);
  d.params = NULL;
  /* then an override */
  cr_assert_eq(clattn_ctx_set_params(ctx, "prefill: rows=2 keys=64"),
               CLATTN_OK);
  run_prefill(ctx, &d);
  ch = last(ctx);
  cr_assert_eq(ch.source, CLATTN_CHOICE_OVERRIDE);
  cr_assert_eq(tu_params(ch.resolved).rows, 2);
  cr_assert_eq(tu_params(ch.resolved).keys, 64);
  cr_assert_eq(clattn_ctx_set_params(ctx, "prefill: rows=two"),
               CLATTN_ERR_INVALID_ARG);
  cr_assert(strstr(clattn_ctx_errmsg(ctx), "rows") != NULL);
  cr_assert_eq(clattn_ctx_set_params(ctx, "attention: rows=2"),
               CLATTN_ERR_INVALID_ARG);
  cr_assert_eq(clattn_ctx_set_params(ctx, NULL), CLATTN_OK);
  run_prefill(ctx, &d);
  cr_assert_eq(last(ctx).source, CLATTN_CHOICE_TUNED);
  clattn_ctx_destroy(ctx);

  /* an entry that does not fit this call is passed over */
  put_entry(db, probe_ctx, 0, "prefill", cls,
            "variant=2 rows=0 keys=16 wg=100000 splits=0", "ok", 1e-4);
  ctx = ctx_with_db(path);
  run_prefill(ctx, &d);
  ch = last(ctx);
  cr_assert_eq(ch.source, CLATTN_CHOICE_TUNED, "%s", ch.why);
  cr_assert_eq(tu_params(ch.resolved).keys, 48,
               "took the entry that does not fit");
  clattn_ctx_destroy(ctx);

  /* no_tuning: the default again */
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  o.tuning_db = path;
  o.no_tuning = 1;
  cr_assert_eq(clattn_ctx_create(&o, &ctx), CLATTN_OK);
  run_prefill(ctx, &d);
  cr_assert_eq(last(ctx).source, CLATTN_CHOICE_DEFAULT);
  clattn_ctx_destroy(ctx);
  clattn_db_close(db);
  clattn_ctx_destroy(probe_ctx);
}

/* Two contexts on one database: each keeps its calls' choices until its
 * tuning is read again.  B's call is memoised with the default; A tunes
 * the call (A's next call takes the row at once) and a faster row of other
 * params is stored, as another process would; B keeps its choice until
 * clattn_ctx_reload_tuning(B), and then takes the faster row. */
Test(choice, reload_tuning) {
  const char *path = tmp_db("reload");
  const clattn_attn_desc d = {sizeof(clattn_attn_desc),
                              1,
                              50,
                              50,
                              4,
                              2,
                              32,
                              32,
                              CLATTN_F32,
                              CLATTN_BSHD,
                              CLATTN_BSHD,
                              0.0f,
                              1,
                              NULL};
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
  clattn_ctx *a = ctx_with_db(path), *b = ctx_with_db(path);
  run_prefill(a, &d);
  run_prefill(b, &d);
  cr_assert_eq(last(a).source, CLATTN_CHOICE_DEFAULT, "%s", last(a).why);
  const clattn_choice def = last(b);
  cr_assert_eq(def.source, CLATTN_CHOICE_DEFAULT, "%s", def.why);

  clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
  o.max_candidates = 1; /* the default alone */
  o.repeats = 3;
  clattn_tune_result r = {.size = sizeof(clattn_tune_result)};
  cr_assert_eq(clattn_tune_attention(a, db, &d, &o, &r), CLATTN_OK, "%s",
               clattn_ctx_errmsg(a));
  cr_assert(r.best_s > 0, "nothing measured");
  run_prefill(a, &d);
  cr_assert_eq(last(a).source, CLATTN_CHOICE_TUNED, "%s", last(a).why);

  put_entry(db, a, 0, "prefill", r.shape_class,
            "variant=1 rows=2 keys=16 wg=0 splits=0", "ok", r.best_s / 4);
  run_prefill(b, &d);
  clattn_choice ch = last(b);
  cr_assert_eq(ch.source, CLATTN_CHOICE_DEFAULT,
               "B read the database again unasked: %s", ch.why);
  cr_assert(memcmp(&ch.resolved, &def.resolved, sizeof ch.resolved) == 0);

  cr_assert_eq(clattn_ctx_reload_tuning(b), CLATTN_OK);
  run_prefill(b, &d);
  ch = last(b);
  cr_assert_eq(ch.source, CLATTN_CHOICE_TUNED, "%s", ch.why);
  cr_assert_eq(tu_params(ch.params).rows, 2);
  cr_assert_eq(tu_params(ch.params).keys, 16);
  cr_assert_eq(tu_params(ch.resolved).rows, 2);
  cr_assert_eq(tu_params(ch.resolved).keys, 16);
  clattn_choice ex = {.size = sizeof(clattn_choice)};
  cr_assert_eq(clattn_explain_attention(b, &d, &ex), CLATTN_OK);
  cr_assert_eq(ex.source, CLATTN_CHOICE_TUNED);
  cr_assert_str_eq(ex.why, ch.why);

  cr_assert_eq(clattn_ctx_reload_tuning(NULL), CLATTN_ERR_MISUSE);
  clattn_ctx_destroy(a);
  clattn_ctx_destroy(b);
  clattn_db_close(db);
}

static void expect_same_choice(const clattn_choice *x, const clattn_choice *y) {
  cr_expect_eq(x->source, y->source);
  cr_expect(memcmp(&x->params, &y->params, sizeof x->params) == 0);
  cr_expect(memcmp(&x->resolved, &y->resolved, sizeof x->resolved) == 0);
  cr_expect_str_eq(x->shape_class, y->shape_class);
  cr_expect_str_eq(x->entry_class, y->entry_class);
  cr_expect_str_eq(x->entry_device, y->entry_device);
  cr_expect_str_eq(x->why, y->why);
}

/* A thread's last call is reported as it ran after many other choices on
 * the context (explains of 256 other shapes, more than the context keeps),
 * and explain and the call say the same. */
Test(choice, last_choice_after_other_choices) {
  clattn_ctx *ctx = tu_ctx();
  const clattn_attn_desc d = {sizeof(clattn_attn_desc),
                              1,
                              50,
                              50,
                              4,
                              2,
                              32,
                              32,
                              CLATTN_F32,
                              CLATTN_BSHD,
                              CLATTN_BSHD,
                              0.0f,
                              1,
                              NULL};
  cr_assert_eq(clattn_ctx_set_params(ctx, "prefill: rows=2 keys=16"),
               CLATTN_OK);
  run_prefill(ctx, &d);
  const clattn_choice ran = last(ctx);
  cr_assert_eq(ran.source, CLATTN_CHOICE_OVERRIDE, "%s", ran.why);
  cr_assert(strstr(ran.why, "clattn_ctx_set_params") != NULL, "%s", ran.why);
  cr_assert_str_eq(ran.shape_class, "f32 k32 v32 g2 bh2 n64 m64 c1");
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  for (int i = 0; i < 256; i++) {
    const clattn_decode_desc dd = {sizeof(clattn_decode_desc),
                                   1,
                                   100 + i,
                                   4,
                                   2,
                                   32,
                                   32,
                                   CLATTN_F32,
                                   CLATTN_BSHD,
                                   0.0f,
                                   NULL};
    cr_assert_eq(clattn_explain_decode(ctx, &dd, &ch), CLATTN_OK);
  }
  ch = last(ctx);
  expect_same_choice(&ch, &ran);
  cr_assert_eq(clattn_explain_attention(ctx, &d, &ch), CLATTN_OK);
  expect_same_choice(&ch, &ran);
  clattn_ctx_destroy(ctx);
}

/* The searches and lookups of ctx's memo so far. */
static void memo_counts(clattn_ctx *ctx, unsigned long long *hits,
                        unsigned long long *misses) {
  clattn__memo_counts(ctx->choice->memo, hits, misses);
}

/* A repeated call finds its choice in the memo (no search): a decode call,
 * and every core call and projection of a GQA layer's decode steps (the
 * descriptions the layer builds are the same at each; two steps first,
 * since a description's padding bytes are part of its key and may hold
 * what an earlier, searching step left on the stack). */
Test(choice, repeated_calls_are_memoised) {
  clattn_ctx *ctx = tu_ctx();
  enum { D = 64, HQ = 8, HKV = 2, DK = 16, B = 2, STEPS = 4 };
  const size_t nq = (size_t)D * HQ * DK, nk = (size_t)D * HKV * DK;
  tu_rng rng = tu_rng_seed(7);
  float *w = tu_alloc(nq * 4);
  tu_fill(&rng, w, nq, 0.1f);
  cl_mem wq = tu_upload(ctx, w, nq, CLATTN_F32),
         wk = tu_upload(ctx, w, nk, CLATTN_F32),
         wv = tu_upload(ctx, w, nk, CLATTN_F32),
         wo = tu_upload(ctx, w, nq, CLATTN_F32);
  const clattn_layer_desc d = {.size = sizeof(clattn_layer_desc),
                               .d_model = D,
                               .heads_q = HQ,
                               .heads_kv = HKV,
                               .head_dim_k = DK,
                               .head_dim_v = DK};
  clattn_layer *layer = NULL;
  clattn_kv_cache *cache = NULL;
  cr_assert_eq(clattn_layer_create(ctx, &d, wq, wk, wv, wo, &layer), CLATTN_OK,
               "%s", clattn_ctx_errmsg(ctx));
  cr_assert_eq(clattn_kv_cache_create(layer, B, 16, &cache), CLATTN_OK);
  cl_mem x = tu_upload(ctx, w, (size_t)B * D, CLATTN_F32),
         y = tu_buffer(ctx, (size_t)B * D * 4);
  unsigned long long h0, m0, h1, m1;
  memo_counts(ctx, &h0, &m0);
  cr_assert_eq(clattn_layer_decode(layer, cache, x, y, NULL), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  memo_counts(ctx, &h1, &m1);
  const unsigned long long per_step = h1 + m1 - h0 - m0;
  cr_assert(m1 - m0 >= 2, "%llu searches for a decode step", m1 - m0);
  cr_assert_eq(clattn_layer_decode(layer, cache, x, y, NULL), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  memo_counts(ctx, &h0, &m0);
  for (int s = 0; s < STEPS; s++)
    cr_assert_eq(clattn_layer_decode(layer, cache, x, y, NULL), CLATTN_OK, "%s",
                 clattn_ctx_errmsg(ctx));
  memo_counts(ctx, &h1, &m1);
  cr_expect_eq(m1, m0, "%llu searches in %d steps", m1 - m0, STEPS);
  cr_expect_eq(h1 - h0, STEPS * per_step, "%llu of %llu lookups found", h1 - h0,
               STEPS * per_step);

  /* a call of the public API, and one with the caller's params (keyed on
   * their content: a copy of them finds the same choice) */
  const clattn_decode_desc dd = {sizeof(clattn_decode_desc),
                                 B,
                                 64,
                                 HQ,
                                 HKV,
                                 DK,
                                 DK,
                                 CLATTN_F32,
                                 CLATTN_BSHD,
                                 0.0f,
                                 NULL};
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  for (int i = 0; i < 3; i++)
    cr_assert_eq(clattn_explain_decode(ctx, &dd, &ch), CLATTN_OK);
  clattn_params p = {.size = sizeof(clattn_params),
                     .variant = 1,
                     .keys = 16,
                     .splits = 2},
                p2 = p;
  clattn_decode_desc dp = dd;
  dp.params = &p;
  cr_assert_eq(clattn_explain_decode(ctx, &dp, &ch), CLATTN_OK);
  cr_assert_eq(ch.source, CLATTN_CHOICE_CALLER);
  dp.params = &p2;
  cr_assert_eq(clattn_explain_decode(ctx, &dp, &ch), CLATTN_OK);
  cr_assert_eq(tu_params(ch.resolved).splits, 2);
  p2.splits = 4;
  cr_assert_eq(clattn_explain_decode(ctx, &dp, &ch), CLATTN_OK);
  cr_assert_eq(tu_params(ch.resolved).splits, 4);
  memo_counts(ctx, &h0, &m0);
  cr_expect_eq(m0 - m1, 3, "%llu searches for three keys", m0 - m1);
  cr_expect_eq(h0 - h1, 3, "%llu lookups found", h0 - h1);

  clattn_kv_cache_destroy(cache);
  clattn_layer_destroy(layer);
  tu_release(x);
  tu_release(y);
  tu_release(wq);
  tu_release(wk);
  tu_release(wv);
  tu_release(wo);
  free(w);
  clattn_ctx_destroy(ctx);
}

/* cls with its first word `from` replaced by `to`. */
static void class_with(const char *cls, const char *from, const char *to,
                       char *out, size_t cap) {
  const char *at = strstr(cls, from);
  cr_assert(at != NULL, "no \"%s\" in \"%s\"", from, cls);
  snprintf(out, cap, "%.*s%s%s", (int)(at - cls), cls, to, at + strlen(from));
}

/* The explanation of the talking-heads decode call below on a database of
 * this device's rows (class with heads word and cache length replaced,
 * keys, time). */
typedef struct th_row {
  const char *heads, *len;
  int keys;
  double t;
} th_row;

static clattn_choice th_nearest(const char *name, const th_row *rows, int n) {
  static const char *shape =
      "batch=1 kv-seq=4096 heads-k=8 heads=16 heads-v=8 head-dim=64";
  clattn_ctx *probe_ctx = tu_ctx();
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  cr_assert_eq(
      clattn_explain_shape(probe_ctx, "talking-heads-decode", shape, NULL, &ch),
      CLATTN_OK, "%s", clattn_ctx_errmsg(probe_ctx));
  const char *path = tmp_db(name);
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
  for (int i = 0; i < n; i++) {
    char a[96], cls[96], params[64];
    class_with(ch.shape_class, " h8.16.8 ", rows[i].heads, a, sizeof a);
    class_with(a, " m4096 ", rows[i].len, cls, sizeof cls);
    snprintf(params, sizeof params, "variant=1 keys=%d", rows[i].keys);
    put_entry(db, probe_ctx, 0, "talking-heads-decode", cls, params, "ok",
              rows[i].t);
  }
  clattn_db_close(db);
  clattn_ctx *ctx = ctx_with_db(path);
  cr_assert_eq(
      clattn_explain_shape(ctx, "talking-heads-decode", shape, NULL, &ch),
      CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  clattn_ctx_destroy(ctx);
  clattn_ctx_destroy(probe_ctx);
  return ch;
}

/* Talking-heads decode classes name three head counts, "h8.16.8" (key,
 * logit and value heads), each a number of its own: a row of other head
 * counts is far from the call (a head count doubled or halved weighs as
 * two doublings of a length) and never an exact match, so a row of the
 * call's heads one length away is the nearest, and among rows of other
 * heads the fewest doublings win over the faster row. */
Test(choice, talking_heads_nearest_class) {
  static const th_row near_len[] = {
      {" h8.16.4 ", " m4096 ", 16, 1e-4},
      {" h8.8.8 ", " m4096 ", 32, 2e-4},
      {" h4.16.8 ", " m4096 ", 48, 3e-4},
      {" h8.16.8 ", " m2048 ", 128, 5e-4},
  };
  clattn_choice ch = th_nearest("th-len", near_len, 4);
  cr_assert_eq(ch.source, CLATTN_CHOICE_TUNED_NEAREST, "%s", ch.why);
  cr_assert(strstr(ch.entry_class, " h8.16.8 ") != NULL &&
                strstr(ch.entry_class, " m2048 ") != NULL,
            "%s", ch.why);
  cr_assert_eq(tu_params(ch.params).keys, 128);

  static const th_row other_heads[] = {
      {" h8.16.2 ", " m4096 ", 16, 1e-4}, /* the value heads over 4 */
      {" h4.16.8 ", " m4096 ", 48, 3e-4}, /* the key heads halved */
  };
  ch = th_nearest("th-heads", other_heads, 2);
  cr_assert_eq(ch.source, CLATTN_CHOICE_TUNED_NEAREST, "%s", ch.why);
  cr_assert(strstr(ch.entry_class, " h4.16.8 ") != NULL, "%s", ch.why);
  cr_assert_eq(tu_params(ch.params).keys, 48);

  static const th_row exact[] = {
      {" h8.16.2 ", " m4096 ", 16, 1e-4},
      {" h8.16.8 ", " m4096 ", 64, 4e-4},
      {" h4.16.8 ", " m4096 ", 48, 3e-4},
  };
  ch = th_nearest("th-exact", exact, 3);
  cr_assert_eq(ch.source, CLATTN_CHOICE_TUNED, "%s", ch.why);
  cr_assert_eq(tu_params(ch.params).keys, 64);
}

/* A database with the device's measured profile and three model checks
 * whose predictions are off by `err` (relative), each call "<call> i";
 * further calls' checks go in with more model_db_add. */
static void model_db_add(const char *path, const char *call, double err) {
  clattn_ctx *ctx = tu_ctx();
  clattn_profile p = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_profile_reported(ctx, &p), CLATTN_OK);
  p.source = CLATTN_PROFILE_MEASURED;
  p.bw_read_gbs = p.bw_copy_gbs = p.bw_triad_gbs = 20.0;
  p.fp32_gflops = 200.0;
  p.launch_us = 20.0;
  p.launch_pipelined_us = 5.0;
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
  cr_assert_eq(clattn_db_put_profile(db, &p), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  for (int i = 0; i < 3; i++) {
    clattn_check_record r = {.size = sizeof(clattn_check_record)};
    snprintf(r.fingerprint, sizeof r.fingerprint, "%s", p.fingerprint);
    snprintf(r.call, sizeof r.call, "%s %d", call, i);
    snprintf(r.bound, sizeof r.bound, "memory");
    r.measured_s = 1e-3;
    r.predicted_s = 1e-3 * (1.0 + err);
    cr_assert_eq(clattn_db_put_check(db, &r), CLATTN_OK);
  }
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
}
static void model_db(const char *path, double err) {
  model_db_add(path, "check", err);
}

/* A row of an older tuning method is passed over at run time (and the
 * explanation says so); the same row of the current method is used. */
Test(choice, older_method_passed_over) {
  const char *path = tmp_db("method");
  clattn_ctx *probe_ctx = tu_ctx();
  const clattn_decode_desc d = {sizeof(clattn_decode_desc),
                                1,
                                4096,
                                8,
                                1,
                                64,
                                64,
                                CLATTN_F32,
                                CLATTN_BHSD,
                                0.0f,
                                NULL};
  char cls[96];
  clattn_shape_class_decode(&d, cls, sizeof cls);
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
  put_entry(db, probe_ctx, 0, "decode", cls,
            "variant=1 rows=1 keys=48 wg=0 splits=3", "ok", 1e-4);
  set_method(db, "decode", clattn_tune_method("decode") - 1);
  clattn_ctx *ctx = ctx_with_db(path);
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  cr_assert_eq(clattn_explain_decode(ctx, &d, &ch), CLATTN_OK);
  cr_assert_neq(ch.source, CLATTN_CHOICE_TUNED, "%s", ch.why);
  cr_assert_neq(tu_params(ch.resolved).keys, 48);
  cr_assert(strstr(ch.why, "(1 of an older tuning method passed over") != NULL,
            "%s", ch.why);
  clattn_ctx_destroy(ctx);
  set_method(db, "decode", clattn_tune_method("decode"));
  ctx = ctx_with_db(path);
  cr_assert_eq(clattn_explain_decode(ctx, &d, &ch), CLATTN_OK);
  cr_assert_eq(ch.source, CLATTN_CHOICE_TUNED, "%s", ch.why);
  cr_assert_eq(tu_params(ch.resolved).keys, 48);
  cr_assert_eq(tu_params(ch.resolved).splits, 3);
  cr_assert(strstr(ch.why, "older tuning method") == NULL, "%s", ch.why);
  clattn_ctx_destroy(ctx);
  clattn_db_close(db);
  clattn_ctx_destroy(probe_ctx);
}

/* With a measured profile and no entry, the model's pick is considered
 * only where its checks found it within 30%: then it is taken when it
 * predicts a 10% gain (within the default's kernel variant), else the
 * default. */
Test(choice, model_pick) {
  const char *path = tmp_db("model");
  model_db(path, 0.1);
  clattn_ctx *ctx = ctx_with_db(path);
  const clattn_decode_desc d = {sizeof(clattn_decode_desc),
                                1,
                                4096,
                                8,
                                1,
                                64,
                                64,
                                CLATTN_F32,
                                CLATTN_BHSD,
                                0.0f,
                                NULL};
  clattn_choice ch = {.size = sizeof(clattn_choice)},
                def = {.size = sizeof(clattn_choice)};
  cr_assert_eq(clattn_explain_decode(ctx, &d, &ch), CLATTN_OK);
  cr_assert(ch.source == CLATTN_CHOICE_MODEL ||
                ch.source == CLATTN_CHOICE_DEFAULT,
            "source %s", clattn_choice_source_str(ch.source));
  cr_assert(strstr(ch.why, "model (measured profile)") != NULL ||
                strstr(ch.why, "the model predicts no candidate") != NULL,
            "%s", ch.why);
  clattn_ctx_destroy(ctx);
  /* a model that is 60% off on this device does not pick */
  path = tmp_db("model-off");
  model_db(path, -0.6);
  ctx = ctx_with_db(path);
  clattn_choice off = {.size = sizeof(clattn_choice)};
  cr_assert_eq(clattn_explain_decode(ctx, &d, &off), CLATTN_OK);
  cr_assert_eq(off.source, CLATTN_CHOICE_DEFAULT);
  cr_assert(strstr(off.why, "median error on this device is 60%") != NULL, "%s",
            off.why);
  clattn_ctx_destroy(ctx);
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  o.no_tuning = 1;
  cr_assert_eq(clattn_ctx_create(&o, &ctx), CLATTN_OK);
  cr_assert_eq(clattn_explain_decode(ctx, &d, &def), CLATTN_OK);
  if (ch.source == CLATTN_CHOICE_MODEL) {
    cr_assert(memcmp(&ch.resolved, &def.resolved, sizeof def.resolved) != 0,
              "the model's pick is the default");
    cr_assert_eq(tu_params(ch.resolved).variant,
                 tu_params(def.resolved).variant);
  } else
    cr_assert(memcmp(&ch.resolved, &def.resolved, sizeof def.resolved) == 0);
  clattn_ctx_destroy(ctx);
}

/* The model's checks are read per family: prefill's misses (rows of the
 * first table's "attention" calls and of the family table's "prefill"
 * calls) keep it from picking prefill's parameters, not decode's, whose
 * own checks are within 30%. */
Test(choice, model_pick_per_family) {
  const char *path = tmp_db("model-family");
  model_db_add(path, "decode batch=1 kv-seq=4096", 0.1);
  model_db_add(path, "attention b=1 n=512", -0.6);
  model_db_add(path, "prefill batch=1 seq=512", -0.6);
  model_db_add(path, "talking-heads batch=1 seq=512", -0.6);
  clattn_ctx *ctx = ctx_with_db(path);
  const clattn_decode_desc d = {sizeof(clattn_decode_desc),
                                1,
                                4096,
                                8,
                                1,
                                64,
                                64,
                                CLATTN_F32,
                                CLATTN_BHSD,
                                0.0f,
                                NULL};
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  cr_assert_eq(clattn_explain_decode(ctx, &d, &ch), CLATTN_OK);
  cr_assert(strstr(ch.why, "model (measured profile)") != NULL ||
                strstr(ch.why, "the model predicts no candidate") != NULL,
            "%s", ch.why);
  const clattn_attn_desc a = {sizeof(clattn_attn_desc),
                              1,
                              512,
                              512,
                              8,
                              8,
                              64,
                              64,
                              CLATTN_F32,
                              CLATTN_BSHD,
                              CLATTN_BSHD,
                              0.0f,
                              1,
                              NULL};
  clattn_choice pf = {.size = sizeof(clattn_choice)};
  cr_assert_eq(clattn_explain_attention(ctx, &a, &pf), CLATTN_OK);
  cr_assert_eq(pf.source, CLATTN_CHOICE_DEFAULT, "%s", pf.why);
  cr_assert(strstr(pf.why, "median error on this device is 60% (prefill's") !=
                NULL,
            "%s", pf.why);
  clattn_ctx_destroy(ctx);
}

Test(choice, env_override) {
  setenv("CLATTN_PARAMS", "decode: variant=1 keys=16 splits=3", 1);
  clattn_ctx *ctx = tu_ctx();
  const clattn_decode_desc d = {sizeof(clattn_decode_desc),
                                1,
                                500,
                                2,
                                1,
                                32,
                                32,
                                CLATTN_F32,
                                CLATTN_BSHD,
                                0.0f,
                                NULL};
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  cr_assert_eq(clattn_explain_decode(ctx, &d, &ch), CLATTN_OK);
  cr_assert_eq(ch.source, CLATTN_CHOICE_OVERRIDE);
  cr_assert_eq(tu_params(ch.resolved).keys, 16);
  cr_assert_eq(tu_params(ch.resolved).splits, 3);
  cr_assert(strstr(ch.why, "CLATTN_PARAMS") != NULL, "%s", ch.why);
  clattn_ctx_destroy(ctx);
  /* a bad variable is an error that names it */
  setenv("CLATTN_PARAMS", "decode: bogus=1", 1);
  ctx = NULL;
  cr_assert_eq(clattn_ctx_create(NULL, &ctx), CLATTN_ERR_INVALID_ARG);
  cr_assert(strstr(clattn_ctx_errmsg(NULL), "CLATTN_PARAMS") != NULL, "%s",
            clattn_ctx_errmsg(NULL));
  unsetenv("CLATTN_PARAMS");
}

Test(choice, params_text) {
  clattn_params p = {.size = sizeof(clattn_params),
                     .variant = 2,
                     .keys = 32,
                     .wg = 64,
                     .splits = 8,
                     .prefetch = 2},
                q = {.size = sizeof q};
  char buf[128];
  clattn_params_format(&p, buf, sizeof buf);
  cr_assert_str_eq(buf, "variant=2 keys=32 wg=64 splits=8 prefetch=2");
  cr_assert_eq(clattn_params_parse(buf, &q), CLATTN_OK);
  cr_assert(memcmp(&p, &q, sizeof p) == 0);
  cr_assert_eq(clattn_params_parse("keys=16,wg=4", &q), CLATTN_OK);
  cr_assert(q.keys == 16 && q.wg == 4 && q.variant == 0);
  cr_assert_eq(clattn_params_parse("keys=-1", &q), CLATTN_ERR_INVALID_ARG);
  cr_assert_eq(clattn_params_parse("MWG=64", &q), CLATTN_ERR_INVALID_ARG);
  cr_assert_eq(clattn_params_parse("keys=16x", &q), CLATTN_ERR_INVALID_ARG);
  /* the text field follows the named ones as it is */
  const clattn_params t = {.size = sizeof t, .variant = 1, .text = "rows=4"};
  clattn_params_format(&t, buf, sizeof buf);
  cr_assert_str_eq(buf, "variant=1 rows=4");
}

/* The explanation of a windowed prefill call on a database of this
 * device's rows for its class with the window word `win` (" w512", or ""
 * for the same class without a window), each with its keys. */
static clattn_choice window_choice(const char *name, const char *const *win,
                                   const int *keys, int n) {
  static const char *shape = "batch=1 seq=1024 heads=8 head-dim=64 causal=1 "
                             "window=512";
  clattn_ctx *probe_ctx = tu_ctx();
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  cr_assert_eq(clattn_explain_shape(probe_ctx, "prefill", shape, NULL, &ch),
               CLATTN_OK, "%s", clattn_ctx_errmsg(probe_ctx));
  cr_assert(strstr(ch.shape_class, " w512") != NULL, "%s", ch.shape_class);
  const char *path = tmp_db(name);
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
  for (int i = 0; i < n; i++) {
    char cls[96], params[64];
    class_with(ch.shape_class, " w512", win[i], cls, sizeof cls);
    snprintf(params, sizeof params, "variant=1 rows=4 keys=%d", keys[i]);
    put_entry(db, probe_ctx, 0, "prefill", cls, params, "ok", 1e-3);
  }
  clattn_db_close(db);
  clattn_ctx *ctx = ctx_with_db(path);
  cr_assert_eq(clattn_explain_shape(ctx, "prefill", shape, NULL, &ch),
               CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  clattn_ctx_destroy(ctx);
  clattn_ctx_destroy(probe_ctx);
  return ch;
}

/* A window is a word of the class ("... c1 w512"): a call with one is near
 * the same call without (one step, as a flag), nearer than a window eight
 * times as long (three doublings), and takes its own class's row where
 * there is one. */
Test(choice, window_class_near) {
  static const char *const plain[] = {""};
  static const int plain_keys[] = {64};
  clattn_choice ch = window_choice("win-plain", plain, plain_keys, 1);
  cr_assert_eq(ch.source, CLATTN_CHOICE_TUNED_NEAREST, "%s", ch.why);
  cr_assert_eq(tu_params(ch.params).keys, 64, "%s", ch.why);

  static const char *const two[] = {" w4096", ""};
  static const int two_keys[] = {16, 32};
  ch = window_choice("win-two", two, two_keys, 2);
  cr_assert_eq(ch.source, CLATTN_CHOICE_TUNED_NEAREST, "%s", ch.why);
  cr_assert_eq(tu_params(ch.params).keys, 32, "%s", ch.why);

  static const char *const exact[] = {" w4096", "", " w512"};
  static const int exact_keys[] = {16, 32, 128};
  ch = window_choice("win-exact", exact, exact_keys, 3);
  cr_assert_eq(ch.source, CLATTN_CHOICE_TUNED, "%s", ch.why);
  cr_assert_eq(tu_params(ch.params).keys, 128, "%s", ch.why);
}
