/* run_gqa.c - `clattn run gqa`: a whole attention layer (projections,
 * attention, output projection) through clattn_layer_*, optionally as
 * prefill of P positions into a KV cache followed by one decode step per
 * remaining position, checked against ref_layer. */
#include "base/tolerance.h"
#include "cli.h"
#include "reference/ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { X, WQ, WK, WV, WO, NT }; /* tensors, in file order */
static const char *const names[NT] = {"x", "w_q", "w_k", "w_v", "w_o"};

typedef struct gqa_job {
  int b, n, d, hq, hkv, dk, dv;
  npy_array t[NT];
} gqa_job;

/* Read the five files and derive head dims and KV heads from the shapes. */
static int load_inputs(const cli_opts *o, gqa_job *j) {
  const char *dir = o->in;
  char why[160];
  for (int i = 0; i < NT; i++) {
    int rank = i == X ? 3 : 2;
    int rc = cli_load_f32(dir, names[i], "run gqa", rank, rank, &j->t[i]);
    if (rc)
      return rc;
  }
  const npy_array *t = j->t;
  j->b = (int)t[X].shape[0];
  j->n = (int)t[X].shape[1];
  j->d = (int)t[X].shape[2];
  j->hq = o->heads;
  for (int i = WQ; i <= WV; i++)
    if (t[i].shape[0] != (size_t)j->d) {
      snprintf(why, sizeof why,
               "first dimension must be d_model = %d "
               "(from x.npy)",
               j->d);
      return cli_bad_shape(dir, names[i], &t[i], why);
    }
  if (t[WQ].shape[1] % (size_t)j->hq) {
    snprintf(why, sizeof why, "columns not a multiple of --heads %d", j->hq);
    return cli_bad_shape(dir, names[WQ], &t[WQ], why);
  }
  j->dk = (int)(t[WQ].shape[1] / (size_t)j->hq);
  if (t[WK].shape[1] % (size_t)j->dk) {
    snprintf(why, sizeof why,
             "columns not a multiple of head dim %d "
             "(w_q columns / --heads)",
             j->dk);
    return cli_bad_shape(dir, names[WK], &t[WK], why);
  }
  j->hkv = (int)(t[WK].shape[1] / (size_t)j->dk);
  if (o->kv_heads && o->kv_heads != j->hkv) {
    snprintf(why, sizeof why, "implies %d KV heads, --kv-heads says %d", j->hkv,
             o->kv_heads);
    return cli_bad_shape(dir, names[WK], &t[WK], why);
  }
  if (j->hq % j->hkv) {
    snprintf(why, sizeof why, "%d KV heads do not divide %d query heads",
             j->hkv, j->hq);
    return cli_bad_shape(dir, names[WK], &t[WK], why);
  }
  if (t[WV].shape[1] % (size_t)j->hkv) {
    snprintf(why, sizeof why, "columns not a multiple of %d KV heads", j->hkv);
    return cli_bad_shape(dir, names[WV], &t[WV], why);
  }
  j->dv = (int)(t[WV].shape[1] / (size_t)j->hkv);
  if (t[WO].shape[0] != (size_t)j->hq * (size_t)j->dv ||
      t[WO].shape[1] != (size_t)j->d) {
    snprintf(why, sizeof why,
             "expected [%d, %d] (heads * head_dim_v, "
             "d_model)",
             j->hq * j->dv, j->d);
    return cli_bad_shape(dir, names[WO], &t[WO], why);
  }
  return CLI_OK;
}

static int make_random(const cli_opts *o, gqa_job *j) {
  j->b = o->batch;
  j->n = o->seq;
  j->d = o->d_model;
  j->hq = o->heads;
  j->hkv = o->kv_heads;
  j->dk = o->head_dim;
  j->dv = o->head_dim_v;
  const size_t rows[NT] = {(size_t)j->b * j->n, j->d, j->d, j->d,
                           (size_t)j->hq * j->dv};
  const size_t cols[NT] = {j->d, (size_t)j->hq * j->dk, (size_t)j->hkv * j->dk,
                           (size_t)j->hkv * j->dv, j->d};
  return cli_random_layer_tensors(o, j->b, j->n, j->d, NT, names, rows, cols,
                                  j->t);
}

int cli_run_gqa(const cli_opts *o) {
  gqa_job j;
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
  clattn_layer_desc ld = {.size = sizeof(clattn_layer_desc),
                          .d_model = j.d,
                          .heads_q = j.hq,
                          .heads_kv = j.hkv,
                          .head_dim_k = j.dk,
                          .head_dim_v = j.dv,
                          .scale = o->scale};
  clattn_status st =
      clattn_layer_create(ctx, &ld, bt[WQ], bt[WK], bt[WV], bt[WO], &layer);
  if (st) {
    rc = cli_lib_fail(ctx, "clattn_layer_create", st);
    goto done;
  }
  char what[160];
  snprintf(what, sizeof what,
           "gqa b=%d n=%d d_model=%d hq=%d hkv=%d k=%d "
           "v=%d%s",
           j.b, j.n, j.d, j.hq, j.hkv, j.dk, j.dv, causal ? " causal" : "");
  const cli_layer_job lj = {layer, &j.t[X], j.b, j.n, j.d, causal, P, what};
  if (cli_layer_forward(ctx, &lj, o, &y))
    goto done;
  rc = CLI_OK;
  if (o->check) {
    size_t ny = (size_t)j.b * j.n * j.d;
    ref = cli_alloc(ny, sizeof *ref);
    if (!ref) {
      rc = CLI_FAIL;
      goto done;
    }
    double scale = cli_ref_scale(o, j.dk);
    ref_layer(j.b, j.n, j.d, j.hq, j.hkv, j.dk, j.dv, scale, causal,
              j.t[X].data, j.t[WQ].data, j.t[WK].data, j.t[WV].data,
              j.t[WO].data, ref);
    rc = cli_compare(P >= 0 ? "gqa (prefill + decode)" : "gqa", y, ref, ny,
                     clattn__tolerance(CLATTN_F32)); /* the layer is f32 */
  }

done:
  free(y);
  free(ref);
  cli_layer_release(ctx, layer, NT, bt, j.t);
  return rc;
}
