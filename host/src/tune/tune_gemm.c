/* tune_gemm.c - CLBlast's single-precision Xgemm kernel: its tuning space on
 * the context's device, the tuner family (clattn_tune_gemm), and applying
 * the tuned parameters before a context's layers run their first GEMM
 * (clattn__gemm_apply, clattn_explain_gemm).
 *
 * How CLBlast 1.5.3 runs a GEMM.  CLBlastSgemm picks one of two kernels:
 * XgemmDirect when m*n*k < XGEMM_MIN_INDIRECT_SIZE^3 (the "GemmRoutine"
 * parameter; 576 for this PoCL CPU device, so 512^3 runs direct), else
 * the "indirect" Xgemm kernel with pre- and post-processing kernels that
 * transpose and pad the operands to multiples of MWG/NWG/KWG.  Only Xgemm
 * is tuned here.  So that the tuner's check and its timing both run Xgemm
 * whatever the shape, tuning overrides GemmRoutine with
 * XGEMM_MIN_INDIRECT_SIZE = the cube root of the smaller of the check's and
 * the class's m*n*k.  Applying a tuned entry sets it to the cube root of
 * the smallest tuned shape class, so every shape from there up runs the
 * tuned Xgemm (the shapes it was measured at) and smaller ones keep
 * XgemmDirect with CLBlast's own parameters.  The value is part of the
 * kernel source, so with one tuned class the applied program is the one
 * the tuner already built (no second build).
 *
 * CLBlast keeps one parameter set per (device, precision, kernel) for the
 * whole process, and its C API (1.5.3) can set parameters but not read
 * them (RetrieveParameters is C++ only), so the defaults cannot be
 * restored once overridden: after a tuning run the device runs the best
 * tuned entry of the database (or, if none is valid, XgemmDirect only,
 * whose parameters are never touched).  Every override changes the kernel
 * source, so the first GEMM after it compiles again (20-50 s on PoCL with a
 * cold cache, under a second with a warm one). */
#include "tune/tune_gemm.h"

#include "base/clblast_status.h"
#include "base/stats.h"
#include "db/db.h"

#include <clblast_c.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL "clblast-xgemm"

const char *const clattn__xgemm_names[CLATTN_XGEMM_NPARAMS] = {
    "GEMMK", "KREG", "KWG",  "KWI", "MDIMA", "MDIMC", "MWG",  "NDIMB",
    "NDIMC", "NWG",  "SA",   "SB",  "STRM",  "STRN",  "VWM",  "VWN"};

enum {
  P_GEMMK, P_KREG, P_KWG, P_KWI, P_MDIMA, P_MDIMC, P_MWG, P_NDIMB,
  P_NDIMC, P_NWG, P_SA, P_SB, P_STRM, P_STRN, P_VWM, P_VWN
};

/* ------------------------------------------------------------- space */

/* Values tried per parameter (0-terminated lists are awkward with the 0/1
 * flags, so each list carries its length). */
typedef struct vals {
  int n;
  int v[8];
} vals;

/* CPU devices (PoCL here).  Measured at 2048x512x512 on this machine,
 * where CLBlast's defaults (GEMMK=0 MWG=NWG=64 MDIMC=16 NDIMC=8 VWM=VWN=4
 * KWG=32 KWI=2 SA=SB=0, as its C++ RetrieveParameters reports them) run
 * the indirect path at 7.4 GFLOP/s, and with 20-25 s of build per
 * candidate in mind:
 *  - GEMMK=1 (CLBlast's "kernel 1", 2D register tiles, no local memory)
 *    is the useful one here: it wants A and C in the layers' row-major
 *    orientation, so the pre- and post-processing transposes of A and C
 *    disappear, and it reached 32.7 (8x8 items, 64x64 tiles, VWM=VWN=4,
 *    KREG=4) and 42.5 GFLOP/s (4x4 items, 64x64 tiles, VWM=VWN=8,
 *    KREG=8).  CLBlast's tuner pairs it with KWG=KWI=1 (xgemm.hpp, V=11
 *    and 12), but kernel 1 walks K KREG at a time while the routine pads
 *    K only to a multiple of KWG: with K=53 such candidates read past K
 *    and failed the check (non-finite values).  Here KWG = KREG.
 *  - GEMMK=0 is kept as a small second family around its best here, 25.9
 *    (16x16 items, MWG=NWG=128, VWM=VWN=8, KWG=16); SA=SB=1 (10.8 against
 *    17.4 without: "local" memory is ordinary RAM on a CPU and the staging
 *    barriers cost time), STRM=STRN=1 (8.6: strided loads are gathers) and
 *    8x8 items with 4x4 tiles (6.8) lose, so those are not in the space.
 *  - STRM=STRN=0: a work-item's values are contiguous, loads are vectors.
 * MDIMA/NDIMB only shape the local-memory loads (SA/SB=1); with SA=SB=0
 * they do not change the kernel, so they equal MDIMC/NDIMC (another value
 * would only rebuild the same kernel). */
static const vals cpu_gemmk1[CLATTN_XGEMM_NPARAMS] = {
    [P_GEMMK] = {1, {1}},          [P_KREG] = {2, {8, 16}},
    [P_KWG] = {2, {8, 16}},        [P_KWI] = {1, {1}},
    [P_MDIMA] = {2, {4, 8}},       [P_MDIMC] = {2, {4, 8}},
    [P_MWG] = {2, {64, 128}},      [P_NDIMB] = {2, {4, 8}},
    [P_NDIMC] = {2, {4, 8}},       [P_NWG] = {3, {32, 64, 128}},
    [P_SA] = {1, {0}},             [P_SB] = {1, {0}},
    [P_STRM] = {1, {0}},           [P_STRN] = {1, {0}},
    [P_VWM] = {3, {4, 8, 16}},     [P_VWN] = {3, {4, 8, 16}},
};
static const vals cpu_gemmk0[CLATTN_XGEMM_NPARAMS] = {
    [P_GEMMK] = {1, {0}},          [P_KREG] = {1, {1}},
    [P_KWG] = {1, {16}},           [P_KWI] = {2, {2, 8}},
    [P_MDIMA] = {1, {16}},         [P_MDIMC] = {1, {16}},
    [P_MWG] = {1, {128}},          [P_NDIMB] = {1, {16}},
    [P_NDIMC] = {1, {16}},         [P_NWG] = {1, {128}},
    [P_SA] = {1, {0}},             [P_SB] = {1, {0}},
    [P_STRM] = {1, {0}},           [P_STRN] = {1, {0}},
    [P_VWM] = {2, {4, 8}},         [P_VWN] = {2, {4, 8}},
};

/* Other devices: CLBlast's own exhaustive sets (xgemm.hpp, V == 1 and
 * V == 11; their extra rules SA == SB and VWM == VWN are not imposed). */
static const vals gpu_gemmk0[CLATTN_XGEMM_NPARAMS] = {
    [P_GEMMK] = {1, {0}},          [P_KREG] = {1, {1}},
    [P_KWG] = {1, {32}},           [P_KWI] = {1, {2}},
    [P_MDIMA] = {3, {8, 16, 32}},  [P_MDIMC] = {3, {8, 16, 32}},
    [P_MWG] = {3, {16, 32, 64}},   [P_NDIMB] = {3, {8, 16, 32}},
    [P_NDIMC] = {3, {8, 16, 32}},  [P_NWG] = {3, {16, 32, 64}},
    [P_SA] = {2, {0, 1}},          [P_SB] = {2, {0, 1}},
    [P_STRM] = {1, {0}},           [P_STRN] = {1, {0}},
    [P_VWM] = {3, {1, 2, 4}},      [P_VWN] = {3, {1, 2, 4}},
};
static const vals gpu_gemmk1[CLATTN_XGEMM_NPARAMS] = {
    [P_GEMMK] = {1, {1}},          [P_KREG] = {3, {1, 2, 4}},
    [P_KWG] = {3, {1, 2, 4}},      [P_KWI] = {1, {1}},
    [P_MDIMA] = {3, {4, 8, 16}},   [P_MDIMC] = {3, {4, 8, 16}},
    [P_MWG] = {3, {16, 32, 64}},   [P_NDIMB] = {3, {4, 8, 16}},
    [P_NDIMC] = {3, {4, 8, 16}},   [P_NWG] = {3, {16, 32, 64}},
    [P_SA] = {1, {0}},             [P_SB] = {1, {0}},
    [P_STRM] = {1, {0}},           [P_STRN] = {1, {0}},
    [P_VWM] = {3, {1, 2, 4}},      [P_VWN] = {3, {1, 2, 4}},
};

static int multiple(long a, long b) { return b > 0 && a % b == 0; }

static int fail_why(char *why, size_t cap, const char *rule) {
  if (why != NULL && cap > 0)
    snprintf(why, cap, "%s", rule);
  return 0;
}

/* CLBlast's constraints, from src/tuning/kernels/xgemm.hpp
 * (XgemmSetConstraints and XgemmComputeLocalMemSize):
 *   // Requirement for unrolling the KWG loop
 *   {MultipleOfX, {"KWG", "KWI"}}
 *   // Required for integer MWI and NWI
 *   {MultipleOfXMulY, {"MWG", "MDIMC", "VWM"}}
 *   {MultipleOfXMulY, {"NWG", "NDIMC", "VWN"}}
 *   // Required for integer MWIA and NWIB
 *   {MultipleOfXMulY, {"MWG", "MDIMA", "VWM"}}
 *   {MultipleOfXMulY, {"NWG", "NDIMB", "VWN"}}
 *   // KWG has to be a multiple of KDIMA = ((MDIMC*NDIMC)/(MDIMA)) and
 *   // KDIMB = (...)   [kernel 0]
 *   {MultipleOfXMulYDivZ, {"KWG", "MDIMC", "NDIMC", "MDIMA"}}
 *   {MultipleOfXMulYDivZ, {"KWG", "MDIMC", "NDIMC", "NDIMB"}}
 *   // KREG has to be a multiple of VWN   [kernel 1]
 *   {MultipleOfX, {"KREG", "VWN"}}
 *   [kernel 1] {IsEqual, {"MDIMC", "MDIMA"}}, {IsEqual, {"NDIMC", "NDIMB"}}
 *   local memory: sizeof(T) * (SA*KWG*MWG + SB*KWG*NWG)
 * plus one rule of ours for kernel 1 (KWG a multiple of KREG, below) and
 * the device's limits (CLBlast's own launch checks): MDIMC*NDIMC
 * work-items per group, MDIMC and NDIMC per dimension, the local memory. */
int clattn__xgemm_valid(const clattn_ctx *ctx, const int *v, char *why,
                        size_t cap) {
  for (int i = 0; i < CLATTN_XGEMM_NPARAMS; i++)
    if (v[i] < 0 || v[i] > 4096)
      return fail_why(why, cap, "a parameter is out of range");
  if (v[P_GEMMK] > 1 || v[P_SA] > 1 || v[P_SB] > 1 || v[P_STRM] > 1 ||
      v[P_STRN] > 1)
    return fail_why(why, cap, "GEMMK, SA, SB, STRM and STRN are 0 or 1");
  if (v[P_KWG] < 1 || v[P_KWI] < 1 || v[P_MDIMA] < 1 || v[P_MDIMC] < 1 ||
      v[P_MWG] < 1 || v[P_NDIMB] < 1 || v[P_NDIMC] < 1 || v[P_NWG] < 1 ||
      v[P_VWM] < 1 || v[P_VWN] < 1 || v[P_KREG] < 1)
    return fail_why(why, cap, "sizes must be positive");
  if (!multiple(v[P_KWG], v[P_KWI]))
    return fail_why(why, cap, "KWG must be a multiple of KWI");
  if (!multiple(v[P_MWG], (long)v[P_MDIMC] * v[P_VWM]))
    return fail_why(why, cap, "MWG must be a multiple of MDIMC*VWM");
  if (!multiple(v[P_NWG], (long)v[P_NDIMC] * v[P_VWN]))
    return fail_why(why, cap, "NWG must be a multiple of NDIMC*VWN");
  if (!multiple(v[P_MWG], (long)v[P_MDIMA] * v[P_VWM]))
    return fail_why(why, cap, "MWG must be a multiple of MDIMA*VWM");
  if (!multiple(v[P_NWG], (long)v[P_NDIMB] * v[P_VWN]))
    return fail_why(why, cap, "NWG must be a multiple of NDIMB*VWN");
  if (v[P_GEMMK] == 0) {
    long wg = (long)v[P_MDIMC] * v[P_NDIMC];
    if (!multiple(wg, v[P_MDIMA]) || !multiple(wg, v[P_NDIMB]))
      return fail_why(why, cap,
                      "MDIMC*NDIMC must be a multiple of MDIMA and NDIMB");
    if (!multiple(v[P_KWG], wg / v[P_MDIMA]) ||
        !multiple(v[P_KWG], wg / v[P_NDIMB]))
      return fail_why(why, cap,
                      "KWG must be a multiple of MDIMC*NDIMC/MDIMA and of "
                      "MDIMC*NDIMC/NDIMB");
  } else {
    if (!multiple(v[P_KREG], v[P_VWN]))
      return fail_why(why, cap, "KREG must be a multiple of VWN");
    if (v[P_MDIMC] != v[P_MDIMA] || v[P_NDIMC] != v[P_NDIMB])
      return fail_why(why, cap, "GEMMK=1 needs MDIMA=MDIMC, NDIMB=NDIMC");
    /* Ours, not CLBlast's: kernel 1 steps K by KREG and the routine pads
     * K to a multiple of KWG only (found by the correctness check). */
    if (!multiple(v[P_KWG], v[P_KREG]))
      return fail_why(why, cap, "GEMMK=1 needs KWG a multiple of KREG");
  }
  if (ctx != NULL) {
    size_t wg = (size_t)v[P_MDIMC] * (size_t)v[P_NDIMC];
    cl_ulong local = 4ull * ((cl_ulong)v[P_SA] * v[P_KWG] * v[P_MWG] +
                             (cl_ulong)v[P_SB] * v[P_KWG] * v[P_NWG]);
    if (wg > ctx->dev.max_wg)
      return fail_why(why, cap,
                      "MDIMC*NDIMC exceeds the device's work-group size");
    if ((size_t)v[P_MDIMC] > ctx->dev.max_item[0] ||
        (size_t)v[P_NDIMC] > ctx->dev.max_item[1])
      return fail_why(why, cap,
                      "MDIMC or NDIMC exceeds the device's work-item sizes");
    if (local > ctx->dev.local_mem)
      return fail_why(why, cap,
                      "the SA/SB tiles exceed the device's local memory");
  }
  return 1;
}

/* Device-specific pruning on top of validity: redundant MDIMA/NDIMB when
 * the tiles are not staged, and on CPUs, to keep the space compact (each
 * candidate costs a 20-25 s build): square work-groups (MDIMC = NDIMC),
 * equal vector widths (VWM = VWN, as CLBlast's own kernel-1 set), and a
 * register budget: the MWI*NWI accumulators of a work-item between 64 and
 * 256 floats (4 to 16 AVX-512 registers, leaving room for the A and B
 * operands; fewer starve the FMA units, more spill).  The winners
 * measured above all had that shape. */
static int keep(const clattn_ctx *ctx, const int *v) {
  if (v[P_SA] == 0 && v[P_MDIMA] != v[P_MDIMC])
    return 0;
  if (v[P_SB] == 0 && v[P_NDIMB] != v[P_NDIMC])
    return 0;
  if (v[P_GEMMK] == 1 && v[P_KWG] != v[P_KREG])
    return 0; /* a larger KWG only pads K further */
  if (ctx->dev.type & CL_DEVICE_TYPE_CPU) {
    if (v[P_MDIMC] != v[P_NDIMC] || v[P_VWM] != v[P_VWN])
      return 0;
    /* Kernel 1 computed wrong results on PoCL with MWG=64, NWG=32 (4x4
     * items, also at 128x64x56, which needs no padding) and right ones
     * with MWG=NWG: the check rejects such candidates, and leaving them
     * out saves their builds. */
    if (v[P_GEMMK] == 1 && v[P_MWG] != v[P_NWG])
      return 0;
    long acc = (long)(v[P_MWG] / v[P_MDIMC]) * (v[P_NWG] / v[P_NDIMC]);
    if (acc < 64 || acc > 256)
      return 0;
  }
  return 1;
}

clattn_status clattn__xgemm_space(clattn_ctx *ctx, clattn__space *out) {
  clattn_status rc = clattn__ctx_check(ctx);
  const vals *tabs[2];
  int idx[CLATTN_XGEMM_NPARAMS];
  int v[CLATTN_XGEMM_NPARAMS];
  if (rc != CLATTN_OK)
    return rc;
  if (out == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "clattn__xgemm_space: NULL out");
  memset(out, 0, sizeof *out);
  out->def = -1; /* CLBlast's C API cannot report its defaults */
  out->ndims = CLATTN_XGEMM_NPARAMS;
  for (int i = 0; i < CLATTN_XGEMM_NPARAMS; i++)
    out->dim[i] = clattn__xgemm_names[i];
  /* GEMMK=1 first: on CPUs the promising family comes first in order. */
  if (ctx->dev.type & CL_DEVICE_TYPE_CPU) {
    tabs[0] = cpu_gemmk1;
    tabs[1] = cpu_gemmk0;
  } else {
    tabs[0] = gpu_gemmk0;
    tabs[1] = gpu_gemmk1;
  }
  for (int t = 0; t < 2; t++) {
    const vals *tab = tabs[t];
    memset(idx, 0, sizeof idx);
    for (;;) {
      for (int i = 0; i < CLATTN_XGEMM_NPARAMS; i++)
        v[i] = tab[i].v[idx[i]];
      if (clattn__xgemm_valid(ctx, v, NULL, 0) && keep(ctx, v)) {
        if (clattn__space_add(out, v) < 0) {
          clattn__space_free(out);
          return clattn__fail(ctx, CLATTN_ERR_NOMEM,
                              "Xgemm space: out of host memory");
        }
      } else {
        out->pruned++;
      }
      int d = CLATTN_XGEMM_NPARAMS - 1;
      while (d >= 0 && ++idx[d] == tab[d].n)
        idx[d--] = 0;
      if (d < 0)
        break;
    }
  }
  if (out->n == 0) {
    clattn__space_free(out);
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "Xgemm space: no candidate fits this device "
                        "(work-group size %zu, local memory %llu bytes)",
                        ctx->dev.max_wg,
                        (unsigned long long)ctx->dev.local_mem);
  }
  return CLATTN_OK;
}

/* ------------------------------------------------------------ CLBlast */

static CLBlastStatusCode override_xgemm(cl_device_id dev, const int *v) {
  size_t val[CLATTN_XGEMM_NPARAMS];
  for (int i = 0; i < CLATTN_XGEMM_NPARAMS; i++)
    val[i] = (size_t)v[i];
  return CLBlastOverrideParameters(dev, "Xgemm", CLBlastPrecisionSingle,
                                   CLATTN_XGEMM_NPARAMS,
                                   (const char **)clattn__xgemm_names, val);
}

/* GemmRoutine: GEMMs with m*n*k >= size^3 run the indirect Xgemm kernel. */
static CLBlastStatusCode override_indirect(cl_device_id dev, size_t size) {
  const char *name[1] = {"XGEMM_MIN_INDIRECT_SIZE"};
  return CLBlastOverrideParameters(dev, "GemmRoutine", CLBlastPrecisionSingle,
                                   1, name, &size);
}

/* The call the layers make (layer.c): row-major C[m,n] = A[m,k] B[k,n]. */
static CLBlastStatusCode sgemm(clattn_ctx *ctx, int m, int n, int k,
                               cl_mem a, cl_mem b, cl_mem c) {
  cl_command_queue q = ctx->queue;
  return CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                      CLBlastTransposeNo, (size_t)m, (size_t)n, (size_t)k,
                      1.0f, a, 0, (size_t)k, b, 0, (size_t)n, 0.0f, c, 0,
                      (size_t)n, &q, NULL);
}

/* ------------------------------------------------------------- family */

/* The correctness check's shape: odd in every dimension, so CLBlast pads
 * all three operands, and more than one 128-wide tile in m. */
#define CHECK_M 131
#define CHECK_N 75
#define CHECK_K 53
#define CHECK_TOL 1e-4

typedef struct xgemm_tuner {
  clattn_ctx *ctx;
  int m, n, k;
  cl_mem a, b, c;      /* timing operands */
  cl_mem ca, cb, cc;   /* check operands */
  float *got;          /* [CHECK_M * CHECK_N] */
  double *ref;         /* the plain-C result, double accumulation */
  double ref_max;      /* max |ref| */
  double peak;         /* FP32 FLOP/s of the device profile; 0: unknown */
} xgemm_tuner;

static void set_text(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src);
}

static void blast_failed(clattn_tune_entry *e, const char *what,
                         CLBlastStatusCode s) {
  set_text(e->status, sizeof e->status, "failed");
  snprintf(e->message, sizeof e->message, "%s: %s (%d)", what,
           clattn__clblast_status_str(s), (int)s);
}

static clattn_status xg_eval(void *self, const int *values, double best_s,
                             double timeout_s, int repeats,
                             clattn_tune_entry *e) {
  xgemm_tuner *t = self;
  clattn_ctx *ctx = t->ctx;
  clattn_status rc = CLATTN_OK;
  CLBlastStatusCode s;
  double t0 = clattn__now(), t1, first, *times = NULL;
  double worst = 0.0;
  int bad = 0;

  if (repeats < 1)
    repeats = 7;
  e->median_s = e->spread = e->max_err = 0.0;
  e->message[0] = '\0';
  s = override_xgemm(ctx->device, values);
  if (s != CLBlastSuccess) {
    blast_failed(e, "CLBlastOverrideParameters(Xgemm)", s);
    return CLATTN_OK;
  }
  /* Check: the first call also builds the candidate's program. */
  s = sgemm(ctx, CHECK_M, CHECK_N, CHECK_K, t->ca, t->cb, t->cc);
  if (s != CLBlastSuccess) {
    blast_failed(e, "CLBlastSgemm (check)", s);
    return CLATTN_OK;
  }
  CLATTN_CL(ctx, clEnqueueReadBuffer(ctx->queue, t->cc, CL_TRUE, 0,
                                     sizeof(float) * CHECK_M * CHECK_N,
                                     t->got, 0, NULL, NULL));
  for (int i = 0; i < CHECK_M * CHECK_N; i++) {
    double d = fabs((double)t->got[i] - t->ref[i]);
    if (!isfinite(t->got[i]))
      bad++;
    else if (d > worst)
      worst = d;
  }
  e->max_err = worst / (t->ref_max > 1e-30 ? t->ref_max : 1e-30);
  if (bad > 0 || !(e->max_err <= CHECK_TOL)) {
    set_text(e->status, sizeof e->status, "wrong");
    snprintf(e->message, sizeof e->message,
             "check %dx%dx%d against the plain-C GEMM: max relative error "
             "%.3g (limit %g), %d non-finite values",
             CHECK_M, CHECK_N, CHECK_K, e->max_err, CHECK_TOL, bad);
    return CLATTN_OK;
  }
  /* Warm-up at the class's shape; it decides timeout and early abandon. */
  t1 = clattn__now();
  s = sgemm(ctx, t->m, t->n, t->k, t->a, t->b, t->c);
  if (s != CLBlastSuccess) {
    blast_failed(e, "CLBlastSgemm (timing)", s);
    return CLATTN_OK;
  }
  CLATTN_CL(ctx, clFinish(ctx->queue));
  first = clattn__now() - t1;
  if (timeout_s > 0 && clattn__now() - t0 > timeout_s) {
    set_text(e->status, sizeof e->status, "timeout");
    e->median_s = first;
    snprintf(e->message, sizeof e->message,
             "build, check and first run took %.1f s (limit %.1f s)",
             clattn__now() - t0, timeout_s);
    return CLATTN_OK;
  }
  if (best_s > 0 && first > 2.0 * best_s) {
    set_text(e->status, sizeof e->status, "slow");
    e->median_s = first;
    snprintf(e->message, sizeof e->message,
             "first run %.3g s > 2x the best %.3g s", first, best_s);
    return CLATTN_OK;
  }
  times = malloc(sizeof *times * (size_t)repeats);
  if (times == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "Xgemm tuner: out of memory");
  for (int r = 0; r < repeats; r++) {
    t1 = clattn__now();
    s = sgemm(ctx, t->m, t->n, t->k, t->a, t->b, t->c);
    if (s != CLBlastSuccess) {
      blast_failed(e, "CLBlastSgemm (timing)", s);
      goto done;
    }
    CLATTN_CL(ctx, clFinish(ctx->queue));
    times[r] = clattn__now() - t1;
  }
  e->median_s = clattn__median(times, repeats); /* sorts times */
  e->spread = (times[repeats - 1] - times[0]) / e->median_s;
  set_text(e->status, sizeof e->status, "ok");
done:
  free(times);
  return rc;
}

/* The roofline bound 2mnk / FP32 peak, the same for every candidate:
 * returns 1 with both times set, 0 (times 0) when the peak is unknown. */
static int xg_predict(void *self, const int *values, double *t_pred,
                      double *t_roof) {
  const xgemm_tuner *t = self;
  double tt = 0.0;
  (void)values;
  if (t->peak > 0)
    tt = 2.0 * t->m * (double)t->n * t->k / t->peak;
  if (t_pred != NULL)
    *t_pred = tt;
  if (t_roof != NULL)
    *t_roof = tt;
  return tt > 0;
}

static void tuner_free(xgemm_tuner *t) {
  cl_mem m[6] = {t->a, t->b, t->c, t->ca, t->cb, t->cc};
  for (int i = 0; i < 6; i++)
    if (m[i] != NULL)
      clReleaseMemObject(m[i]);
  free(t->got);
  free(t->ref);
}

static clattn_status make_buffer(clattn_ctx *ctx, size_t bytes,
                                 const float *init, cl_mem *out) {
  cl_int err = CL_SUCCESS;
  *out = clCreateBuffer(ctx->context,
                        CL_MEM_READ_WRITE |
                            (init != NULL ? CL_MEM_COPY_HOST_PTR : 0),
                        bytes, (void *)init, &err);
  if (err != CL_SUCCESS || *out == NULL) {
    *out = NULL;
    return clattn__cl_fail(ctx, err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES,
                           "clCreateBuffer(Xgemm tuner)", __FILE__, __LINE__);
  }
  return CLATTN_OK;
}

/* Deterministic values in [-1, 1) (xorshift64*). */
static void fill_random(float *x, size_t n, uint64_t seed) {
  uint64_t s = seed | 1;
  for (size_t i = 0; i < n; i++) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    x[i] = (float)((double)((s * 2685821657736338717ull) >> 11) /
                       (double)(1ull << 52) -
                   1.0);
  }
}

static clattn_status tuner_init(clattn_ctx *ctx, clattn_db *db, int m, int n,
                                int k, xgemm_tuner *t) {
  clattn_status rc = CLATTN_OK;
  float *ha = NULL, *hb = NULL, *big = NULL;
  size_t sa = clattn__bytes(4, m, k, 1, 1), sb = clattn__bytes(4, k, n, 1, 1),
         sc = clattn__bytes(4, m, n, 1, 1);
  clattn_profile prof;

  memset(t, 0, sizeof *t);
  t->ctx = ctx;
  t->m = m;
  t->n = n;
  t->k = k;
  if (sa == 0 || sb == 0 || sc == 0 || (cl_ulong)sa > ctx->dev.max_alloc ||
      (cl_ulong)sb > ctx->dev.max_alloc || (cl_ulong)sc > ctx->dev.max_alloc)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "clattn_tune_gemm: %dx%dx%d operands exceed the "
                        "device's max allocation (%llu bytes)",
                        m, n, k, (unsigned long long)ctx->dev.max_alloc);
  ha = malloc(sizeof(float) * CHECK_M * CHECK_K);
  hb = malloc(sizeof(float) * CHECK_K * CHECK_N);
  t->got = malloc(sizeof(float) * CHECK_M * CHECK_N);
  t->ref = malloc(sizeof(double) * CHECK_M * CHECK_N);
  if (ha == NULL || hb == NULL || t->got == NULL || t->ref == NULL) {
    rc = clattn__fail(ctx, CLATTN_ERR_NOMEM, "Xgemm tuner: out of memory");
    goto done;
  }
  fill_random(ha, (size_t)CHECK_M * CHECK_K, 0x9e3779b97f4a7c15ull);
  fill_random(hb, (size_t)CHECK_K * CHECK_N, 0xd1b54a32d192ed03ull);
  for (int i = 0; i < CHECK_M; i++)
    for (int j = 0; j < CHECK_N; j++) {
      double acc = 0.0;
      for (int p = 0; p < CHECK_K; p++)
        acc += (double)ha[i * CHECK_K + p] * (double)hb[p * CHECK_N + j];
      t->ref[i * CHECK_N + j] = acc;
      if (fabs(acc) > t->ref_max)
        t->ref_max = fabs(acc);
    }
  CLATTN_TRY(make_buffer(ctx, sizeof(float) * CHECK_M * CHECK_K, ha, &t->ca));
  CLATTN_TRY(make_buffer(ctx, sizeof(float) * CHECK_K * CHECK_N, hb, &t->cb));
  CLATTN_TRY(make_buffer(ctx, sizeof(float) * CHECK_M * CHECK_N, NULL,
                         &t->cc));
  /* Timing operands: random values (no denormals); C is write-only. */
  big = malloc(sa > sb ? sa : sb);
  if (big == NULL) {
    rc = clattn__fail(ctx, CLATTN_ERR_NOMEM, "Xgemm tuner: out of memory");
    goto done;
  }
  fill_random(big, sa / 4, 1);
  CLATTN_TRY(make_buffer(ctx, sa, big, &t->a));
  fill_random(big, sb / 4, 2);
  CLATTN_TRY(make_buffer(ctx, sb, big, &t->b));
  CLATTN_TRY(make_buffer(ctx, sc, NULL, &t->c));
  CLATTN_TRY(clattn_profile_for(ctx, db, &prof));
  t->peak = prof.fp32_gflops * 1e9;
done:
  free(ha);
  free(hb);
  free(big);
  if (rc != CLATTN_OK)
    tuner_free(t);
  return rc;
}

/* -------------------------------------------------------------- apply */

/* Record the line clattn_explain_gemm reports (printf-style). */
static void explain(clattn_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void explain(clattn_ctx *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->gemm_explain, sizeof ctx->gemm_explain, fmt, ap);
  va_end(ap);
}

/* CLBlast's parameters are per process: what this process last set for
 * each device (a few devices at most), so that a context that applies
 * nothing still reports what CLBlast runs. */
#define MAX_DEVICES 8
static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  cl_device_id dev;
  char text[sizeof(((clattn_ctx *)0)->gemm_explain)];
} set_by_us[MAX_DEVICES];

static void note_set(cl_device_id dev, const char *text) {
  pthread_mutex_lock(&set_lock);
  for (int i = 0; i < MAX_DEVICES; i++)
    if (set_by_us[i].dev == dev || set_by_us[i].dev == NULL) {
      set_by_us[i].dev = dev;
      snprintf(set_by_us[i].text, sizeof set_by_us[i].text, "%s", text);
      break;
    }
  pthread_mutex_unlock(&set_lock);
}

/* "CLBlast defaults: <why>", unless this process overrode the device's
 * parameters before: then what it set. */
static void explain_defaults(clattn_ctx *ctx, const char *why) {
  char earlier[sizeof ctx->gemm_explain] = "";
  pthread_mutex_lock(&set_lock);
  for (int i = 0; i < MAX_DEVICES; i++)
    if (set_by_us[i].dev == ctx->device)
      snprintf(earlier, sizeof earlier, "%s", set_by_us[i].text);
  pthread_mutex_unlock(&set_lock);
  if (earlier[0] == '\0')
    explain(ctx, "CLBlast defaults: %s", why);
  else
    explain(ctx, "%s (set earlier in this process; here: %s)", earlier, why);
}

/* "m512 n512 k512" -> its m*n*k (0 when the text is not a GEMM class). */
static double class_volume(const char *cls) {
  int m, n, k, used = 0;
  if (sscanf(cls, "m%d n%d k%d%n", &m, &n, &k, &used) != 3 ||
      cls[used] != '\0' || m <= 0 || n <= 0 || k <= 0)
    return 0.0;
  return (double)m * n * k;
}

/* "NAME=value ..." with every Xgemm name exactly once; 0 on success. */
static int parse_params(const char *text, int *v) {
  int seen[CLATTN_XGEMM_NPARAMS] = {0};
  const char *p = text;
  for (;;) {
    char name[32];
    int val, used = 0, i;
    while (*p == ' ')
      p++;
    if (*p == '\0')
      break;
    if (sscanf(p, "%31[A-Z_]=%d%n", name, &val, &used) != 2)
      return -1;
    p += used;
    for (i = 0; i < CLATTN_XGEMM_NPARAMS; i++)
      if (strcmp(name, clattn__xgemm_names[i]) == 0)
        break;
    if (i == CLATTN_XGEMM_NPARAMS || seen[i])
      return -1;
    seen[i] = 1;
    v[i] = val;
  }
  for (int i = 0; i < CLATTN_XGEMM_NPARAMS; i++)
    if (!seen[i])
      return -1;
  return 0;
}

/* The entry to apply among rows: the best "ok" row of the tuned class with
 * the largest m*n*k (rows are ordered by class, ok first, then time), and
 * the smallest tuned volume.  match: NULL (any row) or a device identity
 * whose vendor and arch rows must share.  Returns the index or -1. */
static int pick(const clattn_ctx *ctx, const clattn_tune_entry *rows, int n,
                const clattn_tune_entry *match, double *min_volume) {
  int best = -1;
  double best_vol = 0.0;
  *min_volume = 0.0;
  for (int i = 0; i < n; i++) {
    const clattn_tune_entry *r = &rows[i];
    int v[CLATTN_XGEMM_NPARAMS];
    double vol = class_volume(r->shape_class);
    if (strcmp(r->status, "ok") != 0 || vol <= 0 || r->median_s <= 0 ||
        !clattn__tune_row_current(r))
      continue;
    if (match != NULL &&
        (strcmp(r->vendor, match->vendor) != 0 || match->arch[0] == '\0' ||
         strcmp(r->arch, match->arch) != 0))
      continue;
    if (parse_params(r->params, v) != 0 ||
        !clattn__xgemm_valid(ctx, v, NULL, 0))
      continue;
    if (*min_volume == 0.0 || vol < *min_volume)
      *min_volume = vol;
    if (best < 0 || vol > best_vol ||
        (vol == best_vol && r->median_s < rows[best].median_s)) {
      best = i;
      best_vol = vol;
    }
  }
  return best;
}

/* Apply the best entry of db for the context's device (else one of the
 * same vendor and arch) and record it in ctx->gemm_explain.  *applied
 * (may be NULL): 1 when CLBlast now runs tuned Xgemm parameters. */
static clattn_status apply_db(clattn_ctx *ctx, clattn_db *db, int *applied) {
  clattn_status rc;
  clattn_tune_entry fp, *rows = NULL;
  int n = 0, i, v[CLATTN_XGEMM_NPARAMS], arch = 0;
  double min_vol = 0.0;
  size_t indirect;
  CLBlastStatusCode s;

  if (applied != NULL)
    *applied = 0;
  memset(&fp, 0, sizeof fp);
  rc = clattn__tune_identity(ctx, &fp);
  if (rc != CLATTN_OK)
    return rc;
  rc = clattn_db_list_tune(db, fp.fingerprint, KERNEL, NULL, &rows, &n);
  if (rc == CLATTN_OK && (i = pick(ctx, rows, n, NULL, &min_vol)) < 0) {
    free(rows);
    rows = NULL;
    arch = 1;
    rc = clattn_db_list_tune(db, NULL, KERNEL, NULL, &rows, &n);
    if (rc == CLATTN_OK)
      i = pick(ctx, rows, n, &fp, &min_vol);
  }
  if (rc != CLATTN_OK) {
    free(rows);
    if (rc == CLATTN_ERR_NOMEM)
      return clattn__fail(ctx, rc, "reading Xgemm tuning entries: %s",
                          clattn_db_errmsg(db));
    char why[512];
    snprintf(why, sizeof why, "tuning database unreadable: %.400s",
             clattn_db_errmsg(db));
    explain_defaults(ctx, why);
    return CLATTN_OK;
  }
  if (i < 0) {
    free(rows);
    explain_defaults(ctx, "no tuning entry for this device");
    return CLATTN_OK;
  }
  parse_params(rows[i].params, v); /* checked by pick */
  indirect = (size_t)floor(cbrt(min_vol) + 1e-6);
  if (indirect < 1)
    indirect = 1;
  s = override_xgemm(ctx->device, v);
  if (s == CLBlastSuccess)
    s = override_indirect(ctx->device, indirect);
  if (s != CLBlastSuccess) {
    explain(ctx,
            "CLBlastOverrideParameters refused the tuned entry %s (%s): %s "
            "(%d); CLBlast keeps its earlier parameters",
            rows[i].shape_class, rows[i].params,
            clattn__clblast_status_str(s), (int)s);
    free(rows);
    return CLATTN_OK;
  }
  explain(ctx,
          "clblast-xgemm: tuned entry %s (%sdevice %s, %.3g ms, %.1f "
          "GFLOP/s): %s; Xgemm from %zu^3 (XGEMM_MIN_INDIRECT_SIZE=%zu)",
          rows[i].shape_class, arch ? "same vendor and arch, " : "",
          rows[i].device, rows[i].median_s * 1e3,
          2.0 * class_volume(rows[i].shape_class) / rows[i].median_s * 1e-9,
          rows[i].params, indirect, indirect);
  note_set(ctx->device, ctx->gemm_explain);
  if (applied != NULL)
    *applied = 1;
  free(rows);
  return CLATTN_OK;
}

clattn_status clattn__gemm_apply(clattn_ctx *ctx) {
  clattn_status rc = clattn__ctx_check(ctx);
  clattn_db *db = NULL;
  if (rc != CLATTN_OK)
    return rc;
  if (ctx->gemm_explain[0] != '\0')
    return CLATTN_OK; /* once per context */
  char why[512];
  rc = clattn__tuning_db_open(ctx, &db, why, sizeof why);
  if (rc != CLATTN_OK)
    return clattn__fail(ctx, rc, "%s", why);
  if (db == NULL) {
    explain_defaults(ctx, why);
    return CLATTN_OK;
  }
  rc = apply_db(ctx, db, NULL);
  clattn_db_close(db);
  return rc;
}

clattn_status clattn_explain_gemm(clattn_ctx *ctx, char *buf, size_t cap) {
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc != CLATTN_OK)
    return rc;
  if (buf == NULL || cap == 0)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "clattn_explain_gemm: NULL or empty buffer");
  rc = clattn__gemm_apply(ctx);
  if (rc != CLATTN_OK)
    return rc;
  snprintf(buf, cap, "%s", ctx->gemm_explain);
  if (strlen(ctx->gemm_explain) >= cap)
    return clattn__fail(ctx, CLATTN_ERR_BUFFER_TOO_SMALL,
                        "clattn_explain_gemm: %zu bytes needed, %zu given",
                        strlen(ctx->gemm_explain) + 1, cap);
  return CLATTN_OK;
}

/* --------------------------------------------------------------- tune */

/* After tuning: the device's best entry of db, else XgemmDirect only (the
 * last candidate evaluated may be a wrong one).  db may be NULL. */
static clattn_status restore(clattn_ctx *ctx, clattn_db *db) {
  clattn_status rc = CLATTN_OK;
  CLBlastStatusCode s;
  int applied = 0;
  ctx->gemm_explain[0] = '\0';
  if (db != NULL)
    rc = apply_db(ctx, db, &applied);
  if (rc != CLATTN_OK || applied)
    return rc;
  s = override_indirect(ctx->device, (size_t)1 << 20);
  if (s != CLBlastSuccess) {
    explain(ctx, "CLBlast Xgemm in an unknown state: resetting GemmRoutine "
                 "failed");
    return clattn__fail(ctx, CLATTN_ERR_CLBLAST,
                        "CLBlastOverrideParameters(GemmRoutine) failed: %s "
                        "(%d)",
                        clattn__clblast_status_str(s), (int)s);
  }
  explain(ctx, "CLBlast XgemmDirect only: tuning overrode Xgemm and left no "
               "valid tuned entry");
  note_set(ctx->device, ctx->gemm_explain);
  return CLATTN_OK;
}

/* Check and timing run the Xgemm kernel (see the top of the file). */
static clattn_status force_indirect(clattn_ctx *ctx, int m, int n, int k) {
  double vol = (double)m * n * k, check = (double)CHECK_M * CHECK_N * CHECK_K;
  size_t size = (size_t)floor(cbrt(vol < check ? vol : check) + 1e-6);
  CLBlastStatusCode s = override_indirect(ctx->device, size);
  if (s != CLBlastSuccess)
    return clattn__fail(ctx, CLATTN_ERR_CLBLAST,
                        "CLBlastOverrideParameters(GemmRoutine, "
                        "XGEMM_MIN_INDIRECT_SIZE=%zu) failed: %s (%d)",
                        size, clattn__clblast_status_str(s), (int)s);
  return CLATTN_OK;
}

static clattn_status check_args(clattn_ctx *ctx, int m, int n, int k) {
  if (m <= 0 || n <= 0 || k <= 0)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "clattn_tune_gemm: m %d, n %d, k %d must be positive",
                        m, n, k);
  return CLATTN_OK;
}

clattn_status clattn__xgemm_eval(clattn_ctx *ctx, int m, int n, int k,
                                 const int *values, int repeats,
                                 clattn_tune_entry *e) {
  clattn_status rc = clattn__ctx_check(ctx), rc2;
  xgemm_tuner t;
  if (rc != CLATTN_OK)
    return rc;
  if (values == NULL || e == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "clattn__xgemm_eval: NULL values or entry");
  CLATTN_TRY(check_args(ctx, m, n, k));
  CLATTN_TRY(tuner_init(ctx, NULL, m, n, k, &t));
  rc = force_indirect(ctx, m, n, k);
  if (rc == CLATTN_OK)
    rc = xg_eval(&t, values, 0.0, 0.0, repeats, e);
  rc2 = restore(ctx, NULL);
  if (rc == CLATTN_OK)
    rc = rc2;
  tuner_free(&t);
done:
  return rc;
}

clattn_status clattn_tune_gemm(clattn_ctx *ctx, clattn_db *db, int m, int n,
                               int k, const clattn_tune_opts *opts,
                               clattn_tune_result *out) {
  clattn_status rc = clattn__ctx_check(ctx), rc2;
  clattn__space space;
  clattn__tune_family fam;
  clattn_tune_entry fp;
  clattn_tune_opts o;
  clattn_tune_result local;
  xgemm_tuner t;

  if (rc != CLATTN_OK)
    return rc;
  if (out == NULL)
    out = &local;
  memset(out, 0, sizeof *out);
  if (db == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "clattn_tune_gemm: NULL database");
  CLATTN_TRY(check_args(ctx, m, n, k));
  memset(&o, 0, sizeof o);
  if (opts != NULL)
    o = *opts;
  /* A candidate's first call builds CLBlast's whole GEMM program: 20-50 s
   * on PoCL with a cold cache, so the engine's 10 s default would reject
   * every candidate. */
  if (o.timeout_s <= 0)
    o.timeout_s = 120.0;
  memset(&fp, 0, sizeof fp);
  CLATTN_TRY(clattn__tune_identity(ctx, &fp));
  CLATTN_TRY(clattn__xgemm_space(ctx, &space));
  rc = tuner_init(ctx, db, m, n, k, &t);
  if (rc != CLATTN_OK) {
    clattn__space_free(&space);
    return rc;
  }
  memset(&fam, 0, sizeof fam);
  fam.kernel = KERNEL;
  snprintf(fam.shape_class, sizeof fam.shape_class, "m%d n%d k%d", m, n, k);
  fam.self = &t;
  fam.eval = xg_eval;
  fam.predict = xg_predict;
  rc = force_indirect(ctx, m, n, k);
  if (rc == CLATTN_OK)
    rc = clattn__tune_run(ctx, db, &space, &fam, &fp, &o, out);
  /* Leave CLBlast in a defined state whatever happened. */
  rc2 = restore(ctx, db);
  if (rc == CLATTN_OK)
    rc = rc2;
  tuner_free(&t);
  clattn__space_free(&space);
done:
  return rc;
}
