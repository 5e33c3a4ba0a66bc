/* decode.cl - one query per sequence against a KV cache (flash-decoding).
 *
 * The cache range [0, L) of each (sequence, KV head) is cut into S splits of
 * `chunk` keys; each split produces, for every query head of the group, a
 * normalised partial output and its log-sum-exp (log2 units); a combine
 * kernel merges the splits (spec 8.3).  With S == 1 the split kernel writes
 * the output directly (DIRECT).  The G query heads of a KV group are
 * processed together, so each K/V element is read once per step.
 *
 * Compile-time parameters (-D), each with a default:
 *   DK, DV, G        head dims; query heads per KV head
 *   VWK, VWV         vector widths dividing DK and DV
 *   KB               keys per block (variant 1; a multiple of 16)
 *   LANES            variant 1: 1 to score the heads of two keys to a
 *                    vector (needs DK % 8 == 0 and G = 4 or a multiple of
 *                    8; the plan says when), 0 per head
 *   PVH              variant 1: query heads per P V pass after the first;
 *                    G (and G > 1): every pass takes all G heads over one
 *                    VWV-wide slice of the value dims (SLICES)
 *   PF               variant 1: 1 to prefetch the next block during the P V
 *                    passes after the first (needs G > 1, not SLICES), 0 not
 *                    to
 *   WG, KT, PAIRS    variant 2: work-items, keys per tile,
 *                    ceil(G * DV / WG) output elements per item
 *   DIRECT           1: write o instead of partials
 *   WINDOW, SOFTCAP, ALIBI, SINKS  the attention options (cl/common.cl):
 *                    the query sits at position L - 1; soft-cap and ALiBi
 *                    change each logit of the split kernels; a sink enters
 *                    the combine's log-sum-exp once per row, or the split
 *                    kernel's softmax where it writes o (DIRECT); with a
 *                    window the splits divide the visible keys (split_keys)
 */
#ifndef DK
#define DK 64
#endif
#ifndef DV
#define DV 64
#endif
#ifndef G
#define G 1
#endif
/* 1 divides every head dim: a program built without them (kv_append's
 * shares this file) still compiles everything; launches pass the widest
 * power of two up to 16 dividing DK and DV (clattn__vec_width) */
#ifndef VWK
#define VWK 1
#endif
#ifndef VWV
#define VWV 1
#endif
#ifndef KB
#define KB 16
#endif
#ifndef PF
#define PF 0
#endif
#ifndef PVH
#define PVH 1
#endif
#ifndef WG
#define WG 64
#endif
#ifndef KT
#define KT 32
#endif
#ifndef PAIRS
#define PAIRS ((G * DV + WG - 1) / WG)
#endif
#ifndef DIRECT
#define DIRECT 0
#endif
/* 1: V is K (one cache tensor, DK == DV: Efficient attention's X).  The
 * local kernel loads each tile once for both; the register kernel's V loads
 * hit L1, its K loads having read the same rows one block earlier. */
#ifndef KV_SAME
#define KV_SAME 0
#endif
#if KV_SAME && DK != DV
#error "KV_SAME needs DK == DV"
#endif

#define NKB (KB / 16)
#define NV (DV / VWV)
#define SLICES (PVH >= G && G > 1)
#if SLICES && PF
#error "PF needs P V passes by heads (PVH < G)"
#endif
typedef FLOATW(VWV) vfloat;

/* Write one finished (split of a) row: the output itself, or the partial
 * and its log-sum-exp for the combine kernel. */
/* The log-sum-exp (log2 units) a split reports for a row with running
 * maximum m and sum l over its keys [tb, te): -inf when it has none;
 * LSE_ALL_NEG_INF when they all score -inf, which weighs 0 beside any split
 * with a finite score and, where every split is so or empty, makes the
 * combine's row NaN (clattn.h, non-finite inputs); NaN when l is (a NaN or
 * +inf score).  A real log-sum-exp is never that low unless a logit is
 * -FLT_MAX in log2 units. */
#define LSE_ALL_NEG_INF (-FLT_MAX)
inline float split_lse(float m, float l, int visible) {
  if (!visible)
    return -INFINITY;
  return l == 0.0f ? LSE_ALL_NEG_INF : m + log2(l);
}

/* The factor of a row's accumulators: the output's softmax_inv with S == 1;
 * a partial's 1 / l, else 0 (the combine decides such a row from the lse,
 * and a NaN l has already made the accumulators NaN). */
inline float split_inv(float l, int visible) {
#if DIRECT
  return softmax_inv(l, visible);
#else
  (void)visible;
  return l > 0.0f ? 1.0f / l : 0.0f;
#endif
}

/* The keys [tb, te) that split s of S reads of a sequence with L valid
 * keys.  Without a window: the plan's chunk of `chunk` keys of the cache.
 * With WINDOW the S splits divide the visible keys [lo, L) at run time, in
 * chunks rounded up to `align` keys (a block or tile, so that only each
 * split's last block is partial), starting at lo itself: no split reads a
 * key outside the window, no block crosses its lower bound (nothing is
 * masked), and every split keeps a share of the work, where the plan's
 * static chunks would leave the splits before the window idle and one or
 * two splits doing it all (a GPU's work-groups, a CPU's cores).  The plan
 * sizes S for min(capacity, W) keys (host/src/family/plan.c). */
inline int2 split_keys(int L, int s, int S, int chunk, int align,
                       int window) {
#if WINDOW
  (void)chunk;
  const int lo = key_start(L - 1, window);
  const int per = ((L - lo + S - 1) / S + align - 1) / align * align;
  const int tb = lo + s * per;
  return (int2)(tb, min(L, tb + per));
#else
  (void)align;
  (void)window;
  const int tb = s * chunk;
  return (int2)(tb, min(L, tb + chunk));
#endif
}

/* The sink a split starts query head j's softmax with (log2 units): the
 * head's sink where the split writes o (DIRECT), else none: the combine
 * adds it once per row. */
inline float split_sink2(__global const float *sinks, int j) {
#if DIRECT
  return sink_logit2(sinks, j);
#else
  (void)sinks;
  (void)j;
  return -INFINITY;
#endif
}

inline void put_row_scalar(__global stor_t *o, __global float *opart,
                           __global float *lse, long row, int s, int S,
                           int d, float val) {
#if DIRECT
  (void)opart;
  (void)lse;
  (void)s;
  (void)S;
  ST1(val, o, row * DV + d);
#else
  (void)o;
  (void)lse;
  opart[(row * S + s) * DV + d] = val;
#endif
}

/* Variant 1's two ways of scoring a block and running its softmax.
 *
 * Per head ("rows"): each key's G dot products are summed horizontally one
 * by one; the scores are kept head-major, sc[h * KB + t], padded to KB
 * with -inf, and the softmax runs over each head's row 16 keys to a vector.
 *
 * Heads in lanes ("LANES"), for G = 8, 16, ... (and 4, below) and head
 * dims that are multiples of 8 (MQA and wide GQA, where the arithmetic
 * rather than the memory sets the time): the 8 dot products of one key
 * with 8 heads are reduced together by a shuffle tree, 7 additions a score where a
 * horizontal sum of 16 lanes takes 15 operations and a store; the scores
 * are kept key-major, sc[t * G + h], and the softmax runs on them 8 heads
 * to a vector.  (G = 2 keeps rows: two heads leave most lanes idle.)  Keys
 * are scored two at a time, the two K rows side by side in a float16: the
 * same operations per key where vectors hold 8 floats (AVX2), half the
 * FMAs and tree steps where they hold 16.  G = 4 with head dims up to 64
 * also goes in lanes, two keys of 4 heads to a tree of three pair-sums and
 * a fold where rows take 8 horizontal sums; the softmax runs on 2 keys x 4
 * heads to a float8; wider heads of 4 keep rows, whose horizontal sums
 * are then a small share of a score's work.  The plan
 * (host/src/family/plan.c, pl->lanes) decides; the figures are in
 * bench/RESULTS.md, decode defaults. */
#ifndef LANES
#define LANES 0
#endif
#if LANES && (DK % 8 != 0 || (G % 8 != 0 && G != 4))
#error "LANES needs DK a multiple of 8 and G = 4 or a multiple of 8"
#endif
#if LANES
#define QW 8 /* q in float8 vectors */
#define SCI(t, h) ((t) * G + (h))
#else
#define QW VWK
#define SCI(t, h) ((h) * KB + (t))
#endif
#define NQ (DK / QW)
#if LANES
typedef float16 qfloat; /* 8 elements of q, twice: two keys at once */
#else
typedef FLOATW(QW) qfloat;
#endif

#if LANES && G == 4
#define LG 4     /* heads scored together */
#define LANES2 8 /* lanes of their two keys' scores */
#else
#define LG 8
#define LANES2 16
#endif

#if LANES
/* Two float4s, or two float8s, side by side.  Vectors are joined and
 * split element by element here: Oclgrind 21.10's uninitialised-value
 * plugin crashes on (float8)(float4, float4) and reports the .lo / .hi
 * halves of a float16 as uninitialised. */
inline float8 join8(float4 a, float4 b) {
  return (float8)(a.s0, a.s1, a.s2, a.s3, b.s0, b.s1, b.s2, b.s3);
}
inline float16 join16(float8 a, float8 b) {
  return (float16)(a.s0, a.s1, a.s2, a.s3, a.s4, a.s5, a.s6, a.s7, b.s0, b.s1,
                   b.s2, b.s3, b.s4, b.s5, b.s6, b.s7);
}
/* In each half of 8: (a.s0+a.s1, a.s2+a.s3, b.s0+b.s1, b.s2+b.s3, likewise
 * for s4..s7) */
inline float16 pairsum16(float16 a, float16 b) {
  return (float16)(a.s0, a.s2, b.s0, b.s2, a.s4, a.s6, b.s4, b.s6, a.s8,
                   a.sa, b.s8, b.sa, a.sc, a.se, b.sc, b.se) +
         (float16)(a.s1, a.s3, b.s1, b.s3, a.s5, a.s7, b.s5, b.s7, a.s9,
                   a.sb, b.s9, b.sb, a.sd, a.sf, b.sd, b.sf);
}
/* (sum of a[0]'s lanes 0-7, ..., a[3]'s; the same of lanes 8-15) */
inline float8 hsum4x8x2(const float16 *a) {
  const float16 v = pairsum16(pairsum16(a[0], a[1]), pairsum16(a[2], a[3]));
  return (float8)(v.s0, v.s1, v.s2, v.s3, v.s8, v.s9, v.sa, v.sb) +
         (float8)(v.s4, v.s5, v.s6, v.s7, v.sc, v.sd, v.se, v.sf);
}
/* In each half of 8: (sum of a[0]'s lanes, ..., sum of a[7]'s lanes) */
inline float16 hsum8x8x2(const float16 *a) {
  const float16 u0 = pairsum16(pairsum16(a[0], a[1]), pairsum16(a[2], a[3]));
  const float16 u1 = pairsum16(pairsum16(a[4], a[5]), pairsum16(a[6], a[7]));
  return (float16)(u0.s0, u0.s1, u0.s2, u0.s3, u1.s0, u1.s1, u1.s2, u1.s3,
                   u0.s8, u0.s9, u0.sa, u0.sb, u1.s8, u1.s9, u1.sa, u1.sb) +
         (float16)(u0.s4, u0.s5, u0.s6, u0.s7, u1.s4, u1.s5, u1.s6, u1.s7,
                   u0.sc, u0.sd, u0.se, u0.sf, u1.sc, u1.sd, u1.se, u1.sf);
}
#endif

/* Scores of key t (K row at kr; the next key's row at kr + k_ss) for the
 * G heads of the group into the block's score array sc.  Rows: the K row
 * is loaded once for all heads, and a key past the block's end (valid = 0)
 * scores -inf.  Lanes: keys are scored in pairs, at even t, the two K rows
 * side by side in a float16 (one 16-lane FMA serves a head of two keys, LG
 * heads of them reduced together); the rows are loaded once per LG = 8
 * heads (4 when G = 4; from L1 after the first LG), a key
 * past the end is left alone (the softmax stops at the block's last key)
 * and a lone last key is paired with itself. */
__attribute__((always_inline)) inline void
score_key(const qfloat (*qv)[NQ], __global const stor_t *k, long kr,
          long k_ss, int valid, int valid1, float *sc, int t) {
#if LANES
  if (!valid || (t & 1))
    return;
  const long kr1 = valid1 ? kr + k_ss : kr;
  for (int hb = 0; hb < G; hb += LG) {
    float16 part[LG];
#pragma unroll
    for (int e = 0; e < LG; e++)
      part[e] = (float16)(0.0f);
#pragma unroll
    for (int w = 0; w < NQ; w++) {
      const float16 kv =
          join16(LDW(8, k, kr + w * 8), LDW(8, k, kr1 + w * 8));
#pragma unroll
      for (int e = 0; e < LG; e++)
        part[e] = fma(qv[hb + e][w], kv, part[e]);
    }
    const FLOATW(LANES2) r = CAT(CAT(hsum, LG), x8x2)(part);
    CAT(vstore, LG)(CAT(lo, LANES2)(r), 0, sc + SCI(t, hb));
    CAT(vstore, LG)(CAT(hi, LANES2)(r), 0, sc + SCI(t + 1, hb));
  }
#else
  (void)k_ss;
  (void)valid1;
  if (valid) {
    qfloat kv[NQ];
#pragma unroll
    for (int w = 0; w < NQ; w++)
      kv[w] = LDW(QW, k, kr + w * QW);
#pragma unroll
    for (int h = 0; h < G; h++) {
      qfloat dv = (qfloat)(0.0f);
#pragma unroll
      for (int w = 0; w < NQ; w++)
        dv = fma(qv[h][w], kv[w], dv);
      sc[SCI(t, h)] = HSUMW(QW, dv);
    }
  } else {
#pragma unroll
    for (int h = 0; h < G; h++)
      sc[SCI(t, h)] = -INFINITY;
  }
#endif
}

/* The options' logits (soft-cap, then ALiBi with head h's slope sl2[h])
 * of a block's nt keys t0 .. t0 + nt - 1 for a query at pos; the padding
 * past nt keeps its -inf.  Nothing without those options. */
inline void opt_block(float *sc, int nt, int t0, int pos, float softcap2,
                      const float *sl2) {
#if SOFTCAP || ALIBI
  for (int h = 0; h < G; h++)
    for (int t = 0; t < nt; t++)
      sc[SCI(t, h)] = opt_logit(sc[SCI(t, h)], softcap2, sl2[h], pos, t0 + t);
#else
  (void)sc;
  (void)nt;
  (void)t0;
  (void)pos;
  (void)softcap2;
  (void)sl2;
#endif
}

/* The online-softmax step of a block of nt keys for the G heads: the
 * scores in sc become probabilities, mrow and lrow are updated, and
 * al[h] is the factor that rescales head h's accumulators. */
inline void softmax_block(float *sc, int nt, float *mrow, float *lrow,
                          float *al) {
#if LANES && (G == 4 || G == 8)
  /* one group of G heads: keys t and t + 1 lie side by side in sc, so
   * each max, exp2 and sum in 2G lanes serves two keys (a lone last key
   * in G) */
#define HF FLOATW(G)       /* G heads of one key */
#define HF2 FLOATW(LANES2) /* the heads of two keys */
  const HF mold = CAT(vload, G)(0, mrow);
  HF2 m2 = (HF2)(-INFINITY);
  int t = 0;
  for (; t + 1 < nt; t += 2)
    m2 = max(m2, CAT(vload, LANES2)(0, sc + SCI(t, 0)));
  HF mnew = max(mold, max(CAT(lo, LANES2)(m2), CAT(hi, LANES2)(m2)));
  if (t < nt)
    mnew = max(mnew, CAT(vload, G)(0, sc + SCI(t, 0)));
  /* softmax_ref lane by lane: 0 where every score so far is -inf */
  const HF mref = select(mnew, (HF)(0.0f), mnew == (HF)(-INFINITY));
  const HF alpha = CAT(exp2s, G)(mold - mref);
  const HF2 mref2 = CAT(join, LANES2)(mref, mref);
  HF2 ps2 = (HF2)(0.0f);
  for (t = 0; t + 1 < nt; t += 2) {
    const HF2 e =
        CAT(exp2s, LANES2)(CAT(vload, LANES2)(0, sc + SCI(t, 0)) - mref2);
    CAT(vstore, LANES2)(e, 0, sc + SCI(t, 0));
    ps2 += e;
  }
  HF ps = CAT(lo, LANES2)(ps2) + CAT(hi, LANES2)(ps2);
  if (t < nt) {
    const HF e = CAT(exp2s, G)(CAT(vload, G)(0, sc + SCI(t, 0)) - mref);
    CAT(vstore, G)(e, 0, sc + SCI(t, 0));
    ps += e;
  }
  CAT(vstore, G)(fma(alpha, CAT(vload, G)(0, lrow), ps), 0, lrow);
  CAT(vstore, G)(mnew, 0, mrow);
  CAT(vstore, G)(alpha, 0, al);
#undef HF2
#undef HF
#elif LANES
  for (int hb = 0; hb < G; hb += 8) {
    const float8 mold = vload8(0, mrow + hb);
    float8 mnew = mold;
    for (int t = 0; t < nt; t++)
      mnew = max(mnew, vload8(0, sc + SCI(t, hb)));
    /* softmax_ref lane by lane: 0 where every score so far is -inf */
    const float8 mref =
        select(mnew, (float8)(0.0f), mnew == (float8)(-INFINITY));
    const float8 alpha = exp2s8(mold - mref);
    float8 ps = (float8)(0.0f);
    for (int t = 0; t < nt; t++) {
      const float8 e = exp2s8(vload8(0, sc + SCI(t, hb)) - mref);
      vstore8(e, 0, sc + SCI(t, hb));
      ps += e;
    }
    vstore8(fma(alpha, vload8(0, lrow + hb), ps), 0, lrow + hb);
    vstore8(mnew, 0, mrow + hb);
    vstore8(alpha, 0, al + hb);
  }
#else
  (void)nt; /* keys past it score -inf */
#pragma unroll
  for (int h = 0; h < G; h++) {
    float16 sv[NKB];
    float16 vmax = (float16)(-INFINITY);
#pragma unroll
    for (int u = 0; u < NKB; u++) {
      sv[u] = vload16(u, sc + SCI(0, h));
      vmax = max(vmax, sv[u]);
    }
    al[h] = online_softmax16(sv, NKB, hmax16(vmax), &mrow[h], &lrow[h],
                             sc + SCI(0, h));
  }
#endif
}

/* One key's P V step for one head: a += p * V row (at vr). */
inline void pv_row(vfloat *a, __global const stor_t *v, long vr, float p) {
  const vfloat pt = (vfloat)(p);
#pragma unroll
  for (int w = 0; w < NV; w++)
    a[w] = fma(pt, LDW(VWV, v, vr + w * VWV), a[w]);
}

/* One key's P V step for the G heads over one slice of the value dims
 * (vs; SLICES): a[h] += p[h] * vs, each probability broadcast. */
inline void pv_slice(vfloat *a, vfloat vs, const float *sc, int t) {
#pragma unroll
  for (int h = 0; h < G; h++)
    a[h] = fma((vfloat)(sc[SCI(t, h)]), vs, a[h]);
}

/* Software prefetch of one 64-byte line.  Native CPU compilers (PoCL)
 * lower __builtin_prefetch to a prefetch instruction (locality 2:
 * prefetcht1, into L2; 3: prefetcht0, into L1) while PoCL's prefetch()
 * does nothing; SPIR-V compilers (rusticl) reject the intrinsic and get
 * the OpenCL builtin. */
#if defined(__x86_64__) || defined(__aarch64__)
#define PREFETCH_LINE(p) __builtin_prefetch((p), 0, 2)
#define PREFETCH_L1(p) __builtin_prefetch((p), 0, 3)
#else
/* as bytes: prefetch() has no overload for half pointers without
 * cl_khr_fp16, and a call on one is ambiguous (NVIDIA) */
#define PREFETCH_LINE(p) prefetch((const __global uchar *)(p), 64)
#define PREFETCH_L1(p) prefetch((const __global uchar *)(p), 64)
#endif
#define LPR_K ((DK * (int)sizeof(stor_t) + 63) / 64) /* 64-byte lines a row */
#define LPR_V ((DV * (int)sizeof(stor_t) + 63) / 64)

#if PF
/* Software prefetch, spread over the P V passes after the first (which
 * read V from L1 and nothing from memory), of the next block's first-pass
 * working set: its V rows and the K rows that pass scores.  Without it a
 * core's memory traffic comes in bursts, while the first pass runs, and
 * the cold step costs about its hot time plus its memory time; with it the
 * passes after the first overlap the next block's loads.  With a single
 * pass after the first (G = 2) the prefetches bunch up and slow the step,
 * so the plan asks for them only from two passes on.  Into L2
 * (PREFETCH_LINE), not L1, which the V rows of the block in flight occupy.
 * Figures: bench/RESULTS.md, decode defaults. */
#define LPR (LPR_K > LPR_V ? LPR_K : LPR_V)
#define NPASS ((G - 1 + PVH - 1) / PVH) /* P V passes after the first */
#define PFU ((LPR + NPASS - 1) / NPASS) /* lines of each an iteration */
/* Where the prefetches of the next block (first key t1) have got to: line
 * l of its row r, whose V and K lines start at v and k.  Lines go row by
 * row, V rows t1 .. and K rows t1+KB .. (which the next block's first pass
 * scores), nv and nk of them: the rows the split has.  A cursor, not an
 * index: the address of line i computed afresh (row i / LPR, line i % LPR,
 * 64-bit row offsets) took as many instructions as the P V pass it rode
 * on. */
typedef struct pf_cursor {
  const __global uchar *v, *k;
  int r, l, nv, nk;
} pf_cursor;

inline pf_cursor pf_start(__global const stor_t *k, long kb, long k_ss,
                          __global const stor_t *v, long vb, long v_ss,
                          int t1, int te) {
  pf_cursor c;
  c.r = 0;
  c.l = 0;
  c.nv = clamp(te - t1, 0, KB);
  c.nk = clamp(te - t1 - KB, 0, KB);
  c.v = (const __global uchar *)(v + (c.nv > 0 ? vb + t1 * v_ss : 0));
  c.k = (const __global uchar *)(k + (c.nk > 0 ? kb + (t1 + KB) * k_ss : 0));
  return c;
}

/* The next PFU lines; the row pointers only move to rows that exist. */
__attribute__((always_inline)) inline void pf_step(pf_cursor *c, long k_ss,
                                                   long v_ss) {
#pragma unroll
  for (int u = 0; u < PFU; u++) {
    if (c->r < c->nv && c->l < LPR_V)
      PREFETCH_LINE(c->v + 64 * c->l);
    if (c->r < c->nk && c->l < LPR_K)
      PREFETCH_LINE(c->k + 64 * c->l);
    if (++c->l == LPR) {
      c->l = 0;
      c->r++;
      if (c->r < c->nv)
        c->v += v_ss * (long)sizeof(stor_t);
      if (c->r < c->nk)
        c->k += k_ss * (long)sizeof(stor_t);
    }
  }
}
#endif

/* With V == K the first pass's V rows come from L1 (they were scored one
 * block earlier), so memory sees one stream, the next block's keys, where
 * MHA's step has two: row t of the block after next is fetched into L2
 * meanwhile, to keep as many lines in flight.  Nothing without KV_SAME. */
__attribute__((always_inline)) inline void
prefetch_ahead(__global const stor_t *k, long kb, long k_ss, int t, int te) {
#if KV_SAME
  if (t < te) {
    const __global uchar *row = (const __global uchar *)(k + kb + t * k_ss);
#pragma unroll
    for (int l = 0; l < LPR_K; l++)
      PREFETCH_LINE(row + 64 * l);
  }
#else
  (void)k;
  (void)kb;
  (void)k_ss;
  (void)t;
  (void)te;
#endif
}

/* Variant 1 (CPU-shaped): one work-item per (split, sequence * KV head),
 * the G query heads in registers, no local memory.
 * Global size (S, batch * hkv). */
__kernel void decode_split_reg(__global const stor_t *q,
                               __global const stor_t *k,
                               __global const stor_t *v,
                               __global const int *lens, __global stor_t *o,
                               __global float *opart, __global float *lse,
                               int cap, int hkv, int S, int chunk,
                               float scale_log2, long k_sb, long k_ss,
                               long k_sh, long v_sb, long v_ss, long v_sh,
                               OPT_ARGS) {
  const int s = get_global_id(0);
  const int bc = get_global_id(1);
  if (s >= S)
    return;
  const int b = bc / hkv, c = bc % hkv;
  const int L = clamp(lens[b], 0, cap);
  const int2 keys = split_keys(L, s, S, chunk, KB, window);
  const int tb = keys.x, te = keys.y;
  const int pos = L - 1; /* the query's position */

  qfloat qv[G][NQ];
  vfloat acc[G][NV];
  float mrow[G], lrow[G];
  float sl2[G]; /* ALiBi slopes (log2 units) */
  for (int h = 0; h < G; h++) {
    const long qb = ((long)b * hkv * G + c * G + h) * DK;
    for (int w = 0; w < NQ; w++) {
#if LANES
      const float8 x = LDW(8, q, qb + w * 8) * scale_log2;
      qv[h][w] = join16(x, x);
#else
      qv[h][w] = LDW(QW, q, qb + w * QW) * scale_log2;
#endif
    }
    for (int w = 0; w < NV; w++)
      acc[h][w] = (vfloat)(0.0f);
    mrow[h] = split_sink2(sinks, c * G + h);
    lrow[h] = sink_sum(mrow[h]);
    sl2[h] = alibi_slope2(alibi, c * G + h);
  }
  const long kb = b * k_sb + c * k_sh;
  const long vb = b * v_sb + c * v_sh;
  /* Scores of the current block and of the next one: the next block's
   * are computed while the current block's P V runs, so each core reads
   * the K and the V stream at once (twice the memory-level parallelism of
   * a K phase followed by a V phase; bench/RESULTS.md, decode defaults). */
  float sc[2][G * KB];
  float al[G];
  int cur = 0;

  /* the first block's scores */
  for (int t = 0; t < KB; t++)
    score_key(qv, k, kb + (tb + t) * k_ss, k_ss, tb + t < te,
              tb + t + 1 < te, sc[0], t);

  for (int t0 = tb; t0 < te; t0 += KB) {
    const int nt = min(KB, te - t0);
    const int t1 = t0 + KB;
    const int nt1 = min(KB, te - t1); /* <= 0: this is the last block */
    opt_block(sc[cur], nt, t0, pos, softcap2, sl2);
    softmax_block(sc[cur], nt, mrow, lrow, al);
#if PF
    pf_cursor pfc = pf_start(k, kb, k_ss, v, vb, v_ss, t1, te);
#endif
#if SLICES
    /* P V by slices of the value dims: all G heads' accumulators of one
     * VWV-wide slice in registers, each probability a broadcast operand;
     * every V element is loaded once, no pass is padded.  The first pass
     * (slice 0) also scores the next block, and pulls the rest of each V
     * row into L1 for the passes after it, which would otherwise wait on
     * memory.  Where it pays, and where the passes by heads below do
     * better: the plan (host/src/family/plan.c). */
    {
      vfloat a[G];
#pragma unroll
      for (int h = 0; h < G; h++)
        a[h] = acc[h][0] * al[h];
      for (int t = 0; t < KB; t++) {
        if (t < nt) {
          const long vr = vb + (t0 + t) * v_ss;
          const vfloat vs = LDW(VWV, v, vr);
#pragma unroll
          for (int l = 1; l < LPR_V; l++)
            PREFETCH_L1((const __global uchar *)(v + vr) + 64 * l);
          pv_slice(a, vs, sc[cur], t);
        }
        score_key(qv, k, kb + (t1 + t) * k_ss, k_ss, t < nt1, t + 1 < nt1,
                  sc[cur ^ 1], t);
        prefetch_ahead(k, kb, k_ss, t1 + KB + t, te);
      }
#pragma unroll
      for (int h = 0; h < G; h++)
        acc[h][0] = a[h];
    }
    for (int w = 1; w < NV; w++) {
      vfloat a[G];
#pragma unroll
      for (int h = 0; h < G; h++)
        a[h] = acc[h][w] * al[h];
      for (int t = 0; t < nt; t++) {
        pv_slice(a, LDW(VWV, v, vb + (t0 + t) * v_ss + w * VWV), sc[cur], t);
      }
#pragma unroll
      for (int h = 0; h < G; h++)
        acc[h][w] = a[h];
    }
#else
    /* P V a few heads at a time: their NV accumulators each stay in
     * registers while the block's V rows (in L1 after the first head)
     * stream past; all G * NV at once would not fit a CPU's register file
     * and spill.  The first head's pass, the one that reads V from memory,
     * also scores the next block (K from memory); it is a loop of its own
     * so that the other heads' passes carry no condition on the scoring
     * (bench/RESULTS.md, decode defaults). */
    {
      vfloat a[NV];
#pragma unroll
      for (int w = 0; w < NV; w++)
        a[w] = acc[0][w] * al[0];
      for (int t = 0; t < KB; t++) {
        if (t < nt)
          pv_row(a, v, vb + (t0 + t) * v_ss, sc[cur][SCI(t, 0)]);
        score_key(qv, k, kb + (t1 + t) * k_ss, k_ss, t < nt1, t + 1 < nt1,
                  sc[cur ^ 1], t);
        prefetch_ahead(k, kb, k_ss, t1 + KB + t, te);
      }
#pragma unroll
      for (int w = 0; w < NV; w++)
        acc[0][w] = a[w];
    }
    /* P V for heads 1 .. G-1, PVH heads a pass (the last pass padded with
     * zero accumulators fed head G-1's probabilities, then dropped): one V
     * row, loaded once, serves PVH heads' accumulators, all in registers */
    for (int h0 = 1; h0 < G; h0 += PVH) {
      vfloat a[PVH][NV];
#pragma unroll
      for (int j = 0; j < PVH; j++)
#pragma unroll
        for (int w = 0; w < NV; w++)
          a[j][w] = h0 + j < G ? acc[h0 + j][w] * al[h0 + j] : (vfloat)(0.0f);
      for (int t = 0; t < nt; t++) {
#if PF
        pf_step(&pfc, k_ss, v_ss);
#endif
        const long vr = vb + (t0 + t) * v_ss;
        vfloat vrow[NV];
#pragma unroll
        for (int w = 0; w < NV; w++)
          vrow[w] = LDW(VWV, v, vr + w * VWV);
#pragma unroll
        for (int j = 0; j < PVH; j++) {
          const vfloat pt = (vfloat)(sc[cur][SCI(t, min(h0 + j, G - 1))]);
#pragma unroll
          for (int w = 0; w < NV; w++)
            a[j][w] = fma(pt, vrow[w], a[j][w]);
        }
      }
#pragma unroll
      for (int j = 0; j < PVH; j++)
        if (h0 + j < G)
#pragma unroll
          for (int w = 0; w < NV; w++)
            acc[h0 + j][w] = a[j][w];
    }
#endif
    cur ^= 1;
  }

  for (int h = 0; h < G; h++) {
    const long row = (long)b * hkv * G + c * G + h;
    const float inv = split_inv(lrow[h], te > tb);
#if DIRECT
    for (int w = 0; w < NV; w++)
      STW(VWV, acc[h][w] * inv, o, row * DV + w * VWV);
#else
    for (int w = 0; w < NV; w++)
      STF(VWV, acc[h][w] * inv, opart, (row * S + s) * DV + w * VWV);
    lse[row * S + s] = split_lse(mrow[h], lrow[h], te > tb);
#endif
  }
  (void)o;
  (void)opart;
  (void)lse;
  (void)sinks;
  (void)alibi;
  (void)softcap2;
  (void)window;
}

/* Variant 2 (GPU-shaped): a work-group of WG items per (split, sequence *
 * KV head).  Per KT-key tile: the items load the K and V tiles into local
 * memory, score the G x KT (head, key) pairs, G items update the softmax
 * state, then each item accumulates PAIRS (head, v-dim) outputs from the V
 * tile: every K and V element is read from global memory once per step,
 * whatever the group size.
 * Global size (S * WG, batch * hkv), local size (WG, 1). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
decode_split_local(__global const stor_t *q, __global const stor_t *k,
                   __global const stor_t *v, __global const int *lens,
                   __global stor_t *o, __global float *opart,
                   __global float *lse, int cap, int hkv, int S, int chunk,
                   float scale_log2, long k_sb, long k_ss, long k_sh,
                   long v_sb, long v_ss, long v_sh, OPT_ARGS) {
  __local float qs[G * DK];
  __local float ks[KT * DK];
#if KV_SAME
#define vs ks
#else
  __local float vs[KT * DV];
#endif
  __local float ps[G * KT];
  __local float mst[G], lst[G], ast[G];
#if ALIBI
  __local float sl2[G]; /* the slopes, log2 units */
#define SLOPE2(h) sl2[h]
#else
#define SLOPE2(h) 0.0f
#endif
  const int lid = get_local_id(0);
  const int s = get_group_id(0);
  const int bc = get_global_id(1);
  const int b = bc / hkv, c = bc % hkv;
  const int L = clamp(lens[b], 0, cap);
  const int2 keys = split_keys(L, s, S, chunk, KT, window);
  const int tb = keys.x, te = keys.y;
  const int pos = L - 1; /* the query's position */
  const long row0 = (long)b * hkv * G + c * G;

  for (int e = lid; e < G * DK; e += WG)
    qs[e] = LD1(q, row0 * DK + e) * scale_log2;
  for (int h = lid; h < G; h += WG) {
    mst[h] = split_sink2(sinks, c * G + h);
    lst[h] = sink_sum(mst[h]);
#if ALIBI
    sl2[h] = alibi_slope2(alibi, c * G + h);
#endif
  }
  float acc[PAIRS];
  for (int p = 0; p < PAIRS; p++)
    acc[p] = 0.0f;
  const long kb = b * k_sb + c * k_sh;
  const long vb = b * v_sb + c * v_sh;
  barrier(CLK_LOCAL_MEM_FENCE);

  for (int t0 = tb; t0 < te; t0 += KT) {
    const int nt = min(KT, te - t0);
    for (int e = lid; e < KT * DK; e += WG) {
      const int t = e / DK, d = e - t * DK;
      ks[e] = t < nt ? LD1(k, kb + (t0 + t) * k_ss + d) : 0.0f;
    }
#if !KV_SAME
    for (int e = lid; e < nt * DV; e += WG) {
      const int t = e / DV, d = e - t * DV;
      vs[e] = LD1(v, vb + (t0 + t) * v_ss + d);
    }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < G * KT; e += WG) {
      const int h = e / KT, t = e - h * KT;
      float dot = 0.0f;
      for (int d = 0; d < DK; d++)
        dot = fma(qs[h * DK + d], ks[t * DK + d], dot);
      ps[e] = t < nt ? opt_logit(dot, softcap2, SLOPE2(h), pos, t0 + t)
                     : -INFINITY;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = lid; h < G; h += WG) {
      float tmax = -INFINITY;
      for (int t = 0; t < KT; t++)
        tmax = max(tmax, ps[h * KT + t]);
      const float mnew = max(mst[h], tmax);
      const float mref = softmax_ref(mnew);
      const float alpha = exp2s1(mst[h] - mref);
      float psum = 0.0f;
      for (int t = 0; t < KT; t++) {
        const float e = exp2s1(ps[h * KT + t] - mref);
        ps[h * KT + t] = e;
        psum += e;
      }
      lst[h] = alpha * lst[h] + psum;
      mst[h] = mnew;
      ast[h] = alpha;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int p = 0; p < PAIRS; p++) {
      const int e = lid + p * WG;
      if (e < G * DV) {
        const int h = e / DV, d = e - h * DV;
        float a = acc[p] * ast[h];
        for (int t = 0; t < nt; t++)
          a = fma(ps[h * KT + t], vs[t * DV + d], a);
        acc[p] = a;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE); /* ks, vs, ps and ast are rewritten next */
  }

  for (int p = 0; p < PAIRS; p++) {
    const int e = lid + p * WG;
    if (e < G * DV) {
      const int h = e / DV, d = e - h * DV;
      const float l = lst[h];
      put_row_scalar(o, opart, lse, row0 + h, s, S, d,
                     l > 0.0f ? acc[p] / l : acc[p] * split_inv(l, te > tb));
#if !DIRECT
      if (d == 0)
        lse[(row0 + h) * S + s] = split_lse(mst[h], l, te > tb);
#endif
    }
  }
  (void)vb;
  (void)pos;
  (void)softcap2;
  (void)alibi;
  (void)sinks;
}
#undef vs
#undef SLOPE2

/* Merge S split partials of each (sequence, query head) row:
 * o = sum_s w_s o_s with w_s = exp2(lse_s - max) / sum exp2(lse - max);
 * a row whose splits are all empty gives zeros, one whose visible keys all
 * score -inf NaN (split_lse), and a NaN split makes the row NaN.  A sink
 * (SINKS) is one more term of the sum that weighs no partial, added here
 * and only here, so once per row whatever S is; with a finite sink a row
 * whose keys all score -inf, or that has none, gives zeros.
 * Global size (rows, NV); rows = batch * heads. */
__kernel void decode_combine(__global const float *opart,
                             __global const float *lse, __global stor_t *o,
                             int rows, int S, int heads, OPT_ARGS) {
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
  const float inv =
      lmax == LSE_ALL_NEG_INF ? NAN : (z > 0.0f ? 1.0f / z : 0.0f);
  STW(VWV, sum * inv, o, (long)row * DV + w * VWV);
}

/* In-place append of n_new rows per sequence at rows pos[b].. of the cache
 * (raw copy in the storage type), hk key heads and hv value heads (a GQA
 * cache: its KV heads both; talking-heads': its own counts): one work-item
 * a (row, head) of the larger count.  Global size (n_new * max(hk, hv),
 * batch). */
__kernel void kv_append(__global const raw_t *k_new,
                        __global const raw_t *v_new,
                        __global const int *pos, __global raw_t *k_cache,
                        __global raw_t *v_cache, int n_new, int cap, int hk,
                        int hv, long k_sb, long k_ss, long k_sh, long v_sb,
                        long v_ss, long v_sh) {
  const int hm = max(hk, hv);
  const int tc = get_global_id(0);
  const int b = get_global_id(1);
  if (tc >= n_new * hm)
    return;
  const int t = tc / hm, c = tc - t * hm;
  const int p = pos[b] + t;
  if (p < 0 || p >= cap)
    return;
  const long src = (long)b * n_new + t;
  if (c < hk) {
    const long kd = b * k_sb + p * k_ss + c * k_sh;
    for (int d = 0; d < DK; d++)
      k_cache[kd + d] = k_new[(src * hk + c) * DK + d];
  }
#if !KV_SAME
  if (c < hv) {
    const long vd = b * v_sb + p * v_ss + c * v_sh;
    for (int d = 0; d < DV; d++)
      v_cache[vd + d] = v_new[(src * hv + c) * DV + d];
  }
#endif
}

/* Variant 3 (subgroups; compiled only with -D SG, the subgroup size, on a
 * device that reports cl_khr_subgroups or cl_intel_subgroups): a
 * work-group is one subgroup of SG lanes (WG == SG) per (split, sequence *
 * KV head).  It takes SG keys at a time, a key a lane: the lane scores its
 * key against the G query heads (q staged in local memory once, the one
 * barrier), the softmax statistics of each head are reduced across the
 * subgroup (sub_group_reduce_max / _add) and kept in registers, and in the
 * P V pass each key's probability is broadcast (sub_group_broadcast) to
 * the lanes, which own the value dims d = lane + n SG: every K and V
 * element is read once, with no local tiles and no barrier per tile.
 * SG_REQD: the kernel requires the size (cl_intel_required_subgroup_size);
 * else SG is the size the device gives a work-group of SG items, which the
 * host queried.  KT aligns the windowed splits.
 * Global size (S * SG, batch * hkv), local size (SG, 1). */
#ifdef SG
#if defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#elif defined(cl_intel_subgroups)
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#endif
#if SG_REQD
#define SG_ATTR __attribute__((intel_reqd_sub_group_size(SG)))
#else
#define SG_ATTR
#endif
#define SG_ND ((DV + SG - 1) / SG) /* value dims a lane */

__kernel __attribute__((reqd_work_group_size(SG, 1, 1))) SG_ATTR void
decode_split_sg(__global const stor_t *q, __global const stor_t *k,
                __global const stor_t *v, __global const int *lens,
                __global stor_t *o, __global float *opart,
                __global float *lse, int cap, int hkv, int S, int chunk,
                float scale_log2, long k_sb, long k_ss, long k_sh, long v_sb,
                long v_ss, long v_sh, OPT_ARGS) {
  __local float qs[G * DK];
  const int lane = (int)get_sub_group_local_id();
  const int s = get_group_id(0);
  const int bc = get_global_id(1);
  const int b = bc / hkv, c = bc % hkv;
  const int L = clamp(lens[b], 0, cap);
  const int2 keys = split_keys(L, s, S, chunk, KT, window);
  const int tb = keys.x, te = keys.y;
  const int pos = L - 1; /* the query's position */
  const long row0 = (long)b * hkv * G + c * G;
  const long kb = b * k_sb + c * k_sh;
  const long vb = b * v_sb + c * v_sh;

  for (int e = lane; e < G * DK; e += SG)
    qs[e] = LD1(q, row0 * DK + e) * scale_log2;
  float m[G], l[G], sl2[G], acc[G][SG_ND];
  for (int h = 0; h < G; h++) {
    m[h] = split_sink2(sinks, c * G + h);
    l[h] = sink_sum(m[h]);
    sl2[h] = alibi_slope2(alibi, c * G + h);
    for (int n = 0; n < SG_ND; n++)
      acc[h][n] = 0.0f;
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  for (int t0 = tb; t0 < te; t0 += SG) {
    const int t = t0 + lane, ok = t < te;
    float sc[G];
    for (int h = 0; h < G; h++)
      sc[h] = 0.0f;
    if (ok) {
      const long kr = kb + t * k_ss;
      for (int d = 0; d < DK; d++) {
        const float kd = LD1(k, kr + d);
        for (int h = 0; h < G; h++)
          sc[h] = fma(qs[h * DK + d], kd, sc[h]);
      }
    }
    for (int h = 0; h < G; h++) {
      const float x =
          ok ? opt_logit(sc[h], softcap2, sl2[h], pos, t) : -INFINITY;
      const float mnew = max(m[h], sub_group_reduce_max(x));
      const float mref = softmax_ref(mnew);
      const float alpha = exp2s1(m[h] - mref);
      const float p = exp2s1(x - mref);
      l[h] = alpha * l[h] + sub_group_reduce_add(p);
      m[h] = mnew;
      sc[h] = p;
      for (int n = 0; n < SG_ND; n++)
        acc[h][n] *= alpha;
    }
    const int nt = min(SG, te - t0);
    for (int u = 0; u < nt; u++) {
      const long vr = vb + (t0 + u) * v_ss;
      float vv[SG_ND];
      for (int n = 0; n < SG_ND; n++) {
        const int d = lane + n * SG;
        vv[n] = d < DV ? LD1(v, vr + d) : 0.0f;
      }
      for (int h = 0; h < G; h++) {
        const float ph = sub_group_broadcast(sc[h], (uint)u);
        for (int n = 0; n < SG_ND; n++)
          acc[h][n] = fma(ph, vv[n], acc[h][n]);
      }
    }
  }

  for (int h = 0; h < G; h++) {
    const float inv = split_inv(l[h], te > tb);
    for (int n = 0; n < SG_ND; n++) {
      const int d = lane + n * SG;
      if (d < DV)
        put_row_scalar(o, opart, lse, row0 + h, s, S, d,
                       l[h] > 0.0f ? acc[h][n] / l[h] : acc[h][n] * inv);
    }
#if !DIRECT
    if (lane == 0)
      lse[(row0 + h) * S + s] = split_lse(m[h], l[h], te > tb);
#endif
  }
  (void)vb;
  (void)pos;
  (void)softcap2;
  (void)alibi;
  (void)sinks;
}
#undef SG_ATTR
#undef SG_ND
#endif /* SG */
