/* fuzz_npy.c - the CLI's .npy reader (host/cli/npy.c, compiled into this
 * target) on arbitrary file contents: it accepts a file or refuses it with
 * a message, never crashes, never reads or allocates past what the file
 * holds; what it accepts is consistent (count = product of the shape, a
 * supported dtype, the data all there), and writing it back and reading
 * that gives the same array. */
#include "fuzz_util.h"
#include "npy.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_scratch_path("in.npy");
  fuzz_write_file(path, data, size);
  npy_array a;
  char err[256] = "";
  if (npy_read(path, &a, err, sizeof err) != 0) {
    if (!err[0])
      fuzz_fail("npy_read refused a file without a message");
    if (a.data != NULL)
      fuzz_fail("npy_read failed but left data");
    return 0;
  }
  if (a.dtype != NPY_F32 && a.dtype != NPY_F16 && a.dtype != NPY_I32 &&
      a.dtype != NPY_I8)
    fuzz_fail("npy_read accepted dtype %d", (int)a.dtype);
  if (a.ndim < 0 || a.ndim > NPY_MAX_DIMS)
    fuzz_fail("npy_read accepted rank %d", a.ndim);
  size_t count = 1;
  for (int i = 0; i < a.ndim; i++)
    count *= a.shape[i];
  if (count != a.count)
    fuzz_fail("npy_read: count %zu, shape product %zu", a.count, count);
  size_t bytes = a.count * npy_dtype_size(a.dtype);
  if (bytes > size)
    fuzz_fail("npy_read: %zu bytes of data from a %zu-byte file", bytes, size);
  /* The data are the file's last bytes (little-endian host). */
  if (bytes && memcmp(a.data, data + size - bytes, bytes) != 0)
    fuzz_fail("npy_read: the data are not the file's");

  /* A new name for each round trip: npy_write refuses a file this process
   * has read (the previous input's round trip read its own). */
  static unsigned round_trips;
  char name[32];
  snprintf(name, sizeof name, "back%u.npy", round_trips++);
  const char *back = fuzz_scratch_path(name);
  if (npy_write(back, a.dtype, a.ndim, a.shape, a.data, err, sizeof err))
    fuzz_fail("npy_write of what npy_read accepted: %s", err);
  npy_array b;
  if (npy_read(back, &b, err, sizeof err))
    fuzz_fail("npy_read of what npy_write wrote: %s", err);
  if (b.dtype != a.dtype || b.ndim != a.ndim || b.count != a.count ||
      memcmp(b.shape, a.shape, (size_t)a.ndim * sizeof a.shape[0]) != 0 ||
      (bytes && memcmp(a.data, b.data, bytes) != 0))
    fuzz_fail("npy_write/npy_read round trip changed the array");
  npy_free(&b);
  unlink(back);
  npy_free(&a);
  return 0;
}
