/* paged_append.cl - new K/V rows written into a paged cache
 * (clattn_paged_append): one work-item per (sequence, new row, KV head)
 * copies (or quantizes) that head's key row and value row into the page
 * the block table names.  A row is at most CLATTN_MAX_HEAD_DIM values, so
 * one item's loop is short and needs no work-group, local memory or
 * barrier.
 *
 * I8 = 1: an int8 cache.  Each row's scale is max |x| / 127 rounded to
 * nearest float32, and each value round-to-nearest-even(x / scale) clamped
 * to [-127, 127].  OpenCL's float division may be off by an ulp or two, so
 * both roundings are corrected with exact fma residuals: the device
 * stores what the double-precision reference does.  A row of zeros (or
 * whose scale would fall below FLT_MIN, which devices may flush) is
 * stored as zeros with scale 0; a row holding a NaN or an infinity as
 * zeros with scale NaN, so that every value read from it is NaN.  Every
 * written row issues the same loads and fmas whatever its values (the
 * model counts them). */
#ifndef I8
#define I8 0
#endif
#if I8
typedef char cache_t;
#else
typedef raw_t cache_t;
#endif

#if I8
/* The float nearest m / 127: the division's result or a neighbour, the one
 * whose residual m - 127 s (exact under fma) is smallest.  m / 127 is never
 * halfway between two floats (127 is odd and m has 24 bits). */
inline float row_scale(float m) {
  const float s = m / 127.0f;
  const float up = nextafter(s, INFINITY), dn = nextafter(s, 0.0f);
  const float r = fabs(fma(-s, 127.0f, m));
  const float ru = fabs(fma(-up, 127.0f, m));
  const float rd = fabs(fma(-dn, 127.0f, m));
  return ru < r && ru <= rd ? up : rd < r ? dn : s;
}

/* Row x (d values at src) into q (d int8 at dst) and its scale. */
inline void quantize_row(__global const stor_t *x, long src, int d,
                         __global char *q, long dst, __global float *scales,
                         long si) {
  float m = 0.0f;
  int finite = 1;
  for (int i = 0; i < d; i++) {
    const float v = LD1(x, src + i);
    finite &= isfinite(v);
    m = fmax(m, fabs(v));
  }
  const float s = row_scale(m);
  const int keep = finite && s >= FLT_MIN;
  const float sd = keep ? s : 1.0f;
  const float h = 0.5f * sd;
  for (int i = 0; i < d; i++) {
    const float v = LD1(x, src + i);
    float r = rint(v / sd);
    /* the exact remainder of v - r * sd says whether the division's
     * rounding put r one step off the nearest (even on a tie) */
    const float e = fma(-r, sd, v);
    const float half_r = 0.5f * r;
    const int odd = rint(half_r) != half_r;
    r += (e > h || (e == h && odd)) ? 1.0f : 0.0f;
    r -= (e < -h || (e == -h && odd)) ? 1.0f : 0.0f;
    r = keep ? clamp(r, -127.0f, 127.0f) : 0.0f;
    q[dst + i] = convert_char(r);
  }
  scales[si] = !finite ? NAN : keep ? s : 0.0f;
}
#endif

/* One row of width d (from BSHD rows at src) into the cache row dst. */
inline void write_row(__global const raw_t *x, long src, int d,
                      __global cache_t *c, long dst, __global float *scales,
                      long si) {
#if I8
  quantize_row((__global const stor_t *)x, src * d, d, c, dst * d, scales, si);
#else
  (void)scales;
  (void)si;
  for (int i = 0; i < d; i++)
    c[dst * d + i] = x[src * d + i];
#endif
}

/* Global size (n_q * hkv, batch).  A length above the table's capacity is
 * clamped to it and a page outside the pool skipped (only an unchecked
 * call can pass either); a position below 0 is not written. */
__kernel void
paged_append(__global const raw_t *k_new, __global const raw_t *v_new,
             __global const int *block_table, __global const int *kv_lens,
             __global cache_t *k_cache, __global cache_t *v_cache,
             __global float *k_scale, __global float *v_scale, int n_q, int hkv,
             int page_size, int max_blocks, int num_blocks) {
  const int tc = get_global_id(0);
  const int b = get_global_id(1);
  if (tc >= n_q * hkv)
    return;
  const int t = tc / hkv, c = tc - t * hkv;
  const long len = min((long)kv_lens[b], (long)max_blocks * page_size);
  const long p = len - n_q + t;
  if (p < 0)
    return;
  const int page = block_table[(long)b * max_blocks + p / page_size];
  if (page < 0 || page >= num_blocks)
    return;
  const long row = ((long)page * page_size + p % page_size) * hkv + c;
  const long src = ((long)b * n_q + t) * hkv + c;
  write_row(k_new, src, DK, k_cache, row, k_scale, row);
  write_row(v_new, src, DV, v_cache, row, v_scale, row);
}
