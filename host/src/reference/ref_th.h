/* ref_th.h - independent plain-C reference of talking-heads attention
 * (spec section 5): straightforward loops, double accumulation, no OpenCL,
 * no library code. */
#ifndef CLATTN_REF_TH_H
#define CLATTN_REF_TH_H

/* Shape of one call; layouts: 0 = BSHD, 1 = BHSD. */
typedef struct ref_th {
  int b, n, m;        /* batch, queries and keys per sequence */
  int hk, h, hv;      /* key heads, logit heads, value heads */
  int dk, dv;         /* head dims */
  int q_layout;       /* of q [b, n, hk, dk] and o [b, n, hv, dv] */
  int kv_layout;      /* of k [b, m, hk, dk] and v [b, m, hv, dv] */
  double scale;       /* logit scale (resolved, never 0), before P_l */
  int causal;         /* query i sees key t iff t <= L - n + i */
  const int *kv_lens; /* [b] valid keys (clamped to [0, m]); NULL = m */
  int window;         /* W >= 1: query i, at position p = L - n + i, sees
                         key t only if p - W < t; 0: none */
} ref_th;

/* o = sum_c P_w[c, u] softmax_t(mask(sum_a P_l[a, c] scale q_a.k_a)) v_u;
 * p_l [hk, h], p_w [h, hv] row-major; a query that sees no key gives
 * zeros. */
void ref_talking_heads(const ref_th *a, const float *q, const float *k,
                       const float *v, const float *p_l, const float *p_w,
                       float *o);

/* Decode: q [b, hk, dk] against caches of `cap` rows (layout as above, the
 * seq axis being the cache row), lens [b] valid rows; o [b, hv, dv]. */
void ref_th_decode(int b, int cap, int hk, int h, int hv, int dk, int dv,
                   int layout, double scale, const int *lens, const float *q,
                   const float *kc, const float *vc, const float *p_l,
                   const float *p_w, float *o);
/* The same with a window W (0: none): the query, at position lens[bi] - 1,
 * sees the W most recent rows. */
void ref_th_decode_window(int b, int cap, int hk, int h, int hv, int dk, int dv,
                          int layout, double scale, int window, const int *lens,
                          const float *q, const float *kc, const float *vc,
                          const float *p_l, const float *p_w, float *o);

/* The KV append of a talking-heads cache is ref_kv_append's (ref.h). */

/* Whole layer, row-major: x [b, n, D]; wq, wk [D, hk*dk]; wv [D, hv*dv];
 * wo [hv*dv, D]; p_l [hk, h]; p_w [h, hv]; y [b, n, D].  Self-attention
 * over the n positions of x, causal or not. */
void ref_th_layer(int b, int n, int D, int hk, int h, int hv, int dk, int dv,
                  double scale, int causal, const float *x, const float *wq,
                  const float *wk, const float *wv, const float *wo,
                  const float *p_l, const float *p_w, float *y);
/* The same with a window W (0: none): position i sees keys t > i - W. */
void ref_th_layer_window(int b, int n, int D, int hk, int h, int hv, int dk,
                         int dv, double scale, int causal, int window,
                         const float *x, const float *wq, const float *wk,
                         const float *wv, const float *wo, const float *p_l,
                         const float *p_w, float *y);

#endif
