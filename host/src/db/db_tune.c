/* db_tune.c - the tuning rows in the database: what a valid row is
 * (clattn__tune_entry_check), clattn_db_put_tune, the import's merge
 * and the tuner's better-row rule (clattn__db_upsert_tune), clattn_db_list_tune
 * and the run-time reader's
 * scan (clattn__db_scan_usable).  Parameters are checked by their family
 * through the registry (family.h), never by a family's name here. */
#include "db/db_impl.h"
#include "base/utf8.h"
#include "base/versioned.h"

#include "family/family.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COL_(f, t)                                                             \
  { #f, t, offsetof(clattn_tune_entry, f), sizeof(((clattn_tune_entry *)0)->f) }
static const col tune_cols[] = {
    COL_(fingerprint, C_TEXT), COL_(device, C_TEXT),
    COL_(vendor, C_TEXT),      COL_(arch, C_TEXT),
    COL_(driver, C_TEXT),      COL_(kernel, C_TEXT),
    COL_(shape_class, C_TEXT), COL_(params, C_TEXT),
    COL_(status, C_TEXT),      COL_(median_s, C_REAL),
    COL_(spread, C_REAL),      COL_(predicted_s, C_REAL),
    COL_(max_err, C_REAL),     COL_(strategy, C_TEXT),
    COL_(message, C_TEXT),     COL_(library_version, C_TEXT),
    COL_(updated, C_TEXT),     COL_(tune_method, C_INT),
};
#undef COL_
#define N_TUNE_COLS ((int)(sizeof tune_cols / sizeof tune_cols[0]))
/* The key columns of a tuning row (UNIQUE in migration 4). */
#define TUNE_KEY "fingerprint, kernel, shape_class, params"

const clattn__col *clattn__db_tune_cols(int *n) {
  if (n)
    *n = N_TUNE_COLS;
  return tune_cols;
}

/* ----------------------------------------------------------- validity */

/* How far in the future a date may lie: clocks of machines that share
 * files disagree, but a later date would win every merge. */
#define FUTURE_SKEW_S (24 * 60 * 60)

const char *clattn__text_check(const char *s, size_t n, int lines) {
  size_t i = 0;
  while (i < n && s[i]) {
    const unsigned char c = (unsigned char)s[i];
    if ((c < 0x20 || c == 0x7f) && !(lines && (c == '\n' || c == '\t')))
      return "a control character";
    size_t len;
    if (clattn__utf8_next((const unsigned char *)s + i, strnlen(s + i, n - i),
                          &len) < 0)
      return "invalid UTF-8";
    i += len;
  }
  return NULL;
}

/* Days in month m (1..12) of year y. */
static int month_days(int y, int m) {
  static const int d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : d[m - 1];
}

int clattn__db_date_check(const char *s, char *why, size_t cap) {
  static const char pat[] = "dddd-dd-ddTdd:dd:ddZ";
  int v[6] = {0}, k = 0;
  for (size_t i = 0; i < sizeof pat; i++) {
    if (pat[i] == 'd' ? s[i] < '0' || s[i] > '9' : s[i] != pat[i]) {
      snprintf(why, cap,
               "\"%.40s\" is not a UTC date like "
               "2025-01-31T12:00:00Z",
               s);
      return -1;
    }
  }
  for (size_t i = 0; i < sizeof pat - 1; i++) {
    if (pat[i] != 'd')
      continue;
    v[k] = v[k] * 10 + (s[i] - '0');
    if (pat[i + 1] != 'd')
      k++;
  }
  if (v[0] < 2000 || v[1] < 1 || v[1] > 12 || v[2] < 1 ||
      v[2] > month_days(v[0], v[1]) || v[3] > 23 || v[4] > 59 || v[5] > 60) {
    snprintf(why, cap,
             "\"%s\" is not a calendar date and time (from the "
             "year 2000)",
             s);
    return -1;
  }
  char now[32];
  time_t later = time(NULL) + FUTURE_SKEW_S;
  struct tm tm;
  if (later == (time_t)-1 || gmtime_r(&later, &tm) == NULL ||
      strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    return 0; /* no clock: the form alone */
  if (strcmp(s, now) > 0) {
    snprintf(why, cap, "\"%s\" lies in the future (later than %s)", s, now);
    return -1;
  }
  return 0;
}

/* Params as "name=count ..." words, each name matched by the scanf set
 * `name_set` ("%31[A-Z_0-9]": Xgemm's, whose values CLBlast checks against
 * the device when it applies them). */
static int check_words(const char *s, const char *name_set, const char *form,
                       char *why, size_t cap) {
  char format[48];
  snprintf(format, sizeof format, "%s=%%ld%%n", name_set);
  int fields = 0;
  while (*s) {
    int used = 0;
    long v = -1;
    char name[32];
    while (*s == ' ')
      s++;
    if (!*s)
      break;
    if (sscanf(s, format, name, &v, &used) != 2 || v < 0 || v > 1 << 20 ||
        (s[used] && s[used] != ' ')) {
      snprintf(why, cap, "expected %s fields, got \"%.40s\"", form, s);
      return -1;
    }
    s += used;
    fields++;
  }
  if (fields == 0) {
    snprintf(why, cap, "no %s fields", form);
    return -1;
  }
  return 0;
}

/* Whether family F plans p for the shape in text or its small check case
 * (on a device that refuses nothing, so that only the params can fail). */
static int plans_shape(const clattn__family *F, const char *text,
                       const clattn__params *p, char *why, size_t cap) {
  const clattn__target t = {0, 1, 16, 32, 128, 1024, 1ull << 30, 0, 1, ~0u};
  _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
  _Alignas(16) unsigned char plan[CLATTN__PLAN_MAX];
  clattn__check_case small;
  char shape_why[128];
  /* plans expect valid descriptions: a size key set to 1 may make one
   * invalid (one query head under eight KV heads) */
  if (F->parse_shape(text, desc, shape_why, sizeof shape_why) != CLATTN_OK ||
      F->check(desc, shape_why, sizeof shape_why) != CLATTN_OK)
    return 0;
  F->check_case(desc, &small);
  const void *shapes[2] = {desc, small.desc};
  for (int j = 0; j < 2; j++)
    if (F->plan(&t, shapes[j], p, plan, why, cap) == CLATTN_OK)
      return 1;
  return 0;
}

/* Whether family F plans p for one of its standard shapes, or one of them
 * with a single size key (of its shape_keys) set to 1: some params are
 * valid only for small calls (a fused kernel for a few rows).  A family
 * without standard shapes takes any parsed params (it ignores them). */
static int check_family_params(const clattn__family *F, const clattn__params *p,
                               char *why, size_t cap) {
  if (F->standard_shapes == NULL || F->standard_shapes[0] == NULL)
    return 0;
  why[0] = '\0';
  for (int i = 0; F->standard_shapes[i]; i++) {
    const char *text = F->standard_shapes[i];
    if (plans_shape(F, text, p, why, cap))
      return 0;
    for (const char *k = F->shape_keys; k && *k;) {
      size_t klen = strcspn(k, " ");
      char key[40], variant[512];
      snprintf(key, sizeof key, "%.*s=", (int)klen, k);
      k += klen + (k[klen] == ' ');
      const char *at = strstr(text, key);
      while (at && at != text && at[-1] != ' ')
        at = strstr(at + 1, key);
      if (at == NULL || klen == 0)
        continue;
      const char *end = at + strlen(key);
      end += strcspn(end, " ");
      snprintf(variant, sizeof variant, "%.*s%s1%s", (int)(at - text), text,
               key, end);
      if (plans_shape(F, variant, p, why, cap))
        return 0;
    }
  }
  if (!why[0])
    snprintf(why, cap, "the %s family plans none of its shapes", F->name);
  return -1;
}

/* A field's name and its check's failure. */
static clattn_status bad(char *why, size_t cap, const char *field,
                         const char *fmt, const char *detail) {
  char d[384];
  snprintf(d, sizeof d, fmt, detail);
  snprintf(why, cap, "\"%s\": %s", field, d);
  return CLATTN_ERR_INVALID_ARG;
}

clattn_status clattn__tune_entry_check(const clattn_tune_entry *e,
                                       int check_params, char *why,
                                       size_t cap) {
  int ncol = 0;
  const clattn__col *cols = clattn__db_tune_cols(&ncol);
  char reason[320];
  for (int i = 0; i < ncol; i++) {
    if (cols[i].type != CLATTN_COL_TEXT)
      continue;
    const char *f = (const char *)e + cols[i].off;
    /* message is free text: a build log's lines and tabs */
    const char *err =
        clattn__text_check(f, cols[i].size, !strcmp(cols[i].name, "message"));
    if (err == NULL && strnlen(f, cols[i].size) == cols[i].size)
      err = "no terminating NUL";
    if (err)
      return bad(why, cap, cols[i].name, "%s", err);
  }
  /* params may be empty: a family without tunables, or every one left
   * automatic */
  static const char *const required[] = {"fingerprint", "kernel", "shape_class",
                                         "status", "updated"};
  for (size_t k = 0; k < sizeof required / sizeof required[0]; k++)
    for (int i = 0; i < ncol; i++)
      if (!strcmp(cols[i].name, required[k]) &&
          !((const char *)e + cols[i].off)[0])
        return bad(why, cap, required[k], "%s", "is empty");
  if (clattn__db_date_check(e->updated, reason, sizeof reason) != 0)
    return bad(why, cap, "updated", "%s", reason);
  static const char *const statuses[] = {"ok", "wrong", "failed", "timeout",
                                         "slow"};
  int known = 0;
  for (size_t k = 0; k < sizeof statuses / sizeof statuses[0]; k++)
    known |= !strcmp(e->status, statuses[k]);
  if (!known)
    return bad(why, cap, "status",
               "\"%s\" is not ok, wrong, failed, timeout or slow", e->status);
  const int ok = !strcmp(e->status, "ok");
  /* Times: finite; an ok row's median positive (a rejected candidate may
   * have none: 0); errors may be infinite on rejected rows only. */
  char num[64];
  snprintf(num, sizeof num, "%.17g", e->median_s);
  if (!isfinite(e->median_s) || e->median_s < 0 || (ok && e->median_s == 0))
    return bad(why, cap, "median_s",
               ok ? "%s is not a finite time > 0 s"
                  : "%s is not a finite time >= 0 s",
               num);
  snprintf(num, sizeof num, "%.17g", e->spread);
  if (!isfinite(e->spread) || e->spread < 0)
    return bad(why, cap, "spread", "%s is not finite and >= 0", num);
  snprintf(num, sizeof num, "%.17g", e->predicted_s);
  if (!isfinite(e->predicted_s) || e->predicted_s < 0)
    return bad(why, cap, "predicted_s",
               "%s is not a finite time >= 0 s (0: no prediction)", num);
  snprintf(num, sizeof num, "%.17g", e->max_err);
  if (isnan(e->max_err) || e->max_err < 0 || (ok && isinf(e->max_err)))
    return bad(why, cap, "max_err",
               ok ? "%s is not finite and >= 0" : "%s is not >= 0", num);
  if (e->tune_method < 0) {
    snprintf(num, sizeof num, "%d", e->tune_method);
    return bad(why, cap, "tune_method", "%s is negative (0: unknown)", num);
  }
  if (!check_params)
    return CLATTN_OK;
  if (!strcmp(e->kernel, CLATTN_XGEMM_KERNEL)) {
    if (check_words(e->params, "%31[A-Z_0-9]", "NAME=count", reason,
                    sizeof reason) != 0)
      return bad(why, cap, "params", "%s", reason);
    return CLATTN_OK;
  }
  /* A kernel this library does not know (a newer library's family, a
   * tuner's own search): its params' text is checked, not their values. */
  const clattn__family *F = clattn__family_find(e->kernel);
  if (F == NULL) {
    if (e->params[0] && check_words(e->params, "%31[a-z_0-9-]", "name=count",
                                    reason, sizeof reason) != 0)
      return bad(why, cap, "params", "%s", reason);
    return CLATTN_OK;
  }
  clattn__params p;
  memset(&p, 0, sizeof p);
  if (clattn__params_parse(F, e->params, &p, reason, sizeof reason) !=
          CLATTN_OK ||
      check_family_params(F, &p, reason, sizeof reason) != 0)
    return bad(why, cap, "params", "%s", reason);
  return CLATTN_OK;
}

/* ---------------------------------------------------------------- rows */

/* Copy a string into a fixed field (truncating). */
static void set_field(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src ? src : "");
}

/* A rejection message is free text that may quote a driver's build log:
 * its control characters other than newline and tab become spaces and
 * bytes that are not UTF-8 (a multi-byte character cut by truncation)
 * become '?', so the row stays valid. */
static void clean_message(char *m, size_t cap) {
  size_t n = strnlen(m, cap - 1);
  m[n] = '\0';
  for (size_t i = 0; i < n;) {
    const unsigned char c = (unsigned char)m[i];
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      m[i++] = ' ';
    } else if (c < 0x80) {
      i++;
    } else {
      size_t len = 1;
      while (len < 4 && i + len < n &&
             ((unsigned char)m[i + len] & 0xc0) == 0x80)
        len++;
      if (clattn__text_check(m + i, len, 0) == NULL)
        i += len;
      else
        m[i++] = '?';
    }
  }
}

/* Whether a tuning row with e's key exists: 1, 0, or -1 on failure. */
static int tune_row_exists(clattn_db *db, const clattn_tune_entry *e) {
  sqlite3_stmt *st = NULL;
  int r = -1;
  if (sqlite3_prepare_v2(db->h,
                         "SELECT 1 FROM tuning WHERE fingerprint = ?"
                         " AND kernel = ? AND shape_class = ? AND params = ?",
                         -1, &st, NULL) == SQLITE_OK &&
      sqlite3_bind_text(st, 1, e->fingerprint, -1, SQLITE_TRANSIENT) ==
          SQLITE_OK &&
      sqlite3_bind_text(st, 2, e->kernel, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
      sqlite3_bind_text(st, 3, e->shape_class, -1, SQLITE_TRANSIENT) ==
          SQLITE_OK &&
      sqlite3_bind_text(st, 4, e->params, -1, SQLITE_TRANSIENT) == SQLITE_OK) {
    int s = sqlite3_step(st);
    r = s == SQLITE_ROW ? 1 : s == SQLITE_DONE ? 0 : -1;
  }
  sqlite3_finalize(st);
  return r;
}

/* A row's rank in CLATTN__UPSERT_BETTER, in SQL over table t's columns:
 * 2 a verified ok row, 1 another ok row, 0 a failure status. */
#define RANK(t)                                                                \
  " (CASE WHEN " t ".status != 'ok' THEN 0 WHEN substr(" t ".message, 1, "     \
  "length('" CLATTN_VERIFIED_PREFIX "')) = '" CLATTN_VERIFIED_PREFIX           \
  "' THEN 2 ELSE 1 END)"
#define NEW_RANK RANK("excluded")
#define OLD_RANK RANK("tuning")

/* The WHERE of the upsert's DO UPDATE for mode ("" : always). */
static const char *upsert_condition(clattn__upsert mode) {
  switch (mode) {
  case CLATTN__UPSERT_REPLACE:
    return "";
  case CLATTN__UPSERT_NEWER:
    return " WHERE excluded.updated > tuning.updated";
  case CLATTN__UPSERT_BETTER:
    /* clang-format off */
    return " WHERE excluded.tune_method != tuning.tune_method"
           " OR" NEW_RANK " >" OLD_RANK
           " OR (" NEW_RANK " =" OLD_RANK " AND (tuning.status != 'ok'"
           " OR excluded.median_s < tuning.median_s))";
    /* clang-format on */
  }
  return "";
}
#undef NEW_RANK
#undef OLD_RANK
#undef RANK

clattn_status clattn__db_upsert_tune(clattn_db *db, const clattn_tune_entry *in,
                                     clattn__upsert mode, int *changed) {
  clattn_status rc = clattn__db_check(db);
  sqlite3_stmt *st = NULL;
  char sql[2048] = "INSERT INTO tuning (";
  clattn_tune_entry e;
  if (changed)
    *changed = 0;
  if (rc != CLATTN_OK)
    return rc;
  if (in == NULL)
    return CLATTN_ERR_INVALID_ARG;
  e = *in;
  if (!e.fingerprint[0] || !e.kernel[0] || !e.shape_class[0] || !e.status[0]) {
    snprintf(db->errmsg, sizeof db->errmsg,
             "tuning entry lacks its fingerprint, kernel, shape class or "
             "status");
    return CLATTN_ERR_INVALID_ARG;
  }
  if (!e.updated[0])
    clattn__db_iso_now(e.updated, sizeof e.updated);
  if (!e.library_version[0])
    set_field(e.library_version, sizeof e.library_version, clattn_version());
  clean_message(e.message, sizeof e.message);
  char why[512];
  if (clattn__tune_entry_check(&e, 1, why, sizeof why) != CLATTN_OK)
    return clattn__db_fail(db, CLATTN_ERR_INVALID_ARG,
                           "tuning entry %.40s %.24s \"%.96s\" \"%.64s\": %s",
                           e.fingerprint, e.kernel, e.shape_class, e.params,
                           why);
  for (int i = 0; i < N_TUNE_COLS; i++)
    clattn__appendf(sql, sizeof sql, i ? ", %s" : "%s", tune_cols[i].name);
  clattn__appendf(sql, sizeof sql, ") VALUES (");
  for (int i = 0; i < N_TUNE_COLS; i++)
    clattn__appendf(sql, sizeof sql, i ? ", ?" : "?");
  clattn__appendf(sql, sizeof sql, ") ON CONFLICT(" TUNE_KEY ") DO UPDATE SET");
  for (int i = 0; i < N_TUNE_COLS; i++)
    clattn__appendf(sql, sizeof sql, "%s %s = excluded.%s", i ? "," : "",
                    tune_cols[i].name, tune_cols[i].name);
  if (clattn__appendf(sql, sizeof sql, "%s", upsert_condition(mode)) != 0)
    return CLATTN_ERR_MISUSE; /* cannot happen: the buffer fits */
  /* Inserted or updated: whether the key existed before (callers that
   * need to know run this inside their transaction). */
  int existed = 0;
  if (changed) {
    existed = tune_row_exists(db, &e);
    if (existed < 0)
      return clattn__db_sql_fail(db, "looking up the tuning entry");
  }
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) {
    rc = clattn__db_sql_fail(db, "preparing the tuning upsert");
    goto done;
  }
  for (int i = 0; i < N_TUNE_COLS; i++) {
    if (clattn__db_bind_col(st, i, &tune_cols[i], &e) != SQLITE_OK) {
      rc = clattn__db_sql_fail(db, "binding a tuning field");
      goto done;
    }
  }
  if (sqlite3_step(st) != SQLITE_DONE) {
    rc = clattn__db_write_fail(db, "storing the tuning entry");
    goto done;
  }
  if (changed)
    *changed = sqlite3_changes(db->h) > 0 ? 1 + existed : 0;
done:
  sqlite3_finalize(st);
  return rc;
}

clattn_status clattn__db_put_tune(clattn_db *db, const clattn_tune_entry *e) {
  if (e == NULL)
    return clattn__db_fail(db, CLATTN_ERR_INVALID_ARG, "e is NULL");
  return clattn__db_upsert_tune(db, e, CLATTN__UPSERT_REPLACE, NULL);
}

clattn_status clattn_db_put_tune(clattn_db *db, const clattn_tune_entry *e) {
  clattn_tune_entry own;
  clattn_status rc =
      clattn__db_row_in(db, &own, sizeof own, e, "clattn_tune_entry");
  return rc ? rc : clattn__db_put_tune(db, &own);
}

clattn_status clattn_db_list_tune(clattn_db *db, const char *fingerprint,
                                  const char *kernel, const char *shape_class,
                                  size_t entry_size, clattn_tune_entry **out,
                                  int *n) {
  clattn_tune_entry *rows = NULL;
  clattn_status rc = clattn__db_list_args(db, entry_size, out, n);
  if (rc != CLATTN_OK)
    return rc;
  rc = clattn__db_list_tune(db, fingerprint, kernel, shape_class, &rows, n);
  return clattn__db_rows_out(db, rc, rows, sizeof *rows, *n, entry_size,
                             (void **)out);
}

clattn_status clattn__db_list_tune(clattn_db *db, const char *fingerprint,
                                   const char *kernel, const char *shape_class,
                                   clattn_tune_entry **out, int *n) {
  clattn_status rc = clattn__db_check(db);
  if (rc != CLATTN_OK)
    return rc;
  if (out == NULL || n == NULL)
    return CLATTN_ERR_INVALID_ARG;
  /* NULL filters match every row: "?1 IS NULL OR column = ?1" */
  const char *filter[3] = {fingerprint, kernel, shape_class};
  void *rows = NULL;
  rc = clattn__db_select_rows(
      db, tune_cols, N_TUNE_COLS,
      "FROM tuning WHERE (?1 IS NULL OR fingerprint = ?1)"
      " AND (?2 IS NULL OR kernel = ?2)"
      " AND (?3 IS NULL OR shape_class = ?3)"
      " ORDER BY kernel, shape_class, fingerprint,"
      " status != 'ok', median_s, params",
      filter, 3, sizeof **out, "tuning entries", &rows, n);
  *out = rows;
  return rc;
}

clattn_status clattn__db_scan_usable(clattn_db *db, const char *fingerprint,
                                     const char *vendor, const char *arch,
                                     int (*row)(const clattn_tune_entry *e,
                                                void *user),
                                     void *user) {
  clattn_status rc = clattn__db_check(db);
  sqlite3_stmt *st = NULL;
  char sql[2048] = "SELECT ";
  if (rc != CLATTN_OK)
    return rc;
  if (fingerprint == NULL || vendor == NULL || arch == NULL || row == NULL)
    return CLATTN_ERR_INVALID_ARG;
  for (int i = 0; i < N_TUNE_COLS; i++)
    clattn__appendf(sql, sizeof sql, i ? ", %s" : "%s", tune_cols[i].name);
  /* Each side of the OR is an index's prefix (the key's fingerprint, and
   * tuning_device's vendor and arch), so only these rows are read. */
  if (clattn__appendf(sql, sizeof sql,
                      " FROM tuning WHERE status = 'ok' AND"
                      " (fingerprint = ?1 OR"
                      " (?3 != '' AND vendor = ?2 AND arch = ?3))"
                      " ORDER BY fingerprint, kernel, shape_class, median_s,"
                      " params") != 0)
    return CLATTN_ERR_MISUSE;
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK ||
      sqlite3_bind_text(st, 1, fingerprint, -1, SQLITE_TRANSIENT) !=
          SQLITE_OK ||
      sqlite3_bind_text(st, 2, vendor, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
      sqlite3_bind_text(st, 3, arch, -1, SQLITE_TRANSIENT) != SQLITE_OK) {
    rc = clattn__db_sql_fail(db, "preparing the tuning query");
    goto done;
  }
  int r;
  while ((r = sqlite3_step(st)) == SQLITE_ROW) {
    clattn_tune_entry e;
    memset(&e, 0, sizeof e);
    for (int i = 0; i < N_TUNE_COLS; i++)
      clattn__db_read_col(st, i, &tune_cols[i], &e);
    if (row(&e, user) != 0)
      break;
  }
  if (r != SQLITE_ROW && r != SQLITE_DONE)
    rc = clattn__db_sql_fail(db, "reading the tuning entries");
done:
  sqlite3_finalize(st);
  return rc;
}

/* ---------------------------------------------------- tuning methods */

int clattn_tune_method(const char *kernel) {
  if (kernel == NULL)
    return 0;
  const clattn__family *f = clattn__family_find(kernel);
  if (f)
    return f->tune_method;
  return strcmp(kernel, CLATTN_XGEMM_KERNEL) == 0 ? 1 : 0;
}

int clattn__tune_row_current(const clattn_tune_entry *e) {
  return e->tune_method == clattn_tune_method(e->kernel);
}

/* ----------------------------------------------------------- migration */

clattn_status clattn__db_migrate_tune_params(clattn_db *db) {
  sqlite3_stmt *sel = NULL, *upd = NULL;
  clattn_status rc = CLATTN_OK;
  if (sqlite3_prepare_v2(db->h, "SELECT id, kernel, params FROM tuning", -1,
                         &sel, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db->h,
                         "UPDATE OR IGNORE tuning SET params = ? WHERE id = ?",
                         -1, &upd, NULL) != SQLITE_OK) {
    rc = clattn__db_sql_fail(db, "rewriting the tuning rows' params");
    goto done;
  }
  int step;
  while ((step = sqlite3_step(sel)) == SQLITE_ROW) {
    const char *kernel = (const char *)sqlite3_column_text(sel, 1);
    const char *text = (const char *)sqlite3_column_text(sel, 2);
    const clattn__family *F = clattn__family_find(kernel);
    clattn__params p;
    char normal[256], why[256];
    memset(&p, 0, sizeof p);
    /* a row this library cannot read as its family's stays as it is (the
     * run-time reader passes it over and says why) */
    if (F == NULL || text == NULL ||
        clattn__params_parse(F, text, &p, why, sizeof why) != CLATTN_OK)
      continue;
    clattn__params_format(F, &p, normal, sizeof normal);
    if (strcmp(normal, text) == 0)
      continue;
    sqlite3_reset(upd);
    if (sqlite3_bind_text(upd, 1, normal, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
        sqlite3_bind_int64(upd, 2, sqlite3_column_int64(sel, 0)) != SQLITE_OK ||
        sqlite3_step(upd) != SQLITE_DONE) {
      rc = clattn__db_sql_fail(db, "rewriting the tuning rows' params");
      goto done;
    }
  }
  if (step != SQLITE_DONE)
    rc = clattn__db_sql_fail(db, "reading the tuning rows' params");
done:
  sqlite3_finalize(sel);
  sqlite3_finalize(upd);
  return rc;
}
