/* versioned.c - the public structs' leading `size` (versioned.h). */
#include "base/versioned.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t caller_size(const void *caller) {
  size_t size;
  memcpy(&size, caller, sizeof size);
  return size;
}

static clattn_status unset(const char *type, size_t size, char *why,
                           size_t cap) {
  snprintf(why, cap, "%s.size is %zu: set it to sizeof(%s)", type, size, type);
  return CLATTN_ERR_INVALID_ARG;
}

clattn_status clattn__struct_in(void *own, size_t own_size, const void *caller,
                                const char *type, char *why, size_t cap) {
  const size_t size = caller_size(caller);
  if (size < sizeof(size_t))
    return unset(type, size, why, cap);
  if (size < own_size) /* an older header's: the fields it lacks default */
    memset((unsigned char *)own + size, 0, own_size - size);
  if (size > own_size) {
    const unsigned char *tail = (const unsigned char *)caller + own_size;
    for (size_t i = 0; i < size - own_size; i++)
      if (tail[i] != 0) {
        snprintf(why, cap,
                 "%s has a field this library (%s) does not know set, at "
                 "byte %zu of %zu",
                 type, clattn_version(), own_size + i, size);
        return CLATTN_ERR_UNSUPPORTED;
      }
  }
  memcpy(own, caller, size < own_size ? size : own_size);
  memcpy(own, &own_size, sizeof own_size);
  return CLATTN_OK;
}

clattn_status clattn__struct_out(void *caller, const void *own, size_t own_size,
                                 const char *type, char *why, size_t cap) {
  const size_t size = caller_size(caller);
  if (size < sizeof(size_t))
    return unset(type, size, why, cap);
  const size_t n = size < own_size ? size : own_size;
  memcpy((unsigned char *)caller + sizeof size,
         (const unsigned char *)own + sizeof size, n - sizeof size);
  return CLATTN_OK;
}

clattn_status clattn__struct_in_ptr(const void **p, void *own, size_t own_size,
                                    const char *type, char *why, size_t cap) {
  if (*p == NULL)
    return CLATTN_OK;
  clattn_status rc = clattn__struct_in(own, own_size, *p, type, why, cap);
  if (rc == CLATTN_OK)
    *p = own;
  return rc;
}

size_t clattn__struct_size(const void *caller) {
  return caller ? caller_size(caller) : 0;
}

void *clattn__rows_out(const void *own, size_t own_size, int n,
                       size_t elem_size) {
  unsigned char *rows = calloc(n > 0 ? (size_t)n : 1, elem_size);
  if (rows == NULL)
    return NULL;
  const size_t keep = elem_size < own_size ? elem_size : own_size;
  for (int i = 0; i < n; i++) {
    unsigned char *row = rows + (size_t)i * elem_size;
    memcpy(row, (const unsigned char *)own + (size_t)i * own_size, keep);
    memcpy(row, &elem_size, sizeof elem_size);
  }
  return rows;
}

