/* attn_run.h - what `clattn run attention` and `clattn run decode` share:
 * their tensors (read, generated, uploaded, seen as float for the
 * reference), the attention options of clattn.h read from the command
 * line and their files, and the timed calls. */
#ifndef CLATTN_CLI_ATTN_RUN_H
#define CLATTN_CLI_ATTN_RUN_H

#include "cli.h"
#include "reference/ref.h"

/* The tensors of one run.  Attention: q [b, n, hq, dk], k [b, m, hkv, dk],
 * v [b, m, hkv, dv]; decode: n = 1 and m the cache's capacity. */
typedef struct cli_attn_job {
  int b, n, m, hq, hkv, dk, dv;
  clattn_dtype dt;
  npy_array q, k, v, lens; /* storage as read or generated */
  float *qf, *kf, *vf;     /* float copies for the reference (f16 only) */
} cli_attn_job;

void cli_attn_job_free(cli_attn_job *j);

/* Read DIR/q.npy, k.npy, v.npy and kv_lens.npy (optional unless
 * lens_required) for command `cmd`: q, k and v rank 4 (shapes[i] their
 * dimensions' names, for the message) of one tensor dtype
 * ('<f4' or '<f2'), kv_lens '<i4' (its length is checked by
 * cli_attn_check_lens once the batch is known); sets j->dt.  CLI_USAGE
 * with a message naming the file otherwise. */
int cli_attn_load(const char *dir, const char *cmd, const char *const shapes[3],
                  int lens_required, cli_attn_job *j);
/* kv_lens, when read, is '<i4' [j->b]; CLI_USAGE naming it when not. */
int cli_attn_check_lens(const char *dir, const cli_attn_job *j);
/* A dimension v of a file's shape is a positive int: *out, else a message
 * naming the file and the dimension (`what`) and 0. */
int cli_attn_dim(const char *dir, const char *file, const char *what, size_t v,
                 int *out);

/* The query heads hq of DIR/q.npy are a multiple of the KV heads hkv of
 * kv_files ("k.npy/v.npy"): CLI_OK, else a message naming them and
 * CLI_USAGE. */
int cli_attn_check_groups(const char *dir, int hq, int hkv,
                          const char *kv_files);

/* A random tensor of shape [s0, s1, s2, s3] in the storage of dt, from
 * *seed (uniform in [-1, 1), rounded to f16 for CLATTN_F16; for
 * CLATTN_I8 the integers -127 .. 127 of an int8 cache, '|i1'). */
int cli_attn_random(unsigned long long *seed, npy_array *a, clattn_dtype dt,
                    int s0, int s1, int s2, int s3);

/* Between [B, S, H, D] and [B, H, S, D] (shape is the BSHD shape): to_bhsd
 * selects the direction; rows of D elements of es bytes. */
void *cli_attn_transpose(const void *src, const size_t *shape, size_t es,
                         int to_bhsd);

/* Float view of a tensor: its data for f32, a converted copy in *copy for
 * f16 and int8 (the integers; the caller frees *copy). */
const float *cli_attn_as_float(const npy_array *a, float **copy);

/* --check: out (n elements in dt's storage) against the reference ref. */
int cli_attn_compare(const char *what, clattn_dtype dt, const void *out,
                     const float *ref, size_t n);

/* The attention options of a run (clattn.h, "Attention options"):
 * --window and --softcap as given (0: none), the --alibi slopes and --sinks
 * read from their files (data NULL when not given). */
typedef struct cli_attn_opts {
  int window;
  float softcap;
  npy_array alibi, sinks;
} cli_attn_opts;

/* Read --alibi and --sinks for a call of `heads` query heads: each
 * float32 [heads], else CLI_USAGE with a message naming the option, the
 * file and what is wrong.  Their values are the library's to check. */
int cli_attn_opts_load(const cli_opts *o, int heads, cli_attn_opts *ao);
void cli_attn_opts_free(cli_attn_opts *ao);
/* The reference's form of the options. */
ref_opts cli_attn_opts_ref(const cli_attn_opts *ao);
/* " window=W softcap=C alibi sinks" (those set) for the timing line. */
void cli_attn_opts_text(const cli_attn_opts *ao, char *buf, size_t cap);

/* One kernel call of a run, enqueued on the context's queue. */
typedef clattn_status (*cli_attn_call)(clattn_ctx *ctx, const void *user);

/* Run call o->repeat times, each finished and timed, then print the
 * timing line "clattn: WHAT on DEVICE: ..." (with --verbose the rate of
 * `flops`); a failure is printed (named `api`) and returned as cli_lib_fail
 * does. */
int cli_attn_timed(clattn_ctx *ctx, const cli_opts *o, const char *api,
                   cli_attn_call call, const void *user, const char *what,
                   double flops);

/* Read bytes of device buffer buf into a new allocation *out. */
int cli_attn_read(clattn_ctx *ctx, cl_mem buf, size_t bytes, void **out);

/* The start of a run once its tensors are read or made: the attention
 * options for `heads` query heads (cli_attn_opts_load) and the context of
 * --device: CLI_OK, the options' error, or CLI_FAIL. */
int cli_attn_start(const cli_opts *o, int heads, cli_attn_opts *ao,
                   clattn_ctx **ctx);

/* The output of a run: bytes of buf read into *out (cli_attn_read) and,
 * with --out, saved as an .npy of dtype dt and shape[0 .. ndim-1]:
 * CLI_OK, else CLI_FAIL. */
int cli_attn_output(clattn_ctx *ctx, const cli_opts *o, cl_mem buf,
                    size_t bytes, npy_dtype dt, int ndim, const size_t *shape,
                    void **out);

#endif
