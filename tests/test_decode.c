/* test_decode.c - clattn_kv_append + clattn_decode against ref_decode.
 *
 * Each case:
 *  1. builds host caches [b, cap, hkv, d] in the case's layout: rows below
 *     pos[b] are "older" data, every other row holds random garbage;
 *  2. uploads them, then clattn_kv_append()s n_new fresh rows per sequence at
 *     pos[b] (rows that fall outside [0, cap) must not be written); the
 *     whole cache buffers are then compared byte for byte with the host's
 *     expectation (so nothing else was touched);
 *  3. clattn_decode()s one query per sequence over lens[b] rows and
 *     compares with ref_decode (tolerances: util.h);
 *  4. decode == prefill: clattn_attention with n_q = 1 over the same cache
 *     (kv_layout = cache layout, kv_lens = lens) gives the same output.
 *
 * The sampled cases use the same construction as test_attention.c: for an
 * axis of K values, case c takes value (c + hash(c / K)) % K, so every
 * value of every axis occurs (checked by decode.coverage).
 * CLATTN_TEST_SUBSET=small keeps a few small caches (simulators).
 */
#include "util.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const int ax_b[] = {1, 2, 4};
static const int ax_cap[] = {1, 7, 100, 1000, 4096};
/* {8, 1} and {16, 1}: variant 1 puts 8 heads in a vector's lanes */
static const int ax_heads[][2] = {{1, 1}, {4, 4}, {8, 1},
                                  {8, 2}, {6, 3}, {16, 1}};
/* {12, 20}: multiples of 4 but not of 8 (the kernels' 4-wide vectors; k =
 * 12 also leaves kv_append's program, built without widths, at width 1);
 * {24, 40}: multiples of 8 but not of 16 */
static const int ax_dims[][2] = {{16, 16},  {64, 64},  {80, 80}, {128, 128},
                                 {64, 128}, {128, 16}, {12, 20}, {24, 40}};
static const int ax_layout[] = {0, 1};
static const clattn_dtype ax_dtype[] = {CLATTN_F32, CLATTN_F16, CLATTN_BF16};
/* index 0: params = NULL (automatic) */
static const clattn_params ax_params[] = {
    {.size = sizeof(clattn_params)}, /* NULL */
    {.size = sizeof(clattn_params), .splits = 1}, /* one split */
    {.size = sizeof(clattn_params), .splits = 3}, /* several */
    {.size = sizeof(clattn_params), .splits = 16}, /* many (more than rows for small caches) */
    {.size = sizeof(clattn_params)}, /* all-zero params: automatic everything */
    {.size = sizeof(clattn_params), .variant = 1, .keys = 32, .splits = 5}, /* variant 1, 32-key blocks, 5 splits */
    {.size = sizeof(clattn_params), .variant = 1, .keys = 16, .wg = 8}, /* variant 1, work-groups of 8, automatic splits */
    {.size = sizeof(clattn_params), .variant = 1, .rows = 2, .keys = 32, .splits = 3}, /* variant 1, 2 heads per P V pass (1 if G = 1) */
    {.size = sizeof(clattn_params), .variant = 1, .keys = 16, .splits = 2, .prefetch = 2}, /* variant 1, prefetch on (none if G = 1) */
    {.size = sizeof(clattn_params), .variant = 1, .rows = 2, .keys = 16, .splits = 3, .prefetch = 1}, /* variant 1, 2 heads a pass, prefetch off */
    {.size = sizeof(clattn_params), .variant = 1, .rows = 16, .keys = 16, .splits = 3}, /* variant 1, the whole group a pass, by slices
of the value dims (1 head if G = 1) */
    {.size = sizeof(clattn_params), .variant = 2}, /* variant 2, automatic */
    {.size = sizeof(clattn_params), .variant = 2, .keys = 16, .wg = 64, .splits = 4}, /* variant 2, 64 items, 16-key tiles, 4 splits */
    {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 256, .splits = 2}, /* variant 2, 256 items, 8-key tiles, 2 splits */
};
static const int ax_nnew[] = {1, 3, 16};

enum {
  AX_B,
  AX_CAP,
  AX_HEADS,
  AX_DIMS,
  AX_LAYOUT,
  AX_DTYPE,
  AX_PARAMS,
  AX_NNEW,
  AX_COUNT
};
static const int ax_count[AX_COUNT] = {
    NELEM(ax_b),      NELEM(ax_cap),   NELEM(ax_heads),  NELEM(ax_dims),
    NELEM(ax_layout), NELEM(ax_dtype), NELEM(ax_params), NELEM(ax_nnew)};

typedef struct dcase {
  int ix[AX_COUNT];
  int cap_override; /* nonzero: capacity (the 32768-row cases) */
  int nan_pad;      /* rows >= lens hold NaN instead of random garbage */
  unsigned seed;
} dcase;

#define N_SAMPLED 50
#define MAX_CASES (N_SAMPLED + 16)

static unsigned hash32(unsigned x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

static dcase sampled_case(int c) {
  dcase d;
  memset(&d, 0, sizeof d);
  for (int ax = 0; ax < AX_COUNT; ax++) {
    int k = ax_count[ax];
    unsigned off = hash32((unsigned)(c / k) * 977u + (unsigned)ax * 104729u);
    d.ix[ax] = (int)(((unsigned)c + off) % (unsigned)k);
  }
  d.nan_pad = c % 5 == 4;
  d.seed = 3000u + (unsigned)c;
  return d;
}

static dcase mk(int b, int cap, int heads, int dims, int layout, int dt,
                int params, int nnew, int cap_override, int nan_pad,
                unsigned seed) {
  dcase d = {{b, cap, heads, dims, layout, dt, params, nnew},
             cap_override,
             nan_pad,
             seed};
  return d;
}

static int special_cases(dcase *out) {
  int k = 0;
  /* 32768-row caches with small heads: automatic and many splits */
  out[k++] = mk(0, 0, 3, 0, 1, 0, 0, 2, 32768, 0, 7001);
  out[k++] = mk(1, 0, 0, 0, 0, 0, 3, 0, 32768, 1, 7002);
  /* one split over a long cache, f16 */
  out[k++] = mk(1, 0, 0, 0, 1, 1, 1, 1, 8192, 0, 7003);
  /* variant 2 over 32768 rows, MQA-like group of 8 */
  out[k++] = mk(0, 0, 2, 0, 0, 0, 8, 0, 32768, 0, 7004);
  return k;
}

static int small_cases(dcase *out) {
  int k = 0;
  for (int p = 0; p < NELEM(ax_params); p++)
    out[k++] =
        mk(1 + p % 2, 1 + p % 2, p % NELEM(ax_heads),
           p == 4   ? 2
           : p == 5 ? 6
                    : 0,
           (p / 2) % 2, p % 2, p, p % 3, 0, (p / 3) % 2, 800u + (unsigned)p);
  /* variant 1 with heads in lanes: G = 8 with 8-wide head dims, and
   * G = 16 in work-groups of 8 items */
  out[k++] = mk(1, 2, 2, 7, 0, 1, 5, 0, 0, 1, 820u);
  out[k++] = mk(0, 1, 5, 0, 1, 2, 6, 1, 0, 0, 821u);
  /* G = 8 in lanes, f16, 2 heads per P V pass (3 passes + 1 padded) */
  out[k++] = mk(1, 2, 2, 7, 0, 1, 7, 0, 0, 1, 822u);
  /* the whole group a pass, by slices of the value dims: G = 8 in lanes
   * (f32, 5 slices of 8), G = 4 head-major (bf16, 5 slices of 4) */
  out[k++] = mk(1, 2, 2, 7, 1, 0, 13, 0, 0, 0, 823u);
  out[k++] = mk(0, 2, 3, 6, 0, 2, 13, 1, 0, 1, 824u);
  return k;
}

static int all_cases(dcase *out) {
  if (tu_subset("small"))
    return small_cases(out);
  int k = 0;
  for (int c = 0; c < N_SAMPLED; c++)
    out[k++] = sampled_case(c);
  k += special_cases(out + k);
  return k;
}

typedef struct dshape {
  int b, cap, hq, hkv, dk, dv, layout, nnew, nan_pad;
  clattn_dtype dt;
  const clattn_params *params;
} dshape;

static dshape shape_of(const dcase *c) {
  dshape s;
  s.b = ax_b[c->ix[AX_B]];
  s.cap = c->cap_override ? c->cap_override : ax_cap[c->ix[AX_CAP]];
  s.hq = ax_heads[c->ix[AX_HEADS]][0];
  s.hkv = ax_heads[c->ix[AX_HEADS]][1];
  s.dk = ax_dims[c->ix[AX_DIMS]][0];
  s.dv = ax_dims[c->ix[AX_DIMS]][1];
  s.layout = ax_layout[c->ix[AX_LAYOUT]];
  s.dt = ax_dtype[c->ix[AX_DTYPE]];
  s.params = c->ix[AX_PARAMS] == 0 ? NULL : &ax_params[c->ix[AX_PARAMS]];
  s.nnew = ax_nnew[c->ix[AX_NNEW]];
  s.nan_pad = c->nan_pad;
  return s;
}

static void describe(const dshape *s, char *buf, size_t cap) {
  snprintf(buf, cap,
           "b=%d cap=%d hq=%d hkv=%d dk=%d dv=%d layout=%s dtype=%s "
           "n_new=%d params=%s{variant %d, rows %d, keys %d, wg %d, "
           "splits %d} "
           "nan_pad=%d",
           s->b, s->cap, s->hq, s->hkv, s->dk, s->dv,
           s->layout ? "BHSD" : "BSHD", tu_dtype_name(s->dt), s->nnew,
           s->params ? "" : "NULL", s->params ? s->params->variant : 0,
           s->params ? s->params->rows : 0, s->params ? s->params->keys : 0,
           s->params ? s->params->wg : 0, s->params ? s->params->splits : 0,
           s->nan_pad);
}

/* Per-sequence lens and append positions.  Sequence 0 gets the full cache,
 * then (if present) lens 0 (nothing appended: pos = -n_new), lens 1, a
 * sequence whose append overflows the capacity (pos = cap - 1), and random
 * lengths. */
static void plan(const dshape *s, tu_rng *r, int *lens, int *pos) {
  for (int bi = 0; bi < s->b; bi++) {
    int L;
    switch (bi) {
    case 0:
      L = s->cap;
      break;
    case 1:
      L = 0;
      break;
    case 2:
      L = 1;
      break;
    default:
      L = tu_randint(r, s->cap + 1);
    }
    lens[bi] = L;
    pos[bi] = L - s->nnew;
  }
  if (s->b >= 4) { /* the last sequence: append runs past the capacity */
    pos[s->b - 1] = s->cap - 1;
    lens[s->b - 1] = s->cap;
  }
}

static void run_case(const dshape *s, unsigned seed) {
  char what[512];
  describe(s, what, sizeof what);
  cr_log_info("%s", what);
  tu_rng rng = tu_rng_seed(seed);
  int b = s->b, cap = s->cap, hq = s->hq, hkv = s->hkv, dk = s->dk, dv = s->dv;
  size_t nkc = (size_t)b * cap * hkv * dk, nvc = (size_t)b * cap * hkv * dv;
  size_t nkn = (size_t)b * s->nnew * hkv * dk,
         nvn = (size_t)b * s->nnew * hkv * dv;
  size_t nq = (size_t)b * hq * dk, no = (size_t)b * hq * dv;
  float *kc = tu_alloc(nkc * 4), *vc = tu_alloc(nvc * 4);
  float *kc0 = tu_alloc(nkc * 4), *vc0 = tu_alloc(nvc * 4);
  float *kn = tu_alloc(nkn * 4), *vn = tu_alloc(nvn * 4);
  float *q = tu_alloc(nq * 4), *o = tu_alloc(no * 4), *oref = tu_alloc(no * 4);
  float *o2 = tu_alloc(no * 4);
  int *lens = tu_alloc((size_t)b * sizeof(int));
  int *pos = tu_alloc((size_t)b * sizeof(int));
  plan(s, &rng, lens, pos);

  /* The expected cache (kc, vc) and what is uploaded before the append
   * (kc0, vc0): identical except the rows the append must write. */
  tu_fill(&rng, kc, nkc, 1.0f);
  tu_fill(&rng, vc, nvc, 1.0f);
  tu_fill(&rng, kn, nkn, 1.0f);
  tu_fill(&rng, vn, nvn, 1.0f);
  tu_fill(&rng, q, nq, 1.0f);
  if (s->nan_pad) {
    for (int bi = 0; bi < b; bi++)
      for (int t = lens[bi]; t < cap; t++)
        for (int h = 0; h < hkv; h++) {
          for (int d = 0; d < dk; d++)
            kc[ref_index(s->layout, cap, hkv, dk, bi, t, h, d)] = NAN;
          for (int d = 0; d < dv; d++)
            vc[ref_index(s->layout, cap, hkv, dv, bi, t, h, d)] = NAN;
        }
  }
  tu_round(kc, nkc, s->dt);
  tu_round(vc, nvc, s->dt);
  tu_round(kn, nkn, s->dt);
  tu_round(vn, nvn, s->dt);
  tu_round(q, nq, s->dt);
  memcpy(kc0, kc, nkc * 4);
  memcpy(vc0, vc, nvc * 4);
  for (int bi = 0; bi < b; bi++)
    for (int r = 0; r < s->nnew; r++) {
      int t = pos[bi] + r;
      if (t < 0 || t >= cap)
        continue;
      for (int h = 0; h < hkv; h++) {
        for (int d = 0; d < dk; d++)
          kc[ref_index(s->layout, cap, hkv, dk, bi, t, h, d)] =
              kn[ref_index(0, s->nnew, hkv, dk, bi, r, h, d)];
        for (int d = 0; d < dv; d++)
          vc[ref_index(s->layout, cap, hkv, dv, bi, t, h, d)] =
              vn[ref_index(0, s->nnew, hkv, dv, bi, r, h, d)];
      }
    }

  clattn_ctx *ctx = tu_ctx();
  cl_mem dkc = tu_upload(ctx, kc0, nkc, s->dt);
  cl_mem dvc = tu_upload(ctx, vc0, nvc, s->dt);
  cl_mem dkn = tu_upload(ctx, kn, nkn, s->dt);
  cl_mem dvn = tu_upload(ctx, vn, nvn, s->dt);
  cl_mem dq = tu_upload(ctx, q, nq, s->dt);
  cl_mem dpos = tu_upload_int(ctx, pos, (size_t)b);
  cl_mem dlens = tu_upload_int(ctx, lens, (size_t)b);
  cl_mem dout = tu_sentinel(ctx, no, s->dt, 0xff);
  cl_mem dout2 = tu_sentinel(ctx, no, s->dt, 0xff);
  clattn_decode_desc dd = {.size = sizeof(clattn_decode_desc),
                           .batch = b,
                           .capacity = cap,
                           .heads_q = hq,
                           .heads_kv = hkv,
                           .head_dim_k = dk,
                           .head_dim_v = dv,
                           .dtype = s->dt,
                           .cache_layout = (clattn_layout)s->layout,
                           .scale = 0.0f,
                           .params = s->params};
  clattn_status st =
      clattn_kv_append(ctx, &dd, s->nnew, dkn, dvn, dpos, dkc, dvc, NULL);
  cr_assert(st == CLATTN_OK, "%s: clattn_kv_append -> %d (%s): %s", what,
            (int)st, clattn_status_str(st), clattn_ctx_errmsg(ctx));

  /* the caches, byte for byte */
  size_t es = clattn_dtype_size(s->dt);
  unsigned char *got = tu_alloc((nkc > nvc ? nkc : nvc) * es);
  cl_mem ms[2] = {dkc, dvc};
  float *want[2] = {kc, vc};
  size_t cnt[2] = {nkc, nvc};
  for (int w = 0; w < 2; w++) {
    tu_read_bytes(ctx, ms[w], got, cnt[w] * es);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < cnt[w]; i++) {
      float g;
      if (s->dt == CLATTN_F32) {
        memcpy(&g, got + 4 * i, 4);
      } else {
        uint16_t h;
        memcpy(&h, got + 2 * i, 2);
        g = s->dt == CLATTN_F16 ? ref_f16_to_f32(h) : ref_bf16_to_f32(h);
      }
      int same = (isnan(g) && isnan(want[w][i])) || g == want[w][i];
      if (!same && bad++ == 0)
        first = i;
    }
    cr_expect(bad == 0,
              "%s: %s cache after append: %zu elements differ, first at %zu",
              what, w ? "V" : "K", bad, first);
  }
  free(got);

  st = clattn_decode(ctx, &dd, dq, dkc, dvc, dlens, dout, NULL);
  /* a device that cannot run an explicitly requested work-group size must
   * refuse it cleanly: CLATTN_ERR_UNSUPPORTED and nothing written */
  int skipped = tu_unsupported_ok(ctx, st, s->params);
  if (skipped) {
    cr_assert(tu_untouched(ctx, dout, no * clattn_dtype_size(s->dt), 0xff),
              "%s: refused call wrote its output", what);
    goto done;
  }
  cr_assert(st == CLATTN_OK, "%s: clattn_decode -> %d (%s): %s", what, (int)st,
            clattn_status_str(st), clattn_ctx_errmsg(ctx));
  tu_download(ctx, dout, o, no, s->dt);
  ref_decode(b, cap, hq, hkv, dk, dv, s->layout, 1.0 / sqrt((double)dk), lens,
             q, kc, vc, oref);
  tu_check(what, o, oref, no, clattn__tolerance(s->dt));
  for (int bi = 0; bi < b; bi++)
    if (lens[bi] == 0)
      for (size_t i = 0; i < (size_t)hq * dv; i++)
        if (o[(size_t)bi * hq * dv + i] != 0.0f) {
          cr_expect(0, "%s: sequence %d has lens 0 but output %g at %zu", what,
                    bi, (double)o[(size_t)bi * hq * dv + i], i);
          break;
        }

  /* decode == prefill with one query */
  clattn_attn_desc ad = {.size = sizeof(clattn_attn_desc),
                         .batch = b,
                         .n_q = 1,
                         .n_kv = cap,
                         .heads_q = hq,
                         .heads_kv = hkv,
                         .head_dim_k = dk,
                         .head_dim_v = dv,
                         .dtype = s->dt,
                         .q_layout = CLATTN_BSHD,
                         .kv_layout = (clattn_layout)s->layout,
                         .scale = 0.0f,
                         .causal = (int)(seed & 1),
                         .params = NULL};
  st = clattn_attention(ctx, &ad, dq, dkc, dvc, dlens, dout2, NULL);
  cr_assert(st == CLATTN_OK, "%s: clattn_attention (n_q=1) -> %d (%s): %s",
            what, (int)st, clattn_status_str(st), clattn_ctx_errmsg(ctx));
  tu_download(ctx, dout2, o2, no, s->dt);
  char what2[600];
  snprintf(what2, sizeof what2, "%s: decode vs prefill(n_q=1)", what);
  /* both outputs are rounded to the storage type independently: allow
   * one output rounding each for f16/bf16 */
  tu_check(what2, o, o2, no,
           (s->dt == CLATTN_F32 ? 1 : 2) * clattn__tolerance(s->dt));

done:
  tu_release(dkc);
  tu_release(dvc);
  tu_release(dkn);
  tu_release(dvn);
  tu_release(dq);
  tu_release(dpos);
  tu_release(dlens);
  tu_release(dout);
  tu_release(dout2);
  clattn_ctx_destroy(ctx);
  free(kc);
  free(vc);
  free(kc0);
  free(vc0);
  free(kn);
  free(vn);
  free(q);
  free(o);
  free(o2);
  free(oref);
  free(lens);
  free(pos);
}

ParameterizedTestParameters(decode, case) {
  dcase *tmp = malloc(sizeof(dcase) * MAX_CASES);
  int n = all_cases(tmp);
  return cr_make_param_array(
      dcase, tu_param_copy(tmp, (size_t)n, sizeof(dcase)), (size_t)n, NULL);
}

ParameterizedTest(dcase *c, decode, case, .timeout = 300) {
  dshape s = shape_of(c);
  run_case(&s, c->seed);
}

Test(decode, coverage) {
  dcase c[MAX_CASES];
  int n = 0;
  for (int i = 0; i < N_SAMPLED; i++)
    c[n++] = sampled_case(i);
  n += special_cases(c + n);
  for (int ax = 0; ax < AX_COUNT; ax++)
    for (int v = 0; v < ax_count[ax]; v++) {
      int seen = 0;
      for (int i = 0; i < n && !seen; i++)
        seen = c[i].ix[ax] == v;
      cr_expect(seen, "axis %d value %d never occurs", ax, v);
    }
  int big = 0, lens01 = 0, overflow = 0, nan_pad = 0;
  for (int i = 0; i < n; i++) {
    dshape s = shape_of(&c[i]);
    big += s.cap == 32768;
    lens01 += s.b >= 3; /* plan(): sequences 1 and 2 have lens 0 and 1 */
    overflow += s.b >= 4 && s.nnew > 1;
    nan_pad += s.nan_pad;
  }
  cr_expect(big >= 2 && lens01 > 0 && overflow > 0 && nan_pad > 0,
            "big=%d lens01=%d overflow=%d nan_pad=%d", big, lens01, overflow,
            nan_pad);
}

/* Splits must not change the result beyond float32 rounding: the same
 * decode with splits 1, 2, 7, 64 and automatic agrees with the reference. */
Test(decode, splits_agree, .timeout = 300) {
  int b = 2, cap = tu_subset("small") ? 40 : 3000, hq = 4, hkv = 2, d = 64;
  int lens[2] = {cap, cap / 2 + 1};
  size_t nc = (size_t)b * cap * hkv * d, nq = (size_t)b * hq * d;
  float *kc = tu_alloc(nc * 4), *vc = tu_alloc(nc * 4), *q = tu_alloc(nq * 4);
  float *o = tu_alloc(nq * 4), *oref = tu_alloc(nq * 4);
  tu_rng r = tu_rng_seed(99);
  tu_fill(&r, kc, nc, 1);
  tu_fill(&r, vc, nc, 1);
  tu_fill(&r, q, nq, 1);
  ref_decode(b, cap, hq, hkv, d, d, 1, 1.0 / sqrt((double)d), lens, q, kc, vc,
             oref);
  clattn_ctx *ctx = tu_ctx();
  cl_mem dkc = tu_upload(ctx, kc, nc, CLATTN_F32);
  cl_mem dvc = tu_upload(ctx, vc, nc, CLATTN_F32);
  cl_mem dq = tu_upload(ctx, q, nq, CLATTN_F32);
  cl_mem dl = tu_upload_int(ctx, lens, 2);
  cl_mem dout = tu_buffer(ctx, nq * 4);
  const int splits[] = {1, 2, 7, 64, 0};
  for (int i = 0; i < NELEM(splits); i++) {
    clattn_params p = {.size = sizeof(clattn_params), .splits = splits[i]};
    clattn_decode_desc dd = {.size = sizeof(clattn_decode_desc),
                             .batch = b,
                             .capacity = cap,
                             .heads_q = hq,
                             .heads_kv = hkv,
                             .head_dim_k = d,
                             .head_dim_v = d,
                             .dtype = CLATTN_F32,
                             .cache_layout = CLATTN_BHSD,
                             .params = &p};
    clattn_status st = clattn_decode(ctx, &dd, dq, dkc, dvc, dl, dout, NULL);
    cr_assert(st == CLATTN_OK, "splits=%d: %d %s", splits[i], (int)st,
              clattn_ctx_errmsg(ctx));
    tu_download(ctx, dout, o, nq, CLATTN_F32);
    char what[64];
    snprintf(what, sizeof what, "decode splits=%d", splits[i]);
    tu_check(what, o, oref, nq, clattn__tolerance(CLATTN_F32));
  }
  tu_release(dkc);
  tu_release(dvc);
  tu_release(dq);
  tu_release(dl);
  tu_release(dout);
  clattn_ctx_destroy(ctx);
  free(kc);
  free(vc);
  free(q);
  free(o);
  free(oref);
}

/* One context and one kernel with other scalar arguments (the capacity,
 * the scale, the strides): a repeated call sets what changed, and after
 * clattn_ctx_clear_programs (new kernel objects, perhaps at the released
 * ones' addresses) everything again. */
Test(decode, repeated_calls_set_changed_arguments) {
  const int b = 1, hq = 4, hkv = 2, d = 32;
  const int caps[] = {50, 70, 50, 50};
  const float scales[] = {0.0f, 0.5f, 0.25f, 0.25f};
  clattn_ctx *ctx = tu_ctx();
  tu_rng r = tu_rng_seed(5);
  for (int i = 0; i < NELEM(caps); i++) {
    const int cap = caps[i], lens[1] = {cap - 3};
    if (i == 3)
      clattn_ctx_clear_programs(ctx);
    size_t nc = (size_t)b * cap * hkv * d, nq = (size_t)b * hq * d;
    float *kc = tu_alloc(nc * 4), *vc = tu_alloc(nc * 4);
    float *q = tu_alloc(nq * 4), *o = tu_alloc(nq * 4);
    float *oref = tu_alloc(nq * 4);
    tu_fill(&r, kc, nc, 1);
    tu_fill(&r, vc, nc, 1);
    tu_fill(&r, q, nq, 1);
    const double scale = scales[i] ? scales[i] : 1.0 / sqrt((double)d);
    ref_decode(b, cap, hq, hkv, d, d, 1, scale, lens, q, kc, vc, oref);
    cl_mem dkc = tu_upload(ctx, kc, nc, CLATTN_F32);
    cl_mem dvc = tu_upload(ctx, vc, nc, CLATTN_F32);
    cl_mem dq = tu_upload(ctx, q, nq, CLATTN_F32);
    cl_mem dl = tu_upload_int(ctx, lens, 1);
    cl_mem dout = tu_buffer(ctx, nq * 4);
    const clattn_params p = {.size = sizeof(clattn_params), .keys = 16, .splits = 2}; /* one program */
    clattn_decode_desc dd = {.size = sizeof(clattn_decode_desc),
                             .batch = b,
                             .capacity = cap,
                             .heads_q = hq,
                             .heads_kv = hkv,
                             .head_dim_k = d,
                             .head_dim_v = d,
                             .dtype = CLATTN_F32,
                             .cache_layout = CLATTN_BHSD,
                             .scale = scales[i],
                             .params = &p};
    cr_assert_eq(clattn_decode(ctx, &dd, dq, dkc, dvc, dl, dout, NULL),
                 CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
    tu_download(ctx, dout, o, nq, CLATTN_F32);
    char what[64];
    snprintf(what, sizeof what, "call %d (capacity %d)", i, cap);
    tu_check(what, o, oref, nq, clattn__tolerance(CLATTN_F32));
    tu_release(dkc);
    tu_release(dvc);
    tu_release(dq);
    tu_release(dl);
    tu_release(dout);
    free(kc);
    free(vc);
    free(q);
    free(o);
    free(oref);
  }
  clattn_ctx_destroy(ctx);
}

/* ------------------------------------------------- attention options */

/* clattn_decode with the attention options (clattn.h, "Attention
 * options") against ref_decode_opts.  Each case is one set of options on
 * one storage type, variant and group; the windows (a runtime argument)
 * and the split counts sweep within it, so a case builds one program with
 * S == 1 (DIRECT: the split kernel takes the sink) and one with S > 1 (the
 * combine takes it).  Sequences: the full cache, shorter ones and one of
 * no keys (zeros whatever the options).  Shapes divide no tile; a window
 * of 1, below, at and above a block, and the cache's capacity and beyond;
 * head dims up to 512;
 * with few keys in a window and many splits, the splits past the visible
 * keys' last block read nothing (split_keys). */
typedef struct ocase {
  const char *name;
  clattn_dtype dt;
  int cap, hq, hkv, dk, dv, layout;
  int lens[4];          /* -1 past the batch */
  int windows[6], nwin; /* 0: none */
  float softcap;
  int alibi, sinks;     /* 1: per-head arrays (sinks: head 1 is -inf) */
  clattn_params params; /* splits: overridden by splits[] */
  int splits[3], nsplits;
  int small; /* kept by CLATTN_TEST_SUBSET=small (Oclgrind) */
} ocase;

/* clang-format off */
static const ocase opt_cases[] = {
    /* name, dtype, cap, hq, hkv, dk, dv, layout, lens, windows, softcap,
     * alibi, sinks, params, splits, small */
    {"window v1 f32", CLATTN_F32, 100, 4, 2, 20, 12, 1, {100, 37, 1, 0},
     {1, 5, 16, 40, 100, 1000}, 6, 0.0f, 0, 0,
     {.size = sizeof(clattn_params), .variant = 1, .keys = 16},
     {1, 3, 7}, 3, 1},
    {"window v2 bf16 G=3", CLATTN_BF16, 45, 3, 1, 12, 12, 0, {45, 20, 0, -1},
     {3, 8, 45, 50}, 4, 0.0f, 0, 0,
     {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 32},
     {1, 4}, 2, 0},
    {"sinks v1 f16 MHA", CLATTN_F16, 77, 4, 4, 16, 16, 0, {77, 0, 30, -1},
     {0}, 1, 0.0f, 0, 1,
     {.size = sizeof(clattn_params), .variant = 1, .keys = 32},
     {1, 3}, 2, 0},
    {"softcap v1 f32 lanes G=8", CLATTN_F32, 90, 8, 1, 16, 16, 1,
     {90, 44, -1, -1}, {0}, 1, 0.5f, 0, 0,
     {.size = sizeof(clattn_params), .variant = 1, .keys = 16},
     {4}, 1, 0},
    {"alibi v2 f32", CLATTN_F32, 70, 4, 2, 20, 12, 0, {70, 9, -1, -1},
     {0}, 1, 0.0f, 1, 0,
     {.size = sizeof(clattn_params), .variant = 2, .keys = 16, .wg = 64},
     {3}, 1, 0},
    {"all options v1 bf16 G=4", CLATTN_BF16, 120, 8, 2, 40, 24, 1,
     {120, 60, 0, 2}, {7, 30, 200}, 3, 1.0f, 1, 1,
     {.size = sizeof(clattn_params), .variant = 1, .keys = 16},
     {1, 5}, 2, 1},
    {"all options v2 f16 G=2", CLATTN_F16, 57, 4, 2, 24, 24, 0,
     {57, 33, 0, -1}, {9, 57}, 2, 2.0f, 1, 1,
     {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 16},
     {1, 3}, 2, 0},
    /* head dims past 256: a tile of few keys in local memory (variant 2),
     * long private rows (variant 1) */
    {"window sinks v2 f32 d=512", CLATTN_F32, 50, 2, 1, 512, 512, 1,
     {50, 17, -1, -1}, {20}, 1, 0.0f, 0, 1,
     {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 64},
     {3}, 1, 0},
    {"alibi softcap v1 bf16 dk=512 dv=264", CLATTN_BF16, 40, 4, 2, 512, 264,
     0, {40, 23, -1, -1}, {0}, 1, 4.0f, 1, 0,
     {.size = sizeof(clattn_params), .variant = 1, .keys = 16},
     {2}, 1, 0},
};
/* clang-format on */
enum { N_OPT_CASES = sizeof opt_cases / sizeof opt_cases[0] };

/* Slopes and sinks of h heads: BLOOM-like slopes, sinks around 0 with
 * head 1's -inf (no sink). */
static void opt_arrays(int h, float *slopes, float *sinks) {
  for (int j = 0; j < h; j++) {
    slopes[j] = powf(2.0f, -8.0f * (float)(j + 1) / (float)h);
    sinks[j] = j == 1 ? -INFINITY : 0.75f * (float)((j % 5) - 2);
  }
}

static void run_opt_case(const ocase *oc, unsigned seed) {
  int b = 0;
  while (b < 4 && oc->lens[b] >= 0)
    b++;
  const int cap = oc->cap, hq = oc->hq, hkv = oc->hkv, dk = oc->dk, dv = oc->dv;
  const size_t nkc = (size_t)b * cap * hkv * dk,
               nvc = (size_t)b * cap * hkv * dv;
  const size_t nq = (size_t)b * hq * dk, no = (size_t)b * hq * dv;
  float *kc = tu_alloc(nkc * 4), *vc = tu_alloc(nvc * 4), *q = tu_alloc(nq * 4);
  float *o = tu_alloc(no * 4), *oref = tu_alloc(no * 4);
  float slopes[16], sinks[16];
  opt_arrays(hq, slopes, sinks);
  tu_rng rng = tu_rng_seed(seed);
  tu_fill(&rng, kc, nkc, 1.0f);
  tu_fill(&rng, vc, nvc, 1.0f);
  /* larger queries: logits of a few units, which a soft-cap bends */
  tu_fill(&rng, q, nq, 3.0f);
  tu_round(kc, nkc, oc->dt);
  tu_round(vc, nvc, oc->dt);
  tu_round(q, nq, oc->dt);
  clattn_ctx *ctx = tu_ctx();
  cl_mem dkc = tu_upload(ctx, kc, nkc, oc->dt);
  cl_mem dvc = tu_upload(ctx, vc, nvc, oc->dt);
  cl_mem dq = tu_upload(ctx, q, nq, oc->dt);
  cl_mem dl = tu_upload_int(ctx, oc->lens, (size_t)b);
  cl_mem dout = tu_sentinel(ctx, no, oc->dt, 0xff);
  const size_t ob = no * clattn_dtype_size(oc->dt);
  /* the largest window and split count first, so that the context's
   * scratch buffers never grow within a case: Oclgrind 21.10 reports the
   * combine's reads of a regrown scratch buffer as uninitialised, although
   * the split kernel wrote them (the outputs match) */
  for (int wi = oc->nwin - 1; wi >= 0; wi--)
    for (int si = oc->nsplits - 1; si >= 0; si--) {
      clattn_params p = oc->params;
      p.splits = oc->splits[si];
      clattn_decode_desc dd = {.size = sizeof(clattn_decode_desc),
                               .batch = b,
                               .capacity = cap,
                               .heads_q = hq,
                               .heads_kv = hkv,
                               .head_dim_k = dk,
                               .head_dim_v = dv,
                               .dtype = oc->dt,
                               .cache_layout = (clattn_layout)oc->layout,
                               .params = &p,
                               .window = oc->windows[wi],
                               .softcap = oc->softcap,
                               .alibi_slopes = oc->alibi ? slopes : NULL,
                               .sinks = oc->sinks ? sinks : NULL};
      char what[256];
      snprintf(what, sizeof what,
               "%s: b=%d cap=%d window=%d softcap=%g alibi=%d sinks=%d "
               "splits=%d",
               oc->name, b, cap, dd.window, (double)dd.softcap, oc->alibi,
               oc->sinks, p.splits);
      tu_set_bytes(ctx, dout, ob, 0xff);
      clattn_status st = clattn_decode(ctx, &dd, dq, dkc, dvc, dl, dout, NULL);
      if (tu_unsupported_ok(ctx, st, &p)) {
        cr_expect(tu_untouched(ctx, dout, ob, 0xff),
                  "%s: refused call wrote its output", what);
        continue;
      }
      cr_assert_eq(st, CLATTN_OK, "%s: %s", what, clattn_ctx_errmsg(ctx));
      tu_download(ctx, dout, o, no, oc->dt);
      const ref_opts ro = {dd.window, dd.softcap, dd.alibi_slopes, dd.sinks};
      ref_decode_opts(b, cap, hq, hkv, dk, dv, oc->layout,
                      1.0 / sqrt((double)dk), oc->lens, &ro, q, kc, vc, oref);
      tu_check(what, o, oref, no, clattn__tolerance(oc->dt));
      for (int bi = 0; bi < b; bi++)
        for (size_t i = 0; oc->lens[bi] == 0 && i < (size_t)hq * dv; i++)
          if (o[(size_t)bi * hq * dv + i] != 0.0f) {
            cr_expect(0, "%s: sequence %d has no keys but output %g", what, bi,
                      (double)o[(size_t)bi * hq * dv + i]);
            break;
          }
    }
  tu_release(dkc);
  tu_release(dvc);
  tu_release(dq);
  tu_release(dl);
  tu_release(dout);
  clattn_ctx_destroy(ctx);
  free(kc);
  free(vc);
  free(q);
  free(o);
  free(oref);
}

ParameterizedTestParameters(decode, options) {
  static int idx[N_OPT_CASES];
  int n = 0;
  for (int i = 0; i < N_OPT_CASES; i++)
    if (!tu_subset("small") || opt_cases[i].small)
      idx[n++] = i;
  return cr_make_param_array(int, idx, (size_t)n);
}

ParameterizedTest(int *i, decode, options, .timeout = 300) {
  run_opt_case(&opt_cases[*i], 9100u + (unsigned)*i);
}

/* The options' bad values: CLATTN_ERR_INVALID_ARG with a message naming
 * the option, nothing enqueued (the output keeps its sentinel); a sink of
 * -inf is no sink and is accepted. */
Test(decode, options_bad_input) {
  const int b = 1, cap = 20, h = 2, d = 8;
  const int lens[1] = {20};
  const size_t nc = (size_t)b * cap * h * d;
  float *x = tu_alloc(nc * sizeof *x);
  tu_rng r = tu_rng_seed(17);
  tu_fill(&r, x, nc, 1.0f);
  clattn_ctx *ctx = tu_ctx();
  cl_mem dkc = tu_upload(ctx, x, nc, CLATTN_F32);
  cl_mem dvc = tu_upload(ctx, x, nc, CLATTN_F32);
  cl_mem dq = tu_upload(ctx, x, (size_t)b * h * d, CLATTN_F32);
  cl_mem dl = tu_upload_int(ctx, lens, 1);
  const size_t ob = (size_t)b * h * d * 4;
  cl_mem dout = tu_sentinel(ctx, (size_t)b * h * d, CLATTN_F32, 0xff);
  const float ok2[2] = {0.5f, 0.25f};
  const float nan2[2] = {0.5f, NAN}, inf2[2] = {INFINITY, 0.5f};
  const float ninf2[2] = {0.5f, -INFINITY};
  const struct {
    int window;
    float softcap;
    const float *alibi, *sinks;
    const char *names;
  } bad[] = {
      {-1, 0.0f, NULL, NULL, "window"},
      {-1024, 0.0f, NULL, NULL, "window"},
      {0, -1.0f, NULL, NULL, "softcap"},
      {0, NAN, NULL, NULL, "softcap"},
      {0, INFINITY, NULL, NULL, "softcap"},
      {0, 0.0f, nan2, NULL, "alibi_slopes[1]"},
      {0, 0.0f, inf2, NULL, "alibi_slopes[0]"},
      {0, 0.0f, ninf2, NULL, "alibi_slopes[1]"},
      {0, 0.0f, NULL, nan2, "sinks[1]"},
      {0, 0.0f, NULL, inf2, "sinks[0]"},
      {4, 2.0f, ok2, nan2, "sinks[1]"},
  };
  for (int i = 0; i < NELEM(bad); i++) {
    clattn_decode_desc dd = {.size = sizeof(clattn_decode_desc),
                             .batch = b,
                             .capacity = cap,
                             .heads_q = h,
                             .heads_kv = h,
                             .head_dim_k = d,
                             .head_dim_v = d,
                             .dtype = CLATTN_F32,
                             .cache_layout = CLATTN_BHSD,
                             .window = bad[i].window,
                             .softcap = bad[i].softcap,
                             .alibi_slopes = bad[i].alibi,
                             .sinks = bad[i].sinks};
    const clattn_status st =
        clattn_decode(ctx, &dd, dq, dkc, dvc, dl, dout, NULL);
    cr_expect_eq(st, CLATTN_ERR_INVALID_ARG, "case %d (%s): status %d", i,
                 bad[i].names, (int)st);
    cr_expect(strstr(clattn_ctx_errmsg(ctx), bad[i].names) != NULL,
              "case %d: message '%s' does not name %s", i,
              clattn_ctx_errmsg(ctx), bad[i].names);
    cr_expect(tu_untouched(ctx, dout, ob, 0xff), "case %d: output written", i);
  }
  /* a -inf sink is allowed (no sink) */
  clattn_decode_desc dd = {.size = sizeof(clattn_decode_desc),
                           .batch = b,
                           .capacity = cap,
                           .heads_q = h,
                           .heads_kv = h,
                           .head_dim_k = d,
                           .head_dim_v = d,
                           .dtype = CLATTN_F32,
                           .cache_layout = CLATTN_BHSD,
                           .sinks = ninf2};
  cr_expect_eq(clattn_decode(ctx, &dd, dq, dkc, dvc, dl, dout, NULL), CLATTN_OK,
               "%s", clattn_ctx_errmsg(ctx));
  tu_release(dkc);
  tu_release(dvc);
  tu_release(dq);
  tu_release(dl);
  tu_release(dout);
  clattn_ctx_destroy(ctx);
  free(x);
}

/* int8 is a paged cache's storage alone: the contiguous calls refuse it by
 * name (CLATTN_ERR_UNSUPPORTED), nothing enqueued. */
Test(decode, int8_refused_by_the_contiguous_calls) {
  const int b = 1, cap = 20, h = 2, d = 8;
  const int lens[1] = {20};
  const size_t nc = (size_t)b * cap * h * d;
  float *x = tu_alloc(nc * sizeof *x);
  tu_rng r = tu_rng_seed(18);
  tu_fill(&r, x, nc, 1.0f);
  clattn_ctx *ctx = tu_ctx();
  cl_mem dkc = tu_upload(ctx, x, nc, CLATTN_F32);
  cl_mem dq = tu_upload(ctx, x, (size_t)b * h * d, CLATTN_F32);
  cl_mem dl = tu_upload_int(ctx, lens, 1);
  const size_t ob = (size_t)b * h * d * 4;
  cl_mem dout = tu_sentinel(ctx, (size_t)b * h * d, CLATTN_F32, 0xff);
  const clattn_decode_desc dd = {.size = sizeof dd,
                                 .batch = b,
                                 .capacity = cap,
                                 .heads_q = h,
                                 .heads_kv = h,
                                 .head_dim_k = d,
                                 .head_dim_v = d,
                                 .dtype = CLATTN_I8};
  const clattn_attn_desc ad = {.size = sizeof ad,
                               .batch = b,
                               .n_q = 1,
                               .n_kv = cap,
                               .heads_q = h,
                               .heads_kv = h,
                               .head_dim_k = d,
                               .head_dim_v = d,
                               .dtype = CLATTN_I8};
  const clattn_status st[3] = {
      clattn_decode(ctx, &dd, dq, dkc, dkc, dl, dout, NULL),
      clattn_attention(ctx, &ad, dq, dkc, dkc, NULL, dout, NULL),
      clattn_kv_append(ctx, &dd, 1, dq, dq, dl, dkc, dkc, NULL)};
  for (int i = 0; i < 3; i++)
    cr_expect_eq(st[i], CLATTN_ERR_UNSUPPORTED, "call %d: status %d", i,
                 (int)st[i]);
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "i8") != NULL, "message '%s'",
            clattn_ctx_errmsg(ctx));
  cr_expect(tu_untouched(ctx, dout, ob, 0xff), "output written");
  tu_release(dkc);
  tu_release(dq);
  tu_release(dl);
  tu_release(dout);
  clattn_ctx_destroy(ctx);
  free(x);
}

/* With a window a step reads the window's keys alone: the model (which
 * test_model holds to Oclgrind's counts) predicts a step over 8192 cached
 * keys with W = 1024 to read 1/8 of the K and V bytes of the full step,
 * and plans its splits for the 1024 keys. */
Test(decode, window_reads_its_keys) {
  clattn_profile p = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_datasheet_find("A100", &p), CLATTN_OK);
  for (int v = 1; v <= 2; v++) {
    clattn_params par = {.size = sizeof(clattn_params), .variant = v};
    clattn_decode_desc dd = {.size = sizeof(clattn_decode_desc),
                             .batch = 1,
                             .capacity = 8192,
                             .heads_q = 8,
                             .heads_kv = 8,
                             .head_dim_k = 64,
                             .head_dim_v = 64,
                             .dtype = CLATTN_F16,
                             .cache_layout = CLATTN_BHSD,
                             .params = &par};
    clattn_prediction full = {.size = sizeof full}, win = {.size = sizeof win};
    cr_assert_eq(clattn_model_decode(&dd, NULL, &p, &full), CLATTN_OK, "%s",
                 full.errmsg);
    dd.window = 1024;
    cr_assert_eq(clattn_model_decode(&dd, NULL, &p, &win), CLATTN_OK, "%s",
                 win.errmsg);
    const double kv = 2.0 * 8192 * 8 * 128; /* f16 K and V of the cache */
    cr_expect_eq(full.kernel[0].bytes_compulsory -
                     win.kernel[0].bytes_compulsory,
                 kv * 7.0 / 8.0, "variant %d", v);
    const double ratio = win.kernel[0].bytes_read / full.kernel[0].bytes_read;
    cr_expect(ratio > 0.12 && ratio < 0.13,
              "variant %d: the windowed step reads %.3f of the full one's "
              "bytes",
              v, ratio);
  }
}

/* Variant 3 (subgroups, cl/decode.cl's decode_split_sg) against
 * ref_decode_opts, through run_opt_case: shapes that divide no subgroup
 * (head dims, lengths), f32, f16 and bf16, MHA, GQA and MQA, every option,
 * one split and several, for the device's own subgroup size (sg=0) and
 * each size of 8, 16, 32, 64 the device offers a kernel to require.  A
 * device without subgroups skips each (decode.subgroup_refused checks the
 * refusal there); a size the device does not offer is a skip of its own. */
/* clang-format off */
static const ocase sg_cases[] = {
    {"subgroup f32 MHA", CLATTN_F32, 100, 4, 4, 64, 64, 1, {100, 37, 1, 0},
     {0}, 1, 0.0f, 0, 0, {.size = sizeof(clattn_params)}, {1, 3}, 2, 1},
    {"subgroup f16 GQA all options", CLATTN_F16, 301, 8, 2, 40, 24, 0,
     {301, 188, 0, 77}, {0, 5, 100}, 3, 1.0f, 1, 1,
     {.size = sizeof(clattn_params)}, {1, 4}, 2, 0},
    {"subgroup bf16 MQA", CLATTN_BF16, 1000, 8, 1, 72, 72, 1,
     {1000, 513, 2, -1}, {0, 33}, 2, 0.0f, 0, 1,
     {.size = sizeof(clattn_params)}, {1, 5}, 2, 0},
    {"subgroup f32 G=3 window sinks", CLATTN_F32, 45, 3, 1, 12, 20, 0,
     {45, 20, 0, -1}, {3, 45}, 2, 0.0f, 0, 1,
     {.size = sizeof(clattn_params)}, {1, 4}, 2, 0},
    {"subgroup f32 dk=128 dv=264 alibi softcap", CLATTN_F32, 70, 4, 2, 128,
     264, 0, {70, 9, -1, -1}, {0}, 1, 2.0f, 1, 0,
     {.size = sizeof(clattn_params)}, {1, 3}, 2, 0},
    {"subgroup f16 G=16", CLATTN_F16, 4096, 16, 1, 16, 16, 1,
     {4096, 1500, -1, -1}, {0, 700}, 2, 0.0f, 0, 0,
     {.size = sizeof(clattn_params)}, {1, 16}, 2, 0},
};
/* clang-format on */
enum { N_SG_CASES = sizeof sg_cases / sizeof sg_cases[0] };
static const int sg_sizes[] = {0, 8, 16, 32, 64};
enum { N_SG_SIZES = sizeof sg_sizes / sizeof sg_sizes[0] };

/* Whether variant 3 runs with text params on a one-sequence call; a
 * refusal (INVALID_ARG or UNSUPPORTED, nothing written) leaves its message
 * in why. */
static int sg_size_runs(const char *text, char *why, size_t cap) {
  clattn_ctx *ctx = tu_ctx();
  const int lens[1] = {5};
  float x[5 * 8] = {0};
  cl_mem dk = tu_upload(ctx, x, 40, CLATTN_F32);
  cl_mem dq = tu_upload(ctx, x, 8, CLATTN_F32);
  cl_mem dl = tu_upload_int(ctx, lens, 1);
  cl_mem dout = tu_sentinel(ctx, 8, CLATTN_F32, 0xff);
  clattn_params p = {.size = sizeof p, .text = text};
  clattn_decode_desc dd = {.size = sizeof dd,
                           .batch = 1,
                           .capacity = 5,
                           .heads_q = 1,
                           .heads_kv = 1,
                           .head_dim_k = 8,
                           .head_dim_v = 8,
                           .dtype = CLATTN_F32,
                           .params = &p};
  clattn_status st = clattn_decode(ctx, &dd, dq, dk, dk, dl, dout, NULL);
  cr_assert(st == CLATTN_OK || st == CLATTN_ERR_INVALID_ARG ||
                st == CLATTN_ERR_UNSUPPORTED,
            "%s: %s", text, clattn_ctx_errmsg(ctx));
  if (st != CLATTN_OK) {
    snprintf(why, cap, "%s", clattn_ctx_errmsg(ctx));
    cr_expect(tu_untouched(ctx, dout, 8 * 4, 0xff),
              "%s: refused call wrote its output", text);
  } else {
    clattn_choice c = {.size = sizeof c};
    cr_assert_eq(clattn_ctx_last_choice(ctx, &c), CLATTN_OK);
    cr_expect(strstr(c.resolved, "variant=3") != NULL, "%s resolved as %s",
              text, c.resolved);
  }
  tu_release(dk);
  tu_release(dq);
  tu_release(dl);
  tu_release(dout);
  clattn_ctx_destroy(ctx);
  return st == CLATTN_OK;
}

ParameterizedTestParameters(decode, subgroup_against_reference) {
  static int idx[N_SG_CASES * N_SG_SIZES];
  int n = 0;
  for (int i = 0; i < N_SG_CASES; i++)
    if (!tu_subset("small") || sg_cases[i].small)
      for (int j = 0; j < N_SG_SIZES; j++)
        idx[n++] = i * N_SG_SIZES + j;
  return cr_make_param_array(int, idx, (size_t)n);
}

ParameterizedTest(int *i, decode, subgroup_against_reference, .timeout = 300) {
  if (!tu_has_subgroups())
    cr_skip_test("device has no subgroups");
  ocase oc = sg_cases[*i / N_SG_SIZES];
  const int sg = sg_sizes[*i % N_SG_SIZES];
  char text[64], why[512] = "";
  if (sg)
    snprintf(text, sizeof text, "variant=3 sg=%d", sg);
  else
    snprintf(text, sizeof text, "variant=3");
  /* only a size the device does not list may be refused, by name */
  const int runs = sg_size_runs(text, why, sizeof why);
  if (!tu_sg_offered(sg)) {
    cr_assert(!runs, "sg=%d, which the device does not list, ran", sg);
    cr_assert(strstr(why, "sg") != NULL, "refused without naming sg: %s", why);
    cr_skip_test("sg=%d not offered by the device", sg);
  }
  cr_assert(runs, "%s, which the device offers, refused: %s", text, why);
  oc.params.text = text;
  cr_log_info("%s, %s", oc.name, text);
  run_opt_case(&oc, 9300u + (unsigned)*i);
}

/* Variant 3 on a device without subgroups: CLATTN_ERR_UNSUPPORTED naming
 * the extension, nothing written, never a build failure; the automatic
 * choice and the tuning space never pick it there. */
Test(decode, subgroup_refused) {
  if (tu_has_subgroups())
    cr_skip_test("device has subgroups: the refusal needs one without");
  char why[512] = "";
  cr_assert(!sg_size_runs("variant=3", why, sizeof why));
  cr_expect(strstr(why, "cl_khr_subgroups") != NULL, "message: %s", why);
  cr_assert(!sg_size_runs("variant=3 sg=16", why, sizeof why));
  cr_expect(strstr(why, "cl_khr_subgroups") != NULL, "message: %s", why);
}
