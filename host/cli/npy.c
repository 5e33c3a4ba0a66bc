/* npy.c - NumPy .npy reader/writer.  Format reference:
 * numpy/lib/format.py: magic "\x93NUMPY", major, minor, a little-endian
 * header length (u16 for 1.0, u32 for 2.0 and 3.0), then a Python dict
 * literal {'descr': ..., 'fortran_order': ..., 'shape': (...)} padded with
 * spaces and ending in '\n', then the raw data. */
#include "npy.h"

#include "base/out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NPY_MAX_HEADER (1u << 20) /* sanity limit on the dict length */

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

size_t npy_dtype_size(npy_dtype dt) {
  return dt == NPY_I8 ? 1 : dt == NPY_F16 ? 2 : 4;
}

const char *npy_dtype_descr(npy_dtype dt) {
  switch (dt) {
  case NPY_F32:
    return "<f4";
  case NPY_F16:
    return "<f2";
  case NPY_I32:
    return "<i4";
  case NPY_I8:
    return "|i1";
  }
  return "?";
}

static void seterr(char *err, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, len, fmt, ap);
  va_end(ap);
}

const char *npy_shape_str(int ndim, const size_t *shape, char *buf,
                          size_t len) {
  size_t o = 0;
  o += (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < ndim && o < len; i++)
    o += (size_t)snprintf(buf + o, len - o, "%s%zu", i ? ", " : "", shape[i]);
  if (o < len)
    snprintf(buf + o, len - o, "]");
  return buf;
}

/* Byte order: data are little-endian on disk; swap on big-endian hosts. */
static int host_is_le(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

static void swap_bytes(void *data, size_t count, size_t size) {
  unsigned char *p = data;
  for (size_t i = 0; i < count; i++, p += size)
    for (size_t j = 0; j < size / 2; j++) {
      unsigned char t = p[j];
      p[j] = p[size - 1 - j];
      p[size - 1 - j] = t;
    }
}

/* ------------------------------------------------------ header parsing */

typedef struct cursor {
  const char *p, *end;
} cursor;

static void skip_ws(cursor *c) {
  while (c->p < c->end &&
         (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
    c->p++;
}

static int accept(cursor *c, char ch) {
  skip_ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return 1;
  }
  return 0;
}

/* A quoted string without escapes (none occur in valid headers). */
static int parse_str(cursor *c, char *buf, size_t cap) {
  skip_ws(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
    return -1;
  char q = *c->p++;
  size_t n = 0;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\' || n + 1 >= cap)
      return -1;
    buf[n++] = *c->p++;
  }
  if (c->p >= c->end)
    return -1;
  c->p++;
  buf[n] = '\0';
  return 0;
}

static int accept_word(cursor *c, const char *w) {
  size_t n = strlen(w);
  skip_ws(c);
  if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
    c->p += n;
    return 1;
  }
  return 0;
}

/* A Python tuple of non-negative ints: (), (3,), (2, 3), (2, 3, ). */
static int parse_shape(cursor *c, npy_array *a, char *err, size_t len) {
  if (!accept(c, '(')) {
    seterr(err, len, "header: 'shape' is not a tuple");
    return -1;
  }
  a->ndim = 0;
  for (;;) {
    if (accept(c, ')'))
      return 0;
    skip_ws(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') {
      seterr(err, len, "header: malformed 'shape' tuple");
      return -1;
    }
    size_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
      size_t d = (size_t)(*c->p++ - '0');
      if (v > (SIZE_MAX - d) / 10) {
        seterr(err, len, "header: 'shape' dimension too large");
        return -1;
      }
      v = v * 10 + d;
    }
    if (c->p < c->end && *c->p == 'L') /* Python 2 long literal */
      c->p++;
    if (a->ndim == NPY_MAX_DIMS) {
      seterr(err, len, "header: more than %d dimensions", NPY_MAX_DIMS);
      return -1;
    }
    a->shape[a->ndim++] = v;
    if (accept(c, ','))
      continue;
    if (accept(c, ')'))
      return 0;
    seterr(err, len, "header: malformed 'shape' tuple");
    return -1;
  }
}

static int parse_header(const char *h, size_t hlen, npy_array *a, char *err,
                        size_t len) {
  cursor c = {h, h + hlen};
  int have_descr = 0, have_fortran = 0, have_shape = 0, fortran = 0;
  char key[32], descr[32];

  if (!accept(&c, '{')) {
    seterr(err, len, "header is not a dict");
    return -1;
  }
  while (!accept(&c, '}')) {
    if (parse_str(&c, key, sizeof key) || !accept(&c, ':')) {
      seterr(err, len, "header: malformed dict");
      return -1;
    }
    int *seen = !strcmp(key, "descr")           ? &have_descr
                : !strcmp(key, "fortran_order") ? &have_fortran
                : !strcmp(key, "shape")         ? &have_shape
                                                : NULL;
    if (!seen) {
      seterr(err, len, "header: unexpected key '%s'", key);
      return -1;
    }
    if (*seen) {
      seterr(err, len, "header: duplicate key '%s'", key);
      return -1;
    }
    *seen = 1;
    if (seen == &have_descr) {
      if (parse_str(&c, descr, sizeof descr)) {
        seterr(err, len,
               "unsupported dtype (descr is not a simple type "
               "string; structured dtypes are not supported)");
        return -1;
      }
      if (!strcmp(descr, "<f4"))
        a->dtype = NPY_F32;
      else if (!strcmp(descr, "<f2"))
        a->dtype = NPY_F16;
      else if (!strcmp(descr, "<i4"))
        a->dtype = NPY_I32;
      else if (!strcmp(descr, "|i1") || !strcmp(descr, "<i1"))
        a->dtype = NPY_I8;
      else {
        seterr(err, len,
               "unsupported dtype '%s' (supported: little-endian "
               "'<f4', '<f2', '<i4', and '|i1')",
               descr);
        return -1;
      }
    } else if (seen == &have_fortran) {
      if (accept_word(&c, "True"))
        fortran = 1;
      else if (!accept_word(&c, "False")) {
        seterr(err, len, "header: 'fortran_order' is not True or False");
        return -1;
      }
    } else if (parse_shape(&c, a, err, len)) {
      return -1;
    }
    /* Either a comma (possibly trailing) or the closing brace. */
    if (!accept(&c, ',')) {
      skip_ws(&c);
      if (c.p >= c.end || *c.p != '}') {
        seterr(err, len, "header: malformed dict");
        return -1;
      }
    }
  }
  skip_ws(&c);
  if (c.p != c.end) {
    seterr(err, len, "header: unexpected text after the dict");
    return -1;
  }
  if (!have_descr || !have_fortran || !have_shape) {
    seterr(err, len, "header lacks '%s'",
           !have_descr     ? "descr"
           : !have_fortran ? "fortran_order"
                           : "shape");
    return -1;
  }
  if (fortran) {
    seterr(err, len,
           "fortran_order True is not supported (save a "
           "C-contiguous array)");
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------- reading */

/* The files this process read: npy_write never replaces one of them. */
enum { MAX_READ = 64 };
static char *read_paths[MAX_READ];
static int n_read;

int npy_read(const char *path, npy_array *a, char *err, size_t len) {
  unsigned char pre[12];
  char *hdr = NULL;
  FILE *f = NULL;
  int rc = -1;

  memset(a, 0, sizeof *a);
  f = fopen(path, "rb");
  if (!f) {
    seterr(err, len, "cannot open: %s", strerror(errno));
    return -1;
  }
  if (n_read < MAX_READ && (read_paths[n_read] = strdup(path)) != NULL)
    n_read++;
  size_t got = fread(pre, 1, 10, f);
  if (got < 8 || memcmp(pre, npy_magic, 6) != 0) {
    seterr(err, len, ferror(f) ? "read error" : "not a .npy file (bad magic)");
    goto done;
  }
  unsigned major = pre[6], minor = pre[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    seterr(err, len, "unsupported .npy format version %u.%u", major, minor);
    goto done;
  }
  size_t hlen;
  if (major == 1) {
    if (got < 10)
      goto trunc_header;
    hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
  } else {
    if (got < 10 || fread(pre + 10, 1, 2, f) != 2)
      goto trunc_header;
    hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
           (size_t)pre[11] << 24;
  }
  if (hlen > NPY_MAX_HEADER) {
    seterr(err, len, "header length %zu is implausible", hlen);
    goto done;
  }
  hdr = malloc(hlen + 1);
  if (!hdr) {
    seterr(err, len, "out of memory");
    goto done;
  }
  if (fread(hdr, 1, hlen, f) != hlen)
    goto trunc_header;
  hdr[hlen] = '\0';
  if (parse_header(hdr, hlen, a, err, len))
    goto done;

  size_t es = npy_dtype_size(a->dtype), count = 1;
  for (int i = 0; i < a->ndim; i++) {
    if (a->shape[i] && count > SIZE_MAX / es / a->shape[i]) {
      seterr(err, len, "array too large");
      goto done;
    }
    count *= a->shape[i];
  }
  a->count = count;
  /* A header may claim any shape: compare it with the bytes the file holds
   * before allocating, so a short file cannot ask for gigabytes. */
  struct stat st;
  long at = ftell(f);
  if (at >= 0 && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
      (st.st_size < at || (uintmax_t)(st.st_size - at) < count * es)) {
    seterr(err, len, "truncated data: expected %zu bytes, found %jd",
           count * es, (intmax_t)(st.st_size < at ? 0 : st.st_size - at));
    goto done;
  }
  a->data = malloc(count ? count * es : 1);
  if (!a->data) {
    seterr(err, len, "out of memory (%zu bytes of data)", count * es);
    goto done;
  }
  got = fread(a->data, 1, count * es, f);
  if (got != count * es) {
    if (ferror(f))
      seterr(err, len, "read error: %s", strerror(errno));
    else
      seterr(err, len, "truncated data: expected %zu bytes, found %zu",
             count * es, got);
    goto done;
  }
  if (fgetc(f) != EOF) {
    seterr(err, len, "unexpected bytes after the %zu bytes of data",
           count * es);
    goto done;
  }
  if (!host_is_le())
    swap_bytes(a->data, count, es);
  rc = 0;
  goto done;

trunc_header:
  seterr(err, len, ferror(f) ? "read error" : "truncated header");
done:
  free(hdr);
  fclose(f); /* read-only stream: nothing to lose */
  if (rc)
    npy_free(a);
  return rc;
}

void npy_free(npy_array *a) {
  if (!a)
    return;
  free(a->data);
  a->data = NULL;
  a->count = 0;
}

/* ------------------------------------------------------------- writing */

int npy_write(const char *path, npy_dtype dt, int ndim, const size_t *shape,
              const void *data, char *err, size_t len) {
  char dict[512];
  size_t n, count = 1, es = npy_dtype_size(dt);

  if (ndim < 0 || ndim > NPY_MAX_DIMS) {
    seterr(err, len, "cannot write rank %d", ndim);
    return -1;
  }
  n = (size_t)snprintf(dict, sizeof dict,
                       "{'descr': '%s', 'fortran_order': False, 'shape': (",
                       npy_dtype_descr(dt));
  for (int i = 0; i < ndim; i++) {
    n += (size_t)snprintf(dict + n, sizeof dict - n, "%s%zu", i ? ", " : "",
                          shape[i]);
    count *= shape[i];
  }
  n += (size_t)snprintf(dict + n, sizeof dict - n, "%s), }",
                        ndim == 1 ? "," : "");
  /* Pad with spaces so that magic + length + dict + '\n' is a multiple of
   * 64 bytes; the header length field counts dict, padding and '\n'. */
  size_t total = 10 + n + 1, pad = (64 - total % 64) % 64;
  size_t hlen = n + pad + 1;
  unsigned char pre[10];
  memcpy(pre, npy_magic, 6);
  pre[6] = 1;
  pre[7] = 0;
  pre[8] = (unsigned char)(hlen & 0xff);
  pre[9] = (unsigned char)(hlen >> 8);

  clattn__out_file out;
  if (clattn__out_open(&out, path, (const char *const *)read_paths, n_read, err,
                       len) != 0)
    return -1;
  FILE *f = out.f;
  int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, n, f) == n;
  for (size_t i = 0; ok && i < pad; i++)
    ok = fputc(' ', f) != EOF;
  ok = ok && fputc('\n', f) != EOF;
  if (ok && host_is_le()) {
    ok = fwrite(data, es, count, f) == count;
  } else if (ok) { /* big-endian host: swap a copy, element by element */
    const unsigned char *p = data;
    unsigned char e[4];
    for (size_t i = 0; ok && i < count; i++, p += es) {
      memcpy(e, p, es);
      swap_bytes(e, 1, es);
      ok = fwrite(e, es, 1, f) == 1;
    }
  }
  if (!ok) {
    seterr(err, len, "write error: %s", strerror(errno));
    clattn__out_close(&out, 0, NULL, 0);
    return -1;
  }
  return clattn__out_close(&out, 1, err, len) != 0 ? -1 : 0;
}
