/* progress.h - a status line that fits the terminal (clattn tune). */
#ifndef CLATTN_CLI_PROGRESS_H
#define CLATTN_CLI_PROGRESS_H

#include <stddef.h>

/* head + " " + words + tail into out, in at most width - 1 columns (the
 * last column would wrap): when too long, whole words are dropped from the
 * end of `words` (blank-separated key=value parameters) and " +N" tells
 * how many; then the tail goes; then whole words of head, marked "…".
 * A word is never cut, unless head's first word alone is wider than the
 * terminal.  ASCII text; out holds at least width + 4 bytes (cap). */
void cli_fit_line(char *out, size_t cap, int width, const char *head,
                  const char *words, const char *tail);

/* The terminal's width on fd (TIOCGWINSZ), else 80. */
int cli_term_width(int fd);

#endif
