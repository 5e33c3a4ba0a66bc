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

/* Ragged prefill: q [total_q, hq, dk], k [total_k, hkv, dk], v [total_k,
 * hkv, dv], o [total_q, hq, dv]; sequence bi's rows cu_q[bi] .. cu_q[bi+1]-1
 * and cu_k[bi] .. cu_k[bi+1]-1 (valid offsets); query i at position
 * len_k - len_q + i.  Shape fields used: b, hq, hkv, dk, dv, scale, causal,
 * opts. */
void ref_varlen_attention(const ref_paged *a, const float *q, const float *k,
                          const float *v, const int *cu_q, const int *cu_k,
                          float *o);

#endif
