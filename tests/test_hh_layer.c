/* test_hh_layer.c - Hosseini & Hosseini's Optimised, Efficient and Super
 * layers (clattn_layer_create_optimised / _efficient / _super with
 * clattn_layer_prefill / _decode and the KV cache) against ref_hh_layer.
 *
 * Shapes: head widths that divide no tile (5, 9), batch 1 and 2; Super at
 * its length limit (n = max_len) and below it, with W_a's upper triangle
 * NaN wherever the call is causal (it must never be read).  Tolerance:
 * clattn__tolerance(CLATTN_F32), as for the other layers.  The attention
 * options (window, soft-cap, ALiBi, sinks together) on every variant's
 * prefill and decode against ref_hh_layer_opts (Super's W_a mix unchanged
 * by them), and bad options refused at create.
 */
#include "reference/ref_hh.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct hhshape {
  int b, n, D, h, l; /* l: Super's max_len */
} hhshape;

static const hhshape shapes[] = {
    {2, 9, 20, 4, 9},   /* head width 5, n == max_len */
    {1, 11, 18, 2, 16}, /* head width 9, n < max_len */
};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

/* Under a simulator (CLATTN_TEST_SUBSET=small) the first shape alone. */
static int nshapes(void) { return tu_subset("small") ? 1 : NSHAPES; }

static const clattn_hh_variant variants[] = {
    CLATTN_HH_OPTIMISED, CLATTN_HH_EFFICIENT, CLATTN_HH_SUPER};
static const char *const variant_names[] = {"", "optimised", "efficient",
                                            "super"};

enum { W_Q, W_K, W_A, W_O, NW };

typedef struct fixture {
  clattn_hh_variant v;
  hhshape s;
  float *w[NW];
  clattn_ctx *ctx;
  cl_mem dw[NW];
  clattn_layer *layer;
} fixture;

static clattn_hh_layer_desc desc_of(clattn_hh_variant v, const hhshape *s) {
  const clattn_hh_layer_desc d = {.size = sizeof(clattn_hh_layer_desc),
                                  .d_model = s->D,
                                  .heads = s->h,
                                  .max_len = v == CLATTN_HH_SUPER ? s->l : 0};
  return d;
}

static clattn_status create(clattn_ctx *ctx, clattn_hh_variant v,
                            const clattn_hh_layer_desc *d, const cl_mem *w,
                            clattn_layer **out) {
  switch (v) {
  case CLATTN_HH_OPTIMISED:
    return clattn_layer_create_optimised(ctx, d, w[W_Q], w[W_K], w[W_O], out);
  case CLATTN_HH_EFFICIENT:
    return clattn_layer_create_efficient(ctx, d, w[W_Q], w[W_O], out);
  case CLATTN_HH_SUPER:
    return clattn_layer_create_super(ctx, d, w[W_Q], w[W_A], w[W_O], out);
  }
  return CLATTN_ERR_INVALID_ARG;
}

/* W_a with its upper triangle NaN (upper = 1): a causal call that read it
 * would give NaN. */
static void fill_w_a(tu_rng *r, float *w, int l, int upper_nan) {
  tu_fill(r, w, (size_t)l * l, 1.7f / sqrtf((float)l));
  for (int t = 0; t < l && upper_nan; t++)
    for (int s = t + 1; s < l; s++)
      w[(size_t)t * l + s] = NAN;
}

static void fx_init_desc(fixture *f, clattn_hh_variant v, const hhshape *s,
                         const clattn_hh_layer_desc *d, int upper_nan,
                         unsigned seed) {
  memset(f, 0, sizeof *f);
  f->v = v;
  f->s = *s;
  const size_t dd = (size_t)s->D * s->D, ll = (size_t)s->l * s->l;
  const size_t n[NW] = {dd, dd, ll, dd};
  tu_rng r = tu_rng_seed(seed);
  f->ctx = tu_ctx();
  for (int i = 0; i < NW; i++) {
    f->w[i] = tu_alloc(n[i] * 4);
    if (i == W_A)
      fill_w_a(&r, f->w[i], s->l, upper_nan);
    else
      tu_fill(&r, f->w[i], n[i], 1.7f / sqrtf((float)s->D));
    f->dw[i] = tu_upload(f->ctx, f->w[i], n[i], CLATTN_F32);
  }
  clattn_status st = create(f->ctx, v, d, f->dw, &f->layer);
  cr_assert(st == CLATTN_OK && f->layer, "create %s: %d %s: %s",
            variant_names[v], (int)st, clattn_status_str(st),
            clattn_ctx_errmsg(f->ctx));
}

static void fx_init(fixture *f, clattn_hh_variant v, const hhshape *s,
                    int upper_nan, unsigned seed) {
  const clattn_hh_layer_desc d = desc_of(v, s);
  fx_init_desc(f, v, s, &d, upper_nan, seed);
}

static void fx_free(fixture *f) {
  clattn_layer_destroy(f->layer);
  for (int i = 0; i < NW; i++) {
    tu_release(f->dw[i]);
    free(f->w[i]);
  }
  clattn_ctx_destroy(f->ctx);
}

static void ref_y(const fixture *f, int n, int causal, const float *x,
                  float *y) {
  const hhshape *s = &f->s;
  ref_hh_layer((int)f->v, s->b, n, s->D, s->h, s->l, 0.0, causal, x, f->w[W_Q],
               f->w[W_K], f->w[W_A], f->w[W_O], y);
}

/* Rows [r0, r0+nr) of x through the fixture's layer (c may be NULL). */
static void prefill_rows(fixture *f, clattn_kv_cache *c, const float *x, int r0,
                         int nr, int causal, float *y) {
  tu_layer_prefill_rows(f->ctx, f->layer, c, f->s.b, f->s.n, f->s.D, x, r0, nr,
                        causal, y);
}

static void describe(const fixture *f, const char *tag, char *buf, size_t cap) {
  const hhshape *s = &f->s;
  snprintf(buf, cap, "%s %s b=%d n=%d D=%d h=%d l=%d", variant_names[f->v], tag,
           s->b, s->n, s->D, s->h, s->l);
}

/* Prefill without a cache, causal and not, against the reference; Super's
 * causal call with W_a's upper triangle NaN. */
Test(hh_layer, prefill_matches_reference, .timeout = 900) {
  for (int vi = 0; vi < 3; vi++)
    for (int si = 0; si < nshapes(); si++)
      for (int causal = 0; causal < 2; causal++) {
        const hhshape *s = &shapes[si];
        fixture f;
        fx_init(&f, variants[vi], s, causal, 10u + (unsigned)si);
        const size_t nx = (size_t)s->b * s->n * s->D;
        float *x = tu_alloc(nx * 4), *y = tu_alloc(nx * 4),
              *yref = tu_alloc(nx * 4);
        tu_rng r = tu_rng_seed(100u + (unsigned)si);
        tu_fill(&r, x, nx, 1.0f);
        char what[160];
        describe(&f, causal ? "prefill causal" : "prefill", what, sizeof what);
        prefill_rows(&f, NULL, x, 0, s->n, causal, y);
        ref_y(&f, s->n, causal, x, yref);
        tu_check(what, y, yref, nx, clattn__tolerance(CLATTN_F32));
        free(x);
        free(y);
        free(yref);
        fx_free(&f);
      }
}

/* A prompt prefilled into a cache, then one decode step per remaining
 * position, equals one causal prefill of the whole sequence (the library's
 * and the reference); so does a prefill through the cache in two causal
 * chunks, after clattn_kv_cache_reset. */
Test(hh_layer, cache_prefill_decode_and_chunks, .timeout = 900) {
  for (int vi = 0; vi < 3; vi++)
    for (int si = 0; si < nshapes(); si++) {
      const hhshape *s = &shapes[si];
      fixture f;
      fx_init(&f, variants[vi], s, 1, 20u + (unsigned)si);
      const int b = s->b, n = s->n, D = s->D;
      const size_t nx = (size_t)b * n * D;
      float *x = tu_alloc(nx * 4), *yref = tu_alloc(nx * 4),
            *ylib = tu_alloc(nx * 4);
      tu_rng r = tu_rng_seed(200u + (unsigned)si);
      tu_fill(&r, x, nx, 1.0f);
      ref_y(&f, n, 1, x, yref);
      prefill_rows(&f, NULL, x, 0, n, 1, ylib);

      char what[200];
      describe(&f, "", what, sizeof what);
      tu_layer_cache_checks(f.ctx, f.layer, b, n, D, n, x, ylib, yref, what);
      free(x);
      free(yref);
      free(ylib);
      fx_free(&f);
    }
}

/* Super's length limit: n == max_len works (above), max_len + 1 positions
 * are refused by a prefill, by a cache's capacity and by a decode past
 * max_len; a non-causal prefill into a cache is refused. */
Test(hh_layer, super_length_limit, .timeout = 900) {
  const hhshape s = {1, 5, 8, 2, 5};
  fixture f;
  fx_init(&f, CLATTN_HH_SUPER, &s, 1, 7);
  const size_t nx = (size_t)(s.l + 1) * s.D;
  cl_mem dx = tu_sentinel(f.ctx, nx, CLATTN_F32, 0);
  cl_mem dy = tu_buffer(f.ctx, nx * 4);
  clattn_status st =
      clattn_layer_prefill(f.layer, NULL, 1, s.l + 1, 1, dx, dy, NULL);
  cr_expect_eq(st, CLATTN_ERR_SHAPE, "n = max_len + 1 -> %d", (int)st);
  cr_expect(strstr(clattn_ctx_errmsg(f.ctx), "max_len") != NULL,
            "message does not name max_len: %s", clattn_ctx_errmsg(f.ctx));
  st = clattn_layer_prefill(f.layer, NULL, 1, s.l, 0, dx, dy, NULL);
  cr_expect_eq(st, CLATTN_OK, "n = max_len -> %d: %s", (int)st,
               clattn_ctx_errmsg(f.ctx));

  clattn_kv_cache *c = NULL;
  st = clattn_kv_cache_create(f.layer, 1, s.l + 1, &c);
  cr_expect_eq(st, CLATTN_ERR_SHAPE, "capacity max_len + 1 -> %d", (int)st);
  cr_expect_null(c);
  st = clattn_kv_cache_create(f.layer, 1, s.l, &c);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(f.ctx));
  st = clattn_layer_prefill(f.layer, c, 1, 2, 0, dx, dy, NULL);
  cr_expect_eq(st, CLATTN_ERR_UNSUPPORTED, "non-causal into a cache -> %d",
               (int)st);
  cr_expect_eq(clattn_kv_cache_len(c), 0);
  st = clattn_layer_prefill(f.layer, c, 1, s.l, 1, dx, dy, NULL);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(f.ctx));
  st = clattn_layer_decode(f.layer, c, dx, dy, NULL);
  cr_expect_eq(st, CLATTN_ERR_CAPACITY, "decode past max_len -> %d", (int)st);
  cr_expect_eq(clattn_kv_cache_len(c), s.l);
  clattn_kv_cache_destroy(c);
  tu_release(dx);
  tu_release(dy);
  fx_free(&f);
}

/* Bad descriptions and weights, and a cache of another variant, give
 * their documented statuses, a message, and no layer. */
Test(hh_layer, misuse, .timeout = 900) {
  const hhshape s = shapes[0];
  fixture f;
  fx_init(&f, CLATTN_HH_SUPER, &s, 0, 41);
  clattn_layer *l = (clattn_layer *)0x1;
  cl_mem w[NW];
  memcpy(w, f.dw, sizeof w);
  for (int vi = 0; vi < 3; vi++) {
    const clattn_hh_variant v = variants[vi];
    const clattn_hh_layer_desc d = desc_of(v, &s);
    const char *name = variant_names[v];
    for (int i = 0; i < NW; i++) {
      if ((i == W_K && v != CLATTN_HH_OPTIMISED) ||
          (i == W_A && v != CLATTN_HH_SUPER))
        continue;
      w[i] = NULL;
      clattn_status st = create(f.ctx, v, &d, w, &l);
      cr_expect_eq(st, CLATTN_ERR_INVALID_ARG, "%s: NULL weight %d -> %d", name,
                   i, (int)st);
      cr_expect_null(l, "out not NULL after failure");
      w[i] = f.dw[i];
    }
    cr_expect_eq(create(f.ctx, v, NULL, w, &l), CLATTN_ERR_INVALID_ARG);
    clattn_hh_layer_desc bad = d;
    bad.heads = 3; /* does not divide 20 */
    clattn_status st = create(f.ctx, v, &bad, w, &l);
    cr_expect_eq(st, CLATTN_ERR_SHAPE, "%s: heads 3 of D 20 -> %d", name,
                 (int)st);
    cr_expect(clattn_ctx_errmsg(f.ctx)[0] != '\0', "no error message");
    bad = d;
    bad.heads = 0;
    cr_expect_eq(create(f.ctx, v, &bad, w, &l), CLATTN_ERR_SHAPE);
    bad = d;
    bad.max_len = v == CLATTN_HH_SUPER ? 0 : 7;
    st = create(f.ctx, v, &bad, w, &l);
    cr_expect_eq(st, CLATTN_ERR_SHAPE, "%s: max_len %d -> %d", name,
                 bad.max_len, (int)st);
    bad = d;
    bad.d_model = 2 * (CLATTN_MAX_HEAD_DIM + 1);
    bad.heads = 2;
    st = create(f.ctx, v, &bad, w, &l);
    cr_expect_eq(st, CLATTN_ERR_UNSUPPORTED, "%s: head width %d -> %d", name,
                 CLATTN_MAX_HEAD_DIM + 1, (int)st);
    bad = d;
    bad.scale = -1.0f;
    cr_expect_eq(create(f.ctx, v, &bad, w, &l), CLATTN_ERR_INVALID_ARG);
    cr_expect_null(l);
  }
  /* W_a smaller than max_len^2 is named */
  clattn_hh_layer_desc big = desc_of(CLATTN_HH_SUPER, &s);
  big.max_len = s.l + 1;
  clattn_status st = create(f.ctx, CLATTN_HH_SUPER, &big, w, &l);
  cr_expect_eq(st, CLATTN_ERR_BUFFER_TOO_SMALL, "small w_a -> %d", (int)st);
  cr_expect(strstr(clattn_ctx_errmsg(f.ctx), "w_a") != NULL,
            "message does not name w_a: %s", clattn_ctx_errmsg(f.ctx));

  /* an Efficient cache (X alone) on an Optimised layer (K and X) */
  const clattn_hh_layer_desc od = desc_of(CLATTN_HH_OPTIMISED, &s);
  clattn_layer *opt = NULL, *eff = NULL;
  cr_assert_eq(create(f.ctx, CLATTN_HH_OPTIMISED, &od, w, &opt), CLATTN_OK);
  cr_assert_eq(create(f.ctx, CLATTN_HH_EFFICIENT, &od, w, &eff), CLATTN_OK);
  clattn_kv_cache *ec = NULL;
  cr_assert_eq(clattn_kv_cache_create(eff, s.b, 4, &ec), CLATTN_OK);
  const size_t nx = (size_t)s.b * s.D;
  cl_mem dx = tu_sentinel(f.ctx, nx, CLATTN_F32, 0);
  cl_mem dy = tu_buffer(f.ctx, nx * 4);
  st = clattn_layer_decode(opt, ec, dx, dy, NULL);
  cr_expect_eq(st, CLATTN_ERR_SHAPE, "Efficient cache on Optimised -> %d",
               (int)st);
  cr_expect(strstr(clattn_ctx_errmsg(f.ctx), "one tensor") != NULL,
            "message does not say the cache is one tensor: %s",
            clattn_ctx_errmsg(f.ctx));
  cr_expect_eq(clattn_kv_cache_len(ec), 0);
  clattn_kv_cache_destroy(ec);
  clattn_layer_destroy(opt);
  clattn_layer_destroy(eff);
  tu_release(dx);
  tu_release(dy);
  fx_free(&f);
}

/* The paper's parameter counts, exactly: 3/4 and 1/2 of MHA's 4 D^2, and
 * Super's 2 D^2 + l^2, which is 3/4 of MHA's when l == D. */
Test(hh_layer, parameter_counts) {
  const int D = 512, h = 8;
  const long long mha = 4LL * D * D;
  clattn_hh_layer_desc d = {sizeof(clattn_hh_layer_desc), D, h, 0, 0.0f};
  cr_expect_eq(clattn_hh_layer_params(CLATTN_HH_OPTIMISED, &d) * 4, 3 * mha);
  cr_expect_eq(clattn_hh_layer_params(CLATTN_HH_EFFICIENT, &d) * 2, mha);
  cr_expect_eq(clattn_hh_layer_params(CLATTN_HH_SUPER, &d), -1,
               "Super needs max_len");
  d.max_len = D;
  cr_expect_eq(clattn_hh_layer_params(CLATTN_HH_SUPER, &d) * 4, 3 * mha);
  d.max_len = 128;
  cr_expect_eq(clattn_hh_layer_params(CLATTN_HH_SUPER, &d),
               2LL * D * D + 128LL * 128);
  cr_expect_eq(clattn_hh_layer_params(CLATTN_HH_OPTIMISED, &d), -1,
               "max_len is Super's alone");
  cr_expect_eq(clattn_hh_layer_params((clattn_hh_variant)9, &d), -1);
  cr_expect_eq(clattn_hh_layer_params(CLATTN_HH_EFFICIENT, NULL), -1);
}

/* Every attention option at once on each variant: a window of 4 positions
 * (less than n), a soft-cap, ALiBi slopes and sinks (one -inf), from arrays
 * the caller overwrites with NaN after create (the layer keeps copies).
 * Prefill without a cache, then through one with decode steps and in two
 * chunks, against ref_hh_layer_opts; Super's W_a upper triangle NaN. */
Test(hh_layer, options, .timeout = 900) {
  const hhshape *s = &shapes[0]; /* 4 heads of 5 */
  /* under a simulator (CLATTN_TEST_SUBSET=small) Super alone */
  for (int vi = tu_subset("small") ? 2 : 0; vi < 3; vi++) {
    float slopes[4], sinks[4];
    for (int h = 0; h < s->h; h++) {
      slopes[h] = 0.4f / (float)(h + 1);
      sinks[h] = h == 2 ? -INFINITY : 0.5f * (float)(h - 1);
    }
    const ref_opts ro = {4, 2.5, slopes, sinks};
    clattn_hh_layer_desc d = desc_of(variants[vi], s);
    d.window = 4;
    d.softcap = 2.5f;
    d.alibi_slopes = slopes;
    d.sinks = sinks;
    fixture f;
    fx_init_desc(&f, variants[vi], s, &d, 1, 50u + (unsigned)vi);
    const int b = s->b, n = s->n, D = s->D;
    const size_t nx = (size_t)b * n * D;
    float *x = tu_alloc(nx * 4), *yref = tu_alloc(nx * 4),
          *ylib = tu_alloc(nx * 4), *yplain = tu_alloc(nx * 4);
    tu_rng r = tu_rng_seed(500u + (unsigned)vi);
    tu_fill(&r, x, nx, 1.0f);
    ref_hh_layer_opts((int)f.v, b, n, D, s->h, s->l, 0.0, 1, &ro, x, f.w[W_Q],
                      f.w[W_K], f.w[W_A], f.w[W_O], yref);
    ref_y(&f, n, 1, x, yplain);
    cr_expect(
        tu_compare(yplain, yref, nx).rel > 10 * clattn__tolerance(CLATTN_F32),
        "%s: the options change nothing in this case", variant_names[f.v]);
    for (int h = 0; h < s->h; h++)
      slopes[h] = sinks[h] = NAN; /* the caller's arrays after create */
    char what[200];
    describe(&f, "options", what, sizeof what);
    prefill_rows(&f, NULL, x, 0, n, 1, ylib);
    tu_check(what, ylib, yref, nx, clattn__tolerance(CLATTN_F32));
    tu_layer_cache_checks(f.ctx, f.layer, b, n, D, n, x, ylib, yref, what);
    free(x);
    free(yref);
    free(ylib);
    free(yplain);
    fx_free(&f);
  }
}

/* Bad options at create, every variant: a negative window, a NaN soft-cap,
 * an infinite slope, a NaN sink are CLATTN_ERR_INVALID_ARG naming them; no
 * layer. */
Test(hh_layer, options_refused, .timeout = 900) {
  const hhshape *s = &shapes[0];
  fixture f;
  fx_init(&f, CLATTN_HH_SUPER, s, 0, 51u);
  const float bad_slopes[4] = {0.1f, INFINITY, 0.1f, 0.1f};
  const float bad_sinks[4] = {0.0f, 0.0f, 0.0f, NAN};
  for (int vi = 0; vi < 3; vi++)
    for (int which = 0; which < 4; which++) {
      clattn_hh_layer_desc d = desc_of(variants[vi], s);
      const char *name = which == 0   ? "window"
                         : which == 1 ? "softcap"
                         : which == 2 ? "alibi_slopes"
                                      : "sinks";
      if (which == 0)
        d.window = -1;
      else if (which == 1)
        d.softcap = NAN;
      else if (which == 2)
        d.alibi_slopes = bad_slopes;
      else
        d.sinks = bad_sinks;
      clattn_layer *l = (clattn_layer *)0x1;
      const clattn_status st = create(f.ctx, variants[vi], &d, f.dw, &l);
      cr_expect_eq(st, CLATTN_ERR_INVALID_ARG, "%s %s: %d (%s)",
                   variant_names[variants[vi]], name, (int)st,
                   clattn_ctx_errmsg(f.ctx));
      cr_expect(strstr(clattn_ctx_errmsg(f.ctx), name) != NULL,
                "the message does not name %s: %s", name,
                clattn_ctx_errmsg(f.ctx));
      cr_expect_null(l);
    }
  fx_free(&f);
}
