/* model.c - the roofline model: for every kernel the library launches, the
 * FLOPs, the exp2 evaluations and the global bytes it issues, counted from
 * the same plan (plan.c) and the same loop structure as the kernel source,
 * and from these the intensity, the bound and a predicted time on a device
 * profile.  Pure functions: no OpenCL, no context.
 *
 * The issued counts mirror cl/attention.cl and cl/decode.cl line by line
 * (the comments name the loops); tests/test_model.c checks them against
 * Oclgrind's instruction counts, so a kernel change that alters its
 * traffic fails there until the model follows. */
#include "family/plan.h"
#include "device/probe.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Lanes of FMA in one exp2 evaluation (the Cephes polynomial in
 * cl/common.cl). */
#define EXP2_FMAS 6.0
/* Nominal softmax operations per valid logit (spec 1.2). */
#define C_SM 5.0
/* Launch latency assumed when a profile has none (datasheet GPUs). */
#define DEFAULT_LAUNCH_US 5.0

static clattn_status fail(clattn_prediction *out, clattn_status st,
                          const char *fmt, const char *arg) {
  snprintf(out->errmsg, sizeof out->errmsg, fmt, arg);
  return st;
}

static clattn_cost *add_kernel(clattn_prediction *out, const char *name) {
  if (out->n_kernels >= CLATTN_MODEL_MAX_KERNELS)
    return NULL;
  clattn_cost *c = &out->kernel[out->n_kernels++];
  memset(c, 0, sizeof *c);
  snprintf(c->kernel, sizeof c->kernel, "%s", name);
  c->launches = 1;
  return c;
}

/* DRAM bytes of a kernel whose issued reads exceed the compulsory ones by
 * re-reads of a working set of `ws` bytes: the cache serves them when the
 * working set fits in half of it. */
static void dram(clattn_cost *c, double compulsory_reads, double ws,
                 const clattn_profile *p) {
  double reads = c->bytes_read;
  if (reads > compulsory_reads && p->cache_bytes > 0 &&
      ws <= 0.5 * (double)p->cache_bytes)
    reads = compulsory_reads;
  c->bytes_dram = reads + c->bytes_written;
}

/* Times, intensity and bound of one kernel from its counts. */
static void timing(clattn_cost *c, double dram_reads,
                   const clattn_profile *p) {
  const double rd = p->bw_read_gbs > 0 ? p->bw_read_gbs : p->bw_copy_gbs;
  const double wr = p->bw_copy_gbs > 0 ? p->bw_copy_gbs : rd;
  const double writes = c->bytes_dram - dram_reads;
  c->t_memory = (rd > 0 ? dram_reads / (rd * 1e9) : 0.0) +
                (wr > 0 ? writes / (wr * 1e9) : 0.0);
  c->t_compute = p->fp32_gflops > 0 ? 2.0 * (c->fma_issued + c->fma_spilled) /
                                          (p->fp32_gflops * 1e9)
                                    : 0.0;
  double lat = p->launch_pipelined_us > 0 ? p->launch_pipelined_us
               : p->launch_us > 0         ? p->launch_us
                                          : DEFAULT_LAUNCH_US;
  c->t_launch = c->launches * lat * 1e-6;
  const double busy = fmax(c->t_memory, c->t_compute);
  c->t_pred = busy + c->t_launch;
  c->bound = c->t_launch > busy                ? CLATTN_BOUND_LAUNCH
             : c->t_compute > c->t_memory ? CLATTN_BOUND_COMPUTE
                                          : CLATTN_BOUND_MEMORY;
  c->intensity = c->bytes_dram > 0 ? c->flops / c->bytes_dram : 0.0;
}

static void finish(clattn_prediction *out, const double *dram_reads,
                   const clattn_profile *p) {
  clattn_cost *t = &out->total;
  memset(t, 0, sizeof *t);
  snprintf(t->kernel, sizeof t->kernel, "total");
  for (int i = 0; i < out->n_kernels; i++) {
    clattn_cost *c = &out->kernel[i];
    timing(c, dram_reads[i], p);
    t->launches += c->launches;
    t->flops += c->flops;
    t->softmax_ops += c->softmax_ops;
    t->fma_issued += c->fma_issued;
    t->exp2_issued += c->exp2_issued;
    t->fma_spilled += c->fma_spilled;
    t->bytes_read += c->bytes_read;
    t->bytes_written += c->bytes_written;
    t->bytes_compulsory += c->bytes_compulsory;
    t->bytes_dram += c->bytes_dram;
    t->local_bytes += c->local_bytes;
    t->t_memory += c->t_memory;
    t->t_compute += c->t_compute;
    t->t_launch += c->t_launch;
    t->t_pred += c->t_pred;
  }
  t->intensity = t->bytes_dram > 0 ? t->flops / t->bytes_dram : 0.0;
  const double busy = fmax(t->t_memory, t->t_compute);
  t->bound = t->t_launch > busy                ? CLATTN_BOUND_LAUNCH
             : t->t_compute > t->t_memory ? CLATTN_BOUND_COMPUTE
                                          : CLATTN_BOUND_MEMORY;
  const double bw = p->bw_read_gbs > 0 ? p->bw_read_gbs : p->bw_copy_gbs;
  out->ridge = bw > 0 ? p->fp32_gflops / bw : 0.0;
}

static int check_profile(const clattn_profile *p, clattn_prediction *out) {
  if (p == NULL || out == NULL)
    return 0;
  memset(out, 0, sizeof *out);
  return 1;
}

static double imin(double a, double b) { return a < b ? a : b; }
static double imax(double a, double b) { return a > b ? a : b; }
static double cdiv(double a, double b) { return ceil(a / b); }

/* Keys visible to query position i (cl/attention.cl key_limit). */
static long key_limit(int causal, long L, long n, long i) {
  return causal ? (L < L - n + i + 1 ? L : L - n + i + 1) : L;
}

/* Shared validation of the shapes the kernels accept. */
static clattn_status check_heads(int hq, int hkv, int dk, int dv,
                                 clattn_dtype dt, clattn_prediction *out) {
  if (hq < 1 || hkv < 1 || hq % hkv != 0)
    return fail(out, CLATTN_ERR_SHAPE, "%s",
                "heads_q must be a positive multiple of heads_kv");
  if (dk < 1 || dv < 1 || dk > CLATTN_MAX_HEAD_DIM ||
      dv > CLATTN_MAX_HEAD_DIM)
    return fail(out, CLATTN_ERR_SHAPE, "%s",
                "head dims must be in 1..CLATTN_MAX_HEAD_DIM");
  if (clattn_dtype_size(dt) == 0)
    return fail(out, CLATTN_ERR_INVALID_ARG, "%s", "unknown dtype");
  return CLATTN_OK;
}

clattn_status clattn_model_attention(const clattn_attn_desc *d,
                                     const int *kv_lens,
                                     const clattn_profile *prof,
                                     clattn_prediction *out) {
  if (!check_profile(prof, out) || d == NULL)
    return CLATTN_ERR_INVALID_ARG;
  clattn_status rc;
  if (d->batch < 1 || d->n_q < 1 || d->n_kv < 1)
    return fail(out, CLATTN_ERR_SHAPE, "%s",
                "batch, n_q and n_kv must be >= 1");
  if ((rc = check_heads(d->heads_q, d->heads_kv, d->head_dim_k,
                        d->head_dim_v, d->dtype, out)))
    return rc;
  const clattn__target tgt = clattn__target_of_profile(prof);
  clattn__prefill_plan pl;
  if ((rc = clattn__plan_prefill(&tgt, d, &pl, out->errmsg,
                                 sizeof out->errmsg)))
    return rc;
  out->params = (clattn_params){pl.variant, pl.rb,
                                pl.variant == 1 ? pl.kb : pl.kt, pl.wg, 0, 0};
  const double es = (double)clattn_dtype_size(d->dtype);
  const long B = d->batch, n = d->n_q, m = d->n_kv;
  const long hkv = d->heads_kv, g = d->heads_q / d->heads_kv;
  const double DK = d->head_dim_k, DV = d->head_dim_v;
  const long rows = n * g;
  const int causal = d->causal != 0;
  const double lens_b = kv_lens ? 4.0 : 0.0;
  double dram_reads[CLATTN_MODEL_MAX_KERNELS] = {0};

  /* useful work: valid (query, key) pairs */
  double pairs = 0.0;
  for (long b = 0; b < B; b++) {
    const long L = kv_lens ? (long)imin(imax(kv_lens[b], 0), m) : m;
    for (long i = 0; i < n; i++)
      pairs += (double)imax(0, key_limit(causal, L, n, i));
  }
  pairs *= (double)d->heads_q;
  const double flops = 2.0 * pairs * (DK + DV);
  const double q_bytes = es * B * n * d->heads_q * DK;
  const double o_bytes = es * B * n * d->heads_q * DV;
  const double kv_bytes = es * B * m * hkv * (DK + DV);

  if (pl.variant == 1) {
    /* kv_stage: every key row read once, K^T and V written as float32
     * over the padded row length ld */
    clattn_cost *st = add_kernel(out, "kv_stage");
    st->bytes_read = kv_bytes;
    st->bytes_written = 4.0 * B * hkv * pl.ld * (DK + DV);
    st->bytes_compulsory = st->bytes_read + st->bytes_written;
    dram_reads[0] = st->bytes_read;
    st->bytes_dram = st->bytes_read + st->bytes_written;

    clattn_cost *c = add_kernel(out, "attn_fwd_reg");
    const int RB = pl.rb, KB = pl.kb;
    double rd = 0, wr = 0, fma = 0, qk = 0, ex = 0, staged_once = 0, ws = 0;
    const long blocks = (rows + RB - 1) / RB;
    for (long b = 0; b < B; b++) {
      const long L = kv_lens ? (long)imin(imax(kv_lens[b], 0), m) : m;
      double kmax = 0;
      for (long blk = 0; blk < blocks; blk++) {
        const long r0 = blk * RB;
        const long last = (long)imin(r0 + RB - 1, rows - 1);
        const double kend = (double)key_limit(causal, L, n, last / g);
        /* q: RB rows of DK (clamped rows are loaded too), kv_lens once */
        rd += lens_b + es * RB * DK;
        if (kend > 0) {
          const double T = cdiv(kend, KB);
          /* K^T tiles; V rows, once per row of the block */
          rd += 4.0 * T * DK * KB + 4.0 * kend * DV * RB;
          /* QK^T, PV, and per row and tile the running sum's update */
          const double qkt = T * DK * RB * KB;
          qk += qkt;
          fma += qkt + kend * DV * RB + T * RB;
          ex += T * RB * (1.0 + KB); /* alpha + KB probabilities */
          kmax = imax(kmax, kend);
        }
        wr += es * imin(RB, rows - r0) * DV;
      }
      staged_once += 4.0 * kmax * (DK + DV);
      ws = imax(ws, 4.0 * kmax * (DK + DV));
    }
    c->bytes_read = hkv * rd;
    c->bytes_written = hkv * wr;
    c->fma_issued = hkv * (fma + EXP2_FMAS * ex);
    c->fma_spilled = pl.spill * hkv * qk; /* QK^T's spilled accumulators */
    c->exp2_issued = hkv * ex;
    c->flops = flops;
    c->softmax_ops = C_SM * pairs;
    c->bytes_compulsory = q_bytes + hkv * staged_once + o_bytes;
    dram(c, c->bytes_compulsory - o_bytes, ws, prof);
    dram_reads[1] = c->bytes_dram - c->bytes_written;
  } else {
    clattn_cost *c = add_kernel(out, "attn_fwd_local");
    const int WG = pl.wg, KT = pl.kt;
    double rd = 0, wr = 0, fma = 0, ex = 0, loc = 0, ws = 0;
    const long groups = (rows + WG - 1) / WG;
    for (long b = 0; b < B; b++) {
      const long L = kv_lens ? (long)imin(imax(kv_lens[b], 0), m) : m;
      for (long grp = 0; grp < groups; grp++) {
        const long last = (long)imin(grp * WG + WG - 1, rows - 1);
        const double kend = (double)key_limit(causal, L, n, last / g);
        rd += WG * (lens_b + es * DK); /* every item: kv_lens, its q row */
        if (kend > 0) {
          const double T = cdiv(kend, KT);
          rd += es * kend * (DK + DV); /* tile loads, t < nt only */
          /* every item scores all KT keys of every tile and updates DV */
          fma += WG * T * (KT * (DK + DV) + 1.0);
          ex += WG * T * (1.0 + KT);
          /* local: tiles stored, then read by every item */
          loc += 4.0 * T * KT * (DK + DV) * (1.0 + WG);
          ws = imax(ws, es * kend * (DK + DV));
        }
        wr += es * imin(WG, rows - grp * WG) * DV;
      }
    }
    c->bytes_read = hkv * rd;
    c->bytes_written = hkv * wr;
    c->fma_issued = hkv * (fma + EXP2_FMAS * ex);
    c->exp2_issued = hkv * ex;
    c->local_bytes = hkv * loc;
    c->flops = flops;
    c->softmax_ops = C_SM * pairs;
    c->bytes_compulsory = q_bytes + kv_bytes + o_bytes;
    dram(c, q_bytes + kv_bytes, ws, prof);
    dram_reads[0] = c->bytes_dram - c->bytes_written;
  }
  finish(out, dram_reads, prof);
  return CLATTN_OK;
}

/* The checks every decode-side model call starts with (out is cleared). */
static clattn_status check_decode(const clattn_decode_desc *d,
                                  const clattn_profile *prof,
                                  clattn_prediction *out) {
  if (!check_profile(prof, out) || d == NULL)
    return CLATTN_ERR_INVALID_ARG;
  if (d->batch < 1 || d->capacity < 1)
    return fail(out, CLATTN_ERR_SHAPE, "%s",
                "batch and capacity must be >= 1");
  return check_heads(d->heads_q, d->heads_kv, d->head_dim_k, d->head_dim_v,
                     d->dtype, out);
}

clattn_status clattn_model_decode(const clattn_decode_desc *d,
                                  const int *lens,
                                  const clattn_profile *prof,
                                  clattn_prediction *out) {
  clattn_status rc;
  if ((rc = check_decode(d, prof, out)))
    return rc;
  const clattn__target tgt = clattn__target_of_profile(prof);
  clattn__decode_plan pl;
  if ((rc = clattn__plan_decode(&tgt, d, &pl, out->errmsg,
                                sizeof out->errmsg)))
    return rc;
  out->params = clattn__decode_resolved(&pl);
  const double es = (double)clattn_dtype_size(d->dtype);
  const long B = d->batch, hkv = d->heads_kv, hq = d->heads_q;
  const double G = (double)(hq / hkv);
  const double DK = d->head_dim_k, DV = d->head_dim_v;
  const int S = pl.splits, direct = S == 1;
  const int VWV = clattn__vec_width(d->head_dim_v);
  double dram_reads[CLATTN_MODEL_MAX_KERNELS] = {0};
  double rd = 0, wr = 0, fma = 0, ex = 0, loc = 0, keys_all = 0;
  /* per split work-group: what its loops issue */
  const double out_row = direct ? es * DV : 4.0 * (DV + 1.0);
  for (long b = 0; b < B; b++) {
    const long L = lens ? (long)imin(imax(lens[b], 0), d->capacity)
                        : d->capacity;
    keys_all += (double)L;
    for (int s = 0; s < S; s++) {
      const long tb = (long)s * pl.chunk;
      const double nk = imax(0, imin(L, tb + pl.chunk) - tb);
      if (pl.variant == 1) {
        const double T = cdiv(nk, pl.kb);
        /* lens, q, K (each row once, or once per 8 heads when 8 or more
         * heads are in lanes, where keys are scored in pairs and a lone
         * last key is paired with itself); V once for the first head and once
         * per P V pass of pvh heads after it (the last pass padded), or
         * once in all when the passes go by slices of the value dims (pvh
         * == G, all heads a pass; prefetches are not loads) */
        const double lone = pl.lanes ? fmod(nk, 2.0) : 0.0;
        const double k_loads = pl.lanes && G >= 8 ? G / 8.0 : 1.0;
        const int slices = pl.pvh >= G;
        const double passes = slices ? 0.0 : cdiv(G - 1.0, pl.pvh);
        const double pv_heads = slices ? G : 1.0 + passes * pl.pvh;
        rd += 4.0 + es * G * DK +
              es * (nk * (k_loads * DK + (1.0 + passes) * DV) +
                    lone * k_loads * DK);
        /* QK^T, PV (padded heads included), sum updates */
        fma += (nk + lone) * G * DK + nk * pv_heads * DV + T * G;
        /* alpha per block; each key's probability, over the block padded
         * to kb keys per head, or the valid keys only in lanes */
        ex += T * G + G * (pl.lanes ? nk : T * pl.kb);
      } else {
        const double KT = pl.kb, T = cdiv(nk, KT);
        /* every item reads lens; q, K and V once each (V staged in local
         * memory, then read by each query head) */
        rd += 4.0 * pl.wg + es * G * DK + es * nk * (DK + DV);
        fma += T * G * KT * DK + nk * G * DV + T * G;
        ex += T * G * (1.0 + KT);
        loc += 4.0 * (G * DK * (1.0 + T * KT) + T * KT * DK * (1.0 + G) +
                      T * G * KT * 3.0 + nk * G + nk * DV * (1.0 + G));
      }
      wr += G * out_row;
    }
  }
  clattn_cost *c =
      add_kernel(out, pl.variant == 1 ? "decode_split_reg"
                                      : "decode_split_local");
  c->bytes_read = hkv * rd;
  c->bytes_written = hkv * wr;
  c->fma_issued = hkv * (fma + EXP2_FMAS * ex);
  c->exp2_issued = hkv * ex;
  c->local_bytes = hkv * loc;
  c->flops = 2.0 * keys_all * hq * (DK + DV);
  c->softmax_ops = C_SM * keys_all * hq;
  const double kv = es * keys_all * hkv * (DK + DV);
  const double qb = es * B * hq * DK;
  c->bytes_compulsory = 4.0 * B + qb + kv + es * B * hq * DV;
  dram(c, 4.0 * B + qb + kv, es * pl.kb * (DK + DV), prof);
  dram_reads[0] = c->bytes_dram - c->bytes_written;
  if (!direct) {
    /* decode_combine: one item per (row, VWV-wide slice of DV) */
    clattn_cost *cb = add_kernel(out, "decode_combine");
    const double items = (double)(DV / VWV);
    double crd = 0, cfma = 0, cex = 0;
    for (long b = 0; b < B; b++) {
      const long L = lens ? (long)imin(imax(lens[b], 0), d->capacity)
                          : d->capacity;
      const double live = L > 0; /* all splits empty: lmax = -inf */
      /* lse read for the maximum, then again with each partial */
      crd += hq * items * (4.0 * S + live * 4.0 * S * (1.0 + VWV));
      cfma += hq * items * live * S * (VWV + EXP2_FMAS);
      cex += hq * items * live * S;
    }
    cb->bytes_read = crd;
    cb->bytes_written = es * B * hq * DV;
    cb->fma_issued = cfma;
    cb->exp2_issued = cex;
    cb->bytes_compulsory = 4.0 * B * hq * S * (DV + 1.0) + cb->bytes_written;
    dram(cb, 4.0 * B * hq * S * (DV + 1.0), 0.0, prof);
    dram_reads[1] = cb->bytes_dram - cb->bytes_written;
  }
  finish(out, dram_reads, prof);
  return CLATTN_OK;
}

clattn_status clattn_model_kv_append(const clattn_decode_desc *d, int n_new,
                                     const int *pos,
                                     const clattn_profile *prof,
                                     clattn_prediction *out) {
  clattn_status rc;
  if ((rc = check_decode(d, prof, out)))
    return rc;
  if (n_new < 1)
    return fail(out, CLATTN_ERR_SHAPE, "%s", "n_new must be >= 1");
  const double es = (double)clattn_dtype_size(d->dtype);
  const double row = es * (d->head_dim_k + d->head_dim_v);
  double rows = 0;
  for (long b = 0; b < d->batch; b++)
    for (int t = 0; t < n_new; t++) {
      const long p = (pos ? pos[b] : 0) + (long)t;
      rows += p >= 0 && p < d->capacity;
    }
  clattn_cost *c = add_kernel(out, "kv_append");
  const double items = (double)d->batch * n_new * d->heads_kv;
  c->bytes_read = 4.0 * items + d->heads_kv * rows * row;
  c->bytes_written = d->heads_kv * rows * row;
  c->bytes_compulsory = c->bytes_read + c->bytes_written;
  c->bytes_dram = c->bytes_compulsory;
  double dram_reads[CLATTN_MODEL_MAX_KERNELS] = {c->bytes_read};
  finish(out, dram_reads, prof);
  return CLATTN_OK;
}

/* An ideal GEMM (or the GEMV rows the layer uses for short inputs):
 * C[m,n] = A[m,k] B[k,n], each matrix moved once, 2mnk FLOPs. */
static void add_gemm(clattn_prediction *out, double *dram_reads,
                     const char *name, double m, double n, double k) {
  clattn_cost *c = add_kernel(out, name);
  if (c == NULL)
    return;
  c->launches = m <= CLATTN_LAYER_GEMV_ROWS ? (int)m + 1 : 1;
  c->flops = 2.0 * m * n * k;
  c->fma_issued = m * n * k;
  c->bytes_read = 4.0 * (m * k + k * n);
  c->bytes_written = 4.0 * m * n;
  c->bytes_compulsory = c->bytes_read + c->bytes_written;
  c->bytes_dram = c->bytes_compulsory;
  dram_reads[out->n_kernels - 1] = c->bytes_read;
}

/* Append the kernels of sub-prediction `sub` to `out`. */
static void merge(clattn_prediction *out, double *dram_reads,
                  const clattn_prediction *sub) {
  for (int i = 0; i < sub->n_kernels; i++) {
    if (out->n_kernels >= CLATTN_MODEL_MAX_KERNELS)
      return;
    const clattn_cost *c = &sub->kernel[i];
    dram_reads[out->n_kernels] = c->bytes_dram - c->bytes_written;
    out->kernel[out->n_kernels++] = *c;
  }
}

clattn_status clattn_model_layer(const clattn_layer_desc *d, int batch,
                                 int n, int cache_len, int causal,
                                 const clattn_profile *prof,
                                 clattn_prediction *out) {
  if (!check_profile(prof, out) || d == NULL)
    return CLATTN_ERR_INVALID_ARG;
  clattn_status rc;
  if (d->d_model < 1 || batch < 1 || n < 1 || cache_len < 0)
    return fail(out, CLATTN_ERR_SHAPE, "%s",
                "d_model, batch and n must be >= 1, cache_len >= 0");
  if ((rc = check_heads(d->heads_q, d->heads_kv, d->head_dim_k,
                        d->head_dim_v, CLATTN_F32, out)))
    return rc;
  double dram_reads[CLATTN_MODEL_MAX_KERNELS] = {0};
  const double rows = (double)batch * n, D = d->d_model;
  add_gemm(out, dram_reads, "gemm x*w_q", rows, d->heads_q * d->head_dim_k, D);
  add_gemm(out, dram_reads, "gemm x*w_k", rows, d->heads_kv * d->head_dim_k,
           D);
  add_gemm(out, dram_reads, "gemm x*w_v", rows, d->heads_kv * d->head_dim_v,
           D);
  clattn_prediction sub;
  const int m = cache_len + n;
  if (cache_len == 0 && n > 1) {
    const clattn_attn_desc ad = {batch, n, n, d->heads_q, d->heads_kv,
                                 d->head_dim_k, d->head_dim_v, CLATTN_F32,
                                 CLATTN_BSHD, CLATTN_BSHD, d->scale,
                                 causal != 0, NULL};
    rc = clattn_model_attention(&ad, NULL, prof, &sub);
  } else {
    const clattn_decode_desc dd = {batch, m, d->heads_q, d->heads_kv,
                                   d->head_dim_k, d->head_dim_v, CLATTN_F32,
                                   CLATTN_BHSD, d->scale, NULL};
    /* every sequence appends its n rows at cache_len < m: all are written,
     * as with pos = 0 (NULL) */
    rc = clattn_model_kv_append(&dd, n, NULL, prof, &sub);
    if (rc == CLATTN_OK) {
      merge(out, dram_reads, &sub);
      if (n == 1) {
        rc = clattn_model_decode(&dd, NULL, prof, &sub);
      } else {
        const clattn_attn_desc ad = {batch, n, m, d->heads_q, d->heads_kv,
                                     d->head_dim_k, d->head_dim_v,
                                     CLATTN_F32, CLATTN_BSHD, CLATTN_BHSD,
                                     d->scale, causal != 0, NULL};
        rc = clattn_model_attention(&ad, NULL, prof, &sub);
      }
    }
  }
  if (rc != CLATTN_OK) {
    snprintf(out->errmsg, sizeof out->errmsg, "%s", sub.errmsg);
    return rc;
  }
  merge(out, dram_reads, &sub);
  add_gemm(out, dram_reads, "gemm o*w_o", rows, D, d->heads_q * d->head_dim_v);
  finish(out, dram_reads, prof);
  return CLATTN_OK;
}

const char *clattn__probe_name(clattn__probe_kernel k) {
  static const char *const names[CLATTN__PROBE_KERNELS] = {
      "probe_read", "probe_copy", "probe_triad",
      "probe_fma",  "probe_local", "probe_empty"};
  return k >= 0 && k < CLATTN__PROBE_KERNELS ? names[k] : "";
}

void clattn__model_probe(clattn__probe_kernel k, int vw, double items,
                         clattn_cost *c) {
  const double vb = 4.0 * vw; /* bytes of one float vector */
  memset(c, 0, sizeof *c);
  snprintf(c->kernel, sizeof c->kernel, "%s", clattn__probe_name(k));
  c->launches = 1;
  switch (k) {
  case CLATTN__PROBE_READ: /* NREAD vectors in, one float out */
    c->bytes_read = items * CLATTN__PROBE_NREAD * vb;
    c->bytes_written = items * 4.0;
    break;
  case CLATTN__PROBE_COPY:
    c->bytes_read = c->bytes_written = items * vb;
    break;
  case CLATTN__PROBE_TRIAD: /* a = b + s * c */
    c->bytes_read = 2.0 * items * vb;
    c->bytes_written = items * vb;
    c->fma_issued = items * vw;
    break;
  case CLATTN__PROBE_FMA: /* the chains; one float out */
    c->fma_issued = items * CLATTN__PROBE_FMA_ITERS *
                    CLATTN__PROBE_FMA_CHAINS * (double)vw;
    c->bytes_written = items * 4.0;
    break;
  case CLATTN__PROBE_LOCAL: /* 4 * LOCAL_ITERS + 1 vector reads, 2 writes */
    c->local_bytes = items * (4.0 * CLATTN__PROBE_LOCAL_ITERS + 3.0) * vb;
    c->bytes_written = items * 4.0;
    break;
  default:
    break;
  }
  c->flops = 2.0 * c->fma_issued;
  c->bytes_compulsory = c->bytes_read + c->bytes_written;
  c->bytes_dram = c->bytes_compulsory;
}
