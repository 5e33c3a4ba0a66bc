/* tune.c - clattn-bench-tune: how good and how cheap the autotuner is, in
 * one run on the present device.
 *
 * For each shape class (two prefill, four decode):
 *  1. an exhaustive run over the whole space (the reference best);
 *  2. each search strategy (auto, model, anneal, random) from an empty
 *     database, capped at 25% of the space;
 *  3. the winners and the default parameters timed again head to head,
 *     interleaved (round-robin over the configurations, so drift hits all
 *     alike; 63 rounds for decode, 31 for prefill, since fewer left two
 *     slots of the same parameters apart by more than the gains measured:
 *     bench/RESULTS.md, machine drift), decode on K/V
 *     copies larger than twice the last-level cache (cold caches, as a
 *     multi-layer model reads them); a run, as the tuner's, is the call
 *     on up to 8 copies enqueued back to back and finished once (the time
 *     per call of a stream).
 * It prints, per class and strategy: candidates measured / space, the
 * strategy's best against the exhaustive best (target <= 1.05), and the
 * exhaustive best against the default (the gain of tuning).
 *
 *   clattn-bench-tune [--device D] [--quick] [--profile-db PATH]
 *
 * --profile-db: where the device's measured profile is (clattn probe;
 * default $CLATTN_DB or the default database): the model strategy needs
 * its ceilings.  Databases of the run are temporary files. */
#include "bench_util.h"

#include "clattn_tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    clattn_status st__ = (call);                                               \
    if (st__ != CLATTN_OK) {                                                   \
      fprintf(stderr, "clattn-bench-tune: %s: %s: %s\n", #call,                \
              clattn_status_str(st__), clattn_ctx_errmsg(ctx));                \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

typedef struct cls {
  const char *name;
  int decode;
  clattn_attn_desc a;
  clattn_decode_desc d;
} cls;

static clattn_ctx *ctx;

static cl_mem random_buffer(size_t bytes, unsigned seed) {
  float *h = malloc(bytes);
  cl_int err;
  if (h == NULL) {
    fprintf(stderr, "clattn-bench-tune: out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < bytes / 4; i++) {
    seed = seed * 1664525u + 1013904223u;
    h[i] = (float)(seed >> 8) / 8388608.0f - 1.0f;
  }
  cl_mem m =
      clCreateBuffer(clattn_ctx_cl_context(ctx),
                     CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h, &err);
  free(h);
  if (err != CL_SUCCESS) {
    fprintf(stderr, "clattn-bench-tune: clCreateBuffer: %s\n",
            clattn_cl_errstr(err));
    exit(1);
  }
  return m;
}

enum { MAX_COPIES = 64, MAX_CFG = 9 };

/* Buffers of one class: K/V copies for cold decode caches. */
typedef struct bufs {
  cl_mem q, o, lens, k[MAX_COPIES], v[MAX_COPIES];
  int copies;
} bufs;

static void bufs_make(const cls *c, unsigned long long llc, bufs *b) {
  memset(b, 0, sizeof *b);
  if (c->decode) {
    const clattn_decode_desc *d = &c->d;
    size_t kb =
               (size_t)d->batch * d->capacity * d->heads_kv * d->head_dim_k * 4,
           vb =
               (size_t)d->batch * d->capacity * d->heads_kv * d->head_dim_v * 4;
    b->copies = (int)(2.0 * (double)llc / (double)(kb + vb)) + 1;
    if (b->copies > MAX_COPIES)
      b->copies = MAX_COPIES;
    b->q = random_buffer((size_t)d->batch * d->heads_q * d->head_dim_k * 4, 1);
    b->o = random_buffer((size_t)d->batch * d->heads_q * d->head_dim_v * 4, 2);
    int *lens = malloc((size_t)d->batch * sizeof *lens);
    for (int i = 0; i < d->batch; i++)
      lens[i] = d->capacity;
    cl_int err;
    b->lens = clCreateBuffer(clattn_ctx_cl_context(ctx),
                             CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                             (size_t)d->batch * 4, lens, &err);
    free(lens);
    for (int i = 0; i < b->copies; i++) {
      b->k[i] = random_buffer(kb, 10u + (unsigned)i);
      b->v[i] = random_buffer(vb, 100u + (unsigned)i);
    }
  } else {
    const clattn_attn_desc *a = &c->a;
    b->copies = 1;
    b->q = random_buffer(
        (size_t)a->batch * a->n_q * a->heads_q * a->head_dim_k * 4, 1);
    b->o = random_buffer(
        (size_t)a->batch * a->n_q * a->heads_q * a->head_dim_v * 4, 2);
    b->k[0] = random_buffer(
        (size_t)a->batch * a->n_kv * a->heads_kv * a->head_dim_k * 4, 3);
    b->v[0] = random_buffer(
        (size_t)a->batch * a->n_kv * a->heads_kv * a->head_dim_v * 4, 4);
  }
}

static void bufs_free(bufs *b) {
  cl_mem *m[] = {&b->q, &b->o, &b->lens};
  for (int i = 0; i < 3; i++)
    if (*m[i])
      clReleaseMemObject(*m[i]);
  for (int i = 0; i < b->copies; i++) {
    clReleaseMemObject(b->k[i]);
    clReleaseMemObject(b->v[i]);
  }
}

/* One call with params p on K/V copy `copy`, enqueued (not finished). */
static void enqueue_call(const cls *c, bufs *b, const clattn_params *p,
                         int copy) {
  if (c->decode) {
    clattn_decode_desc d = c->d;
    d.params = p;
    CHECK(clattn_decode(ctx, &d, b->q, b->k[copy], b->v[copy], b->lens, b->o,
                        NULL));
  } else {
    clattn_attn_desc a = c->a;
    a.params = p;
    CHECK(clattn_attention(ctx, &a, b->q, b->k[0], b->v[0], NULL, b->o, NULL));
  }
}

/* One run, as the tuner times it: the call on up to STREAM consecutive
 * copies from *copy (advanced past them, modulo nc), enqueued back to back
 * and finished once; the time per call. */
enum { STREAM = 8 };

static double one_run(const cls *c, bufs *b, const clattn_params *p, int *copy,
                      int nc) {
  const int n = nc < STREAM ? nc : STREAM;
  double t0 = clattn__now();
  for (int i = 0; i < n; i++) {
    enqueue_call(c, b, p, *copy);
    *copy = (*copy + 1) % nc;
  }
  clFinish(clattn_ctx_queue(ctx));
  return (clattn__now() - t0) / n;
}

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

/* Head to head: medians of at least `rounds` interleaved runs of each
 * config.  The runs read the copies of one rotation in turn (a run the
 * next min(copies, STREAM) of them); with n configs and a copy count
 * prime to n, the runs' starting copies move round all copies (no config
 * gets the faster or slower pages). */
static void head_to_head(const cls *c, bufs *b, const clattn_params *cfg, int n,
                         int rounds, double *med, double *lo) {
  int nc = b->copies;
  while (nc > 1 && gcd(nc, n) != 1)
    nc--; /* the last copies are then not read */
  rounds = (rounds + nc - 1) / nc * nc;
  double *t = malloc((size_t)n * (size_t)rounds * sizeof *t);
  int copy = 0;
  for (int i = 0; i < n; i++)
    one_run(c, b, &cfg[i], &copy, 1); /* warm-up (programs built) */
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < n; k++) {
      const int i = (k + r) % n; /* the order rotates: no config always
                                    follows the same one */
      t[i * rounds + r] = one_run(c, b, &cfg[i], &copy, nc);
    }
  for (int i = 0; i < n; i++) {
    qsort(&t[i * rounds], (size_t)rounds, sizeof *t, clattn__cmp_double);
    med[i] = t[i * rounds + rounds / 2];
    lo[i] = t[i * rounds];
  }
  free(t);
}

static clattn_db *fresh_db(const char *tag, const clattn_profile *prof) {
  char path[256];
  snprintf(path, sizeof path, "/tmp/clattn-bench-tune-%d-%s.db", (int)getpid(),
           tag);
  unlink(path);
  clattn_db *db = NULL;
  if (clattn_db_open(path, &db) != CLATTN_OK) {
    fprintf(stderr, "clattn-bench-tune: %s\n", clattn_db_errmsg(NULL));
    exit(1);
  }
  if (prof && prof->source == CLATTN_PROFILE_MEASURED)
    clattn_db_put_profile(db, prof);
  return db;
}

static void drop_db(clattn_db *db) {
  char path[300], side[320];
  snprintf(path, sizeof path, "%s", clattn_db_path(db));
  clattn_db_close(db);
  unlink(path);
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
}

/* A tuning run's winner as params (zero: none). */
static clattn_params best_of(const clattn_tune_result *r) {
  clattn_params p = {.size = sizeof p};
  if (r->best_params[0])
    clattn_params_parse(r->best_params, &p);
  return p;
}

static clattn_tune_result tune(const cls *c, clattn_db *db,
                               clattn_tune_strategy s, int max) {
  clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
  clattn_tune_result r = {.size = sizeof(clattn_tune_result)};
  o.strategy = s;
  o.max_candidates = max;
  o.seed = 7;
  if (c->decode)
    CHECK(clattn_tune_decode(ctx, db, &c->d, &o, &r));
  else
    CHECK(clattn_tune_attention(ctx, db, &c->a, &o, &r));
  return r;
}

int main(int argc, char **argv) {
  const char *device = NULL, *profile_db = NULL;
  int quick = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc)
      device = argv[++i];
    else if (!strcmp(argv[i], "--profile-db") && i + 1 < argc)
      profile_db = argv[++i];
    else if (!strcmp(argv[i], "--quick"))
      quick = 1;
    else {
      fprintf(stderr, "usage: clattn-bench-tune [--device D] [--quick] "
                      "[--profile-db PATH]\n");
      return 2;
    }
  }
  clattn_ctx_opts co = {.size = sizeof(clattn_ctx_opts)};
  co.device = device;
  co.no_tuning = 1; /* the default parameters are the built-in ones */
  if (clattn_ctx_create(&co, &ctx) != CLATTN_OK) {
    fprintf(stderr, "clattn-bench-tune: %s\n", clattn_ctx_errmsg(NULL));
    return 1;
  }
  clattn_profile prof = {.size = sizeof(clattn_profile)};
  clattn_db *pdb = NULL;
  if (clattn_db_open_readonly(profile_db, &pdb) == CLATTN_OK) {
    CHECK(clattn_profile_for(ctx, pdb, &prof));
    clattn_db_close(pdb);
  } else {
    CHECK(clattn_profile_reported(ctx, &prof));
  }
  const int has_model = prof.source == CLATTN_PROFILE_MEASURED;
  unsigned long long llc = prof.cache_bytes ? prof.cache_bytes : 64ull << 20;
  printf("clattn-bench-tune on %s (%s profile%s)\n", prof.name,
         has_model ? "measured" : "no measured",
         has_model ? ""
                   : ": the model strategy is skipped; run clattn "
                     "probe");
  printf("decode timings rotate over K/V copies > 2 x %.0f MiB (cold "
         "caches); prefill timings are warm\n\n",
         (double)llc / 1048576.0);

  enum { NCLS = 6 };
  cls classes[NCLS];
  memset(classes, 0, sizeof classes);
  classes[0].name = "prefill MHA b1 h8 n512 k64 causal";
  classes[0].a = (clattn_attn_desc){sizeof(clattn_attn_desc),
                                    1,
                                    512,
                                    512,
                                    8,
                                    8,
                                    64,
                                    64,
                                    CLATTN_F32,
                                    CLATTN_BSHD,
                                    CLATTN_BSHD,
                                    0.0f,
                                    1,
                                    NULL};
  classes[1].name = "prefill GQA b1 h8/2 n1024 k64 causal";
  classes[1].a = (clattn_attn_desc){sizeof(clattn_attn_desc),
                                    1,
                                    1024,
                                    1024,
                                    8,
                                    2,
                                    64,
                                    64,
                                    CLATTN_F32,
                                    CLATTN_BSHD,
                                    CLATTN_BSHD,
                                    0.0f,
                                    1,
                                    NULL};
  classes[2].name = "decode MHA b1 h8 m4096 k64";
  classes[2].decode = 1;
  classes[2].d = (clattn_decode_desc){sizeof(clattn_decode_desc),
                                      1,
                                      4096,
                                      8,
                                      8,
                                      64,
                                      64,
                                      CLATTN_F32,
                                      CLATTN_BHSD,
                                      0.0f,
                                      NULL};
  classes[3].name = "decode MQA b1 h8/1 m8192 k64";
  classes[3].decode = 1;
  classes[3].d = (clattn_decode_desc){sizeof(clattn_decode_desc),
                                      1,
                                      8192,
                                      8,
                                      1,
                                      64,
                                      64,
                                      CLATTN_F32,
                                      CLATTN_BHSD,
                                      0.0f,
                                      NULL};
  classes[4].name = "decode GQA b1 h32/8 m4096 k128";
  classes[4].decode = 1;
  classes[4].d = (clattn_decode_desc){sizeof(clattn_decode_desc),
                                      1,
                                      4096,
                                      32,
                                      8,
                                      128,
                                      128,
                                      CLATTN_F32,
                                      CLATTN_BHSD,
                                      0.0f,
                                      NULL};
  classes[5].name = "decode MHA b8 h8 m2048 k64";
  classes[5].decode = 1;
  classes[5].d = (clattn_decode_desc){sizeof(clattn_decode_desc),
                                      8,
                                      2048,
                                      8,
                                      8,
                                      64,
                                      64,
                                      CLATTN_F32,
                                      CLATTN_BHSD,
                                      0.0f,
                                      NULL};
  if (quick) {
    classes[0].a.n_q = classes[0].a.n_kv = 128;
    classes[1].a.n_q = classes[1].a.n_kv = 256;
    classes[2].d.capacity = 1024;
    classes[3].d.capacity = 2048;
    classes[4].d.capacity = 1024;
    classes[5].d.capacity = 512;
  }
  static const clattn_tune_strategy strat[] = {
      CLATTN_TUNE_AUTO, CLATTN_TUNE_MODEL, CLATTN_TUNE_ANNEAL,
      CLATTN_TUNE_RANDOM};
  const int ns = (int)(sizeof strat / sizeof strat[0]);
  printf("%-38s %-10s %9s %10s %11s %13s %6s %7s\n", "shape class", "strategy",
         "measured", "best ms", "vs exhaust.", "vs default", "min:ex",
         "min:def");
  for (int ci = 0; ci < NCLS; ci++) {
    const cls *c = &classes[ci];
    double t0 = clattn__now();
    clattn_db *db = fresh_db("exhaustive", &prof);
    clattn_tune_result ex = tune(c, db, CLATTN_TUNE_EXHAUSTIVE, 0);
    drop_db(db);
    const double t_ex = clattn__now() - t0;
    clattn_params cfg[MAX_CFG];
    clattn_tune_result res[MAX_CFG];
    int n = 0;
    memset(cfg, 0, sizeof cfg);
    cfg[n++] = (clattn_params){.size = sizeof(clattn_params)}; /* the default */
    cfg[n++] = best_of(&ex);
    double t_s[MAX_CFG];
    for (int s = 0; s < ns; s++) {
      if (strat[s] == CLATTN_TUNE_MODEL && !has_model)
        continue;
      t0 = clattn__now();
      db = fresh_db(clattn_tune_strategy_str(strat[s]), &prof);
      res[n] = tune(c, db, strat[s], (ex.space + 3) / 4);
      drop_db(db);
      t_s[n] = clattn__now() - t0;
      cfg[n] = best_of(&res[n]);
      n++;
    }
    /* a control: the exhaustive best once more, so the noise of the
     * head-to-head figures is printed next to them */
    const int control = n;
    cfg[n++] = best_of(&ex);
    bufs b;
    bufs_make(c, llc, &b);
    double med[MAX_CFG], lo[MAX_CFG];
    head_to_head(c, &b, cfg, n, c->decode ? 63 : 31, med, lo);
    bufs_free(&b);
    char p[128];
    clattn_params_format(&cfg[1], p, sizeof p);
    printf("%-38s %-10s %4d/%-4d %10.4f %11s %12.2fx %6s %6.2fx  %s "
           "(%.0f s)\n",
           c->name, "exhaustive", ex.measured, ex.space, med[1] * 1e3, "1.000",
           med[0] / med[1], "1.000", lo[0] / lo[1], p, t_ex);
    int k = 2;
    for (int s = 0; s < ns; s++) {
      if (strat[s] == CLATTN_TUNE_MODEL && !has_model)
        continue;
      clattn_params_format(&cfg[k], p, sizeof p);
      printf("%-38s %-10s %4d/%-4d %10.4f %11.3f %12.2fx %6.3f %6.2fx  %s "
             "(%.0f s, stopped: %s)\n",
             "", clattn_tune_strategy_str(strat[s]), res[k].measured,
             res[k].space, med[k] * 1e3, med[k] / med[1], med[0] / med[k],
             lo[k] / lo[1], lo[0] / lo[k], p, t_s[k], res[k].stopped);
      k++;
    }
    printf("%-38s %-10s %9s %10.4f\n", "", "default", "", med[0] * 1e3);
    printf("%-38s %-10s %9s %10.4f %11.3f %13s %6.3f  (the exhaustive "
           "best timed twice: the noise)\n",
           "", "control", "", med[control] * 1e3, med[control] / med[1], "",
           lo[control] / lo[1]);
    fflush(stdout);
  }
  printf("\nmeasured: candidates timed by the strategy (the default "
         "included); vs exhaust.: the strategy's best / the exhaustive "
         "best, medians timed again head to head (target <= 1.05 with <= "
         "25%% measured); vs default: default / best; min:ex and min:def: "
         "the same ratios of the fastest runs (robust to the machine's "
         "heavy-tailed interference; the control row shows the noise)\n");
  clattn_ctx_destroy(ctx);
  return 0;
}
