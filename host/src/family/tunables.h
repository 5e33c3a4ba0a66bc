/* tunables.h - internal: a family's tunables, declared in its room as a
 * table (name, range, what automatic means, meaning), and the generic code
 * that reads and writes a call's values of them: the params text of the
 * tuning database, the overrides and the CLI, the public clattn_params,
 * and the tuner's spaces.
 *
 * A call's values are a clattn__params (runtime.h): value i is the
 * family's tunable i, 0 leaves it to the plan.  A family reads them
 * through a struct of ints in its table's order (clattn__tunables_get),
 * so its plan names its own fields. */
#ifndef CLATTN_TUNABLES_H
#define CLATTN_TUNABLES_H

#include "runtime/runtime.h"

#include <string.h>

/* What generic code may know of a tunable. */
enum {
  /* the work-group size: when automatic, the launch may lower it to what
   * the compiled kernel allows */
  CLATTN__TUNABLE_WG = 1,
  /* selects the kernel: the model compares only candidates of the
   * default's kernel (it has no term for what a device pays for local
   * memory and barriers) */
  CLATTN__TUNABLE_KERNEL = 2
};

typedef struct clattn__tunable {
  const char *name;      /* in the params text: "keys" */
  int min, max;          /* the values accepted besides 0 (automatic) */
  const char *automatic; /* what 0 gives: "by the device" */
  const char *meaning;   /* one line */
  unsigned flags;        /* CLATTN__TUNABLE_* */
} clattn__tunable;

struct clattn__family;

/* Fill a family's view (a struct of `size` bytes of ints in its table's
 * order) from p (NULL: all automatic), and the values from a view. */
static inline void clattn__tunables_get(void *view, size_t size,
                                        const clattn__params *p) {
  if (p != NULL)
    memcpy(view, p->v, size);
  else
    memset(view, 0, size);
}
static inline clattn__params clattn__tunables_put(const void *view,
                                                  size_t size) {
  clattn__params p;
  memset(&p, 0, sizeof p);
  memcpy(p.v, view, size);
  return p;
}
/* A family's view type matches its table (checked where it is defined). */
#define CLATTN__TUNABLES_MATCH(view, table)                                    \
  _Static_assert(sizeof(view) ==                                               \
                         sizeof(table) / sizeof((table)[0]) * sizeof(int) &&   \
                     sizeof(view) <= sizeof(clattn__params),                   \
                 #view ": one int per entry of " #table)

/* F's values from an array of one per tunable (a tuning space's
 * candidate). */
clattn__params clattn__params_of(const struct clattn__family *F,
                                 const int *values);
/* Whether any value of p (may be NULL) is set. */
int clattn__params_any(const clattn__params *p);
/* The value in p (may be NULL) of F's first tunable with flag
 * (CLATTN__TUNABLE_*); 0 (automatic) when F has none. */
int clattn__params_flagged(const struct clattn__family *F,
                           const clattn__params *p, unsigned flag);

/* p as "name=value ..." in F's names, its set values in table order (the
 * tuning database's normal form: a value the family leaves at 0 is not
 * written, so rows stay the same when a family gains a tunable). */
void clattn__params_format(const struct clattn__family *F,
                           const clattn__params *p, char *buf, size_t cap);
/* "name=value ..." (spaces, commas or tabs between) in F's names into
 * *p, the fields not named left as they are; an unknown name, a bad or
 * out-of-range value is CLATTN_ERR_INVALID_ARG with the reason.  A name of
 * clattn_params' first fields that F lacks is accepted with the value 0
 * (unset), so that rows written before the families had their own names
 * read. */
clattn_status clattn__params_parse(const struct clattn__family *F,
                                   const char *text, clattn__params *p,
                                   char *why, size_t cap);
/* The caller's public params (the library's whole struct; NULL: none) in
 * F's layout: its named fields by name, then its text. */
clattn_status clattn__params_in(const struct clattn__family *F,
                                const clattn_params *pub, clattn__params *out,
                                char *why, size_t cap);
/* F's tunable names, "variant, rows, keys" (for messages). */
void clattn__tunable_names(const struct clattn__family *F, char *buf,
                           size_t cap);

#endif /* CLATTN_TUNABLES_H */
