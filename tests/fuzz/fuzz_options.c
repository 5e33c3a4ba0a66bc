/* fuzz_options.c - the clattn command's option parser (cli_parse,
 * host/cli/options.h) on arbitrary argument vectors: the input split at
 * NUL bytes is argv[1..], its first byte picks the subcommand's scope.  The
 * parser accepts the words or refuses them with a message; it never
 * crashes, never exits, and what it accepts is consistent. */
#include "fuzz_util.h"
#include "options.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct opts {
  const char *out;
  int seq, causal, verbose;
  double budget;
  char keys[CLI_KEYS_CAP];
} opts;

enum { SCOPE_A = 1, SCOPE_B = 2, MAX_ARGS = 64 };

/* Every kind of option, one of them outside scope A. */
static const cli_option table[] = {
    {"out", CLI_STR, offsetof(opts, out), 0, NULL, 0, "FILE", "output"},
    {"seq", CLI_INT, offsetof(opts, seq), 1, NULL, 0, "N", "positions"},
    {"causal", CLI_FLAG, offsetof(opts, causal), 0, NULL, SCOPE_A, NULL,
     "mask"},
    {"verbose", CLI_FLAG, offsetof(opts, verbose), 0, NULL, SCOPE_B, NULL,
     "more"},
    {"budget", CLI_FN, offsetof(opts, budget), 0, cli_parse_duration, 0, "T",
     "time"},
    {"heads-k", CLI_KEY, offsetof(opts, keys), 0, NULL, 0, "V", "a key"},
    {"new", CLI_KEY, offsetof(opts, keys), 0, NULL, 0, "V", "a key"},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const cli_command cmd = {"fuzz",
                           "usage: fuzz\n",
                           table,
                           (int)(sizeof table / sizeof table[0]),
                           (data[0] & 1) ? SCOPE_B : SCOPE_A,
                           data[0] >> 6};
  char *buf = malloc(size);
  if (buf == NULL)
    return 0;
  memcpy(buf, data + 1, size - 1);
  buf[size - 1] = '\0';
  char *argv[MAX_ARGS + 2];
  int argc = 0;
  argv[argc++] = "fuzz";
  for (char *p = buf; p < buf + size - 1 && argc <= MAX_ARGS;
       p += strlen(p) + 1)
    argv[argc++] = p;
  argv[argc] = NULL;
  opts o;
  memset(&o, 0, sizeof o);
  cli_args a;
  const int rc = cli_parse(&cmd, argc, argv, &o, &a);
  if (rc != 0 && !a.error[0])
    fuzz_fail("the option parser refused arguments without a message");
  if (rc == 0) {
    if (a.n_operands > cmd.max_operands)
      fuzz_fail("more operands accepted than the command takes");
    if (o.seq < 0 || (o.seq == 0 && a.given[1]))
      fuzz_fail("--seq accepted below its minimum");
    if (memchr(o.keys, '\0', sizeof o.keys) == NULL)
      fuzz_fail("the shape keys are not terminated");
    if (cmd.scope == SCOPE_A && o.verbose)
      fuzz_fail("an option outside the subcommand's scope was accepted");
  }
  free(buf);
  return 0;
}
