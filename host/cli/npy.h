/* npy.h - minimal reader/writer for NumPy .npy files (CLI only).
 *
 * Reads format versions 1.0, 2.0 and 3.0 with C-ordered, little-endian
 * '<f4', '<f2', '<i4' or '|i1' data.  Writes version 1.0.  Anything else is
 * rejected with a one-line message. */
#ifndef CLATTN_CLI_NPY_H
#define CLATTN_CLI_NPY_H

#include <stddef.h>

#define NPY_MAX_DIMS 8

typedef enum npy_dtype {
  NPY_F32 = 0, /* '<f4' */
  NPY_F16 = 1, /* '<f2', raw IEEE binary16 bits */
  NPY_I32 = 2, /* '<i4' */
  NPY_I8 = 3   /* '|i1': an int8 KV cache */
} npy_dtype;

typedef struct npy_array {
  npy_dtype dtype;
  int ndim;
  size_t shape[NPY_MAX_DIMS];
  size_t count; /* product of shape (1 for a 0-d array) */
  void *data;   /* count elements in host byte order; owned */
} npy_array;

/* Bytes per element and the descr string ("<f4", ...). */
size_t npy_dtype_size(npy_dtype dt);
const char *npy_dtype_descr(npy_dtype dt);

/* Read a whole file into *a.  Returns 0, or -1 with a one-line message
 * (without the path) in err.  *a needs no npy_free on failure. */
int npy_read(const char *path, npy_array *a, char *err, size_t errlen);

/* Write data (count = product of shape, host byte order) as a version 1.0
 * file, as base/out_file.h writes a file: a regular one appears
 * atomically, a device is written through, and a file this process read
 * with npy_read is never replaced.  Returns 0, or -1 with a message in
 * err. */
int npy_write(const char *path, npy_dtype dt, int ndim, const size_t *shape,
              const void *data, char *err, size_t errlen);

void npy_free(npy_array *a);

/* "[2, 3, 4]" into buf (for messages). */
const char *npy_shape_str(int ndim, const size_t *shape, char *buf, size_t len);

#endif
