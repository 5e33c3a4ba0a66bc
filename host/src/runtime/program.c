/* program.c - run-time kernel compilation with an in-memory and an on-disk
 * program cache.
 *
 * A program is identified by (source, build options).  In memory the context
 * keeps every program it built, with the kernels made from it.  On disk a
 * program binary is stored under a key hashing the source, the options, the
 * device, its driver and platform, the library version and the file format;
 * files are written to a temporary name and renamed, so readers never see a
 * partial file, and any failure to read, load or build a cached binary falls
 * back to a build from source. */
#include "runtime/runtime.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const char *const clattn__prelude;
extern const size_t clattn__prelude_len;
extern const char *const clattn__sources[];
extern const size_t clattn__source_lens[];
extern const char *const clattn__source_names[];
extern const size_t clattn__source_count;

#define CACHE_MAGIC "CLATTNPB"
#define CACHE_FORMAT 1u

typedef struct kernel_entry {
  struct kernel_entry *next;
  char *name;
  cl_kernel kernel;
} kernel_entry;

struct clattn__program {
  clattn__program *next;
  int src; /* index into clattn__sources */
  char *options;
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
}

void clattn_ctx_clear_programs(clattn_ctx *ctx) {
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  if (locked != NULL)
    clattn__programs_free(locked);
  clattn__ctx_leave(locked);
}

/* ------------------------------------------------------------ disk cache */

static void cache_path(const clattn_ctx *ctx, int src,
                       const char *options, char *out, size_t cap) {
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
  snprintf(out, cap, "%s/%s.bin", ctx->cache_dir, hex);
}

/* Read a cached binary; returns a malloc'd buffer or NULL. */
static unsigned char *cache_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  unsigned char hdr[24];
  unsigned char *bin = NULL;
  if (fread(hdr, 1, sizeof hdr, f) != sizeof hdr)
    goto fail;
  uint32_t fmt;
  uint64_t size;
  memcpy(&fmt, hdr + 8, 4);
  memcpy(&size, hdr + 16, 8);
  if (memcmp(hdr, CACHE_MAGIC, 8) != 0 || fmt != CACHE_FORMAT || size == 0 ||
      size > ((uint64_t)1 << 30))
    goto fail;
  bin = malloc((size_t)size);
  if (bin == NULL || fread(bin, 1, (size_t)size, f) != (size_t)size)
    goto fail;
  if (fgetc(f) != EOF) /* trailing garbage: not our file */
    goto fail;
  fclose(f);
  *len = (size_t)size;
  return bin;
fail:
  free(bin);
  fclose(f);
  return NULL;
}

/* Best effort: a failure to write the cache never fails the call. */
static int cache_write(clattn_ctx *ctx, const char *path, cl_program prog) {
  size_t size = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size,
                       NULL) != CL_SUCCESS ||
      size == 0)
    return -1;
  unsigned char *bin = malloc(size);
  if (bin == NULL)
    return -1;
  int ok = 0;
  char tmp[4300];
  FILE *f = NULL;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) !=
      CL_SUCCESS)
    goto out;
  if (clattn__mkdir_p(ctx->cache_dir) != 0)
    goto out;
  /* a name of this write alone: two threads' contexts may write one key */
  static atomic_uint tmp_seq;
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(),
           atomic_fetch_add(&tmp_seq, 1u));
  f = fopen(tmp, "wb");
  if (f == NULL)
    goto out;
  unsigned char hdr[24] = {0};
  uint32_t fmt = CACHE_FORMAT;
  uint64_t size64 = size;
  memcpy(hdr, CACHE_MAGIC, 8);
  memcpy(hdr + 8, &fmt, 4);
  memcpy(hdr + 16, &size64, 8);
  ok = fwrite(hdr, 1, sizeof hdr, f) == sizeof hdr &&
       fwrite(bin, 1, size, f) == size;
  ok = (fclose(f) == 0) && ok;
  f = NULL;
  if (ok && rename(tmp, path) != 0)
    ok = 0;
  if (!ok)
    remove(tmp);
out:
  free(bin);
  return ok ? 0 : -1;
}

/* ---------------------------------------------------------------- build */

static clattn_status build_log_fail(clattn_ctx *ctx, cl_program prog,
                                    cl_int err, int src,
                                    const char *options) {
  char log[CLATTN_ERRMSG_MAX - 512];
  size_t n = 0;
  log[0] = '\0';
  if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG,
                            sizeof log, log, &n) != CL_SUCCESS) {
    /* log longer than our buffer: fetch it whole and keep its start */
    size_t need = 0;
    if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0,
                              NULL, &need) == CL_SUCCESS &&
        need > 0) {
      char *full = malloc(need);
      if (full && clGetProgramBuildInfo(prog, ctx->device,
                                        CL_PROGRAM_BUILD_LOG, need, full,
                                        NULL) == CL_SUCCESS) {
        memcpy(log, full, sizeof log - 1);
        log[sizeof log - 1] = '\0';
      }
      free(full);
    }
  }
  log[sizeof log - 1] = '\0';
  return clattn__fail(ctx, CLATTN_ERR_BUILD,
                      "building %s with \"%s\" failed: %s (%d); build log:\n%s",
                      clattn__source_names[src], options,
                      clattn_cl_errstr(err), (int)err, log);
}

static clattn_status build_from_source(clattn_ctx *ctx, int src,
                                       const char *options, cl_program *out) {
  const char *strs[2] = {clattn__prelude, clattn__sources[src]};
  size_t lens[2] = {clattn__prelude_len, clattn__source_lens[src]};
  cl_int err = CL_SUCCESS;
  cl_program prog = clCreateProgramWithSource(ctx->context, 2, strs, lens, &err);
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

static clattn_status get_program(clattn_ctx *ctx, int src,
                                 const char *options, clattn__program **out) {
  for (clattn__program *p = ctx->programs; p; p = p->next) {
    if (p->src == src && strcmp(p->options, options) == 0) {
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
  for (kernel_entry *k = p->kernels; k; k = k->next) {
    if (strcmp(k->name, name) == 0) {
      *out = k->kernel;
      return CLATTN_OK;
    }
  }
  cl_int err = CL_SUCCESS;
  cl_kernel kern = clCreateKernel(p->program, name, &err);
  if (err != CL_SUCCESS)
    return clattn__fail(ctx, clattn__cl_fail(ctx, err, "clCreateKernel",
                                             __FILE__, __LINE__),
                        "clCreateKernel(\"%s\") failed: %s", name,
                        clattn_cl_errstr(err));
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
