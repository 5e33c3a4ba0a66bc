/* test_paged_prefill.c - the paged-prefill family (chunked prefill over a
 * paged KV cache) against ref_paged_attention.
 *
 * Each case builds a pool of pages: every page a sequence needs is drawn
 * from a shuffled pool; the spare pages (shared by no one) and the rows of
 * each last page past its sequence's length are NaN (an int8 cache: NaN
 * scales), and the table's entries past each sequence's last page are
 * garbage (a spare page, -1, 1 << 30), so any read past a length shows as
 * NaN or an out-of-range read (Oclgrind).  Outputs are NaN before each run.
 * The cases cover lengths 1, page - 1, page, page + 1 and long ones in one
 * batch, more queries than a sequence has keys (causal: zeros), n_q = 1,
 * page sizes 1, 8, 16, 256, f32/f16/bf16 and int8 caches, MHA/GQA/MQA, the
 * attention options and explicit tiles; then the chunked-prefill
 * consistency, pages reused by a new sequence after one ends, every bad
 * input refused with nothing written, and `unchecked` with a garbage table.
 * CLATTN_TEST_SUBSET=small keeps a few small cases (simulators). */
#include "family/family.h"
#include "family_call.h"
#include "reference/ref_paged.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))
enum { MAXB = 8, SPARE = 3 };

typedef struct pcase {
  const char *name;
  int b, n, hq, hkv, dk, dv, page;
  clattn_dtype dt, cache; /* cache: 0 or CLATTN_I8 */
  int causal, window;
  float softcap;
  int alibi, sinks;
  int lens[MAXB];
  clattn_params p; /* rows, keys, wg (0: automatic) */
  int small;       /* kept by CLATTN_TEST_SUBSET=small */
} pcase;

/* A built case: host data (as floats; an int8 cache's integers), the
 * device buffers in the family's order and the description. */
typedef struct paged {
  clattn_paged_desc d;
  float *q, *kc, *vc, *ks, *vs;
  int *table, *lens;
  size_t nq, nk, nv, ns, no;
  float slopes[64], sinks[64];
  cl_mem buf[8];
} paged;

#define P(...)                                                                 \
  { .size = sizeof(clattn_params), __VA_ARGS__ }

static const pcase cases[] = {
    {"lengths f32 causal p16",
     5,
     5,
     4,
     2,
     16,
     16,
     16,
     CLATTN_F32,
     0,
     1,
     0,
     0,
     0,
     0,
     {1, 15, 16, 17, 300},
     P(0),
     1},
    {"lengths f32 p16",
     5,
     5,
     4,
     2,
     16,
     16,
     16,
     CLATTN_F32,
     0,
     0,
     0,
     0,
     0,
     0,
     {1, 15, 16, 17, 300},
     P(0),
     0},
    {"n_q 1 p16",
     4,
     1,
     4,
     4,
     32,
     32,
     16,
     CLATTN_F32,
     0,
     1,
     0,
     0,
     0,
     0,
     {1, 16, 17, 40},
     P(0),
     1},
    {"n_q 1 i8 p8",
     3,
     1,
     2,
     1,
     16,
     16,
     8,
     CLATTN_F32,
     CLATTN_I8,
     0,
     0,
     0,
     0,
     0,
     {7, 8, 9},
     P(0),
     0},
    {"page 1 mqa f16",
     3,
     9,
     4,
     1,
     32,
     16,
     1,
     CLATTN_F16,
     0,
     1,
     0,
     0,
     0,
     0,
     {3, 12, 40},
     P(0),
     1},
    {"page 8 gqa bf16",
     4,
     17,
     8,
     2,
     64,
     64,
     8,
     CLATTN_BF16,
     0,
     1,
     0,
     0,
     0,
     0,
     {7, 8, 9, 100},
     P(0),
     0},
    {"page 256 mha f32",
     3,
     33,
     2,
     2,
     64,
     32,
     256,
     CLATTN_F32,
     0,
     1,
     0,
     0,
     0,
     0,
     {255, 256, 600},
     P(0),
     0},
    {"i8 f32 p16 gqa",
     5,
     12,
     4,
     2,
     64,
     64,
     16,
     CLATTN_F32,
     CLATTN_I8,
     1,
     0,
     0,
     0,
     0,
     {1, 15, 16, 17, 200},
     P(0),
     1},
    {"i8 f16 p8 noncausal",
     3,
     10,
     6,
     3,
     32,
     32,
     8,
     CLATTN_F16,
     CLATTN_I8,
     0,
     0,
     0,
     0,
     0,
     {7, 9, 70},
     P(0),
     0},
    {"i8 bf16 p256 mqa",
     2,
     7,
     4,
     1,
     16,
     16,
     256,
     CLATTN_BF16,
     CLATTN_I8,
     1,
     0,
     0,
     0,
     0,
     {255, 257},
     P(0),
     0},
    {"window",
     4,
     20,
     4,
     2,
     32,
     32,
     16,
     CLATTN_F32,
     0,
     1,
     13,
     0,
     0,
     0,
     {15, 16, 17, 150},
     P(0),
     1},
    {"window noncausal i8",
     3,
     9,
     2,
     1,
     32,
     32,
     8,
     CLATTN_F32,
     CLATTN_I8,
     0,
     24,
     0,
     0,
     0,
     {9, 40, 90},
     P(0),
     0},
    {"softcap",
     3,
     11,
     4,
     4,
     32,
     32,
     16,
     CLATTN_F16,
     0,
     1,
     0,
     5.0f,
     0,
     0,
     {16, 17, 80},
     P(0),
     0},
    {"alibi",
     3,
     11,
     4,
     2,
     32,
     32,
     16,
     CLATTN_F32,
     0,
     1,
     0,
     0,
     1,
     0,
     {15, 17, 80},
     P(0),
     1},
    {"sinks",
     3,
     11,
     4,
     2,
     32,
     32,
     16,
     CLATTN_F32,
     0,
     1,
     0,
     0,
     0,
     1,
     {1, 17, 80},
     P(0),
     1},
    {"all options i8",
     3,
     11,
     4,
     2,
     32,
     32,
     8,
     CLATTN_F32,
     CLATTN_I8,
     1,
     20,
     8.0f,
     1,
     1,
     {9, 40, 77},
     P(0),
     0},
    {"tile 4 keys in page 16",
     3,
     19,
     4,
     2,
     32,
     32,
     16,
     CLATTN_F32,
     0,
     1,
     0,
     0,
     0,
     0,
     {15, 17, 99},
     P(.rows = 32, .keys = 4, .wg = 16),
     1},
    {"tile 64 keys over page 8",
     3,
     19,
     4,
     2,
     32,
     32,
     8,
     CLATTN_F32,
     0,
     1,
     0,
     0,
     0,
     0,
     {7, 9, 150},
     P(.rows = 64, .keys = 64, .wg = 32),
     0},
    {"tile 8 keys page 1 rows 2x",
     3,
     13,
     2,
     1,
     16,
     32,
     1,
     CLATTN_F16,
     CLATTN_I8,
     1,
     0,
     0,
     0,
     0,
     {1, 2, 50},
     P(.rows = 16, .keys = 8, .wg = 8),
     0},
};

static float *fnan(size_t n) {
  float *x = tu_alloc((n ? n : 1) * sizeof *x);
  for (size_t i = 0; i < n; i++)
    x[i] = NAN;
  return x;
}

/* An int8 cache's integers (held in floats) to the device. */
static cl_mem upload_i8(clattn_ctx *ctx, const float *x, size_t n) {
  signed char *c = tu_alloc(n ? n : 1);
  for (size_t i = 0; i < n; i++)
    c[i] = (signed char)x[i];
  cl_mem m = tu_buffer(ctx, n);
  cl_int err = clEnqueueWriteBuffer(clattn_ctx_queue(ctx), m, CL_TRUE, 0, n, c,
                                    0, NULL, NULL);
  free(c);
  cr_assert(err == CL_SUCCESS, "clEnqueueWriteBuffer failed: %d", (int)err);
  return m;
}

static int pages_of(int len, int P) { return len <= 0 ? 0 : (len - 1) / P + 1; }

/* Row t of sequence b's pages: fresh random values (int8: integers and a
 * scale). */
static void fill_row(paged *s, tu_rng *r, int page, int row) {
  const clattn_paged_desc *d = &s->d;
  const int i8 = d->cache_dtype == CLATTN_I8;
  for (int h = 0; h < d->heads_kv; h++) {
    const size_t pr = ((size_t)page * d->page_size + row) * d->heads_kv + h;
    for (int e = 0; e < d->head_dim_k; e++)
      s->kc[pr * d->head_dim_k + e] =
          i8 ? (float)(tu_randint(r, 255) - 127) : tu_uniform(r);
    for (int e = 0; e < d->head_dim_v; e++)
      s->vc[pr * d->head_dim_v + e] =
          i8 ? (float)(tu_randint(r, 255) - 127) : tu_uniform(r);
    if (i8) {
      s->ks[pr] = 0.004f + 0.004f * fabsf(tu_uniform(r));
      s->vs[pr] = 0.004f + 0.004f * fabsf(tu_uniform(r));
    }
  }
}

/* Poison row `row` of page: NaN values, or an int8 cache's NaN scales. */
static void poison_row(paged *s, tu_rng *r, int page, int row) {
  const clattn_paged_desc *d = &s->d;
  fill_row(s, r, page, row);
  for (int h = 0; h < d->heads_kv; h++) {
    const size_t pr = ((size_t)page * d->page_size + row) * d->heads_kv + h;
    if (d->cache_dtype == CLATTN_I8) {
      s->ks[pr] = s->vs[pr] = NAN;
      continue;
    }
    for (int e = 0; e < d->head_dim_k; e++)
      s->kc[pr * d->head_dim_k + e] = NAN;
    for (int e = 0; e < d->head_dim_v; e++)
      s->vc[pr * d->head_dim_v + e] = NAN;
  }
}

/* Upload the pools, the table and the lengths into s->buf (replacing). */
static void upload(clattn_ctx *ctx, paged *s) {
  const clattn_paged_desc *d = &s->d;
  const int i8 = d->cache_dtype == CLATTN_I8;
  for (int i = 1; i < 7; i++)
    tu_release(s->buf[i]), s->buf[i] = NULL;
  if (i8) {
    s->buf[1] = upload_i8(ctx, s->kc, s->nk);
    s->buf[2] = upload_i8(ctx, s->vc, s->nv);
    s->buf[3] = tu_upload(ctx, s->ks, s->ns, CLATTN_F32);
    s->buf[4] = tu_upload(ctx, s->vs, s->ns, CLATTN_F32);
  } else {
    tu_round(s->kc, s->nk, d->dtype);
    tu_round(s->vc, s->nv, d->dtype);
    s->buf[1] = tu_upload(ctx, s->kc, s->nk, d->dtype);
    s->buf[2] = tu_upload(ctx, s->vc, s->nv, d->dtype);
  }
  s->buf[5] = tu_upload_int(ctx, s->table, (size_t)d->batch * d->max_blocks);
  s->buf[6] = tu_upload_int(ctx, s->lens, (size_t)d->batch);
}

/* Build case c: pages drawn from a shuffled pool, SPARE pages left over;
 * garbage past each length (above). */
static void build(clattn_ctx *ctx, const pcase *c, tu_rng *r, paged *s) {
  memset(s, 0, sizeof *s);
  const int P = c->page;
  int mb = 1, total = 0;
  for (int b = 0; b < c->b; b++) {
    const int np = pages_of(c->lens[b], P);
    mb = np > mb ? np : mb;
    total += np;
  }
  const int nb = total + SPARE;
  for (int h = 0; h < c->hq && h < 64; h++) {
    s->slopes[h] = 0.05f * (float)(h + 1);
    s->sinks[h] = 1.5f * tu_uniform(r);
  }
  s->d = (clattn_paged_desc){.size = sizeof s->d,
                             .batch = c->b,
                             .n_q = c->n,
                             .heads_q = c->hq,
                             .heads_kv = c->hkv,
                             .head_dim_k = c->dk,
                             .head_dim_v = c->dv,
                             .num_blocks = nb,
                             .page_size = P,
                             .max_blocks = mb,
                             .dtype = c->dt,
                             .cache_dtype = c->cache,
                             .causal = c->causal,
                             .window = c->window,
                             .softcap = c->softcap,
                             .alibi_slopes = c->alibi ? s->slopes : NULL,
                             .sinks = c->sinks ? s->sinks : NULL};
  const size_t pool = (size_t)nb * P * c->hkv;
  s->nq = (size_t)c->b * c->n * c->hq * c->dk;
  s->no = (size_t)c->b * c->n * c->hq * c->dv;
  s->nk = pool * c->dk, s->nv = pool * c->dv, s->ns = pool;
  s->q = fnan(s->nq), s->kc = fnan(s->nk), s->vc = fnan(s->nv);
  s->ks = fnan(s->ns), s->vs = fnan(s->ns);
  s->table = tu_alloc((size_t)c->b * mb * sizeof *s->table);
  s->lens = tu_alloc((size_t)c->b * sizeof *s->lens);
  int *perm = tu_alloc((size_t)nb * sizeof *perm);
  for (int i = 0; i < nb; i++)
    perm[i] = i;
  for (int i = nb - 1; i > 0; i--) {
    const int k = tu_randint(r, i + 1), t = perm[i];
    perm[i] = perm[k], perm[k] = t;
  }
  const int spare = perm[nb - 1];
  for (int i = total; i < nb; i++) /* shared by no one: all NaN */
    for (int row = 0; row < P; row++)
      poison_row(s, r, perm[i], row);
  int next = 0;
  for (int b = 0; b < c->b; b++) {
    const int len = c->lens[b], np = pages_of(len, P);
    s->lens[b] = len;
    for (int j = 0; j < mb; j++) {
      int *e = &s->table[(size_t)b * mb + j];
      if (j >= np) {
        *e = j % 3 == 0 ? spare : j % 3 == 1 ? -1 : 1 << 30;
        continue;
      }
      *e = perm[next++];
      for (int row = 0; row < P; row++)
        if ((long)j * P + row < len)
          fill_row(s, r, *e, row);
        else
          poison_row(s, r, *e, row);
    }
  }
  free(perm);
  tu_fill(r, s->q, s->nq, 1.0f);
  tu_round(s->q, s->nq, c->dt);
  s->buf[0] = tu_upload(ctx, s->q, s->nq, c->dt);
  upload(ctx, s);
}

static void release(paged *s) {
  for (int i = 0; i < 8; i++)
    tu_release(s->buf[i]);
  free(s->q), free(s->kc), free(s->vc), free(s->ks), free(s->vs);
  free(s->table), free(s->lens);
}

static void reference(const paged *s, float *o) {
  const clattn_paged_desc *d = &s->d;
  const int i8 = d->cache_dtype == CLATTN_I8;
  const ref_paged a = {
      d->batch,      d->n_q,
      d->heads_q,    d->heads_kv,
      d->head_dim_k, d->head_dim_v,
      d->num_blocks, d->page_size,
      d->max_blocks, 1.0 / sqrt((double)d->head_dim_k),
      d->causal,     {d->window, d->softcap, d->alibi_slopes, d->sinks}};
  cr_assert(ref_paged_attention(&a, s->q, s->kc, s->vc, i8 ? s->ks : NULL,
                                i8 ? s->vs : NULL, s->table, s->lens, o) == 0,
            "reference out of memory");
}

/* Run the family on s into a fresh NaN-filled output (returned, with *out
 * its host copy); the status. */
static clattn_status run(clattn_ctx *ctx, paged *s, const clattn_params *p,
                         int public_api, float *out) {
  const clattn_paged_desc *d = &s->d;
  tu_release(s->buf[7]);
  s->buf[7] = tu_sentinel(ctx, s->no, d->dtype, 0xff);
  clattn_status st;
  if (public_api) {
    clattn_paged_desc pd = *d;
    pd.params = p;
    st = clattn_paged_attention(ctx, &pd, s->buf[0], s->buf[1], s->buf[2],
                                s->buf[3], s->buf[4], s->buf[5], s->buf[6],
                                s->buf[7], NULL);
  } else {
    cl_mem bufs[9] = {0};
    memcpy(bufs, s->buf, sizeof s->buf);
    st = tu_family_call(ctx, &clattn__family_paged_prefill, d, p, bufs, NULL);
  }
  if (st == CLATTN_OK && out != NULL) {
    clFinish(clattn_ctx_queue(ctx));
    tu_download(ctx, s->buf[7], out, s->no, d->dtype);
  }
  return st;
}

static double tol(const paged *s) {
  const double t = clattn__tolerance(s->d.dtype);
  return s->d.cache_dtype == CLATTN_I8 && clattn__tolerance(CLATTN_I8) > t
             ? clattn__tolerance(CLATTN_I8)
             : t;
}

static void check_case(clattn_ctx *ctx, const pcase *c, int seed) {
  tu_rng r = tu_rng_seed(1000 + (uint64_t)seed);
  paged s;
  build(ctx, c, &r, &s);
  float *got = tu_alloc(s.no * sizeof *got), *want = fnan(s.no);
  reference(&s, want);
  /* n_q > 1 through the public call (which routes it here) */
  const clattn_params *p = c->p.rows || c->p.keys || c->p.wg ? &c->p : NULL;
  const clattn_status st = run(ctx, &s, p, c->n > 1 && seed % 2 == 0, got);
  cr_assert(st == CLATTN_OK, "%s: %s: %s", c->name, clattn_status_str(st),
            clattn_ctx_errmsg(ctx));
  tu_check(c->name, got, want, s.no, tol(&s));
  /* a causal query before its sequence's first position sees nothing:
   * exact zeros */
  const size_t row = (size_t)c->hq * c->dv;
  for (int b = 0; c->causal && b < c->b; b++)
    for (int i = 0; i < c->n && s.lens[b] - c->n + i < 0; i++)
      for (size_t e = 0; e < row; e++)
        cr_assert(got[((size_t)b * c->n + i) * row + e] == 0.0f,
                  "%s: sequence %d query %d (position %d) should be zeros",
                  c->name, b, i, s.lens[b] - c->n + i);
  free(got), free(want);
  release(&s);
}

Test(paged_prefill, against_reference) {
  clattn_ctx *ctx = tu_ctx();
  int ran = 0;
  for (int i = 0; i < NELEM(cases); i++) {
    if (tu_subset("small") && !cases[i].small)
      continue;
    check_case(ctx, &cases[i], i);
    ran++;
  }
  cr_assert(ran >= 5, "only %d cases ran", ran);
  clattn_ctx_destroy(ctx);
}

/* A prompt of T positions run in two chunks (the second's kv_lens T, the
 * whole prompt in the cache) gives the second chunk the outputs a single
 * call over all T queries gives its last rows. */
Test(paged_prefill, chunked_matches_single_shot) {
  clattn_ctx *ctx = tu_ctx();
  const int T = 37, n1 = 20, n2 = T - n1;
  const pcase whole = {"whole", 2, T, 4, 2, 32, 32,     8,    CLATTN_F32,
                       0,       1, 0, 0, 0, 0,  {T, T}, P(0), 1};
  tu_rng r = tu_rng_seed(77);
  paged s;
  build(ctx, &whole, &r, &s);
  const size_t row = (size_t)whole.hq * whole.dv;
  float *full = tu_alloc(s.no * sizeof *full);
  cr_assert(run(ctx, &s, NULL, 1, full) == CLATTN_OK, "%s",
            clattn_ctx_errmsg(ctx));
  /* the second chunk: the last n2 queries of each sequence */
  paged c2 = s;
  c2.d.n_q = n2;
  c2.no = (size_t)whole.b * n2 * row;
  c2.nq = (size_t)whole.b * n2 * whole.hq * whole.dk;
  float *q2 = tu_alloc(c2.nq * sizeof *q2);
  for (int b = 0; b < whole.b; b++)
    memcpy(q2 + (size_t)b * n2 * whole.hq * whole.dk,
           s.q + ((size_t)b * T + n1) * whole.hq * whole.dk,
           (size_t)n2 * whole.hq * whole.dk * sizeof *q2);
  c2.buf[0] = tu_upload(ctx, q2, c2.nq, CLATTN_F32);
  c2.buf[7] = NULL;
  float *part = tu_alloc(c2.no * sizeof *part);
  cr_assert(run(ctx, &c2, NULL, 1, part) == CLATTN_OK, "%s",
            clattn_ctx_errmsg(ctx));
  for (int b = 0; b < whole.b; b++) {
    char what[64];
    snprintf(what, sizeof what, "chunk 2 of sequence %d", b);
    tu_check(what, part + (size_t)b * n2 * row,
             full + ((size_t)b * T + n1) * row, (size_t)n2 * row, 1e-5);
  }
  /* the first chunk alone (kv_lens n1) is the single shot's first rows */
  paged c1 = s;
  c1.d.n_q = n1;
  c1.no = (size_t)whole.b * n1 * row;
  c1.nq = (size_t)whole.b * n1 * whole.hq * whole.dk;
  float *q1 = tu_alloc(c1.nq * sizeof *q1);
  for (int b = 0; b < whole.b; b++)
    memcpy(q1 + (size_t)b * n1 * whole.hq * whole.dk,
           s.q + (size_t)b * T * whole.hq * whole.dk,
           (size_t)n1 * whole.hq * whole.dk * sizeof *q1);
  const int lens1[2] = {n1, n1};
  c1.buf[0] = tu_upload(ctx, q1, c1.nq, CLATTN_F32);
  c1.buf[6] = tu_upload_int(ctx, lens1, 2);
  c1.buf[7] = NULL;
  float *first = tu_alloc(c1.no * sizeof *first);
  cr_assert(run(ctx, &c1, NULL, 1, first) == CLATTN_OK, "%s",
            clattn_ctx_errmsg(ctx));
  for (int b = 0; b < whole.b; b++) {
    char what[64];
    snprintf(what, sizeof what, "chunk 1 of sequence %d", b);
    tu_check(what, first + (size_t)b * n1 * row, full + (size_t)b * T * row,
             (size_t)n1 * row, 1e-5);
  }
  tu_release(c2.buf[0]), tu_release(c2.buf[7]);
  tu_release(c1.buf[0]), tu_release(c1.buf[6]), tu_release(c1.buf[7]);
  free(q1), free(q2), free(full), free(part), free(first);
  release(&s);
  clattn_ctx_destroy(ctx);
}

/* A sequence ends and a new one takes its pages (rewritten) beside one
 * that goes on: the second call sees the new contents alone. */
Test(paged_prefill, pages_reused_after_a_sequence_ends) {
  clattn_ctx *ctx = tu_ctx();
  const pcase c = {"reuse", 2, 6, 2, 1, 16, 16,       8,    CLATTN_F32,
                   0,       1, 0, 0, 0, 0,  {30, 20}, P(0), 1};
  tu_rng r = tu_rng_seed(5);
  paged s;
  build(ctx, &c, &r, &s);
  float *got = tu_alloc(s.no * sizeof *got), *want = fnan(s.no);
  cr_assert(run(ctx, &s, NULL, 1, got) == CLATTN_OK, "%s",
            clattn_ctx_errmsg(ctx));
  /* sequence 0 ends; the new sequence 0 takes its first three pages in
   * reverse order, 21 positions, fresh contents; its fourth page is freed
   * and poisoned */
  const int mb = s.d.max_blocks,
            old[4] = {s.table[0], s.table[1], s.table[2], s.table[3]};
  s.table[0] = old[2], s.table[1] = old[1], s.table[2] = old[0];
  s.table[3] = old[3] ^ 0x40000000;
  s.lens[0] = 21;
  for (int j = 0; j < 3; j++)
    for (int row = 0; row < 8; row++)
      if (j * 8 + row < 21)
        fill_row(&s, &r, s.table[j], row);
      else
        poison_row(&s, &r, s.table[j], row);
  for (int row = 0; row < 8; row++)
    poison_row(&s, &r, old[3], row);
  (void)mb;
  upload(ctx, &s);
  reference(&s, want);
  cr_assert(run(ctx, &s, NULL, 1, got) == CLATTN_OK, "%s",
            clattn_ctx_errmsg(ctx));
  tu_check("after reuse", got, want, s.no, tol(&s));
  free(got), free(want);
  release(&s);
  clattn_ctx_destroy(ctx);
}

/* Expect the call refused with st, a message containing `names`, and the
 * output untouched. */
static void expect_refused(clattn_ctx *ctx, paged *s, clattn_status want,
                           const char *names, const char *what) {
  const clattn_status st = run(ctx, s, NULL, 1, NULL);
  cr_assert(st == want, "%s: got %s, expected %s (%s)", what,
            clattn_status_str(st), clattn_status_str(want),
            clattn_ctx_errmsg(ctx));
  cr_assert(strstr(clattn_ctx_errmsg(ctx), names) != NULL,
            "%s: message \"%s\" does not name %s", what, clattn_ctx_errmsg(ctx),
            names);
  clFinish(clattn_ctx_queue(ctx));
  cr_assert(
      tu_untouched(ctx, s->buf[7], s->no * clattn_dtype_size(s->d.dtype), 0xff),
      "%s: the output was written", what);
}

Test(paged_prefill, bad_input_refused) {
  clattn_ctx *ctx = tu_ctx();
  const pcase c = {"bad",     3, 4, 2, 1, 16, 16,         8,    CLATTN_F32,
                   CLATTN_I8, 1, 0, 0, 0, 0,  {5, 17, 9}, P(0), 1};
  tu_rng r = tu_rng_seed(9);
  paged s;
  build(ctx, &c, &r, &s);
  const int mb = s.d.max_blocks;
  /* a needed page outside the pool, then a negative one */
  const int keep = s.table[mb + 2];
  s.table[mb + 2] = s.d.num_blocks;
  upload(ctx, &s);
  expect_refused(ctx, &s, CLATTN_ERR_SHAPE, "block_table[1][2]", "page index");
  s.table[mb + 2] = -1;
  upload(ctx, &s);
  expect_refused(ctx, &s, CLATTN_ERR_SHAPE, "block_table[1][2]", "negative");
  s.table[mb + 2] = keep;
  /* lengths over the table's capacity, and negative */
  s.lens[2] = mb * 8 + 1;
  upload(ctx, &s);
  expect_refused(ctx, &s, CLATTN_ERR_SHAPE, "kv_lens[2]", "length");
  s.lens[2] = -1;
  upload(ctx, &s);
  expect_refused(ctx, &s, CLATTN_ERR_SHAPE, "kv_lens[2]", "negative length");
  s.lens[2] = 9;
  upload(ctx, &s);
  /* a page size not a power of two */
  s.d.page_size = 12;
  expect_refused(ctx, &s, CLATTN_ERR_SHAPE, "page_size", "page size 12");
  s.d.page_size = 512;
  expect_refused(ctx, &s, CLATTN_ERR_SHAPE, "page_size", "page size 512");
  s.d.page_size = 8;
  /* an unknown cache dtype; an int8 cache without scales */
  s.d.cache_dtype = (clattn_dtype)7;
  expect_refused(ctx, &s, CLATTN_ERR_INVALID_ARG, "cache_dtype", "dtype 7");
  s.d.cache_dtype = CLATTN_I8;
  cl_mem ks = s.buf[3];
  s.buf[3] = NULL;
  const clattn_status st = run(ctx, &s, NULL, 1, NULL);
  cr_assert(st != CLATTN_OK && strstr(clattn_ctx_errmsg(ctx), "k_scale"),
            "missing scales: %s (%s)", clattn_status_str(st),
            clattn_ctx_errmsg(ctx));
  s.buf[3] = ks;
  /* still runs once all is well */
  float *got = tu_alloc(s.no * sizeof *got), *want = fnan(s.no);
  reference(&s, want);
  cr_assert(run(ctx, &s, NULL, 1, got) == CLATTN_OK, "%s",
            clattn_ctx_errmsg(ctx));
  tu_check("after the refusals", got, want, s.no, tol(&s));
  free(got), free(want);
  release(&s);
  clattn_ctx_destroy(ctx);
}

/* unchecked: a garbage table makes its pages' keys invisible (never read:
 * Oclgrind), a length over the capacity is clamped to it. */
Test(paged_prefill, unchecked_garbage_table) {
  clattn_ctx *ctx = tu_ctx();
  const pcase c = {"unchecked", 3, 5, 2, 1, 16, 16,           8,    CLATTN_F32,
                   0,           1, 0, 0, 0, 0,  {24, 24, 24}, P(0), 1};
  tu_rng r = tu_rng_seed(11);
  paged s;
  build(ctx, &c, &r, &s);
  float *got = tu_alloc(s.no * sizeof *got), *want = fnan(s.no);
  reference(&s, want); /* sequence 0's clamped length is its 24 */
  const int mb = s.d.max_blocks;
  s.lens[0] = 1 << 20;
  s.table[mb + 0] = -7, s.table[mb + 1] = 1 << 30, s.table[mb + 2] = -1;
  s.table[2 * mb + 1] = s.d.num_blocks;
  s.lens[2] = -3;
  upload(ctx, &s);
  s.d.unchecked = 1;
  cr_assert(run(ctx, &s, NULL, 1, got) == CLATTN_OK, "%s",
            clattn_ctx_errmsg(ctx));
  const size_t per_seq = s.no / 3;
  tu_check("clamped length", got, want, per_seq, tol(&s));
  for (size_t e = per_seq; e < s.no; e++)
    cr_assert(isfinite(got[e]), "unchecked: output %zu is %g", e, got[e]);
  /* sequence 1 sees no page at all, sequence 2 no key: zeros */
  for (size_t e = per_seq; e < s.no; e++)
    cr_assert(got[e] == 0.0f, "unchecked: output %zu is %g, not 0", e, got[e]);
  free(got), free(want);
  release(&s);
  clattn_ctx_destroy(ctx);
}
