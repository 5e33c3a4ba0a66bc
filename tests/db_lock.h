/* db_lock.h - the database tests' own SQLite: another process's lock on
 * a tuning database (how readers and writers wait), the schema version and
 * application id, files built from SQL, a file's bytes. */
#ifndef CLATTN_TESTS_DB_LOCK_H
#define CLATTN_TESTS_DB_LOCK_H

#include <stddef.h>
#include <sys/types.h>

/* clattn's PRAGMA application_id ("clAt"; docs/TUNING.md). */
#define TDB_CLATTN_APPLICATION_ID 0x636c4174

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

/* SQL that takes migration 10's columns (the in-core rates) out of the
 * profiles table: a test that makes a file of an older schema out of a
 * new one runs it before setting the old user_version. */
#define TDB_DROP_SCHEMA10                                                      \
  "ALTER TABLE profiles DROP COLUMN exp2_gops;"                                \
  "ALTER TABLE profiles DROP COLUMN cache_gbs;"                                \
  "ALTER TABLE profiles DROP COLUMN barrier_ns;"                               \
  "ALTER TABLE profiles DROP COLUMN launch_call_us;"                           \
  "ALTER TABLE profiles DROP COLUMN unhidden;"                                 \
  "ALTER TABLE profiles DROP COLUMN fp32_wg1_gflops;"                          \
  "ALTER TABLE profiles DROP COLUMN exp2_wg1_gops;"
/* The file's PRAGMA application_id. */
unsigned tdb_application_id(const char *path);
/* The schema version this library writes: that of a new database made at
 * path (removed after). */
int tdb_current_version(const char *path);

/* A new file at path (removed first, with its -wal, -shm and -journal)
 * from the SQL file sql_file (tests/data), then, with wal, in WAL mode as
 * clattn's writers leave a file. */
void tdb_from_sql(const char *path, const char *sql_file, int wal);
/* The same from SQL text. */
void tdb_exec_new(const char *path, const char *sql);
/* Run sql on the existing file at path. */
void tdb_exec(const char *path, const char *sql);
/* The bytes of a file (malloc'ed; *n its size); fails the test when it
 * cannot be read. */
unsigned char *tdb_bytes(const char *path, size_t *n);
/* Whether path holds exactly the n bytes at want. */
int tdb_same_bytes(const char *path, const unsigned char *want, size_t n);
/* Whether SQLite's side files of path (-wal, -shm, -journal) are absent. */
int tdb_no_side_files(const char *path);

#endif
