/* cvmm_impl.h - internal to the cvmm and gemm families' room: the grouped
 * GEMM as cl/cvmm.cl sees it, its plan (cvmm_plan.c), its costs
 * (cvmm_cost.c) and its launches (cvmm_launch.c), shared by cvmm.c and
 * gemm.c.
 *
 * Tunables (clattn__gg_tunables; the cvmm and projection families' tables
 * say the same) of the own kernel:
 *   variant 1 (register-blocked, CPU-shaped): rows = R rows a register
 *     block, keys = C columns a work-item (a multiple of the vector
 *     width), splits = TILE rows a work-item owns, wg = work-items a group
 *     (0: the runtime's);
 *   variant 2 (local-memory tiles, GPU-shaped): rows = TM rows a
 *     work-item, keys = CT columns a work-group, splits = TILE rows a
 *     work-group owns, wg = work-items a group;
 *   scheme: gemm: 1 this kernel, 2 CLBlast (variant and the sizes 0), 0
 *   CLBlast; cvmm: 1 bucketed (routing, bucketing, then the GEMM), 2 fused
 *   small rows (cvmm_small: one launch for at most CLATTN__GG_SMALL_ROWS
 *   rows, variant 1's rows, keys and wg, no splits), 0 fused for that many
 *   rows or fewer (unless variant 2 or splits are given), else bucketed. */
#ifndef CLATTN_FAMILY_CVMM_IMPL_H
#define CLATTN_FAMILY_CVMM_IMPL_H

#include "family/cvmm.h"
#include "family/family.h"

/* The grouped GEMM a call runs. */
typedef struct clattn__gg {
  int rows;  /* output rows */
  int K, N;  /* one (head, expert) GEMM: a-rows of K, N columns */
  int lda;   /* a's row stride */
  int ldo;   /* out's row stride */
  int z;     /* the launch's third dimension: heads (SPLIT) or 1 */
  int dense; /* no routing: rows in order, gate 1 */
  int mode;  /* routed: CLATTN__CVMM_SPLIT or CLATTN__CVMM_SUM */
  int heads, experts, topk, sel_inner; /* routed */
} clattn__gg;

/* The cvmm and projection families' tunables, in the order of their
 * tables (cvmm.c, projection.c). */
typedef struct clattn__gg_tunables {
  int variant, rows, keys, wg, splits, scheme;
} clattn__gg_tunables;

/* SMALL is the plan's own value (cvmm's params call it scheme 2). */
enum {
  CLATTN__GG_SCHEME_OWN = 1,
  CLATTN__GG_SCHEME_CLBLAST = 2,
  CLATTN__GG_SCHEME_SMALL = 3
};

/* The most rows the fused small-rows path takes: a decode step's batch,
 * where the bucketed path's four launches cost more than its GEMM; 11, so
 * that it takes every call of the shape classes r1 .. r8 (rows rounded to
 * the nearest power of two) whose tuned params may name it. */
enum { CLATTN__GG_SMALL_ROWS = 11 };

typedef struct clattn__gg_plan {
  int scheme;  /* CLATTN__GG_SCHEME_* */
  int variant; /* own kernel: 1 cvmm_gemm_reg, 2 cvmm_gemm_local */
  int rows;    /* 1: R; 2: TM */
  int cols;    /* 1: C = cv * vw; 2: CT */
  int tile;    /* rows a work-item (1) or work-group (2) owns */
  int wg;      /* work-items a group (1: 0 is the runtime's) */
  int vw, cv;  /* variant 1: vector width and vectors a work-item */
  int pack;    /* variant 1: W's panel copied into local memory */
  int kt;      /* variant 2: k-tile */
  /* routing (routed calls): cvmm_route's rows a work-item, its vector
   * width and vectors */
  int rr, rvw, rnv;
  int own_only; /* the cvmm family: no CLBlast, no scheme in its params */
} clattn__gg_plan;

/* The routed call's shape from a cvmm description, or the dense one from
 * a gemm description. */
clattn__gg clattn__gg_of_cvmm(const clattn__cvmm_desc *d);
clattn__gg clattn__gg_of_gemm(const clattn__gemm_desc *d);

/* Plan values p (NULL: automatic) for g on t; own: 1 for the cvmm family
 * (no CLBlast), 0 for gemm (scheme 0 is CLBlast). */
clattn_status clattn__gg_make_plan(const clattn__target *t, const clattn__gg *g,
                                   const clattn__params *p, int own,
                                   clattn__gg_plan *pl, char *why, size_t cap);
/* Local memory of the GEMM kernel (variant 2). */
size_t clattn__gg_local_bytes(const clattn__gg *g, const clattn__gg_plan *pl);
int clattn__gg_fits(const clattn__target *t, const clattn__gg *g,
                    const clattn__gg_plan *pl, char *why, size_t cap);
clattn__params clattn__gg_resolved(const clattn__gg_plan *pl);
/* Every valid candidate of family F for desc (whose shape is g), the
 * default first; clblast: add the CLBlast candidate (the projection family). */
clattn_status clattn__gg_space(const clattn__family *F, const clattn__target *t,
                               const void *desc, const clattn__gg *g,
                               int clblast, clattn__space *s);

/* Row tiles of the GEMM and the routing scratch (int32 elements: sel,
 * list, off, cnt). */
int clattn__gg_tiles(const clattn__gg *g, const clattn__gg_plan *pl);
size_t clattn__gg_sched_ints(const clattn__gg *g, const clattn__gg_plan *pl);

/* The model's kernels of the own kernel's plan: cvmm_route, cvmm_count
 * and cvmm_scatter (routed calls), then the GEMM. */
clattn_status clattn__gg_cost(const clattn__gg *g, const clattn__gg_plan *pl,
                              const clattn_profile *prof,
                              clattn_prediction *out, double *dram_reads);

/* Enqueue the own kernel's launches: the routing (routed: sel_x and
 * w_sel) and the GEMM; ev's waits go to the first launch, its out event
 * to the last. */
clattn_status clattn__gg_enqueue(clattn_ctx *ctx, const clattn__gg *g,
                                 clattn__gg_plan *pl, int auto_wg, cl_mem a,
                                 cl_mem sel_x, cl_mem w_sel, cl_mem w,
                                 cl_mem out, const clattn_events *ev);

#endif /* CLATTN_FAMILY_CVMM_IMPL_H */
