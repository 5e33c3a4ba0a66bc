/* paged_prefill.h - internal: the paged-prefill family's plan and tunables,
 * shared by its room's files (paged_prefill.c, paged_prefill_cost.c,
 * paged_prefill_contig.c). */
#ifndef CLATTN_FAMILY_PAGED_PREFILL_H
#define CLATTN_FAMILY_PAGED_PREFILL_H

#include "family/family.h"
#include "family/paged_common.h"

/* Its tunables, in the order of its table (paged_prefill.c). */
typedef struct clattn__paged_prefill_tunables {
  int rows, keys, wg;
} clattn__paged_prefill_tunables;

/* A launch of cl/paged_prefill.cl's kernel: rq rows and wg work-items a
 * work-group, kt keys a tile. */
typedef struct clattn__paged_prefill_plan {
  int rq, kt, wg;
} clattn__paged_prefill_plan;

/* Local memory of the kernel. */
size_t clattn__paged_prefill_local(const clattn_paged_desc *d,
                                   const clattn__paged_prefill_plan *pl);

clattn_status clattn__paged_prefill_cost(const void *desc, const void *plan,
                                         const int *kv_lens,
                                         const clattn_profile *prof,
                                         clattn_prediction *out,
                                         double *dram_reads);

/* The "contiguous" baseline of `clattn bench` (paged_prefill_contig.c). */
extern const clattn__baseline clattn__paged_prefill_contig;

#endif
