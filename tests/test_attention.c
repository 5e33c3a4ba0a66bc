/* test_attention.c - clattn_attention against ref_attention.
 *
 * The sweep is a deterministic sampled cross-product: case c takes, for each
 * axis with K values, value (c + off(c / K)) % K where off() is a hash of
 * the block number.  So every block of K consecutive cases visits every
 * value of that axis once (full per-axis coverage as soon as there are at
 * least as many cases as the largest axis has values), while the hashed
 * offsets and the differing axis lengths mix the combinations.  The axes
 * that select a compiled program (head dims, dtype, causal, params) are
 * drawn together from 24 configurations (see config_of) to bound the
 * number of cold kernel compiles.  The test `sweep.coverage` asserts that
 * every value of every axis occurs.
 * A few hand-written cases follow the sampled ones: a sequence with
 * kv_lens = 0, causal rows that see no key (n > L), MQA with padding.
 *
 * CLATTN_TEST_SUBSET=small replaces the sweep by a handful of small shapes
 * (still both kernel variants, f32 and f16, causal and padded) for slow
 * devices and simulators (tests/oclgrind.sh, tests/rusticl.sh).
 */
#include "util.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- the axes */

static const int ax_b[] = {1, 3};
static const int ax_n[] = {1, 17, 64, 129, 300};
static const int ax_m[] = {1, 17, 64, 129, 300};
static const int ax_heads[][2] = {{1, 1}, {4, 4}, {8, 1}, {8, 2}};
/* (dk, dv): every value of {16, 64, 80, 128} for both, equal and unequal;
 * and {12, 20}, multiples of 4 but not of 8 (narrower vectors) */
static const int ax_dims[][2] = {{16, 16},   {64, 64},  {80, 80},
                                 {128, 128}, {16, 128}, {128, 64},
                                 {64, 80},   {80, 16},  {12, 20}};
static const int ax_causal[] = {0, 1};
/* kv_lens: 0 none, 1 random in [0, m], 2 one sequence 0 and the rest
 * random, 3 all m-1 .. padded by one */
static const int ax_lens[] = {0, 1, 2, 3};
static const int ax_layout[] = {0, 1};
static const clattn_dtype ax_dtype[] = {CLATTN_F32, CLATTN_F16, CLATTN_BF16};

/* Kernel parameters; index 0 is "params = NULL" (automatic). */
static const clattn_params ax_params[] = {
    {.size = sizeof(clattn_params)}, /* NULL */
    {.size = sizeof(clattn_params), .variant = 1}, /* variant 1, automatic shape */
    {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 32}, /* variant 1, 4 rows x 32 keys */
    {.size = sizeof(clattn_params), .variant = 1, .rows = 8, .keys = 16}, /* variant 1, 8 rows x 16 keys */
    {.size = sizeof(clattn_params), .variant = 1, .rows = 1, .keys = 64}, /* variant 1, 1 row x 64 keys */
    {.size = sizeof(clattn_params), .variant = 1, .rows = 2, .keys = 16, .wg = 4}, /* variant 1, 2 rows x 16 keys, work-groups of 4 */
    {.size = sizeof(clattn_params), .variant = 2}, /* variant 2, automatic shape */
    {.size = sizeof(clattn_params), .variant = 2, .keys = 32, .wg = 64}, /* variant 2, 64 items, 32-key tiles */
    {.size = sizeof(clattn_params), .variant = 2, .keys = 16, .wg = 128}, /* variant 2, 128 items, 16-key tiles */
    {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 256}, /* variant 2, 256 items, 8-key tiles */
    {.size = sizeof(clattn_params), .variant = 1, .rows = 8, .keys = 32}, /* variant 1, 8 rows x 32 keys (AVX-512's) */
};

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

enum {
  AX_B,
  AX_N,
  AX_M,
  AX_HEADS,
  AX_DIMS,
  AX_CAUSAL,
  AX_LENS,
  AX_QL,
  AX_KL,
  AX_DTYPE,
  AX_PARAMS,
  AX_SCALE,
  AX_COUNT
};
static const int ax_count[AX_COUNT] = {
    NELEM(ax_b),      NELEM(ax_n),      NELEM(ax_m),      NELEM(ax_heads),
    NELEM(ax_dims),   NELEM(ax_causal), NELEM(ax_lens),   NELEM(ax_layout),
    NELEM(ax_layout), NELEM(ax_dtype),  NELEM(ax_params), 2};

/* One case: an index into each axis (scale: 0 default, 1 explicit 0.37). */
typedef struct acase {
  int ix[AX_COUNT];
  unsigned seed;
} acase;

#define N_SAMPLED 96

static unsigned hash32(unsigned x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

/* Kernel programs are compiled per (head dims, dtype, causal, params), a
 * cold compile on PoCL costing seconds; so the sampled cases draw these
 * four axes together from N_CONFIGS program configurations (every value of
 * each axis occurs among them) and vary the shape axes freely. */
#define N_CONFIGS 24

static void config_of(int cfg, int *ix) {
  ix[AX_DIMS] = cfg % ax_count[AX_DIMS];
  ix[AX_DTYPE] = cfg % ax_count[AX_DTYPE];
  ix[AX_PARAMS] = (cfg * 7) % ax_count[AX_PARAMS];
  ix[AX_CAUSAL] = (cfg / 3) % ax_count[AX_CAUSAL];
}

static int axis_pick(int c, int ax, int k) {
  unsigned off = hash32((unsigned)(c / k) * 131u + (unsigned)ax * 7919u);
  return (int)(((unsigned)c + off) % (unsigned)k);
}

static acase sampled_case(int c) {
  acase a;
  for (int ax = 0; ax < AX_COUNT; ax++)
    a.ix[ax] = axis_pick(c, ax, ax_count[ax]);
  config_of(axis_pick(c, AX_COUNT, N_CONFIGS), a.ix);
  a.seed = 1000u + (unsigned)c;
  return a;
}

static acase make_case(int b, int n, int m, int heads, int dims, int causal,
                       int lens, int ql, int kl, int dt, int params, int scale,
                       unsigned seed) {
  acase a = {{b, n, m, heads, dims, causal, lens, ql, kl, dt, params, scale},
             seed};
  return a;
}

/* Hand-written cases (indices into the axes). */
static int special_cases(acase *out) {
  int k = 0;
  /* b=3 with a zero-length sequence, causal, n = 64 > some L */
  out[k++] = make_case(1, 2, 3, 3, 1, 1, 2, 0, 1, 0, 2, 0, 9001);
  /* causal with n (129) > m (17): most rows fully masked */
  out[k++] = make_case(0, 3, 1, 1, 0, 1, 0, 1, 0, 0, 7, 0, 9002);
  out[k++] = make_case(1, 3, 1, 2, 2, 1, 3, 0, 0, 1, 1, 1, 9003);
  /* single key, single query, every variant */
  out[k++] = make_case(1, 0, 0, 3, 0, 1, 2, 0, 0, 0, 6, 0, 9004);
  out[k++] = make_case(0, 0, 0, 0, 3, 0, 0, 1, 1, 2, 4, 0, 9005);
  /* non-causal, zero-length sequence, f16, variant 2 256 items */
  out[k++] = make_case(1, 1, 4, 2, 6, 0, 2, 1, 1, 1, 9, 0, 9006);
  /* causal padded with variant-2 64 items, bf16 */
  out[k++] = make_case(1, 2, 2, 1, 7, 1, 1, 0, 1, 2, 7, 1, 9007);
  /* variant 1 with work-groups (padding work-items), GQA, causal */
  out[k++] = make_case(1, 1, 3, 3, 4, 1, 1, 1, 0, 0, 5, 0, 9008);
  return k;
}

/* Small cases for simulators: every variant-1/2 params entry, f32 and f16,
 * causal and padded; n, m <= 17, b <= 3, head dims 16/64/80. */
static int small_cases(acase *out) {
  int k = 0;
  for (int p = 0; p < NELEM(ax_params); p++) {
    int dt = p % 2; /* f32, f16 */
    int causal = (p / 2) % 2;
    int lens = 1 + p % 3; /* padded */
    int heads = p % 4;
    /* (16,16), sometimes (80,16): wide register-blocked programs take a
     * minute to compile on rusticl */
    int dims = (p == 2 || p == 7) ? 7 : 0;
    int n = p % 3 == 0 ? 0 : 1 + p % 2, m = p % 4 == 3 ? 0 : 1 + p % 2;
    out[k++] = make_case(p % 2, n, m, heads, dims, causal, lens, p % 2,
                         (p / 2) % 2, dt, p, p % 2, 500u + (unsigned)p);
  }
  /* a causal row that sees nothing and a zero-length sequence */
  out[k++] = make_case(1, 1, 1, 3, 0, 1, 2, 0, 0, 0, 7, 0, 600);
  out[k++] = make_case(1, 1, 1, 3, 0, 1, 2, 1, 1, 1, 2, 0, 601);
  return k;
}

#define MAX_CASES (N_SAMPLED + 64)

static int all_cases(acase *out) {
  if (tu_subset("small"))
    return small_cases(out);
  int k = 0;
  for (int c = 0; c < N_SAMPLED; c++)
    out[k++] = sampled_case(c);
  k += special_cases(out + k);
  return k;
}

/* -------------------------------------------------------- running a case */

typedef struct shape {
  int b, n, m, hq, hkv, dk, dv, causal, lens_mode, ql, kl;
  clattn_dtype dt;
  const clattn_params *params;
  float scale;
} shape;

static shape shape_of(const acase *a) {
  shape s;
  s.b = ax_b[a->ix[AX_B]];
  s.n = ax_n[a->ix[AX_N]];
  s.m = ax_m[a->ix[AX_M]];
  s.hq = ax_heads[a->ix[AX_HEADS]][0];
  s.hkv = ax_heads[a->ix[AX_HEADS]][1];
  s.dk = ax_dims[a->ix[AX_DIMS]][0];
  s.dv = ax_dims[a->ix[AX_DIMS]][1];
  s.causal = ax_causal[a->ix[AX_CAUSAL]];
  s.lens_mode = ax_lens[a->ix[AX_LENS]];
  s.ql = ax_layout[a->ix[AX_QL]];
  s.kl = ax_layout[a->ix[AX_KL]];
  s.dt = ax_dtype[a->ix[AX_DTYPE]];
  s.params = a->ix[AX_PARAMS] == 0 ? NULL : &ax_params[a->ix[AX_PARAMS]];
  s.scale = a->ix[AX_SCALE] ? 0.37f : 0.0f;
  if (tu_subset("small")) { /* shrink to simulator sizes */
    if (s.n > 17)
      s.n = 17;
    if (s.m > 17)
      s.m = 17;
  }
  return s;
}

static void describe(const shape *s, char *buf, size_t cap) {
  snprintf(buf, cap,
           "b=%d n=%d m=%d hq=%d hkv=%d dk=%d dv=%d causal=%d lens=%d "
           "q_layout=%d kv_layout=%d dtype=%s params=%s{%d,%d,%d,%d} "
           "scale=%g",
           s->b, s->n, s->m, s->hq, s->hkv, s->dk, s->dv, s->causal,
           s->lens_mode, s->ql, s->kl, tu_dtype_name(s->dt),
           s->params ? "" : "NULL", s->params ? s->params->variant : 0,
           s->params ? s->params->rows : 0, s->params ? s->params->keys : 0,
           s->params ? s->params->wg : 0, (double)s->scale);
}

/* Number of keys query i of a sequence with L valid keys sees. */
static int visible(int L, int n, int i, int causal) {
  if (!causal)
    return L;
  int v = L - n + i + 1;
  return v < 0 ? 0 : (v > L ? L : v);
}

/* Run one case; `nan_pad` fills keys/values at t >= L with NaN (they must
 * never be read).  Returns through Criterion assertions. */
static void run_case(const shape *s, unsigned seed, int nan_pad) {
  char what[512];
  describe(s, what, sizeof what);
  cr_log_info("%s", what);
  tu_rng rng = tu_rng_seed(seed);
  size_t nq = (size_t)s->b * s->n * s->hq * s->dk;
  size_t nk = (size_t)s->b * s->m * s->hkv * s->dk;
  size_t nv = (size_t)s->b * s->m * s->hkv * s->dv;
  size_t no = (size_t)s->b * s->n * s->hq * s->dv;
  float *q = tu_alloc(nq * sizeof(float));
  float *k = tu_alloc(nk * sizeof(float));
  float *v = tu_alloc(nv * sizeof(float));
  float *o = tu_alloc(no * sizeof(float));
  float *oref = tu_alloc(no * sizeof(float));
  int *lens = tu_alloc((size_t)s->b * sizeof(int));
  /* logits of O(1..3): q and k scaled so the softmax is neither flat nor a
   * one-hot (|q.k| * scale up to ~ a few) */
  tu_fill(&rng, q, nq, 1.0f);
  tu_fill(&rng, k, nk, 1.0f);
  tu_fill(&rng, v, nv, 1.0f);
  tu_round(q, nq, s->dt);
  tu_round(k, nk, s->dt);
  tu_round(v, nv, s->dt);
  for (int bi = 0; bi < s->b; bi++) {
    switch (s->lens_mode) {
    case 1:
      lens[bi] = tu_randint(&rng, s->m + 1);
      break;
    case 2:
      lens[bi] = bi == s->b / 2 ? 0 : tu_randint(&rng, s->m + 1);
      break;
    case 3:
      lens[bi] = s->m - 1;
      break;
    default:
      lens[bi] = s->m;
    }
  }
  if (s->lens_mode == 1 && s->b > 1)
    lens[s->b - 1] = s->m + 5; /* clamped to m */
  if (nan_pad) {
    for (int bi = 0; bi < s->b; bi++) {
      int L = s->lens_mode ? lens[bi] : s->m;
      L = L < 0 ? 0 : (L > s->m ? s->m : L);
      for (int t = L; t < s->m; t++)
        for (int h = 0; h < s->hkv; h++) {
          for (int d = 0; d < s->dk; d++)
            k[ref_index(s->kl, s->m, s->hkv, s->dk, bi, t, h, d)] = NAN;
          for (int d = 0; d < s->dv; d++)
            v[ref_index(s->kl, s->m, s->hkv, s->dv, bi, t, h, d)] = NAN;
        }
    }
  }

  ref_attn ra = {.b = s->b,
                 .n = s->n,
                 .m = s->m,
                 .hq = s->hq,
                 .hkv = s->hkv,
                 .dk = s->dk,
                 .dv = s->dv,
                 .q_layout = s->ql,
                 .kv_layout = s->kl,
                 .scale = s->scale != 0.0f ? (double)s->scale
                                           : 1.0 / sqrt((double)s->dk),
                 .causal = s->causal,
                 .kv_lens = s->lens_mode ? lens : NULL};
  ref_attention(&ra, q, k, v, oref);

  clattn_ctx *ctx = tu_ctx();
  cl_mem dq = tu_upload(ctx, q, nq, s->dt);
  cl_mem dk = tu_upload(ctx, k, nk, s->dt);
  cl_mem dv = tu_upload(ctx, v, nv, s->dt);
  cl_mem dl = s->lens_mode ? tu_upload_int(ctx, lens, (size_t)s->b) : NULL;
  cl_mem dout = tu_sentinel(ctx, no, s->dt, 0xff); /* NaN: must be written */
  clattn_attn_desc d = {.size = sizeof(clattn_attn_desc),
                        .batch = s->b,
                        .n_q = s->n,
                        .n_kv = s->m,
                        .heads_q = s->hq,
                        .heads_kv = s->hkv,
                        .head_dim_k = s->dk,
                        .head_dim_v = s->dv,
                        .dtype = s->dt,
                        .q_layout = (clattn_layout)s->ql,
                        .kv_layout = (clattn_layout)s->kl,
                        .scale = s->scale,
                        .causal = s->causal,
                        .params = s->params};
  clattn_status st = clattn_attention(ctx, &d, dq, dk, dv, dl, dout, NULL);
  /* a device that cannot run an explicitly requested work-group size must
   * refuse it cleanly: CLATTN_ERR_UNSUPPORTED and nothing written */
  int skipped = tu_unsupported_ok(ctx, st, s->params);
  if (skipped) {
    cr_assert(tu_untouched(ctx, dout, no * clattn_dtype_size(s->dt), 0xff),
              "%s: refused call wrote its output", what);
    goto done;
  }
  cr_assert(st == CLATTN_OK, "%s: clattn_attention -> %d (%s): %s", what,
            (int)st, clattn_status_str(st), clattn_ctx_errmsg(ctx));
  tu_download(ctx, dout, o, no, s->dt);

  tu_check(what, o, oref, no, clattn__tolerance(s->dt));
  /* rows that see no key: exact zeros (and the reference agrees) */
  size_t masked_rows = 0, bad = 0;
  for (int bi = 0; bi < s->b; bi++) {
    int L = s->lens_mode ? lens[bi] : s->m;
    L = L < 0 ? 0 : (L > s->m ? s->m : L);
    for (int i = 0; i < s->n; i++) {
      if (visible(L, s->n, i, s->causal) != 0)
        continue;
      for (int h = 0; h < s->hq; h++) {
        masked_rows++;
        for (int e = 0; e < s->dv; e++) {
          size_t ix = ref_index(s->ql, s->n, s->hq, s->dv, bi, i, h, e);
          cr_assert(oref[ix] == 0.0f, "reference not zero on masked row");
          if (o[ix] != 0.0f && bad++ == 0)
            cr_expect(0,
                      "%s: fully masked row b=%d i=%d h=%d d=%d gives %g "
                      "(want exactly 0)",
                      what, bi, i, h, e, (double)o[ix]);
        }
      }
    }
  }
  cr_log_info("%s: %zu fully masked rows, %zu nonzero elements in them", what,
              masked_rows, bad);

done:
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
  free(lens);
}

/* ------------------------------------------------------------ the tests */

ParameterizedTestParameters(sweep, case) {
  acase *tmp = malloc(sizeof(acase) * MAX_CASES);
  int n = all_cases(tmp);
  return cr_make_param_array(
      acase, tu_param_copy(tmp, (size_t)n, sizeof(acase)), (size_t)n, NULL);
}

ParameterizedTest(acase *a, sweep, case, .timeout = 300) {
  shape s = shape_of(a);
  run_case(&s, a->seed, 0);
}

/* Every value of every axis occurs in the full sweep, and the hand-written
 * cases really contain a zero-length sequence and fully masked causal rows
 * (checked on the shapes, which is what run_case derives them from). */
Test(sweep, coverage) {
  acase *c = tu_alloc(sizeof(acase) * MAX_CASES);
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
  int zero_len = 0, masked_causal = 0, nonnull_params = 0;
  for (int i = 0; i < n; i++) {
    shape s = shape_of(&c[i]);
    zero_len += s.lens_mode == 2;
    masked_causal += s.causal && s.n > s.m;
    nonnull_params += s.params != NULL;
  }
  cr_expect(zero_len > 0 && masked_causal > 0 && nonnull_params > n / 2,
            "zero_len=%d masked_causal=%d nonnull=%d", zero_len, masked_causal,
            nonnull_params);
  free(c);
}

/* Keys and values past kv_lens hold NaN: they must not influence anything,
 * for both kernel variants and the automatic choice. */
Test(attention, nan_padding_ignored, .timeout = 300) {
  static const clattn_params v1 = {.size = sizeof(clattn_params), .variant = 1},
                             v2 = {.size = sizeof(clattn_params), .variant = 2};
  const clattn_params *ps[3] = {NULL, &v1, &v2};
  for (int i = 0; i < 3; i++) {
    for (int causal = 0; causal < 2; causal++) {
      shape s = {.b = 3,
                 .n = 17,
                 .m = 64,
                 .hq = 4,
                 .hkv = 2,
                 .dk = 16,
                 .dv = 16,
                 .causal = causal,
                 .lens_mode = 1,
                 .ql = 0,
                 .kl = i == 2,
                 .dt = CLATTN_F32,
                 .params = ps[i],
                 .scale = 0.0f};
      if (tu_subset("small"))
        s.m = 17;
      run_case(&s, 77u + (unsigned)i, 1);
    }
  }
}

/* The same inputs give bit-identical outputs on repeated calls, and the
 * output does not depend on the initial contents of o. */
Test(attention, deterministic, .timeout = 120) {
  clattn_ctx *ctx = tu_ctx();
  int b = 2, n = 17, m = 40, h = 4, d = tu_subset("small") ? 16 : 64;
  size_t nq = (size_t)b * n * h * d, nk = (size_t)b * m * h * d;
  float *q = tu_alloc(nq * 4), *k = tu_alloc(nk * 4), *v = tu_alloc(nk * 4);
  float *o1 = tu_alloc(nq * 4), *o2 = tu_alloc(nq * 4);
  tu_rng r = tu_rng_seed(5);
  tu_fill(&r, q, nq, 1);
  tu_fill(&r, k, nk, 1);
  tu_fill(&r, v, nk, 1);
  cl_mem dq = tu_upload(ctx, q, nq, CLATTN_F32);
  cl_mem dk = tu_upload(ctx, k, nk, CLATTN_F32);
  cl_mem dv = tu_upload(ctx, v, nk, CLATTN_F32);
  cl_mem da = tu_sentinel(ctx, nq, CLATTN_F32, 0xff);
  cl_mem db = tu_sentinel(ctx, nq, CLATTN_F32, 0x00);
  clattn_attn_desc desc = {.size = sizeof(clattn_attn_desc),
                           .batch = b,
                           .n_q = n,
                           .n_kv = m,
                           .heads_q = h,
                           .heads_kv = h,
                           .head_dim_k = d,
                           .head_dim_v = d,
                           .dtype = CLATTN_F32,
                           .causal = 1};
  cr_assert_eq(clattn_attention(ctx, &desc, dq, dk, dv, NULL, da, NULL),
               CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  cr_assert_eq(clattn_attention(ctx, &desc, dq, dk, dv, NULL, db, NULL),
               CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  tu_download(ctx, da, o1, nq, CLATTN_F32);
  tu_download(ctx, db, o2, nq, CLATTN_F32);
  cr_expect(memcmp(o1, o2, nq * 4) == 0, "two identical calls differ");
  tu_release(dq);
  tu_release(dk);
  tu_release(dv);
  tu_release(da);
  tu_release(db);
  clattn_ctx_destroy(ctx);
  free(q);
  free(k);
  free(v);
  free(o1);
  free(o2);
}

/* -------------------------------------- variant 3 (subgroups, attn_fwd_sg)
 *
 * Against ref_attention with the attention options: shapes that divide no
 * subgroup or row block (sequence lengths, head dims), f32, f16 and bf16,
 * MHA, GQA and MQA, causal or not, per-sequence lengths (one of none),
 * rows 3 and 8 (the default) a work-group, for the device's own subgroup
 * size (sg=0) and each size of 8, 16, 32, 64 the device offers a kernel
 * to require; outputs poisoned (NaN) first.  A device without subgroups
 * skips each (attention.subgroup_refused checks the refusal there); a size
 * the device does not offer is a skip of its own. */
typedef struct sgcase {
  const char *name;
  clattn_dtype dt;
  int b, n, m, hq, hkv, dk, dv, causal, window;
  float softcap;
  int alibi, sinks, rows;
} sgcase;

/* clang-format off */
static const sgcase sg_cases[] = {
    {"f32 MHA", CLATTN_F32, 2, 17, 17, 4, 4, 64, 64, 0, 0, 0.0f, 0, 0, 0},
    {"f16 GQA causal window", CLATTN_F16, 2, 37, 129, 8, 2, 40, 24, 1, 20,
     0.0f, 0, 0, 3},
    {"bf16 MQA causal", CLATTN_BF16, 1, 29, 300, 8, 1, 72, 72, 1, 0, 0.0f, 0,
     0, 0},
    {"f32 G=3 all options", CLATTN_F32, 3, 19, 45, 6, 2, 12, 20, 1, 7, 2.0f,
     1, 1, 0},
    {"f32 dk=128 dv=264 softcap alibi", CLATTN_F32, 1, 9, 70, 2, 1, 128, 264,
     0, 0, 1.0f, 1, 0, 3},
    {"f16 sinks window", CLATTN_F16, 2, 64, 64, 4, 4, 16, 16, 0, 5, 0.0f, 0,
     1, 0},
};
/* clang-format on */
enum { N_SG_CASES = sizeof sg_cases / sizeof sg_cases[0] };
static const int sg_sizes[] = {0, 8, 16, 32, 64};
enum { N_SG_SIZES = sizeof sg_sizes / sizeof sg_sizes[0] };

/* Run c with params text; returns the status (anything but OK leaves the
 * poisoned output untouched, checked here), comparing with the reference
 * when it ran. */
static clattn_status run_sg_case(const sgcase *c, const char *text,
                                 unsigned seed, char *why, size_t cap) {
  const size_t nq = (size_t)c->b * c->n * c->hq * c->dk;
  const size_t nk = (size_t)c->b * c->m * c->hkv * c->dk;
  const size_t nv = (size_t)c->b * c->m * c->hkv * c->dv;
  const size_t no = (size_t)c->b * c->n * c->hq * c->dv;
  float *q = tu_alloc(nq * 4), *k = tu_alloc(nk * 4), *v = tu_alloc(nv * 4);
  float *o = tu_alloc(no * 4), *oref = tu_alloc(no * 4);
  float slopes[16], sinks[16];
  for (int j = 0; j < c->hq; j++) {
    slopes[j] = powf(2.0f, -8.0f * (float)(j + 1) / (float)c->hq);
    sinks[j] = j == 1 ? -INFINITY : 0.5f * (float)((j % 5) - 2);
  }
  int lens[3];
  for (int bi = 0; bi < c->b; bi++)
    lens[bi] = bi == 0 ? c->m : bi == 1 ? 0 : c->m / 2 + 1;
  tu_rng rng = tu_rng_seed(seed);
  tu_fill(&rng, q, nq, 2.0f);
  tu_fill(&rng, k, nk, 1.0f);
  tu_fill(&rng, v, nv, 1.0f);
  tu_round(q, nq, c->dt);
  tu_round(k, nk, c->dt);
  tu_round(v, nv, c->dt);
  clattn_ctx *ctx = tu_ctx();
  cl_mem dq = tu_upload(ctx, q, nq, c->dt), dk = tu_upload(ctx, k, nk, c->dt);
  cl_mem dv = tu_upload(ctx, v, nv, c->dt);
  cl_mem dl = tu_upload_int(ctx, lens, (size_t)c->b);
  const size_t ob = no * clattn_dtype_size(c->dt);
  cl_mem dout = tu_sentinel(ctx, no, c->dt, 0xff);
  clattn_params p = {.size = sizeof p, .text = text, .rows = c->rows};
  clattn_attn_desc d = {.size = sizeof d,
                        .batch = c->b,
                        .n_q = c->n,
                        .n_kv = c->m,
                        .heads_q = c->hq,
                        .heads_kv = c->hkv,
                        .head_dim_k = c->dk,
                        .head_dim_v = c->dv,
                        .dtype = c->dt,
                        .causal = c->causal,
                        .params = &p,
                        .window = c->window,
                        .softcap = c->softcap,
                        .alibi_slopes = c->alibi ? slopes : NULL,
                        .sinks = c->sinks ? sinks : NULL};
  char what[256];
  snprintf(what, sizeof what, "%s, %s rows=%d", c->name, text, c->rows);
  clattn_status st = clattn_attention(ctx, &d, dq, dk, dv, dl, dout, NULL);
  if (st != CLATTN_OK) {
    snprintf(why, cap, "%s", clattn_ctx_errmsg(ctx));
    cr_expect(tu_untouched(ctx, dout, ob, 0xff),
              "%s: refused call wrote its output", what);
  } else {
    clattn_choice ch = {.size = sizeof ch};
    cr_assert_eq(clattn_ctx_last_choice(ctx, &ch), CLATTN_OK);
    cr_expect(strstr(ch.resolved, "variant=3") != NULL, "%s resolved as %s",
              what, ch.resolved);
    tu_download(ctx, dout, o, no, c->dt);
    const ref_attn ra = {
        .b = c->b,
        .n = c->n,
        .m = c->m,
        .hq = c->hq,
        .hkv = c->hkv,
        .dk = c->dk,
        .dv = c->dv,
        .scale = 1.0 / sqrt((double)c->dk),
        .causal = c->causal,
        .kv_lens = lens,
        .opts = {c->window, c->softcap, d.alibi_slopes, d.sinks}};
    ref_attention(&ra, q, k, v, oref);
    tu_check(what, o, oref, no, clattn__tolerance(c->dt));
  }
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
  return st;
}

ParameterizedTestParameters(attention, subgroup_against_reference) {
  static int idx[N_SG_CASES * N_SG_SIZES];
  int n = 0;
  for (int i = 0; i < N_SG_CASES; i++)
    for (int j = 0; j < N_SG_SIZES; j++)
      if (!tu_subset("small") || i == 0)
        idx[n++] = i * N_SG_SIZES + j;
  return cr_make_param_array(int, idx, (size_t)n);
}

ParameterizedTest(int *i, attention, subgroup_against_reference,
                  .timeout = 300) {
  if (!tu_has_subgroups())
    cr_skip_test("device has no subgroups");
  const sgcase *c = &sg_cases[*i / N_SG_SIZES];
  const int sg = sg_sizes[*i % N_SG_SIZES];
  char text[64], why[512] = "";
  if (sg)
    snprintf(text, sizeof text, "variant=3 sg=%d", sg);
  else
    snprintf(text, sizeof text, "variant=3");
  clattn_status st =
      run_sg_case(c, text, 9500u + (unsigned)*i, why, sizeof why);
  /* only a size the device does not list may be refused, by name */
  if (!tu_sg_offered(sg)) {
    cr_assert(st == CLATTN_ERR_INVALID_ARG || st == CLATTN_ERR_UNSUPPORTED,
              "%s, %s: sg=%d, which the device does not list, gave %s: %s",
              c->name, text, sg, clattn_status_str(st), why);
    cr_assert(strstr(why, "sg") != NULL, "refused without naming sg: %s", why);
    cr_skip_test("sg=%d not offered by the device", sg);
  }
  cr_assert_eq(st, CLATTN_OK, "%s, %s, which the device offers: %s", c->name,
               text, why);
}

/* Variant 3 on a device without subgroups: CLATTN_ERR_UNSUPPORTED naming
 * the extension, nothing written, never a build failure. */
Test(attention, subgroup_refused) {
  if (tu_has_subgroups())
    cr_skip_test("device has subgroups: the refusal needs one without");
  char why[512] = "";
  for (int sg = 0; sg <= 16; sg += 16) {
    char text[64];
    snprintf(text, sizeof text, sg ? "variant=3 sg=%d" : "variant=3", sg);
    cr_assert_eq(run_sg_case(&sg_cases[0], text, 1, why, sizeof why),
                 CLATTN_ERR_UNSUPPORTED, "%s: %s", text, why);
    cr_expect(strstr(why, "cl_khr_subgroups") != NULL, "message: %s", why);
  }
}
