/* choice.h - internal: which parameters a call runs with, and why (the
 * order is clattn_choice_source's).  Generic over the kernel families. */
#ifndef CLATTN_CHOICE_H
#define CLATTN_CHOICE_H

#include "family/family.h"

/* Set up the context's parameter choice from opts and the environment
 * ($CLATTN_DB, $CLATTN_NO_TUNING, $CLATTN_PARAMS); a bad $CLATTN_PARAMS
 * is an error. */
clattn_status clattn__choice_init(clattn_ctx *ctx, const clattn_ctx_opts *o);
void clattn__choice_free(clattn_ctx *ctx);
/* Forget the loaded tuning rows (read again at the next call). */
void clattn__choice_reload(clattn_ctx *ctx);

/* The target the choice and the tuner plan F on: the device's, for a
 * family that may run CLBlast (F->clblast) once the context has settled
 * its GEMMs (ctx->gemm_prepare, which sets gemm_own_from and touches no
 * CLBlast parameter).  Errors only when out of host memory, recorded on
 * ctx. */
clattn_status clattn__choice_target(clattn_ctx *ctx, const clattn__family *F,
                                    clattn__target *t);

/* Choose desc's parameters and plan them (plan: F->plan_size bytes).
 * Errors only for the caller's or an override's invalid params, recorded
 * on ctx. */
clattn_status clattn__choose(clattn_ctx *ctx, const clattn__family *F,
                             const void *desc, clattn__choice *ch, void *plan);

/* The public form of a choice (the params as text) into the caller's
 * versioned out; CLATTN_ERR_INVALID_ARG for an unset out->size. */
clattn_status clattn__choice_out(const clattn__choice *ch, clattn_choice *out,
                                 char *why, size_t cap);

/* Open the context's tuning database for run-time lookups.  *db is NULL,
 * with the reason in why, when tuning is off, the file does not exist or
 * cannot be read (all CLATTN_OK: the defaults apply); an error only when
 * out of memory. */
clattn_status clattn__tuning_db_open(const clattn_ctx *ctx, clattn_db **db,
                                     char *why, size_t cap);

/* ---- params.c: the overrides */

/* The override of family index f, or NULL; from says where it came from. */
const clattn_params *clattn__override(const clattn_ctx *ctx, int f,
                                      const char **from);
/* Parse "fam: fields; fam: fields" into the context's overrides. */
clattn_status clattn__set_overrides(clattn_ctx *ctx, const char *spec,
                                    const char *from);

/* The choice's state of a context. */
struct clattn__choice_state {
  char *tuning_db;               /* tuning database path; NULL: none */
  int no_tuning;                 /* no_tuning or $CLATTN_NO_TUNING: no
                                    tuned or shipped rows */
  struct clattn__tuning *tuning; /* its rows, read at the first call */
  int *has_override;             /* per family of the registry */
  clattn_params *override;
  char (*override_from)[24]; /* "$CLATTN_PARAMS", ... */
};

#endif /* CLATTN_CHOICE_H */
