/* test_efficient.c - Efficient attention's K == V core families
 * (efficient, efficient-decode, efficient-append: one tensor X serves as K
 * and V, read once) against the plain-C reference with V = K, through the
 * library's call path.
 *
 * Cases: head dims that divide no tile (5, 9) and 64, both kernel variants
 * with several tiles and splits and the automatic choice, every storage
 * type, causal and not, padded and zero-length sequences, both layouts,
 * grouped heads; the append with a row past the cache's end; the decode
 * with the attention options.  Tolerance:
 * clattn__tolerance of the storage type.
 */
#include "call/call.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct eff_case {
  const char *family;
  const char *shape;
  int ints[2]; /* kv_lens / lens / pos per sequence; -1: none (full) */
  clattn_params params;
} eff_case;

static const eff_case cases[] = {
    {"efficient-prefill",
     "batch=2 seq=19 kv-seq=45 heads=4 head-dim=5 dtype=f32 causal=1",
     {45, 29},
     {.size = sizeof(clattn_params), .variant = 1, .rows = 4, .keys = 16}},
    {"efficient-prefill",
     "batch=1 seq=33 kv-seq=33 heads=3 head-dim=9 dtype=f16 causal=1",
     {-1, -1},
     {.size = sizeof(clattn_params), .variant = 2, .keys = 16, .wg = 32}},
    {"efficient-prefill",
     "batch=2 seq=7 kv-seq=70 heads=4 kv-heads=2 head-dim=64 dtype=bf16 "
     "causal=0 kv-layout=bhsd",
     {70, 0},
     {.size = sizeof(clattn_params), .variant = 1, .rows = 2, .keys = 32}},
    {"efficient-prefill",
     "batch=2 seq=13 kv-seq=40 heads=2 head-dim=16 dtype=f32 causal=1 "
     "layout=bhsd",
     {0, 31},
     {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 16}},
    {"efficient-prefill",
     "batch=1 seq=100 kv-seq=100 heads=2 head-dim=16 causal=1",
     {-1, -1},
     {.size = sizeof(clattn_params)}},
    {"efficient-decode",
     "batch=2 kv-seq=301 heads=4 head-dim=5 dtype=f32 layout=bhsd",
     {301, 188},
     {.size = sizeof(clattn_params), .variant = 1, .keys = 16, .splits = 3}},
    {"efficient-decode",
     "batch=2 kv-seq=37 heads=3 head-dim=9 dtype=f16 layout=bshd",
     {0, 37},
     {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 16, .splits = 1}},
    {"efficient-decode",
     "batch=1 kv-seq=90 heads=8 kv-heads=4 head-dim=64 dtype=bf16 "
     "layout=bhsd",
     {77, -1},
     {.size = sizeof(clattn_params), .variant = 2, .keys = 16, .wg = 64, .splits = 2}},
    {"efficient-decode",
     "batch=2 kv-seq=200 heads=4 head-dim=16 dtype=f32",
     {200, 150},
     {.size = sizeof(clattn_params)}},
    /* the attention options (window, soft-cap, ALiBi, sinks) through
     * decode's kernels with V == K: the combine's sink, a direct split's,
     * a sequence of no keys, a window of 1 and one past the cache */
    {"efficient-decode",
     "batch=2 kv-seq=61 heads=4 head-dim=9 dtype=f32 layout=bhsd window=40 "
     "softcap=2 alibi=1 sinks=1",
     {61, 0},
     {.size = sizeof(clattn_params), .variant = 1, .keys = 16, .splits = 3}},
    {"efficient-decode",
     "batch=2 kv-seq=40 heads=6 kv-heads=2 head-dim=16 dtype=bf16 "
     "window=50 sinks=1",
     {33, 40},
     {.size = sizeof(clattn_params), .variant = 2, .keys = 8, .wg = 32, .splits = 1}},
    {"efficient-decode",
     "batch=1 kv-seq=30 heads=2 head-dim=24 dtype=f16 window=1 alibi=1",
     {30, -1},
     {.size = sizeof(clattn_params), .variant = 1, .keys = 16, .splits = 1}},
    {"efficient-append",
     "batch=2 kv-seq=37 new=3 heads=2 head-dim=9 dtype=f16 layout=bshd",
     {5, 35},
     {.size = sizeof(clattn_params)}},
    {"efficient-append",
     "batch=1 kv-seq=20 new=4 heads=3 head-dim=16 dtype=f32 layout=bhsd",
     {16, -1},
     {.size = sizeof(clattn_params)}},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

/* Set by the subgroup test: outputs are filled with NaN, not random data,
 * before the call, so that an element the kernel skips fails. */
static int poison_outputs;

/* One case: random inputs (rounded to the storage type, as the device
 * reads them), the call through clattn__call, every written buffer
 * compared with the family's reference on the same inputs. */
static void run_case(clattn_ctx *ctx, const eff_case *ec, unsigned seed) {
  const clattn__family *F = clattn__family_find(ec->family);
  cr_assert_not_null(F, "family %s missing", ec->family);
  _Alignas(16) unsigned char call_desc[CLATTN__DESC_MAX];
  clattn__params values;
  char why[256];
  cr_assert_eq(F->parse_shape(ec->shape, call_desc, why, sizeof why),
               CLATTN_OK, "%s: %s", ec->shape, why);
  cr_assert_eq(clattn__params_in(F, &ec->params, &values, why, sizeof why),
               CLATTN_OK, "%s: %s", ec->shape, why);
  clattn__buf_spec spec[CLATTN__MAX_BUFS];
  F->buffers(call_desc, spec);
  void *host[CLATTN__MAX_BUFS];
  cl_mem dev[CLATTN__MAX_BUFS];
  tu_rng rng = tu_rng_seed(seed);
  for (int b = 0; b < F->nbufs; b++) {
    const size_t n = spec[b].elems;
    if (spec[b].role == CLATTN__BUF_INTS) {
      if (ec->ints[0] < 0) {
        host[b] = NULL;
        dev[b] = NULL;
        continue;
      }
      int *x = tu_alloc(n * sizeof *x);
      for (size_t k = 0; k < n; k++)
        x[k] = ec->ints[k] >= 0 ? ec->ints[k] : F->full_int(call_desc);
      host[b] = x;
      dev[b] = tu_upload_int(ctx, x, n);
      continue;
    }
    float *x = tu_alloc(n * sizeof *x);
    tu_fill(&rng, x, n, 1.0f);
    tu_round(x, n, spec[b].dtype);
    if (poison_outputs && spec[b].role == CLATTN__BUF_OUT)
      for (size_t k = 0; k < n; k++)
        x[k] = NAN;
    host[b] = x;
    dev[b] = tu_upload(ctx, x, n, spec[b].dtype);
  }
  /* the append's positions are not optional: a full call writes at 0 */
  for (int b = 0; b < F->nbufs; b++)
    if (spec[b].role == CLATTN__BUF_INTS && dev[b] == NULL &&
        !spec[b].optional) {
      int *x = tu_alloc(spec[b].elems * sizeof *x);
      for (size_t k = 0; k < spec[b].elems; k++)
        x[k] = F->full_int(call_desc);
      host[b] = x;
      dev[b] = tu_upload_int(ctx, x, spec[b].elems);
    }
  const clattn_status st = clattn__call(ctx, F, call_desc, &values, dev, NULL);
  if (!tu_unsupported_ok(ctx, st, &ec->params)) {
    cr_assert_eq(st, CLATTN_OK, "%s %s: %s", F->name, ec->shape,
                 clattn_ctx_errmsg(ctx));
    F->reference(call_desc, host);
    for (int b = 0; b < F->nbufs; b++) {
      if (spec[b].role != CLATTN__BUF_OUT && spec[b].role != CLATTN__BUF_INOUT)
        continue;
      const size_t n = spec[b].elems;
      float *got = tu_alloc(n * sizeof *got);
      tu_download(ctx, dev[b], got, n, spec[b].dtype);
      char what[300];
      snprintf(what, sizeof what, "%s %s [%s]", F->name, ec->shape,
               spec[b].name);
      tu_check(what, got, host[b], n, clattn__tolerance(spec[b].dtype));
      free(got);
    }
  }
  for (int b = 0; b < F->nbufs; b++) {
    if (dev[b] != NULL)
      tu_release(dev[b]);
    free(host[b]);
  }
}

Test(efficient, matches_reference, .timeout = 900) {
  clattn_ctx *ctx = tu_ctx();
  for (int i = 0; i < NCASES; i++)
    run_case(ctx, &cases[i], 1000u + (unsigned)i);
  clattn_ctx_destroy(ctx);
}

/* Head dims that differ are refused with a message: K and V are one
 * tensor. */
Test(efficient, refuses_different_head_dims) {
  const char *const fams[] = {"efficient-prefill", "efficient-decode",
                              "efficient-append"};
  const char *const shapes[] = {
      "seq=4 kv-seq=8 heads=2 head-dim=8 head-dim-v=16",
      "kv-seq=8 heads=2 head-dim=8 head-dim-v=16",
      "kv-seq=8 new=1 heads=2 head-dim=8 head-dim-v=16"};
  for (int i = 0; i < 3; i++) {
    const clattn__family *F = clattn__family_find(fams[i]);
    cr_assert_not_null(F);
    _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
    char why[256] = "";
    cr_assert_eq(F->parse_shape(shapes[i], desc, why, sizeof why), CLATTN_OK,
                 "%s: %s", fams[i], why);
    cr_expect_eq(F->check(desc, why, sizeof why), CLATTN_ERR_SHAPE, "%s",
                 fams[i]);
    cr_expect(strstr(why, "head-dim-v") != NULL, "%s: %s", fams[i], why);
  }
}

/* Variant 3 (subgroups) of both families through decode's and prefill's
 * subgroup kernels with V == K, for the device's own subgroup size and
 * each of 8, 16, 32, 64 it offers a kernel to require (a size it does not
 * offer must be refused by name, and is logged and counted as skipped;
 * any other refusal fails), outputs poisoned: sizes that
 * divide no subgroup, f32, f16 and bf16, grouped heads, causal, the
 * decode's options.  Skipped, by name, on a device without subgroups. */
Test(efficient, subgroup_against_reference, .timeout = 900) {
  static const eff_case sg_cases[] = {
      {"efficient-prefill",
       "batch=2 seq=19 kv-seq=45 heads=4 kv-heads=2 head-dim=9 dtype=f32 "
       "causal=1",
       {45, 29},
       {.size = sizeof(clattn_params)}},
      {"efficient-prefill",
       "batch=1 seq=33 kv-seq=70 heads=3 head-dim=64 dtype=f16 causal=0",
       {-1, -1},
       {.size = sizeof(clattn_params), .rows = 3}},
      {"efficient-decode",
       "batch=2 kv-seq=301 heads=4 head-dim=5 dtype=bf16 layout=bhsd",
       {301, 188},
       {.size = sizeof(clattn_params), .splits = 3}},
      {"efficient-decode",
       "batch=2 kv-seq=61 heads=8 kv-heads=2 head-dim=40 dtype=f32 "
       "window=40 softcap=2 alibi=1 sinks=1",
       {61, 0},
       {.size = sizeof(clattn_params), .splits = 1}},
  };
  clattn_ctx *ctx = tu_ctx();
  clattn_profile prof = {.size = sizeof prof};
  cr_assert_eq(clattn_profile_reported(ctx, &prof), CLATTN_OK);
  if (!prof.has_subgroups) {
    clattn_ctx_destroy(ctx);
    cr_skip_test("device has no subgroups");
  }
  poison_outputs = 1;
  int ran = 0, not_offered = 0;
  for (int sg = 0; sg <= 64; sg = sg ? 2 * sg : 8) {
    char text[64];
    snprintf(text, sizeof text, sg ? "variant=3 sg=%d" : "variant=3", sg);
    const int offered = tu_sg_offered(sg);
    for (size_t i = 0; i < sizeof sg_cases / sizeof sg_cases[0]; i++) {
      eff_case ec = sg_cases[i];
      ec.params.text = text;
      const clattn__family *F = clattn__family_find(ec.family);
      _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
      _Alignas(16) unsigned char plan[CLATTN__PLAN_MAX];
      clattn__params values;
      char why[256] = "";
      cr_assert_eq(F->parse_shape(ec.shape, desc, why, sizeof why), CLATTN_OK);
      cr_assert_eq(clattn__params_in(F, &ec.params, &values, why, sizeof why),
                   CLATTN_OK, "%s", why);
      const clattn__target t = clattn__ctx_target(ctx);
      const clattn_status st =
          F->plan(&t, desc, &values, plan, why, sizeof why);
      /* only a size the device does not list may be refused, by name */
      if (!offered) {
        cr_assert(st != CLATTN_OK, "%s %s: sg=%d, not offered, planned",
                  ec.family, text, sg);
        cr_assert(strstr(why, "sg") != NULL, "%s", why);
        cr_log_info("skipped: sg=%d not offered: %s", sg, why);
        not_offered++;
        continue;
      }
      cr_assert_eq(st, CLATTN_OK, "%s %s, which the device offers: %s",
                   ec.family, text, why);
      cr_log_info("%s %s, %s", ec.family, ec.shape, text);
      run_case(ctx, &ec, 2000u + (unsigned)(i + 16 * sg));
      ran++;
    }
  }
  cr_assert(ran > 0, "no subgroup size ran");
  cr_log_info("%d runs, %d skipped (sizes the device does not offer)", ran,
              not_offered);
  clattn_ctx_destroy(ctx);
}

/* Index of tunable `name` among the dimensions of space s. */
static int space_dim(const clattn__space *s, const char *name) {
  for (int j = 0; j < s->ndims; j++)
    if (strcmp(s->dim[j], name) == 0)
      return j;
  cr_assert_fail("no tunable %s in the space", name);
  return -1;
}

/* Variant 3's plans and candidates on made-up targets with subgroups (no
 * device needed): the space offers the device's own subgroup size as one
 * automatic candidate (wg 0, which the launch resolves, so that an
 * explicit guess never refuses a device of another size), and a lane's
 * accumulators are checked against the work-group the plan guesses:
 * 32 rows of 512 value dims fit in 64 lanes (256 a lane) and are refused,
 * naming the limit, in 16 (1024 a lane). */
Test(efficient, subgroup_plan_and_space) {
  clattn__target t = {0, 0, 1, 0, 80, 1024, 49152, 0};
  t.subgroups = 1;
  t.sg_sizes = 1u << 3 | 1u << 4 | 1u << 5; /* 8, 16, 32 */
  static const char *const fams[2][2] = {
      {"efficient-prefill",
       "batch=1 seq=64 kv-seq=64 heads=2 head-dim=512 dtype=f32"},
      {"efficient-decode", "batch=1 kv-seq=512 heads=4 head-dim=64"}};
  for (int f = 0; f < 2; f++) {
    const clattn__family *F = clattn__family_find(fams[f][0]);
    _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
    char why[256] = "";
    cr_assert_eq(F->parse_shape(fams[f][1], desc, why, sizeof why), CLATTN_OK,
                 "%s", why);
    clattn__space s;
    memset(&s, 0, sizeof s);
    cr_assert_eq(F->space(&t, desc, &s), CLATTN_OK);
    const int jv = space_dim(&s, "variant"), jw = space_dim(&s, "wg"),
              js = space_dim(&s, "sg");
    int automatic = 0;
    for (int i = 0; i < s.n; i++) {
      const int *v = s.val + (size_t)i * s.ndims;
      if (v[jv] != 3)
        continue;
      char text[256];
      clattn__space_format(&s, i, text, sizeof text);
      /* a required size is its work-group; the device's own (sg 0) is
       * found at launch (wg 0) */
      cr_expect(v[jw] == v[js], "%s: variant 3 candidate guessing a wg: %s",
                F->name, text);
      cr_expect(v[js] == 0 ||
                    (t.sg_sizes >> __builtin_ctz((unsigned)v[js]) & 1),
                "%s: a size the target does not offer: %s", F->name, text);
      automatic += v[js] == 0;
    }
    cr_expect(automatic > 0, "%s: no automatic variant 3 candidate", F->name);
    clattn__space_free(&s);
  }
  const clattn__family *F = clattn__family_find("efficient-prefill");
  _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
  _Alignas(16) unsigned char plan[CLATTN__PLAN_MAX];
  char why[256] = "";
  cr_assert_eq(F->parse_shape(fams[0][1], desc, why, sizeof why), CLATTN_OK);
  const clattn_params p = {.size = sizeof p, .text = "variant=3 rows=32"};
  clattn__params values;
  cr_assert_eq(clattn__params_in(F, &p, &values, why, sizeof why), CLATTN_OK,
               "%s", why);
  cr_assert_eq(F->plan(&t, desc, &values, plan, why, sizeof why), CLATTN_OK,
               "64 lanes: %s", why);
  char resolved[128];
  const clattn__params r = F->resolved(plan);
  clattn__params_format(F, &r, resolved, sizeof resolved);
  cr_expect(strstr(resolved, "wg=") == NULL,
            "the guessed work-group resolved as given: %s", resolved);
  t.max_wg = 16;
  why[0] = '\0';
  cr_assert_eq(F->plan(&t, desc, &values, plan, why, sizeof why),
               CLATTN_ERR_UNSUPPORTED, "16 lanes: %s", why);
  cr_expect(strstr(why, "512") != NULL, "the limit is not named: %s", why);
}
