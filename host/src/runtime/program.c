/* program.c - run-time kernel compilation with an in-memory and an on-disk
 * program cache.
 *
 * A program is identified by (source, build options).  In memory the context
 * keeps every program it built, with the kernels made from it.  On disk a
 * program binary is stored under a key hashing the source, the options, the
 * device, its driver and platform, the library version and the file format,
 * with a hash of its contents checked before the driver sees it; files are
 * written to a temporary name of the writer's own and renamed, so readers
 * never see a partial file, and any failure to read, check, load or build a
 * cached binary falls back to a build from source (and rewrites the file). */
#include "runtime/runtime.h"
#include "base/out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern const char *const clattn__prelude;
extern const size_t clattn__prelude_len;
extern const char *const clattn__sources[];
extern const size_t clattn__source_lens[];
extern const char *const clattn__source_names[];
extern const size_t clattn__source_count;

#define CACHE_MAGIC "CLATTNPB"
#define CACHE_FORMAT 2u

typedef struct kernel_entry {
  struct kernel_entry *next;
  char *name;
  cl_kernel kernel;
} kernel_entry;

struct clattn__program {
  clattn__program *next;
  int src; /* index into clattn__sources */
  char *options;
  int has_defs; /* found by clattn__kernel_defs: defs are its options */
  clattn__defs defs;
  cl_program program;
  kernel_entry *kernels;
};

void clattn__programs_free(clattn_ctx *ctx) {
  clattn__program *p = ctx->programs;
  while (p) {
    clattn__program *next = p->next;
    kernel_entry *k = p->kernels;
    while (k) {
      kernel_entry *kn = k->next;
      clReleaseKernel(k->kernel);
      free(k->name);
      free(k);
      k = kn;
    }
    clReleaseProgram(p->program);
    free(p->options);
    free(p);
    p = next;
  }
  ctx->programs = NULL;
  /* a new kernel may get a released one's address */
  memset(ctx->scalars, 0, sizeof ctx->scalars);
}

void clattn_ctx_clear_programs(clattn_ctx *ctx) {
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  if (locked != NULL)
    clattn__programs_free(locked);
  clattn__ctx_leave(locked);
}

/* ------------------------------------------------------------ disk cache
 *
 * A cache file is a header of CACHE_HEADER bytes, then the driver's binary
 * (the payload); numbers are little-endian:
 *    0  "CLATTNPB"
 *    8  CACHE_FORMAT (u32), 12  CACHE_HEADER (u32), 16  payload bytes (u64)
 *   24  the key: the 32 hex digits of the file's name
 *   56  clattn__hash of bytes 0..55 and the payload (a, then b; u64 each)
 * Nothing reaches the driver unless every field and the hash match: drivers
 * trust their binaries (one flipped bit has crashed PoCL inside
 * clCreateProgramWithBinary), and another key's file is another program. */

#define CACHE_HEADER 72
#define CACHE_KEY_AT 24
#define CACHE_HASH_AT 56
#define CACHE_KEY_LEN 32
/* Far above any program's binary; a larger file is not ours. */
#define CACHE_MAX_BYTES ((uint64_t)256 << 20)

static void cache_path(const clattn_ctx *ctx, int src, const char *options,
                       char *out, size_t cap) {
  clattn__hash h = clattn__hash_init();
  uint32_t fmt = CACHE_FORMAT;
  char hex[CLATTN_HASH_HEX];
  clattn__hash_bytes(&h, &fmt, sizeof fmt);
  clattn__hash_str(&h, clattn_version());
  clattn__hash_bytes(&h, clattn__prelude, clattn__prelude_len);
  clattn__hash_bytes(&h, clattn__sources[src], clattn__source_lens[src]);
  clattn__hash_str(&h, options);
  clattn__hash_str(&h, ctx->dev.platform);
  clattn__hash_str(&h, ctx->dev.name);
  clattn__hash_str(&h, ctx->dev.vendor);
  clattn__hash_str(&h, ctx->dev.driver);
  clattn__hash_str(&h, ctx->dev.version);
  clattn__hash_hex(&h, hex);
  int n = snprintf(out, cap, "%s/%s.bin", ctx->cache_dir, hex);
  if (n < 0 || (size_t)n >= cap)
    out[0] = '\0'; /* too long: no key (cache_key refuses it) */
}

/* The key of a cache path: the 32 hex digits of "<key>.bin"; -1 when path
 * is not such a name. */
static int cache_key(const char *path, char key[CACHE_KEY_LEN]) {
  size_t n = strlen(path);
  if (n < CACHE_KEY_LEN + 5 || strcmp(path + n - 4, ".bin") != 0 ||
      path[n - 4 - CACHE_KEY_LEN - 1] != '/')
    return -1;
  const char *k = path + n - 4 - CACHE_KEY_LEN;
  for (int i = 0; i < CACHE_KEY_LEN; i++)
    if (!((k[i] >= '0' && k[i] <= '9') || (k[i] >= 'a' && k[i] <= 'f')))
      return -1;
  memcpy(key, k, CACHE_KEY_LEN);
  return 0;
}

static void put_le(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

/* The hash a header stores: its first CACHE_HASH_AT bytes and the
 * payload. */
static void cache_hash(const unsigned char *hdr, const unsigned char *payload,
                       size_t len, unsigned char out[16]) {
  clattn__hash h = clattn__hash_init();
  clattn__hash_bytes(&h, hdr, CACHE_HASH_AT);
  clattn__hash_bytes(&h, payload, len);
  put_le(out, h.a, 8);
  put_le(out + 8, h.b, 8);
}

/* Read exactly n bytes; 0 on success. */
static int read_full(int fd, unsigned char *buf, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, buf, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    buf += r;
    n -= (size_t)r;
  }
  return 0;
}

/* Write exactly n bytes; 0 on success. */
static int write_full(int fd, const unsigned char *buf, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    buf += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Read and check a cached binary; returns its payload (malloc'd) or NULL.
 * Only a regular file is read, opened without blocking (a FIFO would block
 * in open) and without following a link, within a size limit. */
static unsigned char *cache_read(const char *path, size_t *len) {
  char key[CACHE_KEY_LEN];
  if (cache_key(path, key) != 0)
    return NULL;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  unsigned char hdr[CACHE_HEADER], hash[16], extra;
  unsigned char *bin = NULL;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size <= CACHE_HEADER || (uint64_t)st.st_size > CACHE_MAX_BYTES ||
      read_full(fd, hdr, sizeof hdr) != 0)
    goto fail;
  const uint64_t size = get_le(hdr + 16, 8);
  if (memcmp(hdr, CACHE_MAGIC, 8) != 0 || get_le(hdr + 8, 4) != CACHE_FORMAT ||
      get_le(hdr + 12, 4) != CACHE_HEADER ||
      size != (uint64_t)st.st_size - CACHE_HEADER ||
      memcmp(hdr + CACHE_KEY_AT, key, CACHE_KEY_LEN) != 0)
    goto fail;
  bin = malloc((size_t)size);
  if (bin == NULL || read_full(fd, bin, (size_t)size) != 0 ||
      read(fd, &extra, 1) != 0) /* grown since fstat: not a file we wrote */
    goto fail;
  cache_hash(hdr, bin, (size_t)size, hash);
  if (memcmp(hash, hdr + CACHE_HASH_AT, sizeof hash) != 0)
    goto fail;
  close(fd);
  *len = (size_t)size;
  return bin;
fail:
  free(bin);
  close(fd);
  return NULL;
}

/* Best effort: a failure to write the cache never fails the call.  Written
 * under a name of this writer's own, then renamed over the path, so that
 * readers see a whole file or none; on any failure the temporary is
 * removed. */
static int cache_write(clattn_ctx *ctx, const char *path, cl_program prog) {
  char key[CACHE_KEY_LEN];
  if (cache_key(path, key) != 0)
    return -1;
  size_t size = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size,
                       NULL) != CL_SUCCESS ||
      size == 0 || (uint64_t)size > CACHE_MAX_BYTES - CACHE_HEADER)
    return -1;
  unsigned char *bin = malloc(size);
  if (bin == NULL)
    return -1;
  int ok = 0;
  char tmp[4300];
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) !=
      CL_SUCCESS)
    goto out;
  if (clattn__mkdir_p(ctx->cache_dir) != 0)
    goto out;
  unsigned char hdr[CACHE_HEADER] = {0};
  memcpy(hdr, CACHE_MAGIC, 8);
  put_le(hdr + 8, CACHE_FORMAT, 4);
  put_le(hdr + 12, CACHE_HEADER, 4);
  put_le(hdr + 16, size, 8);
  memcpy(hdr + CACHE_KEY_AT, key, CACHE_KEY_LEN);
  cache_hash(hdr, bin, size, hdr + CACHE_HASH_AT);
  /* a temporary of this writer's own (base/out_file.h) */
  const int fd = clattn__tmp_create(path, tmp, sizeof tmp);
  if (fd < 0)
    goto out;
  ok = write_full(fd, hdr, sizeof hdr) == 0 && write_full(fd, bin, size) == 0;
  ok = (close(fd) == 0) && ok;
  if (ok && rename(tmp, path) != 0)
    ok = 0;
  if (!ok)
    unlink(tmp);
out:
  free(bin);
  return ok ? 0 : -1;
}

/* ---------------------------------------------------------------- build */

static clattn_status build_log_fail(clattn_ctx *ctx, cl_program prog,
                                    cl_int err, int src, const char *options) {
  char log[CLATTN_ERRMSG_MAX - 512];
  size_t n = 0;
  log[0] = '\0';
  if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, sizeof log,
                            log, &n) != CL_SUCCESS) {
    /* log longer than our buffer: fetch it whole and keep its start */
    size_t need = 0;
    if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL,
                              &need) == CL_SUCCESS &&
        need > 0) {
      char *full = malloc(need);
      if (full && clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG,
                                        need, full, NULL) == CL_SUCCESS) {
        memcpy(log, full, sizeof log - 1);
        log[sizeof log - 1] = '\0';
      }
      free(full);
    }
  }
  log[sizeof log - 1] = '\0';
  return clattn__fail(ctx, CLATTN_ERR_BUILD,
                      "building %s with \"%s\" failed: %s (%d); build log:\n%s",
                      clattn__source_names[src], options, clattn_cl_errstr(err),
                      (int)err, log);
}

static clattn_status build_from_source(clattn_ctx *ctx, int src,
                                       const char *options, cl_program *out) {
  const char *strs[2] = {clattn__prelude, clattn__sources[src]};
  size_t lens[2] = {clattn__prelude_len, clattn__source_lens[src]};
  cl_int err = CL_SUCCESS;
  cl_program prog =
      clCreateProgramWithSource(ctx->context, 2, strs, lens, &err);
  if (err != CL_SUCCESS)
    return clattn__cl_fail(ctx, err, "clCreateProgramWithSource", __FILE__,
                           __LINE__);
  /* -w: the compiler's warnings stay out of the application's stderr
   * (PoCL prints "N warnings generated." for every build on AVX2, where
   * float16 arguments change the calling convention) and out of the build
   * log; CLATTN_KERNEL_WARNINGS=1 keeps them, for kernel work.  Binaries
   * do not depend on it, so the cache key does not include it. */
  const char *kw = getenv("CLATTN_KERNEL_WARNINGS");
  const int warn = kw != NULL && strcmp(kw, "1") == 0;
  char *opts = malloc(strlen(options) + 4);
  if (opts == NULL) {
    clReleaseProgram(prog);
    return clattn__fail(ctx, CLATTN_ERR_NOMEM,
                        "out of host memory for build options");
  }
  snprintf(opts, strlen(options) + 4, "%s%s", options, warn ? "" : " -w");
  err = clBuildProgram(prog, 1, &ctx->device, opts, NULL, NULL);
  free(opts);
  if (err != CL_SUCCESS) {
    clattn_status rc = build_log_fail(ctx, prog, err, src, options);
    clReleaseProgram(prog);
    return rc;
  }
  ctx->stats.source_builds++;
  *out = prog;
  return CLATTN_OK;
}

/* Try the disk cache; returns NULL on any miss or failure. */
static cl_program load_cached(clattn_ctx *ctx, const char *path,
                              const char *options) {
  size_t len = 0;
  unsigned char *bin = cache_read(path, &len);
  if (bin == NULL)
    return NULL;
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  const unsigned char *bins[1] = {bin};
  cl_program prog = clCreateProgramWithBinary(ctx->context, 1, &ctx->device,
                                              &len, bins, &status, &err);
  free(bin);
  if (err != CL_SUCCESS || status != CL_SUCCESS) {
    if (prog)
      clReleaseProgram(prog);
    return NULL;
  }
  if (clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL) !=
      CL_SUCCESS) {
    clReleaseProgram(prog);
    return NULL;
  }
  return prog;
}

static clattn_status get_program(clattn_ctx *ctx, int src, const char *options,
                                 clattn__program **out) {
  for (clattn__program **at = &ctx->programs; *at; at = &(*at)->next) {
    clattn__program *p = *at;
    if (p->src == src && strcmp(p->options, options) == 0) {
      /* to the front: a call's programs are found again at once, however
       * many the context built */
      *at = p->next;
      p->next = ctx->programs;
      ctx->programs = p;
      ctx->stats.memory_hits++;
      *out = p;
      return CLATTN_OK;
    }
  }
  cl_program prog = NULL;
  char path[4200];
  if (ctx->cache_dir) {
    cache_path(ctx, src, options, path, sizeof path);
    prog = load_cached(ctx, path, options);
    if (prog)
      ctx->stats.disk_hits++;
  }
  if (prog == NULL) {
    clattn_status rc = build_from_source(ctx, src, options, &prog);
    if (rc != CLATTN_OK)
      return rc;
    if (ctx->cache_dir && cache_write(ctx, path, prog) == 0)
      ctx->stats.disk_writes++;
  }
  clattn__program *p = calloc(1, sizeof *p);
  char *opt = strdup(options);
  if (p == NULL || opt == NULL) {
    free(p);
    free(opt);
    clReleaseProgram(prog);
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of memory");
  }
  p->src = src;
  p->options = opt;
  p->program = prog;
  p->next = ctx->programs;
  ctx->programs = p;
  *out = p;
  return CLATTN_OK;
}

int clattn__source_index(const char *source) {
  for (size_t i = 0; source && i < clattn__source_count; i++)
    if (strcmp(clattn__source_names[i], source) == 0)
      return (int)i;
  return -1;
}

/* Kernel `name` of program p, made at its first use. */
static clattn_status kernel_of(clattn_ctx *ctx, clattn__program *p,
                               const char *name, cl_kernel *out) {
  for (kernel_entry *k = p->kernels; k; k = k->next) {
    if (strcmp(k->name, name) == 0) {
      *out = k->kernel;
      return CLATTN_OK;
    }
  }
  cl_int err = CL_SUCCESS;
  cl_kernel kern = clCreateKernel(p->program, name, &err);
  if (err != CL_SUCCESS)
    return clattn__fail(
        ctx, clattn__cl_fail(ctx, err, "clCreateKernel", __FILE__, __LINE__),
        "clCreateKernel(\"%s\") failed: %s", name, clattn_cl_errstr(err));
  kernel_entry *e = calloc(1, sizeof *e);
  char *nm = strdup(name);
  if (e == NULL || nm == NULL) {
    free(e);
    free(nm);
    clReleaseKernel(kern);
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of memory");
  }
  e->name = nm;
  e->kernel = kern;
  e->next = p->kernels;
  p->kernels = e;
  *out = kern;
  return CLATTN_OK;
}

clattn_status clattn__kernel(clattn_ctx *ctx, const char *source,
                             const char *options, const char *name,
                             cl_kernel *out) {
  clattn__program *p = NULL;
  const int src = clattn__source_index(source);
  if (src < 0)
    return clattn__fail(ctx, CLATTN_ERR_MISUSE, "no kernel source \"%s\"",
                        source ? source : "(null)");
  clattn_status rc = get_program(ctx, src, options, &p);
  if (rc != CLATTN_OK)
    return rc;
  return kernel_of(ctx, p, name, out);
}

static int defs_equal(const clattn__defs *a, const clattn__defs *b) {
  if (a->n != b->n)
    return 0;
  for (int i = 0; i < a->n; i++)
    if (a->value[i] != b->value[i])
      return 0;
  for (int i = 0; i < a->n; i++)
    if (a->name[i] != b->name[i] && strcmp(a->name[i], b->name[i]) != 0)
      return 0;
  return 1;
}

clattn_status clattn__kernel_defs(clattn_ctx *ctx, const char *source,
                                  const clattn__defs *defs, const char *name,
                                  cl_kernel *out) {
  if (defs->n < 0)
    return clattn__fail(ctx, CLATTN_ERR_MISUSE, "%s: more than %d defines",
                        name, CLATTN__DEFS_MAX);
  for (clattn__program **at = &ctx->programs; *at; at = &(*at)->next) {
    clattn__program *p = *at;
    if (p->has_defs && defs_equal(&p->defs, defs) &&
        strcmp(clattn__source_names[p->src], source) == 0) {
      *at = p->next; /* to the front, as get_program does */
      p->next = ctx->programs;
      ctx->programs = p;
      ctx->stats.memory_hits++;
      return kernel_of(ctx, p, name, out);
    }
  }
  /* the text, then the lookup of clattn__kernel (a program built from the
   * same text by it is this one) */
  char options[CLATTN__DEFS_MAX * 40];
  size_t len = 0;
  options[0] = '\0';
  for (int i = 0; i < defs->n; i++) {
    const int n = snprintf(options + len, sizeof options - len, "%s-D%s=%d",
                           i ? " " : "", defs->name[i], defs->value[i]);
    if (n < 0 || (size_t)n >= sizeof options - len)
      return clattn__fail(ctx, CLATTN_ERR_MISUSE, "%s: defines too long", name);
    len += (size_t)n;
  }
  clattn__program *p = NULL;
  const int src = clattn__source_index(source);
  if (src < 0)
    return clattn__fail(ctx, CLATTN_ERR_MISUSE, "no kernel source \"%s\"",
                        source ? source : "(null)");
  clattn_status rc = get_program(ctx, src, options, &p);
  if (rc != CLATTN_OK)
    return rc;
  p->defs = *defs;
  p->has_defs = 1;
  return kernel_of(ctx, p, name, out);
}
