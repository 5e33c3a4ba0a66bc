/* test_db_own.c - a database is clattn's own before anything is written to
 * it: a new file carries clattn's application id; a file of another
 * application (another id, or no id and tables that are not clattn's, or
 * not SQLite at all) is refused by both opens with "not a clattn database"
 * naming it, and left byte for byte as it was; a file of an older clattn
 * (no id, clattn's tables of its version: tests/data/clattn_schema7.sql)
 * migrates, keeps its rows and gets the id.  A directory that cannot be
 * written is named with the real cause.  Public API and SQLite only, no
 * device. */
#define _GNU_SOURCE /* unshare */
#include "clattn_tools.h"
#include "db_lock.h"
#include "tmpdir.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmp_dir[256];

static void tmp_setup(void) { tt_mkdtemp(tmp_dir, sizeof tmp_dir, "dbown"); }

static void tmp_teardown(void) { tt_rm_rf(tmp_dir); }

static void tmp_path(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", tmp_dir, name);
}

TestSuite(db_own, .init = tmp_setup, .fini = tmp_teardown);

static const char schema7_sql[] = CLATTN_TEST_DATA "/clattn_schema7.sql";

/* Both opens refuse path as "not a clattn database" naming it; the file
 * keeps every byte and gets no side file. */
static void expect_refused(const char *path, const char *what) {
  size_t n = 0;
  unsigned char *before = tdb_bytes(path, &n);
  clattn_db *db = (clattn_db *)1;
  cr_expect_eq(clattn_db_open(path, &db), CLATTN_ERR_DB, "%s: opened", what);
  cr_expect_null(db, "%s", what);
  const char *msg = clattn_db_errmsg(NULL);
  cr_expect(strstr(msg, "not a clattn database") && strstr(msg, path), "%s: %s",
            what, msg);
  cr_expect(tdb_same_bytes(path, before, n), "%s: the file changed", what);
  db = (clattn_db *)1;
  cr_expect_eq(clattn_db_open_readonly(path, &db), CLATTN_ERR_DB,
               "%s: opened read-only", what);
  msg = clattn_db_errmsg(NULL);
  cr_expect(strstr(msg, "not a clattn database") && strstr(msg, path),
            "%s (read-only): %s", what, msg);
  cr_expect(tdb_same_bytes(path, before, n), "%s: the file changed", what);
  cr_expect(tdb_no_side_files(path), "%s: a -wal, -shm or -journal was left",
            what);
  free(before);
}

/* The files (another application's tables at user_version 0 and
 * 7, which an import had taken over), the same in WAL mode, clattn's own
 * schema-7 tables under another application id, another object beside
 * clattn's tables, a version no clattn before the id wrote, text. */
Test(db_own, foreign_files_are_refused_unchanged) {
  char path[512];
  tmp_path(path, sizeof path, "foreign.db");
  tdb_exec_new(path, "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);"
                     "INSERT INTO notes (text) VALUES ('mine');");
  expect_refused(path, "another application's table, user_version 0");
  tdb_exec(path, "PRAGMA user_version = 7;");
  expect_refused(path, "another application's table, user_version 7");
  tdb_exec(path, "PRAGMA journal_mode=WAL;");
  expect_refused(path, "another application's table, WAL mode");

  tdb_from_sql(path, schema7_sql, 0);
  tdb_exec(path, "PRAGMA application_id = 305419896;"); /* 0x12345678 */
  cr_assert_eq(tdb_application_id(path), 0x12345678u);
  expect_refused(path, "clattn's tables under another application id");

  tdb_from_sql(path, schema7_sql, 0);
  tdb_exec(path, "CREATE TABLE notes (x);");
  expect_refused(path, "clattn's schema-7 tables and another table");
  tdb_from_sql(path, schema7_sql, 0);
  tdb_exec(path, "CREATE VIEW recent AS SELECT * FROM tuning;");
  expect_refused(path, "clattn's schema-7 tables and a view");
  tdb_from_sql(path, schema7_sql, 0);
  tdb_exec(path, "PRAGMA user_version = 3;");
  expect_refused(path, "schema-7 tables under version 3");
  tdb_exec_new(path, "PRAGMA user_version = 9;");
  expect_refused(path, "version 9 without the id");

  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("{\"not\": \"a database\"}\n", f);
  fclose(f);
  expect_refused(path, "a text file");
}

/* A file of an older clattn (no application id, schema 7's tables):
 * read as it is, then migrated by a writer with its rows, the id set. */
Test(db_own, older_clattn_file_migrates_and_gets_the_id) {
  char path[512];
  tmp_path(path, sizeof path, "current.db");
  const int current = tdb_current_version(path);
  tmp_path(path, sizeof path, "old.db");
  for (int wal = 0; wal < 2; wal++) {
    tdb_from_sql(path, schema7_sql, wal);
    cr_assert_eq(tdb_user_version(path), 7);
    cr_assert_eq(tdb_application_id(path), 0u);
    clattn_db *db = NULL;
    cr_assert_eq(clattn_db_open_readonly(path, &db), CLATTN_OK, "%s",
                 clattn_db_errmsg(NULL));
    clattn_db_close(db);
    cr_expect_eq(tdb_application_id(path), 0u, "a reader wrote the id");
    cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK, "%s",
                 clattn_db_errmsg(NULL));
    clattn_tune_entry *rows = NULL;
    int n = 0;
    cr_assert_eq(
        clattn_db_list_tune(db, "oldfp", NULL, NULL, sizeof *rows, &rows, &n),
        CLATTN_OK, "%s", clattn_db_errmsg(db));
    cr_expect_eq(n, 1);
    if (n == 1)
      cr_expect_eq(rows[0].median_s, 0.00125);
    clattn_free(rows);
    clattn_profile p = {.size = sizeof p};
    cr_expect_eq(clattn_db_get_profile(db, "oldfp", &p), CLATTN_OK);
    cr_expect_str_eq(p.name, "Old GPU");
    clattn_db_close(db);
    cr_expect_eq(tdb_user_version(path), current, "journal mode %d", wal);
    cr_expect_eq(tdb_application_id(path), TDB_CLATTN_APPLICATION_ID,
                 "journal mode %d: id %#x", wal, tdb_application_id(path));
  }
}

/* A new file is clattn's from its creation; one emptied by another tool
 * (no table, no id) is claimed. */
Test(db_own, new_file_carries_the_id) {
  char path[512];
  tmp_path(path, sizeof path, "new.db");
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK, "%s",
               clattn_db_errmsg(NULL));
  clattn_db_close(db);
  cr_expect_eq(tdb_application_id(path), TDB_CLATTN_APPLICATION_ID);
  cr_expect_gt(tdb_user_version(path), 7);
  /* opened again: nothing to write, still clattn's */
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK, "%s",
               clattn_db_errmsg(NULL));
  clattn_db_close(db);
  tmp_path(path, sizeof path, "empty.db");
  int fd = open(path, O_CREAT | O_WRONLY, 0644);
  cr_assert_geq(fd, 0);
  close(fd);
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK, "%s",
               clattn_db_errmsg(NULL));
  clattn_db_close(db);
  cr_expect_eq(tdb_application_id(path), TDB_CLATTN_APPLICATION_ID);
}

/* The writer's open in a directory it may not write: the directory named
 * with "Permission denied", not SQLite's "unable to open database file".
 * Root writes anywhere: skipped. */
Test(db_own, unwritable_directory_is_named) {
  if (geteuid() == 0)
    cr_skip_test("root writes into a directory of mode 0555");
  char dir[512], path[600];
  tmp_path(dir, sizeof dir, "locked");
  cr_assert_eq(mkdir(dir, 0555), 0);
  snprintf(path, sizeof path, "%s/t.db", dir);
  clattn_db *db = NULL;
  cr_expect_eq(clattn_db_open(path, &db), CLATTN_ERR_DB);
  const char *msg = clattn_db_errmsg(NULL);
  cr_expect(strstr(msg, "Permission denied") && strstr(msg, dir) &&
                !strstr(msg, "unable to open"),
            "%s", msg);
  chmod(dir, 0755);
}

/* In a child with a mount namespace of its own (and a user namespace when
 * not root): dir bind-mounted read-only.  Exit status: 0 when the opens
 * gave the expected messages, 100 when the namespace or the mount is not
 * permitted here, else the failed check. */
static int read_only_mount_checks(const char *dir, const char *existing) {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (unshare(uid == 0 ? CLONE_NEWNS : CLONE_NEWUSER | CLONE_NEWNS) != 0)
    return 100;
  if (uid != 0) {
    char map[64];
    int fd = open("/proc/self/setgroups", O_WRONLY);
    if (fd >= 0) {
      if (write(fd, "deny", 4) != 4)
        return 100;
      close(fd);
    }
    snprintf(map, sizeof map, "0 %d 1", (int)uid);
    fd = open("/proc/self/uid_map", O_WRONLY);
    if (fd < 0 || write(fd, map, strlen(map)) < 0)
      return 100;
    close(fd);
    snprintf(map, sizeof map, "0 %d 1", (int)gid);
    fd = open("/proc/self/gid_map", O_WRONLY);
    if (fd < 0 || write(fd, map, strlen(map)) < 0)
      return 100;
    close(fd);
  }
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount(dir, dir, NULL, MS_BIND, NULL) != 0 ||
      mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) != 0)
    return 100;
  char path[700];
  snprintf(path, sizeof path, "%s/new.db", dir);
  const char *const paths[] = {path, existing};
  for (int i = 0; i < 2; i++) {
    clattn_db *db = NULL;
    if (clattn_db_open(paths[i], &db) != CLATTN_ERR_DB)
      return 1 + i;
    const char *msg = clattn_db_errmsg(NULL);
    if (!strstr(msg, "Read-only file system") || !strstr(msg, dir) ||
        strstr(msg, "unable to open")) {
      fprintf(stderr, "%s: %s\n", paths[i], msg);
      return 3 + i;
    }
  }
  return 0;
}

/* A read-only filesystem: a new file and an existing database there, each
 * named with "Read-only file system".  Skipped where this process may not
 * make a mount namespace. */
Test(db_own, read_only_filesystem_is_named) {
  char dir[512], existing[600];
  tmp_path(dir, sizeof dir, "rofs");
  cr_assert_eq(mkdir(dir, 0755), 0);
  snprintf(existing, sizeof existing, "%s/old.db", dir);
  tdb_from_sql(existing, schema7_sql, 0);
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0)
    _exit(read_only_mount_checks(dir, existing));
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status), "the child died: %d", status);
  if (WEXITSTATUS(status) == 100)
    cr_skip_test("no mount namespace here (unshare or mount refused)");
  cr_expect_eq(WEXITSTATUS(status), 0, "check %d failed (message above)",
               WEXITSTATUS(status));
  cr_expect_eq(tdb_user_version(existing), 7, "the file was migrated");
}
