/* super_values.c - the super-values family: Super attention's values
 * V' = W_a X over positions (super_values.h), the rows a prefill or a
 * decode step of clattn_layer_prefill (Super) adds.  Its kernel is
 * cl/super_values.cl: R rows x one VW-wide channel vector per work-item. */
#include "family/super_values.h"
#include "family/common.h"
#include "family/family.h"
#include "model/model.h"
#include "reference/ref_hh.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum { W_A, X, V };

/* shape text: seq = n, pos = pos0, kv-seq = capacity (default pos+seq),
 * max-len (default kv-seq), layout = x's, kv-layout = v's (default
 * layout); dtype is f32, the only one (the CLI always writes it) */
#define SHAPE_KEYS                                                             \
  "batch seq pos kv-seq heads head-dim max-len causal dtype layout kv-layout"

enum { MAX_ROWS = 32 };

typedef struct sv_plan {
  int rows; /* R: rows per work-item */
  int wg;   /* work-items per group along the channel vectors; 0: the
               runtime's choice */
  int vw;   /* VW: channels per vector, a power of two dividing head_dim */
} sv_plan;

static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn__super_values_desc *d = desc;
  clattn_status rc;
  if (d->batch < 1 || d->n < 1 || d->pos0 < 0) {
    snprintf(why, cap, "batch (%d) and n (%d) must be >= 1, pos0 (%d) >= 0",
             d->batch, d->n, d->pos0);
    return CLATTN_ERR_SHAPE;
  }
  if (d->heads < 1 || d->head_dim < 1) {
    snprintf(why, cap, "heads (%d) and head_dim (%d) must be >= 1", d->heads,
             d->head_dim);
    return CLATTN_ERR_SHAPE;
  }
  if (d->head_dim > CLATTN_MAX_HEAD_DIM) {
    snprintf(why, cap, "head_dim %d: at most %d supported", d->head_dim,
             CLATTN_MAX_HEAD_DIM);
    return CLATTN_ERR_UNSUPPORTED;
  }
  if (!clattn__is_layout(d->x_layout) || !clattn__is_layout(d->v_layout)) {
    snprintf(why, cap, "unknown x or v layout");
    return CLATTN_ERR_INVALID_ARG;
  }
  const long last = (long)d->pos0 + d->n; /* one past the last row */
  if (d->max_len < 1 || last > d->max_len) {
    snprintf(why, cap,
             "rows pos0 + n = %ld exceed max_len (%d), W_a's size: Super "
             "sequences are at most max_len long",
             last, d->max_len);
    return CLATTN_ERR_SHAPE;
  }
  if (last > d->capacity) {
    snprintf(why, cap, "rows pos0 + n = %ld exceed the capacity (%d)", last,
             d->capacity);
    return CLATTN_ERR_SHAPE;
  }
  if ((rc = clattn__check_int32("heads x head_dim",
                                (long long)d->heads * d->head_dim, why, cap)) ||
      (rc = clattn__check_tensor("x", 4, d->batch, d->capacity, d->heads,
                                 d->head_dim, why, cap)) ||
      (rc = clattn__check_tensor("w_a", 4, d->max_len, d->max_len, 1, 1, why,
                                 cap)))
    return rc;
  return CLATTN_OK;
}

static void buffers(const void *desc, clattn__buf_spec *b) {
  const clattn__super_values_desc *d = desc;
  const size_t rows = (size_t)d->batch * (size_t)d->capacity;
  const size_t ch = (size_t)d->heads * (size_t)d->head_dim;
  const size_t w = (size_t)d->max_len * (size_t)d->max_len;
  b[W_A] = (clattn__buf_spec){"w_a", CLATTN__BUF_IN, w, CLATTN_F32, 0, 0};
  b[X] = (clattn__buf_spec){"x", CLATTN__BUF_IN, rows * ch, CLATTN_F32, 0, 0};
  b[V] =
      (clattn__buf_spec){"v", CLATTN__BUF_INOUT, rows * ch, CLATTN_F32, 0, 0};
}

/* No INTS buffer. */
static int full_int(const void *desc) {
  (void)desc;
  return 0;
}

static void shape_class(const void *desc, char *buf, size_t cap) {
  const clattn__super_values_desc *d = desc;
  snprintf(buf, cap, "f32 d%d bh%ld n%ld l%ld %s %s %s", d->head_dim,
           clattn__pow2_round((long)d->batch * d->heads),
           clattn__pow2_round(d->n), clattn__pow2_round((long)d->pos0 + d->n),
           d->causal ? "causal" : "full",
           d->x_layout == CLATTN_BHSD ? "bhsd" : "bshd",
           d->v_layout == CLATTN_BHSD ? "bhsd" : "bshd");
}

static clattn_status parse_shape(const char *text, void *desc, char *why,
                                 size_t cap) {
  clattn__super_values_desc d = {
      .batch = 1, .n = 1, .causal = 1, .x_layout = CLATTN_BSHD};
  clattn_dtype dtype = CLATTN_F32;
  clattn_status rc;
  if ((rc = clattn__shape_keys(text, SHAPE_KEYS, why, cap)) ||
      (rc = clattn__shape_int(text, "batch", 1, 1 << 20, &d.batch, why, cap)) ||
      (rc = clattn__shape_int(text, "seq", 1, 1 << 30, &d.n, why, cap)) ||
      (rc = clattn__shape_int(text, "pos", 0, 1 << 30, &d.pos0, why, cap)) ||
      (rc = clattn__shape_int(text, "heads", 1, 1 << 16, &d.heads, why, cap)) ||
      (rc = clattn__shape_int(text, "head-dim", 1, CLATTN_MAX_HEAD_DIM,
                              &d.head_dim, why, cap)) ||
      (rc = clattn__shape_int(text, "causal", 0, 1, &d.causal, why, cap)) ||
      (rc = clattn__shape_dtype(text, &dtype, why, cap)) ||
      (rc = clattn__shape_layout(text, "layout", &d.x_layout, why, cap)))
    return rc;
  if (dtype != CLATTN_F32) {
    snprintf(why, cap, "dtype=%s: super-values is float32 only",
             clattn__dtype_name(dtype));
    return CLATTN_ERR_UNSUPPORTED;
  }
  /* pos0 + n past INT_MAX: a capacity the check refuses */
  const long rows = (long)d.pos0 + d.n;
  d.capacity = rows > INT_MAX ? INT_MAX : (int)rows;
  if ((rc = clattn__shape_int(text, "kv-seq", 1, 1 << 30, &d.capacity, why,
                              cap)))
    return rc;
  d.max_len = d.capacity;
  d.v_layout = d.x_layout;
  if ((rc = clattn__shape_int(text, "max-len", 1, 1 << 30, &d.max_len, why,
                              cap)) ||
      (rc = clattn__shape_layout(text, "kv-layout", &d.v_layout, why, cap)))
    return rc;
  if (d.heads < 1 || d.head_dim < 1) {
    snprintf(why, cap, "the shape needs heads= and head-dim=");
    return CLATTN_ERR_INVALID_ARG;
  }
  *(clattn__super_values_desc *)desc = d;
  return CLATTN_OK;
}

/* Default rows per work-item: on a CPU that wants explicit vectors, the
 * accumulators take half its vector registers (the x vector and the W_a
 * broadcasts the rest); elsewhere 4, which keeps a GPU's registers free
 * for occupancy. */
static int default_rows(const clattn__target *t, int vw) {
  if (!t->cpu_vectors)
    return 4;
  const long floats = (long)t->vregs * t->vec_width / 2;
  long r = floats / vw;
  r = r < 1 ? 1 : r > 16 ? 16 : r;
  return clattn__pow2_floor((size_t)r);
}

/* Its tunables, in the order of its table. */
typedef struct sv_tunables {
  int variant, rows, wg, vector;
} sv_tunables;
static const clattn__tunable tunables[] = {
    {"variant", 1, 1, "1", "1 (its one kernel)", CLATTN__TUNABLE_KERNEL},
    {"rows", 1, MAX_ROWS, "by the vector registers", "output rows a work-item",
     0},
    {"wg", 1, 1 << 20, "the runtime's (CPU), up to 64 (GPU)",
     "work-items a work-group", CLATTN__TUNABLE_WG},
    {"vector", 1, 16, "the widest of 16, 8, 4, 2 and 1 dividing head_dim",
     "channels a work-item's vector (VW): a power of two dividing head_dim",
     0}};
CLATTN__TUNABLES_MATCH(sv_tunables, tunables);

static clattn_status plan(const clattn__target *t, const void *desc,
                          const clattn__params *values, void *pl_, char *why,
                          size_t cap) {
  const clattn__super_values_desc *d = desc;
  sv_tunables own;
  const sv_tunables *p = &own;
  clattn__tunables_get(&own, sizeof own, values);
  sv_plan *pl = pl_;
  if (p->vector &&
      ((p->vector & (p->vector - 1)) != 0 || d->head_dim % p->vector != 0)) {
    snprintf(why, cap,
             "vector=%d: a power of two dividing head_dim (%d), at most 16",
             p->vector, d->head_dim);
    return CLATTN_ERR_INVALID_ARG;
  }
  pl->vw = p->vector ? p->vector : clattn__vec_width(d->head_dim);
  pl->rows = p->rows ? p->rows : default_rows(t, pl->vw);
  /* a CPU runs whatever groups the runtime forms; a GPU wants groups of
   * a few waves, but no more items than there are channel vectors */
  if (p->wg) {
    pl->wg = p->wg;
  } else if (t->cpu_vectors) {
    pl->wg = 0;
  } else {
    const long nvec = (long)d->heads * (d->head_dim / pl->vw);
    int wg = t->max_wg >= 64 ? 64 : clattn__pow2_floor(t->max_wg);
    while (wg > 1 && wg / 2 >= nvec)
      wg /= 2;
    pl->wg = wg;
  }
  return CLATTN_OK;
}

static int fits(const clattn__target *t, const void *desc, const void *pl_,
                char *why, size_t cap) {
  const sv_plan *pl = pl_;
  (void)desc;
  return clattn__plan_fits(t, pl->wg, 0, why, cap);
}

static clattn__params resolved(const void *pl_) {
  const sv_plan *pl = pl_;
  const sv_tunables r = {1, pl->rows, pl->wg, pl->vw};
  return clattn__tunables_put(&r, sizeof r);
}

static int add(const clattn__target *t, const void *d, sv_tunables p,
               clattn__space *s) {
  const clattn__params v = clattn__tunables_put(&p, sizeof p);
  return clattn__space_try(&clattn__family_super_values, t, d, &v, s);
}

/* rows {1, 2, 4, 8, 16} x work-group {runtime's, 32, 128} x vector
 * {automatic, 4} (the automatic width, and a narrower one where it is
 * wider). */
static clattn_status space(const clattn__target *t, const void *desc,
                           clattn__space *s) {
  static const int rows[] = {1, 2, 4, 8, 16}, wgs[] = {0, 32, 128};
  const clattn__super_values_desc *d = desc;
  const int vectors[] = {0, d->head_dim % 4 == 0 ? 4 : 0};
  clattn__space_init_family(s, &clattn__family_super_values);
  const int i = add(t, desc, (sv_tunables){0, 0, 0, 0}, s);
  if (i == -2)
    return CLATTN_ERR_NOMEM;
  s->def = i;
  for (int r = 0; r < 5; r++)
    for (int w = 0; w < 3; w++)
      for (int v = 0; v < 2; v++)
        if (add(t, desc, (sv_tunables){1, rows[r], wgs[w], vectors[v]}, s) ==
            -2)
          return CLATTN_ERR_NOMEM;
  return CLATTN_OK;
}

/* What cl/super_values.cl issues, loop by loop: a work-item of nr rows
 * starting at t0 loads one x vector per position it visits and one W_a
 * scalar (an FMA of VW lanes) per visible (row, position) pair, and
 * stores its nr vectors. */
static clattn_status cost(const void *desc, const void *plan_, const int *ints,
                          const clattn_profile *prof, clattn_prediction *out,
                          double *dram_reads) {
  const clattn__super_values_desc *d = desc;
  const sv_plan *pl = plan_;
  (void)ints;
  const double vw = pl->vw, R = pl->rows;
  const double items = (double)d->batch * d->heads * (d->head_dim / pl->vw);
  const double L = (double)d->pos0 + d->n; /* positions of a full row */
  /* F full blocks of R rows at t0 = pos0 + k R, then a block of `tail`
   * rows; summed in closed form, as n may be large */
  const double F = (double)(d->n / pl->rows);
  const double tail = (double)(d->n % pl->rows);
  double xvec, pairs_issued;
  if (d->causal) {
    /* a block at t0 of nr rows: t0 + nr x vectors, nr (t0 + 1) pairs in
     * its full part and nr (nr - 1) / 2 in its triangle */
    const double sum_t0 = F * d->pos0 + R * F * (F - 1.0) / 2.0;
    const double t_tail = d->pos0 + F * R;
    xvec = sum_t0 + F * R + (tail > 0 ? t_tail + tail : 0.0);
    pairs_issued = R * (sum_t0 + F) + F * R * (R - 1.0) / 2.0 +
                   tail * (t_tail + 1.0) + tail * (tail - 1.0) / 2.0;
  } else {
    xvec = (F + (tail > 0)) * L;
    pairs_issued = (double)d->n * L;
  }
  const double rows_out = d->n;
  /* the pairs the math needs: s <= t, or every s < L */
  const double pairs =
      d->causal ? (double)d->n * d->pos0 + (double)d->n * (d->n + 1.0) / 2.0
                : (double)d->n * L;
  const double ch = (double)d->heads * d->head_dim;
  clattn_cost *c = clattn__model_kernel(out, "super_values");
  /* the plan's wg; none passed (0) when it names none */
  clattn__model_core(out, c)->group_items = pl->wg;
  c->bytes_read = items * 4.0 * (vw * xvec + pairs_issued);
  c->bytes_written = items * 4.0 * vw * rows_out;
  c->fma_issued = items * vw * pairs_issued;
  c->flops = 2.0 * pairs * ch * d->batch;
  /* W_a's visible entries once (shared by every sequence and channel), x's
   * rows once, v's rows once */
  const double x_bytes = 4.0 * d->batch * L * ch;
  const double compulsory_reads = 4.0 * pairs + x_bytes;
  c->bytes_compulsory = compulsory_reads + 4.0 * d->batch * d->n * ch;
  /* re-reads: W_a's rows and one sequence's x serve every work-item */
  clattn__model_dram(c, compulsory_reads, 4.0 * (pairs + L * ch), prof);
  dram_reads[0] = c->bytes_dram - c->bytes_written;
  return CLATTN_OK;
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *pl_,
                             int auto_wg, const cl_mem *bufs,
                             const clattn_events *ev) {
  const clattn__super_values_desc *d = desc;
  sv_plan *pl = pl_;
  clattn_status rc;
  clattn__defs df = {0};
  clattn__def(&df, "VW", pl->vw);
  clattn__def(&df, "R", pl->rows);
  clattn__def(&df, "CAUSAL", d->causal ? 1 : 0);
  cl_kernel kern = NULL;
  if ((rc = clattn__kernel_defs(ctx, "super_values.cl", &df, "super_values",
                                &kern)))
    return rc;
  if (pl->wg && auto_wg) {
    /* an automatic work-group may exceed what the compiled kernel allows */
    size_t kwg = 0;
    if ((rc = clattn__kernel_wg(ctx, kern, &kwg)))
      return rc;
    if (kwg < (size_t)pl->wg)
      pl->wg = clattn__pow2_floor(kwg);
  }
  if (pl->wg &&
      (rc = clattn__check_wg(ctx, kern, (size_t)pl->wg, 0, "super_values")))
    return rc;
  const int head_vecs = d->head_dim / pl->vw;
  const int nvec = d->heads * head_vecs;
  const clattn__strides xs =
      clattn__layout_strides(d->x_layout, d->capacity, d->heads, d->head_dim);
  const clattn__strides vs =
      clattn__layout_strides(d->v_layout, d->capacity, d->heads, d->head_dim);
  const cl_int ci[5] = {d->n, d->pos0, d->max_len, nvec, head_vecs};
  const long st[6] = {xs.b, xs.s, xs.h, vs.b, vs.s, vs.h};
  cl_uint a = 0;
  if ((rc = clattn__args(ctx, kern, &a, 3, sizeof(cl_mem), bufs)) ||
      (rc = clattn__scalars(ctx, kern, &a, 5, sizeof(cl_int), ci)) ||
      (rc = clattn__scalars(ctx, kern, &a, 6, sizeof(cl_long), st)))
    return rc;
  const size_t wg = pl->wg ? (size_t)pl->wg : 1;
  const size_t gws[3] = {((size_t)nvec + wg - 1) / wg * wg,
                         ((size_t)d->n + pl->rows - 1) / (size_t)pl->rows,
                         (size_t)d->batch};
  const size_t lws[3] = {wg, 1, 1};
  return clattn__launch(ctx, kern, 3, gws, pl->wg ? lws : NULL,
                        ev ? ev->num_wait : 0, ev ? ev->wait : NULL,
                        ev ? ev->out : NULL);
}

/* Five rows after 6 cached ones in a cache of 13, 3 heads: no tile divides
 * the rows, and the last row block is partial. */
static void check_case(const void *desc, clattn__check_case *c) {
  clattn__super_values_desc *s = (clattn__super_values_desc *)c->desc;
  *s = *(const clattn__super_values_desc *)desc;
  s->batch = 2;
  s->n = 5;
  s->pos0 = 6;
  s->capacity = 13;
  s->max_len = 12;
  s->heads = 3;
}

static void reference(const void *desc, void *const *b) {
  const clattn__super_values_desc *d = desc;
  ref_super_values(d->batch, d->n, d->pos0, d->capacity, d->heads, d->head_dim,
                   d->max_len, d->causal, (int)d->x_layout, (int)d->v_layout,
                   b[W_A], b[X], b[V]);
}

static const char *const standard[] = {
    "batch=1 seq=512 heads=8 head-dim=64 causal=1",
    "batch=8 seq=1 pos=511 kv-seq=512 heads=8 head-dim=64 layout=bshd "
    "kv-layout=bhsd",
    NULL};

const clattn__family clattn__family_super_values = {
    .name = "super-values",
    .summary = "Super attention's values V' = W_a X over positions, one W_a "
               "shared by the heads (clattn_layer_prefill, Super)",
    .api = "clattn_layer_prefill (Super)",
    .source = "super_values.cl",
    .desc_size = sizeof(clattn__super_values_desc),
    .plan_size = sizeof(sv_plan),
    .nbufs = 3,
    .tune_method = 1,
    .standard_shapes = standard,
    .check = check,
    .buffers = buffers,
    .full_int = full_int,
    .shape_class = shape_class,
    .shape_keys = SHAPE_KEYS,
    .parse_shape = parse_shape,
    CLATTN__TUNABLES(tunables),
    .plan = plan,
    .fits = fits,
    .resolved = resolved,
    .space = space,
    .cost = cost,
    .enqueue = enqueue,
    .check_case = check_case,
    .reference = reference,
};
