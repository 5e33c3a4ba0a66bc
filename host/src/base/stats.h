/* stats.h - the one comparator and median of measured times, shared by the
 * library, the CLI and the benchmarks so that a median means the same in
 * each. */
#ifndef CLATTN_BASE_STATS_H
#define CLATTN_BASE_STATS_H

#include <stdlib.h>

/* qsort comparator of doubles that orders them without the overflow or
 * rounding a subtraction would bring. */
static inline int clattn__cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0..n) (n >= 1), the mean of the two middle values when n
 * is even; v is sorted in place, so callers that need the order keep a
 * copy. */
static inline double clattn__median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, clattn__cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif /* CLATTN_BASE_STATS_H */
