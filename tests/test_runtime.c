/* test_runtime.c - status codes, error messages, argument checks ("nothing
 * is enqueued when a call fails its argument checks"), application-owned
 * queues, events, the program cache and device selection. */
#define _DEFAULT_SOURCE /* mkdtemp, setenv */
#include "util.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ statuses */

Test(status, strings) {
  struct {
    clattn_status st;
    int num;
    const char *text;
  } all[] = {
#define X_(name, num, text) {name, num, text},
      CLATTN_STATUS_MAP(X_)
#undef X_
  };
  int n = (int)(sizeof all / sizeof all[0]);
  cr_expect_eq(n, 15, "status map has %d codes", n);
  for (int i = 0; i < n; i++) {
    cr_expect_eq((int)all[i].st, all[i].num);
    const char *s = clattn_status_str(all[i].st);
    cr_assert_not_null(s, "status %d has no string", all[i].num);
    cr_expect_str_eq(s, all[i].text, "status %d: \"%s\"", all[i].num, s);
    for (int j = 0; j < i; j++)
      cr_expect_str_neq(s, clattn_status_str(all[j].st));
  }
  /* numbers are stable */
  cr_expect_eq(CLATTN_OK, 0);
  cr_expect_eq(CLATTN_ERR_INVALID_ARG, -1);
  cr_expect_eq(CLATTN_ERR_CAPACITY, -12);
  cr_expect_eq(CLATTN_ERR_NOT_FOUND, -13);
  cr_expect_eq(CLATTN_ERR_DB, -14);
  const char *u = clattn_status_str((clattn_status)-999);
  cr_expect(u != NULL && u[0] != '\0', "unknown status gives no string");
}

Test(status, version_and_sizes) {
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", CLATTN_VERSION_MAJOR,
           CLATTN_VERSION_MINOR, CLATTN_VERSION_PATCH);
  cr_expect_str_eq(clattn_version(), want);
  cr_expect_eq(clattn_dtype_size(CLATTN_F32), 4);
  cr_expect_eq(clattn_dtype_size(CLATTN_F16), 2);
  cr_expect_eq(clattn_dtype_size(CLATTN_BF16), 2);
  cr_expect_eq(clattn_dtype_size((clattn_dtype)7), 0);
}

Test(ctx, null_handles) {
  cr_expect_not_null(clattn_ctx_errmsg(NULL));
  cr_expect_eq(clattn_ctx_create(NULL, NULL), CLATTN_ERR_INVALID_ARG);
  cr_expect_null(clattn_ctx_cl_context(NULL));
  cr_expect_null(clattn_ctx_queue(NULL));
  cr_expect_null(clattn_ctx_device(NULL));
  clattn_cache_stats cs = {.size = sizeof(clattn_cache_stats)};
  memset(&cs, 0xab, sizeof cs);
  cs.size = sizeof cs;
  clattn_ctx_cache_stats(NULL, &cs);
  cr_expect(cs.memory_hits == 0 && cs.source_builds == 0);
  clattn_ctx_destroy(NULL);
  clattn_ctx_clear_programs(NULL);
  clattn_layer_destroy(NULL);
  clattn_kv_cache_destroy(NULL);
  clattn_ctx *ctx = tu_ctx();
  cr_expect_not_null(clattn_ctx_cl_context(ctx));
  cr_expect_not_null(clattn_ctx_queue(ctx));
  cr_expect_not_null(clattn_ctx_device(ctx));
  cr_expect_str_eq(clattn_ctx_errmsg(ctx), "", "fresh ctx has a message");
  clattn_ctx_destroy(ctx);
}

/* -------------------------------------------------- attention misuse */

/* A small valid problem and its buffers; o pre-filled with a sentinel. */
typedef struct prob {
  clattn_ctx *ctx;
  clattn_attn_desc d;
  int b, n, m, h, dk;
  size_t nq, nk, no;
  cl_mem q, k, v, lens, o, small;
  float *hq, *hk, *hv;
} prob;

#define SENT 0x3c

static void prob_init(prob *p, clattn_ctx *ctx) {
  memset(p, 0, sizeof *p);
  p->ctx = ctx;
  p->b = 2;
  p->n = 5;
  p->m = 9;
  p->h = 2;
  p->dk = 16;
  p->nq = (size_t)p->b * p->n * p->h * p->dk;
  p->nk = (size_t)p->b * p->m * p->h * p->dk;
  p->no = p->nq;
  p->hq = tu_alloc(p->nq * 4);
  p->hk = tu_alloc(p->nk * 4);
  p->hv = tu_alloc(p->nk * 4);
  tu_rng r = tu_rng_seed(4);
  tu_fill(&r, p->hq, p->nq, 1);
  tu_fill(&r, p->hk, p->nk, 1);
  tu_fill(&r, p->hv, p->nk, 1);
  p->q = tu_upload(ctx, p->hq, p->nq, CLATTN_F32);
  p->k = tu_upload(ctx, p->hk, p->nk, CLATTN_F32);
  p->v = tu_upload(ctx, p->hv, p->nk, CLATTN_F32);
  int lens[2] = {9, 4};
  p->lens = tu_upload_int(ctx, lens, 2);
  p->o = tu_sentinel(ctx, p->no, CLATTN_F32, SENT);
  p->small = tu_buffer(ctx, 4); /* < batch int32 */
  clattn_attn_desc d = {.size = sizeof(clattn_attn_desc),
                        .batch = p->b,
                        .n_q = p->n,
                        .n_kv = p->m,
                        .heads_q = p->h,
                        .heads_kv = p->h,
                        .head_dim_k = p->dk,
                        .head_dim_v = p->dk,
                        .dtype = CLATTN_F32,
                        .causal = 1};
  p->d = d;
}

static void prob_free(prob *p) {
  tu_release(p->q);
  tu_release(p->k);
  tu_release(p->v);
  tu_release(p->lens);
  tu_release(p->o);
  tu_release(p->small);
  free(p->hq);
  free(p->hk);
  free(p->hv);
}

/* o still holds the sentinel everywhere. */
static int untouched(prob *p) {
  size_t bytes = p->no * 4;
  unsigned char *b = tu_alloc(bytes);
  tu_read_bytes(p->ctx, p->o, b, bytes);
  int ok = 1;
  for (size_t i = 0; i < bytes && ok; i++)
    ok = b[i] == SENT;
  free(b);
  return ok;
}

/* Expect status `want` from a failing call, a message, and no writes. */
#define EXPECT_FAIL(p, call, want, label)                                      \
  do {                                                                         \
    clattn_status st_ = (call);                                                \
    cr_expect_eq(st_, (want), "%s: got %d (%s), want %d (%s)", (label),        \
                 (int)st_, clattn_status_str(st_), (int)(want),                \
                 clattn_status_str(want));                                     \
    if (st_ != CLATTN_OK && st_ != CLATTN_ERR_MISUSE) /* MISUSE: no ctx */     \
      cr_expect(clattn_ctx_errmsg((p)->ctx)[0] != '\0',                        \
                "%s: empty error message", (label));                           \
    cr_expect(untouched(p), "%s: the failed call wrote to o", (label));        \
  } while (0)

Test(misuse, attention) {
  clattn_ctx *ctx = tu_ctx();
  prob p;
  prob_init(&p, ctx);
  clattn_attn_desc d = {.size = sizeof(clattn_attn_desc)};
  clattn_params prm = {.size = sizeof(clattn_params)};
#define ATT(desc)                                                              \
  clattn_attention(ctx, &(desc), p.q, p.k, p.v, p.lens, p.o, NULL)
  EXPECT_FAIL(&p,
              clattn_attention(NULL, &p.d, p.q, p.k, p.v, p.lens, p.o, NULL),
              CLATTN_ERR_MISUSE, "NULL ctx");
  EXPECT_FAIL(&p, clattn_attention(ctx, NULL, p.q, p.k, p.v, p.lens, p.o, NULL),
              CLATTN_ERR_INVALID_ARG, "NULL desc");
  EXPECT_FAIL(&p,
              clattn_attention(ctx, &p.d, NULL, p.k, p.v, p.lens, p.o, NULL),
              CLATTN_ERR_INVALID_ARG, "NULL q");
  EXPECT_FAIL(&p,
              clattn_attention(ctx, &p.d, p.q, NULL, p.v, p.lens, p.o, NULL),
              CLATTN_ERR_INVALID_ARG, "NULL k");
  EXPECT_FAIL(&p,
              clattn_attention(ctx, &p.d, p.q, p.k, NULL, p.lens, p.o, NULL),
              CLATTN_ERR_INVALID_ARG, "NULL v");
  EXPECT_FAIL(&p,
              clattn_attention(ctx, &p.d, p.q, p.k, p.v, p.lens, NULL, NULL),
              CLATTN_ERR_INVALID_ARG, "NULL o");
  d = p.d;
  d.batch = 0;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_SHAPE, "batch 0");
  d = p.d;
  d.batch = -3;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_SHAPE, "batch -3");
  d = p.d;
  d.n_q = 0;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_SHAPE, "n_q 0");
  d = p.d;
  d.n_kv = -1;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_SHAPE, "n_kv -1");
  d = p.d;
  d.heads_q = 0;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_SHAPE, "heads_q 0");
  d = p.d;
  d.head_dim_v = 0;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_SHAPE, "head_dim_v 0");
  d = p.d;
  d.heads_q = 3;
  d.heads_kv = 2;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_SHAPE, "heads_q %% heads_kv != 0");
  d = p.d;
  d.head_dim_k = CLATTN_MAX_HEAD_DIM + 1;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_UNSUPPORTED, "head_dim_k CLATTN_MAX_HEAD_DIM + 1");
  d = p.d;
  d.head_dim_v = CLATTN_MAX_HEAD_DIM + 8;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_UNSUPPORTED, "head_dim_v CLATTN_MAX_HEAD_DIM + 8");
  d = p.d;
  d.dtype = (clattn_dtype)5;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_INVALID_ARG, "dtype 5");
  d = p.d;
  d.kv_layout = (clattn_layout)2;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_INVALID_ARG, "kv_layout 2");
  d = p.d;
  d.scale = -1.0f;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_INVALID_ARG, "scale -1");
  d = p.d;
  d.scale = NAN;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_INVALID_ARG, "scale NaN");
  /* buffers too small: each one, and the shapes that outgrow them */
  EXPECT_FAIL(&p,
              clattn_attention(ctx, &p.d, p.small, p.k, p.v, p.lens, p.o, NULL),
              CLATTN_ERR_BUFFER_TOO_SMALL, "small q");
  EXPECT_FAIL(&p,
              clattn_attention(ctx, &p.d, p.q, p.k, p.small, p.lens, p.o, NULL),
              CLATTN_ERR_BUFFER_TOO_SMALL, "small v");
  EXPECT_FAIL(&p,
              clattn_attention(ctx, &p.d, p.q, p.k, p.v, p.small, p.o, NULL),
              CLATTN_ERR_BUFFER_TOO_SMALL, "small kv_lens");
  d = p.d;
  d.batch = 3;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_BUFFER_TOO_SMALL, "batch 3 > buffers");
  d = p.d;
  d.n_kv = p.m + 1;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_BUFFER_TOO_SMALL, "n_kv > buffers");
  d = p.d;
  d.head_dim_v = 2 * p.dk;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_BUFFER_TOO_SMALL, "dv > buffers");
  d = p.d;
  d.dtype = CLATTN_F16;
  d.batch = 3;
  d.n_q = 6;
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_BUFFER_TOO_SMALL, "f16, too big");
  /* parameters */
  d = p.d;
  d.params = &prm;
  prm = (clattn_params){.size = sizeof(clattn_params), .variant = 4};
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_INVALID_ARG, "variant 4");
  /* variant 3 needs subgroups: refused, never built, where there are none */
  prm = (clattn_params){.size = sizeof(clattn_params), .variant = 3};
  if (!tu_has_subgroups())
    EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_UNSUPPORTED, "variant 3, no subgroups");
  prm = (clattn_params){.size = sizeof(clattn_params), .variant = -1};
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_INVALID_ARG, "variant -1");
  prm = (clattn_params){.size = sizeof(clattn_params), .variant = 1, .rows = -2};
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_INVALID_ARG, "rows -2");
  prm = (clattn_params){.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 24};
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_INVALID_ARG, "variant 1 keys 24");
  prm = (clattn_params){.size = sizeof(clattn_params), .variant = 1, .rows = 64, .keys = 16};
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_INVALID_ARG, "variant 1 rows 64");
  prm = (clattn_params){.size = sizeof(clattn_params), .variant = 2, .keys = 512, .wg = 64};
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_INVALID_ARG, "variant 2 keys 512");
  size_t maxwg = 0;
  cl_int err =
      clGetDeviceInfo(clattn_ctx_device(ctx), CL_DEVICE_MAX_WORK_GROUP_SIZE,
                      sizeof maxwg, &maxwg, NULL);
  cr_assert_eq(err, CL_SUCCESS);
  prm =
      (clattn_params){.size = sizeof(clattn_params), .variant = 2, .keys = 16, .wg = (int)maxwg * 2};
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_UNSUPPORTED, "variant 2 wg > device");
  prm =
      (clattn_params){.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 16, .wg = (int)maxwg * 2};
  EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_UNSUPPORTED, "variant 1 wg > device");
  cl_ulong lmem = 0;
  clGetDeviceInfo(clattn_ctx_device(ctx), CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem,
                  &lmem, NULL);
  d.head_dim_k = d.head_dim_v = 16; /* 256 keys x 32 floats = 32 KiB */
  if (lmem < 256 * 32 * 4) {
    prm = (clattn_params){.size = sizeof(clattn_params), .variant = 2, .keys = 256, .wg = 1};
    EXPECT_FAIL(&p, ATT(d), CLATTN_ERR_UNSUPPORTED, "local memory");
  }
  /* the valid call works and writes o (so the checks above mean
   * something) */
  clattn_status st = ATT(p.d);
  cr_assert_eq(st, CLATTN_OK, "valid call: %s", clattn_ctx_errmsg(ctx));
  cr_expect_not(untouched(&p), "the valid call did not write o");
#undef ATT
  prob_free(&p);
  clattn_ctx_destroy(ctx);
}

/* ------------------------------------------------ decode/append misuse */

Test(misuse, decode_and_append) {
  clattn_ctx *ctx = tu_ctx();
  int b = 2, cap = 8, h = 2, d = 16;
  size_t nc = (size_t)b * cap * h * d, nq = (size_t)b * h * d;
  float *hc = tu_alloc(nc * 4);
  tu_rng r = tu_rng_seed(8);
  tu_fill(&r, hc, nc, 1);
  cl_mem kc = tu_upload(ctx, hc, nc, CLATTN_F32);
  cl_mem vc = tu_upload(ctx, hc, nc, CLATTN_F32);
  cl_mem q = tu_upload(ctx, hc, nq, CLATTN_F32);
  int lens_h[2] = {8, 3};
  cl_mem lens = tu_upload_int(ctx, lens_h, 2);
  cl_mem small = tu_buffer(ctx, 4);
  prob p; /* reuse the sentinel check: o is p.o */
  memset(&p, 0, sizeof p);
  p.ctx = ctx;
  p.no = nq;
  p.o = tu_sentinel(ctx, nq, CLATTN_F32, SENT);
  clattn_decode_desc dd = {.size = sizeof(clattn_decode_desc),
                           .batch = b,
                           .capacity = cap,
                           .heads_q = h,
                           .heads_kv = h,
                           .head_dim_k = d,
                           .head_dim_v = d,
                           .dtype = CLATTN_F32};
  clattn_decode_desc x = {.size = sizeof(clattn_decode_desc)};
  clattn_params prm = {.size = sizeof(clattn_params)};
#define DEC(desc) clattn_decode(ctx, &(desc), q, kc, vc, lens, p.o, NULL)
  EXPECT_FAIL(&p, clattn_decode(NULL, &dd, q, kc, vc, lens, p.o, NULL),
              CLATTN_ERR_MISUSE, "decode NULL ctx");
  EXPECT_FAIL(&p, clattn_decode(ctx, NULL, q, kc, vc, lens, p.o, NULL),
              CLATTN_ERR_INVALID_ARG, "decode NULL desc");
  EXPECT_FAIL(&p, clattn_decode(ctx, &dd, q, kc, vc, NULL, p.o, NULL),
              CLATTN_ERR_INVALID_ARG, "decode NULL lens");
  EXPECT_FAIL(&p, clattn_decode(ctx, &dd, NULL, kc, vc, lens, p.o, NULL),
              CLATTN_ERR_INVALID_ARG, "decode NULL q");
  EXPECT_FAIL(&p, clattn_decode(ctx, &dd, q, kc, NULL, lens, p.o, NULL),
              CLATTN_ERR_INVALID_ARG, "decode NULL v_cache");
  EXPECT_FAIL(&p, clattn_decode(ctx, &dd, q, kc, vc, small, p.o, NULL),
              CLATTN_ERR_BUFFER_TOO_SMALL, "decode small lens");
  EXPECT_FAIL(&p, clattn_decode(ctx, &dd, small, kc, vc, lens, p.o, NULL),
              CLATTN_ERR_BUFFER_TOO_SMALL, "decode small q");
  x = dd;
  x.capacity = 0;
  EXPECT_FAIL(&p, DEC(x), CLATTN_ERR_SHAPE, "decode capacity 0");
  x = dd;
  x.batch = -1;
  EXPECT_FAIL(&p, DEC(x), CLATTN_ERR_SHAPE, "decode batch -1");
  x = dd;
  x.heads_kv = 3;
  x.heads_q = 4;
  EXPECT_FAIL(&p, DEC(x), CLATTN_ERR_SHAPE, "decode hq %% hkv");
  x = dd;
  x.head_dim_k = CLATTN_MAX_HEAD_DIM + 1;
  EXPECT_FAIL(&p, DEC(x), CLATTN_ERR_UNSUPPORTED,
              "decode head dim CLATTN_MAX_HEAD_DIM + 1");
  x = dd;
  x.capacity = cap + 1;
  EXPECT_FAIL(&p, DEC(x), CLATTN_ERR_BUFFER_TOO_SMALL, "decode cap > buffer");
  x = dd;
  x.cache_layout = (clattn_layout)9;
  EXPECT_FAIL(&p, DEC(x), CLATTN_ERR_INVALID_ARG, "decode layout 9");
  x = dd;
  x.params = &prm;
  prm = (clattn_params){.size = sizeof(clattn_params), .splits = -2};
  EXPECT_FAIL(&p, DEC(x), CLATTN_ERR_INVALID_ARG, "decode splits -2");
  prm = (clattn_params){.size = sizeof(clattn_params), .variant = 7};
  EXPECT_FAIL(&p, DEC(x), CLATTN_ERR_INVALID_ARG, "decode variant 7");
  prm = (clattn_params){.size = sizeof(clattn_params), .variant = 1, .prefetch = 3};
  EXPECT_FAIL(&p, DEC(x), CLATTN_ERR_INVALID_ARG, "decode prefetch 3");
  prm = (clattn_params){.size = sizeof(clattn_params), .variant = 2, .wg = 1 << 20};
  EXPECT_FAIL(&p, DEC(x), CLATTN_ERR_UNSUPPORTED, "decode wg 2^20");

  /* kv_append: the caches must stay as they were */
  cl_mem kn = tu_upload(ctx, hc, (size_t)b * 3 * h * d, CLATTN_F32);
  int pos_h[2] = {0, 1};
  cl_mem pos = tu_upload_int(ctx, pos_h, 2);
  prob pk; /* sentinel-filled cache as the "o" to watch */
  memset(&pk, 0, sizeof pk);
  pk.ctx = ctx;
  pk.no = nc;
  pk.o = tu_sentinel(ctx, nc, CLATTN_F32, SENT);
  EXPECT_FAIL(&pk, clattn_kv_append(NULL, &dd, 3, kn, kn, pos, pk.o, vc, NULL),
              CLATTN_ERR_MISUSE, "append NULL ctx");
  EXPECT_FAIL(&pk, clattn_kv_append(ctx, &dd, 0, kn, kn, pos, pk.o, vc, NULL),
              CLATTN_ERR_SHAPE, "append n_new 0");
  EXPECT_FAIL(&pk, clattn_kv_append(ctx, &dd, 3, kn, kn, NULL, pk.o, vc, NULL),
              CLATTN_ERR_INVALID_ARG, "append NULL pos");
  EXPECT_FAIL(&pk, clattn_kv_append(ctx, &dd, 4, kn, kn, pos, pk.o, vc, NULL),
              CLATTN_ERR_BUFFER_TOO_SMALL, "append k_new too small");
  EXPECT_FAIL(&pk, clattn_kv_append(ctx, &dd, 3, kn, kn, small, pk.o, vc, NULL),
              CLATTN_ERR_BUFFER_TOO_SMALL, "append pos too small");
  x = dd;
  x.capacity = 2 * cap;
  EXPECT_FAIL(&pk, clattn_kv_append(ctx, &x, 3, kn, kn, pos, pk.o, vc, NULL),
              CLATTN_ERR_BUFFER_TOO_SMALL, "append cache too small");
  /* and the valid calls work */
  cr_assert_eq(DEC(dd), CLATTN_OK, "valid decode: %s", clattn_ctx_errmsg(ctx));
  cr_expect_not(untouched(&p), "valid decode did not write o");
  cr_assert_eq(clattn_kv_append(ctx, &dd, 3, kn, kn, pos, pk.o, vc, NULL),
               CLATTN_OK, "valid append: %s", clattn_ctx_errmsg(ctx));
  cr_expect_not(untouched(&pk), "valid append did not write");
#undef DEC
  tu_release(kc);
  tu_release(vc);
  tu_release(q);
  tu_release(lens);
  tu_release(small);
  tu_release(p.o);
  tu_release(pk.o);
  tu_release(kn);
  tu_release(pos);
  free(hc);
  clattn_ctx_destroy(ctx);
}

/* ------------------------- wait lists and buffers of another context */

/* The context's message holds `want`. */
#define EXPECT_MSG(ctx, want, label)                                           \
  cr_expect(strstr(clattn_ctx_errmsg(ctx), (want)) != NULL,                    \
            "%s: message \"%s\" does not say \"%s\"", (label),                 \
            clattn_ctx_errmsg(ctx), (want))

/* What each call hands on to OpenCL is checked before anything is
 * enqueued: a wait list with a NULL where events belong (the driver would
 * crash on it), and buffers of another cl_context, on a first call and on
 * a memoised one. */
Test(misuse, wait_lists_and_foreign_buffers) {
  clattn_ctx *ctx = tu_ctx();
  prob p;
  prob_init(&p, ctx);
  clattn_decode_desc dd = {.size = sizeof(clattn_decode_desc),
                           .batch = p.b,
                           .capacity = p.m,
                           .heads_q = p.h,
                           .heads_kv = p.h,
                           .head_dim_k = p.dk,
                           .head_dim_v = p.dk,
                           .dtype = CLATTN_F32};
  cl_int err = CL_SUCCESS;
  cl_event gate = clCreateUserEvent(clattn_ctx_cl_context(ctx), &err);
  cr_assert_eq(err, CL_SUCCESS);
  cl_event done = NULL;

  clattn_events no_list = {sizeof(clattn_events), 2, NULL, &done};
  EXPECT_FAIL(&p,
              clattn_attention(ctx, &p.d, p.q, p.k, p.v, p.lens, p.o, &no_list),
              CLATTN_ERR_INVALID_ARG, "attention: num_wait 2, wait NULL");
  EXPECT_MSG(ctx, "clattn_events: num_wait is 2 but wait is NULL", "attention");
  EXPECT_FAIL(&p, clattn_decode(ctx, &dd, p.q, p.k, p.v, p.lens, p.o, &no_list),
              CLATTN_ERR_INVALID_ARG, "decode: num_wait 2, wait NULL");
  EXPECT_MSG(ctx, "num_wait is 2 but wait is NULL", "decode");
  const cl_event holes[2] = {gate, NULL};
  clattn_events holed = {sizeof(clattn_events), 2, holes, &done};
  EXPECT_FAIL(&p,
              clattn_attention(ctx, &p.d, p.q, p.k, p.v, p.lens, p.o, &holed),
              CLATTN_ERR_INVALID_ARG, "attention: wait[1] NULL");
  EXPECT_MSG(ctx, "clattn_events: wait[1] is NULL", "attention");
  /* the append writes into its caches: p.o is the K cache to watch */
  prob pk = p;
  pk.o = tu_sentinel(ctx, p.nk, CLATTN_F32, SENT);
  pk.no = p.nk;
  EXPECT_FAIL(
      &pk, clattn_kv_append(ctx, &dd, 1, p.q, p.q, p.lens, pk.o, p.v, &holed),
      CLATTN_ERR_INVALID_ARG, "kv_append: wait[1] NULL");
  EXPECT_MSG(ctx, "clattn_events: wait[1] is NULL", "kv_append");
  cr_expect_null(done, "a refused call gave an event");

  /* a buffer of a second cl_context on the same device: each argument */
  cl_device_id dev = clattn_ctx_device(ctx);
  cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
  cl_mem alien = clCreateBuffer(other, CL_MEM_READ_WRITE, p.nk * 4, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
  static const char *const names[5] = {"q", "k", "v", "kv_lens", "o"};
  for (int memoised = 0; memoised <= 1; memoised++) {
    if (memoised) { /* the same call, valid, first: its choice is memoised */
      cr_assert_eq(
          clattn_attention(ctx, &p.d, p.q, p.k, p.v, p.lens, p.o, NULL),
          CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
      cr_assert_eq(clFinish(clattn_ctx_queue(ctx)), CL_SUCCESS);
      tu_release(p.o);
      p.o = tu_sentinel(ctx, p.no, CLATTN_F32, SENT);
    }
    for (int i = 0; i < 4; i++) { /* o: below, not watched by untouched */
      cl_mem b[5] = {p.q, p.k, p.v, p.lens, p.o};
      b[i] = alien;
      char label[64], want[96];
      snprintf(label, sizeof label, "attention, %s foreign%s", names[i],
               memoised ? ", memoised" : "");
      snprintf(want, sizeof want, "buffer %s is from another cl_context",
               names[i]);
      EXPECT_FAIL(
          &p, clattn_attention(ctx, &p.d, b[0], b[1], b[2], b[3], b[4], NULL),
          CLATTN_ERR_INVALID_ARG, label);
      EXPECT_MSG(ctx, want, label);
    }
    cr_expect_eq(
        clattn_attention(ctx, &p.d, p.q, p.k, p.v, p.lens, alien, NULL),
        CLATTN_ERR_INVALID_ARG, "attention, o foreign");
    EXPECT_MSG(ctx, "buffer o is from another cl_context", "attention, o");
  }
  EXPECT_FAIL(&p, clattn_decode(ctx, &dd, p.q, alien, p.v, p.lens, p.o, NULL),
              CLATTN_ERR_INVALID_ARG, "decode, k_cache foreign");
  EXPECT_MSG(ctx, "buffer k_cache is from another cl_context", "decode");
  EXPECT_FAIL(
      &pk, clattn_kv_append(ctx, &dd, 1, p.q, alien, p.lens, pk.o, p.v, NULL),
      CLATTN_ERR_INVALID_ARG, "kv_append, v_new foreign");
  EXPECT_MSG(ctx, "buffer v_new is from another cl_context", "kv_append");

  /* and the wait list that is whole passes: the call waits on the gate */
  clattn_events gated = {sizeof(clattn_events), 1, &gate, &done};
  cr_assert_eq(clattn_attention(ctx, &p.d, p.q, p.k, p.v, p.lens, p.o, &gated),
               CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  cr_assert_not_null(done);
  clSetUserEventStatus(gate, CL_COMPLETE);
  cr_assert_eq(clWaitForEvents(1, &done), CL_SUCCESS);
  cr_expect_not(untouched(&p), "the valid call did not write o");
  clReleaseEvent(done);
  clReleaseEvent(gate);
  tu_release(alien);
  clReleaseContext(other);
  tu_release(pk.o);
  prob_free(&p);
  clattn_ctx_destroy(ctx);
}

/* ------------------------------------------ application-owned queue */

/* Reference output of the prob's problem. */
static void prob_ref(const prob *p, float *out) {
  int lens[2] = {9, 4};
  ref_attn a = {.b = p->b,
                .n = p->n,
                .m = p->m,
                .hq = p->h,
                .hkv = p->h,
                .dk = p->dk,
                .dv = p->dk,
                .scale = 1.0 / sqrt((double)p->dk),
                .causal = p->d.causal,
                .kv_lens = lens};
  ref_attention(&a, p->hq, p->hk, p->hv, out);
}

Test(ctx, application_queue) {
  /* the device $CLATTN_DEVICE selects, in a context of our own */
  clattn_ctx *probe = tu_ctx();
  cl_device_id dev = clattn_ctx_device(probe);
  clattn_ctx_destroy(probe);
  cl_int err = CL_SUCCESS;
  cl_context clc = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
  cl_command_queue cq = clCreateCommandQueue(clc, dev, 0, &err);
  cr_assert_eq(err, CL_SUCCESS);

  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  o.queue = cq;
  o.device = "no-such-device-is-ignored-with-a-queue";
  clattn_ctx *ctx = NULL;
  clattn_status st = clattn_ctx_create(&o, &ctx);
  cr_assert_eq(st, CLATTN_OK, "create on app queue: %d %s", (int)st,
               clattn_ctx_errmsg(ctx));
  cr_expect_eq(clattn_ctx_queue(ctx), cq);
  cr_expect_eq(clattn_ctx_cl_context(ctx), clc);
  cr_expect_eq(clattn_ctx_device(ctx), dev);

  prob p;
  prob_init(&p, ctx); /* buffers in our context via clattn_ctx_cl_context */
  st = clattn_attention(ctx, &p.d, p.q, p.k, p.v, p.lens, p.o, NULL);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  float *got = tu_alloc(p.no * 4), *want = tu_alloc(p.no * 4);
  tu_download(ctx, p.o, got, p.no, CLATTN_F32);
  prob_ref(&p, want);
  tu_check("attention on an application queue", got, want, p.no,
           clattn__tolerance(CLATTN_F32));
  clattn_ctx_destroy(ctx);

  /* our queue survives the clattn context (PoCL's own events hold queue
   * references, so the reference count is not compared) */
  float probe_v = 0.0f;
  float one = 1.0f;
  err = clEnqueueWriteBuffer(cq, p.o, CL_TRUE, 0, 4, &one, 0, NULL, NULL);
  cr_expect_eq(err, CL_SUCCESS);
  err = clEnqueueReadBuffer(cq, p.o, CL_TRUE, 0, 4, &probe_v, 0, NULL, NULL);
  cr_expect_eq(err, CL_SUCCESS);
  cr_expect_eq(clFinish(cq), CL_SUCCESS);
  cr_expect_eq(probe_v, 1.0f);
  tu_release(p.q);
  tu_release(p.k);
  tu_release(p.v);
  tu_release(p.lens);
  tu_release(p.o);
  tu_release(p.small);
  free(p.hq);
  free(p.hk);
  free(p.hv);
  free(got);
  free(want);

  /* an out-of-order queue is refused (if the device offers one) */
  cl_command_queue ooo = clCreateCommandQueue(
      clc, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
  if (err == CL_SUCCESS && ooo) {
    o.queue = ooo;
    ctx = (clattn_ctx *)0x1;
    st = clattn_ctx_create(&o, &ctx);
    cr_expect_eq(st, CLATTN_ERR_UNSUPPORTED, "out-of-order queue -> %d",
                 (int)st);
    cr_expect_null(ctx);
    clReleaseCommandQueue(ooo);
  }
  clReleaseCommandQueue(cq);
  clReleaseContext(clc);
}

/* ------------------------------------------------------------- events */

static cl_int exec_status(cl_event e) {
  cl_int s = 0;
  clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
  return s;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

Test(events, user_event_gates_attention_and_decode, .timeout = 120) {
  clattn_ctx *ctx = tu_ctx();
  prob p;
  prob_init(&p, ctx);
  cl_int err = CL_SUCCESS;
  float *got = tu_alloc(p.no * 4), *want = tu_alloc(p.no * 4);
  prob_ref(&p, want);
  /* warm up (compile) so the gated call is only an enqueue */
  cr_assert_eq(clattn_attention(ctx, &p.d, p.q, p.k, p.v, p.lens, p.o, NULL),
               CLATTN_OK);
  cr_assert_eq(clFinish(clattn_ctx_queue(ctx)), CL_SUCCESS);
  for (int variant = 1; variant <= 2; variant++) {
    clattn_params prm = {.size = sizeof(clattn_params), .variant = variant};
    clattn_attn_desc d = p.d;
    d.params = &prm;
    /* prefill o with the sentinel again */
    unsigned char *s = tu_alloc(p.no * 4);
    memset(s, SENT, p.no * 4);
    err = clEnqueueWriteBuffer(clattn_ctx_queue(ctx), p.o, CL_TRUE, 0, p.no * 4,
                               s, 0, NULL, NULL);
    cr_assert_eq(err, CL_SUCCESS);
    free(s);
    cl_event gate = clCreateUserEvent(clattn_ctx_cl_context(ctx), &err);
    cr_assert_eq(err, CL_SUCCESS);
    cl_event done = NULL;
    clattn_events ev = {sizeof(clattn_events), 1, &gate, &done};
    clattn_status st =
        clattn_attention(ctx, &d, p.q, p.k, p.v, p.lens, p.o, &ev);
    cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
    cr_assert_not_null(done, "no output event");
    clFlush(clattn_ctx_queue(ctx));
    sleep_ms(200);
    cr_expect_gt(exec_status(done), CL_COMPLETE,
                 "variant %d: the kernel finished before its wait event",
                 variant);
    cr_expect_gt(exec_status(done), CL_RUNNING,
                 "variant %d: the kernel started before its wait event",
                 variant);
    cr_assert_eq(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    cr_assert_eq(clWaitForEvents(1, &done), CL_SUCCESS);
    cr_expect_eq(exec_status(done), CL_COMPLETE);
    tu_download(ctx, p.o, got, p.no, CLATTN_F32);
    tu_check("gated attention", got, want, p.no, clattn__tolerance(CLATTN_F32));
    clReleaseEvent(done);
    clReleaseEvent(gate);
  }

  /* decode: its first kernel waits, the event is the last one's */
  int b = 2, cap = 300, h = 2, dd_ = 16;
  size_t nc = (size_t)b * cap * h * dd_, nq = (size_t)b * h * dd_;
  float *kc = tu_alloc(nc * 4), *vc = tu_alloc(nc * 4), *q = tu_alloc(nq * 4);
  float *o = tu_alloc(nq * 4), *oref = tu_alloc(nq * 4);
  tu_rng r = tu_rng_seed(12);
  tu_fill(&r, kc, nc, 1);
  tu_fill(&r, vc, nc, 1);
  tu_fill(&r, q, nq, 1);
  int lens_h[2] = {300, 123};
  ref_decode(b, cap, h, h, dd_, dd_, 0, 1.0 / sqrt((double)dd_), lens_h, q, kc,
             vc, oref);
  cl_mem dkc = tu_upload(ctx, kc, nc, CLATTN_F32);
  cl_mem dvc = tu_upload(ctx, vc, nc, CLATTN_F32);
  cl_mem dq = tu_upload(ctx, q, nq, CLATTN_F32);
  cl_mem dl = tu_upload_int(ctx, lens_h, 2);
  cl_mem dout = tu_sentinel(ctx, nq, CLATTN_F32, 0xff);
  clattn_params prm = {.size = sizeof(clattn_params), .splits = 4}; /* split + combine: two kernels */
  clattn_decode_desc dd = {.size = sizeof(clattn_decode_desc),
                           .batch = b,
                           .capacity = cap,
                           .heads_q = h,
                           .heads_kv = h,
                           .head_dim_k = dd_,
                           .head_dim_v = dd_,
                           .dtype = CLATTN_F32,
                           .params = &prm};
  cr_assert_eq(clattn_decode(ctx, &dd, dq, dkc, dvc, dl, dout, NULL),
               CLATTN_OK); /* warm-up */
  clFinish(clattn_ctx_queue(ctx));
  cl_mem dout2 = tu_sentinel(ctx, nq, CLATTN_F32, 0xff);
  cl_event gate = clCreateUserEvent(clattn_ctx_cl_context(ctx), &err);
  cl_event done = NULL;
  clattn_events ev = {sizeof(clattn_events), 1, &gate, &done};
  cr_assert_eq(clattn_decode(ctx, &dd, dq, dkc, dvc, dl, dout2, &ev), CLATTN_OK,
               "%s", clattn_ctx_errmsg(ctx));
  cr_assert_not_null(done);
  clFlush(clattn_ctx_queue(ctx));
  sleep_ms(200);
  cr_expect_gt(exec_status(done), CL_RUNNING,
               "decode ran before its wait event");
  clSetUserEventStatus(gate, CL_COMPLETE);
  cr_assert_eq(clWaitForEvents(1, &done), CL_SUCCESS);
  tu_download(ctx, dout2, o, nq, CLATTN_F32);
  tu_check("gated decode", o, oref, nq, clattn__tolerance(CLATTN_F32));
  clReleaseEvent(done);
  clReleaseEvent(gate);
  tu_release(dkc);
  tu_release(dvc);
  tu_release(dq);
  tu_release(dl);
  tu_release(dout);
  tu_release(dout2);
  free(kc);
  free(vc);
  free(q);
  free(o);
  free(oref);
  free(got);
  free(want);
  prob_free(&p);
  clattn_ctx_destroy(ctx);
}

/* ------------------------------------------------------ program cache */

static int count_files(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n;
}

/* Overwrite every file in dir with garbage; returns how many. */
static int corrupt_files(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "wb");
    if (!f)
      continue;
    for (int i = 0; i < 4096; i++)
      fputc((i * 131 + 7) & 0xff, f);
    fclose(f);
    n++;
  }
  closedir(d);
  return n;
}

static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

static clattn_ctx *ctx_with(const char *dir, int no_disk) {
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  o.cache_dir = dir;
  o.no_disk_cache = no_disk;
  clattn_ctx *ctx = NULL;
  clattn_status st = clattn_ctx_create(&o, &ctx);
  cr_assert_eq(st, CLATTN_OK, "ctx: %s", clattn_ctx_errmsg(ctx));
  return ctx;
}

/* Run the prob problem on ctx and check it against the reference. */
static void run_prob(clattn_ctx *ctx, const char *what) {
  prob p;
  prob_init(&p, ctx);
  clattn_status st =
      clattn_attention(ctx, &p.d, p.q, p.k, p.v, p.lens, p.o, NULL);
  cr_assert_eq(st, CLATTN_OK, "%s: %s", what, clattn_ctx_errmsg(ctx));
  float *got = tu_alloc(p.no * 4), *want = tu_alloc(p.no * 4);
  tu_download(ctx, p.o, got, p.no, CLATTN_F32);
  prob_ref(&p, want);
  tu_check(what, got, want, p.no, clattn__tolerance(CLATTN_F32));
  free(got);
  free(want);
  prob_free(&p);
}

Test(cache, memory_disk_and_corrupt, .timeout = 300) {
  unsetenv("CLATTN_NO_DISK_CACHE");
  char tmpl[] = "/tmp/clattn-test-cache-XXXXXX";
  char *dir = mkdtemp(tmpl);
  cr_assert_not_null(dir);
  clattn_cache_stats s0 = {.size = sizeof(clattn_cache_stats)},
                     s1 = {.size = sizeof(clattn_cache_stats)},
                     s2 = {.size = sizeof(clattn_cache_stats)};

  /* fresh: source builds, written to disk */
  clattn_ctx *a = ctx_with(dir, 0);
  clattn_ctx_cache_stats(a, &s0);
  cr_expect(s0.memory_hits == 0 && s0.disk_hits == 0 && s0.source_builds == 0 &&
            s0.disk_writes == 0);
  run_prob(a, "first call");
  clattn_ctx_cache_stats(a, &s1);
  cr_expect_gt(s1.source_builds, 0);
  cr_expect_eq(s1.disk_hits, 0);
  cr_expect_eq(s1.disk_writes, s1.source_builds);
  int files = count_files(dir);
  cr_expect_eq(files, (int)s1.disk_writes, "%d files for %lu writes", files,
               s1.disk_writes);
  /* identical second call: memory hits only */
  run_prob(a, "second call");
  clattn_ctx_cache_stats(a, &s2);
  cr_expect_gt(s2.memory_hits, s1.memory_hits);
  cr_expect_eq(s2.source_builds, s1.source_builds);
  cr_expect_eq(s2.disk_hits, 0);
  /* clear_programs: the next call comes from disk */
  clattn_ctx_clear_programs(a);
  run_prob(a, "after clear_programs");
  clattn_ctx_cache_stats(a, &s2);
  cr_expect_eq(s2.source_builds, s1.source_builds);
  cr_expect_gt(s2.disk_hits, 0);
  clattn_ctx_destroy(a);

  /* a fresh context with the same directory: disk hits, no builds */
  clattn_ctx *b = ctx_with(dir, 0);
  run_prob(b, "fresh context, warm disk");
  clattn_ctx_cache_stats(b, &s1);
  cr_expect_gt(s1.disk_hits, 0);
  cr_expect_eq(s1.source_builds, 0);
  cr_expect_eq(s1.disk_writes, 0);
  clattn_ctx_destroy(b);

  /* no_disk_cache: source builds, nothing read or written */
  int before = count_files(dir);
  clattn_ctx *c = ctx_with(dir, 1);
  run_prob(c, "no_disk_cache");
  clattn_ctx_cache_stats(c, &s1);
  cr_expect_gt(s1.source_builds, 0);
  cr_expect_eq(s1.disk_hits, 0);
  cr_expect_eq(s1.disk_writes, 0);
  cr_expect_eq(count_files(dir), before);
  clattn_ctx_destroy(c);

  /* $CLATTN_NO_DISK_CACHE=1 does the same */
  setenv("CLATTN_NO_DISK_CACHE", "1", 1);
  c = ctx_with(dir, 0);
  run_prob(c, "CLATTN_NO_DISK_CACHE=1");
  clattn_ctx_cache_stats(c, &s1);
  cr_expect_eq(s1.disk_hits, 0);
  cr_expect_eq(s1.disk_writes, 0);
  clattn_ctx_destroy(c);
  unsetenv("CLATTN_NO_DISK_CACHE");

  /* corrupt every cached binary: falls back to source, still correct */
  int nc = corrupt_files(dir);
  cr_expect_gt(nc, 0);
  clattn_ctx *e = ctx_with(dir, 0);
  run_prob(e, "corrupt cache");
  clattn_ctx_cache_stats(e, &s1);
  cr_expect_eq(s1.disk_hits, 0, "a corrupt binary counted as a hit");
  cr_expect_gt(s1.source_builds, 0);
  clattn_ctx_destroy(e);

  /* a truncated (empty) file too */
  DIR *dd = opendir(dir);
  struct dirent *en;
  char path[4096];
  while (dd && (en = readdir(dd)) != NULL) {
    if (en->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, en->d_name);
    FILE *f = fopen(path, "wb");
    if (f)
      fclose(f);
  }
  if (dd)
    closedir(dd);
  e = ctx_with(dir, 0);
  run_prob(e, "empty cache files");
  clattn_ctx_cache_stats(e, &s1);
  cr_expect_eq(s1.disk_hits, 0);
  clattn_ctx_destroy(e);

  /* $CLATTN_CACHE_DIR is used when opts.cache_dir is NULL */
  remove_dir(dir);
  char tmpl2[] = "/tmp/clattn-test-cache-XXXXXX";
  dir = mkdtemp(tmpl2);
  cr_assert_not_null(dir);
  setenv("CLATTN_CACHE_DIR", dir, 1);
  clattn_ctx *f = ctx_with(NULL, 0);
  run_prob(f, "CLATTN_CACHE_DIR");
  clattn_ctx_cache_stats(f, &s1);
  clattn_ctx_destroy(f);
  cr_expect_gt(s1.disk_writes, 0);
  cr_expect_gt(count_files(dir), 0, "nothing written to $CLATTN_CACHE_DIR");
  remove_dir(dir);
}

/* ---------------------------------------------------- device selection */

static int ci_contains(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (; *hay; hay++) {
    size_t i = 0;
    while (i < n && hay[i] &&
           tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
      i++;
    if (i == n)
      return 1;
  }
  return 0;
}

static void dev_name(cl_device_id d, char *buf, size_t cap) {
  buf[0] = '\0';
  clGetDeviceInfo(d, CL_DEVICE_NAME, cap, buf, NULL);
  buf[cap - 1] = '\0';
}

Test(device, selection) {
  /* what the environment selects (the suite's device) */
  clattn_ctx *ctx = tu_ctx();
  char name[256];
  dev_name(clattn_ctx_device(ctx), name, sizeof name);
  clattn_ctx_destroy(ctx);
  cr_assert(strlen(name) >= 3, "device name \"%s\"", name);

  /* a case-changed substring of its name, through $CLATTN_DEVICE */
  char sub[8];
  size_t off = strlen(name) > 6 ? 1 : 0;
  memcpy(sub, name + off, 3);
  sub[3] = '\0';
  for (int i = 0; sub[i]; i++)
    sub[i] =
        (char)(isupper((unsigned char)sub[i]) ? tolower((unsigned char)sub[i])
                                              : toupper((unsigned char)sub[i]));
  setenv("CLATTN_DEVICE", sub, 1);
  clattn_ctx *c2 = NULL;
  clattn_status st = clattn_ctx_create(NULL, &c2);
  cr_assert_eq(st, CLATTN_OK, "CLATTN_DEVICE=%s: %s", sub,
               clattn_ctx_errmsg(c2));
  char n2[256];
  dev_name(clattn_ctx_device(c2), n2, sizeof n2);
  char pname[256] = "";
  cl_platform_id plat = NULL;
  clGetDeviceInfo(clattn_ctx_device(c2), CL_DEVICE_PLATFORM, sizeof plat, &plat,
                  NULL);
  clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof pname, pname, NULL);
  cr_expect(ci_contains(n2, sub) || ci_contains(pname, sub),
            "CLATTN_DEVICE=%s chose \"%s\" on \"%s\"", sub, n2, pname);
  clattn_ctx_destroy(c2);

  /* index forms */
  setenv("CLATTN_DEVICE", "0", 1);
  st = clattn_ctx_create(NULL, &c2);
  cr_expect_eq(st, CLATTN_OK, "CLATTN_DEVICE=0: %s", clattn_ctx_errmsg(c2));
  clattn_ctx_destroy(c2);

  /* selectors that match nothing */
  const char *bad[] = {"no-such-device-xyz", "99", "7:7"};
  for (int i = 0; i < 3; i++) {
    setenv("CLATTN_DEVICE", bad[i], 1);
    c2 = (clattn_ctx *)0x1;
    st = clattn_ctx_create(NULL, &c2);
    cr_expect_eq(st, CLATTN_ERR_NO_DEVICE, "CLATTN_DEVICE=%s -> %d (%s)",
                 bad[i], (int)st, clattn_status_str(st));
    cr_expect_null(c2);
  }
  /* opts.device wins over the environment */
  clattn_ctx_opts o = {.size = sizeof(clattn_ctx_opts)};
  o.device = "no-such-device-xyz";
  unsetenv("CLATTN_DEVICE");
  c2 = (clattn_ctx *)0x1;
  st = clattn_ctx_create(&o, &c2);
  cr_expect_eq(st, CLATTN_ERR_NO_DEVICE);
  cr_expect_null(c2);
  setenv("CLATTN_DEVICE", "no-such-device-xyz", 1);
  o.device = "0";
  st = clattn_ctx_create(&o, &c2);
  cr_expect_eq(st, CLATTN_OK, "opts.device=0 over a bad env: %s",
               clattn_ctx_errmsg(c2));
  clattn_ctx_destroy(c2);
}

/* "pthread" picks PoCL's CPU device where PoCL's driver is loaded (a skip,
 * named, where it is not: the rusticl tier loads rusticl's alone). */
Test(device, pthread_selects_pocl) {
  int have_pocl = 0;
  cl_platform_id plats[16];
  cl_uint np = 0;
  if (clGetPlatformIDs(16, plats, &np) == CL_SUCCESS) {
    for (cl_uint i = 0; i < np && i < 16; i++) {
      cl_device_id devs[16];
      cl_uint nd = 0;
      if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 16, devs, &nd) !=
          CL_SUCCESS)
        continue;
      for (cl_uint j = 0; j < nd && j < 16; j++) {
        char dn[256];
        dev_name(devs[j], dn, sizeof dn);
        have_pocl |= ci_contains(dn, "pthread");
      }
    }
  }
  if (!have_pocl)
    cr_skip_test("no PoCL pthread device among the loaded drivers");
  setenv("CLATTN_DEVICE", "pthread", 1);
  clattn_ctx *c2 = NULL;
  clattn_status st = clattn_ctx_create(NULL, &c2);
  cr_assert_eq(st, CLATTN_OK, "CLATTN_DEVICE=pthread: %s",
               clattn_ctx_errmsg(c2));
  char n2[256];
  dev_name(clattn_ctx_device(c2), n2, sizeof n2);
  cr_expect(ci_contains(n2, "pthread"), "pthread chose \"%s\"", n2);
  clattn_ctx_destroy(c2);
}
