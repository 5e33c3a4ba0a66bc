/* ref_sh.h - independent plain-C reference of the SwitchHead layer (spec
 * 6, Decision 6): straightforward loops, double accumulation, its own
 * routing, no OpenCL, no library code. */
#ifndef CLATTN_REF_SH_H
#define CLATTN_REF_SH_H

#include "reference/ref.h"

/* The most experts the reference routes (CLATTN_SH_MAX_EXPERTS). */
enum { REF_SH_MAX_EXPERTS = 64 };

/* One call: x holds `len` positions a sequence; the queries are positions
 * first .. len-1 (first = P: a call after P cached positions, whose K and
 * mixed V come from x's earlier rows; 0 without a cache). */
typedef struct ref_sh {
  int b, len, first;
  int d_model, heads, head_dim, experts, topk;
  double scale; /* 0: 1/sqrt(head_dim) */
  int causal;   /* query i sees key t iff t <= i; else every t < len */
} ref_sh;

/* The top-k of v[0 .. e-1]: the k largest, a tie to the lower index,
 * written to idx[0 .. k-1] largest first. */
void ref_sh_topk(int e, int k, const double *v, int *idx);

/* y [b, len - first, d_model] for x [b, len, d_model], row-major:
 *   Q, K = x w_q, x w_k                  (w_q, w_k [D, H d_h])
 *   s_v = sigmoid(x w_s), s_o = sigmoid(x w_d)   (w_s, w_d [D, H E],
 *                                         column h E + e)
 *   V_h[t] = sum over e in top_k(s_v[t, h]) of s_v[t, h, e] x[t] W_v[h, e]
 *   O_h[i] = softmax_t(scale Q_h[i] . K_h[t] + mask) V_h[t]
 *   y[i]   = sum over h, e in top_k(s_o[i, h]) of s_o[i, h, e] O_h[i]
 *            W_o[h, e]
 * w_v [H, E, D, d_h], w_o [H, E, d_h, D].  With one expert V_h is
 * x W_v[h] ungated (w_s is not read; may be NULL) and y's gate is
 * sigmoid(x w_d)_h.  Aborts on more than REF_SH_MAX_EXPERTS experts. */
void ref_sh_layer(const ref_sh *s, const float *x, const float *w_q,
                  const float *w_k, const float *w_v, const float *w_o,
                  const float *w_s, const float *w_d, float *y);
/* The same with the attention options o (NULL: none) on each head's
 * softmax, query i at position first + i. */
void ref_sh_layer_opts(const ref_sh *s, const ref_opts *o, const float *x,
                       const float *w_q, const float *w_k, const float *w_v,
                       const float *w_o, const float *w_s, const float *w_d,
                       float *y);

#endif
