/* test_layer.c - clattn_layer_* (float32) against ref_layer.
 *
 * Shapes: MHA, GQA and MQA, d_model 64 and 96, head dims equal and not,
 * n up to 40, batch 1 and 2, causal and not.  Tolerance: 1e-4 relative
 * (util.h metric) - float32 storage and arithmetic against the double
 * reference, as for the attention kernels; the projections add float32
 * GEMM rounding of ~sqrt(d_model) * 6e-8, far below it.
 * The first CLBlast call of a process builds its GEMM kernels (tens of
 * seconds with a cold PoCL cache), hence the generous timeouts.
 * CLATTN_TEST_SUBSET=small (the Oclgrind run) keeps two small shapes.
 * The attention options (window, soft-cap, ALiBi, sinks together) carried
 * to the core's prefill and decode, against ref_layer_opts, and bad
 * options refused at create.
 */
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lshape {
  int b, n, D, hq, hkv, dk, dv;
} lshape;

static const lshape full_shapes[] = {
    {1, 23, 64, 4, 4, 16, 16}, /* MHA */
    {2, 40, 64, 8, 2, 16, 16}, /* GQA */
    {2, 17, 96, 6, 1, 16, 24}, /* MQA, dk != dv */
    {1, 33, 96, 3, 3, 32, 32}, /* MHA, D != hq * dk */
};
/* CLATTN_TEST_SUBSET=small (Oclgrind): GQA and MQA (dk != dv), short. */
static const lshape small_shapes[] = {
    {2, 9, 32, 4, 2, 8, 8},  /* GQA */
    {2, 7, 48, 6, 1, 8, 12}, /* MQA, dk != dv */
};
static const lshape *shapes = full_shapes;
static int n_shapes = (int)(sizeof full_shapes / sizeof full_shapes[0]);

static void pick_shapes(void) {
  if (tu_subset("small")) {
    shapes = small_shapes;
    n_shapes = (int)(sizeof small_shapes / sizeof small_shapes[0]);
  }
}

/* Host weights and the device layer built from them. */
typedef struct fixture {
  lshape s;
  float *wq, *wk, *wv, *wo;
  clattn_ctx *ctx;
  cl_mem dwq, dwk, dwv, dwo;
  clattn_layer *layer;
} fixture;

static void fx_init_desc(fixture *f, const lshape *s,
                         const clattn_layer_desc *desc, unsigned seed) {
  memset(f, 0, sizeof *f);
  f->s = *s;
  size_t nq = (size_t)s->D * s->hq * s->dk, nk = (size_t)s->D * s->hkv * s->dk,
         nv = (size_t)s->D * s->hkv * s->dv, no = (size_t)s->hq * s->dv * s->D;
  f->wq = tu_alloc(nq * 4);
  f->wk = tu_alloc(nk * 4);
  f->wv = tu_alloc(nv * 4);
  f->wo = tu_alloc(no * 4);
  tu_rng r = tu_rng_seed(seed);
  /* scaled so projections are O(1) */
  float a = 1.7f / sqrtf((float)s->D);
  tu_fill(&r, f->wq, nq, a);
  tu_fill(&r, f->wk, nk, a);
  tu_fill(&r, f->wv, nv, a);
  tu_fill(&r, f->wo, no, 1.7f / sqrtf((float)(s->hq * s->dv)));
  f->ctx = tu_ctx();
  f->dwq = tu_upload(f->ctx, f->wq, nq, CLATTN_F32);
  f->dwk = tu_upload(f->ctx, f->wk, nk, CLATTN_F32);
  f->dwv = tu_upload(f->ctx, f->wv, nv, CLATTN_F32);
  f->dwo = tu_upload(f->ctx, f->wo, no, CLATTN_F32);
  clattn_status st = clattn_layer_create(f->ctx, desc, f->dwq, f->dwk, f->dwv,
                                         f->dwo, &f->layer);
  cr_assert(st == CLATTN_OK && f->layer, "clattn_layer_create: %d %s: %s",
            (int)st, clattn_status_str(st), clattn_ctx_errmsg(f->ctx));
}

static clattn_layer_desc desc_of(const lshape *s) {
  const clattn_layer_desc d = {.size = sizeof(clattn_layer_desc),
                               .d_model = s->D,
                               .heads_q = s->hq,
                               .heads_kv = s->hkv,
                               .head_dim_k = s->dk,
                               .head_dim_v = s->dv,
                               .scale = 0.0f};
  return d;
}

static void fx_init(fixture *f, const lshape *s, unsigned seed) {
  const clattn_layer_desc d = desc_of(s);
  fx_init_desc(f, s, &d, seed);
}

static void fx_free(fixture *f) {
  clattn_layer_destroy(f->layer);
  /* the layer retained the weights: releasing ours first is also legal */
  tu_release(f->dwq);
  tu_release(f->dwk);
  tu_release(f->dwv);
  tu_release(f->dwo);
  clattn_ctx_destroy(f->ctx);
  free(f->wq);
  free(f->wk);
  free(f->wv);
  free(f->wo);
}

static double scale_of(const lshape *s) { return 1.0 / sqrt((double)s->dk); }

static void describe(const lshape *s, const char *tag, char *buf, size_t cap) {
  snprintf(buf, cap, "%s b=%d n=%d D=%d hq=%d hkv=%d dk=%d dv=%d", tag, s->b,
           s->n, s->D, s->hq, s->hkv, s->dk, s->dv);
}

/* [b, nr, D] slice of x at rows r0.. as a fresh device buffer. */
static cl_mem upload_rows(clattn_ctx *ctx, const float *x, int b, int n, int D,
                          int r0, int nr) {
  float *t = tu_alloc((size_t)b * nr * D * 4);
  tu_rows_get(x, b, n, D, r0, nr, t);
  cl_mem m = tu_upload(ctx, t, (size_t)b * nr * D, CLATTN_F32);
  free(t);
  return m;
}

/* Prefill without a cache, causal and not, every shape. */
Test(layer, prefill_matches_reference, .timeout = 900) {
  pick_shapes();
  for (int si = 0; si < n_shapes; si++) {
    const lshape *s = &shapes[si];
    fixture f;
    fx_init(&f, s, 10u + (unsigned)si);
    size_t nx = (size_t)s->b * s->n * s->D;
    float *x = tu_alloc(nx * 4), *y = tu_alloc(nx * 4),
          *yref = tu_alloc(nx * 4);
    tu_rng r = tu_rng_seed(100u + (unsigned)si);
    tu_fill(&r, x, nx, 1.0f);
    cl_mem dx = tu_upload(f.ctx, x, nx, CLATTN_F32);
    cl_mem dy = tu_sentinel(f.ctx, nx, CLATTN_F32, 0xff);
    for (int causal = 0; causal < 2; causal++) {
      char what[160];
      describe(s, causal ? "prefill causal" : "prefill", what, sizeof what);
      clattn_status st =
          clattn_layer_prefill(f.layer, NULL, s->b, s->n, causal, dx, dy, NULL);
      cr_assert(st == CLATTN_OK, "%s: %d %s: %s", what, (int)st,
                clattn_status_str(st), clattn_ctx_errmsg(f.ctx));
      tu_download(f.ctx, dy, y, nx, CLATTN_F32);
      ref_layer(s->b, s->n, s->D, s->hq, s->hkv, s->dk, s->dv, scale_of(s),
                causal, x, f.wq, f.wk, f.wv, f.wo, yref);
      tu_check(what, y, yref, nx, clattn__tolerance(CLATTN_F32));
    }
    tu_release(dx);
    tu_release(dy);
    free(x);
    free(y);
    free(yref);
    fx_free(&f);
  }
}

/* Prefill a prompt into a cache, then decode the remaining positions one at
 * a time: every y row equals the causal prefill of the whole sequence (the
 * library's, without a cache) and ref_layer's.  Then a chunked prefill
 * (two chunks through the cache, the second non-causal as the final chunk)
 * reproduces the reference too, after clattn_kv_cache_reset. */
Test(layer, cache_prefill_then_decode, .timeout = 900) {
  pick_shapes();
  for (int si = 0; si < n_shapes; si++) {
    const lshape *s = &shapes[si];
    fixture f;
    fx_init(&f, s, 20u + (unsigned)si);
    int b = s->b, n = s->n, D = s->D;
    size_t nx = (size_t)b * n * D;
    float *x = tu_alloc(nx * 4), *yc = tu_alloc(nx * 4),
          *ync = tu_alloc(nx * 4), *yfull = tu_alloc(nx * 4),
          *yref = tu_alloc(nx * 4), *ylib = tu_alloc(nx * 4),
          *tmp = tu_alloc(nx * 4);
    tu_rng r = tu_rng_seed(200u + (unsigned)si);
    tu_fill(&r, x, nx, 1.0f);
    ref_layer(b, n, D, s->hq, s->hkv, s->dk, s->dv, scale_of(s), 1, x, f.wq,
              f.wk, f.wv, f.wo, yref);
    ref_layer(b, n, D, s->hq, s->hkv, s->dk, s->dv, scale_of(s), 0, x, f.wq,
              f.wk, f.wv, f.wo, ync);

    /* the library's own one-shot causal prefill */
    cl_mem dx = tu_upload(f.ctx, x, nx, CLATTN_F32);
    cl_mem dy = tu_sentinel(f.ctx, nx, CLATTN_F32, 0xff);
    clattn_status st =
        clattn_layer_prefill(f.layer, NULL, b, n, 1, dx, dy, NULL);
    cr_assert(st == CLATTN_OK, "%s", clattn_ctx_errmsg(f.ctx));
    tu_download(f.ctx, dy, ylib, nx, CLATTN_F32);

    clattn_kv_cache *cache = NULL;
    st = clattn_kv_cache_create(f.layer, b, n + 3, &cache);
    cr_assert(st == CLATTN_OK && cache, "kv_cache_create: %d %s", (int)st,
              clattn_ctx_errmsg(f.ctx));
    cr_expect_eq(clattn_kv_cache_len(cache), 0);

    int p0 = n / 3 + 1; /* prompt length */
    cl_mem dxp = upload_rows(f.ctx, x, b, n, D, 0, p0);
    cl_mem dyp = tu_sentinel(f.ctx, (size_t)b * p0 * D, CLATTN_F32, 0xff);
    st = clattn_layer_prefill(f.layer, cache, b, p0, 1, dxp, dyp, NULL);
    cr_assert(st == CLATTN_OK, "prefill into cache: %d %s", (int)st,
              clattn_ctx_errmsg(f.ctx));
    cr_expect_eq(clattn_kv_cache_len(cache), p0);
    tu_download(f.ctx, dyp, tmp, (size_t)b * p0 * D, CLATTN_F32);
    for (int bi = 0; bi < b; bi++)
      memcpy(yc + (size_t)bi * n * D, tmp + (size_t)bi * p0 * D,
             (size_t)p0 * D * 4);
    cl_mem dx1 = tu_buffer(f.ctx, (size_t)b * D * 4);
    cl_mem dy1 = tu_buffer(f.ctx, (size_t)b * D * 4);
    for (int t = p0; t < n; t++) {
      tu_rows_get(x, b, n, D, t, 1, tmp);
      tu_write(f.ctx, dx1, tmp, (size_t)b * D, CLATTN_F32);
      st = clattn_layer_decode(f.layer, cache, dx1, dy1, NULL);
      cr_assert(st == CLATTN_OK, "decode step %d: %d %s", t, (int)st,
                clattn_ctx_errmsg(f.ctx));
      cr_expect_eq(clattn_kv_cache_len(cache), t + 1);
      tu_download(f.ctx, dy1, tmp, (size_t)b * D, CLATTN_F32);
      for (int bi = 0; bi < b; bi++)
        memcpy(yc + ((size_t)bi * n + t) * D, tmp + (size_t)bi * D,
               (size_t)D * 4);
    }
    char what[200];
    describe(s, "prefill+decode vs ref", what, sizeof what);
    tu_check(what, yc, yref, nx, clattn__tolerance(CLATTN_F32));
    describe(s, "prefill+decode vs one causal prefill", what, sizeof what);
    tu_check(what, yc, ylib, nx, clattn__tolerance(CLATTN_F32));

    /* chunked: reset, prefill rows [0, c1) causal, then [c1, n) with the
     * cache and causal=0: the last chunk's queries see all n positions */
    clattn_kv_cache_reset(cache);
    cr_expect_eq(clattn_kv_cache_len(cache), 0);
    int c1 = n / 2;
    cl_mem dxa = upload_rows(f.ctx, x, b, n, D, 0, c1);
    cl_mem dxb = upload_rows(f.ctx, x, b, n, D, c1, n - c1);
    cl_mem dya = tu_buffer(f.ctx, (size_t)b * c1 * D * 4);
    cl_mem dyb = tu_buffer(f.ctx, (size_t)b * (n - c1) * D * 4);
    st = clattn_layer_prefill(f.layer, cache, b, c1, 1, dxa, dya, NULL);
    cr_assert(st == CLATTN_OK, "chunk 1: %s", clattn_ctx_errmsg(f.ctx));
    st = clattn_layer_prefill(f.layer, cache, b, n - c1, 0, dxb, dyb, NULL);
    cr_assert(st == CLATTN_OK, "chunk 2: %s", clattn_ctx_errmsg(f.ctx));
    cr_expect_eq(clattn_kv_cache_len(cache), n);
    float *got = tu_alloc((size_t)b * (n - c1) * D * 4);
    float *want = tu_alloc((size_t)b * (n - c1) * D * 4);
    tu_download(f.ctx, dyb, got, (size_t)b * (n - c1) * D, CLATTN_F32);
    tu_rows_get(ync, b, n, D, c1, n - c1, want);
    describe(s, "chunked prefill, non-causal last chunk", what, sizeof what);
    tu_check(what, got, want, (size_t)b * (n - c1) * D,
             clattn__tolerance(CLATTN_F32));
    free(got);
    free(want);
    got = tu_alloc((size_t)b * c1 * D * 4 + 4);
    want = tu_alloc((size_t)b * c1 * D * 4 + 4);
    tu_download(f.ctx, dya, got, (size_t)b * c1 * D, CLATTN_F32);
    tu_rows_get(yref, b, n, D, 0, c1, want);
    describe(s, "chunked prefill, causal first chunk", what, sizeof what);
    tu_check(what, got, want, (size_t)b * c1 * D,
             clattn__tolerance(CLATTN_F32));
    free(got);
    free(want);

    clattn_kv_cache_destroy(cache);
    tu_release(dx);
    tu_release(dy);
    tu_release(dxp);
    tu_release(dyp);
    tu_release(dx1);
    tu_release(dy1);
    tu_release(dxa);
    tu_release(dxb);
    tu_release(dya);
    tu_release(dyb);
    free(x);
    free(yc);
    free(ync);
    free(yfull);
    free(yref);
    free(ylib);
    free(tmp);
    fx_free(&f);
  }
}

/* A full cache refuses more positions with CLATTN_ERR_CAPACITY, keeps its
 * length, enqueues nothing (y keeps its sentinel), and works after reset. */
Test(layer, capacity, .timeout = 900) {
  pick_shapes();
  const lshape *s = &shapes[n_shapes > 1 ? 1 : 0];
  fixture f;
  fx_init(&f, s, 31);
  int b = s->b, D = s->D, cap = 6;
  size_t nx = (size_t)b * cap * D;
  float *x = tu_alloc(nx * 4), *y = tu_alloc(nx * 4);
  tu_rng r = tu_rng_seed(32);
  tu_fill(&r, x, nx, 1.0f);
  clattn_kv_cache *cache = NULL;
  clattn_status st = clattn_kv_cache_create(f.layer, b, cap, &cache);
  cr_assert(st == CLATTN_OK, "%s", clattn_ctx_errmsg(f.ctx));
  cl_mem dx = tu_upload(f.ctx, x, nx, CLATTN_F32);
  cl_mem dy = tu_buffer(f.ctx, nx * 4);
  /* more than the capacity at once */
  st = clattn_layer_prefill(f.layer, cache, b, cap + 1, 1, dx, dy, NULL);
  cr_expect_eq(st, CLATTN_ERR_CAPACITY, "prefill cap+1 -> %d (%s)", (int)st,
               clattn_status_str(st));
  cr_expect_eq(clattn_kv_cache_len(cache), 0);
  cr_expect(clattn_ctx_errmsg(f.ctx)[0] != '\0', "no error message");
  st = clattn_layer_prefill(f.layer, cache, b, cap - 1, 1, dx, dy, NULL);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(f.ctx));
  cl_mem dx1 = tu_upload(f.ctx, x, (size_t)b * D, CLATTN_F32);
  cl_mem dy1 = tu_buffer(f.ctx, (size_t)b * D * 4);
  st = clattn_layer_decode(f.layer, cache, dx1, dy1, NULL);
  cr_assert_eq(st, CLATTN_OK, "last free position: %s",
               clattn_ctx_errmsg(f.ctx));
  cr_expect_eq(clattn_kv_cache_len(cache), cap);
  /* full: decode and prefill of even one position fail */
  cl_mem sent = tu_sentinel(f.ctx, (size_t)b * D, CLATTN_F32, 0x5a);
  st = clattn_layer_decode(f.layer, cache, dx1, sent, NULL);
  cr_expect_eq(st, CLATTN_ERR_CAPACITY, "decode on full cache -> %d (%s)",
               (int)st, clattn_status_str(st));
  st = clattn_layer_prefill(f.layer, cache, b, 1, 1, dx1, sent, NULL);
  cr_expect_eq(st, CLATTN_ERR_CAPACITY, "prefill on full cache -> %d (%s)",
               (int)st, clattn_status_str(st));
  cr_expect_eq(clattn_kv_cache_len(cache), cap);
  unsigned char *bytes = tu_alloc((size_t)b * D * 4);
  tu_read_bytes(f.ctx, sent, bytes, (size_t)b * D * 4);
  size_t changed = 0;
  for (size_t i = 0; i < (size_t)b * D * 4; i++)
    changed += bytes[i] != 0x5a;
  cr_expect_eq(changed, 0, "failed calls wrote %zu bytes of y", changed);
  free(bytes);
  /* after reset the cache is usable again and the result is right */
  clattn_kv_cache_reset(cache);
  st = clattn_layer_prefill(f.layer, cache, b, cap, 1, dx, dy, NULL);
  cr_assert_eq(st, CLATTN_OK, "after reset: %s", clattn_ctx_errmsg(f.ctx));
  tu_download(f.ctx, dy, y, nx, CLATTN_F32);
  float *yref = tu_alloc(nx * 4);
  ref_layer(b, cap, D, s->hq, s->hkv, s->dk, s->dv, scale_of(s), 1, x, f.wq,
            f.wk, f.wv, f.wo, yref);
  tu_check("prefill after reset", y, yref, nx, clattn__tolerance(CLATTN_F32));
  free(yref);
  clattn_kv_cache_destroy(cache);
  tu_release(dx);
  tu_release(dy);
  tu_release(dx1);
  tu_release(dy1);
  tu_release(sent);
  free(x);
  free(y);
  fx_free(&f);
}

/* Argument checks of the layer API. */
Test(layer, misuse, .timeout = 900) {
  pick_shapes();
  const lshape *s = &shapes[0];
  fixture f;
  fx_init(&f, s, 41);
  clattn_layer *l = (clattn_layer *)0x1;
  clattn_layer_desc d = {.size = sizeof(clattn_layer_desc),
                         .d_model = s->D,
                         .heads_q = s->hq,
                         .heads_kv = s->hkv,
                         .head_dim_k = s->dk,
                         .head_dim_v = s->dv};
  /* hq % hkv != 0 */
  clattn_layer_desc bad = d;
  bad.heads_kv = 3;
  clattn_status st =
      clattn_layer_create(f.ctx, &bad, f.dwq, f.dwk, f.dwv, f.dwo, &l);
  cr_expect_eq(st, CLATTN_ERR_SHAPE, "hq %% hkv != 0 -> %d", (int)st);
  cr_expect_null(l, "out not NULL after failure");
  /* NULL weight */
  l = (clattn_layer *)0x1;
  st = clattn_layer_create(f.ctx, &d, f.dwq, NULL, f.dwv, f.dwo, &l);
  cr_expect_eq(st, CLATTN_ERR_INVALID_ARG, "NULL w_k -> %d", (int)st);
  cr_expect_null(l);
  /* weights too small: d_model doubled */
  bad = d;
  bad.d_model = 2 * s->D;
  st = clattn_layer_create(f.ctx, &bad, f.dwq, f.dwk, f.dwv, f.dwo, &l);
  cr_expect_eq(st, CLATTN_ERR_BUFFER_TOO_SMALL, "small weights -> %d", (int)st);
  /* NULL ctx */
  st = clattn_layer_create(NULL, &d, f.dwq, f.dwk, f.dwv, f.dwo, &l);
  cr_expect_eq(st, CLATTN_ERR_MISUSE, "NULL ctx -> %d", (int)st);
  /* cache of batch 0 */
  clattn_kv_cache *c = (clattn_kv_cache *)0x1;
  st = clattn_kv_cache_create(f.layer, 0, 8, &c);
  cr_expect_eq(st, CLATTN_ERR_SHAPE, "cache batch 0 -> %d", (int)st);
  cr_expect_null(c);
  /* decode with a NULL cache */
  cl_mem x = tu_buffer(f.ctx, (size_t)s->D * 4);
  st = clattn_layer_decode(f.layer, NULL, x, x, NULL);
  cr_expect_eq(st, CLATTN_ERR_INVALID_ARG, "decode NULL cache -> %d", (int)st);
  /* prefill with x too small */
  cl_mem y = tu_buffer(f.ctx, (size_t)s->n * s->D * 4);
  st = clattn_layer_prefill(f.layer, NULL, 1, s->n, 1, x, y, NULL);
  cr_expect_eq(st, CLATTN_ERR_BUFFER_TOO_SMALL, "small x -> %d", (int)st);
  /* prefill n = 0 */
  st = clattn_layer_prefill(f.layer, NULL, 1, 0, 1, y, y, NULL);
  cr_expect_eq(st, CLATTN_ERR_SHAPE, "n = 0 -> %d", (int)st);
  /* a wait list with NULL where events belong, before anything runs */
  cl_mem xs = tu_buffer(f.ctx, (size_t)s->n * s->D * 4);
  clattn_events no_list = {sizeof(clattn_events), 3, NULL, NULL};
  st = clattn_layer_prefill(f.layer, NULL, 1, s->n, 1, xs, y, &no_list);
  cr_expect_eq(st, CLATTN_ERR_INVALID_ARG, "num_wait 3, wait NULL -> %d",
               (int)st);
  cr_expect(strstr(clattn_ctx_errmsg(f.ctx),
                   "clattn_events: num_wait is 3 but wait is NULL") != NULL,
            "%s", clattn_ctx_errmsg(f.ctx));
  cl_int err = CL_SUCCESS;
  cl_event gate = clCreateUserEvent(clattn_ctx_cl_context(f.ctx), &err);
  cr_assert_eq(err, CL_SUCCESS);
  const cl_event holes[2] = {NULL, gate};
  clattn_events holed = {sizeof(clattn_events), 2, holes, NULL};
  clattn_kv_cache *kc = NULL;
  cr_assert_eq(clattn_kv_cache_create(f.layer, 1, 8, &kc), CLATTN_OK);
  st = clattn_layer_decode(f.layer, kc, x, x, &holed);
  cr_expect_eq(st, CLATTN_ERR_INVALID_ARG, "decode wait[0] NULL -> %d",
               (int)st);
  cr_expect(strstr(clattn_ctx_errmsg(f.ctx),
                   "clattn_events: wait[0] is NULL") != NULL,
            "%s", clattn_ctx_errmsg(f.ctx));
  cr_expect_eq(clattn_kv_cache_len(kc), 0, "a refused decode grew the cache");
  clReleaseEvent(gate);
  /* buffers of another cl_context: a weight, x and y */
  cl_device_id dev = clattn_ctx_device(f.ctx);
  cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
  const size_t big = (size_t)s->n * s->D * 4 +
                     (size_t)s->D * (s->hq + 2 * s->hkv) * s->dv * 4 * 4;
  cl_mem alien = clCreateBuffer(other, CL_MEM_READ_WRITE, big, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
  l = (clattn_layer *)0x1;
  st = clattn_layer_create(f.ctx, &d, f.dwq, f.dwk, alien, f.dwo, &l);
  cr_expect_eq(st, CLATTN_ERR_INVALID_ARG, "foreign w_v -> %d", (int)st);
  cr_expect_null(l);
  cr_expect(strstr(clattn_ctx_errmsg(f.ctx),
                   "buffer w_v is from another cl_context") != NULL,
            "%s", clattn_ctx_errmsg(f.ctx));
  st = clattn_layer_prefill(f.layer, NULL, 1, s->n, 1, alien, y, NULL);
  cr_expect_eq(st, CLATTN_ERR_INVALID_ARG, "foreign x -> %d", (int)st);
  cr_expect(strstr(clattn_ctx_errmsg(f.ctx),
                   "buffer x is from another cl_context") != NULL,
            "%s", clattn_ctx_errmsg(f.ctx));
  st = clattn_layer_decode(f.layer, kc, x, alien, NULL);
  cr_expect_eq(st, CLATTN_ERR_INVALID_ARG, "foreign y -> %d", (int)st);
  cr_expect(strstr(clattn_ctx_errmsg(f.ctx),
                   "buffer y is from another cl_context") != NULL,
            "%s", clattn_ctx_errmsg(f.ctx));
  cr_expect_eq(clattn_kv_cache_len(kc), 0, "a refused decode grew the cache");
  tu_release(alien);
  clReleaseContext(other);
  clattn_kv_cache_destroy(kc);
  tu_release(xs);
  tu_release(x);
  tu_release(y);
  clattn_layer_destroy(NULL);
  clattn_kv_cache_destroy(NULL);
  fx_free(&f);
}

/* Every attention option at once on a GQA layer: a window of 5 positions
 * (less than n), a soft-cap, ALiBi slopes and sinks (one -inf), set at
 * create from arrays the caller then overwrites with NaN (the layer keeps
 * its own copies).  Prefill without a cache, then through one with decode
 * steps and in two chunks (positions follow the cache), against
 * ref_layer_opts. */
Test(layer, options, .timeout = 900) {
  pick_shapes();
  const lshape *s = &shapes[n_shapes > 2 ? 1 : 0]; /* GQA, <= 8 heads */
  float slopes[8], sinks[8];
  for (int h = 0; h < s->hq; h++) {
    slopes[h] = 0.5f / (float)(h + 1);
    sinks[h] = h == 3 ? -INFINITY : 0.25f * (float)(h - 4);
  }
  const ref_opts ro = {5, 2.5, slopes, sinks};
  clattn_layer_desc d = desc_of(s);
  d.window = 5;
  d.softcap = 2.5f;
  d.alibi_slopes = slopes;
  d.sinks = sinks;
  fixture f;
  fx_init_desc(&f, s, &d, 60u);
  const int b = s->b, n = s->n, D = s->D;
  const size_t nx = (size_t)b * n * D;
  float *x = tu_alloc(nx * 4), *yref = tu_alloc(nx * 4),
        *ylib = tu_alloc(nx * 4), *yplain = tu_alloc(nx * 4);
  tu_rng r = tu_rng_seed(600u);
  tu_fill(&r, x, nx, 1.0f);
  ref_layer_opts(b, n, D, s->hq, s->hkv, s->dk, s->dv, scale_of(s), 1, &ro, x,
                 f.wq, f.wk, f.wv, f.wo, yref);
  ref_layer(b, n, D, s->hq, s->hkv, s->dk, s->dv, scale_of(s), 1, x, f.wq, f.wk,
            f.wv, f.wo, yplain);
  cr_expect(tu_compare(yplain, yref, nx).rel >
                10 * clattn__tolerance(CLATTN_F32),
            "the options change nothing in this case");
  for (int h = 0; h < s->hq; h++)
    slopes[h] = sinks[h] = NAN; /* the caller's arrays after create */
  cl_mem dx = tu_upload(f.ctx, x, nx, CLATTN_F32);
  cl_mem dy = tu_sentinel(f.ctx, nx, CLATTN_F32, 0xff);
  clattn_status st = clattn_layer_prefill(f.layer, NULL, b, n, 1, dx, dy, NULL);
  cr_assert(st == CLATTN_OK, "%s", clattn_ctx_errmsg(f.ctx));
  tu_download(f.ctx, dy, ylib, nx, CLATTN_F32);
  char what[200];
  describe(s, "options", what, sizeof what);
  tu_check(what, ylib, yref, nx, clattn__tolerance(CLATTN_F32));
  tu_layer_cache_checks(f.ctx, f.layer, b, n, D, n + 1, x, ylib, yref, what);
  tu_release(dx);
  tu_release(dy);
  free(x);
  free(yref);
  free(ylib);
  free(yplain);
  fx_free(&f);
}

/* Bad options at create: a negative window, a soft-cap below 0, a NaN
 * slope, a +inf sink are CLATTN_ERR_INVALID_ARG naming them; no layer. */
Test(layer, options_refused, .timeout = 900) {
  const lshape *s = &shapes[0];
  fixture f;
  fx_init(&f, s, 61u);
  float bad_slopes[8], bad_sinks[8];
  for (int h = 0; h < 8; h++) {
    bad_slopes[h] = h == 2 ? NAN : 0.1f;
    bad_sinks[h] = h == 1 ? INFINITY : 0.0f;
  }
  for (int which = 0; which < 4; which++) {
    clattn_layer_desc d = desc_of(s);
    const char *name = which == 0   ? "window"
                       : which == 1 ? "softcap"
                       : which == 2 ? "alibi_slopes"
                                    : "sinks";
    if (which == 0)
      d.window = -2;
    else if (which == 1)
      d.softcap = -1.0f;
    else if (which == 2)
      d.alibi_slopes = bad_slopes;
    else
      d.sinks = bad_sinks;
    clattn_layer *l = (clattn_layer *)0x1;
    const clattn_status st =
        clattn_layer_create(f.ctx, &d, f.dwq, f.dwk, f.dwv, f.dwo, &l);
    cr_expect_eq(st, CLATTN_ERR_INVALID_ARG, "%s: %d (%s)", name, (int)st,
                 clattn_ctx_errmsg(f.ctx));
    cr_expect(strstr(clattn_ctx_errmsg(f.ctx), name) != NULL,
              "the message does not name %s: %s", name,
              clattn_ctx_errmsg(f.ctx));
    cr_expect_null(l);
  }
  fx_free(&f);
}
