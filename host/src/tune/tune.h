/* tune.h - internal: the autotuner's engine, shared by every kernel family
 * (prefill, decode, CLBlast's xgemm).
 *
 * A space (family/space.h) is a list of valid candidates, each a vector of
 * values, one per named dimension (pruned by the family before anything is
 * compiled).  The engine walks it with a strategy (exhaustive, random,
 * annealing over candidates that differ in one dimension, model order),
 * asks the family
 * to evaluate each candidate, stores every result in the database as soon
 * as it exists, honours the budget, the candidate cap and the stop flag,
 * and reports progress.  Candidates already stored for the device and
 * shape class are reused (resume). */
#ifndef CLATTN_TUNE_H
#define CLATTN_TUNE_H

#include "base/clock.h"
#include "family/family.h"

/* What a family gives the engine. */
typedef struct clattn__tune_family {
  const char *kernel; /* the tuning table's kernel column */
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
  int (*predict)(void *self, const int *values, double *t_pred, double *t_roof);
  /* Optional, with predict: time the device's bandwidth now and rescale
   * the profile predict uses (a shared machine's bandwidth drifts, and a
   * stored profile of a slower moment makes the roofline stop early);
   * 0 when the predictions did not change.  The search calls it before
   * its first prediction and again before it stops at the roofline. */
  int (*refresh)(void *self);
  /* clattn__now() when the tuning call began, so that its setup (the
   * harness's buffers and reference, a first compile) counts against the
   * budget; 0: when the search starts. */
  double started;
} clattn__tune_family;

/* Run a search.  fp: the device's tuning identity (fingerprint, name,
 * vendor, arch, driver; the rest of the entry is filled per candidate). */
clattn_status
clattn__tune_run(clattn_ctx *ctx, clattn_db *db, const clattn__space *s,
                 const clattn__tune_family *f, const clattn_tune_entry *fp,
                 const clattn_tune_opts *opts, clattn_tune_result *out);

/* The device identity rows are stored under (from the reported profile). */
/* A public tuning call: the caller's versioned options read and its result
 * written around c->run, which runs under the context's lock on the
 * library's own structs (out NULL when the caller's is). */
typedef struct clattn__tune_call clattn__tune_call;
struct clattn__tune_call {
  clattn_status (*run)(clattn_ctx *ctx, const clattn__tune_call *c,
                       const clattn_tune_opts *opts, clattn_tune_result *out);
  clattn_db *db;
  const clattn__family *F; /* the kernel families' */
  const void *desc;
  int m, n, k; /* Xgemm's */
};
clattn_status clattn__tune_public(clattn_ctx *ctx, const clattn__tune_call *c,
                                  const clattn_tune_opts *opts,
                                  clattn_tune_result *out);

clattn_status clattn__tune_identity(clattn_ctx *ctx, clattn_tune_entry *fp);

/* Tune family F's call desc on the context's device (harness.c): the
 * public clattn_tune_* functions and `clattn tune` come here. */
clattn_status clattn__tune(clattn_ctx *ctx, clattn_db *db,
                           const clattn__family *F, const void *desc,
                           const clattn_tune_opts *opts,
                           clattn_tune_result *out);
/* desc (CLATTN__DESC_MAX bytes) of family name's shape text, and the
 * public params (the library's whole struct, NULL: none) as its values
 * (zeros: none) (shape_api.c); why gets the reason of a failure
 * (CLATTN_ERR_INVALID_ARG for an unknown family, a NULL shape or a bad
 * params value, else the family's parse status). */
clattn_status clattn__shape_parse(const char *family, const char *shape,
                                  const clattn_params *params,
                                  const clattn__family **F, void *desc,
                                  clattn__params *values, char *why,
                                  size_t cap);

/* The tuner's measuring harness (harness.c), shared with the bench
 * (bench.c): the call's buffers from the family's specs with random
 * inputs, the cold ones rotated over copies larger than the last-level
 * cache, and the small check case with its plain-C reference. */
typedef struct clattn__harness clattn__harness;
/* Enqueue one call on bufs (the family's order), not finished. */
typedef clattn_status (*clattn__harness_run)(void *user, const cl_mem *bufs);

/* A harness for F's call desc (its params are the library's calls'; prof:
 * the cache size of the rotation, NULL: the device's). */
clattn_status clattn__harness_open(clattn_ctx *ctx, const clattn__family *F,
                                   const void *desc, const clattn_profile *prof,
                                   clattn__harness **out);
void clattn__harness_close(clattn__harness *H);
/* The library's call with params p (NULL: automatic) on the check case:
 * the largest error of its outputs against the reference, relative to
 * the reference's magnitude (INFINITY: a non-finite output). */
clattn_status clattn__harness_check(clattn__harness *H, const clattn__params *p,
                                    double *max_err);
/* One timed run: run on the next copies of the rotation, back to back,
 * finished once; *sec per call. */
clattn_status clattn__harness_time(clattn__harness *H, clattn__harness_run run,
                                   void *user, double *sec);
/* The same for the library's call with params p (NULL: automatic), and
 * that call enqueued on bufs. */
clattn_status clattn__harness_time_params(clattn__harness *H,
                                          const clattn__params *p,
                                          double *sec);
clattn_status clattn__harness_run_params(clattn__harness *H,
                                         const clattn__params *p,
                                         const cl_mem *bufs);
/* The elements of the call's OUT buffers, and their values (as float, in
 * buffer order, out holding clattn__harness_out_elems) after one run on
 * the first copy. */
size_t clattn__harness_out_elems(const clattn__harness *H);
clattn_status clattn__harness_output(clattn__harness *H,
                                     clattn__harness_run run, void *user,
                                     float *out);
/* The last-level cache the rotation covers, in bytes. */
size_t clattn__harness_cache_bytes(const clattn__harness *H);

#endif /* CLATTN_TUNE_H */
