/* call.h - internal: the one generic call path every family's public
 * function, explain and the tuner go through, and the model's dispatch. */
#ifndef CLATTN_CALL_H
#define CLATTN_CALL_H

#include "family/family.h"

/* Check the context, validate desc and bufs (F->nbufs of them, in the
 * family's order), choose and plan the parameters (the caller's values p
 * of the family's tunables, NULL: none), enqueue, and record the choice as
 * it ran (after the family's enqueue settled the plan). */
clattn_status clattn__call(clattn_ctx *ctx, const clattn__family *F,
                           const void *desc, const clattn__params *p,
                           const cl_mem *bufs, const clattn_events *ev);

/* clattn__call's checks of desc and bufs alone, the INTS buffers'
 * contents included (read back after ev's wait list): for a caller that
 * makes several calls and must refuse before enqueuing the first. */
clattn_status clattn__call_check(clattn_ctx *ctx, const clattn__family *F,
                                 const void *desc, const cl_mem *bufs,
                                 const clattn_events *ev);

/* clattn__call of a description built from the caller's public one, pub,
 * after check has passed pub: the fields of pub that desc does not keep
 * (an append's cache description: its query or logit heads and scale) are
 * still the caller's to get right.  A failure of check is the call's,
 * with the reason in the context's message; pub NULL: desc is NULL. */
clattn_status clattn__call_of(clattn_ctx *ctx, const clattn__family *F,
                              clattn_status (*check)(const void *pub, char *why,
                                                     size_t cap),
                              const void *pub, const void *desc,
                              const cl_mem *bufs, const clattn_events *ev);

/* What clattn__call would run for desc and p, and why; nothing is
 * enqueued. */
clattn_status clattn__explain(clattn_ctx *ctx, const clattn__family *F,
                              const void *desc, const clattn__params *p,
                              clattn__choice *out);
/* clattn__explain into the public form (the params as text). */
clattn_status clattn__explain_public(clattn_ctx *ctx, const clattn__family *F,
                                     const void *desc, const clattn__params *p,
                                     clattn_choice *out);

/* Bytes of buffer spec b. */
size_t clattn__buf_bytes(const clattn__buf_spec *b);

/* A public function's versioned arguments (base/versioned.h) as the
 * library's own: the description (of public type `type`, desc_size bytes,
 * its params pointer at params_offset or CLATTN__NO_PARAMS) with the
 * params as values of family F's tunables (`params`, NULL when the caller
 * gave none; the copy's pointer cleared), and the events.  A NULL
 * description or events stays NULL. */
enum { CLATTN__NO_PARAMS = -1 };
typedef struct clattn__public_args {
  _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
  clattn__params values;
  const clattn__params *params;
  clattn_events ev;
} clattn__public_args;

/* Read *desc and *ev into own and point them at own's copies; the reason
 * of a failure in why.  A wait list the driver could not take (num_wait
 * with a NULL wait, a NULL entry) is CLATTN_ERR_INVALID_ARG. */
clattn_status clattn__args_in(clattn__public_args *own,
                              const clattn__family *F, const char *type,
                              const void **desc, size_t desc_size,
                              long params_offset, const clattn_events **ev,
                              char *why, size_t cap);
/* The same, recording a failure on a live ctx (a context that is not
 * live is left to the call's own check). */
clattn_status clattn__ctx_args_in(clattn_ctx *ctx, clattn__public_args *own,
                                  const clattn__family *F, const char *type,
                                  const void **desc, size_t desc_size,
                                  long params_offset,
                                  const clattn_events **ev);
/* The same for a public function's one versioned struct (a layer's
 * description): *p read into own (size bytes). */
clattn_status clattn__ctx_struct_in(clattn_ctx *ctx, const void **p, void *own,
                                    size_t size, const char *type);

#endif /* CLATTN_CALL_H */
