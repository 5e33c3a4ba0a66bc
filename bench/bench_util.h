/* bench_util.h - small helpers shared by the benchmark programs. */
#ifndef CLATTN_BENCH_UTIL_H
#define CLATTN_BENCH_UTIL_H

#include "base/clock.h"
#include "base/stats.h"

#endif
