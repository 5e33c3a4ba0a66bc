/* choice.c - which parameters each call runs with, and why.
 *
 * Order (clattn_choice_source): the caller's params, an override
 * (clattn_ctx_set_params, $CLATTN_PARAMS), a tuning entry of this device
 * for the call's shape class, of this device for the nearest tuned class,
 * of a device of the same vendor and architecture, the model's predicted
 * best candidate of the default's kernel variant when it predicts a gain
 * of at least 10% over the default (only with a datasheet profile, or a
 * measured one whose model checks are within 30%), and the default plan.  A tuned entry that does not fit the call (local
 * memory, work-group size, an invalid field) is passed over.
 *
 * The tuning database is read once, at the context's first call, into
 * memory (the best "ok" row of each device, kernel and shape class); the
 * model's picks are memoised per shape class. */
#include "tune/tune.h"
#include "db/db.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { FAM_PREFILL = 0, FAM_DECODE = 1 };
static const char *const fam_name[2] = {"prefill", "decode"};

#define MAX_PICKS 64

typedef struct pick {
  int fam;
  char cls[96];
  int picked; /* 1: the model's candidate beats the default by >= 10% */
  clattn_params p;
  double t_best, t_default;
} pick;

struct clattn__tuning {
  int loaded;
  clattn_tune_entry *e; /* best ok row per (device, kernel, class) */
  int n;
  char fingerprint[40], vendor[64], arch[64];
  clattn_profile prof;  /* for the model's pick */
  int has_model;        /* the model may pick (see tuning()) */
  char model_note[160]; /* why it may or may not */
  char note[352];       /* what was loaded, or why nothing */
  pick picks[MAX_PICKS];
  int n_picks;
};

/* --------------------------------------------------------- params text */

void clattn_params_format(const clattn_params *p, char *buf, size_t cap) {
  if (buf == NULL || cap == 0)
    return;
  if (p == NULL) {
    buf[0] = '\0';
    return;
  }
  clattn_params q = *p;
  buf[0] = '\0';
  for (int i = 0; i < CLATTN__NPARAMS; i++)
    clattn__appendf(buf, cap, "%s%s=%d", i ? " " : "", clattn__param_names[i],
                    *clattn__param(&q, i));
}

/* Parse "name=value" fields separated by blanks or commas into *out
 * (fields not named stay as they are); why gets the reason of a failure. */
static clattn_status parse_fields(const char *text, clattn_params *out,
                                  char *why, size_t cap) {
  const char *s = text;
  while (*s) {
    while (*s == ' ' || *s == ',' || *s == '\t')
      s++;
    if (!*s)
      break;
    const char *eq = s;
    while (*eq && *eq != '=' && *eq != ' ' && *eq != ',')
      eq++;
    int f = -1;
    for (int i = 0; i < CLATTN__NPARAMS; i++)
      if ((size_t)(eq - s) == strlen(clattn__param_names[i]) &&
          strncmp(s, clattn__param_names[i], (size_t)(eq - s)) == 0)
        f = i;
    if (f < 0 || *eq != '=') {
      snprintf(why, cap,
               "\"%.*s\": expected variant=, rows=, keys=, wg=, splits= "
               "or prefetch=",
               (int)(eq - s + (*eq == '=')), s);
      return CLATTN_ERR_INVALID_ARG;
    }
    char *end = NULL;
    long v = strtol(eq + 1, &end, 10);
    if (end == eq + 1 || v < 0 || v > 1 << 20 ||
        (*end && *end != ' ' && *end != ',' && *end != '\t')) {
      snprintf(why, cap, "%s: expected a count >= 0, got \"%.16s\"",
               clattn__param_names[f], eq + 1);
      return CLATTN_ERR_INVALID_ARG;
    }
    *clattn__param(out, f) = (int)v;
    s = end;
  }
  return CLATTN_OK;
}

clattn_status clattn_params_parse(const char *text, clattn_params *out) {
  char why[128];
  if (text == NULL || out == NULL)
    return CLATTN_ERR_INVALID_ARG;
  clattn_params p = {0, 0, 0, 0, 0, 0};
  clattn_status rc = parse_fields(text, &p, why, sizeof why);
  *out = rc == CLATTN_OK ? p : (clattn_params){0, 0, 0, 0, 0, 0};
  return rc;
}

static int params_set(const clattn_params *p) {
  clattn_params q = p ? *p : (clattn_params){0, 0, 0, 0, 0, 0};
  for (int i = 0; i < CLATTN__NPARAMS; i++)
    if (*clattn__param(&q, i))
      return 1;
  return 0;
}

/* ---------------------------------------------------------- overrides */

/* Parse "fam: fields; fam: fields" into the context's overrides. */
static clattn_status set_overrides(clattn_ctx *ctx, const char *spec,
                                   const char *from) {
  int has[2] = {0, 0};
  clattn_params ov[2] = {{0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}};
  char buf[1024], why[160];
  if (spec && strlen(spec) >= sizeof buf)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "%s: too long", from);
  snprintf(buf, sizeof buf, "%s", spec ? spec : "");
  char *save = NULL;
  for (char *seg = strtok_r(buf, ";", &save); seg;
       seg = strtok_r(NULL, ";", &save)) {
    while (isspace((unsigned char)*seg))
      seg++;
    if (!*seg)
      continue;
    char *colon = strchr(seg, ':');
    int f = -1;
    for (int i = 0; i < 2 && colon; i++)
      if ((size_t)(colon - seg) == strlen(fam_name[i]) &&
          strncmp(seg, fam_name[i], (size_t)(colon - seg)) == 0)
        f = i;
    if (f < 0)
      return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                          "%s: \"%.40s\": expected \"prefill: ...\" or "
                          "\"decode: ...\"",
                          from, seg);
    if (parse_fields(colon + 1, &ov[f], why, sizeof why) != CLATTN_OK)
      return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "%s %s: %s", from,
                          fam_name[f], why);
    if (ov[f].variant > 2)
      return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG,
                          "%s %s: variant must be 0, 1 or 2", from,
                          fam_name[f]);
    has[f] = params_set(&ov[f]);
  }
  for (int f = 0; f < 2; f++) {
    ctx->has_override[f] = has[f];
    ctx->override[f] = ov[f];
    snprintf(ctx->override_from[f], sizeof ctx->override_from[f], "%s",
             from);
  }
  return CLATTN_OK;
}

clattn_status clattn_ctx_set_params(clattn_ctx *ctx, const char *spec) {
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  ctx->errmsg[0] = '\0';
  return set_overrides(ctx, spec, "clattn_ctx_set_params");
}

/* -------------------------------------------------------------- set-up */

static int env_on(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

clattn_status clattn__choice_init(clattn_ctx *ctx, const clattn_ctx_opts *o) {
  const char *env = getenv("CLATTN_PARAMS");
  if (env && *env) {
    clattn_status rc = set_overrides(ctx, env, "$CLATTN_PARAMS");
    if (rc)
      return rc;
  }
  if (o->no_tuning || env_on("CLATTN_NO_TUNING"))
    return CLATTN_OK;
  ctx->tuning_db = o->tuning_db ? strdup(o->tuning_db)
                                : clattn__db_default_path();
  if (o->tuning_db && ctx->tuning_db == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  return CLATTN_OK;
}

void clattn__choice_free(clattn_ctx *ctx) {
  if (ctx->tuning)
    free(ctx->tuning->e);
  free(ctx->tuning);
  ctx->tuning = NULL;
  free(ctx->tuning_db);
  ctx->tuning_db = NULL;
}

void clattn__choice_reload(clattn_ctx *ctx) {
  if (ctx->tuning) {
    free(ctx->tuning->e);
    free(ctx->tuning);
    ctx->tuning = NULL;
  }
}

/* Keep the KEEP_PER_CLASS best ok rows of each (device, kernel, class) of
 * this device or its vendor and architecture (a best row that does not fit
 * a call leaves the next ones); rows arrive best first per group. */
#define KEEP_PER_CLASS 4
/* Keep the usable rows; returns how many were passed over for being of
 * another tuning method (clattn_tune_method). */
static int keep_rows(clattn__tuning *T, clattn_tune_entry *rows, int n) {
  int k = 0, stale = 0;
  for (int i = 0; i < n; i++) {
    const clattn_tune_entry *r = &rows[i];
    if (strcmp(r->status, "ok") != 0)
      continue;
    int mine = strcmp(r->fingerprint, T->fingerprint) == 0;
    int kin = T->arch[0] && strcmp(r->vendor, T->vendor) == 0 &&
              strcmp(r->arch, T->arch) == 0;
    if (!mine && !kin)
      continue;
    if (!clattn__tune_row_current(r)) {
      stale++;
      continue;
    }
    int same = 0;
    for (int j = 0; j < k; j++)
      same += strcmp(rows[j].fingerprint, r->fingerprint) == 0 &&
              strcmp(rows[j].kernel, r->kernel) == 0 &&
              strcmp(rows[j].shape_class, r->shape_class) == 0;
    if (same < KEEP_PER_CLASS)
      rows[k++] = *r;
  }
  T->e = rows;
  T->n = k;
  return stale;
}

clattn_status clattn__tuning_db_open(const clattn_ctx *ctx, clattn_db **db,
                                     char *why, size_t cap) {
  struct stat sb;
  clattn_status rc;
  *db = NULL;
  if (ctx->tuning_db == NULL) {
    snprintf(why, cap,
             "tuning is off (no_tuning, CLATTN_NO_TUNING or no database "
             "path)");
    return CLATTN_OK;
  }
  if (stat(ctx->tuning_db, &sb) != 0) {
    snprintf(why, cap, "no tuning database at %.400s", ctx->tuning_db);
    return CLATTN_OK;
  }
  rc = clattn_db_open(ctx->tuning_db, db);
  if (rc == CLATTN_OK)
    return CLATTN_OK;
  snprintf(why, cap, "tuning database unreadable: %.400s",
           clattn_db_errmsg(NULL));
  return rc == CLATTN_ERR_NOMEM ? rc : CLATTN_OK;
}

/* Read the entries and the device's profile at the first call. */
static clattn__tuning *tuning(clattn_ctx *ctx) {
  if (ctx->tuning)
    return ctx->tuning;
  clattn__tuning *T = calloc(1, sizeof *T);
  if (T == NULL)
    return NULL;
  ctx->tuning = T;
  clattn_profile rep;
  if (clattn_profile_reported(ctx, &rep) == CLATTN_OK) {
    snprintf(T->fingerprint, sizeof T->fingerprint, "%s", rep.fingerprint);
    snprintf(T->vendor, sizeof T->vendor, "%s", rep.vendor);
    snprintf(T->arch, sizeof T->arch, "%s", rep.arch);
    T->prof = rep;
  }
  clattn_db *db = NULL;
  if (clattn__tuning_db_open(ctx, &db, T->note, sizeof T->note) == CLATTN_OK &&
      db != NULL) {
    clattn_tune_entry *rows = NULL;
    int n = 0;
    if (clattn_db_list_tune(db, NULL, NULL, NULL, &rows, &n) != CLATTN_OK) {
      snprintf(T->note, sizeof T->note, "tuning entries unreadable: %.200s",
               clattn_db_errmsg(db));
    } else {
      const int stale = keep_rows(T, rows, n);
      int len = snprintf(T->note, sizeof T->note, "%d tuning entries in %.200s",
                         T->n, ctx->tuning_db);
      if (stale > 0 && len > 0 && (size_t)len < sizeof T->note)
        snprintf(T->note + len, sizeof T->note - (size_t)len,
                 " (%d of an older tuning method passed over: run clattn "
                 "tune again)",
                 stale);
    }
  }
  /* The model may pick parameters with a datasheet profile (an unseen
   * GPU: the best information there is) or with a measured one when
   * `clattn model check` found it predicting this device: the median
   * error of the stored checks within 30%.  (On PoCL here the model is
   * -34% to -82% off for decode and would pick slower parameters.) */
  clattn_profile p;
  double err = 0.0;
  int nchecks = 0;
  if (clattn_profile_for(ctx, db, &p) != CLATTN_OK || p.fp32_gflops <= 0 ||
      p.bw_read_gbs <= 0) {
    snprintf(T->model_note, sizeof T->model_note,
             "no measured or datasheet profile for the model");
  } else if (p.source == CLATTN_PROFILE_DATASHEET) {
    T->prof = p;
    T->has_model = 1;
  } else if (db == NULL ||
             clattn__db_model_error(db, T->fingerprint, &err, &nchecks) !=
                 CLATTN_OK ||
             nchecks < 3) {
    snprintf(T->model_note, sizeof T->model_note,
             "the model is not checked on this device (clattn model check)");
  } else if (err > 0.30) {
    snprintf(T->model_note, sizeof T->model_note,
             "the model's median error on this device is %.0f%% (over 30%%: "
             "it does not pick)",
             100.0 * err);
  } else {
    T->prof = p;
    T->has_model = 1;
  }
  clattn_db_close(db);
  ctx->errmsg[0] = '\0';
  return T;
}

/* -------------------------------------------------------- shape classes */

static long pow2_round(long x) {
  if (x <= 1)
    return 1;
  return 1L << (int)lround(log2((double)x));
}

static const char *dtype_name(clattn_dtype dt) {
  return dt == CLATTN_F16 ? "f16" : dt == CLATTN_BF16 ? "bf16" : "f32";
}

void clattn_shape_class_attention(const clattn_attn_desc *d, char *buf,
                                  size_t cap) {
  if (buf == NULL || cap == 0)
    return;
  if (d == NULL || d->heads_kv < 1) {
    buf[0] = '\0';
    return;
  }
  snprintf(buf, cap, "%s k%d v%d g%d bh%ld n%ld m%ld c%d",
           dtype_name(d->dtype), d->head_dim_k, d->head_dim_v,
           d->heads_q / d->heads_kv,
           pow2_round((long)d->batch * d->heads_kv), pow2_round(d->n_q),
           pow2_round(d->n_kv), d->causal ? 1 : 0);
}

void clattn_shape_class_decode(const clattn_decode_desc *d, char *buf,
                               size_t cap) {
  if (buf == NULL || cap == 0)
    return;
  if (d == NULL || d->heads_kv < 1) {
    buf[0] = '\0';
    return;
  }
  snprintf(buf, cap, "%s k%d v%d g%d bh%ld m%ld %s", dtype_name(d->dtype),
           d->head_dim_k, d->head_dim_v, d->heads_q / d->heads_kv,
           pow2_round((long)d->batch * d->heads_kv), pow2_round(d->capacity),
           d->cache_layout == CLATTN_BHSD ? "bhsd" : "bshd");
}

/* Distance between two classes of one kernel: -1 when they cannot share
 * parameters (dtype, head dims, layout differ), else the sum of |log2|
 * ratios of the sizes (the group counted twice) and 1 per other flag. */
static double class_distance(const char *a, const char *b) {
  char ta[16][24], tb[16][24];
  int na = 0, nb = 0;
  for (const char *s = a; *s && na < 16;) {
    int n = 0;
    while (*s == ' ')
      s++;
    while (*s && *s != ' ' && n < 23)
      ta[na][n++] = *s++;
    while (*s && *s != ' ')
      s++;
    ta[na][n] = '\0';
    if (n)
      na++;
  }
  for (const char *s = b; *s && nb < 16;) {
    int n = 0;
    while (*s == ' ')
      s++;
    while (*s && *s != ' ' && n < 23)
      tb[nb][n++] = *s++;
    while (*s && *s != ' ')
      s++;
    tb[nb][n] = '\0';
    if (n)
      nb++;
  }
  if (na != nb)
    return -1;
  double dist = 0;
  for (int i = 0; i < na; i++) {
    size_t pa = strcspn(ta[i], "0123456789"), pb = strcspn(tb[i], "0123456789");
    if (pa != pb || strncmp(ta[i], tb[i], pa) != 0)
      return -1;
    if (strcmp(ta[i], tb[i]) == 0)
      continue;
    const char *key = ta[i];
    if (!ta[i][pa] || (pa == 1 && (key[0] == 'k' || key[0] == 'v')))
      return -1; /* dtype, layout, head dims */
    if (pa == 1 && key[0] == 'c') {
      dist += 1;
      continue;
    }
    double x = atof(ta[i] + pa), y = atof(tb[i] + pb);
    if (x <= 0 || y <= 0)
      return -1;
    dist += fabs(log2(x / y)) * (pa == 1 && key[0] == 'g' ? 2 : 1);
  }
  return dist;
}

/* ------------------------------------------------------------- choosing */

/* A family's planner as one signature. */
typedef struct fam_ops {
  int fam;
  const void *desc;
  void (*with_params)(const void *desc, const clattn_params *p, void *copy);
  /* plan copy (a desc with params set): OK and fitting, or why not */
  int (*plan)(const clattn__target *t, const void *copy, void *pl,
              clattn_status *rc, char *why, size_t cap);
  void (*resolved)(const void *pl, clattn_params *out);
  clattn_status (*space)(const clattn__target *t, const void *desc,
                         clattn__space *s);
  int (*predict)(const void *copy, const clattn_profile *prof, double *t);
} fam_ops;

static clattn_status try_params(const fam_ops *F, const clattn__target *t,
                                const clattn_params *p, void *copy, void *pl,
                                char *why, size_t cap) {
  clattn_status rc = CLATTN_OK;
  F->with_params(F->desc, p, copy);
  return F->plan(t, copy, pl, &rc, why, cap) ? CLATTN_OK
         : rc ? rc
              : CLATTN_ERR_UNSUPPORTED;
}

/* The model's pick for this class (memoised). */
static const pick *model_pick(clattn__tuning *T, const fam_ops *F,
                              const clattn__target *t, const char *cls,
                              void *copy) {
  for (int i = 0; i < T->n_picks; i++)
    if (T->picks[i].fam == F->fam && strcmp(T->picks[i].cls, cls) == 0)
      return &T->picks[i];
  pick pk;
  memset(&pk, 0, sizeof pk);
  pk.fam = F->fam;
  snprintf(pk.cls, sizeof pk.cls, "%s", cls);
  clattn__space s;
  memset(&s, 0, sizeof s);
  if (F->space(t, F->desc, &s) == CLATTN_OK && s.n > 0 && s.def >= 0) {
    int best = -1;
    double tb = 0;
    const int variant = clattn__space_params(&s, s.def).variant;
    for (int i = 0; i < s.n; i++) {
      clattn_params p = clattn__space_params(&s, i);
      double tp = 0;
      /* the default's kernel only: the model has no term for what a
       * device pays for local memory and barriers (a CPU) */
      if (p.variant != variant)
        continue;
      F->with_params(F->desc, &p, copy);
      if (!F->predict(copy, &T->prof, &tp) || tp <= 0)
        continue;
      if (i == s.def)
        pk.t_default = tp;
      if (best < 0 || tp < tb) {
        best = i;
        tb = tp;
      }
    }
    if (best >= 0 && pk.t_default > 0) {
      pk.t_best = tb;
      pk.p = clattn__space_params(&s, best);
      pk.picked = tb <= 0.9 * pk.t_default;
    }
  }
  clattn__space_free(&s);
  if (T->n_picks == MAX_PICKS)
    T->n_picks = 0; /* a simple bound: start over */
  T->picks[T->n_picks] = pk;
  return &T->picks[T->n_picks++];
}

static void fill_entry(clattn_choice *ch, const clattn_tune_entry *e) {
  snprintf(ch->entry_class, sizeof ch->entry_class, "%s", e->shape_class);
  snprintf(ch->entry_device, sizeof ch->entry_device, "%s", e->device);
  ch->entry_median_s = e->median_s;
}

static clattn_status choose(clattn_ctx *ctx, const fam_ops *F,
                            const clattn_params *caller, const char *cls,
                            clattn_choice *ch, void *pl, void *copy) {
  const clattn__target t = clattn__ctx_target(ctx);
  char why[256];
  clattn_status rc;
  memset(ch, 0, sizeof *ch);
  snprintf(ch->shape_class, sizeof ch->shape_class, "%s", cls);
  const char *fam = fam_name[F->fam];
  if (params_set(caller)) {
    ch->source = CLATTN_CHOICE_CALLER;
    ch->params = *caller;
    if ((rc = try_params(F, &t, caller, copy, pl, why, sizeof why)))
      return clattn__fail(ctx, rc, "%s", why);
    snprintf(ch->why, sizeof ch->why, "the caller's desc->params");
    goto resolved;
  }
  if (ctx->has_override[F->fam]) {
    ch->source = CLATTN_CHOICE_OVERRIDE;
    ch->params = ctx->override[F->fam];
    if ((rc = try_params(F, &t, &ch->params, copy, pl, why, sizeof why)))
      return clattn__fail(ctx, rc, "%s %s override: %s",
                          ctx->override_from[F->fam], fam, why);
    snprintf(ch->why, sizeof ch->why, "override from %s",
             ctx->override_from[F->fam]);
    goto resolved;
  }
  clattn__tuning *T = tuning(ctx);
  char tried[256] = "";
  if (T) {
    clattn__appendf(ch->why, sizeof ch->why, "%s; ", T->note);
    /* 0: this device, this class; 1: this device, nearest; 2: kin */
    for (int pass = 0; pass < 3; pass++) {
      const clattn_tune_entry *best = NULL;
      double bd = 0;
      for (int i = 0; i < T->n; i++) {
        const clattn_tune_entry *r = &T->e[i];
        int mine = strcmp(r->fingerprint, T->fingerprint) == 0;
        if (strcmp(r->kernel, fam) != 0 || mine != (pass < 2))
          continue;
        double dist = class_distance(cls, r->shape_class);
        if (dist < 0 || (pass == 0 && dist > 0))
          continue;
        clattn_params p;
        if (clattn_params_parse(r->params, &p) != CLATTN_OK ||
            try_params(F, &t, &p, copy, pl, why, sizeof why) != CLATTN_OK) {
          if (!tried[0])
            snprintf(tried, sizeof tried, "entry %.96s does not fit: %.120s",
                     r->shape_class, why);
          continue;
        }
        if (best == NULL || dist < bd ||
            (dist == bd && r->median_s < best->median_s)) {
          best = r;
          bd = dist;
        }
      }
      if (best) {
        clattn_params_parse(best->params, &ch->params);
        try_params(F, &t, &ch->params, copy, pl, why, sizeof why);
        ch->source = pass == 0   ? CLATTN_CHOICE_TUNED
                     : pass == 1 ? CLATTN_CHOICE_TUNED_NEAREST
                                 : CLATTN_CHOICE_TUNED_ARCH;
        fill_entry(ch, best);
        clattn__appendf(ch->why, sizeof ch->why,
                        "%s entry for \"%s\" on %s (%.3g ms)",
                        pass == 0   ? "exact"
                        : pass == 1 ? "nearest tuned class:"
                                    : "same vendor and architecture:",
                        best->shape_class, best->device,
                        best->median_s * 1e3);
        goto resolved;
      }
    }
    if (tried[0])
      clattn__appendf(ch->why, sizeof ch->why, "%s; ", tried);
    else
      clattn__appendf(ch->why, sizeof ch->why, "no %s entry for this "
                      "device or its architecture; ", fam);
    if (T->has_model) {
      const pick *pk = model_pick(T, F, &t, cls, copy);
      if (pk->picked &&
          try_params(F, &t, &pk->p, copy, pl, why, sizeof why) ==
              CLATTN_OK) {
        ch->source = CLATTN_CHOICE_MODEL;
        ch->params = pk->p;
        clattn__appendf(ch->why, sizeof ch->why,
                        "model (%s profile): %.3g ms predicted against the "
                        "default's %.3g ms",
                        T->prof.source == CLATTN_PROFILE_MEASURED
                            ? "measured"
                            : "datasheet",
                        pk->t_best * 1e3, pk->t_default * 1e3);
        goto resolved;
      }
      clattn__appendf(ch->why, sizeof ch->why,
                      "the model predicts no candidate 10%% faster than the "
                      "default; ");
    } else {
      clattn__appendf(ch->why, sizeof ch->why, "%s; ", T->model_note);
    }
  }
  ch->source = CLATTN_CHOICE_DEFAULT;
  memset(&ch->params, 0, sizeof ch->params);
  if ((rc = try_params(F, &t, &ch->params, copy, pl, why, sizeof why)))
    return clattn__fail(ctx, rc, "%s", why);
  clattn__appendf(ch->why, sizeof ch->why, "built-in default");
resolved:
  F->resolved(pl, &ch->resolved);
  ctx->errmsg[0] = '\0';
  return CLATTN_OK;
}

/* --------------------------------------------------- the two families */

static void prefill_with(const void *desc, const clattn_params *p,
                         void *copy) {
  clattn_attn_desc *c = copy;
  *c = *(const clattn_attn_desc *)desc;
  c->params = p;
}

static int prefill_plan(const clattn__target *t, const void *copy, void *pl,
                        clattn_status *rc, char *why, size_t cap) {
  *rc = clattn__plan_prefill(t, copy, pl, why, cap);
  return *rc == CLATTN_OK && clattn__prefill_fits(t, copy, pl, why, cap);
}

static void prefill_resolved(const void *pl, clattn_params *o) {
  *o = clattn__prefill_resolved(pl);
}

static clattn_status prefill_space(const clattn__target *t, const void *d,
                                   clattn__space *s) {
  return clattn__space_prefill(t, d, s);
}

static int prefill_predict(const void *copy, const clattn_profile *prof,
                           double *tp) {
  const clattn_attn_desc *c = copy;
  return clattn__predict(prof, c, NULL, c->params, tp, NULL);
}

static void decode_with(const void *desc, const clattn_params *p,
                        void *copy) {
  clattn_decode_desc *c = copy;
  *c = *(const clattn_decode_desc *)desc;
  c->params = p;
}

static int decode_plan(const clattn__target *t, const void *copy, void *pl,
                       clattn_status *rc, char *why, size_t cap) {
  *rc = clattn__plan_decode(t, copy, pl, why, cap);
  return *rc == CLATTN_OK && clattn__decode_fits(t, copy, pl, why, cap);
}

static void decode_resolved(const void *pl, clattn_params *o) {
  *o = clattn__decode_resolved(pl);
}

static clattn_status decode_space(const clattn__target *t, const void *d,
                                  clattn__space *s) {
  return clattn__space_decode(t, d, s);
}

static int decode_predict(const void *copy, const clattn_profile *prof,
                          double *tp) {
  const clattn_decode_desc *c = copy;
  return clattn__predict(prof, NULL, c, c->params, tp, NULL);
}

clattn_status clattn__choose_prefill(clattn_ctx *ctx, const clattn_attn_desc *d,
                                     clattn_choice *ch,
                                     clattn__prefill_plan *pl) {
  char cls[96];
  clattn_attn_desc copy;
  const fam_ops F = {FAM_PREFILL,     d,             prefill_with,
                     prefill_plan,    prefill_resolved, prefill_space,
                     prefill_predict};
  clattn_shape_class_attention(d, cls, sizeof cls);
  return choose(ctx, &F, d->params, cls, ch, pl, &copy);
}

clattn_status clattn__choose_decode(clattn_ctx *ctx,
                                    const clattn_decode_desc *d,
                                    clattn_choice *ch,
                                    clattn__decode_plan *pl) {
  char cls[96];
  clattn_decode_desc copy;
  const fam_ops F = {FAM_DECODE,     d,               decode_with,
                     decode_plan,    decode_resolved, decode_space,
                     decode_predict};
  clattn_shape_class_decode(d, cls, sizeof cls);
  return choose(ctx, &F, d->params, cls, ch, pl, &copy);
}

/* ------------------------------------------------------------- explain */

const char *clattn_choice_source_str(clattn_choice_source s) {
  static const char *const names[] = {"caller",     "override",
                                      "tuned",      "tuned-nearest",
                                      "tuned-arch", "model",
                                      "default"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

clattn_status clattn_explain_attention(clattn_ctx *ctx,
                                       const clattn_attn_desc *d,
                                       clattn_choice *out) {
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  if (d == NULL || out == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "desc or out is NULL");
  if (d->batch < 1 || d->n_q < 1 || d->n_kv < 1)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "batch (%d), n_q (%d) and n_kv (%d) must be >= 1",
                        d->batch, d->n_q, d->n_kv);
  if ((rc = clattn__check_heads(ctx, d->heads_q, d->heads_kv, d->head_dim_k,
                                d->head_dim_v, d->dtype)))
    return rc;
  clattn__prefill_plan pl;
  return clattn__choose_prefill(ctx, d, out, &pl);
}

clattn_status clattn_explain_decode(clattn_ctx *ctx,
                                    const clattn_decode_desc *d,
                                    clattn_choice *out) {
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  if (d == NULL || out == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "desc or out is NULL");
  if (d->batch < 1 || d->capacity < 1)
    return clattn__fail(ctx, CLATTN_ERR_SHAPE,
                        "batch (%d) and capacity (%d) must be >= 1", d->batch,
                        d->capacity);
  if ((rc = clattn__check_heads(ctx, d->heads_q, d->heads_kv, d->head_dim_k,
                                d->head_dim_v, d->dtype)))
    return rc;
  clattn__decode_plan pl;
  return clattn__choose_decode(ctx, d, out, &pl);
}

clattn_status clattn_ctx_last_choice(const clattn_ctx *ctx,
                                     clattn_choice *out) {
  clattn_status rc = clattn__ctx_check(ctx);
  if (rc)
    return rc;
  if (out == NULL)
    return CLATTN_ERR_INVALID_ARG;
  if (!ctx->has_last)
    return CLATTN_ERR_NOT_FOUND;
  *out = ctx->last;
  return CLATTN_OK;
}
