/* clblast_status.h - internal: CLBlast's status codes by name, one table
 * for the layers and the Xgemm tuner so that a failure reads the same in
 * either. */
#ifndef CLATTN_BASE_CLBLAST_STATUS_H
#define CLATTN_BASE_CLBLAST_STATUS_H

#include <clblast_c.h>

/* The enumerator's name of s ("CLBlastInvalidDimension"); OpenCL's own
 * codes, which CLBlast passes through, by clattn_cl_errstr. */
const char *clattn__clblast_status_str(CLBlastStatusCode s);

#endif /* CLATTN_BASE_CLBLAST_STATUS_H */
