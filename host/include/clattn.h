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
 *    float32, float16 or bfloat16 (and int8 for a paged KV cache);
 *    arithmetic is always float32.
 *  - The library never prints, aborts or exits.
 *
 * Versioned structs
 *  - Every struct the application fills or reads starts with
 *    `size_t size`, which the application sets to sizeof the struct as
 *    its copy of this header declares it:
 *        clattn_attn_desc d = {.size = sizeof d, .batch = 1, ...};
 *    Fields are only ever appended (without padding holes), and a zero
 *    field always means "the default", so a program built against an
 *    older header works unchanged with a newer library.
 *  - A struct the library reads: it reads the caller's `size` bytes and
 *    defaults every field past them.  A `size` of 0 (unset) is
 *    CLATTN_ERR_INVALID_ARG; a `size` larger than this library's (a newer
 *    header) is accepted when the fields this library does not know are
 *    zero, else CLATTN_ERR_UNSUPPORTED: a request this library cannot
 *    honour is refused, never ignored.
 *  - A struct the library writes: it writes at most the caller's `size`
 *    bytes and leaves `size` as the caller set it (0: CLATTN_ERR_INVALID_ARG).
 *  - A struct refers to another versioned struct by pointer
 *    (clattn_attn_desc.params) or holds its text (clattn_choice.params);
 *    the one record held by value, clattn_cost in clattn_prediction, is
 *    versioned with it.  Arrays of versioned structs cross the API with
 *    their element size as an argument (clattn_db_list_tune).
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
#define CLATTN_VERSION_MINOR 2
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
 *    CLATTN_ERR_INVALID_ARG (a NULL descriptor or buffer, a buffer
 *    created in another cl_context than the clattn context's, a wait list
 *    with NULL in it, an unknown dtype or layout, a bad scale or params
 *    field), CLATTN_ERR_SHAPE (a size below 1, heads that do not divide,
 *    sizes that overflow), CLATTN_ERR_UNSUPPORTED (a head dim above
 *    CLATTN_MAX_HEAD_DIM, params or a buffer the device or the compiled
 *    kernel cannot take),
 *    CLATTN_ERR_BUFFER_TOO_SMALL, CLATTN_ERR_BUILD (a kernel did not
 *    compile; the log is in the message), CLATTN_ERR_OPENCL and
 *    CLATTN_ERR_NOMEM.  Nothing is enqueued when the checks fail.
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
#define CLATTN_MAX_HEAD_DIM 512

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
  X(CLATTN_ERR_CAPACITY, -12, "KV cache capacity exceeded")                    \
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

/* Free memory the library handed out (the rows of clattn_db_list_*); NULL
 * is ignored.  Never free it with the application's free(), which may
 * belong to another C runtime.
 * Errors: none.  Threads: safe. */
CLATTN_API void clattn_free(void *p);

/* Storage type of tensors. */
typedef enum clattn_dtype {
  CLATTN_F32 = 0,
  CLATTN_F16 = 1, /* IEEE binary16, via vload_half/vstore_half */
  CLATTN_BF16 = 2, /* bfloat16, round-to-nearest-even on store */
  /* int8, a KV cache's storage alone (the paged calls' cache_dtype): one
   * float32 scale per (position, KV head) for K and for V, x = scale * q;
   * symmetric, round to nearest even, zero stored as zero.  Every other
   * tensor and call refuses it (CLATTN_ERR_UNSUPPORTED). */
  CLATTN_I8 = 3
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
  size_t size; /* sizeof(clattn_ctx_opts) */
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
  /* Nonzero: the context applies the device's tuned Xgemm parameters to
   * CLBlast itself (CLBlastOverrideParameters, before its layers' first
   * GEMM).  That is process-wide and cannot be undone: every CLBlast user
   * in the process on that device then runs with them.  0: CLBlast is
   * never re-parameterised; where a tuned entry covers a projection, the
   * library's own GEMM kernel runs it instead (clattn_explain_gemm). */
  int clblast_override;
} clattn_ctx_opts;

/* Create a context.  opts may be NULL (all defaults).
 * create: Errors: CLATTN_ERR_INVALID_ARG (out NULL, a malformed
 * $CLATTN_PARAMS), CLATTN_ERR_NO_DEVICE, CLATTN_ERR_UNSUPPORTED (an
 * out-of-order queue), CLATTN_ERR_OPENCL, CLATTN_ERR_NOMEM; message:
 * clattn_ctx_errmsg(NULL).  Threads: safe (any number at once).  destroy:
 * Errors: none.  Threads: not with concurrent use of the same context. */
CLATTN_API clattn_status clattn_ctx_create(const clattn_ctx_opts *opts,
                                           clattn_ctx **out);
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
  size_t size;                 /* sizeof(clattn_cache_stats) */
  unsigned long memory_hits;   /* programs found in memory */
  unsigned long disk_hits;     /* programs loaded from binaries on disk */
  unsigned long source_builds; /* programs compiled from source */
  unsigned long disk_writes;   /* binaries written to disk */
} clattn_cache_stats;
/* Errors: none (zeros for a bad ctx).  Threads: safe, context-serialised. */
CLATTN_API void clattn_ctx_cache_stats(const clattn_ctx *ctx,
                                       clattn_cache_stats *out);

/* Optional events for one library call: the first kernel it enqueues waits
 * on `wait` (num_wait events, none NULL; else CLATTN_ERR_INVALID_ARG and
 * nothing enqueued); `*out` (if out != NULL) receives an event for the last
 * one, which the caller must release. */
typedef struct clattn_events {
  size_t size; /* sizeof(clattn_events) */
  cl_uint num_wait;
  const cl_event *wait;
  cl_event *out;
} clattn_events;

/* Kernel-shape parameters: values of the call's family's tunables, each
 * family its own (clattn_family_tunable in clattn_tools.h, or `clattn
 * families`), by name in `text`: "variant=2 wg=64 keys=32".  A tunable not
 * named, or 0, is chosen by the library; an unknown name or a value out of
 * range is CLATTN_ERR_INVALID_ARG naming it.  The named int fields are an
 * older form of the tunables of those names (0: not set). */
typedef struct clattn_params {
  size_t size; /* sizeof(clattn_params) */
  int variant, rows, keys, wg, splits, prefetch, scheme;
  const char *text; /* "name=value ..." in the family's names; NULL: none */
} clattn_params;

/* ---------------------------------------------------------- attention */

/* Attention options: fields appended to the attention, decode and layer
 * descriptions, each zero (or NULL) for none.  Query i of a prefill sits at
 * position p = L - n_q + i (L its sequence's valid keys, as the causal mask
 * aligns it), a decode query at p = L - 1; key t.
 *  - window W >= 1: key t is visible only if p - W < t (the W most recent
 *    positions up to the query's own, Hugging Face's sliding_window); with
 *    causal also t <= p.  Key tiles wholly outside it are never read.
 *  - softcap C > 0: the scaled logit s becomes C tanh(s / C) (Gemma 2),
 *    before the biases and masks.
 *  - alibi_slopes: float32 [heads_q]: the logit of query head h gains
 *    -slope[h] |p - t| (FlashAttention's convention; for causal rows BLOOM's
 *    slope[h] t up to a constant per row).  Finite slopes.
 *  - sinks: float32 [heads_q]: a logit per query head that joins the
 *    softmax's denominator and weighs no value (GPT-OSS):
 *    o = sum_t e^(s_t - M) v_t / (e^(sink - M) + sum_t e^(s_t - M)); -inf is
 *    no sink, NaN and +inf are refused.  A row with no visible key is zeros.
 * The arrays are host memory, read during the call (a layer copies them
 * when it is created); the library keeps device copies by their contents.
 * A negative window, a negative or non-finite soft-cap, a non-finite slope
 * or a NaN or +inf sink: CLATTN_ERR_INVALID_ARG naming it, nothing
 * enqueued.  Talking-heads calls take the window alone (after the logit
 * mix, where their causal mask is); the others are CLATTN_ERR_UNSUPPORTED
 * there. */

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
  size_t size; /* sizeof(clattn_attn_desc) */
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
  /* attention options (above); zero: none */
  int window;
  float softcap;
  const float *alibi_slopes;
  const float *sinks;
} clattn_attn_desc;

/* Errors: ctx, call.  Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_attention(clattn_ctx *ctx,
                                          const clattn_attn_desc *d, cl_mem q,
                                          cl_mem k, cl_mem v, cl_mem kv_lens,
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
  size_t size; /* sizeof(clattn_decode_desc) */
  int batch;
  int capacity;
  int heads_q;
  int heads_kv;
  int head_dim_k;
  int head_dim_v;
  clattn_dtype dtype;
  clattn_layout cache_layout;
  float scale;                 /* 0 means 1/sqrt(head_dim_k) */
  const clattn_params *params; /* NULL: automatic */
  /* attention options (above); zero: none */
  int window;
  float softcap;
  const float *alibi_slopes;
  const float *sinks;
} clattn_decode_desc;

/* Errors: ctx, call.  Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_decode(clattn_ctx *ctx,
                                       const clattn_decode_desc *d, cl_mem q,
                                       cl_mem k_cache, cl_mem v_cache,
                                       cl_mem lens, cl_mem o,
                                       const clattn_events *ev);

/* Write n_new rows per sequence into the cache in place, at rows
 * pos[b] .. pos[b]+n_new-1.  k_new [batch, n_new, heads_kv, head_dim_k] and
 * v_new [batch, n_new, heads_kv, head_dim_v] are BSHD in the cache's dtype.
 * pos: int32 [batch]; rows that would fall outside [0, capacity) are not
 * written.  d passes clattn_decode's checks, its attention options'
 * included; they change nothing written.
 * Errors: ctx, call (n_new below 1: CLATTN_ERR_SHAPE).  Threads: safe,
 * context-serialised. */
CLATTN_API clattn_status clattn_kv_append(clattn_ctx *ctx,
                                          const clattn_decode_desc *d,
                                          int n_new, cl_mem k_new, cl_mem v_new,
                                          cl_mem pos, cl_mem k_cache,
                                          cl_mem v_cache,
                                          const clattn_events *ev);

/* ------------------------------------------- paged and ragged caches */

/* A paged KV cache (vLLM's pages, FlashAttention-2's flash_attn_with_kvcache
 * layout): one pool of num_blocks pages of page_size positions each, shared
 * by every sequence; sequence b's position t lives in page
 * block_table[b][t / page_size], row t % page_size.
 *
 *   q           [batch, n_q, heads_q, head_dim_k]        (dtype)
 *   o           [batch, n_q, heads_q, head_dim_v]        (dtype)
 *   k_cache     [num_blocks, page_size, heads_kv, head_dim_k] (cache_dtype)
 *   v_cache     [num_blocks, page_size, heads_kv, head_dim_v] (cache_dtype)
 *   k_scale, v_scale  float32 [num_blocks, page_size, heads_kv]: an int8
 *               cache's scales (NULL otherwise)
 *   block_table int32 [batch, max_blocks]: page indices, 0 .. num_blocks-1;
 *               entries past a sequence's last page are never read
 *   kv_lens     int32 [batch]: positions of each sequence including the
 *               n_q new ones, 0 .. max_blocks * page_size
 *
 * Query i of sequence b sits at position kv_lens[b] - n_q + i (as
 * FlashAttention aligns the queries of its kvcache call): with causal it
 * sees keys t <= that position, without it all kv_lens[b] keys.  n_q == 1
 * is a decode step (the KV range split across work-groups over pages and
 * combined with the log-sum-exp rule); n_q > 1 a chunked prefill over the
 * cached prefix plus the chunk.  A query that sees no key gets zeros.  The
 * attention options (above) apply as in clattn_attention.
 *
 * The library reads block_table and kv_lens back (one blocking read after
 * ev's wait list) and refuses, with CLATTN_ERR_SHAPE naming the entry and
 * nothing enqueued, a length below 0 or above max_blocks * page_size and a
 * page index outside 0 .. num_blocks-1 that a length needs.  With
 * `unchecked` nonzero it reads nothing and the kernels skip such pages
 * instead: never a read outside the pool, but no error either. */
typedef struct clattn_paged_desc {
  size_t size; /* sizeof(clattn_paged_desc) */
  int batch;
  int n_q; /* new queries (or rows appended) per sequence, >= 1 */
  int heads_q;
  int heads_kv;
  int head_dim_k;
  int head_dim_v;
  int num_blocks; /* pages in the pool */
  int page_size;  /* positions a page: a power of two, 1 .. 256 */
  int max_blocks; /* block_table's columns */
  clattn_dtype dtype; /* q, o, and the appended rows */
  /* The cache's storage: 0 (CLATTN_F32) means dtype's; CLATTN_I8 an int8
   * cache with scales (q and o in dtype).  Another value is refused. */
  clattn_dtype cache_dtype;
  float scale; /* 0 means 1/sqrt(head_dim_k) */
  int causal;
  const clattn_params *params; /* NULL: automatic */
  /* attention options (above); zero: none */
  int window;
  float softcap;
  const float *alibi_slopes;
  const float *sinks;
  int unchecked; /* nonzero: block_table and kv_lens are not read back */
} clattn_paged_desc;

/* Errors: ctx, call, CLATTN_ERR_SHAPE also for a block table or lengths
 * refused above.  Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_paged_attention(
    clattn_ctx *ctx, const clattn_paged_desc *d, cl_mem q, cl_mem k_cache,
    cl_mem v_cache, cl_mem k_scale, cl_mem v_scale, cl_mem block_table,
    cl_mem kv_lens, cl_mem o, const clattn_events *ev);

/* Write d->n_q new rows per sequence into the pages block_table names, at
 * positions kv_lens[b] - n_q .. kv_lens[b] - 1 (kv_lens: the lengths after
 * the append, the same buffer the attention call then takes); positions
 * below 0 are not written.  k_new [batch, n_q, heads_kv, head_dim_k] and
 * v_new [batch, n_q, heads_kv, head_dim_v] are BSHD in dtype; an int8 cache
 * gets each (position, head) row quantized on write (scale = max |x| / 127,
 * stored in k_scale / v_scale).  The block table and lengths are checked as
 * for clattn_paged_attention; the attention options change nothing written.
 * Errors: ctx, call.  Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_paged_append(
    clattn_ctx *ctx, const clattn_paged_desc *d, cl_mem k_new, cl_mem v_new,
    cl_mem block_table, cl_mem kv_lens, cl_mem k_cache, cl_mem v_cache,
    cl_mem k_scale, cl_mem v_scale, const clattn_events *ev);

/* Ragged (packed) prefill, FlashAttention-2's varlen convention: batch
 * sequences packed without padding,
 *   q [total_q, heads_q, head_dim_k], o [total_q, heads_q, head_dim_v]
 *   k [total_k, heads_kv, head_dim_k], v [total_k, heads_kv, head_dim_v]
 *   cu_seqlens_q, cu_seqlens_k int32 [batch + 1]: sequence b's queries are
 *     rows cu_seqlens_q[b] .. cu_seqlens_q[b+1]-1 of q, its keys likewise;
 *     each starts at 0, never decreases and ends at total_q (total_k).
 * Each sequence attends to its own keys alone; with causal its query i
 * sits at position len_k - len_q + i.  Work is spread over query tiles of
 * all sequences (by tokens, not by the longest sequence).  The cu_seqlens
 * are read back and checked as a paged call's tables (CLATTN_ERR_SHAPE
 * naming the entry) unless `unchecked`; unchecked, a sequence whose
 * offsets fall outside the tensors is skipped. */
typedef struct clattn_varlen_desc {
  size_t size; /* sizeof(clattn_varlen_desc) */
  int batch;
  int total_q;
  int total_k;
  int heads_q;
  int heads_kv;
  int head_dim_k;
  int head_dim_v;
  clattn_dtype dtype;
  float scale; /* 0 means 1/sqrt(head_dim_k) */
  int causal;
  const clattn_params *params; /* NULL: automatic */
  /* attention options (above); zero: none */
  int window;
  float softcap;
  const float *alibi_slopes;
  const float *sinks;
  int unchecked; /* nonzero: cu_seqlens are not read back */
} clattn_varlen_desc;

/* Errors: ctx, call, CLATTN_ERR_SHAPE also for cu_seqlens refused above.
 * Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_varlen_attention(
    clattn_ctx *ctx, const clattn_varlen_desc *d, cl_mem q, cl_mem k,
    cl_mem v, cl_mem cu_seqlens_q, cl_mem cu_seqlens_k, cl_mem o,
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
  size_t size; /* sizeof(clattn_th_desc) */
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
  /* attention options (clattn_attn_desc): the window alone; zero: none */
  int window;
  float softcap;
  const float *alibi_slopes;
  const float *sinks;
} clattn_th_desc;

/* Errors: ctx, call.  Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_talking_heads(
    clattn_ctx *ctx, const clattn_th_desc *d, cl_mem q, cl_mem k, cl_mem v,
    cl_mem p_l, cl_mem p_w, cl_mem kv_lens, cl_mem o, const clattn_events *ev);

/* One new query per sequence against a KV cache (split-KV, exact for
 * talking-heads: the softmax statistics of every logit head are combined
 * over the splits before any weight is mixed by P_w).
 *   q [batch, heads_k, head_dim_k], o [batch, heads_v, head_dim_v]
 *   k_cache [batch, capacity, heads_k, head_dim_k] (CLATTN_BSHD) or
 *           [batch, heads_k, capacity, head_dim_k] (CLATTN_BHSD)
 *   v_cache likewise with heads_v and head_dim_v
 *   lens int32 [batch]: valid cache rows (clamped to [0, capacity]). */
typedef struct clattn_th_decode_desc {
  size_t size; /* sizeof(clattn_th_decode_desc) */
  int batch;
  int capacity;
  int heads_k;
  int heads;
  int heads_v;
  int head_dim_k;
  int head_dim_v;
  clattn_dtype dtype;
  clattn_layout cache_layout;
  float scale;                 /* 0 means 1/sqrt(head_dim_k) */
  const clattn_params *params; /* NULL: automatic */
  /* attention options (clattn_attn_desc): the window alone; zero: none */
  int window;
  float softcap;
  const float *alibi_slopes;
  const float *sinks;
} clattn_th_decode_desc;

/* Errors: ctx, call.  Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_talking_heads_decode(
    clattn_ctx *ctx, const clattn_th_decode_desc *d, cl_mem q, cl_mem k_cache,
    cl_mem v_cache, cl_mem p_l, cl_mem p_w, cl_mem lens, cl_mem o,
    const clattn_events *ev);

/* clattn_kv_append for a talking-heads cache: k_new [batch, n_new, heads_k,
 * head_dim_k] and v_new [batch, n_new, heads_v, head_dim_v] (BSHD, the
 * cache's dtype) written at rows pos[b] .. pos[b]+n_new-1; rows outside
 * [0, capacity) are not written.  The attention options of d are ignored
 * (they change no cache row).
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
 * tuning entries, except that the own kernel runs where a tuned Xgemm
 * entry covers the GEMM and the context does not opt in to setting it on
 * CLBlast: clattn_ctx_opts.clblast_override, clattn_explain_gemm),
 * attention through the fused kernels.
 *   x [batch, n, d_model], y [batch, n, d_model]
 *   w_q [d_model, heads_q*head_dim_k], w_k [d_model, heads_kv*head_dim_k],
 *   w_v [d_model, heads_kv*head_dim_v], w_o [heads_q*head_dim_v, d_model]
 * (row-major; head h of the projection is columns h*dim .. h*dim+dim-1). */
typedef struct clattn_layer_desc {
  size_t size; /* sizeof(clattn_layer_desc) */
  int d_model;
  int heads_q;
  int heads_kv;
  int head_dim_k;
  int head_dim_v;
  float scale; /* 0 means 1/sqrt(head_dim_k) */
  /* attention options (above); zero: none */
  int window;
  float softcap;
  const float *alibi_slopes;
  const float *sinks;
} clattn_layer_desc;

typedef struct clattn_layer clattn_layer;

/* The weights are retained by the layer.  With clattn_ctx_opts.
 * clblast_override, the first layer of a context sets the device's tuned
 * Xgemm parameters on CLBlast: process-wide, for every CLBlast user on that
 * device, and not undone by destroying the layer or the context; without
 * it no layer call changes CLBlast's parameters.
 * create: Errors: ctx, CLATTN_ERR_INVALID_ARG (a NULL descriptor, weight or
 * out, a weight of another cl_context), CLATTN_ERR_SHAPE,
 * CLATTN_ERR_UNSUPPORTED, CLATTN_ERR_BUFFER_TOO_SMALL (a weight smaller than
 * its shape), CLATTN_ERR_OPENCL, CLATTN_ERR_NOMEM.  Threads: safe,
 * context-serialised.  destroy: Errors: none.  Threads: not with concurrent
 * use of the same layer. */
CLATTN_API clattn_status clattn_layer_create(clattn_ctx *ctx,
                                             const clattn_layer_desc *d,
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
  size_t size; /* sizeof(clattn_th_layer_desc) */
  int d_model;
  int heads_k;
  int heads;
  int heads_v;
  int head_dim_k;
  int head_dim_v;
  float scale; /* 0 means 1/sqrt(head_dim_k) */
  /* attention options (clattn_attn_desc): the window alone; zero: none */
  int window;
  float softcap;
  const float *alibi_slopes;
  const float *sinks;
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
  size_t size; /* sizeof(clattn_hh_layer_desc) */
  int d_model;
  int heads;
  int max_len; /* Super: l, W_a's size and the longest sequence; others 0 */
  float scale; /* 0 means 1/sqrt(d_model / heads) */
  /* attention options (above); zero: none */
  int window;
  float softcap;
  const float *alibi_slopes;
  const float *sinks;
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
CLATTN_API clattn_status
clattn_layer_create_efficient(clattn_ctx *ctx, const clattn_hh_layer_desc *d,
                              cl_mem w_q, cl_mem w_o, clattn_layer **out);
CLATTN_API clattn_status clattn_layer_create_super(
    clattn_ctx *ctx, const clattn_hh_layer_desc *d, cl_mem w_q, cl_mem w_a,
    cl_mem w_o, clattn_layer **out);

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
  size_t size; /* sizeof(clattn_switchhead_layer_desc) */
  int d_model;
  int heads;
  int head_dim;
  int experts;
  int topk;    /* experts per head and position, 1 .. experts */
  float scale; /* 0 means 1/sqrt(head_dim) */
  /* attention options (above); zero: none */
  int window;
  float softcap;
  const float *alibi_slopes;
  const float *sinks;
} clattn_switchhead_layer_desc;

/* Errors: ctx, those listed above, CLATTN_ERR_OPENCL, CLATTN_ERR_NOMEM.
 * Threads: safe, context-serialised. */
CLATTN_API clattn_status clattn_layer_create_switchhead(
    clattn_ctx *ctx, const clattn_switchhead_layer_desc *d, cl_mem w_q,
    cl_mem w_k, cl_mem w_v, cl_mem w_o, cl_mem w_s, cl_mem w_d,
    clattn_layer **out);

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
                                                int capacity,
                                                clattn_kv_cache **out);
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
CLATTN_API clattn_status clattn_layer_prefill(clattn_layer *layer,
                                              clattn_kv_cache *cache, int batch,
                                              int n, int causal, cl_mem x,
                                              cl_mem y,
                                              const clattn_events *ev);

/* Decode step: one new position per sequence (x, y: [batch, d_model]);
 * its K/V are appended to the cache and it attends causally to the whole
 * cache.  batch must equal the cache's batch.
 * Errors: as clattn_layer_prefill (a NULL cache: CLATTN_ERR_INVALID_ARG).
 * Threads: safe, context-serialised; not with concurrent use of the same
 * cache. */
CLATTN_API clattn_status clattn_layer_decode(clattn_layer *layer,
                                             clattn_kv_cache *cache, cl_mem x,
                                             cl_mem y, const clattn_events *ev);

/* A paged KV pool the application owns, for clattn_layer_step_paged: the
 * buffers of clattn_paged_desc's layout (above) with the layer's heads,
 *   k_pool  [num_blocks, page_size, heads_kv, head_dim_k]  (cache_dtype)
 *   v_pool  [num_blocks, page_size, heads_kv, head_dim_v]  (cache_dtype)
 *   k_scale, v_scale  float32 [num_blocks, page_size, heads_kv]: an int8
 *           pool's scales (NULL for a float32 pool).
 * The library borrows them for the call: it never allocates, grows or
 * retains a pool, and writes only the rows a step appends. */
typedef struct clattn_paged_pool {
  size_t size;    /* sizeof(clattn_paged_pool) */
  int num_blocks; /* pages in the pool */
  int page_size;  /* positions a page: a power of two, 1 .. 256 */
  int max_blocks; /* the block table's columns */
  /* 0 (CLATTN_F32): float32; CLATTN_I8: int8 with k_scale and v_scale */
  clattn_dtype cache_dtype;
  cl_mem k_pool, v_pool, k_scale, v_scale;
  /* nonzero: the block table and lengths are not read back and checked
   * (clattn_paged_desc.unchecked): no blocking read, no error either */
  int unchecked;
} clattn_paged_pool;

/* One step of a layer over a paged pool: n new positions for each of
 * batch sequences (x, y [batch, n, d_model]; n == 1 a decode step, n > 1 a
 * prefill chunk).  block_table int32 [batch, pool->max_blocks] names each
 * sequence's pages; kv_lens int32 [batch] are the lengths AFTER the step
 * (the application advanced them by n), so the new positions are
 * kv_lens[b] - n .. kv_lens[b] - 1 and kv_lens[b] >= n.  The layer projects
 * Q, K and V, appends K and V into the pages (quantized on write for an
 * int8 pool), attends as clattn_paged_attention does (query i at position
 * kv_lens[b] - n + i; causal as there) and projects the output.  Sequences
 * in one step may have any lengths; which sequence a row of the batch is,
 * is the table's row the application passes, so sequences may join, leave
 * and reuse each other's pages between steps.  Float32 arithmetic; the
 * pool float32 or int8.  The table and lengths are read back (blocking
 * reads after ev's wait list) and checked before anything is enqueued,
 * as the paged calls check them, unless pool->unchecked.
 * Only the GQA layer (clattn_layer_create) runs over a pool; the other
 * kinds' caches hold other tensors: CLATTN_ERR_UNSUPPORTED naming the kind.
 * Errors: ctx (a layer that is not live), call (CLATTN_ERR_INVALID_ARG for
 * a NULL pool, pool buffer, table, lengths, x or y; CLATTN_ERR_SHAPE for a
 * page size that is not a power of two up to 256, a pool field below 1, a
 * table entry or length refused; CLATTN_ERR_BUFFER_TOO_SMALL for a pool
 * buffer smaller than its shape), CLATTN_ERR_UNSUPPORTED (the layer's kind,
 * a cache_dtype other than float32 or int8), CLATTN_ERR_CLBLAST.  Threads:
 * safe, context-serialised; not with concurrent steps on the same pool. */
CLATTN_API clattn_status clattn_layer_step_paged(
    clattn_layer *layer, const clattn_paged_pool *pool, int batch, int n,
    int causal, cl_mem block_table, cl_mem kv_lens, cl_mem x, cl_mem y,
    const clattn_events *ev);

/* ------------------------------------------------- parameter choice */

/* Where the parameters of a call come from, in the order they are tried:
 * the caller's desc->params (any value set), an override
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
  size_t size; /* sizeof(clattn_choice) */
  clattn_choice_source source;
  char params[256];       /* as chosen, "name=value ..." in the family's
                             tunables ("": automatic) */
  char resolved[256];     /* as the kernels run them (values of 0 left
                             out), the same text */
  char shape_class[96];   /* the call's shape class */
  char entry_class[96];   /* shape class of the tuning entry used, or "" */
  char entry_device[128]; /* device of that entry, or "" */
  double entry_median_s;  /* its measured time (0 if none) */
  char why[512];          /* one line: the sources tried and the pick */
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
 * (the families of clattn_family_name, each with its own tunables;
 * unnamed tunables stay automatic).  NULL or "" removes every override.
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

#ifdef __cplusplus
}
#endif
#endif /* CLATTN_H */
