/* plan.h - internal: how a call's kernels are shaped, as pure functions of
 * the call's description and a few facts about the target device.  The
 * variant modules plan every launch with these, and the model predicts the
 * costs of exactly these plans, for present devices and datasheet ones. */
#ifndef CLATTN_PLAN_H
#define CLATTN_PLAN_H

#include "base/target.h"
#include "clattn_tools.h"

/* clattn_params field by field, in the order of its text
 * (clattn_params_format, the tuning database's keys) and of the tuner's
 * space dimensions: the names, and field i of p. */
enum { CLATTN__NPARAMS = 7 };
/* The text writes fields past the first six only when set, so that rows
 * of families without them read as before. */
enum { CLATTN__NPARAMS_ALWAYS = 6 };
extern const char *const clattn__param_names[CLATTN__NPARAMS];
int *clattn__param(clattn_params *p, int i);

/* The params text (params_text.c; clattn_params_format / _parse are the
 * public forms): whether any field of p (may be NULL) is set, and
 * "name=value" fields parsed into *out (fields not named stay). */
int clattn__params_set(const clattn_params *p);
/* clattn_params_format / _parse on the library's own whole struct. */
void clattn__params_format(const clattn_params *p, char *buf, size_t cap);
clattn_status clattn__params_parse(const char *text, clattn_params *out);
clattn_status clattn__params_fields(const char *text, clattn_params *out,
                                    char *why, size_t cap);

/* Largest of 16, 8, 4, 2, 1 that divides n: the vector width the kernels
 * are built with for a head dim of n (the launches' VWK and VWV). */
int clattn__vec_width(int n);

/* Prefill (clattn_attention). */
typedef struct clattn__prefill_plan {
  int variant;  /* 1 register-blocked (kv_stage + attn_fwd_reg), 2 local */
  int rb, kb;   /* variant 1: rows per work-item, keys per tile */
  double spill; /* variant 1: share of QK^T's accumulator vectors beyond
                   the CPU's registers (0: they fit) */
  int wg;       /* work-items per group (variant 2; optional for 1) */
  int kt;       /* variant 2: keys per tile */
  int ld;       /* variant 1: staged row length (>= n_kv, see kv_stage) */
  int kv_same;  /* V is K (the efficient family): each key row read once */
} clattn__prefill_plan;

/* Resolve the plan; on a bad params field returns the status and writes
 * the reason to why. */
clattn_status clattn__plan_prefill(const clattn__target *t,
                                   const clattn_attn_desc *d,
                                   clattn__prefill_plan *pl, char *why,
                                   size_t cap);
/* Local memory of attn_fwd_local. */
size_t clattn__prefill_local_bytes(const clattn_attn_desc *d,
                                   const clattn__prefill_plan *pl);

/* The layer projects inputs of at most this many rows with one CLBlast
 * GEMV per row instead of a GEMM. */
#define CLATTN_LAYER_GEMV_ROWS 4

/* Decode (clattn_decode). */
typedef struct clattn__decode_plan {
  int variant; /* 1 decode_split_reg, 2 decode_split_local */
  int kb;      /* keys per block (variant 1) or per tile (variant 2) */
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
} clattn__decode_plan;

/* The KV append has no tunables; kv_same writes K alone (one tensor). */
typedef struct clattn__append_plan {
  int kv_same;
} clattn__append_plan;

clattn_status clattn__plan_decode(const clattn__target *t,
                                  const clattn_decode_desc *d,
                                  clattn__decode_plan *pl, char *why,
                                  size_t cap);
/* Local memory of decode_split_local. */
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

/* A plan as the params that give it, each field set, in one normal form
 * (fields a variant ignores are 0; a one-item work-group is 0, the
 * default): the form of tuning candidates and of clattn_choice.resolved.
 * Planning these params again gives the same plan. */
clattn_params clattn__prefill_resolved(const clattn__prefill_plan *pl);
clattn_params clattn__decode_resolved(const clattn__decode_plan *pl);

#endif /* CLATTN_PLAN_H */
