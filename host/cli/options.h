/* options.h - the one command-line option parser of the clattn command:
 * every command and subcommand declares its options in a table and parses
 * them with cli_parse (getopt_long underneath). */
#ifndef CLATTN_CLI_OPTIONS_H
#define CLATTN_CLI_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

/* What an option sets in the caller's struct (at `offset`); the kind also
 * decides whether it takes a value: CLI_FLAG none, every other kind one,
 * given as `--name VALUE` or `--name=VALUE`. */
typedef enum cli_kind {
  CLI_FLAG, /* int, set to 1 */
  CLI_STR,  /* const char *, the argument itself (not copied) */
  CLI_INT,  /* int in [min, INT_MAX], decimal */
  CLI_FN,   /* parse(value, field): 0, or -1 for a bad value */
  CLI_KEY   /* char[CLI_KEYS_CAP], a string (empty at first):
               "name=value" appended, blank-separated (a kernel family's
               own shape keys) */
} cli_kind;

enum { CLI_KEYS_CAP = 256, CLI_MAX_OPTIONS = 96, CLI_MAX_OPERANDS = 8 };

typedef struct cli_option {
  const char *name; /* the long name, without "--" */
  cli_kind kind;
  size_t offset; /* the field it sets, offsetof(caller's struct, x) */
  int min;       /* CLI_INT: the smallest value accepted */
  int (*parse)(const char *value, void *field); /* CLI_FN */
  unsigned scope;   /* the subcommands that take it (0: all of them) */
  const char *arg;  /* the value's name in the help ("N"), NULL: flag */
  const char *help; /* one line of help */
} cli_option;

typedef struct cli_command {
  const char *name;  /* "run attention": heads every message */
  const char *usage; /* printed by --help before the option list */
  const cli_option *opts;
  int n_opts;
  unsigned scope;       /* this subcommand's bit: options outside it are
                           refused as unknown */
  int max_operands;     /* words that are no option (db export FILE) */
  const char *operands; /* what they are, for "at most N databases" when
                           more are given (NULL: "unexpected argument") */
} cli_command;

typedef struct cli_args {
  unsigned char given[CLI_MAX_OPTIONS]; /* given[i]: opts[i] was given */
  int help;                             /* --help or -h was given */
  int n_operands;
  char *operand[CLI_MAX_OPERANDS];
  char error[256]; /* the problem, when CLI_USAGE */
} cli_args;

/* Parse argv[0 .. argc-1] (the words after the command's name) against
 * cmd->opts into the struct at dst, and fill *out.  A pure function: it
 * prints nothing, never exits, allocates nothing, writes only *dst (the
 * fields the options name) and *out, and does not reorder argv; it uses
 * and resets getopt_long's globals, so it is not thread-safe.  Returns 0
 * or 2 (CLI_USAGE) with out->error naming the problem: an option that is
 * unknown or outside cmd->scope, abbreviated, without its value, with a
 * value it does not take, given twice (every option, flags included: a
 * repeated option is an error, never last-wins), a bad value, or too many
 * operands.  `--help` or `-h` anywhere before an error sets out->help and
 * stops there with 0; `-v` is `--verbose` where the table has it; `--`
 * ends the options. */
int cli_parse(const cli_command *cmd, int argc, char **argv, void *dst,
              cli_args *out);

/* cli_parse, then: on a usage error prints the one line
 * "clattn CMD: PROBLEM; see 'clattn CMD --help'" on stderr and returns 2;
 * on --help prints cli_print_help to stdout and returns CLI_HELP_SHOWN;
 * else 0. */
enum { CLI_HELP_SHOWN = -1 };
int cli_parse_cmd(const cli_command *cmd, int argc, char **argv, void *dst,
                  cli_args *out);

/* cmd->usage, then a line per option of cmd's scope with its help. */
void cli_print_help(const cli_command *cmd, FILE *f);

/* The one line of a usage error (see cli_parse_cmd); returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A duration "90", "90s", "5m", "1h", "250ms" in seconds into a double;
 * a CLI_FN parser (0 or -1; must be > 0). */
int cli_parse_duration(const char *value, void *seconds);

#endif
