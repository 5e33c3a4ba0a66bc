/* db_lock.c - see db_lock.h. */
#include "db_lock.h"
#include "clattn_tools.h"

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t tdb_hold_lock(const char *path, int wal, int *release) {
  int ready[2], gate[2];
  cr_assert_eq(pipe(ready), 0);
  cr_assert_eq(pipe(gate), 0);
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    sqlite3 *h = NULL;
    char c;
    close(ready[0]);
    close(gate[1]);
    if (sqlite3_open(path, &h) != SQLITE_OK ||
        sqlite3_exec(h,
                     wal ? "BEGIN IMMEDIATE; DELETE FROM tuning;"
                         : "PRAGMA journal_mode=DELETE; BEGIN EXCLUSIVE;"
                           " DELETE FROM tuning;",
                     NULL, NULL, NULL) != SQLITE_OK)
      _exit(1);
    if (write(ready[1], "x", 1) != 1)
      _exit(2);
    if (read(gate[0], &c, 1) < 0) /* EOF: the parent is done */
      _exit(3);
    sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(h);
    _exit(0);
  }
  close(ready[1]);
  close(gate[0]);
  char c;
  cr_assert_eq(read(ready[0], &c, 1), 1, "the lock holder failed");
  close(ready[0]);
  *release = gate[1];
  return pid;
}

void tdb_release_lock(pid_t pid, int release) {
  int status = 0;
  close(release);
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "holder status %d",
            status);
}

static long long pragma_of(const char *path, const char *sql) {
  sqlite3 *h = NULL;
  sqlite3_stmt *st = NULL;
  long long v = -1;
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(h);
  return v;
}

int tdb_user_version(const char *path) {
  return (int)pragma_of(path, "PRAGMA user_version");
}

unsigned tdb_application_id(const char *path) {
  return (unsigned)pragma_of(path, "PRAGMA application_id");
}

static void unlink_all(const char *path);

int tdb_current_version(const char *path) {
  clattn_db *db = NULL;
  unlink_all(path);
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK, "%s",
               clattn_db_errmsg(NULL));
  clattn_db_close(db);
  const int v = tdb_user_version(path);
  unlink_all(path);
  cr_assert_gt(v, 7, "a new database has schema version %d", v);
  return v;
}

static void unlink_all(const char *path) {
  static const char *const side[] = {"", "-wal", "-shm", "-journal"};
  char p[1024];
  for (size_t i = 0; i < sizeof side / sizeof side[0]; i++) {
    snprintf(p, sizeof p, "%s%s", path, side[i]);
    unlink(p);
  }
}

void tdb_exec_new(const char *path, const char *sql) {
  unlink_all(path);
  tdb_exec(path, sql);
}

void tdb_exec(const char *path, const char *sql) {
  sqlite3 *h = NULL;
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK, "%s: %s",
               path, sqlite3_errmsg(h));
  cr_assert_eq(sqlite3_close(h), SQLITE_OK);
}

void tdb_from_sql(const char *path, const char *sql_file, int wal) {
  size_t n = 0;
  unsigned char *sql = tdb_bytes(sql_file, &n);
  char *text = realloc(sql, n + 1);
  cr_assert_not_null(text);
  text[n] = '\0';
  tdb_exec_new(path, text);
  free(text);
  if (wal)
    tdb_exec(path, "PRAGMA journal_mode=WAL");
}

unsigned char *tdb_bytes(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot read %s", path);
  unsigned char *buf = NULL;
  size_t cap = 0, len = 0, got;
  do {
    if (len == cap) {
      cap = cap ? 2 * cap : 1 << 16;
      buf = realloc(buf, cap);
      cr_assert_not_null(buf);
    }
    got = fread(buf + len, 1, cap - len, f);
    len += got;
  } while (got > 0);
  fclose(f);
  *n = len;
  return buf;
}

int tdb_same_bytes(const char *path, const unsigned char *want, size_t n) {
  size_t m = 0;
  unsigned char *got = tdb_bytes(path, &m);
  const int same = m == n && memcmp(got, want, n) == 0;
  free(got);
  return same;
}

int tdb_no_side_files(const char *path) {
  static const char *const side[] = {"-wal", "-shm", "-journal"};
  char p[1024];
  struct stat sb;
  for (size_t i = 0; i < sizeof side / sizeof side[0]; i++) {
    snprintf(p, sizeof p, "%s%s", path, side[i]);
    if (stat(p, &sb) == 0)
      return 0;
  }
  return 1;
}
