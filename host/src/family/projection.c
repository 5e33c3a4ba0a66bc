/* projection.c - the projection family: out[m, n] = a[m, k] W[k, n], row-major
 * and packed (cvmm.h), the layers' projections.  Two schemes (params scheme):
 * CLBlast's Sgemm, with one Sgemv a row for inputs of at most
 * CLATTN_LAYER_GEMV_ROWS rows (the default without tuning rows), or the
 * grouped GEMM of cl/cvmm.cl in its dense case (cvmm_impl.h).
 *
 * Where a tuned Xgemm entry covers a call's Sgemm and the context does not
 * set it on CLBlast (target gemm_own_from: setting it would change CLBlast
 * for every user in the process), the library's own picks leave CLBlast
 * out: CLBlast's tuning rows there do not fit, and the automatic plan is
 * the own kernel's.  Explicit params (the caller's, an override) still run
 * CLBlast when they name it. */
#include "base/clblast_status.h"
#include "family/common.h"
#include "family/cvmm_impl.h"
#include "model/gemm_rate.h"
#include "reference/ref_cvmm.h"

#include <clblast_c.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum { A, W, OUT };

#define SHAPE_KEYS "m n k dtype"

static clattn_status check(const void *desc, char *why, size_t cap) {
  clattn_status rc;
  const clattn__gemm_desc *d = desc;
  if (d->m < 1 || d->n < 1 || d->k < 1) {
    snprintf(why, cap, "m (%d), n (%d) and k (%d) must be >= 1", d->m, d->n,
             d->k);
    return CLATTN_ERR_SHAPE;
  }
  if ((rc = clattn__check_tensor("a", 4, d->m, d->k, 1, 1, why, cap)) ||
      (rc = clattn__check_tensor("w", 4, d->k, d->n, 1, 1, why, cap)) ||
      (rc = clattn__check_tensor("out", 4, d->m, d->n, 1, 1, why, cap)))
    return rc;
  return CLATTN_OK;
}

static void buffers(const void *desc, clattn__buf_spec *b) {
  const clattn__gemm_desc *d = desc;
  const size_t m = (size_t)d->m, n = (size_t)d->n, k = (size_t)d->k;
  b[A] = (clattn__buf_spec){"a", CLATTN__BUF_IN, m * k, CLATTN_F32, 0, 0};
  b[W] = (clattn__buf_spec){"w", CLATTN__BUF_IN, k * n, CLATTN_F32, 0, 0};
  b[OUT] = (clattn__buf_spec){"out", CLATTN__BUF_OUT, m * n, CLATTN_F32, 0, 0};
}

static int full_int(const void *desc) {
  (void)desc;
  return 0;
}

/* The contraction is "in" (a class key "k" would read as a head dim). */
static void shape_class(const void *desc, char *buf, size_t cap) {
  const clattn__gemm_desc *d = desc;
  snprintf(buf, cap, "f32 m%ld n%d in%d", clattn__pow2_round(d->m), d->n, d->k);
}

static clattn_status parse_shape(const char *text, void *desc, char *why,
                                 size_t cap) {
  clattn__gemm_desc d = {0, 0, 0};
  clattn_dtype dtype = CLATTN_F32;
  clattn_status rc;
  if ((rc = clattn__shape_keys(text, SHAPE_KEYS, why, cap)) ||
      (rc = clattn__shape_int(text, "m", 1, INT_MAX, &d.m, why, cap)) ||
      (rc = clattn__shape_int(text, "n", 1, INT_MAX, &d.n, why, cap)) ||
      (rc = clattn__shape_int(text, "k", 1, INT_MAX, &d.k, why, cap)) ||
      (rc = clattn__shape_dtype(text, &dtype, why, cap)))
    return rc;
  if (dtype != CLATTN_F32) {
    snprintf(why, cap, "dtype=%s: gemm is float32 only",
             clattn__dtype_name(dtype));
    return CLATTN_ERR_UNSUPPORTED;
  }
  if (!d.m || !d.n || !d.k) {
    snprintf(why, cap, "the shape needs m=, n= and k=");
    return CLATTN_ERR_INVALID_ARG;
  }
  *(clattn__gemm_desc *)desc = d;
  return CLATTN_OK;
}

/* Whether the library's own picks keep d off CLBlast: its Sgemm lies
 * where tuning found other Xgemm parameters that the context leaves
 * unset (GEMV rows run CLBlast's Sgemv, which was never tuned). */
static int own_gemm(const clattn__target *t, const clattn__gemm_desc *d) {
  return t->gemm_own_from > 0 && d->m > CLATTN_LAYER_GEMV_ROWS &&
         (double)d->m * d->n * d->k >= t->gemm_own_from;
}

/* Its tunables, in the order of clattn__gg_tunables (cvmm_impl.h). */
static const clattn__tunable tunables[] = {
    {"variant", 1, 2, "1 on CPUs, 2 on GPUs",
     "own kernel: 1 register-blocked (CPU-shaped), 2 local-memory tiles "
     "(GPU-shaped)",
     CLATTN__TUNABLE_KERNEL},
    {"rows", 1, 64, "by the vector registers",
     "own kernel: rows a register block (variant 1) or a work-item "
     "(variant 2)",
     0},
    {"keys", 1, 4096, "by the vector registers",
     "own kernel: columns a work-item (variant 1) or a work-group "
     "(variant 2)",
     0},
    {"wg", 1, 1 << 20, "the runtime's (variant 1), by the device (variant 2)",
     "own kernel: work-items a work-group", CLATTN__TUNABLE_WG},
    {"splits", 1, 1 << 20, "by the rows and the compute units",
     "own kernel: rows a work-item (variant 1) or work-group (variant 2) "
     "owns",
     0},
    {"scheme", 1, 2,
     "CLBlast, or the own kernel where tuning found other GEMM parameters "
     "that the context leaves unset",
     "1 the own kernel, 2 CLBlast's GEMM (no other tunable)", 0}};
CLATTN__TUNABLES_MATCH(clattn__gg_tunables, tunables);

static clattn_status plan(const clattn__target *t, const void *desc,
                          const clattn__params *p, void *pl, char *why,
                          size_t cap) {
  const clattn__gemm_desc *d = desc;
  const clattn__gg g = clattn__gg_of_gemm(d);
  const clattn__gg_tunables own = {0, 0, 0, 0, 0, CLATTN__GG_SCHEME_OWN};
  clattn__params own_values;
  if (!clattn__params_any(p) && own_gemm(t, d)) {
    own_values = clattn__tunables_put(&own, sizeof own);
    p = &own_values; /* the automatic plan there */
  }
  return clattn__gg_make_plan(t, &g, p, 0, pl, why, cap);
}

static int fits(const clattn__target *t, const void *desc, const void *pl,
                char *why, size_t cap) {
  const clattn__gg g = clattn__gg_of_gemm(desc);
  const clattn__gg_plan *p = pl;
  if (p->scheme == CLATTN__GG_SCHEME_CLBLAST && own_gemm(t, desc)) {
    snprintf(why, cap,
             "CLBlast here would need tuned Xgemm parameters "
             "that the context does not set "
             "(clattn_ctx_opts.clblast_override)");
    return 0;
  }
  return clattn__gg_fits(t, &g, pl, why, cap);
}

static clattn__params resolved(const void *pl) {
  return clattn__gg_resolved(pl);
}

static clattn_status space(const clattn__target *t, const void *desc,
                           clattn__space *s) {
  const clattn__gg g = clattn__gg_of_gemm(desc);
  return clattn__gg_space(&clattn__family_projection, t, desc, &g, 1, s);
}

/* CLBlast's work as an ideal GEMM: each matrix moved once, 2 m n k FLOPs
 * (its kernels are not the library's to count); GEMV rows launch once a
 * row after the output's zero fill.  Its FMA lanes at the rate tuning
 * measured for the shape, where the profile holds one. */
static void clblast_cost(const clattn__gemm_desc *d, const clattn_profile *prof,
                         clattn_prediction *out, double *dram_reads) {
  const double m = d->m, n = d->n, k = d->k;
  const int gemv = d->m <= CLATTN_LAYER_GEMV_ROWS;
  clattn_cost *c =
      clattn__model_kernel(out, gemv ? "clblast_sgemv" : "clblast_sgemm");
  if (c == NULL)
    return;
  c->launches = gemv ? d->m + 1 : 1;
  clattn__model_core(out, c)->group_items = 0; /* CLBlast picks its own */
  c->flops = 2.0 * m * n * k;
  c->fma_issued = m * n * k;
  c->bytes_read = 4.0 * (m * k + k * n);
  c->bytes_written = 4.0 * m * n;
  c->bytes_compulsory = c->bytes_read + c->bytes_written;
  c->bytes_dram = c->bytes_compulsory;
  dram_reads[out->n_kernels - 1] = c->bytes_read;
  clattn__model_gemm_rate(out, c, prof, d->m, d->n, d->k);
}

static clattn_status cost(const void *desc, const void *pl_, const int *ints,
                          const clattn_profile *prof, clattn_prediction *out,
                          double *dram_reads) {
  const clattn__gg_plan *pl = pl_;
  (void)ints;
  if (pl->scheme == CLATTN__GG_SCHEME_CLBLAST) {
    clblast_cost(desc, prof, out, dram_reads);
    return CLATTN_OK;
  }
  const clattn__gg g = clattn__gg_of_gemm(desc);
  return clattn__gg_cost(&g, pl, prof, out, dram_reads);
}

/* CLBlast takes no wait list: a barrier on the in-order queue waits. */
static clattn_status clblast_enqueue(clattn_ctx *ctx,
                                     const clattn__gemm_desc *d,
                                     const cl_mem *bufs,
                                     const clattn_events *ev) {
  cl_command_queue q = ctx->queue;
  cl_event *event = ev ? ev->out : NULL;
  const size_t m = (size_t)d->m, n = (size_t)d->n, k = (size_t)d->k;
  CLBlastStatusCode s;
  cl_int err;
  clattn_status rc;
  /* settled as a layer's projections run them (with the context's opt-in,
   * the tuned Xgemm parameters set on CLBlast) */
  if (ctx->gemm_prepare && (rc = ctx->gemm_prepare(ctx, 1)) != CLATTN_OK)
    return rc;
  if (ev && ev->num_wait > 0 &&
      (err = clEnqueueBarrierWithWaitList(q, ev->num_wait, ev->wait, NULL)) !=
          CL_SUCCESS)
    return clattn__cl_fail(ctx, err, "clEnqueueBarrierWithWaitList", __FILE__,
                           __LINE__);
  /* Up to CLATTN_LAYER_GEMV_ROWS rows, one GEMV per row: CLBlast's GEMM
   * pads a single row to a whole tile, which dominated decode steps. */
  if (m <= CLATTN_LAYER_GEMV_ROWS) {
    /* CLBlast's GEMV computes alpha*A^T x + beta*y even for beta == 0, so
     * a NaN already in y would survive: zero the rows first. */
    const float zero = 0.0f;
    err = clEnqueueFillBuffer(q, bufs[OUT], &zero, sizeof zero, 0,
                              m * n * sizeof(float), 0, NULL, NULL);
    if (err != CL_SUCCESS)
      return clattn__cl_fail(ctx, err, "clEnqueueFillBuffer(GEMV output)",
                             __FILE__, __LINE__);
    for (size_t r = 0; r < m; r++) {
      /* out[r, :] = W^T a[r, :], W being [k, n] row-major */
      s = CLBlastSgemv(CLBlastLayoutRowMajor, CLBlastTransposeYes, k, n, 1.0f,
                       bufs[W], 0, n, bufs[A], r * k, 1, 0.0f, bufs[OUT], r * n,
                       1, &q, r + 1 == m ? event : NULL);
      if (s != CLBlastSuccess)
        return clattn__fail(ctx, CLATTN_ERR_CLBLAST,
                            "CLBlastSgemv (row %zu, %zux%zu) failed: %s (%d)",
                            r, k, n, clattn__clblast_status_str(s), (int)s);
    }
    return CLATTN_OK;
  }
  s = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                   CLBlastTransposeNo, m, n, k, 1.0f, bufs[A], 0, k, bufs[W], 0,
                   n, 0.0f, bufs[OUT], 0, n, &q, event);
  if (s != CLBlastSuccess)
    return clattn__fail(ctx, CLATTN_ERR_CLBLAST,
                        "CLBlastSgemm (%zux%zux%zu) failed: %s (%d)", m, n, k,
                        clattn__clblast_status_str(s), (int)s);
  return CLATTN_OK;
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *pl_,
                             int auto_wg, const cl_mem *bufs,
                             const clattn_events *ev) {
  clattn__gg_plan *pl = pl_;
  if (pl->scheme == CLATTN__GG_SCHEME_CLBLAST)
    return clblast_enqueue(ctx, desc, bufs, ev);
  const clattn__gg g = clattn__gg_of_gemm(desc);
  return clattn__gg_enqueue(ctx, &g, pl, auto_wg, bufs[A], NULL, NULL, bufs[W],
                            bufs[OUT], ev);
}

/* Odd sizes that divide no tile; a few rows for a decode-sized call (the
 * GEMV path of CLBlast). */
static void check_case(const void *desc, clattn__check_case *c) {
  clattn__gemm_desc *s = (clattn__gemm_desc *)c->desc;
  *s = *(const clattn__gemm_desc *)desc;
  s->m = s->m <= CLATTN_LAYER_GEMV_ROWS ? 3 : 37;
  s->n = 29;
  s->k = 23;
}

static void reference(const void *desc, void *const *b) {
  const clattn__gemm_desc *d = desc;
  ref_gemm(d->m, d->n, d->k, b[A], b[W], b[OUT]);
}

/* The "clblast" baseline of `clattn bench`: the family's CLBlast scheme
 * whatever the choice, on the call's buffers. */
static clattn_status clblast_base_create(clattn_ctx *ctx, const void *desc,
                                         void **state) {
  (void)ctx;
  (void)desc;
  *state = NULL;
  return CLATTN_OK;
}

static clattn_status clblast_base_enqueue(clattn_ctx *ctx, const void *desc,
                                          void *state, const cl_mem *bufs) {
  (void)state;
  return clblast_enqueue(ctx, desc, bufs, NULL);
}

static const clattn__baseline clblast_base = {
    .name = "clblast",
    .create = clblast_base_create,
    .enqueue = clblast_base_enqueue,
};
static const clattn__baseline *const baselines[] = {&clblast_base, NULL};

/* A d_model 512 layer's projections over 512 and 2048 rows, and decode
 * steps of one and four rows. */
static const char *const standard[] = {"m=512 n=512 k=512",
                                       "m=2048 n=512 k=512", "m=1 n=512 k=512",
                                       "m=4 n=512 k=512", NULL};

const clattn__family clattn__family_projection = {
    .name = "projection",
    .summary = "a layer's projection out = a W (CLBlast, or the grouped GEMM "
               "kernel's dense case)",
    .api = "clattn_layer_prefill (projections)",
    .source = "cvmm.cl",
    .desc_size = sizeof(clattn__gemm_desc),
    .plan_size = sizeof(clattn__gg_plan),
    .nbufs = 3,
    .tune_method = 1,
    .clblast = 1,
    .standard_shapes = standard,
    .baselines = baselines,
    .check = check,
    .buffers = buffers,
    .full_int = full_int,
    .shape_class = shape_class,
    .shape_keys = SHAPE_KEYS,
    .parse_shape = parse_shape,
    CLATTN__TUNABLES(tunables),
    .plan = plan,
    .fits = fits,
    .resolved = resolved,
    .space = space,
    .cost = cost,
    .enqueue = enqueue,
    .check_case = check_case,
    .reference = reference,
};
