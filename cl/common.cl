/* common.cl - prelude of every clattn program: storage types and helpers.
 *
 * DTYPE selects the storage of q, k, v, caches and outputs:
 *   0 float32, 1 float16 (vload_half/vstore_half: no cl_khr_fp16 needed),
 *   2 bfloat16 (stored as ushort, round-to-nearest-even on store).
 * Arithmetic is always float32.  Scores are kept in log2 units (q is
 * pre-multiplied by scale * log2(e)) so the softmax uses exp2. */
#ifndef DTYPE
#define DTYPE 0
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#if DTYPE == 0
typedef float stor_t;
#define LD1(p, off) ((p)[off])
#define LDN(N, p, off) CAT(vload, N)(0, (p) + (off))
#define ST1(x, p, off) ((p)[off] = (x))
#define STN(N, x, p, off) CAT(vstore, N)((x), 0, (p) + (off))
#elif DTYPE == 1
typedef half stor_t;
#define LD1(p, off) vload_half((off), (p))
#define LDN(N, p, off) CAT(vload_half, N)(0, (p) + (off))
#define ST1(x, p, off) vstore_half_rte((x), (off), (p))
#define STN(N, x, p, off) CAT(CAT(vstore_half, N), _rte)((x), 0, (p) + (off))
#elif DTYPE == 2
typedef ushort stor_t;
inline ushort bf16_pack1(float x) {
  uint u = as_uint(x);
  if (isnan(x))
    return (ushort)((u >> 16) | 0x40u);
  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
#define BF16_PACK_DEF(N)                                                       \
  inline CAT(ushort, N) CAT(bf16_pack, N)(CAT(float, N) x) {                   \
    CAT(uint, N) u = CAT(as_uint, N)(x);                                       \
    CAT(uint, N) r = (u + (CAT(uint, N))(0x7fffu) + ((u >> 16) & 1u)) >> 16;  \
    CAT(uint, N) nv = (u >> 16) | (CAT(uint, N))(0x40u);                      \
    r = select(r, nv, CAT(as_uint, N)(isnan(x)));                              \
    return CAT(convert_ushort, N)(r);                                          \
  }
BF16_PACK_DEF(2)
BF16_PACK_DEF(4)
BF16_PACK_DEF(8)
BF16_PACK_DEF(16)
#define LD1(p, off) as_float((uint)((p)[off]) << 16)
#define LDN(N, p, off)                                                         \
  CAT(as_float, N)(CAT(convert_uint, N)(CAT(vload, N)(0, (p) + (off))) << 16)
#define ST1(x, p, off) ((p)[off] = bf16_pack1(x))
#define STN(N, x, p, off) CAT(vstore, N)(CAT(bf16_pack, N)(x), 0, (p) + (off))
#else
#error "DTYPE must be 0 (float32), 1 (float16) or 2 (bfloat16)"
#endif

/* The storage type's bits, for raw copies (half values cannot be assigned
 * without cl_khr_fp16). */
#if DTYPE == 0
typedef uint raw_t;
#else
typedef ushort raw_t;
#endif

/* Width-generic loads and stores of W consecutive elements as floatW
 * (W in 1, 2, 4, 8, 16; W = 1 gives a scalar float). */
#define LDW(W, p, off) CAT(LDW_, W)(p, off)
#define LDW_1(p, off) LD1(p, off)
#define LDW_2(p, off) LDN(2, p, off)
#define LDW_4(p, off) LDN(4, p, off)
#define LDW_8(p, off) LDN(8, p, off)
#define LDW_16(p, off) LDN(16, p, off)
#define STW(W, x, p, off) CAT(STW_, W)(x, p, off)
#define STW_1(x, p, off) ST1(x, p, off)
#define STW_2(x, p, off) STN(2, x, p, off)
#define STW_4(x, p, off) STN(4, x, p, off)
#define STW_8(x, p, off) STN(8, x, p, off)
#define STW_16(x, p, off) STN(16, x, p, off)
/* The same for float32 buffers (scratch), whatever DTYPE is. */
#define LDF(W, p, off) CAT(LDF_, W)(p, off)
#define LDF_1(p, off) ((p)[off])
#define LDF_2(p, off) vload2(0, (p) + (off))
#define LDF_4(p, off) vload4(0, (p) + (off))
#define LDF_8(p, off) vload8(0, (p) + (off))
#define LDF_16(p, off) vload16(0, (p) + (off))
#define STF(W, x, p, off) CAT(STF_, W)(x, p, off)
#define STF_1(x, p, off) ((p)[off] = (x))
#define STF_2(x, p, off) vstore2((x), 0, (p) + (off))
#define STF_4(x, p, off) vstore4((x), 0, (p) + (off))
#define STF_8(x, p, off) vstore8((x), 0, (p) + (off))
#define STF_16(x, p, off) vstore16((x), 0, (p) + (off))
#define FLOATW(W) CAT(FLOATW_, W)
#define FLOATW_1 float
#define FLOATW_2 float2
#define FLOATW_4 float4
#define FLOATW_8 float8
#define FLOATW_16 float16

/* Horizontal reductions.  Halves are built from named elements rather than
 * .lo/.hi: the compiled code is the same shuffle, but Oclgrind 21.10's
 * uninitialised-value tracking mislabels .hi of a vector as undefined. */
inline float4 lo8(float8 x) { return (float4)(x.s0, x.s1, x.s2, x.s3); }
inline float4 hi8(float8 x) { return (float4)(x.s4, x.s5, x.s6, x.s7); }
inline float8 lo16(float16 x) {
  return (float8)(x.s0, x.s1, x.s2, x.s3, x.s4, x.s5, x.s6, x.s7);
}
inline float8 hi16(float16 x) {
  return (float8)(x.s8, x.s9, x.sa, x.sb, x.sc, x.sd, x.se, x.sf);
}
inline float hsum1(float x) { return x; }
inline float hsum2(float2 x) { return x.s0 + x.s1; }
inline float hsum4(float4 x) { return (x.s0 + x.s1) + (x.s2 + x.s3); }
inline float hsum8(float8 x) { return hsum4(lo8(x) + hi8(x)); }
inline float hsum16(float16 x) { return hsum8(lo16(x) + hi16(x)); }
/* Maxima use max(), not fmax(): whether max() keeps or drops a NaN score
 * does not matter, because the NaN itself reaches exp2s below, which
 * propagates it into the row's sum (clattn.h, non-finite inputs); fmax's
 * NaN handling (a compare and a blend per operation on x86) buys nothing. */
inline float hmax4(float4 x) { return max(max(x.s0, x.s1), max(x.s2, x.s3)); }
inline float hmax8(float8 x) { return hmax4(max(lo8(x), hi8(x))); }
inline float hmax16(float16 x) { return hmax8(max(lo16(x), hi16(x))); }
#define HSUMW(W, x) CAT(hsum, W)(x)

/* 2^x for the softmax, where x <= 0 (a score minus the running maximum).
 * Cephes' exp2f polynomial on [-0.5, 0.5] (relative error below 2e-7),
 * scaled by building the power of two from its exponent bits; x < -126.5,
 * including -inf, gives exactly 0, and NaN (a NaN score, or +inf - +inf)
 * gives NaN: the clamp is a select that keeps a NaN, where max() may drop
 * it (on x86 both are one maxps).  Written out so that it vectorises:
 * library exp2 calls are scalarised by some compilers.  x is rounded to
 * the nearest integer by adding and subtracting 1.5 * 2^23 (exact in
 * IEEE arithmetic, which the kernels keep: no fast-math options), whose
 * sum also carries that integer in its low bits: two additions where
 * floor() becomes a dozen instructions on CPUs without a native one in
 * the compiler's library. */
#define EXP2_DEF(N, FT, IT, ASI, ASF)                                          \
  inline FT CAT(exp2s, N)(FT x) {                                              \
    const FT xc = select(x, (FT)(-127.0f), x < (FT)(-127.0f));                 \
    const FT t = xc + (FT)(12582912.0f);                                       \
    const FT f = xc - (t - (FT)(12582912.0f));                                 \
    FT p = (FT)(1.535336188319500e-4f);                                        \
    p = fma(p, f, (FT)(1.339887440266574e-3f));                                \
    p = fma(p, f, (FT)(9.618437357674640e-3f));                                \
    p = fma(p, f, (FT)(5.550332471162809e-2f));                                \
    p = fma(p, f, (FT)(2.402264791363012e-1f));                                \
    p = fma(p, f, (FT)(6.931472028550421e-1f));                                \
    p = fma(p, f, (FT)(1.0f));                                                 \
    const IT e = max(ASI(t) - (IT)(0x4B400000 - 127), (IT)(0));                \
    return p * ASF(e << 23);                                                   \
  }
EXP2_DEF(1, float, int, as_int, as_float)
EXP2_DEF(4, float4, int4, as_int4, as_float4)
EXP2_DEF(8, float8, int8, as_int8, as_float8)
EXP2_DEF(16, float16, int16, as_int16, as_float16)

/* Keys visible to query position i of n when L keys are valid: t < limit
 * (with CAUSAL, the queries are the last n positions). */
inline int key_limit(int L, int n, int i) {
#if CAUSAL
  return min(L, L - n + i + 1);
#else
  (void)n;
  (void)i;
  return L;
#endif
}

/* The attention options (clattn.h, "Attention options"), each compiled in
 * only where the call sets it (-D WINDOW, SOFTCAP, ALIBI, SINKS = 1).  The
 * kernels that take them end their arguments with OPT_ARGS: the window W,
 * the soft-cap C log2(e), and float32 [heads_q] ALiBi slopes and sinks
 * (NULL when not set).  Logits are in log2 units, as everywhere here. */
#ifndef WINDOW
#define WINDOW 0
#endif
#ifndef SOFTCAP
#define SOFTCAP 0
#endif
#ifndef ALIBI
#define ALIBI 0
#endif
#ifndef SINKS
#define SINKS 0
#endif
#define OPT_ARGS                                                               \
  int window, float softcap2, __global const float *alibi,                     \
      __global const float *sinks

/* The first key a row at position pos sees: with a window, the W most
 * recent positions up to its own. */
inline int key_start(int pos, int window) {
#if WINDOW
  return max(0, pos - window + 1);
#else
  (void)pos;
  (void)window;
  return 0;
#endif
}

/* Query head h's ALiBi slope in log2 units (0 without ALiBi). */
inline float alibi_slope2(__global const float *alibi, int h) {
#if ALIBI
  return alibi[h] * M_LOG2E_F;
#else
  (void)alibi;
  (void)h;
  return 0.0f;
#endif
}

/* C tanh(x / C) for the soft-cap C (softcap2, in log2 units like x), as
 * sign(x) C (1 - e) / (1 + e) with e = 2^(-2 log2(e) |x| / C) from the
 * softmax's own exp2s: the library's tanh is a slow call on CPUs, and this
 * one is an exp2 the model counts.  NaN stays NaN; +-inf gives +-C. */
#define SOFTCAP_DEF(N, FT)                                                     \
  inline FT CAT(softcap, N)(FT x, float softcap2) {                            \
    const FT e = CAT(exp2s, N)(fabs(x) * (FT)(-2.0f * M_LOG2E_F / softcap2));  \
    return copysign((FT)(softcap2) * (((FT)(1.0f) - e) / ((FT)(1.0f) + e)),   \
                    x);                                                        \
  }
SOFTCAP_DEF(1, float)
SOFTCAP_DEF(16, float16)

/* A logit x of key t for a row at position pos, soft-capped then biased
 * (ALiBi: - slope |pos - t|, one fma); x itself without those options. */
inline float opt_logit(float x, float softcap2, float slope2, int pos, int t) {
#if SOFTCAP
  x = softcap1(x, softcap2);
#else
  (void)softcap2;
#endif
#if ALIBI
  x = fma(-slope2, (float)abs(pos - t), x);
#else
  (void)slope2;
  (void)pos;
  (void)t;
#endif
  return x;
}
/* The same for 16 keys t0 .. t0 + 15. */
inline float16 opt_logit16(float16 x, float softcap2, float slope2, int pos,
                           int t0) {
#if SOFTCAP
  x = softcap16(x, softcap2);
#else
  (void)softcap2;
#endif
#if ALIBI
  /* the distances in float (exact below 2^24): integer vector arithmetic
   * and its conversion cost CPUs more than the bias's fma */
  const float16 dist =
      fabs((float16)((float)(t0 - pos)) +
           (float16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  x = fma((float16)(-slope2), dist, x);
#else
  (void)slope2;
  (void)pos;
  (void)t0;
#endif
  return x;
}

/* Query head h's sink logit in log2 units (-inf: none), and the share it
 * starts a row's softmax sum with: a row's running maximum starts at the
 * sink, its sum at e^(sink - sink) = 1, so the sink joins the denominator
 * once and weighs no value. */
inline float sink_logit2(__global const float *sinks, int h) {
#if SINKS
  return sinks[h] * M_LOG2E_F;
#else
  (void)sinks;
  (void)h;
  return -INFINITY;
#endif
}
inline float sink_sum(float sink2) { return sink2 == -INFINITY ? 0.0f : 1.0f; }

/* Online-softmax step guards (spec 8.1): the reference point of a row whose
 * keys so far are all masked is 0, so exp2(-inf - 0) = 0 and no NaN arises. */
inline float softmax_ref(float m) { return m == -INFINITY ? 0.0f : m; }
inline float16 softmax_ref16(float16 m) {
  return select(m, (float16)(0.0f), m == (float16)(-INFINITY));
}

/* The factor 1 / l that normalises a row whose softmax sum is l (NaN when
 * a visible logit was NaN or +inf), given whether the row sees any key:
 * a row with no visible key gives 0 (its output is zeros), a row whose
 * visible logits are all -inf (l == 0) or that met a NaN gives NaN, as
 * PyTorch does (clattn.h, non-finite inputs). */
inline float softmax_inv(float l, int visible) {
  return l > 0.0f ? 1.0f / l : (visible ? NAN : 0.0f);
}

/* One online-softmax step for one row over nv float16 vectors of scores s
 * (log2 units, masked = -inf) whose maximum is smax: updates the running
 * maximum *m and sum *l, writes the probabilities exp2(s - ref) to p, and
 * returns alpha, the factor that rescales the row's accumulators. */
inline float online_softmax16(const float16 *s, int nv, float smax,
                              float *m, float *l, float *p) {
  const float mnew = max(*m, smax);
  const float mref = softmax_ref(mnew);
  const float alpha = exp2s1(*m - mref);
  float16 psum = (float16)(0.0f);
  for (int u = 0; u < nv; u++) {
    const float16 e = exp2s16(s[u] - (float16)(mref));
    psum += e;
    vstore16(e, u, p);
  }
  *l = alpha * *l + hsum16(psum);
  *m = mnew;
  return alpha;
}
