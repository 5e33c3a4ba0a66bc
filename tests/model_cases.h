/* model_cases.h - the small calls whose issued work the model predicts and
 * Oclgrind counts (tests/test_model.c runs tests/kernel_run.c on each under
 * Oclgrind's instruction counter).  Between them they launch every kernel
 * of cl/attention.cl, cl/decode.cl and cl/probe.cl, with odd sizes, masks,
 * padding, empty sequences and every storage type. */
#ifndef CLATTN_TESTS_MODEL_CASES_H
#define CLATTN_TESTS_MODEL_CASES_H

#include "clattn.h"

enum { MC_ATTENTION, MC_DECODE, MC_APPEND, MC_PROBE };

/* The registry's family of a case's kind ("": the probe, no family). */
static inline const char *model_case_family(int kind) {
  return kind == MC_ATTENTION ? "prefill"
         : kind == MC_DECODE  ? "decode"
         : kind == MC_APPEND  ? "append"
                              : "";
}

typedef struct model_case {
  const char *name;
  int kind;
  int batch, n, m; /* attention: n_q, n_kv; decode: m = capacity;
                      append: n = n_new, m = capacity */
  int hq, hkv, dk, dv;
  clattn_dtype dtype;
  int causal;
  int lens[2];   /* kv_lens / lens / pos per sequence; -1: none (NULL) */
  clattn_params params;
  clattn_layout layout;
  /* MC_PROBE: one launch of a probe microkernel (host/src/probe.h) */
  int probe, vw, items, lws;
} model_case;

#define PROBE_CASE(name, k, w, n, l)                                         \
  {name, MC_PROBE, 1, 0, 0, 1, 1, 1, 1, CLATTN_F32, 0, {-1, -1},            \
   {0, 0, 0, 0, 0, 0}, CLATTN_BSHD, k, w, n, l}

static const model_case model_cases[] = {
    {"attn reg f32 causal lens", MC_ATTENTION, 2, 17, 33, 4, 2, 16, 32,
     CLATTN_F32, 1, {33, 20}, {1, 4, 16, 0, 0, 0}, CLATTN_BSHD, 0, 0, 0, 0},
    {"attn reg f16 gqa", MC_ATTENTION, 1, 9, 40, 2, 1, 32, 16, CLATTN_F16, 0,
     {-1, -1}, {1, 2, 32, 0, 0, 0}, CLATTN_BHSD, 0, 0, 0, 0},
    {"attn reg bf16 dk80", MC_ATTENTION, 1, 5, 21, 1, 1, 80, 8, CLATTN_BF16,
     1, {-1, -1}, {1, 3, 16, 0, 0, 0}, CLATTN_BSHD, 0, 0, 0, 0},
    {"attn local f32 causal lens", MC_ATTENTION, 2, 17, 33, 4, 2, 16, 32,
     CLATTN_F32, 1, {33, 0}, {2, 0, 8, 16, 0, 0}, CLATTN_BSHD, 0, 0, 0, 0},
    {"attn local bf16", MC_ATTENTION, 1, 5, 19, 3, 3, 8, 8, CLATTN_BF16, 0,
     {-1, -1}, {2, 0, 4, 4, 0, 0}, CLATTN_BHSD, 0, 0, 0, 0},
    {"decode reg f32 splits prefetch", MC_DECODE, 2, 1, 100, 8, 2, 16, 16,
     CLATTN_F32, 0, {100, 37}, {1, 0, 16, 0, 3, 2}, CLATTN_BHSD, 0, 0, 0, 0},
    {"decode reg f16 direct", MC_DECODE, 1, 1, 50, 2, 1, 32, 16, CLATTN_F16,
     0, {41, -1}, {1, 0, 16, 0, 1, 0}, CLATTN_BSHD, 0, 0, 0, 0},
    {"decode reg bf16 k12 splits", MC_DECODE, 1, 1, 45, 3, 1, 12, 20,
     CLATTN_BF16, 0, {39, -1}, {1, 0, 16, 0, 2, 0}, CLATTN_BSHD, 0, 0, 0, 0},
    /* heads in lanes (G a multiple of 8, or 4; head_dim_k of 8) */
    {"decode reg f32 lanes g8 splits", MC_DECODE, 2, 1, 70, 8, 1, 24, 16,
     CLATTN_F32, 0, {70, 23}, {1, 0, 16, 0, 3, 0}, CLATTN_BSHD, 0, 0, 0, 0},
    {"decode reg f16 lanes g16 direct", MC_DECODE, 1, 1, 40, 16, 1, 16, 8,
     CLATTN_F16, 0, {37, -1}, {1, 0, 32, 0, 1, 0}, CLATTN_BHSD, 0, 0, 0, 0},
    {"decode reg f16 lanes g4 splits", MC_DECODE, 2, 1, 53, 8, 2, 24, 16,
     CLATTN_F16, 0, {53, 28}, {1, 0, 16, 0, 2, 0}, CLATTN_BSHD, 0, 0, 0, 0},
    /* several heads per P V pass (rows): 7 = 4 + 3 (one padded head) in
     * lanes, 3 = 2 + 1 per head-major rows */
    {"decode reg f16 lanes g8 pv4", MC_DECODE, 2, 1, 50, 8, 1, 16, 16,
     CLATTN_F16, 0, {47, 19}, {1, 4, 16, 0, 2, 2}, CLATTN_BSHD, 0, 0, 0, 0},
    {"decode reg bf16 g4 pv2", MC_DECODE, 1, 1, 45, 4, 1, 12, 20,
     CLATTN_BF16, 0, {43, -1}, {1, 2, 16, 0, 3, 0}, CLATTN_BHSD, 0, 0, 0, 0},
    /* all the group's heads a pass (rows = G), by slices of the value
     * dims: 3 slices of 8 in lanes, 5 of 4 per head-major rows */
    {"decode reg f32 lanes g8 slices", MC_DECODE, 2, 1, 61, 8, 1, 16, 24,
     CLATTN_F32, 0, {61, 30}, {1, 8, 16, 0, 2, 0}, CLATTN_BSHD, 0, 0, 0, 0},
    {"decode reg bf16 g4 slices", MC_DECODE, 1, 1, 37, 4, 1, 12, 20,
     CLATTN_BF16, 0, {35, -1}, {1, 4, 16, 0, 2, 0}, CLATTN_BHSD, 0, 0, 0, 0},
    {"decode local f32 empty seq", MC_DECODE, 2, 1, 70, 4, 1, 16, 32,
     CLATTN_F32, 0, {70, 0}, {2, 0, 8, 16, 2, 0}, CLATTN_BHSD, 0, 0, 0, 0},
    {"decode local bf16 direct", MC_DECODE, 1, 1, 24, 3, 1, 8, 8,
     CLATTN_BF16, 0, {19, -1}, {2, 0, 4, 8, 1, 0}, CLATTN_BSHD, 0, 0, 0, 0},
    {"append f16 overflow", MC_APPEND, 2, 3, 20, 4, 2, 16, 8, CLATTN_F16, 0,
     {5, 18}, {0, 0, 0, 0, 0, 0}, CLATTN_BHSD, 0, 0, 0, 0},
    /* the probe's microkernels (cl/probe.cl); k = clattn__probe_kernel */
    PROBE_CASE("probe read w16", 0, 16, 8, 4),
    PROBE_CASE("probe read w1", 0, 1, 12, 4),
    PROBE_CASE("probe copy w4", 1, 4, 16, 8),
    PROBE_CASE("probe triad w8", 2, 8, 8, 8),
    PROBE_CASE("probe fma w16", 3, 16, 2, 2),
    PROBE_CASE("probe fma w2", 3, 2, 4, 2),
    PROBE_CASE("probe local w4", 4, 4, 8, 8),
    PROBE_CASE("probe empty", 5, 1, 4, 4),
};

#define MODEL_CASES ((int)(sizeof model_cases / sizeof model_cases[0]))

#endif
