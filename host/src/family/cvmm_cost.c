/* cvmm_cost.c - the model's counts of the grouped GEMM's kernels
 * (cvmm_impl.h), loop by loop as cl/cvmm.cl issues them: global bytes
 * loaded and stored, FMA lanes, work-group barriers.  The rows a tile's
 * bucket holds are exact when routing is deterministic (top-k of all E, or
 * no routing);
 * otherwise uniform routing is assumed: a bucket of a tile of nt rows is
 * non-empty with probability q = 1 - (1 - k/E)^nt and then holds
 * nt k / (E q) rows on average (spec 6.3: each expert's weights are read
 * once a tile that chose it).  The fused small-rows kernel is one tile of
 * every row. */
#include "family/cvmm_impl.h"
#include "model/gemm_rate.h"

#include <math.h>

/* Register blocks of n rows: blocks of r, then of the powers of two below
 * r (cl/cvmm.cl's BLOCKS). */
static double reg_blocks(long n, int r) {
  long b = n / r, rem = n % r;
  for (int p = 8; p >= 1; p /= 2)
    if (p < r && rem >= p) {
      b++;
      rem -= p;
    }
  return (double)b;
}

/* A bucket of a tile of nt rows: the probability that it is non-empty
 * and its rows then (rounded, at least 1). */
static void bucket_rows(const clattn__gg *g, long nt, double *q, long *n) {
  if (g->dense || g->topk == g->experts) {
    *q = 1.0;
    *n = nt;
    return;
  }
  const double p = (double)g->topk / g->experts;
  *q = 1.0 - pow(1.0 - p, (double)nt);
  const double m = *q > 0 ? nt * p / *q : 0.0;
  *n = m < 1.0 ? 1 : lround(m);
}

/* What one tile of nt rows and one column block of `valid` columns
 * issue in the GEMM kernel (per its buckets: `nb` of them), added to c,
 * and the barriers its work-group passes (variant 2), added to *bar. */
static void tile_cost(const clattn__gg *g, const clattn__gg_plan *pl, long nt,
                      double valid, int nb, clattn_cost *c, double *bar) {
  const double K = g->K;
  double q = 1.0;
  long n = nt;
  bucket_rows(g, nt, &q, &n);
  if (pl->variant == 1) {
    const double C = pl->cols;
    const double blocks = reg_blocks(n, pl->rows);
    /* a block: per k, its W vectors (once a panel when packed) and one
     * a-element a row */
    double rd = K * ((pl->pack ? 1.0 : blocks) * C + (double)n) * 4.0;
    double fma = K * (double)n * C;
    if (!g->dense) {
      rd += (double)n * 8.0; /* its list entries */
      fma += (double)n * C;  /* gates into the tile */
      /* every bucket's two offsets, the non-empty ones' work */
      rd = nb * (q * rd + 8.0);
      fma = nb * q * fma;
    }
    c->bytes_read += rd;
    c->fma_issued += fma;
  } else {
    const double rc = (double)(pl->wg / pl->cols * pl->rows);
    const double chunks = ceil((double)n / rc);
    const double ktiles = ceil(K / pl->kt);
    double rd = (double)n * K * 4.0 + chunks * K * valid * 4.0;
    double fma = chunks * pl->wg * pl->rows * (double)pl->kt * ktiles;
    /* LOCAL_MICRO: a k-tile's two barriers, before it is loaded and after */
    double b = chunks * 2.0 * ktiles;
    if (!g->dense) {
      rd += (double)n * 8.0;
      fma += (double)n * pl->cols;
      /* every item reads every bucket's offsets */
      rd = nb * (q * rd + pl->wg * 8.0);
      fma = nb * q * fma;
      /* a gathered block's one before its rows are listed; one before the
       * tile's store */
      b = nb * q * (b + chunks) + 1.0;
    }
    *bar += b;
    c->bytes_read += rd;
    c->fma_issued += fma;
  }
  c->bytes_written += (double)nt * valid * 4.0;
}

static void gemm_cost(const clattn__gg *g, const clattn__gg_plan *pl,
                      const clattn_profile *prof, clattn_prediction *out,
                      double *dram_reads) {
  clattn_cost *c = clattn__model_kernel(
      out, pl->variant == 1 ? "cvmm_gemm_reg" : "cvmm_gemm_local");
  if (c == NULL)
    return;
  const long T = clattn__gg_tiles(g, pl);
  const long last_rows = g->rows - (T - 1) * (long)pl->tile;
  const long NB = (g->N + pl->cols - 1) / pl->cols;
  const double last_cols = g->N - (double)(NB - 1) * pl->cols;
  const int nb = g->dense                        ? 0
                 : g->mode == CLATTN__CVMM_SPLIT ? g->experts
                                                 : g->heads * g->experts;
  double bar = 0;
  /* every (tile, column block, z) work-item or group; the tiles and the
   * blocks differ only at their last one */
  for (int lt = 0; lt < 2; lt++)
    for (int lc = 0; lc < 2; lc++) {
      const double ntiles = lt ? 1.0 : (double)(T - 1);
      const double nblk = lc ? 1.0 : (double)(NB - 1);
      if (ntiles <= 0 || nblk <= 0)
        continue;
      clattn_cost one = {0};
      double one_bar = 0;
      tile_cost(g, pl, lt ? last_rows : pl->tile,
                lc ? last_cols : (double)pl->cols, nb, &one, &one_bar);
      const double times = ntiles * nblk * g->z;
      bar += times * one_bar;
      c->bytes_read += times * one.bytes_read;
      c->fma_issued += times * one.fma_issued;
      c->bytes_written += times * one.bytes_written;
    }
  clattn__model_core(out, c)->barriers = bar;
  /* as cvmm_launch.c passes it: variant 1's groups are the plan's wg (1
   * when 0), the others' its wg; none (0) unless variant 2, a wg or a
   * packed panel asks for one */
  const int group = pl->variant == 1 ? (pl->wg ? pl->wg : 1) : pl->wg;
  clattn__model_core(out, c)->group_items =
      pl->variant == 2 || pl->wg || pl->pack ? group : 0;
  const double rows = g->rows, K = g->K, N = g->N;
  const double ent = (double)g->rows * g->heads * g->topk;
  double a_bytes, w_bytes;
  if (g->dense) {
    c->flops = 2.0 * rows * K * N * g->z;
    a_bytes = 4.0 * rows * K;
    w_bytes = 4.0 * K * N * g->z;
  } else {
    /* the products and their gates */
    c->flops = ent * (2.0 * K * N + N);
    a_bytes = 4.0 * rows * g->lda;
    const double p = (double)g->topk / g->experts;
    const double touched =
        (double)g->heads * g->experts * (1.0 - pow(1.0 - p, rows));
    w_bytes = 4.0 * K * N * touched;
  }
  const double sched = g->dense ? 0.0 : ent * 8.0 + 4.0 * (nb + 1) * T * g->z;
  const double compulsory = a_bytes + w_bytes + sched;
  c->bytes_compulsory = compulsory + c->bytes_written;
  clattn__model_dram(c, compulsory, a_bytes + w_bytes, prof);
  dram_reads[out->n_kernels - 1] = c->bytes_dram - c->bytes_written;
  /* one dense GEMM (a projection's): at the rate tuning measured for its
   * shape, where the profile holds one */
  if (g->dense && g->z == 1)
    clattn__model_gemm_rate(out, c, prof, g->rows, g->N, g->K);
}

/* A kernel row of out with its counts; its DRAM bytes are the issued
 * ones (the routing moves little). */
static clattn_cost *simple_kernel(clattn_prediction *out, double *dram_reads,
                                  const char *name, double rd, double wr) {
  clattn_cost *c = clattn__model_kernel(out, name);
  if (c == NULL)
    return NULL;
  c->bytes_read = rd;
  c->bytes_written = wr;
  c->bytes_compulsory = c->bytes_dram = rd + wr;
  dram_reads[out->n_kernels - 1] = rd;
  return c;
}

/* cvmm_route, cvmm_count and cvmm_scatter. */
static void route_cost(const clattn__gg *g, const clattn__gg_plan *pl,
                       const clattn_profile *prof, clattn_prediction *out,
                       double *dram_reads) {
  const double D = g->sel_inner, he = (double)g->heads * g->experts;
  const double ent = (double)g->rows * g->heads * g->topk;
  clattn_cost *c = clattn__model_kernel(out, "cvmm_route");
  if (c == NULL)
    return;
  const double items = ceil((double)g->rows / pl->rr);
  const double lanes = (double)pl->rnv * pl->rvw;
  /* the last rows of W_sel, whose vectors would pass its end, load only
   * their H E columns */
  const double over = lanes - he;
  const double tail = clattn__dmin(D, ceil(over / he));
  /* the three routing kernels: a work-item a group on variant 1 (a CPU's
   * plan), the runtime's groups otherwise */
  const double route_items = pl->variant == 1 ? 1.0 : 0.0;
  clattn__model_core(out, c)->group_items = route_items;
  c->bytes_read = items * (D * pl->rr + (D - tail) * lanes + tail * he) * 4.0;
  c->fma_issued = items * D * pl->rr * lanes;
  c->bytes_written = ent * 8.0;
  c->flops = 2.0 * g->rows * D * he;
  const double x = 4.0 * g->rows * D, ws = 4.0 * D * he;
  c->bytes_compulsory = x + ws + c->bytes_written;
  clattn__model_dram(c, x + ws, ws, prof);
  dram_reads[out->n_kernels - 1] = c->bytes_dram - c->bytes_written;
  /* the counts read sel; each tile of the scatter reads every count (its
   * offsets), then sel, and writes its offsets (the first also their end)
   * and the list */
  const double T = clattn__gg_tiles(g, pl), nb = he * T;
  clattn_cost *count =
      simple_kernel(out, dram_reads, "cvmm_count", ent * 8.0, nb * 4.0);
  if (count)
    clattn__model_core(out, count)->group_items = route_items;
  clattn_cost *scatter =
      simple_kernel(out, dram_reads, "cvmm_scatter", T * nb * 4.0 + ent * 8.0,
                    nb * 4.0 + 4.0 + ent * 8.0);
  if (scatter)
    clattn__model_core(out, scatter)->group_items = route_items;
}

/* cvmm_small (scheme 2): every work-item (column block, z) routes every
 * row for its heads (SPLIT: one, SUM: all H; the logits recomputed by each
 * work-item, and counted so), then multiplies each bucket that a row chose,
 * its rows in register blocks, and stores its block of every row. */
static void small_cost(const clattn__gg *g, const clattn__gg_plan *pl,
                       const clattn_profile *prof, clattn_prediction *out,
                       double *dram_reads) {
  clattn_cost *c = clattn__model_kernel(out, "cvmm_small");
  if (c == NULL)
    return;
  const double K = g->K, N = g->N, rows = g->rows, C = pl->cols;
  const long NB = (g->N + pl->cols - 1) / pl->cols;
  const double items = (double)NB * g->z;
  const double nhw = g->mode == CLATTN__CVMM_SPLIT ? 1.0 : g->heads;
  const double D = g->sel_inner, E = g->experts;
  double q = 1.0;
  long n = g->rows;
  bucket_rows(g, g->rows, &q, &n);
  const double nb = g->dense ? 1.0 : nhw * E;
  /* a bucket: per k, its W vectors once a register block and one
   * a-element a row; routed, the gates into the tile */
  const double rd = K * (reg_blocks(n, pl->rows) * C + (double)n) * 4.0;
  double fma = K * (double)n * C + (g->dense ? 0.0 : (double)n * C);
  clattn__model_core(out, c)->group_items = pl->wg; /* 0: none passed */
  c->bytes_read = items * nb * q * rd;
  c->fma_issued = items * nb * q * fma;
  if (!g->dense) {
    /* the routing: per row, head and sel_x element, that element and its
     * E weights */
    c->bytes_read += items * rows * nhw * D * (1.0 + E) * 4.0;
    c->fma_issued += items * rows * nhw * D * E;
  }
  c->bytes_written = rows * N * g->z * 4.0;
  double a_bytes, w_bytes, sel_bytes = 0.0;
  if (g->dense) {
    c->flops = 2.0 * rows * K * N * g->z;
    a_bytes = 4.0 * rows * K;
    w_bytes = 4.0 * K * N * g->z;
  } else {
    const double ent = rows * g->heads * g->topk;
    const double he = (double)g->heads * g->experts;
    c->flops = ent * (2.0 * K * N + N) + 2.0 * rows * D * he * NB;
    a_bytes = 4.0 * rows * g->lda;
    const double p = (double)g->topk / g->experts;
    w_bytes = 4.0 * K * N * he * (1.0 - pow(1.0 - p, rows));
    sel_bytes = 4.0 * rows * D + 4.0 * D * he;
  }
  const double compulsory = a_bytes + w_bytes + sel_bytes;
  c->bytes_compulsory = compulsory + c->bytes_written;
  clattn__model_dram(c, compulsory, compulsory, prof);
  dram_reads[out->n_kernels - 1] = c->bytes_dram - c->bytes_written;
}

clattn_status clattn__gg_cost(const clattn__gg *g, const clattn__gg_plan *pl,
                              const clattn_profile *prof,
                              clattn_prediction *out, double *dram_reads) {
  if (pl->scheme == CLATTN__GG_SCHEME_SMALL) {
    small_cost(g, pl, prof, out, dram_reads);
    return CLATTN_OK;
  }
  if (!g->dense)
    route_cost(g, pl, prof, out, dram_reads);
  gemm_cost(g, pl, prof, out, dram_reads);
  return CLATTN_OK;
}
