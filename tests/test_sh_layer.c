/* test_sh_layer.c - the SwitchHead layer (clattn_layer_create_switchhead
 * with clattn_layer_prefill / _decode and the KV cache) against
 * ref_sh_layer, its parameter count and its model.
 *
 * Shapes divide no tile (odd d_model, head widths 5 to 9, odd n), with
 * top-k of 1, of some and of every expert, one expert (W_s NULL), batch 1
 * and 2.  Ties: expert 1 of every head has expert 0's selection columns,
 * so their gates are equal and the lower index must win.  Starved experts:
 * x is positive and the last experts' selection columns are negative, so
 * they never make the top-k and their buckets stay empty.  Tolerance:
 * clattn__tolerance(CLATTN_F32), as for the other layers.  The attention
 * options (window, soft-cap, ALiBi, sinks together) on the attention's
 * prefill and decode against ref_sh_layer_opts, causal and not through a
 * cache (positions follow it), and bad options refused at create.
 */
#include "family/cvmm.h"
#include "family/family.h"
#include "reference/ref_sh.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shshape {
  int b, n, D, H, dh, E, k;
  int ties;   /* expert 1 duplicates expert 0's selection columns */
  int starve; /* the last `starve` experts never win (x > 0) */
} shshape;

static const shshape shapes[] = {
    {2, 7, 19, 3, 5, 4, 2, 1, 0},  /* ties, top-2 of 4 */
    {1, 9, 23, 3, 6, 1, 1, 0, 0},  /* one expert: dense V, W_s NULL */
    {1, 13, 21, 2, 9, 5, 1, 1, 0}, /* top-1 with ties */
    {2, 6, 17, 2, 7, 3, 3, 0, 0},  /* top-k of every expert */
    {2, 8, 19, 2, 5, 6, 2, 0, 3},  /* three experts receive no token */
};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

/* Under a simulator (CLATTN_TEST_SUBSET=small) the first two shapes. */
static int nshapes(void) { return tu_subset("small") ? 2 : NSHAPES; }

enum { W_Q, W_K, W_V, W_O, W_S, W_D, NW };

typedef struct fixture {
  shshape s;
  size_t nw[NW];
  float *w[NW];
  clattn_ctx *ctx;
  cl_mem dw[NW]; /* dw[W_S] is NULL with one expert */
  clattn_layer *layer;
} fixture;

static clattn_switchhead_layer_desc desc_of(const shshape *s) {
  const clattn_switchhead_layer_desc d = {
      .size = sizeof(clattn_switchhead_layer_desc),
      .d_model = s->D,
      .heads = s->H,
      .head_dim = s->dh,
      .experts = s->E,
      .topk = s->k};
  return d;
}

static clattn_status create(clattn_ctx *ctx,
                            const clattn_switchhead_layer_desc *d,
                            const cl_mem *w, clattn_layer **out) {
  return clattn_layer_create_switchhead(ctx, d, w[W_Q], w[W_K], w[W_V], w[W_O],
                                        w[W_S], w[W_D], out);
}

/* A selection matrix [D, H E] with logits of about unit size; ties and
 * starved experts as the shape asks. */
static void fill_sel(tu_rng *r, const shshape *s, float *w) {
  const int he = s->H * s->E;
  const float amp = 3.0f / sqrtf((float)s->D);
  tu_fill(r, w, (size_t)s->D * he, amp);
  for (int i = 0; i < s->D; i++)
    for (int h = 0; h < s->H; h++) {
      float *row = w + (size_t)i * he + (size_t)h * s->E;
      if (s->ties && s->E > 1)
        row[1] = row[0];
      for (int e = s->E - s->starve; e < s->E; e++)
        row[e] = -(0.5f + 0.5f * fabsf(tu_uniform(r))) * 2.0f * amp;
    }
}

/* x [count] for the shape: positive where experts are starved. */
static void fill_x(tu_rng *r, const shshape *s, float *x, size_t count) {
  tu_fill(r, x, count, 1.0f);
  if (s->starve)
    for (size_t i = 0; i < count; i++)
      x[i] = 0.05f + 0.95f * fabsf(x[i]);
}

static void fx_init_desc(fixture *f, const shshape *s,
                         const clattn_switchhead_layer_desc *d, unsigned seed) {
  memset(f, 0, sizeof *f);
  f->s = *s;
  const size_t D = (size_t)s->D, hd = (size_t)s->H * s->dh,
               he = (size_t)s->H * s->E;
  const size_t n[NW] = {D * hd,         D * hd, he * D * s->dh,
                        he * s->dh * D, D * he, D * he};
  tu_rng r = tu_rng_seed(seed);
  f->ctx = tu_ctx();
  for (int i = 0; i < NW; i++) {
    f->nw[i] = n[i];
    f->w[i] = tu_alloc(n[i] * 4);
    if (i == W_S || i == W_D)
      fill_sel(&r, s, f->w[i]);
    else
      tu_fill(&r, f->w[i], n[i],
              1.7f / sqrtf((float)(i == W_O ? s->dh : s->D)));
    if (i != W_S || s->E > 1)
      f->dw[i] = tu_upload(f->ctx, f->w[i], n[i], CLATTN_F32);
  }
  clattn_status st = create(f->ctx, d, f->dw, &f->layer);
  cr_assert(st == CLATTN_OK && f->layer, "create: %d %s: %s", (int)st,
            clattn_status_str(st), clattn_ctx_errmsg(f->ctx));
}

static void fx_init(fixture *f, const shshape *s, unsigned seed) {
  const clattn_switchhead_layer_desc d = desc_of(s);
  fx_init_desc(f, s, &d, seed);
}

static void fx_free(fixture *f) {
  clattn_layer_destroy(f->layer);
  for (int i = 0; i < NW; i++) {
    if (f->dw[i] != NULL)
      tu_release(f->dw[i]);
    free(f->w[i]);
  }
  clattn_ctx_destroy(f->ctx);
}

/* The reference's rows first .. len-1 of every sequence, for x's first len
 * positions, into the same rows of y [b, n, D], with the attention options
 * o (NULL: none). */
static void ref_rows_opts(const fixture *f, const ref_opts *o, const float *x,
                          int len, int first, int causal, float *y) {
  const shshape *s = &f->s;
  float *xs = tu_alloc((size_t)s->b * len * s->D * 4);
  float *ys = tu_alloc((size_t)s->b * (len - first) * s->D * 4);
  tu_rows_get(x, s->b, s->n, s->D, 0, len, xs);
  const ref_sh a = {s->b,  len,  first, s->D, s->H,
                    s->dh, s->E, s->k,  0.0,  causal};
  ref_sh_layer_opts(&a, o, xs, f->w[W_Q], f->w[W_K], f->w[W_V], f->w[W_O],
                    s->E > 1 ? f->w[W_S] : NULL, f->w[W_D], ys);
  tu_rows_put(y, s->b, s->n, s->D, first, len - first, ys);
  free(xs);
  free(ys);
}

static void ref_rows(const fixture *f, const float *x, int len, int first,
                     int causal, float *y) {
  ref_rows_opts(f, NULL, x, len, first, causal, y);
}

static void prefill_rows(fixture *f, clattn_kv_cache *c, const float *x, int r0,
                         int nr, int causal, float *y) {
  tu_layer_prefill_rows(f->ctx, f->layer, c, f->s.b, f->s.n, f->s.D, x, r0, nr,
                        causal, y);
}

static void describe(const fixture *f, const char *tag, char *buf, size_t cap) {
  const shshape *s = &f->s;
  snprintf(buf, cap, "%s b=%d n=%d D=%d H=%d d_h=%d E=%d k=%d%s%s", tag, s->b,
           s->n, s->D, s->H, s->dh, s->E, s->k, s->ties ? " ties" : "",
           s->starve ? " starved" : "");
}

/* Prefill without a cache, causal and not, against the reference. */
Test(sh_layer, prefill_matches_reference, .timeout = 900) {
  for (int si = 0; si < nshapes(); si++)
    for (int causal = 0; causal < 2; causal++) {
      const shshape *s = &shapes[si];
      fixture f;
      fx_init(&f, s, 10u + (unsigned)si);
      const size_t nx = (size_t)s->b * s->n * s->D;
      float *x = tu_alloc(nx * 4), *y = tu_alloc(nx * 4),
            *yref = tu_alloc(nx * 4);
      tu_rng r = tu_rng_seed(100u + (unsigned)si);
      fill_x(&r, s, x, nx);
      char what[160];
      describe(&f, causal ? "prefill causal" : "prefill", what, sizeof what);
      prefill_rows(&f, NULL, x, 0, s->n, causal, y);
      ref_rows(&f, x, s->n, 0, causal, yref);
      tu_check(what, y, yref, nx, clattn__tolerance(CLATTN_F32));
      free(x);
      free(y);
      free(yref);
      fx_free(&f);
    }
}

/* A prompt prefilled into a cache, then one decode step per remaining
 * position, equals one causal prefill (the library's and the reference);
 * so does a causal prefill through the cache in two chunks; two
 * non-causal chunks match the reference's queries after P cached
 * positions. */
Test(sh_layer, cache_prefill_decode_and_chunks, .timeout = 900) {
  for (int si = 0; si < nshapes(); si++) {
    const shshape *s = &shapes[si];
    fixture f;
    fx_init(&f, s, 20u + (unsigned)si);
    const int b = s->b, n = s->n, D = s->D;
    const size_t nx = (size_t)b * n * D;
    float *x = tu_alloc(nx * 4), *yref = tu_alloc(nx * 4),
          *ylib = tu_alloc(nx * 4), *yc = tu_alloc(nx * 4);
    tu_rng r = tu_rng_seed(200u + (unsigned)si);
    fill_x(&r, s, x, nx);
    ref_rows(&f, x, n, 0, 1, yref);
    prefill_rows(&f, NULL, x, 0, n, 1, ylib);

    char what[200];
    describe(&f, "", what, sizeof what);
    tu_layer_cache_checks(f.ctx, f.layer, b, n, D, n, x, ylib, yref, what);

    /* non-causal chunks: the second attends to the first and itself */
    clattn_kv_cache *cache = NULL;
    clattn_status st = clattn_kv_cache_create(f.layer, b, n, &cache);
    cr_assert(st == CLATTN_OK && cache, "kv_cache_create: %d %s", (int)st,
              clattn_ctx_errmsg(f.ctx));
    const int c1 = n / 2;
    prefill_rows(&f, cache, x, 0, c1, 0, yc);
    prefill_rows(&f, cache, x, c1, n - c1, 0, yc);
    ref_rows(&f, x, c1, 0, 0, yref);
    ref_rows(&f, x, n, c1, 0, yref);
    describe(&f, "two non-causal cached chunks vs ref", what, sizeof what);
    tu_check(what, yc, yref, nx, clattn__tolerance(CLATTN_F32));

    clattn_kv_cache_destroy(cache);
    free(x);
    free(yref);
    free(ylib);
    free(yc);
    fx_free(&f);
  }
}

/* ev->out receives the event of the step's last command (the output mix),
 * for a prefill and a decode step; y is complete once it has run. */
Test(sh_layer, events, .timeout = 900) {
  const shshape *s = &shapes[0];
  fixture f;
  fx_init(&f, s, 51);
  const size_t nx = (size_t)s->b * s->n * s->D;
  float *x = tu_alloc(nx * 4), *y = tu_alloc(nx * 4), *yref = tu_alloc(nx * 4);
  tu_rng r = tu_rng_seed(52);
  fill_x(&r, s, x, nx);
  cl_mem dx = tu_upload(f.ctx, x, nx, CLATTN_F32);
  cl_mem dy = tu_sentinel(f.ctx, nx, CLATTN_F32, 0xff);
  cl_event done = NULL;
  const clattn_events ev = {sizeof(clattn_events), 0, NULL, &done};
  clattn_status st =
      clattn_layer_prefill(f.layer, NULL, s->b, s->n, 1, dx, dy, &ev);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(f.ctx));
  cr_assert_not_null(done, "prefill gave no event");
  cr_expect_eq(clWaitForEvents(1, &done), CL_SUCCESS);
  cl_int es = 1;
  cr_expect_eq(clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS,
                              sizeof es, &es, NULL),
               CL_SUCCESS);
  cr_expect_eq(es, CL_COMPLETE);
  clReleaseEvent(done);
  tu_download(f.ctx, dy, y, nx, CLATTN_F32);
  ref_rows(&f, x, s->n, 0, 1, yref);
  tu_check("prefill with ev.out", y, yref, nx, clattn__tolerance(CLATTN_F32));

  clattn_kv_cache *c = NULL;
  cr_assert_eq(clattn_kv_cache_create(f.layer, s->b, 4, &c), CLATTN_OK);
  done = NULL;
  st = clattn_layer_decode(f.layer, c, dx, dy, &ev);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(f.ctx));
  cr_assert_not_null(done, "decode gave no event");
  cr_expect_eq(clWaitForEvents(1, &done), CL_SUCCESS);
  clReleaseEvent(done);
  clattn_kv_cache_destroy(c);
  tu_release(dx);
  tu_release(dy);
  free(x);
  free(y);
  free(yref);
  fx_free(&f);
}

/* With one expert W_s is not read: a NaN-filled w_s gives what NULL
 * gives. */
Test(sh_layer, one_expert_ignores_w_s, .timeout = 900) {
  const shshape *s = &shapes[1];
  cr_assert_eq(s->E, 1);
  fixture f;
  fx_init(&f, s, 61);
  const size_t nx = (size_t)s->b * s->n * s->D;
  float *x = tu_alloc(nx * 4), *y0 = tu_alloc(nx * 4), *y1 = tu_alloc(nx * 4);
  tu_rng r = tu_rng_seed(62);
  fill_x(&r, s, x, nx);
  prefill_rows(&f, NULL, x, 0, s->n, 1, y0);
  cl_mem w[NW];
  memcpy(w, f.dw, sizeof w);
  w[W_S] = tu_sentinel(f.ctx, (size_t)s->D * s->H, CLATTN_F32, 0xff);
  const clattn_switchhead_layer_desc d = desc_of(s);
  clattn_layer *l = NULL;
  clattn_status st = create(f.ctx, &d, w, &l);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(f.ctx));
  tu_layer_prefill_rows(f.ctx, l, NULL, s->b, s->n, s->D, x, 0, s->n, 1, y1);
  tu_check("one expert, w_s NaN vs NULL", y1, y0, nx, 0.0);
  clattn_layer_destroy(l);
  tu_release(w[W_S]);
  free(x);
  free(y0);
  free(y1);
  fx_free(&f);
}

/* Bad descriptions, weights and buffers give their documented statuses, a
 * message, no layer, and leave the cache as it was. */
Test(sh_layer, misuse, .timeout = 900) {
  const shshape *s = &shapes[0];
  fixture f;
  fx_init(&f, s, 41);
  clattn_layer *l = (clattn_layer *)0x1;
  cl_mem w[NW];
  memcpy(w, f.dw, sizeof w);
  const clattn_switchhead_layer_desc d = desc_of(s);
  for (int i = 0; i < NW; i++) {
    w[i] = NULL;
    clattn_status st = create(f.ctx, &d, w, &l);
    cr_expect_eq(st, CLATTN_ERR_INVALID_ARG, "NULL weight %d -> %d", i,
                 (int)st);
    cr_expect_null(l, "out not NULL after failure");
    w[i] = f.dw[i];
  }
  cr_expect_eq(create(f.ctx, NULL, w, &l), CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(create(f.ctx, &d, w, NULL), CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(create(NULL, &d, w, &l), CLATTN_ERR_MISUSE);

  typedef struct bad_case {
    const char *what, *needle;
    clattn_switchhead_layer_desc d;
    clattn_status want;
  } bad_case;
  clattn_switchhead_layer_desc b[9];
  for (int i = 0; i < 9; i++)
    b[i] = d;
  b[0].topk = s->E + 1;
  b[1].topk = 0;
  b[2].experts = 0;
  b[3].experts = CLATTN_SH_MAX_EXPERTS + 1;
  b[3].topk = 1;
  b[4].head_dim = CLATTN_MAX_HEAD_DIM + 1;
  b[5].d_model = 0;
  b[6].heads = -1;
  b[7].scale = -1.0f;
  b[8].scale = NAN;
  const bad_case cases[] = {
      {"topk > experts", "topk", b[0], CLATTN_ERR_SHAPE},
      {"topk 0", "topk", b[1], CLATTN_ERR_SHAPE},
      {"experts 0", "experts", b[2], CLATTN_ERR_SHAPE},
      {"experts > max", "CLATTN_SH_MAX_EXPERTS", b[3], CLATTN_ERR_SHAPE},
      {"head_dim > max", "CLATTN_MAX_HEAD_DIM", b[4], CLATTN_ERR_UNSUPPORTED},
      {"d_model 0", "d_model", b[5], CLATTN_ERR_SHAPE},
      {"heads -1", "heads", b[6], CLATTN_ERR_SHAPE},
      {"scale -1", "scale", b[7], CLATTN_ERR_INVALID_ARG},
      {"scale NaN", "scale", b[8], CLATTN_ERR_INVALID_ARG},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    l = (clattn_layer *)0x1;
    clattn_status st = create(f.ctx, &cases[i].d, w, &l);
    cr_expect_eq(st, cases[i].want, "%s -> %d", cases[i].what, (int)st);
    cr_expect_null(l, "%s: out not NULL", cases[i].what);
    cr_expect(strstr(clattn_ctx_errmsg(f.ctx), cases[i].needle) != NULL,
              "%s: message does not name %s: %s", cases[i].what,
              cases[i].needle, clattn_ctx_errmsg(f.ctx));
    cr_expect_eq(clattn_switchhead_layer_params(&cases[i].d), -1, "%s",
                 cases[i].what);
  }
  /* one more expert: w_v, the first weight that grows, is too small */
  clattn_switchhead_layer_desc big = d;
  big.experts = s->E + 1;
  clattn_status st = create(f.ctx, &big, w, &l);
  cr_expect_eq(st, CLATTN_ERR_BUFFER_TOO_SMALL, "small w_v -> %d", (int)st);
  cr_expect(strstr(clattn_ctx_errmsg(f.ctx), "w_v") != NULL,
            "message does not name w_v: %s", clattn_ctx_errmsg(f.ctx));

  /* y or x one float short: refused, the cache's length unchanged */
  const size_t nx = (size_t)s->b * s->n * s->D;
  cl_mem dx = tu_sentinel(f.ctx, nx, CLATTN_F32, 0);
  cl_mem dshort = tu_buffer(f.ctx, (nx - 1) * 4);
  cl_mem dy = tu_buffer(f.ctx, nx * 4);
  clattn_kv_cache *c = NULL;
  cr_assert_eq(clattn_kv_cache_create(f.layer, s->b, s->n, &c), CLATTN_OK);
  st = clattn_layer_prefill(f.layer, c, s->b, s->n, 1, dx, dshort, NULL);
  cr_expect_eq(st, CLATTN_ERR_BUFFER_TOO_SMALL, "small y -> %d", (int)st);
  cr_expect(strstr(clattn_ctx_errmsg(f.ctx), "buffer y ") != NULL, "%s",
            clattn_ctx_errmsg(f.ctx));
  st = clattn_layer_prefill(f.layer, c, s->b, s->n, 1, dshort, dy, NULL);
  cr_expect_eq(st, CLATTN_ERR_BUFFER_TOO_SMALL, "small x -> %d", (int)st);
  cr_expect(strstr(clattn_ctx_errmsg(f.ctx), "buffer x ") != NULL, "%s",
            clattn_ctx_errmsg(f.ctx));
  cr_expect_eq(clattn_kv_cache_len(c), 0);

  /* a cache of another head width */
  clattn_switchhead_layer_desc narrow = d;
  narrow.head_dim = s->dh - 1;
  clattn_layer *other = NULL;
  cr_assert_eq(create(f.ctx, &narrow, w, &other), CLATTN_OK, "%s",
               clattn_ctx_errmsg(f.ctx));
  clattn_kv_cache *oc = NULL;
  cr_assert_eq(clattn_kv_cache_create(other, s->b, 4, &oc), CLATTN_OK);
  st = clattn_layer_decode(f.layer, oc, dx, dy, NULL);
  cr_expect_eq(st, CLATTN_ERR_SHAPE, "cache of another shape -> %d", (int)st);
  cr_expect_eq(clattn_kv_cache_len(oc), 0);

  clattn_kv_cache_destroy(oc);
  clattn_kv_cache_destroy(c);
  clattn_layer_destroy(other);
  tu_release(dx);
  tu_release(dshort);
  tu_release(dy);
  fx_free(&f);
}

/* The weights: 2 D H d_h + 2 H E D d_h + 2 H E D, H D less with one expert
 * (no W_s).  The paper's 47M models are parameter-matched (spec 6.2): with
 * the XL positional projection (H d_h D) and the FFN (2 D d_ff), SwitchHead
 * (H 2, E 5, d_h 76, d_ff 2080) and the dense 10-head Transformer (d_h 41,
 * d_ff 2053) both have 2,536,272 a layer. */
Test(sh_layer, parameter_counts) {
  const long long D = 412;
  clattn_switchhead_layer_desc d = {
      sizeof(clattn_switchhead_layer_desc), (int)D, 2, 76, 5, 3, 0.0f};
  const long long sh = clattn_switchhead_layer_params(&d);
  cr_expect_eq(sh, 2 * D * 2 * 76 + 2LL * 2 * 5 * D * 76 + 2LL * 2 * 5 * D);
  cr_expect_eq(sh + 2 * 76 * D + 2 * D * 2080, 2536272LL);
  cr_expect_eq(4 * D * 410 + 410 * D + 2 * D * 2053, 2536272LL);
  d.experts = 1;
  d.topk = 1;
  cr_expect_eq(clattn_switchhead_layer_params(&d), 4 * D * 2 * 76 + 2 * D,
               "one expert: no W_s");
  cr_expect_eq(clattn_switchhead_layer_params(NULL), -1);
}

/* A layer call's model is the sum of its kernels: the Q and K GEMMs, the
 * value mix, the attention core and the output mix; a decode step has the
 * append and the decode core. */
Test(sh_layer, model_is_sum) {
  clattn_profile p = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_datasheet_find("h100", &p), CLATTN_OK);
  const clattn_switchhead_layer_desc d = {
      sizeof(clattn_switchhead_layer_desc), 1024, 4, 112, 4, 2, 0.0f};
  const int b = 2, n = 128, rows = b * n;
  clattn_prediction pr = {.size = sizeof(clattn_prediction)},
                    sub = {.size = sizeof(clattn_prediction)};
  cr_assert_eq(clattn_model_switchhead_layer(&d, b, n, 0, 1, &p, &pr),
               CLATTN_OK, "%s", pr.errmsg);
  cr_expect_str_eq(pr.kernel[0].kernel, "gemm x*w_q");
  cr_expect_str_eq(pr.kernel[1].kernel, "gemm x*w_k");
  double flops = 2.0 * 2 * rows * 1024.0 * 4 * 112;
  const clattn__family *cvmm = clattn__family_find("cvmm");
  cr_assert_not_null(cvmm, "no cvmm family in this build");
  const clattn__cvmm_desc mix[2] = {
      {rows, 1024, 112, 4, 4, 2, 1024, CLATTN__CVMM_SPLIT, CLATTN__CVMM_TOPK},
      {rows, 112, 1024, 4, 4, 2, 1024, CLATTN__CVMM_SUM, CLATTN__CVMM_TOPK}};
  int kernels = 2;
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(clattn__model(cvmm, &mix[i], NULL, NULL, &p, &sub), CLATTN_OK, "%s",
                 sub.errmsg);
    flops += sub.total.flops;
    kernels += sub.n_kernels;
  }
  const clattn_attn_desc core = {sizeof(clattn_attn_desc),
                                 b,
                                 n,
                                 n,
                                 4,
                                 4,
                                 112,
                                 112,
                                 CLATTN_F32,
                                 CLATTN_BSHD,
                                 CLATTN_BSHD,
                                 0.0f,
                                 1,
                                 NULL};
  sub.size = sizeof sub; /* clattn__model above wrote a whole struct */
  cr_assert_eq(clattn_model_attention(&core, NULL, &p, &sub), CLATTN_OK);
  flops += sub.total.flops;
  kernels += sub.n_kernels;
  cr_expect(fabs(pr.total.flops - flops) <= 1e-9 * flops, "%g vs %g",
            pr.total.flops, flops);
  cr_expect_eq(pr.n_kernels, kernels);

  cr_assert_eq(clattn_model_switchhead_layer(&d, 1, 1, 1000, 1, &p, &pr),
               CLATTN_OK, "%s", pr.errmsg);
  int append = 0, decode = 0;
  for (int i = 0; i < pr.n_kernels; i++) {
    append |= strcmp(pr.kernel[i].kernel, "kv_append") == 0;
    decode |= strncmp(pr.kernel[i].kernel, "decode_split", 12) == 0;
  }
  cr_expect(append && decode, "decode step without append or decode core");

  clattn_switchhead_layer_desc bad = d;
  bad.topk = 5;
  cr_expect_eq(clattn_model_switchhead_layer(&bad, 1, 8, 0, 1, &p, &pr),
               CLATTN_ERR_SHAPE);
  cr_expect(strstr(pr.errmsg, "topk") != NULL, "%s", pr.errmsg);
  cr_expect_eq(clattn_model_switchhead_layer(&d, 0, 8, 0, 1, &p, &pr),
               CLATTN_ERR_SHAPE);
  cr_expect_eq(clattn_model_switchhead_layer(NULL, 1, 8, 0, 1, &p, &pr),
               CLATTN_ERR_INVALID_ARG);
}

/* Every attention option at once: a window of 3 positions (less than n), a
 * soft-cap, ALiBi slopes and sinks (one -inf), from arrays the caller
 * overwrites with NaN after create (the layer keeps copies).  Prefill
 * without a cache, then through one with decode steps and in two chunks,
 * causal and not (a chunk's queries at their cache positions), against
 * ref_sh_layer_opts. */
Test(sh_layer, options, .timeout = 900) {
  const shshape *s = &shapes[0]; /* 3 heads, top-2 of 4 experts */
  float slopes[3] = {0.6f, 0.3f, 0.15f}, sinks[3] = {0.5f, -INFINITY, -0.5f};
  const ref_opts ro = {3, 2.0, slopes, sinks};
  clattn_switchhead_layer_desc d = desc_of(s);
  d.window = 3;
  d.softcap = 2.0f;
  d.alibi_slopes = slopes;
  d.sinks = sinks;
  fixture f;
  fx_init_desc(&f, s, &d, 70u);
  const int b = s->b, n = s->n, D = s->D;
  const size_t nx = (size_t)b * n * D;
  float *x = tu_alloc(nx * 4), *yref = tu_alloc(nx * 4),
        *ylib = tu_alloc(nx * 4), *yc = tu_alloc(nx * 4);
  tu_rng r = tu_rng_seed(700u);
  fill_x(&r, s, x, nx);
  ref_rows_opts(&f, &ro, x, n, 0, 1, yref);
  ref_rows(&f, x, n, 0, 1, ylib);
  cr_expect(tu_compare(ylib, yref, nx).rel > 10 * clattn__tolerance(CLATTN_F32),
            "the options change nothing in this case");
  slopes[0] = slopes[1] = slopes[2] = NAN; /* the caller's, after create */
  sinks[0] = sinks[1] = sinks[2] = NAN;
  prefill_rows(&f, NULL, x, 0, n, 1, ylib);
  char what[200];
  describe(&f, "options", what, sizeof what);
  tu_check(what, ylib, yref, nx, clattn__tolerance(CLATTN_F32));
  tu_layer_cache_checks(f.ctx, f.layer, b, n, D, n, x, ylib, yref, what);

  /* two non-causal chunks through a cache: the second's query i sits at
   * position c1 + i, its window reaching back into the first chunk */
  const float ref_slopes[3] = {0.6f, 0.3f, 0.15f},
              ref_sinks[3] = {0.5f, -INFINITY, -0.5f};
  const ref_opts ro2 = {3, 2.0, ref_slopes, ref_sinks};
  clattn_kv_cache *cache = NULL;
  clattn_status st = clattn_kv_cache_create(f.layer, b, n, &cache);
  cr_assert(st == CLATTN_OK && cache, "kv_cache_create: %d %s", (int)st,
            clattn_ctx_errmsg(f.ctx));
  const int c1 = n / 2;
  prefill_rows(&f, cache, x, 0, c1, 0, yc);
  prefill_rows(&f, cache, x, c1, n - c1, 0, yc);
  ref_rows_opts(&f, &ro2, x, c1, 0, 0, yref);
  ref_rows_opts(&f, &ro2, x, n, c1, 0, yref);
  describe(&f, "options, two non-causal cached chunks vs ref", what,
           sizeof what);
  tu_check(what, yc, yref, nx, clattn__tolerance(CLATTN_F32));
  clattn_kv_cache_destroy(cache);
  free(x);
  free(yref);
  free(ylib);
  free(yc);
  fx_free(&f);
}

/* Bad options at create: a negative window, a soft-cap of +inf, a NaN
 * slope, a +inf sink are CLATTN_ERR_INVALID_ARG naming them; no layer. */
Test(sh_layer, options_refused, .timeout = 900) {
  const shshape *s = &shapes[0];
  fixture f;
  fx_init(&f, s, 71u);
  const float bad_slopes[3] = {0.1f, 0.1f, NAN};
  const float bad_sinks[3] = {INFINITY, 0.0f, 0.0f};
  for (int which = 0; which < 4; which++) {
    clattn_switchhead_layer_desc d = desc_of(s);
    const char *name = which == 0   ? "window"
                       : which == 1 ? "softcap"
                       : which == 2 ? "alibi_slopes"
                                    : "sinks";
    if (which == 0)
      d.window = -3;
    else if (which == 1)
      d.softcap = INFINITY;
    else if (which == 2)
      d.alibi_slopes = bad_slopes;
    else
      d.sinks = bad_sinks;
    clattn_layer *l = (clattn_layer *)0x1;
    const clattn_status st = create(f.ctx, &d, f.dw, &l);
    cr_expect_eq(st, CLATTN_ERR_INVALID_ARG, "%s: %d (%s)", name, (int)st,
                 clattn_ctx_errmsg(f.ctx));
    cr_expect(strstr(clattn_ctx_errmsg(f.ctx), name) != NULL,
              "the message does not name %s: %s", name,
              clattn_ctx_errmsg(f.ctx));
    cr_expect_null(l);
  }
  fx_free(&f);
}
