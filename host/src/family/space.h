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
  int sparse; /* its text leaves out values of 0 (a family's params text,
                 tunables.h) */
} clattn__space;

/* Add a candidate (values[ndims]); returns its index (an equal one's if
 * present), -1 out of memory. */
int clattn__space_add(clattn__space *s, const int *values);
void clattn__space_free(clattn__space *s);
/* "name=value ..." of candidate i. */
void clattn__space_format(const clattn__space *s, int i, char *buf, size_t cap);

/* A family's space: its tunables are the dimensions (family.h); candidate
 * i as values (runtime.h), and values as a candidate's. */
struct clattn__family;
void clattn__space_init_family(clattn__space *s, const struct clattn__family *F);
clattn__params clattn__space_params(const clattn__space *s, int i);

#endif /* CLATTN_SPACE_H */
