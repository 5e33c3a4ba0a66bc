/* call.h - internal: the one generic call path every family's public
 * function, explain and the tuner go through, and the model's dispatch. */
#ifndef CLATTN_CALL_H
#define CLATTN_CALL_H

#include "family/family.h"

/* Check the context, validate desc and bufs (F->nbufs of them, in the
 * family's order), choose and plan the parameters, enqueue, and record
 * the choice as it ran (after the family's enqueue settled the plan). */
clattn_status clattn__call(clattn_ctx *ctx, const clattn__family *F,
                           const void *desc, const cl_mem *bufs,
                           const clattn_events *ev);

/* What clattn__call would run for desc, and why; nothing is enqueued. */
clattn_status clattn__explain(clattn_ctx *ctx, const clattn__family *F,
                              const void *desc, clattn_choice *out);

/* Bytes of buffer spec b. */
size_t clattn__buf_bytes(const clattn__buf_spec *b);

#endif /* CLATTN_CALL_H */
