/* json_export.c - the tuning rows written as JSON: clattn_db_export,
 * clattn_db_export_as (its JSON and shipped formats; T4 is t4_export.c's)
 * and clattn_tune_entry_json (json_import.c reads them back).
 *
 *   {"clattn_tuning": 1, "library_version": "0.1.0",
 *    "exported": "2025-01-31T12:00:00Z",
 *    "entries": [{"fingerprint": "...", ..., "updated": "..."}, ...]}
 *
 * An entry has one key per clattn_tune_entry field, named like its column;
 * both directions walk the one field table of db_tune.c
 * (clattn__db_tune_cols).
 * Integers (tune_method) are written as such and must read back whole.
 * Doubles are written with %.17g, so they read back bit for bit; the
 * infinities, which JSON lacks, as 1e999 and -1e999 (read back as the
 * overflow they are).  Strings escape '"', '\' and control characters
 * (\u00XX) and copy UTF-8; a byte that is not UTF-8 (only a row stored
 * before rows were checked can hold one) is written as \ufffd, so every
 * export is JSON that strict readers (Python's json) accept. */
#include "db/db.h"
#include "base/out_file.h"
#include "base/utf8.h"
#include "base/versioned.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------- writing */

/* A bounded output buffer that counts what did not fit (like snprintf). */
typedef struct outbuf {
  char *buf;
  size_t cap, len;
} outbuf;

static void out_ch(outbuf *o, char c) {
  if (o->len + 1 < o->cap)
    o->buf[o->len] = c;
  o->len++;
}

static void out_str(outbuf *o, const char *s) {
  while (*s)
    out_ch(o, *s++);
}

/* A JSON string of the at most n bytes at s (stopping at a NUL). */
static void out_json_str(outbuf *o, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  out_ch(o, '"');
  for (size_t i = 0; i < n && s[i]; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      out_ch(o, '\\');
      out_ch(o, (char)c);
    } else if (c < 0x20 || c == 0x7f) {
      out_str(o, "\\u00");
      out_ch(o, hex[c >> 4]);
      out_ch(o, hex[c & 15]);
    } else if (c < 0x80) {
      out_ch(o, (char)c);
    } else {
      /* a whole UTF-8 character is copied, a C1 control (a terminal's
       * 8-bit escapes) as \u00XX; a byte that starts none (a row stored
       * before rows were checked, or behind them) is U+FFFD, so that every
       * export is JSON any reader accepts */
      size_t len;
      const long u = clattn__utf8_next((const unsigned char *)s + i,
                                       strnlen(s + i, n - i), &len);
      if (u < 0) {
        out_str(o, "\\ufffd");
      } else if (clattn__utf8_is_control(u)) {
        out_str(o, "\\u00");
        out_ch(o, hex[u >> 4]);
        out_ch(o, hex[u & 15]);
      } else {
        for (size_t k = 0; k < len; k++)
          out_ch(o, s[i + k]);
      }
      i += len - 1;
    }
  }
  out_ch(o, '"');
}

int clattn__json_fput_str(FILE *f, const char *s, size_t n) {
  char small[512];
  outbuf o = {small, sizeof small, 0};
  out_json_str(&o, s, n);
  if (o.len < o.cap) {
    small[o.len] = '\0';
    return fputs(small, f) == EOF ? -1 : 0;
  }
  char *big = malloc(o.len + 1);
  if (big == NULL) {
    errno = ENOMEM;
    return -1;
  }
  outbuf b = {big, o.len + 1, 0};
  out_json_str(&b, s, n);
  big[b.len] = '\0';
  int rc = fputs(big, f) == EOF ? -1 : 0;
  free(big);
  return rc;
}

static void out_json_num(outbuf *o, double v) {
  char num[40];
  if (isnan(v))
    snprintf(num, sizeof num, "null");
  else if (isinf(v))
    snprintf(num, sizeof num, v > 0 ? "1e999" : "-1e999");
  else
    snprintf(num, sizeof num, "%.17g", v);
  out_str(o, num);
}

size_t clattn_tune_entry_json(const clattn_tune_entry *e, char *buf,
                              size_t cap) {
  clattn_tune_entry own;
  char why[128];
  if (e != NULL && clattn__struct_in(&own, sizeof own, e, "clattn_tune_entry",
                                     why, sizeof why) != CLATTN_OK) {
    if (buf != NULL && cap > 0)
      buf[0] = '\0';
    return 0;
  }
  return clattn__tune_entry_json(e ? &own : NULL, buf, cap);
}

size_t clattn__tune_entry_json(const clattn_tune_entry *e, char *buf,
                               size_t cap) {
  outbuf o = {buf, buf ? cap : 0, 0};
  int n = 0;
  const clattn__col *c = clattn__db_tune_cols(&n);
  if (e == NULL) {
    if (o.cap)
      buf[0] = '\0';
    return 0;
  }
  out_ch(&o, '{');
  for (int i = 0; i < n; i++) {
    const char *f = (const char *)e + c[i].off;
    if (i)
      out_str(&o, ", ");
    out_json_str(&o, c[i].name, strlen(c[i].name));
    out_str(&o, ": ");
    if (c[i].type == CLATTN_COL_REAL)
      out_json_num(&o, *(const double *)(const void *)f);
    else if (c[i].type == CLATTN_COL_INT)
      out_json_num(&o, (double)*(const int *)(const void *)f);
    else /* tune_cols holds text, int and real columns only */
      out_json_str(&o, f, c[i].size);
  }
  out_ch(&o, '}');
  if (o.cap)
    buf[o.len < o.cap ? o.len : o.cap - 1] = '\0';
  return o.len;
}

/* Write the document to f; 0, or -1 on a write error (errno set). */
static int write_doc(FILE *f, const clattn_tune_entry *rows, int n, char **line,
                     size_t *line_cap) {
  char date[32];
  outbuf o = {*line, *line_cap, 0};
  clattn__db_iso_now(date, sizeof date);
  out_str(&o, "{\n  \"clattn_tuning\": 1,\n  \"library_version\": ");
  out_json_str(&o, clattn_version(), strlen(clattn_version()));
  out_str(&o, ",\n  \"exported\": ");
  out_json_str(&o, date, sizeof date);
  out_str(&o, ",\n  \"entries\": [");
  if (o.len >= o.cap) /* cannot happen: the buffer is 16 KiB */
    return -1;
  o.buf[o.len] = '\0';
  if (fputs(o.buf, f) == EOF)
    return -1;
  for (int i = 0; i < n; i++) {
    size_t len = clattn__tune_entry_json(&rows[i], *line, *line_cap);
    if (len >= *line_cap) {
      char *g = realloc(*line, len + 1);
      if (g == NULL) {
        errno = ENOMEM;
        return -1;
      }
      *line = g;
      *line_cap = len + 1;
      clattn__tune_entry_json(&rows[i], *line, *line_cap);
    }
    if (fprintf(f, "%s\n    %s", i ? "," : "", *line) < 0)
      return -1;
  }
  if (fputs(n ? "\n  ]\n}\n" : "]\n}\n", f) == EOF)
    return -1;
  return 0;
}

/* Only what a shipped file needs: per device, kernel and shape class the
 * best "ok" row of the kernel's current tuning method (rows arrive
 * ordered by kernel, class and time).  Returns the rows kept, in place. */
static int best_rows(clattn_tune_entry *rows, int n) {
  int kept = 0;
  for (int i = 0; i < n; i++) {
    const clattn_tune_entry *r = &rows[i];
    int dup = 0;
    if (strcmp(r->status, "ok") != 0 || r->median_s <= 0 ||
        r->tune_method != clattn_tune_method(r->kernel))
      continue;
    for (int j = 0; j < kept && !dup; j++)
      dup = !strcmp(rows[j].fingerprint, r->fingerprint) &&
            !strcmp(rows[j].kernel, r->kernel) &&
            !strcmp(rows[j].shape_class, r->shape_class) &&
            rows[j].median_s <= r->median_s;
    if (dup)
      continue;
    /* a faster row of the same key replaces the kept one */
    int at = kept;
    for (int j = 0; j < kept; j++)
      if (!strcmp(rows[j].fingerprint, r->fingerprint) &&
          !strcmp(rows[j].kernel, r->kernel) &&
          !strcmp(rows[j].shape_class, r->shape_class))
        at = j;
    rows[at] = *r;
    if (at == kept)
      kept++;
  }
  return kept;
}

/* The document in format to f; 0, or -1 on a write error (errno set). */
static int write_format(FILE *f, clattn_export_format format,
                        const clattn_tune_entry *rows, int n, char **line,
                        size_t *line_cap) {
  if (format == CLATTN_EXPORT_T4)
    return clattn__t4_write(f, rows, n);
  return write_doc(f, rows, n, line, line_cap);
}

/* The database's own files, which an export must never replace. */
static int db_files(const clattn_db *db, char files[4][CLATTN_OUT_PATH_MAX]) {
  static const char *const suffix[4] = {"", "-wal", "-shm", "-journal"};
  int n = 0;
  for (int k = 0; k < 4; k++)
    if (snprintf(files[n], CLATTN_OUT_PATH_MAX, "%s%s", clattn_db_path(db),
                 suffix[k]) < CLATTN_OUT_PATH_MAX)
      n++;
  return n;
}

static clattn_status io_fail(clattn_db *db, int code, const char *msg) {
  return clattn__db_fail(db,
                         code == ENOMEM   ? CLATTN_ERR_NOMEM
                         : code == EINVAL ? CLATTN_ERR_INVALID_ARG
                                          : CLATTN_ERR_IO,
                         "export: %s", msg);
}

clattn_status clattn_db_export_as(clattn_db *db, const char *path,
                                  clattn_export_format format,
                                  const char *fingerprint, const char *kernel) {
  clattn_status rc = clattn__db_check(db);
  clattn_tune_entry *rows = NULL;
  char *line = NULL;
  size_t line_cap = 16384;
  clattn__out_file out = {.f = NULL};
  char msg[1024];
  int n = 0, to_stdout;
  if (rc != CLATTN_OK)
    return rc;
  if (path == NULL || !path[0])
    return clattn__db_fail(db, CLATTN_ERR_INVALID_ARG,
                           "export: no file name (\"-\" is stdout)");
  if (format != CLATTN_EXPORT_JSON && format != CLATTN_EXPORT_SHIPPED &&
      format != CLATTN_EXPORT_T4)
    return clattn__db_fail(db, CLATTN_ERR_INVALID_ARG,
                           "export: unknown format %d (json 0, shipped 1, "
                           "t4 2)",
                           (int)format);
  to_stdout = !strcmp(path, "-");
  rc = clattn__db_list_tune(db, fingerprint, kernel, NULL, &rows, &n);
  if (rc != CLATTN_OK)
    return rc;
  if (format == CLATTN_EXPORT_SHIPPED)
    n = best_rows(rows, n);
  line = malloc(line_cap);
  if (line == NULL) {
    rc = clattn__db_fail(db, CLATTN_ERR_NOMEM, "out of host memory");
    goto done;
  }
  FILE *f = stdout;
  if (!to_stdout) {
    char files[4][CLATTN_OUT_PATH_MAX];
    const char *inputs[4];
    const int n_files = db_files(db, files);
    for (int k = 0; k < n_files; k++)
      inputs[k] = files[k];
    /* the whole file is written and synced under a temporary name, then
     * renamed: a reader never sees half a file (base/out_file.h) */
    const int e =
        clattn__out_open(&out, path, inputs, n_files, msg, sizeof msg);
    if (e != 0) {
      rc = io_fail(db, e, msg);
      goto done;
    }
    f = out.f;
  }
  errno = 0;
  if (write_format(f, format, rows, n, &line, &line_cap) != 0 ||
      fflush(f) != 0) {
    rc = clattn__db_fail(db, errno == ENOMEM ? CLATTN_ERR_NOMEM : CLATTN_ERR_IO,
                         "export: writing %s: %s", to_stdout ? "stdout" : path,
                         errno ? strerror(errno) : "write error");
    goto done;
  }
  if (!to_stdout) {
    const int e = clattn__out_close(&out, 1, msg, sizeof msg);
    if (e != 0)
      rc = io_fail(db, e, msg);
  }
done:
  clattn__out_close(&out, 0, NULL, 0); /* a failed write: nothing is left */
  free(line);
  free(rows);
  return rc;
}

clattn_status clattn_db_export(clattn_db *db, const char *path) {
  return clattn_db_export_as(db, path, CLATTN_EXPORT_JSON, NULL, NULL);
}
