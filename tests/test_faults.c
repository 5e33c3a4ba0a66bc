/* test_faults.c - injected faults (tests/fault.h): every main call, with
 * its n-th host allocation failing for every n, and with its n-th OpenCL
 * call failing with CL_OUT_OF_RESOURCES or CL_MEM_OBJECT_ALLOCATION_FAILURE
 * for every n, returns a status and a message naming the failure, leaks no
 * host block and no cl_mem / cl_kernel / cl_program, and leaves its context
 * usable (the same call without a fault then succeeds and gives the clean
 * run's result).  A kernel that fails to build, a disk that fills during an
 * export and during a tune, a schema migration interrupted at each of its
 * statements. */
#define _GNU_SOURCE /* mkdtemp, dladdr */
#include "clattn_tools.h"
#include "db_lock.h"
#include "fault.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------- helpers */

static char tmp_dir[] = "/tmp/clattn-faults-XXXXXX";

static void remove_tmp_dir(void) {
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tmp_dir);
}

/* A directory of this test's process, removed when it exits. */
static void make_tmp_dir(void) {
  static int made;
  if (!made) {
    cr_assert_not_null(mkdtemp(tmp_dir), "mkdtemp failed");
    atexit(remove_tmp_dir);
  }
  made = 1;
}

/* A context on the default device; tuning_db: NULL for $CLATTN_DB (the
 * suite's names no file). */
static clattn_ctx *new_ctx_with(const char *tuning_db) {
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  o.tuning_db = tuning_db;
  clattn_ctx *ctx = NULL;
  clattn_status st = clattn_ctx_create(&o, &ctx);
  cr_assert_eq(st, CLATTN_OK, "clattn_ctx_create: %s", clattn_ctx_errmsg(NULL));
  return ctx;
}

static clattn_ctx *new_ctx(void) { return new_ctx_with(NULL); }

/* Deterministic values in [-1, 1). */
static void fill(float *x, size_t n, unsigned seed) {
  unsigned s = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
}

static cl_mem floats_buf(clattn_ctx *ctx, size_t n, unsigned seed) {
  float *h = malloc(n * sizeof *h);
  cr_assert_not_null(h);
  fill(h, n, seed);
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(clattn_ctx_cl_context(ctx),
                            CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            n * sizeof *h, h, &err);
  free(h);
  cr_assert_eq(err, CL_SUCCESS, "clCreateBuffer: %s", clattn_cl_errstr(err));
  return m;
}

static cl_mem ints_buf(clattn_ctx *ctx, const int *v, size_t n) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(clattn_ctx_cl_context(ctx),
                            CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            n * sizeof *v, (void *)v, &err);
  cr_assert_eq(err, CL_SUCCESS, "clCreateBuffer: %s", clattn_cl_errstr(err));
  return m;
}

static void read_floats(clattn_ctx *ctx, cl_mem m, float *out, size_t n) {
  cl_int err = clEnqueueReadBuffer(clattn_ctx_queue(ctx), m, CL_TRUE, 0,
                                   n * sizeof *out, out, 0, NULL, NULL);
  cr_assert_eq(err, CL_SUCCESS, "clEnqueueReadBuffer: %s",
               clattn_cl_errstr(err));
}

static void release(cl_mem *m, int n) {
  for (int i = 0; i < n; i++)
    if (m[i] != NULL) {
      clReleaseMemObject(m[i]);
      m[i] = NULL;
    }
}

/* ----------------------------------------------------------- scenarios */

/* One public call (or a short sequence) under test.  setup makes its
 * inputs (a new context among them, so that the call's first-use paths
 * run every time); run is the call; undo frees what run made (also after a
 * failed run); result copies what the call computed (NULL when it computes
 * nothing the test can read); teardown frees setup's objects. */
#define OUT_MAX 4096
typedef struct scenario scenario;
struct scenario {
  const char *name;
  void (*setup)(scenario *s);
  clattn_status (*run)(scenario *s);
  void (*undo)(scenario *s);
  int (*result)(scenario *s, float *out); /* returns the count */
  void (*teardown)(scenario *s);
  /* whether an injected OpenCL failure of `call` may end in success, and
   * the call's record of it is there (a tuning run's rejected candidate) */
  int (*absorbed)(scenario *s, const char *call, const char *code);
  /* state */
  clattn_tune_result tune;
  clattn_ctx *ctx;
  clattn_db *db;
  cl_mem mem[16];
  clattn_layer *layer;
  clattn_kv_cache *cache;
  clattn_ctx *made_ctx;
  char path[512];
  int made;
};

static const char *scenario_errmsg(const scenario *s) {
  if (strncmp(s->name, "clattn_db", 9) == 0)
    return clattn_db_errmsg(s->db);
  if (s->ctx == NULL)
    return clattn_ctx_errmsg(NULL);
  return clattn_ctx_errmsg(s->ctx);
}

static void common_teardown(scenario *s) {
  if (s->undo)
    s->undo(s);
  release(s->mem, 16);
  if (s->db)
    clattn_db_close(s->db);
  s->db = NULL;
  if (s->ctx)
    clattn_ctx_destroy(s->ctx);
  s->ctx = NULL;
}

/* ---- clattn_ctx_create */

static void ctx_setup(scenario *s) { (void)s; }
static clattn_status ctx_run(scenario *s) {
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  return clattn_ctx_create(&o, &s->made_ctx);
}
static void ctx_undo(scenario *s) {
  clattn_ctx_destroy(s->made_ctx);
  s->made_ctx = NULL;
}

/* ---- clattn_attention: GQA, 2 query heads over 1 KV head */

static const clattn_attn_desc attn_desc = {.size = sizeof(clattn_attn_desc),
                                           .batch = 1,
                                           .n_q = 3,
                                           .n_kv = 5,
                                           .heads_q = 2,
                                           .heads_kv = 1,
                                           .head_dim_k = 8,
                                           .head_dim_v = 8,
                                           .dtype = CLATTN_F32,
                                           .causal = 1};
enum { ATTN_O = 3 * 2 * 8 };

static void attn_setup(scenario *s) {
  s->ctx = new_ctx();
  s->mem[0] = floats_buf(s->ctx, 3 * 2 * 8, 1);
  s->mem[1] = floats_buf(s->ctx, 5 * 8, 2);
  s->mem[2] = floats_buf(s->ctx, 5 * 8, 3);
  s->mem[3] = floats_buf(s->ctx, ATTN_O, 4);
}
/* With a tuning database of one row (of another device): the first call
 * opens it and reads its rows. */
static void put_row(const char *path, const char *fingerprint) {
  clattn_db *db = NULL;
  clattn_status st = clattn_db_open(path, &db);
  cr_assert_eq(st, CLATTN_OK, "clattn_db_open(%s): %s", path,
               clattn_db_errmsg(NULL));
  clattn_tune_entry e = {.size = sizeof(clattn_tune_entry)};
  snprintf(e.fingerprint, sizeof e.fingerprint, "%s", fingerprint);
  snprintf(e.kernel, sizeof e.kernel, "prefill");
  snprintf(e.shape_class, sizeof e.shape_class, "b1");
  snprintf(e.params, sizeof e.params, "variant=1 rows=2");
  snprintf(e.status, sizeof e.status, "ok");
  e.median_s = 1e-3;
  snprintf(e.updated, sizeof e.updated, "2020-01-02T03:04:05Z");
  st = clattn_db_put_tune(db, &e);
  cr_assert_eq(st, CLATTN_OK, "put_tune: %s", clattn_db_errmsg(db));
  clattn_db_close(db);
}

static void tuned_attn_setup(scenario *s) {
  make_tmp_dir();
  snprintf(s->path, sizeof s->path, "%s/tuned.db", tmp_dir);
  if (access(s->path, F_OK) != 0)
    put_row(s->path, "another-device");
  s->ctx = new_ctx_with(s->path);
  s->mem[0] = floats_buf(s->ctx, 3 * 2 * 8, 1);
  s->mem[1] = floats_buf(s->ctx, 5 * 8, 2);
  s->mem[2] = floats_buf(s->ctx, 5 * 8, 3);
  s->mem[3] = floats_buf(s->ctx, ATTN_O, 4);
}

static clattn_status attn_run(scenario *s) {
  return clattn_attention(s->ctx, &attn_desc, s->mem[0], s->mem[1], s->mem[2],
                          NULL, s->mem[3], NULL);
}
/* With every attention option: the per-head arrays' device copies are
 * made at the call (runtime/consts.c). */
static const float attn_slopes[2] = {0.25f, 0.5f}, attn_sinks[2] = {0.5f, -1};
static clattn_status attn_opts_run(scenario *s) {
  clattn_attn_desc d = attn_desc;
  d.window = 2;
  d.softcap = 4.0f;
  d.alibi_slopes = attn_slopes;
  d.sinks = attn_sinks;
  return clattn_attention(s->ctx, &d, s->mem[0], s->mem[1], s->mem[2], NULL,
                          s->mem[3], NULL);
}
static int attn_result(scenario *s, float *out) {
  read_floats(s->ctx, s->mem[3], out, ATTN_O);
  return ATTN_O;
}

/* ---- clattn_decode and clattn_kv_append: batch 2, capacity 6 */

static const clattn_decode_desc dec_desc = {.size = sizeof(clattn_decode_desc),
                                            .batch = 2,
                                            .capacity = 6,
                                            .heads_q = 2,
                                            .heads_kv = 1,
                                            .head_dim_k = 8,
                                            .head_dim_v = 8,
                                            .dtype = CLATTN_F32,
                                            .cache_layout = CLATTN_BSHD};
enum { DEC_O = 2 * 2 * 8, DEC_CACHE = 2 * 6 * 8 };

static void dec_setup(scenario *s) {
  static const int lens[2] = {4, 6}, pos[2] = {1, 4};
  s->ctx = new_ctx();
  s->mem[0] = floats_buf(s->ctx, 2 * 2 * 8, 1);
  s->mem[1] = floats_buf(s->ctx, DEC_CACHE, 2);
  s->mem[2] = floats_buf(s->ctx, DEC_CACHE, 3);
  s->mem[3] = ints_buf(s->ctx, lens, 2);
  s->mem[4] = floats_buf(s->ctx, DEC_O, 4);
  s->mem[5] = floats_buf(s->ctx, 2 * 2 * 8, 5); /* k_new: 2 rows */
  s->mem[6] = floats_buf(s->ctx, 2 * 2 * 8, 6);
  s->mem[7] = ints_buf(s->ctx, pos, 2);
}
static clattn_status dec_run(scenario *s) {
  return clattn_decode(s->ctx, &dec_desc, s->mem[0], s->mem[1], s->mem[2],
                       s->mem[3], s->mem[4], NULL);
}
static int dec_result(scenario *s, float *out) {
  read_floats(s->ctx, s->mem[4], out, DEC_O);
  return DEC_O;
}
static clattn_status append_run(scenario *s) {
  return clattn_kv_append(s->ctx, &dec_desc, 2, s->mem[5], s->mem[6], s->mem[7],
                          s->mem[1], s->mem[2], NULL);
}
static int append_result(scenario *s, float *out) {
  read_floats(s->ctx, s->mem[1], out, DEC_CACHE);
  read_floats(s->ctx, s->mem[2], out + DEC_CACHE, DEC_CACHE);
  return 2 * DEC_CACHE;
}

/* ---- clattn_talking_heads */

static const clattn_th_desc th_desc = {.size = sizeof(clattn_th_desc),
                                       .batch = 1,
                                       .n_q = 3,
                                       .n_kv = 4,
                                       .heads_k = 2,
                                       .heads = 3,
                                       .heads_v = 2,
                                       .head_dim_k = 8,
                                       .head_dim_v = 8,
                                       .dtype = CLATTN_F32,
                                       .causal = 1};
enum { TH_O = 3 * 2 * 8 };

static void th_setup(scenario *s) {
  s->ctx = new_ctx();
  s->mem[0] = floats_buf(s->ctx, 3 * 2 * 8, 1);
  s->mem[1] = floats_buf(s->ctx, 4 * 2 * 8, 2);
  s->mem[2] = floats_buf(s->ctx, 4 * 2 * 8, 3);
  s->mem[3] = floats_buf(s->ctx, 2 * 3, 4);
  s->mem[4] = floats_buf(s->ctx, 3 * 2, 5);
  s->mem[5] = floats_buf(s->ctx, TH_O, 6);
}
static clattn_status th_run(scenario *s) {
  return clattn_talking_heads(s->ctx, &th_desc, s->mem[0], s->mem[1], s->mem[2],
                              s->mem[3], s->mem[4], NULL, s->mem[5], NULL);
}
static int th_result(scenario *s, float *out) {
  read_floats(s->ctx, s->mem[5], out, TH_O);
  return TH_O;
}

/* ---- explain */

static clattn_status explain_run(scenario *s) {
  clattn_choice c = {.size = sizeof(clattn_choice)};
  return clattn_explain_attention(s->ctx, &attn_desc, &c);
}

/* ---- layers: create, a KV cache, a prefill of 3 positions, a decode step */

enum { LAYER_D = 16, LAYER_B = 1 };

static void layer_buffers(scenario *s) {
  s->mem[8] = floats_buf(s->ctx, LAYER_B * 3 * LAYER_D, 11); /* x */
  s->mem[9] = floats_buf(s->ctx, LAYER_B * 3 * LAYER_D, 12); /* y */
  s->mem[10] = floats_buf(s->ctx, LAYER_B * LAYER_D, 13);    /* x1 */
  s->mem[11] = floats_buf(s->ctx, LAYER_B * LAYER_D, 14);    /* y1 */
}

static void gqa_setup(scenario *s) {
  s->ctx = new_ctx();
  /* d_model 16, 2 query heads over 1 KV head of width 8 */
  s->mem[0] = floats_buf(s->ctx, 16 * 16, 1);
  s->mem[1] = floats_buf(s->ctx, 16 * 8, 2);
  s->mem[2] = floats_buf(s->ctx, 16 * 8, 3);
  s->mem[3] = floats_buf(s->ctx, 16 * 16, 4);
  layer_buffers(s);
}
static clattn_status layer_steps(scenario *s) {
  clattn_status st = clattn_kv_cache_create(s->layer, LAYER_B, 5, &s->cache);
  if (st == CLATTN_OK)
    st = clattn_layer_prefill(s->layer, s->cache, LAYER_B, 3, 1, s->mem[8],
                              s->mem[9], NULL);
  if (st == CLATTN_OK)
    st = clattn_layer_decode(s->layer, s->cache, s->mem[10], s->mem[11], NULL);
  return st;
}
static clattn_status gqa_run(scenario *s) {
  const clattn_layer_desc d = {.size = sizeof(clattn_layer_desc),
                               .d_model = 16,
                               .heads_q = 2,
                               .heads_kv = 1,
                               .head_dim_k = 8,
                               .head_dim_v = 8};
  clattn_status st = clattn_layer_create(s->ctx, &d, s->mem[0], s->mem[1],
                                         s->mem[2], s->mem[3], &s->layer);
  return st == CLATTN_OK ? layer_steps(s) : st;
}
static void layer_undo(scenario *s) {
  clattn_kv_cache_destroy(s->cache);
  s->cache = NULL;
  clattn_layer_destroy(s->layer);
  s->layer = NULL;
}
static int layer_result(scenario *s, float *out) {
  read_floats(s->ctx, s->mem[9], out, LAYER_B * 3 * LAYER_D);
  read_floats(s->ctx, s->mem[11], out + LAYER_B * 3 * LAYER_D,
              LAYER_B * LAYER_D);
  return LAYER_B * 4 * LAYER_D;
}

static void thl_setup(scenario *s) {
  s->ctx = new_ctx();
  /* d_model 16, 2 key heads, 3 logit heads, 2 value heads of width 8 */
  s->mem[0] = floats_buf(s->ctx, 16 * 16, 1);
  s->mem[1] = floats_buf(s->ctx, 16 * 16, 2);
  s->mem[2] = floats_buf(s->ctx, 16 * 16, 3);
  s->mem[3] = floats_buf(s->ctx, 16 * 16, 4);
  s->mem[4] = floats_buf(s->ctx, 2 * 3, 5);
  s->mem[5] = floats_buf(s->ctx, 3 * 2, 6);
  layer_buffers(s);
}
static clattn_status thl_run(scenario *s) {
  const clattn_th_layer_desc d = {.size = sizeof(clattn_th_layer_desc),
                                  .d_model = 16,
                                  .heads_k = 2,
                                  .heads = 3,
                                  .heads_v = 2,
                                  .head_dim_k = 8,
                                  .head_dim_v = 8};
  clattn_status st = clattn_layer_create_talking_heads(
      s->ctx, &d, s->mem[0], s->mem[1], s->mem[2], s->mem[3], s->mem[4],
      s->mem[5], &s->layer);
  return st == CLATTN_OK ? layer_steps(s) : st;
}

/* Hosseini & Hosseini's Efficient layer: d_model 16, 2 heads */
static void eff_setup(scenario *s) {
  s->ctx = new_ctx();
  s->mem[0] = floats_buf(s->ctx, 16 * 16, 1);
  s->mem[1] = floats_buf(s->ctx, 16 * 16, 2);
  layer_buffers(s);
}
static clattn_status eff_run(scenario *s) {
  const clattn_hh_layer_desc d = {
      .size = sizeof(clattn_hh_layer_desc), .d_model = 16, .heads = 2};
  clattn_status st = clattn_layer_create_efficient(s->ctx, &d, s->mem[0],
                                                   s->mem[1], &s->layer);
  return st == CLATTN_OK ? layer_steps(s) : st;
}

/* SwitchHead: d_model 16, 2 heads of 8, top 2 of 4 experts */
static void sh_setup(scenario *s) {
  s->ctx = new_ctx();
  s->mem[0] = floats_buf(s->ctx, 16 * 16, 1);
  s->mem[1] = floats_buf(s->ctx, 16 * 16, 2);
  s->mem[2] = floats_buf(s->ctx, 2 * 4 * 16 * 8, 3);
  s->mem[3] = floats_buf(s->ctx, 2 * 4 * 8 * 16, 4);
  s->mem[4] = floats_buf(s->ctx, 16 * 8, 5);
  s->mem[5] = floats_buf(s->ctx, 16 * 8, 6);
  layer_buffers(s);
}
static clattn_status sh_run(scenario *s) {
  const clattn_switchhead_layer_desc d = {
      .size = sizeof(clattn_switchhead_layer_desc),
      .d_model = 16,
      .heads = 2,
      .head_dim = 8,
      .experts = 4,
      .topk = 2};
  clattn_status st = clattn_layer_create_switchhead(
      s->ctx, &d, s->mem[0], s->mem[1], s->mem[2], s->mem[3], s->mem[4],
      s->mem[5], &s->layer);
  return st == CLATTN_OK ? layer_steps(s) : st;
}

/* ---- the GQA layer over a paged pool: a prefill chunk of 3 and a decode
 * step through a table of two pages of 2 (a retry appends the same rows
 * again, so its result is the clean run's) */

enum { PAGED_BLOCKS = 4, PAGED_PAGE = 2 };

static void gqa_paged_setup(scenario *s) {
  gqa_setup(s);
  const int table[2] = {3, 1}, lens_chunk[1] = {3}, lens_step[1] = {4};
  s->mem[4] = floats_buf(s->ctx, PAGED_BLOCKS * PAGED_PAGE * 8, 5); /* K */
  s->mem[5] = floats_buf(s->ctx, PAGED_BLOCKS * PAGED_PAGE * 8, 6); /* V */
  s->mem[6] = ints_buf(s->ctx, table, 2);
  s->mem[7] = ints_buf(s->ctx, lens_chunk, 1);
  s->mem[12] = ints_buf(s->ctx, lens_step, 1);
}
static clattn_status gqa_paged_run(scenario *s) {
  const clattn_layer_desc d = {.size = sizeof(clattn_layer_desc),
                               .d_model = 16,
                               .heads_q = 2,
                               .heads_kv = 1,
                               .head_dim_k = 8,
                               .head_dim_v = 8};
  const clattn_paged_pool pool = {.size = sizeof pool,
                                  .num_blocks = PAGED_BLOCKS,
                                  .page_size = PAGED_PAGE,
                                  .max_blocks = 2,
                                  .k_pool = s->mem[4],
                                  .v_pool = s->mem[5]};
  clattn_status st = clattn_layer_create(s->ctx, &d, s->mem[0], s->mem[1],
                                         s->mem[2], s->mem[3], &s->layer);
  if (st == CLATTN_OK)
    st = clattn_layer_step_paged(s->layer, &pool, LAYER_B, 3, 1, s->mem[6],
                                 s->mem[7], s->mem[8], s->mem[9], NULL);
  if (st == CLATTN_OK)
    st = clattn_layer_step_paged(s->layer, &pool, LAYER_B, 1, 1, s->mem[6],
                                 s->mem[12], s->mem[10], s->mem[11], NULL);
  return st;
}

/* ---- a decode step on a cache that a prefill filled: a failed step
 * leaves the cache as it was (the retry's result, and its length, are
 * those of the first clean step) */

static void gqa_cached_setup(scenario *s) {
  gqa_setup(s);
  const clattn_layer_desc d = {.size = sizeof(clattn_layer_desc),
                               .d_model = 16,
                               .heads_q = 2,
                               .heads_kv = 1,
                               .head_dim_k = 8,
                               .head_dim_v = 8};
  clattn_status st = clattn_layer_create(s->ctx, &d, s->mem[0], s->mem[1],
                                         s->mem[2], s->mem[3], &s->layer);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(s->ctx));
  st = clattn_kv_cache_create(s->layer, LAYER_B, 5, &s->cache);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(s->ctx));
  st = clattn_layer_prefill(s->layer, s->cache, LAYER_B, 3, 1, s->mem[8],
                            s->mem[9], NULL);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(s->ctx));
}
static clattn_status gqa_decode_run(scenario *s) {
  return clattn_layer_decode(s->layer, s->cache, s->mem[10], s->mem[11], NULL);
}
static int cached_result(scenario *s, float *out) {
  read_floats(s->ctx, s->mem[11], out, LAYER_B * LAYER_D);
  out[LAYER_B * LAYER_D] = (float)clattn_kv_cache_len(s->cache);
  return LAYER_B * LAYER_D + 1;
}
static void cached_teardown(scenario *s) {
  layer_undo(s);
  common_teardown(s);
}

/* ---- the tuning database: open, put, list, export, import */

static void db_setup(scenario *s) {
  make_tmp_dir();
  snprintf(s->path, sizeof s->path, "%s/faults.db", tmp_dir);
  unlink(s->path);
}
static clattn_status db_run(scenario *s) {
  clattn_status st = clattn_db_open(s->path, &s->db);
  if (st != CLATTN_OK)
    return st;
  clattn_tune_entry e = {.size = sizeof(clattn_tune_entry)};
  snprintf(e.fingerprint, sizeof e.fingerprint, "f0");
  snprintf(e.kernel, sizeof e.kernel, "prefill");
  snprintf(e.shape_class, sizeof e.shape_class, "b1");
  snprintf(e.params, sizeof e.params, "variant=1 rows=2");
  snprintf(e.status, sizeof e.status, "ok");
  e.median_s = 1e-3;
  snprintf(e.updated, sizeof e.updated, "2020-01-02T03:04:05Z");
  if ((st = clattn_db_put_tune(s->db, &e)) != CLATTN_OK)
    return st;
  clattn_tune_entry *rows = NULL;
  int n = 0;
  st = clattn_db_list_tune(s->db, NULL, NULL, NULL, sizeof *rows, &rows, &n);
  clattn_free(rows);
  if (st != CLATTN_OK)
    return st;
  if (n != 1)
    return CLATTN_ERR_DB;
  char file[600];
  snprintf(file, sizeof file, "%s.json", s->path);
  if ((st = clattn_db_export(s->db, file)) != CLATTN_OK)
    return st;
  int added = -1, updated = -1, unchanged = -1;
  st = clattn_db_import(s->db, file, &added, &updated, &unchanged);
  if (st == CLATTN_OK && (added != 0 || updated != 0 || unchanged != 1))
    return CLATTN_ERR_DB;
  return st;
}
static void db_undo(scenario *s) {
  clattn_db_close(s->db);
  s->db = NULL;
  unlink(s->path);
}

/* ---- a tuning run on a tiny budget: two candidates, one timed run each */

static void tune_setup(scenario *s) {
  make_tmp_dir();
  snprintf(s->path, sizeof s->path, "%s/tune.db", tmp_dir);
  unlink(s->path);
  s->ctx = new_ctx();
  clattn_status st = clattn_db_open(s->path, &s->db);
  cr_assert_eq(st, CLATTN_OK, "clattn_db_open: %s", clattn_db_errmsg(NULL));
}
static clattn_status tune_run(scenario *s) {
  clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
  o.strategy = CLATTN_TUNE_MODEL;
  o.max_candidates = 2;
  o.repeats = 1;
  o.fresh = 1;
  s->tune.size = sizeof s->tune;
  return clattn_tune_attention(s->ctx, s->db, &attn_desc, &o, &s->tune);
}
static clattn_status tune_decode_run(scenario *s) {
  clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
  o.strategy = CLATTN_TUNE_MODEL;
  o.max_candidates = 2;
  o.repeats = 1;
  o.fresh = 1;
  s->tune.size = sizeof s->tune;
  return clattn_tune_decode(s->ctx, s->db, &dec_desc, &o, &s->tune);
}
/* A candidate whose call fails is recorded "failed" with the message and
 * the run goes on; a run that fails among the verification's 31
 * interleaved rounds is one round of INFINITY, which the median absorbs. */
static int tune_absorbed(scenario *s, const char *call, const char *code) {
  clattn_tune_entry *rows = NULL;
  int n = 0, found = 0;
  clattn_status st =
      clattn_db_list_tune(s->db, NULL, NULL, NULL, sizeof *rows, &rows, &n);
  cr_assert_eq(st, CLATTN_OK, "list_tune: %s", clattn_db_errmsg(s->db));
  for (int i = 0; i < n; i++)
    found |= strcmp(rows[i].status, "ok") != 0 &&
             strstr(rows[i].message, call) != NULL &&
             strstr(rows[i].message, code) != NULL;
  clattn_free(rows);
  return (found && s->tune.rejected > 0) || s->tune.verified > 0;
}

#define SCENARIO(n, su, r, u, res)                                             \
  {                                                                            \
    .name = n, .setup = su, .run = r, .undo = u, .result = res,                \
    .teardown = common_teardown                                                \
  }
static const scenario all_scenarios[] = {
    SCENARIO("clattn_ctx_create", ctx_setup, ctx_run, ctx_undo, NULL),
    SCENARIO("clattn_attention", attn_setup, attn_run, NULL, attn_result),
    SCENARIO("clattn_attention with a tuning database", tuned_attn_setup,
             attn_run, NULL, attn_result),
    SCENARIO("clattn_attention with the options", attn_setup, attn_opts_run,
             NULL, attn_result),
    SCENARIO("clattn_decode", dec_setup, dec_run, NULL, dec_result),
    SCENARIO("clattn_kv_append", dec_setup, append_run, NULL, append_result),
    SCENARIO("clattn_talking_heads", th_setup, th_run, NULL, th_result),
    SCENARIO("clattn_explain_attention", attn_setup, explain_run, NULL, NULL),
    SCENARIO("GQA layer create + prefill + decode", gqa_setup, gqa_run,
             layer_undo, layer_result),
    SCENARIO("talking-heads layer create + prefill + decode", thl_setup,
             thl_run, layer_undo, layer_result),
    {.name = "clattn_tune_attention",
     .setup = tune_setup,
     .run = tune_run,
     .teardown = common_teardown,
     .absorbed = tune_absorbed},
    SCENARIO("Efficient layer create + prefill + decode", eff_setup, eff_run,
             layer_undo, layer_result),
    SCENARIO("SwitchHead layer create + prefill + decode", sh_setup, sh_run,
             layer_undo, layer_result),
    SCENARIO("GQA layer over a paged pool: create + chunk + decode step",
             gqa_paged_setup, gqa_paged_run, layer_undo, layer_result),
    {.name = "GQA layer decode after a prefill",
     .setup = gqa_cached_setup,
     .run = gqa_decode_run,
     .result = cached_result,
     .teardown = cached_teardown},
    {.name = "clattn_tune_decode",
     .setup = tune_setup,
     .run = tune_decode_run,
     .teardown = common_teardown,
     .absorbed = tune_absorbed},
    SCENARIO("clattn_db_open + put + list + export + import", db_setup, db_run,
             db_undo, NULL),
};

static scenario find_scenario(const char *name) {
  for (size_t i = 0; i < sizeof all_scenarios / sizeof all_scenarios[0]; i++)
    if (strcmp(all_scenarios[i].name, name) == 0)
      return all_scenarios[i];
  cr_assert_fail("no scenario %s", name);
  abort();
}

/* The clean run's result, and the count of what a clean run does. */
static int clean_run(scenario *s, float *golden) {
  s->setup(s);
  clattn_status st = s->run(s);
  cr_assert_eq(st, CLATTN_OK, "%s: %s", s->name, scenario_errmsg(s));
  int n = s->result ? s->result(s, golden) : 0;
  s->teardown(s);
  return n;
}

static void expect_same(scenario *s, const float *golden, int n,
                        const char *after) {
  static float got[OUT_MAX];
  if (s->result == NULL)
    return;
  cr_assert_eq(s->result(s, got), n);
  for (int i = 0; i < n; i++)
    cr_assert(fabsf(got[i] - golden[i]) <= 1e-5f * (1 + fabsf(golden[i])),
              "%s after %s: element %d is %g, the clean run's %g", s->name,
              after, i, got[i], golden[i]);
}

/* Where the failed allocation was, as the executable's offset (for
 * addr2line -e test_faults). */
static const char *alloc_site(void) {
  static char text[64];
  Dl_info info;
  const char *at = fault_alloc_site();
  if (at != NULL && dladdr(at, &info) != 0 && info.dli_fbase != NULL)
    snprintf(text, sizeof text, "called from +0x%lx",
             (unsigned long)(at - (const char *)info.dli_fbase));
  else
    snprintf(text, sizeof text, "called from %p", (const void *)at);
  return text;
}

/* The n of the sweep after n: every n up to 200, then every 7th. */
static long next_n(long n) { return n < 200 ? n + 1 : n + 7; }

/* ------------------------------------------------- host allocation sweep */

static void alloc_sweep(const char *name) {
  scenario s = find_scenario(name);
  static float golden[OUT_MAX];
  int n_out = clean_run(&s, golden);
  long injected = 0, fallbacks = 0;
  for (long n = 1;; n = next_n(n)) {
    char after[160];
    snprintf(after, sizeof after, "failing allocation %ld", n);
    if (getenv("FAULT_TRACE"))
      fprintf(stderr, "%s: failing allocation %ld\n", name, n);
    s.setup(&s);
    fault_reset();
    fault_cl_arm(0, CL_SUCCESS, NULL); /* no call fails; objects tracked */
    fault_alloc_arm(n);
    clattn_status st = s.run(&s);
    long count = fault_alloc_disarm();
    fault_cl_disarm();
    if (!fault_alloc_fired()) {
      cr_assert_eq(st, CLATTN_OK, "%s: no failure injected, yet %s: %s", name,
                   clattn_status_str(st), scenario_errmsg(&s));
      expect_same(&s, golden, n_out, "a clean run");
      s.teardown(&s);
      cr_assert_eq(fault_alloc_live(), 0, "%s: %ld blocks leaked", name,
                   fault_alloc_live());
      cr_assert_eq(fault_cl_live(), 0, "%s: %ld OpenCL objects leaked", name,
                   fault_cl_live());
      cr_log_info("%s: %ld allocations, %ld of them failed in turn (%ld "
                  "program-cache reads: built from source)",
                  name, count, injected, fallbacks);
      return;
    }
    injected++;
    snprintf(after, sizeof after, "failing allocation %ld %s", n, alloc_site());
    /* A failed read of the program-binary cache is a cache miss: the
     * call builds from source (the suite's cache is warm, so a source
     * build means exactly that) and must then be right. */
    clattn_cache_stats cs = {.size = sizeof(clattn_cache_stats)};
    if (st == CLATTN_OK && s.ctx != NULL) {
      clattn_ctx_cache_stats(s.ctx, &cs);
      if (cs.source_builds > 0) {
        fallbacks++;
        expect_same(&s, golden, n_out, after);
        s.teardown(&s);
        cr_assert_eq(fault_alloc_live(), 0, "%s %s: %ld blocks leaked", name,
                     after, fault_alloc_live());
        cr_assert_eq(fault_cl_live(), 0, "%s %s: %ld OpenCL objects leaked",
                     name, after, fault_cl_live());
        continue;
      }
    }
    cr_assert_eq(st, CLATTN_ERR_NOMEM, "%s %s: %s (%s)", name, after,
                 clattn_status_str(st), scenario_errmsg(&s));
    cr_assert(scenario_errmsg(&s)[0] != '\0', "%s %s: no message", name, after);
    /* the context stays usable: the same call again, without a fault */
    if (s.undo)
      s.undo(&s);
    st = s.run(&s);
    cr_assert_eq(st, CLATTN_OK, "%s %s, then a clean run: %s (%s)", name, after,
                 clattn_status_str(st), scenario_errmsg(&s));
    expect_same(&s, golden, n_out, after);
    s.teardown(&s);
    cr_assert_eq(fault_alloc_live(), 0, "%s %s: %ld blocks leaked", name, after,
                 fault_alloc_live());
    cr_assert_eq(fault_cl_live(), 0, "%s %s: %ld OpenCL objects leaked", name,
                 after, fault_cl_live());
  }
}

Test(alloc, ctx_create, .timeout = 300) { alloc_sweep("clattn_ctx_create"); }
Test(alloc, attention, .timeout = 300) { alloc_sweep("clattn_attention"); }
Test(alloc, tuned_attention, .timeout = 300) {
  alloc_sweep("clattn_attention with a tuning database");
}
Test(alloc, attention_options, .timeout = 300) {
  alloc_sweep("clattn_attention with the options");
}
Test(alloc, decode, .timeout = 300) { alloc_sweep("clattn_decode"); }
Test(alloc, kv_append, .timeout = 300) { alloc_sweep("clattn_kv_append"); }
Test(alloc, talking_heads, .timeout = 300) {
  alloc_sweep("clattn_talking_heads");
}
Test(alloc, explain, .timeout = 300) {
  alloc_sweep("clattn_explain_attention");
}
Test(alloc, gqa_layer, .timeout = 300) {
  alloc_sweep("GQA layer create + prefill + decode");
}
Test(alloc, th_layer, .timeout = 300) {
  alloc_sweep("talking-heads layer create + prefill + decode");
}
Test(alloc, efficient_layer, .timeout = 300) {
  alloc_sweep("Efficient layer create + prefill + decode");
}
Test(alloc, switchhead_layer, .timeout = 300) {
  alloc_sweep("SwitchHead layer create + prefill + decode");
}
Test(alloc, gqa_paged_layer, .timeout = 300) {
  alloc_sweep("GQA layer over a paged pool: create + chunk + decode step");
}
Test(alloc, gqa_layer_decode, .timeout = 300) {
  alloc_sweep("GQA layer decode after a prefill");
}
Test(alloc, db, .timeout = 300) {
  alloc_sweep("clattn_db_open + put + list + export + import");
}
Test(alloc, tune, .timeout = 300) { alloc_sweep("clattn_tune_attention"); }
Test(alloc, tune_decode, .timeout = 300) { alloc_sweep("clattn_tune_decode"); }

/* ------------------------------------------------------ OpenCL call sweep */

static void cl_sweep(const char *name, cl_int code) {
  scenario s = find_scenario(name);
  static float golden[OUT_MAX];
  int n_out = clean_run(&s, golden);
  long injected = 0, fallbacks = 0;
  const char *code_text = clattn_cl_errstr(code);
  for (long n = 1;; n = next_n(n)) {
    char after[160];
    if (getenv("FAULT_TRACE"))
      fprintf(stderr, "%s: failing OpenCL call %ld\n", name, n);
    s.setup(&s);
    fault_reset();
    fault_alloc_arm(0); /* no allocation fails; the blocks are tracked */
    fault_cl_arm(n, code, NULL);
    clattn_status st = s.run(&s);
    long count = fault_cl_disarm();
    fault_alloc_disarm();
    const char *call = fault_cl_fired();
    snprintf(after, sizeof after, "failing OpenCL call %ld (%s) with %s", n,
             call, code_text);
    if (call[0] == '\0') {
      cr_assert_eq(st, CLATTN_OK, "%s: no failure injected, yet %s: %s", name,
                   clattn_status_str(st), scenario_errmsg(&s));
      expect_same(&s, golden, n_out, "a clean run");
      s.teardown(&s);
      cr_assert_eq(fault_alloc_live(), 0, "%s: %ld blocks leaked", name,
                   fault_alloc_live());
      cr_assert_eq(fault_cl_live(), 0, "%s: %ld OpenCL objects leaked", name,
                   fault_cl_live());
      cr_log_info("%s: %ld OpenCL calls, %ld of them failed in turn with %s "
                  "(%ld program-binary loads: built from source)",
                  name, count, injected, code_text, fallbacks);
      return;
    }
    injected++;
    clattn_cache_stats cs = {.size = sizeof(clattn_cache_stats)};
    if (st == CLATTN_OK) {
      /* a program binary that does not load is a cache miss */
      clattn_ctx_cache_stats(s.ctx, &cs);
      if (cs.source_builds > 0)
        fallbacks++;
      else
        cr_assert(s.absorbed != NULL && s.absorbed(&s, call, code_text),
                  "%s %s: success%s", name, after,
                  s.absorbed ? ", and no rejected candidate names it" : "");
    } else {
      const clattn_status want = strcmp(call, "clBuildProgram") == 0
                                     ? CLATTN_ERR_BUILD
                                     : CLATTN_ERR_OPENCL;
      cr_assert_eq(st, want, "%s %s: %s (%s)", name, after,
                   clattn_status_str(st), scenario_errmsg(&s));
      const char *msg = scenario_errmsg(&s);
      cr_assert(strstr(msg, call) != NULL && strstr(msg, code_text) != NULL,
                "%s %s: the message does not name the call and its code: %s",
                name, after, msg);
      if (s.undo)
        s.undo(&s);
      st = s.run(&s);
      cr_assert_eq(st, CLATTN_OK, "%s %s, then a clean run: %s (%s)", name,
                   after, clattn_status_str(st), scenario_errmsg(&s));
    }
    expect_same(&s, golden, n_out, after);
    s.teardown(&s);
    cr_assert_eq(fault_alloc_live(), 0, "%s %s: %ld blocks leaked", name, after,
                 fault_alloc_live());
    cr_assert_eq(fault_cl_live(), 0, "%s %s: %ld OpenCL objects leaked", name,
                 after, fault_cl_live());
  }
}

#define CL_TESTS(id, scenario_name)                                            \
  Test(cl, id##_out_of_resources, .timeout = 300) {                            \
    cl_sweep(scenario_name, CL_OUT_OF_RESOURCES);                              \
  }                                                                            \
  Test(cl, id##_allocation_failure, .timeout = 300) {                          \
    cl_sweep(scenario_name, CL_MEM_OBJECT_ALLOCATION_FAILURE);                 \
  }
CL_TESTS(attention, "clattn_attention")
Test(cl, attention_options_out_of_resources, .timeout = 300) {
  cl_sweep("clattn_attention with the options", CL_OUT_OF_RESOURCES);
}
CL_TESTS(decode, "clattn_decode")
CL_TESTS(kv_append, "clattn_kv_append")
CL_TESTS(talking_heads, "clattn_talking_heads")
CL_TESTS(gqa_layer, "GQA layer create + prefill + decode")
CL_TESTS(th_layer, "talking-heads layer create + prefill + decode")
CL_TESTS(tune, "clattn_tune_attention")
CL_TESTS(gqa_layer_decode, "GQA layer decode after a prefill")
CL_TESTS(gqa_paged_layer,
         "GQA layer over a paged pool: create + chunk + decode step")
/* the two longer sweeps, one code each (the suite stays within minutes) */
Test(cl, efficient_layer_allocation_failure, .timeout = 300) {
  cl_sweep("Efficient layer create + prefill + decode",
           CL_MEM_OBJECT_ALLOCATION_FAILURE);
}
Test(cl, switchhead_layer_out_of_resources, .timeout = 300) {
  cl_sweep("SwitchHead layer create + prefill + decode", CL_OUT_OF_RESOURCES);
}

/* ------------------------------------------------ a kernel that fails */

static int files_in(const char *dir) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "find '%s' -type f 2>/dev/null | wc -l", dir);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  int n = -1;
  cr_assert_eq(fscanf(p, "%d", &n), 1);
  pclose(p);
  return n;
}

/* clBuildProgram fails (with a build log) on a cold program cache: a
 * CLATTN_ERR_BUILD naming the program and the log's first line, nothing
 * written to the cache; the next call builds and is right. */
Test(build, fails_then_builds, .timeout = 300) {
  scenario s = find_scenario("clattn_attention");
  static float golden[OUT_MAX];
  int n_out = clean_run(&s, golden);
  make_tmp_dir();
  char cache[600];
  snprintf(cache, sizeof cache, "%s/cold-cache", tmp_dir);
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  o.cache_dir = cache;
  fault_reset();
  fault_alloc_arm(0);
  cr_assert_eq(clattn_ctx_create(&o, &s.ctx), CLATTN_OK, "%s",
               clattn_ctx_errmsg(NULL));
  s.mem[0] = floats_buf(s.ctx, 3 * 2 * 8, 1);
  s.mem[1] = floats_buf(s.ctx, 5 * 8, 2);
  s.mem[2] = floats_buf(s.ctx, 5 * 8, 3);
  s.mem[3] = floats_buf(s.ctx, ATTN_O, 4);
  fault_cl_arm(1, CL_BUILD_PROGRAM_FAILURE, "clBuildProgram");
  clattn_status st = attn_run(&s);
  fault_cl_disarm();
  cr_assert_str_eq(fault_cl_fired(), "clBuildProgram");
  const char *msg = clattn_ctx_errmsg(s.ctx);
  cr_assert_eq(st, CLATTN_ERR_BUILD, "%s (%s)", clattn_status_str(st), msg);
  cr_assert(strstr(msg, "attention.cl") != NULL, "no program name: %s", msg);
  cr_assert(strstr(msg, "fault.c: injected build error") != NULL,
            "no build log: %s", msg);
  cr_assert(strstr(msg, "CL_BUILD_PROGRAM_FAILURE") != NULL, "%s", msg);
  cr_assert_eq(files_in(cache), 0, "a failed build left a file in %s", cache);
  clattn_cache_stats cs = {.size = sizeof(clattn_cache_stats)};
  clattn_ctx_cache_stats(s.ctx, &cs);
  cr_assert_eq(cs.disk_writes, 0);
  fault_cl_arm(0, CL_SUCCESS, NULL); /* count only: track the objects */
  st = attn_run(&s);
  fault_cl_disarm();
  cr_assert_eq(st, CLATTN_OK, "the next call: %s", clattn_ctx_errmsg(s.ctx));
  expect_same(&s, golden, n_out, "a failed build");
  clattn_ctx_cache_stats(s.ctx, &cs);
  cr_assert_eq(cs.source_builds, 1);
  cr_assert_eq(cs.disk_writes, 1);
  cr_assert_eq(files_in(cache), 1);
  s.teardown(&s);
  fault_alloc_disarm();
  cr_assert_eq(fault_alloc_live(), 0, "%ld blocks leaked", fault_alloc_live());
  cr_assert_eq(fault_cl_live(), 0, "%ld OpenCL objects leaked",
               fault_cl_live());
}

/* ------------------------------------------------------ a disk that fills */

static long file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* A database of `rows` tuning rows of another device. */
static void fill_db(const char *path, int rows) {
  clattn_db *db = NULL;
  unlink(path);
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK, "%s",
               clattn_db_errmsg(NULL));
  for (int i = 0; i < rows; i++) {
    clattn_tune_entry e = {.size = sizeof(clattn_tune_entry)};
    snprintf(e.fingerprint, sizeof e.fingerprint, "another-device");
    snprintf(e.kernel, sizeof e.kernel, "prefill");
    snprintf(e.shape_class, sizeof e.shape_class, "b%d", i + 1);
    snprintf(e.params, sizeof e.params, "variant=1 rows=4");
    snprintf(e.status, sizeof e.status, "ok");
    snprintf(e.message, sizeof e.message, "%0200d", i);
    e.median_s = 1e-3 * (i + 1);
    snprintf(e.updated, sizeof e.updated, "2020-01-02T03:04:05Z");
    cr_assert_eq(clattn_db_put_tune(db, &e), CLATTN_OK, "%s",
                 clattn_db_errmsg(db));
  }
  clattn_db_close(db);
}

static int count_rows(const char *path) {
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK, "reopening %s: %s", path,
               clattn_db_errmsg(NULL));
  clattn_tune_entry *rows = NULL;
  int n = 0;
  clattn_status st =
      clattn_db_list_tune(db, NULL, NULL, NULL, sizeof *rows, &rows, &n);
  cr_assert_eq(st, CLATTN_OK, "listing %s: %s", path, clattn_db_errmsg(db));
  clattn_free(rows);
  clattn_db_close(db);
  return n;
}

/* Runs fn in a child whose files may not grow past `limit` bytes (writes
 * beyond fail with EFBIG; SIGXFSZ ignored); returns its status and copies
 * its message. */
typedef clattn_status (*limited_fn)(const char *path, char *msg, size_t cap);
static clattn_status run_limited(long limit, limited_fn fn, const char *path,
                                 char *msg, size_t cap) {
  int fd[2];
  cr_assert_eq(pipe(fd), 0);
  pid_t pid = fork();
  cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
  if (pid == 0) {
    close(fd[0]);
    struct rlimit rl = {(rlim_t)limit, (rlim_t)limit};
    signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
      _exit(100);
    char m[1024] = "";
    clattn_status st = fn(path, m, sizeof m);
    if (write(fd[1], m, strlen(m) + 1) < 0)
      _exit(101);
    _exit(-st);
  }
  close(fd[1]);
  ssize_t got = read(fd[0], msg, cap - 1);
  msg[got > 0 ? got : 0] = '\0';
  close(fd[0]);
  int ws = 0;
  cr_assert_eq(waitpid(pid, &ws, 0), pid);
  cr_assert(WIFEXITED(ws), "the child died (signal %d)",
            WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
  cr_assert(WEXITSTATUS(ws) < 100, "the child's setup failed (%d)",
            WEXITSTATUS(ws));
  return (clattn_status)-WEXITSTATUS(ws);
}

static clattn_status export_fn(const char *path, char *msg, size_t cap) {
  clattn_db *db = NULL;
  clattn_status st = clattn_db_open(path, &db);
  if (st == CLATTN_OK) {
    char out[600];
    snprintf(out, sizeof out, "%s.json", path);
    st = clattn_db_export(db, out);
    snprintf(msg, cap, "%s", clattn_db_errmsg(db));
  } else {
    snprintf(msg, cap, "open: %s", clattn_db_errmsg(NULL));
  }
  clattn_db_close(db);
  return st;
}

/* How many entries of dir start with prefix (the export and any temporary
 * of it, whatever its random name). */
static int entries_starting(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  cr_assert(d != NULL, "cannot list %s", dir);
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    n += !strncmp(e->d_name, prefix, strlen(prefix));
  closedir(d);
  return n;
}

/* The export stops at the file size limit: CLATTN_ERR_IO naming the file,
 * no file at the target path nor a temporary one, the database intact. */
Test(disk_full, export, .timeout = 120) {
  make_tmp_dir();
  char path[600], out[700];
  snprintf(path, sizeof path, "%s/full-export.db", tmp_dir);
  snprintf(out, sizeof out, "%s.json", path);
  fill_db(path, 300);
  const long db_bytes = file_size(path);
  char msg[1024];
  /* the limit lets the database be read, not the export be written */
  long limit = 32768;
  cr_assert(db_bytes > limit, "the database is %ld bytes", db_bytes);
  clattn_status st = run_limited(limit, export_fn, path, msg, sizeof msg);
  cr_assert_eq(st, CLATTN_ERR_IO, "%s (%s)", clattn_status_str(st), msg);
  cr_assert(strstr(msg, out) != NULL, "the message names no file: %s", msg);
  cr_assert(strstr(msg, "File too large") != NULL, "%s", msg);
  cr_assert_neq(access(out, F_OK), 0, "a partial export at %s", out);
  cr_assert_eq(entries_starting(tmp_dir, "full-export.db.json"), 0,
               "a partial export or its temporary beside %s", out);
  cr_assert_eq(count_rows(path), 300);
  /* and with room, it exports */
  st = run_limited(1L << 30, export_fn, path, msg, sizeof msg);
  cr_assert_eq(st, CLATTN_OK, "%s", msg);
  cr_assert_eq(access(out, F_OK), 0);
  cr_assert_eq(entries_starting(tmp_dir, "full-export.db.json"), 1,
               "a temporary left beside %s", out);
}

/* An export to a full device: stdout redirected to /dev/full, and
 * /dev/full named as the file, which is written through (a character
 * device is never replaced). */
static clattn_status export_stdout_fn(const char *path, char *msg, size_t cap) {
  if (freopen("/dev/full", "w", stdout) == NULL)
    _exit(102);
  clattn_db *db = NULL;
  clattn_status st = clattn_db_open(path, &db);
  if (st == CLATTN_OK) {
    st = clattn_db_export(db, "-");
    snprintf(msg, cap, "%s", clattn_db_errmsg(db));
  }
  clattn_db_close(db);
  return st;
}

Test(disk_full, export_to_dev_full, .timeout = 120) {
  make_tmp_dir();
  char path[600], msg[1024];
  snprintf(path, sizeof path, "%s/devfull.db", tmp_dir);
  fill_db(path, 20);
  clattn_status st =
      run_limited(1L << 30, export_stdout_fn, path, msg, sizeof msg);
  cr_assert_eq(st, CLATTN_ERR_IO, "%s (%s)", clattn_status_str(st), msg);
  cr_assert(strstr(msg, "stdout") != NULL, "%s", msg);
  cr_assert(strstr(msg, "No space left on device") != NULL, "%s", msg);
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open(path, &db), CLATTN_OK);
  st = clattn_db_export(db, "/dev/full");
  cr_assert_eq(st, CLATTN_ERR_IO, "%s (%s)", clattn_status_str(st),
               clattn_db_errmsg(db));
  cr_assert(strstr(clattn_db_errmsg(db), "/dev/full") != NULL, "%s",
            clattn_db_errmsg(db));
  cr_assert(strstr(clattn_db_errmsg(db), "No space left on device") != NULL,
            "%s", clattn_db_errmsg(db));
  clattn_db_close(db);
  struct stat sb;
  cr_assert(stat("/dev/full", &sb) == 0 && S_ISCHR(sb.st_mode),
            "/dev/full is no longer a character device");
}

static clattn_status tune_fn(const char *path, char *msg, size_t cap) {
  clattn_ctx_opts co = {.size = sizeof(clattn_ctx_opts)};
  co.no_tuning = 1;
  clattn_ctx *ctx = NULL;
  clattn_status st = clattn_ctx_create(&co, &ctx);
  if (st != CLATTN_OK) {
    snprintf(msg, cap, "ctx: %s", clattn_ctx_errmsg(NULL));
    return st;
  }
  clattn_db *db = NULL;
  st = clattn_db_open(path, &db);
  if (st == CLATTN_OK) {
    clattn_tune_opts o = {.size = sizeof(clattn_tune_opts)};
    o.strategy = CLATTN_TUNE_EXHAUSTIVE;
    o.repeats = 1;
    o.fresh = 1;
    clattn_tune_result r = {.size = sizeof(clattn_tune_result)};
    st = clattn_tune_attention(ctx, db, &attn_desc, &o, &r);
    snprintf(msg, cap, "%s", clattn_ctx_errmsg(ctx));
  } else {
    snprintf(msg, cap, "open: %s", clattn_db_errmsg(NULL));
  }
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
  return st;
}

/* The database file may grow by a few pages only: the tuning run fails
 * with a status naming the database once a row no longer fits, and every
 * row stored before is there and readable. */
Test(disk_full, tune, .timeout = 300) {
  make_tmp_dir();
  char path[600], msg[1024];
  /* the same run with room first: the device compiler's own cache (PoCL
   * writes one, and dies on a write that fails) and the program cache are
   * then warm */
  snprintf(path, sizeof path, "%s/warm-tune.db", tmp_dir);
  clattn_status warm = run_limited(1L << 30, tune_fn, path, msg, sizeof msg);
  cr_assert_eq(warm, CLATTN_OK, "%s", msg);
  snprintf(path, sizeof path, "%s/full-tune.db", tmp_dir);
  fill_db(path, 20);
  const long before = file_size(path);
  clattn_status st =
      run_limited(before + 3 * 4096, tune_fn, path, msg, sizeof msg);
  cr_assert(st != CLATTN_OK, "the tuning run fit: %s", msg);
  cr_assert(strstr(msg, path) != NULL, "the message names no file: %s (%s)",
            msg, clattn_status_str(st));
  const int rows = count_rows(path);
  cr_assert_gt(rows, 20, "no tuning row stored before the disk filled (%s)",
               msg);
  cr_log_info("tune on a full disk: %s: %s; %d rows kept",
              clattn_status_str(st), msg, rows - 20);
}

/* ---------------------------------------------------------- migration */

/* Whether the file at path is still the old file it was: the same bytes,
 * its version without the id, and (from schema 6, which readers use) a
 * reader lists its tuning row. */
static void expect_old(const char *path, int version,
                       const unsigned char *bytes, size_t n, const char *what) {
  cr_expect(tdb_same_bytes(path, bytes, n), "%s: the file changed", what);
  cr_expect_eq(tdb_user_version(path), version, "%s", what);
  cr_expect_eq(tdb_application_id(path), 0u, "%s", what);
  if (version < 6)
    return;
  clattn_db *db = NULL;
  cr_assert_eq(clattn_db_open_readonly(path, &db), CLATTN_OK, "%s: %s", what,
               clattn_db_errmsg(NULL));
  clattn_tune_entry *rows = NULL;
  int rows_n = 0;
  cr_expect_eq(
      clattn_db_list_tune(db, NULL, NULL, NULL, sizeof *rows, &rows, &rows_n),
      CLATTN_OK);
  cr_expect_eq(rows_n, 1, "%s: %d rows", what, rows_n);
  clattn_free(rows);
  clattn_db_close(db);
}

/* clattn_db_open of path with its n-th SQL statement failing (crash 0) or
 * ending the process (crash 1, in a child); *fired names the statement
 * ("" when the open ran through). */
static clattn_status open_with_fault(const char *path, long n, int crash,
                                     char *fired, size_t cap) {
  clattn_db *db = NULL;
  fired[0] = '\0';
  if (!crash) {
    fault_sql_arm(n, 0);
    const clattn_status st = clattn_db_open(path, &db);
    fault_sql_disarm();
    snprintf(fired, cap, "%s", fault_sql_fired());
    clattn_db_close(db);
    cr_assert(st == CLATTN_OK || fired[0], "failed without a fault: %s",
              clattn_db_errmsg(NULL));
    return st;
  }
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    fault_sql_arm(n, 1);
    const clattn_status st = clattn_db_open(path, &db);
    fault_sql_disarm();
    clattn_db_close(db);
    _exit(st == CLATTN_OK ? 0 : 1);
  }
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) != 1,
            "the open failed without a fault (status %d)", status);
  if (WEXITSTATUS(status) == 0)
    return CLATTN_OK;
  snprintf(fired, cap, "(the process ended at it)");
  return CLATTN_ERR_DB;
}

/* The migration of a file of an older clattn (tests/data: schema 3, five
 * steps to go, and schema 7, one), in rollback-journal and WAL mode,
 * interrupted at each of the library's SQL statements in turn, by a
 * failure and by the process ending there: the open fails and the file is
 * byte for byte the old one and reads as its version, except after the
 * commit (setting WAL mode, which leaves the migrated file); the open
 * without a fault then migrates it. */
Test(migration, interrupted_at_every_statement, .timeout = 120) {
  static const struct {
    const char *sql;
    int version;
  } olds[] = {{CLATTN_TEST_DATA "/clattn_schema3.sql", 3},
              {CLATTN_TEST_DATA "/clattn_schema7.sql", 7}};
  make_tmp_dir();
  char path[600], what[256], fired[128];
  snprintf(path, sizeof path, "%s/current.db", tmp_dir);
  const int current = tdb_current_version(path);
  snprintf(path, sizeof path, "%s/old.db", tmp_dir);
  for (int k = 0; k < 2; k++) {
    long total[2] = {0, 0}; /* statements of an open, by failures (first) */
    for (int mode = 0; mode < 4; mode++) {
      const int wal = mode & 1, crash = mode >> 1;
      long n = 1;
      for (;; n++) {
        tdb_from_sql(path, olds[k].sql, wal);
        size_t len = 0;
        unsigned char *bytes = tdb_bytes(path, &len);
        const clattn_status st =
            open_with_fault(path, n, crash, fired, sizeof fired);
        snprintf(what, sizeof what, "schema %d, %s mode, statement %ld %s: %s",
                 olds[k].version, wal ? "WAL" : "rollback", n,
                 crash ? "ends the process" : "fails", fired);
        if (st == CLATTN_OK) {
          free(bytes);
          break;
        }
        if (tdb_user_version(path) == current) {
          /* only what follows the commit may leave the migrated file */
          cr_expect_eq(tdb_application_id(path), TDB_CLATTN_APPLICATION_ID,
                       "%s", what);
          cr_expect(crash ? n == total[wal]
                          : strstr(fired, "journal_mode") != NULL,
                    "%s: migrated, but the fault came before the commit", what);
        } else {
          expect_old(path, olds[k].version, bytes, len, what);
        }
        free(bytes);
      }
      cr_expect_geq(n, 5, "schema %d: the open ran only %ld statements",
                    olds[k].version, n - 1);
      cr_expect_eq(tdb_user_version(path), current);
      cr_expect_eq(tdb_application_id(path), TDB_CLATTN_APPLICATION_ID);
      if (!crash)
        total[wal] = n - 1;
      else
        cr_expect_eq(n - 1, total[wal],
                     "schema %d: ended and failed opens "
                     "ran different statements",
                     olds[k].version);
      cr_log_info("schema %d, %s mode: the open runs %ld statements",
                  olds[k].version, wal ? "WAL" : "rollback", n - 1);
    }
  }
}
