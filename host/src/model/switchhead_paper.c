/* switchhead_paper.c - the SwitchHead paper's own accounting of one
 * attention layer and one sequence (clattn_model_switchhead_paper): the
 * formulas of RobertCsordas/moe_attention paper/common.py (spec 6.3),
 * which reproduce the MACs and memory figures of the paper's Tables 1, 2
 * and 7 exactly (spec 10), not its Eq. 13.  Pure arithmetic: no OpenCL,
 * no context. */
#include "clattn_tools.h"
#include "base/versioned.h"

#include <limits.h>
#include <stddef.h>

/* A sum of products of non-negative factors that notes, instead of
 * wrapping, a result beyond long long: the paper's shapes are far from it,
 * but the function takes any int. */
typedef struct acc {
  long long sum;
  int overflow;
} acc;

static void term(acc *a, const long long *f, size_t n) {
  long long p = 1;
  for (size_t i = 0; i < n; i++) {
    if (f[i] != 0 && p > LLONG_MAX / f[i]) {
      a->overflow = 1;
      return;
    }
    p *= f[i];
  }
  if (p > LLONG_MAX - a->sum)
    a->overflow = 1;
  else
    a->sum += p;
}

/* TERM(&a, x, y, z) adds x*y*z to a. */
#define TERM(a, ...)                                                           \
  term((a), (const long long[]){__VA_ARGS__},                                  \
       sizeof((const long long[]){__VA_ARGS__}) / sizeof(long long))

/* Errors: CLATTN_ERR_INVALID_ARG for a NULL argument; CLATTN_ERR_SHAPE for
 * heads, head_dim, d_model or seq_len below 1, context_blocks or experts
 * below 0, topk outside 1..experts (experts >= 1), or a count beyond long
 * long.  *macs and *mem_floats are 0 on failure. */
clattn_status clattn_model_switchhead_paper(const clattn_switchhead_paper *in,
                                            long long *macs,
                                            long long *mem_floats) {
  clattn_switchhead_paper own;
  char why[128];
  const clattn_switchhead_paper *c = &own;
  if (macs)
    *macs = 0;
  if (mem_floats)
    *mem_floats = 0;
  if (in == NULL || macs == NULL || mem_floats == NULL)
    return CLATTN_ERR_INVALID_ARG;
  clattn_status rc = clattn__struct_in(
      &own, sizeof own, in, "clattn_switchhead_paper", why, sizeof why);
  if (rc)
    return rc;
  if (c->heads < 1 || c->head_dim < 1 || c->d_model < 1 || c->seq_len < 1 ||
      c->context_blocks < 0 || c->experts < 0)
    return CLATTN_ERR_SHAPE;
  if (c->experts > 0 && (c->topk < 1 || c->topk > c->experts))
    return CLATTN_ERR_SHAPE;
  const long long H = c->heads, dh = c->head_dim, D = c->d_model;
  const long long T = c->seq_len, E = c->experts, k = c->topk;
  /* C = cb + 1 chunks of T keys: the current one and cb cached ones */
  const long long C = (long long)c->context_blocks + 1;
  acc m = {0, 0}, f = {0, 0};
  /* the attention matrix, computed (QK^T, AV) and stored (before and
   * after the softmax) */
  TERM(&m, 2, H, dh, T, T, C);
  TERM(&f, 2, H, T, T, C);
  /* the memory of Q, K, V and the attention output: the same for both */
  TERM(&f, 4, H, dh, T);
  if (E == 0) {
    TERM(&m, 4, D, H, dh, T); /* Q, K, V, O */
    if (!c->rope) {
      /* the XL positional projection of C T positions */
      TERM(&m, 2, H, D, T, dh, C);
      TERM(&f, 2, H, T, dh, C);
    }
  } else {
    /* Q, K dense; V, O over k experts; their gate-weighted sums */
    TERM(&m, 2 * k + 2, D, H, dh, T);
    TERM(&m, 2, H, k, T, dh);
    /* selection: common.py counts E logits a position, not H E (spec 6.3
     * discrepancy (a)), over the C T positions */
    TERM(&m, 2, E, D, T, C);
    TERM(&f, 2, E, T, C);
    if (!c->rope) {
      /* common.py counts T positions here, not the C T the code projects
       * (spec 6.3 discrepancy (b)) */
      TERM(&m, 2, H, D, T, dh);
      TERM(&f, 2, H, T, dh);
    }
  }
  if (m.overflow || f.overflow)
    return CLATTN_ERR_SHAPE;
  *macs = m.sum;
  *mem_floats = f.sum;
  return CLATTN_OK;
}
