/* talking_heads.h - internal: the talking-heads prefill family's plan
 * (talking_heads_plan.c) and costs (talking_heads_cost.c), shared by its
 * room (talking_heads.c). */
#ifndef CLATTN_FAMILY_TALKING_HEADS_H
#define CLATTN_FAMILY_TALKING_HEADS_H

#include "base/target.h"
#include "clattn_tools.h"
#include "family/tunables.h"

/* Its tunables, in the order of its table (talking_heads.c). */
typedef struct clattn__th_tunables {
  int variant, rows, keys, wg, scheme;
} clattn__th_tunables;

typedef struct clattn__th_plan {
  int variant; /* 1 register-blocked (th_stage + th_fwd_reg), 2 local */
  int scheme;  /* 1 one pass, per-(logit head, value head) accumulators;
                  2 two passes (statistics, then exact weights); 3 two
                  passes, pass 1's logits of the first keep keys kept in
                  local memory (variant 1) */
  int rb, kb;  /* variant 1: query positions per work-item, keys per tile */
  int wg;      /* work-items per group (variant 2; optional for 1) */
  int kt;      /* variant 2: keys per tile */
  int ld;      /* variant 1: staged row length (>= n_kv, see th_stage) */
  int keep;    /* scheme 3: keys (whole tiles) whose logits are kept */
} clattn__th_plan;

clattn_status clattn__th_plan_make(const clattn__target *t,
                                   const clattn_th_desc *d,
                                   const clattn__params *p, clattn__th_plan *pl,
                                   char *why, size_t cap);
int clattn__th_fits(const clattn__target *t, const clattn_th_desc *d,
                    const clattn__th_plan *pl, char *why, size_t cap);
clattn__params clattn__th_resolved(const clattn__th_plan *pl);
/* Local memory of th_fwd_local, or of th_fwd_reg's kept logits. */
size_t clattn__th_local_bytes(const clattn_th_desc *d,
                              const clattn__th_plan *pl);

/* FMA lanes (exp2 counted as its polynomial's) one scheme issues per
 * visible (query, key) pair, loop by loop as cl/talking_heads.cl runs
 * them: the model's measure for the automatic scheme. */
double clattn__th_pair_work(const clattn_th_desc *d, int scheme);

clattn_status clattn__th_cost(const void *desc, const void *plan,
                              const int *ints, const clattn_profile *prof,
                              clattn_prediction *out, double *dram_reads);

#endif /* CLATTN_FAMILY_TALKING_HEADS_H */
