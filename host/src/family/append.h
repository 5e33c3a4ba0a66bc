/* append.h - internal: the KV-append family (append.c), one for every
 * cache: n_new rows a sequence written in place into heads_k key heads and
 * heads_v value heads (a GQA cache: its heads_kv both), and its
 * descriptions of the public appends' cache descriptions. */
#ifndef CLATTN_FAMILY_APPEND_H
#define CLATTN_FAMILY_APPEND_H

#include "family/plan.h"

typedef struct clattn__append_desc {
  int batch;
  int capacity; /* rows a sequence of the cache */
  int heads_k, heads_v;
  int head_dim_k, head_dim_v;
  clattn_dtype dtype;
  clattn_layout cache_layout;
  int n_new; /* rows a sequence to write */
} clattn__append_desc;

/* The append of n_new rows into the cache d describes: clattn_kv_append's
 * (heads_kv key and value heads) and clattn_talking_heads_append's
 * (heads_k and heads_v).  Their other fields (query or logit heads, scale,
 * params) are the decode's: the public appends check them with the
 * decode's cache checks (clattn__check_cache, clattn__th_check_cache). */
clattn__append_desc clattn__append_of_decode(const clattn_decode_desc *d,
                                             int n_new);
clattn__append_desc clattn__append_of_th(const clattn_th_decode_desc *d,
                                         int n_new);

#endif /* CLATTN_FAMILY_APPEND_H */
