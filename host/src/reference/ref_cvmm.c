/* ref_cvmm.c - plain-C expert-routed GEMM and GEMM (ref_cvmm.h).
 * Deliberately naive: the routing of each row, then each output element
 * summed over its experts (and heads) in double. */
#include "reference/ref_cvmm.h"
#include "reference/ref.h"

#include <math.h>
#include <stdlib.h>

/* torch.topk's order: NaN above every number (ties keep the lower
 * expert first). */
static int ranks_above(double a, double b) {
  return isnan(a) ? !isnan(b) : a > b;
}

void ref_cvmm_route(int rows, int heads, int experts, int topk, int sel_inner,
                    const float *sel_x, const float *w_sel, int *expert,
                    double *gate) {
  const int he = heads * experts;
  double *l = ref_alloc(sizeof(double) * (size_t)experts);
  int *taken = ref_alloc(sizeof(int) * (size_t)experts);
  if (!l || !taken) {
    free(l);
    free(taken);
    return;
  }
  for (int r = 0; r < rows; r++)
    for (int h = 0; h < heads; h++) {
      for (int e = 0; e < experts; e++) {
        double acc = 0.0;
        for (int i = 0; i < sel_inner; i++)
          acc += (double)sel_x[(size_t)r * sel_inner + i] *
                 (double)w_sel[(size_t)i * he + h * experts + e];
        l[e] = acc;
        taken[e] = 0;
      }
      for (int s = 0; s < topk; s++) {
        int best = -1;
        for (int e = 0; e < experts; e++)
          if (!taken[e] && (best < 0 || ranks_above(l[e], l[best])))
            best = e;
        taken[best] = 1;
        const size_t o = ((size_t)r * heads + h) * topk + s;
        expert[o] = best;
        gate[o] = 1.0 / (1.0 + exp(-l[best]));
      }
    }
  free(l);
  free(taken);
}

void ref_cvmm(int rows, int K, int N, int heads, int experts, int topk,
              int sel_inner, int mode, int gate, const float *a,
              const float *sel_x, const float *w_sel, const float *w,
              float *out) {
  const size_t slots = (size_t)rows * heads * topk;
  int *ex = ref_alloc(sizeof(int) * slots);
  double *g = ref_alloc(sizeof(double) * slots);
  if (!ex || !g) {
    free(ex);
    free(g);
    return;
  }
  if (gate == 0) {
    ref_cvmm_route(rows, heads, experts, topk, sel_inner, sel_x, w_sel, ex, g);
  } else {
    for (size_t i = 0; i < slots; i++) {
      ex[i] = 0;
      g[i] = 1.0;
    }
  }
  const int split = mode == 1;
  const size_t lda = split ? (size_t)K : (size_t)heads * K;
  for (int r = 0; r < rows; r++)
    for (int ho = 0; ho < (split ? heads : 1); ho++)
      for (int c = 0; c < N; c++) {
        double acc = 0.0;
        for (int h = split ? ho : 0; h < (split ? ho + 1 : heads); h++)
          for (int s = 0; s < topk; s++) {
            const size_t o = ((size_t)r * heads + h) * topk + s;
            const float *wm = w + ((size_t)h * experts + (size_t)ex[o]) * K * N;
            const float *ar = a + (size_t)r * lda + (split ? 0 : (size_t)h * K);
            double dot = 0.0;
            for (int k = 0; k < K; k++)
              dot += (double)ar[k] * (double)wm[(size_t)k * N + c];
            acc += g[o] * dot;
          }
        out[(size_t)r * (split ? (size_t)heads * N : (size_t)N) +
            (size_t)ho * N + c] = (float)acc;
      }
  free(ex);
  free(g);
}

void ref_gemm(int m, int n, int k, const float *a, const float *w, float *out) {
  for (int r = 0; r < m; r++)
    for (int c = 0; c < n; c++) {
      double acc = 0.0;
      for (int i = 0; i < k; i++)
        acc += (double)a[(size_t)r * k + i] * (double)w[(size_t)i * n + c];
      out[(size_t)r * n + c] = (float)acc;
    }
}
