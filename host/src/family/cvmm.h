/* cvmm.h - internal: the expert-grouped GEMM family "cvmm" (SwitchHead's
 * conditional vector-matrix multiply, spec 6) and its dense case, the
 * family "projection" that the layers' projections call.
 *
 * cvmm, with H heads of E experts, top-k routing and W [H, E, K, N]:
 *   route:  s[r, h, :] = sigmoid(sel_x[r, :] W_sel[:, h*E .. h*E+E-1]),
 *           the top-k experts of each (r, h) with their raw sigmoid values
 *           as gates (not renormalised; a tie goes to the lower index).
 *   SPLIT:  out[r, h*N + c] = sum_{e in top_k(r, h)} s[r, h, e]
 *                               (a[r, :] W[h, e])[c]          a [rows, K]
 *   SUM:    out[r, c] = sum_h sum_{e in top_k(r, h)} s[r, h, e]
 *                          (a[r, h*K .. h*K+K-1] W[h, e])[c]  a [rows, H*K]
 * The rows are bucketed by (head, expert) on the device (histogram, prefix
 * sum, stable scatter), then a tiled GEMM runs over each bucket; the sum
 * over experts (SPLIT) or over heads and experts (SUM) happens inside the
 * GEMM kernel, so no per-expert partials reach global memory.
 * gate NONE: no routing (E == 1, k == 1, gate 1; sel_x and w_sel unused,
 * may be NULL): SPLIT is a per-head dense GEMM, SUM a dense one.
 *
 * projection: out[m, n] = a[m, k] W[k, n], row-major, packed; the same kernel
 * with one expert and the identity gather, or CLBlast's Xgemm (GEMV rows
 * for short inputs), whichever the tuner measured faster for the shape
 * class (CLBlast without tuning rows). */
#ifndef CLATTN_FAMILY_CVMM_H
#define CLATTN_FAMILY_CVMM_H

#include "clattn_tools.h"

typedef enum clattn__cvmm_mode {
  CLATTN__CVMM_SPLIT = 1, /* one output slice per head (SwitchHead's V) */
  CLATTN__CVMM_SUM = 2    /* heads summed into one output (its O) */
} clattn__cvmm_mode;

typedef enum clattn__cvmm_gate {
  CLATTN__CVMM_TOPK = 0, /* sigmoid top-k routing from sel_x W_sel */
  CLATTN__CVMM_NONE = 1  /* one expert, gate 1 */
} clattn__cvmm_gate;

/* Buffers, in order: a (IN), sel_x (IN, optional), w_sel (IN, optional),
 * w (IN), out (OUT). */
typedef struct clattn__cvmm_desc {
  int rows;      /* positions (batch * n) */
  int inner;     /* K: the contraction of one (head, expert) GEMM */
  int cols;      /* N: its output columns */
  int heads;     /* H */
  int experts;   /* E, 1 .. CLATTN_SH_MAX_EXPERTS */
  int topk;      /* k, 1 .. E */
  int sel_inner; /* width of sel_x's rows (d_model) */
  clattn__cvmm_mode mode;
  clattn__cvmm_gate gate;
} clattn__cvmm_desc;

/* Buffers, in order: a (IN), w (IN), out (OUT). */
typedef struct clattn__gemm_desc {
  int m, n, k;
} clattn__gemm_desc;

#endif /* CLATTN_FAMILY_CVMM_H */
