/* talking_heads_cost.c - the model's costs of the talking-heads prefill
 * kernels: the FLOPs, exp2 evaluations, global bytes and barriers each
 * issues, counted from its plan and the loop structure of
 * cl/talking_heads.cl (the comments name the loops); tests/test_model.c
 * checks them against Oclgrind's instruction counts. */
#include "family/talking_heads.h"
#include "model/model.h"

/* The end of the keys visible to query i (common.cl key_limit). */
static long key_limit(int causal, long L, long n, long i) {
  return causal ? (L < L - n + i + 1 ? L : L - n + i + 1) : L;
}

/* The first key visible to query i, at position L - n + i (common.cl
 * key_start): with a window W, the W most recent positions. */
static long key_first(int window, long L, long n, long i) {
  const long p = L - n + i;
  return window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
}

/* Keys visible to position min(i, n - 1) (the kernels clamp positions past
 * the last to it), never negative. */
static double pos_keys(const clattn_th_desc *d, long L, long n, long i) {
  const long c = i < n ? i : n - 1;
  const long vis =
      key_limit(d->causal != 0, L, n, c) - key_first(d->window, L, n, c);
  return vis > 0 ? (double)vis : 0.0;
}

/* Keys positions min(i, n - 1) and min(j, n - 1) (i <= j) both see: from
 * j's window start to i's limit, never negative. */
static double shared_keys(const clattn_th_desc *d, long L, long n, long i,
                          long j) {
  const long both = key_limit(d->causal != 0, L, n, i < n ? i : n - 1) -
                    key_first(d->window, L, n, j < n ? j : n - 1);
  return both > 0 ? (double)both : 0.0;
}

double clattn__th_pair_work(const clattn_th_desc *d, int scheme) {
  const double hk = d->heads_k, h = d->heads, hv = d->heads_v;
  const double dk = d->head_dim_k, dv = d->head_dim_v;
  const double logits = hk * dk + h * hk, ex = CLATTN__EXP2_FMAS * h;
  if (scheme == 1) /* logits, exponentials, P V per (c, u) */
    return logits + ex + h * hv * dv;
  if (scheme == 3) /* logits once, exponentials twice, the P_w mix, P V */
    return logits + 2.0 * ex + h * hv + hv * dv;
  /* logits twice, exponentials twice, the P_w mix, P V per u */
  return 2.0 * (logits + ex) + h * hv + hv * dv;
}

/* Variant 1: th_stage and th_fwd_reg. */
static void cost_reg(const clattn_th_desc *d, const clattn__th_plan *pl,
                     const int *kv_lens, const clattn_profile *prof,
                     clattn_prediction *out, double *dram_reads,
                     double compulsory_in, double o_bytes) {
  const double es = (double)clattn_dtype_size(d->dtype);
  const long B = d->batch, n = d->n_q, m = d->n_kv;
  const double HK = d->heads_k, H = d->heads, HV = d->heads_v;
  const double DK = d->head_dim_k, DV = d->head_dim_v;
  const double kvw = HK * DK + HV * DV;
  const int causal = d->causal != 0;
  const double lens_b = kv_lens ? 4.0 : 0.0;
  const double mix_b = 4.0 * (HK * H + H * HV);

  /* th_stage: every key row read once, K^T and V written as float32 over
   * the padded row length ld; with a window from the tile holding the
   * first query's first visible key on (each work-item of 16 keys then
   * reads kv_lens) */
  clattn_cost *st = clattn__model_kernel(out, "th_stage");
  const int KB = pl->kb;
  const double hmax = HK > HV ? HK : HV;
  double st_rd = 0, st_wr = 0;
  for (long b = 0; b < clattn__distinct_seqs(kv_lens, B); b++) {
    const long L = clattn__valid_len(kv_lens, b, m);
    const double tf =
        d->window > 0 ? (double)(key_first(d->window, L, n, 0) / KB * KB) : 0;
    st_rd += es * clattn__dmax(0.0, (double)m - tf) * kvw;
    st_wr += 4.0 * ((double)pl->ld - tf) * kvw;
    if (d->window > 0)
      st_rd += lens_b * (double)(pl->ld / 16) * hmax;
  }
  st->bytes_read = st_rd * clattn__seq_weight(kv_lens, B);
  st->bytes_written = st_wr * clattn__seq_weight(kv_lens, B);
  st->bytes_compulsory = st->bytes_read + st->bytes_written;
  dram_reads[0] = st->bytes_read;
  st->bytes_dram = st->bytes_read + st->bytes_written;
  clattn__model_core(out, st)->group_items = 1; /* talking_heads.c: one */

  clattn_cost *c = clattn__model_kernel(out, "th_fwd_reg");
  /* one work-item a group unless the plan names a wg (talking_heads.c) */
  clattn__model_core(out, c)->group_items = pl->wg ? pl->wg : 1;
  const int RB = pl->rb, passes = pl->scheme == 2 ? 2 : 1;
  double rd = 0, wr = 0, fma = 0, ex = 0, loc = 0, staged = 0, ws = 0;
  const long blocks = (n + RB - 1) / RB;
  const double per_seq = clattn__seq_weight(kv_lens, B);
  for (long b = 0; b < clattn__distinct_seqs(kv_lens, B); b++) {
    const long L = clattn__valid_len(kv_lens, b, m);
    double kmax = 0, kmin = (double)m;
    for (long blk = 0; blk < blocks; blk++) {
      const long i0 = blk * RB;
      const double kend = (double)key_limit(
          causal, L, n, (long)clattn__dmin(i0 + RB - 1, n - 1));
      /* the tiles run from the one holding the block's first visible key */
      const double tb = (double)(key_first(d->window, L, n, i0) / KB * KB);
      const double valid = clattn__dmin(RB, n - i0);
      /* kv_lens, P_l and P_w, RB q rows of every key head (clamped
       * positions are loaded too) */
      rd += lens_b + mix_b + es * RB * HK * DK;
      if (kend > 0) {
        const double T = clattn__cdiv(kend - tb, KB);
        /* th_logits_reg: K^T tiles; J and the P_l mix, in each pass (a
         * kept tile of scheme 3 only in pass 1) */
        const double kept =
            pl->scheme == 3 ? clattn__dmin(T, pl->keep / KB) : 0;
        const double tiles = passes * T + (pl->scheme == 3 ? T - kept : 0);
        rd += 4.0 * tiles * HK * DK * KB;
        fma += tiles * RB * KB * (HK * DK + H * HK);
        /* the statistics per position and logit head: the one pass's
         * alpha + KB exponentials, pass 1's lane-wise 16 + KB */
        ex += T * RB * H * ((pl->scheme == 1 ? 1.0 : 16.0) + KB);
        /* P V: each position up to its own key limit */
        double row_keys = 0;
        for (long r = 0; r < RB; r++)
          row_keys += pos_keys(d, L, n, i0 + r);
        /* scheme 3: pass 1's kept logits stored and read back */
        loc += 2.0 * 4.0 * kept * RB * H * KB;
        if (pl->scheme != 1) {
          /* V rows per group of PR positions and value head: the keys
           * the whole group sees once, then each position's rest */
          const int PR = RB % 4 == 0 ? 4 : RB % 2 == 0 ? 2 : 1;
          double v_rows = 0;
          for (long r0 = 0; r0 < RB; r0 += PR) {
            const double shared =
                shared_keys(d, L, n, i0 + r0, i0 + r0 + PR - 1);
            v_rows += shared;
            for (long r = 0; r < PR; r++)
              v_rows += pos_keys(d, L, n, i0 + r0 + r) - shared;
          }
          rd += 4.0 * HV * v_rows * DV;
          ex += T * RB * H * KB;       /* the exact weights */
          fma += T * RB * HV * H * KB; /* the P_w mix */
          fma += HV * row_keys * DV;   /* P V */
        } else {
          rd += 4.0 * HV * row_keys * DV; /* V rows per position and u */
          fma += H * HV * row_keys * DV;  /* P V per (c, u) */
        }
        kmax = clattn__dmax(kmax, kend);
        kmin = clattn__dmin(kmin, tb);
      }
      if (pl->scheme == 1)
        fma += valid * H * HV * DV; /* the final P_w mix */
      else
        ex += RB * H * 16.0; /* pass 1's lanes combined */
      wr += es * valid * HV * DV;
    }
    /* the staged keys any block reads */
    const double span = clattn__dmax(0.0, kmax - kmin);
    staged += 4.0 * span * kvw;
    ws = clattn__dmax(ws, 4.0 * span * kvw);
  }
  rd *= per_seq, wr *= per_seq, fma *= per_seq, ex *= per_seq;
  loc *= per_seq, staged *= per_seq;
  c->bytes_read = rd;
  c->bytes_written = wr;
  c->fma_issued = fma + CLATTN__EXP2_FMAS * ex;
  c->exp2_issued = ex;
  c->local_bytes = loc;
  c->bytes_compulsory = compulsory_in - es * B * m * kvw + staged + o_bytes;
  clattn__model_dram(c, c->bytes_compulsory - o_bytes, ws, prof);
  dram_reads[1] = c->bytes_dram - c->bytes_written;
}

/* Variant 2: th_fwd_local. */
static void cost_local(const clattn_th_desc *d, const clattn__th_plan *pl,
                       const int *kv_lens, const clattn_profile *prof,
                       clattn_prediction *out, double *dram_reads,
                       double compulsory_in, double o_bytes) {
  const double es = (double)clattn_dtype_size(d->dtype);
  const long B = d->batch, n = d->n_q, m = d->n_kv;
  const double HK = d->heads_k, H = d->heads, HV = d->heads_v;
  const double DK = d->head_dim_k, DV = d->head_dim_v;
  const int causal = d->causal != 0;
  const double lens_b = kv_lens ? 4.0 : 0.0;
  const double mix_b = 4.0 * (HK * H + H * HV);
  const int WG = pl->wg, KT = pl->kt, passes = pl->scheme == 2 ? 2 : 1;
  clattn_cost *c = clattn__model_kernel(out, "th_fwd_local");
  clattn__model_core(out, c)->group_items = pl->wg;
  double rd = 0, wr = 0, fma = 0, ex = 0, loc = 0, ws = 0, bar = 0;
  const long groups = (n + WG - 1) / WG;
  const double per_seq = clattn__seq_weight(kv_lens, B);
  for (long b = 0; b < clattn__distinct_seqs(kv_lens, B); b++) {
    const long L = clattn__valid_len(kv_lens, b, m);
    for (long g = 0; g < groups; g++) {
      const double kend = (double)key_limit(
          causal, L, n, (long)clattn__dmin(g * WG + WG - 1, n - 1));
      /* from the group's first position's window start */
      const double kbeg = (double)key_first(d->window, L, n, g * WG);
      const double span = kend - kbeg;
      const double valid = clattn__dmin(WG, n - g * WG);
      /* every item: kv_lens, P_l and P_w, its q rows */
      rd += WG * (lens_b + mix_b + es * HK * DK);
      if (kend > 0) {
        const double T = clattn__cdiv(span, KT);
        /* tiles, t < nt only: K every pass, V in the last */
        rd += es * span * (passes * HK * DK + HV * DV);
        /* a tile of a pass: one barrier once it is loaded, one before the
         * next */
        bar += 2.0 * passes * T;
        /* every item scores all KT keys of a tile every pass */
        fma += WG * passes * T * KT * (HK * DK + H * HK);
        ex += WG * T * H * (1.0 + KT);
        loc += 4.0 * T * KT * (passes * HK * DK * (1.0 + WG) + HV * DV);
        /* the weights and P V: each item up to its own key limit */
        double item_keys = 0;
        for (long r = 0; r < WG; r++)
          item_keys += pos_keys(d, L, n, g * WG + r);
        if (pl->scheme == 2) {
          ex += H * item_keys;
          fma += item_keys * HV * (H + DV);
          loc += 4.0 * item_keys * HV * DV;
        } else {
          fma += item_keys * H * HV * DV;
          loc += 4.0 * item_keys * H * HV * DV;
        }
        ws = clattn__dmax(ws, es * span * (HK * DK + HV * DV));
      }
      if (pl->scheme == 1)
        fma += valid * H * HV * DV;
      wr += es * valid * HV * DV;
    }
  }
  rd *= per_seq, wr *= per_seq, fma *= per_seq, ex *= per_seq;
  loc *= per_seq, bar *= per_seq;
  clattn__model_core(out, c)->barriers = bar;
  c->bytes_read = rd;
  c->bytes_written = wr;
  c->fma_issued = fma + CLATTN__EXP2_FMAS * ex;
  c->exp2_issued = ex;
  c->local_bytes = loc;
  c->bytes_compulsory = compulsory_in + o_bytes;
  clattn__model_dram(c, compulsory_in, ws, prof);
  dram_reads[0] = c->bytes_dram - c->bytes_written;
}

clattn_status clattn__th_cost(const void *desc, const void *plan,
                              const int *kv_lens, const clattn_profile *prof,
                              clattn_prediction *out, double *dram_reads) {
  const clattn_th_desc *d = desc;
  const clattn__th_plan *pl = plan;
  const double es = (double)clattn_dtype_size(d->dtype);
  const long B = d->batch, n = d->n_q, m = d->n_kv;
  const double HK = d->heads_k, H = d->heads, HV = d->heads_v;
  const double DK = d->head_dim_k, DV = d->head_dim_v;
  /* useful work: visible (query, key) pairs, each with spec 5.3's
   * 2 (d_k h_k + h h_k + h h_v + d_v h_v) FLOPs */
  double pairs = 0.0;
  for (long b = 0; b < clattn__distinct_seqs(kv_lens, B); b++) {
    const long L = clattn__valid_len(kv_lens, b, m);
    for (long i = 0; i < n; i++)
      pairs += pos_keys(d, L, n, i);
  }
  pairs *= clattn__seq_weight(kv_lens, B);
  const double in = es * B * n * HK * DK + es * B * m * (HK * DK + HV * DV) +
                    4.0 * (HK * H + H * HV);
  const double o_bytes = es * B * n * HV * DV;
  const int k0 = out->n_kernels;
  if (pl->variant == 1)
    cost_reg(d, pl, kv_lens, prof, out, dram_reads, in, o_bytes);
  else
    cost_local(d, pl, kv_lens, prof, out, dram_reads, in, o_bytes);
  if (out->n_kernels == k0)
    return clattn__model_fail(out, CLATTN_ERR_UNSUPPORTED,
                              "the prediction has no room for the kernels");
  clattn_cost *c = &out->kernel[out->n_kernels - 1];
  c->flops = 2.0 * pairs * (DK * HK + H * HK + H * HV + DV * HV);
  c->softmax_ops = CLATTN__C_SM * pairs * H;
  return CLATTN_OK;
}
