/* tune.h - internal: the autotuner's engine, shared by every kernel family
 * (prefill, decode, CLBlast's xgemm).
 *
 * A space is a list of valid candidates, each a vector of values, one per
 * named dimension (pruned by the family before anything is compiled).  The
 * engine walks it with a strategy (exhaustive, random, annealing over
 * candidates that differ in one dimension, model order), asks the family
 * to evaluate each candidate, stores every result in the database as soon
 * as it exists, honours the budget, the candidate cap and the stop flag,
 * and reports progress.  Candidates already stored for the device and
 * shape class are reused (resume). */
#ifndef CLATTN_TUNE_H
#define CLATTN_TUNE_H

#include "base/clock.h"
#include "runtime/runtime.h"

#define CLATTN_TUNE_MAX_DIMS 20

typedef struct clattn__space {
  int ndims;
  const char *dim[CLATTN_TUNE_MAX_DIMS]; /* names, as in the params text */
  int n;        /* valid candidates */
  int cap;
  int *val;     /* n * ndims values */
  int pruned;   /* candidates rejected by constraints */
  int def;      /* index of the default candidate, -1 if none */
} clattn__space;

/* Add a candidate (values[ndims]); returns its index, -1 out of memory. */
int clattn__space_add(clattn__space *s, const int *values);
void clattn__space_free(clattn__space *s);
/* "name=value ..." of candidate i. */
void clattn__space_format(const clattn__space *s, int i, char *buf,
                          size_t cap);

/* What a family gives the engine. */
typedef struct clattn__tune_family {
  const char *kernel;      /* the tuning table's kernel column */
  char shape_class[96];
  void *self;
  /* Evaluate candidate `values`: check against the reference, then time.
   * Fill e->status ("ok", "wrong", "failed", "timeout", "slow"),
   * median_s, spread, max_err and message.  best_s (0: none yet) allows
   * an early abandon ("slow") of a clearly slower candidate; timeout_s
   * bounds the candidate's time.  A non-OK return aborts the whole run
   * (lost device, out of memory); a bad candidate is a status, not an
   * error. */
  clattn_status (*eval)(void *self, const int *values, double best_s,
                        double timeout_s, int repeats, clattn_tune_entry *e);
  /* Optional: one timed run of a candidate already evaluated "ok" (no
   * check), in seconds, or a negative value if it failed.  With it the
   * verification interleaves single runs of its candidates; without it,
   * whole evaluations. */
  double (*time1)(void *self, const int *values);
  /* Optional: the model's predicted time and its roofline bound
   * (max(t_memory, t_compute)) for candidate `values`; 0 if unknown. */
  int (*predict)(void *self, const int *values, double *t_pred,
                 double *t_roof);
  /* Optional, with predict: time the device's bandwidth now and rescale
   * the profile predict uses (a shared machine's bandwidth drifts, and a
   * stored profile of a slower moment makes the roofline stop early);
   * 0 when the predictions did not change.  The search calls it before
   * its first prediction and again before it stops at the roofline. */
  int (*refresh)(void *self);
} clattn__tune_family;

/* Run a search.  fp: the device's tuning identity (fingerprint, name,
 * vendor, arch, driver; the rest of the entry is filled per candidate). */
clattn_status clattn__tune_run(clattn_ctx *ctx, clattn_db *db,
                               const clattn__space *s,
                               const clattn__tune_family *f,
                               const clattn_tune_entry *fp,
                               const clattn_tune_opts *opts,
                               clattn_tune_result *out);

/* The device identity rows are stored under (from the reported profile). */
clattn_status clattn__tune_identity(clattn_ctx *ctx, clattn_tune_entry *fp);

/* Was row e measured by its kernel's current tuning method
 * (clattn_tune_method)?  Rows that were not are neither reused by a tuning
 * run nor used at run time. */
int clattn__tune_row_current(const clattn_tune_entry *e);

/* The spaces of the fused kernels (tune_kernels.c): every valid
 * clattn_params candidate for d on the target (dims: clattn_params' fields,
 * clattn__param_names, the order of clattn_params_format), the default
 * first. */
clattn_status clattn__space_prefill(const clattn__target *t,
                                    const clattn_attn_desc *d,
                                    clattn__space *s);
clattn_status clattn__space_decode(const clattn__target *t,
                                   const clattn_decode_desc *d,
                                   clattn__space *s);
/* Candidate i of such a space as params. */
clattn_params clattn__space_params(const clattn__space *s, int i);

/* The model's time of a prefill (d NULL) or decode (d) call with params p
 * on prof, and its roofline bound max(t_memory, t_compute) (t_roof may be
 * NULL); 0 when the model cannot predict it. */
int clattn__predict(const clattn_profile *prof, const clattn_attn_desc *a,
                    const clattn_decode_desc *d, const clattn_params *p,
                    double *t_pred, double *t_roof);

#endif /* CLATTN_TUNE_H */
