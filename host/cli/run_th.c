/* run_th.c - `clattn run talking-heads`: a whole talking-heads layer
 * (projections, the talking-heads core, output projection) through
 * clattn_layer_create_talking_heads, as one prefill or as a prefill of P
 * positions into a KV cache and one decode step per remaining position,
 * checked against ref_th_layer. */
#include "base/tolerance.h"
#include "cli.h"
#include "reference/ref_th.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { X, WQ, WK, WV, WO, PL, PW, NT }; /* tensors, in file order */
static const char *const names[NT] = {"x",   "w_q", "w_k", "w_v",
                                      "w_o", "p_l", "p_w"};

typedef struct th_job {
  int b, n, d, hk, h, hv, dk, dv;
  npy_array t[NT];
} th_job;

/* Tensor i's expected [rows, cols] (x: [b*n, d]) for the job's sizes. */
static void expected(const th_job *j, int i, size_t *rows, size_t *cols) {
  const size_t d = (size_t)j->d, k = (size_t)j->hk * (size_t)j->dk,
               v = (size_t)j->hv * (size_t)j->dv;
  const size_t r[NT] = {
      (size_t)j->b * (size_t)j->n, d, d, d, v, (size_t)j->hk, (size_t)j->h};
  const size_t c[NT] = {d, k, k, v, d, (size_t)j->h, (size_t)j->hv};
  *rows = r[i];
  *cols = c[i];
}

/* Read the seven files: head counts from p_l [h_k, h] and p_w [h, h_v],
 * head dims from w_q's and w_v's columns, then every shape checked. */
static int load_inputs(const cli_opts *o, th_job *j) {
  const char *dir = o->in;
  char why[160];
  for (int i = 0; i < NT; i++) {
    int rc = cli_load_f32(dir, names[i], "run talking-heads", 2, i == X ? 3 : 2,
                          &j->t[i]);
    if (rc)
      return rc;
  }
  const npy_array *t = j->t, *x = &t[X];
  j->b = x->ndim == 3 ? (int)x->shape[0] : 1;
  j->n = (int)x->shape[x->ndim - 2];
  j->d = (int)x->shape[x->ndim - 1];
  j->hk = (int)t[PL].shape[0];
  j->h = (int)t[PL].shape[1];
  j->hv = (int)t[PW].shape[1];
  if (t[PW].shape[0] != (size_t)j->h) {
    snprintf(why, sizeof why,
             "first dimension must be %d logit heads "
             "(p_l's columns)",
             j->h);
    return cli_bad_shape(dir, names[PW], &t[PW], why);
  }
  if (t[WQ].shape[1] % (size_t)j->hk) {
    snprintf(why, sizeof why,
             "columns not a multiple of %d key heads "
             "(p_l's rows)",
             j->hk);
    return cli_bad_shape(dir, names[WQ], &t[WQ], why);
  }
  if (t[WV].shape[1] % (size_t)j->hv) {
    snprintf(why, sizeof why,
             "columns not a multiple of %d value heads "
             "(p_w's columns)",
             j->hv);
    return cli_bad_shape(dir, names[WV], &t[WV], why);
  }
  j->dk = (int)(t[WQ].shape[1] / (size_t)j->hk);
  j->dv = (int)(t[WV].shape[1] / (size_t)j->hv);
  for (int i = WQ; i < NT; i++) {
    size_t rows, cols;
    expected(j, i, &rows, &cols);
    if (t[i].shape[0] != rows || t[i].shape[1] != cols) {
      snprintf(why, sizeof why,
               "expected [%zu, %zu] (d_model %d from x, "
               "heads %d/%d/%d, head dims %d/%d)",
               rows, cols, j->d, j->hk, j->h, j->hv, j->dk, j->dv);
      return cli_bad_shape(dir, names[i], &t[i], why);
    }
  }
  return CLI_OK;
}

static int make_random(const cli_opts *o, th_job *j) {
  *j = (th_job){o->batch,   o->seq,      o->d_model,    o->heads_k, o->heads,
                o->heads_v, o->head_dim, o->head_dim_v, {{0}}};
  size_t rows[NT], cols[NT];
  for (int i = 0; i < NT; i++)
    expected(j, i, &rows[i], &cols[i]);
  return cli_random_layer_tensors(o, j->b, j->n, j->d, NT, names, rows, cols,
                                  j->t);
}

int cli_run_th(const cli_opts *o) {
  th_job j;
  clattn_ctx *ctx = NULL;
  clattn_layer *layer = NULL;
  cl_mem bt[NT] = {0};
  float *y = NULL, *ref = NULL;
  memset(&j, 0, sizeof j);

  int rc = o->random ? make_random(o, &j) : load_inputs(o, &j);
  if (rc)
    goto done;
  int P = o->decode_from, causal = o->causal || P >= 0;
  if ((rc = cli_layer_setup(o, j.n, NT, j.t, &ctx, bt)))
    goto done;
  rc = CLI_FAIL;
  const clattn_th_layer_desc ld = {.size = sizeof(clattn_th_layer_desc),
                                   .d_model = j.d,
                                   .heads_k = j.hk,
                                   .heads = j.h,
                                   .heads_v = j.hv,
                                   .head_dim_k = j.dk,
                                   .head_dim_v = j.dv,
                                   .scale = o->scale};
  clattn_status st = clattn_layer_create_talking_heads(
      ctx, &ld, bt[WQ], bt[WK], bt[WV], bt[WO], bt[PL], bt[PW], &layer);
  if (st) {
    rc = cli_lib_fail(ctx, "clattn_layer_create_talking_heads", st);
    goto done;
  }
  char what[160];
  snprintf(what, sizeof what,
           "talking-heads b=%d n=%d d_model=%d "
           "heads=%d/%d/%d k=%d v=%d%s",
           j.b, j.n, j.d, j.hk, j.h, j.hv, j.dk, j.dv, causal ? " causal" : "");
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
    const double scale = cli_ref_scale(o, j.dk);
    ref_th_layer(j.b, j.n, j.d, j.hk, j.h, j.hv, j.dk, j.dv, scale, causal,
                 j.t[X].data, j.t[WQ].data, j.t[WK].data, j.t[WV].data,
                 j.t[WO].data, j.t[PL].data, j.t[PW].data, ref);
    rc = cli_compare(P >= 0 ? "talking-heads (prefill + decode)"
                            : "talking-heads",
                     y, ref, ny, clattn__tolerance(CLATTN_F32));
  }

done:
  free(y);
  free(ref);
  cli_layer_release(ctx, layer, NT, bt, j.t);
  return rc;
}
