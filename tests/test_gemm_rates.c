/* test_gemm_rates.c - the GEMM rates of a profile (clattn_profile.
 * gemm_rates): clattn_profile_for derives them from the database's tuning
 * rows of the device, and the model prices a projection's FMA lanes at the
 * rate of its m, n and k (the kernel's in-core record: fma_gflops, t_fma),
 * in the projection family and in a layer's prediction, else at the FMA
 * peak. */
#include "clattn_tools.h"
#include "tmpdir.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static char tmp_dir[256];

static void tmp_setup(void) {
  tt_mkdtemp(tmp_dir, sizeof tmp_dir, "gemm-rates");
}

static void tmp_teardown(void) { tt_rm_rf(tmp_dir); }

TestSuite(gemm_rates, .init = tmp_setup, .fini = tmp_teardown);

/* A datasheet GPU holding the given rates. */
static clattn_profile with_rates(const clattn_gemm_rate *rates, int n) {
  clattn_profile p = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_datasheet_find("A100", &p), CLATTN_OK);
  cr_assert_eq(p.n_gemm_rates, 0, "a datasheet holds no measured rate");
  cr_assert(n <= CLATTN_PROFILE_GEMM_RATES);
  for (int i = 0; i < n; i++)
    p.gemm_rates[i] = rates[i];
  p.n_gemm_rates = n;
  return p;
}

/* A prediction poisoned with NaN (a field the model leaves unset stays
 * NaN). */
static void poison(clattn_prediction *pr) {
  memset(pr, 0xff, sizeof *pr);
  pr->size = sizeof *pr;
}

/* Kernel i of pr priced at `gflops`: its rate, and its FMA lanes' time at
 * that rate (a GEMM issues no exp2). */
static void expect_priced(const clattn_prediction *pr, int i, double gflops,
                          const char *what) {
  const clattn_cost *k = &pr->kernel[i];
  const clattn_core *c = &pr->core[i];
  cr_expect_eq(c->fma_gflops, gflops, "%s (%s): priced at %g GFLOP/s, not %g",
               what, k->kernel, c->fma_gflops, gflops);
  cr_expect_eq(k->exp2_issued, 0.0);
  const double want = 2.0 * (k->fma_issued + k->fma_spilled) / (gflops * 1e9);
  cr_expect(want > 0 && fabs(c->t_fma - want) <= 1e-12 * want,
            "%s (%s): t_fma %.17g, the lanes at %g GFLOP/s take %.17g", what,
            k->kernel, c->t_fma, gflops, want);
}

/* The index of the kernel named `name` in pr (the test fails when there
 * is none). */
static int kernel_index(const clattn_prediction *pr, const char *name) {
  for (int i = 0; i < pr->n_kernels; i++)
    if (strcmp(pr->kernel[i].kernel, name) == 0)
      return i;
  cr_assert_fail("no kernel %s among the %d predicted", name, pr->n_kernels);
  return -1;
}

/* The model of a projection of `shape` into pr, checked to be one GEMM
 * kernel. */
static void predict_projection(const char *shape, const char *params,
                               const clattn_profile *p, clattn_prediction *pr) {
  const clattn_params own = {.size = sizeof own, .text = params};
  poison(pr);
  cr_assert_eq(
      clattn_model_shape("projection", shape, params ? &own : NULL, p, pr),
      CLATTN_OK, "%s: %s", shape, pr->errmsg);
  cr_assert_eq(pr->n_kernels, 1, "%s (%s): %d kernels", shape,
               params ? params : "automatic", pr->n_kernels);
}

/* CLBlast's GEMM and the own kernel's (scheme 1) at the rate of their
 * shape; the other rates of the profile change nothing. */
Test(gemm_rates, projection_priced_at_its_shapes_rate) {
  const clattn_gemm_rate r[] = {
      {2048, 512, 512, 456.0}, {512, 512, 512, 123.0}, {512, 512, 256, 78.0}};
  const clattn_profile p = with_rates(r, 3);
  clattn_prediction pr;
  predict_projection("m=512 n=512 k=512", NULL, &p, &pr);
  cr_expect_str_eq(pr.kernel[0].kernel, "clblast_sgemm");
  expect_priced(&pr, 0, 123.0, "CLBlast's GEMM");
  predict_projection("m=2048 n=512 k=512", NULL, &p, &pr);
  expect_priced(&pr, 0, 456.0, "m=2048");
  predict_projection("m=512 n=512 k=512", "scheme=1", &p, &pr);
  cr_expect(strncmp(pr.kernel[0].kernel, "cvmm_gemm", 9) == 0, "%s",
            pr.kernel[0].kernel);
  expect_priced(&pr, 0, 123.0, "the own kernel");
}

/* No rate of the same m, n and k: the FMA peak, whatever other rates the
 * profile holds (n and k swapped, m one off). */
Test(gemm_rates, no_rate_of_the_shape_leaves_the_peak) {
  const clattn_gemm_rate r[] = {
      {512, 256, 512, 99.0}, {512, 512, 256, 98.0}, {511, 512, 512, 97.0}};
  const clattn_profile with = with_rates(r, 3), without = with_rates(NULL, 0);
  const clattn_profile *profiles[] = {&with, &without};
  cr_assert_gt(with.fp32_gflops, 0);
  for (int i = 0; i < 2; i++) {
    clattn_prediction pr;
    predict_projection("m=512 n=512 k=512", NULL, profiles[i], &pr);
    expect_priced(&pr, 0, with.fp32_gflops, i ? "no rates" : "other rates");
    predict_projection("m=512 n=512 k=512", "scheme=1", profiles[i], &pr);
    expect_priced(&pr, 0, with.fp32_gflops,
                  i ? "no rates, own kernel" : "other rates, own kernel");
  }
}

/* A layer's prediction keeps its projections' rates: x*w_q and o*w_o are
 * 512 x 512 x 512 GEMMs over 512 rows, x*w_k and x*w_v (two KV heads)
 * 512 x 128 x 512, which the profile has no rate of (the FMA peak); the
 * core's kernels at the peak too. */
Test(gemm_rates, layer_prediction_keeps_projection_rates) {
  const clattn_gemm_rate r[] = {{512, 512, 512, 321.0}};
  const clattn_profile p = with_rates(r, 1);
  const clattn_layer_desc L = {
      sizeof(clattn_layer_desc), 512, 8, 2, 64, 64, 0.0f};
  clattn_prediction pr;
  poison(&pr);
  cr_assert_eq(clattn_model_layer(&L, 1, 512, 0, 1, &p, &pr), CLATTN_OK, "%s",
               pr.errmsg);
  expect_priced(&pr, kernel_index(&pr, "gemm x*w_q"), 321.0, "layer");
  expect_priced(&pr, kernel_index(&pr, "gemm o*w_o"), 321.0, "layer");
  expect_priced(&pr, kernel_index(&pr, "gemm x*w_k"), p.fp32_gflops, "layer");
  expect_priced(&pr, kernel_index(&pr, "gemm x*w_v"), p.fp32_gflops, "layer");
  for (int i = 0; i < pr.n_kernels; i++)
    if (strncmp(pr.kernel[i].kernel, "gemm ", 5) != 0)
      cr_expect_eq(pr.core[i].fma_gflops, p.fp32_gflops, "%s: %g",
                   pr.kernel[i].kernel, pr.core[i].fma_gflops);
}

/* A tuning row of the device (fingerprint fp) into db. */
static void put_row(clattn_db *db, const char *fp, const char *kernel,
                    const char *shape_class, const char *params,
                    const char *status, double median_s, int tune_method) {
  clattn_tune_entry e = {.size = sizeof e};
  snprintf(e.fingerprint, sizeof e.fingerprint, "%s", fp);
  snprintf(e.device, sizeof e.device, "test device");
  snprintf(e.kernel, sizeof e.kernel, "%s", kernel);
  snprintf(e.shape_class, sizeof e.shape_class, "%s", shape_class);
  snprintf(e.params, sizeof e.params, "%s", params);
  snprintf(e.status, sizeof e.status, "%s", status);
  e.median_s = median_s;
  e.tune_method = tune_method;
  cr_assert_eq(clattn_db_put_tune(db, &e), CLATTN_OK, "%s %s: %s", kernel,
               shape_class, clattn_db_errmsg(db));
}

static clattn_db *open_db(char *path, size_t cap) {
  clattn_db *db = NULL;
  snprintf(path, cap, "%s/tuning.db", tmp_dir);
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK, "%s: %s", path,
               clattn_db_errmsg(NULL));
  return db;
}

static void expect_rate(const clattn_profile *p, int i, int m, int n, int k,
                        double median_s) {
  const clattn_gemm_rate *r = &p->gemm_rates[i];
  const double want = 2.0 * m * n * k / median_s * 1e-9;
  cr_expect(r->m == m && r->n == n && r->k == k,
            "rate %d: %dx%dx%d, not %dx%dx%d", i, r->m, r->n, r->k, m, n, k);
  cr_expect(fabs(r->gflops - want) <= 1e-9 * want, "rate %d: %.17g, not %.17g",
            i, r->gflops, want);
}

/* clattn_profile_for over a database with hand-made rows: the best current
 * "ok" row of each Xgemm class, the largest m n k first; rows of another
 * device, failed ones, ones of another tuning method and the projection
 * family's own ignored; none without a database. */
Test(gemm_rates, profile_for_reads_the_tuning_rows) {
  clattn_ctx *ctx = tu_ctx();
  clattn_profile rep = {.size = sizeof rep};
  cr_assert_eq(clattn_profile_reported(ctx, &rep), CLATTN_OK);
  const char *fp = rep.fingerprint;
  const int xm = clattn_tune_method("clblast-xgemm"),
            pm = clattn_tune_method("projection");
  cr_assert(xm > 0 && pm > 0);
  char path[512];
  clattn_db *db = open_db(path, sizeof path);
  put_row(db, fp, "clblast-xgemm", "m512 n512 k512", "MWG=64 NWG=64 KWG=16",
          "ok", 0.010, xm);
  put_row(db, fp, "clblast-xgemm", "m512 n512 k512", "MWG=32 NWG=32 KWG=16",
          "ok", 0.020, xm); /* slower: not the rate */
  put_row(db, fp, "clblast-xgemm", "m1024 n1024 k1024", "MWG=64 NWG=64 KWG=8",
          "failed", 0.001, xm);
  put_row(db, fp, "clblast-xgemm", "m768 n768 k768", "MWG=64 NWG=64 KWG=8",
          "ok", 0.001, xm + 1); /* another tuning method's */
  put_row(db, "another-device", "clblast-xgemm", "m256 n256 k256",
          "MWG=64 NWG=64 KWG=16", "ok", 0.001, xm);
  put_row(db, fp, "clblast-xgemm", "m2048 n512 k512", "MWG=64 NWG=64 KWG=16",
          "ok", 0.004, xm);
  /* the projection family's own times: never a rate (they would predict
   * the very calls they measured), even where faster */
  put_row(db, fp, "projection", "f32 m512 n512 in512", "scheme=1", "ok", 0.005,
          pm);
  put_row(db, fp, "projection", "f32 m1024 n512 in512", "scheme=2", "ok", 0.004,
          pm);

  clattn_profile p;
  memset(&p, 0xff, sizeof p);
  p.size = sizeof p;
  cr_assert_eq(clattn_profile_for(ctx, db, &p), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  cr_assert_eq(p.n_gemm_rates, 2, "%d rates", p.n_gemm_rates);
  expect_rate(&p, 0, 2048, 512, 512, 0.004);
  expect_rate(&p, 1, 512, 512, 512, 0.010);

  /* the profile prices the projection of its shape */
  clattn_profile sheet = with_rates(p.gemm_rates, p.n_gemm_rates);
  clattn_prediction pr;
  predict_projection("m=512 n=512 k=512", NULL, &sheet, &pr);
  expect_priced(&pr, 0, p.gemm_rates[1].gflops, "the tuned rate");

  memset(&p, 0xff, sizeof p);
  p.size = sizeof p;
  cr_assert_eq(clattn_profile_for(ctx, NULL, &p), CLATTN_OK);
  cr_expect_eq(p.n_gemm_rates, 0, "no database: %d rates", p.n_gemm_rates);
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
}

/* More shapes than the profile holds: the CLATTN_PROFILE_GEMM_RATES
 * largest, largest first. */
Test(gemm_rates, profile_for_keeps_the_largest_shapes) {
  clattn_ctx *ctx = tu_ctx();
  clattn_profile rep = {.size = sizeof rep};
  cr_assert_eq(clattn_profile_reported(ctx, &rep), CLATTN_OK);
  const int xm = clattn_tune_method("clblast-xgemm");
  const int extra = 5, total = CLATTN_PROFILE_GEMM_RATES + extra;
  char path[512], cls[64];
  clattn_db *db = open_db(path, sizeof path);
  for (int i = 0; i < total; i++) { /* m = 64, 128, ... */
    snprintf(cls, sizeof cls, "m%d n256 k256", 64 * (i + 1));
    put_row(db, rep.fingerprint, "clblast-xgemm", cls, "MWG=64", "ok", 0.01,
            xm);
  }
  clattn_profile p;
  memset(&p, 0xff, sizeof p);
  p.size = sizeof p;
  cr_assert_eq(clattn_profile_for(ctx, db, &p), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  cr_assert_eq(p.n_gemm_rates, CLATTN_PROFILE_GEMM_RATES);
  for (int i = 0; i < CLATTN_PROFILE_GEMM_RATES; i++)
    expect_rate(&p, i, 64 * (total - i), 256, 256, 0.01);
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
}
