/* run_attn.c - `clattn run attention`: one clattn_attention call on inputs
 * read from .npy files or generated, optionally checked against
 * ref_attention.  Files always hold [batch, seq, heads, dim] (BSHD);
 * --layout bhsd transposes on the host so the device sees BHSD. */
#include "base/tolerance.h"
#include "cli.h"
#include "reference/ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct attn_job {
  int b, n, m, hq, hkv, dk, dv;
  clattn_dtype dt;
  npy_array q, k, v, lens; /* storage as read or generated (BSHD) */
  float *qf, *kf, *vf;     /* float copies for the reference (f16 only) */
} attn_job;

static void job_free(attn_job *j) {
  npy_free(&j->q);
  npy_free(&j->k);
  npy_free(&j->v);
  npy_free(&j->lens);
  free(j->qf);
  free(j->kf);
  free(j->vf);
}

/* A dimension from a file must be a positive int. */
static int dim_ok(const char *dir, const char *file, const char *what, size_t v,
                  int *out) {
  if (v < 1 || v > 1u << 30) {
    cli_err("%s/%s: dimension %s = %zu is out of range [1, 2^30]", dir, file,
            what, v);
    return 0;
  }
  *out = (int)v;
  return 1;
}

static int load_inputs(const char *dir, attn_job *j) {
  char s1[96], s2[96];
  static const char *const files[4] = {"q", "k", "v", "kv_lens"};
  npy_array *arr[4] = {&j->q, &j->k, &j->v, &j->lens};
  for (int i = 0; i < 4; i++) {
    int rc = cli_load(dir, files[i], i == 3, arr[i]); /* kv_lens optional */
    if (rc)
      return rc;
  }
  const struct {
    const char *name;
    npy_array *a;
  } t[3] = {{"q.npy", &j->q}, {"k.npy", &j->k}, {"v.npy", &j->v}};
  for (int i = 0; i < 3; i++) {
    if (t[i].a->dtype == NPY_I32) {
      cli_err("%s/%s: dtype '<i4' is not a tensor type (expected '<f4' "
              "or '<f2')",
              dir, t[i].name);
      return CLI_USAGE;
    }
    if (t[i].a->ndim != 4) {
      cli_err("%s/%s: expected rank 4 [batch, seq, heads, dim], got shape "
              "%s",
              dir, t[i].name,
              npy_shape_str(t[i].a->ndim, t[i].a->shape, s1, sizeof s1));
      return CLI_USAGE;
    }
    if (t[i].a->dtype != j->q.dtype) {
      cli_err("%s/%s: dtype '%s' differs from q.npy's '%s'", dir, t[i].name,
              npy_dtype_descr(t[i].a->dtype), npy_dtype_descr(j->q.dtype));
      return CLI_USAGE;
    }
  }
  const size_t *qs = j->q.shape, *ks = j->k.shape, *vs = j->v.shape;
  npy_shape_str(4, qs, s1, sizeof s1);
  if (ks[0] != qs[0] || ks[3] != qs[3]) {
    cli_err("%s/k.npy: shape %s does not match q.npy %s (batch and head "
            "dim must agree)",
            dir, npy_shape_str(4, ks, s2, sizeof s2), s1);
    return CLI_USAGE;
  }
  npy_shape_str(4, ks, s1, sizeof s1);
  if (vs[0] != ks[0] || vs[1] != ks[1] || vs[2] != ks[2]) {
    cli_err("%s/v.npy: shape %s does not match k.npy %s (batch, kv seq and "
            "kv heads must agree)",
            dir, npy_shape_str(4, vs, s2, sizeof s2), s1);
    return CLI_USAGE;
  }
  if (!dim_ok(dir, "q.npy", "batch", qs[0], &j->b) ||
      !dim_ok(dir, "q.npy", "seq", qs[1], &j->n) ||
      !dim_ok(dir, "q.npy", "heads", qs[2], &j->hq) ||
      !dim_ok(dir, "q.npy", "head dim", qs[3], &j->dk) ||
      !dim_ok(dir, "k.npy", "kv seq", ks[1], &j->m) ||
      !dim_ok(dir, "k.npy", "kv heads", ks[2], &j->hkv) ||
      !dim_ok(dir, "v.npy", "head dim", vs[3], &j->dv))
    return CLI_USAGE;
  if (j->hq % j->hkv) {
    cli_err("%s/q.npy: %d query heads is not a multiple of the %d KV "
            "heads of k.npy/v.npy",
            dir, j->hq, j->hkv);
    return CLI_USAGE;
  }
  if (j->lens.data && (j->lens.dtype != NPY_I32 || j->lens.ndim != 1 ||
                       j->lens.shape[0] != (size_t)j->b)) {
    cli_err("%s/kv_lens.npy: expected '<i4' [%d], got '%s' %s", dir, j->b,
            npy_dtype_descr(j->lens.dtype),
            npy_shape_str(j->lens.ndim, j->lens.shape, s1, sizeof s1));
    return CLI_USAGE;
  }
  j->dt = j->q.dtype == NPY_F16 ? CLATTN_F16 : CLATTN_F32;
  return CLI_OK;
}

/* Generate one tensor [b, s, h, d] in the requested storage type. */
static int gen(unsigned long long *seed, npy_array *a, clattn_dtype dt, int b,
               int s, int h, int d) {
  a->ndim = 4;
  a->shape[0] = (size_t)b;
  a->shape[1] = (size_t)s;
  a->shape[2] = (size_t)h;
  a->shape[3] = (size_t)d;
  a->count = a->shape[0] * a->shape[1] * a->shape[2] * a->shape[3];
  a->dtype = dt == CLATTN_F16 ? NPY_F16 : NPY_F32;
  float *f = cli_alloc(a->count, sizeof *f);
  if (!f)
    return CLI_FAIL;
  cli_random_fill(seed, f, a->count, 1.0f);
  if (dt == CLATTN_F32) {
    a->data = f;
    return CLI_OK;
  }
  a->data = cli_alloc(a->count, 2);
  if (a->data)
    cli_to_f16(f, a->data, a->count);
  free(f);
  return a->data ? CLI_OK : CLI_FAIL;
}

static int make_random(const cli_opts *o, attn_job *j) {
  unsigned long long seed = o->seed;
  j->b = o->batch;
  j->n = o->seq;
  j->m = o->kv_seq;
  j->hq = o->heads;
  j->hkv = o->kv_heads;
  j->dk = o->head_dim;
  j->dv = o->head_dim_v;
  j->dt = (clattn_dtype)o->dtype;
  npy_array *arr[3] = {&j->q, &j->k, &j->v};
  const int seq[3] = {j->n, j->m, j->m}, heads[3] = {j->hq, j->hkv, j->hkv};
  const int dim[3] = {j->dk, j->dk, j->dv};
  static const char *const files[3] = {"q", "k", "v"};
  int rc = CLI_OK;
  if (o->save_inputs)
    rc = cli_mkdir(o->save_inputs);
  for (int i = 0; i < 3 && !rc; i++) {
    rc = gen(&seed, arr[i], j->dt, j->b, seq[i], heads[i], dim[i]);
    if (!rc && o->save_inputs)
      rc = cli_save(o->save_inputs, files[i], arr[i]->dtype, 4, arr[i]->shape,
                    arr[i]->data);
  }
  return rc;
}

/* Between [B, S, H, D] and [B, H, S, D] (shape is always given as the
 * BSHD shape): to_bhsd selects the direction.  Rows of D elements. */
static void *transpose(const void *src, const size_t *shape, size_t es,
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

/* A device buffer holding a tensor in the device layout. */
static cl_mem upload(cl_context c, const npy_array *a, int layout) {
  size_t es = npy_dtype_size(a->dtype);
  if (layout == CLATTN_BSHD)
    return cli_buffer(c, a->count * es, a->data);
  void *t = transpose(a->data, a->shape, es, 1);
  cl_mem m = t ? cli_buffer(c, a->count * es, t) : NULL;
  free(t);
  return m;
}

/* Float view of a tensor: its data for f32, a converted copy for f16. */
static const float *as_float(const npy_array *a, float **copy) {
  if (a->dtype == NPY_F32)
    return a->data;
  *copy = cli_alloc(a->count, sizeof(float));
  if (*copy)
    cli_from_f16(a->data, *copy, a->count);
  return *copy;
}

static int check(const cli_opts *o, attn_job *j, const void *out) {
  const float *q = as_float(&j->q, &j->qf), *k = as_float(&j->k, &j->kf);
  const float *v = as_float(&j->v, &j->vf);
  size_t no = (size_t)j->b * j->n * j->hq * j->dv;
  float *ref = cli_alloc(no, sizeof *ref), *got = NULL;
  int rc = CLI_FAIL;
  if (!q || !k || !v || !ref)
    goto done;
  ref_attn a = {.b = j->b,
                .n = j->n,
                .m = j->m,
                .hq = j->hq,
                .hkv = j->hkv,
                .dk = j->dk,
                .dv = j->dv,
                .q_layout = 0,
                .kv_layout = 0,
                .scale = o->scale > 0 ? o->scale : 1.0 / sqrt((double)j->dk),
                .causal = o->causal,
                .kv_lens = j->lens.data};
  ref_attention(&a, q, k, v, ref);
  if (j->dt == CLATTN_F16) {
    got = cli_alloc(no, sizeof *got);
    if (!got)
      goto done;
    cli_from_f16(out, got, no);
  }
  rc = cli_compare("attention", got ? got : out, ref, no,
                   clattn__tolerance(j->dt));
done:
  free(ref);
  free(got);
  return rc;
}

static void report_time(const cli_opts *o, clattn_ctx *ctx, const attn_job *j,
                        const double *t, int nt) {
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
  fprintf(stderr,
          "clattn: attention b=%d n=%d m=%d hq=%d hkv=%d k=%d v=%d "
          "%s%s on %s: %.3f ms",
          j->b, j->n, j->m, j->hq, j->hkv, j->dk, j->dv,
          j->dt == CLATTN_F16 ? "f16" : "f32", o->causal ? " causal" : "", name,
          t[0] * 1e3);
  if (nt > 1) /* the first call may include kernel builds */
    fprintf(stderr, " first, %.3f ms best of the next %d", best * 1e3, nt - 1);
  else if (cs.source_builds || cs.disk_hits)
    fprintf(stderr, " (includes loading the kernels; try --repeat 5)");
  fputc('\n', stderr);
  if (o->verbose) {
    double fl = 2.0 * j->b * j->hq * j->n * j->m * (j->dk + j->dv);
    fprintf(stderr,
            "clattn: %.2f GFLOP/s (dense count, %s); programs: "
            "%lu built, %lu from disk, %lu from memory\n",
            fl / best * 1e-9, nt > 1 ? "best run" : "single run",
            cs.source_builds, cs.disk_hits, cs.memory_hits);
  }
}

int cli_run_attention(const cli_opts *o) {
  attn_job j;
  clattn_ctx *ctx = NULL;
  cl_mem bq = NULL, bk = NULL, bv = NULL, bl = NULL, bo = NULL;
  void *out = NULL, *host_out = NULL;
  double *times = NULL;
  memset(&j, 0, sizeof j);

  int rc = o->random ? make_random(o, &j) : load_inputs(o->in, &j);
  if (rc)
    goto done;
  rc = CLI_FAIL;
  if (cli_ctx_create(o->device, &ctx))
    goto done;
  clattn_status st;
  cl_context c = clattn_ctx_cl_context(ctx);
  cl_command_queue queue = clattn_ctx_queue(ctx);
  size_t es = clattn_dtype_size(j.dt);
  size_t no = (size_t)j.b * j.n * j.hq * j.dv;
  size_t oshape[4] = {(size_t)j.b, (size_t)j.n, (size_t)j.hq, (size_t)j.dv};
  bq = upload(c, &j.q, o->layout);
  bk = bq ? upload(c, &j.k, o->layout) : NULL;
  bv = bk ? upload(c, &j.v, o->layout) : NULL;
  bo = bv ? cli_buffer(c, no * es, NULL) : NULL;
  if (bo && j.lens.data)
    bl = cli_buffer(c, j.lens.count * 4, j.lens.data);
  if (!bo || (j.lens.data && !bl))
    goto done;

  clattn_attn_desc d = {.size = sizeof(clattn_attn_desc),
                        .batch = j.b,
                        .n_q = j.n,
                        .n_kv = j.m,
                        .heads_q = j.hq,
                        .heads_kv = j.hkv,
                        .head_dim_k = j.dk,
                        .head_dim_v = j.dv,
                        .dtype = j.dt,
                        .q_layout = (clattn_layout)o->layout,
                        .kv_layout = (clattn_layout)o->layout,
                        .scale = o->scale,
                        .causal = o->causal,
                        .params = NULL};
  cl_int err = clFinish(queue); /* uploads done before timing */
  if (err != CL_SUCCESS) {
    cli_err("clFinish: %s", clattn_cl_errstr(err));
    goto done;
  }
  times = cli_alloc((size_t)o->repeat, sizeof *times);
  if (!times)
    goto done;
  for (int r = 0; r < o->repeat; r++) {
    double t0 = clattn__now();
    st = clattn_attention(ctx, &d, bq, bk, bv, bl, bo, NULL);
    if (st) {
      rc = cli_lib_fail(ctx, "clattn_attention", st);
      goto done;
    }
    err = clFinish(queue);
    if (err != CL_SUCCESS) {
      cli_err("clFinish after clattn_attention: %s", clattn_cl_errstr(err));
      goto done;
    }
    times[r] = clattn__now() - t0;
  }
  report_time(o, ctx, &j, times, o->repeat);

  out = cli_alloc(no, es);
  if (!out)
    goto done;
  err = clEnqueueReadBuffer(queue, bo, CL_TRUE, 0, no * es, out, 0, NULL, NULL);
  if (err != CL_SUCCESS) {
    cli_err("clEnqueueReadBuffer: %s", clattn_cl_errstr(err));
    goto done;
  }
  if (o->layout == CLATTN_BHSD) { /* device gave [b, h, n, v] */
    host_out = transpose(out, oshape, es, 0);
    if (!host_out)
      goto done;
    free(out);
    out = host_out;
    host_out = NULL;
  }
  if (o->out && cli_save(NULL, o->out, j.q.dtype, 4, oshape, out))
    goto done;
  rc = o->check ? check(o, &j, out) : CLI_OK;

done:
  free(times);
  free(out);
  free(host_out);
  if (bq)
    clReleaseMemObject(bq);
  if (bk)
    clReleaseMemObject(bk);
  if (bv)
    clReleaseMemObject(bv);
  if (bl)
    clReleaseMemObject(bl);
  if (bo)
    clReleaseMemObject(bo);
  clattn_ctx_destroy(ctx);
  job_free(&j);
  return rc;
}
