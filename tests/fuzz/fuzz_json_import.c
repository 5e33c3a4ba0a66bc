/* fuzz_json_import.c - clattn_db_import on arbitrary file contents: it
 * imports a file or refuses it with a status and a message, never crashes;
 * a refused import leaves the database exactly as it was (every row, as
 * clattn_tune_entry_json writes it), and importing an accepted file a
 * second time changes nothing. */
#include "fuzz_util.h"

#include "clattn_tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clattn_db *db;

/* Every row of the table as JSON lines (malloc'ed), the database's state. */
static char *snapshot(int *rows) {
  clattn_tune_entry *e = NULL;
  int n = 0;
  if (clattn_db_list_tune(db, NULL, NULL, NULL, sizeof *e, &e, &n) != CLATTN_OK)
    fuzz_fail("clattn_db_list_tune: %s", clattn_db_errmsg(db));
  size_t cap = (size_t)n * 16384 + 1, len = 0;
  char *s = malloc(cap);
  if (s == NULL)
    fuzz_fail("out of memory");
  s[0] = '\0';
  for (int i = 0; i < n; i++)
    len += clattn_tune_entry_json(&e[i], s + len, cap - len);
  clattn_free(e);
  *rows = n;
  return s;
}

static void open_db(void) {
  if (clattn_db_open(fuzz_scratch_path("tuning.db"), &db) != CLATTN_OK)
    fuzz_fail("clattn_db_open failed");
  /* One row the imports may replace or keep. */
  clattn_tune_entry e = {.size = sizeof(clattn_tune_entry)};
  strcpy(e.fingerprint, "fuzz0000");
  strcpy(e.device, "fuzz device");
  strcpy(e.kernel, "prefill");
  strcpy(e.shape_class, "f32 k64 v64 g1 bh8 n512 m512 c1");
  strcpy(e.params, "variant=1 rows=4 keys=64 wg=0 splits=0 prefetch=0");
  strcpy(e.status, "ok");
  strcpy(e.updated, "2025-01-01T00:00:00Z");
  e.median_s = 1e-3;
  if (clattn_db_put_tune(db, &e) != CLATTN_OK)
    fuzz_fail("clattn_db_put_tune: %s", clattn_db_errmsg(db));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (db == NULL)
    open_db();
  const char *path = fuzz_scratch_path("in.json");
  fuzz_write_file(path, data, size);
  int rows_before, rows_after;
  char *before = snapshot(&rows_before);
  int added = -1, updated = -1, unchanged = -1;
  clattn_status rc = clattn_db_import(db, path, &added, &updated, &unchanged);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", clattn_db_errmsg(db));
  char *after = snapshot(&rows_after);
  if (rc != CLATTN_OK) {
    if (!msg[0])
      fuzz_fail("import refused a file (%d) without a message", (int)rc);
    if (added || updated || unchanged)
      fuzz_fail("refused import counted rows: %d %d %d", added, updated,
                unchanged);
    if (rows_after != rows_before || strcmp(before, after) != 0)
      fuzz_fail("refused import (%s) changed the database: %d rows -> %d", msg,
                rows_before, rows_after);
  } else {
    if (added < 0 || updated < 0 || unchanged < 0 ||
        rows_after != rows_before + added)
      fuzz_fail("import: %d rows -> %d, added %d", rows_before, rows_after,
                added);
    /* Idempotent: the same file again changes nothing. */
    rc = clattn_db_import(db, path, &added, &updated, &unchanged);
    if (rc != CLATTN_OK || added || updated)
      fuzz_fail("second import of an accepted file: rc %d, added %d, "
                "updated %d (%s)",
                (int)rc, added, updated, clattn_db_errmsg(db));
    /* Keep the database small: start again from one row. */
    if (rows_after > 64) {
      clattn_db_close(db);
      db = NULL;
      remove(fuzz_scratch_path("tuning.db"));
      remove(fuzz_scratch_path("tuning.db-wal"));
      remove(fuzz_scratch_path("tuning.db-shm"));
    }
  }
  free(before);
  free(after);
  return 0;
}
