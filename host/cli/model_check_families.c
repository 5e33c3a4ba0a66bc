/* model_check_families.c - `clattn model check`'s second table: every
 * registered kernel family at shapes of its own, the model's prediction
 * beside the library's call timed cold by clattn_bench_shape.
 *
 * Each family's shapes are its standard shapes (--quick: the first); a
 * family with none runs one built from its shape keys.  A shape the model
 * predicts over MAX_PRED_S on the check's profile is halved in its lengths
 * (seq, kv-seq, pos, m) until it is not, so that a slow device (Mesa's
 * llvmpipe) finishes the table.  On llvmpipe the lengths are halved further
 * until a work-item's loops stay well under its loop limiter (65535
 * iterations shared by every loop of a shader invocation, after which each
 * loop stops after one iteration: a wrong, too fast time; docs/TESTING.md,
 * "Known wrong results").  The shape printed is the one run.
 *
 * The measurement follows one launch of the probe's copy kernel and is
 * followed by another; the prediction is made on the profile scaled to the
 * mean of the two copies, as the first table pairs its decode rounds: a
 * shared machine's bandwidth moves by tens of percent within minutes. */
#include "cli.h"
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PRED_S 0.5 /* the longest predicted call a shape keeps */
/* Keys x head dims x key heads a work-item may loop over on llvmpipe: an
 * eighth of its limiter, as the kernels' loops over keys run over the head
 * dims more than once. */
#define LOOP_BUDGET 8192
#define MIN_LENGTH 16 /* a sequence length is not halved below it */
#define SHAPE_CAP 256

/* The shape of a family without standard shapes: these words, those its
 * keys name. */
static const char *const fallback_words[] = {
    "batch=4",     "seq=256", "kv-seq=2048", "heads=8", "new=1",
    "head-dim=64", "page=16", "m=256",       "n=512",   "k=512",
};

/* The value of key in shape text ("key=value" words), or -1 if absent. */
static long shape_get(const char *shape, const char *key) {
  const size_t kl = strlen(key);
  for (const char *w = shape; *w;) {
    while (*w == ' ')
      w++;
    if (!strncmp(w, key, kl) && w[kl] == '=')
      return strtol(w + kl + 1, NULL, 10);
    while (*w && *w != ' ')
      w++;
  }
  return -1;
}

/* Shape text with key's value replaced by v (the other words as they
 * are), into out. */
static void shape_set(const char *shape, const char *key, long v, char *out,
                      size_t cap) {
  const size_t kl = strlen(key);
  size_t n = 0;
  out[0] = '\0';
  for (const char *w = shape; *w;) {
    while (*w == ' ')
      w++;
    const char *e = w;
    while (*e && *e != ' ')
      e++;
    if (e == w)
      break;
    int len = n < cap ? (!strncmp(w, key, kl) && w[kl] == '='
                             ? snprintf(out + n, cap - n, "%s%s=%ld",
                                        n ? " " : "", key, v)
                             : snprintf(out + n, cap - n, "%s%.*s",
                                        n ? " " : "", (int)(e - w), w))
                      : 0;
    n += len > 0 ? (size_t)len : 0;
    w = e;
  }
}

/* The shape of a family without standard shapes, from its keys. */
static void fallback_shape(int fam, char *out, size_t cap) {
  const char *keys = clattn_family_shape_keys(fam);
  size_t n = 0;
  out[0] = '\0';
  for (size_t i = 0; i < sizeof fallback_words / sizeof *fallback_words; i++) {
    char key[32];
    snprintf(key, sizeof key, "%.*s", (int)strcspn(fallback_words[i], "="),
             fallback_words[i]);
    if (keys && cli_has_word(keys, key) && n < cap) {
      int len =
          snprintf(out + n, cap - n, "%s%s", n ? " " : "", fallback_words[i]);
      n += len > 0 ? (size_t)len : 0;
    }
  }
}

/* The shape with its lengths halved once (seq and kv-seq down to
 * MIN_LENGTH, pos to its kv-seq less one, m by half); 0 when none can
 * be. */
static int halve(const char *shape, char *out, size_t cap) {
  static const char *const lengths[] = {"seq", "kv-seq", "m"};
  char a[SHAPE_CAP], b[SHAPE_CAP];
  int changed = 0;
  snprintf(a, sizeof a, "%s", shape);
  for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++) {
    const long v = shape_get(a, lengths[i]);
    const long floor_v = strcmp(lengths[i], "m") ? MIN_LENGTH : 1;
    if (v >= 2 * floor_v) {
      shape_set(a, lengths[i], v / 2, b, sizeof b);
      memcpy(a, b, sizeof a);
      changed = 1;
    }
  }
  /* a decode position stays the last of the cache */
  const long pos = shape_get(a, "pos"), kv = shape_get(a, "kv-seq");
  if (changed && pos >= 0 && kv > 0 && pos >= kv) {
    shape_set(a, "pos", kv - 1, b, sizeof b);
    memcpy(a, b, sizeof a);
  }
  snprintf(out, cap, "%s", a);
  return changed;
}

/* A work-item's loop iterations on llvmpipe, as LOOP_BUDGET counts them:
 * the keys a query sees times the head dims times the key heads (a
 * family with heads-k: heads where the shape names none, its default). */
static double loop_iterations(const char *family, const char *shape) {
  long keys = shape_get(shape, "kv-seq");
  if (keys < 0)
    keys = shape_get(shape, "seq");
  if (keys < 0)
    keys = shape_get(shape, "k");
  const char *fkeys = clattn_family_shape_keys(clattn_family_find(family));
  const long d = shape_get(shape, "head-dim");
  long hk = shape_get(shape, "heads-k");
  if (hk < 0 && fkeys && cli_has_word(fkeys, "heads-k"))
    hk = shape_get(shape, "heads");
  return (double)(keys > 0 ? keys : 1) * (double)(d > 0 ? d : 1) *
         (double)(hk > 0 ? hk : 1);
}

/* The shape to run: `shape` halved while the model predicts it over
 * MAX_PRED_S on prof (and, with loop_limit, while its loops exceed
 * LOOP_BUDGET); a halving the model refuses ends it.  0, or CLI_FAIL when
 * the model refuses the shape itself (its message in pr->errmsg). */
static int shape_to_run(const char *family, const char *shape,
                        const clattn_profile *prof, int loop_limit, char *out,
                        size_t cap, clattn_prediction *pr) {
  char cur[SHAPE_CAP], next[SHAPE_CAP];
  snprintf(cur, sizeof cur, "%s", shape);
  if (clattn_model_shape(family, cur, NULL, prof, pr) != CLATTN_OK)
    return CLI_FAIL;
  for (;;) {
    const int over = pr->total.t_pred > MAX_PRED_S ||
                     (loop_limit && loop_iterations(family, cur) > LOOP_BUDGET);
    if (!over || !halve(cur, next, sizeof next))
      break;
    clattn_prediction p2 = {.size = sizeof(clattn_prediction)};
    if (clattn_model_shape(family, next, NULL, prof, &p2) != CLATTN_OK)
      break;
    memcpy(cur, next, sizeof cur);
    *pr = p2;
  }
  snprintf(out, cap, "%s", cur);
  return CLI_OK;
}

/* Whether family name is in the comma- or blank-separated list (NULL or
 * "": every family). */
static int family_selected(const char *list, const char *name) {
  if (list == NULL || !*list)
    return 1;
  const size_t nl = strlen(name);
  for (const char *w = list; *w;) {
    while (*w == ',' || *w == ' ')
      w++;
    const size_t len = strcspn(w, ", ");
    if (len == nl && !strncmp(w, name, nl))
      return 1;
    w += len;
  }
  return 0;
}

int cli_check_families_valid(const char *list) {
  if (list == NULL)
    return CLI_OK;
  for (const char *w = list; *w;) {
    while (*w == ',' || *w == ' ')
      w++;
    const size_t len = strcspn(w, ", ");
    if (!len)
      break;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)len, w);
    int known = 0;
    for (int i = 0; i < clattn_family_count() && !known; i++)
      known = !strcmp(clattn_family_name(i), name);
    if (!known)
      return cli_usage_error("model check",
                             "--families: unknown family '%.40s' (clattn "
                             "families lists them)",
                             name);
    w += len;
  }
  return CLI_OK;
}

/* One copy of the reference; 0 when there is none. */
static int copy_gbs(clattn_ctx *ctx, clattn_copy_ref *ref, double *gbs) {
  *gbs = 0.0;
  clattn_status st;
  if (ref && (st = clattn_copy_ref_run(ref, gbs)))
    return cli_lib_fail(ctx, "clattn_copy_ref_run", st);
  return CLI_OK;
}

/* Store one row as a model check, its call "<family> <shape>". */
static int store(clattn_db *db, const clattn_profile *prof, const char *family,
                 const char *shape, const clattn_prediction *pr,
                 double measured) {
  const clattn_cost *t = &pr->total;
  clattn_check_record r = {.size = sizeof(clattn_check_record)};
  snprintf(r.fingerprint, sizeof r.fingerprint, "%s", prof->fingerprint);
  /* (a longer shape is cut at the field's 127 characters) */
  snprintf(r.call, sizeof r.call, "%.31s %.95s", family, shape);
  snprintf(r.bound, sizeof r.bound, "%s", cli_bound_name(t->bound));
  r.predicted_s = t->t_pred;
  r.measured_s = measured;
  r.gbs = t->bytes_dram / measured * 1e-9;
  r.gflops = t->flops / measured * 1e-9;
  r.roofline_fraction =
      (t->t_memory > t->t_compute ? t->t_memory : t->t_compute) / measured;
  if (clattn_db_put_check(db, &r) != CLATTN_OK) {
    cli_err("storing the check: %s", clattn_db_errmsg(db));
    return CLI_FAIL;
  }
  return CLI_OK;
}

/* The profile without the in-core rates (exp2, cached loads, local
 * memory, barriers, the library's launch, the overlap): the roofline's
 * max(memory, compute at the FMA peak) plus a pipelined launch, the model
 * as it was before them. */
static clattn_profile roofline_only(const clattn_profile *p) {
  clattn_profile r = *p;
  r.exp2_gops = r.cache_gbs = r.local_gbs = r.barrier_ns = 0;
  r.launch_call_us = r.unhidden = 0;
  return r;
}

/* Measure and predict one shape of a family, print its row, store it. */
static int check_shape(clattn_ctx *ctx, clattn_db *db,
                       const clattn_profile *prof, clattn_copy_ref *ref,
                       const model_opts *o, int loop_limit, const char *family,
                       const char *standard, int *failed) {
  char shape[SHAPE_CAP];
  clattn_prediction pr = {.size = sizeof(clattn_prediction)};
  if (shape_to_run(family, standard, prof, loop_limit, shape, sizeof shape,
                   &pr)) {
    printf("  %-20s model: %s  %s\n", family, pr.errmsg, standard);
    (*failed)++;
    return CLI_OK;
  }
  clattn_bench_opts bo = {.size = sizeof(clattn_bench_opts)};
  bo.no_baselines = 1;
  bo.no_store = 1;
  bo.repeats = o->quick ? 3 : 5;
  clattn_bench_entry rows[CLATTN_BENCH_MAX_IMPLS];
  int n = 0, rc;
  double g0, g1;
  if ((rc = copy_gbs(ctx, ref, &g0)))
    return rc;
  clattn_status st =
      clattn_bench_shape(ctx, db, family, shape, &bo, sizeof rows[0], rows, &n);
  if (!st && (rc = copy_gbs(ctx, ref, &g1)))
    return rc;
  if (st || n < 1 || !(rows[0].median_s > 0)) {
    char what[SHAPE_CAP + 64];
    snprintf(what, sizeof what, "bench %s %s", family, shape);
    if (st)
      cli_lib_fail(ctx, what, st);
    else
      cli_err("%s: no time measured", what);
    (*failed)++;
    return CLI_OK;
  }
  /* the params measured, the bandwidth of the measurement's moment */
  clattn_profile at = *prof;
  if (ref)
    clattn_profile_at_copy(&at, 0.5 * (g0 + g1));
  const clattn_params params = {.size = sizeof(clattn_params),
                                .text =
                                    rows[0].params[0] ? rows[0].params : NULL};
  if (clattn_model_shape(family, shape, &params, &at, &pr) != CLATTN_OK) {
    printf("  %-20s model: %s  %s\n", family, pr.errmsg, shape);
    (*failed)++;
    return CLI_OK;
  }
  /* the roofline's prediction beside it: the same profile without the
   * in-core rates is the model before them */
  clattn_prediction roof = {.size = sizeof(clattn_prediction)};
  const clattn_profile bare = roofline_only(&at);
  if (clattn_model_shape(family, shape, &params, &bare, &roof) != CLATTN_OK) {
    printf("  %-20s model: %s  %s\n", family, roof.errmsg, shape);
    (*failed)++;
    return CLI_OK;
  }
  const double meas = rows[0].median_s, pred = pr.total.t_pred;
  char copy[16] = "-";
  if (ref)
    snprintf(copy, sizeof copy, "%.1f", 0.5 * (g0 + g1));
  printf("  %-20s %8s %10.1f %10.1f %+6.0f%% %+8.0f%% %7s  %s%s", family,
         cli_bound_name(pr.total.bound), pred * 1e6, meas * 1e6,
         100.0 * (pred / meas - 1.0),
         100.0 * (roof.total.t_pred / meas - 1.0), copy, shape,
         strcmp(shape, standard) ? " (halved)" : "");
  /* the model plans the params it is given; say so where it did not */
  if (strcmp(pr.params, rows[0].params))
    printf(" (ran %s, modelled %s)", rows[0].params, pr.params);
  putchar('\n');
  return db && !o->no_store ? store(db, prof, family, shape, &pr, meas)
                            : CLI_OK;
}

int cli_model_check_families(clattn_ctx *ctx, clattn_db *db,
                             const clattn_profile *prof, clattn_copy_ref *ref,
                             const model_opts *o) {
  const int loop_limit = strstr(prof->name, "llvmpipe") != NULL;
  char loop_rule[192] = "";
  if (loop_limit)
    snprintf(loop_rule, sizeof loop_rule,
             ",\n  and while a work-item would loop over more than %d keys x "
             "head dims x key heads\n  (llvmpipe's loop limiter cuts longer "
             "loops short: a wrong, too fast time)",
             LOOP_BUDGET);
  printf("\nevery family at shapes of its own (the standard shapes%s), "
         "lengths halved while the\n  model predicts a call over %.1f s%s; "
         "the library's call timed cold\n  (clattn_bench_shape, median of "
         "%d) between two copies (the probe's copy kernel),\n  predicted "
         "with the params it ran on the profile scaled to the copies' mean "
         "GB/s;\n  error: predicted / measured - 1; roofline: the same with "
         "the profile's in-core rates\n  left out (max(memory, compute at "
         "the FMA peak) + a pipelined launch)\n",
         o->quick ? ", the first of each" : "", MAX_PRED_S, loop_rule,
         o->quick ? 3 : 5);
  printf("  %-20s %8s %10s %10s %7s %9s %7s  %s\n", "family", "bound",
         "pred us", "meas us", "error", "roofline", "copy", "shape run");
  int failed = 0, rc = CLI_OK;
  for (int f = 0; f < clattn_family_count() && !rc; f++) {
    const char *family = clattn_family_name(f);
    if (!family_selected(o->families, family))
      continue;
    if (!clattn_family_standard_shape(f, 0)) {
      char shape[SHAPE_CAP];
      fallback_shape(f, shape, sizeof shape);
      rc = check_shape(ctx, db, prof, ref, o, loop_limit, family, shape,
                       &failed);
      continue;
    }
    for (int j = 0; !rc; j++) {
      const char *s = clattn_family_standard_shape(f, j);
      if (s == NULL || (o->quick && j > 0))
        break;
      rc = check_shape(ctx, db, prof, ref, o, loop_limit, family, s, &failed);
    }
  }
  if (!rc && failed) {
    cli_err("%d famil%s shape%s failed (above)", failed,
            failed == 1 ? "y's" : "ies'", failed == 1 ? "" : "s");
    rc = CLI_FAIL;
  }
  return rc;
}
