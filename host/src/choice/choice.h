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
/* Forget the loaded tuning rows (read again at the next call) and the
 * choices made with them. */
void clattn__choice_reload(clattn_ctx *ctx);

/* The target the choice and the tuner plan F on: the device's, for a
 * family that may run CLBlast (F->clblast) once the context has settled
 * its GEMMs (ctx->gemm_prepare, which sets gemm_own_from and touches no
 * CLBlast parameter).  Errors only when out of host memory, recorded on
 * ctx. */
clattn_status clattn__choice_target(clattn_ctx *ctx, const clattn__family *F,
                                    clattn__target *t);

/* Choose desc's parameters (the caller's values p of the family's
 * tunables, NULL: none) and plan them: *out is the memo's entry of the
 * call (memo.c), found by a lookup or made by a search; plan receives a
 * copy of its plan (F->plan_size bytes) that the caller may change.  *out
 * stays as it is until the next choice on ctx.  Errors only for the
 * caller's or an override's invalid params, recorded on ctx (nothing is
 * memoised then). */
clattn_status clattn__choose(clattn_ctx *ctx, const clattn__family *F,
                             const void *desc, const clattn__params *p,
                             const clattn__memo_entry **out, void *plan);
/* clattn__choose in two steps, for the call path, which checks a call's
 * description and buffers between them: recall finds the memo's entry (and
 * copies its plan), else returns NULL with the key made; search then makes
 * and memoises the entry of that key. */
typedef struct clattn__memo_key clattn__memo_key; /* below (memo.c) */
const clattn__memo_entry *
clattn__choice_recall(clattn_ctx *ctx, const clattn__family *F,
                      const void *desc, const clattn__params *p,
                      clattn__memo_key *key, void *plan);
clattn_status clattn__choice_search(clattn_ctx *ctx, const clattn__family *F,
                                    const void *desc,
                                    const clattn__memo_key *key,
                                    const clattn__memo_entry **out, void *plan);

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
const clattn__params *clattn__override(const clattn_ctx *ctx, int f,
                                       const char **from);
/* Parse "fam: fields; fam: fields" into the context's overrides. */
clattn_status clattn__set_overrides(clattn_ctx *ctx, const char *spec,
                                    const char *from);

/* ---- memo.c: the choices a context made, by call */

typedef struct clattn__memo clattn__memo;

/* What a choice is memoised under: the family, the description, the
 * caller's values of its tunables (zeros: none), and their hash. */
struct clattn__memo_key {
  uint64_t hash;
  const clattn__family *fam;
  clattn__params caller;
  _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
};

/* A memo (NULL when out of memory) and its end. */
clattn__memo *clattn__memo_new(void);
void clattn__memo_free(clattn__memo *m);
/* Start a new generation: no earlier entry is found again. */
void clattn__memo_invalidate(clattn__memo *m);
/* The key of a call of F on desc. */
void clattn__memo_make_key(const clattn__family *F, const void *desc,
                           const clattn__params *caller, clattn__memo_key *k);
/* The entry of k in the current generation, its plan copied to plan; NULL
 * when there is none. */
const clattn__memo_entry *
clattn__memo_find(clattn__memo *m, const clattn__memo_key *k, void *plan);
/* Memoise the choice ch and plan of k, replacing an entry of ctx's memo m
 * (the threads' records of the replaced one keep its choice). */
const clattn__memo_entry *clattn__memo_put(clattn_ctx *ctx, clattn__memo *m,
                                           const clattn__memo_key *k,
                                           const clattn__choice *ch,
                                           const void *plan);
/* The lookups that found an entry and those that did not. */
void clattn__memo_counts(const clattn__memo *m, unsigned long long *hits,
                         unsigned long long *misses);
/* An entry's buffer specs (F->buffers of its description), which the call
 * path checks the call's buffers against. */
const clattn__buf_spec *clattn__memo_buffers(const clattn__memo_entry *e);
/* An entry's choice, as the search made it (why and shape class too). */
const clattn__choice *clattn__memo_choice(const clattn__memo_entry *e);
/* Record entry e on the calling thread's slot of ctx as its last call,
 * with the plan as it ran (resolved). */
void clattn__memo_record(clattn_ctx *ctx, const clattn__memo_entry *e,
                         clattn__params resolved);
/* The last call a thread slot recorded (its has_last set). */
void clattn__memo_last(const clattn__thread_slot *s, clattn__choice *out);

/* The choice's state of a context. */
struct clattn__choice_state {
  char *tuning_db;               /* tuning database path; NULL: none */
  int no_tuning;                 /* no_tuning or $CLATTN_NO_TUNING: no
                                    tuned or shipped rows */
  struct clattn__tuning *tuning; /* its rows, read at the first call */
  int *has_override;             /* per family of the registry */
  clattn__params *override;
  char (*override_from)[24]; /* "$CLATTN_PARAMS", ... */
  clattn__memo *memo;        /* the choices made, by call (memo.c) */
};

#endif /* CLATTN_CHOICE_H */
