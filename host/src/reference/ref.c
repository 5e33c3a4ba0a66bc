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

/* Where one output row looks: keys lo..hi-1 of KV head c of sequence bi
 * (read through ref_index with sequence length S, H heads), the row at
 * position pos, of query head j (its ALiBi slope and sink). */
typedef struct ref_row {
  int kv_layout, S, H, bi, c, j;
  int lo, hi, pos;
} ref_row;

/* One output row: query vector qv (dk) against the row's keys. */
static void attend_row(const double *qv, int dk, int dv, double scale,
                       const ref_opts *o, const float *k, const float *v,
                       const ref_row *r, double *logit, float *out) {
  const int nvis = r->hi - r->lo;
  if (nvis <= 0) {
    for (int d = 0; d < dv; d++)
      out[d] = 0.0f;
    return;
  }
  double mx = -INFINITY;
  for (int t = 0; t < nvis; t++) {
    const int key = r->lo + t;
    double s = 0.0;
    for (int d = 0; d < dk; d++)
      s += qv[d] *
           (double)
               k[ref_index(r->kv_layout, r->S, r->H, dk, r->bi, key, r->c, d)];
    s = ref_logit(s * scale);
    if (o->softcap > 0)
      s = o->softcap * tanh(s / o->softcap);
    if (o->alibi != NULL)
      s -= (double)o->alibi[r->j] * fabs((double)(r->pos - key));
    logit[t] = s;
    if (s > mx)
      mx = s;
  }
  const double sink = o->sinks != NULL ? (double)o->sinks[r->j] : -INFINITY;
  int nan_or_inf = 0;
  for (int t = 0; t < nvis; t++)
    nan_or_inf |= isnan(logit[t]) || logit[t] == INFINITY;
  /* a sink joins the softmax as one more logit that weighs no value: where
   * it is finite, logits all -inf no longer make the row NaN */
  if (nan_or_inf || (mx == -INFINITY && sink == -INFINITY)) {
    for (int d = 0; d < dv; d++)
      out[d] = NAN;
    return;
  }
  if (sink > mx)
    mx = sink;
  double sum = sink == -INFINITY ? 0.0 : exp(sink - mx);
  for (int t = 0; t < nvis; t++) {
    logit[t] = exp(logit[t] - mx);
    sum += logit[t];
  }
  for (int d = 0; d < dv; d++) {
    double acc = 0.0;
    for (int t = 0; t < nvis; t++)
      acc += logit[t] * (double)v[ref_index(r->kv_layout, r->S, r->H, dv, r->bi,
                                            r->lo + t, r->c, d)];
    out[d] = (float)(acc / sum);
  }
}

/* The keys a row at position pos sees among L valid ones: [lo, hi). */
static void visible(int L, int pos, int causal, const ref_opts *o, int *lo,
                    int *hi) {
  *hi = causal ? clampi(pos + 1, 0, L) : L;
  *lo = o->window > 0 ? clampi(pos - o->window + 1, 0, L) : 0;
  if (*lo > *hi)
    *lo = *hi;
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
      ref_row r = {a->kv_layout, a->m, a->hkv, bi, j / g, j, 0, 0, 0};
      for (int i = 0; i < a->n; i++) {
        /* the causal mask: t <= L - n + i, the row's position */
        r.pos = L - a->n + i;
        visible(L, r.pos, a->causal, &a->opts, &r.lo, &r.hi);
        for (int d = 0; d < a->dk; d++)
          qv[d] = q[ref_index(a->q_layout, a->n, a->hq, a->dk, bi, i, j, d)];
        attend_row(qv, a->dk, a->dv, a->scale, &a->opts, k, v, &r, logit, row);
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
  ref_decode_opts(b, cap, hq, hkv, dk, dv, layout, scale, lens, NULL, q, kc, vc,
                  o);
}

void ref_decode_opts(int b, int cap, int hq, int hkv, int dk, int dv,
                     int layout, double scale, const int *lens,
                     const ref_opts *o, const float *q, const float *kc,
                     const float *vc, float *out) {
  static const ref_opts none;
  const ref_opts *op = o != NULL ? o : &none;
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
      ref_row r = {layout, cap, hkv, bi, j / g, j, 0, 0, L - 1};
      visible(L, r.pos, 1, op, &r.lo, &r.hi);
      for (int d = 0; d < dk; d++)
        qv[d] = q[((size_t)bi * hq + j) * dk + d];
      attend_row(qv, dk, dv, scale, op, kc, vc, &r, logit,
                 out + ((size_t)bi * hq + j) * dv);
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
  ref_layer_opts(b, n, D, hq, hkv, dk, dv, scale, causal, NULL, x, wq, wk, wv,
                 wo, y);
}

void ref_layer_opts(int b, int n, int D, int hq, int hkv, int dk, int dv,
                    double scale, int causal, const ref_opts *o, const float *x,
                    const float *wq, const float *wk, const float *wv,
                    const float *wo, float *y) {
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
  if (o != NULL)
    a.opts = *o;
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
