/* layer.h - internal: the layer interface, smaller than a family's.  A
 * layer kind names its weights, the projections (GEMMs) around its core
 * and the core families the core calls; the layer's create, call path and
 * model read them here instead of spelling them out. */
#ifndef CLATTN_LAYER_H
#define CLATTN_LAYER_H

#include "family/family.h"

/* The activations a layer call moves between its steps: the input x, the
 * core's operands Q, K, V and output O, and the layer's output y. */
typedef enum clattn__layer_act {
  CLATTN__ACT_X,
  CLATTN__ACT_Q,
  CLATTN__ACT_K,
  CLATTN__ACT_V,
  CLATTN__ACT_O,
  CLATTN__ACT_Y,
  CLATTN__ACTS
} clattn__layer_act;

/* One projection: to[rows, cols] = from[rows, inner] W, W [inner, cols]. */
typedef struct clattn__projection {
  const char *name; /* "x*w_q", in messages and the model */
  int weight;       /* index of W among the layer's weights */
  clattn__layer_act from, to;
} clattn__projection;

enum { CLATTN__MAX_WEIGHTS = 8, CLATTN__MAX_PROJ = 8 };

typedef struct clattn__layer_kind {
  const char *name;
  int nweights;
  const char *const *weights; /* names, in the create call's order */
  /* Weight i's [inner, cols] (row-major) for the layer's description. */
  void (*weight_shape)(const void *desc, int i, long *inner, long *cols);
  /* The projections: the first nproj_in before the core, the rest after
   * it (they read the core's output). */
  int nproj, nproj_in;
  const clattn__projection *proj;
  /* The core families: a block of queries, one token over the cache, and
   * the cache's append. */
  const clattn__family *prefill, *decode, *append;
} clattn__layer_kind;

/* The GQA/MHA/MQA layer (clattn_layer_*). */
extern const clattn__layer_kind clattn__layer_gqa;

#endif /* CLATTN_LAYER_H */
