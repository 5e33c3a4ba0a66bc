/* th_decode.cl - talking-heads decode over a KV cache, split-KV and exact
 * (clattn_talking_heads_decode); the append of its K/V rows is decode.cl's
 * kv_append, with its own key and value head counts.
 *
 * P_w mixes normalised weights, so a split's output cannot be rescaled
 * after the fact: the softmax statistics of every logit head are combined
 * over all splits first.  Three launches, each over (split, sequence):
 *   th_logits  L[t][c] = sum_a P_l[a,c] scale q_a.k_a(t) into a float32
 *              scratch, and the split's (max, sum of 2^(L - max)) per c;
 *   th_values  the global (mu_c, lambda_c) from every split's statistics,
 *              the exact weights, U[t][u] = sum_c P_w[c,u] w_c(t), and the
 *              split's share of o[u] = sum_t U[t][u] v_u(t);
 *   th_combine the sum of the splits' shares (skipped with one split).
 * K and V are each read once; the scratch holds h + h_v floats per key.
 * Logits are in log2 units (scale carries log2(e)), so the softmax uses
 * exp2.  With WINDOW (common.cl's attention options, the only one these
 * kernels take) the query at position L - 1 sees the window's keys alone,
 * t >= key_start(L - 1, window), and the splits divide those: split s
 * reads the chunk from key_start + s chunk on, none before the window (a
 * split past the sequence's last key reads nothing: its statistics are
 * those of no key, maximum -inf and sum 0). */

/* HK, H, HV: the three head counts; VH, VU: vector widths (1, 4, 8 or 16)
 * dividing H and HV; VWK, VWV: widths dividing DK and DV. */
#ifndef DK
#define DK 1
#endif
#ifndef DV
#define DV 1
#endif
#ifndef HK
#define HK 1
#endif
#ifndef H
#define H 1
#endif
#ifndef HV
#define HV 1
#endif
#ifndef VH
#define VH 1
#endif
#ifndef VU
#define VU 1
#endif
#ifndef VWK
#define VWK 1
#endif
#ifndef VWV
#define VWV 1
#endif
#ifndef DIRECT
#define DIRECT 0
#endif

#define NH (H / VH)
#define NU (HV / VU)
#define NK (DK / VWK)
#define NV (DV / VWV)
typedef FLOATW(VH) hfloat;
typedef FLOATW(VU) ufloat;
typedef FLOATW(VWK) kfloat;
typedef FLOATW(VWV) vfloat;
#define EXP2H CAT(exp2s, VH)

/* The keys [*t0, *t1) split s of a sequence of L valid keys reads: its
 * chunk of the visible keys, which start at the window's start. */
inline void split_keys(int L, int s, int chunk, int window, int *t0,
                       int *t1) {
  *t0 = key_start(L - 1, window) + s * chunk;
  *t1 = min(L, *t0 + chunk);
}

/* Global size (S rounded to the work-group, batch). */
__kernel void th_logits(__global const stor_t *q, __global const stor_t *k,
                        __global const int *lens, __global const float *p_l,
                        __global float *logit, __global float *stats, int cap,
                        int S, int chunk, float scale, long k_sb, long k_ss,
                        long k_sh, OPT_ARGS) {
  (void)softcap2;
  (void)alibi;
  (void)sinks;
  const int s = get_global_id(0), b = get_global_id(1);
  if (s >= S)
    return;
  int t0, t1;
  split_keys(clamp(lens[b], 0, cap), s, chunk, window, &t0, &t1);
  __global float *lg = logit + (long)b * cap * H;
  hfloat mx[NH];
  for (int n = 0; n < NH; n++)
    mx[n] = (hfloat)(-INFINITY);
  for (int t = t0; t < t1; t++) {
    float j[HK];
    for (int a = 0; a < HK; a++) {
      const long ko = b * k_sb + t * k_ss + a * k_sh;
      const long qo = ((long)b * HK + a) * DK;
      /* the scale multiplies q, not the dot, so that a logit that fits
       * in float32 does not overflow on the way (clattn.h) */
      kfloat acc = (kfloat)(0.0f);
      for (int w = 0; w < NK; w++)
        acc = fma(LDW(VWK, q, qo + w * VWK) * scale, LDW(VWK, k, ko + w * VWK),
                  acc);
      j[a] = HSUMW(VWK, acc);
    }
    for (int n = 0; n < NH; n++) {
      hfloat l = (hfloat)(0.0f);
      for (int a = 0; a < HK; a++)
        l = fma((hfloat)(j[a]), LDF(VH, p_l, a * H + n * VH), l);
      STF(VH, l, lg, (long)t * H + n * VH);
      mx[n] = max(mx[n], l);
    }
  }
  /* a second pass over the split's logits (just written, in cache) sums
   * against the final maximum: one exp2 a logit instead of two */
  hfloat sm[NH];
  for (int n = 0; n < NH; n++)
    sm[n] = (hfloat)(0.0f);
  for (int t = t0; t < t1; t++)
    for (int n = 0; n < NH; n++)
      sm[n] += EXP2H(LDF(VH, lg, (long)t * H + n * VH) - mx[n]);
  __global float *st = stats + ((long)b * S + s) * 2 * H;
  for (int n = 0; n < NH; n++) {
    STF(VH, mx[n], st, n * VH);
    STF(VH, sm[n], st, H + n * VH);
  }
}

/* Global size as th_logits. */
__kernel void th_values(__global const stor_t *v, __global const int *lens,
                        __global const float *p_w,
                        __global const float *logit,
                        __global const float *stats, __global float *uw,
                        __global stor_t *o, __global float *opart, int cap,
                        int S, int chunk, long v_sb, long v_ss, long v_sh,
                        OPT_ARGS) {
  (void)softcap2;
  (void)alibi;
  (void)sinks;
  const int s = get_global_id(0), b = get_global_id(1);
  if (s >= S)
    return;
  const int L = clamp(lens[b], 0, cap);
  int t0, t1;
  split_keys(L, s, chunk, window, &t0, &t1);
  /* every split's statistics give the exact (mu, 1/lambda) of each head;
   * a head whose keys are all absent (lens 0) gets mu 0 and 1/lambda 0 */
  __global const float *st = stats + (long)b * S * 2 * H;
  hfloat mu[NH], inv[NH];
  for (int n = 0; n < NH; n++) {
    hfloat m = (hfloat)(-INFINITY);
    for (int r = 0; r < S; r++)
      m = max(m, LDF(VH, st, r * 2 * H + n * VH));
    m = m == (hfloat)(-INFINITY) ? (hfloat)(0.0f) : m;
    hfloat lam = (hfloat)(0.0f);
    for (int r = 0; r < S; r++)
      lam = fma(LDF(VH, st, r * 2 * H + H + n * VH),
                EXP2H(LDF(VH, st, r * 2 * H + n * VH) - m), lam);
    mu[n] = m;
    /* softmax_inv lane by lane: NaN where the sequence has keys but lam
     * is 0 (all -inf) or NaN */
    inv[n] = lam > (hfloat)(0.0f)
                 ? (hfloat)(1.0f) / lam
                 : (hfloat)(L > 0 ? NAN : 0.0f);
  }
  __global const float *lg = logit + (long)b * cap * H;
  __global float *ub = uw + (long)b * cap * HV;
  /* U row by row: the weights of a key, then the P_w mix (rows of P_w
   * are contiguous in the value heads, so U is built by vectors of them) */
  for (int t = t0; t < t1; t++) {
    float w[H];
    for (int n = 0; n < NH; n++) {
      const hfloat e =
          EXP2H(LDF(VH, lg, (long)t * H + n * VH) - mu[n]) * inv[n];
#if VH == 1
      w[n] = e;
#else
      CAT(vstore, VH)(e, n, w);
#endif
    }
    for (int m = 0; m < NU; m++) {
      ufloat u = (ufloat)(0.0f);
      for (int c = 0; c < H; c++)
        u = fma((ufloat)(w[c]), LDF(VU, p_w, c * HV + m * VU), u);
      STF(VU, u, ub, (long)t * HV + m * VU);
    }
  }
  /* then one value head at a time: its accumulator stays in registers */
  for (int u = 0; u < HV; u++) {
    vfloat acc[NV];
    for (int x = 0; x < NV; x++)
      acc[x] = (vfloat)(0.0f);
    for (int t = t0; t < t1; t++) {
      const vfloat wt = (vfloat)(ub[(long)t * HV + u]);
      const long vo = b * v_sb + t * v_ss + u * v_sh;
      for (int x = 0; x < NV; x++)
        acc[x] = fma(wt, LDW(VWV, v, vo + x * VWV), acc[x]);
    }
    for (int x = 0; x < NV; x++) {
#if DIRECT
      STW(VWV, acc[x], o, ((long)b * HV + u) * DV + x * VWV);
#else
      STF(VWV, acc[x], opart, (((long)b * S + s) * HV + u) * DV + x * VWV);
#endif
    }
  }
}

/* o[b][u] = sum over splits of their shares.  Global size (batch * HV,
 * DV / VWV). */
__kernel void th_combine(__global const float *opart, __global stor_t *o,
                         int rows, int S) {
  const int row = get_global_id(0), x = get_global_id(1);
  if (row >= rows || x >= NV)
    return;
  const int b = row / HV, u = row - b * HV;
  vfloat sum = (vfloat)(0.0f);
  for (int s = 0; s < S; s++)
    sum += LDF(VWV, opart, (((long)b * S + s) * HV + u) * DV + x * VWV);
  STW(VWV, sum, o, (long)row * DV + x * VWV);
}
