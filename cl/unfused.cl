/* unfused.cl - the softmax of the unfused prefill baseline of `clattn
 * bench` (host/src/family/prefill_unfused.c): CLBlast computes the logits
 * S = Q K^T of every (batch, query head) as rows of length m, this kernel
 * turns each row into probabilities in place, and CLBlast computes P V.
 *
 * One work-item per row r; its query is i = r % n, and with the causal
 * mask it sees keys t <= m - n + i (the reference's bottom-right
 * alignment); a row that sees none is all zeros.  scale is applied to the
 * logits (softmax(scale * s)). */
__kernel void softmax_rows(__global float *s, int n, int m, float scale,
                           int causal) {
  size_t row = get_global_id(0);
  int i = (int)(row % (size_t)n);
  int lim = causal ? min(m, m - n + i + 1) : m;
  __global float *r = s + row * (size_t)m;
  int t;
  if (lim <= 0) {
    for (t = 0; t < m; t++)
      r[t] = 0.0f;
    return;
  }
  float16 mv = (float16)(-INFINITY);
  for (t = 0; t + 16 <= lim; t += 16)
    mv = fmax(mv, vload16(0, r + t));
  float8 m8 = fmax(mv.lo, mv.hi);
  float4 m4 = fmax(m8.lo, m8.hi);
  float mx = fmax(fmax(m4.x, m4.y), fmax(m4.z, m4.w));
  for (; t < lim; t++)
    mx = fmax(mx, r[t]);
  float16 sv = (float16)(0.0f);
  for (t = 0; t + 16 <= lim; t += 16) {
    float16 e = exp((vload16(0, r + t) - mx) * scale);
    vstore16(e, 0, r + t);
    sv += e;
  }
  float8 s8 = sv.lo + sv.hi;
  float4 s4 = s8.lo + s8.hi;
  float sum = (s4.x + s4.y) + (s4.z + s4.w);
  for (; t < lim; t++) {
    float e = exp((r[t] - mx) * scale);
    r[t] = e;
    sum += e;
  }
  float inv = 1.0f / sum;
  for (t = 0; t + 16 <= lim; t += 16)
    vstore16(vload16(0, r + t) * inv, 0, r + t);
  for (; t < lim; t++)
    r[t] *= inv;
  for (; t < m; t++)
    r[t] = 0.0f;
}
