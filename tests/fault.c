/* fault.c - the allocation and OpenCL fault hooks (see fault.h). */
#include "fault.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------ a set of pointers */

/* Open addressing with tombstones; the tests track at most a few thousand
 * live blocks, far below the table's size. */
#define SLOTS (1u << 15)
#define TOMB ((const void *)1)

typedef struct ptr_set {
  const void *key[SLOTS];
  long refs[SLOTS];
  long live;
} ptr_set;

static size_t slot_of(const void *p) {
  uintptr_t h = (uintptr_t)p;
  h ^= h >> 17;
  h *= 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 20) & (SLOTS - 1);
}

static long *set_find(ptr_set *s, const void *p) {
  for (size_t i = slot_of(p), n = 0; n < SLOTS;
       i = (i + 1) & (SLOTS - 1), n++) {
    if (s->key[i] == NULL)
      return NULL;
    if (s->key[i] == p)
      return &s->refs[i];
  }
  return NULL;
}

static void set_add(ptr_set *s, const void *p) {
  if (p == NULL || set_find(s, p) != NULL)
    return;
  for (size_t i = slot_of(p), n = 0; n < SLOTS;
       i = (i + 1) & (SLOTS - 1), n++) {
    if (s->key[i] == NULL || s->key[i] == TOMB) {
      s->key[i] = p;
      s->refs[i] = 1;
      s->live++;
      return;
    }
  }
  abort(); /* the table is full: a test tracks far too much */
}

static void set_remove(ptr_set *s, long *ref) {
  s->key[ref - s->refs] = TOMB;
  s->live--;
}

static void set_clear(ptr_set *s) {
  memset(s->key, 0, sizeof s->key);
  s->live = 0;
}

/* --------------------------------------------------------- host memory */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* the SQLite hook's state (the end of this file) */
static int sql_armed, sql_crash;
static long sql_count, sql_fail_at;
static char sql_fired[128];
static ptr_set blocks;
static int alloc_armed;
static long alloc_count, alloc_fail_at;
static int alloc_did_fire;
static const void *alloc_fired_at;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

/* Counts an allocation; returns nonzero when this one must fail. */
static int alloc_counts_and_fails(const void *caller) {
  if (!alloc_armed)
    return 0;
  alloc_count++;
  if (alloc_count == alloc_fail_at) {
    alloc_did_fire = 1;
    alloc_fired_at = caller;
    return 1;
  }
  return 0;
}

static void *tracked(void *p) {
  if (p != NULL && alloc_armed)
    set_add(&blocks, p);
  return p;
}

void *__wrap_malloc(size_t n) {
  pthread_mutex_lock(&lock);
  void *p = NULL;
  if (alloc_counts_and_fails(__builtin_return_address(0)))
    errno = ENOMEM;
  else
    p = tracked(__real_malloc(n));
  pthread_mutex_unlock(&lock);
  return p;
}

void *__wrap_calloc(size_t n, size_t size) {
  pthread_mutex_lock(&lock);
  void *p = NULL;
  if (alloc_counts_and_fails(__builtin_return_address(0)))
    errno = ENOMEM;
  else
    p = tracked(__real_calloc(n, size));
  pthread_mutex_unlock(&lock);
  return p;
}

void *__wrap_realloc(void *old, size_t n) {
  pthread_mutex_lock(&lock);
  void *p = NULL;
  if (alloc_counts_and_fails(__builtin_return_address(0))) {
    errno = ENOMEM;
  } else {
    long *ref = old ? set_find(&blocks, old) : NULL;
    p = __real_realloc(old, n);
    if (p != NULL || n == 0) {
      if (ref != NULL)
        set_remove(&blocks, ref);
      if (p != NULL && (ref != NULL || alloc_armed))
        set_add(&blocks, p);
    }
  }
  pthread_mutex_unlock(&lock);
  return p;
}

void __wrap_free(void *p) {
  if (p == NULL)
    return;
  pthread_mutex_lock(&lock);
  long *ref = set_find(&blocks, p);
  if (ref != NULL)
    set_remove(&blocks, ref);
  __real_free(p);
  pthread_mutex_unlock(&lock);
}

static char *dup_from(const void *caller, const char *s, size_t max) {
  size_t n = strnlen(s, max);
  pthread_mutex_lock(&lock);
  char *p = NULL;
  if (alloc_counts_and_fails(caller))
    errno = ENOMEM;
  else
    p = tracked(__real_malloc(n + 1));
  pthread_mutex_unlock(&lock);
  if (p != NULL) {
    memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

char *__wrap_strndup(const char *s, size_t max) {
  return dup_from(__builtin_return_address(0), s, max);
}

char *__wrap_strdup(const char *s) {
  return dup_from(__builtin_return_address(0), s, SIZE_MAX);
}

void fault_alloc_arm(long n) {
  pthread_mutex_lock(&lock);
  alloc_armed = 1;
  alloc_count = 0;
  alloc_fail_at = n;
  alloc_did_fire = 0;
  pthread_mutex_unlock(&lock);
}

long fault_alloc_disarm(void) {
  pthread_mutex_lock(&lock);
  alloc_armed = 0;
  long n = alloc_count;
  pthread_mutex_unlock(&lock);
  return n;
}

int fault_alloc_fired(void) { return alloc_did_fire; }

const void *fault_alloc_site(void) { return alloc_fired_at; }

long fault_alloc_live(void) {
  pthread_mutex_lock(&lock);
  long n = blocks.live;
  pthread_mutex_unlock(&lock);
  return n;
}

/* -------------------------------------------------------------- OpenCL */

static ptr_set objects;
static int cl_armed;
static long cl_count, cl_fail_at;
static cl_int cl_code;
static char cl_only[64];
static const char *cl_did_fire = "";
static cl_program failed_build;

/* Counts a call; returns nonzero when this one must fail. */
static int cl_counts_and_fails(const char *name) {
  int fail = 0;
  pthread_mutex_lock(&lock);
  if (cl_armed && (cl_only[0] == '\0' || strstr(name, cl_only) != NULL)) {
    cl_count++;
    if (cl_count == cl_fail_at) {
      cl_did_fire = name;
      fail = 1;
    }
  }
  pthread_mutex_unlock(&lock);
  return fail;
}

static void object_created(const void *o) {
  pthread_mutex_lock(&lock);
  if (o != NULL && cl_armed)
    set_add(&objects, o);
  pthread_mutex_unlock(&lock);
}

static void object_retained(const void *o) {
  pthread_mutex_lock(&lock);
  long *ref = set_find(&objects, o);
  if (ref != NULL)
    ++*ref;
  pthread_mutex_unlock(&lock);
}

static void object_released(const void *o) {
  pthread_mutex_lock(&lock);
  long *ref = set_find(&objects, o);
  if (ref != NULL && --*ref == 0)
    set_remove(&objects, ref);
  pthread_mutex_unlock(&lock);
}

#define FAIL_CREATE(name)                                                      \
  do {                                                                         \
    if (cl_counts_and_fails(name)) {                                           \
      if (err != NULL)                                                         \
        *err = cl_code;                                                        \
      return NULL;                                                             \
    }                                                                          \
  } while (0)

#define FAIL_CALL(name)                                                        \
  do {                                                                         \
    if (cl_counts_and_fails(name))                                             \
      return cl_code;                                                          \
  } while (0)

cl_mem __real_clCreateBuffer(cl_context, cl_mem_flags, size_t, void *,
                             cl_int *);
cl_mem __wrap_clCreateBuffer(cl_context c, cl_mem_flags f, size_t n, void *h,
                             cl_int *err) {
  FAIL_CREATE("clCreateBuffer");
  cl_mem m = __real_clCreateBuffer(c, f, n, h, err);
  object_created(m);
  return m;
}

cl_kernel __real_clCreateKernel(cl_program, const char *, cl_int *);
cl_kernel __wrap_clCreateKernel(cl_program p, const char *name, cl_int *err) {
  FAIL_CREATE("clCreateKernel");
  cl_kernel k = __real_clCreateKernel(p, name, err);
  object_created(k);
  return k;
}

cl_program __real_clCreateProgramWithSource(cl_context, cl_uint, const char **,
                                            const size_t *, cl_int *);
cl_program __wrap_clCreateProgramWithSource(cl_context c, cl_uint n,
                                            const char **s, const size_t *l,
                                            cl_int *err) {
  FAIL_CREATE("clCreateProgramWithSource");
  cl_program p = __real_clCreateProgramWithSource(c, n, s, l, err);
  object_created(p);
  return p;
}

cl_program __real_clCreateProgramWithBinary(cl_context, cl_uint,
                                            const cl_device_id *,
                                            const size_t *,
                                            const unsigned char **, cl_int *,
                                            cl_int *);
cl_program __wrap_clCreateProgramWithBinary(cl_context c, cl_uint n,
                                            const cl_device_id *d,
                                            const size_t *l,
                                            const unsigned char **b,
                                            cl_int *status, cl_int *err) {
  FAIL_CREATE("clCreateProgramWithBinary");
  cl_program p = __real_clCreateProgramWithBinary(c, n, d, l, b, status, err);
  object_created(p);
  return p;
}

cl_int __real_clBuildProgram(cl_program, cl_uint, const cl_device_id *,
                             const char *,
                             void(CL_CALLBACK *)(cl_program, void *), void *);
cl_int __wrap_clBuildProgram(cl_program p, cl_uint n, const cl_device_id *d,
                             const char *opt,
                             void(CL_CALLBACK *cb)(cl_program, void *),
                             void *user) {
  if (cl_counts_and_fails("clBuildProgram")) {
    failed_build = p;
    return cl_code;
  }
  return __real_clBuildProgram(p, n, d, opt, cb, user);
}

cl_int __real_clGetProgramBuildInfo(cl_program, cl_device_id,
                                    cl_program_build_info, size_t, void *,
                                    size_t *);
cl_int __wrap_clGetProgramBuildInfo(cl_program p, cl_device_id d,
                                    cl_program_build_info what, size_t cap,
                                    void *out, size_t *need) {
  if (p == failed_build && what == CL_PROGRAM_BUILD_LOG) {
    const size_t n = sizeof FAULT_BUILD_LOG;
    if (need != NULL)
      *need = n;
    if (out != NULL) {
      if (cap < n)
        return CL_INVALID_VALUE;
      memcpy(out, FAULT_BUILD_LOG, n);
    }
    return CL_SUCCESS;
  }
  return __real_clGetProgramBuildInfo(p, d, what, cap, out, need);
}

cl_int __real_clEnqueueNDRangeKernel(cl_command_queue, cl_kernel, cl_uint,
                                     const size_t *, const size_t *,
                                     const size_t *, cl_uint, const cl_event *,
                                     cl_event *);
cl_int __wrap_clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k,
                                     cl_uint dims, const size_t *off,
                                     const size_t *gws, const size_t *lws,
                                     cl_uint nw, const cl_event *w,
                                     cl_event *ev) {
  FAIL_CALL("clEnqueueNDRangeKernel");
  return __real_clEnqueueNDRangeKernel(q, k, dims, off, gws, lws, nw, w, ev);
}

cl_int __real_clEnqueueWriteBuffer(cl_command_queue, cl_mem, cl_bool, size_t,
                                   size_t, const void *, cl_uint,
                                   const cl_event *, cl_event *);
cl_int __wrap_clEnqueueWriteBuffer(cl_command_queue q, cl_mem m, cl_bool b,
                                   size_t off, size_t n, const void *h,
                                   cl_uint nw, const cl_event *w,
                                   cl_event *ev) {
  FAIL_CALL("clEnqueueWriteBuffer");
  return __real_clEnqueueWriteBuffer(q, m, b, off, n, h, nw, w, ev);
}

cl_int __real_clEnqueueReadBuffer(cl_command_queue, cl_mem, cl_bool, size_t,
                                  size_t, void *, cl_uint, const cl_event *,
                                  cl_event *);
cl_int __wrap_clEnqueueReadBuffer(cl_command_queue q, cl_mem m, cl_bool b,
                                  size_t off, size_t n, void *h, cl_uint nw,
                                  const cl_event *w, cl_event *ev) {
  FAIL_CALL("clEnqueueReadBuffer");
  return __real_clEnqueueReadBuffer(q, m, b, off, n, h, nw, w, ev);
}

cl_int __real_clEnqueueFillBuffer(cl_command_queue, cl_mem, const void *,
                                  size_t, size_t, size_t, cl_uint,
                                  const cl_event *, cl_event *);
cl_int __wrap_clEnqueueFillBuffer(cl_command_queue q, cl_mem m, const void *pat,
                                  size_t pn, size_t off, size_t n, cl_uint nw,
                                  const cl_event *w, cl_event *ev) {
  FAIL_CALL("clEnqueueFillBuffer");
  return __real_clEnqueueFillBuffer(q, m, pat, pn, off, n, nw, w, ev);
}

cl_int __real_clEnqueueMarkerWithWaitList(cl_command_queue, cl_uint,
                                          const cl_event *, cl_event *);
cl_int __wrap_clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint nw,
                                          const cl_event *w, cl_event *ev) {
  FAIL_CALL("clEnqueueMarkerWithWaitList");
  return __real_clEnqueueMarkerWithWaitList(q, nw, w, ev);
}

cl_int __real_clEnqueueBarrierWithWaitList(cl_command_queue, cl_uint,
                                           const cl_event *, cl_event *);
cl_int __wrap_clEnqueueBarrierWithWaitList(cl_command_queue q, cl_uint nw,
                                           const cl_event *w, cl_event *ev) {
  FAIL_CALL("clEnqueueBarrierWithWaitList");
  return __real_clEnqueueBarrierWithWaitList(q, nw, w, ev);
}

cl_int __real_clFinish(cl_command_queue);
cl_int __wrap_clFinish(cl_command_queue q) {
  FAIL_CALL("clFinish");
  return __real_clFinish(q);
}

cl_int __real_clSetKernelArg(cl_kernel, cl_uint, size_t, const void *);
cl_int __wrap_clSetKernelArg(cl_kernel k, cl_uint i, size_t n, const void *v) {
  FAIL_CALL("clSetKernelArg");
  return __real_clSetKernelArg(k, i, n, v);
}

cl_int __real_clGetKernelWorkGroupInfo(cl_kernel, cl_device_id,
                                       cl_kernel_work_group_info, size_t,
                                       void *, size_t *);
cl_int __wrap_clGetKernelWorkGroupInfo(cl_kernel k, cl_device_id d,
                                       cl_kernel_work_group_info what,
                                       size_t cap, void *out, size_t *need) {
  FAIL_CALL("clGetKernelWorkGroupInfo");
  return __real_clGetKernelWorkGroupInfo(k, d, what, cap, out, need);
}

cl_int __real_clGetMemObjectInfo(cl_mem, cl_mem_info, size_t, void *, size_t *);
cl_int __wrap_clGetMemObjectInfo(cl_mem m, cl_mem_info what, size_t cap,
                                 void *out, size_t *need) {
  FAIL_CALL("clGetMemObjectInfo");
  return __real_clGetMemObjectInfo(m, what, cap, out, need);
}

cl_int __real_clRetainMemObject(cl_mem);
cl_int __wrap_clRetainMemObject(cl_mem m) {
  cl_int e = __real_clRetainMemObject(m);
  if (e == CL_SUCCESS)
    object_retained(m);
  return e;
}

cl_int __real_clReleaseMemObject(cl_mem);
cl_int __wrap_clReleaseMemObject(cl_mem m) {
  cl_int e = __real_clReleaseMemObject(m);
  if (e == CL_SUCCESS)
    object_released(m);
  return e;
}

cl_int __real_clReleaseKernel(cl_kernel);
cl_int __wrap_clReleaseKernel(cl_kernel k) {
  cl_int e = __real_clReleaseKernel(k);
  if (e == CL_SUCCESS)
    object_released(k);
  return e;
}

cl_int __real_clReleaseProgram(cl_program);
cl_int __wrap_clReleaseProgram(cl_program p) {
  cl_int e = __real_clReleaseProgram(p);
  if (e == CL_SUCCESS)
    object_released(p);
  pthread_mutex_lock(&lock);
  if (p == failed_build)
    failed_build = NULL;
  pthread_mutex_unlock(&lock);
  return e;
}

void fault_cl_arm(long n, cl_int code, const char *only) {
  pthread_mutex_lock(&lock);
  cl_armed = 1;
  cl_count = 0;
  cl_fail_at = n;
  cl_code = code;
  cl_did_fire = "";
  snprintf(cl_only, sizeof cl_only, "%s", only ? only : "");
  pthread_mutex_unlock(&lock);
}

long fault_cl_disarm(void) {
  pthread_mutex_lock(&lock);
  cl_armed = 0;
  long n = cl_count;
  pthread_mutex_unlock(&lock);
  return n;
}

const char *fault_cl_fired(void) { return cl_did_fire; }

long fault_cl_live(void) {
  pthread_mutex_lock(&lock);
  long n = objects.live;
  pthread_mutex_unlock(&lock);
  return n;
}

void fault_reset(void) {
  pthread_mutex_lock(&lock);
  set_clear(&blocks);
  set_clear(&objects);
  alloc_armed = cl_armed = 0;
  alloc_count = cl_count = 0;
  alloc_did_fire = 0;
  cl_did_fire = "";
  failed_build = NULL;
  sql_armed = 0;
  sql_count = 0;
  sql_fired[0] = '\0';
  pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------- SQLite */

int __real_sqlite3_exec(sqlite3 *, const char *, sqlite3_callback, void *,
                        char **);
int __wrap_sqlite3_exec(sqlite3 *h, const char *sql, sqlite3_callback cb,
                        void *user, char **err) {
  pthread_mutex_lock(&lock);
  const int fire = sql_armed && ++sql_count == sql_fail_at;
  if (fire)
    snprintf(sql_fired, sizeof sql_fired, "%s", sql);
  const int crash = fire && sql_crash;
  pthread_mutex_unlock(&lock);
  if (crash)
    _exit(FAULT_SQL_CRASH_STATUS); /* as a kill: no cleanup, no rollback */
  if (fire) {
    if (err)
      *err = NULL;
    return SQLITE_IOERR;
  }
  return __real_sqlite3_exec(h, sql, cb, user, err);
}

void fault_sql_arm(long n, int crash) {
  pthread_mutex_lock(&lock);
  sql_armed = 1;
  sql_crash = crash;
  sql_count = 0;
  sql_fail_at = n;
  sql_fired[0] = '\0';
  pthread_mutex_unlock(&lock);
}

long fault_sql_disarm(void) {
  pthread_mutex_lock(&lock);
  sql_armed = 0;
  long n = sql_count;
  pthread_mutex_unlock(&lock);
  return n;
}

const char *fault_sql_fired(void) { return sql_fired; }
