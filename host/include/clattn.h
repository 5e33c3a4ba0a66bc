/*
 * clattn.h - vendor-neutral OpenCL kernels for transformer attention.
 *
 * This header is the whole public contract of libclattn.
 *
 * Conventions
 *  - Every function that can fail returns a clattn_status: 0 on success,
 *    a stable negative number otherwise.  clattn_status_str() names it and
 *    clattn_ctx_errmsg() returns a detailed message for the last failure on
 *    that context (the OpenCL call, its error name, a build log, ...).
 *  - Objects are opaque handles created through an out parameter, which is
 *    set to NULL on failure.  Every destroy function accepts NULL.
 *  - OpenCL objects passed in (queue, buffers) are borrowed: the library
 *    retains what it keeps and releases it on destroy; it never owns them.
 *  - Nothing is enqueued when a call fails its argument checks.
 *  - Tensors live in cl_mem buffers starting at offset 0.  Storage types are
 *    float32, float16 or bfloat16; arithmetic is always float32.
 *  - The library never prints, aborts or exits.
 */
#ifndef CLATTN_H
#define CLATTN_H

/* Only OpenCL 1.2 types and calls are used here, so CL_TARGET_OPENCL_VERSION
 * stays the application's choice (the OpenCL headers default to 3.0). */
#include <CL/cl.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CLATTN_BUILDING) && defined(__GNUC__)
#define CLATTN_API __attribute__((visibility("default")))
#else
#define CLATTN_API
#endif

#define CLATTN_VERSION_MAJOR 0
#define CLATTN_VERSION_MINOR 1
#define CLATTN_VERSION_PATCH 0
#define CLATTN_VERSION_HEX                                                     \
  ((CLATTN_VERSION_MAJOR << 16) | (CLATTN_VERSION_MINOR << 8) |                \
   CLATTN_VERSION_PATCH)

/* Errors and threads
 *
 * Every function's comment ends with "Errors: ... Threads: ...": the
 * statuses it returns besides CLATTN_OK, and whether threads may call it
 * at once.  Shorthands:
 *  - "ctx": CLATTN_ERR_MISUSE when the context (or the context of the
 *    layer, cache or reference passed) is not a live one (NULL, or a
 *    pointer that is not a context; a destroyed one is undefined).
 *  - "call": what every kernel call checks and runs into:
 *    CLATTN_ERR_INVALID_ARG (a NULL descriptor or buffer, an unknown dtype
 *    or layout, a bad scale or params field), CLATTN_ERR_SHAPE (a size
 *    below 1, heads that do not divide, sizes that overflow),
 *    CLATTN_ERR_UNSUPPORTED (a head dim above CLATTN_MAX_HEAD_DIM, params
 *    or a buffer the device or the compiled kernel cannot take),
 *    CLATTN_ERR_BUFFER_TOO_SMALL, CLATTN_ERR_BUILD (a kernel did not
 *    compile; the log is in the message), CLATTN_ERR_OPENCL and
 *    CLATTN_ERR_NOMEM.  Nothing is enqueued when the checks fail.
 *  - "db": CLATTN_ERR_MISUSE for a db that is not open, CLATTN_ERR_DB for
 *    an SQLite failure (the message in clattn_db_errmsg), CLATTN_ERR_NOMEM.
 * Thread-safety classes:
 *  - "safe, context-serialised": any thread, any time.  A context may be
 *    shared between threads: the calls on one context (directly or through
 *    its layers, KV caches and copy references) take a per-context lock
 *    for their whole host-side work (the parameter choice, the program
 *    cache, the scratch buffers, the kernels' arguments, the enqueue), so
 *    they run one at a time.  They share the context's one in-order queue,
 *    so this costs the device nothing; for parallel host-side work, give
 *    each thread its own context.  clattn_ctx_errmsg and
 *    clattn_ctx_last_choice report the calling thread's own last call on
 *    the context (a record of about 9 KiB per thread that used it, kept
 *    until clattn_ctx_destroy).  A long call (a tuning run) holds the lock
 *    throughout.
 *  - "pure, safe": reads only its arguments and constant tables; any
 *    thread, any time.
 *  - "not with concurrent use of the same X": different X may be used
 *    from different threads at once, one X by one thread at a time.
 * Destroying an object (a context, layer, cache, reference or database)
 * while another thread still uses it is the caller's error.  Process-wide
 * state is safe: the on-disk program cache (each write to a name of its
 * own, then renamed), CLBlast's Xgemm parameters (a process-wide lock),
 * the per-thread messages of clattn_ctx_create and clattn_db_open.  The
 * environment ($CLATTN_*) is read when a context is created: do not
 * change it (setenv) from another thread meanwhile. */

/* Largest supported head dimension (k and v). */
#define CLATTN_MAX_HEAD_DIM 256

/* Status codes.  Numbers never change; new codes are appended. */
#define CLATTN_STATUS_MAP(X)                                                   \
  X(CLATTN_OK, 0, "success")                                                   \
  X(CLATTN_ERR_INVALID_ARG, -1, "invalid argument")                            \
  X(CLATTN_ERR_SHAPE, -2, "invalid or inconsistent shape")                     \
  X(CLATTN_ERR_UNSUPPORTED, -3, "unsupported configuration")                   \
  X(CLATTN_ERR_BUFFER_TOO_SMALL, -4, "buffer too small")                       \
  X(CLATTN_ERR_NO_DEVICE, -5, "no matching OpenCL device")                     \
  X(CLATTN_ERR_OPENCL, -6, "OpenCL call failed")                               \
  X(CLATTN_ERR_BUILD, -7, "kernel build failed")                               \
  X(CLATTN_ERR_NOMEM, -8, "out of host memory")                                \
  X(CLATTN_ERR_MISUSE, -9, "library misuse")                                   \
  X(CLATTN_ERR_IO, -10, "file input/output error")                             \
  X(CLATTN_ERR_CLBLAST, -11, "CLBlast call failed")                            \
  X(CLATTN_ERR_CAPACITY, -12, "KV cache capacity exceeded")                   \
  X(CLATTN_ERR_NOT_FOUND, -13, "no such entry")                                \
  X(CLATTN_ERR_DB, -14, "database error")

typedef enum clattn_status {
#define CLATTN_STATUS_ENUM_(name, num, text) name = num,
  CLATTN_STATUS_MAP(CLATTN_STATUS_ENUM_)
#undef CLATTN_STATUS_ENUM_
} clattn_status;

/* Short static description of a status ("invalid argument", ...).
 * Errors: none.  Threads: pure, safe. */
CLATTN_API const char *clattn_status_str(clattn_status st);

/* Name of an OpenCL error code ("CL_INVALID_VALUE", ...).
 * Errors: none.  Threads: pure, safe. */
CLATTN_API const char *clattn_cl_errstr(cl_int err);

/* Library version as "MAJOR.MINOR.PATCH".
 * Errors: none.  Threads: pure, safe. */
CLATTN_API const char *clattn_version(void);

/* Storage type of tensors. */
typedef enum clattn_dtype {
  CLATTN_F32 = 0,
  CLATTN_F16 = 1, /* IEEE binary16, via vload_half/vstore_half */
  CLATTN_BF16 = 2 /* bfloat16, round-to-nearest-even on store */
} clattn_dtype;

/* Bytes per element of a storage type (0 for an unknown type).
 * Errors: none (0).  Threads: pure, safe. */
CLATTN_API size_t clattn_dtype_size(clattn_dtype dt);

/* Memory layout of a [batch, seq, heads, head_dim] tensor. */
typedef enum clattn_layout {
  CLATTN_BSHD = 0, /* [batch][seq][heads][dim]  (default) */
  CLATTN_BHSD = 1  /* [batch][heads][seq][dim] */
} clattn_layout;

/* ---------------------------------------------------------------- context */

typedef struct clattn_ctx clattn_ctx;

typedef struct clattn_ctx_opts {
  /* The application's in-order queue.  Its context and device are used and
   * the queue is retained, never owned.  NULL: the library creates its own
   * context and queue on the device chosen by `device`. */
  cl_command_queue queue;
  /* Device selection when queue is NULL: "P:D" (platform and device index),
   * "D" (index over all devices), or a case-insensitive substring of the
   * platform or device name.  NULL: $CLATTN_DEVICE, else the first device. */
  const char *device;
  /* Program-binary cache directory.  NULL: $CLATTN_CACHE_DIR, else
   * $XDG_CACHE_HOME/clattn, else $HOME/.cache/clattn.  A file there reaches
   * the driver only when its header, key and hash match; anything else
   * (damaged, another program's, not a regular file) is rebuilt from
   * source and replaced (docs/KERNELS.md). */
  const char *cache_dir;
  /* Nonzero: never read or write the on-disk program cache (also
   * $CLATTN_NO_DISK_CACHE=1). */
  int no_disk_cache;
  /* Nonzero: the library-created queue has profiling enabled. */
  int profiling;
  /* Tuning database whose entries pick each call's parameters (see
   * clattn_explain_attention).  NULL: $CLATTN_DB, else the default path of
   * clattn_db_open; read at the first call with clattn_db_open_readonly
   * (nothing created; a lock held elsewhere delays it at most 200 ms, then
   * the defaults apply and the database is tried again a second later),
   * only this device's rows and those of its vendor and architecture;
   * clattn_explain_* says why no tuning was used. */
  const char *tuning_db;
  /* Nonzero: ignore tuning entries (also $CLATTN_NO_TUNING=1). */
  int no_tuning;
} clattn_ctx_opts;

/* Create a context.  opts may be NULL (all defaults).
 * create: Errors: CLATTN_ERR_INVALID_ARG (out NULL, a malformed
 * $CLATTN_PARAMS), CLATTN_ERR_NO_DEVICE, CLATTN_ERR_UNSUPPORTED (an
 * out-of-order queue), CLATTN_ERR_OPENCL, CLATTN_ERR_NOMEM; message:
 * clattn_ctx_errmsg(NULL).  Threads: safe (any number at once).  destroy:
 * Errors: none.  Threads: not with concurrent use of the same context. */
CLATTN_API clattn_status clattn_ctx_create(const clattn_ctx_opts *opts, clattn_ctx **out);
CLATTN_API void clattn_ctx_destroy(clattn_ctx *ctx);

/* Detailed message of the calling thread's last failure on ctx ("" if
 * none).  The string is owned by ctx and valid until the thread's next
 * call on it.  With ctx == NULL: the message of the last failed
 * clattn_ctx_create on the calling thread.
 * Errors: none ("not a live clattn context" for a bad ctx).  Threads: safe,
 * context-serialised; each thread reads its own message, valid until its next
 * call on ctx. */
CLATTN_API const char *clattn_ctx_errmsg(const clattn_ctx *ctx);

/* The OpenCL objects in use (not retained for the caller).
 * Errors: none (NULL for a bad ctx).  Threads: safe (fixed at creation). */
CLATTN_API cl_context clattn_ctx_cl_context(const clattn_ctx *ctx);
CLATTN_API cl_command_queue clattn_ctx_queue(const clattn_ctx *ctx);
CLATTN_API cl_device_id clattn_ctx_device(const clattn_ctx *ctx);

/* Drop every compiled program held in memory (the disk cache stays).
 * Errors: none (a bad ctx is ignored).  Threads: safe, context-serialised
 * (later calls build again). */
CLATTN_API void clattn_ctx_clear_programs(clattn_ctx *ctx);

/* Program cache statistics since the context was created. */
typedef struct clattn_cache_stats {
  unsigned long memory_hits;  /* programs found in memory */
  unsigned long disk_hits;    /* programs loaded from binaries on disk */
  unsigned long source_builds; /* programs compiled from source */
  unsigned long disk_writes;  /* binaries written to disk */
} clattn_cache_stats;
/* Errors: none (zeros for a bad ctx).  Threads: safe, context-serialised. */
CLATTN_API void clattn_ctx_cache_stats(const clattn_ctx *ctx, clattn_cache_stats *out);

/* Optional events for one library call: the first kernel it enqueues waits
 * on `wait`; `*out` (if out != NULL) receives an event for the last one,
 * which the caller must release. */
typedef struct clattn_events {
  cl_uint num_wait;
  const cl_event *wait;
  cl_event *out;
} clattn_events;

/* Kernel-shape parameters.  Zero fields mean "choose automatically"; the
 * library validates any nonzero field against the device and the kernel. */
typedef struct clattn_params {
  int variant;  /* 0 auto, 1 register-blocked (CPU-shaped), 2 local-memory
                   work-group tiles (GPU-shaped) */
  int rows;     /* prefill: packed query rows per work-item (variant 1) or
                   per work-group (variant 2); decode variant 1: query heads
                   per P V pass after the first, or the whole group (rows
                   >= heads per KV head) for passes over slices of the
                   value dims, without prefetch */
  int keys;     /* keys per tile */
  int wg;       /* work-items per work-group (variant 2) */
  int splits;   /* decode: KV splits per (sequence, KV head); prefill: unused */
  int prefetch; /* decode variant 1: 1 off, 2 software prefetch of the next
                   key block during the P V passes after the first (heads
                   per KV head > 1); 0 auto; prefill: unused */
  int scheme;   /* the family's algorithm where it has several; talking-heads
                   prefill: 1 one pass with an accumulator per (logit head,
                   value head), 2 two passes (softmax statistics, then the
                   exact weights mixed by P_w), 3 (variant 1 only) two
                   passes with pass 1's logits kept in local memory for
                   pass 2, for as many keys (rows x heads floats a key and
                   work-item) as it holds, the rest recomputed; 0 auto;
                   others: unused */
} clattn_params;

/* ---------------------------------------------------------- attention */

/* Fused scaled-dot-product attention over grouped query heads (GQA; MHA is
 * heads_q == heads_kv, MQA is heads_kv == 1).  Query head j uses KV head
 * j / (heads_q / heads_kv).
 *
 *   q [batch, n_q,  heads_q,  head_dim_k]   (layout q_layout; o likewise)
 *   k [batch, n_kv, heads_kv, head_dim_k]   (layout kv_layout)
 *   v [batch, n_kv, heads_kv, head_dim_v]
 *   o [batch, n_q,  heads_q,  head_dim_v]
 *   kv_lens: optional int32 [batch]: keys 0..kv_lens[b]-1 of sequence b are
 *            valid (values are clamped to [0, n_kv]); NULL means n_kv.
 *
 * With causal != 0 the queries are the last n_q positions of the L valid
 * keys: query i sees key t iff t <= L - n_q + i.  A query that sees no key
 * gets an output of zeros.
 *
 * Non-finite inputs (this contract holds for every call here that computes
 * a softmax: attention, decode, talking-heads, the layers):
 *  - logits are scale * (q . k) with the scale applied to q before the dot
 *    product, so finite inputs whose logits fit in float32 do not overflow
 *    even where the unscaled q . k would;
 *  - NaN propagates as in PyTorch: a row whose visible keys include a NaN or
 *    +inf logit, or whose visible logits are all -inf, is NaN; a -inf logit
 *    among finite ones gets weight 0; a row with no visible key is zeros;
 *  - masked keys (causal future, past kv_lens, past a cache's length) are
 *    never read into the result, whatever they hold;
 *  - a NaN or inf V element of a visible key reaches that output channel;
 *  - talking-heads mixes logits and weights across heads, so a NaN logit
 *    head reaches every value head mixed with it; SwitchHead's routing
 *    ranks a NaN score above every number (as torch.topk), so it is chosen
 *    and its NaN gate reaches the row.
 * docs/KERNELS.md, "Non-finite inputs", says how. */
typedef struct clattn_attn_desc {
  int batch;
  int n_q;
  int n_kv;
  int heads_q;
  int heads_kv;
  int head_dim_k;
  int head_dim_v;
  clattn_dtype dtype;
  clattn_layout q_layout;
  clattn_layout kv_layout;
  float scale; /* logit scale; 0 means 1/sqrt(head_dim_k) */
  int causal;
  const clattn_params *params; /* NULL: automatic */
} clattn_attn_desc;

/* Errors: ctx, call.  Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_attention(clattn_ctx *ctx, const clattn_attn_desc *d,
                               cl_mem q, cl_mem k, cl_mem v, cl_mem kv_lens,
                               cl_mem o, const clattn_events *ev);

/* ------------------------------------------------------------ decoding */

/* One new query per sequence against a preallocated KV cache.
 *
 *   q        [batch, heads_q, head_dim_k]
 *   o        [batch, heads_q, head_dim_v]
 *   k_cache  [batch, capacity, heads_kv, head_dim_k] (CLATTN_BSHD) or
 *            [batch, heads_kv, capacity, head_dim_k] (CLATTN_BHSD)
 *   v_cache  likewise with head_dim_v
 *   lens     int32 [batch]: valid cache rows of each sequence (clamped to
 *            [0, capacity]); the query attends to all of them.
 *
 * The KV range is split across work-groups and combined with the log-sum-exp
 * rule (flash-decoding); the query heads of a KV group share every K/V read. */
typedef struct clattn_decode_desc {
  int batch;
  int capacity;
  int heads_q;
  int heads_kv;
  int head_dim_k;
  int head_dim_v;
  clattn_dtype dtype;
  clattn_layout cache_layout;
  float scale; /* 0 means 1/sqrt(head_dim_k) */
  const clattn_params *params; /* NULL: automatic */
} clattn_decode_desc;

/* Errors: ctx, call.  Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_decode(clattn_ctx *ctx, const clattn_decode_desc *d,
                            cl_mem q, cl_mem k_cache, cl_mem v_cache,
                            cl_mem lens, cl_mem o, const clattn_events *ev);

/* Write n_new rows per sequence into the cache in place, at rows
 * pos[b] .. pos[b]+n_new-1.  k_new [batch, n_new, heads_kv, head_dim_k] and
 * v_new [batch, n_new, heads_kv, head_dim_v] are BSHD in the cache's dtype.
 * pos: int32 [batch]; rows that would fall outside [0, capacity) are not
 * written.
 * Errors: ctx, call (n_new below 1: CLATTN_ERR_SHAPE).  Threads: safe,
 * context-serialised. */
CLATTN_API clattn_status clattn_kv_append(clattn_ctx *ctx, const clattn_decode_desc *d,
                               int n_new, cl_mem k_new, cl_mem v_new,
                               cl_mem pos, cl_mem k_cache, cl_mem v_cache,
                               const clattn_events *ev);

/* --------------------------------------------------- talking-heads */

/* Talking-heads attention (Shazeer et al. 2020): three head counts.
 *   q  [batch, n_q,  heads_k, head_dim_k]   (layout q_layout; o likewise)
 *   k  [batch, n_kv, heads_k, head_dim_k]   (layout kv_layout)
 *   v  [batch, n_kv, heads_v, head_dim_v]
 *   p_l float32 [heads_k, heads]: mixes the key heads' logits into the
 *       softmax heads, L[c] = sum_a scale q_a.k_a P_l[a, c]
 *   p_w float32 [heads, heads_v]: mixes the softmax heads' weights into
 *       the value heads, U[u] = sum_c softmax(L[c]) P_w[c, u]
 *   o  [batch, n_q,  heads_v, head_dim_v] = sum_t U[u](t) v[t, u]
 *   kv_lens: optional int32 [batch], as for clattn_attention.
 * The masks (causal, kv_lens) apply after P_l, before the softmax; a query
 * that sees no key gets zeros.  The logits never reach global memory.
 * Each head count is 1 .. CLATTN_TH_MAX_HEADS. */
#define CLATTN_TH_MAX_HEADS 32

typedef struct clattn_th_desc {
  int batch;
  int n_q;
  int n_kv;
  int heads_k; /* h_k: query and key heads */
  int heads;   /* h: logit (softmax) heads */
  int heads_v; /* h_v: value heads */
  int head_dim_k;
  int head_dim_v;
  clattn_dtype dtype;
  clattn_layout q_layout;
  clattn_layout kv_layout;
  float scale; /* 0 means 1/sqrt(head_dim_k); applied before P_l */
  int causal;  /* query i sees key t iff t <= L - n_q + i */
  const clattn_params *params; /* NULL: automatic */
} clattn_th_desc;

/* Errors: ctx, call.  Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_talking_heads(clattn_ctx *ctx,
                                              const clattn_th_desc *d,
                                              cl_mem q, cl_mem k, cl_mem v,
                                              cl_mem p_l, cl_mem p_w,
                                              cl_mem kv_lens, cl_mem o,
                                              const clattn_events *ev);

/* One new query per sequence against a KV cache (split-KV, exact for
 * talking-heads: the softmax statistics of every logit head are combined
 * over the splits before any weight is mixed by P_w).
 *   q [batch, heads_k, head_dim_k], o [batch, heads_v, head_dim_v]
 *   k_cache [batch, capacity, heads_k, head_dim_k] (CLATTN_BSHD) or
 *           [batch, heads_k, capacity, head_dim_k] (CLATTN_BHSD)
 *   v_cache likewise with heads_v and head_dim_v
 *   lens int32 [batch]: valid cache rows (clamped to [0, capacity]). */
typedef struct clattn_th_decode_desc {
  int batch;
  int capacity;
  int heads_k;
  int heads;
  int heads_v;
  int head_dim_k;
  int head_dim_v;
  clattn_dtype dtype;
  clattn_layout cache_layout;
  float scale; /* 0 means 1/sqrt(head_dim_k) */
  const clattn_params *params; /* NULL: automatic */
} clattn_th_decode_desc;

/* Errors: ctx, call.  Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_talking_heads_decode(
    clattn_ctx *ctx, const clattn_th_decode_desc *d, cl_mem q, cl_mem k_cache,
    cl_mem v_cache, cl_mem p_l, cl_mem p_w, cl_mem lens, cl_mem o,
    const clattn_events *ev);

/* clattn_kv_append for a talking-heads cache: k_new [batch, n_new, heads_k,
 * head_dim_k] and v_new [batch, n_new, heads_v, head_dim_v] (BSHD, the
 * cache's dtype) written at rows pos[b] .. pos[b]+n_new-1; rows outside
 * [0, capacity) are not written.
 * Errors: ctx, call (n_new below 1: CLATTN_ERR_SHAPE).  Threads: safe,
 * context-serialised. */
CLATTN_API clattn_status clattn_talking_heads_append(
    clattn_ctx *ctx, const clattn_th_decode_desc *d, int n_new, cl_mem k_new,
    cl_mem v_new, cl_mem pos, cl_mem k_cache, cl_mem v_cache,
    const clattn_events *ev);

/* ----------------------------------------------------- layer (GQA/MHA/MQA) */

/* A whole attention layer: y = Attention(x W_q, x W_k, x W_v) W_o, float32,
 * projections through CLBlast's GEMM or the library's own GEMM kernel
 * (whichever `clattn tune` measured faster for the shape; CLBlast without
 * tuning entries), attention through the fused kernels.
 *   x [batch, n, d_model], y [batch, n, d_model]
 *   w_q [d_model, heads_q*head_dim_k], w_k [d_model, heads_kv*head_dim_k],
 *   w_v [d_model, heads_kv*head_dim_v], w_o [heads_q*head_dim_v, d_model]
 * (row-major; head h of the projection is columns h*dim .. h*dim+dim-1). */
typedef struct clattn_layer_desc {
  int d_model;
  int heads_q;
  int heads_kv;
  int head_dim_k;
  int head_dim_v;
  float scale; /* 0 means 1/sqrt(head_dim_k) */
} clattn_layer_desc;

typedef struct clattn_layer clattn_layer;

/* The weights are retained by the layer.
 * create: Errors: ctx, CLATTN_ERR_INVALID_ARG (a NULL descriptor, weight or
 * out), CLATTN_ERR_SHAPE, CLATTN_ERR_UNSUPPORTED, CLATTN_ERR_BUFFER_TOO_SMALL
 * (a weight smaller than its shape), CLATTN_ERR_OPENCL, CLATTN_ERR_NOMEM.
 * Threads: safe, context-serialised.  destroy: Errors: none.  Threads: not
 * with concurrent use of the same layer. */
CLATTN_API clattn_status clattn_layer_create(clattn_ctx *ctx, const clattn_layer_desc *d,
                                  cl_mem w_q, cl_mem w_k, cl_mem w_v,
                                  cl_mem w_o, clattn_layer **out);
CLATTN_API void clattn_layer_destroy(clattn_layer *layer);

/* A talking-heads layer: y = TH(x W_q, x W_k, x W_v; P_l, P_w) W_o, with
 *   w_q, w_k [d_model, heads_k*head_dim_k], w_v [d_model, heads_v*head_dim_v],
 *   w_o [heads_v*head_dim_v, d_model], p_l [heads_k, heads],
 *   p_w [heads, heads_v] (float32, row-major).  The returned layer works
 * with clattn_kv_cache_create, clattn_layer_prefill and clattn_layer_decode
 * as any other; its cache holds heads_k key and heads_v value heads.
 * Errors: CLATTN_ERR_INVALID_ARG for a NULL descriptor, weight or out;
 * CLATTN_ERR_SHAPE for a head count outside 1..CLATTN_TH_MAX_HEADS or a
 * dim below 1; CLATTN_ERR_UNSUPPORTED for a head dim above
 * CLATTN_MAX_HEAD_DIM; CLATTN_ERR_BUFFER_TOO_SMALL for a weight smaller
 * than its shape. */
typedef struct clattn_th_layer_desc {
  int d_model;
  int heads_k;
  int heads;
  int heads_v;
  int head_dim_k;
  int head_dim_v;
  float scale; /* 0 means 1/sqrt(head_dim_k) */
} clattn_th_layer_desc;

/* Errors: ctx, those listed above, CLATTN_ERR_OPENCL, CLATTN_ERR_NOMEM.
 * Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_layer_create_talking_heads(
    clattn_ctx *ctx, const clattn_th_layer_desc *d, cl_mem w_q, cl_mem w_k,
    cl_mem w_v, cl_mem w_o, cl_mem p_l, cl_mem p_w, clattn_layer **out);

/* The attention layers of Hosseini & Hosseini ("You Need to Pay Better
 * Attention", arXiv 2403.01643), float32: h heads of width D/h (h divides
 * d_model = D), head i reading the channel slice X_i (columns i*D/h ..
 * (i+1)*D/h - 1) of x:
 *   Optimised  Q = x W_q, K = x W_k, V_i = X_i            weights 3 D^2
 *   Efficient  Q = x W_q, K_i = V_i = X_i                 weights 2 D^2
 *   Super      Q = x W_q, K_i = X_i, V_i = W_a X_i        2 D^2 + l^2
 * and y = [H_1 .. H_h] W_o, against 4 D^2 for multi-head attention.
 *   w_q, w_k, w_o [d_model, d_model]; w_a [max_len, max_len] (row-major),
 * shared by the heads and applied from the left over positions: V'[t] =
 * sum_s W_a[t, s] X[s], s over the first n positions of a prefill without
 * a cache, or s <= t when causal.  Causal calls read only W_a's lower
 * triangle (its upper one may hold anything).  Super refuses sequences
 * longer than max_len, a cache of more than max_len positions, and a
 * non-causal prefill into a cache (cached V' rows must not depend on later
 * positions).  The caches: Optimised holds K and X (as MHA's, 2D floats a
 * position), Efficient X alone (D floats), Super X and V' (2D).
 * Errors: CLATTN_ERR_INVALID_ARG for a NULL descriptor, weight or out;
 * CLATTN_ERR_SHAPE for d_model or heads below 1, heads not dividing
 * d_model, a Super max_len below 1 (or a max_len set for the others);
 * CLATTN_ERR_UNSUPPORTED for a head width above CLATTN_MAX_HEAD_DIM;
 * CLATTN_ERR_BUFFER_TOO_SMALL for a weight smaller than its shape. */
typedef struct clattn_hh_layer_desc {
  int d_model;
  int heads;
  int max_len; /* Super: l, W_a's size and the longest sequence; others 0 */
  float scale; /* 0 means 1/sqrt(d_model / heads) */
} clattn_hh_layer_desc;

typedef enum clattn_hh_variant {
  CLATTN_HH_OPTIMISED = 1,
  CLATTN_HH_EFFICIENT = 2,
  CLATTN_HH_SUPER = 3
} clattn_hh_variant;

/* Errors: ctx, those listed above, CLATTN_ERR_OPENCL, CLATTN_ERR_NOMEM.
 * Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_layer_create_optimised(
    clattn_ctx *ctx, const clattn_hh_layer_desc *d, cl_mem w_q, cl_mem w_k,
    cl_mem w_o, clattn_layer **out);
CLATTN_API clattn_status clattn_layer_create_efficient(
    clattn_ctx *ctx, const clattn_hh_layer_desc *d, cl_mem w_q, cl_mem w_o,
    clattn_layer **out);
CLATTN_API clattn_status clattn_layer_create_super(
    clattn_ctx *ctx, const clattn_hh_layer_desc *d, cl_mem w_q, cl_mem w_a,
    cl_mem w_o, clattn_layer **out);

/* The weights (parameters) of a variant's layer, biases none: 3 D^2, 2 D^2
 * or 2 D^2 + max_len^2; -1 for an invalid variant or description.
 * Errors: none (-1).  Threads: pure, safe. */
CLATTN_API long long clattn_hh_layer_params(clattn_hh_variant v,
                                            const clattn_hh_layer_desc *d);

/* SwitchHead (Csordas et al., arXiv 2312.07987): attention whose value and
 * output projections are mixtures of `experts` experts per head, chosen
 * per position by sigmoid gates (spec 6), float32:
 *   Q = x W_q, K = x W_k                (dense: heads of head_dim)
 *   s_v = sigmoid(x W_s), s_o = sigmoid(x W_d)   ([heads, experts] each)
 *   V_h[t] = sum over e in top_k(s_v[t, h]) of s_v[t, h, e] x[t] W_v[h, e]
 *   y[i]   = sum over h, and e in top_k(s_o[i, h]), of
 *            s_o[i, h, e] (A_h V_h)[i] W_o[h, e]
 * The gates are the raw sigmoid values of the top-k experts (not
 * renormalised); a tie in top-k goes to the lower expert index; the value
 * side is selected from the key's position, the output side from the
 * query's.  experts == 1 is the official code's dense case: V = x W_v
 * ungated (w_s is not read and may be NULL; a buffer given is ignored) and
 * y = sum_h sigmoid(x W_d)_h (A_h V_h) W_o[h].
 *   w_q, w_k [d_model, heads*head_dim]
 *   w_v [heads, experts, d_model, head_dim]
 *   w_o [heads, experts, head_dim, d_model]
 *   w_s, w_d [d_model, heads*experts]  (column h*experts + e: head h's
 *                                       expert e)
 * (row-major).  The cache holds K and the already-mixed V, 2 heads*head_dim
 * floats a position: the experts do not enlarge it.
 * Errors: CLATTN_ERR_INVALID_ARG for a NULL descriptor, weight (w_s with
 * one expert excepted) or out, or a scale that is negative or not finite;
 * CLATTN_ERR_SHAPE for d_model, heads or
 * head_dim below 1, experts outside 1..CLATTN_SH_MAX_EXPERTS, or topk
 * outside 1..experts; CLATTN_ERR_UNSUPPORTED for a head_dim above
 * CLATTN_MAX_HEAD_DIM; CLATTN_ERR_BUFFER_TOO_SMALL for a weight smaller
 * than its shape. */
#define CLATTN_SH_MAX_EXPERTS 64

typedef struct clattn_switchhead_layer_desc {
  int d_model;
  int heads;
  int head_dim;
  int experts;
  int topk;    /* experts per head and position, 1 .. experts */
  float scale; /* 0 means 1/sqrt(head_dim) */
} clattn_switchhead_layer_desc;

/* Errors: ctx, those listed above, CLATTN_ERR_OPENCL, CLATTN_ERR_NOMEM.
 * Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_layer_create_switchhead(
    clattn_ctx *ctx, const clattn_switchhead_layer_desc *d, cl_mem w_q,
    cl_mem w_k, cl_mem w_v, cl_mem w_o, cl_mem w_s, cl_mem w_d,
    clattn_layer **out);

/* The weights of a SwitchHead layer: 2 D H d_h (Q, K) + 2 H E D d_h (the
 * experts) + 2 H E D (the selections; H D with one expert, which has no
 * W_s); -1 for an invalid description.
 * Errors: none (-1).  Threads: pure, safe. */
CLATTN_API long long clattn_switchhead_layer_params(
    const clattn_switchhead_layer_desc *d);

/* A KV cache for a layer: batch sequences of at most `capacity` positions,
 * float32, BHSD, allocated by the library.  Sequence lengths start at 0. */
typedef struct clattn_kv_cache clattn_kv_cache;
/* create: Errors: CLATTN_ERR_INVALID_ARG (layer or out NULL),
 * CLATTN_ERR_MISUSE (not a live layer), ctx, CLATTN_ERR_SHAPE (batch or
 * capacity below 1, sizes that overflow, a Super capacity above max_len),
 * CLATTN_ERR_UNSUPPORTED (beyond the device's allocation limit),
 * CLATTN_ERR_OPENCL, CLATTN_ERR_NOMEM.  Threads: safe, context-serialised.
 * destroy, len, reset: Errors: none (a bad cache is ignored; len 0).
 * Threads: not with concurrent use of the same cache. */
CLATTN_API clattn_status clattn_kv_cache_create(clattn_layer *layer, int batch,
                                     int capacity, clattn_kv_cache **out);
CLATTN_API void clattn_kv_cache_destroy(clattn_kv_cache *cache);
/* Current length (positions stored) of every sequence. */
CLATTN_API int clattn_kv_cache_len(const clattn_kv_cache *cache);
CLATTN_API void clattn_kv_cache_reset(clattn_kv_cache *cache);

/* Prefill: n new positions per sequence.  With cache == NULL, attention is
 * over the n positions of x alone.  With a cache, their K/V are appended
 * after the cache's current length P and the queries attend to the P + n
 * cached positions.  causal selects the causal mask.
 * Errors: ctx (CLATTN_ERR_MISUSE also for a layer or cache that is not live,
 * or a cache of another layer), call, CLATTN_ERR_CAPACITY (the cache would
 * overflow), CLATTN_ERR_CLBLAST (a projection's GEMM).  Threads: safe,
 * context-serialised; not with concurrent use of the same cache. */
CLATTN_API clattn_status clattn_layer_prefill(clattn_layer *layer, clattn_kv_cache *cache,
                                   int batch, int n, int causal, cl_mem x,
                                   cl_mem y, const clattn_events *ev);

/* Decode step: one new position per sequence (x, y: [batch, d_model]);
 * its K/V are appended to the cache and it attends causally to the whole
 * cache.  batch must equal the cache's batch.
 * Errors: as clattn_layer_prefill (a NULL cache: CLATTN_ERR_INVALID_ARG).
 * Threads: safe, context-serialised; not with concurrent use of the same
 * cache. */
CLATTN_API clattn_status clattn_layer_decode(clattn_layer *layer, clattn_kv_cache *cache,
                                  cl_mem x, cl_mem y, const clattn_events *ev);

/* ------------------------------------------------------- device profiles */

/* Where a profile's ceilings come from. */
typedef enum clattn_profile_source {
  CLATTN_PROFILE_REPORTED = 0,  /* only what the device reports; no ceilings */
  CLATTN_PROFILE_DATASHEET = 1, /* shipped vendor datasheet figures */
  CLATTN_PROFILE_MEASURED = 2   /* clattn_probe on the device */
} clattn_profile_source;

/* A device as the roofline model sees it.  Rates are decimal (1e9 B/s,
 * 1e9 FLOP/s); 0 means unknown. */
typedef struct clattn_profile {
  clattn_profile_source source;
  /* Hex digest of platform, vendor, device name, driver version, compute
   * units and clock; "" for datasheet profiles. */
  char fingerprint[40];
  char name[128];
  char vendor[64];
  char platform[64];
  char driver[64];
  char arch[64];        /* architecture/generation, e.g. "Ampere", "RDNA3" */
  int is_cpu;
  unsigned compute_units; /* SMs, CUs, Xe-cores/EUs or CPU cores */
  unsigned clock_mhz;
  unsigned wave_width;    /* warp / wavefront / SIMD width (1: unknown) */
  unsigned simds_per_cu;  /* 0: unknown */
  unsigned long long global_mem_bytes;
  unsigned long long local_mem_bytes; /* per work-group */
  unsigned long long cache_bytes;     /* global-memory (last-level) cache */
  size_t max_wg;
  int has_fp16;
  int has_subgroups;
  /* Ceilings. */
  double bw_read_gbs;  /* global memory, read-only kernel */
  double bw_copy_gbs;  /* copy, bytes read + written */
  double bw_triad_gbs; /* a = b + s*c, bytes read + written */
  double fp32_gflops;  /* FMA peak, 2 FLOPs per FMA */
  double fp16_gflops;
  double local_gbs;    /* local-memory bandwidth (whole device) */
  double h2d_gbs, d2h_gbs;     /* host <-> device transfers */
  double launch_us;            /* enqueue + finish of one small kernel */
  double launch_pipelined_us;  /* per kernel in a stream of launches */
  /* Measured by clattn_probe: the version of its method
   * (CLATTN_PROBE_METHOD when this library probed); 0: not measured by
   * clattn_probe (reported, datasheet, or ceilings entered by hand). */
  int probe_method;
  char note[512]; /* datasheet: sources; measured: date and probe settings;
                     reported: why a stored measurement was not used */
} clattn_profile;

/* What the context's device reports (clGetDeviceInfo and vendor queries:
 * NVIDIA warp size and SM count, AMD wavefront width and SIMDs, Intel
 * subgroup sizes); source CLATTN_PROFILE_REPORTED, ceilings 0.
 * Errors: ctx, CLATTN_ERR_INVALID_ARG (out NULL), CLATTN_ERR_OPENCL,
 * CLATTN_ERR_NOMEM.  Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_profile_reported(clattn_ctx *ctx,
                                                 clattn_profile *out);

/* Datasheet profiles shipped with the library (GPUs that need not be
 * present).  Index 0 .. clattn_datasheet_count()-1; find by a
 * case-insensitive substring of the name (the first match).
 * Source CLATTN_PROFILE_DATASHEET, fingerprint "", note = the source URLs
 * ("; "-separated); bw_read/copy/triad are the peak memory bandwidth,
 * fp32/fp16 the vector (non-matrix) peaks; local_gbs, h2d/d2h, launch and
 * has_subgroups are 0 (unknown).
 * clattn_datasheet: CLATTN_ERR_NOT_FOUND when i is out of range.
 * clattn_datasheet_find: CLATTN_ERR_INVALID_ARG for a NULL or empty name,
 * CLATTN_ERR_NOT_FOUND when no name matches.  Both: CLATTN_ERR_INVALID_ARG
 * for out == NULL; on any failure *out is zeroed.  Thread-safe.
 * Errors: as above.  Threads: pure, safe. */
CLATTN_API int clattn_datasheet_count(void);
CLATTN_API clattn_status clattn_datasheet(int i, clattn_profile *out);
CLATTN_API clattn_status clattn_datasheet_find(const char *name,
                                               clattn_profile *out);

/* Probe settings; zero fields mean the defaults. */
typedef struct clattn_probe_opts {
  double target_s;     /* time per measured repeat (default 0.05 s) */
  int repeats;         /* repeats per figure, median kept (default 5) */
  size_t buffer_bytes; /* per array of the bandwidth kernels (default: 4x
                          the last-level cache estimate, at least 64 MiB,
                          capped by the device's max allocation) */
  int thorough;        /* longer calibration and more repeats */
} clattn_probe_opts;

/* The probe's method, raised whenever a change to it changes what it
 * measures: 2 = FMA peak from 8 chains per item (method 1's 16 chains
 * spilled on AVX2 and read half the peak).  Stored profiles of an older
 * method are not used (clattn_profile_for). */
#define CLATTN_PROBE_METHOD 2

/* Vector widths the probe measures: 1, 2, 4, 8, 16. */
#define CLATTN_PROBE_WIDTHS 5

/* Everything one probe measured. */
typedef struct clattn_probe_result {
  clattn_profile profile; /* source MEASURED; ceilings = best of widths */
  double read_gbs[CLATTN_PROBE_WIDTHS];
  double copy_gbs[CLATTN_PROBE_WIDTHS];
  double triad_gbs[CLATTN_PROBE_WIDTHS];
  double fma_gflops[CLATTN_PROBE_WIDTHS];
  double fp16_gflops; /* 0 without cl_khr_fp16 */
  size_t buffer_bytes;
  double seconds; /* wall time of the probe */
} clattn_probe_result;

/* clpeak-style device probe: warm-up, calibration to target_s, median of
 * repeats, random data.  Takes under 30 s per device by default.
 * Errors: ctx, CLATTN_ERR_INVALID_ARG (out NULL, options out of range),
 * CLATTN_ERR_UNSUPPORTED, CLATTN_ERR_BUILD, CLATTN_ERR_OPENCL,
 * CLATTN_ERR_NOMEM.  Threads: safe, context-serialised (other threads' calls
 * on ctx wait for the whole probe). */
CLATTN_API clattn_status clattn_probe(clattn_ctx *ctx,
                                      const clattn_probe_opts *opts,
                                      clattn_probe_result *out);

/* A bandwidth reference to time next to other kernels: the probe's copy
 * kernel at vector width 16 over two device buffers of random data.  A
 * shared machine's bandwidth drifts by tens of percent within minutes, so
 * `clattn model check` and the benchmarks time one launch of it beside
 * every measured pass and pair each time with the bandwidth of its round.
 * bytes: per buffer, a multiple of 64 from 1 MiB (several times the
 * last-level cache, so that it measures memory).  Errors: CLATTN_ERR_MISUSE
 * for a bad ctx, CLATTN_ERR_INVALID_ARG for out == NULL or a bad size,
 * CLATTN_ERR_NOMEM / CLATTN_ERR_OPENCL from the allocations (ctx's message
 * says which).  Destroy it before its context. */
typedef struct clattn_copy_ref clattn_copy_ref;
/* Errors: as above, and CLATTN_ERR_BUILD.  Threads: safe,
 * context-serialised. */
CLATTN_API clattn_status clattn_copy_ref_create(clattn_ctx *ctx, size_t bytes,
                                                clattn_copy_ref **out);
/* One launch between two clFinish on ctx's queue: *gbs is the bytes read
 * plus written over the wall time.
 * Errors: CLATTN_ERR_INVALID_ARG (ref or gbs NULL), ctx, CLATTN_ERR_BUILD,
 * CLATTN_ERR_OPENCL.  Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_copy_ref_run(clattn_copy_ref *ref,
                                             double *gbs);
/* Errors: none.  Threads: not with concurrent use of the same reference. */
CLATTN_API void clattn_copy_ref_destroy(clattn_copy_ref *ref);
/* Scale a measured profile's bandwidths to a copy of `copy_gbs` timed now
 * (read and triad in proportion to the stored copy), so that predictions
 * follow the machine's moment; a profile without a copy bandwidth, or a
 * copy_gbs that is not positive, is left as it is.
 * Errors: none.  Threads: not with concurrent use of the same profile. */
CLATTN_API void clattn_profile_at_copy(clattn_profile *p, double copy_gbs);

/* ------------------------------------------------------ tuning database */

/* The SQLite database of probe results, model checks and tuning entries.
 * path NULL: $CLATTN_DB, else $XDG_DATA_HOME/clattn/tuning.db, else
 * $HOME/.local/share/clattn/tuning.db.  Safe for several processes at
 * once; every write is its own transaction.
 * clattn_db_open is for writing: it creates the file and its directories,
 * migrates the schema and waits up to 10 s for another writer's lock.
 * clattn_db_open_readonly is for reading only: it creates nothing, never
 * migrates, works in a read-only directory or on a read-only file, and
 * waits at most 200 ms for a lock (WAL readers are normally never
 * blocked); writes through its handle fail with CLATTN_ERR_DB.
 * Errors: CLATTN_ERR_INVALID_ARG for out == NULL; CLATTN_ERR_NOMEM;
 * CLATTN_ERR_DB when the file cannot be created or opened, is not a
 * database, has a schema newer than this library's (or, read-only, older
 * than it reads) or stays locked ("busy" in the message);
 * clattn_db_open_readonly: CLATTN_ERR_NOT_FOUND when the file does not
 * exist.  The message: clattn_db_errmsg(NULL). */
typedef struct clattn_db clattn_db;
/* open, open_readonly: Errors: as above, and CLATTN_ERR_IO when clattn_db_open
 * cannot make a directory.  Threads: safe (each open is its own
 * connection).  close: Errors: none.  Threads: not with concurrent use of
 * the same db. */
CLATTN_API clattn_status clattn_db_open(const char *path, clattn_db **out);
CLATTN_API clattn_status clattn_db_open_readonly(const char *path,
                                                 clattn_db **out);
/* The path that path NULL means for clattn_db_open and
 * clattn_db_open_readonly (whether or not the file exists), into buf.
 * Errors: CLATTN_ERR_INVALID_ARG for a NULL buf or cap 0; CLATTN_ERR_DB
 * when $CLATTN_DB, $XDG_DATA_HOME and $HOME are all unset or empty;
 * CLATTN_ERR_BUFFER_TOO_SMALL (buf gets ""); CLATTN_ERR_NOMEM.
 * Thread-safe as getenv is. */
CLATTN_API clattn_status clattn_db_default_path(char *buf, size_t cap);
CLATTN_API void clattn_db_close(clattn_db *db);
/* Detailed message of the last failure on db; with db == NULL, of the last
 * failed clattn_db_open on the calling thread.
 * Errors: none.  Threads: not with concurrent use of the same db (NULL: the
 * calling thread's own). */
CLATTN_API const char *clattn_db_errmsg(const clattn_db *db);
/* The path of the open database.
 * Errors: none (NULL for a bad db).  Threads: not with concurrent use of the
 * same db. */
CLATTN_API const char *clattn_db_path(const clattn_db *db);

/* Store a measured profile (replacing the one of the same fingerprint).
 * Errors: db, CLATTN_ERR_INVALID_ARG (p NULL).  Threads: not with concurrent
 * use of the same db. */
CLATTN_API clattn_status clattn_db_put_profile(clattn_db *db,
                                               const clattn_profile *p);
/* The stored profile of a fingerprint: CLATTN_ERR_NOT_FOUND if none.
 * Errors: db, CLATTN_ERR_INVALID_ARG, CLATTN_ERR_NOT_FOUND.  Threads: not
 * with concurrent use of the same db. */
CLATTN_API clattn_status clattn_db_get_profile(clattn_db *db,
                                               const char *fingerprint,
                                               clattn_profile *out);

/* One predicted-against-measured figure (clattn model check), stored next
 * to the device's probe results; the date and library version are added
 * by the database. */
typedef struct clattn_check_record {
  char fingerprint[40];
  char call[128];     /* e.g. "decode b=1 m=8192 h=8 h_kv=1 k=64 v=64 f32" */
  char bound[16];     /* the model's: "memory", "compute" or "launch" */
  double predicted_s; /* the model's time */
  double measured_s;  /* median time of one call */
  double gbs;         /* achieved: the model's DRAM bytes / measured */
  double gflops;      /* achieved: useful FLOPs / measured */
  double roofline_fraction; /* max(t_memory, t_compute) / measured */
} clattn_check_record;
/* Errors: db, CLATTN_ERR_INVALID_ARG (r NULL).  Threads: not with concurrent
 * use of the same db. */
CLATTN_API clattn_status clattn_db_put_check(clattn_db *db,
                                             const clattn_check_record *r);

/* The best profile for the context's device: the measured one in db (may
 * be NULL) if an up-to-date probe method measured it, else a datasheet
 * whose name matches the device's, else the reported one.  A stored
 * profile of an older probe method is skipped and the returned profile's
 * note says so (run clattn_probe / `clattn probe` again).
 * Errors: as clattn_profile_reported, and CLATTN_ERR_DB / CLATTN_ERR_NOMEM
 * reading db.  Threads: safe, context-serialised; not with concurrent use of
 * the same db. */
CLATTN_API clattn_status clattn_profile_for(clattn_ctx *ctx, clattn_db *db,
                                            clattn_profile *out);

/* ------------------------------------------------------ roofline model */

/* What limits a kernel in the model. */
typedef enum clattn_bound {
  CLATTN_BOUND_MEMORY = 0,
  CLATTN_BOUND_COMPUTE = 1,
  CLATTN_BOUND_LAUNCH = 2
} clattn_bound;

/* Predicted costs of one kernel launch, or of a whole call (the sum).
 *
 * Counting conventions (spec 1.2):
 *  - flops: useful work, 2 per multiply-add of the contractions over the
 *    valid (query, key) pairs only; softmax_ops = 5 per valid logit, apart.
 *  - fma_issued: FMA lanes the kernel issues, masked and padded tile lanes
 *    included, plus 6 per exp2 (its polynomial) and 1 per online-softmax
 *    step (l = alpha * l + sum, contracted); exp2_issued: exp2 lanes
 *    (special functions, counted apart).  These and the issued bytes are
 *    exact, and checked against Oclgrind's instruction counts.
 *  - bytes_read / bytes_written: global memory as the kernel issues it
 *    (re-reads of K/V by every query tile included).
 *  - bytes_compulsory: each tensor the kernel touches, once.
 *  - bytes_dram: the traffic the time is predicted from: the compulsory
 *    bytes plus the re-reads whose working set exceeds the device cache.
 *  - fma_spilled: of fma_issued, the lanes whose accumulators do not fit
 *    a CPU's vector registers at the kernel's tile size (an estimate from
 *    the tile: the share of the accumulator vectors beyond the register
 *    file, not a count): the compiler spills them, and each such FMA also
 *    loads and stores its accumulator, which halves its rate (one store
 *    per cycle against two FMAs on x86 cores).
 *  - t_memory = reads / read bandwidth + writes / copy bandwidth;
 *    t_compute = 2 * (fma_issued + fma_spilled) / FP32 peak; t_launch per
 *    launch; t_pred = max(t_memory, t_compute) + t_launch. */
typedef struct clattn_cost {
  char kernel[32];
  int launches;
  double flops;
  double softmax_ops;
  double fma_issued;
  double exp2_issued;
  double fma_spilled;
  double bytes_read;
  double bytes_written;
  double bytes_compulsory;
  double bytes_dram;
  double local_bytes;
  double intensity; /* flops / bytes_dram */
  double t_memory, t_compute, t_launch, t_pred; /* seconds */
  clattn_bound bound;
} clattn_cost;

#define CLATTN_MODEL_MAX_KERNELS 12

/* The model's prediction for one library call on one device profile. */
typedef struct clattn_prediction {
  int n_kernels;
  clattn_cost kernel[CLATTN_MODEL_MAX_KERNELS];
  clattn_cost total;
  double ridge;          /* FLOP/byte where the device's roofline bends */
  clattn_params params;  /* the parameters the call resolves to */
  char errmsg[256];      /* why a model call failed */
} clattn_prediction;

/* Predict clattn_attention.  kv_lens: host copy of the per-sequence key
 * lengths ([batch]) or NULL.  The plan is the one the library would choose
 * on this profile (less what only a compiled kernel can say: its
 * work-group limit).
 * Errors (all the model's calls): CLATTN_ERR_INVALID_ARG (a NULL argument),
 * CLATTN_ERR_SHAPE, CLATTN_ERR_UNSUPPORTED, as the call they predict, with
 * the reason in out->errmsg.  Threads: pure, safe. */
CLATTN_API clattn_status clattn_model_attention(const clattn_attn_desc *d,
                                                const int *kv_lens,
                                                const clattn_profile *prof,
                                                clattn_prediction *out);
/* Predict clattn_decode (lens: host copy [batch], NULL = capacity). */
CLATTN_API clattn_status clattn_model_decode(const clattn_decode_desc *d,
                                             const int *lens,
                                             const clattn_profile *prof,
                                             clattn_prediction *out);
/* Predict clattn_kv_append (pos: host copy [batch], NULL = all 0). */
CLATTN_API clattn_status clattn_model_kv_append(const clattn_decode_desc *d,
                                                int n_new, const int *pos,
                                                const clattn_profile *prof,
                                                clattn_prediction *out);
/* Predict a whole layer call: prefill of n positions after cache_len
 * cached ones (decode: n = 1), projections (GEMMs) plus the core. */
CLATTN_API clattn_status clattn_model_layer(const clattn_layer_desc *d,
                                            int batch, int n, int cache_len,
                                            int causal,
                                            const clattn_profile *prof,
                                            clattn_prediction *out);

/* Predict a Hosseini & Hosseini layer call as clattn_model_layer does. */
CLATTN_API clattn_status clattn_model_hh_layer(clattn_hh_variant v,
                                               const clattn_hh_layer_desc *d,
                                               int batch, int n,
                                               int cache_len, int causal,
                                               const clattn_profile *prof,
                                               clattn_prediction *out);

/* Predict a SwitchHead layer call as clattn_model_layer does (the expert
 * GEMMs with every expert's weights read once a call, spec 6.3). */
CLATTN_API clattn_status clattn_model_switchhead_layer(
    const clattn_switchhead_layer_desc *d, int batch, int n, int cache_len,
    int causal, const clattn_profile *prof, clattn_prediction *out);

/* The SwitchHead paper's own accounting of one attention layer and one
 * sequence (RobertCsordas/moe_attention, paper/common.py; spec 6.3 and
 * 10): MACs and training memory in floats, which reproduce its Tables 1,
 * 2 and 7 exactly.  experts == 0 is the dense Transformer of the same
 * accounting (topk unused).  rope: no positional projection term.
 * Errors: CLATTN_ERR_INVALID_ARG for a NULL argument; CLATTN_ERR_SHAPE for
 * a count below 1, context_blocks or experts below 0, topk outside
 * 1..experts, or a result beyond long long; the outputs are 0 on
 * failure. */
typedef struct clattn_switchhead_paper {
  int heads, head_dim, d_model;
  int seq_len;        /* T */
  int context_blocks; /* cb = C - 1: earlier chunks (1 for the XL models) */
  int experts, topk;
  int rope;
} clattn_switchhead_paper;

/* Errors: as above.  Threads: pure, safe. */
CLATTN_API clattn_status clattn_model_switchhead_paper(
    const clattn_switchhead_paper *c, long long *macs, long long *mem_floats);

/* ------------------------------------------------- parameter choice */

/* Where the parameters of a call come from, in the order they are tried:
 * the caller's desc->params (any nonzero field), an override
 * (clattn_ctx_set_params or $CLATTN_PARAMS), a tuning entry of this device
 * and the call's shape class, of this device and the nearest tuned shape
 * class, of another device of the same vendor and architecture, the
 * shipped tuning data's (clattn_shipped_count), the model's predicted best
 * candidate of the default's kernel variant (only
 * when the model predicts it at least 10% faster than the default, and
 * only with a datasheet profile or a measured one whose stored model
 * checks are within 30%), and the built-in default. */
typedef enum clattn_choice_source {
  CLATTN_CHOICE_CALLER = 0,
  CLATTN_CHOICE_OVERRIDE = 1,
  CLATTN_CHOICE_TUNED = 2,
  CLATTN_CHOICE_TUNED_NEAREST = 3,
  CLATTN_CHOICE_TUNED_ARCH = 4,
  CLATTN_CHOICE_MODEL = 5,
  CLATTN_CHOICE_DEFAULT = 6,
  /* The tuning data shipped inside the library (clattn_shipped_*), after
   * the caller's database and before the model: a row of the same vendor
   * and architecture, else (a CPU) of a CPU with the same vector ISA. */
  CLATTN_CHOICE_SHIPPED = 7
} clattn_choice_source;

/* Name of a source ("caller", "override", "tuned", "tuned-nearest",
 * "tuned-arch", "model", "default", "shipped").
 * Errors: none.  Threads: pure, safe. */
CLATTN_API const char *clattn_choice_source_str(clattn_choice_source s);

/* How one call's parameters were chosen. */
typedef struct clattn_choice {
  clattn_choice_source source;
  clattn_params params;     /* as chosen (before the plan fills zeros) */
  clattn_params resolved;   /* every field as the kernels run it */
  char shape_class[96];     /* the call's shape class */
  char entry_class[96];     /* shape class of the tuning entry used, or "" */
  char entry_device[128];   /* device of that entry, or "" */
  double entry_median_s;    /* its measured time (0 if none) */
  char why[512];            /* one line: the sources tried and the pick */
} clattn_choice;

/* What clattn_attention / clattn_decode would run for d, and why; nothing
 * is enqueued.  d->params is honoured as in the call.
 * Errors: ctx, CLATTN_ERR_INVALID_ARG, CLATTN_ERR_SHAPE,
 * CLATTN_ERR_UNSUPPORTED, CLATTN_ERR_NOMEM.  Threads: safe,
 * context-serialised. */
CLATTN_API clattn_status clattn_explain_attention(clattn_ctx *ctx,
                                                  const clattn_attn_desc *d,
                                                  clattn_choice *out);
CLATTN_API clattn_status clattn_explain_decode(clattn_ctx *ctx,
                                               const clattn_decode_desc *d,
                                               clattn_choice *out);
/* The choice of the calling thread's last kernel call on the context
 * (clattn_attention, clattn_decode, ...; CLATTN_ERR_NOT_FOUND before the
 * first).
 * Errors: ctx, CLATTN_ERR_INVALID_ARG (out NULL), CLATTN_ERR_NOT_FOUND (no
 * call yet on this thread).  Threads: safe, context-serialised; each thread
 * gets the choice of its own last call on ctx. */
CLATTN_API clattn_status clattn_ctx_last_choice(const clattn_ctx *ctx,
                                                clattn_choice *out);

/* Override the parameters of every later call of one kernel family that
 * passes no params of its own.  spec, also the syntax of $CLATTN_PARAMS:
 *   "prefill: variant=2 wg=64 keys=32; decode: keys=64 splits=16"
 * (the families of clattn_family_name; the fields of clattn_params_format;
 * unnamed fields stay automatic).  NULL or "" removes every override.
 * Errors: ctx, CLATTN_ERR_INVALID_ARG (a malformed spec; the overrides stay
 * as they were), CLATTN_ERR_NOMEM.  Threads: safe, context-serialised (the
 * overrides apply to every thread's later calls). */
CLATTN_API clattn_status clattn_ctx_set_params(clattn_ctx *ctx,
                                               const char *spec);

/* Read the tuning database again: a context reads it at its first call and
 * keeps each call's choice (by family, description and params) until this,
 * a tuning run on the context, or clattn_ctx_set_params; rows that another
 * context, process or clattn_db_put_tune stored meanwhile are used from
 * the next call on (and the layers' Xgemm parameters from their next GEMM).
 * Errors: ctx.  Threads: safe, context-serialised (every thread's later
 * calls on ctx read the database again). */
CLATTN_API clattn_status clattn_ctx_reload_tuning(clattn_ctx *ctx);

/* Parameters as text, "variant=1 rows=4 keys=64 wg=0 splits=0 prefetch=0"
 * (the tuning database's form; scheme= follows when it is set), and back
 * (unknown names are an error).
 * Errors: parse: CLATTN_ERR_INVALID_ARG.  Threads: pure, safe. */
CLATTN_API void clattn_params_format(const clattn_params *p, char *buf,
                                     size_t cap);
CLATTN_API clattn_status clattn_params_parse(const char *text,
                                             clattn_params *out);

/* ---------------------------------------------------------- autotuner */

/* One measured (or rejected) candidate: a row of the tuning table.  The
 * database adds the date and library version when the row has none. */
typedef struct clattn_tune_entry {
  char fingerprint[40];   /* device (clattn_profile.fingerprint) */
  char device[128];
  char vendor[64];
  char arch[64];
  char driver[64];
  char kernel[24];        /* "prefill", "decode", "clblast-xgemm" */
  char shape_class[96];
  char params[256];       /* "name=value ..." */
  char status[16];        /* "ok", "wrong", "failed", "timeout", "slow" */
  double median_s;        /* median of the repeats (slow: the first run) */
  double spread;          /* (max - min) / median of the repeats */
  double predicted_s;     /* the model's time (0: no prediction) */
  double max_err;         /* largest error against the reference */
  char strategy[16];      /* the search that measured it */
  char message[256];      /* why a candidate was rejected */
  char library_version[16];
  char updated[32];       /* UTC, ISO 8601 */
  int tune_method;        /* clattn_tune_method(kernel) when measured; 0:
                             unknown (rows imported from files without it) */
} clattn_tune_entry;

/* The tuner's method for a kernel ("prefill", "decode", "clblast-xgemm"),
 * raised whenever a change to that kernel's code or to how the tuner times
 * it changes what a stored time means (decode 2: a run is a stream of up
 * to 8 calls finished once; method 1 finished every call, which added the
 * queue's round trip to each).  Rows of another method are neither reused
 * by a tuning run (it measures them again) nor used at run time
 * (clattn_explain_* says how many were passed over).  0 for an unknown
 * kernel.
 * Errors: none.  Threads: pure, safe. */
CLATTN_API int clattn_tune_method(const char *kernel);

/* Insert or replace the row of (fingerprint, kernel, shape_class,
 * params): one transaction, so a killed tuner keeps every earlier row.
 * The row must be valid: text UTF-8 without control characters (message
 * may hold newlines and tabs; its other control characters are replaced by
 * spaces and its stray bytes by '?'), fingerprint, kernel,
 * shape_class, params and status set, status one of the five below,
 * updated ("" : now) a real UTC date at most a day ahead, times finite and
 * >= 0 (an ok row's median > 0; max_err may be infinite on rejected rows),
 * tune_method >= 0, params that the kernel's family plans (Xgemm's:
 * NAME=count fields; a kernel this library does not know: params text
 * that clattn_params_parse reads); else CLATTN_ERR_INVALID_ARG naming the
 * field.
 * Rows that fail these checks when read (stored otherwise) are skipped by
 * the run-time choice, and clattn_explain_* says so.
 * Errors: db, CLATTN_ERR_INVALID_ARG (e NULL, a field too long, an invalid
 * row as above).  Threads: not with concurrent use of the same db. */
CLATTN_API clattn_status clattn_db_put_tune(clattn_db *db,
                                            const clattn_tune_entry *e);
/* Rows matching the non-NULL filters, ordered by kernel, shape class and
 * time; *out is malloc'ed (free() it), *n its length.
 * Errors: db, CLATTN_ERR_INVALID_ARG (out or n NULL).  Threads: not with
 * concurrent use of the same db. */
CLATTN_API clattn_status clattn_db_list_tune(clattn_db *db,
                                             const char *fingerprint,
                                             const char *kernel,
                                             const char *shape_class,
                                             clattn_tune_entry **out,
                                             int *n);
/* Share tuning rows between machines: export writes every row as JSON
 * ({"clattn_tuning": 1, "library_version": ..., "exported": ...,
 * "entries": [...]}, an entry as clattn_tune_entry_json writes it) to
 * path + ".tmp", then renames it to path ("-": stdout).  Import reads such
 * a file ("-": stdin) and merges it in one transaction, adding new rows
 * and replacing a row only by one of the same key with a later `updated`;
 * importing a file twice changes nothing.  Entries need fingerprint,
 * kernel, shape_class, params, status and updated (UTC,
 * "YYYY-MM-DDTHH:MM:SSZ"); other fields default to "" and 0.  A malformed
 * file (bad JSON, another version, an unknown or duplicate key, a wrong
 * type, a string longer than its field, an entry that clattn_db_put_tune
 * would refuse: an impossible or future date, a time that is negative or
 * not finite, params the family refuses, text that is not UTF-8) imports
 * nothing, leaves the database as it was and fails with
 * CLATTN_ERR_INVALID_ARG and a message "FILE:LINE:COL: ...";
 * CLATTN_ERR_IO when it cannot be read.  added / updated / unchanged (may
 * be NULL) count the rows of the file.
 * Errors: db and as above (CLATTN_ERR_IO for a file not written).  Threads:
 * not with concurrent use of the same db. */
CLATTN_API clattn_status clattn_db_export(clattn_db *db, const char *path);
CLATTN_API clattn_status clattn_db_import(clattn_db *db, const char *path,
                                          int *added, int *updated,
                                          int *unchanged);
/* One tuning row as a one-line JSON object, one key per field in column
 * order: strings escaped (a byte that is not UTF-8 as \ufffd, so any
 * JSON reader accepts it), doubles as %.17g (exact), the infinities as
 * +-1e999.  Like snprintf: returns the length it needs; writes at most
 * cap bytes, NUL included.  16 KiB always suffice.
 * Errors: none.  Threads: pure, safe. */
CLATTN_API size_t clattn_tune_entry_json(const clattn_tune_entry *e,
                                         char *buf, size_t cap);

/* Search strategies. */
typedef enum clattn_tune_strategy {
  CLATTN_TUNE_AUTO = 0,       /* exhaustive for small spaces, else model
                                 then annealing */
  CLATTN_TUNE_EXHAUSTIVE = 1,
  CLATTN_TUNE_RANDOM = 2,
  CLATTN_TUNE_ANNEAL = 3,     /* simulated annealing over neighbours */
  CLATTN_TUNE_MODEL = 4       /* in the roofline model's predicted order */
} clattn_tune_strategy;
/* Errors: none.  Threads: pure, safe. */
CLATTN_API const char *clattn_tune_strategy_str(clattn_tune_strategy s);

/* Progress of a tuning run, reported after every candidate. */
typedef struct clattn_tune_progress {
  const char *kernel;
  const char *shape_class;
  int done;        /* candidates evaluated in this run (reused included) */
  int total;       /* candidates the run may evaluate */
  int space;       /* valid candidates in the space */
  double best_s;   /* best median so far (0: none yet) */
  char best_params[256];
  double elapsed_s, budget_s; /* budget_s 0: none */
  const clattn_tune_entry *last; /* the candidate just evaluated */
} clattn_tune_progress;

/* Tuning options; zero fields are the defaults. */
typedef struct clattn_tune_opts {
  clattn_tune_strategy strategy;
  double budget_s;      /* wall-time budget of the call; 0: none */
  double timeout_s;     /* per candidate (compile + measure): a candidate
                           whose first run exceeds it is recorded "timeout"
                           and no more is spent on it; default 10 s */
  int max_candidates;   /* 0: all (exhaustive), else 25% of the space, at
                           least 8 */
  double stop_fraction; /* model and auto strategies: stop when a
                           candidate reaches this fraction of the roofline
                           (default 0.95: within the 5% a tuner is asked
                           to come of the best) */
  int repeats;          /* timed runs per candidate (default 7) */
  unsigned seed;        /* random and annealing strategies (0: 1) */
  int fresh;            /* nonzero: measure again what the database has */
  volatile int *stop;   /* polled between candidates: nonzero stops after
                           the running one (set it from a SIGINT handler),
                           with every candidate measured so far stored and
                           result->stopped "stop" */
  void (*progress)(const clattn_tune_progress *p, void *user);
  void *user;
} clattn_tune_opts;

/* Outcome of a tuning run for one kernel and shape class. */
typedef struct clattn_tune_result {
  char shape_class[96];
  int space;            /* valid candidates */
  int pruned;           /* candidates rejected before compiling */
  int measured;         /* evaluated in this run */
  int reused;           /* taken from the database (resume) */
  int stale;            /* stored rows of another tuning method (measured
                           again when the search reaches them) */
  int rejected;         /* wrong, failed or timed out */
  int verified;         /* the best few and the default, timed again in
                           interleaved runs (their medians are final) */
  clattn_params best;   /* kernels: the winner (zero if none) */
  char best_params[256];
  double best_s;        /* its median (0: no valid candidate) */
  double default_s;     /* the default parameters' median (0: unmeasured) */
  double roofline_s;    /* the model's max(t_memory, t_compute); decode:
                           with the profile's bandwidths scaled to the copy
                           timed last */
  int refreshes;        /* times the model's profile was scaled to a copy
                           timed then (decode: at the start and before a
                           roofline stop) */
  const char *stopped;  /* "done", "budget", "max", "roofline", "stop" */
  double elapsed_s;
} clattn_tune_result;

/* Tune one prefill or decode call shape on the context's device and store
 * every candidate in db as it is measured.  After the search, the six
 * best and the default are timed again, one run of each in turn for 31
 * rounds, and their medians replace the search's (a noisy stretch during
 * one candidate's measurement cannot crown a false winner).  Candidates run through
 * clattn_attention / clattn_decode (the library's own launch path), each
 * first checked against the plain-C reference on a small input of the
 * same head dims, group and dtype; the default parameters are always
 * measured.  Decode timings rotate over K/V copies larger than the
 * device's last-level cache (cold caches); their roofline follows the
 * device's bandwidth of the moment (a copy timed at the start and before
 * a roofline stop).  A rerun resumes: candidates
 * already in db for this device and shape class are not measured again
 * (unless opts->fresh).
 * Errors: ctx, call, CLATTN_ERR_INVALID_ARG (db or out NULL, options out of
 * range), db.  Threads: safe, context-serialised (other threads' calls on ctx
 * wait for the whole run); not with concurrent use of the same db. */
CLATTN_API clattn_status clattn_tune_attention(clattn_ctx *ctx, clattn_db *db,
                                               const clattn_attn_desc *d,
                                               const clattn_tune_opts *opts,
                                               clattn_tune_result *out);
CLATTN_API clattn_status clattn_tune_decode(clattn_ctx *ctx, clattn_db *db,
                                            const clattn_decode_desc *d,
                                            const clattn_tune_opts *opts,
                                            clattn_tune_result *out);

/* The tuning space of a call on the context's device: every valid
 * candidate (at most cap written to out; *n gets the count) and how many
 * were pruned by device and kernel constraints.
 * Errors: ctx, CLATTN_ERR_INVALID_ARG, CLATTN_ERR_SHAPE,
 * CLATTN_ERR_UNSUPPORTED, CLATTN_ERR_NOMEM.  Threads: safe,
 * context-serialised. */
CLATTN_API clattn_status clattn_tune_space_attention(clattn_ctx *ctx,
                                                     const clattn_attn_desc *d,
                                                     clattn_params *out,
                                                     int cap, int *n,
                                                     int *pruned);
CLATTN_API clattn_status clattn_tune_space_decode(clattn_ctx *ctx,
                                                  const clattn_decode_desc *d,
                                                  clattn_params *out, int cap,
                                                  int *n, int *pruned);

/* Tune CLBlast's single-precision Xgemm kernel (the layers' projections:
 * row-major C[m,n] = A[m,k] B[k,n]) on the context's device through
 * CLBlastOverrideParameters; every candidate is checked against a plain-C
 * GEMM first.  Rows: kernel "clblast-xgemm", shape class "m512 n512 k512",
 * params CLBlast's names ("MWG=64 NWG=64 KWG=32 ...").  Contexts apply the
 * device's best entry (see clattn_explain_gemm) before their layers'
 * first GEMM.
 * tune: Errors: ctx, CLATTN_ERR_INVALID_ARG (db NULL, options out of range),
 * CLATTN_ERR_SHAPE (m, n or k out of range), CLATTN_ERR_CLBLAST,
 * CLATTN_ERR_OPENCL, db.  Threads: safe, context-serialised; not with
 * concurrent use of the same db; CLBlast's parameters are per process: layers
 * of other contexts on the same device should not run during it.  explain:
 * Errors: ctx, CLATTN_ERR_INVALID_ARG (buf NULL or cap 0),
 * CLATTN_ERR_BUFFER_TOO_SMALL, CLATTN_ERR_NOMEM.  Threads: safe,
 * context-serialised. */
CLATTN_API clattn_status clattn_tune_gemm(clattn_ctx *ctx, clattn_db *db,
                                          int m, int n, int k,
                                          const clattn_tune_opts *opts,
                                          clattn_tune_result *out);
/* Which Xgemm parameters the context's layers use, and why (one line). */
CLATTN_API clattn_status clattn_explain_gemm(clattn_ctx *ctx, char *buf,
                                             size_t cap);

/* The shape class of a call: the key its tuning entries are stored under,
 * e.g. "f32 k64 v64 g1 bh8 n512 m512 c1" (prefill) or
 * "f32 k64 v64 g8 bh1 m4096 bhsd" (decode); sizes rounded to powers of 2.
 * Errors: none ("" for a NULL or invalid d).  Threads: pure, safe. */
CLATTN_API void clattn_shape_class_attention(const clattn_attn_desc *d,
                                             char *buf, size_t cap);
CLATTN_API void clattn_shape_class_decode(const clattn_decode_desc *d,
                                          char *buf, size_t cap);

/* ------------------------------------------------------ kernel families */

/* The kernel families the library registers ("prefill", "decode",
 * "append", ...), each a database kernel name, a $CLATTN_PARAMS key and a
 * `clattn` word.  Index 0 .. clattn_family_count()-1; out of range: NULL.
 * Errors: none (NULL out of range).  Threads: pure, safe. */
CLATTN_API int clattn_family_count(void);
CLATTN_API const char *clattn_family_name(int i);
/* One line: what the family computes and its public function. */
CLATTN_API const char *clattn_family_summary(int i);
/* Standard shape j of family i, the shapes `clattn tune` runs without a
 * SHAPE (NULL past the last; a family may have none). */
CLATTN_API const char *clattn_family_standard_shape(int i, int j);
/* The shape keys family i reads, "batch seq kv-seq ..." (NULL: none). */
CLATTN_API const char *clattn_family_shape_keys(int i);

/* A call of a family given as shape text, "key=value" words such as
 * "batch=1 kv-seq=4096 heads=8 kv-heads=1 head-dim=64 dtype=f16" (keys per
 * family: clattn_family_shape_keys; unnamed sizes take the family's
 * defaults, e.g. kv-heads = heads).  An unknown family or key, or a value
 * out of range, is CLATTN_ERR_INVALID_ARG with the reason in the context's
 * message (the prediction's errmsg for clattn_model_shape).  params: the
 * caller's params (NULL: automatic).
 * Errors: as clattn_tune_attention / clattn_explain_attention /
 * clattn_model_attention, and CLATTN_ERR_INVALID_ARG for the text.  Threads:
 * as those (clattn_model_shape: pure, safe). */
CLATTN_API clattn_status clattn_tune_shape(clattn_ctx *ctx, clattn_db *db,
                                           const char *family,
                                           const char *shape,
                                           const clattn_tune_opts *opts,
                                           clattn_tune_result *out);
CLATTN_API clattn_status clattn_explain_shape(clattn_ctx *ctx,
                                              const char *family,
                                              const char *shape,
                                              const clattn_params *params,
                                              clattn_choice *out);
CLATTN_API clattn_status clattn_model_shape(const char *family,
                                            const char *shape,
                                            const clattn_params *params,
                                            const clattn_profile *prof,
                                            clattn_prediction *out);

/* ------------------------------------------------------ shipped tuning */

/* Tuning rows found by clattn's own runs (PoCL on AVX-512 and AVX2 CPUs,
 * CLBlast's Xgemm included, and any GPU measured), embedded in the library
 * as a file in clattn_db_export's format.  They form the tier of the
 * parameter choice after the caller's database (CLATTN_CHOICE_SHIPPED)
 * and the Xgemm parameters a context applies when its database has none
 * for the device.  $CLATTN_SHIPPED: "0" or "off" turns the tier off; a
 * path reads that file instead of the embedded one (a file that does not
 * parse leaves the tier empty, and clattn_explain_* says why).
 * clattn_shipped_count: the rows in use (0 when off); clattn_shipped_row:
 * row i (CLATTN_ERR_NOT_FOUND out of range).
 * Errors: as above; CLATTN_ERR_NOMEM.  Threads: safe (read once, then
 * constant). */
CLATTN_API int clattn_shipped_count(void);
CLATTN_API clattn_status clattn_shipped_row(int i, clattn_tune_entry *out);

/* What clattn_db_export_as writes. */
typedef enum clattn_export_format {
  CLATTN_EXPORT_JSON = 0,    /* every row, clattn_db_export's format */
  CLATTN_EXPORT_SHIPPED = 1, /* the same format, only what a shipped file
                                needs: per device, kernel and shape class
                                the best "ok" row of the current tuning
                                method */
  CLATTN_EXPORT_T4 = 2       /* Kernel Tuner's T4 results format (schema
                                1.0.0): one result per row, the params as
                                its configuration, the time in ms */
} clattn_export_format;
/* clattn_db_export in another format (fingerprint, kernel: NULL for all;
 * path "-": stdout; written to path + ".tmp", then renamed).
 * Errors: db, CLATTN_ERR_INVALID_ARG (an unknown format), CLATTN_ERR_IO.
 * Threads: not with concurrent use of the same db. */
CLATTN_API clattn_status clattn_db_export_as(clattn_db *db, const char *path,
                                             clattn_export_format format,
                                             const char *fingerprint,
                                             const char *kernel);

/* ---------------------------------------------------------- benchmarks */

/* One benchmarked call: a row of the bench table.  A run benches a
 * family's shape with the library's choice ("clattn") and with the
 * family's baselines ("copy": the probe's copy kernel moving the call's
 * compulsory bytes, every family; "unfused", "clblast", ...: a family's
 * own), each timed cold in the same run.  The database adds the date and
 * library version when the row has none. */
typedef struct clattn_bench_entry {
  char fingerprint[40]; /* device (clattn_profile.fingerprint) */
  char device[128];
  char vendor[64];
  char arch[64];
  char driver[64];
  char family[32];      /* the registry's name: "prefill", "decode", ... */
  char shape[256];      /* the shape text as run (clattn_tune_shape's) */
  char shape_class[96]; /* the family's tuning key */
  char impl[24];        /* "clattn" or a baseline's name */
  char params[256];     /* clattn: the resolved params; baselines: "" */
  char params_source[24]; /* clattn: clattn_choice_source_str (tuned,
                             shipped, model, default, ...); else "" */
  char params_device[128]; /* the device of the tuning row used, or "" */
  double median_s;      /* median of the timed runs */
  double spread;        /* (max - min) / median */
  double flops;         /* the model's useful FLOPs of the call */
  double bytes;         /* the model's DRAM bytes of the call */
  double predicted_s;   /* the model's time on the device's profile (0:
                           none); baselines: 0 */
  double roof_s;        /* max(t_memory, t_compute) on that profile */
  char bound[16];       /* the model's: "memory", "compute", "launch" */
  double max_err;       /* clattn: largest error against the plain-C
                           reference on the family's check case; a
                           baseline: against clattn's output (copy: 0) */
  char run[48];         /* the run that measured it ("" : set by put) */
  char library_version[16];
  char updated[32];     /* UTC, ISO 8601 ("" : now) */
} clattn_bench_entry;

/* Insert or replace the row of (fingerprint, family, shape, impl, run).
 * Text UTF-8 without control characters, fingerprint, family, shape,
 * impl set, times finite and >= 0 (median > 0), else
 * CLATTN_ERR_INVALID_ARG naming the field.
 * Errors: db, CLATTN_ERR_INVALID_ARG.  Threads: not with concurrent use of
 * the same db. */
CLATTN_API clattn_status clattn_db_put_bench(clattn_db *db,
                                             const clattn_bench_entry *e);
/* Rows matching the non-NULL filters, ordered by device, family, shape,
 * impl and date (newest first); *out is malloc'ed (free() it).  A
 * read-only handle lists too (a file older than the bench table: none).
 * Errors: db, CLATTN_ERR_INVALID_ARG (out or n NULL).  Threads: not with
 * concurrent use of the same db. */
CLATTN_API clattn_status clattn_db_list_bench(clattn_db *db,
                                              const char *fingerprint,
                                              const char *family,
                                              clattn_bench_entry **out,
                                              int *n);
/* Every stored profile, ordered by name; *out is malloc'ed (free() it).
 * Errors: db, CLATTN_ERR_INVALID_ARG (out or n NULL), CLATTN_ERR_NOMEM.
 * Threads: not with concurrent use of the same db. */
CLATTN_API clattn_status clattn_db_list_profiles(clattn_db *db,
                                                 clattn_profile **out,
                                                 int *n);

/* Bench options; zero fields are the defaults. */
typedef struct clattn_bench_opts {
  int repeats;        /* timed runs of each implementation (default 7, 3
                         when the library's call takes over 0.25 s) */
  int no_baselines;   /* nonzero: time the library's choice alone */
  const char *run;    /* the run's name (NULL: "<UTC date> <host> <pid>") */
  int no_store;       /* nonzero: db gives the profile only, no row is
                         stored */
} clattn_bench_opts;

enum { CLATTN_BENCH_MAX_IMPLS = 4 };

/* What one bench of a shape measured: rows[0] is clattn's, the rest the
 * family's baselines (ratio = baseline median / clattn median). */
typedef struct clattn_bench_result {
  clattn_bench_entry rows[CLATTN_BENCH_MAX_IMPLS];
  int n;
} clattn_bench_result;

/* Bench one call of a family given as shape text (clattn_tune_shape's
 * text; NULL: bench every standard shape is the CLI's loop, not this):
 * buffers of random data, the library's choice (as any call of the
 * context would make it) and the family's baselines timed in turn,
 * inputs rotated cold as the tuner does, the model's prediction on the
 * device's profile (clattn_profile_for with db), the error against the
 * reference on the family's check case; the rows are stored in db (NULL:
 * not stored) under one run name.
 * Errors: ctx, CLATTN_ERR_INVALID_ARG (family or shape, out NULL, options
 * out of range), call (as the family's public function), db.  Threads:
 * safe, context-serialised; not with concurrent use of the same db. */
CLATTN_API clattn_status clattn_bench_shape(clattn_ctx *ctx, clattn_db *db,
                                            const char *family,
                                            const char *shape,
                                            const clattn_bench_opts *opts,
                                            clattn_bench_result *out);
/* Shape j of the family's bench classes: its standard shapes and the
 * shapes a report compares (decode: MHA, GQA and MQA of one size).  NULL
 * past the last.
 * Errors: none.  Threads: pure, safe. */
CLATTN_API const char *clattn_family_bench_shape(int i, int j);

#ifdef __cplusplus
}
#endif
#endif /* CLATTN_H */
