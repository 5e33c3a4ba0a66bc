/* ragged.h - what `clattn run decode --paged` and `clattn run attention
 * --varlen` share: the sequences' lengths of --random (given by --kv-lens
 * or drawn), the int32 and scale files checked against the shape the other
 * files give, and the arrays the runs read back and write. */
#ifndef CLATTN_CLI_RAGGED_H
#define CLATTN_CLI_RAGGED_H

#include "attn_run.h"

/* The lengths of a --random run: o->kv_lens ("L1,L2,...", each >= 0; sets
 * *batch) or o->batch lengths drawn in 1 .. max_len from *seed.  *lens is
 * allocated (the caller frees it); CLI_USAGE naming --kv-lens when its text
 * is not a list of lengths. */
int cli_ragged_lens(const cli_opts *o, int max_len, unsigned long long *seed,
                    int *batch, int **lens);

/* a (read from DIR/file) is of dtype dt and of shape dims[0 .. ndim-1]
 * (SIZE_MAX: any size), else a message "DIR/FILE: expected 'DT' NAMES =
 * [..], got 'DT' [..]" (names: the dimensions' meaning, "[batch,
 * max_blocks]") and CLI_USAGE. */
int cli_ragged_expect(const char *dir, const char *file, const npy_array *a,
                      npy_dtype dt, int ndim, const size_t *dims,
                      const char *names);

/* An int32 array of `shape` over ints (which it then owns). */
npy_array cli_ragged_ints(int *ints, int ndim, const size_t *shape);

/* Upload the inputs in[0 .. n-1] to m[0 .. n-1] (one whose data is NULL,
 * an absent optional file, stays NULL) and make m[n], the output of
 * out_bytes: 0, else nonzero (the CL error printed). */
int cli_ragged_upload(cl_context c, int n, const npy_array *const *in,
                      cl_mem *m, size_t out_bytes);

/* Write the arrays arr[0 .. n-1] to DIR/files[i].npy (--save-inputs). */
int cli_ragged_save(const char *dir, int n, const char *const *files,
                    const npy_array *const *arr);

#endif
