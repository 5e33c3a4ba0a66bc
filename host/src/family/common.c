/* common.c - helpers the family rooms share (common.h). */
#include "family/common.h"
#include "base/base.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG2E 1.4426950408889634f

clattn_status clattn__check_heads(int hq, int hkv, int dk, int dv,
                                  clattn_dtype dt, char *why, size_t cap) {
  if (hq < 1 || hkv < 1 || dk < 1 || dv < 1) {
    snprintf(why, cap,
             "heads and head dims must be >= 1 (heads_q %d, heads_kv %d, "
             "head_dim_k %d, head_dim_v %d)",
             hq, hkv, dk, dv);
    return CLATTN_ERR_SHAPE;
  }
  if (hq % hkv != 0) {
    snprintf(why, cap, "heads_q (%d) is not a multiple of heads_kv (%d)", hq,
             hkv);
    return CLATTN_ERR_SHAPE;
  }
  if (dk > CLATTN_MAX_HEAD_DIM || dv > CLATTN_MAX_HEAD_DIM) {
    snprintf(why, cap, "head dims k=%d, v=%d: at most %d supported", dk, dv,
             CLATTN_MAX_HEAD_DIM);
    return CLATTN_ERR_UNSUPPORTED;
  }
  return clattn__check_dtype(dt, why, cap);
}

clattn_status clattn__check_dtype(clattn_dtype dt, char *why, size_t cap) {
  if (clattn_dtype_size(dt) == 0) {
    snprintf(why, cap, "unknown dtype %d", (int)dt);
    return CLATTN_ERR_INVALID_ARG;
  }
  if (dt == CLATTN_I8) {
    snprintf(why, cap,
             "dtype i8 is a paged KV cache's storage alone "
             "(clattn_paged_desc.cache_dtype)");
    return CLATTN_ERR_UNSUPPORTED;
  }
  return CLATTN_OK;
}

clattn_status clattn__check_scale(float scale, char *why, size_t cap) {
  if (!(scale >= 0.0f) || isinf(scale)) {
    snprintf(why, cap, "scale must be finite and >= 0 (0: 1/sqrt(k))");
    return CLATTN_ERR_INVALID_ARG;
  }
  return CLATTN_OK;
}

clattn_status clattn__check_tensor(const char *name, size_t es, long a, long b,
                                   long c, long d, char *why, size_t cap) {
  if (clattn__bytes(es, a, b, c, d))
    return CLATTN_OK;
  snprintf(why, cap,
           "%s: %ld x %ld x %ld x %ld elements of %zu bytes overflow the "
           "limit of 2^62 bytes",
           name, a, b, c, d, es);
  return CLATTN_ERR_SHAPE;
}

clattn_status clattn__check_int32(const char *what, long long v, char *why,
                                  size_t cap) {
  if (v <= INT32_MAX)
    return CLATTN_OK;
  snprintf(why, cap,
           "%s (%lld) overflows the int32 the kernels hold it in (at most "
           "2^31 - 1)",
           what, v);
  return CLATTN_ERR_SHAPE;
}

int clattn__is_layout(clattn_layout l) {
  return l == CLATTN_BSHD || l == CLATTN_BHSD;
}

float clattn__kernel_scale(float scale, int dk) {
  return (scale > 0.0f ? scale : 1.0f / sqrtf((float)dk)) * LOG2E;
}

const char *clattn__dtype_name(clattn_dtype dt) {
  return dt == CLATTN_F16    ? "f16"
         : dt == CLATTN_BF16 ? "bf16"
         : dt == CLATTN_I8   ? "i8"
                             : "f32";
}

int clattn__is_pow2(long x) { return x > 0 && (x & (x - 1)) == 0; }

long clattn__pow2_round(long x) {
  if (x <= 1)
    return 1;
  return 1L << (int)lround(log2((double)x));
}

/* The next blank-separated word at or after *s (its length in *n, 0 at the
 * end of the text); *s moves past it. */
static const char *next_word(const char **s, size_t *n) {
  const char *w = *s;
  while (*w == ' ' || *w == '\t')
    w++;
  const char *e = w;
  while (*e && *e != ' ' && *e != '\t')
    e++;
  *n = (size_t)(e - w);
  *s = e;
  return w;
}

/* The key=value word of text whose key is key (length kl), or NULL; the
 * word's length in *n. */
static const char *find_word(const char *text, const char *key, size_t kl,
                             size_t *n) {
  for (const char *s = text ? text : "";;) {
    const char *w = next_word(&s, n);
    if (*n == 0)
      return NULL;
    if (*n > kl && w[kl] == '=' && strncmp(w, key, kl) == 0)
      return w;
  }
}

/* The value of key in text (NULL when absent), its length in *len. */
static const char *find_key(const char *text, const char *key, size_t *len) {
  const size_t kl = strlen(key);
  size_t n = 0;
  const char *w = find_word(text, key, kl, &n);
  if (w == NULL)
    return NULL;
  *len = n - kl - 1;
  return w + kl + 1;
}

/* Whether word w (length n) is one of the words of list. */
static int key_known(const char *list, const char *w, size_t n) {
  size_t k = 0;
  for (const char *s = list;;) {
    const char *word = next_word(&s, &k);
    if (k == 0)
      return 0;
    if (k == n && strncmp(word, w, n) == 0)
      return 1;
  }
}

clattn_status clattn__shape_keys(const char *text, const char *known, char *why,
                                 size_t cap) {
  size_t n = 0;
  for (const char *s = text ? text : "";;) {
    const char *w = next_word(&s, &n);
    if (n == 0)
      return CLATTN_OK;
    const char *eq = memchr(w, '=', n);
    if (eq == NULL || eq == w || !key_known(known, w, (size_t)(eq - w))) {
      snprintf(why, cap, "\"%.*s\": expected key=value with a key of: %s",
               (int)n, w, known);
      return CLATTN_ERR_INVALID_ARG;
    }
  }
}

clattn_status clattn__shape_int(const char *text, const char *key, long lo,
                                long hi, int *out, char *why, size_t cap) {
  size_t len = 0;
  const char *v = find_key(text, key, &len);
  if (v == NULL)
    return CLATTN_OK;
  char buf[32];
  char *end = NULL;
  snprintf(buf, sizeof buf, "%.*s", (int)(len < 31 ? len : 31), v);
  long x = strtol(buf, &end, 10);
  if (len == 0 || len > 30 || *end || x < lo || x > hi) {
    snprintf(why, cap, "%s: expected an integer in %ld..%ld, got \"%.*s\"", key,
             lo, hi, (int)(len < 32 ? len : 32), v);
    return CLATTN_ERR_INVALID_ARG;
  }
  *out = (int)x;
  return CLATTN_OK;
}

clattn_status clattn__shape_dtype(const char *text, clattn_dtype *out,
                                  char *why, size_t cap) {
  size_t len = 0;
  const char *v = find_key(text, "dtype", &len);
  if (v == NULL)
    return CLATTN_OK;
  static const clattn_dtype all[] = {CLATTN_F32, CLATTN_F16, CLATTN_BF16,
                                     CLATTN_I8};
  for (int i = 0; i < 4; i++) {
    const char *n = clattn__dtype_name(all[i]);
    if (len == strlen(n) && strncmp(v, n, len) == 0) {
      *out = all[i];
      return CLATTN_OK;
    }
  }
  snprintf(why, cap, "dtype: expected f32, f16, bf16 or i8, got \"%.*s\"",
           (int)(len < 16 ? len : 16), v);
  return CLATTN_ERR_INVALID_ARG;
}

clattn_status clattn__shape_layout(const char *text, const char *key,
                                   clattn_layout *out, char *why, size_t cap) {
  size_t len = 0;
  const char *v = find_key(text, key, &len);
  if (v == NULL)
    return CLATTN_OK;
  if (len == 4 && (strncmp(v, "bshd", 4) == 0 || strncmp(v, "bhsd", 4) == 0)) {
    *out = strncmp(v, "bshd", 4) == 0 ? CLATTN_BSHD : CLATTN_BHSD;
    return CLATTN_OK;
  }
  snprintf(why, cap, "%s: expected bshd or bhsd, got \"%.*s\"", key,
           (int)(len < 16 ? len : 16), v);
  return CLATTN_ERR_INVALID_ARG;
}

clattn_status clattn__shape_attn(const char *text, const char *known,
                                 clattn__attn_shape *s, char *why, size_t cap) {
  clattn__attn_shape d = *s;
  clattn_status rc;
  if ((rc = clattn__shape_keys(text, known, why, cap)) ||
      (rc = clattn__shape_int(text, "batch", 1, 1 << 20, &d.batch, why, cap)) ||
      (rc = clattn__shape_int(text, "seq", 1, 1 << 30, &d.n_q, why, cap)) ||
      (rc = clattn__shape_int(text, "head-dim", 1, CLATTN_MAX_HEAD_DIM,
                              &d.head_dim_k, why, cap)))
    return rc;
  d.n_kv = d.n_q;
  d.head_dim_v = d.head_dim_k;
  if ((rc = clattn__shape_int(text, "kv-seq", 1, 1 << 30, &d.n_kv, why, cap)) ||
      (rc = clattn__shape_int(text, "head-dim-v", 1, CLATTN_MAX_HEAD_DIM,
                              &d.head_dim_v, why, cap)) ||
      (rc = clattn__shape_int(text, "causal", 0, 1, &d.causal, why, cap)) ||
      (rc = clattn__shape_dtype(text, &d.dtype, why, cap)) ||
      (rc = clattn__shape_layout(text, "layout", &d.q_layout, why, cap)))
    return rc;
  d.kv_layout = d.q_layout;
  if ((rc = clattn__shape_layout(text, "kv-layout", &d.kv_layout, why, cap)))
    return rc;
  *s = d;
  return CLATTN_OK;
}

clattn_status clattn__shape_heads(const char *text, const char *known,
                                  clattn__attn_shape *s, int *heads_q,
                                  int *heads_kv, char *why, size_t cap) {
  clattn_status rc;
  if ((rc = clattn__shape_attn(text, known, s, why, cap)) ||
      (rc = clattn__shape_int(text, "heads", 1, 1 << 16, heads_q, why, cap)))
    return rc;
  *heads_kv = *heads_q;
  return clattn__shape_int(text, "kv-heads", 1, 1 << 16, heads_kv, why, cap);
}
