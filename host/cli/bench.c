/* bench.c - `clattn bench`: the library's choice against its baselines
 * (the copy kernel, a family's unfused path or CLBlast) at the families'
 * bench shapes, each stored as rows of the database for `clattn report`.
 *
 *   clattn bench [FAMILY|all] [SHAPE] [--device SEL] [--db PATH]
 *                [--repeats N] [--run NAME] [--no-store] [--no-baselines]
 *                [--quiet] [--json]
 *
 * A shape that fails on the device (too large, say) is reported and the
 * others go on; the exit status is then 1.  Progress is a status line on a
 * terminal's stderr, nothing in a pipe. */
#include "cli.h"
#include "model.h"
#include "options.h"
#include "progress.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* The rows of one clattn_bench_shape. */
typedef struct bench_rows {
  clattn_bench_entry rows[CLATTN_BENCH_MAX_IMPLS];
  int n;
} bench_rows;

static const char bench_usage[] =
    "usage: clattn bench [FAMILY|all] [SHAPE] [OPTIONS]\n"
    "Time the library's choice for each shape beside the family's baselines\n"
    "(copy: the probe's copy kernel moving the call's compulsory bytes, every\n"
    "family; prefill: unfused CLBlast GEMM + softmax + GEMM; projection:\n"
    "CLBlast), cold, in interleaved rounds, and store every row in the\n"
    "database (--db PATH, default $CLATTN_DB) under one run name.\n"
    "FAMILY: a kernel family (clattn families), or all (the default).\n"
    "SHAPE: the family's --KEY VALUE flags as for clattn tune, or its shape\n"
    "  text as one word (\"batch=1 kv-seq=4096 heads=32 head-dim=128\");\n"
    "  without one, the family's bench shapes.\n"
    "A line per shape: time, GFLOP/s, GB/s, % of the roofline, the model's\n"
    "error (predicted / measured - 1), where the params came from, and each\n"
    "baseline's time as a multiple of the library's.\n";

typedef struct bench_args {
  model_opts m;
  int repeats, no_store, no_baselines, quiet, json;
  const char *run;
} bench_args;

#define BOFF(f) offsetof(bench_args, f)
static const cli_option bench_options[] = {
    {"repeats", CLI_INT, BOFF(repeats), 1, NULL, 0, "N",
     "timed runs of each implementation (default 7)"},
    {"run", CLI_STR, BOFF(run), 0, NULL, 0, "NAME",
     "the run's name (default: UTC date, host name, pid)"},
    {"no-store", CLI_FLAG, BOFF(no_store), 0, NULL, 0, NULL,
     "print only; the database gives the device's profile"},
    {"no-baselines", CLI_FLAG, BOFF(no_baselines), 0, NULL, 0, NULL,
     "time the library's choice alone"},
    {"quiet", CLI_FLAG, BOFF(quiet), 0, NULL, 0, NULL, "no progress line"},
    {"json", CLI_FLAG, BOFF(json), 0, NULL, 0, NULL, "print one JSON document"},
};

/* The option table for family fam (-1: all): the SHAPE options its keys
 * name, --device and --db (tune's), then bench's own. */
static int bench_table(int fam, cli_option *buf) {
  int n = cli_model_options(fam >= 0 ? T_FAM : T_ALL, fam, BOFF(m), buf,
                            CLI_MAX_OPTIONS);
  for (size_t i = 0;
       n >= 0 && i < sizeof bench_options / sizeof bench_options[0]; i++) {
    if (n >= CLI_MAX_OPTIONS)
      return -1;
    buf[n++] = bench_options[i];
  }
  return n;
}

typedef struct bench_cli {
  int tty, json, printed;
} bench_cli;

static void clear_progress(const bench_cli *b) {
  if (b->tty) {
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
  }
}

static void show_progress(const bench_cli *b, int k, int total,
                          const char *family, const char *shape) {
  if (!b->tty)
    return;
  const int tw = cli_term_width(STDERR_FILENO);
  char head[96], line[1100];
  snprintf(head, sizeof head, "bench %d/%d %s", k, total, family);
  cli_fit_line(line, sizeof line, tw < 1000 ? tw : 1000, head, shape, "");
  fprintf(stderr, "\r\033[K%s", line);
  fflush(stderr);
}

static void json_num(const char *key, double v, const char *sep) {
  printf("\"%s\": %.9g%s", key, v, sep);
}

static void print_json(bench_cli *b, const bench_rows *r) {
  printf("%s\n  {\"family\": ", b->printed++ ? "," : "");
  cli_json_str(r->rows[0].family);
  printf(", \"shape\": ");
  cli_json_str(r->rows[0].shape);
  printf(", \"rows\": [");
  for (int i = 0; i < r->n; i++) {
    const clattn_bench_entry *e = &r->rows[i];
    printf("%s\n    {\"impl\": ", i ? "," : "");
    cli_json_str(e->impl);
    printf(", \"params\": ");
    cli_json_str(e->params);
    printf(", \"params_source\": ");
    cli_json_str(e->params_source);
    printf(", ");
    json_num("median_s", e->median_s, ", ");
    json_num("spread", e->spread, ", ");
    json_num("flops", e->flops, ", ");
    json_num("bytes", e->bytes, ", ");
    json_num("predicted_s", e->predicted_s, ", ");
    json_num("roof_s", e->roof_s, ", ");
    printf("\"bound\": ");
    cli_json_str(e->bound);
    printf(", ");
    json_num("max_err", e->max_err, "}");
  }
  printf("]}");
}

static void print_line(const bench_rows *r) {
  const clattn_bench_entry *c = &r->rows[0];
  const double t = c->median_s;
  printf("%-10s %-52s %9.4f ms %8.2f GFLOP/s %8.2f GB/s", c->family, c->shape,
         t * 1e3, c->flops / t * 1e-9, c->bytes / t * 1e-9);
  if (c->roof_s > 0)
    printf(" %4.0f%% roof", 100.0 * c->roof_s / t);
  else
    printf("    - roof");
  if (c->predicted_s > 0)
    printf("  model %+5.0f%%", 100.0 * (c->predicted_s / t - 1.0));
  else
    printf("  model     -");
  printf("  %-13s", c->params_source);
  for (int i = 1; i < r->n; i++)
    printf("  %s %.2fx", r->rows[i].impl, r->rows[i].median_s / t);
  printf("\n");
  fflush(stdout);
}

int cli_bench(int argc, char **argv) {
  bench_args ba;
  bench_cli b;
  memset(&ba, 0, sizeof ba);
  memset(&b, 0, sizeof b);
  ba.m.dtype = CLATTN_F32;
  enum { ALL = -1 };
  int which = ALL, i = 0;
  const char *word = "all";
  if (argc > 0 && argv[0][0] != '-') {
    word = argv[0];
    if (!strcmp(word, "help")) {
      fputs(bench_usage, stdout);
      return CLI_OK;
    }
    if (strcmp(word, "all") && (which = cli_family(word)) < 0)
      return cli_usage_error("bench",
                             "unknown '%.40s' (a kernel family: "
                             "clattn families, or all)",
                             word);
    i = 1;
  }
  cli_option table[CLI_MAX_OPTIONS];
  const int nt = bench_table(which, table);
  char name[64];
  snprintf(name, sizeof name, i ? "bench %s" : "bench", word);
  if (nt < 0)
    return cli_usage_error(name, "too many shape keys");
  const cli_command cmd = {name,
                           bench_usage,
                           table,
                           nt,
                           which == ALL ? T_ALL : T_FAM,
                           which == ALL ? 0 : 1,
                           NULL};
  cli_args a;
  int rc = cli_parse_cmd(&cmd, argc - i, argv + i, &ba, &a);
  if (rc)
    return rc < 0 ? CLI_OK : rc;
  model_opts m = ba.m;
  char shape[512] = "";
  if ((rc = cli_shape_arg(name, &m, which, &a, shape, sizeof shape)))
    return rc;
  const int custom = shape[0] != '\0';

  clattn_ctx *ctx = NULL;
  clattn_db *db = NULL;
  /* Ctrl-C (or a budget's SIGINT) stops after the shape being timed, whose
   * rows are stored whole, and the database is closed cleanly */
  struct sigaction old;
  cli_catch_sigint(&old);
  /* the database's tuning rows pick the parameters, as they would for an
   * application pointed at it */
  if ((rc = cli_ctx_create_db(m.device, m.db, &ctx))) {
    sigaction(SIGINT, &old, NULL);
    return cli_stop ? CLI_INTERRUPTED : rc;
  }
  if (clattn_db_open(m.db, &db) != CLATTN_OK) {
    cli_err("bench database: %s", clattn_db_errmsg(NULL));
    clattn_ctx_destroy(ctx);
    sigaction(SIGINT, &old, NULL);
    return CLI_FAIL;
  }
  b.tty = isatty(STDERR_FILENO) && !ba.quiet;
  b.json = ba.json;
  clattn_bench_opts bo = {sizeof(clattn_bench_opts), ba.repeats,
                          ba.no_baselines, ba.run, ba.no_store};
  char run[64] = "";
  clattn_profile rep = {.size = sizeof(clattn_profile)};
  if (clattn_profile_reported(ctx, &rep) != CLATTN_OK)
    snprintf(rep.name, sizeof rep.name, "the device");
  if (b.json)
    printf("{\"device\": ");
  else
    printf("bench on %s, database %s%s\n", rep.name, clattn_db_path(db),
           ba.no_store ? " (not stored)" : "");
  if (b.json) {
    cli_json_str(rep.name);
    printf(", \"results\": [");
  }
  /* the shapes: one, or every bench shape of the chosen families */
  int total = 0, failed = 0, usage = 0;
  for (int f = 0; f < clattn_family_count(); f++)
    for (int k = 0; (which == ALL || which == f) && !custom &&
                    clattn_family_bench_shape(f, k);
         k++)
      total++;
  if (custom)
    total = 1;
  int done = 0;
  for (int f = 0; f < clattn_family_count(); f++) {
    if (which != ALL && which != f)
      continue;
    for (int k = 0; !cli_stop; k++) {
      const char *s =
          custom ? (k == 0 ? shape : NULL) : clattn_family_bench_shape(f, k);
      if (s == NULL)
        break;
      bench_rows r;
      show_progress(&b, ++done, total, clattn_family_name(f), s);
      clattn_status st =
          clattn_bench_shape(ctx, db, clattn_family_name(f), s, &bo,
                             sizeof r.rows[0], r.rows, &r.n);
      clear_progress(&b);
      if (st != CLATTN_OK) {
        char what[600];
        snprintf(what, sizeof what, "bench %s %s", clattn_family_name(f), s);
        cli_lib_fail(ctx, what, st);
        failed++;
        usage |=
            custom && (st == CLATTN_ERR_SHAPE || st == CLATTN_ERR_INVALID_ARG);
        continue;
      }
      /* later shapes of this command share the first one's run */
      if (bo.run == NULL) {
        snprintf(run, sizeof run, "%s", r.rows[0].run);
        bo.run = run;
      }
      if (b.json)
        print_json(&b, &r);
      else
        print_line(&r);
    }
    if (custom || cli_stop)
      break;
  }
  sigaction(SIGINT, &old, NULL);
  if (b.json)
    printf("\n], \"run\": ");
  if (b.json) {
    cli_json_str(bo.run ? bo.run : "");
    printf(", \"failed\": %d}\n", failed);
  } else if (bo.run) {
    printf("run \"%s\"%s\n", bo.run,
           ba.no_store ? "" : ": rows stored (clattn report reads them)");
  }
  if (cli_stop && !b.json)
    printf("stopped by Ctrl-C after %d of %d shapes: their rows are stored\n",
           done, total);
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
  return cli_stop ? CLI_INTERRUPTED
         : usage   ? CLI_USAGE
         : failed  ? CLI_FAIL
                   : CLI_OK;
}
