/* run_decode.c - `clattn run decode`: one clattn_decode step (a query per
 * sequence against a KV cache) on inputs read from .npy files or
 * generated, with the attention options of the command line, optionally
 * checked against ref_decode_opts.  The cache files are in the device
 * layout: [batch, capacity, kv_heads, dim] (BSHD) or, with --layout bhsd,
 * [batch, kv_heads, capacity, dim], as a server holds its cache. */
#include "attn_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int load_inputs(const char *dir, int layout, cli_attn_job *j) {
  char s1[96], s2[96];
  const int bhsd = layout == CLATTN_BHSD;
  const char *const shapes[3] = {
      "[batch, 1, heads, head_dim]",
      bhsd ? "[batch, kv_heads, capacity, head_dim]"
           : "[batch, capacity, kv_heads, head_dim]",
      bhsd ? "[batch, kv_heads, capacity, head_dim_v]"
           : "[batch, capacity, kv_heads, head_dim_v]"};
  int rc = cli_attn_load(dir, "run decode", shapes, 1, j);
  if (rc)
    return rc;
  const size_t *qs = j->q.shape, *ks = j->k.shape, *vs = j->v.shape;
  if (qs[1] != 1) {
    cli_err("%s/q.npy: shape %s: a decode step has one query a sequence "
            "(expected %s)",
            dir, npy_shape_str(4, qs, s1, sizeof s1), shapes[0]);
    return CLI_USAGE;
  }
  npy_shape_str(4, qs, s1, sizeof s1);
  if (ks[0] != qs[0] || ks[3] != qs[3]) {
    cli_err("%s/k.npy: shape %s does not match q.npy %s (batch and head "
            "dim must agree)",
            dir, npy_shape_str(4, ks, s2, sizeof s2), s1);
    return CLI_USAGE;
  }
  npy_shape_str(4, ks, s1, sizeof s1);
  if (vs[0] != ks[0] || vs[1] != ks[1] || vs[2] != ks[2]) {
    cli_err("%s/v.npy: shape %s does not match k.npy %s (batch, capacity "
            "and kv heads must agree)",
            dir, npy_shape_str(4, vs, s2, sizeof s2), s1);
    return CLI_USAGE;
  }
  if (!cli_attn_dim(dir, "q.npy", "batch", qs[0], &j->b) ||
      !cli_attn_dim(dir, "q.npy", "heads", qs[2], &j->hq) ||
      !cli_attn_dim(dir, "q.npy", "head dim", qs[3], &j->dk) ||
      !cli_attn_dim(dir, "k.npy", "capacity", ks[bhsd ? 2 : 1], &j->m) ||
      !cli_attn_dim(dir, "k.npy", "kv heads", ks[bhsd ? 1 : 2], &j->hkv) ||
      !cli_attn_dim(dir, "v.npy", "head dim", vs[3], &j->dv))
    return CLI_USAGE;
  j->n = 1;
  rc = cli_attn_check_groups(dir, j->hq, j->hkv, "k.npy/v.npy");
  return rc ? rc : cli_attn_check_lens(dir, j);
}

/* Random q and caches of the shape options, and lengths 1 .. capacity. */
static int make_random(const cli_opts *o, cli_attn_job *j) {
  unsigned long long seed = o->seed;
  j->b = o->batch;
  j->n = 1;
  j->m = o->kv_seq;
  j->hq = o->heads;
  j->hkv = o->kv_heads;
  j->dk = o->head_dim;
  j->dv = o->head_dim_v;
  j->dt = (clattn_dtype)o->dtype;
  const int bhsd = o->layout == CLATTN_BHSD;
  const int s1 = bhsd ? j->hkv : j->m, s2 = bhsd ? j->m : j->hkv;
  int rc = cli_attn_random(&seed, &j->q, j->dt, j->b, 1, j->hq, j->dk);
  if (!rc)
    rc = cli_attn_random(&seed, &j->k, j->dt, j->b, s1, s2, j->dk);
  if (!rc)
    rc = cli_attn_random(&seed, &j->v, j->dt, j->b, s1, s2, j->dv);
  float *u = rc ? NULL : cli_alloc((size_t)j->b, sizeof *u);
  int *lens = u ? cli_alloc((size_t)j->b, sizeof *lens) : NULL;
  if (!lens) {
    free(u);
    return CLI_FAIL;
  }
  cli_random_fill(&seed, u, (size_t)j->b, 1.0f);
  for (int b = 0; b < j->b; b++) /* u in [-1, 1): 1 .. capacity */
    lens[b] = 1 + (int)((u[b] + 1.0f) * 0.5f * (float)j->m) % j->m;
  free(u);
  j->lens = (npy_array){.dtype = NPY_I32,
                        .ndim = 1,
                        .shape = {(size_t)j->b},
                        .count = (size_t)j->b,
                        .data = lens};
  if (!o->save_inputs)
    return CLI_OK;
  const npy_array *arr[4] = {&j->q, &j->k, &j->v, &j->lens};
  static const char *const files[4] = {"q", "k", "v", "kv_lens"};
  rc = cli_mkdir(o->save_inputs);
  for (int i = 0; i < 4 && !rc; i++)
    rc = cli_save(o->save_inputs, files[i], arr[i]->dtype, arr[i]->ndim,
                  arr[i]->shape, arr[i]->data);
  return rc;
}

static int check(const cli_opts *o, cli_attn_job *j, const cli_attn_opts *ao,
                 const void *out) {
  const float *q = cli_attn_as_float(&j->q, &j->qf);
  const float *k = cli_attn_as_float(&j->k, &j->kf);
  const float *v = cli_attn_as_float(&j->v, &j->vf);
  size_t no = (size_t)j->b * j->hq * j->dv;
  float *ref = cli_alloc(no, sizeof *ref);
  int rc = CLI_FAIL;
  if (q && k && v && ref) {
    const ref_opts ro = cli_attn_opts_ref(ao);
    const double scale = cli_ref_scale(o, j->dk);
    ref_decode_opts(j->b, j->m, j->hq, j->hkv, j->dk, j->dv,
                    o->layout == CLATTN_BHSD, scale, j->lens.data, &ro, q, k, v,
                    ref);
    rc = cli_attn_compare("decode", j->dt, out, ref, no);
  }
  free(ref);
  return rc;
}

/* The call and its buffers, for cli_attn_timed. */
typedef struct decode_call {
  const clattn_decode_desc *d;
  cl_mem q, k, v, lens, o;
} decode_call;

static clattn_status call_decode(clattn_ctx *ctx, const void *user) {
  const decode_call *c = user;
  return clattn_decode(ctx, c->d, c->q, c->k, c->v, c->lens, c->o, NULL);
}

int cli_run_decode(const cli_opts *o) {
  cli_attn_job j;
  cli_attn_opts ao;
  clattn_ctx *ctx = NULL;
  cl_mem bq = NULL, bk = NULL, bv = NULL, bl = NULL, bo = NULL;
  void *out = NULL;
  memset(&j, 0, sizeof j);
  memset(&ao, 0, sizeof ao);

  int rc = o->random ? make_random(o, &j) : load_inputs(o->in, o->layout, &j);
  if (!rc)
    rc = cli_attn_start(o, j.hq, &ao, &ctx);
  if (rc)
    goto done;
  rc = CLI_FAIL;
  cl_context c = clattn_ctx_cl_context(ctx);
  const size_t es = clattn_dtype_size(j.dt);
  const size_t no = (size_t)j.b * j.hq * j.dv;
  const size_t oshape[4] = {(size_t)j.b, 1, (size_t)j.hq, (size_t)j.dv};
  bq = cli_buffer(c, j.q.count * es, j.q.data);
  bk = bq ? cli_buffer(c, j.k.count * es, j.k.data) : NULL;
  bv = bk ? cli_buffer(c, j.v.count * es, j.v.data) : NULL;
  bl = bv ? cli_buffer(c, j.lens.count * 4, j.lens.data) : NULL;
  bo = bl ? cli_buffer(c, no * es, NULL) : NULL;
  if (!bo)
    goto done;

  clattn_decode_desc d = {.size = sizeof(clattn_decode_desc),
                          .batch = j.b,
                          .capacity = j.m,
                          .heads_q = j.hq,
                          .heads_kv = j.hkv,
                          .head_dim_k = j.dk,
                          .head_dim_v = j.dv,
                          .dtype = j.dt,
                          .cache_layout = (clattn_layout)o->layout,
                          .scale = o->scale,
                          .params = NULL,
                          .window = ao.window,
                          .softcap = ao.softcap,
                          .alibi_slopes = ao.alibi.data,
                          .sinks = ao.sinks.data};
  const decode_call call = {&d, bq, bk, bv, bl, bo};
  char what[320], opts[96];
  cli_attn_opts_text(&ao, opts, sizeof opts);
  snprintf(what, sizeof what,
           "decode b=%d capacity=%d hq=%d hkv=%d k=%d v=%d %s %s%s", j.b, j.m,
           j.hq, j.hkv, j.dk, j.dv, cli_dtype_name(j.dt),
           o->layout == CLATTN_BHSD ? "bhsd" : "bshd", opts);
  /* the dense count: every cache row, whatever the lengths */
  double flops = 2.0 * j.b * j.hq * j.m * (j.dk + j.dv);
  if ((rc = cli_attn_timed(ctx, o, "clattn_decode", call_decode, &call, what,
                           flops)))
    goto done;
  rc = CLI_FAIL;
  if (cli_attn_output(ctx, o, bo, no * es, j.q.dtype, 4, oshape, &out))
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
