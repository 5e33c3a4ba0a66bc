/* test_threads.c - TW_THREADS threads on one shared clattn context, and
 * each on its own: every output against the plain-C reference, every
 * status OK, each thread's own clattn_ctx_errmsg and
 * clattn_ctx_last_choice (tests/threads_work.c).  tests/tsan.sh runs the
 * same workers under ThreadSanitizer. */
#include "threads_work.h"
#include "util.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

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

/* One thread's failed call and choice; a later thread (which the C library
 * may give the ended one's id) has neither. */
typedef struct later {
  clattn_ctx *ctx;
  int fail; /* 1: make a call that fails; 0: report what it sees */
  pthread_t id;
  char msg[256];
  clattn_status last;
} later;

static void *later_run(void *arg) {
  later *l = arg;
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  l->id = pthread_self();
  if (l->fail) {
    clattn_attn_desc bad = {.size = sizeof(clattn_attn_desc),
                            .batch = 1,
                            .n_q = 1,
                            .n_kv = 1,
                            .heads_q = 3,
                            .heads_kv = 2,
                            .head_dim_k = 8,
                            .head_dim_v = 8};
    clattn_attention(l->ctx, &bad, NULL, NULL, NULL, NULL, NULL, NULL);
  }
  snprintf(l->msg, sizeof l->msg, "%s", clattn_ctx_errmsg(l->ctx));
  l->last = clattn_ctx_last_choice(l->ctx, &ch);
  return NULL;
}

Test(threads, later_thread_starts_clean) {
  clattn_ctx *ctx = tu_ctx();
  later a = {.ctx = ctx, .fail = 1}, b = {.ctx = ctx, .fail = 0};
  pthread_t t;
  cr_assert(pthread_create(&t, NULL, later_run, &a) == 0);
  cr_assert(pthread_join(t, NULL) == 0);
  cr_assert(strstr(a.msg, "heads_q (3)") != NULL, "first thread: \"%s\"",
            a.msg);
  cr_assert(pthread_create(&t, NULL, later_run, &b) == 0);
  cr_assert(pthread_join(t, NULL) == 0);
  cr_log_info("the later thread %s the ended one's id",
              pthread_equal(a.id, b.id) ? "has" : "does not have");
  cr_expect_str_empty(b.msg, "later thread: \"%s\"", b.msg);
  cr_expect(b.last == CLATTN_ERR_NOT_FOUND, "later thread's last choice: %s",
            clattn_status_str(b.last));
  clattn_ctx_destroy(ctx);
}
