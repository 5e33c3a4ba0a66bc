/* paged_prefill.c - the paged-prefill family (a placeholder until its room is
 * built: every call is refused, and it is not in the registry). */
#include "family/family.h"

#include <stdio.h>

static clattn_status not_built(const void *desc, char *why, size_t cap) {
  (void)desc;
  snprintf(why, cap, "the paged-prefill family is not built yet");
  return CLATTN_ERR_UNSUPPORTED;
}

const clattn__family clattn__family_paged_prefill = {
    .name = "paged-prefill",
    .nbufs = 9,
    .check = not_built,
};
