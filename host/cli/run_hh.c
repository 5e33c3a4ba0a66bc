/* run_hh.c - `clattn run optimised|efficient|super`: a whole Hosseini &
 * Hosseini layer (query projection, the sliced-head core, output
 * projection) through clattn_layer_create_optimised / _efficient / _super,
 * as one prefill or as a prefill of P positions into a KV cache and one
 * decode step per remaining position, checked against ref_hh_layer. */
#include "base/tolerance.h"
#include "cli.h"
#include "reference/ref_hh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HH_MAX_TENSORS = 4 };

/* What each variant reads: x first, then its weights in file order. */
typedef struct hh_variant_info {
  int nt;
  const char *names[HH_MAX_TENSORS];
} hh_variant_info;

static const hh_variant_info variants[] = {
    [CLATTN_HH_OPTIMISED] = {4, {"x", "w_q", "w_k", "w_o"}},
    [CLATTN_HH_EFFICIENT] = {3, {"x", "w_q", "w_o"}},
    [CLATTN_HH_SUPER] = {4, {"x", "w_q", "w_a", "w_o"}},
};

typedef struct hh_job {
  clattn_hh_variant v;
  int b, n, d, h, max_len; /* max_len: Super's W_a size, else 0 */
  npy_array t[HH_MAX_TENSORS];
} hh_job;

static int is_w_a(const hh_job *j, int i) {
  return j->v == CLATTN_HH_SUPER && i == 2;
}

/* Tensor i's expected [rows, cols]: w_a [max_len, max_len], every other
 * weight [d_model, d_model] (x is checked apart). */
static void expected(const hh_job *j, int i, size_t *rows, size_t *cols) {
  const size_t s = is_w_a(j, i) ? (size_t)j->max_len : (size_t)j->d;
  *rows = s;
  *cols = s;
}

/* Read the variant's files: d_model from x, max_len from w_a's rows, the
 * heads from --heads, then every weight's shape checked. */
static int load_inputs(const cli_opts *o, hh_job *j) {
  const hh_variant_info *vi = &variants[j->v];
  const char *dir = o->in;
  char cmd[32], why[160];
  snprintf(cmd, sizeof cmd, "run %s", cli_hh_word(j->v));
  for (int i = 0; i < vi->nt; i++) {
    int rc = cli_load_f32(dir, vi->names[i], cmd, 2, i == 0 ? 3 : 2, &j->t[i]);
    if (rc)
      return rc;
  }
  const npy_array *x = &j->t[0];
  j->b = x->ndim == 3 ? (int)x->shape[0] : 1;
  j->n = (int)x->shape[x->ndim - 2];
  j->d = (int)x->shape[x->ndim - 1];
  j->h = o->heads;
  if (j->v == CLATTN_HH_SUPER) {
    const npy_array *wa = &j->t[2];
    j->max_len = (int)wa->shape[0];
    if (wa->shape[0] != wa->shape[1])
      return cli_bad_shape(dir, "w_a", wa,
                           "expected [max_len, max_len] "
                           "(square)");
    if (j->n > j->max_len) {
      snprintf(why, sizeof why,
               "max_len %d is below the %d positions of "
               "x (expected [l, l] with l >= %d)",
               j->max_len, j->n, j->n);
      return cli_bad_shape(dir, "w_a", wa, why);
    }
  }
  for (int i = 1; i < vi->nt; i++) {
    size_t rows, cols;
    expected(j, i, &rows, &cols);
    if (j->t[i].shape[0] != rows || j->t[i].shape[1] != cols) {
      snprintf(why, sizeof why, "expected [%zu, %zu] (d_model %d from x)", rows,
               cols, j->d);
      return cli_bad_shape(dir, vi->names[i], &j->t[i], why);
    }
  }
  return CLI_OK;
}

static int make_random(const cli_opts *o, hh_job *j) {
  const hh_variant_info *vi = &variants[j->v];
  j->b = o->batch;
  j->n = o->seq;
  j->d = o->d_model;
  j->h = o->heads;
  j->max_len = j->v == CLATTN_HH_SUPER ? o->max_len : 0;
  if (j->n > j->max_len && j->v == CLATTN_HH_SUPER) {
    cli_err("run super: --seq %d exceeds max_len %d (--max-len): Super's "
            "W_a is [max_len, max_len], so sequences are at most max_len "
            "long",
            j->n, j->max_len);
    return CLI_USAGE;
  }
  size_t rows[HH_MAX_TENSORS], cols[HH_MAX_TENSORS];
  for (int i = 0; i < vi->nt; i++)
    expected(j, i, &rows[i], &cols[i]);
  return cli_random_layer_tensors(o, j->b, j->n, j->d, vi->nt, vi->names, rows,
                                  cols, j->t);
}

/* The variant's create call on the uploaded weights w[1 ..]. */
static clattn_status create_layer(clattn_ctx *ctx, const hh_job *j,
                                  const clattn_hh_layer_desc *ld,
                                  cl_mem const *w, clattn_layer **layer,
                                  const char **call) {
  switch (j->v) {
  case CLATTN_HH_OPTIMISED:
    *call = "clattn_layer_create_optimised";
    return clattn_layer_create_optimised(ctx, ld, w[1], w[2], w[3], layer);
  case CLATTN_HH_EFFICIENT:
    *call = "clattn_layer_create_efficient";
    return clattn_layer_create_efficient(ctx, ld, w[1], w[2], layer);
  default:
    *call = "clattn_layer_create_super";
    return clattn_layer_create_super(ctx, ld, w[1], w[2], w[3], layer);
  }
}

int cli_run_hh(const cli_opts *o, clattn_hh_variant v) {
  hh_job j;
  clattn_ctx *ctx = NULL;
  clattn_layer *layer = NULL;
  cl_mem bt[HH_MAX_TENSORS] = {0};
  float *y = NULL, *ref = NULL;
  memset(&j, 0, sizeof j);
  j.v = v;
  const hh_variant_info *vi = &variants[v];

  int rc = o->random ? make_random(o, &j) : load_inputs(o, &j);
  if (rc)
    goto done;
  /* the library would refuse it too, but as a failed call (status 1)
   * where this is a usage error */
  if (j.d % j.h) {
    cli_err("run %s: --heads %d does not divide d_model %d", cli_hh_word(v),
            j.h, j.d);
    rc = CLI_USAGE;
    goto done;
  }
  int P = o->decode_from, causal = o->causal || P >= 0;
  if ((rc = cli_layer_setup(o, j.n, vi->nt, j.t, &ctx, bt)))
    goto done;
  rc = CLI_FAIL;
  const clattn_hh_layer_desc ld = {.size = sizeof(clattn_hh_layer_desc),
                                   .d_model = j.d,
                                   .heads = j.h,
                                   .max_len = j.max_len,
                                   .scale = o->scale};
  const char *call;
  clattn_status st = create_layer(ctx, &j, &ld, bt, &layer, &call);
  if (st) {
    rc = cli_lib_fail(ctx, call, st);
    goto done;
  }
  char what[160];
  int w = snprintf(what, sizeof what, "%s b=%d n=%d d_model=%d heads=%d",
                   cli_hh_word(v), j.b, j.n, j.d, j.h);
  if (j.max_len && w > 0 && (size_t)w < sizeof what)
    w += snprintf(what + w, sizeof what - (size_t)w, " max_len=%d", j.max_len);
  if (causal && w > 0 && (size_t)w < sizeof what)
    snprintf(what + w, sizeof what - (size_t)w, " causal");
  const cli_layer_job lj = {layer, &j.t[0], j.b, j.n, j.d, causal, P, what};
  if (cli_layer_forward(ctx, &lj, o, &y))
    goto done;
  rc = CLI_OK;
  if (o->check) {
    const size_t ny = (size_t)j.b * j.n * j.d;
    if (!(ref = cli_alloc(ny, sizeof *ref))) {
      rc = CLI_FAIL;
      goto done;
    }
    const npy_array *t = j.t;
    const float *w_k = v == CLATTN_HH_OPTIMISED ? t[2].data : NULL;
    const float *w_a = v == CLATTN_HH_SUPER ? t[2].data : NULL;
    ref_hh_layer((int)v, j.b, j.n, j.d, j.h, j.max_len, o->scale, causal,
                 t[0].data, t[1].data, w_k, w_a, t[vi->nt - 1].data, ref);
    char label[64];
    snprintf(label, sizeof label, "%s%s", cli_hh_word(v),
             P >= 0 ? " (prefill + decode)" : "");
    rc = cli_compare(label, y, ref, ny, clattn__tolerance(CLATTN_F32));
  }

done:
  free(y);
  free(ref);
  cli_layer_release(ctx, layer, HH_MAX_TENSORS, bt, j.t);
  return rc;
}
