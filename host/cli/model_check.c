/* model_check.c - `clattn model check`: run each kernel family on the
 * present device and print the model's predicted time beside the measured
 * one, the achieved GB/s and GFLOP/s, the fraction of the roofline and the
 * model's error; store them in the database next to the probe results.
 *
 * Decode is measured with cold caches: each case rotates round-robin over
 * enough distinct caches (as the layers of a model would) that no step
 * finds its K/V in the last-level cache.  Each decode and append pass
 * follows one launch of the probe's copy kernel (clattn_copy_ref) and is
 * predicted on the profile scaled to that copy: a shared machine's
 * bandwidth moves by tens of percent within minutes, so the check pairs
 * each time with the bandwidth of its moment; the error is the median of
 * the rounds' errors.  A decode or append pass is at least MIN_CALLS
 * calls, cycling over the layers (an append's cycles write rows at other
 * positions, all cold), enqueued back to back and finished once: the time
 * per call of a stream, as a model's steps issue them, with the queue's
 * round trip (~50 us on PoCL) spread over them.  Prefill is compute-bound
 * and is measured warm.  Times are medians of repeated passes.  A second
 * table checks every registered family at shapes of its own
 * (model_check_families.c). */
#include "cli.h"
#include "model.h"

#include "base/stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REPS 9   /* paired rounds of a decode or append call */
#define MIN_CALLS 32 /* calls in a decode or append pass */
#define MAX_CYCLES MIN_CALLS

typedef struct check_case {
  int kind; /* 0 decode, 1 prefill, 2 append */
  int b, n, m, h, hkv, k;
  int causal;
} check_case;

typedef struct bufs {
  int layers, cycles; /* a pass: `cycles` times over the layers */
  cl_mem *k, *v;      /* per layer */
  cl_mem q, o;
  cl_mem lens[MAX_CYCLES]; /* decode: [0] the lengths; append: the
                              position written, one per cycle */
} bufs;

static void bufs_free(bufs *B) {
  for (int l = 0; l < B->layers; l++) {
    if (B->k && B->k[l])
      clReleaseMemObject(B->k[l]);
    if (B->v && B->v[l])
      clReleaseMemObject(B->v[l]);
  }
  free(B->k);
  free(B->v);
  if (B->q)
    clReleaseMemObject(B->q);
  if (B->o)
    clReleaseMemObject(B->o);
  for (int c = 0; c < MAX_CYCLES; c++)
    if (B->lens[c])
      clReleaseMemObject(B->lens[c]);
  memset(B, 0, sizeof *B);
}

/* A buffer filled with small pseudo-random floats. */
static cl_mem random_buf(cl_context c, size_t floats, unsigned long long seed) {
  float *h = cli_alloc(floats, sizeof *h);
  if (!h)
    return NULL;
  cli_random_fill(&seed, h, floats, 1.0f);
  cl_mem m = cli_buffer(c, floats * sizeof *h, h);
  free(h);
  return m;
}

/* Allocate the inputs of a case: `layers` K/V pairs of kv_floats each,
 * and `nlens` lens buffers, the first `len` for every sequence, each next
 * one 64 positions on (modulo cap: an append's rows of another cycle lie
 * on other pages). */
static int bufs_alloc(cl_context c, bufs *B, int layers, int cycles, int nlens,
                      size_t kv_floats, size_t q_floats, size_t o_floats, int b,
                      int len, int cap) {
  memset(B, 0, sizeof *B);
  B->k = calloc((size_t)layers, sizeof *B->k);
  B->v = calloc((size_t)layers, sizeof *B->v);
  if (!B->k || !B->v) {
    cli_err("out of memory");
    return CLI_FAIL;
  }
  B->layers = layers;
  B->cycles = cycles;
  for (int l = 0; l < layers; l++) {
    B->k[l] = random_buf(c, kv_floats, 11u + (unsigned)l);
    B->v[l] = random_buf(c, kv_floats, 1011u + (unsigned)l);
    if (!B->k[l] || !B->v[l])
      return CLI_FAIL;
  }
  B->q = random_buf(c, q_floats, 7);
  B->o = cli_buffer(c, o_floats * sizeof(float), NULL);
  cl_int *lh = cli_alloc((size_t)b, sizeof *lh);
  if (!B->q || !B->o || !lh) {
    free(lh);
    return CLI_FAIL;
  }
  for (int j = 0; j < nlens; j++) {
    for (int i = 0; i < b; i++)
      lh[i] = j ? (len + 64 * j) % cap : len;
    if (!(B->lens[j] = cli_buffer(c, (size_t)b * sizeof *lh, lh)))
      break;
  }
  free(lh);
  return B->lens[nlens - 1] ? CLI_OK : CLI_FAIL;
}

/* The call's descriptions (prefill; decode and append), with params p. */
static clattn_attn_desc attn_desc(const check_case *cc,
                                  const clattn_params *p) {
  const clattn_attn_desc d = {sizeof(clattn_attn_desc),
                              cc->b,
                              cc->n,
                              cc->m,
                              cc->h,
                              cc->hkv,
                              cc->k,
                              cc->k,
                              CLATTN_F32,
                              CLATTN_BSHD,
                              CLATTN_BSHD,
                              0.0f,
                              cc->causal,
                              p};
  return d;
}
static clattn_decode_desc decode_desc(const check_case *cc,
                                      const clattn_params *p) {
  const clattn_decode_desc d = {sizeof(clattn_decode_desc),
                                cc->b,
                                cc->m,
                                cc->h,
                                cc->hkv,
                                cc->k,
                                cc->k,
                                CLATTN_F32,
                                CLATTN_BHSD,
                                0.0f,
                                p};
  return d;
}

/* One pass: the call on every layer's buffers, B->cycles times over. */
static clattn_status pass(clattn_ctx *ctx, const check_case *cc, bufs *B) {
  clattn_status st = CLATTN_OK;
  const clattn_attn_desc a = attn_desc(cc, NULL);
  const clattn_decode_desc d = decode_desc(cc, NULL);
  for (int i = 0; i < B->cycles * B->layers && !st; i++) {
    const int l = i % B->layers, cy = i / B->layers;
    if (cc->kind == 0)
      st = clattn_decode(ctx, &d, B->q, B->k[l], B->v[l], B->lens[0], B->o,
                         NULL);
    else if (cc->kind == 1)
      st = clattn_attention(ctx, &a, B->q, B->k[l], B->v[l], NULL, B->o, NULL);
    else
      st = clattn_kv_append(ctx, &d, 1, B->q, B->o, B->lens[cy], B->k[l],
                            B->v[l], NULL);
  }
  return st;
}

/* Times of one call over `reps` passes (after one warm-up pass), in t[];
 * with a copy reference, each pass follows one launch of it, whose GB/s go
 * to g[] (the pair shares the machine's moment). */
static int measure(clattn_ctx *ctx, const check_case *cc, bufs *B, int reps,
                   clattn_copy_ref *ref, double *t, double *g) {
  cl_command_queue q = clattn_ctx_queue(ctx);
  for (int r = -1; r < reps; r++) {
    clattn_status st;
    if (ref && (st = clattn_copy_ref_run(ref, &g[r < 0 ? 0 : r])))
      return cli_lib_fail(ctx, "clattn_copy_ref_run", st);
    double t0 = clattn__now();
    st = pass(ctx, cc, B);
    cl_int e = clFinish(q);
    if (st)
      return cli_lib_fail(ctx, "model check", st);
    if (e != CL_SUCCESS) {
      cli_err("clFinish: %s", clattn_cl_errstr(e));
      return CLI_FAIL;
    }
    if (r >= 0)
      t[r] = (clattn__now() - t0) / (B->cycles * B->layers);
  }
  return CLI_OK;
}

/* The median of x on a copy: a round's figures in t, g and err stay at the
 * same index for the other medians. */
static double median(const double *x, int n) {
  double v[MAX_REPS];
  memcpy(v, x, (size_t)n * sizeof *v);
  return clattn__median(v, n);
}

/* The profile with its bandwidths scaled to a copy of `gbs` measured now. */
static clattn_profile at_copy(const clattn_profile *p, double gbs) {
  clattn_profile s = *p;
  clattn_profile_at_copy(&s, gbs);
  return s;
}

static void describe(const check_case *cc, char *buf, size_t cap) {
  if (cc->kind == 0)
    snprintf(buf, cap, "decode b=%d m=%d h=%d h_kv=%d k=%d v=%d f32", cc->b,
             cc->m, cc->h, cc->hkv, cc->k, cc->k);
  else if (cc->kind == 1)
    snprintf(buf, cap, "attention b=%d n=%d m=%d h=%d h_kv=%d k=%d v=%d f32%s",
             cc->b, cc->n, cc->m, cc->h, cc->hkv, cc->k, cc->k,
             cc->causal ? " causal" : "");
  else
    snprintf(buf, cap, "kv_append b=%d cap=%d h_kv=%d k=%d v=%d f32", cc->b,
             cc->m, cc->hkv, cc->k, cc->k);
}

/* The parameters the library picks for the call on ctx (tuned entries
 * included), which are the ones measured; append has none. */
static int resolve(clattn_ctx *ctx, const check_case *cc,
                   clattn_params *params) {
  clattn_status st = CLATTN_OK;
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  memset(params, 0, sizeof *params);
  params->size = sizeof *params;
  if (cc->kind == 1) {
    const clattn_attn_desc d = attn_desc(cc, NULL);
    if ((st = clattn_explain_attention(ctx, &d, &ch)))
      return cli_lib_fail(ctx, "clattn_explain_attention", st);
  } else if (cc->kind == 0) {
    const clattn_decode_desc d = decode_desc(cc, NULL);
    if ((st = clattn_explain_decode(ctx, &d, &ch)))
      return cli_lib_fail(ctx, "clattn_explain_decode", st);
  } else {
    return CLI_OK;
  }
  if ((st = clattn_params_parse(ch.resolved, params)))
    return cli_lib_fail(ctx, "clattn_params_parse", st);
  return CLI_OK;
}

/* The model's prediction of the call with those parameters on profile p. */
static int predict(const check_case *cc, const clattn_params *params,
                   const clattn_profile *p, clattn_prediction *pr) {
  clattn_status st;
  if (cc->kind == 1) {
    const clattn_attn_desc d = attn_desc(cc, params);
    st = clattn_model_attention(&d, NULL, p, pr);
  } else {
    const clattn_decode_desc d = decode_desc(cc, params);
    if (cc->kind == 0) {
      st = clattn_model_decode(&d, NULL, p, pr);
    } else {
      int pos[64];
      for (int i = 0; i < cc->b && i < 64; i++)
        pos[i] = cc->m / 2;
      st = clattn_model_kv_append(&d, 1, pos, p, pr);
    }
  }
  if (st) {
    cli_err("model: %s", pr->errmsg);
    return CLI_FAIL;
  }
  return CLI_OK;
}

int cli_model_check(const model_opts *o) {
  clattn_ctx *ctx = NULL;
  clattn_db *db = NULL;
  clattn_copy_ref *ref = NULL;
  int rc = cli_check_families_valid(o->families);
  if (rc || (rc = cli_ctx_create(o->device, &ctx)))
    return rc;
  if (clattn_db_open(o->db, &db) != CLATTN_OK) {
    cli_err("note: no tuning database (%s): nothing is stored and the "
            "device's reported profile has no ceilings",
            clattn_db_errmsg(NULL));
    db = NULL;
  }
  clattn_profile prof = {.size = sizeof(clattn_profile)};
  clattn_status st;
  if (o->probe) {
    /* ceilings of this run: the machine's bandwidth drifts (22.8-33.2
     * GB/s over one session here), and the check's error is a ratio */
    clattn_probe_opts po = {.size = sizeof(clattn_probe_opts)};
    clattn_probe_result r = {.size = sizeof(clattn_probe_result)};
    clattn_profile r_prof = {.size = sizeof(clattn_profile)};
    cli_probe_opts(o->quick, 0, &po);
    if ((st = clattn_probe(ctx, &po, &r_prof, &r)) != CLATTN_OK) {
      rc = cli_lib_fail(ctx, "clattn_probe", st);
      goto done;
    }
    prof = r_prof;
    if (db && !o->no_store && !o->quick &&
        (st = clattn_db_put_profile(db, &prof)) != CLATTN_OK) {
      cli_err("storing the probe: %s", clattn_db_errmsg(db));
      rc = CLI_FAIL;
      goto done;
    }
  } else if ((st = clattn_profile_for(ctx, db, &prof)) != CLATTN_OK) {
    rc = cli_lib_fail(ctx, "clattn_profile_for", st);
    goto done;
  }
  /* a projection's GEMM rate is the tuner's time of that GEMM: the check
   * predicts from the probe's rates alone (docs/MODEL.md, "Honest
   * calibration") */
  prof.n_gemm_rates = 0;
  if (prof.source != CLATTN_PROFILE_MEASURED)
    cli_err("note: %s has no measured profile in the database%s%s; run "
            "'clattn probe' first for meaningful predictions",
            prof.name, prof.note[0] ? ": " : "", prof.note);
  const int m1 = o->quick ? 2048 : 4096, m2 = o->quick ? 4096 : 8192;
  const int np = o->quick ? 512 : 1024;
  const check_case cases[] = {
      {0, 1, 1, m1, 8, 8, 64, 0},  {0, 1, 1, m1, 8, 2, 64, 0},
      {0, 1, 1, m1, 8, 1, 64, 0},  {0, 1, 1, m2, 8, 8, 64, 0},
      {0, 1, 1, m2, 8, 2, 64, 0},  {0, 1, 1, m2, 8, 1, 64, 0},
      {1, 1, np, np, 8, 8, 64, 0}, {1, 1, np, np, 8, 8, 64, 1},
      {1, 1, np, np, 8, 1, 64, 1}, {2, 4, 1, m1, 8, 8, 64, 0},
  };
  const int ncases = (int)(sizeof cases / sizeof cases[0]);
  const int reps = o->quick ? 3 : 5;
  const int dreps = o->quick ? 5 : MAX_REPS; /* paired rounds of a decode */
  const double cold = (double)(prof.cache_bytes ? prof.cache_bytes : 0) * 2.0;
  const double floor_bytes = o->quick ? 128.0 * 1048576 : 256.0 * 1048576;
  const double need = cold > floor_bytes ? cold : floor_bytes;
  cl_context c = clattn_ctx_cl_context(ctx);
  /* the bandwidth reference of the memory-bound calls (decode, append),
   * timed before each of their passes: the machine's bandwidth drifts */
  if (prof.bw_copy_gbs > 0 &&
      (st = clattn_copy_ref_create(ctx, (size_t)(need / 2), &ref))) {
    rc = cli_lib_fail(ctx, "clattn_copy_ref_create", st);
    goto done;
  }
  printf("model check on %s (%s profile%s: read %.1f GB/s, copy %.1f GB/s, "
         "FP32 %.1f GFLOP/s)\n",
         prof.name, cli_profile_source(prof.source),
         o->probe ? " probed in this run" : "", prof.bw_read_gbs,
         prof.bw_copy_gbs, prof.fp32_gflops);
  printf("  decode and append: COLD caches (rotating over >= %.0f MiB of "
         "K/V), %d rounds, each a copy\n  of %.0f MiB (the probe's copy "
         "kernel) and one pass (>= %d calls enqueued back to back, one\n  "
         "finish; time per call); each round's prediction scales the "
         "profile's bandwidths by that\n  copy's GB/s / the profile's; "
         "error: the median over rounds; err@prof: the error with\n  the "
         "profile as stored.  Prefill: warm, %d passes.\n",
         need / 1048576.0, dreps, need / 2 / 1048576.0, MIN_CALLS, reps);
  if (!ref)
    printf("  (no measured copy bandwidth: rounds are not paired)\n");
  printf("  %-52s %8s %10s %10s %7s %8s %7s %8s %6s %7s\n", "call", "bound",
         "pred us", "meas us", "error", "err@prof", "GB/s", "GFLOP/s", "roof",
         "copy");
  for (int i = 0; i < ncases && !rc; i++) {
    const check_case *cc = &cases[i];
    const int paired = cc->kind != 1 && ref != NULL;
    const int n = cc->kind == 1 ? reps : dreps;
    clattn_prediction pr = {.size = sizeof(clattn_prediction)},
                      pp = {.size = sizeof(clattn_prediction)};
    clattn_params params = {.size = sizeof(clattn_params)};
    char call[128];
    describe(cc, call, sizeof call);
    if ((rc = resolve(ctx, cc, &params)) ||
        (rc = predict(cc, &params, &prof, &pp)))
      break;
    const size_t kv = (size_t)cc->b * cc->m * cc->hkv * cc->k;
    const size_t qf = (size_t)cc->b * (cc->kind == 2 ? 1 : cc->n) *
                      (cc->kind == 2 ? cc->hkv : cc->h) * cc->k;
    int layers = 1, cycles = 1;
    if (cc->kind != 1) {
      layers = (int)(need / (8.0 * kv) + 1.0);
      if (layers < 2)
        layers = 2;
      cycles = (MIN_CALLS + layers - 1) / layers;
    }
    bufs B;
    double t[MAX_REPS], g[MAX_REPS], pred[MAX_REPS], err[MAX_REPS];
    rc = bufs_alloc(c, &B, layers, cycles, cc->kind == 2 ? cycles : 1, kv, qf,
                    qf, cc->b, cc->kind == 2 ? cc->m / 2 : cc->m, cc->m);
    if (!rc)
      rc = measure(ctx, cc, &B, n, paired ? ref : NULL, t, g);
    bufs_free(&B);
    if (rc)
      break;
    /* each round's prediction on the profile scaled to its copy */
    for (int r = 0; r < n && !rc; r++) {
      const clattn_profile pf = paired ? at_copy(&prof, g[r]) : prof;
      if (!(rc = predict(cc, &params, &pf, &pr))) {
        pred[r] = pr.total.t_pred;
        err[r] = (pred[r] - t[r]) / t[r];
      }
    }
    if (rc)
      break;
    const double tm = median(t, n), gm = paired ? median(g, n) : 0.0;
    const double e = median(err, n);
    /* the cost figures at the rounds' median copy */
    const clattn_profile pf = paired ? at_copy(&prof, gm) : prof;
    if ((rc = predict(cc, &params, &pf, &pr)))
      break;
    const clattn_cost *tot = &pr.total;
    const double roof =
        (tot->t_memory > tot->t_compute ? tot->t_memory : tot->t_compute) / tm;
    const double e_prof = (pp.total.t_pred - tm) / tm;
    char copy[16] = "-";
    if (paired)
      snprintf(copy, sizeof copy, "%.1f", gm);
    printf("  %-52s %8s %10.1f %10.1f %+6.0f%% %+7.0f%% %7.2f %8.1f %5.0f%% "
           "%7s\n",
           call, cli_bound_name(tot->bound), median(pred, n) * 1e6, tm * 1e6,
           100.0 * e, 100.0 * e_prof, tot->bytes_dram / tm * 1e-9,
           tot->flops / tm * 1e-9, 100.0 * roof, copy);
    if (db && !o->no_store) {
      clattn_check_record r = {.size = sizeof(clattn_check_record)};
      snprintf(r.fingerprint, sizeof r.fingerprint, "%s", prof.fingerprint);
      snprintf(r.call, sizeof r.call, "%s", call);
      snprintf(r.bound, sizeof r.bound, "%s", cli_bound_name(tot->bound));
      r.predicted_s = tm * (1.0 + e);
      r.measured_s = tm;
      r.gbs = tot->bytes_dram / tm * 1e-9;
      r.gflops = tot->flops / tm * 1e-9;
      r.roofline_fraction = roof;
      if ((st = clattn_db_put_check(db, &r)) != CLATTN_OK) {
        cli_err("storing the check: %s", clattn_db_errmsg(db));
        rc = CLI_FAIL;
      }
    }
  }
  if (!rc)
    rc = cli_model_check_families(ctx, db, &prof, ref, o);
  if (!rc && db && !o->no_store)
    printf("  stored in %s\n", clattn_db_path(db));
done:
  clattn_copy_ref_destroy(ref);
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
  return rc;
}
