/* test_attn_options.c - the attention options (clattn.h, "Attention
 * options": sliding window, soft-cap, ALiBi, sinks) in prefill
 * (clattn_attention) and the Efficient family's K == V prefill, against
 * ref_attention.
 *
 * The cases are listed by hand: each option alone and combined, windows of
 * one key, of a tile, larger than the sequence, and a short query block at
 * the end of a long sequence (the tiles before its windows are never read:
 * they hold NaN here, and tests/test_model.c counts the bytes); both
 * kernel variants, every dtype, kv_lens with empty sequences, causal rows
 * that see nothing.  Each case is one program configuration (dims, dtype,
 * causal, params, options) or reuses one, to bound cold compiles.
 * CLATTN_TEST_SUBSET=small keeps the small ones (tests/oclgrind.sh). */
#include "family/family.h"
#include "family_call.h"
#include "util.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ocase {
  const char *name;
  int b, n, m, hq, hkv, dk, dv, causal;
  int lens; /* 0: none; 1: varied, one sequence empty, one clamped */
  clattn_dtype dt;
  const char *params; /* params text, NULL: automatic */
  int window;
  float softcap;
  int alibi;    /* 1: a slope per head */
  int sinks;    /* 1: finite sinks; 2: head 0's is -inf (no sink) */
  int kv_same;  /* the Efficient family: K == V */
  int nan_past; /* keys before every window and past kv_lens hold NaN */
  int small;    /* in CLATTN_TEST_SUBSET=small */
} ocase;

static const ocase cases[] = {
    {"window 1", 1, 45, 45, 2, 2, 16, 16, 1, 0, CLATTN_F32, NULL, 1, 0, 0, 0, 0,
     0, 0},
    {"window = tile, lens", 2, 19, 45, 2, 2, 16, 16, 1, 1, CLATTN_F32,
     "variant=1 rows=4 keys=16", 16, 0, 0, 0, 0, 1, 1},
    {"window non-causal", 1, 17, 40, 2, 1, 16, 16, 0, 0, CLATTN_F32,
     "variant=2 wg=32 keys=8", 5, 0, 0, 0, 0, 0, 1},
    {"window > sequence", 1, 45, 45, 2, 2, 16, 16, 1, 0, CLATTN_F32,
     "variant=2 wg=64 keys=16", 1000, 0, 0, 0, 0, 0, 0},
    {"window, short block at the end", 2, 5, 100, 2, 2, 16, 16, 1, 0,
     CLATTN_F32, "variant=1 rows=2 keys=32", 20, 0, 0, 0, 0, 1, 0},
    {"window, short block, variant 2", 2, 5, 100, 2, 2, 16, 16, 1, 0,
     CLATTN_F32, "variant=2 wg=64 keys=16", 20, 0, 0, 0, 0, 1, 0},
    {"softcap", 1, 33, 33, 2, 2, 16, 16, 1, 0, CLATTN_F32, NULL, 0, 1.5f, 0, 0,
     0, 0, 0},
    {"alibi f16 GQA", 1, 20, 20, 4, 2, 16, 16, 1, 1, CLATTN_F16,
     "variant=2 wg=32 keys=8", 0, 0, 1, 0, 0, 0, 1},
    {"sinks bf16, an empty sequence", 3, 19, 45, 2, 2, 16, 16, 1, 1,
     CLATTN_BF16, "variant=1 rows=4 keys=16", 0, 0, 0, 2, 0, 0, 0},
    {"all four, GQA, lens", 2, 37, 51, 8, 2, 64, 32, 1, 1, CLATTN_F32,
     "variant=1 rows=4 keys=16", 7, 2.0f, 1, 1, 0, 1, 0},
    {"all four, rows that see nothing", 2, 30, 20, 8, 2, 64, 32, 1, 1,
     CLATTN_F32, "variant=1 rows=4 keys=16", 7, 2.0f, 1, 1, 0, 0, 0},
    {"all four f16 non-causal", 1, 40, 70, 4, 4, 16, 16, 0, 1, CLATTN_F16,
     "variant=2 wg=64 keys=16", 33, 2.0f, 1, 2, 0, 0, 0},
    /* head dims above 256 */
    {"head dims 512, window + sinks", 1, 21, 37, 2, 1, 512, 512, 1, 0,
     CLATTN_F32, NULL, 16, 0, 0, 1, 0, 0, 0},
    {"head dims 320/264 variant 2 f16", 1, 21, 37, 2, 2, 320, 264, 1, 1,
     CLATTN_F16, "variant=2", 0, 0, 1, 0, 0, 0, 0},
    {"efficient window + sinks", 2, 19, 45, 2, 2, 16, 16, 1, 1, CLATTN_F32,
     NULL, 9, 0, 0, 1, 1, 0, 1},
    {"efficient window + alibi", 1, 30, 30, 2, 2, 16, 16, 1, 0, CLATTN_F32,
     "variant=2 wg=32 keys=8", 13, 0, 1, 0, 1, 0, 0},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* The keys a row at position pos sees among L: [lo, hi). */
static void bounds(const ocase *c, int L, int pos, int *lo, int *hi) {
  *hi = c->causal ? (pos + 1 < 0 ? 0 : (pos + 1 > L ? L : pos + 1)) : L;
  *lo = c->window > 0 && pos - c->window + 1 > 0 ? pos - c->window + 1 : 0;
  if (*lo > *hi)
    *lo = *hi;
}

static void run(const ocase *c) {
  const int n = c->n, m = c->m;
  const size_t nq = (size_t)c->b * n * c->hq * c->dk;
  const size_t nk = (size_t)c->b * m * c->hkv * c->dk;
  const size_t nv = (size_t)c->b * m * c->hkv * c->dv;
  const size_t no = (size_t)c->b * n * c->hq * c->dv;
  tu_rng rng = tu_rng_seed(4242u + (unsigned)c->n * 7u + (unsigned)c->m);
  float *q = tu_alloc(nq * sizeof *q), *k = tu_alloc(nk * sizeof *k);
  float *v = tu_alloc(nv * sizeof *v), *o = tu_alloc(no * sizeof *o);
  float *oref = tu_alloc(no * sizeof *oref);
  int lens[8];
  float slopes[8], sinks[8];
  /* logits of a few units, so that a soft-cap of 1.5 to 2 bends them */
  tu_fill(&rng, q, nq, 3.0f);
  tu_fill(&rng, k, nk, 1.0f);
  tu_fill(&rng, v, nv, 1.0f);
  tu_round(q, nq, c->dt);
  tu_round(k, nk, c->dt);
  tu_round(v, nv, c->dt);
  if (c->kv_same)
    memcpy(v, k, nk * sizeof *k);
  for (int bi = 0; bi < c->b; bi++)
    lens[bi] = !c->lens ? m : bi == 1 ? 0 : bi == 2 ? m + 5 : m - 3 - bi;
  for (int h = 0; h < c->hq; h++) {
    slopes[h] = 0.05f * (float)(h + 1);
    sinks[h] = c->sinks == 2 && h == 0 ? -INFINITY : 0.5f * (float)h - 1.0f;
  }
  if (c->nan_past)
    for (int bi = 0; bi < c->b; bi++) {
      const int L = lens[bi] < m ? lens[bi] : m;
      int first = L, lo, hi;
      bounds(c, L, L - n, &lo, &hi);
      first = lo < first ? lo : first;
      for (int t = 0; t < m; t++)
        if (t < first || t >= L)
          for (int hh = 0; hh < c->hkv; hh++) {
            for (int d = 0; d < c->dk; d++)
              k[ref_index(0, m, c->hkv, c->dk, bi, t, hh, d)] = NAN;
            for (int d = 0; d < c->dv; d++)
              v[ref_index(0, m, c->hkv, c->dv, bi, t, hh, d)] = NAN;
          }
    }

  ref_attn ra = {.b = c->b,
                 .n = n,
                 .m = m,
                 .hq = c->hq,
                 .hkv = c->hkv,
                 .dk = c->dk,
                 .dv = c->dv,
                 .scale = 1.0 / sqrt((double)c->dk),
                 .causal = c->causal,
                 .kv_lens = c->lens ? lens : NULL,
                 .opts = {c->window, c->softcap, c->alibi ? slopes : NULL,
                          c->sinks ? sinks : NULL}};
  ref_attention(&ra, q, k, c->kv_same ? k : v, oref);

  clattn_ctx *ctx = tu_ctx();
  cl_mem dq = tu_upload(ctx, q, nq, c->dt), dk = tu_upload(ctx, k, nk, c->dt);
  cl_mem dv = c->kv_same ? NULL : tu_upload(ctx, v, nv, c->dt);
  cl_mem dl = c->lens ? tu_upload_int(ctx, lens, (size_t)c->b) : NULL;
  cl_mem dout = tu_sentinel(ctx, no, c->dt, 0xff); /* NaN: must be written */
  clattn_params p = c->params ? tu_params(c->params) : (clattn_params){0};
  clattn_attn_desc d = {.size = sizeof d,
                        .batch = c->b,
                        .n_q = n,
                        .n_kv = m,
                        .heads_q = c->hq,
                        .heads_kv = c->hkv,
                        .head_dim_k = c->dk,
                        .head_dim_v = c->dv,
                        .dtype = c->dt,
                        .causal = c->causal,
                        .window = c->window,
                        .softcap = c->softcap,
                        .alibi_slopes = c->alibi ? slopes : NULL,
                        .sinks = c->sinks ? sinks : NULL};
  clattn_status st;
  if (c->kv_same) {
    const cl_mem bufs[4] = {dq, dk, dl, dout};
    st = tu_family_call(ctx, clattn__family_find("efficient-prefill"), &d,
                        c->params ? &p : NULL, bufs, NULL);
  } else {
    d.params = c->params ? &p : NULL;
    st = clattn_attention(ctx, &d, dq, dk, dv, dl, dout, NULL);
  }
  cr_assert(st == CLATTN_OK, "%s: status %d: %s", c->name, (int)st,
            clattn_ctx_errmsg(ctx));
  tu_download(ctx, dout, o, no, c->dt);
  tu_check(c->name, o, oref, no, clattn__tolerance(c->dt));

  /* rows that see no key: exactly zeros, sinks or not */
  long zero_rows = 0;
  for (int bi = 0; bi < c->b; bi++) {
    const int L = c->lens ? (lens[bi] < m ? lens[bi] : m) : m;
    for (int i = 0; i < n; i++) {
      int lo, hi;
      bounds(c, L, L - n + i, &lo, &hi);
      if (hi > lo)
        continue;
      for (int h = 0; h < c->hq; h++, zero_rows++)
        for (int e = 0; e < c->dv; e++)
          cr_assert(o[ref_index(0, n, c->hq, c->dv, bi, i, h, e)] == 0.0f,
                    "%s: row b=%d i=%d h=%d sees no key but is not zero",
                    c->name, bi, i, h);
    }
  }
  cr_log_info("%s: %ld rows see no key", c->name, zero_rows);
  tu_release(dq);
  tu_release(dk);
  tu_release(dv);
  tu_release(dl);
  tu_release(dout);
  clattn_ctx_destroy(ctx);
  free(q);
  free(k);
  free(v);
  free(o);
  free(oref);
}

ParameterizedTestParameters(options, prefill) {
  static int idx[NCASES];
  int k = 0;
  for (int i = 0; i < NCASES; i++)
    if (!tu_subset("small") || cases[i].small)
      idx[k++] = i;
  return cr_make_param_array(int, idx, (size_t)k);
}

ParameterizedTest(int *i, options, prefill, .timeout = 300) { run(&cases[*i]); }

/* ------------------------------------------------------------ bad input */

/* A call with one bad option: the status, a message naming it, nothing
 * written. */
static void refused(const char *what, clattn_attn_desc d, clattn_status want,
                    const char *name) {
  clattn_ctx *ctx = tu_ctx();
  const size_t nq = 2 * 3 * 2 * 16;
  float *x = tu_alloc(nq * sizeof *x);
  cl_mem q = tu_upload(ctx, x, nq, CLATTN_F32);
  cl_mem k = tu_upload(ctx, x, nq, CLATTN_F32);
  cl_mem v = tu_upload(ctx, x, nq, CLATTN_F32);
  cl_mem o = tu_sentinel(ctx, nq, CLATTN_F32, 0xab);
  d.size = sizeof d;
  d.batch = 2;
  d.n_q = d.n_kv = 3;
  d.heads_q = d.heads_kv = 2;
  d.head_dim_k = d.head_dim_v = 16;
  d.dtype = CLATTN_F32;
  d.causal = 1;
  clattn_status st = clattn_attention(ctx, &d, q, k, v, NULL, o, NULL);
  cr_expect_eq(st, want, "%s: status %d, want %d (%s)", what, (int)st,
               (int)want, clattn_ctx_errmsg(ctx));
  cr_expect(strstr(clattn_ctx_errmsg(ctx), name) != NULL,
            "%s: message \"%s\" does not name %s", what, clattn_ctx_errmsg(ctx),
            name);
  cr_expect(tu_untouched(ctx, o, nq * sizeof(float), 0xab),
            "%s: a refused call wrote its output", what);
  tu_release(q);
  tu_release(k);
  tu_release(v);
  tu_release(o);
  clattn_ctx_destroy(ctx);
  free(x);
}

Test(options, bad_values_are_refused) {
  static const float nan_slope[2] = {0.5f, NAN}, inf_slope[2] = {INFINITY, 1};
  static const float nan_sink[2] = {0.0f, NAN}, inf_sink[2] = {INFINITY, 0};
  refused("window -1", (clattn_attn_desc){.window = -1}, CLATTN_ERR_INVALID_ARG,
          "window");
  refused("softcap -1", (clattn_attn_desc){.softcap = -1.0f},
          CLATTN_ERR_INVALID_ARG, "softcap");
  refused("softcap NaN", (clattn_attn_desc){.softcap = NAN},
          CLATTN_ERR_INVALID_ARG, "softcap");
  refused("softcap inf", (clattn_attn_desc){.softcap = INFINITY},
          CLATTN_ERR_INVALID_ARG, "softcap");
  refused("slope NaN", (clattn_attn_desc){.alibi_slopes = nan_slope},
          CLATTN_ERR_INVALID_ARG, "alibi_slopes[1]");
  refused("slope inf", (clattn_attn_desc){.alibi_slopes = inf_slope},
          CLATTN_ERR_INVALID_ARG, "alibi_slopes[0]");
  refused("sink NaN", (clattn_attn_desc){.sinks = nan_sink},
          CLATTN_ERR_INVALID_ARG, "sinks[1]");
  refused("sink +inf", (clattn_attn_desc){.sinks = inf_sink},
          CLATTN_ERR_INVALID_ARG, "sinks[0]");
}

/* The arrays are read at every call, also where the context remembers the
 * call's choice: new values are used, a value made bad later is refused. */
Test(options, arrays_read_at_every_call, .timeout = 300) {
  clattn_ctx *ctx = tu_ctx();
  enum { B = 1, N = 9, H = 2, D = 16 };
  const size_t nq = (size_t)B * N * H * D;
  float *q = tu_alloc(nq * sizeof *q), *k = tu_alloc(nq * sizeof *k);
  float *o1 = tu_alloc(nq * sizeof *o1), *o2 = tu_alloc(nq * sizeof *o2);
  tu_rng rng = tu_rng_seed(77);
  tu_fill(&rng, q, nq, 1.0f);
  tu_fill(&rng, k, nq, 1.0f);
  float sinks[H] = {0.0f, 1.0f};
  cl_mem dq = tu_upload(ctx, q, nq, CLATTN_F32);
  cl_mem dk = tu_upload(ctx, k, nq, CLATTN_F32);
  cl_mem dout = tu_sentinel(ctx, nq, CLATTN_F32, 0xff);
  clattn_attn_desc d = {.size = sizeof d,
                        .batch = B,
                        .n_q = N,
                        .n_kv = N,
                        .heads_q = H,
                        .heads_kv = H,
                        .head_dim_k = D,
                        .head_dim_v = D,
                        .dtype = CLATTN_F32,
                        .causal = 1,
                        .sinks = sinks};
  cr_assert_eq(clattn_attention(ctx, &d, dq, dk, dk, NULL, dout, NULL),
               CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  tu_download(ctx, dout, o1, nq, CLATTN_F32);
  sinks[1] = 4.0f; /* a larger sink takes more of row's weight */
  cr_assert_eq(clattn_attention(ctx, &d, dq, dk, dk, NULL, dout, NULL),
               CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  tu_download(ctx, dout, o2, nq, CLATTN_F32);
  float *oref = tu_alloc(nq * sizeof *oref);
  ref_attn ra = {.b = B,
                 .n = N,
                 .m = N,
                 .hq = H,
                 .hkv = H,
                 .dk = D,
                 .dv = D,
                 .scale = 1.0 / sqrt((double)D),
                 .causal = 1,
                 .opts = {.sinks = sinks}};
  ref_attention(&ra, q, k, k, oref);
  tu_check("second call's sinks", o2, oref, nq, clattn__tolerance(CLATTN_F32));
  cr_expect(memcmp(o1, o2, nq * sizeof *o1) != 0,
            "new sink values changed nothing");
  sinks[0] = NAN;
  tu_set_bytes(ctx, dout, nq * sizeof(float), 0xab);
  cr_expect_eq(clattn_attention(ctx, &d, dq, dk, dk, NULL, dout, NULL),
               CLATTN_ERR_INVALID_ARG, "a sink made NaN later was taken");
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "sinks[0]") != NULL, "%s",
            clattn_ctx_errmsg(ctx));
  cr_expect(tu_untouched(ctx, dout, nq * sizeof(float), 0xab),
            "a refused call wrote its output");
  tu_release(dq);
  tu_release(dk);
  tu_release(dout);
  clattn_ctx_destroy(ctx);
  free(q);
  free(k);
  free(o1);
  free(o2);
  free(oref);
}
