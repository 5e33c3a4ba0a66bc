/* tune_gemm.c - clattn-bench-gemm: CLBlast's Xgemm tuned for the layers'
 * projection shapes, against CLBlast's defaults, measured in one run.
 *
 * Layer: d_model 512, 8 heads of 64 (MHA), causal prefill of n = 512
 * positions, batch 1 and 4: its four projections are row-major GEMMs of
 * m = batch*n = 512 and 2048 rows, n = k = 512; 1024^3 as well.
 *  1. CLBlast's defaults (nothing overridden yet in this process): GEMM
 *     GFLOP/s per shape; the layer's time, its four projection GEMMs and
 *     clattn_attention alone (the core) at the layer's shapes.
 *  2. clattn_tune_gemm per shape, the budget (--budget s) shared out.
 *  3. A new context applies the database's entry (as a context with
 *     clattn_ctx_opts.clblast_override does before its layers' first GEMM)
 *     and the same figures are measured.
 * Times: one warm-up (it builds the kernels), then the median of --reps.
 * The database: --db PATH, else $CLATTN_DB, else /tmp/clattn-gemm.db. */
#include "clattn_tools.h"

#include <clblast_c.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define D_MODEL 512
#define HEADS 8
#define HEAD_DIM 64
#define SEQ 512
#define NSHAPES 3

static const int shapes[NSHAPES][3] = {
    {2048, 512, 512}, {512, 512, 512}, {1024, 1024, 1024}};
static const int batches[2] = {1, 4};

static int reps = 5;

static void die(const char *what, clattn_ctx *ctx) {
  fprintf(stderr, "clattn-bench-gemm: %s: %s\n", what, clattn_ctx_errmsg(ctx));
  exit(1);
}

static cl_mem buffer(clattn_ctx *ctx, size_t floats, unsigned seed) {
  cl_int err;
  float *h = malloc(floats * sizeof *h);
  if (h == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  unsigned s = seed * 2654435761u + 1;
  for (size_t i = 0; i < floats; i++) {
    s = s * 1664525u + 1013904223u;
    h[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 0.1f;
  }
  cl_mem m = clCreateBuffer(clattn_ctx_cl_context(ctx),
                            CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            floats * sizeof *h, h, &err);
  free(h);
  if (err != CL_SUCCESS) {
    fprintf(stderr, "clCreateBuffer: %d\n", (int)err);
    exit(1);
  }
  return m;
}

/* What one timed action needs. */
typedef struct work {
  clattn_ctx *ctx;
  int m, n, k; /* GEMM */
  cl_mem a, b, c;
  clattn_layer *layer; /* layer prefill, its projections, its core */
  int batch;
  cl_mem x, y, q, kk, v, o, w;
} work;

static int one_gemm(clattn_ctx *ctx, int m, int n, int k, cl_mem a, cl_mem b,
                    cl_mem c) {
  cl_command_queue q = clattn_ctx_queue(ctx);
  return CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                      CLBlastTransposeNo, (size_t)m, (size_t)n, (size_t)k, 1.0f,
                      a, 0, (size_t)k, b, 0, (size_t)n, 0.0f, c, 0, (size_t)n,
                      &q, NULL) == CLBlastSuccess;
}

static int run_gemm(work *w) {
  return one_gemm(w->ctx, w->m, w->n, w->k, w->a, w->b, w->c);
}

/* The layer's four projections as layer.c issues them (MHA, D=512). */
static int run_proj(work *w) {
  int rows = w->batch * SEQ;
  return one_gemm(w->ctx, rows, D_MODEL, D_MODEL, w->x, w->w, w->q) &&
         one_gemm(w->ctx, rows, D_MODEL, D_MODEL, w->x, w->w, w->kk) &&
         one_gemm(w->ctx, rows, D_MODEL, D_MODEL, w->x, w->w, w->v) &&
         one_gemm(w->ctx, rows, D_MODEL, D_MODEL, w->o, w->w, w->y);
}

static clattn_attn_desc core_desc(int batch) {
  clattn_attn_desc d = {.size = sizeof(clattn_attn_desc)};
  d.batch = batch;
  d.n_q = d.n_kv = SEQ;
  d.heads_q = d.heads_kv = HEADS;
  d.head_dim_k = d.head_dim_v = HEAD_DIM;
  d.dtype = CLATTN_F32;
  d.causal = 1;
  return d;
}

static int run_core(work *w) {
  clattn_attn_desc d = core_desc(w->batch);
  return clattn_attention(w->ctx, &d, w->q, w->kk, w->v, NULL, w->o, NULL) ==
         CLATTN_OK;
}

static int run_layer(work *w) {
  return clattn_layer_prefill(w->layer, NULL, w->batch, SEQ, 1, w->x, w->y,
                              NULL) == CLATTN_OK;
}

/* Warm-up, then the median of reps runs (seconds). */
static double timed(work *w, int (*fn)(work *), const char *what) {
  double t[64];
  int n = reps < 64 ? reps : 64;
  if (!fn(w) || clFinish(clattn_ctx_queue(w->ctx)) != CL_SUCCESS)
    die(what, w->ctx);
  for (int i = 0; i < n; i++) {
    double t0 = clattn__now();
    if (!fn(w) || clFinish(clattn_ctx_queue(w->ctx)) != CL_SUCCESS)
      die(what, w->ctx);
    t[i] = clattn__now() - t0;
  }
  return clattn__median(t, n);
}

typedef struct figures {
  double gemm_s[NSHAPES];
  double layer_s[2], proj_s[2], core_s[2];
} figures;

static clattn_ctx *new_ctx(const char *db, int tuned) {
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  clattn_ctx *ctx = NULL;
  o.tuning_db = db;
  o.no_tuning = !tuned;
  o.clblast_override = tuned; /* the tuned CLBlast is what is measured */
  if (clattn_ctx_create(&o, &ctx) != CLATTN_OK)
    die("clattn_ctx_create", NULL);
  return ctx;
}

static void measure(clattn_ctx *ctx, figures *f) {
  work w;
  memset(&w, 0, sizeof w);
  w.ctx = ctx;
  size_t big = (size_t)4 * SEQ * D_MODEL, wsz = (size_t)D_MODEL * D_MODEL;
  w.x = buffer(ctx, big, 1);
  w.y = buffer(ctx, big, 2);
  w.q = buffer(ctx, big, 3);
  w.kk = buffer(ctx, big, 4);
  w.v = buffer(ctx, big, 5);
  w.o = buffer(ctx, big, 6);
  w.w = buffer(ctx, wsz, 7);
  clattn_layer_desc ld = {.size = sizeof(clattn_layer_desc),
                          .d_model = D_MODEL,
                          .heads_q = HEADS,
                          .heads_kv = HEADS,
                          .head_dim_k = HEAD_DIM,
                          .head_dim_v = HEAD_DIM,
                          .scale = 0};
  if (clattn_layer_create(ctx, &ld, w.w, w.w, w.w, w.w, &w.layer) != CLATTN_OK)
    die("clattn_layer_create", ctx);
  char why[640];
  if (clattn_explain_gemm(ctx, why, sizeof why) != CLATTN_OK)
    die("clattn_explain_gemm", ctx);
  printf("  GEMM parameters: %s\n", why);
  for (int i = 0; i < NSHAPES; i++) {
    w.m = shapes[i][0];
    w.n = shapes[i][1];
    w.k = shapes[i][2];
    w.a = buffer(ctx, (size_t)w.m * w.k, 8);
    w.b = buffer(ctx, (size_t)w.k * w.n, 9);
    w.c = buffer(ctx, (size_t)w.m * w.n, 10);
    f->gemm_s[i] = timed(&w, run_gemm, "CLBlastSgemm");
    clReleaseMemObject(w.a);
    clReleaseMemObject(w.b);
    clReleaseMemObject(w.c);
  }
  for (int j = 0; j < 2; j++) {
    w.batch = batches[j];
    f->layer_s[j] = timed(&w, run_layer, "clattn_layer_prefill");
    f->proj_s[j] = timed(&w, run_proj, "projections");
    f->core_s[j] = timed(&w, run_core, "clattn_attention");
  }
  clattn_layer_destroy(w.layer);
  cl_mem all[7] = {w.x, w.y, w.q, w.kk, w.v, w.o, w.w};
  for (int i = 0; i < 7; i++)
    clReleaseMemObject(all[i]);
}

int main(int argc, char **argv) {
  double budget = 600;
  const char *path = getenv("CLATTN_DB");
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--budget") == 0 && i + 1 < argc)
      budget = atof(argv[++i]);
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
      path = argv[++i];
    else {
      fprintf(stderr,
              "usage: clattn-bench-gemm [--budget s] [--reps n] [--db path]\n");
      return 2;
    }
  }
  if (path == NULL || *path == '\0')
    path = "/tmp/clattn-gemm.db";
  if (reps < 1)
    reps = 1;

  figures def, tun;
  printf("clattn-bench-gemm: database %s, budget %.0f s, %d reps\n", path,
         budget, reps);
  printf("1. CLBlast's defaults\n");
  clattn_ctx *ctx = new_ctx(path, 0);
  measure(ctx, &def);

  printf("2. tuning (clattn_tune_gemm)\n");
  clattn_db *db = NULL;
  if (clattn_db_open(path, &db) != CLATTN_OK) {
    fprintf(stderr, "clattn_db_open: %s\n", clattn_db_errmsg(NULL));
    return 1;
  }
  double t0 = clattn__now(), own_best[NSHAPES];
  for (int i = 0; i < NSHAPES; i++) {
    clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
    clattn_tune_result r = {.size = sizeof(clattn_tune_result)};
    double left = budget - (clattn__now() - t0);
    o.budget_s = left > 1 ? left / (NSHAPES - i) : 1;
    o.repeats = reps;
    if (clattn_tune_gemm(ctx, db, shapes[i][0], shapes[i][1], shapes[i][2], &o,
                         &r) != CLATTN_OK)
      die("clattn_tune_gemm", ctx);
    own_best[i] = r.best_s;
    printf("  m%d n%d k%d: space %d (%d pruned), %d measured, %d reused, "
           "%d rejected, stopped: %s, %.0f s; best %.3g ms: %s\n",
           shapes[i][0], shapes[i][1], shapes[i][2], r.space, r.pruned,
           r.measured, r.reused, r.rejected, r.stopped ? r.stopped : "?",
           r.elapsed_s, r.best_s * 1e3, r.best_params);
  }
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);

  printf("3. a new context with the database\n");
  ctx = new_ctx(path, 1);
  measure(ctx, &tun);
  clattn_ctx_destroy(ctx);

  printf("\nGEMM (row-major, as the layers call it)       GFLOP/s\n");
  printf("  %-18s %9s %9s %7s %14s\n", "m x n x k", "defaults", "applied",
         "ratio", "own best/ratio");
  for (int i = 0; i < NSHAPES; i++) {
    double fl = 2.0 * shapes[i][0] * (double)shapes[i][1] * shapes[i][2];
    double gd = fl / def.gemm_s[i] * 1e-9, gt = fl / tun.gemm_s[i] * 1e-9;
    double go = own_best[i] > 0 ? fl / own_best[i] * 1e-9 : 0;
    char s[32];
    snprintf(s, sizeof s, "%dx%dx%d", shapes[i][0], shapes[i][1], shapes[i][2]);
    printf("  %-18s %9.1f %9.1f %6.2fx %8.1f/%.2fx\n", s, gd, gt, gt / gd, go,
           go / gd);
  }
  printf("\nLayer prefill (D=512, 8x64 heads, n=512, causal), ms\n");
  printf("  %-6s %-9s %8s %8s %8s %10s %12s\n", "batch", "params", "layer",
         "4 GEMMs", "core", "GEMM share", "core share");
  for (int j = 0; j < 2; j++)
    for (int t = 0; t < 2; t++) {
      const figures *f = t ? &tun : &def;
      printf("  %-6d %-9s %8.2f %8.2f %8.2f %9.0f%% %11.0f%%\n", batches[j],
             t ? "tuned" : "defaults", f->layer_s[j] * 1e3, f->proj_s[j] * 1e3,
             f->core_s[j] * 1e3, 100.0 * f->proj_s[j] / f->layer_s[j],
             100.0 * f->core_s[j] / f->layer_s[j]);
    }
  return 0;
}
