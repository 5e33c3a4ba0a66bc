/* test_db_read.c - how a context reads the tuning database at its first
 * call: read-only (nothing created, no write lock), briefly when another
 * connection holds a lock, only its device's rows (and its vendor and
 * architecture's), rows that are not valid skipped with the reason in
 * the explanation, and rows under a family's former name read as the
 * family's.  Needs a device (the context's fingerprint); the
 * database is written with the public API and with SQLite directly. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "db_lock.h"
#include "tmpdir.h"
#include "util.h"

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmp_dir[256];

static void tmp_setup(void) { tt_mkdtemp(tmp_dir, sizeof tmp_dir, "dbread"); }

static void tmp_teardown(void) { tt_rm_rf(tmp_dir); }

TestSuite(db_read, .init = tmp_setup, .fini = tmp_teardown);

/* The prefill call every test explains, and its shape class. */
static const clattn_attn_desc desc = {sizeof(clattn_attn_desc),
                                      1,
                                      50,
                                      50,
                                      4,
                                      2,
                                      32,
                                      32,
                                      CLATTN_F32,
                                      CLATTN_BSHD,
                                      CLATTN_BSHD,
                                      0.0f,
                                      1,
                                      NULL};
#define CLS "f32 k32 v32 g2 bh2 n64 m64 c1"

/* A valid ok prefill row of device p (fingerprint fp instead when not
 * NULL) for CLS. */
static clattn_tune_entry row_of(const clattn_profile *p, const char *fp,
                                const char *params, double t) {
  clattn_tune_entry e = {.size = sizeof(clattn_tune_entry)};
  snprintf(e.fingerprint, sizeof e.fingerprint, "%s", fp ? fp : p->fingerprint);
  snprintf(e.device, sizeof e.device, "%s", fp ? "a sibling" : p->name);
  snprintf(e.vendor, sizeof e.vendor, "%s", p->vendor);
  snprintf(e.arch, sizeof e.arch, "%s", p->arch);
  snprintf(e.kernel, sizeof e.kernel, "prefill");
  snprintf(e.shape_class, sizeof e.shape_class, CLS);
  snprintf(e.params, sizeof e.params, "%s", params);
  snprintf(e.status, sizeof e.status, "ok");
  snprintf(e.strategy, sizeof e.strategy, "test");
  e.median_s = t;
  e.tune_method = clattn_tune_method("prefill");
  return e;
}

/* A database at path with this device's best row (rows=2 keys=16). */
static void make_db(const char *path, const clattn_profile *p) {
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK, "%s",
               clattn_db_errmsg(NULL));
  clattn_tune_entry e =
      row_of(p, NULL, "variant=1 rows=2 keys=16 wg=0 splits=0", 1e-3);
  cr_assert_eq(clattn_db_put_tune(db, &e), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  clattn_db_close(db);
}

static clattn_ctx *ctx_with_db(const char *path) {
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  o.tuning_db = path;
  clattn_ctx *ctx = NULL;
  cr_assert_eq(clattn_ctx_create(&o, &ctx), CLATTN_OK, "%s",
               clattn_ctx_errmsg(NULL));
  return ctx;
}

/* The first explain of a new context on path (the tuning rows are read
 * then). */
static clattn_choice explain_new(const char *path) {
  clattn_ctx *ctx = ctx_with_db(path);
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  cr_assert_eq(clattn_explain_attention(ctx, &desc, &ch), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  clattn_ctx_destroy(ctx);
  return ch;
}

static clattn_profile reported(void) {
  clattn_ctx *ctx = tu_ctx();
  clattn_profile p = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_profile_reported(ctx, &p), CLATTN_OK);
  clattn_ctx_destroy(ctx);
  return p;
}

/* Another process's exclusive lock (rollback journal): the first call of a
 * new context returns while the lock is still held (it is released only
 * after the call), uses the defaults, says the database was busy, and uses
 * the tuning once the lock is gone. */
Test(db_read, exclusive_lock_is_not_waited_for) {
  const clattn_profile p = reported();
  char path[512];
  snprintf(path, sizeof path, "%s/locked.db", tmp_dir);
  make_db(path, &p);
  int release;
  pid_t pid = tdb_hold_lock(path, 0, &release);
  clattn_choice ch = explain_new(path);
  tdb_release_lock(pid, release);
  cr_expect_eq(ch.source, CLATTN_CHOICE_DEFAULT, "%s", ch.why);
  cr_expect(strstr(ch.why, "busy") != NULL, "explain does not say busy: %s",
            ch.why);
  ch = explain_new(path);
  cr_expect_eq(ch.source, CLATTN_CHOICE_TUNED, "after the lock: %s", ch.why);
}

/* A context that met the lock looks again a second later: the tuning is
 * not dropped for the context's life. */
Test(db_read, busy_context_looks_again) {
  const clattn_profile p = reported();
  char path[512];
  snprintf(path, sizeof path, "%s/again.db", tmp_dir);
  make_db(path, &p);
  clattn_ctx *ctx = ctx_with_db(path);
  int release;
  pid_t pid = tdb_hold_lock(path, 0, &release);
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  cr_assert_eq(clattn_explain_attention(ctx, &desc, &ch), CLATTN_OK);
  tdb_release_lock(pid, release);
  cr_expect_eq(ch.source, CLATTN_CHOICE_DEFAULT, "%s", ch.why);
  cr_assert_eq(clattn_explain_attention(ctx, &desc, &ch), CLATTN_OK);
  cr_expect_eq(ch.source, CLATTN_CHOICE_DEFAULT, "looked again at once: %s",
               ch.why);
  usleep(1100 * 1000);
  cr_assert_eq(clattn_explain_attention(ctx, &desc, &ch), CLATTN_OK);
  cr_expect_eq(ch.source, CLATTN_CHOICE_TUNED, "%s", ch.why);
  clattn_ctx_destroy(ctx);
}

/* Another process's write transaction in WAL mode (an import, a tuner):
 * readers are not blocked (the call returns while the transaction is
 * open) and read the committed rows, not the busy defaults. */
Test(db_read, wal_writer_does_not_block) {
  const clattn_profile p = reported();
  char path[512];
  snprintf(path, sizeof path, "%s/wal.db", tmp_dir);
  make_db(path, &p);
  int release;
  pid_t pid = tdb_hold_lock(path, 1, &release);
  clattn_choice ch = explain_new(path);
  tdb_release_lock(pid, release);
  cr_expect_eq(ch.source, CLATTN_CHOICE_TUNED, "%s", ch.why);
  cr_expect(strstr(ch.resolved, " rows=2 ") != NULL, "%s", ch.resolved);
}

/* A database path whose directory does not exist: nothing is created, and
 * explain says there is no database. */
Test(db_read, missing_database_creates_nothing) {
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/no-such-dir", tmp_dir);
  snprintf(path, sizeof path, "%s/x.db", dir);
  clattn_choice ch = explain_new(path);
  struct stat sb;
  cr_expect_neq(stat(dir, &sb), 0, "the directory was created");
  cr_expect_eq(ch.source, CLATTN_CHOICE_DEFAULT);
  cr_expect(strstr(ch.why, "no tuning database at") != NULL, "%s", ch.why);
  /* an existing directory: no file either */
  snprintf(path, sizeof path, "%s/y.db", tmp_dir);
  ch = explain_new(path);
  cr_expect_neq(stat(path, &sb), 0, "the database file was created");
}

/* A database with a schema newer than the library's is not used, and
 * explain says why. */
Test(db_read, newer_schema_is_explained) {
  const clattn_profile p = reported();
  char path[512];
  snprintf(path, sizeof path, "%s/newer.db", tmp_dir);
  make_db(path, &p);
  sqlite3 *h = NULL;
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(h, "PRAGMA user_version = 999", NULL, NULL, NULL),
               SQLITE_OK);
  sqlite3_close(h);
  clattn_choice ch = explain_new(path);
  cr_expect_eq(ch.source, CLATTN_CHOICE_DEFAULT);
  cr_expect(strstr(ch.why, "schema version 999, newer") != NULL, "%s", ch.why);
}

/* A row written with SQL directly that is not valid (a negative median,
 * faster than any real row) is skipped, and explain names it and why; the
 * valid row is used. */
Test(db_read, invalid_row_is_skipped_and_explained) {
  const clattn_profile p = reported();
  char path[512], sql[2048];
  snprintf(path, sizeof path, "%s/bad.db", tmp_dir);
  make_db(path, &p);
  sqlite3 *h = NULL;
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  snprintf(sql, sizeof sql,
           "INSERT INTO tuning (fingerprint, device, vendor, arch, driver,"
           " kernel, shape_class, params, status, median_s, spread,"
           " predicted_s, max_err, strategy, message, library_version,"
           " updated, tune_method) VALUES ('%s', 'd', '', '', '', 'prefill',"
           " '" CLS "', 'variant=1 rows=8 keys=32 wg=0 splits=0', 'ok', -5,"
           " 0, 0, 0, 'sql', '', '0', '2025-01-01T00:00:00Z', %d)",
           p.fingerprint, clattn_tune_method("prefill"));
  cr_assert_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK, "%s",
               sqlite3_errmsg(h));
  sqlite3_close(h);
  clattn_choice ch = explain_new(path);
  cr_expect_eq(ch.source, CLATTN_CHOICE_TUNED, "%s", ch.why);
  cr_expect_eq(tu_params(ch.resolved).rows, 2, "the invalid row was used: %s",
               ch.why);
  cr_expect(strstr(ch.why, "1 invalid skipped") != NULL &&
                strstr(ch.why, "\"median_s\": -5 is not a finite time > 0") !=
                    NULL,
            "%s", ch.why);
}

/* 100,000 rows of other devices and a few usable ones: the first call
 * loads only the usable rows (this device's and its vendor and
 * architecture's), as its count of entries says. */
Test(db_read, only_usable_rows_are_loaded) {
  const clattn_profile p = reported();
  char path[512];
  snprintf(path, sizeof path, "%s/big.db", tmp_dir);
  make_db(path, &p);
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
  const char *const mine[] = {"variant=1 rows=4 keys=16 wg=0 splits=0",
                              "variant=1 rows=1 keys=32 wg=0 splits=0"};
  for (int i = 0; i < 2; i++) {
    clattn_tune_entry e = row_of(&p, NULL, mine[i], 2e-3 + 1e-3 * i);
    cr_assert_eq(clattn_db_put_tune(db, &e), CLATTN_OK, "%s",
                 clattn_db_errmsg(db));
  }
  clattn_tune_entry kin =
      row_of(&p, "0123456789abcdef0123456789abcdef", mine[0], 1e-4);
  if (p.arch[0])
    cr_assert_eq(clattn_db_put_tune(db, &kin), CLATTN_OK);
  clattn_db_close(db);
  sqlite3 *h = NULL;
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  cr_assert_eq(
      sqlite3_exec(
          h,
          "WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i"
          " WHERE n < 99999)"
          " INSERT INTO tuning (fingerprint, device, vendor, arch, driver,"
          " kernel, shape_class, params, status, median_s, spread,"
          " predicted_s, max_err, strategy, message, library_version,"
          " updated, tune_method) SELECT printf('other%05d', n / 100),"
          " 'other', 'OtherVendor', printf('arch%d', n % 7), '1', 'prefill',"
          " 'f32 k32 v32 g2 bh2 n64 m64 c1',"
          " printf('variant=1 rows=%d keys=16', n % 100), 'ok', 1e-3, 0, 0,"
          " 0, 'sql', '', '0', '2025-01-01T00:00:00Z', 1 FROM i",
          NULL, NULL, NULL),
      SQLITE_OK, "%s", sqlite3_errmsg(h));
  sqlite3_close(h);
  clattn_choice ch = explain_new(path);
  const int want = p.arch[0] ? 4 : 3;
  char note[64];
  snprintf(note, sizeof note, "%d tuning entries in", want);
  cr_expect(strstr(ch.why, note) != NULL, "want \"%s\": %s", note, ch.why);
  cr_expect_eq(ch.source, CLATTN_CHOICE_TUNED, "%s", ch.why);
}

/* A row stored under a family's former name is the family's: the
 * talking-heads append's rows ("talking-heads-append") are the append
 * family's, current (its tuning method) and chosen for their class. */
Test(db_read, former_family_name_is_read) {
  const clattn_profile p = reported();
  const char *shape = "batch=1 kv-seq=64 new=1 heads-k=2 heads-v=3 head-dim=16";
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  clattn_ctx *ctx = tu_ctx();
  cr_assert_eq(clattn_explain_shape(ctx, "append", shape, NULL, &ch), CLATTN_OK,
               "%s", clattn_ctx_errmsg(ctx));
  clattn_ctx_destroy(ctx);
  cr_expect_eq(ch.source, CLATTN_CHOICE_DEFAULT, "%s", ch.why);
  char path[512];
  snprintf(path, sizeof path, "%s/former.db", tmp_dir);
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK, "%s",
               clattn_db_errmsg(NULL));
  clattn_tune_entry e = row_of(&p, NULL, ch.resolved, 1e-5);
  snprintf(e.kernel, sizeof e.kernel, "talking-heads-append");
  snprintf(e.shape_class, sizeof e.shape_class, "%s", ch.shape_class);
  e.tune_method = clattn_tune_method("talking-heads-append");
  cr_expect_eq(e.tune_method, clattn_tune_method("append"));
  cr_assert_eq(clattn_db_put_tune(db, &e), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  clattn_db_close(db);
  for (int i = 0; i < 2; i++) {
    clattn_choice t = {.size = sizeof(clattn_choice)};
    ctx = ctx_with_db(path);
    cr_assert_eq(clattn_explain_shape(ctx,
                                      i ? "talking-heads-append" : "append",
                                      shape, NULL, &t),
                 CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
    clattn_ctx_destroy(ctx);
    cr_expect_eq(t.source, CLATTN_CHOICE_TUNED, "%s", t.why);
    cr_expect_str_eq(t.entry_class, ch.shape_class);
  }
}
