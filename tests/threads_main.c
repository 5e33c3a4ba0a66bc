/* threads_main.c - tests/threads_work.c without Criterion, for the
 * ThreadSanitizer run (tests/tsan.sh): the shared context, then each
 * thread's own.  Exit status 0 when every check passed. */
#include "threads_work.h"

#include <stdio.h>

int main(void) {
  char first[600];
  clattn_ctx *ctx = NULL;
  clattn_status st = clattn_ctx_create(NULL, &ctx);
  if (st != CLATTN_OK) {
    fprintf(stderr, "clattn_ctx_create: %s: %s\n", clattn_status_str(st),
            clattn_ctx_errmsg(NULL));
    return 1;
  }
  int shared = tw_run(ctx, first, sizeof first);
  clattn_ctx_destroy(ctx);
  if (shared)
    fprintf(stderr, "shared context: %d failures; the first: %s\n", shared,
            first);
  int own = tw_run(NULL, first, sizeof first);
  if (own)
    fprintf(stderr, "own contexts: %d failures; the first: %s\n", own, first);
  printf("threads: shared context %d failures, own contexts %d\n", shared, own);
  return shared || own ? 1 : 0;
}
