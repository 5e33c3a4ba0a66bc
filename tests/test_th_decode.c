/* test_th_decode.c - clattn_talking_heads_decode and
 * clattn_talking_heads_append against ref_th_decode and ref_kv_append.
 *
 * decode/case: shapes whose capacities divide no tile, three head counts
 * that differ (3/5/2), h = 1, 8/8/8 and wide ones, lens 0, partial and
 * full, every dtype, both cache layouts and split counts forced through
 * params; a sequence with lens 0 must give exact zeros.
 * append/case: rows at pos[b].., those outside [0, cap) not written; the
 * caches are compared element for element with the reference's.
 * steps: a sequence built by appends and decoded after each one equals
 * the reference at every step.
 * equals_prefill: a decode step equals the causal prefill of its query.
 * misuse: NULL desc or buffers, head counts 0 and 33, buffers too small,
 * bad params give their statuses and a message.
 * window: the one attention option the family takes, from 1 key to more
 * than the cache, with the splits dividing it, a single split, lens 0,
 * partial and full, f32 and f16 (one program a configuration); the others
 * refused naming them, and ignored by the append.  Not in the small
 * subset: the simulators build no new program.
 * CLATTN_TEST_SUBSET=small keeps a few small cases (simulators). */
#include "reference/ref.h"
#include "reference/ref_th.h"
#include "util.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct thcase {
  int b, cap, hk, h, hv, dk, dv, layout;
  clattn_dtype dt;
  int variant, keys, wg, splits; /* all 0: params NULL */
  unsigned seed;
} thcase;

static const thcase full_cases[] = {
    {2, 301, 3, 5, 2, 12, 20, 1, CLATTN_F32, 0, 0, 0, 0, 1},
    {2, 301, 3, 5, 2, 12, 20, 0, CLATTN_F16, 1, 16, 0, 3, 2},
    {3, 77, 3, 5, 2, 64, 64, 1, CLATTN_BF16, 1, 32, 0, 5, 3},
    {1, 1, 1, 1, 1, 16, 16, 0, CLATTN_F32, 0, 0, 0, 0, 4},
    {4, 129, 1, 1, 1, 80, 24, 1, CLATTN_F16, 0, 0, 0, 7, 5},
    {2, 1000, 8, 8, 8, 64, 64, 1, CLATTN_F32, 0, 0, 0, 0, 6},
    {2, 1000, 8, 8, 8, 64, 64, 0, CLATTN_BF16, 1, 64, 2, 4, 7},
    {1, 513, 8, 16, 4, 128, 128, 1, CLATTN_F32, 1, 256, 0, 2, 8},
    {3, 200, 32, 32, 32, 8, 8, 0, CLATTN_F32, 0, 0, 0, 3, 9},
    {2, 99, 2, 32, 1, 24, 40, 1, CLATTN_F16, 1, 16, 0, 1, 10},
    {4, 57, 5, 3, 7, 12, 12, 0, CLATTN_BF16, 1, 16, 4, 16, 11},
    {1, 4096, 4, 12, 4, 64, 64, 1, CLATTN_F32, 1, 64, 0, 64, 12},
    {2, 4096, 4, 12, 4, 64, 64, 0, CLATTN_F16, 0, 0, 0, 0, 13},
    {3, 45, 16, 4, 16, 16, 32, 1, CLATTN_F32, 1, 16, 0, 45, 14},
};
static const thcase small_cases[] = {
    {2, 45, 3, 5, 2, 12, 20, 1, CLATTN_F32, 1, 16, 0, 3, 101},
    {3, 37, 3, 5, 2, 16, 8, 0, CLATTN_F16, 0, 0, 0, 0, 102},
    {2, 40, 8, 8, 8, 16, 16, 1, CLATTN_BF16, 1, 16, 2, 2, 103},
    {1, 19, 1, 1, 1, 8, 8, 0, CLATTN_F32, 1, 16, 0, 1, 104},
};

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Sequence 0 sees the whole cache, 1 none, 2 a part, others at random. */
static void make_lens(int b, int cap, tu_rng *r, int *lens) {
  for (int i = 0; i < b; i++)
    lens[i] = i == 0   ? cap
              : i == 1 ? 0
              : i == 2 ? cap / 2 + 1
                       : tu_randint(r, cap + 1);
}

static void describe(const thcase *c, char *buf, size_t cap) {
  snprintf(buf, cap,
           "b=%d cap=%d heads %d/%d/%d dk=%d dv=%d %s %s params{variant %d "
           "keys %d wg %d splits %d}",
           c->b, c->cap, c->hk, c->h, c->hv, c->dk, c->dv,
           c->layout ? "BHSD" : "BSHD", tu_dtype_name(c->dt), c->variant,
           c->keys, c->wg, c->splits);
}

static void run_decode(const thcase *c, int window) {
  char what[280];
  describe(c, what, sizeof what);
  if (window > 0) {
    const size_t len = strlen(what);
    snprintf(what + len, sizeof what - len, " window=%d", window);
  }
  cr_log_info("%s", what);
  tu_rng r = tu_rng_seed(c->seed);
  const size_t nq = (size_t)c->b * c->hk * c->dk,
               nk = (size_t)c->b * c->cap * c->hk * c->dk,
               nv = (size_t)c->b * c->cap * c->hv * c->dv,
               no = (size_t)c->b * c->hv * c->dv, npl = (size_t)c->hk * c->h,
               npw = (size_t)c->h * c->hv;
  float *q = tu_alloc(nq * 4), *k = tu_alloc(nk * 4), *v = tu_alloc(nv * 4);
  float *pl = tu_alloc(npl * 4), *pw = tu_alloc(npw * 4);
  float *o = tu_alloc(no * 4), *oref = tu_alloc(no * 4);
  int *lens = tu_alloc((size_t)c->b * sizeof(int));
  make_lens(c->b, c->cap, &r, lens);
  tu_fill_th(&r, c->dt, q, nq, k, nk, v, nv, pl, npl, pw, npw);
  clattn_ctx *ctx = tu_ctx();
  cl_mem dq = tu_upload(ctx, q, nq, c->dt), dk = tu_upload(ctx, k, nk, c->dt);
  cl_mem dv = tu_upload(ctx, v, nv, c->dt);
  cl_mem dpl = tu_upload(ctx, pl, npl, CLATTN_F32);
  cl_mem dpw = tu_upload(ctx, pw, npw, CLATTN_F32);
  cl_mem dl = tu_upload_int(ctx, lens, (size_t)c->b);
  cl_mem dout = tu_sentinel(ctx, no, c->dt, 0xff);
  const clattn_params p = {.size = sizeof(clattn_params), .variant = c->variant, .keys = c->keys, .wg = c->wg, .splits = c->splits};
  const int has_p = c->variant || c->keys || c->wg || c->splits;
  const clattn_th_decode_desc d = {sizeof(clattn_th_decode_desc),
                                   c->b,
                                   c->cap,
                                   c->hk,
                                   c->h,
                                   c->hv,
                                   c->dk,
                                   c->dv,
                                   c->dt,
                                   (clattn_layout)c->layout,
                                   0.0f,
                                   has_p ? &p : NULL,
                                   window,
                                   0.0f,
                                   NULL,
                                   NULL};
  clattn_status st = clattn_talking_heads_decode(ctx, &d, dq, dk, dv, dpl, dpw,
                                                 dl, dout, NULL);
  if (tu_unsupported_ok(ctx, st, has_p ? &p : NULL))
    goto done;
  cr_assert_eq(st, CLATTN_OK, "%s: %s", what, clattn_ctx_errmsg(ctx));
  tu_download(ctx, dout, o, no, c->dt);
  ref_th_decode_window(c->b, c->cap, c->hk, c->h, c->hv, c->dk, c->dv,
                       c->layout, 1.0 / sqrt((double)c->dk), window, lens, q, k,
                       v, pl, pw, oref);
  tu_check(what, o, oref, no, clattn__tolerance(c->dt));
  for (int bi = 0; bi < c->b; bi++)
    for (size_t i = 0; lens[bi] == 0 && i < (size_t)c->hv * c->dv; i++)
      if (o[(size_t)bi * c->hv * c->dv + i] != 0.0f) {
        cr_expect(0, "%s: sequence %d has lens 0 but output %g", what, bi,
                  (double)o[(size_t)bi * c->hv * c->dv + i]);
        break;
      }
done:
  tu_release(dq);
  tu_release(dk);
  tu_release(dv);
  tu_release(dpl);
  tu_release(dpw);
  tu_release(dl);
  tu_release(dout);
  clattn_ctx_destroy(ctx);
  free(q);
  free(k);
  free(v);
  free(pl);
  free(pw);
  free(o);
  free(oref);
  free(lens);
}

ParameterizedTestParameters(th_decode, case) {
  const int small = tu_subset("small");
  const size_t n = (size_t)(small ? NELEM(small_cases) : NELEM(full_cases));
  thcase *tmp = malloc(n * sizeof *tmp);
  memcpy(tmp, small ? small_cases : full_cases, n * sizeof *tmp);
  return cr_make_param_array(thcase, tu_param_copy(tmp, n, sizeof *tmp), n,
                             NULL);
}

ParameterizedTest(thcase *c, th_decode, case, .timeout = 300) {
  run_decode(c, 0);
}

/* The window's configurations: several splits (dividing the window's
 * keys; those past a short sequence's last key read nothing), one split,
 * a work-group of 2; f32 and f16, both layouts. */
static const thcase window_cases[] = {
    {3, 301, 3, 5, 2, 12, 20, 1, CLATTN_F32, 1, 16, 0, 5, 201},
    {3, 77, 3, 5, 2, 16, 8, 0, CLATTN_F16, 1, 32, 0, 1, 202},
    {2, 200, 4, 8, 4, 16, 16, 1, CLATTN_F32, 1, 16, 2, 7, 203},
};

ParameterizedTestParameters(th_decode, window) {
  const size_t n = tu_subset("small") ? 0 : (size_t)NELEM(window_cases);
  thcase *tmp = malloc(NELEM(window_cases) * sizeof *tmp);
  memcpy(tmp, window_cases, sizeof window_cases);
  return cr_make_param_array(thcase, tu_param_copy(tmp, n, sizeof *tmp), n,
                             NULL);
}

/* Windows of 1 key, less than a block, a block, several blocks, a split's
 * chunk and more, the capacity and beyond it. */
ParameterizedTest(thcase *c, th_decode, window, .timeout = 300) {
  const int windows[] = {1,          5,      c->keys,    2 * c->keys + 3,
                         c->cap / 2, c->cap, c->cap + 50};
  for (int w = 0; w < NELEM(windows); w++)
    run_decode(c, windows[w]);
}

/* Soft-cap, ALiBi and sinks are CLATTN_ERR_UNSUPPORTED naming the option,
 * a negative window CLATTN_ERR_INVALID_ARG; the append into the same
 * cache ignores every option (they change no row it writes). */
Test(th_decode, options_refused) {
  clattn_ctx *ctx = tu_ctx();
  const int b = 1, cap = 6, hk = 2, h = 3, hv = 2, dd = 8;
  cl_mem q = tu_buffer(ctx, (size_t)b * hk * dd * 4);
  cl_mem kc = tu_buffer(ctx, (size_t)b * cap * hk * dd * 4);
  cl_mem vc = tu_buffer(ctx, (size_t)b * cap * hv * dd * 4);
  cl_mem pl = tu_buffer(ctx, (size_t)hk * h * 4);
  cl_mem pw = tu_buffer(ctx, (size_t)h * hv * 4);
  const int len = 3, pos = 2;
  cl_mem lens = tu_upload_int(ctx, &len, 1), dpos = tu_upload_int(ctx, &pos, 1);
  cl_mem o = tu_buffer(ctx, (size_t)b * hv * dd * 4);
  const float per_head[3] = {0.5f, 0.25f, 0.125f};
  for (int which = 0; which < 4; which++) {
    clattn_th_decode_desc d = {.size = sizeof(clattn_th_decode_desc),
                               .batch = b,
                               .capacity = cap,
                               .heads_k = hk,
                               .heads = h,
                               .heads_v = hv,
                               .head_dim_k = dd,
                               .head_dim_v = dd,
                               .dtype = CLATTN_F32,
                               .cache_layout = CLATTN_BHSD,
                               .window = 2};
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
    const clattn_status want =
        which < 3 ? CLATTN_ERR_UNSUPPORTED : CLATTN_ERR_INVALID_ARG;
    clattn_status st =
        clattn_talking_heads_decode(ctx, &d, q, kc, vc, pl, pw, lens, o, NULL);
    cr_expect_eq(st, want, "%s: %d (%s)", name, (int)st,
                 clattn_ctx_errmsg(ctx));
    cr_expect(strstr(clattn_ctx_errmsg(ctx), name) != NULL,
              "the message does not name %s: %s", name, clattn_ctx_errmsg(ctx));
    /* (not in the small subset: the simulators build no new program) */
    if (tu_subset("small"))
      continue;
    st = clattn_talking_heads_append(ctx, &d, 1, q, q, dpos, kc, vc, NULL);
    cr_expect_eq(st, CLATTN_OK, "append with %s set: %d (%s)", name, (int)st,
                 clattn_ctx_errmsg(ctx));
  }
  tu_release(q), tu_release(kc), tu_release(vc), tu_release(pl);
  tu_release(pw), tu_release(lens), tu_release(dpos), tu_release(o);
  clattn_ctx_destroy(ctx);
}

/* Append n_new rows to caches of random contents; expected: the reference
 * applied to the same host copies.  Returns nothing; fails the test on a
 * difference. */
static void run_append(int b, int cap, int hk, int hv, int dk, int dv,
                       int layout, clattn_dtype dt, int n_new, const int *pos,
                       unsigned seed) {
  char what[160];
  snprintf(what, sizeof what,
           "append b=%d cap=%d hk=%d hv=%d dk=%d dv=%d %s "
           "%s n_new=%d",
           b, cap, hk, hv, dk, dv, layout ? "BHSD" : "BSHD", tu_dtype_name(dt),
           n_new);
  tu_rng r = tu_rng_seed(seed);
  const size_t nk = (size_t)b * cap * hk * dk, nv = (size_t)b * cap * hv * dv;
  const size_t nkn = (size_t)b * n_new * hk * dk,
               nvn = (size_t)b * n_new * hv * dv;
  float *k = tu_alloc(nk * 4), *v = tu_alloc(nv * 4);
  float *kn = tu_alloc(nkn * 4), *vn = tu_alloc(nvn * 4);
  float *got = tu_alloc((nk > nv ? nk : nv) * 4);
  tu_fill(&r, k, nk, 1.0f);
  tu_fill(&r, v, nv, 1.0f);
  tu_fill(&r, kn, nkn, 1.0f);
  tu_fill(&r, vn, nvn, 1.0f);
  tu_round(k, nk, dt);
  tu_round(v, nv, dt);
  tu_round(kn, nkn, dt);
  tu_round(vn, nvn, dt);
  clattn_ctx *ctx = tu_ctx();
  cl_mem bk = tu_upload(ctx, k, nk, dt), dv_ = tu_upload(ctx, v, nv, dt);
  cl_mem dkn = tu_upload(ctx, kn, nkn, dt), dvn = tu_upload(ctx, vn, nvn, dt);
  cl_mem dpos = tu_upload_int(ctx, pos, (size_t)b);
  const clattn_th_decode_desc d = {
      sizeof(clattn_th_decode_desc), b,    cap, hk, 1, hv, dk, dv, dt,
      (clattn_layout)layout,         0.0f, NULL};
  clattn_status st = clattn_talking_heads_append(ctx, &d, n_new, dkn, dvn, dpos,
                                                 bk, dv_, NULL);
  cr_assert_eq(st, CLATTN_OK, "%s: %s", what, clattn_ctx_errmsg(ctx));
  ref_kv_append(b, cap, hk, hv, dk, dv, layout, n_new, pos, kn, vn, k, v);
  tu_download(ctx, bk, got, nk, dt);
  cr_expect_eq(memcmp(got, k, nk * 4), 0, "%s: K cache differs", what);
  tu_download(ctx, dv_, got, nv, dt);
  cr_expect_eq(memcmp(got, v, nv * 4), 0, "%s: V cache differs", what);
  tu_release(bk);
  tu_release(dv_);
  tu_release(dkn);
  tu_release(dvn);
  tu_release(dpos);
  clattn_ctx_destroy(ctx);
  free(k);
  free(v);
  free(kn);
  free(vn);
  free(got);
}

/* Positions below 0 and past the capacity, more key heads than value
 * heads and the reverse, every dtype, both layouts. */
Test(th_append, case, .timeout = 300) {
  const int pos4[4] = {0, -2, 35, 17};
  run_append(4, 37, 3, 2, 12, 20, 1, CLATTN_F32, 3, pos4, 201);
  run_append(4, 37, 2, 5, 16, 8, 0, CLATTN_F16, 3, pos4, 202);
  run_append(4, 37, 8, 8, 64, 64, 1, CLATTN_BF16, 3, pos4, 203);
  const int pos1[1] = {5};
  run_append(1, 9, 1, 1, 4, 4, 0, CLATTN_F32, 1, pos1, 204);
  const int pos2[2] = {-40, 100};
  run_append(2, 9, 3, 2, 4, 4, 0, CLATTN_F32, 4, pos2, 205);
}

/* One sequence grown by appends of one row and decoded after each one:
 * every step equals the reference over the rows written so far. */
Test(th_decode, steps, .timeout = 300) {
  const int cap = 40, hk = 3, h = 5, hv = 2, dk = 12, dv = 20,
            steps = tu_subset("small") ? 6 : 24;
  const clattn_dtype dt = CLATTN_F32;
  tu_rng r = tu_rng_seed(301);
  const size_t nk = (size_t)cap * hk * dk, nv = (size_t)cap * hv * dv;
  float *k = tu_alloc(nk * 4), *v = tu_alloc(nv * 4);
  float *kn = tu_alloc((size_t)hk * dk * 4),
        *vn = tu_alloc((size_t)hv * dv * 4);
  float *q = tu_alloc((size_t)hk * dk * 4), pl[15], pw[10];
  float o[40], oref[40];
  memset(k, 0, nk * 4);
  memset(v, 0, nv * 4);
  tu_fill(&r, pl, 15, 1.0f);
  tu_fill(&r, pw, 10, 1.0f);
  clattn_ctx *ctx = tu_ctx();
  cl_mem bk = tu_upload(ctx, k, nk, dt), dv_ = tu_upload(ctx, v, nv, dt);
  cl_mem dkn = tu_buffer(ctx, (size_t)hk * dk * 4);
  cl_mem dvn = tu_buffer(ctx, (size_t)hv * dv * 4);
  cl_mem dq = tu_buffer(ctx, (size_t)hk * dk * 4);
  cl_mem dpl = tu_upload(ctx, pl, 15, dt), dpw = tu_upload(ctx, pw, 10, dt);
  cl_mem dout = tu_buffer(ctx, (size_t)hv * dv * 4);
  const clattn_params p = {.size = sizeof(clattn_params), .variant = 1, .keys = 16, .splits = 3};
  const clattn_th_decode_desc d = {sizeof(clattn_th_decode_desc),
                                   1,
                                   cap,
                                   hk,
                                   h,
                                   hv,
                                   dk,
                                   dv,
                                   dt,
                                   CLATTN_BHSD,
                                   0.0f,
                                   &p};
  for (int s = 0; s < steps; s++) {
    const int len = s + 1;
    tu_fill(&r, kn, (size_t)hk * dk, 1.0f);
    tu_fill(&r, vn, (size_t)hv * dv, 1.0f);
    tu_fill(&r, q, (size_t)hk * dk, 1.0f);
    tu_write(ctx, dkn, kn, (size_t)hk * dk, dt);
    tu_write(ctx, dvn, vn, (size_t)hv * dv, dt);
    tu_write(ctx, dq, q, (size_t)hk * dk, dt);
    const int pos = s;
    cl_mem ip = tu_upload_int(ctx, &pos, 1), il = tu_upload_int(ctx, &len, 1);
    cr_assert_eq(
        clattn_talking_heads_append(ctx, &d, 1, dkn, dvn, ip, bk, dv_, NULL),
        CLATTN_OK, "step %d: %s", s, clattn_ctx_errmsg(ctx));
    cr_assert_eq(clattn_talking_heads_decode(ctx, &d, dq, bk, dv_, dpl, dpw, il,
                                             dout, NULL),
                 CLATTN_OK, "step %d: %s", s, clattn_ctx_errmsg(ctx));
    ref_kv_append(1, cap, hk, hv, dk, dv, 1, 1, &pos, kn, vn, k, v);
    ref_th_decode(1, cap, hk, h, hv, dk, dv, 1, 1.0 / sqrt((double)dk), &len, q,
                  k, v, pl, pw, oref);
    tu_download(ctx, dout, o, (size_t)hv * dv, dt);
    char what[32];
    snprintf(what, sizeof what, "step %d", s);
    tu_check(what, o, oref, (size_t)hv * dv, clattn__tolerance(dt));
    tu_release(ip);
    tu_release(il);
  }
  tu_release(bk);
  tu_release(dv_);
  tu_release(dkn);
  tu_release(dvn);
  tu_release(dq);
  tu_release(dpl);
  tu_release(dpw);
  tu_release(dout);
  clattn_ctx_destroy(ctx);
  free(k);
  free(v);
  free(kn);
  free(vn);
  free(q);
}

/* One decode step equals a causal prefill of the one query at the end of
 * each sequence (clattn_talking_heads over the same cache as keys). */
Test(th_decode, equals_prefill, .timeout = 300) {
  const int b = 2, cap = 53, hk = 3, h = 5, hv = 2, dk = 16, dv = 8;
  const int lens[2] = {53, 20};
  for (int layout = 0; layout < 2; layout++) {
    tu_rng r = tu_rng_seed(401 + (unsigned)layout);
    const size_t nq = (size_t)b * hk * dk, nk = (size_t)b * cap * hk * dk,
                 nv = (size_t)b * cap * hv * dv, no = (size_t)b * hv * dv;
    float *q = tu_alloc(nq * 4), *k = tu_alloc(nk * 4), *v = tu_alloc(nv * 4);
    float pl[15], pw[10], od[32], op[32];
    tu_fill(&r, q, nq, 1.0f);
    tu_fill(&r, k, nk, 1.0f);
    tu_fill(&r, v, nv, 1.0f);
    tu_fill(&r, pl, 15, 1.0f);
    tu_fill(&r, pw, 10, 1.0f);
    clattn_ctx *ctx = tu_ctx();
    cl_mem dq = tu_upload(ctx, q, nq, CLATTN_F32);
    cl_mem dk_ = tu_upload(ctx, k, nk, CLATTN_F32);
    cl_mem dv_ = tu_upload(ctx, v, nv, CLATTN_F32);
    cl_mem dpl = tu_upload(ctx, pl, 15, CLATTN_F32);
    cl_mem dpw = tu_upload(ctx, pw, 10, CLATTN_F32);
    cl_mem dl = tu_upload_int(ctx, lens, 2);
    cl_mem dod = tu_buffer(ctx, no * 4), dop = tu_buffer(ctx, no * 4);
    const clattn_th_decode_desc d = {
        sizeof(clattn_th_decode_desc), b,    cap, hk, h, hv, dk, dv, CLATTN_F32,
        (clattn_layout)layout,         0.0f, NULL};
    const clattn_th_desc pd = {sizeof(clattn_th_desc),
                               b,
                               1,
                               cap,
                               hk,
                               h,
                               hv,
                               dk,
                               dv,
                               CLATTN_F32,
                               CLATTN_BSHD,
                               (clattn_layout)layout,
                               0.0f,
                               1,
                               NULL};
    cr_assert_eq(clattn_talking_heads_decode(ctx, &d, dq, dk_, dv_, dpl, dpw,
                                             dl, dod, NULL),
                 CLATTN_OK, "decode: %s", clattn_ctx_errmsg(ctx));
    cr_assert_eq(
        clattn_talking_heads(ctx, &pd, dq, dk_, dv_, dpl, dpw, dl, dop, NULL),
        CLATTN_OK, "prefill: %s", clattn_ctx_errmsg(ctx));
    tu_download(ctx, dod, od, no, CLATTN_F32);
    tu_download(ctx, dop, op, no, CLATTN_F32);
    tu_check(layout ? "decode == prefill, BHSD" : "decode == prefill, BSHD", od,
             op, no, clattn__tolerance(CLATTN_F32));
    cl_mem all[9] = {dq, dk_, dv_, dpl, dpw, dl, dod, dop, NULL};
    for (int i = 0; all[i]; i++)
      tu_release(all[i]);
    clattn_ctx_destroy(ctx);
    free(q);
    free(k);
    free(v);
  }
}

/* Bad calls: a status and a message, nothing run. */
Test(th_decode, misuse) {
  clattn_ctx *ctx = tu_ctx();
  /* zero-filled: the calls that succeed run their kernels on them */
  const int b = 1, cap = 8, hk = 2, h = 3, hv = 2, dk = 4, dv = 4;
  cl_mem q = tu_sentinel(ctx, (size_t)hk * dk, CLATTN_F32, 0);
  cl_mem k = tu_sentinel(ctx, (size_t)cap * hk * dk, CLATTN_F32, 0);
  cl_mem v = tu_sentinel(ctx, (size_t)cap * hv * dv, CLATTN_F32, 0);
  cl_mem pl = tu_sentinel(ctx, (size_t)hk * h, CLATTN_F32, 0);
  cl_mem pw = tu_sentinel(ctx, (size_t)h * hv, CLATTN_F32, 0);
  cl_mem small = tu_sentinel(ctx, 1, CLATTN_F32, 0);
  const int len = cap;
  cl_mem lens = tu_upload_int(ctx, &len, 1);
  cl_mem o = tu_buffer(ctx, (size_t)hv * dv * 4);
  clattn_th_decode_desc d = {sizeof(clattn_th_decode_desc),
                             b,
                             cap,
                             hk,
                             h,
                             hv,
                             dk,
                             dv,
                             CLATTN_F32,
                             CLATTN_BHSD,
                             0.0f,
                             NULL};
  cr_expect_eq(
      clattn_talking_heads_decode(ctx, &d, q, k, v, pl, pw, lens, o, NULL),
      CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  cr_expect_eq(
      clattn_talking_heads_decode(NULL, &d, q, k, v, pl, pw, lens, o, NULL),
      CLATTN_ERR_MISUSE);
  cr_expect_eq(
      clattn_talking_heads_decode(ctx, NULL, q, k, v, pl, pw, lens, o, NULL),
      CLATTN_ERR_INVALID_ARG);
  const cl_mem good[7] = {q, k, v, pl, pw, lens, o};
  static const char *const names[7] = {"q",   "k_cache", "v_cache", "p_l",
                                       "p_w", "lens",    "o"};
  for (int i = 0; i < 7; i++) {
    cl_mem x[7];
    memcpy(x, good, sizeof x);
    x[i] = NULL;
    cr_expect_eq(clattn_talking_heads_decode(ctx, &d, x[0], x[1], x[2], x[3],
                                             x[4], x[5], x[6], NULL),
                 CLATTN_ERR_INVALID_ARG, "NULL %s", names[i]);
    cr_expect(strstr(clattn_ctx_errmsg(ctx), names[i]) != NULL, "%s",
              clattn_ctx_errmsg(ctx));
    x[i] = small;
    cr_expect_eq(clattn_talking_heads_decode(ctx, &d, x[0], x[1], x[2], x[3],
                                             x[4], x[5], x[6], NULL),
                 i == 5 ? CLATTN_OK : CLATTN_ERR_BUFFER_TOO_SMALL,
                 "small %s: %s", names[i], clattn_ctx_errmsg(ctx));
  }
  const int bad[] = {0, 33, -1};
  for (int i = 0; i < 3; i++)
    for (int f = 0; f < 3; f++) {
      clattn_th_decode_desc e = d;
      *(f == 0 ? &e.heads_k : f == 1 ? &e.heads : &e.heads_v) = bad[i];
      cr_expect_eq(
          clattn_talking_heads_decode(ctx, &e, q, k, v, pl, pw, lens, o, NULL),
          CLATTN_ERR_SHAPE, "head count %d in field %d", bad[i], f);
      cr_expect(strstr(clattn_ctx_errmsg(ctx), "head counts") != NULL, "%s",
                clattn_ctx_errmsg(ctx));
      cr_expect_eq(
          clattn_talking_heads_append(ctx, &e, 1, q, q, lens, k, v, NULL),
          CLATTN_ERR_SHAPE);
    }
  const clattn_params bad_p[] = {
      {.size = sizeof(clattn_params), .variant = 2},
      {.size = sizeof(clattn_params), .rows = 2},
      {.size = sizeof(clattn_params), .scheme = 1},
      {.size = sizeof(clattn_params), .keys = -16}};
  for (int i = 0; i < 4; i++) {
    clattn_th_decode_desc e = d;
    e.params = &bad_p[i];
    cr_expect_eq(
        clattn_talking_heads_decode(ctx, &e, q, k, v, pl, pw, lens, o, NULL),
        CLATTN_ERR_INVALID_ARG, "bad params %d", i);
  }
  clattn_th_decode_desc e = d;
  e.capacity = 0;
  cr_expect_eq(
      clattn_talking_heads_decode(ctx, &e, q, k, v, pl, pw, lens, o, NULL),
      CLATTN_ERR_SHAPE);
  e = d;
  e.dtype = (clattn_dtype)9;
  cr_expect_eq(
      clattn_talking_heads_decode(ctx, &e, q, k, v, pl, pw, lens, o, NULL),
      CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_talking_heads_append(ctx, &d, 0, q, q, lens, k, v, NULL),
               CLATTN_ERR_SHAPE);
  cr_expect_eq(
      clattn_talking_heads_append(ctx, NULL, 1, q, q, lens, k, v, NULL),
      CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_talking_heads_append(ctx, &d, 1, q, q, NULL, k, v, NULL),
               CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(
      clattn_talking_heads_append(ctx, &d, 1, q, q, lens, small, v, NULL),
      CLATTN_ERR_BUFFER_TOO_SMALL);
  tu_release(q);
  tu_release(k);
  tu_release(v);
  tu_release(pl);
  tu_release(pw);
  tu_release(small);
  tu_release(lens);
  tu_release(o);
  clattn_ctx_destroy(ctx);
}
