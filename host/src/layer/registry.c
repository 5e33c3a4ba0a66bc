/* registry.c - every layer kind, one line each, and the registry through
 * the public API (clattn_tools.h).  A new kind is a new room (its file in
 * layer/, with its public create) and one line here. */
#include "layer/layer.h"

#include <string.h>

static const clattn__layer_kind *const kinds[] = {
    &clattn__layer_gqa,       &clattn__layer_th,    &clattn__layer_optimised,
    &clattn__layer_efficient, &clattn__layer_super, &clattn__layer_sh,
};

enum { COUNT = sizeof kinds / sizeof kinds[0] };

int clattn__layer_kind_count(void) { return COUNT; }

const clattn__layer_kind *clattn__layer_kind_at(int i) {
  return i >= 0 && i < COUNT ? kinds[i] : NULL;
}

const clattn__layer_kind *clattn__layer_kind_find(const char *name) {
  for (int i = 0; name && i < COUNT; i++)
    if (strcmp(kinds[i]->name, name) == 0)
      return kinds[i];
  return NULL;
}

int clattn_layer_kind_count(void) { return COUNT; }

const char *clattn_layer_kind_name(int i) {
  const clattn__layer_kind *K = clattn__layer_kind_at(i);
  return K ? K->name : NULL;
}

const char *clattn_layer_kind_summary(int i) {
  const clattn__layer_kind *K = clattn__layer_kind_at(i);
  return K ? K->summary : NULL;
}
