/* db.c - the SQLite database of probe results (and, through later
 * migrations, model checks and tuning entries).
 *
 * Concurrency: WAL journal, a 10 s busy timeout, and every write is one
 * statement (its own transaction), so several processes can share a file;
 * the JSON import (db_json.c) merges a whole file in one transaction
 * through clattn__db_begin / commit / rollback.
 * Schema: PRAGMA user_version is the number of migrations applied;
 * `migrations` below is append-only - a later table is a new entry, never
 * an edit of an old one.  Opening a database written by a newer library
 * (more migrations than this one knows) fails with CLATTN_ERR_DB.
 *
 * Profiles and tuning entries are stored one column per field.  The column
 * tables `cols` and `tune_cols` are the one place that maps struct fields
 * to columns: the upserts and the selects are generated from them, and so
 * is the JSON of the tuning rows (clattn__db_tune_cols). */
#include "runtime/runtime.h"
#include "db/db.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CLATTN_DB_MAGIC 0x636c6462u /* "cldb" */
#define BUSY_TIMEOUT_MS 10000

struct clattn_db {
  unsigned magic;
  sqlite3 *h;
  char *path;
  char errmsg[CLATTN_ERRMSG_MAX];
};

/* ------------------------------------------------------------- schema */

static const char *const migrations[] = {
    /* 1: device profiles */
    "CREATE TABLE profiles ("
    " fingerprint TEXT PRIMARY KEY NOT NULL,"
    " source INTEGER NOT NULL,"
    " name TEXT NOT NULL, vendor TEXT NOT NULL, platform TEXT NOT NULL,"
    " driver TEXT NOT NULL, arch TEXT NOT NULL,"
    " is_cpu INTEGER NOT NULL, compute_units INTEGER NOT NULL,"
    " clock_mhz INTEGER NOT NULL, wave_width INTEGER NOT NULL,"
    " simds_per_cu INTEGER NOT NULL, global_mem_bytes INTEGER NOT NULL,"
    " local_mem_bytes INTEGER NOT NULL, max_wg INTEGER NOT NULL,"
    " has_fp16 INTEGER NOT NULL, has_subgroups INTEGER NOT NULL,"
    " bw_read_gbs REAL NOT NULL, bw_copy_gbs REAL NOT NULL,"
    " bw_triad_gbs REAL NOT NULL, fp32_gflops REAL NOT NULL,"
    " fp16_gflops REAL NOT NULL, local_gbs REAL NOT NULL,"
    " h2d_gbs REAL NOT NULL, d2h_gbs REAL NOT NULL,"
    " launch_us REAL NOT NULL, launch_pipelined_us REAL NOT NULL,"
    " note TEXT NOT NULL,"
    " updated TEXT NOT NULL,"
    " library_version TEXT NOT NULL);",
    /* 2: the device's last-level cache (the model's DRAM estimate) */
    "ALTER TABLE profiles ADD COLUMN cache_bytes INTEGER NOT NULL DEFAULT 0;",
    /* 3: clattn model check results, next to the probe results */
    "CREATE TABLE model_checks ("
    " id INTEGER PRIMARY KEY,"
    " fingerprint TEXT NOT NULL, call TEXT NOT NULL, bound TEXT NOT NULL,"
    " predicted_s REAL NOT NULL, measured_s REAL NOT NULL,"
    " gbs REAL NOT NULL, gflops REAL NOT NULL,"
    " roofline_fraction REAL NOT NULL,"
    " updated TEXT NOT NULL, library_version TEXT NOT NULL);"
    "CREATE INDEX model_checks_fp ON model_checks (fingerprint, call);",
    /* 4: autotuner results, one row per measured or rejected candidate */
    "CREATE TABLE tuning ("
    " id INTEGER PRIMARY KEY,"
    " fingerprint TEXT NOT NULL, device TEXT NOT NULL, vendor TEXT NOT NULL,"
    " arch TEXT NOT NULL, driver TEXT NOT NULL,"
    " kernel TEXT NOT NULL, shape_class TEXT NOT NULL,"
    " params TEXT NOT NULL, status TEXT NOT NULL,"
    " median_s REAL NOT NULL, spread REAL NOT NULL,"
    " predicted_s REAL NOT NULL, max_err REAL NOT NULL,"
    " strategy TEXT NOT NULL, message TEXT NOT NULL,"
    " library_version TEXT NOT NULL, updated TEXT NOT NULL,"
    " UNIQUE (fingerprint, kernel, shape_class, params));"
    "CREATE INDEX tuning_class ON tuning (kernel, shape_class);",
    /* 5: the probe method of a measured profile (older rows: method 1) */
    "ALTER TABLE profiles ADD COLUMN probe_method INTEGER NOT NULL "
    "DEFAULT 1;",
    /* 6: the tuner's method of a row (clattn_tune_method; older rows: 1) */
    "ALTER TABLE tuning ADD COLUMN tune_method INTEGER NOT NULL DEFAULT 1;",
};
#define N_MIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))

/* Rows are stored one column per struct field: a table of clattn__col
 * (db.h) maps the fields of a struct (profile, tuning entry) to its
 * columns. */
typedef clattn__col col;
#define C_TEXT CLATTN_COL_TEXT
#define C_SOURCE CLATTN_COL_SOURCE
#define C_INT CLATTN_COL_INT
#define C_UINT CLATTN_COL_UINT
#define C_U64 CLATTN_COL_U64
#define C_SIZE CLATTN_COL_SIZE
#define C_REAL CLATTN_COL_REAL

#define COL_(f, t)                                                             \
  { #f, t, offsetof(clattn_profile, f), sizeof(((clattn_profile *)0)->f) }
static const col cols[] = {
    COL_(fingerprint, C_TEXT),    COL_(source, C_SOURCE),
    COL_(name, C_TEXT),           COL_(vendor, C_TEXT),
    COL_(platform, C_TEXT),       COL_(driver, C_TEXT),
    COL_(arch, C_TEXT),           COL_(is_cpu, C_INT),
    COL_(compute_units, C_UINT),  COL_(clock_mhz, C_UINT),
    COL_(wave_width, C_UINT),     COL_(simds_per_cu, C_UINT),
    COL_(global_mem_bytes, C_U64), COL_(local_mem_bytes, C_U64),
    COL_(max_wg, C_SIZE),         COL_(has_fp16, C_INT),
    COL_(has_subgroups, C_INT),   COL_(bw_read_gbs, C_REAL),
    COL_(bw_copy_gbs, C_REAL),    COL_(bw_triad_gbs, C_REAL),
    COL_(fp32_gflops, C_REAL),    COL_(fp16_gflops, C_REAL),
    COL_(local_gbs, C_REAL),      COL_(h2d_gbs, C_REAL),
    COL_(d2h_gbs, C_REAL),        COL_(launch_us, C_REAL),
    COL_(launch_pipelined_us, C_REAL), COL_(note, C_TEXT),
    COL_(cache_bytes, C_U64),     COL_(probe_method, C_INT),
};
#undef COL_
#define N_COLS ((int)(sizeof cols / sizeof cols[0]))

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

/* ------------------------------------------------------------- errors */

static _Thread_local char open_errmsg[CLATTN_ERRMSG_MAX];

const char *clattn_db_errmsg(const clattn_db *db) {
  if (db == NULL)
    return open_errmsg;
  if (db->magic != CLATTN_DB_MAGIC)
    return "not a live clattn database handle";
  return db->errmsg;
}

const char *clattn_db_path(const clattn_db *db) {
  if (db == NULL || db->magic != CLATTN_DB_MAGIC)
    return NULL;
  return db->path;
}

/* Record "<what>: <sqlite message> (database <path>)" and return ERR_DB. */
static clattn_status db_fail(clattn_db *db, const char *what) {
  snprintf(db->errmsg, sizeof db->errmsg, "%s: %s (database %s)", what,
           db->h ? sqlite3_errmsg(db->h) : "no connection", db->path);
  return CLATTN_ERR_DB;
}

static clattn_status db_check(clattn_db *db) {
  if (db == NULL)
    return CLATTN_ERR_INVALID_ARG;
  if (db->magic != CLATTN_DB_MAGIC)
    return CLATTN_ERR_MISUSE;
  db->errmsg[0] = '\0';
  return CLATTN_OK;
}

clattn_status clattn__db_check(clattn_db *db) { return db_check(db); }

clattn_status clattn__db_fail(clattn_db *db, clattn_status st,
                              const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(db->errmsg, sizeof db->errmsg, fmt, ap);
  va_end(ap);
  return st;
}

/* ---------------------------------------------------------------- open */

char *clattn__db_default_path(void) {
  const char *env = getenv("CLATTN_DB");
  const char *xdg = getenv("XDG_DATA_HOME");
  const char *home = getenv("HOME");
  char buf[4096];
  if (env && *env)
    snprintf(buf, sizeof buf, "%s", env);
  else if (xdg && *xdg)
    snprintf(buf, sizeof buf, "%s/clattn/tuning.db", xdg);
  else if (home && *home)
    snprintf(buf, sizeof buf, "%s/.local/share/clattn/tuning.db", home);
  else
    return NULL;
  return strdup(buf);
}

/* Create the directory holding path (if any). */
static clattn_status make_parent(clattn_db *db) {
  char *slash = strrchr(db->path, '/');
  if (slash == NULL || slash == db->path)
    return CLATTN_OK;
  *slash = '\0';
  int r = clattn__mkdir_p(db->path);
  int err = errno;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", db->path);
  *slash = '/';
  if (r == 0)
    return CLATTN_OK;
  snprintf(db->errmsg, sizeof db->errmsg,
           "cannot create directory %s for database %s: %s", dir, db->path,
           strerror(err));
  return CLATTN_ERR_DB;
}

static clattn_status exec(clattn_db *db, const char *sql, const char *what) {
  if (sqlite3_exec(db->h, sql, NULL, NULL, NULL) != SQLITE_OK)
    return db_fail(db, what);
  return CLATTN_OK;
}

/* WAL lets readers and one writer proceed together; filesystems without
 * shared memory keep the rollback journal, which is still correct.  The
 * switch upgrades a shared lock to an exclusive one: two connections
 * switching a new file at once deadlock, and SQLite then fails one of them
 * at once (SQLITE_BUSY, without calling the busy handler), so that one
 * retries for as long as the busy timeout. */
static clattn_status set_wal(clattn_db *db) {
  for (int waited = 0;; waited += 5) {
    const int rc = sqlite3_exec(db->h, "PRAGMA journal_mode=WAL", NULL, NULL,
                                NULL);
    if (rc == SQLITE_OK)
      return CLATTN_OK;
    if (((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) ||
        waited >= BUSY_TIMEOUT_MS)
      return db_fail(db, "setting WAL mode");
    sqlite3_sleep(5);
  }
}

/* Apply the migrations the file lacks, in one transaction. */
static clattn_status migrate(clattn_db *db) {
  clattn_status rc = CLATTN_OK;
  sqlite3_stmt *st = NULL;
  int version = 0;
  CLATTN_TRY(exec(db, "BEGIN IMMEDIATE", "starting the schema migration"));
  if (sqlite3_prepare_v2(db->h, "PRAGMA user_version", -1, &st, NULL) !=
          SQLITE_OK ||
      sqlite3_step(st) != SQLITE_ROW) {
    rc = db_fail(db, "reading the schema version");
    goto rollback;
  }
  version = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  st = NULL;
  if (version > N_MIGRATIONS) {
    snprintf(db->errmsg, sizeof db->errmsg,
             "database %s has schema version %d; this library (clattn %s) "
             "knows versions up to %d",
             db->path, version, clattn_version(), N_MIGRATIONS);
    rc = CLATTN_ERR_DB;
    goto rollback;
  }
  for (int i = version; i < N_MIGRATIONS; i++) {
    char what[64], sql[64];
    snprintf(what, sizeof what, "schema migration %d", i + 1);
    rc = exec(db, migrations[i], what);
    if (rc != CLATTN_OK)
      goto rollback;
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", i + 1);
    rc = exec(db, sql, what);
    if (rc != CLATTN_OK)
      goto rollback;
  }
  CLATTN_TRY(exec(db, "COMMIT", "committing the schema migration"));
  return CLATTN_OK;
rollback:
  sqlite3_finalize(st);
  sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
done:
  return rc;
}

clattn_status clattn_db_open(const char *path, clattn_db **out) {
  clattn_status rc = CLATTN_OK;
  clattn_db *db = NULL;
  open_errmsg[0] = '\0';
  if (out == NULL) {
    snprintf(open_errmsg, sizeof open_errmsg, "out is NULL");
    return CLATTN_ERR_INVALID_ARG;
  }
  *out = NULL;
  db = calloc(1, sizeof *db);
  if (db == NULL) {
    snprintf(open_errmsg, sizeof open_errmsg, "out of host memory");
    return CLATTN_ERR_NOMEM;
  }
  db->magic = CLATTN_DB_MAGIC;
  db->path = path ? strdup(path) : clattn__db_default_path();
  if (db->path == NULL) {
    snprintf(db->errmsg, sizeof db->errmsg,
             path ? "out of host memory"
                  : "no database path: set CLATTN_DB, XDG_DATA_HOME or HOME");
    rc = path ? CLATTN_ERR_NOMEM : CLATTN_ERR_DB;
    goto done;
  }
  CLATTN_TRY(make_parent(db));
  if (sqlite3_open_v2(db->path, &db->h,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
      SQLITE_OK) {
    rc = db_fail(db, "cannot open");
    goto done;
  }
  if (sqlite3_busy_timeout(db->h, BUSY_TIMEOUT_MS) != SQLITE_OK) {
    rc = db_fail(db, "setting the busy timeout");
    goto done;
  }
  CLATTN_TRY(set_wal(db));
  CLATTN_TRY(migrate(db));
  db->errmsg[0] = '\0';
  *out = db;
  return CLATTN_OK;
done:
  snprintf(open_errmsg, sizeof open_errmsg, "%s", db->errmsg);
  clattn_db_close(db);
  return rc;
}

void clattn_db_close(clattn_db *db) {
  if (db == NULL || db->magic != CLATTN_DB_MAGIC)
    return;
  sqlite3_close(db->h); /* statements are always finalized */
  free(db->path);
  db->magic = 0;
  free(db);
}

/* ------------------------------------------------------------ profiles */

void clattn__db_iso_now(char *buf, size_t cap) {
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm) == NULL ||
      strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    snprintf(buf, cap, "unknown");
}

/* Bind field c of the struct at obj to parameter i + 1. */
static int bind_col(sqlite3_stmt *st, int i, const col *c, const void *obj) {
  const char *f = (const char *)obj + c->off;
  switch (c->type) {
  case C_TEXT:
    return sqlite3_bind_text(st, i + 1, f, (int)strnlen(f, c->size),
                             SQLITE_TRANSIENT);
  case C_SOURCE:
    return sqlite3_bind_int(st, i + 1, *(const int *)(const void *)f);
  case C_INT:
    return sqlite3_bind_int(st, i + 1, *(const int *)(const void *)f);
  case C_UINT:
    return sqlite3_bind_int64(st, i + 1, *(const unsigned *)(const void *)f);
  case C_U64:
    return sqlite3_bind_int64(
        st, i + 1, (sqlite3_int64) * (const unsigned long long *)(const void *)f);
  case C_SIZE:
    return sqlite3_bind_int64(st, i + 1,
                              (sqlite3_int64) * (const size_t *)(const void *)f);
  case C_REAL:
    return sqlite3_bind_double(st, i + 1, *(const double *)(const void *)f);
  }
  return SQLITE_MISUSE;
}

/* Read result column i into field c of the struct at obj. */
static void read_col(sqlite3_stmt *st, int i, const col *c, void *obj) {
  char *f = (char *)obj + c->off;
  switch (c->type) {
  case C_TEXT: {
    const unsigned char *s = sqlite3_column_text(st, i);
    size_t n = s ? strlen((const char *)s) : 0;
    if (n > c->size - 1)
      n = c->size - 1;
    if (n)
      memcpy(f, s, n);
    f[n] = '\0';
    break;
  }
  case C_SOURCE: /* an enum stored as int */
    *(int *)(void *)f = sqlite3_column_int(st, i);
    break;
  case C_INT:
    *(int *)(void *)f = sqlite3_column_int(st, i);
    break;
  case C_UINT:
    *(unsigned *)(void *)f = (unsigned)sqlite3_column_int64(st, i);
    break;
  case C_U64:
    *(unsigned long long *)(void *)f =
        (unsigned long long)sqlite3_column_int64(st, i);
    break;
  case C_SIZE:
    *(size_t *)(void *)f = (size_t)sqlite3_column_int64(st, i);
    break;
  case C_REAL:
    *(double *)(void *)f = sqlite3_column_double(st, i);
    break;
  }
}

clattn_status clattn_db_put_profile(clattn_db *db, const clattn_profile *p) {
  clattn_status rc = db_check(db);
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
    rc = db_fail(db, "preparing the profile upsert");
    goto done;
  }
  for (int i = 0; i < N_COLS; i++) {
    if (bind_col(st, i, &cols[i], p) != SQLITE_OK) {
      rc = db_fail(db, "binding a profile field");
      goto done;
    }
  }
  if (sqlite3_bind_text(st, N_COLS + 1, date, -1, SQLITE_TRANSIENT) !=
          SQLITE_OK ||
      sqlite3_bind_text(st, N_COLS + 2, clattn_version(), -1,
                        SQLITE_STATIC) != SQLITE_OK) {
    rc = db_fail(db, "binding a profile field");
    goto done;
  }
  if (sqlite3_step(st) != SQLITE_DONE)
    rc = db_fail(db, "storing the profile");
done:
  sqlite3_finalize(st);
  return rc;
}

clattn_status clattn_db_get_profile(clattn_db *db, const char *fingerprint,
                                    clattn_profile *out) {
  clattn_status rc = db_check(db);
  sqlite3_stmt *st = NULL;
  char sql[2048] = "SELECT ";
  if (rc != CLATTN_OK)
    return rc;
  if (fingerprint == NULL || out == NULL)
    return CLATTN_ERR_INVALID_ARG;
  for (int i = 0; i < N_COLS; i++)
    clattn__appendf(sql, sizeof sql, i ? ", %s" : "%s", cols[i].name);
  if (clattn__appendf(sql, sizeof sql,
                      " FROM profiles WHERE fingerprint = ?") != 0)
    return CLATTN_ERR_MISUSE; /* cannot happen: the buffer fits cols[] */
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK ||
      sqlite3_bind_text(st, 1, fingerprint, -1, SQLITE_TRANSIENT) !=
          SQLITE_OK) {
    rc = db_fail(db, "preparing the profile query");
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
    rc = db_fail(db, "reading the profile");
    goto done;
  }
  memset(out, 0, sizeof *out);
  for (int i = 0; i < N_COLS; i++)
    read_col(st, i, &cols[i], out);
done:
  sqlite3_finalize(st);
  return rc;
}

clattn_status clattn_db_put_check(clattn_db *db,
                                  const clattn_check_record *r) {
  clattn_status rc = db_check(db);
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
    rc = db_fail(db, "preparing the model-check insert");
    goto done;
  }
  const double v[5] = {r->predicted_s, r->measured_s, r->gbs, r->gflops,
                       r->roofline_fraction};
  int ok = sqlite3_bind_text(st, 1, r->fingerprint, -1, SQLITE_TRANSIENT) ==
               SQLITE_OK &&
           sqlite3_bind_text(st, 2, r->call, -1, SQLITE_TRANSIENT) ==
               SQLITE_OK &&
           sqlite3_bind_text(st, 3, r->bound, -1, SQLITE_TRANSIENT) ==
               SQLITE_OK &&
           sqlite3_bind_text(st, 9, date, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
           sqlite3_bind_text(st, 10, clattn_version(), -1, SQLITE_STATIC) ==
               SQLITE_OK;
  for (int i = 0; i < 5 && ok; i++)
    ok = sqlite3_bind_double(st, 4 + i, v[i]) == SQLITE_OK;
  if (!ok) {
    rc = db_fail(db, "binding a model-check field");
    goto done;
  }
  if (sqlite3_step(st) != SQLITE_DONE)
    rc = db_fail(db, "storing the model check");
done:
  sqlite3_finalize(st);
  return rc;
}

/* ------------------------------------------------------------- tuning */

/* Copy a string into a fixed field (truncating). */
static void set_field(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src ? src : "");
}

/* ------------------------------------------------------- transactions */

clattn_status clattn__db_begin(clattn_db *db) {
  return exec(db, "BEGIN IMMEDIATE", "starting a transaction");
}

clattn_status clattn__db_commit(clattn_db *db) {
  return exec(db, "COMMIT", "committing a transaction");
}

void clattn__db_rollback(clattn_db *db) {
  if (!sqlite3_get_autocommit(db->h))
    sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
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
  clattn_status rc = db_check(db);
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
      return db_fail(db, "looking up the tuning entry");
  }
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) {
    rc = db_fail(db, "preparing the tuning upsert");
    goto done;
  }
  for (int i = 0; i < N_TUNE_COLS; i++) {
    if (bind_col(st, i, &tune_cols[i], &e) != SQLITE_OK) {
      rc = db_fail(db, "binding a tuning field");
      goto done;
    }
  }
  if (sqlite3_step(st) != SQLITE_DONE) {
    rc = db_fail(db, "storing the tuning entry");
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
  clattn_status rc = db_check(db);
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
    rc = db_fail(db, "preparing the tuning query");
    goto done;
  }
  for (int i = 0; i < 3; i++) {
    int r = filter[i] ? sqlite3_bind_text(st, i + 1, filter[i], -1,
                                          SQLITE_TRANSIENT)
                      : sqlite3_bind_null(st, i + 1);
    if (r != SQLITE_OK) {
      rc = db_fail(db, "binding a tuning filter");
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
      read_col(st, i, &tune_cols[i], &rows[count]);
    count++;
  }
  if (r != SQLITE_DONE) {
    rc = db_fail(db, "reading the tuning entries");
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

clattn_status clattn__db_model_error(clattn_db *db, const char *fingerprint,
                                     double *median_abs_err, int *n) {
  clattn_status rc = clattn__db_check(db);
  sqlite3_stmt *st = NULL;
  double *e = NULL;
  int count = 0, cap = 0;
  *median_abs_err = 0.0;
  *n = 0;
  if (rc != CLATTN_OK)
    return rc;
  if (sqlite3_prepare_v2(db->h,
                         "SELECT predicted_s, measured_s FROM model_checks"
                         " WHERE fingerprint = ? AND measured_s > 0",
                         -1, &st, NULL) != SQLITE_OK ||
      sqlite3_bind_text(st, 1, fingerprint, -1, SQLITE_TRANSIENT) !=
          SQLITE_OK) {
    rc = db_fail(db, "preparing the model-check query");
    goto done;
  }
  int r;
  while ((r = sqlite3_step(st)) == SQLITE_ROW) {
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
    e[count++] = fabs(sqlite3_column_double(st, 0) /
                          sqlite3_column_double(st, 1) -
                      1.0);
  }
  if (r != SQLITE_DONE) {
    rc = db_fail(db, "reading the model checks");
    goto done;
  }
  for (int i = 1; i < count; i++) /* insertion sort: a few dozen rows */
    for (int j = i; j > 0 && e[j - 1] > e[j]; j--) {
      double t = e[j];
      e[j] = e[j - 1];
      e[j - 1] = t;
    }
  if (count)
    *median_abs_err = e[count / 2];
  *n = count;
done:
  free(e);
  sqlite3_finalize(st);
  return rc;
}
