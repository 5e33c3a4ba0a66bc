/* util.c - the library's generic helpers (base.h): status and error names,
 * the version, dtype sizes, hashing, directories, bounded text and shape
 * arithmetic, none of which needs a context. */
#include "base/base.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------ statuses */

const char *clattn_status_str(clattn_status st) {
  switch (st) {
#define CLATTN_STATUS_CASE_(name, num, text)                                   \
  case name:                                                                   \
    return text;
    CLATTN_STATUS_MAP(CLATTN_STATUS_CASE_)
#undef CLATTN_STATUS_CASE_
  }
  return "unknown status";
}

const char *clattn_version(void) {
#define CLATTN_STR2_(x) #x
#define CLATTN_STR_(x) CLATTN_STR2_(x)
  return CLATTN_STR_(CLATTN_VERSION_MAJOR) "." CLATTN_STR_(
      CLATTN_VERSION_MINOR) "." CLATTN_STR_(CLATTN_VERSION_PATCH);
}

size_t clattn_dtype_size(clattn_dtype dt) {
  switch (dt) {
  case CLATTN_F32:
    return 4;
  case CLATTN_F16:
  case CLATTN_BF16:
    return 2;
  case CLATTN_I8:
    return 1;
  }
  return 0;
}

const char *clattn_cl_errstr(cl_int err) {
  switch (err) {
#define E_(x)                                                                  \
  case x:                                                                      \
    return #x;
    E_(CL_SUCCESS)
    E_(CL_DEVICE_NOT_FOUND) E_(CL_DEVICE_NOT_AVAILABLE) E_(CL_COMPILER_NOT_AVAILABLE) E_(
        CL_MEM_OBJECT_ALLOCATION_FAILURE) E_(CL_OUT_OF_RESOURCES) E_(CL_OUT_OF_HOST_MEMORY)
        E_(CL_PROFILING_INFO_NOT_AVAILABLE) E_(CL_MEM_COPY_OVERLAP) E_(
            CL_IMAGE_FORMAT_MISMATCH) E_(CL_IMAGE_FORMAT_NOT_SUPPORTED) E_(CL_BUILD_PROGRAM_FAILURE)
            E_(CL_MAP_FAILURE) E_(CL_MISALIGNED_SUB_BUFFER_OFFSET) E_(
                CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) E_(CL_COMPILE_PROGRAM_FAILURE)
                E_(CL_LINKER_NOT_AVAILABLE) E_(CL_LINK_PROGRAM_FAILURE) E_(
                    CL_DEVICE_PARTITION_FAILED) E_(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
                    E_(CL_INVALID_VALUE) E_(CL_INVALID_DEVICE_TYPE) E_(CL_INVALID_PLATFORM) E_(
                        CL_INVALID_DEVICE) E_(CL_INVALID_CONTEXT) E_(CL_INVALID_QUEUE_PROPERTIES)
                        E_(CL_INVALID_COMMAND_QUEUE) E_(CL_INVALID_HOST_PTR) E_(
                            CL_INVALID_MEM_OBJECT) E_(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
                            E_(CL_INVALID_IMAGE_SIZE) E_(CL_INVALID_SAMPLER) E_(
                                CL_INVALID_BINARY) E_(CL_INVALID_BUILD_OPTIONS)
                                E_(CL_INVALID_PROGRAM) E_(CL_INVALID_PROGRAM_EXECUTABLE) E_(
                                    CL_INVALID_KERNEL_NAME) E_(CL_INVALID_KERNEL_DEFINITION)
                                    E_(CL_INVALID_KERNEL) E_(CL_INVALID_ARG_INDEX) E_(
                                        CL_INVALID_ARG_VALUE) E_(CL_INVALID_ARG_SIZE)
                                        E_(CL_INVALID_KERNEL_ARGS) E_(
                                            CL_INVALID_WORK_DIMENSION) E_(CL_INVALID_WORK_GROUP_SIZE)
                                            E_(CL_INVALID_WORK_ITEM_SIZE) E_(
                                                CL_INVALID_GLOBAL_OFFSET)
                                                E_(CL_INVALID_EVENT_WAIT_LIST) E_(
                                                    CL_INVALID_EVENT) E_(CL_INVALID_OPERATION)
                                                    E_(CL_INVALID_GL_OBJECT) E_(
                                                        CL_INVALID_BUFFER_SIZE)
                                                        E_(CL_INVALID_MIP_LEVEL) E_(
                                                            CL_INVALID_GLOBAL_WORK_SIZE)
                                                            E_(CL_INVALID_PROPERTY) E_(
                                                                CL_INVALID_IMAGE_DESCRIPTOR)
                                                                E_(CL_INVALID_COMPILER_OPTIONS)
                                                                    E_(CL_INVALID_LINKER_OPTIONS)
                                                                        E_(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef E_
                                                                            case -1001
        : return "CL_PLATFORM_NOT_FOUND_KHR";
  default:
    return "unknown OpenCL error";
  }
}

/* ---------------------------------------------------- hashing, files */

clattn__hash clattn__hash_init(void) {
  clattn__hash h = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
  return h;
}

void clattn__hash_bytes(clattn__hash *h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h->a = (h->a ^ p[i]) * 0x100000001b3ull;
    h->b = (h->b ^ p[i]) * 0x100000001b3ull;
    h->b ^= h->b >> 29;
  }
  /* separator so that ("ab","c") and ("a","bc") differ */
  h->a = (h->a ^ 0xffu) * 0x100000001b3ull;
  h->b = (h->b ^ 0xfeu) * 0x100000001b3ull;
}

void clattn__hash_str(clattn__hash *h, const char *s) {
  clattn__hash_bytes(h, s, strlen(s));
}

void clattn__hash_hex(const clattn__hash *h, char out[CLATTN_HASH_HEX]) {
  snprintf(out, CLATTN_HASH_HEX, "%016llx%016llx", (unsigned long long)h->a,
           (unsigned long long)h->b);
}

int clattn__mkdir_p(const char *dir) {
  char buf[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(buf, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] == '/' || buf[i] == '\0') {
      char c = buf[i];
      buf[i] = '\0';
      if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return -1;
      buf[i] = c;
    }
  }
  return 0;
}

/* ------------------------------------------------------------ text */

int clattn__appendf(char *buf, size_t cap, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len >= cap)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + len, cap - len, fmt, ap);
  va_end(ap);
  return (n < 0 || (size_t)n >= cap - len) ? -1 : 0;
}

/* ------------------------------------------------------- shape helpers */

clattn__strides clattn__layout_strides(clattn_layout lay, long S, long H,
                                       long D) {
  clattn__strides st;
  if (lay == CLATTN_BHSD) {
    st.b = H * S * D;
    st.s = D;
    st.h = S * D;
  } else {
    st.b = S * H * D;
    st.s = H * D;
    st.h = D;
  }
  return st;
}

int clattn__pow2_floor(size_t n) {
  int p = 1;
  while ((size_t)p * 2 <= n && p < (1 << 30))
    p *= 2;
  return p;
}

size_t clattn__bytes(size_t elem, long a, long b, long c, long d) {
  const long f[4] = {a, b, c, d};
  uint64_t total = elem;
  for (int i = 0; i < 4; i++) {
    if (f[i] < 0 || (f[i] > 0 && total > (UINT64_C(1) << 62) / (uint64_t)f[i]))
      return 0;
    total *= (uint64_t)f[i];
  }
  return total > SIZE_MAX ? 0 : (size_t)total;
}

void clattn_free(void *p) { free(p); }
