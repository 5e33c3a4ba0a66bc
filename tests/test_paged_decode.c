/* test_paged_decode.c - clattn_paged_attention with n_q = 1 (the
 * paged-decode family) against ref_paged_attention.
 *
 * Each case builds a pool of pages with a shuffled block table: the pages
 * of a batch whose lengths are 1, page_size - 1, page_size, page_size + 1
 * and long ones; pages no sequence uses, the rows past each length in its
 * last page and the table's entries past each length are poisoned (NaN
 * rows, or an int8 cache's NaN scales; entries -1, num_blocks, 1 << 30),
 * so a read past a length shows in the output.  The output is poisoned
 * with NaN before each run.  Then the first sequence ends and its pages are
 * given, rewritten, to a new sequence of another length, and the call is
 * checked again (pages reused).  Bad tables, lengths, page sizes and
 * missing scales are refused with a message naming them and nothing
 * written; with `unchecked` a garbage table reads nothing outside the pool
 * (tests/oclgrind.sh runs this file under Oclgrind).
 * CLATTN_TEST_SUBSET=small keeps a few small cases (simulators). */
#include "family/family.h"
#include "reference/ref_paged.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pcase {
  const char *name;
  int small; /* in CLATTN_TEST_SUBSET=small */
  int batch;
  int lens[6];
  int hq, hkv, dk, dv;
  clattn_dtype dt;
  int i8;
  int page;
  int causal, window;
  float softcap;
  int alibi, sinks;
  int splits, keys;
} pcase;

static const pcase cases[] = {
    {.name = "f32 mha p16",
     .small = 1,
     .batch = 5,
     .lens = {1, 15, 16, 17, 90},
     .hq = 4,
     .hkv = 4,
     .dk = 32,
     .dv = 32,
     .dt = CLATTN_F32,
     .page = 16},
    {.name = "f16 gqa p16 splits4",
     .batch = 5,
     .lens = {1, 15, 16, 17, 1000},
     .hq = 8,
     .hkv = 2,
     .dk = 64,
     .dv = 64,
     .dt = CLATTN_F16,
     .page = 16,
     .splits = 4},
    {.name = "bf16 mqa p8 causal",
     .batch = 4,
     .lens = {7, 8, 9, 200},
     .hq = 4,
     .hkv = 1,
     .dk = 16,
     .dv = 32,
     .dt = CLATTN_BF16,
     .page = 8,
     .causal = 1,
     .splits = 3},
    {.name = "f32 i8 gqa p16",
     .small = 1,
     .batch = 5,
     .lens = {1, 15, 16, 17, 70},
     .hq = 4,
     .hkv = 2,
     .dk = 32,
     .dv = 32,
     .dt = CLATTN_F32,
     .i8 = 1,
     .page = 16,
     .splits = 2},
    {.name = "f16 i8 p1",
     .batch = 3,
     .lens = {1, 2, 50},
     .hq = 2,
     .hkv = 1,
     .dk = 16,
     .dv = 16,
     .dt = CLATTN_F16,
     .i8 = 1,
     .page = 1,
     .splits = 2},
    {.name = "bf16 i8 p256",
     .batch = 5,
     .lens = {1, 255, 256, 257, 600},
     .hq = 4,
     .hkv = 2,
     .dk = 32,
     .dv = 16,
     .dt = CLATTN_BF16,
     .i8 = 1,
     .page = 256},
    {.name = "f32 p256 splits3",
     .batch = 5,
     .lens = {1, 255, 256, 257, 700},
     .hq = 2,
     .hkv = 2,
     .dk = 64,
     .dv = 64,
     .dt = CLATTN_F32,
     .page = 256,
     .splits = 3,
     .keys = 32},
    {.name = "f32 options p16",
     .small = 1,
     .batch = 5,
     .lens = {1, 15, 16, 17, 80},
     .hq = 4,
     .hkv = 2,
     .dk = 16,
     .dv = 16,
     .dt = CLATTN_F32,
     .page = 16,
     .window = 23,
     .softcap = 5.0f,
     .alibi = 1,
     .sinks = 1,
     .splits = 3,
     .keys = 4},
    {.name = "f16 window p8 direct",
     .batch = 4,
     .lens = {1, 7, 9, 300},
     .hq = 2,
     .hkv = 2,
     .dk = 32,
     .dv = 32,
     .dt = CLATTN_F16,
     .page = 8,
     .window = 40,
     .splits = 1},
    {.name = "f32 p2 dk12 dv20 sinks",
     .batch = 4,
     .lens = {1, 2, 3, 77},
     .hq = 6,
     .hkv = 3,
     .dk = 12,
     .dv = 20,
     .dt = CLATTN_F32,
     .page = 2,
     .sinks = 1},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

/* A pool, its table and lengths, host copies (an int8 cache's integers as
 * floats) and the device's. */
typedef struct paged {
  clattn_paged_desc d;
  int nk, nv, ns; /* elements of k_cache, v_cache, a scale tensor */
  float *kc, *vc, *ks, *vs;
  int *table, *lens;
  float slopes[16], sinks[16];
} paged;

static int pages_for(int len, int page) {
  return len <= 0 ? 0 : (len - 1) / page + 1;
}

/* Fill page pg's rows [r0, page) of the pool with values (poison 0) or
 * NaN (poison 1: a float cache's rows, an int8 cache's scales). */
static void fill_rows(paged *p, tu_rng *r, int pg, int r0, int poison) {
  const clattn_paged_desc *d = &p->d;
  const int hkv = d->heads_kv, dk = d->head_dim_k, dv = d->head_dim_v;
  const int i8 = d->cache_dtype == CLATTN_I8;
  for (int row = r0; row < d->page_size; row++) {
    const long at = (long)pg * d->page_size + row;
    for (int h = 0; h < hkv; h++) {
      for (int e = 0; e < dk; e++)
        p->kc[(at * hkv + h) * dk + e] = i8 ? (float)(tu_randint(r, 255) - 127)
                                         : poison ? NAN
                                                  : tu_uniform(r);
      for (int e = 0; e < dv; e++)
        p->vc[(at * hkv + h) * dv + e] = i8 ? (float)(tu_randint(r, 255) - 127)
                                         : poison ? NAN
                                                  : tu_uniform(r);
      if (i8) {
        p->ks[at * hkv + h] = poison ? NAN : 0.002f + 0.01f * tu_uniform(r);
        p->vs[at * hkv + h] = poison ? NAN : 0.002f + 0.01f * tu_uniform(r);
      }
    }
  }
}

/* Poison the table's entries past each length and every row past it. */
static void poison_past(paged *p, tu_rng *r) {
  const clattn_paged_desc *d = &p->d;
  static const int garbage[] = {-1, 0, 1 << 30};
  for (int b = 0; b < d->batch; b++) {
    const int need = pages_for(p->lens[b], d->page_size);
    for (int j = need; j < d->max_blocks; j++) {
      const int g = garbage[(b + j) % 3];
      p->table[(long)b * d->max_blocks + j] = g == 0 ? d->num_blocks : g;
    }
    if (need > 0 && p->lens[b] % d->page_size != 0)
      fill_rows(p, r, p->table[(long)b * d->max_blocks + need - 1],
                p->lens[b] % d->page_size, 1);
  }
}

static void paged_make(paged *p, const pcase *c, tu_rng *r) {
  memset(p, 0, sizeof *p);
  int most = 0, total = 0;
  for (int b = 0; b < c->batch; b++) {
    const int n = pages_for(c->lens[b], c->page);
    most = n > most ? n : most;
    total += n;
  }
  /* a spare column, and spare pages that no one uses */
  const int spare = 5;
  p->d = (clattn_paged_desc){.size = sizeof p->d,
                             .batch = c->batch,
                             .n_q = 1,
                             .heads_q = c->hq,
                             .heads_kv = c->hkv,
                             .head_dim_k = c->dk,
                             .head_dim_v = c->dv,
                             .num_blocks = total + spare,
                             .page_size = c->page,
                             .max_blocks = most + 1,
                             .dtype = c->dt,
                             .cache_dtype = c->i8 ? CLATTN_I8 : 0,
                             .causal = c->causal,
                             .window = c->window,
                             .softcap = c->softcap};
  for (int h = 0; h < c->hq; h++) {
    p->slopes[h] = 0.05f * (float)(h + 1);
    p->sinks[h] = 0.5f * (float)(h % 4) - 0.75f;
  }
  p->d.alibi_slopes = c->alibi ? p->slopes : NULL;
  p->d.sinks = c->sinks ? p->sinks : NULL;
  const long rows = (long)p->d.num_blocks * c->page;
  p->nk = (int)(rows * c->hkv * c->dk);
  p->nv = (int)(rows * c->hkv * c->dv);
  p->ns = (int)(rows * c->hkv);
  p->kc = tu_alloc((size_t)p->nk * sizeof(float));
  p->vc = tu_alloc((size_t)p->nv * sizeof(float));
  p->ks = tu_alloc((size_t)p->ns * sizeof(float));
  p->vs = tu_alloc((size_t)p->ns * sizeof(float));
  p->table = tu_alloc((size_t)c->batch * p->d.max_blocks * sizeof(int));
  p->lens = tu_alloc((size_t)c->batch * sizeof(int));
  /* a shuffled pool: sequence after sequence takes the next pages */
  int *perm = tu_alloc((size_t)p->d.num_blocks * sizeof(int));
  for (int i = 0; i < p->d.num_blocks; i++)
    perm[i] = i;
  for (int i = p->d.num_blocks - 1; i > 0; i--) {
    const int j = tu_randint(r, i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  int next = 0;
  for (int b = 0; b < c->batch; b++) {
    p->lens[b] = c->lens[b];
    for (int j = 0; j < pages_for(c->lens[b], c->page); j++)
      p->table[(long)b * p->d.max_blocks + j] = perm[next++];
  }
  for (int pg = 0; pg < p->d.num_blocks; pg++)
    fill_rows(p, r, pg, 0, 1); /* unused pages stay poisoned */
  for (int i = 0; i < next; i++)
    fill_rows(p, r, perm[i], 0, 0);
  poison_past(p, r);
  free(perm);
}

static void paged_free(paged *p) {
  free(p->kc);
  free(p->vc);
  free(p->ks);
  free(p->vs);
  free(p->table);
  free(p->lens);
}

/* An int8 cache's integers uploaded as int8. */
static cl_mem upload_i8(clattn_ctx *ctx, const float *x, int n) {
  signed char *h = tu_alloc((size_t)n);
  for (int i = 0; i < n; i++)
    h[i] = (signed char)x[i];
  cl_mem m = tu_buffer(ctx, (size_t)n);
  cl_int err = clEnqueueWriteBuffer(clattn_ctx_queue(ctx), m, CL_TRUE, 0,
                                    (size_t)n, h, 0, NULL, NULL);
  free(h);
  cr_assert_eq(err, CL_SUCCESS);
  return m;
}

typedef struct dev {
  cl_mem q, kc, vc, ks, vs, table, lens, o;
} dev;

static void dev_upload(clattn_ctx *ctx, const paged *p, const float *q,
                       dev *v) {
  const clattn_paged_desc *d = &p->d;
  const int i8 = d->cache_dtype == CLATTN_I8;
  v->q = tu_upload(ctx, q, (size_t)d->batch * d->heads_q * d->head_dim_k,
                   d->dtype);
  v->kc = i8 ? upload_i8(ctx, p->kc, p->nk)
             : tu_upload(ctx, p->kc, (size_t)p->nk, d->dtype);
  v->vc = i8 ? upload_i8(ctx, p->vc, p->nv)
             : tu_upload(ctx, p->vc, (size_t)p->nv, d->dtype);
  v->ks = i8 ? tu_upload(ctx, p->ks, (size_t)p->ns, CLATTN_F32) : NULL;
  v->vs = i8 ? tu_upload(ctx, p->vs, (size_t)p->ns, CLATTN_F32) : NULL;
  v->table = tu_upload_int(ctx, p->table, (size_t)d->batch * d->max_blocks);
  v->lens = tu_upload_int(ctx, p->lens, (size_t)d->batch);
  v->o = tu_buffer(ctx, (size_t)d->batch * d->heads_q * d->head_dim_v *
                            (d->dtype == CLATTN_F32 ? 4 : 2));
}

static void dev_free(dev *v) {
  tu_release(v->q);
  tu_release(v->kc);
  tu_release(v->vc);
  tu_release(v->ks);
  tu_release(v->vs);
  tu_release(v->table);
  tu_release(v->lens);
  tu_release(v->o);
}

static size_t out_bytes(const clattn_paged_desc *d) {
  return (size_t)d->batch * d->heads_q * d->head_dim_v *
         (d->dtype == CLATTN_F32 ? 4 : 2);
}

static clattn_status call(clattn_ctx *ctx, const clattn_paged_desc *d,
                          const dev *v) {
  tu_set_bytes(ctx, v->o, out_bytes(d), 0xff); /* NaN */
  return clattn_paged_attention(ctx, d, v->q, v->kc, v->vc, v->ks, v->vs,
                                v->table, v->lens, v->o, NULL);
}

/* The output of p's call against the reference. */
static void expect_ref(clattn_ctx *ctx, const paged *p, const float *q,
                       const dev *v, const clattn_params *params,
                       const char *what) {
  const clattn_paged_desc *d = &p->d;
  const size_t n = (size_t)d->batch * d->heads_q * d->head_dim_v;
  clattn_paged_desc dd = *d;
  dd.params = params;
  cr_assert_eq(call(ctx, &dd, v), CLATTN_OK, "%s: %s", what,
               clattn_ctx_errmsg(ctx));
  float *got = tu_alloc(n * sizeof *got), *want = tu_alloc(n * sizeof *want);
  tu_download(ctx, v->o, got, n, d->dtype);
  const int i8 = d->cache_dtype == CLATTN_I8;
  const ref_paged a = {.b = d->batch,
                       .n = 1,
                       .hq = d->heads_q,
                       .hkv = d->heads_kv,
                       .dk = d->head_dim_k,
                       .dv = d->head_dim_v,
                       .num_blocks = d->num_blocks,
                       .page_size = d->page_size,
                       .max_blocks = d->max_blocks,
                       .scale = 1.0 / sqrt((double)d->head_dim_k),
                       .causal = d->causal,
                       .opts = {.window = d->window,
                                .softcap = d->softcap,
                                .alibi = d->alibi_slopes,
                                .sinks = d->sinks}};
  cr_assert_eq(ref_paged_attention(&a, q, p->kc, p->vc, i8 ? p->ks : NULL,
                                   i8 ? p->vs : NULL, p->table, p->lens, want),
               0);
  double tol = clattn__tolerance(d->dtype);
  if (i8 && clattn__tolerance(CLATTN_I8) > tol)
    tol = clattn__tolerance(CLATTN_I8);
  tu_check(what, got, want, n, tol);
  free(got);
  free(want);
}

static void run_case(clattn_ctx *ctx, const pcase *c, unsigned seed) {
  tu_rng r = tu_rng_seed(seed);
  paged p;
  paged_make(&p, c, &r);
  const size_t nq = (size_t)c->batch * c->hq * c->dk;
  float *q = tu_alloc(nq * sizeof *q);
  tu_fill(&r, q, nq, 1.0f);
  tu_round(q, nq, c->dt);
  if (!c->i8) {
    tu_round(p.kc, (size_t)p.nk, c->dt);
    tu_round(p.vc, (size_t)p.nv, c->dt);
  }
  const clattn_params params = {
      .size = sizeof params, .splits = c->splits, .keys = c->keys};
  dev v;
  dev_upload(ctx, &p, q, &v);
  char what[160];
  snprintf(what, sizeof what, "%s", c->name);
  expect_ref(ctx, &p, q, &v, &params, what);

  /* sequence 0 ends; a new sequence of another length takes its pages
   * (and the spare column), rewritten */
  const int mb = p.d.max_blocks;
  const int old = pages_for(p.lens[0], c->page);
  int len = (p.lens[0] * 3 + 5) % (mb * c->page) + 1;
  if (pages_for(len, c->page) > old)
    len = old * c->page > 2 ? old * c->page - 1 : 1;
  p.lens[0] = len;
  for (int j = 0; j < pages_for(len, c->page); j++)
    fill_rows(&p, &r, p.table[j], 0, 0);
  poison_past(&p, &r);
  dev_free(&v);
  dev_upload(ctx, &p, q, &v);
  snprintf(what, sizeof what, "%s, pages reused (length %d)", c->name, len);
  expect_ref(ctx, &p, q, &v, &params, what);
  dev_free(&v);
  paged_free(&p);
  free(q);
}

/* Each case on a context of its own: Oclgrind 21.10 reports reads of a
 * work buffer that the context reallocated between two calls (the combine's
 * partials of a call with more splits than the one before) as reads of
 * uninitialised memory, although the split kernel wrote them (the outputs
 * match the reference). */
Test(paged_decode, against_reference, .timeout = 600) {
  int ran = 0;
  for (int i = 0; i < NCASES; i++) {
    if (tu_subset("small") && !cases[i].small)
      continue;
    if (ran >= tu_case_limit())
      break;
    clattn_ctx *ctx = tu_ctx();
    run_case(ctx, &cases[i], 9100u + (unsigned)i);
    clattn_ctx_destroy(ctx);
    ran++;
  }
  cr_expect_gt(ran, 0);
}

/* Every refusal names what is wrong and writes nothing: the poisoned
 * output is still NaN. */
static void expect_refused(clattn_ctx *ctx, const clattn_paged_desc *d,
                           const dev *v, clattn_status want,
                           const char *needle) {
  const clattn_status st = call(ctx, d, v);
  cr_expect_eq(st, want, "%s: status %d, want %d (%s)", needle, (int)st,
               (int)want, clattn_ctx_errmsg(ctx));
  cr_expect(strstr(clattn_ctx_errmsg(ctx), needle) != NULL,
            "message \"%s\" does not name %s", clattn_ctx_errmsg(ctx), needle);
  cr_expect(tu_untouched(ctx, v->o, out_bytes(d), 0xff),
            "%s: the output was written", needle);
}

Test(paged_decode, bad_input_refused) {
  clattn_ctx *ctx = tu_ctx();
  tu_rng r = tu_rng_seed(5);
  const pcase c = {.name = "bad",
                   .batch = 2,
                   .lens = {20, 33},
                   .hq = 2,
                   .hkv = 1,
                   .dk = 16,
                   .dv = 16,
                   .dt = CLATTN_F32,
                   .page = 16};
  paged p;
  paged_make(&p, &c, &r);
  float q[2 * 2 * 16];
  tu_fill(&r, q, 2 * 2 * 16, 1.0f);
  dev v;
  dev_upload(ctx, &p, q, &v);
  const int mb = p.d.max_blocks;
  int table[16];
  memcpy(table, p.table, (size_t)2 * mb * sizeof(int));

  /* a page index out of the pool, and a negative one, where a length
   * needs it */
  int *t = p.table;
  t[mb + 1] = p.d.num_blocks;
  cl_int err =
      clEnqueueWriteBuffer(clattn_ctx_queue(ctx), v.table, CL_TRUE, 0,
                           (size_t)2 * mb * sizeof(int), t, 0, NULL, NULL);
  cr_assert_eq(err, CL_SUCCESS);
  expect_refused(ctx, &p.d, &v, CLATTN_ERR_SHAPE, "block_table[1][1]");
  t[mb + 1] = table[mb + 1];
  t[0] = -3;
  err = clEnqueueWriteBuffer(clattn_ctx_queue(ctx), v.table, CL_TRUE, 0,
                             (size_t)2 * mb * sizeof(int), t, 0, NULL, NULL);
  cr_assert_eq(err, CL_SUCCESS);
  expect_refused(ctx, &p.d, &v, CLATTN_ERR_SHAPE, "block_table[0][0]");
  t[0] = table[0];
  err = clEnqueueWriteBuffer(clattn_ctx_queue(ctx), v.table, CL_TRUE, 0,
                             (size_t)2 * mb * sizeof(int), t, 0, NULL, NULL);
  cr_assert_eq(err, CL_SUCCESS);

  /* lengths below 0 and over the table's capacity */
  int lens[2] = {-1, 33};
  err = clEnqueueWriteBuffer(clattn_ctx_queue(ctx), v.lens, CL_TRUE, 0,
                             sizeof lens, lens, 0, NULL, NULL);
  cr_assert_eq(err, CL_SUCCESS);
  expect_refused(ctx, &p.d, &v, CLATTN_ERR_SHAPE, "kv_lens[0]");
  lens[0] = 20;
  lens[1] = mb * 16 + 1;
  err = clEnqueueWriteBuffer(clattn_ctx_queue(ctx), v.lens, CL_TRUE, 0,
                             sizeof lens, lens, 0, NULL, NULL);
  cr_assert_eq(err, CL_SUCCESS);
  expect_refused(ctx, &p.d, &v, CLATTN_ERR_SHAPE, "kv_lens[1]");
  lens[1] = 33;
  err = clEnqueueWriteBuffer(clattn_ctx_queue(ctx), v.lens, CL_TRUE, 0,
                             sizeof lens, lens, 0, NULL, NULL);
  cr_assert_eq(err, CL_SUCCESS);

  /* page sizes that are not a power of two up to 256 */
  clattn_paged_desc d = p.d;
  d.page_size = 12;
  expect_refused(ctx, &d, &v, CLATTN_ERR_SHAPE, "page_size");
  d.page_size = 512;
  expect_refused(ctx, &d, &v, CLATTN_ERR_SHAPE, "page_size");

  /* an int8 cache without its scales */
  d = p.d;
  d.cache_dtype = CLATTN_I8;
  expect_refused(ctx, &d, &v, CLATTN_ERR_INVALID_ARG, "k_scale");
  /* a cache in another float type than q's */
  d.cache_dtype = CLATTN_F16;
  expect_refused(ctx, &d, &v, CLATTN_ERR_UNSUPPORTED, "cache_dtype");

  /* and the good call still runs */
  expect_ref(ctx, &p, q, &v, NULL, "bad input: the good call");
  dev_free(&v);
  paged_free(&p);
  clattn_ctx_destroy(ctx);
}

/* The family itself runs one query a sequence: n_q > 1 names the route
 * that takes it. */
Test(paged_decode, more_queries_named) {
  clattn_paged_desc d = {.size = sizeof d,
                         .batch = 1,
                         .n_q = 2,
                         .heads_q = 1,
                         .heads_kv = 1,
                         .head_dim_k = 16,
                         .head_dim_v = 16,
                         .num_blocks = 4,
                         .page_size = 16,
                         .max_blocks = 4};
  char why[256] = "";
  cr_expect_eq(clattn__family_paged_decode.check(&d, why, sizeof why),
               CLATTN_ERR_UNSUPPORTED);
  cr_expect(strstr(why, "paged-prefill") != NULL, "%s", why);
  d.n_q = 1;
  cr_expect_eq(clattn__family_paged_decode.check(&d, why, sizeof why),
               CLATTN_OK, "%s", why);
}

/* unchecked: a garbage table (pages outside the pool where lengths need
 * them) and a length past the table's capacity are not refused, and the
 * kernels read nothing outside the pool (Oclgrind checks every access):
 * a sequence whose pages are all garbage sees no key (zeros), one whose
 * length is clamped to the capacity gives the clamped call's output. */
Test(paged_decode, unchecked_garbage_stays_in_pool) {
  clattn_ctx *ctx = tu_ctx();
  tu_rng r = tu_rng_seed(11);
  const pcase c = {.name = "unchecked",
                   .batch = 2,
                   .lens = {40, 48},
                   .hq = 2,
                   .hkv = 2,
                   .dk = 16,
                   .dv = 16,
                   .dt = CLATTN_F32,
                   .page = 16,
                   .splits = 2};
  paged p;
  paged_make(&p, &c, &r);
  const int mb = p.d.max_blocks;
  float q[2 * 2 * 16];
  tu_fill(&r, q, 2 * 2 * 16, 1.0f);
  /* sequence 1 fills the table's capacity */
  p.lens[1] = mb * 16;
  for (int j = 0; j < mb; j++)
    fill_rows(&p, &r, p.table[mb + j] = (j + 7) % p.d.num_blocks, 0, 0);
  dev v;
  dev_upload(ctx, &p, q, &v);
  expect_ref(ctx, &p, q, &v, NULL, "unchecked: the valid call");
  float want[2 * 2 * 16], got[2 * 2 * 16];
  tu_download(ctx, v.o, want, 2 * 2 * 16, CLATTN_F32);

  int table[64], lens[2] = {40, mb * 16 + 1000};
  memcpy(table, p.table, (size_t)2 * mb * sizeof(int));
  static const int garbage[] = {-1, -100000, 1 << 30, 0x7fffffff};
  for (int j = 0; j < mb; j++)
    table[j] = j < 4 ? garbage[j] : p.d.num_blocks + j;
  tu_release(v.table);
  tu_release(v.lens);
  v.table = tu_upload_int(ctx, table, (size_t)2 * mb);
  v.lens = tu_upload_int(ctx, lens, 2);
  clattn_paged_desc d = p.d;
  d.unchecked = 1;
  cr_assert_eq(call(ctx, &d, &v), CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  tu_download(ctx, v.o, got, 2 * 2 * 16, CLATTN_F32);
  for (int i = 0; i < 2 * 16; i++)
    cr_expect_eq(got[i], 0.0f, "sequence 0 element %d: %g, want 0", i,
                 (double)got[i]);
  tu_check("unchecked: clamped length", got + 2 * 16, want + 2 * 16, 2 * 16,
           clattn__tolerance(CLATTN_F32));
  d.unchecked = 0;
  expect_refused(ctx, &d, &v, CLATTN_ERR_SHAPE, "block_table[0][0]");
  dev_free(&v);
  paged_free(&p);
  clattn_ctx_destroy(ctx);
}
