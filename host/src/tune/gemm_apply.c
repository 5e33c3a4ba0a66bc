/* gemm_apply.c - what the projections' GEMMs run, settled once per
 * context (clattn__gemm_prepare, clattn_explain_gemm), and CLBlast's state
 * after a tuning run (clattn__gemm_restore); see tune_gemm.h for how
 * CLBlast takes Xgemm parameters.
 *
 * CLBlast holds one parameter set per device for the whole process and
 * cannot give its defaults back, so a context sets the device's tuned
 * Xgemm entry on CLBlast only when it opts in (clattn_ctx_opts.
 * clblast_override).  Otherwise the entry's range, the GEMMs the override
 * would have re-parameterised, becomes ctx->gemm_own_from: there the
 * projections run the library's own GEMM kernel with its own tuned
 * parameters, and every CLBlast call in the process keeps CLBlast's own
 * parameters. */
#include "choice/choice.h"
#include "device/profile.h"
#include "tune/tune_gemm.h"

#include "base/clblast_status.h"
#include "db/db.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------- overrides */

CLBlastStatusCode clattn__xgemm_override(cl_device_id dev, const int *v) {
  size_t val[CLATTN_XGEMM_NPARAMS];
  for (int i = 0; i < CLATTN_XGEMM_NPARAMS; i++)
    val[i] = (size_t)v[i];
  return CLBlastOverrideParameters(dev, "Xgemm", CLBlastPrecisionSingle,
                                   CLATTN_XGEMM_NPARAMS,
                                   (const char **)clattn__xgemm_names, val);
}

CLBlastStatusCode clattn__xgemm_min_indirect(cl_device_id dev, size_t size) {
  const char *name[1] = {"XGEMM_MIN_INDIRECT_SIZE"};
  return CLBlastOverrideParameters(dev, "GemmRoutine", CLBlastPrecisionSingle,
                                   1, name, &size);
}

/* -------------------------------------------------------------- apply */

/* Record the line clattn_explain_gemm reports (printf-style). */
static void explain(clattn_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void explain(clattn_ctx *ctx, const char *fmt, ...) {
  const size_t cap = sizeof ctx->gemm_explain;
  va_list ap;
  va_start(ap, fmt);
  const int n = vsnprintf(ctx->gemm_explain, cap, fmt, ap);
  va_end(ap);
  if (n >= (int)cap) /* a line cut short says so */
    memcpy(ctx->gemm_explain + cap - 4, "...", 4);
}

/* CLBlast's parameters are per process: what this process last set for
 * each device (a few devices at most), so that a context that applies
 * nothing still reports what CLBlast runs. */
#define MAX_DEVICES 8
static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  cl_device_id dev;
  char text[sizeof(((clattn_ctx *)0)->gemm_explain)];
} set_by_us[MAX_DEVICES];

static void note_set(cl_device_id dev, const char *text) {
  pthread_mutex_lock(&set_lock);
  for (int i = 0; i < MAX_DEVICES; i++)
    if (set_by_us[i].dev == dev || set_by_us[i].dev == NULL) {
      set_by_us[i].dev = dev;
      snprintf(set_by_us[i].text, sizeof set_by_us[i].text, "%s", text);
      break;
    }
  pthread_mutex_unlock(&set_lock);
}

/* What this process set on dev's CLBlast, into buf ("" when nothing). */
static void set_earlier(cl_device_id dev, char *buf, size_t cap) {
  buf[0] = '\0';
  pthread_mutex_lock(&set_lock);
  for (int i = 0; i < MAX_DEVICES; i++)
    if (set_by_us[i].dev == dev)
      snprintf(buf, cap, "%s", set_by_us[i].text);
  pthread_mutex_unlock(&set_lock);
}

/* "CLBlast defaults: <why>", unless this process overrode the device's
 * parameters before: then what it set. */
static void explain_defaults(clattn_ctx *ctx, const char *why) {
  char earlier[sizeof ctx->gemm_explain];
  set_earlier(ctx->device, earlier, sizeof earlier);
  if (earlier[0] == '\0')
    explain(ctx, "CLBlast defaults: %s", why);
  else
    explain(ctx, "%s (set earlier in this process; here: %s)", earlier, why);
}

/* "m512 n512 k512" -> its m*n*k (0 when the text is not a GEMM class). */
static double class_volume(const char *cls) {
  int m, n, k, used = 0;
  if (sscanf(cls, "m%d n%d k%d%n", &m, &n, &k, &used) != 3 ||
      cls[used] != '\0' || m <= 0 || n <= 0 || k <= 0)
    return 0.0;
  return (double)m * n * k;
}

/* "NAME=value ..." with every Xgemm name exactly once; 0 on success. */
static int parse_params(const char *text, int *v) {
  int seen[CLATTN_XGEMM_NPARAMS] = {0};
  const char *p = text;
  for (;;) {
    char name[32];
    int val, used = 0, i;
    while (*p == ' ')
      p++;
    if (*p == '\0')
      break;
    if (sscanf(p, "%31[A-Z_]=%d%n", name, &val, &used) != 2)
      return -1;
    p += used;
    for (i = 0; i < CLATTN_XGEMM_NPARAMS; i++)
      if (strcmp(name, clattn__xgemm_names[i]) == 0)
        break;
    if (i == CLATTN_XGEMM_NPARAMS || seen[i])
      return -1;
    seen[i] = 1;
    v[i] = val;
  }
  for (int i = 0; i < CLATTN_XGEMM_NPARAMS; i++)
    if (!seen[i])
      return -1;
  return 0;
}

/* The entry to apply among rows: the best "ok" row of the tuned class with
 * the largest m*n*k (rows are ordered by class, ok first, then time), and
 * the smallest tuned volume.  match: NULL (any row) or a device identity
 * whose vendor and arch rows must share.  Returns the index or -1. */
static int pick(const clattn_ctx *ctx, const clattn_tune_entry *rows, int n,
                const clattn_tune_entry *match, double *min_volume) {
  int best = -1;
  double best_vol = 0.0;
  *min_volume = 0.0;
  for (int i = 0; i < n; i++) {
    const clattn_tune_entry *r = &rows[i];
    int v[CLATTN_XGEMM_NPARAMS];
    double vol = class_volume(r->shape_class);
    if (strcmp(r->status, "ok") != 0 || vol <= 0 || r->median_s <= 0 ||
        !clattn__tune_row_current(r))
      continue;
    if (match != NULL &&
        (strcmp(r->vendor, match->vendor) != 0 || match->arch[0] == '\0' ||
         strcmp(r->arch, match->arch) != 0))
      continue;
    if (parse_params(r->params, v) != 0 ||
        !clattn__xgemm_valid(ctx, v, NULL, 0))
      continue;
    if (*min_volume == 0.0 || vol < *min_volume)
      *min_volume = vol;
    if (best < 0 || vol > best_vol ||
        (vol == best_vol && r->median_s < rows[best].median_s)) {
      best = i;
      best_vol = vol;
    }
  }
  return best;
}

/* The shipped Xgemm rows that match the device at level (2: vendor and
 * arch, 1: a CPU of the same vector ISA class; clattn__shipped_match),
 * copied into *out (malloc'ed; NULL when none). */
static clattn_status shipped_rows(const clattn_tune_entry *fp, int is_cpu,
                                  int level, clattn_tune_entry **out, int *n) {
  int ns = 0;
  const clattn_tune_entry *rows = clattn__shipped_rows(&ns, NULL);
  *out = NULL;
  *n = 0;
  for (int i = 0; i < ns; i++) {
    if (strcmp(rows[i].kernel, CLATTN_XGEMM_KERNEL) != 0 ||
        clattn__shipped_match(&rows[i], fp->vendor, fp->arch, is_cpu) != level)
      continue;
    if (*out == NULL) {
      *out = malloc((size_t)ns * sizeof **out);
      if (*out == NULL)
        return CLATTN_ERR_NOMEM;
    }
    (*out)[(*n)++] = rows[i];
  }
  return CLATTN_OK;
}

/* Settle the best Xgemm entry for the context's device: of db (may be
 * NULL; why_no_db says why there is none) for the device, else one of the
 * same vendor and arch, else the shipped data's (unless tuning is off).
 * override: set it on CLBlast (`by` names who asked, for the record);
 * else its range becomes ctx->gemm_own_from.  What happened goes to
 * ctx->gemm_explain.  *applied (may be NULL): 1 when CLBlast now runs
 * tuned Xgemm parameters. */
static clattn_status settle(clattn_ctx *ctx, clattn_db *db,
                            const char *why_no_db, int override, const char *by,
                            int *applied) {
  clattn_status rc = CLATTN_OK;
  clattn_tune_entry fp, *rows = NULL;
  int n = 0, i = -1, v[CLATTN_XGEMM_NPARAMS], level = 0, shipped = 0;
  const char *from = "";
  double min_vol = 0.0;
  size_t indirect;
  CLBlastStatusCode s;
  char why[640];

  if (applied != NULL)
    *applied = 0;
  memset(&fp, 0, sizeof fp);
  rc = clattn__tune_identity(ctx, &fp);
  if (rc != CLATTN_OK)
    return rc;
  snprintf(why, sizeof why, "%s",
           db ? "no tuning entry for this device" : why_no_db);
  if (db != NULL) {
    rc = clattn__db_list_tune(db, fp.fingerprint, CLATTN_XGEMM_KERNEL, NULL,
                              &rows, &n);
    if (rc == CLATTN_OK && (i = pick(ctx, rows, n, NULL, &min_vol)) < 0) {
      free(rows);
      rows = NULL;
      from = "same vendor and arch, ";
      rc = clattn__db_list_tune(db, NULL, CLATTN_XGEMM_KERNEL, NULL, &rows, &n);
      if (rc == CLATTN_OK)
        i = pick(ctx, rows, n, &fp, &min_vol);
    }
    if (rc != CLATTN_OK) {
      free(rows);
      rows = NULL;
      if (rc == CLATTN_ERR_NOMEM)
        return clattn__fail(ctx, rc, "reading Xgemm tuning entries: %s",
                            clattn_db_errmsg(db));
      snprintf(why, sizeof why, "tuning database unreadable: %.400s",
               clattn_db_errmsg(db));
      i = -1;
    }
  }
  /* none of the user's own: the shipped data's, matched as the choice
   * matches it (db/shipped.c) */
  if (i < 0 && !ctx->choice->no_tuning) {
    clattn_profile rep;
    rc = clattn__profile_reported(ctx, &rep);
    if (rc != CLATTN_OK)
      return rc;
    for (level = 2; level >= 1 && i < 0; level--) {
      free(rows);
      rc = shipped_rows(&fp, rep.is_cpu, level, &rows, &n);
      if (rc != CLATTN_OK)
        return clattn__fail(ctx, rc, "out of host memory");
      i = pick(ctx, rows, n, NULL, &min_vol);
      if (i >= 0) {
        shipped = 1;
        from = level == 2 ? "shipped data, "
                          : "shipped data, same vector "
                            "ISA, ";
      }
    }
    if (i < 0) {
      const char *note = NULL;
      int ns = 0;
      clattn__shipped_rows(&ns, &note);
      clattn__appendf(why, sizeof why, "; shipped data: none for %s %s (%s)",
                      fp.vendor, fp.arch[0] ? fp.arch : "(no arch)", note);
    }
  }
  if (i < 0) {
    free(rows);
    explain_defaults(ctx, why);
    return CLATTN_OK;
  }
  parse_params(rows[i].params, v); /* checked by pick */
  indirect = (size_t)floor(cbrt(min_vol) + 1e-6);
  if (indirect < 1)
    indirect = 1;
  if (!override) {
    char earlier[sizeof ctx->gemm_explain];
    set_earlier(ctx->device, earlier, sizeof earlier);
    ctx->gemm_own_from = (double)indirect * (double)indirect * indirect;
    explain(ctx,
            "own GEMM kernel for projections of m*n*k >= %zu^3 and over %d "
            "rows, where the %s entry %s (%sdevice %s, %s %s, %.3g ms) "
            "would re-parameterise CLBlast, which this context does not "
            "do (clattn_ctx_opts.clblast_override); CLBlast's calls run "
            "%s%s",
            indirect, CLATTN_LAYER_GEMV_ROWS, shipped ? "shipped" : "tuned",
            rows[i].shape_class, from, rows[i].device, rows[i].vendor,
            rows[i].arch, rows[i].median_s * 1e3,
            earlier[0] ? "what this process set earlier: " : "its defaults",
            earlier);
    free(rows);
    return CLATTN_OK;
  }
  s = clattn__xgemm_override(ctx->device, v);
  if (s == CLBlastSuccess)
    s = clattn__xgemm_min_indirect(ctx->device, indirect);
  if (s != CLBlastSuccess) {
    explain(ctx,
            "CLBlastOverrideParameters refused the tuned entry %s (%s): %s "
            "(%d); CLBlast keeps its earlier parameters",
            rows[i].shape_class, rows[i].params, clattn__clblast_status_str(s),
            (int)s);
    free(rows);
    return CLATTN_OK;
  }
  explain(ctx,
          "clblast-xgemm: %s entry %s (%sdevice %s, %s %s, %.3g ms, %.1f "
          "GFLOP/s): %s; Xgemm from %zu^3 (XGEMM_MIN_INDIRECT_SIZE=%zu), "
          "set on CLBlast for the whole process (%s)",
          shipped ? "shipped" : "tuned", rows[i].shape_class, from,
          rows[i].device, rows[i].vendor, rows[i].arch, rows[i].median_s * 1e3,
          2.0 * class_volume(rows[i].shape_class) / rows[i].median_s * 1e-9,
          rows[i].params, indirect, indirect, by);
  note_set(ctx->device, ctx->gemm_explain);
  if (applied != NULL)
    *applied = 1;
  free(rows);
  return CLATTN_OK;
}

clattn_status clattn__gemm_prepare(clattn_ctx *ctx, int apply) {
  clattn_status rc = clattn__ctx_check(ctx);
  clattn_db *db = NULL;
  if (rc != CLATTN_OK)
    return rc;
  if (ctx->gemm_explain[0] != '\0')
    return CLATTN_OK; /* once per context */
  /* an opted-in context plans as if CLBlast ran the entry (gemm_own_from
   * stays 0), and sets it on CLBlast only where a GEMM is to run */
  if (ctx->clblast_override && !apply)
    return CLATTN_OK;
  char why[512];
  rc = clattn__tuning_db_open(ctx, &db, why, sizeof why);
  if (rc != CLATTN_OK)
    return clattn__fail(ctx, rc, "%s", why);
  rc = settle(ctx, db, why, ctx->clblast_override,
              "clattn_ctx_opts.clblast_override", NULL);
  clattn_db_close(db);
  return rc;
}

static clattn_status explain_gemm_unlocked(clattn_ctx *ctx, char *buf,
                                           size_t cap) {
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc != CLATTN_OK)
    return rc;
  if (buf == NULL || cap == 0)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "clattn_explain_gemm: NULL or empty buffer");
  rc = clattn__gemm_prepare(ctx, 1);
  if (rc != CLATTN_OK)
    return rc;
  snprintf(buf, cap, "%s", ctx->gemm_explain);
  if (strlen(ctx->gemm_explain) >= cap)
    return clattn__fail(ctx, CLATTN_ERR_BUFFER_TOO_SMALL,
                        "clattn_explain_gemm: %zu bytes needed, %zu given",
                        strlen(ctx->gemm_explain) + 1, cap);
  return CLATTN_OK;
}

/* -------------------------------------------------------- after tuning */

/* Tuning leaves CLBlast on its last candidate, which may compute wrong
 * results, and CLBlast's defaults cannot be restored: the best entry of db
 * is set instead (else XgemmDirect only, whose parameters tuning never
 * touches), for the whole process, and recorded as what this process set.
 * The context itself settles again at its next use, from its own database
 * and its own opt-in. */
clattn_status clattn__gemm_restore(clattn_ctx *ctx, clattn_db *db) {
  clattn_status rc = CLATTN_OK;
  CLBlastStatusCode s;
  int applied = 0;
  ctx->gemm_explain[0] = '\0';
  ctx->gemm_own_from = 0;
  if (db != NULL)
    rc = settle(ctx, db, "", 1, "left by clattn_tune_gemm", &applied);
  if (rc == CLATTN_OK && !applied) {
    s = clattn__xgemm_min_indirect(ctx->device, (size_t)1 << 20);
    if (s != CLBlastSuccess) {
      explain(ctx, "CLBlast Xgemm in an unknown state: resetting "
                   "GemmRoutine after tuning failed");
      rc = clattn__fail(ctx, CLATTN_ERR_CLBLAST,
                        "CLBlastOverrideParameters(GemmRoutine) failed: %s "
                        "(%d)",
                        clattn__clblast_status_str(s), (int)s);
    } else {
      explain(ctx, "CLBlast XgemmDirect only: tuning overrode Xgemm and "
                   "left no valid tuned entry");
    }
    note_set(ctx->device, ctx->gemm_explain);
  }
  ctx->gemm_explain[0] = '\0';
  clattn__choice_reload(ctx); /* the projections' picks depend on it */
  return rc;
}

clattn_status clattn_explain_gemm(clattn_ctx *ctx, char *buf, size_t cap) {
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  clattn_status rc = explain_gemm_unlocked(ctx, buf, cap);
  clattn__ctx_leave(locked);
  return rc;
}
