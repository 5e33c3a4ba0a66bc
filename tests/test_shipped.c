/* test_shipped.c - the tuning data shipped with the library
 * (clattn_shipped_*, $CLATTN_SHIPPED) as a tier of the parameter choice
 * and of CLBlast's Xgemm parameters, and the export formats
 * (clattn_db_export_as: shipped, T4).  The shipped files are written at
 * run time from this device's reported vendor and arch, so the test holds
 * on any CPU.  Criterion runs each test in its own process: each sets
 * $CLATTN_SHIPPED before the library first reads it. */
#define _DEFAULT_SOURCE /* setenv, mkdtemp */
#include "base/cpu_isa.h"
#include "tmpdir.h"
#include "util.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp_dir[256];

static void tmp_setup(void) { tt_mkdtemp(tmp_dir, sizeof tmp_dir, "shipped"); }

static void tmp_teardown(void) { tt_rm_rf(tmp_dir); }

TestSuite(shipped, .init = tmp_setup, .fini = tmp_teardown);

/* The prefill call the tests explain, and its shape class. */
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
#define SHIPPED_PARAMS "variant=1 rows=2 keys=16 wg=0 splits=0"
/* an Xgemm configuration every OpenCL CPU device runs (no local memory,
 * 256 work-items) */
#define XGEMM_PARAMS                                                           \
  "GEMMK=0 KREG=1 KWG=16 KWI=2 MDIMA=16 MDIMC=16 MWG=128 NDIMB=16 NDIMC=16 "   \
  "NWG=128 SA=0 SB=0 STRM=0 STRN=0 VWM=4 VWN=4"

static clattn_profile reported(void) {
  clattn_ctx *ctx = tu_ctx();
  clattn_profile p = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_profile_reported(ctx, &p), CLATTN_OK);
  clattn_ctx_destroy(ctx);
  return p;
}

/* An ok row of kernel for class on a device of vendor and arch. */
static clattn_tune_entry row(const char *fp, const char *vendor,
                             const char *arch, const char *kernel,
                             const char *cls, const char *params, double t) {
  clattn_tune_entry e = {.size = sizeof(clattn_tune_entry)};
  snprintf(e.fingerprint, sizeof e.fingerprint, "%s", fp);
  snprintf(e.device, sizeof e.device, "shipped %s %s", vendor, arch);
  snprintf(e.vendor, sizeof e.vendor, "%s", vendor);
  snprintf(e.arch, sizeof e.arch, "%s", arch);
  snprintf(e.kernel, sizeof e.kernel, "%s", kernel);
  snprintf(e.shape_class, sizeof e.shape_class, "%s", cls);
  snprintf(e.params, sizeof e.params, "%s", params);
  snprintf(e.status, sizeof e.status, "ok");
  snprintf(e.strategy, sizeof e.strategy, "test");
  snprintf(e.updated, sizeof e.updated, "2025-06-01T00:00:00Z");
  e.median_s = t;
  e.tune_method = clattn_tune_method(kernel);
  return e;
}

/* Rows as a file in clattn_db_export's format; returns its path. */
static const char *write_shipped(const char *name, const clattn_tune_entry *e,
                                 int n) {
  static char path[512];
  char line[16384];
  snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
  FILE *f = fopen(path, "w");
  cr_assert(f != NULL);
  fprintf(f, "{\"clattn_tuning\": 1, \"entries\": [");
  for (int i = 0; i < n; i++) {
    clattn_tune_entry_json(&e[i], line, sizeof line);
    fprintf(f, "%s\n%s", i ? "," : "", line);
  }
  fprintf(f, "]}\n");
  cr_assert_eq(fclose(f), 0);
  return path;
}

/* Use path as the shipped data (before the library first reads it). */
static void use_shipped(const char *path) {
  cr_assert_eq(setenv("CLATTN_SHIPPED", path, 1), 0);
}

/* A context whose tuning database is path (need not exist). */
static clattn_ctx *ctx_with_db(const char *path) {
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  o.tuning_db = path;
  clattn_ctx *ctx = NULL;
  cr_assert_eq(clattn_ctx_create(&o, &ctx), CLATTN_OK, "%s",
               clattn_ctx_errmsg(NULL));
  return ctx;
}

static clattn_choice explain_with(const char *db_path) {
  clattn_ctx *ctx = ctx_with_db(db_path);
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  cr_assert_eq(clattn_explain_attention(ctx, &desc, &ch), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  clattn_ctx_destroy(ctx);
  return ch;
}

static const char *no_db(void) {
  static char path[512];
  snprintf(path, sizeof path, "%s/none.db", tmp_dir);
  return path;
}

/* The shipped row of this device's vendor and arch: used, with its
 * params, as "shipped", before the model and the default. */
Test(shipped, row_of_this_vendor_and_arch_is_used) {
  const clattn_profile p = reported();
  clattn_tune_entry e =
      row("f0", p.vendor, p.arch, "prefill", CLS, SHIPPED_PARAMS, 2e-3);
  use_shipped(write_shipped("one.json", &e, 1));
  cr_assert_eq(clattn_shipped_count(), 1);
  clattn_tune_entry got = {.size = sizeof(clattn_tune_entry)};
  cr_assert_eq(clattn_shipped_row(0, &got), CLATTN_OK);
  cr_expect_str_eq(got.params, SHIPPED_PARAMS);
  cr_expect_eq(clattn_shipped_row(1, &got), CLATTN_ERR_NOT_FOUND);
  cr_expect_eq(clattn_shipped_row(-1, &got), CLATTN_ERR_NOT_FOUND);
  if (!p.arch[0])
    cr_skip_test("the device reports no arch: no shipped row matches it");
  clattn_choice ch = explain_with(no_db());
  cr_expect_eq(ch.source, CLATTN_CHOICE_SHIPPED, "%s", ch.why);
  cr_expect_str_eq(clattn_choice_source_str(ch.source), "shipped");
  cr_expect_eq(tu_params(ch.params).rows, 2, "%s", ch.why);
  cr_expect_eq(tu_params(ch.params).keys, 16, "%s", ch.why);
  cr_expect_str_eq(ch.entry_device, e.device);
  cr_expect(strstr(ch.why, "shipped data: ") != NULL, "%s", ch.why);
  cr_expect(strstr(ch.why, p.arch) != NULL, "%s", ch.why);
}

/* The nearest shipped class when the exact one is absent. */
Test(shipped, nearest_class) {
  const clattn_profile p = reported();
  if (!p.arch[0])
    cr_skip_test("the device reports no arch");
  clattn_tune_entry e =
      row("f0", p.vendor, p.arch, "prefill", "f32 k32 v32 g2 bh2 n128 m128 c1",
          SHIPPED_PARAMS, 2e-3);
  use_shipped(write_shipped("near.json", &e, 1));
  clattn_choice ch = explain_with(no_db());
  cr_expect_eq(ch.source, CLATTN_CHOICE_SHIPPED, "%s", ch.why);
  cr_expect_str_eq(ch.entry_class, e.shape_class);
  cr_expect(strstr(ch.why, "nearest") != NULL, "%s", ch.why);
}

/* The user's own row of the class wins over the shipped one. */
Test(shipped, user_row_wins) {
  const clattn_profile p = reported();
  clattn_tune_entry e =
      row("f0", p.vendor, p.arch, "prefill", CLS, SHIPPED_PARAMS, 1e-6);
  use_shipped(write_shipped("one.json", &e, 1));
  char path[512];
  snprintf(path, sizeof path, "%s/user.db", tmp_dir);
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
  clattn_tune_entry mine = row(p.fingerprint, p.vendor, p.arch, "prefill", CLS,
                               "variant=1 rows=4 keys=32 wg=0 splits=0", 1e-3);
  cr_assert_eq(clattn_db_put_tune(db, &mine), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  clattn_db_close(db);
  clattn_choice ch = explain_with(path);
  cr_expect_eq(ch.source, CLATTN_CHOICE_TUNED, "%s", ch.why);
  cr_expect_eq(tu_params(ch.params).rows, 4);
  cr_expect_eq(tu_params(ch.params).keys, 32);
}

/* Caller params win over the shipped row. */
Test(shipped, caller_params_win) {
  const clattn_profile p = reported();
  clattn_tune_entry e =
      row("f0", p.vendor, p.arch, "prefill", CLS, SHIPPED_PARAMS, 1e-3);
  use_shipped(write_shipped("one.json", &e, 1));
  clattn_ctx *ctx = ctx_with_db(no_db());
  clattn_params mine = {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 32};
  clattn_attn_desc d = desc;
  d.params = &mine;
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  cr_assert_eq(clattn_explain_attention(ctx, &d, &ch), CLATTN_OK);
  cr_expect_eq(ch.source, CLATTN_CHOICE_CALLER);
  cr_assert_eq(clattn_ctx_set_params(ctx, "prefill: rows=4 keys=32"),
               CLATTN_OK);
  cr_assert_eq(clattn_explain_attention(ctx, &desc, &ch), CLATTN_OK);
  cr_expect_eq(ch.source, CLATTN_CHOICE_OVERRIDE);
  clattn_ctx_destroy(ctx);
}

/* The projection family (its own GEMM kernel or CLBlast's) goes through
 * the choice, and so takes the shipped tier too. */
Test(shipped, projection_family) {
  const clattn_profile p = reported();
  if (!p.arch[0])
    cr_skip_test("the device reports no arch");
  clattn_tune_entry e =
      row("f0", p.vendor, p.arch, "projection", "f32 m64 n64 in64",
          "variant=1 rows=4 keys=32 wg=0 splits=16 prefetch=0 scheme=1", 1e-5);
  use_shipped(write_shipped("proj.json", &e, 1));
  clattn_ctx *ctx = ctx_with_db(no_db());
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  cr_assert_eq(
      clattn_explain_shape(ctx, "projection", "m=64 n=64 k=64", NULL, &ch),
      CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  cr_expect_eq(ch.source, CLATTN_CHOICE_SHIPPED, "%s", ch.why);
  cr_expect_eq(tu_params(ch.params).scheme, 1, "%s", ch.why);
  clattn_ctx_destroy(ctx);
}

/* A row of another vendor and arch is not used. */
Test(shipped, other_vendor_and_arch_not_used) {
  clattn_tune_entry e = row("f0", "Some GPU Vendor", "gfx1100", "prefill", CLS,
                            SHIPPED_PARAMS, 1e-3);
  use_shipped(write_shipped("gpu.json", &e, 1));
  cr_assert_eq(clattn_shipped_count(), 1);
  clattn_choice ch = explain_with(no_db());
  cr_expect_neq(ch.source, CLATTN_CHOICE_SHIPPED, "%s", ch.why);
  cr_expect(strstr(ch.why, "shipped data: no prefill entry") != NULL, "%s",
            ch.why);
}

/* A CPU: a row of another CPU arch of the same vector ISA class is used;
 * one of another class is not. */
Test(shipped, cpu_of_the_same_isa_class) {
  const clattn_profile p = reported();
  if (!p.is_cpu)
    cr_skip_test("the device is not a CPU");
  const char *cls = clattn__cpu_isa_class(p.arch);
  if (cls == NULL)
    cls = "other";
  /* an arch of the same class, and one of another, neither this one */
  const char *same = !strcmp(cls, "avx512") ? "icelake-server"
                     : !strcmp(cls, "avx2") ? "haswell"
                                            : "x86-64";
  if (!strcmp(same, p.arch))
    same = !strcmp(cls, "avx512") ? "znver4"
           : !strcmp(cls, "avx2") ? "znver3"
                                  : "nehalem";
  const char *other = !strcmp(cls, "avx2") ? "sapphirerapids" : "broadwell";
  cr_assert_str_eq(clattn__cpu_isa_class(same), cls);
  cr_assert_str_neq(clattn__cpu_isa_class(other), cls);
  clattn_tune_entry e[2] = {row("f1", "Another CPU Vendor", same, "prefill",
                                CLS, SHIPPED_PARAMS, 2e-3),
                            row("f2", p.vendor, other, "prefill", CLS,
                                "variant=1 rows=4 keys=32 wg=0 splits=0",
                                1e-3)};
  use_shipped(write_shipped("isa.json", e, 2));
  clattn_choice ch = explain_with(no_db());
  cr_expect_eq(ch.source, CLATTN_CHOICE_SHIPPED, "%s", ch.why);
  cr_expect_str_eq(ch.entry_device, e[0].device, "%s", ch.why);
  cr_expect_eq(tu_params(ch.params).rows, 2, "%s", ch.why);
  cr_expect(strstr(ch.why, "same vector ISA") != NULL, "%s", ch.why);
}

/* The ISA table: a few names of each class, and GPU names are none. */
Test(shipped, isa_classes) {
  cr_expect_str_eq(clattn__cpu_isa_class("skylake-avx512"), "avx512");
  cr_expect_str_eq(clattn__cpu_isa_class("znver4"), "avx512");
  cr_expect_str_eq(clattn__cpu_isa_class("sapphirerapids"), "avx512");
  cr_expect_str_eq(clattn__cpu_isa_class("haswell"), "avx2");
  cr_expect_str_eq(clattn__cpu_isa_class("znver2"), "avx2");
  cr_expect_str_eq(clattn__cpu_isa_class("alderlake"), "avx2");
  cr_expect_str_eq(clattn__cpu_isa_class("nehalem"), "other");
  cr_expect_str_eq(clattn__cpu_isa_class("neoverse-n1"), "other");
  cr_expect_null(clattn__cpu_isa_class("sm_90"));
  cr_expect_null(clattn__cpu_isa_class(""));
}

/* $CLATTN_SHIPPED=0 turns the tier off. */
Test(shipped, off) {
  const clattn_profile p = reported();
  clattn_tune_entry e =
      row("f0", p.vendor, p.arch, "prefill", CLS, SHIPPED_PARAMS, 1e-3);
  write_shipped("one.json", &e, 1);
  use_shipped("0");
  cr_expect_eq(clattn_shipped_count(), 0);
  clattn_choice ch = explain_with(no_db());
  cr_expect(ch.source == CLATTN_CHOICE_DEFAULT ||
                ch.source == CLATTN_CHOICE_MODEL,
            "%s", ch.why);
  cr_expect(strstr(ch.why, "$CLATTN_SHIPPED=0") != NULL, "%s", ch.why);
}

Test(shipped, off_word) {
  use_shipped("off");
  cr_expect_eq(clattn_shipped_count(), 0);
  clattn_tune_entry got = {.size = sizeof(clattn_tune_entry)};
  cr_expect_eq(clattn_shipped_row(0, &got), CLATTN_ERR_NOT_FOUND);
}

/* A file that does not parse (or holds an invalid row): the tier is
 * empty, and explain says why, naming the file and line. */
Test(shipped, malformed_file_empties_the_tier) {
  const clattn_profile p = reported();
  clattn_tune_entry e[2] = {
      row("f0", p.vendor, p.arch, "prefill", CLS, SHIPPED_PARAMS, 1e-3),
      row("f0", p.vendor, p.arch, "prefill", "f32 k32 v32 g2 bh2 n8 m8 c1",
          SHIPPED_PARAMS, -1.0)}; /* a negative time */
  const char *path = write_shipped("bad.json", e, 2);
  use_shipped(path);
  cr_expect_eq(clattn_shipped_count(), 0);
  clattn_choice ch = explain_with(no_db());
  cr_expect_neq(ch.source, CLATTN_CHOICE_SHIPPED, "%s", ch.why);
  cr_expect(strstr(ch.why, "no shipped data: ") != NULL, "%s", ch.why);
  cr_expect(strstr(ch.why, "bad.json:3:") != NULL, "%s", ch.why);
  cr_expect(strstr(ch.why, "median_s") != NULL, "%s", ch.why);
}

Test(shipped, bad_json_and_missing_file) {
  char path[512];
  snprintf(path, sizeof path, "%s/broken.json", tmp_dir);
  FILE *f = fopen(path, "w");
  cr_assert(f != NULL);
  fputs("{\"clattn_tuning\": 1, \"entries\": [{", f);
  fclose(f);
  use_shipped(path);
  cr_expect_eq(clattn_shipped_count(), 0);
  clattn_choice ch = explain_with(no_db());
  cr_expect(strstr(ch.why, "broken.json:1:") != NULL, "%s", ch.why);
}

Test(shipped, missing_file) {
  char path[512];
  snprintf(path, sizeof path, "%s/absent.json", tmp_dir);
  use_shipped(path);
  cr_expect_eq(clattn_shipped_count(), 0);
  clattn_choice ch = explain_with(no_db());
  cr_expect(strstr(ch.why, "cannot open") != NULL, "%s", ch.why);
}

/* Only a regular file is read: a FIFO with no writer is refused at once
 * (opening it for reading would wait for one); a directory too. */
Test(shipped, fifo_refused) {
  char fifo[512];
  snprintf(fifo, sizeof fifo, "%s/shipped.fifo", tmp_dir);
  cr_assert_eq(mkfifo(fifo, 0600), 0, "mkfifo: %s", strerror(errno));
  use_shipped(fifo);
  cr_expect_eq(clattn_shipped_count(), 0);
  clattn_choice ch = explain_with(no_db());
  cr_expect_neq(ch.source, CLATTN_CHOICE_SHIPPED, "%s", ch.why);
  cr_expect(strstr(ch.why, "shipped.fifo is not a regular file") != NULL, "%s",
            ch.why);
}

Test(shipped, directory_refused) {
  use_shipped(tmp_dir);
  cr_expect_eq(clattn_shipped_count(), 0);
  clattn_choice ch = explain_with(no_db());
  cr_expect(strstr(ch.why, "is not a regular file") != NULL, "%s", ch.why);
}

/* A file above the 64 MiB bound is refused before it is read (a sparse
 * one: nothing is written). */
Test(shipped, oversized_file_refused) {
  char path[512];
  snprintf(path, sizeof path, "%s/huge.json", tmp_dir);
  FILE *f = fopen(path, "w");
  cr_assert(f != NULL);
  cr_assert_eq(ftruncate(fileno(f), ((off_t)64 << 20) + 1), 0);
  cr_assert_eq(fclose(f), 0);
  use_shipped(path);
  cr_expect_eq(clattn_shipped_count(), 0);
  clattn_choice ch = explain_with(no_db());
  cr_expect(strstr(ch.why, "huge.json holds 67108865 bytes") != NULL, "%s",
            ch.why);
  cr_expect(strstr(ch.why, "64 MiB") != NULL, "%s", ch.why);
}

/* The embedded file parses, and every row is one put_tune accepts. */
Test(shipped, embedded_rows_are_valid) {
  cr_assert_eq(unsetenv("CLATTN_SHIPPED"), 0);
  const int n = clattn_shipped_count();
  cr_assert_gt(n, 0);
  char path[512];
  snprintf(path, sizeof path, "%s/check.db", tmp_dir);
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
  for (int i = 0; i < n; i++) {
    clattn_tune_entry e = {.size = sizeof(clattn_tune_entry)};
    cr_assert_eq(clattn_shipped_row(i, &e), CLATTN_OK);
    cr_expect_str_eq(e.status, "ok");
    cr_expect_eq(e.tune_method, clattn_tune_method(e.kernel));
    cr_expect_eq(clattn_db_put_tune(db, &e), CLATTN_OK, "row %d: %s", i,
                 clattn_db_errmsg(db));
  }
  clattn_db_close(db);
}

/* CLBlast's Xgemm: with no row in the user's database, the shipped row of
 * this device's vendor and arch is used: its range runs the own GEMM
 * kernel by default, and with the opt-in it is applied to CLBlast. */
Test(shipped, xgemm_from_the_shipped_data) {
  const clattn_profile p = reported();
  if (!p.arch[0])
    cr_skip_test("the device reports no arch");
  clattn_tune_entry e = row("f0", p.vendor, p.arch, "clblast-xgemm",
                            "m128 n128 k128", XGEMM_PARAMS, 1e-3);
  use_shipped(write_shipped("xgemm.json", &e, 1));
  clattn_ctx *ctx = ctx_with_db(no_db());
  char buf[1024];
  cr_assert_eq(clattn_explain_gemm(ctx, buf, sizeof buf), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  cr_expect(strstr(buf, "own GEMM kernel") != NULL, "%s", buf);
  cr_expect(strstr(buf, "shipped entry m128 n128 k128") != NULL, "%s", buf);
  clattn_ctx_destroy(ctx);

  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  o.tuning_db = no_db();
  o.clblast_override = 1;
  cr_assert_eq(clattn_ctx_create(&o, &ctx), CLATTN_OK, "%s",
               clattn_ctx_errmsg(NULL));
  cr_assert_eq(clattn_explain_gemm(ctx, buf, sizeof buf), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  cr_expect(strstr(buf, "clblast-xgemm: shipped entry") != NULL, "%s", buf);
  cr_expect(strstr(buf, XGEMM_PARAMS) != NULL, "%s", buf);
  clattn_ctx_destroy(ctx);
}

Test(shipped, xgemm_defaults_when_off) {
  use_shipped("0");
  clattn_ctx *ctx = ctx_with_db(no_db());
  char buf[1024];
  cr_assert_eq(clattn_explain_gemm(ctx, buf, sizeof buf), CLATTN_OK);
  cr_expect(strstr(buf, "CLBlast defaults") != NULL, "%s", buf);
  clattn_ctx_destroy(ctx);
}

/* ------------------------------------------------------------- export */

static const char *db_of_rows(void) {
  static char path[512];
  snprintf(path, sizeof path, "%s/rows.db", tmp_dir);
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
  const char *A = CLS, *B = "f32 k32 v32 g2 bh2 n128 m128 c1";
  clattn_tune_entry e[] = {
      row("d1", "V", "a", "prefill", A, "variant=1 rows=1 keys=16", 2e-3),
      row("d1", "V", "a", "prefill", A, "variant=1 rows=2 keys=16", 1e-3),
      row("d1", "V", "a", "prefill", A, "variant=1 rows=4 keys=16", 5e-4),
      row("d1", "V", "a", "prefill", A, "variant=1 rows=8 keys=16", 1e-4),
      row("d1", "V", "a", "prefill", B, "variant=1 rows=1 keys=32", 3e-3),
      row("d2", "V", "b", "prefill", A, "variant=1 rows=1 keys=32", 5e-3),
      row("d2", "V", "b", "prefill", A, "variant=1 rows=2 keys=32", 4e-3),
  };
  snprintf(e[2].status, sizeof e[2].status, "wrong"); /* faster, wrong */
  e[3].tune_method = 0;                               /* faster, stale */
  snprintf(e[6].status, sizeof e[6].status, "timeout");
  snprintf(e[6].message, sizeof e[6].message, "ran past 10 s");
  for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
    cr_assert_eq(clattn_db_put_tune(db, &e[i]), CLATTN_OK, "%s",
                 clattn_db_errmsg(db));
  clattn_db_close(db);
  return path;
}

/* Rows of an exported file, read back through the import. */
static int read_back(const char *file, clattn_tune_entry **rows) {
  char path[512];
  static int k;
  snprintf(path, sizeof path, "%s/back%d.db", tmp_dir, k++);
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
  cr_assert_eq(clattn_db_import(db, file, NULL, NULL, NULL), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  int n = 0;
  cr_assert_eq(
      clattn_db_list_tune(db, NULL, NULL, NULL, sizeof **(rows), rows, &n),
      CLATTN_OK);
  clattn_db_close(db);
  return n;
}

static int has_row(const clattn_tune_entry *r, int n, const char *fp,
                   const char *cls, const char *params) {
  for (int i = 0; i < n; i++)
    if (!strcmp(r[i].fingerprint, fp) && !strcmp(r[i].shape_class, cls) &&
        !strcmp(r[i].params, params))
      return 1;
  return 0;
}

/* SHIPPED keeps exactly the best ok row of the current method per
 * (device, kernel, class). */
Test(shipped, export_shipped_keeps_the_best_rows) {
  const char *src = db_of_rows();
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open_readonly(src, &db), CLATTN_OK);
  char out[512];
  snprintf(out, sizeof out, "%s/shipped.json", tmp_dir);
  cr_assert_eq(clattn_db_export_as(db, out, CLATTN_EXPORT_SHIPPED, NULL, NULL),
               CLATTN_OK, "%s", clattn_db_errmsg(db));
  clattn_tune_entry *r = NULL;
  int n = read_back(out, &r);
  cr_expect_eq(n, 3);
  cr_expect(has_row(r, n, "d1", CLS, "variant=1 rows=2 keys=16"));
  cr_expect(has_row(r, n, "d1", "f32 k32 v32 g2 bh2 n128 m128 c1",
                    "variant=1 rows=1 keys=32"));
  cr_expect(has_row(r, n, "d2", CLS, "variant=1 rows=1 keys=32"));
  free(r);
  /* the filters */
  cr_assert_eq(clattn_db_export_as(db, out, CLATTN_EXPORT_SHIPPED, "d2", NULL),
               CLATTN_OK);
  n = read_back(out, &r);
  cr_expect_eq(n, 1);
  free(r);
  cr_assert_eq(clattn_db_export_as(db, out, CLATTN_EXPORT_JSON, NULL, "decode"),
               CLATTN_OK);
  n = read_back(out, &r);
  cr_expect_eq(n, 0);
  free(r);
  cr_expect_eq(
      clattn_db_export_as(db, out, (clattn_export_format)7, NULL, NULL),
      CLATTN_ERR_INVALID_ARG);
  /* a shipped export is a file $CLATTN_SHIPPED reads */
  use_shipped(out);
  cr_expect_eq(clattn_shipped_count(), 0); /* d2 only: its row timed out */
  clattn_db_close(db);
}

/* T4: the schema's required keys and types (tests/t4_check.py), and the
 * status mapping. */
Test(shipped, export_t4) {
  const char *src = db_of_rows();
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open_readonly(src, &db), CLATTN_OK);
  char out[512], cmd[1400], text[65536];
  snprintf(out, sizeof out, "%s/t4.json", tmp_dir);
  cr_assert_eq(clattn_db_export_as(db, out, CLATTN_EXPORT_T4, NULL, NULL),
               CLATTN_OK, "%s", clattn_db_errmsg(db));
  clattn_db_close(db);
  snprintf(cmd, sizeof cmd, "python3 '%s' '%s'", T4_CHECK, out);
  cr_expect_eq(system(cmd), 0, "%s fails", cmd);
  FILE *f = fopen(out, "r");
  cr_assert(f != NULL);
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = '\0';
  cr_expect(strstr(text, "\"schema_version\": \"1.0.0\"") != NULL);
  cr_expect(strstr(text, "\"configuration\": {\"variant\": 1, \"rows\": 2, "
                         "\"keys\": 16}") != NULL,
            "%s", text);
  cr_expect(strstr(text, "\"invalidity\": \"correct\", \"correctness\": 1") !=
            NULL);
  cr_expect(strstr(text, "\"invalidity\": \"correctness\", \"correctness\": "
                         "0") != NULL);
  cr_expect(strstr(text, "\"invalidity\": \"timeout\"") != NULL);
  cr_expect(strstr(text, "\"runtimes\": [1]") != NULL, "%s", text);
}
