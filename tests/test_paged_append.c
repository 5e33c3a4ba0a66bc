/* test_paged_append.c - clattn_paged_append against ref_paged_append: new
 * rows written into shuffled pages (in the middle of a page, across a page
 * boundary, at the first row of a new page, sequences shorter than the
 * rows), float caches copied bit for bit and int8 caches quantized to the
 * reference's exact integers and scales, the rest of the pool (pages no
 * sequence owns, NaN-poisoned; table entries past a length, garbage) byte
 * for byte unchanged; the int8 round trip, zero, negative-maximum and
 * non-finite rows; every bad input refused with a named error and nothing
 * written; then an append followed by clattn_paged_attention. */
#include "reference/ref_paged.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { POISON = 0xff }; /* NaN in f32/f16/bf16, -1 in int8, NaN scales */

/* One append: the call's shape, lengths (after the append) and the new
 * rows, the pool's device buffers and host copies. */
typedef struct pa_case {
  clattn_paged_desc d;
  int lens[8];
  int *table;
  float *k_new, *v_new; /* host values, rounded to dtype */
  cl_mem kn, vn, bt, kl, kc, vc, ks, vs;
  size_t pool;     /* (position, head) rows of the pool */
  size_t cache_es; /* bytes of a cache element */
} pa_case;

static size_t esize(clattn_dtype dt) { return clattn_dtype_size(dt); }

/* A buffer of n elements of dt, every byte `byte`. */
static cl_mem poisoned(clattn_ctx *ctx, size_t n, clattn_dtype dt) {
  cl_mem m = tu_buffer(ctx, n * esize(dt));
  tu_set_bytes(ctx, m, n * esize(dt), POISON);
  return m;
}

static clattn_dtype cache_type(const clattn_paged_desc *d) {
  return d->cache_dtype == CLATTN_I8 ? CLATTN_I8 : d->dtype;
}

static clattn_paged_desc desc_of(int batch, int n_q, int hkv, int dk, int dv,
                                 int page, int max_blocks, int num_blocks,
                                 clattn_dtype dt, int i8) {
  return (clattn_paged_desc){.size = sizeof(clattn_paged_desc),
                             .batch = batch,
                             .n_q = n_q,
                             .heads_q = 2 * hkv,
                             .heads_kv = hkv,
                             .head_dim_k = dk,
                             .head_dim_v = dv,
                             .num_blocks = num_blocks,
                             .page_size = page,
                             .max_blocks = max_blocks,
                             .dtype = dt,
                             .cache_dtype = i8 ? CLATTN_I8 : CLATTN_F32};
}

/* A shuffled table for c->lens: distinct pages in a random order, the
 * entries past each length garbage. */
static void shuffled_table(pa_case *c, tu_rng *r) {
  const clattn_paged_desc *d = &c->d;
  int *perm = tu_alloc((size_t)d->num_blocks * sizeof *perm);
  for (int i = 0; i < d->num_blocks; i++)
    perm[i] = i;
  for (int i = d->num_blocks - 1; i > 0; i--) {
    const int j = tu_randint(r, i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  static const int garbage[4] = {-1, 1 << 30, -7, 0};
  int next = 0;
  for (int b = 0; b < d->batch; b++) {
    const int need = (c->lens[b] + d->page_size - 1) / d->page_size;
    for (int j = 0; j < d->max_blocks; j++) {
      int *e = &c->table[b * d->max_blocks + j];
      if (j < need) {
        cr_assert_lt(next, d->num_blocks, "the pool is too small");
        *e = perm[next++];
      } else {
        *e = j % 4 == 3 ? d->num_blocks + j : garbage[j % 4];
      }
    }
  }
  free(perm);
}

/* Host rows, the table and the device buffers; the pool poisoned. */
static void setup(clattn_ctx *ctx, pa_case *c, uint64_t seed) {
  const clattn_paged_desc *d = &c->d;
  tu_rng r = tu_rng_seed(seed);
  const size_t rows = (size_t)d->batch * d->n_q * d->heads_kv;
  c->pool = (size_t)d->num_blocks * d->page_size * d->heads_kv;
  c->k_new = tu_alloc(rows * d->head_dim_k * sizeof(float));
  c->v_new = tu_alloc(rows * d->head_dim_v * sizeof(float));
  tu_fill(&r, c->k_new, rows * d->head_dim_k, 1.0f);
  tu_fill(&r, c->v_new, rows * d->head_dim_v, 2.0f);
  tu_round(c->k_new, rows * d->head_dim_k, d->dtype);
  tu_round(c->v_new, rows * d->head_dim_v, d->dtype);
  c->table = tu_alloc((size_t)d->batch * d->max_blocks * sizeof(int));
  shuffled_table(c, &r);
  c->kn = tu_upload(ctx, c->k_new, rows * d->head_dim_k, d->dtype);
  c->vn = tu_upload(ctx, c->v_new, rows * d->head_dim_v, d->dtype);
  c->bt = tu_upload_int(ctx, c->table, (size_t)d->batch * d->max_blocks);
  c->kl = tu_upload_int(ctx, c->lens, (size_t)d->batch);
  const clattn_dtype ct = cache_type(d);
  c->cache_es = esize(ct);
  c->kc = poisoned(ctx, c->pool * d->head_dim_k, ct);
  c->vc = poisoned(ctx, c->pool * d->head_dim_v, ct);
  c->ks = c->vs = NULL;
  if (ct == CLATTN_I8) {
    c->ks = poisoned(ctx, c->pool, CLATTN_F32);
    c->vs = poisoned(ctx, c->pool, CLATTN_F32);
  }
}

static void teardown(pa_case *c) {
  cl_mem *all[8] = {&c->kn, &c->vn, &c->bt, &c->kl,
                    &c->kc, &c->vc, &c->ks, &c->vs};
  for (int i = 0; i < 8; i++)
    if (*all[i])
      tu_release(*all[i]);
  free(c->k_new);
  free(c->v_new);
  free(c->table);
}

static clattn_status append(clattn_ctx *ctx, const pa_case *c) {
  return clattn_paged_append(ctx, &c->d, c->kn, c->vn, c->bt, c->kl, c->kc,
                             c->vc, c->ks, c->vs, NULL);
}

/* The stored form of float x in dt (f32/f16/bf16) into out. */
static void store(float x, clattn_dtype dt, unsigned char *out) {
  if (dt == CLATTN_F32) {
    memcpy(out, &x, 4);
  } else {
    const uint16_t h =
        dt == CLATTN_F16 ? ref_f32_to_f16(x) : ref_f32_to_bf16(x);
    memcpy(out, &h, 2);
  }
}

static int same_scale(float a, float b) {
  return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

/* One tensor of the pool (d wide) after the call: the reference's rows
 * where the append writes, the poison everywhere else, byte for byte;
 * the scales likewise (NaN equals NaN). */
static void expect_pool(clattn_ctx *ctx, const pa_case *c, cl_mem cache,
                        cl_mem scales, const float *ref, const float *ref_s,
                        const unsigned char *written, int d, const char *what) {
  const clattn_dtype ct = cache_type(&c->d);
  const size_t es = esize(ct), bytes = c->pool * d * es;
  unsigned char *got = tu_alloc(bytes), *want = tu_alloc(bytes);
  tu_read_bytes(ctx, cache, got, bytes);
  memset(want, POISON, bytes);
  for (size_t row = 0; row < c->pool; row++)
    for (int x = 0; written[row] && x < d; x++) {
      const size_t i = row * d + x;
      if (ct == CLATTN_I8)
        want[i] = (unsigned char)(signed char)ref[i];
      else
        store(ref[i], ct, want + i * es);
    }
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < bytes; i++)
    if (got[i] != want[i] && bad++ == 0)
      first = i;
  cr_expect_eq(bad, 0,
               "%s: %zu bytes differ, the first at byte %zu (row %zu, %s): "
               "got 0x%02x, want 0x%02x",
               what, bad, first, first / es / d,
               written[first / es / d] ? "written" : "not written", got[first],
               want[first]);
  if (scales) {
    float *gs = tu_alloc(c->pool * sizeof *gs);
    tu_read_bytes(ctx, scales, gs, c->pool * sizeof *gs);
    size_t sbad = 0;
    for (size_t row = 0; row < c->pool; row++) {
      float w;
      memset(&w, POISON, sizeof w);
      if (written[row])
        w = ref_s[row];
      if (!same_scale(gs[row], w) && sbad++ == 0)
        cr_log_error("%s: scale of row %zu: got %g, want %g", what, row,
                     (double)gs[row], (double)w);
    }
    cr_expect_eq(sbad, 0, "%s: %zu scales differ", what, sbad);
    free(gs);
  }
  free(got);
  free(want);
}

/* Which (position, head) rows of the pool the append writes. */
static unsigned char *written_rows(const pa_case *c) {
  const clattn_paged_desc *d = &c->d;
  unsigned char *w = calloc(c->pool ? c->pool : 1, 1);
  cr_assert_not_null(w);
  for (int b = 0; b < d->batch; b++)
    for (int i = 0; i < d->n_q; i++) {
      const long t = (long)c->lens[b] - d->n_q + i;
      if (t < 0)
        continue;
      const long page = c->table[b * d->max_blocks + t / d->page_size];
      const size_t row = (size_t)page * d->page_size + t % d->page_size;
      for (int h = 0; h < d->heads_kv; h++)
        w[row * d->heads_kv + h] = 1;
    }
  return w;
}

static ref_paged ref_shape(const clattn_paged_desc *d) {
  return (ref_paged){.b = d->batch,
                     .n = d->n_q,
                     .hq = d->heads_q,
                     .hkv = d->heads_kv,
                     .dk = d->head_dim_k,
                     .dv = d->head_dim_v,
                     .num_blocks = d->num_blocks,
                     .page_size = d->page_size,
                     .max_blocks = d->max_blocks,
                     .scale = 1.0};
}

/* The int8 round trip: every written value dequantizes to within half a
 * step of its row's scale of the input (a finite, nonzero row). */
static void expect_round_trip(clattn_ctx *ctx, const pa_case *c, cl_mem cache,
                              cl_mem scales, const float *x, int d,
                              const char *what) {
  const clattn_paged_desc *D = &c->d;
  signed char *q = tu_alloc(c->pool * d);
  float *s = tu_alloc(c->pool * sizeof *s);
  tu_read_bytes(ctx, cache, q, c->pool * d);
  tu_read_bytes(ctx, scales, s, c->pool * sizeof *s);
  double worst = 0; /* in steps */
  for (int b = 0; b < D->batch; b++)
    for (int i = 0; i < D->n_q; i++) {
      const long t = (long)c->lens[b] - D->n_q + i;
      if (t < 0)
        continue;
      const long page = c->table[b * D->max_blocks + t / D->page_size];
      for (int h = 0; h < D->heads_kv; h++) {
        const size_t row =
            ((size_t)page * D->page_size + t % D->page_size) * D->heads_kv + h;
        const float *in = x + (((size_t)b * D->n_q + i) * D->heads_kv + h) * d;
        if (!(s[row] > 0))
          continue;
        for (int k = 0; k < d; k++)
          worst = fmax(worst,
                       fabs((double)q[row * d + k] * s[row] - in[k]) / s[row]);
      }
    }
  cr_expect(worst <= 0.5 + 1e-5, "%s: round trip off by %g steps", what, worst);
  free(q);
  free(s);
}

/* Run c (set up) and check both tensors against the reference. */
static void check_against_reference(clattn_ctx *ctx, pa_case *c,
                                    const char *what) {
  const clattn_paged_desc *d = &c->d;
  const int i8 = d->cache_dtype == CLATTN_I8;
  const clattn_status st = append(ctx, c);
  cr_assert_eq(st, CLATTN_OK, "%s: %s", what, clattn_ctx_errmsg(ctx));
  float *rk = calloc(c->pool * d->head_dim_k + 1, sizeof(float));
  float *rv = calloc(c->pool * d->head_dim_v + 1, sizeof(float));
  float *rks = calloc(c->pool + 1, sizeof(float));
  float *rvs = calloc(c->pool + 1, sizeof(float));
  cr_assert(rk && rv && rks && rvs);
  const ref_paged a = ref_shape(d);
  ref_paged_append(&a, c->k_new, c->v_new, c->table, c->lens, rk, rv,
                   i8 ? rks : NULL, i8 ? rvs : NULL);
  unsigned char *w = written_rows(c);
  char name[160];
  snprintf(name, sizeof name, "%s k_cache", what);
  expect_pool(ctx, c, c->kc, c->ks, rk, rks, w, d->head_dim_k, name);
  snprintf(name, sizeof name, "%s v_cache", what);
  expect_pool(ctx, c, c->vc, c->vs, rv, rvs, w, d->head_dim_v, name);
  if (i8) {
    expect_round_trip(ctx, c, c->kc, c->ks, c->k_new, d->head_dim_k, what);
    expect_round_trip(ctx, c, c->vc, c->vs, c->v_new, d->head_dim_v, what);
  }
  free(w);
  free(rk);
  free(rv);
  free(rks);
  free(rvs);
}

/* The lengths of one batch with pages of p and n_q new rows: shorter than
 * the rows, ending in the middle of a page, rows across a page boundary,
 * a last row at the first row of a new page, a full table and a length of
 * 0 (nothing written). */
static int lengths(int p, int n_q, int max_blocks, int *lens) {
  const int cap = p * max_blocks;
  const int all[6] = {
      n_q > 1 ? n_q - 1 : 0, p + p / 2 + 1, p + 1, 2 * p + 1, cap, 0};
  for (int i = 0; i < 6; i++)
    lens[i] = all[i] < cap ? all[i] : cap;
  return 6;
}

static void one_case(clattn_ctx *ctx, clattn_dtype dt, int i8, int page,
                     int n_q, int hkv, int dk, int dv, uint64_t seed) {
  pa_case c = {0};
  const int max_blocks = 4;
  const int batch = lengths(page, n_q, max_blocks, c.lens);
  /* room for every sequence's pages and a few no one owns */
  c.d = desc_of(batch, n_q, hkv, dk, dv, page, max_blocks,
                batch * max_blocks + 3, dt, i8);
  setup(ctx, &c, seed);
  char what[128];
  snprintf(what, sizeof what, "%s cache %s page %d n_q %d hkv %d dk %d dv %d",
           tu_dtype_name(dt), i8 ? "i8" : "same", page, n_q, hkv, dk, dv);
  check_against_reference(ctx, &c, what);
  teardown(&c);
}

Test(paged_append, float_caches) {
  clattn_ctx *ctx = tu_ctx();
  const clattn_dtype dts[3] = {CLATTN_F32, CLATTN_F16, CLATTN_BF16};
  for (int i = 0; i < 3; i++)
    one_case(ctx, dts[i], 0, 4, 3, 2, 16, 8, 10 + i);
  one_case(ctx, CLATTN_F32, 0, 1, 2, 1, 8, 8, 20);
  if (!tu_subset("small")) {
    one_case(ctx, CLATTN_F16, 0, 16, 5, 4, 64, 64, 21);
    one_case(ctx, CLATTN_BF16, 0, 8, 9, 3, 24, 40, 22);
    one_case(ctx, CLATTN_F32, 0, 256, 7, 2, 32, 16, 23);
  }
  clattn_ctx_destroy(ctx);
}

Test(paged_append, int8_caches) {
  clattn_ctx *ctx = tu_ctx();
  const clattn_dtype dts[3] = {CLATTN_F32, CLATTN_F16, CLATTN_BF16};
  for (int i = 0; i < 3; i++)
    one_case(ctx, dts[i], 1, 4, 3, 2, 16, 8, 30 + i);
  one_case(ctx, CLATTN_F32, 1, 1, 2, 1, 8, 8, 40);
  if (!tu_subset("small")) {
    one_case(ctx, CLATTN_F16, 1, 16, 5, 4, 64, 128, 41);
    one_case(ctx, CLATTN_BF16, 1, 8, 9, 3, 24, 40, 42);
    one_case(ctx, CLATTN_F32, 1, 256, 7, 2, 128, 96, 43);
  }
  clattn_ctx_destroy(ctx);
}

/* Rows chosen by hand in an int8 cache: zeros (scale 0, zeros), a row
 * whose largest magnitude is negative (it stores -127) with ties (scale 2,
 * x / scale exactly k + 0.5: to even), a row of small values, a NaN row and
 * an infinite row (scale NaN, zeros: read back, every value is NaN). */
Test(paged_append, int8_special_rows) {
  clattn_ctx *ctx = tu_ctx();
  pa_case c = {0};
  enum { D = 8 };
  c.lens[0] = 5;
  c.d = desc_of(1, 5, 1, D, D, 4, 2, 4, CLATTN_F32, 1);
  setup(ctx, &c, 50);
  /* scale 2 (max 254): 1 -> 0.5 -> 0, 3 -> 1.5 -> 2, 5 -> 2.5 -> 2 */
  const float rows[5][D] = {
      {0, 0, 0, 0, 0, 0, 0, 0},
      {-254, 1, 3, 5, -1, -3, -5, 100},
      {0.25f, -0.5f, 0.125f, 0, 0, 0, 0, 0},
      {1, 2, NAN, 4, 5, 6, 7, 8},
      {1, 2, 3, INFINITY, 5, 6, 7, 8},
  };
  memcpy(c.k_new, rows, sizeof rows);
  memcpy(c.v_new, rows, sizeof rows);
  tu_write(ctx, c.kn, c.k_new, 5 * D, CLATTN_F32);
  tu_write(ctx, c.vn, c.v_new, 5 * D, CLATTN_F32);
  check_against_reference(ctx, &c, "special rows");
  /* the values themselves, beside the reference */
  signed char q[4 * 4 * D];
  float s[4 * 4];
  tu_read_bytes(ctx, c.kc, q, sizeof q);
  tu_read_bytes(ctx, c.ks, s, sizeof s);
  const int *t = c.table;
  const size_t r[5] = {(size_t)t[0] * 4, (size_t)t[0] * 4 + 1,
                       (size_t)t[0] * 4 + 2, (size_t)t[0] * 4 + 3,
                       (size_t)t[1] * 4};
  cr_expect_eq(s[r[0]], 0.0f, "zero row: scale %g", (double)s[r[0]]);
  for (int x = 0; x < D; x++)
    cr_expect_eq(q[r[0] * D + x], 0);
  cr_expect_eq(s[r[1]], 2.0f, "negative maximum: scale %g", (double)s[r[1]]);
  const signed char want1[D] = {-127, 0, 2, 2, 0, -2, -2, 50};
  for (int x = 0; x < D; x++)
    cr_expect_eq(q[r[1] * D + x], want1[x], "row 1 [%d]: %d, want %d", x,
                 q[r[1] * D + x], want1[x]);
  cr_expect(s[r[2]] > 0 && q[r[2] * D + 1] == -127, "small row");
  for (int k = 3; k < 5; k++) {
    cr_expect(isnan(s[r[k]]), "non-finite row %d: scale %g, want NaN", k,
              (double)s[r[k]]);
    for (int x = 0; x < D; x++) {
      cr_expect_eq(q[r[k] * D + x], 0);
      cr_expect(isnan(q[r[k] * D + x] * s[r[k]]), "a read shows NaN");
    }
  }
  teardown(&c);
  clattn_ctx_destroy(ctx);
}

/* A pool whose poison must survive a refused call. */
static void expect_refused(clattn_ctx *ctx, const pa_case *c, cl_mem ks,
                           cl_mem vs, clattn_status want, const char *needle,
                           const char *what) {
  const clattn_status st = clattn_paged_append(
      ctx, &c->d, c->kn, c->vn, c->bt, c->kl, c->kc, c->vc, ks, vs, NULL);
  const char *msg = clattn_ctx_errmsg(ctx);
  cr_expect_eq(st, want, "%s: status %d (%s), want %d", what, (int)st, msg,
               (int)want);
  cr_expect(strstr(msg, needle) != NULL, "%s: message \"%s\" names no \"%s\"",
            what, msg, needle);
  const size_t es = c->cache_es;
  cr_expect(tu_untouched(ctx, c->kc, c->pool * c->d.head_dim_k * es, POISON),
            "%s: k_cache written", what);
  cr_expect(tu_untouched(ctx, c->vc, c->pool * c->d.head_dim_v * es, POISON),
            "%s: v_cache written", what);
  if (c->ks)
    cr_expect(tu_untouched(ctx, c->ks, c->pool * 4, POISON) &&
                  tu_untouched(ctx, c->vs, c->pool * 4, POISON),
              "%s: scales written", what);
}

Test(paged_append, bad_inputs_refused) {
  clattn_ctx *ctx = tu_ctx();
  pa_case c = {0};
  c.lens[0] = 6;
  c.lens[1] = 3;
  c.d = desc_of(2, 2, 2, 8, 8, 4, 3, 6, CLATTN_F32, 1);
  setup(ctx, &c, 60);
  const clattn_paged_desc good = c.d;
  int *table = c.table;
  const int keep = table[1];

  /* a table entry a length needs: negative, past the pool */
  table[1] = -1;
  tu_release(c.bt);
  c.bt = tu_upload_int(ctx, table, 6);
  expect_refused(ctx, &c, c.ks, c.vs, CLATTN_ERR_SHAPE, "block_table[0][1]",
                 "negative entry");
  table[1] = 6;
  tu_release(c.bt);
  c.bt = tu_upload_int(ctx, table, 6);
  expect_refused(ctx, &c, c.ks, c.vs, CLATTN_ERR_SHAPE, "block_table[0][1] = 6",
                 "entry past the pool");
  table[1] = keep;
  tu_release(c.bt);
  c.bt = tu_upload_int(ctx, table, 6);

  /* lengths over the table's capacity, and negative */
  const int over[2] = {13, 3}, neg[2] = {6, -1};
  tu_release(c.kl);
  c.kl = tu_upload_int(ctx, over, 2);
  expect_refused(ctx, &c, c.ks, c.vs, CLATTN_ERR_SHAPE, "kv_lens[0] = 13",
                 "length over capacity");
  tu_release(c.kl);
  c.kl = tu_upload_int(ctx, neg, 2);
  expect_refused(ctx, &c, c.ks, c.vs, CLATTN_ERR_SHAPE, "kv_lens[1] = -1",
                 "negative length");
  tu_release(c.kl);
  c.kl = tu_upload_int(ctx, c.lens, 2);

  /* page sizes that are no power of two from 1 to 256 */
  const int pages[3] = {3, 0, 512};
  for (int i = 0; i < 3; i++) {
    c.d.page_size = pages[i];
    expect_refused(ctx, &c, c.ks, c.vs, CLATTN_ERR_SHAPE, "page_size",
                   "page size");
  }
  c.d = good;

  /* scales missing for an int8 cache */
  expect_refused(ctx, &c, NULL, c.vs, CLATTN_ERR_INVALID_ARG, "k_scale",
                 "no k_scale");
  expect_refused(ctx, &c, c.ks, NULL, CLATTN_ERR_INVALID_ARG, "v_scale",
                 "no v_scale");

  /* a cache type that is neither dtype nor int8, no rows */
  c.d.cache_dtype = (clattn_dtype)7;
  expect_refused(ctx, &c, c.ks, c.vs, CLATTN_ERR_INVALID_ARG, "cache_dtype",
                 "cache dtype");
  c.d = good;
  c.d.n_q = 0;
  expect_refused(ctx, &c, c.ks, c.vs, CLATTN_ERR_SHAPE, "n_q", "no rows");
  c.d = good;

  /* the same call, fixed, goes through */
  cr_expect_eq(append(ctx, &c), CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  teardown(&c);
  clattn_ctx_destroy(ctx);
}

/* unchecked: nothing read back; a page outside the pool is skipped and a
 * length over the capacity clamped, never a write outside the pool. */
Test(paged_append, unchecked_skips) {
  clattn_ctx *ctx = tu_ctx();
  pa_case c = {0};
  c.lens[0] = 8;
  c.lens[1] = 5;
  c.d = desc_of(2, 2, 1, 8, 8, 4, 2, 5, CLATTN_F32, 0);
  setup(ctx, &c, 70);
  /* sequence 0's second page (positions 6, 7) outside the pool; sequence 1
   * claims 100 positions: clamped to 8, positions 6, 7 of its pages */
  const int table[4] = {0, 1000, 2, 4};
  const int lens[2] = {8, 100};
  tu_release(c.bt);
  tu_release(c.kl);
  c.bt = tu_upload_int(ctx, table, 4);
  c.kl = tu_upload_int(ctx, lens, 2);
  c.d.unchecked = 1;
  cr_assert_eq(append(ctx, &c), CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  float *k = tu_alloc(c.pool * 8 * sizeof *k);
  tu_download(ctx, c.kc, k, c.pool * 8, CLATTN_F32);
  size_t written = 0;
  for (size_t i = 0; i < c.pool * 8; i++)
    written += !isnan(k[i]);
  /* sequence 1's two rows in page 4, rows 2 and 3; nothing else */
  cr_expect_eq(written, 2 * 8, "%zu values written", written);
  for (int x = 0; x < 8; x++) {
    cr_expect_eq(k[(4 * 4 + 2) * 8 + x], c.k_new[(2 + 0) * 8 + x]);
    cr_expect_eq(k[(4 * 4 + 3) * 8 + x], c.k_new[(2 + 1) * 8 + x]);
  }
  free(k);
  teardown(&c);
  clattn_ctx_destroy(ctx);
}

/* The model counts the rows a call writes: a longer batch costs more. */
Test(paged_append, model_rows) {
  clattn_paged_desc d = desc_of(2, 3, 2, 16, 16, 4, 4, 8, CLATTN_F16, 1);
  clattn_prediction p1 = {.size = sizeof p1}, p2 = {.size = sizeof p2};
  clattn_profile prof = {.size = sizeof prof};
  prof.source = CLATTN_PROFILE_DATASHEET;
  prof.compute_units = 16;
  prof.max_wg = 1024;
  prof.local_mem_bytes = 48 << 10;
  prof.cache_bytes = 1 << 20;
  prof.bw_read_gbs = prof.bw_copy_gbs = 100;
  prof.fp32_gflops = 1000;
  const int short_lens[2] = {1, 0}, long_lens[2] = {16, 9};
  cr_assert_eq(clattn_model_paged_append(&d, short_lens, &prof, &p1), CLATTN_OK,
               "%s", p1.errmsg);
  cr_assert_eq(clattn_model_paged_append(&d, long_lens, &prof, &p2), CLATTN_OK,
               "%s", p2.errmsg);
  /* one row (two heads) against six rows: 8 + 16 bytes int8 and scales */
  cr_expect_eq(p1.kernel[0].bytes_written, 1 * 2 * (16 + 16 + 8.0));
  cr_expect_eq(p2.kernel[0].bytes_written, 6 * 2 * (16 + 16 + 8.0));
}

/* clattn_paged_attention over the pool of c (its lengths in c->kl) with
 * n_q queries a sequence, against ref_paged_attention on the pool as
 * stored (int8 integers and scales read back).  0: checked; 1: the family
 * is not built yet (why says so). */
static int attend_and_check(clattn_ctx *ctx, const pa_case *c, int n_q,
                            char *why, size_t cap) {
  clattn_paged_desc d = c->d;
  d.n_q = n_q;
  const int dk = d.head_dim_k, dv = d.head_dim_v;
  const size_t nq = (size_t)d.batch * n_q * d.heads_q;
  float *q = tu_alloc(nq * dk * sizeof *q), *o = tu_alloc(nq * dv * sizeof *o),
        *ref = tu_alloc(nq * dv * sizeof *ref);
  tu_rng r = tu_rng_seed(81 + n_q);
  tu_fill(&r, q, nq * dk, 1.0f);
  cl_mem qm = tu_upload(ctx, q, nq * dk, CLATTN_F32);
  cl_mem om = poisoned(ctx, nq * dv, CLATTN_F32);
  const clattn_status st = clattn_paged_attention(
      ctx, &d, qm, c->kc, c->vc, c->ks, c->vs, c->bt, c->kl, om, NULL);
  int skipped = 0;
  if (st == CLATTN_ERR_UNSUPPORTED &&
      strstr(clattn_ctx_errmsg(ctx), "not built yet") != NULL) {
    snprintf(why, cap, "clattn_paged_attention (n_q %d): %s", n_q,
             clattn_ctx_errmsg(ctx));
    skipped = 1;
  } else {
    cr_assert_eq(st, CLATTN_OK, "n_q %d: %s", n_q, clattn_ctx_errmsg(ctx));
    tu_download(ctx, om, o, nq * dv, CLATTN_F32);
    /* the pool as the reference reads it: the int8 integers as floats */
    const size_t kn = c->pool * dk, vn = c->pool * dv;
    signed char *k8 = tu_alloc(kn), *v8 = tu_alloc(vn);
    float *kf = tu_alloc(kn * sizeof *kf), *vf = tu_alloc(vn * sizeof *vf);
    float *ks = tu_alloc(c->pool * sizeof *ks),
          *vs = tu_alloc(c->pool * sizeof *vs);
    tu_read_bytes(ctx, c->kc, k8, kn);
    tu_read_bytes(ctx, c->vc, v8, vn);
    tu_read_bytes(ctx, c->ks, ks, c->pool * sizeof *ks);
    tu_read_bytes(ctx, c->vs, vs, c->pool * sizeof *vs);
    for (size_t i = 0; i < kn; i++)
      kf[i] = k8[i];
    for (size_t i = 0; i < vn; i++)
      vf[i] = v8[i];
    ref_paged a = ref_shape(&d);
    a.scale = 1.0 / sqrt((double)dk);
    a.causal = d.causal;
    cr_assert_eq(
        ref_paged_attention(&a, q, kf, vf, ks, vs, c->table, c->lens, ref), 0);
    char what[64];
    snprintf(what, sizeof what, "append then paged attention, n_q %d", n_q);
    cr_expect(tu_check(what, o, ref, nq * dv, clattn__tolerance(CLATTN_F32)));
    free(k8);
    free(v8);
    free(kf);
    free(vf);
    free(ks);
    free(vs);
  }
  tu_release(qm);
  tu_release(om);
  free(q);
  free(o);
  free(ref);
  return skipped;
}

/* Append into a paged int8 cache one position at a time (sequences of 9,
 * 4 and 1 positions in pages of 4), then attend over it with a decode step
 * and a chunked prefill of 3 queries: the attention reads what the append
 * stored, and none of the poisoned pages no one owns. */
Test(paged_append, then_paged_attention) {
  clattn_ctx *ctx = tu_ctx();
  pa_case c = {0};
  enum { B = 3, HKV = 2, DK = 16, DV = 16 };
  const int full[B] = {9, 4, 1};
  memcpy(c.lens, full, sizeof full);
  c.d = desc_of(B, 1, HKV, DK, DV, 4, 3, 10, CLATTN_F32, 1);
  c.d.causal = 1;
  setup(ctx, &c, 80);
  for (int step = 8; step >= 0; step--) {
    int lens[B];
    for (int b = 0; b < B; b++)
      lens[b] = full[b] - step < 0 ? 0 : full[b] - step;
    tu_release(c.kl);
    c.kl = tu_upload_int(ctx, lens, B);
    /* each step's rows: new values (a length of 0 writes nothing) */
    tu_rng r = tu_rng_seed(900 + step);
    tu_fill(&r, c.k_new, B * HKV * DK, 1.0f);
    tu_fill(&r, c.v_new, B * HKV * DV, 1.0f);
    tu_write(ctx, c.kn, c.k_new, B * HKV * DK, CLATTN_F32);
    tu_write(ctx, c.vn, c.v_new, B * HKV * DV, CLATTN_F32);
    cr_assert_eq(append(ctx, &c), CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  }
  char why[2][320] = {"", ""};
  const int skipped = attend_and_check(ctx, &c, 1, why[0], sizeof why[0]) +
                      attend_and_check(ctx, &c, 3, why[1], sizeof why[1]);
  teardown(&c);
  clattn_ctx_destroy(ctx);
  if (skipped)
    cr_skip("%s%s%s", why[0], *why[0] && *why[1] ? "; " : "", why[1]);
}
