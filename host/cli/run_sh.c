/* run_sh.c - `clattn run switchhead`: a whole SwitchHead layer (dense Q
 * and K, the expert-mixed V and output around the attention core) through
 * clattn_layer_create_switchhead, as one prefill or as a prefill of P
 * positions into a KV cache and one decode step per remaining position,
 * checked against ref_sh_layer. */
#include "base/tolerance.h"
#include "cli.h"
#include "reference/ref_sh.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tensors in upload order; w_s last, as it is absent with one expert. */
enum { X, WQ, WK, WV, WO, WD, WS, NT };
static const char *const names[NT] = {"x",   "w_q", "w_k", "w_v",
                                      "w_o", "w_d", "w_s"};

typedef struct sh_job {
  int b, n, d, h, dh, e;
  npy_array t[NT];
} sh_job;

static const char cmd[] = "run switchhead";

/* Tensor i's expected dimensions in its file's rank (w_v and w_o as
 * [H, E, ..] or [H*E, ..]; x is checked apart); the count. */
static int expected(const sh_job *j, int i, int ndim, size_t *dims) {
  const size_t d = (size_t)j->d, h = (size_t)j->h, e = (size_t)j->e,
               dh = (size_t)j->dh;
  const size_t head = ndim == 4 ? h : h * e;
  int k = 0;
  switch (i) {
  case WQ:
  case WK:
    dims[k++] = d, dims[k++] = h * dh;
    break;
  case WV:
  case WO:
    dims[k++] = head;
    if (ndim == 4)
      dims[k++] = e;
    dims[k++] = i == WV ? d : dh;
    dims[k++] = i == WV ? dh : d;
    break;
  default:
    dims[k++] = d, dims[k++] = h * e;
    break;
  }
  return k;
}

/* Every weight against the job's sizes; a mismatch names the file. */
static int check_shapes(const char *dir, const sh_job *j) {
  char why[200];
  for (int i = WQ; i < NT; i++) {
    const npy_array *a = &j->t[i];
    size_t dims[4];
    if (a->data == NULL)
      continue; /* w_s of one expert, not given */
    const int k = expected(j, i, a->ndim, dims);
    int ok = k == a->ndim;
    for (int m = 0; ok && m < k; m++)
      ok = a->shape[m] == dims[m];
    if (!ok) {
      char s[96];
      npy_shape_str(k, dims, s, sizeof s);
      snprintf(why, sizeof why,
               "expected %s (d_model %d from x, heads %d, "
               "head_dim %d, experts %d)",
               s, j->d, j->h, j->dh, j->e);
      return cli_bad_shape(dir, names[i], a, why);
    }
  }
  return CLI_OK;
}

/* Read the files: d_model from x, head_dim from w_q's columns and
 * --heads, the experts from w_v's leading dimensions; w_s may be absent
 * with one expert (the layer does not read it then). */
static int load_inputs(const cli_opts *o, sh_job *j) {
  const char *dir = o->in;
  char why[160];
  for (int i = X; i < WS; i++) {
    const int lo = i == WV || i == WO ? 3 : 2;
    const int hi = i == WV || i == WO ? 4 : i == X ? 3 : 2;
    int rc = cli_load_f32(dir, names[i], cmd, lo, hi, &j->t[i]);
    if (rc)
      return rc;
  }
  const npy_array *t = j->t, *x = &t[X];
  j->b = x->ndim == 3 ? (int)x->shape[0] : 1;
  j->n = (int)x->shape[x->ndim - 2];
  j->d = (int)x->shape[x->ndim - 1];
  j->h = o->heads;
  if (t[WQ].shape[1] % (size_t)j->h) {
    snprintf(why, sizeof why, "columns not a multiple of --heads %d", j->h);
    return cli_bad_shape(dir, names[WQ], &t[WQ], why);
  }
  j->dh = (int)(t[WQ].shape[1] / (size_t)j->h);
  const npy_array *v = &t[WV];
  if (v->ndim == 4 ? v->shape[0] != (size_t)j->h
                   : v->shape[0] % (size_t)j->h != 0) {
    snprintf(why, sizeof why,
             "expected [heads, experts, d_model, "
             "head_dim] or [heads*experts, d_model, head_dim] with heads "
             "%d",
             j->h);
    return cli_bad_shape(dir, names[WV], v, why);
  }
  j->e = (int)(v->ndim == 4 ? v->shape[1] : v->shape[0] / (size_t)j->h);
  if (j->e == 1) {
    int rc = cli_load(dir, names[WS], 1, &j->t[WS]);
    if (rc)
      return rc;
    if (j->t[WS].data && j->t[WS].dtype != NPY_F32) {
      cli_err("%s/%s.npy: dtype '%s' is not supported (%s takes '<f4')", dir,
              names[WS], npy_dtype_descr(j->t[WS].dtype), cmd);
      return CLI_USAGE;
    }
  } else {
    int rc = cli_load_f32(dir, names[WS], cmd, 2, 2, &j->t[WS]);
    if (rc)
      return rc;
  }
  return check_shapes(dir, j);
}

/* Random tensors as the files would hold them (w_v, w_o [H, E, ..]),
 * scaled so that activations stay near unit size; no w_s with one
 * expert. */
static int make_random(const cli_opts *o, sh_job *j) {
  j->b = o->batch;
  j->n = o->seq;
  j->d = o->d_model;
  j->h = o->heads;
  j->dh = o->head_dim;
  j->e = o->experts;
  unsigned long long seed = o->seed;
  const size_t xs[3] = {(size_t)j->b, (size_t)j->n, (size_t)j->d};
  int rc =
      cli_random_tensor(&seed, 3, xs, 1.0f, o->save_inputs, names[X], &j->t[X]);
  for (int i = WQ; i < NT && rc == CLI_OK; i++) {
    size_t dims[4];
    if (i == WS && j->e == 1)
      break;
    const int k = expected(j, i, i == WV || i == WO ? 4 : 2, dims);
    const float fan_in = (float)(i == WO ? j->dh : j->d);
    rc = cli_random_tensor(&seed, k, dims, 1.0f / sqrtf(fan_in), o->save_inputs,
                           names[i], &j->t[i]);
  }
  return rc;
}

int cli_run_sh(const cli_opts *o) {
  sh_job j;
  clattn_ctx *ctx = NULL;
  clattn_layer *layer = NULL;
  cl_mem bt[NT] = {0};
  float *y = NULL, *ref = NULL;
  memset(&j, 0, sizeof j);

  int rc = o->random ? make_random(o, &j) : load_inputs(o, &j);
  if (rc)
    goto done;
  /* the library would refuse it too, but as a failed call (status 1)
   * where this is a usage error */
  if (o->topk > j.e) {
    cli_err("%s: --topk %d exceeds the %d experts", cmd, o->topk, j.e);
    rc = CLI_USAGE;
    goto done;
  }
  int P = o->decode_from, causal = o->causal || P >= 0;
  const int nt = j.t[WS].data ? NT : WS;
  if ((rc = cli_layer_setup(o, j.n, nt, j.t, &ctx, bt)))
    goto done;
  rc = CLI_FAIL;
  const clattn_switchhead_layer_desc ld = {
      .size = sizeof(clattn_switchhead_layer_desc),
      .d_model = j.d,
      .heads = j.h,
      .head_dim = j.dh,
      .experts = j.e,
      .topk = o->topk,
      .scale = o->scale};
  clattn_status st = clattn_layer_create_switchhead(
      ctx, &ld, bt[WQ], bt[WK], bt[WV], bt[WO], bt[WS], bt[WD], &layer);
  if (st) {
    rc = cli_lib_fail(ctx, "clattn_layer_create_switchhead", st);
    goto done;
  }
  char what[160];
  snprintf(what, sizeof what,
           "switchhead b=%d n=%d d_model=%d heads=%d "
           "head_dim=%d experts=%d topk=%d%s",
           j.b, j.n, j.d, j.h, j.dh, j.e, o->topk, causal ? " causal" : "");
  const cli_layer_job lj = {layer, &j.t[X], j.b, j.n, j.d, causal, P, what};
  if (cli_layer_forward(ctx, &lj, o, &y))
    goto done;
  rc = CLI_OK;
  if (o->check) {
    const size_t ny = (size_t)j.b * j.n * j.d;
    if (!(ref = cli_alloc(ny, sizeof *ref))) {
      rc = CLI_FAIL;
      goto done;
    }
    const ref_sh a = {j.b,  j.n, 0,       j.d,      j.h,
                      j.dh, j.e, o->topk, o->scale, causal};
    ref_sh_layer(&a, j.t[X].data, j.t[WQ].data, j.t[WK].data, j.t[WV].data,
                 j.t[WO].data, j.e > 1 ? j.t[WS].data : NULL, j.t[WD].data,
                 ref);
    rc = cli_compare(P >= 0 ? "switchhead (prefill + decode)" : "switchhead", y,
                     ref, ny, clattn__tolerance(CLATTN_F32));
  }

done:
  free(y);
  free(ref);
  cli_layer_release(ctx, layer, NT, bt, j.t);
  return rc;
}
