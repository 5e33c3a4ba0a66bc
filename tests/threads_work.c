/* threads_work.c - the workers of tests/test_threads.c (Criterion) and
 * tests/threads_main.c (the ThreadSanitizer run, without Criterion, whose
 * forked test processes ThreadSanitizer does not support): several threads
 * on one clattn context, and each on its own (clattn.h, "Threads").
 *
 * Four threads each run, ITERS times: clattn_attention and clattn_decode
 * (every output against the plain-C reference, every status OK),
 * clattn_ctx_last_choice and clattn_explain_attention (the thread's own
 * shape class: the threads' head dims differ), a call that fails with a
 * message naming the thread's own heads_q, checked after the other
 * threads' calls had time to overwrite a shared message; then a layer and
 * its KV cache of the thread's own (a causal prefill, then decode steps)
 * against ref_layer.  The workers record failures, reported after the
 * join; they use no Criterion assert (util.c's pure helpers and
 * ref_alloc only).
 */
#include "threads_work.h"
#include "util.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITERS 6

typedef struct worker {
  int id;
  clattn_ctx *ctx; /* shared; NULL: the worker makes its own */
  int failures;
  char first[600]; /* the first failure */
} worker;

static void wfail(worker *w, const char *fmt, ...) {
  if (w->failures++ == 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->first, sizeof w->first, fmt, ap);
    va_end(ap);
  }
}

/* A device buffer holding `bytes` of host data p (p NULL: uninitialised). */
static cl_mem up(worker *w, const void *p, size_t bytes) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(clattn_ctx_cl_context(w->ctx),
                            CL_MEM_READ_WRITE | (p ? CL_MEM_COPY_HOST_PTR : 0),
                            bytes, (void *)p, &err);
  if (err != CL_SUCCESS) {
    wfail(w, "thread %d: clCreateBuffer: %d", w->id, (int)err);
    return NULL;
  }
  return m;
}

static int down(worker *w, cl_mem m, void *out, size_t bytes) {
  cl_int err = clEnqueueReadBuffer(clattn_ctx_queue(w->ctx), m, CL_TRUE, 0,
                                   bytes, out, 0, NULL, NULL);
  if (err != CL_SUCCESS)
    wfail(w, "thread %d: clEnqueueReadBuffer: %d", w->id, (int)err);
  return err == CL_SUCCESS;
}

static void release(cl_mem *m, int n) {
  for (int i = 0; i < n; i++)
    if (m[i] != NULL)
      clReleaseMemObject(m[i]);
}

static void check(worker *w, const char *what, int it, const float *got,
                  const float *ref, size_t n) {
  const tu_err e = tu_compare(got, ref, n);
  if (e.nonfinite > 0 || !(e.rel <= clattn__tolerance(CLATTN_F32)))
    wfail(w, "thread %d, %s, iteration %d: rel error %g, %zu non-finite", w->id,
          what, it, e.rel, e.nonfinite);
}

static int ok(worker *w, clattn_status st, const char *what, int it) {
  if (st != CLATTN_OK)
    wfail(w, "thread %d, %s, iteration %d: %s: %s", w->id, what, it,
          clattn_status_str(st), clattn_ctx_errmsg(w->ctx));
  return st == CLATTN_OK;
}

/* Attention, its choice, its explanation, a failing call's message. */
static void attention_round(worker *w, int it) {
  const int dk = 8 * (w->id + 1);
  clattn_attn_desc d = {.size = sizeof(clattn_attn_desc),
                        .batch = 2,
                        .n_q = 9,
                        .n_kv = 13,
                        .heads_q = 4,
                        .heads_kv = 2,
                        .head_dim_k = dk,
                        .head_dim_v = dk,
                        .dtype = CLATTN_F32,
                        .causal = it & 1};
  const size_t nq = 2 * 9 * 4 * (size_t)dk, nk = 2 * 13 * 2 * (size_t)dk;
  float *q = ref_alloc(nq * 4), *k = ref_alloc(nk * 4), *v = ref_alloc(nk * 4),
        *o = ref_alloc(nq * 4), *ref = ref_alloc(nq * 4);
  tu_rng r = tu_rng_seed(1000u * (unsigned)w->id + (unsigned)it);
  tu_fill(&r, q, nq, 1.0f);
  tu_fill(&r, k, nk, 1.0f);
  tu_fill(&r, v, nk, 1.0f);
  cl_mem m[4] = {up(w, q, nq * 4), up(w, k, nk * 4), up(w, v, nk * 4),
                 up(w, NULL, nq * 4)};
  if (!m[0] || !m[1] || !m[2] || !m[3])
    goto done;
  if (!ok(w, clattn_attention(w->ctx, &d, m[0], m[1], m[2], NULL, m[3], NULL),
          "clattn_attention", it))
    goto done;

  char want[96];
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  clattn_shape_class_attention(&d, want, sizeof want);
  if (ok(w, clattn_ctx_last_choice(w->ctx, &ch), "clattn_ctx_last_choice",
         it) &&
      strcmp(ch.shape_class, want) != 0)
    wfail(w, "thread %d: clattn_ctx_last_choice: \"%s\", its call was \"%s\"",
          w->id, ch.shape_class, want);
  if (ok(w, clattn_explain_attention(w->ctx, &d, &ch),
         "clattn_explain_attention", it) &&
      strcmp(ch.shape_class, want) != 0)
    wfail(w, "thread %d: clattn_explain_attention: \"%s\", asked \"%s\"", w->id,
          ch.shape_class, want);

  clattn_attn_desc bad = d;
  bad.heads_q = 1001 + 2 * w->id;
  char msg[64];
  snprintf(msg, sizeof msg, "heads_q (%d)", bad.heads_q);
  clattn_status st =
      clattn_attention(w->ctx, &bad, m[0], m[1], m[2], NULL, m[3], NULL);
  if (st != CLATTN_ERR_SHAPE)
    wfail(w, "thread %d: heads_q %d: %s, not CLATTN_ERR_SHAPE", w->id,
          bad.heads_q, clattn_status_str(st));

  /* the other threads call meanwhile */
  if (down(w, m[3], o, nq * 4)) {
    ref_attn a = {.b = 2,
                  .n = 9,
                  .m = 13,
                  .hq = 4,
                  .hkv = 2,
                  .dk = dk,
                  .dv = dk,
                  .scale = 1.0 / sqrt((double)dk),
                  .causal = d.causal};
    ref_attention(&a, q, k, v, ref);
    check(w, "clattn_attention", it, o, ref, nq);
  }
  if (strstr(clattn_ctx_errmsg(w->ctx), msg) == NULL)
    wfail(w,
          "thread %d: clattn_ctx_errmsg: \"%s\", its failed call's names "
          "\"%s\"",
          w->id, clattn_ctx_errmsg(w->ctx), msg);
done:
  release(m, 4);
  free(q);
  free(k);
  free(v);
  free(o);
  free(ref);
}

static void decode_round(worker *w, int it) {
  const int dk = 8 * (w->id + 1), cap = 16;
  clattn_decode_desc d = {.size = sizeof(clattn_decode_desc),
                          .batch = 2,
                          .capacity = cap,
                          .heads_q = 4,
                          .heads_kv = 2,
                          .head_dim_k = dk,
                          .head_dim_v = dk,
                          .dtype = CLATTN_F32,
                          .cache_layout = CLATTN_BSHD};
  const int lens[2] = {cap - it % 5, 5 + w->id};
  const size_t nq = 2 * 4 * (size_t)dk, nc = 2 * (size_t)cap * 2 * dk;
  float *q = ref_alloc(nq * 4), *kc = ref_alloc(nc * 4),
        *vc = ref_alloc(nc * 4), *o = ref_alloc(nq * 4),
        *ref = ref_alloc(nq * 4);
  tu_rng r = tu_rng_seed(5000u + 1000u * (unsigned)w->id + (unsigned)it);
  tu_fill(&r, q, nq, 1.0f);
  tu_fill(&r, kc, nc, 1.0f);
  tu_fill(&r, vc, nc, 1.0f);
  cl_mem m[5] = {up(w, q, nq * 4), up(w, kc, nc * 4), up(w, vc, nc * 4),
                 up(w, lens, sizeof lens), up(w, NULL, nq * 4)};
  if (m[0] && m[1] && m[2] && m[3] && m[4] &&
      ok(w, clattn_decode(w->ctx, &d, m[0], m[1], m[2], m[3], m[4], NULL),
         "clattn_decode", it) &&
      down(w, m[4], o, nq * 4)) {
    ref_decode(2, cap, 4, 2, dk, dk, 0, 1.0 / sqrt((double)dk), lens, q, kc, vc,
               ref);
    check(w, "clattn_decode", it, o, ref, nq);
  }
  release(m, 5);
  free(q);
  free(kc);
  free(vc);
  free(o);
  free(ref);
}

/* The thread's own layer and cache: prefill PRE positions, decode the
 * rest one at a time; the whole y against the causal reference. */
static void layer_round(worker *w) {
  enum { B = 1, N = 6, PRE = 3, D = 32, HQ = 4, HKV = 2, DK = 8 };
  const size_t nwq = (size_t)D * HQ * DK, nwk = (size_t)D * HKV * DK,
               nwo = (size_t)HQ * DK * D, nx = (size_t)B * N * D;
  float *wq = ref_alloc(nwq * 4), *wk = ref_alloc(nwk * 4),
        *wv = ref_alloc(nwk * 4), *wo = ref_alloc(nwo * 4),
        *x = ref_alloc(nx * 4), *y = ref_alloc(nx * 4),
        *ref = ref_alloc(nx * 4), *rows = ref_alloc(nx * 4);
  clattn_layer *layer = NULL;
  clattn_kv_cache *cache = NULL;
  cl_mem m[6] = {NULL};
  tu_rng r = tu_rng_seed(9000u + (unsigned)w->id);
  const float a = 1.7f / sqrtf((float)D);
  tu_fill(&r, wq, nwq, a);
  tu_fill(&r, wk, nwk, a);
  tu_fill(&r, wv, nwk, a);
  tu_fill(&r, wo, nwo, 1.7f / sqrtf((float)(HQ * DK)));
  tu_fill(&r, x, nx, 1.0f);
  m[0] = up(w, wq, nwq * 4);
  m[1] = up(w, wk, nwk * 4);
  m[2] = up(w, wv, nwk * 4);
  m[3] = up(w, wo, nwo * 4);
  if (!m[0] || !m[1] || !m[2] || !m[3])
    goto done;
  clattn_layer_desc d = {.size = sizeof(clattn_layer_desc),
                         .d_model = D,
                         .heads_q = HQ,
                         .heads_kv = HKV,
                         .head_dim_k = DK,
                         .head_dim_v = DK};
  if (!ok(w, clattn_layer_create(w->ctx, &d, m[0], m[1], m[2], m[3], &layer),
          "clattn_layer_create", 0) ||
      !ok(w, clattn_kv_cache_create(layer, B, N, &cache),
          "clattn_kv_cache_create", 0))
    goto done;
  tu_rows_get(x, B, N, D, 0, PRE, rows);
  if (!(m[4] = up(w, rows, (size_t)B * PRE * D * 4)) ||
      !(m[5] = up(w, NULL, (size_t)B * PRE * D * 4)) ||
      !ok(w, clattn_layer_prefill(layer, cache, B, PRE, 1, m[4], m[5], NULL),
          "clattn_layer_prefill", 0) ||
      !down(w, m[5], rows, (size_t)B * PRE * D * 4))
    goto done;
  tu_rows_put(y, B, N, D, 0, PRE, rows);
  for (int t = PRE; t < N; t++) {
    release(&m[4], 2);
    m[4] = m[5] = NULL;
    tu_rows_get(x, B, N, D, t, 1, rows);
    if (!(m[4] = up(w, rows, (size_t)B * D * 4)) ||
        !(m[5] = up(w, NULL, (size_t)B * D * 4)) ||
        !ok(w, clattn_layer_decode(layer, cache, m[4], m[5], NULL),
            "clattn_layer_decode", t) ||
        !down(w, m[5], rows, (size_t)B * D * 4))
      goto done;
    tu_rows_put(y, B, N, D, t, 1, rows);
  }
  if (clattn_kv_cache_len(cache) != N)
    wfail(w, "thread %d: the cache holds %d positions, not %d", w->id,
          clattn_kv_cache_len(cache), N);
  ref_layer(B, N, D, HQ, HKV, DK, DK, 1.0 / sqrt((double)DK), 1, x, wq, wk, wv,
            wo, ref);
  check(w, "layer prefill + decode", 0, y, ref, nx);
done:
  clattn_kv_cache_destroy(cache);
  clattn_layer_destroy(layer);
  release(m, 6);
  free(wq);
  free(wk);
  free(wv);
  free(wo);
  free(x);
  free(y);
  free(ref);
  free(rows);
}

static void *work(void *arg) {
  worker *w = arg;
  const int own = w->ctx == NULL;
  if (own) {
    clattn_status st = clattn_ctx_create(NULL, &w->ctx);
    if (st != CLATTN_OK) {
      wfail(w, "thread %d: clattn_ctx_create: %s: %s", w->id,
            clattn_status_str(st), clattn_ctx_errmsg(NULL));
      return NULL;
    }
  }
  for (int it = 0; it < ITERS; it++) {
    attention_round(w, it);
    decode_round(w, it);
  }
  layer_round(w);
  if (own)
    clattn_ctx_destroy(w->ctx);
  return NULL;
}

int tw_run(clattn_ctx *ctx, char *first, size_t cap) {
  worker w[TW_THREADS];
  pthread_t th[TW_THREADS];
  int started = 0, failures = 0;
  first[0] = '\0';
  for (; started < TW_THREADS; started++) {
    memset(&w[started], 0, sizeof w[started]);
    w[started].id = started;
    w[started].ctx = ctx;
    if (pthread_create(&th[started], NULL, work, &w[started]) != 0) {
      snprintf(first, cap, "pthread_create failed");
      failures++;
      break;
    }
  }
  for (int i = 0; i < started; i++) {
    if (pthread_join(th[i], NULL) != 0) {
      snprintf(first, cap, "pthread_join failed");
      failures++;
      continue;
    }
    if (w[i].failures && first[0] == '\0')
      snprintf(first, cap, "%s", w[i].first);
    failures += w[i].failures;
  }
  return failures;
}
