/* test_bench_db.c - the bench table of the database and the profile list:
 * exact round trip of every field, filters and order, the validation of
 * each field, listing through a read-only handle, and the migration of a
 * schema-7 file.  Public API and SQLite only, no device. */
#include "clattn_tools.h"
#include "db_lock.h"
#include "tmpdir.h"

#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmp_dir[256];

static void tmp_setup(void) { tt_mkdtemp(tmp_dir, sizeof tmp_dir, "benchdb"); }

static void tmp_teardown(void) { tt_rm_rf(tmp_dir); }

TestSuite(bench_db, .init = tmp_setup, .fini = tmp_teardown);

static void tmp_path(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", tmp_dir, name);
}

static clattn_db *open_db(const char *name) {
  char path[512];
  clattn_db *db = NULL;
  tmp_path(path, sizeof path, name);
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK, "clattn_db_open(%s): %s",
               path, clattn_db_errmsg(NULL));
  return db;
}

/* A row with every field set to a distinct value (doubles that need all
 * 17 digits, so that any rounding shows). */
static clattn_bench_entry row(const char *fp, const char *family,
                              const char *impl, const char *run, int k) {
  clattn_bench_entry e = {.size = sizeof(clattn_bench_entry)};
  snprintf(e.fingerprint, sizeof e.fingerprint, "%s", fp);
  snprintf(e.device, sizeof e.device, "Device %s \xc3\xa9", fp);
  snprintf(e.vendor, sizeof e.vendor, "Vendor %d", k);
  snprintf(e.arch, sizeof e.arch, "arch%d", k);
  snprintf(e.driver, sizeof e.driver, "driver %d.1", k);
  snprintf(e.family, sizeof e.family, "%s", family);
  snprintf(e.shape, sizeof e.shape, "batch=1 seq=%d heads=8", 100 + k);
  snprintf(e.shape_class, sizeof e.shape_class, "f32 k64 n%d", 128 + k);
  snprintf(e.impl, sizeof e.impl, "%s", impl);
  snprintf(e.params, sizeof e.params, "rows=%d", 1 + k);
  snprintf(e.params_source, sizeof e.params_source, "tuned");
  snprintf(e.params_device, sizeof e.params_device, "Other %d", k);
  e.median_s = 1.0 / (3.0 + k);
  e.spread = 0.1 / 7.0;
  e.flops = 1e9 / 3.0 + k;
  e.bytes = 2e8 / 7.0 + k;
  e.predicted_s = 1.0 / (11.0 + k);
  e.roof_s = 1.0 / (13.0 + k);
  snprintf(e.bound, sizeof e.bound, "memory");
  e.max_err = 1e-7 / 3.0;
  snprintf(e.run, sizeof e.run, "%s", run);
  snprintf(e.library_version, sizeof e.library_version, "0.9.%d", k);
  snprintf(e.updated, sizeof e.updated, "2025-03-0%dT12:00:00Z", 1 + k % 9);
  return e;
}

static void put_ok(clattn_db *db, const clattn_bench_entry *e) {
  cr_assert_eq(clattn_db_put_bench(db, e), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
}

static clattn_bench_entry *list(clattn_db *db, const char *fp,
                                const char *family, int *n) {
  clattn_bench_entry *rows = NULL;
  *n = -1;
  cr_assert_eq(clattn_db_list_bench(db, fp, family, sizeof *rows, &rows, n),
               CLATTN_OK, "%s", clattn_db_errmsg(db));
  return rows;
}

Test(bench_db, round_trip_is_exact) {
  clattn_db *db = open_db("rt.db");
  clattn_bench_entry e = row("fp1", "prefill", "clattn", "run A", 3);
  put_ok(db, &e);
  int n = 0;
  clattn_bench_entry *rows = list(db, NULL, NULL, &n);
  cr_assert_eq(n, 1);
  cr_expect_eq(memcmp(&rows[0], &e, sizeof e), 0,
               "every field reads back as stored");
  cr_expect_str_eq(rows[0].device, e.device);
  cr_expect_eq(rows[0].median_s, e.median_s);
  cr_expect_eq(rows[0].flops, e.flops);
  clattn_free(rows);
  /* The same key replaces the row. */
  e.median_s = 0.5;
  put_ok(db, &e);
  rows = list(db, NULL, NULL, &n);
  cr_assert_eq(n, 1);
  cr_expect_eq(rows[0].median_s, 0.5);
  clattn_free(rows);
  clattn_db_close(db);
}

Test(bench_db, defaults_date_version_and_run) {
  clattn_db *db = open_db("def.db");
  clattn_bench_entry e = row("fp1", "decode", "copy", "", 1);
  e.updated[0] = '\0';
  e.library_version[0] = '\0';
  put_ok(db, &e);
  int n = 0;
  clattn_bench_entry *rows = list(db, NULL, NULL, &n);
  cr_assert_eq(n, 1);
  cr_expect_str_eq(rows[0].library_version, clattn_version());
  cr_expect_eq(strlen(rows[0].updated), 20, "an ISO date: %s", rows[0].updated);
  cr_expect(strncmp(rows[0].run, rows[0].updated, 20) == 0 &&
                rows[0].run[20] == ' ',
            "the run is named after the date, host and pid: %s", rows[0].run);
  clattn_free(rows);
  clattn_db_close(db);
}

Test(bench_db, filters_and_order) {
  clattn_db *db = open_db("order.db");
  /* devices "Device a", "Device b"; within a device family, shape, impl,
   * then the newest date first */
  clattn_bench_entry rs[] = {
      row("b", "prefill", "clattn", "r1", 1),
      row("a", "prefill", "unfused", "r1", 1),
      row("a", "prefill", "clattn", "r1", 1),
      row("a", "decode", "clattn", "r1", 1),
      row("a", "prefill", "clattn", "r2", 1),
  };
  snprintf(rs[4].updated, sizeof rs[4].updated, "2025-04-01T00:00:00Z");
  for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
    put_ok(db, &rs[i]);
  int n = 0;
  clattn_bench_entry *rows = list(db, NULL, NULL, &n);
  cr_assert_eq(n, 5);
  const char *want[5][4] = {
      {"a", "decode", "clattn", "r1"},  {"a", "prefill", "clattn", "r2"},
      {"a", "prefill", "clattn", "r1"}, {"a", "prefill", "unfused", "r1"},
      {"b", "prefill", "clattn", "r1"},
  };
  for (int i = 0; i < 5; i++) {
    cr_expect_str_eq(rows[i].fingerprint, want[i][0], "row %d", i);
    cr_expect_str_eq(rows[i].family, want[i][1], "row %d", i);
    cr_expect_str_eq(rows[i].impl, want[i][2], "row %d", i);
    cr_expect_str_eq(rows[i].run, want[i][3], "row %d", i);
  }
  clattn_free(rows);
  rows = list(db, "a", NULL, &n);
  cr_expect_eq(n, 4);
  clattn_free(rows);
  rows = list(db, NULL, "prefill", &n);
  cr_expect_eq(n, 4);
  clattn_free(rows);
  rows = list(db, "a", "decode", &n);
  cr_expect_eq(n, 1);
  clattn_free(rows);
  rows = list(db, "zzz", NULL, &n);
  cr_expect_eq(n, 0);
  cr_expect_null(rows);
  clattn_bench_entry *out = NULL;
  cr_expect_eq(clattn_db_list_bench(db, NULL, NULL, sizeof(clattn_bench_entry),
                                    NULL, &n),
               CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_db_list_bench(db, NULL, NULL, sizeof *out, &out, NULL),
               CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_db_list_bench(NULL, NULL, NULL, sizeof *out, &out, &n),
               CLATTN_ERR_INVALID_ARG);
  clattn_db_close(db);
}

/* put refuses e with CLATTN_ERR_INVALID_ARG, a message naming field, and
 * stores nothing. */
static void refused(clattn_db *db, const clattn_bench_entry *e,
                    const char *field) {
  char quoted[64];
  cr_assert_eq(clattn_db_put_bench(db, e), CLATTN_ERR_INVALID_ARG, "field %s",
               field);
  snprintf(quoted, sizeof quoted, "\"%s\"", field);
  cr_expect_not_null(strstr(clattn_db_errmsg(db), quoted),
                     "the message names %s: %s", field, clattn_db_errmsg(db));
  int n = 0;
  free(list(db, NULL, NULL, &n));
  cr_expect_eq(n, 0, "nothing stored for %s", field);
}

Test(bench_db, each_invalid_field_is_named) {
  clattn_db *db = open_db("valid.db");
  const clattn_bench_entry good = row("fp", "prefill", "clattn", "r", 1);
  clattn_bench_entry e = {.size = sizeof(clattn_bench_entry)};
  static const char *const required[] = {"fingerprint", "family", "shape",
                                         "impl"};
  for (size_t k = 0; k < 4; k++) {
    e = good;
    char *f = !strcmp(required[k], "fingerprint") ? e.fingerprint
              : !strcmp(required[k], "family")    ? e.family
              : !strcmp(required[k], "shape")     ? e.shape
                                                  : e.impl;
    f[0] = '\0';
    refused(db, &e, required[k]);
  }
  e = good;
  snprintf(e.device, sizeof e.device, "bad\ttab");
  refused(db, &e, "device");
  e = good;
  snprintf(e.params, sizeof e.params, "bad \xff utf8");
  refused(db, &e, "params");
  e = good;
  memset(e.bound, 'x', sizeof e.bound);
  refused(db, &e, "bound");
  e = good;
  snprintf(e.updated, sizeof e.updated, "yesterday");
  refused(db, &e, "updated");
  e = good;
  snprintf(e.updated, sizeof e.updated, "2999-01-01T00:00:00Z");
  refused(db, &e, "updated");
  e = good;
  e.median_s = 0;
  refused(db, &e, "median_s");
  e = good;
  e.median_s = INFINITY;
  refused(db, &e, "median_s");
  e = good;
  e.spread = -1;
  refused(db, &e, "spread");
  e = good;
  e.flops = NAN;
  refused(db, &e, "flops");
  e = good;
  e.bytes = -1;
  refused(db, &e, "bytes");
  e = good;
  e.predicted_s = INFINITY;
  refused(db, &e, "predicted_s");
  e = good;
  e.roof_s = -0.5;
  refused(db, &e, "roof_s");
  e = good;
  e.max_err = NAN;
  refused(db, &e, "max_err");
  cr_expect_eq(clattn_db_put_bench(db, NULL), CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_db_put_bench(NULL, &good), CLATTN_ERR_INVALID_ARG);
  /* zeros where allowed: a baseline's prediction and error */
  e = good;
  e.predicted_s = 0;
  e.max_err = 0;
  e.params[0] = e.params_source[0] = e.params_device[0] = '\0';
  put_ok(db, &e);
  clattn_db_close(db);
}

Test(bench_db, readonly_handle_lists_rows_and_profiles) {
  char path[512];
  clattn_db *db = open_db("ro.db");
  clattn_bench_entry e = row("fp", "decode", "clattn", "r", 2);
  put_ok(db, &e);
  clattn_profile p[2];
  memset(p, 0, sizeof p);
  p[0].size = p[1].size = sizeof p[0];
  snprintf(p[0].fingerprint, sizeof p[0].fingerprint, "zz");
  snprintf(p[0].name, sizeof p[0].name, "Alpha device");
  p[0].source = CLATTN_PROFILE_MEASURED;
  p[0].bw_copy_gbs = 12.25;
  snprintf(p[1].fingerprint, sizeof p[1].fingerprint, "aa");
  snprintf(p[1].name, sizeof p[1].name, "Beta device");
  p[1].source = CLATTN_PROFILE_MEASURED;
  p[1].compute_units = 16;
  cr_assert_eq(clattn_db_put_profile(db, &p[0]), CLATTN_OK);
  cr_assert_eq(clattn_db_put_profile(db, &p[1]), CLATTN_OK);
  clattn_db_close(db);

  tmp_path(path, sizeof path, "ro.db");
  cr_assert_eq(clattn_db_open_readonly(path, &db), CLATTN_OK, "%s",
               clattn_db_errmsg(NULL));
  int n = 0;
  clattn_bench_entry *rows = list(db, NULL, NULL, &n);
  cr_assert_eq(n, 1);
  cr_expect_eq(memcmp(&rows[0], &e, sizeof e), 0);
  clattn_free(rows);
  clattn_profile *ps = NULL;
  cr_assert_eq(clattn_db_list_profiles(db, sizeof *ps, &ps, &n), CLATTN_OK,
               "%s", clattn_db_errmsg(db));
  cr_assert_eq(n, 2);
  cr_expect_str_eq(ps[0].name, "Alpha device", "ordered by name");
  cr_expect_eq(ps[0].bw_copy_gbs, 12.25);
  cr_expect_str_eq(ps[1].fingerprint, "aa");
  cr_expect_eq(ps[1].compute_units, 16);
  clattn_free(ps);
  cr_expect_eq(clattn_db_list_profiles(db, sizeof(clattn_profile), NULL, &n),
               CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_db_list_profiles(db, sizeof *ps, &ps, NULL),
               CLATTN_ERR_INVALID_ARG);
  clattn_db_close(db);
}

Test(bench_db, schema7_file_lists_empty_then_migrates) {
  char path[512];
  clattn_db *db = open_db("old.db");
  clattn_profile p = {.size = sizeof(clattn_profile)};
  snprintf(p.fingerprint, sizeof p.fingerprint, "oldfp");
  snprintf(p.name, sizeof p.name, "Old device");
  cr_assert_eq(clattn_db_put_profile(db, &p), CLATTN_OK);
  clattn_db_close(db);
  /* as a library of schema 7 left it: no bench table */
  tmp_path(path, sizeof path, "old.db");
  sqlite3 *h = NULL;
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(h,
                            "DROP TABLE bench;" TDB_DROP_SCHEMA10
                            "PRAGMA user_version = 7;",
                            NULL, NULL, NULL),
               SQLITE_OK, "%s", sqlite3_errmsg(h));
  sqlite3_close(h);
  cr_assert_eq(tdb_user_version(path), 7);

  /* a reader does not migrate, and lists no bench rows */
  cr_assert_eq(clattn_db_open_readonly(path, &db), CLATTN_OK, "%s",
               clattn_db_errmsg(NULL));
  int n = -1;
  free(list(db, NULL, NULL, &n));
  cr_expect_eq(n, 0);
  /* and reads its profile without the columns of later migrations */
  clattn_profile old = {.size = sizeof(clattn_profile)};
  cr_expect_eq(clattn_db_get_profile(db, "oldfp", &old), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  cr_expect_str_eq(old.name, "Old device");
  cr_expect_eq(old.unhidden, 0.0);
  clattn_db_close(db);
  cr_expect_eq(tdb_user_version(path), 7);

  db = open_db("old.db");
  cr_expect_eq(tdb_user_version(path), 10, "migrated to the bench table");
  clattn_profile got = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_db_get_profile(db, "oldfp", &got), CLATTN_OK);
  cr_expect_str_eq(got.name, "Old device");
  clattn_bench_entry e = row("oldfp", "prefill", "clattn", "r", 0);
  put_ok(db, &e);
  clattn_bench_entry *rows = list(db, "oldfp", "prefill", &n);
  cr_expect_eq(n, 1);
  clattn_free(rows);
  clattn_db_close(db);
}
