/* schema.c - the database's schema: the migrations, one step per version,
 * the application id that marks a file as clattn's, and the check that a
 * file is clattn's before anything is written to it.
 *
 * PRAGMA user_version is the number of steps applied; `steps` below is
 * append-only: a change is a new step, never an edit of an old one.  All
 * the steps a file lacks run in one transaction with the application id and
 * the version, so a failure (or a crash) leaves the file as it was.
 *
 * Adding a step: append {NULL, your_function} (or {"SQL", NULL}) to
 * `steps`; the function runs inside the migration's transaction on db->h
 * and returns CLATTN_OK or a failure recorded with clattn__db_sql_fail (any
 * failure rolls the whole migration back).  Raise MIN_READ_VERSION
 * (db_impl.h) only if readers cannot use a file without the step. */
#include "db/db_impl.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ the steps */

typedef struct step {
  const char *sql;                     /* the step as SQL, or */
  clattn_status (*run)(clattn_db *db); /* as a function (sql NULL) */
} step;

static const step steps[] = {
    /* 1: device profiles */
    {"CREATE TABLE profiles ("
     " fingerprint TEXT PRIMARY KEY NOT NULL,"
     " source INTEGER NOT NULL,"
     " name TEXT NOT NULL, vendor TEXT NOT NULL, platform TEXT NOT NULL,"
     " driver TEXT NOT NULL, arch TEXT NOT NULL,"
     " is_cpu INTEGER NOT NULL, compute_units INTEGER NOT NULL,"
     " clock_mhz INTEGER NOT NULL, wave_width INTEGER NOT NULL,"
     " simds_per_cu INTEGER NOT NULL, global_mem_bytes INTEGER NOT NULL,"
     " local_mem_bytes INTEGER NOT NULL, max_wg INTEGER NOT NULL,"
     " has_fp16 INTEGER NOT NULL, has_subgroups INTEGER NOT NULL,"
     " bw_read_gbs REAL NOT NULL, bw_copy_gbs REAL NOT NULL,"
     " bw_triad_gbs REAL NOT NULL, fp32_gflops REAL NOT NULL,"
     " fp16_gflops REAL NOT NULL, local_gbs REAL NOT NULL,"
     " h2d_gbs REAL NOT NULL, d2h_gbs REAL NOT NULL,"
     " launch_us REAL NOT NULL, launch_pipelined_us REAL NOT NULL,"
     " note TEXT NOT NULL,"
     " updated TEXT NOT NULL,"
     " library_version TEXT NOT NULL);",
     NULL},
    /* 2: the device's last-level cache (the model's DRAM estimate) */
    {"ALTER TABLE profiles ADD COLUMN cache_bytes INTEGER NOT NULL DEFAULT 0;",
     NULL},
    /* 3: clattn model check results, next to the probe results */
    {"CREATE TABLE model_checks ("
     " id INTEGER PRIMARY KEY,"
     " fingerprint TEXT NOT NULL, call TEXT NOT NULL, bound TEXT NOT NULL,"
     " predicted_s REAL NOT NULL, measured_s REAL NOT NULL,"
     " gbs REAL NOT NULL, gflops REAL NOT NULL,"
     " roofline_fraction REAL NOT NULL,"
     " updated TEXT NOT NULL, library_version TEXT NOT NULL);"
     "CREATE INDEX model_checks_fp ON model_checks (fingerprint, call);",
     NULL},
    /* 4: autotuner results, one row per measured or rejected candidate */
    {"CREATE TABLE tuning ("
     " id INTEGER PRIMARY KEY,"
     " fingerprint TEXT NOT NULL, device TEXT NOT NULL, vendor TEXT NOT NULL,"
     " arch TEXT NOT NULL, driver TEXT NOT NULL,"
     " kernel TEXT NOT NULL, shape_class TEXT NOT NULL,"
     " params TEXT NOT NULL, status TEXT NOT NULL,"
     " median_s REAL NOT NULL, spread REAL NOT NULL,"
     " predicted_s REAL NOT NULL, max_err REAL NOT NULL,"
     " strategy TEXT NOT NULL, message TEXT NOT NULL,"
     " library_version TEXT NOT NULL, updated TEXT NOT NULL,"
     " UNIQUE (fingerprint, kernel, shape_class, params));"
     "CREATE INDEX tuning_class ON tuning (kernel, shape_class);",
     NULL},
    /* 5: the probe method of a measured profile (older rows: method 1) */
    {"ALTER TABLE profiles ADD COLUMN probe_method INTEGER NOT NULL "
     "DEFAULT 1;",
     NULL},
    /* 6: the tuner's method of a row (clattn_tune_method; older rows: 1) */
    {"ALTER TABLE tuning ADD COLUMN tune_method INTEGER NOT NULL DEFAULT 1;",
     NULL},
    /* 7: the run-time reader's lookup of a device's vendor and arch */
    {"CREATE INDEX tuning_device ON tuning (vendor, arch);", NULL},
    /* 8: benchmark rows of clattn bench (clattn_bench_entry), read by the
     * report per device and family */
    {"CREATE TABLE bench ("
     " id INTEGER PRIMARY KEY,"
     " fingerprint TEXT NOT NULL, device TEXT NOT NULL, vendor TEXT NOT NULL,"
     " arch TEXT NOT NULL, driver TEXT NOT NULL,"
     " family TEXT NOT NULL, shape TEXT NOT NULL, shape_class TEXT NOT NULL,"
     " impl TEXT NOT NULL, params TEXT NOT NULL,"
     " params_source TEXT NOT NULL, params_device TEXT NOT NULL,"
     " median_s REAL NOT NULL, spread REAL NOT NULL,"
     " flops REAL NOT NULL, bytes REAL NOT NULL,"
     " predicted_s REAL NOT NULL, roof_s REAL NOT NULL,"
     " bound TEXT NOT NULL, max_err REAL NOT NULL,"
     " run TEXT NOT NULL, library_version TEXT NOT NULL,"
     " updated TEXT NOT NULL,"
     " UNIQUE (fingerprint, family, shape, impl, run));"
     "CREATE INDEX bench_family ON bench (family, device);",
     NULL},
    /* 9: tuning rows' params in their family's own tunables (the names
     * of its table, values of 0 left out; db_tune.c) */
    {NULL, clattn__db_migrate_tune_params},
    /* 10: the probe's in-core rates (probe method 3; db_profile.c) */
    {"ALTER TABLE profiles ADD COLUMN exp2_gops REAL NOT NULL DEFAULT 0;"
     "ALTER TABLE profiles ADD COLUMN cache_gbs REAL NOT NULL DEFAULT 0;"
     "ALTER TABLE profiles ADD COLUMN barrier_ns REAL NOT NULL DEFAULT 0;"
     "ALTER TABLE profiles ADD COLUMN launch_call_us REAL NOT NULL DEFAULT 0;"
     "ALTER TABLE profiles ADD COLUMN unhidden REAL NOT NULL DEFAULT 0;"
     "ALTER TABLE profiles ADD COLUMN fp32_wg1_gflops REAL NOT NULL "
     "DEFAULT 0;"
     "ALTER TABLE profiles ADD COLUMN exp2_wg1_gops REAL NOT NULL DEFAULT 0;",
     NULL},
};
#define N_STEPS ((int)(sizeof steps / sizeof steps[0]))

int clattn__db_schema_version(void) { return N_STEPS; }

/* ---------------------------------------------------------- ownership */

/* Files of libraries before the application id (schemas 1 to 8) are
 * recognised by their tables, each created by the step given.  Frozen:
 * every file written since carries the id. */
enum { LEGACY_MAX_VERSION = 8 };
static const struct {
  const char *name;
  int since;
} legacy_tables[] = {
    {"profiles", 1}, {"model_checks", 3}, {"tuning", 4}, {"bench", 8}};
#define N_LEGACY ((int)(sizeof legacy_tables / sizeof legacy_tables[0]))

/* The objects of a file without the application id that are not one of
 * clattn's tables of its version: why it is not clattn's, into why. */
static void legacy_object(const char *type, const char *name, int version,
                          int *seen, char *why, size_t cap) {
  int known = 0;
  for (int i = 0; i < N_LEGACY && !strcmp(type, "table"); i++)
    known |= !strcmp(name, legacy_tables[i].name) &&
             legacy_tables[i].since <= version;
  if (known)
    ++*seen;
  else if (!why[0])
    snprintf(why, cap, "it holds the %s \"%.64s\", not one of clattn's", type,
             name);
}

/* Why a file without the application id is not one of clattn's older
 * ones ("" when it is): a version past the legacy ones, an object that is
 * not one of that version's tables, or one of them missing. */
static void legacy_check(int version, int seen, char *why, size_t cap) {
  int expected = 0;
  if (why[0])
    return;
  if (version > LEGACY_MAX_VERSION || version < 0) {
    snprintf(why, cap,
             "schema version %d without clattn's application id; clattn "
             "files before the id have versions 0 to %d",
             version, LEGACY_MAX_VERSION);
    return;
  }
  for (int i = 0; i < N_LEGACY; i++)
    expected += legacy_tables[i].since <= version;
  if (seen != expected)
    snprintf(why, cap,
             "it lacks tables of clattn's schema version %d (%d of %d "
             "present)",
             version, seen, expected);
}

int clattn__db_read_schema(clattn_db *db, clattn__schema *s) {
  /* one statement, so one snapshot: the header and the tables of one
   * moment, never a writer's migration half before and half after its
   * commit */
  static const char sql[] =
      "SELECT a.application_id, v.user_version, m.type, m.name"
      " FROM pragma_application_id AS a, pragma_user_version AS v"
      " LEFT JOIN sqlite_master AS m ON m.type IN ('table', 'view', 'trigger')"
      " AND m.name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY m.name";
  sqlite3_stmt *st = NULL;
  int seen = 0, rows = 0;
  memset(s, 0, sizeof *s);
  int r = sqlite3_prepare_v2(db->h, sql, -1, &st, NULL);
  while (r == SQLITE_OK || r == SQLITE_ROW) {
    if ((r = sqlite3_step(st)) != SQLITE_ROW)
      break;
    s->application_id = (unsigned)sqlite3_column_int64(st, 0);
    s->version = sqlite3_column_int(st, 1);
    const char *type = (const char *)sqlite3_column_text(st, 2);
    const char *name = (const char *)sqlite3_column_text(st, 3);
    if (type && name)
      legacy_object(type, name, s->version, &seen, s->foreign,
                    sizeof s->foreign);
    rows++;
  }
  sqlite3_finalize(st);
  if ((r & 0xff) == SQLITE_NOTADB) {
    snprintf(s->foreign, sizeof s->foreign, "SQLite: file is not a database");
    return SQLITE_OK;
  }
  if (r != SQLITE_DONE || rows == 0)
    return r == SQLITE_DONE ? SQLITE_CORRUPT : r;
  if (s->application_id == CLATTN_APPLICATION_ID) {
    s->foreign[0] = '\0'; /* clattn's own: its tables are its version's */
    return SQLITE_OK;
  }
  if (s->application_id != 0) {
    snprintf(s->foreign, sizeof s->foreign,
             "its SQLite application_id is 0x%08x, clattn's is 0x%08x",
             s->application_id, (unsigned)CLATTN_APPLICATION_ID);
    return SQLITE_OK;
  }
  legacy_check(s->version, seen, s->foreign, sizeof s->foreign);
  return SQLITE_OK;
}

clattn_status clattn__db_refuse_foreign(clattn_db *db,
                                        const clattn__schema *s) {
  if (!s->foreign[0])
    return CLATTN_OK;
  return clattn__db_fail(db, CLATTN_ERR_DB,
                         "%s is not a clattn database (%s); it was left as "
                         "it is",
                         db->path, s->foreign);
}

/* ---------------------------------------------------------- migration */

static clattn_status newer(clattn_db *db, int version) {
  return clattn__db_fail(db, CLATTN_ERR_DB,
                         "database %s has schema version %d; this library "
                         "(clattn %s) knows versions up to %d",
                         db->path, version, clattn_version(), N_STEPS);
}

/* The steps after the file's version, the id and the version, inside the
 * open transaction. */
static clattn_status apply_steps(clattn_db *db) {
  clattn__schema s;
  char what[64], sql[64];
  clattn_status rc;
  /* read again under the write lock: another writer may have migrated */
  if (clattn__db_read_schema(db, &s) != SQLITE_OK)
    return clattn__db_sql_fail(db, "reading the schema version");
  if ((rc = clattn__db_refuse_foreign(db, &s)) != CLATTN_OK)
    return rc;
  if (s.version > N_STEPS)
    return newer(db, s.version);
  for (int i = s.version; i < N_STEPS; i++) {
    snprintf(what, sizeof what, "schema migration %d", i + 1);
    rc = steps[i].sql ? clattn__db_exec(db, steps[i].sql, what)
                      : steps[i].run(db);
    if (rc != CLATTN_OK)
      return rc;
  }
  snprintf(sql, sizeof sql, "PRAGMA application_id = %d",
           (int)CLATTN_APPLICATION_ID);
  if ((rc = clattn__db_exec(db, sql, "setting the application id")) !=
      CLATTN_OK)
    return rc;
  snprintf(sql, sizeof sql, "PRAGMA user_version = %d", N_STEPS);
  return clattn__db_exec(db, sql, "setting the schema version");
}

clattn_status clattn__db_migrate(clattn_db *db) {
  clattn__schema s;
  clattn_status rc;
  if (clattn__db_read_schema(db, &s) != SQLITE_OK)
    return clattn__db_sql_fail(db, "reading the schema version");
  if ((rc = clattn__db_refuse_foreign(db, &s)) != CLATTN_OK)
    return rc;
  if (s.version > N_STEPS)
    return newer(db, s.version);
  if (s.version == N_STEPS && s.application_id == CLATTN_APPLICATION_ID)
    return CLATTN_OK; /* nothing to write: no write lock taken */
  rc = clattn__db_exec(db, "BEGIN IMMEDIATE", "starting the schema migration");
  if (rc != CLATTN_OK)
    return rc;
  rc = apply_steps(db);
  if (rc == CLATTN_OK)
    rc = clattn__db_exec(db, "COMMIT", "committing the schema migration");
  if (rc != CLATTN_OK && !sqlite3_get_autocommit(db->h))
    sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}
