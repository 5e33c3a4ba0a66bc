/* db_bench.c - the bench rows in the database (clattn_db_put_bench,
 * clattn_db_list_bench): what a valid row is, and the default name of a
 * run.  `bench_cols` is the one place that maps clattn_bench_entry's
 * fields to the bench table's columns (migration 8). */
#define _DEFAULT_SOURCE /* gethostname */
#include "db/db_impl.h"
#include "base/versioned.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define COL_(f, t)                                                             \
  {                                                                            \
#f, t, offsetof(clattn_bench_entry, f),                                    \
        sizeof(((clattn_bench_entry *)0)->f)                                   \
  }
static const col bench_cols[] = {
    COL_(fingerprint, C_TEXT),   COL_(device, C_TEXT),
    COL_(vendor, C_TEXT),        COL_(arch, C_TEXT),
    COL_(driver, C_TEXT),        COL_(family, C_TEXT),
    COL_(shape, C_TEXT),         COL_(shape_class, C_TEXT),
    COL_(impl, C_TEXT),          COL_(params, C_TEXT),
    COL_(params_source, C_TEXT), COL_(params_device, C_TEXT),
    COL_(median_s, C_REAL),      COL_(spread, C_REAL),
    COL_(flops, C_REAL),         COL_(bytes, C_REAL),
    COL_(predicted_s, C_REAL),   COL_(roof_s, C_REAL),
    COL_(bound, C_TEXT),         COL_(max_err, C_REAL),
    COL_(run, C_TEXT),           COL_(library_version, C_TEXT),
    COL_(updated, C_TEXT),
};
#undef COL_
#define N_BENCH_COLS ((int)(sizeof bench_cols / sizeof bench_cols[0]))
/* The key columns of a bench row (UNIQUE in migration 8). */
#define BENCH_KEY "fingerprint, family, shape, impl, run"

void clattn__bench_run_name(char *buf, size_t cap) {
  char date[32], host[64];
  clattn__db_iso_now(date, sizeof date);
  if (gethostname(host, sizeof host) != 0)
    snprintf(host, sizeof host, "unknown-host");
  host[sizeof host - 1] = '\0';
  /* a host name is text of the row: keep it printable ASCII */
  for (char *h = host; *h; h++)
    if ((unsigned char)*h < 0x21 || (unsigned char)*h > 0x7e)
      *h = '?';
  snprintf(buf, cap, "%s %s %ld", date, host, (long)getpid());
}

/* Record "bench row <key>: \"field\": reason" on db. */
static clattn_status bad(clattn_db *db, const clattn_bench_entry *e,
                         const char *field, const char *reason) {
  return clattn__db_fail(db, CLATTN_ERR_INVALID_ARG,
                         "bench row %.40s %.32s \"%.96s\" %.24s: \"%s\": %s",
                         e->fingerprint, e->family, e->shape, e->impl, field,
                         reason);
}

/* Whether e is a row to store (its date and run already set). */
static clattn_status check_row(clattn_db *db, const clattn_bench_entry *e) {
  char reason[320];
  for (int i = 0; i < N_BENCH_COLS; i++) {
    const col *c = &bench_cols[i];
    const char *f = (const char *)e + c->off;
    if (c->type == C_TEXT) {
      const char *err = clattn__text_check(f, c->size, 0);
      if (err == NULL && strnlen(f, c->size) == c->size)
        err = "no terminating NUL";
      if (err)
        return bad(db, e, c->name, err);
      continue;
    }
    const double v = *(const double *)(const void *)f;
    const int is_median = !strcmp(c->name, "median_s");
    if (!isfinite(v) || v < 0 || (is_median && v == 0)) {
      snprintf(reason, sizeof reason, "%.17g is not finite and %s", v,
               is_median ? "> 0" : ">= 0");
      return bad(db, e, c->name, reason);
    }
  }
  static const char *const required[] = {"fingerprint", "family", "shape",
                                         "impl"};
  for (size_t k = 0; k < sizeof required / sizeof required[0]; k++)
    for (int i = 0; i < N_BENCH_COLS; i++)
      if (!strcmp(bench_cols[i].name, required[k]) &&
          !((const char *)e + bench_cols[i].off)[0])
        return bad(db, e, required[k], "is empty");
  if (clattn__db_date_check(e->updated, reason, sizeof reason) != 0)
    return bad(db, e, "updated", reason);
  return CLATTN_OK;
}

clattn_status clattn__db_put_bench(clattn_db *db,
                                   const clattn_bench_entry *in) {
  clattn_status rc = clattn__db_check(db);
  sqlite3_stmt *st = NULL;
  char sql[2048] = "INSERT INTO bench (";
  clattn_bench_entry e;
  if (rc != CLATTN_OK)
    return rc;
  if (in == NULL)
    return clattn__db_fail(db, CLATTN_ERR_INVALID_ARG, "bench row is NULL");
  e = *in;
  /* the defaults only where the field holds an empty string, so that an
   * unterminated field is still refused by check_row */
  if (!e.updated[0])
    clattn__db_iso_now(e.updated, sizeof e.updated);
  if (!e.library_version[0])
    snprintf(e.library_version, sizeof e.library_version, "%s",
             clattn_version());
  if (!e.run[0])
    clattn__bench_run_name(e.run, sizeof e.run);
  CLATTN_TRY(check_row(db, &e));
  for (int i = 0; i < N_BENCH_COLS; i++)
    clattn__appendf(sql, sizeof sql, i ? ", %s" : "%s", bench_cols[i].name);
  clattn__appendf(sql, sizeof sql, ") VALUES (");
  for (int i = 0; i < N_BENCH_COLS; i++)
    clattn__appendf(sql, sizeof sql, i ? ", ?" : "?");
  clattn__appendf(sql, sizeof sql,
                  ") ON CONFLICT(" BENCH_KEY ") DO UPDATE SET");
  for (int i = 0; i < N_BENCH_COLS; i++)
    if (clattn__appendf(sql, sizeof sql, "%s %s = excluded.%s", i ? "," : "",
                        bench_cols[i].name, bench_cols[i].name) != 0)
      return CLATTN_ERR_MISUSE; /* cannot happen: the buffer fits */
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) {
    rc = clattn__db_sql_fail(db, "preparing the bench upsert");
    goto done;
  }
  for (int i = 0; i < N_BENCH_COLS; i++) {
    if (clattn__db_bind_col(st, i, &bench_cols[i], &e) != SQLITE_OK) {
      rc = clattn__db_sql_fail(db, "binding a bench field");
      goto done;
    }
  }
  if (sqlite3_step(st) != SQLITE_DONE)
    rc = clattn__db_write_fail(db, "storing the bench row");
done:
  sqlite3_finalize(st);
  return rc;
}

/* Whether the file has the bench table: 1, 0, or -1 on failure (a
 * read-only handle of a file older than migration 8 lists no rows). */
static int has_bench_table(clattn_db *db) {
  sqlite3_stmt *st = NULL;
  int r = -1;
  if (sqlite3_prepare_v2(db->h,
                         "SELECT 1 FROM sqlite_master WHERE type = 'table'"
                         " AND name = 'bench'",
                         -1, &st, NULL) == SQLITE_OK) {
    int s = sqlite3_step(st);
    r = s == SQLITE_ROW ? 1 : s == SQLITE_DONE ? 0 : -1;
  }
  sqlite3_finalize(st);
  return r;
}

static clattn_status list_bench(clattn_db *db, const char *fingerprint,
                                const char *family, clattn_bench_entry **out,
                                int *n) {
  clattn_status rc = clattn__db_check(db);
  if (rc != CLATTN_OK)
    return rc;
  if (out == NULL || n == NULL)
    return clattn__db_fail(db, CLATTN_ERR_INVALID_ARG, "out or n is NULL");
  *out = NULL;
  *n = 0;
  const int has = has_bench_table(db);
  if (has < 0)
    return clattn__db_sql_fail(db, "looking for the bench table");
  if (has == 0)
    return CLATTN_OK;
  /* NULL filters match every row: "?1 IS NULL OR column = ?1" */
  const char *filter[2] = {fingerprint, family};
  void *rows = NULL;
  rc = clattn__db_select_rows(
      db, bench_cols, N_BENCH_COLS,
      "FROM bench WHERE (?1 IS NULL OR fingerprint = ?1)"
      " AND (?2 IS NULL OR family = ?2)"
      " ORDER BY device, fingerprint, family, shape, impl,"
      " updated DESC, run",
      filter, 2, sizeof **out, "bench rows", &rows, n);
  *out = rows;
  return rc;
}

/* ------------------------------------------------ the versioned boundary */

clattn_status clattn_db_put_bench(clattn_db *db, const clattn_bench_entry *e) {
  clattn_bench_entry own;
  clattn_status rc =
      clattn__db_row_in(db, &own, sizeof own, e, "clattn_bench_entry");
  return rc ? rc : clattn__db_put_bench(db, &own);
}

clattn_status clattn_db_list_bench(clattn_db *db, const char *fingerprint,
                                   const char *family, size_t entry_size,
                                   clattn_bench_entry **out, int *n) {
  clattn_bench_entry *rows = NULL;
  clattn_status rc = clattn__db_list_args(db, entry_size, out, n);
  if (rc != CLATTN_OK)
    return rc;
  rc = list_bench(db, fingerprint, family, &rows, n);
  return clattn__db_rows_out(db, rc, rows, sizeof *rows, *n, entry_size,
                             (void **)out);
}
