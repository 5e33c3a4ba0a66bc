/* clock.h - the one wall clock of the library, the CLI, the benchmarks and
 * the tests, so that every figure they compare is read the same way. */
#ifndef CLATTN_BASE_CLOCK_H
#define CLATTN_BASE_CLOCK_H

#include <time.h>

/* Monotonic seconds: a timed interval must not jump when the system clock
 * is set. */
static inline double clattn__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif /* CLATTN_BASE_CLOCK_H */
