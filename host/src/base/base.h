/* base.h - internal: the generic helpers every folder of host/src may use
 * (base/util.c); they know nothing of contexts, devices or kernels, so the
 * lowest folder depends on nothing but the public header.  The public
 * ones among them (clattn_status_str, clattn_version, clattn_dtype_size,
 * clattn_cl_errstr, clattn_free) are declared in clattn.h. */
#ifndef CLATTN_BASE_H
#define CLATTN_BASE_H

#include "clattn_tools.h"

#include <stddef.h>
#include <stdint.h>

/* Element strides (batch, seq, head) of a [B, S, H, D] tensor in layout. */
typedef struct clattn__strides {
  long b, s, h;
} clattn__strides;
clattn__strides clattn__layout_strides(clattn_layout lay, long S, long H,
                                       long D);

/* Largest power of two <= n (1 for n < 2). */
int clattn__pow2_floor(size_t n);

/* elem * a * b * c * d bytes; 0 when a factor is negative or the product
 * passes 2^62. */
size_t clattn__bytes(size_t elem, long a, long b, long c, long d);

/* 128-bit FNV-1a style hash: two independent 64-bit FNV-1a streams (the
 * second with an extra xor-shift), and a separator after every call so that
 * ("ab","c") and ("a","bc") differ.  Used for the program-cache key and the
 * device fingerprint. */
typedef struct clattn__hash {
  uint64_t a, b;
} clattn__hash;
#define CLATTN_HASH_HEX 33 /* 32 hex digits and a NUL */
clattn__hash clattn__hash_init(void);
void clattn__hash_bytes(clattn__hash *h, const void *data, size_t n);
void clattn__hash_str(clattn__hash *h, const char *s);
/* 32 lower-case hex digits of h. */
void clattn__hash_hex(const clattn__hash *h, char out[CLATTN_HASH_HEX]);

/* Create a directory and its missing parents (mode 0755); 0 on success,
 * -1 with errno set otherwise. */
int clattn__mkdir_p(const char *dir);

/* Append printf-style text to a bounded buffer; returns 0, or -1 when it
 * did not fit. */
int clattn__appendf(char *buf, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif /* CLATTN_BASE_H */
