/* test_program_cache.c - the on-disk program cache against bad files.
 *
 * A cache file is read by every later process, so a damaged, hostile or
 * odd file at a cache path must never crash, stall or mislead a call: each
 * case below runs a context and one small attention call in a child
 * process (a crash inside the OpenCL driver kills only the child, and the
 * child is killed by alarm() if it stalls), checks its output against the
 * plain-C reference, and checks that the bad file was rebuilt from source
 * and rewritten.  The parent never initialises OpenCL, so fork() is safe. */
#include "clattn_tools.h"
#include "reference/ref.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------ the call */

enum { B = 1, N = 3, M = 5, H = 1, DK = 4, DK_MAX = 8 };

/* The head dimension of the call (another one is another program, so
 * another cache key). */
static int call_dk = DK;

/* What a child reports through its exit status. */
enum {
  CHILD_OK = 0,
  CHILD_CTX_FAILED = 10,
  CHILD_CALL_FAILED = 11,
  CHILD_WRONG_OUTPUT = 12,
  CHILD_NO_REBUILD = 13, /* a bad file was loaded instead of rebuilt */
  CHILD_NOT_REWRITTEN = 14,
  CHILD_OPENCL = 15,
  CHILD_UNEXPECTED_BUILD = 16,
  CHILD_SHARED_TEMPORARY = 17, /* two writers wrote through one name */
  CHILD_ONE_WRITER = 18,       /* only one of two threads wrote */
};

/* What the child expects of the cache. */
typedef enum expect {
  EXPECT_ANY,         /* no expectation (populating a cache) */
  EXPECT_REBUILT,     /* a source build, written back to disk */
  EXPECT_UNWRITABLE,  /* a source build that could not be written */
  EXPECT_ALL_HITS,    /* disk hits only, no source build */
  EXPECT_ALL_WRITTEN, /* every source build written to disk */
} expect;

static cl_mem upload(cl_context clc, const float *x, size_t n) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(clc, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            n * sizeof *x, (void *)x, &err);
  return err == CL_SUCCESS ? m : NULL;
}

/* One context on cache directory `dir` (NULL: no disk cache) and one attention
 * call checked against the reference; a CHILD_* status. */
static int call_once(const char *dir, expect want) {
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  o.cache_dir = dir;
  o.no_disk_cache = dir == NULL;
  clattn_ctx *ctx = NULL;
  if (clattn_ctx_create(&o, &ctx) != CLATTN_OK) {
    fprintf(stderr, "ctx: %s\n", clattn_ctx_errmsg(ctx));
    return CHILD_CTX_FAILED;
  }
  const int dk = call_dk;
  const int NQ = B * N * H * dk, NK = B * M * H * dk;
  float q[B * N * H * DK_MAX], k[B * M * H * DK_MAX], v[B * M * H * DK_MAX],
      got[B * N * H * DK_MAX], want_o[B * N * H * DK_MAX];
  for (int i = 0; i < NQ; i++)
    q[i] = (float)((i * 7 % 11) - 5) / 5.0f;
  for (int i = 0; i < NK; i++) {
    k[i] = (float)((i * 5 % 13) - 6) / 6.0f;
    v[i] = (float)((i * 3 % 7) - 3) / 3.0f;
  }
  cl_context clc = clattn_ctx_cl_context(ctx);
  cl_mem bq = upload(clc, q, (size_t)NQ), bk = upload(clc, k, (size_t)NK),
         bv = upload(clc, v, (size_t)NK), bo = upload(clc, q, (size_t)NQ);
  int rc = CHILD_OK;
  if (!bq || !bk || !bv || !bo) {
    rc = CHILD_OPENCL;
    goto out;
  }
  clattn_attn_desc d = {.size = sizeof(clattn_attn_desc),
                        .batch = B,
                        .n_q = N,
                        .n_kv = M,
                        .heads_q = H,
                        .heads_kv = H,
                        .head_dim_k = dk,
                        .head_dim_v = dk,
                        .dtype = CLATTN_F32,
                        .causal = 1};
  if (clattn_attention(ctx, &d, bq, bk, bv, NULL, bo, NULL) != CLATTN_OK) {
    fprintf(stderr, "call: %s\n", clattn_ctx_errmsg(ctx));
    rc = CHILD_CALL_FAILED;
    goto out;
  }
  if (clEnqueueReadBuffer(clattn_ctx_queue(ctx), bo, CL_TRUE, 0,
                          (size_t)NQ * sizeof *got, got, 0, NULL,
                          NULL) != CL_SUCCESS) {
    rc = CHILD_OPENCL;
    goto out;
  }
  ref_attn a = {.b = B,
                .n = N,
                .m = M,
                .hq = H,
                .hkv = H,
                .dk = dk,
                .dv = dk,
                .scale = 1.0 / sqrt((double)dk),
                .causal = 1};
  ref_attention(&a, q, k, v, want_o);
  for (int i = 0; i < NQ; i++)
    if (!(fabsf(got[i] - want_o[i]) <= 1e-4f)) {
      fprintf(stderr, "o[%d] = %g, want %g\n", i, got[i], want_o[i]);
      rc = CHILD_WRONG_OUTPUT;
      goto out;
    }
  clattn_cache_stats s = {.size = sizeof(clattn_cache_stats)};
  clattn_ctx_cache_stats(ctx, &s);
  if ((want == EXPECT_REBUILT || want == EXPECT_UNWRITABLE) &&
      s.source_builds == 0)
    rc = CHILD_NO_REBUILD;
  else if ((want == EXPECT_REBUILT || want == EXPECT_ALL_WRITTEN) &&
           s.disk_writes != s.source_builds)
    rc = CHILD_NOT_REWRITTEN;
  else if (want == EXPECT_UNWRITABLE && s.disk_writes != 0)
    rc = CHILD_NOT_REWRITTEN;
  else if (want == EXPECT_ALL_HITS &&
           (s.source_builds != 0 || s.disk_hits == 0))
    rc = CHILD_UNEXPECTED_BUILD;
out:
  if (bq)
    clReleaseMemObject(bq);
  if (bk)
    clReleaseMemObject(bk);
  if (bv)
    clReleaseMemObject(bv);
  if (bo)
    clReleaseMemObject(bo);
  clattn_ctx_destroy(ctx);
  return rc;
}

/* Seconds a child may take before it counts as stalled. */
#define CHILD_ALARM_S 30

/* call_once in a child process; its wait status. */
static int call_in_child(const char *dir, expect want) {
  fflush(NULL);
  pid_t pid = fork();
  cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
  if (pid == 0) {
    alarm(CHILD_ALARM_S);
    _exit(call_once(dir, want));
  }
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0)
    cr_assert_eq(errno, EINTR, "waitpid: %s", strerror(errno));
  return ws;
}

static const char *child_outcome(int ws, char *buf, size_t cap) {
  if (WIFSIGNALED(ws))
    snprintf(buf, cap, "killed by signal %d (%s)", WTERMSIG(ws),
             WTERMSIG(ws) == SIGALRM ? "stalled" : strsignal(WTERMSIG(ws)));
  else
    snprintf(buf, cap, "exit %d", WEXITSTATUS(ws));
  return buf;
}

/* Run the call in a child and expect a clean pass. */
static void expect_child_ok(const char *dir, expect want, const char *what) {
  char buf[96];
  int ws = call_in_child(dir, want);
  cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == CHILD_OK, "%s: child %s", what,
            child_outcome(ws, buf, sizeof buf));
}

/* ------------------------------------------------------------ the files */

#define MAX_FILES 16

typedef struct cache_files {
  int n;
  char path[MAX_FILES][4096];
  unsigned char *bytes[MAX_FILES]; /* the pristine contents */
  size_t len[MAX_FILES];
} cache_files;

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "open %s: %s", path, strerror(errno));
  cr_assert_eq(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  cr_assert_geq(n, 0);
  rewind(f);
  unsigned char *b = malloc((size_t)n + 1);
  cr_assert_not_null(b);
  cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return b;
}

static void spit(const char *path, const unsigned char *b, size_t n) {
  unlink(path);
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "create %s: %s", path, strerror(errno));
  cr_assert_eq(fwrite(b, 1, n, f), n);
  cr_assert_eq(fclose(f), 0);
}

/* Names in dir that are not "." or ".."; -1 when dir cannot be read. */
static int count_entries(const char *dir, const char *containing) {
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
        (containing == NULL || strstr(e->d_name, containing) != NULL))
      n++;
  closedir(d);
  return n;
}

/* The cache files of dir, pristine contents kept. */
static void load_files(const char *dir, cache_files *cf) {
  memset(cf, 0, sizeof *cf);
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t nl = strlen(e->d_name);
    if (nl < 4 || strcmp(e->d_name + nl - 4, ".bin") != 0)
      continue;
    cr_assert_lt(cf->n, MAX_FILES);
    snprintf(cf->path[cf->n], sizeof cf->path[0], "%s/%s", dir, e->d_name);
    cf->bytes[cf->n] = slurp(cf->path[cf->n], &cf->len[cf->n]);
    cf->n++;
  }
  closedir(d);
  cr_assert_gt(cf->n, 0, "no cache file in %s", dir);
}

static void restore_files(const cache_files *cf) {
  for (int i = 0; i < cf->n; i++)
    spit(cf->path[i], cf->bytes[i], cf->len[i]);
}

static void free_files(cache_files *cf) {
  for (int i = 0; i < cf->n; i++)
    free(cf->bytes[i]);
}

static void remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0)
    return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    struct dirent *e;
    char sub[4096];
    while (d && (e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
      remove_tree(sub);
    }
    if (d)
      closedir(d);
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* The file at path is a regular file; 1 when it equals b[0..n). */
static int file_equals(const char *path, const unsigned char *b, size_t n) {
  struct stat st;
  if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != n)
    return 0;
  size_t len = 0;
  unsigned char *got = slurp(path, &len);
  int same = len == n && memcmp(got, b, n) == 0;
  free(got);
  return same;
}

/* A fresh cache directory populated by one call; its files. */
static char *populated(char *tmpl, cache_files *cf) {
  char *dir = mkdtemp(tmpl);
  cr_assert_not_null(dir, "mkdtemp: %s", strerror(errno));
  expect_child_ok(dir, EXPECT_ANY, "populating the cache");
  load_files(dir, cf);
  return dir;
}

static void setup(void) { unsetenv("CLATTN_NO_DISK_CACHE"); }

/* --------------------------------------------------------------- cases */

/* Single-bit flips across one real cached binary, header and payload
 * ($CLATTN_TEST_FLIPS trials, 200 by default): every flip is caught before
 * the driver sees the file, the call is right, and the file is rewritten
 * whole. */
Test(program_cache, bit_flips, .init = setup, .timeout = 600) {
  char tmpl[] = "/tmp/clattn-cache-flip-XXXXXX";
  cache_files cf;
  char *dir = populated(tmpl, &cf);
  /* the largest file: the most room for a flip to reach the driver */
  int f = 0;
  for (int i = 1; i < cf.n; i++)
    if (cf.len[i] > cf.len[f])
      f = i;
  const size_t bits = cf.len[f] * 8;
  const char *env = getenv("CLATTN_TEST_FLIPS");
  const size_t trials = env ? (size_t)strtoul(env, NULL, 10) : 200;
  /* one trial in 8 in the first 1024 bits (the header and the start of
   * the driver's own format), the rest spread evenly over the file */
  size_t crashed = 0, failed = 0, done = 0, loaded = 0, wrong = 0;
  char first[256] = "";
  unsigned char *bad = malloc(cf.len[f]);
  cr_assert_not_null(bad);
  for (size_t t = 0; t < trials; t++) {
    size_t bit =
        t % 8 == 0 ? (t / 8 * 61) % (bits < 1024 ? bits : 1024)
                   : (size_t)((double)t / (double)trials * (double)bits) % bits;
    restore_files(&cf);
    memcpy(bad, cf.bytes[f], cf.len[f]);
    bad[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    spit(cf.path[f], bad, cf.len[f]);
    int ws = call_in_child(dir, EXPECT_REBUILT);
    done++;
    int ok = WIFEXITED(ws) && WEXITSTATUS(ws) == CHILD_OK;
    struct stat st;
    /* rewritten: the bad bytes are gone and a whole file is in place */
    if (ok && (file_equals(cf.path[f], bad, cf.len[f]) ||
               stat(cf.path[f], &st) != 0 || st.st_size < 64))
      ok = 0;
    if (!ok) {
      failed++;
      crashed += WIFSIGNALED(ws) != 0;
      loaded += WIFEXITED(ws) && WEXITSTATUS(ws) == CHILD_NO_REBUILD;
      wrong += WIFEXITED(ws) && (WEXITSTATUS(ws) == CHILD_WRONG_OUTPUT ||
                                 WEXITSTATUS(ws) == CHILD_CALL_FAILED);
      if (first[0] == '\0') {
        char buf[96];
        snprintf(first, sizeof first, "bit %zu of %zu: child %s", bit, bits,
                 child_outcome(ws, buf, sizeof buf));
      }
    }
  }
  free(bad);
  cr_expect_eq(failed, 0,
               "%zu of %zu single-bit flips not handled: %zu crashed the "
               "process, %zu failed the call or gave a wrong output, %zu "
               "were loaded as they were; first: %s",
               failed, done, crashed, wrong, loaded, first);
  cr_expect_eq(count_entries(dir, ".tmp"), 0, "temporary files left behind");
  /* the last rewrite is a good file: the next context only hits the disk */
  expect_child_ok(dir, EXPECT_ALL_HITS, "after the last rewrite");
  free_files(&cf);
  remove_tree(dir);
}

/* Truncated files, from empty to one byte short. */
Test(program_cache, truncated, .init = setup, .timeout = 300) {
  char tmpl[] = "/tmp/clattn-cache-trunc-XXXXXX";
  cache_files cf;
  char *dir = populated(tmpl, &cf);
  const size_t cuts[] = {0, 1, 7, 8, 23, 24, 55, 56, 71, 72, 73};
  for (size_t c = 0; c < sizeof cuts / sizeof cuts[0] + 2; c++) {
    restore_files(&cf);
    for (int i = 0; i < cf.n; i++) {
      size_t n = c < sizeof cuts / sizeof cuts[0]    ? cuts[c]
                 : c == sizeof cuts / sizeof cuts[0] ? cf.len[i] / 2
                                                     : cf.len[i] - 1;
      if (n > cf.len[i])
        n = cf.len[i];
      cr_assert_eq(truncate(cf.path[i], (off_t)n), 0);
    }
    char what[64];
    snprintf(what, sizeof what, "truncation case %zu", c);
    expect_child_ok(dir, EXPECT_REBUILT, what);
    for (int i = 0; i < cf.n; i++) {
      struct stat st;
      cr_assert_eq(stat(cf.path[i], &st), 0);
      cr_expect_gt((size_t)st.st_size, cuts[sizeof cuts / sizeof cuts[0] - 1],
                   "%s: %s not rewritten", what, cf.path[i]);
    }
  }
  /* what was rewritten is good: the next context only hits the disk */
  expect_child_ok(dir, EXPECT_ALL_HITS, "after the rewrites");
  free_files(&cf);
  remove_tree(dir);
}

/* A file that is whole and valid, but another key's (copied or renamed
 * by hand): another program, never to be loaded in its place. */
Test(program_cache, another_keys_file, .init = setup, .timeout = 300) {
  char tmpl[] = "/tmp/clattn-cache-swap-XXXXXX";
  cache_files cf;
  char *dir = populated(tmpl, &cf);
  char other_tmpl[] = "/tmp/clattn-cache-other-XXXXXX";
  cache_files other;
  call_dk = 2 * DK;
  char *other_dir = populated(other_tmpl, &other);
  call_dk = DK;
  for (int i = 0; i < cf.n; i++)
    spit(cf.path[i], other.bytes[0], other.len[0]);
  expect_child_ok(dir, EXPECT_REBUILT, "another key's file");
  for (int i = 0; i < cf.n; i++)
    cr_expect(!file_equals(cf.path[i], other.bytes[0], other.len[0]),
              "another key's file was not replaced");
  expect_child_ok(dir, EXPECT_ALL_HITS, "after the rewrite");
  free_files(&other);
  remove_tree(other_dir);
  free_files(&cf);
  remove_tree(dir);
}

/* Things at a cache path that are not regular files: a FIFO (opening it
 * for reading would block until a writer came), a directory, symbolic
 * links to /dev/zero and to a huge sparse file. */
Test(program_cache, not_regular_files, .init = setup, .timeout = 300) {
  char tmpl[] = "/tmp/clattn-cache-odd-XXXXXX";
  cache_files cf;
  char *dir = populated(tmpl, &cf);

  for (int i = 0; i < cf.n; i++) {
    cr_assert_eq(unlink(cf.path[i]), 0);
    cr_assert_eq(mkfifo(cf.path[i], 0600), 0, "mkfifo: %s", strerror(errno));
  }
  expect_child_ok(dir, EXPECT_REBUILT, "a FIFO at the cache path");
  for (int i = 0; i < cf.n; i++) {
    struct stat st;
    cr_assert_eq(lstat(cf.path[i], &st), 0);
    cr_expect(S_ISREG(st.st_mode), "the FIFO was not replaced");
  }

  for (int i = 0; i < cf.n; i++) {
    cr_assert_eq(unlink(cf.path[i]), 0);
    cr_assert_eq(mkdir(cf.path[i], 0700), 0);
  }
  expect_child_ok(dir, EXPECT_UNWRITABLE, "a directory at the cache path");

  for (int i = 0; i < cf.n; i++) {
    cr_assert_eq(rmdir(cf.path[i]), 0);
    cr_assert_eq(symlink("/dev/zero", cf.path[i]), 0);
  }
  expect_child_ok(dir, EXPECT_REBUILT, "a link to /dev/zero");

  char huge[4200];
  snprintf(huge, sizeof huge, "%s/huge", dir);
  int fd = open(huge, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  cr_assert_geq(fd, 0);
  /* a valid file's start, then 8 GiB of holes */
  cr_assert_eq(write(fd, cf.bytes[0], cf.len[0]), (ssize_t)cf.len[0]);
  cr_assert_eq(ftruncate(fd, (off_t)8 << 30), 0);
  close(fd);
  for (int i = 0; i < cf.n; i++) {
    cr_assert_eq(unlink(cf.path[i]), 0);
    cr_assert_eq(symlink(huge, cf.path[i]), 0);
  }
  expect_child_ok(dir, EXPECT_REBUILT, "a link to a huge file");
  cr_expect_eq(unlink(huge), 0);

  expect_child_ok(dir, EXPECT_ALL_HITS, "after the rewrites");
  cr_expect_eq(count_entries(dir, ".tmp"), 0, "temporary files left behind");
  free_files(&cf);
  remove_tree(dir);
}

/* A disk that fills while a cache file is written: this executable links
 * the library's static archive with -Wl,--wrap=write, so the library's own
 * write() calls (and only those) come here; once armed, a write returns
 * part of its bytes, then ENOSPC. */
static volatile int disk_full;
ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n) {
  static size_t written;
  if (!disk_full)
    return __real_write(fd, buf, n);
  if (written >= 1000) {
    errno = ENOSPC;
    return -1;
  }
  size_t part = n < 1000 - written ? n : 1000 - written;
  ssize_t w = __real_write(fd, buf, part);
  if (w > 0)
    written += (size_t)w;
  return w;
}

/* The call succeeds from the source build and no partial file or
 * temporary is left. */
Test(program_cache, disk_full, .init = setup, .timeout = 300) {
  char tmpl[] = "/tmp/clattn-cache-full-XXXXXX";
  char *dir = mkdtemp(tmpl);
  cr_assert_not_null(dir);
  fflush(NULL);
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    alarm(CHILD_ALARM_S);
    disk_full = 1;
    _exit(call_once(dir, EXPECT_UNWRITABLE));
  }
  int ws = 0;
  cr_assert_eq(waitpid(pid, &ws, 0), pid);
  char buf[96];
  cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == CHILD_OK, "child %s",
            child_outcome(ws, buf, sizeof buf));
  cr_expect_eq(count_entries(dir, NULL), 0, "a partial file was left");
  /* the same directory afterwards: written whole */
  expect_child_ok(dir, EXPECT_REBUILT, "after the full disk");
  expect_child_ok(dir, EXPECT_ALL_HITS, "after the rewrite");
  remove_tree(dir);
}

/* ------------------------------------------------ concurrent writers */

/* The library's rename() calls (this executable also links with
 * -Wl,--wrap=rename): the temporary each cache write renamed. */
#define MAX_RENAMES 16
static pthread_mutex_t renames_lock = PTHREAD_MUTEX_INITIALIZER;
static char renamed_from[MAX_RENAMES][4400];
static int renames;
int __real_rename(const char *from, const char *to);
int __wrap_rename(const char *from, const char *to);
int __wrap_rename(const char *from, const char *to) {
  pthread_mutex_lock(&renames_lock);
  if (renames < MAX_RENAMES)
    snprintf(renamed_from[renames], sizeof renamed_from[0], "%s", from);
  renames++;
  pthread_mutex_unlock(&renames_lock);
  return __real_rename(from, to);
}

typedef struct writer {
  const char *dir;
  pthread_barrier_t *start;
  int rc;
} writer;

static void *writer_main(void *arg) {
  writer *w = arg;
  pthread_barrier_wait(w->start);
  w->rc = call_once(w->dir, EXPECT_ALL_WRITTEN);
  return NULL;
}

/* Two threads of one process, each with its own context, build and write
 * the same entry at once: both calls right, every write in place, each
 * through a temporary name of its own, no torn file (a third context
 * loads it) and no temporary left.  In a child, so that this process
 * stays free of OpenCL for fork(). */
Test(program_cache, concurrent_writers, .init = setup, .timeout = 300) {
  enum { ROUNDS = 4 };
  int two_writers = 0;
  for (int r = 0; r < ROUNDS; r++) {
    char tmpl[] = "/tmp/clattn-cache-race-XXXXXX";
    char *dir = mkdtemp(tmpl);
    cr_assert_not_null(dir);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
      alarm(CHILD_ALARM_S);
      pthread_barrier_t start;
      pthread_barrier_init(&start, NULL, 2);
      writer w[2] = {{dir, &start, -1}, {dir, &start, -1}};
      pthread_t t[2];
      for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, writer_main, &w[i]) != 0)
          _exit(98);
      for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
      if (w[0].rc != CHILD_OK || w[1].rc != CHILD_OK)
        _exit(w[0].rc != CHILD_OK ? w[0].rc : w[1].rc);
      if (renames < 2) /* the second thread found the first one's file */
        _exit(CHILD_ONE_WRITER);
      for (int i = 0; i < renames && i < MAX_RENAMES; i++)
        for (int j = 0; j < i; j++)
          if (strcmp(renamed_from[i], renamed_from[j]) == 0) {
            fprintf(stderr, "two writers renamed %s\n", renamed_from[i]);
            _exit(CHILD_SHARED_TEMPORARY);
          }
      _exit(CHILD_OK);
    }
    int ws = 0;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    char buf[96];
    const int one = WIFEXITED(ws) && WEXITSTATUS(ws) == CHILD_ONE_WRITER;
    two_writers += !one;
    cr_expect(one || (WIFEXITED(ws) && WEXITSTATUS(ws) == CHILD_OK),
              "round %d: two writers: child %s", r,
              child_outcome(ws, buf, sizeof buf));
    cr_expect_eq(count_entries(dir, ".tmp"), 0,
                 "round %d: temporary files left behind", r);
    expect_child_ok(dir, EXPECT_ALL_HITS, "after two writers");
    remove_tree(dir);
  }
  cr_expect_gt(two_writers, 0, "in no round did both threads write");
}
