/* test_th_layer.c - the talking-heads layer (clattn_layer_create_talking_
 * heads with clattn_layer_prefill / _decode and the KV cache) against
 * ref_th_layer.
 *
 * Shapes: small and odd, h_k != h != h_v, head dims equal and not, batch 1
 * and 2.  The window (the one attention option the layer takes, carried to
 * its prefill and decode) against ref_th_layer_window, through a cache
 * too; the other options refused at create.  Tolerance:
 * clattn__tolerance(CLATTN_F32), as for the GQA layer (float32 storage and
 * arithmetic against the double reference).
 */
#include "reference/ref_th.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct thshape {
  int b, n, D, hk, h, hv, dk, dv;
} thshape;

static const thshape shapes[] = {
    {2, 9, 24, 3, 5, 2, 8, 8},  /* h_k < h, h_v < h_k */
    {1, 11, 20, 2, 3, 4, 5, 7}, /* odd head dims, h_v > h */
};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

enum { W_Q, W_K, W_V, W_O, P_L, P_W, NW };

/* Host weights and the device layer built from them. */
typedef struct fixture {
  thshape s;
  float *w[NW];
  size_t nw[NW];
  clattn_ctx *ctx;
  cl_mem dw[NW];
  clattn_layer *layer;
} fixture;

static clattn_th_layer_desc desc_of(const thshape *s) {
  const clattn_th_layer_desc d = {.size = sizeof(clattn_th_layer_desc),
                                  .d_model = s->D,
                                  .heads_k = s->hk,
                                  .heads = s->h,
                                  .heads_v = s->hv,
                                  .head_dim_k = s->dk,
                                  .head_dim_v = s->dv};
  return d;
}

static clattn_status create(fixture *f, const clattn_th_layer_desc *d,
                            const cl_mem *w, clattn_layer **out) {
  return clattn_layer_create_talking_heads(f->ctx, d, w[W_Q], w[W_K], w[W_V],
                                           w[W_O], w[P_L], w[P_W], out);
}

static void fx_init_desc(fixture *f, const thshape *s,
                         const clattn_th_layer_desc *d, unsigned seed) {
  memset(f, 0, sizeof *f);
  f->s = *s;
  const size_t k = (size_t)s->hk * s->dk, v = (size_t)s->hv * s->dv;
  const size_t n[NW] = {s->D * k,
                        s->D * k,
                        s->D * v,
                        v * s->D,
                        (size_t)s->hk * s->h,
                        (size_t)s->h * s->hv};
  /* scaled by 1/sqrt(fan-in) so the activations and logits are O(1) */
  const float amp[NW] = {1.7f / sqrtf((float)s->D),  1.7f / sqrtf((float)s->D),
                         1.7f / sqrtf((float)s->D),  1.7f / sqrtf((float)v),
                         1.7f / sqrtf((float)s->hk), 1.7f / sqrtf((float)s->h)};
  tu_rng r = tu_rng_seed(seed);
  f->ctx = tu_ctx();
  for (int i = 0; i < NW; i++) {
    f->nw[i] = n[i];
    f->w[i] = tu_alloc(n[i] * 4);
    tu_fill(&r, f->w[i], n[i], amp[i]);
    f->dw[i] = tu_upload(f->ctx, f->w[i], n[i], CLATTN_F32);
  }
  clattn_status st = create(f, d, f->dw, &f->layer);
  cr_assert(st == CLATTN_OK && f->layer,
            "clattn_layer_create_talking_heads: %d %s: %s", (int)st,
            clattn_status_str(st), clattn_ctx_errmsg(f->ctx));
}

static void fx_init(fixture *f, const thshape *s, unsigned seed) {
  const clattn_th_layer_desc d = desc_of(s);
  fx_init_desc(f, s, &d, seed);
}

static void fx_free(fixture *f) {
  clattn_layer_destroy(f->layer);
  for (int i = 0; i < NW; i++) {
    tu_release(f->dw[i]);
    free(f->w[i]);
  }
  clattn_ctx_destroy(f->ctx);
}

static void ref_y(const fixture *f, int b, int n, int causal, const float *x,
                  float *y) {
  const thshape *s = &f->s;
  ref_th_layer(b, n, s->D, s->hk, s->h, s->hv, s->dk, s->dv,
               1.0 / sqrt((double)s->dk), causal, x, f->w[W_Q], f->w[W_K],
               f->w[W_V], f->w[W_O], f->w[P_L], f->w[P_W], y);
}

/* Rows [r0, r0+nr) of x through the fixture's layer (c may be NULL). */
static void prefill_rows(fixture *f, clattn_kv_cache *c, const float *x, int r0,
                         int nr, int causal, float *y) {
  tu_layer_prefill_rows(f->ctx, f->layer, c, f->s.b, f->s.n, f->s.D, x, r0, nr,
                        causal, y);
}

static void describe(const thshape *s, const char *tag, char *buf, size_t cap) {
  snprintf(buf, cap, "%s b=%d n=%d D=%d hk=%d h=%d hv=%d dk=%d dv=%d", tag,
           s->b, s->n, s->D, s->hk, s->h, s->hv, s->dk, s->dv);
}

/* Prefill without a cache, causal and not, against the reference. */
Test(th_layer, prefill_matches_reference, .timeout = 900) {
  for (int si = 0; si < NSHAPES; si++) {
    const thshape *s = &shapes[si];
    fixture f;
    fx_init(&f, s, 10u + (unsigned)si);
    const size_t nx = (size_t)s->b * s->n * s->D;
    float *x = tu_alloc(nx * 4), *y = tu_alloc(nx * 4),
          *yref = tu_alloc(nx * 4);
    tu_rng r = tu_rng_seed(100u + (unsigned)si);
    tu_fill(&r, x, nx, 1.0f);
    for (int causal = 0; causal < 2; causal++) {
      char what[160];
      describe(s, causal ? "prefill causal" : "prefill", what, sizeof what);
      prefill_rows(&f, NULL, x, 0, s->n, causal, y);
      ref_y(&f, s->b, s->n, causal, x, yref);
      tu_check(what, y, yref, nx, clattn__tolerance(CLATTN_F32));
    }
    free(x);
    free(y);
    free(yref);
    fx_free(&f);
  }
}

/* Prefill of a prompt into a cache, then one decode step per remaining
 * position, equals one causal prefill of the whole sequence (the library's
 * and the reference); so does a prefill through the cache in two causal
 * chunks, after clattn_kv_cache_reset. */
Test(th_layer, cache_prefill_decode_and_chunks, .timeout = 900) {
  for (int si = 0; si < NSHAPES; si++) {
    const thshape *s = &shapes[si];
    fixture f;
    fx_init(&f, s, 20u + (unsigned)si);
    const int b = s->b, n = s->n, D = s->D;
    const size_t nx = (size_t)b * n * D;
    float *x = tu_alloc(nx * 4), *yref = tu_alloc(nx * 4),
          *ylib = tu_alloc(nx * 4);
    tu_rng r = tu_rng_seed(200u + (unsigned)si);
    tu_fill(&r, x, nx, 1.0f);
    ref_y(&f, b, n, 1, x, yref);
    prefill_rows(&f, NULL, x, 0, n, 1, ylib);

    char what[200];
    describe(s, "", what, sizeof what);
    tu_layer_cache_checks(f.ctx, f.layer, b, n, D, n + 2, x, ylib, yref, what);
    free(x);
    free(yref);
    free(ylib);
    fx_free(&f);
  }
}

/* Bad descriptions and weights, a cache of another shape and a full cache
 * give their documented statuses, a message, and no layer. */
Test(th_layer, misuse, .timeout = 900) {
  const thshape *s = &shapes[0];
  fixture f;
  fx_init(&f, s, 41);
  const clattn_th_layer_desc d = desc_of(s);
  clattn_layer *l = (clattn_layer *)0x1;
  cl_mem w[NW];
  memcpy(w, f.dw, sizeof w);

  /* NULL weights, P_w among them */
  for (int i = 0; i < NW; i += NW - 1) {
    w[i] = NULL;
    clattn_status st = create(&f, &d, w, &l);
    cr_expect_eq(st, CLATTN_ERR_INVALID_ARG, "NULL weight %d -> %d", i,
                 (int)st);
    cr_expect_null(l, "out not NULL after failure");
    w[i] = f.dw[i];
  }
  cr_expect_eq(create(&f, NULL, w, &l), CLATTN_ERR_INVALID_ARG);
  /* head counts 0 and CLATTN_TH_MAX_HEADS + 1, for each of the three */
  for (int which = 0; which < 3; which++) {
    clattn_th_layer_desc bad = d;
    int *h = which == 0 ? &bad.heads_k : which == 1 ? &bad.heads : &bad.heads_v;
    *h = 0;
    clattn_status st = create(&f, &bad, w, &l);
    cr_expect_eq(st, CLATTN_ERR_SHAPE, "head count %d = 0 -> %d", which,
                 (int)st);
    cr_expect(clattn_ctx_errmsg(f.ctx)[0] != '\0', "no error message");
    *h = CLATTN_TH_MAX_HEADS + 1;
    st = create(&f, &bad, w, &l);
    cr_expect_eq(st, CLATTN_ERR_SHAPE, "head count %d = %d -> %d", which,
                 CLATTN_TH_MAX_HEADS + 1, (int)st);
    cr_expect_null(l);
  }
  /* weight buffers too small: P_w for one more value head, w_q for a
   * larger d_model */
  clattn_th_layer_desc bad = d;
  bad.heads_v = s->hv + 1;
  cl_mem big_o = tu_buffer(f.ctx, (size_t)bad.heads_v * s->dv * s->D * 4);
  cl_mem big_v = tu_buffer(f.ctx, (size_t)bad.heads_v * s->dv * s->D * 4);
  w[W_O] = big_o;
  w[W_V] = big_v;
  clattn_status st = create(&f, &bad, w, &l);
  cr_expect_eq(st, CLATTN_ERR_BUFFER_TOO_SMALL, "small p_w -> %d (%s)", (int)st,
               clattn_ctx_errmsg(f.ctx));
  cr_expect(strstr(clattn_ctx_errmsg(f.ctx), "p_w") != NULL,
            "message does not name p_w: %s", clattn_ctx_errmsg(f.ctx));
  memcpy(w, f.dw, sizeof w);
  bad = d;
  bad.d_model = 2 * s->D;
  st = create(&f, &bad, w, &l);
  cr_expect_eq(st, CLATTN_ERR_BUFFER_TOO_SMALL, "small w_q -> %d", (int)st);
  cr_expect_null(l);
  tu_release(big_o);
  tu_release(big_v);

  /* a cache of a GQA layer (h_k key and value heads) on the talking-heads
   * layer: the value heads differ */
  clattn_layer_desc gd = {.size = sizeof(clattn_layer_desc),
                          .d_model = s->D,
                          .heads_q = s->hk,
                          .heads_kv = s->hk,
                          .head_dim_k = s->dk,
                          .head_dim_v = s->dv};
  cl_mem gw = tu_buffer(f.ctx, (size_t)s->D * s->hk * s->dv * 4 +
                                   (size_t)s->D * s->hk * s->dk * 4);
  clattn_layer *gqa = NULL;
  st = clattn_layer_create(f.ctx, &gd, gw, gw, gw, gw, &gqa);
  cr_assert_eq(st, CLATTN_OK, "GQA layer: %s", clattn_ctx_errmsg(f.ctx));
  clattn_kv_cache *gc = NULL, *c = NULL;
  st = clattn_kv_cache_create(gqa, s->b, 4, &gc);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(f.ctx));
  const size_t nx = (size_t)s->b * 4 * s->D;
  cl_mem dx = tu_sentinel(f.ctx, nx, CLATTN_F32, 0);
  cl_mem dy = tu_buffer(f.ctx, nx * 4);
  st = clattn_layer_prefill(f.layer, gc, s->b, 1, 1, dx, dy, NULL);
  cr_expect_eq(st, CLATTN_ERR_SHAPE, "GQA cache on a TH layer -> %d", (int)st);

  /* capacity: 3 + 2 > 4 refused, nothing stored; the last free row works,
   * then a decode on the full cache is refused */
  st = clattn_kv_cache_create(f.layer, s->b, 4, &c);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(f.ctx));
  st = clattn_layer_prefill(f.layer, c, s->b, 5, 1, dx, dy, NULL);
  cr_expect_eq(st, CLATTN_ERR_CAPACITY, "prefill 5 into 4 -> %d", (int)st);
  cr_expect_eq(clattn_kv_cache_len(c), 0);
  st = clattn_layer_prefill(f.layer, c, s->b, 3, 1, dx, dy, NULL);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(f.ctx));
  st = clattn_layer_prefill(f.layer, c, s->b, 2, 1, dx, dy, NULL);
  cr_expect_eq(st, CLATTN_ERR_CAPACITY, "3 + 2 > 4 -> %d", (int)st);
  st = clattn_layer_decode(f.layer, c, dx, dy, NULL);
  cr_assert_eq(st, CLATTN_OK, "last row: %s", clattn_ctx_errmsg(f.ctx));
  st = clattn_layer_decode(f.layer, c, dx, dy, NULL);
  cr_expect_eq(st, CLATTN_ERR_CAPACITY, "decode on full cache -> %d", (int)st);
  cr_expect_eq(clattn_kv_cache_len(c), 4);

  clattn_kv_cache_destroy(c);
  clattn_kv_cache_destroy(gc);
  clattn_layer_destroy(gqa);
  tu_release(gw);
  tu_release(dx);
  tu_release(dy);
  fx_free(&f);
}

/* A window of 4 positions (less than n) on the layer's prefill, without a
 * cache and through one, and on its decode steps: each position p sees
 * keys p - 3 .. p, the chunks and steps at their cache positions. */
Test(th_layer, window, .timeout = 900) {
  const thshape *s = &shapes[0];
  const int window = 4;
  clattn_th_layer_desc d = desc_of(s);
  d.window = window;
  fixture f;
  fx_init_desc(&f, s, &d, 30u);
  const int b = s->b, n = s->n, D = s->D;
  const size_t nx = (size_t)b * n * D;
  float *x = tu_alloc(nx * 4), *yref = tu_alloc(nx * 4),
        *ylib = tu_alloc(nx * 4), *yfull = tu_alloc(nx * 4);
  tu_rng r = tu_rng_seed(300u);
  tu_fill(&r, x, nx, 1.0f);
  ref_th_layer_window(b, n, D, s->hk, s->h, s->hv, s->dk, s->dv,
                      1.0 / sqrt((double)s->dk), 1, window, x, f.w[W_Q],
                      f.w[W_K], f.w[W_V], f.w[W_O], f.w[P_L], f.w[P_W], yref);
  /* the window changes the result: a layer that ignored it would differ */
  ref_y(&f, b, n, 1, x, yfull);
  cr_expect(tu_compare(yfull, yref, nx).rel >
                10 * clattn__tolerance(CLATTN_F32),
            "the window changes nothing in this case");
  prefill_rows(&f, NULL, x, 0, n, 1, ylib);
  char what[200];
  describe(s, "window 4", what, sizeof what);
  tu_check(what, ylib, yref, nx, clattn__tolerance(CLATTN_F32));
  tu_layer_cache_checks(f.ctx, f.layer, b, n, D, n + 2, x, ylib, yref, what);
  free(x);
  free(yref);
  free(ylib);
  free(yfull);
  fx_free(&f);
}

/* The window alone: soft-cap, ALiBi and sinks are CLATTN_ERR_UNSUPPORTED at
 * create, a negative window CLATTN_ERR_INVALID_ARG, each named, no layer. */
Test(th_layer, options_refused, .timeout = 900) {
  const thshape *s = &shapes[0];
  fixture f;
  fx_init(&f, s, 42);
  const float per_head[5] = {0.5f, 0.25f, 0.125f, 1.0f, 2.0f};
  for (int which = 0; which < 4; which++) {
    clattn_th_layer_desc d = desc_of(s);
    const char *name = which == 0   ? "softcap"
                       : which == 1 ? "alibi_slopes"
                       : which == 2 ? "sinks"
                                    : "window";
    if (which == 0)
      d.softcap = 30.0f;
    else if (which == 1)
      d.alibi_slopes = per_head;
    else if (which == 2)
      d.sinks = per_head;
    else
      d.window = -1;
    clattn_layer *l = (clattn_layer *)0x1;
    const clattn_status st = create(&f, &d, f.dw, &l);
    cr_expect_eq(st,
                 which < 3 ? CLATTN_ERR_UNSUPPORTED : CLATTN_ERR_INVALID_ARG,
                 "%s: %d (%s)", name, (int)st, clattn_ctx_errmsg(f.ctx));
    cr_expect(strstr(clattn_ctx_errmsg(f.ctx), name) != NULL,
              "the message does not name %s: %s", name,
              clattn_ctx_errmsg(f.ctx));
    cr_expect_null(l);
  }
  fx_free(&f);
}
