/* test_nonfinite.c - the non-finite contract (clattn.h, clattn_attention)
 * on every kernel that computes a softmax or a routing, through the
 * library's call path, against the plain-C reference on the same inputs.
 *
 * Each configuration (family, shape, params: both kernel variants, split
 * and direct decode, every talking-heads scheme, f32 and a 16-bit type,
 * causal and not) runs every injection: NaN in one K element, a NaN and a
 * -inf query row, a +inf logit, every visible logit -inf, -inf logits
 * among finite ones (a whole decode split of them), finite inputs whose
 * unscaled q.k overflows float32 but whose logit fits, NaN and inf in V,
 * and NaN in every masked position (past the lengths; with the causal mask
 * also the last valid key, which only the last query sees).  tu_check
 * requires the kernel's output non-finite exactly where the reference's is
 * and within the tolerance elsewhere; the reference is checked to have the
 * expected pattern (so no case passes by both being finite), and rows with
 * no visible key (the lengths give some) must be exact zeros. */
#include "family_call.h"
#include "call/call.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum inj {
  INJ_NONE,
  INJ_NAN_K,
  INJ_NAN_Q,
  INJ_NEG_INF_Q,
  INJ_POS_INF_LOGIT,
  INJ_ALL_NEG_INF,
  INJ_NEG_INF_AMONG,
  INJ_OVERFLOW_FITS,
  INJ_NONFINITE_V,
  INJ_MASKED_GARBAGE,
  INJ_COUNT
} inj;

static const char *const inj_names[] = {"none",
                                        "NaN in one K element",
                                        "NaN query row",
                                        "-inf query row",
                                        "+inf logit",
                                        "all visible logits -inf",
                                        "-inf logits among finite",
                                        "unscaled q.k overflows, logit fits",
                                        "NaN and inf in V",
                                        "NaN in masked positions"};

/* One configuration: the family's shape text and params, and the geometry
 * the injections index by (BSHD): q [B, n, hq, dk], k [B, m, hkv, dk],
 * v [B, m, hv, dv]; decode has n = 1 and m the capacity. */
typedef struct nf_case {
  const char *family;
  const char *shape;
  clattn_params params;
  int B, n, m, hq, hkv, hv, dk, dv, causal;
  int lens[2]; /* per sequence; -1: none (n_kv) */
  clattn_dtype dt;
} nf_case;

#define PREFILL_SHAPE "batch=2 seq=5 kv-seq=9 heads=4 kv-heads=2 head-dim=64 "
#define DECODE_SHAPE                                                           \
  "batch=2 kv-seq=40 heads=4 kv-heads=2 head-dim=64 layout=bshd "
#define TH_SHAPE                                                               \
  "batch=2 seq=5 kv-seq=9 heads-k=2 heads=3 heads-v=2 head-dim=64 "            \
  "head-dim-v=8 "
#define THD_SHAPE                                                              \
  "batch=2 kv-seq=40 heads-k=2 heads=3 heads-v=2 head-dim=64 head-dim-v=8 "    \
  "layout=bshd "

static const nf_case cases[] = {
    /* prefill: variant 1 (4 packed rows = 2 positions a work-item, so the
     * causal diagonal crosses a block) and variant 2 */
    {"prefill",
     PREFILL_SHAPE "head-dim-v=8 dtype=f32 causal=1",
     {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 16},
     2,
     5,
     9,
     4,
     2,
     2,
     64,
     8,
     1,
     {9, 3},
     CLATTN_F32},
    {"prefill",
     PREFILL_SHAPE "head-dim-v=8 dtype=f16 causal=0",
     {.size = sizeof(clattn_params), .variant = 1, .rows = 8, .keys = 16},
     2,
     5,
     9,
     4,
     2,
     2,
     64,
     8,
     0,
     {9, 0},
     CLATTN_F16},
    {"prefill",
     PREFILL_SHAPE "head-dim-v=8 dtype=bf16 causal=1",
     {.size = sizeof(clattn_params), .variant = 1, .rows = 2, .keys = 32},
     2,
     5,
     9,
     4,
     2,
     2,
     64,
     8,
     1,
     {7, 3},
     CLATTN_BF16},
    {"prefill",
     PREFILL_SHAPE "head-dim-v=8 dtype=f32 causal=0",
     {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 16},
     2,
     5,
     9,
     4,
     2,
     2,
     64,
     8,
     0,
     {9, 0},
     CLATTN_F32},
    {"prefill",
     PREFILL_SHAPE "head-dim-v=8 dtype=bf16 causal=1",
     {.size = sizeof(clattn_params), .variant = 2, .keys = 4, .wg = 32},
     2,
     5,
     9,
     4,
     2,
     2,
     64,
     8,
     1,
     {9, 3},
     CLATTN_BF16},
    {"prefill",
     PREFILL_SHAPE "head-dim-v=8 dtype=f16 causal=1",
     {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 16},
     2,
     5,
     9,
     4,
     2,
     2,
     64,
     8,
     1,
     {8, 3},
     CLATTN_F16},
    /* K == V (Efficient attention's X) */
    {"efficient-prefill",
     PREFILL_SHAPE "dtype=f32 causal=1",
     {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 16},
     2,
     5,
     9,
     4,
     2,
     2,
     64,
     64,
     1,
     {9, 3},
     CLATTN_F32},
    {"efficient-prefill",
     PREFILL_SHAPE "dtype=f16 causal=1",
     {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 16},
     2,
     5,
     9,
     4,
     2,
     2,
     64,
     64,
     1,
     {9, 3},
     CLATTN_F16},
    /* decode: direct (one split) and split + combine, both variants */
    {"decode",
     DECODE_SHAPE "head-dim-v=8 dtype=f32",
     {.size = sizeof(clattn_params), .variant = 1, .keys = 16, .splits = 1},
     2,
     1,
     40,
     4,
     2,
     2,
     64,
     8,
     0,
     {37, 0},
     CLATTN_F32},
    {"decode",
     DECODE_SHAPE "head-dim-v=8 dtype=f32",
     {.size = sizeof(clattn_params), .variant = 1, .keys = 16, .splits = 3},
     2,
     1,
     40,
     4,
     2,
     2,
     64,
     8,
     0,
     {37, 0},
     CLATTN_F32},
    {"decode",
     DECODE_SHAPE "head-dim-v=8 dtype=f16",
     {.size = sizeof(clattn_params), .variant = 1, .keys = 16, .splits = 3},
     2,
     1,
     40,
     4,
     2,
     2,
     64,
     8,
     0,
     {37, 0},
     CLATTN_F16},
    {"decode",
     DECODE_SHAPE "head-dim-v=8 dtype=f32",
     {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 16, .splits = 3},
     2,
     1,
     40,
     4,
     2,
     2,
     64,
     8,
     0,
     {37, 0},
     CLATTN_F32},
    {"decode",
     DECODE_SHAPE "head-dim-v=8 dtype=bf16",
     {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 16, .splits = 1},
     2,
     1,
     40,
     4,
     2,
     2,
     64,
     8,
     0,
     {37, 0},
     CLATTN_BF16},
    {"efficient-decode",
     DECODE_SHAPE "dtype=f32",
     {.size = sizeof(clattn_params), .variant = 1, .keys = 16, .splits = 3},
     2,
     1,
     40,
     4,
     2,
     2,
     64,
     64,
     0,
     {37, 0},
     CLATTN_F32},
    {"efficient-decode",
     DECODE_SHAPE "dtype=f16",
     {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 16, .splits = 3},
     2,
     1,
     40,
     4,
     2,
     2,
     64,
     64,
     0,
     {37, 0},
     CLATTN_F16},
    /* talking-heads: both variants, every scheme */
    {"talking-heads",
     TH_SHAPE "dtype=f32 causal=1",
     {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 16, .scheme = 1},
     2,
     5,
     9,
     2,
     2,
     2,
     64,
     8,
     1,
     {9, 3},
     CLATTN_F32},
    {"talking-heads",
     TH_SHAPE "dtype=f16 causal=1",
     {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 16, .scheme = 2},
     2,
     5,
     9,
     2,
     2,
     2,
     64,
     8,
     1,
     {9, 3},
     CLATTN_F16},
    {"talking-heads",
     TH_SHAPE "dtype=f32 causal=0",
     {.size = sizeof(clattn_params), .variant = 1, .rows = 2, .keys = 16, .scheme = 2},
     2,
     5,
     9,
     2,
     2,
     2,
     64,
     8,
     0,
     {9, 0},
     CLATTN_F32},
    {"talking-heads",
     TH_SHAPE "dtype=f16 causal=1",
     {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 16, .scheme = 3},
     2,
     5,
     9,
     2,
     2,
     2,
     64,
     8,
     1,
     {9, 3},
     CLATTN_F16},
    {"talking-heads",
     TH_SHAPE "dtype=f32 causal=0",
     {.size = sizeof(clattn_params), .variant = 1, .rows = 2, .keys = 16, .scheme = 3},
     2,
     5,
     9,
     2,
     2,
     2,
     64,
     8,
     0,
     {9, 0},
     CLATTN_F32},
    {"talking-heads",
     TH_SHAPE "dtype=bf16 causal=1",
     {.size = sizeof(clattn_params), .variant = 2, .keys = 4, .wg = 16, .scheme = 1},
     2,
     5,
     9,
     2,
     2,
     2,
     64,
     8,
     1,
     {9, 3},
     CLATTN_BF16},
    {"talking-heads",
     TH_SHAPE "dtype=f32 causal=1",
     {.size = sizeof(clattn_params), .variant = 2, .keys = 4, .wg = 16, .scheme = 2},
     2,
     5,
     9,
     2,
     2,
     2,
     64,
     8,
     1,
     {8, 3},
     CLATTN_F32},
    {"talking-heads",
     TH_SHAPE "dtype=f16 causal=0",
     {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 16, .scheme = 2},
     2,
     5,
     9,
     2,
     2,
     2,
     64,
     8,
     0,
     {9, 0},
     CLATTN_F16},
    /* talking-heads decode: direct and split */
    {"talking-heads-decode",
     THD_SHAPE "dtype=f32",
     {.size = sizeof(clattn_params), .splits = 1},
     2,
     1,
     40,
     2,
     2,
     2,
     64,
     8,
     0,
     {37, 0},
     CLATTN_F32},
    {"talking-heads-decode",
     THD_SHAPE "dtype=f32",
     {.size = sizeof(clattn_params), .splits = 3},
     2,
     1,
     40,
     2,
     2,
     2,
     64,
     8,
     0,
     {37, 0},
     CLATTN_F32},
    {"talking-heads-decode",
     THD_SHAPE "dtype=bf16",
     {.size = sizeof(clattn_params), .splits = 3},
     2,
     1,
     40,
     2,
     2,
     2,
     64,
     8,
     0,
     {37, 0},
     CLATTN_BF16},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

static int is_k(const char *name) {
  return !strcmp(name, "k") || !strcmp(name, "k_cache") || !strcmp(name, "x") ||
         !strcmp(name, "x_cache");
}
static int is_v(const char *name) {
  return !strcmp(name, "v") || !strcmp(name, "v_cache") || !strcmp(name, "x") ||
         !strcmp(name, "x_cache");
}

/* Visible keys of sequence b (its length). */
static int seq_len(const nf_case *c, int b) {
  const int L = c->lens[b] < 0 ? c->m : c->lens[b];
  return L < 0 ? 0 : (L > c->m ? c->m : L);
}

static size_t qi(const nf_case *c, int b, int i, int h, int d) {
  return (((size_t)b * c->n + i) * c->hq + h) * c->dk + d;
}
static size_t ki(const nf_case *c, int b, int t, int h, int d) {
  return (((size_t)b * c->m + t) * c->hkv + h) * c->dk + d;
}
static size_t vi(const nf_case *c, int b, int t, int h, int d) {
  return (((size_t)b * c->m + t) * c->hv + h) * c->dv + d;
}

/* Query element d = 0 of every row of sequence 0 made positive, so that
 * the sign of key 0's element 0 decides the sign of an infinite logit. */
static void positive_q0(const nf_case *c, float *q) {
  for (int i = 0; i < c->n; i++)
    for (int h = 0; h < c->hq; h++)
      q[qi(c, 0, i, h, 0)] = fabsf(q[qi(c, 0, i, h, 0)]) + 0.25f;
}

/* Apply injection j to the random inputs q, k, v (k == v for K == V). */
static void inject(const nf_case *c, inj j, float *q, float *k, float *v) {
  const int L0 = seq_len(c, 0), last = c->n - 1;
  const float c37 = sqrtf(1.25e37f); /* c * c * 64 = 8e38, / 8 fits */
  switch (j) {
  case INJ_NONE:
  case INJ_COUNT:
    break;
  case INJ_NAN_K:
    k[ki(c, 0, 1, 0, 0)] = NAN;
    break;
  case INJ_NAN_Q:
  case INJ_NEG_INF_Q:
    for (int d = 0; d < c->dk; d++)
      q[qi(c, 0, last, 0, d)] = j == INJ_NAN_Q ? NAN : -INFINITY;
    break;
  case INJ_POS_INF_LOGIT:
    positive_q0(c, q);
    k[ki(c, 0, 1, 0, 0)] = INFINITY;
    break;
  case INJ_ALL_NEG_INF:
    positive_q0(c, q);
    for (int t = 0; t < c->m; t++)
      k[ki(c, 0, t, 0, 0)] = -INFINITY;
    break;
  case INJ_NEG_INF_AMONG:
    /* keys 1 .. L0 - 3: key 0 stays finite for every row, and with three
     * decode splits the middle one scores -inf throughout */
    positive_q0(c, q);
    for (int t = 1; t < L0 - 2; t++)
      k[ki(c, 0, t, 0, 0)] = -INFINITY;
    break;
  case INJ_OVERFLOW_FITS:
    for (int d = 0; d < c->dk; d++) {
      q[qi(c, 0, last, 0, d)] = c37;
      k[ki(c, 0, 2, 0, d)] = c37;
    }
    break;
  case INJ_NONFINITE_V:
    v[vi(c, 0, 1, 0, 3)] = NAN;
    v[vi(c, 0, 2, 0, 5)] = INFINITY;
    break;
  case INJ_MASKED_GARBAGE:
    for (int b = 0; b < c->B; b++) {
      const int L = seq_len(c, b);
      /* with the causal mask the last two valid keys are masked for every
       * query but the last two, some of which share a work-item or a
       * work-group with the last two */
      const int t0 = c->causal ? (L > 2 ? L - 2 : 0) : L;
      for (int t = t0; t < c->m; t++) {
        for (int h = 0; h < c->hkv; h++)
          for (int d = 0; d < c->dk; d++)
            k[ki(c, b, t, h, d)] = NAN;
        for (int h = 0; h < c->hv; h++)
          for (int d = 0; d < c->dv; d++)
            v[vi(c, b, t, h, d)] = NAN;
      }
    }
    break;
  }
}

/* Whether the reference must be all finite (0), partly not (1), or
 * either (-1). */
static int expect_nonfinite(const nf_case *c, inj j) {
  switch (j) {
  case INJ_NEG_INF_AMONG:
    /* finite where the -inf elements are in K alone; with K == V they are
     * in V too (0 * -inf); talking-heads' P_l turns a -inf J into a logit
     * of either sign, depending on the random mix */
    if (strncmp(c->family, "talking", 7) == 0)
      return -1;
    return strncmp(c->family, "efficient", 9) == 0;
  case INJ_NONE:
  case INJ_OVERFLOW_FITS:
  case INJ_COUNT:
    return 0;
  case INJ_MASKED_GARBAGE:
    return c->causal;
  default:
    return 1;
  }
}

static void run_case(clattn_ctx *ctx, const nf_case *c, inj j, unsigned seed) {
  const clattn__family *F = clattn__family_find(c->family);
  cr_assert_not_null(F, "family %s missing", c->family);
  _Alignas(16) unsigned char call_desc[CLATTN__DESC_MAX];
  char why[256];
  cr_assert_eq(F->parse_shape(c->shape, call_desc, why, sizeof why),
               CLATTN_OK, "%s: %s", c->shape, why);
  clattn__buf_spec spec[CLATTN__MAX_BUFS];
  F->buffers(call_desc, spec);
  void *host[CLATTN__MAX_BUFS] = {0};
  cl_mem dev[CLATTN__MAX_BUFS] = {0};
  float *q = NULL, *k = NULL, *v = NULL;
  int out = -1;
  tu_rng rng = tu_rng_seed(seed);
  for (int b = 0; b < F->nbufs; b++) {
    const size_t n = spec[b].elems;
    if (spec[b].role == CLATTN__BUF_INTS) {
      int *x = tu_alloc(n * sizeof *x);
      for (size_t e = 0; e < n; e++)
        x[e] = c->lens[e] >= 0 ? c->lens[e] : F->full_int(call_desc);
      host[b] = x;
      continue;
    }
    float *x = tu_alloc(n * sizeof *x);
    tu_fill(&rng, x, n, 1.0f);
    host[b] = x;
    /* talking-heads: P_l's row of key head 0, where the injections go,
     * positive, so that an injected logit reaches every logit head with
     * its own sign (with random signs an +inf could turn -inf everywhere) */
    if (!strcmp(spec[b].name, "p_l"))
      for (size_t e = 0; e < n / (size_t)c->hq; e++)
        x[e] = fabsf(x[e]) + 0.25f;
    if (!strcmp(spec[b].name, "q"))
      q = x;
    if (is_k(spec[b].name))
      k = x;
    if (is_v(spec[b].name))
      v = x;
    if (spec[b].role == CLATTN__BUF_OUT)
      out = b;
  }
  cr_assert(q && k && v && out >= 0, "%s: buffers not found", c->family);
  inject(c, j, q, k, v);
  for (int b = 0; b < F->nbufs; b++) {
    if (spec[b].role == CLATTN__BUF_INTS) {
      dev[b] = tu_upload_int(ctx, host[b], spec[b].elems);
      continue;
    }
    tu_round(host[b], spec[b].elems, spec[b].dtype);
    dev[b] = spec[b].role == CLATTN__BUF_OUT
                 ? tu_sentinel(ctx, spec[b].elems, spec[b].dtype, 0xff)
                 : tu_upload(ctx, host[b], spec[b].elems, spec[b].dtype);
  }
  const clattn_status st =
      tu_family_call(ctx, F, call_desc, &c->params, dev, NULL);
  char what[400];
  snprintf(what, sizeof what, "%s %s (variant %d, splits %d, scheme %d): %s",
           F->name, c->shape, c->params.variant, c->params.splits,
           c->params.scheme, inj_names[j]);
  if (!tu_unsupported_ok(ctx, st, &c->params)) {
    cr_assert_eq(st, CLATTN_OK, "%s: %s", what, clattn_ctx_errmsg(ctx));
    F->reference(call_desc, host);
    const size_t n = spec[out].elems;
    const float *ref = host[out];
    float *got = tu_alloc(n * sizeof *got);
    tu_download(ctx, dev[out], got, n, spec[out].dtype);
    size_t ref_bad = 0, zeros_kept = 1;
    for (size_t e = 0; e < n; e++) {
      ref_bad += !isfinite(ref[e]);
      /* a row with no visible key is exactly zero */
      if (ref[e] == 0.0f && got[e] != 0.0f)
        zeros_kept = 0;
    }
    const int expect = expect_nonfinite(c, j);
    if (expect == 1)
      cr_expect(ref_bad > 0 && ref_bad < n,
                "%s: the reference has %zu non-finite of %zu, expected some",
                what, ref_bad, n);
    else if (expect == 0)
      cr_expect(ref_bad == 0, "%s: the reference has %zu non-finite", what,
                ref_bad);
    cr_expect(zeros_kept, "%s: a row with no visible key is not zero", what);
    tu_check(what, got, ref, n, clattn__tolerance(spec[out].dtype));
    free(got);
  }
  for (int b = 0; b < F->nbufs; b++) {
    tu_release(dev[b]);
    free(host[b]);
  }
}

/* Every configuration of the family; with CLATTN_TEST_SUBSET=small
 * (tests/oclgrind.sh) its first only. */
static void run_all(const char *family) {
  clattn_ctx *ctx = tu_ctx();
  int run = 0;
  for (int i = 0; i < NCASES; i++) {
    if (strcmp(cases[i].family, family) || (run && tu_subset("small")))
      continue;
    run++;
    for (int j = 0; j < INJ_COUNT; j++) {
      /* c = 3.5e18 is no half-precision number */
      if (j == INJ_OVERFLOW_FITS && cases[i].dt == CLATTN_F16)
        continue;
      run_case(ctx, &cases[i], (inj)j, 7000u + 37u * (unsigned)i + (unsigned)j);
    }
  }
  clattn_ctx_destroy(ctx);
}

Test(nonfinite, prefill, .timeout = 600) { run_all("prefill"); }
Test(nonfinite, efficient_prefill, .timeout = 600) {
  run_all("efficient-prefill");
}
Test(nonfinite, decode, .timeout = 600) { run_all("decode"); }
Test(nonfinite, efficient_decode, .timeout = 600) {
  run_all("efficient-decode");
}
Test(nonfinite, talking_heads, .timeout = 600) { run_all("talking-heads"); }
Test(nonfinite, talking_heads_decode, .timeout = 600) {
  run_all("talking-heads-decode");
}

/* A family without a softmax: random inputs, NaN at element `at` of input
 * buffer `name`, the output against the reference, which must be partly
 * non-finite (the NaN reaches it) and partly finite. */
static void run_nan_input(clattn_ctx *ctx, const char *family,
                          const char *shape, const char *name, size_t at) {
  const clattn__family *F = clattn__family_find(family);
  cr_assert_not_null(F, "family %s missing", family);
  _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
  char why[256];
  cr_assert_eq(F->parse_shape(shape, desc, why, sizeof why), CLATTN_OK,
               "%s: %s", shape, why);
  clattn__buf_spec spec[CLATTN__MAX_BUFS];
  F->buffers(desc, spec);
  void *host[CLATTN__MAX_BUFS] = {0};
  cl_mem dev[CLATTN__MAX_BUFS] = {0};
  int out = -1, hit = 0;
  tu_rng rng = tu_rng_seed(8100u);
  for (int b = 0; b < F->nbufs; b++) {
    const size_t n = spec[b].elems;
    if (spec[b].role == CLATTN__BUF_INTS) {
      int *x = tu_alloc(n * sizeof *x);
      for (size_t e = 0; e < n; e++)
        x[e] = F->full_int(desc);
      host[b] = x;
      dev[b] = tu_upload_int(ctx, x, n);
      continue;
    }
    float *x = tu_alloc(n * sizeof *x);
    tu_fill(&rng, x, n, 1.0f);
    if (!strcmp(spec[b].name, name)) {
      cr_assert_lt(at, n);
      x[at] = NAN;
      hit = 1;
    }
    tu_round(x, n, spec[b].dtype);
    host[b] = x;
    dev[b] = tu_upload(ctx, x, n, spec[b].dtype);
    if (spec[b].role == CLATTN__BUF_OUT || spec[b].role == CLATTN__BUF_INOUT)
      out = b;
  }
  cr_assert(hit && out >= 0, "%s: buffer %s or the output not found", family,
            name);
  const clattn_status st = clattn__call(ctx, F, desc, NULL, dev, NULL);
  cr_assert_eq(st, CLATTN_OK, "%s %s: %s", family, shape,
               clattn_ctx_errmsg(ctx));
  F->reference(desc, host);
  const size_t n = spec[out].elems;
  const float *ref = host[out];
  float *got = tu_alloc(n * sizeof *got);
  tu_download(ctx, dev[out], got, n, spec[out].dtype);
  size_t ref_bad = 0;
  for (size_t e = 0; e < n; e++)
    ref_bad += !isfinite(ref[e]);
  char what[300];
  snprintf(what, sizeof what, "%s %s: NaN in %s[%zu]", family, shape, name, at);
  cr_expect(ref_bad > 0 && ref_bad < n,
            "%s: the reference has %zu non-finite of %zu, expected some", what,
            ref_bad, n);
  tu_check(what, got, ref, n, clattn__tolerance(spec[out].dtype));
  free(got);
  for (int b = 0; b < F->nbufs; b++) {
    tu_release(dev[b]);
    free(host[b]);
  }
}

/* SwitchHead's routing: a NaN score ranks above every number, as in
 * torch.topk, so it is selected and its NaN sigmoid gate reaches the rows
 * of that head (w_sel [model-dim, heads * experts]: element 2 is head 0's
 * expert 2, for every row); the fused small-rows path and the routing
 * kernel. */
Test(nonfinite, cvmm_routing, .timeout = 300) {
  clattn_ctx *ctx = tu_ctx();
  run_nan_input(ctx, "cvmm",
                "seq=6 heads=2 head-dim=8 model-dim=12 experts=4 topk=2 "
                "mode=split",
                "w_sel", 2);
  run_nan_input(ctx, "cvmm",
                "seq=37 heads=2 head-dim=8 model-dim=12 experts=4 topk=2 "
                "mode=split",
                "w_sel", 2);
  clattn_ctx_destroy(ctx);
}

/* Super values are linear: a NaN in x reaches the outputs that mix it. */
Test(nonfinite, super_values, .timeout = 300) {
  clattn_ctx *ctx = tu_ctx();
  run_nan_input(ctx, "super-values",
                "batch=1 seq=6 heads=2 head-dim=8 max-len=6 causal=1", "x", 20);
  clattn_ctx_destroy(ctx);
}
