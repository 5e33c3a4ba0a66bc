/* test_cvmm.c - the cvmm family (SwitchHead's expert-routed GEMM,
 * cl/cvmm.cl) against the plain-C reference (ref_cvmm), through the
 * generic call path: SPLIT and SUM, top-k routing and none, rows, inner
 * and columns that divide no tile, fewer rows than a tile, top-k of 1 and
 * of every expert, one expert, exact ties (duplicate selection columns:
 * the lower expert wins), experts no row chooses, the automatic plan and
 * explicit CPU-shaped (variant 1) and GPU-shaped (variant 2) params, the
 * fused small-rows path (scheme 2) for every row count it takes, equal
 * to the bucketed path (scheme 1) on the same inputs; bad
 * descriptions get their status and a message naming the problem. */
#include "family_call.h"
#include "call/call.h"
#include "family/cvmm.h"
#include "reference/ref_cvmm.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const clattn__family *family(void) {
  const clattn__family *F = clattn__family_find("cvmm");
  cr_assert_not_null(F, "cvmm is not registered");
  return F;
}

/* How a case's selection weights are made. */
enum { SEL_RANDOM, SEL_TIES, SEL_DEAD };

typedef struct cv_shape {
  int rows, inner, cols, heads, experts, topk, sel_inner;
  clattn__cvmm_mode mode;
  clattn__cvmm_gate gate;
  int sel;
} cv_shape;

static size_t a_elems(const clattn__cvmm_desc *d) {
  return (size_t)d->rows * d->inner *
         (d->mode == CLATTN__CVMM_SUM ? (size_t)d->heads : 1);
}

static size_t out_elems(const clattn__cvmm_desc *d) {
  return (size_t)d->rows * d->cols *
         (d->mode == CLATTN__CVMM_SPLIT ? (size_t)d->heads : 1);
}

/* Selection inputs: random, or with head 0's even experts duplicating
 * expert 1's column (exact ties in every row), or with experts 1 and 2 of
 * every head far below the rest (sel_x's column 0 is 1: a bias). */
static void make_sel(tu_rng *rng, const clattn__cvmm_desc *d, int kind,
                     float *sx, float *ws) {
  const int he = d->heads * d->experts;
  tu_fill(rng, sx, (size_t)d->rows * d->sel_inner, 1.0f);
  tu_fill(rng, ws, (size_t)d->sel_inner * he, 1.0f);
  if (kind == SEL_TIES && d->experts > 2)
    for (int i = 0; i < d->sel_inner; i++)
      for (int e = 2; e < d->experts; e += 2)
        ws[(size_t)i * he + e] = ws[(size_t)i * he + 1];
  if (kind == SEL_DEAD) {
    for (int r = 0; r < d->rows; r++)
      sx[(size_t)r * d->sel_inner] = 1.0f;
    for (int h = 0; h < d->heads; h++)
      for (int e = 1; e < d->experts && e < 3; e++)
        ws[h * d->experts + e] = -200.0f;
  }
}

/* Run d with params p on the device (the output filled with NaN first)
 * and compare with the reference. */
static void run_case(clattn_ctx *ctx, const clattn__cvmm_desc *d,
                     const clattn_params *p, int sel, const char *what,
                     float *keep) {
  tu_rng rng = tu_rng_seed(77u + (uint64_t)d->rows * 131u +
                           (uint64_t)d->inner * 7u + (uint64_t)d->cols);
  const int he = d->heads * d->experts;
  const size_t na = a_elems(d), no = out_elems(d);
  const size_t nsx = (size_t)d->rows * d->sel_inner;
  const size_t nws = (size_t)d->sel_inner * he;
  const size_t nw = (size_t)he * d->inner * d->cols;
  float *a = tu_alloc(na * 4), *sx = tu_alloc(nsx * 4 + 4);
  float *ws = tu_alloc(nws * 4 + 4), *w = tu_alloc(nw * 4);
  float *want = tu_alloc(no * 4), *got = tu_alloc(no * 4);
  tu_fill(&rng, a, na, 1.0f);
  tu_fill(&rng, w, nw, 1.0f);
  const int none = d->gate == CLATTN__CVMM_NONE;
  if (!none)
    make_sel(&rng, d, sel, sx, ws);
  ref_cvmm(d->rows, d->inner, d->cols, d->heads, d->experts, d->topk,
           d->sel_inner, d->mode == CLATTN__CVMM_SPLIT ? 1 : 2, none, a, sx, ws,
           w, want);
  cl_mem bufs[5] = {tu_upload(ctx, a, na, CLATTN_F32),
                    none ? NULL : tu_upload(ctx, sx, nsx, CLATTN_F32),
                    none ? NULL : tu_upload(ctx, ws, nws, CLATTN_F32),
                    tu_upload(ctx, w, nw, CLATTN_F32),
                    tu_sentinel(ctx, no, CLATTN_F32, 0xff)};
  const clattn_status st = tu_family_call(ctx, family(), d, p, bufs, NULL);
  if (!tu_unsupported_ok(ctx, st, p)) {
    cr_assert_eq(st, CLATTN_OK, "%s: %s", what, clattn_ctx_errmsg(ctx));
    tu_download(ctx, bufs[4], got, no, CLATTN_F32);
    tu_check(what, got, want, no, clattn__tolerance(CLATTN_F32));
    if (keep != NULL)
      memcpy(keep, got, no * 4);
  }
  for (int i = 0; i < 5; i++)
    if (bufs[i])
      tu_release(bufs[i]);
  free(a);
  free(sx);
  free(ws);
  free(w);
  free(want);
  free(got);
}

#define SPLIT CLATTN__CVMM_SPLIT
#define SUM CLATTN__CVMM_SUM
#define TOPK CLATTN__CVMM_TOPK
#define NONE CLATTN__CVMM_NONE

static const cv_shape shapes[] = {
    /* SwitchHead-like, odd sizes: no tile divides rows, inner or cols */
    {37, 29, 19, 2, 5, 3, 23, SPLIT, TOPK, SEL_RANDOM},
    {37, 19, 29, 2, 5, 3, 23, SUM, TOPK, SEL_RANDOM},
    /* fewer rows than any tile; top-1 */
    {3, 16, 33, 3, 4, 1, 9, SPLIT, TOPK, SEL_RANDOM},
    {5, 7, 40, 3, 4, 1, 9, SUM, TOPK, SEL_RANDOM},
    /* every expert (k == E): deterministic buckets */
    {70, 12, 17, 2, 3, 3, 11, SPLIT, TOPK, SEL_RANDOM},
    {70, 17, 12, 2, 3, 3, 11, SUM, TOPK, SEL_RANDOM},
    /* exact ties: duplicate selection columns */
    {41, 9, 21, 2, 6, 2, 13, SPLIT, TOPK, SEL_TIES},
    {41, 21, 9, 2, 6, 3, 13, SUM, TOPK, SEL_TIES},
    /* experts no row chooses (and k == E: gates of ~0) */
    {53, 15, 18, 2, 5, 2, 10, SPLIT, TOPK, SEL_DEAD},
    {53, 18, 15, 3, 5, 5, 10, SUM, TOPK, SEL_DEAD},
    /* one expert: routed (its sigmoid gate) and not */
    {19, 11, 13, 3, 1, 1, 7, SPLIT, TOPK, SEL_RANDOM},
    {19, 13, 11, 3, 1, 1, 7, SUM, TOPK, SEL_RANDOM},
    {23, 11, 13, 3, 1, 1, 7, SPLIT, NONE, SEL_RANDOM},
    {23, 13, 11, 3, 1, 1, 7, SUM, NONE, SEL_RANDOM},
    /* one column, one inner, many experts */
    {33, 1, 1, 1, 9, 4, 5, SPLIT, TOPK, SEL_RANDOM},
    /* wide: several column blocks and row tiles */
    {150, 40, 100, 2, 4, 2, 32, SPLIT, TOPK, SEL_RANDOM},
    {150, 40, 100, 2, 4, 2, 32, SUM, TOPK, SEL_RANDOM},
    /* rows of W 512 bytes apart (W's panel packed) */
    {40, 21, 128, 2, 3, 2, 16, SUM, TOPK, SEL_RANDOM},
    {37, 9, 256, 1, 1, 1, 5, SPLIT, NONE, SEL_RANDOM},
};

/* The automatic plan, then CPU-shaped and GPU-shaped explicit params:
 * {variant, rows, keys, wg, splits, prefetch, scheme}. */
static const clattn_params params[] = {
    {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 16},
    {.size = sizeof(clattn_params), .variant = 1, .rows = 8, .keys = 32, .splits = 16},
    {.size = sizeof(clattn_params), .variant = 1, .rows = 3, .keys = 8, .splits = 7},
    {.size = sizeof(clattn_params), .variant = 1, .rows = 12, .keys = 48, .wg = 4},
    {.size = sizeof(clattn_params), .variant = 1, .rows = 1, .keys = 4, .splits = 64},
    {.size = sizeof(clattn_params), .variant = 2, .rows = 4, .keys = 16, .wg = 64},
    {.size = sizeof(clattn_params), .variant = 2, .rows = 2, .keys = 32, .wg = 64, .splits = 24},
    {.size = sizeof(clattn_params), .variant = 2, .rows = 8, .keys = 16, .wg = 32},
};

static void sweep(int first, int last) {
  clattn_ctx *ctx = tu_ctx();
  const int np = (int)(sizeof params / sizeof params[0]);
  for (int i = first; i < last; i++)
    for (int p = -1; p < np; p++) {
      const cv_shape *s = &shapes[i];
      /* the simulators' subset: the automatic plan and one of each
       * variant, on the smaller shapes */
      if (tu_subset("small") &&
          ((p != -1 && p != 1 && p != 5) ||
           (long)s->rows * s->inner * s->cols * s->heads * s->topk > 100000))
        continue;
      const clattn__cvmm_desc d = {
          s->rows, s->inner,     s->cols, s->heads, s->experts,
          s->topk, s->sel_inner, s->mode, s->gate};
  const clattn_params *d_params = p < 0 ? NULL : &params[p];
      char what[200];
      snprintf(what, sizeof what,
               "rows %d K %d N %d H %d E %d k %d D %d %s %s sel %d params %d",
               s->rows, s->inner, s->cols, s->heads, s->experts, s->topk,
               s->sel_inner, s->mode == SPLIT ? "split" : "sum",
               s->gate == TOPK ? "topk" : "none", s->sel, p);
      /* Oclgrind 21.10 keeps a released buffer's shadow for the next
       * buffer of its number, so a larger routing scratch would read as
       * uninitialised: the simulators' subset takes a context a call */
      if (tu_subset("small")) {
        clattn_ctx *one = tu_ctx();
        run_case(one, &d, d_params, s->sel, what, NULL);
        clattn_ctx_destroy(one);
      } else {
        run_case(ctx, &d, d_params, s->sel, what, NULL);
      }
    }
  clattn_ctx_destroy(ctx);
}

enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

Test(cvmm, routed_odd_sizes, .timeout = 900) { sweep(0, 4); }
Test(cvmm, all_experts_and_ties, .timeout = 900) { sweep(4, 8); }
Test(cvmm, dead_experts_and_one_expert, .timeout = 900) { sweep(8, 14); }
Test(cvmm, wide, .timeout = 900) { sweep(14, NSHAPES); }

/* The fused small-rows path: shapes whose rows are varied from 1 to the
 * path's limit (11). */
static const cv_shape small_shapes[] = {
    /* SwitchHead-like, odd K and N */
    {0, 29, 19, 2, 5, 3, 23, SPLIT, TOPK, SEL_RANDOM},
    {0, 19, 29, 2, 5, 3, 23, SUM, TOPK, SEL_RANDOM},
    /* top-1, and top-k of every expert */
    {0, 16, 33, 3, 4, 1, 9, SPLIT, TOPK, SEL_RANDOM},
    {0, 7, 40, 3, 4, 4, 9, SUM, TOPK, SEL_RANDOM},
    /* exact ties, experts no row chooses */
    {0, 9, 21, 2, 6, 2, 13, SPLIT, TOPK, SEL_TIES},
    {0, 21, 9, 2, 6, 3, 13, SUM, TOPK, SEL_TIES},
    {0, 15, 18, 2, 5, 2, 10, SUM, TOPK, SEL_DEAD},
    /* no routing */
    {0, 11, 13, 3, 1, 1, 7, SPLIT, NONE, SEL_RANDOM},
    {0, 13, 11, 3, 1, 1, 7, SUM, NONE, SEL_RANDOM},
};

/* The fused path's params (the automatic plan, which takes it for these
 * rows, first; CPU-shaped and with work-groups of 16 and 64 items), and
 * the bucketed path's for the comparison (variant 1, then variant 2). */
static const clattn_params fused_params[] = {
    {.size = sizeof(clattn_params), .scheme = 2},
    {.size = sizeof(clattn_params), .variant = 1, .rows = 2, .keys = 8, .scheme = 2},
    {.size = sizeof(clattn_params), .variant = 1, .keys = 4, .wg = 16, .scheme = 2},
    {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 1, .wg = 64, .scheme = 2}};
static const clattn_params bucketed_params[] = {
    {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 16, .scheme = 1},
    {.size = sizeof(clattn_params), .variant = 2, .rows = 4, .keys = 16, .wg = 64, .scheme = 1}};

static void small_sweep(int first, int last) {
  clattn_ctx *ctx = tu_ctx();
  const int nf = (int)(sizeof fused_params / sizeof fused_params[0]);
  const int nbk = (int)(sizeof bucketed_params / sizeof bucketed_params[0]);
  for (int i = first; i < last; i++)
    for (int rows = 1; rows <= 11; rows++) {
      /* the simulators' subset: rows 1, 3 and 11 */
      if (tu_subset("small") && rows != 1 && rows != 3 && rows != 11)
        continue;
      const cv_shape *s = &small_shapes[i];
      const size_t no =
          (size_t)rows * s->cols * (s->mode == SPLIT ? (size_t)s->heads : 1);
      float *fused = tu_alloc(no * 4), *bucketed = tu_alloc(no * 4);
      for (int p = -1; p < nf + nbk; p++) {
        if (tu_subset("small") && p != -1 && p != 2 && p != nf)
          continue;
        const clattn_params *pp = p < 0    ? NULL
                                  : p < nf ? &fused_params[p]
                                           : &bucketed_params[p - nf];
        const clattn__cvmm_desc d = {
            rows,    s->inner,     s->cols, s->heads, s->experts,
            s->topk, s->sel_inner, s->mode, s->gate};
  const clattn_params *d_params = pp;
        char what[200];
        snprintf(what, sizeof what,
                 "small rows %d K %d N %d H %d E %d k %d %s %s sel %d "
                 "params %d",
                 rows, s->inner, s->cols, s->heads, s->experts, s->topk,
                 s->mode == SPLIT ? "split" : "sum",
                 s->gate == TOPK ? "topk" : "none", s->sel, p);
        /* each call its own context under the simulators (see sweep) */
        clattn_ctx *one = tu_subset("small") ? tu_ctx() : ctx;
        float *keep = p < nf ? fused : bucketed;
        for (size_t j = 0; j < no; j++)
          keep[j] = NAN;
        run_case(one, &d, d_params, s->sel, what, keep);
        if (one != ctx)
          clattn_ctx_destroy(one);
        /* the same routing and the same sums in the same order: equal but
         * for the sigmoid's exp, whose vector widths differ (an ulp or
         * two of a gate) */
        if (p >= nf && !isnan(fused[0]) && !isnan(bucketed[0]))
          for (size_t j = 0; j < no; j++)
            cr_expect(fabsf(fused[j] - bucketed[j]) <=
                          2e-6f * fmaxf(1.0f, fabsf(bucketed[j])),
                      "%s: fused %.9g, bucketed %.9g at %zu", what,
                      (double)fused[j], (double)bucketed[j], j);
      }
      free(fused);
      free(bucketed);
    }
  clattn_ctx_destroy(ctx);
}

enum { NSMALL = sizeof small_shapes / sizeof small_shapes[0] };

Test(cvmm, small_rows_routed, .timeout = 900) { small_sweep(0, 4); }
Test(cvmm, small_rows_ties_dead_none, .timeout = 900) {
  small_sweep(4, NSMALL);
}

/* The fused path's rows are a kernel argument, not a define: a serving
 * loop's batch sizes share one program, built (or loaded) for the first
 * call and found in memory by the others. */
Test(cvmm, small_rows_one_program, .timeout = 300) {
  clattn_ctx *ctx = tu_ctx();
  const cv_shape *s = &small_shapes[0];
  static const int row_counts[] = {1, 3, 11};
  clattn_cache_stats first = {.size = sizeof first};
  clattn_cache_stats last = {.size = sizeof last};
  for (int i = 0; i < 3; i++) {
    const clattn__cvmm_desc d = {row_counts[i], s->inner,   s->cols,
                                 s->heads,      s->experts, s->topk,
                                 s->sel_inner,  s->mode,    s->gate};
    char what[80];
    snprintf(what, sizeof what, "one program: rows %d", row_counts[i]);
    run_case(ctx, &d, &fused_params[0], s->sel, what, NULL);
    clattn_ctx_cache_stats(ctx, i == 0 ? &first : &last);
  }
  cr_expect_eq(last.source_builds + last.disk_hits,
               first.source_builds + first.disk_hits,
               "rows 3 and 11 compiled or loaded %lu more programs than "
               "rows 1",
               (last.source_builds + last.disk_hits) -
                   (first.source_builds + first.disk_hits));
  cr_expect_gt(last.memory_hits, first.memory_hits);
  clattn_ctx_destroy(ctx);
}

/* The plan's choice: fused for a decode step's rows, bucketed above. */
Test(cvmm, small_rows_plan) {
  clattn_profile prof = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_datasheet_find("A100", &prof), CLATTN_OK);
  clattn_prediction pr = {.size = sizeof(clattn_prediction)};
  const clattn__cvmm_desc d = {11, 76, 412, 2, 5, 3, 412, SUM, TOPK};
  cr_assert_eq(clattn__model(family(), &d, NULL, NULL, &prof, &pr), CLATTN_OK, "%s",
               pr.errmsg);
  cr_expect_eq(pr.n_kernels, 1, "fused: one launch");
  cr_expect_eq(tu_params(pr.params).scheme, 2);
  const clattn__cvmm_desc b = {12, 76, 412, 2, 5, 3, 412, SUM, TOPK};
  cr_assert_eq(clattn__model(family(), &b, NULL, NULL, &prof, &pr), CLATTN_OK, "%s",
               pr.errmsg);
  cr_expect_eq(pr.n_kernels, 4, "route, count, scatter, GEMM");
  cr_expect_eq(tu_params(pr.params).scheme, 1);
}

/* The reference's routing: duplicate columns tie, the lower index wins;
 * top-k of every expert takes them all, in descending logit order. */
Test(cvmm, reference_routing) {
  /* sel_x = [1, 2]; w_sel columns (head 0: e0..e2, head 1: e0..e2) */
  const float sx[2] = {1.0f, 2.0f};
  const float ws[12] = {1, 3, 3, 0, -1, 5,   /* row 0 */
                        0, 1, 1, 2, 0,  -3}; /* row 1 */
  int ex[6];
  double g[6];
  /* head 0 logits: 1, 5, 5; head 1: 4, -1, -1 */
  ref_cvmm_route(1, 2, 3, 2, 2, sx, ws, ex, g);
  cr_expect(ex[0] == 1 && ex[1] == 2, "head 0: %d %d", ex[0], ex[1]);
  cr_expect(ex[2] == 0 && ex[3] == 1, "head 1: %d %d", ex[2], ex[3]);
  cr_expect(fabs(g[0] - 1.0 / (1.0 + exp(-5.0))) < 1e-15);
  cr_expect(fabs(g[3] - 1.0 / (1.0 + exp(1.0))) < 1e-15);
  ref_cvmm_route(1, 2, 3, 3, 2, sx, ws, ex, g);
  cr_expect(ex[0] == 1 && ex[1] == 2 && ex[2] == 0);
}

/* A bad description's status, and a message naming what is wrong. */
static void expect_refused(clattn_ctx *ctx, const clattn__cvmm_desc *d,
                           const clattn_params *p, clattn_status want,
                           const char *word) {
  cl_mem bufs[5];
  for (int i = 0; i < 5; i++)
    bufs[i] = tu_buffer(ctx, 1 << 16);
  const clattn_status st = tu_family_call(ctx, family(), d, p, bufs, NULL);
  cr_expect_eq(st, want, "status %s, want %s (%s)", clattn_status_str(st),
               clattn_status_str(want), clattn_ctx_errmsg(ctx));
  cr_expect(strstr(clattn_ctx_errmsg(ctx), word) != NULL,
            "message \"%s\" does not name %s", clattn_ctx_errmsg(ctx), word);
  for (int i = 0; i < 5; i++)
    tu_release(bufs[i]);
}

Test(cvmm, misuse) {
  clattn_ctx *ctx = tu_ctx();
  const clattn__cvmm_desc ok = {8, 4, 40, 2, 3, 2, 4, SPLIT, TOPK};
  clattn__cvmm_desc d = ok;
  d.rows = 0;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "rows");
  d = ok;
  d.cols = -1;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "cols");
  d = ok;
  d.experts = CLATTN_SH_MAX_EXPERTS + 1;
  d.topk = 1;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "experts");
  d = ok;
  d.topk = 4;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "topk");
  d = ok;
  d.topk = 0;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "topk");
  d = ok;
  d.mode = (clattn__cvmm_mode)3;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_INVALID_ARG, "mode");
  d = ok;
  d.gate = (clattn__cvmm_gate)7;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_INVALID_ARG, "gate");
  d = ok;
  d.gate = NONE;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "gate NONE");
  d = ok;
  d.sel_inner = 0;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "sel_inner");
  d = ok;
  d.heads = 64;
  d.experts = 64;
  d.topk = 1;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_UNSUPPORTED, "heads x experts");
  d = ok;
  d.rows = 1 << 30;
  d.inner = 1 << 20;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "overflow");
  const clattn_params clblast = {.size = sizeof(clattn_params), .scheme = 3};
  d = ok;
  expect_refused(ctx, &d, &clblast, CLATTN_ERR_INVALID_ARG, "scheme");
  /* the fused path: at most its rows, variant 1's shape, no splits */
  const clattn_params fused = {.size = sizeof(clattn_params), .scheme = 2};
  d.rows = 12;
  expect_refused(ctx, &d, &fused, CLATTN_ERR_INVALID_ARG, "scheme 2");
  d.rows = ok.rows;
  const clattn_params fused2 = {.size = sizeof(clattn_params), .variant = 2, .scheme = 2};
  expect_refused(ctx, &d, &fused2, CLATTN_ERR_INVALID_ARG, "scheme 2");
  const clattn_params fused_splits = {.size = sizeof(clattn_params), .variant = 1, .splits = 4, .scheme = 2};
  expect_refused(ctx, &d, &fused_splits, CLATTN_ERR_INVALID_ARG, "scheme 2");
  d = ok;
  const clattn_params keys = {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 17};
  expect_refused(ctx, &d, &keys, CLATTN_ERR_INVALID_ARG, "keys");
  const clattn_params rows = {.size = sizeof(clattn_params), .variant = 1, .rows = 17};
  expect_refused(ctx, &d, &rows, CLATTN_ERR_INVALID_ARG, "rows");
  const clattn_params pf = {.size = sizeof(clattn_params), .variant = 1, .prefetch = 2};
  expect_refused(ctx, &d, &pf, CLATTN_ERR_INVALID_ARG, "prefetch");
  const clattn_params wg = {.size = sizeof(clattn_params), .variant = 2, .rows = 4, .keys = 48, .wg = 64};
  expect_refused(ctx, &d, &wg, CLATTN_ERR_INVALID_ARG, "multiple of keys");
  /* routing needs sel_x and w_sel */
  cl_mem bufs[5];
  for (int i = 0; i < 5; i++)
    bufs[i] = tu_buffer(ctx, 1 << 16);
  cl_mem keep = bufs[1];
  bufs[1] = NULL;
  cr_expect_eq(clattn__call(ctx, family(), &ok, NULL, bufs, NULL),
               CLATTN_ERR_INVALID_ARG);
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "sel_x") != NULL, "%s",
            clattn_ctx_errmsg(ctx));
  bufs[1] = keep;
  /* a buffer smaller than the shape */
  tu_release(bufs[3]);
  bufs[3] = tu_buffer(ctx, 16);
  cr_expect_eq(clattn__call(ctx, family(), &ok, NULL, bufs, NULL),
               CLATTN_ERR_BUFFER_TOO_SMALL, "%s", clattn_ctx_errmsg(ctx));
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "w") != NULL, "%s",
            clattn_ctx_errmsg(ctx));
  for (int i = 0; i < 5; i++)
    tu_release(bufs[i]);
  clattn_ctx_destroy(ctx);
}

/* The model's useful work: 2 K N FLOPs and a gate multiply per (row,
 * head, chosen expert) and column, and the selection's logits. */
Test(cvmm, model_flops) {
  clattn_profile prof = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_datasheet_find("A100", &prof), CLATTN_OK);
  const clattn__cvmm_desc d = {256, 412, 76, 2, 5, 3, 412, SPLIT, TOPK};
  clattn_prediction pr = {.size = sizeof(clattn_prediction)};
  cr_assert_eq(clattn__model(family(), &d, NULL, NULL, &prof, &pr), CLATTN_OK, "%s",
               pr.errmsg);
  const double ent = 256.0 * 2 * 3;
  cr_expect_eq(pr.total.flops,
               ent * (2.0 * 412 * 76 + 76) + 2.0 * 256 * 412 * 2 * 5);
  cr_expect_eq(pr.n_kernels, 4, "route, count, scatter, GEMM");
  /* without routing: one dense GEMM a head */
  const clattn__cvmm_desc n = {100, 30, 20, 3, 1, 1, 0, SPLIT, NONE};
  cr_assert_eq(clattn__model(family(), &n, NULL, NULL, &prof, &pr), CLATTN_OK, "%s",
               pr.errmsg);
  cr_expect_eq(pr.total.flops, 2.0 * 100 * 30 * 20 * 3);
  cr_expect_eq(pr.n_kernels, 1);
}
