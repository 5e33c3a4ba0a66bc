/* run_varlen.c - `clattn run attention --varlen`: one
 * clattn_varlen_attention call over packed sequences read from .npy files
 * or generated, optionally checked against ref_varlen_attention.  The
 * files are FlashAttention-2's varlen layout (docs/PAGED.md): q [total_q,
 * heads, dk], k [total_k, kv_heads, dk], v [total_k, kv_heads, dv],
 * cu_seqlens_q / cu_seqlens_k int32 [batch + 1].  The shapes between the
 * files are checked here, the offsets' last entries against the totals
 * among them; the rest of the offsets is the library's to check
 * (CLATTN_ERR_SHAPE naming the entry: exit 2). */
#include "ragged.h"
#include "reference/ref_paged.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct varlen_job {
  int b, tq, tk, hq, hkv, dk, dv;
  clattn_dtype dt;
  npy_array q, k, v, cu_q, cu_k;
  float *qf, *kf, *vf; /* float copies for the reference */
} varlen_job;

/* The input files (DIR/NAME.npy), and the job's arrays in their order. */
enum { NFILES = 5 };
static const char *const input_files[NFILES] = {"q", "k", "v", "cu_seqlens_q",
                                                "cu_seqlens_k"};

static void job_arrays(varlen_job *j, npy_array **a) {
  npy_array *const all[NFILES] = {&j->q, &j->k, &j->v, &j->cu_q, &j->cu_k};
  memcpy(a, all, sizeof all);
}

static void job_free(varlen_job *j) {
  npy_array *a[NFILES];
  job_arrays(j, a);
  for (int i = 0; i < NFILES; i++)
    npy_free(a[i]);
  free(j->qf);
  free(j->kf);
  free(j->vf);
}

/* q, k and v: ranks, one float dtype and the dimensions they share. */
static int check_tensors(const char *dir, varlen_job *j) {
  char s1[96], s2[96];
  static const char *const files[3] = {"q.npy", "k.npy", "v.npy"};
  static const char *const shapes[3] = {"[total_q, heads, head_dim]",
                                        "[total_k, kv_heads, head_dim]",
                                        "[total_k, kv_heads, head_dim_v]"};
  const npy_array *t[3] = {&j->q, &j->k, &j->v};
  for (int i = 0; i < 3; i++) {
    if (t[i]->dtype != NPY_F32 && t[i]->dtype != NPY_F16) {
      cli_err("%s/%s: dtype '%s' is not a tensor type (run attention "
              "--varlen takes '<f4' or '<f2')",
              dir, files[i], npy_dtype_descr(t[i]->dtype));
      return CLI_USAGE;
    }
    if (t[i]->ndim != 3) {
      cli_err("%s/%s: expected rank 3 %s, got shape %s", dir, files[i],
              shapes[i], npy_shape_str(t[i]->ndim, t[i]->shape, s1, sizeof s1));
      return CLI_USAGE;
    }
    if (t[i]->dtype != j->q.dtype) {
      cli_err("%s/%s: dtype '%s' differs from q.npy's '%s'", dir, files[i],
              npy_dtype_descr(t[i]->dtype), npy_dtype_descr(j->q.dtype));
      return CLI_USAGE;
    }
  }
  const size_t *qs = j->q.shape, *ks = j->k.shape, *vs = j->v.shape;
  if (ks[2] != qs[2]) {
    cli_err("%s/k.npy: shape %s does not match q.npy %s (the head dim must "
            "agree)",
            dir, npy_shape_str(3, ks, s1, sizeof s1),
            npy_shape_str(3, qs, s2, sizeof s2));
    return CLI_USAGE;
  }
  if (vs[0] != ks[0] || vs[1] != ks[1]) {
    cli_err("%s/v.npy: shape %s does not match k.npy %s (total_k and kv "
            "heads must agree)",
            dir, npy_shape_str(3, vs, s1, sizeof s1),
            npy_shape_str(3, ks, s2, sizeof s2));
    return CLI_USAGE;
  }
  if (!cli_attn_dim(dir, "q.npy", "total_q", qs[0], &j->tq) ||
      !cli_attn_dim(dir, "q.npy", "heads", qs[1], &j->hq) ||
      !cli_attn_dim(dir, "q.npy", "head dim", qs[2], &j->dk) ||
      !cli_attn_dim(dir, "k.npy", "total_k", ks[0], &j->tk) ||
      !cli_attn_dim(dir, "k.npy", "kv heads", ks[1], &j->hkv) ||
      !cli_attn_dim(dir, "v.npy", "head dim", vs[2], &j->dv))
    return CLI_USAGE;
  if (cli_attn_check_groups(dir, j->hq, j->hkv, "k.npy/v.npy"))
    return CLI_USAGE;
  j->dt = j->q.dtype == NPY_F16 ? CLATTN_F16 : CLATTN_F32;
  return CLI_OK;
}

/* The offsets: int32 [batch + 1], both alike, each ending at its tensor's
 * rows (the other entries are the library's to check). */
static int check_offsets(const char *dir, varlen_job *j) {
  const size_t any[1] = {SIZE_MAX};
  int rc = cli_ragged_expect(dir, "cu_seqlens_q.npy", &j->cu_q, NPY_I32, 1, any,
                             "[batch + 1]");
  if (rc)
    return rc;
  if (j->cu_q.shape[0] < 2 || j->cu_q.shape[0] > 1u << 30) {
    cli_err("%s/cu_seqlens_q.npy: %zu offsets: expected batch + 1, 2 .. "
            "2^30",
            dir, j->cu_q.shape[0]);
    return CLI_USAGE;
  }
  j->b = (int)j->cu_q.shape[0] - 1;
  if ((rc = cli_ragged_expect(dir, "cu_seqlens_k.npy", &j->cu_k, NPY_I32, 1,
                              j->cu_q.shape, "[batch + 1 of cu_seqlens_q]")))
    return rc;
  const npy_array *cu[2] = {&j->cu_q, &j->cu_k};
  const int total[2] = {j->tq, j->tk};
  static const char *const files[2][2] = {{"cu_seqlens_q.npy", "q.npy"},
                                          {"cu_seqlens_k.npy", "k.npy"}};
  for (int i = 0; i < 2; i++) {
    const int last = ((const int *)cu[i]->data)[j->b];
    if (last != total[i]) {
      cli_err("%s/%s: ends at %d, but %s holds %d rows (the offsets must "
              "end at the total)",
              dir, files[i][0], last, files[i][1], total[i]);
      return CLI_USAGE;
    }
  }
  return CLI_OK;
}

static int load_inputs(const char *dir, varlen_job *j) {
  npy_array *arr[NFILES];
  job_arrays(j, arr);
  for (int i = 0; i < NFILES; i++) {
    int rc = cli_load(dir, input_files[i], 0, arr[i]);
    if (rc)
      return rc;
  }
  int rc = check_tensors(dir, j);
  return rc ? rc : check_offsets(dir, j);
}

/* A random [rows, heads, dim] tensor (cli_attn_random's, less its batch of
 * one). */
static int random_rows(unsigned long long *seed, npy_array *a, clattn_dtype dt,
                       int rows, int heads, int dim) {
  int rc = cli_attn_random(seed, a, dt, 1, rows, heads, dim);
  a->ndim = 3;
  memmove(a->shape, a->shape + 1, 3 * sizeof a->shape[0]);
  return rc;
}

/* Offsets [batch + 1] of the lengths lens, into *a; *total their sum. */
static int offsets(const int *lens, int batch, npy_array *a, int *total) {
  int *cu = cli_alloc((size_t)batch + 1, sizeof *cu);
  if (!cu)
    return CLI_FAIL;
  long t = 0;
  cu[0] = 0;
  for (int b = 0; b < batch; b++) {
    t += lens[b];
    if (t > 1 << 30) {
      free(cu);
      cli_err("run attention --varlen --random: more than 2^30 rows");
      return CLI_USAGE;
    }
    cu[b + 1] = (int)t;
  }
  *a = cli_ragged_ints(cu, 1, (const size_t[]){(size_t)batch + 1});
  *total = (int)t;
  return CLI_OK;
}

/* Random inputs: the key lengths given (--kv-lens) or drawn in 1 ..
 * --kv-seq (default --seq); each sequence's queries its last min(--seq,
 * length) positions (all of them without --seq). */
static int make_random(const cli_opts *o, varlen_job *j) {
  unsigned long long seed = o->seed;
  int *lens = NULL;
  int rc = cli_ragged_lens(o, o->kv_seq > 0 ? o->kv_seq : o->seq, &seed, &j->b,
                           &lens);
  if (rc)
    return rc;
  rc = offsets(lens, j->b, &j->cu_k, &j->tk);
  for (int b = 0; b < j->b && o->seq > 0; b++)
    lens[b] = lens[b] < o->seq ? lens[b] : o->seq;
  if (!rc)
    rc = offsets(lens, j->b, &j->cu_q, &j->tq);
  free(lens);
  if (rc)
    return rc;
  if (j->tq < 1 || j->tk < 1) {
    cli_err("run attention --varlen --random: the lengths hold no %s",
            j->tq < 1 ? "query" : "key");
    return CLI_USAGE;
  }
  j->hq = o->heads;
  j->hkv = o->kv_heads;
  j->dk = o->head_dim;
  j->dv = o->head_dim_v;
  j->dt = (clattn_dtype)o->dtype;
  rc = random_rows(&seed, &j->q, j->dt, j->tq, j->hq, j->dk);
  if (!rc)
    rc = random_rows(&seed, &j->k, j->dt, j->tk, j->hkv, j->dk);
  if (!rc)
    rc = random_rows(&seed, &j->v, j->dt, j->tk, j->hkv, j->dv);
  if (rc || !o->save_inputs)
    return rc;
  npy_array *arr[NFILES];
  job_arrays(j, arr);
  return cli_ragged_save(o->save_inputs, NFILES, input_files,
                         (const npy_array *const *)arr);
}

static int check(const cli_opts *o, varlen_job *j, const cli_attn_opts *ao,
                 const void *out) {
  const float *q = cli_attn_as_float(&j->q, &j->qf);
  const float *k = cli_attn_as_float(&j->k, &j->kf);
  const float *v = cli_attn_as_float(&j->v, &j->vf);
  const size_t no = (size_t)j->tq * j->hq * j->dv;
  float *ref = cli_alloc(no, sizeof *ref);
  int rc = CLI_FAIL;
  if (q && k && v && ref) {
    const ref_paged a = {.b = j->b,
                         .hq = j->hq,
                         .hkv = j->hkv,
                         .dk = j->dk,
                         .dv = j->dv,
                         .scale = cli_ref_scale(o, j->dk),
                         .causal = o->causal,
                         .opts = cli_attn_opts_ref(ao)};
    ref_varlen_attention(&a, q, k, v, j->cu_q.data, j->cu_k.data, ref);
    rc = cli_attn_compare("varlen", j->dt, out, ref, no);
  }
  free(ref);
  return rc;
}

/* The call and its buffers, for cli_attn_timed. */
typedef struct varlen_call {
  const clattn_varlen_desc *d;
  cl_mem q, k, v, cu_q, cu_k, o;
} varlen_call;

static clattn_status call_varlen(clattn_ctx *ctx, const void *user) {
  const varlen_call *c = user;
  return clattn_varlen_attention(ctx, c->d, c->q, c->k, c->v, c->cu_q, c->cu_k,
                                 c->o, NULL);
}

/* The buffers, in varlen_call's order after d. */
enum { NBUF = 6 };

int cli_run_varlen(const cli_opts *o) {
  varlen_job j;
  cli_attn_opts ao;
  clattn_ctx *ctx = NULL;
  cl_mem m[NBUF] = {NULL};
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
  const size_t es = clattn_dtype_size(j.dt);
  const size_t no = (size_t)j.tq * j.hq * j.dv;
  const size_t oshape[3] = {(size_t)j.tq, (size_t)j.hq, (size_t)j.dv};
  const npy_array *in[NBUF - 1] = {&j.q, &j.k, &j.v, &j.cu_q, &j.cu_k};
  if (cli_ragged_upload(c, NBUF - 1, in, m, no * es))
    goto done;

  clattn_varlen_desc d = {.size = sizeof(clattn_varlen_desc),
                          .batch = j.b,
                          .total_q = j.tq,
                          .total_k = j.tk,
                          .heads_q = j.hq,
                          .heads_kv = j.hkv,
                          .head_dim_k = j.dk,
                          .head_dim_v = j.dv,
                          .dtype = j.dt,
                          .scale = o->scale,
                          .causal = o->causal,
                          .params = NULL,
                          .window = ao.window,
                          .softcap = ao.softcap,
                          .alibi_slopes = ao.alibi.data,
                          .sinks = ao.sinks.data};
  const varlen_call call = {&d, m[0], m[1], m[2], m[3], m[4], m[5]};
  char what[320], opts[96], api[4200];
  cli_attn_opts_text(&ao, opts, sizeof opts);
  snprintf(what, sizeof what,
           "varlen b=%d total_q=%d total_k=%d hq=%d hkv=%d k=%d v=%d %s%s%s",
           j.b, j.tq, j.tk, j.hq, j.hkv, j.dk, j.dv, cli_dtype_name(j.dt),
           o->causal ? " causal" : "", opts);
  /* the library names a refused offset; the files hold it */
  if (o->in)
    snprintf(api, sizeof api,
             "clattn_varlen_attention (%s/cu_seqlens_q.npy, "
             "cu_seqlens_k.npy)",
             o->in);
  else
    snprintf(api, sizeof api, "clattn_varlen_attention");
  double flops = 0; /* every pair of a query and a key of its sequence */
  const int *cq = j.cu_q.data, *ck = j.cu_k.data;
  for (int b = 0; b < j.b; b++)
    flops += 2.0 * j.hq * (double)(cq[b + 1] - cq[b]) * (ck[b + 1] - ck[b]) *
             (j.dk + j.dv);
  if ((rc = cli_attn_timed(ctx, o, api, call_varlen, &call, what, flops)))
    goto done;
  rc = CLI_FAIL;
  if (cli_attn_output(ctx, o, m[NBUF - 1], no * es, j.q.dtype, 3, oshape, &out))
    goto done;
  rc = o->check ? check(o, &j, &ao, out) : CLI_OK;

done:
  free(out);
  cli_buffers_release(m, NBUF);
  clattn_ctx_destroy(ctx);
  cli_attn_opts_free(&ao);
  job_free(&j);
  return rc;
}
