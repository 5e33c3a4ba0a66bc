/* db_impl.h - internal to host/src/db: the database handle, its schema and
 * the column mapping that the files of the database share (db.c opens,
 * schema.c migrates and recognises clattn's files, db_profile.c and
 * db_tune.c store rows). */
#ifndef CLATTN_DB_IMPL_H
#define CLATTN_DB_IMPL_H

#include "db/db.h"
#include "runtime/runtime.h"

#include <sqlite3.h>

#define CLATTN_DB_MAGIC 0x636c6462u /* "cldb" */

/* PRAGMA application_id of every clattn database ("clAt"), set when the
 * file is created or migrated; docs/TUNING.md. */
#define CLATTN_APPLICATION_ID 0x636c4174
/* The oldest schema a reader can use (the tuning table's columns of today;
 * later steps only add indexes, and the bench table, which a reader of an
 * older file lists as empty). */
#define MIN_READ_VERSION 6

struct clattn_db {
  unsigned magic;
  sqlite3 *h;
  char *path;
  char errmsg[CLATTN_ERRMSG_MAX];
  int version; /* the file's schema version (a reader's may be older) */
};

/* Rows are stored one column per struct field: a table of clattn__col
 * (db.h) maps the fields of a struct (profile, tuning entry) to its
 * columns. */
typedef clattn__col col;
#define C_TEXT CLATTN_COL_TEXT
#define C_SOURCE CLATTN_COL_SOURCE
#define C_INT CLATTN_COL_INT
#define C_UINT CLATTN_COL_UINT
#define C_U64 CLATTN_COL_U64
#define C_SIZE CLATTN_COL_SIZE
#define C_REAL CLATTN_COL_REAL

/* Record "<what>: <sqlite message> (database <path>)" and return
 * CLATTN_ERR_DB. */
clattn_status clattn__db_sql_fail(clattn_db *db, const char *what);
/* The same for a failed write or create, unless the file or its directory
 * cannot be written: then "cannot write database <path>: <directory or
 * file>: Read-only file system" (or "Permission denied"), the real cause
 * that SQLite reports as "unable to open database file" or "readonly". */
clattn_status clattn__db_write_fail(clattn_db *db, const char *what);
/* Run sql (no rows) on db; a failure recorded as clattn__db_write_fail's,
 * with what naming the step. */
clattn_status clattn__db_exec(clattn_db *db, const char *sql, const char *what);

/* ---- schema.c */

/* What a file's header and tables say (clattn__db_read_schema). */
typedef struct clattn__schema {
  unsigned application_id;
  int version;       /* PRAGMA user_version: the steps applied */
  char foreign[192]; /* why the file is not clattn's; "" when it is */
} clattn__schema;

/* The schema version this library writes (its number of steps). */
int clattn__db_schema_version(void);
/* Read the file's application id, version and, without the id, its
 * tables (a file of an older clattn holds only clattn's tables of its
 * version); reads only.  An SQLite code (a file that is not SQLite at all
 * is SQLITE_OK with s->foreign saying so). */
int clattn__db_read_schema(clattn_db *db, clattn__schema *s);
/* CLATTN_ERR_DB "PATH is not a clattn database (why)" when s->foreign is
 * set, else CLATTN_OK. */
clattn_status clattn__db_refuse_foreign(clattn_db *db, const clattn__schema *s);
/* Make the file clattn's current schema: refused if foreign or newer;
 * nothing written when it is current; else every missing step, the
 * application id and the version in one transaction (a failure leaves
 * the file as it was). */
clattn_status clattn__db_migrate(clattn_db *db);
/* A migration step run in the migration's transaction: every tuning row's
 * params in its family's normal form (family/tunables.h: the names of its
 * tunables, values of 0 left out); rows of kernels this library does not
 * know, or whose params do not read, stay as they are (db_tune.c). */
clattn_status clattn__db_migrate_tune_params(clattn_db *db);

/* Bind field c of the struct at obj to parameter i + 1 (an SQLite code). */
int clattn__db_bind_col(sqlite3_stmt *st, int i, const col *c, const void *obj);

/* Read result column i into field c of the struct at obj. */
void clattn__db_read_col(sqlite3_stmt *st, int i, const col *c, void *obj);

/* Every row of "SELECT <the ncols columns> <tail>", the non-NULL filters
 * bound to ?1 .. ?nfilters (a NULL filter binds NULL), read into a
 * malloc'ed array of row_size-byte structs through the column table;
 * what names the rows in messages.  The list functions' one reader. */
clattn_status clattn__db_select_rows(clattn_db *db, const col *cols, int ncols,
                                     const char *tail,
                                     const char *const *filters, int nfilters,
                                     size_t row_size, const char *what,
                                     void **out, int *n);

#endif /* CLATTN_DB_IMPL_H */
