/* gemm_rates.c - a device's GEMM rates (clattn_profile.gemm_rates),
 * derived from its tuning rows whenever a profile is read for a context
 * (clattn__profile_for); they are never stored with the profile.
 *
 * Two kinds of rows time a GEMM of known m, n and k:
 *  - CLBlast's Xgemm tuner's (kernel "clblast-xgemm", class
 *    "m512 n512 k512"), timed at exactly the class's shape;
 *  - the projection family's (kernel "projection", class
 *    "f32 m512 n512 in512"), timed at the shape tuned, whose m the class
 *    rounds to the nearest power of two.  The row's m is taken to be the
 *    class's: the family's standard shapes have powers of two there, so
 *    their rows are exact; a row tuned at another m prices the class's m
 *    at that m's time, off by their ratio (at most sqrt 2).
 * A shape's rate is its fastest current "ok" row's over both kinds,
 * 2 m n k / median_s; when there are more shapes than the profile holds,
 * the largest m n k are kept. */
#include "db/db.h"
#include "family/cvmm.h"
#include "family/family.h"

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

/* A projection class to its shape; 0 when it is not one.  The family
 * writes the class again from the shape read, so the two agree on its
 * format and m is the power of two the class holds. */
static int projection_shape(const char *cls, clattn_gemm_rate *r) {
  clattn__gemm_desc d = {0, 0, 0};
  class_text again;
  if (sscanf(cls, "f32 m%d n%d in%d", &d.m, &d.n, &d.k) != 3 || d.m < 1 ||
      d.n < 1 || d.k < 1)
    return 0;
  clattn__family_projection.shape_class(&d, again, sizeof again);
  if (strcmp(again, cls) != 0)
    return 0;
  r->m = d.m;
  r->n = d.n;
  r->k = d.k;
  return 1;
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

/* Each current "ok" row of one kernel into all[*n] (room for every row),
 * a shape already there keeping the higher rate. */
static void add_rows(const clattn_tune_entry *rows, int nrows,
                     int (*shape)(const char *, clattn_gemm_rate *),
                     clattn_gemm_rate *all, int *n) {
  for (int i = 0; i < nrows; i++) {
    const clattn_tune_entry *e = &rows[i];
    clattn_gemm_rate r;
    if (strcmp(e->status, "ok") != 0 || !(e->median_s > 0) ||
        !isfinite(e->median_s) || !clattn__tune_row_current(e) ||
        !shape(e->shape_class, &r))
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
  clattn_tune_entry *xgemm = NULL, *proj = NULL;
  clattn_gemm_rate *all = NULL;
  int nx = 0, np = 0, nall = 0;
  *n = 0;
  clattn_status rc = clattn__db_list_tune(db, fingerprint, CLATTN_XGEMM_KERNEL,
                                          NULL, &xgemm, &nx);
  if (rc == CLATTN_OK)
    rc = clattn__db_list_tune(db, fingerprint, clattn__family_projection.name,
                              NULL, &proj, &np);
  if (rc == CLATTN_OK && nx + np > 0 &&
      (all = malloc((size_t)(nx + np) * sizeof *all)) == NULL)
    rc = CLATTN_ERR_NOMEM;
  if (rc == CLATTN_OK) {
    add_rows(xgemm, nx, xgemm_shape, all, &nall);
    add_rows(proj, np, projection_shape, all, &nall);
    if (nall > 1)
      qsort(all, (size_t)nall, sizeof *all, larger_first);
    *n = nall < cap ? nall : cap;
    if (*n > 0)
      memcpy(rates, all, (size_t)*n * sizeof *rates);
  }
  free(all);
  free(xgemm);
  free(proj);
  return rc;
}
