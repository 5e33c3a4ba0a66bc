/* decode.h - internal: what the decode family's rooms share: the cache
 * checks (which clattn_kv_append runs on its cache description too), the
 * shape text and class, and the cost. */
#ifndef CLATTN_FAMILY_DECODE_H
#define CLATTN_FAMILY_DECODE_H

#include "family/plan.h"
#include "family/space.h"

/* clattn_shape_class_decode of a whole description (the library's own). */
void clattn__shape_class_decode(const clattn_decode_desc *d, char *buf,
                                size_t cap);

/* Checks of a cache description (decode, and clattn_kv_append's). */
clattn_status clattn__check_cache(const clattn_decode_desc *d, char *why,
                                  size_t cap);
/* A cache description from shape text: batch=, kv-seq= (the capacity),
 * heads=, kv-heads=, head-dim=, head-dim-v=, dtype=, layout=; known: every
 * key the family accepts (these and the ones it reads itself). */
clattn_status clattn__parse_cache(const char *text, const char *known,
                                  clattn_decode_desc *d, char *why, size_t cap);

clattn_status clattn__decode_cost(const void *desc, const void *plan,
                                  const int *lens, const clattn_profile *prof,
                                  clattn_prediction *out, double *dram_reads);

/* The cost of a split-KV combine kernel `name` (decode_combine,
 * paged_decode_combine: one item per row and VWV-wide slice of dv) merging
 * S splits of the hq query heads (with sinks, or NULL) of B sequences of
 * the lengths lens (NULL: cap each), in out; returns its DRAM reads. */
double clattn__decode_combine_cost(clattn_prediction *out, const char *name,
                                   long B, long hq, const float *sinks_of,
                                   int S, int dv, double es, const int *lens,
                                   long cap, const clattn_profile *prof);

/* A subgroup kernel (variant 3 of decode and prefill, and so of the
 * efficient families), whose work-group is one subgroup: `name` of source
 * built with the defines df, whose "SG" (and "WG", if there) is *wg.
 * required: the kernel requires that size (SG_REQD); else *wg is a guess
 * of the device's own size, and where the built kernel gets smaller
 * subgroups in work-groups of *wg items (clattn__kernel_subgroup) and
 * auto_wg allows it, *wg and the defines become that size and the kernel
 * is built again, if a lane's rows x dv accumulators fit that size
 * (clattn__subgroup_fits).  CLATTN_ERR_UNSUPPORTED where the sizes
 * disagree or the accumulators do not fit. */
clattn_status clattn__subgroup_kernel(clattn_ctx *ctx, const char *source,
                                      clattn__defs *df, const char *name,
                                      int required, int auto_wg, int rows,
                                      int dv, int *wg, cl_kernel *out);

#endif /* CLATTN_FAMILY_DECODE_H */
