/* bench_util.h - small helpers shared by the benchmark programs. */
#ifndef CLATTN_BENCH_UTIL_H
#define CLATTN_BENCH_UTIL_H

#include <time.h>

/* Monotonic clock in seconds. */
static inline double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* qsort comparison of doubles. */
static inline int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#endif
