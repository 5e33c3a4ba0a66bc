/* report.c - `clattn report DB [DB ...]`: the devices of one or more
 * databases side by side, as a self-contained HTML page, Markdown, CSV or
 * JSON (docs/REPORT.md). */
#include "cli.h"
#include "options.h"
#include "report.h"

#include "base/out_file.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char report_usage[] =
    "usage: clattn report DB [DB ...] [-o FILE] [--html | --markdown | --csv\n"
    "                     | --json] [--datasheets all|none|NAME,...]\n"
    "  the databases' devices side by side (one database per machine, at\n"
    "  most 8): per device its profile beside its datasheet, a roofline\n"
    "  chart of the bench rows, a table per kernel family; across devices\n"
    "  time ratios and the speed-ups of fewer key/value heads; datasheet\n"
    "  GPUs as predicted-only devices (--datasheets, default all).\n"
    "  -o FILE (--out): write FILE and print its path; the format follows\n"
    "  its extension (.html .md .csv .json) unless a flag names one.  A\n"
    "  regular FILE is replaced only by a whole report; a device or FIFO\n"
    "  (-o /dev/stdout) is written through; a link's target is written;\n"
    "  FILE may not be one of the databases.  Without -o the report goes\n"
    "  to stdout (HTML unless a flag names another format).\n"
    "  docs/REPORT.md: what each figure is.\n";

typedef struct report_opts {
  const char *out, *datasheets;
  int html, markdown, csv, json;
} report_opts;

#define ROFF(f) offsetof(report_opts, f)
static const cli_option report_options[] = {
    {"out", CLI_STR, ROFF(out), 0, NULL, 0, "FILE",
     "write FILE (-o), print its path"},
    {"html", CLI_FLAG, ROFF(html), 0, NULL, 0, NULL, "an HTML page"},
    {"markdown", CLI_FLAG, ROFF(markdown), 0, NULL, 0, NULL,
     "the tables in Markdown"},
    {"csv", CLI_FLAG, ROFF(csv), 0, NULL, 0, NULL,
     "every bench row, a line each"},
    {"json", CLI_FLAG, ROFF(json), 0, NULL, 0, NULL,
     "devices, profiles and rows with their figures"},
    {"datasheets", CLI_STR, ROFF(datasheets), 0, NULL, 0, "all|none|NAME,...",
     "datasheet GPUs drawn predicted-only (default all)"},
};

enum fmt { F_HTML, F_MD, F_CSV, F_JSON, F_NONE };

static enum fmt fmt_of_path(const char *path) {
  static const struct {
    const char *ext;
    enum fmt f;
  } exts[] = {{".html", F_HTML},   {".htm", F_HTML}, {".md", F_MD},
              {".markdown", F_MD}, {".csv", F_CSV},  {".json", F_JSON}};
  const char *dot = path ? strrchr(path, '.') : NULL;
  for (size_t k = 0; dot && k < sizeof exts / sizeof exts[0]; k++)
    if (!strcmp(dot, exts[k].ext))
      return exts[k].f;
  return F_NONE;
}

static int write_fmt(FILE *f, enum fmt fmt, const rep_data *d) {
  switch (fmt) {
  case F_MD:
    return rep_write_markdown(f, d);
  case F_CSV:
    return rep_write_csv(f, d);
  case F_JSON:
    return rep_write_json(f, d);
  default:
    return rep_write_html(f, d);
  }
}

/* Write the report into out and finish the file (base/out_file.h): the
 * target replaced only by a whole report; after a failure it is left as
 * it was. */
static int finish_file(clattn__out_file *out, enum fmt fmt, const rep_data *d) {
  char err[1024];
  const int bad = d ? write_fmt(out->f, fmt, d) : -1;
  if (bad) {
    if (d)
      cli_err("report: writing %s: %s", out->path, strerror(errno));
    clattn__out_close(out, 0, NULL, 0);
    return CLI_FAIL;
  }
  if (clattn__out_close(out, 1, err, sizeof err) != 0) {
    cli_err("report: %s", err);
    return CLI_FAIL;
  }
  printf("%s\n", out->path);
  return CLI_OK;
}

int cli_report(int argc, char **argv) {
  /* -o is --out: the one short option of this command */
  char *args[256];
  if (argc > 255)
    return cli_usage_error("report", "too many arguments");
  for (int k = 0; k < argc; k++)
    args[k] = !strcmp(argv[k], "-o") ? (char *)"--out" : argv[k];
  args[argc] = NULL;
  report_opts o = {0};
  const cli_command cmd = {
      "report",
      report_usage,
      report_options,
      (int)(sizeof report_options / sizeof report_options[0]),
      0,
      CLI_MAX_OPERANDS,
      "databases"};
  cli_args a;
  int rc = cli_parse_cmd(&cmd, argc, args, &o, &a);
  if (rc)
    return rc < 0 ? CLI_OK : rc;
  if (a.n_operands < 1)
    return cli_usage_error("report", "missing DB (a tuning database file)");
  if (o.html + o.markdown + o.csv + o.json > 1)
    return cli_usage_error("report", "--html, --markdown, --csv and --json "
                                     "are exclusive");
  enum fmt fmt = o.markdown ? F_MD
                 : o.csv    ? F_CSV
                 : o.json   ? F_JSON
                 : o.html   ? F_HTML
                            : fmt_of_path(o.out);
  if (fmt == F_NONE)
    fmt = F_HTML;
  if (o.out && !*o.out)
    return cli_usage_error("report", "--out needs a file name");
  rep_sheet_sel sel = {1, NULL};
  if (o.datasheets) {
    if (!strcmp(o.datasheets, "none"))
      sel.all = 0;
    else if (strcmp(o.datasheets, "all")) {
      if (!*o.datasheets || strspn(o.datasheets, ",") == strlen(o.datasheets))
        return cli_usage_error("report", "--datasheets: all, none or "
                                         "names separated by commas");
      sel.all = 0;
      sel.names = o.datasheets;
    }
  }
  /* opened before anything is read, so that an unwritable path (or one
   * of the databases read) fails at once */
  clattn__out_file out;
  if (o.out) {
    char err[1024];
    if (clattn__out_open(&out, o.out, (const char *const *)a.operand,
                         a.n_operands, err, sizeof err) != 0) {
      cli_err("report: %s", err);
      return CLI_FAIL;
    }
  }
  rep_data d;
  rc = rep_load((const char *const *)a.operand, a.n_operands, &sel, &d);
  if (o.out) {
    const int wrc = finish_file(&out, fmt, rc ? NULL : &d);
    rc = rc ? rc : wrc;
  } else if (rc == CLI_OK && (write_fmt(stdout, fmt, &d) || fflush(stdout))) {
    cli_err("report: writing stdout: %s", strerror(errno));
    rc = CLI_FAIL;
  }
  rep_free(&d);
  return rc;
}
