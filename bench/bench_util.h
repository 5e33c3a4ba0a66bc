/* bench_util.h - small helpers shared by the benchmark programs. */
#ifndef CLATTN_BENCH_UTIL_H
#define CLATTN_BENCH_UTIL_H

#include "base/clock.h"

/* qsort comparison of doubles. */
static inline int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#endif
