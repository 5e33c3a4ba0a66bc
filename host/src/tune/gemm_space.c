/* gemm_space.c - CLBlast's Xgemm parameters and the space of candidates
 * the tuner may try on the context's device (tune_gemm.h). */
#include "tune/tune_gemm.h"

#include <stdio.h>
#include <string.h>

const char *const clattn__xgemm_names[CLATTN_XGEMM_NPARAMS] = {
    "GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB",
    "NDIMC", "NWG",  "SA",  "SB",  "STRM",  "STRN",  "VWM", "VWN"};

enum {
  P_GEMMK,
  P_KREG,
  P_KWG,
  P_KWI,
  P_MDIMA,
  P_MDIMC,
  P_MWG,
  P_NDIMB,
  P_NDIMC,
  P_NWG,
  P_SA,
  P_SB,
  P_STRM,
  P_STRN,
  P_VWM,
  P_VWN
};

/* ------------------------------------------------------------- space */

/* Values tried per parameter (0-terminated lists are awkward with the 0/1
 * flags, so each list carries its length). */
typedef struct vals {
  int n;
  int v[8];
} vals;

/* CPU devices (PoCL).  Two small families, since every candidate costs a
 * whole CLBlast build (the figures behind them: bench/RESULTS.md, figures
 * that shaped the code):
 *  - GEMMK=1 (CLBlast's "kernel 1", 2D register tiles, no local memory):
 *    it wants A and C in the layers' row-major orientation, so the pre-
 *    and post-processing transposes of A and C disappear.  CLBlast's tuner
 *    pairs it with KWG=KWI=1 (xgemm.hpp, V=11 and 12), but kernel 1 walks
 *    K KREG at a time while the routine pads K only to a multiple of KWG,
 *    so such candidates read past K and fail the check (non-finite
 *    values).  Here KWG = KREG.
 *  - GEMMK=0, a second family around its best on a CPU, without SA=SB=1
 *    ("local" memory is ordinary RAM on a CPU and the staging barriers
 *    cost time), STRM=STRN=1 (strided loads are gathers) or 8x8 items
 *    with 4x4 tiles (too few accumulators to keep the FMA units busy).
 *  - STRM=STRN=0: a work-item's values are contiguous, loads are vectors.
 * MDIMA/NDIMB only shape the local-memory loads (SA/SB=1); with SA=SB=0
 * they do not change the kernel, so they equal MDIMC/NDIMC (another value
 * would only rebuild the same kernel). */
static const vals cpu_gemmk1[CLATTN_XGEMM_NPARAMS] = {
    [P_GEMMK] = {1, {1}},      [P_KREG] = {2, {8, 16}},
    [P_KWG] = {2, {8, 16}},    [P_KWI] = {1, {1}},
    [P_MDIMA] = {2, {4, 8}},   [P_MDIMC] = {2, {4, 8}},
    [P_MWG] = {2, {64, 128}},  [P_NDIMB] = {2, {4, 8}},
    [P_NDIMC] = {2, {4, 8}},   [P_NWG] = {3, {32, 64, 128}},
    [P_SA] = {1, {0}},         [P_SB] = {1, {0}},
    [P_STRM] = {1, {0}},       [P_STRN] = {1, {0}},
    [P_VWM] = {3, {4, 8, 16}}, [P_VWN] = {3, {4, 8, 16}},
};
static const vals cpu_gemmk0[CLATTN_XGEMM_NPARAMS] = {
    [P_GEMMK] = {1, {0}},  [P_KREG] = {1, {1}},   [P_KWG] = {1, {16}},
    [P_KWI] = {2, {2, 8}}, [P_MDIMA] = {1, {16}}, [P_MDIMC] = {1, {16}},
    [P_MWG] = {1, {128}},  [P_NDIMB] = {1, {16}}, [P_NDIMC] = {1, {16}},
    [P_NWG] = {1, {128}},  [P_SA] = {1, {0}},     [P_SB] = {1, {0}},
    [P_STRM] = {1, {0}},   [P_STRN] = {1, {0}},   [P_VWM] = {2, {4, 8}},
    [P_VWN] = {2, {4, 8}},
};

/* Other devices: CLBlast's own exhaustive sets (xgemm.hpp, V == 1 and
 * V == 11; their extra rules SA == SB and VWM == VWN are not imposed). */
static const vals gpu_gemmk0[CLATTN_XGEMM_NPARAMS] = {
    [P_GEMMK] = {1, {0}},         [P_KREG] = {1, {1}},
    [P_KWG] = {1, {32}},          [P_KWI] = {1, {2}},
    [P_MDIMA] = {3, {8, 16, 32}}, [P_MDIMC] = {3, {8, 16, 32}},
    [P_MWG] = {3, {16, 32, 64}},  [P_NDIMB] = {3, {8, 16, 32}},
    [P_NDIMC] = {3, {8, 16, 32}}, [P_NWG] = {3, {16, 32, 64}},
    [P_SA] = {2, {0, 1}},         [P_SB] = {2, {0, 1}},
    [P_STRM] = {1, {0}},          [P_STRN] = {1, {0}},
    [P_VWM] = {3, {1, 2, 4}},     [P_VWN] = {3, {1, 2, 4}},
};
static const vals gpu_gemmk1[CLATTN_XGEMM_NPARAMS] = {
    [P_GEMMK] = {1, {1}},        [P_KREG] = {3, {1, 2, 4}},
    [P_KWG] = {3, {1, 2, 4}},    [P_KWI] = {1, {1}},
    [P_MDIMA] = {3, {4, 8, 16}}, [P_MDIMC] = {3, {4, 8, 16}},
    [P_MWG] = {3, {16, 32, 64}}, [P_NDIMB] = {3, {4, 8, 16}},
    [P_NDIMC] = {3, {4, 8, 16}}, [P_NWG] = {3, {16, 32, 64}},
    [P_SA] = {1, {0}},           [P_SB] = {1, {0}},
    [P_STRM] = {1, {0}},         [P_STRN] = {1, {0}},
    [P_VWM] = {3, {1, 2, 4}},    [P_VWN] = {3, {1, 2, 4}},
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
 * candidate costs a whole CLBlast build): square work-groups (MDIMC =
 * NDIMC), equal vector widths (VWM = VWN, as CLBlast's own kernel-1 set),
 * and a register budget: the MWI*NWI accumulators of a work-item between
 * 64 and 256 floats (4 to 16 AVX-512 registers, leaving room for the A and
 * B operands; fewer starve the FMA units, more spill). */
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
