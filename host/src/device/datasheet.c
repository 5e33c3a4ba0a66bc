/* datasheet.c - vendor datasheet profiles shipped with the library.
 *
 * host/data/datasheets.txt is embedded at build time and parsed on every
 * call (a dozen entries: microseconds), so there is no global mutable state
 * and the functions are thread-safe.  The parser is strict; see the format
 * at the top of datasheets.txt and the contract in datasheet.h. */
#include "base/versioned.h"
#include "device/datasheet.h"
#include "device/profile.h"
#include "device/profile.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define LINE_MAX_ 1024

enum key_type { T_STR, T_UINT, T_BYTES, T_REAL, T_SOURCE };

enum key_id {
  K_VENDOR,
  K_ARCH,
  K_CU,
  K_CLOCK,
  K_WAVE,
  K_SIMDS,
  K_LANES,
  K_LOCAL,
  K_MAXWG,
  K_GLOBAL,
  K_CACHE,
  K_BUS,
  K_GBPS,
  K_BW,
  K_FP32,
  K_FP16,
  K_SOURCE,
  K_COUNT
};

/* positive: the value must be > 0 (otherwise >= 0). */
static const struct {
  const char *name;
  enum key_type type;
  int positive;
} keys[K_COUNT] = {
    [K_VENDOR] = {"vendor", T_STR, 1},
    [K_ARCH] = {"arch", T_STR, 1},
    [K_CU] = {"compute_units", T_UINT, 1},
    [K_CLOCK] = {"clock_mhz", T_UINT, 1},
    [K_WAVE] = {"wave_width", T_UINT, 1},
    [K_SIMDS] = {"simds_per_cu", T_UINT, 1},
    [K_LANES] = {"fp32_lanes_per_cu", T_UINT, 1},
    [K_LOCAL] = {"local_mem", T_BYTES, 1},
    [K_MAXWG] = {"max_wg", T_UINT, 1},
    [K_GLOBAL] = {"global_mem", T_BYTES, 0},
    [K_CACHE] = {"cache", T_BYTES, 1},
    [K_BUS] = {"mem_bus_bits", T_UINT, 1},
    [K_GBPS] = {"mem_gbps", T_REAL, 1},
    [K_BW] = {"bandwidth_gbs", T_REAL, 1},
    [K_FP32] = {"fp32_gflops", T_REAL, 1},
    [K_FP16] = {"fp16_gflops", T_REAL, 0},
    [K_SOURCE] = {"source", T_SOURCE, 1},
};

typedef struct parser {
  clattn__sheet_fn fn;
  void *ud;
  int count;
  int err_line;
  char *err;
  size_t errlen;
  /* The entry being read. */
  int active;
  int seen[K_COUNT];
  clattn__sheet s;
} parser;

static clattn_status fail(parser *ps, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static clattn_status fail(parser *ps, int line, const char *fmt, ...) {
  ps->err_line = line;
  if (ps->err && ps->errlen > 0) {
    int n = snprintf(ps->err, ps->errlen, "line %d: ", line);
    if (n >= 0 && (size_t)n < ps->errlen) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
      va_end(ap);
    }
  }
  return CLATTN_ERR_DB;
}

static int is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Trim s in place; returns the new start. */
static char *trim(char *s) {
  while (is_space(*s))
    s++;
  size_t n = strlen(s);
  while (n > 0 && is_space(s[n - 1]))
    s[--n] = '\0';
  return s;
}

/* Copy s into dst[cap]; -1 if it does not fit. */
static int copy_str(char *dst, size_t cap, const char *s) {
  size_t n = strlen(s);
  if (n >= cap)
    return -1;
  memcpy(dst, s, n + 1);
  return 0;
}

/* Unsigned decimal integer: digits only, at most `max`. */
static int parse_uint(const char *s, unsigned long long max,
                      unsigned long long *out) {
  unsigned long long v = 0;
  if (!is_digit(*s))
    return -1;
  for (; is_digit(*s); s++) {
    unsigned d = (unsigned)(*s - '0');
    if (v > (max - d) / 10)
      return -1;
    v = v * 10 + d;
  }
  if (*s != '\0')
    return -1;
  *out = v;
  return 0;
}

/* Byte count: an integer with an optional KiB, MiB or GiB suffix. */
static int parse_bytes(const char *s, unsigned long long *out) {
  char num[32];
  size_t n = 0;
  while (is_digit(s[n]))
    n++;
  if (n == 0 || n >= sizeof num)
    return -1;
  memcpy(num, s, n);
  num[n] = '\0';
  const char *unit = s + n;
  while (is_space(*unit))
    unit++;
  unsigned long long mul = 1;
  if (strcmp(unit, "KiB") == 0)
    mul = 1ull << 10;
  else if (strcmp(unit, "MiB") == 0)
    mul = 1ull << 20;
  else if (strcmp(unit, "GiB") == 0)
    mul = 1ull << 30;
  else if (*unit != '\0')
    return -1;
  unsigned long long v;
  if (parse_uint(num, ~0ull / mul, &v) != 0)
    return -1;
  *out = v * mul;
  return 0;
}

/* Decimal number "123" or "123.45" (no sign, exponent or locale). */
static int parse_real(const char *s, double *out) {
  double v = 0.0;
  int digits = 0;
  for (; is_digit(*s); s++, digits++)
    v = v * 10.0 + (double)(*s - '0');
  if (digits == 0 || digits > 15)
    return -1;
  if (*s == '.') {
    s++;
    double scale = 0.1;
    int frac = 0;
    for (; is_digit(*s); s++, frac++, scale /= 10.0)
      v += (double)(*s - '0') * scale;
    if (frac == 0 || frac > 9)
      return -1;
  }
  if (*s != '\0')
    return -1;
  *out = v;
  return 0;
}

static int has_space(const char *s) {
  for (; *s; s++)
    if (is_space(*s))
      return 1;
  return 0;
}

/* Store `value` of key k into the entry. */
static clattn_status set_key(parser *ps, int line, enum key_id k,
                             const char *value) {
  clattn_profile *p = &ps->s.p;
  const char *name = keys[k].name;
  unsigned long long u = 0;
  double r = 0.0;
  switch (keys[k].type) {
  case T_STR: {
    char *dst = k == K_VENDOR ? p->vendor : p->arch;
    size_t cap = k == K_VENDOR ? sizeof p->vendor : sizeof p->arch;
    if (copy_str(dst, cap, value) != 0)
      return fail(ps, line, "'%s' is longer than %zu bytes", name, cap - 1);
    return CLATTN_OK;
  }
  case T_SOURCE: {
    if ((strncmp(value, "http://", 7) != 0 &&
         strncmp(value, "https://", 8) != 0) ||
        has_space(value))
      return fail(ps, line, "source '%s' is not one http(s) URL", value);
    size_t used = strlen(p->note), n = strlen(value);
    size_t sep = used > 0 ? 2 : 0;
    if (used + sep + n >= sizeof p->note)
      return fail(ps, line, "sources exceed %zu bytes", sizeof p->note - 1);
    if (sep)
      memcpy(p->note + used, "; ", 2);
    memcpy(p->note + used + sep, value, n + 1);
    return CLATTN_OK;
  }
  case T_UINT:
    if (parse_uint(value, 0xffffffffull, &u) != 0)
      return fail(ps, line, "%s: '%s' is not an unsigned integer", name, value);
    break;
  case T_BYTES:
    if (parse_bytes(value, &u) != 0)
      return fail(ps, line,
                  "%s: '%s' is not a byte count (integer, optional "
                  "KiB/MiB/GiB)",
                  name, value);
    break;
  case T_REAL:
    if (parse_real(value, &r) != 0)
      return fail(ps, line, "%s: '%s' is not a decimal number", name, value);
    break;
  }
  if (keys[k].positive && u == 0 && r == 0.0)
    return fail(ps, line, "%s must be greater than 0", name);
  switch (k) {
  case K_CU:
    p->compute_units = (unsigned)u;
    break;
  case K_CLOCK:
    p->clock_mhz = (unsigned)u;
    break;
  case K_WAVE:
    p->wave_width = (unsigned)u;
    break;
  case K_SIMDS:
    p->simds_per_cu = (unsigned)u;
    break;
  case K_LANES:
    ps->s.fp32_lanes_per_cu = (unsigned)u;
    break;
  case K_LOCAL:
    p->local_mem_bytes = u;
    break;
  case K_MAXWG:
    p->max_wg = (size_t)u;
    break;
  case K_GLOBAL:
    p->global_mem_bytes = u;
    break;
  case K_CACHE:
    p->cache_bytes = u;
    break;
  case K_BUS:
    ps->s.mem_bus_bits = (unsigned)u;
    break;
  case K_GBPS:
    ps->s.mem_gbps = r;
    break;
  case K_BW:
    p->bw_read_gbs = p->bw_copy_gbs = p->bw_triad_gbs = r;
    break;
  case K_FP32:
    p->fp32_gflops = r;
    break;
  case K_FP16:
    p->fp16_gflops = r;
    p->has_fp16 = r > 0.0;
    break;
  default:
    break;
  }
  return CLATTN_OK;
}

static int within(double got, double want) {
  return fabs(got - want) <= CLATTN_SHEET_TOL * want;
}

/* Validate the entry being read and hand it to the callback. */
static clattn_status finish(parser *ps) {
  if (!ps->active)
    return CLATTN_OK;
  const clattn__sheet *s = &ps->s;
  const clattn_profile *p = &s->p;
  for (int k = 0; k < K_COUNT; k++)
    if (!ps->seen[k] && k != K_CACHE) /* cache is optional (0: unknown) */
      return fail(ps, s->line, "[%s]: missing key '%s'", p->name, keys[k].name);
  double fp32 =
      2.0 * p->compute_units * s->fp32_lanes_per_cu * p->clock_mhz / 1000.0;
  if (!within(p->fp32_gflops, fp32))
    return fail(ps, s->line,
                "[%s]: fp32_gflops %.1f is not within 3%% of 2 x %u CUs x "
                "%u lanes x %u MHz = %.1f",
                p->name, p->fp32_gflops, p->compute_units, s->fp32_lanes_per_cu,
                p->clock_mhz, fp32);
  double bw = s->mem_bus_bits / 8.0 * s->mem_gbps;
  if (!within(p->bw_read_gbs, bw))
    return fail(ps, s->line,
                "[%s]: bandwidth_gbs %.1f is not within 3%% of %u bits / 8 "
                "x %.3f Gbit/s = %.1f",
                p->name, p->bw_read_gbs, s->mem_bus_bits, s->mem_gbps, bw);
  if (p->fp16_gflops > 0.0 && p->fp16_gflops < p->fp32_gflops)
    return fail(ps, s->line, "[%s]: fp16_gflops %.1f < fp32_gflops %.1f",
                p->name, p->fp16_gflops, p->fp32_gflops);
  if (ps->fn)
    ps->fn(s, ps->ud);
  ps->count++;
  ps->active = 0;
  return CLATTN_OK;
}

static clattn_status begin(parser *ps, int line, char *buf) {
  size_t n = strlen(buf);
  if (n < 2 || buf[n - 1] != ']')
    return fail(ps, line, "expected '[name]'");
  buf[n - 1] = '\0';
  char *name = trim(buf + 1);
  if (*name == '\0')
    return fail(ps, line, "empty entry name");
  memset(&ps->s, 0, sizeof ps->s);
  memset(ps->seen, 0, sizeof ps->seen);
  clattn_profile *p = &ps->s.p;
  if (copy_str(p->name, sizeof p->name, name) != 0)
    return fail(ps, line, "name is longer than %zu bytes", sizeof p->name - 1);
  p->source = CLATTN_PROFILE_DATASHEET;
  p->is_cpu = 0;
  ps->s.line = line;
  ps->active = 1;
  return CLATTN_OK;
}

static clattn_status key_line(parser *ps, int line, char *buf) {
  char *eq = strchr(buf, '=');
  if (!eq)
    return fail(ps, line, "expected '[name]' or 'key = value'");
  *eq = '\0';
  char *key = trim(buf), *value = trim(eq + 1);
  if (!ps->active)
    return fail(ps, line, "'%s' outside an [entry]", key);
  int k = 0;
  while (k < K_COUNT && strcmp(keys[k].name, key) != 0)
    k++;
  if (k == K_COUNT)
    return fail(ps, line, "unknown key '%s'", key);
  if (*value == '\0')
    return fail(ps, line, "'%s' has no value", key);
  if (ps->seen[k] && k != K_SOURCE)
    return fail(ps, line, "repeated key '%s'", key);
  ps->seen[k] = 1;
  return set_key(ps, line, (enum key_id)k, value);
}

clattn_status clattn__datasheet_parse(const char *text, size_t len,
                                      clattn__sheet_fn fn, void *ud, int *count,
                                      int *err_line, char *err, size_t errlen) {
  parser ps;
  memset(&ps, 0, sizeof ps);
  ps.fn = fn;
  ps.ud = ud;
  ps.err = err;
  ps.errlen = errlen;
  if (err && errlen > 0)
    err[0] = '\0';
  clattn_status rc = CLATTN_OK;
  if (!text && len > 0) {
    rc = CLATTN_ERR_INVALID_ARG;
    goto done;
  }
  size_t pos = 0;
  for (int line = 1; pos < len; line++) {
    const char *start = text + pos;
    const char *nl = memchr(start, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - start) : len - pos;
    pos += n + (nl ? 1 : 0);
    char buf[LINE_MAX_];
    if (n >= sizeof buf) {
      rc = fail(&ps, line, "line longer than %d bytes", LINE_MAX_ - 1);
      goto done;
    }
    if (memchr(start, '\0', n)) {
      rc = fail(&ps, line, "NUL byte");
      goto done;
    }
    memcpy(buf, start, n);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++) {
      int at_word = i == 0 || buf[i - 1] == ' ' || buf[i - 1] == '\t';
      if (buf[i] == '#' && at_word) {
        buf[i] = '\0';
        break;
      }
    }
    char *s = trim(buf);
    if (*s == '\0')
      continue;
    if (*s == '[') {
      rc = finish(&ps);
      if (rc == CLATTN_OK)
        rc = begin(&ps, line, s);
    } else {
      rc = key_line(&ps, line, s);
    }
    if (rc != CLATTN_OK)
      goto done;
  }
  rc = finish(&ps);
done:
  if (count)
    *count = ps.count;
  if (err_line)
    *err_line = rc == CLATTN_OK ? 0 : ps.err_line;
  return rc;
}

/* ------------------------------------------------------------ public API */

typedef struct pick {
  int want;           /* index wanted (when needle is NULL) */
  const char *needle; /* case-insensitive substring of the name */
  int idx;
  int found;
  clattn_profile *out;
} pick;

static int contains_ci(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (; *hay; hay++) {
    size_t i = 0;
    while (i < n && hay[i] && lower(hay[i]) == lower(needle[i]))
      i++;
    if (i == n)
      return 1;
  }
  return n == 0;
}

static void pick_fn(const clattn__sheet *s, void *ud) {
  pick *pk = ud;
  int hit =
      pk->needle ? contains_ci(s->p.name, pk->needle) : pk->idx == pk->want;
  if (hit && !pk->found) {
    *pk->out = s->p;
    pk->found = 1;
  }
  pk->idx++;
}

static clattn_status run_pick(pick *pk) {
  clattn_status rc = clattn__datasheet_parse(clattn__datasheets_txt,
                                             clattn__datasheets_txt_len,
                                             pick_fn, pk, NULL, NULL, NULL, 0);
  if (rc == CLATTN_OK && !pk->found)
    rc = CLATTN_ERR_NOT_FOUND;
  if (rc != CLATTN_OK)
    memset(pk->out, 0, sizeof *pk->out);
  return rc;
}

int clattn_datasheet_count(void) {
  int n = 0;
  if (clattn__datasheet_parse(clattn__datasheets_txt,
                              clattn__datasheets_txt_len, NULL, NULL, &n, NULL,
                              NULL, 0) != CLATTN_OK)
    return 0;
  return n;
}

clattn_status clattn__datasheet(int i, clattn_profile *out) {
  if (!out)
    return CLATTN_ERR_INVALID_ARG;
  pick pk = {.want = i, .needle = NULL, .idx = 0, .found = 0, .out = out};
  if (i < 0) {
    memset(out, 0, sizeof *out);
    return CLATTN_ERR_NOT_FOUND;
  }
  return run_pick(&pk);
}

static clattn_status datasheet_find(const char *name, clattn_profile *out) {
  if (!name || *name == '\0') {
    memset(out, 0, sizeof *out);
    return CLATTN_ERR_INVALID_ARG;
  }
  pick pk = {.want = -1, .needle = name, .idx = 0, .found = 0, .out = out};
  return run_pick(&pk);
}

/* The public forms write the caller's versioned profile. */
static clattn_status public_out(clattn_status rc, const clattn_profile *own,
                                clattn_profile *out) {
  char why[128];
  clattn__struct_out(out, own, sizeof *own, "clattn_profile", why, sizeof why);
  return rc;
}

clattn_status clattn_datasheet(int i, clattn_profile *out) {
  clattn_profile own;
  if (!out || clattn__struct_size(out) < sizeof(size_t))
    return CLATTN_ERR_INVALID_ARG;
  return public_out(clattn__datasheet(i, &own), &own, out);
}

clattn_status clattn_datasheet_find(const char *name, clattn_profile *out) {
  clattn_profile own;
  if (!out || clattn__struct_size(out) < sizeof(size_t))
    return CLATTN_ERR_INVALID_ARG;
  return public_out(datasheet_find(name, &own), &own, out);
}
