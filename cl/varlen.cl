/* varlen.cl - ragged (packed) prefill attention in FlashAttention-2's
 * varlen layout: q [total_q, hq, DK], k [total_k, hkv, DK], v [total_k,
 * hkv, DV], o [total_q, hq, DV]; sequence b's queries are rows cu_q[b] ..
 * cu_q[b+1]-1, its keys rows cu_k[b] .. cu_k[b+1]-1.
 *
 * Work is spread by tokens: a work-group owns one tile of BQ query
 * positions of one sequence and one KV head, whose BQ * G rows (row
 * r = i * G + jg, the G query heads of the KV head together, as in
 * attention.cl) its WG items share, RPI consecutive rows an item.  The
 * launch has cu_q[b] / BQ + b as sequence b's first group: the
 * ceil(len_q / BQ) tiles of b always fit before b + 1's first, so the
 * groups are floor(total_q / BQ) + batch and a group finds its sequence by
 * a binary search over the offsets; a group past its sequence's last tile
 * exits.  No local memory, no barriers.  Two variants:
 *   1 (CPU-shaped) varlen_stage writes K transposed and V as float32 for
 *     all packed keys (as attention.cl's kv_stage), then varlen_fwd_staged
 *     scores each KB-key tile of the item's sequence through float16
 *     registers, the keys along the vectors;
 *   2 (GPU-shaped) varlen_fwd streams the sequence's own K and V rows
 *     straight from the call's tensors, a dot product a key and row.
 *
 * Compile-time parameters (-D), each with a default:
 *   DK, DV   head dims of q/k and v; VWK, VWV vector widths dividing them
 *   G        query heads per KV head
 *   BQ       query positions a tile (a work-group)
 *   KB       keys a tile (a multiple of 16)
 *   WG       work-items a work-group
 *   CAUSAL   0/1: query i of a sequence of len_q queries and len_k keys
 *            sits at position len_k - len_q + i and sees keys t <= it
 *
 * Offsets that fall outside the tensors (an `unchecked` call's garbage)
 * skip the sequence: nothing is read or written for it. */
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
#ifndef G
#define G 1
#endif
#ifndef BQ
#define BQ 4
#endif
#ifndef KB
#define KB 32
#endif
#ifndef WG
#define WG 1
#endif
#ifndef CAUSAL
#define CAUSAL 0
#endif
#if KB % 16
#error "KB must be a multiple of 16"
#endif

#define RPI ((BQ * G + WG - 1) / WG)
#define NK (DK / VWK)
#define NV (DV / VWV)
#define NKV (KB / 16)
typedef FLOATW(VWK) kfloat;
typedef FLOATW(VWV) vfloat;

/* The sequence of work-group x: the last b whose first group,
 * cu_q[b] / BQ + b, is at most x (the first groups increase with b). */
inline int tile_sequence(__global const int *cu_q, int batch, int x) {
  int lo = 0, hi = batch;
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    if ((long)(cu_q[mid] / BQ) + mid <= x)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* The tile of work-group x: its sequence b (the offsets' entries read
 * into q0 .. k1) and the tile's first query i0 and rows; 0 when the group
 * has none (past its sequence's last tile, or offsets outside the
 * tensors). */
inline int find_tile(__global const int *cu_q, __global const int *cu_k,
                     int batch, int total_q, int total_k, int x, int *q0,
                     int *k0, int *n, int *m, int *i0, int *rows) {
  const int b = tile_sequence(cu_q, batch, x);
  *q0 = cu_q[b];
  *k0 = cu_k[b];
  const int q1 = cu_q[b + 1], k1 = cu_k[b + 1];
  if (*q0 < 0 || q1 < *q0 || q1 > total_q || *k0 < 0 || k1 < *k0 ||
      k1 > total_k)
    return 0;
  *n = q1 - *q0;
  *m = k1 - *k0;
  const long tile = (long)x - (*q0 / BQ + b);
  if (tile < 0 || tile * BQ >= *n)
    return 0;
  *i0 = (int)tile * BQ;
  *rows = min(BQ, *n - *i0) * G;
  return 1;
}

/* Variant 1's staging: kt[c][DK][ld] (K transposed) and vc[c][ld][DV],
 * float32, of all total_k packed keys, zeros past them (ld covers a tile
 * started at any sequence's last key; an argument, not a define, since it
 * follows total_k, which changes from call to call).  One work-item per 16
 * keys.  Global size (ld / 16, hkv). */
__kernel void varlen_stage(__global const stor_t *k, __global const stor_t *v,
                           __global float *kt, __global float *vc,
                           int total_k, int hkv, int ld) {
  const int t0 = get_global_id(0) * 16, c = get_global_id(1);
  if (t0 >= ld)
    return;
  __global float *ko = kt + (long)c * DK * ld + t0;
  __global float *vo = vc + ((long)c * ld + t0) * DV;
  float blk[DK][16];
  for (int u = 0; u < 16; u++) {
    const int t = t0 + u;
    if (t < total_k) {
      const long kb = ((long)t * hkv + c) * DK, vb = ((long)t * hkv + c) * DV;
      for (int w = 0; w < DK / VWK; w++) {
        float tmp[VWK];
        STF(VWK, LDW(VWK, k, kb + w * VWK), tmp, 0);
#pragma unroll
        for (int i = 0; i < VWK; i++)
          blk[w * VWK + i][u] = tmp[i];
      }
      for (int w = 0; w < DV / VWV; w++)
        STF(VWV, LDW(VWV, v, vb + w * VWV), vo, u * DV + w * VWV);
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

/* Variant 1: each work-item owns RPI rows of its group's tile and streams
 * KB-key tiles of the staged K^T and V from its sequence's first key (a
 * tile may run into the next sequence's keys or the zeros past the last:
 * masked, never weighted).  Global size ((total_q / BQ + batch) * WG, hkv),
 * local size (WG, 1). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
varlen_fwd_staged(__global const stor_t *q, __global const float *kt,
                  __global const float *vc, __global const int *cu_q,
                  __global const int *cu_k, __global stor_t *o, int batch,
                  int total_q, int total_k, int hkv, int ld, float scale_log2,
                  OPT_ARGS) {
  const int c = get_global_id(1);
  int q0, k0, n, m, i0, rows;
  if (!find_tile(cu_q, cu_k, batch, total_q, total_k, get_group_id(0), &q0,
                 &k0, &n, &m, &i0, &rows))
    return;
  const int r0 = get_local_id(0) * RPI;
  if (r0 >= rows)
    return;
  const int hq = hkv * G;

  float qs[RPI][DK];
  vfloat acc[RPI][NV];
  int lim[RPI], lo[RPI], pos[RPI];
  float slope2[RPI], mrow[RPI], lrow[RPI];
#pragma unroll
  for (int r = 0; r < RPI; r++) {
    const int rho = min(r0 + r, rows - 1);
    const int i = i0 + rho / G, j = c * G + rho % G;
    const long qb = ((long)(q0 + i) * hq + j) * DK;
    for (int d = 0; d < DK; d++)
      qs[r][d] = LD1(q, qb + d) * scale_log2;
    for (int w = 0; w < NV; w++)
      acc[r][w] = (vfloat)(0.0f);
    pos[r] = m - n + i;
    lim[r] = key_limit(m, n, i);
    lo[r] = min(key_start(pos[r], window), lim[r]);
    slope2[r] = alibi_slope2(alibi, j);
    mrow[r] = sink_logit2(sinks, j);
    lrow[r] = sink_sum(mrow[r]);
  }
  const int kbeg = key_start(pos[0], window);
  const int kend = lim[RPI - 1];
  __global const float *ktb = kt + (long)c * DK * ld + k0;
  __global const float *vcb = vc + ((long)c * ld + k0) * DV;
  const int16 lane = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                             14, 15);
  float p[RPI][KB];

  for (int t0 = kbeg; t0 < kend; t0 += KB) {
    float16 s[RPI][NKV];
#pragma unroll
    for (int r = 0; r < RPI; r++)
#pragma unroll
      for (int u = 0; u < NKV; u++)
        s[r][u] = (float16)(0.0f);
    for (int d = 0; d < DK; d++) {
      float16 kv[NKV];
#pragma unroll
      for (int u = 0; u < NKV; u++)
        kv[u] = vload16(0, ktb + (long)d * ld + t0 + 16 * u);
#pragma unroll
      for (int r = 0; r < RPI; r++) {
        const float16 qv = (float16)(qs[r][d]);
#pragma unroll
        for (int u = 0; u < NKV; u++)
          s[r][u] = fma(qv, kv[u], s[r][u]);
      }
    }
    /* masks are needed only where a tile crosses some row's bounds (its
     * keys past kend belong to no row) */
    const int masked = t0 + KB > lim[0] || t0 < lo[RPI - 1];
#pragma unroll
    for (int r = 0; r < RPI; r++) {
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
    /* P V row by row, each over the keys in its own bounds (attention.cl's
     * attn_fwd_reg: the staged V rows stay in L1 across rows) */
#pragma unroll
    for (int r = 0; r < RPI; r++) {
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
  for (int r = 0; r < RPI; r++) {
    const int rho = r0 + r;
    if (rho >= rows)
      break;
    const int i = i0 + rho / G, j = c * G + rho % G;
    const float inv = softmax_inv(lrow[r], lim[r] > lo[r]);
    const long ob = ((long)(q0 + i) * hq + j) * DV;
#pragma unroll
    for (int w = 0; w < NV; w++)
      STW(VWV, acc[r][w] * inv, o, ob + w * VWV);
  }
}

/* Variant 2.  Global size ((total_q / BQ + batch) * WG, hkv), local size
 * (WG, 1). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
varlen_fwd(__global const stor_t *q, __global const stor_t *k,
           __global const stor_t *v, __global const int *cu_q,
           __global const int *cu_k, __global stor_t *o, int batch,
           int total_q, int total_k, int hkv, float scale_log2, OPT_ARGS) {
  const int c = get_global_id(1);
  int q0, k0, n, m, i0, rows;
  if (!find_tile(cu_q, cu_k, batch, total_q, total_k, get_group_id(0), &q0,
                 &k0, &n, &m, &i0, &rows))
    return;
  const int r0 = get_local_id(0) * RPI;
  if (r0 >= rows)
    return;
  const int hq = hkv * G;

  kfloat qs[RPI][NK];
  vfloat acc[RPI][NV];
  int lim[RPI], lo[RPI], pos[RPI];
  float slope2[RPI], mrow[RPI], lrow[RPI];
#pragma unroll
  for (int r = 0; r < RPI; r++) {
    const int rho = min(r0 + r, rows - 1);
    const int i = i0 + rho / G, j = c * G + rho % G;
    const long qb = ((long)(q0 + i) * hq + j) * DK;
    for (int w = 0; w < NK; w++)
      qs[r][w] = LDW(VWK, q, qb + w * VWK) * scale_log2;
    for (int w = 0; w < NV; w++)
      acc[r][w] = (vfloat)(0.0f);
    pos[r] = m - n + i;
    lim[r] = key_limit(m, n, i);
    lo[r] = min(key_start(pos[r], window), lim[r]);
    slope2[r] = alibi_slope2(alibi, j);
    mrow[r] = sink_logit2(sinks, j);
    lrow[r] = sink_sum(mrow[r]);
  }
  /* rows are in increasing position order: the first starts, the last
   * ends the keys any row needs */
  const int kbeg = key_start(pos[0], window);
  const int kend = lim[RPI - 1];
  __global const stor_t *kr = k + ((long)k0 * hkv + c) * DK;
  __global const stor_t *vr = v + ((long)k0 * hkv + c) * DV;
  const long ks = (long)hkv * DK, vs = (long)hkv * DV;
  const int16 lane = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                             14, 15);
  float p[RPI][KB];

  for (int t0 = kbeg; t0 < kend; t0 += KB) {
    const int nt = min(KB, kend - t0);
    /* QK^T: each key row loaded once serves the item's rows */
    for (int t = 0; t < KB; t++) {
      if (t < nt) {
        kfloat kv[NK];
        for (int w = 0; w < NK; w++)
          kv[w] = LDW(VWK, kr, (t0 + t) * ks + w * VWK);
#pragma unroll
        for (int r = 0; r < RPI; r++) {
          kfloat a = qs[r][0] * kv[0];
          for (int w = 1; w < NK; w++)
            a = fma(qs[r][w], kv[w], a);
          p[r][t] = HSUMW(VWK, a);
        }
      } else {
#pragma unroll
        for (int r = 0; r < RPI; r++)
          p[r][t] = -INFINITY;
      }
    }
    /* masks are needed only where a tile crosses some row's bounds */
    const int masked = t0 + KB > lim[0] || t0 < lo[RPI - 1];
#pragma unroll
    for (int r = 0; r < RPI; r++) {
      float16 s[NKV];
      float16 tmax = (float16)(-INFINITY);
#pragma unroll
      for (int u = 0; u < NKV; u++) {
        s[u] = vload16(u, p[r]);
#if SOFTCAP || ALIBI
        s[u] = opt_logit16(s[u], softcap2, slope2[r], pos[r], t0 + 16 * u);
#endif
        if (masked) {
          const int16 tidx = lane + (int16)(t0 + 16 * u);
          s[u] = select(s[u], (float16)(-INFINITY),
                        tidx >= lim[r] || tidx < lo[r]);
        }
        tmax = max(tmax, s[u]);
      }
      const float alpha =
          online_softmax16(s, NKV, hmax16(tmax), &mrow[r], &lrow[r], p[r]);
#pragma unroll
      for (int w = 0; w < NV; w++)
        acc[r][w] *= alpha;
    }
    /* P V: each V row loaded once; a row weighs only the keys in its own
     * bounds, as a masked key's V, though weighted 0, would turn the row
     * NaN if it held a NaN or inf */
    for (int t = max(0, lo[0] - t0); t < nt; t++) {
      vfloat vv[NV];
      for (int w = 0; w < NV; w++)
        vv[w] = LDW(VWV, vr, (t0 + t) * vs + w * VWV);
#pragma unroll
      for (int r = 0; r < RPI; r++)
        if (t0 + t >= lo[r] && t0 + t < lim[r]) {
          const vfloat pt = (vfloat)(p[r][t]);
          for (int w = 0; w < NV; w++)
            acc[r][w] = fma(pt, vv[w], acc[r][w]);
        }
    }
  }

#pragma unroll
  for (int r = 0; r < RPI; r++) {
    const int rho = r0 + r;
    if (rho >= rows)
      break;
    const int i = i0 + rho / G, j = c * G + rho % G;
    const float inv = softmax_inv(lrow[r], lim[r] > lo[r]);
    const long ob = ((long)(q0 + i) * hq + j) * DV;
    for (int w = 0; w < NV; w++)
      STW(VWV, acc[r][w] * inv, o, ob + w * VWV);
  }
}
