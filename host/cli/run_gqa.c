/* run_gqa.c - `clattn run gqa`: a whole attention layer (projections,
 * attention, output projection) through clattn_layer_*, optionally as
 * prefill of P positions into a KV cache followed by one decode step per
 * remaining position, checked against ref_layer. */
#include "base/tolerance.h"
#include "cli.h"
#include "reference/ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { X, WQ, WK, WV, WO, NT }; /* tensors, in file order */
static const char *const names[NT] = {"x", "w_q", "w_k", "w_v", "w_o"};

typedef struct gqa_job {
  int b, n, d, hq, hkv, dk, dv;
  npy_array t[NT];
} gqa_job;

static int bad_shape(const char *dir, int i, const npy_array *a,
                     const char *why)
{
  char s[96];
  cli_err("%s/%s.npy: shape %s: %s", dir, names[i],
          npy_shape_str(a->ndim, a->shape, s, sizeof s), why);
  return CLI_USAGE;
}

/* Read the five files and derive head dims and KV heads from the shapes. */
static int load_inputs(const cli_opts *o, gqa_job *j)
{
  const char *dir = o->in;
  char why[160];
  for (int i = 0; i < NT; i++) {
    int rc = cli_load(dir, names[i], 0, &j->t[i]);
    if (rc)
      return rc;
    const npy_array *a = &j->t[i];
    if (a->dtype != NPY_F32) {
      cli_err("%s/%s.npy: dtype '%s' is not supported (run gqa takes '<f4')",
              dir, names[i], npy_dtype_descr(a->dtype));
      return CLI_USAGE;
    }
    if (a->ndim != (i == X ? 3 : 2))
      return bad_shape(dir, i, a, i == X ? "expected rank 3 [b, n, d_model]"
                                         : "expected rank 2");
    for (int k = 0; k < a->ndim; k++)
      if (a->shape[k] < 1 || a->shape[k] > 1u << 30)
        return bad_shape(dir, i, a, "dimension out of range");
  }
  const npy_array *t = j->t;
  j->b = (int)t[X].shape[0];
  j->n = (int)t[X].shape[1];
  j->d = (int)t[X].shape[2];
  j->hq = o->heads;
  for (int i = WQ; i <= WV; i++)
    if (t[i].shape[0] != (size_t)j->d) {
      snprintf(why, sizeof why, "first dimension must be d_model = %d "
               "(from x.npy)", j->d);
      return bad_shape(dir, i, &t[i], why);
    }
  if (t[WQ].shape[1] % (size_t)j->hq) {
    snprintf(why, sizeof why, "columns not a multiple of --heads %d", j->hq);
    return bad_shape(dir, WQ, &t[WQ], why);
  }
  j->dk = (int)(t[WQ].shape[1] / (size_t)j->hq);
  if (t[WK].shape[1] % (size_t)j->dk) {
    snprintf(why, sizeof why, "columns not a multiple of head dim %d "
             "(w_q columns / --heads)", j->dk);
    return bad_shape(dir, WK, &t[WK], why);
  }
  j->hkv = (int)(t[WK].shape[1] / (size_t)j->dk);
  if (o->kv_heads && o->kv_heads != j->hkv) {
    snprintf(why, sizeof why, "implies %d KV heads, --kv-heads says %d",
             j->hkv, o->kv_heads);
    return bad_shape(dir, WK, &t[WK], why);
  }
  if (j->hq % j->hkv) {
    snprintf(why, sizeof why, "%d KV heads do not divide %d query heads",
             j->hkv, j->hq);
    return bad_shape(dir, WK, &t[WK], why);
  }
  if (t[WV].shape[1] % (size_t)j->hkv) {
    snprintf(why, sizeof why, "columns not a multiple of %d KV heads",
             j->hkv);
    return bad_shape(dir, WV, &t[WV], why);
  }
  j->dv = (int)(t[WV].shape[1] / (size_t)j->hkv);
  if (t[WO].shape[0] != (size_t)j->hq * (size_t)j->dv ||
      t[WO].shape[1] != (size_t)j->d) {
    snprintf(why, sizeof why, "expected [%d, %d] (heads * head_dim_v, "
             "d_model)", j->hq * j->dv, j->d);
    return bad_shape(dir, WO, &t[WO], why);
  }
  return CLI_OK;
}

static int make_random(const cli_opts *o, gqa_job *j)
{
  unsigned long long seed = o->seed;
  j->b = o->batch;
  j->n = o->seq;
  j->d = o->d_model;
  j->hq = o->heads;
  j->hkv = o->kv_heads;
  j->dk = o->head_dim;
  j->dv = o->head_dim_v;
  const int rows[NT] = {j->b * j->n, j->d, j->d, j->d, j->hq * j->dv};
  const int cols[NT] = {j->d, j->hq * j->dk, j->hkv * j->dk,
                        j->hkv * j->dv, j->d};
  for (int i = 0; i < NT; i++) {
    npy_array *a = &j->t[i];
    a->dtype = NPY_F32;
    a->ndim = i == X ? 3 : 2;
    if (i == X) {
      a->shape[0] = (size_t)j->b;
      a->shape[1] = (size_t)j->n;
      a->shape[2] = (size_t)j->d;
    } else {
      a->shape[0] = (size_t)rows[i];
      a->shape[1] = (size_t)cols[i];
    }
    a->count = (size_t)rows[i] * (size_t)cols[i];
    a->data = cli_alloc(a->count, sizeof(float));
    if (!a->data)
      return CLI_FAIL;
    /* weights scaled by 1/sqrt(fan-in) keep activations near unit size */
    cli_random_fill(&seed, a->data, a->count,
                    i == X ? 1.0f : 1.0f / sqrtf((float)rows[i]));
    if (o->save_inputs && ((i == X && cli_mkdir(o->save_inputs)) ||
                           cli_save(o->save_inputs, names[i], NPY_F32,
                                    a->ndim, a->shape, a->data)))
      return CLI_FAIL;
  }
  return CLI_OK;
}

/* Copy rows [b][p0 .. p0+np) of a [b, src_n, d] float buffer into rows
 * [b][q0 ..) of a [b, dst_n, d] buffer. */
static int copy_rows(cl_command_queue q, cl_mem src, int src_n, int p0,
                     cl_mem dst, int dst_n, int q0, int np, int b, int d)
{
  size_t row = (size_t)d * sizeof(float);
  size_t so[3] = {(size_t)p0 * row, 0, 0}, dor[3] = {(size_t)q0 * row, 0, 0};
  size_t region[3] = {(size_t)np * row, (size_t)b, 1};
  cl_int err = clEnqueueCopyBufferRect(q, src, dst, so, dor, region,
                                       (size_t)src_n * row, 0,
                                       (size_t)dst_n * row, 0, 0, NULL,
                                       NULL);
  if (err != CL_SUCCESS)
    cli_err("clEnqueueCopyBufferRect: %s", clattn_cl_errstr(err));
  return err == CL_SUCCESS ? 0 : -1;
}

static int finish(cl_command_queue q)
{
  cl_int err = clFinish(q);
  if (err != CL_SUCCESS)
    cli_err("clFinish: %s", clattn_cl_errstr(err));
  return err == CL_SUCCESS ? 0 : -1;
}

int cli_run_gqa(const cli_opts *o)
{
  gqa_job j;
  clattn_ctx *ctx = NULL;
  clattn_layer *layer = NULL;
  clattn_kv_cache *cache = NULL;
  cl_mem bt[NT] = {0}, by = NULL, bxp = NULL, byp = NULL, bxt = NULL,
         byt = NULL;
  float *y = NULL, *ref = NULL;
  memset(&j, 0, sizeof j);

  int rc = o->random ? make_random(o, &j) : load_inputs(o, &j);
  if (rc)
    goto done;
  int P = o->decode_from, causal = o->causal || P >= 0;
  if (P > j.n) {
    cli_err("--decode-from %d exceeds the %d positions of x", P, j.n);
    rc = CLI_USAGE;
    goto done;
  }
  rc = CLI_FAIL;
  if (cli_ctx_create(o->device, &ctx))
    goto done;
  clattn_status st;
  cl_context c = clattn_ctx_cl_context(ctx);
  cl_command_queue q = clattn_ctx_queue(ctx);
  size_t ny = (size_t)j.b * j.n * j.d, bd = (size_t)j.b * j.d;
  for (int i = 0; i < NT; i++) {
    bt[i] = cli_buffer(c, j.t[i].count * 4, j.t[i].data);
    if (!bt[i])
      goto done;
  }
  by = cli_buffer(c, ny * 4, NULL);
  if (!by)
    goto done;
  clattn_layer_desc ld = {.d_model = j.d, .heads_q = j.hq,
                          .heads_kv = j.hkv, .head_dim_k = j.dk,
                          .head_dim_v = j.dv, .scale = o->scale};
  st = clattn_layer_create(ctx, &ld, bt[WQ], bt[WK], bt[WV], bt[WO], &layer);
  if (st) {
    cli_lib_fail(ctx, "clattn_layer_create", st);
    goto done;
  }
  if (P >= 0) {
    st = clattn_kv_cache_create(layer, j.b, j.n, &cache);
    if (st) {
      cli_lib_fail(ctx, "clattn_kv_cache_create", st);
      goto done;
    }
    /* prefill staging (x, y of the first P positions), one-step x, y */
    if (P > 0) {
      bxp = cli_buffer(c, bd * P * 4, NULL);
      byp = bxp ? cli_buffer(c, bd * P * 4, NULL) : NULL;
      if (!byp)
        goto done;
    }
    bxt = cli_buffer(c, bd * 4, NULL);
    byt = bxt ? cli_buffer(c, bd * 4, NULL) : NULL;
    if (!byt)
      goto done;
    if (P > 0 && copy_rows(q, bt[X], j.n, 0, bxp, P, 0, P, j.b, j.d))
      goto done;
  }
  if (finish(q))
    goto done;

  double tp = 0, td = 0; /* prefill / decode time of the last repetition */
  for (int r = 0; r < o->repeat; r++) {
    double t0 = clattn__now();
    if (P < 0) {
      st = clattn_layer_prefill(layer, NULL, j.b, j.n, causal, bt[X], by,
                                NULL);
      if (st) {
        cli_lib_fail(ctx, "clattn_layer_prefill", st);
        goto done;
      }
      if (finish(q))
        goto done;
      tp = clattn__now() - t0;
      continue;
    }
    clattn_kv_cache_reset(cache);
    if (P > 0) {
      st = clattn_layer_prefill(layer, cache, j.b, P, 1, bxp, byp, NULL);
      if (st) {
        cli_lib_fail(ctx, "clattn_layer_prefill", st);
        goto done;
      }
      if (copy_rows(q, byp, P, 0, by, j.n, 0, P, j.b, j.d) || finish(q))
        goto done;
    }
    double t1 = clattn__now();
    for (int p = P; p < j.n; p++) {
      /* x[:, p, :] -> [b, d] and the step's y back into y[:, p, :] */
      if (copy_rows(q, bt[X], j.n, p, bxt, 1, 0, 1, j.b, j.d))
        goto done;
      st = clattn_layer_decode(layer, cache, bxt, byt, NULL);
      if (st) {
        cli_lib_fail(ctx, "clattn_layer_decode", st);
        goto done;
      }
      if (copy_rows(q, byt, 1, 0, by, j.n, p, 1, j.b, j.d))
        goto done;
    }
    if (finish(q))
      goto done;
    tp = t1 - t0;
    td = clattn__now() - t1;
  }
  fprintf(stderr, "clattn: gqa b=%d n=%d d_model=%d hq=%d hkv=%d k=%d v=%d"
          "%s: ", j.b, j.n, j.d, j.hq, j.hkv, j.dk, j.dv,
          causal ? " causal" : "");
  if (P < 0)
    fprintf(stderr, "prefill %.3f ms", tp * 1e3);
  else
    fprintf(stderr, "prefill %d: %.3f ms, decode %d steps: %.3f ms "
            "(%.3f ms/step)", P, tp * 1e3, j.n - P, td * 1e3,
            j.n > P ? td * 1e3 / (j.n - P) : 0.0);
  fprintf(stderr, "%s\n", o->repeat > 1 ? " (last repetition)" : "");
  if (P >= 0 && o->verbose)
    fprintf(stderr, "clattn: kv cache length %d\n",
            clattn_kv_cache_len(cache));

  y = cli_alloc(ny, sizeof *y);
  if (!y)
    goto done;
  cl_int err = clEnqueueReadBuffer(q, by, CL_TRUE, 0, ny * 4, y, 0, NULL,
                                   NULL);
  if (err != CL_SUCCESS) {
    cli_err("clEnqueueReadBuffer: %s", clattn_cl_errstr(err));
    goto done;
  }
  if (o->out && cli_save(NULL, o->out, NPY_F32, 3, j.t[X].shape, y))
    goto done;
  rc = CLI_OK;
  if (o->check) {
    ref = cli_alloc(ny, sizeof *ref);
    if (!ref) {
      rc = CLI_FAIL;
      goto done;
    }
    double scale = o->scale > 0 ? o->scale : 1.0 / sqrt((double)j.dk);
    ref_layer(j.b, j.n, j.d, j.hq, j.hkv, j.dk, j.dv, scale, causal,
              j.t[X].data, j.t[WQ].data, j.t[WK].data, j.t[WV].data,
              j.t[WO].data, ref);
    rc = cli_compare(P >= 0 ? "gqa (prefill + decode)" : "gqa", y, ref, ny,
                     clattn__tolerance(CLATTN_F32)); /* the layer is f32 */
  }

done:
  free(y);
  free(ref);
  /* The layer and cache retain what they use: release in any order, but
   * library objects first, then our buffers, then the context. */
  clattn_kv_cache_destroy(cache);
  clattn_layer_destroy(layer);
  cl_mem extra[] = {by, bxp, byp, bxt, byt};
  for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
    if (extra[i])
      clReleaseMemObject(extra[i]);
  for (int i = 0; i < NT; i++) {
    if (bt[i])
      clReleaseMemObject(bt[i]);
    npy_free(&j.t[i]);
  }
  clattn_ctx_destroy(ctx);
  return rc;
}
