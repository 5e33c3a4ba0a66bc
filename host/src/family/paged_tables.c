/* paged_tables.c - a paged call's block table and lengths (paged_tables.h). */
#include "family/paged_tables.h"

#include <stdio.h>
#include <stdlib.h>

long clattn__paged_capacity(const clattn_paged_desc *d) {
  return (long)d->max_blocks * d->page_size;
}

static unsigned lcg(unsigned *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

void clattn__paged_fill_table(const clattn_paged_desc *d, const int *len,
                              int full, int *table) {
  const int nb = d->num_blocks, ps = d->page_size;
  int *perm = malloc((size_t)nb * sizeof *perm);
  unsigned seed = 2024u;
  if (perm != NULL) {
    for (int i = 0; i < nb; i++)
      perm[i] = i;
    for (int i = nb - 1; i > 0; i--) { /* Fisher-Yates */
      const int j = (int)(lcg(&seed) % (unsigned)(i + 1)), t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
  }
  static const int garbage[3] = {-1, 1 << 30, 0};
  long next = 0;
  for (int b = 0; b < d->batch; b++) {
    const long l = len ? len[b] : full;
    const long need = l > 0 ? (l + ps - 1) / ps : 0;
    for (long j = 0; j < d->max_blocks; j++) {
      int *e = &table[(size_t)b * d->max_blocks + j];
      if (j < need) {
        const int page = (int)(next++ % nb);
        *e = perm ? perm[page] : page;
      } else {
        *e = j % 3 == 2 ? nb + (int)j : garbage[j % 3];
      }
    }
  }
  free(perm);
}

clattn_status clattn__paged_check_tables(const clattn_paged_desc *d,
                                         const int *table, const int *lens,
                                         char *why, size_t cap) {
  const long capacity = clattn__paged_capacity(d);
  for (int b = 0; b < d->batch; b++) {
    if (lens[b] < 0 || lens[b] > capacity) {
      snprintf(why, cap,
               "kv_lens[%d] = %d: outside 0 .. %ld (max_blocks %d x "
               "page_size %d)",
               b, lens[b], capacity, d->max_blocks, d->page_size);
      return CLATTN_ERR_SHAPE;
    }
    const long need = ((long)lens[b] + d->page_size - 1) / d->page_size;
    for (long j = 0; j < need; j++) {
      const int page = table[(size_t)b * d->max_blocks + j];
      if (page < 0 || page >= d->num_blocks) {
        snprintf(why, cap,
                 "block_table[%d][%ld] = %d: not a page of the pool (0..%d), "
                 "and kv_lens[%d] = %d needs it",
                 b, j, page, d->num_blocks - 1, b, lens[b]);
        return CLATTN_ERR_SHAPE;
      }
    }
  }
  return CLATTN_OK;
}
