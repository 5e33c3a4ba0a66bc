/* db.c - the SQLite database of probe results (and, through later
 * migrations, model checks and tuning entries): opening it, its schema and
 * migrations, errors, transactions and the column mapping; the rows are
 * stored by db_profile.c and db_tune.c.
 *
 * Concurrency: WAL journal, a 10 s busy timeout, and every write is one
 * statement (its own transaction), so several processes can share a file;
 * the JSON import (json_import.c) merges a whole file in one transaction
 * through clattn__db_begin / commit / rollback.
 * Schema (schema.c): PRAGMA user_version is the number of migration steps
 * applied, PRAGMA application_id marks the file as clattn's; a file that is
 * not clattn's is refused before anything is written to it, and opening a
 * database written by a newer library (more steps than this one knows)
 * fails with CLATTN_ERR_DB.
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
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define BUSY_TIMEOUT_MS 10000
/* Readers (clattn_db_open_readonly) wait at most this long for a lock:
 * WAL readers are not blocked by a writer, so a lock they meet is a
 * rollback-journal writer or a recovery, and a context's first call should
 * not wait for it (the defaults apply, and explain says why). */
#define READ_BUSY_TIMEOUT_MS 200

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

/* Why path (a database file, which may not exist yet) cannot be written:
 * an errno (EROFS, EACCES...) with the path it applies to in where, else
 * 0.  The directory matters too: SQLite creates its journal there. */
static int unwritable(const char *path, char *where, size_t cap) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash == NULL)
    snprintf(dir, sizeof dir, ".");
  else if (slash == dir)
    dir[1] = '\0';
  else
    *slash = '\0';
  struct statvfs vfs;
  if (statvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) {
    snprintf(where, cap, "%s", dir);
    return EROFS;
  }
  if (access(path, F_OK) == 0 && access(path, W_OK) != 0) {
    snprintf(where, cap, "%s", path);
    return errno;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    snprintf(where, cap, "%s", dir);
    return errno;
  }
  return 0;
}

clattn_status clattn__db_write_fail(clattn_db *db, const char *what) {
  const int code = db->h ? sqlite3_extended_errcode(db->h) & 0xff : 0;
  char where[4096];
  int err = 0;
  if (db->h == NULL || code == SQLITE_CANTOPEN || code == SQLITE_READONLY ||
      code == SQLITE_PERM || code == SQLITE_IOERR)
    err = unwritable(db->path, where, sizeof where);
  if (err == 0)
    return clattn__db_sql_fail(db, what);
  if (!strcmp(where, db->path))
    return clattn__db_fail(db, CLATTN_ERR_DB, "cannot write database %s: %s",
                           db->path, strerror(err));
  return clattn__db_fail(db, CLATTN_ERR_DB,
                         "cannot write database %s: directory %s: %s", db->path,
                         where, strerror(err));
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

clattn_status clattn__db_exec(clattn_db *db, const char *sql,
                              const char *what) {
  if (sqlite3_exec(db->h, sql, NULL, NULL, NULL) != SQLITE_OK)
    return clattn__db_write_fail(db, what);
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
      return clattn__db_write_fail(db, "setting WAL mode");
    sqlite3_sleep(5);
  }
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

/* A path that exists must be a regular file: SQLite would block on a FIFO
 * and a device is nobody's database. */
static clattn_status check_regular(clattn_db *db) {
  struct stat sb;
  if (stat(db->path, &sb) == 0 && !S_ISREG(sb.st_mode))
    return clattn__db_fail(db, CLATTN_ERR_DB,
                           "database %s is not a regular file", db->path);
  return CLATTN_OK;
}

clattn_status clattn_db_open(const char *path, clattn_db **out) {
  clattn_status rc = CLATTN_OK;
  clattn_db *db = new_handle(path, out, &rc);
  if (db == NULL)
    return rc;
  CLATTN_TRY(make_parent(db));
  CLATTN_TRY(check_regular(db));
  if (sqlite3_open_v2(db->path, &db->h,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      NULL) != SQLITE_OK) {
    rc = clattn__db_write_fail(db, "cannot open");
    goto done;
  }
  if (sqlite3_busy_timeout(db->h, BUSY_TIMEOUT_MS) != SQLITE_OK) {
    rc = clattn__db_sql_fail(db, "setting the busy timeout");
    goto done;
  }
  /* the file is recognised as clattn's and migrated before WAL mode is
   * set, so that a foreign file and a failed migration leave the file
   * byte for byte as it was */
  CLATTN_TRY(clattn__db_migrate(db));
  db->version = clattn__db_schema_version();
  CLATTN_TRY(set_wal(db));
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
  clattn__schema s;
  const int r = clattn__db_read_schema(db, &s);
  if (r != SQLITE_OK)
    return read_fail(db, r, "reading the schema version");
  const int version = s.version, known = clattn__db_schema_version();
  if (s.foreign[0])
    return clattn__db_refuse_foreign(db, &s);
  if (version > known)
    return clattn__db_fail(db, CLATTN_ERR_DB,
                           "database %s has schema version %d, newer than "
                           "this library's (clattn %s, versions up to %d)",
                           db->path, version, clattn_version(), known);
  if (version < MIN_READ_VERSION)
    return clattn__db_fail(db, CLATTN_ERR_DB,
                           "database %s has schema version %d, older than "
                           "the %d this library reads: a read-only open does "
                           "not migrate (open it once for writing, e.g. "
                           "clattn db import)",
                           db->path, version, MIN_READ_VERSION);
  db->version = version;
  return CLATTN_OK;
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

/* Another application's file is refused from an immutable read of its
 * main file (no lock taken, no -wal or -shm created beside it); the check
 * after the real open decides for every other file, so an error here is
 * left to it. */
static clattn_status refuse_foreign_unopened(clattn_db *db) {
  clattn__schema s;
  int foreign = 0;
  if (open_readonly(db, 1) == CLATTN_OK &&
      clattn__db_read_schema(db, &s) == SQLITE_OK)
    foreign = s.foreign[0] != '\0';
  sqlite3_close(db->h);
  db->h = NULL;
  return foreign ? clattn__db_refuse_foreign(db, &s) : CLATTN_OK;
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
  CLATTN_TRY(refuse_foreign_unopened(db));
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
  return clattn__db_exec(db, "BEGIN IMMEDIATE", "starting a transaction");
}

clattn_status clattn__db_commit(clattn_db *db) {
  return clattn__db_exec(db, "COMMIT", "committing a transaction");
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
