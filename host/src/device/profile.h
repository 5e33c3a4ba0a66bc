/* profile.h - internal: device profiles on the library's own whole structs
 * (the public functions of clattn_tools.h read and write the caller's
 * versioned ones, base/versioned.h). */
#ifndef CLATTN_PROFILE_H
#define CLATTN_PROFILE_H

#include "clattn_tools.h"

clattn_status clattn__profile_reported(clattn_ctx *ctx, clattn_profile *out);
clattn_status clattn__profile_for(clattn_ctx *ctx, clattn_db *db,
                                  clattn_profile *out);
clattn_status clattn__datasheet(int i, clattn_profile *out);
void clattn__profile_at_copy(clattn_profile *p, double copy_gbs);

#endif /* CLATTN_PROFILE_H */
