/* th_decode.h - internal: what the talking-heads decode's rooms share: the
 * cache checks (which clattn_talking_heads_append runs on its cache
 * description too) and shape text, the plan and the cost. */
#ifndef CLATTN_FAMILY_TH_DECODE_H
#define CLATTN_FAMILY_TH_DECODE_H

#include "family/plan.h"

/* The decode's plan: one variant (a work-item per split and sequence). */
typedef struct clattn__th_decode_plan {
  int kb;     /* split lengths are a multiple of kb keys (params keys) */
  int wg;     /* work-items per group, 0: one */
  int splits; /* S; 1 means th_values writes o (no th_combine) */
  int chunk;  /* keys per split */
} clattn__th_decode_plan;

/* Checks of a talking-heads cache description (decode, and
 * clattn_talking_heads_append's). */
clattn_status clattn__th_check_cache(const clattn_th_decode_desc *d, char *why,
                                     size_t cap);
/* A cache description from shape text: batch=, kv-seq= (the capacity),
 * heads= (h), heads-k= and heads-v= (default h), head-dim=, head-dim-v=,
 * dtype=, layout=; known: every key the family accepts. */
clattn_status clattn__th_parse_cache(const char *text, const char *known,
                                     clattn_th_decode_desc *d, char *why,
                                     size_t cap);
/* The shape class of a cache description. */
void clattn__th_shape_class(const clattn_th_decode_desc *d, char *buf,
                            size_t cap);
/* Vector width (16, 8, 4 or 1) dividing a head count, for th_decode.cl's
 * VH and VU. */
int clattn__th_head_width(int n);

clattn_status clattn__th_decode_cost(const void *desc, const void *plan,
                                     const int *lens,
                                     const clattn_profile *prof,
                                     clattn_prediction *out,
                                     double *dram_reads);

#endif /* CLATTN_FAMILY_TH_DECODE_H */
