/* db.c - `clattn db`: look at and share the tuning database.
 *
 *   clattn db path   [--db PATH]
 *   clattn db list   [--kernel K] [--class C] [--all-devices | --device D]
 *                    [--json] [--db PATH]
 *   clattn db export FILE [--format json|shipped|t4]
 *                    [--device D | --all-devices] [--kernel K] [--db PATH]
 *                                         (FILE "-": stdout)
 *   clattn db import FILE [--db PATH]     (FILE "-": stdin) */
#include "cli.h"
#include "options.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char db_usage[] =
    "usage: clattn db path [--db PATH]\n"
    "       clattn db list [--kernel K] [--class C] [--all-devices |\n"
    "                      --device SEL] [--json] [--db PATH]\n"
    "       clattn db export FILE [--format json|shipped|t4]\n"
    "                 [--device SEL | --all-devices] [--kernel K]\n"
    "                 [--db PATH]\n"
    "       clattn db import FILE [--db PATH]\n"
    "path: print the database's path (default $CLATTN_DB, else\n"
    "  $XDG_DATA_HOME/clattn/tuning.db or ~/.local/share/clattn/tuning.db;\n"
    "  the file is created if missing).\n"
    "list: the tuning entries per kernel and shape class: the best 'ok'\n"
    "  candidate of the kernel's current tuning method, the one the library\n"
    "  uses (params, median time, spread), candidates evaluated, rejected\n"
    "  (wrong, failed or timed out) and of an older method (OLD: not used;\n"
    "  clattn tune measures them again).  Only the present device's\n"
    "  (--device SEL, default $CLATTN_DEVICE) unless --all-devices;\n"
    "  --kernel / --class filter; --json prints the rows themselves.\n"
    "export: write the tuning rows to FILE ('-': stdout): every row as\n"
    "  JSON (--format json, the default), only the best 'ok' row of the\n"
    "  current tuning method per device, kernel and shape class (shipped:\n"
    "  a file for $CLATTN_SHIPPED), or Kernel Tuner's T4 results (t4);\n"
    "  every device's rows unless --device, every kernel's unless\n"
    "  --kernel.\n"
    "import: merge a JSON file from export ('-': stdin): new rows are\n"
    "  added, a stored row is replaced only by a newer one; all or nothing.\n";

typedef struct db_opts {
  const char *db, *kernel, *shape_class, *device, *file;
  int all_devices, json;
  int format; /* clattn_export_format */
} db_opts;

static int parse_format(const char *v, void *field) {
  int *f = field;
  *f = !strcmp(v, "json")      ? CLATTN_EXPORT_JSON
       : !strcmp(v, "shipped") ? CLATTN_EXPORT_SHIPPED
       : !strcmp(v, "t4")      ? CLATTN_EXPORT_T4
                               : -1;
  return *f < 0 ? -1 : 0;
}

/* The actions' bits in cli_option.scope. */
enum { D_PATH = 1, D_LIST = 2, D_EXPORT = 4, D_IMPORT = 8 };

#define DOFF(f) offsetof(db_opts, f)
static const cli_option db_options[] = {
    {"db", CLI_STR, DOFF(db), 0, NULL, 0, "PATH",
     "the tuning database (default $CLATTN_DB)"},
    {"kernel", CLI_STR, DOFF(kernel), 0, NULL, D_LIST | D_EXPORT, "K",
     "only this kernel's entries"},
    {"class", CLI_STR, DOFF(shape_class), 0, NULL, D_LIST, "C",
     "only this shape class's entries"},
    {"device", CLI_STR, DOFF(device), 0, NULL, D_LIST | D_EXPORT, "SEL",
     "this device's entries (list: default $CLATTN_DEVICE)"},
    {"json", CLI_FLAG, DOFF(json), 0, NULL, D_LIST, NULL,
     "print the rows as JSON"},
    {"all-devices", CLI_FLAG, DOFF(all_devices), 0, NULL, D_LIST | D_EXPORT,
     NULL, "every device's entries (export: the default)"},
    {"format", CLI_FN, DOFF(format), 0, parse_format, D_EXPORT,
     "json|shipped|t4", "what export writes (default json)"},
};

/* Options and FILE after the action (scope: its bit); 0, CLI_USAGE or
 * CLI_HELP_SHOWN. */
static int parse_db(int argc, char **argv, unsigned scope, const char *name,
                    db_opts *o) {
  const int file = scope == D_EXPORT || scope == D_IMPORT;
  const cli_command cmd = {
      name,       db_usage,
      db_options, (int)(sizeof db_options / sizeof db_options[0]),
      scope,      file,
      NULL};
  cli_args a;
  int rc = cli_parse_cmd(&cmd, argc, argv, o, &a);
  if (rc)
    return rc;
  if (file && a.n_operands < 1)
    return cli_usage_error(name, "missing FILE");
  o->file = file ? a.operand[0] : NULL;
  if (o->all_devices && o->device)
    return cli_usage_error(name, "--all-devices and --device are "
                                 "exclusive");
  return CLI_OK;
}

static int db_fail(clattn_db *db, const char *what, clattn_status st) {
  cli_err("%s: %s: %s", what, clattn_status_str(st), clattn_db_errmsg(db));
  return CLI_FAIL;
}

static int db_print_path(const char *path) {
  char buf[4096];
  if (path == NULL) {
    clattn_status st = clattn_db_default_path(buf, sizeof buf);
    if (st == CLATTN_ERR_DB) { /* what clattn_db_default_path says */
      cli_err("db path: no default database: $CLATTN_DB, $XDG_DATA_HOME and "
              "$HOME are all unset or empty (give --db PATH)");
      return CLI_FAIL;
    }
    if (st != CLATTN_OK) {
      cli_err("db path: %s", clattn_status_str(st));
      return CLI_FAIL;
    }
    path = buf;
  }
  printf("%s\n", path);
  return CLI_OK;
}

/* ----------------------------------------------------------------- list */

static int is_rejected(const clattn_tune_entry *e) {
  return !strcmp(e->status, "wrong") || !strcmp(e->status, "failed") ||
         !strcmp(e->status, "timeout");
}

static int same_group(const clattn_tune_entry *a, const clattn_tune_entry *b) {
  return !strcmp(a->kernel, b->kernel) &&
         !strcmp(a->shape_class, b->shape_class) &&
         !strcmp(a->fingerprint, b->fingerprint);
}

static void fmt_time(char *buf, size_t cap, double s) {
  if (s < 1e-3)
    snprintf(buf, cap, "%.1f us", s * 1e6);
  else if (s < 1)
    snprintf(buf, cap, "%.3f ms", s * 1e3);
  else
    snprintf(buf, cap, "%.3f s", s);
}

enum {
  COL_KERNEL,
  COL_CLASS,
  COL_DEVICE,
  COL_PARAMS,
  COL_MEDIAN,
  COL_SPREAD,
  COL_EVAL,
  COL_REJ,
  COL_OLD,
  N_COLS
};

typedef struct group_row {
  char cell[N_COLS][256];
  size_t width[N_COLS]; /* terminal columns */
} group_row;

/* The terminal columns of clean UTF-8 text: one a character. */
static size_t columns(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    n += ((unsigned char)*s & 0xc0) != 0x80;
  return n;
}

/* One table row per (device, kernel, shape class); rows are sorted by
 * list_tune so that each group is contiguous, ok rows first by time.  The
 * best is the fastest ok row of the kernel's current tuning method (the
 * one the library would use); OLD counts the rows of another method. */
static int print_table(const clattn_tune_entry *rows, int n, int devices) {
  static const char *const head[N_COLS] = {
      "KERNEL", "SHAPE CLASS", "DEVICE", "BEST PARAMS", "MEDIAN",
      "SPREAD", "EVAL",        "REJ",    "OLD"};
  group_row *g = calloc((size_t)n, sizeof *g);
  int ng = 0;
  size_t width[N_COLS];
  if (g == NULL) {
    cli_err("out of memory");
    return CLI_FAIL;
  }
  for (int i = 0; i < n;) {
    int j = i, rejected = 0, old = 0;
    const clattn_tune_entry *best = NULL;
    for (; j < n && same_group(&rows[i], &rows[j]); j++) {
      rejected += is_rejected(&rows[j]);
      if (rows[j].tune_method != clattn_tune_method(rows[j].kernel))
        old++;
      else if (best == NULL && !strcmp(rows[j].status, "ok"))
        best = &rows[j];
    }
    char(*c)[256] = g[ng].cell;
    /* a database's text, which may come from another machine, cleaned of
     * control characters (cli_clean_text) */
    cli_clean_text(c[COL_KERNEL], 256, rows[i].kernel);
    cli_clean_text(c[COL_CLASS], 256, rows[i].shape_class);
    cli_clean_text(c[COL_DEVICE], 256, rows[i].device);
    cli_clean_text(c[COL_PARAMS], 256, best ? best->params : "-");
    if (best) {
      fmt_time(c[COL_MEDIAN], 256, best->median_s);
      snprintf(c[COL_SPREAD], 256, "%.1f%%", 100 * best->spread);
    } else {
      snprintf(c[COL_MEDIAN], 256, "-");
      snprintf(c[COL_SPREAD], 256, "-");
    }
    snprintf(c[COL_EVAL], 256, "%d", j - i);
    snprintf(c[COL_REJ], 256, "%d", rejected);
    snprintf(c[COL_OLD], 256, "%d", old);
    for (int k = 0; k < N_COLS; k++)
      g[ng].width[k] = columns(c[k]);
    ng++;
    i = j;
  }
  for (int k = 0; k < N_COLS; k++) {
    width[k] = strlen(head[k]);
    for (int i = 0; i < ng; i++)
      if (g[i].width[k] > width[k])
        width[k] = g[i].width[k];
  }
  for (int i = -1; i < ng; i++) {
    for (int k = 0; k < N_COLS; k++) {
      if (k == COL_DEVICE && !devices)
        continue;
      const char *s = i < 0 ? head[k] : g[i].cell[k];
      /* padded by characters, not bytes */
      const int pad = (int)(width[k] - (i < 0 ? strlen(s) : g[i].width[k]));
      if (k >= COL_MEDIAN) /* numbers right-aligned */
        printf("  %*s%s", pad, "", s);
      else
        printf("%s%s%*s", k ? "  " : "", s, pad, "");
    }
    printf("\n");
  }
  printf("%d shape class%s, %d candidate%s\n", ng, ng == 1 ? "" : "es", n,
         n == 1 ? "" : "s");
  free(g);
  return CLI_OK;
}

static int print_rows_json(const clattn_tune_entry *rows, int n) {
  char *buf = malloc(16384);
  if (buf == NULL) {
    cli_err("out of memory");
    return CLI_FAIL;
  }
  printf("[");
  for (int i = 0; i < n; i++) {
    clattn_tune_entry_json(&rows[i], buf, 16384);
    printf("%s\n  %s", i ? "," : "", buf);
  }
  printf(n ? "\n]\n" : "]\n");
  free(buf);
  return CLI_OK;
}

/* The reported profile of device SEL (NULL: $CLATTN_DEVICE); 0 or the
 * exit status, the problem printed. */
static int device_profile(const char *what, const char *sel,
                          clattn_profile *p) {
  clattn_ctx *ctx = NULL;
  int rc = cli_ctx_create(sel, &ctx);
  if (rc) {
    cli_err("%s: the present device's entries need a device; "
            "--all-devices takes every device's",
            what);
    return rc;
  }
  clattn_status st = clattn_profile_reported(ctx, p);
  if (st != CLATTN_OK)
    rc = cli_lib_fail(ctx, "clattn_profile_reported", st);
  clattn_ctx_destroy(ctx);
  return rc;
}

static int db_list(clattn_db *db, const db_opts *o) {
  clattn_profile p = {.size = sizeof(clattn_profile)};
  clattn_tune_entry *rows = NULL;
  const char *fp = NULL;
  int n = 0, rc;
  if (!o->all_devices) {
    rc = device_profile("db list", o->device, &p);
    if (rc)
      return rc;
    fp = p.fingerprint;
  }
  clattn_status st = clattn_db_list_tune(db, fp, o->kernel, o->shape_class,
                                         sizeof *rows, &rows, &n);
  if (st != CLATTN_OK)
    return db_fail(db, "clattn_db_list_tune", st);
  if (o->json) {
    rc = print_rows_json(rows, n);
  } else if (n == 0) {
    printf("no tuning entries%s", fp ? " for " : "");
    cli_put_text(stdout, fp ? p.name : "", NULL, 0);
    printf("%s%s in ", o->kernel || o->shape_class ? " matching" : "",
           o->kernel || o->shape_class ? " the filters" : "");
    cli_put_text(stdout, clattn_db_path(db), NULL, 0);
    printf("\n");
    rc = CLI_OK;
  } else {
    if (fp) {
      printf("device: ");
      cli_put_text(stdout, p.name, NULL, 0);
      printf(" (fingerprint %s)\n", fp);
    }
    printf("database: ");
    cli_put_text(stdout, clattn_db_path(db), NULL, 0);
    printf("\n\n");
    rc = print_table(rows, n, !fp);
  }
  clattn_free(rows);
  return rc;
}

/* ------------------------------------------------------------- command */

int cli_db(int argc, char **argv) {
  db_opts o;
  clattn_db *db = NULL;
  int action, rc;
  memset(&o, 0, sizeof o);
  if (argc < 1)
    return cli_usage_error("db", "missing action (path, list, export, "
                                 "import)");
  const char *a = argv[0];
  if (!strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "help")) {
    fputs(db_usage, stdout);
    return CLI_OK;
  }
  action = !strcmp(a, "path")     ? 'p'
           : !strcmp(a, "list")   ? 'l'
           : !strcmp(a, "export") ? 'e'
           : !strcmp(a, "import") ? 'i'
                                  : 0;
  if (!action)
    return cli_usage_error("db",
                           "unknown action '%.40s' (expected path, "
                           "list, export or import)",
                           a);
  char name[16];
  snprintf(name, sizeof name, "db %s", a);
  rc = parse_db(argc - 1, argv + 1,
                action == 'p'   ? D_PATH
                : action == 'l' ? D_LIST
                : action == 'e' ? D_EXPORT
                                : D_IMPORT,
                name, &o);
  if (rc)
    return rc < 0 ? CLI_OK : rc;
  if (action == 'p') /* the path alone: nothing is opened or created */
    return db_print_path(o.db);
  /* Only import writes: the others read without creating, migrating or
   * waiting for another process's lock. */
  clattn_status st = action == 'i' ? clattn_db_open(o.db, &db)
                                   : clattn_db_open_readonly(o.db, &db);
  if (st == CLATTN_ERR_NOT_FOUND) {
    cli_err("db %s: %s", a, clattn_db_errmsg(NULL));
    return CLI_FAIL;
  }
  if (st != CLATTN_OK)
    return db_fail(
        NULL, action == 'i' ? "clattn_db_open" : "clattn_db_open_readonly", st);
  switch (action) {
  case 'l':
    rc = db_list(db, &o);
    break;
  case 'e': {
    clattn_profile p = {.size = sizeof(clattn_profile)};
    const char *fp = NULL;
    if (o.device) {
      rc = device_profile("db export", o.device, &p);
      if (rc)
        break;
      fp = p.fingerprint;
    }
    st = clattn_db_export_as(db, o.file, (clattn_export_format)o.format, fp,
                             o.kernel);
    if (st != CLATTN_OK) {
      cli_err("db export: %s", clattn_db_errmsg(db)); /* names the file */
      rc = CLI_FAIL;
    } else if (strcmp(o.file, "-") != 0) {
      static const char *const names[] = {"json", "shipped", "t4"};
      printf("exported the tuning rows of %s%s%s to %s (%s)\n",
             clattn_db_path(db), fp ? " for " : "", fp ? p.name : "", o.file,
             names[o.format]);
    }
    break;
  }
  default: {
    int added = 0, updated = 0, unchanged = 0;
    st = clattn_db_import(db, o.file, &added, &updated, &unchanged);
    if (st != CLATTN_OK) {
      /* A malformed file is bad input (2); I/O and database errors, 1. */
      cli_err("db import: %s", clattn_db_errmsg(db)); /* names the file */
      rc = st == CLATTN_ERR_INVALID_ARG ? CLI_USAGE : CLI_FAIL;
    } else {
      printf("imported %s into %s: %d added, %d updated, %d unchanged\n",
             strcmp(o.file, "-") ? o.file : "stdin", clattn_db_path(db), added,
             updated, unchanged);
    }
    break;
  }
  }
  clattn_db_close(db);
  return rc;
}
