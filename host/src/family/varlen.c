/* varlen.c - the varlen family (a placeholder until its room is built: every
 * call is refused, and it is not in the registry). */
#include "family/family.h"

#include <stdio.h>

static clattn_status not_built(const void *desc, char *why, size_t cap) {
  (void)desc;
  snprintf(why, cap, "the varlen family is not built yet");
  return CLATTN_ERR_UNSUPPORTED;
}

const clattn__family clattn__family_varlen = {
    .name = "varlen",
    .nbufs = 6,
    .check = not_built,
};
