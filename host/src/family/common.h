/* common.h - internal: helpers the family rooms share: the checks every
 * attention-like description starts with, shape-class pieces and the
 * "key=value" shape text the CLI and the standard shapes use. */
#ifndef CLATTN_FAMILY_COMMON_H
#define CLATTN_FAMILY_COMMON_H

#include "clattn_tools.h"

#include <stddef.h>

/* Head counts (heads_q a positive multiple of heads_kv), head dims
 * (1..CLATTN_MAX_HEAD_DIM) and the storage type; why gets the reason. */
clattn_status clattn__check_heads(int hq, int hkv, int dk, int dv,
                                  clattn_dtype dt, char *why, size_t cap);
/* A storage type of q, k, v and o: f32, f16 or bf16 (i8 is a paged cache's
 * alone: CLATTN_ERR_UNSUPPORTED). */
clattn_status clattn__check_dtype(clattn_dtype dt, char *why, size_t cap);
/* A logit scale: finite and >= 0 (0: 1/sqrt(k)). */
clattn_status clattn__check_scale(float scale, char *why, size_t cap);
/* The size limits of docs/ARCHITECTURE.md ("Offsets and size limits"): the
 * kernels compute every offset into a buffer in 64 bits, so a tensor is
 * refused (CLATTN_ERR_SHAPE, naming it and "overflow") only when its
 * es * a * b * c * d bytes pass 2^62 (clattn__bytes); a count the kernels
 * hold in an int32 (a work-item index, a position, a row of partials) is
 * refused, naming it, when it passes 2^31 - 1. */
clattn_status clattn__check_tensor(const char *name, size_t es, long a, long b,
                                   long c, long d, char *why, size_t cap);
clattn_status clattn__check_int32(const char *what, long long v, char *why,
                                  size_t cap);
int clattn__is_layout(clattn_layout l);
/* The scale the kernels take: (scale or 1/sqrt(dk)) * log2(e). */
float clattn__kernel_scale(float scale, int dk);

/* Shape-class pieces: "f32", "f16", "bf16", "i8"; x rounded to a power of
 * 2. */
const char *clattn__dtype_name(clattn_dtype dt);
long clattn__pow2_round(long x);
/* Whether x is a power of two (1, 2, 4, ...). */
int clattn__is_pow2(long x);

/* Shape text: "key=value" words separated by blanks.  Each family reads
 * the keys it knows with these and refuses the rest: clattn__shape_keys
 * checks that every key of text is one of the blank-separated known. */
clattn_status clattn__shape_keys(const char *text, const char *known, char *why,
                                 size_t cap);
/* *out = the integer of key (left as it is when key is absent); an error
 * when the value is no integer in [lo, hi]. */
clattn_status clattn__shape_int(const char *text, const char *key, long lo,
                                long hi, int *out, char *why, size_t cap);
/* dtype=f32|f16|bf16|i8 (a family that takes no i8 refuses it in its
 * check) and layout-like keys (bshd|bhsd). */
clattn_status clattn__shape_dtype(const char *text, clattn_dtype *out,
                                  char *why, size_t cap);
clattn_status clattn__shape_layout(const char *text, const char *key,
                                   clattn_layout *out, char *why, size_t cap);

/* The keys every attention-shaped family reads alike; the head counts are
 * each family's own. */
typedef struct clattn__attn_shape {
  int batch;
  int n_q;
  int n_kv;
  int head_dim_k;
  int head_dim_v;
  int causal;
  clattn_dtype dtype;
  clattn_layout q_layout;
  clattn_layout kv_layout;
} clattn__attn_shape;

/* Checks text's keys against known, then reads batch, seq, kv-seq,
 * head-dim, head-dim-v, causal, dtype, layout and kv-layout over the
 * defaults *s holds; kv-seq, head-dim-v and kv-layout default to seq,
 * head-dim and layout. */
clattn_status clattn__shape_attn(const char *text, const char *known,
                                 clattn__attn_shape *s, char *why, size_t cap);
/* clattn__shape_attn, then heads= into *heads_q (left as it is when absent)
 * and kv-heads= into *heads_kv (*heads_q when absent), each 1 .. 65536. */
clattn_status clattn__shape_heads(const char *text, const char *known,
                                  clattn__attn_shape *s, int *heads_q,
                                  int *heads_kv, char *why, size_t cap);

#endif /* CLATTN_FAMILY_COMMON_H */
