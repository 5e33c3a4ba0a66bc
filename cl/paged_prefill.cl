/* paged_prefill.cl - chunked prefill over a paged KV cache (clattn.h,
 * clattn_paged_attention): n new queries per sequence attend to the cached
 * prefix plus themselves, K and V read through the block table.
 *
 * Rows: as in attention.cl, the g query heads of one KV head are packed
 * with the query positions into rows (row r = i * g + jg).  A work-group of
 * WG items owns RQ consecutive rows of one (sequence, KV head), RQ / WG a
 * work-item (row lid + WG * r); it walks the keys KT at a time: each tile's
 * pages (and an int8 cache's scales) first, then its K and V rows into
 * local memory, then every item scores its rows against the tile with the
 * online softmax.  Tiles are aligned to KT, so a tile is part of one page
 * (KT <= PAGE) or KT / PAGE whole pages.
 *
 * Compile-time parameters (-D), each with a default:
 *   DK, DV    head dims of q/k and v
 *   CAUSAL    0/1
 *   PAGE      positions a page (a power of two)
 *   WG, RQ    work-items and rows a work-group (RQ a multiple of WG)
 *   KT        keys a tile (a power of two)
 *   CACHE_I8  1: int8 cache rows, dequantized by their float32 scale
 *
 * Masking: L = clamp(kv_lens[b], 0, max_blocks * PAGE) keys; query i sits
 * at position L - n + i and with CAUSAL sees keys t <= that position.  A
 * page index outside 0 .. num_blocks - 1 (only possible with the caller's
 * `unchecked`) makes its keys invisible: they are never read.  Table
 * entries past a sequence's last page are never read either.  Rows that
 * see no key produce zeros. */
#ifndef DK
#define DK 64
#endif
#ifndef DV
#define DV 64
#endif
#ifndef CAUSAL
#define CAUSAL 0
#endif
#ifndef PAGE
#define PAGE 16
#endif
#ifndef WG
#define WG 64
#endif
#ifndef RQ
#define RQ WG
#endif
#ifndef KT
#define KT 16
#endif
#ifndef CACHE_I8
#define CACHE_I8 0
#endif
#if RQ % WG != 0
#error "RQ must be a multiple of WG"
#endif
#define RPI (RQ / WG)

#if CACHE_I8
typedef char cache_t;
#define LDC(p, off) convert_float((p)[off])
#else
typedef stor_t cache_t;
#define LDC(p, off) LD1(p, off)
#endif

/* Global size (row groups * WG, batch * hkv), local size (WG, 1). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
paged_prefill(__global const stor_t *q, __global const cache_t *kc,
              __global const cache_t *vc, __global const float *ksc,
              __global const float *vsc, __global const int *table,
              __global const int *kv_lens, __global stor_t *o, int n, int hkv,
              int g, int num_blocks, int max_blocks, float scale_log2,
              OPT_ARGS) {
  __local float ks[KT * DK];
  __local float vs[KT * DV];
  __local int kp[KT]; /* each key's page; -1: past the end or not a page */
#if CACHE_I8
  __local float kscl[KT], vscl[KT];
#else
  (void)ksc;
  (void)vsc;
#endif
  const int lid = get_local_id(0);
  const int grp = get_group_id(0);
  const int bc = get_global_id(1);
  const int b = bc / hkv, c = bc % hkv;
  const int hq = hkv * g;
  const int rows = n * g;
  const int L = clamp(kv_lens[b], 0, max_blocks * PAGE);

  float qs[RPI][DK], acc[RPI][DV];
  int pos[RPI], lim[RPI], lo[RPI], seen[RPI];
  float slope2[RPI], mrow[RPI], lrow[RPI];
  for (int r = 0; r < RPI; r++) {
    const int rho = min(grp * RQ + r * WG + lid, rows - 1);
    const int i = rho / g, j = c * g + rho % g;
    pos[r] = L - n + i;
    lim[r] = key_limit(L, n, i);
    lo[r] = min(key_start(pos[r], window), lim[r]);
    seen[r] = 0;
    slope2[r] = alibi_slope2(alibi, j);
    mrow[r] = sink_logit2(sinks, j);
    lrow[r] = sink_sum(mrow[r]);
    const long qb = (((long)b * n + i) * hq + j) * DK;
    for (int d = 0; d < DK; d++)
      qs[r][d] = LD1(q, qb + d) * scale_log2;
    for (int d = 0; d < DV; d++)
      acc[r][d] = 0.0f;
  }
  /* the group's first row starts, its last row ends, the keys any item
   * needs (tiles aligned to KT, so a tile never straddles a page unless it
   * holds whole pages) */
  const int kbeg = key_start(L - n + grp * RQ / g, window) / KT * KT;
  const int kend = key_limit(L, n, min(grp * RQ + RQ - 1, rows - 1) / g);
  const long trow = (long)b * max_blocks;

  for (int t0 = kbeg; t0 < kend; t0 += KT) {
    const int nt = min(KT, kend - t0);
    for (int t = lid; t < KT; t += WG) {
      int page = -1;
      if (t < nt) {
        page = table[trow + (t0 + t) / PAGE];
        if (page < 0 || page >= num_blocks)
          page = -1;
      }
      kp[t] = page;
#if CACHE_I8
      float sk = 0.0f, sv = 0.0f;
      if (page >= 0) {
        const long si = ((long)page * PAGE + (t0 + t) % PAGE) * hkv + c;
        sk = ksc[si];
        sv = vsc[si];
      }
      kscl[t] = sk;
      vscl[t] = sv;
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < KT * DK; e += WG) {
      const int t = e / DK, d = e - t * DK, page = kp[t];
      float x = 0.0f;
      if (page >= 0) {
        x = LDC(kc, (((long)page * PAGE + (t0 + t) % PAGE) * hkv + c) * DK + d);
#if CACHE_I8
        x *= kscl[t];
#endif
      }
      ks[d * KT + t] = x;
    }
    for (int e = lid; e < KT * DV; e += WG) {
      const int t = e / DV, d = e - t * DV, page = kp[t];
      float x = 0.0f;
      if (page >= 0) {
        x = LDC(vc, (((long)page * PAGE + (t0 + t) % PAGE) * hkv + c) * DV + d);
#if CACHE_I8
        x *= vscl[t];
#endif
      }
      vs[e] = x;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* QK^T of the item's rows together, the keys innermost: K is
     * transposed in the tile, so a CPU compiler vectorises along the keys
     * and each K element read serves every row */
    float sc[RPI][KT];
    for (int r = 0; r < RPI; r++)
      for (int t = 0; t < KT; t++)
        sc[r][t] = 0.0f;
    for (int d = 0; d < DK; d++)
      for (int t = 0; t < KT; t++) {
        const float kd = ks[d * KT + t];
        for (int r = 0; r < RPI; r++)
          sc[r][t] = fma(qs[r][d], kd, sc[r][t]);
      }
    for (int r = 0; r < RPI; r++) {
      float *s = sc[r];
      float tmax = -INFINITY;
      for (int t = 0; t < KT; t++) {
        const float x = opt_logit(s[t], softcap2, slope2[r], pos[r], t0 + t);
        const int vis = t0 + t < lim[r] && t0 + t >= lo[r] && kp[t] >= 0;
        seen[r] |= vis;
        s[t] = vis ? x : -INFINITY;
        tmax = max(tmax, s[t]);
      }
      const float mnew = max(mrow[r], tmax);
      const float mref = softmax_ref(mnew);
      const float alpha = exp2s1(mrow[r] - mref);
      float psum = 0.0f;
      for (int t = 0; t < KT; t++) {
        s[t] = exp2s1(s[t] - mref);
        psum += s[t];
      }
      lrow[r] = alpha * lrow[r] + psum;
      mrow[r] = mnew;
      /* only the keys within the row's bounds: a masked key's V, though
       * weighted 0, would turn the row NaN if it held a NaN or inf (keys
       * of no page are zeros in the tile) */
      const int tb = clamp(lo[r] - t0, 0, KT), tl = clamp(lim[r] - t0, 0, KT);
      for (int d = 0; d < DV; d++)
        acc[r][d] *= alpha;
      for (int t = tb; t < tl; t++) {
        const float pt = s[t];
        for (int d = 0; d < DV; d++)
          acc[r][d] = fma(pt, vs[t * DV + d], acc[r][d]);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE); /* the tiles are overwritten next */
  }

  for (int r = 0; r < RPI; r++) {
    const int rho = grp * RQ + r * WG + lid;
    if (rho >= rows)
      break;
    const int i = rho / g, j = c * g + rho % g;
    const float inv = softmax_inv(lrow[r], seen[r]);
    const long ob = (((long)b * n + i) * hq + j) * DV;
    for (int d = 0; d < DV; d++)
      ST1(acc[r][d] * inv, o, ob + d);
  }
}
