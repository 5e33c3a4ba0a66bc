/* super_values.cl - Super attention's values (spec 7, Decision 7):
 *   V'[b, t, c] = sum_s W_a[t, s] x[b, s, c]
 * for rows t = pos0 .. pos0+n-1, s over 0 .. t (CAUSAL: W_a's upper
 * triangle is never loaded, so it may hold anything, NaN included) or over
 * 0 .. pos0+n-1.  Float32 only (W_a is float32 like the mixing matrices).
 *
 * Register tiling: one work-item computes R rows of one VW-wide vector of
 * channels (VW divides head_dim, so a vector never straddles two heads);
 * each x vector it loads feeds the R rows' accumulators, each W_a scalar
 * one FMA of VW lanes.  Grid: dim 0 the channel vectors (padded to the
 * work-group), dim 1 the blocks of R rows, dim 2 the sequences.
 *
 * Defines: VW (1, 2, 4, 8 or 16), R (rows per work-item), CAUSAL. */
#ifndef VW
#define VW 1
#endif
#ifndef R
#define R 4
#endif
#ifndef CAUSAL
#define CAUSAL 1
#endif

typedef FLOATW(VW) vec_t;

__kernel void super_values(__global const float *restrict w_a,
                           __global const float *restrict x,
                           __global float *restrict v, const int n,
                           const int pos0, const int max_len, const int nvec,
                           const int head_vecs, const long xsb,
                           const long xss, const long xsh, const long vsb,
                           const long vss, const long vsh) {
  const int cv = (int)get_global_id(0);
  if (cv >= nvec)
    return; /* padding of the last work-group */
  const int h = cv / head_vecs;
  const int d = (cv - h * head_vecs) * VW;
  const long b = (long)get_global_id(2);
  const int t0 = pos0 + (int)get_global_id(1) * R;
  const int nr = min(R, pos0 + n - t0); /* rows of this block */
  __global const float *xp = x + b * xsb + h * xsh + d;
  __global float *vp = v + b * vsb + h * vsh + d;
  __global const float *wp = w_a + (long)t0 * max_len;
  const long ldw = max_len;
  vec_t acc[R];
#pragma unroll
  for (int r = 0; r < R; r++)
    acc[r] = (vec_t)(0.0f);
#if CAUSAL
  /* positions 0..t0 are visible to every row of the block; t0+1 .. the
   * last row are the triangle */
  const int full = t0 + 1;
  const int end = t0 + nr;
#else
  const int full = pos0 + n;
  const int end = full;
#endif
  for (int s = 0; s < full; s++) {
    const vec_t xv = LDF(VW, xp, s * xss);
#pragma unroll
    for (int r = 0; r < R; r++)
      if (r < nr)
        acc[r] = fma((vec_t)(wp[r * ldw + s]), xv, acc[r]);
  }
  /* the triangle: row r sees s only when s <= t0 + r; the masked W_a
   * entries are skipped, not loaded and multiplied by 0, since 0 * NaN is
   * NaN (empty when not CAUSAL) */
  for (int s = full; s < end; s++) {
    const vec_t xv = LDF(VW, xp, s * xss);
#pragma unroll
    for (int r = 0; r < R; r++)
      if (r < nr && t0 + r >= s)
        acc[r] = fma((vec_t)(wp[r * ldw + s]), xv, acc[r]);
  }
#pragma unroll
  for (int r = 0; r < R; r++)
    if (r < nr)
      STF(VW, acc[r], vp, (t0 + r) * vss);
}
