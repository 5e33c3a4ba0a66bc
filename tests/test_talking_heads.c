/* test_talking_heads.c - clattn_talking_heads against ref_talking_heads.
 *
 * Hand-picked cases: sizes that divide no tile, h_k != h != h_v, h = 1,
 * 8/8/8, causal with n != m, padded kv_lens with a fully masked sequence
 * (kv_lens 0), every dtype, BSHD and BHSD, both variants x schemes 1 and
 * 2 and variant 1 x scheme 3 (logits in local memory, also with several
 * work-items a group, and for only some of the keys where the local memory
 * holds fewer) forced through params.  Also: with h_k = h = h_v and
 * P_l = P_w = I the result equals clattn_attention (MHA), and misuse gets
 * its status.
 *
 * The window (the one attention option the family takes): each variant
 * and scheme with windows smaller than, equal to and larger than a key
 * tile and the sequence, with kv_lens (a sequence of 0 keys among them),
 * causal and not, f32 and f16, one program a configuration (the window is
 * an argument); the other options refused, naming them.  Not in the small
 * subset: the simulators build no new program.
 *
 * CLATTN_TEST_SUBSET=small keeps a few small cases (both variants, every
 * scheme, f32/f16/bf16, causal, padded) for simulators (tests/oclgrind.sh,
 * tests/rusticl.sh). */
#include "reference/ref_th.h"
#include "util.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct th_case {
  int b, n, m, hk, h, hv, dk, dv, causal;
  int lens;   /* 0 none, 1 padded with one sequence of 0 keys */
  int ql, kl; /* layouts */
  clattn_dtype dt;
  clattn_params p; /* all zero: params NULL */
  int small;       /* in the simulators' subset */
} th_case;

#define F32 CLATTN_F32
#define F16 CLATTN_F16
#define BF16 CLATTN_BF16

static const th_case cases[] = {
    /* b  n   m hk  h hv  dk  dv  c lens ql kl dt   params             small */
    {2,
     19,
     45,
     3,
     5,
     2,
     16,
     24,
     0,
     0,
     0,
     0,
     F32,
     {.size = sizeof(clattn_params), .variant = 1, .scheme = 2},
     1},
    {2,
     19,
     45,
     3,
     5,
     2,
     16,
     24,
     1,
     1,
     0,
     0,
     F32,
     {.size = sizeof(clattn_params), .variant = 1, .scheme = 1},
     1},
    {2,
     19,
     45,
     3,
     5,
     2,
     16,
     24,
     1,
     1,
     1,
     0,
     BF16,
     {.size = sizeof(clattn_params), .variant = 1, .scheme = 3},
     0},
    {1,
     21,
     50,
     2,
     3,
     4,
     8,
     16,
     0,
     0,
     0,
     1,
     F32,
     {.size = sizeof(clattn_params), .variant = 1, .rows = 2, .keys = 16, .wg = 4, .scheme = 3},
     0},
    {2,
     13,
     30,
     3,
     5,
     2,
     16,
     8,
     1,
     1,
     1,
     1,
     F16,
     {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 16, .scheme = 2},
     1},
    {1,
     9,
     17,
     2,
     1,
     3,
     8,
     12,
     0,
     1,
     0,
     1,
     F32,
     {.size = sizeof(clattn_params), .variant = 2, .keys = 4, .wg = 8, .scheme = 1},
     1},
    {2,
     33,
     70,
     3,
     5,
     2,
     64,
     64,
     1,
     1,
     0,
     0,
     F32,
     {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 32, .scheme = 2},
     0},
    {2,
     33,
     70,
     3,
     5,
     2,
     64,
     64,
     0,
     1,
     1,
     0,
     F16,
     {.size = sizeof(clattn_params), .variant = 1, .rows = 2, .keys = 16, .scheme = 1},
     0},
    {2,
     33,
     70,
     3,
     5,
     2,
     64,
     64,
     1,
     1,
     0,
     1,
     F16,
     {.size = sizeof(clattn_params), .variant = 1, .rows = 8, .keys = 32, .scheme = 3},
     0},
    {2,
     65,
     65,
     2,
     3,
     5,
     12,
     20,
     1,
     0,
     1,
     1,
     F32,
     {.size = sizeof(clattn_params), .variant = 1, .rows = 16, .keys = 64, .scheme = 3},
     0},
    /* scheme 3 keeping part of the keys' logits: 32 x 32 x 600 floats pass
     * 2 MiB (PoCL), 2 items x 2 x 4 x 1600 pass Oclgrind's 48 KiB; the
     * simulators' one scheme 3 case (few positions and logit heads:
     * llvmpipe takes minutes to compile a talking-heads program) */
    {1,
     40,
     600,
     2,
     32,
     2,
     8,
     8,
     1,
     1,
     0,
     0,
     F32,
     {.size = sizeof(clattn_params), .variant = 1, .rows = 32, .keys = 16, .scheme = 3},
     0},
    {2,
     9,
     1600,
     2,
     4,
     2,
     8,
     8,
     1,
     1,
     0,
     1,
     F16,
     {.size = sizeof(clattn_params), .variant = 1, .rows = 2, .keys = 16, .wg = 2, .scheme = 3},
     1},
    {1,
     40,
     40,
     8,
     8,
     8,
     64,
     64,
     1,
     0,
     0,
     0,
     BF16,
     {.size = sizeof(clattn_params)},
     0},
    {3,
     17,
     129,
     8,
     8,
     8,
     32,
     32,
     0,
     1,
     1,
     1,
     F32,
     {.size = sizeof(clattn_params), .variant = 2, .keys = 16, .wg = 32, .scheme = 2},
     0},
    {2,
     50,
     21,
     4,
     1,
     4,
     80,
     16,
     1,
     1,
     0,
     0,
     F32,
     {.size = sizeof(clattn_params)},
     0},
    {2,
     50,
     21,
     4,
     1,
     4,
     80,
     16,
     1,
     0,
     1,
     0,
     BF16,
     {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 64, .scheme = 1},
     0},
    {1,
     7,
     100,
     1,
     1,
     1,
     16,
     16,
     0,
     0,
     0,
     1,
     F16,
     {.size = sizeof(clattn_params), .variant = 1, .rows = 1, .keys = 64, .scheme = 2},
     0},
    {2,
     65,
     65,
     2,
     3,
     5,
     12,
     20,
     1,
     1,
     1,
     1,
     F32,
     {.size = sizeof(clattn_params), .variant = 1, .rows = 8, .keys = 16, .scheme = 1},
     0},
    {2,
     65,
     65,
     2,
     3,
     5,
     12,
     20,
     0,
     0,
     0,
     0,
     F32,
     {.size = sizeof(clattn_params), .variant = 2, .keys = 32, .wg = 64, .scheme = 2},
     0},
    /* variant 2 with heads_k x head_dim >= 384 (every head of a key tile in
     * local memory, 2 * 512 floats of q rows and accumulators an item), the
     * shapes llvmpipe gets wrong (tests/rusticl.sh), and a key range long
     * enough that every item runs tens of thousands of loop iterations */
    {2,
     19,
     45,
     8,
     8,
     8,
     64,
     64,
     0,
     1,
     0,
     0,
     F32,
     {.size = sizeof(clattn_params), .variant = 2, .keys = 4, .wg = 32, .scheme = 2},
     0},
    {1,
     21,
     300,
     6,
     6,
     6,
     64,
     64,
     1,
     0,
     1,
     1,
     F16,
     {.size = sizeof(clattn_params), .variant = 2, .keys = 4, .wg = 32, .scheme = 1},
     0},
};

enum { NCASES = (int)(sizeof cases / sizeof cases[0]) };

static void describe(const th_case *c, char *buf, size_t cap) {
  snprintf(buf, cap,
           "b=%d n=%d m=%d hk=%d h=%d hv=%d dk=%d dv=%d causal=%d lens=%d "
           "layouts=%d/%d %s params={%d,%d,%d,%d,scheme %d}",
           c->b, c->n, c->m, c->hk, c->h, c->hv, c->dk, c->dv, c->causal,
           c->lens, c->ql, c->kl, tu_dtype_name(c->dt), c->p.variant, c->p.rows,
           c->p.keys, c->p.wg, c->p.scheme);
}

static int has_params(const clattn_params *p) {
  return p->variant || p->rows || p->keys || p->wg || p->scheme;
}

static void run_case(const th_case *c, int window, unsigned seed) {
  char what[280];
  describe(c, what, sizeof what);
  if (window > 0) {
    const size_t len = strlen(what);
    snprintf(what + len, sizeof what - len, " window=%d", window);
  }
  cr_log_info("%s", what);
  tu_rng rng = tu_rng_seed(seed);
  const size_t nq = (size_t)c->b * c->n * c->hk * c->dk;
  const size_t nk = (size_t)c->b * c->m * c->hk * c->dk;
  const size_t nv = (size_t)c->b * c->m * c->hv * c->dv;
  const size_t no = (size_t)c->b * c->n * c->hv * c->dv;
  const size_t npl = (size_t)c->hk * c->h, npw = (size_t)c->h * c->hv;
  float *q = tu_alloc(nq * 4), *k = tu_alloc(nk * 4), *v = tu_alloc(nv * 4);
  float *pl = tu_alloc(npl * 4), *pw = tu_alloc(npw * 4);
  float *o = tu_alloc(no * 4), *oref = tu_alloc(no * 4);
  int *lens = tu_alloc((size_t)c->b * sizeof(int));
  tu_fill_th(&rng, c->dt, q, nq, k, nk, v, nv, pl, npl, pw, npw);
  for (int i = 0; i < c->b; i++)
    lens[i] = i == 0 && c->b > 1 ? 0 : 1 + tu_randint(&rng, c->m);
  const ref_th ra = {c->b,
                     c->n,
                     c->m,
                     c->hk,
                     c->h,
                     c->hv,
                     c->dk,
                     c->dv,
                     c->ql,
                     c->kl,
                     1.0 / sqrt((double)c->dk),
                     c->causal,
                     c->lens ? lens : NULL,
                     window};
  ref_talking_heads(&ra, q, k, v, pl, pw, oref);

  clattn_ctx *ctx = tu_ctx();
  cl_mem dq = tu_upload(ctx, q, nq, c->dt), dk = tu_upload(ctx, k, nk, c->dt);
  cl_mem dv = tu_upload(ctx, v, nv, c->dt);
  cl_mem dpl = tu_upload(ctx, pl, npl, F32), dpw = tu_upload(ctx, pw, npw, F32);
  cl_mem dl = c->lens ? tu_upload_int(ctx, lens, (size_t)c->b) : NULL;
  cl_mem dout = tu_sentinel(ctx, no, c->dt, 0xff); /* NaN: must be written */
  const clattn_th_desc d = {sizeof(clattn_th_desc),
                            c->b,
                            c->n,
                            c->m,
                            c->hk,
                            c->h,
                            c->hv,
                            c->dk,
                            c->dv,
                            c->dt,
                            (clattn_layout)c->ql,
                            (clattn_layout)c->kl,
                            0.0f,
                            c->causal,
                            has_params(&c->p) ? &c->p : NULL,
                            window,
                            0.0f,
                            NULL,
                            NULL};
  const clattn_status st =
      clattn_talking_heads(ctx, &d, dq, dk, dv, dpl, dpw, dl, dout, NULL);
  if (!tu_unsupported_ok(ctx, st, d.params)) {
    cr_assert_eq(st, CLATTN_OK, "%s: %s", what, clattn_ctx_errmsg(ctx));
    tu_download(ctx, dout, o, no, c->dt);
    tu_check(what, o, oref, no, clattn__tolerance(c->dt));
  }
  tu_release(dq);
  tu_release(dk);
  tu_release(dv);
  tu_release(dpl);
  tu_release(dpw);
  tu_release(dl);
  tu_release(dout);
  clattn_ctx_destroy(ctx);
  free(q), free(k), free(v), free(pl), free(pw), free(o), free(oref),
      free(lens);
}

ParameterizedTestParameters(talking_heads, vs_reference) {
  int *idx = malloc(NCASES * sizeof *idx);
  size_t n = 0;
  for (int i = 0; i < NCASES; i++)
    if (!tu_subset("small") || cases[i].small)
      idx[n++] = i;
  return cr_make_param_array(int, tu_param_copy(idx, n, sizeof *idx), n);
}

ParameterizedTest(int *i, talking_heads, vs_reference, .timeout = 600) {
  run_case(&cases[*i], 0, 1000u + (unsigned)*i);
}

/* The window's configurations: every variant x scheme, n != m, padded
 * kv_lens with a sequence of 0 keys, causal and not, f32 and f16; scheme
 * 3 also keeping only part of the keys' logits (m = 1600). */
static const th_case window_cases[] = {
    {2,
     19,
     45,
     3,
     5,
     2,
     16,
     24,
     1,
     1,
     0,
     0,
     F32,
     {.size = sizeof(clattn_params),
      .variant = 1,
      .rows = 4,
      .keys = 16,
      .scheme = 2},
     0},
    {2,
     19,
     45,
     3,
     5,
     2,
     16,
     24,
     0,
     1,
     1,
     0,
     F16,
     {.size = sizeof(clattn_params),
      .variant = 1,
      .rows = 3,
      .keys = 16,
      .scheme = 1},
     0},
    {2,
     21,
     50,
     2,
     3,
     4,
     8,
     16,
     1,
     1,
     0,
     1,
     F32,
     {.size = sizeof(clattn_params),
      .variant = 1,
      .rows = 2,
      .keys = 16,
      .wg = 4,
      .scheme = 3},
     0},
    {2,
     9,
     1600,
     2,
     4,
     2,
     8,
     8,
     1,
     1,
     0,
     1,
     F16,
     {.size = sizeof(clattn_params),
      .variant = 1,
      .rows = 2,
      .keys = 16,
      .wg = 2,
      .scheme = 3},
     0},
    {2,
     13,
     30,
     3,
     5,
     2,
     16,
     8,
     1,
     1,
     1,
     1,
     F16,
     {.size = sizeof(clattn_params),
      .variant = 2,
      .keys = 8,
      .wg = 16,
      .scheme = 2},
     0},
    {2,
     17,
     29,
     2,
     1,
     3,
     8,
     12,
     0,
     1,
     0,
     1,
     F32,
     {.size = sizeof(clattn_params),
      .variant = 2,
      .keys = 4,
      .wg = 8,
      .scheme = 1},
     0},
};
enum { NWINDOW = (int)(sizeof window_cases / sizeof window_cases[0]) };

ParameterizedTestParameters(talking_heads, window) {
  int *idx = malloc(NWINDOW * sizeof *idx);
  size_t n = 0;
  for (int i = 0; i < NWINDOW && !tu_subset("small"); i++)
    idx[n++] = i;
  return cr_make_param_array(int, tu_param_copy(idx, n, sizeof *idx), n);
}

/* Windows of 1, below a tile, a tile's keys (16 for variant 1, the case's
 * for variant 2), beyond a tile but below the sequence, the sequence's
 * length and beyond it. */
ParameterizedTest(int *i, talking_heads, window, .timeout = 600) {
  const th_case *c = &window_cases[*i];
  const int tile = c->p.keys;
  const int windows[] = {1,        tile / 2 + 1, tile,     tile + 7,
                         c->m - 3, c->m,         c->m + 40};
  for (int w = 0; w < (int)(sizeof windows / sizeof windows[0]); w++)
    run_case(c, windows[w], 3000u + 10u * (unsigned)*i + (unsigned)w);
}

/* The window alone: soft-cap, ALiBi and sinks are CLATTN_ERR_UNSUPPORTED
 * naming the option, a negative window CLATTN_ERR_INVALID_ARG, nothing
 * run. */
Test(talking_heads, options_refused) {
  clattn_ctx *ctx = tu_ctx();
  const int b = 1, n = 4, m = 5, hk = 2, h = 3, hv = 2, dd = 8;
  cl_mem q = tu_buffer(ctx, (size_t)b * n * hk * dd * 4);
  cl_mem k = tu_buffer(ctx, (size_t)b * m * hk * dd * 4);
  cl_mem v = tu_buffer(ctx, (size_t)b * m * hv * dd * 4);
  cl_mem pl = tu_buffer(ctx, (size_t)hk * h * 4);
  cl_mem pw = tu_buffer(ctx, (size_t)h * hv * 4);
  cl_mem o = tu_buffer(ctx, (size_t)b * n * hv * dd * 4);
  const float per_head[3] = {0.5f, 0.25f, 0.125f};
  for (int which = 0; which < 4; which++) {
    clattn_th_desc d = {.size = sizeof(clattn_th_desc),
                        .batch = b,
                        .n_q = n,
                        .n_kv = m,
                        .heads_k = hk,
                        .heads = h,
                        .heads_v = hv,
                        .head_dim_k = dd,
                        .head_dim_v = dd,
                        .dtype = F32,
                        .causal = 1,
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
    const clattn_status st =
        clattn_talking_heads(ctx, &d, q, k, v, pl, pw, NULL, o, NULL);
    cr_expect_eq(st, want, "%s: %d (%s)", name, (int)st,
                 clattn_ctx_errmsg(ctx));
    cr_expect(strstr(clattn_ctx_errmsg(ctx), name) != NULL,
              "the message does not name %s: %s", name, clattn_ctx_errmsg(ctx));
  }
  tu_release(q), tu_release(k), tu_release(v), tu_release(pl);
  tu_release(pw), tu_release(o);
  clattn_ctx_destroy(ctx);
}

/* h_k = h = h_v with P_l = P_w = I is multi-head attention: every variant
 * and scheme, causal and not (the simulators' subset: causal only, one
 * scheme a variant, since llvmpipe takes about a minute to compile each
 * talking-heads program). */
Test(talking_heads, identity_is_mha, .timeout = 900) {
  const int b = 2, n = 23, m = 37, hh = 4, dd = 16;
  const size_t nq = (size_t)b * n * hh * dd, nk = (size_t)b * m * hh * dd;
  tu_rng rng = tu_rng_seed(42);
  float *q = tu_alloc(nq * 4), *k = tu_alloc(nk * 4), *v = tu_alloc(nk * 4);
  float eye[16], *o1 = tu_alloc(nq * 4), *o2 = tu_alloc(nq * 4);
  tu_fill(&rng, q, nq, 1.0f);
  tu_fill(&rng, k, nk, 1.0f);
  tu_fill(&rng, v, nk, 1.0f);
  for (int i = 0; i < 16; i++)
    eye[i] = i % 5 == 0 ? 1.0f : 0.0f;
  clattn_ctx *ctx = tu_ctx();
  cl_mem dq = tu_upload(ctx, q, nq, F32), dk = tu_upload(ctx, k, nk, F32);
  cl_mem dv = tu_upload(ctx, v, nk, F32), de = tu_upload(ctx, eye, 16, F32);
  cl_mem a = tu_buffer(ctx, nq * 4), t = tu_buffer(ctx, nq * 4);
  for (int causal = tu_subset("small") ? 1 : 0; causal < 2; causal++)
    for (int variant = 1; variant <= 2; variant++)
      for (int scheme = 1; scheme <= 3; scheme++) {
        if (variant == 2 && scheme == 3)
          continue; /* scheme 3 is variant 1's */
        /* the simulators' subset: one scheme a variant (their sweep covers
         * every scheme against the reference; each program here is
         * minutes of llvmpipe's compiler cold) */
        if (tu_subset("small") && scheme != (variant == 1 ? 3 : 1))
          continue;
        const clattn_attn_desc ad = {sizeof(clattn_attn_desc),
                                     b,
                                     n,
                                     m,
                                     hh,
                                     hh,
                                     dd,
                                     dd,
                                     F32,
                                     CLATTN_BSHD,
                                     CLATTN_BSHD,
                                     0.0f,
                                     causal,
                                     NULL};
        const clattn_params p = {.size = sizeof(clattn_params), .variant = variant, .scheme = scheme};
        const clattn_th_desc td = {sizeof(clattn_th_desc),
                                   b,
                                   n,
                                   m,
                                   hh,
                                   hh,
                                   hh,
                                   dd,
                                   dd,
                                   F32,
                                   CLATTN_BSHD,
                                   CLATTN_BSHD,
                                   0.0f,
                                   causal,
                                   &p};
        /* NaN in both outputs: neither keeps the last configuration's */
        tu_set_bytes(ctx, a, nq * 4, 0xff);
        tu_set_bytes(ctx, t, nq * 4, 0xff);
        cr_assert_eq(clattn_attention(ctx, &ad, dq, dk, dv, NULL, a, NULL),
                     CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
        cr_assert_eq(
            clattn_talking_heads(ctx, &td, dq, dk, dv, de, de, NULL, t, NULL),
            CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
        tu_download(ctx, a, o1, nq, F32);
        tu_download(ctx, t, o2, nq, F32);
        char what[96];
        snprintf(what, sizeof what, "identity vs MHA causal=%d v%d s%d", causal,
                 variant, scheme);
        tu_check(what, o2, o1, nq, 1e-5);
      }
  tu_release(dq), tu_release(dk), tu_release(dv), tu_release(de);
  tu_release(a), tu_release(t);
  clattn_ctx_destroy(ctx);
  free(q), free(k), free(v), free(o1), free(o2);
}

/* Misuse: NULL buffers, bad head counts, a short p_l, a bad scheme, scheme
 * 3 on variant 2. */
Test(talking_heads, misuse) {
  clattn_ctx *ctx = tu_ctx();
  const int b = 1, n = 4, m = 5, hk = 2, h = 3, hv = 2, dd = 8;
  cl_mem q = tu_buffer(ctx, (size_t)b * n * hk * dd * 4);
  cl_mem k = tu_buffer(ctx, (size_t)b * m * hk * dd * 4);
  cl_mem v = tu_buffer(ctx, (size_t)b * m * hv * dd * 4);
  cl_mem pl = tu_buffer(ctx, (size_t)hk * h * 4);
  cl_mem pw = tu_buffer(ctx, (size_t)h * hv * 4);
  cl_mem small = tu_buffer(ctx, 4);
  cl_mem o = tu_buffer(ctx, (size_t)b * n * hv * dd * 4);
  clattn_th_desc d = {sizeof(clattn_th_desc),
                      b,
                      n,
                      m,
                      hk,
                      h,
                      hv,
                      dd,
                      dd,
                      F32,
                      CLATTN_BSHD,
                      CLATTN_BSHD,
                      0.0f,
                      0,
                      NULL};
  cr_expect_eq(clattn_talking_heads(ctx, NULL, q, k, v, pl, pw, NULL, o, NULL),
               CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_talking_heads(ctx, &d, NULL, k, v, pl, pw, NULL, o, NULL),
               CLATTN_ERR_INVALID_ARG, "%s", clattn_ctx_errmsg(ctx));
  cr_expect_eq(clattn_talking_heads(ctx, &d, q, k, v, NULL, pw, NULL, o, NULL),
               CLATTN_ERR_INVALID_ARG, "%s", clattn_ctx_errmsg(ctx));
  cr_expect_eq(clattn_talking_heads(ctx, &d, q, k, v, small, pw, NULL, o, NULL),
               CLATTN_ERR_BUFFER_TOO_SMALL, "%s", clattn_ctx_errmsg(ctx));
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "p_l") != NULL, "%s",
            clattn_ctx_errmsg(ctx));
  clattn_th_desc bad = d;
  bad.heads = 0;
  cr_expect_eq(clattn_talking_heads(ctx, &bad, q, k, v, pl, pw, NULL, o, NULL),
               CLATTN_ERR_SHAPE);
  bad = d;
  bad.heads_v = CLATTN_TH_MAX_HEADS + 1;
  cr_expect_eq(clattn_talking_heads(ctx, &bad, q, k, v, pl, pw, NULL, o, NULL),
               CLATTN_ERR_UNSUPPORTED);
  bad = d;
  bad.heads_k = 0;
  cr_expect_eq(clattn_talking_heads(ctx, &bad, q, k, v, pl, pw, NULL, o, NULL),
               CLATTN_ERR_SHAPE);
  const clattn_params p = {.size = sizeof(clattn_params), .scheme = 4};
  bad = d;
  bad.params = &p;
  cr_expect_eq(clattn_talking_heads(ctx, &bad, q, k, v, pl, pw, NULL, o, NULL),
               CLATTN_ERR_INVALID_ARG);
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "scheme") != NULL, "%s",
            clattn_ctx_errmsg(ctx));
  const clattn_params local2 = {.size = sizeof(clattn_params), .variant = 2, .scheme = 3};
  bad.params = &local2;
  cr_expect_eq(clattn_talking_heads(ctx, &bad, q, k, v, pl, pw, NULL, o, NULL),
               CLATTN_ERR_INVALID_ARG);
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "variant 1") != NULL, "%s",
            clattn_ctx_errmsg(ctx));
  cr_expect_eq(clattn_talking_heads(NULL, &d, q, k, v, pl, pw, NULL, o, NULL),
               CLATTN_ERR_MISUSE);
  tu_release(q), tu_release(k), tu_release(v), tu_release(pl);
  tu_release(pw), tu_release(small), tu_release(o);
  clattn_ctx_destroy(ctx);
}
