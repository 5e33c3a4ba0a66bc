/* test_tune_gemm.c - CLBlast Xgemm tuning (host/src/tune_gemm.c).
 *
 * The space is checked candidate by candidate against CLBlast's tuner
 * constraints (written out again here) and the device's limits; a
 * candidate that breaks them computes a wrong GEMM and must not come out
 * "ok"; a tiny tuning run (two candidates, m=64 n=96 k=80 forced through
 * the indirect Xgemm path) stores its entries; a new context's layer
 * applies the best one with the opt-in (clattn_ctx_opts.clblast_override)
 * and runs the own GEMM kernel where it covers the projections without
 * it, and matches the plain-C reference either way.
 * Each new Xgemm candidate builds CLBlast's GEMM program: 20-50 s with a
 * cold PoCL cache, under a second with a warm one.
 */
#include "db/db.h"
#include "runtime/runtime.h"
#include "tune/tune_gemm.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
  GEMMK,
  KREG,
  KWG,
  KWI,
  MDIMA,
  MDIMC,
  MWG,
  NDIMB,
  NDIMC,
  NWG,
  SA,
  SB,
  STRM,
  STRN,
  VWM,
  VWN
};

static const char *const names[16] = {
    "GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB",
    "NDIMC", "NWG",  "SA",  "SB",  "STRM",  "STRN",  "VWM", "VWN"};

/* CLBlast's constraints (src/tuning/kernels/xgemm.hpp), independently. */
static int clblast_ok(const int *v, const clattn_ctx *ctx, char *why,
                      size_t cap) {
#define RULE(cond, text)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      snprintf(why, cap, "%s", text);                                          \
      return 0;                                                                \
    }                                                                          \
  } while (0)
  RULE(v[KWG] % v[KWI] == 0, "KWG % KWI");
  RULE(v[MWG] % (v[MDIMC] * v[VWM]) == 0, "MWG % (MDIMC*VWM)");
  RULE(v[NWG] % (v[NDIMC] * v[VWN]) == 0, "NWG % (NDIMC*VWN)");
  RULE(v[MWG] % (v[MDIMA] * v[VWM]) == 0, "MWG % (MDIMA*VWM)");
  RULE(v[NWG] % (v[NDIMB] * v[VWN]) == 0, "NWG % (NDIMB*VWN)");
  if (v[GEMMK] == 0) {
    RULE(v[KWG] % ((v[MDIMC] * v[NDIMC]) / v[MDIMA]) == 0, "KWG % KDIMA");
    RULE(v[KWG] % ((v[MDIMC] * v[NDIMC]) / v[NDIMB]) == 0, "KWG % KDIMB");
  } else {
    RULE(v[GEMMK] == 1, "GEMMK is 0 or 1");
    RULE(v[KREG] % v[VWN] == 0, "KREG % VWN");
    RULE(v[MDIMC] == v[MDIMA] && v[NDIMC] == v[NDIMB], "kernel 1 DIMs");
    /* clattn's own rule: K is padded to KWG and walked KREG at a time */
    RULE(v[KWG] % v[KREG] == 0, "KWG % KREG");
  }
  RULE((size_t)v[MDIMC] * v[NDIMC] <= ctx->dev.max_wg, "work-group size");
  RULE((size_t)v[MDIMC] <= ctx->dev.max_item[0] &&
           (size_t)v[NDIMC] <= ctx->dev.max_item[1],
       "work-item sizes");
  RULE(4ull * ((unsigned long long)v[SA] * v[KWG] * v[MWG] +
               (unsigned long long)v[SB] * v[KWG] * v[NWG]) <=
           ctx->dev.local_mem,
       "local memory");
  RULE(v[SA] <= 1 && v[SB] <= 1 && v[STRM] <= 1 && v[STRN] <= 1,
       "flags are 0 or 1");
#undef RULE
  return 1;
}

Test(tune_gemm, space_respects_constraints, .timeout = 120) {
  clattn_ctx *ctx = tu_ctx();
  clattn__space s;
  clattn_status st = clattn__xgemm_space(ctx, &s);
  cr_assert(st == CLATTN_OK, "space: %s", clattn_ctx_errmsg(ctx));
  cr_assert_eq(s.ndims, 16);
  for (int d = 0; d < 16; d++)
    cr_assert_str_eq(s.dim[d], names[d]);
  cr_assert_gt(s.n, 0);
  cr_log_info("Xgemm space on %s: %d candidates, %d pruned", ctx->dev.name, s.n,
              s.pruned);
  for (int i = 0; i < s.n; i++) {
    const int *v = s.val + (size_t)i * 16;
    char why[64] = "", text[256];
    clattn__space_format(&s, i, text, sizeof text);
    cr_expect(clblast_ok(v, ctx, why, sizeof why), "candidate %d (%s): %s", i,
              text, why);
    cr_expect(clattn__xgemm_valid(ctx, v, NULL, 0), "candidate %d (%s)", i,
              text);
  }
  /* The validity function rejects what CLBlast's rules reject. */
  int bad[16] = {1, 4, 1, 1, 4, 4, 48, 4, 4, 64, 0, 0, 0, 0, 8, 4};
  char why[128] = "";
  cr_expect(!clattn__xgemm_valid(ctx, bad, why, sizeof why));
  cr_expect(strstr(why, "MWG") != NULL, "why: %s", why);
  bad[MWG] = 64;
  bad[KREG] = 2; /* KREG not a multiple of VWN */
  cr_expect(!clattn__xgemm_valid(ctx, bad, NULL, 0));
  bad[KREG] = 4;
  bad[SA] = 1;
  bad[KWG] = 1 << 12; /* a 1 MiB A tile: beyond 32 KiB-class devices */
  if (4ull * bad[KWG] * bad[MWG] > ctx->dev.local_mem)
    cr_expect(!clattn__xgemm_valid(ctx, bad, NULL, 0));
  clattn__space_free(&s);
  clattn_ctx_destroy(ctx);
}

/* Kernel 1 with MWG=64, NWG=32 satisfies CLBlast's rules but computed
 * wrong results on PoCL (the space leaves it out on CPUs); with KWG=1 <
 * KREG it also reads past K.  Either way the check must catch it.  (A
 * candidate breaking CLBlast's MWG rule, MWG=48 with MDIMC*VWM=32, wrote
 * out of bounds and corrupted the heap on PoCL: such candidates never
 * reach the device.) */
Test(tune_gemm, wrong_candidate_is_not_ok, .timeout = 300) {
  clattn_ctx *ctx = tu_ctx();
  int v[16] = {1, 8, 8, 1, 4, 4, 64, 4, 4, 32, 0, 0, 0, 0, 4, 4};
  clattn_tune_entry e = {.size = sizeof(clattn_tune_entry)};
  if (!(ctx->dev.type & CL_DEVICE_TYPE_CPU))
    v[KWG] = 1; /* elsewhere kernel 1 may be right with NWG != MWG */
  if (v[KWG] == 1)
    cr_assert(!clattn__xgemm_valid(ctx, v, NULL, 0));
  clattn_status st = clattn__xgemm_eval(ctx, 64, 96, 80, v, 3, &e);
  cr_assert(st == CLATTN_OK, "eval: %s", clattn_ctx_errmsg(ctx));
  cr_log_info("wrong candidate: %s, max_err %g: %s", e.status, e.max_err,
              e.message);
  cr_expect_str_neq(e.status, "ok");
  cr_expect(strcmp(e.status, "wrong") == 0 || strcmp(e.status, "failed") == 0,
            "status %s", e.status);
  if (strcmp(e.status, "wrong") == 0)
    cr_expect_gt(e.max_err, 1e-4);
  /* CLBlast is left on XgemmDirect, whose GEMMs are still right. */
  char buf[640];
  cr_assert(clattn_explain_gemm(ctx, buf, sizeof buf) == CLATTN_OK);
  cr_expect(strstr(buf, "XgemmDirect only") != NULL, "%s", buf);
  clattn_ctx_destroy(ctx);
}

/* A layer whose x*w_q and o*w_o GEMMs are exactly the tuned class. */
#define B 2
#define N 32
#define D 80
#define HQ 6
#define HKV 2
#define DK 16

static clattn_ctx *ctx_with_db(const char *path, int clblast_override) {
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  clattn_ctx *ctx = NULL;
  o.tuning_db = path;
  o.clblast_override = clblast_override;
  clattn_status st = clattn_ctx_create(&o, &ctx);
  cr_assert(st == CLATTN_OK, "ctx: %s", clattn_ctx_errmsg(NULL));
  return ctx;
}

/* A layer on ctx whose x*w_q GEMM is the tuned class: its causal prefill
 * against the reference; *ch: the choice of its last call (the output
 * projection); buf: clattn_explain_gemm after the layer's create. */
static void layer_prefill(clattn_ctx *ctx, const char *what, clattn_choice *ch,
                          char *buf, size_t cap) {
  size_t nq = (size_t)D * HQ * DK, nk = (size_t)D * HKV * DK,
         no = (size_t)HQ * DK * D, nx = (size_t)B * N * D;
  float *wq = tu_alloc(nq * 4), *wk = tu_alloc(nk * 4), *wv = tu_alloc(nk * 4),
        *wo = tu_alloc(no * 4), *x = tu_alloc(nx * 4), *y = tu_alloc(nx * 4),
        *yref = tu_alloc(nx * 4);
  tu_rng g = tu_rng_seed(7);
  tu_fill(&g, wq, nq, 1.7f / sqrtf((float)D));
  tu_fill(&g, wk, nk, 1.7f / sqrtf((float)D));
  tu_fill(&g, wv, nk, 1.7f / sqrtf((float)D));
  tu_fill(&g, wo, no, 1.7f / sqrtf((float)(HQ * DK)));
  tu_fill(&g, x, nx, 1.0f);
  cl_mem dq = tu_upload(ctx, wq, nq, CLATTN_F32),
         dk = tu_upload(ctx, wk, nk, CLATTN_F32),
         dv = tu_upload(ctx, wv, nk, CLATTN_F32),
         dwo = tu_upload(ctx, wo, no, CLATTN_F32),
         dx = tu_upload(ctx, x, nx, CLATTN_F32),
         dy = tu_sentinel(ctx, nx, CLATTN_F32, 0xff);
  clattn_layer_desc ld = {.size = sizeof(clattn_layer_desc),
                          .d_model = D,
                          .heads_q = HQ,
                          .heads_kv = HKV,
                          .head_dim_k = DK,
                          .head_dim_v = DK,
                          .scale = 0};
  clattn_layer *layer = NULL;
  clattn_status st = clattn_layer_create(ctx, &ld, dq, dk, dv, dwo, &layer);
  cr_assert(st == CLATTN_OK, "layer: %s", clattn_ctx_errmsg(ctx));
  cr_assert(clattn_explain_gemm(ctx, buf, cap) == CLATTN_OK);
  cr_log_info("%s: %s", what, buf);
  st = clattn_layer_prefill(layer, NULL, B, N, 1, dx, dy, NULL);
  cr_assert(st == CLATTN_OK, "prefill: %s", clattn_ctx_errmsg(ctx));
  cr_assert_eq(clattn_ctx_last_choice(ctx, ch), CLATTN_OK);
  tu_download(ctx, dy, y, nx, CLATTN_F32);
  ref_layer(B, N, D, HQ, HKV, DK, DK, 1.0 / sqrt((double)DK), 1, x, wq, wk, wv,
            wo, yref);
  tu_check(what, y, yref, nx, clattn__tolerance(CLATTN_F32));
  clattn_layer_destroy(layer);
  cl_mem all[6] = {dq, dk, dv, dwo, dx, dy};
  for (int i = 0; i < 6; i++)
    tu_release(all[i]);
  free(wq);
  free(wk);
  free(wv);
  free(wo);
  free(x);
  free(y);
  free(yref);
}

Test(tune_gemm, tuned_entry_is_stored_and_applied, .timeout = 600) {
  char path[128];
  snprintf(path, sizeof path, "/tmp/clattn-test-tune-gemm-%ld.db",
           (long)getpid());
  unlink(path);
  clattn_db *db = NULL;
  cr_assert(clattn_db_open(path, &db) == CLATTN_OK, "%s",
            clattn_db_errmsg(NULL));

  /* Before any entry: CLBlast's defaults. */
  clattn_ctx *ctx = ctx_with_db(path, 0);
  char buf[640];
  cr_assert(clattn_explain_gemm(ctx, buf, sizeof buf) == CLATTN_OK);
  cr_expect(strncmp(buf, "CLBlast defaults: no tuning entry", 33) == 0, "%s",
            buf);
  char tiny[8];
  cr_expect(clattn_explain_gemm(ctx, tiny, sizeof tiny) ==
            CLATTN_ERR_BUFFER_TOO_SMALL);

  clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
  o.strategy = CLATTN_TUNE_EXHAUSTIVE;
  o.max_candidates = 2;
  o.repeats = 3;
  o.budget_s = 240;
  clattn_tune_result r = {.size = sizeof(clattn_tune_result)};
  clattn_status st = clattn_tune_gemm(ctx, db, 64, 96, 80, &o, &r);
  cr_assert(st == CLATTN_OK, "tune: %d %s", (int)st, clattn_ctx_errmsg(ctx));
  cr_log_info("tuned m64 n96 k80: best %s, %.3g ms, %d measured", r.best_params,
              r.best_s * 1e3, r.measured);
  cr_assert_gt(r.best_s, 0.0);
  cr_expect_str_eq(r.shape_class, "m64 n96 k80");

  clattn_tune_entry *rows = NULL;
  int n = 0, found = 0;
  cr_assert(clattn_db_list_tune(db, NULL, "clblast-xgemm", "m64 n96 k80",
                                sizeof *rows, &rows, &n) == CLATTN_OK);
  cr_expect_geq(n, 1);
  for (int i = 0; i < n; i++)
    if (strcmp(rows[i].status, "ok") == 0 &&
        strcmp(rows[i].params, r.best_params) == 0 &&
        fabs(rows[i].median_s - r.best_s) <= 1e-12)
      found = 1;
  cr_expect(found, "the best candidate is stored as ok");
  clattn_free(rows);
  /* The tuning context, without the opt-in, runs the own kernel where
   * the entry covers its projections; the tuning left CLBlast itself on
   * the entry, for the whole process. */
  cr_assert(clattn_explain_gemm(ctx, buf, sizeof buf) == CLATTN_OK);
  cr_expect(strstr(buf, "own GEMM kernel") != NULL, "%s", buf);
  cr_expect(strstr(buf, "tuned entry m64 n96 k80") != NULL, "%s", buf);
  cr_expect(strstr(buf, "set earlier: clblast-xgemm: tuned entry m64 n96 "
                        "k80") != NULL,
            "%s", buf);
  clattn_ctx_destroy(ctx);
  clattn_db_close(db);

  /* A new context with the opt-in applies it to its layer's CLBlast
   * GEMMs, and the layer stays right. */
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  ctx = ctx_with_db(path, 1);
  layer_prefill(ctx, "layer with tuned Xgemm", &ch, buf, sizeof buf);
  cr_expect(strstr(buf, "clblast-xgemm: tuned entry m64 n96 k80") != NULL, "%s",
            buf);
  cr_expect(strstr(buf, r.best_params) != NULL, "%s", buf);
  cr_expect(strstr(buf, "whole process") != NULL, "%s", buf);
  cr_expect_eq(tu_params(ch.resolved).scheme, 2, "%s", ch.why);
  clattn_ctx_destroy(ctx);

  /* Without it, the projections the entry covers run the own kernel, and
   * the layer stays right. */
  ctx = ctx_with_db(path, 0);
  layer_prefill(ctx, "layer, own kernel for the tuned range", &ch, buf,
                sizeof buf);
  cr_expect(strstr(buf, "own GEMM kernel") != NULL, "%s", buf);
  cr_expect(strstr(buf, "tuned entry m64 n96 k80") != NULL, "%s", buf);
  cr_expect_eq(tu_params(ch.resolved).scheme, 1, "%s", ch.why);
  clattn_ctx_destroy(ctx);

  /* Tuning off: no entry is applied. */
  setenv("CLATTN_NO_TUNING", "1", 1);
  ctx = ctx_with_db(path, 0);
  cr_assert(clattn_explain_gemm(ctx, buf, sizeof buf) == CLATTN_OK);
  cr_expect(strstr(buf, "tuning is off") != NULL, "%s", buf);
  clattn_ctx_destroy(ctx);
  unsetenv("CLATTN_NO_TUNING");
  /* a reader may leave SQLite's WAL files when no writer is left */
  static const char *const suffixes[] = {"", "-wal", "-shm"};
  for (int i = 0; i < 3; i++) {
    snprintf(buf, sizeof buf, "%s%s", path, suffixes[i]);
    unlink(buf);
  }
}
