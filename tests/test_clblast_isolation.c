/* test_clblast_isolation.c - a context leaves CLBlast's parameters alone
 * unless it opts in (clattn_ctx_opts.clblast_override).
 *
 * CLBlastOverrideParameters is defined here: the executable's definition
 * comes first in the dynamic lookup, so libclattn's calls reach it; it
 * counts them and forwards to CLBlast's (dlsym RTLD_NEXT).  The tuning
 * database holds a tuned Xgemm row for this device's vendor and arch whose
 * range (m*n*k from 16^3) covers every projection GEMM of the layer below,
 * and a projection row that picks CLBlast: with default options a layer's
 * prefill and decode issue no override, its projections in that range run
 * the own GEMM kernel, the outputs match the plain-C reference, and the
 * application's own CLBlastSgemm afterwards matches a plain-C GEMM; with
 * the opt-in the override is issued (so the counter is live).  Criterion
 * runs each test in a process of its own, so CLBlast's process-wide state
 * starts fresh in each. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include "tmpdir.h"
#include "util.h"

#include <clblast_c.h>
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ the interposer */

static int overrides; /* calls of CLBlastOverrideParameters in this process */

CLBlastStatusCode CLBlastOverrideParameters(const cl_device_id device,
                                            const char *kernel_name,
                                            const CLBlastPrecision precision,
                                            const size_t num_parameters,
                                            const char **parameters_names,
                                            const size_t *parameters_values) {
  typedef CLBlastStatusCode (*fn)(const cl_device_id, const char *,
                                  const CLBlastPrecision, const size_t,
                                  const char **, const size_t *);
  static fn real;
  overrides++;
  if (real == NULL)
    *(void **)&real = dlsym(RTLD_NEXT, "CLBlastOverrideParameters");
  if (real == NULL)
    return CLBlastNotImplemented;
  return real(device, kernel_name, precision, num_parameters, parameters_names,
              parameters_values);
}

/* ------------------------------------------------------ the database */

static char tmp_dir[256];
static char db_path[512];

/* An Xgemm configuration every OpenCL CPU device runs (no local memory,
 * 256 work-items). */
#define XGEMM_PARAMS                                                           \
  "GEMMK=0 KREG=1 KWG=16 KWI=2 MDIMA=16 MDIMC=16 MWG=128 NDIMB=16 NDIMC=16 "   \
  "NWG=128 SA=0 SB=0 STRM=0 STRN=0 VWM=4 VWN=4"

static clattn_tune_entry row(const clattn_profile *p, const char *kernel,
                             const char *cls, const char *params) {
  clattn_tune_entry e = {.size = sizeof(clattn_tune_entry)};
  snprintf(e.fingerprint, sizeof e.fingerprint, "another-device");
  snprintf(e.device, sizeof e.device, "a device like %.100s", p->name);
  snprintf(e.vendor, sizeof e.vendor, "%s", p->vendor);
  snprintf(e.arch, sizeof e.arch, "%s", p->arch);
  snprintf(e.kernel, sizeof e.kernel, "%s", kernel);
  snprintf(e.shape_class, sizeof e.shape_class, "%s", cls);
  snprintf(e.params, sizeof e.params, "%s", params);
  snprintf(e.status, sizeof e.status, "ok");
  snprintf(e.strategy, sizeof e.strategy, "test");
  snprintf(e.updated, sizeof e.updated, "2025-06-01T00:00:00Z");
  e.median_s = 1e-4;
  e.tune_method = clattn_tune_method(kernel);
  return e;
}

/* The database: the Xgemm row (the kin tier: the same vendor and arch, as
 * a row of this device would be) and a projection row choosing CLBlast. */
static void setup(void) {
  tt_mkdtemp(tmp_dir, sizeof tmp_dir, "clblast-isolation");
  snprintf(db_path, sizeof db_path, "%s/tuning.db", tmp_dir);
  clattn_ctx *ctx = tu_ctx();
  clattn_profile p = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_profile_reported(ctx, &p), CLATTN_OK);
  clattn_ctx_destroy(ctx);
  if (!p.arch[0])
    cr_skip_test("the device reports no arch: no row can match it");
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(db_path, &db), CLATTN_OK, "%s",
               clattn_db_errmsg(NULL));
  const clattn_tune_entry e[2] = {
      row(&p, "clblast-xgemm", "m16 n16 k16", XGEMM_PARAMS),
      row(&p, "projection", "f32 m32 n32 in32",
          "variant=0 rows=0 keys=0 wg=0 splits=0 prefetch=0 scheme=2")};
  for (int i = 0; i < 2; i++)
    cr_assert_eq(clattn_db_put_tune(db, &e[i]), CLATTN_OK, "row %d: %s", i,
                 clattn_db_errmsg(db));
  clattn_db_close(db);
  cr_assert_eq(overrides, 0, "setting up issued an override");
}

static void teardown(void) { tt_rm_rf(tmp_dir); }

TestSuite(clblast_isolation, .init = setup, .fini = teardown);

static clattn_ctx *ctx_with(int clblast_override) {
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  clattn_ctx *ctx = NULL;
  o.tuning_db = db_path;
  o.clblast_override = clblast_override;
  cr_assert_eq(clattn_ctx_create(&o, &ctx), CLATTN_OK, "%s",
               clattn_ctx_errmsg(NULL));
  return ctx;
}

/* ------------------------------------------------------------ the layer */

/* GQA; a prefill of P rows of B sequences (B*P = 24 rows: every GEMM is at
 * least 16^3), then decode steps (B rows: CLBlast's GEMV rows). */
#define B 2
#define N 16
#define P 12
#define D 32
#define HQ 4
#define HKV 2
#define DK 8

typedef struct layer_fx {
  float *w[4];
  cl_mem dw[4];
  clattn_layer *layer;
} layer_fx;

static void layer_make(clattn_ctx *ctx, layer_fx *f) {
  const size_t n[4] = {(size_t)D * HQ * DK, (size_t)D * HKV * DK,
                       (size_t)D * HKV * DK, (size_t)HQ * DK * D};
  tu_rng g = tu_rng_seed(33);
  for (int i = 0; i < 4; i++) {
    f->w[i] = tu_alloc(n[i] * 4);
    tu_fill(&g, f->w[i], n[i], 1.7f / sqrtf((float)(i < 3 ? D : HQ * DK)));
    f->dw[i] = tu_upload(ctx, f->w[i], n[i], CLATTN_F32);
  }
  const clattn_layer_desc ld = {.size = sizeof(clattn_layer_desc),
                                .d_model = D,
                                .heads_q = HQ,
                                .heads_kv = HKV,
                                .head_dim_k = DK,
                                .head_dim_v = DK,
                                .scale = 0};
  cr_assert_eq(clattn_layer_create(ctx, &ld, f->dw[0], f->dw[1], f->dw[2],
                                   f->dw[3], &f->layer),
               CLATTN_OK, "layer: %s", clattn_ctx_errmsg(ctx));
}

static void layer_free(layer_fx *f) {
  clattn_layer_destroy(f->layer);
  for (int i = 0; i < 4; i++) {
    tu_release(f->dw[i]);
    free(f->w[i]);
  }
}

/* ------------------------------------------ the application's own GEMM */

/* C = A B through CLBlastSgemm on the context's queue, row-major, odd
 * sizes, against a plain-C GEMM in double. */
static void app_sgemm(clattn_ctx *ctx) {
  enum { M = 131, NN = 75, K = 53 };
  float *a = tu_alloc(sizeof(float) * M * K),
        *b = tu_alloc(sizeof(float) * K * NN),
        *c = tu_alloc(sizeof(float) * M * NN),
        *want = tu_alloc(sizeof(float) * M * NN);
  tu_rng g = tu_rng_seed(5);
  tu_fill(&g, a, (size_t)M * K, 1.0f);
  tu_fill(&g, b, (size_t)K * NN, 1.0f);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < NN; j++) {
      double acc = 0;
      for (int p = 0; p < K; p++)
        acc += (double)a[i * K + p] * b[p * NN + j];
      want[i * NN + j] = (float)acc;
    }
  cl_mem da = tu_upload(ctx, a, (size_t)M * K, CLATTN_F32),
         db = tu_upload(ctx, b, (size_t)K * NN, CLATTN_F32),
         dc = tu_sentinel(ctx, (size_t)M * NN, CLATTN_F32, 0xff);
  cl_command_queue q = clattn_ctx_queue(ctx);
  CLBlastStatusCode s = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                                     CLBlastTransposeNo, M, NN, K, 1.0f, da, 0,
                                     K, db, 0, NN, 0.0f, dc, 0, NN, &q, NULL);
  cr_assert_eq(s, CLBlastSuccess, "CLBlastSgemm: %d", (int)s);
  tu_download(ctx, dc, c, (size_t)M * NN, CLATTN_F32);
  tu_check("the application's CLBlastSgemm", c, want, (size_t)M * NN,
           clattn__tolerance(CLATTN_F32));
  tu_release(da);
  tu_release(db);
  tu_release(dc);
  free(a);
  free(b);
  free(c);
  free(want);
}

/* ---------------------------------------------------------------- tests */

/* Default options: no override from the layer's create, prefill and
 * decode, nor from clattn_explain_gemm, though a tuned Xgemm entry covers
 * the projections (the library before the opt-in overrode CLBlast at the
 * layer's create); the projections run the own kernel, the layer is
 * right, and so is the application's CLBlast afterwards. */
Test(clblast_isolation, default_issues_no_override, .timeout = 600) {
  clattn_ctx *ctx = ctx_with(0);
  layer_fx f;
  layer_make(ctx, &f);
  cr_expect_eq(overrides, 0, "clattn_layer_create issued %d overrides",
               overrides);

  const size_t nx = (size_t)B * N * D;
  float *x = tu_alloc(nx * 4), *y = tu_alloc(nx * 4), *yref = tu_alloc(nx * 4);
  tu_rng g = tu_rng_seed(9);
  tu_fill(&g, x, nx, 1.0f);
  clattn_kv_cache *cache = NULL;
  cr_assert_eq(clattn_kv_cache_create(f.layer, B, N, &cache), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  tu_layer_prefill_rows(ctx, f.layer, cache, B, N, D, x, 0, P, 1, y);
  cr_expect_eq(overrides, 0, "clattn_layer_prefill issued %d overrides",
               overrides);
  /* the prefill's last call is its output projection, 24 x 32 x 32 */
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  cr_assert_eq(clattn_ctx_last_choice(ctx, &ch), CLATTN_OK);
  cr_log_info("output projection: %s (scheme %d): %s", ch.shape_class,
              tu_params(ch.resolved).scheme, ch.why);
  cr_expect_eq(tu_params(ch.resolved).scheme, 1,
               "the projection in the tuned Xgemm's range ran scheme %d, not "
               "the own kernel: %s",
               tu_params(ch.resolved).scheme, ch.why);
  tu_layer_decode_rows(ctx, f.layer, cache, B, N, D, x, P, y);
  cr_expect_eq(overrides, 0, "clattn_layer_decode issued %d overrides",
               overrides);
  ref_layer(B, N, D, HQ, HKV, DK, DK, 1.0 / sqrt((double)DK), 1, x, f.w[0],
            f.w[1], f.w[2], f.w[3], yref);
  tu_check("prefill then decode", y, yref, nx, clattn__tolerance(CLATTN_F32));

  char buf[1024];
  cr_assert_eq(clattn_explain_gemm(ctx, buf, sizeof buf), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  cr_log_info("%s", buf);
  cr_expect(strstr(buf, "own GEMM kernel") != NULL, "%s", buf);
  cr_expect(strstr(buf, "m16 n16 k16") != NULL, "%s", buf);
  cr_expect_eq(overrides, 0, "clattn_explain_gemm issued %d overrides",
               overrides);

  app_sgemm(ctx);
  cr_expect_eq(overrides, 0, "%d overrides in all", overrides);
  clattn_kv_cache_destroy(cache);
  layer_free(&f);
  free(x);
  free(y);
  free(yref);
  clattn_ctx_destroy(ctx);
}

/* The opt-in: the layer's create applies the tuned entry to CLBlast (the
 * Xgemm parameters and the GemmRoutine's indirect size), and
 * clattn_explain_gemm says so. */
Test(clblast_isolation, opt_in_overrides, .timeout = 600) {
  clattn_ctx *ctx = ctx_with(1);
  layer_fx f;
  layer_make(ctx, &f);
  cr_expect_geq(overrides, 1, "the opt-in issued no override");
  char buf[1024];
  cr_assert_eq(clattn_explain_gemm(ctx, buf, sizeof buf), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  cr_log_info("%s", buf);
  cr_expect(strstr(buf, "clblast-xgemm: tuned entry m16 n16 k16") != NULL, "%s",
            buf);
  cr_expect(strstr(buf, XGEMM_PARAMS) != NULL, "%s", buf);
  layer_free(&f);
  clattn_ctx_destroy(ctx);
}
