/* family_call.h - tests that drive a family's internal description: its
 * call and its model with the caller's public params, read into the
 * family's values as the public functions read them (call/args_in.c). */
#ifndef CLATTN_TESTS_FAMILY_CALL_H
#define CLATTN_TESTS_FAMILY_CALL_H

#include "call/call.h"

/* clattn__call of F's desc with params p (NULL: automatic); a bad value is
 * the call's failure, with the reason in the context's message. */
static inline clattn_status
tu_family_call(clattn_ctx *ctx, const clattn__family *F, const void *desc,
               const clattn_params *p, const cl_mem *bufs,
               const clattn_events *ev) {
  clattn__params values;
  char why[256];
  clattn_status st = clattn__params_in(F, p, &values, why, sizeof why);
  if (st != CLATTN_OK)
    return clattn__fail_outside(ctx, st, why);
  return clattn__call(ctx, F, desc, &values, bufs, ev);
}

/* clattn__model of F's desc with params p (NULL: automatic). */
static inline clattn_status tu_family_model(const clattn__family *F,
                                            const void *desc,
                                            const clattn_params *p,
                                            const clattn_profile *prof,
                                            clattn_prediction *out) {
  clattn__params values;
  clattn_status st =
      clattn__params_in(F, p, &values, out->errmsg, sizeof out->errmsg);
  return st ? st : clattn__model(F, desc, &values, NULL, prof, out);
}

#endif
