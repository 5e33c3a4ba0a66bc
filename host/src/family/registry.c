/* registry.c - every kernel family, one line each, and the former names
 * of families that absorbed others.  A new family is a new room (its files
 * in family/) and one line here. */
#include "family/family.h"

#include <string.h>

static const clattn__family *const families[] = {
    &clattn__family_prefill,          &clattn__family_decode,
    &clattn__family_append,           &clattn__family_talking_heads,
    &clattn__family_th_decode,        &clattn__family_efficient,
    &clattn__family_efficient_decode, &clattn__family_efficient_append,
    &clattn__family_super_values,     &clattn__family_cvmm,
    &clattn__family_projection,       &clattn__family_paged_append,
    &clattn__family_varlen,           &clattn__family_paged_prefill,
    &clattn__family_paged_decode,
};

enum { COUNT = sizeof families / sizeof families[0] };

/* A family's former names: tuning rows, $CLATTN_PARAMS keys, shape-text
 * calls and CLI words that still carry one read as the family's.  The
 * talking-heads append became the append family with its own key and
 * value head counts. */
static const struct {
  const char *name;
  const clattn__family *family;
} aliases[] = {
    {"talking-heads-append", &clattn__family_append},
};

int clattn__family_count(void) { return COUNT; }

const clattn__family *clattn__family_at(int i) {
  return i >= 0 && i < COUNT ? families[i] : NULL;
}

const clattn__family *clattn__family_find(const char *name) {
  for (int i = 0; name && i < COUNT; i++)
    if (strcmp(families[i]->name, name) == 0)
      return families[i];
  for (size_t i = 0; name && i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp(aliases[i].name, name) == 0)
      return aliases[i].family;
  return NULL;
}

int clattn__family_index(const clattn__family *f) {
  for (int i = 0; i < COUNT; i++)
    if (families[i] == f)
      return i;
  return -1;
}
