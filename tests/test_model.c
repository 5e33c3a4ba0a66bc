/* test_model.c - the roofline model (host/src/model.c).
 *
 * Exact check: every call of tests/model_cases.h is run by kernel_run under
 * Oclgrind with its instruction counter (OCLGRIND_INST_COUNTS=1, kernels
 * built with -cl-opt-disable so the counted instructions are the source's),
 * and for every kernel launched, the counts must equal the model's:
 *  - global bytes loaded and stored: Oclgrind's "load/store global (N
 *    bytes)" lines count scalar accesses; vector and half accesses are
 *    calls of vloadN, vstoreN, vload_half(N), vstore_half(N) on __global
 *    pointers,
 *    counted here as width x element size;
 *  - FMA lanes: calls of fma() (and of llvm.fmuladd, what a*b+c becomes
 *    under -cl-mad-enable in the probe) weighted by their vector width;
 *  - exp2 lanes: calls of the kernels' exp2s1/exp2s16 weighted likewise;
 *  - work-group barriers: Oclgrind counts a call of barrier() (or
 *    work_group_barrier()) once per work-item that makes it, so its count
 *    is the model's (one per barrier a work-group passes) times the
 *    work-group size, the plan's wg (a family's kernels without barriers:
 *    0 both);
 *  - for the probe's microkernels also the local-memory bytes (its
 *    local-bandwidth figure divides them by time);
 *  - the work-group size (clattn_core.group_items): kernel_run prints the
 *    local size each launch passes ("clattn-lws KERNEL ITEMS", 0 for none)
 *    beside Oclgrind's counts, and it must be the model's.
 * The model predicts these exactly, so the test requires equality (the
 * issue allows 1%; no tolerance is needed).
 *
 * Other checks: the model's useful FLOPs and compulsory bytes on textbook
 * shapes, its decode intensity 2*(H/H_kv)/s (spec 2.3), the roofline
 * (bound, ridge), layers as sums, the subgroup kernels' barriers (from
 * the source: Oclgrind has no subgroups) and errors for bad descriptions. */
#include "model_cases.h"
#include "device/probe.h"
#include "util.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define OCLGRIND_ICD "/usr/lib/oclgrind/liboclgrind-rt-icd.so"

/* What Oclgrind counted for one kernel. */
typedef struct counted {
  char name[64];
  double load, store, fma, exp2, local;
  double barrier_items; /* barrier calls, one per work-item */
} counted;

/* The local size kernel_run saw a kernel launched with (its
 * "clattn-lws" lines); -1 when it was launched with two different ones. */
typedef struct launched {
  char name[64];
  double group_items;
} launched;

/* Element bytes of an Itanium-mangled scalar type code at s. */
static int type_bytes(const char *s) {
  if (strncmp(s, "Dh", 2) == 0)
    return 2;
  switch (*s) {
  case 'f':
  case 'i':
  case 'j':
    return 4;
  case 's':
  case 't':
    return 2;
  case 'c':
  case 'h':
  case 'a':
    return 1;
  case 'd':
  case 'l':
  case 'm':
    return 8;
  default:
    return 0;
  }
}

/* Bytes moved by one call of a vector/half load or store builtin, given
 * its mangled name (e.g. _Z7vload16mPU3AS1Kf); 0 if it is not one on a
 * __global pointer.  *is_store tells which. */
static int vector_access(const char *mangled, int *is_store) {
  if (strncmp(mangled, "_Z", 2) != 0)
    return 0;
  char *end;
  long len = strtol(mangled + 2, &end, 10);
  if (len <= 0 || len > 40)
    return 0;
  char name[48];
  memcpy(name, end, (size_t)len);
  name[len] = '\0';
  const char *rest = end + len;
  const char *base;
  if (strncmp(name, "vload", 5) == 0) {
    *is_store = 0;
    base = name + 5;
  } else if (strncmp(name, "vstore", 6) == 0) {
    *is_store = 1;
    base = name + 6;
  } else {
    return 0;
  }
  if (strncmp(base, "_half", 5) == 0)
    base += 5;
  int width = 1;
  if (*base >= '0' && *base <= '9')
    width = atoi(base);
  const char *as1 = strstr(rest, "PU3AS1");
  if (as1 == NULL)
    return 0;
  as1 += 6;
  if (*as1 == 'K')
    as1++;
  return width * type_bytes(as1);
}

/* Lanes of a vector type in a mangled argument list ("Dv16_f..." -> 16). */
static int lanes(const char *args) {
  return strncmp(args, "Dv", 2) == 0 ? atoi(args + 2) : 1;
}

/* Record a "clattn-lws" line's kernel and local size in l (up to `cap`
 * kernels, *nl so far). */
static void add_launch(launched *l, int *nl, int cap, const char *name,
                       double items) {
  for (int i = 0; i < *nl; i++)
    if (strcmp(l[i].name, name) == 0) {
      if (l[i].group_items != items)
        l[i].group_items = -1;
      return;
    }
  cr_assert_lt(*nl, cap, "too many launched kernels");
  snprintf(l[*nl].name, sizeof l[*nl].name, "%s", name);
  l[(*nl)++].group_items = items;
}

/* Parse Oclgrind's instruction-count report into up to `cap` kernels, and
 * kernel_run's launch lines into up to `cap` launched (their number in
 * *nl). */
static int parse_counts(const char *path, counted *k, launched *l, int *nl,
                        int cap) {
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "cannot open %s", path);
  char line[1024];
  int n = -1;
  *nl = 0;
  while (fgets(line, sizeof line, f)) {
    char nm[64];
    unsigned long items;
    if (sscanf(line, "clattn-lws %63s %lu", nm, &items) == 2) {
      add_launch(l, nl, cap, nm, (double)items);
      continue;
    }
    if (sscanf(line, "Instructions executed for kernel '%63[^']'", nm) == 1) {
      cr_assert_lt(n + 1, cap, "too many kernels in %s", path);
      n++;
      memset(&k[n], 0, sizeof k[n]);
      snprintf(k[n].name, sizeof k[n].name, "%s", nm);
      continue;
    }
    unsigned long cnt;
    char op[900];
    if (n < 0 || sscanf(line, " %lu - %899[^\n]", &cnt, op) != 2)
      continue;
    unsigned long bytes;
    int st;
    if (sscanf(op, "load global (%lu bytes)", &bytes) == 1) {
      k[n].load += (double)bytes;
    } else if (sscanf(op, "store global (%lu bytes)", &bytes) == 1) {
      k[n].store += (double)bytes;
    } else if (sscanf(op, "load local (%lu bytes)", &bytes) == 1 ||
               sscanf(op, "store local (%lu bytes)", &bytes) == 1) {
      k[n].local += (double)bytes;
    } else if (strncmp(op, "call ", 5) == 0) {
      const char *fn = op + 5;
      int b = vector_access(fn, &st);
      if (b > 0)
        *(st ? &k[n].store : &k[n].load) += (double)cnt * b;
      else if (strncmp(fn, "_Z3fma", 6) == 0)
        k[n].fma += (double)cnt * lanes(fn + 6);
      else if (strncmp(fn, "llvm.fmuladd.", 13) == 0) /* a*b+c, contracted */
        k[n].fma += (double)cnt * (fn[13] == 'v' ? atoi(fn + 14) : 1);
      else if (strncmp(fn, "exp2s", 5) == 0)
        k[n].exp2 += (double)cnt * atoi(fn + 5);
      else if (strncmp(fn, "_Z7barrierj", 11) == 0 ||
               strncmp(fn, "_Z18work_group_barrierj", 23) == 0)
        k[n].barrier_items += (double)cnt;
    }
  }
  fclose(f);
  return n + 1;
}

/* The wg of a resolved params text (a family's own keys, such as
 * super-values' vector, are no clattn_params: read it alone); 0 if none. */
static int params_wg(const char *params) {
  for (const char *p = strstr(params, "wg="); p; p = strstr(p + 1, "wg="))
    if (p == params || p[-1] == ' ')
      return atoi(p + 3);
  return 0;
}

/* The kernel_run binary (meson passes its path) and Oclgrind's ICD. */
static const char *kernel_runner(void) {
  const char *runner = getenv("CLATTN_KERNEL_RUN");
  cr_assert_not_null(runner, "CLATTN_KERNEL_RUN is not set (meson sets it)");
  cr_assert_eq(access(OCLGRIND_ICD, R_OK), 0,
               OCLGRIND_ICD " is missing: install oclgrind");
  return runner;
}

/* Run kernel_run on case idx under Oclgrind; the report (its stdout) goes
 * to `out`.  kernel_runner() has been checked (before `dir` was made, so a
 * missing runner leaves no directory behind). */
static void run_under_oclgrind(int idx, const char *dir, const char *out) {
  fflush(stdout);
  const char *runner = kernel_runner();
  char icd[512], arg[16];
  snprintf(icd, sizeof icd, "%s/oclgrind.icd", dir);
  FILE *f = fopen(icd, "w");
  cr_assert_not_null(f);
  fprintf(f, "%s\n", OCLGRIND_ICD);
  fclose(f);
  snprintf(arg, sizeof arg, "%d", idx);
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    FILE *o = freopen(out, "w", stdout); /* the counts go to stdout */
    if (o == NULL)
      _exit(126);
    setenv("OCL_ICD_VENDORS", dir, 1);
    setenv("OCLGRIND_INST_COUNTS", "1", 1);
    setenv("OCLGRIND_BUILD_OPTIONS", "-cl-opt-disable", 1);
    setenv("CLATTN_NO_DISK_CACHE", "1", 1);
    unsetenv("CLATTN_DEVICE");
    execl(runner, runner, arg, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "kernel_run %d under Oclgrind failed (status %d); see %s", idx,
            status, out);
}

/* A profile with GPU-like limits (the cases set every parameter, so only
 * the kernels' structure matters). */
static clattn_profile test_profile(void) {
  clattn_profile p = {.size = sizeof(clattn_profile)};
  p.source = CLATTN_PROFILE_DATASHEET;
  snprintf(p.name, sizeof p.name, "test");
  p.compute_units = 4;
  p.max_wg = 1024;
  p.local_mem_bytes = 32768;
  p.cache_bytes = 1 << 20;
  p.bw_read_gbs = p.bw_copy_gbs = p.bw_triad_gbs = 100.0;
  p.fp32_gflops = 1000.0;
  p.launch_us = 5.0;
  return p;
}

static void predict(const model_case *mc, clattn_prediction *pr) {
  const clattn_profile prof = test_profile();
  const int *ints = mc->ints[0] >= 0 ? mc->ints : NULL;
  const clattn__family *F;
  _Alignas(16) unsigned char d[CLATTN__DESC_MAX];
  if (mc->family == NULL) {
    memset(pr, 0, sizeof *pr);
    pr->n_kernels = 1;
    clattn__model_probe((clattn__probe_kernel)mc->probe, mc->vw, mc->items,
                        CLATTN__PROBE_LAUNCH_REPS, &pr->kernel[0]);
    pr->core[0].barriers = clattn__probe_barriers(
        (clattn__probe_kernel)mc->probe, mc->items, mc->lws);
    pr->core[0].group_items = mc->lws; /* the probe launches at the case's */
    return;
  }
  clattn__params values;
  cr_assert_eq(model_case_desc(mc, &F, d, &values), CLATTN_OK, "%s: bad case",
               mc->name);
  const clattn_status st = clattn__model(F, d, &values, ints, &prof, pr);
  cr_assert_eq(st, CLATTN_OK, "%s: model failed: %s", mc->name, pr->errmsg);
}

ParameterizedTestParameters(model, oclgrind_exact) {
  static int idx[MODEL_CASES];
  for (int i = 0; i < MODEL_CASES; i++)
    idx[i] = i;
  return cr_make_param_array(int, idx, MODEL_CASES);
}

ParameterizedTest(int *idx, model, oclgrind_exact, .timeout = 300) {
  const model_case *mc = &model_cases[*idx];
  kernel_runner();
  char dir[] = "/tmp/clattn-model-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char out[600];
  snprintf(out, sizeof out, "%s/counts.txt", dir);
  run_under_oclgrind(*idx, dir, out);
  counted got[8];
  launched lws[8];
  int nl = 0;
  const int nk = parse_counts(out, got, lws, &nl, 8);
  clattn_prediction pr = {.size = sizeof(clattn_prediction)};
  predict(mc, &pr);
  cr_expect_eq(nk, pr.n_kernels, "%s: Oclgrind counted %d kernels, model %d",
               mc->name, nk, pr.n_kernels);
  /* the work-group size of the family's kernels that pass barriers */
  const int wg = mc->family != NULL ? params_wg(pr.params) : mc->lws;
  for (int i = 0; i < pr.n_kernels; i++) {
    const clattn_cost *c = &pr.kernel[i];
    const counted *k = NULL;
    for (int j = 0; j < nk; j++)
      if (strcmp(got[j].name, c->kernel) == 0)
        k = &got[j];
    cr_expect_not_null(k, "%s: kernel %s not counted", mc->name, c->kernel);
    if (k == NULL)
      continue;
    const double barriers = pr.core[i].barriers;
    cr_log_info("%s / %s: load %.0f/%.0f store %.0f/%.0f fma %.0f/%.0f "
                "exp2 %.0f/%.0f barriers %.0f/%.0f x wg %d (Oclgrind/model)",
                mc->name, c->kernel, k->load, c->bytes_read, k->store,
                c->bytes_written, k->fma, c->fma_issued, k->exp2,
                c->exp2_issued, k->barrier_items, barriers, wg);
    if (mc->family != NULL)
      cr_expect(k->load > 0, "%s / %s: nothing loaded?", mc->name, c->kernel);
    else
      cr_expect_eq(k->local, c->local_bytes,
                   "%s / %s: local bytes %.0f, "
                   "model %.0f",
                   mc->name, c->kernel, k->local, c->local_bytes);
    cr_expect_eq(k->load, c->bytes_read,
                 "%s / %s: global load bytes %.0f, "
                 "model %.0f",
                 mc->name, c->kernel, k->load, c->bytes_read);
    cr_expect_eq(k->store, c->bytes_written,
                 "%s / %s: global store bytes "
                 "%.0f, model %.0f",
                 mc->name, c->kernel, k->store, c->bytes_written);
    cr_expect_eq(k->fma, c->fma_issued,
                 "%s / %s: FMA lanes %.0f, model "
                 "%.0f",
                 mc->name, c->kernel, k->fma, c->fma_issued);
    cr_expect_eq(k->exp2, c->exp2_issued,
                 "%s / %s: exp2 lanes %.0f, model "
                 "%.0f",
                 mc->name, c->kernel, k->exp2, c->exp2_issued);
    cr_expect_eq(k->barrier_items, barriers * wg,
                 "%s / %s: barrier calls %.0f (%.4g barriers of "
                 "work-groups of %d), model %.0f",
                 mc->name, c->kernel, k->barrier_items,
                 wg > 0 ? k->barrier_items / wg : 0.0, wg, barriers);
    const launched *l = NULL;
    for (int j = 0; j < nl; j++)
      if (strcmp(lws[j].name, c->kernel) == 0)
        l = &lws[j];
    cr_expect_not_null(l, "%s: kernel %s: no launch line", mc->name, c->kernel);
    if (l != NULL)
      cr_expect_eq(l->group_items, pr.core[i].group_items,
                   "%s / %s: launched with %.0f work-items a group (-1: "
                   "two sizes), model %.0f",
                   mc->name, c->kernel, l->group_items, pr.core[i].group_items);
  }
  unlink(out);
  char icd[600];
  snprintf(icd, sizeof icd, "%s/oclgrind.icd", dir);
  unlink(icd);
  rmdir(dir);
}

/* ---------------------------------------------------------------- units */

static clattn_profile gpu(void) {
  clattn_profile p = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_datasheet_find("A100", &p), CLATTN_OK);
  return p;
}

/* Useful FLOPs follow spec 2.3: 2*B*H*A*(dk+dv), A the valid pairs. */
Test(model, useful_flops) {
  const clattn_profile p = gpu();
  clattn_prediction pr = {.size = sizeof(clattn_prediction)};
  clattn_attn_desc d = {sizeof(clattn_attn_desc),
                        2,
                        100,
                        300,
                        8,
                        2,
                        64,
                        32,
                        CLATTN_F16,
                        CLATTN_BSHD,
                        CLATTN_BSHD,
                        0.0f,
                        0,
                        NULL};
  cr_assert_eq(clattn_model_attention(&d, NULL, &p, &pr), CLATTN_OK, "%s",
               pr.errmsg);
  cr_expect_eq(pr.total.flops, 2.0 * 2 * 8 * 100 * 300 * (64 + 32));
  cr_expect_eq(pr.total.softmax_ops, 5.0 * 2 * 8 * 100 * 300);
  /* causal with n < m: query i sees P + i + 1 keys, P = m - n (spec 1.1) */
  d.causal = 1;
  cr_assert_eq(clattn_model_attention(&d, NULL, &p, &pr), CLATTN_OK);
  const double A = 100.0 * 200 + 100.0 * 101 / 2;
  cr_expect_eq(pr.total.flops, 2.0 * 2 * 8 * A * (64 + 32));
  /* kv_lens: a fully masked sequence adds nothing */
  const int lens[2] = {0, 300};
  d.causal = 0;
  cr_assert_eq(clattn_model_attention(&d, lens, &p, &pr), CLATTN_OK);
  cr_expect_eq(pr.total.flops, 2.0 * 1 * 8 * 100 * 300 * (64 + 32));
}

/* Compulsory bytes: each tensor once (spec 2.3, fused ideal); the issued
 * K/V reads of the local-memory kernel are R_kv = ceil(N g / BR) times the
 * tensor (spec 1.2), with the g heads of a group packed into the rows. */
Test(model, bytes_and_rereads) {
  const clattn_profile p = gpu();
  clattn_prediction pr = {.size = sizeof(clattn_prediction)};
  const clattn_params par = {
      .size = sizeof(clattn_params), .variant = 2, .keys = 32, .wg = 64};
  const clattn_attn_desc d = {sizeof(clattn_attn_desc),
                              1,
                              200,
                              500,
                              8,
                              2,
                              64,
                              64,
                              CLATTN_F16,
                              CLATTN_BSHD,
                              CLATTN_BSHD,
                              0.0f,
                              0,
                              &par};
  cr_assert_eq(clattn_model_attention(&d, NULL, &p, &pr), CLATTN_OK);
  const double q = 2.0 * 200 * 8 * 64, kv = 2.0 * 500 * 2 * 128;
  cr_expect_eq(pr.total.bytes_compulsory, q + kv + q);
  const double rkv = ceil(200.0 * 4 / 64);       /* 13 row groups */
  const double lens_q = 64.0 * 2 * 64 * rkv * 2; /* q rows, per item */
  cr_expect_eq(pr.total.bytes_read, rkv * kv + lens_q);
  cr_expect_eq(pr.total.bytes_written, q);
  /* the A100's 40 MiB L2 holds one head's K/V: DRAM = compulsory */
  cr_expect_eq(pr.total.bytes_dram, pr.total.bytes_compulsory);
}

/* Decode: KV read once per step for the whole group, so the intensity is
 * 2 g / s (spec 2.3, 9) up to the q/o rows and the split partials (the
 * plan keeps those within ~1/16 of the K/V bytes: 7% here); MQA's step
 * moves ~h times fewer bytes than MHA's. */
Test(model, decode_intensity) {
  const clattn_profile p = gpu();
  const int hkvs[3] = {32, 8, 1};
  double t[3];
  for (int i = 0; i < 3; i++) {
    clattn_prediction pr = {.size = sizeof(clattn_prediction)};
    const clattn_decode_desc d = {sizeof(clattn_decode_desc),
                                  1,
                                  32768,
                                  32,
                                  hkvs[i],
                                  128,
                                  128,
                                  CLATTN_F16,
                                  CLATTN_BHSD,
                                  0.0f,
                                  NULL};
    cr_assert_eq(clattn_model_decode(&d, NULL, &p, &pr), CLATTN_OK, "%s",
                 pr.errmsg);
    const double g = 32.0 / hkvs[i];
    const double I = pr.total.flops / pr.total.bytes_compulsory;
    cr_expect(fabs(I - g) / g < 0.07, "h_kv=%d: intensity %.4f, want %.1f",
              hkvs[i], I, g);
    /* A100 ridge: 19.5 TFLOP/s / 1555 GB/s = 12.5 FLOP/B, so MHA (1) and
     * GQA-8 (4) are memory-bound; MQA (32) is compute-bound on the FP32
     * vector units, and its speed-up stays below h = 32 */
    cr_expect_eq(pr.total.bound,
                 g < 12.5 ? CLATTN_BOUND_MEMORY : CLATTN_BOUND_COMPUTE,
                 "h_kv=%d", hkvs[i]);
    t[i] = pr.total.t_pred;
  }
  cr_expect(t[0] / t[2] > 5.0 && t[0] / t[2] < 16.0, "MQA speed-up %.1f",
            t[0] / t[2]);
  cr_expect(t[0] / t[1] > 3.5 && t[0] / t[1] < 4.01, "GQA-8 speed-up %.2f",
            t[0] / t[1]);
}

/* A CPU profile as PoCL reports one: preferred float width `vw`. */
static clattn_profile cpu(unsigned vw, const char *vendor) {
  clattn_profile p = {.size = sizeof(clattn_profile)};
  p.is_cpu = 1;
  p.wave_width = vw;
  snprintf(p.vendor, sizeof p.vendor, "%s", vendor);
  p.compute_units = 2;
  p.max_wg = 4096;
  p.local_mem_bytes = 4u << 20;
  p.cache_bytes = 32u << 20;
  p.bw_read_gbs = p.bw_copy_gbs = 30.0;
  p.fp32_gflops = 100.0;
  return p;
}

/* The CPU prefill tile fits the vector registers: AVX2 (8 floats, 16
 * registers) 2 rows x 32 keys, AVX-512 8 x 32, AArch64 (4 floats, 32
 * registers) 4 x 16; a tile whose QK^T accumulators do not fit is charged
 * its spilled FMAs twice, and the one that fits is predicted faster. */
Test(model, cpu_tile_fits_registers) {
  static const struct {
    unsigned vw;
    const char *vendor;
    int rows, keys;
  } c[] = {{8, "AuthenticAMD", 2, 32},
           {16, "GenuineIntel", 8, 32},
           {4, "ARM", 4, 16},
           {4, "GenuineIntel", 2, 16}};
  const clattn_attn_desc d = {sizeof(clattn_attn_desc),
                              1,
                              300,
                              300,
                              4,
                              4,
                              64,
                              64,
                              CLATTN_F32,
                              CLATTN_BSHD,
                              CLATTN_BSHD,
                              0.0f,
                              1,
                              NULL};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    const clattn_profile p = cpu(c[i].vw, c[i].vendor);
    clattn_prediction pr = {.size = sizeof(clattn_prediction)};
    cr_assert_eq(clattn_model_attention(&d, NULL, &p, &pr), CLATTN_OK, "%s",
                 pr.errmsg);
    cr_expect_eq(tu_params(pr.params).variant, 1);
    cr_expect(tu_params(pr.params).rows == c[i].rows &&
                  tu_params(pr.params).keys == c[i].keys,
              "width %u %s: rows %d keys %d, expected %d x %d", c[i].vw,
              c[i].vendor, tu_params(pr.params).rows, tu_params(pr.params).keys,
              c[i].rows, c[i].keys);
    cr_expect_eq(pr.total.fma_spilled, 0.0);
  }
  /* AVX2 with the AVX-512 tile: 5 * 8 + 1 = 41 vectors live, 25 of its 32
   * accumulators beyond the 16 registers */
  const clattn_profile p = cpu(8, "AuthenticAMD");
  clattn_prediction fit = {.size = sizeof(clattn_prediction)},
                    big = {.size = sizeof(clattn_prediction)};
  const clattn_params bp = {
      .size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 64};
  clattn_attn_desc db = d;
  db.params = &bp;
  cr_assert_eq(clattn_model_attention(&d, NULL, &p, &fit), CLATTN_OK);
  cr_assert_eq(clattn_model_attention(&db, NULL, &p, &big), CLATTN_OK);
  const clattn_cost *k = &big.kernel[1];
  cr_assert_str_eq(k->kernel, "attn_fwd_reg");
  cr_expect(k->fma_spilled > 0.0 && k->fma_spilled < k->fma_issued,
            "spilled %g of %g", k->fma_spilled, k->fma_issued);
  cr_expect(fabs(k->t_compute - 2.0 * (k->fma_issued + k->fma_spilled) /
                                    100e9) < 1e-9 * k->t_compute,
            "t_compute %g", k->t_compute);
  cr_expect(big.total.t_pred > fit.total.t_pred, "spilled %g, fits %g",
            big.total.t_pred, fit.total.t_pred);
}

/* The roofline: t = max(memory, compute) + launches; the bound is the
 * larger term; prefill of long sequences is compute-bound on a GPU. */
Test(model, roofline) {
  const clattn_profile p = gpu();
  clattn_prediction pr = {.size = sizeof(clattn_prediction)};
  const clattn_attn_desc d = {sizeof(clattn_attn_desc),
                              1,
                              4096,
                              4096,
                              32,
                              32,
                              128,
                              128,
                              CLATTN_F16,
                              CLATTN_BSHD,
                              CLATTN_BSHD,
                              0.0f,
                              0,
                              NULL};
  cr_assert_eq(clattn_model_attention(&d, NULL, &p, &pr), CLATTN_OK);
  const clattn_cost *c = &pr.kernel[0];
  cr_expect_eq(c->bound, CLATTN_BOUND_COMPUTE);
  cr_expect_eq(c->t_pred, fmax(c->t_memory, c->t_compute) + c->t_launch);
  cr_expect(fabs(c->t_compute - 2.0 * c->fma_issued / 19.49e12) <
                1e-9 * c->t_compute + 1e-15,
            "t_compute %g", c->t_compute);
  cr_expect(fabs(pr.ridge - 19490.0 / 1555.0) < 1e-9, "ridge %g", pr.ridge);
  /* one tiny call is launch-bound */
  const clattn_attn_desc s = {sizeof(clattn_attn_desc),
                              1,
                              1,
                              8,
                              1,
                              1,
                              16,
                              16,
                              CLATTN_F32,
                              CLATTN_BSHD,
                              CLATTN_BSHD,
                              0.0f,
                              0,
                              NULL};
  cr_assert_eq(clattn_model_attention(&s, NULL, &p, &pr), CLATTN_OK);
  cr_expect_eq(pr.total.bound, CLATTN_BOUND_LAUNCH);
}

/* A layer is the sum of its kernels: four projections and the core. */
Test(model, layer_is_sum) {
  const clattn_profile p = gpu();
  clattn_prediction pr = {.size = sizeof(clattn_prediction)},
                    core = {.size = sizeof(clattn_prediction)};
  const clattn_layer_desc L = {
      sizeof(clattn_layer_desc), 512, 8, 2, 64, 64, 0.0f};
  cr_assert_eq(clattn_model_layer(&L, 2, 128, 0, 1, &p, &pr), CLATTN_OK, "%s",
               pr.errmsg);
  const clattn_attn_desc d = {sizeof(clattn_attn_desc),
                              2,
                              128,
                              128,
                              8,
                              2,
                              64,
                              64,
                              CLATTN_F32,
                              CLATTN_BSHD,
                              CLATTN_BSHD,
                              0.0f,
                              1,
                              NULL};
  cr_assert_eq(clattn_model_attention(&d, NULL, &p, &core), CLATTN_OK);
  const double proj =
      2.0 * 256 * 512 * (512 + 128 + 128) + 2.0 * 256 * 512 * 512;
  cr_expect_eq(pr.total.flops, proj + core.total.flops);
  double t = 0;
  for (int i = 0; i < pr.n_kernels; i++)
    t += pr.kernel[i].t_pred;
  cr_expect(fabs(t - pr.total.t_pred) <= 1e-12 * t);
  cr_expect_eq(pr.n_kernels, 4 + core.n_kernels);
  /* each core kernel keeps its in-core record: the same barriers and
   * work-group size */
  for (int i = 0; i < core.n_kernels; i++)
    for (int j = 0; j < pr.n_kernels; j++)
      if (strcmp(pr.kernel[j].kernel, core.kernel[i].kernel) == 0) {
        cr_expect_eq(pr.core[j].barriers, core.core[i].barriers,
                     "%s: %g barriers in the layer, %g alone",
                     core.kernel[i].kernel, pr.core[j].barriers,
                     core.core[i].barriers);
        cr_expect_eq(pr.core[j].group_items, core.core[i].group_items,
                     "%s: groups of %g in the layer, %g alone",
                     core.kernel[i].kernel, pr.core[j].group_items,
                     core.core[i].group_items);
      }
  /* decode step: GEMV rows, append, decode core */
  cr_assert_eq(clattn_model_layer(&L, 1, 1, 1000, 1, &p, &pr), CLATTN_OK, "%s",
               pr.errmsg);
  cr_assert(pr.n_kernels == 6 || pr.n_kernels == 7, "%d kernels", pr.n_kernels);
  cr_expect_str_eq(pr.kernel[3].kernel, "kv_append");
  cr_expect(strncmp(pr.kernel[4].kernel, "decode_split", 12) == 0, "%s",
            pr.kernel[4].kernel);
  cr_expect_eq(pr.kernel[0].launches, 2, "one GEMV row + the zero fill");
}

/* Hosseini & Hosseini's layers (spec 7.2): a non-causal prefill of l
 * positions costs 8lD^2 + 4l^2D FLOPs for MHA, 6lD^2 + 4l^2D Optimised,
 * 4lD^2 + 4l^2D Efficient and Super 2l^2D more (V' = W_a X); causal, the
 * attention and W_a's triangle count the l(l+1)/2 visible pairs.  A decode
 * step over m cached positions moves half MHA's cache bytes for Efficient
 * (X alone, read once for K and V). */
Test(model, hh_layer_costs) {
  const clattn_profile p = gpu();
  const double D = 256, l = 128, pairs = l * (l + 1) / 2;
  const clattn_layer_desc mha = {
      sizeof(clattn_layer_desc), 256, 4, 4, 64, 64, 0.0f};
  clattn_hh_layer_desc d = {sizeof(clattn_hh_layer_desc), 256, 4, 0, 0.0f};
  clattn_prediction pr = {.size = sizeof(clattn_prediction)};
  cr_assert_eq(clattn_model_layer(&mha, 1, (int)l, 0, 0, &p, &pr), CLATTN_OK);
  cr_expect_eq(pr.total.flops, 8 * l * D * D + 4 * l * l * D);
  const clattn_hh_variant v[3] = {CLATTN_HH_OPTIMISED, CLATTN_HH_EFFICIENT,
                                  CLATTN_HH_SUPER};
  const double proj[3] = {6, 4, 4}, mix[3] = {0, 0, 2};
  for (int i = 0; i < 3; i++) {
    d.max_len = v[i] == CLATTN_HH_SUPER ? (int)l : 0;
    cr_assert_eq(clattn_model_hh_layer(v[i], &d, 1, (int)l, 0, 0, &p, &pr),
                 CLATTN_OK, "%s", pr.errmsg);
    cr_expect_eq(pr.total.flops,
                 proj[i] * l * D * D + 4 * l * l * D + mix[i] * l * l * D,
                 "variant %d: %.0f", (int)v[i], pr.total.flops);
    cr_assert_eq(clattn_model_hh_layer(v[i], &d, 1, (int)l, 0, 1, &p, &pr),
                 CLATTN_OK, "%s", pr.errmsg);
    cr_expect_eq(pr.total.flops,
                 proj[i] * l * D * D + 4 * pairs * D + mix[i] * pairs * D,
                 "variant %d causal: %.0f", (int)v[i], pr.total.flops);
  }
  /* decode at m = 8191 cached positions: the core's compulsory cache bytes */
  const int m = 8191;
  clattn_prediction pm = {.size = sizeof(clattn_prediction)},
                    pe = {.size = sizeof(clattn_prediction)};
  d.max_len = 0;
  cr_assert_eq(clattn_model_layer(&mha, 1, 1, m, 1, &p, &pm), CLATTN_OK);
  cr_assert_eq(
      clattn_model_hh_layer(CLATTN_HH_EFFICIENT, &d, 1, 1, m, 1, &p, &pe),
      CLATTN_OK, "%s", pe.errmsg);
  double core_m = 0, core_e = 0;
  for (int i = 0; i < pm.n_kernels; i++)
    if (strncmp(pm.kernel[i].kernel, "decode_split", 12) == 0)
      core_m = pm.kernel[i].bytes_compulsory;
  for (int i = 0; i < pe.n_kernels; i++)
    if (strncmp(pe.kernel[i].kernel, "decode_split", 12) == 0)
      core_e = pe.kernel[i].bytes_compulsory;
  const double cache = 4.0 * (m + 1) * D;
  cr_expect(fabs(core_m - 2 * cache) < 0.01 * cache, "MHA %.0f", core_m);
  cr_expect(fabs(core_e - cache) < 0.01 * cache, "Efficient %.0f", core_e);
  /* Super past its max_len is refused with the reason */
  d.max_len = 64;
  cr_expect_eq(clattn_model_hh_layer(CLATTN_HH_SUPER, &d, 1, 65, 0, 1, &p, &pr),
               CLATTN_ERR_SHAPE);
  cr_expect(strstr(pr.errmsg, "max_len") != NULL, "%s", pr.errmsg);
}

/* The subgroup kernels (variant 3) cannot run on Oclgrind, which has no
 * subgroups, so their barriers are the source's: one a work-group, after q
 * is staged, whatever keys it visits (its key steps reduce and broadcast
 * within the subgroup, no barrier).  attn_fwd_sg: a work-group per RW rows
 * of a (sequence, KV head); decode_split_sg: per split of one (192 keys in
 * 3 splits of 64). */
Test(model, subgroup_barriers) {
  clattn_profile p = gpu();
  p.has_subgroups = 1;
  clattn_prediction pr = {.size = sizeof(clattn_prediction)};
  const clattn_params ap = {
      .size = sizeof(clattn_params), .variant = 3, .rows = 8, .wg = 32};
  const clattn_attn_desc d = {sizeof(clattn_attn_desc),
                              2,
                              20,
                              50,
                              8,
                              2,
                              32,
                              32,
                              CLATTN_F16,
                              CLATTN_BSHD,
                              CLATTN_BSHD,
                              0.0f,
                              1,
                              &ap};
  const int lens[2] = {50, 0}; /* an empty sequence passes it too */
  cr_assert_eq(clattn_model_attention(&d, lens, &p, &pr), CLATTN_OK, "%s",
               pr.errmsg);
  cr_assert_str_eq(pr.kernel[0].kernel, "attn_fwd_sg");
  /* 20 queries x 4 heads a KV head = 80 rows: 10 work-groups of 8 */
  cr_expect_eq(pr.core[0].barriers, 2.0 * 2 * 10);
  const clattn_params dp = {
      .size = sizeof(clattn_params), .variant = 3, .wg = 32, .splits = 3};
  const clattn_decode_desc dd = {sizeof(clattn_decode_desc),
                                 2,
                                 192,
                                 8,
                                 2,
                                 32,
                                 32,
                                 CLATTN_F16,
                                 CLATTN_BHSD,
                                 0.0f,
                                 &dp};
  cr_assert_eq(clattn_model_decode(&dd, lens, &p, &pr), CLATTN_OK, "%s",
               pr.errmsg);
  cr_assert_str_eq(pr.kernel[0].kernel, "decode_split_sg");
  cr_expect_eq(pr.core[0].barriers, 2.0 * 2 * 3, "%g barriers (%s)",
               pr.core[0].barriers, pr.params);
  cr_expect_eq(pr.core[1].barriers, 0.0, "the combine has none");
}

/* Bad descriptions fail with a message, never a prediction. */
Test(model, errors) {
  const clattn_profile p = gpu();
  clattn_prediction pr = {.size = sizeof(clattn_prediction)};
  const clattn_attn_desc d = {sizeof(clattn_attn_desc),
                              1,
                              8,
                              8,
                              6,
                              4,
                              64,
                              64,
                              CLATTN_F32,
                              CLATTN_BSHD,
                              CLATTN_BSHD,
                              0.0f,
                              0,
                              NULL};
  cr_expect_eq(clattn_model_attention(&d, NULL, &p, &pr), CLATTN_ERR_SHAPE);
  cr_expect(strstr(pr.errmsg, "multiple") != NULL, "%s", pr.errmsg);
  cr_expect_eq(clattn_model_attention(NULL, NULL, &p, &pr),
               CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_model_attention(&d, NULL, NULL, &pr),
               CLATTN_ERR_INVALID_ARG);
  const clattn_params bad = {
      .size = sizeof(clattn_params), .variant = 1, .keys = 24};
  const clattn_decode_desc dd = {sizeof(clattn_decode_desc),
                                 1,
                                 64,
                                 8,
                                 8,
                                 64,
                                 64,
                                 CLATTN_F32,
                                 CLATTN_BHSD,
                                 0.0f,
                                 &bad};
  cr_expect_eq(clattn_model_decode(&dd, NULL, &p, &pr), CLATTN_ERR_INVALID_ARG);
  cr_expect(strstr(pr.errmsg, "multiple of 16") != NULL, "%s", pr.errmsg);
}

/* A huge batch is predicted at once: without per-sequence lengths every
 * sequence is the same, so each family with a batch predicts 2^20
 * sequences as one weighed by the batch (the cost loops once ran over
 * every sequence: minutes, past the test's timeout), with exactly 2^20
 * times the FLOPs of one. */
Test(model, huge_batch_at_once) {
  const clattn_profile p = gpu();
  for (int i = 0; i < clattn_family_count(); i++) {
    const char *keys = clattn_family_shape_keys(i);
    const char *std = clattn_family_standard_shape(i, 0);
    if (std == NULL || strstr(keys, "batch") == NULL ||
        strstr(std, "batch=1 ") == NULL)
      continue;
    const char *fam = clattn_family_name(i);
    const char *rest = strstr(std, "batch=1 ") + strlen("batch=1 ");
    char big[512];
    snprintf(big, sizeof big, "batch=1048576 %s", rest);
    clattn_prediction one = {.size = sizeof(clattn_prediction)},
                      many = {.size = sizeof(clattn_prediction)};
    cr_assert_eq(clattn_model_shape(fam, std, NULL, &p, &one), CLATTN_OK,
                 "%s %s: %s", fam, std, one.errmsg);
    cr_assert_eq(clattn_model_shape(fam, big, NULL, &p, &many), CLATTN_OK,
                 "%s %s: %s", fam, big, many.errmsg);
    cr_expect_eq(many.total.flops, 1048576.0 * one.total.flops,
                 "%s: %.17g FLOPs for 2^20 sequences, %.17g for one", fam,
                 many.total.flops, one.total.flops);
  }
}

/* A kernel launched in groups of one work-item is priced at the probe's
 * rates in groups of one, others at the full rates: on a CPU profile the
 * register-blocked decode split (wg 1) and its combine (no local size,
 * which a CPU launch makes groups of one) at fp32_wg1_gflops, a GPU's
 * combine (no local size: the driver's groups) and local-memory split at
 * the FMA peak; and the time follows the rate. */
Test(model, groups_of_one_at_their_rates) {
  clattn_profile p = cpu(16, "AuthenticAMD");
  p.fp32_wg1_gflops = p.fp32_gflops / 8.0;
  p.exp2_gops = 20.0;
  p.exp2_wg1_gops = 2.5;
  const clattn_decode_desc d = {sizeof(clattn_decode_desc),
                                1,
                                4096,
                                8,
                                1,
                                64,
                                64,
                                CLATTN_F32,
                                CLATTN_BHSD,
                                0.0f,
                                NULL};
  clattn_prediction one = {.size = sizeof one}, all = {.size = sizeof all};
  cr_assert_eq(clattn_model_decode(&d, NULL, &p, &one), CLATTN_OK, "%s",
               one.errmsg);
  cr_assert_geq(one.n_kernels, 1);
  for (int i = 0; i < one.n_kernels; i++) {
    cr_expect(one.core[i].group_items <= 1, "%s: %g items a group",
              one.kernel[i].kernel, one.core[i].group_items);
    cr_expect_eq(one.core[i].fma_gflops, p.fp32_wg1_gflops, "%s",
                 one.kernel[i].kernel);
  }
  cr_expect_eq(one.core[0].t_exp2,
               one.kernel[0].exp2_issued / (p.exp2_wg1_gops * 1e9));
  clattn_profile full = p;
  full.fp32_wg1_gflops = full.exp2_wg1_gops = 0;
  cr_assert_eq(clattn_model_decode(&d, NULL, &full, &all), CLATTN_OK);
  cr_expect_eq(all.core[0].fma_gflops, p.fp32_gflops);
  cr_expect_eq(one.core[0].t_fma, 8.0 * all.core[0].t_fma,
               "a lane in groups of one costs 8x at an eighth of the rate");
  /* a GPU: the local-memory split and the driver-sized combine at the
   * peak, whatever its rate in groups of one */
  clattn_profile g = gpu();
  g.fp32_wg1_gflops = g.fp32_gflops / 32.0;
  const clattn_params v2 = {.size = sizeof v2, .variant = 2, .wg = 64};
  clattn_decode_desc dg = d;
  dg.params = &v2;
  clattn_prediction gp = {.size = sizeof gp};
  cr_assert_eq(clattn_model_decode(&dg, NULL, &g, &gp), CLATTN_OK, "%s",
               gp.errmsg);
  for (int i = 0; i < gp.n_kernels; i++)
    cr_expect_eq(gp.core[i].fma_gflops, g.fp32_gflops, "%s (%g items)",
                 gp.kernel[i].kernel, gp.core[i].group_items);
}
