/* test_varlen.c - clattn_varlen_attention (the varlen family) against the
 * plain-C reference (ref_varlen_attention): packed sequences of mixed
 * lengths in one batch (empty queries, empty keys, one token, tile sizes
 * and one off, long ones, chunks of fewer queries than keys, more queries
 * than keys), GQA / MQA / MHA, f32 / f16 / bf16, the attention options,
 * causal and not, and explicit tiles.  Every output starts NaN; q, k and v
 * sit in buffers with NaN rows past total_q / total_k, so a read past the
 * packed rows shows.  Bad offsets are refused naming the entry with the
 * output untouched; `unchecked` skips a sequence whose offsets fall outside
 * the tensors (Oclgrind: no read out of bounds). */
#include "reference/ref_paged.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAXB = 12, PAD_ROWS = 3 };

typedef struct vcase {
  const char *name;
  int batch;
  int len_q[MAXB], len_k[MAXB];
  int hq, hkv, dk, dv;
  clattn_dtype dt;
  int causal;
  int window, softcap, alibi, sinks; /* the options (alibi, sinks: 0/1) */
  int rows, keys, wg;                /* explicit tiles; 0: automatic */
  int small;                         /* in CLATTN_TEST_SUBSET=small */
  int variant;                       /* explicit kernel; 0: automatic */
} vcase;

static const vcase cases[] = {
    {"mixed f32 mha causal",
     8,
     {1, 0, 15, 16, 17, 45, 0, 3},
     {1, 5, 15, 16, 17, 45, 0, 30},
     2,
     2,
     16,
     16,
     CLATTN_F32,
     1,
     0,
     0,
     0,
     0,
     0,
     0,
     0,
     1},
    {"mixed f32 mha non-causal",
     5,
     {4, 0, 33, 2, 9},
     {7, 3, 33, 0, 1},
     2,
     2,
     16,
     8,
     CLATTN_F32,
     0,
     0,
     0,
     0,
     0,
     0,
     0,
     0,
     1},
    {"gqa f16 causal chunked",
     4,
     {7, 1, 33, 20},
     {7, 20, 33, 64},
     4,
     2,
     32,
     16,
     CLATTN_F16,
     1,
     0,
     0,
     0,
     0,
     0,
     0,
     0,
     1},
    {"mqa bf16 causal, more queries than keys",
     3,
     {5, 0, 12},
     {2, 3, 12},
     4,
     1,
     16,
     16,
     CLATTN_BF16,
     1,
     0,
     0,
     0,
     0,
     0,
     0,
     0,
     1},
    {"gqa3 f32 non-causal long",
     3,
     {130, 1, 64},
     {200, 129, 63},
     6,
     2,
     64,
     64,
     CLATTN_F32,
     0,
     0,
     0,
     0,
     0,
     0,
     0,
     0,
     0},
    {"options f32 causal window softcap alibi sinks",
     4,
     {9, 0, 17, 31},
     {12, 4, 17, 31},
     2,
     1,
     16,
     16,
     CLATTN_F32,
     1,
     5,
     20,
     1,
     1,
     0,
     0,
     0,
     1},
    {"options f16 non-causal window alibi variant 2",
     3,
     {3, 16, 22},
     {10, 16, 40},
     2,
     2,
     16,
     16,
     CLATTN_F16,
     0,
     7,
     0,
     1,
     0,
     0,
     0,
     0,
     1,
     2},
    {"variant 2 rows 1 keys 16 wg 1",
     4,
     {1, 17, 0, 16},
     {1, 40, 2, 16},
     2,
     1,
     16,
     16,
     CLATTN_F32,
     1,
     0,
     0,
     0,
     0,
     1,
     16,
     1,
     1,
     2},
    {"variant 1 rows 8 keys 64 wg 4",
     4,
     {7, 9, 8, 0},
     {70, 9, 8, 0},
     4,
     2,
     16,
     16,
     CLATTN_F32,
     1,
     0,
     0,
     0,
     0,
     8,
     64,
     4,
     1,
     1},
    {"variant 2 rows 16 keys 16 wg 16 bf16",
     4,
     {15, 17, 1, 32},
     {15, 17, 50, 32},
     2,
     2,
     32,
     32,
     CLATTN_BF16,
     1,
     0,
     0,
     0,
     0,
     16,
     16,
     16,
     0,
     2},
    {"variant 2 rows 64 keys 32 wg 64 f16",
     3,
     {63, 65, 1},
     {63, 65, 1},
     1,
     1,
     16,
     16,
     CLATTN_F16,
     1,
     0,
     0,
     0,
     0,
     64,
     32,
     64,
     0,
     2},
};

/* The offsets of n lengths. */
static void offsets(const int *lens, int n, int *cu) {
  cu[0] = 0;
  for (int b = 0; b < n; b++)
    cu[b + 1] = cu[b] + lens[b];
}

/* Host rows [rows + PAD_ROWS, width] random (rounded to dt), NaN past
 * `rows`, uploaded. */
static cl_mem padded_input(clattn_ctx *ctx, tu_rng *r, int rows, int width,
                           clattn_dtype dt, float *x) {
  const size_t n = (size_t)rows * width, all = n + (size_t)PAD_ROWS * width;
  float *buf = tu_alloc(all * sizeof *buf);
  tu_fill(r, buf, n, 1.0f);
  tu_round(buf, n, dt);
  for (size_t i = n; i < all; i++)
    buf[i] = NAN;
  memcpy(x, buf, n * sizeof *x);
  cl_mem m = tu_upload(ctx, buf, all, dt);
  free(buf);
  return m;
}

static void run_case(clattn_ctx *ctx, const vcase *c) {
  int cu_q[MAXB + 1], cu_k[MAXB + 1];
  offsets(c->len_q, c->batch, cu_q);
  offsets(c->len_k, c->batch, cu_k);
  const int tq = cu_q[c->batch], tk = cu_k[c->batch];
  const size_t nq = (size_t)tq * c->hq * c->dk, no = (size_t)tq * c->hq * c->dv;
  const size_t nk = (size_t)tk * c->hkv * c->dk,
               nv = (size_t)tk * c->hkv * c->dv;
  tu_rng r = tu_rng_seed(0x5eed + (uint64_t)tq * 31 + tk);
  float *q = tu_alloc(nq * sizeof *q), *k = tu_alloc(nk * sizeof *k);
  float *v = tu_alloc(nv * sizeof *v), *ref = tu_alloc(no * sizeof *ref);
  float *got = tu_alloc(no * sizeof *got);
  float slopes[16], sinks[16];
  for (int h = 0; h < c->hq; h++) {
    slopes[h] = 0.05f * (float)(h + 1);
    sinks[h] = 0.5f * tu_uniform(&r);
  }
  cl_mem bq = padded_input(ctx, &r, tq, c->hq * c->dk, c->dt, q);
  cl_mem bk = padded_input(ctx, &r, tk, c->hkv * c->dk, c->dt, k);
  cl_mem bv = padded_input(ctx, &r, tk, c->hkv * c->dv, c->dt, v);
  cl_mem bcq = tu_upload_int(ctx, cu_q, (size_t)c->batch + 1);
  cl_mem bck = tu_upload_int(ctx, cu_k, (size_t)c->batch + 1);
  cl_mem bo = tu_sentinel(ctx, no, c->dt, 0xff);
  clattn_params p = {
      .size = sizeof p, .rows = c->rows, .keys = c->keys, .wg = c->wg};
  const clattn_varlen_desc d = {.size = sizeof d,
                                .batch = c->batch,
                                .total_q = tq,
                                .total_k = tk,
                                .heads_q = c->hq,
                                .heads_kv = c->hkv,
                                .head_dim_k = c->dk,
                                .head_dim_v = c->dv,
                                .dtype = c->dt,
                                .causal = c->causal,
                                .params = c->rows || c->variant ? &p : NULL,
                                .window = c->window,
                                .softcap = (float)c->softcap,
                                .alibi_slopes = c->alibi ? slopes : NULL,
                                .sinks = c->sinks ? sinks : NULL};
  const clattn_status st =
      clattn_varlen_attention(ctx, &d, bq, bk, bv, bcq, bck, bo, NULL);
  if (st != CLATTN_OK && tu_unsupported_ok(ctx, st, d.params))
    goto done;
  cr_assert_eq(st, CLATTN_OK, "%s: %s", c->name, clattn_ctx_errmsg(ctx));
  tu_download(ctx, bo, got, no, c->dt);
  const ref_paged a = {.b = c->batch,
                       .hq = c->hq,
                       .hkv = c->hkv,
                       .dk = c->dk,
                       .dv = c->dv,
                       .scale = 1.0 / sqrt((double)c->dk),
                       .causal = c->causal,
                       .opts = {c->window, (double)c->softcap,
                                c->alibi ? slopes : NULL,
                                c->sinks ? sinks : NULL}};
  ref_varlen_attention(&a, q, k, v, cu_q, cu_k, ref);
  tu_check(c->name, got, ref, no, clattn__tolerance(c->dt));
done:
  tu_release(bq);
  tu_release(bk);
  tu_release(bv);
  tu_release(bcq);
  tu_release(bck);
  tu_release(bo);
  free(q);
  free(k);
  free(v);
  free(ref);
  free(got);
}

Test(varlen, against_reference) {
  clattn_ctx *ctx = tu_ctx();
  int ran = 0, skipped = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if ((tu_subset("small") && !cases[i].small) || ran >= tu_case_limit()) {
      skipped++;
      continue;
    }
    run_case(ctx, &cases[i]);
    ran++;
  }
  if (skipped)
    cr_log_info("varlen: %d cases ran, %d left out by CLATTN_TEST_SUBSET / "
                "CLATTN_TEST_CASES",
                ran, skipped);
  clattn_ctx_destroy(ctx);
}

/* A small valid call's buffers: batch 3, lengths q {4, 0, 6}, k {5, 2, 6}. */
typedef struct small_call {
  clattn_varlen_desc d;
  cl_mem q, k, v, o;
} small_call;

static small_call small_make(clattn_ctx *ctx) {
  small_call s = {.d = {.size = sizeof s.d,
                        .batch = 3,
                        .total_q = 10,
                        .total_k = 13,
                        .heads_q = 2,
                        .heads_kv = 1,
                        .head_dim_k = 8,
                        .head_dim_v = 8,
                        .dtype = CLATTN_F32,
                        .causal = 1}};
  tu_rng r = tu_rng_seed(99);
  float x[16 * 2 * 8];
  tu_fill(&r, x, sizeof x / sizeof x[0], 1.0f);
  s.q = tu_upload(ctx, x, 10 * 2 * 8, CLATTN_F32);
  s.k = tu_upload(ctx, x, 13 * 8, CLATTN_F32);
  s.v = tu_upload(ctx, x + 8, 13 * 8, CLATTN_F32);
  s.o = tu_sentinel(ctx, 10 * 2 * 8, CLATTN_F32, 0xff);
  return s;
}

static void small_free(small_call *s) {
  tu_release(s->q);
  tu_release(s->k);
  tu_release(s->v);
  tu_release(s->o);
}

/* Call the small case with these offsets: the status and message. */
static clattn_status small_try(clattn_ctx *ctx, small_call *s, const int *cu_q,
                               const int *cu_k, int n) {
  cl_mem a = tu_upload_int(ctx, cu_q, (size_t)n);
  cl_mem b = tu_upload_int(ctx, cu_k, (size_t)n);
  const clattn_status st =
      clattn_varlen_attention(ctx, &s->d, s->q, s->k, s->v, a, b, s->o, NULL);
  clFinish(clattn_ctx_queue(ctx));
  tu_release(a);
  tu_release(b);
  return st;
}

Test(varlen, bad_offsets_refused) {
  static const struct {
    const char *what;
    int cu_q[4], cu_k[4];
    const char *names;
  } bad[] = {
      {"cu_seqlens_q not starting at 0",
       {1, 4, 4, 10},
       {0, 5, 7, 13},
       "cu_seqlens_q[0] = 1"},
      {"cu_seqlens_k not starting at 0",
       {0, 4, 4, 10},
       {-2, 5, 7, 13},
       "cu_seqlens_k[0] = -2"},
      {"cu_seqlens_q decreasing",
       {0, 6, 4, 10},
       {0, 5, 7, 13},
       "cu_seqlens_q[2] = 4"},
      {"cu_seqlens_k decreasing",
       {0, 4, 4, 10},
       {0, 8, 7, 13},
       "cu_seqlens_k[2] = 7"},
      {"cu_seqlens_q not ending at total_q",
       {0, 4, 4, 9},
       {0, 5, 7, 13},
       "cu_seqlens_q[3] = 9"},
      {"cu_seqlens_k past total_k",
       {0, 4, 4, 10},
       {0, 5, 7, 14},
       "cu_seqlens_k[3] = 14"},
  };
  clattn_ctx *ctx = tu_ctx();
  small_call s = small_make(ctx);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const clattn_status st = small_try(ctx, &s, bad[i].cu_q, bad[i].cu_k, 4);
    cr_expect_eq(st, CLATTN_ERR_SHAPE, "%s: status %d", bad[i].what, st);
    cr_expect(strstr(clattn_ctx_errmsg(ctx), bad[i].names) != NULL,
              "%s: message '%s' does not name %s", bad[i].what,
              clattn_ctx_errmsg(ctx), bad[i].names);
    cr_expect(tu_untouched(ctx, s.o, 10 * 2 * 8 * 4, 0xff),
              "%s: the output was written", bad[i].what);
  }
  /* a batch that does not match the offsets: batch 2 of these 3 */
  {
    static const int cu_q[4] = {0, 4, 4, 10}, cu_k[4] = {0, 5, 7, 13};
    s.d.batch = 2;
    const clattn_status st = small_try(ctx, &s, cu_q, cu_k, 4);
    cr_expect_eq(st, CLATTN_ERR_SHAPE, "batch mismatch: status %d", st);
    cr_expect(strstr(clattn_ctx_errmsg(ctx), "cu_seqlens_q[2] = 4") != NULL,
              "batch mismatch: message '%s'", clattn_ctx_errmsg(ctx));
    cr_expect(tu_untouched(ctx, s.o, 10 * 2 * 8 * 4, 0xff),
              "batch mismatch: the output was written");
    s.d.batch = 3;
  }
  /* offsets buffers shorter than batch + 1 */
  {
    static const int cu_q[3] = {0, 4, 10}, cu_k[3] = {0, 5, 13};
    const clattn_status st = small_try(ctx, &s, cu_q, cu_k, 3);
    cr_expect_neq(st, CLATTN_OK, "short offsets buffers accepted");
    cr_expect(strstr(clattn_ctx_errmsg(ctx), "cu_seqlens_q") != NULL,
              "short offsets: message '%s'", clattn_ctx_errmsg(ctx));
  }
  /* descriptions */
  {
    static const int cu_q[4] = {0, 4, 4, 10}, cu_k[4] = {0, 5, 7, 13};
    s.d.batch = 0;
    cr_expect_eq(small_try(ctx, &s, cu_q, cu_k, 4), CLATTN_ERR_SHAPE,
                 "batch 0 accepted");
    s.d.batch = 3;
    s.d.heads_kv = 3;
    cr_expect_neq(small_try(ctx, &s, cu_q, cu_k, 4), CLATTN_OK,
                  "heads_q 2 over heads_kv 3 accepted");
    s.d.heads_kv = 1;
    s.d.dtype = CLATTN_I8;
    cr_expect_neq(small_try(ctx, &s, cu_q, cu_k, 4), CLATTN_OK,
                  "an int8 q accepted");
    s.d.dtype = CLATTN_F32;
    cr_expect(tu_untouched(ctx, s.o, 10 * 2 * 8 * 4, 0xff),
              "a refused description wrote the output");
  }
  small_free(&s);
  clattn_ctx_destroy(ctx);
}

/* Unchecked, a sequence whose offsets leave the tensors is skipped: the
 * valid one's rows are right, the rest stay NaN, and nothing is read out of
 * bounds (Oclgrind). */
Test(varlen, unchecked_bad_offsets_skipped) {
  clattn_ctx *ctx = tu_ctx();
  small_call s = small_make(ctx);
  s.d.unchecked = 1;
  static const int cu_q[4] = {0, 4, 99, 10}, cu_k[4] = {0, 5, -7, 1 << 30};
  cr_assert_eq(small_try(ctx, &s, cu_q, cu_k, 4), CLATTN_OK, "%s",
               clattn_ctx_errmsg(ctx));
  float got[10 * 2 * 8], q[10 * 2 * 8], k[13 * 8], v[13 * 8], ref[4 * 2 * 8];
  tu_download(ctx, s.o, got, 10 * 2 * 8, CLATTN_F32);
  tu_download(ctx, s.q, q, 10 * 2 * 8, CLATTN_F32);
  tu_download(ctx, s.k, k, 13 * 8, CLATTN_F32);
  tu_download(ctx, s.v, v, 13 * 8, CLATTN_F32);
  const int one_q[2] = {0, 4}, one_k[2] = {0, 5};
  const ref_paged a = {.b = 1,
                       .hq = 2,
                       .hkv = 1,
                       .dk = 8,
                       .dv = 8,
                       .scale = 1.0 / sqrt(8.0),
                       .causal = 1};
  ref_varlen_attention(&a, q, k, v, one_q, one_k, ref);
  tu_check("unchecked: the valid sequence", got, ref, 4 * 2 * 8,
           clattn__tolerance(CLATTN_F32));
  for (int i = 4 * 2 * 8; i < 10 * 2 * 8; i++)
    cr_expect(isnan(got[i]), "unchecked: o[%d] = %g of a skipped sequence", i,
              got[i]);
  small_free(&s);
  clattn_ctx_destroy(ctx);
}
