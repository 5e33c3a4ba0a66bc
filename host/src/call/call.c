/* call.c - the one generic call path (call.h): every public kernel call,
 * explain and the tuner's candidates run through it. */
#include "call/call.h"
#include "choice/choice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t clattn__buf_bytes(const clattn__buf_spec *b) {
  if (b->role == CLATTN__BUF_INTS)
    return b->elems * sizeof(cl_int);
  return clattn__bytes(clattn_dtype_size(b->dtype), (long)b->elems, 1, 1, 1);
}

/* ctx live, desc not NULL: the checks every entry point starts with. */
static clattn_status begin(clattn_ctx *ctx, const void *desc) {
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  ctx->errmsg[0] = '\0';
  if (desc == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "desc is NULL");
  return CLATTN_OK;
}

/* desc valid (F->check). */
static clattn_status check(clattn_ctx *ctx, const clattn__family *F,
                           const void *desc) {
  char why[256];
  clattn_status rc = F->check(desc, why, sizeof why);
  return rc ? clattn__fail(ctx, rc, "%s", why) : CLATTN_OK;
}

/* The family's check of its INTS buffers' contents (a block table's page
 * indices, offsets), read back after the call's wait list. */
static clattn_status check_ints(clattn_ctx *ctx, const clattn__family *F,
                                const void *desc, const clattn__buf_spec *spec,
                                const cl_mem *bufs, const clattn_events *ev) {
  int *ints[CLATTN__MAX_BUFS] = {0};
  clattn_status rc = CLATTN_OK;
  char why[256];
  for (int i = 0; i < F->nbufs && rc == CLATTN_OK; i++) {
    if (spec[i].role != CLATTN__BUF_INTS || bufs[i] == NULL)
      continue;
    const size_t bytes = clattn__buf_bytes(&spec[i]);
    if ((ints[i] = malloc(bytes ? bytes : 1)) == NULL) {
      rc = clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
      break;
    }
    const cl_int err =
        clEnqueueReadBuffer(ctx->queue, bufs[i], CL_TRUE, 0, bytes, ints[i],
                            ev ? ev->num_wait : 0, ev ? ev->wait : NULL, NULL);
    if (err != CL_SUCCESS)
      rc = clattn__cl_fail(ctx, err, "clEnqueueReadBuffer", __FILE__, __LINE__);
  }
  if (rc == CLATTN_OK &&
      (rc = F->check_ints(desc, (const int *const *)ints, why, sizeof why)))
    clattn__fail(ctx, rc, "%s", why);
  for (int i = 0; i < F->nbufs; i++)
    free(ints[i]);
  return rc;
}

/* The buffers against their specs (present, of the context, large
 * enough) and the INTS buffers' contents, before anything is enqueued. */
static clattn_status check_buffers(clattn_ctx *ctx, const clattn__family *F,
                                   const void *desc,
                                   const clattn__buf_spec *spec,
                                   const cl_mem *bufs,
                                   const clattn_events *ev) {
  clattn_status rc;
  for (int i = 0; i < F->nbufs; i++) {
    if (bufs[i] == NULL && spec[i].optional)
      continue;
    const size_t need = clattn__buf_bytes(&spec[i]);
    if (need == 0)
      return clattn__fail(ctx, CLATTN_ERR_SHAPE, "%s: size overflows",
                          spec[i].name);
    if ((rc = clattn__check_buffer(ctx, bufs[i], need, spec[i].name)))
      return rc;
  }
  if (F->check_ints && !(F->ints_unchecked && F->ints_unchecked(desc)) &&
      (rc = check_ints(ctx, F, desc, spec, bufs, ev)))
    return rc;
  return CLATTN_OK;
}

static clattn_status call_locked(clattn_ctx *ctx, const clattn__family *F,
                                 const void *desc, const clattn__params *p,
                                 const cl_mem *bufs, const clattn_events *ev) {
  clattn__buf_spec own[CLATTN__MAX_BUFS];
  const clattn__buf_spec *spec = own;
  _Alignas(16) unsigned char plan[CLATTN__PLAN_MAX];
  clattn__memo_key key;
  const clattn__memo_entry *m;
  clattn_status rc = begin(ctx, desc);
  if (rc)
    return rc;
  /* a memoised call's description passed the checks before its search,
   * and its buffer specs are kept with it */
  if ((m = clattn__choice_recall(ctx, F, desc, p, &key, plan)) != NULL) {
    spec = clattn__memo_buffers(m);
  } else {
    if ((rc = check(ctx, F, desc)))
      return rc;
    F->buffers(desc, own);
  }
  if ((rc = check_buffers(ctx, F, desc, spec, bufs, ev)))
    return rc;
  if (m == NULL && (rc = clattn__choice_search(ctx, F, desc, &key, &m, plan)))
    return rc;
  const int auto_wg = clattn__params_flagged(F, &clattn__memo_choice(m)->params,
                                             CLATTN__TUNABLE_WG) == 0;
  if ((rc = F->enqueue(ctx, desc, plan, auto_wg, bufs, ev)))
    return rc;
  /* m is still the entry chosen: a family's enqueue makes no choice */
  clattn__memo_record(ctx, m, F->resolved(plan));
  return CLATTN_OK;
}

/* The context's lock covers the choice, the program cache, the scratch
 * buffers and the enqueue: kernels' arguments are set, then enqueued. */
clattn_status clattn__call(clattn_ctx *ctx, const clattn__family *F,
                           const void *desc, const clattn__params *p,
                           const cl_mem *bufs, const clattn_events *ev) {
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  clattn_status rc = call_locked(ctx, F, desc, p, bufs, ev);
  clattn__ctx_leave(locked);
  return rc;
}

clattn_status clattn__call_check(clattn_ctx *ctx, const clattn__family *F,
                                 const void *desc, const cl_mem *bufs,
                                 const clattn_events *ev) {
  clattn__buf_spec spec[CLATTN__MAX_BUFS];
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  clattn_status rc = begin(ctx, desc);
  if (rc == CLATTN_OK && (rc = check(ctx, F, desc)) == CLATTN_OK) {
    F->buffers(desc, spec);
    rc = check_buffers(ctx, F, desc, spec, bufs, ev);
  }
  clattn__ctx_leave(locked);
  return rc;
}

clattn_status clattn__call_of(clattn_ctx *ctx, const clattn__family *F,
                              clattn_status (*check)(const void *pub, char *why,
                                                     size_t cap),
                              const void *pub, const void *desc,
                              const cl_mem *bufs, const clattn_events *ev) {
  char why[256];
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc == CLATTN_OK && pub != NULL && (rc = check(pub, why, sizeof why)))
    clattn__fail(ctx, rc, "%s", why);
  else if (rc == CLATTN_OK)
    rc = call_locked(ctx, F, desc, NULL, bufs, ev);
  clattn__ctx_leave(locked);
  return rc;
}

static clattn_status explain_locked(clattn_ctx *ctx, const clattn__family *F,
                                    const void *desc, const clattn__params *p,
                                    clattn__choice *out) {
  _Alignas(16) unsigned char plan[CLATTN__PLAN_MAX];
  const clattn__memo_entry *m;
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  if (out == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "desc or out is NULL");
  if ((rc = begin(ctx, desc)) || (rc = check(ctx, F, desc)) ||
      (rc = clattn__choose(ctx, F, desc, p, &m, plan)))
    return rc;
  *out = *clattn__memo_choice(m);
  return CLATTN_OK;
}

clattn_status clattn__explain(clattn_ctx *ctx, const clattn__family *F,
                              const void *desc, const clattn__params *p,
                              clattn__choice *out) {
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  clattn_status rc = explain_locked(ctx, F, desc, p, out);
  clattn__ctx_leave(locked);
  return rc;
}

clattn_status clattn__explain_public(clattn_ctx *ctx, const clattn__family *F,
                                     const void *desc, const clattn__params *p,
                                     clattn_choice *out) {
  clattn__choice ch;
  char why[256];
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  clattn_status rc = explain_locked(ctx, F, desc, p, out ? &ch : NULL);
  if (rc == CLATTN_OK && (rc = clattn__choice_out(&ch, out, why, sizeof why)))
    clattn__fail(ctx, rc, "%s", why);
  clattn__ctx_leave(locked);
  return rc;
}
