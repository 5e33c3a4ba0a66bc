/* test_threads.c - TW_THREADS threads on one shared clattn context, and
 * each on its own: every output against the plain-C reference, every
 * status OK, each thread's own clattn_ctx_errmsg and
 * clattn_ctx_last_choice (tests/threads_work.c).  tests/tsan.sh runs the
 * same workers under ThreadSanitizer. */
#include "threads_work.h"
#include "util.h"

#include <criterion/criterion.h>

Test(threads, shared_context, .timeout = 600) {
  char first[600];
  clattn_ctx *ctx = tu_ctx();
  const int failures = tw_run(ctx, first, sizeof first);
  cr_expect(failures == 0, "%d failures; the first: %s", failures, first);
  clattn_ctx_destroy(ctx);
}

Test(threads, own_contexts, .timeout = 600) {
  char first[600];
  const int failures = tw_run(NULL, first, sizeof first);
  cr_expect(failures == 0, "%d failures; the first: %s", failures, first);
}
