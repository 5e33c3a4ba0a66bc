/* paged_common.h - internal: what every paged family (paged-decode,
 * paged-prefill, paged-append) shares about a clattn_paged_desc: the
 * cache's storage type, the pool's size checks, the block table and
 * lengths (the harness's shuffled table, their buffer specs and the check
 * of a call's tables before anything is enqueued) and the shape text's
 * common keys. */
#ifndef CLATTN_FAMILY_PAGED_COMMON_H
#define CLATTN_FAMILY_PAGED_COMMON_H

#include "family/common.h"
#include "family/family.h"

#include <stddef.h>

/* The buffers of clattn_paged_attention (paged-decode and paged-prefill),
 * in paged_api.c's order. */
enum {
  PA_Q,
  PA_K_CACHE,
  PA_V_CACHE,
  PA_K_SCALE,
  PA_V_SCALE,
  PA_TABLE,
  PA_LENS,
  PA_O,
  PA_NBUFS
};

/* The cache's storage type of d (cache_dtype 0 is dtype's). */
clattn_dtype clattn__paged_cache_dtype(const clattn_paged_desc *d);

/* The rules of a description that every paged family checks: a page size
 * that is a power of two from 1 to 256 (CLATTN_ERR_SHAPE naming page_size),
 * and a cache type of 0 (the dtype's), the dtype itself or CLATTN_I8
 * (CLATTN_ERR_UNSUPPORTED for another storage type, CLATTN_ERR_INVALID_ARG
 * for a number that is none). */
int clattn__paged_page_ok(const clattn_paged_desc *d);
clattn_status clattn__paged_check_page(const clattn_paged_desc *d, char *why,
                                       size_t cap);
clattn_status clattn__paged_check_cache(const clattn_paged_desc *d, char *why,
                                        size_t cap);
/* CLATTN_ERR_SHAPE naming num_blocks and max_blocks when either is below 1,
 * or their capacity max_blocks * page_size when it passes an int32. */
clattn_status clattn__paged_check_blocks(const clattn_paged_desc *d, char *why,
                                         size_t cap);

/* The positions a sequence may hold: max_blocks * page_size. */
long clattn__paged_capacity(const clattn_paged_desc *d);

/* The pool's K, V and scale buffers within clattn__check_tensor's limit;
 * why names the one that is not. */
clattn_status clattn__paged_check_pool(const clattn_paged_desc *d, char *why,
                                       size_t cap);

/* The specs of the block table [batch, max_blocks] and of kv_lens [batch]. */
void clattn__paged_int_specs(const clattn_paged_desc *d,
                             clattn__buf_spec *table, clattn__buf_spec *lens);

/* The family hooks of the tables, the same in every paged family: the
 * tuner's full call (every sequence at the table's capacity), the
 * `unchecked` flag, and the harness's values: the shuffled table when
 * is_table, else the lengths per_seq (NULL: full for each). */
int clattn__paged_full_int(const void *desc);
int clattn__paged_ints_unchecked(const void *desc);
void clattn__paged_fill_ints(const void *desc, int is_table, const int *per_seq,
                             int full, int *out);
/* fill_ints and check_ints of the families of clattn_paged_attention (their
 * buffers PA_*): the shuffled table, garbage past each length, and the
 * check of the table and lengths (clattn__paged_check_tables). */
void clattn__paged_attn_fill_ints(const void *desc, int buf, const int *per_seq,
                                  int full, int *out);
clattn_status clattn__paged_attn_check_ints(const void *desc,
                                            const int *const *ints, char *why,
                                            size_t cap);

/* Block table [batch, max_blocks] for the lengths len[b] (NULL: `full` for
 * every sequence): the pages a length needs are distinct pages of the pool
 * in a shuffled order, and the entries past them garbage (-1, a page past
 * the pool, a huge index) that a read past a length would show.  When the
 * lengths need more pages than the pool has, the later sequences share
 * them (a harness-only case: the checks refuse nothing for sharing). */
void clattn__paged_fill_table(const clattn_paged_desc *d, const int *len,
                              int full, int *table);

/* CLATTN_ERR_SHAPE naming the entry: a length outside 0 .. capacity, or a
 * page index outside the pool where a length needs it. */
clattn_status clattn__paged_check_tables(const clattn_paged_desc *d,
                                         const int *table, const int *lens,
                                         char *why, size_t cap);

/* The block table [batch * max_blocks] and kv_lens [batch] of a call of
 * clattn_paged_attention (bufs[PA_TABLE], bufs[PA_LENS]) read back into
 * table and lens, blocking (the bench baselines' gathers): the CL error. */
cl_int clattn__paged_read_tables(clattn_ctx *ctx, const clattn_paged_desc *d,
                                 const cl_mem *bufs, int *table, int *lens);

/* The shape text's keys that paged-decode and paged-prefill read alike: the
 * attention keys (into *s, known listing every key), heads=, kv-heads=
 * (heads= when absent) and page= (1 to 256; *page keeps its default when
 * absent). */
clattn_status clattn__paged_shape_heads(const char *text, const char *known,
                                        clattn__attn_shape *s, int *heads_q,
                                        int *heads_kv, int *page, char *why,
                                        size_t cap);

/* The description of a shape text's call (paged-decode, paged-prefill):
 * n_q queries a sequence over kv-seq (s->n_kv) keys, each sequence's table
 * holding kv-seq rounded up to whole pages and the pool exactly the pages
 * the batch needs; the cache in cache_dtype; no options. */
clattn_paged_desc clattn__paged_shape_desc(const clattn__attn_shape *s, int n_q,
                                           int heads_q, int heads_kv, int page,
                                           clattn_dtype cache_dtype);

#endif
