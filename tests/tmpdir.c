/* tmpdir.c - see tmpdir.h. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "tmpdir.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void tt_mkdtemp(char *buf, size_t cap, const char *name) {
  const char *base = getenv("TMPDIR");
  snprintf(buf, cap, "%s/clattn-test-%s-XXXXXX", base && *base ? base : "/tmp",
           name);
  cr_assert_not_null(mkdtemp(buf), "mkdtemp %s: %s", buf, strerror(errno));
}

void tt_rm_rf(const char *path) {
  struct stat sb;
  if (lstat(path, &sb) != 0)
    return;
  if (S_ISDIR(sb.st_mode)) {
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
        continue;
      char sub[4096];
      snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
      tt_rm_rf(sub);
    }
    if (d)
      closedir(d);
    rmdir(path);
  } else {
    unlink(path);
  }
}
