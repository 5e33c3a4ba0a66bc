/* cvmm_plan.c - the grouped GEMM's plan, its fit on the device and its
 * tuning space (cvmm_impl.h), for the cvmm and gemm families. */
#include "family/cvmm_impl.h"

#include <stdio.h>
#include <string.h>

/* Variant 1's private tile (TILE x C floats) and variant 2's bounds. */
enum {
  MAX_TILE_FLOATS = 16384,
  MAX_TILE = 1024,
  MAX_CV = 8,
  MAX_R = 16,
  MAX_TM = 16,
  KT = 16
};

clattn__gg clattn__gg_of_cvmm(const clattn__cvmm_desc *d) {
  clattn__gg g;
  memset(&g, 0, sizeof g);
  const int split = d->mode == CLATTN__CVMM_SPLIT;
  g.rows = d->rows;
  g.N = d->cols;
  g.ldo = split ? d->heads * d->cols : d->cols;
  g.z = split ? d->heads : 1;
  g.mode = (int)d->mode;
  g.heads = d->heads;
  g.experts = d->experts;
  g.topk = d->topk;
  g.sel_inner = d->sel_inner;
  g.dense = d->gate == CLATTN__CVMM_NONE;
  /* a SUM without routing is one GEMM over the heads' concatenated rows:
   * W [H, 1, K, N] is [H K, N] */
  g.K = !split && g.dense ? d->heads * d->inner : d->inner;
  g.lda = split ? d->inner : d->heads * d->inner;
  return g;
}

clattn__gg clattn__gg_of_gemm(const clattn__gemm_desc *d) {
  clattn__gg g;
  memset(&g, 0, sizeof g);
  g.rows = d->m;
  g.K = d->k;
  g.N = d->n;
  g.lda = d->k;
  g.ldo = d->n;
  g.z = 1;
  g.dense = 1;
  g.heads = g.experts = g.topk = 1;
  return g;
}

int clattn__gg_tiles(const clattn__gg *g, const clattn__gg_plan *pl) {
  return (g->rows + pl->tile - 1) / pl->tile;
}

size_t clattn__gg_sched_ints(const clattn__gg *g, const clattn__gg_plan *pl) {
  const size_t n = (size_t)g->rows * (size_t)g->heads * (size_t)g->topk;
  const size_t nb =
      (size_t)g->heads * (size_t)g->experts * (size_t)clattn__gg_tiles(g, pl);
  return 4 * n + 2 * nb + 1;
}

/* Variant 1's default columns a work-item: the vector count (1 to 5, and
 * no more than a quarter of the registers) whose columns computed over N
 * (N rounded up to the block), weighted by its register block's relative
 * time per column, cost the least, so that a faster wide block is weighed
 * against the columns it computes past N (the weights' origin:
 * bench/RESULTS.md, figures that shaped the code): 3 vectors of 8 rows
 * for a dense GEMM, 4 of 6 with routing (whose blocks also add into the
 * tile). */
static int default_cv(int N, int vw, int vregs, int dense) {
  static const double weight[2][6] = {{0, 1.25, 1.08, 1.04, 1.0, 1.1},
                                      {0, 1.25, 1.08, 1.0, 1.05, 1.1}};
  int best = 1;
  double bs = 0;
  for (int cv = 1; cv <= 5 && cv * 4 <= vregs; cv++) {
    const int c = cv * vw;
    const double s = (double)((N + c - 1) / c) * c * weight[dense != 0][cv];
    if (cv == 1 || s < bs) {
      best = cv;
      bs = s;
    }
  }
  return best;
}

/* Variant 1's default tile: many rows, so that W's panel, once in the
 * cache, serves many (dense: about 128 in whole blocks; routed: 256, and
 * at least enough that a bucket's share, tile k / E, fills a few register
 * blocks), halved while that leaves a core idle. */
static int default_tile(const clattn__target *t, const clattn__gg *g,
                        const clattn__gg_plan *pl) {
  const int r = pl->rows;
  const long nb = (g->N + pl->cols - 1) / pl->cols;
  const long want = 4L * (long)t->compute_units;
  int tile;
  if (g->dense) {
    tile = 128 / r * r;
  } else {
    const long need = (4L * r * g->experts + g->topk - 1) / g->topk;
    tile = 256;
    while (tile < need && tile < 512)
      tile *= 2;
    while (tile * pl->cols > MAX_TILE_FLOATS && tile > 1)
      tile /= 2;
  }
  while (tile > 2 * r && nb * ((g->rows + tile - 1) / tile) * g->z < want)
    tile /= 2;
  /* no more rows than the call has */
  while (tile > r && tile / 2 >= g->rows)
    tile /= 2;
  return tile < 1 ? 1 : tile;
}

static clattn_status plan_reg(const clattn__target *t, const clattn__gg *g,
                              const clattn__gg_tunables *p, clattn__gg_plan *pl,
                              char *why, size_t cap) {
  const int tv = t->vec_width > 1 ? t->vec_width : 4;
  const int vregs = t->vregs > 0 ? t->vregs : 16;
  /* vectors no wider than the device's (explicit columns: 16, so that
   * params alone fix the kernel) nor than a row of W */
  int vmax = p->keys ? 16 : tv;
  while (vmax > g->N)
    vmax /= 2;
  pl->cols = p->keys ? p->keys : vmax * default_cv(g->N, vmax, vregs, g->dense);
  /* columns past N are wasted: at most N rounded up to a vector */
  if (pl->cols > g->N)
    pl->cols = (g->N + vmax - 1) / vmax * vmax;
  pl->vw = vmax;
  while (pl->cols % pl->vw != 0)
    pl->vw /= 2;
  if (pl->cols / pl->vw > MAX_CV) {
    snprintf(why, cap,
             "params: variant 1 keys (%d columns a work-item) must be at "
             "most %d vectors of the widest width dividing it (up to %d)",
             pl->cols, MAX_CV, vmax);
    return CLATTN_ERR_INVALID_ARG;
  }
  pl->cv = pl->cols / pl->vw;
  int r = (vregs - 2 - pl->cv) / pl->cv;
  pl->rows = p->rows ? p->rows : r < 1 ? 1 : r > 8 ? 8 : r;
  if (pl->rows > MAX_R) {
    snprintf(why, cap, "params: variant 1 rows (%d) must be at most %d",
             pl->rows, MAX_R);
    return CLATTN_ERR_INVALID_ARG;
  }
  pl->tile = p->splits ? p->splits : default_tile(t, g, pl);
  if (pl->tile > MAX_TILE ||
      (!g->dense && (long)pl->tile * pl->cols > MAX_TILE_FLOATS)) {
    snprintf(why, cap,
             "params: variant 1 splits (%d rows a tile) too large: at most "
             "%d, and with routing splits x keys at most %d",
             pl->tile, MAX_TILE, MAX_TILE_FLOATS);
    return CLATTN_ERR_INVALID_ARG;
  }
  pl->wg = p->wg;
  /* W's rows a multiple of 512 bytes apart share a few cache sets: copy
   * the panel (one work-item a group, for its local memory) when enough
   * rows reuse it */
  pl->pack = g->N % 128 == 0 && pl->wg <= 1 && g->rows >= 4 * pl->rows &&
             (unsigned long long)g->K * pl->cols * 4 <= clattn__local_budget(t);
  /* routing: vectors of 16 columns (the last partly past the H E), as
   * many rows as keep about 24 accumulators, up to 12 */
  const int he = g->heads * g->experts;
  pl->rvw = 16;
  pl->rnv = (he + pl->rvw - 1) / pl->rvw;
  pl->rr = 24 / pl->rnv;
  pl->rr = pl->rr < 1 ? 1 : pl->rr > 12 ? 12 : pl->rr;
  return CLATTN_OK;
}

static clattn_status plan_local(const clattn__target *t, const clattn__gg *g,
                                const clattn__gg_tunables *p, clattn__gg_plan *pl,
                                char *why, size_t cap) {
  const int most = (int)(t->max_wg < 256 ? t->max_wg : 256);
  pl->wg = p->wg ? p->wg : clattn__pow2_floor((size_t)(most > 0 ? most : 1));
  if (p->keys) {
    pl->cols = p->keys;
  } else {
    pl->cols = 64;
    while (pl->cols > 16 && pl->cols / 2 >= g->N)
      pl->cols /= 2;
    while (pl->cols > pl->wg)
      pl->cols /= 2;
  }
  pl->rows = p->rows ? p->rows : 4;
  pl->kt = KT;
  if (pl->wg % pl->cols != 0 || pl->rows > MAX_TM) {
    snprintf(why, cap,
             "params: variant 2 wg (%d) must be a multiple of keys (%d "
             "columns a work-group) and rows (%d) at most %d",
             pl->wg, pl->cols, pl->rows, MAX_TM);
    return CLATTN_ERR_INVALID_ARG;
  }
  const int rc = pl->wg / pl->cols * pl->rows;
  if (p->splits) {
    pl->tile = p->splits;
  } else {
    /* four gathered blocks a tile, fewer if local memory is short */
    pl->tile = 4 * rc;
    while (pl->tile > rc && pl->tile / 2 >= g->rows)
      pl->tile /= 2;
    while (pl->tile > 1 &&
           clattn__gg_local_bytes(g, pl) > clattn__local_budget(t))
      pl->tile /= 2;
  }
  if (pl->tile > MAX_TILE) {
    snprintf(why, cap,
             "params: variant 2 splits (%d rows a tile) must be "
             "at most %d",
             pl->tile, MAX_TILE);
    return CLATTN_ERR_INVALID_ARG;
  }
  pl->rr = 1;
  const int he = g->heads * g->experts;
  pl->rvw = 4;
  pl->rnv = (he + pl->rvw - 1) / pl->rvw;
  return CLATTN_OK;
}

clattn_status clattn__gg_make_plan(const clattn__target *t, const clattn__gg *g,
                                   const clattn__params *values, int own,
                                   clattn__gg_plan *pl, char *why, size_t cap) {
  clattn__gg_tunables own_values;
  const clattn__gg_tunables *p = &own_values;
  clattn__tunables_get(&own_values, sizeof own_values, values);
  memset(pl, 0, sizeof *pl);
  pl->own_only = own;
  if (own) {
    const int small =
        p->scheme == 2 || (p->scheme == 0 && p->variant != 2 &&
                           p->splits == 0 && g->rows <= CLATTN__GG_SMALL_ROWS);
    if (small &&
        (g->rows > CLATTN__GG_SMALL_ROWS || p->variant == 2 || p->splits)) {
      snprintf(why, cap,
               "params: scheme 2 (fused small rows) takes at most %d rows "
               "(this call has %d), variant 0 or 1 and no splits",
               CLATTN__GG_SMALL_ROWS, g->rows);
      return CLATTN_ERR_INVALID_ARG;
    }
    if (small) {
      /* variant 1's columns and register blocks, every row one tile; the
       * tile the path's most rows, not the call's (an argument), so that
       * a serving loop's batch sizes share one program */
      pl->scheme = CLATTN__GG_SCHEME_SMALL;
      pl->variant = 1;
      clattn_status rc = plan_reg(t, g, p, pl, why, cap);
      pl->tile = CLATTN__GG_SMALL_ROWS;
      pl->pack = 0;
      return rc;
    }
  }
  pl->scheme =
      own || p->scheme == 1 ? CLATTN__GG_SCHEME_OWN : CLATTN__GG_SCHEME_CLBLAST;
  if (pl->scheme == CLATTN__GG_SCHEME_CLBLAST) {
    if (p->variant || p->rows || p->keys || p->wg || p->splits) {
      snprintf(why, cap,
               "params: scheme 2 (CLBlast) takes no variant, "
               "rows, keys, wg or splits");
      return CLATTN_ERR_INVALID_ARG;
    }
    return CLATTN_OK;
  }
  pl->variant = p->variant ? p->variant : t->cpu_vectors ? 1 : 2;
  return pl->variant == 1 ? plan_reg(t, g, p, pl, why, cap)
                          : plan_local(t, g, p, pl, why, cap);
}

size_t clattn__gg_local_bytes(const clattn__gg *g, const clattn__gg_plan *pl) {
  if (pl->scheme != CLATTN__GG_SCHEME_OWN)
    return 0; /* CLBlast's own, or the fused kernel's none */
  if (pl->variant == 1)
    return pl->pack ? (size_t)g->K * (size_t)pl->cols * 4 : 0;
  const size_t rc = (size_t)(pl->wg / pl->cols * pl->rows);
  size_t b = (rc * (size_t)pl->kt + (size_t)pl->kt * (size_t)pl->cols) * 4;
  if (!g->dense)
    b += ((size_t)pl->tile * (size_t)pl->cols + 3 * rc) * 4;
  return b;
}

int clattn__gg_fits(const clattn__target *t, const clattn__gg *g,
                    const clattn__gg_plan *pl, char *why, size_t cap) {
  if (pl->scheme == CLATTN__GG_SCHEME_CLBLAST)
    return 1;
  return clattn__plan_fits(t, pl->wg, clattn__gg_local_bytes(g, pl), why, cap);
}

clattn__params clattn__gg_resolved(const clattn__gg_plan *pl) {
  clattn__gg_tunables r = {0, 0, 0, 0, 0, CLATTN__GG_SCHEME_CLBLAST};
  if (pl->scheme == CLATTN__GG_SCHEME_SMALL)
    r = (clattn__gg_tunables){1, pl->rows, pl->cols, pl->wg, 0, 2};
  else if (pl->scheme == CLATTN__GG_SCHEME_OWN)
    r = (clattn__gg_tunables){pl->variant, pl->rows, pl->cols,
                              pl->wg,      pl->tile, CLATTN__GG_SCHEME_OWN};
  return clattn__tunables_put(&r, sizeof r);
}

/* Add candidate p of F's call desc to s (clattn__space_try). */
static int add(const clattn__family *F, const clattn__target *t,
               const void *desc, clattn__gg_tunables p, clattn__space *s) {
  const clattn__params v = clattn__tunables_put(&p, sizeof p);
  return clattn__space_try(F, t, desc, &v, s);
}

/* Bucketed (scheme 1) variant 1: rows {4, 6, 8, 12} x vectors {1 .. 5}
 * (a single vector with 8 rows or more; the accumulators fitting the
 * registers) x tiles
 * {default, 64, 256}; variant 2 on GPU-shaped targets: work-groups {64,
 * 128, 256} x columns {16, 32, 64} x rows {2, 4, 8}; cvmm's fused path
 * (scheme 2) for small rows: vectors {1 .. 5} (1 .. 2 on GPU-shaped
 * targets); and CLBlast for the projection family (its default). */
clattn_status clattn__gg_space(const clattn__family *F, const clattn__target *t,
                               const void *desc, const clattn__gg *g,
                               int clblast, clattn__space *s) {
  static const int rs[] = {4, 6, 8, 12}, tiles[] = {0, 64, 256};
  static const int wgs[] = {64, 128, 256}, cts[] = {16, 32, 64},
                   tms[] = {2, 4, 8};
  const int own = CLATTN__GG_SCHEME_OWN; /* cvmm's bucketed scheme too */
  clattn__space_init_family(s, F);
  const int i = add(F, t, desc, (clattn__gg_tunables){0, 0, 0, 0, 0, 0}, s);
  if (i == -2)
    return CLATTN_ERR_NOMEM;
  s->def = i;
  int vw = t->vec_width > 1 ? t->vec_width : 4;
  while (vw > g->N)
    vw /= 2;
  /* cvmm's fused small-rows path, early so that a partial search meets
   * it: its columns a work-item, the default register block */
  for (int cv = 1; !clblast && g->rows <= CLATTN__GG_SMALL_ROWS && cv <= 5;
       cv++) {
    if (!t->cpu_vectors && cv > 2)
      continue;
    const clattn__gg_tunables p = {1, 0, cv * vw, 0, 0, 2};
    if (add(F, t, desc, p, s) == -2)
      return CLATTN_ERR_NOMEM;
  }
  if (clblast && add(F, t, desc,
                    (clattn__gg_tunables){0, 0, 0, 0, 0,
                                          CLATTN__GG_SCHEME_CLBLAST},
                    s) == -2)
    return CLATTN_ERR_NOMEM;
  const int vregs = t->vregs > 0 ? t->vregs : 16;
  for (int r = 0; r < 4; r++)
    for (int cv = 1; cv <= 5; cv++)
      for (int k = 0; k < 3; k++) {
        if (rs[r] * cv + cv + 2 > vregs || (cv == 1 && rs[r] < 8) ||
            (!t->cpu_vectors && (rs[r] > 8 || cv > 2 || k > 0)))
          continue;
        const clattn__gg_tunables p = {1, rs[r], cv * vw, 0, tiles[k], own};
        if (add(F, t, desc, p, s) == -2)
          return CLATTN_ERR_NOMEM;
      }
  for (int w = 0; !t->cpu_vectors && w < 3; w++)
    for (int c = 0; c < 3; c++)
      for (int m = 0; m < 3; m++) {
        const clattn__gg_tunables p = {2, tms[m], cts[c], wgs[w], 0, own};
        if (add(F, t, desc, p, s) == -2)
          return CLATTN_ERR_NOMEM;
      }
  return CLATTN_OK;
}
