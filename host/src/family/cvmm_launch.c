/* cvmm_launch.c - the grouped GEMM's launches (cvmm_impl.h): the routing
 * (cvmm_route, cvmm_count, cvmm_scatter) into the context's scratch slot
 * 1, then the GEMM kernel, all on the context's in-order queue; or the
 * fused small-rows kernel cvmm_small alone. */
#include "family/cvmm_impl.h"

#include <stdio.h>

/* The routing scratch: sel, list and off (cl/cvmm.cl). */
enum { SCHED_SLOT = 1 };

static void options(const clattn__gg *g, const clattn__gg_plan *pl,
                    clattn__defs *df) {
  df->n = 0;
  clattn__def(df, "DENSE", g->dense);
  clattn__def(df, "VARIANT", pl->variant);
  clattn__def(df, "TILE", pl->tile);
  clattn__def(df, "SMALL", pl->scheme == CLATTN__GG_SCHEME_SMALL);
  if (!g->dense) {
    clattn__def(df, "MODE", g->mode);
    clattn__def(df, "H", g->heads);
    clattn__def(df, "E", g->experts);
    clattn__def(df, "TOPK", g->topk);
    clattn__def(df, "RR", pl->rr);
    clattn__def(df, "RVW", pl->rvw);
    clattn__def(df, "RNV", pl->rnv);
  }
  if (pl->variant == 1) {
    clattn__def(df, "R", pl->rows);
    clattn__def(df, "VW", pl->vw);
    clattn__def(df, "CV", pl->cv);
    clattn__def(df, "PACK", pl->pack);
    clattn__def(df, "KP", pl->pack ? g->K : 1);
  } else {
    clattn__def(df, "TM", pl->rows);
    clattn__def(df, "CT", pl->cols);
    clattn__def(df, "WG", pl->wg);
    clattn__def(df, "KT", pl->kt);
  }
}

static const char *gemm_name(const clattn__gg_plan *pl) {
  if (pl->scheme == CLATTN__GG_SCHEME_SMALL)
    return "cvmm_small";
  return pl->variant == 1 ? "cvmm_gemm_reg" : "cvmm_gemm_local";
}

/* The routing kernels, in launch order. */
enum { ROUTE, COUNT, SCATTER, NROUTE };
static const char *const route_names[NROUTE] = {"cvmm_route", "cvmm_count",
                                                "cvmm_scatter"};

/* The kernels of the plan; an automatic work-group (variant 2) larger
 * than its compiled kernel allows is lowered once and the program
 * rebuilt. */
static clattn_status kernels(clattn_ctx *ctx, const clattn__gg *g,
                             clattn__gg_plan *pl, int auto_wg, cl_kernel *route,
                             cl_kernel *gemm) {
  clattn__defs df;
  clattn_status rc;
  const int small = pl->scheme == CLATTN__GG_SCHEME_SMALL;
  for (int pass = 0; pass < 2; pass++) {
    options(g, pl, &df);
    if ((rc = clattn__kernel_defs(ctx, "cvmm.cl", &df, gemm_name(pl), gemm)))
      return rc;
    for (int i = 0; !g->dense && small == 0 && i < NROUTE; i++)
      if ((rc = clattn__kernel_defs(ctx, "cvmm.cl", &df, route_names[i],
                                    &route[i])))
        return rc;
    size_t kwg = 0;
    if (pl->variant != 2 || !auto_wg || pass > 0)
      break;
    if ((rc = clattn__kernel_wg(ctx, *gemm, &kwg)))
      return rc;
    if (kwg >= (size_t)pl->wg)
      break;
    pl->wg = clattn__pow2_floor(kwg);
    while (pl->cols > pl->wg)
      pl->cols /= 2;
  }
  if (pl->variant == 2 && pl->wg % pl->cols != 0)
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "cvmm_gemm_local: its work-group (%d, lowered to the "
                        "compiled kernel's limit) is no multiple of keys (%d)",
                        pl->wg, pl->cols);
  if ((pl->variant == 2 || pl->wg || pl->pack) &&
      (rc = clattn__check_wg(ctx, *gemm, (size_t)(pl->wg ? pl->wg : 1),
                             clattn__gg_local_bytes(g, pl), gemm_name(pl))))
    return rc;
  return CLATTN_OK;
}

clattn_status clattn__gg_enqueue(clattn_ctx *ctx, const clattn__gg *g,
                                 clattn__gg_plan *pl, int auto_wg, cl_mem a,
                                 cl_mem sel_x, cl_mem w_sel, cl_mem w,
                                 cl_mem out, const clattn_events *ev) {
  cl_kernel route[NROUTE] = {NULL, NULL, NULL}, gemm = NULL;
  cl_mem sched = NULL;
  clattn_status rc = kernels(ctx, g, pl, auto_wg, route, &gemm);
  if (rc)
    return rc;
  const int T = clattn__gg_tiles(g, pl);
  cl_uint nw = ev ? ev->num_wait : 0;
  const cl_event *wait = ev ? ev->wait : NULL;
  if (pl->scheme == CLATTN__GG_SCHEME_SMALL) {
    /* one launch: without routing, a stands in for the unused sel_x and
     * w_sel */
    const cl_mem sb[5] = {a, g->dense ? a : sel_x, g->dense ? a : w_sel, w,
                          out};
    const cl_int si[6] = {g->rows, g->K, g->N, g->lda, g->ldo, g->sel_inner};
    cl_uint k = 0;
    if ((rc = clattn__args(ctx, gemm, &k, 5, sizeof(cl_mem), sb)) ||
        (rc = clattn__scalars(ctx, gemm, &k, 6, sizeof(cl_int), si)))
      return rc;
    const size_t nb = (size_t)((g->N + pl->cols - 1) / pl->cols);
    const size_t w1 = pl->wg ? (size_t)pl->wg : 1;
    const size_t gws[2] = {(nb + w1 - 1) / w1 * w1, (size_t)g->z};
    const size_t lws[2] = {w1, 1};
    return clattn__launch(ctx, gemm, 2, gws, pl->wg ? lws : NULL, nw, wait,
                          ev ? ev->out : NULL);
  }
  if (!g->dense) {
    /* at most a few GiB: cvmm's check bounds rows * heads * topk */
    const size_t ints = clattn__gg_sched_ints(g, pl);
    if ((rc = clattn__scratch(ctx, SCHED_SLOT, ints * 4, &sched)))
      return rc;
    const cl_int ri[2] = {g->rows, g->sel_inner};
    const cl_mem rb[3] = {sel_x, w_sel, sched};
    cl_uint k = 0;
    if ((rc = clattn__args(ctx, route[ROUTE], &k, 3, sizeof(cl_mem), rb)) ||
        (rc = clattn__scalars(ctx, route[ROUTE], &k, 2, sizeof(cl_int), ri)))
      return rc;
    const cl_int bi[2] = {g->rows, T};
    for (int i = COUNT; i < NROUTE; i++) {
      k = 0;
      if ((rc = clattn__arg(ctx, route[i], k++, sizeof(cl_mem), &sched)) ||
          (rc = clattn__scalars(ctx, route[i], &k, 2, sizeof(cl_int), bi)))
        return rc;
    }
    /* a work-item a group on a CPU, where a group is a core's task; the
     * runtime's groups elsewhere */
    const size_t items = (size_t)((g->rows + pl->rr - 1) / pl->rr);
    const size_t tiles = (size_t)T, one = 1;
    const size_t *l1 = pl->variant == 1 ? &one : NULL;
    if ((rc = clattn__launch(ctx, route[ROUTE], 1, &items, l1, nw, wait,
                             NULL)) ||
        (rc =
             clattn__launch(ctx, route[COUNT], 1, &tiles, l1, 0, NULL, NULL)) ||
        (rc =
             clattn__launch(ctx, route[SCATTER], 1, &tiles, l1, 0, NULL, NULL)))
      return rc;
    nw = 0;
    wait = NULL;
  }
  const cl_int gi[6] = {g->rows, g->K, g->N, g->lda, g->ldo, T};
  const cl_mem gb[4] = {a, w, out, sched};
  cl_uint k = 0;
  if ((rc = clattn__args(ctx, gemm, &k, 4, sizeof(cl_mem), gb)) ||
      (rc = clattn__scalars(ctx, gemm, &k, 6, sizeof(cl_int), gi)))
    return rc;
  const size_t nb = (size_t)((g->N + pl->cols - 1) / pl->cols);
  size_t gws[3], lws[3] = {1, 1, 1};
  if (pl->variant == 1) {
    /* a packed panel is a group's local memory: one work-item a group */
    const size_t w1 = pl->wg ? (size_t)pl->wg : 1;
    gws[0] = (nb + w1 - 1) / w1 * w1;
    lws[0] = w1;
  } else {
    gws[0] = nb * (size_t)pl->wg;
    lws[0] = (size_t)pl->wg;
  }
  gws[1] = (size_t)T;
  gws[2] = (size_t)g->z;
  return clattn__launch(ctx, gemm, 3, gws,
                        pl->variant == 2 || pl->wg || pl->pack ? lws : NULL, nw,
                        wait, ev ? ev->out : NULL);
}
