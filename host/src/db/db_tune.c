/* db_tune.c - the tuning rows in the database: clattn_db_put_tune, the
 * import's merge (clattn__db_upsert_tune) and clattn_db_list_tune. */
#include "db/db_impl.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COL_(f, t)                                                             \
  { #f, t, offsetof(clattn_tune_entry, f),                                     \
    sizeof(((clattn_tune_entry *)0)->f) }
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

/* Copy a string into a fixed field (truncating). */
static void set_field(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src ? src : "");
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
      sqlite3_bind_text(st, 2, e->kernel, -1, SQLITE_TRANSIENT) ==
          SQLITE_OK &&
      sqlite3_bind_text(st, 3, e->shape_class, -1, SQLITE_TRANSIENT) ==
          SQLITE_OK &&
      sqlite3_bind_text(st, 4, e->params, -1, SQLITE_TRANSIENT) ==
          SQLITE_OK) {
    int s = sqlite3_step(st);
    r = s == SQLITE_ROW ? 1 : s == SQLITE_DONE ? 0 : -1;
  }
  sqlite3_finalize(st);
  return r;
}

clattn_status clattn__db_upsert_tune(clattn_db *db, const clattn_tune_entry *in,
                                     int only_newer, int *changed) {
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
  if (!e.fingerprint[0] || !e.kernel[0] || !e.shape_class[0] ||
      !e.params[0] || !e.status[0]) {
    snprintf(db->errmsg, sizeof db->errmsg,
             "tuning entry lacks its fingerprint, kernel, shape class, "
             "params or status");
    return CLATTN_ERR_INVALID_ARG;
  }
  if (!e.updated[0])
    clattn__db_iso_now(e.updated, sizeof e.updated);
  if (!e.library_version[0])
    set_field(e.library_version, sizeof e.library_version, clattn_version());
  for (int i = 0; i < N_TUNE_COLS; i++)
    clattn__appendf(sql, sizeof sql, i ? ", %s" : "%s", tune_cols[i].name);
  clattn__appendf(sql, sizeof sql, ") VALUES (");
  for (int i = 0; i < N_TUNE_COLS; i++)
    clattn__appendf(sql, sizeof sql, i ? ", ?" : "?");
  clattn__appendf(sql, sizeof sql, ") ON CONFLICT(" TUNE_KEY ") DO UPDATE SET");
  for (int i = 0; i < N_TUNE_COLS; i++)
    clattn__appendf(sql, sizeof sql, "%s %s = excluded.%s", i ? "," : "",
                    tune_cols[i].name, tune_cols[i].name);
  if (clattn__appendf(sql, sizeof sql, "%s",
                      only_newer ? " WHERE excluded.updated > tuning.updated"
                                 : "") != 0)
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
    rc = clattn__db_sql_fail(db, "storing the tuning entry");
    goto done;
  }
  if (changed)
    *changed = sqlite3_changes(db->h) > 0 ? 1 + existed : 0;
done:
  sqlite3_finalize(st);
  return rc;
}

clattn_status clattn_db_put_tune(clattn_db *db, const clattn_tune_entry *e) {
  return clattn__db_upsert_tune(db, e, 0, NULL);
}

clattn_status clattn_db_list_tune(clattn_db *db, const char *fingerprint,
                                  const char *kernel, const char *shape_class,
                                  clattn_tune_entry **out, int *n) {
  clattn_status rc = clattn__db_check(db);
  sqlite3_stmt *st = NULL;
  char sql[2048] = "SELECT ";
  clattn_tune_entry *rows = NULL;
  int count = 0, cap = 0;
  if (rc != CLATTN_OK)
    return rc;
  if (out == NULL || n == NULL)
    return CLATTN_ERR_INVALID_ARG;
  *out = NULL;
  *n = 0;
  for (int i = 0; i < N_TUNE_COLS; i++)
    clattn__appendf(sql, sizeof sql, i ? ", %s" : "%s", tune_cols[i].name);
  /* NULL filters match every row: "?1 IS NULL OR column = ?1" */
  if (clattn__appendf(sql, sizeof sql,
                      " FROM tuning WHERE (?1 IS NULL OR fingerprint = ?1)"
                      " AND (?2 IS NULL OR kernel = ?2)"
                      " AND (?3 IS NULL OR shape_class = ?3)"
                      " ORDER BY kernel, shape_class, fingerprint,"
                      " status != 'ok', median_s, params") != 0)
    return CLATTN_ERR_MISUSE;
  const char *filter[3] = {fingerprint, kernel, shape_class};
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) {
    rc = clattn__db_sql_fail(db, "preparing the tuning query");
    goto done;
  }
  for (int i = 0; i < 3; i++) {
    int r = filter[i] ? sqlite3_bind_text(st, i + 1, filter[i], -1,
                                          SQLITE_TRANSIENT)
                      : sqlite3_bind_null(st, i + 1);
    if (r != SQLITE_OK) {
      rc = clattn__db_sql_fail(db, "binding a tuning filter");
      goto done;
    }
  }
  int r;
  while ((r = sqlite3_step(st)) == SQLITE_ROW) {
    if (count == cap) {
      int nc = cap ? 2 * cap : 64;
      clattn_tune_entry *g = realloc(rows, (size_t)nc * sizeof *rows);
      if (g == NULL) {
        snprintf(db->errmsg, sizeof db->errmsg, "out of host memory");
        rc = CLATTN_ERR_NOMEM;
        goto done;
      }
      rows = g;
      cap = nc;
    }
    memset(&rows[count], 0, sizeof rows[count]);
    for (int i = 0; i < N_TUNE_COLS; i++)
      clattn__db_read_col(st, i, &tune_cols[i], &rows[count]);
    count++;
  }
  if (r != SQLITE_DONE) {
    rc = clattn__db_sql_fail(db, "reading the tuning entries");
    goto done;
  }
  *out = rows;
  *n = count;
  rows = NULL;
done:
  free(rows);
  sqlite3_finalize(st);
  return rc;
}
