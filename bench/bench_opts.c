/* bench_opts.c - clattn-bench's attention-options section (--only options,
 * issue 35): each option against the same call without it, in one run.
 *   (a) prefill b=1 h=8 d=64 n=m=4096 causal, window W=512 against no
 *       window: the FLOP rate counting the visible (query, key) pairs only
 *       (4 d per pair), windowed over plain;
 *   (b) prefill at n=m=2048: soft-cap (C=50), ALiBi and sinks, each time
 *       over the plain call's;
 *   (c) decode b=1 h=32 h_kv=8 d=128 over cold caches of 8192 positions:
 *       the step with W=1024 over the full step;
 *   (d) prefill at n=m=1024 causal: the FLOP rate at head dim 512 over
 *       that at head dim 128;
 *   (e) beside (a): PyTorch's CPU scaled_dot_product_attention, causal,
 *       with an explicit boolean causal mask and with an explicit boolean
 *       sliding-window mask (peers/options_torch.py).
 * The sides of a comparison are timed alternately round by round (the
 * order reversed every other round), each ratio the median of the rounds'
 * ratios, with the model's prediction (clattn_model_attention /
 * clattn_model_decode on this run's probed profile) beside each time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_harness.h"

/* ------------------------------------------------------------ prefill */

typedef struct opt_prefill {
  const char *name;
  clattn_attn_desc d;
  cl_mem q, k, v, o; /* shared by the sides of a comparison */
  double pairs;      /* visible (query, key) pairs of the call */
  double flops;      /* 2 (d_k + d_v) per visible pair */
  clattn_prediction pred;
  int pred_ok;
  /* the last call's host time (until clattn_attention returned), its
   * attention kernel's device time (its last kernel's profiled event) and
   * that kernel's wait from its enqueue to its start (the K/V staging
   * kernel before it, and the launch's own delay); med: their medians
   * over a comparison's rounds */
  double stage[3], med[3];
} opt_prefill;

enum { STAGE_HOST, STAGE_KERNEL, STAGE_WAIT, STAGES };

/* One call, its host and kernel times kept (a call's other kernels, the
 * K/V staging, are the rest of its time). */
static int run_prefill(bench *B, void *p) {
  opt_prefill *a = p;
  cl_event e = NULL;
  cl_ulong tq = 0, t0 = 0, t1 = 0;
  clattn_events ev = {.size = sizeof ev, .out = &e};
  const double h0 = clattn__now();
  clattn_status st =
      clattn_attention(B->ctx, &a->d, a->q, a->k, a->v, NULL, a->o, &ev);
  a->stage[STAGE_HOST] = clattn__now() - h0;
  a->stage[STAGE_KERNEL] = a->stage[STAGE_WAIT] = NAN;
  if (st != CLATTN_OK)
    return (int)st;
  if (e == NULL)
    return 0;
  CK(clWaitForEvents(1, &e));
  if (clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_QUEUED, sizeof tq, &tq,
                              NULL) == CL_SUCCESS &&
      clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof t0, &t0,
                              NULL) == CL_SUCCESS &&
      clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t1, &t1,
                              NULL) == CL_SUCCESS &&
      t1 >= t0 && t0 >= tq) {
    a->stage[STAGE_KERNEL] = (double)(t1 - t0) * 1e-9;
    a->stage[STAGE_WAIT] = (double)(t0 - tq) * 1e-9;
  }
  clReleaseEvent(e);
  return 0;
}

/* A side of a comparison: one call per batch, its stages kept. */
static bench_side prefill_side(opt_prefill *a) {
  return (bench_side){"clattn_attention", run_prefill, a, 1, 1,
                      a->stage,           STAGES};
}

static clattn_attn_desc prefill_desc(int b, int n, int h, int d, int causal) {
  return (clattn_attn_desc){.size = sizeof(clattn_attn_desc),
                            .batch = b,
                            .n_q = n,
                            .n_kv = n,
                            .heads_q = h,
                            .heads_kv = h,
                            .head_dim_k = d,
                            .head_dim_v = d,
                            .dtype = CLATTN_F32,
                            .q_layout = CLATTN_BSHD,
                            .kv_layout = CLATTN_BSHD,
                            .causal = causal};
}

/* Visible (query, key) pairs of one head of a prefill of n queries over n
 * keys: query i sees keys max(0, i - W + 1) .. i when causal, and
 * max(0, i - W + 1) .. n - 1 otherwise (W 0: no window). */
static double visible_pairs(int n, int causal, int window) {
  double s = 0.0;
  for (long i = 0; i < n; i++) {
    const long hi = causal ? i + 1 : n;
    const long lo = window > 0 && i - window + 1 > 0 ? i - window + 1 : 0;
    s += (double)(hi - lo);
  }
  return s;
}

/* Fills in the side's pair and FLOP counts and the model's prediction. */
static void prefill_count(bench *B, opt_prefill *a) {
  const clattn_attn_desc *d = &a->d;
  a->pairs = (double)d->batch * d->heads_q *
             visible_pairs(d->n_q, d->causal, d->window);
  a->flops = 2.0 * a->pairs * (d->head_dim_k + d->head_dim_v);
  memset(&a->pred, 0, sizeof a->pred);
  a->pred.size = sizeof a->pred;
  a->pred_ok = clattn_model_attention(d, NULL, &B->prof, &a->pred) == CLATTN_OK;
}

static void prefill_alloc(bench *B, opt_prefill *a, unsigned seed) {
  const clattn_attn_desc *d = &a->d;
  const size_t rows = (size_t)d->batch * d->n_q * d->heads_q;
  a->q = buf_random(B, rows * d->head_dim_k, 1.0f, seed);
  a->k = buf_random(B, rows * d->head_dim_k, 1.0f, seed + 1);
  a->v = buf_random(B, rows * d->head_dim_v, 1.0f, seed + 2);
  a->o = buf_new(B, rows * d->head_dim_v * sizeof(float));
}

static void prefill_release(opt_prefill *a) {
  rel(&a->q);
  rel(&a->k);
  rel(&a->v);
  rel(&a->o);
}

/* The sides' medians over `rounds` rounds (one warm-up round first):
 * t[i] the side's time, ratio[i] the rounds' time ratios side i / side 0,
 * and each side's stages (its med). */
static void time_sides(bench *B, opt_prefill *const *a, int nsides, int rounds,
                       double *t, double *ratio) {
  bench_side *sides = xmalloc((size_t)nsides * sizeof *sides);
  bench_rounds R;
  for (int i = 0; i < nsides; i++)
    sides[i] = prefill_side(a[i]);
  rounds_init(B, &R, sides, nsides, rounds, 1, 0);
  rounds_run(&R, -1, rounds + 1);
  for (int i = 0; i < nsides; i++) {
    t[i] = rounds_time(&R, i);
    ratio[i] = rounds_ratio(&R, i, 0);
    for (int j = 0; j < STAGES; j++)
      a[i]->med[j] = rounds_stage(&R, i, j);
  }
  rounds_free(&R);
  free(sides);
}

static const char *bound_str(clattn_bound b) {
  return b == CLATTN_BOUND_MEMORY    ? "memory"
         : b == CLATTN_BOUND_COMPUTE ? "compute"
                                     : "launch";
}

/* The model's kernels of a prediction, one line each: where it says the
 * time goes. */
static void print_model_kernels(const char *name, const clattn_prediction *p) {
  printf("      model, %s (%s):", name, p->params);
  for (int i = 0; i < p->n_kernels; i++) {
    const clattn_cost *c = &p->kernel[i];
    printf("%s %s %.2f ms (%s; %.3g FMA issued, %.3g spilled, %.1f MiB "
           "read, %.1f MiB DRAM)",
           i ? ";" : "", c->kernel, 1e3 * c->t_pred, bound_str(c->bound),
           c->fma_issued, c->fma_spilled, c->bytes_read / 1048576.0,
           c->bytes_dram / 1048576.0);
  }
  printf("\n");
}

/* Which parameters the side's call ran with. */
static void print_choice(bench *B, opt_prefill *a) {
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  if (run_prefill(B, a) == 0 &&
      clattn_ctx_last_choice(B->ctx, &ch) == CLATTN_OK)
    printf("      %-10s ran %s (%s)\n", a->name, ch.resolved,
           clattn_choice_source_str(ch.source));
}

/* A table of prefill sides: time, its stages, model time, visible
 * GFLOP/s and its share of the FMA peak, the model's useful FLOPs against
 * the count. */
static void print_prefill_table(bench *B, opt_prefill *const *a, int n,
                                const double *t) {
  printf("      %-10s %9s %8s %9s %8s %9s %8s %11s %8s %11s\n", "side", "ms",
         "host ms", "kernel ms", "wait ms", "model ms", "meas/mod",
         "GFLOP/s vis", "of FMA", "model flops");
  for (int i = 0; i < n; i++) {
    const double gf = a[i]->flops / t[i] * 1e-9;
    const double *st = a[i]->med;
    printf("      %-10s %9.2f %8.2f %9.2f %8.2f", a[i]->name, 1e3 * t[i],
           1e3 * st[STAGE_HOST], 1e3 * st[STAGE_KERNEL], 1e3 * st[STAGE_WAIT]);
    if (a[i]->pred_ok)
      printf(" %9.2f %8.2f %11.1f %7.1f%% %10.4fx\n",
             1e3 * a[i]->pred.total.t_pred, t[i] / a[i]->pred.total.t_pred, gf,
             100.0 * gf / B->fma_gflops, a[i]->pred.total.flops / a[i]->flops);
    else
      printf(" %9s %8s %11.1f %7.1f%%  (model: %s)\n", "n/a", "", gf,
             100.0 * gf / B->fma_gflops, a[i]->pred.errmsg);
  }
  printf("      (host ms: until the call returned; kernel ms: the attention "
         "kernel's device time; wait ms: from\n      its enqueue to its start, "
         "the K/V staging kernel before it included; medians of the "
         "rounds)\n");
}

static void record_prefill(bench *B, const char *tag, const opt_prefill *a,
                           double t) {
  char name[96];
  snprintf(name, sizeof name, "%s %s", tag, a->name);
  rec(B, "options", name, "ms", 1e3 * t);
  rec(B, "options", name, "gflops_visible", a->flops / t * 1e-9);
  if (a->pred_ok)
    rec(B, "options", name, "model_ms", 1e3 * a->pred.total.t_pred);
}

/* The model's predicted ratio of side i's time over side 0's, or -1. */
static double model_ratio(opt_prefill *const *a, int i) {
  return a[i]->pred_ok && a[0]->pred_ok
             ? a[i]->pred.total.t_pred / a[0]->pred.total.t_pred
             : -1.0;
}

static const char *verdict(int met) { return met ? "met" : "MISSED"; }

/* --------------------------------------------------------------- (e) */

/* PyTorch's SDPA at (a)'s shape, beside clattn's medians of (a). */
static void window_peer(bench *B, const opt_prefill *plain,
                        const opt_prefill *win, double t_plain, double t_win) {
  static const char *const keys[4] = {"causal_seconds", "causal_mask_seconds",
                                      "window_mask_seconds", "window_max_diff"};
  static const char *const what[3] = {"is_causal=True",
                                      "explicit bool causal mask",
                                      "explicit bool sliding-window mask"};
  const clattn_attn_desc *d = &win->d;
  const double ours[3] = {t_plain, t_plain, t_win};
  const double flops[3] = {plain->flops, plain->flops, win->flops};
  double s[4];
  char args[256];
  snprintf(args, sizeof args,
           "--batch %d --seq %d --heads %d --head-dim %d --window %d "
           "--reps %d",
           d->batch, d->n_q, d->heads_q, d->head_dim_k, d->window,
           B->reps < 5 ? 5 : B->reps);
  printf("  (e) PyTorch CPU scaled_dot_product_attention (%d threads) at "
         "(a)'s shape:\n",
         PEER_THREADS);
  if (peer_numbers("options_torch.py", args, keys, 4, s) != 0) {
    printf("  (e) skipped: torch unavailable\n");
    rec(B, "options", "torch sdpa", "skipped", 1.0);
    return;
  }
  printf("      %-34s %9s %11s %14s\n", "torch", "ms", "GFLOP/s vis",
         "torch/clattn");
  for (int i = 0; i < 3; i++) {
    if (s[i] <= 0) {
      printf("      %-34s (no figure)\n", what[i]);
      continue;
    }
    printf("      %-34s %9.2f %11.1f %13.2fx\n", what[i], 1e3 * s[i],
           flops[i] / s[i] * 1e-9, s[i] / ours[i]);
    rec(B, "options", what[i], "torch_ms", 1e3 * s[i]);
    rec(B, "options", what[i], "torch_over_clattn", s[i] / ours[i]);
  }
  if (s[0] > 0 && s[2] > 0)
    printf("      torch's own FLOP rate windowed/plain (is_causal): %.2fx; "
           "torch/clattn: against (a)'s medians\n",
           (win->flops / plain->flops) / (s[2] / s[0]));
  printf("      torch's windowed output against its dense masked softmax "
         "(head 0): max |diff| %.3g\n",
         s[3]);
}

/* --------------------------------------------------------------- (a) */

static void opts_window_prefill(bench *B, int rounds) {
  const int n = B->quick ? 1024 : 4096, h = 8, d = 64, W = 512;
  opt_prefill plain = {.name = "plain"}, win = {.name = "W=512"};
  opt_prefill *side[2] = {&plain, &win};
  double t[2], r[2], rate, pred;

  plain.d = prefill_desc(1, n, h, d, 1);
  prefill_alloc(B, &plain, 41);
  win = plain;
  win.name = "W=512";
  win.d.window = W;
  prefill_count(B, &plain);
  prefill_count(B, &win);
  printf("\n  -- (a) window: prefill b=1 h=%d d=%d n=m=%d causal, W=%d "
         "against none, %d paired rounds --\n",
         h, d, n, W, rounds);
  time_sides(B, side, 2, rounds, t, r);
  print_choice(B, &plain);
  print_choice(B, &win);
  print_prefill_table(B, side, 2, t);
  /* the rate ratio: visible pairs over time, windowed over plain */
  rate = (win.flops / plain.flops) / r[1];
  pred = model_ratio(side, 1);
  printf("      visible pairs W/plain %.4f; time W/plain %.3fx (model "
         "%.3fx)\n",
         win.flops / plain.flops, r[1], pred);
  printf("      FLOP rate (visible pairs) W/plain %.2fx (target >= 0.8x: "
         "%s); model's %.2fx\n",
         rate, verdict(rate >= 0.8),
         pred > 0 ? win.flops / plain.flops / pred : -1.0);
  printf("      the attention kernel alone: FLOP rate W/plain %.2fx; the rest "
         "of the call (the host, K/V staged) %.2f ms plain, %.2f ms W\n",
         (win.flops / plain.flops) /
             (side[1]->med[STAGE_KERNEL] / side[0]->med[STAGE_KERNEL]),
         1e3 * (t[0] - plain.med[STAGE_KERNEL]),
         1e3 * (t[1] - win.med[STAGE_KERNEL]));
  for (int i = 0; i < 2; i++)
    if (side[i]->pred_ok)
      print_model_kernels(side[i]->name, &side[i]->pred);
  record_prefill(B, "(a)", &plain, t[0]);
  record_prefill(B, "(a)", &win, t[1]);
  rec(B, "options", "(a) window", "flop_rate_ratio", rate);
  rec(B, "options", "(a) window", "time_ratio", r[1]);
  rec(B, "options", "(a) window", "model_time_ratio", pred);
  rec(B, "options", "(a) window", "kernel_flop_rate_ratio",
      (win.flops / plain.flops) /
          (win.med[STAGE_KERNEL] / plain.med[STAGE_KERNEL]));

  window_peer(B, &plain, &win, t[0], t[1]);
  prefill_release(&plain);
}

/* --------------------------------------------------------------- (b) */

static void opts_logit_prefill(bench *B, int rounds) {
  enum { NS = 4 };
  const int n = B->quick ? 512 : 2048, h = 8, d = 64;
  static const char *const names[NS] = {"plain", "softcap=50", "ALiBi",
                                        "sinks"};
  static const double target[NS] = {1.0, 1.25, 1.1, 1.1};
  float *slopes = xmalloc((size_t)h * sizeof *slopes);
  float *sinks = xmalloc((size_t)h * sizeof *sinks);
  opt_prefill a[NS];
  opt_prefill *side[NS];
  double t[NS], r[NS];

  /* BLOOM's slopes 2^(-8 (i + 1) / h); GPT-OSS-like sinks of a few
   * units, different per head */
  for (int i = 0; i < h; i++) {
    slopes[i] = powf(2.0f, -8.0f * (float)(i + 1) / (float)h);
    sinks[i] = 0.5f * (float)(i % 5) - 1.0f;
  }
  memset(a, 0, sizeof a);
  a[0].d = prefill_desc(1, n, h, d, 1);
  prefill_alloc(B, &a[0], 51);
  for (int i = 0; i < NS; i++) {
    if (i > 0)
      a[i] = a[0];
    a[i].name = names[i];
    side[i] = &a[i];
  }
  a[1].d.softcap = 50.0f;
  a[2].d.alibi_slopes = slopes;
  a[3].d.sinks = sinks;
  for (int i = 0; i < NS; i++)
    prefill_count(B, &a[i]);
  printf("\n  -- (b) soft-cap, ALiBi, sinks: prefill b=1 h=%d d=%d n=m=%d "
         "causal, each against none, %d rounds --\n",
         h, d, n, rounds);
  time_sides(B, side, NS, rounds, t, r);
  for (int i = 0; i < NS; i++)
    print_choice(B, &a[i]);
  print_prefill_table(B, side, NS, t);
  for (int i = 1; i < NS; i++) {
    const double pred = model_ratio(side, i);
    char tag[64];
    printf("      time %-10s / plain %.3fx (target <= %.2fx: %s); model "
           "%.3fx; the attention kernel alone %.3fx\n",
           names[i], r[i], target[i], verdict(r[i] <= target[i]), pred,
           a[i].med[STAGE_KERNEL] / a[0].med[STAGE_KERNEL]);
    snprintf(tag, sizeof tag, "(b) %s", names[i]);
    rec(B, "options", tag, "time_ratio", r[i]);
    rec(B, "options", tag, "model_time_ratio", pred);
    rec(B, "options", tag, "kernel_time_ratio",
        a[i].med[STAGE_KERNEL] / a[0].med[STAGE_KERNEL]);
  }
  for (int i = 0; i < NS; i++) {
    if (a[i].pred_ok)
      print_model_kernels(names[i], &a[i].pred);
    record_prefill(B, "(b)", &a[i], t[i]);
  }
  prefill_release(&a[0]);
  free(slopes);
  free(sinks);
}

/* --------------------------------------------------------------- (d) */

static void opts_head_dim(bench *B, int rounds) {
  const int n = B->quick ? 256 : 1024, h = 8;
  opt_prefill d128 = {.name = "d=128"}, d512 = {.name = "d=512"};
  opt_prefill *side[2] = {&d128, &d512};
  double t[2], r[2], rate, pred;

  d128.d = prefill_desc(1, n, h, 128, 1);
  d512.d = prefill_desc(1, n, h, 512, 1);
  prefill_alloc(B, &d128, 61);
  prefill_alloc(B, &d512, 71);
  for (int i = 0; i < 2; i++)
    prefill_count(B, side[i]);
  printf("\n  -- (d) head dim 512 against 128: prefill b=1 h=%d n=m=%d "
         "causal, d_k=d_v, %d rounds --\n",
         h, n, rounds);
  time_sides(B, side, 2, rounds, t, r);
  print_choice(B, &d128);
  print_choice(B, &d512);
  print_prefill_table(B, side, 2, t);
  rate = (d512.flops / d128.flops) / r[1];
  pred = model_ratio(side, 1);
  printf("      FLOP rate d=512/d=128 %.2fx (target >= 0.6x: %s); time "
         "%.3fx (model %.3fx, rate %.2fx)\n",
         rate, verdict(rate >= 0.6), r[1], pred,
         pred > 0 ? d512.flops / d128.flops / pred : -1.0);
  printf("      the attention kernel alone: FLOP rate d=512/d=128 %.2fx\n",
         (d512.flops / d128.flops) /
             (side[1]->med[STAGE_KERNEL] / side[0]->med[STAGE_KERNEL]));
  for (int i = 0; i < 2; i++)
    if (side[i]->pred_ok)
      print_model_kernels(side[i]->name, &side[i]->pred);
  record_prefill(B, "(d)", &d128, t[0]);
  record_prefill(B, "(d)", &d512, t[1]);
  rec(B, "options", "(d) head dim 512", "flop_rate_ratio", rate);
  rec(B, "options", "(d) head dim 512", "model_time_ratio", pred);
  rec(B, "options", "(d) head dim 512", "kernel_flop_rate_ratio",
      (d512.flops / d128.flops) /
          (d512.med[STAGE_KERNEL] / d128.med[STAGE_KERNEL]));
  prefill_release(&d128);
  prefill_release(&d512);
}

/* --------------------------------------------------------------- (c) */

typedef struct opt_decode {
  clattn_decode_desc d;
  cl_mem q, o, lens;
} opt_decode;

static int opt_decode_step(bench *B, void *p, cl_mem k, cl_mem v) {
  opt_decode *a = p;
  return (int)clattn_decode(B->ctx, &a->d, a->q, k, v, a->lens, a->o, NULL);
}

static void opts_window_decode(bench *B) {
  const int b = 1, m = B->quick ? 2048 : 8192, h = 32, hkv = 8, d = 128;
  const int W = B->quick ? 256 : 1024;
  const size_t cache_b = (size_t)b * hkv * m * d * sizeof(float);
  const int rounds = B->reps < 15 ? 15 : B->reps;
  const size_t copy_b = (size_t)(B->quick ? 64 : 128) << 20;
  /* K and V bytes a step reads: the visible keys' rows */
  const double full_b = 2.0 * cache_b, win_b = full_b * W / m;
  const double bytes[2] = {full_b, win_b};
  opt_decode full, win;
  opt_decode *side[2] = {&full, &win};
  kv_rotation kv;
  kv_pass pass[2];
  bench_side sides[2];
  bench_rounds R;
  clattn_profile prof = B->prof;
  clattn_prediction pred[2];
  int pred_ok[2];
  double t[2], ratio, of_copy[2], gbs;
  cl_int len = m;

  memset(&full, 0, sizeof full);
  full.d = (clattn_decode_desc){.size = sizeof full.d,
                                .batch = b,
                                .capacity = m,
                                .heads_q = h,
                                .heads_kv = hkv,
                                .head_dim_k = d,
                                .head_dim_v = d,
                                .dtype = CLATTN_F32,
                                .cache_layout = CLATTN_BHSD};
  full.q = buf_random(B, (size_t)b * h * d, 1.0f, 81);
  full.o = buf_new(B, (size_t)b * h * d * sizeof(float));
  full.lens = buf_new(B, (size_t)b * sizeof(cl_int));
  CK(clEnqueueFillBuffer(B->queue, full.lens, &len, sizeof len, 0,
                         (size_t)b * sizeof len, 0, NULL, NULL));
  win = full;
  win.d.window = W;
  kv_rotation_create(B, cache_b, &kv);
  printf("\n  -- (c) window in decode: b=%d h=%d h_kv=%d d=%d f32 BHSD, "
         "capacity = lens = %d, W=%d, COLD: %d caches (%zu MiB) in turn --\n",
         b, h, hkv, d, m, W, kv.count, (size_t)(full_b * kv.count) >> 20);
  /* the windowed call may be refused where the decode kernels do not
   * take a window yet: a named skip, not an exit */
  if (opt_decode_step(B, &win, kv.k[0], kv.v[0]) != 0) {
    printf("  (c) skipped: clattn_decode with a window refused: %s\n",
           clattn_ctx_errmsg(B->ctx));
    rec(B, "options", "(c) decode window", "skipped", 1.0);
    goto out;
  }
  CK(clFinish(B->queue));
  for (int i = 0; i < 2; i++) {
    pass[i] = (kv_pass){&kv, opt_decode_step, side[i]};
    sides[i] = (bench_side){"clattn_decode", kv_pass_run, &pass[i], 1,
                            kv.count,        NULL,        0};
  }
  rounds_init(B, &R, sides, 2, rounds, 1, copy_b);
  rounds_run(&R, -1, rounds + 1);
  for (int i = 0; i < 2; i++) {
    t[i] = rounds_time(&R, i);
    of_copy[i] = rounds_of_copy(&R, i, bytes[i]);
  }
  ratio = rounds_ratio(&R, 1, 0);
  gbs = rounds_copy_gbs(&R);
  rounds_free(&R);
  /* the model at the rounds' median copy bandwidth */
  clattn_profile_at_copy(&prof, gbs);
  for (int i = 0; i < 2; i++) {
    memset(&pred[i], 0, sizeof pred[i]);
    pred[i].size = sizeof pred[i];
    pred_ok[i] =
        clattn_model_decode(&side[i]->d, NULL, &prof, &pred[i]) == CLATTN_OK;
  }
  printf("      %d paired rounds, each a copy of %zu MiB (median %.1f GB/s) "
         "and a pass of each side\n",
         rounds, copy_b >> 20, gbs);
  printf("      %-8s %9s %9s %8s %9s %8s %9s\n", "side", "us/step", "model us",
         "meas/mod", "MiB/step", "GB/s", "of copy");
  for (int i = 0; i < 2; i++) {
    char name[32];
    snprintf(name, sizeof name, i ? "W=%d" : "full", W);
    if (pred_ok[i])
      printf("      %-8s %9.1f %9.1f %8.2f %9.2f %8.2f %8.1f%%\n", name,
             1e6 * t[i], 1e6 * pred[i].total.t_pred,
             t[i] / pred[i].total.t_pred, bytes[i] / 1048576.0,
             bytes[i] / t[i] * 1e-9, 100.0 * of_copy[i]);
    else
      printf("      %-8s %9.1f %9s %8s %9.2f %8.2f %8.1f%%  (model: %s)\n",
             name, 1e6 * t[i], "n/a", "", bytes[i] / 1048576.0,
             bytes[i] / t[i] * 1e-9, 100.0 * of_copy[i], pred[i].errmsg);
    rec(B, "options", name, "decode_us_per_step", 1e6 * t[i]);
    rec(B, "options", name, "decode_fraction_of_copy", of_copy[i]);
  }
  {
    const double pr = pred_ok[0] && pred_ok[1]
                          ? pred[1].total.t_pred / pred[0].total.t_pred
                          : -1.0;
    printf("      step W=%d/full %.3fx (target <= 0.2x: %s; bytes %.3fx); "
           "model %.3fx\n",
           W, ratio, verdict(ratio <= 0.2), win_b / full_b, pr);
    rec(B, "options", "(c) decode window", "time_ratio", ratio);
    rec(B, "options", "(c) decode window", "model_time_ratio", pr);
  }
  for (int i = 0; i < 2; i++)
    if (pred_ok[i])
      print_model_kernels(i ? "windowed" : "full", &pred[i]);
out:
  kv_rotation_destroy(&kv);
  rel(&full.q);
  rel(&full.o);
  rel(&full.lens);
}

/* ----------------------------------------------------------- section */

void bench_options(bench *B) {
  /* prefill calls take tens of milliseconds: many rounds are cheap, and a
   * shared machine's drift needs them */
  const int rounds = B->reps < 15 ? 15 : B->reps;
  printf("== attention options (issue 35): each option against the same "
         "call without it ==\n");
  printf("  FLOPs count the visible (query, key) pairs only, 2 (d_k + d_v) "
         "each; model: clattn_model_attention\n  / clattn_model_decode on "
         "this run's probed profile (model flops: its useful FLOPs over the "
         "count);\n  of FMA: the visible FLOP rate over the probed FP32 FMA "
         "peak; ratios: medians of the rounds'.\n");
  opts_window_prefill(B, rounds);
  opts_logit_prefill(B, rounds);
  opts_head_dim(B, rounds);
  printf("\n  bandwidth re-measured before (c) (the machine may be "
         "shared):\n");
  measure_ceilings(B, " (again)", 0);
  opts_window_decode(B);
  printf("\n");
}
