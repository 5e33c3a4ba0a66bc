/* db.h - internal: what the tuner and the import need of the database
 * beyond the public clattn_db_* functions. */
#ifndef CLATTN_DB_H
#define CLATTN_DB_H

#include "clattn_tools.h"

#include <stddef.h>
#include <stdio.h>

/* The tuning table's kernel column of CLBlast's Xgemm rows. */
#define CLATTN_XGEMM_KERNEL "clblast-xgemm"

/* Was row e measured by its kernel's current tuning method
 * (clattn_tune_method)?  Rows that were not are neither reused by a tuning
 * run nor used at run time. */
int clattn__tune_row_current(const clattn_tune_entry *e);

/* The message of a tuning row whose time the tuner's verification measured
 * (interleaved with its rivals'): such a row outranks one of the search. */
#define CLATTN_VERIFIED_PREFIX "verified:"

/* When a stored tuning row gives way to a new one of the same key. */
typedef enum clattn__upsert {
  CLATTN__UPSERT_REPLACE, /* always (clattn_db_put_tune, tune --replace) */
  CLATTN__UPSERT_NEWER,   /* a later `updated` (the import's merge) */
  /* a better row (the tuner): of another tuning method than the stored
   * one (which is stale), or ranked higher (ok and verified over ok over
   * any failure status), or of the same rank and faster (two failures:
   * the new one); decided inside the statement, so concurrent writers
   * keep the better row whatever their order */
  CLATTN__UPSERT_BETTER
} clattn__upsert;

/* Insert the row of e's key, or update the stored one as mode says.
 * *changed (may be NULL): 0 when nothing was written, 1 when a new row was
 * inserted, 2 when the stored row was replaced. */
clattn_status clattn__db_upsert_tune(clattn_db *db, const clattn_tune_entry *e,
                                     clattn__upsert mode, int *changed);

/* How a struct field is stored. */
typedef enum clattn__col_type {
  CLATTN_COL_TEXT,   /* char[size], NUL-terminated */
  CLATTN_COL_SOURCE, /* clattn_profile_source, stored as int */
  CLATTN_COL_INT,
  CLATTN_COL_UINT,
  CLATTN_COL_U64,  /* unsigned long long */
  CLATTN_COL_SIZE, /* size_t */
  CLATTN_COL_REAL  /* double */
} clattn__col_type;

/* One struct field and its column (same name). */
typedef struct clattn__col {
  const char *name;
  clattn__col_type type;
  size_t off, size;
} clattn__col;

/* The fields of clattn_tune_entry in column order: the one table that the
 * tuning table's SQL and the JSON export and import are generated from.
 * *n gets its length. */
const clattn__col *clattn__db_tune_cols(int *n);

/* Record a printf-style message on db and return st. */
clattn_status clattn__db_fail(clattn_db *db, clattn_status st, const char *fmt,
                              ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Check db is a live handle and clear its message: CLATTN_ERR_INVALID_ARG
 * for NULL, CLATTN_ERR_MISUSE for a dead handle. */
clattn_status clattn__db_check(clattn_db *db);

/* clattn_db_put_tune (CLATTN__UPSERT_REPLACE), clattn_db_list_tune,
 * clattn_tune_entry_json and clattn_db_put_bench on the library's own whole
 * structs (the public ones read and write the caller's versioned ones). */
clattn_status clattn__db_put_tune(clattn_db *db, const clattn_tune_entry *e);
clattn_status clattn__db_list_tune(clattn_db *db, const char *fingerprint,
                                   const char *kernel, const char *shape_class,
                                   clattn_tune_entry **out, int *n);
/* The GEMM rates of the device `fingerprint` from its tuning rows
 * (db/gemm_rates.c): at most cap into rates, the largest m n k first, *n
 * of them.  Errors: db, CLATTN_ERR_NOMEM. */
clattn_status clattn__db_gemm_rates(clattn_db *db, const char *fingerprint,
                                    clattn_gemm_rate *rates, int cap, int *n);
size_t clattn__tune_entry_json(const clattn_tune_entry *e, char *buf,
                               size_t cap);
clattn_status clattn__db_put_bench(clattn_db *db, const clattn_bench_entry *e);

/* A public list's checks: a live db, out and n set, a caller's row size
 * (entry_size); *out set to NULL.  Failures recorded on db. */
clattn_status clattn__db_list_args(clattn_db *db, size_t entry_size, void *out,
                                   const int *n);
/* A list's n rows of the library's struct (own_size bytes each, freed
 * here) as the caller's rows of entry_size bytes (base/versioned.h) in a
 * new *out, when rc (the listing's status) is CLATTN_OK; returns rc, or
 * CLATTN_ERR_NOMEM recorded on db. */
clattn_status clattn__db_rows_out(clattn_db *db, clattn_status rc, void *rows,
                                  size_t own_size, int n, size_t entry_size,
                                  void **out);
/* A public write's row: the caller's versioned struct read into own
 * (own_size bytes of type `type`) on a live db; failures recorded on db. */
clattn_status clattn__db_row_in(clattn_db *db, void *own, size_t own_size,
                                const void *caller, const char *type);

/* One write transaction over several calls (BEGIN IMMEDIATE, so a second
 * writer waits for the busy timeout instead of failing at COMMIT).  On any
 * failure between begin and commit, call rollback (safe when no
 * transaction is open; it keeps db's message). */
clattn_status clattn__db_begin(clattn_db *db);
clattn_status clattn__db_commit(clattn_db *db);
void clattn__db_rollback(clattn_db *db);

/* The current UTC time as ISO 8601 ("2025-01-31T12:00:00Z"), the format of
 * the `updated` columns. */
void clattn__db_iso_now(char *buf, size_t cap);

/* The database path clattn_db_open uses for NULL: $CLATTN_DB, else
 * $XDG_DATA_HOME/clattn/tuning.db, else $HOME/.local/share/clattn/tuning.db;
 * malloc'ed, NULL when none can be formed (or out of memory). */
char *clattn__db_default_path(void);

/* How well the model predicts a device: the median of |predicted /
 * measured - 1| over its stored clattn model check rows whose call `take`
 * accepts (take(call, arg) nonzero; NULL: every row) (*n of them; 0 and 0
 * when there are none). */
clattn_status
clattn__db_model_error(clattn_db *db, const char *fingerprint,
                       int (*take)(const char *call, const void *arg),
                       const void *arg, double *median_abs_err, int *n);

/* Whether a tuning row is valid (db_tune.c): every text field UTF-8
 * without control characters (message may hold newlines and tabs); the key
 * fields, status and date present; `updated` a real UTC date from 2000 on, at
 * most a day ahead of this clock; a known status; times finite and >= 0 (an ok
 * row's median > 0); tune_method >= 0; with check_params, params its family
 * (the registry) can plan for one of its shapes, Xgemm's NAME=count fields, or
 * for a kernel the registry does not know, params text that parses.
 * CLATTN_ERR_INVALID_ARG with "\"field\": reason" in why. */
clattn_status clattn__tune_entry_check(const clattn_tune_entry *e,
                                       int check_params, char *why, size_t cap);
/* NULL when the at most n bytes at s (to a NUL) are UTF-8 without control
 * characters (lines: newline and tab allowed), else what is wrong. */
const char *clattn__text_check(const char *s, size_t n, int lines);

/* "YYYY-MM-DDTHH:MM:SSZ", a real calendar date from 2000 on and at most a
 * day ahead of this clock: 0, else -1 with the reason in why (db_tune.c). */
int clattn__db_date_check(const char *s, char *why, size_t cap);

/* The default name of a bench run, "<UTC ISO date> <hostname> <pid>"
 * (db_bench.c). */
void clattn__bench_run_name(char *buf, size_t cap);

/* Call row(e, user) for each "ok" tuning row of the device fingerprint, or
 * of another device of the same vendor and arch (none when arch is ""),
 * ordered by fingerprint, kernel, shape class and time: the rows the
 * run-time choice can use, found through the table's indexes.  A nonzero
 * return from row stops the scan (CLATTN_OK). */
clattn_status clattn__db_scan_usable(clattn_db *db, const char *fingerprint,
                                     const char *vendor, const char *arch,
                                     int (*row)(const clattn_tune_entry *e,
                                                void *user),
                                     void *user);

/* ---- json_import.c: the tuning-file parser, without a database */

/* Receives each parsed and checked entry (line: where it starts); a
 * status other than CLATTN_OK (out of memory) stops the parse. */
typedef clattn_status (*clattn__tune_row_fn)(const clattn_tune_entry *e,
                                             int line, void *user);
/* Parse text (len bytes, NUL-terminated) in clattn_db_export's format,
 * strictly and with the import's checks (clattn__tune_entry_check with
 * params); name is the file in messages.  On failure msg (cap bytes) says
 * "NAME:LINE:COL: ..." and nothing more is handed to row. */
clattn_status clattn__tune_json_parse(const char *name, const char *text,
                                      size_t len, clattn__tune_row_fn row,
                                      void *user, char *msg, size_t cap);
/* Read all of path ("-": stdin) into a malloc'ed NUL-terminated buffer;
 * CLATTN_ERR_IO or CLATTN_ERR_NOMEM with the reason in msg. */
clattn_status clattn__tune_json_slurp(const char *path, char **out, size_t *len,
                                      char *msg, size_t cap);
/* The same for a regular file only (a FIFO or device is refused without
 * blocking) of at most max bytes. */
clattn_status clattn__tune_json_slurp_regular(const char *path, size_t max,
                                              char **out, size_t *len,
                                              char *msg, size_t cap);

/* ---- json_export.c */

/* Write the at most n bytes at s (to a NUL) as a JSON string, as the
 * export escapes them; 0, or -1 on a write error (errno set). */
int clattn__json_fput_str(FILE *f, const char *s, size_t n);

/* ---- t4_export.c: Kernel Tuner's T4 results format */

/* Write rows as one T4 document (schema 1.0.0) to f; 0, or -1 on a write
 * error (errno set). */
int clattn__t4_write(FILE *f, const clattn_tune_entry *rows, int n);

/* ---- shipped.c: the tuning data embedded in the library */

/* The shipped rows in use (every one valid, "ok" and of its kernel's
 * current tuning method), read once; *note (may be NULL) says where they
 * came from, or why there are none ($CLATTN_SHIPPED off, a file that does
 * not parse). */
const clattn_tune_entry *clattn__shipped_rows(int *n, const char **note);
/* How a shipped row matches a device: 2 same vendor and arch, 1 both CPUs
 * of the same vector ISA class (another arch), 0 not. */
int clattn__shipped_match(const clattn_tune_entry *r, const char *vendor,
                          const char *arch, int is_cpu);

#endif /* CLATTN_DB_H */
