/* bench_sh.c - clattn-bench's SwitchHead section (--only switchhead).
 *
 * The SwitchHead layer (spec 6, Decision 6) against its parameter-matched
 * multi-head attention (MHA) layer at the paper's two configurations,
 * f32, batch 1:
 *   47M   D=412:  H=2, E=5, d_h=76, k=3  against H=10, d_h=41, T=256
 *   262M  D=1024: H=4, E=4, d_h=112, k=2 against H=16, d_h=64, T=512
 *   (1) a causal prefill of T positions without a cache and a decode step
 *       at cache length T - 1: the measured time over MHA's beside the
 *       MACs ratio (the model's FLOPs over MHA's) and the model's
 *       predicted time ratio; decode cold (every side rotates over enough
 *       layers, each with its own weights and cache, that no step finds
 *       its bytes in the last-level cache);
 *   (2) the same two calls in PyTorch on the CPU (peers/switchhead_torch.py:
 *       per-expert matmuls over the sorted selections, as the official code
 *       runs without Triton);
 *   (3) the expert-grouped GEMM (the cvmm family) of each side of each
 *       layer against a dense GEMM of the same FLOPs, CLBlast's and the
 *       projection family's own kernel, at T and 4 T rows (the cvmm call
 *       and the own kernel each with its tuning entry where the database
 *       has one).
 * The layers' projections run what the projection family chooses
 * (printed): CLBlast without tuning entries, so the layer ratios are only
 * comparable with the projections tuned (bench/RESULTS.md).
 * Every pair is timed alternately round by round (the order reversed every
 * other round), and each ratio is the median of the rounds' ratios, so
 * that a shared machine's drift hits both sides alike. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_harness.h"
#include "call/call.h"
#include "family/cvmm.h"

typedef struct sh_config {
  const char *name;
  clattn_switchhead_layer_desc sh;
  int dense_heads, dense_head_dim;
  int seq;
} sh_config;

static const sh_config configs[] = {
    {"47M",
     {sizeof(clattn_switchhead_layer_desc), 412, 2, 76, 5, 3, 0.0f},
     10,
     41,
     256},
    {"262M",
     {sizeof(clattn_switchhead_layer_desc), 1024, 4, 112, 4, 2, 0.0f},
     16,
     64,
     512},
};

enum { SIDE_SH, SIDE_MHA, SIDES };

static clattn_layer_desc mha_desc(const sh_config *c) {
  clattn_layer_desc d = {.size = sizeof(clattn_layer_desc)};
  d.d_model = c->sh.d_model;
  d.heads_q = d.heads_kv = c->dense_heads;
  d.head_dim_k = d.head_dim_v = c->dense_head_dim;
  return d;
}

/* Side `side` of config c with random weights from `seed`; dies when the
 * library refuses. */
static void sh_layer_create(bench *B, int side, const sh_config *c,
                            unsigned seed, own_layer *L) {
  const size_t D = (size_t)c->sh.d_model;
  const float amp = 1.0f / sqrtf((float)D);
  clattn_status st;
  memset(L, 0, sizeof *L);
  if (side == SIDE_MHA) {
    const clattn_layer_desc d = mha_desc(c);
    const size_t hd = (size_t)d.heads_q * d.head_dim_k;
    L->nw = 4;
    for (int i = 0; i < 4; i++)
      L->w[i] = buf_random(B, D * hd, i == 3 ? 1.0f / sqrtf((float)hd) : amp,
                           seed + (unsigned)i);
    st = clattn_layer_create(B->ctx, &d, L->w[0], L->w[1], L->w[2], L->w[3],
                             &L->layer);
  } else {
    const clattn_switchhead_layer_desc *d = &c->sh;
    const size_t H = (size_t)d->heads, E = (size_t)d->experts,
                 dh = (size_t)d->head_dim;
    const size_t count[6] = {D * H * dh,     D * H * dh, H * E * D * dh,
                             H * E * dh * D, D * H * E,  D * H * E};
    L->nw = 6;
    for (int i = 0; i < 6; i++)
      L->w[i] =
          buf_random(B, count[i], i == 3 ? 1.0f / sqrtf((float)(H * dh)) : amp,
                     seed + (unsigned)i);
    st = clattn_layer_create_switchhead(B->ctx, d, L->w[0], L->w[1], L->w[2],
                                        L->w[3], L->w[4], L->w[5], &L->layer);
  }
  if (st != CLATTN_OK)
    die("creating the %s layer (%s) failed: %s: %s",
        side == SIDE_SH ? "SwitchHead" : "MHA", c->name, clattn_status_str(st),
        clattn_ctx_errmsg(B->ctx));
}

/* The model's prediction of a causal call of n positions after cache_len
 * cached ones (decode: n = 1). */
static void sh_model(int side, const sh_config *c, int n, int cache_len,
                     const clattn_profile *prof, clattn_prediction *p) {
  clattn_status st;
  *p = (clattn_prediction){.size = sizeof *p};
  if (side == SIDE_MHA) {
    const clattn_layer_desc d = mha_desc(c);
    st = clattn_model_layer(&d, 1, n, cache_len, 1, prof, p);
  } else {
    st = clattn_model_switchhead_layer(&c->sh, 1, n, cache_len, 1, prof, p);
  }
  if (st != CLATTN_OK)
    die("the model of the %s layer (%s) failed: %s",
        side == SIDE_SH ? "SwitchHead" : "MHA", c->name, p->errmsg);
}

/* The figures of one call kind of one config, printed together. */
typedef struct sh_row {
  double macs_ratio, pred_ratio, meas_ratio;
  double clattn_s[SIDES], torch_s[SIDES];
} sh_row;

/* The two sides in alternating rounds (after `warm` warm-up rounds): the
 * ratios of their times beside the models'. */
static void time_row(bench *B, const bench_side *sides, int warm, int rounds,
                     const clattn_prediction *p, sh_row *row) {
  bench_rounds R;
  rounds_init(B, &R, sides, SIDES, rounds, 1, 0);
  rounds_run(&R, -warm, rounds + warm);
  row->meas_ratio = rounds_ratio(&R, SIDE_SH, SIDE_MHA);
  for (int s = 0; s < SIDES; s++)
    row->clattn_s[s] = rounds_time(&R, s);
  rounds_free(&R);
  row->macs_ratio = p[SIDE_SH].total.flops / p[SIDE_MHA].total.flops;
  row->pred_ratio = p[SIDE_SH].total.t_pred / p[SIDE_MHA].total.t_pred;
}

/* Which GEMM the layers' projections of `rows` rows run (the projection
 * family's choice: CLBlast, or the own kernel where a tuning entry
 * measured it faster), printed once per config and call. */
static void print_projections(bench *B, const sh_config *c, int rows) {
  const clattn_switchhead_layer_desc *d = &c->sh;
  const int D = d->d_model, hd = c->dense_heads * c->dense_head_dim;
  const int shapes[3][2] = {{d->heads * d->head_dim, D}, {hd, D}, {D, hd}};
  const char *const what[3] = {"SH in", "MHA in", "MHA out"};
  printf("    projections (rows=%d):", rows);
  for (int i = 0; i < 3; i++) {
    char text[96];
    clattn_choice ch = {.size = sizeof(clattn_choice)};
    snprintf(text, sizeof text, "m=%d n=%d k=%d", rows, shapes[i][0],
             shapes[i][1]);
    CKA(B, clattn_explain_shape(B->ctx, "projection", text, NULL, &ch));
    clattn_params r = {.size = sizeof r};
    clattn_params_parse(ch.resolved, &r);
    printf(" %s: %s (%s)%s", what[i], r.scheme == 1 ? "own" : "CLBlast",
           clattn_choice_source_str(ch.source), i < 2 ? ";" : "\n");
  }
}

/* ---------------------------------------------------------- prefill */

static void prefill_case(bench *B, const sh_config *c, int rounds,
                         sh_row *row) {
  const size_t D = (size_t)c->sh.d_model, T = (size_t)c->seq;
  cl_mem x = buf_random(B, T * D, 1.0f, 71), y = buf_new(B, T * D * 4);
  own_layer L[SIDES];
  layer_prefill pf[SIDES];
  bench_side sides[SIDES];
  clattn_prediction p[SIDES];
  for (int s = 0; s < SIDES; s++) {
    sh_layer_create(B, s, c, 100 + 10 * (unsigned)s, &L[s]);
    pf[s] = (layer_prefill){L[s].layer, c->seq, x, y};
    sides[s] = (bench_side){
        "clattn_layer_prefill", layer_prefill_run, &pf[s], 1, 1, NULL, 0};
    /* warm-up calls (programs built), then batches of at least 20 ms,
     * above the clock's and launches' grain */
    sides[s].calls = batch_calls(B, &sides[s], 3, 1, 0.02);
    sh_model(s, c, c->seq, 0, &B->prof, &p[s]);
  }
  time_row(B, sides, 0, rounds, p, row);
  for (int s = 0; s < SIDES; s++)
    own_layer_destroy(&L[s]);
  rel(&x);
  rel(&y);
}

/* ----------------------------------------------------------- decode */

/* Bytes a decode step of side `side` reads: its weights and its cache of
 * T positions. */
static size_t layer_bytes(int side, const sh_config *c) {
  const clattn_switchhead_layer_desc *d = &c->sh;
  if (side == SIDE_SH)
    return 4 * (size_t)clattn_switchhead_layer_params(d) +
           8 * (size_t)c->seq * d->heads * d->head_dim;
  const size_t hd = (size_t)c->dense_heads * c->dense_head_dim;
  return 4 * (4 * (size_t)d->d_model * hd + 2 * (size_t)c->seq * hd);
}

/* What sh_rot_make makes: layers of one side with caches of T rows. */
typedef struct sh_rot_arg {
  int side;
  const sh_config *c;
} sh_rot_arg;

static clattn_status sh_rot_make(bench *B, void *arg, unsigned seed,
                                 own_layer *L) {
  const sh_rot_arg *a = arg;
  sh_layer_create(B, a->side, a->c, seed, L);
  return clattn_kv_cache_create(L->layer, 1, a->c->seq, &L->cache);
}

/* Decode steps at cache length T - 1, cold. */
static void decode_case(bench *B, const sh_config *c, int rounds, sh_row *row) {
  const size_t D = (size_t)c->sh.d_model;
  cl_mem x = buf_random(B, D, 1.0f, 72), y = buf_new(B, D * 4);
  layer_rotation rot[SIDES];
  bench_side sides[SIDES];
  clattn_prediction p[SIDES];
  char why[256];
  for (int s = 0; s < SIDES; s++) {
    sh_rot_arg ra = {s, c};
    if (layer_rotation_create(B, layer_bytes(s, c), sh_rot_make, &ra, &rot[s],
                              why, sizeof why) != 0)
      die("the %s decode layers (%s): %s", s == SIDE_SH ? "SwitchHead" : "MHA",
          c->name, why);
    rot[s].len = c->seq - 1;
    rot[s].x = x;
    rot[s].y = y;
    sides[s] = (bench_side){"clattn_layer_decode",
                            layer_rotation_step,
                            &rot[s],
                            1,
                            rot[s].count,
                            NULL,
                            0};
    sh_model(s, c, 1, c->seq - 1, &B->prof, &p[s]);
  }
  time_row(B, sides, 1, rounds, p, row);
  for (int s = 0; s < SIDES; s++)
    layer_rotation_destroy(&rot[s]);
  rel(&x);
  rel(&y);
}

/* ------------------------------------------- expert GEMM against dense */

/* The projection family's params that pick CLBlast (its Xgemm as the
 * context applied it).  The own kernel's are the shape's tuning entry when
 * that entry is the own kernel, else its defaults (own_params), as the
 * cvmm call takes its own entry. */
static const clattn_params gemm_clblast = {.size = sizeof(clattn_params),
                                           .scheme = 2};

static clattn_params own_params(bench *B, const clattn__gemm_desc *d) {
  clattn_params p = {.size = sizeof(clattn_params), .scheme = 1};
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  char text[96];
  snprintf(text, sizeof text, "m=%d n=%d k=%d", d->m, d->n, d->k);
  CKA(B, clattn_explain_shape(B->ctx, "projection", text, NULL, &ch));
  clattn_params r = {.size = sizeof r};
  clattn_params_parse(ch.resolved, &r);
  return r.scheme == 1 ? r : p;
}

enum { G_CVMM, G_CLBLAST, G_OWN, GEMMS };
static const char *const gemm_name[GEMMS] = {"cvmm", "CLBlast", "own"};

typedef struct gemm_case {
  const clattn__family *F[GEMMS];
  clattn__cvmm_desc cv;
  clattn__gemm_desc dense[GEMMS]; /* [G_CLBLAST], [G_OWN] */
  clattn__params dense_values[GEMMS]; /* their params, the family's values */
  cl_mem cv_buf[5], dense_buf[3];
} gemm_case;

/* One call of the cvmm family, or of the projection family with
 * dense[which]. */
typedef struct gemm_call {
  gemm_case *g;
  int which;
} gemm_call;

static int run_gemm(bench *B, void *p) {
  const gemm_call *a = p;
  gemm_case *g = a->g;
  return (int)(a->which == G_CVMM
                   ? clattn__call(B->ctx, g->F[G_CVMM], &g->cv, NULL, g->cv_buf, NULL)
                   : clattn__call(B->ctx, g->F[a->which], &g->dense[a->which],
                                  &g->dense_values[a->which], g->dense_buf,
                                  NULL));
}

/* One side of a layer (SPLIT: the value side, SUM: the output side) over
 * `rows` positions: the cvmm call, routing included, and the dense GEMMs
 * of the same FLOPs, whose inner or output width is the experts' k d_h
 * (SUM) or k N (SPLIT) plus the routing's H E columns, a head. */
static void gemm_case_run(bench *B, const sh_config *c, clattn__cvmm_mode mode,
                          int rows, int rounds) {
  const clattn_switchhead_layer_desc *d = &c->sh;
  const int D = d->d_model, H = d->heads, E = d->experts, k = d->topk,
            dh = d->head_dim, split = mode == CLATTN__CVMM_SPLIT;
  gemm_case g;
  memset(&g, 0, sizeof g);
  g.F[G_CVMM] = clattn__family_find("cvmm");
  g.F[G_CLBLAST] = g.F[G_OWN] = clattn__family_find("projection");
  if (g.F[G_CVMM] == NULL || g.F[G_OWN] == NULL)
    die("the cvmm and projection families are not in this build");
  g.cv.rows = rows;
  g.cv.heads = H;
  g.cv.experts = E;
  g.cv.topk = k;
  g.cv.sel_inner = D;
  g.cv.mode = mode;
  g.cv.gate = CLATTN__CVMM_TOPK;
  g.cv.inner = split ? D : dh;
  g.cv.cols = split ? dh : D;
  const int a_cols = split ? D : H * dh, out_cols = split ? H * dh : D;
  const float amp = 1.0f / sqrtf((float)g.cv.inner);
  g.cv_buf[0] = buf_random(B, (size_t)rows * a_cols, 1.0f, 81);
  g.cv_buf[1] = buf_random(B, (size_t)rows * D, 1.0f, 82);
  g.cv_buf[2] = buf_random(B, (size_t)D * H * E, 1.0f / sqrtf((float)D), 83);
  g.cv_buf[3] = buf_random(B, (size_t)H * E * g.cv.inner * g.cv.cols, amp, 84);
  g.cv_buf[4] = buf_new(B, (size_t)rows * out_cols * 4);
  for (int w = G_CLBLAST; w <= G_OWN; w++) {
    clattn__gemm_desc *gd = &g.dense[w];
    gd->m = rows;
    gd->k = split ? D : H * (k * dh + E);
    gd->n = split ? H * (k * dh + E) : D;
  }
  const clattn_params own = own_params(B, &g.dense[G_OWN]);
  const clattn_params *params[GEMMS] = {NULL, &gemm_clblast, &own};
  for (int w = G_CLBLAST; w <= G_OWN; w++) {
    char why[256];
    if (clattn__params_in(g.F[w], params[w], &g.dense_values[w], why,
                          sizeof why) != CLATTN_OK)
      die(why);
  }
  const clattn__gemm_desc *gd = &g.dense[G_OWN];
  g.dense_buf[0] = buf_random(B, (size_t)gd->m * gd->k, 1.0f, 85);
  g.dense_buf[1] = buf_random(B, (size_t)gd->k * gd->n, amp, 86);
  g.dense_buf[2] = buf_new(B, (size_t)gd->m * gd->n * 4);
  const double flops = 2.0 * gd->m * gd->n * gd->k;

  gemm_call call[GEMMS];
  bench_side sides[GEMMS];
  bench_rounds R;
  for (int w = 0; w < GEMMS; w++) {
    call[w] = (gemm_call){&g, w};
    sides[w] = (bench_side){gemm_name[w], run_gemm, &call[w], 1, 1, NULL, 0};
    sides[w].calls = batch_calls(B, &sides[w], 3, 1, 0.01);
  }
  rounds_init(B, &R, sides, GEMMS, rounds, 1, 0);
  rounds_run(&R, 0, rounds);
  double med[GEMMS];
  for (int w = 0; w < GEMMS; w++)
    med[w] = rounds_time(&R, w);
  const int best = med[G_OWN] < med[G_CLBLAST] ? G_OWN : G_CLBLAST;
  const double rate_ratio = rounds_ratio(&R, best, G_CVMM);
  rounds_free(&R);
  char tag[96];
  snprintf(tag, sizeof tag, "%s %s rows=%d", c->name, split ? "V" : "O", rows);
  printf("  %-5s %-2s %5d %6d x %5d x %5d %8.1f %8.1f %8.1f  %-7s %6.2f%s\n",
         c->name, split ? "V" : "O", rows, gd->m, gd->n, gd->k,
         flops / med[G_CVMM] * 1e-9, flops / med[G_CLBLAST] * 1e-9,
         flops / med[G_OWN] * 1e-9, gemm_name[best], rate_ratio,
         rate_ratio >= 0.8 ? "*" : " ");
  rec(B, "switchhead", tag, "cvmm_gflops", flops / med[G_CVMM] * 1e-9);
  rec(B, "switchhead", tag, "clblast_gflops", flops / med[G_CLBLAST] * 1e-9);
  rec(B, "switchhead", tag, "own_gemm_gflops", flops / med[G_OWN] * 1e-9);
  rec(B, "switchhead", tag, "cvmm_rate_vs_best_dense", rate_ratio);
  for (int i = 0; i < 5; i++)
    rel(&g.cv_buf[i]);
  for (int i = 0; i < 3; i++)
    rel(&g.dense_buf[i]);
}

/* ---------------------------------------------------------- section */

static void torch_times(const sh_config *c, int reps, sh_row *prefill,
                        sh_row *decode) {
  static const char *const keys[4] = {
      "sh_prefill_seconds", "mha_prefill_seconds", "sh_decode_seconds",
      "mha_decode_seconds"};
  const clattn_switchhead_layer_desc *d = &c->sh;
  char args[256];
  double v[4];
  snprintf(args, sizeof args,
           "--d-model %d --heads %d --head-dim %d --experts %d --topk %d "
           "--dense-heads %d --dense-head-dim %d --seq %d --reps %d",
           d->d_model, d->heads, d->head_dim, d->experts, d->topk,
           c->dense_heads, c->dense_head_dim, c->seq, reps);
  peer_numbers("switchhead_torch.py", args, keys, 4, v);
  prefill->torch_s[SIDE_SH] = v[0];
  prefill->torch_s[SIDE_MHA] = v[1];
  decode->torch_s[SIDE_SH] = v[2];
  decode->torch_s[SIDE_MHA] = v[3];
}

static void print_row(bench *B, const sh_config *c, const char *call,
                      const sh_row *r) {
  const double of_macs = r->meas_ratio / r->macs_ratio;
  const int have_torch = r->torch_s[SIDE_SH] > 0 && r->torch_s[SIDE_MHA] > 0;
  char tag[64];
  printf("  %-5s %-8s %7.3f %7.3f %7.3f %7.2f%s", c->name, call, r->macs_ratio,
         r->pred_ratio, r->meas_ratio, of_macs, of_macs <= 1.25 ? "*" : " ");
  if (have_torch)
    printf(" %7.3f %7.2f %7.2f\n", r->torch_s[SIDE_SH] / r->torch_s[SIDE_MHA],
           r->clattn_s[SIDE_SH] / r->torch_s[SIDE_SH],
           r->clattn_s[SIDE_MHA] / r->torch_s[SIDE_MHA]);
  else
    printf(" %7s %7s %7s\n", "n/a", "n/a", "n/a");
  snprintf(tag, sizeof tag, "%s %s", c->name, call);
  rec(B, "switchhead", tag, "macs_ratio_vs_mha", r->macs_ratio);
  rec(B, "switchhead", tag, "model_time_ratio_vs_mha", r->pred_ratio);
  rec(B, "switchhead", tag, "time_ratio_vs_mha", r->meas_ratio);
  rec(B, "switchhead", tag, "time_ratio_over_macs_ratio", of_macs);
  rec(B, "switchhead", tag, "clattn_sh_seconds", r->clattn_s[SIDE_SH]);
  rec(B, "switchhead", tag, "clattn_mha_seconds", r->clattn_s[SIDE_MHA]);
  rec(B, "switchhead", tag, "torch_sh_seconds", r->torch_s[SIDE_SH]);
  rec(B, "switchhead", tag, "torch_mha_seconds", r->torch_s[SIDE_MHA]);
}

void bench_switchhead(bench *B) {
  enum { NCONF = sizeof configs / sizeof configs[0] };
  const int rounds = B->reps < 9 ? 9 : B->reps;
  sh_row prefill[NCONF], decode[NCONF];
  printf("\n== SwitchHead: the layer against its parameter-matched MHA "
         "layer (f32, batch 1, causal)\n");
  print_load("before");
  for (int i = 0; i < NCONF; i++) {
    const sh_config *c = &configs[i];
    printf("  %s: D=%d H=%d E=%d d_h=%d k=%d against H=%d d_h=%d, T=%d\n",
           c->name, c->sh.d_model, c->sh.heads, c->sh.experts, c->sh.head_dim,
           c->sh.topk, c->dense_heads, c->dense_head_dim, c->seq);
    print_projections(B, c, c->seq);
    print_projections(B, c, 1);
    prefill_case(B, c, rounds, &prefill[i]);
    decode_case(B, c, rounds, &decode[i]);
    torch_times(c, rounds, &prefill[i], &decode[i]);
  }
  printf("\n  Time over MHA's: MACs (the model's FLOPs), the model's "
         "predicted time, measured\n  (median of %d alternating rounds); "
         "meas/MAC: * within the issue's 1.25; torch:\n  PyTorch's "
         "SwitchHead/MHA; SH/tch, MHA/tch: clattn's time over PyTorch's.\n",
         rounds);
  printf("  %-5s %-8s %7s %7s %7s %8s %7s %7s %7s\n", "model", "call", "MACs",
         "pred", "meas", "meas/MAC", "torch", "SH/tch", "MHA/tch");
  for (int i = 0; i < NCONF; i++) {
    print_row(B, &configs[i], "prefill", &prefill[i]);
    print_row(B, &configs[i], "decode", &decode[i]);
  }
  printf("\n  The expert GEMM (cvmm, routing included) against dense GEMMs "
         "of the same FLOPs,\n  GFLOP/s; best: the faster dense one; "
         "ratio: cvmm's rate over it (* >= 0.8).\n");
  printf("  %-5s %-2s %5s %22s %8s %8s %8s  %-7s %7s\n", "model", "", "rows",
         "dense m x n x k", "cvmm", "CLBlast", "own", "best", "ratio");
  for (int i = 0; i < NCONF; i++)
    for (int m = CLATTN__CVMM_SPLIT; m <= CLATTN__CVMM_SUM; m++)
      for (int f = 1; f <= 4; f *= 4)
        gemm_case_run(B, &configs[i], (clattn__cvmm_mode)m, f * configs[i].seq,
                      rounds);
  print_load("after");
}
