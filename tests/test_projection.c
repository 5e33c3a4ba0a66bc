/* test_projection.c - the projection family (the layers' projections) against
 * the plain-C reference (ref_gemm), through the generic call path: the own
 * kernel's dense case (cl/cvmm.cl) with its automatic plan and explicit
 * CPU-shaped (variant 1) and GPU-shaped (variant 2) params, and the
 * CLBlast scheme (Sgemm, Sgemv rows for up to CLATTN_LAYER_GEMV_ROWS
 * rows), on odd shapes and m = 1 .. 4; bad descriptions and params get
 * their status and a message naming the problem. */
#include "family_call.h"
#include "call/call.h"
#include "family/cvmm.h"
#include "family/plan.h"
#include "reference/ref_cvmm.h"
#include "util.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const clattn__family *family(void) {
  const clattn__family *F = clattn__family_find("projection");
  cr_assert_not_null(F, "gemm is not registered");
  return F;
}

/* Run m x n x k with params p (NULL: automatic) against the reference,
 * the output filled with NaN first. */
static void run_case(clattn_ctx *ctx, int m, int n, int k,
                     const clattn_params *p, const char *what) {
  tu_rng rng =
      tu_rng_seed(11u + (uint64_t)m * 1000u + (uint64_t)n * 7u + (uint64_t)k);
  const size_t na = (size_t)m * k, nw = (size_t)k * n, no = (size_t)m * n;
  float *a = tu_alloc(na * 4), *w = tu_alloc(nw * 4);
  float *want = tu_alloc(no * 4), *got = tu_alloc(no * 4);
  tu_fill(&rng, a, na, 1.0f);
  tu_fill(&rng, w, nw, 1.0f);
  ref_gemm(m, n, k, a, w, want);
  cl_mem bufs[3] = {tu_upload(ctx, a, na, CLATTN_F32),
                    tu_upload(ctx, w, nw, CLATTN_F32),
                    tu_sentinel(ctx, no, CLATTN_F32, 0xff)};
  const clattn__gemm_desc d = {m, n, k};
  const clattn_status st = tu_family_call(ctx, family(), &d, p, bufs, NULL);
  if (!tu_unsupported_ok(ctx, st, p)) {
    cr_assert_eq(st, CLATTN_OK, "%s: %s", what, clattn_ctx_errmsg(ctx));
    tu_download(ctx, bufs[2], got, no, CLATTN_F32);
    tu_check(what, got, want, no, clattn__tolerance(CLATTN_F32));
  }
  for (int i = 0; i < 3; i++)
    tu_release(bufs[i]);
  free(a);
  free(w);
  free(want);
  free(got);
}

static const int shapes[][3] = {
    {1, 1, 1},
    {1, 5, 3},
    {2, 17, 9},
    {3, 29, 23},
    {4, 64, 32},
    {5, 33, 17},
    {37, 29, 23},
    {64, 64, 64},
    {100, 76, 412},
    {129, 130, 67},
    {7, 3, 100},
    /* rows of W 512 bytes apart (the register kernel packs W's panel) */
    {33, 128, 50},
    {5, 256, 19},
};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

/* Left out of the simulators' subset (CLATTN_TEST_SUBSET=small). */
static int big(int i) {
  return (long)shapes[i][0] * shapes[i][1] * shapes[i][2] > 100000;
}

/* The own kernel: automatic, then explicit variant 1 and 2 params
 * {variant, rows, keys, wg, splits, prefetch, scheme}. */
static const clattn_params own[] = {
    {.size = sizeof(clattn_params), .scheme = 1},
    {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 16, .scheme = 1},
    {.size = sizeof(clattn_params), .variant = 1, .rows = 8, .keys = 32, .splits = 16, .scheme = 1},
    {.size = sizeof(clattn_params), .variant = 1, .rows = 3, .keys = 24, .wg = 2, .splits = 5, .scheme = 1},
    {.size = sizeof(clattn_params), .variant = 1, .rows = 12, .keys = 80, .scheme = 1},
    {.size = sizeof(clattn_params), .variant = 1, .rows = 1, .keys = 7, .splits = 1, .scheme = 1},
    {.size = sizeof(clattn_params), .variant = 2, .rows = 4, .keys = 16, .wg = 64, .scheme = 1},
    {.size = sizeof(clattn_params), .variant = 2, .rows = 2, .keys = 32, .wg = 64, .splits = 8, .scheme = 1},
    {.size = sizeof(clattn_params), .variant = 2, .rows = 1, .keys = 64, .wg = 64, .scheme = 1},
};

Test(projection, own_kernel, .timeout = 900) {
  clattn_ctx *ctx = tu_ctx();
  const int np = (int)(sizeof own / sizeof own[0]);
  for (int i = 0; i < NSHAPES; i++)
    for (int p = 0; p < np; p++) {
      if (tu_subset("small") && ((p != 0 && p != 2 && p != 6) || big(i)))
        continue;
      char what[128];
      snprintf(what, sizeof what, "own %dx%dx%d params %d", shapes[i][0],
               shapes[i][1], shapes[i][2], p);
      run_case(ctx, shapes[i][0], shapes[i][1], shapes[i][2], &own[p], what);
    }
  clattn_ctx_destroy(ctx);
}

/* CLBlast, the default: GEMV rows up to CLATTN_LAYER_GEMV_ROWS, then
 * Sgemm (one process: CLBlast builds its kernels once). */
Test(projection, clblast, .timeout = 900) {
  clattn_ctx *ctx = tu_ctx();
  const clattn_params cb = {.size = sizeof(clattn_params), .scheme = 2};
  for (int i = 0; i < NSHAPES; i++) {
    if (tu_subset("small") && (i % 3 != 0 || big(i)))
      continue;
    char what[128];
    snprintf(what, sizeof what, "clblast %dx%dx%d", shapes[i][0], shapes[i][1],
             shapes[i][2]);
    run_case(ctx, shapes[i][0], shapes[i][1], shapes[i][2], i % 2 ? &cb : NULL,
             what);
    clattn_choice ch = {.size = sizeof(clattn_choice)};
    cr_assert_eq(clattn_ctx_last_choice(ctx, &ch), CLATTN_OK);
    cr_expect_eq(tu_params(ch.resolved).scheme, 2, "%s: scheme %d", what,
                 tu_params(ch.resolved).scheme);
  }
  clattn_ctx_destroy(ctx);
}

/* With the opt-in (clattn_ctx_opts.clblast_override), the CLBlast scheme
 * applies the device's tuned Xgemm parameters before its first GEMM, as a
 * layer does (else a direct call, the tuner's and the bench's included,
 * ran CLBlast's defaults), and the own kernel does not touch CLBlast.
 * Without it, the choice settles the context's GEMMs at its first call,
 * whatever the scheme, and (no tuned entry here) keeps no range off
 * CLBlast. */
Test(projection, clblast_applies_xgemm) {
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  clattn_ctx *ctx = NULL;
  o.clblast_override = 1;
  cr_assert_eq(clattn_ctx_create(&o, &ctx), CLATTN_OK, "%s",
               clattn_ctx_errmsg(NULL));
  cr_assert_not_null(ctx->gemm_prepare);
  const clattn_params own_p = {.size = sizeof(clattn_params), .scheme = 1};
  run_case(ctx, 5, 33, 17, &own_p, "own before the CLBlast call");
  cr_expect_eq(ctx->gemm_explain[0], '\0',
               "the own kernel applied Xgemm parameters: %s",
               ctx->gemm_explain);
  const clattn_params cb = {.size = sizeof(clattn_params), .scheme = 2};
  run_case(ctx, 37, 29, 23, &cb, "clblast after the own kernel");
  cr_expect_neq(ctx->gemm_explain[0], '\0',
                "the CLBlast scheme ran without applying the Xgemm "
                "parameters");
  clattn_ctx_destroy(ctx);

  ctx = tu_ctx();
  run_case(ctx, 5, 33, 17, &own_p, "own, default options");
  cr_expect_neq(ctx->gemm_explain[0], '\0', "the choice did not settle");
  cr_expect_eq(ctx->gemm_own_from, 0.0);
  cr_expect(strstr(ctx->gemm_explain, "CLBlast defaults") != NULL, "%s",
            ctx->gemm_explain);
  clattn_ctx_destroy(ctx);
}

/* Where a tuned Xgemm entry covers a GEMM and the context leaves CLBlast
 * alone (gemm_own_from), the automatic plan is the own kernel's and the
 * CLBlast scheme does not fit the library's own picks; GEMV rows and
 * smaller GEMMs keep CLBlast; explicit CLBlast params still run it. */
Test(projection, own_kernel_where_xgemm_is_tuned) {
  clattn_ctx *ctx = tu_ctx();
  clattn__target t = clattn__ctx_target(ctx);
  t.gemm_own_from = 16.0 * 16 * 16;
  _Alignas(16) unsigned char pl[CLATTN__PLAN_MAX];
  char why[256] = "";
  const clattn_params cb = {.size = sizeof(clattn_params), .scheme = 2};
  clattn__params cb_values;
  cr_assert_eq(clattn__params_in(family(), &cb, &cb_values, why, sizeof why),
               CLATTN_OK, "%s", why);
  const struct {
    int m, n, k, own;
  } cases[] = {
      {24, 32, 32, 1}, {16, 16, 16, 1}, {4, 512, 512, 0}, {15, 16, 16, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const clattn__gemm_desc d = {cases[i].m, cases[i].n, cases[i].k};
    cr_assert_eq(clattn__plan_params(family(), &t, &d, NULL, pl, why, sizeof why),
                 CLATTN_OK, "%s", why);
    char text[128];
    const clattn__params r = family()->resolved(pl);
    clattn__params_format(family(), &r, text, sizeof text);
    cr_expect_eq(tu_params(text).scheme, cases[i].own ? 1 : 2, "%dx%dx%d",
                 cases[i].m, cases[i].n, cases[i].k);
    const clattn_status st = clattn__plan_params(family(), &t, &d, &cb_values,
                                                 pl, why, sizeof why);
    cr_expect_eq(st, cases[i].own ? CLATTN_ERR_UNSUPPORTED : CLATTN_OK,
                 "%dx%dx%d: %s", cases[i].m, cases[i].n, cases[i].k, why);
    if (cases[i].own)
      cr_expect(strstr(why, "clblast_override") != NULL, "%s", why);
  }
  /* through the call: the context as gemm_apply.c leaves it without the
   * opt-in when an entry covers 16^3 and up */
  snprintf(ctx->gemm_explain, sizeof ctx->gemm_explain, "settled");
  ctx->gemm_own_from = 16.0 * 16 * 16;
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  run_case(ctx, 37, 29, 23, NULL, "automatic in the tuned range");
  cr_assert_eq(clattn_ctx_last_choice(ctx, &ch), CLATTN_OK);
  cr_expect_eq(tu_params(ch.resolved).scheme, 1, "%s", ch.why);
  run_case(ctx, 37, 29, 23, &cb, "explicit CLBlast in the tuned range");
  cr_assert_eq(clattn_ctx_last_choice(ctx, &ch), CLATTN_OK);
  cr_expect_eq(tu_params(ch.resolved).scheme, 2, "%s", ch.why);
  clattn_ctx_destroy(ctx);
}

/* Events: the caller's wait list and an out event, on both schemes. */
Test(projection, events) {
  clattn_ctx *ctx = tu_ctx();
  const clattn_params ps[2] = {{.size = sizeof(clattn_params), .scheme = 1},
                               {.size = sizeof(clattn_params), .scheme = 2}};
  for (int s = 0; s < 2; s++) {
    cl_int err;
    cl_event user = clCreateUserEvent(clattn_ctx_cl_context(ctx), &err);
    cr_assert_eq(err, CL_SUCCESS);
    cl_event done = NULL;
    const clattn_events ev = {sizeof(clattn_events), 1, &user, &done};
    const float x[30] = {0};
    cl_mem bufs[3] = {tu_upload(ctx, x, 6 * 4, CLATTN_F32),
                      tu_upload(ctx, x, 4 * 5, CLATTN_F32),
                      tu_buffer(ctx, 6 * 5 * 4)};
    const clattn__gemm_desc d = {6, 5, 4};
    cr_assert_eq(tu_family_call(ctx, family(), &d, &ps[s], bufs, &ev),
                 CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
    cr_assert_not_null(done);
    cr_assert_eq(clSetUserEventStatus(user, CL_COMPLETE), CL_SUCCESS);
    cr_expect_eq(clWaitForEvents(1, &done), CL_SUCCESS);
    clReleaseEvent(done);
    clReleaseEvent(user);
    for (int i = 0; i < 3; i++)
      tu_release(bufs[i]);
  }
  clattn_ctx_destroy(ctx);
}

static void expect_refused(clattn_ctx *ctx, const clattn__gemm_desc *d,
                           const clattn_params *p, clattn_status want,
                           const char *word) {
  cl_mem bufs[3] = {tu_buffer(ctx, 1 << 16), tu_buffer(ctx, 1 << 16),
                    tu_buffer(ctx, 1 << 16)};
  const clattn_status st = tu_family_call(ctx, family(), d, p, bufs, NULL);
  cr_expect_eq(st, want, "status %s, want %s (%s)", clattn_status_str(st),
               clattn_status_str(want), clattn_ctx_errmsg(ctx));
  cr_expect(strstr(clattn_ctx_errmsg(ctx), word) != NULL,
            "message \"%s\" does not name %s", clattn_ctx_errmsg(ctx), word);
  for (int i = 0; i < 3; i++)
    tu_release(bufs[i]);
}

Test(projection, misuse) {
  clattn_ctx *ctx = tu_ctx();
  const clattn__gemm_desc ok = {8, 40, 8};
  clattn__gemm_desc d = ok;
  d.m = 0;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "m (0)");
  d = ok;
  d.k = -3;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "k (-3)");
  d = ok;
  d.m = d.k = INT_MAX;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "overflow");
  const clattn_params scheme = {.size = sizeof(clattn_params), .scheme = 3};
  d = ok;
  expect_refused(ctx, &d, &scheme, CLATTN_ERR_INVALID_ARG, "scheme");
  const clattn_params cb = {.size = sizeof(clattn_params), .variant = 1, .scheme = 2};
  expect_refused(ctx, &d, &cb, CLATTN_ERR_INVALID_ARG, "CLBlast");
  const clattn_params keys = {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 17, .scheme = 1};
  expect_refused(ctx, &d, &keys, CLATTN_ERR_INVALID_ARG, "keys");
  const clattn_params big = {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 16, .splits = 4096, .scheme = 1};
  expect_refused(ctx, &d, &big, CLATTN_ERR_INVALID_ARG, "splits");
  /* a buffer smaller than the shape names it */
  cl_mem small[3] = {tu_buffer(ctx, 1 << 16), tu_buffer(ctx, 16),
                     tu_buffer(ctx, 1 << 16)};
  cr_expect_eq(clattn__call(ctx, family(), &ok, NULL, small, NULL),
               CLATTN_ERR_BUFFER_TOO_SMALL, "%s", clattn_ctx_errmsg(ctx));
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "w") != NULL, "%s",
            clattn_ctx_errmsg(ctx));
  for (int i = 0; i < 3; i++)
    tu_release(small[i]);
  clattn_ctx_destroy(ctx);
}

/* The model: CLBlast as an ideal GEMM (GEMV rows and the zero fill for
 * short inputs), the own kernel with 2 m n k FLOPs; both move every
 * matrix at least once. */
Test(projection, model) {
  clattn_profile prof = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_datasheet_find("A100", &prof), CLATTN_OK);
  clattn_prediction pr = {.size = sizeof(clattn_prediction)};
  clattn__gemm_desc d = {512, 256, 128};
  cr_assert_eq(tu_family_model(family(), &d, NULL, &prof, &pr), CLATTN_OK);
  cr_expect_eq(pr.n_kernels, 1);
  cr_expect_eq(pr.total.flops, 2.0 * 512 * 256 * 128);
  cr_expect_eq(tu_params(pr.params).scheme, 2);
  cr_expect_eq(pr.total.launches, 1);
  d.m = 3;
  cr_assert_eq(tu_family_model(family(), &d, NULL, &prof, &pr), CLATTN_OK);
  cr_expect_eq(pr.total.launches, 4, "3 GEMV rows and the fill");
  const clattn_params own1 = {.size = sizeof(clattn_params), .scheme = 1};
  d.m = 100;
  cr_assert_eq(tu_family_model(family(), &d, &own1, &prof, &pr), CLATTN_OK, "%s",
               pr.errmsg);
  cr_expect_eq(pr.total.flops, 2.0 * 100 * 256 * 128);
  cr_expect(pr.total.bytes_read >= 4.0 * (100 * 128 + 128 * 256));
  cr_expect_eq(pr.total.bytes_written, 4.0 * 100 * 256);
  cr_expect_eq(tu_params(pr.params).scheme, 1);
}
