/* test_calibration.c - the model's calibration is honest (docs/MODEL.md,
 * "Honest calibration"): its rates come from the probe's own micro-kernels,
 * and no kernel's measured time feeds its own prediction.
 *
 *  - probe_launches_only_its_micro_kernels: every kernel clattn_probe
 *    enqueues (clEnqueueNDRangeKernel wrapped at link time) is one of
 *    cl/probe.cl's, the in-core micro-kernels among them, and the profile
 *    holds each rate they measure.
 *  - measured_times_leave_predictions_alone: a database that holds, for
 *    every family's bench shapes, bench rows, model checks and tuning rows
 *    whose times are a thousand times the prediction gives, through
 *    clattn_profile_for, a profile that predicts every one of those calls
 *    to the bit as before them.  The one channel from a measurement into
 *    a prediction, a projection's GEMM rate (clattn_profile.gemm_rates,
 *    from the tuner's Xgemm rows), is checked to be that: an Xgemm row
 *    changes the projections of its shape and nothing else. */
#include "tmpdir.h"
#include "util.h"

#include <CL/cl.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------ the recorded launches */

enum { MAX_NAMES = 64 };
static char launched[MAX_NAMES][64];
static int n_launched, recording;

cl_int __real_clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k,
                                     cl_uint dims, const size_t *off,
                                     const size_t *gws, const size_t *lws,
                                     cl_uint nw, const cl_event *w,
                                     cl_event *ev);

/* Every launch's kernel name, each once, while recording. */
cl_int __wrap_clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k,
                                     cl_uint dims, const size_t *off,
                                     const size_t *gws, const size_t *lws,
                                     cl_uint nw, const cl_event *w,
                                     cl_event *ev) {
  char name[64] = "";
  if (recording && clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name,
                                   name, NULL) == CL_SUCCESS) {
    int seen = 0;
    for (int i = 0; i < n_launched && !seen; i++)
      seen = !strcmp(launched[i], name);
    if (!seen && n_launched < MAX_NAMES)
      snprintf(launched[n_launched++], sizeof launched[0], "%s", name);
  }
  return __real_clEnqueueNDRangeKernel(q, k, dims, off, gws, lws, nw, w, ev);
}

static int was_launched(const char *name) {
  for (int i = 0; i < n_launched; i++)
    if (!strcmp(launched[i], name))
      return 1;
  return 0;
}

Test(calibration, probe_launches_only_its_micro_kernels, .timeout = 600) {
  clattn_ctx *ctx = tu_ctx();
  /* short figures: what is checked is which kernels run, not the rates */
  const clattn_probe_opts o = {.size = sizeof o,
                               .target_s = 0.002,
                               .repeats = 1,
                               .buffer_bytes = (size_t)8 << 20};
  clattn_profile p = {.size = sizeof p};
  n_launched = 0;
  recording = 1;
  const clattn_status st = clattn_probe(ctx, &o, &p, NULL);
  recording = 0;
  cr_assert_eq(st, CLATTN_OK, "clattn_probe: %s", clattn_ctx_errmsg(ctx));
  cr_assert_gt(n_launched, 0, "no launch recorded: is the wrap linked?");
  for (int i = 0; i < n_launched; i++)
    cr_expect_eq(strncmp(launched[i], "probe_", 6), 0,
                 "clattn_probe launched %s, not a probe micro-kernel",
                 launched[i]);
  static const char *const in_core[] = {
      "probe_exp2", "probe_cached", "probe_barrier", "probe_mix", "probe_args"};
  for (size_t i = 0; i < sizeof in_core / sizeof in_core[0]; i++)
    cr_expect(was_launched(in_core[i]), "%s did not run", in_core[i]);
  cr_expect_eq(p.probe_method, CLATTN_PROBE_METHOD);
  cr_expect_gt(p.exp2_gops, 0.0);
  cr_expect_gt(p.cache_gbs, 0.0);
  cr_expect_gt(p.barrier_ns, 0.0);
  cr_expect_gt(p.launch_call_us, 0.0);
  cr_expect_gt(p.fp32_wg1_gflops, 0.0);
  cr_expect_gt(p.exp2_wg1_gops, 0.0);
  cr_expect(p.unhidden >= 0.0 && p.unhidden <= 1.0, "unhidden %g", p.unhidden);
  cr_expect_eq(p.n_gemm_rates, 0, "the probe measures no GEMM");
  clattn_ctx_destroy(ctx);
}

/* ------------------------------------------- measurements in a database */

enum { MAX_CALLS = 256 };

typedef struct call {
  const char *family, *shape;
  double t_pred;
} call;

/* Every family's bench shapes, predicted on p. */
static int predict_all(const clattn_profile *p, call *calls) {
  int n = 0;
  for (int i = 0; i < clattn_family_count(); i++) {
    const char *shape;
    for (int j = 0; (shape = clattn_family_bench_shape(i, j)) != NULL; j++) {
      cr_assert_lt(n, MAX_CALLS);
      clattn_prediction pr = {.size = sizeof pr};
      const char *family = clattn_family_name(i);
      const clattn_status st = clattn_model_shape(family, shape, NULL, p, &pr);
      cr_assert_eq(st, CLATTN_OK, "%s %s: %s", family, shape, pr.errmsg);
      cr_assert_gt(pr.total.t_pred, 0.0, "%s %s", family, shape);
      calls[n++] = (call){family, shape, pr.total.t_pred};
    }
  }
  return n;
}

/* A measured profile of ctx's device with every rate set. */
static clattn_profile measured_profile(clattn_ctx *ctx) {
  clattn_profile p = {.size = sizeof p};
  cr_assert_eq(clattn_profile_reported(ctx, &p), CLATTN_OK);
  p.source = CLATTN_PROFILE_MEASURED;
  p.probe_method = CLATTN_PROBE_METHOD;
  p.bw_read_gbs = 30.0;
  p.bw_copy_gbs = p.bw_triad_gbs = 28.0;
  p.fp32_gflops = 200.0;
  p.local_gbs = 90.0;
  p.launch_us = 20.0;
  p.launch_pipelined_us = 2.0;
  p.exp2_gops = 15.0;
  p.cache_gbs = 150.0;
  p.barrier_ns = 40.0;
  p.launch_call_us = 3.0;
  p.unhidden = 0.25;
  p.fp32_wg1_gflops = 150.0;
  p.exp2_wg1_gops = 10.0;
  return p;
}

/* The rows a run of the tuner, the bench and the model check would leave
 * for call c, each time 1000 x the prediction. */
static void store_measurements(clattn_ctx *ctx, clattn_db *db,
                               const clattn_profile *p, const call *c) {
  const double t = 1000.0 * c->t_pred;
  clattn_choice ch = {.size = sizeof ch};
  cr_assert_eq(clattn_explain_shape(ctx, c->family, c->shape, NULL, &ch),
               CLATTN_OK, "%s %s: %s", c->family, c->shape,
               clattn_ctx_errmsg(ctx));
  clattn_bench_entry b = {.size = sizeof b};
  snprintf(b.fingerprint, sizeof b.fingerprint, "%s", p->fingerprint);
  snprintf(b.device, sizeof b.device, "%s", p->name);
  snprintf(b.family, sizeof b.family, "%s", c->family);
  snprintf(b.shape, sizeof b.shape, "%s", c->shape);
  snprintf(b.shape_class, sizeof b.shape_class, "%s", ch.shape_class);
  snprintf(b.impl, sizeof b.impl, "clattn");
  snprintf(b.params, sizeof b.params, "%s", ch.resolved);
  b.median_s = t;
  b.predicted_s = c->t_pred;
  b.roof_s = c->t_pred;
  snprintf(b.run, sizeof b.run, "calibration");
  cr_assert_eq(clattn_db_put_bench(db, &b), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  clattn_check_record r = {.size = sizeof r};
  snprintf(r.fingerprint, sizeof r.fingerprint, "%s", p->fingerprint);
  snprintf(r.call, sizeof r.call, "%s %s", c->family, c->shape);
  snprintf(r.bound, sizeof r.bound, "memory");
  r.predicted_s = c->t_pred;
  r.measured_s = t;
  cr_assert_eq(clattn_db_put_check(db, &r), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  clattn_tune_entry e = {.size = sizeof e};
  snprintf(e.fingerprint, sizeof e.fingerprint, "%s", p->fingerprint);
  snprintf(e.device, sizeof e.device, "%s", p->name);
  snprintf(e.kernel, sizeof e.kernel, "%s", c->family);
  snprintf(e.shape_class, sizeof e.shape_class, "%s", ch.shape_class);
  snprintf(e.params, sizeof e.params, "%s", ch.params);
  snprintf(e.status, sizeof e.status, "ok");
  snprintf(e.strategy, sizeof e.strategy, "exhaustive");
  e.median_s = t;
  e.predicted_s = c->t_pred;
  e.tune_method = clattn_tune_method(c->family);
  cr_assert_eq(clattn_db_put_tune(db, &e), CLATTN_OK, "%s %s: %s", c->family,
               ch.shape_class, clattn_db_errmsg(db));
}

Test(calibration, measured_times_leave_predictions_alone, .timeout = 300) {
  char dir[256], path[512];
  tt_mkdtemp(dir, sizeof dir, "calibration");
  snprintf(path, sizeof path, "%s/tuning.db", dir);
  clattn_ctx *ctx = tu_ctx();
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK, "%s",
               clattn_db_errmsg(NULL));
  const clattn_profile stored = measured_profile(ctx);
  cr_assert_eq(clattn_db_put_profile(db, &stored), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  clattn_profile before = {.size = sizeof before};
  cr_assert_eq(clattn_profile_for(ctx, db, &before), CLATTN_OK);
  cr_assert_eq(before.source, CLATTN_PROFILE_MEASURED);
  static call calls[MAX_CALLS], again[MAX_CALLS];
  const int n = predict_all(&before, calls);
  for (int i = 0; i < n; i++)
    store_measurements(ctx, db, &stored, &calls[i]);

  clattn_profile after = {.size = sizeof after};
  cr_assert_eq(clattn_profile_for(ctx, db, &after), CLATTN_OK);
  const double was[] = {
      before.bw_read_gbs,         before.bw_copy_gbs,    before.fp32_gflops,
      before.local_gbs,           before.exp2_gops,      before.cache_gbs,
      before.barrier_ns,          before.launch_call_us, before.unhidden,
      before.launch_pipelined_us, before.n_gemm_rates};
  const double is[] = {
      after.bw_read_gbs,         after.bw_copy_gbs,    after.fp32_gflops,
      after.local_gbs,           after.exp2_gops,      after.cache_gbs,
      after.barrier_ns,          after.launch_call_us, after.unhidden,
      after.launch_pipelined_us, after.n_gemm_rates};
  for (size_t i = 0; i < sizeof was / sizeof was[0]; i++)
    cr_expect_eq(is[i], was[i], "profile figure %zu: %g, %g before", i, is[i],
                 was[i]);
  cr_assert_eq(predict_all(&after, again), n);
  for (int i = 0; i < n; i++)
    cr_expect_eq(again[i].t_pred, calls[i].t_pred,
                 "%s %s: predicted %g s before its measurements, %g after",
                 calls[i].family, calls[i].shape, calls[i].t_pred,
                 again[i].t_pred);

  /* the one channel: an Xgemm row (the tuner's GEMM, 10 ms for m = n = k =
   * 512) reprices the projections of its shape, and only those */
  clattn_tune_entry x = {.size = sizeof x};
  snprintf(x.fingerprint, sizeof x.fingerprint, "%s", stored.fingerprint);
  snprintf(x.device, sizeof x.device, "%s", stored.name);
  snprintf(x.kernel, sizeof x.kernel, "clblast-xgemm");
  snprintf(x.shape_class, sizeof x.shape_class, "m512 n512 k512");
  snprintf(x.params, sizeof x.params, "MWG=64 NWG=64 KWG=16");
  snprintf(x.status, sizeof x.status, "ok");
  snprintf(x.strategy, sizeof x.strategy, "exhaustive");
  x.median_s = 0.010;
  x.tune_method = clattn_tune_method("clblast-xgemm");
  cr_assert_eq(clattn_db_put_tune(db, &x), CLATTN_OK, "%s",
               clattn_db_errmsg(db));
  clattn_profile gemm = {.size = sizeof gemm};
  cr_assert_eq(clattn_profile_for(ctx, db, &gemm), CLATTN_OK);
  cr_assert_eq(gemm.n_gemm_rates, 1);
  cr_assert_eq(predict_all(&gemm, again), n);
  int repriced = 0;
  for (int i = 0; i < n; i++) {
    const int its_shape = !strcmp(calls[i].family, "projection") &&
                          !strcmp(calls[i].shape, "m=512 n=512 k=512");
    repriced += its_shape;
    if (its_shape)
      cr_expect(calls[i].t_pred < 0.010 && again[i].t_pred >= 0.010,
                "the projection of the Xgemm row's shape: %g s, then %g s "
                "(the GEMM's 10 ms at least)",
                calls[i].t_pred, again[i].t_pred);
    else
      cr_expect_eq(again[i].t_pred, calls[i].t_pred, "%s %s repriced",
                   calls[i].family, calls[i].shape);
  }
  cr_expect_eq(repriced, 1, "no bench shape m=512 n=512 k=512 of projection");
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
  tt_rm_rf(dir);
}
