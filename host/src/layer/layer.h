/* layer.h - internal: the layer interface, smaller than a family's, and
 * the registry of layer kinds.  A layer kind names its weights, the
 * projections (GEMMs) around its core, the shape of its KV cache and the
 * core calls it makes; the generic layer (layer.c, kv_cache.c) and its
 * model (layer_model.c) walk it, so a new kind is a new room beside
 * gqa_kind.c and th_kind.c and one line in registry.c. */
#ifndef CLATTN_LAYER_H
#define CLATTN_LAYER_H

#include "family/attn_opts.h"
#include "family/family.h"

#include <stddef.h>

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

/* The core calls a layer makes: a block of queries (over its own K/V or
 * the cache), one query per sequence over the cache, the cache's append,
 * and the optional ones: values computed from the appended rows before the
 * attention (Super attention's V' = W_a X), a call after the projections
 * in and before the append (MIX_IN: SwitchHead's expert-mixed V, which the
 * cache stores), and one after the attention and the projections out that
 * writes the caller's y (MIX_OUT: SwitchHead's expert-mixed output).  A
 * step runs them in this order:
 *   projections in, MIX_IN, [APPEND], VALUES, PREFILL or DECODE,
 *   projections out, MIX_OUT
 * and its last command's event (MIX_OUT's when the kind makes one, else
 * the last projection's) goes to the caller's ev->out. */
typedef enum clattn__core_op {
  CLATTN__CORE_PREFILL,
  CLATTN__CORE_DECODE,
  CLATTN__CORE_APPEND,
  CLATTN__CORE_VALUES,
  CLATTN__CORE_MIX_IN,
  CLATTN__CORE_MIX_OUT,
  CLATTN__CORE_OPS
} clattn__core_op;

enum {
  CLATTN__MAX_WEIGHTS = 8,
  CLATTN__MAX_PROJ = 8,
  CLATTN__LAYER_DESC_BYTES = 64,
  CLATTN__CORE_DESC_BYTES = 128,
  /* every family's buffers fit (the paged attention's 9) */
  CLATTN__CORE_MAX_BUFS = CLATTN__MAX_BUFS
};

/* What one core call works on.  Without a cache, K and V are the layer's
 * activations ([batch*n rows, heads*dim] row-major is BSHD); with one they
 * are the cache's BHSD buffers of `capacity` rows.  Buffers may all be
 * NULL (the model builds descriptions only). */
typedef struct clattn__core_args {
  int batch, n; /* sequences; new positions per sequence */
  int capacity; /* the cache's rows per sequence; 0: no cache */
  int cached;   /* positions already in the cache (P) */
  int causal;
  cl_mem act[CLATTN__ACTS]; /* x and y (the caller's), Q, K, V, O */
  cl_mem k_cache, v_cache;
  cl_mem pos;  /* int32 [batch]: where the append writes */
  cl_mem lens; /* int32 [batch]: valid cache rows (a paged step: the
                  lengths after it) */
  /* a paged step (clattn_layer_step_paged): the application's pool and
   * block table, and whether its core calls skip reading the tables back
   * (the step checked them already, or the application waived it) */
  const clattn_paged_pool *pool;
  cl_mem block_table;
  int unchecked;
  const cl_mem *w; /* the layer's weights, in the kind's order */
  /* the attention options, for every attention and decode description the
   * kind builds (the layer's own copies of the arrays; a kind reads them
   * here, never from its stored description, whose arrays were the
   * caller's) */
  clattn__opts opts;
} clattn__core_args;

/* A core call as the kind builds it: the family's description (stored as
 * bytes, the kind's type) and its buffers in the family's order. */
typedef struct clattn__core_call {
  union {
    max_align_t align;
    unsigned char bytes[CLATTN__CORE_DESC_BYTES];
  } desc;
  cl_mem buf[CLATTN__CORE_MAX_BUFS];
} clattn__core_call;

/* The KV cache's shape per position: key heads x d_k, value heads x d_v;
 * shared: V is K, one tensor (Efficient attention's X). */
typedef struct clattn__cache_shape {
  int heads_k, dim_k, heads_v, dim_v;
  int shared;
} clattn__cache_shape;

typedef struct clattn__layer_kind {
  /* The registry's name (`clattn layers`, the word of `clattn run`) and
   * one line for listings: what the layer computes and its public create. */
  const char *name;
  const char *summary;
  /* The public description: its size (it is kept as bytes) and its
   * validation, which writes the reason into why. */
  size_t desc_size;
  const char *desc_type; /* its public name, for messages */
  clattn_status (*check)(const void *desc, char *why, size_t cap);
  /* The description's attention options (checked by check) and the heads
   * their per-head arrays hold. */
  clattn__opts (*options)(const void *desc, int *heads);
  int nweights;
  const char *const *weights; /* names, in the create call's order */
  /* Weight i's [inner, cols] (row-major) for the layer's description.  A
   * weight of 0 columns is absent for this description (SwitchHead's W_s
   * with one expert): the create accepts NULL for it, and ignores and
   * does not retain a buffer given anyway, so the kind reads NULL. */
  void (*weight_shape)(const void *desc, int i, long *inner, long *cols);
  /* The projections: the first nproj_in before the core, the rest after
   * it (they read the core's output).  Weights no projection names are
   * the core's own (talking-heads' P_l, P_w). */
  int nproj, nproj_in;
  const clattn__projection *proj;
  void (*cache_shape)(const void *desc, clattn__cache_shape *s);
  /* (optional) Refuse a call the kind cannot make, with the reason in why:
   * `positions` per sequence (cached ones included), into a cache or not,
   * causal or not; kv_cache_create asks it for a causal cache of its
   * capacity.  NULL: every call. */
  clattn_status (*check_call)(const void *desc, int positions, int cache,
                              int causal, char *why, size_t cap);
  /* (optional) Floats per position of activation a that a core call writes
   * or reads and no projection sizes (Super's V'; SwitchHead's V, O and
   * the y its MIX_OUT writes); 0 for the others.  NULL: none. */
  long (*core_act_cols)(const void *desc, clattn__layer_act a);
  /* The core families by registry name (NULL: the kind makes no such
   * call; only VALUES, MIX_IN and MIX_OUT may be NULL), and each call's
   * description and buffers built from the arguments. */
  const char *family[CLATTN__CORE_OPS];
  void (*core)(const void *desc, clattn__core_op op, const clattn__core_args *a,
               clattn__core_call *call);
  /* (optional) The core calls of a step over a paged pool the application
   * owns (clattn_layer_step_paged; a->pool, a->block_table, a->lens): the
   * family of call `op` with its description and buffers built into call,
   * NULL when the kind makes no such call in a paged step.  The step makes
   * them in the order above (DECODE for n == 1, else PREFILL).  NULL op:
   * the kind's cache holds what a paged pool cannot, and the step refuses
   * it. */
  const clattn__family *(*paged_core)(const void *desc, clattn__core_op op,
                                      const clattn__core_args *a,
                                      clattn__core_call *call);
} clattn__layer_kind;

/* The registry (registry.c): every kind, in listing order; by name, NULL
 * when none. */
int clattn__layer_kind_count(void);
const clattn__layer_kind *clattn__layer_kind_at(int i);
const clattn__layer_kind *clattn__layer_kind_find(const char *name);

/* The kinds, defined in their rooms (each room's public create names its
 * own kind) and listed in registry.c. */
extern const clattn__layer_kind clattn__layer_gqa;
extern const clattn__layer_kind clattn__layer_th;
extern const clattn__layer_kind clattn__layer_optimised;
extern const clattn__layer_kind clattn__layer_efficient;
extern const clattn__layer_kind clattn__layer_super;
extern const clattn__layer_kind clattn__layer_sh;

/* Core family `op` of kind K, or NULL (with a message in ctx when given)
 * when this build lacks it; NULL without a message when K makes no such
 * call. */
const clattn__family *clattn__layer_family(clattn_ctx *ctx,
                                           const clattn__layer_kind *K,
                                           clattn__core_op op);

/* The public creates' one body: checks the description with K->check,
 * the weights (non-NULL, large enough) and retains them. */
clattn_status clattn__layer_create(clattn_ctx *ctx, const clattn__layer_kind *K,
                                   const void *desc, const cl_mem *w,
                                   clattn_layer **out);

/* The model of a layer call of kind K (the description already valid):
 * prefill of n positions after cache_len cached ones (cache_len 0 and
 * n > 1: without a cache), as layer.c runs it. */
clattn_status clattn__layer_model(const clattn__layer_kind *K, const void *desc,
                                  int batch, int n, int cache_len, int causal,
                                  const clattn_profile *prof,
                                  clattn_prediction *out);

/* The steps' shared parts (layer.c), for paged_step.c:
 * a live layer (no message: there may be no context), and its context or
 * NULL; */
clattn_status clattn__layer_check(const clattn_layer *l);
clattn_ctx *clattn__layer_ctx(const clattn_layer *l);
/* x and y given, batch and n positive and not too many; */
clattn_status clattn__layer_rows(clattn_layer *l, int batch, int n, cl_mem x,
                                 cl_mem y);
/* x and y large enough for batch * n rows and the layer's own activations
 * allocated (nothing enqueued); */
clattn_status clattn__layer_acts(clattn_layer *l, int batch, int n, cl_mem x,
                                 cl_mem y);
/* the next command waits for ev's wait list (CLBlast takes none); */
clattn_status clattn__layer_wait(clattn_ctx *ctx, const clattn_events *ev);
/* the kind's projections first .. last-1 over `rows` rows (x and y the
 * caller's), the last one's event into *event (may be NULL); */
clattn_status clattn__layer_project(clattn_layer *l, int first, int last,
                                    size_t rows, cl_mem x, cl_mem y,
                                    cl_event *event);
/* the core calls' arguments without a cache: the layer's activations,
 * weights and options. */
void clattn__layer_args(const clattn_layer *l, int batch, int n, int causal,
                        cl_mem x, cl_mem y, clattn__core_args *a);

/* The handles (layer.c, kv_cache.c). */
#define CLATTN__LAYER_MAGIC 0x6c617972u /* "layr" */
#define CLATTN__KVC_MAGIC 0x6b766361u   /* "kvca" */

struct clattn_layer {
  unsigned magic;
  clattn_ctx *ctx;
  const clattn__layer_kind *kind;
  union {
    max_align_t align;
    unsigned char bytes[CLATTN__LAYER_DESC_BYTES];
  } d; /* the kind's description */
  cl_mem w[CLATTN__MAX_WEIGHTS];
  /* the description's attention options, their arrays copied into
   * opt_arrays (the caller's need not outlive the create call) */
  clattn__opts opts;
  float *opt_arrays;
  /* the activations between the steps, owned by the layer (x and y are
   * the caller's) */
  cl_mem buf[CLATTN__ACTS];
  size_t buf_size[CLATTN__ACTS];
};

struct clattn_kv_cache {
  unsigned magic;
  clattn_ctx *ctx;
  int batch;
  int capacity;
  clattn__cache_shape shape;
  int len;     /* positions stored in every sequence (P) */
  cl_mem k, v; /* [batch, heads, capacity, head_dim] float32 (BHSD); v is
                  k when the shape is shared (not retained twice) */
  cl_mem pos;  /* int32 [batch]: append position */
  cl_mem lens; /* int32 [batch]: valid keys for attention */
};

/* The cache is live, of l's context and of l's shape (a message in l's
 * context when not). */
clattn_status clattn__kv_cache_check(const clattn_layer *l,
                                     const clattn_kv_cache *c);

#endif /* CLATTN_LAYER_H */
