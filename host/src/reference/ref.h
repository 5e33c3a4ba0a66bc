/* ref.h - independent plain-C reference for every clattn variant.
 * Straightforward loops, double accumulation, no OpenCL, no library code.
 * Tensors are float arrays (float16/bfloat16 data are converted by the
 * caller with the helpers below). */
#ifndef CLATTN_TESTS_REF_H
#define CLATTN_TESTS_REF_H

#include <stddef.h>
#include <stdint.h>

/* The attention options (clattn.h, "Attention options"); zero: none.
 * alibi and sinks: [hq] or NULL. */
typedef struct ref_opts {
  int window;     /* W >= 1: key t visible only if p - W < t */
  double softcap; /* C > 0: s -> C tanh(s / C) */
  const float *alibi;
  const float *sinks;
} ref_opts;

/* Shape of one attention call; layouts: 0 = BSHD, 1 = BHSD. */
typedef struct ref_attn {
  int b, n, m;        /* batch, queries per sequence, keys per sequence */
  int hq, hkv;        /* query heads, key/value heads (hq % hkv == 0) */
  int dk, dv;         /* head dims */
  int q_layout;       /* layout of q and o */
  int kv_layout;      /* layout of k and v */
  double scale;       /* logit scale (already resolved, never 0) */
  int causal;         /* query i sees key t iff t <= L - n + i */
  const int *kv_lens; /* [b] valid keys (clamped to [0, m]); NULL = m */
  ref_opts opts;      /* query i sits at position L - n + i */
} ref_attn;

/* Index of element [bi, s, h, d] of a tensor [B, S, H, D] in layout. */
size_t ref_index(int layout, int S, int H, int D, int bi, int s, int h, int d);

/* The non-finite contract (clattn.h, clattn_attention): a logit as the
 * kernels can hold it, x itself unless its magnitude exceeds float32's range
 * in their base-2 units (|x| log2(e) > FLT_MAX), then +-inf; NaN stays. */
double ref_logit(double x);
/* 1 when a softmax over the n > 0 visible logits x[0], x[stride], ...
 * gives a NaN row: one of them is NaN or +inf, or all are -inf. */
int ref_softmax_nan(const double *x, size_t stride, int n);

/* o = softmax(scale q k^T + mask) v; fully masked rows give zeros; NaN and
 * inf as ref_softmax_nan says, non-finite V channels propagate. */
void ref_attention(const ref_attn *a, const float *q, const float *k,
                   const float *v, float *o);

/* Decode: q [b, hq, dk] against caches of `cap` rows (layout as above, the
 * seq axis being the cache row), lens [b] valid rows; o [b, hq, dv]. */
void ref_decode(int b, int cap, int hq, int hkv, int dk, int dv, int layout,
                double scale, const int *lens, const float *q, const float *kc,
                const float *vc, float *o);
/* The same with options o (NULL: none); the query sits at position
 * lens[bi] - 1. */
void ref_decode_opts(int b, int cap, int hq, int hkv, int dk, int dv,
                     int layout, double scale, const int *lens,
                     const ref_opts *o, const float *q, const float *kc,
                     const float *vc, float *out);

/* The KV append: rows pos[bi] .. pos[bi]+n_new-1 of sequence bi's cache
 * (capacity cap, layout) get k_new [b, n_new, hk, dk] and v_new [b, n_new,
 * hv, dv] (BSHD; a GQA cache: hk = hv = its KV heads); rows outside
 * [0, cap) are not written. */
void ref_kv_append(int b, int cap, int hk, int hv, int dk, int dv, int layout,
                   int n_new, const int *pos, const float *k_new,
                   const float *v_new, float *kc, float *vc);

/* Whole layer, row-major: x [b, n, D]; wq [D, hq*dk]; wk [D, hkv*dk];
 * wv [D, hkv*dv]; wo [hq*dv, D]; y [b, n, D].  Self-attention over the n
 * positions of x, causal or not. */
void ref_layer(int b, int n, int D, int hq, int hkv, int dk, int dv,
               double scale, int causal, const float *x, const float *wq,
               const float *wk, const float *wv, const float *wo, float *y);
/* The same with the attention options o (NULL: none), position i at
 * p = i. */
void ref_layer_opts(int b, int n, int D, int hq, int hkv, int dk, int dv,
                    double scale, int causal, const ref_opts *o, const float *x,
                    const float *wq, const float *wk, const float *wv,
                    const float *wo, float *y);

/* n zeroed bytes (at least 1); NULL when out of memory, with
 * ref_out_of_memory set.  Zeroed, so that no compiler sees a read before a
 * write. */
void *ref_alloc(size_t n);
/* The same, ending the process when out of memory: for the layer
 * references, which have no status to return and are called only by the
 * tests and `clattn run --check`, never inside the library. */
void *ref_alloc_or_abort(size_t n);

/* Set when a reference function ran out of host memory (its outputs are
 * then incomplete); the reference never clears it.  The tuner, which runs
 * the reference inside the library, clears it before a run and fails its
 * call when it is set after. */
extern _Thread_local int ref_out_of_memory;

/* Storage conversions, round to nearest even. */
uint16_t ref_f32_to_f16(float f);
float ref_f16_to_f32(uint16_t h);
uint16_t ref_f32_to_bf16(float f);
float ref_bf16_to_f32(uint16_t h);

#endif
