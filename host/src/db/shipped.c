/* shipped.c - the tuning data shipped inside the library
 * (clattn_shipped_*): host/data/shipped.json, embedded at build time, or
 * the file $CLATTN_SHIPPED names, parsed once by the import's parser
 * (clattn__tune_json_parse, so with put_tune's checks) into constant rows
 * that the choice (choice/choice.c) and CLBlast's Xgemm
 * (tune/gemm_apply.c) match to a device by vendor and arch, else, for a
 * CPU, by vector ISA class (base/cpu_isa.c). */
#include "base/cpu_isa.h"
#include "base/versioned.h"
#include "db/db.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char clattn__shipped_json[];
extern const size_t clattn__shipped_json_len;

/* $CLATTN_SHIPPED: a regular file (a FIFO would block the first call) of
 * at most this size, far above any tuning data, read before parsing. */
#define SHIPPED_MAX_BYTES ((size_t)64 << 20)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct {
  clattn_tune_entry *e;
  int n, cap;
  int passed_over; /* rows not "ok" or of an older tuning method */
  int nomem;
  char note[1024];
} shipped;

static clattn_status keep(const clattn_tune_entry *e, int line, void *user) {
  (void)line;
  (void)user;
  if (strcmp(e->status, "ok") != 0 || !clattn__tune_row_current(e)) {
    shipped.passed_over++;
    return CLATTN_OK;
  }
  if (shipped.n == shipped.cap) {
    int nc = shipped.cap ? 2 * shipped.cap : 64;
    clattn_tune_entry *g = realloc(shipped.e, (size_t)nc * sizeof *g);
    if (g == NULL)
      return CLATTN_ERR_NOMEM;
    shipped.e = g;
    shipped.cap = nc;
  }
  shipped.e[shipped.n++] = *e;
  return CLATTN_OK;
}

static void load(void) {
  const char *env = getenv("CLATTN_SHIPPED");
  char msg[1024];
  char *text = NULL;
  size_t len = 0;
  const char *name = "the embedded shipped data";
  clattn_status rc;
  if (env && (!strcmp(env, "0") || !strcmp(env, "off"))) {
    snprintf(shipped.note, sizeof shipped.note,
             "shipped data off ($CLATTN_SHIPPED=%s)", env);
    return;
  }
  if (env && *env) {
    name = env;
    rc = clattn__tune_json_slurp_regular(env, SHIPPED_MAX_BYTES, &text, &len,
                                         msg, sizeof msg);
    if (rc != CLATTN_OK) {
      shipped.nomem = rc == CLATTN_ERR_NOMEM;
      snprintf(shipped.note, sizeof shipped.note,
               "no shipped data: $CLATTN_SHIPPED: %.900s", msg);
      return;
    }
  }
  rc = clattn__tune_json_parse(name, text ? text : clattn__shipped_json,
                               text ? len : clattn__shipped_json_len, keep,
                               NULL, msg, sizeof msg);
  free(text);
  if (rc != CLATTN_OK) {
    /* all or nothing, as the import: a file that does not parse is no
     * data to trust in part */
    free(shipped.e);
    shipped.e = NULL;
    shipped.n = shipped.cap = 0;
    shipped.nomem = rc == CLATTN_ERR_NOMEM;
    snprintf(shipped.note, sizeof shipped.note, "no shipped data: %.900s", msg);
    return;
  }
  int k = snprintf(shipped.note, sizeof shipped.note,
                   "%d shipped rows from %.600s", shipped.n, name);
  if (shipped.passed_over > 0 && k > 0 && (size_t)k < sizeof shipped.note)
    snprintf(shipped.note + k, sizeof shipped.note - (size_t)k,
             " (%d not ok or of an older tuning method passed over)",
             shipped.passed_over);
}

const clattn_tune_entry *clattn__shipped_rows(int *n, const char **note) {
  pthread_once(&once, load);
  *n = shipped.n;
  if (note)
    *note = shipped.note;
  return shipped.e;
}

int clattn__shipped_match(const clattn_tune_entry *r, const char *vendor,
                          const char *arch, int is_cpu) {
  if (arch == NULL || !arch[0])
    return 0;
  if (strcmp(r->vendor, vendor) == 0 && strcmp(r->arch, arch) == 0)
    return 2;
  if (!is_cpu)
    return 0;
  const char *mine = clattn__cpu_isa_class(arch);
  const char *theirs = clattn__cpu_isa_class(r->arch);
  /* an unknown name on a CPU is "other"; a row must be a known CPU */
  if (mine == NULL)
    mine = "other";
  return theirs != NULL && strcmp(mine, theirs) == 0 ? 1 : 0;
}

int clattn_shipped_count(void) {
  int n = 0;
  clattn__shipped_rows(&n, NULL);
  return n;
}

clattn_status clattn_shipped_row(int i, clattn_tune_entry *out) {
  int n = 0;
  char why[128];
  const clattn_tune_entry *e = clattn__shipped_rows(&n, NULL);
  if (out == NULL || clattn__struct_size(out) < sizeof(size_t))
    return CLATTN_ERR_INVALID_ARG;
  if (n == 0 && shipped.nomem)
    return CLATTN_ERR_NOMEM;
  if (i < 0 || i >= n)
    return CLATTN_ERR_NOT_FOUND;
  return clattn__struct_out(out, &e[i], sizeof e[i], "clattn_tune_entry", why,
                            sizeof why);
}
