/* db_impl.h - internal to host/src/db: the database handle and the
 * column mapping that the files of the database share (db.c opens and
 * migrates, db_profile.c and db_tune.c store rows). */
#ifndef CLATTN_DB_IMPL_H
#define CLATTN_DB_IMPL_H

#include "db/db.h"
#include "runtime/runtime.h"

#include <sqlite3.h>

#define CLATTN_DB_MAGIC 0x636c6462u /* "cldb" */

struct clattn_db {
  unsigned magic;
  sqlite3 *h;
  char *path;
  char errmsg[CLATTN_ERRMSG_MAX];
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
