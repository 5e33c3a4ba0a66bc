/* clblast_status.c - CLBlast's status codes by name (clblast_status.h). */
#include "base/clblast_status.h"

#include "clattn_tools.h"

const char *clattn__clblast_status_str(CLBlastStatusCode s) {
  switch (s) {
#define E_(x)                                                                  \
  case x:                                                                      \
    return #x;
    E_(CLBlastSuccess)
    E_(CLBlastNotImplemented) E_(CLBlastInvalidMatrixA)
        E_(CLBlastInvalidMatrixB) E_(CLBlastInvalidMatrixC) E_(
            CLBlastInvalidVectorX) E_(CLBlastInvalidVectorY)
            E_(CLBlastInvalidDimension) E_(CLBlastInvalidLeadDimA) E_(
                CLBlastInvalidLeadDimB) E_(CLBlastInvalidLeadDimC)
                E_(CLBlastInvalidIncrementX) E_(CLBlastInvalidIncrementY) E_(
                    CLBlastInsufficientMemoryA) E_(CLBlastInsufficientMemoryB)
                    E_(CLBlastInsufficientMemoryC)
                        E_(CLBlastInsufficientMemoryX)
                            E_(CLBlastInsufficientMemoryY) E_(
                                CLBlastInsufficientMemoryTemp)
                                E_(CLBlastInvalidBatchCount) E_(
                                    CLBlastInvalidOverrideKernel)
                                    E_(CLBlastMissingOverrideParameter) E_(
                                        CLBlastInvalidLocalMemUsage)
                                        E_(CLBlastNoHalfPrecision) E_(
                                            CLBlastNoDoublePrecision)
                                            E_(CLBlastInvalidVectorScalar) E_(
                                                CLBlastInsufficientMemoryScalar)
                                                E_(CLBlastDatabaseError)
                                                    E_(CLBlastUnknownError) E_(
                                                        CLBlastUnexpectedError)
#undef E_
                                                        default : break;
  }
  /* The codes above -1000 are OpenCL's own numbers. */
  if ((int)s > -1000)
    return clattn_cl_errstr((cl_int)s);
  return "unknown CLBlast status";
}
