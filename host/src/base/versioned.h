/* versioned.h - internal: the public structs' leading `size` (clattn.h,
 * "Versioned structs"): a caller's struct read into the library's own,
 * and the library's written into a caller's, each as long as the shorter
 * of the two. */
#ifndef CLATTN_VERSIONED_H
#define CLATTN_VERSIONED_H

#include "clattn_tools.h"

#include <stddef.h>

/* Copy the caller's struct into own (own_size bytes, of type `type`):
 * its first `size` bytes, zeros after them, and own's size set to
 * own_size.  CLATTN_ERR_INVALID_ARG for an unset size, and
 * CLATTN_ERR_UNSUPPORTED for a larger struct with a field set that this
 * library does not know; why says which. */
clattn_status clattn__struct_in(void *own, size_t own_size, const void *caller,
                                const char *type, char *why, size_t cap);

/* Write own (own_size bytes) into the caller's struct: at most its `size`
 * bytes, its size kept.  CLATTN_ERR_INVALID_ARG for an unset size. */
clattn_status clattn__struct_out(void *caller, const void *own, size_t own_size,
                                 const char *type, char *why, size_t cap);

/* Read a versioned struct *p into own, pointing p at own; a NULL *p stays
 * NULL.  For the pointers a struct holds (clattn_attn_desc.params). */
clattn_status clattn__struct_in_ptr(const void **p, void *own, size_t own_size,
                                    const char *type, char *why, size_t cap);

/* The caller's `size` (0 for a NULL struct). */
size_t clattn__struct_size(const void *caller);

/* n rows of the library's struct (own_size bytes each) copied into a new
 * array of n rows of elem_size bytes, each row's size set to elem_size and
 * the bytes past own_size zero; NULL when out of memory.  For lists the
 * library hands out (freed with clattn_free). */
void *clattn__rows_out(const void *own, size_t own_size, int n,
                       size_t elem_size);

#endif /* CLATTN_VERSIONED_H */
