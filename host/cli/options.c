/* options.c - the one option parser of the clattn command (options.h):
 * getopt_long over a table per command, exact names, one line per error. */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_WORDS = 256, LONG_BASE = 256 };

static int fail(cli_args *out, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static int fail(cli_args *out, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out->error, sizeof out->error, fmt, ap);
  va_end(ap);
  return 2;
}

/* One operand more than cmd takes: the limit named where cmd names its
 * operands. */
static int too_many(const cli_command *cmd, cli_args *out, const char *word) {
  const int most = cmd->max_operands < CLI_MAX_OPERANDS ? cmd->max_operands
                                                        : CLI_MAX_OPERANDS;
  if (cmd->operands != NULL)
    return fail(out, "at most %d %s ('%.60s' is one more)", most, cmd->operands,
                word);
  return fail(out, "unexpected argument '%.60s'", word);
}

static int in_scope(const cli_command *cmd, const cli_option *o) {
  return o->scope == 0 || (o->scope & cmd->scope) != 0;
}

/* Store one option's value into its field; 0 or 2 (out->error set). */
static int apply(const cli_option *o, const char *v, void *dst, cli_args *out) {
  char *field = (char *)dst + o->offset;
  if (o->kind == CLI_FLAG) {
    *(int *)field = 1;
    return 0;
  }
  if (!*v)
    return fail(out, "--%s needs a value, got ''", o->name);
  switch (o->kind) {
  case CLI_STR:
    *(const char **)field = v;
    return 0;
  case CLI_INT: {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < o->min || x > INT_MAX)
      return fail(out, "--%s: expected an integer >= %d, got '%.40s'", o->name,
                  o->min, v);
    *(int *)field = (int)x;
    return 0;
  }
  case CLI_FN:
    if (!o->parse)
      return fail(out, "--%s: no parser in the table", o->name);
    if (o->parse(v, field) != 0) {
      if (o->arg && strchr(o->arg, '|'))
        return fail(out, "--%s: expected %s, got '%.40s'", o->name, o->arg, v);
      return fail(out, "--%s: bad value '%.40s'", o->name, v);
    }
    return 0;
  case CLI_KEY: {
    size_t used = strlen(field);
    if (strpbrk(v, "= \t\n"))
      return fail(out, "--%s: bad value '%.40s'", o->name, v);
    int w = snprintf(field + used, CLI_KEYS_CAP - used, "%s%s=%s",
                     used ? " " : "", o->name, v);
    if (w < 0 || (size_t)w >= CLI_KEYS_CAP - used) {
      field[used] = '\0';
      return fail(out, "--%s: the shape is too long", o->name);
    }
    return 0;
  }
  default:
    return fail(out, "--%s: option of an unknown kind", o->name);
  }
}

/* The option name a long-option word spells ("--seq=8": "seq"). */
static int word_name(const char *word, const char **name) {
  *name = strncmp(word, "--", 2) ? word : word + 2;
  return (int)strcspn(*name, "=");
}

int cli_parse(const cli_command *cmd, int argc, char **argv, void *dst,
              cli_args *out) {
  struct option lo[CLI_MAX_OPTIONS + 2];
  char *av[MAX_WORDS + 2];
  char optstring[8] = "-:h";
  int n = 0, verbose = -1;

  memset(out, 0, sizeof *out);
  if (cmd->n_opts > CLI_MAX_OPTIONS)
    return fail(out, "too many options in the table");
  if (argc < 0 || argc > MAX_WORDS)
    return fail(out, "more than %d arguments", MAX_WORDS);
  for (int i = 0; i < cmd->n_opts; i++) {
    const cli_option *o = &cmd->opts[i];
    if (!in_scope(cmd, o))
      continue;
    lo[n].name = o->name;
    lo[n].has_arg = o->kind == CLI_FLAG ? no_argument : required_argument;
    lo[n].flag = NULL;
    lo[n].val = LONG_BASE + i;
    n++;
    if (!strcmp(o->name, "verbose") && o->kind == CLI_FLAG)
      verbose = i;
  }
  lo[n] = (struct option){"help", no_argument, NULL, 'h'};
  lo[n + 1] = (struct option){NULL, 0, NULL, 0};
  if (verbose >= 0)
    strcat(optstring, "v");
  av[0] = (char *)"clattn";
  for (int i = 0; i < argc; i++)
    av[i + 1] = argv[i];
  av[argc + 1] = NULL;

  /* '-': operands come back in order (argv is never permuted); ':': a
   * missing value is told apart from an unknown option */
  optind = 0;
  opterr = 0;
  for (;;) {
    const int before = optind > 0 ? optind : 1;
    int li = -1;
    const int c = getopt_long(argc + 1, av, optstring, lo, &li);
    if (c == -1)
      break;
    const char *word = before <= argc ? av[before] : "";
    const char *name;
    int len;
    if (c == 1) {
      if (out->n_operands >= cmd->max_operands ||
          out->n_operands >= CLI_MAX_OPERANDS)
        return too_many(cmd, out, optarg);
      out->operand[out->n_operands++] = optarg;
      continue;
    }
    if (c == 'h') {
      if (!strncmp(word, "--", 2) && strcmp(word, "--help") != 0) {
        len = word_name(word, &name);
        return fail(out, "unknown option '--%.*s'", len > 60 ? 60 : len, name);
      }
      out->help = 1;
      return 0;
    }
    if (c == ':') {
      if (optopt >= LONG_BASE)
        return fail(out, "--%s needs a value",
                    cmd->opts[optopt - LONG_BASE].name);
      return fail(out, "-%c needs a value", optopt);
    }
    if (c == '?') {
      if (optopt >= LONG_BASE)
        return fail(out, "--%s takes no value",
                    cmd->opts[optopt - LONG_BASE].name);
      if (optopt == 'h' && !strncmp(word, "--", 2))
        return fail(out, "--help takes no value");
      if (optopt > 0)
        return fail(out, "unknown option '-%c'", optopt);
      len = word_name(word, &name);
      return fail(out, "unknown option '--%.*s'", len > 60 ? 60 : len, name);
    }
    const int i = c == 'v' ? verbose : c - LONG_BASE;
    if (i < 0 || i >= cmd->n_opts)
      return fail(out, "unexpected parser state");
    const cli_option *o = &cmd->opts[i];
    if (c != 'v') {
      /* getopt_long takes unambiguous prefixes: a misspelt name must not
       * silently become another option */
      len = word_name(word, &name);
      if ((size_t)len != strlen(o->name) || strncmp(name, o->name, len))
        return fail(out, "unknown option '--%.*s' (did you mean '--%s'?)",
                    len > 60 ? 60 : len, name, o->name);
    }
    if (out->given[i])
      return fail(out, "--%s given twice", o->name);
    out->given[i] = 1;
    int rc = apply(o, o->kind == CLI_FLAG ? NULL : optarg, dst, out);
    if (rc)
      return rc;
  }
  /* the words after "--" */
  for (int k = optind; k <= argc; k++) {
    if (out->n_operands >= cmd->max_operands ||
        out->n_operands >= CLI_MAX_OPERANDS)
      return too_many(cmd, out, av[k]);
    out->operand[out->n_operands++] = av[k];
  }
  return 0;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  char what[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (cmd && *cmd)
    fprintf(stderr, "clattn %s: %s; see 'clattn %s --help'\n", cmd, what, cmd);
  else
    fprintf(stderr, "clattn: %s; see 'clattn --help'\n", what);
  return 2;
}

void cli_print_help(const cli_command *cmd, FILE *f) {
  if (cmd->usage)
    fputs(cmd->usage, f);
  fprintf(f,
          "options of 'clattn %s' (--NAME VALUE or --NAME=VALUE, each "
          "once):\n",
          cmd->name);
  for (int i = 0; i < cmd->n_opts; i++) {
    const cli_option *o = &cmd->opts[i];
    if (!in_scope(cmd, o))
      continue;
    char left[48];
    snprintf(left, sizeof left, "--%s%s%s", o->name, o->arg ? " " : "",
             o->arg ? o->arg : "");
    fprintf(f, "  %-24s %s\n", left, o->help ? o->help : "");
  }
  fprintf(f, "  %-24s %s\n", "-h, --help", "this help");
}

int cli_parse_cmd(const cli_command *cmd, int argc, char **argv, void *dst,
                  cli_args *out) {
  int rc = cli_parse(cmd, argc, argv, dst, out);
  if (rc)
    return cli_usage_error(cmd->name, "%s", out->error);
  if (out->help) {
    cli_print_help(cmd, stdout);
    return CLI_HELP_SHOWN;
  }
  return 0;
}

int cli_parse_duration(const char *s, void *seconds) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || !(v > 0) || isinf(v))
    return -1;
  if (!strcmp(end, "m"))
    v *= 60;
  else if (!strcmp(end, "h"))
    v *= 3600;
  else if (!strcmp(end, "ms"))
    v /= 1000;
  else if (*end != '\0' && strcmp(end, "s") != 0)
    return -1;
  *(double *)seconds = v;
  return 0;
}
