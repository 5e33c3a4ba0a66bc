/* paged_decode.h - internal: what the paged-decode family's files share:
 * its plan, the buffers' order and the costs. */
#ifndef CLATTN_FAMILY_PAGED_DECODE_H
#define CLATTN_FAMILY_PAGED_DECODE_H

#include "family/family.h"
#include "family/paged_common.h"

/* Its tunables, in the order of the table (paged_decode.c). */
typedef struct clattn__paged_decode_tunables {
  int splits, wg, keys;
} clattn__paged_decode_tunables;

typedef struct clattn__paged_decode_plan {
  int splits; /* work-items a (sequence, KV head), each a share of its
                 pages; 1 writes o directly (no combine) */
  int wg;     /* work-items a work-group (0: one, the default on CPUs) */
  int kb;     /* keys a block, a power of two dividing the page size */
} clattn__paged_decode_plan;

clattn_status clattn__paged_decode_cost(const void *desc, const void *plan,
                                        const int *lens,
                                        const clattn_profile *prof,
                                        clattn_prediction *out,
                                        double *dram_reads);

/* The bench baseline "contiguous" (paged_decode_contig.c). */
extern const clattn__baseline clattn__paged_decode_contiguous;

#endif /* CLATTN_FAMILY_PAGED_DECODE_H */
