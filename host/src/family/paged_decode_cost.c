/* paged_decode_cost.c - the model's costs of the paged-decode family's
 * kernels (split and combine), counted from the plan and
 * cl/paged_decode.cl's loops.  The block table is taken as valid (the
 * call checks it): every page a length needs is read. */
#include "family/decode.h"
#include "family/paged_decode.h"
#include "model/model.h"

/* Visible keys of the pages of split s of S (pd_split_pages) of a
 * sequence whose visible keys are [lo, L): *keys, and *pages, *blocks
 * the pages it reads and the blocks of kb keys it runs. */
static void split_work(long P, long kb, long lo, long L, int s, int S,
                       double *keys, double *pages, double *blocks) {
  const long fp = lo / P, np = (L + P - 1) / P;
  const long per = (np - fp + S - 1) / S;
  const long pb = fp + (long)s * per;
  const long pe = np < pb + per ? np : pb + per;
  *keys = *pages = *blocks = 0;
  for (long pg = pb; pg < pe; pg++) {
    const long tlo = lo > pg * P ? lo : pg * P;
    const long thi = L < pg * P + P ? L : pg * P + P;
    *pages += 1;
    if (thi > tlo) {
      *keys += (double)(thi - tlo);
      *blocks += clattn__cdiv((double)(thi - tlo), (double)kb);
    }
  }
}

clattn_status clattn__paged_decode_cost(const void *desc, const void *plan,
                                        const int *lens,
                                        const clattn_profile *prof,
                                        clattn_prediction *out,
                                        double *dram_reads) {
  const clattn_paged_desc *d = desc;
  const clattn__paged_decode_plan *pl = plan;
  const double es = (double)clattn_dtype_size(d->dtype);
  const int i8 = clattn__paged_cache_dtype(d) == CLATTN_I8;
  const double cs = i8 ? 1.0 : es;
  const long B = d->batch, hkv = d->heads_kv, hq = d->heads_q;
  const long P = d->page_size, cap = (long)d->max_blocks * P;
  const double G = (double)(hq / hkv);
  const double DK = d->head_dim_k, DV = d->head_dim_v;
  const int S = pl->splits, direct = S == 1;
  const double alibi = d->alibi_slopes != NULL;
  const double softcap = d->softcap != 0.0f;
  const double sinks = d->sinks != NULL;
  /* every split reads the G slopes, and the G sinks where it writes o */
  const double opt_rd = 4.0 * G * (alibi + (direct ? sinks : 0.0));
  const double out_row = direct ? es * DV : 4.0 * (DV + 1.0);
  double rd = 0, wr = 0, fma = 0, ex = 0, keys_all = 0, pages_all = 0;
  const long seqs = clattn__distinct_seqs(lens, B);
  const double per_seq = clattn__seq_weight(lens, B);
  for (long b = 0; b < seqs; b++) {
    const long L = clattn__valid_len(lens, b, cap);
    long lo = 0;
    if (d->window > 0 && L - d->window > 0)
      lo = L - d->window;
    for (int s = 0; s < S; s++) {
      double nk, np, T;
      split_work(P, pl->kb, lo, L, s, S, &nk, &np, &T);
      keys_all += nk;
      pages_all += np;
      /* lens, q, a table entry a page, each key's K and V rows (and an
       * int8 cache's two scales) */
      rd += 4.0 + es * G * DK + opt_rd + 4.0 * np +
            nk * (cs * (DK + DV) + (i8 ? 8.0 : 0.0));
      /* QK^T and P V a key and head, each block's sum update, ALiBi's
       * bias a logit */
      fma += nk * G * (DK + DV) + T * G + alibi * nk * G;
      /* alpha a block and head, each probability, the soft-cap's tanh */
      ex += T * G + nk * G + softcap * nk * G;
      wr += G * out_row;
    }
  }
  rd *= per_seq, wr *= per_seq, fma *= per_seq, ex *= per_seq;
  keys_all *= per_seq, pages_all *= per_seq;
  clattn_cost *c = clattn__model_kernel(out, "paged_decode_split");
  /* paged_decode.c: one work-item a group unless the plan names a wg */
  clattn__model_core(out, c)->group_items = pl->wg ? pl->wg : 1;
  c->bytes_read = hkv * rd;
  c->bytes_written = hkv * wr;
  c->fma_issued = hkv * (fma + CLATTN__EXP2_FMAS * ex);
  c->exp2_issued = hkv * ex;
  c->local_bytes = 0;
  c->flops = 2.0 * keys_all * hq * (DK + DV);
  c->softmax_ops = CLATTN__C_SM * keys_all * hq;
  const double kv = keys_all * hkv * (cs * (DK + DV) + (i8 ? 8.0 : 0.0));
  const double qb = es * B * hq * DK;
  const double tab = 4.0 * pages_all;
  c->bytes_compulsory = 4.0 * B + tab + qb + kv + es * B * hq * DV;
  clattn__model_dram(c, 4.0 * B + tab + qb + kv, cs * pl->kb * (DK + DV), prof);
  dram_reads[0] = c->bytes_dram - c->bytes_written;
  if (!direct)
    dram_reads[1] = clattn__decode_combine_cost(out, "paged_decode_combine", B,
                                                hq, d->sinks, S, d->head_dim_v,
                                                es, lens, cap, prof);
  return CLATTN_OK;
}
