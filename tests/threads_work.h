/* threads_work.h - TW_THREADS threads of clattn calls on one context or
 * each on its own, every output checked (tests/threads_work.c). */
#ifndef CLATTN_TESTS_THREADS_WORK_H
#define CLATTN_TESTS_THREADS_WORK_H

#include "clattn_tools.h"

#include <stddef.h>

#define TW_THREADS 4

/* Run the workers on ctx (NULL: each makes its own context); returns the
 * number of failures, the first described in first[cap]. */
int tw_run(clattn_ctx *ctx, char *first, size_t cap);

#endif
