/* paged_tables.h - internal: the block table and lengths of a paged call
 * (clattn_paged_desc), for every paged family: the harness's shuffled
 * table and the check of a call's tables before anything is enqueued. */
#ifndef CLATTN_FAMILY_PAGED_TABLES_H
#define CLATTN_FAMILY_PAGED_TABLES_H

#include "clattn.h"

#include <stddef.h>

/* The positions a sequence may hold: max_blocks * page_size. */
long clattn__paged_capacity(const clattn_paged_desc *d);

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

#endif
