/* paged_decode.cl - one query per sequence against a paged KV cache
 * (FlashAttention-2's flash_attn_with_kvcache layout, clattn.h).
 *
 * The pages a sequence needs are cut into S splits of whole pages at run
 * time (each split an equal share of the pages that hold visible keys);
 * each split produces, for every query head of its KV group, a normalised
 * partial output and its log-sum-exp (log2 units), and a combine kernel
 * merges the splits (flash-decoding).  With S == 1 the split kernel writes
 * the output directly (DIRECT).  The G query heads of a KV group are
 * processed together, so each K/V element is read once per step.
 *
 * Compile-time parameters (-D):
 *   DK, DV, G        head dims; query heads per KV head
 *   VWK, VWV         vector widths dividing DK and DV
 *   PAGE             positions a page (a power of two, 1 .. 256)
 *   KB               keys a block (a power of two dividing PAGE)
 *   CACHE_I8         1: the cache holds int8 with float32 scales per
 *                    (position, KV head); 0: the cache is in DTYPE
 *   DIRECT           1: write o instead of partials
 *   WINDOW, SOFTCAP, ALIBI, SINKS  the attention options (cl/common.cl);
 *                    the query sits at position L - 1
 *
 * A page index outside [0, num_blocks) makes its keys invisible (never
 * read), and a length is clamped to max_blocks * PAGE: the kernels stay in
 * the pool whatever the table holds (the call checks it unless the caller
 * waived that). */
#ifndef DK
#define DK 64
#endif
#ifndef DV
#define DV 64
#endif
#ifndef G
#define G 1
#endif
#ifndef VWK
#define VWK 1
#endif
#ifndef VWV
#define VWV 1
#endif
#ifndef PAGE
#define PAGE 16
#endif
#ifndef KB
#define KB 16
#endif
#ifndef CACHE_I8
#define CACHE_I8 0
#endif
#ifndef DIRECT
#define DIRECT 0
#endif
#if PAGE % KB != 0
#error "KB must divide PAGE"
#endif

#define NK (DK / VWK)
#define NV (DV / VWV)
typedef FLOATW(VWK) kfloat;
typedef FLOATW(VWV) vfloat;

/* The cache's element type and its loads of W elements as floats (an int8
 * cache's are the stored integers: the scales are applied per key). */
#if CACHE_I8
typedef char cstor_t;
#define LDC(W, p, off) CAT(LDC8_, W)(p, off)
#define LDC8_1(p, off) convert_float((p)[off])
#define LDC8_2(p, off) convert_float2(vload2(0, (p) + (off)))
#define LDC8_4(p, off) convert_float4(vload4(0, (p) + (off)))
#define LDC8_8(p, off) convert_float8(vload8(0, (p) + (off)))
#define LDC8_16(p, off) convert_float16(vload16(0, (p) + (off)))
#define CSCALE(s, i) ((s)[i])
#else
typedef stor_t cstor_t;
#define LDC(W, p, off) LDW(W, p, off)
#define CSCALE(s, i) 1.0f
#endif

/* The log-sum-exp (log2 units) a split reports for a row with running
 * maximum m and sum l: -inf when it has no visible key; PD_ALL_NEG_INF
 * when they all score -inf (weighs 0 beside a finite split and makes the
 * row NaN where every split is so, clattn.h's non-finite inputs); NaN when
 * l is. */
#define PD_ALL_NEG_INF (-FLT_MAX)
inline float pd_split_lse(float m, float l, int visible) {
  if (!visible)
    return -INFINITY;
  return l == 0.0f ? PD_ALL_NEG_INF : m + log2(l);
}

/* Split s of S: the pages [x, y) of a sequence whose visible keys are
 * [lo, L), in equal shares of whole pages. */
inline int2 pd_split_pages(int lo, int L, int s, int S) {
  const int fp = lo / PAGE, np = (L + PAGE - 1) / PAGE;
  const int per = (np - fp + S - 1) / S;
  const int pb = fp + s * per;
  return (int2)(pb, min(np, pb + per));
}

/* Software prefetch of the first rows (up to 32) of head c in a page,
 * K and V: a page's rows lie apart from the previous page's (the table is
 * any permutation), where the hardware's stream prefetchers lose the
 * stream.  Native CPU compilers (PoCL) lower __builtin_prefetch to a
 * prefetch instruction, PoCL's prefetch() does nothing; SPIR-V compilers
 * get the OpenCL builtin.  Prefetches are not loads (the model counts
 * none). */
#if defined(__x86_64__) || defined(__aarch64__)
#define PD_PREFETCH(p) __builtin_prefetch((p), 0, 2)
#else
/* as bytes: prefetch() has no overload for half pointers without
 * cl_khr_fp16, and a call on one is ambiguous (NVIDIA) */
#define PD_PREFETCH(p) prefetch((const __global uchar *)(p), 64)
#endif
#define PD_LINE (64 / (int)sizeof(cstor_t)) /* elements a 64-byte line */
#define PD_PF_ROWS (PAGE < 32 ? PAGE : 32)
inline void pd_prefetch_page(__global const cstor_t *kc,
                             __global const cstor_t *vc,
                             __global const float *ksc,
                             __global const float *vsc, int page, int hkv,
                             int c) {
  for (int t = 0; t < PD_PF_ROWS; t++) {
    const long r = ((long)page * PAGE + t) * hkv + c;
    for (int e = 0; e < DK; e += PD_LINE)
      PD_PREFETCH(kc + r * DK + e);
    for (int e = 0; e < DV; e += PD_LINE)
      PD_PREFETCH(vc + r * DV + e);
#if CACHE_I8
    PD_PREFETCH(ksc + r);
    PD_PREFETCH(vsc + r);
#endif
  }
  (void)ksc;
  (void)vsc;
}

/* One block of NT_ keys (KB for a full block: constant trip counts that
 * the compiler unrolls) at t0 of a page whose row of position t is
 * prow + t: the G heads' scores, their online-softmax step, then each V
 * row read once and added to the G heads' accumulators. */
#define PD_BLOCK(NT_)                                                          \
float sc[G * KB];                                                             \
for (int t = 0; t < (NT_); t++) {                                             \
  const long r = (prow + t0 + t) * hkv + c;                                   \
  kfloat kr[NK];                                                              \
  _Pragma("unroll")                                                           \
  for (int j = 0; j < NK; j++)                                                \
    kr[j] = LDC(VWK, kc, r * DK + j * VWK);                                   \
  const float ks = CSCALE(ksc, r);                                            \
  _Pragma("unroll")                                                           \
  for (int h = 0; h < G; h++) {                                               \
    kfloat dot = (kfloat)(0.0f);                                              \
    _Pragma("unroll")                                                         \
    for (int j = 0; j < NK; j++)                                              \
      dot = fma(qv[h * NK + j], kr[j], dot);                                  \
    sc[h * KB + t] = opt_logit(HSUMW(VWK, dot) * ks, softcap2, sl2[h],        \
                               pos, t0 + t);                                  \
  }                                                                           \
}                                                                             \
_Pragma("unroll")                                                             \
for (int h = 0; h < G; h++) {                                                 \
  float tmax = -INFINITY;                                                     \
  for (int t = 0; t < (NT_); t++)                                             \
    tmax = max(tmax, sc[h * KB + t]);                                         \
  const float mnew = max(m[h], tmax);                                         \
  const float mref = softmax_ref(mnew);                                       \
  const float alpha = exp2s1(m[h] - mref);                                    \
  float psum = 0.0f;                                                          \
  if ((NT_) % 16 == 0) {                                                      \
    /* a full block 16 keys to a vector */                                    \
    float16 ps = (float16)(0.0f);                                             \
    for (int t = 0; t < (NT_); t += 16) {                                     \
      const float16 e = exp2s16(vload16(0, sc + h * KB + t) - mref);          \
      vstore16(e, 0, sc + h * KB + t);                                        \
      ps += e;                                                                \
    }                                                                         \
    psum = hsum16(ps);                                                        \
  } else {                                                                    \
    for (int t = 0; t < (NT_); t++) {                                         \
      const float e = exp2s1(sc[h * KB + t] - mref);                          \
      sc[h * KB + t] = e;                                                     \
      psum += e;                                                              \
    }                                                                         \
  }                                                                           \
  l[h] = alpha * l[h] + psum;                                                 \
  m[h] = mnew;                                                                \
  _Pragma("unroll")                                                           \
  for (int j = 0; j < NV; j++)                                                \
    acc[h * NV + j] *= alpha;                                                 \
}                                                                             \
for (int t = 0; t < (NT_); t++) {                                             \
  const long r = (prow + t0 + t) * hkv + c;                                   \
  const float vs = CSCALE(vsc, r);                                            \
  _Pragma("unroll")                                                           \
  for (int j = 0; j < NV; j++) {                                              \
    const vfloat vv = LDC(VWV, vc, r * DV + j * VWV);                         \
    _Pragma("unroll")                                                         \
    for (int h = 0; h < G; h++)                                               \
      acc[h * NV + j] = fma((vfloat)(sc[h * KB + t] * vs), vv,                \
                            acc[h * NV + j]);                                 \
  }                                                                           \
}

/* One work-item a split of a (sequence, KV head).  Per block of KB keys of
 * a page: the G heads' scores, their online-softmax step, then each V row
 * read once and added to the G heads' accumulators.
 * Global size (S rounded up to the work-group, batch * hkv), local
 * (wg, 1). */
__kernel void paged_decode_split(
    __global const stor_t *q, __global const cstor_t *kc,
    __global const cstor_t *vc, __global const float *ksc,
    __global const float *vsc, __global const int *table,
    __global const int *lens, __global stor_t *o, __global float *opart,
    __global float *lse, int hkv, int num_blocks, int max_blocks, int S,
    float scale_log2, OPT_ARGS) {
  const int s = get_global_id(0);
  const int bc = get_global_id(1);
  if (s >= S)
    return;
  const int b = bc / hkv, c = bc - b * hkv;
  const int L = clamp(lens[b], 0, max_blocks * PAGE);
  const int pos = L - 1; /* the query's position */
  const int lo = L > 0 ? key_start(pos, window) : 0;
  const int2 pages = pd_split_pages(lo, L, s, S);
  const long row0 = (long)bc * G; /* the group's first query row */
  __global const int *tab = table + (long)b * max_blocks;

  kfloat qv[G * NK];
  for (int i = 0; i < G * NK; i++)
    qv[i] = LDW(VWK, q, row0 * DK + i * VWK) * scale_log2;
  float m[G], l[G], sl2[G];
  for (int h = 0; h < G; h++) {
#if DIRECT
    m[h] = sink_logit2(sinks, c * G + h);
#else
    m[h] = -INFINITY;
#endif
    l[h] = sink_sum(m[h]);
    sl2[h] = alibi_slope2(alibi, c * G + h);
  }
  vfloat acc[G * NV];
  for (int i = 0; i < G * NV; i++)
    acc[i] = (vfloat)(0.0f);
  int visible = 0;

  /* each table entry is read once, a page ahead: the next page's first
   * rows are requested before this page's keys are scored */
  int next = pages.x < pages.y ? tab[pages.x] : -1;
  for (int pg = pages.x; pg < pages.y; pg++) {
    const int page = next;
    next = pg + 1 < pages.y ? tab[pg + 1] : -1;
    if (next >= 0 && next < num_blocks)
      pd_prefetch_page(kc, vc, ksc, vsc, next, hkv, c);
    if (page < 0 || page >= num_blocks)
      continue; /* unchecked garbage: its keys are invisible */
    const int tlo = max(lo, pg * PAGE), thi = min(L, pg * PAGE + PAGE);
    visible |= thi > tlo;
    /* the cache row of position t is prow + t */
    const long prow = (long)page * PAGE - (long)pg * PAGE;
    for (int t0 = tlo; t0 < thi; t0 += KB) {
      const int nt = min(KB, thi - t0);
      if (nt == KB) {
        PD_BLOCK(KB)
      } else {
        PD_BLOCK(nt)
      }
    }
  }

  for (int h = 0; h < G; h++) {
    const long row = row0 + h;
#if DIRECT
    const float inv = softmax_inv(l[h], visible);
    for (int j = 0; j < NV; j++)
      STW(VWV, acc[h * NV + j] * inv, o, row * DV + j * VWV);
#else
    /* a row's 1 / l, else 0: the combine decides such a row by its lse */
    const float inv = l[h] > 0.0f ? 1.0f / l[h] : 0.0f;
    for (int j = 0; j < NV; j++)
      STF(VWV, acc[h * NV + j] * inv, opart,
          (row * S + s) * DV + j * VWV);
    lse[row * S + s] = pd_split_lse(m[h], l[h], visible);
#endif
  }
#if !DIRECT
  (void)o;
  (void)sinks;
#else
  (void)opart;
  (void)lse;
#endif
  (void)ksc;
  (void)vsc;
}

/* Merge the S split partials of each (sequence, query head) row:
 * o = sum_s w_s o_s with w_s = exp2(lse_s - max) / sum exp2(lse - max);
 * a row whose splits are all empty gives zeros, one whose visible keys all
 * score -inf NaN (pd_split_lse), a NaN split NaN.  A sink (SINKS) is one
 * more term of the sum that weighs no partial, added here once per row.
 * Global size (rows, NV); rows = batch * heads. */
__kernel void paged_decode_combine(__global const float *opart,
                                   __global const float *lse,
                                   __global stor_t *o, int rows, int S,
                                   int heads, OPT_ARGS) {
  const int row = get_global_id(0);
  const int w = get_global_id(1);
  (void)window;
  (void)softcap2;
  (void)alibi;
  if (row >= rows || w >= NV)
    return;
  __global const float *ls = lse + (long)row * S;
  const float sink2 = sink_logit2(sinks, row % heads);
  float lmax = sink2; /* -inf without a sink */
  int nan_split = 0;
  for (int s = 0; s < S; s++) {
    const float x = ls[s];
    lmax = max(lmax, x);
    nan_split |= isnan(x);
  }
  /* max() may drop a NaN (NVIDIA's does): a split that met a NaN logit
   * makes the row NaN, as a single pass would (clattn.h, non-finite
   * inputs) */
  if (nan_split)
    lmax = NAN;
  vfloat sum = (vfloat)(0.0f);
  float z = 0.0f;
  if (lmax != -INFINITY) {
    for (int s = 0; s < S; s++) {
      const float ws = exp2s1(ls[s] - lmax);
      z += ws;
      sum = fma((vfloat)(ws),
                LDF(VWV, opart, ((long)row * S + s) * DV + w * VWV), sum);
    }
#if SINKS
    z += exp2s1(sink2 - lmax);
#endif
  }
  const float inv = lmax == PD_ALL_NEG_INF ? NAN : (z > 0.0f ? 1.0f / z : 0.0f);
  STW(VWV, sum * inv, o, (long)row * DV + w * VWV);
}
