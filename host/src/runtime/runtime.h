/* runtime.h - internal: context, errors, programs, the one launch path. */
#ifndef CLATTN_RUNTIME_H
#define CLATTN_RUNTIME_H

#include "base/base.h"
#include "clattn_tools.h"
#include "base/target.h"

#include <pthread.h>
#include <stdarg.h>

#define CLATTN_CTX_MAGIC 0x636c6174u /* "clat" */
#define CLATTN_ERRMSG_MAX 8192

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
  unsigned sg_sizes; /* cl_intel_required_subgroup_size: bit k, 2^k */
  int has_fp16;      /* cl_khr_fp16 */
} clattn__devinfo;

typedef struct clattn__program clattn__program; /* in-memory cache entry */
/* The parameter choice's state (choice/): the runtime only holds it. */
typedef struct clattn__choice_state clattn__choice_state;
/* A memoised choice (choice/memo.c), which a thread's record refers to. */
typedef struct clattn__memo_entry clattn__memo_entry;

enum { CLATTN_SCRATCH_SLOTS = 4 };
/* Small constant buffers kept by their contents (consts.c). */
enum { CLATTN__CONST_SLOTS = 16 };
typedef struct clattn__const_buf {
  cl_mem mem; /* NULL: free */
  uint64_t hash;
  size_t bytes;
  void *data;              /* a copy of the contents, to compare */
  unsigned long long used; /* the cache's clock at its last use */
} clattn__const_buf;

/* A call's values of its family's tunables, in the family's own layout
 * (family/tunables.h): value i is the family's tunable i; 0 leaves it to
 * the plan. */
enum { CLATTN__TUNABLES_MAX = 12 };
typedef struct clattn__params {
  int v[CLATTN__TUNABLES_MAX];
} clattn__params;

/* How one call's parameters were chosen: clattn_choice with the params as
 * the library holds them (choice/ writes it; clattn__choice_out gives the
 * public struct, with the params as text in the family's names). */
typedef struct clattn__choice {
  const struct clattn__family *family;
  clattn_choice_source source;
  clattn__params params;   /* as chosen (before the plan fills zeros) */
  clattn__params resolved; /* every value as the kernels run it */
  char shape_class[96];
  char entry_class[96];
  char entry_device[128];
  double entry_median_s;
  char why[512];
} clattn__choice;

/* The scalar arguments clattn__scalars set last on one kernel. */
enum { CLATTN__SCALAR_KERNELS = 32, CLATTN__SCALAR_ARGS = 32 };
typedef struct clattn__kernel_scalars {
  cl_kernel kernel;                        /* NULL: a free slot */
  unsigned char size[CLATTN__SCALAR_ARGS]; /* 0: not known */
  unsigned long long value[CLATTN__SCALAR_ARGS];
} clattn__kernel_scalars;

/* What clattn_ctx_errmsg and clattn_ctx_last_choice report to one thread:
 * each thread that used the context has its own, freed with the context. */
typedef struct clattn__thread_slot {
  struct clattn__thread_slot *next;
  pthread_t thread;
  unsigned long long serial; /* the thread's own (ids of ended threads are
                                reused) */
  int has_last;
  /* the thread's last call's choice, as it ran: last_memo's choice with
   * last.resolved, or all of last when last_memo is NULL (choice/memo.c) */
  clattn__choice last;
  const clattn__memo_entry *last_memo;
  char errmsg[CLATTN_ERRMSG_MAX];
} clattn__thread_slot;

struct clattn_ctx {
  unsigned magic;
  cl_context context;
  cl_command_queue queue;
  cl_device_id device;
  cl_platform_id platform;
  clattn__devinfo dev;
  clattn__program *programs;
  char *cache_dir;        /* NULL: disk cache off */
  char gemm_explain[640]; /* what the projections' GEMMs run
                             (clattn_explain_gemm); "" until settled */
  int clblast_override;   /* clattn_ctx_opts.clblast_override */
  /* m*n*k from which the projections' own picks run the library's GEMM
   * kernel rather than CLBlast (0: none): a tuned Xgemm entry covers them
   * and the context does not set it on CLBlast (tune/gemm_apply.c). */
  double gemm_own_from;
  clattn_cache_stats stats;
  cl_mem scratch[CLATTN_SCRATCH_SLOTS];
  size_t scratch_size[CLATTN_SCRATCH_SLOTS];
  clattn__const_buf consts[CLATTN__CONST_SLOTS];
  unsigned long long consts_clock;
  /* by kernel (a slot by its address); forgotten with the programs */
  clattn__kernel_scalars scalars[CLATTN__SCALAR_KERNELS];
  clattn__choice_state *choice; /* overrides, tuning rows, model picks */
  /* Settles the projections' GEMMs once (tune/gemm_apply.c, set by
   * clattn_ctx_create: the runtime and the families do not reach up):
   * gemm_own_from, and with clblast_override the device's tuned Xgemm
   * parameters set on CLBlast.  apply: 1 before a CLBlast call or a
   * layer's first GEMM, 0 when only planning (CLBlast is not touched). */
  clattn_status (*gemm_prepare)(clattn_ctx *ctx, int apply);
  /* Serialises every public function's host-side work on the context
   * (recursive: a public function may call another). */
  pthread_mutex_t lock;
  clattn__thread_slot *slots; /* one per thread that used the context */
  clattn__thread_slot shared; /* when a thread's slot cannot be allocated */
  clattn__thread_slot *cur;   /* the locking thread's slot */
  char *errmsg;               /* cur->errmsg: the message being written */
};

/* Record a failure on ctx (printf-style message) and return st. */
clattn_status clattn__fail(clattn_ctx *ctx, clattn_status st, const char *fmt,
                           ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* clattn__fail from outside ctx's lock (it takes it, for the calling
 * thread's message); a ctx that is not live records nothing. */
clattn_status clattn__fail_outside(clattn_ctx *ctx, clattn_status st,
                                   const char *msg);

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

/* CLATTN_CL for a call that reports through its errcode_ret argument
 * `err`: the message names the call. */
#define CLATTN_CL_RET(ctx, err, name)                                          \
  do {                                                                         \
    if ((err) != CL_SUCCESS) {                                                 \
      rc = clattn__cl_fail((ctx), (err), name, __FILE__, __LINE__);            \
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

/* A context on the device (or queue) opts names, without the parameter
 * choice (call/context.c adds it: clattn_ctx_create); on failure the
 * message is the thread's create message (clattn_ctx_errmsg(NULL)). */
clattn_status clattn__ctx_open(const clattn_ctx_opts *opts, clattn_ctx **out);
void clattn__ctx_close(clattn_ctx *ctx);
/* Set the thread's create message. */
void clattn__create_errmsg(const char *msg);

/* The planning facts of the context's device (gemm_own_from as settled
 * so far: the choice settles it first, clattn__choice_target). */
clattn__target clattn__ctx_target(const clattn_ctx *ctx);

/* Check ctx is a live context; returns CLATTN_ERR_MISUSE otherwise. */
clattn_status clattn__ctx_check(const clattn_ctx *ctx);

/* Lock ctx for a public function's host-side work and point ctx->errmsg
 * and ctx->cur at the calling thread's slot.  Returns ctx, or NULL (and
 * locks nothing) when ctx is not a live context, so a function keeps its
 * own checks and messages: `clattn_ctx *locked = clattn__ctx_enter(ctx);
 * ... clattn__ctx_leave(locked);`.  Recursive: nesting is fine. */
clattn_ctx *clattn__ctx_enter(const clattn_ctx *ctx);
void clattn__ctx_leave(clattn_ctx *locked);

/* The calling thread's slot of a locked ctx, NULL when the thread has none. */
const clattn__thread_slot *clattn__ctx_thread_slot(const clattn_ctx *ctx);

/* The index of an embedded kernel source by its file name
 * ("attention.cl"), -1 when there is none. */
int clattn__source_index(const char *source);

/* Get a kernel from a program built from the embedded source named
 * `source` ("decode.cl") with `options` (the -D defines).  Programs are cached
 * in memory and on disk.  The returned kernel is owned by the context: do not
 * release it.  Kernels are not thread-safe: set the arguments and enqueue
 * before another call on the same context. */
clattn_status clattn__kernel(clattn_ctx *ctx, const char *source,
                             const char *options, const char *name,
                             cl_kernel *out);

/* A program's build options as -D defines, which a lookup compares as
 * numbers: a repeated call finds its kernel without writing the options'
 * text (written, "-DNAME=value ..." in the order added, only to build a
 * program and to key the disk cache, so it equals clattn__kernel's). */
enum { CLATTN__DEFS_MAX = 24 };
typedef struct clattn__defs {
  int n; /* -1: more than CLATTN__DEFS_MAX were added */
  const char *name[CLATTN__DEFS_MAX]; /* string literals */
  int value[CLATTN__DEFS_MAX];
} clattn__defs;

/* Add -Dname=value (name: a string literal, which the lookup compares by
 * address before it compares the text). */
static inline void clattn__def(clattn__defs *d, const char *name, int value) {
  if (d->n < 0 || d->n == CLATTN__DEFS_MAX) {
    d->n = -1;
    return;
  }
  d->name[d->n] = name;
  d->value[d->n++] = value;
}

/* clattn__kernel with the options as defines. */
clattn_status clattn__kernel_defs(clattn_ctx *ctx, const char *source,
                                  const clattn__defs *defs, const char *name,
                                  cl_kernel *out);

/* Set kernel argument i (checked). */
clattn_status clattn__arg(clattn_ctx *ctx, cl_kernel k, cl_uint i, size_t size,
                          const void *value);

/* Set n consecutive arguments of one size from an array, starting at
 * *next (advanced past them). */
clattn_status clattn__args(clattn_ctx *ctx, cl_kernel k, cl_uint *next, int n,
                           size_t size, const void *values);

/* clattn__args for scalar arguments (never a memory object, whose handle
 * may be a new object's at the same address): a value equal to the one
 * this function last set at that index of k is not set again, so a
 * repeated call sets only what changed.  The context remembers the values
 * per kernel until its programs are released: a kernel's scalar
 * arguments are set through this function only. */
clattn_status clattn__scalars(clattn_ctx *ctx, cl_kernel k, cl_uint *next,
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

/* Check that buffer `m` (named `what` in the message) was created in the
 * context's cl_context and holds >= need bytes: every public call's
 * buffers pass here before anything is enqueued. */
/* A read-only device buffer holding the bytes at data (bytes > 0), made
 * once per contents and kept by the context (consts.c): the attention
 * options' per-head arrays, passed as host memory by the caller.  Valid
 * until the context's next call (a later one may replace it; queued
 * kernels keep it alive). */
clattn_status clattn__const_buffer(clattn_ctx *ctx, const void *data,
                                   size_t bytes, cl_mem *out);
/* Release them (context close). */
void clattn__consts_free(clattn_ctx *ctx);

clattn_status clattn__check_buffer(clattn_ctx *ctx, cl_mem m, size_t need,
                                   const char *what);

/* CL_KERNEL_WORK_GROUP_SIZE of a built kernel. */
clattn_status clattn__kernel_wg(clattn_ctx *ctx, cl_kernel k, size_t *out);

/* The subgroup size a built kernel runs with in work-groups of wg items
 * (clGetKernelSubGroupInfoKHR, CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE);
 * CLATTN_ERR_UNSUPPORTED where the device has no subgroups. */
clattn_status clattn__kernel_subgroup(clattn_ctx *ctx, cl_kernel k, size_t wg,
                                      size_t *out);

/* Common checks of a kernel's resolved work-group size against the device
 * and the compiled kernel; `what` names the kernel in the message. */
clattn_status clattn__check_wg(clattn_ctx *ctx, cl_kernel k, size_t wg,
                               size_t local_bytes, const char *what);

/* The device fingerprint of clattn_profile (32 hex digits). */
void clattn__fingerprint(const clattn__devinfo *d, char *out, size_t cap);

#endif /* CLATTN_RUNTIME_H */
