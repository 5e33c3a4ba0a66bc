/* gemm_rate.h - internal: a GEMM's FMA lanes priced at the rate the
 * profile holds for its m, n and k (clattn_profile.gemm_rates, measured by
 * tuning), else left to the FMA peak (fma_gflops 0). */
#ifndef CLATTN_MODEL_GEMM_RATE_H
#define CLATTN_MODEL_GEMM_RATE_H

#include "model/model.h"

#include <math.h>

/* The profile's rate of an m x n x k GEMM in GFLOP/s; 0 when it holds
 * none (a count out of range reads as none, a rate that is not a
 * positive finite number as none). */
static inline double clattn__gemm_rate(const clattn_profile *p, long m, long n,
                                       long k) {
  const int count = p ? p->n_gemm_rates : 0;
  for (int i = 0; i < count && i < CLATTN_PROFILE_GEMM_RATES; i++) {
    const clattn_gemm_rate *r = &p->gemm_rates[i];
    if (r->m == m && r->n == n && r->k == k && r->gflops > 0 &&
        isfinite(r->gflops))
      return r->gflops;
  }
  return 0.0;
}

/* Kernel c of out (an m x n x k GEMM) priced at the profile's rate of
 * that shape, where it holds one. */
static inline void clattn__model_gemm_rate(clattn_prediction *out,
                                           const clattn_cost *c,
                                           const clattn_profile *p, long m,
                                           long n, long k) {
  clattn__model_core(out, c)->fma_gflops = clattn__gemm_rate(p, m, n, k);
}

#endif /* CLATTN_MODEL_GEMM_RATE_H */
