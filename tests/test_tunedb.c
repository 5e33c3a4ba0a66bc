/* test_tunedb.c - the tuning table of the database: the JSON export and
 * import (exact round trip, merge by date, strict rejection of malformed
 * files with nothing imported) and the migration of a schema-3 file to the
 * tuning table.  No OpenCL device needed. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "clattn_tools.h"
#include "db_lock.h"
#include "tmpdir.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <dirent.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------ temp dirs */

static char tmp_dir[256];

static void tmp_setup(void) { tt_mkdtemp(tmp_dir, sizeof tmp_dir, "tunedb"); }

static void tmp_teardown(void) { tt_rm_rf(tmp_dir); }

static void tmp_path(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", tmp_dir, name);
}

TestSuite(tunedb, .init = tmp_setup, .fini = tmp_teardown);

/* -------------------------------------------------------------- helpers */

static clattn_db *open_db(const char *name) {
  char path[512];
  clattn_db *db = NULL;
  tmp_path(path, sizeof path, name);
  clattn_status st = clattn_db_open(path, &db);
  cr_assert(st == CLATTN_OK && db != NULL, "clattn_db_open(%s): %s", path,
            clattn_db_errmsg(NULL));
  return db;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

/* The whole of a file, malloc'ed. */
static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot read %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  cr_assert_not_null(buf);
  cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static void set(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src);
}
#define SET(field, text) set(field, sizeof field, text)

/* A row with every field set; key by i. */
static clattn_tune_entry entry(int i, const char *updated, double median) {
  clattn_tune_entry e = {.size = sizeof(clattn_tune_entry)};
  char params[64];
  SET(e.fingerprint, "0123456789abcdef0123456789abcdef");
  SET(e.device, "Test GPU");
  SET(e.vendor, "Vendor");
  SET(e.arch, "arch1");
  SET(e.driver, "1.2.3");
  SET(e.kernel, "decode");
  SET(e.shape_class, "f32 k64 v64 g8 bh1 m4096 bhsd");
  snprintf(params, sizeof params, "rows=%d wg=64", i);
  SET(e.params, params);
  SET(e.status, "ok");
  e.median_s = median;
  e.spread = 0.01 * i;
  e.predicted_s = 1e-4;
  e.max_err = 1e-7;
  SET(e.strategy, "exhaustive");
  SET(e.library_version, "0.1.0");
  SET(e.updated, updated);
  e.tune_method = clattn_tune_method("decode");
  return e;
}

static void put(clattn_db *db, const clattn_tune_entry *e) {
  clattn_status st = clattn_db_put_tune(db, e);
  cr_assert_eq(st, CLATTN_OK, "put_tune: %s", clattn_db_errmsg(db));
}

static clattn_tune_entry *list(clattn_db *db, int *n) {
  clattn_tune_entry *rows = NULL;
  clattn_status st =
      clattn_db_list_tune(db, NULL, NULL, NULL, sizeof *rows, &rows, n);
  cr_assert_eq(st, CLATTN_OK, "list_tune: %s", clattn_db_errmsg(db));
  return rows;
}

/* Every text field equal and every double equal bit for bit (any_zero:
 * 0.0 and -0.0 count as equal). */
static void expect_fields_eq(const clattn_tune_entry *a,
                             const clattn_tune_entry *b, int row,
                             int any_zero) {
#define TXT(f) cr_expect_str_eq(a->f, b->f, "row %d: " #f, row)
#define DBL(f)                                                                 \
  cr_expect(memcmp(&a->f, &b->f, sizeof(double)) == 0 ||                       \
                (any_zero && a->f == 0 && b->f == 0),                          \
            "row %d: " #f " %.17g != %.17g", row, a->f, b->f)
  TXT(fingerprint);
  TXT(device);
  TXT(vendor);
  TXT(arch);
  TXT(driver);
  TXT(kernel);
  TXT(shape_class);
  TXT(params);
  TXT(status);
  DBL(median_s);
  DBL(spread);
  DBL(predicted_s);
  DBL(max_err);
  TXT(strategy);
  TXT(message);
  TXT(library_version);
  TXT(updated);
  cr_expect_eq(a->tune_method, b->tune_method, "row %d: tune_method %d != %d",
               row, a->tune_method, b->tune_method);
#undef TXT
#undef DBL
}

static void expect_entry_eq(const clattn_tune_entry *a,
                            const clattn_tune_entry *b, int row) {
  expect_fields_eq(a, b, row, 0);
}

static void import_ok(clattn_db *db, const char *path, int want_added,
                      int want_updated, int want_unchanged) {
  int a = -1, u = -1, s = -1;
  clattn_status st = clattn_db_import(db, path, &a, &u, &s);
  cr_assert_eq(st, CLATTN_OK, "import %s: %s", path, clattn_db_errmsg(db));
  cr_expect_eq(a, want_added, "added %d, want %d", a, want_added);
  cr_expect_eq(u, want_updated, "updated %d, want %d", u, want_updated);
  cr_expect_eq(s, want_unchanged, "unchanged %d, want %d", s, want_unchanged);
}

/* --------------------------------------------------------- round trip */

/* Valid rows whose strings and doubles are hard to carry through text
 * (rows that are not valid are refused: hostile_values_are_refused). */
static int tricky_rows(clattn_tune_entry *e, int cap) {
  static const double v[] = {
      0.1,     1.0 / 3.0, 5e-324, 2.2250738585072014e-308,
      DBL_MAX, 7e-3,      1.0,    123456789.123456789,
      1e-310,  0.5};
  int n = 0;
  for (int i = 0; i < 10 && n < cap; i++, n++) {
    e[n] = entry(n, "2025-01-02T03:04:05Z", v[i]);
    e[n].spread = v[(i + 1) % 10];
    e[n].predicted_s = v[(i + 3) % 10];
    e[n].max_err = v[(i + 7) % 10];
  }
  e[8].spread = -0.0;
  /* methods: unknown (0), old, current, and the int range's end */
  e[0].tune_method = 0;
  e[1].tune_method = 1;
  e[2].tune_method = INT_MAX;
  SET(e[0].message, "quote \" backslash \\ slash / end");
  SET(e[1].message, "\\u0041 \\n {\"json\": [1, 2]}");
  SET(e[2].device, "Gr\xc3\xa4"
                   "fikkarte \xe2\x9c\x93 \xf0\x9f\x98\x80");
  SET(e[3].driver, "{\"json\": [1, 2]} wg=\\u0041");
  /* Strings at their fields' full length. */
  memset(e[4].device, 'p', sizeof e[4].device - 1);
  e[4].device[sizeof e[4].device - 1] = '\0';
  memset(e[4].message, '"', sizeof e[4].message - 1);
  e[4].message[sizeof e[4].message - 1] = '\0';
  memset(e[4].shape_class, '\\', sizeof e[4].shape_class - 1);
  e[4].shape_class[sizeof e[4].shape_class - 1] = '\0';
  SET(e[5].status, "wrong");
  e[5].max_err = INFINITY; /* a rejected candidate's error may be */
  SET(e[6].status, "timeout");
  SET(e[6].kernel, "prefill");
  SET(e[7].kernel, "clblast-xgemm");
  SET(e[7].params, "MWG=64 NWG=64 KWG=16");
  SET(e[9].status, "failed");
  e[9].median_s = 0.0; /* failed before it was timed */
  return n;
}

Test(tunedb, round_trip_every_field) {
  clattn_tune_entry in[16];
  int n_in = tricky_rows(in, 16);
  clattn_db *a = open_db("a.db"), *b = open_db("b.db");
  char file[512], file2[512];
  for (int i = 0; i < n_in; i++)
    put(a, &in[i]);
  tmp_path(file, sizeof file, "tuning.json");
  tmp_path(file2, sizeof file2, "again.json");
  cr_assert_eq(clattn_db_export(a, file), CLATTN_OK, "export: %s",
               clattn_db_errmsg(a));
  DIR *d = opendir(tmp_dir);
  cr_assert(d != NULL);
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    cr_expect(strstr(e->d_name, ".tmp") == NULL,
              "the temporary %s is left (renamed: none)", e->d_name);
  closedir(d);
  import_ok(b, file, n_in, 0, 0);

  int na = 0, nb = 0;
  clattn_tune_entry *ra = list(a, &na), *rb = list(b, &nb);
  cr_assert_eq(na, n_in);
  cr_assert_eq(nb, n_in);
  for (int i = 0; i < na; i++)
    expect_entry_eq(&ra[i], &rb[i], i);
  /* ... and the stored rows are the ones put, strings and doubles alike
   * (SQLite itself may store -0.0 as 0). */
  for (int i = 0; i < n_in; i++) {
    int found = 0;
    for (int j = 0; j < nb; j++) {
      if (strcmp(rb[j].params, in[i].params) != 0 ||
          strcmp(rb[j].kernel, in[i].kernel) != 0 ||
          strcmp(rb[j].shape_class, in[i].shape_class) != 0)
        continue;
      found = 1;
      expect_fields_eq(&in[i], &rb[j], i, 1);
    }
    cr_expect(found, "row %d (%s) missing after import", i, in[i].params);
  }
  /* Exporting the imported rows gives the same entries, byte for byte. */
  cr_assert_eq(clattn_db_export(b, file2), CLATTN_OK);
  char *t1 = read_all(file), *t2 = read_all(file2);
  cr_expect_str_eq(strstr(t1, "\"entries\""), strstr(t2, "\"entries\""));
  cr_expect(strstr(t1, "\"clattn_tuning\": 1") != NULL);
  cr_expect(strstr(t1, "quote \\\" backslash \\\\ slash") != NULL,
            "quote and backslash escaped");
  free(t1);
  free(t2);
  free(ra);
  free(rb);
  clattn_db_close(a);
  clattn_db_close(b);
}

Test(tunedb, import_twice_adds_nothing) {
  clattn_tune_entry in[16];
  int n = tricky_rows(in, 16);
  clattn_db *a = open_db("a.db"), *b = open_db("b.db");
  char file[512];
  for (int i = 0; i < n; i++)
    put(a, &in[i]);
  tmp_path(file, sizeof file, "tuning.json");
  cr_assert_eq(clattn_db_export(a, file), CLATTN_OK);
  import_ok(b, file, n, 0, 0);
  import_ok(b, file, 0, 0, n);
  import_ok(a, file, 0, 0, n); /* into the database it came from */
  int nb = 0;
  free(list(b, &nb));
  cr_expect_eq(nb, n);
  /* NULL counters are allowed. */
  cr_expect_eq(clattn_db_import(b, file, NULL, NULL, NULL), CLATTN_OK);
  clattn_db_close(a);
  clattn_db_close(b);
}

Test(tunedb, empty_database) {
  clattn_db *a = open_db("a.db"), *b = open_db("b.db");
  char file[512];
  tmp_path(file, sizeof file, "empty.json");
  cr_assert_eq(clattn_db_export(a, file), CLATTN_OK);
  import_ok(b, file, 0, 0, 0);
  clattn_db_close(a);
  clattn_db_close(b);
}

/* --------------------------------------------------------------- merge */

static double median_of(clattn_db *db, const char *params) {
  clattn_tune_entry *rows;
  int n = 0;
  double m = -1;
  rows = list(db, &n);
  for (int i = 0; i < n; i++)
    if (!strcmp(rows[i].params, params))
      m = rows[i].median_s;
  clattn_free(rows);
  return m;
}

Test(tunedb, newer_replaces_older_does_not) {
  clattn_db *db = open_db("main.db"), *src = open_db("src.db");
  char file[512];
  tmp_path(file, sizeof file, "x.json");
  clattn_tune_entry stored = entry(1, "2025-06-01T00:00:00Z", 1.0);
  put(db, &stored);

  /* Newer: replaces; a new key in the same file is added. */
  clattn_tune_entry newer = entry(1, "2025-07-01T00:00:00Z", 2.0);
  clattn_tune_entry other = entry(2, "2020-01-01T00:00:00Z", 9.0);
  put(src, &newer);
  put(src, &other);
  cr_assert_eq(clattn_db_export(src, file), CLATTN_OK);
  import_ok(db, file, 1, 1, 0);
  cr_expect_eq(median_of(db, "rows=1 wg=64"), 2.0);
  cr_expect_eq(median_of(db, "rows=2 wg=64"), 9.0);

  /* Older, and same date: both leave the stored row. */
  clattn_db_close(src);
  unlink(file);
  src = open_db("src2.db");
  clattn_tune_entry older = entry(1, "2025-05-01T00:00:00Z", 3.0);
  clattn_tune_entry same = entry(2, "2020-01-01T00:00:00Z", 4.0);
  put(src, &older);
  put(src, &same);
  cr_assert_eq(clattn_db_export(src, file), CLATTN_OK);
  import_ok(db, file, 0, 0, 2);
  cr_expect_eq(median_of(db, "rows=1 wg=64"), 2.0);
  cr_expect_eq(median_of(db, "rows=2 wg=64"), 9.0);
  clattn_db_close(src);
  clattn_db_close(db);
}

/* ----------------------------------------------------------- malformed */

static const char good_head[] = "{\n"
                                "  \"clattn_tuning\": 1,\n"
                                "  \"library_version\": \"0.1.0\",\n"
                                "  \"exported\": \"2025-01-01T00:00:00Z\",\n"
                                "  \"entries\": [\n";

/* An entry on one line: fields, then extra text before the closing brace
 * (which may replace or add keys). */
static void entry_text(char *buf, size_t cap, const char *params,
                       const char *extra) {
  snprintf(buf, cap,
           "    {\"fingerprint\": \"ffff\", \"device\": \"d\", \"vendor\": "
           "\"v\", \"arch\": \"a\", \"driver\": \"1\", \"kernel\": "
           "\"decode\", \"shape_class\": \"c\", \"params\": \"%s\", "
           "\"status\": \"ok\", \"median_s\": 0.5, \"spread\": 0, "
           "\"predicted_s\": 0, \"max_err\": 0, \"strategy\": \"random\", "
           "\"message\": \"\", \"library_version\": \"0.1.0\", "
           "\"updated\": \"2025-01-01T00:00:00Z\"%s}",
           params, extra);
}

typedef struct bad_case {
  const char *what;
  const char *text; /* %s: a valid entry line (6), %s: one more (7) */
  const char *want; /* in the message */
  int line;
} bad_case;

static void expect_rejected(const bad_case *c) {
  clattn_db *db = open_db("main.db");
  char file[512], e1[1024], e2[1024], text[8192], want[600];
  clattn_tune_entry stored = entry(1, "2020-01-01T00:00:00Z", 1.0);
  put(db, &stored);
  entry_text(e1, sizeof e1, "rows=1", "");
  entry_text(e2, sizeof e2, "rows=2", "");
  snprintf(text, sizeof text, c->text, good_head, e1, e2);
  tmp_path(file, sizeof file, "bad.json");
  write_file(file, text);
  int a = -1, u = -1, s = -1;
  clattn_status st = clattn_db_import(db, file, &a, &u, &s);
  const char *msg = clattn_db_errmsg(db);
  cr_expect_eq(st, CLATTN_ERR_INVALID_ARG, "%s: status %d (%s)", c->what, st,
               msg);
  snprintf(want, sizeof want, "%s:%d:", file, c->line);
  cr_expect(strstr(msg, want) != NULL, "%s: message lacks '%s': %s", c->what,
            want, msg);
  cr_expect(strstr(msg, c->want) != NULL, "%s: message lacks '%s': %s", c->what,
            c->want, msg);
  cr_expect(a == 0 && u == 0 && s == 0, "%s: counts %d %d %d", c->what, a, u,
            s);
  /* Nothing imported: only the stored row, unchanged. */
  int n = 0;
  clattn_tune_entry *rows = list(db, &n);
  cr_expect_eq(n, 1, "%s: %d rows after a failed import", c->what, n);
  expect_entry_eq(&stored, &rows[0], 0);
  clattn_free(rows);
  clattn_db_close(db);
}

/* Lines: 1 '{', 2 version, 3 library, 4 exported, 5 entries, 6 entry 1,
 * 7 entry 2. */
static const bad_case bad_cases[] = {
    {"empty file", "", "found end of file", 1},
    {"truncated", "%s%s,\n%.60s", "unterminated string", 7},
    {"truncated after an entry", "%s%s,\n", "expected an entry object", 7},
    {"bad version", "{\n  \"clattn_tuning\": 2,\n  \"entries\": []}\n",
     "version 2", 2},
    {"version is a string",
     "{\n  \"clattn_tuning\": \"1\",\n  \"entries\": []}\n",
     "expected a number", 2},
    {"no version", "{\n  \"entries\": []\n}\n", "no \"clattn_tuning\"", 1},
    {"top-level array", "[]\n", "expected '{'", 1},
    {"unknown top-level key", "{\n  \"clattn_tuning\": 1,\n  \"x\": 1}\n",
     "unknown key \"x\"", 3},
    {"trailing text", "%s%s\n  ]\n}\n}\n", "end of file", 9},
    {"trailing comma", "%s%s,\n  ]\n}\n", "expected an entry object", 7},
    {"garbage byte", "%s%s\n  ]\n}#\n", "'#'", 8},
    {"second entry bad (first good)", "%s%s,\n    {\"kernel\": 5}\n  ]\n}\n",
     "expected a string", 7},
};

Test(tunedb, malformed_files_are_rejected) {
  for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++)
    expect_rejected(&bad_cases[i]);
}

/* Entry-level errors: one bad entry after a good one (line 7). */
typedef struct bad_entry {
  const char *what, *params, *extra, *want;
} bad_entry;

static const bad_entry bad_entries[] = {
    {"unknown key", "rows=2", ", \"colour\": \"red\"",
     "unknown key \"colour\""},
    {"duplicate key", "rows=2", ", \"status\": \"ok\"", "duplicate key"},
    {"unknown numeric key", "rows=2", ", \"x\": 1", "unknown key \"x\""},
    {"bad escape", "a\\\\qb\\q", "", "invalid escape"},
    {"lone surrogate", "\\ud800x", "", "surrogate"},
    {"low surrogate", "\\udc00", "", "surrogate"},
    {"NUL escape", "a\\u0000", "", "NUL"},
    {"short \\u", "\\u12", "", "hex digits"},
    {"raw tab in a string", "a\tb", "", "control character"},
};

static void expect_entry_rejected(const bad_entry *b, const char *override) {
  char e2[2048], text[8192];
  entry_text(e2, sizeof e2, b->params, b->extra);
  snprintf(text, sizeof text, "%%s%%s,\n%s\n  ]\n}\n",
           override ? override : e2);
  bad_case c = {b->what, text, b->want, 7};
  expect_rejected(&c);
}

Test(tunedb, malformed_entries_are_rejected) {
  for (size_t i = 0; i < sizeof bad_entries / sizeof bad_entries[0]; i++)
    expect_entry_rejected(&bad_entries[i], NULL);
  /* Wrong types and missing fields need the entry written by hand. */
  const bad_entry wrong = {"median as string", "", "", "expected a number"};
  expect_entry_rejected(&wrong,
                        "    {\"fingerprint\": \"f\", \"median_s\": \"fast\"}");
  const bad_entry wrong2 = {"kernel as number", "", "", "expected a string"};
  expect_entry_rejected(&wrong2, "    {\"kernel\": 1}");
  const bad_entry wrong3 = {"null median", "", "", "found null"};
  expect_entry_rejected(&wrong3, "    {\"median_s\": null}");
  const bad_entry wrong4 = {"bad number", "", "", "digits"};
  expect_entry_rejected(&wrong4, "    {\"median_s\": 1.}");
  const bad_entry wrong6 = {"fractional method", "", "",
                            "expected a whole number, got 1.5"};
  expect_entry_rejected(&wrong6, "    {\"tune_method\": 1.5}");
  const bad_entry wrong7 = {"method out of range", "", "",
                            "expected a whole number, got 4294967296"};
  expect_entry_rejected(&wrong7, "    {\"tune_method\": 4294967296}");
  const bad_entry wrong8 = {"method as string", "", "", "expected a number"};
  expect_entry_rejected(&wrong8, "    {\"tune_method\": \"2\"}");
  const bad_entry wrong5 = {"leading zero", "", "", "expected ',' or '}'"};
  expect_entry_rejected(&wrong5, "    {\"median_s\": 01}");
  const bad_entry missing = {"missing kernel", "", "", "lacks \"kernel\""};
  expect_entry_rejected(&missing,
                        "    {\"fingerprint\": \"f\", \"shape_class\": \"c\", "
                        "\"params\": \"p\", \"status\": \"ok\", \"updated\": "
                        "\"2025-01-01T00:00:00Z\"}");
  const bad_entry missing2 = {"missing updated", "", "", "lacks \"updated\""};
  expect_entry_rejected(
      &missing2, "    {\"fingerprint\": \"f\", \"kernel\": \"k\", "
                 "\"shape_class\": \"c\", \"params\": \"p\", \"status\": "
                 "\"ok\"}");
  /* a key column empty (params may be: a family without tunables) */
  const bad_entry empty = {"empty kernel", "", "", "\"kernel\" is empty"};
  expect_entry_rejected(
      &empty, "    {\"fingerprint\": \"f\", \"kernel\": \"\", "
              "\"shape_class\": \"c\", \"params\": \"p\", \"status\": "
              "\"ok\", \"updated\": \"2025-01-01T00:00:00Z\"}");
  const bad_entry date = {"bad date", "", "", "not a UTC date"};
  expect_entry_rejected(
      &date, "    {\"fingerprint\": \"f\", \"kernel\": \"k\", "
             "\"shape_class\": \"c\", \"params\": \"p\", \"status\": "
             "\"ok\", \"updated\": \"yesterday\"}");
  /* Over-long: 256 bytes for a 256-byte field (255 and a NUL). */
  char line[1024], params[300];
  memset(params, 'x', 256);
  params[256] = '\0';
  snprintf(line, sizeof line, "    {\"params\": \"%s\"}", params);
  const bad_entry longer = {"params too long", "", "",
                            "string too long for \"params\" of entry 2 (at "
                            "most 255 bytes)"};
  expect_entry_rejected(&longer, line);
  /* An escape that decodes past the limit counts its UTF-8 bytes. */
  char fp[512] = "    {\"fingerprint\": \"";
  for (int i = 0; i < 13; i++)
    strcat(fp, "\\u20ac"); /* 3 bytes each: 39, the limit */
  strcat(fp, "x\"}");
  const bad_entry longer2 = {"fingerprint too long", "", "", "at most 39"};
  expect_entry_rejected(&longer2, fp);
}

/* A database failure in the middle of the merge rolls everything back. */
Test(tunedb, failed_merge_rolls_back) {
  clattn_db *db = open_db("main.db"), *src = open_db("src.db");
  char file[512], path[512];
  tmp_path(file, sizeof file, "x.json");
  clattn_tune_entry stored = entry(1, "2020-01-01T00:00:00Z", 1.0);
  clattn_tune_entry a = entry(1, "2025-01-01T00:00:00Z", 2.0);
  clattn_tune_entry b = entry(2, "2025-01-01T00:00:00Z", 3.0);
  clattn_tune_entry c = entry(3, "2025-01-01T00:00:00Z", 4.0);
  put(db, &stored);
  put(src, &a);
  put(src, &b);
  put(src, &c);
  cr_assert_eq(clattn_db_export(src, file), CLATTN_OK);
  clattn_db_close(src);
  /* A trigger makes the third row's insert fail. */
  sqlite3 *h = NULL;
  tmp_path(path, sizeof path, "main.db");
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(h,
                            "CREATE TRIGGER boom BEFORE INSERT ON tuning"
                            " WHEN NEW.params = 'rows=3 wg=64'"
                            " BEGIN SELECT RAISE(ABORT, 'boom'); END;",
                            NULL, NULL, NULL),
               SQLITE_OK);
  sqlite3_close(h);
  int added = -1;
  clattn_status st = clattn_db_import(db, file, &added, NULL, NULL);
  cr_expect_eq(st, CLATTN_ERR_DB, "status %d: %s", st, clattn_db_errmsg(db));
  cr_expect(strstr(clattn_db_errmsg(db), "boom") != NULL, "%s",
            clattn_db_errmsg(db));
  cr_expect(strstr(clattn_db_errmsg(db), "entry 3") != NULL, "%s",
            clattn_db_errmsg(db));
  cr_expect_eq(added, 0);
  int n = 0;
  clattn_tune_entry *rows = list(db, &n);
  cr_expect_eq(n, 1, "%d rows after a rolled-back import", n);
  expect_entry_eq(&stored, &rows[0], 0);
  clattn_free(rows);
  /* The handle is usable afterwards (no transaction left open). */
  put(db, &b);
  clattn_db_close(db);
}

/* ------------------------------------------------------ other failures */

Test(tunedb, io_errors_and_arguments) {
  clattn_db *db = open_db("main.db");
  char file[512];
  tmp_path(file, sizeof file, "no/such/dir/x.json");
  cr_expect_eq(clattn_db_export(db, file), CLATTN_ERR_IO);
  cr_expect(strstr(clattn_db_errmsg(db), "no/such/dir") != NULL, "%s",
            clattn_db_errmsg(db));
  cr_expect_eq(clattn_db_import(db, file, NULL, NULL, NULL), CLATTN_ERR_IO);
  cr_expect(strstr(clattn_db_errmsg(db), "x.json") != NULL, "%s",
            clattn_db_errmsg(db));
  cr_expect_eq(clattn_db_export(db, NULL), CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_db_import(db, NULL, NULL, NULL, NULL),
               CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_db_export(NULL, "x"), CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_db_import(NULL, "x", NULL, NULL, NULL),
               CLATTN_ERR_INVALID_ARG);
  clattn_db_close(db);
}

Test(tunedb, entry_json_is_snprintf_like) {
  clattn_tune_entry e = entry(1, "2025-01-01T00:00:00Z", 0.1);
  SET(e.message, "a \"b\"\n");
  char big[16384], small[16];
  size_t n = clattn_tune_entry_json(&e, big, sizeof big);
  cr_expect_eq(n, strlen(big));
  cr_expect(strstr(big, "\"median_s\": 0.10000000000000001") != NULL, "%s",
            big);
  cr_expect(strstr(big, "\"message\": \"a \\\"b\\\"\\u000a\"") != NULL, "%s",
            big);
  cr_expect_eq(clattn_tune_entry_json(&e, small, sizeof small), n);
  cr_expect_eq(strlen(small), sizeof small - 1);
  cr_expect_eq(strncmp(small, big, sizeof small - 1), 0);
  cr_expect_eq(clattn_tune_entry_json(&e, NULL, 0), n);
  /* The worst case fits 16 KiB: every byte of every field escaped. */
  memset(&e, 0x01, sizeof e);
  e.size = sizeof e;
  e.fingerprint[sizeof e.fingerprint - 1] = '\0';
  e.device[sizeof e.device - 1] = '\0';
  e.vendor[sizeof e.vendor - 1] = '\0';
  e.arch[sizeof e.arch - 1] = '\0';
  e.driver[sizeof e.driver - 1] = '\0';
  e.kernel[sizeof e.kernel - 1] = '\0';
  e.shape_class[sizeof e.shape_class - 1] = '\0';
  e.params[sizeof e.params - 1] = '\0';
  e.status[sizeof e.status - 1] = '\0';
  e.strategy[sizeof e.strategy - 1] = '\0';
  e.message[sizeof e.message - 1] = '\0';
  e.library_version[sizeof e.library_version - 1] = '\0';
  e.updated[sizeof e.updated - 1] = '\0';
  e.median_s = e.spread = e.predicted_s = e.max_err = -DBL_MIN;
  cr_expect_lt(clattn_tune_entry_json(&e, big, sizeof big), sizeof big);
}

/* ------------------------------------------------------------- schema 3 */

/* Migrations 1-3 as an older library wrote them (host/src/db.c). */
static const char schema3[] =
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
    " library_version TEXT NOT NULL);"
    "ALTER TABLE profiles ADD COLUMN cache_bytes INTEGER NOT NULL DEFAULT 0;"
    "CREATE TABLE model_checks ("
    " id INTEGER PRIMARY KEY,"
    " fingerprint TEXT NOT NULL, call TEXT NOT NULL, bound TEXT NOT NULL,"
    " predicted_s REAL NOT NULL, measured_s REAL NOT NULL,"
    " gbs REAL NOT NULL, gflops REAL NOT NULL,"
    " roofline_fraction REAL NOT NULL,"
    " updated TEXT NOT NULL, library_version TEXT NOT NULL);"
    "CREATE INDEX model_checks_fp ON model_checks (fingerprint, call);"
    "INSERT INTO profiles VALUES ('oldfp', 2, 'Old GPU', 'OldVendor',"
    " 'OldPlatform', 'drv 9', 'gfx9', 0, 60, 1800, 64, 4, 17179869184,"
    " 65536, 1024, 1, 1, 900.5, 850.25, 870, 12000, 24000, 3000, 12, 13,"
    " 8.5, 2.25, 'probe', '2024-01-01T00:00:00Z', '0.0.9', 4194304);"
    "INSERT INTO model_checks (fingerprint, call, bound, predicted_s,"
    " measured_s, gbs, gflops, roofline_fraction, updated, library_version)"
    " VALUES ('oldfp', 'decode b=1', 'memory', 1e-4, 2e-4, 400, 10, 0.5,"
    " '2024-01-01T00:00:00Z', '0.0.9');"
    "PRAGMA user_version = 3;";

Test(tunedb, schema3_file_migrates_and_keeps_rows) {
  char path[512];
  sqlite3 *h = NULL;
  tmp_path(path, sizeof path, "old.db");
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(h, schema3, NULL, NULL, NULL), SQLITE_OK, "%s",
               sqlite3_errmsg(h));
  sqlite3_close(h);
  cr_assert_eq(tdb_user_version(path), 3);

  clattn_db *db = open_db("old.db");
  cr_expect_eq(tdb_user_version(path), 10,
               "migrated to the tuning table, the probe and tuning methods "
               "the reader's index, the bench table, the params' names and "
               "the in-core rates");
  clattn_profile p = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_db_get_profile(db, "oldfp", &p), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  cr_expect_str_eq(p.name, "Old GPU");
  cr_expect_str_eq(p.arch, "gfx9");
  cr_expect_eq(p.source, CLATTN_PROFILE_MEASURED);
  cr_expect_eq(p.global_mem_bytes, 17179869184ull);
  cr_expect_eq(p.bw_read_gbs, 900.5);
  cr_expect_eq(p.launch_pipelined_us, 2.25);
  cr_expect_eq(p.cache_bytes, 4194304ull);
  cr_expect_eq(p.probe_method, 1,
               "a profile stored before migration 5 was "
               "measured by probe method 1");
  /* The new table works: put, list, export, import. */
  int n = -1;
  free(list(db, &n));
  cr_expect_eq(n, 0);
  clattn_tune_entry e = entry(1, "2025-01-01T00:00:00Z", 1.5);
  put(db, &e);
  char file[512];
  tmp_path(file, sizeof file, "old.json");
  cr_assert_eq(clattn_db_export(db, file), CLATTN_OK);
  import_ok(db, file, 0, 0, 1);
  clattn_db_close(db);

  /* The model check survived too. */
  sqlite3_stmt *st = NULL;
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  cr_assert_eq(sqlite3_prepare_v2(h,
                                  "SELECT count(*), max(measured_s) FROM"
                                  " model_checks WHERE fingerprint = 'oldfp'",
                                  -1, &st, NULL),
               SQLITE_OK);
  cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
  cr_expect_eq(sqlite3_column_int(st, 0), 1);
  cr_expect_eq(sqlite3_column_double(st, 1), 2e-4);
  sqlite3_finalize(st);
  sqlite3_close(h);
  /* A tuning row written without the method (as schema 4 and 5 wrote
   * them) reads back as method 1. */
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  cr_assert_eq(
      sqlite3_exec(h,
                   "INSERT INTO tuning (fingerprint, device, vendor, arch,"
                   " driver, kernel, shape_class, params, status, median_s,"
                   " spread, predicted_s, max_err, strategy, message,"
                   " library_version, updated) VALUES ('oldfp', 'Old GPU',"
                   " 'v', 'gfx9', 'd', 'decode', 'c', 'rows=1', 'ok', 1e-3,"
                   " 0, 0, 0, 'exhaustive', '', '0.1.0',"
                   " '2025-01-01T00:00:00Z')",
                   NULL, NULL, NULL),
      SQLITE_OK, "%s", sqlite3_errmsg(h));
  sqlite3_close(h);
  db = open_db("old.db");
  clattn_tune_entry *rows = NULL;
  int nr = 0;
  cr_assert_eq(
      clattn_db_list_tune(db, "oldfp", NULL, NULL, sizeof *rows, &rows, &nr),
      CLATTN_OK);
  cr_assert_eq(nr, 1);
  cr_expect_eq(rows[0].tune_method, 1);
  clattn_free(rows);
  clattn_db_close(db);
  /* Reopening does not migrate again. */
  cr_expect_eq(tdb_user_version(path), 10);
}

/* Schema 9: a file of schema 8, whose rows name the params of every
 * family alike ("variant=1 rows=2 keys=16 wg=0 splits=0 prefetch=0"), has
 * them rewritten in each family's own tunables at the first writer's open
 * (values of 0 left out); a kernel this library does not know keeps its
 * text. */
Test(tunedb, schema8_params_in_family_names) {
  char path[512];
  tmp_path(path, sizeof path, "v8.db");
  clattn_db_close(open_db("v8.db"));
  static const struct {
    const char *kernel, *before, *after;
  } rows[] = {{"prefill", "variant=1 rows=2 keys=16 wg=0 splits=0 prefetch=0",
               "variant=1 rows=2 keys=16"},
              {"decode", "variant=2 rows=0 keys=32 wg=64 splits=8 prefetch=0",
               "variant=2 keys=32 wg=64 splits=8"},
              {"talking-heads",
               "variant=1 rows=4 keys=32 wg=0 splits=0 prefetch=0 scheme=3",
               "variant=1 rows=4 keys=32 scheme=3"},
              {"talking-heads-append",
               "variant=0 rows=0 keys=0 wg=0 splits=0 prefetch=0", ""},
              {"newer-family", "depth=3 rows=0", "depth=3 rows=0"}};
  enum { NROWS = sizeof rows / sizeof rows[0] };
  sqlite3 *h = NULL;
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  for (int i = 0; i < NROWS; i++) {
    char sql[1024];
    snprintf(sql, sizeof sql,
             "INSERT INTO tuning (fingerprint, device, vendor, arch, driver,"
             " kernel, shape_class, params, status, median_s, spread,"
             " predicted_s, max_err, strategy, message, library_version,"
             " updated, tune_method) VALUES ('fp', 'dev', 'v', 'a', 'd',"
             " '%s', 'c%d', '%s', 'ok', 1e-3, 0, 0, 0, 'exhaustive', '',"
             " '0.2.0', '2026-01-01T00:00:00Z', 1)",
             rows[i].kernel, i, rows[i].before);
    cr_assert_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK, "%s",
                 sqlite3_errmsg(h));
  }
  /* a file of schema 8 has none of migration 10's columns either */
  cr_assert_eq(
      sqlite3_exec(h,
                   TDB_DROP_SCHEMA10 "PRAGMA user_version = 8",
                   NULL, NULL, NULL),
      SQLITE_OK, "%s", sqlite3_errmsg(h));
  sqlite3_close(h);
  cr_assert_eq(tdb_user_version(path), 8);
  clattn_db *db = open_db("v8.db");
  cr_expect_eq(tdb_user_version(path), 10);
  int n = 0;
  clattn_tune_entry *got = list(db, &n);
  cr_assert_eq(n, NROWS);
  for (int i = 0; i < NROWS; i++) {
    char cls[8];
    snprintf(cls, sizeof cls, "c%d", i);
    int found = 0;
    for (int k = 0; k < n; k++)
      if (strcmp(got[k].shape_class, cls) == 0) {
        found = 1;
        cr_expect_str_eq(got[k].params, rows[i].after, "%s", rows[i].kernel);
      }
    cr_expect(found, "row %s", cls);
  }
  clattn_free(got);
  clattn_db_close(db);
}

/* Several processes opening one new database at the same moment all
 * succeed: switching the fresh file to WAL deadlocks two of them, and
 * SQLite fails one at once rather than waiting (CI saw "setting WAL mode:
 * database is locked" from two tuners started together). */
Test(tunedb, simultaneous_first_opens) {
  enum { ROUNDS = 25, KIDS = 6 };
  for (int r = 0; r < ROUNDS; r++) {
    char name[32], path[512];
    snprintf(name, sizeof name, "race-%02d.db", r);
    tmp_path(path, sizeof path, name);
    int gate[2];
    cr_assert_eq(pipe(gate), 0);
    pid_t kids[KIDS];
    for (int k = 0; k < KIDS; k++) {
      kids[k] = fork();
      cr_assert_neq(kids[k], -1);
      if (kids[k] == 0) {
        char c;
        close(gate[1]);
        if (read(gate[0], &c, 1) != 0) /* EOF: the gate opens for all */
          _exit(3);
        clattn_db *db = NULL;
        if (clattn_db_open(path, &db) != CLATTN_OK) {
          fprintf(stderr, "round %d: %s\n", r, clattn_db_errmsg(NULL));
          _exit(1);
        }
        clattn_db_close(db);
        _exit(0);
      }
    }
    close(gate[0]);
    close(gate[1]);
    for (int k = 0; k < KIDS; k++) {
      int status = 0;
      cr_assert_eq(waitpid(kids[k], &status, 0), kids[k]);
      cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "round %d: process %d failed to open (status %d)", r, k,
                status);
    }
  }
}

/* ------------------------------------------------------ read-only open */

/* A database with one row, closed. */
static void make_db(const char *path) {
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK, "%s",
               clattn_db_errmsg(NULL));
  clattn_tune_entry e = entry(1, "2025-01-01T00:00:00Z", 1.0);
  put(db, &e);
  clattn_db_close(db);
}

/* The names in a directory, sorted, as one string. */
static void dir_listing(const char *dir, char *out, size_t cap) {
  struct dirent **names = NULL;
  int n = scandir(dir, &names, NULL, alphasort);
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    snprintf(out + strlen(out), cap - strlen(out), "%s ", names[i]->d_name);
    free(names[i]);
  }
  free(names);
}

/* A path that does not exist, in a directory that does not exist: not
 * found, and nothing created (clattn_db_open creates both). */
Test(tunedb, readonly_open_creates_nothing) {
  char dir[512], path[600];
  tmp_path(dir, sizeof dir, "no-such-dir");
  snprintf(path, sizeof path, "%s/x.db", dir);
  clattn_db *db = (clattn_db *)1;
  cr_expect_eq(clattn_db_open_readonly(path, &db), CLATTN_ERR_NOT_FOUND);
  cr_expect_null(db);
  cr_expect(strstr(clattn_db_errmsg(NULL), "no database") != NULL &&
                strstr(clattn_db_errmsg(NULL), path) != NULL,
            "%s", clattn_db_errmsg(NULL));
  struct stat sb;
  cr_expect_neq(stat(dir, &sb), 0, "the directory was created");
  tmp_path(path, sizeof path, "y.db");
  cr_expect_eq(clattn_db_open_readonly(path, &db), CLATTN_ERR_NOT_FOUND);
  cr_expect_neq(stat(path, &sb), 0, "the file was created");
  cr_expect_eq(clattn_db_open_readonly(path, NULL), CLATTN_ERR_INVALID_ARG);
  /* a directory is not a database */
  cr_expect_eq(clattn_db_open_readonly(tmp_dir, &db), CLATTN_ERR_DB);
  /* a file that is not a database */
  tmp_path(path, sizeof path, "text.db");
  write_file(path, "not a database, certainly not one of clattn's\n");
  cr_expect_eq(clattn_db_open_readonly(path, &db), CLATTN_ERR_DB);
  cr_expect(strstr(clattn_db_errmsg(NULL), "not a database") != NULL, "%s",
            clattn_db_errmsg(NULL));
}

/* Read path with clattn_db_open_readonly as this process is: 0 when it
 * opens, lists its one row and refuses a write, else a code (1..4); the
 * message on stderr. */
static int read_only_checks(const char *path) {
  clattn_db *db = NULL;
  if (clattn_db_open_readonly(path, &db) != CLATTN_OK) {
    fprintf(stderr, "open: %s\n", clattn_db_errmsg(NULL));
    return 1;
  }
  clattn_tune_entry *rows = NULL;
  int n = 0, rc = 0;
  if (clattn_db_list_tune(db, NULL, NULL, NULL, sizeof *rows, &rows, &n) !=
          CLATTN_OK ||
      n != 1) {
    fprintf(stderr, "list: %d rows: %s\n", n, clattn_db_errmsg(db));
    rc = 2;
  }
  clattn_free(rows);
  clattn_tune_entry e = entry(2, "2025-01-01T00:00:00Z", 1.0);
  if (rc == 0 && clattn_db_put_tune(db, &e) != CLATTN_ERR_DB) {
    fprintf(stderr, "a write through a read-only handle did not fail\n");
    rc = 3;
  }
  clattn_db_close(db);
  return rc;
}

/* A read-only file in a read-only directory (as a user other than root,
 * for whom permissions do not hold: root's test drops to nobody): read and
 * listed, writes refused, and no file created beside it, not even
 * SQLite's -shm and -wal. */
Test(tunedb, readonly_directory_and_file) {
  char dir[512], path[600], before[1024], after[1024];
  tmp_path(dir, sizeof dir, "ro");
  cr_assert_eq(mkdir(dir, 0755), 0);
  snprintf(path, sizeof path, "%s/t.db", dir);
  make_db(path);
  dir_listing(dir, before, sizeof before);
  cr_assert_eq(chmod(path, 0444), 0);
  cr_assert_eq(chmod(dir, 0555), 0);
  cr_assert_eq(chmod(tmp_dir, 0755), 0);
  int rc;
  if (geteuid() == 0) {
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0)
      _exit(setgid(65534) != 0 || setuid(65534) != 0 ? 9
                                                     : read_only_checks(path));
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    rc = WIFEXITED(status) ? WEXITSTATUS(status) : 10;
  } else {
    rc = read_only_checks(path);
  }
  cr_expect_eq(rc, 0, "reading a read-only database failed (code %d)", rc);
  dir_listing(dir, after, sizeof after);
  cr_expect_str_eq(after, before, "files appeared in the directory");
  /* the writer's open fails there (for a user the permissions bind) */
  clattn_db *db = NULL;
  if (geteuid() != 0)
    cr_expect_eq(clattn_db_open(path, &db), CLATTN_ERR_DB);
  chmod(dir, 0755);
  chmod(path, 0644);
  unlink(path);
  rmdir(dir);
}

/* Schema versions a reader does not migrate: older and newer, named. */
Test(tunedb, readonly_schema_versions) {
  char path[512];
  tmp_path(path, sizeof path, "v.db");
  make_db(path);
  sqlite3 *h = NULL;
  clattn_db *db = NULL;
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(h, "PRAGMA user_version = 99", NULL, NULL, NULL),
               SQLITE_OK);
  cr_expect_eq(clattn_db_open_readonly(path, &db), CLATTN_ERR_DB);
  cr_expect(strstr(clattn_db_errmsg(NULL), "schema version 99, newer") != NULL,
            "%s", clattn_db_errmsg(NULL));
  cr_assert_eq(sqlite3_exec(h, "PRAGMA user_version = 3", NULL, NULL, NULL),
               SQLITE_OK);
  cr_expect_eq(clattn_db_open_readonly(path, &db), CLATTN_ERR_DB);
  cr_expect(strstr(clattn_db_errmsg(NULL), "schema version 3, older") != NULL,
            "%s", clattn_db_errmsg(NULL));
  cr_expect_eq(tdb_user_version(path), 3, "a reader migrated");
  /* 6 (before the reader's index) is read as it is */
  cr_assert_eq(sqlite3_exec(h, "PRAGMA user_version = 6", NULL, NULL, NULL),
               SQLITE_OK);
  sqlite3_close(h);
  cr_expect_eq(clattn_db_open_readonly(path, &db), CLATTN_OK, "%s",
               clattn_db_errmsg(NULL));
  clattn_db_close(db);
  cr_expect_eq(tdb_user_version(path), 6);
}

/* Another process's exclusive lock: the reader gives up while the lock
 * is held (it is released only after the read) and says the database is
 * busy; a WAL writer does not block it: it reads the committed row while
 * the writer's transaction is open. */
Test(tunedb, readonly_open_under_locks) {
  char path[512];
  tmp_path(path, sizeof path, "lock.db");
  make_db(path);
  int release;
  pid_t pid = tdb_hold_lock(path, 0, &release);
  clattn_db *db = NULL;
  clattn_status st = clattn_db_open_readonly(path, &db);
  int n = -1;
  if (st == CLATTN_OK) { /* the lock may only be met by the query */
    clattn_tune_entry *rows = NULL;
    st = clattn_db_list_tune(db, NULL, NULL, NULL, sizeof *rows, &rows, &n);
    clattn_free(rows);
  }
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", clattn_db_errmsg(db));
  clattn_db_close(db);
  tdb_release_lock(pid, release);
  cr_expect_eq(st, CLATTN_ERR_DB, "read under an exclusive lock: %d rows", n);
  cr_expect(strstr(msg, "busy") != NULL, "%s", msg);

  /* WAL (the file went back to rollback mode in the child: switch back) */
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
  clattn_db_close(db);
  pid = tdb_hold_lock(path, 1, &release);
  st = clattn_db_open_readonly(path, &db);
  cr_expect_eq(st, CLATTN_OK, "%s", clattn_db_errmsg(NULL));
  if (st == CLATTN_OK) {
    free(list(db, &n));
    cr_expect_eq(n, 1, "the committed row");
    clattn_db_close(db);
  }
  tdb_release_lock(pid, release);
}

/* ---------------------------------------------------- hostile values */

typedef struct hostile {
  const char *what;
  const char *extra; /* keys replacing the entry's (duplicates removed) */
  const char *field; /* named in the message */
  const char *want;  /* in the message */
} hostile;

/* One entry (line 7) with keys of entry_text replaced. */
static void hostile_entry(char *buf, size_t cap, const hostile *h) {
  /* the defaults, each key once; h->extra's keys replace them */
  static const char *const keys[][2] = {{"fingerprint", "\"ffff\""},
                                        {"device", "\"d\""},
                                        {"vendor", "\"v\""},
                                        {"arch", "\"a\""},
                                        {"driver", "\"1\""},
                                        {"kernel", "\"decode\""},
                                        {"shape_class", "\"c\""},
                                        {"params", "\"rows=2\""},
                                        {"status", "\"ok\""},
                                        {"median_s", "0.5"},
                                        {"spread", "0"},
                                        {"predicted_s", "0"},
                                        {"max_err", "0"},
                                        {"strategy", "\"random\""},
                                        {"message", "\"\""},
                                        {"library_version", "\"0.1.0\""},
                                        {"updated", "\"2025-01-01T00:00:00Z\""},
                                        {"tune_method", "1"}};
  snprintf(buf, cap, "    {");
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\":", keys[i][0]);
    if (strstr(h->extra, quoted))
      continue;
    snprintf(buf + strlen(buf), cap - strlen(buf), "\"%s\": %s, ", keys[i][0],
             keys[i][1]);
  }
  snprintf(buf + strlen(buf), cap - strlen(buf), "%s}", h->extra);
}

static const hostile hostiles[] = {
    {"negative median", "\"median_s\": -5", "median_s",
     "\"median_s\": -5 is not"},
    {"median past double", "\"median_s\": 1e400", "median_s",
     "\"median_s\": inf is not a finite time"},
    {"zero median of an ok row", "\"median_s\": 0", "median_s",
     "\"median_s\": 0 is not"},
    {"negative spread", "\"spread\": -1", "spread", "\"spread\""},
    {"infinite prediction", "\"predicted_s\": 1e999", "predicted_s",
     "\"predicted_s\""},
    {"negative error", "\"max_err\": -1", "max_err", "\"max_err\""},
    {"negative method", "\"tune_method\": -1", "tune_method",
     "\"tune_method\": -1"},
    {"year 9999", "\"updated\": \"9999-01-01T00:00:00Z\"", "updated",
     "lies in the future"},
    {"30 February", "\"updated\": \"2025-02-30T00:00:00Z\"", "updated",
     "not a calendar date"},
    {"hour 24", "\"updated\": \"2025-01-01T24:00:00Z\"", "updated",
     "not a calendar date"},
    {"month 13", "\"updated\": \"2025-13-01T00:00:00Z\"", "updated",
     "not a calendar date"},
    {"year 0", "\"updated\": \"0000-01-01T00:00:00Z\"", "updated",
     "not a calendar"},
    {"variant 9", "\"params\": \"variant=9 rows=3\"", "params",
     "\"params\": variant=9: the decode family's variant is 1 to 3"},
    {"negative rows", "\"params\": \"variant=1 rows=-3\"", "params",
     "rows=-3: the decode family's rows is 1 to"},
    {"a tunable of another family", "\"params\": \"scheme=2\"", "params",
     "scheme: the decode family has no such tunable"},
    {"unknown param", "\"params\": \"colour=3\"", "params", "\"params\""},
    {"keys not a multiple of 16", "\"params\": \"variant=1 keys=17\"", "params",
     "multiple of 16"},
    {"Xgemm params", "\"kernel\": \"clblast-xgemm\", \"params\": \"rows=2\"",
     "params", "NAME=count"},
    {"unknown kernel, bad params",
     "\"kernel\": \"no-such-family\", \"params\": \"rows=-1\"", "params",
     "expected name=count fields, got \"rows=-1\""},
    {"unknown status", "\"status\": \"great\"", "status",
     "\"status\": \"great\""},
    {"invalid UTF-8", "\"device\": \"GPU \xff\xfe\"", "device",
     "\"device\": invalid UTF-8"},
    {"overlong UTF-8", "\"vendor\": \"\xc0\xaf\"", "vendor",
     "\"vendor\": invalid"},
    {"UTF-16 surrogate in UTF-8", "\"arch\": \"\xed\xa0\x80\"", "arch",
     "\"arch\": invalid UTF-8"},
    {"cut UTF-8", "\"driver\": \"x\xe2\x9c\"", "driver",
     "\"driver\": invalid UTF-8"},
    {"escaped control character", "\"message\": \"a\\u0001b\"", "message",
     "\"message\": a control character"},
    {"escaped newline", "\"shape_class\": \"a\\nb\"", "shape_class",
     "\"shape_class\": a control character"},
    {"DEL", "\"strategy\": \"\x7f\"", "strategy", "\"strategy\": a control"},
};

/* Each hostile value: the file is refused with the entry and field named,
 * and the database is unchanged, byte for byte. */
Test(tunedb, hostile_values_are_refused) {
  for (size_t i = 0; i < sizeof hostiles / sizeof hostiles[0]; i++) {
    char e2[4096], text[8192], want[600];
    hostile_entry(e2, sizeof e2, &hostiles[i]);
    snprintf(text, sizeof text, "%%s%%s,\n%s\n  ]\n}\n", e2);
    snprintf(want, sizeof want, "entry 2: \"%s", hostiles[i].field);
    bad_case c = {hostiles[i].what, text, want, 7};
    expect_rejected(&c); /* the entry and field named */
    bad_case d = {hostiles[i].what, text, hostiles[i].want, 7};
    expect_rejected(&d); /* and why */
    /* byte for byte: a failed import writes nothing */
    char path[512], file[512];
    tmp_path(path, sizeof path, "bytes.db");
    clattn_db *db = NULL;
    cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
    clattn_tune_entry stored = entry(1, "2020-01-01T00:00:00Z", 1.0);
    put(db, &stored);
    clattn_db_close(db);
    char *before = read_all(path);
    cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
    char e1[1024], full[8192];
    entry_text(e1, sizeof e1, "rows=1", "");
    snprintf(full, sizeof full, text, good_head, e1);
    tmp_path(file, sizeof file, "hostile.json");
    write_file(file, full);
    cr_expect_eq(clattn_db_import(db, file, NULL, NULL, NULL),
                 CLATTN_ERR_INVALID_ARG, "%s", hostiles[i].what);
    clattn_db_close(db);
    char *after = read_all(path);
    cr_expect(strcmp(before, after) == 0 || memcmp(before, after, 4096) == 0,
              "%s: the database file changed", hostiles[i].what);
    free(before);
    free(after);
    unlink(path);
  }
}

/* clattn_db_put_tune refuses the same values, naming the field; a
 * rejection message's control characters and stray bytes are cleaned. */
Test(tunedb, put_tune_validates) {
  clattn_db *db = open_db("put.db");
  clattn_tune_entry e = entry(1, "2025-01-01T00:00:00Z", -5.0);
  cr_expect_eq(clattn_db_put_tune(db, &e), CLATTN_ERR_INVALID_ARG);
  cr_expect(strstr(clattn_db_errmsg(db), "\"median_s\": -5") != NULL, "%s",
            clattn_db_errmsg(db));
  e = entry(1, "9999-12-31T23:59:59Z", 1.0);
  cr_expect_eq(clattn_db_put_tune(db, &e), CLATTN_ERR_INVALID_ARG);
  cr_expect(strstr(clattn_db_errmsg(db), "future") != NULL, "%s",
            clattn_db_errmsg(db));
  e = entry(1, "2025-01-01T00:00:00Z", 1.0);
  SET(e.params, "variant=9");
  cr_expect_eq(clattn_db_put_tune(db, &e), CLATTN_ERR_INVALID_ARG);
  e = entry(1, "2025-01-01T00:00:00Z", 1.0);
  SET(e.device, "bad \xff byte");
  cr_expect_eq(clattn_db_put_tune(db, &e), CLATTN_ERR_INVALID_ARG);
  int n = -1;
  free(list(db, &n));
  cr_expect_eq(n, 0);
  /* a date of today (the tuner's) is accepted, as is "" (now) */
  e = entry(1, "", 1.0);
  put(db, &e);
  e = entry(2, "2025-01-01T00:00:00Z", 1.0);
  SET(e.message, "log:\nline\tcut\x01\xe2\x9c");
  SET(e.status, "failed");
  put(db, &e);
  clattn_tune_entry *rows = list(db, &n);
  cr_assert_eq(n, 2);
  for (int i = 0; i < n; i++)
    if (!strcmp(rows[i].status, "failed"))
      cr_expect_str_eq(rows[i].message, "log:\nline\tcut ??");
  clattn_free(rows);
  clattn_db_close(db);
}

/* Every export is JSON that Python reads, whatever a row written with SQL
 * directly holds (bytes that are not UTF-8, control characters, an
 * infinity); rows that fail the checks are written so that import refuses
 * them by name, never so that a reader chokes. */
Test(tunedb, export_is_json_python_reads) {
  char path[512], file[600], cmd[2048];
  tmp_path(path, sizeof path, "raw.db");
  make_db(path);
  sqlite3 *h = NULL;
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  cr_assert_eq(
      sqlite3_exec(h,
                   "INSERT INTO tuning (fingerprint, device, vendor, arch,"
                   " driver, kernel, shape_class, params, status, median_s,"
                   " spread, predicted_s, max_err, strategy, message,"
                   " library_version, updated, tune_method) VALUES ('f',"
                   " CAST(X'4750550aff20c0af20e29c' AS TEXT), 'v', 'a',"
                   " CAST(X'22005c' AS TEXT), 'decode', 'c', 'rows=1',"
                   " 'ok', 1e400, 0, 0, 0, 's', 'tab' || char(9) || 'x', '0',"
                   " '2025-01-01T00:00:00Z', 1)",
                   NULL, NULL, NULL),
      SQLITE_OK, "%s", sqlite3_errmsg(h));
  sqlite3_close(h);
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
  tmp_path(file, sizeof file, "raw.json");
  cr_assert_eq(clattn_db_export(db, file), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  char *text = read_all(file);
  cr_expect(strstr(text, "\"GPU\\u000a\\ufffd \\ufffd\\ufffd ") != NULL, "%s",
            text);
  free(text);
  /* import refuses the bad row by name, not as bad JSON */
  clattn_db *other = open_db("other.db");
  cr_expect_eq(clattn_db_import(other, file, NULL, NULL, NULL),
               CLATTN_ERR_INVALID_ARG);
  cr_expect(strstr(clattn_db_errmsg(other), "entry 1: \"device\": a control") !=
                NULL,
            "%s", clattn_db_errmsg(other));
  clattn_db_close(other);
  clattn_db_close(db);
  if (system("python3 -c 'import json' >/dev/null 2>&1") != 0) {
    cr_log_warn("no python3: the JSON is not checked by Python");
    return;
  }
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import json, sys; d = json.load(open(sys.argv[1], "
           "encoding=\"utf-8\")); assert len(d[\"entries\"]) == 2' '%s'",
           file);
  cr_expect_eq(system(cmd), 0, "python3 could not read %s", file);
}

/* The default path, for `clattn db path` without opening (or creating)
 * anything. */
Test(tunedb, default_path) {
  char buf[512], small[4];
  char *saved[3];
  const char *names[3] = {"CLATTN_DB", "XDG_DATA_HOME", "HOME"};
  for (int i = 0; i < 3; i++)
    saved[i] = getenv(names[i]) ? strdup(getenv(names[i])) : NULL;
  setenv("CLATTN_DB", "/somewhere/t.db", 1);
  cr_expect_eq(clattn_db_default_path(buf, sizeof buf), CLATTN_OK);
  cr_expect_str_eq(buf, "/somewhere/t.db");
  cr_expect_eq(clattn_db_default_path(small, sizeof small),
               CLATTN_ERR_BUFFER_TOO_SMALL);
  cr_expect_str_eq(small, "");
  unsetenv("CLATTN_DB");
  setenv("XDG_DATA_HOME", "/xdg", 1);
  cr_expect_eq(clattn_db_default_path(buf, sizeof buf), CLATTN_OK);
  cr_expect_str_eq(buf, "/xdg/clattn/tuning.db");
  unsetenv("XDG_DATA_HOME");
  setenv("HOME", "/home/u", 1);
  cr_expect_eq(clattn_db_default_path(buf, sizeof buf), CLATTN_OK);
  cr_expect_str_eq(buf, "/home/u/.local/share/clattn/tuning.db");
  unsetenv("HOME");
  cr_expect_eq(clattn_db_default_path(buf, sizeof buf), CLATTN_ERR_DB);
  cr_expect_eq(clattn_db_default_path(NULL, 5), CLATTN_ERR_INVALID_ARG);
  for (int i = 0; i < 3; i++) {
    if (saved[i])
      setenv(names[i], saved[i], 1);
    free(saved[i]);
  }
}
