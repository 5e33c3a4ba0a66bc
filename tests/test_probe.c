/* test_probe.c - clattn_probe (a quick run), clattn_profile_reported and
 * the SQLite tuning database (round trip, persistence, several handles and
 * processes, schema version, failures). */
#define _DEFAULT_SOURCE /* mkdtemp, setenv */
#include "base/clock.h"
#include "tmpdir.h"
#include "util.h"

#include <criterion/criterion.h>
#include <ctype.h>
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

static void tmp_setup(void) { tt_mkdtemp(tmp_dir, sizeof tmp_dir, "probe"); }

static void tmp_teardown(void) {
  if (tmp_dir[0])
    tt_rm_rf(tmp_dir);
}

static void tmp_path(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", tmp_dir, name);
}

static clattn_db *db_open_ok(const char *path) {
  clattn_db *db = NULL;
  clattn_status st = clattn_db_open(path, &db);
  cr_assert(st == CLATTN_OK && db != NULL, "clattn_db_open(%s): %s: %s", path,
            clattn_status_str(st), clattn_db_errmsg(NULL));
  return db;
}

/* A profile with a distinct value in every field. */
static clattn_profile sample_profile(const char *fp, double scale) {
  clattn_profile p = {.size = sizeof(clattn_profile)};
  p.source = CLATTN_PROFILE_MEASURED;
  snprintf(p.fingerprint, sizeof p.fingerprint, "%s", fp);
  snprintf(p.name, sizeof p.name, "Test \"GPU\" 'quoted'; DROP TABLE x");
  snprintf(p.vendor, sizeof p.vendor, "Vendor");
  snprintf(p.platform, sizeof p.platform, "Platform");
  snprintf(p.driver, sizeof p.driver, "1.2.3");
  snprintf(p.arch, sizeof p.arch, "sm_86");
  p.is_cpu = 1;
  p.compute_units = 84;
  p.clock_mhz = 1860;
  p.wave_width = 32;
  p.simds_per_cu = 4;
  p.global_mem_bytes = 25769803776ull; /* > 2^32 */
  p.cache_bytes = 110100480ull;
  p.local_mem_bytes = 101376;
  p.max_wg = 1024;
  p.has_fp16 = 1;
  p.has_subgroups = 1;
  p.bw_read_gbs = 812.5 * scale;
  p.bw_copy_gbs = 0.1 * scale; /* not exact in binary */
  p.bw_triad_gbs = 777.25 * scale;
  p.fp32_gflops = 29767.3 * scale;
  p.fp16_gflops = 59534.6 * scale;
  p.local_gbs = 1.0 / 3.0 * scale;
  p.h2d_gbs = 24.9 * scale;
  p.d2h_gbs = 26.1 * scale;
  p.launch_us = 5.5e-3 * scale;
  p.launch_pipelined_us = 2.25 * scale;
  p.probe_method = CLATTN_PROBE_METHOD;
  snprintf(p.note, sizeof p.note, "2026-01-01 test note, scale %g", scale);
  return p;
}

static void expect_profile_eq(const clattn_profile *a,
                              const clattn_profile *b) {
#define S_(f) cr_expect_str_eq(a->f, b->f, #f ": \"%s\" != \"%s\"", a->f, b->f)
#define N_(f)                                                                  \
  cr_expect(a->f == b->f, #f ": %.17g != %.17g", (double)a->f, (double)b->f)
  N_(source);
  S_(fingerprint);
  S_(name);
  S_(vendor);
  S_(platform);
  S_(driver);
  S_(arch);
  N_(is_cpu);
  N_(compute_units);
  N_(clock_mhz);
  N_(wave_width);
  N_(simds_per_cu);
  N_(global_mem_bytes);
  N_(cache_bytes);
  N_(local_mem_bytes);
  N_(max_wg);
  N_(has_fp16);
  N_(has_subgroups);
  N_(bw_read_gbs);
  N_(bw_copy_gbs);
  N_(bw_triad_gbs);
  N_(fp32_gflops);
  N_(fp16_gflops);
  N_(local_gbs);
  N_(h2d_gbs);
  N_(d2h_gbs);
  N_(launch_us);
  N_(launch_pipelined_us);
  N_(probe_method);
  S_(note);
#undef S_
#undef N_
}

/* ---------------------------------------------------------------- probe */

static int is_hex32(const char *s) {
  size_t n = strlen(s);
  for (size_t i = 0; i < n; i++)
    if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
      return 0;
  return n == 32;
}

static int device_has_ext(clattn_ctx *ctx, const char *ext) {
  char buf[16384] = "";
  cl_int e = clGetDeviceInfo(clattn_ctx_device(ctx), CL_DEVICE_EXTENSIONS,
                             sizeof buf - 1, buf, NULL);
  cr_assert_eq(e, CL_SUCCESS, "CL_DEVICE_EXTENSIONS: %d", (int)e);
  return strstr(buf, ext) != NULL;
}

static int positive(double v) { return isfinite(v) && v > 0; }

static double best(const double *v) {
  double b = 0;
  for (int i = 0; i < CLATTN_PROBE_WIDTHS; i++)
    b = v[i] > b ? v[i] : b;
  return b;
}

Test(probe, quick) {
  clattn_ctx *ctx = tu_ctx();
  clattn_probe_opts o = {.size = sizeof(clattn_probe_opts),
                         .target_s = 0.01,
                         .repeats = 3,
                         .buffer_bytes = (size_t)16 << 20};
  clattn_probe_result r = {.size = sizeof(clattn_probe_result)};
  clattn_profile r_prof = {.size = sizeof(clattn_profile)};
  double t0 = clattn__now();
  clattn_status st = clattn_probe(ctx, &o, &r_prof, &r);
  double wall = clattn__now() - t0;
  cr_assert_eq(st, CLATTN_OK, "clattn_probe: %s: %s", clattn_status_str(st),
               clattn_ctx_errmsg(ctx));
  const clattn_profile *p = &r_prof;
  for (int i = 0; i < CLATTN_PROBE_WIDTHS; i++) {
    cr_expect(positive(r.read_gbs[i]), "read[%d] = %g", i, r.read_gbs[i]);
    cr_expect(positive(r.copy_gbs[i]), "copy[%d] = %g", i, r.copy_gbs[i]);
    cr_expect(positive(r.triad_gbs[i]), "triad[%d] = %g", i, r.triad_gbs[i]);
    cr_expect(positive(r.fma_gflops[i]), "fma[%d] = %g", i, r.fma_gflops[i]);
  }
  cr_expect_eq(p->source, CLATTN_PROFILE_MEASURED);
  cr_expect(p->bw_read_gbs == best(r.read_gbs));
  cr_expect(p->bw_copy_gbs == best(r.copy_gbs));
  cr_expect(p->bw_triad_gbs == best(r.triad_gbs));
  cr_expect(p->fp32_gflops == best(r.fma_gflops));
  double figs[] = {p->local_gbs, p->h2d_gbs, p->d2h_gbs, p->launch_us,
                   p->launch_pipelined_us};
  for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++)
    cr_expect(positive(figs[i]), "figure %zu = %g", i, figs[i]);
  /* sanity bounds no real device exceeds (catches unit slips) */
  cr_expect(p->bw_triad_gbs < 1e5 && p->fp32_gflops < 1e7 && p->launch_us < 1e6,
            "implausible: triad %g GB/s, fma %g GFLOP/s, launch %g us",
            p->bw_triad_gbs, p->fp32_gflops, p->launch_us);
  int fp16 = device_has_ext(ctx, "cl_khr_fp16");
  cr_expect_eq(p->has_fp16, fp16);
  if (fp16)
    cr_expect(positive(r.fp16_gflops) && p->fp16_gflops == r.fp16_gflops);
  else
    cr_expect(r.fp16_gflops == 0 && p->fp16_gflops == 0,
              "fp16 %g without cl_khr_fp16", r.fp16_gflops);
  cr_expect_eq(r.buffer_bytes, (size_t)16 << 20);
  cr_expect(r.seconds > 0 && r.seconds <= wall + 0.01,
            "probe seconds %g, wall %g", r.seconds, wall);
  cr_expect(strstr(p->note, "repeats 3") != NULL, "note: %s", p->note);
  clattn_profile rep = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_profile_reported(ctx, &rep), CLATTN_OK);
  cr_expect_str_eq(p->fingerprint, rep.fingerprint);
  cr_expect_eq(p->compute_units, rep.compute_units);
  clattn_ctx_destroy(ctx);
}

Test(probe, invalid_args) {
  clattn_probe_result r = {.size = sizeof(clattn_probe_result)};
  clattn_profile r_prof = {.size = sizeof(clattn_profile)};
  cr_expect_eq(clattn_probe(NULL, NULL, &r_prof, &r), CLATTN_ERR_MISUSE);
  clattn_ctx *ctx = tu_ctx();
  cr_expect_eq(clattn_probe(ctx, NULL, NULL, &r), CLATTN_ERR_INVALID_ARG);
  clattn_probe_opts o = {.size = sizeof(clattn_probe_opts), .target_s = -1};
  cr_expect_eq(clattn_probe(ctx, &o, &r_prof, &r), CLATTN_ERR_INVALID_ARG);
  o.target_s = NAN;
  cr_expect_eq(clattn_probe(ctx, &o, &r_prof, &r), CLATTN_ERR_INVALID_ARG);
  o.target_s = 0;
  o.repeats = -2;
  cr_expect_eq(clattn_probe(ctx, &o, &r_prof, &r), CLATTN_ERR_INVALID_ARG);
  o.repeats = 0;
  o.buffer_bytes = 1000; /* under 1 MiB */
  cr_expect_eq(clattn_probe(ctx, &o, &r_prof, &r), CLATTN_ERR_INVALID_ARG);
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "1 MiB") != NULL, "message: %s",
            clattn_ctx_errmsg(ctx));
  clattn_ctx_destroy(ctx);
}

/* The bandwidth reference: plausible GB/s, runs again after the context's
 * programs are dropped (it looks its kernel up each time), and rejects bad
 * arguments with a message. */
Test(probe, copy_ref) {
  clattn_ctx *ctx = tu_ctx();
  clattn_copy_ref *ref = NULL;
  cr_assert_eq(clattn_copy_ref_create(ctx, (size_t)4 << 20, &ref), CLATTN_OK,
               "%s", clattn_ctx_errmsg(ctx));
  cr_assert_not_null(ref);
  for (int i = 0; i < 3; i++) {
    double gbs = -1;
    if (i == 2)
      clattn_ctx_clear_programs(ctx);
    cr_assert_eq(clattn_copy_ref_run(ref, &gbs), CLATTN_OK, "%s",
                 clattn_ctx_errmsg(ctx));
    cr_expect(gbs > 0.01 && gbs < 1e5, "run %d: %g GB/s", i, gbs);
  }
  cr_expect_eq(clattn_copy_ref_run(ref, NULL), CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_copy_ref_run(NULL, NULL), CLATTN_ERR_INVALID_ARG);
  clattn_copy_ref_destroy(ref);
  clattn_copy_ref_destroy(NULL);

  cr_expect_eq(clattn_copy_ref_create(NULL, (size_t)4 << 20, &ref),
               CLATTN_ERR_MISUSE);
  cr_expect_eq(clattn_copy_ref_create(ctx, (size_t)4 << 20, NULL),
               CLATTN_ERR_INVALID_ARG);
  ref = (clattn_copy_ref *)1;
  cr_expect_eq(clattn_copy_ref_create(ctx, 1000, &ref), CLATTN_ERR_INVALID_ARG);
  cr_expect_null(ref, "*out is cleared on failure");
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "1 MiB") != NULL, "message: %s",
            clattn_ctx_errmsg(ctx));
  cr_expect_eq(clattn_copy_ref_create(ctx, ((size_t)4 << 20) + 4, &ref),
               CLATTN_ERR_INVALID_ARG);
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "multiple of 64") != NULL,
            "message: %s", clattn_ctx_errmsg(ctx));
  clattn_ctx_destroy(ctx);
}

/* -------------------------------------------------------------- profile */

Test(profile, fingerprint) {
  clattn_ctx *a = tu_ctx(), *b = tu_ctx();
  clattn_profile pa = {.size = sizeof(clattn_profile)},
                 pb = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_profile_reported(a, &pa), CLATTN_OK);
  cr_assert_eq(clattn_profile_reported(b, &pb), CLATTN_OK);
  cr_expect(is_hex32(pa.fingerprint), "fingerprint \"%s\"", pa.fingerprint);
  cr_expect_str_eq(pa.fingerprint, pb.fingerprint);
  cr_expect_eq(clattn_profile_reported(NULL, &pa), CLATTN_ERR_MISUSE);
  cr_expect_eq(clattn_profile_reported(a, NULL), CLATTN_ERR_INVALID_ARG);
  clattn_ctx_destroy(a);
  clattn_ctx_destroy(b);
}

Test(profile, reported_fields) {
  clattn_ctx *ctx = tu_ctx();
  cl_device_id dev = clattn_ctx_device(ctx);
  clattn_profile p = {.size = sizeof(clattn_profile)};
  cl_uint cu = 0, clock = 0;
  cl_ulong lmem = 0, gmem = 0;
  size_t wg = 0;
  cl_device_type type = 0;
  char name[256] = "";
  cr_assert_eq(clattn_profile_reported(ctx, &p), CLATTN_OK);
  cr_assert_eq(
      clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL),
      CL_SUCCESS);
  cr_assert_eq(clGetDeviceInfo(dev, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof clock,
                               &clock, NULL),
               CL_SUCCESS);
  cr_assert_eq(
      clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL),
      CL_SUCCESS);
  cr_assert_eq(
      clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gmem, &gmem, NULL),
      CL_SUCCESS);
  cr_assert_eq(
      clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL),
      CL_SUCCESS);
  cr_assert_eq(clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL),
               CL_SUCCESS);
  cr_assert_eq(
      clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name - 1, name, NULL),
      CL_SUCCESS);
  cr_expect_eq(p.source, CLATTN_PROFILE_REPORTED);
  cr_expect_eq(p.compute_units, cu);
  cr_expect_eq(p.clock_mhz, clock);
  cr_expect_eq(p.local_mem_bytes, lmem);
  cr_expect_eq(p.global_mem_bytes, gmem);
  cr_expect_eq(p.max_wg, wg);
  cr_expect_eq(p.is_cpu, (type & CL_DEVICE_TYPE_CPU) != 0);
  cr_expect(p.name[0] != '\0' && strncmp(name, p.name, strlen(p.name)) == 0,
            "name \"%s\" vs \"%s\"", p.name, name);
  cr_expect(p.wave_width >= 1);
  cr_expect_eq(p.has_fp16, device_has_ext(ctx, "cl_khr_fp16"));
  cr_expect(p.bw_triad_gbs == 0 && p.fp32_gflops == 0 && p.launch_us == 0,
            "a reported profile has no ceilings");
  clattn_ctx_destroy(ctx);
}

/* clattn_profile_for uses a stored measurement only if the current probe
 * method, or no probe (0: entered by hand), produced it; a profile of an
 * older method (here 1: the FMA peak read half the AVX2 peak) is skipped
 * and the note says to probe again. */
Test(profile, stale_probe_method_not_used, .init = tmp_setup,
     .fini = tmp_teardown) {
  char path[512];
  tmp_path(path, sizeof path, "tuning.db");
  clattn_ctx *ctx = tu_ctx();
  clattn_db *db = db_open_ok(path);
  clattn_profile rep = {.size = sizeof(clattn_profile)},
                 p = {.size = sizeof(clattn_profile)},
                 got = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_profile_reported(ctx, &rep), CLATTN_OK);
  static const int methods[3] = {1, CLATTN_PROBE_METHOD, 0};
  for (int i = 0; i < 3; i++) {
    p = rep;
    p.source = CLATTN_PROFILE_MEASURED;
    p.bw_read_gbs = p.bw_copy_gbs = p.bw_triad_gbs = 10.0 + i;
    p.fp32_gflops = 100.0 + i;
    p.probe_method = methods[i];
    snprintf(p.note, sizeof p.note, "2026-01-0%dT00:00:00Z probe", i + 1);
    cr_assert_eq(clattn_db_put_profile(db, &p), CLATTN_OK, "%s",
                 clattn_db_errmsg(db));
    memset(&got, 0xab, sizeof got);
    cr_assert_eq(clattn_profile_for(ctx, db, &got), CLATTN_OK, "%s",
                 clattn_ctx_errmsg(ctx));
    if (methods[i] == 1) {
      cr_expect_neq(got.source, CLATTN_PROFILE_MEASURED,
                    "a method-1 profile is not used");
      cr_expect_neq(got.fp32_gflops, p.fp32_gflops);
      cr_expect(strstr(got.note, "clattn probe") != NULL &&
                    strstr(got.note, "2026-01-01") != NULL,
                "note: %s", got.note);
    } else {
      cr_expect_eq(got.source, CLATTN_PROFILE_MEASURED, "method %d",
                   methods[i]);
      cr_expect_eq(got.fp32_gflops, p.fp32_gflops);
      cr_expect_eq(got.probe_method, methods[i]);
      cr_expect_str_eq(got.note, p.note);
    }
  }
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------- db */

TestSuite(db, .init = tmp_setup, .fini = tmp_teardown);

Test(db, round_trip) {
  char path[512];
  /* a path given is created only in a directory that exists: a missing
   * one is named, and nothing is made */
  char sub[512];
  tmp_path(path, sizeof path, "sub/dir/tuning.db");
  tmp_path(sub, sizeof sub, "sub");
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_ERR_DB);
  cr_assert(strstr(clattn_db_errmsg(NULL), "directory ") &&
                strstr(clattn_db_errmsg(NULL), "sub/dir does not exist"),
            "%s", clattn_db_errmsg(NULL));
  cr_assert_neq(access(sub, F_OK), 0, "%s was created", sub);
  cr_assert_eq(mkdir(sub, 0777), 0);
  tmp_path(sub, sizeof sub, "sub/dir");
  cr_assert_eq(mkdir(sub, 0777), 0);
  db = db_open_ok(path);
  cr_expect_str_eq(clattn_db_path(db), path);
  clattn_profile p = sample_profile("00112233445566778899aabbccddeeff", 1.0);
  clattn_profile q = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_db_put_profile(db, &p), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  memset(&q, 0xab, sizeof q);
  q.size = sizeof q;
  cr_assert_eq(clattn_db_get_profile(db, p.fingerprint, &q), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  expect_profile_eq(&p, &q);
  /* a second put replaces the row */
  p = sample_profile(p.fingerprint, 2.5);
  p.compute_units = 7;
  cr_assert_eq(clattn_db_put_profile(db, &p), CLATTN_OK);
  cr_assert_eq(clattn_db_get_profile(db, p.fingerprint, &q), CLATTN_OK);
  expect_profile_eq(&p, &q);
  clattn_db_close(db);
}

Test(db, not_found) {
  char path[512];
  tmp_path(path, sizeof path, "tuning.db");
  clattn_db *db = db_open_ok(path);
  clattn_profile q = {.size = sizeof(clattn_profile)};
  cr_expect_eq(
      clattn_db_get_profile(db, "ffffffffffffffffffffffffffffffff", &q),
      CLATTN_ERR_NOT_FOUND);
  cr_expect(strstr(clattn_db_errmsg(db), "ffffffff") != NULL, "message: %s",
            clattn_db_errmsg(db));
  clattn_db_close(db);
}

Test(db, persists) {
  char path[512];
  tmp_path(path, sizeof path, "tuning.db");
  clattn_profile p = sample_profile("aaaa", 3.0), q = {.size = sizeof q};
  clattn_db *db = db_open_ok(path);
  cr_assert_eq(clattn_db_put_profile(db, &p), CLATTN_OK);
  clattn_db_close(db);
  db = db_open_ok(path);
  cr_assert_eq(clattn_db_get_profile(db, "aaaa", &q), CLATTN_OK);
  expect_profile_eq(&p, &q);
  clattn_db_close(db);
  /* schema version recorded; WAL journal */
  sqlite3 *h = NULL;
  sqlite3_stmt *st = NULL;
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  cr_assert_eq(sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &st, NULL),
               SQLITE_OK);
  cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
  cr_expect_eq(sqlite3_column_int(st, 0), 10, "ten migrations applied");
  sqlite3_finalize(st);
  cr_assert_eq(sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st, NULL),
               SQLITE_OK);
  cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
  cr_expect_str_eq((const char *)sqlite3_column_text(st, 0), "wal");
  sqlite3_finalize(st);
  sqlite3_close(h);
}

Test(db, newer_schema_refused) {
  char path[512];
  tmp_path(path, sizeof path, "tuning.db");
  clattn_db_close(db_open_ok(path));
  sqlite3 *h = NULL;
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(h, "PRAGMA user_version = 99", NULL, NULL, NULL),
               SQLITE_OK);
  sqlite3_close(h);
  clattn_db *db = NULL;
  cr_expect_eq(clattn_db_open(path, &db), CLATTN_ERR_DB);
  cr_expect_null(db);
  cr_expect(strstr(clattn_db_errmsg(NULL), "99") != NULL, "message: %s",
            clattn_db_errmsg(NULL));
}

Test(db, two_handles_alternate) {
  char path[512];
  tmp_path(path, sizeof path, "tuning.db");
  clattn_db *a = db_open_ok(path), *b = db_open_ok(path);
  clattn_profile q = {.size = sizeof(clattn_profile)};
  for (int i = 0; i < 20; i++) {
    char fp[40];
    snprintf(fp, sizeof fp, "fp%02d", i);
    clattn_profile p = sample_profile(fp, i + 1.0);
    clattn_db *w = i % 2 ? b : a;
    cr_assert_eq(clattn_db_put_profile(w, &p), CLATTN_OK, "write %d: %s", i,
                 clattn_db_errmsg(w));
    /* the other handle sees it at once */
    clattn_db *r = i % 2 ? a : b;
    cr_assert_eq(clattn_db_get_profile(r, fp, &q), CLATTN_OK, "read %d: %s", i,
                 clattn_db_errmsg(r));
    expect_profile_eq(&p, &q);
  }
  clattn_db_close(a);
  clattn_db_close(b);
}

Test(db, two_processes) {
  char path[512];
  tmp_path(path, sizeof path, "tuning.db");
  pid_t kids[2];
  for (int k = 0; k < 2; k++) {
    kids[k] = fork();
    cr_assert(kids[k] >= 0, "fork failed");
    if (kids[k] == 0) {
      clattn_db *db = NULL;
      if (clattn_db_open(path, &db) != CLATTN_OK)
        _exit(10);
      for (int i = 0; i < 40; i++) {
        char fp[40];
        snprintf(fp, sizeof fp, "proc%d-%02d", k, i);
        clattn_profile p = sample_profile(fp, i + 1.0);
        if (clattn_db_put_profile(db, &p) != CLATTN_OK)
          _exit(11);
      }
      clattn_db_close(db);
      _exit(0);
    }
  }
  for (int k = 0; k < 2; k++) {
    int status = 0;
    cr_assert_eq(waitpid(kids[k], &status, 0), kids[k]);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "writer %d failed (status %d)", k, status);
  }
  clattn_db *db = db_open_ok(path);
  clattn_profile q = {.size = sizeof(clattn_profile)};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 40; i++) {
      char fp[40];
      snprintf(fp, sizeof fp, "proc%d-%02d", k, i);
      cr_expect_eq(clattn_db_get_profile(db, fp, &q), CLATTN_OK, "%s", fp);
    }
  clattn_db_close(db);
}

Test(db, unwritable_path) {
  char file[512], path[600];
  tmp_path(file, sizeof file, "regular-file");
  FILE *f = fopen(file, "w");
  cr_assert_not_null(f);
  fclose(f);
  snprintf(path, sizeof path, "%s/sub/tuning.db", file);
  clattn_db *db = (clattn_db *)&db; /* must be reset to NULL */
  cr_expect_eq(clattn_db_open(path, &db), CLATTN_ERR_DB);
  cr_expect_null(db);
  cr_expect(strstr(clattn_db_errmsg(NULL), path) != NULL,
            "message does not name the path: %s", clattn_db_errmsg(NULL));
  /* the file itself as a directory-less database: not a database */
  cr_expect_eq(clattn_db_open(file, &db), CLATTN_OK,
               "an empty file is an empty database: %s",
               clattn_db_errmsg(NULL));
  clattn_db_close(db);
}

Test(db, null_args) {
  char path[512];
  tmp_path(path, sizeof path, "tuning.db");
  clattn_profile p = sample_profile("abc", 1.0), q = {.size = sizeof q};
  cr_expect_eq(clattn_db_open(path, NULL), CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_db_put_profile(NULL, &p), CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_db_get_profile(NULL, "abc", &q), CLATTN_ERR_INVALID_ARG);
  clattn_db *db = db_open_ok(path);
  cr_expect_eq(clattn_db_put_profile(db, NULL), CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_db_get_profile(db, NULL, &q), CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_db_get_profile(db, "abc", NULL), CLATTN_ERR_INVALID_ARG);
  p.probe_method = -1;
  cr_expect_eq(clattn_db_put_profile(db, &p), CLATTN_ERR_INVALID_ARG);
  cr_expect(strstr(clattn_db_errmsg(db), "probe_method -1") != NULL,
            "message: %s", clattn_db_errmsg(db));
  p.probe_method = 0;
  p.fingerprint[0] = '\0';
  cr_expect_eq(clattn_db_put_profile(db, &p), CLATTN_ERR_INVALID_ARG);
  cr_expect_null(clattn_db_path(NULL));
  cr_expect_not_null(clattn_db_errmsg(NULL));
  clattn_db_close(NULL);
  clattn_db_close(db);
}

Test(db, default_path) {
  char want[600], dir[512];
  tmp_path(want, sizeof want, "env.db");
  setenv("CLATTN_DB", want, 1);
  clattn_db *db = db_open_ok(NULL);
  cr_expect_str_eq(clattn_db_path(db), want);
  clattn_db_close(db);
  unsetenv("CLATTN_DB");
  tmp_path(dir, sizeof dir, "xdg");
  setenv("XDG_DATA_HOME", dir, 1);
  snprintf(want, sizeof want, "%s/clattn/tuning.db", dir);
  db = db_open_ok(NULL);
  cr_expect_str_eq(clattn_db_path(db), want);
  clattn_db_close(db);
  struct stat sb;
  cr_expect_eq(stat(want, &sb), 0, "%s not created", want);
}

/* A database at schema 1 (profiles without cache_bytes, no model checks)
 * is migrated on open and keeps its rows; model checks are stored. */
Test(db, migrates_and_stores_checks) {
  char path[512];
  tmp_path(path, sizeof path, "old.db");
  sqlite3 *h = NULL;
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(h,
                            "CREATE TABLE profiles (fingerprint TEXT PRIMARY "
                            "KEY NOT NULL, note TEXT NOT NULL);"
                            "INSERT INTO profiles VALUES ('old', 'kept');"
                            "PRAGMA user_version = 1;",
                            NULL, NULL, NULL),
               SQLITE_OK);
  sqlite3_close(h);
  clattn_db *db = db_open_ok(path);
  clattn_check_record r = {.size = sizeof(clattn_check_record)};
  snprintf(r.fingerprint, sizeof r.fingerprint, "old");
  snprintf(r.call, sizeof r.call, "decode b=1 m=4096");
  snprintf(r.bound, sizeof r.bound, "memory");
  r.predicted_s = 1e-3;
  r.measured_s = 1.2e-3;
  r.roofline_fraction = 0.8;
  cr_expect_eq(clattn_db_put_check(db, &r), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  cr_expect_eq(clattn_db_put_check(db, NULL), CLATTN_ERR_INVALID_ARG);
  clattn_db_close(db);
  cr_assert_eq(sqlite3_open(path, &h), SQLITE_OK);
  sqlite3_stmt *st = NULL;
  cr_assert_eq(sqlite3_prepare_v2(h,
                                  "SELECT p.note, p.cache_bytes, c.measured_s"
                                  " FROM profiles p JOIN model_checks c ON"
                                  " c.fingerprint = p.fingerprint",
                                  -1, &st, NULL),
               SQLITE_OK, "%s", sqlite3_errmsg(h));
  cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
  cr_expect_str_eq((const char *)sqlite3_column_text(st, 0), "kept");
  cr_expect_eq(sqlite3_column_int64(st, 1), 0);
  cr_expect_eq(sqlite3_column_double(st, 2), 1.2e-3);
  sqlite3_finalize(st);
  sqlite3_close(h);
  unlink(path);
}
