/* ref_paged.h - the plain-C reference of the paged and ragged caches:
 * each sequence's keys gathered (and dequantized) into a contiguous
 * tensor, then ref_attention over it. */
#ifndef CLATTN_REF_PAGED_H
#define CLATTN_REF_PAGED_H

#include "reference/ref.h"

/* A paged call's shape (clattn_paged_desc). */
typedef struct ref_paged {
  int b, n; /* batch, new queries (rows) per sequence */
  int hq, hkv, dk, dv;
  int num_blocks, page_size, max_blocks;
  double scale; /* resolved, never 0 */
  int causal;
  ref_opts opts;
} ref_paged;

/* q [b, n, hq, dk], o [b, n, hq, dv] (BSHD); kc [num_blocks, page_size,
 * hkv, dk], vc likewise with dv; ks, vs [num_blocks, page_size, hkv]: an
 * int8 cache's scales (the cache holding the integers as floats), NULL for
 * a float cache; table [b, max_blocks]; lens [b], the lengths including the
 * n new positions.  Query i of sequence bi sits at position
 * lens[bi] - n + i.  The table and lengths must be valid (the library
 * refuses others before running); returns 0, or -1 out of memory. */
int ref_paged_attention(const ref_paged *a, const float *q, const float *kc,
                        const float *vc, const float *ks, const float *vs,
                        const int *table, const int *lens, float *o);

/* The paged append: n new rows a sequence, k_new [b, n, hkv, dk] and
 * v_new [b, n, hkv, dv] (BSHD), row i of sequence bi written at position
 * lens[bi] - n + i of its pages (kc, vc as above), positions below 0
 * skipped.  ks, vs NULL: a float cache, the rows copied.  Otherwise an int8
 * cache (integers held as floats): each (position, head) row of K (and of
 * V) quantized with scale = max |x| / 127 rounded to float32 and
 * q = nearbyint(x / scale) in double (round to nearest even), clamped to
 * [-127, 127]; a row whose scale is 0 or below FLT_MIN (all zeros) is
 * stored as zeros with scale 0, and a row holding a NaN or an infinity as
 * zeros with scale NaN, so that a later read of it shows NaN.  The kernel
 * corrects its float division's rounding with an exact fma residual and
 * stores the same integers; the harness's int8 tolerance (one step) covers
 * a device whose division or fma is not exact.  Shape fields used: b, n,
 * hkv, dk, dv, page_size, max_blocks; valid table and lengths. */
void ref_paged_append(const ref_paged *a, const float *k_new,
                      const float *v_new, const int *table, const int *lens,
                      float *kc, float *vc, float *ks, float *vs);

/* Ragged prefill: q [total_q, hq, dk], k [total_k, hkv, dk], v [total_k,
 * hkv, dv], o [total_q, hq, dv]; sequence bi's rows cu_q[bi] .. cu_q[bi+1]-1
 * and cu_k[bi] .. cu_k[bi+1]-1 (valid offsets); query i at position
 * len_k - len_q + i.  Shape fields used: b, hq, hkv, dk, dv, scale, causal,
 * opts. */
void ref_varlen_attention(const ref_paged *a, const float *q, const float *k,
                          const float *v, const int *cu_q, const int *cu_k,
                          float *o);

#endif
