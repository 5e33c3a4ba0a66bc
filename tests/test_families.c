/* test_families.c - the registries are complete: every kernel family fills
 * every operation the generic code calls, names an embedded kernel source,
 * parses its standard shapes, has a shape class, a tuning space with a
 * default on CPU- and GPU-shaped targets, a cost, a case in the model's
 * exact Oclgrind check, and a small check case on which the device's
 * result equals the family's plain-C reference; every layer kind fills
 * the slots the generic layer walks, under a unique name, and the public
 * listing (clattn layers, clattn run) is the registry's. */
#include "call/call.h"
#include "layer/layer.h"
#include "model_cases.h"
#include "util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const clattn__target cpu_target = {1, 1, 16, 32, 2, 4096, 1 << 20, 0};
static const clattn__target gpu_target = {0, 0, 1, 0, 132, 1024, 48 << 10, 0};

static clattn_profile profile(void) {
  clattn_profile p = {.size = sizeof(clattn_profile)};
  p.source = CLATTN_PROFILE_DATASHEET;
  p.compute_units = 132;
  p.max_wg = 1024;
  p.local_mem_bytes = 48 << 10;
  p.cache_bytes = 50ull << 20;
  p.bw_read_gbs = p.bw_copy_gbs = 3000;
  p.fp32_gflops = 60000;
  return p;
}

Test(families, every_operation) {
  const int n = clattn__family_count();
  cr_assert(n >= 3, "%d families", n);
  for (int i = 0; i < n; i++) {
    const clattn__family *F = clattn__family_at(i);
    cr_assert_not_null(F);
    cr_expect(F->name && *F->name && F->summary && F->api && F->source &&
                  F->shape_keys,
              "family %d: names", i);
    cr_expect(F->check && F->buffers && F->full_int && F->shape_class &&
                  F->parse_shape && F->plan && F->resolved && F->space &&
                  F->cost && F->enqueue && F->check_case && F->reference,
              "%s: an operation is missing", F->name);
    cr_expect(F->desc_size <= CLATTN__DESC_MAX &&
                  F->plan_size <= CLATTN__PLAN_MAX,
              "%s: desc %zu or plan %zu too large", F->name, F->desc_size,
              F->plan_size);
    cr_expect(F->nbufs >= 1 && F->nbufs <= CLATTN__MAX_BUFS, "%s: %d bufs",
              F->name, F->nbufs);
    cr_expect(F->tune_method >= 1, "%s: tune method", F->name);
    cr_expect_eq(clattn_tune_method(F->name), F->tune_method);
    cr_expect(clattn__source_index(F->source) >= 0, "%s: no source \"%s\"",
              F->name, F->source);
    cr_expect_eq(clattn__family_find(F->name), F, "%s: name not unique",
                 F->name);
    cr_expect_eq(clattn__family_index(F), i);
    cr_expect_str_eq(clattn_family_name(i), F->name);
  }
  cr_expect_null(clattn__family_at(n));
  cr_expect_null(clattn_family_name(-1));
}

/* Every family is in the model's exact check (tests/model_cases.h). */
Test(families, exact_model_check) {
  for (int i = 0; i < clattn__family_count(); i++) {
    const char *name = clattn__family_at(i)->name;
    int cases = 0;
    for (int c = 0; c < MODEL_CASES; c++)
      cases +=
          model_cases[c].family && strcmp(model_cases[c].family, name) == 0;
    cr_expect(cases >= 1, "%s: no case in the exact Oclgrind check", name);
  }
}

/* Standard shapes parse and pass the checks; bad keys are refused. */
Test(families, shapes) {
  char why[256], cls[96];
  for (int i = 0; i < clattn__family_count(); i++) {
    const clattn__family *F = clattn__family_at(i);
    _Alignas(16) unsigned char d[CLATTN__DESC_MAX];
    for (int j = 0; clattn_family_standard_shape(i, j); j++) {
      const char *s = clattn_family_standard_shape(i, j);
      cr_expect_eq(F->parse_shape(s, d, why, sizeof why), CLATTN_OK,
                   "%s \"%s\": %s", F->name, s, why);
      cr_expect_eq(F->check(d, why, sizeof why), CLATTN_OK, "%s: %s", F->name,
                   why);
      F->shape_class(d, cls, sizeof cls);
      cr_expect(strlen(cls) > 0, "%s: empty shape class", F->name);
    }
    cr_expect_eq(F->parse_shape("no-such-key=3", d, why, sizeof why),
                 CLATTN_ERR_INVALID_ARG, "%s accepted a bad key", F->name);
    cr_expect(strstr(why, "no-such-key") != NULL, "%s", why);
  }
}

/* Family i's check case, for a call of its first standard shape (a small
 * cache for a family that has none). */
static void check_case_of(int i, clattn__check_case *c) {
  const clattn__family *F = clattn__family_at(i);
  const char *s = clattn_family_standard_shape(i, 0);
  _Alignas(16) unsigned char d[CLATTN__DESC_MAX];
  char why[256];
  cr_assert_eq(F->parse_shape(s ? s : "kv-seq=64 heads=4 head-dim=16", d, why,
                              sizeof why),
               CLATTN_OK, "%s: %s", F->name, why);
  F->check_case(d, c);
}

/* The check case: valid, with outputs, a space with its default first on
 * both shapes of target, and a cost. */
Test(families, space_and_cost) {
  const clattn_profile prof = profile();
  char why[256];
  for (int i = 0; i < clattn__family_count(); i++) {
    const clattn__family *F = clattn__family_at(i);
    clattn__check_case c;
    clattn__buf_spec spec[CLATTN__MAX_BUFS];
    check_case_of(i, &c);
    cr_expect_eq(F->check(c.desc, why, sizeof why), CLATTN_OK, "%s: %s",
                 F->name, why);
    F->buffers(c.desc, spec);
    int outs = 0;
    for (int b = 0; b < F->nbufs; b++) {
      cr_expect(spec[b].elems > 0 && spec[b].name, "%s: buffer %d", F->name, b);
      outs +=
          spec[b].role == CLATTN__BUF_OUT || spec[b].role == CLATTN__BUF_INOUT;
    }
    cr_expect(outs >= 1, "%s: no output", F->name);
    const clattn__target *tg[2] = {&cpu_target, &gpu_target};
    for (int t = 0; t < 2; t++) {
      clattn__space sp;
      cr_assert_eq(F->space(tg[t], c.desc, &sp), CLATTN_OK);
      cr_expect(sp.n >= 1 && sp.def >= 0, "%s: no default in its space",
                F->name);
      clattn__space_free(&sp);
    }
    clattn_prediction pr = {.size = sizeof(clattn_prediction)};
    /* a family that builds its tables from the case's values takes its own
     * integers in its cost (a ragged call's offsets), which
     * tests/model_cases.h gives; NULL is every family's full call */
    const int *ints = F->fill_ints ? NULL : c.ints;
    cr_expect_eq(clattn__model(F, c.desc, NULL, ints, &prof, &pr), CLATTN_OK,
                 "%s: %s", F->name, pr.errmsg);
    cr_expect(pr.n_kernels >= 1 && pr.total.bytes_read > 0 &&
                  pr.total.t_pred > 0,
              "%s: an empty cost", F->name);
  }
}

/* On the device, every family's check case equals its reference. */
/* Each family's tunables: a table the public listing reads, names unique
 * within the family and in range, and every candidate of its tuning space
 * written as text in its names and read back to the same values. */
Test(tunables, declared_and_text_round_trips) {
  for (int i = 0; i < clattn__family_count(); i++) {
    const clattn__family *F = clattn__family_at(i);
    cr_assert(F->ntunables >= 0 && F->ntunables <= CLATTN__TUNABLES_MAX,
              "%s: %d tunables", F->name, F->ntunables);
    for (int j = 0; j < F->ntunables; j++) {
      const clattn__tunable *t = &F->tunables[j];
      cr_expect(t->name && *t->name && t->meaning && *t->meaning &&
                    t->automatic && *t->automatic && t->min >= 1 &&
                    t->min <= t->max,
                "%s: tunable %d", F->name, j);
      for (int k = 0; k < j; k++)
        cr_expect_str_neq(t->name, F->tunables[k].name, "%s", F->name);
      clattn_tunable pub = {.size = sizeof pub};
      cr_assert_eq(clattn_family_tunable(i, j, &pub), CLATTN_OK);
      cr_expect_str_eq(pub.name, t->name);
      cr_expect(pub.min == t->min && pub.max == t->max);
    }
    clattn_tunable past = {.size = sizeof past};
    cr_expect_eq(clattn_family_tunable(i, F->ntunables, &past),
                 CLATTN_ERR_NOT_FOUND);
    clattn__check_case c;
    _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
    char why[256], text[256];
    if (F->standard_shapes == NULL)
      continue;
    cr_assert_eq(F->parse_shape(F->standard_shapes[0], desc, why, sizeof why),
                 CLATTN_OK, "%s: %s", F->name, why);
    F->check_case(desc, &c);
    clattn__space sp;
    cr_assert_eq(F->space(&gpu_target, c.desc, &sp), CLATTN_OK);
    for (int k = 0; k < sp.n; k++) {
      const clattn__params v = clattn__space_params(&sp, k);
      clattn__params back;
      memset(&back, 0, sizeof back);
      clattn__params_format(F, &v, text, sizeof text);
      char spaced[256];
      clattn__space_format(&sp, k, spaced, sizeof spaced);
      cr_expect_str_eq(text, spaced, "%s: the space's text", F->name);
      cr_assert_eq(clattn__params_parse(F, text, &back, why, sizeof why),
                   CLATTN_OK, "%s: \"%s\": %s", F->name, text, why);
      cr_expect(memcmp(&v, &back, sizeof v) == 0, "%s: \"%s\"", F->name, text);
    }
    clattn__space_free(&sp);
  }
  cr_expect_eq(clattn_family_tunable(
                   -1, 0, &(clattn_tunable){.size = sizeof(clattn_tunable)}),
               CLATTN_ERR_NOT_FOUND);
}

/* The public params by name: a family's own names, in any order, its
 * values checked against its table; a name the family lacks, from the
 * text or the named int fields, refused with the family named. */
Test(tunables, public_params_by_name) {
  clattn_ctx *ctx = tu_ctx();
  clattn_choice ch = {.size = sizeof ch};
  const clattn_params by_name = {.size = sizeof by_name,
                                 .text = "wg=64 keys=16, variant=2"};
  const char *attn = "batch=1 seq=40 heads=4 kv-heads=2 head-dim=32";
  cr_assert_eq(clattn_explain_shape(ctx, "prefill", attn, &by_name, &ch),
               CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  cr_expect_eq(ch.source, CLATTN_CHOICE_CALLER);
  cr_expect_str_eq(ch.params, "variant=2 keys=16 wg=64");
  cr_expect_str_eq(ch.resolved, "variant=2 keys=16 wg=64");
  const char *dec = "batch=2 kv-seq=300 heads=4 kv-heads=2 head-dim=32";
  const clattn_params split = {.size = sizeof split,
                               .text = "variant=1 splits=4"};
  cr_assert_eq(clattn_explain_shape(ctx, "decode", dec, &split, &ch), CLATTN_OK,
               "%s", clattn_ctx_errmsg(ctx));
  cr_expect(strstr(ch.resolved, "splits=4") != NULL, "%s", ch.resolved);
  const struct {
    const char *family, *shape;
    clattn_params p;
    const char *word;
  } bad[] = {{"decode",
              dec,
              {.size = sizeof(clattn_params), .text = "scheme=2"},
              "scheme: the decode family has no such tunable"},
             {"prefill",
              attn,
              {.size = sizeof(clattn_params), .splits = 2},
              "clattn_params.splits: the prefill family has no such tunable"},
             {"prefill",
              attn,
              {.size = sizeof(clattn_params), .text = "rows=33"},
              "rows=33: the prefill family's rows is 1 to 32"},
             {"decode",
              dec,
              {.size = sizeof(clattn_params), .text = "keys=x"},
              "keys: expected a whole number"},
             {"decode",
              dec,
              {.size = sizeof(clattn_params), .text = "keys"},
              "expected name=value"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_expect_eq(
        clattn_explain_shape(ctx, bad[i].family, bad[i].shape, &bad[i].p, &ch),
        CLATTN_ERR_INVALID_ARG, "%s", bad[i].word);
    cr_expect(strstr(clattn_ctx_errmsg(ctx), bad[i].word) != NULL,
              "message \"%s\" lacks \"%s\"", clattn_ctx_errmsg(ctx),
              bad[i].word);
  }
  /* an override out of range names the value, not a count's sign */
  cr_expect_eq(clattn_ctx_set_params(ctx, "decode: rows=2147483647"),
               CLATTN_ERR_INVALID_ARG);
  cr_expect(strstr(clattn_ctx_errmsg(ctx),
                   "rows=2147483647: the decode family's rows is 1 to") != NULL,
            "%s", clattn_ctx_errmsg(ctx));
  clattn_ctx_destroy(ctx);
}

/* CLATTN_TEST_KNOWN_WRONG: the families a tier's driver is known to compute
 * wrong (comma-separated; docs/TESTING.md, "Known wrong results").  They
 * still run and are compared: a mismatch is logged as the known one, and a
 * match fails, so that the entry is removed once the cause is fixed. */
static int known_wrong(const char *family) {
  const char *list = getenv("CLATTN_TEST_KNOWN_WRONG");
  const size_t len = strlen(family);
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    const size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == len && strncmp(p, family, n) == 0)
      return 1;
    p = end ? end + 1 : NULL;
  }
  return 0;
}

static void expect_still_wrong(const char *what, const float *got,
                               const float *ref, size_t n, double tol) {
  const tu_err e = tu_compare(got, ref, n);
  const int ok = e.nonfinite == 0 && e.missing == 0 && e.rel <= tol;
  cr_expect(!ok,
            "%s: listed in CLATTN_TEST_KNOWN_WRONG but now matches the "
            "reference: take it off the list",
            what);
  /* on stderr, not cr_log_warn: a warning makes Criterion exit 1 */
  if (!ok)
    fprintf(stderr,
            "%s: KNOWN WRONG on this driver (CLATTN_TEST_KNOWN_WRONG): "
            "rel err %.3g, %zu non-finite where the reference is finite, "
            "of %zu\n",
            what, e.rel, e.nonfinite, n);
}

Test(families, check_case_on_device) {
  clattn_ctx *ctx = tu_ctx();
  tu_rng rng = tu_rng_seed(77);
  for (int i = 0; i < clattn__family_count(); i++) {
    const clattn__family *F = clattn__family_at(i);
    clattn__check_case c;
    clattn__buf_spec spec[CLATTN__MAX_BUFS];
    void *host[CLATTN__MAX_BUFS];
    cl_mem dev[CLATTN__MAX_BUFS];
    check_case_of(i, &c);
    F->buffers(c.desc, spec);
    for (int b = 0; b < F->nbufs; b++) {
      const size_t n = spec[b].elems;
      if (spec[b].role == CLATTN__BUF_INTS) {
        int *x = tu_alloc(n * sizeof *x);
        if (F->fill_ints) /* a table built from the per-sequence values */
          F->fill_ints(c.desc, b, c.ints, 0, x);
        else
          for (size_t k = 0; k < n; k++)
            x[k] = c.ints[k];
        host[b] = x;
        dev[b] = tu_upload_int(ctx, x, n);
        continue;
      }
      float *x = tu_alloc(n * sizeof *x);
      host[b] = x;
      if (spec[b].role == CLATTN__BUF_OUT) {
        /* the reference writes the host copy; the device's is NaN, so an
         * element the kernel leaves unwritten fails the comparison */
        memset(x, 0, n * sizeof *x);
        dev[b] = tu_sentinel(ctx, n, spec[b].dtype, 0xff);
        continue;
      }
      tu_fill(&rng, x, n, 1.0f);
      tu_round(x, n, spec[b].dtype);
      dev[b] = tu_upload(ctx, x, n, spec[b].dtype);
    }
    cr_assert_eq(clattn__call(ctx, F, c.desc, NULL, dev, NULL), CLATTN_OK,
                 "%s: %s", F->name, clattn_ctx_errmsg(ctx));
    F->reference(c.desc, host);
    for (int b = 0; b < F->nbufs; b++) {
      const size_t n = spec[b].elems;
      if (spec[b].role == CLATTN__BUF_OUT ||
          spec[b].role == CLATTN__BUF_INOUT) {
        float *got = tu_alloc(n * sizeof *got);
        tu_download(ctx, dev[b], got, n, spec[b].dtype);
        char what[64];
        snprintf(what, sizeof what, "%s %s", F->name, spec[b].name);
        if (known_wrong(F->name))
          expect_still_wrong(what, got, host[b], n,
                             clattn__tolerance(spec[b].dtype));
        else
          tu_check(what, got, host[b], n, clattn__tolerance(spec[b].dtype));
        free(got);
      }
      tu_release(dev[b]);
      free(host[b]);
    }
  }
  clattn_ctx_destroy(ctx);
}

/* A kernel by its -D defines is the program the same options' text built
 * (the text is written "-DNAME=value ..." only for a build and the disk
 * cache): no second build, the same cl_kernel; other values are another
 * program, and too many defines an error. */
Test(families, defines_find_the_text_program) {
  clattn_ctx *ctx = tu_ctx();
  cl_kernel by_text = NULL, by_defs = NULL, other = NULL;
  cr_assert_eq(clattn__kernel(ctx, "decode.cl",
                              "-DDTYPE=0 -DDK=8 -DDV=8 -DKV_SAME=0",
                              "kv_append", &by_text),
               CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  clattn_cache_stats before = {.size = sizeof(clattn_cache_stats)},
                     after = {.size = sizeof(clattn_cache_stats)};
  clattn_ctx_cache_stats(ctx, &before);
  clattn__defs df = {0};
  clattn__def(&df, "DTYPE", 0);
  clattn__def(&df, "DK", 8);
  clattn__def(&df, "DV", 8);
  clattn__def(&df, "KV_SAME", 0);
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(
        clattn__kernel_defs(ctx, "decode.cl", &df, "kv_append", &by_defs),
        CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
    cr_assert_eq(by_defs, by_text);
  }
  clattn_ctx_cache_stats(ctx, &after);
  cr_assert_eq(after.source_builds + after.disk_hits,
               before.source_builds + before.disk_hits);
  df.value[1] = df.value[2] = 16;
  cr_assert_eq(clattn__kernel_defs(ctx, "decode.cl", &df, "kv_append", &other),
               CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  cr_assert_neq(other, by_text);
  for (int i = 0; i <= CLATTN__DEFS_MAX; i++)
    clattn__def(&df, "X", i);
  cr_assert_eq(df.n, -1);
  cr_assert_eq(clattn__kernel_defs(ctx, "decode.cl", &df, "kv_append", &other),
               CLATTN_ERR_MISUSE);
  clattn_ctx_destroy(ctx);
}

/* A former name reads as its family's: the talking-heads append became
 * the append family, and its name still finds it (the CLI's word, shape
 * text, $CLATTN_PARAMS keys, tuning rows: test_db_read) without being
 * listed. */
Test(families, former_names) {
  const clattn__family *A = clattn__family_find("append");
  cr_assert_not_null(A);
  cr_expect_eq(clattn__family_find("talking-heads-append"), A);
  cr_expect_eq(clattn_family_find("talking-heads-append"),
               clattn__family_index(A));
  cr_expect_eq(clattn_family_find("append"), clattn__family_index(A));
  cr_expect_eq(clattn_family_find("no-such-family"), -1);
  cr_expect_eq(clattn_family_find(NULL), -1);
  cr_expect_eq(clattn_tune_method("talking-heads-append"), A->tune_method);
  for (int i = 0; i < clattn_family_count(); i++)
    cr_expect_str_neq(clattn_family_name(i), "talking-heads-append");
  const clattn_profile prof = profile();
  const char *shape = "batch=2 kv-seq=20 new=3 heads-k=2 heads=5 heads-v=3 "
                      "head-dim=16 head-dim-v=8 dtype=bf16 layout=bshd";
  clattn_prediction old = {.size = sizeof(clattn_prediction)},
                    now = {.size = sizeof(clattn_prediction)};
  cr_assert_eq(
      clattn_model_shape("talking-heads-append", shape, NULL, &prof, &old),
      CLATTN_OK, "%s", old.errmsg);
  cr_assert_eq(clattn_model_shape("append", shape, NULL, &prof, &now),
               CLATTN_OK, "%s", now.errmsg);
  cr_expect_str_eq(old.kernel[0].kernel, "kv_append");
  cr_expect_eq(old.total.bytes_read, now.total.bytes_read);
  /* the former name keys the append family's overrides: it has no
   * tunables, so the message names the append family */
  clattn_ctx *ctx = tu_ctx();
  cr_assert_eq(clattn_ctx_set_params(ctx, "talking-heads-append: splits=2"),
               CLATTN_ERR_INVALID_ARG);
  cr_expect(strstr(clattn_ctx_errmsg(ctx), "append family has no") != NULL,
            "%s", clattn_ctx_errmsg(ctx));
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  cr_assert_eq(
      clattn_explain_shape(ctx, "talking-heads-append", shape, NULL, &ch),
      CLATTN_OK, "%s", clattn_ctx_errmsg(ctx));
  cr_expect_eq(ch.source, CLATTN_CHOICE_DEFAULT, "%s", ch.why);
  clattn_ctx_destroy(ctx);
}

/* Every layer kind fills what layer.c, kv_cache.c and layer_model.c call,
 * its core families are registered, its name is unique, and the public
 * accessors the CLI lists the kinds with are the registry's. */
Test(layer_kinds, every_slot) {
  const int n = clattn__layer_kind_count();
  cr_assert(n >= 6, "%d layer kinds", n);
  cr_expect_eq(clattn_layer_kind_count(), n);
  for (int i = 0; i < n; i++) {
    const clattn__layer_kind *K = clattn__layer_kind_at(i);
    cr_assert_not_null(K);
    cr_expect(K->name && *K->name && K->summary && *K->summary &&
                  K->desc_type && *K->desc_type,
              "layer kind %d: names", i);
    cr_expect(K->desc_size > sizeof(size_t) &&
                  K->desc_size <= CLATTN__LAYER_DESC_BYTES,
              "%s: description of %zu bytes", K->name, K->desc_size);
    cr_expect(K->check && K->options && K->weight_shape && K->cache_shape &&
                  K->core,
              "%s: an operation is missing", K->name);
    cr_expect(K->nweights >= 1 && K->nweights <= CLATTN__MAX_WEIGHTS &&
                  K->weights,
              "%s: %d weights", K->name, K->nweights);
    for (int w = 0; K->weights && w < K->nweights; w++)
      cr_expect(K->weights[w] && *K->weights[w], "%s: weight %d unnamed",
                K->name, w);
    cr_expect(K->nproj >= 1 && K->nproj <= CLATTN__MAX_PROJ && K->proj &&
                  K->nproj_in >= 0 && K->nproj_in <= K->nproj,
              "%s: projections %d (%d in)", K->name, K->nproj, K->nproj_in);
    for (int p = 0; K->proj && p < K->nproj; p++)
      cr_expect(K->proj[p].name && K->proj[p].weight >= 0 &&
                    K->proj[p].weight < K->nweights &&
                    K->proj[p].from < CLATTN__ACTS &&
                    K->proj[p].to < CLATTN__ACTS,
                "%s: projection %d", K->name, p);
    for (int op = 0; op < CLATTN__CORE_OPS; op++) {
      const int needed = op == CLATTN__CORE_PREFILL ||
                         op == CLATTN__CORE_DECODE || op == CLATTN__CORE_APPEND;
      if (needed)
        cr_expect_not_null(K->family[op], "%s: no core family %d", K->name, op);
      if (K->family[op] != NULL)
        cr_expect_not_null(clattn__layer_family(NULL, K, (clattn__core_op)op),
                           "%s: core family '%s' not registered", K->name,
                           K->family[op]);
    }
    cr_expect_eq(clattn__layer_kind_find(K->name), K, "%s: name not unique",
                 K->name);
    cr_expect_eq(clattn_layer_kind_name(i), K->name);
    cr_expect_eq(clattn_layer_kind_summary(i), K->summary);
  }
  cr_expect_null(clattn__layer_kind_at(n));
  cr_expect_null(clattn_layer_kind_name(n));
  cr_expect_null(clattn_layer_kind_name(-1));
  cr_expect_null(clattn_layer_kind_summary(n));
  cr_expect_null(clattn__layer_kind_find("no-such-kind"));
}
