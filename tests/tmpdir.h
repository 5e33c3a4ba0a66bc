/* tmpdir.h - a temporary directory for the tests that write files (the
 * tuning database, exports, caches): made under $TMPDIR (else /tmp), and
 * removed with everything in it. */
#ifndef CLATTN_TESTS_TMPDIR_H
#define CLATTN_TESTS_TMPDIR_H

#include <stddef.h>

/* Make "$TMPDIR/clattn-test-NAME-XXXXXX" into buf; fails the test when it
 * cannot. */
void tt_mkdtemp(char *buf, size_t cap, const char *name);

/* Remove path: a file, or a directory and everything below it (links are
 * removed, never followed). */
void tt_rm_rf(const char *path);

#endif
