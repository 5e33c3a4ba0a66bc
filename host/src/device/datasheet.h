/* datasheet.h - internal: the parser of host/data/datasheets.txt.
 *
 * The text is embedded at build time (host/data/embed.py) and parsed on
 * every public call; nothing is cached, so there is no shared mutable
 * state.  The format is documented at the top of datasheets.txt. */
#ifndef CLATTN_DATASHEET_H
#define CLATTN_DATASHEET_H

#include "clattn_tools.h"

#include <stddef.h>

/* The embedded datasheets.txt (NUL-terminated; len excludes the NUL). */
extern const char clattn__datasheets_txt[];
extern const size_t clattn__datasheets_txt_len;

/* Tolerance of the parser's cross-checks (fraction). */
#define CLATTN_SHEET_TOL 0.03

/* One parsed entry: the public profile plus the fields that exist only for
 * the cross-checks. */
typedef struct clattn__sheet {
  clattn_profile p;
  unsigned fp32_lanes_per_cu; /* FP32 FMA lanes per compute unit */
  unsigned mem_bus_bits;
  double mem_gbps; /* data rate per pin, Gbit/s */
  int line;        /* line of the [name] header */
} clattn__sheet;

/* Called once per entry, in file order, after the entry passed its
 * checks. */
typedef void (*clattn__sheet_fn)(const clattn__sheet *s, void *ud);

/* Parse `len` bytes of datasheet text.  Every entry is validated (unknown
 * key, repeated key, missing key, malformed or out-of-range number, a
 * value too long for its profile field, failed cross-check).  fn may be
 * NULL; *count (may be NULL) receives the number of entries.
 *
 * On the first error: returns CLATTN_ERR_DB, *err_line (may be NULL) is the
 * 1-based line and err (may be NULL, errlen bytes) says what is wrong,
 * e.g. "line 12: unknown key 'clock'".  Entries before the error have been
 * passed to fn.  On success err is "" and *err_line 0. */
clattn_status clattn__datasheet_parse(const char *text, size_t len,
                                      clattn__sheet_fn fn, void *ud, int *count,
                                      int *err_line, char *err, size_t errlen);

#endif
