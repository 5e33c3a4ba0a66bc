/* ref_paged.c - the paged and ragged references (ref_paged.h). */
#include "reference/ref_paged.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Sequence bi's first `len` keys (or values, d wide) out of its pages, each
 * row times its scale when the cache is int8. */
static void gather(const ref_paged *a, const float *cache, const float *scales,
                   const int *table, int bi, int len, int d, float *out) {
  for (int t = 0; t < len; t++) {
    const size_t page =
        (size_t)table[(size_t)bi * a->max_blocks + t / a->page_size];
    const size_t row = page * a->page_size + t % a->page_size;
    for (int h = 0; h < a->hkv; h++) {
      const float s = scales ? scales[row * a->hkv + h] : 1.0f;
      for (int x = 0; x < d; x++)
        out[((size_t)t * a->hkv + h) * d + x] =
            cache[(row * a->hkv + h) * d + x] * s;
    }
  }
}

/* One sequence: n queries against m keys, all BSHD with a batch of 1. */
static void one_sequence(const ref_paged *a, int n, int m, const float *q,
                         const float *k, const float *v, float *o) {
  const ref_attn r = {.b = 1,
                      .n = n,
                      .m = m > 0 ? m : 1,
                      .hq = a->hq,
                      .hkv = a->hkv,
                      .dk = a->dk,
                      .dv = a->dv,
                      .scale = a->scale,
                      .causal = a->causal,
                      .kv_lens = &m,
                      .opts = a->opts};
  ref_attention(&r, q, k, v, o);
}

int ref_paged_attention(const ref_paged *a, const float *q, const float *kc,
                        const float *vc, const float *ks, const float *vs,
                        const int *table, const int *lens, float *o) {
  const size_t most = (size_t)a->max_blocks * a->page_size;
  float *k = ref_alloc(most * a->hkv * a->dk * sizeof *k + sizeof *k);
  float *v = ref_alloc(most * a->hkv * a->dv * sizeof *v + sizeof *v);
  if (k == NULL || v == NULL) {
    free(k);
    free(v);
    return -1;
  }
  for (int bi = 0; bi < a->b; bi++) {
    const int len = lens[bi];
    gather(a, kc, ks, table, bi, len, a->dk, k);
    gather(a, vc, vs, table, bi, len, a->dv, v);
    const size_t qs = (size_t)a->n * a->hq;
    one_sequence(a, a->n, len, q + bi * qs * a->dk, k, v, o + bi * qs * a->dv);
  }
  free(k);
  free(v);
  return 0;
}

/* One (position, head) row of d values into an int8 cache's row (floats
 * holding the integers) and its scale (ref_paged.h). */
static void quantize_row(const float *x, int d, float *q, float *scale) {
  double most = 0;
  int finite = 1;
  for (int i = 0; i < d; i++) {
    finite &= isfinite(x[i]) != 0;
    most = fmax(most, fabs((double)x[i]));
  }
  const float s = (float)(most / 127.0);
  const int keep = finite && s >= FLT_MIN;
  for (int i = 0; i < d; i++) {
    const double r = keep ? nearbyint((double)x[i] / s) : 0.0;
    q[i] = (float)(r > 127 ? 127 : r < -127 ? -127 : r);
  }
  *scale = !finite ? NAN : keep ? s : 0.0f;
}

/* Sequence bi's row i (of width d) of one tensor into its page. */
static void append_row(const ref_paged *a, const float *src, float *cache,
                       float *scales, size_t dst_row, size_t src_row, int d) {
  for (int h = 0; h < a->hkv; h++) {
    const float *x = src + (src_row * a->hkv + h) * d;
    float *y = cache + (dst_row * a->hkv + h) * d;
    if (scales)
      quantize_row(x, d, y, &scales[dst_row * a->hkv + h]);
    else
      memcpy(y, x, (size_t)d * sizeof *y);
  }
}

void ref_paged_append(const ref_paged *a, const float *k_new,
                      const float *v_new, const int *table, const int *lens,
                      float *kc, float *vc, float *ks, float *vs) {
  for (int bi = 0; bi < a->b; bi++)
    for (int i = 0; i < a->n; i++) {
      const long t = (long)lens[bi] - a->n + i;
      if (t < 0)
        continue;
      const size_t page =
          (size_t)table[(size_t)bi * a->max_blocks + t / a->page_size];
      const size_t row = page * a->page_size + (size_t)(t % a->page_size);
      const size_t src = (size_t)bi * a->n + i;
      append_row(a, k_new, kc, ks, row, src, a->dk);
      append_row(a, v_new, vc, vs, row, src, a->dv);
    }
}

void ref_varlen_attention(const ref_paged *a, const float *q, const float *k,
                          const float *v, const int *cu_q, const int *cu_k,
                          float *o) {
  for (int bi = 0; bi < a->b; bi++) {
    const int n = cu_q[bi + 1] - cu_q[bi], m = cu_k[bi + 1] - cu_k[bi];
    if (n < 1)
      continue;
    one_sequence(a, n, m, q + (size_t)cu_q[bi] * a->hq * a->dk,
                 k + (size_t)cu_k[bi] * a->hkv * a->dk,
                 v + (size_t)cu_k[bi] * a->hkv * a->dv,
                 o + (size_t)cu_q[bi] * a->hq * a->dv);
  }
}
