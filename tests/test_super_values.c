/* test_super_values.c - the super-values family (Super attention's values
 * V' = W_a X, cl/super_values.cl) against the plain-C reference, through
 * the generic call path: decode-like single rows after a cache, prefills
 * without one, sizes that divide no tile, both layouts, causal and full
 * mixes, head dims 1, 3, 16 and 64, automatic and explicit params.
 * Causal calls get NaN above W_a's diagonal and must equal the reference
 * computed with zeros there; rows outside the call's range must keep their
 * bytes; bad calls get their exact status.  The reference of the whole
 * Hosseini & Hosseini layers (ref_hh_layer) is itself checked against
 * hand-computed values. */
#include "family_call.h"
#include "call/call.h"
#include "family/super_values.h"
#include "reference/ref_hh.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const clattn__family *family(void) {
  const clattn__family *F = clattn__family_find("super-values");
  cr_assert_not_null(F, "super-values is not registered");
  return F;
}

static size_t x_elems(const clattn__super_values_desc *d) {
  return (size_t)d->batch * d->capacity * d->heads * d->head_dim;
}

/* W_a with random entries on and below the diagonal and `above` over it. */
static float *make_w_a(tu_rng *rng, int l, float above) {
  float *w = tu_alloc(sizeof(float) * (size_t)l * l);
  for (int t = 0; t < l; t++)
    for (int s = 0; s < l; s++)
      w[(size_t)t * l + s] = s <= t ? tu_uniform(rng) : above;
  return w;
}

/* Run desc on the device with v starting as v0 and compare with the
 * reference; causal calls see NaN above W_a's diagonal, the reference
 * zeros.  Rows outside pos0 .. pos0+n-1 must be v0's exactly. */
static void run_case(clattn_ctx *ctx, const clattn__super_values_desc *d,
                     const clattn_params *p, const char *what) {
  tu_rng rng = tu_rng_seed(1000u + (uint64_t)d->n * 31u + (uint64_t)d->pos0);
  const size_t nx = x_elems(d);
  const int l = d->max_len;
  float *w_dev = make_w_a(&rng, l, d->causal ? NAN : 0.0f);
  float *w_ref = tu_alloc(sizeof(float) * (size_t)l * l);
  for (size_t i = 0; i < (size_t)l * l; i++)
    w_ref[i] = isnan(w_dev[i]) ? 0.0f : w_dev[i];
  if (!d->causal) /* a full mix reads the whole block: random there too */
    for (int t = 0; t < l; t++)
      for (int s = t + 1; s < l; s++)
        w_dev[(size_t)t * l + s] = w_ref[(size_t)t * l + s] = tu_uniform(&rng);
  float *x = tu_alloc(sizeof(float) * nx);
  float *v0 = tu_alloc(sizeof(float) * nx);
  float *want = tu_alloc(sizeof(float) * nx);
  float *got = tu_alloc(sizeof(float) * nx);
  tu_fill(&rng, x, nx, 1.0f);
  tu_fill(&rng, v0, nx, 5.0f);
  memcpy(want, v0, sizeof(float) * nx);
  ref_super_values(d->batch, d->n, d->pos0, d->capacity, d->heads, d->head_dim,
                   d->max_len, d->causal, (int)d->x_layout, (int)d->v_layout,
                   w_ref, x, want);
  cl_mem bufs[3] = {tu_upload(ctx, w_dev, (size_t)l * l, CLATTN_F32),
                    tu_upload(ctx, x, nx, CLATTN_F32),
                    tu_upload(ctx, v0, nx, CLATTN_F32)};
  const clattn_status st = tu_family_call(ctx, family(), d, p, bufs, NULL);
  if (!tu_unsupported_ok(ctx, st, p)) {
    cr_assert_eq(st, CLATTN_OK, "%s: %s", what, clattn_ctx_errmsg(ctx));
    tu_download(ctx, bufs[2], got, nx, CLATTN_F32);
    tu_check(what, got, want, nx, clattn__tolerance(CLATTN_F32));
    /* untouched rows: bit for bit */
    size_t changed = 0;
    for (size_t i = 0; i < nx; i++)
      changed += want[i] == v0[i] && memcmp(&got[i], &v0[i], 4) != 0;
    cr_expect_eq(changed, 0, "%s: %zu elements outside the rows changed", what,
                 changed);
  }
  for (int i = 0; i < 3; i++)
    tu_release(bufs[i]);
  free(w_dev);
  free(w_ref);
  free(x);
  free(v0);
  free(want);
  free(got);
}

typedef struct sv_shape {
  int batch, n, pos0, capacity, heads, head_dim, max_len, causal;
  clattn_layout xl, vl;
} sv_shape;

static const sv_shape shapes[] = {
    /* decode-like: one row after a cache, and the first row alone */
    {2, 1, 17, 20, 2, 64, 18, 1, CLATTN_BSHD, CLATTN_BHSD},
    {1, 1, 0, 4, 3, 16, 4, 1, CLATTN_BSHD, CLATTN_BHSD},
    /* prefill without a cache, rows dividing no tile */
    {1, 33, 0, 33, 4, 16, 40, 1, CLATTN_BSHD, CLATTN_BSHD},
    {3, 7, 4, 12, 5, 1, 11, 1, CLATTN_BHSD, CLATTN_BHSD},
    {2, 19, 2, 23, 2, 3, 21, 1, CLATTN_BHSD, CLATTN_BSHD},
    /* full mixes (non-causal), with and without rows before them */
    {2, 13, 0, 15, 3, 3, 13, 0, CLATTN_BHSD, CLATTN_BSHD},
    {1, 5, 3, 9, 1, 16, 8, 0, CLATTN_BSHD, CLATTN_BHSD},
    {1, 11, 0, 11, 2, 64, 11, 0, CLATTN_BSHD, CLATTN_BSHD},
};

/* The automatic plan and explicit rows x work-groups. */
static const clattn_params explicit_params[] = {
    {.size = sizeof(clattn_params), .variant = 1, .rows = 1},
    {.size = sizeof(clattn_params), .variant = 1, .rows = 3},
    {.size = sizeof(clattn_params), .variant = 1, .rows = 16, .wg = 32},
    {.size = sizeof(clattn_params), .variant = 1, .rows = 5, .wg = 8}};

Test(super_values, matches_reference, .timeout = 600) {
  clattn_ctx *ctx = tu_ctx();
  const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
  const int nparams = (int)(sizeof explicit_params / sizeof explicit_params[0]);
  for (int i = 0; i < nshapes; i++)
    for (int p = -1; p < nparams; p++) {
      if (tu_subset("small") && p > 0)
        break;
      const sv_shape *s = &shapes[i];
      const clattn__super_values_desc d = {
          s->batch,    s->n,       s->pos0,   s->capacity, s->heads,
          s->head_dim, s->max_len, s->causal, s->xl,       s->vl};
      char what[160];
      snprintf(what, sizeof what,
               "b%d n%d pos%d cap%d h%d d%d l%d %s %s/%s params %d", s->batch,
               s->n, s->pos0, s->capacity, s->heads, s->head_dim, s->max_len,
               s->causal ? "causal" : "full",
               s->xl == CLATTN_BHSD ? "bhsd" : "bshd",
               s->vl == CLATTN_BHSD ? "bhsd" : "bshd", p);
      run_case(ctx, &d, p < 0 ? NULL : &explicit_params[p], what);
    }
  clattn_ctx_destroy(ctx);
}

/* W_a above the diagonal is never read: NaN there changes nothing, for
 * every row tile (the triangle lies inside a work-item's block). */
Test(super_values, upper_triangle_never_read) {
  clattn_ctx *ctx = tu_ctx();
  const int rows[] = {1, 2, 4, 7, 16};
  for (int r = 0; r < 5; r++) {
    const clattn_params p = {
        .size = sizeof(clattn_params), .variant = 1, .rows = rows[r]};
    const clattn__super_values_desc d = {2, 9,  3, 12,          2,
                                         8, 12, 1, CLATTN_BSHD, CLATTN_BHSD};
    char what[64];
    snprintf(what, sizeof what, "NaN upper triangle, rows %d", rows[r]);
    run_case(ctx, &d, &p, what);
  }
  clattn_ctx_destroy(ctx);
}

/* The tunable vector (VW): every power of two dividing head_dim gives the
 * reference's rows, causal and not, with the widths' remainders of rows;
 * one that does not divide head_dim, or is no power of two, is refused
 * naming it. */
static void expect_refused(clattn_ctx *ctx, const clattn__super_values_desc *d,
                           const clattn_params *p, clattn_status want,
                           const char *word);

Test(super_values, vector_widths) {
  clattn_ctx *ctx = tu_ctx();
  const char *const texts[] = {"vector=1", "vector=2 rows=3",
                               "vector=4 rows=5 wg=8", "vector=8",
                               "vector=16 rows=2"};
  for (int causal = 0; causal < 2; causal++)
    for (int i = 0; i < 5; i++) {
      const clattn_params p = {.size = sizeof p, .text = texts[i]};
      const clattn__super_values_desc d = {
          2, 7, 2, 11, 3, 16, 11, causal, CLATTN_BSHD, CLATTN_BHSD};
      char what[80];
      snprintf(what, sizeof what, "%s, %s", texts[i],
               causal ? "causal" : "full");
      run_case(ctx, &d, &p, what);
    }
  const clattn__super_values_desc d6 = {1, 4,  0, 8,           2,
                                        6, 10, 1, CLATTN_BSHD, CLATTN_BHSD};
  const clattn_params four = {.size = sizeof four, .text = "vector=4"},
                      three = {.size = sizeof three, .text = "vector=3"},
                      wide = {.size = sizeof wide, .text = "vector=32"};
  expect_refused(ctx, &d6, &four, CLATTN_ERR_INVALID_ARG,
                 "vector=4: a power of two dividing head_dim (6)");
  expect_refused(ctx, &d6, &three, CLATTN_ERR_INVALID_ARG, "vector=3");
  expect_refused(ctx, &d6, &wide, CLATTN_ERR_INVALID_ARG,
                 "vector=32: the super-values family's vector is 1 to 16");
  clattn_ctx_destroy(ctx);
}

/* v filled with 0xff bytes: the rows of the call become finite, every
 * other byte stays 0xff. */
Test(super_values, rows_outside_untouched) {
  clattn_ctx *ctx = tu_ctx();
  tu_rng rng = tu_rng_seed(5);
  const clattn__super_values_desc d = {2, 4,  5, 16,          3,
                                       4, 16, 1, CLATTN_BSHD, CLATTN_BHSD};
  const size_t nx = x_elems(&d);
  float *w = make_w_a(&rng, d.max_len, 0.0f);
  float *x = tu_alloc(sizeof(float) * nx);
  tu_fill(&rng, x, nx, 1.0f);
  cl_mem bufs[3] = {
      tu_upload(ctx, w, (size_t)d.max_len * d.max_len, CLATTN_F32),
      tu_upload(ctx, x, nx, CLATTN_F32),
      tu_sentinel(ctx, nx, CLATTN_F32, 0xff)};
  cr_assert_eq(clattn__call(ctx, family(), &d, NULL, bufs, NULL), CLATTN_OK,
               "%s", clattn_ctx_errmsg(ctx));
  unsigned char *raw = tu_alloc(nx * 4);
  tu_read_bytes(ctx, bufs[2], raw, nx * 4);
  for (int b = 0; b < d.batch; b++)
    for (int h = 0; h < d.heads; h++)
      for (int t = 0; t < d.capacity; t++)
        for (int c = 0; c < d.head_dim; c++) {
          const size_t i =
              ref_index(1, d.capacity, d.heads, d.head_dim, b, t, h, c);
          float f;
          memcpy(&f, raw + 4 * i, 4);
          if (t >= d.pos0 && t < d.pos0 + d.n) {
            cr_expect(isfinite(f), "row %d of sequence %d not written", t, b);
          } else {
            const unsigned char *e = raw + 4 * i;
            cr_expect(e[0] == 0xff && e[1] == 0xff && e[2] == 0xff &&
                          e[3] == 0xff,
                      "row %d of sequence %d written", t, b);
          }
        }
  for (int i = 0; i < 3; i++)
    tu_release(bufs[i]);
  free(w);
  free(x);
  free(raw);
  clattn_ctx_destroy(ctx);
}

/* A bad description's status, and a message naming what is wrong. */
static void expect_refused(clattn_ctx *ctx, const clattn__super_values_desc *d,
                           const clattn_params *p, clattn_status want,
                           const char *word) {
  /* buffers large enough for any of these shapes */
  cl_mem bufs[3] = {tu_buffer(ctx, 4096 * 4), tu_buffer(ctx, 4096 * 4),
                    tu_buffer(ctx, 4096 * 4)};
  const clattn_status st = tu_family_call(ctx, family(), d, p, bufs, NULL);
  cr_expect_eq(st, want, "status %s, want %s (%s)", clattn_status_str(st),
               clattn_status_str(want), clattn_ctx_errmsg(ctx));
  cr_expect(strstr(clattn_ctx_errmsg(ctx), word) != NULL,
            "message \"%s\" does not name %s", clattn_ctx_errmsg(ctx), word);
  for (int i = 0; i < 3; i++)
    tu_release(bufs[i]);
}

Test(super_values, misuse) {
  clattn_ctx *ctx = tu_ctx();
  const clattn__super_values_desc ok = {1, 4,  4, 10,          2,
                                        8, 10, 1, CLATTN_BSHD, CLATTN_BHSD};
  clattn__super_values_desc d = ok;
  d.max_len = 7; /* pos0 + n = 8 */
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "max_len");
  d = ok;
  d.capacity = 7;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "capacity");
  d = ok;
  d.n = 0;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "n (0)");
  d = ok;
  d.pos0 = -1;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "pos0");
  d = ok;
  d.batch = 0;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "batch");
  d = ok;
  d.heads = 0;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "heads");
  d = ok;
  d.head_dim = CLATTN_MAX_HEAD_DIM + 1;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_UNSUPPORTED, "head_dim");
  d = ok;
  d.v_layout = (clattn_layout)7;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_INVALID_ARG, "layout");
  d = ok;
  d.batch = 1 << 20;
  d.capacity = 1 << 30;
  d.heads = 1 << 16;
  expect_refused(ctx, &d, NULL, CLATTN_ERR_SHAPE, "overflow");
  d = ok;
  const clattn_params keys = {
      .size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 16};
  expect_refused(ctx, &d, &keys, CLATTN_ERR_INVALID_ARG, "keys");
  d = ok;
  const clattn_params rows = {
      .size = sizeof(clattn_params), .variant = 1, .rows = 33};
  expect_refused(ctx, &d, &rows, CLATTN_ERR_INVALID_ARG, "rows");
  /* buffers smaller than the shape */
  cl_mem small[3] = {tu_buffer(ctx, 16), tu_buffer(ctx, 16),
                     tu_buffer(ctx, 16)};
  cr_expect_eq(clattn__call(ctx, family(), &ok, NULL, small, NULL),
               CLATTN_ERR_BUFFER_TOO_SMALL, "%s", clattn_ctx_errmsg(ctx));
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "w_a") != NULL, "%s",
            clattn_ctx_errmsg(ctx));
  for (int i = 0; i < 3; i++)
    tu_release(small[i]);
  clattn_ctx_destroy(ctx);
}

/* The model's useful work: 2 FLOPs per (row, visible position, channel),
 * the triangle only when causal. */
Test(super_values, model_flops) {
  clattn_profile prof = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_datasheet_find("A100", &prof), CLATTN_OK);
  clattn__super_values_desc d = {2,  10, 6, 16,          4,
                                 16, 16, 1, CLATTN_BSHD, CLATTN_BHSD};
  clattn_prediction pr = {.size = sizeof(clattn_prediction)};
  cr_assert_eq(clattn__model(family(), &d, NULL, NULL, &prof, &pr), CLATTN_OK,
               "%s", pr.errmsg);
  const double pairs = 10.0 * 6 + 10.0 * 11 / 2; /* t = 6..15: t + 1 each */
  cr_expect_eq(pr.total.flops, 2.0 * 2 * pairs * 64);
  d.causal = 0;
  cr_assert_eq(clattn__model(family(), &d, NULL, NULL, &prof, &pr), CLATTN_OK);
  cr_expect_eq(pr.total.flops, 2.0 * 2 * 10 * 16 * 64);
}

/* ---------------------------------------------- the layers' reference */

static void expect_rows(const float *y, const double *want, int n,
                        const char *what) {
  for (int i = 0; i < n; i++)
    cr_expect(fabs(y[i] - want[i]) < 1e-6, "%s: y[%d] = %.7f, want %.7f", what,
              i, y[i], want[i]);
}

/* h = 1, D = 2, n = 2, x = I, W_q = W_k = I: query t's logits are x_t . x_s
 * = [t == s], so a row that sees both keys weighs its own e/(e+1) and the
 * other 1/(e+1). */
Test(ref_hh, hand_computed_one_head) {
  const double e = exp(1.0), a = e / (e + 1.0), c = 1.0 / (e + 1.0);
  const float x[4] = {1, 0, 0, 1}, eye[4] = {1, 0, 0, 1};
  const float w_o[4] = {1, 2, 0, 1}; /* y = [h0, 2 h0 + h1] */
  float y[4];
  /* Optimised, full: H = [[a, c], [c, a]] */
  ref_hh_layer(1, 1, 2, 2, 1, 0, 1.0, 0, x, eye, eye, NULL, eye, y);
  expect_rows(y, (const double[]){a, c, c, a}, 4, "optimised full");
  /* Optimised, causal, W_o mixing: row 0 sees itself only */
  ref_hh_layer(1, 1, 2, 2, 1, 0, 1.0, 1, x, eye, eye, NULL, w_o, y);
  expect_rows(y, (const double[]){1, 2, c, 2 * c + a}, 4, "optimised causal");
  /* Efficient ignores W_k (NULL) and uses x as keys: the same as above */
  ref_hh_layer(2, 1, 2, 2, 1, 0, 1.0, 1, x, eye, NULL, NULL, w_o, y);
  expect_rows(y, (const double[]){1, 2, c, 2 * c + a}, 4, "efficient causal");
  /* Super, causal, W_a = [[2, NaN], [3, 4]]: V' = [[2, 0], [3, 4]]; row 0
   * = V'_0, row 1 = c V'_0 + a V'_1 */
  const float w_a[4] = {2, NAN, 3, 4};
  ref_hh_layer(3, 1, 2, 2, 1, 2, 1.0, 1, x, eye, NULL, w_a, eye, y);
  expect_rows(y, (const double[]){2, 0, 2 * c + 3 * a, 4 * a}, 4,
              "super causal");
  /* Super, full, W_a = [[2, 1], [3, 4]] (and a larger max_len: its
   * leading 2 x 2 block): V' = [[2, 1], [3, 4]] */
  const float w_a3[9] = {2, 1, 9, 3, 4, 9, 9, 9, 9};
  ref_hh_layer(3, 1, 2, 2, 1, 3, 1.0, 0, x, eye, NULL, w_a3, eye, y);
  expect_rows(
      y, (const double[]){2 * a + 3 * c, a + 4 * c, 2 * c + 3 * a, c + 4 * a},
      4, "super full");
  /* scale 0 means 1/sqrt(D/h) = 1/sqrt(2) */
  const double s = exp(1.0 / sqrt(2.0)), as = s / (s + 1.0),
               cs = 1.0 / (s + 1.0);
  ref_hh_layer(1, 1, 2, 2, 1, 0, 0.0, 0, x, eye, eye, NULL, eye, y);
  expect_rows(y, (const double[]){as, cs, cs, as}, 4, "default scale");
}

/* h = 2, D = 2: head i reads channel i alone.  W_q = diag(1, 2), x = I:
 * head 0's queries are [1, 0] against keys [1, 0]; head 1's [0, 2]
 * against [0, 1]. */
Test(ref_hh, hand_computed_two_heads) {
  const double e = exp(1.0), e2 = exp(2.0);
  const float x[4] = {1, 0, 0, 1}, w_q[4] = {1, 0, 0, 2}, eye[4] = {1, 0, 0, 1};
  float y[4];
  ref_hh_layer(2, 1, 2, 2, 2, 0, 1.0, 0, x, w_q, NULL, NULL, eye, y);
  expect_rows(y, (const double[]){e / (e + 1.0), 0.5, 0.5, e2 / (e2 + 1.0)}, 4,
              "efficient two heads");
  /* causal, two sequences: the second, x = 2 I, doubles every value and
   * makes head 1's last logit 8 */
  const float x2[8] = {1, 0, 0, 1, 2, 0, 0, 2};
  float y2[8];
  ref_hh_layer(2, 2, 2, 2, 2, 0, 1.0, 1, x2, w_q, NULL, NULL, eye, y2);
  const double e8 = exp(8.0);
  expect_rows(y2,
              (const double[]){1, 0, 0.5, e2 / (e2 + 1.0), 2, 0, 1.0,
                               2 * e8 / (e8 + 1.0)},
              8, "efficient causal batch");
}
