/* ref.c - independent plain-C reference for clattn (see ref.h).
 *
 * Deliberately naive: one (sequence, head, query) row at a time, logits in
 * double, max-subtracted softmax, no tiling, no online rescaling.  It shares
 * no code with the library. */
#include "reference/ref.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t ref_index(int layout, int S, int H, int D, int bi, int s, int h, int d) {
  if (layout == 0) /* BSHD */
    return (((size_t)bi * S + s) * H + h) * D + d;
  return (((size_t)bi * H + h) * S + s) * D + d; /* BHSD */
}

double ref_logit(double x) {
  if (fabs(x) * 1.4426950408889634 > FLT_MAX) /* log2(e) */
    return x > 0 ? INFINITY : -INFINITY;
  return x;
}

int ref_softmax_nan(const double *x, size_t stride, int n) {
  int all_neg_inf = 1;
  for (int t = 0; t < n; t++) {
    const double l = x[(size_t)t * stride];
    if (isnan(l) || l == INFINITY)
      return 1;
    if (l != -INFINITY)
      all_neg_inf = 0;
  }
  return n > 0 && all_neg_inf;
}

static int clampi(int x, int lo, int hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

/* One output row: query vector qv (dk) against keys 0..m-1 of KV head c of
 * sequence bi, of which only those with vis(t) are visible.  Keys/values
 * are read through ref_index with sequence length S. */
static void attend_row(const double *qv, int dk, int dv, double scale,
                       const float *k, const float *v, int kv_layout, int S,
                       int H, int bi, int c, int nvis, double *logit,
                       float *out) {
  if (nvis <= 0) {
    for (int d = 0; d < dv; d++)
      out[d] = 0.0f;
    return;
  }
  double mx = -INFINITY;
  for (int t = 0; t < nvis; t++) {
    double s = 0.0;
    for (int d = 0; d < dk; d++)
      s += qv[d] * (double)k[ref_index(kv_layout, S, H, dk, bi, t, c, d)];
    s = ref_logit(s * scale);
    logit[t] = s;
    if (s > mx)
      mx = s;
  }
  if (ref_softmax_nan(logit, 1, nvis)) {
    for (int d = 0; d < dv; d++)
      out[d] = NAN;
    return;
  }
  double sum = 0.0;
  for (int t = 0; t < nvis; t++) {
    logit[t] = exp(logit[t] - mx);
    sum += logit[t];
  }
  for (int d = 0; d < dv; d++) {
    double acc = 0.0;
    for (int t = 0; t < nvis; t++)
      acc += logit[t] * (double)v[ref_index(kv_layout, S, H, dv, bi, t, c, d)];
    out[d] = (float)(acc / sum);
  }
}

void ref_attention(const ref_attn *a, const float *q, const float *k,
                   const float *v, float *o) {
  int g = a->hq / a->hkv;
  double *logit = malloc(sizeof(double) * (size_t)(a->m > 0 ? a->m : 1));
  double *qv = malloc(sizeof(double) * (size_t)(a->dk > 0 ? a->dk : 1));
  float *row = malloc(sizeof(float) * (size_t)(a->dv > 0 ? a->dv : 1));
  if (!logit || !qv || !row) {
    free(logit);
    free(qv);
    free(row);
    ref_out_of_memory = 1;
    return;
  }
  for (int bi = 0; bi < a->b; bi++) {
    int L = clampi(a->kv_lens ? a->kv_lens[bi] : a->m, 0, a->m);
    for (int j = 0; j < a->hq; j++) {
      int c = j / g;
      for (int i = 0; i < a->n; i++) {
        /* Visible keys are a prefix 0..nvis-1: t < L, and with the causal
         * mask t <= L - n + i. */
        int nvis = L;
        if (a->causal) {
          int last = L - a->n + i; /* last visible key, may be < 0 */
          nvis = clampi(last + 1, 0, L);
        }
        for (int d = 0; d < a->dk; d++)
          qv[d] = q[ref_index(a->q_layout, a->n, a->hq, a->dk, bi, i, j, d)];
        attend_row(qv, a->dk, a->dv, a->scale, k, v, a->kv_layout, a->m, a->hkv,
                   bi, c, nvis, logit, row);
        for (int d = 0; d < a->dv; d++)
          o[ref_index(a->q_layout, a->n, a->hq, a->dv, bi, i, j, d)] = row[d];
      }
    }
  }
  free(logit);
  free(qv);
  free(row);
}

void ref_decode(int b, int cap, int hq, int hkv, int dk, int dv, int layout,
                double scale, const int *lens, const float *q, const float *kc,
                const float *vc, float *o) {
  int g = hq / hkv;
  double *logit = malloc(sizeof(double) * (size_t)(cap > 0 ? cap : 1));
  double *qv = malloc(sizeof(double) * (size_t)(dk > 0 ? dk : 1));
  if (!logit || !qv) {
    free(logit);
    free(qv);
    ref_out_of_memory = 1;
    return;
  }
  for (int bi = 0; bi < b; bi++) {
    int L = clampi(lens[bi], 0, cap);
    for (int j = 0; j < hq; j++) {
      for (int d = 0; d < dk; d++)
        qv[d] = q[((size_t)bi * hq + j) * dk + d];
      attend_row(qv, dk, dv, scale, kc, vc, layout, cap, hkv, bi, j / g, L,
                 logit, o + ((size_t)bi * hq + j) * dv);
    }
  }
  free(logit);
  free(qv);
}

/* c[r, :] = a[r, :] * w for row-major a [rows, K], w [K, N]; double sums. */
static void matmul(int rows, int K, int N, const float *a, const float *w,
                   float *c) {
  for (int r = 0; r < rows; r++)
    for (int col = 0; col < N; col++) {
      double s = 0.0;
      for (int x = 0; x < K; x++)
        s += (double)a[(size_t)r * K + x] * (double)w[(size_t)x * N + col];
      c[(size_t)r * N + col] = (float)s;
    }
}

void ref_layer(int b, int n, int D, int hq, int hkv, int dk, int dv,
               double scale, int causal, const float *x, const float *wq,
               const float *wk, const float *wv, const float *wo, float *y) {
  int rows = b * n;
  float *Q = ref_alloc_or_abort(sizeof(float) * (size_t)rows * hq * dk);
  float *K = ref_alloc_or_abort(sizeof(float) * (size_t)rows * hkv * dk);
  float *V = ref_alloc_or_abort(sizeof(float) * (size_t)rows * hkv * dv);
  float *O = ref_alloc_or_abort(sizeof(float) * (size_t)rows * hq * dv);
  if (!Q || !K || !V || !O) {
    free(Q);
    free(K);
    free(V);
    free(O);
    return;
  }
  matmul(rows, D, hq * dk, x, wq, Q);
  matmul(rows, D, hkv * dk, x, wk, K);
  matmul(rows, D, hkv * dv, x, wv, V);
  ref_attn a = {.b = b,
                .n = n,
                .m = n,
                .hq = hq,
                .hkv = hkv,
                .dk = dk,
                .dv = dv,
                .q_layout = 0,
                .kv_layout = 0,
                .scale = scale,
                .causal = causal,
                .kv_lens = NULL};
  ref_attention(&a, Q, K, V, O);
  matmul(rows, hq * dv, D, O, wo, y);
  free(Q);
  free(K);
  free(V);
  free(O);
}

_Thread_local int ref_out_of_memory;

void *ref_alloc(size_t n) {
  void *p = calloc(n ? n : 1, 1);
  if (!p)
    ref_out_of_memory = 1;
  return p;
}

void *ref_alloc_or_abort(size_t n) {
  void *p = ref_alloc(n);
  if (!p)
    abort();
  return p;
}

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Shift the 24-bit significand `m` right by `sh` (1..31) rounding to
 * nearest, ties to even. */
static uint32_t shift_rne(uint32_t m, int sh) {
  if (sh >= 32)
    return 0;
  uint32_t r = m >> sh;
  uint32_t rem = m & ((1u << sh) - 1u);
  uint32_t half = 1u << (sh - 1);
  if (rem > half || (rem == half && (r & 1u)))
    r++;
  return r;
}

uint16_t ref_f32_to_f16(float f) {
  uint32_t x = f2u(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  int exp = (int)((x >> 23) & 0xffu);
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) /* inf, or a quiet NaN keeping the top payload bits */
    return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
  int e = exp - 127 + 15; /* biased half exponent */
  if (e >= 31)
    return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    /* Subnormal half (or zero): value / 2^-24 = (1.mant * 2^23) >> (126 -
     * exp).  f32 subnormals (exp 0) are far below half's range. */
    if (exp == 0)
      return sign;
    uint32_t r = shift_rne(mant | 0x800000u, 126 - exp);
    return (uint16_t)(sign | r); /* r == 0x400 is the smallest normal */
  }
  /* Normal: a carry out of the mantissa bumps the exponent, up to inf. */
  uint32_t r = ((uint32_t)e << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u)))
    r++;
  return (uint16_t)(sign | r);
}

float ref_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = ldexpf((float)mant, -24); /* zero or subnormal, exact */
    return sign ? -v : v;
  }
  if (exp == 31)
    return u2f(sign | 0x7f800000u | (mant << 13));
  return u2f(sign | ((uint32_t)(exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t ref_f32_to_bf16(float f) {
  uint32_t x = f2u(f);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    return (uint16_t)((x >> 16) | 0x40u); /* NaN stays a (quiet) NaN */
  uint32_t lsb = (x >> 16) & 1u;
  return (uint16_t)((x + 0x7fffu + lsb) >> 16); /* RNE; overflow -> inf */
}

float ref_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

void ref_kv_append(int b, int cap, int hk, int hv, int dk, int dv, int layout,
                   int n_new, const int *pos, const float *k_new,
                   const float *v_new, float *kc, float *vc) {
  for (int bi = 0; bi < b; bi++)
    for (int t = 0; t < n_new; t++) {
      const long p = (long)pos[bi] + t;
      if (p < 0 || p >= cap)
        continue;
      const size_t src = (size_t)bi * n_new + t;
      for (int c = 0; c < hk; c++)
        for (int d = 0; d < dk; d++)
          kc[ref_index(layout, cap, hk, dk, bi, (int)p, c, d)] =
              k_new[(src * hk + c) * dk + d];
      for (int u = 0; u < hv; u++)
        for (int d = 0; d < dv; d++)
          vc[ref_index(layout, cap, hv, dv, bi, (int)p, u, d)] =
              v_new[(src * hv + u) * dv + d];
    }
}
