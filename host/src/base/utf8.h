/* utf8.h - internal, header-only: UTF-8 one character at a time, for the
 * checks of stored text (db/), the cut of text into fixed fields, and the
 * command's text output (host/cli/text.c), so that all of them agree on
 * what a character is. */
#ifndef CLATTN_BASE_UTF8_H
#define CLATTN_BASE_UTF8_H

#include <stddef.h>

/* The code point at s (n >= 1 bytes there) and its length in *len; -1 with
 * *len = 1 for a byte that starts no well-formed character (a stray
 * continuation byte, an overlong form, a surrogate, past U+10FFFF, or a
 * character cut short). */
static inline long clattn__utf8_next(const unsigned char *s, size_t n,
                                     size_t *len) {
  const unsigned c = s[0];
  *len = 1;
  if (c < 0x80)
    return (long)c;
  const size_t need = c >= 0xc2 && c <= 0xdf   ? 2
                      : c >= 0xe0 && c <= 0xef ? 3
                      : c >= 0xf0 && c <= 0xf4 ? 4
                                               : 0;
  if (need == 0 || need > n)
    return -1;
  unsigned long u = c & (0x7fu >> need);
  for (size_t k = 1; k < need; k++) {
    if ((s[k] & 0xc0) != 0x80)
      return -1;
    u = u << 6 | (s[k] & 0x3fu);
  }
  if ((need == 3 && u < 0x800) || (need == 4 && u < 0x10000) ||
      (u >= 0xd800 && u <= 0xdfff) || u > 0x10ffff)
    return -1;
  *len = need;
  return (long)u;
}

/* Whether code point c is a control character: C0, DEL or C1 (the C1
 * range holds the 8-bit CSI a terminal acts on). */
static inline int clattn__utf8_is_control(long c) {
  return c < 0x20 || (c >= 0x7f && c < 0xa0);
}

/* How many of the first n bytes of s to keep so that a cut there splits
 * no character: n, or less when s[n] continues a character (s holds more
 * than n bytes). */
static inline size_t clattn__utf8_cut(const char *s, size_t n) {
  size_t m = n;
  while (m > 0 && n - m < 3 && ((unsigned char)s[m] & 0xc0) == 0x80)
    m--;
  return ((unsigned char)s[m] & 0xc0) == 0x80 ? n : m;
}

#endif /* CLATTN_BASE_UTF8_H */
