/* paged_common.c - what the paged families share (paged_common.h). */
#include "family/paged_common.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

clattn_dtype clattn__paged_cache_dtype(const clattn_paged_desc *d) {
  return d->cache_dtype == CLATTN_I8 ? CLATTN_I8 : d->dtype;
}

int clattn__paged_page_ok(const clattn_paged_desc *d) {
  return clattn__is_pow2(d->page_size) && d->page_size <= 256;
}

clattn_status clattn__paged_check_page(const clattn_paged_desc *d, char *why,
                                       size_t cap) {
  if (clattn__paged_page_ok(d))
    return CLATTN_OK;
  snprintf(why, cap, "page_size %d: not a power of two from 1 to 256",
           d->page_size);
  return CLATTN_ERR_SHAPE;
}

clattn_status clattn__paged_check_cache(const clattn_paged_desc *d, char *why,
                                        size_t cap) {
  if (d->cache_dtype == CLATTN_F32 || d->cache_dtype == d->dtype ||
      d->cache_dtype == CLATTN_I8)
    return CLATTN_OK;
  snprintf(why, cap,
           "cache_dtype %d: expected 0 (the dtype's) or CLATTN_I8 (int8 "
           "with scales)",
           (int)d->cache_dtype);
  /* a storage type the call cannot honour, or no storage type at all */
  return clattn_dtype_size(d->cache_dtype) ? CLATTN_ERR_UNSUPPORTED
                                           : CLATTN_ERR_INVALID_ARG;
}

clattn_status clattn__paged_check_blocks(const clattn_paged_desc *d, char *why,
                                         size_t cap) {
  if (d->num_blocks < 1 || d->max_blocks < 1) {
    snprintf(why, cap, "num_blocks (%d) and max_blocks (%d) must be >= 1",
             d->num_blocks, d->max_blocks);
    return CLATTN_ERR_SHAPE;
  }
  /* a length is an int32 (the pool and the table are indexed in 64 bits) */
  if (clattn__paged_capacity(d) > INT_MAX) {
    snprintf(why, cap, "max_blocks * page_size (%ld) must fit an int32",
             clattn__paged_capacity(d));
    return CLATTN_ERR_SHAPE;
  }
  return CLATTN_OK;
}

long clattn__paged_capacity(const clattn_paged_desc *d) {
  return (long)d->max_blocks * d->page_size;
}

clattn_status clattn__paged_check_pool(const clattn_paged_desc *d, char *why,
                                       size_t cap) {
  const size_t cs = clattn_dtype_size(clattn__paged_cache_dtype(d));
  const long pool = (long)d->num_blocks * d->page_size;
  clattn_status rc;
  if ((rc = clattn__check_tensor("k_cache", cs, pool, d->heads_kv,
                                 d->head_dim_k, 1, why, cap)) ||
      (rc = clattn__check_tensor("v_cache", cs, pool, d->heads_kv,
                                 d->head_dim_v, 1, why, cap)) ||
      (rc = clattn__check_tensor("k_scale", 4, pool, d->heads_kv, 1, 1, why,
                                 cap)))
    return rc;
  return CLATTN_OK;
}

void clattn__paged_int_specs(const clattn_paged_desc *d,
                             clattn__buf_spec *table, clattn__buf_spec *lens) {
  const size_t B = (size_t)d->batch;
  *table = (clattn__buf_spec){"block_table",
                              CLATTN__BUF_INTS,
                              B * (size_t)d->max_blocks,
                              CLATTN_F32,
                              0,
                              0};
  *lens = (clattn__buf_spec){"kv_lens", CLATTN__BUF_INTS, B, CLATTN_F32, 0, 0};
}

int clattn__paged_full_int(const void *desc) {
  return (int)clattn__paged_capacity(desc);
}

int clattn__paged_ints_unchecked(const void *desc) {
  return ((const clattn_paged_desc *)desc)->unchecked != 0;
}

void clattn__paged_fill_ints(const void *desc, int is_table, const int *per_seq,
                             int full, int *out) {
  const clattn_paged_desc *d = desc;
  if (is_table) {
    clattn__paged_fill_table(d, per_seq, full, out);
    return;
  }
  for (int b = 0; b < d->batch; b++)
    out[b] = per_seq ? per_seq[b] : full;
}

static unsigned lcg(unsigned *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

void clattn__paged_fill_table(const clattn_paged_desc *d, const int *len,
                              int full, int *table) {
  const int nb = d->num_blocks, ps = d->page_size;
  int *perm = malloc((size_t)nb * sizeof *perm);
  unsigned seed = 2024u;
  if (perm != NULL) {
    for (int i = 0; i < nb; i++)
      perm[i] = i;
    for (int i = nb - 1; i > 0; i--) { /* Fisher-Yates */
      const int j = (int)(lcg(&seed) % (unsigned)(i + 1)), t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
  }
  static const int garbage[3] = {-1, 1 << 30, 0};
  long next = 0;
  for (int b = 0; b < d->batch; b++) {
    const long l = len ? len[b] : full;
    const long need = l > 0 ? (l + ps - 1) / ps : 0;
    for (long j = 0; j < d->max_blocks; j++) {
      int *e = &table[(size_t)b * d->max_blocks + j];
      if (j < need) {
        const int page = (int)(next++ % nb);
        *e = perm ? perm[page] : page;
      } else {
        *e = j % 3 == 2 ? nb + (int)j : garbage[j % 3];
      }
    }
  }
  free(perm);
}

clattn_status clattn__paged_check_tables(const clattn_paged_desc *d,
                                         const int *table, const int *lens,
                                         char *why, size_t cap) {
  const long capacity = clattn__paged_capacity(d);
  for (int b = 0; b < d->batch; b++) {
    if (lens[b] < 0 || lens[b] > capacity) {
      snprintf(why, cap,
               "kv_lens[%d] = %d: outside 0 .. %ld (max_blocks %d x "
               "page_size %d)",
               b, lens[b], capacity, d->max_blocks, d->page_size);
      return CLATTN_ERR_SHAPE;
    }
    const long need = ((long)lens[b] + d->page_size - 1) / d->page_size;
    for (long j = 0; j < need; j++) {
      const int page = table[(size_t)b * d->max_blocks + j];
      if (page < 0 || page >= d->num_blocks) {
        snprintf(why, cap,
                 "block_table[%d][%ld] = %d: not a page of the pool (0..%d), "
                 "and kv_lens[%d] = %d needs it",
                 b, j, page, d->num_blocks - 1, b, lens[b]);
        return CLATTN_ERR_SHAPE;
      }
    }
  }
  return CLATTN_OK;
}

void clattn__paged_attn_fill_ints(const void *desc, int buf, const int *per_seq,
                                  int full, int *out) {
  clattn__paged_fill_ints(desc, buf == PA_TABLE, per_seq, full, out);
}

clattn_status clattn__paged_attn_check_ints(const void *desc,
                                            const int *const *ints, char *why,
                                            size_t cap) {
  return clattn__paged_check_tables(desc, ints[PA_TABLE], ints[PA_LENS], why,
                                    cap);
}

cl_int clattn__paged_read_tables(clattn_ctx *ctx, const clattn_paged_desc *d,
                                 const cl_mem *bufs, int *table, int *lens) {
  const size_t nt = (size_t)d->batch * d->max_blocks;
  cl_int err = clEnqueueReadBuffer(ctx->queue, bufs[PA_TABLE], CL_TRUE, 0,
                                   nt * sizeof *table, table, 0, NULL, NULL);
  if (err == CL_SUCCESS)
    err = clEnqueueReadBuffer(ctx->queue, bufs[PA_LENS], CL_TRUE, 0,
                              (size_t)d->batch * sizeof *lens, lens, 0, NULL,
                              NULL);
  return err;
}

clattn_status clattn__paged_shape_heads(const char *text, const char *known,
                                        clattn__attn_shape *s, int *heads_q,
                                        int *heads_kv, int *page, char *why,
                                        size_t cap) {
  clattn_status rc =
      clattn__shape_heads(text, known, s, heads_q, heads_kv, why, cap);
  return rc ? rc : clattn__shape_int(text, "page", 1, 256, page, why, cap);
}

clattn_paged_desc clattn__paged_shape_desc(const clattn__attn_shape *s, int n_q,
                                           int heads_q, int heads_kv, int page,
                                           clattn_dtype cache_dtype) {
  const int max_blocks = (s->n_kv + page - 1) / page;
  return (clattn_paged_desc){.size = sizeof(clattn_paged_desc),
                             .batch = s->batch,
                             .n_q = n_q,
                             .heads_q = heads_q,
                             .heads_kv = heads_kv,
                             .head_dim_k = s->head_dim_k,
                             .head_dim_v = s->head_dim_v,
                             .num_blocks = s->batch * max_blocks,
                             .page_size = page,
                             .max_blocks = max_blocks,
                             .dtype = s->dtype,
                             .cache_dtype = cache_dtype,
                             .causal = s->causal};
}
