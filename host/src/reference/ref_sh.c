/* ref_sh.c - plain-C SwitchHead layer (ref_sh.h).  Deliberately naive:
 * each position's routing, projections and expert sums, then each head's
 * softmax and the output mix, every sum in double. */
#include "reference/ref_sh.h"
#include "reference/ref.h"

#include <math.h>
#include <stdlib.h>

void ref_sh_topk(int e, int k, const double *v, int *idx) {
  for (int j = 0; j < k; j++) {
    int best = -1;
    for (int i = 0; i < e; i++) {
      int taken = 0;
      for (int p = 0; p < j; p++)
        taken |= idx[p] == i;
      /* strictly greater: on a tie the lower index stays */
      if (!taken && (best < 0 || v[i] > v[best]))
        best = i;
    }
    idx[j] = best;
  }
}

static double sigmoid(double z) { return 1.0 / (1.0 + exp(-z)); }

/* out[c] = sum_r a[r] w[r * ld + off + c], c < cols, r < inner. */
static void row_times(const float *a, int inner, const float *w, size_t ld,
                      size_t off, int cols, double *out) {
  for (int c = 0; c < cols; c++) {
    double acc = 0.0;
    for (int r = 0; r < inner; r++)
      acc += (double)a[r] * (double)w[(size_t)r * ld + off + (size_t)c];
    out[c] = acc;
  }
}

/* Head h's gates of one position: the top-k of sigmoid(x w_sel) over the
 * head's experts, written as dense gate[e] (0 for the unselected). */
static void route(const ref_sh *s, const float *xr, const float *w_sel, int h,
                  double *gate) {
  const int E = s->experts;
  double logit[REF_SH_MAX_EXPERTS], sig[REF_SH_MAX_EXPERTS];
  int idx[REF_SH_MAX_EXPERTS];
  row_times(xr, s->d_model, w_sel, (size_t)s->heads * E, (size_t)h * E, E,
            logit);
  for (int e = 0; e < E; e++) {
    sig[e] = sigmoid(logit[e]);
    gate[e] = 0.0;
  }
  ref_sh_topk(E, s->topk, sig, idx);
  for (int j = 0; j < s->topk; j++)
    gate[idx[j]] = sig[idx[j]];
}

void ref_sh_layer(const ref_sh *s, const float *x, const float *w_q,
                  const float *w_k, const float *w_v, const float *w_o,
                  const float *w_s, const float *w_d, float *y) {
  ref_sh_layer_opts(s, NULL, x, w_q, w_k, w_v, w_o, w_s, w_d, y);
}

void ref_sh_layer_opts(const ref_sh *s, const ref_opts *opts, const float *x,
                       const float *w_q, const float *w_k, const float *w_v,
                       const float *w_o, const float *w_s, const float *w_d,
                       float *y) {
  const int D = s->d_model, H = s->heads, dh = s->head_dim, E = s->experts;
  const int L = s->len, nq = s->len - s->first;
  if (E < 1 || E > REF_SH_MAX_EXPERTS || s->topk < 1 || s->topk > E)
    abort();
  const size_t hd = (size_t)H * dh;
  const double scale = s->scale != 0.0 ? s->scale : 1.0 / sqrt((double)dh);
  /* one sequence's K, mixed V (every position), Q and O (its queries), as
   * [positions, H, d_h] for ref_attention */
  float *K = ref_alloc_or_abort(sizeof(float) * (size_t)L * hd);
  float *V = ref_alloc_or_abort(sizeof(float) * (size_t)L * hd);
  float *Q = ref_alloc_or_abort(sizeof(float) * (size_t)(nq > 0 ? nq : 1) * hd);
  float *O = ref_alloc_or_abort(sizeof(float) * (size_t)(nq > 0 ? nq : 1) * hd);
  double *row = ref_alloc_or_abort(sizeof(double) * hd);
  double *v = ref_alloc_or_abort(sizeof(double) * (size_t)dh);
  double *part = ref_alloc_or_abort(sizeof(double) * (size_t)(D > dh ? D : dh));
  double *yr = ref_alloc_or_abort(sizeof(double) * (size_t)D);
  double gate[REF_SH_MAX_EXPERTS];
  /* query i (position first + i) sees key t <= first + i when causal, with
   * the options */
  ref_attn a = {.b = 1,
                .n = nq,
                .m = L,
                .hq = H,
                .hkv = H,
                .dk = dh,
                .dv = dh,
                .scale = scale,
                .causal = s->causal};
  if (opts != NULL)
    a.opts = *opts;

  for (int bi = 0; bi < s->b; bi++) {
    const float *xb = x + (size_t)bi * L * D;
    /* every position's K and mixed V */
    for (int t = 0; t < L; t++) {
      const float *xr = xb + (size_t)t * D;
      row_times(xr, D, w_k, hd, 0, (int)hd, row);
      for (size_t c = 0; c < hd; c++)
        K[(size_t)t * hd + c] = (float)row[c];
      for (int h = 0; h < H; h++) {
        if (E == 1)
          gate[0] = 1.0;
        else
          route(s, xr, w_s, h, gate);
        for (int c = 0; c < dh; c++)
          v[c] = 0.0;
        for (int e = 0; e < E; e++) {
          if (gate[e] == 0.0)
            continue;
          const float *w = w_v + ((size_t)h * E + e) * D * dh;
          row_times(xr, D, w, (size_t)dh, 0, dh, part);
          for (int c = 0; c < dh; c++)
            v[c] += gate[e] * part[c];
        }
        for (int c = 0; c < dh; c++)
          V[(size_t)t * hd + (size_t)h * dh + (size_t)c] = (float)v[c];
      }
    }
    /* every query's heads, then each one's output mix */
    for (int i = s->first; i < L; i++) {
      row_times(xb + (size_t)i * D, D, w_q, hd, 0, (int)hd, row);
      for (size_t c = 0; c < hd; c++)
        Q[(size_t)(i - s->first) * hd + c] = (float)row[c];
    }
    ref_attention(&a, Q, K, V, O);
    for (int i = s->first; i < L; i++) {
      const float *xr = xb + (size_t)i * D;
      const float *o = O + (size_t)(i - s->first) * hd;
      for (int c = 0; c < D; c++)
        yr[c] = 0.0;
      for (int h = 0; h < H; h++) {
        route(s, xr, w_d, h, gate);
        for (int e = 0; e < E; e++) {
          if (gate[e] == 0.0)
            continue;
          const float *w = w_o + ((size_t)h * E + e) * dh * D;
          for (int c = 0; c < D; c++) {
            double acc = 0.0;
            for (int r = 0; r < dh; r++)
              acc +=
                  (double)o[(size_t)h * dh + r] * (double)w[(size_t)r * D + c];
            yr[c] += gate[e] * acc;
          }
        }
      }
      float *out = y + ((size_t)bi * nq + (size_t)(i - s->first)) * D;
      for (int c = 0; c < D; c++)
        out[c] = (float)yr[c];
    }
  }
  free(K);
  free(V);
  free(Q);
  free(O);
  free(row);
  free(v);
  free(part);
  free(yr);
}
