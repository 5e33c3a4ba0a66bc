/* decode.h - internal: what the decode and append rooms share: the cache
 * checks and the append's description. */
#ifndef CLATTN_FAMILY_DECODE_H
#define CLATTN_FAMILY_DECODE_H

#include "family/plan.h"
#include "family/space.h"

/* clattn_kv_append's call: the cache it writes and the rows a sequence. */
typedef struct clattn__append_desc {
  clattn_decode_desc cache;
  int n_new;
} clattn__append_desc;

/* Checks of a cache description (decode and append). */
/* clattn_shape_class_decode of a whole description (the library's own). */
void clattn__shape_class_decode(const clattn_decode_desc *d, char *buf,
                                size_t cap);

clattn_status clattn__check_cache(const clattn_decode_desc *d, char *why,
                                  size_t cap);
/* A cache description from shape text: batch=, kv-seq= (the capacity),
 * heads=, kv-heads=, head-dim=, head-dim-v=, dtype=, layout=; known: every
 * key the family accepts (these and the ones it reads itself). */
clattn_status clattn__parse_cache(const char *text, const char *known,
                                  clattn_decode_desc *d, char *why, size_t cap);

/* The appends' operations of a family without tunables (append.c), which
 * the talking-heads append shares: a full call writes at the cache's
 * start; the plan is a clattn__append_plan of zeros; its one candidate
 * is the default. */
int clattn__append_full_int(const void *desc);
clattn_status clattn__append_plan_none(const clattn__target *t,
                                      const void *desc, void *pl, char *why,
                                      size_t cap);
clattn_params clattn__append_resolved(const void *pl);
clattn_status clattn__append_space(const clattn__target *t,
                                  const void *desc, clattn__space *s);

clattn_status clattn__decode_cost(const void *desc, const void *plan,
                                  const int *lens, const clattn_profile *prof,
                                  clattn_prediction *out, double *dram_reads);
clattn_status clattn__append_cost(const void *desc, const void *plan,
                                  const int *pos, const clattn_profile *prof,
                                  clattn_prediction *out, double *dram_reads);

#endif /* CLATTN_FAMILY_DECODE_H */
