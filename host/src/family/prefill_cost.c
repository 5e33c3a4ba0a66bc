/* prefill_cost.c - the model's costs of the prefill family's kernels: the
 * FLOPs, exp2 evaluations, global bytes and barriers each issues, counted
 * from its plan and the loop structure of cl/attention.cl (the comments
 * name the loops); tests/test_model.c checks them against Oclgrind's
 * instruction counts. */
#include "family/plan.h"
#include "model/model.h"

/* Keys visible to query position i (cl/attention.cl key_limit). */
static long key_limit(int causal, long L, long n, long i) {
  return causal ? (L < L - n + i + 1 ? L : L - n + i + 1) : L;
}

/* The first key of query i's window (common.cl key_start; 0 without). */
static long key_start(long W, long L, long n, long i) {
  return W > 0 && L - n + i - W + 1 > 0 ? L - n + i - W + 1 : 0;
}

/* The sum of clamp(x, lo, hi) over x = a .. b - 1 (lo <= hi), in closed
 * form: the model's time must not grow with the call's. */
static double sum_clamp(long a, long b, long lo, long hi) {
  double s = 0;
  if (b <= a)
    return 0;
  const long below = (b < lo ? b : lo) - a;
  if (below > 0)
    s += (double)below * (double)lo;
  const long m0 = a > lo ? a : lo, m1 = b < hi + 1 ? b : hi + 1;
  if (m1 > m0)
    s += ((double)m0 + (double)(m1 - 1)) * (double)(m1 - m0) / 2.0;
  const long h0 = a > hi + 1 ? a : hi + 1;
  if (b > h0)
    s += (double)(b - h0) * (double)hi;
  return s;
}

/* Keys visible to queries i0 .. i1 - 1 together (window W, 0: none): at
 * position p = L - n + i a causal query sees clamp(p + 1, 0, min(W, L)),
 * a non-causal one L - clamp(p - W + 1, 0, L). */
double clattn__queries_keys(int causal, long W, long L, long n, long i0,
                            long i1) {
  const long x0 = L - n + i0 + 1, x1 = L - n + i1 + 1;
  if (i1 <= i0)
    return 0;
  if (causal)
    return sum_clamp(x0, x1, 0, W > 0 && W < L ? W : L);
  return (double)(i1 - i0) * (double)L -
         (W > 0 ? sum_clamp(x0 - W, x1 - W, 0, L) : 0.0);
}

/* Keys visible to rows r0 .. r0 + count - 1 together (g rows a query),
 * rows past the last counted as the last (the kernels clamp them so). */
double clattn__rows_keys(int causal, long W, long L, long n, long g, long rows,
                         long r0, long count) {
  if (count <= 0)
    return 0;
  const long end = r0 + count < rows ? r0 + count : rows;
  double keys = 0;
  long r = r0;
  if (r < end && r % g) { /* the first query's rows from r0 on */
    const long e = end < (r / g + 1) * g ? end : (r / g + 1) * g;
    keys += (double)(e - r) *
            clattn__queries_keys(causal, W, L, n, r / g, r / g + 1);
    r = e;
  }
  if (end / g > r / g) { /* whole queries */
    keys += (double)g * clattn__queries_keys(causal, W, L, n, r / g, end / g);
    r = end / g * g;
  }
  if (r < end) /* the last query's first rows */
    keys += (double)(end - r) *
            clattn__queries_keys(causal, W, L, n, r / g, r / g + 1);
  const long past = r0 + count - (end > r0 ? end : r0);
  const long lq = (rows - 1) / g;
  return keys +
         (double)past * clattn__queries_keys(causal, W, L, n, lq, lq + 1);
}

/* What one KV head's work-groups of a local-memory kernel (variants 2 and
 * 3) read, write, issue and keep, and the barriers they pass (one per
 * barrier a work-group passes), per distinct sequence, and the call's
 * figures that scale them into its cost. */
typedef struct local_tally {
  double rd, wr, fma, ex, loc, ws, bar;
} local_tally;
typedef struct local_call {
  double per_seq, hkv, flops, pairs, q_bytes, kv_bytes, o_bytes;
  const clattn_profile *prof;
} local_call;

static void local_cost_fill(clattn_prediction *out, clattn_cost *c,
                            local_tally t, const local_call *k,
                            double *dram_reads) {
  const double p = k->per_seq, h = k->hkv;
  clattn__model_core(out, c)->barriers = h * (p * t.bar);
  c->bytes_read = h * (p * t.rd);
  c->bytes_written = h * (p * t.wr);
  c->fma_issued = h * (p * t.fma + CLATTN__EXP2_FMAS * (p * t.ex));
  c->exp2_issued = h * (p * t.ex);
  c->local_bytes = h * (p * t.loc);
  c->flops = k->flops;
  c->softmax_ops = CLATTN__C_SM * k->pairs;
  c->bytes_compulsory = k->q_bytes + k->kv_bytes + k->o_bytes;
  clattn__model_dram(c, k->q_bytes + k->kv_bytes, t.ws, k->prof);
  dram_reads[0] = c->bytes_dram - c->bytes_written;
}

clattn_status clattn__prefill_cost(const void *desc, const void *plan,
                                   const int *kv_lens,
                                   const clattn_profile *prof,
                                   clattn_prediction *out, double *dram_reads) {
  const clattn_attn_desc *d = desc;
  const clattn__prefill_plan *pl = plan;
  const double es = (double)clattn_dtype_size(d->dtype);
  const long B = d->batch, n = d->n_q, m = d->n_kv;
  const long hkv = d->heads_kv, g = d->heads_q / d->heads_kv;
  const double DK = d->head_dim_k, DV = d->head_dim_v;
  const long rows = n * g;
  const int causal = d->causal != 0;
  const long W = d->window;
  /* per row: an ALiBi slope and a sink loaded (4 bytes each); per
   * scored key: one fma for ALiBi's bias, one exp2 for the soft-cap's
   * tanh (common.cl softcap1) */
  const double opt_row_b =
      4.0 * ((d->alibi_slopes != NULL) + (d->sinks != NULL));
  const double alibi_fma = d->alibi_slopes != NULL ? 1.0 : 0.0;
  const double softcap_ex = d->softcap != 0.0f ? 1.0 : 0.0;
  const double lens_b = kv_lens ? 4.0 : 0.0;
  const long seqs = clattn__distinct_seqs(kv_lens, B);
  const double per_seq = clattn__seq_weight(kv_lens, B);

  /* useful work: valid (query, key) pairs */
  double pairs = 0.0;
  for (long b = 0; b < seqs; b++)
    pairs += clattn__queries_keys(causal, W, clattn__valid_len(kv_lens, b, m),
                                  n, 0, n);
  pairs *= per_seq * (double)d->heads_q;
  const double flops = 2.0 * pairs * (DK + DV);
  const double q_bytes = es * B * n * d->heads_q * DK;
  const double o_bytes = es * B * n * d->heads_q * DV;
  /* V's own loads (none when V is K) */
  const double DVL = pl->kv_same ? 0.0 : DV;
  const double kv_bytes = es * B * m * hkv * (DK + DVL);
  const local_call call = {per_seq, (double)hkv, flops,   pairs,
                           q_bytes, kv_bytes,    o_bytes, prof};

  if (pl->variant == 1) {
    /* kv_stage: every key row read once, K^T and V written as float32
     * over the padded row length ld; with a window, from the first row's
     * first visible key on, in whole KB tiles (its work-items each read
     * kv_lens) */
    clattn_cost *st = clattn__model_kernel(out, "kv_stage");
    double skipped = 0.0, stage_lens = 0.0;
    if (W > 0) {
      for (long b = 0; b < seqs; b++)
        skipped +=
            (double)(key_start(W, clattn__valid_len(kv_lens, b, m), n, 0) /
                     pl->kb * pl->kb);
      skipped *= per_seq;
      stage_lens = lens_b * B * hkv * (pl->ld / 16);
    }
    st->bytes_read = kv_bytes * (1.0 - skipped / ((double)B * m)) + stage_lens;
    st->bytes_written = 4.0 * hkv * (B * pl->ld - skipped) * (DK + DV);
    st->bytes_compulsory = st->bytes_read + st->bytes_written;
    dram_reads[0] = st->bytes_read;
    st->bytes_dram = st->bytes_read + st->bytes_written;
    clattn__model_core(out, st)->group_items = 1; /* prefill.c: one a group */

    clattn_cost *c = clattn__model_kernel(out, "attn_fwd_reg");
    /* one work-item a group unless the plan names a wg (prefill.c) */
    clattn__model_core(out, c)->group_items = pl->wg ? pl->wg : 1;
    const int RB = pl->rb, KB = pl->kb;
    double rd = 0, wr = 0, fma = 0, qk = 0, ex = 0, staged_once = 0, ws = 0;
    const long blocks = (rows + RB - 1) / RB;
    for (long b = 0; b < seqs; b++) {
      const long L = clattn__valid_len(kv_lens, b, m);
      double kmax = 0;
      for (long blk = 0; blk < blocks; blk++) {
        const long r0 = blk * RB;
        const long last = (long)clattn__dmin(r0 + RB - 1, rows - 1);
        const double kend = (double)key_limit(causal, L, n, last / g);
        const double kbeg = (double)(key_start(W, L, n, r0 / g) / KB * KB);
        /* keys each row of the block (clamped rows too) weights in P V:
         * those in its own bounds */
        const double row_keys =
            clattn__rows_keys(causal, W, L, n, g, rows, r0, RB);
        /* q: RB rows of DK (clamped rows are loaded too), kv_lens once,
         * the rows' option arrays */
        rd += lens_b + es * RB * DK + opt_row_b * RB;
        if (kend > kbeg) {
          const double T = clattn__cdiv(kend - kbeg, KB);
          /* K^T tiles; V rows, once per row of the block and visible key */
          rd += 4.0 * T * DK * KB + 4.0 * row_keys * DV;
          /* QK^T, PV, and per row and tile the running sum's update */
          const double qkt = T * DK * RB * KB;
          qk += qkt;
          fma += qkt + row_keys * DV + T * RB + alibi_fma * T * RB * KB;
          /* alpha + KB probabilities, the soft-cap's exp2 a key */
          ex += T * RB * (1.0 + KB + softcap_ex * KB);
          kmax = clattn__dmax(kmax, kend);
        }
        wr += es * clattn__dmin(RB, rows - r0) * DV;
      }
      staged_once += 4.0 * kmax * (DK + DV);
      ws = clattn__dmax(ws, 4.0 * kmax * (DK + DV));
    }
    rd *= per_seq, wr *= per_seq, fma *= per_seq, qk *= per_seq;
    ex *= per_seq, staged_once *= per_seq;
    c->bytes_read = hkv * rd;
    c->bytes_written = hkv * wr;
    c->fma_issued = hkv * (fma + CLATTN__EXP2_FMAS * ex);
    c->fma_spilled = pl->spill * hkv * qk; /* QK^T's spilled accumulators */
    c->exp2_issued = hkv * ex;
    c->flops = flops;
    c->softmax_ops = CLATTN__C_SM * pairs;
    c->bytes_compulsory = q_bytes + hkv * staged_once + o_bytes;
    clattn__model_dram(c, c->bytes_compulsory - o_bytes, ws, prof);
    dram_reads[1] = c->bytes_dram - c->bytes_written;
  } else if (pl->variant == 3) {
    /* a work-group is one subgroup of SG lanes over RW rows, a key a lane:
     * T steps of SG keys */
    clattn_cost *c = clattn__model_kernel(out, "attn_fwd_sg");
    clattn__model_core(out, c)->group_items = pl->wg;
    const int SG = pl->wg, RW = pl->rb;
    const double ND = clattn__cdiv(DV, SG);
    double rd = 0, wr = 0, fma = 0, ex = 0, loc = 0, ws = 0, bar = 0;
    const long groups = (rows + RW - 1) / RW;
    for (long b = 0; b < seqs; b++) {
      const long L = clattn__valid_len(kv_lens, b, m);
      for (long grp = 0; grp < groups; grp++) {
        const long r0 = grp * RW;
        const long last = (long)clattn__dmin(r0 + RW - 1, rows - 1);
        const double kend = (double)key_limit(causal, L, n, last / g);
        const double kbeg = (double)key_start(W, L, n, r0 / g);
        /* every lane: kv_lens and the rows' option arrays; q staged once
         * (clamped rows too) */
        rd += SG * (lens_b + opt_row_b * RW) + es * RW * DK;
        bar += 1.0; /* after q is staged; the key steps have none */
        const double row_keys =
            clattn__rows_keys(causal, W, L, n, g, rows, r0, RW);
        if (kend > kbeg) {
          const double nk = kend - kbeg, T = clattn__cdiv(nk, SG);
          /* each K and V row once (V by its own loads also where it is K) */
          rd += es * nk * (DK + DV);
          /* QK^T of every row, ALiBi on the visible logits, per step, row
           * and lane the sum update and ND rescales, P V over the value
           * dims padded to SG lanes for each row's visible keys */
          fma += nk * RW * DK + alibi_fma * row_keys +
                 T * SG * RW * (1.0 + ND) + row_keys * ND * SG;
          /* alpha and the lane's probability per step, row and lane */
          ex += 2.0 * T * SG * RW + softcap_ex * row_keys;
          /* q staged, then read by each key's lane: no tiles */
          loc += 4.0 * RW * DK * (1.0 + nk);
          ws = clattn__dmax(ws, es * nk * (DK + DV));
        }
        wr += es * clattn__dmin(RW, rows - r0) * DV;
      }
    }
    local_cost_fill(out, c, (local_tally){rd, wr, fma, ex, loc, ws, bar}, &call,
                    dram_reads);
  } else {
    clattn_cost *c = clattn__model_kernel(out, "attn_fwd_local");
    clattn__model_core(out, c)->group_items = pl->wg;
    const int WG = pl->wg, KT = pl->kt;
    double rd = 0, wr = 0, fma = 0, ex = 0, loc = 0, ws = 0, bar = 0;
    const long groups = (rows + WG - 1) / WG;
    for (long b = 0; b < seqs; b++) {
      const long L = clattn__valid_len(kv_lens, b, m);
      for (long grp = 0; grp < groups; grp++) {
        const long last = (long)clattn__dmin(grp * WG + WG - 1, rows - 1);
        const double kend = (double)key_limit(causal, L, n, last / g);
        const double kbeg = (double)key_start(W, L, n, grp * WG / g);
        /* every item: kv_lens, its q row, its row's option arrays */
        rd += WG * (lens_b + es * DK + opt_row_b);
        /* keys each item (clamped ones too) weights in P V: those in its
         * own bounds */
        const double item_keys =
            clattn__rows_keys(causal, W, L, n, g, rows, grp * WG, WG);
        if (kend > kbeg) {
          const double T = clattn__cdiv(kend - kbeg, KT);
          /* tile loads, t < nt only */
          rd += es * (kend - kbeg) * (DK + DVL);
          /* a tile: one barrier once it is loaded, one before the next */
          bar += 2.0 * T;
          /* every item scores all KT keys of every tile, updates its
           * running sum, and accumulates DV per visible key */
          fma += WG * T * (KT * (DK + alibi_fma) + 1.0) + item_keys * DV;
          ex += WG * T * (1.0 + KT + softcap_ex * KT);
          /* local: tiles stored, then read by every item */
          loc += 4.0 * (T * KT * (DK + DVL + WG * DK) + item_keys * DV);
          ws = clattn__dmax(ws, es * (kend - kbeg) * (DK + DVL));
        }
        wr += es * clattn__dmin(WG, rows - grp * WG) * DV;
      }
    }
    local_cost_fill(out, c, (local_tally){rd, wr, fma, ex, loc, ws, bar}, &call,
                    dram_reads);
  }
  return CLATTN_OK;
}
