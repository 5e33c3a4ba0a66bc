/* db.h - internal: what the tuner and the import need of the database
 * beyond the public clattn_db_* functions. */
#ifndef CLATTN_DB_H
#define CLATTN_DB_H

#include "clattn.h"

/* Insert the row of e's key, or update the stored one: always (only_newer
 * 0) or only when e.updated is later than the stored row's (only_newer 1,
 * the import's merge).  *changed (may be NULL): 1 when a row was written. */
clattn_status clattn__db_upsert_tune(clattn_db *db, const clattn_tune_entry *e,
                                     int only_newer, int *changed);

/* The database path clattn_db_open uses for NULL: $CLATTN_DB, else
 * $XDG_DATA_HOME/clattn/tuning.db, else $HOME/.local/share/clattn/tuning.db;
 * malloc'ed, NULL when none can be formed (or out of memory). */
char *clattn__db_default_path(void);

#endif /* CLATTN_DB_H */
