/* space.h - internal: a tuning space, the list of a family's valid
 * candidates (each a vector of values, one per named dimension), pruned by
 * the family's own plan before anything is compiled.  The families fill
 * it; the tuner's engine walks it. */
#ifndef CLATTN_SPACE_H
#define CLATTN_SPACE_H

#include "family/plan.h"

#define CLATTN_TUNE_MAX_DIMS 20

typedef struct clattn__space {
  int ndims;
  const char *dim[CLATTN_TUNE_MAX_DIMS]; /* names, as in the params text */
  int n;                                 /* valid candidates */
  int cap;
  int *val;   /* n * ndims values */
  int pruned; /* candidates rejected by constraints */
  int def;    /* index of the default candidate, -1 if none */
} clattn__space;

/* Add a candidate (values[ndims]); returns its index (an equal one's if
 * present), -1 out of memory. */
int clattn__space_add(clattn__space *s, const int *values);
void clattn__space_free(clattn__space *s);
/* "name=value ..." of candidate i. */
void clattn__space_format(const clattn__space *s, int i, char *buf, size_t cap);

/* Spaces of clattn_params (the fused kernels'): the dimensions are its
 * fields (clattn__param_names). */
void clattn__space_init_params(clattn__space *s);
/* Candidate i of such a space as params; values (CLATTN__NPARAMS of
 * them) as params, and params as values. */
clattn_params clattn__space_params(const clattn__space *s, int i);
clattn_params clattn__params_of(const int *values);
void clattn__params_values(const clattn_params *p, int *values);

#endif /* CLATTN_SPACE_H */
