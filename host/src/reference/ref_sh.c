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
  const int D = s->d_model, H = s->heads, dh = s->head_dim, E = s->experts;
  const int L = s->len, nq = s->len - s->first;
  if (E < 1 || E > REF_SH_MAX_EXPERTS || s->topk < 1 || s->topk > E)
    abort();
  const size_t hd = (size_t)H * dh;
  const double scale = s->scale != 0.0 ? s->scale : 1.0 / sqrt((double)dh);
  double *K = ref_alloc_or_abort(sizeof(double) * (size_t)L * hd);
  double *V = ref_alloc_or_abort(sizeof(double) * (size_t)L * hd);
  double *q = ref_alloc_or_abort(sizeof(double) * hd);
  double *o = ref_alloc_or_abort(sizeof(double) * hd);
  double *part = ref_alloc_or_abort(sizeof(double) * (size_t)(D > dh ? D : dh));
  double *p = ref_alloc_or_abort(sizeof(double) * (size_t)L);
  double *yr = ref_alloc_or_abort(sizeof(double) * (size_t)D);
  double gate[REF_SH_MAX_EXPERTS];

  for (int bi = 0; bi < s->b; bi++) {
    const float *xb = x + (size_t)bi * L * D;
    /* every position's K and mixed V */
    for (int t = 0; t < L; t++) {
      const float *xr = xb + (size_t)t * D;
      row_times(xr, D, w_k, hd, 0, (int)hd, K + (size_t)t * hd);
      for (int h = 0; h < H; h++) {
        double *v = V + (size_t)t * hd + (size_t)h * dh;
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
      }
    }
    /* each query's heads, then its output mix */
    for (int i = s->first; i < L; i++) {
      const float *xr = xb + (size_t)i * D;
      const int nvis = s->causal ? i + 1 : L;
      row_times(xr, D, w_q, hd, 0, (int)hd, q);
      for (int h = 0; h < H; h++) {
        double m = -INFINITY, sum = 0.0;
        for (int t = 0; t < nvis; t++) {
          double dot = 0.0;
          for (int c = 0; c < dh; c++)
            dot +=
                q[(size_t)h * dh + c] * K[(size_t)t * hd + (size_t)h * dh + c];
          p[t] = ref_logit(scale * dot);
          m = p[t] > m ? p[t] : m;
        }
        for (int t = 0; t < nvis; t++) {
          p[t] = exp(p[t] - m);
          sum += p[t];
        }
        for (int c = 0; c < dh; c++) {
          double acc = 0.0;
          for (int t = 0; t < nvis; t++)
            acc += p[t] * V[(size_t)t * hd + (size_t)h * dh + c];
          o[(size_t)h * dh + c] = acc / sum;
        }
      }
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
              acc += o[(size_t)h * dh + r] * (double)w[(size_t)r * D + c];
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
  free(q);
  free(o);
  free(part);
  free(p);
  free(yr);
}
