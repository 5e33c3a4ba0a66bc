/* choice.c - which parameters each call runs with, and why.
 *
 * Order (clattn_choice_source): the caller's params, an override
 * (clattn_ctx_set_params, $CLATTN_PARAMS), a tuning entry of this device
 * for the call's shape class, of this device for the nearest tuned class,
 * of a device of the same vendor and architecture, the shipped data's row
 * (db/shipped.c) of the same vendor and architecture, else for a CPU of
 * the same vector ISA class (each the exact class, else the nearest), the
 * model's predicted
 * best candidate of the default's kernel variant when it predicts a gain
 * of at least 10% over the default (only with a datasheet profile, or a
 * measured one whose model checks are within 30%), and the default plan.
 * A tuned entry that does not fit the call (local memory, work-group
 * size, an invalid field, CLBlast where the target's gemm_own_from keeps
 * the library's own picks off it) is passed over.  Every step goes
 * through the family's own operations (family.h): nothing here names a
 * family.
 *
 * The tuning database is read once, at the context's first call, into
 * memory: opened read-only, and only the "ok" rows of this device and of
 * its vendor and architecture, the best few of each device, kernel and
 * shape class, each checked (clattn__tune_entry_check); a database locked
 * by another connection is read again a second later, and every database
 * again after clattn_ctx_reload_tuning or a tuning run on the context.
 * The model's picks are memoised per family and shape class, and each
 * call's whole choice per call (memo.c): the search below, explanation
 * included, runs once per call's key until the rows or the overrides
 * change. */
#include "choice/choice.h"
#include "device/profile.h"
#include "family/attn_opts.h"
#include "base/clock.h"
#include "base/cpu_isa.h"
#include "base/versioned.h"
#include "db/db.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PICKS 64
#define MAX_FAMILIES 32 /* registered families the model's gate keeps */

typedef struct pick {
  const clattn__family *fam;
  char cls[96];
  int picked; /* 1: the model's candidate beats the default by >= 10% */
  clattn__params p;
  double t_best, t_default;
} pick;

typedef struct clattn__tuning {
  int loaded;
  clattn_tune_entry *e; /* best ok rows per (device, kernel, class) */
  int n;
  char fingerprint[40], vendor[64], arch[64];
  int is_cpu;
  clattn_profile prof; /* for the model's pick */
  int has_model;       /* the model may pick (see tuning()) for the
                          families may_pick marks */
  int no_tuning;       /* tuning is off: no shipped rows either */
  /* per registered family: whether the model may pick, and why not */
  unsigned char may_pick[MAX_FAMILIES];
  char model_note[MAX_FAMILIES][160];
  char note[352];        /* what was loaded, or why nothing */
  double retry_at;       /* the database was busy: read it again from this
                            clattn__now() on (0: never) */
  int cap;               /* of e */
  int stale, invalid;    /* rows passed over while loading */
  int nomem;             /* out of memory while loading: the call fails */
  char invalid_why[160]; /* the first invalid row's reason */
  pick picks[MAX_PICKS];
  int n_picks;
} clattn__tuning;

/* -------------------------------------------------------------- set-up */

static int env_on(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

clattn_status clattn__choice_init(clattn_ctx *ctx, const clattn_ctx_opts *o) {
  const int nf = clattn__family_count();
  clattn__choice_state *C = calloc(1, sizeof *C);
  if (C == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  ctx->choice = C;
  C->has_override = calloc((size_t)nf, sizeof *C->has_override);
  C->override = calloc((size_t)nf, sizeof *C->override);
  C->override_from = calloc((size_t)nf, sizeof *C->override_from);
  C->memo = clattn__memo_new();
  if (!C->has_override || !C->override || !C->override_from || !C->memo)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  const char *env = getenv("CLATTN_PARAMS");
  if (env && *env) {
    clattn_status rc = clattn__set_overrides(ctx, env, "$CLATTN_PARAMS");
    if (rc)
      return rc;
  }
  if (o->no_tuning || env_on("CLATTN_NO_TUNING")) {
    C->no_tuning = 1;
    return CLATTN_OK;
  }
  errno = 0;
  C->tuning_db =
      o->tuning_db ? strdup(o->tuning_db) : clattn__db_default_path();
  if (C->tuning_db == NULL && (o->tuning_db || errno == ENOMEM))
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  return CLATTN_OK;
}

void clattn__choice_reload(clattn_ctx *ctx) {
  clattn__choice_state *C = ctx->choice;
  if (C == NULL)
    return;
  if (C->tuning) {
    free(C->tuning->e);
    free(C->tuning);
    C->tuning = NULL;
  }
  clattn__memo_invalidate(C->memo);
}

clattn_status clattn_ctx_reload_tuning(clattn_ctx *ctx) {
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  if (locked == NULL)
    return CLATTN_ERR_MISUSE;
  ctx->errmsg[0] = '\0';
  clattn__choice_reload(ctx);
  /* the layers apply the Xgemm parameters again before their next GEMM */
  ctx->gemm_explain[0] = '\0';
  clattn__ctx_leave(locked);
  return CLATTN_OK;
}

void clattn__choice_free(clattn_ctx *ctx) {
  clattn__choice_state *C = ctx->choice;
  if (C == NULL)
    return;
  clattn__choice_reload(ctx);
  free(C->tuning_db);
  free(C->has_override);
  free(C->override);
  free(C->override_from);
  clattn__memo_free(C->memo);
  free(C);
  ctx->choice = NULL;
}

/* Keep the KEEP_PER_CLASS best ok rows of each (device, kernel, class) of
 * this device or its vendor and architecture (a best row that does not fit
 * a call leaves the next ones); rows arrive best first per group
 * (clattn__db_scan_usable).  Rows of another tuning method
 * (clattn_tune_method) and rows that are not valid are counted and
 * passed over. */
#define KEEP_PER_CLASS 4
static int keep_row(const clattn_tune_entry *r, void *user) {
  clattn__tuning *T = user;
  char why[512];
  if (clattn__tune_entry_check(r, 0, why, sizeof why) != CLATTN_OK) {
    if (T->invalid++ == 0)
      snprintf(T->invalid_why, sizeof T->invalid_why, "%.40s %.40s: %.70s",
               r->kernel, r->shape_class, why);
    return 0;
  }
  if (!clattn__tune_row_current(r)) {
    T->stale++;
    return 0;
  }
  /* a row under a family's former name is the family's */
  const clattn__family *F = clattn__family_find(r->kernel);
  const char *kernel = F != NULL ? F->name : r->kernel;
  int same = 0;
  for (int j = T->n - 1; j >= 0 && same < KEEP_PER_CLASS; j--) {
    const clattn_tune_entry *q = &T->e[j];
    if (strcmp(q->fingerprint, r->fingerprint) != 0 ||
        strcmp(q->kernel, kernel) != 0 ||
        strcmp(q->shape_class, r->shape_class) != 0)
      break; /* rows arrive grouped */
    same++;
  }
  if (same >= KEEP_PER_CLASS)
    return 0;
  if (T->n == T->cap) {
    int nc = T->cap ? 2 * T->cap : 16;
    clattn_tune_entry *g = realloc(T->e, (size_t)nc * sizeof *g);
    if (g == NULL) {
      T->nomem = 1; /* the call fails and the next one reads again */
      return -1;
    }
    T->e = g;
    T->cap = nc;
  }
  T->e[T->n] = *r;
  snprintf(T->e[T->n].kernel, sizeof T->e[T->n].kernel, "%s", kernel);
  T->n++;
  return 0;
}

clattn_status clattn__tuning_db_open(const clattn_ctx *ctx, clattn_db **db,
                                     char *why, size_t cap) {
  clattn_status rc;
  *db = NULL;
  if (ctx->choice->tuning_db == NULL) {
    snprintf(why, cap,
             "tuning is off (no_tuning, CLATTN_NO_TUNING or no database "
             "path)");
    return CLATTN_OK;
  }
  /* read-only: no file or directory is created, no lock is taken for
   * writing, and a lock held elsewhere is waited for only briefly */
  rc = clattn_db_open_readonly(ctx->choice->tuning_db, db);
  if (rc == CLATTN_OK)
    return CLATTN_OK;
  if (rc == CLATTN_ERR_NOT_FOUND)
    snprintf(why, cap, "no tuning database at %.400s", ctx->choice->tuning_db);
  else
    snprintf(why, cap, "tuning database not used: %.400s",
             clattn_db_errmsg(NULL));
  return rc == CLATTN_ERR_NOMEM ? rc : CLATTN_OK;
}

/* Whether a message of the database says another connection's lock (the
 * two forms of db.c). */
static int busy_message(const char *msg) {
  return strstr(msg, " is busy (locked by another connection") != NULL ||
         strstr(msg, "(busy: another connection holds a lock)") != NULL;
}

/* Whether a stored model check speaks for family F (clattn__db_model_error's
 * filter): a call whose first word names F (the first table of `clattn
 * model check` writes prefill as "attention" and append as "kv_append"),
 * or one that names no family (a check of the whole device). */
static int check_of_family(const char *call, const void *arg) {
  const clattn__family *F = arg;
  char word[40];
  snprintf(word, sizeof word, "%.*s", (int)strcspn(call, " "), call);
  const clattn__family *named =
      !strcmp(word, "attention")   ? clattn__family_find("prefill")
      : !strcmp(word, "kv_append") ? clattn__family_find("append")
                                   : clattn__family_find(word);
  return named == NULL || named == F;
}

/* Read the entries and the device's profile at the first call. */
static clattn__tuning *tuning(clattn_ctx *ctx) {
  clattn__choice_state *C = ctx->choice;
  if (C->tuning && C->tuning->retry_at > 0 &&
      clattn__now() >= C->tuning->retry_at)
    clattn__choice_reload(ctx); /* the lock may be gone: look again */
  if (C->tuning)
    return C->tuning;
  clattn__tuning *T = calloc(1, sizeof *T);
  if (T == NULL)
    return NULL;
  C->tuning = T;
  clattn_profile rep;
  clattn_status rc = clattn__profile_reported(ctx, &rep);
  if (rc == CLATTN_ERR_NOMEM) {
    clattn__choice_reload(ctx);
    return NULL;
  }
  if (rc == CLATTN_OK) {
    snprintf(T->fingerprint, sizeof T->fingerprint, "%s", rep.fingerprint);
    snprintf(T->vendor, sizeof T->vendor, "%s", rep.vendor);
    snprintf(T->arch, sizeof T->arch, "%s", rep.arch);
    T->is_cpu = rep.is_cpu;
    T->prof = rep;
  }
  clattn_db *db = NULL;
  T->no_tuning = C->no_tuning;
  rc = clattn__tuning_db_open(ctx, &db, T->note, sizeof T->note);
  if (rc == CLATTN_OK && db != NULL) {
    if (clattn__db_scan_usable(db, T->fingerprint, T->vendor, T->arch, keep_row,
                               T) != CLATTN_OK &&
        !T->nomem) {
      snprintf(T->note, sizeof T->note, "tuning entries unreadable: %.300s",
               clattn_db_errmsg(db));
      T->n = 0;
    } else {
      int len = snprintf(T->note, sizeof T->note, "%d tuning entries in %.200s",
                         T->n, C->tuning_db);
      if (T->stale > 0 && len > 0 && (size_t)len < sizeof T->note)
        len += snprintf(T->note + len, sizeof T->note - (size_t)len,
                        " (%d of an older tuning method passed over: run "
                        "clattn tune again)",
                        T->stale);
      if (T->invalid > 0 && len > 0 && (size_t)len < sizeof T->note)
        snprintf(T->note + len, sizeof T->note - (size_t)len,
                 " (%d invalid skipped, the first: %s)", T->invalid,
                 T->invalid_why);
    }
  }
  /* out of memory is no property of the database: fail this call and read
   * the entries again at the next one */
  if (rc == CLATTN_ERR_NOMEM || T->nomem) {
    clattn_db_close(db);
    clattn__choice_reload(ctx);
    return NULL;
  }
  /* A lock held by another connection: the defaults for now, and another
   * look after a second rather than never. */
  if (busy_message(T->note))
    T->retry_at = clattn__now() + 1.0;
  /* The model may pick parameters with a datasheet profile (an unseen
   * GPU: the best information there is) or with a measured one for a
   * family whose `clattn model check` rows found it predicting this
   * device: the median error of its stored checks within 30%.  A model
   * further off, as on CPUs where decode runs well below the FMA peak,
   * would pick slower parameters (bench/RESULTS.md, decode model error);
   * one family's misses (a compute-bound kernel priced at the FMA peak)
   * say nothing of another's picks. */
  clattn_profile p;
  rc = clattn__profile_for(ctx, db, &p);
  if (rc == CLATTN_ERR_NOMEM) {
    clattn_db_close(db);
    clattn__choice_reload(ctx);
    return NULL;
  }
  const int nfam = clattn__family_count();
  for (int i = 0; i < nfam && i < MAX_FAMILIES; i++) {
    const clattn__family *F = clattn__family_at(i);
    double err = 0.0;
    int nchecks = 0;
    char *note = T->model_note[i];
    const size_t cap = sizeof T->model_note[i];
    if (rc != CLATTN_OK || p.fp32_gflops <= 0 || p.bw_read_gbs <= 0) {
      snprintf(note, cap, "no measured or datasheet profile for the model");
    } else if (p.source == CLATTN_PROFILE_DATASHEET) {
      T->may_pick[i] = 1;
    } else if (db == NULL ||
               clattn__db_model_error(db, T->fingerprint, check_of_family, F,
                                      &err, &nchecks) != CLATTN_OK ||
               nchecks < 3) {
      snprintf(note, cap,
               "the model is not checked on this device for %s (clattn "
               "model check)",
               F->name);
    } else if (err > 0.30) {
      snprintf(note, cap,
               "the model's median error on this device is %.0f%% (%s's "
               "checks; over 30%%: it does not pick)",
               100.0 * err, F->name);
    } else {
      T->may_pick[i] = 1;
    }
    if (T->may_pick[i]) {
      T->prof = p;
      T->has_model = 1;
    }
  }
  clattn_db_close(db);
  ctx->errmsg[0] = '\0';
  return T;
}

/* -------------------------------------------------------- shape classes */

/* A shape class is words: a name of letters, then nothing (a word such as
 * "bhsd") or numbers joined by dots ("m4096", "h8.16.8": three head
 * counts); the first word is the dtype. */
#define CLASS_WORDS 16
#define WORD_PARTS 4

typedef struct class_word {
  char name[16];
  int nparts; /* 0: a word without numbers */
  long part[WORD_PARTS];
} class_word;

typedef struct class_key {
  int n; /* words; -1: text that is not a shape class */
  class_word w[CLASS_WORDS];
} class_key;

static int is_lower(char c) { return c >= 'a' && c <= 'z'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

static void parse_class(const char *s, class_key *k) {
  k->n = 0;
  while (*s) {
    if (*s == ' ') {
      s++;
      continue;
    }
    if (k->n == CLASS_WORDS)
      goto bad;
    class_word *w = &k->w[k->n++];
    size_t len = 0;
    while (is_lower(*s) && len + 1 < sizeof w->name)
      w->name[len++] = *s++;
    w->name[len] = '\0';
    w->nparts = 0;
    if (is_lower(*s))
      goto bad; /* a longer name than any class has */
    while (is_digit(*s)) {
      long v = 0;
      while (is_digit(*s) && v < 100000000L)
        v = 10 * v + (*s++ - '0');
      if (is_digit(*s) || w->nparts == WORD_PARTS)
        goto bad;
      w->part[w->nparts++] = v;
      if (*s != '.')
        break;
      if (!is_digit(*++s))
        goto bad;
    }
    if (*s && *s != ' ')
      goto bad;
  }
  return;
bad:
  k->n = -1;
}

/* Distance between two words of one name at place i: -1 when they
 * cannot share parameters (the dtype, a word without numbers, a head
 * dim), else the sum over the numbers of |log2| of their ratios, each
 * group size and head count counted twice (they change how the kernels
 * divide the work, more than a length does), and 1 per differing flag
 * (c0, c1). */
static double word_distance(int i, const class_word *x, const class_word *y) {
  if (strcmp(x->name, y->name) != 0 || x->nparts != y->nparts)
    return -1;
  if (memcmp(x->part, y->part, (size_t)x->nparts * sizeof x->part[0]) == 0)
    return 0;
  const char *nm = x->name;
  if (i == 0 || x->nparts == 0 || strcmp(nm, "k") == 0 ||
      strcmp(nm, "v") == 0 || strcmp(nm, "d") == 0)
    return -1; /* dtype, word, head dims */
  if (strcmp(nm, "c") == 0)
    return 1;
  const double weight = strcmp(nm, "g") == 0 || nm[0] == 'h' ? 2 : 1;
  double dist = 0;
  for (int j = 0; j < x->nparts; j++) {
    if (x->part[j] <= 0 || y->part[j] <= 0)
      return -1;
    dist += weight * fabs(log2((double)x->part[j] / (double)y->part[j]));
  }
  return dist;
}

/* Distance between two classes of one kernel: the sum of their words'
 * (word_distance), -1 when a pair cannot share parameters or a text is no
 * class.  The attention options' words (a window, the soft-cap, ALiBi,
 * sinks) may be in one class and not the other, 1 each: a call with a
 * window is near the same call without. */
static double class_distance(const class_key *a, const class_key *b) {
  if (a->n < 0 || b->n < 0)
    return -1;
  double dist = 0;
  int i = 0, j = 0;
  while (i < a->n || j < b->n) {
    const class_word *x = i < a->n ? &a->w[i] : NULL;
    const class_word *y = j < b->n ? &b->w[j] : NULL;
    if (x != NULL && y != NULL && strcmp(x->name, y->name) == 0) {
      const double d = word_distance(i, x, y);
      if (d < 0)
        return -1;
      dist += d;
      i++, j++;
    } else if (x != NULL && clattn__opts_class_word(x->name)) {
      dist += 1, i++;
    } else if (y != NULL && clattn__opts_class_word(y->name)) {
      dist += 1, j++;
    } else {
      return -1;
    }
  }
  return dist;
}

/* ------------------------------------------------------------- choosing */

/* The model's pick for this class (memoised). */
static const pick *model_pick(clattn__tuning *T, const clattn__family *F,
                              const clattn__target *t, const void *desc,
                              const char *cls) {
  for (int i = 0; i < T->n_picks; i++)
    if (T->picks[i].fam == F && strcmp(T->picks[i].cls, cls) == 0)
      return &T->picks[i];
  pick pk;
  memset(&pk, 0, sizeof pk);
  pk.fam = F;
  snprintf(pk.cls, sizeof pk.cls, "%s", cls);
  clattn__space s;
  memset(&s, 0, sizeof s);
  if (F->space(t, desc, &s) == CLATTN_OK && s.n > 0 && s.def >= 0) {
    int best = -1;
    double tb = 0;
    const clattn__params def = clattn__space_params(&s, s.def);
    const int kernel = clattn__params_flagged(F, &def, CLATTN__TUNABLE_KERNEL);
    for (int i = 0; i < s.n; i++) {
      const clattn__params p = clattn__space_params(&s, i);
      double tp = 0;
      /* the default's kernel only (CLATTN__TUNABLE_KERNEL) */
      if (clattn__params_flagged(F, &p, CLATTN__TUNABLE_KERNEL) != kernel)
        continue;
      if (!clattn__predict(F, desc, &p, &T->prof, &tp, NULL) || tp <= 0)
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

static void fill_entry(clattn__choice *ch, const clattn_tune_entry *e) {
  snprintf(ch->entry_class, sizeof ch->entry_class, "%s", e->shape_class);
  snprintf(ch->entry_device, sizeof ch->entry_device, "%s", e->device);
  ch->entry_median_s = e->median_s;
}

/* What a tier's search needs of the call. */
typedef struct tier_call {
  const clattn__family *F;
  const clattn__target *t;
  const void *desc;
  const char *cls;
  const class_key *key; /* cls parsed */
  void *pl;
  char *tried; /* the first row that did not fit, for the why */
  size_t tried_cap;
} tier_call;

/* Tier filters: a row of this device (*arg 1) or of another (0); a
 * shipped row of match level *arg (clattn__shipped_match). */
static int same_device(const clattn_tune_entry *r, const void *arg,
                       const clattn__tuning *T) {
  return (strcmp(r->fingerprint, T->fingerprint) == 0) == *(const int *)arg;
}
static int shipped_level(const clattn_tune_entry *r, const void *arg,
                         const clattn__tuning *T) {
  return clattn__shipped_match(r, T->vendor, T->arch, T->is_cpu) ==
         *(const int *)arg;
}

/* The row of the call's family among rows that keep() accepts, of the
 * nearest shape class (exact: that class only) and then the fastest,
 * whose params plan for the call; NULL when none. */
static const clattn_tune_entry *
best_row(const tier_call *k, const clattn_tune_entry *rows, int n, int exact,
         int (*keep)(const clattn_tune_entry *, const void *,
                     const clattn__tuning *),
         const void *arg, const clattn__tuning *T) {
  const clattn_tune_entry *best = NULL;
  double bd = 0;
  char why[256];
  for (int i = 0; i < n; i++) {
    const clattn_tune_entry *r = &rows[i];
    if (strcmp(r->kernel, k->F->name) != 0 || !keep(r, arg, T))
      continue;
    class_key rk;
    double dist = 0;
    if (strcmp(k->cls, r->shape_class) != 0) {
      parse_class(r->shape_class, &rk);
      dist = class_distance(k->key, &rk);
    }
    if (dist < 0 || (exact && dist > 0))
      continue;
    clattn__params p;
    memset(&p, 0, sizeof p);
    if (clattn__params_parse(k->F, r->params, &p, why, sizeof why) !=
            CLATTN_OK ||
        clattn__plan_params(k->F, k->t, k->desc, &p, k->pl, why,
                            sizeof why) != CLATTN_OK) {
      if (!k->tried[0])
        snprintf(k->tried, k->tried_cap, "entry %.96s does not fit: %.120s",
                 r->shape_class, why);
      continue;
    }
    if (best == NULL || dist < bd ||
        (dist == bd && r->median_s < best->median_s)) {
      best = r;
      bd = dist;
    }
  }
  return best;
}

clattn_status clattn__choice_target(clattn_ctx *ctx, const clattn__family *F,
                                    clattn__target *t) {
  clattn_status rc = CLATTN_OK;
  if (F->clblast && ctx->gemm_prepare)
    rc = ctx->gemm_prepare(ctx, 0);
  *t = clattn__ctx_target(ctx);
  return rc;
}

/* The search: the sources in order, the explanation written as it goes. */
static clattn_status search(clattn_ctx *ctx, const clattn__family *F,
                            const void *desc, const clattn__params *caller,
                            clattn__choice *ch, void *pl) {
  clattn__target t;
  char why[256], cls[96];
  const char *from = NULL;
  clattn_status rc;
  memset(ch, 0, sizeof *ch);
  ch->family = F;
  if ((rc = clattn__choice_target(ctx, F, &t)))
    return rc;
  /* Explicit params run as given: gemm_own_from steers only the library's
   * own picks (tuning rows, the model, the default) away from CLBlast. */
  clattn__target te = t;
  te.gemm_own_from = 0;
  F->shape_class(desc, cls, sizeof cls);
  snprintf(ch->shape_class, sizeof ch->shape_class, "%s", cls);
  const char *fam = F->name;
  const clattn__params *ov =
      clattn__override(ctx, clattn__family_index(F), &from);
  if (clattn__params_any(caller)) {
    ch->source = CLATTN_CHOICE_CALLER;
    ch->params = *caller;
    if ((rc = clattn__plan_params(F, &te, desc, caller, pl, why, sizeof why)))
      return clattn__fail(ctx, rc, "%s", why);
    snprintf(ch->why, sizeof ch->why, "the caller's desc->params");
    goto resolved;
  }
  if (ov) {
    ch->source = CLATTN_CHOICE_OVERRIDE;
    ch->params = *ov;
    if ((rc = clattn__plan_params(F, &te, desc, &ch->params, pl, why,
                                  sizeof why)))
      return clattn__fail(ctx, rc, "%s %s override: %s", from, fam, why);
    snprintf(ch->why, sizeof ch->why, "override from %s", from);
    goto resolved;
  }
  clattn__tuning *T = tuning(ctx);
  char tried[256] = "";
  if (T == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM,
                        "out of host memory for the tuning entries");
  {
    clattn__appendf(ch->why, sizeof ch->why, "%s; ", T->note);
    class_key key;
    parse_class(cls, &key);
    const tier_call k = {F, &t, desc, cls, &key, pl, tried, sizeof tried};
    /* 0: this device, this class; 1: this device, nearest; 2: kin */
    for (int pass = 0; pass < 3; pass++) {
      const int mine = pass < 2;
      const clattn_tune_entry *best =
          best_row(&k, T->e, T->n, pass == 0, same_device, &mine, T);
      if (best) {
        clattn__params_parse(F, best->params, &ch->params, why, sizeof why);
        clattn__plan_params(F, &t, desc, &ch->params, pl, why, sizeof why);
        ch->source = pass == 0   ? CLATTN_CHOICE_TUNED
                     : pass == 1 ? CLATTN_CHOICE_TUNED_NEAREST
                                 : CLATTN_CHOICE_TUNED_ARCH;
        fill_entry(ch, best);
        clattn__appendf(ch->why, sizeof ch->why,
                        "%s entry for \"%s\" on %s (%.3g ms)",
                        pass == 0   ? "exact"
                        : pass == 1 ? "nearest tuned class:"
                                    : "same vendor and architecture:",
                        best->shape_class, best->device, best->median_s * 1e3);
        goto resolved;
      }
    }
    if (tried[0])
      clattn__appendf(ch->why, sizeof ch->why, "%s; ", tried);
    else
      clattn__appendf(ch->why, sizeof ch->why,
                      "no %s entry for this "
                      "device or its architecture; ",
                      fam);
    tried[0] = '\0';
    /* The shipped data: the same vendor and arch, else (a CPU) the same
     * vector ISA class; within each the exact class, else the nearest. */
    if (!T->no_tuning) {
      int ns = 0;
      const char *snote = NULL;
      const clattn_tune_entry *rows = clattn__shipped_rows(&ns, &snote);
      for (int level = 2; level >= 1; level--) {
        const clattn_tune_entry *best =
            best_row(&k, rows, ns, 0, shipped_level, &level, T);
        if (best) {
          clattn__params_parse(F, best->params, &ch->params, why, sizeof why);
          clattn__plan_params(F, &t, desc, &ch->params, pl, why, sizeof why);
          ch->source = CLATTN_CHOICE_SHIPPED;
          fill_entry(ch, best);
          clattn__appendf(ch->why, sizeof ch->why,
                          "shipped data: %s, %s class \"%s\" (%.3g ms) (%s "
                          "%s%s%s)",
                          best->device,
                          strcmp(best->shape_class, cls) ? "nearest" : "exact",
                          best->shape_class, best->median_s * 1e3, best->vendor,
                          best->arch, level == 1 ? ": same vector ISA, " : "",
                          level == 1 ? clattn__cpu_isa_class(best->arch) : "");
          goto resolved;
        }
      }
      if (tried[0])
        clattn__appendf(ch->why, sizeof ch->why, "shipped data: %s; ", tried);
      else
        clattn__appendf(ch->why, sizeof ch->why,
                        "shipped data: no %s entry for %s %s (%s); ", fam,
                        T->vendor, T->arch[0] ? T->arch : "(no arch)", snote);
    }
    const int fi = clattn__family_index(F);
    if (T->has_model && fi >= 0 && fi < MAX_FAMILIES && T->may_pick[fi]) {
      const pick *pk = model_pick(T, F, &t, desc, cls);
      if (pk->picked && clattn__plan_params(F, &t, desc, &pk->p, pl, why,
                                            sizeof why) == CLATTN_OK) {
        ch->source = CLATTN_CHOICE_MODEL;
        ch->params = pk->p;
        clattn__appendf(ch->why, sizeof ch->why,
                        "model (%s profile): %.3g ms predicted against the "
                        "default's %.3g ms",
                        T->prof.source == CLATTN_PROFILE_MEASURED ? "measured"
                                                                  : "datasheet",
                        pk->t_best * 1e3, pk->t_default * 1e3);
        goto resolved;
      }
      clattn__appendf(ch->why, sizeof ch->why,
                      "the model predicts no candidate 10%% faster than the "
                      "default; ");
    } else {
      clattn__appendf(ch->why, sizeof ch->why, "%s; ",
                      fi >= 0 && fi < MAX_FAMILIES
                          ? T->model_note[fi]
                          : "no model check for this family");
    }
  }
  ch->source = CLATTN_CHOICE_DEFAULT;
  memset(&ch->params, 0, sizeof ch->params);
  if ((rc = clattn__plan_params(F, &t, desc, &ch->params, pl, why,
                                sizeof why)))
    return clattn__fail(ctx, rc, "%s", why);
  clattn__appendf(ch->why, sizeof ch->why, "built-in default");
resolved:
  ch->resolved = F->resolved(pl);
  ctx->errmsg[0] = '\0';
  return CLATTN_OK;
}

const clattn__memo_entry *
clattn__choice_recall(clattn_ctx *ctx, const clattn__family *F,
                      const void *desc, const clattn__params *p,
                      clattn__memo_key *key, void *plan) {
  clattn__choice_state *C = ctx->choice;
  /* a database that was busy is looked at again a second later, memoised
   * choices or not */
  if (C->tuning && C->tuning->retry_at > 0 &&
      clattn__now() >= C->tuning->retry_at)
    clattn__choice_reload(ctx);
  clattn__memo_make_key(F, desc, p, key);
  return clattn__memo_find(C->memo, key, plan);
}

clattn_status clattn__choice_search(clattn_ctx *ctx, const clattn__family *F,
                                    const void *desc,
                                    const clattn__memo_key *key,
                                    const clattn__memo_entry **out,
                                    void *plan) {
  clattn__choice ch;
  clattn_status rc = search(ctx, F, desc, &key->caller, &ch, plan);
  if (rc != CLATTN_OK)
    return rc;
  *out = clattn__memo_put(ctx, ctx->choice->memo, key, &ch, plan);
  return CLATTN_OK;
}

clattn_status clattn__choose(clattn_ctx *ctx, const clattn__family *F,
                             const void *desc, const clattn__params *p,
                             const clattn__memo_entry **out, void *plan) {
  clattn__memo_key key;
  if ((*out = clattn__choice_recall(ctx, F, desc, p, &key, plan)) != NULL)
    return CLATTN_OK;
  return clattn__choice_search(ctx, F, desc, &key, out, plan);
}

const char *clattn_choice_source_str(clattn_choice_source s) {
  static const char *const names[] = {"caller",        "override",   "tuned",
                                      "tuned-nearest", "tuned-arch", "model",
                                      "default",       "shipped"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

clattn_status clattn__choice_out(const clattn__choice *ch, clattn_choice *out,
                                 char *why, size_t cap) {
  clattn_choice pub;
  memset(&pub, 0, sizeof pub);
  pub.source = ch->source;
  clattn__params_format(ch->family, &ch->params, pub.params, sizeof pub.params);
  clattn__params_format(ch->family, &ch->resolved, pub.resolved,
                        sizeof pub.resolved);
  snprintf(pub.shape_class, sizeof pub.shape_class, "%s", ch->shape_class);
  snprintf(pub.entry_class, sizeof pub.entry_class, "%s", ch->entry_class);
  snprintf(pub.entry_device, sizeof pub.entry_device, "%s", ch->entry_device);
  pub.entry_median_s = ch->entry_median_s;
  snprintf(pub.why, sizeof pub.why, "%s", ch->why);
  return clattn__struct_out(out, &pub, sizeof pub, "clattn_choice", why, cap);
}
