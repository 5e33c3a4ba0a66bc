/* test_bench.c - clattn_bench_shape on the default device: the rows of a
 * small odd prefill shape and a decode shape (clattn's and the baselines'),
 * their figures against the model and the reference, the rows stored
 * equal to the returned ones, and the errors of bad arguments. */
#include "clattn_tools.h"
#include "tmpdir.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rows of one clattn_bench_shape. */
typedef struct bench_rows {
  clattn_bench_entry rows[CLATTN_BENCH_MAX_IMPLS];
  int n;
} bench_rows;

static char tmp_dir[256];
static clattn_ctx *ctx;
static clattn_db *db;
static clattn_profile prof;

/* A tmp database holding a measured profile of the device (made up
 * ceilings: the bench predicts against whatever profile is stored). */
static void setup(void) {
  char path[512];
  tt_mkdtemp(tmp_dir, sizeof tmp_dir, "bench");
  snprintf(path, sizeof path, "%s/bench.db", tmp_dir);
  ctx = tu_ctx();
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK, "%s",
               clattn_db_errmsg(NULL));
  prof.size = sizeof prof;
  cr_assert_eq(clattn_profile_reported(ctx, &prof), CLATTN_OK);
  prof.source = CLATTN_PROFILE_MEASURED;
  prof.probe_method = CLATTN_PROBE_METHOD;
  prof.bw_read_gbs = prof.bw_copy_gbs = prof.bw_triad_gbs = 20.0;
  prof.fp32_gflops = 200.0;
  prof.launch_us = prof.launch_pipelined_us = 10.0;
  cr_assert_eq(clattn_db_put_profile(db, &prof), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
}

static void teardown(void) {
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
  tt_rm_rf(tmp_dir);
}

TestSuite(bench, .init = setup, .fini = teardown, .timeout = 120);

static int valid_source(const char *s) {
  for (int i = 0; i < 16; i++) {
    const char *name = clattn_choice_source_str((clattn_choice_source)i);
    if (name && strcmp(name, "unknown") != 0 && strcmp(name, s) == 0)
      return 1;
  }
  return 0;
}

/* FLOPs of an attention call, from its shape alone (variants.md section
 * 2.3: F_core = 2 B H A (d_k + d_v), A the valid (query, key) pairs of a
 * sequence and head: N M, or causal, with P = M - N keys before the first
 * query, N P + N (N + 1) / 2; a decode is N = 1). */
static double attention_flops(int batch, int heads, int n, int m, int dk,
                              int dv, int causal) {
  const double p = m - n;
  const double pairs =
      causal ? n * p + (double)n * (n + 1) / 2.0 : (double)n * m;
  return 2.0 * batch * heads * pairs * (dk + dv);
}

/* Bench family/shape; check the rows against the model, the FLOPs the
 * shape does (flops) and the stored rows; return the result. */
static bench_rows bench_ok(const char *family, const char *shape,
                           const char *run, double flops) {
  bench_rows r;
  clattn_bench_opts o = {
      .size = sizeof(clattn_bench_opts), .repeats = 3, .run = run};
  cr_assert_eq(clattn_bench_shape(ctx, db, family, shape, &o, sizeof r.rows[0],
                                  r.rows, &r.n),
               CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  cr_assert_geq(r.n, 2, "clattn and at least copy");
  cr_expect_str_eq(r.rows[0].impl, "clattn");
  cr_expect_str_eq(r.rows[r.n - 1].impl, "copy");

  clattn_prediction pred = {.size = sizeof(clattn_prediction)};
  cr_assert_eq(clattn_model_shape(family, shape, NULL, &prof, &pred), CLATTN_OK,
               "%s", pred.errmsg);
  const clattn_dtype dt = strstr(shape, "f16") ? CLATTN_F16 : CLATTN_F32;
  const clattn_bench_entry *c = &r.rows[0];
  cr_expect_eq(c->flops, pred.total.flops, "flops %g, model %g", c->flops,
               pred.total.flops);
  cr_expect_eq(c->flops, flops, "flops %g, the shape's %g", c->flops, flops);
  cr_expect_gt(c->median_s, 0);
  cr_expect_gt(c->roof_s, 0);
  cr_expect_gt(c->predicted_s, 0);
  cr_expect_gt(c->bytes, 0);
  cr_expect_lt(c->max_err, dt == CLATTN_F32 ? 1e-4 : 1e-2, "max_err %g",
               c->max_err);
  cr_expect(valid_source(c->params_source), "params source \"%s\"",
            c->params_source);
  cr_expect_neq(c->params[0], '\0', "the resolved params");
  cr_expect_str_eq(c->family, family);
  cr_expect_str_eq(c->shape, shape);
  cr_expect_str_eq(c->fingerprint, prof.fingerprint);
  cr_expect_str_eq(c->run, run);
  /* copy moves the call's compulsory bytes, at least 1 MiB each way: the
   * shapes here need less; its roof is the profile's copy bandwidth */
  const clattn_bench_entry *copy = &r.rows[r.n - 1];
  cr_assert_lt(pred.total.bytes_compulsory, 2.0 * (1 << 20));
  cr_expect_gt(copy->median_s, 0);
  cr_expect_eq(copy->bytes, 2.0 * (1 << 20), "copy bytes %g", copy->bytes);
  cr_expect_eq(copy->flops, 0);
  cr_expect_float_eq(copy->roof_s, copy->bytes / (prof.bw_copy_gbs * 1e9),
                     1e-12, "copy roof %g s", copy->roof_s);
  cr_expect_str_eq(copy->bound, "memory");
  for (int i = 1; i < r.n; i++) {
    cr_expect_str_eq(r.rows[i].params, "");
    cr_expect_eq(r.rows[i].predicted_s, 0);
    cr_expect_str_eq(r.rows[i].run, run);
  }

  /* stored: exactly these rows */
  clattn_bench_entry *rows = NULL;
  int n = 0;
  cr_assert_eq(clattn_db_list_bench(db, prof.fingerprint, family, sizeof *rows,
                                    &rows, &n),
               CLATTN_OK);
  int matched = 0;
  for (int i = 0; i < r.n; i++)
    for (int j = 0; j < n; j++)
      if (strcmp(rows[j].impl, r.rows[i].impl) == 0 &&
          strcmp(rows[j].shape, shape) == 0 && strcmp(rows[j].run, run) == 0) {
        cr_expect_eq(memcmp(&rows[j], &r.rows[i], sizeof rows[j]), 0,
                     "stored row %s equals the returned one", rows[j].impl);
        matched++;
      }
  cr_expect_eq(matched, r.n);
  clattn_free(rows);
  return r;
}

Test(bench, prefill_odd_shape_with_unfused) {
  const char *shape = "batch=2 seq=37 kv-seq=53 heads=4 kv-heads=2 "
                      "head-dim=24 causal=1";
  const double flops = attention_flops(2, 4, 37, 53, 24, 24, 1);
  bench_rows r = bench_ok("prefill", shape, "test run 1", flops);
  cr_assert_eq(r.n, 3, "clattn, unfused, copy");
  cr_expect_str_eq(r.rows[1].impl, "unfused");
  cr_expect_lt(r.rows[1].max_err, 1e-4, "unfused against clattn: %g",
               r.rows[1].max_err);
  cr_expect_eq(r.rows[1].flops, flops, "unfused flops %g, the shape's %g",
               r.rows[1].flops, flops);
  cr_expect_gt(r.rows[1].median_s, 0);
}

Test(bench, decode_shape) {
  bench_rows r =
      bench_ok("decode", "batch=1 kv-seq=300 heads=4 kv-heads=1 head-dim=32",
               "test run 2", attention_flops(1, 4, 1, 300, 32, 32, 0));
  cr_expect_eq(r.n, 2, "clattn and copy");
}

Test(bench, no_baselines_and_no_db) {
  bench_rows r;
  clattn_bench_opts o = {
      .size = sizeof(clattn_bench_opts), .repeats = 2, .no_baselines = 1};
  const char *shape = "batch=1 kv-seq=64 heads=2 head-dim=16";
  cr_assert_eq(clattn_bench_shape(ctx, NULL, "decode", shape, &o,
                                  sizeof r.rows[0], r.rows, &r.n),
               CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  cr_expect_eq(r.n, 1);
  cr_expect_gt(r.rows[0].median_s, 0);
  cr_expect_eq(r.rows[0].roof_s, 0, "no database: no measured profile");
  cr_expect_gt(strlen(r.rows[0].run), 20, "a default run name: %s",
               r.rows[0].run);
  /* no_store: the database's profile, nothing stored */
  o.no_store = 1;
  cr_assert_eq(clattn_bench_shape(ctx, db, "decode", shape, &o,
                                  sizeof r.rows[0], r.rows, &r.n),
               CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  cr_expect_gt(r.rows[0].roof_s, 0, "the stored profile's roofline");
  clattn_bench_entry *rows = NULL;
  int n = -1;
  cr_assert_eq(clattn_db_list_bench(db, NULL, NULL, sizeof *rows, &rows, &n),
               CLATTN_OK);
  cr_expect_eq(n, 0, "db NULL or no_store: nothing stored");
  clattn_free(rows);
}

Test(bench, errors) {
  bench_rows r;
  clattn_bench_opts o = {.size = sizeof(clattn_bench_opts), .repeats = 0};
  const char *ok = "batch=1 kv-seq=64 heads=2 head-dim=16";
  cr_expect_eq(clattn_bench_shape(ctx, db, "nosuch", ok, &o, sizeof r.rows[0],
                                  r.rows, &r.n),
               CLATTN_ERR_INVALID_ARG);
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "nosuch") != NULL, "%s",
            clattn_ctx_errmsg(ctx));
  cr_expect_eq(clattn_bench_shape(ctx, db, "decode", "batch=1 bogus=3", &o,
                                  sizeof r.rows[0], r.rows, &r.n),
               CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_bench_shape(ctx, db, "decode", NULL, &o, sizeof r.rows[0],
                                  r.rows, &r.n),
               CLATTN_ERR_INVALID_ARG);
  char long_shape[400];
  snprintf(long_shape, sizeof long_shape, "%s%300s", ok, "");
  cr_expect_eq(clattn_bench_shape(ctx, db, "decode", long_shape, &o,
                                  sizeof r.rows[0], r.rows, &r.n),
               CLATTN_ERR_INVALID_ARG, "a shape text longer than a row's");
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "at most") != NULL, "%s",
            clattn_ctx_errmsg(ctx));
  cr_expect_eq(clattn_bench_shape(ctx, db, "decode", ok, &o, sizeof r.rows[0],
                                  NULL, &r.n),
               CLATTN_ERR_INVALID_ARG);
  o.repeats = -1;
  cr_expect_eq(clattn_bench_shape(ctx, db, "decode", ok, &o, sizeof r.rows[0],
                                  r.rows, &r.n),
               CLATTN_ERR_INVALID_ARG);
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "repeats") != NULL, "%s",
            clattn_ctx_errmsg(ctx));
  o.repeats = 1;
  o.run = "bad\nname";
  cr_expect_eq(clattn_bench_shape(ctx, db, "decode", ok, &o, sizeof r.rows[0],
                                  r.rows, &r.n),
               CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_bench_shape(NULL, db, "decode", ok, &o, sizeof r.rows[0],
                                  r.rows, &r.n),
               CLATTN_ERR_MISUSE, "a NULL context, as every call's");
  clattn_bench_entry *rows = NULL;
  int n = -1;
  cr_assert_eq(clattn_db_list_bench(db, NULL, NULL, sizeof *rows, &rows, &n),
               CLATTN_OK);
  cr_expect_eq(n, 0, "nothing stored by a failed bench");
  clattn_free(rows);
}

Test(bench, bench_shapes) {
  int decode = -1;
  for (int i = 0; i < clattn_family_count(); i++) {
    if (strcmp(clattn_family_name(i), "decode") == 0)
      decode = i;
    /* a family without bench shapes of its own benches its standard
     * ones; every family has one at least where it has standard ones */
    if (clattn_family_standard_shape(i, 0))
      cr_expect_not_null(clattn_family_bench_shape(i, 0), "%s",
                         clattn_family_name(i));
    /* every bench shape is a valid call of its family */
    for (int j = 0; clattn_family_bench_shape(i, j); j++) {
      clattn_prediction pred = {.size = sizeof(clattn_prediction)};
      const char *shape = clattn_family_bench_shape(i, j);
      cr_expect_eq(
          clattn_model_shape(clattn_family_name(i), shape, NULL, &prof, &pred),
          CLATTN_OK, "%s %s: %s", clattn_family_name(i), shape, pred.errmsg);
    }
  }
  cr_assert_geq(decode, 0);
  const char *trio[3] = {
      "batch=1 kv-seq=4096 heads=32 kv-heads=32 head-dim=128",
      "batch=1 kv-seq=4096 heads=32 kv-heads=8 head-dim=128",
      "batch=1 kv-seq=4096 heads=32 kv-heads=1 head-dim=128"};
  for (int k = 0; k < 3; k++) {
    int found = 0;
    for (int j = 0; clattn_family_bench_shape(decode, j); j++)
      found |= strcmp(clattn_family_bench_shape(decode, j), trio[k]) == 0;
    cr_expect(found, "decode benches %s", trio[k]);
  }
  cr_expect_null(clattn_family_bench_shape(decode, -1));
  cr_expect_null(clattn_family_bench_shape(-1, 0));
  cr_expect_null(clattn_family_bench_shape(clattn_family_count(), 0));
}
