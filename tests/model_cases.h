/* model_cases.h - the small calls whose issued work the model predicts and
 * Oclgrind counts (tests/test_model.c runs tests/kernel_run.c on each under
 * Oclgrind's instruction counter).  Between them they launch every kernel
 * of cl/attention.cl, cl/decode.cl, cl/talking_heads.cl, cl/th_decode.cl,
 * cl/super_values.cl, cl/cvmm.cl and cl/probe.cl, with odd sizes, masks,
 * padding, empty sequences and every storage type. */
#ifndef CLATTN_TESTS_MODEL_CASES_H
#define CLATTN_TESTS_MODEL_CASES_H

#include "family/family.h"

/* A case is a call of a registered kernel family, given as its shape text
 * (clattn_family_shape_keys), or (family NULL) one launch of a probe
 * microkernel; a new family adds its cases here and nothing else. */
typedef struct model_case {
  const char *name;
  const char *family; /* the registry's name; NULL: a probe kernel */
  const char *shape;
  int ints[2];          /* the INTS buffer per sequence (kv_lens, lens, pos);
                           -1: none (NULL when optional, else full) */
  clattn_params params; /* the caller's params (0: automatic) */
  /* probe: one launch of a probe microkernel (device/probe.h) */
  int probe, vw, items, lws;
} model_case;

#define PROBE_CASE(name, k, w, n, l)                                         \
  {name, NULL, "", {-1, -1}, {sizeof(clattn_params), 0, 0, 0, 0, 0, 0, 0}, k, w, n, l}

static const model_case model_cases[] = {
    {"attn reg f32 causal lens", "prefill",
     "batch=2 seq=17 kv-seq=33 heads=4 kv-heads=2 head-dim=16 "
     "head-dim-v=32 dtype=f32 causal=1 layout=bshd",
     {33, 20}, {sizeof(clattn_params), 1, 4, 16, 0, 0, 0, 0}, 0, 0, 0, 0},
    {"attn reg f16 gqa", "prefill",
     "batch=1 seq=9 kv-seq=40 heads=2 kv-heads=1 head-dim=32 "
     "head-dim-v=16 dtype=f16 causal=0 layout=bhsd",
     {-1, -1}, {sizeof(clattn_params), 1, 2, 32, 0, 0, 0, 0}, 0, 0, 0, 0},
    {"attn reg bf16 dk80", "prefill",
     "batch=1 seq=5 kv-seq=21 heads=1 kv-heads=1 head-dim=80 "
     "head-dim-v=8 dtype=bf16 causal=1 layout=bshd",
     {-1, -1}, {sizeof(clattn_params), 1, 3, 16, 0, 0, 0, 0}, 0, 0, 0, 0},
    {"attn local f32 causal lens", "prefill",
     "batch=2 seq=17 kv-seq=33 heads=4 kv-heads=2 head-dim=16 "
     "head-dim-v=32 dtype=f32 causal=1 layout=bshd",
     {33, 0}, {sizeof(clattn_params), 2, 0, 8, 16, 0, 0, 0}, 0, 0, 0, 0},
    {"attn local bf16", "prefill",
     "batch=1 seq=5 kv-seq=19 heads=3 kv-heads=3 head-dim=8 "
     "head-dim-v=8 dtype=bf16 causal=0 layout=bhsd",
     {-1, -1}, {sizeof(clattn_params), 2, 0, 4, 4, 0, 0, 0}, 0, 0, 0, 0},
    {"decode reg f32 splits prefetch", "decode",
     "batch=2 kv-seq=100 heads=8 kv-heads=2 head-dim=16 "
     "head-dim-v=16 dtype=f32 layout=bhsd",
     {100, 37}, {sizeof(clattn_params), 1, 0, 16, 0, 3, 2, 0}, 0, 0, 0, 0},
    {"decode reg f16 direct", "decode",
     "batch=1 kv-seq=50 heads=2 kv-heads=1 head-dim=32 "
     "head-dim-v=16 dtype=f16 layout=bshd",
     {41, -1}, {sizeof(clattn_params), 1, 0, 16, 0, 1, 0, 0}, 0, 0, 0, 0},
    {"decode reg bf16 k12 splits", "decode",
     "batch=1 kv-seq=45 heads=3 kv-heads=1 head-dim=12 "
     "head-dim-v=20 dtype=bf16 layout=bshd",
     {39, -1}, {sizeof(clattn_params), 1, 0, 16, 0, 2, 0, 0}, 0, 0, 0, 0},
    /* heads in lanes (G a multiple of 8, or 4; head_dim_k of 8) */
    {"decode reg f32 lanes g8 splits", "decode",
     "batch=2 kv-seq=70 heads=8 kv-heads=1 head-dim=24 "
     "head-dim-v=16 dtype=f32 layout=bshd",
     {70, 23}, {sizeof(clattn_params), 1, 0, 16, 0, 3, 0, 0}, 0, 0, 0, 0},
    {"decode reg f16 lanes g16 direct", "decode",
     "batch=1 kv-seq=40 heads=16 kv-heads=1 head-dim=16 "
     "head-dim-v=8 dtype=f16 layout=bhsd",
     {37, -1}, {sizeof(clattn_params), 1, 0, 32, 0, 1, 0, 0}, 0, 0, 0, 0},
    {"decode reg f16 lanes g4 splits", "decode",
     "batch=2 kv-seq=53 heads=8 kv-heads=2 head-dim=24 "
     "head-dim-v=16 dtype=f16 layout=bshd",
     {53, 28}, {sizeof(clattn_params), 1, 0, 16, 0, 2, 0, 0}, 0, 0, 0, 0},
    /* several heads per P V pass (rows): 7 = 4 + 3 (one padded head) in
     * lanes, 3 = 2 + 1 per head-major rows */
    {"decode reg f16 lanes g8 pv4", "decode",
     "batch=2 kv-seq=50 heads=8 kv-heads=1 head-dim=16 "
     "head-dim-v=16 dtype=f16 layout=bshd",
     {47, 19}, {sizeof(clattn_params), 1, 4, 16, 0, 2, 2, 0}, 0, 0, 0, 0},
    {"decode reg bf16 g4 pv2", "decode",
     "batch=1 kv-seq=45 heads=4 kv-heads=1 head-dim=12 "
     "head-dim-v=20 dtype=bf16 layout=bhsd",
     {43, -1}, {sizeof(clattn_params), 1, 2, 16, 0, 3, 0, 0}, 0, 0, 0, 0},
    /* all the group's heads a pass (rows = G), by slices of the value
     * dims: 3 slices of 8 in lanes, 5 of 4 per head-major rows */
    {"decode reg f32 lanes g8 slices", "decode",
     "batch=2 kv-seq=61 heads=8 kv-heads=1 head-dim=16 "
     "head-dim-v=24 dtype=f32 layout=bshd",
     {61, 30}, {sizeof(clattn_params), 1, 8, 16, 0, 2, 0, 0}, 0, 0, 0, 0},
    {"decode reg bf16 g4 slices", "decode",
     "batch=1 kv-seq=37 heads=4 kv-heads=1 head-dim=12 "
     "head-dim-v=20 dtype=bf16 layout=bhsd",
     {35, -1}, {sizeof(clattn_params), 1, 4, 16, 0, 2, 0, 0}, 0, 0, 0, 0},
    {"decode local f32 empty seq", "decode",
     "batch=2 kv-seq=70 heads=4 kv-heads=1 head-dim=16 "
     "head-dim-v=32 dtype=f32 layout=bhsd",
     {70, 0}, {sizeof(clattn_params), 2, 0, 8, 16, 2, 0, 0}, 0, 0, 0, 0},
    {"decode local bf16 direct", "decode",
     "batch=1 kv-seq=24 heads=3 kv-heads=1 head-dim=8 "
     "head-dim-v=8 dtype=bf16 layout=bshd",
     {19, -1}, {sizeof(clattn_params), 2, 0, 4, 8, 1, 0, 0}, 0, 0, 0, 0},
    {"append f16 overflow", "append",
     "batch=2 kv-seq=20 new=3 heads=4 kv-heads=2 head-dim=16 "
     "head-dim-v=8 dtype=f16 layout=bhsd",
     {5, 18}, {sizeof(clattn_params), 0, 0, 0, 0, 0, 0, 0}, 0, 0, 0, 0},
    /* talking-heads: h_k != h != h_v, both variants x every scheme */
    {"th reg f32 two-pass causal lens", "talking-heads",
     "batch=2 seq=11 kv-seq=37 heads-k=3 heads=5 heads-v=2 head-dim=16 "
     "head-dim-v=8 dtype=f32 causal=1 layout=bshd",
     {37, 0}, {sizeof(clattn_params), 1, 4, 16, 0, 0, 0, 2}, 0, 0, 0, 0},
    {"th reg bf16 logits-in-local causal lens", "talking-heads",
     "batch=2 seq=10 kv-seq=29 heads-k=2 heads=3 heads-v=4 head-dim=8 "
     "head-dim-v=16 dtype=bf16 causal=1 layout=bhsd",
     {29, 5}, {sizeof(clattn_params), 1, 3, 16, 0, 0, 0, 3}, 0, 0, 0, 0},
    {"th reg f32 logits partly kept", "talking-heads",
     "batch=1 seq=8 kv-seq=80 heads-k=2 heads=32 heads-v=2 head-dim=4 "
     "head-dim-v=4 dtype=f32 causal=0 layout=bshd",
     {-1, -1}, {sizeof(clattn_params), 1, 8, 16, 0, 0, 0, 3}, 0, 0, 0, 0},
    {"th reg f16 one-pass", "talking-heads",
     "batch=1 seq=7 kv-seq=21 heads-k=2 heads=1 heads-v=3 head-dim=8 "
     "head-dim-v=12 dtype=f16 causal=0 layout=bhsd",
     {-1, -1}, {sizeof(clattn_params), 1, 2, 32, 0, 0, 0, 1}, 0, 0, 0, 0},
    {"th local bf16 two-pass", "talking-heads",
     "batch=1 seq=9 kv-seq=19 heads-k=2 heads=3 heads-v=2 head-dim=8 "
     "head-dim-v=4 dtype=bf16 causal=1 layout=bshd",
     {15, -1}, {sizeof(clattn_params), 2, 0, 4, 4, 0, 0, 2}, 0, 0, 0, 0},
    {"th local f32 one-pass lens", "talking-heads",
     "batch=2 seq=6 kv-seq=13 heads-k=3 heads=2 heads-v=1 head-dim=4 "
     "head-dim-v=8 dtype=f32 causal=0 layout=bhsd",
     {13, 0}, {sizeof(clattn_params), 2, 0, 8, 4, 0, 0, 1}, 0, 0, 0, 0},
    /* talking-heads decode: h_k, h, h_v all different, splits 1 and
     * several, lens 0 and partial, every dtype, both layouts; h = 8 and
     * h_v = 4 take the vector paths of th_decode.cl */
    {"th decode f32 3/5/2 splits empty", "talking-heads-decode",
     "batch=2 kv-seq=45 heads-k=3 heads=5 heads-v=2 head-dim=12 "
     "head-dim-v=20 dtype=f32 layout=bhsd",
     {0, 31}, {sizeof(clattn_params), 1, 0, 16, 0, 3, 0, 0}, 0, 0, 0, 0},
    {"th decode f16 direct", "talking-heads-decode",
     "batch=1 kv-seq=37 heads-k=2 heads=8 heads-v=4 head-dim=16 "
     "head-dim-v=8 dtype=f16 layout=bshd",
     {29, -1}, {sizeof(clattn_params), 1, 0, 32, 0, 1, 0, 0}, 0, 0, 0, 0},
    {"th decode bf16 splits wg", "talking-heads-decode",
     "batch=2 kv-seq=50 heads-k=4 heads=4 heads-v=1 head-dim=8 "
     "head-dim-v=12 dtype=bf16 layout=bshd",
     {50, 17}, {sizeof(clattn_params), 1, 0, 16, 2, 4, 0, 0}, 0, 0, 0, 0},
    /* the append into a talking-heads cache: more value heads than key
     * heads (items past the key heads copy V alone) and fewer */
    {"append th bf16 hk<hv overflow", "append",
     "batch=2 kv-seq=20 new=3 heads-k=2 heads=5 heads-v=3 head-dim=16 "
     "head-dim-v=8 dtype=bf16 layout=bshd",
     {5, 18}, {sizeof(clattn_params), 0, 0, 0, 0, 0, 0, 0}, 0, 0, 0, 0},
    {"append th f32 hk>hv bhsd", "append",
     "batch=1 kv-seq=9 new=2 heads-k=3 heads-v=1 head-dim=4 "
     "head-dim-v=12 dtype=f32 layout=bhsd",
     {7, -1}, {sizeof(clattn_params), 0, 0, 0, 0, 0, 0, 0}, 0, 0, 0, 0},
    /* Efficient attention's K == V core: each X row loaded once for K and
     * V (the local kernels' tiles, the staging; decode's register kernel
     * reloads V from L1, which the loads count) */
    {"efficient reg f32 causal lens", "efficient-prefill",
     "batch=2 seq=17 kv-seq=33 heads=4 kv-heads=2 head-dim=16 dtype=f32 "
     "causal=1 layout=bshd",
     {33, 20}, {sizeof(clattn_params), 1, 4, 16, 0, 0, 0, 0}, 0, 0, 0, 0},
    {"efficient local f16 bhsd", "efficient-prefill",
     "batch=1 seq=9 kv-seq=21 heads=2 kv-heads=2 head-dim=8 dtype=f16 "
     "causal=0 layout=bshd kv-layout=bhsd",
     {-1, -1}, {sizeof(clattn_params), 2, 0, 8, 16, 0, 0, 0}, 0, 0, 0, 0},
    {"efficient decode reg f32 splits", "efficient-decode",
     "batch=2 kv-seq=70 heads=4 kv-heads=4 head-dim=16 dtype=f32 "
     "layout=bhsd",
     {70, 33}, {sizeof(clattn_params), 1, 0, 16, 0, 3, 0, 0}, 0, 0, 0, 0},
    {"efficient decode local bf16 direct", "efficient-decode",
     "batch=1 kv-seq=24 heads=3 kv-heads=3 head-dim=8 dtype=bf16 "
     "layout=bshd",
     {19, -1}, {sizeof(clattn_params), 2, 0, 8, 16, 1, 0, 0}, 0, 0, 0, 0},
    {"efficient append f32 overflow", "efficient-append",
     "batch=2 kv-seq=20 new=3 heads=4 kv-heads=4 head-dim=8 dtype=f32 "
     "layout=bhsd",
     {5, 18}, {sizeof(clattn_params), 0, 0, 0, 0, 0, 0, 0}, 0, 0, 0, 0},
    /* Super's values: a causal block at pos 5 whose rows divide no tile
     * (the triangle and a partial last block), a full mix, odd head dims
     * (vectors of 1), and the automatic plan */
    {"super-values causal pos bhsd", "super-values",
     "batch=2 seq=7 pos=5 kv-seq=14 heads=2 head-dim=8 max-len=13 "
     "causal=1 layout=bhsd kv-layout=bhsd",
     {-1, -1}, {sizeof(clattn_params), 1, 3, 0, 4, 0, 0, 0}, 0, 0, 0, 0},
    {"super-values full bshd", "super-values",
     "batch=1 seq=6 pos=0 kv-seq=9 heads=3 head-dim=4 max-len=6 causal=0 "
     "layout=bshd kv-layout=bhsd",
     {-1, -1}, {sizeof(clattn_params), 1, 4, 0, 0, 0, 0, 0}, 0, 0, 0, 0},
    {"super-values odd dims decode row", "super-values",
     "batch=2 seq=1 pos=10 kv-seq=11 heads=3 head-dim=5 max-len=11 "
     "causal=1 layout=bshd kv-layout=bhsd",
     {-1, -1}, {sizeof(clattn_params), 1, 2, 0, 8, 0, 0, 0}, 0, 0, 0, 0},
    {"super-values auto", "super-values",
     "batch=1 seq=9 pos=2 kv-seq=12 heads=2 head-dim=6 max-len=12 causal=1 "
     "layout=bshd",
     {-1, -1}, {sizeof(clattn_params), 0, 0, 0, 0, 0, 0, 0}, 0, 0, 0, 0},
    /* the expert-routed GEMM where its routing is deterministic (every
     * expert chosen, or none routed): both modes and kernel shapes, tiles
     * and column blocks that divide nothing, register blocks of R and the
     * remainders below it; and the projection family's own kernel */
    {"cvmm reg split all experts", "cvmm",
     "seq=13 model-dim=9 heads=2 head-dim=11 experts=3 topk=3 mode=split",
     {-1, -1}, {sizeof(clattn_params), 1, 4, 8, 0, 8, 0, 0}, 0, 0, 0, 0},
    {"cvmm reg sum all experts", "cvmm",
     "batch=2 seq=7 model-dim=10 heads=2 head-dim=7 experts=2 topk=2 "
     "mode=sum",
     {-1, -1}, {sizeof(clattn_params), 1, 3, 4, 0, 5, 0, 0}, 0, 0, 0, 0},
    {"cvmm local split all experts", "cvmm",
     "seq=13 model-dim=9 heads=2 head-dim=11 experts=3 topk=3 mode=split",
     {-1, -1}, {sizeof(clattn_params), 2, 2, 8, 16, 8, 0, 0}, 0, 0, 0, 0},
    {"cvmm local sum all experts", "cvmm",
     "seq=11 model-dim=19 heads=3 head-dim=5 experts=2 topk=2 mode=sum",
     {-1, -1}, {sizeof(clattn_params), 2, 4, 16, 32, 8, 0, 0}, 0, 0, 0, 0},
    {"cvmm reg split no routing", "cvmm",
     "seq=9 model-dim=6 heads=3 head-dim=5 experts=1 gate=none mode=split",
     {-1, -1}, {sizeof(clattn_params), 1, 2, 4, 0, 3, 0, 0}, 0, 0, 0, 0},
    {"cvmm local sum no routing", "cvmm",
     "seq=9 model-dim=6 heads=3 head-dim=5 experts=1 gate=none mode=sum",
     {-1, -1}, {sizeof(clattn_params), 2, 2, 8, 16, 12, 0, 0}, 0, 0, 0, 0},
    /* the fused small-rows kernel (scheme 2): routing recomputed by each
     * column block, register blocks of R and a remainder, no routing */
    {"cvmm small split all experts", "cvmm",
     "seq=5 model-dim=9 heads=2 head-dim=11 experts=3 topk=3 mode=split",
     {-1, -1}, {sizeof(clattn_params), 1, 2, 8, 0, 0, 0, 2}, 0, 0, 0, 0},
    {"cvmm small sum all experts", "cvmm",
     "seq=5 model-dim=10 heads=2 head-dim=7 experts=2 topk=2 mode=sum",
     {-1, -1}, {sizeof(clattn_params), 1, 3, 4, 0, 0, 0, 2}, 0, 0, 0, 0},
    {"cvmm small sum no routing", "cvmm",
     "seq=3 model-dim=6 heads=3 head-dim=5 experts=1 gate=none mode=sum",
     {-1, -1}, {sizeof(clattn_params), 1, 2, 4, 0, 0, 0, 2}, 0, 0, 0, 0},
    {"projection own reg", "projection", "m=11 n=13 k=9 dtype=f32", {-1, -1},
     {sizeof(clattn_params), 1, 4, 8, 0, 8, 0, 1}, 0, 0, 0, 0},
    {"projection own local", "projection", "m=10 n=21 k=17 dtype=f32", {-1, -1},
     {sizeof(clattn_params), 2, 2, 16, 32, 6, 0, 1}, 0, 0, 0, 0},
    /* rows of W 512 bytes apart: the register kernel packs W's panel */
    {"projection own reg packed", "projection", "m=13 n=128 k=7 dtype=f32", {-1, -1},
     {sizeof(clattn_params), 1, 3, 48, 0, 6, 0, 1}, 0, 0, 0, 0},
    {"cvmm reg sum packed", "cvmm",
     "seq=11 model-dim=128 heads=2 head-dim=5 experts=2 topk=2 mode=sum",
     {-1, -1}, {sizeof(clattn_params), 1, 2, 48, 0, 8, 0, 0}, 0, 0, 0, 0},
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

/* A case's family and description (desc: CLATTN__DESC_MAX bytes), its
 * params set; an unknown family or a bad shape is an error. */
static inline clattn_status model_case_desc(const model_case *mc,
                                            const clattn__family **F,
                                            void *desc) {
  _Alignas(16) unsigned char d[CLATTN__DESC_MAX];
  char why[256];
  *F = clattn__family_find(mc->family);
  if (*F == NULL)
    return CLATTN_ERR_NOT_FOUND;
  clattn_status st = (*F)->parse_shape(mc->shape, d, why, sizeof why);
  if (st == CLATTN_OK)
    clattn__desc_with_params(*F, d, &mc->params, desc);
  return st;
}

#endif
