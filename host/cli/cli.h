/* cli.h - shared declarations of the clattn command-line tool. */
#ifndef CLATTN_CLI_H
#define CLATTN_CLI_H

#include "base/clock.h"
#include "clattn_tools.h"
#include "npy.h"

#include <signal.h>
#include <stdio.h>

/* Exit statuses (docs/CLI.md). */
enum {
  CLI_OK = 0,
  CLI_FAIL = 1,         /* run-time failure: device, file, database */
  CLI_USAGE = 2,        /* bad command line, shape or input file */
  CLI_CHECK = 3,        /* --check: error above the tolerance */
  CLI_INTERRUPTED = 130 /* SIGINT stopped tune or bench: 128 + 2 */
};

typedef struct cli_opts {
  const char *in, *out, *device, *save_inputs;
  const char *db; /* probe: database path (NULL: default) */
  int json, thorough, quick, no_store; /* probe */
  int list;                            /* devices --list */
  int causal, check, random, verbose;
  int layout; /* CLATTN_BSHD / CLATTN_BHSD, device layout (attention) */
  int dtype;  /* CLATTN_F32 / CLATTN_F16 (attention --random) */
  float scale;
  int batch, seq, kv_seq, heads, kv_heads, head_dim, head_dim_v, d_model;
  int heads_k, heads_v; /* run talking-heads: key and value heads */
  int max_len;          /* run super --random: W_a's size (0: --seq) */
  int experts, topk;    /* run switchhead: experts a head (--random), top-k */
  int decode_from;      /* -1: none */
  /* run attention and run decode: the attention options (clattn.h), 0 or
   * NULL for none; alibi and sinks are the paths of their .npy files */
  int window;
  float softcap;
  const char *alibi, *sinks;
  /* run decode --paged and run attention --varlen (run_paged.c,
   * run_varlen.c): with --random the page size, the cache's storage (0:
   * the tensors' dtype, else CLATTN_I8), the new queries a sequence and the
   * sequences' lengths ("L1,L2,...", NULL: drawn) */
  int paged, varlen;
  int page_size, cache_dtype, new_rows;
  const char *kv_lens;
  int repeat;
  unsigned long long seed;
} cli_opts;

/* Commands. */
/* `clattn families`: the registry, a line each. */
int cli_families(void);
/* `clattn layers`: the registry of layer kinds, a line each. */
int cli_layers(void);
int cli_devices(int verbose);
/* `clattn devices --list`: a line per device,
 * "P:D<TAB>CPU|GPU|ACCEL|OTHER<TAB>platform<TAB>name". */
int cli_devices_list(void);
int cli_run_attention(const cli_opts *o);
/* `clattn run decode` (run_decode.c). */
int cli_run_decode(const cli_opts *o);
/* `clattn run decode --paged` (run_paged.c). */
int cli_run_paged(const cli_opts *o);
/* `clattn run attention --varlen` (run_varlen.c). */
int cli_run_varlen(const cli_opts *o);
int cli_run_gqa(const cli_opts *o);
int cli_run_th(const cli_opts *o);
/* `clattn run optimised|efficient|super` (run_hh.c). */
int cli_run_hh(const cli_opts *o, clattn_hh_variant v);
/* `clattn run switchhead` (run_sh.c). */
int cli_run_sh(const cli_opts *o);
int cli_model(int argc, char **argv);
int cli_probe(const cli_opts *o);
int cli_tune(int argc, char **argv);
int cli_explain(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_db(int argc, char **argv);
/* `clattn report DB ...` (report.c). */
int cli_report(int argc, char **argv);

/* clattn_probe's options for `clattn probe [--quick] [--thorough]` (quick:
 * a smoke run whose figures are not stored). */
void cli_probe_opts(int quick, int thorough, clattn_probe_opts *po);

/* Name of an OpenCL error code ("CL_INVALID_VALUE"). */

/* --- helpers (common.c) --- */

/* Print "clattn: <fmt>\n" on stderr. */
/* SIGINT sets cli_stop, once: the handler resets itself (SA_RESETHAND), so
 * a second Ctrl-C ends the process.  tune and bench poll cli_stop between
 * candidates or shapes; cli_catch_sigint clears it and keeps the old action
 * in *old for sigaction(SIGINT, old, NULL). */
extern volatile sig_atomic_t cli_stop;
void cli_catch_sigint(struct sigaction *old);

void cli_err(const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Read dir/name.npy (dir may be NULL: name is the path).  On failure prints
 * "clattn: PATH: problem" and returns CLI_USAGE (missing or malformed input)
 * or CLI_FAIL (out of memory).  `optional`: a missing file is not an error
 * (returns CLI_OK with a->data == NULL). */
int cli_load(const char *dir, const char *name, int optional, npy_array *a);
/* Write an array; prints and returns CLI_FAIL on error. */
int cli_save(const char *dir, const char *name, npy_dtype dt, int ndim,
             const size_t *shape, const void *data);
/* Create a directory if it does not exist (for --save-inputs), in a
 * directory that exists; prints and returns CLI_FAIL otherwise. */
int cli_mkdir(const char *dir);

/* s as a JSON string on stdout (cli_json_text). */
void cli_json_str(const char *s);

/* --- text out (text.c): every string the command did not write itself
 * (a database's, a driver's, a path) reaches an output through these --- */

/* s to f as valid UTF-8: a byte that starts no character becomes U+FFFD
 * and a control character (C0, DEL, C1: ESC among them) U+FFFD too, or
 * with json a \u escape (\ufffd for the bytes); printable ASCII goes
 * through ascii (NULL: as is), which escapes it for the format. */
void cli_put_text(FILE *f, const char *s, void (*ascii)(FILE *f, int c),
                  int json);
/* s as a JSON string: quotes and backslashes escaped, the rest as
 * cli_put_text writes it. */
void cli_json_text(FILE *f, const char *s);
/* s cleaned as cli_put_text does into dst (cap bytes, whole characters,
 * NUL-terminated); returns the characters written (a terminal column
 * each, for aligning tables). */
size_t cli_clean_text(char *dst, size_t cap, const char *s);

/* Print a library failure (status text and context message): CLI_USAGE
 * for CLATTN_ERR_SHAPE and CLATTN_ERR_INVALID_ARG (input the library's
 * checks refuse), else CLI_FAIL. */
int cli_lib_fail(clattn_ctx *ctx, const char *what, clattn_status st);

/* clattn_ctx_create on a device selector (NULL: $CLATTN_DEVICE or the
 * first device); prints the failure and returns CLI_FAIL (whatever the
 * status: a device or environment problem). */
int cli_ctx_create(const char *device, clattn_ctx **ctx);
/* The same with the tuning database whose rows pick the calls' parameters
 * (NULL: the default, as cli_ctx_create). */
int cli_ctx_create_db(const char *device, const char *tuning_db,
                      clattn_ctx **ctx);

/* Random floats in [-amp, amp) from a splitmix64 state. */
void cli_random_fill(unsigned long long *state, float *x, size_t n, float amp);

/* Convert in place-compatible: f32 -> f16 bits and back (round to nearest
 * even), via the reference helpers. */
void cli_to_f16(const float *x, uint16_t *h, size_t n);
void cli_from_f16(const uint16_t *h, float *x, size_t n);

/* Compare got with ref; print errors; CLI_OK or CLI_CHECK over tol. */
int cli_compare(const char *what, const float *got, const float *ref, size_t n,
                double tol);

/* "f32", "f16" or "bf16". */
const char *cli_dtype_name(clattn_dtype dt);

/* The Hosseini & Hosseini variant a word names ("optimised", "efficient",
 * "super"), 0 for none; and a variant's word. */
int cli_hh_variant(const char *word);
const char *cli_hh_word(clattn_hh_variant v);

/* A read-only buffer initialised from host memory, or a write-only one when
 * host == NULL; prints the CL error and returns NULL on failure. */
cl_mem cli_buffer(cl_context c, size_t bytes, const void *host);
/* The references' scale: --scale, or 1/sqrt(dk) when not given. */
double cli_ref_scale(const cli_opts *o, int dk);

/* Release the buffers m[0 .. n-1] that are not NULL. */
void cli_buffers_release(cl_mem *m, int n);

/* malloc of n * size with overflow check; prints on failure. */
void *cli_alloc(size_t n, size_t size);

/* --- the layer run commands (common.c) --- */

/* DIR/name.npy for command `cmd`: float32, rank min_ndim .. max_ndim,
 * every dimension 1 .. 2^30; prints and returns CLI_USAGE when not
 * (CLI_FAIL when out of memory). */
int cli_load_f32(const char *dir, const char *name, const char *cmd,
                 int min_ndim, int max_ndim, npy_array *a);

/* "clattn: DIR/name.npy: shape [..]: why" on stderr; CLI_USAGE. */
int cli_bad_shape(const char *dir, const char *name, const npy_array *a,
                  const char *why);

/* A float32 tensor of `shape`, uniform in [-amp, amp) from *seed, also
 * written to save_dir/name.npy when save_dir is not NULL. */
int cli_random_tensor(unsigned long long *seed, int ndim, const size_t *shape,
                      float amp, const char *save_dir, const char *name,
                      npy_array *a);

/* Tensor 0 is x [b, n, d] with amplitude 1, tensor i > 0 a weight of
 * rows[i] x cols[i] scaled by 1/sqrt(rows[i]) so that activations stay
 * near unit size; all nt drawn from o->seed (cli_random_tensor). */
int cli_random_layer_tensors(const cli_opts *o, int b, int n, int d, int nt,
                             const char *const *names, const size_t *rows,
                             const size_t *cols, npy_array *t);

/* Checks --decode-from against the n positions of x, creates *ctx and
 * uploads the weights t[1..nt-1] into w[1..nt-1]; the caller releases
 * *ctx and w whatever this returns. */
int cli_layer_setup(const cli_opts *o, int n, int nt, const npy_array *t,
                    clattn_ctx **ctx, cl_mem *w);

/* A layer run: the layer, its input x (shape [b, n, d], or [n, d] with
 * b = 1), the mask, and decode_from P >= 0 for a prefill of P positions
 * into a KV cache then one decode step per remaining position (-1: one
 * prefill); `what` heads the timing line. */
typedef struct cli_layer_job {
  clattn_layer *layer;
  const npy_array *x;
  int b, n, d;
  int causal;
  int decode_from;
  const char *what;
} cli_layer_job;

/* Run the job o->repeat times, print the timings, write --out (x's shape)
 * and return y [b*n*d] of the last repetition in *y (the caller frees). */
int cli_layer_forward(clattn_ctx *ctx, const cli_layer_job *j,
                      const cli_opts *o, float **y);

/* What a layer run holds at its end, released: the layer, the nt weight
 * buffers w and tensors t (either may hold NULLs), then the context. */
void cli_layer_release(clattn_ctx *ctx, clattn_layer *layer, int nt, cl_mem *w,
                       npy_array *t);

#endif
