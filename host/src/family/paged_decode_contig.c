/* paged_decode_contig.c - the paged-decode family's "contiguous" baseline
 * of `clattn bench`: the decode family's default plan over a contiguous
 * BSHD copy [batch, max_blocks * page_size, heads_kv, d] of the same
 * sequences, so that one run prints paged beside contiguous.  The copy of
 * a pool is gathered once, page by page, the first time the baseline meets
 * that pool (the bench rotates cold copies of the caches: each gets its
 * own contiguous copy), and is not part of the timed calls after it.
 * Float caches only: the decode family has no int8 cache. */
#include "family/common.h"
#include "family/paged_decode.h"

#include <stdio.h>
#include <stdlib.h>

enum { MAX_POOLS = 64 };

typedef struct contig_pool {
  cl_mem src; /* the paged k_cache this copy was gathered from */
  cl_mem k, v;
} contig_pool;

typedef struct contig {
  clattn_decode_desc dd;
  _Alignas(16) unsigned char plan[CLATTN__PLAN_MAX];
  contig_pool pool[MAX_POOLS];
  int n;
} contig;

static void destroy(void *state) {
  contig *c = state;
  if (c == NULL)
    return;
  for (int i = 0; i < c->n; i++) {
    clReleaseMemObject(c->pool[i].k);
    clReleaseMemObject(c->pool[i].v);
  }
  free(c);
}

static clattn_status create(clattn_ctx *ctx, const void *desc, void **state) {
  const clattn_paged_desc *d = desc;
  char why[256];
  *state = NULL;
  if (clattn__paged_cache_dtype(d) == CLATTN_I8)
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "the contiguous decode has no int8 cache");
  contig *c = calloc(1, sizeof *c);
  if (c == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  c->dd = (clattn_decode_desc){.size = sizeof c->dd,
                               .batch = d->batch,
                               .capacity = d->max_blocks * d->page_size,
                               .heads_q = d->heads_q,
                               .heads_kv = d->heads_kv,
                               .head_dim_k = d->head_dim_k,
                               .head_dim_v = d->head_dim_v,
                               .dtype = d->dtype,
                               .cache_layout = CLATTN_BSHD,
                               .scale = d->scale,
                               .window = d->window,
                               .softcap = d->softcap,
                               .alibi_slopes = d->alibi_slopes,
                               .sinks = d->sinks};
  if (clattn__baseline_plan(ctx, &clattn__family_decode, &c->dd, c->plan, why,
                            sizeof why)) {
    free(c);
    return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                        "the contiguous decode cannot run this call: %s", why);
  }
  *state = c;
  return CLATTN_OK;
}

/* A contiguous copy of the pool behind bufs, gathered page by page from
 * the block table and lengths read back. */
static clattn_status gather(clattn_ctx *ctx, const clattn_paged_desc *d,
                            const cl_mem *bufs, contig_pool *p) {
  const size_t es = clattn_dtype_size(d->dtype);
  const size_t cap = (size_t)d->max_blocks * d->page_size;
  const size_t hkv = (size_t)d->heads_kv;
  const size_t dims[2] = {(size_t)d->head_dim_k, (size_t)d->head_dim_v};
  const cl_mem src[2] = {bufs[PA_K_CACHE], bufs[PA_V_CACHE]};
  cl_mem *dst[2] = {&p->k, &p->v};
  const size_t nt = (size_t)d->batch * d->max_blocks;
  int *table = malloc(nt * sizeof *table);
  int *lens = malloc((size_t)d->batch * sizeof *lens);
  cl_int err = CL_SUCCESS;
  clattn_status rc = CLATTN_OK;
  p->src = bufs[PA_K_CACHE];
  p->k = p->v = NULL;
  if (table == NULL || lens == NULL) {
    rc = clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
    goto done;
  }
  if ((err = clattn__paged_read_tables(ctx, d, bufs, table, lens))) {
    rc = clattn__fail(ctx, CLATTN_ERR_OPENCL, "reading the block table: %d",
                      (int)err);
    goto done;
  }
  for (int t = 0; t < 2 && rc == CLATTN_OK; t++) {
    const size_t row = hkv * dims[t] * es, page = row * d->page_size;
    *dst[t] = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE,
                             (size_t)d->batch * cap * row, NULL, &err);
    if (err != CL_SUCCESS) {
      rc =
          clattn__fail(ctx, CLATTN_ERR_NOMEM, "contiguous cache: %d", (int)err);
      break;
    }
    for (int b = 0; b < d->batch && rc == CLATTN_OK; b++) {
      const int L = lens[b] < 0 ? 0 : lens[b] > (int)cap ? (int)cap : lens[b];
      for (int pg = 0; pg * d->page_size < L; pg++) {
        const int e = table[(size_t)b * d->max_blocks + pg];
        if (e < 0 || e >= d->num_blocks)
          continue;
        err = clEnqueueCopyBuffer(
            ctx->queue, src[t], *dst[t], (size_t)e * page,
            ((size_t)b * cap + (size_t)pg * d->page_size) * row, page, 0, NULL,
            NULL);
        if (err != CL_SUCCESS) {
          rc = clattn__fail(ctx, CLATTN_ERR_OPENCL, "gathering pages: %d",
                            (int)err);
          break;
        }
      }
    }
  }
done:
  free(table);
  free(lens);
  if (rc != CLATTN_OK) {
    if (p->k)
      clReleaseMemObject(p->k);
    if (p->v)
      clReleaseMemObject(p->v);
  }
  return rc;
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *state,
                             const cl_mem *bufs) {
  const clattn_paged_desc *d = desc;
  contig *c = state;
  contig_pool *p = NULL;
  clattn_status rc;
  for (int i = 0; i < c->n && p == NULL; i++)
    if (c->pool[i].src == bufs[PA_K_CACHE])
      p = &c->pool[i];
  if (p == NULL) {
    if (c->n == MAX_POOLS)
      return clattn__fail(ctx, CLATTN_ERR_UNSUPPORTED,
                          "the contiguous baseline holds %d pools at most",
                          MAX_POOLS);
    if ((rc = gather(ctx, d, bufs, &c->pool[c->n])))
      return rc;
    p = &c->pool[c->n++];
  }
  const cl_mem db[5] = {bufs[PA_Q], p->k, p->v, bufs[PA_LENS], bufs[PA_O]};
  return clattn__baseline_enqueue(ctx, &clattn__family_decode, &c->dd, c->plan,
                                  db);
}

const clattn__baseline clattn__paged_decode_contiguous = {
    .name = "contiguous",
    .create = create,
    .enqueue = enqueue,
    .destroy = destroy,
};
