/* bench_harness.c - paired rounds, batches, cold rotations and the
 * PyTorch peers of clattn-bench's sections (see bench_harness.h). */
#include "bench_harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The cache's length, set directly before each decode step. */
#include "layer/layer.h"

#ifndef CLATTN_BENCH_SRC
#define CLATTN_BENCH_SRC "bench"
#endif
#ifndef CLATTN_BENCH_BUILD
#define CLATTN_BENCH_BUILD "build/bench"
#endif

/* ------------------------------------------------------ paired rounds */

void rounds_init(bench *B, bench_rounds *R, const bench_side *sides, int nsides,
                 int n, int alternate, size_t copy_bytes) {
  memset(R, 0, sizeof *R);
  R->B = B;
  R->side = sides;
  R->nsides = nsides;
  R->n = n;
  R->alternate = alternate;
  R->t = xmalloc((size_t)nsides * n * sizeof *R->t);
  for (size_t i = 0; i < (size_t)nsides * n; i++)
    R->t[i] = NAN;
  R->stage = xmalloc((size_t)nsides * sizeof *R->stage);
  for (int s = 0; s < nsides; s++)
    R->stage[s] =
        sides[s].nstages > 0
            ? xmalloc((size_t)sides[s].nstages * n * sizeof *R->stage[s])
            : NULL;
  if (copy_bytes > 0) {
    CKA(B, clattn_copy_ref_create(B->ctx, copy_bytes, &R->ref));
    R->gbs = xmalloc((size_t)n * sizeof *R->gbs);
  }
}

void rounds_free(bench_rounds *R) {
  clattn_copy_ref_destroy(R->ref);
  for (int s = 0; s < R->nsides; s++)
    free(R->stage[s]);
  free(R->stage);
  free(R->t);
  free(R->gbs);
  memset(R, 0, sizeof *R);
}

/* One timed batch of side s: seconds per unit. */
static double side_batch(bench *B, const bench_side *s) {
  const int calls = s->calls > 0 ? s->calls : 1;
  const int units = s->units > 0 ? s->units : 1;
  double t0;
  CK(clFinish(B->queue));
  t0 = clattn__now();
  for (int i = 0; i < calls; i++)
    if (s->run(B, s->arg) != 0)
      die("%s failed: %s", s->what, clattn_ctx_errmsg(B->ctx));
  CK(clFinish(B->queue));
  return (clattn__now() - t0) / ((double)calls * units);
}

void rounds_run(bench_rounds *R, int first, int count) {
  bench *B = R->B;
  for (int r = first; r < first + count; r++) {
    double g = 0.0;
    if (R->ref != NULL) {
      CKA(B, clattn_copy_ref_run(R->ref, &g));
      if (r >= 0)
        R->gbs[r] = g;
    }
    for (int i = 0; i < R->nsides; i++) {
      const int s = R->alternate && r % 2 != 0 ? R->nsides - 1 - i : i;
      const bench_side *sd = &R->side[s];
      double ts;
      if (sd->run == NULL)
        continue;
      ts = side_batch(B, sd);
      if (r < 0)
        continue;
      R->t[s * R->n + r] = ts;
      for (int j = 0; j < sd->nstages; j++)
        R->stage[s][j * R->n + r] = sd->stages[j];
    }
  }
}

/* The median of v[0..n) without reordering v. */
static double median_of(const double *v, int n) {
  double *c = xmalloc((size_t)n * sizeof *c), m;
  memcpy(c, v, (size_t)n * sizeof *c);
  m = clattn__median(c, n);
  free(c);
  return m;
}

double rounds_time(const bench_rounds *R, int side) {
  return median_of(R->t + (size_t)side * R->n, R->n);
}

double rounds_ratio(const bench_rounds *R, int num, int den) {
  double *q = xmalloc((size_t)R->n * sizeof *q), m;
  for (int r = 0; r < R->n; r++)
    q[r] = R->t[num * R->n + r] / R->t[den * R->n + r];
  m = clattn__median(q, R->n);
  free(q);
  return m;
}

double rounds_of_copy(const bench_rounds *R, int side, double bytes) {
  double *q = xmalloc((size_t)R->n * sizeof *q), m;
  for (int r = 0; r < R->n; r++)
    q[r] = bytes / R->t[side * R->n + r] / (R->gbs[r] * 1e9);
  m = clattn__median(q, R->n);
  free(q);
  return m;
}

double rounds_copy_gbs(const bench_rounds *R) {
  return median_of(R->gbs, R->n);
}

double rounds_stage(const bench_rounds *R, int side, int j) {
  return median_of(R->stage[side] + (size_t)j * R->n, R->n);
}

int batch_calls(bench *B, const bench_side *s, int warm, int probe,
                double min_s) {
  bench_side w = *s;
  w.calls = warm;
  w.units = 1;
  side_batch(B, &w);
  w.calls = probe;
  return 1 + (int)(min_s / side_batch(B, &w));
}

/* ---------------------------------------------------- cold rotations */

int rotation_count(bench *B, size_t bytes) {
  const size_t target = cold_bytes(B);
  const int count = (int)((target + bytes - 1) / bytes);
  return count < 2 ? 2 : count;
}

void kv_rotation_create(bench *B, size_t bytes, kv_rotation *rot) {
  rot->count = rotation_count(B, 2 * bytes);
  rot->k = xmalloc((size_t)rot->count * sizeof *rot->k);
  rot->v = xmalloc((size_t)rot->count * sizeof *rot->v);
  for (int l = 0; l < rot->count; l++) {
    rot->k[l] = buf_random(B, bytes / sizeof(float), 1.0f, 100 + (unsigned)l);
    rot->v[l] = buf_random(B, bytes / sizeof(float), 1.0f, 200 + (unsigned)l);
  }
}

void kv_rotation_destroy(kv_rotation *rot) {
  for (int l = 0; l < rot->count; l++) {
    rel(&rot->k[l]);
    rel(&rot->v[l]);
  }
  free(rot->k);
  free(rot->v);
  memset(rot, 0, sizeof *rot);
}

int kv_pass_run(bench *B, void *arg) {
  const kv_pass *p = arg;
  for (int l = 0; l < p->kv->count; l++) {
    const int st = p->step(B, p->arg, p->kv->k[l], p->kv->v[l]);
    if (st != 0)
      return st;
  }
  return 0;
}

void own_layer_destroy(own_layer *L) {
  clattn_kv_cache_destroy(L->cache);
  clattn_layer_destroy(L->layer);
  for (int i = 0; i < L->nw; i++)
    rel(&L->w[i]);
  memset(L, 0, sizeof *L);
}

int layer_rotation_create(bench *B, size_t layer_bytes, layer_make_fn make,
                          void *arg, layer_rotation *rot, char *why,
                          size_t cap) {
  memset(rot, 0, sizeof *rot);
  rot->count = rotation_count(B, layer_bytes);
  rot->L = xmalloc((size_t)rot->count * sizeof *rot->L);
  memset(rot->L, 0, (size_t)rot->count * sizeof *rot->L);
  for (int i = 0; i < rot->count; i++) {
    clattn_status st = make(B, arg, 1000 + 10 * (unsigned)i, &rot->L[i]);
    if (st != CLATTN_OK) {
      snprintf(why, cap, "%s: %.150s", clattn_status_str(st),
               clattn_ctx_errmsg(B->ctx));
      layer_rotation_destroy(rot);
      return 1;
    }
  }
  CK(clFinish(B->queue));
  return 0;
}

void layer_rotation_destroy(layer_rotation *rot) {
  for (int i = 0; i < rot->count; i++)
    own_layer_destroy(&rot->L[i]);
  free(rot->L);
  memset(rot, 0, sizeof *rot);
}

int layer_rotation_step(bench *B, void *arg) {
  layer_rotation *rot = arg;
  (void)B;
  for (int i = 0; i < rot->count; i++) {
    clattn_status st;
    rot->L[i].cache->len = rot->len;
    st = clattn_layer_decode(rot->L[i].layer, rot->L[i].cache, rot->x, rot->y,
                             NULL);
    if (st != CLATTN_OK)
      return (int)st;
  }
  return 0;
}

int layer_prefill_run(bench *B, void *arg) {
  layer_prefill *a = arg;
  clattn_status st =
      clattn_layer_prefill(a->layer, NULL, 1, a->n, 1, a->x, a->y, NULL);
  (void)B;
  return st == CLATTN_OK ? 0 : (int)st;
}

/* ------------------------------------------------------------- peers */

/* Run the peer; its last output line that names "seconds" goes to line.
 * Nonzero, with the reason printed, when torch is unavailable. */
static int peer_run(const char *script, const char *args, char *line,
                    size_t cap) {
  char py[1024], cmd[2048], buf[1024] = "";
  const char *env = getenv("CLATTN_BENCH_PYTHON");
  FILE *f;
  int found = 0;
  line[0] = '\0';
  snprintf(py, sizeof py, "%s",
           env != NULL ? env : CLATTN_BENCH_BUILD "/peers-venv/bin/python");
  if (env == NULL && (f = fopen(py, "r")) == NULL) {
    printf("  peer: torch unavailable (no %s: run bench/peers/setup.sh)\n", py);
    return 1;
  } else if (env == NULL) {
    fclose(f);
  }
  snprintf(cmd, sizeof cmd,
           "%s " CLATTN_BENCH_SRC "/peers/%s --threads %d %s 2>/dev/null", py,
           script, PEER_THREADS, args);
  printf("  peer: %s\n", cmd);
  fflush(stdout);
  f = popen(cmd, "r");
  if (f == NULL) {
    printf("  peer: torch unavailable (cannot run it)\n");
    return 1;
  }
  while (fgets(buf, sizeof buf, f) != NULL)
    if (strstr(buf, "seconds\": ") != NULL) {
      snprintf(line, cap, "%s", buf);
      found = 1;
    }
  if (pclose(f) != 0 || !found) {
    buf[strcspn(buf, "\n")] = '\0';
    printf("  peer: torch unavailable (%s)\n", buf[0] ? buf : "no output");
    return 1;
  }
  return 0;
}

/* The number after "KEY": in a peer's JSON line; -1 when the key is
 * absent. */
static double peer_number(const char *line, const char *key) {
  char pattern[128];
  const char *p;
  snprintf(pattern, sizeof pattern, "\"%s\": ", key);
  p = strstr(line, pattern);
  return p != NULL ? atof(p + strlen(pattern)) : -1.0;
}

int peer_numbers(const char *script, const char *args, const char *const *keys,
                 int n, double *out) {
  char line[1024];
  int any = 0;
  for (int i = 0; i < n; i++)
    out[i] = -1.0;
  if (peer_run(script, args, line, sizeof line) != 0)
    return 1;
  for (int i = 0; i < n; i++) {
    out[i] = peer_number(line, keys[i]);
    any |= out[i] > 0;
  }
  if (!any) {
    line[strcspn(line, "\n")] = '\0';
    printf("  peer: torch unavailable (%s)\n", line);
    return 1;
  }
  return 0;
}
