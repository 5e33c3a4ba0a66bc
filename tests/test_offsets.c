/* test_offsets.c - 64-bit offsets and the size limits (docs/ARCHITECTURE.md,
 * "Offsets and size limits").
 *
 * Without allocating: for every family, a shape whose largest buffer holds
 * just under 2^31 elements and one just over are accepted by its check,
 * their buffer specs give the exact 64-bit element and byte counts, and the
 * model plans and prices both (clattn_model_shape: the plan's arithmetic,
 * its compulsory bytes at least that buffer's).  Counts the kernels hold in
 * an int32 past 2^31 - 1, and tensors past 2^62 bytes, are refused with
 * CLATTN_ERR_SHAPE and a message naming the count or the tensor and the
 * limit.
 *
 * Two real calls, each a named skip on a device whose allocation limit or
 * memory is below its need.  A decode over an f32 K cache larger than 2^31
 * bytes (the most the device allocates up to 2.5 GiB, its allocation
 * limit queried), whose only large scores and nonzero values sit in its
 * last rows, past the 2^31-byte mark: it catches a byte offset held in 32
 * bits (another output, or a crash), not an element index (2.5 GiB of f32
 * is under 2^31 elements).  A paged decode over an int8 pool of more than
 * 2^31 elements a buffer (1 byte an element: 2.15 GB each for K and V),
 * its table naming a page before the 2^31-element mark and three past it,
 * only those pages written: it catches an element index held in 32 bits
 * (a read outside the far pages: another output, or a crash).  Neither is
 * in the Oclgrind, rusticl or sanitizer tiers (their lists name their
 * tests). */
#include "base/tolerance.h"
#include "call/call.h"
#include "family/family.h"
#include "reference/ref.h"
#include "reference/ref_paged.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define TWO31 (INT64_C(1) << 31)

/* A family's shape just under and just over 2^31 elements in buffer `buf`
 * (NULL: its largest), with its element counts (f32: 4 bytes each);
 * `rows`: the call touches a few rows of it (an append), not all. */
typedef struct boundary {
  const char *family;
  const char *under, *over;
  const char *buf;
  int64_t under_elems, over_elems;
  int rows;
} boundary;

/* 2^24 - 1 and 2^24 + 1 positions of 128 channels: 2^31 -/+ 128 elements */
#define UNDER_S "16777215"
#define OVER_S "16777217"
#define UNDER_E (TWO31 - 128)
#define OVER_E (TWO31 + 128)
#define ONE "heads=1 kv-heads=1 head-dim=128"

static const boundary boundaries[] = {
    {"prefill", "batch=1 seq=1 kv-seq=" UNDER_S " " ONE,
     "batch=1 seq=1 kv-seq=" OVER_S " " ONE, "k", UNDER_E, OVER_E},
    {"decode", "batch=1 kv-seq=" UNDER_S " " ONE,
     "batch=1 kv-seq=" OVER_S " " ONE, "k_cache", UNDER_E, OVER_E},
    {"append", "batch=1 kv-seq=" UNDER_S " " ONE " new=1",
     "batch=1 kv-seq=" OVER_S " " ONE " new=1", "k_cache", UNDER_E, OVER_E, 1},
    {"talking-heads",
     "batch=1 seq=1 kv-seq=" UNDER_S
     " heads-k=1 heads=1 heads-v=1 head-dim=128",
     "batch=1 seq=1 kv-seq=" OVER_S " heads-k=1 heads=1 heads-v=1 head-dim=128",
     "k", UNDER_E, OVER_E},
    {"talking-heads-decode",
     "batch=1 kv-seq=" UNDER_S " heads-k=1 heads=1 heads-v=1 head-dim=128",
     "batch=1 kv-seq=" OVER_S " heads-k=1 heads=1 heads-v=1 head-dim=128",
     "k_cache", UNDER_E, OVER_E},
    {"efficient-prefill", "batch=1 seq=1 kv-seq=" UNDER_S " " ONE,
     "batch=1 seq=1 kv-seq=" OVER_S " " ONE, NULL, UNDER_E, OVER_E},
    {"efficient-decode", "batch=1 kv-seq=" UNDER_S " " ONE,
     "batch=1 kv-seq=" OVER_S " " ONE, NULL, UNDER_E, OVER_E},
    {"efficient-append", "batch=1 kv-seq=" UNDER_S " " ONE " new=1",
     "batch=1 kv-seq=" OVER_S " " ONE " new=1", NULL, UNDER_E, OVER_E, 1},
    {"super-values",
     "batch=1 seq=1 pos=0 kv-seq=" UNDER_S " heads=1 head-dim=128 max-len=1",
     "batch=1 seq=1 pos=0 kv-seq=" OVER_S " heads=1 head-dim=128 max-len=1",
     "x", UNDER_E, OVER_E, 1},
    {"cvmm",
     "seq=" UNDER_S " heads=1 head-dim=8 model-dim=128 experts=2 topk=1",
     "seq=" OVER_S " heads=1 head-dim=8 model-dim=128 experts=2 topk=1", "a",
     UNDER_E, OVER_E},
    {"projection", "m=" UNDER_S " n=8 k=128", "m=" OVER_S " n=8 k=128", "a",
     UNDER_E, OVER_E},
    /* the pool holds whole pages of 16: 2^24 -/+ 16 positions */
    {"paged-append", "batch=1 kv-seq=16777200 new=1 " ONE " page=16",
     "batch=1 kv-seq=16777232 new=1 " ONE " page=16", "k_cache", TWO31 - 2048,
     TWO31 + 2048, 1},
    {"varlen", "batch=1 seq=1 kv-seq=" UNDER_S " " ONE,
     "batch=1 seq=1 kv-seq=" OVER_S " " ONE, "k", UNDER_E, OVER_E},
    {"paged-prefill", "batch=1 seq=2 kv-seq=16777200 " ONE " page=16",
     "batch=1 seq=2 kv-seq=16777232 " ONE " page=16", "k_cache", TWO31 - 2048,
     TWO31 + 2048},
    {"paged-decode", "batch=1 kv-seq=16777200 " ONE " page=16",
     "batch=1 kv-seq=16777232 " ONE " page=16", "k_cache", TWO31 - 2048,
     TWO31 + 2048},
};

static clattn_profile gpu(void) {
  clattn_profile p = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_datasheet_find("A100", &p), CLATTN_OK);
  return p;
}

/* The spec of F's buffer `name` for desc (NULL name: the largest buffer). */
static clattn__buf_spec spec_of(const clattn__family *F, const void *desc,
                                const char *name) {
  clattn__buf_spec b[CLATTN__MAX_BUFS];
  F->buffers(desc, b);
  int best = 0;
  for (int i = 0; i < F->nbufs; i++) {
    if (name ? strcmp(b[i].name, name) == 0 : b[i].elems > b[best].elems)
      best = i;
    if (name && strcmp(b[i].name, name) == 0)
      return b[i];
  }
  cr_assert_null(name, "%s: no buffer %s", F->name, name);
  return b[best];
}

/* Check and price shape text of family F; its buffer's element count must
 * be `elems` and its bytes the 64-bit product. */
static void accepted(const clattn__family *F, const char *shape,
                     const char *buf, int64_t elems, int rows) {
  _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
  char why[256] = "";
  memset(desc, 0, sizeof desc);
  cr_assert_eq(F->parse_shape(shape, desc, why, sizeof why), CLATTN_OK,
               "%s %s: %s", F->name, shape, why);
  cr_assert_eq(F->check(desc, why, sizeof why), CLATTN_OK, "%s %s: %s", F->name,
               shape, why);
  const clattn__buf_spec b = spec_of(F, desc, buf);
  cr_expect_eq((int64_t)b.elems, elems,
               "%s %s: %s holds %zu elements, not %lld", F->name, shape, b.name,
               b.elems, (long long)elems);
  const size_t bytes = clattn__buf_bytes(&b);
  cr_expect_eq(bytes, (size_t)elems * clattn_dtype_size(b.dtype),
               "%s %s: %s is %zu bytes", F->name, shape, b.name, bytes);
  clattn_prediction pr = {.size = sizeof pr};
  const clattn_profile p = gpu();
  cr_assert_eq(clattn_model_shape(F->name, shape, NULL, &p, &pr), CLATTN_OK,
               "%s %s: %s", F->name, shape, pr.errmsg);
  if (!rows)
    cr_expect_geq(pr.total.bytes_compulsory, (double)bytes,
                  "%s %s: %.17g compulsory bytes, %s alone is %zu", F->name,
                  shape, pr.total.bytes_compulsory, b.name, bytes);
}

Test(offsets, buffers_past_2_31_elements_accepted_and_planned) {
  for (size_t i = 0; i < sizeof boundaries / sizeof boundaries[0]; i++) {
    const boundary *c = &boundaries[i];
    const clattn__family *F = clattn__family_find(c->family);
    cr_assert_not_null(F, "no family %s", c->family);
    accepted(F, c->under, c->buf, c->under_elems, c->rows);
    accepted(F, c->over, c->buf, c->over_elems, c->rows);
  }
  /* every family has its row */
  cr_expect_eq(clattn__family_count(),
               (int)(sizeof boundaries / sizeof boundaries[0]),
               "a family without a boundary row in test_offsets.c");
}

/* A shape refused with CLATTN_ERR_SHAPE naming `names` and `limit` (shape
 * text allows batch up to 2^20, heads up to 2^16). */
typedef struct refusal {
  const char *family, *shape, *names, *limit;
} refusal;

static const refusal refusals[] = {
    /* an int32 count of the kernels past 2^31 - 1 */
    {"prefill", "batch=1 seq=1073741824 kv-seq=1 heads=2 kv-heads=1 head-dim=1",
     "n_q x heads_q", "at most 2^31 - 1"},
    {"prefill", "batch=1048576 seq=1 kv-seq=1 heads=2048 kv-heads=1 head-dim=1",
     "batch x heads_q", "at most 2^31 - 1"},
    {"decode", "batch=1048576 kv-seq=1 heads=2048 kv-heads=1 head-dim=1",
     "batch x heads_q", "at most 2^31 - 1"},
    {"efficient-decode",
     "batch=1048576 kv-seq=1 heads=2048 kv-heads=1 head-dim=1",
     "batch x heads_q", "at most 2^31 - 1"},
    {"append", "batch=1 kv-seq=1 heads=2 kv-heads=2 head-dim=1 new=1073741824",
     "n_new x max(heads_k, heads_v)", "at most 2^31 - 1"},
    {"paged-prefill",
     "batch=1 seq=1073741824 kv-seq=1073741824 heads=2 kv-heads=1 "
     "head-dim=1 page=16",
     "n_q x heads_q", "at most 2^31 - 1"},
    {"paged-append",
     "batch=1 kv-seq=1073741824 new=1073741824 heads=2 kv-heads=2 "
     "head-dim=1 page=16",
     "n_q x heads_kv", "at most 2^31 - 1"},
    /* the expert routing's schedule */
    {"cvmm", "seq=268435456 heads=1 head-dim=1 model-dim=1 experts=2 topk=1",
     "rows x heads x experts", "at most 2^28"},
    /* a tensor past 2^62 bytes (a size_t product that would overflow) */
    {"decode",
     "batch=1048576 kv-seq=1073741824 heads=65536 kv-heads=65536 "
     "head-dim=512",
     "k_cache", "limit of 2^62 bytes"},
    {"prefill",
     "batch=1048576 seq=1 kv-seq=1073741824 heads=65536 kv-heads=65536 "
     "head-dim=512",
     "k:", "limit of 2^62 bytes"},
    {"projection", "m=2147483647 n=2147483647 k=1", "out",
     "limit of 2^62 bytes"},
};

Test(offsets, counts_past_their_limit_refused_by_name) {
  for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
    const refusal *c = &refusals[i];
    const clattn__family *F = clattn__family_find(c->family);
    cr_assert_not_null(F, "no family %s", c->family);
    _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
    char why[256] = "";
    memset(desc, 0, sizeof desc);
    clattn_status st = F->parse_shape(c->shape, desc, why, sizeof why);
    cr_assert_eq(st, CLATTN_OK, "%s %s: %s", c->family, c->shape, why);
    st = F->check(desc, why, sizeof why);
    cr_expect_eq(st, CLATTN_ERR_SHAPE, "%s %s: status %d (%s)", c->family,
                 c->shape, st, why);
    cr_expect(strstr(why, c->names) != NULL && strstr(why, c->limit) != NULL,
              "%s %s: the message names neither %s nor %s: %s", c->family,
              c->shape, c->names, c->limit, why);
    /* the model refuses it too, with the same reason */
    clattn_prediction pr = {.size = sizeof pr};
    const clattn_profile p = gpu();
    cr_expect_eq(clattn_model_shape(c->family, c->shape, NULL, &p, &pr),
                 CLATTN_ERR_SHAPE, "%s %s: the model: %s", c->family, c->shape,
                 pr.errmsg);
  }
}

/* Counts past 2^31 - 1 that shape text cannot reach (a batch past 2^20,
 * a total past 2^30): the talking-heads families' (sequence, head) items,
 * varlen's query tiles. */
Test(offsets, descriptions_past_an_int32_refused_by_name) {
  char why[256] = "";
  const clattn_th_desc th = {.size = sizeof th,
                             .batch = 1 << 30,
                             .n_q = 1,
                             .n_kv = 1,
                             .heads_k = 2,
                             .heads = 2,
                             .heads_v = 2,
                             .head_dim_k = 1,
                             .head_dim_v = 1,
                             .dtype = CLATTN_F32};
  const clattn__family *F = clattn__family_find("talking-heads");
  cr_assert_not_null(F);
  cr_expect_eq(F->check(&th, why, sizeof why), CLATTN_ERR_SHAPE, "%s", why);
  cr_expect(strstr(why, "batch x max(heads_k, heads_v)") &&
                strstr(why, "2^31 - 1"),
            "%s", why);
  const clattn_th_decode_desc td = {.size = sizeof td,
                                    .batch = 1 << 30,
                                    .capacity = 1,
                                    .heads_k = 1,
                                    .heads = 2,
                                    .heads_v = 2,
                                    .head_dim_k = 1,
                                    .head_dim_v = 1,
                                    .dtype = CLATTN_F32};
  F = clattn__family_find("talking-heads-decode");
  cr_assert_not_null(F);
  why[0] = '\0';
  cr_expect_eq(F->check(&td, why, sizeof why), CLATTN_ERR_SHAPE, "%s", why);
  cr_expect(strstr(why, "batch x heads_v") && strstr(why, "2^31 - 1"), "%s",
            why);
  const clattn_varlen_desc vd = {.size = sizeof vd,
                                 .batch = 2,
                                 .total_q = INT32_MAX - 1,
                                 .total_k = 1,
                                 .heads_q = 1,
                                 .heads_kv = 1,
                                 .head_dim_k = 1,
                                 .head_dim_v = 1,
                                 .dtype = CLATTN_F32};
  F = clattn__family_find("varlen");
  cr_assert_not_null(F);
  why[0] = '\0';
  cr_expect_eq(F->check(&vd, why, sizeof why), CLATTN_ERR_SHAPE, "%s", why);
  cr_expect(strstr(why, "total_q + batch") && strstr(why, "2^31 - 1"), "%s",
            why);
}

/* ------------------------------------------------------ two real calls */

/* A device limit (cl_ulong), or 0. */
static cl_ulong device_info(clattn_ctx *ctx, cl_device_info what) {
  cl_ulong v = 0;
  if (clGetDeviceInfo(clattn_ctx_device(ctx), what, sizeof v, &v, NULL) !=
      CL_SUCCESS)
    return 0;
  return v;
}

/* Decode, batch 1, one query and one KV head, f32, DK = 64 and DV = 8
 * (V stays small; K alone crosses the mark): the K cache has `cap` rows of
 * 256 bytes, the most the device allocates up to 2.5 GiB (a bound on the
 * test's time: the call reads all of it), more than 2^31 bytes.  K and V are
 * zero but for their last HOT rows, whose keys give the query scores of 30 and
 * more above the others' 0 (each its own) and whose values are random: the
 * output is their softmax-weighted mean (the zero rows weigh e^-30 each, under
 * 2e-6 in all), compared with the plain-C reference over those rows alone.  An
 * offset that wrapped at 2^31 bytes would read zero rows instead, and give
 * zeros. */
Test(offsets, decode_over_a_k_cache_past_2_31_bytes, .timeout = 300) {
  enum { DK = 64, DV = 8, HOT = 8 };
  const size_t row_k = DK * sizeof(float), row_v = DV * sizeof(float);
  clattn_ctx *ctx = tu_ctx();
  const cl_ulong max_alloc = device_info(ctx, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  const cl_ulong global = device_info(ctx, CL_DEVICE_GLOBAL_MEM_SIZE);
  const cl_ulong want = ((cl_ulong)5 << 29); /* bounds the run time */
  const cl_ulong k_bytes =
      (max_alloc < want ? max_alloc : want) / row_k * row_k;
  const size_t cap = (size_t)(k_bytes / row_k);
  if (k_bytes <= (cl_ulong)TWO31 + HOT * row_k ||
      global < k_bytes + cap * row_v + ((cl_ulong)1 << 28)) {
    clattn_ctx_destroy(ctx);
    cr_skip_test("offsets/decode_over_a_k_cache_past_2_31_bytes: the device "
                 "allocates at most %llu bytes (%llu in all); the K cache "
                 "needs more than 2^31",
                 (unsigned long long)max_alloc, (unsigned long long)global);
  }
  cr_assert_leq(cap, (size_t)INT32_MAX);
  tu_rng rng = tu_rng_seed(37);
  float q[DK], k_hot[HOT * DK], v_hot[HOT * DV];
  tu_fill(&rng, q, DK, 1.0f);
  for (int d = 0; d < DK; d++)
    q[d] = q[d] >= 0.0f ? 1.0f : -1.0f;
  /* key t scores q . k / sqrt(DK) = 30 + t / 4 */
  for (int t = 0; t < HOT; t++)
    for (int d = 0; d < DK; d++)
      k_hot[t * DK + d] = q[d] * (30.0f + 0.25f * t) / sqrtf((float)DK);
  tu_fill(&rng, v_hot, HOT * DV, 1.0f);

  cl_mem kc = tu_buffer(ctx, k_bytes), vc = tu_buffer(ctx, cap * row_v);
  cl_command_queue queue = clattn_ctx_queue(ctx);
  const float zero = 0.0f;
  cr_assert_eq(clEnqueueFillBuffer(queue, kc, &zero, sizeof zero, 0, k_bytes, 0,
                                   NULL, NULL),
               CL_SUCCESS);
  cr_assert_eq(clEnqueueFillBuffer(queue, vc, &zero, sizeof zero, 0,
                                   cap * row_v, 0, NULL, NULL),
               CL_SUCCESS);
  const size_t first = cap - HOT; /* past the 2^31-byte mark */
  cr_assert_gt(first * row_k, (size_t)TWO31);
  cr_assert_eq(clEnqueueWriteBuffer(queue, kc, CL_TRUE, first * row_k,
                                    sizeof k_hot, k_hot, 0, NULL, NULL),
               CL_SUCCESS);
  cr_assert_eq(clEnqueueWriteBuffer(queue, vc, CL_TRUE, first * row_v,
                                    sizeof v_hot, v_hot, 0, NULL, NULL),
               CL_SUCCESS);
  const int len = (int)cap;
  cl_mem dq = tu_upload(ctx, q, DK, CLATTN_F32);
  cl_mem dlens = tu_upload_int(ctx, &len, 1);
  cl_mem dout = tu_sentinel(ctx, DV, CLATTN_F32, 0xff); /* NaN */
  clattn_decode_desc d = {.size = sizeof d,
                          .batch = 1,
                          .capacity = len,
                          .heads_q = 1,
                          .heads_kv = 1,
                          .head_dim_k = DK,
                          .head_dim_v = DV,
                          .dtype = CLATTN_F32,
                          .cache_layout = CLATTN_BSHD};
  clattn_status st = clattn_decode(ctx, &d, dq, kc, vc, dlens, dout, NULL);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  float got[DV], ref[DV];
  tu_download(ctx, dout, got, DV, CLATTN_F32);
  const int hot = HOT;
  ref_decode(1, HOT, 1, 1, DK, DV, CLATTN_BSHD, 1.0 / sqrt((double)DK), &hot, q,
             k_hot, v_hot, ref);
  /* the hot rows decide the output: a read that missed them gives zeros */
  double ref_max = 0.0;
  for (int e = 0; e < DV; e++)
    ref_max = fmax(ref_max, fabs(ref[e]));
  cr_assert_gt(ref_max, 0.1, "the reference is %g at most", ref_max);
  tu_check("decode past 2^31 bytes", got, ref, DV, 1e-4);
  tu_release(dq);
  tu_release(dlens);
  tu_release(dout);
  tu_release(kc);
  tu_release(vc);
  clattn_ctx_destroy(ctx);
}

/* Paged decode over an int8 cache (1 byte an element), batch 1, one query
 * and one KV head of 128, pages of 256 positions: POOL pages hold
 * POOL * 256 * 128 = 2^31 + 2^21 elements in each of K and V (2.15 GB
 * each), page MARK = 2^31 / (256 * 128) the first at or past the
 * 2^31-element mark.  The block table names one page before the mark and
 * three past it (MARK itself, whose first element is index 2^31, and the
 * pool's last); only those pages' integers are written, and every scale
 * but theirs is NaN, so a read of any other row shows NaN.  The far pages'
 * values are larger than the near page's, so each side decides part of the
 * output (asserted on the reference: zeroing either changes it by far more
 * than the tolerance).  Compared with ref_paged_attention over the four
 * pages gathered into a pool of their own.  An element index held in 32
 * bits would wrap past 2^31 and read outside the far pages. */
Test(offsets, paged_int8_decode_past_2_31_elements, .timeout = 300) {
  enum { D = 128, PAGE = 256, MARK = 65536, POOL = MARK + 64, NP = 4 };
  enum { ROW = PAGE * D }; /* elements (bytes) of a page */
  const int pages[NP] = {1000, POOL - 1, MARK, MARK + 35};
  const int far[NP] = {0, 1, 1, 1};
  const int len = (NP - 1) * PAGE + 77; /* the last page partly used */
  const size_t pool_bytes = (size_t)POOL * ROW;
  const size_t scale_bytes = (size_t)POOL * PAGE * sizeof(float);
  cr_assert_gt(pool_bytes, (size_t)TWO31);
  cr_assert_eq((size_t)MARK * ROW, (size_t)TWO31);
  clattn_ctx *ctx = tu_ctx();
  const cl_ulong max_alloc = device_info(ctx, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  const cl_ulong global = device_info(ctx, CL_DEVICE_GLOBAL_MEM_SIZE);
  if (max_alloc < pool_bytes ||
      global < 2 * (pool_bytes + scale_bytes) + ((cl_ulong)1 << 28)) {
    clattn_ctx_destroy(ctx);
    cr_skip_test("offsets/paged_int8_decode_past_2_31_elements: the device "
                 "allocates at most %llu bytes (%llu in all); the int8 pool "
                 "needs %zu a buffer, twice",
                 (unsigned long long)max_alloc, (unsigned long long)global,
                 pool_bytes);
  }

  /* the four pages gathered: integers as floats (the reference's int8
   * cache) and as int8 (the device's), one scale a position */
  tu_rng rng = tu_rng_seed(41);
  float *kg = tu_alloc((size_t)NP * ROW * sizeof *kg);
  float *vg = tu_alloc((size_t)NP * ROW * sizeof *vg);
  float ks[NP * PAGE], vs[NP * PAGE], q[D];
  signed char *k8 = tu_alloc(ROW), *v8 = tu_alloc(ROW);
  for (size_t i = 0; i < (size_t)NP * ROW; i++) {
    kg[i] = (float)(tu_randint(&rng, 255) - 127);
    vg[i] = (float)(tu_randint(&rng, 255) - 127);
  }
  for (int p = 0; p < NP; p++)
    for (int t = 0; t < PAGE; t++) {
      /* scores of a few units; values up to 4 past the mark, 0.5 before */
      ks[p * PAGE + t] = (2.0f + tu_uniform(&rng)) / 127.0f;
      vs[p * PAGE + t] = (far[p] ? 4.0f : 0.5f) / 127.0f;
    }
  tu_fill(&rng, q, D, 1.0f);

  cl_command_queue queue = clattn_ctx_queue(ctx);
  cl_mem kc = tu_buffer(ctx, pool_bytes), vc = tu_buffer(ctx, pool_bytes);
  cl_mem ksc = tu_buffer(ctx, scale_bytes), vsc = tu_buffer(ctx, scale_bytes);
  tu_set_bytes(ctx, ksc, scale_bytes, 0xff); /* NaN */
  tu_set_bytes(ctx, vsc, scale_bytes, 0xff);
  for (int p = 0; p < NP; p++) {
    for (int i = 0; i < ROW; i++) {
      k8[i] = (signed char)kg[(size_t)p * ROW + i];
      v8[i] = (signed char)vg[(size_t)p * ROW + i];
    }
    const size_t at = (size_t)pages[p] * ROW;
    const size_t sat = (size_t)pages[p] * PAGE * sizeof(float);
    cr_assert_eq(far[p], at >= (size_t)TWO31, "page %d", pages[p]);
    cr_assert_eq(
        clEnqueueWriteBuffer(queue, kc, CL_TRUE, at, ROW, k8, 0, NULL, NULL),
        CL_SUCCESS);
    cr_assert_eq(
        clEnqueueWriteBuffer(queue, vc, CL_TRUE, at, ROW, v8, 0, NULL, NULL),
        CL_SUCCESS);
    cr_assert_eq(clEnqueueWriteBuffer(queue, ksc, CL_TRUE, sat,
                                      PAGE * sizeof(float), ks + p * PAGE, 0,
                                      NULL, NULL),
                 CL_SUCCESS);
    cr_assert_eq(clEnqueueWriteBuffer(queue, vsc, CL_TRUE, sat,
                                      PAGE * sizeof(float), vs + p * PAGE, 0,
                                      NULL, NULL),
                 CL_SUCCESS);
  }
  cl_mem dq = tu_upload(ctx, q, D, CLATTN_F32);
  cl_mem dtable = tu_upload_int(ctx, pages, NP);
  cl_mem dlens = tu_upload_int(ctx, &len, 1);
  cl_mem dout = tu_sentinel(ctx, D, CLATTN_F32, 0xff); /* NaN */
  const clattn_paged_desc d = {.size = sizeof d,
                               .batch = 1,
                               .n_q = 1,
                               .heads_q = 1,
                               .heads_kv = 1,
                               .head_dim_k = D,
                               .head_dim_v = D,
                               .num_blocks = POOL,
                               .page_size = PAGE,
                               .max_blocks = NP,
                               .dtype = CLATTN_F32,
                               .cache_dtype = CLATTN_I8};
  const clattn_status st = clattn_paged_attention(ctx, &d, dq, kc, vc, ksc, vsc,
                                                  dtable, dlens, dout, NULL);
  cr_assert_eq(st, CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  float got[D];
  tu_download(ctx, dout, got, D, CLATTN_F32);

  /* the reference over the gathered pages (pages 0..NP-1 of their pool) */
  const int gathered[NP] = {0, 1, 2, 3};
  const ref_paged a = {.b = 1,
                       .n = 1,
                       .hq = 1,
                       .hkv = 1,
                       .dk = D,
                       .dv = D,
                       .num_blocks = NP,
                       .page_size = PAGE,
                       .max_blocks = NP,
                       .scale = 1.0 / sqrt((double)D)};
  float ref[D], without[D];
  cr_assert_eq(ref_paged_attention(&a, q, kg, vg, ks, vs, gathered, &len, ref),
               0);
  /* the integers are written as they are (no quantization on the way):
   * float32's bar */
  const double tol = clattn__tolerance(CLATTN_F32);
  double ref_max = 0.0;
  for (int e = 0; e < D; e++)
    ref_max = fmax(ref_max, fabs(ref[e]));
  /* each side decides part of the output: a kernel that read zeros in
   * place of the far pages, or of the near one, would give another */
  for (int side = 0; side < 2; side++) {
    float *k0 = tu_alloc((size_t)NP * ROW * sizeof *k0);
    float *v0 = tu_alloc((size_t)NP * ROW * sizeof *v0);
    memcpy(k0, kg, (size_t)NP * ROW * sizeof *k0);
    memcpy(v0, vg, (size_t)NP * ROW * sizeof *v0);
    for (int p = 0; p < NP; p++)
      if (far[p] == side) {
        memset(k0 + (size_t)p * ROW, 0, ROW * sizeof *k0);
        memset(v0 + (size_t)p * ROW, 0, ROW * sizeof *v0);
      }
    cr_assert_eq(
        ref_paged_attention(&a, q, k0, v0, ks, vs, gathered, &len, without), 0);
    double diff = 0.0;
    for (int e = 0; e < D; e++)
      diff = fmax(diff, fabs(ref[e] - without[e]));
    cr_assert_gt(diff, 100 * tol * ref_max,
                 "the %s pages change the output by %g only (max %g)",
                 side ? "far" : "near", diff, ref_max);
    free(k0);
    free(v0);
  }
  tu_check("int8 paged decode past 2^31 elements", got, ref, D, tol);
  free(kg);
  free(vg);
  free(k8);
  free(v8);
  tu_release(dq);
  tu_release(dtable);
  tu_release(dlens);
  tu_release(dout);
  tu_release(kc);
  tu_release(vc);
  tu_release(ksc);
  tu_release(vsc);
  clattn_ctx_destroy(ctx);
}
