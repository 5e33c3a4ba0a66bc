/* ref_hh.c - plain-C Hosseini & Hosseini layers (ref_hh.h).  Deliberately
 * naive: the projections, the per-head values, each head's softmax and
 * the output projection one after another, every sum in double. */
#include "reference/ref_hh.h"
#include "reference/ref.h"

#include <math.h>
#include <stdlib.h>

void ref_super_values(int b, int n, int pos0, int cap, int heads, int dim,
                      int max_len, int causal, int x_layout, int v_layout,
                      const float *w_a, const float *x, float *v) {
  const int last = pos0 + n; /* one past the last row written */
  for (int bi = 0; bi < b; bi++)
    for (int t = pos0; t < last; t++) {
      const int limit = causal ? t + 1 : last;
      for (int hi = 0; hi < heads; hi++)
        for (int d = 0; d < dim; d++) {
          double acc = 0.0;
          for (int s = 0; s < limit; s++)
            acc +=
                (double)w_a[(size_t)t * max_len + s] *
                (double)x[ref_index(x_layout, cap, heads, dim, bi, s, hi, d)];
          v[ref_index(v_layout, cap, heads, dim, bi, t, hi, d)] = (float)acc;
        }
    }
}

/* c [rows, cols] = a [rows, inner] w [inner, cols], row-major, in double. */
static void matmul(size_t rows, size_t inner, size_t cols, const float *a,
                   const float *w, float *c) {
  for (size_t r = 0; r < rows; r++)
    for (size_t j = 0; j < cols; j++) {
      double acc = 0.0;
      for (size_t k = 0; k < inner; k++)
        acc += (double)a[r * inner + k] * (double)w[k * cols + j];
      c[r * cols + j] = (float)acc;
    }
}

void ref_hh_layer(int variant, int b, int n, int D, int h, int max_len,
                  double scale, int causal, const float *x, const float *w_q,
                  const float *w_k, const float *w_a, const float *w_o,
                  float *y) {
  ref_hh_layer_opts(variant, b, n, D, h, max_len, scale, causal, NULL, x, w_q,
                    w_k, w_a, w_o, y);
}

void ref_hh_layer_opts(int variant, int b, int n, int D, int h, int max_len,
                       double scale, int causal, const ref_opts *o,
                       const float *x, const float *w_q, const float *w_k,
                       const float *w_a, const float *w_o, float *y) {
  const int dh = D / h;
  const size_t rows = (size_t)b * n, width = (size_t)D;
  if (scale == 0.0)
    scale = 1.0 / sqrt((double)dh);
  float *Q = ref_alloc_or_abort(sizeof(float) * rows * width);
  float *K = ref_alloc_or_abort(sizeof(float) * rows * width);
  float *V = ref_alloc_or_abort(sizeof(float) * rows * width);
  float *H = ref_alloc_or_abort(sizeof(float) * rows * width);
  matmul(rows, width, width, x, w_q, Q);
  if (variant == 1)
    matmul(rows, width, width, x, w_k, K);
  else
    for (size_t i = 0; i < rows * width; i++)
      K[i] = x[i];
  if (variant == 3)
    /* x and V as [b, n, 1 head, D channels]: a channel's slice is the
     * head's, so mixing every channel is mixing every head's slice (the
     * attention options leave this mix alone) */
    ref_super_values(b, n, 0, n, 1, D, max_len, causal, 0, 0, w_a, x, V);
  else
    for (size_t i = 0; i < rows * width; i++)
      V[i] = x[i];
  /* Q, K, V and H as [b, n, h, D/h] (BSHD): head i is channel slice i;
   * position t sees key s <= t when causal, with o's options */
  ref_attn a = {.b = b,
                .n = n,
                .m = n,
                .hq = h,
                .hkv = h,
                .dk = dh,
                .dv = dh,
                .scale = scale,
                .causal = causal};
  if (o != NULL)
    a.opts = *o;
  ref_attention(&a, Q, K, V, H);
  matmul(rows, width, width, H, w_o, y);
  free(Q);
  free(K);
  free(V);
  free(H);
}
