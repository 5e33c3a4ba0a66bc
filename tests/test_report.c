/* test_report.c - `clattn report` as a reader checks it: databases of
 * known profiles and bench rows (written through the public API), the
 * built command ($CLATTN_CLI) run in each format, and every number of the
 * CSV and of the HTML tables (their data-v) compared exactly with the
 * figure computed here from the rows; the page's device sections and
 * roofline charts counted; escaping, merging, an empty database, errors. */
#include "clattn_tools.h"
#include "tmpdir.h"

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define DEV_A "aaaa1111"
#define DEV_B "bbbb2222"
#define NAME_A "Test <CPU> & \"one\""
#define NAME_A_HTML "Test &lt;CPU&gt; &amp; &quot;one&quot;"
#define MHA "batch=1 kv-seq=4096 heads=8 kv-heads=8 head-dim=64"
#define GQA "batch=1 kv-seq=4096 heads=8 kv-heads=2 head-dim=64"
#define MQA "batch=1 kv-seq=4096 heads=8 kv-heads=1 head-dim=64"
#define NOFLOPS "batch=8 kv-seq=2048 heads=8 kv-heads=8 head-dim=64"
#define PREFILL "batch=1 seq=512 heads=8 kv-heads=8 head-dim=64 causal=1"

static char dir[512], db1[600], db2[600], empty_db[600];

static void check(clattn_db *db, clattn_status st, const char *what) {
  cr_assert_eq(st, CLATTN_OK, "%s: %s: %s", what, clattn_status_str(st),
               clattn_db_errmsg(db));
}

static void put_row(clattn_db *db, const char *fp, const char *dev,
                    const char *family, const char *shape, const char *impl,
                    const char *run, const char *updated, double median,
                    double flops, double bytes, double pred, double roof) {
  clattn_bench_entry e = {.size = sizeof(clattn_bench_entry)};
  snprintf(e.fingerprint, sizeof e.fingerprint, "%s", fp);
  snprintf(e.device, sizeof e.device, "%s", dev);
  snprintf(e.vendor, sizeof e.vendor, "Vendor & Co");
  snprintf(e.family, sizeof e.family, "%s", family);
  snprintf(e.shape, sizeof e.shape, "%s", shape);
  snprintf(e.shape_class, sizeof e.shape_class, "class");
  snprintf(e.impl, sizeof e.impl, "%s", impl);
  snprintf(e.run, sizeof e.run, "%s", run);
  snprintf(e.updated, sizeof e.updated, "%s", updated);
  if (!strcmp(impl, "clattn")) {
    snprintf(e.params, sizeof e.params, "tile=64 \"q\"");
    snprintf(e.params_source, sizeof e.params_source, "tuned");
    snprintf(e.params_device, sizeof e.params_device, "%s", dev);
    e.predicted_s = pred;
    e.max_err = 3.0e-7;
  }
  e.median_s = median;
  e.spread = 0.03;
  e.flops = flops;
  e.bytes = bytes;
  e.roof_s = roof;
  snprintf(e.bound, sizeof e.bound, "memory");
  check(db, clattn_db_put_bench(db, &e), "put_bench");
}

static void put_profile(clattn_db *db) {
  clattn_profile p = {.size = sizeof(clattn_profile)};
  p.source = CLATTN_PROFILE_MEASURED;
  snprintf(p.fingerprint, sizeof p.fingerprint, DEV_A);
  snprintf(p.name, sizeof p.name, NAME_A);
  snprintf(p.vendor, sizeof p.vendor, "Vendor & Co");
  snprintf(p.platform, sizeof p.platform, "Portable");
  snprintf(p.driver, sizeof p.driver, "9.9");
  snprintf(p.arch, sizeof p.arch, "x86-64");
  p.is_cpu = 1;
  p.compute_units = 16;
  p.clock_mhz = 2400;
  p.bw_read_gbs = 20.5;
  p.bw_copy_gbs = 18.25;
  p.bw_triad_gbs = 19.125;
  p.fp32_gflops = 640.5;
  p.launch_us = 12.5;
  p.probe_method = 2;
  check(db, clattn_db_put_profile(db, &p), "put_profile");
}

/* A tuning row of device A: the page counts them per device. */
static void put_tune(clattn_db *db, int i, const char *status) {
  clattn_tune_entry e = {.size = sizeof(clattn_tune_entry)};
  snprintf(e.fingerprint, sizeof e.fingerprint, DEV_A);
  snprintf(e.device, sizeof e.device, NAME_A);
  snprintf(e.kernel, sizeof e.kernel, "decode");
  snprintf(e.shape_class, sizeof e.shape_class,
           "f32 k64 v64 g8 bh1 m4096 "
           "bhsd");
  snprintf(e.params, sizeof e.params, "rows=%d wg=64", i + 1);
  snprintf(e.status, sizeof e.status, "%s", status);
  e.median_s = 1e-3;
  snprintf(e.strategy, sizeof e.strategy, "exhaustive");
  snprintf(e.updated, sizeof e.updated, "2026-11-20T10:00:00Z");
  e.tune_method = clattn_tune_method("decode");
  check(db, clattn_db_put_tune(db, &e), "put_tune");
}

/* db1: device A's profile and rows (two runs of the prefill shape, a row
 * without FLOPs or bytes); db2: device B's rows, a newer run of A and two
 * tuning rows of A. */
static void make_dbs(void) {
  tt_mkdtemp(dir, sizeof dir, "report");
  snprintf(db1, sizeof db1, "%s/one.db", dir);
  snprintf(db2, sizeof db2, "%s/two.db", dir);
  snprintf(empty_db, sizeof empty_db, "%s/empty.db", dir);
  clattn_db *db;
  check(NULL, clattn_db_open(db1, &db), "open db1");
  put_profile(db);
  const char *t1 = "2026-11-20T10:00:00Z";
  put_row(db, DEV_A, NAME_A, "decode", MHA, "clattn", "r1", t1, 2.0e-3, 1.34e8,
          6.7e7, 1.7e-3, 1.5e-3);
  put_row(db, DEV_A, NAME_A, "decode", MHA, "copy", "r1", t1, 1.5e-3, 1.34e8,
          6.7e7, 0, 0);
  put_row(db, DEV_A, NAME_A, "decode", MHA, "unfused", "r1", t1, 4.25e-3,
          1.34e8, 6.7e7, 0, 0);
  put_row(db, DEV_A, NAME_A, "decode", GQA, "clattn", "r1", t1, 0.7e-3, 1.34e8,
          1.7e7, 0.45e-3, 0.4e-3);
  put_row(db, DEV_A, NAME_A, "decode", MQA, "clattn", "r1", t1, 0.35e-3, 1.34e8,
          0.9e7, 0.25e-3, 0.2e-3);
  put_row(db, DEV_A, NAME_A, "decode", NOFLOPS, "clattn", "r1", t1, 1.0e-3, 0,
          0, 0, 0);
  put_row(db, DEV_A, NAME_A, "prefill", PREFILL, "clattn", "r0",
          "2026-11-19T09:00:00Z", 9.0e-3, 1.1e9, 2.2e7, 6e-3, 5e-3);
  put_row(db, DEV_A, NAME_A, "prefill", PREFILL, "clattn", "r1", t1, 8.0e-3,
          1.1e9, 2.2e7, 6e-3, 5e-3);
  /* B's row of run r2 also here, older than db2's copy: db2's is kept */
  put_row(db, DEV_B, "Other device", "decode", MHA, "clattn", "r2",
          "2026-11-21T10:59:00Z", 1.5e-3, 1.34e8, 6.7e7, 0.9e-3, 0.8e-3);
  clattn_db_close(db);
  check(NULL, clattn_db_open(db2, &db), "open db2");
  const char *t2 = "2026-11-21T11:00:00Z";
  put_row(db, DEV_B, "Other device", "decode", MHA, "clattn", "r2", t2, 1.0e-3,
          1.34e8, 6.7e7, 0.9e-3, 0.8e-3);
  put_row(db, DEV_B, "Other device", "decode", MQA, "clattn", "r2", t2, 0.25e-3,
          1.34e8, 0.9e7, 0.2e-3, 0.1e-3);
  put_tune(db, 0, "ok");
  put_tune(db, 1, "slow");
  put_row(db, DEV_A, NAME_A, "prefill", PREFILL, "clattn", "r2", t2, 7.0e-3,
          1.1e9, 2.2e7, 6e-3, 5e-3);
  clattn_db_close(db);
  check(NULL, clattn_db_open(empty_db, &db), "open empty");
  clattn_db_close(db);
}

static void cleanup(void) { tt_rm_rf(dir); }

TestSuite(report, .init = make_dbs, .fini = cleanup);

/* ------------------------------------------------------------ helpers */

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert(f != NULL, "cannot read %s", path);
  cr_assert_eq(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  cr_assert(n >= 0);
  rewind(f);
  char *s = malloc((size_t)n + 1);
  cr_assert(s != NULL);
  cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = '\0';
  fclose(f);
  return s;
}

/* `clattn report ARGS` with stdout and stderr into files under dir; the
 * exit status. */
static int report(const char *args) {
  const char *cli = getenv("CLATTN_CLI");
  cr_assert(cli != NULL, "CLATTN_CLI (the clattn command) is not set");
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' report %s >'%s/stdout' 2>'%s/stderr'", cli,
           args, dir, dir);
  int st = system(cmd);
  cr_assert(st != -1 && WIFEXITED(st), "%s did not exit", cmd);
  return WEXITSTATUS(st);
}

static char *out_text(const char *name) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return slurp(p);
}

static int count(const char *s, const char *what) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
    n++;
  return n;
}

/* Every stored row of both databases. */
static clattn_bench_entry *all_rows(int *n) {
  clattn_bench_entry *rows = NULL;
  *n = 0;
  const char *paths[] = {db1, db2};
  for (int k = 0; k < 2; k++) {
    clattn_db *db;
    clattn_bench_entry *r;
    int m;
    check(NULL, clattn_db_open_readonly(paths[k], &db), "open");
    check(db, clattn_db_list_bench(db, NULL, NULL, sizeof *r, &r, &m), "list");
    rows = realloc(rows, (size_t)(*n + m) * sizeof *rows);
    cr_assert(rows != NULL);
    memcpy(rows + *n, r, (size_t)m * sizeof *r);
    *n += m;
    clattn_free(r);
    clattn_db_close(db);
  }
  /* a key of two files once: the newest */
  int m = 0;
  for (int i = 0; i < *n; i++) {
    int older = 0;
    for (int j = 0; j < *n && !older; j++)
      older = j != i && !strcmp(rows[i].fingerprint, rows[j].fingerprint) &&
              !strcmp(rows[i].family, rows[j].family) &&
              !strcmp(rows[i].shape, rows[j].shape) &&
              !strcmp(rows[i].impl, rows[j].impl) &&
              !strcmp(rows[i].run, rows[j].run) &&
              strcmp(rows[i].updated, rows[j].updated) < 0;
    if (!older)
      rows[m++] = rows[i];
  }
  cr_assert_eq(m, *n - 1, "the one row stored twice");
  *n = m;
  return rows;
}

static const clattn_bench_entry *find_row(const clattn_bench_entry *rows, int n,
                                          const char *fp, const char *family,
                                          const char *shape, const char *impl,
                                          const char *run) {
  for (int i = 0; i < n; i++)
    if (!strcmp(rows[i].fingerprint, fp) && !strcmp(rows[i].family, family) &&
        !strcmp(rows[i].shape, shape) && !strcmp(rows[i].impl, impl) &&
        (!run || !strcmp(rows[i].run, run)))
      return &rows[i];
  return NULL;
}

/* The newest clattn row of (fp, family, shape). */
static const clattn_bench_entry *latest(const clattn_bench_entry *rows, int n,
                                        const char *fp, const char *family,
                                        const char *shape) {
  const clattn_bench_entry *best = NULL;
  for (int i = 0; i < n; i++)
    if (!strcmp(rows[i].fingerprint, fp) && !strcmp(rows[i].family, family) &&
        !strcmp(rows[i].shape, shape) && !strcmp(rows[i].impl, "clattn") &&
        (!best || strcmp(rows[i].updated, best->updated) > 0))
      best = &rows[i];
  return best;
}

static double pos(double x) { return x > 0 ? x : NAN; }

/* The figure `key` of row r, computed as docs/REPORT.md defines it. */
static double figure(const clattn_bench_entry *r, const char *key) {
  const double t = r->median_s;
  if (!strcmp(key, "median_ms"))
    return t * 1e3;
  if (!strcmp(key, "gflops"))
    return pos(r->flops) / t / 1e9;
  if (!strcmp(key, "gbs"))
    return pos(r->bytes) / t / 1e9;
  if (!strcmp(key, "roof_pct"))
    return 100.0 * pos(r->roof_s) / t;
  if (!strcmp(key, "model_err"))
    return pos(r->predicted_s) / t - 1.0;
  if (!strcmp(key, "pred_ms"))
    return pos(r->predicted_s) * 1e3;
  if (!strcmp(key, "max_err"))
    return r->max_err;
  cr_assert_fail("unknown figure %s", key);
  return NAN;
}

static void expect_equal(double got, double want, const char *what) {
  if (isnan(want))
    cr_assert(isnan(got), "%s: %.17g where none was expected", what, got);
  else
    cr_assert(got == want, "%s: %.17g, the row gives %.17g", what, got, want);
}

/* An HTML cell's data-v after position p, NAN for a cell without one;
 * *key gets data-k's value; returns the position after the cell, NULL at
 * `end`. */
static const char *next_cell(const char *p, const char *end, char *key,
                             size_t cap, double *v) {
  const char *k = strstr(p, "data-k=\"");
  if (!k || k >= end)
    return NULL;
  k += 8;
  const char *q = strchr(k, '"');
  cr_assert(q && (size_t)(q - k) < cap);
  memcpy(key, k, (size_t)(q - k));
  key[q - k] = '\0';
  const char *close = strstr(q, ">");
  const char *dv = strstr(q, "data-v=\"");
  *v = NAN;
  if (dv && dv < close)
    *v = strtod(dv + 8, NULL);
  return close;
}

/* The section of device fp in the page ([*start, returned end)). */
static const char *section(const char *html, const char *fp,
                           const char **start) {
  char attr[128];
  snprintf(attr, sizeof attr, "data-fingerprint=\"%s\"", fp);
  *start = strstr(html, attr);
  cr_assert(*start != NULL, "no section of %s", fp);
  const char *end = strstr(*start, "</section>");
  cr_assert(end != NULL);
  return end;
}

/* ---------------------------------------------------------------- CSV */

/* Split one CSV line into fields (quotes undone) in place. */
static int csv_fields(char *line, char **f, int cap) {
  int n = 0;
  char *p = line, *w = line;
  while (n < cap) {
    f[n++] = w;
    if (*p == '"') {
      p++;
      for (;;) {
        if (*p == '"' && p[1] == '"') {
          *w++ = '"';
          p += 2;
        } else if (*p == '"') {
          p++;
          break;
        } else {
          cr_assert(*p, "unterminated quote");
          *w++ = *p++;
        }
      }
    } else {
      while (*p && *p != ',')
        *w++ = *p++;
    }
    const char c = *p;
    *w++ = '\0';
    if (c != ',')
      break;
    p++;
  }
  return n;
}

Test(report, csv_numbers_are_the_rows) {
  char args[2048];
  snprintf(args, sizeof args, "'%s' '%s' --datasheets none -o '%s/r.csv'", db1,
           db2, dir);
  cr_assert_eq(report(args), 0, "%s", out_text("stderr"));
  char *out = out_text("stdout");
  char want[700];
  snprintf(want, sizeof want, "%s/r.csv\n", dir);
  cr_assert_str_eq(out, want, "the path written is printed last");
  free(out);
  char *csv = out_text("r.csv");
  int n;
  clattn_bench_entry *rows = all_rows(&n);
  static const char *const header =
      "device,fingerprint,family,shape,impl,median_ms,gflops,gbs,roof_pct,"
      "bound,params,params_source,model_err,max_err,run,updated,latest";
  char *save, *line = strtok_r(csv, "\n", &save);
  cr_assert_str_eq(line, header);
  int lines = 0;
  while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
    char *f[32];
    cr_assert_eq(csv_fields(line, f, 32), 17, "line %d: fields", lines);
    const clattn_bench_entry *r =
        find_row(rows, n, f[1], f[2], f[3], f[4], f[14]);
    cr_assert(r != NULL, "CSV row %s %s %s %s not stored", f[1], f[2], f[3],
              f[4]);
    cr_assert_str_eq(f[0], r->device);
    cr_assert_str_eq(f[9], r->bound);
    cr_assert_str_eq(f[10], r->params);
    cr_assert_str_eq(f[11], r->params_source);
    cr_assert_str_eq(f[15], r->updated);
    static const struct {
      int col;
      const char *key;
    } nums[] = {{5, "median_ms"}, {6, "gflops"},     {7, "gbs"},
                {8, "roof_pct"},  {12, "model_err"}, {13, "max_err"}};
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
      const double got = *f[nums[k].col] ? strtod(f[nums[k].col], NULL) : NAN;
      char what[512];
      snprintf(what, sizeof what, "%s %s %s %s", r->family, r->shape, r->impl,
               nums[k].key);
      expect_equal(got, figure(r, nums[k].key), what);
    }
    const int is_latest =
        !strcmp(r->impl, "clattn")
            ? latest(rows, n, r->fingerprint, r->family, r->shape) == r
            : !strcmp(latest(rows, n, r->fingerprint, r->family, r->shape)->run,
                      r->run);
    cr_assert_eq(atoi(f[16]), is_latest, "latest of %s %s %s", r->family,
                 r->impl, r->run);
    lines++;
  }
  cr_assert_eq(lines, n, "one line per stored row");
  free(rows);
  free(csv);
}

/* ---------------------------------------------------------------- HTML */

/* Every number of device fp's family tables against its rows. */
static void check_family_tables(const char *html, const char *fp,
                                const clattn_bench_entry *rows, int n) {
  const char *start, *end = section(html, fp, &start);
  int checked = 0;
  for (const char *p = start; (p = strstr(p, "<tr data-family=\"")) && p < end;
       p++) {
    char family[64], shape[300];
    cr_assert_eq(sscanf(p,
                        "<tr data-family=\"%63[^\"]\" data-shape=\"%299[^\"]",
                        family, shape),
                 2);
    const clattn_bench_entry *r = latest(rows, n, fp, family, shape);
    cr_assert(r != NULL, "a table row of %s %s without a stored row", family,
              shape);
    const char *tr_end = strstr(p, "</tr>");
    char key[96], what[512];
    double v;
    int cells = 0;
    for (const char *c = p; (c = next_cell(c, tr_end, key, sizeof key, &v));
         cells++) {
      snprintf(what, sizeof what, "%s %s %s", family, shape, key);
      if (!strncmp(key, "base_ms.", 8) || !strncmp(key, "base_ratio.", 11)) {
        const char *impl = strchr(key, '.') + 1;
        const clattn_bench_entry *b =
            find_row(rows, n, fp, family, shape, impl, r->run);
        const double want = !b              ? NAN
                            : key[5] == 'm' ? b->median_s * 1e3
                                            : b->median_s / r->median_s;
        expect_equal(v, want, what);
      } else {
        expect_equal(v, figure(r, key), what);
      }
      checked++;
    }
    cr_assert_geq(cells, 7, "%s %s: the table's number cells", family, shape);
  }
  cr_assert_gt(checked, 0, "no numbers in %s's tables", fp);
}

Test(report, html_numbers_are_the_rows) {
  char args[2048];
  snprintf(args, sizeof args, "'%s' '%s' --datasheets none -o '%s/r.html'", db1,
           db2, dir);
  cr_assert_eq(report(args), 0, "%s", out_text("stderr"));
  char *html = out_text("r.html");
  int n;
  clattn_bench_entry *rows = all_rows(&n);
  cr_assert_eq(count(html, "<section class=\"device\""), 2);
  cr_assert_eq(count(html, "data-kind=\"measured\""), 2);
  cr_assert_eq(count(html, "<svg class=\"roofline\""), 2);
  const char *fps[] = {DEV_A, DEV_B};
  for (int k = 0; k < 2; k++) {
    const char *start, *end = section(html, fps[k], &start);
    int svgs = 0;
    for (const char *p = start;
         (p = strstr(p, "<svg class=\"roofline\"")) && p < end; p++)
      svgs++;
    cr_assert_eq(svgs, 1, "one roofline chart in %s's section", fps[k]);
    check_family_tables(html, fps[k], rows, n);
  }
  /* the runs: each one's row count */
  const char *runs = strstr(html, "<table class=\"runs\">");
  cr_assert(runs != NULL);
  const char *runs_end = strstr(runs, "</table>");
  static const char *const run_names[] = {"r0", "r1", "r2"};
  for (int k = 0; k < 3; k++) {
    char cell[64];
    snprintf(cell, sizeof cell, "<td class=\"t\">%s</td>", run_names[k]);
    const char *tr = strstr(runs, cell);
    cr_assert(tr && tr < runs_end, "run %s not listed", run_names[k]);
    int stored = 0;
    for (int i = 0; i < n; i++)
      stored += !strcmp(rows[i].run, run_names[k]);
    char key[32];
    double v;
    cr_assert(next_cell(tr, strstr(tr, "</tr>"), key, sizeof key, &v));
    cr_assert_str_eq(key, "rows");
    expect_equal(v, stored, run_names[k]);
  }
  /* A's tuning rows, read from the other database than its profile */
  cr_assert(strstr(html, "2 tuning rows in the databases (1 ok)") != NULL);
  /* the newest prefill run (r2, from the second database) is shown */
  cr_assert(strstr(html, ">r2</td>") != NULL);
  /* device A's measured ceilings */
  const char *start, *end = section(html, DEV_A, &start);
  static const struct {
    const char *key;
    double v;
  } prof[] = {
      {"measured.bw_read_gbs", 20.5},    {"measured.bw_copy_gbs", 18.25},
      {"measured.bw_triad_gbs", 19.125}, {"measured.fp32_gflops", 640.5},
      {"measured.launch_us", 12.5},      {"measured.compute_units", 16},
      {"measured.clock_mhz", 2400}};
  for (size_t k = 0; k < sizeof prof / sizeof prof[0]; k++) {
    char attr[128];
    snprintf(attr, sizeof attr, "data-k=\"%s\" data-v=\"", prof[k].key);
    const char *p = strstr(start, attr);
    cr_assert(p && p < end, "no %s", prof[k].key);
    cr_assert_eq(strtod(p + strlen(attr), NULL), prof[k].v, "%s", prof[k].key);
  }
  /* across devices: B's time and its speed-up over A (the first) */
  const char *cross = strstr(html, "<table class=\"cross\">");
  cr_assert(cross != NULL, "no table across devices");
  const char *tr = strstr(cross, "data-shape=\"" MHA "\"");
  cr_assert(tr != NULL);
  const clattn_bench_entry *a = latest(rows, n, DEV_A, "decode", MHA),
                           *b = latest(rows, n, DEV_B, "decode", MHA);
  char key[96];
  double v[3];
  const char *c = tr;
  for (int k = 0; k < 3; k++)
    cr_assert((c = next_cell(c, strstr(tr, "</tr>"), key, sizeof key, &v[k])) !=
              NULL);
  /* devices in order of name: B ("Other device") first */
  expect_equal(v[0], b->median_s * 1e3, "cross B");
  expect_equal(v[1], a->median_s * 1e3, "cross A");
  expect_equal(v[2], b->median_s / a->median_s, "cross speed-up");
  /* kv-heads speed-ups, found from the shapes alone */
  const char *kv = strstr(html, "<table class=\"kv-speedups\">");
  cr_assert(kv != NULL, "no kv-heads speed-ups");
  cr_assert_eq(count(kv, "<tr data-family="), 3, "A: GQA, MQA; B: MQA");
  const char *mqa = kv;
  do {
    mqa = strstr(mqa + 1, "data-shape=\"" MQA "\"");
    cr_assert(mqa != NULL, "no MQA row of A");
  } while (strncmp(strchr(strstr(mqa, "<td"), '>') + 1, NAME_A_HTML,
                   strlen(NAME_A_HTML)));
  const clattn_bench_entry *q = latest(rows, n, DEV_A, "decode", MQA);
  c = next_cell(mqa, strstr(mqa, "</tr>"), key, sizeof key, &v[0]);
  cr_assert_str_eq(key, "kv_speedup");
  next_cell(c, strstr(mqa, "</tr>"), key, sizeof key, &v[1]);
  expect_equal(v[0], a->median_s / q->median_s, "measured kv speed-up");
  expect_equal(v[1], a->predicted_s / q->predicted_s, "predicted speed-up");
  /* no coordinate of the charts is NaN or infinite */
  cr_assert(!strstr(html, "\"nan") && !strstr(html, "\"-nan") &&
            !strstr(html, "\"inf") && !strstr(html, "\"-inf") &&
            !strstr(html, ",nan") && !strstr(html, ",-nan"));
  cr_assert(strstr(html, "1 kernel not plotted") != NULL);
  free(rows);
  free(html);
}

Test(report, datasheet_devices_are_predicted) {
  char args[2048];
  snprintf(args, sizeof args, "'%s' -o '%s/d.html'", db1, dir);
  cr_assert_eq(report(args), 0, "%s", out_text("stderr"));
  char *html = out_text("d.html");
  const int sheets = clattn_datasheet_count();
  cr_assert_gt(sheets, 0);
  cr_assert_eq(count(html, "<section class=\"device\""), 2 + sheets);
  cr_assert_eq(count(html, "data-kind=\"datasheet\""), sheets);
  cr_assert_eq(count(html, "<svg class=\"roofline\""), 2 + sheets);
  /* the first datasheet's predictions are the model's */
  clattn_profile p = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_datasheet(0, &p), CLATTN_OK);
  const char *sec = strstr(html, "id=\"sheet0\"");
  cr_assert(sec != NULL);
  const char *end = strstr(sec, "</section>");
  const char *shapes[][2] = {
      {"decode", MHA}, {"decode", MQA}, {"prefill", PREFILL}};
  for (int k = 0; k < 3; k++) {
    clattn_prediction pr = {.size = sizeof(clattn_prediction)};
    cr_assert_eq(clattn_model_shape(shapes[k][0], shapes[k][1], NULL, &p, &pr),
                 CLATTN_OK, "%s", pr.errmsg);
    char attr[400];
    snprintf(attr, sizeof attr, "data-shape=\"%s\"", shapes[k][1]);
    const char *tr = strstr(sec, attr);
    cr_assert(tr && tr < end, "no prediction of %s", shapes[k][1]);
    char key[64];
    double v;
    next_cell(tr, strstr(tr, "</tr>"), key, sizeof key, &v);
    cr_assert_str_eq(key, "pred_ms");
    expect_equal(v, pr.total.t_pred * 1e3, shapes[k][1]);
  }
  free(html);
  /* only the named ones */
  snprintf(args, sizeof args, "'%s' --datasheets '%s' -o '%s/d.html'", db1,
           p.name, dir);
  cr_assert_eq(report(args), 0, "%s", out_text("stderr"));
  html = out_text("d.html");
  cr_assert_geq(count(html, "data-kind=\"datasheet\""), 1);
  cr_assert_lt(count(html, "data-kind=\"datasheet\""), sheets + (sheets == 1));
  free(html);
}

/* A database without bench rows and one datasheet GPU: its section
 * predicts every registered family's bench shapes (the model's time, or
 * its refusal named), the families in the registry's order. */
Test(report, datasheet_without_bench_rows_predicts_every_family) {
  char args[2048];
  clattn_profile p = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_datasheet_find("A100", &p), CLATTN_OK);
  snprintf(args, sizeof args, "'%s' --datasheets A100 -o '%s/s.html'", empty_db,
           dir);
  cr_assert_eq(report(args), 0, "%s", out_text("stderr"));
  char *html = out_text("s.html");
  cr_assert_eq(count(html, "data-kind=\"datasheet\""), 1);
  const char *sec = strstr(html, "id=\"sheet0\"");
  cr_assert(sec != NULL);
  const char *end = strstr(sec, "</section>");
  cr_assert(end != NULL);
  const char *previous = sec;
  int families = 0;
  for (int i = 0; i < clattn_family_count(); i++) {
    const char *family = clattn_family_name(i), *shape;
    const char *first = NULL;
    for (int j = 0; (shape = clattn_family_bench_shape(i, j)) != NULL; j++) {
      char attr[400];
      snprintf(attr, sizeof attr, "<tr data-family=\"%s\" data-shape=\"%s\">",
               family, shape);
      const char *tr = strstr(sec, attr);
      cr_assert(tr && tr < end, "no prediction of %s %s", family, shape);
      first = first && first < tr ? first : tr;
      const char *row_end = strstr(tr, "</tr>");
      clattn_prediction pr = {.size = sizeof(clattn_prediction)};
      const clattn_status st = clattn_model_shape(family, shape, NULL, &p, &pr);
      char key[64];
      double v;
      next_cell(tr, row_end, key, sizeof key, &v);
      cr_assert_str_eq(key, "pred_ms");
      if (st == CLATTN_OK && pr.total.t_pred > 0) {
        cr_expect(v > 0, "%s %s: predicted %g ms", family, shape, v);
        expect_equal(v, pr.total.t_pred * 1e3, shape);
      } else {
        const char *why = strstr(tr, pr.errmsg);
        cr_expect(pr.errmsg[0] && why && why < row_end,
                  "%s %s: the model's refusal (%s) is not named", family, shape,
                  pr.errmsg);
      }
    }
    if (first == NULL)
      continue; /* a family without bench shapes */
    cr_expect(first > previous, "%s before the family registered before it",
              family);
    previous = first;
    families++;
  }
  cr_assert_gt(families, 0);
  free(html);
}

/* ------------------------------------------------------------ escaping */

Test(report, text_is_escaped_in_every_format) {
  char args[2048];
  const char *ext[] = {"html", "md", "csv", "json"};
  const char *want[] = {NAME_A_HTML, "Test &lt;CPU&gt; &amp; \"one\"",
                        "\"Test <CPU> & \"\"one\"\"\"",
                        "\"Test <CPU> & \\\"one\\\"\""};
  for (int k = 0; k < 4; k++) {
    snprintf(args, sizeof args, "'%s' --datasheets none -o '%s/e.%s'", db1, dir,
             ext[k]);
    cr_assert_eq(report(args), 0, "%s", out_text("stderr"));
    char name[16];
    snprintf(name, sizeof name, "e.%s", ext[k]);
    char *s = out_text(name);
    cr_assert(strstr(s, want[k]) != NULL, "%s: no %s", ext[k], want[k]);
    if (k != 2 && k != 3)
      cr_assert(strstr(s, "<CPU>") == NULL, "%s: raw <CPU>", ext[k]);
    if (k == 3)
      cr_assert(!strncmp(s, "{\"clattn_report\": 1", 19), "JSON by .json");
    free(s);
  }
}

/* ------------------------------------------------- untrusted text */

/* Every output checked by tests/report_check.py-like rules written here:
 * strict UTF-8, no control character but the newline, JSON that Python's
 * json.load reads, Markdown tables with one cell count per table. */
static const char check_py[] =
    "import json, re, sys\n"
    "kind, path = sys.argv[1], sys.argv[2]\n"
    "text = open(path, 'rb').read().decode('utf-8')\n"
    "bad = [hex(ord(c)) for c in text\n"
    "       if (ord(c) < 0x20 and c != '\\n') or 0x7f <= ord(c) < 0xa0]\n"
    "if bad: sys.exit('%s: control characters %s' % (path, bad[:8]))\n"
    "if kind == 'json': json.loads(text)\n"
    "lines = text.split('\\n') if kind == 'md' else []\n"
    "i = tables = 0\n"
    "while i < len(lines):\n"
    "    block = []\n"
    "    while i < len(lines) and lines[i].startswith('|'):\n"
    "        block.append(lines[i]); i += 1\n"
    "    i += not block\n"
    "    if not block: continue\n"
    "    tables += 1\n"
    "    cells = [len(re.findall(r'(?<!\\\\)\\|', l)) for l in block]\n"
    "    if len(set(cells)) != 1 or len(block) < 2 or \\\n"
    "       not re.fullmatch(r'\\|(-+:?\\|)+', block[1]):\n"
    "        sys.exit('%s: a table of %s cells: %s' % (path, cells, "
    "block[0]))\n"
    "if kind == 'md' and tables < 3: sys.exit('%s: %d tables' % (path, "
    "tables))\n";

static void check_output(const char *kind, const char *name) {
  char py[700], cmd[2200];
  snprintf(py, sizeof py, "%s/check.py", dir);
  FILE *f = fopen(py, "w");
  cr_assert(f != NULL);
  fputs(check_py, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "python3 '%s' %s '%s/%s' 2>'%s/check.err'", py,
           kind, dir, name, dir);
  const int st = system(cmd);
  char *err = out_text("check.err");
  cr_assert(st == 0, "%s %s: %s", kind, name, err);
  free(err);
}

static void sql(sqlite3 *h, const char *q) {
  char *err = NULL;
  cr_assert_eq(sqlite3_exec(h, q, NULL, NULL, &err), SQLITE_OK, "%s: %s", q,
               err ? err : "");
}

/* A database from another machine holds what its writer put there: text
 * set behind the library's checks (terminal escapes, C1 controls, bytes
 * that are not UTF-8, a name longer than its field cut mid-character,
 * spreadsheet formulas).  Every format stays valid and inert, on two
 * devices with the datasheets beside them. */
Test(report, untrusted_text_is_inert) {
  char path[700], args[2048];
  snprintf(path, sizeof path, "%s/hostile.db", dir);
  clattn_db *db;
  check(NULL, clattn_db_open(path, &db), "open hostile");
  const char *t = "2026-11-20T10:00:00Z";
  put_row(db, DEV_A, NAME_A, "decode", MHA, "clattn", "r1", t, 2.0e-3, 1.34e8,
          6.7e7, 1.7e-3, 1.5e-3);
  put_row(db, DEV_B, "Other device", "decode", MHA, "clattn", "r1", t, 1.0e-3,
          1.34e8, 6.7e7, 0.9e-3, 0.8e-3);
  put_tune(db, 0, "ok");
  clattn_db_close(db);
  sqlite3 *h = NULL;
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  /* 63 two-byte characters after an ESC sequence: cut at 127 bytes */
  char name[300] = "\x1b]0;pwned\x07\x1b[2J";
  for (int k = 0; k < 63; k++)
    strcat(name, "\xc3\xa9");
  char q[1024];
  snprintf(q, sizeof q,
           "UPDATE bench SET device = '%s' WHERE fingerprint = '" DEV_A "'",
           name);
  sql(h, q);
  sql(h, "UPDATE tuning SET device = char(27) || '[31mred', params = "
         "'rows=1 ' || char(155) || '2J' WHERE id = (SELECT min(id) FROM "
         "tuning)");
  sql(h,
      "UPDATE bench SET params = '=1+2', bound = '-2+3', params_source = "
      "'+cmd', run = '@SUM(A1)', impl = 'clattn', vendor = "
      "CAST(X'fffe41' AS TEXT) || char(127) WHERE fingerprint = '" DEV_B "'");
  sql(h, "UPDATE bench SET params = CAST(X'74696c653dc2' AS TEXT) WHERE "
         "fingerprint = '" DEV_A "'");
  sqlite3_close(h);
  static const struct {
    const char *ext, *kind;
  } outs[] = {
      {"html", "text"}, {"md", "md"}, {"csv", "text"}, {"json", "json"}};
  for (int k = 0; k < 4; k++) {
    snprintf(args, sizeof args, "'%s' -o '%s/h.%s'", path, dir, outs[k].ext);
    cr_assert_eq(report(args), 0, "%s", out_text("stderr"));
    char name_out[16];
    snprintf(name_out, sizeof name_out, "h.%s", outs[k].ext);
    check_output(outs[k].kind, name_out);
  }
  /* to the terminal: the same bytes */
  snprintf(args, sizeof args, "'%s' --markdown", path);
  cr_assert_eq(report(args), 0, "%s", out_text("stderr"));
  check_output("md", "stdout");
  /* the CSV's formulas are text, its numbers numbers */
  char *csv = out_text("h.csv");
  char *save, *line = strtok_r(csv, "\n", &save);
  int seen = 0;
  while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
    char *f[32];
    cr_assert_eq(csv_fields(line, f, 32), 17);
    if (strcmp(f[1], DEV_B) != 0)
      continue;
    cr_expect_str_eq(f[9], "'-2+3");
    cr_expect_str_eq(f[10], "'=1+2");
    cr_expect_str_eq(f[11], "'+cmd");
    cr_expect_str_eq(f[14], "'@SUM(A1)");
    cr_expect(f[12][0] == '-' && strtod(f[12], NULL) < 0,
              "a negative model error stays a number: %s", f[12]);
    seen++;
  }
  cr_assert_eq(seen, 1, "device B's row");
  free(csv);
  /* db list's table on the terminal */
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "'%s' db list --all-devices --db '%s' >'%s/list' 2>'%s/stderr'",
           getenv("CLATTN_CLI"), path, dir, dir);
  cr_assert_eq(system(cmd), 0, "%s", out_text("stderr"));
  check_output("text", "list");
  char *list = out_text("list");
  cr_assert(strstr(list, "red") != NULL, "the row is listed: %s", list);
  free(list);
  snprintf(cmd, sizeof cmd,
           "'%s' db list --all-devices --json --db '%s' >'%s/list.json' "
           "2>'%s/stderr'",
           getenv("CLATTN_CLI"), path, dir, dir);
  cr_assert_eq(system(cmd), 0, "%s", out_text("stderr"));
  check_output("json", "list.json");
}

/* -------------------------------------------------- empty and errors */

Test(report, empty_database_is_a_valid_page) {
  char args[2048];
  snprintf(args, sizeof args, "'%s' --datasheets none --html", empty_db);
  cr_assert_eq(report(args), 0, "%s", out_text("stderr"));
  char *html = out_text("stdout");
  cr_assert(strstr(html, "<!DOCTYPE html>") == html);
  cr_assert(strstr(html, "no bench rows") != NULL);
  cr_assert(strstr(html, "</body></html>") != NULL);
  cr_assert_eq(count(html, "<section class=\"device\""), 0);
  free(html);
  snprintf(args, sizeof args, "'%s' --csv", empty_db);
  cr_assert_eq(report(args), 0, "%s", out_text("stderr"));
  char *csv = out_text("stdout");
  cr_assert_eq(count(csv, "\n"), 1, "the header alone");
  free(csv);
}

Test(report, errors_are_clear) {
  char args[2048], bad[700];
  snprintf(args, sizeof args, "'%s/missing.db'", dir);
  cr_assert_eq(report(args), 1);
  char *err = out_text("stderr");
  cr_assert(strstr(err, "missing.db") && strstr(err, "no such file"), "%s",
            err);
  free(err);
  snprintf(bad, sizeof bad, "%s/not.db", dir);
  FILE *f = fopen(bad, "w");
  cr_assert(f != NULL);
  fputs("this is not a database, only text, long enough for SQLite to look "
        "at its header and refuse it as a database file\n",
        f);
  fclose(f);
  snprintf(args, sizeof args, "'%s'", bad);
  cr_assert_eq(report(args), 1);
  err = out_text("stderr");
  cr_assert(strstr(err, "not.db") != NULL, "%s", err);
  free(err);
  snprintf(args, sizeof args, "'%s' -o '%s/no/such/dir/r.html'", db1, dir);
  cr_assert_eq(report(args), 1);
  err = out_text("stderr");
  cr_assert(strstr(err, "cannot write") != NULL, "%s", err);
  free(err);
  cr_assert_eq(report(""), 2, "no DB");
  snprintf(args, sizeof args, "'%s' --csv --json", db1);
  cr_assert_eq(report(args), 2, "two formats");
  snprintf(args, sizeof args, "'%s' --bogus", db1);
  cr_assert_eq(report(args), 2, "an unknown option");
  snprintf(args, sizeof args, "'%s' --datasheets no-such-gpu-xyz", db1);
  cr_assert_eq(report(args), 2, "an unknown datasheet");
}
