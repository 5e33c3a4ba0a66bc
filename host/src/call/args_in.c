/* args_in.c - a public function's versioned structs read into the
 * library's own at the boundary (call.h), so that the families, the choice
 * and the tuner only ever see whole structs of this library's version. */
#include "base/versioned.h"
#include "call/call.h"

#include <stdio.h>
#include <string.h>

/* The wait list a call hands on to OpenCL: a driver given NULL where it
 * expects events crashes rather than failing. */
static clattn_status check_wait_list(const clattn_events *ev, char *why,
                                     size_t cap) {
  if (ev->num_wait > 0 && ev->wait == NULL) {
    snprintf(why, cap, "clattn_events: num_wait is %u but wait is NULL",
             (unsigned)ev->num_wait);
    return CLATTN_ERR_INVALID_ARG;
  }
  for (cl_uint i = 0; i < ev->num_wait; i++)
    if (ev->wait[i] == NULL) {
      snprintf(why, cap, "clattn_events: wait[%u] is NULL", (unsigned)i);
      return CLATTN_ERR_INVALID_ARG;
    }
  return CLATTN_OK;
}

clattn_status clattn__args_in(clattn__public_args *own,
                              const clattn__family *F, const char *type,
                              const void **desc, size_t desc_size,
                              long params_offset, const clattn_events **ev,
                              char *why, size_t cap) {
  clattn_status rc;
  own->params = NULL;
  if (ev != NULL &&
      (rc = clattn__struct_in_ptr((const void **)ev, &own->ev, sizeof own->ev,
                                  "clattn_events", why, cap)))
    return rc;
  if (ev != NULL && *ev != NULL && (rc = check_wait_list(*ev, why, cap)))
    return rc;
  if (*desc == NULL)
    return CLATTN_OK;
  if ((rc = clattn__struct_in(own->desc, desc_size, *desc, type, why, cap)))
    return rc;
  *desc = own->desc;
  if (params_offset == CLATTN__NO_PARAMS)
    return CLATTN_OK;
  const void **params = (const void **)(own->desc + params_offset);
  clattn_params pub;
  if ((rc = clattn__struct_in_ptr(params, &pub, sizeof pub, "clattn_params",
                                  why, cap)))
    return rc;
  const int given = *params != NULL;
  *params = NULL; /* the library reads the values, never the pointer */
  if (!given)
    return CLATTN_OK;
  if ((rc = clattn__params_in(F, &pub, &own->values, why, cap)))
    return rc;
  own->params = &own->values;
  return CLATTN_OK;
}

clattn_status clattn__ctx_args_in(clattn_ctx *ctx, clattn__public_args *own,
                                  const clattn__family *F, const char *type,
                                  const void **desc, size_t desc_size,
                                  long params_offset,
                                  const clattn_events **ev) {
  char why[256];
  own->params = NULL;
  if (clattn__ctx_check(ctx) != CLATTN_OK)
    return CLATTN_OK;
  clattn_status rc = clattn__args_in(own, F, type, desc, desc_size,
                                     params_offset, ev, why, sizeof why);
  return rc ? clattn__fail_outside(ctx, rc, why) : CLATTN_OK;
}

clattn_status clattn__ctx_struct_in(clattn_ctx *ctx, const void **p, void *own,
                                    size_t size, const char *type) {
  char why[256];
  if (clattn__ctx_check(ctx) != CLATTN_OK)
    return CLATTN_OK;
  clattn_status rc = clattn__struct_in_ptr(p, own, size, type, why, sizeof why);
  return rc ? clattn__fail_outside(ctx, rc, why) : CLATTN_OK;
}
