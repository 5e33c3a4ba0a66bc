/* ref_th.c - plain-C talking-heads attention (ref_th.h).  Deliberately
 * naive: one (sequence, query) at a time, every logit of every head in
 * double, the spec's einsums in order: J, L = J P_l, mask, W = softmax(L),
 * U = W P_w, O = U V.  A row's visible keys are [lo, hi): the causal limit
 * and the window's start. */
#include "reference/ref_th.h"
#include "reference/ref.h"

#include <math.h>
#include <stdlib.h>

static int clampi(int x, int lo, int hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

void ref_talking_heads(const ref_th *a, const float *q, const float *k,
                       const float *v, const float *p_l, const float *p_w,
                       float *o) {
  const int m = a->m;
  double *J = ref_alloc(sizeof(double) * (size_t)m * a->hk);
  double *W = ref_alloc(sizeof(double) * (size_t)m * a->h);
  double *U = ref_alloc(sizeof(double) * (size_t)m * a->hv);
  if (!J || !W || !U) {
    free(J);
    free(W);
    free(U);
    return;
  }
  for (int bi = 0; bi < a->b; bi++) {
    const int L = clampi(a->kv_lens ? a->kv_lens[bi] : m, 0, m);
    for (int i = 0; i < a->n; i++) {
      const int pos = L - a->n + i;
      const int hi = a->causal ? clampi(pos + 1, 0, L) : L;
      const int lo = a->window > 0 ? clampi(pos - a->window + 1, 0, hi) : 0;
      const int nvis = hi - lo;
      /* J[t, x] = scale q_x . k_x over the visible keys lo + t */
      for (int t = 0; t < nvis; t++)
        for (int x = 0; x < a->hk; x++) {
          double s = 0.0;
          for (int d = 0; d < a->dk; d++)
            s +=
                (double)
                    q[ref_index(a->q_layout, a->n, a->hk, a->dk, bi, i, x, d)] *
                (double)k[ref_index(a->kv_layout, m, a->hk, a->dk, bi, lo + t,
                                    x, d)];
          J[(size_t)t * a->hk + x] = ref_logit(s * a->scale);
        }
      /* W[t, c] = softmax over the visible t of L[t, c] = J[t, :] P_l[:, c] */
      for (int c = 0; c < a->h; c++) {
        double mx = -INFINITY, sum = 0.0;
        for (int t = 0; t < nvis; t++) {
          double l = 0.0;
          for (int x = 0; x < a->hk; x++)
            l += J[(size_t)t * a->hk + x] * (double)p_l[(size_t)x * a->h + c];
          l = ref_logit(l);
          W[(size_t)t * a->h + c] = l;
          mx = l > mx ? l : mx;
        }
        /* a NaN head: P_w then carries it to every value head it mixes */
        if (ref_softmax_nan(W + c, (size_t)a->h, nvis)) {
          for (int t = 0; t < nvis; t++)
            W[(size_t)t * a->h + c] = NAN;
          continue;
        }
        for (int t = 0; t < nvis; t++) {
          const double e = exp(W[(size_t)t * a->h + c] - mx);
          W[(size_t)t * a->h + c] = e;
          sum += e;
        }
        for (int t = 0; t < nvis; t++)
          W[(size_t)t * a->h + c] /= sum;
      }
      /* U[t, u] = W[t, :] P_w[:, u]; o[u] = sum_t U[t, u] v[t, u] */
      for (int t = 0; t < nvis; t++)
        for (int u = 0; u < a->hv; u++) {
          double s = 0.0;
          for (int c = 0; c < a->h; c++)
            s += W[(size_t)t * a->h + c] * (double)p_w[(size_t)c * a->hv + u];
          U[(size_t)t * a->hv + u] = s;
        }
      for (int u = 0; u < a->hv; u++)
        for (int d = 0; d < a->dv; d++) {
          double s = 0.0;
          for (int t = 0; t < nvis; t++)
            s += U[(size_t)t * a->hv + u] *
                 (double)v[ref_index(a->kv_layout, m, a->hv, a->dv, bi, lo + t,
                                     u, d)];
          o[ref_index(a->q_layout, a->n, a->hv, a->dv, bi, i, u, d)] = (float)s;
        }
    }
  }
  free(J);
  free(W);
  free(U);
}

void ref_th_decode(int b, int cap, int hk, int h, int hv, int dk, int dv,
                   int layout, double scale, const int *lens, const float *q,
                   const float *kc, const float *vc, const float *p_l,
                   const float *p_w, float *o) {
  ref_th_decode_window(b, cap, hk, h, hv, dk, dv, layout, scale, 0, lens, q, kc,
                       vc, p_l, p_w, o);
}

void ref_th_decode_window(int b, int cap, int hk, int h, int hv, int dk, int dv,
                          int layout, double scale, int window, const int *lens,
                          const float *q, const float *kc, const float *vc,
                          const float *p_l, const float *p_w, float *o) {
  /* one query a sequence: q [b, 1, hk, dk] is q [b, hk, dk], at position
   * L - 1 */
  const ref_th a = {b,  1, cap,    hk,    h, hv,   dk,
                    dv, 0, layout, scale, 0, lens, window};
  ref_talking_heads(&a, q, kc, vc, p_l, p_w, o);
}

/* c[rows, cols] = a[rows, inner] w[inner, cols], in double. */
static void matmul(size_t rows, size_t inner, size_t cols, const float *a,
                   const float *w, float *c) {
  for (size_t r = 0; r < rows; r++)
    for (size_t j = 0; j < cols; j++) {
      double s = 0.0;
      for (size_t x = 0; x < inner; x++)
        s += (double)a[r * inner + x] * (double)w[x * cols + j];
      c[r * cols + j] = (float)s;
    }
}

void ref_th_layer(int b, int n, int D, int hk, int h, int hv, int dk, int dv,
                  double scale, int causal, const float *x, const float *wq,
                  const float *wk, const float *wv, const float *wo,
                  const float *p_l, const float *p_w, float *y) {
  ref_th_layer_window(b, n, D, hk, h, hv, dk, dv, scale, causal, 0, x, wq, wk,
                      wv, wo, p_l, p_w, y);
}

void ref_th_layer_window(int b, int n, int D, int hk, int h, int hv, int dk,
                         int dv, double scale, int causal, int window,
                         const float *x, const float *wq, const float *wk,
                         const float *wv, const float *wo, const float *p_l,
                         const float *p_w, float *y) {
  const size_t rows = (size_t)b * n;
  float *Q = ref_alloc_or_abort(sizeof(float) * rows * hk * dk);
  float *K = ref_alloc_or_abort(sizeof(float) * rows * hk * dk);
  float *V = ref_alloc_or_abort(sizeof(float) * rows * hv * dv);
  float *O = ref_alloc_or_abort(sizeof(float) * rows * hv * dv);
  matmul(rows, (size_t)D, (size_t)hk * dk, x, wq, Q);
  matmul(rows, (size_t)D, (size_t)hk * dk, x, wk, K);
  matmul(rows, (size_t)D, (size_t)hv * dv, x, wv, V);
  const ref_th a = {b,  n, n, hk,    h,      hv,   dk,
                    dv, 0, 0, scale, causal, NULL, window};
  ref_talking_heads(&a, Q, K, V, p_l, p_w, O);
  matmul(rows, (size_t)hv * dv, (size_t)D, O, wo, y);
  free(Q);
  free(K);
  free(V);
  free(O);
}
