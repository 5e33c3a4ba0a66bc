/* shape_api.c - the registry through the public API: families by name and
 * calls given as shape text, which `clattn tune`, `explain` and `model`
 * use without naming a family. */
#include "base/versioned.h"
#include "call/call.h"
#include "tune/tune.h"

#include <stdio.h>
#include <string.h>

int clattn_family_count(void) { return clattn__family_count(); }

const char *clattn_family_name(int i) {
  const clattn__family *f = clattn__family_at(i);
  return f ? f->name : NULL;
}

int clattn_family_find(const char *name) {
  return clattn__family_index(clattn__family_find(name));
}

const char *clattn_family_summary(int i) {
  const clattn__family *f = clattn__family_at(i);
  return f ? f->summary : NULL;
}

const char *clattn_family_standard_shape(int i, int j) {
  const clattn__family *f = clattn__family_at(i);
  if (f == NULL || f->standard_shapes == NULL || j < 0)
    return NULL;
  for (int k = 0; k < j; k++)
    if (f->standard_shapes[k] == NULL)
      return NULL;
  return f->standard_shapes[j];
}

const char *clattn_family_bench_shape(int i, int j) {
  const clattn__family *f = clattn__family_at(i);
  if (f == NULL || f->bench_shapes == NULL)
    return clattn_family_standard_shape(i, j);
  if (j < 0)
    return NULL;
  for (int k = 0; k < j; k++)
    if (f->bench_shapes[k] == NULL)
      return NULL;
  return f->bench_shapes[j];
}

const char *clattn_family_shape_keys(int i) {
  const clattn__family *f = clattn__family_at(i);
  return f ? f->shape_keys : NULL;
}

clattn_status clattn_family_tunable(int i, int j, clattn_tunable *out) {
  const clattn__family *f = clattn__family_at(i);
  char why[128];
  if (out == NULL)
    return CLATTN_ERR_INVALID_ARG;
  if (f == NULL || j < 0 || j >= f->ntunables)
    return CLATTN_ERR_NOT_FOUND;
  const clattn__tunable *t = &f->tunables[j];
  const clattn_tunable own = {.size = sizeof own,
                              .name = t->name,
                              .min = t->min,
                              .max = t->max,
                              .automatic = t->automatic,
                              .meaning = t->meaning};
  return clattn__struct_out(out, &own, sizeof own, "clattn_tunable", why,
                            sizeof why);
}

clattn_status clattn__shape_parse(const char *family, const char *shape,
                                  const clattn_params *params,
                                  const clattn__family **F, void *desc,
                                  clattn__params *values, char *why,
                                  size_t cap) {
  memset(values, 0, sizeof *values);
  *F = clattn__family_find(family);
  if (*F == NULL) {
    int n = snprintf(why, cap, "no kernel family \"%.40s\" (families:",
                     family ? family : "(null)");
    for (int i = 0; i < clattn__family_count() && n > 0 && (size_t)n < cap; i++)
      n +=
          snprintf(why + n, cap - (size_t)n, " %s", clattn__family_at(i)->name);
    if (n > 0 && (size_t)n < cap)
      snprintf(why + n, cap - (size_t)n, ")");
    return CLATTN_ERR_INVALID_ARG;
  }
  if (shape == NULL) {
    snprintf(why, cap, "shape is NULL");
    return CLATTN_ERR_INVALID_ARG;
  }
  clattn_status rc = (*F)->parse_shape(shape, desc, why, cap);
  if (rc == CLATTN_OK)
    rc = clattn__params_in(*F, params, values, why, cap);
  return rc;
}

static clattn_status tune_shape_unlocked(clattn_ctx *ctx, clattn_db *db,
                                         const char *family, const char *shape,
                                         const clattn_tune_opts *opts,
                                         clattn_tune_result *out) {
  _Alignas(16) unsigned char d[CLATTN__DESC_MAX];
  const clattn__family *F;
  clattn__params none;
  char why[256];
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  if ((rc = clattn__shape_parse(family, shape, NULL, &F, d, &none, why,
                                sizeof why)))
    return clattn__fail(ctx, rc, "%s", why);
  return clattn__tune(ctx, db, F, d, opts, out);
}

static clattn_status explain_shape_unlocked(clattn_ctx *ctx, const char *family,
                                            const char *shape,
                                            const clattn_params *params,
                                            clattn_choice *out) {
  _Alignas(16) unsigned char d[CLATTN__DESC_MAX];
  clattn_params own;
  clattn__params values;
  const clattn__family *F;
  char why[256];
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  if ((rc = clattn__struct_in_ptr((const void **)&params, &own, sizeof own,
                                  "clattn_params", why, sizeof why)) ||
      (rc = clattn__shape_parse(family, shape, params, &F, d, &values, why,
                                sizeof why)))
    return clattn__fail(ctx, rc, "%s", why);
  return clattn__explain_public(ctx, F, d, &values, out);
}

clattn_status clattn_model_shape(const char *family, const char *shape,
                                 const clattn_params *params,
                                 const clattn_profile *prof,
                                 clattn_prediction *out) {
  _Alignas(16) unsigned char d[CLATTN__DESC_MAX];
  clattn_params own_params;
  clattn__params values;
  clattn_profile own_prof;
  clattn_prediction own;
  const clattn__family *F;
  clattn_status rc = clattn__model_in(&prof, &own_prof, out, &own);
  if (rc == CLATTN_OK)
    rc = clattn__struct_in_ptr((const void **)&params, &own_params,
                               sizeof own_params, "clattn_params", own.errmsg,
                               sizeof own.errmsg);
  if (rc == CLATTN_OK)
    rc = clattn__shape_parse(family, shape, params, &F, d, &values,
                             own.errmsg, sizeof own.errmsg);
  if (rc == CLATTN_OK)
    rc = clattn__model(F, d, &values, NULL, prof, &own);
  return clattn__model_out(rc, &own, out);
}

clattn_status clattn_tune_shape(clattn_ctx *ctx, clattn_db *db,
                                const char *family, const char *shape,
                                const clattn_tune_opts *opts,
                                clattn_tune_result *out) {
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  clattn_status rc = tune_shape_unlocked(ctx, db, family, shape, opts, out);
  clattn__ctx_leave(locked);
  return rc;
}

clattn_status clattn_explain_shape(clattn_ctx *ctx, const char *family,
                                   const char *shape,
                                   const clattn_params *params,
                                   clattn_choice *out) {
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  clattn_status rc = explain_shape_unlocked(ctx, family, shape, params, out);
  clattn__ctx_leave(locked);
  return rc;
}
