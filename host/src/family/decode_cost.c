/* decode_cost.c - the model's costs of the decode family's kernels (split
 * and combine, counted from the plan and cl/decode.cl's loops, barriers
 * included);
 * tests/test_model.c checks them against Oclgrind's instruction counts. */
#include "family/decode.h"
#include "model/model.h"

#include <math.h>

/* The keys [*tb, *te) that split s reads of a sequence of L valid keys
 * (cl/decode.cl's split_keys): the plan's chunk of the cache, or with a
 * window its share of the visible keys, in chunks rounded up to a block;
 * *te <= *tb: none. */
static void split_keys(const clattn_decode_desc *d,
                       const clattn__decode_plan *pl, long L, int s, long *tb,
                       long *te) {
  long per = pl->chunk, lo = 0;
  if (d->window > 0) {
    lo = L - d->window > 0 ? L - d->window : 0;
    per =
        (long)clattn__cdiv(clattn__cdiv((double)(L - lo), pl->splits), pl->kb) *
        pl->kb;
  }
  *tb = lo + (long)s * per;
  *te = L < *tb + per ? L : *tb + per;
}

/* Query heads of a sequence whose combine row is live (its maximum is not
 * -inf): all where it has keys, else those with a finite sink. */
static double live_heads(long hq, const float *sinks, long L) {
  if (L > 0)
    return (double)hq;
  double n = 0;
  for (long h = 0; sinks != NULL && h < hq; h++)
    n += isfinite(sinks[h]) ? 1.0 : 0.0;
  return n;
}

clattn_status clattn__decode_cost(const void *desc, const void *plan,
                                  const int *lens, const clattn_profile *prof,
                                  clattn_prediction *out, double *dram_reads) {
  const clattn_decode_desc *d = desc;
  const clattn__decode_plan *pl = plan;
  const double es = (double)clattn_dtype_size(d->dtype);
  const long B = d->batch, hkv = d->heads_kv, hq = d->heads_q;
  const double G = (double)(hq / hkv);
  const double DK = d->head_dim_k, DV = d->head_dim_v;
  /* V's own loads from memory (none when V is K: the local kernel uses
   * the K tile, the register kernel's V loads hit L1) */
  const double DVL = pl->kv_same ? 0.0 : DV;
  const int S = pl->splits, direct = S == 1;
  /* options: each work-item (variant 1) or work-group (2) reads the G
   * slopes, and the G sinks where it writes o (else the combine reads
   * them); ALiBi's bias is an FMA a visible logit, a soft-cap's tanh an
   * exp2 (cl/common.cl's softcap1) */
  const double alibi = d->alibi_slopes != NULL;
  const double softcap = d->softcap != 0.0f;
  const double sinks = d->sinks != NULL;
  const double opt_rd = 4.0 * G * (alibi + (direct ? sinks : 0.0));
  double rd = 0, wr = 0, fma = 0, ex = 0, loc = 0, keys_all = 0, bar = 0;
  /* per split work-group: what its loops issue */
  const double out_row = direct ? es * DV : 4.0 * (DV + 1.0);
  const long seqs = clattn__distinct_seqs(lens, B);
  const double per_seq = clattn__seq_weight(lens, B);
  for (long b = 0; b < seqs; b++) {
    const long L = clattn__valid_len(lens, b, d->capacity);
    for (int s = 0; s < S; s++) {
      long tb, te;
      split_keys(d, pl, L, s, &tb, &te);
      const double nk = clattn__dmax(0, (double)(te - tb));
      keys_all += nk;
      if (pl->variant == 1) {
        const double T = clattn__cdiv(nk, pl->kb);
        /* lens, q, K (each row once, or once per 8 heads when 8 or more
         * heads are in lanes, where keys are scored in pairs and a lone
         * last key is paired with itself); V once for the first head and once
         * per P V pass of pvh heads after it (the last pass padded), or
         * once in all when the passes go by slices of the value dims (pvh
         * == G, all heads a pass; prefetches are not loads) */
        const double lone = pl->lanes ? fmod(nk, 2.0) : 0.0;
        const double k_loads = pl->lanes && G >= 8 ? G / 8.0 : 1.0;
        const int slices = pl->pvh >= G;
        const double passes = slices ? 0.0 : clattn__cdiv(G - 1.0, pl->pvh);
        const double pv_heads = slices ? G : 1.0 + passes * pl->pvh;
        rd += 4.0 + es * G * DK + opt_rd +
              es * (nk * (k_loads * DK + (1.0 + passes) * DV) +
                    lone * k_loads * DK);
        /* QK^T, PV (padded heads included), sum updates, ALiBi */
        fma +=
            (nk + lone) * G * DK + nk * pv_heads * DV + T * G + alibi * nk * G;
        /* alpha per block; each key's probability, over the block padded
         * to kb keys per head, or the valid keys only in lanes */
        ex += T * G + G * (pl->lanes ? nk : T * pl->kb) + softcap * nk * G;
      } else if (pl->variant == 3) {
        /* a work-group is one subgroup of SG lanes, a key a lane: T steps
         * of SG keys */
        const double SG = pl->wg;
        const double T = clattn__cdiv(nk, SG), ND = clattn__cdiv(DV, SG);
        /* every lane reads lens and the G slopes (and where it writes o
         * the sinks); q staged once; each K and V element read once (V by
         * its own loads also where it is K) */
        rd += SG * (4.0 + 4.0 * G * (alibi + (direct ? sinks : 0.0))) +
              es * G * DK + es * nk * (DK + DV);
        /* QK^T; P V over the value dims padded to SG lanes; per step, head
         * and lane the sum update and ND rescales; ALiBi */
        fma += nk * G * DK + nk * G * ND * SG + T * SG * G * (1.0 + ND) +
               alibi * nk * G;
        /* alpha and the lane's probability, per step, head and lane */
        ex += 2.0 * T * SG * G + softcap * nk * G;
        /* q staged, then read by each key's lane: no tiles, no barrier per
         * step; the reductions and broadcasts are not local memory */
        loc += 4.0 * G * DK * (1.0 + nk);
        bar += 1.0; /* after q is staged */
      } else {
        const double KT = pl->kb, T = clattn__cdiv(nk, KT);
        /* every item reads lens; q, K and V once each (V staged in local
         * memory, then read by each query head) */
        rd += 4.0 * pl->wg + es * G * DK + es * nk * (DK + DVL) + opt_rd;
        /* one after q is staged; a tile's four: loaded, scored, its
         * softmax updated, its P V done */
        bar += 1.0 + 4.0 * T;
        fma += T * G * KT * DK + nk * G * DV + T * G + alibi * nk * G;
        ex += T * G * (1.0 + KT) + softcap * nk * G;
        /* with ALiBi the slopes are staged, then read a visible logit */
        loc += 4.0 * (G * DK * (1.0 + T * KT) + T * KT * DK * (1.0 + G) +
                      T * G * KT * 3.0 + nk * G + nk * (DVL + G * DV) +
                      alibi * G * (1.0 + nk));
      }
      wr += G * out_row;
    }
  }
  rd *= per_seq, wr *= per_seq, fma *= per_seq, ex *= per_seq;
  loc *= per_seq, keys_all *= per_seq, bar *= per_seq;
  clattn_cost *c =
      clattn__model_kernel(out, pl->variant == 1   ? "decode_split_reg"
                                : pl->variant == 2 ? "decode_split_local"
                                                   : "decode_split_sg");
  c->bytes_read = hkv * rd;
  c->bytes_written = hkv * wr;
  c->fma_issued = hkv * (fma + CLATTN__EXP2_FMAS * ex);
  c->exp2_issued = hkv * ex;
  c->local_bytes = hkv * loc;
  clattn__model_core(out, c)->barriers = hkv * bar;
  /* decode.c: variant 1 one work-item a group unless the plan names a wg */
  clattn__model_core(out, c)->group_items =
      pl->variant == 1 && pl->wg == 0 ? 1 : pl->wg;
  c->flops = 2.0 * keys_all * hq * (DK + DV);
  c->softmax_ops = CLATTN__C_SM * keys_all * hq;
  const double kv = es * keys_all * hkv * (DK + DVL);
  const double qb = es * B * hq * DK;
  c->bytes_compulsory = 4.0 * B + qb + kv + es * B * hq * DV;
  clattn__model_dram(c, 4.0 * B + qb + kv, es * pl->kb * (DK + DVL), prof);
  dram_reads[0] = c->bytes_dram - c->bytes_written;
  if (!direct)
    dram_reads[1] =
        clattn__decode_combine_cost(out, "decode_combine", B, hq, d->sinks, S,
                                    d->head_dim_v, es, lens, d->capacity, prof);
  return CLATTN_OK;
}

double clattn__decode_combine_cost(clattn_prediction *out, const char *name,
                                   long B, long hq, const float *sinks_of,
                                   int S, int dv, double es, const int *lens,
                                   long cap, const clattn_profile *prof) {
  /* one item per (row, VWV-wide slice of DV) */
  clattn_cost *cb = clattn__model_kernel(out, name);
  clattn__model_core(out, cb)->group_items = 0; /* launched without one */
  const double DV = dv;
  const int VWV = clattn__vec_width(dv);
  const double sinks = sinks_of != NULL;
  const long seqs = clattn__distinct_seqs(lens, B);
  const double per_seq = clattn__seq_weight(lens, B);
  const double items = (double)(DV / VWV);
  double crd = 0, cfma = 0, cex = 0;
  for (long b = 0; b < seqs; b++) {
    const long L = clattn__valid_len(lens, b, cap);
    /* rows whose splits are all empty and that have no finite sink:
     * lmax = -inf, nothing merged */
    const double live = live_heads(hq, sinks_of, L);
    /* lse read for the maximum, then again with each partial; a sink
     * read by each item, and its exp2 where the row is live */
    crd +=
        items * (hq * (4.0 * S + 4.0 * sinks) + live * 4.0 * S * (1.0 + VWV));
    cfma += items * live *
            (S * (VWV + CLATTN__EXP2_FMAS) + sinks * CLATTN__EXP2_FMAS);
    cex += items * live * (S + sinks);
  }
  crd *= per_seq, cfma *= per_seq, cex *= per_seq;
  cb->bytes_read = crd;
  cb->bytes_written = es * B * hq * DV;
  cb->fma_issued = cfma;
  cb->exp2_issued = cex;
  cb->bytes_compulsory = 4.0 * B * hq * S * (DV + 1.0) + cb->bytes_written;
  clattn__model_dram(cb, 4.0 * B * hq * S * (DV + 1.0), 0.0, prof);
  return cb->bytes_dram - cb->bytes_written;
}
