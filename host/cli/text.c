/* text.c - text from a database, a driver or another machine as every
 * output of the command writes it: valid UTF-8 without control
 * characters, so that a stored name cannot move a terminal's cursor or
 * set its title, and every JSON document parses. */
#include "cli.h"

#include "base/utf8.h"

#include <stdio.h>
#include <string.h>

/* U+FFFD, the replacement character, in UTF-8. */
static const char replacement[] = "\xef\xbf\xbd";

void cli_put_text(FILE *f, const char *s, void (*ascii)(FILE *f, int c),
                  int json) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t n = strlen(s); n > 0;) {
    size_t len;
    const long c = clattn__utf8_next(p, n, &len);
    if (c < 0)
      fputs(json ? "\\ufffd" : replacement, f);
    else if (clattn__utf8_is_control(c) && json)
      fprintf(f, "\\u%04lx", (unsigned long)c);
    else if (clattn__utf8_is_control(c))
      fputs(replacement, f);
    else if (c < 0x80 && ascii != NULL)
      ascii(f, (int)c);
    else
      fwrite(p, 1, len, f);
    p += len;
    n -= len;
  }
}

size_t cli_clean_text(char *dst, size_t cap, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  size_t at = 0, chars = 0;
  for (size_t n = strlen(s); n > 0 && cap > 0;) {
    size_t len;
    const long c = clattn__utf8_next(p, n, &len);
    const int bad = c < 0 || clattn__utf8_is_control(c);
    const char *out = bad ? replacement : (const char *)p;
    const size_t out_len = bad ? sizeof replacement - 1 : len;
    if (at + out_len >= cap)
      break; /* whole characters only */
    memcpy(dst + at, out, out_len);
    at += out_len;
    chars++;
    p += len;
    n -= len;
  }
  if (cap > 0)
    dst[at] = '\0';
  return chars;
}

static void json_ascii(FILE *f, int c) {
  if (c == '"' || c == '\\')
    fputc('\\', f);
  fputc(c, f);
}

void cli_json_text(FILE *f, const char *s) {
  fputc('"', f);
  cli_put_text(f, s, json_ascii, 1);
  fputc('"', f);
}
