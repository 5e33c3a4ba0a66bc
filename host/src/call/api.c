/* api.c - the public functions of the kernel families: thin wrappers that
 * read the caller's versioned structs (args_in.c), put the buffers in the
 * family's order and take the generic path. */
#include "base/versioned.h"
#include "call/call.h"
#include "choice/choice.h"
#include "family/append.h"
#include "family/decode.h"

#include <stddef.h>
#include <stdio.h>

#define ATTN_PARAMS ((long)offsetof(clattn_attn_desc, params))
#define DECODE_PARAMS ((long)offsetof(clattn_decode_desc, params))

clattn_status clattn_attention(clattn_ctx *ctx, const clattn_attn_desc *d,
                               cl_mem q, cl_mem k, cl_mem v, cl_mem kv_lens,
                               cl_mem o, const clattn_events *ev) {
  clattn__public_args own;
  const void *desc = d;
  const clattn__family *F = &clattn__family_prefill;
  clattn_status rc = clattn__ctx_args_in(ctx, &own, F, "clattn_attn_desc",
                                         &desc, sizeof *d, ATTN_PARAMS, &ev);
  if (rc)
    return rc;
  const cl_mem bufs[5] = {q, k, v, kv_lens, o};
  return clattn__call(ctx, F, desc, own.params, bufs, ev);
}

clattn_status clattn_decode(clattn_ctx *ctx, const clattn_decode_desc *d,
                            cl_mem q, cl_mem k_cache, cl_mem v_cache,
                            cl_mem lens, cl_mem o, const clattn_events *ev) {
  clattn__public_args own;
  const void *desc = d;
  const clattn__family *F = &clattn__family_decode;
  clattn_status rc = clattn__ctx_args_in(ctx, &own, F, "clattn_decode_desc",
                                         &desc, sizeof *d, DECODE_PARAMS, &ev);
  if (rc)
    return rc;
  const cl_mem bufs[5] = {q, k_cache, v_cache, lens, o};
  return clattn__call(ctx, F, desc, own.params, bufs, ev);
}

/* An append's cache description is a decode's: it passes the decode's
 * checks, then the append takes its heads_kv as key and value heads. */
static clattn_status check_cache(const void *d, char *why, size_t cap) {
  return clattn__check_cache(d, why, cap);
}

clattn_status clattn_kv_append(clattn_ctx *ctx, const clattn_decode_desc *d,
                               int n_new, cl_mem k_new, cl_mem v_new,
                               cl_mem pos, cl_mem k_cache, cl_mem v_cache,
                               const clattn_events *ev) {
  clattn__public_args own;
  const void *desc = d;
  /* the cache description's params are the decode's, checked as such */
  clattn_status rc =
      clattn__ctx_args_in(ctx, &own, &clattn__family_decode,
                          "clattn_decode_desc", &desc, sizeof *d,
                          DECODE_PARAMS, &ev);
  if (rc)
    return rc;
  const cl_mem bufs[5] = {k_new, v_new, pos, k_cache, v_cache};
  const clattn__append_desc a =
      desc ? clattn__append_of_decode(desc, n_new) : (clattn__append_desc){0};
  return clattn__call_of(ctx, &clattn__family_append, check_cache, desc,
                         desc ? &a : NULL, bufs, ev);
}

clattn_status clattn_explain_attention(clattn_ctx *ctx,
                                       const clattn_attn_desc *d,
                                       clattn_choice *out) {
  clattn__public_args own;
  const void *desc = d;
  const clattn__family *F = &clattn__family_prefill;
  clattn_status rc = clattn__ctx_args_in(ctx, &own, F, "clattn_attn_desc",
                                         &desc, sizeof *d, ATTN_PARAMS, NULL);
  if (rc)
    return rc;
  return clattn__explain_public(ctx, F, desc, own.params, out);
}

clattn_status clattn_explain_decode(clattn_ctx *ctx,
                                    const clattn_decode_desc *d,
                                    clattn_choice *out) {
  clattn__public_args own;
  const void *desc = d;
  const clattn__family *F = &clattn__family_decode;
  clattn_status rc = clattn__ctx_args_in(ctx, &own, F, "clattn_decode_desc",
                                         &desc, sizeof *d, DECODE_PARAMS, NULL);
  if (rc)
    return rc;
  return clattn__explain_public(ctx, F, desc, own.params, out);
}

/* The model's calls have no context: a failure's reason goes to the
 * prediction's message. */
static clattn_status model_call(const clattn__family *F, const char *type,
                                const void *d, size_t size, long params,
                                const int *ints, const clattn_profile *prof,
                                clattn_prediction *out, int n_new) {
  /* an append's cache description's params are the decode's */
  const clattn__family *P =
      F == &clattn__family_append ? &clattn__family_decode : F;
  clattn__public_args own_args;
  clattn_prediction own;
  clattn_profile own_prof;
  const void *desc = d;
  clattn_status rc = clattn__model_in(&prof, &own_prof, out, &own);
  if (rc == CLATTN_OK)
    rc = clattn__args_in(&own_args, P, type, &desc, size, params, NULL,
                         own.errmsg, sizeof own.errmsg);
  if (rc == CLATTN_OK && desc != NULL && F == &clattn__family_append) {
    const clattn__append_desc a = clattn__append_of_decode(desc, n_new);
    rc = check_cache(desc, own.errmsg, sizeof own.errmsg);
    if (rc == CLATTN_OK)
      rc = clattn__model(F, &a, NULL, ints, prof, &own);
  } else if (rc == CLATTN_OK) {
    rc = clattn__model(F, desc, own_args.params, ints, prof, &own);
  }
  return clattn__model_out(rc, &own, out);
}

clattn_status clattn_model_attention(const clattn_attn_desc *d,
                                     const int *kv_lens,
                                     const clattn_profile *prof,
                                     clattn_prediction *out) {
  return model_call(&clattn__family_prefill, "clattn_attn_desc", d, sizeof *d,
                    ATTN_PARAMS, kv_lens, prof, out, 0);
}

clattn_status clattn_model_decode(const clattn_decode_desc *d, const int *lens,
                                  const clattn_profile *prof,
                                  clattn_prediction *out) {
  return model_call(&clattn__family_decode, "clattn_decode_desc", d, sizeof *d,
                    DECODE_PARAMS, lens, prof, out, 0);
}

clattn_status clattn_model_kv_append(const clattn_decode_desc *d, int n_new,
                                     const int *pos, const clattn_profile *prof,
                                     clattn_prediction *out) {
  return model_call(&clattn__family_append, "clattn_decode_desc", d, sizeof *d,
                    DECODE_PARAMS, pos, prof, out, n_new);
}

clattn_status clattn_ctx_last_choice(const clattn_ctx *ctx,
                                     clattn_choice *out) {
  char why[256];
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  if (out == NULL)
    return CLATTN_ERR_INVALID_ARG;
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  if (locked == NULL)
    return CLATTN_ERR_MISUSE;
  const clattn__thread_slot *mine = clattn__ctx_thread_slot(locked);
  rc = CLATTN_ERR_NOT_FOUND;
  if (mine != NULL && mine->has_last) {
    clattn__choice last;
    clattn__memo_last(mine, &last);
    if ((rc = clattn__choice_out(&last, out, why, sizeof why)))
      clattn__fail(locked, rc, "%s", why);
  }
  clattn__ctx_leave(locked);
  return rc;
}
