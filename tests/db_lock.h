/* db_lock.h - the database tests' own SQLite: another process's lock on
 * a tuning database (how readers and writers wait), the schema version. */
#ifndef CLATTN_TESTS_DB_LOCK_H
#define CLATTN_TESTS_DB_LOCK_H

#include <sys/types.h>

/* A child that holds a lock on path until the parent closes *release:
 * wal 0, the file in rollback-journal mode under BEGIN EXCLUSIVE (readers
 * are locked out); wal 1, a write transaction in WAL mode (as an import
 * holds one).  Returns the child's pid once the lock is held; fails the
 * test when it cannot be taken. */
pid_t tdb_hold_lock(const char *path, int wal, int *release);

/* Let the child go and check that it exited cleanly. */
void tdb_release_lock(pid_t pid, int release);

/* The file's schema version (PRAGMA user_version). */
int tdb_user_version(const char *path);

#endif
