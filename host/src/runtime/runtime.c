/* runtime.c - context creation, device selection, errors, launch path. */
#include "runtime/runtime.h"
#include "base/versioned.h"

#include <CL/cl_ext.h>

#include <ctype.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- errors */

clattn_status clattn__fail(clattn_ctx *ctx, clattn_status st, const char *fmt,
                           ...) {
  if (ctx == NULL)
    return st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->errmsg, CLATTN_ERRMSG_MAX, fmt, ap);
  va_end(ap);
  return st;
}

clattn_status clattn__fail_outside(clattn_ctx *ctx, clattn_status st,
                                   const char *msg) {
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  if (locked != NULL) {
    clattn__fail(locked, st, "%s", msg);
    clattn__ctx_leave(locked);
  }
  return st;
}

clattn_status clattn__cl_fail(clattn_ctx *ctx, cl_int err, const char *call,
                              const char *file, int line) {
  clattn_status st =
      err == CL_OUT_OF_HOST_MEMORY ? CLATTN_ERR_NOMEM : CLATTN_ERR_OPENCL;
  const char *base = strrchr(file, '/');
  return clattn__fail(ctx, st, "%s failed: %s (%d) at %s:%d", call,
                      clattn_cl_errstr(err), (int)err, base ? base + 1 : file,
                      line);
}

/* Message of the last failed clattn_ctx_create on this thread (there is no
 * context to hold it). */
static _Thread_local char create_errmsg[CLATTN_ERRMSG_MAX];

const char *clattn_ctx_errmsg(const clattn_ctx *ctx) {
  if (ctx == NULL)
    return create_errmsg;
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  if (locked == NULL)
    return "not a live clattn context";
  /* the slot is written only by this thread and lives as long as ctx */
  const char *msg = locked->errmsg;
  clattn__ctx_leave(locked);
  return msg;
}

clattn_status clattn__ctx_check(const clattn_ctx *ctx) {
  if (ctx == NULL || ctx->magic != CLATTN_CTX_MAGIC)
    return CLATTN_ERR_MISUSE;
  return CLATTN_OK;
}

/* ------------------------------------------------------------ threads */

/* A number of each thread of the process: the C library gives a new
 * thread the id of an ended one, whose slot must then start clean. */
static atomic_ullong thread_count;
static _Thread_local unsigned long long thread_serial;

static unsigned long long self_serial(void) {
  if (thread_serial == 0)
    thread_serial = atomic_fetch_add(&thread_count, 1) + 1;
  return thread_serial;
}

static clattn__thread_slot *find_slot(const clattn_ctx *ctx) {
  const pthread_t self = pthread_self();
  for (clattn__thread_slot *t = ctx->slots; t; t = t->next)
    if (pthread_equal(t->thread, self))
      return t;
  return NULL;
}

/* The calling thread's slot, made on its first use of ctx (under the lock). */
static clattn__thread_slot *own_slot(clattn_ctx *ctx) {
  clattn__thread_slot *t = find_slot(ctx);
  if (t == NULL) {
    t = calloc(1, sizeof *t);
    if (t == NULL)
      return &ctx->shared; /* out of memory: messages may mix */
    t->thread = pthread_self();
    t->next = ctx->slots;
    ctx->slots = t;
  }
  if (t->serial != self_serial()) { /* new, or an ended thread's */
    t->serial = self_serial();
    t->has_last = 0;
    t->last_memo = NULL;
    t->errmsg[0] = '\0';
  }
  return t;
}

clattn_ctx *clattn__ctx_enter(const clattn_ctx *c) {
  if (clattn__ctx_check(c) != CLATTN_OK)
    return NULL;
  clattn_ctx *ctx = (clattn_ctx *)c; /* contexts are never const objects */
  /* a recursive mutex fails only on misuse (the owner's count overflowing,
   * or ctx destroyed): proceed as a call without the lock would */
  if (pthread_mutex_lock(&ctx->lock) != 0)
    return NULL;
  ctx->cur = own_slot(ctx);
  ctx->errmsg = ctx->cur->errmsg;
  return ctx;
}

void clattn__ctx_leave(clattn_ctx *locked) {
  if (locked != NULL)
    pthread_mutex_unlock(&locked->lock);
}

const clattn__thread_slot *clattn__ctx_thread_slot(const clattn_ctx *ctx) {
  return find_slot(ctx);
}

/* ----------------------------------------------------------- device info */

static clattn_status info_str(clattn_ctx *ctx, cl_device_id dev,
                              cl_device_info what, char *buf, size_t cap) {
  clattn_status rc = CLATTN_OK;
  size_t need = 0;
  CLATTN_CL(ctx, clGetDeviceInfo(dev, what, 0, NULL, &need));
  if (need <= cap) {
    CLATTN_CL(ctx, clGetDeviceInfo(dev, what, cap, buf, NULL));
  } else { /* truncate long strings (e.g. extension lists) safely */
    char *tmp = malloc(need);
    if (tmp == NULL)
      return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of memory");
    cl_int e = clGetDeviceInfo(dev, what, need, tmp, NULL);
    if (e == CL_SUCCESS) {
      memcpy(buf, tmp, cap - 1);
      buf[cap - 1] = '\0';
    }
    free(tmp);
    CLATTN_CL(ctx, e);
  }
  buf[cap - 1] = '\0';
done:
  return rc;
}

static clattn_status read_devinfo(clattn_ctx *ctx) {
  clattn_status rc = CLATTN_OK;
  clattn__devinfo *d = &ctx->dev;
  cl_device_id dev = ctx->device;
  char ext[8192];
  memset(d, 0, sizeof *d);
  CLATTN_TRY(info_str(ctx, dev, CL_DEVICE_NAME, d->name, sizeof d->name));
  CLATTN_TRY(info_str(ctx, dev, CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor));
  CLATTN_TRY(
      info_str(ctx, dev, CL_DRIVER_VERSION, d->driver, sizeof d->driver));
  CLATTN_TRY(
      info_str(ctx, dev, CL_DEVICE_VERSION, d->version, sizeof d->version));
  CLATTN_TRY(info_str(ctx, dev, CL_DEVICE_EXTENSIONS, ext, sizeof ext));
  CLATTN_CL(ctx, clGetPlatformInfo(ctx->platform, CL_PLATFORM_NAME,
                                   sizeof d->platform, d->platform, NULL));
  d->platform[sizeof d->platform - 1] = '\0';
  CLATTN_CL(ctx, clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof d->type, &d->type,
                                 NULL));
  CLATTN_CL(ctx,
            clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS,
                            sizeof d->compute_units, &d->compute_units, NULL));
  CLATTN_CL(ctx, clGetDeviceInfo(dev, CL_DEVICE_MAX_CLOCK_FREQUENCY,
                                 sizeof d->clock_mhz, &d->clock_mhz, NULL));
  CLATTN_CL(ctx, clGetDeviceInfo(dev, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT,
                                 sizeof d->pref_float, &d->pref_float, NULL));
  CLATTN_CL(ctx, clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE,
                                 sizeof d->max_wg, &d->max_wg, NULL));
  CLATTN_CL(ctx, clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_ITEM_SIZES,
                                 sizeof d->max_item, d->max_item, NULL));
  CLATTN_CL(ctx, clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE,
                                 sizeof d->local_mem, &d->local_mem, NULL));
  CLATTN_CL(ctx, clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_TYPE,
                                 sizeof d->local_mem_type, &d->local_mem_type,
                                 NULL));
  CLATTN_CL(ctx, clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE,
                                 sizeof d->global_mem, &d->global_mem, NULL));
  CLATTN_CL(ctx,
            clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE,
                            sizeof d->global_cache, &d->global_cache, NULL));
  CLATTN_CL(ctx, clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE,
                                 sizeof d->max_alloc, &d->max_alloc, NULL));
  CLATTN_CL(ctx, clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN,
                                 sizeof d->mem_base_align_bits,
                                 &d->mem_base_align_bits, NULL));
  d->has_subgroups = strstr(ext, "cl_khr_subgroups") != NULL ||
                     strstr(ext, "cl_intel_subgroups") != NULL;
  d->has_fp16 = strstr(ext, "cl_khr_fp16") != NULL;
  if (d->has_subgroups &&
      strstr(ext, "cl_intel_required_subgroup_size") != NULL) {
    size_t sizes[64], n = 0;
    if (clGetDeviceInfo(dev, 0x4108 /* CL_DEVICE_SUB_GROUP_SIZES_INTEL */,
                        sizeof sizes, sizes, &n) == CL_SUCCESS)
      for (size_t i = 0; i < n / sizeof sizes[0] && i < 64; i++)
        if (sizes[i] > 0 && sizes[i] <= 1024 &&
            (sizes[i] & (sizes[i] - 1)) == 0)
          d->sg_sizes |= 1u << __builtin_ctzll(sizes[i]);
  }
done:
  return rc;
}

/* ------------------------------------------------------ device selection */

static int ci_contains(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  if (n == 0)
    return 1;
  for (; *hay; hay++) {
    size_t i = 0;
    while (i < n && hay[i] &&
           tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
      i++;
    if (i == n)
      return 1;
  }
  return 0;
}

/* Parse "N" or "P:D"; returns the number of integers read (0 = not numeric). */
static int parse_index(const char *s, long *a, long *b) {
  char *end = NULL;
  *a = strtol(s, &end, 10);
  if (end == s)
    return 0;
  if (*end == '\0')
    return 1;
  if (*end != ':')
    return 0;
  const char *s2 = end + 1;
  *b = strtol(s2, &end, 10);
  if (end == s2 || *end != '\0')
    return 0;
  return 2;
}

static clattn_status select_device_locked(clattn_ctx *ctx, const char *sel) {
  clattn_status rc = CLATTN_OK;
  cl_uint np = 0;
  cl_platform_id plats[32];
  cl_int err = clGetPlatformIDs(32, plats, &np);
  if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || np == 0)
    return clattn__fail(ctx, CLATTN_ERR_NO_DEVICE,
                        "no OpenCL platform found (is an ICD installed?)");
  CLATTN_CL_RET(ctx, err, "clGetPlatformIDs");
  if (np > 32)
    np = 32;
  long want_p = -1, want_d = -1;
  int numeric = sel ? parse_index(sel, &want_p, &want_d) : 0;
  if (numeric == 1) {
    want_d = want_p;
    want_p = -1;
  }
  long flat = 0;
  for (cl_uint p = 0; p < np; p++) {
    cl_uint nd = 0;
    cl_device_id devs[64];
    err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64, devs, &nd);
    if (err == CL_DEVICE_NOT_FOUND || nd == 0)
      continue;
    CLATTN_CL_RET(ctx, err, "clGetDeviceIDs");
    if (nd > 64)
      nd = 64;
    char pname[256] = "";
    CLATTN_CL(ctx, clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname,
                                     pname, NULL));
    pname[sizeof pname - 1] = '\0';
    for (cl_uint d = 0; d < nd; d++, flat++) {
      int match;
      if (sel == NULL || *sel == '\0') {
        match = 1;
      } else if (numeric == 2) {
        match = (long)p == want_p && (long)d == want_d;
      } else if (numeric == 1) {
        match = flat == want_d;
      } else {
        char dname[256] = "";
        CLATTN_CL(ctx, clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof dname,
                                       dname, NULL));
        dname[sizeof dname - 1] = '\0';
        match = ci_contains(dname, sel) || ci_contains(pname, sel);
      }
      if (match) {
        ctx->platform = plats[p];
        ctx->device = devs[d];
        return CLATTN_OK;
      }
    }
  }
  return clattn__fail(ctx, CLATTN_ERR_NO_DEVICE,
                      "no OpenCL device matches \"%s\" (try `clattn devices`)",
                      sel ? sel : "");
done:
  return rc;
}

/* A driver's first discovery of its devices need not be thread-safe (PoCL
 * 3.1 answers one of two threads' first clGetDeviceIDs with
 * CL_DEVICE_NOT_FOUND), and contexts may be created from any thread at
 * once: the library's discovery runs one at a time in the process. */
static clattn_status select_device(clattn_ctx *ctx, const char *sel) {
  static pthread_mutex_t discovery = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&discovery);
  clattn_status rc = select_device_locked(ctx, sel);
  pthread_mutex_unlock(&discovery);
  return rc;
}

/* -------------------------------------------------------------- context */

static clattn_status setup_cache_dir(clattn_ctx *ctx,
                                     const clattn_ctx_opts *o) {
  const char *off = getenv("CLATTN_NO_DISK_CACHE");
  if (o->no_disk_cache || (off && *off && strcmp(off, "0") != 0))
    return CLATTN_OK;
  const char *dir = o->cache_dir;
  if (dir == NULL)
    dir = getenv("CLATTN_CACHE_DIR");
  if (dir && *dir) {
    ctx->cache_dir = strdup(dir);
  } else {
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    char buf[4096];
    if (xdg && *xdg)
      snprintf(buf, sizeof buf, "%s/clattn", xdg);
    else if (home && *home)
      snprintf(buf, sizeof buf, "%s/.cache/clattn", home);
    else
      return CLATTN_OK; /* nowhere to cache: run without a disk cache */
    ctx->cache_dir = strdup(buf);
  }
  if (ctx->cache_dir == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of memory");
  return CLATTN_OK;
}

void clattn__create_errmsg(const char *msg) {
  snprintf(create_errmsg, sizeof create_errmsg, "%s", msg);
}

clattn_status clattn__ctx_open(const clattn_ctx_opts *opts, clattn_ctx **out) {
  static const clattn_ctx_opts defaults;
  clattn_status rc = CLATTN_OK;
  create_errmsg[0] = '\0';
  if (out == NULL) {
    snprintf(create_errmsg, sizeof create_errmsg, "out is NULL");
    return CLATTN_ERR_INVALID_ARG;
  }
  *out = NULL;
  const clattn_ctx_opts *o = opts ? opts : &defaults;
  clattn_ctx *ctx = calloc(1, sizeof *ctx);
  if (ctx == NULL) {
    snprintf(create_errmsg, sizeof create_errmsg, "out of host memory");
    return CLATTN_ERR_NOMEM;
  }
  pthread_mutexattr_t attr;
  int perr = pthread_mutexattr_init(&attr);
  if (perr == 0) {
    perr = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    if (perr == 0)
      perr = pthread_mutex_init(&ctx->lock, &attr);
    pthread_mutexattr_destroy(&attr);
  }
  if (perr != 0) {
    snprintf(create_errmsg, sizeof create_errmsg,
             "cannot create the context's lock (pthread error %d)", perr);
    free(ctx);
    return CLATTN_ERR_NOMEM;
  }
  ctx->magic = CLATTN_CTX_MAGIC;
  /* the creating thread's slot: the context is not shared yet, and out of
   * memory this early is the creation's failure, not a degraded context */
  ctx->cur = own_slot(ctx);
  ctx->errmsg = ctx->cur->errmsg;
  if (ctx->cur == &ctx->shared) {
    snprintf(create_errmsg, sizeof create_errmsg, "out of host memory");
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    return CLATTN_ERR_NOMEM;
  }
  if (o->queue != NULL) {
    cl_command_queue_properties props = 0;
    CLATTN_CL(ctx,
              clGetCommandQueueInfo(o->queue, CL_QUEUE_CONTEXT,
                                    sizeof ctx->context, &ctx->context, NULL));
    CLATTN_CL(ctx,
              clGetCommandQueueInfo(o->queue, CL_QUEUE_DEVICE,
                                    sizeof ctx->device, &ctx->device, NULL));
    CLATTN_CL(ctx, clGetCommandQueueInfo(o->queue, CL_QUEUE_PROPERTIES,
                                         sizeof props, &props, NULL));
    if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
      ctx->context = NULL;
      rc = clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "the queue is out of order; clattn needs an in-order "
                        "queue (its calls enqueue dependent kernels)");
      goto done;
    }
    CLATTN_CL(ctx, clGetDeviceInfo(ctx->device, CL_DEVICE_PLATFORM,
                                   sizeof ctx->platform, &ctx->platform, NULL));
    CLATTN_CL(ctx, clRetainContext(ctx->context));
    ctx->queue = o->queue;
    CLATTN_CL(ctx, clRetainCommandQueue(ctx->queue));
  } else {
    const char *sel = o->device ? o->device : getenv("CLATTN_DEVICE");
    CLATTN_TRY(select_device(ctx, sel));
    cl_int err = CL_SUCCESS;
    cl_context_properties cp[] = {CL_CONTEXT_PLATFORM,
                                  (cl_context_properties)ctx->platform, 0};
    ctx->context = clCreateContext(cp, 1, &ctx->device, NULL, NULL, &err);
    CLATTN_CL_RET(ctx, err, "clCreateContext");
    ctx->queue = clCreateCommandQueue(
        ctx->context, ctx->device, o->profiling ? CL_QUEUE_PROFILING_ENABLE : 0,
        &err);
    CLATTN_CL_RET(ctx, err, "clCreateCommandQueue");
  }
  CLATTN_TRY(read_devinfo(ctx));
  CLATTN_TRY(setup_cache_dir(ctx, o));
  ctx->errmsg[0] = '\0';
  *out = ctx;
  return CLATTN_OK;
done:
  snprintf(create_errmsg, sizeof create_errmsg, "%s", ctx->errmsg);
  clattn__ctx_close(ctx);
  return rc;
}

void clattn__programs_free(clattn_ctx *ctx);

void clattn__ctx_close(clattn_ctx *ctx) {
  if (ctx == NULL || ctx->magic != CLATTN_CTX_MAGIC)
    return;
  if (ctx->queue)
    clFinish(ctx->queue); /* scratch buffers may still be in use */
  clattn__programs_free(ctx);
  clattn__consts_free(ctx);
  for (int i = 0; i < CLATTN_SCRATCH_SLOTS; i++)
    if (ctx->scratch[i])
      clReleaseMemObject(ctx->scratch[i]);
  if (ctx->queue)
    clReleaseCommandQueue(ctx->queue);
  if (ctx->context)
    clReleaseContext(ctx->context);
  free(ctx->cache_dir);
  while (ctx->slots) {
    clattn__thread_slot *next = ctx->slots->next;
    free(ctx->slots);
    ctx->slots = next;
  }
  pthread_mutex_destroy(&ctx->lock);
  ctx->magic = 0;
  free(ctx);
}

cl_context clattn_ctx_cl_context(const clattn_ctx *ctx) {
  return clattn__ctx_check(ctx) ? NULL : ctx->context;
}
cl_command_queue clattn_ctx_queue(const clattn_ctx *ctx) {
  return clattn__ctx_check(ctx) ? NULL : ctx->queue;
}
cl_device_id clattn_ctx_device(const clattn_ctx *ctx) {
  return clattn__ctx_check(ctx) ? NULL : ctx->device;
}

void clattn_ctx_cache_stats(const clattn_ctx *ctx, clattn_cache_stats *out) {
  clattn_cache_stats own;
  char why[128];
  if (out == NULL)
    return;
  memset(&own, 0, sizeof own);
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  if (locked != NULL) {
    own = locked->stats;
    clattn__ctx_leave(locked);
  }
  clattn__struct_out(out, &own, sizeof own, "clattn_cache_stats", why,
                     sizeof why);
}

/* --------------------------------------------------- scratch and launch */

clattn_status clattn__scratch(clattn_ctx *ctx, int slot, size_t size,
                              cl_mem *out) {
  clattn_status rc = CLATTN_OK;
  if (size == 0)
    size = 1;
  if (ctx->scratch_size[slot] < size) {
    if (ctx->scratch[slot]) {
      /* the old buffer may still be read by queued kernels: releasing it is
       * safe (OpenCL keeps it alive until they finish) */
      clReleaseMemObject(ctx->scratch[slot]);
      ctx->scratch[slot] = NULL;
      ctx->scratch_size[slot] = 0;
    }
    if (size > ctx->dev.max_alloc)
      return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                          "needs a %zu-byte work buffer; the device allows "
                          "at most %llu bytes per allocation",
                          size, (unsigned long long)ctx->dev.max_alloc);
    cl_int err = CL_SUCCESS;
    cl_mem m =
        clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, size, NULL, &err);
    CLATTN_CL_RET(ctx, err, "clCreateBuffer");
    ctx->scratch[slot] = m;
    ctx->scratch_size[slot] = size;
  }
  *out = ctx->scratch[slot];
done:
  return rc;
}

clattn_status clattn__check_buffer(clattn_ctx *ctx, cl_mem m, size_t need,
                                   const char *what) {
  clattn_status rc = CLATTN_OK;
  if (m == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "buffer %s is NULL", what);
  /* a kernel given another context's buffer fails in the driver, or on
   * some drivers reads memory that is not the caller's */
  cl_context owner = NULL;
  CLATTN_CL(ctx,
            clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof owner, &owner, NULL));
  if (owner != ctx->context)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "buffer %s is from another cl_context than the "
                        "clattn context's",
                        what);
  size_t have = 0;
  CLATTN_CL(ctx, clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof have, &have, NULL));
  if (have < need)
    return clattn__fail(ctx, CLATTN_ERR_BUFFER_TOO_SMALL,
                        "buffer %s holds %zu bytes; the call needs %zu", what,
                        have, need);
done:
  return rc;
}

clattn_status clattn__arg(clattn_ctx *ctx, cl_kernel k, cl_uint i, size_t size,
                          const void *value) {
  cl_int err = clSetKernelArg(k, i, size, value);
  if (err != CL_SUCCESS) {
    char call[64];
    snprintf(call, sizeof call, "clSetKernelArg(%u)", i);
    return clattn__cl_fail(ctx, err, call, __FILE__, __LINE__);
  }
  return CLATTN_OK;
}

clattn_status clattn__args(clattn_ctx *ctx, cl_kernel k, cl_uint *next, int n,
                           size_t size, const void *values) {
  const char *v = values;
  for (int i = 0; i < n; i++) {
    clattn_status rc = clattn__arg(ctx, k, (*next)++, size, v + i * size);
    if (rc != CLATTN_OK)
      return rc;
  }
  return CLATTN_OK;
}

clattn_status clattn__scalars(clattn_ctx *ctx, cl_kernel k, cl_uint *next,
                              int n, size_t size, const void *values) {
  const uint64_t h = (uint64_t)(uintptr_t)k * 0x9e3779b97f4a7c15u;
  clattn__kernel_scalars *m = &ctx->scalars[h >> 59];
  _Static_assert(CLATTN__SCALAR_KERNELS == 32, "the slot is 5 bits of h");
  if (m->kernel != k) { /* another kernel had the slot: start again */
    memset(m, 0, sizeof *m);
    m->kernel = k;
  }
  const char *v = values;
  for (int i = 0; i < n; i++) {
    const cl_uint a = (*next)++;
    const int known = a < CLATTN__SCALAR_ARGS && size <= sizeof m->value[0];
    unsigned long long w = 0;
    if (known) {
      memcpy(&w, v + i * size, size);
      if (m->size[a] == size && m->value[a] == w)
        continue;
      m->size[a] = 0; /* unknown until the set succeeds */
    }
    clattn_status rc = clattn__arg(ctx, k, a, size, v + i * size);
    if (rc != CLATTN_OK)
      return rc;
    if (known) {
      m->size[a] = (unsigned char)size;
      m->value[a] = w;
    }
  }
  return CLATTN_OK;
}

clattn_status clattn__launch(clattn_ctx *ctx, cl_kernel k, cl_uint dims,
                             const size_t *gws, const size_t *lws,
                             cl_uint num_wait, const cl_event *wait,
                             cl_event *out) {
  clattn_status rc = CLATTN_OK;
  for (cl_uint i = 0; i < dims; i++) {
    if (gws[i] == 0) { /* nothing to compute: keep the event contract */
      if (out != NULL || num_wait > 0)
        CLATTN_CL(ctx, clEnqueueMarkerWithWaitList(
                           ctx->queue, num_wait, num_wait ? wait : NULL, out));
      return CLATTN_OK;
    }
  }
  /* On CPU devices a launch without a local size gets one-item groups:
   * PoCL would otherwise pick a size from the global size and compile a new
   * work-group function for every shape. */
  static const size_t ones[3] = {1, 1, 1};
  if (lws == NULL && (ctx->dev.type & CL_DEVICE_TYPE_CPU))
    lws = ones;
  CLATTN_CL(ctx, clEnqueueNDRangeKernel(ctx->queue, k, dims, NULL, gws, lws,
                                        num_wait, num_wait ? wait : NULL, out));
done:
  return rc;
}

/* ---------------------------------------------- work-groups and shapes */

clattn_status clattn__kernel_wg(clattn_ctx *ctx, cl_kernel k, size_t *out) {
  clattn_status rc = CLATTN_OK;
  CLATTN_CL(ctx,
            clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE,
                                     sizeof *out, out, NULL));
done:
  return rc;
}

clattn_status clattn__kernel_subgroup(clattn_ctx *ctx, cl_kernel k, size_t wg,
                                      size_t *out) {
  clattn_status rc = CLATTN_OK;
  clGetKernelSubGroupInfoKHR_fn info = NULL;
  if (ctx->dev.has_subgroups)
    info = (clGetKernelSubGroupInfoKHR_fn)(uintptr_t)
        clGetExtensionFunctionAddressForPlatform(ctx->platform,
                                                 "clGetKernelSubGroupInfoKHR");
  if (info == NULL)
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "the device has no subgroups (cl_khr_subgroups: "
                        "clGetKernelSubGroupInfoKHR)");
  *out = 0;
  CLATTN_CL(ctx,
            info(k, ctx->device, CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE_KHR,
                 sizeof wg, &wg, sizeof *out, out, NULL));
  if (*out == 0 || *out > wg)
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "subgroup size %zu of a %zu-item work-group", *out, wg);
done:
  return rc;
}

clattn_status clattn__check_wg(clattn_ctx *ctx, cl_kernel k, size_t wg,
                               size_t local_bytes, const char *what) {
  clattn_status rc = CLATTN_OK;
  size_t kwg = 0;
  if (wg > ctx->dev.max_wg || wg > ctx->dev.max_item[0])
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "%s: work-group of %zu items exceeds the device "
                        "limit (%zu, first dimension %zu)",
                        what, wg, ctx->dev.max_wg, ctx->dev.max_item[0]);
  if (local_bytes > ctx->dev.local_mem)
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "%s needs %zu bytes of local memory; the device has "
                        "%llu",
                        what, local_bytes,
                        (unsigned long long)ctx->dev.local_mem);
  if (k == NULL)
    return CLATTN_OK;
  CLATTN_CL(ctx,
            clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE,
                                     sizeof kwg, &kwg, NULL));
  if (wg > kwg)
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "%s: the compiled kernel allows work-groups of at "
                        "most %zu items; %zu requested",
                        what, kwg, wg);
done:
  return rc;
}

/* Validate the shape fields shared by every entry point; returns OK or a
 * recorded SHAPE/UNSUPPORTED failure. */
clattn__target clattn__ctx_target(const clattn_ctx *ctx) {
  clattn__target t;
  t.is_cpu = (ctx->dev.type & CL_DEVICE_TYPE_CPU) != 0;
  t.cpu_vectors = t.is_cpu && ctx->dev.pref_float > 1;
  t.vec_width = t.cpu_vectors ? (int)ctx->dev.pref_float : 1;
  t.vregs = t.cpu_vectors ? clattn__cpu_vregs(t.vec_width, ctx->dev.vendor) : 0;
  t.compute_units = ctx->dev.compute_units ? ctx->dev.compute_units : 1;
  t.max_wg = ctx->dev.max_wg < ctx->dev.max_item[0] ? ctx->dev.max_wg
                                                    : ctx->dev.max_item[0];
  t.local_mem = ctx->dev.local_mem;
  t.gemm_own_from = ctx->gemm_own_from;
  t.subgroups = ctx->dev.has_subgroups;
  t.sg_sizes = ctx->dev.sg_sizes;
  return t;
}
