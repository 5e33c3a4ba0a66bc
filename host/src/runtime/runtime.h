/* runtime.h - internal: context, errors, programs, the one launch path. */
#ifndef CLATTN_RUNTIME_H
#define CLATTN_RUNTIME_H

#include "base/base.h"
#include "clattn.h"
#include "family/plan.h"

#include <stdarg.h>

#define CLATTN_CTX_MAGIC 0x636c6174u /* "clat" */
#define CLATTN_ERRMSG_MAX 8192

/* Embedded kernel sources (generated at build time, see cl/meson.build). */
typedef enum clattn__source {
  CLATTN_SRC_ATTENTION = 0, /* cl/attention.cl: prefill kernels */
  CLATTN_SRC_DECODE = 1,    /* cl/decode.cl: split-KV decode, combine, append */
  CLATTN_SRC_PROBE = 2,     /* cl/probe.cl: device ceilings (clattn_probe) */
  CLATTN_SRC_COUNT
} clattn__source;

/* Device facts read once per context, with the types the spec gives them. */
typedef struct clattn__devinfo {
  char name[256];
  char vendor[256];
  char platform[256];
  char driver[128];
  char version[128];
  cl_device_type type;
  cl_uint compute_units;
  cl_uint clock_mhz;
  cl_uint pref_float; /* CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT */
  size_t max_wg;
  size_t max_item[3];
  cl_ulong local_mem;
  cl_device_local_mem_type local_mem_type;
  cl_ulong global_mem;
  cl_ulong global_cache; /* CL_DEVICE_GLOBAL_MEM_CACHE_SIZE */
  cl_ulong max_alloc;
  cl_uint mem_base_align_bits;
  int has_subgroups; /* cl_khr_subgroups or cl_intel_subgroups */
  int has_fp16;      /* cl_khr_fp16 */
} clattn__devinfo;

typedef struct clattn__program clattn__program; /* in-memory cache entry */
typedef struct clattn__tuning clattn__tuning;   /* choice.c: entries, picks */

enum { CLATTN_SCRATCH_SLOTS = 4 };

struct clattn_ctx {
  unsigned magic;
  cl_context context;
  cl_command_queue queue;
  cl_device_id device;
  cl_platform_id platform;
  clattn__devinfo dev;
  clattn__program *programs;
  char *cache_dir; /* NULL: disk cache off */
  char gemm_explain[640]; /* Xgemm parameters in use (clattn_explain_gemm);
                             "" until the first layer applies them */
  clattn_cache_stats stats;
  cl_mem scratch[CLATTN_SCRATCH_SLOTS];
  size_t scratch_size[CLATTN_SCRATCH_SLOTS];
  /* Parameter choice (choice.c) */
  char *tuning_db;          /* tuning database path; NULL: none */
  clattn__tuning *tuning;   /* its entries, read at the first call */
  int has_override[2];      /* [0] prefill, [1] decode */
  clattn_params override[2];
  char override_from[2][24]; /* "$CLATTN_PARAMS" or "clattn_ctx_set_params" */
  int has_last;
  clattn_choice last;       /* the last call's choice */
  char errmsg[CLATTN_ERRMSG_MAX];
};

/* Record a failure on ctx (printf-style message) and return st. */
clattn_status clattn__fail(clattn_ctx *ctx, clattn_status st, const char *fmt,
                           ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Record a failed OpenCL call and return CLATTN_ERR_OPENCL (or NOMEM for
 * CL_OUT_OF_HOST_MEMORY). */
clattn_status clattn__cl_fail(clattn_ctx *ctx, cl_int err, const char *call,
                              const char *file, int line);


/* Check a cl_int-returning call; on failure record it and go to `done`
 * with rc set.  Requires `clattn_status rc` and a `done:` label. */
#define CLATTN_CL(ctx, call)                                                   \
  do {                                                                         \
    cl_int e__ = (call);                                                       \
    if (e__ != CL_SUCCESS) {                                                   \
      rc = clattn__cl_fail((ctx), e__, #call, __FILE__, __LINE__);             \
      goto done;                                                               \
    }                                                                          \
  } while (0)

/* Run a clattn_status-returning expression; on failure go to `done`. */
#define CLATTN_TRY(expr)                                                       \
  do {                                                                         \
    rc = (expr);                                                               \
    if (rc != CLATTN_OK)                                                       \
      goto done;                                                               \
  } while (0)

/* The planning facts of the context's device. */
clattn__target clattn__ctx_target(const clattn_ctx *ctx);

/* Check ctx is a live context; returns CLATTN_ERR_MISUSE otherwise. */
clattn_status clattn__ctx_check(const clattn_ctx *ctx);

/* Get a kernel from a program built from `src` with `options` (the -D
 * defines).  Programs are cached in memory and on disk.  The returned kernel
 * is owned by the context: do not release it.  Kernels are not thread-safe:
 * set the arguments and enqueue before another call on the same context. */
clattn_status clattn__kernel(clattn_ctx *ctx, clattn__source src,
                             const char *options, const char *name,
                             cl_kernel *out);

/* Set kernel argument i (checked). */
clattn_status clattn__arg(clattn_ctx *ctx, cl_kernel k, cl_uint i, size_t size,
                          const void *value);

/* Set n consecutive arguments of one size from an array, starting at
 * *next (advanced past them). */
clattn_status clattn__args(clattn_ctx *ctx, cl_kernel k, cl_uint *next,
                           int n, size_t size, const void *values);

/* The one launch path.  lws may be NULL.  wait/out as in clattn_events. */
clattn_status clattn__launch(clattn_ctx *ctx, cl_kernel k, cl_uint dims,
                             const size_t *gws, const size_t *lws,
                             cl_uint num_wait, const cl_event *wait,
                             cl_event *out);

/* A device buffer of at least `size` bytes owned by the context, reused by
 * later calls (slot < CLATTN_SCRATCH_SLOTS).  Safe because the context's
 * queue is in order. */
clattn_status clattn__scratch(clattn_ctx *ctx, int slot, size_t size,
                              cl_mem *out);

/* Check that buffer `m` (named `what` in the message) holds >= need bytes. */
clattn_status clattn__check_buffer(clattn_ctx *ctx, cl_mem m, size_t need,
                                   const char *what);

/* CL_KERNEL_WORK_GROUP_SIZE of a built kernel. */
clattn_status clattn__kernel_wg(clattn_ctx *ctx, cl_kernel k, size_t *out);

/* Common checks of a kernel's resolved work-group size against the device
 * and the compiled kernel; `what` names the kernel in the message. */
clattn_status clattn__check_wg(clattn_ctx *ctx, cl_kernel k, size_t wg,
                               size_t local_bytes, const char *what);

/* Checks of head counts, head dims and dtype shared by the variants. */
clattn_status clattn__check_heads(clattn_ctx *ctx, int hq, int hkv, int dk,
                                  int dv, clattn_dtype dt);
int clattn__is_layout(clattn_layout l);

/* The device fingerprint of clattn_profile (32 hex digits). */
void clattn__fingerprint(const clattn__devinfo *d, char *out, size_t cap);

/* ---------------------------------------------------- choice.c */

/* Set up the context's parameter choice from opts and the environment
 * ($CLATTN_DB, $CLATTN_NO_TUNING, $CLATTN_PARAMS); a bad $CLATTN_PARAMS
 * is an error. */
clattn_status clattn__choice_init(clattn_ctx *ctx, const clattn_ctx_opts *o);
void clattn__choice_free(clattn_ctx *ctx);
/* Forget the loaded entries (read again at the next call). */
void clattn__choice_reload(clattn_ctx *ctx);

/* Choose and plan a call's parameters (see clattn_choice_source).  Errors
 * only for the caller's or an override's invalid params. */
clattn_status clattn__choose_prefill(clattn_ctx *ctx, const clattn_attn_desc *d,
                                     clattn_choice *ch,
                                     clattn__prefill_plan *pl);
clattn_status clattn__choose_decode(clattn_ctx *ctx,
                                    const clattn_decode_desc *d,
                                    clattn_choice *ch,
                                    clattn__decode_plan *pl);

/* Open the context's tuning database for run-time lookups.  *db is NULL,
 * with the reason in why, when tuning is off, the file does not exist or
 * cannot be read (all CLATTN_OK: the defaults apply); an error only when
 * out of memory. */
clattn_status clattn__tuning_db_open(const clattn_ctx *ctx, clattn_db **db,
                                     char *why, size_t cap);

#endif /* CLATTN_RUNTIME_H */
