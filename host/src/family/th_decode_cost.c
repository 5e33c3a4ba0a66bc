/* th_decode_cost.c - the model's costs of the talking-heads decode's
 * kernels (th_logits, th_values, th_combine, counted from the plan and
 * cl/th_decode.cl's loops, scratch traffic included); tests/test_model.c
 * checks them against Oclgrind's counts. */
#include "family/th_decode.h"
#include "model/model.h"

clattn_status clattn__th_decode_cost(const void *desc, const void *plan,
                                     const int *lens,
                                     const clattn_profile *prof,
                                     clattn_prediction *out,
                                     double *dram_reads) {
  const clattn_th_decode_desc *d = desc;
  const clattn__th_decode_plan *pl = plan;
  const double es = (double)clattn_dtype_size(d->dtype);
  const double HK = d->heads_k, H = d->heads, HV = d->heads_v;
  const double DK = d->head_dim_k, DV = d->head_dim_v;
  const long B = d->batch;
  const int S = pl->splits, direct = S == 1;
  /* the keys the query sees: the valid ones, with a window its last W */
  double keys = 0;
  for (long b = 0; b < clattn__distinct_seqs(lens, B); b++) {
    const long L = clattn__valid_len(lens, b, d->capacity);
    keys += (double)(d->window > 0 && L > d->window ? d->window : L);
  }
  keys *= clattn__seq_weight(lens, B);
  /* every work-item reads lens; the rest is per visible key, whichever
   * split it falls in (the splits before the window read no key) */
  const double items = (double)B * S;

  /* th_logits: q and K per key head, P_l per logit, the logits written
   * then read back for the sums, the statistics written */
  clattn_cost *l = clattn__model_kernel(out, "th_logits");
  /* th_decode.c: logits and values one work-item a group unless the plan
   * names a wg; the combine without a local size (0) */
  const double group = pl->wg ? pl->wg : 1;
  clattn__model_core(out, l)->group_items = group;
  l->bytes_read =
      4.0 * items + keys * (2.0 * es * HK * DK + 4.0 * HK * H) + keys * 4.0 * H;
  l->bytes_written = keys * 4.0 * H + items * 8.0 * H;
  l->exp2_issued = keys * H;
  l->fma_issued = keys * (HK * DK + HK * H) + CLATTN__EXP2_FMAS * keys * H;
  l->flops = 2.0 * keys * (HK * DK + HK * H);
  l->softmax_ops = CLATTN__C_SM * keys * H;
  const double kbytes = es * keys * HK * DK;
  const double l_comp = 4.0 * B + es * B * HK * DK + kbytes + 4.0 * HK * H;
  l->bytes_compulsory = l_comp + l->bytes_written;
  clattn__model_dram(l, l_comp + keys * 4.0 * H,
                     es * HK * DK + 4.0 * HK * H + 4.0 * H * pl->chunk, prof);
  dram_reads[0] = l->bytes_dram - l->bytes_written;

  /* th_values: every split's statistics, the logits, P_w per (logit,
   * value) head pair, U written then read per value head, V, the share */
  clattn_cost *v = clattn__model_kernel(out, "th_values");
  clattn__model_core(out, v)->group_items = group;
  v->bytes_read = items * (4.0 + 12.0 * H * S) +
                  keys * (4.0 * H + 4.0 * H * HV + 4.0 * HV + es * HV * DV);
  v->bytes_written = keys * 4.0 * HV + items * HV * DV * (direct ? es : 4.0);
  v->exp2_issued = items * H * S + keys * H;
  v->fma_issued = items * H * S + keys * (H * HV + HV * DV) +
                  CLATTN__EXP2_FMAS * v->exp2_issued;
  v->flops = 2.0 * keys * (H * HV + HV * DV);
  const double v_comp = items * (4.0 + 8.0 * H * S) + keys * 4.0 * H +
                        4.0 * H * HV + es * keys * HV * DV;
  v->bytes_compulsory = v_comp + v->bytes_written;
  clattn__model_dram(v, v_comp + keys * 4.0 * HV,
                     4.0 * H * HV + 4.0 * (H + HV) * pl->chunk, prof);
  dram_reads[1] = v->bytes_dram - v->bytes_written;

  if (!direct) {
    /* th_combine: one item per (row, VWV-wide slice of DV) */
    clattn_cost *c = clattn__model_kernel(out, "th_combine");
    c->bytes_read = 4.0 * B * HV * DV * S;
    c->bytes_written = es * B * HV * DV;
    c->bytes_compulsory = c->bytes_read + c->bytes_written;
    clattn__model_dram(c, c->bytes_read, 0.0, prof);
    dram_reads[2] = c->bytes_dram - c->bytes_written;
  }
  return CLATTN_OK;
}
