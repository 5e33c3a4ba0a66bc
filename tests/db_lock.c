/* db_lock.c - see db_lock.h. */
#include "db_lock.h"

#include <criterion/criterion.h>
#include <sqlite3.h>
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

int tdb_user_version(const char *path) {
  sqlite3 *h = NULL;
  sqlite3_stmt *st = NULL;
  int v = -1;
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  if (sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &st, NULL) ==
          SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(h);
  return v;
}
