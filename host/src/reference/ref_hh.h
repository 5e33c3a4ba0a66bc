/* ref_hh.h - independent plain-C reference of Hosseini & Hosseini's
 * Optimised, Efficient and Super attention (spec 7, Decision 7):
 * straightforward loops, double accumulation, no OpenCL, no library code. */
#ifndef CLATTN_REF_HH_H
#define CLATTN_REF_HH_H

#include "reference/ref.h"

/* Super's values for rows t = pos0 .. pos0+n-1 of every sequence:
 *   v[b, t, c] = sum_s w_a[t, s] x[b, s, c]
 * s over 0 .. t when causal (w_a's upper triangle never read), else over
 * 0 .. pos0+n-1.  x and v hold `cap` rows per sequence of heads x dim
 * channels (layouts 0 = BSHD, 1 = BHSD); w_a is [max_len, max_len]
 * row-major; rows of v outside pos0 .. pos0+n-1 are left as they are. */
void ref_super_values(int b, int n, int pos0, int cap, int heads, int dim,
                      int max_len, int causal, int x_layout, int v_layout,
                      const float *w_a, const float *x, float *v);

/* Whole layer over all n positions of x [b, n, D], row-major; variant 1
 * Optimised, 2 Efficient, 3 Super (clattn_hh_variant).  Head i reads
 * channel slice i (width D/h) of x: Q = x w_q (w_q [D, D], head i its
 * columns of slice i); K_i = (x w_k)_i for Optimised, else x's slice i;
 * V_i = x's slice i, for Super mixed over positions by w_a (max_len x
 * max_len, max_len >= n; its leading n x n block, lower triangle only
 * when causal).  H_i = softmax(scale Q_i K_i^T + mask) V_i, a key s
 * visible to query t iff s <= t when causal; y = [H_1 .. H_h] w_o
 * (w_o [D, D]).  w_k is read by variant 1 only, w_a by 3 only; scale 0
 * means 1/sqrt(D/h). */
void ref_hh_layer(int variant, int b, int n, int D, int h, int max_len,
                  double scale, int causal, const float *x, const float *w_q,
                  const float *w_k, const float *w_a, const float *w_o,
                  float *y);
/* The same with the attention options o (NULL: none) on each head's
 * softmax, position t at p = t; Super's w_a mix is unchanged by them. */
void ref_hh_layer_opts(int variant, int b, int n, int D, int h, int max_len,
                       double scale, int causal, const ref_opts *o,
                       const float *x, const float *w_q, const float *w_k,
                       const float *w_a, const float *w_o, float *y);

#endif
