/* cvmm.c - the cvmm family: SwitchHead's expert-routed GEMM (cvmm.h),
 * its description, shape text, checks and the plain-C reference; the
 * kernels are cl/cvmm.cl, planned, costed and launched by the room's
 * cvmm_plan.c, cvmm_cost.c and cvmm_launch.c. */
#include "family/common.h"
#include "family/cvmm_impl.h"
#include "reference/ref_cvmm.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum { A, SEL_X, W_SEL, W, OUT };

/* The shape of a SwitchHead projection: rows = batch * seq; SPLIT (its V)
 * contracts model-dim into head-dim columns a head, SUM (its O) head-dim
 * into model-dim columns; the selection reads model-dim. */
#define SHAPE_KEYS                                                             \
  "batch seq heads head-dim model-dim experts topk mode gate dtype"

enum { MAX_HE = 1024 };

static clattn_status check(const void *desc, char *why, size_t cap) {
  const clattn__cvmm_desc *d = desc;
  if (d->rows < 1 || d->inner < 1 || d->cols < 1 || d->heads < 1) {
    snprintf(why, cap,
             "rows (%d), inner (%d), cols (%d) and heads (%d) must be >= 1",
             d->rows, d->inner, d->cols, d->heads);
    return CLATTN_ERR_SHAPE;
  }
  if (d->experts < 1 || d->experts > CLATTN_SH_MAX_EXPERTS || d->topk < 1 ||
      d->topk > d->experts) {
    snprintf(why, cap,
             "experts (%d) must be in 1..%d and topk (%d) in "
             "1..experts",
             d->experts, CLATTN_SH_MAX_EXPERTS, d->topk);
    return CLATTN_ERR_SHAPE;
  }
  if (d->mode != CLATTN__CVMM_SPLIT && d->mode != CLATTN__CVMM_SUM) {
    snprintf(why, cap, "mode %d: expected SPLIT (1) or SUM (2)", (int)d->mode);
    return CLATTN_ERR_INVALID_ARG;
  }
  if (d->gate != CLATTN__CVMM_TOPK && d->gate != CLATTN__CVMM_NONE) {
    snprintf(why, cap, "gate %d: expected TOPK (0) or NONE (1)", (int)d->gate);
    return CLATTN_ERR_INVALID_ARG;
  }
  if (d->gate == CLATTN__CVMM_NONE && (d->experts != 1 || d->topk != 1)) {
    snprintf(why, cap,
             "gate NONE has one expert and topk 1 (got experts %d, topk %d)",
             d->experts, d->topk);
    return CLATTN_ERR_SHAPE;
  }
  if (d->gate == CLATTN__CVMM_TOPK && d->sel_inner < 1) {
    snprintf(why, cap, "sel_inner (%d) must be >= 1 with gate TOPK",
             d->sel_inner);
    return CLATTN_ERR_SHAPE;
  }
  if ((long)d->heads * d->experts > MAX_HE) {
    snprintf(why, cap, "heads x experts (%ld) above %d is not supported",
             (long)d->heads * d->experts, MAX_HE);
    return CLATTN_ERR_UNSUPPORTED;
  }
  /* the routing indexes rows * heads * experts buckets and 4 rows * heads
   * * topk entries in int32 */
  const long long buckets = (long long)d->rows * d->heads * d->experts;
  const long long entries = (long long)d->rows * d->heads * d->topk;
  if (buckets > (1LL << 28) || entries > (1LL << 28)) {
    snprintf(why, cap,
             "rows x heads x experts (%lld) or x topk (%lld) overflows the "
             "routing's int32 schedule (at most 2^28)",
             buckets, entries);
    return CLATTN_ERR_SHAPE;
  }
  clattn_status rc;
  if ((rc = clattn__check_int32("heads x inner", (long long)d->heads * d->inner,
                                why, cap)) ||
      (rc = clattn__check_int32("heads x cols", (long long)d->heads * d->cols,
                                why, cap)) ||
      (rc = clattn__check_tensor("a", 4, d->rows, d->heads, d->inner, 1, why,
                                 cap)) ||
      (rc = clattn__check_tensor("out", 4, d->rows, d->heads, d->cols, 1, why,
                                 cap)) ||
      (rc = clattn__check_tensor("w", 4, (long)d->heads * d->experts, d->inner,
                                 d->cols, 1, why, cap)))
    return rc;
  if (d->gate == CLATTN__CVMM_TOPK &&
      ((rc = clattn__check_tensor("sel_x", 4, d->rows, d->sel_inner, 1, 1, why,
                                  cap)) ||
       (rc = clattn__check_tensor("w_sel", 4, d->sel_inner, d->heads,
                                  d->experts, 1, why, cap))))
    return rc;
  return CLATTN_OK;
}

static void buffers(const void *desc, clattn__buf_spec *b) {
  const clattn__cvmm_desc *d = desc;
  const size_t rows = (size_t)d->rows, h = (size_t)d->heads;
  const int split = d->mode == CLATTN__CVMM_SPLIT;
  const int none = d->gate == CLATTN__CVMM_NONE;
  /* unused without routing: any buffer (or NULL) passes */
  const size_t sx = none ? 1 : rows * (size_t)d->sel_inner;
  const size_t sw = none ? 1 : (size_t)d->sel_inner * h * (size_t)d->experts;
  b[A] = (clattn__buf_spec){"a",
                            CLATTN__BUF_IN,
                            rows * (split ? 1 : h) * (size_t)d->inner,
                            CLATTN_F32,
                            0,
                            0};
  b[SEL_X] =
      (clattn__buf_spec){"sel_x", CLATTN__BUF_IN, sx, CLATTN_F32, none, 0};
  b[W_SEL] =
      (clattn__buf_spec){"w_sel", CLATTN__BUF_IN, sw, CLATTN_F32, none, 0};
  b[W] = (clattn__buf_spec){"w",
                            CLATTN__BUF_IN,
                            h * (size_t)d->experts * (size_t)d->inner *
                                (size_t)d->cols,
                            CLATTN_F32,
                            0,
                            0};
  b[OUT] = (clattn__buf_spec){"out",
                              CLATTN__BUF_OUT,
                              rows * (split ? h : 1) * (size_t)d->cols,
                              CLATTN_F32,
                              0,
                              0};
}

static int full_int(const void *desc) {
  (void)desc;
  return 0;
}

static const char *const mode_words[] = {"split", "sum"};
static const char *const gate_words[] = {"topk", "none"};

static void shape_class(const void *desc, char *buf, size_t cap) {
  const clattn__cvmm_desc *d = desc;
  snprintf(buf, cap, "f32 %s %s r%ld in%d n%d h%d e%d top%d",
           mode_words[d->mode == CLATTN__CVMM_SUM],
           gate_words[d->gate == CLATTN__CVMM_NONE],
           clattn__pow2_round(d->rows), d->inner, d->cols, d->heads, d->experts,
           d->topk);
}

/* key=WORD of text as the index of WORD in words (left as it is when key
 * is absent). */
static clattn_status shape_word(const char *text, const char *key,
                                const char *const *words, int n, int *out,
                                char *why, size_t cap) {
  const size_t kl = strlen(key);
  for (const char *s = text; s && *s;) {
    while (*s == ' ' || *s == '\t')
      s++;
    const size_t len = strcspn(s, " \t");
    if (len > kl && s[kl] == '=' && strncmp(s, key, kl) == 0) {
      for (int i = 0; i < n; i++)
        if (len - kl - 1 == strlen(words[i]) &&
            strncmp(s + kl + 1, words[i], len - kl - 1) == 0) {
          *out = i;
          return CLATTN_OK;
        }
      snprintf(why, cap, "%s: expected %s or %s, got \"%.*s\"", key, words[0],
               words[1], (int)(len - kl - 1 < 16 ? len - kl - 1 : 16),
               s + kl + 1);
      return CLATTN_ERR_INVALID_ARG;
    }
    s += len;
  }
  return CLATTN_OK;
}

static clattn_status parse_shape(const char *text, void *desc, char *why,
                                 size_t cap) {
  int batch = 1, seq = 0, hd = 0, md = 0, mode = 0, gate = 0;
  clattn__cvmm_desc d;
  memset(&d, 0, sizeof d);
  clattn_dtype dtype = CLATTN_F32;
  clattn_status rc;
  if ((rc = clattn__shape_keys(text, SHAPE_KEYS, why, cap)) ||
      (rc = clattn__shape_int(text, "batch", 1, 1 << 20, &batch, why, cap)) ||
      (rc = clattn__shape_int(text, "seq", 1, 1 << 30, &seq, why, cap)) ||
      (rc = clattn__shape_int(text, "heads", 1, MAX_HE, &d.heads, why, cap)) ||
      (rc = clattn__shape_int(text, "head-dim", 1, 1 << 20, &hd, why, cap)) ||
      (rc = clattn__shape_int(text, "model-dim", 1, 1 << 20, &md, why, cap)) ||
      (rc = clattn__shape_int(text, "experts", 1, CLATTN_SH_MAX_EXPERTS,
                              &d.experts, why, cap)) ||
      (rc = shape_word(text, "mode", mode_words, 2, &mode, why, cap)) ||
      (rc = shape_word(text, "gate", gate_words, 2, &gate, why, cap)) ||
      (rc = clattn__shape_dtype(text, &dtype, why, cap)))
    return rc;
  d.topk = d.experts;
  if ((rc = clattn__shape_int(text, "topk", 1, CLATTN_SH_MAX_EXPERTS, &d.topk,
                              why, cap)))
    return rc;
  if (dtype != CLATTN_F32) {
    snprintf(why, cap, "dtype=%s: cvmm is float32 only",
             clattn__dtype_name(dtype));
    return CLATTN_ERR_UNSUPPORTED;
  }
  if (!seq || !d.heads || !hd || !md || !d.experts) {
    snprintf(why, cap,
             "the shape needs seq=, heads=, head-dim=, model-dim= "
             "and experts=");
    return CLATTN_ERR_INVALID_ARG;
  }
  if ((long)batch * seq > INT_MAX) {
    snprintf(why, cap, "batch x seq overflows");
    return CLATTN_ERR_SHAPE;
  }
  d.rows = batch * seq;
  d.mode = mode ? CLATTN__CVMM_SUM : CLATTN__CVMM_SPLIT;
  d.gate = gate ? CLATTN__CVMM_NONE : CLATTN__CVMM_TOPK;
  d.inner = mode ? hd : md;
  d.cols = mode ? md : hd;
  d.sel_inner = md;
  *(clattn__cvmm_desc *)desc = d;
  return CLATTN_OK;
}

/* Its tunables, in the order of clattn__gg_tunables (cvmm_impl.h). */
static const clattn__tunable tunables[] = {
    {"variant", 1, 2, "1 on CPUs, 2 on GPUs",
     "1 register-blocked (CPU-shaped), 2 local-memory tiles (GPU-shaped)",
     CLATTN__TUNABLE_KERNEL},
    {"rows", 1, 64, "by the vector registers",
     "rows a register block (variant 1) or a work-item (variant 2)", 0},
    {"keys", 1, 4096, "by the vector registers",
     "columns a work-item (variant 1, a multiple of the vector width) or a "
     "work-group (variant 2)",
     0},
    {"wg", 1, 1 << 20, "the runtime's (variant 1), by the device (variant 2)",
     "work-items a work-group", CLATTN__TUNABLE_WG},
    {"splits", 1, 1 << 20, "by the rows and the compute units",
     "rows a work-item (variant 1) or work-group (variant 2) owns", 0},
    {"scheme", 1, 2, "2 for at most 11 rows, else 1",
     "1 bucketed (routing, bucketing, then the GEMM), 2 fused small rows (one "
     "launch, variant 1, no splits)",
     0}};
CLATTN__TUNABLES_MATCH(clattn__gg_tunables, tunables);

static clattn_status plan(const clattn__target *t, const void *desc,
                          const clattn__params *p, void *pl, char *why,
                          size_t cap) {
  const clattn__gg g = clattn__gg_of_cvmm(desc);
  return clattn__gg_make_plan(t, &g, p, 1, pl, why, cap);
}

static int fits(const clattn__target *t, const void *desc, const void *pl,
                char *why, size_t cap) {
  const clattn__gg g = clattn__gg_of_cvmm(desc);
  return clattn__gg_fits(t, &g, pl, why, cap);
}

static clattn__params resolved(const void *pl) {
  return clattn__gg_resolved(pl);
}

static clattn_status space(const clattn__target *t, const void *desc,
                           clattn__space *s) {
  const clattn__gg g = clattn__gg_of_cvmm(desc);
  return clattn__gg_space(&clattn__family_cvmm, t, desc, &g, 0, s);
}

static clattn_status cost(const void *desc, const void *pl, const int *ints,
                          const clattn_profile *prof, clattn_prediction *out,
                          double *dram_reads) {
  (void)ints;
  const clattn__gg g = clattn__gg_of_cvmm(desc);
  return clattn__gg_cost(&g, pl, prof, out, dram_reads);
}

static clattn_status enqueue(clattn_ctx *ctx, const void *desc, void *pl,
                             int auto_wg, const cl_mem *bufs,
                             const clattn_events *ev) {
  const clattn__cvmm_desc *d = desc;
  const clattn__gg g = clattn__gg_of_cvmm(d);
  if (!g.dense && (bufs[SEL_X] == NULL || bufs[W_SEL] == NULL))
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                        "cvmm: %s is NULL: gate TOPK routes with it",
                        bufs[SEL_X] == NULL ? "sel_x" : "w_sel");
  return clattn__gg_enqueue(ctx, &g, pl, auto_wg, bufs[A], bufs[SEL_X],
                            bufs[W_SEL], bufs[W], bufs[OUT], ev);
}

/* 29 rows (7 for a call the fused small-rows path may take, whose params
 * may name it), 13 inner, 19 columns, 11 selection inputs: no tile
 * divides them; the heads, experts, top-k, mode and gate of the call. */
static void check_case(const void *desc, clattn__check_case *c) {
  clattn__cvmm_desc *s = (clattn__cvmm_desc *)c->desc;
  *s = *(const clattn__cvmm_desc *)desc;
  s->rows = s->rows <= CLATTN__GG_SMALL_ROWS ? 7 : 29;
  s->inner = 13;
  s->cols = 19;
  s->sel_inner = 11;
  if (s->heads > 3)
    s->heads = 3;
}

static void reference(const void *desc, void *const *b) {
  const clattn__cvmm_desc *d = desc;
  ref_cvmm(d->rows, d->inner, d->cols, d->heads, d->experts, d->topk,
           d->sel_inner, d->mode == CLATTN__CVMM_SPLIT ? 1 : 2,
           d->gate == CLATTN__CVMM_NONE, b[A], b[SEL_X], b[W_SEL], b[W],
           b[OUT]);
}

/* SwitchHead's V and O projections: 47M (C4) and 262M (C4). */
static const char *const standard[] = {
    "seq=256 model-dim=412 heads=2 head-dim=76 experts=5 topk=3 mode=split",
    "seq=256 model-dim=412 heads=2 head-dim=76 experts=5 topk=3 mode=sum",
    "seq=512 model-dim=1024 heads=4 head-dim=112 experts=4 topk=2 mode=split",
    "seq=512 model-dim=1024 heads=4 head-dim=112 experts=4 topk=2 mode=sum",
    NULL};

const clattn__family clattn__family_cvmm = {
    .name = "cvmm",
    .summary = "SwitchHead's expert-routed GEMM: sigmoid top-k experts per "
               "head, their gated products summed per head or over heads",
    .api = "clattn_layer_prefill (SwitchHead)",
    .source = "cvmm.cl",
    .desc_size = sizeof(clattn__cvmm_desc),
    .plan_size = sizeof(clattn__gg_plan),
    .nbufs = 5,
    .tune_method = 1,
    .standard_shapes = standard,
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
