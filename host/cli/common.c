/* common.c - small helpers shared by the clattn commands. */
#include "cli.h"
#include "model.h"
#include "reference/ref.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

volatile sig_atomic_t cli_stop;

static void on_sigint(int sig) {
  (void)sig;
  cli_stop = 1;
}

void cli_catch_sigint(struct sigaction *old) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sa.sa_flags = SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  cli_stop = 0;
  sigaction(SIGINT, &sa, old);
}

void cli_err(const char *fmt, ...) {
  va_list ap;
  fputs("clattn: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

/* dir + "/" + name + ".npy", or name itself when dir is NULL. */
static char *join(const char *dir, const char *name) {
  size_t n = (dir ? strlen(dir) + 1 : 0) + strlen(name) + 5;
  char *p = malloc(n);
  if (!p)
    return NULL;
  if (dir)
    snprintf(p, n, "%s/%s.npy", dir, name);
  else
    snprintf(p, n, "%s", name);
  return p;
}

int cli_load(const char *dir, const char *name, int optional, npy_array *a) {
  char err[256];
  char *path = join(dir, name);
  memset(a, 0, sizeof *a);
  if (!path) {
    cli_err("out of memory");
    return CLI_FAIL;
  }
  int rc = CLI_OK;
  if (optional && access(path, F_OK) != 0 && errno == ENOENT) {
    free(path);
    return CLI_OK;
  }
  if (npy_read(path, a, err, sizeof err)) {
    cli_err("%s: %s", path, err);
    rc = strstr(err, "out of memory") ? CLI_FAIL : CLI_USAGE;
  }
  free(path);
  return rc;
}

int cli_save(const char *dir, const char *name, npy_dtype dt, int ndim,
             const size_t *shape, const void *data) {
  char err[512];
  char *path = join(dir, name);
  if (!path) {
    cli_err("out of memory");
    return CLI_FAIL;
  }
  int rc = CLI_OK;
  if (npy_write(path, dt, ndim, shape, data, err, sizeof err)) {
    cli_err("%s: %s", path, err);
    rc = CLI_FAIL;
  }
  free(path);
  return rc;
}

/* dir itself, if missing, in a directory that exists: a mistyped path
 * makes no tree of directories. */
int cli_mkdir(const char *dir) {
  struct stat st;
  if (mkdir(dir, 0777) == 0)
    return CLI_OK;
  const int err = errno;
  if (err == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
    return CLI_OK;
  cli_err("%s: cannot create directory: %s", dir,
          err == ENOENT ? "its parent directory does not exist"
                        : strerror(err));
  return CLI_FAIL;
}

int cli_lib_fail(clattn_ctx *ctx, const char *what, clattn_status st) {
  /* with ctx NULL (clattn_ctx_create failed) this is the creation error */
  const char *msg = clattn_ctx_errmsg(ctx);
  if (msg && *msg)
    cli_err("%s: %s: %s", what, clattn_status_str(st), msg);
  else
    cli_err("%s: %s", what, clattn_status_str(st));
  /* a shape or description the library's checks refuse is bad input */
  return st == CLATTN_ERR_SHAPE || st == CLATTN_ERR_INVALID_ARG ? CLI_USAGE
                                                                : CLI_FAIL;
}

int cli_ctx_create(const char *device, clattn_ctx **ctx) {
  return cli_ctx_create_db(device, NULL, ctx);
}

int cli_ctx_create_db(const char *device, const char *tuning_db,
                      clattn_ctx **ctx) {
  clattn_ctx_opts co = {.size = sizeof(clattn_ctx_opts),
                        .device = device,
                        .tuning_db = tuning_db};
  clattn_status st = clattn_ctx_create(&co, ctx);
  if (st == CLATTN_OK)
    return CLI_OK;
  /* the device or the environment ($CLATTN_PARAMS): a run-time failure */
  cli_lib_fail(*ctx, "clattn_ctx_create", st);
  return CLI_FAIL;
}

void cli_random_fill(unsigned long long *state, float *x, size_t n, float amp) {
  for (size_t i = 0; i < n; i++) {
    /* splitmix64 */
    unsigned long long z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    /* 24 random bits -> [0, 1) exactly representable in float */
    float u = (float)(z >> 40) * (1.0f / 16777216.0f);
    x[i] = (2.0f * u - 1.0f) * amp;
  }
}

void cli_to_f16(const float *x, uint16_t *h, size_t n) {
  for (size_t i = 0; i < n; i++)
    h[i] = ref_f32_to_f16(x[i]);
}

void cli_from_f16(const uint16_t *h, float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    x[i] = ref_f16_to_f32(h[i]);
}

int cli_compare(const char *what, const float *got, const float *ref, size_t n,
                double tol) {
  /* non-finite where the reference is (clattn.h: NaN propagates), finite
   * within the tolerance elsewhere */
  double max_abs = 0, max_ref = 0;
  size_t worst = 0, bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(ref[i]) || !isfinite(got[i])) {
      if (!isfinite(ref[i]) != !isfinite(got[i]) && !bad++)
        worst = i;
      continue;
    }
    if (fabs((double)ref[i]) > max_ref)
      max_ref = fabs((double)ref[i]);
    double d = fabs((double)got[i] - (double)ref[i]);
    if (d > max_abs) {
      max_abs = d;
      if (!bad) /* the first mismatch stays the reported element */
        worst = i;
    }
  }
  double rel = max_ref > 0 ? max_abs / max_ref : max_abs;
  int pass = bad == 0 && rel <= tol;
  printf("check %s: max abs err %.3e, max rel err %.3e (tol %.1e), "
         "max |ref| %.3e, worst at %zu (got %g, ref %g), %zu non-finite "
         "mismatches: %s\n",
         what, max_abs, rel, tol, max_ref, worst, n ? got[worst] : 0.0,
         n ? ref[worst] : 0.0, bad, pass ? "PASS" : "FAIL");
  return pass ? CLI_OK : CLI_CHECK;
}

cl_mem cli_buffer(cl_context c, size_t bytes, const void *host) {
  cl_int err;
  if (!bytes) /* zero-sized buffers are invalid: allocate 4 unused bytes */
    host = NULL;
  cl_mem_flags fl =
      host ? CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR : CL_MEM_READ_WRITE;
  cl_mem m = clCreateBuffer(c, fl, bytes ? bytes : 4, (void *)host, &err);
  if (!m || err != CL_SUCCESS) {
    cli_err("clCreateBuffer(%zu bytes): %s", bytes, clattn_cl_errstr(err));
    return NULL;
  }
  return m;
}

double cli_ref_scale(const cli_opts *o, int dk) {
  return o->scale > 0 ? o->scale : 1.0 / sqrt((double)dk);
}

void cli_buffers_release(cl_mem *m, int n) {
  for (int i = 0; i < n; i++)
    if (m[i])
      clReleaseMemObject(m[i]);
}

void *cli_alloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) {
    cli_err("allocation of %zu x %zu bytes overflows", n, size);
    return NULL;
  }
  size_t bytes = n * size;
  void *p = malloc(bytes > 0 ? bytes : 1);
  if (!p)
    cli_err("out of memory (%zu bytes)", n * size);
  return p;
}

const char *cli_dtype_name(clattn_dtype dt) {
  return dt == CLATTN_F16 ? "f16" : dt == CLATTN_BF16 ? "bf16" : "f32";
}

static const char *const hh_words[] = {
    [CLATTN_HH_OPTIMISED] = "optimised",
    [CLATTN_HH_EFFICIENT] = "efficient",
    [CLATTN_HH_SUPER] = "super",
};

int cli_hh_variant(const char *word) {
  for (int v = CLATTN_HH_OPTIMISED; word && v <= CLATTN_HH_SUPER; v++)
    if (!strcmp(word, hh_words[v]))
      return v;
  return 0;
}

const char *cli_hh_word(clattn_hh_variant v) {
  return v >= CLATTN_HH_OPTIMISED && v <= CLATTN_HH_SUPER ? hh_words[v] : "?";
}

int cli_family(const char *word) {
  if (word && !strcmp(word, "attention"))
    word = "prefill"; /* the public call's name, kept as the CLI's word */
  return word ? clattn_family_find(word) : -1; /* former names too */
}

/* Whether key is one of the blank-separated words of keys. */
int cli_has_word(const char *keys, const char *key) {
  const size_t n = strlen(key);
  for (const char *s = keys; s && *s;) {
    while (*s == ' ')
      s++;
    const char *e = s;
    while (*e && *e != ' ')
      e++;
    if ((size_t)(e - s) == n && !strncmp(s, key, n))
      return 1;
    s = e;
  }
  return 0;
}

int cli_shape_text(model_opts *o, int fam, char *buf, size_t cap) {
  const char *keys = clattn_family_shape_keys(fam);
  /* a family without attention heads (the projection's m n k) takes its
   * own keys alone; one whose own keys carry its heads (talking-heads'
   * --heads-k) may leave --heads out, and the library's own defaults and
   * checks apply to the sizes not given */
  const int own_heads = !o->heads && o->shape_extra[0] != '\0';
  int rc = cli_has_word(keys, "heads") && !own_heads
               ? cli_shape_defaults(o, cli_has_word(keys, "seq"))
               : 0;
  if (rc)
    return rc;
  if (own_heads && !o->batch)
    o->batch = 1;
  const struct {
    const char *key;
    int value;
  } f[] = {{"batch", o->batch},           {"seq", o->seq},
           {"kv-seq", o->kv_seq},         {"heads", o->heads},
           {"kv-heads", o->kv_heads},     {"head-dim", o->head_dim},
           {"head-dim-v", o->head_dim_v}, {"causal", o->causal != 0}};
  int n = snprintf(buf, cap, "dtype=%s", cli_dtype_name(o->dtype));
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (cli_has_word(keys, f[i].key) && n > 0 && (size_t)n < cap &&
        !(own_heads && f[i].value == 0 && strcmp(f[i].key, "causal")))
      n += snprintf(buf + n, cap - (size_t)n, " %s=%d", f[i].key, f[i].value);
  /* the family's own keys given as flags, after the common ones */
  for (const char *w = o->shape_extra; *w;) {
    const size_t len = strcspn(w, " "), klen = strcspn(w, "=");
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)(klen < 63 ? klen : 63), w);
    if (!cli_has_word(keys, key)) {
      cli_err("unknown option '--%s' for family %s (its keys: %s)", key,
              clattn_family_name(fam), keys);
      return CLI_USAGE;
    }
    if (n > 0 && (size_t)n < cap)
      n += snprintf(buf + n, cap - (size_t)n, " %.*s", (int)len, w);
    w += len + (w[len] == ' ');
  }
  if (n < 0 || (size_t)n >= cap) {
    cli_err("the shape is too long");
    return CLI_USAGE;
  }
  return 0;
}

int cli_shape_flags_given(const model_opts *o) {
  return o->heads || o->head_dim || o->seq || o->kv_seq || o->batch ||
         o->kv_heads || o->head_dim_v || o->causal || o->dtype != CLATTN_F32 ||
         o->shape_extra[0];
}

int cli_shape_arg(const char *name, model_opts *o, int fam, const cli_args *a,
                  char *buf, size_t cap) {
  const int flags = cli_shape_flags_given(o);
  buf[0] = '\0';
  if (a->n_operands > 0 && flags)
    return cli_usage_error(name, "give the shape as text or as flags, not "
                                 "both");
  if (a->n_operands > 0) {
    if (strlen(a->operand[0]) >= cap)
      return cli_usage_error(name, "the shape is too long");
    snprintf(buf, cap, "%s", a->operand[0]);
    return 0;
  }
  return flags ? cli_shape_text(o, fam, buf, cap) : 0;
}

/* ------------------------------------------------ the layer run commands */

int cli_load_f32(const char *dir, const char *name, const char *cmd,
                 int min_ndim, int max_ndim, npy_array *a) {
  char s[96];
  int rc = cli_load(dir, name, 0, a);
  if (rc)
    return rc;
  if (a->dtype != NPY_F32) {
    cli_err("%s/%s.npy: dtype '%s' is not supported (%s takes '<f4')", dir,
            name, npy_dtype_descr(a->dtype), cmd);
    return CLI_USAGE;
  }
  const char *why = NULL;
  if (a->ndim < min_ndim || a->ndim > max_ndim)
    why = "wrong rank";
  for (int k = 0; !why && k < a->ndim; k++)
    if (a->shape[k] < 1 || a->shape[k] > 1u << 30)
      why = "dimension out of range";
  if (why) {
    if (min_ndim == max_ndim)
      cli_err("%s/%s.npy: shape %s: %s (expected rank %d)", dir, name,
              npy_shape_str(a->ndim, a->shape, s, sizeof s), why, min_ndim);
    else
      cli_err("%s/%s.npy: shape %s: %s (expected rank %d to %d)", dir, name,
              npy_shape_str(a->ndim, a->shape, s, sizeof s), why, min_ndim,
              max_ndim);
    return CLI_USAGE;
  }
  return CLI_OK;
}

int cli_bad_shape(const char *dir, const char *name, const npy_array *a,
                  const char *why) {
  char s[96];
  cli_err("%s/%s.npy: shape %s: %s", dir, name,
          npy_shape_str(a->ndim, a->shape, s, sizeof s), why);
  return CLI_USAGE;
}

int cli_random_tensor(unsigned long long *seed, int ndim, const size_t *shape,
                      float amp, const char *save_dir, const char *name,
                      npy_array *a) {
  memset(a, 0, sizeof *a);
  a->dtype = NPY_F32;
  a->ndim = ndim;
  a->count = 1;
  for (int k = 0; k < ndim; k++) {
    a->shape[k] = shape[k];
    a->count *= shape[k];
  }
  a->data = cli_alloc(a->count, sizeof(float));
  if (!a->data)
    return CLI_FAIL;
  cli_random_fill(seed, a->data, a->count, amp);
  if (save_dir && (cli_mkdir(save_dir) ||
                   cli_save(save_dir, name, NPY_F32, ndim, shape, a->data)))
    return CLI_FAIL;
  return CLI_OK;
}

int cli_random_layer_tensors(const cli_opts *o, int b, int n, int d, int nt,
                             const char *const *names, const size_t *rows,
                             const size_t *cols, npy_array *t) {
  unsigned long long seed = o->seed;
  const size_t x[3] = {(size_t)b, (size_t)n, (size_t)d};
  for (int i = 0; i < nt; i++) {
    const size_t w[2] = {rows[i], cols[i]};
    int rc = cli_random_tensor(&seed, i == 0 ? 3 : 2, i == 0 ? x : w,
                               i == 0 ? 1.0f : 1.0f / sqrtf((float)rows[i]),
                               o->save_inputs, names[i], &t[i]);
    if (rc)
      return rc;
  }
  return CLI_OK;
}

int cli_layer_setup(const cli_opts *o, int n, int nt, const npy_array *t,
                    clattn_ctx **ctx, cl_mem *w) {
  if (o->decode_from > n) {
    cli_err("--decode-from %d exceeds the %d positions of x", o->decode_from,
            n);
    return CLI_USAGE;
  }
  if (cli_ctx_create(o->device, ctx))
    return CLI_FAIL;
  cl_context c = clattn_ctx_cl_context(*ctx);
  for (int i = 1; i < nt; i++)
    if (!(w[i] = cli_buffer(c, t[i].count * 4, t[i].data)))
      return CLI_FAIL;
  return CLI_OK;
}

/* Copy rows [b][p0 .. p0+np) of a [b, src_n, d] float buffer into rows
 * [b][q0 ..) of a [b, dst_n, d] buffer. */
static int copy_rows(cl_command_queue q, cl_mem src, int src_n, int p0,
                     cl_mem dst, int dst_n, int q0, int np, int b, int d) {
  size_t row = (size_t)d * sizeof(float);
  size_t so[3] = {(size_t)p0 * row, 0, 0}, dor[3] = {(size_t)q0 * row, 0, 0};
  size_t region[3] = {(size_t)np * row, (size_t)b, 1};
  cl_int err =
      clEnqueueCopyBufferRect(q, src, dst, so, dor, region, (size_t)src_n * row,
                              0, (size_t)dst_n * row, 0, 0, NULL, NULL);
  if (err != CL_SUCCESS)
    cli_err("clEnqueueCopyBufferRect: %s", clattn_cl_errstr(err));
  return err == CL_SUCCESS ? 0 : -1;
}

static int finish(cl_command_queue q) {
  cl_int err = clFinish(q);
  if (err != CL_SUCCESS)
    cli_err("clFinish: %s", clattn_cl_errstr(err));
  return err == CL_SUCCESS ? 0 : -1;
}

/* One repetition: a prefill of all n positions, or of the first P into the
 * cache and one decode step per remaining position; *tp and *td get the
 * prefill and decode times. */
static int forward_once(clattn_ctx *ctx, const cli_layer_job *j,
                        clattn_kv_cache *cache, cl_mem bx, cl_mem by,
                        cl_mem const stage[4], double *tp, double *td) {
  cl_command_queue q = clattn_ctx_queue(ctx);
  const int P = j->decode_from;
  clattn_status st;
  double t0 = clattn__now();
  if (P < 0) {
    st = clattn_layer_prefill(j->layer, NULL, j->b, j->n, j->causal, bx, by,
                              NULL);
    if (st)
      return cli_lib_fail(ctx, "clattn_layer_prefill", st);
    if (finish(q))
      return CLI_FAIL;
    *tp = clattn__now() - t0;
    return CLI_OK;
  }
  /* stage: prefill x and y of the first P positions, one step's x, y */
  clattn_kv_cache_reset(cache);
  if (P > 0) {
    st = clattn_layer_prefill(j->layer, cache, j->b, P, 1, stage[0], stage[1],
                              NULL);
    if (st)
      return cli_lib_fail(ctx, "clattn_layer_prefill", st);
    if (copy_rows(q, stage[1], P, 0, by, j->n, 0, P, j->b, j->d) || finish(q))
      return CLI_FAIL;
  }
  double t1 = clattn__now();
  for (int p = P; p < j->n; p++) {
    /* x[:, p, :] -> [b, d] and the step's y back into y[:, p, :] */
    if (copy_rows(q, bx, j->n, p, stage[2], 1, 0, 1, j->b, j->d))
      return CLI_FAIL;
    st = clattn_layer_decode(j->layer, cache, stage[2], stage[3], NULL);
    if (st)
      return cli_lib_fail(ctx, "clattn_layer_decode", st);
    if (copy_rows(q, stage[3], 1, 0, by, j->n, p, 1, j->b, j->d))
      return CLI_FAIL;
  }
  if (finish(q))
    return CLI_FAIL;
  *tp = t1 - t0;
  *td = clattn__now() - t1;
  return CLI_OK;
}

int cli_layer_forward(clattn_ctx *ctx, const cli_layer_job *j,
                      const cli_opts *o, float **y_out) {
  cl_context c = clattn_ctx_cl_context(ctx);
  cl_command_queue q = clattn_ctx_queue(ctx);
  const int P = j->decode_from;
  const size_t ny = (size_t)j->b * j->n * j->d, bd = (size_t)j->b * j->d;
  clattn_kv_cache *cache = NULL;
  cl_mem bx = NULL, by = NULL, stage[4] = {NULL, NULL, NULL, NULL};
  float *y = NULL;
  int rc = CLI_FAIL;
  clattn_status st;

  *y_out = NULL;
  bx = cli_buffer(c, ny * 4, j->x->data);
  by = bx ? cli_buffer(c, ny * 4, NULL) : NULL;
  if (!by)
    goto done;
  if (P >= 0) {
    st = clattn_kv_cache_create(j->layer, j->b, j->n, &cache);
    if (st) {
      cli_lib_fail(ctx, "clattn_kv_cache_create", st);
      goto done;
    }
    for (int i = 0; i < 4; i++) {
      const size_t rows = i < 2 ? (size_t)(P > 0 ? P : 1) : 1;
      if (!(stage[i] = cli_buffer(c, bd * rows * 4, NULL)))
        goto done;
    }
    if (P > 0 && copy_rows(q, bx, j->n, 0, stage[0], P, 0, P, j->b, j->d))
      goto done;
  }
  if (finish(q))
    goto done;

  double tp = 0, td = 0; /* prefill / decode time of the last repetition */
  for (int r = 0; r < o->repeat; r++)
    if (forward_once(ctx, j, cache, bx, by, stage, &tp, &td))
      goto done;
  fprintf(stderr, "clattn: %s: ", j->what);
  if (P < 0)
    fprintf(stderr, "prefill %.3f ms", tp * 1e3);
  else
    fprintf(stderr,
            "prefill %d: %.3f ms, decode %d steps: %.3f ms "
            "(%.3f ms/step)",
            P, tp * 1e3, j->n - P, td * 1e3,
            j->n > P ? td * 1e3 / (j->n - P) : 0.0);
  fprintf(stderr, "%s\n", o->repeat > 1 ? " (last repetition)" : "");
  if (P >= 0 && o->verbose)
    fprintf(stderr, "clattn: kv cache length %d\n", clattn_kv_cache_len(cache));

  if (!(y = cli_alloc(ny, sizeof *y)))
    goto done;
  cl_int err = clEnqueueReadBuffer(q, by, CL_TRUE, 0, ny * 4, y, 0, NULL, NULL);
  if (err != CL_SUCCESS) {
    cli_err("clEnqueueReadBuffer: %s", clattn_cl_errstr(err));
    goto done;
  }
  if (o->out && cli_save(NULL, o->out, NPY_F32, j->x->ndim, j->x->shape, y))
    goto done;
  *y_out = y;
  y = NULL;
  rc = CLI_OK;

done:
  free(y);
  clattn_kv_cache_destroy(cache);
  cl_mem m[6] = {bx, by, stage[0], stage[1], stage[2], stage[3]};
  cli_buffers_release(m, 6);
  return rc;
}

void cli_layer_release(clattn_ctx *ctx, clattn_layer *layer, int nt, cl_mem *w,
                       npy_array *t) {
  /* the layer retains its weights: release in any order, the context
   * last */
  clattn_layer_destroy(layer);
  for (int i = 0; i < nt; i++) {
    if (w[i])
      clReleaseMemObject(w[i]);
    npy_free(&t[i]);
  }
  clattn_ctx_destroy(ctx);
}

void cli_json_str(const char *s) { cli_json_text(stdout, s); }
