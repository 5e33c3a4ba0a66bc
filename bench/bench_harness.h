/* bench_harness.h - how clattn-bench's sections time what they compare:
 * paired rounds (the sides of a comparison timed in turn, round by round,
 * with a copy timed beside each round as the bandwidth reference, and
 * each ratio the median of the rounds' ratios, so that a shared machine's
 * drift hits every side alike), batches of calls above the clock's grain,
 * inputs rotated over copies larger than the last-level cache (cold
 * caches), and the PyTorch peers.  The sections keep their shapes, their
 * implementations and their printing. */
#ifndef CLATTN_BENCH_HARNESS_H
#define CLATTN_BENCH_HARNESS_H

#include "bench_common.h"

/* ------------------------------------------------------ paired rounds */

/* One side of a comparison: a timed batch enqueues `calls` calls of run
 * (0: 1) between two clFinish, and keeps the seconds per unit, a call
 * counting `units` (a pass over a rotation of layers: the layers; 0: 1).
 * run NULL: the side sits out (its times are NAN).  A nonzero return
 * from run ends the program naming `what`.  With nstages > 0, stages
 * points at the run's own per-stage times of its last call, kept for
 * every round. */
typedef struct bench_side {
  const char *what;
  run_fn run;
  void *arg;
  int calls;
  int units;
  const double *stages;
  int nstages;
} bench_side;

/* The rounds of one comparison, set up by rounds_init; the medians below
 * read t and stage, and a round's copy figure is gbs[r]. */
typedef struct bench_rounds {
  bench *B;
  const bench_side *side;
  int nsides;
  int n;                /* the kept rounds */
  int alternate;        /* the sides' order reversed in every odd round */
  clattn_copy_ref *ref; /* the copy timed first in every round, or NULL */
  double *t;            /* t[side * n + r]: seconds per unit */
  double *gbs;          /* gbs[r]: the copy's (read+write) GB/s in round r */
  double **stage;       /* stage[side][j * n + r] */
} bench_rounds;

/* Rounds of the nsides sides (the array must outlive R), n kept; with
 * copy_bytes > 0 a copy of that size (clattn_copy_ref) opens every
 * round. */
void rounds_init(bench *B, bench_rounds *R, const bench_side *sides, int nsides,
                 int n, int alternate, size_t copy_bytes);
/* Rounds first .. first + count - 1 in turn; a negative index is a
 * warm-up round, run like the others and not kept. */
void rounds_run(bench_rounds *R, int first, int count);
void rounds_free(bench_rounds *R);

/* The median over the rounds of the side's seconds per unit. */
double rounds_time(const bench_rounds *R, int side);
/* The median over the rounds of side num's time over side den's. */
double rounds_ratio(const bench_rounds *R, int num, int den);
/* The median over the rounds of the side's GB/s (bytes per unit over its
 * time) as a fraction of the round's copy GB/s. */
double rounds_of_copy(const bench_rounds *R, int side, double bytes);
/* The median of the rounds' copy GB/s. */
double rounds_copy_gbs(const bench_rounds *R);
/* The median over the rounds of stage j of the side's last call. */
double rounds_stage(const bench_rounds *R, int side, int j);

/* Calls of run a timed batch needs to last at least min_s: `warm` calls
 * finished first (programs built, caches filled), then the mean of
 * `probe` timed calls. */
int batch_calls(bench *B, const bench_side *s, int warm, int probe,
                double min_s);

/* ---------------------------------------------------- cold rotations */

/* Copies of `bytes` each that together exceed cold_bytes(B), so that no
 * step finds its inputs still in the last-level cache; at least 2. */
int rotation_count(bench *B, size_t bytes);

/* K/V caches of `bytes` each (K and V alike), rotation_count(B, 2 bytes)
 * pairs, random (as the probe's buffers, so that no memory compression
 * flatters a step). */
typedef struct kv_rotation {
  int count;
  cl_mem *k, *v;
} kv_rotation;

void kv_rotation_create(bench *B, size_t bytes, kv_rotation *rot);
void kv_rotation_destroy(kv_rotation *rot);

/* One decode step of the caller's kind on one K/V pair. */
typedef int (*kv_step_fn)(bench *B, void *arg, cl_mem k, cl_mem v);

/* A pass: step on every pair of the rotation in turn; run_fn over a
 * kv_pass (a side's units: kv->count). */
typedef struct kv_pass {
  const kv_rotation *kv;
  kv_step_fn step;
  void *arg;
} kv_pass;

int kv_pass_run(bench *B, void *pass);

/* A layer with weights of its own and, for decode, a cache. */
typedef struct own_layer {
  clattn_layer *layer;
  cl_mem w[6];
  int nw;
  clattn_kv_cache *cache;
} own_layer;

void own_layer_destroy(own_layer *L);

/* Makes a layer of the caller's kind from `seed`, its cache included; a
 * status other than CLATTN_OK (the message in the context) when the
 * library refuses. */
typedef clattn_status (*layer_make_fn)(bench *B, void *arg, unsigned seed,
                                       own_layer *L);

/* The layers a cold decode side rotates over, each with its weights and
 * its cache; a step attends to `len` cached positions, the length set
 * directly before each step (a step's time does not depend on the cached
 * values, and prefills to fill every cache would take minutes). */
typedef struct layer_rotation {
  int count;
  own_layer *L;
  int len;
  cl_mem x, y; /* the step's input and output rows (borrowed) */
} layer_rotation;

/* rotation_count(B, layer_bytes) layers made by make (seeds 1000 + 10 i)
 * into rot, whose len, x and y the caller sets.  Nonzero with the reason
 * in why (the layers made so far destroyed) when the library refuses. */
int layer_rotation_create(bench *B, size_t layer_bytes, layer_make_fn make,
                          void *arg, layer_rotation *rot, char *why,
                          size_t cap);
void layer_rotation_destroy(layer_rotation *rot);
/* run_fn over a layer_rotation: one decode step on each of its layers. */
int layer_rotation_step(bench *B, void *rot);

/* run_fn over a layer_prefill: a causal prefill of n positions through
 * layer without a cache. */
typedef struct layer_prefill {
  clattn_layer *layer;
  int n;
  cl_mem x, y;
} layer_prefill;

int layer_prefill_run(bench *B, void *arg);

/* ------------------------------------------------------------- peers */

/* PoCL's worker threads: the PyTorch peers get as many (machine.md). */
#define PEER_THREADS 2

/* Run a PyTorch peer, bench/peers/SCRIPT, with "--threads PEER_THREADS
 * ARGS" in the venv of peers/setup.sh (or $CLATTN_BENCH_PYTHON), printing
 * the command; the number after each of the n keys in its JSON line goes
 * to out (-1 where absent).  Nonzero, with the reason printed, when torch
 * is unavailable or the line holds none of the keys. */
int peer_numbers(const char *script, const char *args, const char *const *keys,
                 int n, double *out);

#endif
