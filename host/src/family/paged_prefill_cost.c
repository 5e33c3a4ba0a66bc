/* paged_prefill_cost.c - the model's costs of the paged-prefill kernel: the
 * FLOPs, exp2 evaluations, global bytes and barriers it issues, counted
 * from its plan and the loops of cl/paged_prefill.cl (the comments name
 * them). */
#include "family/paged_prefill.h"
#include "family/plan.h"
#include "model/model.h"

/* The first key of query i's window before its clamp to the causal limit
 * (common.cl key_start; 0 without). */
static long key_start(long W, long L, long n, long i) {
  return W > 0 && L - n + i - W + 1 > 0 ? L - n + i - W + 1 : 0;
}

/* Keys visible to query i (common.cl key_limit). */
static long key_limit(int causal, long L, long n, long i) {
  return causal ? (L < L - n + i + 1 ? L : L - n + i + 1) : L;
}

clattn_status clattn__paged_prefill_cost(const void *desc, const void *plan,
                                         const int *kv_lens,
                                         const clattn_profile *prof,
                                         clattn_prediction *out,
                                         double *dram_reads) {
  const clattn_paged_desc *d = desc;
  const clattn__paged_prefill_plan *pl = plan;
  const int i8 = clattn__paged_cache_dtype(d) == CLATTN_I8;
  const double es = (double)clattn_dtype_size(d->dtype);
  const double cs = (double)clattn_dtype_size(clattn__paged_cache_dtype(d));
  const long B = d->batch, n = d->n_q, hkv = d->heads_kv;
  const long g = d->heads_q / d->heads_kv, rows = n * g;
  const long cap = (long)d->max_blocks * d->page_size;
  const double DK = d->head_dim_k, DV = d->head_dim_v;
  const long W = d->window, RQ = pl->rq, WG = pl->wg, KT = pl->kt;
  const int causal = d->causal != 0;
  const double opt_row_b =
      4.0 * ((d->alibi_slopes != NULL) + (d->sinks != NULL));
  const double alibi_fma = d->alibi_slopes != NULL ? 1.0 : 0.0;
  const double softcap_ex = d->softcap != 0.0f ? 1.0 : 0.0;
  const long seqs = clattn__distinct_seqs(kv_lens, B);
  const double per_seq = clattn__seq_weight(kv_lens, B);
  const long groups = (rows + RQ - 1) / RQ;

  clattn_cost *c = clattn__model_kernel(out, "paged_prefill");
  clattn__model_core(out, c)->group_items = pl->wg;
  double pairs = 0, rd = 0, wr = 0, fma = 0, ex = 0, loc = 0, ws = 0, kv = 0;
  double bar = 0;
  for (long b = 0; b < seqs; b++) {
    const long L = clattn__valid_len(kv_lens, b, cap);
    pairs += clattn__queries_keys(causal, W, L, n, 0, n);
    double seq_keys = 0;
    for (long grp = 0; grp < groups; grp++) {
      const long r0 = grp * RQ;
      const long last = r0 + RQ - 1 < rows - 1 ? r0 + RQ - 1 : rows - 1;
      const long kbeg = key_start(W, L, n, r0 / g) / KT * KT;
      const long kend = key_limit(causal, L, n, last / g);
      /* every item: kv_lens, RQ / WG q rows and their option arrays */
      rd += WG * 4.0 + RQ * (es * DK + opt_row_b);
      /* keys each row (clamped ones too) weighs in P V: its own bounds */
      const double row_keys =
          clattn__rows_keys(causal, W, L, n, g, rows, r0, RQ);
      if (kend > kbeg) {
        const double keys = (double)(kend - kbeg);
        const double T = clattn__cdiv(keys, KT);
        /* per loaded key (t < nt): its table entry, an int8 cache's two
         * scales, its K and V rows */
        rd += keys * (4.0 + (i8 ? 8.0 : 0.0) + cs * (DK + DV));
        seq_keys = clattn__dmax(seq_keys, keys);
        /* a tile's three barriers: its pages read, its rows loaded, its
         * keys scored */
        bar += 3.0 * T;
        /* every row scores all KT keys of every tile, updates its running
         * sum, and accumulates DV per key in its bounds */
        fma += RQ * T * (KT * (DK + alibi_fma) + 1.0) + row_keys * DV;
        ex += RQ * T * (1.0 + KT + softcap_ex * KT);
        /* local: tiles stored, then read by every row */
        loc += 4.0 * (T * KT * (DK + DV + RQ * DK) + row_keys * DV);
        ws = clattn__dmax(ws, cs * keys * (DK + DV));
      }
      wr += es * (double)(RQ < rows - r0 ? RQ : rows - r0) * DV;
    }
    kv += seq_keys;
  }
  pairs *= per_seq * (double)d->heads_q;
  rd *= per_seq, wr *= per_seq, fma *= per_seq, ex *= per_seq;
  loc *= per_seq, kv *= per_seq, bar *= per_seq;
  const double q_bytes = es * B * n * d->heads_q * DK;
  const double o_bytes = es * B * n * d->heads_q * DV;
  const double kv_bytes =
      hkv * kv * (cs * (DK + DV) + (i8 ? 8.0 : 0.0)) + 4.0 * kv * hkv;
  c->bytes_read = hkv * rd;
  c->bytes_written = hkv * wr;
  c->fma_issued = hkv * (fma + CLATTN__EXP2_FMAS * ex);
  c->exp2_issued = hkv * ex;
  c->local_bytes = hkv * loc;
  clattn__model_core(out, c)->barriers = hkv * bar;
  c->flops = 2.0 * pairs * (DK + DV);
  c->softmax_ops = CLATTN__C_SM * pairs;
  c->bytes_compulsory = q_bytes + kv_bytes + o_bytes;
  clattn__model_dram(c, q_bytes + kv_bytes, ws, prof);
  dram_reads[0] = c->bytes_dram - c->bytes_written;
  return CLATTN_OK;
}
