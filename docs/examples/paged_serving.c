/* paged_serving.c - a serving loop over a paged KV cache (docs/PAGED.md).
 *
 * The application owns one pool of pages (k_cache, v_cache) and a free list
 * of their indices.  Requests of different prompt and output lengths
 * arrive over time; each is admitted when a slot and enough pages are
 * free, its prompt is prefilled in chunks (clattn_paged_append then
 * clattn_paged_attention with n_q > 1), then it decodes one position a
 * step (the same two calls with n_q = 1, every decoding sequence in one
 * batch), and when it finishes its pages go back to the free list for the
 * next request.  The pool is smaller than the requests' pages together, so
 * pages are reused.
 *
 * The new rows (q, k, v of a position) come from a hash of (request,
 * position, head, dim) instead of a model's projections, so that every
 * output row can be checked against a plain-C attention over the same
 * positions; the program prints a summary and exits 0 when all agree.
 *
 * Build: cc -std=c11 paged_serving.c -lclattn -lOpenCL -lm
 * (tests/meson.build builds and runs it as the test paged_serving). */
#include <clattn.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  HEADS_Q = 4,
  HEADS_KV = 2,
  HEAD_DIM = 16,
  PAGE_SIZE = 8,
  NUM_PAGES = 14,    /* the pool: 112 positions */
  MAX_PAGES_SEQ = 8, /* block_table's columns: 64 positions a sequence */
  SLOTS = 4,         /* sequences served at once */
  CHUNK = 8          /* prompt positions a prefill step */
};

/* A request: when it arrives, its prompt and how many positions it
 * generates. */
typedef struct request {
  int arrival, prompt, generate;
} request;

static const request requests[] = {
    {0, 20, 5}, {0, 3, 9},  {1, 33, 4}, {2, 16, 6},
    {4, 1, 7},  {6, 40, 3}, {9, 9, 12}, {12, 25, 2},
};
enum { NUM_REQUESTS = sizeof requests / sizeof requests[0] };

/* A sequence being served: its request, its length so far (the positions
 * whose K/V rows are in the cache) and its pages, in order. */
typedef struct sequence {
  int id; /* index into requests; -1: a free slot */
  int len;
  int npages;
  int pages[MAX_PAGES_SEQ];
} sequence;

/* The application's pool: the caches and the free list of page indices. */
typedef struct pool {
  cl_mem k_cache, v_cache; /* [NUM_PAGES, PAGE_SIZE, HEADS_KV, HEAD_DIM] */
  int free_pages[NUM_PAGES];
  int nfree;
  int reused; /* pages handed out that an earlier sequence had held */
  unsigned char ever_used[NUM_PAGES];
} pool;

static int pages_for(int positions) {
  return (positions + PAGE_SIZE - 1) / PAGE_SIZE;
}

/* Take pages from the free list until the sequence can hold `len`. */
static void grow(pool *p, sequence *s, int len) {
  while (s->npages < pages_for(len)) {
    const int page = p->free_pages[--p->nfree];
    p->reused += p->ever_used[page];
    p->ever_used[page] = 1;
    s->pages[s->npages++] = page;
  }
}

static void release(pool *p, sequence *s) {
  while (s->npages > 0)
    p->free_pages[p->nfree++] = s->pages[--s->npages];
  s->id = -1;
}

/* A row's value in [-1, 1): q (which 0), k (1) or v (2) of a request's
 * position, head and dim. */
static float value(int which, int id, int pos, int head, int dim) {
  uint32_t x = (uint32_t)which * 0x165667B1u ^ (uint32_t)id * 0x9E3779B1u ^
               (uint32_t)pos * 0x85EBCA77u ^ (uint32_t)head * 0xC2B2AE3Du ^
               (uint32_t)dim * 0x27D4EB2Fu;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  x *= 0x297A2D39u;
  x ^= x >> 15;
  return (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

/* The expected output of query head h of request id at position pos:
 * causal attention over its positions 0 .. pos, in double. */
static void expected(int id, int pos, int h, double *out) {
  const int kvh = h / (HEADS_Q / HEADS_KV);
  const double scale = 1.0 / sqrt((double)HEAD_DIM);
  double mx = -INFINITY, sum = 0, acc[HEAD_DIM] = {0};
  double *logit = malloc((size_t)(pos + 1) * sizeof *logit);
  for (int t = 0; t <= pos; t++) {
    double s = 0;
    for (int d = 0; d < HEAD_DIM; d++)
      s += (double)value(0, id, pos, h, d) * value(1, id, t, kvh, d);
    logit[t] = s * scale;
    mx = logit[t] > mx ? logit[t] : mx;
  }
  for (int t = 0; t <= pos; t++) {
    const double w = exp(logit[t] - mx);
    sum += w;
    for (int d = 0; d < HEAD_DIM; d++)
      acc[d] += w * value(2, id, t, kvh, d);
  }
  for (int d = 0; d < HEAD_DIM; d++)
    out[d] = acc[d] / sum;
  free(logit);
}

static cl_mem upload(cl_context c, size_t bytes, const void *host) {
  cl_int err;
  cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                            (void *)host, &err);
  return err == CL_SUCCESS ? m : NULL;
}

/* One step of `batch` sequences with n new positions each (their len
 * already counts them): the new K/V rows appended into their pages, then
 * the attention of their n queries.  Returns the number of output values
 * off the expected by more than 1e-3, or -1 on a failed call. */
static int step(clattn_ctx *ctx, pool *p, sequence **seqs, int batch, int n) {
  cl_context c = clattn_ctx_cl_context(ctx);
  const size_t rows = (size_t)batch * n;
  const size_t nq = rows * HEADS_Q * HEAD_DIM, nkv = rows * HEADS_KV * HEAD_DIM;
  float *q = malloc(nq * sizeof *q), *o = malloc(nq * sizeof *o);
  float *k = malloc(nkv * sizeof *k), *v = malloc(nkv * sizeof *v);
  int table[SLOTS][MAX_PAGES_SEQ], lens[SLOTS];
  for (int b = 0; b < batch; b++) {
    const sequence *s = seqs[b];
    lens[b] = s->len;
    for (int j = 0; j < MAX_PAGES_SEQ; j++) /* past its pages: never read */
      table[b][j] = j < s->npages ? s->pages[j] : -1;
    for (int i = 0; i < n; i++) {
      const int pos = s->len - n + i;
      const size_t r = (size_t)b * n + i;
      for (int h = 0; h < HEADS_Q; h++)
        for (int d = 0; d < HEAD_DIM; d++)
          q[(r * HEADS_Q + h) * HEAD_DIM + d] = value(0, s->id, pos, h, d);
      for (int h = 0; h < HEADS_KV; h++)
        for (int d = 0; d < HEAD_DIM; d++) {
          k[(r * HEADS_KV + h) * HEAD_DIM + d] = value(1, s->id, pos, h, d);
          v[(r * HEADS_KV + h) * HEAD_DIM + d] = value(2, s->id, pos, h, d);
        }
    }
  }
  for (size_t i = 0; i < nq; i++)
    o[i] = NAN; /* a row the call misses shows */
  cl_mem bq = upload(c, nq * sizeof *q, q), bo = upload(c, nq * sizeof *o, o);
  cl_mem bk = upload(c, nkv * sizeof *k, k), bv = upload(c, nkv * sizeof *v, v);
  cl_mem bt = upload(c, sizeof table, table), bl = upload(c, sizeof lens, lens);
  const clattn_paged_desc d = {.size = sizeof d,
                               .batch = batch,
                               .n_q = n,
                               .heads_q = HEADS_Q,
                               .heads_kv = HEADS_KV,
                               .head_dim_k = HEAD_DIM,
                               .head_dim_v = HEAD_DIM,
                               .num_blocks = NUM_PAGES,
                               .page_size = PAGE_SIZE,
                               .max_blocks = MAX_PAGES_SEQ,
                               .dtype = CLATTN_F32,
                               .causal = 1};
  int bad = -1;
  clattn_status st = CLATTN_ERR_INVALID_ARG;
  if (bq && bo && bk && bv && bt && bl) {
    /* kv_lens are the lengths after the append: the same buffer serves
     * both calls, which run in order on the context's queue */
    st = clattn_paged_append(ctx, &d, bk, bv, bt, bl, p->k_cache, p->v_cache,
                             NULL, NULL, NULL);
    if (st == CLATTN_OK)
      st = clattn_paged_attention(ctx, &d, bq, p->k_cache, p->v_cache, NULL,
                                  NULL, bt, bl, bo, NULL);
  }
  if (st != CLATTN_OK)
    fprintf(stderr, "paged call: %s: %s\n", clattn_status_str(st),
            clattn_ctx_errmsg(ctx));
  else if (clEnqueueReadBuffer(clattn_ctx_queue(ctx), bo, CL_TRUE, 0,
                               nq * sizeof *o, o, 0, NULL,
                               NULL) == CL_SUCCESS) {
    bad = 0;
    for (int b = 0; b < batch; b++)
      for (int i = 0; i < n; i++)
        for (int h = 0; h < HEADS_Q; h++) {
          double want[HEAD_DIM];
          expected(seqs[b]->id, seqs[b]->len - n + i, h, want);
          const float *got = o + (((size_t)b * n + i) * HEADS_Q + h) * HEAD_DIM;
          for (int e = 0; e < HEAD_DIM; e++)
            bad += !(fabs(got[e] - want[e]) <= 1e-3);
        }
  }
  cl_mem all[6] = {bq, bo, bk, bv, bt, bl};
  for (int i = 0; i < 6; i++)
    if (all[i])
      clReleaseMemObject(all[i]);
  free(q), free(o), free(k), free(v);
  return bad;
}

int main(void) {
  clattn_ctx *ctx = NULL;
  const clattn_ctx_opts opts = {.size = sizeof opts};
  if (clattn_ctx_create(&opts, &ctx) != CLATTN_OK) {
    fprintf(stderr, "no context: %s\n", clattn_ctx_errmsg(NULL));
    return 1;
  }
  pool p = {.nfree = NUM_PAGES};
  const size_t cache_bytes =
      (size_t)NUM_PAGES * PAGE_SIZE * HEADS_KV * HEAD_DIM * sizeof(float);
  cl_int kerr, verr;
  p.k_cache = clCreateBuffer(clattn_ctx_cl_context(ctx), CL_MEM_READ_WRITE,
                             cache_bytes, NULL, &kerr);
  p.v_cache = clCreateBuffer(clattn_ctx_cl_context(ctx), CL_MEM_READ_WRITE,
                             cache_bytes, NULL, &verr);
  if (kerr != CL_SUCCESS || verr != CL_SUCCESS) {
    fprintf(stderr, "no memory for the pool\n");
    return 1;
  }
  for (int i = 0; i < NUM_PAGES; i++)
    p.free_pages[i] = NUM_PAGES - 1 - i;

  sequence slot[SLOTS];
  for (int s = 0; s < SLOTS; s++)
    slot[s] = (sequence){.id = -1};
  int next = 0, done = 0, steps = 0, calls = 0, wrong = 0, failed = 0;
  while (done < NUM_REQUESTS && !failed && steps < 1000) {
    /* admit arrived requests in order while a slot and their pages (the
     * free pages less those the running sequences will still take) last */
    int pending = 0;
    for (int s = 0; s < SLOTS; s++)
      if (slot[s].id >= 0) {
        const request *r = &requests[slot[s].id];
        pending += pages_for(r->prompt + r->generate) - slot[s].npages;
      }
    for (int s = 0; s < SLOTS && next < NUM_REQUESTS; s++) {
      const request *r = &requests[next];
      const int need = pages_for(r->prompt + r->generate);
      if (slot[s].id >= 0 || r->arrival > steps || need > p.nfree - pending)
        continue;
      slot[s] = (sequence){.id = next++};
      pending += need;
    }
    /* each prefilling sequence: its next chunk of prompt positions */
    sequence *decoding[SLOTS];
    int nd = 0;
    for (int s = 0; s < SLOTS && !failed; s++) {
      sequence *seq = &slot[s];
      if (seq->id < 0)
        continue;
      const int prompt = requests[seq->id].prompt;
      if (seq->len >= prompt) {
        decoding[nd++] = seq;
        continue;
      }
      const int n = prompt - seq->len < CHUNK ? prompt - seq->len : CHUNK;
      grow(&p, seq, seq->len + n);
      seq->len += n;
      const int bad = step(ctx, &p, &seq, 1, n);
      failed = bad < 0;
      wrong += bad > 0 ? bad : 0;
      calls++;
    }
    /* every decoding sequence: one position, in one batch */
    for (int i = 0; i < nd && !failed; i++) {
      grow(&p, decoding[i], decoding[i]->len + 1);
      decoding[i]->len++;
    }
    if (nd > 0 && !failed) {
      const int bad = step(ctx, &p, decoding, nd, 1);
      failed = bad < 0;
      wrong += bad > 0 ? bad : 0;
      calls++;
    }
    /* finished sequences give their pages back */
    for (int s = 0; s < SLOTS; s++)
      if (slot[s].id >= 0 && slot[s].len == requests[slot[s].id].prompt +
                                                requests[slot[s].id].generate) {
        release(&p, &slot[s]);
        done++;
      }
    steps++;
  }
  printf("served %d of %d requests in %d steps (%d append+attention "
         "calls); %d pages reused; %d wrong outputs\n",
         done, NUM_REQUESTS, steps, calls, p.reused, wrong);
  clReleaseMemObject(p.k_cache);
  clReleaseMemObject(p.v_cache);
  clattn_ctx_destroy(ctx);
  return !failed && done == NUM_REQUESTS && wrong == 0 && p.reused > 0 ? 0 : 1;
}
