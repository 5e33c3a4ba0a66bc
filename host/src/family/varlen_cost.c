/* varlen_cost.c - the model's costs of the varlen family's kernels: the
 * FLOPs, exp2 evaluations and global bytes its kernels (cl/varlen.cl)
 * issue, counted by walking its launch group by group and item by item
 * (an item's key tiles in closed form).  The offsets are the
 * call's (cu_seqlens_q then cu_seqlens_k) or, without them, the full
 * call's mixed pattern (varlen.h). */
#include "family/varlen.h"
#include "family/plan.h"
#include "model/model.h"

#include <math.h>
#include <stdlib.h>

/* cl/common.cl's key_limit and key_start. */
static long key_limit(int causal, long L, long n, long i) {
  return causal ? (L < L - n + i + 1 ? L : L - n + i + 1) : L;
}
static long key_start(long W, long pos) {
  return W > 0 && pos - W + 1 > 0 ? pos - W + 1 : 0;
}
static long lmax(long a, long b) { return a > b ? a : b; }
static long lmin(long a, long b) { return a < b ? a : b; }

/* cl/varlen.cl's tile_sequence, and the offsets it reads. */
static int tile_sequence(const int *cu_q, int batch, int bq, long x,
                         int *reads) {
  int lo = 0, hi = batch;
  *reads = 0;
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    ++*reads;
    if ((long)(cu_q[mid] / bq) + mid <= x)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* What one KV head's launch issues, and the valid (query, key) pairs of
 * one query head. */
typedef struct tally {
  double rd, wr, fma, ex, pairs;
} tally;

static void walk(const clattn_varlen_desc *d, const clattn__varlen_plan *pl,
                 const int *cu_q, const int *cu_k, tally *s) {
  const int g = d->heads_q / d->heads_kv, bq = pl->bq, rpi = pl->rpi;
  const int causal = d->causal != 0, staged = pl->variant == 1;
  const long W = d->window, KB = pl->kb;
  const double es = (double)clattn_dtype_size(d->dtype);
  const double DK = d->head_dim_k, DV = d->head_dim_v;
  const double vwk = clattn__vec_width(d->head_dim_k);
  const double opt_row_b =
      4.0 * ((d->alibi_slopes != NULL) + (d->sinks != NULL));
  const double alibi = d->alibi_slopes != NULL, softcap = d->softcap != 0.0f;
  const long groups = clattn__varlen_groups(d, bq);
  long pos[CLATTN__VARLEN_MAX_RPI], lim[CLATTN__VARLEN_MAX_RPI],
      lo[CLATTN__VARLEN_MAX_RPI];
  for (int b = 0; b < d->batch; b++) { /* valid pairs, as the kernel skips */
    const long n = (long)cu_q[b + 1] - cu_q[b], m = (long)cu_k[b + 1] - cu_k[b];
    if (cu_q[b] < 0 || n < 0 || cu_q[b + 1] > d->total_q || cu_k[b] < 0 ||
        m < 0 || cu_k[b + 1] > d->total_k)
      continue;
    for (long i = 0; i < n; i++) {
      const long l = key_limit(causal, m, n, i);
      s->pairs += (double)lmax(0, l - key_start(W, m - n + i));
    }
  }
  for (long x = 0; x < groups; x++) {
    int reads;
    const int b = tile_sequence(cu_q, d->batch, bq, x, &reads);
    /* every item: the search's offsets and the sequence's four */
    s->rd += 4.0 * pl->wg * (reads + 4);
    const long q0 = cu_q[b], q1 = cu_q[b + 1], k0 = cu_k[b], k1 = cu_k[b + 1];
    if (q0 < 0 || q1 < q0 || q1 > d->total_q || k0 < 0 || k1 < k0 ||
        k1 > d->total_k)
      continue;
    const long n = q1 - q0, m = k1 - k0, tile = x - (q0 / bq + b);
    if (tile < 0 || tile * bq >= n)
      continue;
    const long i0 = tile * bq, rows = lmin(bq, n - i0) * g;
    for (long r0 = 0; r0 < rows; r0 += rpi) {
      for (int r = 0; r < rpi; r++) {
        const long i = i0 + lmin(r0 + r, rows - 1) / g;
        pos[r] = m - n + i;
        lim[r] = key_limit(causal, m, n, i);
        lo[r] = lmin(key_start(W, pos[r]), lim[r]);
      }
      /* the q rows (clamped ones too) and their option arrays */
      s->rd += rpi * (es * DK + opt_row_b);
      const long kbeg = key_start(W, pos[0]), kend = lim[rpi - 1];
      /* T tiles from kbeg, each row weighing the keys in its own bounds
       * (none before kbeg) */
      const double span = (double)lmax(0, kend - kbeg);
      const double T = ceil(span / (double)KB);
      double pv = 0;
      for (int r = 0; r < rpi; r++)
        pv += (double)lmax(0, lim[r] - lmax(lo[r], kbeg));
      /* the softmax step of each row a tile (alpha, KB probabilities, the
       * soft-cap's exp2 a key; the sum's update and ALiBi's bias a key) */
      s->fma += T * rpi * (1.0 + alibi * KB) + DV * pv;
      s->ex += T * rpi * (1.0 + KB + softcap * KB);
      if (staged) {
        /* whole KB-key tiles of K^T against every row; V rows per row and
         * key */
        s->rd += 4.0 * DK * KB * T + 4.0 * DV * pv;
        s->fma += (double)rpi * DK * KB * T;
      } else {
        /* each key row once against every row (a dot product's first
         * vector a multiplication), each V row once */
        s->rd += es * (DK + DV) * span;
        s->fma += (double)rpi * (DK - vwk) * span;
      }
      s->wr += es * DV * lmin(rpi, rows - r0);
    }
  }
}

clattn_status clattn__varlen_cost(const void *desc, const void *plan,
                                  const int *ints, const clattn_profile *prof,
                                  clattn_prediction *out, double *dram_reads) {
  const clattn_varlen_desc *d = desc;
  const clattn__varlen_plan *pl = plan;
  const size_t cu = (size_t)d->batch + 1;
  int *own = NULL;
  const int *cu_q = ints, *cu_k = ints ? ints + cu : NULL;
  if (ints == NULL) {
    if ((own = malloc(2 * cu * sizeof *own)) == NULL)
      return clattn__model_fail(out, CLATTN_ERR_NOMEM, "out of host memory");
    own[0] = own[cu] = 0;
    clattn__varlen_pattern(d->batch, d->total_q, own + 1);
    clattn__varlen_pattern(d->batch, d->total_k, own + cu + 1);
    for (size_t b = 1; b < cu; b++) {
      own[b] += own[b - 1];
      own[cu + b] += own[cu + b - 1];
    }
    cu_q = own;
    cu_k = own + cu;
  }
  tally s = {0, 0, 0, 0, 0};
  walk(d, pl, cu_q, cu_k, &s);
  free(own);
  const double es = (double)clattn_dtype_size(d->dtype);
  const double hkv = d->heads_kv, hq = d->heads_q;
  const double DK = d->head_dim_k, DV = d->head_dim_v;
  const double pairs = s.pairs * hq;
  const double q_bytes = es * d->total_q * hq * DK;
  const double kv_bytes = es * d->total_k * hkv * (DK + DV);
  const double o_bytes = es * d->total_q * hq * DV;
  int k = 0;
  if (pl->variant == 1) {
    /* varlen_stage: every packed key row read once, K^T and V written as
     * float32 over the staged row length */
    clattn_cost *st = clattn__model_kernel(out, "varlen_stage");
    st->bytes_read = kv_bytes;
    st->bytes_written = 4.0 * hkv * pl->ld * (DK + DV);
    st->bytes_compulsory = st->bytes_read + st->bytes_written;
    st->bytes_dram = st->bytes_compulsory;
    dram_reads[k++] = st->bytes_read;
    clattn__model_core(out, st)->group_items = 1; /* varlen.c: one a group */
  }
  clattn_cost *c = clattn__model_kernel(
      out, pl->variant == 1 ? "varlen_fwd_staged" : "varlen_fwd");
  clattn__model_core(out, c)->group_items = pl->wg;
  const double staged_kv = 4.0 * hkv * pl->ld * (DK + DV);
  c->bytes_read = hkv * s.rd;
  c->bytes_written = hkv * s.wr;
  c->fma_issued = hkv * (s.fma + CLATTN__EXP2_FMAS * s.ex);
  c->exp2_issued = hkv * s.ex;
  c->flops = 2.0 * pairs * (DK + DV);
  c->softmax_ops = CLATTN__C_SM * pairs;
  /* the K and V rows a group re-reads are its sequence's: in cache while
   * they fit (an average sequence's) */
  const double kv_read = pl->variant == 1 ? staged_kv : kv_bytes;
  c->bytes_compulsory = q_bytes + kv_read + o_bytes;
  clattn__model_dram(c, q_bytes + kv_read, kv_read / d->batch, prof);
  dram_reads[k] = c->bytes_dram - c->bytes_written;
  return CLATTN_OK;
}
