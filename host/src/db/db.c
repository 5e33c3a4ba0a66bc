/* db.c - the SQLite database of probe results (and, through later
 * migrations, model checks and tuning entries): opening it, its schema and
 * migrations, errors, transactions and the column mapping; the rows are
 * stored by db_profile.c and db_tune.c.
 *
 * Concurrency: WAL journal, a 10 s busy timeout, and every write is one
 * statement (its own transaction), so several processes can share a file;
 * the JSON import (json_import.c) merges a whole file in one transaction
 * through clattn__db_begin / commit / rollback.
 * Schema: PRAGMA user_version is the number of migrations applied;
 * `migrations` below is append-only - a later table is a new entry, never
 * an edit of an old one.  Opening a database written by a newer library
 * (more migrations than this one knows) fails with CLATTN_ERR_DB.
 *
 * Profiles, tuning entries and bench rows are stored one column per field.
 * The column tables `cols` (db_profile.c), `tune_cols` (db_tune.c) and
 * `bench_cols` (db_bench.c) are the one
 * place that maps struct fields to columns: the upserts and the selects
 * are generated from them, and so is the JSON of the tuning rows
 * (clattn__db_tune_cols). */
#include "db/db_impl.h"
#include "base/utf8.h"
#include "base/versioned.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define BUSY_TIMEOUT_MS 10000
/* Readers (clattn_db_open_readonly) wait at most this long for a lock:
 * WAL readers are not blocked by a writer, so a lock they meet is a
 * rollback-journal writer or a recovery, and a context's first call should
 * not wait for it (the defaults apply, and explain says why). */
#define READ_BUSY_TIMEOUT_MS 200

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
    /* 7: the run-time reader's lookup of a device's vendor and arch */
    "CREATE INDEX tuning_device ON tuning (vendor, arch);",
    /* 8: benchmark rows of clattn bench (clattn_bench_entry), read by the
     * report per device and family */
    "CREATE TABLE bench ("
    " id INTEGER PRIMARY KEY,"
    " fingerprint TEXT NOT NULL, device TEXT NOT NULL, vendor TEXT NOT NULL,"
    " arch TEXT NOT NULL, driver TEXT NOT NULL,"
    " family TEXT NOT NULL, shape TEXT NOT NULL, shape_class TEXT NOT NULL,"
    " impl TEXT NOT NULL, params TEXT NOT NULL,"
    " params_source TEXT NOT NULL, params_device TEXT NOT NULL,"
    " median_s REAL NOT NULL, spread REAL NOT NULL,"
    " flops REAL NOT NULL, bytes REAL NOT NULL,"
    " predicted_s REAL NOT NULL, roof_s REAL NOT NULL,"
    " bound TEXT NOT NULL, max_err REAL NOT NULL,"
    " run TEXT NOT NULL, library_version TEXT NOT NULL,"
    " updated TEXT NOT NULL,"
    " UNIQUE (fingerprint, family, shape, impl, run));"
    "CREATE INDEX bench_family ON bench (family, device);",
};
/* The oldest schema a reader can use (the tuning table's columns of today;
 * later migrations only add indexes, and the bench table, which a reader of
 * an older file lists as empty). */
#define MIN_READ_VERSION 6
#define N_MIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))

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

clattn_status clattn__db_sql_fail(clattn_db *db, const char *what) {
  const int code = db->h ? sqlite3_extended_errcode(db->h) & 0xff : 0;
  snprintf(db->errmsg, sizeof db->errmsg, "%s: %s%s (database %s)", what,
           db->h ? sqlite3_errmsg(db->h) : "no connection",
           code == SQLITE_BUSY || code == SQLITE_LOCKED
               ? " (busy: another connection holds a lock)"
               : "",
           db->path);
  return CLATTN_ERR_DB;
}

clattn_status clattn__db_check(clattn_db *db) {
  if (db == NULL)
    return CLATTN_ERR_INVALID_ARG;
  if (db->magic != CLATTN_DB_MAGIC)
    return CLATTN_ERR_MISUSE;
  db->errmsg[0] = '\0';
  return CLATTN_OK;
}

clattn_status clattn__db_fail(clattn_db *db, clattn_status st, const char *fmt,
                              ...) {
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

static int env_set(const char *name) {
  const char *v = getenv(name);
  return v != NULL && *v != '\0';
}

clattn_status clattn_db_default_path(char *buf, size_t cap) {
  if (buf == NULL || cap == 0)
    return CLATTN_ERR_INVALID_ARG;
  buf[0] = '\0';
  char *path = clattn__db_default_path();
  if (path == NULL)
    return env_set("CLATTN_DB") || env_set("XDG_DATA_HOME") || env_set("HOME")
               ? CLATTN_ERR_NOMEM
               : CLATTN_ERR_DB;
  const size_t n = strlen(path);
  clattn_status rc = n < cap ? CLATTN_OK : CLATTN_ERR_BUFFER_TOO_SMALL;
  if (rc == CLATTN_OK)
    memcpy(buf, path, n + 1);
  free(path);
  return rc;
}

/* Whether dir is the default database's own directory ($CLATTN_DB aside:
 * a path the user names), and then into base the directory that must
 * exist for it to be made: $HOME, or $XDG_DATA_HOME's parent (the XDG spec
 * lets a program create $XDG_DATA_HOME itself). */
static int default_dir_base(const char *dir, char *base, size_t cap) {
  const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
  char own[4096];
  if (env_set("CLATTN_DB"))
    return 0;
  if (xdg && *xdg) {
    snprintf(own, sizeof own, "%s/clattn", xdg);
    snprintf(base, cap, "%s", xdg);
    char *slash = strrchr(base, '/');
    if (slash != NULL)
      slash[slash == base] = '\0'; /* "/x" -> "/" */
    else
      snprintf(base, cap, ".");
  } else if (home && *home) {
    snprintf(own, sizeof own, "%s/.local/share/clattn", home);
    snprintf(base, cap, "%s", home);
  } else {
    return 0;
  }
  return strcmp(own, dir) == 0;
}

/* Create the directory holding path if missing, only where it is the
 * default database's (below $HOME or $XDG_DATA_HOME): a path the user
 * names (an argument, $CLATTN_DB) goes into a directory that exists, so a
 * mistyped path makes no tree of directories. */
static clattn_status make_parent(clattn_db *db) {
  char *slash = strrchr(db->path, '/');
  if (slash == NULL || slash == db->path)
    return CLATTN_OK;
  char dir[4096], base[4096];
  struct stat sb;
  snprintf(dir, sizeof dir, "%.*s", (int)(slash - db->path), db->path);
  if (stat(dir, &sb) == 0)
    return CLATTN_OK; /* not a directory: SQLite's open says so */
  if (!default_dir_base(dir, base, sizeof base) || stat(base, &sb) != 0 ||
      !S_ISDIR(sb.st_mode)) {
    snprintf(db->errmsg, sizeof db->errmsg,
             "cannot create database %s: directory %s does not exist", db->path,
             dir);
    return CLATTN_ERR_DB;
  }
  if (clattn__mkdir_p(dir) == 0)
    return CLATTN_OK;
  snprintf(db->errmsg, sizeof db->errmsg,
           "cannot create directory %s for database %s: %s", dir, db->path,
           strerror(errno));
  return CLATTN_ERR_DB;
}

static clattn_status exec(clattn_db *db, const char *sql, const char *what) {
  if (sqlite3_exec(db->h, sql, NULL, NULL, NULL) != SQLITE_OK)
    return clattn__db_sql_fail(db, what);
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
    const int rc =
        sqlite3_exec(db->h, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
      return CLATTN_OK;
    if (((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) ||
        waited >= BUSY_TIMEOUT_MS)
      return clattn__db_sql_fail(db, "setting WAL mode");
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
    rc = clattn__db_sql_fail(db, "reading the schema version");
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

/* A new handle for path (NULL: the default path); NULL with the reason in
 * open_errmsg and *rc on failure. */
static clattn_db *new_handle(const char *path, clattn_db **out,
                             clattn_status *rc) {
  open_errmsg[0] = '\0';
  *rc = CLATTN_OK;
  if (out == NULL) {
    snprintf(open_errmsg, sizeof open_errmsg, "out is NULL");
    *rc = CLATTN_ERR_INVALID_ARG;
    return NULL;
  }
  *out = NULL;
  clattn_db *db = calloc(1, sizeof *db);
  if (db == NULL) {
    snprintf(open_errmsg, sizeof open_errmsg, "out of host memory");
    *rc = CLATTN_ERR_NOMEM;
    return NULL;
  }
  db->magic = CLATTN_DB_MAGIC;
  db->path = path ? strdup(path) : clattn__db_default_path();
  if (db->path == NULL) {
    snprintf(open_errmsg, sizeof open_errmsg, "%s",
             path ? "out of host memory"
                  : "no database path: set CLATTN_DB, XDG_DATA_HOME or HOME");
    *rc = path ? CLATTN_ERR_NOMEM : CLATTN_ERR_DB;
    clattn_db_close(db);
    return NULL;
  }
  return db;
}

clattn_status clattn_db_open(const char *path, clattn_db **out) {
  clattn_status rc = CLATTN_OK;
  clattn_db *db = new_handle(path, out, &rc);
  if (db == NULL)
    return rc;
  CLATTN_TRY(make_parent(db));
  if (sqlite3_open_v2(db->path, &db->h,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      NULL) != SQLITE_OK) {
    rc = clattn__db_sql_fail(db, "cannot open");
    goto done;
  }
  if (sqlite3_busy_timeout(db->h, BUSY_TIMEOUT_MS) != SQLITE_OK) {
    rc = clattn__db_sql_fail(db, "setting the busy timeout");
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

/* Whether an SQLite result code means another connection holds a lock. */
static int is_busy(int rc) {
  return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
}

/* Record why a read-only open failed: the lock of another connection is
 * named as such, so that explain can say the tuning was skipped for it. */
static clattn_status read_fail(clattn_db *db, int rc, const char *what) {
  if (is_busy(rc))
    return clattn__db_fail(db, CLATTN_ERR_DB,
                           "database %s is busy (locked by another "
                           "connection for more than %d ms) while %s",
                           db->path, READ_BUSY_TIMEOUT_MS, what);
  return clattn__db_sql_fail(db, what);
}

/* The schema version of a read-only connection, which must be this
 * library's: a reader never migrates, so an older file (until a writer
 * opens it) and a newer one are both refused with the versions named. */
static clattn_status check_version_readonly(clattn_db *db) {
  sqlite3_stmt *st = NULL;
  clattn_status rc = CLATTN_OK;
  int r = sqlite3_prepare_v2(db->h, "PRAGMA user_version", -1, &st, NULL);
  if (r == SQLITE_OK)
    r = sqlite3_step(st);
  if (r != SQLITE_ROW) {
    rc = read_fail(db, r, "reading the schema version");
    goto done;
  }
  const int version = sqlite3_column_int(st, 0);
  if (version > N_MIGRATIONS)
    rc = clattn__db_fail(db, CLATTN_ERR_DB,
                         "database %s has schema version %d, newer than this "
                         "library's (clattn %s, versions up to %d)",
                         db->path, version, clattn_version(), N_MIGRATIONS);
  else if (version < MIN_READ_VERSION)
    rc = clattn__db_fail(db, CLATTN_ERR_DB,
                         "database %s has schema version %d, older than the "
                         "%d this library reads: a read-only open does not "
                         "migrate (open it once for writing, e.g. clattn db "
                         "import)",
                         db->path, version, MIN_READ_VERSION);
done:
  sqlite3_finalize(st);
  return rc;
}

/* Open db->path read-only with the reader's busy timeout; immutable: as
 * an SQLite URI with immutable=1 (no locking, no -shm file). */
static clattn_status open_readonly(clattn_db *db, int immutable) {
  char uri[4200];
  const char *name = db->path;
  int flags = SQLITE_OPEN_READONLY;
  if (immutable) {
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    n += (size_t)snprintf(uri, sizeof uri, "file:");
    for (const char *p = db->path; *p && n + 4 < sizeof uri; p++) {
      const unsigned char c = (unsigned char)*p;
      if (c == '%' || c == '?' || c == '#' || c <= 0x20 || c >= 0x7f) {
        uri[n++] = '%';
        uri[n++] = hex[c >> 4];
        uri[n++] = hex[c & 15];
      } else {
        uri[n++] = (char)c;
      }
    }
    uri[n] = '\0';
    if (clattn__appendf(uri, sizeof uri, "?immutable=1") != 0)
      return clattn__db_fail(db, CLATTN_ERR_DB, "database path %s too long",
                             db->path);
    name = uri;
    flags |= SQLITE_OPEN_URI;
  }
  int r = sqlite3_open_v2(name, &db->h, flags, NULL);
  if (r != SQLITE_OK)
    return read_fail(db, r, "cannot open for reading");
  if (sqlite3_busy_timeout(db->h, READ_BUSY_TIMEOUT_MS) != SQLITE_OK)
    return clattn__db_sql_fail(db, "setting the busy timeout");
  return CLATTN_OK;
}

clattn_status clattn_db_open_readonly(const char *path, clattn_db **out) {
  clattn_status rc = CLATTN_OK;
  clattn_db *db = new_handle(path, out, &rc);
  struct stat sb;
  if (db == NULL)
    return rc;
  /* A missing file is "no database", not an error to create it for. */
  if (stat(db->path, &sb) != 0) {
    const int err = errno;
    rc = clattn__db_fail(
        db, err == ENOENT ? CLATTN_ERR_NOT_FOUND : CLATTN_ERR_DB,
        "%s database %s: %s", err == ENOENT ? "no" : "cannot reach", db->path,
        strerror(err));
    goto done;
  }
  if (!S_ISREG(sb.st_mode)) {
    rc = clattn__db_fail(db, CLATTN_ERR_DB, "database %s is not a regular file",
                         db->path);
    goto done;
  }
  CLATTN_TRY(open_readonly(db, 0));
  rc = check_version_readonly(db);
  if (rc != CLATTN_OK && db->h != NULL) {
    /* A WAL file in a directory this process cannot write, whose -shm
     * file is not there: SQLite can read it only as immutable (no locks),
     * which is safe there since no writer can create the -wal either. */
    const int code = sqlite3_extended_errcode(db->h) & 0xff;
    if (code != SQLITE_READONLY && code != SQLITE_CANTOPEN)
      goto done;
    sqlite3_close(db->h);
    db->h = NULL;
    CLATTN_TRY(open_readonly(db, 1));
    CLATTN_TRY(check_version_readonly(db));
  } else if (rc != CLATTN_OK) {
    goto done;
  }
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

/* ------------------------------------------------------------- columns */

void clattn__db_iso_now(char *buf, size_t cap) {
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm) == NULL ||
      strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    snprintf(buf, cap, "unknown");
}

int clattn__db_bind_col(sqlite3_stmt *st, int i, const col *c,
                        const void *obj) {
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
    return sqlite3_bind_int64(st, i + 1,
                              (sqlite3_int64) *
                                  (const unsigned long long *)(const void *)f);
  case C_SIZE:
    return sqlite3_bind_int64(
        st, i + 1, (sqlite3_int64) * (const size_t *)(const void *)f);
  case C_REAL:
    return sqlite3_bind_double(st, i + 1, *(const double *)(const void *)f);
  }
  return SQLITE_MISUSE;
}

void clattn__db_read_col(sqlite3_stmt *st, int i, const col *c, void *obj) {
  char *f = (char *)obj + c->off;
  switch (c->type) {
  case C_TEXT: {
    const unsigned char *s = sqlite3_column_text(st, i);
    size_t n = s ? strlen((const char *)s) : 0;
    if (n > c->size - 1) /* a longer text is cut between characters */
      n = clattn__utf8_cut((const char *)s, c->size - 1);
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

clattn_status clattn__db_select_rows(clattn_db *db, const col *cols, int ncols,
                                     const char *tail,
                                     const char *const *filters, int nfilters,
                                     size_t row_size, const char *what,
                                     void **out, int *n) {
  clattn_status rc = CLATTN_OK;
  sqlite3_stmt *st = NULL;
  char sql[2048] = "SELECT ", msg[96];
  unsigned char *rows = NULL;
  int count = 0, cap = 0, r;
  *out = NULL;
  *n = 0;
  for (int i = 0; i < ncols; i++)
    clattn__appendf(sql, sizeof sql, i ? ", %s" : "%s", cols[i].name);
  if (clattn__appendf(sql, sizeof sql, " %s", tail) != 0)
    return CLATTN_ERR_MISUSE; /* cannot happen: the buffer fits the tables */
  snprintf(msg, sizeof msg, "preparing the query of the %s", what);
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK)
    return clattn__db_sql_fail(db, msg);
  for (int i = 0; i < nfilters; i++) {
    r = filters[i]
            ? sqlite3_bind_text(st, i + 1, filters[i], -1, SQLITE_TRANSIENT)
            : sqlite3_bind_null(st, i + 1);
    if (r != SQLITE_OK) {
      snprintf(msg, sizeof msg, "binding a filter of the %s", what);
      rc = clattn__db_sql_fail(db, msg);
      goto done;
    }
  }
  while ((r = sqlite3_step(st)) == SQLITE_ROW) {
    if (count == cap) {
      int nc = cap ? 2 * cap : 16;
      unsigned char *g = realloc(rows, (size_t)nc * row_size);
      if (g == NULL) {
        rc = clattn__db_fail(db, CLATTN_ERR_NOMEM, "out of host memory");
        goto done;
      }
      rows = g;
      cap = nc;
    }
    void *row = rows + (size_t)count * row_size;
    memset(row, 0, row_size);
    for (int i = 0; i < ncols; i++)
      clattn__db_read_col(st, i, &cols[i], row);
    count++;
  }
  if (r != SQLITE_DONE) {
    snprintf(msg, sizeof msg, "reading the %s", what);
    rc = clattn__db_sql_fail(db, msg);
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

clattn_status clattn__db_list_args(clattn_db *db, size_t entry_size, void *out,
                                   const int *n) {
  clattn_status rc = clattn__db_check(db);
  if (rc != CLATTN_OK)
    return rc;
  if (out == NULL || n == NULL || entry_size < sizeof(size_t))
    return clattn__db_fail(db, CLATTN_ERR_INVALID_ARG,
                           "out or n is NULL, or entry_size below "
                           "sizeof(size_t)");
  *(void **)out = NULL;
  return CLATTN_OK;
}

clattn_status clattn__db_rows_out(clattn_db *db, clattn_status rc, void *rows,
                                  size_t own_size, int n, size_t entry_size,
                                  void **out) {
  *out = NULL;
  if (rc == CLATTN_OK && n > 0) { /* an empty list is NULL */
    *out = clattn__rows_out(rows, own_size, n, entry_size);
    if (*out == NULL)
      rc = clattn__db_fail(db, CLATTN_ERR_NOMEM, "out of memory");
  }
  free(rows);
  return rc;
}

clattn_status clattn__db_row_in(clattn_db *db, void *own, size_t own_size,
                                const void *caller, const char *type) {
  char why[128];
  clattn_status rc = clattn__db_check(db);
  if (rc != CLATTN_OK)
    return rc;
  if (caller == NULL)
    return clattn__db_fail(db, CLATTN_ERR_INVALID_ARG, "the %s is NULL", type);
  if ((rc = clattn__struct_in(own, own_size, caller, type, why, sizeof why)))
    return clattn__db_fail(db, rc, "%s", why);
  return CLATTN_OK;
}
