/* test_paged_layer.c - clattn_layer_step_paged: the GQA layer over a paged
 * KV pool the application owns, in a serving loop, against the same
 * layer on contiguous caches (clattn_layer_prefill / clattn_layer_decode)
 * and against ref_layer.
 *
 * The loop: sequences of different lengths join a batch, get a prefill
 * chunk, decode together (their rows in a different order from step to
 * step), one finishes and its pages, back on the shuffled free list, go
 * to a new sequence.  Pages are taken from the free list in shuffled
 * order; the pool starts as NaN bytes and the table's entries past a
 * sequence's pages hold -1, 1 << 30 or a free (NaN) page, so a read past
 * a length shows.  Every position's y must equal, per sequence,
 * the contiguous layer fed the same chunks (f32 tolerance, 1e-4) and the
 * reference of the whole sequence (causal).
 *
 * int8 pools: against the reference of the unquantized layer at 3e-2.
 * The append stores each (position, head) row of K and V as round(x /
 * s) with s = max|x| / 127, an error of at most s / 2 = max|x| / 254 per
 * element: V's moves an output by at most ~0.4% of max|v|, K's moves a
 * logit by at most scale * sum_i |q_i| max|k| / 254 (~0.016 for this
 * shape's O(1) projections, dk = 16), a relative change of the softmax
 * weights of about that much; through W_o both stay within ~2e-2 of the
 * output's largest value, and 3e-2 leaves a margin.
 *
 * A layer with every attention option (window, soft-cap, ALiBi, sinks)
 * serves the same loop against the contiguous layer and ref_layer_opts.
 * Kinds without a paged pool (talking-heads, Optimised, Efficient,
 * Super, SwitchHead) refuse it naming the kind; bad pools, tables and
 * arguments are refused with a named error and nothing written; an
 * unchecked pool reads no table back (the same rows; a bad page skipped,
 * not refused).
 * CLATTN_TEST_SUBSET=small: the float32 pool at page size 8 alone.
 */
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The layer's shape: GQA, head dims unequal. */
enum { D = 32, HQ = 4, HKV = 2, DK = 16, DV = 8 };
enum { MAX_SEQS = 4, MAX_POS = 64, MAX_BATCH = 3, MAX_PAGES = 64 };
/* int8 pools against the unquantized reference (the header's argument) */
static const double int8_tol = 3e-2;

typedef struct fixture {
  float *wq, *wk, *wv, *wo;
  clattn_ctx *ctx;
  cl_mem dwq, dwk, dwv, dwo;
  clattn_layer *layer;
} fixture;

/* The attention options of the options case: a window, a soft-cap, ALiBi
 * and sinks together. */
static const float alibi_slopes[HQ] = {0.5f, 0.25f, 0.125f, 0.0625f};
static const float sink_logits[HQ] = {0.3f, -1.0f, 1.0f, -0.5f};
enum { OPT_WINDOW = 5 };
static const float opt_softcap = 4.0f;

static void fx_init(fixture *f, unsigned seed, int options) {
  memset(f, 0, sizeof *f);
  const size_t nq = (size_t)D * HQ * DK, nk = (size_t)D * HKV * DK,
               nv = (size_t)D * HKV * DV, no = (size_t)HQ * DV * D;
  f->wq = tu_alloc(nq * 4);
  f->wk = tu_alloc(nk * 4);
  f->wv = tu_alloc(nv * 4);
  f->wo = tu_alloc(no * 4);
  tu_rng r = tu_rng_seed(seed);
  const float a = 1.7f / sqrtf((float)D);
  tu_fill(&r, f->wq, nq, a);
  tu_fill(&r, f->wk, nk, a);
  tu_fill(&r, f->wv, nv, a);
  tu_fill(&r, f->wo, no, 1.7f / sqrtf((float)(HQ * DV)));
  f->ctx = tu_ctx();
  f->dwq = tu_upload(f->ctx, f->wq, nq, CLATTN_F32);
  f->dwk = tu_upload(f->ctx, f->wk, nk, CLATTN_F32);
  f->dwv = tu_upload(f->ctx, f->wv, nv, CLATTN_F32);
  f->dwo = tu_upload(f->ctx, f->wo, no, CLATTN_F32);
  const clattn_layer_desc d = {.size = sizeof d,
                               .d_model = D,
                               .heads_q = HQ,
                               .heads_kv = HKV,
                               .head_dim_k = DK,
                               .head_dim_v = DV,
                               .window = options ? OPT_WINDOW : 0,
                               .softcap = options ? opt_softcap : 0.0f,
                               .alibi_slopes = options ? alibi_slopes : NULL,
                               .sinks = options ? sink_logits : NULL};
  clattn_status st = clattn_layer_create(f->ctx, &d, f->dwq, f->dwk, f->dwv,
                                         f->dwo, &f->layer);
  cr_assert(st == CLATTN_OK, "clattn_layer_create: %s",
            clattn_ctx_errmsg(f->ctx));
}

static void fx_free(fixture *f) {
  clattn_layer_destroy(f->layer);
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

/* ------------------------------------------------------------- the pool */

/* The application's side of a pool: its buffers (NaN bytes at first) and
 * a shuffled free list of pages. */
typedef struct app_pool {
  clattn_paged_pool p;
  int free_pages[MAX_PAGES];
  int nfree;
  tu_rng rng;
} app_pool;

static size_t pool_bytes(const clattn_paged_pool *p, int heads, int dim,
                         size_t elem) {
  return (size_t)p->num_blocks * p->page_size * heads * dim * elem;
}

static void shuffle(tu_rng *r, int *v, int n) {
  for (int i = n - 1; i > 0; i--) {
    const int j = tu_randint(r, i + 1), t = v[i];
    v[i] = v[j];
    v[j] = t;
  }
}

static void pool_init(app_pool *a, clattn_ctx *ctx, int num_blocks,
                      int page_size, int max_blocks, clattn_dtype cache_dtype,
                      unsigned seed) {
  memset(a, 0, sizeof *a);
  cr_assert(num_blocks <= MAX_PAGES);
  clattn_paged_pool *p = &a->p;
  p->size = sizeof *p;
  p->num_blocks = num_blocks;
  p->page_size = page_size;
  p->max_blocks = max_blocks;
  p->cache_dtype = cache_dtype;
  const size_t elem = cache_dtype == CLATTN_I8 ? 1 : 4;
  const size_t kb = pool_bytes(p, HKV, DK, elem),
               vb = pool_bytes(p, HKV, DV, elem), sb = pool_bytes(p, HKV, 1, 4);
  p->k_pool = tu_buffer(ctx, kb);
  p->v_pool = tu_buffer(ctx, vb);
  tu_set_bytes(ctx, p->k_pool, kb, 0xff);
  tu_set_bytes(ctx, p->v_pool, vb, 0xff);
  if (cache_dtype == CLATTN_I8) {
    p->k_scale = tu_buffer(ctx, sb);
    p->v_scale = tu_buffer(ctx, sb);
    tu_set_bytes(ctx, p->k_scale, sb, 0xff);
    tu_set_bytes(ctx, p->v_scale, sb, 0xff);
  }
  a->rng = tu_rng_seed(seed);
  for (int i = 0; i < num_blocks; i++)
    a->free_pages[i] = i;
  a->nfree = num_blocks;
  shuffle(&a->rng, a->free_pages, a->nfree);
}

static void pool_free(app_pool *a) {
  tu_release(a->p.k_pool);
  tu_release(a->p.v_pool);
  tu_release(a->p.k_scale);
  tu_release(a->p.v_scale);
}

/* ------------------------------------------------------- the sequences */

typedef struct seq {
  int live;
  int len;
  int pages[MAX_PAGES];
  int npages;
  float x[MAX_POS * D]; /* its whole input stream */
  float y[MAX_POS * D]; /* what the paged steps returned */
  int chunks[MAX_POS];  /* the n of every step it took part in */
  int nchunks;
} seq;

/* Pages for positions 0 .. len-1 from the free list. */
static void seq_grow(app_pool *a, seq *s, int len) {
  const int need = (len + a->p.page_size - 1) / a->p.page_size;
  cr_assert(need <= a->p.max_blocks, "the test's table is too narrow");
  while (s->npages < need) {
    cr_assert(a->nfree > 0, "the test's pool is too small");
    s->pages[s->npages++] = a->free_pages[--a->nfree];
  }
}

/* A finished sequence's pages back on top of the free list (the next
 * ones taken), in shuffled order. */
static void seq_finish(app_pool *a, seq *s) {
  shuffle(&a->rng, s->pages, s->npages);
  for (int i = 0; i < s->npages; i++)
    a->free_pages[a->nfree++] = s->pages[i];
  s->npages = 0;
  s->live = 0;
}

static int page_of(const seq *s, int page) {
  for (int i = 0; i < s->npages; i++)
    if (s->pages[i] == page)
      return 1;
  return 0;
}

/* One step of n positions for the sequences slots[0 .. batch-1]: their
 * pages grown, the table (garbage past each sequence's pages) and the
 * lengths after the step uploaded, x gathered from their streams, y
 * poisoned, the step run, y scattered back. */
static void step(fixture *f, app_pool *a, seq *seqs, const int *slots,
                 int batch, int n) {
  const int mb = a->p.max_blocks;
  int table[MAX_BATCH * MAX_PAGES], lens[MAX_BATCH];
  float *x = tu_alloc((size_t)batch * n * D * 4),
        *y = tu_alloc((size_t)batch * n * D * 4);
  for (int b = 0; b < batch; b++) {
    seq *s = &seqs[slots[b]];
    s->live = 1;
    seq_grow(a, s, s->len + n);
    cr_assert(s->len + n <= MAX_POS);
    for (int j = 0; j < mb; j++)
      table[b * mb + j] = j < s->npages ? s->pages[j]
                          : j % 3 == 0  ? -1
                          : j % 3 == 1  ? 1 << 30
                                        : a->free_pages[0];
    lens[b] = s->len + n;
    memcpy(x + (size_t)b * n * D, s->x + (size_t)s->len * D, (size_t)n * D * 4);
  }
  const size_t ny = (size_t)batch * n * D;
  cl_mem dt = tu_upload_int(f->ctx, table, (size_t)batch * mb);
  cl_mem dl = tu_upload_int(f->ctx, lens, (size_t)batch);
  cl_mem dx = tu_upload(f->ctx, x, ny, CLATTN_F32);
  cl_mem dy = tu_sentinel(f->ctx, ny, CLATTN_F32, 0xff);
  cl_event done = NULL;
  const clattn_events ev = {sizeof ev, 0, NULL, &done};
  clattn_status st = clattn_layer_step_paged(f->layer, &a->p, batch, n, 1, dt,
                                             dl, dx, dy, &ev);
  cr_assert(st == CLATTN_OK, "step batch %d n %d: %d %s: %s", batch, n, (int)st,
            clattn_status_str(st), clattn_ctx_errmsg(f->ctx));
  cr_assert(done != NULL, "the step's event");
  cr_assert(clWaitForEvents(1, &done) == CL_SUCCESS);
  clReleaseEvent(done);
  tu_download(f->ctx, dy, y, ny, CLATTN_F32);
  for (int b = 0; b < batch; b++) {
    seq *s = &seqs[slots[b]];
    memcpy(s->y + (size_t)s->len * D, y + (size_t)b * n * D, (size_t)n * D * 4);
    s->len += n;
    s->chunks[s->nchunks++] = n;
  }
  tu_release(dt);
  tu_release(dl);
  tu_release(dx);
  tu_release(dy);
  free(x);
  free(y);
}

/* The same chunks of one sequence through a contiguous cache of batch 1
 * (clattn_layer_prefill for n > 1, clattn_layer_decode for n == 1). */
static void contiguous(fixture *f, const seq *s, float *y) {
  clattn_kv_cache *cache = NULL;
  clattn_status st = clattn_kv_cache_create(f->layer, 1, s->len, &cache);
  cr_assert(st == CLATTN_OK, "%s", clattn_ctx_errmsg(f->ctx));
  int pos = 0;
  for (int c = 0; c < s->nchunks; c++) {
    const int n = s->chunks[c];
    if (n > 1)
      tu_layer_prefill_rows(f->ctx, f->layer, cache, 1, s->len, D, s->x, pos, n,
                            1, y);
    else
      tu_layer_decode_rows(f->ctx, f->layer, cache, 1, pos + 1, D, s->x, pos,
                           y);
    pos += n;
  }
  clattn_kv_cache_destroy(cache);
}

typedef struct pool_case {
  clattn_dtype cache_dtype;
  int page_size, num_blocks, max_blocks;
  int options; /* the layer with the attention options */
} pool_case;

/* The serving loop on one pool (header comment), then every sequence's y
 * against the contiguous layer and the reference. */
static void serve(const pool_case *pc, unsigned seed) {
  fixture f;
  fx_init(&f, seed, pc->options);
  app_pool a;
  pool_init(&a, f.ctx, pc->num_blocks, pc->page_size, pc->max_blocks,
            pc->cache_dtype, seed + 1);
  enum { A, B, C, Dq }; /* the sequences */
  seq *seqs = tu_alloc(sizeof(seq) * MAX_SEQS);
  memset(seqs, 0, sizeof(seq) * MAX_SEQS);
  tu_rng r = tu_rng_seed(seed + 2);
  for (int i = 0; i < MAX_SEQS; i++)
    tu_fill(&r, seqs[i].x, (size_t)MAX_POS * D, 1.0f);

  const int a_only[] = {A}, ab[] = {A, B}, bc[] = {B, C}, abc[] = {A, B, C},
            d_only[] = {Dq}, cdb[] = {C, Dq, B};
  step(&f, &a, seqs, a_only, 1, 9); /* A: 0 -> 9 */
  step(&f, &a, seqs, ab, 2, 4);     /* A: 9 -> 13, B: 0 -> 4 */
  step(&f, &a, seqs, bc, 2, 7);     /* B: 4 -> 11, C: 0 -> 7 */
  for (int t = 0; t < 5; t++)
    step(&f, &a, seqs, abc, 3, 1); /* A -> 18, B -> 16, C -> 12 */
  seq finished = seqs[A];
  seq_finish(&a, &seqs[A]);
  step(&f, &a, seqs, d_only, 1, 10); /* D: 0 -> 10 on A's freed pages */
  for (int i = 0; i < seqs[Dq].npages; i++)
    cr_assert(page_of(&finished, seqs[Dq].pages[i]),
              "D's page %d is not one A left", seqs[Dq].pages[i]);
  for (int t = 0; t < 3; t++)
    step(&f, &a, seqs, cdb, 3, 1); /* C -> 15, D -> 13, B -> 19 */
  const double tol =
      pc->cache_dtype == CLATTN_I8 ? int8_tol : clattn__tolerance(CLATTN_F32);
  const double scale = 1.0 / sqrt((double)DK);
  for (int i = 0; i < MAX_SEQS; i++) {
    const seq *s = &seqs[i];
    const size_t ny = (size_t)s->len * D;
    float *yref = tu_alloc(ny * 4), *ycont = tu_alloc(ny * 4);
    char what[160];
    const ref_opts ro = {OPT_WINDOW, opt_softcap, alibi_slopes, sink_logits};
    ref_layer_opts(1, s->len, D, HQ, HKV, DK, DV, scale, 1,
                   pc->options ? &ro : NULL, s->x, f.wq, f.wk, f.wv, f.wo,
                   yref);
    snprintf(what, sizeof what,
             "%s pool, page %d, sequence %c (%d positions) "
             "vs the reference",
             pc->cache_dtype == CLATTN_I8 ? "int8" : "float32", pc->page_size,
             'A' + i, s->len);
    tu_check(what, s->y, yref, ny, tol);
    if (pc->cache_dtype != CLATTN_I8) {
      contiguous(&f, s, ycont);
      snprintf(what, sizeof what,
               "float32 pool, page %d, sequence %c vs the contiguous cache",
               pc->page_size, 'A' + i);
      tu_check(what, s->y, ycont, ny, clattn__tolerance(CLATTN_F32));
    }
    free(yref);
    free(ycont);
  }
  free(seqs);
  pool_free(&a);
  fx_free(&f);
}

/* The pools are sized so that the loop's sequences (at most 19 positions,
 * three at a time) leave unused, poisoned pages. */
Test(paged_layer, serving_float32_page8, .timeout = 900) {
  const pool_case pc = {CLATTN_F32, 8, 12, 4};
  serve(&pc, 11u);
}

Test(paged_layer, serving_float32_page1, .timeout = 900) {
  if (tu_subset("small"))
    cr_skip_test("CLATTN_TEST_SUBSET=small: page size 8 alone");
  const pool_case pc = {CLATTN_F32, 1, 64, 24};
  serve(&pc, 21u);
}

/* The options: query positions kv_len - n + i in the window and ALiBi */
Test(paged_layer, serving_float32_page4_options, .timeout = 900) {
  if (tu_subset("small"))
    cr_skip_test("CLATTN_TEST_SUBSET=small: page size 8 alone");
  const pool_case pc = {CLATTN_F32, 4, 24, 6, 1};
  serve(&pc, 71u);
}

Test(paged_layer, serving_int8_page8, .timeout = 900) {
  if (tu_subset("small"))
    cr_skip_test("CLATTN_TEST_SUBSET=small: the float32 pool alone");
  const pool_case pc = {CLATTN_I8, 8, 12, 4};
  serve(&pc, 31u);
}

Test(paged_layer, serving_int8_page16, .timeout = 900) {
  if (tu_subset("small"))
    cr_skip_test("CLATTN_TEST_SUBSET=small: the float32 pool alone");
  const pool_case pc = {CLATTN_I8, 16, 8, 2};
  serve(&pc, 41u);
}

/* ------------------------------------------------------------ refusals */

/* A step that must be refused with `want` and a message containing
 * `names`, y still NaN and the pool's K untouched. */
static void expect_refused(fixture *f, clattn_layer *layer,
                           const clattn_paged_pool *pool, int batch, int n,
                           cl_mem table, cl_mem lens, cl_mem x, cl_mem y,
                           clattn_status want, const char *names,
                           const char *what) {
  size_t ny = 0; /* all of y: a refused batch may be larger than it */
  cr_assert(clGetMemObjectInfo(y, CL_MEM_SIZE, sizeof ny, &ny, NULL) ==
            CL_SUCCESS);
  tu_set_bytes(f->ctx, y, ny, 0xff);
  clattn_status st = clattn_layer_step_paged(layer, pool, batch, n, 1, table,
                                             lens, x, y, NULL);
  const char *msg = clattn_ctx_errmsg(f->ctx);
  cr_expect(st == want, "%s: status %d (%s), want %d (%s): %s", what, (int)st,
            clattn_status_str(st), (int)want, clattn_status_str(want), msg);
  cr_expect(strstr(msg, names) != NULL, "%s: the message \"%s\" names no %s",
            what, msg, names);
  cr_expect(tu_untouched(f->ctx, y, ny, 0xff), "%s: y was written", what);
}

/* The four kinds whose caches hold other tensors, each refusing a step
 * (before it reads the pool) with its name in the message. */
Test(paged_layer, other_kinds_refuse, .timeout = 300) {
  fixture f;
  fx_init(&f, 51u, 0);
  app_pool a;
  pool_init(&a, f.ctx, 4, 8, 2, CLATTN_F32, 52u);
  /* one zeroed buffer large enough for every weight of these small
   * shapes */
  const size_t wbytes = (size_t)1 << 16;
  cl_mem w = tu_buffer(f.ctx, wbytes);
  tu_set_bytes(f.ctx, w, wbytes, 0);
  const int table[2] = {0, 1}, lens[1] = {1};
  cl_mem dt = tu_upload_int(f.ctx, table, 2),
         dl = tu_upload_int(f.ctx, lens, 1);
  cl_mem x = tu_buffer(f.ctx, (size_t)D * 4),
         y = tu_buffer(f.ctx, (size_t)D * 4);

  clattn_layer *layers[5] = {0};
  const char *names[5] = {"talking-heads", "optimised", "efficient", "super",
                          "switchhead"};
  const clattn_th_layer_desc th = {.size = sizeof th,
                                   .d_model = D,
                                   .heads_k = 2,
                                   .heads = 3,
                                   .heads_v = 2,
                                   .head_dim_k = 8,
                                   .head_dim_v = 8};
  const clattn_hh_layer_desc hh = {.size = sizeof hh, .d_model = D, .heads = 2};
  const clattn_hh_layer_desc sup = {
      .size = sizeof sup, .d_model = D, .heads = 2, .max_len = 16};
  const clattn_switchhead_layer_desc sh = {.size = sizeof sh,
                                           .d_model = D,
                                           .heads = 2,
                                           .head_dim = 8,
                                           .experts = 2,
                                           .topk = 1};
  clattn_status st[5] = {
      clattn_layer_create_talking_heads(f.ctx, &th, w, w, w, w, w, w,
                                        &layers[0]),
      clattn_layer_create_optimised(f.ctx, &hh, w, w, w, &layers[1]),
      clattn_layer_create_efficient(f.ctx, &hh, w, w, &layers[2]),
      clattn_layer_create_super(f.ctx, &sup, w, w, w, &layers[3]),
      clattn_layer_create_switchhead(f.ctx, &sh, w, w, w, w, w, w, &layers[4]),
  };
  for (int k = 0; k < 5; k++) {
    cr_assert(st[k] == CLATTN_OK, "create %s: %s", names[k],
              clattn_ctx_errmsg(f.ctx));
    char what[64];
    snprintf(what, sizeof what, "the %s layer", names[k]);
    expect_refused(&f, layers[k], &a.p, 1, 1, dt, dl, x, y,
                   CLATTN_ERR_UNSUPPORTED, names[k], what);
    clattn_layer_destroy(layers[k]);
  }
  cr_expect(tu_untouched(f.ctx, a.p.k_pool, pool_bytes(&a.p, HKV, DK, 4), 0xff),
            "a refused kind wrote the pool");
  tu_release(w);
  tu_release(dt);
  tu_release(dl);
  tu_release(x);
  tu_release(y);
  pool_free(&a);
  fx_free(&f);
}

/* Bad pools, tables and arguments of the GQA layer: each refused with a
 * named error, nothing written (y NaN, the pool's NaN bytes kept). */
Test(paged_layer, bad_pools_refused, .timeout = 300) {
  fixture f;
  fx_init(&f, 61u, 0);
  app_pool a, a8;
  pool_init(&a, f.ctx, 4, 8, 2, CLATTN_F32, 62u);
  pool_init(&a8, f.ctx, 4, 8, 2, CLATTN_I8, 63u);
  enum { BATCH = 2, N = 3 };
  const int table[BATCH * 2] = {2, 0, 1, 3}, lens[BATCH] = {11, 3};
  cl_mem dt = tu_upload_int(f.ctx, table, BATCH * 2),
         dl = tu_upload_int(f.ctx, lens, BATCH);
  const size_t nx = (size_t)BATCH * N * D;
  float *hx = tu_alloc(nx * 4);
  tu_rng r = tu_rng_seed(64u);
  tu_fill(&r, hx, nx, 1.0f);
  cl_mem x = tu_upload(f.ctx, hx, nx, CLATTN_F32), y = tu_buffer(f.ctx, nx * 4);
  free(hx);
  /* a pool of 4 pages of buffers that hold 3, scales that hold 1 */
  cl_mem small_k = tu_buffer(f.ctx, 3 * 8 * HKV * DK * 4),
         small_v = tu_buffer(f.ctx, 3 * 8 * HKV * DV * 4),
         small_s = tu_buffer(f.ctx, 8 * HKV * 4);
  clattn_paged_pool p;
#define REFUSED(change, want, names, what)                                     \
  do {                                                                         \
    p = a.p;                                                                   \
    change;                                                                    \
    expect_refused(&f, f.layer, &p, BATCH, N, dt, dl, x, y, want, names,       \
                   what);                                                      \
  } while (0)
  REFUSED(p.k_pool = NULL, CLATTN_ERR_INVALID_ARG, "k_pool", "NULL k_pool");
  REFUSED(p.v_pool = NULL, CLATTN_ERR_INVALID_ARG, "v_pool", "NULL v_pool");
  REFUSED(p.page_size = 6, CLATTN_ERR_SHAPE, "page_size", "page size 6");
  REFUSED(p.page_size = 512, CLATTN_ERR_SHAPE, "page_size", "page size 512");
  REFUSED(p.page_size = 0, CLATTN_ERR_SHAPE, "page_size", "page size 0");
  REFUSED(p.num_blocks = 0, CLATTN_ERR_SHAPE, "num_blocks", "no pages");
  REFUSED(p.max_blocks = 0, CLATTN_ERR_SHAPE, "max_blocks", "no table");
  REFUSED((p.k_pool = small_k, p.v_pool = small_v), CLATTN_ERR_BUFFER_TOO_SMALL,
          "k_pool", "pool smaller than 4 pages");
  REFUSED(p.v_pool = small_v, CLATTN_ERR_BUFFER_TOO_SMALL, "v_pool",
          "v_pool smaller than 4 pages");
  REFUSED(p.page_size = 16, CLATTN_ERR_BUFFER_TOO_SMALL, "k_pool",
          "page size larger than the buffers hold");
  REFUSED(p.cache_dtype = CLATTN_F16, CLATTN_ERR_UNSUPPORTED, "cache_dtype",
          "a float16 pool");
  REFUSED(p.k_scale = a.p.k_pool, CLATTN_ERR_INVALID_ARG, "k_scale",
          "scales for a float32 pool");
  REFUSED(p.size = 0, CLATTN_ERR_INVALID_ARG, "clattn_paged_pool",
          "the pool's size unset");
  REFUSED((p = a8.p, p.k_scale = NULL), CLATTN_ERR_INVALID_ARG, "k_scale",
          "an int8 pool without k_scale");
  REFUSED((p = a8.p, p.v_scale = NULL), CLATTN_ERR_INVALID_ARG, "v_scale",
          "an int8 pool without v_scale");
  REFUSED((p = a8.p, p.k_scale = small_s), CLATTN_ERR_BUFFER_TOO_SMALL,
          "k_scale", "an int8 pool's k_scale too small");
#undef REFUSED
  /* a newer header's pool with a field this library does not know set */
  struct {
    clattn_paged_pool p;
    long long unknown;
  } newer = {a.p, 1};
  newer.p.size = sizeof newer;
  expect_refused(&f, f.layer, &newer.p, BATCH, N, dt, dl, x, y,
                 CLATTN_ERR_UNSUPPORTED, "clattn_paged_pool",
                 "a newer pool with an unknown field set");
  expect_refused(&f, f.layer, NULL, BATCH, N, dt, dl, x, y,
                 CLATTN_ERR_INVALID_ARG, "pool", "NULL pool");
  expect_refused(&f, f.layer, &a.p, BATCH, N, NULL, dl, x, y,
                 CLATTN_ERR_INVALID_ARG, "block_table", "NULL block_table");
  expect_refused(&f, f.layer, &a.p, BATCH, N, dt, NULL, x, y,
                 CLATTN_ERR_INVALID_ARG, "kv_lens", "NULL kv_lens");
  expect_refused(&f, f.layer, &a.p, 0, N, dt, dl, x, y, CLATTN_ERR_SHAPE,
                 "batch", "batch 0");
  expect_refused(&f, f.layer, &a.p, BATCH + 1, N, dt, dl, x, y,
                 CLATTN_ERR_BUFFER_TOO_SMALL, "",
                 "batch 3 over buffers of batch 2");
  cl_mem short_x = tu_buffer(f.ctx, nx * 4 - 4);
  expect_refused(&f, f.layer, &a.p, BATCH, N, dt, dl, short_x, y,
                 CLATTN_ERR_BUFFER_TOO_SMALL, "x", "x one float short");
  tu_release(short_x);

  /* the tables' contents, read back: a page outside the pool that a
   * length needs, and a length over the table's capacity */
  const int bad_table[BATCH * 2] = {2, 9, 1, 3}, long_lens[BATCH] = {11, 17};
  cl_mem bt = tu_upload_int(f.ctx, bad_table, BATCH * 2),
         bl = tu_upload_int(f.ctx, long_lens, BATCH);
  expect_refused(&f, f.layer, &a.p, BATCH, N, bt, dl, x, y, CLATTN_ERR_SHAPE,
                 "block_table", "a page outside the pool");
  expect_refused(&f, f.layer, &a.p, BATCH, N, dt, bl, x, y, CLATTN_ERR_SHAPE,
                 "kv_lens", "a length over the table's capacity");
  tu_release(bl);

  cr_expect(
      tu_untouched(f.ctx, a.p.k_pool, pool_bytes(&a.p, HKV, DK, 4), 0xff) &&
          tu_untouched(f.ctx, a.p.v_pool, pool_bytes(&a.p, HKV, DV, 4), 0xff),
      "a refused step wrote the pool");

  /* and the same tables accepted: the step runs; unchecked, it gives the
   * same rows (the pool's rows written again with the same values), and a
   * page outside the pool is not refused (the kernels skip it) */
  float *y1 = tu_alloc(nx * 4), *y2 = tu_alloc(nx * 4);
  tu_set_bytes(f.ctx, y, nx * 4, 0xff);
  clattn_status st =
      clattn_layer_step_paged(f.layer, &a.p, BATCH, N, 1, dt, dl, x, y, NULL);
  cr_expect(st == CLATTN_OK, "the good step: %s", clattn_ctx_errmsg(f.ctx));
  tu_download(f.ctx, y, y1, nx, CLATTN_F32);
  p = a.p;
  p.unchecked = 1;
  tu_set_bytes(f.ctx, y, nx * 4, 0xff);
  st = clattn_layer_step_paged(f.layer, &p, BATCH, N, 1, dt, dl, x, y, NULL);
  cr_expect(st == CLATTN_OK, "the unchecked step: %s",
            clattn_ctx_errmsg(f.ctx));
  tu_download(f.ctx, y, y2, nx, CLATTN_F32);
  tu_check("the unchecked step", y2, y1, nx, 0.0);
  /* an older header's pool, without `unchecked`: checked, the same rows */
  p = a.p;
  p.size = offsetof(clattn_paged_pool, unchecked);
  tu_set_bytes(f.ctx, y, nx * 4, 0xff);
  st = clattn_layer_step_paged(f.layer, &p, BATCH, N, 1, dt, dl, x, y, NULL);
  cr_expect(st == CLATTN_OK, "an older pool: %s", clattn_ctx_errmsg(f.ctx));
  tu_download(f.ctx, y, y2, nx, CLATTN_F32);
  tu_check("an older pool", y2, y1, nx, 0.0);
  p.unchecked = 1; /* past its size: not read */
  expect_refused(&f, f.layer, &p, BATCH, N, bt, dl, x, y, CLATTN_ERR_SHAPE,
                 "block_table", "an older pool's bad page (checked)");
  p = a.p;
  p.unchecked = 1;
  st = clattn_layer_step_paged(f.layer, &p, BATCH, N, 1, bt, dl, x, y, NULL);
  cr_expect(st == CLATTN_OK, "unchecked, a page outside the pool: %s",
            clattn_ctx_errmsg(f.ctx));
  cr_assert(clFinish(clattn_ctx_queue(f.ctx)) == CL_SUCCESS);
  free(y1);
  free(y2);
  tu_release(small_k);
  tu_release(small_v);
  tu_release(small_s);
  tu_release(bt);
  tu_release(dt);
  tu_release(dl);
  tu_release(x);
  tu_release(y);
  pool_free(&a);
  pool_free(&a8);
  fx_free(&f);
}
