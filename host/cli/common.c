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

void cli_err(const char *fmt, ...)
{
  va_list ap;
  fputs("clattn: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

/* dir + "/" + name + ".npy", or name itself when dir is NULL. */
static char *join(const char *dir, const char *name)
{
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

int cli_load(const char *dir, const char *name, int optional, npy_array *a)
{
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
             const size_t *shape, const void *data)
{
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

/* mkdir -p: create each missing component of dir. */
int cli_mkdir(const char *dir)
{
  char *p = strdup(dir);
  int rc = CLI_OK;
  if (!p) {
    cli_err("out of memory");
    return CLI_FAIL;
  }
  for (char *s = p + 1;; s++) {
    if (*s != '/' && *s != '\0')
      continue;
    char c = *s;
    *s = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST) {
      cli_err("%s: cannot create directory: %s", p, strerror(errno));
      rc = CLI_FAIL;
      break;
    }
    *s = c;
    if (c == '\0')
      break;
  }
  free(p);
  return rc;
}

int cli_lib_fail(clattn_ctx *ctx, const char *what, clattn_status st)
{
  /* with ctx NULL (clattn_ctx_create failed) this is the creation error */
  const char *msg = clattn_ctx_errmsg(ctx);
  if (msg && *msg)
    cli_err("%s: %s: %s", what, clattn_status_str(st), msg);
  else
    cli_err("%s: %s", what, clattn_status_str(st));
  return CLI_FAIL;
}

int cli_ctx_create(const char *device, clattn_ctx **ctx)
{
  clattn_ctx_opts co = {.device = device};
  clattn_status st = clattn_ctx_create(&co, ctx);
  if (st == CLATTN_OK)
    return CLI_OK;
  return cli_lib_fail(*ctx, "clattn_ctx_create", st);
}

void cli_random_fill(unsigned long long *state, float *x, size_t n, float amp)
{
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

void cli_to_f16(const float *x, uint16_t *h, size_t n)
{
  for (size_t i = 0; i < n; i++)
    h[i] = ref_f32_to_f16(x[i]);
}

void cli_from_f16(const uint16_t *h, float *x, size_t n)
{
  for (size_t i = 0; i < n; i++)
    x[i] = ref_f16_to_f32(h[i]);
}

int cli_compare(const char *what, const float *got, const float *ref,
                size_t n, double tol)
{
  double max_abs = 0, max_ref = 0;
  size_t worst = 0, bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (fabs((double)ref[i]) > max_ref)
      max_ref = fabs((double)ref[i]);
    double d = fabs((double)got[i] - (double)ref[i]);
    if (isnan(d)) { /* NaN in got or ref: always a failure */
      if (!bad++)
        worst = i;
      continue;
    }
    if (d > max_abs) {
      max_abs = d;
      if (!bad) /* the first NaN stays the reported element */
        worst = i;
    }
  }
  double rel = max_ref > 0 ? max_abs / max_ref : max_abs;
  int pass = bad == 0 && rel <= tol;
  printf("check %s: max abs err %.3e, max rel err %.3e (tol %.1e), "
         "max |ref| %.3e, worst at %zu (got %g, ref %g), %zu NaN: %s\n",
         what, max_abs, rel, tol, max_ref, worst, n ? got[worst] : 0.0,
         n ? ref[worst] : 0.0, bad, pass ? "PASS" : "FAIL");
  return pass ? CLI_OK : CLI_CHECK;
}

cl_mem cli_buffer(cl_context c, size_t bytes, const void *host)
{
  cl_int err;
  if (!bytes) /* zero-sized buffers are invalid: allocate 4 unused bytes */
    host = NULL;
  cl_mem_flags fl = host ? CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR
                         : CL_MEM_READ_WRITE;
  cl_mem m = clCreateBuffer(c, fl, bytes ? bytes : 4, (void *)host, &err);
  if (!m || err != CL_SUCCESS) {
    cli_err("clCreateBuffer(%zu bytes): %s", bytes, clattn_cl_errstr(err));
    return NULL;
  }
  return m;
}

void *cli_alloc(size_t n, size_t size)
{
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

const char *cli_dtype_name(clattn_dtype dt)
{
  return dt == CLATTN_F16 ? "f16" : dt == CLATTN_BF16 ? "bf16" : "f32";
}

int cli_family(const char *word) {
  if (word && !strcmp(word, "attention"))
    word = "prefill"; /* the public call's name, kept as the CLI's word */
  for (int i = 0; word && i < clattn_family_count(); i++)
    if (!strcmp(clattn_family_name(i), word))
      return i;
  return -1;
}

/* Whether key is one of the blank-separated words of keys. */
static int has_key(const char *keys, const char *key) {
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
  int rc = cli_shape_defaults(o, has_key(keys, "seq"));
  if (rc)
    return rc;
  const struct {
    const char *key;
    int value;
  } f[] = {{"batch", o->batch},       {"seq", o->seq},
           {"kv-seq", o->kv_seq},     {"heads", o->heads},
           {"kv-heads", o->kv_heads}, {"head-dim", o->head_dim},
           {"head-dim-v", o->head_dim_v}, {"causal", o->causal != 0}};
  int n = snprintf(buf, cap, "dtype=%s", cli_dtype_name(o->dtype));
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (has_key(keys, f[i].key) && n > 0 && (size_t)n < cap)
      n += snprintf(buf + n, cap - (size_t)n, " %s=%d", f[i].key, f[i].value);
  /* the family's own keys given as flags, after the common ones */
  for (const char *w = o->shape_extra; *w;) {
    const size_t len = strcspn(w, " "), klen = strcspn(w, "=");
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)(klen < 63 ? klen : 63), w);
    if (!has_key(keys, key)) {
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
