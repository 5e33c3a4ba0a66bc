/* run_paged.c - `clattn run decode --paged`: one clattn_paged_attention
 * call (a decode step, or with n_q > 1 a chunked prefill) over a paged KV
 * cache read from .npy files or generated, optionally checked against
 * ref_paged_attention.  The files are FlashAttention-2's kvcache layout
 * (docs/PAGED.md): q [batch, n_q, heads, dk], k_cache / v_cache
 * [num_blocks, page_size, kv_heads, d] (float, or int8 with k_scale /
 * v_scale float32 [num_blocks, page_size, kv_heads]), block_table int32
 * [batch, max_blocks] and kv_lens int32 [batch].  The shapes between the
 * files are checked here; the tables' contents are the library's to
 * check (CLATTN_ERR_SHAPE naming the entry: exit 2). */
#include "ragged.h"
#include "reference/ref_paged.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct paged_job {
  int b, n, hq, hkv, dk, dv, num_blocks, page_size, max_blocks;
  clattn_dtype dt, cache_dt; /* cache_dt: dt, or CLATTN_I8 */
  npy_array q, kc, vc, ks, vs, table, lens;
  float *qf, *kf, *vf; /* float copies for the reference */
} paged_job;

/* The input files (DIR/NAME.npy), and the job's arrays in their order;
 * the last two, the scales, go with an int8 cache alone. */
enum { NFILES = 7 };
static const char *const input_files[NFILES] = {
    "q", "k_cache", "v_cache", "block_table", "kv_lens", "k_scale", "v_scale"};

static void job_arrays(paged_job *j, npy_array **a) {
  npy_array *const all[NFILES] = {&j->q,    &j->kc, &j->vc, &j->table,
                                  &j->lens, &j->ks, &j->vs};
  memcpy(a, all, sizeof all);
}

static void job_free(paged_job *j) {
  npy_array *a[NFILES];
  job_arrays(j, a);
  for (int i = 0; i < NFILES; i++)
    npy_free(a[i]);
  free(j->qf);
  free(j->kf);
  free(j->vf);
}

static int is_float(npy_dtype dt) { return dt == NPY_F32 || dt == NPY_F16; }

/* q, the caches and their scales: ranks, dtypes and the dimensions they
 * share. */
static int check_tensors(const char *dir, paged_job *j) {
  char s1[96], s2[96];
  const size_t *qs = j->q.shape, *ks = j->kc.shape, *vs = j->vc.shape;
  if (!is_float(j->q.dtype) || j->q.ndim != 4) {
    cli_err("%s/q.npy: expected '<f4' or '<f2' [batch, n_q, heads, "
            "head_dim], got '%s' %s",
            dir, npy_dtype_descr(j->q.dtype),
            npy_shape_str(j->q.ndim, qs, s1, sizeof s1));
    return CLI_USAGE;
  }
  if (j->kc.dtype != j->q.dtype && j->kc.dtype != NPY_I8) {
    cli_err("%s/k_cache.npy: dtype '%s' is neither q.npy's '%s' nor int8 "
            "'|i1'",
            dir, npy_dtype_descr(j->kc.dtype), npy_dtype_descr(j->q.dtype));
    return CLI_USAGE;
  }
  if (j->vc.dtype != j->kc.dtype) {
    cli_err("%s/v_cache.npy: dtype '%s' differs from k_cache.npy's '%s'", dir,
            npy_dtype_descr(j->vc.dtype), npy_dtype_descr(j->kc.dtype));
    return CLI_USAGE;
  }
  const npy_array *caches[2] = {&j->kc, &j->vc};
  for (int i = 0; i < 2; i++)
    if (caches[i]->ndim != 4) {
      cli_err("%s/%s: expected rank 4 [num_blocks, page_size, kv_heads, "
              "head_dim], got shape %s",
              dir, i ? "v_cache.npy" : "k_cache.npy",
              npy_shape_str(caches[i]->ndim, caches[i]->shape, s1, sizeof s1));
      return CLI_USAGE;
    }
  if (ks[3] != qs[3]) {
    cli_err("%s/k_cache.npy: shape %s does not match q.npy %s (the key head "
            "dim must agree)",
            dir, npy_shape_str(4, ks, s1, sizeof s1),
            npy_shape_str(4, qs, s2, sizeof s2));
    return CLI_USAGE;
  }
  if (vs[0] != ks[0] || vs[1] != ks[1] || vs[2] != ks[2]) {
    cli_err("%s/v_cache.npy: shape %s does not match k_cache.npy %s "
            "(num_blocks, page_size and kv heads must agree)",
            dir, npy_shape_str(4, vs, s1, sizeof s1),
            npy_shape_str(4, ks, s2, sizeof s2));
    return CLI_USAGE;
  }
  if (!cli_attn_dim(dir, "q.npy", "batch", qs[0], &j->b) ||
      !cli_attn_dim(dir, "q.npy", "n_q", qs[1], &j->n) ||
      !cli_attn_dim(dir, "q.npy", "heads", qs[2], &j->hq) ||
      !cli_attn_dim(dir, "q.npy", "head dim", qs[3], &j->dk) ||
      !cli_attn_dim(dir, "k_cache.npy", "num_blocks", ks[0], &j->num_blocks) ||
      !cli_attn_dim(dir, "k_cache.npy", "page_size", ks[1], &j->page_size) ||
      !cli_attn_dim(dir, "k_cache.npy", "kv heads", ks[2], &j->hkv) ||
      !cli_attn_dim(dir, "v_cache.npy", "head dim", vs[3], &j->dv))
    return CLI_USAGE;
  if (j->page_size > 256 || (j->page_size & (j->page_size - 1))) {
    cli_err("%s/k_cache.npy: page size %d (dimension 1 of %s) is not a "
            "power of two in 1 .. 256",
            dir, j->page_size, npy_shape_str(4, ks, s1, sizeof s1));
    return CLI_USAGE;
  }
  if (cli_attn_check_groups(dir, j->hq, j->hkv, "k_cache.npy/v_cache.npy"))
    return CLI_USAGE;
  j->dt = j->q.dtype == NPY_F16 ? CLATTN_F16 : CLATTN_F32;
  j->cache_dt = j->kc.dtype == NPY_I8 ? CLATTN_I8 : j->dt;
  return CLI_OK;
}

/* The scales an int8 cache needs (and a float cache must not have). */
static int check_scales(const char *dir, const paged_job *j) {
  const npy_array *sc[2] = {&j->ks, &j->vs};
  static const char *const files[2] = {"k_scale.npy", "v_scale.npy"};
  const size_t dims[3] = {(size_t)j->num_blocks, (size_t)j->page_size,
                          (size_t)j->hkv};
  for (int i = 0; i < 2; i++) {
    if (j->cache_dt == CLATTN_I8 && !sc[i]->data) {
      cli_err("%s/%s: missing: an int8 cache (k_cache.npy '|i1') needs "
              "k_scale.npy and v_scale.npy, float32 [num_blocks, page_size, "
              "kv_heads]",
              dir, files[i]);
      return CLI_USAGE;
    }
    if (j->cache_dt != CLATTN_I8 && sc[i]->data) {
      cli_err("%s/%s: scales go with an int8 cache, and k_cache.npy is '%s'",
              dir, files[i], npy_dtype_descr(j->kc.dtype));
      return CLI_USAGE;
    }
    int rc = sc[i]->data
                 ? cli_ragged_expect(dir, files[i], sc[i], NPY_F32, 3, dims,
                                     "[num_blocks, page_size, "
                                     "kv_heads] of k_cache.npy")
                 : CLI_OK;
    if (rc)
      return rc;
  }
  return CLI_OK;
}

static int load_inputs(const char *dir, paged_job *j) {
  npy_array *arr[NFILES];
  job_arrays(j, arr);
  for (int i = 0; i < NFILES; i++) {
    int rc = cli_load(dir, input_files[i], i >= NFILES - 2, arr[i]);
    if (rc)
      return rc;
  }
  int rc = check_tensors(dir, j);
  const size_t table[2] = {(size_t)j->b, SIZE_MAX}, lens[1] = {(size_t)j->b};
  if (!rc)
    rc = cli_ragged_expect(dir, "block_table.npy", &j->table, NPY_I32, 2, table,
                           "[batch of q.npy, max_blocks]");
  if (!rc && !cli_attn_dim(dir, "block_table.npy", "max_blocks",
                           j->table.shape[1], &j->max_blocks))
    rc = CLI_USAGE;
  if (!rc)
    rc = cli_ragged_expect(dir, "kv_lens.npy", &j->lens, NPY_I32, 1, lens,
                           "[batch of q.npy]");
  return rc ? rc : check_scales(dir, j);
}

/* Fisher-Yates over 0 .. n-1 from *seed: the pages in the order the
 * sequences take them, so that no table is the identity. */
static int *shuffled_pages(unsigned long long *seed, int n) {
  int *p = cli_alloc((size_t)n, sizeof *p);
  float *u = p ? cli_alloc((size_t)n, sizeof *u) : NULL;
  if (!u) {
    free(p);
    return NULL;
  }
  cli_random_fill(seed, u, (size_t)n, 1.0f);
  for (int i = 0; i < n; i++)
    p[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int k = (int)((u[i] + 1.0f) * 0.5f * (float)(i + 1));
    k = k > i ? i : k;
    int t = p[i];
    p[i] = p[k];
    p[k] = t;
  }
  free(u);
  return p;
}

/* Random scales of an int8 cache, float32 [num_blocks, page_size, kv
 * heads], in (0, 2.5/254] so that the values stay near unit size. */
static int random_scales(unsigned long long *seed, const paged_job *j,
                         npy_array *a) {
  const size_t shape[3] = {(size_t)j->num_blocks, (size_t)j->page_size,
                           (size_t)j->hkv};
  float *s = cli_alloc(shape[0] * shape[1], shape[2] * sizeof *s);
  if (!s)
    return CLI_FAIL;
  const size_t n = shape[0] * shape[1] * shape[2];
  cli_random_fill(seed, s, n, 1.0f);
  for (size_t i = 0; i < n; i++)
    s[i] = (s[i] + 1.5f) / 254.0f;
  *a = (npy_array){.dtype = NPY_F32, .ndim = 3, .count = n, .data = s};
  memcpy(a->shape, shape, sizeof shape);
  return CLI_OK;
}

/* Random inputs of the shape options: the lengths given or drawn, each
 * sequence's pages taken from a shuffled pool with a spare page a sequence
 * left unused, and the table's columns past a length set to -1 (never
 * read). */
static int make_random(const cli_opts *o, paged_job *j) {
  unsigned long long seed = o->seed;
  int *lens = NULL;
  int rc = cli_ragged_lens(o, o->kv_seq, &seed, &j->b, &lens);
  if (rc)
    return rc;
  j->lens = cli_ragged_ints(lens, 1, (const size_t[]){(size_t)j->b});
  j->n = o->new_rows;
  j->hq = o->heads;
  j->hkv = o->kv_heads;
  j->dk = o->head_dim;
  j->dv = o->head_dim_v;
  j->page_size = o->page_size;
  j->dt = (clattn_dtype)o->dtype;
  j->cache_dt = o->cache_dtype == CLATTN_I8 ? CLATTN_I8 : j->dt;
  long longest = o->kv_seq, pages = 0;
  for (int b = 0; b < j->b; b++) {
    longest = lens[b] > longest ? lens[b] : longest;
    pages += (lens[b] + j->page_size - 1) / j->page_size;
  }
  j->max_blocks = (int)((longest + j->page_size - 1) / j->page_size);
  j->max_blocks = j->max_blocks > 0 ? j->max_blocks : 1;
  if (pages + j->b > 1 << 30) {
    cli_err("run decode --paged --random: %ld pages is too many", pages);
    return CLI_USAGE;
  }
  j->num_blocks = (int)pages + j->b;
  int *order = shuffled_pages(&seed, j->num_blocks);
  int *table =
      order ? cli_alloc((size_t)j->b * j->max_blocks, sizeof *table) : NULL;
  if (!table) {
    free(order);
    return CLI_FAIL;
  }
  for (int b = 0, next = 0; b < j->b; b++)
    for (int p = 0; p < j->max_blocks; p++)
      table[(size_t)b * j->max_blocks + p] =
          p * j->page_size < lens[b] ? order[next++] : -1;
  free(order);
  j->table = cli_ragged_ints(
      table, 2, (const size_t[]){(size_t)j->b, (size_t)j->max_blocks});
  rc = cli_attn_random(&seed, &j->q, j->dt, j->b, j->n, j->hq, j->dk);
  if (!rc)
    rc = cli_attn_random(&seed, &j->kc, j->cache_dt, j->num_blocks,
                         j->page_size, j->hkv, j->dk);
  if (!rc)
    rc = cli_attn_random(&seed, &j->vc, j->cache_dt, j->num_blocks,
                         j->page_size, j->hkv, j->dv);
  if (!rc && j->cache_dt == CLATTN_I8)
    rc = random_scales(&seed, j, &j->ks);
  if (!rc && j->cache_dt == CLATTN_I8)
    rc = random_scales(&seed, j, &j->vs);
  if (rc || !o->save_inputs)
    return rc;
  npy_array *arr[NFILES];
  job_arrays(j, arr);
  return cli_ragged_save(o->save_inputs,
                         j->cache_dt == CLATTN_I8 ? NFILES : NFILES - 2,
                         input_files, (const npy_array *const *)arr);
}

static int check(const cli_opts *o, paged_job *j, const cli_attn_opts *ao,
                 const void *out) {
  const float *q = cli_attn_as_float(&j->q, &j->qf);
  const float *k = cli_attn_as_float(&j->kc, &j->kf);
  const float *v = cli_attn_as_float(&j->vc, &j->vf);
  const size_t no = (size_t)j->b * j->n * j->hq * j->dv;
  float *ref = cli_alloc(no, sizeof *ref);
  int rc = CLI_FAIL;
  if (q && k && v && ref) {
    const ref_paged a = {.b = j->b,
                         .n = j->n,
                         .hq = j->hq,
                         .hkv = j->hkv,
                         .dk = j->dk,
                         .dv = j->dv,
                         .num_blocks = j->num_blocks,
                         .page_size = j->page_size,
                         .max_blocks = j->max_blocks,
                         .scale = cli_ref_scale(o, j->dk),
                         .causal = o->causal,
                         .opts = cli_attn_opts_ref(ao)};
    if (ref_paged_attention(&a, q, k, v, j->ks.data, j->vs.data, j->table.data,
                            j->lens.data, ref) == 0)
      rc = cli_attn_compare("paged", j->dt, out, ref, no);
    else
      cli_err("check paged: out of memory");
  }
  free(ref);
  return rc;
}

/* The call and its buffers, for cli_attn_timed. */
typedef struct paged_call {
  const clattn_paged_desc *d;
  cl_mem q, kc, vc, ks, vs, table, lens, o;
} paged_call;

static clattn_status call_paged(clattn_ctx *ctx, const void *user) {
  const paged_call *c = user;
  return clattn_paged_attention(ctx, c->d, c->q, c->kc, c->vc, c->ks, c->vs,
                                c->table, c->lens, c->o, NULL);
}

/* The buffers, in paged_call's order after d. */
enum { NBUF = 8 };

int cli_run_paged(const cli_opts *o) {
  paged_job j;
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
  const size_t no = (size_t)j.b * j.n * j.hq * j.dv;
  const size_t oshape[4] = {(size_t)j.b, (size_t)j.n, (size_t)j.hq,
                            (size_t)j.dv};
  const npy_array *in[NBUF - 1] = {&j.q,  &j.kc,    &j.vc,  &j.ks,
                                   &j.vs, &j.table, &j.lens};
  if (cli_ragged_upload(c, NBUF - 1, in, m, no * es))
    goto done;

  clattn_paged_desc d = {.size = sizeof(clattn_paged_desc),
                         .batch = j.b,
                         .n_q = j.n,
                         .heads_q = j.hq,
                         .heads_kv = j.hkv,
                         .head_dim_k = j.dk,
                         .head_dim_v = j.dv,
                         .num_blocks = j.num_blocks,
                         .page_size = j.page_size,
                         .max_blocks = j.max_blocks,
                         .dtype = j.dt,
                         .cache_dtype = j.cache_dt,
                         .scale = o->scale,
                         .causal = o->causal,
                         .params = NULL,
                         .window = ao.window,
                         .softcap = ao.softcap,
                         .alibi_slopes = ao.alibi.data,
                         .sinks = ao.sinks.data};
  const paged_call call = {&d, m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]};
  char what[320], opts[96], api[4200];
  cli_attn_opts_text(&ao, opts, sizeof opts);
  snprintf(what, sizeof what,
           "paged b=%d n_q=%d hq=%d hkv=%d k=%d v=%d page=%d pages=%d %s "
           "cache=%s%s%s",
           j.b, j.n, j.hq, j.hkv, j.dk, j.dv, j.page_size, j.num_blocks,
           cli_dtype_name(j.dt),
           j.cache_dt == CLATTN_I8 ? "int8" : cli_dtype_name(j.dt),
           o->causal ? " causal" : "", opts);
  /* the library names a refused table entry; the files hold it */
  if (o->in)
    snprintf(api, sizeof api,
             "clattn_paged_attention (%s/block_table.npy, kv_lens.npy)", o->in);
  else
    snprintf(api, sizeof api, "clattn_paged_attention");
  double flops = 0; /* every pair of a query and a key of its sequence */
  for (int b = 0; b < j.b; b++)
    flops += 2.0 * j.hq * j.n * ((const int *)j.lens.data)[b] * (j.dk + j.dv);
  if ((rc = cli_attn_timed(ctx, o, api, call_paged, &call, what, flops)))
    goto done;
  rc = CLI_FAIL;
  if (cli_attn_output(ctx, o, m[NBUF - 1], no * es, j.q.dtype, 4, oshape, &out))
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
