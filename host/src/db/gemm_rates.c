/* gemm_rates.c - a device's GEMM rates (clattn_profile.gemm_rates),
 * derived from its tuning rows whenever a profile is read for a context
 * (clattn__profile_for); they are never stored with the profile.
 *
 * The rows are CLBlast's Xgemm tuner's (kernel "clblast-xgemm", class
 * "m512 n512 k512"), each timed at exactly its class's shape: a shape's
 * rate is its fastest current "ok" row's, 2 m n k / median_s; when there
 * are more shapes than the profile holds, the largest m n k are kept.
 * The projection family's own tuning rows are not read: their times are
 * the projection kernels' own, and a kernel's measured time never feeds
 * its own prediction (docs/MODEL.md, "Honest calibration"). */
#include "db/db.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef char class_text[sizeof(((clattn_tune_entry *)0)->shape_class)];

/* An Xgemm tuner's class to its shape; 0 when it is not one. */
static int xgemm_shape(const char *cls, clattn_gemm_rate *r) {
  class_text again;
  if (sscanf(cls, "m%d n%d k%d", &r->m, &r->n, &r->k) != 3 || r->m < 1 ||
      r->n < 1 || r->k < 1)
    return 0;
  snprintf(again, sizeof again, "m%d n%d k%d", r->m, r->n, r->k);
  return strcmp(again, cls) == 0;
}

static double volume(const clattn_gemm_rate *r) {
  return (double)r->m * r->n * r->k;
}

/* The largest m n k first; equal volumes by m, n, k (a stable order). */
static int larger_first(const void *pa, const void *pb) {
  const clattn_gemm_rate *a = pa, *b = pb;
  const double va = volume(a), vb = volume(b);
  if (va != vb)
    return va > vb ? -1 : 1;
  if (a->m != b->m)
    return a->m > b->m ? -1 : 1;
  if (a->n != b->n)
    return a->n > b->n ? -1 : 1;
  return a->k > b->k ? -1 : a->k < b->k;
}

/* Each current "ok" Xgemm row into all[*n] (room for every row), a shape
 * already there keeping the higher rate. */
static void add_rows(const clattn_tune_entry *rows, int nrows,
                     clattn_gemm_rate *all, int *n) {
  for (int i = 0; i < nrows; i++) {
    const clattn_tune_entry *e = &rows[i];
    clattn_gemm_rate r;
    if (strcmp(e->status, "ok") != 0 || !(e->median_s > 0) ||
        !isfinite(e->median_s) || !clattn__tune_row_current(e) ||
        !xgemm_shape(e->shape_class, &r))
      continue;
    r.gflops = 2.0 * volume(&r) / e->median_s * 1e-9;
    int j = 0;
    while (j < *n && !(all[j].m == r.m && all[j].n == r.n && all[j].k == r.k))
      j++;
    if (j == *n)
      all[(*n)++] = r;
    else if (r.gflops > all[j].gflops)
      all[j].gflops = r.gflops;
  }
}

clattn_status clattn__db_gemm_rates(clattn_db *db, const char *fingerprint,
                                    clattn_gemm_rate *rates, int cap, int *n) {
  clattn_tune_entry *rows = NULL;
  clattn_gemm_rate *all = NULL;
  int nrows = 0, nall = 0;
  *n = 0;
  clattn_status rc = clattn__db_list_tune(db, fingerprint, CLATTN_XGEMM_KERNEL,
                                          NULL, &rows, &nrows);
  if (rc == CLATTN_OK && nrows > 0 &&
      (all = malloc((size_t)nrows * sizeof *all)) == NULL)
    rc = CLATTN_ERR_NOMEM;
  if (rc == CLATTN_OK) {
    add_rows(rows, nrows, all, &nall);
    if (nall > 1)
      qsort(all, (size_t)nall, sizeof *all, larger_first);
    *n = nall < cap ? nall : cap;
    if (*n > 0)
      memcpy(rates, all, (size_t)*n * sizeof *rates);
  }
  free(all);
  free(rows);
  return rc;
}
