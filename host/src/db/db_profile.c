/* db_profile.c - the device profiles (clattn_db_put_profile,
 * clattn_db_get_profile and clattn_db_list_profiles) and the model checks
 * (clattn_db_put_check, clattn__db_model_error) in the database. */
#include "db/db_impl.h"
#include "base/versioned.h"

#include "base/stats.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COL_(f, t)                                                             \
  { #f, t, offsetof(clattn_profile, f), sizeof(((clattn_profile *)0)->f) }
static const col cols[] = {
    COL_(fingerprint, C_TEXT),
    COL_(source, C_SOURCE),
    COL_(name, C_TEXT),
    COL_(vendor, C_TEXT),
    COL_(platform, C_TEXT),
    COL_(driver, C_TEXT),
    COL_(arch, C_TEXT),
    COL_(is_cpu, C_INT),
    COL_(compute_units, C_UINT),
    COL_(clock_mhz, C_UINT),
    COL_(wave_width, C_UINT),
    COL_(simds_per_cu, C_UINT),
    COL_(global_mem_bytes, C_U64),
    COL_(local_mem_bytes, C_U64),
    COL_(max_wg, C_SIZE),
    COL_(has_fp16, C_INT),
    COL_(has_subgroups, C_INT),
    COL_(bw_read_gbs, C_REAL),
    COL_(bw_copy_gbs, C_REAL),
    COL_(bw_triad_gbs, C_REAL),
    COL_(fp32_gflops, C_REAL),
    COL_(fp16_gflops, C_REAL),
    COL_(local_gbs, C_REAL),
    COL_(h2d_gbs, C_REAL),
    COL_(d2h_gbs, C_REAL),
    COL_(launch_us, C_REAL),
    COL_(launch_pipelined_us, C_REAL),
    COL_(note, C_TEXT),
    COL_(cache_bytes, C_U64),
    COL_(probe_method, C_INT),
    /* migration 10: the in-core rates */
    COL_(exp2_gops, C_REAL),
    COL_(cache_gbs, C_REAL),
    COL_(barrier_ns, C_REAL),
    COL_(launch_call_us, C_REAL),
    COL_(unhidden, C_REAL),
    COL_(fp32_wg1_gflops, C_REAL),
    COL_(exp2_wg1_gops, C_REAL),
};
#undef COL_
#define N_COLS ((int)(sizeof cols / sizeof cols[0]))
#define IN_CORE_COLS 7 /* the last columns, from migration 10 on */
#define IN_CORE_SCHEMA 10

/* The columns a file has: a reader may hold a file older than the in-core
 * rates (a writer has migrated it). */
static int file_cols(const clattn_db *db) {
  return db->version >= IN_CORE_SCHEMA ? N_COLS : N_COLS - IN_CORE_COLS;
}

static clattn_status put_profile(clattn_db *db, const clattn_profile *p) {
  clattn_status rc = clattn__db_check(db);
  sqlite3_stmt *st = NULL;
  char sql[4096] = "INSERT INTO profiles (";
  char date[32];
  if (rc != CLATTN_OK)
    return rc;
  if (p == NULL)
    return CLATTN_ERR_INVALID_ARG;
  if (strnlen(p->fingerprint, sizeof p->fingerprint) == 0) {
    snprintf(db->errmsg, sizeof db->errmsg,
             "profile \"%.128s\" has no fingerprint (datasheet profiles are "
             "not stored)",
             p->name);
    return CLATTN_ERR_INVALID_ARG;
  }
  if (p->probe_method < 0) {
    snprintf(db->errmsg, sizeof db->errmsg,
             "profile \"%.128s\": probe_method %d is negative (0: not "
             "measured by clattn_probe)",
             p->name, p->probe_method);
    return CLATTN_ERR_INVALID_ARG;
  }
  for (int i = 0; i < N_COLS; i++)
    clattn__appendf(sql, sizeof sql, "%s, ", cols[i].name);
  clattn__appendf(sql, sizeof sql, "updated, library_version) VALUES (");
  for (int i = 0; i < N_COLS + 2; i++)
    clattn__appendf(sql, sizeof sql, i ? ", ?" : "?");
  clattn__appendf(sql, sizeof sql, ") ON CONFLICT(fingerprint) DO UPDATE SET");
  for (int i = 1; i < N_COLS; i++)
    clattn__appendf(sql, sizeof sql, " %s = excluded.%s,", cols[i].name,
                    cols[i].name);
  if (clattn__appendf(sql, sizeof sql,
                      " updated = excluded.updated,"
                      " library_version = excluded.library_version") != 0)
    return CLATTN_ERR_MISUSE; /* cannot happen: the buffer fits cols[] */
  clattn__db_iso_now(date, sizeof date);
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) {
    rc = clattn__db_sql_fail(db, "preparing the profile upsert");
    goto done;
  }
  for (int i = 0; i < N_COLS; i++) {
    if (clattn__db_bind_col(st, i, &cols[i], p) != SQLITE_OK) {
      rc = clattn__db_sql_fail(db, "binding a profile field");
      goto done;
    }
  }
  if (sqlite3_bind_text(st, N_COLS + 1, date, -1, SQLITE_TRANSIENT) !=
          SQLITE_OK ||
      sqlite3_bind_text(st, N_COLS + 2, clattn_version(), -1, SQLITE_STATIC) !=
          SQLITE_OK) {
    rc = clattn__db_sql_fail(db, "binding a profile field");
    goto done;
  }
  if (sqlite3_step(st) != SQLITE_DONE)
    rc = clattn__db_write_fail(db, "storing the profile");
done:
  sqlite3_finalize(st);
  return rc;
}

static clattn_status get_profile(clattn_db *db, const char *fingerprint,
                                 clattn_profile *out) {
  clattn_status rc = clattn__db_check(db);
  sqlite3_stmt *st = NULL;
  char sql[2048] = "SELECT ";
  if (rc != CLATTN_OK)
    return rc;
  if (fingerprint == NULL || out == NULL)
    return CLATTN_ERR_INVALID_ARG;
  for (int i = 0; i < file_cols(db); i++)
    clattn__appendf(sql, sizeof sql, i ? ", %s" : "%s", cols[i].name);
  if (clattn__appendf(sql, sizeof sql,
                      " FROM profiles WHERE fingerprint = ?") != 0)
    return CLATTN_ERR_MISUSE; /* cannot happen: the buffer fits cols[] */
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK ||
      sqlite3_bind_text(st, 1, fingerprint, -1, SQLITE_TRANSIENT) !=
          SQLITE_OK) {
    rc = clattn__db_sql_fail(db, "preparing the profile query");
    goto done;
  }
  int r = sqlite3_step(st);
  if (r == SQLITE_DONE) {
    snprintf(db->errmsg, sizeof db->errmsg,
             "no profile with fingerprint \"%.64s\" in %s", fingerprint,
             db->path);
    rc = CLATTN_ERR_NOT_FOUND;
    goto done;
  }
  if (r != SQLITE_ROW) {
    rc = clattn__db_sql_fail(db, "reading the profile");
    goto done;
  }
  memset(out, 0, sizeof *out);
  for (int i = 0; i < file_cols(db); i++)
    clattn__db_read_col(st, i, &cols[i], out);
done:
  sqlite3_finalize(st);
  return rc;
}

static clattn_status put_check(clattn_db *db, const clattn_check_record *r) {
  clattn_status rc = clattn__db_check(db);
  sqlite3_stmt *st = NULL;
  char date[32];
  if (rc != CLATTN_OK)
    return rc;
  if (r == NULL)
    return CLATTN_ERR_INVALID_ARG;
  clattn__db_iso_now(date, sizeof date);
  if (sqlite3_prepare_v2(
          db->h,
          "INSERT INTO model_checks (fingerprint, call, bound, predicted_s,"
          " measured_s, gbs, gflops, roofline_fraction, updated,"
          " library_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          -1, &st, NULL) != SQLITE_OK) {
    rc = clattn__db_sql_fail(db, "preparing the model-check insert");
    goto done;
  }
  const double v[5] = {r->predicted_s, r->measured_s, r->gbs, r->gflops,
                       r->roofline_fraction};
  int ok =
      sqlite3_bind_text(st, 1, r->fingerprint, -1, SQLITE_TRANSIENT) ==
          SQLITE_OK &&
      sqlite3_bind_text(st, 2, r->call, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
      sqlite3_bind_text(st, 3, r->bound, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
      sqlite3_bind_text(st, 9, date, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
      sqlite3_bind_text(st, 10, clattn_version(), -1, SQLITE_STATIC) ==
          SQLITE_OK;
  for (int i = 0; i < 5 && ok; i++)
    ok = sqlite3_bind_double(st, 4 + i, v[i]) == SQLITE_OK;
  if (!ok) {
    rc = clattn__db_sql_fail(db, "binding a model-check field");
    goto done;
  }
  if (sqlite3_step(st) != SQLITE_DONE)
    rc = clattn__db_write_fail(db, "storing the model check");
done:
  sqlite3_finalize(st);
  return rc;
}

clattn_status
clattn__db_model_error(clattn_db *db, const char *fingerprint,
                       int (*take)(const char *call, const void *arg),
                       const void *arg, double *median_abs_err, int *n) {
  clattn_status rc = clattn__db_check(db);
  sqlite3_stmt *st = NULL;
  double *e = NULL;
  int count = 0, cap = 0;
  *median_abs_err = 0.0;
  *n = 0;
  if (rc != CLATTN_OK)
    return rc;
  if (sqlite3_prepare_v2(db->h,
                         "SELECT predicted_s, measured_s, call FROM"
                         " model_checks"
                         " WHERE fingerprint = ? AND measured_s > 0",
                         -1, &st, NULL) != SQLITE_OK ||
      sqlite3_bind_text(st, 1, fingerprint, -1, SQLITE_TRANSIENT) !=
          SQLITE_OK) {
    rc = clattn__db_sql_fail(db, "preparing the model-check query");
    goto done;
  }
  int r;
  while ((r = sqlite3_step(st)) == SQLITE_ROW) {
    const unsigned char *call = sqlite3_column_text(st, 2);
    if (take && !take(call ? (const char *)call : "", arg))
      continue;
    if (count == cap) {
      int nc = cap ? 2 * cap : 32;
      double *g = realloc(e, (size_t)nc * sizeof *e);
      if (g == NULL) {
        rc = CLATTN_ERR_NOMEM;
        goto done;
      }
      e = g;
      cap = nc;
    }
    e[count++] =
        fabs(sqlite3_column_double(st, 0) / sqlite3_column_double(st, 1) - 1.0);
  }
  if (r != SQLITE_DONE) {
    rc = clattn__db_sql_fail(db, "reading the model checks");
    goto done;
  }
  /* The upper middle for an even count rather than clattn__median's mean,
   * so the figure stays the one the choice's threshold was set against. */
  if (count) {
    qsort(e, (size_t)count, sizeof *e, clattn__cmp_double);
    *median_abs_err = e[count / 2];
  }
  *n = count;
done:
  free(e);
  sqlite3_finalize(st);
  return rc;
}

clattn_status clattn_db_list_profiles(clattn_db *db, size_t entry_size,
                                      clattn_profile **out, int *n) {
  void *rows = NULL;
  clattn_status rc = clattn__db_list_args(db, entry_size, out, n);
  if (rc != CLATTN_OK)
    return rc;
  rc = clattn__db_select_rows(db, cols, file_cols(db),
                              "FROM profiles ORDER BY name, fingerprint", NULL,
                              0, sizeof **out, "profiles", &rows, n);
  return clattn__db_rows_out(db, rc, rows, sizeof **out, *n, entry_size,
                             (void **)out);
}

/* ------------------------------------------------ the versioned boundary */

clattn_status clattn_db_put_profile(clattn_db *db, const clattn_profile *p) {
  clattn_profile own;
  clattn_status rc =
      clattn__db_row_in(db, &own, sizeof own, p, "clattn_profile");
  return rc ? rc : put_profile(db, &own);
}

clattn_status clattn_db_get_profile(clattn_db *db, const char *fingerprint,
                                    clattn_profile *out) {
  clattn_profile own;
  char why[128];
  if (out != NULL && clattn__struct_size(out) < sizeof(size_t))
    return clattn__db_check(db) ? clattn__db_check(db)
                                : clattn__db_fail(db, CLATTN_ERR_INVALID_ARG,
                                                  "clattn_profile.size is 0");
  memset(&own, 0, sizeof own);
  clattn_status rc = get_profile(db, fingerprint, out ? &own : NULL);
  if (out != NULL)
    clattn__struct_out(out, &own, sizeof own, "clattn_profile", why,
                       sizeof why);
  return rc;
}

clattn_status clattn_db_put_check(clattn_db *db, const clattn_check_record *r) {
  clattn_check_record own;
  clattn_status rc =
      clattn__db_row_in(db, &own, sizeof own, r, "clattn_check_record");
  return rc ? rc : put_check(db, &own);
}
