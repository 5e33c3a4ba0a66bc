/* family.h - internal: the kernel-family interface and the registry.
 *
 * A kernel family (prefill, decode, the KV append, ...) is one module that
 * fills one clattn__family and is listed in registry.c.  The generic call
 * path (call/), the parameter choice (choice/), the tuner (tune/), the
 * model's dispatch and the CLI only ever hold a family pointer: they never
 * name a family.  A family's operations are pure functions of its
 * description (a public desc struct, or a small internal one) except
 * `enqueue`, the only one that touches OpenCL.
 *
 * Buffers: a call passes its cl_mem buffers as one array in the order of
 * the family's buffer specs (clattn__buf_spec).  The tuner's harness
 * creates them from the same specs, fills the inputs with random data,
 * runs the family on a small case and compares every output with the
 * family's plain-C reference. */
#ifndef CLATTN_FAMILY_H
#define CLATTN_FAMILY_H

#include "family/attn_opts.h"
#include "family/plan.h"
#include "family/space.h"
#include "family/tunables.h"
#include "runtime/runtime.h"

/* Room enough for any family's description and plan. */
enum { CLATTN__DESC_MAX = 192, CLATTN__PLAN_MAX = 128, CLATTN__MAX_BUFS = 10 };

/* What a buffer is to the call, for the checks and the tuner's harness. */
typedef enum clattn__buf_role {
  CLATTN__BUF_IN,    /* read: random data in the harness */
  CLATTN__BUF_OUT,   /* written: compared with the reference */
  CLATTN__BUF_INOUT, /* read and written in place (a cache) */
  CLATTN__BUF_INTS   /* int32: per sequence (lengths, positions), or a
                        table the family fills (fill_ints) */
} clattn__buf_role;

typedef struct clattn__buf_spec {
  const char *name; /* as in messages: "q", "k_cache", "kv_lens" */
  clattn__buf_role role;
  size_t elems;       /* elements the call needs (0 when sizes overflow) */
  clattn_dtype dtype; /* storage type (INTS: int32, dtype unused) */
  int optional;       /* may be NULL (then the kernel uses its default) */
  int cold;           /* the tuner rotates copies of it larger than the
                         last-level cache, so timed calls read it cold */
} clattn__buf_spec;

/* A small case the tuner checks every candidate on: the description of a
 * call with odd sizes that divide no tile, and its INTS buffers' values
 * (one per sequence), which the timed call does not use (it passes NULL
 * for optional INTS and the family's full values otherwise). */
typedef struct clattn__check_case {
  _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
  int ints[8];
} clattn__check_case;

/* A family's own baseline of `clattn bench` (tune/bench.c): another way
 * to compute the same call on the same buffers (family.h's order), timed
 * beside the library's choice; "copy" is every family's and lives in
 * bench.c. */
typedef struct clattn__baseline {
  const char *name; /* the bench row's impl: "unfused", "clblast" */
  /* Prepare for desc (a work buffer, a program) into *state (may stay
   * NULL).  CLATTN_ERR_UNSUPPORTED with the reason in the context's message:
   * the baseline cannot compute this call (no row, not an error). */
  clattn_status (*create)(clattn_ctx *ctx, const void *desc, void **state);
  /* Enqueue one call on bufs (not finished). */
  clattn_status (*enqueue)(clattn_ctx *ctx, const void *desc, void *state,
                           const cl_mem *bufs);
  void (*destroy)(void *state); /* NULL state: nothing */
} clattn__baseline;

typedef struct clattn__family {
  /* The database's kernel column, the override key of $CLATTN_PARAMS and
   * the CLI's word ("prefill", "decode", "append"). */
  const char *name;
  const char *summary; /* one line for `clattn` listings */
  const char *api;     /* the public function, for messages */
  const char *source;  /* its kernel source (runtime's source table) */
  size_t desc_size, plan_size;
  int nbufs;
  int tune_method; /* clattn_tune_method of its rows */
  /* Nonzero: a plan may run CLBlast's GEMM, so the choice settles the
   * context's GEMMs before planning (clattn__choice_target). */
  int clblast;
  /* Standard shapes of `clattn tune` (NULL-terminated, shape text as
   * parse_shape reads it); NULL: the family is not tuned by default. */
  const char *const *standard_shapes;
  /* (optional) The shapes of `clattn bench` (NULL-terminated); NULL: the
   * standard shapes. */
  const char *const *bench_shapes;
  /* (optional) Its baselines of `clattn bench` beside "copy"
   * (NULL-terminated); NULL: none. */
  const clattn__baseline *const *baselines;

  /* ---- the description */
  /* Validate a call's description: shapes, fields, sizes that overflow. */
  clattn_status (*check)(const void *desc, char *why, size_t cap);
  /* The buffer specs of a valid description (nbufs of them). */
  void (*buffers)(const void *desc, clattn__buf_spec *out);
  /* The values of the INTS buffers of a full call (b per sequence), for
   * the tuner's timed runs of a non-optional INTS buffer. */
  int (*full_int)(const void *desc);
  /* (optional) The contents of INTS buffer `buf` (a block table, offsets)
   * from per-sequence values (check_case's ints; NULL: `full`, full_int's
   * value, for every sequence), into out (the buffer spec's elems).  NULL:
   * every element is its sequence's value (a buffer of batch elements). */
  void (*fill_ints)(const void *desc, int buf, const int *per_seq, int full,
                    int *out);
  /* (optional) Check the contents of the INTS buffers the kernels index
   * with: ints[i] is buffer i's host copy for an INTS buffer, NULL for the
   * others.  The call path reads them back (one blocking read after the
   * wait list) and calls this before anything is enqueued, unless
   * ints_unchecked(desc) says the caller waived it.  NULL: not checked. */
  clattn_status (*check_ints)(const void *desc, const int *const *ints,
                              char *why, size_t cap);
  int (*ints_unchecked)(const void *desc);
  /* The shape class: the key its tuning rows are stored under. */
  void (*shape_class)(const void *desc, char *buf, size_t cap);
  /* The keys parse_shape reads, "batch seq ..." (clattn_family_shape_keys),
   * and a description from "key=value ..." text (the CLI's flags, the
   * standard shapes); why says which key is wrong. */
  const char *shape_keys;
  clattn_status (*parse_shape)(const char *text, void *desc, char *why,
                               size_t cap);
  /* (optional) Set the attention options (attn_opts.h) of a description
   * that holds them; NULL: it holds none.  For code that makes up
   * descriptions field by field (the fuzzer), which must not make up the
   * options' array pointers. */
  void (*set_options)(void *desc, clattn__opts o);
  /* Its tunables (tunables.h), declared in its room: the names of its
   * params text, the dimensions of its tuning space.  None: NULL, 0. */
  const clattn__tunable *tunables;
  int ntunables;

  /* ---- planning (pure) */
  /* Resolve desc with the values p of its tunables (NULL: automatic) on
   * the target into a plan; an invalid value is an error with the reason
   * in why.  The model predicts this plan. */
  clattn_status (*plan)(const clattn__target *t, const void *desc,
                        const clattn__params *p, void *plan, char *why,
                        size_t cap);
  /* (optional) Whether the plan fits the device (work-group size, local
   * memory); 0 with the reason in why if not.  NULL: always. */
  int (*fits)(const clattn__target *t, const void *desc, const void *plan,
              char *why, size_t cap);
  /* The plan as the values that give it, each set (one normal form: a
   * value a variant ignores is 0), the form of tuning candidates and of
   * clattn_choice.resolved; planning them again gives the same plan. */
  clattn__params (*resolved)(const void *plan);
  /* Every valid candidate on the target, the default first (space.h). */
  clattn_status (*space)(const clattn__target *t, const void *desc,
                         clattn__space *s);
  /* The model's costs of the plan's kernels (model/model.h), ints: the
   * host integers its public model call takes (the lengths; a ragged
   * call's offsets, both arrays one after the other) or NULL, the full
   * call; out is cleared by the caller and
   * finished by it (clattn__model_finish). */
  clattn_status (*cost)(const void *desc, const void *plan, const int *ints,
                        const clattn_profile *prof, clattn_prediction *out,
                        double *dram_reads);

  /* ---- running */
  /* Enqueue the plan's kernels.  The plan may change here (an automatic
   * work-group lowered to what the compiled kernel allows); the call path
   * records the plan as it is after this returns.  auto_wg: the caller
   * left the work-group to the library. */
  clattn_status (*enqueue)(clattn_ctx *ctx, const void *desc, void *plan,
                           int auto_wg, const cl_mem *bufs,
                           const clattn_events *ev);

  /* ---- checking */
  /* The small case for a call like desc (same head dims, dtype, mask,
   * layout). */
  void (*check_case)(const void *desc, clattn__check_case *c);
  /* The plain-C reference on host data: bufs[i] holds buffer i as float
   * (INTS as int), inputs filled; it writes the OUT and INOUT buffers. */
  void (*reference)(const void *desc, void *const *bufs);
} clattn__family;

/* The model's prediction of a call (model_call.c): the same validation, the
 * plan the library would choose on prof's target, the family's costs. */
clattn_status clattn__model(const clattn__family *F, const void *desc,
                            const clattn__params *p, const int *ints,
                            const clattn_profile *prof, clattn_prediction *out);

/* A public model call's versioned structs: the caller's profile read into
 * own_prof (*prof pointed at it) and the prediction made in own, then
 * written into the caller's out (its size set, else
 * CLATTN_ERR_INVALID_ARG) by clattn__model_out, which returns rc. */
clattn_status clattn__model_in(const clattn_profile **prof,
                               clattn_profile *own_prof,
                               const clattn_prediction *out,
                               clattn_prediction *own);
clattn_status clattn__model_out(clattn_status rc, const clattn_prediction *own,
                                clattn_prediction *out);

/* The model's time of desc with values p on prof, and its roofline bound
 * max(t_memory, t_compute) (t_roof may be NULL); 0 when the model cannot
 * predict it. */
int clattn__predict(const clattn__family *F, const void *desc,
                    const clattn__params *p, const clattn_profile *prof,
                    double *t_pred, double *t_roof);

/* Plan desc with values p on t and check that the plan fits the device
 * (space.c); the choice and the spaces plan candidates only through
 * this. */
clattn_status clattn__plan_params(const clattn__family *F,
                                  const clattn__target *t, const void *desc,
                                  const clattn__params *p, void *plan,
                                  char *why, size_t cap);

/* A bench baseline that runs another family F (baseline.c): the plan of
 * F's call desc on the context's device with no values (its automatic
 * choice, after F's check), made once; then each launch of it, from a copy
 * of that plan (a launch may narrow its work-group) with the automatic
 * work-group and no events. */
clattn_status clattn__baseline_plan(clattn_ctx *ctx, const clattn__family *F,
                                    const void *desc, void *plan, char *why,
                                    size_t cap);
clattn_status clattn__baseline_enqueue(clattn_ctx *ctx, const clattn__family *F,
                                       const void *desc, const void *plan,
                                       const cl_mem *bufs);

/* A family with no tunables (space.c): its plans resolve to no values, and
 * its space is F's one candidate, the default. */
clattn__params clattn__resolved_none(const void *plan);
clattn_status clattn__space_none(const clattn__family *F, clattn__space *s);

/* Plan values p for desc on t; add the resolved candidate to s if it fits
 * (space.c).  Returns its index, -1 if pruned, -2 out of memory. */
int clattn__space_try(const clattn__family *F, const clattn__target *t,
                      const void *desc, const clattn__params *p,
                      clattn__space *s);
/* The registry (registry.c): every family, in listing order. */
int clattn__family_count(void);
const clattn__family *clattn__family_at(int i);
/* By name, or by a former name (an alias, registry.c); NULL when none. */
const clattn__family *clattn__family_find(const char *name);
/* Its index in the registry (for per-family state such as overrides). */
int clattn__family_index(const clattn__family *f);

/* A family's table of tunables as its fields .tunables and .ntunables. */
#define CLATTN__TUNABLES(table)                                                \
  .tunables = (table), .ntunables = (int)(sizeof(table) / sizeof((table)[0]))

/* The families, defined in their rooms. */
extern const clattn__family clattn__family_prefill;
extern const clattn__family clattn__family_decode;
extern const clattn__family clattn__family_append;
extern const clattn__family clattn__family_talking_heads;
extern const clattn__family clattn__family_th_decode;
extern const clattn__family clattn__family_efficient;
extern const clattn__family clattn__family_efficient_decode;
extern const clattn__family clattn__family_efficient_append;
extern const clattn__family clattn__family_super_values;
extern const clattn__family clattn__family_cvmm;
extern const clattn__family clattn__family_projection;
extern const clattn__family clattn__family_paged_decode;
extern const clattn__family clattn__family_paged_prefill;
extern const clattn__family clattn__family_paged_append;
extern const clattn__family clattn__family_varlen;

#endif /* CLATTN_FAMILY_H */
