/* out_file.c - output files written safely (base/out_file.h): a unique
 * temporary renamed over a regular file, devices and FIFOs written
 * through, links followed on purpose, inputs never overwritten. */
#define _DEFAULT_SOURCE /* realpath */
#include "base/out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int fail(char *err, size_t cap, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int fail(char *err, size_t cap, int code, const char *fmt, ...) {
  if (err != NULL && cap > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* ----------------------------------------------------- the temporary */

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* 64 bits no other writer guesses: the kernel's random bytes where they
 * can be read, mixed with the time, the process and a counter (two
 * threads of one process at the same nanosecond still differ). */
static uint64_t random_bits(void) {
  static atomic_ulong counter;
  struct timespec real, mono;
  clock_gettime(CLOCK_REALTIME, &real);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  uint64_t s = (uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec;
  s ^= ((uint64_t)getpid() << 32) ^ (uint64_t)mono.tv_nsec;
  s ^= (uint64_t)atomic_fetch_add(&counter, 1) << 48;
  uint64_t r = 0;
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, &r, sizeof r) != (ssize_t)sizeof r)
      r = 0;
    close(fd);
  }
  s ^= r;
  return splitmix64(&s);
}

int clattn__tmp_create(const char *path, char *tmp, size_t cap) {
  /* a clash (another writer's temporary, or a name planted there) takes
   * the next random name; O_NOFOLLOW: a planted link is never followed */
  for (int attempt = 0; attempt < 64; attempt++) {
    const int n = snprintf(tmp, cap, "%s.tmp.%016llx", path,
                           (unsigned long long)random_bits());
    if (n < 0 || (size_t)n >= cap) {
      errno = ENAMETOOLONG;
      return -1;
    }
    const int fd =
        open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST)
      return fd;
  }
  errno = EEXIST;
  return -1;
}

/* -------------------------------------------------------- opening */

/* The first input that is the file st describes, or NULL. */
static const char *same_input(const struct stat *st, const char *const *inputs,
                              int n_inputs) {
  for (int i = 0; i < n_inputs; i++) {
    struct stat in;
    if (inputs[i] != NULL && stat(inputs[i], &in) == 0 &&
        in.st_dev == st->st_dev && in.st_ino == st->st_ino)
      return inputs[i];
  }
  return NULL;
}

static int open_through(clattn__out_file *o, char *err, size_t cap) {
  /* a FIFO waits here for its reader, as a shell's redirection does */
  const int fd = open(o->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return fail(err, cap, errno, "cannot write %s: %s", o->path,
                strerror(errno));
  o->f = fdopen(fd, "w");
  if (o->f == NULL) {
    const int e = errno;
    close(fd);
    return fail(err, cap, e, "cannot write %s: %s", o->path, strerror(e));
  }
  o->through = 1;
  return 0;
}

int clattn__out_open(clattn__out_file *o, const char *path,
                     const char *const *inputs, int n_inputs, char *err,
                     size_t cap) {
  memset(o, 0, sizeof *o);
  o->path = path;
  if (path == NULL || path[0] == '\0')
    return fail(err, cap, EINVAL, "no output file name");
  struct stat st, lst;
  const int exists = stat(path, &st) == 0; /* what a link points at */
  if (!exists && errno != ENOENT)
    return fail(err, cap, errno, "cannot write %s: %s", path, strerror(errno));
  const int is_link = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode);
  if (exists) {
    const char *in = same_input(&st, inputs, n_inputs);
    if (in != NULL && strcmp(in, path) != 0)
      return fail(err, cap, EINVAL,
                  "%s is the same file as %s, an input: not overwritten", path,
                  in);
    if (in != NULL)
      return fail(err, cap, EINVAL, "%s is an input: not overwritten", path);
    if (S_ISDIR(st.st_mode))
      return fail(err, cap, EINVAL, "%s is a directory", path);
    if (S_ISBLK(st.st_mode))
      return fail(err, cap, EINVAL, "%s is a block device: not written", path);
    if (S_ISSOCK(st.st_mode))
      return fail(err, cap, EINVAL, "%s is a socket: not written", path);
    if (!S_ISREG(st.st_mode)) /* a character device or a FIFO */
      return open_through(o, err, cap);
  } else if (is_link) {
    return fail(err, cap, EINVAL,
                "%s is a symbolic link to a missing file: not followed", path);
  }
  /* a link's target is the file replaced, in the target's directory */
  if (is_link) {
    char real[PATH_MAX];
    if (realpath(path, real) == NULL)
      return fail(err, cap, errno, "cannot resolve %s: %s", path,
                  strerror(errno));
    if (strlen(real) >= sizeof o->target)
      return fail(err, cap, ENAMETOOLONG, "%s: %s", path,
                  strerror(ENAMETOOLONG));
    memcpy(o->target, real, strlen(real) + 1);
  } else {
    if (strlen(path) >= sizeof o->target)
      return fail(err, cap, ENAMETOOLONG, "%s: %s", path,
                  strerror(ENAMETOOLONG));
    memcpy(o->target, path, strlen(path) + 1);
  }
  const int fd = clattn__tmp_create(o->target, o->tmp, sizeof o->tmp);
  if (fd < 0) {
    const int e = errno;
    o->tmp[0] = '\0';
    return fail(err, cap, e,
                "cannot write %s: cannot create a temporary "
                "file beside it: %s",
                path, strerror(e));
  }
  o->f = fdopen(fd, "w");
  if (o->f == NULL) {
    const int e = errno;
    close(fd);
    unlink(o->tmp);
    o->tmp[0] = '\0';
    return fail(err, cap, e, "cannot write %s: %s", path, strerror(e));
  }
  return 0;
}

/* -------------------------------------------------------- closing */

int clattn__out_close(clattn__out_file *o, int ok, char *err, size_t cap) {
  int rc = 0;
  if (o->f == NULL)
    return 0;
  errno = 0;
  if (ok && (fflush(o->f) != 0 || ferror(o->f)))
    rc = fail(err, cap, errno ? errno : EIO, "writing %s: %s", o->path,
              strerror(errno ? errno : EIO));
  if (ok && !rc && !o->through && fsync(fileno(o->f)) != 0)
    rc = fail(err, cap, errno, "writing %s: %s", o->path, strerror(errno));
  if (fclose(o->f) != 0 && ok && !rc)
    rc = fail(err, cap, errno, "writing %s: %s", o->path, strerror(errno));
  o->f = NULL;
  if (o->through)
    return ok ? rc : 0;
  struct stat st;
  if (ok && !rc && lstat(o->target, &st) == 0 && !S_ISREG(st.st_mode))
    rc = fail(err, cap, EINVAL, "%s is no longer a regular file: not replaced",
              o->target);
  if (ok && !rc && rename(o->tmp, o->target) != 0)
    rc = fail(err, cap, errno, "cannot rename %s to %s: %s", o->tmp, o->target,
              strerror(errno));
  if (!ok || rc)
    unlink(o->tmp);
  o->tmp[0] = '\0';
  return ok ? rc : 0;
}
