/* attn_tensors.c - the tensors of `clattn run attention` and `clattn run
 * decode`: read from .npy files or generated, seen as float for the
 * reference, the timed calls and the output read back. */
#include "attn_run.h"
#include "base/tolerance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_attn_job_free(cli_attn_job *j) {
  npy_free(&j->q);
  npy_free(&j->k);
  npy_free(&j->v);
  npy_free(&j->lens);
  free(j->qf);
  free(j->kf);
  free(j->vf);
}

int cli_attn_dim(const char *dir, const char *file, const char *what, size_t v,
                 int *out) {
  if (v < 1 || v > 1u << 30) {
    cli_err("%s/%s: dimension %s = %zu is out of range [1, 2^30]", dir, file,
            what, v);
    return 0;
  }
  *out = (int)v;
  return 1;
}

int cli_attn_load(const char *dir, const char *cmd, const char *const shapes[3],
                  int lens_required, cli_attn_job *j) {
  char s[96];
  static const char *const files[4] = {"q", "k", "v", "kv_lens"};
  npy_array *arr[4] = {&j->q, &j->k, &j->v, &j->lens};
  for (int i = 0; i < 4; i++) {
    int rc = cli_load(dir, files[i], i == 3 && !lens_required, arr[i]);
    if (rc)
      return rc;
  }
  for (int i = 0; i < 3; i++) {
    const npy_array *a = arr[i];
    if (a->dtype == NPY_I32) {
      cli_err("%s/%s.npy: dtype '<i4' is not a tensor type (%s takes '<f4' "
              "or '<f2')",
              dir, files[i], cmd);
      return CLI_USAGE;
    }
    if (a->ndim != 4) {
      cli_err("%s/%s.npy: expected rank 4 %s, got shape %s", dir, files[i],
              shapes[i], npy_shape_str(a->ndim, a->shape, s, sizeof s));
      return CLI_USAGE;
    }
    if (a->dtype != j->q.dtype) {
      cli_err("%s/%s.npy: dtype '%s' differs from q.npy's '%s'", dir, files[i],
              npy_dtype_descr(a->dtype), npy_dtype_descr(j->q.dtype));
      return CLI_USAGE;
    }
  }
  j->dt = j->q.dtype == NPY_F16 ? CLATTN_F16 : CLATTN_F32;
  return CLI_OK;
}

int cli_attn_check_lens(const char *dir, const cli_attn_job *j) {
  char s[96];
  if (j->lens.data && (j->lens.dtype != NPY_I32 || j->lens.ndim != 1 ||
                       j->lens.shape[0] != (size_t)j->b)) {
    cli_err("%s/kv_lens.npy: expected '<i4' [%d] (a length per sequence of "
            "q.npy), got '%s' %s",
            dir, j->b, npy_dtype_descr(j->lens.dtype),
            npy_shape_str(j->lens.ndim, j->lens.shape, s, sizeof s));
    return CLI_USAGE;
  }
  return CLI_OK;
}

int cli_attn_random(unsigned long long *seed, npy_array *a, clattn_dtype dt,
                    int s0, int s1, int s2, int s3) {
  a->ndim = 4;
  a->shape[0] = (size_t)s0;
  a->shape[1] = (size_t)s1;
  a->shape[2] = (size_t)s2;
  a->shape[3] = (size_t)s3;
  a->count = a->shape[0] * a->shape[1] * a->shape[2] * a->shape[3];
  a->dtype = dt == CLATTN_F16 ? NPY_F16 : dt == CLATTN_I8 ? NPY_I8 : NPY_F32;
  float *f = cli_alloc(a->count, sizeof *f);
  if (!f)
    return CLI_FAIL;
  cli_random_fill(seed, f, a->count, 1.0f);
  if (dt == CLATTN_F32) {
    a->data = f;
    return CLI_OK;
  }
  if (dt == CLATTN_I8) { /* the integers -127 .. 127 of an int8 cache */
    signed char *i8 = cli_alloc(a->count, 1);
    for (size_t i = 0; i8 && i < a->count; i++)
      i8[i] = (signed char)lrintf(f[i] * 127.0f);
    free(f);
    a->data = i8;
    return i8 ? CLI_OK : CLI_FAIL;
  }
  a->data = cli_alloc(a->count, 2);
  if (a->data)
    cli_to_f16(f, a->data, a->count);
  free(f);
  return a->data ? CLI_OK : CLI_FAIL;
}

void *cli_attn_transpose(const void *src, const size_t *shape, size_t es,
                         int to_bhsd) {
  size_t B = shape[0], S = shape[1], H = shape[2], row = shape[3] * es;
  unsigned char *dst = cli_alloc(B * S * H, row);
  if (!dst)
    return NULL;
  for (size_t b = 0; b < B; b++)
    for (size_t s = 0; s < S; s++)
      for (size_t h = 0; h < H; h++) {
        size_t bshd = ((b * S + s) * H + h) * row;
        size_t bhsd = ((b * H + h) * S + s) * row;
        memcpy(dst + (to_bhsd ? bhsd : bshd),
               (const unsigned char *)src + (to_bhsd ? bshd : bhsd), row);
      }
  return dst;
}

const float *cli_attn_as_float(const npy_array *a, float **copy) {
  if (a->dtype == NPY_F32)
    return a->data;
  *copy = cli_alloc(a->count, sizeof(float));
  if (*copy && a->dtype == NPY_I8)
    for (size_t i = 0; i < a->count; i++)
      (*copy)[i] = (float)((const signed char *)a->data)[i];
  else if (*copy)
    cli_from_f16(a->data, *copy, a->count);
  return *copy;
}

int cli_attn_compare(const char *what, clattn_dtype dt, const void *out,
                     const float *ref, size_t n) {
  float *got = NULL;
  if (dt == CLATTN_F16) {
    if (!(got = cli_alloc(n, sizeof *got)))
      return CLI_FAIL;
    cli_from_f16(out, got, n);
  }
  int rc = cli_compare(what, got ? got : out, ref, n, clattn__tolerance(dt));
  free(got);
  return rc;
}

static void report_time(const cli_opts *o, clattn_ctx *ctx, const char *what,
                        double flops, const double *t, int nt) {
  char name[256] = "?";
  cl_device_id dev = clattn_ctx_device(ctx);
  if (clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name - 1, name, NULL) !=
      CL_SUCCESS)
    snprintf(name, sizeof name, "?");
  double best = t[nt > 1 ? 1 : 0];
  for (int i = 2; i < nt; i++)
    best = t[i] < best ? t[i] : best;
  clattn_cache_stats cs = {.size = sizeof(clattn_cache_stats)};
  clattn_ctx_cache_stats(ctx, &cs);
  fprintf(stderr, "clattn: %s on %s: %.3f ms", what, name, t[0] * 1e3);
  if (nt > 1) /* the first call may include kernel builds */
    fprintf(stderr, " first, %.3f ms best of the next %d", best * 1e3, nt - 1);
  else if (cs.source_builds || cs.disk_hits)
    fprintf(stderr, " (includes loading the kernels; try --repeat 5)");
  fputc('\n', stderr);
  if (o->verbose)
    fprintf(stderr,
            "clattn: %.2f GFLOP/s (dense count, %s); programs: "
            "%lu built, %lu from disk, %lu from memory\n",
            flops / best * 1e-9, nt > 1 ? "best run" : "single run",
            cs.source_builds, cs.disk_hits, cs.memory_hits);
}

int cli_attn_timed(clattn_ctx *ctx, const cli_opts *o, const char *api,
                   cli_attn_call call, const void *user, const char *what,
                   double flops) {
  cl_command_queue queue = clattn_ctx_queue(ctx);
  cl_int err = clFinish(queue); /* uploads done before timing */
  if (err != CL_SUCCESS) {
    cli_err("clFinish: %s", clattn_cl_errstr(err));
    return CLI_FAIL;
  }
  double *times = cli_alloc((size_t)o->repeat, sizeof *times);
  if (!times)
    return CLI_FAIL;
  int rc = CLI_OK;
  for (int r = 0; r < o->repeat && !rc; r++) {
    double t0 = clattn__now();
    clattn_status st = call(ctx, user);
    if (st) {
      rc = cli_lib_fail(ctx, api, st);
      break;
    }
    if ((err = clFinish(queue)) != CL_SUCCESS) {
      cli_err("clFinish after %s: %s", api, clattn_cl_errstr(err));
      rc = CLI_FAIL;
    }
    times[r] = clattn__now() - t0;
  }
  if (!rc)
    report_time(o, ctx, what, flops, times, o->repeat);
  free(times);
  return rc;
}

int cli_attn_read(clattn_ctx *ctx, cl_mem buf, size_t bytes, void **out) {
  *out = cli_alloc(bytes, 1);
  if (!*out)
    return CLI_FAIL;
  cl_int err = clEnqueueReadBuffer(clattn_ctx_queue(ctx), buf, CL_TRUE, 0,
                                   bytes, *out, 0, NULL, NULL);
  if (err != CL_SUCCESS) {
    cli_err("clEnqueueReadBuffer: %s", clattn_cl_errstr(err));
    free(*out);
    *out = NULL;
    return CLI_FAIL;
  }
  return CLI_OK;
}

int cli_attn_start(const cli_opts *o, int heads, cli_attn_opts *ao,
                   clattn_ctx **ctx) {
  int rc = cli_attn_opts_load(o, heads, ao);
  if (rc)
    return rc;
  return cli_ctx_create(o->device, ctx) ? CLI_FAIL : CLI_OK;
}

int cli_attn_output(clattn_ctx *ctx, const cli_opts *o, cl_mem buf,
                    size_t bytes, npy_dtype dt, int ndim, const size_t *shape,
                    void **out) {
  if (cli_attn_read(ctx, buf, bytes, out))
    return CLI_FAIL;
  if (o->out && cli_save(NULL, o->out, dt, ndim, shape, *out))
    return CLI_FAIL;
  return CLI_OK;
}

int cli_attn_check_groups(const char *dir, int hq, int hkv,
                          const char *kv_files) {
  if (hq % hkv == 0)
    return CLI_OK;
  cli_err("%s/q.npy: %d query heads is not a multiple of the %d KV heads of %s",
          dir, hq, hkv, kv_files);
  return CLI_USAGE;
}
