/* talking_heads.cl - fused talking-heads attention (spec section 5).
 *
 * Per query i and visible key t: J_a = q_a.k_a over the HK key heads
 * (q pre-scaled by scale * log2(e), so logits are in log2 units and P_l,
 * being linear, keeps that exact), L_c = sum_a P_l[a, c] J_a over the H
 * logit heads, masked, softmax over t per c, U_u = sum_c P_w[c, u] W_c
 * over the HV value heads, O_u = sum_t U_u(t) v_u(t).  The logits never
 * leave the work-item (variant 1) or the work-group (variant 2), which
 * therefore holds every key head of a key tile.
 *
 * SCHEME 2 (two passes over the keys in one launch): pass 1 gathers each
 * logit head's maximum and sum of exponentials, pass 2 recomputes the
 * logits, forms the exact weights and accumulates O_u directly.
 * SCHEME 1 (one pass): online softmax per logit head with an accumulator
 * per (logit head, value head), mixed by P_w and normalised at the end.
 * SCHEME 3 (variant 1 only): scheme 2 with pass 1's masked logits of the
 * first `keep` keys (whole tiles) kept in local memory, RB * H * keep floats
 * a work-item, so pass 2 reads them back and recomputes only the rest.
 *
 * Compile-time parameters (-D), each with a default:
 *   HK, H, HV  key, logit and value heads (so the head loops unroll)
 *   DK, DV     head dims; VWK, VWV vector widths dividing them
 *   CAUSAL 0/1, SCHEME 1/2/3
 *   RB, KB     variant 1: query positions per work-item; keys per tile
 *              (a multiple of 16)
 *   WG, KT     variant 2: work-items (= query positions) per work-group;
 *              keys per tile
 *
 * Masking: L = clamp(kv_lens[b], 0, m) valid keys; with CAUSAL, query i
 * sees key t iff t <= L - n + i; with WINDOW (common.cl's attention
 * options, the only one these kernels take), query i at position
 * p = L - n + i sees key t only if p - window < t, applied with the causal
 * mask after the P_l mix.  Key tiles before a block's first visible key are
 * never read.  A query that sees no key gets zeros.
 * NaN and inf follow clattn.h's contract (common.cl softmax_inv); a logit
 * head's NaN reaches every value head P_w mixes it into. */
#ifndef HK
#define HK 2
#endif
#ifndef H
#define H 2
#endif
#ifndef HV
#define HV 2
#endif
#ifndef DK
#define DK 64
#endif
#ifndef DV
#define DV 64
#endif
#ifndef VWK
#define VWK 1
#endif
#ifndef VWV
#define VWV 1
#endif
#ifndef CAUSAL
#define CAUSAL 0
#endif
#ifndef SCHEME
#define SCHEME 2
#endif
#ifndef RB
#define RB 4
#endif
#ifndef KB
#define KB 16
#endif
#ifndef WG
#define WG 64
#endif
#ifndef KT
#define KT 16
#endif

#define NV (DV / VWV)
/* KB-key tiles of a staged row of ld keys */
#define TILES(ld) (((ld) + KB - 1) / KB)
#define NKV (KB / 16)
/* positions sharing each V row load in the P V of schemes 2 and 3 */
#define PR (RB % 4 == 0 ? 4 : RB % 2 == 0 ? 2 : 1)
#define HMAX (HK > HV ? HK : HV)
typedef FLOATW(VWV) vfloat;

/* P_l and P_w into private arrays: every work-item reads them once. */
inline void th_load_mix(__global const float *p_l, __global const float *p_w,
                        float pl[HK][H], float pw[H][HV]) {
  for (int a = 0; a < HK; a++)
    for (int c = 0; c < H; c++)
      pl[a][c] = p_l[a * H + c];
  for (int c = 0; c < H; c++)
    for (int u = 0; u < HV; u++)
      pw[c][u] = p_w[c * HV + u];
}

/* Staging for variant 1, in float32 per sequence b and KB-key tile T
 * (TILES(ld) of them): K transposed, kt[b][T][a][DK][KB] (it streams keys
 * along vectors), and V, vc[b][T][u][KB][DV]; zero beyond m.  A tile of
 * every head is one contiguous block, so a work-item's walk over the tiles
 * is one stream the hardware prefetches rather than one per (head, dim).
 * One work-item per 16 keys and head x < max(HK, HV): K head x if x < HK,
 * V head x if x < HV.  With WINDOW, the tiles before the one holding the
 * first query's first visible key are not staged: no block reads them.
 * Global size (ld / 16, batch * max(HK, HV)). */
__kernel void th_stage(__global const stor_t *k, __global const stor_t *v,
                       __global float *kt, __global float *vc, int m, int ld,
                       long k_sb, long k_ss, long k_sh, long v_sb, long v_ss,
                       long v_sh, __global const int *kv_lens, int has_lens,
                       int n, OPT_ARGS) {
  (void)softcap2;
  (void)alibi;
  (void)sinks;
  const int t0 = get_global_id(0) * 16;
  const int b = get_global_id(1) / HMAX, x = get_global_id(1) % HMAX;
  if (t0 >= ld)
    return;
#if WINDOW
  const int L = has_lens ? clamp(kv_lens[b], 0, m) : m;
  if (t0 < key_start(L - n, window) / KB * KB)
    return;
#else
  (void)kv_lens;
  (void)has_lens;
  (void)n;
  (void)window;
#endif
  const long tile = (long)b * TILES(ld) + t0 / KB;
  if (x < HK) {
    __global float *ko = kt + (tile * HK + x) * DK * KB + t0 % KB;
    float blk[DK][16];
    for (int u = 0; u < 16; u++) {
      const int t = t0 + u;
      if (t < m) {
        const long kb = b * k_sb + t * k_ss + x * k_sh;
        for (int w = 0; w < DK / VWK; w++) {
          float tmp[VWK];
          STF(VWK, LDW(VWK, k, kb + w * VWK), tmp, 0);
#pragma unroll
          for (int i = 0; i < VWK; i++)
            blk[w * VWK + i][u] = tmp[i];
        }
      } else {
        for (int d = 0; d < DK; d++)
          blk[d][u] = 0.0f;
      }
    }
    for (int d = 0; d < DK; d++)
      vstore16(vload16(0, blk[d]), 0, ko + d * KB);
  }
  if (x < HV) {
    __global float *vo = vc + ((tile * HV + x) * KB + t0 % KB) * DV;
    for (int u = 0; u < 16; u++) {
      const int t = t0 + u;
      if (t < m) {
        const long vb = b * v_sb + t * v_ss + x * v_sh;
        for (int w = 0; w < DV / VWV; w++)
          STF(VWV, LDW(VWV, v, vb + w * VWV), vo, u * DV + w * VWV);
      } else {
        for (int d = 0; d < DV; d++)
          vo[u * DV + d] = 0.0f;
      }
    }
  }
}

/* Variant 1: the masked logits lg[r][c] of the RB positions over the KB
 * keys from t0: J one key head at a time (its RB x NKV accumulators stay
 * in registers, as in attn_fwd_reg), then mixed by P_l. */
inline void th_logits_reg(float qs[RB][HK][DK],
                          __global const float *ktb, int t0,
                          float pl[HK][H], int lo[RB], int lim[RB],
                          float16 lg[RB][H][NKV]) {
  float16 j[RB][HK][NKV];
  for (int a = 0; a < HK; a++) {
    float16 s[RB][NKV];
#pragma unroll
    for (int r = 0; r < RB; r++)
#pragma unroll
      for (int u = 0; u < NKV; u++)
        s[r][u] = (float16)(0.0f);
    __global const float *ka = ktb + ((long)(t0 / KB) * HK + a) * DK * KB;
    for (int d = 0; d < DK; d++) {
      float16 kv[NKV];
#pragma unroll
      for (int u = 0; u < NKV; u++)
        kv[u] = vload16(0, ka + d * KB + 16 * u);
#pragma unroll
      for (int r = 0; r < RB; r++) {
        const float16 qv = (float16)(qs[r][a][d]);
#pragma unroll
        for (int u = 0; u < NKV; u++)
          s[r][u] = fma(qv, kv[u], s[r][u]);
      }
    }
#pragma unroll
    for (int r = 0; r < RB; r++)
#pragma unroll
      for (int u = 0; u < NKV; u++)
        j[r][a][u] = s[r][u];
  }
  const int16 lane =
      (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  /* masks are needed only where the tile crosses some row's key limit or
   * window start (both grow along the block) */
  const int masked = t0 + KB > lim[0] || t0 < lo[RB - 1];
  /* one vector of every key head's J in registers across the logit heads,
   * so each FMA of the mix loads only its P_l broadcast */
  for (int r = 0; r < RB; r++)
#pragma unroll
    for (int u = 0; u < NKV; u++) {
      float16 ja[HK];
#pragma unroll
      for (int a = 0; a < HK; a++)
        ja[a] = j[r][a][u];
      for (int c = 0; c < H; c++) {
        float16 x = (float16)(0.0f);
#pragma unroll
        for (int a = 0; a < HK; a++)
          x = fma((float16)(pl[a][c]), ja[a], x);
        if (masked) {
          const int16 tidx = lane + (int16)(t0 + 16 * u);
          x = select(x, (float16)(-INFINITY),
                     tidx >= lim[r] || tidx < lo[r]);
        }
        lg[r][c][u] = x;
      }
    }
}

/* Scheme 3: where a work-item's kept logits of position r and logit head c
 * over the tile from t0 start ([tile][r][c][KB]), tiles counted from the
 * block's first, tb. */
inline __local float *th_kept(__local float *lgi, int t0, int tb, int r,
                              int c) {
  return lgi + ((long)((t0 - tb) / KB) * RB * H + r * H + c) * KB;
}

/* Variant 1 (CPU-shaped): each work-item owns RB consecutive query
 * positions with all their heads and streams KB-key tiles of the staged
 * K^T and V (th_stage); no local memory, no barriers.
 * Global size (position blocks, batch). */
__kernel void th_fwd_reg(__global const stor_t *q, __global const float *kt,
                         __global const float *vc, __global const float *p_l,
                         __global const float *p_w,
                         __global const int *kv_lens, __global stor_t *o,
                         int n, int m, int ld, int has_lens, float scale_log2,
                         long q_sb, long q_ss, long q_sh, long o_sb,
                         long o_ss, long o_sh
#if SCHEME == 3
                         ,
                         __local float *lgs, int keep
#endif
                         ,
                         OPT_ARGS) {
  const int i0 = get_global_id(0) * RB;
  const int b = get_global_id(1);
  if (i0 >= n)
    return;
  const int L = has_lens ? clamp(kv_lens[b], 0, m) : m;
  float pl[HK][H], pw[H][HV];
  th_load_mix(p_l, p_w, pl, pw);
  (void)softcap2;
  (void)alibi;
  (void)sinks;
  float qs[RB][HK][DK];
  int lo[RB], lim[RB];
  for (int r = 0; r < RB; r++) {
    const int i = min(i0 + r, n - 1);
    for (int a = 0; a < HK; a++) {
      const long qb = b * q_sb + i * q_ss + a * q_sh;
      for (int d = 0; d < DK; d++)
        qs[r][a][d] = LD1(q, qb + d) * scale_log2;
    }
    lim[r] = key_limit(L, n, i);
    lo[r] = key_start(L - n + i, window);
  }
  const int kend = lim[RB - 1]; /* positions increase along the block */
  /* the first tile holding a key the block sees */
  const int tb = lo[0] / KB * KB;
  __global const float *ktb = kt + (long)b * TILES(ld) * HK * DK * KB;
  __global const float *vcb = vc + (long)b * TILES(ld) * HV * KB * DV;
  float mc[RB][H], lc[RB][H]; /* each logit head's maximum and sum */
  float16 lg[RB][H][NKV];
#if SCHEME >= 2
#if SCHEME == 3
  /* this item's kept logits (th_kept) */
  __local float *lgi = lgs + (long)get_local_id(0) * RB * H * keep;
#endif
  /* pass 1: each logit head's maximum and sum of exponentials, per lane
   * (keys t = lane mod 16) so that no tile needs a horizontal reduction or
   * a scalar exponential; the lanes are combined once at the end */
  float16 mv[RB][H], lv[RB][H];
  for (int r = 0; r < RB; r++)
    for (int c = 0; c < H; c++) {
      mv[r][c] = (float16)(-INFINITY);
      lv[r][c] = (float16)(0.0f);
    }
  for (int t0 = tb; t0 < kend; t0 += KB) {
    th_logits_reg(qs, ktb, t0, pl, lo, lim, lg);
#if SCHEME == 3
    if (t0 - tb < keep)
      for (int r = 0; r < RB; r++)
        for (int c = 0; c < H; c++)
#pragma unroll
          for (int u = 0; u < NKV; u++)
            vstore16(lg[r][c][u], u, th_kept(lgi, t0, tb, r, c));
#endif
    for (int r = 0; r < RB; r++)
      for (int c = 0; c < H; c++) {
        float16 mnew = mv[r][c];
#pragma unroll
        for (int u = 0; u < NKV; u++)
          mnew = max(mnew, lg[r][c][u]);
        const float16 mref = softmax_ref16(mnew);
        float16 l = lv[r][c] * exp2s16(mv[r][c] - mref);
#pragma unroll
        for (int u = 0; u < NKV; u++)
          l += exp2s16(lg[r][c][u] - mref);
        lv[r][c] = l;
        mv[r][c] = mnew;
      }
  }
  /* the reference points and inverse sums; a fully masked row has sum 0,
   * reference 0 and weights exp2(-inf) * 0 = 0 */
  for (int r = 0; r < RB; r++)
    for (int c = 0; c < H; c++) {
      mc[r][c] = softmax_ref(hmax16(mv[r][c]));
      const float l =
          hsum16(lv[r][c] * exp2s16(mv[r][c] - (float16)(mc[r][c])));
      lc[r][c] = softmax_inv(l, lim[r] > lo[r]);
    }
  vfloat acc[RB][HV][NV];
  for (int r = 0; r < RB; r++)
    for (int u = 0; u < HV; u++)
#pragma unroll
      for (int w = 0; w < NV; w++)
        acc[r][u][w] = (vfloat)(0.0f);
  float uw[RB][HV][KB];
  /* pass 2: the exact weights, mixed by P_w, times V */
  for (int t0 = tb; t0 < kend; t0 += KB) {
#if SCHEME == 3
    if (t0 - tb < keep)
      for (int r = 0; r < RB; r++)
        for (int c = 0; c < H; c++)
#pragma unroll
          for (int u = 0; u < NKV; u++)
            lg[r][c][u] = vload16(u, th_kept(lgi, t0, tb, r, c));
    else
#endif
      th_logits_reg(qs, ktb, t0, pl, lo, lim, lg);
    /* one vector of every logit head's weights in registers across the
     * value heads, as for the P_l mix */
    for (int r = 0; r < RB; r++)
#pragma unroll
      for (int v = 0; v < NKV; v++) {
        float16 wc[H];
#pragma unroll
        for (int c = 0; c < H; c++)
          wc[c] = exp2s16(lg[r][c][v] - (float16)(mc[r][c])) *
                  (float16)(lc[r][c]);
        for (int u = 0; u < HV; u++) {
          float16 x = (float16)(0.0f);
#pragma unroll
          for (int c = 0; c < H; c++)
            x = fma((float16)(pw[c][u]), wc[c], x);
          vstore16(x, v, uw[r][u]);
        }
      }
    /* P V per value head and group of PR positions: each V row loaded
     * once feeds PR positions' accumulators, which stay in registers.
     * Each position reads only its own visible keys (a masked key's V,
     * though weighted 0, would turn it NaN if it held a NaN or inf): the
     * keys all the group sees together, [gs, ge) (empty where the window
     * is narrower than the group), then each position's rest alone, on the
     * causal diagonal and at the window's start */
    for (int u = 0; u < HV; u++) {
      __global const float *vu = vcb + ((long)(t0 / KB) * HV + u) * KB * DV;
      for (int r0 = 0; r0 < RB; r0 += PR) {
        vfloat a[PR][NV];
#pragma unroll
        for (int r = 0; r < PR; r++)
#pragma unroll
          for (int w = 0; w < NV; w++)
            a[r][w] = acc[r0 + r][u][w];
        const int gs = clamp(lo[r0 + PR - 1] - t0, 0, KB);
        const int ge = max(gs, clamp(lim[r0] - t0, 0, KB));
        for (int t = gs; t < ge; t++)
#pragma unroll
          for (int w = 0; w < NV; w++) {
            const vfloat vt = LDF(VWV, vu, t * DV + w * VWV);
#pragma unroll
            for (int r = 0; r < PR; r++)
              a[r][w] = fma((vfloat)(uw[r0 + r][u][t]), vt, a[r][w]);
          }
        for (int r = 0; r < PR; r++) {
          const int ta = clamp(lo[r0 + r] - t0, 0, KB);
          const int te = clamp(lim[r0 + r] - t0, 0, KB);
          for (int t = ta; t < min(te, gs); t++)
#pragma unroll
            for (int w = 0; w < NV; w++)
              a[r][w] = fma((vfloat)(uw[r0 + r][u][t]),
                            LDF(VWV, vu, t * DV + w * VWV), a[r][w]);
          for (int t = max(ta, ge); t < te; t++)
#pragma unroll
            for (int w = 0; w < NV; w++)
              a[r][w] = fma((vfloat)(uw[r0 + r][u][t]),
                            LDF(VWV, vu, t * DV + w * VWV), a[r][w]);
        }
#pragma unroll
        for (int r = 0; r < PR; r++)
#pragma unroll
          for (int w = 0; w < NV; w++)
            acc[r0 + r][u][w] = a[r][w];
      }
    }
  }
  for (int r = 0; r < RB; r++) {
    const int i = i0 + r;
    if (i >= n)
      break;
    for (int u = 0; u < HV; u++) {
      const long ob = b * o_sb + i * o_ss + u * o_sh;
#pragma unroll
      for (int w = 0; w < NV; w++)
        STW(VWV, acc[r][u][w], o, ob + w * VWV);
    }
  }
#else
  /* one pass: online softmax per logit head, an accumulator per (logit
   * head, value head) */
  for (int r = 0; r < RB; r++)
    for (int c = 0; c < H; c++) {
      mc[r][c] = -INFINITY;
      lc[r][c] = 0.0f;
    }
  vfloat acc[RB][H][HV][NV];
  for (int r = 0; r < RB; r++)
    for (int c = 0; c < H; c++)
      for (int u = 0; u < HV; u++)
#pragma unroll
        for (int w = 0; w < NV; w++)
          acc[r][c][u][w] = (vfloat)(0.0f);
  float pc[RB][H][KB];
  for (int t0 = tb; t0 < kend; t0 += KB) {
    th_logits_reg(qs, ktb, t0, pl, lo, lim, lg);
    for (int r = 0; r < RB; r++)
      for (int c = 0; c < H; c++) {
        float16 tmax = lg[r][c][0];
#pragma unroll
        for (int u = 1; u < NKV; u++)
          tmax = max(tmax, lg[r][c][u]);
        const float mnew = max(mc[r][c], hmax16(tmax));
        const float mref = softmax_ref(mnew);
        const float alpha = exp2s1(mc[r][c] - mref);
        float16 psum = (float16)(0.0f);
#pragma unroll
        for (int u = 0; u < NKV; u++) {
          const float16 e = exp2s16(lg[r][c][u] - (float16)(mref));
          psum += e;
          vstore16(e, u, pc[r][c]);
        }
        lc[r][c] *= alpha;
        lc[r][c] += hsum16(psum);
        mc[r][c] = mnew;
        for (int u = 0; u < HV; u++)
#pragma unroll
          for (int w = 0; w < NV; w++)
            acc[r][c][u][w] *= alpha;
      }
    /* P V per (position, value head), each V row loaded once for the H
     * logit heads' accumulators; each position reads only its own visible
     * keys (a masked key's V, though weighted 0, would turn it NaN if it
     * held a NaN or inf) */
    for (int r = 0; r < RB; r++)
      for (int u = 0; u < HV; u++) {
        __global const float *vu = vcb + ((long)(t0 / KB) * HV + u) * KB * DV;
        const int nt = min(KB, lim[r] - t0);
        for (int t = max(0, lo[r] - t0); t < nt; t++)
#pragma unroll
          for (int w = 0; w < NV; w++) {
            const vfloat vt = LDF(VWV, vu, t * DV + w * VWV);
#pragma unroll
            for (int c = 0; c < H; c++)
              acc[r][c][u][w] = fma((vfloat)(pc[r][c][t]), vt, acc[r][c][u][w]);
          }
      }
  }
  for (int r = 0; r < RB; r++) {
    const int i = i0 + r;
    if (i >= n)
      break;
    for (int u = 0; u < HV; u++) {
      const long ob = b * o_sb + i * o_ss + u * o_sh;
#pragma unroll
      for (int w = 0; w < NV; w++) {
        vfloat x = (vfloat)(0.0f);
#pragma unroll
        for (int c = 0; c < H; c++) {
          const float f = lc[r][c] > 0.0f
                              ? pw[c][u] / lc[r][c]
                              : pw[c][u] * softmax_inv(lc[r][c],
                                                       lim[r] > lo[r]);
          x = fma((vfloat)(f), acc[r][c][u][w], x);
        }
        STW(VWV, x, o, ob + w * VWV);
      }
    }
  }
#endif
}

/* Variant 2: the masked logits s[c][t] of this item's position over the
 * KT keys of the tile in local memory (ks[t][a][d]). */
inline void th_logits_local(float qs[HK][DK], __local const float *ks,
                            float pl[HK][H], int t0, int nt, int lo, int lim,
                            float s[H][KT]) {
  for (int t = 0; t < KT; t++) {
    float j[HK];
    for (int a = 0; a < HK; a++) {
      float dot = 0.0f;
      for (int d = 0; d < DK; d++)
        dot = fma(qs[a][d], ks[(t * HK + a) * DK + d], dot);
      j[a] = dot;
    }
    const int vis = t0 + t < lim && t < nt && t0 + t >= lo;
    for (int c = 0; c < H; c++) {
      float x = 0.0f;
      for (int a = 0; a < HK; a++)
        x = fma(pl[a][c], j[a], x);
      s[c][t] = vis ? x : -INFINITY;
    }
  }
}

/* Variant 2 (GPU-shaped): a work-group of WG items owns WG consecutive
 * query positions (one an item, all its heads); the items load each
 * KT-key tile of every key head (and, in the pass that needs it, every
 * value head) into local memory together.  Every item runs the same tiles
 * so the barriers are uniform.
 * Global size (position groups * WG, batch), local size (WG, 1). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
th_fwd_local(__global const stor_t *q, __global const stor_t *k,
             __global const stor_t *v, __global const float *p_l,
             __global const float *p_w, __global const int *kv_lens,
             __global stor_t *o, int n, int m, int has_lens, float scale_log2,
             long q_sb, long q_ss, long q_sh, long k_sb, long k_ss, long k_sh,
             long v_sb, long v_ss, long v_sh, long o_sb, long o_ss,
             long o_sh, OPT_ARGS) {
  (void)softcap2;
  (void)alibi;
  (void)sinks;
  __local float ks[KT * HK * DK];
  __local float vs[KT * HV * DV];
  const int lid = get_local_id(0);
  const int grp = get_group_id(0);
  const int b = get_global_id(1);
  const int L = has_lens ? clamp(kv_lens[b], 0, m) : m;
  const int i = min(grp * WG + lid, n - 1);
  const int lim = key_limit(L, n, i);
  const int lo = key_start(L - n + i, window);
  /* the group's last position bounds the keys any item needs, its first
   * position's window start where they begin */
  const int kend = key_limit(L, n, min(grp * WG + WG - 1, n - 1));
  const int kbeg = key_start(L - n + grp * WG, window);
  float pl[HK][H], pw[H][HV];
  th_load_mix(p_l, p_w, pl, pw);
  float qs[HK][DK];
  for (int a = 0; a < HK; a++) {
    const long qb = b * q_sb + i * q_ss + a * q_sh;
    for (int d = 0; d < DK; d++)
      qs[a][d] = LD1(q, qb + d) * scale_log2;
  }
  float mc[H], lc[H], s[H][KT];
  for (int c = 0; c < H; c++) {
    mc[c] = -INFINITY;
    lc[c] = 0.0f;
  }
  /* zeroed by their own indices: Oclgrind checks a flat (float *) walk
   * against the innermost array's size, and its instruction counter's
   * run corrupted its heap on such stores */
#if SCHEME != 1
  float acc[HV][DV];
  for (int u = 0; u < HV; u++)
    for (int d = 0; d < DV; d++)
      acc[u][d] = 0.0f;
#else
  float acc[H][HV][DV];
  for (int c = 0; c < H; c++)
    for (int u = 0; u < HV; u++)
      for (int d = 0; d < DV; d++)
        acc[c][u][d] = 0.0f;
#endif
  const long kb = b * k_sb, vb = b * v_sb;
  for (int pass = SCHEME == 2 ? 1 : 2; pass <= 2; pass++) {
    for (int t0 = kbeg; t0 < kend; t0 += KT) {
      const int nt = min(KT, kend - t0);
      for (int e = lid; e < KT * HK * DK; e += WG) {
        const int t = e / (HK * DK), x = e - t * (HK * DK);
        const int a = x / DK, d = x - a * DK;
        ks[e] = t < nt ? LD1(k, kb + (t0 + t) * k_ss + a * k_sh + d) : 0.0f;
      }
      if (pass == 2)
        for (int e = lid; e < KT * HV * DV; e += WG) {
          const int t = e / (HV * DV), x = e - t * (HV * DV);
          const int u = x / DV, d = x - u * DV;
          vs[e] = t < nt ? LD1(v, vb + (t0 + t) * v_ss + u * v_sh + d) : 0.0f;
        }
      barrier(CLK_LOCAL_MEM_FENCE);
      th_logits_local(qs, ks, pl, t0, nt, lo, lim, s);
#if SCHEME != 1
      if (pass == 1) {
        for (int c = 0; c < H; c++) {
          float tmax = -INFINITY;
          for (int t = 0; t < KT; t++)
            tmax = max(tmax, s[c][t]);
          const float mnew = max(mc[c], tmax);
          const float mref = softmax_ref(mnew);
          const float alpha = exp2s1(mc[c] - mref);
          float psum = 0.0f;
          for (int t = 0; t < KT; t++)
            psum += exp2s1(s[c][t] - mref);
          lc[c] *= alpha;
          lc[c] += psum;
          mc[c] = mnew;
        }
      } else {
        /* this position's visible keys alone: a masked key's V, though
         * weighted 0, would turn it NaN if it held a NaN or inf */
        const int tl = min(KT, max(0, lim - t0));
        for (int t = max(0, lo - t0); t < tl; t++) {
          float w[H];
          for (int c = 0; c < H; c++)
            w[c] = exp2s1(s[c][t] - mc[c]) * lc[c];
          for (int u = 0; u < HV; u++) {
            float x = 0.0f;
            for (int c = 0; c < H; c++)
              x = fma(pw[c][u], w[c], x);
            for (int d = 0; d < DV; d++)
              acc[u][d] = fma(x, vs[(t * HV + u) * DV + d], acc[u][d]);
          }
        }
      }
#else
      for (int c = 0; c < H; c++) {
        float tmax = -INFINITY;
        for (int t = 0; t < KT; t++)
          tmax = max(tmax, s[c][t]);
        const float mnew = max(mc[c], tmax);
        const float mref = softmax_ref(mnew);
        const float alpha = exp2s1(mc[c] - mref);
        float psum = 0.0f;
        for (int t = 0; t < KT; t++) {
          s[c][t] = exp2s1(s[c][t] - mref);
          psum += s[c][t];
        }
        lc[c] *= alpha;
        lc[c] += psum;
        mc[c] = mnew;
        /* this position's visible keys alone, as in scheme 2 */
        const int tl = min(KT, max(0, lim - t0));
        const int ta = max(0, lo - t0);
        for (int u = 0; u < HV; u++)
          for (int d = 0; d < DV; d++) {
            float x = acc[c][u][d] * alpha;
            for (int t = ta; t < tl; t++)
              x = fma(s[c][t], vs[(t * HV + u) * DV + d], x);
            acc[c][u][d] = x;
          }
      }
#endif
      barrier(CLK_LOCAL_MEM_FENCE); /* tiles are overwritten next */
    }
#if SCHEME != 1
    if (pass == 1)
      for (int c = 0; c < H; c++) {
        mc[c] = softmax_ref(mc[c]);
        lc[c] = softmax_inv(lc[c], lim > lo);
      }
#endif
  }
  if (grp * WG + lid >= n)
    return;
#if SCHEME == 1
  /* softmax_inv of a sum that is not positive (computed here once: a call
   * of it in the loop below crashed Oclgrind's instruction counter) */
  const float unseen = softmax_inv(0.0f, lim > lo);
#endif
  for (int u = 0; u < HV; u++) {
    const long ob = b * o_sb + i * o_ss + u * o_sh;
    for (int d = 0; d < DV; d++) {
#if SCHEME != 1
      ST1(acc[u][d], o, ob + d);
#else
      float x = 0.0f;
      for (int c = 0; c < H; c++) {
        const float f = lc[c] > 0.0f ? pw[c][u] / lc[c] : pw[c][u] * unseen;
        x = fma(f, acc[c][u][d], x);
      }
      ST1(x, o, ob + d);
#endif
    }
  }
}
