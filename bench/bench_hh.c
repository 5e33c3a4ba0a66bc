/* bench_hh.c - clattn-bench's Hosseini & Hosseini section (--only hh).
 *
 * The Optimised, Efficient and Super attention layers (spec 7, Decision
 * 7) against the multi-head attention (MHA) layer of the same d_model D
 * and h heads of D/h, f32, batch 1, at D in {256, 512}, h in {4, 8} and
 * l = max_len in {128, 512}:
 *   (1) parameters, and the model's FLOPs and bytes of a causal prefill
 *       of n = l positions without a cache, each over MHA's;
 *   (2) the measured prefill time over MHA's beside the model's predicted
 *       ratio (pred.total.t_pred on this run's probed profile), and the
 *       model's share of the projections (GEMMs) in the predicted time;
 *   (3) a decode step at cache length m (8192; and m = l - 1 = 511 with
 *       l = 512, where Super, whose cache holds at most l positions,
 *       joins the others) over MHA's at the same m, cold: every side
 *       rotates over enough layers, each with its own weights and cache,
 *       that no step finds its bytes in the last-level cache;
 *   (4) PyTorch on the CPU (peers/hh_torch.py, NMesaC's formulation with
 *       F.scaled_dot_product_attention), prefill at the same shapes;
 *   (5) where MHA's prefill time goes: one projection GEMM and the fused
 *       core timed alone, each against the model's kernels.
 * The layers of one shape are timed alternately round by round (the order
 * reversed every other round), and each ratio is the median of the
 * rounds' ratios, so that a shared machine's drift hits all of them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_harness.h"
/* The cache's buffers: see cache_preload. */
#include "layer/layer.h"

enum { HH_MHA, HH_OPT, HH_EFF, HH_SUP, HH_KINDS };

static const char *const kind_name[HH_KINDS] = {"MHA", "Optimised", "Efficient",
                                                "Super"};
static const char *const peer_key[HH_KINDS] = {
    "mha_seconds", "optimised_seconds", "efficient_seconds", "super_seconds"};
static const int kind_weights[HH_KINDS] = {4, 3, 2, 3};

typedef struct hh_shape {
  int d_model;
  int heads;
  int max_len; /* l: Super's W_a and the prefill's n */
} hh_shape;

static clattn_layer_desc mha_desc(const hh_shape *s) {
  clattn_layer_desc d = {.size = sizeof(clattn_layer_desc)};
  d.d_model = s->d_model;
  d.heads_q = s->heads;
  d.heads_kv = s->heads;
  d.head_dim_k = s->d_model / s->heads;
  d.head_dim_v = s->d_model / s->heads;
  return d;
}

static clattn_hh_layer_desc hh_desc(int kind, const hh_shape *s) {
  clattn_hh_layer_desc d = {.size = sizeof(clattn_hh_layer_desc)};
  d.d_model = s->d_model;
  d.heads = s->heads;
  d.max_len = kind == HH_SUP ? s->max_len : 0;
  return d;
}

static clattn_hh_variant hh_variant(int kind) {
  return kind == HH_OPT   ? CLATTN_HH_OPTIMISED
         : kind == HH_EFF ? CLATTN_HH_EFFICIENT
                          : CLATTN_HH_SUPER;
}

/* Bytes of a kind's weights: D x D each, but Super's W_a, l x l. */
static size_t weight_bytes(int kind, const hh_shape *s) {
  const size_t dd = (size_t)s->d_model * s->d_model;
  const size_t ll = (size_t)s->max_len * s->max_len;
  return 4 * (kind == HH_SUP ? 2 * dd + ll : (size_t)kind_weights[kind] * dd);
}

/* A layer of `kind` with random weights from `seed` (L->layer NULL when
 * the library refuses it); the library's status (its message in the
 * context) when it refuses. */
static clattn_status hh_layer_create(bench *B, int kind, const hh_shape *s,
                                     unsigned seed, own_layer *L) {
  const size_t dd = (size_t)s->d_model * s->d_model;
  const size_t ll = (size_t)s->max_len * s->max_len;
  const float amp = 1.0f / sqrtf((float)s->d_model);
  const clattn_hh_layer_desc hd = hh_desc(kind, s);
  clattn_status st = CLATTN_ERR_INVALID_ARG;
  memset(L, 0, sizeof *L);
  L->nw = kind_weights[kind];
  for (int i = 0; i < L->nw; i++)
    L->w[i] = kind == HH_SUP && i == 1
                  ? buf_random(B, ll, 1.0f / sqrtf((float)s->max_len),
                               seed + (unsigned)i)
                  : buf_random(B, dd, amp, seed + (unsigned)i);
  switch (kind) {
  case HH_MHA: {
    const clattn_layer_desc ld = mha_desc(s);
    st = clattn_layer_create(B->ctx, &ld, L->w[0], L->w[1], L->w[2], L->w[3],
                             &L->layer);
    break;
  }
  case HH_OPT:
    st = clattn_layer_create_optimised(B->ctx, &hd, L->w[0], L->w[1], L->w[2],
                                       &L->layer);
    break;
  case HH_EFF:
    st =
        clattn_layer_create_efficient(B->ctx, &hd, L->w[0], L->w[1], &L->layer);
    break;
  case HH_SUP:
    st = clattn_layer_create_super(B->ctx, &hd, L->w[0], L->w[1], L->w[2],
                                   &L->layer);
    break;
  }
  if (st != CLATTN_OK)
    own_layer_destroy(L);
  return st;
}

/* The model's prediction of a causal call of n positions after cache_len
 * cached ones (decode: n = 1). */
static clattn_status hh_model(int kind, const hh_shape *s, int n, int cache_len,
                              const clattn_profile *prof,
                              clattn_prediction *p) {
  *p = (clattn_prediction){.size = sizeof *p};
  if (kind == HH_MHA) {
    const clattn_layer_desc ld = mha_desc(s);
    return clattn_model_layer(&ld, 1, n, cache_len, 1, prof, p);
  }
  const clattn_hh_layer_desc hd = hh_desc(kind, s);
  return clattn_model_hh_layer(hh_variant(kind), &hd, 1, n, cache_len, 1, prof,
                               p);
}

/* The projections' (GEMMs') share of the model's time, from its
 * per-kernel split. */
static double projection_share(const clattn_prediction *p) {
  double gemm = 0.0, all = 0.0;
  for (int i = 0; i < p->n_kernels; i++) {
    all += p->kernel[i].t_pred;
    if (strncmp(p->kernel[i].kernel, "gemm", 4) == 0)
      gemm += p->kernel[i].t_pred;
  }
  return all > 0 ? gemm / all : -1.0;
}

/* ---------------------------------------------------------- prefill */

typedef struct hh_prefill {
  hh_shape s;
  own_layer L[HH_KINDS];
  cl_mem x, y;
} hh_prefill;

/* Where MHA's prefill time goes, measured: one projection GEMM (CLBlast,
 * as the layer calls it, with whatever Xgemm entry its creation applied)
 * and the fused core (clattn_attention) at the layer's shapes, each the
 * median of warm calls, beside the model's kernels of the same call. */
typedef struct hh_where {
  hh_shape s;
  double gemm_s, core_s;       /* measured, one GEMM and the core */
  double gemm_pred, core_pred; /* the model's */
} hh_where;

enum { WHERE_MAX = 8, WHERE_REPS = 9 };
static hh_where where_rows[WHERE_MAX];
static int where_count;

/* The GEMM and the core of where_time_goes, as run_fns. */
typedef struct where_arg {
  clattn_attn_desc ad;
  int n, D;
  cl_mem w, x, kv, o;
} where_arg;

static int run_where_gemm(bench *B, void *p) {
  where_arg *a = p;
  CKB(CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                   CLBlastTransposeNo, (size_t)a->n, (size_t)a->D, (size_t)a->D,
                   1.0f, a->x, 0, (size_t)a->D, a->w, 0, (size_t)a->D, 0.0f,
                   a->kv, 0, (size_t)a->D, &B->queue, NULL));
  return 0;
}

static int run_where_core(bench *B, void *p) {
  where_arg *a = p;
  return (int)clattn_attention(B->ctx, &a->ad, a->x, a->kv, a->x, NULL, a->o,
                               NULL);
}

static void where_time_goes(bench *B, const hh_prefill *a,
                            const clattn_prediction *mha) {
  const int n = a->s.max_len, D = a->s.d_model, h = a->s.heads;
  where_arg w = {{sizeof(clattn_attn_desc), 1, n, n, h, h, D / h, D / h,
                  CLATTN_F32, CLATTN_BSHD, CLATTN_BSHD, 0.0f, 1, NULL},
                 n,
                 D,
                 a->L[HH_MHA].w[0],
                 a->x,
                 a->y,
                 NULL};
  const bench_side sides[2] = {
      {"CLBlastSgemm", run_where_gemm, &w, 1, 1, NULL, 0},
      {"clattn_attention", run_where_core, &w, 1, 1, NULL, 0}};
  bench_rounds R;
  hh_where *r;
  if (where_count >= WHERE_MAX)
    return;
  r = &where_rows[where_count++];
  r->s = a->s;
  w.o = buf_new(B, (size_t)n * D * sizeof(float));
  rounds_init(B, &R, sides, 2, WHERE_REPS, 0, 0);
  rounds_run(&R, -2, WHERE_REPS + 2); /* two warm-up rounds first */
  r->gemm_s = rounds_time(&R, 0);
  r->core_s = rounds_time(&R, 1);
  rounds_free(&R);
  r->gemm_pred = r->core_pred = 0.0;
  for (int i = 0; i < mha->n_kernels; i++) {
    if (strncmp(mha->kernel[i].kernel, "gemm", 4) != 0)
      r->core_pred += mha->kernel[i].t_pred;
    else if (r->gemm_pred == 0.0)
      r->gemm_pred = mha->kernel[i].t_pred;
  }
  rel(&w.o);
}

static void print_where(void) {
  printf("\n  Where MHA's prefill time goes (h=4): one projection GEMM "
         "(CLBlast, as the layer calls it)\n  and the fused core "
         "(clattn_attention), each the median of %d warm calls, against "
         "the model;\n  proj: the four projections' share of GEMMs + core, "
         "measured and the model's.\n",
         WHERE_REPS);
  printf("  %4s %4s %9s %7s %9s %9s %7s %12s\n", "D", "l", "GEMM ms", "GFLOP/s",
         "GEMM m/p", "core ms", "core m/p", "proj meas/mod");
  for (int i = 0; i < where_count; i++) {
    const hh_where *r = &where_rows[i];
    const double D = r->s.d_model, n = r->s.max_len;
    printf("  %4d %4d %9.3f %7.1f %9.2f %9.3f %7.2f %6.0f%%/%.0f%%\n",
           r->s.d_model, r->s.max_len, 1e3 * r->gemm_s,
           2.0 * n * D * D / r->gemm_s * 1e-9, r->gemm_s / r->gemm_pred,
           1e3 * r->core_s, r->core_s / r->core_pred,
           100.0 * 4 * r->gemm_s / (4 * r->gemm_s + r->core_s),
           100.0 * 4 * r->gemm_pred / (4 * r->gemm_pred + r->core_pred));
  }
}

static void hh_prefill_case(bench *B, const hh_shape *s) {
  const int n = s->max_len, D = s->d_model;
  /* half the rounds before the peer's process and half after it */
  const int half = B->reps < 8 ? 8 : B->reps, rounds = 2 * half;
  double torch_s[HH_KINDS];
  clattn_prediction pred[HH_KINDS];
  int have_pred[HH_KINDS];
  char args[256], why[HH_KINDS][200];
  hh_prefill a;
  layer_prefill pf[HH_KINDS];
  bench_side sides[HH_KINDS];
  bench_rounds R;

  memset(&a, 0, sizeof a);
  a.s = *s;
  a.x = buf_random(B, (size_t)n * D, 1.0f, 41);
  a.y = buf_new(B, (size_t)n * D * sizeof(float));
  for (int k = 0; k < HH_KINDS; k++) {
    clattn_status st = hh_layer_create(B, k, s, 50 + 10 * (unsigned)k, &a.L[k]);
    why[k][0] = '\0';
    pf[k] = (layer_prefill){a.L[k].layer, n, a.x, a.y};
    sides[k] =
        (bench_side){"clattn_layer_prefill", NULL, &pf[k], 1, 1, NULL, 0};
    if (st != CLATTN_OK) {
      if (k == HH_MHA)
        die("clattn_layer_create (MHA) failed: %s: %s", clattn_status_str(st),
            clattn_ctx_errmsg(B->ctx));
      snprintf(why[k], sizeof why[k], "%s: %.150s", clattn_status_str(st),
               clattn_ctx_errmsg(B->ctx));
      continue;
    }
    /* warm-up calls, then batches of calls of at least 20 ms each, so that
     * the small shapes are not timed at the clock's and launch's grain */
    sides[k].run = layer_prefill_run;
    sides[k].calls = batch_calls(B, &sides[k], 3, 3, 0.02);
  }
  for (int k = 0; k < HH_KINDS; k++) {
    have_pred[k] = hh_model(k, s, n, 0, &B->prof, &pred[k]) == CLATTN_OK;
    if (!have_pred[k] && why[k][0] == '\0')
      snprintf(why[k], sizeof why[k], "model: %.180s", pred[k].errmsg);
  }
  if (!have_pred[HH_MHA])
    die("clattn_model_layer (MHA) failed: %s", pred[HH_MHA].errmsg);

  rounds_init(B, &R, sides, HH_KINDS, rounds, 1, 0);
  rounds_run(&R, 0, half);
  snprintf(args, sizeof args,
           "--d-model %d --heads %d --seq %d --max-len %d --causal 1 "
           "--reps %d",
           D, s->heads, n, s->max_len, half);
  peer_numbers("hh_torch.py", args, peer_key, HH_KINDS, torch_s);
  rounds_run(&R, half, half);

  for (int k = 0; k < HH_KINDS; k++) {
    const clattn_hh_layer_desc hd = hh_desc(k, s);
    const double params =
        k == HH_MHA ? 4.0 * D * D
                    : (double)clattn_hh_layer_params(hh_variant(k), &hd);
    const clattn_cost *c = &pred[k].total, *cm = &pred[HH_MHA].total;
    double meas = -1.0, pr = -1.0, vs_torch = -1.0;
    char tag[96];
    snprintf(tag, sizeof tag, "D=%d h=%d l=%d %s", D, s->heads, s->max_len,
             kind_name[k]);
    printf("  %4d %2d %4d %-10s", D, s->heads, s->max_len, kind_name[k]);
    if (params > 0) /* clattn_hh_layer_params is -1 for a refused desc */
      printf(" %7.3f", params / (4.0 * D * D));
    else
      printf(" %7s", "n/a");
    if (have_pred[k]) {
      pr = c->t_pred / cm->t_pred;
      printf(" %7.3f %7.3f %7.3f", c->flops / cm->flops,
             c->bytes_dram / cm->bytes_dram, pr);
    } else {
      printf(" %7s %7s %7s", "n/a", "n/a", "n/a");
    }
    if (a.L[k].layer != NULL) {
      const double clattn_s = rounds_time(&R, k);
      meas = rounds_ratio(&R, k, HH_MHA);
      if (torch_s[k] > 0)
        vs_torch = clattn_s / torch_s[k];
      printf(" %7.3f", meas);
      if (pr > 0)
        printf(" %6.2f%s", meas / pr,
               fabs(meas / pr - 1.0) <= 0.15 ? "*" : " ");
      else
        printf(" %6s ", "n/a");
    } else {
      printf(" %7s %6s ", "n/a", "n/a");
    }
    if (have_pred[k])
      printf(" %5.0f%%", 100.0 * projection_share(&pred[k]));
    else
      printf(" %6s", "n/a");
    if (vs_torch > 0)
      printf(" %7.2f", vs_torch);
    else
      printf(" %7s", "n/a");
    if (why[k][0] != '\0')
      printf("  (%s)", why[k]);
    printf("\n");
    rec(B, "hh", tag, "params_vs_mha",
        params > 0 ? params / (4.0 * D * D) : -1.0);
    rec(B, "hh", tag, "model_time_ratio_vs_mha", pr);
    rec(B, "hh", tag, "prefill_time_ratio_vs_mha", meas);
    rec(B, "hh", tag, "prefill_clattn_vs_torch", vs_torch);
    /* the seconds behind the ratios, for reading a surprising ratio */
    if (a.L[k].layer != NULL)
      rec(B, "hh", tag, "prefill_clattn_seconds", rounds_time(&R, k));
    rec(B, "hh", tag, "prefill_torch_seconds", torch_s[k]);
  }
  rounds_free(&R);
  if (s->heads == 4)
    where_time_goes(B, &a, &pred[HH_MHA]);
  for (int k = 0; k < HH_KINDS; k++)
    own_layer_destroy(&a.L[k]);
  rel(&a.x);
  rel(&a.y);
}

/* ----------------------------------------------------------- decode */

/* A cache of m positions without running m positions through the layer:
 * the prefills would take minutes for every rotated cache, and a decode
 * step's time does not depend on the cached values, so the cache's
 * buffers get random data and its length is set to m directly (again
 * before every step, so that each step attends to exactly m positions and
 * Super's cache, at most l long, has room for the step's row). */
static void cache_preload(bench *B, clattn_kv_cache *c, cl_mem random,
                          size_t random_bytes) {
  cl_mem m[2] = {c->k, c->v != c->k ? c->v : NULL};
  for (int i = 0; i < 2; i++) {
    size_t bytes = 0;
    if (m[i] == NULL)
      continue;
    CK(clGetMemObjectInfo(m[i], CL_MEM_SIZE, sizeof bytes, &bytes, NULL));
    if (bytes > random_bytes)
      die("decode: a %zu-byte cache tensor exceeds the random source (%zu)",
          bytes, random_bytes);
    CK(clEnqueueCopyBuffer(B->queue, random, m[i], 0, 0, bytes, 0, NULL, NULL));
  }
}

/* Cache bytes a decode step reads (spec 9): K and V (MHA), K and X
 * (Optimised), X (Efficient), X and V' (Super). */
static double cache_step_bytes(int kind, const hh_shape *s, int m) {
  return 4.0 * (kind == HH_EFF ? 1 : 2) * s->d_model * (double)m;
}

/* What hh_rot_make makes: layers of one kind with caches of m positions
 * preloaded from `random`. */
typedef struct hh_rot_arg {
  int kind;
  const hh_shape *s;
  int m;
  cl_mem random;
  size_t random_bytes;
} hh_rot_arg;

static clattn_status hh_rot_make(bench *B, void *arg, unsigned seed,
                                 own_layer *L) {
  const hh_rot_arg *a = arg;
  clattn_status st = hh_layer_create(B, a->kind, a->s, seed, L);
  if (st == CLATTN_OK)
    st = clattn_kv_cache_create(L->layer, 1, a->m + 1, &L->cache);
  if (st == CLATTN_OK)
    cache_preload(B, L->cache, a->random, a->random_bytes);
  return st;
}

/* Decode steps at cache length m of the kinds in `kinds` (HH_MHA first),
 * paired round by round with MHA's, cold. */
static void hh_decode_set(bench *B, const hh_shape *s, int m, const int *kinds,
                          int nk) {
  const int D = s->d_model;
  const int rounds = B->reps < 25 ? 25 : B->reps;
  const size_t copy_b = (size_t)128 << 20;
  const size_t random_bytes = (size_t)4 * D * (m + 1);
  layer_rotation rot[HH_KINDS];
  bench_side sides[HH_KINDS];
  char why[HH_KINDS][200];
  bench_rounds R;
  clattn_profile prof = B->prof;
  int available = 0;
  cl_mem random = buf_random(B, random_bytes / sizeof(float), 1.0f, 61);
  cl_mem x = buf_random(B, (size_t)D, 1.0f, 62);
  cl_mem y = buf_new(B, (size_t)D * sizeof(float));

  memset(rot, 0, sizeof rot);
  /* the variants first, so that MHA's layers are not built for nothing
   * when the library refuses all of them */
  for (int i = nk - 1; i >= 0; i--) {
    const int k = kinds[i];
    hh_rot_arg ra = {k, s, m, random, random_bytes};
    const size_t per =
        (size_t)cache_step_bytes(k, s, m + 1) + weight_bytes(k, s);
    why[k][0] = '\0';
    sides[i] =
        (bench_side){"clattn_layer_decode", NULL, &rot[k], 1, 1, NULL, 0};
    if (k == HH_MHA && available == 0)
      break;
    if (layer_rotation_create(B, per, hh_rot_make, &ra, &rot[k], why[k],
                              sizeof why[k]) != 0) {
      if (k == HH_MHA)
        die("decode: the MHA layers: %s", why[HH_MHA]);
      continue;
    }
    rot[k].len = m;
    rot[k].x = x;
    rot[k].y = y;
    sides[i].run = layer_rotation_step;
    sides[i].units = rot[k].count;
    available += k != HH_MHA;
  }
  rounds_init(B, &R, sides, nk, rounds, 1, copy_b);
  if (available > 0) {
    rounds_run(&R, -1, rounds + 1); /* -1: warm-up */
    clattn_profile_at_copy(&prof, rounds_copy_gbs(&R));
  }

  for (int i = 0; i < nk; i++) {
    const int k = kinds[i];
    clattn_prediction p = {.size = sizeof(clattn_prediction)},
                      pm = {.size = sizeof(clattn_prediction)};
    if (k == HH_MHA && available == 0)
      continue;
    double pr = -1.0, meas = -1.0, model_mib = -1.0, of_copy = -1.0;
    char tag[96];
    if (hh_model(k, s, 1, m, &prof, &p) == CLATTN_OK &&
        hh_model(HH_MHA, s, 1, m, &prof, &pm) == CLATTN_OK) {
      pr = p.total.t_pred / pm.total.t_pred;
      model_mib = p.total.bytes_dram / 1048576.0;
    } else if (why[k][0] == '\0') {
      snprintf(why[k], sizeof why[k], "model: %.180s", p.errmsg);
    }
    if (rot[k].count > 0) {
      meas = rounds_ratio(&R, i, 0);
      /* the model's bytes of a step over its time, against the round's
       * copy bandwidth */
      if (model_mib > 0)
        of_copy = rounds_of_copy(&R, i, p.total.bytes_dram);
    }
    snprintf(tag, sizeof tag, "D=%d h=%d m=%d %s", D, s->heads, m,
             kind_name[k]);
    printf("  %4d %2d %-10s %5d %4d %9.2f", D, s->heads, kind_name[k], m,
           rot[k].count, cache_step_bytes(k, s, m) / 1048576.0);
    if (model_mib > 0)
      printf(" %9.2f %7.3f", model_mib, pr);
    else
      printf(" %9s %7s", "n/a", "n/a");
    if (meas > 0) {
      printf(" %7.3f %7.2fx", meas, 1.0 / meas);
      if (pr > 0)
        printf(" %6.2f%s %6.1f%%", meas / pr,
               fabs(meas / pr - 1.0) <= 0.15 ? "*" : " ", 100.0 * of_copy);
      else
        printf(" %6s  %7s", "n/a", "n/a");
    } else {
      printf(" %7s %8s %6s  %7s", "n/a", "n/a", "n/a", "n/a");
    }
    if (why[k][0] != '\0')
      printf("  (%s)", why[k]);
    printf("\n");
    rec(B, "hh", tag, "decode_model_time_ratio_vs_mha", pr);
    rec(B, "hh", tag, "decode_time_ratio_vs_mha", meas);
    rec(B, "hh", tag, "decode_fraction_of_copy", of_copy);
    if (rot[k].count > 0)
      rec(B, "hh", tag, "decode_step_seconds", rounds_time(&R, i));
  }
  rounds_free(&R);
  for (int k = 0; k < HH_KINDS; k++)
    layer_rotation_destroy(&rot[k]);
  rel(&random);
  rel(&x);
  rel(&y);
}

/* The model's per-kernel split of a call of `kind`: each kernel's share
 * of the predicted time and its MiB, so that the tables' ratios can be
 * read as projections against the core. */
static void print_split(bench *B, int kind, const hh_shape *s, int n,
                        int cache_len) {
  clattn_prediction p = {.size = sizeof(clattn_prediction)};
  double all = 0.0;
  if (cache_len > 0)
    printf("  %-10s decode m=%-5d", kind_name[kind], cache_len);
  else
    printf("  %-10s prefill n=%-4d", kind_name[kind], n);
  if (hh_model(kind, s, n, cache_len, &B->prof, &p) != CLATTN_OK) {
    printf(" n/a (%s)\n", p.errmsg);
    return;
  }
  for (int i = 0; i < p.n_kernels; i++)
    all += p.kernel[i].t_pred;
  for (int i = 0; i < p.n_kernels; i++)
    printf("%s %s %.0f%% %.2f MiB", i ? "," : "", p.kernel[i].kernel,
           100.0 * p.kernel[i].t_pred / all,
           p.kernel[i].bytes_dram / 1048576.0);
  printf("\n");
}

void bench_hh(bench *B) {
  static const int d_models[2] = {256, 512}, heads[2] = {4, 8};
  static const int max_lens[2] = {128, 512};
  const int m_long = B->quick ? 2048 : 8192;
  printf("== hh: Hosseini & Hosseini's Optimised, Efficient and Super "
         "layers against the MHA layer (spec 7) ==\n");
  printf("  b=1 f32, h heads of D/h, weights random.  Prefill: causal, n = "
         "l positions, no cache.  Every ratio\n  is over MHA's at the same "
         "D and h (params over 4 D^2); FLOPs, bytes (DRAM) and pred t are "
         "the\n  model's (clattn_model_hh_layer, clattn_model_layer on this "
         "run's probed profile); meas t is\n  the median of %d rounds' "
         "ratios, the layers timed alternately; * marks meas/pred within "
         "15%%;\n  proj: the GEMMs' share of the model's time; "
         "clattn/torch: clattn's time over PyTorch's (%d\n  threads, "
         "peers/hh_torch.py), the peer's process run between clattn's "
         "rounds.\n",
         2 * (B->reps < 8 ? 8 : B->reps), PEER_THREADS);
  printf("  %4s %2s %4s %-10s %7s %7s %7s %7s %7s %7s %6s %7s\n", "D", "h", "l",
         "variant", "params", "FLOPs", "bytes", "pred t", "meas t", "m/p",
         "proj", "clattn/");
  printf("  %4s %2s %4s %-10s %7s %7s %7s %7s %7s %7s %6s %7s\n", "", "", "",
         "", "/MHA", "/MHA", "/MHA", "/MHA", "/MHA", "", "", "torch");
  for (int di = 0; di < 2; di++)
    for (int hi = 0; hi < 2; hi++)
      for (int li = 0; li < 2; li++) {
        const hh_shape s = {d_models[di], heads[hi], max_lens[li]};
        hh_prefill_case(B, &s);
      }
  print_where();

  printf("\n  Decode, cold: each side rotates over `rot` layers, each with "
         "its own weights and a cache of m\n  positions (at least %zu MiB "
         "in all), one step on each per pass; a round is a 128 MiB copy\n"
         "  and one pass of each side, the order reversed every other "
         "round; %d rounds.  cache MiB: the\n  cache bytes a step reads "
         "(spec 9); model MiB: the model's bytes of the step (weights "
         "too);\n  speed-up = MHA/variant; of copy: model bytes / step "
         "time / the round's copy bandwidth.\n",
         cold_bytes(B) >> 20, B->reps < 25 ? 25 : B->reps);
  printf("  %4s %2s %-10s %5s %4s %9s %9s %7s %7s %8s %7s %7s\n", "D", "h",
         "variant", "m", "rot", "cache MiB", "model MiB", "pred t", "meas t",
         "speed-up", "m/p", "of copy");
  for (int di = 0; di < 2; di++)
    for (int hi = 0; hi < 2; hi++) {
      const hh_shape s = {d_models[di], heads[hi], 512};
      static const int long_kinds[3] = {HH_MHA, HH_OPT, HH_EFF};
      static const int short_kinds[4] = {HH_MHA, HH_OPT, HH_EFF, HH_SUP};
      hh_decode_set(B, &s, m_long, long_kinds, 3);
      /* Super's cache holds at most l positions; the others beside it
       * show how a short cache's step compares with a long one's */
      hh_decode_set(B, &s, s.max_len - 1, short_kinds, 4);
    }
  {
    const hh_shape s = {512, 8, 512};
    printf("\n  The model's per-kernel split at D=512 h=8, l=512 (share "
           "of the predicted time, DRAM MiB),\n  on the probed profile:\n");
    for (int k = 0; k < HH_KINDS; k++)
      print_split(B, k, &s, s.max_len, 0);
    for (int k = 0; k < HH_KINDS; k++)
      print_split(B, k, &s, 1, k == HH_SUP ? s.max_len - 1 : m_long);
    print_split(B, HH_MHA, &s, 1, s.max_len - 1);
  }
  printf("\n");
}
