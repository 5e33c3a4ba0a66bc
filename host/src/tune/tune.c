/* tune.c - the autotuner's engine (see tune.h): spaces, strategies, the
 * budget, resume from the database, progress. */
#include "choice/choice.h"
#include "base/versioned.h"
#include "device/profile.h"
#include "db/db.h"
#include "tune/tune.h"

#include "base/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Candidates that differ from i in exactly one dimension. */
static int neighbours(const clattn__space *s, int i, int *out) {
  int k = 0;
  const int *a = &s->val[i * s->ndims];
  for (int j = 0; j < s->n; j++) {
    const int *b = &s->val[j * s->ndims];
    int diff = 0;
    for (int d = 0; d < s->ndims && diff < 2; d++)
      diff += a[d] != b[d];
    if (diff == 1)
      out[k++] = j;
  }
  return k;
}

/* ------------------------------------------------------------- identity */

clattn_status clattn__tune_identity(clattn_ctx *ctx, clattn_tune_entry *fp) {
  clattn_profile p;
  clattn_status rc = clattn__profile_reported(ctx, &p);
  if (rc != CLATTN_OK)
    return rc;
  memset(fp, 0, sizeof *fp);
  snprintf(fp->fingerprint, sizeof fp->fingerprint, "%s", p.fingerprint);
  snprintf(fp->device, sizeof fp->device, "%s", p.name);
  snprintf(fp->vendor, sizeof fp->vendor, "%s", p.vendor);
  snprintf(fp->arch, sizeof fp->arch, "%s", p.arch);
  snprintf(fp->driver, sizeof fp->driver, "%s", p.driver);
  return CLATTN_OK;
}

/* --------------------------------------------------------------- engine */

/* Per-candidate state of one run. */
enum { C_NEW = 0, C_DONE = 1 };

typedef struct run {
  clattn_ctx *ctx;
  clattn_db *db;
  const clattn__space *s;
  const clattn__tune_family *f;
  const clattn_tune_entry *fp;
  const clattn_tune_opts *o;
  clattn_tune_result *r;
  const char *strategy;
  unsigned char *state;
  double *t; /* median of an ok candidate, INFINITY otherwise */
  double *pred, *roof;
  double roofline;  /* the least roof; 0: unknown */
  double *err;      /* error against the reference of an evaluated one */
  int best;         /* index of the best ok candidate, -1 */
  int evaluated;    /* measured + reused in this run */
  int limit;        /* evaluations allowed (now) */
  int total;        /* evaluations allowed in the whole run (progress) */
  double t0, spent; /* start; seconds spent measuring */
  const char *stopped;
} run;

static double elapsed(const run *R) { return clattn__now() - R->t0; }

/* The mean time of a candidate measured in this run, its compile
 * included (0: none yet). */
static double mean_eval(const run *R) {
  const int m = R->r->measured;
  return m ? R->spent / m : 0.0;
}

/* Whether work expected to take `need` seconds fits in what is left of
 * the budget (always without one): nothing is started that the budget
 * cannot pay for, so a run ends within the budget plus the overrun of the
 * last piece of work. */
static int fits_budget(const run *R, double need) {
  return R->o->budget_s <= 0 || elapsed(R) + need <= R->o->budget_s;
}

/* Should the run stop before the next candidate? */
static int should_stop(run *R) {
  if (R->stopped)
    return 1;
  if (R->o->stop && *R->o->stop) {
    R->stopped = "stop";
    return 1;
  }
  if (R->evaluated >= R->limit) {
    R->stopped = "max";
    return 1;
  }
  if (!fits_budget(R, mean_eval(R))) {
    R->stopped = "budget";
    return 1;
  }
  return 0;
}

static void progress(run *R, const clattn_tune_entry *last) {
  if (R->o->progress == NULL)
    return;
  clattn_tune_progress p;
  memset(&p, 0, sizeof p);
  p.size = sizeof p;
  p.kernel = R->f->kernel;
  p.shape_class = R->f->shape_class;
  p.done = R->evaluated;
  p.total = R->total;
  p.space = R->s->n;
  if (R->best >= 0) {
    p.best_s = R->t[R->best];
    clattn__space_format(R->s, R->best, p.best_params, sizeof p.best_params);
  }
  p.elapsed_s = elapsed(R);
  p.budget_s = R->o->budget_s;
  p.last = last;
  R->o->progress(&p, R->o->user);
}

static void note_result(run *R, int i, const clattn_tune_entry *e) {
  R->state[i] = C_DONE;
  R->err[i] = e->max_err;
  R->t[i] = strcmp(e->status, "ok") == 0 ? e->median_s : INFINITY;
  if (R->t[i] < INFINITY && (R->best < 0 || R->t[i] < R->t[R->best]))
    R->best = i;
  if (strcmp(e->status, "wrong") == 0 || strcmp(e->status, "failed") == 0 ||
      strcmp(e->status, "timeout") == 0)
    R->r->rejected++;
}

/* Store a measured row: the better of it and the stored one, or it
 * (opts->replace). */
static clattn_status store(run *R, const clattn_tune_entry *e) {
  const clattn_status rc = clattn__db_upsert_tune(
      R->db, e, R->o->replace ? CLATTN__UPSERT_REPLACE : CLATTN__UPSERT_BETTER,
      NULL);
  if (rc != CLATTN_OK)
    return clattn__fail(R->ctx, rc, "storing a tuning result: %s",
                        clattn_db_errmsg(R->db));
  return CLATTN_OK;
}

/* Evaluate candidate i (or reuse its stored row); 0 or a fatal status. */
static clattn_status evaluate(run *R, int i, const clattn_tune_entry *stored) {
  if (R->state[i] == C_DONE)
    return CLATTN_OK;
  R->evaluated++;
  if (stored) {
    R->r->reused++;
    note_result(R, i, stored);
    progress(R, stored);
    return CLATTN_OK;
  }
  clattn_tune_entry e = *R->fp;
  snprintf(e.kernel, sizeof e.kernel, "%s", R->f->kernel);
  snprintf(e.shape_class, sizeof e.shape_class, "%s", R->f->shape_class);
  clattn__space_format(R->s, i, e.params, sizeof e.params);
  snprintf(e.strategy, sizeof e.strategy, "%s", R->strategy);
  e.tune_method = clattn_tune_method(R->f->kernel);
  e.predicted_s = R->pred[i];
  double timeout = R->o->timeout_s > 0 ? R->o->timeout_s : 10.0;
  int clamped = 0; /* the budget, not the candidate, sets the timeout */
  /* the run's first measurement (the default's) has its whole timeout,
   * even when setting up (cold compiles) spent the budget: a run ends
   * within the budget plus one candidate */
  if (R->o->budget_s > 0 && R->r->measured > 0) {
    double left = R->o->budget_s - elapsed(R);
    if (left < timeout) {
      timeout = left > 0.05 ? left : 0.05;
      clamped = 1;
    }
  }
  const double best = R->best >= 0 ? R->t[R->best] : 0.0;
  const double t0 = clattn__now();
  clattn_status rc =
      R->f->eval(R->f->self, &R->s->val[i * R->s->ndims], best, timeout,
                 R->o->repeats > 0 ? R->o->repeats : 7, &e);
  R->spent += clattn__now() - t0;
  if (rc != CLATTN_OK)
    return rc;
  if (clamped && strcmp(e.status, "timeout") == 0) {
    /* out of budget, not a slow candidate: not stored, so that a rerun
     * measures it */
    R->evaluated--;
    R->state[i] = C_DONE;
    R->stopped = "budget";
    return CLATTN_OK;
  }
  R->r->measured++;
  if ((rc = store(R, &e)) != CLATTN_OK)
    return rc;
  note_result(R, i, &e);
  progress(R, &e);
  return CLATTN_OK;
}

/* xorshift32 */
static unsigned rnd(unsigned *s) {
  unsigned x = *s;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *s = x;
}

static void shuffle(int *a, int n, unsigned *seed) {
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(rnd(seed) % (unsigned)(i + 1));
    int t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

static const clattn_tune_entry *
find_stored(const run *R, const clattn_tune_entry *rows, int nrows, int i) {
  char p[256];
  clattn__space_format(R->s, i, p, sizeof p);
  for (int k = 0; k < nrows; k++)
    if (strcmp(rows[k].params, p) == 0)
      return &rows[k];
  return NULL;
}

#define EVAL(i)                                                                \
  do {                                                                         \
    if ((rc = evaluate(R, (i), find_stored(R, rows, nrows, (i)))))             \
      goto done;                                                               \
  } while (0)

/* The model's predicted time and roofline bound of every candidate, and
 * the least bound (R->roofline). */
static void predict_all(run *R) {
  const clattn__space *s = R->s;
  R->roofline = 0.0;
  for (int i = 0; i < s->n; i++) {
    R->pred[i] = R->roof[i] = 0.0;
    if (R->f->predict &&
        R->f->predict(R->f->self, &s->val[i * s->ndims], &R->pred[i],
                      &R->roof[i]) &&
        R->roof[i] > 0 && (R->roofline == 0 || R->roof[i] < R->roofline))
      R->roofline = R->roof[i];
  }
}

/* The family re-times the device's bandwidth (if it can), then every
 * candidate is predicted on it; the result's roofline is the new one. */
static void rebound(run *R) {
  if (R->f->predict && R->f->refresh && R->f->refresh(R->f->self))
    R->r->refreshes++;
  predict_all(R);
  R->r->roofline_s = R->roofline;
}

/* Is the best measured within the stop fraction of the roofline?  Asked
 * again after re-timing the bandwidth, since the profile may be of a
 * slower moment than this one. */
static int at_roofline(run *R, double frac) {
  if (R->roofline <= 0 || R->roofline < frac * R->t[R->best])
    return 0;
  rebound(R);
  return R->roofline > 0 && R->roofline >= frac * R->t[R->best];
}

/* Walk `order` (n indices), evaluating each until the run must stop.  The
 * model order (use_model) skips what cannot beat the best and stops at the
 * roofline. */
static clattn_status walk(run *R, const int *order, int n, int use_model,
                          const clattn_tune_entry *rows, int nrows) {
  clattn_status rc = CLATTN_OK;
  const double frac = R->o->stop_fraction > 0 ? R->o->stop_fraction : 0.95;
  for (int k = 0; k < n && !should_stop(R); k++) {
    int i = order[k];
    if (use_model && R->best >= 0 && R->roofline > 0 &&
        R->t[R->best] < frac * R->roofline)
      use_model = 0; /* a measurement beats the model's bound by more than
                        the stop margin: the profile understates the device
                        (stale, or a busy machine when it was probed), so
                        the bounds neither prune nor stop */
    if (use_model && R->best >= 0) {
      if (R->roof[i] > 0 && R->roof[i] >= R->t[R->best])
        continue; /* its best case cannot beat the best measured */
      if (at_roofline(R, frac)) {
        R->stopped = "roofline";
        break;
      }
    }
    EVAL(i);
  }
done:
  return rc;
}

/* Simulated annealing over log-time, moving between neighbours. */
static clattn_status anneal(run *R, unsigned *seed,
                            const clattn_tune_entry *rows, int nrows) {
  clattn_status rc = CLATTN_OK;
  int *nb = malloc((size_t)R->s->n * sizeof *nb);
  if (nb == NULL)
    return clattn__fail(R->ctx, CLATTN_ERR_NOMEM, "out of host memory");
  int cur = R->best >= 0 ? R->best : R->s->def >= 0 ? R->s->def : 0;
  double temp = 0.25; /* a 25% slower move is accepted with p = 1/e */
  int stale = 0;
  while (!should_stop(R)) {
    EVAL(cur);
    int k = neighbours(R->s, cur, nb), fresh = 0;
    for (int j = 0; j < k; j++)
      if (R->state[nb[j]] != C_DONE)
        nb[fresh++] = nb[j];
    if (fresh == 0 || stale > 3 * R->s->ndims) {
      /* a neighbourhood fully measured: restart from an unmeasured
       * candidate (the best one's neighbourhood is then exhausted) */
      int left = 0;
      for (int j = 0; j < R->s->n; j++)
        if (R->state[j] != C_DONE)
          nb[left++] = j;
      if (left == 0) {
        R->stopped = "done";
        break;
      }
      cur = nb[rnd(seed) % (unsigned)left];
      stale = 0;
      continue;
    }
    int next = nb[rnd(seed) % (unsigned)fresh];
    if (should_stop(R)) /* a restart may have just spent the last one */
      break;
    EVAL(next);
    double a = R->t[cur], b = R->t[next];
    if (b < a || (b < INFINITY && (double)(rnd(seed) % 10000u) / 10000.0 <
                                      exp(-(log(b) - log(a)) / temp))) {
      stale = b < a ? 0 : stale + 1;
      cur = next;
    } else {
      stale++;
    }
    temp *= 0.93;
    if (R->best >= 0 && R->t[R->best] < R->t[cur] && stale > R->s->ndims)
      cur = R->best; /* intensify around the best */
  }
done:
  free(nb);
  return rc;
}

/* Verification: the search's best few and the default, timed again in
 * interleaved rounds (round-robin, so drift on a busy machine hits all
 * alike); their medians replace the search's figures, in the result and
 * in the database.  A noisy stretch during one candidate's measurement
 * then cannot crown a false winner.  With the family's time1, a round is
 * one run of each candidate (VERIFY_RUNS rounds, the order rotating);
 * without it, one whole evaluation each (VERIFY_ROUNDS rounds, the median
 * of the round medians). */
enum { VERIFY_TOP = 6, VERIFY_ROUNDS = 3, VERIFY_RUNS = 31 };

/* Interleaved single runs: med[j] gets candidate cand[j]'s median
 * (INFINITY if a run failed); returns the rounds done. */
static int verify_runs(run *R, const int *cand, int n,
                       double med[][VERIFY_RUNS]) {
  int rounds = 0;
  /* a round's expected time: first the candidates' search medians, then
   * the last round's */
  double round_s = 0.0;
  for (int k = 0; k < n; k++)
    round_s += R->t[cand[k]];
  for (int r = 0; r < VERIFY_RUNS; r++) {
    if ((R->o->stop && *R->o->stop) || !fits_budget(R, round_s))
      break;
    const double t0 = clattn__now();
    for (int k = 0; k < n; k++) {
      const int j = (k + r) % n;
      double t = R->f->time1(R->f->self, &R->s->val[cand[j] * R->s->ndims]);
      med[j][r] = t >= 0 ? t : INFINITY;
    }
    round_s = clattn__now() - t0;
    rounds++;
  }
  for (int j = 0; j < n && rounds; j++)
    qsort(med[j], (size_t)rounds, sizeof med[j][0], clattn__cmp_double);
  return rounds;
}

static clattn_status verify(run *R) {
  int cand[VERIFY_TOP + 1], n = 0;
  double med[VERIFY_TOP + 1][VERIFY_RUNS];
  clattn_tune_entry e[VERIFY_TOP + 1];
  for (int k = 0; k < VERIFY_TOP; k++) {
    int b = -1;
    for (int i = 0; i < R->s->n; i++) {
      int taken = 0;
      for (int j = 0; j < n; j++)
        taken |= cand[j] == i;
      if (!taken && R->t[i] < INFINITY && (b < 0 || R->t[i] < R->t[b]))
        b = i;
    }
    if (b >= 0)
      cand[n++] = b;
  }
  int has_def = 0;
  for (int j = 0; j < n; j++)
    has_def |= cand[j] == R->s->def;
  if (!has_def && R->s->def >= 0 && R->t[R->s->def] < INFINITY)
    cand[n++] = R->s->def;
  if (n < 2)
    return CLATTN_OK;
  const int reps = R->o->repeats > 0 ? R->o->repeats : 7;
  const double timeout = R->o->timeout_s > 0 ? R->o->timeout_s : 10.0;
  int rounds = 0;
  for (int j = 0; j < n; j++)
    e[j] = *R->fp;
  if (R->f->time1)
    rounds = verify_runs(R, cand, n, med);
  for (int r = 0; !R->f->time1 && r < VERIFY_ROUNDS; r++) {
    /* a round is a whole evaluation of each candidate */
    if ((R->o->stop && *R->o->stop) || !fits_budget(R, n * mean_eval(R)))
      break;
    for (int j = 0; j < n; j++) {
      e[j] = *R->fp;
      clattn_status rc =
          R->f->eval(R->f->self, &R->s->val[cand[j] * R->s->ndims], 0.0,
                     timeout, reps, &e[j]);
      if (rc != CLATTN_OK)
        return rc;
      med[j][r] = strcmp(e[j].status, "ok") == 0 ? e[j].median_s : INFINITY;
    }
    rounds++;
  }
  if (rounds == 0)
    return CLATTN_OK;
  R->best = -1;
  for (int j = 0; j < n; j++) {
    double *m = med[j];
    if (!R->f->time1)
      qsort(m, (size_t)rounds, sizeof m[0], clattn__cmp_double);
    const int i = cand[j];
    R->t[i] = m[rounds / 2];
    if (R->t[i] < INFINITY && (R->best < 0 || R->t[i] < R->t[R->best]))
      R->best = i;
    /* store the verified figure with the candidate's identity */
    clattn_tune_entry row = e[j];
    snprintf(row.kernel, sizeof row.kernel, "%s", R->f->kernel);
    snprintf(row.shape_class, sizeof row.shape_class, "%s", R->f->shape_class);
    clattn__space_format(R->s, i, row.params, sizeof row.params);
    snprintf(row.strategy, sizeof row.strategy, "%s", R->strategy);
    row.tune_method = clattn_tune_method(R->f->kernel);
    row.predicted_s = R->pred[i];
    row.max_err = R->err[i];
    if (R->t[i] < INFINITY) {
      /* a round that failed has no time: the spread is of the others */
      int timed = rounds;
      while (timed > 1 && !(m[timed - 1] < INFINITY))
        timed--;
      row.median_s = R->t[i];
      row.spread = (m[timed - 1] - m[0]) / R->t[i];
      snprintf(row.status, sizeof row.status, "ok");
      int len = snprintf(row.message, sizeof row.message,
                         CLATTN_VERIFIED_PREFIX " median of %d interleaved %s",
                         rounds, R->f->time1 ? "runs" : "rounds");
      if (timed < rounds && len > 0 && (size_t)len < sizeof row.message)
        snprintf(row.message + len, sizeof row.message - (size_t)len,
                 " (%d failed)", rounds - timed);
    } else {
      snprintf(row.status, sizeof row.status, "failed");
      snprintf(row.message, sizeof row.message,
               "failed when timed again in the verification");
    }
    clattn_status rc = store(R, &row);
    if (rc != CLATTN_OK)
      return rc;
  }
  R->r->verified = n;
  return CLATTN_OK;
}

/* Order indices by ascending key (stable; spaces are small). */
static void sort_by(int *order, int n, const double *key) {
  for (int i = 1; i < n; i++) {
    int v = order[i], j = i;
    for (; j > 0 && key[order[j - 1]] > key[v]; j--)
      order[j] = order[j - 1];
    order[j] = v;
  }
}

const char *clattn_tune_strategy_str(clattn_tune_strategy s) {
  switch (s) {
  case CLATTN_TUNE_AUTO:
    return "auto";
  case CLATTN_TUNE_EXHAUSTIVE:
    return "exhaustive";
  case CLATTN_TUNE_RANDOM:
    return "random";
  case CLATTN_TUNE_ANNEAL:
    return "anneal";
  case CLATTN_TUNE_MODEL:
    return "model";
  }
  return "unknown";
}

clattn_status
clattn__tune_run(clattn_ctx *ctx, clattn_db *db, const clattn__space *s,
                 const clattn__tune_family *f, const clattn_tune_entry *fp,
                 const clattn_tune_opts *opts, clattn_tune_result *out) {
  static const clattn_tune_opts none;
  const clattn_tune_opts *o = opts ? opts : &none;
  clattn_status rc = CLATTN_OK;
  clattn_tune_entry *rows = NULL;
  int nrows = 0, *order = NULL;
  run Rs, *R = &Rs;
  memset(R, 0, sizeof *R);
  memset(out, 0, sizeof *out);
  snprintf(out->shape_class, sizeof out->shape_class, "%s", f->shape_class);
  out->space = s->n;
  out->pruned = s->pruned;
  if (s->n == 0)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "%s %s: no valid candidate on this device (%d "
                        "pruned)",
                        f->kernel, f->shape_class, s->pruned);
  if ((int)o->strategy < 0 || o->strategy > CLATTN_TUNE_MODEL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "unknown tuning strategy %d", (int)o->strategy);
  clattn_tune_strategy strat = o->strategy;
  if (strat == CLATTN_TUNE_AUTO && s->n <= 12)
    strat = CLATTN_TUNE_EXHAUSTIVE;
  if (strat == CLATTN_TUNE_MODEL && f->predict == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "%s: the model has no prediction for this kernel",
                        f->kernel);
  R->ctx = ctx;
  R->db = db;
  R->s = s;
  R->f = f;
  R->fp = fp;
  R->o = o;
  R->r = out;
  R->strategy = clattn_tune_strategy_str(strat);
  R->best = -1;
  R->t0 = f->started > 0 ? f->started : clattn__now();
  R->limit = o->max_candidates > 0             ? o->max_candidates
             : strat == CLATTN_TUNE_EXHAUSTIVE ? s->n
                                               : (s->n + 3) / 4;
  if (o->max_candidates <= 0 && strat != CLATTN_TUNE_EXHAUSTIVE && R->limit < 8)
    R->limit = 8;
  if (R->limit > s->n)
    R->limit = s->n;
  R->total = R->limit;
  R->state = calloc((size_t)s->n, 1);
  R->t = malloc((size_t)s->n * sizeof *R->t);
  R->pred = calloc((size_t)s->n, sizeof *R->pred);
  R->roof = calloc((size_t)s->n, sizeof *R->roof);
  R->err = calloc((size_t)s->n, sizeof *R->err);
  order = malloc((size_t)s->n * sizeof *order);
  if (!R->state || !R->t || !R->pred || !R->roof || !R->err || !order) {
    rc = clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
    goto done;
  }
  for (int i = 0; i < s->n; i++) {
    R->t[i] = INFINITY;
    order[i] = i;
  }
  rebound(R);
  if (!o->fresh && (rc = clattn__db_list_tune(db, fp->fingerprint, f->kernel,
                                              f->shape_class, &rows, &nrows))) {
    rc = clattn__fail(ctx, rc, "reading earlier tuning results: %s",
                      clattn_db_errmsg(db));
    goto done;
  }
  /* rows of another tuning method are measured again, not reused */
  int kept = 0;
  for (int k = 0; k < nrows; k++) {
    if (clattn__tune_row_current(&rows[k]))
      rows[kept++] = rows[k];
    else
      out->stale++;
  }
  nrows = kept;
  unsigned seed = o->seed ? o->seed : 1u;
  /* the default first, whatever the budget: the baseline every result is
   * compared with, always measured (clattn_tune_opts) even when setting
   * up the run (the bandwidth refresh, the predictions) spent the budget */
  if (s->def >= 0 && !(o->stop && *o->stop) && R->limit > 0) {
    EVAL(s->def);
    out->default_s = R->t[s->def] < INFINITY ? R->t[s->def] : 0.0;
  }
  switch (strat) {
  case CLATTN_TUNE_EXHAUSTIVE:
    rc = walk(R, order, s->n, 0, rows, nrows);
    break;
  case CLATTN_TUNE_RANDOM:
    shuffle(order, s->n, &seed);
    rc = walk(R, order, s->n, 0, rows, nrows);
    break;
  case CLATTN_TUNE_MODEL:
    sort_by(order, s->n, R->pred);
    rc = walk(R, order, s->n, 1, rows, nrows);
    break;
  case CLATTN_TUNE_ANNEAL:
    rc = anneal(R, &seed, rows, nrows);
    break;
  case CLATTN_TUNE_AUTO: {
    /* a third of the evaluations on the model's (or a random) order, the
     * rest annealing from the best of them */
    int first = R->limit / 3 > 1 ? R->limit / 3 : 1;
    int saved = R->limit;
    R->limit = R->evaluated + first < saved ? R->evaluated + first : saved;
    if (f->predict && R->roofline > 0) {
      sort_by(order, s->n, R->pred);
      rc = walk(R, order, s->n, 1, rows, nrows);
    } else {
      shuffle(order, s->n, &seed);
      rc = walk(R, order, s->n, 0, rows, nrows);
    }
    R->limit = saved;
    if (rc == CLATTN_OK &&
        (R->stopped == NULL || strcmp(R->stopped, "max") == 0)) {
      R->stopped = NULL;
      rc = anneal(R, &seed, rows, nrows);
    }
    break;
  }
  }
  if (rc != CLATTN_OK)
    goto done;
  if (R->stopped == NULL ||
      (strcmp(R->stopped, "max") == 0 && R->evaluated >= s->n))
    R->stopped = "done";
  /* a rerun that only reused stored (verified) rows keeps their figures */
  if (out->measured > 0 && !(o->stop && *o->stop) &&
      (rc = verify(R)) != CLATTN_OK)
    goto done;
  if (s->def >= 0)
    out->default_s = R->t[s->def] < INFINITY ? R->t[s->def] : 0.0;
done:
  if (R->best >= 0) {
    out->best_s = R->t[R->best];
    clattn__space_format(s, R->best, out->best_params, sizeof out->best_params);
  }
  out->stopped = R->stopped ? R->stopped : "done";
  out->elapsed_s = elapsed(R);
  free(rows);
  free(order);
  free(R->state);
  free(R->t);
  free(R->pred);
  free(R->roof);
  free(R->err);
  return rc;
}

clattn_status clattn__tune_public(clattn_ctx *ctx, const clattn__tune_call *c,
                                  const clattn_tune_opts *opts,
                                  clattn_tune_result *out) {
  clattn_tune_opts own_opts;
  clattn_tune_result own;
  char why[256];
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  if (out != NULL && clattn__struct_size(out) < sizeof(size_t))
    return clattn__fail_outside(ctx, CLATTN_ERR_INVALID_ARG,
                                "clattn_tune_result.size is 0: set it to "
                                "sizeof(clattn_tune_result)");
  if ((rc = clattn__struct_in_ptr((const void **)&opts, &own_opts,
                                  sizeof own_opts, "clattn_tune_opts", why,
                                  sizeof why)))
    return clattn__fail_outside(ctx, rc, why);
  memset(&own, 0, sizeof own);
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  rc = c->run(ctx, c, opts, out ? &own : NULL);
  clattn__ctx_leave(locked);
  if (out != NULL)
    clattn__struct_out(out, &own, sizeof own, "clattn_tune_result", why,
                       sizeof why);
  return rc;
}
