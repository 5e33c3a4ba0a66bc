/* decode_cost.c - the model's costs of the decode family's kernels (split
 * and combine, counted from the plan and cl/decode.cl's loops);
 * tests/test_model.c checks them against Oclgrind's instruction counts. */
#include "family/decode.h"
#include "model/model.h"

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
  const int VWV = clattn__vec_width(d->head_dim_v);
  double rd = 0, wr = 0, fma = 0, ex = 0, loc = 0, keys_all = 0;
  /* per split work-group: what its loops issue */
  const double out_row = direct ? es * DV : 4.0 * (DV + 1.0);
  const long seqs = clattn__distinct_seqs(lens, B);
  const double per_seq = clattn__seq_weight(lens, B);
  for (long b = 0; b < seqs; b++) {
    const long L = clattn__valid_len(lens, b, d->capacity);
    keys_all += (double)L;
    for (int s = 0; s < S; s++) {
      const long tb = (long)s * pl->chunk;
      const double nk = clattn__dmax(0, clattn__dmin(L, tb + pl->chunk) - tb);
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
        rd += 4.0 + es * G * DK +
              es * (nk * (k_loads * DK + (1.0 + passes) * DV) +
                    lone * k_loads * DK);
        /* QK^T, PV (padded heads included), sum updates */
        fma += (nk + lone) * G * DK + nk * pv_heads * DV + T * G;
        /* alpha per block; each key's probability, over the block padded
         * to kb keys per head, or the valid keys only in lanes */
        ex += T * G + G * (pl->lanes ? nk : T * pl->kb);
      } else {
        const double KT = pl->kb, T = clattn__cdiv(nk, KT);
        /* every item reads lens; q, K and V once each (V staged in local
         * memory, then read by each query head) */
        rd += 4.0 * pl->wg + es * G * DK + es * nk * (DK + DVL);
        fma += T * G * KT * DK + nk * G * DV + T * G;
        ex += T * G * (1.0 + KT);
        loc += 4.0 * (G * DK * (1.0 + T * KT) + T * KT * DK * (1.0 + G) +
                      T * G * KT * 3.0 + nk * G + nk * (DVL + G * DV));
      }
      wr += G * out_row;
    }
  }
  rd *= per_seq, wr *= per_seq, fma *= per_seq, ex *= per_seq;
  loc *= per_seq, keys_all *= per_seq;
  clattn_cost *c = clattn__model_kernel(
      out, pl->variant == 1 ? "decode_split_reg" : "decode_split_local");
  c->bytes_read = hkv * rd;
  c->bytes_written = hkv * wr;
  c->fma_issued = hkv * (fma + CLATTN__EXP2_FMAS * ex);
  c->exp2_issued = hkv * ex;
  c->local_bytes = hkv * loc;
  c->flops = 2.0 * keys_all * hq * (DK + DV);
  c->softmax_ops = CLATTN__C_SM * keys_all * hq;
  const double kv = es * keys_all * hkv * (DK + DVL);
  const double qb = es * B * hq * DK;
  c->bytes_compulsory = 4.0 * B + qb + kv + es * B * hq * DV;
  clattn__model_dram(c, 4.0 * B + qb + kv, es * pl->kb * (DK + DVL), prof);
  dram_reads[0] = c->bytes_dram - c->bytes_written;
  if (!direct) {
    /* decode_combine: one item per (row, VWV-wide slice of DV) */
    clattn_cost *cb = clattn__model_kernel(out, "decode_combine");
    const double items = (double)(DV / VWV);
    double crd = 0, cfma = 0, cex = 0;
    for (long b = 0; b < seqs; b++) {
      const long L = clattn__valid_len(lens, b, d->capacity);
      const double live = L > 0; /* all splits empty: lmax = -inf */
      /* lse read for the maximum, then again with each partial */
      crd += hq * items * (4.0 * S + live * 4.0 * S * (1.0 + VWV));
      cfma += hq * items * live * S * (VWV + CLATTN__EXP2_FMAS);
      cex += hq * items * live * S;
    }
    crd *= per_seq, cfma *= per_seq, cex *= per_seq;
    cb->bytes_read = crd;
    cb->bytes_written = es * B * hq * DV;
    cb->fma_issued = cfma;
    cb->exp2_issued = cex;
    cb->bytes_compulsory = 4.0 * B * hq * S * (DV + 1.0) + cb->bytes_written;
    clattn__model_dram(cb, 4.0 * B * hq * S * (DV + 1.0), 0.0, prof);
    dram_reads[1] = cb->bytes_dram - cb->bytes_written;
  }
  return CLATTN_OK;
}
