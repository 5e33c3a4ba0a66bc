/* frozen_app.c - an application built against clattn.h as it was when its
 * structs became versioned (the copy beside this file, never edited), run
 * against the current library: the library must read and write only the
 * bytes of the older structs (each is placed against an unreadable page, so
 * one byte more is a crash), default the fields they lack, and compute the
 * same results.  Plain C without Criterion: it includes no other header of
 * the project. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "clattn.h" /* this directory's frozen copy */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      failures++;                                                              \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                              \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
    }                                                                          \
  } while (0)

/* A page of bytes followed by one that cannot be read or written: a struct
 * of n bytes placed at its end has nothing readable after it. */
static void *against_guard(size_t n) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  unsigned char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED || mprotect(p + page, page, PROT_NONE) != 0) {
    printf("FAIL: mmap/mprotect\n");
    exit(1);
  }
  memset(p, 0, page);
  return p + page - n;
}

static float lcg(unsigned *s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static cl_mem buffer(cl_context c, const float *host, size_t n) {
  cl_int err;
  cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            n * sizeof(float), (void *)host, &err);
  if (err != CL_SUCCESS) {
    printf("FAIL: clCreateBuffer %d\n", err);
    exit(1);
  }
  return m;
}

/* Causal GQA attention of BSHD tensors in double precision. */
static void reference(int B, int N, int M, int H, int G, int D,
                      const float *q, const float *k, const float *v,
                      double *o) {
  const double scale = 1.0 / sqrt((double)D);
  for (int b = 0; b < B; b++)
    for (int i = 0; i < N; i++)
      for (int h = 0; h < H; h++) {
        const int g = h / (H / G), last = M - N + i;
        const float *qi = q + (((size_t)b * N + i) * H + h) * D;
        double mx = -INFINITY, sum = 0.0, acc[64] = {0};
        double *s = malloc((size_t)M * sizeof *s);
        for (int t = 0; t <= last; t++) {
          const float *kt = k + (((size_t)b * M + t) * G + g) * D;
          double dot = 0.0;
          for (int e = 0; e < D; e++)
            dot += (double)qi[e] * kt[e];
          s[t] = dot * scale;
          mx = s[t] > mx ? s[t] : mx;
        }
        for (int t = 0; t <= last; t++) {
          const float *vt = v + (((size_t)b * M + t) * G + g) * D;
          const double w = exp(s[t] - mx);
          sum += w;
          for (int e = 0; e < D; e++)
            acc[e] += w * vt[e];
        }
        for (int e = 0; e < D; e++)
          o[(((size_t)b * N + i) * H + h) * D + e] = acc[e] / sum;
        free(s);
      }
}

int main(void) {
  enum { B = 2, N = 7, M = 19, H = 4, G = 2, D = 16 };
  const size_t nq = (size_t)B * N * H * D, nkv = (size_t)B * M * G * D;
  float *q = malloc(nq * sizeof *q), *k = malloc(nkv * sizeof *k),
        *v = malloc(nkv * sizeof *v), *o = malloc(nq * sizeof *o);
  double *ref = malloc(nq * sizeof *ref);
  unsigned seed = 7;
  for (size_t i = 0; i < nq; i++)
    q[i] = lcg(&seed);
  for (size_t i = 0; i < nkv; i++)
    k[i] = lcg(&seed), v[i] = lcg(&seed);
  reference(B, N, M, H, G, D, q, k, v, ref);

  clattn_ctx_opts *opts = against_guard(sizeof *opts);
  opts->size = sizeof *opts;
  clattn_ctx *ctx = NULL;
  clattn_status st = clattn_ctx_create(opts, &ctx);
  if (st != CLATTN_OK) {
    printf("FAIL: clattn_ctx_create: %s\n", clattn_ctx_errmsg(NULL));
    return 1;
  }
  cl_context c = clattn_ctx_cl_context(ctx);
  cl_command_queue queue = clattn_ctx_queue(ctx);
  cl_mem bq = buffer(c, q, nq), bk = buffer(c, k, nkv), bv = buffer(c, v, nkv);
  for (size_t i = 0; i < nq; i++)
    o[i] = NAN;
  cl_mem bo = buffer(c, o, nq);

  clattn_attn_desc *d = against_guard(sizeof *d);
  *d = (clattn_attn_desc){.size = sizeof *d, .batch = B, .n_q = N,
                          .n_kv = M, .heads_q = H, .heads_kv = G,
                          .head_dim_k = D, .head_dim_v = D,
                          .dtype = CLATTN_F32, .causal = 1};
  clattn_events *ev = against_guard(sizeof *ev);
  cl_event done = NULL;
  ev->size = sizeof *ev;
  ev->out = &done;
  st = clattn_attention(ctx, d, bq, bk, bv, NULL, bo, ev);
  CHECK(st == CLATTN_OK, "clattn_attention: %s", clattn_ctx_errmsg(ctx));
  if (st == CLATTN_OK) {
    clWaitForEvents(1, &done);
    clReleaseEvent(done);
    clEnqueueReadBuffer(queue, bo, CL_TRUE, 0, nq * sizeof *o, o, 0, NULL,
                        NULL);
    double worst = 0.0;
    for (size_t i = 0; i < nq; i++) {
      const double e = fabs(o[i] - ref[i]);
      worst = e > worst || e != e ? e : worst;
    }
    CHECK(worst < 1e-4, "attention: largest error %g", worst);
  }

  /* Explain and the last call's choice write only the older struct. */
  clattn_choice *ch = against_guard(sizeof *ch);
  ch->size = sizeof *ch;
  st = clattn_explain_attention(ctx, d, ch);
  CHECK(st == CLATTN_OK && strncmp(ch->shape_class, "f32 k16 v16 g2", 14) == 0
            && strstr(ch->resolved, "variant=") != NULL,
        "explain: %d \"%s\" \"%s\"", (int)st, ch->shape_class, ch->resolved);
  memset(ch, 0, sizeof *ch);
  ch->size = sizeof *ch;
  st = clattn_ctx_last_choice(ctx, ch);
  CHECK(st == CLATTN_OK && ch->resolved[0] != '\0', "last choice: %d", st);
  clattn_cache_stats *cs = against_guard(sizeof *cs);
  cs->size = sizeof *cs;
  clattn_ctx_cache_stats(ctx, cs);
  CHECK(cs->size == sizeof *cs &&
            cs->memory_hits + cs->disk_hits + cs->source_builds > 0,
        "cache stats");

  /* The older params (no text field) against the guard page: their named
   * fields are the family's tunables of those names. */
  clattn_params *prm = against_guard(sizeof *prm);
  *prm = (clattn_params){.size = sizeof *prm, .variant = 1, .rows = 2,
                         .keys = 16};
  d->params = prm;
  memset(ch, 0, sizeof *ch);
  ch->size = sizeof *ch;
  st = clattn_explain_attention(ctx, d, ch);
  CHECK(st == CLATTN_OK && ch->source == CLATTN_CHOICE_CALLER &&
            strncmp(ch->resolved, "variant=1 rows=2 keys=16", 24) == 0,
        "older params: %d \"%s\" %s", (int)st, ch->resolved,
        clattn_ctx_errmsg(ctx));
  st = clattn_attention(ctx, d, bq, bk, bv, NULL, bo, NULL);
  CHECK(st == CLATTN_OK, "attention with older params: %s",
        clattn_ctx_errmsg(ctx));
  d->params = NULL;

  /* An unset size is refused with a message naming the struct. */
  clattn_attn_desc unset = *d;
  unset.size = 0;
  st = clattn_attention(ctx, &unset, bq, bk, bv, NULL, bo, NULL);
  CHECK(st == CLATTN_ERR_INVALID_ARG &&
            strstr(clattn_ctx_errmsg(ctx), "clattn_attn_desc.size") != NULL,
        "size 0: %d %s", (int)st, clattn_ctx_errmsg(ctx));

  /* A newer header's longer struct: its unknown fields zero are fine, one
   * set is refused rather than ignored. */
  struct {
    clattn_attn_desc d;
    int newer_field[64];
  } longer;
  memset(&longer, 0, sizeof longer);
  longer.d = *d;
  longer.d.size = sizeof longer;
  st = clattn_attention(ctx, &longer.d, bq, bk, bv, NULL, bo, NULL);
  CHECK(st == CLATTN_OK, "longer struct, zero tail: %s",
        clattn_ctx_errmsg(ctx));
  longer.newer_field[63] = 1;
  st = clattn_attention(ctx, &longer.d, bq, bk, bv, NULL, bo, NULL);
  CHECK(st == CLATTN_ERR_UNSUPPORTED, "longer struct, a field set: %d",
        (int)st);
  clFinish(queue);

  clReleaseMemObject(bq);
  clReleaseMemObject(bk);
  clReleaseMemObject(bv);
  clReleaseMemObject(bo);
  clattn_ctx_destroy(ctx);
  free(q), free(k), free(v), free(o), free(ref);
  printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
  return failures ? 1 : 0;
}
