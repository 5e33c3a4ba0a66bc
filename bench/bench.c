/* bench.c - clattn benchmark.
 *
 * One run on one device measures the device's own ceilings (clattn_probe:
 * copy and read bandwidth, FP32 FMA rate), then reports every attention
 * figure as a ratio to them or to a baseline measured in the same run:
 *   - fused prefill vs an unfused CLBlast GEMM + softmax + GEMM pipeline,
 *     with the automatic kernel shape and a few explicit ones;
 *   - decode over cold KV caches (MHA, GQA, MQA) vs a copy kernel, all
 *     timed round by round (at least 15 rounds) with ratios paired within
 *     a round;
 *   - the whole layer: projections vs attention core, and a decode step;
 *   - talking-heads (bench_th.c): fused against MHA, an unfused pipeline
 *     and PyTorch, prefill and decode;
 *   - hh (bench_hh.c): the Hosseini & Hosseini layers against the MHA
 *     layer and PyTorch, prefill and decode, beside the model;
 *   - switchhead (bench_sh.c): the SwitchHead layer against its
 *     parameter-matched MHA layer and PyTorch, and its expert GEMM against
 *     dense GEMMs of the same FLOPs;
 *   - options (bench_opts.c): the attention options (window, soft-cap,
 *     ALiBi, sinks, head dim 512) against the same calls without them,
 *     prefill and cold decode, and PyTorch's SDPA with a window mask.
 * Times are medians of --reps runs after warm-up, wall clock around
 * clFinish. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_harness.h"
#include "runtime/runtime.h"

/* ------------------------------------------------------------ setup */

static void bench_init(bench *B, const char *device) {
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  o.device = device;
  o.profiling = 1;
  CKA(B, clattn_ctx_create(&o, &B->ctx));
  B->context = clattn_ctx_cl_context(B->ctx);
  B->queue = clattn_ctx_queue(B->ctx);
  B->device = clattn_ctx_device(B->ctx);

  /* the library's own unfused softmax (cl/unfused.cl), the one `clattn
   * bench` runs: the context owns the kernel */
  CKA(B,
      clattn__kernel(B->ctx, "unfused.cl", "", "softmax_rows", &B->k_softmax));
}

static void print_device(bench *B) {
  char name[256] = "", ver[256] = "", drv[256] = "";
  cl_platform_id plat;
  char pname[256] = "";
  CK(clGetDeviceInfo(B->device, CL_DEVICE_NAME, sizeof name - 1, name, NULL));
  CK(clGetDeviceInfo(B->device, CL_DEVICE_VERSION, sizeof ver - 1, ver, NULL));
  CK(clGetDeviceInfo(B->device, CL_DRIVER_VERSION, sizeof drv - 1, drv, NULL));
  CK(clGetDeviceInfo(B->device, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL));
  CK(clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof pname - 1, pname, NULL));
  printf("clattn %s bench\n", clattn_version());
  printf("device   : %s\nplatform : %s (%s, driver %s)\n", name, pname, ver,
         drv);
  printf("protocol : wall clock around clFinish, median of %d runs after "
         "warm-up%s\n\n",
         B->reps, B->quick ? "; --quick shapes" : "");
}

/* --------------------------------------------------------- ceilings */

static void bench_ceilings(bench *B) {
  printf("== device ceilings (same run) ==\n");
  measure_ceilings(B, "", 1);
  printf("\n");
}

/* ---------------------------------------------------- fused prefill */

typedef struct prefill_arg {
  clattn_attn_desc d;
  cl_mem q, k, v, o;
  /* unfused */
  cl_mem s, o2;
  double stage[3]; /* last run's stage times */
} prefill_arg;

static int run_fused(bench *B, void *p) {
  prefill_arg *a = p;
  clattn_status st =
      clattn_attention(B->ctx, &a->d, a->q, a->k, a->v, NULL, a->o, NULL);
  return st == CLATTN_OK ? 0 : (int)st;
}

/* Unfused: per (batch, head) S = Q K^T (CLBlast), softmax kernel, then
 * O = P V (CLBlast), straight from the BSHD tensors via offsets and leading
 * dimensions.  Each stage is finished so its time can be reported. */
static int run_unfused(bench *B, void *p) {
  prefill_arg *a = p;
  const clattn_attn_desc *d = &a->d;
  size_t n = (size_t)d->n_q, m = (size_t)d->n_kv, h = (size_t)d->heads_q;
  size_t dk = (size_t)d->head_dim_k, dv = (size_t)d->head_dim_v;
  cl_command_queue q = B->queue;
  float scale = d->scale != 0.0f ? d->scale : 1.0f / sqrtf((float)dk);
  double t0 = clattn__now(), t1, t2;

  for (size_t bb = 0; bb < (size_t)d->batch; bb++)
    for (size_t hh = 0; hh < h; hh++)
      CKB(CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                       CLBlastTransposeYes, n, m, dk, 1.0f, a->q,
                       (bb * n * h + hh) * dk, h * dk, a->k,
                       (bb * m * h + hh) * dk, h * dk, 0.0f, a->s,
                       (bb * h + hh) * n * m, m, &q, NULL));
  CK(clFinish(q));
  t1 = clattn__now();
  {
    cl_int ni = (cl_int)n, mi = (cl_int)m, causal = d->causal;
    size_t gws = (size_t)d->batch * h * n;
    CK(clSetKernelArg(B->k_softmax, 0, sizeof(cl_mem), &a->s));
    CK(clSetKernelArg(B->k_softmax, 1, sizeof ni, &ni));
    CK(clSetKernelArg(B->k_softmax, 2, sizeof mi, &mi));
    CK(clSetKernelArg(B->k_softmax, 3, sizeof scale, &scale));
    CK(clSetKernelArg(B->k_softmax, 4, sizeof causal, &causal));
    CK(clEnqueueNDRangeKernel(q, B->k_softmax, 1, NULL, &gws, NULL, 0, NULL,
                              NULL));
  }
  CK(clFinish(q));
  t2 = clattn__now();
  for (size_t bb = 0; bb < (size_t)d->batch; bb++)
    for (size_t hh = 0; hh < h; hh++)
      CKB(CLBlastSgemm(
          CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, dv,
          m, 1.0f, a->s, (bb * h + hh) * n * m, m, a->v, (bb * m * h + hh) * dv,
          h * dv, 0.0f, a->o2, (bb * n * h + hh) * dv, h * dv, &q, NULL));
  CK(clFinish(q));
  a->stage[0] = t1 - t0;
  a->stage[1] = t2 - t1;
  a->stage[2] = clattn__now() - t2;
  return 0;
}

/* Unfused timing, one warm-up run first: the median time and each
 * stage's. */
static double time_unfused(bench *B, prefill_arg *a, double stage_med[3]) {
  const bench_side side = {
      "the unfused pipeline", run_unfused, a, 1, 1, a->stage, 3};
  bench_rounds R;
  double t;
  rounds_init(B, &R, &side, 1, B->reps, 0, 0);
  rounds_run(&R, -1, B->reps + 1);
  for (int j = 0; j < 3; j++)
    stage_med[j] = rounds_stage(&R, 0, j);
  t = rounds_time(&R, 0);
  rounds_free(&R);
  return t;
}

static void print_prefill_row(bench *B, const char *name, double t,
                              double flops, double bytes, double ref_t) {
  double gf = flops / t * 1e-9;
  printf("  %-34s %9.2f %9.1f %8.2f %7.1f%% %8.2fx\n", name, 1e3 * t, gf,
         bytes / t * 1e-9, 100.0 * gf / B->fma_gflops, ref_t / t);
}

static void bench_prefill(bench *B) {
  int n = B->quick ? 512 : 2048, h = 8, d = 64, b = 1;
  size_t elems = (size_t)b * n * h * d;
  prefill_arg a;
  static const struct {
    const char *name;
    clattn_params p;
  } cfgs[] = {
      /* the AVX-512 default before 8 rows x 32 keys (and the default on
       * every CPU before the tile was fitted to the vector registers) */
      {"v1 rows=4 keys=64", {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 64}},
      {"v1 rows=4 keys=32", {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 32}},
      {"v1 rows=8 keys=64", {.size = sizeof(clattn_params), .variant = 1, .rows = 8, .keys = 64}},
      {"v1 rows=2 keys=16", {.size = sizeof(clattn_params), .variant = 1, .rows = 2, .keys = 16}},
      {"v2 (auto tiles)", {.size = sizeof(clattn_params), .variant = 2}},
      {"v2 rows=16 keys=32 wg=16",
       {.size = sizeof(clattn_params), .variant = 2, .rows = 16, .keys = 32, .wg = 16}},
  };

  memset(&a, 0, sizeof a);
  a.d = (clattn_attn_desc){.size = sizeof a.d,
                           .batch = b,
                           .n_q = n,
                           .n_kv = n,
                           .heads_q = h,
                           .heads_kv = h,
                           .head_dim_k = d,
                           .head_dim_v = d,
                           .dtype = CLATTN_F32,
                           .q_layout = CLATTN_BSHD,
                           .kv_layout = CLATTN_BSHD};
  a.q = buf_random(B, elems, 1.0f, 1);
  a.k = buf_random(B, elems, 1.0f, 2);
  a.v = buf_random(B, elems, 1.0f, 3);
  a.o = buf_new(B, elems * sizeof(float));
  a.o2 = buf_new(B, elems * sizeof(float));
  a.s = buf_new(B, (size_t)b * h * n * n * sizeof(float));

  printf("== fused prefill: b=%d h=%d (MHA) n=m=%d d_k=d_v=%d f32, "
         "BSHD ==\n",
         b, h, n, d);
  printf("  FLOPs = 4*b*h*A*d (A = n*m, causal n*(n+1)/2); GB/s from the "
         "fused ideal bytes\n");
  printf("  (Q, K, V read once, O written once); %% of the FMA peak above; "
         "speed-up vs unfused.\n");
  for (int causal = 0; causal <= 1; causal++) {
    double A = causal ? (double)n * (n + 1) / 2.0 : (double)n * n;
    double flops = 4.0 * b * h * A * d;
    double bytes = 4.0 * b * ((double)n * h * d * 2 + (double)n * h * 2 * d);
    double st[3], tu, tf;
    char name[320];
    const char *cs = causal ? "causal" : "non-causal";
    a.d.causal = causal;
    a.d.params = NULL;

    tu = time_unfused(B, &a, st);
    tf = time_median(B, run_fused, &a, 1, B->reps);
    if (tf < 0)
      die("fused attention failed: %s", clattn_ctx_errmsg(B->ctx));
    printf("\n  %-34s %9s %9s %8s %8s %9s\n", cs, "ms", "GFLOP/s", "GB/s",
           "of FMA", "vs unfus");
    clattn_choice ch = {.size = sizeof(clattn_choice)};
    if (clattn_ctx_last_choice(B->ctx, &ch) == CLATTN_OK)
      snprintf(name, sizeof name, "fused, auto (%s)", ch.resolved);
    else
      snprintf(name, sizeof name, "fused, auto");
    print_prefill_row(B, name, tf, flops, bytes, tu);
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
      double t;
      a.d.params = &cfgs[i].p;
      snprintf(name, sizeof name, "fused, %s", cfgs[i].name);
      t = time_median(B, run_fused, &a, 1, B->reps);
      if (t < 0) {
        printf("  %-34s rejected: %s\n", name, clattn_ctx_errmsg(B->ctx));
        continue;
      }
      print_prefill_row(B, name, t, flops, bytes, tu);
      rec(B, "prefill", name, causal ? "ms_causal" : "ms", 1e3 * t);
    }
    a.d.params = NULL;
    /* The unfused path's bytes add the logits round trips (spec 2.3). */
    print_prefill_row(B, "unfused (CLBlast+softmax+CLBlast)", tu, flops,
                      bytes + 4.0 * 4.0 * b * h * (double)n * n, tu);
    printf("    unfused stages: QK^T %.1f ms, softmax %.1f ms, PV %.1f ms\n",
           1e3 * st[0], 1e3 * st[1], 1e3 * st[2]);
    printf("    fused/unfused speed-up: %.2fx; max |O_fused - O_unfused| = "
           "%.3g\n",
           tu / tf, max_abs_diff(B, a.o, a.o2, elems));
    rec(B, "prefill", cs, "fused_ms", 1e3 * tf);
    rec(B, "prefill", cs, "fused_gflops", flops / tf * 1e-9);
    rec(B, "prefill", cs, "unfused_ms", 1e3 * tu);
    rec(B, "prefill", cs, "speedup", tu / tf);
    rec(B, "prefill", cs, "fraction_of_fma_peak",
        flops / tf * 1e-9 / B->fma_gflops);
  }
  printf("\n");
  rel(&a.q);
  rel(&a.k);
  rel(&a.v);
  rel(&a.o);
  rel(&a.o2);
  rel(&a.s);
}

/* ----------------------------------------------------------- decode */

typedef struct decode_arg {
  clattn_decode_desc d;
  kv_rotation kv;
  cl_mem q, o, lens;
} decode_arg;

/* One step of a case on one layer's caches. */
static int decode_step(bench *B, void *p, cl_mem k, cl_mem v) {
  decode_arg *a = p;
  return (int)clattn_decode(B->ctx, &a->d, a->q, k, v, a->lens, a->o, NULL);
}

static void bench_decode(bench *B) {
  int m = B->quick ? 2048 : 8192, h = 8, d = 64, b = 1;
  const size_t target = cold_bytes(B);
  enum { NC = 3 };
  static const int hkvs[NC] = {8, 2, 1};
  static const char *names[NC] = {"MHA (h_kv=8)", "GQA (h_kv=2)",
                                  "MQA (h_kv=1)"};
  /* rounds: each times a copy (clattn_copy_ref, the bandwidth reference)
   * and one pass of every case, so all share the machine's drift (a
   * shared VM's bandwidth moves within minutes: bench/RESULTS.md, machine
   * drift) and each ratio pairs times of one round */
  const int rounds = B->reps < 15 ? 15 : B->reps;
  const size_t copy_b = (size_t)(B->quick ? 64 : 128) << 20;
  decode_arg a[NC];
  kv_pass pass[NC];
  bench_side sides[NC];
  bench_rounds R;

  printf("== decode: b=%d h=%d m=%d (cache capacity %d, lens=%d) d=%d f32, "
         "BHSD cache ==\n",
         b, h, m, m, m, d);
  printf("  COLD caches: each case rotates round-robin over enough distinct "
         "per-\"layer\" caches\n  (>= %zu MiB in all) that no step reads "
         "K/V still in the LLC; time = pass / layers.\n",
         target >> 20);
  printf("  %d rounds, each a copy of %zu MiB and one pass of every case "
         "in turn; us/step: the\n  median pass; of copy: the median over "
         "rounds of the case's GB/s / the copy's\n  (read+write) GB/s in the "
         "same round; vs MHA: likewise MHA's pass / the case's pass.\n",
         rounds, copy_b >> 20);
  printf("  bandwidth re-measured just before this section (the machine may "
         "be shared):\n");
  measure_ceilings(B, " (again)", 0);
  for (int c = 0; c < NC; c++) {
    decode_arg *x = &a[c];
    const int hkv = hkvs[c];
    const size_t cache_b = (size_t)b * hkv * m * d * sizeof(float);
    cl_int len = m;

    memset(x, 0, sizeof *x);
    x->d = (clattn_decode_desc){.size = sizeof x->d,
                                .batch = b,
                                .capacity = m,
                                .heads_q = h,
                                .heads_kv = hkv,
                                .head_dim_k = d,
                                .head_dim_v = d,
                                .dtype = CLATTN_F32,
                                .cache_layout = CLATTN_BHSD};
    kv_rotation_create(B, cache_b, &x->kv);
    x->q = buf_random(B, (size_t)b * h * d, 1.0f, 7);
    x->o = buf_new(B, (size_t)b * h * d * sizeof(float));
    x->lens = buf_new(B, (size_t)b * sizeof(cl_int));
    CK(clEnqueueFillBuffer(B->queue, x->lens, &len, sizeof len, 0,
                           (size_t)b * sizeof len, 0, NULL, NULL));
    pass[c] = (kv_pass){&x->kv, decode_step, x};
    sides[c] = (bench_side){"clattn_decode", kv_pass_run, &pass[c], 1,
                            x->kv.count,     NULL,        0};
  }
  rounds_init(B, &R, sides, NC, rounds, 0, copy_b);
  rounds_run(&R, -1, rounds + 1);
  printf("  %-14s %6s %8s %9s %9s %7s %8s %8s %7s\n", "case", "layers",
         "MiB tot", "us/step", "MiB/step", "GB/s", "of copy", "of read",
         "vs MHA");
  for (int c = 0; c < NC; c++) {
    const double step_bytes = 4.0 * b * m * hkvs[c] * (2.0 * d);
    const double of_copy = rounds_of_copy(&R, c, step_bytes);
    const double vs = rounds_ratio(&R, 0, c), tc = rounds_time(&R, c);
    printf("  %-14s %6d %8.0f %9.1f %9.2f %7.2f %7.1f%% %7.1f%% %6.2fx\n",
           names[c], a[c].kv.count, step_bytes * a[c].kv.count / 1048576.0,
           1e6 * tc, step_bytes / 1048576.0, step_bytes / tc * 1e-9,
           100.0 * of_copy, 100.0 * step_bytes / tc * 1e-9 / B->read_gbs, vs);
    rec(B, "decode", names[c], "us_per_step", 1e6 * tc);
    rec(B, "decode", names[c], "GB/s", step_bytes / tc * 1e-9);
    rec(B, "decode", names[c], "fraction_of_copy", of_copy);
    rec(B, "decode", names[c], "fraction_of_read",
        step_bytes / tc * 1e-9 / B->read_gbs);
    rec(B, "decode", names[c], "speedup_vs_mha", vs);
  }
  rounds_free(&R);
  for (int c = 0; c < NC; c++) {
    kv_rotation_destroy(&a[c].kv);
    rel(&a[c].q);
    rel(&a[c].o);
    rel(&a[c].lens);
  }
  printf("  (the byte ratio allows MQA/MHA = 8x and GQA-2/MHA = 4x; MiB/step "
         "= s*b*m*h_kv*(d_k+d_v))\n\n");
}

/* ------------------------------------------------------------ layer */

typedef struct layer_arg {
  clattn_layer *layer;
  clattn_kv_cache *cache;
  int n, dm, h, hkv, d;
  cl_mem x, y;
  /* projections alone */
  cl_mem wq, wk, wv, wo, pq, pk, pv, po;
  clattn_attn_desc ad;
} layer_arg;

static int run_layer_proj(bench *B, void *p) {
  layer_arg *a = p;
  cl_command_queue q = B->queue;
  size_t n = (size_t)a->n, dm = (size_t)a->dm;
  size_t nq = (size_t)a->h * a->d, nkv = (size_t)a->hkv * a->d;
  CKB(CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                   CLBlastTransposeNo, n, nq, dm, 1.0f, a->x, 0, dm, a->wq, 0,
                   nq, 0.0f, a->pq, 0, nq, &q, NULL));
  CKB(CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                   CLBlastTransposeNo, n, nkv, dm, 1.0f, a->x, 0, dm, a->wk, 0,
                   nkv, 0.0f, a->pk, 0, nkv, &q, NULL));
  CKB(CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                   CLBlastTransposeNo, n, nkv, dm, 1.0f, a->x, 0, dm, a->wv, 0,
                   nkv, 0.0f, a->pv, 0, nkv, &q, NULL));
  CKB(CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                   CLBlastTransposeNo, n, dm, nq, 1.0f, a->po, 0, nq, a->wo, 0,
                   dm, 0.0f, a->y, 0, dm, &q, NULL));
  return 0;
}

static int run_layer_core(bench *B, void *p) {
  layer_arg *a = p;
  clattn_status st =
      clattn_attention(B->ctx, &a->ad, a->pq, a->pk, a->pv, NULL, a->po, NULL);
  return st == CLATTN_OK ? 0 : (int)st;
}

static int run_layer_decode(bench *B, void *p) {
  layer_arg *a = p;
  clattn_status st = clattn_layer_decode(a->layer, a->cache, a->x, a->y, NULL);
  (void)B;
  return st == CLATTN_OK ? 0 : (int)st;
}

static void bench_layer(bench *B) {
  int n = B->quick ? 128 : 512, dm = 512, h = 8, d = 64;
  static const int hkvs[2] = {8, 2};
  static const char *names[2] = {"MHA (h_kv=8)", "GQA (h_kv=2)"};

  printf("== layer: b=1 n=%d d_model=%d h=%d d_k=d_v=%d f32, causal "
         "prefill (no cache) ==\n",
         n, dm, h, d);
  printf("  total = clattn_layer_prefill; proj = the same 4 CLBlast GEMMs "
         "alone; core = clattn_attention alone;\n  decode = "
         "clattn_layer_decode at cache length %d.. (cache hot: small)\n",
         n);
  printf("  %-13s %9s %9s %9s %7s %9s %8s %10s\n", "case", "total ms",
         "proj ms", "core ms", "proj %", "GFLOP/s", "core GF", "decode us");
  for (int c = 0; c < 2; c++) {
    layer_arg a;
    clattn_layer_desc ld = {.size = sizeof(clattn_layer_desc)};
    int hkv = hkvs[c];
    float wamp = 1.0f / sqrtf((float)dm);
    double tt, tp, tc, td, fproj, fcore;
    int steps = B->reps + 1;

    memset(&a, 0, sizeof a);
    a.n = n;
    a.dm = dm;
    a.h = h;
    a.hkv = hkv;
    a.d = d;
    memset(&ld, 0, sizeof ld);
    ld.size = sizeof ld;
    ld.d_model = dm;
    ld.heads_q = h;
    ld.heads_kv = hkv;
    ld.head_dim_k = d;
    ld.head_dim_v = d;
    a.wq = buf_random(B, (size_t)dm * h * d, wamp, 11);
    a.wk = buf_random(B, (size_t)dm * hkv * d, wamp, 12);
    a.wv = buf_random(B, (size_t)dm * hkv * d, wamp, 13);
    a.wo = buf_random(B, (size_t)h * d * dm, wamp, 14);
    a.x = buf_random(B, (size_t)n * dm, 1.0f, 15);
    a.y = buf_new(B, (size_t)n * dm * sizeof(float));
    a.pq = buf_new(B, (size_t)n * h * d * sizeof(float));
    a.pk = buf_new(B, (size_t)n * hkv * d * sizeof(float));
    a.pv = buf_new(B, (size_t)n * hkv * d * sizeof(float));
    a.po = buf_new(B, (size_t)n * h * d * sizeof(float));
    CKA(B, clattn_layer_create(B->ctx, &ld, a.wq, a.wk, a.wv, a.wo, &a.layer));
    a.ad = (clattn_attn_desc){.size = sizeof a.ad,
                              .batch = 1,
                              .n_q = n,
                              .n_kv = n,
                              .heads_q = h,
                              .heads_kv = hkv,
                              .head_dim_k = d,
                              .head_dim_v = d,
                              .dtype = CLATTN_F32,
                              .causal = 1};

    {
      layer_prefill pf = {a.layer, n, a.x, a.y};
      tt = time_median(B, layer_prefill_run, &pf, 1, B->reps);
    }
    if (tt < 0)
      die("clattn_layer_prefill failed: %s", clattn_ctx_errmsg(B->ctx));
    tp = time_median(B, run_layer_proj, &a, 1, B->reps);
    tc = time_median(B, run_layer_core, &a, 1, B->reps);
    if (tc < 0)
      die("clattn_attention failed: %s", clattn_ctx_errmsg(B->ctx));

    /* Decode: fill a cache with the prompt, then time single steps. */
    CKA(B, clattn_kv_cache_create(a.layer, 1, n + steps + 1, &a.cache));
    CKA(B, clattn_layer_prefill(a.layer, a.cache, 1, n, 1, a.x, a.y, NULL));
    /* The first row of x serves as the new token. */
    td = time_median(B, run_layer_decode, &a, 1, B->reps);
    if (td < 0)
      die("clattn_layer_decode failed: %s", clattn_ctx_errmsg(B->ctx));
    fproj =
        2.0 * n *
        ((double)dm * h * d + (double)dm * hkv * 2 * d + (double)h * d * dm);
    fcore = 2.0 * h * ((double)n * (n + 1) / 2.0) * (2.0 * d);
    printf("  %-13s %9.2f %9.2f %9.2f %6.0f%% %9.1f %8.1f %10.1f\n", names[c],
           1e3 * tt, 1e3 * tp, 1e3 * tc, 100.0 * tp / (tp + tc),
           (fproj + fcore) / tt * 1e-9, fcore / tc * 1e-9, 1e6 * td);
    rec(B, "layer", names[c], "prefill_ms", 1e3 * tt);
    rec(B, "layer", names[c], "proj_ms", 1e3 * tp);
    rec(B, "layer", names[c], "core_ms", 1e3 * tc);
    rec(B, "layer", names[c], "decode_us", 1e6 * td);

    clattn_kv_cache_destroy(a.cache);
    clattn_layer_destroy(a.layer);
    rel(&a.wq);
    rel(&a.wk);
    rel(&a.wv);
    rel(&a.wo);
    rel(&a.x);
    rel(&a.y);
    rel(&a.pq);
    rel(&a.pk);
    rel(&a.pv);
    rel(&a.po);
  }
  printf("  (proj %% = proj / (proj + core); GFLOP/s counts projections and "
         "core FLOPs over the total)\n\n");
}

/* ------------------------------------------------- CLBlast warm-up */

static void bench_warm_clblast(bench *B) {
  cl_mem a = buf_new(B, 64 * 64 * sizeof(float));
  cl_mem b = buf_new(B, 64 * 64 * sizeof(float));
  cl_mem c = buf_new(B, 64 * 64 * sizeof(float));
  cl_command_queue q = B->queue;
  double t0 = clattn__now();
  buf_fill(B, a, 64 * 64 * sizeof(float), 1.0f);
  buf_fill(B, b, 64 * 64 * sizeof(float), 1.0f);
  for (int tb = 0; tb < 2; tb++)
    CKB(CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                     tb ? CLBlastTransposeYes : CLBlastTransposeNo, 64, 64, 64,
                     1.0f, a, 0, 64, b, 0, 64, 0.0f, c, 0, 64, &q, NULL));
  /* The layer projects single rows (decode) with GEMV. */
  CKB(CLBlastSgemv(CLBlastLayoutRowMajor, CLBlastTransposeYes, 64, 64, 1.0f, a,
                   0, 64, b, 0, 1, 0.0f, c, 0, 1, &q, NULL));
  CK(clFinish(q));
  printf("CLBlast warm-up (SGEMM, SGEMV): %.1f s (its first calls build "
         "kernels, 20-50 s on PoCL with a\ncold ~/.cache/pocl; every figure "
         "below is measured after warm-up runs)\n\n",
         clattn__now() - t0);
  rel(&a);
  rel(&b);
  rel(&c);
}

/* ------------------------------------------------------------- main */

static void usage(FILE *f) {
  fprintf(f, "usage: clattn-bench [--device D] [--quick] [--reps N] "
             "[--json FILE]\n"
             "  --device D   device (\"P:D\", index or name substring; "
             "default $CLATTN_DEVICE, else the first)\n"
             "  --quick      small shapes (smoke run)\n"
             "  --reps N     timed runs per figure (median; default 5, "
             "quick 3)\n"
             "  --json FILE  also write every figure as JSON records\n"
             "  --only S     run only section S (prefill, decode, layer, "
             "talking-heads, hh,\n"
             "               switchhead or options; "
             "the ceilings always run)\n"
             "  the PyTorch peers: the venv of "
             "bench/peers/setup.sh BUILD_DIR,\n"
             "  or the Python named by $CLATTN_BENCH_PYTHON\n");
}

int main(int argc, char **argv) {
  bench B;
  const char *device = NULL, *only = NULL;
  memset(&B, 0, sizeof B);
  B.reps = -1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      device = argv[++i];
    } else if (strcmp(argv[i], "--quick") == 0) {
      B.quick = 1;
    } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      char *end;
      long r = strtol(argv[++i], &end, 10);
      if (*end != '\0' || r < 1 || r > 10000) {
        usage(stderr);
        return 2;
      }
      B.reps = (int)r;
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
      if (strcmp(only, "prefill") != 0 && strcmp(only, "decode") != 0 &&
          strcmp(only, "layer") != 0 && strcmp(only, "talking-heads") != 0 &&
          strcmp(only, "hh") != 0 && strcmp(only, "switchhead") != 0 &&
          strcmp(only, "options") != 0) {
        usage(stderr);
        return 2;
      }
    } else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      B.json_path = argv[++i];
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (B.reps < 0)
    B.reps = B.quick ? 3 : 5;
  setvbuf(stdout, NULL, _IOLBF, 0); /* progress shows when redirected */
  g_bench = &B;

  bench_init(&B, device);
  print_device(&B);
  print_load("at start (other processes skew every figure)");
#define RUN(sec) (only == NULL || strcmp(only, sec) == 0)
  if (RUN("prefill") || RUN("layer") || RUN("talking-heads") || RUN("hh") ||
      RUN("switchhead"))
    bench_warm_clblast(&B);
  bench_ceilings(&B);
  if (RUN("prefill"))
    bench_prefill(&B);
  if (RUN("decode"))
    bench_decode(&B);
  if (RUN("layer"))
    bench_layer(&B);
  if (RUN("talking-heads"))
    bench_talking_heads(&B);
  if (RUN("hh"))
    bench_hh(&B);
  if (RUN("switchhead"))
    bench_switchhead(&B);
  if (RUN("options"))
    bench_options(&B);
#undef RUN
  print_load("at end");

  if (B.json_path != NULL) {
    FILE *f = fopen(B.json_path, "w");
    if (f == NULL)
      die("cannot open %s for writing", B.json_path);
    fprintf(f, "[\n");
    for (size_t i = 0; i < B.nrecs; i++)
      fprintf(f, "  %s%s\n", B.recs[i], i + 1 < B.nrecs ? "," : "");
    fprintf(f, "]\n");
    if (fclose(f) != 0)
      die("error writing %s", B.json_path);
  }
  bench_cleanup(&B);
  return 0;
}
