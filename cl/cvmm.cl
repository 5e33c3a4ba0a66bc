/* cvmm.cl - the expert-grouped GEMM (SwitchHead's CVMM, spec 6) and its
 * dense case, float32 (host/src/family/cvmm.h has the semantics).
 *
 * Routing, three launches, no host round trip:
 *   cvmm_route   the H*E logits sel_x W_sel of RR rows a work-item (vectors
 *                across the columns), each head's top-k (a tie goes to the
 *                lower expert index; chosen on the logits, as sigmoid is
 *                monotone) and its raw sigmoid gates -> sel[row, h, slot]
 *   cvmm_count   the count of every (head, expert) bucket in every row
 *                tile of TILE rows, into cnt[]
 *   cvmm_scatter each tile's offsets, the exclusive prefix sum of the
 *                counts over (bucket, tile), bucket-major, into off[]
 *                (each tile sums the counts it needs: cheap for the tens
 *                of tiles of a call), and a stable scatter of (row, gate)
 *                into list[]: within a bucket the rows ascend, so a tile's
 *                rows of a bucket are the contiguous
 *                list[off[b T + t] .. off[b T + t + 1])
 * (Each kernel reads only what earlier ones wrote.)
 * The GEMM (cvmm_gemm_reg, variant 1, or cvmm_gemm_local, variant 2): a
 * work-item (work-group) owns TILE rows x a block of columns and walks its
 * buckets (SPLIT: its head's E, SUM: all H*E); an empty bucket is skipped,
 * so an expert no row of the tile chose is never read.  The bucket's rows
 * are gathered in blocks, multiplied by W[h, e] and added, times their
 * gates, into the tile's accumulators (private memory for variant 1, local
 * for variant 2), stored once at the end: the sums over experts and heads
 * happen here, in a fixed order, without atomics.
 * DENSE: no routing; rows in order, gate 1, results stored directly (the
 * projection family, and gate NONE).
 * SMALL (cvmm_small, with variant 1's macros): the whole call in one
 * launch for a few rows, the routing recomputed by every work-item.
 *
 * The routing scratch (int32): sel at 0 and list at 2n (int2 each, n =
 * rows*H*TOPK), off at 4n (H*E*T + 1 entries), cnt after it (H*E*T).
 *
 * Defines: DENSE, MODE (1 SPLIT, 2 SUM), H, E, TOPK, TILE (rows a tile;
 * SMALL: the most rows a call may have, the call's own an argument, so
 * that one program serves every batch size), SMALL (compile cvmm_small),
 * VARIANT (the GEMM kernel compiled: 1 cvmm_gemm_reg, 2 cvmm_gemm_local);
 * route: RR, RVW (vector width), RNV (vectors over the H*E columns);
 * variant 1: R (rows a register block), VW,
 * CV (vectors a work-item: C = CV*VW columns), KU (the k-loop's unroll),
 * PACK and KP (= K: W's panel copied into local memory, a work-item a
 * group); variant 2: TM (rows a work-item), CT (columns a group), WG, KT
 * (k-tile). */
#ifndef DENSE
#define DENSE 1
#endif
#ifndef MODE
#define MODE 1
#endif
#ifndef H
#define H 1
#endif
#ifndef E
#define E 1
#endif
#ifndef TOPK
#define TOPK 1
#endif
#ifndef TILE
#define TILE 32
#endif
#define HE (H * E)

/* ------------------------------------------------------------- routing */

#if !DENSE

#ifndef RR
#define RR 4
#endif
#ifndef RVW
#define RVW 1
#endif
#ifndef RNV
#define RNV HE
#endif

typedef FLOATW(RVW) rvec_t;

/* torch.topk's order: a NaN score above every number (clattn.h), so that
 * a NaN routing score is selected and its NaN gate reaches the row. */
inline int cvmm_ranks_above(float a, float b) {
  return isnan(a) ? !isnan(b) : a > b;
}

/* The TOPK largest of E logits lg, in descending order by insertion: an
 * expert passes an earlier one only when strictly larger, so a tie keeps
 * the lower index (the reference's rule). */
inline void cvmm_topk(const float *lg, float *tl, int *te) {
  int cnt = 0;
  for (int e = 0; e < E; e++) {
    const float l = lg[e];
    if (cnt == TOPK && !cvmm_ranks_above(l, tl[TOPK - 1]))
      continue;
    int p = min(cnt, TOPK - 1);
    while (p > 0 && cvmm_ranks_above(l, tl[p - 1])) {
      tl[p] = tl[p - 1];
      te[p] = te[p - 1];
      p--;
    }
    tl[p] = l;
    te[p] = e;
    cnt = min(cnt + 1, TOPK);
  }
}

__kernel void cvmm_route(__global const float *restrict x,
                         __global const float *restrict ws,
                         __global int *restrict sched, const int rows,
                         const int D) {
  const int r0 = (int)get_global_id(0) * RR;
  if (r0 >= rows)
    return; /* padding of the last work-group */
  const int nr = min(RR, rows - r0);
  __global int2 *sel = (__global int2 *)sched;
  /* the last block repeats its last row rather than branch in the loop */
  __global const float *xp[RR];
  _Pragma("unroll") for (int r = 0; r < RR; r++) {
    xp[r] = x + (long)(r0 + min(r, nr - 1)) * D;
  }
  rvec_t acc[RR][RNV];
  _Pragma("unroll") for (int r = 0; r < RR; r++) {
    _Pragma("unroll") for (int v = 0; v < RNV; v++) {
      acc[r][v] = (rvec_t)(0.0f);
    }
  }
  /* RNV vectors of RVW columns from each row of W_sel, running past its HE
   * columns into the next rows (lanes never read); the last rows, whose
   * vectors would pass W_sel's end, are built lane by lane */
  const int safe = max(0, D - (RNV * RVW - HE + HE - 1) / HE);
  __global const float *wi = ws;
  for (int i = 0; i < D; i++) {
    rvec_t wv[RNV];
    if (i < safe) {
      _Pragma("unroll") for (int v = 0; v < RNV; v++) {
        wv[v] = LDF(RVW, wi, v * RVW);
      }
    } else {
      for (int v = 0; v < RNV; v++) {
        rvec_t t = (rvec_t)(0.0f);
        float *tp = (float *)&t;
        for (int l = 0; l < RVW && v * RVW + l < HE; l++)
          tp[l] = wi[v * RVW + l];
        wv[v] = t;
      }
    }
    _Pragma("unroll") for (int r = 0; r < RR; r++) {
      const rvec_t xv = (rvec_t)(xp[r][i]);
      _Pragma("unroll") for (int v = 0; v < RNV; v++) {
        acc[r][v] = fma(xv, wv[v], acc[r][v]);
      }
    }
    wi += HE;
  }
  for (int r = 0; r < nr; r++) {
    /* logits and their sigmoids, a vector at a time */
    float lg[HE], sg[HE];
    for (int v = 0; v < RNV; v++) {
      const rvec_t s = (rvec_t)(1.0f) / ((rvec_t)(1.0f) + exp(-acc[r][v]));
      const float *tp = (const float *)&acc[r][v];
      const float *ts = (const float *)&s;
      for (int l = 0; l < RVW && v * RVW + l < HE; l++) {
        lg[v * RVW + l] = tp[l];
        sg[v * RVW + l] = ts[l];
      }
    }
    const long row = (long)(r0 + r);
    for (int h = 0; h < H; h++) {
      float tl[TOPK];
      int te[TOPK];
      cvmm_topk(lg + h * E, tl, te);
      for (int s = 0; s < TOPK; s++)
        sel[(row * H + h) * TOPK + s] =
            (int2)(te[s], as_int(sg[h * E + te[s]]));
    }
  }
}

/* Each tile's count of every bucket, cnt[b T + t] (one work-item a
 * tile). */
__kernel void cvmm_count(__global int *restrict sched, const int rows,
                         const int T) {
  const int t = (int)get_global_id(0);
  if (t >= T)
    return;
  const long n = (long)rows * H * TOPK;
  __global const int2 *sel = (__global const int2 *)sched;
  __global int *cnt = sched + 4 * n + HE * T + 1;
  const int r1 = min(rows, (t + 1) * TILE);
  for (int h = 0; h < H; h++) {
    int c[E];
    for (int e = 0; e < E; e++)
      c[e] = 0;
    for (int r = t * TILE; r < r1; r++)
      for (int s = 0; s < TOPK; s++)
        c[sel[((long)r * H + h) * TOPK + s].x]++;
    for (int e = 0; e < E; e++)
      cnt[(h * E + e) * T + t] = c[e];
  }
}

/* One work-item a tile: each bucket's start at this tile, the exclusive
 * prefix sum of the counts over (bucket, tile), bucket-major (the buckets
 * before, then this bucket's earlier tiles), into off[b T + t]; then the
 * tile's rows in order, each to its bucket's next slot, so that within a
 * bucket the rows ascend. */
__kernel void cvmm_scatter(__global int *restrict sched, const int rows,
                           const int T) {
  const int t = (int)get_global_id(0);
  if (t >= T)
    return;
  const long n = (long)rows * H * TOPK;
  __global const int2 *sel = (__global const int2 *)sched;
  __global int2 *list = (__global int2 *)(sched + 2 * n);
  __global int *off = sched + 4 * n;
  __global const int *cnt = off + HE * T + 1;
  int pos[HE];
  int base = 0;
  for (int b = 0; b < HE; b++) {
    int before = 0, total = 0;
    for (int u = 0; u < T; u++) {
      const int c = cnt[b * T + u];
      before += u < t ? c : 0;
      total += c;
    }
    pos[b] = base + before;
    off[b * T + t] = pos[b];
    base += total;
  }
  if (t == 0)
    off[HE * T] = (int)n;
  const int r1 = min(rows, (t + 1) * TILE);
  for (int r = t * TILE; r < r1; r++)
    for (int h = 0; h < H; h++)
      for (int s = 0; s < TOPK; s++) {
        const int2 v = sel[((long)r * H + h) * TOPK + s];
        list[pos[h * E + v.x]++] = (int2)(r, v.y);
      }
}

#endif /* !DENSE */

/* ------------------------------------------------ variant 1: registers */

#ifndef VARIANT
#define VARIANT 1
#endif
#if VARIANT == 1

#ifndef R
#define R 4
#endif
#ifndef VW
#define VW 4
#endif
#ifndef CV
#define CV 2
#endif
#define C (CV * VW)
#ifndef KU
#define KU 2
#endif
#define STR_(x) #x
#define STR(x) STR_(x)
#define KUNROLL STR(unroll KU)

typedef FLOATW(VW) vec_t;

/* PACK: the block's W panel (K x C) is copied once into local memory,
 * contiguous: rows of W a power-of-two multiple of 512 bytes apart fall
 * into a few cache sets and would evict each other. */
#ifndef PACK
#define PACK 0
#endif
#if PACK
#define WPTR __local const float *
#define WSTEP C
#define WOFF(v) ((v) * VW)
#define PANEL(src)                                                             \
  {                                                                            \
    __global const float *ps = (src);                                          \
    for (int k = 0; k < K; k++) {                                              \
      _Pragma("unroll") for (int v = 0; v < CV; v++) {                         \
        STF(VW, LDF(VW, ps, base[v]), wpk, k * C + v * VW);                    \
      }                                                                        \
      ps += N;                                                                 \
    }                                                                          \
  }                                                                            \
  WPTR wsrc = wpk;
#else
#define WPTR __global const float *
#define WSTEP N
#define WOFF(v) base[v]
#define PANEL(src) WPTR wsrc = (src);
#endif

/* acc[NR][CV] = the NR rows of ap[] times the block's CV vectors of W
 * (from wsrc: the packed panel, or W's columns at base[]), over K. */
#define MICRO(NR)                                                              \
  _Pragma("unroll") for (int r = 0; r < NR; r++) {                             \
    _Pragma("unroll") for (int v = 0; v < CV; v++) {                           \
      acc[r][v] = (vec_t)(0.0f);                                               \
    }                                                                          \
  }                                                                            \
  WPTR wk = wsrc;                                                              \
  _Pragma(KUNROLL) for (int k = 0; k < K; k++) {                              \
    vec_t wv[CV];                                                              \
    _Pragma("unroll") for (int v = 0; v < CV; v++) {                           \
      wv[v] = LDF(VW, wk, WOFF(v));                                            \
    }                                                                          \
    _Pragma("unroll") for (int r = 0; r < NR; r++) {                           \
      const vec_t xv = (vec_t)(ap[r][k]);                                      \
      _Pragma("unroll") for (int v = 0; v < CV; v++) {                         \
        acc[r][v] = fma(xv, wv[v], acc[r][v]);                                 \
      }                                                                        \
    }                                                                          \
    wk += WSTEP;                                                               \
  }

/* Store vector x (the block's vector v) into row op: the columns lo .. hi
 * it owns; a vector shifted left (the row's end) stores lane by lane. */
#define STORE_VEC(x, op, v)                                                    \
  {                                                                            \
    const int lo = c0 + (v) * VW, hi = min(lo + VW, N);                        \
    if (lo < N) {                                                              \
      if (base[v] == lo && hi - lo == VW) {                                    \
        STF(VW, (x), (op), lo);                                                \
      } else {                                                                 \
        vec_t tv = (x);                                                        \
        const float *tp = (const float *)&tv;                                  \
        for (int l = lo - base[v]; l < VW; l++)                                \
          (op)[base[v] + l] = tp[l];                                           \
      }                                                                        \
    }                                                                          \
  }

#if DENSE
/* NR consecutive rows from row j, stored directly. */
#define BLOCK(NR)                                                              \
  {                                                                            \
    __global const float *ap[NR];                                              \
    _Pragma("unroll") for (int r = 0; r < NR; r++) {                           \
      ap[r] = a + (long)min(j + r, end - 1) * lda;                             \
    }                                                                          \
    vec_t acc[NR][CV];                                                         \
    MICRO(NR)                                                                  \
    _Pragma("unroll") for (int r = 0; r < NR; r++) {                           \
      __global float *op = out + (long)(j + r) * ldo;                          \
      _Pragma("unroll") for (int v = 0; v < CV; v++) {                         \
        STORE_VEC(acc[r][v], op, v)                                            \
      }                                                                        \
    }                                                                          \
    j += NR;                                                                   \
  }
#else
/* The bucket's next NR rows list[j ..], added to the tile times their
 * gates. */
#define BLOCK(NR)                                                              \
  {                                                                            \
    __global const float *ap[NR];                                              \
    int lr[NR];                                                                \
    float gt[NR];                                                              \
    _Pragma("unroll") for (int r = 0; r < NR; r++) {                           \
      const int2 en = list[j + r];                                             \
      lr[r] = en.x - row0;                                                     \
      gt[r] = as_float(en.y);                                                  \
      ap[r] = a + (long)en.x * lda + aoff;                                     \
    }                                                                          \
    vec_t acc[NR][CV];                                                         \
    MICRO(NR)                                                                  \
    _Pragma("unroll") for (int r = 0; r < NR; r++) {                           \
      _Pragma("unroll") for (int v = 0; v < CV; v++) {                         \
        tile[lr[r]][v] = fma((vec_t)(gt[r]), acc[r][v], tile[lr[r]][v]);      \
      }                                                                        \
    }                                                                          \
    j += NR;                                                                   \
  }
#endif

/* Rows j .. end-1 in blocks of R, then of the powers of two below R. */
#define BLOCKS(end)                                                            \
  while (j + R <= (end))                                                       \
    BLOCK(R)                                                                   \
  if (R > 8 && j + 8 <= (end))                                                 \
    BLOCK(8)                                                                   \
  if (R > 4 && j + 4 <= (end))                                                 \
    BLOCK(4)                                                                   \
  if (R > 2 && j + 2 <= (end))                                                 \
    BLOCK(2)                                                                   \
  if (R > 1 && j + 1 <= (end))                                                 \
    BLOCK(1)

/* Grid: dim 0 the column blocks of C (padded to the work-group), dim 1
 * the row tiles, dim 2 the head (SPLIT, and DENSE with heads) or 0. */
__kernel void cvmm_gemm_reg(__global const float *restrict a,
                            __global const float *restrict w,
                            __global float *restrict out,
                            __global const int *restrict sched,
                            const int rows, const int K, const int N,
                            const int lda, const int ldo, const int T) {
#if PACK
  __local float wpk[KP * C];
#endif
  const int c0 = (int)get_global_id(0) * C;
  if (c0 >= N)
    return;
  const int t = (int)get_global_id(1);
  const int z = (int)get_global_id(2);
  const int row0 = t * TILE;
  int base[CV];
  for (int v = 0; v < CV; v++)
    base[v] = min(c0 + v * VW, N - VW);
  out += (long)z * N;
#if DENSE
  (void)sched;
  (void)T;
  PANEL(w + (long)z * K * N)
  const int end = min(rows, row0 + TILE);
  int j = row0;
  BLOCKS(end)
#else
  const long n = (long)rows * H * TOPK;
  __global const int2 *list = (__global const int2 *)(sched + 2 * n);
  __global const int *off = sched + 4 * n;
  vec_t tile[TILE][CV];
  for (int r = 0; r < TILE; r++)
    for (int v = 0; v < CV; v++)
      tile[r][v] = (vec_t)(0.0f);
#if MODE == 1
  const int b0 = z * E, b1 = b0 + E;
#else
  const int b0 = 0, b1 = HE;
#endif
  for (int b = b0; b < b1; b++) {
    const int lo = off[b * T + t], hi = off[b * T + t + 1];
    if (lo == hi)
      continue; /* no row of the tile chose this expert: W[b] not read */
    PANEL(w + (long)b * K * N)
    const int aoff = MODE == 2 ? (b / E) * K : 0;
    int j = lo;
    BLOCKS(hi)
  }
  const int nrows = min(TILE, rows - row0);
  for (int r = 0; r < nrows; r++) {
    __global float *op = out + (long)(row0 + r) * ldo;
    for (int v = 0; v < CV; v++)
      STORE_VEC(tile[r][v], op, v)
  }
#endif
}

#if SMALL
/* The fused small-rows call (scheme 2): one launch, no scratch.  A
 * work-item owns every row (rows <= TILE, the host's check) and a block
 * of C columns of head z (SPLIT) or of the sum over heads (SUM).  It
 * recomputes the routing of its heads as cvmm_route does (the same fma
 * order, sigmoid and top-k), then adds each chosen expert's products,
 * times their gates, in bucket order as cvmm_gemm_reg does, so the two
 * schemes agree; an expert no row chose is never read.  Grid: dim 0 the
 * column blocks, dim 1 the head (SPLIT, and DENSE with heads) or 0. */
#if MODE == 1
#define NHW 1 /* heads a work-item routes */
#else
#define NHW H
#endif
__kernel void cvmm_small(__global const float *restrict a,
                         __global const float *restrict x,
                         __global const float *restrict ws,
                         __global const float *restrict w,
                         __global float *restrict out, const int rows,
                         const int K, const int N, const int lda,
                         const int ldo, const int D) {
  const int c0 = (int)get_global_id(0) * C;
  if (c0 >= N)
    return;
  const int z = (int)get_global_id(1);
  int base[CV];
  for (int v = 0; v < CV; v++)
    base[v] = min(c0 + v * VW, N - VW);
  out += (long)z * N;
#if DENSE
  (void)x;
  (void)ws;
  (void)D;
  PANEL(w + (long)z * K * N)
  const int end = rows;
  int j = 0;
  BLOCKS(end)
#else
  const int h0 = MODE == 1 ? z : 0;
  int2 chosen[TILE][NHW][TOPK];
  for (int r = 0; r < rows; r++) {
    for (int hh = 0; hh < NHW; hh++) {
      const int h = h0 + hh;
      float lg[E];
      for (int e = 0; e < E; e++)
        lg[e] = 0.0f;
      __global const float *xr = x + (long)r * D;
      __global const float *wi = ws + h * E;
      for (int i = 0; i < D; i++) {
        const float xv = xr[i];
        for (int e = 0; e < E; e++)
          lg[e] = fma(xv, wi[e], lg[e]);
        wi += HE;
      }
      float tl[TOPK];
      int te[TOPK];
      cvmm_topk(lg, tl, te);
      for (int s = 0; s < TOPK; s++)
        chosen[r][hh][s] =
            (int2)(te[s], as_int(1.0f / (1.0f + exp(-tl[s]))));
    }
  }
  vec_t tile[TILE][CV];
  for (int r = 0; r < rows; r++)
    for (int v = 0; v < CV; v++)
      tile[r][v] = (vec_t)(0.0f);
  const int row0 = 0;
  for (int b = h0 * E; b < (h0 + NHW) * E; b++) {
    const int hh = b / E - h0, e = b - (b / E) * E;
    /* the bucket: the rows that chose expert e of head h, ascending */
    int2 list[TILE];
    int n = 0;
    for (int r = 0; r < rows; r++)
      for (int s = 0; s < TOPK; s++)
        if (chosen[r][hh][s].x == e)
          list[n++] = (int2)(r, chosen[r][hh][s].y);
    if (n == 0)
      continue; /* no row chose this expert: W[b] not read */
    PANEL(w + (long)b * K * N)
    const int aoff = MODE == 2 ? (b / E) * K : 0;
    int j = 0;
    BLOCKS(n)
  }
  for (int r = 0; r < rows; r++) {
    __global float *op = out + (long)r * ldo;
    for (int v = 0; v < CV; v++)
      STORE_VEC(tile[r][v], op, v)
  }
#endif
}
#endif /* SMALL */

#endif /* VARIANT == 1 */

/* --------------------------------------------- variant 2: local memory */

#if VARIANT == 2

#ifndef TM
#define TM 4
#endif
#ifndef CT
#define CT 16
#endif
#ifndef WG
#define WG 64
#endif
#ifndef KT
#define KT 16
#endif
#define RC ((WG / CT) * TM) /* rows of a gathered block */

/* A block of nr rows (a-row index of block row r: AROW(r)) times W's
 * columns c0 .. c0+CT-1, k-tiles staged in local memory; item (ry, cx)
 * accumulates rows ry*TM .. +TM-1 of column cx in acc[]. */
#define LOCAL_MICRO(AROW)                                                      \
  for (int m = 0; m < TM; m++)                                                 \
    acc[m] = 0.0f;                                                             \
  for (int k0 = 0; k0 < K; k0 += KT) {                                         \
    barrier(CLK_LOCAL_MEM_FENCE);                                              \
    for (int i = lid; i < RC * KT; i += WG) {                                  \
      const int r = i / KT, kk = i - r * KT;                                   \
      float x = 0.0f;                                                          \
      if (r < nr && k0 + kk < K)                                               \
        x = a[(long)(AROW(r)) * lda + aoff + k0 + kk];                         \
      as[i] = x;                                                               \
    }                                                                          \
    for (int i = lid; i < KT * CT; i += WG) {                                  \
      const int kk = i / CT, c = i - kk * CT;                                  \
      float x = 0.0f;                                                          \
      if (k0 + kk < K && c0 + c < N)                                           \
        x = wb[(long)(k0 + kk) * N + c0 + c];                                  \
      wsm[i] = x;                                                              \
    }                                                                          \
    barrier(CLK_LOCAL_MEM_FENCE);                                              \
    for (int kk = 0; kk < KT; kk++) {                                          \
      const float wv = wsm[kk * CT + cx];                                      \
      for (int m = 0; m < TM; m++)                                             \
        acc[m] = fma(as[(ry * TM + m) * KT + kk], wv, acc[m]);                 \
    }                                                                          \
  }

/* Grid: dim 0 the column tiles x WG, dim 1 the row tiles, dim 2 the head
 * (SPLIT, and DENSE with heads) or 0. */
__kernel void cvmm_gemm_local(__global const float *restrict a,
                              __global const float *restrict w,
                              __global float *restrict out,
                              __global const int *restrict sched,
                              const int rows, const int K, const int N,
                              const int lda, const int ldo, const int T) {
  __local float as[RC * KT];
  __local float wsm[KT * CT];
  const int lid = (int)get_local_id(0);
  const int cx = lid % CT, ry = lid / CT;
  const int c0 = (int)get_group_id(0) * CT;
  const int t = (int)get_group_id(1);
  const int z = (int)get_group_id(2);
  const int row0 = t * TILE;
  float acc[TM];
  out += (long)z * N;
#if DENSE
  (void)sched;
  (void)T;
  __global const float *wb = w + (long)z * K * N;
  const int aoff = 0;
  const int end = min(rows, row0 + TILE);
  for (int j = row0; j < end; j += RC) {
    const int nr = min(RC, end - j);
#define DENSE_ROW(r) (j + (r))
    LOCAL_MICRO(DENSE_ROW)
    for (int m = 0; m < TM; m++) {
      const int r = ry * TM + m;
      if (r < nr && c0 + cx < N)
        out[(long)(j + r) * ldo + c0 + cx] = acc[m];
    }
  }
#else
  __local float ot[TILE * CT];
  __local int arow[RC];
  __local int lrow[RC];
  __local float lg[RC];
  const long n = (long)rows * H * TOPK;
  __global const int2 *list = (__global const int2 *)(sched + 2 * n);
  __global const int *off = sched + 4 * n;
  for (int i = lid; i < TILE * CT; i += WG)
    ot[i] = 0.0f;
#if MODE == 1
  const int b0 = z * E, b1 = b0 + E;
#else
  const int b0 = 0, b1 = HE;
#endif
  for (int b = b0; b < b1; b++) {
    const int lo = off[b * T + t], hi = off[b * T + t + 1];
    if (lo == hi)
      continue; /* uniform: every item read the same offsets */
    __global const float *wb = w + (long)b * K * N;
    const int aoff = MODE == 2 ? (b / E) * K : 0;
    for (int j = lo; j < hi; j += RC) {
      const int nr = min(RC, hi - j);
      barrier(CLK_LOCAL_MEM_FENCE); /* the last block's epilogue is done */
      if (lid < nr) {
        const int2 en = list[j + lid];
        arow[lid] = en.x;
        lrow[lid] = en.x - row0;
        lg[lid] = as_float(en.y);
      }
#define GATHER_ROW(r) arow[r]
      LOCAL_MICRO(GATHER_ROW)
      /* a bucket holds a row once: the block's rows are distinct */
      for (int m = 0; m < TM; m++) {
        const int r = ry * TM + m;
        if (r < nr)
          ot[lrow[r] * CT + cx] = fma(lg[r], acc[m], ot[lrow[r] * CT + cx]);
      }
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const int nrows = min(TILE, rows - row0);
  for (int i = lid; i < TILE * CT; i += WG) {
    const int r = i / CT, c = i - r * CT;
    if (r < nrows && c0 + c < N)
      out[(long)(row0 + r) * ldo + c0 + c] = ot[i];
  }
#endif
}
#endif /* VARIANT == 2 */
