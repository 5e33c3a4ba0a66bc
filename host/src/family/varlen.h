/* varlen.h - internal: the varlen family's plan, shared by its room
 * (varlen.c, varlen_cost.c, varlen_padded.c). */
#ifndef CLATTN_FAMILY_VARLEN_H
#define CLATTN_FAMILY_VARLEN_H

#include "clattn_tools.h"

/* The most query rows one work-item holds (RPI of cl/varlen.cl). */
enum { CLATTN__VARLEN_MAX_RPI = 32 };

typedef struct clattn__varlen_plan {
  int variant; /* 1 staged (varlen_stage + varlen_fwd_staged), 2 direct */
  int bq;      /* query positions a tile (a work-group) */
  int kb;      /* keys a tile, a multiple of 16 */
  int wg;      /* work-items a work-group */
  int rpi;     /* rows a work-item: ceil(bq * heads per KV head / wg) */
  int ld;      /* variant 1: staged row length (>= total_k + kb) */
} clattn__varlen_plan;

/* The lengths of a full call's sequences (the tuner's and the bench's):
 * total split in proportion to the fixed mixed pattern 1, 3, 2, 8, 1, 5,
 * 4, 8 (repeated), the last sequence absorbing the rounding. */
void clattn__varlen_pattern(int batch, int total, int *lens);

/* Work-groups of the launch along its first dimension: sequence b's tiles
 * start at group cu_q[b] / bq + b. */
long clattn__varlen_groups(const clattn_varlen_desc *d, int bq);

clattn_status clattn__varlen_cost(const void *desc, const void *plan,
                                  const int *ints, const clattn_profile *prof,
                                  clattn_prediction *out, double *dram_reads);

#endif /* CLATTN_FAMILY_VARLEN_H */
