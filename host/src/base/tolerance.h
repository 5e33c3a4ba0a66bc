/* tolerance.h - the one accuracy bar of a kernel's output against the
 * double-precision reference, shared by the tests and `clattn run --check`
 * so that both pass and fail the same outputs.
 *
 * The metric is rel = max_i |got_i - ref_i| / max(max_i |ref_i|, 1e-30),
 * the worst absolute error normalised by the tensor's largest reference
 * magnitude. */
#ifndef CLATTN_BASE_TOLERANCE_H
#define CLATTN_BASE_TOLERANCE_H

#include "clattn_tools.h"

/* Relative tolerance of storage type dt:
 *  - f32:  1e-4.  The requirement: float32 storage, float32
 *    arithmetic, against the double reference.
 *  - f16:  1e-3.  The reference runs on the f16-ROUNDED inputs, so input
 *    rounding is not an error of the kernel; what remains is the rounding of
 *    the output to f16 (half an ulp = 2^-11 ~ 4.9e-4 of |o| <= max|ref|)
 *    plus float32 arithmetic (~1e-6): 1e-3 leaves a 2x margin.
 *  - bf16: 8e-3.  Same argument with bf16's 8-bit significand: the output
 *    rounding is at most half an ulp = 2^-8 ~ 3.9e-3 of |o|; 8e-3 leaves a
 *    2x margin.
 *  - int8 (a quantized cache written by an append): 1.2e-2.  A value whose
 *    x / scale lands within float32 rounding of a half step may round the
 *    other way from the reference's double: one step of 127 (7.9e-3) of the
 *    row's largest, with a 1.5x margin.
 * 0 for an unknown dtype, which no output can meet. */
static inline double clattn__tolerance(clattn_dtype dt) {
  switch (dt) {
  case CLATTN_F32:
    return 1e-4;
  case CLATTN_F16:
    return 1e-3;
  case CLATTN_BF16:
    return 8e-3;
  case CLATTN_I8:
    return 1.2e-2;
  }
  return 0.0;
}

#endif /* CLATTN_BASE_TOLERANCE_H */
