/*
 * clattn_tools.h - the tooling API of libclattn: device profiles and the
 * probe, the roofline model, the tuning database, the autotuner, the
 * kernel registry, the shipped tuning data and the benchmarks.
 *
 * It includes clattn.h, the kernel API an application embeds (contexts,
 * calls, layers, caches, explain), and follows its conventions ("Errors and
 * threads", "Versioned structs"), with one more shorthand:
 *  - "db": CLATTN_ERR_MISUSE for a db that is not open, CLATTN_ERR_DB for
 *    an SQLite failure (the message in clattn_db_errmsg), CLATTN_ERR_NOMEM.
 */
#ifndef CLATTN_TOOLS_H
#define CLATTN_TOOLS_H

#include "clattn.h"

#include <signal.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------- device profiles */

/* Where a profile's ceilings come from. */
typedef enum clattn_profile_source {
  CLATTN_PROFILE_REPORTED = 0,  /* only what the device reports; no ceilings */
  CLATTN_PROFILE_DATASHEET = 1, /* shipped vendor datasheet figures */
  CLATTN_PROFILE_MEASURED = 2   /* clattn_probe on the device */
} clattn_profile_source;

/* A GEMM's measured rate (clattn_profile.gemm_rates): C[m, n] += A[m, k]
 * B[k, n] at gflops (2 m n k FLOPs a call). */
typedef struct clattn_gemm_rate {
  int m, n, k;
  double gflops;
} clattn_gemm_rate;
#define CLATTN_PROFILE_GEMM_RATES 16

/* A device as the roofline model sees it.  Rates are decimal (1e9 B/s,
 * 1e9 FLOP/s); 0 means unknown. */
typedef struct clattn_profile {
  size_t size; /* sizeof(clattn_profile) */
  clattn_profile_source source;
  /* Hex digest of platform, vendor, device name, driver version, compute
   * units and clock; "" for datasheet profiles. */
  char fingerprint[40];
  char name[128];
  char vendor[64];
  char platform[64];
  char driver[64];
  char arch[64]; /* architecture/generation, e.g. "Ampere", "RDNA3" */
  int is_cpu;
  unsigned compute_units; /* SMs, CUs, Xe-cores/EUs or CPU cores */
  unsigned clock_mhz;
  unsigned wave_width;   /* warp / wavefront / SIMD width (1: unknown) */
  unsigned simds_per_cu; /* 0: unknown */
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
  double local_gbs;           /* local-memory bandwidth (whole device) */
  double h2d_gbs, d2h_gbs;    /* host <-> device transfers */
  double launch_us;           /* enqueue + finish of one small kernel */
  double launch_pipelined_us; /* per kernel in a stream of launches */
  /* Measured by clattn_probe: the version of its method
   * (CLATTN_PROBE_METHOD when this library probed); 0: not measured by
   * clattn_probe (reported, datasheet, or ceilings entered by hand). */
  int probe_method;
  char note[512]; /* datasheet: sources; measured: date and probe settings;
                     reported: why a stored measurement was not used */
  /* The in-core rates (probe method 3; docs/MODEL.md, "The in-core
   * term"): what the kernels issue besides FMAs and DRAM traffic, each
   * timed by a micro-kernel of the probe.  0: not measured, and the model
   * prices the operation as each field says. */
  double exp2_gops;   /* exp2 lanes a second through the kernels' own
                         polynomial (0: its 6 FMAs at the FMA peak) */
  double cache_gbs;   /* global loads the cache serves: a read kernel
                         over a buffer that fits a quarter of the
                         last-level cache (0: such loads are free) */
  double barrier_ns;  /* a work-group barrier: the device's time per
                         barrier of one work-group, work-groups in flight
                         overlapping as they do on it (0: free) */
  double launch_call_us; /* one launch in a stream as the library issues
                            them: its arguments, six buffers, set anew for
                            every launch (0: launch_pipelined_us) */
  double fp32_wg1_gflops; /* the FMA rate in work-groups of one work-item,
                             as the register-blocked kernels and a CPU's
                             launches without a local size run (0: the
                             FMA peak) */
  double exp2_wg1_gops;   /* exp2 lanes a second in groups of one (0:
                             exp2_gops) */
  /* How memory and in-core time combine: the share of the shorter of the
   * two that the longer does not hide, measured by a kernel that streams
   * and computes at once.  0: none (the roofline's max), 1: all (their
   * sum). */
  double unhidden;
  /* GEMM rates the tuning database measured on this device (its best
   * CLBlast Xgemm rows; clattn_profile_for fills them, they are not
   * stored with the profile): a projection of the same m, n and k is
   * priced at that rate, any other at the FMA peak. */
  int n_gemm_rates;
  clattn_gemm_rate gemm_rates[CLATTN_PROFILE_GEMM_RATES];
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
  size_t size;         /* sizeof(clattn_probe_opts) */
  double target_s;     /* time per measured repeat (default 0.05 s) */
  int repeats;         /* repeats per figure, median kept (default 5) */
  size_t buffer_bytes; /* per array of the bandwidth kernels (default: 4x
                          the last-level cache estimate, at least 64 MiB,
                          capped by the device's max allocation) */
  int thorough;        /* longer calibration and more repeats */
} clattn_probe_opts;

/* The probe's method, raised whenever a change to it changes what it
 * measures (docs/MODEL.md lists them).  Stored profiles of an older method
 * are not used (clattn_profile_for). */
#define CLATTN_PROBE_METHOD 3

/* Vector widths the probe measures: 1, 2, 4, 8, 16. */
#define CLATTN_PROBE_WIDTHS 5

/* The figures of one probe behind its profile. */
typedef struct clattn_probe_result {
  size_t size; /* sizeof(clattn_probe_result) */
  double read_gbs[CLATTN_PROBE_WIDTHS];
  double copy_gbs[CLATTN_PROBE_WIDTHS];
  double triad_gbs[CLATTN_PROBE_WIDTHS];
  double fma_gflops[CLATTN_PROBE_WIDTHS];
  double fp16_gflops; /* 0 without cl_khr_fp16 */
  size_t buffer_bytes;
  double seconds; /* wall time of the probe */
  double exp2_gops[CLATTN_PROBE_WIDTHS]; /* 0 at width 2 (no exp2s2) */
  double cache_gbs[CLATTN_PROBE_WIDTHS];
  double fma_wg1_gflops[CLATTN_PROBE_WIDTHS]; /* in groups of one */
  double exp2_wg1_gops[CLATTN_PROBE_WIDTHS];
} clattn_probe_result;

/* clpeak-style device probe: warm-up, calibration to target_s, median of
 * repeats, random data.  Takes under 30 s per device by default.  profile:
 * source MEASURED, ceilings the best of the widths; detail (may be NULL):
 * the figures of every width.
 * Errors: ctx, CLATTN_ERR_INVALID_ARG (profile NULL, options out of range),
 * CLATTN_ERR_UNSUPPORTED, CLATTN_ERR_BUILD, CLATTN_ERR_OPENCL,
 * CLATTN_ERR_NOMEM.  Threads: safe, context-serialised (other threads' calls
 * on ctx wait for the whole probe). */
CLATTN_API clattn_status clattn_probe(clattn_ctx *ctx,
                                      const clattn_probe_opts *opts,
                                      clattn_profile *profile,
                                      clattn_probe_result *detail);

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
CLATTN_API clattn_status clattn_copy_ref_run(clattn_copy_ref *ref, double *gbs);
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
 * clattn_db_open is for writing: it creates the file (the default path's
 * missing directories too, below $HOME or $XDG_DATA_HOME's parent; a path
 * given or in $CLATTN_DB must be in a directory that exists), migrates
 * the schema and waits up to 10 s for another writer's lock.
 * clattn_db_open_readonly is for reading only: it creates nothing, never
 * migrates, works in a read-only directory or on a read-only file, and
 * waits at most 200 ms for a lock (WAL readers are normally never
 * blocked); writes through its handle fail with CLATTN_ERR_DB.
 * A clattn database carries PRAGMA application_id 0x636c4174 ("clAt"),
 * set when the file is created or migrated; a file of another application
 * (another id, or tables that are not clattn's) or not SQLite at all is
 * refused by both before anything is written to it, and left byte for
 * byte as it was ("not a clattn database" in the message).
 * Errors: CLATTN_ERR_INVALID_ARG for out == NULL; CLATTN_ERR_NOMEM;
 * CLATTN_ERR_DB when the file cannot be created or opened (a read-only
 * filesystem or a permission named as such), is not a clattn database,
 * has a schema newer than this library's (or, read-only, older than it
 * reads) or stays locked ("busy" in the message);
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
  size_t size; /* sizeof(clattn_check_record) */
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
 *    launch (the roofline's times: t_compute prices every lane at the
 *    FMA peak); t_pred = the in-core term's t_busy (clattn_core) +
 *    t_launch, the launch at the profile's launch_call_us; the bound:
 *    launch where t_launch > t_busy, else memory where t_memory is at
 *    least t_core and t_cache + t_local, else compute (the work stays in
 *    the cores: their arithmetic, or the loads their caches serve). */
typedef struct clattn_cost {
  /* No size of its own: a record of clattn_prediction, versioned with it
   * (the prediction's size says which layout the caller has). */
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
  double intensity;                             /* flops / bytes_dram */
  double t_memory, t_compute, t_launch, t_pred; /* seconds */
  clattn_bound bound;
} clattn_cost;

#define CLATTN_MODEL_MAX_KERNELS 12

/* What a kernel issues besides its FMAs and DRAM traffic, and its time by
 * the in-core term (docs/MODEL.md, "The in-core term"): each count priced
 * at the profile's rate of it, the arithmetic and the data path combined
 * as the Execution-Cache-Memory model does.  A record of
 * clattn_prediction, versioned with it.
 *  - barriers: work-group barriers, one per barrier a work-group passes
 *    (counted from the plan, as the kernels' loops pass them);
 *  - cached_bytes: issued global loads beyond the DRAM reads, which the
 *    cache serves (bytes_read - the DRAM reads);
 *  - fma_gflops: the rate its FMA lanes are priced at (2 FLOPs a lane):
 *    the profile's FMA peak (fp32_wg1_gflops where the kernel runs in
 *    groups of one work-item and the profile has that rate), or a GEMM
 *    rate it holds for a projection's m, n and k;
 *  - t_fma: the FMA lanes less the exp2 polynomials' at fma_gflops, a
 *    spilled lane counted twice; t_exp2: the exp2 lanes at the exp2 rate
 *    (in groups of one likewise);
 *    t_cache, t_local: cached and local-memory bytes at their rates;
 *    t_barrier: barriers at the barrier time;
 *  - t_core = t_fma + t_exp2, the arithmetic (one set of pipes);
 *  - t_data = t_cache + t_local + t_memory, the data path (the load and
 *    store units, the caches, DRAM);
 *  - t_busy = max(t_core, t_data) + the profile's `unhidden` share of
 *    min(t_core, t_memory) (what DRAM and the arithmetic fail to hide of
 *    each other; cached loads overlap the arithmetic) + t_barrier (a
 *    barrier waits for both); t_pred = t_busy + t_launch. */
typedef struct clattn_core {
  double barriers;
  double cached_bytes;
  double group_items; /* work-items a work-group of the launch (its local
                         size); 0: the launch passes none (groups of one
                         on a CPU, the driver's choice elsewhere) */
  double fma_gflops;
  double t_fma, t_exp2, t_cache, t_local, t_barrier;
  double t_core;
  double t_data;
  double t_busy;
} clattn_core;

/* The model's prediction for one library call on one device profile. */
typedef struct clattn_prediction {
  size_t size; /* sizeof(clattn_prediction) */
  int n_kernels;
  clattn_cost kernel[CLATTN_MODEL_MAX_KERNELS];
  clattn_cost total;
  double ridge;     /* FLOP/byte where the device's roofline bends */
  char params[256]; /* the parameters the call resolves to, as
                       clattn_choice.resolved writes them */
  char errmsg[256]; /* why a model call failed */
  /* The in-core term of each kernel (core[i] of kernel[i]) and of the
   * total, appended after the roofline's fields (docs/MODEL.md). */
  clattn_core core[CLATTN_MODEL_MAX_KERNELS];
  clattn_core core_total;
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
/* Predict clattn_paged_attention and clattn_paged_append (kv_lens: host
 * copy [batch], the lengths after the new rows; NULL = the table's
 * capacity, max_blocks * page_size). */
CLATTN_API clattn_status clattn_model_paged_attention(
    const clattn_paged_desc *d, const int *kv_lens, const clattn_profile *prof,
    clattn_prediction *out);
CLATTN_API clattn_status clattn_model_paged_append(const clattn_paged_desc *d,
                                                   const int *kv_lens,
                                                   const clattn_profile *prof,
                                                   clattn_prediction *out);
/* Predict clattn_varlen_attention (host copies [batch + 1] of both offset
 * arrays; either NULL = the totals split evenly over the batch). */
CLATTN_API clattn_status clattn_model_varlen_attention(
    const clattn_varlen_desc *d, const int *cu_seqlens_q,
    const int *cu_seqlens_k, const clattn_profile *prof,
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
                                               int batch, int n, int cache_len,
                                               int causal,
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
  size_t size; /* sizeof(clattn_switchhead_paper) */
  int heads, head_dim, d_model;
  int seq_len;        /* T */
  int context_blocks; /* cb = C - 1: earlier chunks (1 for the XL models) */
  int experts, topk;
  int rope;
} clattn_switchhead_paper;

/* Errors: as above.  Threads: pure, safe. */
CLATTN_API clattn_status clattn_model_switchhead_paper(
    const clattn_switchhead_paper *c, long long *macs, long long *mem_floats);

/* ---------------------------------------------------------- autotuner */

/* One measured (or rejected) candidate: a row of the tuning table.  The
 * database adds the date and library version when the row has none. */
typedef struct clattn_tune_entry {
  size_t size;          /* sizeof(clattn_tune_entry) */
  char fingerprint[40]; /* device (clattn_profile.fingerprint) */
  char device[128];
  char vendor[64];
  char arch[64];
  char driver[64];
  char kernel[24]; /* "prefill", "decode", "clblast-xgemm" */
  char shape_class[96];
  char params[256];   /* "name=value ..." */
  char status[16];    /* "ok", "wrong", "failed", "timeout", "slow" */
  double median_s;    /* median of the repeats (slow: the first run) */
  double spread;      /* (max - min) / median of the repeats */
  double predicted_s; /* the model's time (0: no prediction) */
  double max_err;     /* largest error against the reference */
  char strategy[16];  /* the search that measured it */
  char message[256];  /* why a candidate was rejected */
  char library_version[16];
  char updated[32]; /* UTC, ISO 8601 */
  int tune_method;  /* clattn_tune_method(kernel) when measured; 0:
                       unknown (rows imported from files without it) */
} clattn_tune_entry;

/* The tuner's method for a kernel ("prefill", "decode", "clblast-xgemm"),
 * raised whenever a change to that kernel's code or to how the tuner times
 * it changes what a stored time means (docs/TUNING.md lists them).  Rows
 * of another method are neither reused
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
 * tune_method >= 0, params that the kernel's family plans, in its
 * tunables' names (Xgemm's: NAME=count fields; a kernel this library does
 * not know: "name=count" words); else CLATTN_ERR_INVALID_ARG naming the
 * field.
 * Rows that fail these checks when read (stored otherwise) are skipped by
 * the run-time choice, and clattn_explain_* says so.
 * Errors: db, CLATTN_ERR_INVALID_ARG (e NULL, a field too long, an invalid
 * row as above).  Threads: not with concurrent use of the same db. */
CLATTN_API clattn_status clattn_db_put_tune(clattn_db *db,
                                            const clattn_tune_entry *e);
/* Rows matching the non-NULL filters, ordered by kernel, shape class and
 * time: *n rows of entry_size bytes each (sizeof(clattn_tune_entry) as
 * the caller's header declares it; each row's size is set to it) in *out,
 * which the caller frees with clattn_free.
 * Errors: db, CLATTN_ERR_INVALID_ARG (out or n NULL, entry_size below
 * sizeof(size_t)), CLATTN_ERR_NOMEM.  Threads: not with concurrent use of
 * the same db. */
CLATTN_API clattn_status clattn_db_list_tune(clattn_db *db,
                                             const char *fingerprint,
                                             const char *kernel,
                                             const char *shape_class,
                                             size_t entry_size,
                                             clattn_tune_entry **out, int *n);
/* Share tuning rows between machines: export writes every row as JSON
 * ({"clattn_tuning": 1, "library_version": ..., "exported": ...,
 * "entries": [...]}, an entry as clattn_tune_entry_json writes it) to
 * path ("-": stdout): a regular file through a temporary of its own beside
 * it (a random name, created exclusively, never through a link), renamed
 * over path once whole; a character device or FIFO written through; a
 * symbolic link's target written; a directory, block device, socket, link
 * to nothing, or the database's own file (or its -wal, -shm, -journal)
 * refused with CLATTN_ERR_INVALID_ARG and left as it was.  Import reads such
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
CLATTN_API size_t clattn_tune_entry_json(const clattn_tune_entry *e, char *buf,
                                         size_t cap);

/* Search strategies. */
typedef enum clattn_tune_strategy {
  CLATTN_TUNE_AUTO = 0, /* exhaustive for small spaces, else model
                           then annealing */
  CLATTN_TUNE_EXHAUSTIVE = 1,
  CLATTN_TUNE_RANDOM = 2,
  CLATTN_TUNE_ANNEAL = 3, /* simulated annealing over neighbours */
  CLATTN_TUNE_MODEL = 4   /* in the roofline model's predicted order */
} clattn_tune_strategy;
/* Errors: none.  Threads: pure, safe. */
CLATTN_API const char *clattn_tune_strategy_str(clattn_tune_strategy s);

/* Progress of a tuning run, reported after every candidate. */
typedef struct clattn_tune_progress {
  size_t size; /* set by the library to its own sizeof: the callback reads
                  the fields its header declares, which it always has */
  const char *kernel;
  const char *shape_class;
  int done;      /* candidates evaluated in this run (reused included) */
  int total;     /* candidates the run may evaluate */
  int space;     /* valid candidates in the space */
  double best_s; /* best median so far (0: none yet) */
  char best_params[256];
  double elapsed_s, budget_s;    /* budget_s 0: none */
  const clattn_tune_entry *last; /* the candidate just evaluated (the
                                    library's struct, as `size` above) */
} clattn_tune_progress;

/* Tuning options; zero fields are the defaults. */
typedef struct clattn_tune_opts {
  size_t size; /* sizeof(clattn_tune_opts) */
  clattn_tune_strategy strategy;
  double budget_s;      /* wall-time budget of the call (its setup
                           included); no candidate or verification round
                           is started that the time left cannot pay for,
                           judged by those measured so far (the default
                           parameters are measured whatever the budget);
                           0: none */
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
  volatile sig_atomic_t *stop; /* polled between candidates: nonzero stops after
                           the running one (set it from a SIGINT handler),
                           with every candidate measured so far stored and
                           result->stopped "stop" */
  void (*progress)(const clattn_tune_progress *p, void *user);
  void *user;
  int replace; /* nonzero: each measurement overwrites its candidate's
                  stored row; 0: the better of the two is kept (an ok row
                  over a failure status, a verified ok row over one of the
                  search, else the faster), also against concurrent
                  tuners on the same database */
} clattn_tune_opts;

/* Outcome of a tuning run for one kernel and shape class. */
typedef struct clattn_tune_result {
  size_t size; /* sizeof(clattn_tune_result) */
  char shape_class[96];
  int space;             /* valid candidates */
  int pruned;            /* candidates rejected before compiling */
  int measured;          /* evaluated in this run */
  int reused;            /* taken from the database (resume) */
  int stale;             /* stored rows of another tuning method (measured
                            again when the search reaches them) */
  int rejected;          /* wrong, failed or timed out */
  int verified;          /* the best few and the default, timed again in
                            interleaved runs (their medians are final) */
  char best_params[256]; /* the winner ("" if none) */
  double best_s;         /* its median (0: no valid candidate) */
  double default_s;      /* the default parameters' median (0: unmeasured) */
  double roofline_s;     /* the model's max(t_memory, t_compute); decode:
                            with the profile's bandwidths scaled to the copy
                            timed last */
  int refreshes;         /* times the model's profile was scaled to a copy
                            timed then (decode: at the start and before a
                            roofline stop) */
  const char *stopped;   /* "done", "budget", "max", "roofline", "stop" */
  double elapsed_s;
} clattn_tune_result;

/* Tune one prefill or decode call shape on the context's device and store
 * every candidate in db as it is measured.  After the search, the six
 * best and the default are timed again, one run of each in turn for 31
 * rounds, and their medians replace the search's (a noisy stretch during
 * one candidate's measurement cannot crown a false winner).  Candidates run
 * through clattn_attention / clattn_decode (the library's own launch path),
 * each first checked against the plain-C reference on a small input of the same
 * head dims, group and dtype; the default parameters are always measured.
 * Decode timings rotate over K/V copies larger than the device's last-level
 * cache (cold caches); their roofline follows the device's bandwidth of the
 * moment (a copy timed at the start and before a roofline stop).  A rerun
 * resumes: candidates already in db for this device and shape class are not
 * measured again (unless opts->fresh); a candidate measured again keeps its
 * better row (unless opts->replace). Errors: ctx, call,
 * CLATTN_ERR_INVALID_ARG (db or out NULL, options out of range), db.  Threads:
 * safe, context-serialised (other threads' calls on ctx wait for the whole
 * run); not with concurrent use of the same db. */
CLATTN_API clattn_status clattn_tune_attention(clattn_ctx *ctx, clattn_db *db,
                                               const clattn_attn_desc *d,
                                               const clattn_tune_opts *opts,
                                               clattn_tune_result *out);
CLATTN_API clattn_status clattn_tune_decode(clattn_ctx *ctx, clattn_db *db,
                                            const clattn_decode_desc *d,
                                            const clattn_tune_opts *opts,
                                            clattn_tune_result *out);

/* Tune CLBlast's single-precision Xgemm kernel (the layers' projections:
 * row-major C[m,n] = A[m,k] B[k,n]) on the context's device through
 * CLBlastOverrideParameters; every candidate is checked against a plain-C
 * GEMM first.  Rows: kernel "clblast-xgemm", shape class "m512 n512 k512",
 * params CLBlast's names ("MWG=64 NWG=64 KWG=32 ...").  Process-wide: it
 * re-parameterises CLBlast for every user in the process while it runs,
 * and leaves the device's CLBlast on the best entry of db (else
 * XgemmDirect only), since CLBlast's defaults cannot be restored.  A
 * context with clattn_ctx_opts.clblast_override applies the device's best
 * entry before its layers' first GEMM; one without runs the projections
 * the entry covers on the own GEMM kernel (see clattn_explain_gemm).
 * tune: Errors: ctx, CLATTN_ERR_INVALID_ARG (db NULL, options out of range),
 * CLATTN_ERR_SHAPE (m, n or k out of range), CLATTN_ERR_CLBLAST,
 * CLATTN_ERR_OPENCL, db.  Threads: safe, context-serialised; not with
 * concurrent use of the same db; CLBlast's parameters are per process: layers
 * of other contexts on the same device should not run during it.  explain:
 * Errors: ctx, CLATTN_ERR_INVALID_ARG (buf NULL or cap 0),
 * CLATTN_ERR_BUFFER_TOO_SMALL, CLATTN_ERR_NOMEM.  Threads: safe,
 * context-serialised. */
CLATTN_API clattn_status clattn_tune_gemm(clattn_ctx *ctx, clattn_db *db, int m,
                                          int n, int k,
                                          const clattn_tune_opts *opts,
                                          clattn_tune_result *out);
/* What the context's layers' projection GEMMs use, and why (one line):
 * the own GEMM kernel where a tuned Xgemm entry covers them, or with
 * clblast_override the entry set on CLBlast (this call sets it then, as
 * the first layer would), or CLBlast's defaults or what this process set
 * earlier. */
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
/* The index of the family a name gives: its name, or a former name its
 * tuning rows, $CLATTN_PARAMS keys and shape-text calls may still carry
 * ("talking-heads-append": the append family's); -1 when none. */
CLATTN_API int clattn_family_find(const char *name);
/* One line: what the family computes and its public function. */
CLATTN_API const char *clattn_family_summary(int i);
/* Standard shape j of family i, the shapes `clattn tune` runs without a
 * SHAPE (NULL past the last; a family may have none). */
CLATTN_API const char *clattn_family_standard_shape(int i, int j);
/* The shape keys family i reads, "batch seq kv-seq ..." (NULL: none). */
CLATTN_API const char *clattn_family_shape_keys(int i);

/* One tunable of a family: its name in params text, the values it takes
 * besides 0 (automatic), what automatic chooses, and what it means. */
typedef struct clattn_tunable {
  size_t size; /* sizeof(clattn_tunable) */
  const char *name;
  int min, max;
  const char *automatic;
  const char *meaning;
} clattn_tunable;
/* Tunable j of family i into *out (its strings the library's, for the
 * process's life).
 * Errors: CLATTN_ERR_NOT_FOUND (i or j out of range), CLATTN_ERR_INVALID_ARG
 * (out NULL or its size unset).  Threads: pure, safe. */
CLATTN_API clattn_status clattn_family_tunable(int i, int j,
                                               clattn_tunable *out);

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

/* clattn_params' named int fields as text, "variant=1 rows=4" (its text
 * field follows as it is), and back (names other than those fields are an
 * error); a family's own names are read by the calls.
 * Errors: parse: CLATTN_ERR_INVALID_ARG.  Threads: pure, safe. */
CLATTN_API void clattn_params_format(const clattn_params *p, char *buf,
                                     size_t cap);
CLATTN_API clattn_status clattn_params_parse(const char *text,
                                             clattn_params *out);

/* ------------------------------------------------------ layer weights */

/* The weights (parameters) of a variant's layer, biases none: 3 D^2, 2 D^2
 * or 2 D^2 + max_len^2; -1 for an invalid variant or description.
 * Errors: none (-1).  Threads: pure, safe. */
CLATTN_API long long clattn_hh_layer_params(clattn_hh_variant v,
                                            const clattn_hh_layer_desc *d);

/* The weights of a SwitchHead layer: 2 D H d_h (Q, K) + 2 H E D d_h (the
 * experts) + 2 H E D (the selections; H D with one expert, which has no
 * W_s); -1 for an invalid description.
 * Errors: none (-1).  Threads: pure, safe. */
CLATTN_API long long
clattn_switchhead_layer_params(const clattn_switchhead_layer_desc *d);

/* ---------------------------------------------------------- layer kinds */

/* The layer kinds the library registers ("gqa", "talking-heads",
 * "optimised", "efficient", "super", "switchhead"), each made by its
 * clattn_layer_create* and the word of `clattn run` and `clattn layers`.
 * Index 0 .. clattn_layer_kind_count()-1; out of range: NULL.
 * Errors: none (NULL out of range).  Threads: pure, safe. */
CLATTN_API int clattn_layer_kind_count(void);
CLATTN_API const char *clattn_layer_kind_name(int i);
/* One line: what the layer computes and its public create function. */
CLATTN_API const char *clattn_layer_kind_summary(int i);

/* ------------------------------------------------------ shipped tuning */

/* Tuning rows found by clattn's own runs (PoCL on AVX-512 and AVX2 CPUs,
 * CLBlast's Xgemm included, and any GPU measured), embedded in the library
 * as a file in clattn_db_export's format.  They form the tier of the
 * parameter choice after the caller's database (CLATTN_CHOICE_SHIPPED)
 * and the Xgemm parameters a context applies when its database has none
 * for the device.  $CLATTN_SHIPPED: "0" or "off" turns the tier off; a
 * path reads that file instead of the embedded one: a regular file of at
 * most 64 MiB (a FIFO, device or directory is refused without blocking;
 * a file that is refused or does not parse leaves the tier empty, and
 * clattn_explain_* says why).
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
 * path "-": stdout; written as clattn_db_export writes its file).
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
  size_t size;          /* sizeof(clattn_bench_entry) */
  char fingerprint[40]; /* device (clattn_profile.fingerprint) */
  char device[128];
  char vendor[64];
  char arch[64];
  char driver[64];
  char family[32];         /* the registry's name: "prefill", "decode", ... */
  char shape[256];         /* the shape text as run (clattn_tune_shape's) */
  char shape_class[96];    /* the family's tuning key */
  char impl[24];           /* "clattn" or a baseline's name */
  char params[256];        /* clattn: the resolved params; baselines: "" */
  char params_source[24];  /* clattn: clattn_choice_source_str (tuned,
                              shipped, model, default, ...); else "" */
  char params_device[128]; /* the device of the tuning row used, or "" */
  double median_s;         /* median of the timed runs */
  double spread;           /* (max - min) / median */
  double flops;            /* the model's useful FLOPs of the call */
  double bytes;            /* the model's DRAM bytes of the call */
  double predicted_s;      /* the model's time on the device's profile (0:
                              none); baselines: 0 */
  double roof_s;           /* max(t_memory, t_compute) on that profile */
  char bound[16];          /* the model's: "memory", "compute", "launch" */
  double max_err;          /* clattn: largest error against the plain-C
                              reference on the family's check case; a
                              baseline: against clattn's output (copy: 0) */
  char run[48];            /* the run that measured it ("" : set by put) */
  char library_version[16];
  char updated[32]; /* UTC, ISO 8601 ("" : now) */
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
 * impl and date (newest first), as clattn_db_list_tune lists (rows of
 * entry_size bytes, freed with clattn_free).  A read-only handle lists too
 * (a file older than the bench table: none).
 * Errors: db, CLATTN_ERR_INVALID_ARG (out or n NULL, entry_size below
 * sizeof(size_t)), CLATTN_ERR_NOMEM.  Threads: not with concurrent use of
 * the same db. */
CLATTN_API clattn_status clattn_db_list_bench(clattn_db *db,
                                              const char *fingerprint,
                                              const char *family,
                                              size_t entry_size,
                                              clattn_bench_entry **out, int *n);
/* Every stored profile, ordered by name, as clattn_db_list_tune lists.
 * Errors: db, CLATTN_ERR_INVALID_ARG (out or n NULL, entry_size below
 * sizeof(size_t)), CLATTN_ERR_NOMEM.  Threads: not with concurrent use of
 * the same db. */
CLATTN_API clattn_status clattn_db_list_profiles(clattn_db *db,
                                                 size_t entry_size,
                                                 clattn_profile **out, int *n);

/* Bench options; zero fields are the defaults. */
typedef struct clattn_bench_opts {
  size_t size;      /* sizeof(clattn_bench_opts) */
  int repeats;      /* timed runs of each implementation (default 7, 3
                       when the library's call takes over 0.25 s) */
  int no_baselines; /* nonzero: time the library's choice alone */
  const char *run;  /* the run's name (NULL: "<UTC date> <host> <pid>") */
  int no_store;     /* nonzero: db gives the profile only, no row is
                       stored */
} clattn_bench_opts;

enum { CLATTN_BENCH_MAX_IMPLS = 4 };

/* Bench one call of a family given as shape text (clattn_tune_shape's
 * text; NULL: bench every standard shape is the CLI's loop, not this):
 * buffers of random data, the library's choice (as any call of the
 * context would make it) and the family's baselines timed in turn,
 * inputs rotated cold as the tuner does, the model's prediction on the
 * device's profile (clattn_profile_for with db), the error against the
 * reference on the family's check case; the rows are stored in db (NULL:
 * not stored) under one run name.  rows: room for CLATTN_BENCH_MAX_IMPLS
 * rows of row_size bytes (sizeof(clattn_bench_entry) as the caller's
 * header declares it); *n of them are written, rows[0] clattn's and the
 * rest the family's baselines (ratio = baseline median / clattn median).
 * Errors: ctx, CLATTN_ERR_INVALID_ARG (family or shape, rows or n NULL,
 * row_size below sizeof(size_t), options out of range), call (as the
 * family's public function), db.  Threads: safe, context-serialised; not
 * with concurrent use of the same db. */
CLATTN_API clattn_status clattn_bench_shape(clattn_ctx *ctx, clattn_db *db,
                                            const char *family,
                                            const char *shape,
                                            const clattn_bench_opts *opts,
                                            size_t row_size,
                                            clattn_bench_entry *rows, int *n);
/* Shape j of the family's bench classes: its standard shapes and the
 * shapes a report compares (decode: MHA, GQA and MQA of one size).  NULL
 * past the last.
 * Errors: none.  Threads: pure, safe. */
CLATTN_API const char *clattn_family_bench_shape(int i, int j);

#ifdef __cplusplus
}
#endif
#endif /* CLATTN_TOOLS_H */
