/* plan.h - internal: how a call's kernels are shaped, as pure functions of
 * the call's description and a few facts about the target device.  The
 * variant modules plan every launch with these, and the model predicts the
 * costs of exactly these plans, for present devices and datasheet ones. */
#ifndef CLATTN_PLAN_H
#define CLATTN_PLAN_H

#include "base/target.h"
#include "clattn_tools.h"
#include "family/tunables.h"

/* The prefill families' tunables, in the order of their table
 * (prefill.c), and the decode families' (decode.c). */
typedef struct clattn__prefill_tunables {
  int variant, rows, keys, wg, sg;
} clattn__prefill_tunables;
typedef struct clattn__decode_tunables {
  int variant, rows, keys, wg, splits, prefetch, sg;
} clattn__decode_tunables;
/* Their tables, which the efficient families share. */
extern const clattn__tunable
    clattn__prefill_tunable_table[sizeof(clattn__prefill_tunables) /
                                  sizeof(int)];
extern const clattn__tunable
    clattn__decode_tunable_table[sizeof(clattn__decode_tunables) / sizeof(int)];

/* Largest of 16, 8, 4, 2, 1 that divides n: the vector width the kernels
 * are built with for a head dim of n (the launches' VWK and VWV). */
int clattn__vec_width(int n);

/* Prefill (clattn_attention). */
typedef struct clattn__prefill_plan {
  int variant;  /* 1 register-blocked (kv_stage + attn_fwd_reg), 2 local,
                   3 subgroups (attn_fwd_sg) */
  int rb, kb;   /* variant 1: rows per work-item, keys per tile; variant
                   3: rb rows per work-group */
  double spill; /* variant 1: share of QK^T's accumulator vectors beyond
                   the CPU's registers (0: they fit) */
  int wg;       /* work-items per group (variant 2; optional for 1) */
  int kt;       /* variant 2: keys per tile */
  int ld;       /* variant 1: staged row length (>= n_kv, see kv_stage) */
  int kv_same;  /* V is K (the efficient family): each key row read once */
  int sg;       /* variant 3: the subgroup size the kernel requires
                   (cl_intel_required_subgroup_size); 0: the device's own,
                   queried at launch (wg: its first guess) */
  int wg_auto;  /* variant 3 with neither sg nor wg given: wg is a guess
                   the launch corrects (resolved as wg 0) */
} clattn__prefill_plan;

/* Resolve the plan of d with the values p (NULL: automatic); on a bad
 * value returns the status and writes the reason to why. */
clattn_status clattn__plan_prefill(const clattn__target *t,
                                   const clattn_attn_desc *d,
                                   const clattn__params *p,
                                   clattn__prefill_plan *pl, char *why,
                                   size_t cap);
/* Local memory of attn_fwd_local. */
/* The model's count of visible (query, key) pairs (prefill_cost.c), in
 * closed form: of queries i0 .. i1 - 1 of n over L keys (window W, 0:
 * none), and of rows r0 .. r0 + count - 1 (g rows a query, rows past the
 * last counted as the last, as the kernels clamp them). */
double clattn__queries_keys(int causal, long W, long L, long n, long i0,
                            long i1);
double clattn__rows_keys(int causal, long W, long L, long n, long g, long rows,
                         long r0, long count);
size_t clattn__prefill_local_bytes(const clattn_attn_desc *d,
                                   const clattn__prefill_plan *pl);

/* The layer projects inputs of at most this many rows with one CLBlast
 * GEMV per row instead of a GEMM. */
#define CLATTN_LAYER_GEMV_ROWS 4

/* Decode (clattn_decode). */
typedef struct clattn__decode_plan {
  int variant; /* 1 decode_split_reg, 2 decode_split_local, 3
                  decode_split_sg (subgroups) */
  int kb;      /* keys per block (variant 1) or per tile (variant 2); the
                  windowed splits' alignment (variant 3) */
  int wg;      /* work-group size (variant 2; optional for variant 1) */
  int splits;  /* S; 1 means the split kernel writes o (no combine) */
  int chunk;   /* keys per split */
  int lanes;   /* variant 1 scores the heads of two keys to a vector
                  (cl/decode.cl's LANES: head_dim_k a multiple of 8, heads
                  per KV head a multiple of 8, or 4 with head_dim_k <= 64) */
  int pvh;     /* variant 1: query heads per P V pass after the first, or
                  all of them (pvh == heads per KV head) by slices of the
                  value dims (params rows; cl/decode.cl's PVH) */
  int pf;      /* variant 1: prefetch the next block (params prefetch 2;
                  cl/decode.cl's PF) */
  int kv_same; /* V is K (one cache tensor: the efficient-decode family) */
  int sg;      /* variant 3: the subgroup size the kernel requires
                  (cl_intel_required_subgroup_size); 0: the device's own,
                  queried at launch (wg: its first guess) */
  int wg_auto; /* variant 3 with neither sg nor wg given: wg is a guess
                  the launch corrects (resolved as wg 0) */
} clattn__decode_plan;

/* The KV append has no tunables; kv_same writes K alone (one tensor). */
typedef struct clattn__append_plan {
  int kv_same;
} clattn__append_plan;

clattn_status clattn__plan_decode(const clattn__target *t,
                                  const clattn_decode_desc *d,
                                  const clattn__params *p,
                                  clattn__decode_plan *pl, char *why,
                                  size_t cap);
/* Variant 3 (either family): whether the target may run it, and the
 * subgroup size sg (0: the device's own) checked against the sizes it
 * offers; the work-group is one subgroup, so wg, where set, must be sg.
 * *lanes: its work-group, sg, else wg, else a first guess of the device's
 * own size (64, or the device's largest work-group) that the launch
 * corrects, checked against a lane's accumulators of rows x dv values
 * (clattn__subgroup_fits).  Else the status and why. */
clattn_status clattn__plan_subgroup(const clattn__target *t, int sg, int wg,
                                    int rows, int dv, int *lanes, char *why,
                                    size_t cap);
/* Whether a subgroup of `lanes` lanes keeps at most 512 accumulators a
 * lane, rows x its share of the dv value dims (cl/decode.cl,
 * cl/attention.cl: private arrays); else CLATTN_ERR_UNSUPPORTED with
 * why. */
clattn_status clattn__subgroup_fits(int rows, int dv, int lanes, char *why,
                                    size_t cap);
/* Local memory of decode_split_local or decode_split_sg. */
size_t clattn__decode_local_bytes(const clattn_decode_desc *d,
                                  const clattn__decode_plan *pl);

/* Whether a plan fits the device (work-group size, local memory); if not,
 * 0 and the reason in why.  The compiled kernel's own work-group limit is
 * checked at launch.  clattn__plan_fits: a work-group of wg items (0: the
 * runtime's) using `local` bytes of local memory, for any family. */
int clattn__plan_fits(const clattn__target *t, int wg, size_t local, char *why,
                      size_t cap);
/* A register-blocked (variant 1) prefill's tiles, rb rows a work-item and
 * kb keys a tile, checked, and the staged K^T / V row length *ld for n_kv
 * keys (kv_stage, th_stage); a bad tile is the status with why. */
clattn_status clattn__plan_staged(int n_kv, int rb, int kb, int *ld, char *why,
                                  size_t cap);
/* Local memory a kernel may use: the device's, less a margin for what the
 * compiler adds. */
unsigned long long clattn__local_budget(const clattn__target *t);
int clattn__prefill_fits(const clattn__target *t, const clattn_attn_desc *d,
                         const clattn__prefill_plan *pl, char *why, size_t cap);
int clattn__decode_fits(const clattn__target *t, const clattn_decode_desc *d,
                        const clattn__decode_plan *pl, char *why, size_t cap);

/* A plan as the values that give it (family.h's resolved; a one-item
 * work-group is 0, the default, and so is variant 3's guessed one). */
clattn__params clattn__prefill_resolved(const clattn__prefill_plan *pl);
clattn__params clattn__decode_resolved(const clattn__decode_plan *pl);

#endif /* CLATTN_PLAN_H */
