/* test_cli_options.c - the clattn command's option parser (cli_parse) and
 * its progress line fitting (cli_fit_line), as pure functions. */
#include "options.h"
#include "progress.h"

#include <criterion/criterion.h>
#include <stddef.h>
#include <string.h>

typedef struct opts {
  const char *out;
  int seq, causal, verbose;
  double budget;
  char keys[CLI_KEYS_CAP];
} opts;

enum { A = 1, B = 2 };
static const cli_option table[] = {
    {"out", CLI_STR, offsetof(opts, out), 0, NULL, 0, "FILE", "output"},
    {"seq", CLI_INT, offsetof(opts, seq), 1, NULL, 0, "N", "positions"},
    {"causal", CLI_FLAG, offsetof(opts, causal), 0, NULL, A, NULL, "mask"},
    {"verbose", CLI_FLAG, offsetof(opts, verbose), 0, NULL, 0, NULL, "more"},
    {"budget", CLI_FN, offsetof(opts, budget), 0, cli_parse_duration, 0, "T",
     "time"},
    {"heads-k", CLI_KEY, offsetof(opts, keys), 0, NULL, 0, "V", "a key"},
    {"new", CLI_KEY, offsetof(opts, keys), 0, NULL, 0, "V", "a key"},
};
static const cli_command cmd = {
    "test", "usage: test\n", table, sizeof table / sizeof table[0], A, 1, NULL};

/* Parse the words of a NULL-terminated list into *o. */
static int parse(opts *o, cli_args *a, const char *const *words) {
  static char copy[16][64];
  char *argv[16];
  int argc = 0;
  for (; words[argc]; argc++) {
    snprintf(copy[argc], sizeof copy[argc], "%s", words[argc]);
    argv[argc] = copy[argc];
  }
  memset(o, 0, sizeof *o);
  return cli_parse(&cmd, argc, argv, o, a);
}

#define PARSE(...) parse(&o, &a, (const char *const[]){__VA_ARGS__, NULL})

Test(cli_parse, both_value_forms) {
  opts o;
  cli_args a;
  cr_assert_eq(PARSE("--seq=8", "--out", "y.npy", "--budget=1s"), 0, "%s",
               a.error);
  cr_expect_eq(o.seq, 8);
  cr_expect_str_eq(o.out, "y.npy");
  cr_expect_float_eq(o.budget, 1.0, 1e-12);
  cr_assert_eq(PARSE("--seq", "9", "--out=z.npy", "--budget", "2m"), 0);
  cr_expect_eq(o.seq, 9);
  cr_expect_str_eq(o.out, "z.npy");
  cr_expect_float_eq(o.budget, 120.0, 1e-9);
  cr_expect(a.given[1] && a.given[0] && !a.given[2]);
}

Test(cli_parse, repeated_option_is_an_error) {
  opts o;
  cli_args a;
  cr_assert_eq(PARSE("--seq=8", "--seq", "8"), 2);
  cr_expect_str_eq(a.error, "--seq given twice");
  cr_assert_eq(PARSE("--causal", "--causal"), 2);
  cr_expect_str_eq(a.error, "--causal given twice");
}

Test(cli_parse, unknown_misspelt_and_out_of_scope) {
  opts o;
  cli_args a;
  cr_assert_eq(PARSE("--bogus", "1"), 2);
  cr_expect_str_eq(a.error, "unknown option '--bogus'");
  /* getopt_long would take the prefix for --seq */
  cr_assert_eq(PARSE("--se", "8"), 2);
  cr_expect(strstr(a.error, "unknown option '--se'") != NULL, "%s", a.error);
  cr_expect_eq(o.seq, 0);
  cli_command other = cmd;
  other.scope = B; /* --causal is A's alone */
  char w[] = "--causal";
  char *argv[] = {w};
  memset(&o, 0, sizeof o);
  cr_assert_eq(cli_parse(&other, 1, argv, &o, &a), 2);
  cr_expect_str_eq(a.error, "unknown option '--causal'");
  cr_assert_eq(PARSE("-x"), 2);
  cr_expect_str_eq(a.error, "unknown option '-x'");
}

Test(cli_parse, values) {
  opts o;
  cli_args a;
  cr_assert_eq(PARSE("--seq"), 2);
  cr_expect_str_eq(a.error, "--seq needs a value");
  cr_assert_eq(PARSE("--causal=1"), 2);
  cr_expect_str_eq(a.error, "--causal takes no value");
  cr_assert_eq(PARSE("--seq", "0"), 2);
  cr_expect(strstr(a.error, "--seq: expected an integer >= 1") != NULL);
  cr_assert_eq(PARSE("--seq=8x"), 2);
  cr_assert_eq(PARSE("--budget", "5x"), 2);
  cr_expect(strstr(a.error, "--budget: bad value '5x'") != NULL, "%s", a.error);
  cr_assert_eq(PARSE("--out="), 2);
  cr_assert_eq(PARSE("--heads-k", "8", "--new=2"), 0);
  cr_expect_str_eq(o.keys, "heads-k=8 new=2");
  cr_assert_eq(PARSE("--heads-k", "a=b"), 2);
}

Test(cli_parse, help_verbose_operands) {
  opts o;
  cli_args a;
  cr_assert_eq(PARSE("--seq=8", "--help", "--bogus"), 0);
  cr_expect(a.help);
  cr_assert_eq(PARSE("-h"), 0);
  cr_expect(a.help);
  cr_assert_eq(PARSE("--he"), 2);
  cr_assert_eq(PARSE("--help=1"), 2);
  cr_expect_str_eq(a.error, "--help takes no value");
  cr_assert_eq(PARSE("-v", "FILE"), 0);
  cr_expect(o.verbose);
  cr_expect_eq(a.n_operands, 1);
  cr_expect_str_eq(a.operand[0], "FILE");
  cr_assert_eq(PARSE("A", "B"), 2);
  cr_expect_str_eq(a.error, "unexpected argument 'B'");
  cr_assert_eq(PARSE("--", "--seq"), 0);
  cr_expect_str_eq(a.operand[0], "--seq");
  cr_expect_eq(o.seq, 0);
}

/* More operands than a command takes: the limit and what they are, where
 * the command names them (report: "at most 8 databases"). */
Test(cli_parse, too_many_operands_name_the_limit) {
  cli_command named = cmd;
  named.max_operands = 2;
  named.operands = "databases";
  char w[][8] = {"a.db", "b.db", "c.db"}, dd[] = "--";
  char *argv[] = {w[0], w[1], w[2]}, *after[] = {w[0], dd, w[1], w[2]};
  opts o;
  cli_args a;
  memset(&o, 0, sizeof o);
  cr_assert_eq(cli_parse(&named, 3, argv, &o, &a), 2);
  cr_expect_str_eq(a.error, "at most 2 databases ('c.db' is one more)");
  memset(&o, 0, sizeof o);
  cr_assert_eq(cli_parse(&named, 4, after, &o, &a), 2);
  cr_expect_str_eq(a.error, "at most 2 databases ('c.db' is one more)");
}

Test(cli_parse, argv_is_not_reordered) {
  char w0[] = "FILE", w1[] = "--seq", w2[] = "4";
  char *argv[] = {w0, w1, w2};
  opts o;
  cli_args a;
  memset(&o, 0, sizeof o);
  cr_assert_eq(cli_parse(&cmd, 3, argv, &o, &a), 0);
  cr_expect(argv[0] == w0 && argv[1] == w1 && argv[2] == w2);
  /* a second parse starts afresh (getopt's state is reset) */
  cr_assert_eq(cli_parse(&cmd, 3, argv, &o, &a), 0);
  cr_expect_eq(o.seq, 4);
}

/* Every word of got's params part is a whole word of params. */
static void expect_whole_words(const char *got, const char *params) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", got);
  for (char *w = strtok(buf, " ,"); w; w = strtok(NULL, " ,"))
    if (strchr(w, '=')) {
      char pad[64];
      snprintf(pad, sizeof pad, " %s ", w);
      char hay[512];
      snprintf(hay, sizeof hay, " %s ", params);
      cr_expect(strstr(hay, pad) != NULL, "'%s' cut in '%s'", w, got);
    }
}

static const char head[] = "prefill f32 k64 v64 g1 m512 causal: 3/40 "
                           "(space 120), best 0.123 ms";
static const char params[] = "variant=2 rows=16 keys=32 wg=128 splits=1 "
                             "prefetch=1 scheme=1";

Test(cli_fit_line, wide_terminal_shows_everything) {
  char out[512];
  cli_fit_line(out, sizeof out, 200, head, params, ", 12 s, 30 s left");
  cr_expect(strstr(out, params) != NULL, "%s", out);
  cr_expect(strstr(out, ", 12 s, 30 s left") != NULL);
}

Test(cli_fit_line, narrow_terminals_drop_whole_parameters) {
  char out[512];
  for (int width = 20; width <= 160; width++) {
    cli_fit_line(out, sizeof out, width, head, params, ", 12 s, 30 s left");
    size_t cols = 0; /* "…" is one column in three bytes */
    for (const char *p = out; *p; p++)
      cols += ((unsigned char)*p & 0xc0) != 0x80;
    cr_expect(cols <= (size_t)width - 1, "width %d: %zu columns: '%s'", width,
              cols, out);
    expect_whole_words(out, params);
    if (!strstr(out, "scheme=1"))
      cr_expect(strstr(out, " +") != NULL || strstr(out, "\xe2\x80\xa6"),
                "width %d: dropped words unmarked: '%s'", width, out);
  }
  cli_fit_line(out, sizeof out, 80, head, params, ", 12 s, 30 s left");
  cr_expect(strstr(out, "prefetch=,") == NULL);
  cr_expect(strstr(out, "3/40") != NULL, "%s", out);
}
