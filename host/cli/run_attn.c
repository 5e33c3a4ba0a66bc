/* run_attn.c - `clattn run attention`: one clattn_attention call on inputs
 * read from .npy files or generated, with the attention options of the
 * command line, optionally checked against ref_attention.  Files always
 * hold [batch, seq, heads, dim] (BSHD); --layout bhsd transposes on the
 * host so the device sees BHSD. */
#include "attn_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const file_shapes[3] = {
    "[batch, seq, heads, head_dim]", "[batch, kv_seq, kv_heads, head_dim]",
    "[batch, kv_seq, kv_heads, head_dim_v]"};

static int load_inputs(const char *dir, cli_attn_job *j) {
  char s1[96], s2[96];
  int rc = cli_attn_load(dir, "run attention", file_shapes, 0, j);
  if (rc)
    return rc;
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
  if (!cli_attn_dim(dir, "q.npy", "batch", qs[0], &j->b) ||
      !cli_attn_dim(dir, "q.npy", "seq", qs[1], &j->n) ||
      !cli_attn_dim(dir, "q.npy", "heads", qs[2], &j->hq) ||
      !cli_attn_dim(dir, "q.npy", "head dim", qs[3], &j->dk) ||
      !cli_attn_dim(dir, "k.npy", "kv seq", ks[1], &j->m) ||
      !cli_attn_dim(dir, "k.npy", "kv heads", ks[2], &j->hkv) ||
      !cli_attn_dim(dir, "v.npy", "head dim", vs[3], &j->dv))
    return CLI_USAGE;
  rc = cli_attn_check_groups(dir, j->hq, j->hkv, "k.npy/v.npy");
  return rc ? rc : cli_attn_check_lens(dir, j);
}

static int make_random(const cli_opts *o, cli_attn_job *j) {
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
    rc = cli_attn_random(&seed, arr[i], j->dt, j->b, seq[i], heads[i], dim[i]);
    if (!rc && o->save_inputs)
      rc = cli_save(o->save_inputs, files[i], arr[i]->dtype, 4, arr[i]->shape,
                    arr[i]->data);
  }
  return rc;
}

/* A device buffer holding a tensor in the device layout. */
static cl_mem upload(cl_context c, const npy_array *a, int layout) {
  size_t es = npy_dtype_size(a->dtype);
  if (layout == CLATTN_BSHD)
    return cli_buffer(c, a->count * es, a->data);
  void *t = cli_attn_transpose(a->data, a->shape, es, 1);
  cl_mem m = t ? cli_buffer(c, a->count * es, t) : NULL;
  free(t);
  return m;
}

static int check(const cli_opts *o, cli_attn_job *j, const cli_attn_opts *ao,
                 const void *out) {
  const float *q = cli_attn_as_float(&j->q, &j->qf);
  const float *k = cli_attn_as_float(&j->k, &j->kf);
  const float *v = cli_attn_as_float(&j->v, &j->vf);
  size_t no = (size_t)j->b * j->n * j->hq * j->dv;
  float *ref = cli_alloc(no, sizeof *ref);
  int rc = CLI_FAIL;
  if (q && k && v && ref) {
    ref_attn a = {.b = j->b,
                  .n = j->n,
                  .m = j->m,
                  .hq = j->hq,
                  .hkv = j->hkv,
                  .dk = j->dk,
                  .dv = j->dv,
                  .q_layout = 0,
                  .kv_layout = 0,
                  .scale = cli_ref_scale(o, j->dk),
                  .causal = o->causal,
                  .kv_lens = j->lens.data,
                  .opts = cli_attn_opts_ref(ao)};
    ref_attention(&a, q, k, v, ref);
    rc = cli_attn_compare("attention", j->dt, out, ref, no);
  }
  free(ref);
  return rc;
}

/* The call and its buffers, for cli_attn_timed. */
typedef struct attn_call {
  const clattn_attn_desc *d;
  cl_mem q, k, v, lens, o;
} attn_call;

static clattn_status call_attention(clattn_ctx *ctx, const void *user) {
  const attn_call *c = user;
  return clattn_attention(ctx, c->d, c->q, c->k, c->v, c->lens, c->o, NULL);
}

int cli_run_attention(const cli_opts *o) {
  cli_attn_job j;
  cli_attn_opts ao;
  clattn_ctx *ctx = NULL;
  cl_mem bq = NULL, bk = NULL, bv = NULL, bl = NULL, bo = NULL;
  void *out = NULL;
  memset(&j, 0, sizeof j);
  memset(&ao, 0, sizeof ao);

  int rc = o->random ? make_random(o, &j) : load_inputs(o->in, &j);
  if (!rc)
    rc = cli_attn_start(o, j.hq, &ao, &ctx);
  if (rc)
    goto done;
  rc = CLI_FAIL;
  cl_context c = clattn_ctx_cl_context(ctx);
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
                        .params = NULL,
                        .window = ao.window,
                        .softcap = ao.softcap,
                        .alibi_slopes = ao.alibi.data,
                        .sinks = ao.sinks.data};
  const attn_call call = {&d, bq, bk, bv, bl, bo};
  char what[320], opts[96];
  cli_attn_opts_text(&ao, opts, sizeof opts);
  snprintf(what, sizeof what,
           "attention b=%d n=%d m=%d hq=%d hkv=%d k=%d v=%d %s%s%s", j.b, j.n,
           j.m, j.hq, j.hkv, j.dk, j.dv, cli_dtype_name(j.dt),
           o->causal ? " causal" : "", opts);
  double flops = 2.0 * j.b * j.hq * j.n * j.m * (j.dk + j.dv);
  if ((rc = cli_attn_timed(ctx, o, "clattn_attention", call_attention, &call,
                           what, flops)))
    goto done;
  rc = CLI_FAIL;
  if (cli_attn_read(ctx, bo, no * es, &out))
    goto done;
  if (o->layout == CLATTN_BHSD) { /* device gave [b, h, n, v] */
    void *bshd = cli_attn_transpose(out, oshape, es, 0);
    if (!bshd)
      goto done;
    free(out);
    out = bshd;
  }
  if (o->out && cli_save(NULL, o->out, j.q.dtype, 4, oshape, out))
    goto done;
  rc = o->check ? check(o, &j, &ao, out) : CLI_OK;

done:
  free(out);
  cl_mem m[5] = {bq, bk, bv, bl, bo};
  cli_buffers_release(m, 5);
  clattn_ctx_destroy(ctx);
  cli_attn_opts_free(&ao);
  cli_attn_job_free(&j);
  return rc;
}
