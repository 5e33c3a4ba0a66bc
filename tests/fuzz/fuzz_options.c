/* fuzz_options.c - the clattn command's option parser on arbitrary
 * argument vectors: the input split at NUL bytes is argv[1..]; the parser
 * accepts them or refuses them with a message, never crashes, never exits.
 *
 * PLACEHOLDER: the parser (host/cli/options.c/.h, one getopt_long-based
 * function that returns instead of exiting) is being written elsewhere;
 * OPTIONS_PARSE below is the one line to wire to it, and tests/fuzz/
 * meson.build builds this target only once CLATTN_FUZZ_OPTIONS_WIRED is
 * defined there. */
#include "fuzz_util.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#ifndef CLATTN_FUZZ_OPTIONS_WIRED
#error "fuzz_options: wire OPTIONS_PARSE to the CLI's option parser first"
#endif

/* ---- WIRE HERE: the pure parser, e.g.
 *   #include "options.h"
 *   #define OPTIONS_PARSE(argc, argv, err, cap) \
 *     clattn_cli_parse_options((argc), (argv), &opts, (err), (cap))
 * returning 0 or nonzero with a message in err. */

enum { MAX_ARGS = 64 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 1);
  if (buf == NULL)
    return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  char *argv[MAX_ARGS + 2];
  int argc = 0;
  argv[argc++] = "clattn";
  for (char *p = buf; p < buf + size && argc <= MAX_ARGS; p += strlen(p) + 1)
    argv[argc++] = p;
  argv[argc] = NULL;
  optind = 0; /* getopt_long keeps state between calls: start afresh */
  char err[512] = "";
  if (OPTIONS_PARSE(argc, argv, err, sizeof err) != 0 && !err[0])
    fuzz_fail("the option parser refused arguments without a message");
  free(buf);
  return 0;
}
