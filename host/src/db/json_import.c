/* json_import.c - clattn_db_import: reading back the JSON that
 * json_export.c writes (its header describes the document).
 *
 * The reader is a small strict JSON parser for this one shape: objects,
 * arrays, strings (all escapes, \uXXXX and surrogate pairs to UTF-8),
 * numbers, true/false/null.  Every error names the file, line and column
 * and what was expected there.  Unknown keys, duplicate keys, wrong types,
 * strings longer than their field and a version other than 1 are errors,
 * never skipped or truncated; so is an entry whose values are not valid
 * (clattn__tune_entry_check: an impossible or future date, a time that is
 * not finite, params its family refuses, text that is not UTF-8).  The
 * parser knows no database (clattn__tune_json_parse hands each entry to a
 * callback; the shipped data, db/shipped.c, reads the same format); the
 * import reads and checks the whole file before the database is touched,
 * and the merge is one transaction. */
#include "db/db.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TUNING_FORMAT 1                  /* the "clattn_tuning" version */
#define MAX_FILE_BYTES ((size_t)1 << 28) /* 256 MiB */
#define MAX_NUMBER_CHARS 64

/* ------------------------------------------------------------- reading */

/* The reader: a whole file in memory (NUL-terminated) and a position. */
typedef struct reader {
  char *msg; /* messages go here (msg_cap bytes) */
  size_t msg_cap;
  const char *name; /* the file, for messages */
  const char *s, *end, *p;
  const char *line_start;
  int line;
} reader;

/* A position in the file, for messages about what started there. */
typedef struct pos {
  int line, col;
} pos;

static pos here(const reader *r) {
  pos p = {r->line, (int)(r->p - r->line_start) + 1};
  return p;
}

/* Fail with "FILE:LINE:COL: message" (CLATTN_ERR_INVALID_ARG). */
static clattn_status fail_at(reader *r, pos at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static clattn_status fail_at(reader *r, pos at, const char *fmt, ...) {
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(r->msg, r->msg_cap, "%s:%d:%d: %s", r->name, at.line, at.col, msg);
  return CLATTN_ERR_INVALID_ARG;
}

/* What is at the current position, for "expected X, found Y". */
static const char *found(const reader *r, char *buf, size_t cap) {
  unsigned char c = r->p < r->end ? (unsigned char)*r->p : 0;
  if (r->p >= r->end)
    return "end of file";
  if (c == '"')
    return "a string";
  if (c == '{')
    return "an object";
  if (c == '[')
    return "an array";
  if (c == '-' || (c >= '0' && c <= '9'))
    return "a number";
  if (!strncmp(r->p, "true", 4) || !strncmp(r->p, "false", 5))
    return "a boolean";
  if (!strncmp(r->p, "null", 4))
    return "null";
  if (c > 0x20 && c < 0x7f)
    snprintf(buf, cap, "'%c'", c);
  else
    snprintf(buf, cap, "byte 0x%02x", c);
  return buf;
}

static clattn_status expected(reader *r, const char *what) {
  char buf[32];
  return fail_at(r, here(r), "expected %s, found %s", what,
                 found(r, buf, sizeof buf));
}

static void skip_ws(reader *r) {
  while (r->p < r->end) {
    char c = *r->p;
    if (c == '\n') {
      r->line++;
      r->line_start = r->p + 1;
    } else if (c != ' ' && c != '\t' && c != '\r') {
      return;
    }
    r->p++;
  }
}

/* Skip white space; then the next character is c (consumed): 1, else 0. */
static int accept(reader *r, char c) {
  skip_ws(r);
  if (r->p < r->end && *r->p == c) {
    r->p++;
    return 1;
  }
  return 0;
}

static int hex4(const char *p, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0)
      return -1;
    v = v << 4 | (unsigned)d;
  }
  *out = v;
  return 0;
}

/* Append code point u as UTF-8 to out[*n] (cap bytes, NUL included);
 * -1 when it does not fit. */
static int put_utf8(char *out, size_t cap, size_t *n, unsigned u) {
  unsigned char b[4];
  size_t k;
  if (u < 0x80) {
    b[0] = (unsigned char)u;
    k = 1;
  } else if (u < 0x800) {
    b[0] = (unsigned char)(0xc0 | u >> 6);
    b[1] = (unsigned char)(0x80 | (u & 0x3f));
    k = 2;
  } else if (u < 0x10000) {
    b[0] = (unsigned char)(0xe0 | u >> 12);
    b[1] = (unsigned char)(0x80 | (u >> 6 & 0x3f));
    b[2] = (unsigned char)(0x80 | (u & 0x3f));
    k = 3;
  } else {
    b[0] = (unsigned char)(0xf0 | u >> 18);
    b[1] = (unsigned char)(0x80 | (u >> 12 & 0x3f));
    b[2] = (unsigned char)(0x80 | (u >> 6 & 0x3f));
    b[3] = (unsigned char)(0x80 | (u & 0x3f));
    k = 4;
  }
  if (*n + k >= cap)
    return -1;
  memcpy(out + *n, b, k);
  *n += k;
  return 0;
}

/* A string at the current position (after white space), decoded into
 * out (cap bytes with the NUL).  `what` names it in messages; a string
 * that does not fit is an error naming the limit. */
static clattn_status read_string(reader *r, char *out, size_t cap,
                                 const char *what) {
  size_t n = 0;
  skip_ws(r);
  pos start = here(r);
  if (r->p >= r->end || *r->p != '"') {
    char buf[64];
    snprintf(buf, sizeof buf, "a string (%s)", what);
    return expected(r, buf);
  }
  r->p++;
  for (;;) {
    pos at = here(r);
    if (r->p >= r->end)
      return fail_at(r, start, "unterminated string (%s)", what);
    unsigned char c = (unsigned char)*r->p;
    if (c == '"') {
      r->p++;
      break;
    }
    if (c < 0x20)
      return fail_at(r, at,
                     "control character 0x%02x in a string (%s); write it "
                     "as \\u%04x",
                     c, what, c);
    if (c != '\\') {
      if (n + 1 >= cap)
        return fail_at(r, start, "string too long for %s (at most %zu bytes)",
                       what, cap - 1);
      out[n++] = (char)c;
      r->p++;
      continue;
    }
    if (r->p + 1 >= r->end)
      return fail_at(r, start, "unterminated string (%s)", what);
    static const char esc[] = "\"\\/bfnrt", val[] = "\"\\/\b\f\n\r\t";
    char e = r->p[1];
    const char *simple = e ? strchr(esc, e) : NULL;
    if (simple) {
      if (n + 1 >= cap)
        return fail_at(r, start, "string too long for %s (at most %zu bytes)",
                       what, cap - 1);
      out[n++] = val[simple - esc];
      r->p += 2;
      continue;
    }
    if (e != 'u')
      return fail_at(r, at, "invalid escape '\\%c' in a string (%s)",
                     e > 0x20 && e < 0x7f ? e : '?', what);
    unsigned u, lo;
    if (r->end - r->p < 6 || hex4(r->p + 2, &u) != 0)
      return fail_at(r, at, "expected 4 hex digits after \\u (%s)", what);
    r->p += 6;
    if (u >= 0xdc00 && u <= 0xdfff)
      return fail_at(r, at, "unpaired low surrogate \\u%04x (%s)", u, what);
    if (u >= 0xd800 && u <= 0xdbff) {
      if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' ||
          hex4(r->p + 2, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff)
        return fail_at(r, at,
                       "high surrogate \\u%04x not followed by a low one "
                       "(%s)",
                       u, what);
      r->p += 6;
      u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
    }
    if (u == 0)
      return fail_at(r, at,
                     "\\u0000 in a string (%s): text fields cannot "
                     "hold NUL",
                     what);
    if (put_utf8(out, cap, &n, u) != 0)
      return fail_at(r, start, "string too long for %s (at most %zu bytes)",
                     what, cap - 1);
  }
  out[n] = '\0';
  return CLATTN_OK;
}

/* A number at the current position (JSON's grammar, then strtod). */
static clattn_status read_number(reader *r, double *out, const char *what) {
  char num[MAX_NUMBER_CHARS + 1];
  skip_ws(r);
  pos start = here(r);
  const char *p = r->p;
  if (p < r->end && *p == '-')
    p++;
  if (p >= r->end || *p < '0' || *p > '9') {
    char buf[64];
    snprintf(buf, sizeof buf, "a number (%s)", what);
    return expected(r, buf);
  }
  if (*p == '0')
    p++;
  else
    while (p < r->end && *p >= '0' && *p <= '9')
      p++;
  if (p < r->end && *p == '.') {
    p++;
    if (p >= r->end || *p < '0' || *p > '9')
      return fail_at(r, start,
                     "expected digits after the '.' of a number "
                     "(%s)",
                     what);
    while (p < r->end && *p >= '0' && *p <= '9')
      p++;
  }
  if (p < r->end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < r->end && (*p == '+' || *p == '-'))
      p++;
    if (p >= r->end || *p < '0' || *p > '9')
      return fail_at(r, start,
                     "expected digits in the exponent of a number "
                     "(%s)",
                     what);
    while (p < r->end && *p >= '0' && *p <= '9')
      p++;
  }
  if (p - r->p > MAX_NUMBER_CHARS)
    return fail_at(r, start, "number longer than %d characters (%s)",
                   MAX_NUMBER_CHARS, what);
  memcpy(num, r->p, (size_t)(p - r->p));
  num[p - r->p] = '\0';
  /* Overflow gives +-HUGE_VAL, the infinities export writes as +-1e999;
   * underflow gives the nearest subnormal or zero.  Both are wanted. */
  *out = strtod(num, NULL);
  r->p = p;
  return CLATTN_OK;
}

/* A JSON number that is a whole number within int range. */
static clattn_status read_int(reader *r, int *out, const char *what) {
  skip_ws(r);
  pos start = here(r);
  double v = 0.0;
  clattn_status rc = read_number(r, &v, what);
  if (rc != CLATTN_OK)
    return rc;
  if (!(v >= INT_MIN && v <= INT_MAX) || v != floor(v))
    return fail_at(r, start, "%s: expected a whole number, got %.17g", what, v);
  *out = (int)v;
  return CLATTN_OK;
}

/* The next key of an object: "key" then ':'.  *more 0 at the closing
 * brace.  `first`: no comma before this key. */
static clattn_status read_key(reader *r, int first, char *key, size_t cap,
                              const char *in, int *more, pos *at) {
  if (accept(r, '}')) {
    *more = 0;
    return CLATTN_OK;
  }
  if (!first && !accept(r, ',')) {
    char buf[64];
    snprintf(buf, sizeof buf, "',' or '}' in %s", in);
    return expected(r, buf);
  }
  skip_ws(r);
  *at = here(r);
  if (r->p >= r->end || *r->p != '"') {
    char buf[64];
    snprintf(buf, sizeof buf, first ? "a key or '}' in %s" : "a key in %s", in);
    return expected(r, buf);
  }
  clattn_status rc = read_string(r, key, cap, "a key");
  if (rc != CLATTN_OK)
    return rc;
  if (!accept(r, ':'))
    return expected(r, "':' after a key");
  *more = 1;
  return CLATTN_OK;
}

/* Where each parsed entry goes. */
typedef struct entries {
  clattn__tune_row_fn row;
  void *user;
  int n; /* entries read so far */
} entries;

static clattn_status read_entry(reader *r, entries *all) {
  int ncol = 0;
  const clattn__col *cols = clattn__db_tune_cols(&ncol);
  unsigned char seen[64] = {0};
  char in[48], key[128];
  clattn_status rc;
  skip_ws(r);
  pos start = here(r);
  if (!accept(r, '{'))
    return expected(r, "an entry object or ']'");
  clattn_tune_entry entry, *e = &entry;
  memset(e, 0, sizeof *e);
  snprintf(in, sizeof in, "entry %d", all->n + 1);
  for (int first = 1;; first = 0) {
    int more, i;
    pos at;
    rc = read_key(r, first, key, sizeof key, in, &more, &at);
    if (rc != CLATTN_OK || !more)
      break;
    for (i = 0; i < ncol && strcmp(cols[i].name, key) != 0; i++)
      ;
    if (i == ncol) {
      char names[1024] = "";
      for (int j = 0; j < ncol; j++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                 j ? ", " : "", cols[j].name);
      return fail_at(r, at, "unknown key \"%s\" in %s (known: %s)", key, in,
                     names);
    }
    if (seen[i])
      return fail_at(r, at, "duplicate key \"%s\" in %s", key, in);
    seen[i] = 1;
    char *f = (char *)e + cols[i].off;
    char what[192];
    snprintf(what, sizeof what, "\"%s\" of %s", key, in);
    if (cols[i].type == CLATTN_COL_REAL)
      rc = read_number(r, (double *)(void *)f, what);
    else if (cols[i].type == CLATTN_COL_INT)
      rc = read_int(r, (int *)(void *)f, what);
    else if (cols[i].type == CLATTN_COL_TEXT)
      rc = read_string(r, f, cols[i].size, what);
    else {
      snprintf(r->msg, r->msg_cap,
               "tuning column %s has a type the JSON reader does not know",
               key);
      rc = CLATTN_ERR_MISUSE;
    }
    if (rc != CLATTN_OK)
      return rc;
  }
  if (rc != CLATTN_OK)
    return rc;
  /* The key and the date the merge decides on must be there. */
  static const char *const required[] = {"fingerprint", "kernel", "shape_class",
                                         "params",      "status", "updated"};
  for (size_t k = 0; k < sizeof required / sizeof required[0]; k++) {
    for (int i = 0; i < ncol; i++) {
      if (strcmp(cols[i].name, required[k]) != 0)
        continue;
      if (!seen[i])
        return fail_at(r, start, "%s lacks \"%s\"", in, required[k]);
      /* params may be empty: a family without tunables */
      if (!((const char *)e + cols[i].off)[0] &&
          strcmp(required[k], "params") != 0)
        return fail_at(r, start, "%s: \"%s\" is empty", in, required[k]);
    }
  }
  /* Values: real dates, finite times, parameters the family plans, text
   * that is UTF-8 (clattn__tune_entry_check). */
  char why[512];
  if (clattn__tune_entry_check(e, 1, why, sizeof why) != CLATTN_OK)
    return fail_at(r, start, "%s: %s", in, why);
  all->n++;
  rc = all->row(e, start.line, all->user);
  if (rc != CLATTN_OK)
    snprintf(r->msg, r->msg_cap, "%s:%d: entry %d: out of host memory", r->name,
             start.line, all->n);
  return rc;
}

static clattn_status read_entries(reader *r, entries *all) {
  skip_ws(r);
  if (!accept(r, '['))
    return expected(r, "an array of entries");
  if (accept(r, ']'))
    return CLATTN_OK;
  for (;;) {
    clattn_status rc = read_entry(r, all);
    if (rc != CLATTN_OK)
      return rc;
    if (accept(r, ']'))
      return CLATTN_OK;
    if (!accept(r, ','))
      return expected(r, "',' or ']' after an entry");
  }
}

/* The whole document. */
static clattn_status read_doc(reader *r, entries *all) {
  static const char *const keys[] = {"clattn_tuning", "library_version",
                                     "exported", "entries"};
  int seen[4] = {0};
  char key[128], text[64];
  clattn_status rc = CLATTN_OK;
  skip_ws(r);
  pos start = here(r);
  if (!accept(r, '{'))
    return expected(r, "'{' (a clattn tuning file is one JSON object)");
  for (int first = 1;; first = 0) {
    int more, i;
    pos at;
    double v;
    rc =
        read_key(r, first, key, sizeof key, "the top-level object", &more, &at);
    if (rc != CLATTN_OK)
      return rc;
    if (!more)
      break;
    for (i = 0; i < 4 && strcmp(keys[i], key) != 0; i++)
      ;
    if (i == 4)
      return fail_at(r, at,
                     "unknown key \"%s\" in the top-level object (known: "
                     "clattn_tuning, library_version, exported, entries)",
                     key);
    if (seen[i])
      return fail_at(r, at, "duplicate key \"%s\"", key);
    seen[i] = 1;
    switch (i) {
    case 0:
      skip_ws(r);
      at = here(r);
      rc = read_number(r, &v, "the clattn_tuning version");
      if (rc == CLATTN_OK && v != TUNING_FORMAT)
        rc = fail_at(r, at,
                     "unsupported clattn_tuning version %.17g (this "
                     "library, clattn %s, reads version %d)",
                     v, clattn_version(), TUNING_FORMAT);
      break;
    case 1:
      rc = read_string(r, text, sizeof text, "library_version");
      break;
    case 2:
      rc = read_string(r, text, sizeof text, "exported");
      break;
    default:
      rc = read_entries(r, all);
      break;
    }
    if (rc != CLATTN_OK)
      return rc;
  }
  if (!seen[0])
    return fail_at(r, start,
                   "not a clattn tuning file: the object has no "
                   "\"clattn_tuning\" version");
  if (!seen[3])
    return fail_at(r, start, "the object has no \"entries\" array");
  skip_ws(r);
  if (r->p < r->end)
    return expected(r, "end of file after the top-level object");
  return CLATTN_OK;
}

clattn_status clattn__tune_json_parse(const char *name, const char *text,
                                      size_t len, clattn__tune_row_fn row,
                                      void *user, char *msg, size_t cap) {
  reader r = {msg, cap, name, text, text + len, text, text, 1};
  entries all = {row, user, 0};
  msg[0] = '\0';
  return read_doc(&r, &all);
}

/* All of f (at most max bytes; name in messages) into a malloc'ed
 * NUL-terminated buffer. */
static clattn_status slurp_stream(FILE *f, const char *name, size_t max,
                                  char **out, size_t *len, char *msg,
                                  size_t cap) {
  char *buf = NULL;
  size_t n = 0, bcap = 0;
  for (;;) {
    if (bcap - n < 2) { /* room for a byte and the NUL */
      size_t nc = bcap ? 2 * bcap : 65536;
      if (nc > max + 2) /* max bytes, one more to see a longer file, NUL */
        nc = max + 2;
      char *g = realloc(buf, nc);
      if (g == NULL) {
        free(buf);
        snprintf(msg, cap, "out of host memory");
        return CLATTN_ERR_NOMEM;
      }
      buf = g;
      bcap = nc;
    }
    size_t got = fread(buf + n, 1, bcap - n - 1, f);
    n += got;
    if (n > max) {
      free(buf);
      snprintf(msg, cap, "%s is larger than %zu MiB", name, max >> 20);
      return CLATTN_ERR_IO;
    }
    if (got == 0)
      break;
  }
  if (ferror(f)) {
    free(buf);
    snprintf(msg, cap, "reading %s: %s", name, strerror(errno));
    return CLATTN_ERR_IO;
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return CLATTN_OK;
}

clattn_status clattn__tune_json_slurp(const char *path, char **out, size_t *len,
                                      char *msg, size_t cap) {
  if (!strcmp(path, "-"))
    return slurp_stream(stdin, "stdin", MAX_FILE_BYTES, out, len, msg, cap);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    snprintf(msg, cap, "cannot open %s: %s", path, strerror(errno));
    return CLATTN_ERR_IO;
  }
  clattn_status rc = slurp_stream(f, path, MAX_FILE_BYTES, out, len, msg, cap);
  fclose(f);
  return rc;
}

clattn_status clattn__tune_json_slurp_regular(const char *path, size_t max,
                                              char **out, size_t *len,
                                              char *msg, size_t cap) {
  /* O_NONBLOCK: opening a FIFO would wait for a writer */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0) {
    snprintf(msg, cap, "cannot open %s: %s", path, strerror(errno));
    return CLATTN_ERR_IO;
  }
  if (fstat(fd, &st) != 0) {
    snprintf(msg, cap, "cannot stat %s: %s", path, strerror(errno));
    close(fd);
    return CLATTN_ERR_IO;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(msg, cap, "%s is not a regular file", path);
    close(fd);
    return CLATTN_ERR_IO;
  }
  if ((unsigned long long)st.st_size > max) {
    snprintf(msg, cap, "%s holds %lld bytes, more than the %zu MiB read", path,
             (long long)st.st_size, max >> 20);
    close(fd);
    return CLATTN_ERR_IO;
  }
  FILE *f = fdopen(fd, "rb");
  if (f == NULL) {
    snprintf(msg, cap, "cannot read %s: %s", path, strerror(errno));
    close(fd);
    return CLATTN_ERR_IO;
  }
  /* bounded again while reading: the file may grow after fstat */
  clattn_status rc = slurp_stream(f, path, max, out, len, msg, cap);
  fclose(f);
  return rc;
}

/* The import's rows, all parsed before the database is touched. */
typedef struct collected {
  clattn_tune_entry *e;
  int *line;
  int n, cap;
} collected;

static clattn_status collect(const clattn_tune_entry *e, int line, void *user) {
  collected *all = user;
  if (all->n == all->cap) {
    int nc = all->cap ? 2 * all->cap : 64;
    clattn_tune_entry *g = realloc(all->e, (size_t)nc * sizeof *g);
    if (g == NULL)
      return CLATTN_ERR_NOMEM;
    all->e = g;
    int *l = realloc(all->line, (size_t)nc * sizeof *l);
    if (l == NULL)
      return CLATTN_ERR_NOMEM;
    all->line = l;
    all->cap = nc;
  }
  all->e[all->n] = *e;
  all->line[all->n++] = line;
  return CLATTN_OK;
}

clattn_status clattn_db_import(clattn_db *db, const char *path, int *added,
                               int *updated, int *unchanged) {
  clattn_status rc = clattn__db_check(db);
  collected all = {NULL, NULL, 0, 0};
  char msg[8192];
  char *text = NULL;
  size_t len = 0;
  int count[3] = {0, 0, 0}; /* unchanged, added, updated: by *changed */
  if (added)
    *added = 0;
  if (updated)
    *updated = 0;
  if (unchanged)
    *unchanged = 0;
  if (rc != CLATTN_OK)
    return rc;
  if (path == NULL || !path[0])
    return clattn__db_fail(db, CLATTN_ERR_INVALID_ARG,
                           "import: no file name (\"-\" is stdin)");
  rc = clattn__tune_json_slurp(path, &text, &len, msg, sizeof msg);
  if (rc != CLATTN_OK)
    return clattn__db_fail(db, rc, "import: %s", msg);
  const char *name = strcmp(path, "-") ? path : "<stdin>";
  rc = clattn__tune_json_parse(name, text, len, collect, &all, msg, sizeof msg);
  if (rc != CLATTN_OK) {
    clattn__db_fail(db, rc, "%s", msg);
    goto done;
  }
  /* All or nothing: one transaction over every row. */
  rc = clattn__db_begin(db);
  if (rc != CLATTN_OK)
    goto done;
  for (int i = 0; i < all.n; i++) {
    int changed = 0;
    rc = clattn__db_upsert_tune(db, &all.e[i], CLATTN__UPSERT_NEWER, &changed);
    if (rc != CLATTN_OK) {
      snprintf(msg, sizeof msg, "%s", clattn_db_errmsg(db));
      clattn__db_rollback(db);
      clattn__db_fail(db, rc, "%s:%d: entry %d: %s (nothing imported)", name,
                      all.line[i], i + 1, msg);
      goto done;
    }
    count[changed]++;
  }
  rc = clattn__db_commit(db);
  if (rc != CLATTN_OK) {
    clattn__db_rollback(db);
    goto done;
  }
  if (added)
    *added = count[1];
  if (updated)
    *updated = count[2];
  if (unchanged)
    *unchanged = count[0];
done:
  free(all.e);
  free(all.line);
  free(text);
  return rc;
}
