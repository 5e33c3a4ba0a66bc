/* ragged.c - what `clattn run decode --paged` and `clattn run attention
 * --varlen` share (ragged.h). */
#include "ragged.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The comma-separated lengths of --kv-lens: *n of them into *lens. */
static int parse_lens(const char *text, int *n, int **lens) {
  int count = 1;
  for (const char *c = text; *c; c++)
    count += *c == ',';
  int *l = cli_alloc((size_t)count, sizeof *l);
  if (!l)
    return CLI_FAIL;
  const char *c = text;
  for (int i = 0; i < count; i++) {
    char *end;
    errno = 0;
    long v = strtol(c, &end, 10);
    if (errno || end == c || v < 0 || v > INT_MAX ||
        (*end != ',' && *end != '\0') || (*end == '\0') != (i == count - 1)) {
      free(l);
      cli_err("--kv-lens '%s': expected lengths >= 0 separated by commas "
              "(e.g. 1,15,16,17)",
              text);
      return CLI_USAGE;
    }
    l[i] = (int)v;
    c = end + 1;
  }
  *n = count;
  *lens = l;
  return CLI_OK;
}

int cli_ragged_lens(const cli_opts *o, int max_len, unsigned long long *seed,
                    int *batch, int **lens) {
  if (o->kv_lens)
    return parse_lens(o->kv_lens, batch, lens);
  float *u = cli_alloc((size_t)o->batch, sizeof *u);
  int *l = u ? cli_alloc((size_t)o->batch, sizeof *l) : NULL;
  if (!l) {
    free(u);
    return CLI_FAIL;
  }
  cli_random_fill(seed, u, (size_t)o->batch, 1.0f);
  for (int b = 0; b < o->batch; b++) /* u in [-1, 1): 1 .. max_len */
    l[b] = 1 + (int)((u[b] + 1.0f) * 0.5f * (float)max_len) % max_len;
  free(u);
  *batch = o->batch;
  *lens = l;
  return CLI_OK;
}

int cli_ragged_expect(const char *dir, const char *file, const npy_array *a,
                      npy_dtype dt, int ndim, const size_t *dims,
                      const char *names) {
  int ok = a->dtype == dt && a->ndim == ndim;
  for (int i = 0; ok && i < ndim; i++)
    ok = dims[i] == SIZE_MAX || dims[i] == a->shape[i];
  if (ok)
    return CLI_OK;
  char want[96], got[96];
  int n = snprintf(want, sizeof want, "[");
  for (int i = 0; i < ndim && n >= 0 && (size_t)n < sizeof want; i++) {
    if (dims[i] == SIZE_MAX)
      n += snprintf(want + n, sizeof want - (size_t)n, "%s*", i ? ", " : "");
    else
      n += snprintf(want + n, sizeof want - (size_t)n, "%s%zu", i ? ", " : "",
                    dims[i]);
  }
  if (n >= 0 && (size_t)n < sizeof want)
    snprintf(want + n, sizeof want - (size_t)n, "]");
  cli_err("%s/%s: expected '%s' %s = %s, got '%s' %s", dir, file,
          npy_dtype_descr(dt), names, want, npy_dtype_descr(a->dtype),
          npy_shape_str(a->ndim, a->shape, got, sizeof got));
  return CLI_USAGE;
}

npy_array cli_ragged_ints(int *ints, int ndim, const size_t *shape) {
  npy_array a = {.dtype = NPY_I32, .ndim = ndim, .count = 1, .data = ints};
  for (int i = 0; i < ndim; i++) {
    a.shape[i] = shape[i];
    a.count *= shape[i];
  }
  return a;
}

int cli_ragged_save(const char *dir, int n, const char *const *files,
                    const npy_array *const *arr) {
  int rc = cli_mkdir(dir);
  for (int i = 0; i < n && !rc; i++)
    rc = cli_save(dir, files[i], arr[i]->dtype, arr[i]->ndim, arr[i]->shape,
                  arr[i]->data);
  return rc;
}

int cli_ragged_upload(cl_context c, int n, const npy_array *const *in,
                      cl_mem *m, size_t out_bytes) {
  int ok = 1;
  for (int i = 0; i < n && ok; i++)
    if (in[i]->data) /* the scales of a float cache stay NULL */
      ok = (m[i] = cli_buffer(c, in[i]->count * npy_dtype_size(in[i]->dtype),
                              in[i]->data)) != NULL;
  return !ok || !(m[n] = cli_buffer(c, out_bytes, NULL));
}
