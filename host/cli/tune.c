/* tune.c - `clattn tune` (the autotuner) and `clattn explain` (which
 * parameters a call would use, and why).
 *
 *   clattn tune [FAMILY|gemm|all] [SHAPE] [--strategy S] [--budget T]
 *               [--timeout T] [--max N] [--seed N] [--fresh] [--replace]
 *               [--db PATH] [--device D] [--quiet]
 *   clattn explain FAMILY SHAPE [--device D] [--db PATH]
 *
 * FAMILY is a kernel family of the registry (`attention` names prefill).
 * Without a SHAPE, `clattn tune` runs the families' standard shapes.
 * Progress is a status line on a terminal and nothing in a pipe; Ctrl-C
 * stops after the running candidate, with every result saved, and exits
 * 130. */
#include "cli.h"
#include "model.h"
#include "options.h"
#include "progress.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char tune_usage[] =
    "usage: clattn tune [FAMILY|gemm|all] [SHAPE] [OPTIONS]\n"
    "       clattn explain FAMILY SHAPE [--device D] [--db PATH]\n"
    "FAMILY: a kernel family (clattn families: prefill or its alias\n"
    "  attention, decode, append, ...)\n"
    "tune: search the kernels' parameters on the device and store every\n"
    "  measured candidate in the tuning database (--db PATH, default\n"
    "  $CLATTN_DB, else $XDG_DATA_HOME/clattn/tuning.db); a rerun resumes.\n"
    "  Without SHAPE: every family's standard shapes and CLBlast's Xgemm at\n"
    "  the layers' projection shapes.\n"
    "SHAPE: --batch B --seq N [--kv-seq M] --heads H [--kv-heads G]\n"
    "  --head-dim K [--head-dim-v V] [--dtype f32|f16|bf16] [--causal],\n"
    "  or the family's shape text as one word (\"batch=1 seq=512 heads=8\n"
    "  head-dim=64 causal=1 window=128\", its keys: clattn families);\n"
    "  decode: --kv-seq M is the cache capacity; gemm (CLBlast's Xgemm) and\n"
    "  projection (CLBlast or the own kernel): --m M --n N --k K (row-major\n"
    "  C[M,N] = A[M,K] B[K,N], as the layers call it); a family's own keys\n"
    "  as --KEY VALUE (clattn families)\n"
    "OPTIONS: --strategy auto|exhaustive|random|anneal|model (default auto),\n"
    "  --budget T (whole run, e.g. 90s, 5m; default none), --timeout T (per\n"
    "  candidate, default 10s), --max N (candidates per shape class; default\n"
    "  all for exhaustive, else 25% of the space), --seed N, --fresh\n"
    "  (measure again what the database has; each candidate keeps the\n"
    "  better of its two rows: ok over a failure, else the faster),\n"
    "  --replace (measure again and overwrite the stored rows), --quiet,\n"
    "  --device D\n"
    "explain: the parameters the family's call would use for\n"
    "  SHAPE on the device (--params \"NAME=N ...\" in the family's tunables,\n"
    "  or --variant/--rows/--keys/--wg/--splits/--prefetch/--scheme, act as the\n"
    "  caller's params), where they come from and why\n";

static int parse_strategy(const char *v, void *field) {
  for (int k = 0; k <= CLATTN_TUNE_MODEL; k++)
    if (!strcmp(v, clattn_tune_strategy_str((clattn_tune_strategy)k))) {
      *(clattn_tune_strategy *)field = (clattn_tune_strategy)k;
      return 0;
    }
  return -1;
}

/* Everything `clattn tune` parses: the model's SHAPE options, the tuner's
 * and Xgemm's sizes. */
typedef struct tune_args {
  model_opts m;
  clattn_tune_opts to;
  int quiet, seed;
  int gemm[3];
} tune_args;

#define TOFF(f) offsetof(tune_args, f)
enum { ANY_TUNE = T_FAM | T_GEMM | T_ALL };
static const cli_option tune_options[] = {
    {"strategy", CLI_FN, TOFF(to.strategy), 0, parse_strategy, ANY_TUNE,
     "auto|exhaustive|random|anneal|model", "the search (default auto)"},
    {"budget", CLI_FN, TOFF(to.budget_s), 0, cli_parse_duration, ANY_TUNE, "T",
     "the whole run (90s, 5m, 1h; default none)"},
    {"timeout", CLI_FN, TOFF(to.timeout_s), 0, cli_parse_duration, ANY_TUNE,
     "T", "a candidate's limit (default 10s)"},
    {"max", CLI_INT, TOFF(to.max_candidates), 1, NULL, ANY_TUNE, "N",
     "candidates a shape class"},
    {"seed", CLI_INT, TOFF(seed), 1, NULL, ANY_TUNE, "N",
     "random and anneal strategies' seed"},
    {"fresh", CLI_FLAG, TOFF(to.fresh), 0, NULL, ANY_TUNE, NULL,
     "measure again what the database has (the better row kept)"},
    {"replace", CLI_FLAG, TOFF(to.replace), 0, NULL, ANY_TUNE, NULL,
     "measure again and overwrite the stored rows"},
    {"quiet", CLI_FLAG, TOFF(quiet), 0, NULL, ANY_TUNE, NULL,
     "no progress line"},
    {"m", CLI_INT, TOFF(gemm[0]), 1, NULL, T_GEMM, "M", "C's rows"},
    {"n", CLI_INT, TOFF(gemm[1]), 1, NULL, T_GEMM, "N", "C's columns"},
    {"k", CLI_INT, TOFF(gemm[2]), 1, NULL, T_GEMM, "K", "the inner size"},
};

/* The option table of tune or explain for subcommand `scope` (family fam)
 * into buf: the model's SHAPE options then, for tune, the tuner's. */
static int tune_table(unsigned scope, int fam, cli_option *buf) {
  int n = cli_model_options(scope, fam, TOFF(m), buf, CLI_MAX_OPTIONS);
  if (n < 0 || !(scope & ANY_TUNE))
    return n;
  for (size_t i = 0; i < sizeof tune_options / sizeof tune_options[0]; i++)
    if (tune_options[i].scope & scope) {
      if (n >= CLI_MAX_OPTIONS)
        return -1;
      buf[n++] = tune_options[i];
    }
  return n;
}


typedef struct tune_cli {
  int tty, quiet;
  double budget;
  double start;
} tune_cli;

static void show_progress(const clattn_tune_progress *p, void *user) {
  const tune_cli *t = user;
  if (!t->tty || t->quiet)
    return;
  const int tw = cli_term_width(STDERR_FILENO);
  const int width = tw < 1000 ? tw : 1000;
  char status[96], tail[64], head[512], line[1024];
  snprintf(status, sizeof status, ": %d/%d (space %d), best %.3f ms", p->done,
           p->total, p->space, p->best_s * 1e3);
  int n = snprintf(tail, sizeof tail, ", %.0f s", p->elapsed_s);
  if (p->budget_s > 0 && n > 0 && (size_t)n < sizeof tail)
    snprintf(tail + n, sizeof tail - (size_t)n, ", %.0f s left",
             fmax(0.0, p->budget_s - p->elapsed_s));
  /* the shape class gives way to the counts: whole words of it, what is
   * left of the width after them */
  const int room = width - (int)strlen(status);
  cli_fit_line(head, sizeof head - sizeof status, room > 12 ? room : 12,
               p->kernel, p->shape_class, "");
  strcat(head, status);
  cli_fit_line(line, sizeof line, width, head, p->best_params, tail);
  fprintf(stderr, "\r\033[K%s", line);
  fflush(stderr);
}

static void print_result(const char *kernel, const clattn_tune_result *r,
                         const tune_cli *t) {
  if (t->tty && !t->quiet)
    fprintf(stderr, "\r\033[K");
  printf("%s %s\n", kernel, r->shape_class);
  if (r->best_s > 0) {
    printf("  best     %s  %.4f ms", r->best_params, r->best_s * 1e3);
    if (r->default_s > 0)
      printf("  (default %.4f ms: %.2fx)", r->default_s * 1e3,
             r->default_s / r->best_s);
    printf("\n");
    if (r->roofline_s > 0)
      printf("  roofline %.4f ms%s: the best runs at %.0f%% of it\n",
             r->roofline_s * 1e3,
             r->refreshes > 0 ? " (at the bandwidth of a copy timed in the "
                                "run)"
                              : "",
             100.0 * r->roofline_s / r->best_s);
  } else {
    printf("  no valid candidate measured\n");
  }
  printf("  %d of %d candidates evaluated (%d measured now, %d from the "
         "database), %d rejected, %d pruned, %d verified; %.1f s; stopped: "
         "%s\n",
         r->measured + r->reused, r->space, r->measured, r->reused, r->rejected,
         r->pruned, r->verified, r->elapsed_s, r->stopped);
  if (r->stale > 0)
    printf("  %d stored rows of an older tuning method (clattn_tune_method) "
           "were not reused\n",
           r->stale);
  fflush(stdout);
}

/* CLBlast's Xgemm at the projections of a d_model 512 layer over 512 and
 * 2048 rows (m, n, k); the kernel families' standard shapes come from the
 * registry (clattn_family_standard_shape). */
static const int gemm_shapes[][3] = {{512, 512, 512}, {2048, 512, 512}};

/* Tune family fam (-1: CLBlast's Xgemm at gemm) at shape text. */
static int run_one(clattn_ctx *ctx, clattn_db *db, int fam, const char *shape,
                   const int *gemm, const clattn_tune_opts *to,
                   const tune_cli *t) {
  clattn_tune_result r = {.size = sizeof(clattn_tune_result)};
  clattn_status st;
  const char *name = fam < 0 ? "gemm" : clattn_family_name(fam);
  if (fam < 0)
    st = clattn_tune_gemm(ctx, db, gemm[0], gemm[1], gemm[2], to, &r);
  else
    st = clattn_tune_shape(ctx, db, name, shape, to, &r);
  if (st != CLATTN_OK) {
    if (t->tty && !t->quiet)
      fprintf(stderr, "\r\033[K");
    cli_lib_fail(ctx, name, st);
    /* a shape the family's validation refuses is a usage error */
    return st == CLATTN_ERR_SHAPE || st == CLATTN_ERR_INVALID_ARG ? CLI_USAGE
                                                                  : CLI_FAIL;
  }
  print_result(name, &r, t);
  return CLI_OK;
}

int cli_tune(int argc, char **argv) {
  tune_args ta;
  tune_cli t;
  memset(&ta, 0, sizeof ta);
  ta.to.size = sizeof ta.to;
  memset(&t, 0, sizeof t);
  t.start = clattn__now(); /* --budget is the whole command's */
  ta.m.dtype = CLATTN_F32;
  /* which: a family of the registry, GEMM (CLBlast's Xgemm) or ALL */
  enum { ALL = -2, GEMM = -1 };
  int which = ALL;
  const char *word = "all";
  int i = 0;
  if (argc > 0 && argv[0][0] != '-') {
    word = argv[0];
    if (!strcmp(word, "gemm"))
      which = GEMM;
    else if (!strcmp(word, "all"))
      which = ALL;
    else if (!strcmp(word, "help")) {
      fputs(tune_usage, stdout);
      return CLI_OK;
    } else if ((which = cli_family(word)) < 0)
      return cli_usage_error("tune",
                             "unknown '%.40s' (a kernel family: "
                             "clattn families, gemm or all)",
                             word);
    i = 1;
  }
  const unsigned scope = which == ALL ? T_ALL : which == GEMM ? T_GEMM : T_FAM;
  cli_option table[CLI_MAX_OPTIONS];
  const int nt = tune_table(scope, which, table);
  char name[64];
  snprintf(name, sizeof name, i ? "tune %s" : "tune", word);
  if (nt < 0)
    return cli_usage_error(name, "too many shape keys");
  const cli_command cmd = {
      name, tune_usage, table, nt, scope, scope == T_FAM ? 1 : 0, NULL};
  cli_args a;
  int rc = cli_parse_cmd(&cmd, argc - i, argv + i, &ta, &a);
  if (rc)
    return rc < 0 ? CLI_OK : rc;
  model_opts m = ta.m;
  clattn_tune_opts to = ta.to;
  to.seed = (unsigned)ta.seed;
  to.fresh |= to.replace; /* --replace measures again too */
  t.quiet = ta.quiet;
  const int *gemm = ta.gemm;
  const int gemm_given = gemm[0] || gemm[1] || gemm[2];
  /* any SHAPE option names one shape: never the standard ones with the
   * option ignored */
  const int custom = cli_shape_flags_given(&m) || a.n_operands || gemm_given;
  char shape[512] = "";
  if (which == GEMM && custom && !(gemm[0] && gemm[1] && gemm[2]))
    return cli_usage_error(name, "give --m, --n and --k");
  if (which >= 0 &&
      (rc = cli_shape_arg(name, &m, which, &a, shape, sizeof shape)))
    return rc;

  /* from here on Ctrl-C stops at the next candidate (exit 130) */
  struct sigaction old;
  cli_catch_sigint(&old);
  clattn_ctx *ctx = NULL;
  clattn_db *db = NULL;
  /* a context without clblast_override, as a serving engine's would be:
   * the projection family's CLBlast candidates run CLBlast's own
   * parameters, and the own kernel where a tuned Xgemm entry covers them */
  if ((rc = cli_ctx_create_db(m.device, m.db, &ctx))) {
    sigaction(SIGINT, &old, NULL);
    return cli_stop ? CLI_INTERRUPTED : rc;
  }
  if (clattn_db_open(m.db, &db) != CLATTN_OK) {
    cli_err("tuning database: %s", clattn_db_errmsg(NULL));
    clattn_ctx_destroy(ctx);
    sigaction(SIGINT, &old, NULL);
    return CLI_FAIL;
  }
  t.tty = isatty(STDERR_FILENO);
  t.budget = to.budget_s;
  to.stop = &cli_stop;
  to.progress = show_progress;
  to.user = &t;
  clattn_profile rep = {.size = sizeof(clattn_profile)};
  if (clattn_profile_reported(ctx, &rep) != CLATTN_OK)
    snprintf(rep.name, sizeof rep.name, "the device");
  printf("tuning on %s, database %s\n", rep.name, clattn_db_path(db));
  if (cli_stop) {
    rc = CLI_INTERRUPTED;
  } else if (custom) {
    clattn_tune_opts co = to;
    if (to.budget_s > 0) /* what the context and the database left */
      co.budget_s = fmax(to.budget_s - (clattn__now() - t.start), 1e-3);
    rc = run_one(ctx, db, which, shape, gemm, &co, &t);
  } else {
    /* the standard shapes of the chosen families, then the GEMMs */
    const int nf = clattn_family_count();
    const int ng = (int)(sizeof gemm_shapes / sizeof gemm_shapes[0]);
    int todo = 0;
    for (int f = 0; f < nf; f++)
      for (int k = 0;
           (which == ALL || which == f) && clattn_family_standard_shape(f, k);
           k++)
        todo++;
    if (which == ALL || which == GEMM)
      todo += ng;
    for (int f = 0; f <= nf && rc == CLI_OK && !cli_stop; f++) {
      const int gemm_step = f == nf; /* the GEMMs after the families */
      const int mine = gemm_step ? which == ALL || which == GEMM
                                 : which == ALL || which == f;
      const int n = gemm_step ? ng : 1 << 20;
      for (int k = 0; mine && k < n && rc == CLI_OK && !cli_stop; k++) {
        const char *std = gemm_step ? "" : clattn_family_standard_shape(f, k);
        if (std == NULL)
          break;
        clattn_tune_opts co = to;
        if (to.budget_s > 0) {
          /* what is left, shared by the classes left */
          double left = to.budget_s - (clattn__now() - t.start);
          if (left <= 0)
            break;
          co.budget_s = left / todo;
        }
        todo--;
        rc = run_one(ctx, db, gemm_step ? GEMM : f, std,
                     gemm_step ? gemm_shapes[k] : NULL, &co, &t);
      }
    }
  }
  sigaction(SIGINT, &old, NULL);
  if (cli_stop) {
    printf("stopped by Ctrl-C: every measured candidate is saved; run the "
           "same command again to resume\n");
    rc = CLI_INTERRUPTED;
  }
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
  return rc;
}

int cli_explain(int argc, char **argv) {
  tune_args ta;
  memset(&ta, 0, sizeof ta);
  ta.to.size = sizeof ta.to;
  ta.m.dtype = CLATTN_F32;
  if (argc > 0 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h") ||
                   !strcmp(argv[0], "help"))) {
    fputs(tune_usage, stdout);
    return CLI_OK;
  }
  if (argc < 1)
    return cli_usage_error("explain", "missing FAMILY (attention, decode, "
                                      "...: clattn families)");
  const int fam = cli_family(argv[0]);
  if (fam < 0)
    return cli_usage_error("explain",
                           "unknown family '%.40s' (clattn "
                           "families)",
                           argv[0]);
  cli_option table[CLI_MAX_OPTIONS];
  const int nt = tune_table(E_FAM, fam, table);
  char name[64];
  snprintf(name, sizeof name, "explain %s", argv[0]);
  if (nt < 0)
    return cli_usage_error(name, "too many shape keys");
  const cli_command cmd = {name, tune_usage, table, nt, E_FAM, 1, NULL};
  cli_args a;
  int rc = cli_parse_cmd(&cmd, argc - 1, argv + 1, &ta, &a);
  if (rc)
    return rc < 0 ? CLI_OK : rc;
  model_opts m = ta.m;
  char shape[512];
  /* the shape as text or flags; without either cli_shape_text says what
   * is missing */
  if ((rc = cli_shape_arg(name, &m, fam, &a, shape, sizeof shape)) ||
      (!shape[0] && (rc = cli_shape_text(&m, fam, shape, sizeof shape))))
    return rc;
  clattn_ctx *ctx = NULL;
  if (cli_ctx_create_db(m.device, m.db, &ctx))
    return CLI_FAIL;
  clattn_choice ch = {.size = sizeof(clattn_choice)};
  m.params.size = sizeof m.params; /* the flags fill its fields */
  const int caller = cli_params_given(&m.params);
  clattn_status st = clattn_explain_shape(ctx, clattn_family_name(fam), shape,
                                          caller ? &m.params : NULL, &ch);
  if (st != CLATTN_OK) {
    rc = cli_lib_fail(ctx, "explain", st);
    clattn_ctx_destroy(ctx);
    return st == CLATTN_ERR_SHAPE || st == CLATTN_ERR_INVALID_ARG ? CLI_USAGE
                                                                  : rc;
  }
  const char *chosen = ch.params[0] ? ch.params : "(automatic)";
  const char *resolved = ch.resolved;
  if (m.json) {
    printf("{\"shape_class\": \"%s\", \"source\": \"%s\", \"params\": "
           "\"%s\", \"resolved\": \"%s\", \"entry_class\": \"%s\", "
           "\"entry_median_s\": %.9g}\n",
           ch.shape_class, clattn_choice_source_str(ch.source), chosen,
           resolved, ch.entry_class, ch.entry_median_s);
  } else {
    printf("shape class  %s %s\n", clattn_family_name(fam), ch.shape_class);
    printf("source       %s\n", clattn_choice_source_str(ch.source));
    printf("params       %s\n", chosen);
    printf("resolved     %s\n", resolved);
    if (ch.entry_class[0])
      printf("entry        %s on %s, %.4f ms\n", ch.entry_class,
             ch.entry_device, ch.entry_median_s * 1e3);
    printf("why          %s\n", ch.why);
  }
  clattn_ctx_destroy(ctx);
  return CLI_OK;
}
