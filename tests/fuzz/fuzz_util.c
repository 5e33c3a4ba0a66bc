/* fuzz_util.c - the targets' scratch files (fuzz_util.h). */
#include "fuzz_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char scratch[256];

static void remove_scratch(void) {
  char cmd[300];
  /* Only what this process made: the mkdtemp directory. */
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
  if (system(cmd) != 0)
    fprintf(stderr, "fuzz: could not remove %s\n", scratch);
}

const char *fuzz_scratch_dir(void) {
  if (scratch[0])
    return scratch;
  /* CLATTN_FUZZ_TMP: run.sh's directory, removed by it even after a crash
   * (abort skips atexit). */
  struct stat st;
  const char *base = getenv("CLATTN_FUZZ_TMP");
  if (base == NULL || !base[0])
    base = stat("/dev/shm", &st) == 0 && access("/dev/shm", W_OK) == 0
               ? "/dev/shm"
               : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  snprintf(scratch, sizeof scratch, "%s/clattn-fuzz-XXXXXX", base);
  if (mkdtemp(scratch) == NULL)
    fuzz_fail("fuzz: mkdtemp %s failed", scratch);
  atexit(remove_scratch);
  return scratch;
}

const char *fuzz_scratch_path(const char *name) {
  static char path[4][512];
  static int next;
  char *p = path[next++ % 4];
  snprintf(p, sizeof path[0], "%s/%s", fuzz_scratch_dir(), name);
  return p;
}

void fuzz_write_file(const char *path, const uint8_t *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (f == NULL || (size && fwrite(data, 1, size, f) != size) || fclose(f))
    fuzz_fail("fuzz: cannot write %s", path);
}

void fuzz_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}
