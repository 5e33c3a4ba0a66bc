/* bench_th.c - clattn-bench's talking-heads section (--only talking-heads).
 *
 * Talking-heads attention (spec 5) at b=1, h_k=h=h_v=H (8 and 16),
 * n=m=2048, d=64, f32, measured in one run against:
 *   (a) the fused MHA kernel at the same shape (clattn_attention): the
 *       time ratio and the FLOP-rate ratio, each side counting its own
 *       FLOPs, beside the model's overhead and predicted time ratio,
 *       with the automatic parameters and with each scheme forced;
 *   (b) an unfused pipeline that materialises J, L, W and U in global
 *       memory as the einsum model does (CLBlast batched GEMMs, this
 *       file's head-mix kernel, bench.c's softmax): speed-up, the largest
 *       output difference, and both paths against the device's roofline;
 *   (c) PyTorch on the CPU (peers/talking_heads_torch.py, x-transformers'
 *       formulation) with PoCL's thread count;
 *   (d) a decode step at m=8192 over cold caches against the MHA decode
 *       step and against PyTorch's.
 * Pairs are timed alternately round by round, and each ratio is the median
 * of the rounds' ratios, so that a shared machine's drift hits both. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_harness.h"

static const char th_cl[] =
    "/* The unfused path's head mix, a contraction over the head axis:\n"
    " * out[b][c][x] = sum_a in[b][a][x] p[a][c] over planes of `plane`\n"
    " * floats per head (x = query * m + key).  One work-item mixes 16\n"
    " * consecutive positions of every head, so each input vector is read\n"
    " * once from memory and the other output heads reuse it from cache. */\n"
    "__kernel void head_mix(__global const float *in,\n"
    "                       __global const float *p, __global float *out,\n"
    "                       int ha, int hc, int plane)\n"
    "{\n"
    "  size_t g = get_global_id(0);\n"
    "  size_t per = (size_t)plane / 16;\n"
    "  size_t bb = g / per, x = (g % per) * 16;\n"
    "  __global const float *src = in + bb * (size_t)ha * plane + x;\n"
    "  __global float *dst = out + bb * (size_t)hc * plane + x;\n"
    "  for (int c = 0; c < hc; c++) {\n"
    "    float16 acc = (float16)(0.0f);\n"
    "    for (int a = 0; a < ha; a++)\n"
    "      acc = mad(vload16(0, src + (size_t)a * plane),\n"
    "                (float16)(p[a * hc + c]), acc);\n"
    "    vstore16(acc, 0, dst + (size_t)c * plane);\n"
    "  }\n"
    "}\n";

typedef struct th_arg {
  clattn_th_desc d;
  clattn_attn_desc md; /* the MHA call at the same shape */
  cl_mem q, k, v, pl, pw, o, o_mha;
  /* unfused: J [b,h_k,n,m], L then W in place [b,h,n,m], U [b,h_v,n,m] */
  cl_mem j, l, u, o_unf;
  cl_kernel k_mix;
  double stage[5]; /* last unfused run: J, L, softmax, U, O */
} th_arg;

static int run_th(bench *B, void *p) {
  th_arg *a = p;
  clattn_status st = clattn_talking_heads(B->ctx, &a->d, a->q, a->k, a->v,
                                          a->pl, a->pw, NULL, a->o, NULL);
  return st == CLATTN_OK ? 0 : (int)st;
}

static int run_mha(bench *B, void *p) {
  th_arg *a = p;
  clattn_status st =
      clattn_attention(B->ctx, &a->md, a->q, a->k, a->v, NULL, a->o_mha, NULL);
  return st == CLATTN_OK ? 0 : (int)st;
}

/* One batched GEMM per contraction over (batch, head): C_i = alpha A_i B_i
 * with per-item offsets; A, B, C row-major. */
static void gemm_batched(bench *B, CLBlastTranspose tb, size_t m, size_t n,
                         size_t k, float alpha, cl_mem a, const size_t *aoff,
                         size_t lda, cl_mem b, const size_t *boff, size_t ldb,
                         cl_mem c, const size_t *coff, size_t ldc,
                         size_t count) {
  float *alphas = xmalloc(count * sizeof *alphas);
  float *betas = xmalloc(count * sizeof *betas);
  cl_command_queue q = B->queue;
  for (size_t i = 0; i < count; i++) {
    alphas[i] = alpha;
    betas[i] = 0.0f;
  }
  CKB(CLBlastSgemmBatched(CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, m, n,
                          k, alphas, a, aoff, lda, b, boff, ldb, betas, c, coff,
                          ldc, count, &q, NULL));
  free(alphas);
  free(betas);
}

static void mix(bench *B, th_arg *a, cl_mem in, cl_mem p, cl_mem out, cl_int ha,
                cl_int hc) {
  cl_int plane = a->d.n_q * a->d.n_kv;
  size_t gws = (size_t)a->d.batch * (size_t)plane / 16;
  CK(clSetKernelArg(a->k_mix, 0, sizeof(cl_mem), &in));
  CK(clSetKernelArg(a->k_mix, 1, sizeof(cl_mem), &p));
  CK(clSetKernelArg(a->k_mix, 2, sizeof(cl_mem), &out));
  CK(clSetKernelArg(a->k_mix, 3, sizeof ha, &ha));
  CK(clSetKernelArg(a->k_mix, 4, sizeof hc, &hc));
  CK(clSetKernelArg(a->k_mix, 5, sizeof plane, &plane));
  CK(clEnqueueNDRangeKernel(B->queue, a->k_mix, 1, NULL, &gws, NULL, 0, NULL,
                            NULL));
}

/* The einsum model, stage by stage (each finished so its time shows):
 *   J = scale Q K^T per key head (CLBlast), L = J P_l (head mix),
 *   W = softmax over keys of L, masked (in place), U = W P_w (head mix),
 *   O = U V per value head (CLBlast), all from and to the BSHD tensors. */
static int run_unfused(bench *B, void *p) {
  th_arg *a = p;
  const clattn_th_desc *d = &a->d;
  const size_t b = (size_t)d->batch, n = (size_t)d->n_q, m = (size_t)d->n_kv;
  const size_t hk = (size_t)d->heads_k, h = (size_t)d->heads;
  const size_t hv = (size_t)d->heads_v;
  const size_t dk = (size_t)d->head_dim_k, dv = (size_t)d->head_dim_v;
  const size_t cj = b * hk, co = b * hv, cnt = cj > co ? cj : co;
  size_t *o1 = xmalloc(cnt * sizeof *o1), *o2 = xmalloc(cnt * sizeof *o2);
  size_t *o3 = xmalloc(cnt * sizeof *o3);
  double t[6];

  t[0] = clattn__now();
  for (size_t bb = 0; bb < b; bb++)
    for (size_t x = 0; x < hk; x++) {
      o1[bb * hk + x] = (bb * n * hk + x) * dk;
      o2[bb * hk + x] = (bb * m * hk + x) * dk;
      o3[bb * hk + x] = (bb * hk + x) * n * m;
    }
  gemm_batched(B, CLBlastTransposeYes, n, m, dk, 1.0f / sqrtf((float)dk), a->q,
               o1, hk * dk, a->k, o2, hk * dk, a->j, o3, m, cj);
  CK(clFinish(B->queue));
  t[1] = clattn__now();
  mix(B, a, a->j, a->pl, a->l, (cl_int)hk, (cl_int)h);
  CK(clFinish(B->queue));
  t[2] = clattn__now();
  {
    cl_int ni = (cl_int)n, mi = (cl_int)m, causal = d->causal;
    float one = 1.0f; /* the scale went into J */
    size_t gws = b * h * n;
    CK(clSetKernelArg(B->k_softmax, 0, sizeof(cl_mem), &a->l));
    CK(clSetKernelArg(B->k_softmax, 1, sizeof ni, &ni));
    CK(clSetKernelArg(B->k_softmax, 2, sizeof mi, &mi));
    CK(clSetKernelArg(B->k_softmax, 3, sizeof one, &one));
    CK(clSetKernelArg(B->k_softmax, 4, sizeof causal, &causal));
    CK(clEnqueueNDRangeKernel(B->queue, B->k_softmax, 1, NULL, &gws, NULL, 0,
                              NULL, NULL));
  }
  CK(clFinish(B->queue));
  t[3] = clattn__now();
  mix(B, a, a->l, a->pw, a->u, (cl_int)h, (cl_int)hv);
  CK(clFinish(B->queue));
  t[4] = clattn__now();
  for (size_t bb = 0; bb < b; bb++)
    for (size_t x = 0; x < hv; x++) {
      o1[bb * hv + x] = (bb * hv + x) * n * m;
      o2[bb * hv + x] = (bb * m * hv + x) * dv;
      o3[bb * hv + x] = (bb * n * hv + x) * dv;
    }
  gemm_batched(B, CLBlastTransposeNo, n, dv, m, 1.0f, a->u, o1, m, a->v, o2,
               hv * dv, a->o_unf, o3, hv * dv, co);
  CK(clFinish(B->queue));
  t[5] = clattn__now();
  for (int i = 0; i < 5; i++)
    a->stage[i] = t[i + 1] - t[i];
  free(o1);
  free(o2);
  free(o3);
  return 0;
}

/* ------------------------------------------------------------ model */

/* The model's prediction for a family's call, the shape text written from
 * the keys the family reads (clattn_family_shape_keys) so that this
 * section follows the family's own names; keys absent from `kv` take the
 * family's defaults.  Nonzero (with the reason in why) when the family is
 * not registered or the model refuses the shape. */
typedef struct th_key {
  const char *key;
  const char *value;
} th_key;

static int th_model(const char *family, const th_key *kv, size_t nkv,
                    const clattn_params *params, const clattn_profile *prof,
                    clattn_prediction *out, char *why, size_t cap) {
  const char *keys = NULL;
  char shape[512] = "";
  size_t used = 0;
  int i;
  for (i = 0; i < clattn_family_count(); i++)
    if (strcmp(clattn_family_name(i), family) == 0)
      break;
  if (i == clattn_family_count()) {
    snprintf(why, cap, "family \"%s\" not registered", family);
    return 1;
  }
  keys = clattn_family_shape_keys(i);
  while (keys != NULL && *keys != '\0') {
    size_t len = strcspn(keys, " ");
    for (size_t k = 0; k < nkv; k++)
      if (strlen(kv[k].key) == len && strncmp(kv[k].key, keys, len) == 0 &&
          used < sizeof shape) {
        used += (size_t)snprintf(shape + used, sizeof shape - used, "%s=%s ",
                                 kv[k].key, kv[k].value);
        break;
      }
    keys += len;
    keys += strspn(keys, " ");
  }
  if (clattn_model_shape(family, shape, params, prof, out) != CLATTN_OK) {
    snprintf(why, cap, "%s", out->errmsg);
    return 1;
  }
  return 0;
}

#define TH_KEYS 11

static void th_keys(th_key *kv, char (*val)[16], int b, int n, int m, int hk,
                    int h, int hv, int dk, int dv, int causal,
                    const char *layout) {
  static const char *names[TH_KEYS] = {
      "batch",    "seq",        "kv-seq", "heads-k", "heads", "heads-v",
      "head-dim", "head-dim-v", "causal", "dtype",   "layout"};
  const int vals[TH_KEYS - 2] = {b, n, m, hk, h, hv, dk, dv, causal};
  for (int i = 0; i < TH_KEYS; i++) {
    kv[i].key = names[i];
    if (i < TH_KEYS - 2)
      snprintf(val[i], sizeof val[i], "%d", vals[i]);
    else
      snprintf(val[i], sizeof val[i], "%s", i == TH_KEYS - 2 ? "f32" : layout);
    kv[i].value = val[i];
  }
}

/* The roofline time of a call from its own bytes and FLOPs: the model's
 * convention (reads at the read bandwidth, writes at the copy bandwidth,
 * FLOPs at the FMA peak), with this run's ceilings. */
static double roof_s(bench *B, double rd, double wr, double flops) {
  double tm = rd / (B->read_gbs * 1e9) + wr / (B->copy_gbs * 1e9);
  double tc = flops / (B->fma_gflops * 1e9);
  return tm > tc ? tm : tc;
}

/* ------------------------------------------------------------- peer */

/* Run the PyTorch peer with `args`; its median seconds per call, or a
 * negative value with the reason printed. */
static double peer_seconds(const char *args) {
  static const char *const key[1] = {"seconds"};
  double s;
  return peer_numbers("talking_heads_torch.py", args, key, 1, &s) == 0 ? s
                                                                       : -1.0;
}

/* The model's predicted ratio beside a measured one, or why there is
 * none. */
static void print_prediction(double pred, double measured, const char *why) {
  if (pred > 0)
    printf("model's prediction %.2fx (measured/predicted %.2f)\n", pred,
           measured / pred);
  else
    printf("model's prediction n/a (%s)\n", why);
}

/* ---------------------------------------------------------- prefill */

/* Paired rounds of TH and MHA, one warm-up round first: per-round
 * ratios' median in *ratio, each side's median time in t_th, t_mha. */
static void time_pair(bench *B, th_arg *a, int rounds, double *t_th,
                      double *t_mha, double *ratio) {
  const bench_side sides[2] = {
      {"clattn_talking_heads", run_th, a, 1, 1, NULL, 0},
      {"clattn_attention", run_mha, a, 1, 1, NULL, 0}};
  bench_rounds R;
  rounds_init(B, &R, sides, 2, rounds, 0, 0);
  rounds_run(&R, -1, rounds + 1);
  *ratio = rounds_ratio(&R, 0, 1);
  *t_th = rounds_time(&R, 0);
  *t_mha = rounds_time(&R, 1);
  rounds_free(&R);
}

static void th_prefill_case(bench *B, cl_kernel k_mix, int H, int causal) {
  const int b = 1, n = B->quick ? 512 : 2048, m = n, dk = 64, dv = 64;
  const int hk = H, h = H, hv = H;
  const size_t eq = (size_t)b * n * hk * dk, ek = (size_t)b * m * hk * dk;
  const size_t ev = (size_t)b * m * hv * dv, eo = (size_t)b * n * hv * dv;
  const size_t plane = (size_t)n * m;
  const double A = causal ? (double)n * (n + 1) / 2.0 : (double)n * m;
  /* spec 5.3: each side counts its own FLOPs */
  const double f_th =
      2.0 * A *
      ((double)dk * hk + (double)h * hk + (double)h * hv + (double)dv * hv);
  const double f_mha = 2.0 * A * H * (double)(dk + dv);
  const double overhead =
      (double)h * (hk + hv) / ((double)dk * hk + (double)dv * hv);
  /* bytes (spec 5.3): fused ideal; unfused adds J, L, W, U once each way */
  const double rd = 4.0 * (eq + ek + ev) + 4.0 * ((double)hk * h + h * hv);
  const double wr = 4.0 * eo;
  const double mid = 4.0 * b * plane * (double)(hk + 2 * h + hv);
  const int rounds = B->reps < 7 ? 7 : B->reps;
  char tag[64], why[256], args[256];
  char val[TH_KEYS][16];
  th_key kv[TH_KEYS];
  clattn_prediction p_th = {.size = sizeof(clattn_prediction)},
                    p_mha = {.size = sizeof(clattn_prediction)};
  double t_th, t_mha, r_time, t_unf, speedup, pred = -1.0, st[5] = {0};
  th_arg a;

  snprintf(tag, sizeof tag, "H=%d %s", H, causal ? "causal" : "non-causal");
  memset(&a, 0, sizeof a);
  a.k_mix = k_mix;
  a.d = (clattn_th_desc){.size = sizeof a.d,
                         .batch = b,
                         .n_q = n,
                         .n_kv = m,
                         .heads_k = hk,
                         .heads = h,
                         .heads_v = hv,
                         .head_dim_k = dk,
                         .head_dim_v = dv,
                         .dtype = CLATTN_F32,
                         .q_layout = CLATTN_BSHD,
                         .kv_layout = CLATTN_BSHD,
                         .causal = causal};
  a.md = (clattn_attn_desc){.size = sizeof a.md,
                            .batch = b,
                            .n_q = n,
                            .n_kv = m,
                            .heads_q = H,
                            .heads_kv = H,
                            .head_dim_k = dk,
                            .head_dim_v = dv,
                            .dtype = CLATTN_F32,
                            .q_layout = CLATTN_BSHD,
                            .kv_layout = CLATTN_BSHD,
                            .causal = causal};
  a.q = buf_random(B, eq, 1.0f, 21);
  a.k = buf_random(B, ek, 1.0f, 22);
  a.v = buf_random(B, ev, 1.0f, 23);
  a.pl = buf_random(B, (size_t)hk * h, 1.0f / sqrtf((float)hk), 24);
  a.pw = buf_random(B, (size_t)h * hv, 1.0f / sqrtf((float)h), 25);
  a.o = buf_new(B, eo * sizeof(float));
  a.o_mha = buf_new(B, eo * sizeof(float));
  a.o_unf = buf_new(B, eo * sizeof(float));
  a.j = buf_new(B, (size_t)b * hk * plane * sizeof(float));
  a.l = buf_new(B, (size_t)b * h * plane * sizeof(float));
  a.u = buf_new(B, (size_t)b * hv * plane * sizeof(float));

  printf("\n  -- %s: b=%d h_k=h=h_v=%d n=m=%d d_k=d_v=%d f32 BSHD --\n", tag, b,
         H, n, dk);
  time_pair(B, &a, rounds, &t_th, &t_mha, &r_time);
  th_keys(kv, val, b, n, m, hk, h, hv, dk, dv, causal, "bshd");
  if (clattn_model_attention(&a.md, NULL, &B->prof, &p_mha) != CLATTN_OK)
    snprintf(why, sizeof why, "MHA: %.200s", p_mha.errmsg);
  else if (th_model("talking-heads", kv, TH_KEYS, NULL, &B->prof, &p_th, why,
                    sizeof why) == 0)
    pred = p_th.total.t_pred / p_mha.total.t_pred;
  printf("  (a) vs fused MHA (clattn_attention, heads_q = heads_kv = %d), %d "
         "paired rounds, ratios the medians of the rounds':\n",
         H, rounds);
  {
    clattn_choice ch = {.size = sizeof(clattn_choice)};
    if (run_th(B, &a) == 0 && clattn_ctx_last_choice(B->ctx, &ch) == CLATTN_OK)
      printf("      TH ran %s (%s)\n", ch.resolved,
             clattn_choice_source_str(ch.source));
  }
  printf("      time TH/MHA       %6.2fx  ", r_time);
  print_prediction(pred, r_time, why);
  printf("      FLOPs TH/MHA      %6.3fx  model's overhead h(h_k+h_v)/(d_k h_k"
         "+d_v h_v) = %.3f\n",
         f_th / f_mha, overhead);
  printf("      FLOP rate TH/MHA  %6.2fx  (target >= 0.7x): TH %.1f GFLOP/s "
         "(%.1f%% of FMA), MHA %.1f (%.1f%%)\n",
         (f_th / f_mha) / r_time, f_th / t_th * 1e-9,
         100.0 * f_th / t_th * 1e-9 / B->fma_gflops, f_mha / t_mha * 1e-9,
         100.0 * f_mha / t_mha * 1e-9 / B->fma_gflops);
  rec(B, "talking-heads", tag, "time_ratio_vs_mha", r_time);
  rec(B, "talking-heads", tag, "flop_rate_ratio_vs_mha",
      (f_th / f_mha) / r_time);
  rec(B, "talking-heads", tag, "model_time_ratio_vs_mha", pred);
  /* Each scheme forced (spec 5.3 options A and B: one pass with an
   * accumulator per (logit head, value head), or two passes; and scheme 3,
   * B with pass 1's logits kept in local memory), paired with MHA again,
   * beside the model's prediction for that scheme. */
  for (int sc = 1; sc <= 3; sc++) {
    clattn_params prm = {.size = sizeof(clattn_params)};
    double ts_th, ts_mha, rs, ps = -1.0;
    prm.scheme = sc;
    a.d.params = &prm;
    time_pair(B, &a, rounds, &ts_th, &ts_mha, &rs);
    if (th_model("talking-heads", kv, TH_KEYS, &prm, &B->prof, &p_th, why,
                 sizeof why) == 0 &&
        pred > 0)
      ps = p_th.total.t_pred / p_mha.total.t_pred;
    printf("      scheme %d forced: time TH/MHA %.2fx, FLOP rate TH/MHA "
           "%.2fx; model's prediction %.2fx\n",
           sc, rs, (f_th / f_mha) / rs, ps);
    snprintf(why, sizeof why, "time_ratio_vs_mha_scheme%d", sc);
    rec(B, "talking-heads", tag, why, rs);
  }
  a.d.params = NULL;

  /* (b) the unfused pipeline; its first call builds CLBlast's batched
   * kernels */
  {
    double t0 = clattn__now();
    run_unfused(B, &a);
    CK(clFinish(B->queue));
    printf("  (b) unfused einsum pipeline (its first call, CLBlast's builds "
           "included: %.1f s), %d runs,\n      each followed by a fused one; "
           "roof ms: the roofline time of the path's bytes and FLOPs\n",
           clattn__now() - t0, B->reps);
  }
  {
    /* each unfused run is followed by a fused one: the speed-up is the
     * median of the pairs' ratios */
    const bench_side sides[2] = {
        {"the unfused pipeline", run_unfused, &a, 1, 1, a.stage, 5},
        {"clattn_talking_heads", run_th, &a, 1, 1, NULL, 0}};
    bench_rounds R;
    rounds_init(B, &R, sides, 2, B->reps, 0, 0);
    rounds_run(&R, 0, B->reps);
    for (int j = 0; j < 5; j++)
      st[j] = rounds_stage(&R, 0, j);
    speedup = rounds_ratio(&R, 0, 1);
    t_th = rounds_time(&R, 1);
    t_unf = rounds_time(&R, 0);
    rounds_free(&R);
  }
  {
    const double r_f = roof_s(B, rd, wr, f_th);
    const double r_u = roof_s(B, rd + mid, wr + mid, f_th);
    printf("      %-8s %9s %9s %7s %8s %7s %9s %8s\n", "path", "GFLOP/s",
           "of FMA", "GB/s", "of read", "roof ms", "of roof", "vs unf");
    printf("      %-8s %9.1f %8.1f%% %7.2f %7.1f%% %7.2f %8.1f%% %7.2fx\n",
           "fused", f_th / t_th * 1e-9,
           100.0 * f_th / t_th * 1e-9 / B->fma_gflops, (rd + wr) / t_th * 1e-9,
           100.0 * (rd + wr) / t_th * 1e-9 / B->read_gbs, 1e3 * r_f,
           100.0 * r_f / t_th, speedup);
    printf("      %-8s %9.1f %8.1f%% %7.2f %7.1f%% %7.2f %8.1f%% %7.2fx\n",
           "unfused", f_th / t_unf * 1e-9,
           100.0 * f_th / t_unf * 1e-9 / B->fma_gflops,
           (rd + wr + 2 * mid) / t_unf * 1e-9,
           100.0 * (rd + wr + 2 * mid) / t_unf * 1e-9 / B->read_gbs, 1e3 * r_u,
           100.0 * r_u / t_unf, 1.0);
    printf("      fused/unfused speed-up %.2fx (target >= 5x); max |O_fused - "
           "O_unfused| = %.3g\n",
           speedup, max_abs_diff(B, a.o, a.o_unf, eo));
    printf("      unfused stages, ms: J=QK^T %.1f, L=JP_l %.1f, softmax %.1f, "
           "U=WP_w %.1f, O=UV %.1f\n",
           1e3 * st[0], 1e3 * st[1], 1e3 * st[2], 1e3 * st[3], 1e3 * st[4]);
    rec(B, "talking-heads", tag, "speedup_vs_unfused", speedup);
    rec(B, "talking-heads", tag, "fused_fraction_of_roof", r_f / t_th);
    rec(B, "talking-heads", tag, "unfused_fraction_of_roof", r_u / t_unf);
  }

  /* (c) the peer */
  snprintf(args, sizeof args,
           "--batch %d --seq %d --kv-seq %d --heads-k %d --heads %d "
           "--heads-v %d --head-dim %d --causal %d --reps %d",
           b, n, m, hk, h, hv, dk, causal, B->reps);
  printf("  (c) peer, PyTorch CPU (%d threads), x-transformers' einsum "
         "formulation:\n",
         PEER_THREADS);
  {
    double tp = peer_seconds(args);
    double t_th3 = time_median(B, run_th, &a, 0, B->reps);
    if (tp > 0) {
      printf("      torch/clattn time %.2fx (clattn's fused TH timed right "
             "after it; torch %.1f GFLOP/s,\n      %.1f%% of FMA, clattn "
             "%.1f)\n",
             tp / t_th3, f_th / tp * 1e-9,
             100.0 * f_th / tp * 1e-9 / B->fma_gflops, f_th / t_th3 * 1e-9);
      rec(B, "talking-heads", tag, "speedup_vs_torch", tp / t_th3);
    }
  }
  rel(&a.q);
  rel(&a.k);
  rel(&a.v);
  rel(&a.pl);
  rel(&a.pw);
  rel(&a.o);
  rel(&a.o_mha);
  rel(&a.o_unf);
  rel(&a.j);
  rel(&a.l);
  rel(&a.u);
}

/* ----------------------------------------------------------- decode */

typedef struct th_dec_arg {
  clattn_th_decode_desc d;
  clattn_decode_desc md;
  kv_rotation kv; /* shared by both: h_k = h_v = H, BHSD */
  cl_mem q, pl, pw, lens, o, o_mha;
} th_dec_arg;

/* One TH step, and one MHA step, on one layer's caches. */
static int th_decode_step(bench *B, void *p, cl_mem k, cl_mem v) {
  th_dec_arg *a = p;
  return (int)clattn_talking_heads_decode(B->ctx, &a->d, a->q, k, v, a->pl,
                                          a->pw, a->lens, a->o, NULL);
}

static int mha_decode_step(bench *B, void *p, cl_mem k, cl_mem v) {
  th_dec_arg *a = p;
  return (int)clattn_decode(B->ctx, &a->md, a->q, k, v, a->lens, a->o_mha,
                            NULL);
}

static void th_decode(bench *B) {
  const int b = 1, m = B->quick ? 2048 : 8192, H = 8, d = 64;
  const size_t cache_b = (size_t)b * H * m * d * sizeof(float);
  const size_t step_bytes = 2 * cache_b;
  const size_t target = cold_bytes(B);
  const int rounds = B->reps < 15 ? 15 : B->reps;
  const size_t copy_b = (size_t)(B->quick ? 64 : 128) << 20;
  double r_time, of_copy, t_th, t_mha, pred = -1.0;
  clattn_profile prof = B->prof;
  clattn_prediction p_th = {.size = sizeof(clattn_prediction)},
                    p_mha = {.size = sizeof(clattn_prediction)};
  char why[256], args[256], val[TH_KEYS][16];
  th_key kv[TH_KEYS];
  cl_int len = m;
  th_dec_arg a;
  kv_pass pass[2];
  bench_side sides[2];
  bench_rounds R;

  memset(&a, 0, sizeof a);
  a.d = (clattn_th_decode_desc){.size = sizeof a.d,
                                .batch = b,
                                .capacity = m,
                                .heads_k = H,
                                .heads = H,
                                .heads_v = H,
                                .head_dim_k = d,
                                .head_dim_v = d,
                                .dtype = CLATTN_F32,
                                .cache_layout = CLATTN_BHSD};
  a.md = (clattn_decode_desc){.size = sizeof a.md,
                              .batch = b,
                              .capacity = m,
                              .heads_q = H,
                              .heads_kv = H,
                              .head_dim_k = d,
                              .head_dim_v = d,
                              .dtype = CLATTN_F32,
                              .cache_layout = CLATTN_BHSD};
  kv_rotation_create(B, cache_b, &a.kv);
  a.q = buf_random(B, (size_t)b * H * d, 1.0f, 31);
  a.pl = buf_random(B, (size_t)H * H, 1.0f / sqrtf((float)H), 32);
  a.pw = buf_random(B, (size_t)H * H, 1.0f / sqrtf((float)H), 33);
  a.o = buf_new(B, (size_t)b * H * d * sizeof(float));
  a.o_mha = buf_new(B, (size_t)b * H * d * sizeof(float));
  a.lens = buf_new(B, (size_t)b * sizeof(cl_int));
  CK(clEnqueueFillBuffer(B->queue, a.lens, &len, sizeof len, 0,
                         (size_t)b * sizeof len, 0, NULL, NULL));
  pass[0] = (kv_pass){&a.kv, th_decode_step, &a};
  pass[1] = (kv_pass){&a.kv, mha_decode_step, &a};
  sides[0] = (bench_side){"clattn_talking_heads_decode",
                          kv_pass_run,
                          &pass[0],
                          1,
                          a.kv.count,
                          NULL,
                          0};
  sides[1] = (bench_side){"clattn_decode", kv_pass_run, &pass[1], 1,
                          a.kv.count,      NULL,        0};

  printf("\n  -- (d) decode: b=%d h_k=h=h_v=%d m=%d d=%d f32, BHSD caches, "
         "COLD: %d per-\"layer\" caches (%zu MiB) in turn --\n",
         b, H, m, d, a.kv.count, (step_bytes * a.kv.count) >> 20);
  rounds_init(B, &R, sides, 2, rounds, 0, copy_b);
  rounds_run(&R, -1, rounds + 1);
  r_time = rounds_ratio(&R, 0, 1);
  of_copy = rounds_of_copy(&R, 0, (double)step_bytes);
  t_th = rounds_time(&R, 0);
  t_mha = rounds_time(&R, 1);
  /* the model at the last round's copy bandwidth */
  clattn_profile_at_copy(&prof, R.gbs[rounds - 1]);
  rounds_free(&R);
  th_keys(kv, val, b, 1, m, H, H, H, d, d, 0, "bhsd");
  if (clattn_model_decode(&a.md, NULL, &prof, &p_mha) != CLATTN_OK)
    snprintf(why, sizeof why, "MHA: %.200s", p_mha.errmsg);
  else if (th_model("talking-heads-decode", kv, TH_KEYS, NULL, &prof, &p_th,
                    why, sizeof why) == 0)
    pred = p_th.total.t_pred / p_mha.total.t_pred;
  printf("      %d paired rounds, each a copy of %zu MiB, a TH pass and an "
         "MHA pass (ratios: medians of the rounds')\n",
         rounds, copy_b >> 20);
  printf("      step TH/MHA       %6.2fx  (target <= 1.3x); ", r_time);
  print_prediction(pred, r_time, why);
  printf("      TH step reads K/V at %.1f%% of the round's copy bandwidth "
         "(%.1f us/step TH, %.1f MHA; %.2f MiB/step)\n",
         100.0 * of_copy, 1e6 * t_th, 1e6 * t_mha, step_bytes / 1048576.0);
  rec(B, "talking-heads", "decode", "time_ratio_vs_mha", r_time);
  rec(B, "talking-heads", "decode", "model_time_ratio_vs_mha", pred);
  rec(B, "talking-heads", "decode", "fraction_of_copy", of_copy);

  snprintf(args, sizeof args,
           "--decode --batch %d --kv-seq %d --heads-k %d --heads %d "
           "--heads-v %d --head-dim %d --cold-mib %zu --reps %d",
           b, m, H, H, H, d, target >> 20, rounds);
  {
    double tp = peer_seconds(args);
    if (tp > 0) {
      /* clattn's TH step again right after the peer's process, so that
       * both sides see the machine of the same minute */
      rounds_init(B, &R, sides, 1, rounds, 0, 0);
      rounds_run(&R, 0, rounds);
      t_th = rounds_time(&R, 0);
      rounds_free(&R);
      printf("      torch/clattn step time %.2fx (torch's TH step, cold, "
             "the same rotation; clattn's timed\n      right after it)\n",
             tp / t_th);
      rec(B, "talking-heads", "decode", "speedup_vs_torch", tp / t_th);
    }
  }
  kv_rotation_destroy(&a.kv);
  rel(&a.q);
  rel(&a.pl);
  rel(&a.pw);
  rel(&a.o);
  rel(&a.o_mha);
  rel(&a.lens);
}

void bench_talking_heads(bench *B) {
  cl_program prog = bench_program(B, th_cl, "talking-heads bench kernels");
  cl_int err = CL_SUCCESS;
  cl_kernel k_mix = clCreateKernel(prog, "head_mix", &err);
  CK(err);
  printf("== talking-heads (spec 5): fused vs fused MHA, an unfused einsum "
         "pipeline, PyTorch ==\n");
  printf("  FLOPs: TH 2A(d_k h_k + h h_k + h h_v + d_v h_v), MHA 2AH(d_k+d_v)"
         " (A = n*m, causal n(n+1)/2).\n  Roofline: bytes of spec 5.3 (fused "
         "ideal; unfused adds J, L, W, U written and read once),\n  reads "
         "at the read and writes at the copy bandwidth, FLOPs at the FMA "
         "peak, all of this run.\n");
  th_prefill_case(B, k_mix, 8, 0);
  th_prefill_case(B, k_mix, 8, 1);
  th_prefill_case(B, k_mix, 16, 0);
  th_decode(B);
  printf("\n");
  clReleaseKernel(k_mix);
  clReleaseProgram(prog);
}
