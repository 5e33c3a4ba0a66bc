/* progress.c - fit a status line into the terminal's width, dropping
 * whole words (progress.h). */
#include "progress.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int cli_term_width(int fd) {
  struct winsize ws;
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return 80;
}

/* The length of the first n blank-separated words of s (0: none), and the
 * count of words in s. */
static size_t words_len(const char *s, int n) {
  const char *p = s;
  for (int k = 0; k < n; k++) {
    while (*p == ' ')
      p++;
    p += strcspn(p, " ");
  }
  return (size_t)(p - s);
}

static int word_count(const char *s) {
  int n = 0;
  for (const char *p = s; *p;) {
    while (*p == ' ')
      p++;
    if (!*p)
      break;
    n++;
    p += strcspn(p, " ");
  }
  return n;
}

void cli_fit_line(char *out, size_t cap, int width, const char *head,
                  const char *words, const char *tail) {
  const size_t cols = width > 1 ? (size_t)width - 1 : 1;
  const size_t lh = strlen(head), lt = strlen(tail);
  const int nw = word_count(words);
  char more[16];
  if (cap == 0)
    return;
  /* every parameter, then fewer with " +N", keeping the tail */
  for (int k = nw; k >= 0; k--) {
    const size_t lw = words_len(words, k);
    more[0] = '\0';
    if (k < nw)
      snprintf(more, sizeof more, " +%d", nw - k);
    const size_t n = lh + (k > 0) + lw + strlen(more) + lt;
    if (n <= cols && n < cap) {
      snprintf(out, cap, "%s%s%.*s%s%s", head, k > 0 ? " " : "", (int)lw, words,
               more, tail);
      return;
    }
  }
  /* no tail: the head and " +N" */
  snprintf(more, sizeof more, nw > 0 ? " +%d" : "", nw);
  if (lh + strlen(more) <= cols && lh + strlen(more) < cap) {
    snprintf(out, cap, "%s%s", head, more);
    return;
  }
  /* whole words of the head, then "…" (one column, three bytes) */
  const int nh = word_count(head);
  for (int k = nh - 1; k >= 1; k--) {
    const size_t l = words_len(head, k);
    if (l + 2 <= cols && l + 5 <= cap) {
      snprintf(out, cap, "%.*s \xe2\x80\xa6", (int)l, head);
      return;
    }
  }
  /* a terminal narrower than the first word: cut it */
  snprintf(out, cap, "%.*s", (int)(cols < cap ? cols : cap - 1), head);
}
