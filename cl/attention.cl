/* attention.cl - fused prefill attention (flash-attention style) for GQA.
 *
 * Rows: the g = heads_q / heads_kv query heads of one KV group are packed
 * with the query positions into "rows" (row r = i * g + jg), so a K/V tile
 * loaded once serves every query head of the group.  Scores never leave the
 * work-item (variant 1) or the work-group (variant 2).
 *
 * Compile-time parameters (-D), each with a default:
 *   DK, DV   head dims of q/k and v
 *   VWK, VWV vector widths used on DK and DV (dividing them)
 *   CAUSAL   0/1
 *   RB, KB   variant 1: rows per work-item; keys per tile (multiple of 16)
 *   WG, KT   variant 2: work-items (= rows) per work-group; keys per tile
 *   KV_SAME  1: V is K (one buffer, DK == DV; Efficient attention's X),
 *            each key row read once for both
 *
 * Masking: L = clamp(kv_lens[b], 0, m) valid keys (m without lens); with
 * CAUSAL, row position i sees key t iff t <= L - n + i.  Rows that see no
 * key produce zeros; masked keys are never weighted, whatever they hold;
 * NaN and inf follow clattn.h's contract (common.cl softmax_inv).
 *
 * The attention options (common.cl): a window's lower bound starts the
 * key loop of a work-item (variant 1, rounded down to a tile) or of a
 * work-group (variant 2) at its first row's first visible key, so tiles
 * before it are never loaded; the soft-cap and ALiBi's bias apply to each
 * scored logit before the masks; a sink starts each row's running maximum
 * and sum. */
#ifndef DK
#define DK 64
#endif
#ifndef DV
#define DV 64
#endif
/* 1 divides every head dim: a program built without them (kv_append's
 * shares this file) still compiles everything; launches pass the widest
 * power of two up to 16 dividing DK and DV (clattn__vec_width) */
#ifndef VWV
#define VWV 1
#endif
#ifndef VWK
#define VWK 1
#endif
#ifndef CAUSAL
#define CAUSAL 0
#endif
#ifndef RB
#define RB 4
#endif
#ifndef KB
#define KB 32
#endif
#ifndef WG
#define WG 64
#endif
#ifndef KT
#define KT 16
#endif
#ifndef KV_SAME
#define KV_SAME 0
#endif
#if KV_SAME && DK != DV
#error "KV_SAME needs DK == DV"
#endif

#define NV (DV / VWV)
#define NKV (KB / 16)
typedef FLOATW(VWV) vfloat;

/* Staging for the register-blocked kernel, in float32 per (sequence, KV
 * head) bc: K transposed, kt[bc][DK][ld] (it streams keys along vectors),
 * and V contiguous, vc[bc][ld][DV]; zero beyond m.  The host makes ld a
 * multiple of 16 whose 64-byte-line count is odd, so the DK rows of a tile
 * do not all fall in one cache set.  One work-item per 16 keys.
 * Global size (ld / 16, batch * hkv). */
__kernel void kv_stage(__global const stor_t *k, __global const stor_t *v,
                       __global float *kt, __global float *vc, int m, int ld,
                       int hkv, long k_sb, long k_ss, long k_sh, long v_sb,
                       long v_ss, long v_sh, __global const int *kv_lens,
                       int n, int has_lens, int window) {
  const int t0 = get_global_id(0) * 16;
  const int bc = get_global_id(1);
  if (t0 >= ld)
    return;
  const int b = bc / hkv, c = bc % hkv;
#if WINDOW
  /* keys before the first row's window, in whole KB tiles, are never read
   * (attn_fwd_reg starts there) */
  const int L = has_lens ? clamp(kv_lens[b], 0, m) : m;
  if (t0 + 16 <= key_start(L - n, window) / KB * KB)
    return;
#else
  (void)kv_lens;
  (void)n;
  (void)has_lens;
  (void)window;
#endif
  __global float *ko = kt + (long)bc * DK * ld + t0;
  __global float *vo = vc + ((long)bc * ld + t0) * DV;
  float blk[DK][16];
  for (int u = 0; u < 16; u++) {
    const int t = t0 + u;
    if (t < m) {
      const long kb = b * k_sb + t * k_ss + c * k_sh;
      const long vb = b * v_sb + t * v_ss + c * v_sh;
      for (int w = 0; w < DK / VWK; w++) {
        float tmp[VWK];
        STF(VWK, LDW(VWK, k, kb + w * VWK), tmp, 0);
#pragma unroll
        for (int i = 0; i < VWK; i++) {
          blk[w * VWK + i][u] = tmp[i];
#if KV_SAME
          vo[u * DV + w * VWK + i] = tmp[i];
#endif
        }
      }
#if !KV_SAME
      for (int w = 0; w < DV / VWV; w++)
        STF(VWV, LDW(VWV, v, vb + w * VWV), vo, u * DV + w * VWV);
#else
      (void)vb;
#endif
    } else {
      for (int d = 0; d < DK; d++)
        blk[d][u] = 0.0f;
      for (int d = 0; d < DV; d++)
        vo[u * DV + d] = 0.0f;
    }
  }
  for (int d = 0; d < DK; d++)
    vstore16(vload16(0, blk[d]), 0, ko + (long)d * ld);
}

/* Variant 1 (CPU-shaped): each work-item owns RB rows and streams KB-key
 * tiles of the staged K^T and V (kv_stage) through float16 registers; no
 * local memory, no barriers.  Global size: (row blocks, batch * hkv). */
__kernel void attn_fwd_reg(__global const stor_t *q, __global const float *kt,
                           __global const float *vc,
                           __global const int *kv_lens, __global stor_t *o,
                           int n, int m, int ld, int hkv, int g, int has_lens,
                           float scale_log2, long q_sb, long q_ss, long q_sh,
                           long o_sb, long o_ss, long o_sh, OPT_ARGS) {
  const int blk = get_global_id(0);
  const int bc = get_global_id(1);
  const int rows = n * g;
  const int r0 = blk * RB;
  if (r0 >= rows)
    return;
  const int b = bc / hkv, c = bc % hkv;
  const int L = has_lens ? clamp(kv_lens[b], 0, m) : m;

  float qs[RB][DK];
  int lim[RB], lo[RB], pos[RB];
  float slope2[RB], mrow[RB], lrow[RB];
#pragma unroll
  for (int r = 0; r < RB; r++) {
    const int rho = min(r0 + r, rows - 1);
    const int i = rho / g, j = c * g + rho % g;
    const long qb = b * q_sb + i * q_ss + j * q_sh;
    for (int d = 0; d < DK; d++)
      qs[r][d] = LD1(q, qb + d) * scale_log2;
    pos[r] = L - n + i; /* the row's position (the causal mask's) */
    lim[r] = key_limit(L, n, i);
    lo[r] = min(key_start(pos[r], window), lim[r]);
    slope2[r] = alibi_slope2(alibi, j);
    mrow[r] = sink_logit2(sinks, j);
    lrow[r] = sink_sum(mrow[r]);
  }
  /* rows are in increasing position order: the first starts, the last
   * ends the keys any row needs; tiles stay aligned to KB (kv_stage) */
  const int kbeg = key_start(pos[0], window) / KB * KB;
  const int kend = lim[RB - 1];

  vfloat acc[RB][NV];
#pragma unroll
  for (int r = 0; r < RB; r++)
#pragma unroll
    for (int w = 0; w < NV; w++)
      acc[r][w] = (vfloat)(0.0f);
  __global const float *ktb = kt + (long)bc * DK * ld;
  __global const float *vcb = vc + (long)bc * ld * DV;
  const int16 lane = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                             14, 15);
  float p[RB][KB];

  for (int t0 = kbeg; t0 < kend; t0 += KB) {
    float16 s[RB][NKV];
#pragma unroll
    for (int r = 0; r < RB; r++)
#pragma unroll
      for (int u = 0; u < NKV; u++)
        s[r][u] = (float16)(0.0f);
    for (int d = 0; d < DK; d++) {
      float16 kv[NKV];
#pragma unroll
      for (int u = 0; u < NKV; u++)
        kv[u] = vload16(0, ktb + (long)d * ld + t0 + 16 * u);
#pragma unroll
      for (int r = 0; r < RB; r++) {
        const float16 qv = (float16)(qs[r][d]);
#pragma unroll
        for (int u = 0; u < NKV; u++)
          s[r][u] = fma(qv, kv[u], s[r][u]);
      }
    }
    /* masks are needed only where a tile crosses some row's bounds */
    const int masked = t0 + KB > lim[0] || t0 < lo[RB - 1];
#pragma unroll
    for (int r = 0; r < RB; r++) {
      float16 tmax = (float16)(-INFINITY);
#pragma unroll
      for (int u = 0; u < NKV; u++) {
#if SOFTCAP || ALIBI
        s[r][u] = opt_logit16(s[r][u], softcap2, slope2[r], pos[r],
                              t0 + 16 * u);
#endif
        if (masked) {
          const int16 tidx = lane + (int16)(t0 + 16 * u);
          s[r][u] = select(s[r][u], (float16)(-INFINITY),
                           tidx >= lim[r] || tidx < lo[r]);
        }
        tmax = max(tmax, s[r][u]);
      }
      const float alpha = online_softmax16(s[r], NKV, hmax16(tmax), &mrow[r],
                                           &lrow[r], p[r]);
#pragma unroll
      for (int w = 0; w < NV; w++)
        acc[r][w] *= alpha;
    }
    /* P V row by row: one row's NV accumulators stay in registers while
     * the tile's V rows (staged, contiguous: in L1 after the first row)
     * stream past; all RB * NV of them at once would not fit a CPU's
     * register file (16 x 256-bit on AVX2) and would spill.  Each row stops
     * at its own key limit: a masked key's V, though weighted 0, would turn
     * the row NaN if it held a NaN or inf */
#pragma unroll
    for (int r = 0; r < RB; r++) {
      const int tb = max(0, lo[r] - t0), nt = min(KB, lim[r] - t0);
      vfloat a[NV];
#pragma unroll
      for (int w = 0; w < NV; w++)
        a[w] = acc[r][w];
      for (int t = tb; t < nt; t++) {
        const vfloat pt = (vfloat)(p[r][t]);
#pragma unroll
        for (int w = 0; w < NV; w++)
          a[w] = fma(pt, LDF(VWV, vcb, (long)(t0 + t) * DV + w * VWV), a[w]);
      }
#pragma unroll
      for (int w = 0; w < NV; w++)
        acc[r][w] = a[w];
    }
  }

#pragma unroll

  for (int r = 0; r < RB; r++) {
    const int rho = r0 + r;
    if (rho >= rows)
      break;
    const int i = rho / g, j = c * g + rho % g;
    const float inv = softmax_inv(lrow[r], lim[r] > lo[r]);
    const long ob = b * o_sb + i * o_ss + j * o_sh;
#pragma unroll
    for (int w = 0; w < NV; w++)
      STW(VWV, acc[r][w] * inv, o, ob + w * VWV);
  }
}

/* Variant 2 (GPU-shaped): a work-group of WG items owns WG consecutive rows
 * (one per item); the items load each KT-key tile of K and V into local
 * memory together, then each scores its row against the tile.  Every item
 * runs the same number of tiles so the barriers are uniform.
 * Global size: (row groups * WG, batch * hkv), local size (WG, 1). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
attn_fwd_local(__global const stor_t *q, __global const stor_t *k,
               __global const stor_t *v, __global const int *kv_lens,
               __global stor_t *o, int n, int m, int hkv, int g, int has_lens,
               float scale_log2, long q_sb, long q_ss, long q_sh, long k_sb,
               long k_ss, long k_sh, long v_sb, long v_ss, long v_sh,
               long o_sb, long o_ss, long o_sh, OPT_ARGS) {
  __local float ks[KT * DK];
#if KV_SAME
#define vs ks
#else
  __local float vs[KT * DV];
#endif
  const int lid = get_local_id(0);
  const int grp = get_group_id(0);
  const int bc = get_global_id(1);
  const int b = bc / hkv, c = bc % hkv;
  const int rows = n * g;
  const int L = has_lens ? clamp(kv_lens[b], 0, m) : m;
  const int rho = min(grp * WG + lid, rows - 1);
  const int i = rho / g, j = c * g + rho % g;
  const int pos = L - n + i; /* the row's position (the causal mask's) */
  const int lim = key_limit(L, n, i);
  const int lo = min(key_start(pos, window), lim);
  /* the group's first row starts, its last row ends, the keys any item
   * needs: tiles outside them are never loaded */
  const int kbeg = key_start(L - n + grp * WG / g, window);
  const int kend = key_limit(L, n, min(grp * WG + WG - 1, rows - 1) / g);
  const float slope2 = alibi_slope2(alibi, j);

  float qs[DK], acc[DV];
  const long qb = b * q_sb + i * q_ss + j * q_sh;
  for (int d = 0; d < DK; d++)
    qs[d] = LD1(q, qb + d) * scale_log2;
  for (int d = 0; d < DV; d++)
    acc[d] = 0.0f;
  float mrow = sink_logit2(sinks, j);
  float lrow = sink_sum(mrow);
  const long kb = b * k_sb + c * k_sh;
  const long vb = b * v_sb + c * v_sh;

  for (int t0 = kbeg; t0 < kend; t0 += KT) {
    const int nt = min(KT, kend - t0);
    for (int e = lid; e < KT * DK; e += WG) {
      const int t = e / DK, d = e - t * DK;
      ks[e] = t < nt ? LD1(k, kb + (t0 + t) * k_ss + d) : 0.0f;
    }
#if !KV_SAME
    for (int e = lid; e < KT * DV; e += WG) {
      const int t = e / DV, d = e - t * DV;
      vs[e] = t < nt ? LD1(v, vb + (t0 + t) * v_ss + d) : 0.0f;
    }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    float s[KT];
    float tmax = -INFINITY;
    for (int t = 0; t < KT; t++) {
      float dot = 0.0f;
      for (int d = 0; d < DK; d++)
        dot = fma(qs[d], ks[t * DK + d], dot);
      dot = opt_logit(dot, softcap2, slope2, pos, t0 + t);
      s[t] = (t0 + t < lim && t0 + t >= lo && t < nt) ? dot : -INFINITY;
      tmax = max(tmax, s[t]);
    }
    const float mnew = max(mrow, tmax);
    const float mref = softmax_ref(mnew);
    const float alpha = exp2s1(mrow - mref);
    float psum = 0.0f;
    for (int t = 0; t < KT; t++) {
      s[t] = exp2s1(s[t] - mref);
      psum += s[t];
    }
    lrow = alpha * lrow + psum;
    mrow = mnew;
    if (t0 >= lo && t0 + KT <= lim) {
      for (int d = 0; d < DV; d++) {
        float a = acc[d] * alpha;
        for (int t = 0; t < KT; t++)
          a = fma(s[t], vs[t * DV + d], a);
        acc[d] = a;
      }
    } else {
      /* the tile crosses one of this row's bounds: weigh its keys alone,
       * as a masked key's V, though weighted 0, would turn the row NaN if
       * it held a NaN or inf (beyond nt the tile is zeros, beyond the
       * bounds it is not) */
      const int tb = clamp(lo - t0, 0, KT), tl = clamp(lim - t0, 0, KT);
      for (int d = 0; d < DV; d++) {
        float a = acc[d] * alpha;
        for (int t = tb; t < tl; t++)
          a = fma(s[t], vs[t * DV + d], a);
        acc[d] = a;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE); /* tiles are overwritten next */
  }

  if (grp * WG + lid < rows) {
    const float inv = softmax_inv(lrow, lim > lo);
    const long ob = b * o_sb + i * o_ss + j * o_sh;
    for (int d = 0; d < DV; d++)
      ST1(acc[d] * inv, o, ob + d);
  }
  (void)vb;
}
#undef vs

/* Variant 3 (subgroups; compiled only with -D SG, the subgroup size, on a
 * device that reports cl_khr_subgroups or cl_intel_subgroups): a
 * work-group is one subgroup of SG lanes and owns RW consecutive rows (row
 * r = i * g + jg, as above).  It takes SG keys at a time, a key a lane:
 * the lane scores its key against the RW rows (their q staged in local
 * memory once, the one barrier), each row's softmax statistics are reduced
 * across the subgroup (sub_group_reduce_max / _add) and kept in
 * registers, and in the P V pass each key's probability is broadcast
 * (sub_group_broadcast) to the lanes, which own the value dims
 * d = lane + n SG: every K and V element is read once a work-group, with
 * no local tiles and no barrier per tile.  A row weighs only the keys
 * inside its own bounds (a masked key's V, though weighted 0, would turn
 * it NaN if it held a NaN or inf).  SG_REQD: the kernel requires the size
 * (cl_intel_required_subgroup_size); else SG is the size the device gives
 * a work-group of SG items, which the host queried.
 * Global size: (ceil(rows / RW) * SG, batch * hkv), local size (SG, 1). */
#ifdef SG
#if defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#elif defined(cl_intel_subgroups)
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#endif
#ifndef RW
#define RW 8
#endif
#if SG_REQD
#define SG_ATTR __attribute__((intel_reqd_sub_group_size(SG)))
#else
#define SG_ATTR
#endif
#define SG_ND ((DV + SG - 1) / SG) /* value dims a lane */

__kernel __attribute__((reqd_work_group_size(SG, 1, 1))) SG_ATTR void
attn_fwd_sg(__global const stor_t *q, __global const stor_t *k,
            __global const stor_t *v, __global const int *kv_lens,
            __global stor_t *o, int n, int m, int hkv, int g, int has_lens,
            float scale_log2, long q_sb, long q_ss, long q_sh, long k_sb,
            long k_ss, long k_sh, long v_sb, long v_ss, long v_sh, long o_sb,
            long o_ss, long o_sh, OPT_ARGS) {
  __local float qs[RW * DK];
  const int lane = (int)get_sub_group_local_id();
  const int grp = get_group_id(0);
  const int bc = get_global_id(1);
  const int b = bc / hkv, c = bc % hkv;
  const int rows = n * g;
  const int L = has_lens ? clamp(kv_lens[b], 0, m) : m;
  const int r0 = grp * RW;
  /* the group's first row starts, its last row ends, the keys any row
   * needs */
  const int kbeg = key_start(L - n + r0 / g, window);
  const int kend = key_limit(L, n, min(r0 + RW - 1, rows - 1) / g);

  int pos[RW], lo[RW], lim[RW];
  float m_[RW], l_[RW], sl2[RW], acc[RW][SG_ND];
  for (int r = 0; r < RW; r++) {
    const int rho = min(r0 + r, rows - 1);
    const int i = rho / g, j = c * g + rho % g;
    pos[r] = L - n + i;
    lim[r] = key_limit(L, n, i);
    lo[r] = min(key_start(pos[r], window), lim[r]);
    sl2[r] = alibi_slope2(alibi, j);
    m_[r] = sink_logit2(sinks, j);
    l_[r] = sink_sum(m_[r]);
    for (int nn = 0; nn < SG_ND; nn++)
      acc[r][nn] = 0.0f;
  }
  for (int e = lane; e < RW * DK; e += SG) {
    const int r = e / DK, d = e - r * DK;
    const int rho = min(r0 + r, rows - 1);
    const int i = rho / g, j = c * g + rho % g;
    qs[e] = LD1(q, b * q_sb + i * q_ss + j * q_sh + d) * scale_log2;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const long kb = b * k_sb + c * k_sh;
  const long vb = b * v_sb + c * v_sh;

  for (int t0 = kbeg; t0 < kend; t0 += SG) {
    const int t = t0 + lane, ok = t < kend;
    float sc[RW];
    for (int r = 0; r < RW; r++)
      sc[r] = 0.0f;
    if (ok) {
      const long kr = kb + t * k_ss;
      for (int d = 0; d < DK; d++) {
        const float kd = LD1(k, kr + d);
        for (int r = 0; r < RW; r++)
          sc[r] = fma(qs[r * DK + d], kd, sc[r]);
      }
    }
    for (int r = 0; r < RW; r++) {
      const float x = t >= lo[r] && t < lim[r]
                          ? opt_logit(sc[r], softcap2, sl2[r], pos[r], t)
                          : -INFINITY;
      const float mnew = max(m_[r], sub_group_reduce_max(x));
      const float mref = softmax_ref(mnew);
      const float alpha = exp2s1(m_[r] - mref);
      const float p = exp2s1(x - mref);
      l_[r] = alpha * l_[r] + sub_group_reduce_add(p);
      m_[r] = mnew;
      sc[r] = p;
      for (int nn = 0; nn < SG_ND; nn++)
        acc[r][nn] *= alpha;
    }
    const int nt = min(SG, kend - t0);
    for (int u = 0; u < nt; u++) {
      const int tu = t0 + u;
      const long vr = vb + tu * v_ss;
      float vv[SG_ND];
      for (int nn = 0; nn < SG_ND; nn++) {
        const int d = lane + nn * SG;
        vv[nn] = d < DV ? LD1(v, vr + d) : 0.0f;
      }
      for (int r = 0; r < RW; r++) {
        const float ph = sub_group_broadcast(sc[r], (uint)u);
        if (tu >= lo[r] && tu < lim[r])
          for (int nn = 0; nn < SG_ND; nn++)
            acc[r][nn] = fma(ph, vv[nn], acc[r][nn]);
      }
    }
  }

  for (int r = 0; r < RW && r0 + r < rows; r++) {
    const int i = (r0 + r) / g, j = c * g + (r0 + r) % g;
    const float inv = softmax_inv(l_[r], lim[r] > lo[r]);
    const long ob = b * o_sb + i * o_ss + j * o_sh;
    for (int nn = 0; nn < SG_ND; nn++) {
      const int d = lane + nn * SG;
      if (d < DV)
        ST1(acc[r][nn] * inv, o, ob + d);
    }
  }
  (void)vb;
}
#undef SG_ATTR
#undef SG_ND
#endif /* SG */
