/* report_data.c - `clattn report`'s rows: read every database, merge them
 * per device and derive the figures the writers print. */
#include "report_data.h"

#include "cli.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ------------------------------------------------------------- figures */

static double positive(double x) { return isfinite(x) && x > 0 ? x : NAN; }

double rep_ratio(double a, double b) { return positive(a) / positive(b); }

void rep_derive(const clattn_bench_entry *e, rep_figures *f) {
  const double t = positive(e->median_s), flops = positive(e->flops),
               bytes = positive(e->bytes), pred = positive(e->predicted_s);
  f->median_ms = t * 1e3;
  f->gflops = flops / t / 1e9;
  f->gbs = bytes / t / 1e9;
  f->intensity = flops / bytes;
  f->roof_pct = 100.0 * positive(e->roof_s) / t;
  f->model_err = pred / t - 1.0;
  f->pred_ms = pred * 1e3;
  f->pred_gflops = flops / pred / 1e9;
}

/* ------------------------------------------------------------- shapes */

/* The value of word "key=" in a shape text, -1 when absent. */
static int shape_value(const char *shape, const char *key) {
  const size_t kl = strlen(key);
  for (const char *p = shape; *p;) {
    while (*p == ' ')
      p++;
    if (!strncmp(p, key, kl) && p[kl] == '=')
      return atoi(p + kl + 1);
    while (*p && *p != ' ')
      p++;
  }
  return -1;
}

void rep_kv_heads(const char *shape, int *heads, int *kv_heads) {
  const int h = shape_value(shape, "heads"),
            kv = shape_value(shape, "kv-heads");
  *heads = h > 0 ? h : 0;
  *kv_heads = kv > 0 ? kv : *heads;
}

/* The shape text without its kv-heads word (blank-normalised). */
static void strip_kv(const char *shape, char *out, size_t cap) {
  size_t n = 0;
  out[0] = '\0';
  for (const char *p = shape; *p;) {
    while (*p == ' ')
      p++;
    const char *w = p;
    while (*p && *p != ' ')
      p++;
    if (p == w || !strncmp(w, "kv-heads=", 9))
      continue;
    const size_t len = (size_t)(p - w);
    if (n + len + 2 > cap)
      return;
    if (n)
      out[n++] = ' ';
    memcpy(out + n, w, len);
    out[n += len] = '\0';
  }
}

/* Does shape b differ from a only in its kv-heads value, and is it the
 * kv-heads == heads member of that group? */
static int is_kv_reference_of(const char *family_a, const char *a,
                              const char *family_b, const char *b) {
  char sa[256], sb[256];
  int ha, kva, hb, kvb;
  if (strcmp(family_a, family_b) || !strcmp(a, b))
    return 0;
  rep_kv_heads(a, &ha, &kva);
  rep_kv_heads(b, &hb, &kvb);
  if (hb <= 0 || kvb != hb || ha != hb)
    return 0;
  strip_kv(a, sa, sizeof sa);
  strip_kv(b, sb, sizeof sb);
  return !strcmp(sa, sb);
}

int rep_kv_reference(const rep_data *d, int i) {
  const clattn_bench_entry *a = &d->rows[i];
  for (int j = 0; j < d->n_rows; j++) {
    const clattn_bench_entry *b = &d->rows[j];
    if (d->latest[j] && !strcmp(b->impl, "clattn") &&
        !strcmp(a->fingerprint, b->fingerprint) &&
        is_kv_reference_of(a->family, a->shape, b->family, b->shape))
      return j;
  }
  return -1;
}

int rep_kv_reference_shape(const rep_data *d, int k) {
  for (int j = 0; j < d->n_shapes; j++)
    if (is_kv_reference_of(d->shapes[k].family, d->shapes[k].shape,
                           d->shapes[j].family, d->shapes[j].shape))
      return j;
  return -1;
}

int rep_shape_index(const rep_data *d, const char *family, const char *shape) {
  for (int k = 0; k < d->n_shapes; k++)
    if (!strcmp(d->shapes[k].family, family) &&
        !strcmp(d->shapes[k].shape, shape))
      return k;
  return -1;
}

void rep_cross(const rep_data *d, int dev, int q, double *ms, double *speedup) {
  const rep_shape *sh = &d->shapes[q];
  const int i = rep_find(d, dev, sh->family, sh->shape);
  const int i0 = rep_find(d, 0, sh->family, sh->shape);
  const double t = i >= 0 ? d->rows[i].median_s : NAN;
  *ms = t * 1e3;
  *speedup = rep_ratio(i0 >= 0 ? d->rows[i0].median_s : NAN, t);
}

int rep_kv_speedup(const rep_data *d, int dev, int sheet, int q, int *ref,
                   double *measured, double *predicted) {
  *ref = rep_kv_reference_shape(d, q);
  *measured = *predicted = NAN;
  if (*ref < 0)
    return 0;
  if (sheet >= 0) {
    const rep_pred *p = d->sheets[sheet].pred;
    *predicted =
        rep_ratio(p[*ref].ok ? p[*ref].t_s : NAN, p[q].ok ? p[q].t_s : NAN);
    return 1;
  }
  const int i = rep_find(d, dev, d->shapes[q].family, d->shapes[q].shape);
  const int j = i >= 0 ? rep_kv_reference(d, i) : -1;
  if (j < 0)
    return 0;
  *measured = rep_ratio(d->rows[j].median_s, d->rows[i].median_s);
  *predicted = rep_ratio(d->rows[j].predicted_s, d->rows[i].predicted_s);
  return 1;
}

/* ------------------------------------------------------------- lookups */

int rep_find(const rep_data *d, int dev, const char *family,
             const char *shape) {
  const rep_device *v = &d->devs[dev];
  for (int i = v->first; i < v->first + v->n; i++)
    if (d->latest[i] && !strcmp(d->rows[i].impl, "clattn") &&
        !strcmp(d->rows[i].family, family) && !strcmp(d->rows[i].shape, shape))
      return i;
  return -1;
}

int rep_find_any(const rep_data *d, int dev, const char *family) {
  const rep_device *v = &d->devs[dev];
  for (int i = v->first; i < v->first + v->n; i++)
    if (d->latest[i] && !strcmp(d->rows[i].impl, "clattn") &&
        !strcmp(d->rows[i].family, family))
      return 1;
  return 0;
}

int rep_find_baseline(const rep_data *d, int c, const char *impl) {
  const clattn_bench_entry *r = &d->rows[c];
  for (int i = 0; i < d->n_rows; i++) {
    const clattn_bench_entry *b = &d->rows[i];
    if (d->latest[i] && !strcmp(b->impl, impl) &&
        !strcmp(b->fingerprint, r->fingerprint) &&
        !strcmp(b->family, r->family) && !strcmp(b->shape, r->shape) &&
        !strcmp(b->run, r->run))
      return i;
  }
  return -1;
}

static int add_name(const char **names, int n, int cap, const char *s) {
  for (int k = 0; k < n; k++)
    if (!strcmp(names[k], s))
      return n;
  if (n < cap)
    names[n++] = s;
  return n;
}

int rep_baselines(const rep_data *d, int dev, const char *family,
                  const char **names, int cap) {
  const rep_device *v = &d->devs[dev];
  int n = 0;
  for (int i = v->first; i < v->first + v->n; i++)
    if (d->latest[i] && strcmp(d->rows[i].impl, "clattn") &&
        !strcmp(d->rows[i].family, family))
      n = add_name(names, n, cap, d->rows[i].impl);
  return n;
}

int rep_families(const rep_data *d, const char **names, int cap) {
  int n = 0;
  for (int k = 0; k < d->n_shapes; k++)
    n = add_name(names, n, cap, d->shapes[k].family);
  return n;
}

/* ------------------------------------------------------------- loading */

static const rep_device *sort_devs; /* for the row order (qsort) */
static int n_sort_devs;

static int device_index(const char *fp) {
  for (int k = 0; k < n_sort_devs; k++)
    if (!strcmp(sort_devs[k].fingerprint, fp))
      return k;
  return n_sort_devs;
}

/* Newest first: by date, then run name. */
static int newer_first(const clattn_bench_entry *a,
                       const clattn_bench_entry *b) {
  int c = strcmp(b->updated, a->updated);
  return c ? c : strcmp(b->run, a->run);
}

static int row_cmp(const void *pa, const void *pb) {
  const clattn_bench_entry *a = pa, *b = pb;
  int c = device_index(a->fingerprint) - device_index(b->fingerprint);
  if (!c)
    c = strcmp(a->family, b->family);
  if (!c)
    c = strcmp(a->shape, b->shape);
  if (!c) { /* clattn's row first, then the baselines by name */
    const int ca = !strcmp(a->impl, "clattn"), cb = !strcmp(b->impl, "clattn");
    c = ca != cb ? cb - ca : strcmp(a->impl, b->impl);
  }
  return c ? c : newer_first(a, b);
}

static int dev_cmp(const void *pa, const void *pb) {
  const rep_device *a = pa, *b = pb;
  int c = strcmp(a->name, b->name);
  return c ? c : strcmp(a->fingerprint, b->fingerprint);
}

/* A family's place in the registry (a former name: its family's); a
 * family this library does not know comes after every one it does. */
static int family_rank(const char *family) {
  const int i = clattn_family_find(family);
  return i < 0 ? clattn_family_count() : i;
}

/* A shape's place among its family's bench shapes; any other after them. */
static int bench_rank(const char *family, const char *shape) {
  const int i = clattn_family_find(family);
  const char *s;
  for (int j = 0; i >= 0 && (s = clattn_family_bench_shape(i, j)) != NULL; j++)
    if (!strcmp(s, shape))
      return j;
  return INT_MAX;
}

/* The families in the registry's order, each's bench shapes in theirs,
 * then its other shapes by text. */
static int shape_cmp(const void *pa, const void *pb) {
  const rep_shape *a = pa, *b = pb;
  const int fa = family_rank(a->family), fb = family_rank(b->family);
  if (fa != fb)
    return fa < fb ? -1 : 1;
  int c = strcmp(a->family, b->family);
  if (c)
    return c;
  const int ba = bench_rank(a->family, a->shape),
            bb = bench_rank(b->family, b->shape);
  if (ba != bb)
    return ba < bb ? -1 : 1;
  return strcmp(a->shape, b->shape);
}

static int run_cmp(const void *pa, const void *pb) {
  const rep_run *a = pa, *b = pb;
  int c = strcmp(a->first, b->first);
  return c ? c : strcmp(a->run, b->run);
}

#define COPY(dst, src) snprintf((dst), sizeof(dst), "%s", (src))

static void *grow(void *p, int n, size_t size) {
  /* room for n + 1 elements, doubling at powers of two */
  if (n & (n - 1))
    return p;
  void *q = realloc(p, (size_t)(n ? 2 * n : 1) * size);
  if (!q)
    free(p);
  return q;
}

static rep_device *find_dev(rep_data *d, const char *fp) {
  for (int k = 0; k < d->n_devs; k++)
    if (!strcmp(d->devs[k].fingerprint, fp))
      return &d->devs[k];
  return NULL;
}

static rep_device *add_dev(rep_data *d, const char *fp) {
  rep_device *v = find_dev(d, fp);
  if (v)
    return v;
  d->devs = grow(d->devs, d->n_devs, sizeof *d->devs);
  if (!d->devs)
    return NULL;
  v = &d->devs[d->n_devs++];
  memset(v, 0, sizeof *v);
  COPY(v->fingerprint, fp);
  return v;
}

/* Case-insensitive: does s contain word? */
static int contains(const char *s, const char *word) {
  const size_t n = strlen(word);
  for (; *s; s++)
    if (!strncasecmp(s, word, n))
      return 1;
  return n == 0;
}

/* A datasheet for a measured device: clattn_datasheet_find by its name,
 * else one whose name holds the device's or the other way round. */
static int device_sheet(const rep_device *v, clattn_profile *out) {
  out->size = sizeof *out;
  if (!v->name[0] || (v->has_profile && v->profile.is_cpu))
    return 0;
  if (clattn_datasheet_find(v->name, out) == CLATTN_OK)
    return 1;
  for (int i = 0; i < clattn_datasheet_count(); i++)
    if (clattn_datasheet(i, out) == CLATTN_OK && out->name[0] &&
        (contains(v->name, out->name) || contains(out->name, v->name)))
      return 1;
  return 0;
}

static int sheet_selected(const rep_sheet_sel *sel, const char *name) {
  if (sel->all)
    return 1;
  if (!sel->names)
    return 0;
  for (const char *p = sel->names; *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char word[128];
    if (n && n < sizeof word) {
      memcpy(word, p, n);
      word[n] = '\0';
      if (contains(name, word))
        return 1;
    }
    p += n + (e != NULL);
  }
  return 0;
}

/* Every word of --datasheets names some datasheet; else prints it. */
static int check_sheet_names(const char *names) {
  for (const char *p = names; *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char word[128];
    int found = 0;
    if (n >= sizeof word)
      n = sizeof word - 1;
    memcpy(word, p, n);
    word[n] = '\0';
    clattn_profile s = {.size = sizeof(clattn_profile)};
    for (int i = 0; n && !found && i < clattn_datasheet_count(); i++)
      found = clattn_datasheet(i, &s) == CLATTN_OK && contains(s.name, word);
    if (!found) {
      cli_err("report: --datasheets: no datasheet device matches '%s'", word);
      return CLI_USAGE;
    }
    p += (e ? (size_t)(e - p) : strlen(p)) + (e != NULL);
  }
  return CLI_OK;
}

/* Pass 0: the profiles and bench rows; pass 1 (every device known by
 * then, whichever file holds its rows): the tuning rows' counts. */
static int read_db(const char *path, int pass, rep_data *d,
                   clattn_bench_entry **rows, int *n_rows) {
  clattn_db *db = NULL;
  clattn_status st = clattn_db_open_readonly(path, &db);
  if (st != CLATTN_OK) {
    cli_err("report: %s: %s", path,
            st == CLATTN_ERR_NOT_FOUND ? "no such file"
                                       : clattn_db_errmsg(NULL));
    return CLI_FAIL;
  }
  clattn_profile *prof = NULL;
  clattn_bench_entry *bench = NULL;
  clattn_tune_entry *tune = NULL;
  int np = 0, nb = 0, nt = 0, rc = CLI_OK;
  const char *what = pass ? "tuning rows" : "profiles";
  st = pass
           ? clattn_db_list_tune(db, NULL, NULL, NULL, sizeof *tune, &tune, &nt)
           : clattn_db_list_profiles(db, sizeof *prof, &prof, &np);
  if (st == CLATTN_OK && !pass) {
    what = "bench rows";
    st = clattn_db_list_bench(db, NULL, NULL, sizeof *bench, &bench, &nb);
  }
  if (st != CLATTN_OK) {
    cli_err("report: %s: reading its %s: %s: %s", path, what,
            clattn_status_str(st), clattn_db_errmsg(db));
    rc = CLI_FAIL;
  }
  for (int k = 0; rc == CLI_OK && k < np; k++) {
    if (prof[k].source != CLATTN_PROFILE_MEASURED || !prof[k].fingerprint[0])
      continue;
    rep_device *v = add_dev(d, prof[k].fingerprint);
    if (!v) {
      rc = CLI_FAIL;
      break;
    }
    if (!v->has_profile) {
      v->has_profile = 1;
      v->profile = prof[k];
    }
  }
  for (int k = 0; rc == CLI_OK && k < nb; k++) {
    rep_device *v = add_dev(d, bench[k].fingerprint);
    *rows = grow(*rows, *n_rows, sizeof **rows);
    if (!v || !*rows) {
      rc = CLI_FAIL;
      break;
    }
    (*rows)[(*n_rows)++] = bench[k];
  }
  for (int k = 0; rc == CLI_OK && k < nt; k++) {
    rep_device *v = find_dev(d, tune[k].fingerprint);
    if (v) {
      v->n_tune++;
      v->n_tune_ok += !strcmp(tune[k].status, "ok");
    }
  }
  if (rc == CLI_FAIL && st == CLATTN_OK)
    cli_err("report: out of memory");
  clattn_free(prof);
  clattn_free(bench);
  clattn_free(tune);
  clattn_db_close(db);
  return rc;
}

static int same_key(const clattn_bench_entry *a, const clattn_bench_entry *b) {
  return !strcmp(a->fingerprint, b->fingerprint) &&
         !strcmp(a->family, b->family) && !strcmp(a->shape, b->shape) &&
         !strcmp(a->impl, b->impl);
}

/* Identity, latest rows, runs and shapes, once the rows are in order. */
static int index_rows(rep_data *d) {
  for (int k = 0; k < d->n_devs; k++) {
    rep_device *v = &d->devs[k];
    v->first = v->n = 0;
  }
  for (int i = 0; i < d->n_rows; i++) {
    const clattn_bench_entry *r = &d->rows[i];
    rep_device *v = find_dev(d, r->fingerprint);
    if (!v->n)
      v->first = i;
    v->n++;
    if (!v->name[0]) { /* a device without a stored profile */
      COPY(v->name, r->device);
      COPY(v->vendor, r->vendor);
      COPY(v->arch, r->arch);
      COPY(v->driver, r->driver);
    }
  }
  d->latest = calloc((size_t)d->n_rows + 1, 1);
  if (!d->latest)
    return CLI_FAIL;
  for (int i = 0; i < d->n_rows; i++) {
    const clattn_bench_entry *r = &d->rows[i];
    /* rows of a key are newest first: the first clattn row of a shape */
    if (!strcmp(r->impl, "clattn") && (i == 0 || !same_key(r, &d->rows[i - 1])))
      d->latest[i] = 1;
  }
  for (int i = 0; i < d->n_rows; i++) {
    const clattn_bench_entry *r = &d->rows[i];
    if (strcmp(r->impl, "clattn"))
      continue;
    if (d->latest[i]) {
      /* the baselines of the same run */
      for (int j = 0; j < d->n_rows; j++) {
        const clattn_bench_entry *b = &d->rows[j];
        if (strcmp(b->impl, "clattn") && !strcmp(b->run, r->run) &&
            !strcmp(b->fingerprint, r->fingerprint) &&
            !strcmp(b->family, r->family) && !strcmp(b->shape, r->shape))
          d->latest[j] = 1;
      }
      d->shapes = grow(d->shapes, d->n_shapes, sizeof *d->shapes);
      if (!d->shapes)
        return CLI_FAIL;
      if (rep_shape_index(d, r->family, r->shape) < 0) {
        rep_shape *s = &d->shapes[d->n_shapes++];
        COPY(s->family, r->family);
        COPY(s->shape, r->shape);
      }
    }
  }
  if (d->n_shapes > 1)
    qsort(d->shapes, (size_t)d->n_shapes, sizeof *d->shapes, shape_cmp);
  for (int i = 0; i < d->n_rows; i++) {
    const clattn_bench_entry *r = &d->rows[i];
    rep_run *u = NULL;
    for (int k = 0; k < d->n_runs && !u; k++)
      if (!strcmp(d->runs[k].run, r->run))
        u = &d->runs[k];
    if (!u) {
      d->runs = grow(d->runs, d->n_runs, sizeof *d->runs);
      if (!d->runs)
        return CLI_FAIL;
      u = &d->runs[d->n_runs++];
      memset(u, 0, sizeof *u);
      COPY(u->run, r->run);
      COPY(u->first, r->updated);
      COPY(u->last, r->updated);
    }
    u->n_rows++;
    if (strcmp(r->updated, u->first) < 0)
      COPY(u->first, r->updated);
    if (strcmp(r->updated, u->last) >= 0) {
      COPY(u->last, r->updated);
      COPY(u->library_version, r->library_version);
    }
  }
  if (d->n_runs > 1)
    qsort(d->runs, (size_t)d->n_runs, sizeof *d->runs, run_cmp);
  return CLI_OK;
}

/* Every registered family's bench shapes that no device measured, into
 * d->shapes, which stays in shape_cmp's order. */
static int add_bench_shapes(rep_data *d) {
  for (int i = 0; i < clattn_family_count(); i++) {
    const char *family = clattn_family_name(i), *shape;
    for (int j = 0; (shape = clattn_family_bench_shape(i, j)) != NULL; j++) {
      if (rep_shape_index(d, family, shape) >= 0)
        continue;
      d->shapes = grow(d->shapes, d->n_shapes, sizeof *d->shapes);
      if (!d->shapes)
        return CLI_FAIL;
      rep_shape *s = &d->shapes[d->n_shapes++];
      COPY(s->family, family);
      COPY(s->shape, shape);
    }
  }
  if (d->n_shapes > 1)
    qsort(d->shapes, (size_t)d->n_shapes, sizeof *d->shapes, shape_cmp);
  return CLI_OK;
}

/* The selected datasheet devices' predictions of every shape of the
 * report: the measured ones and every family's bench shapes, so that a
 * datasheet GPU is compared on them even where nothing is measured. */
static int predict_sheets(const rep_sheet_sel *sel, rep_data *d) {
  for (int i = 0; i < clattn_datasheet_count(); i++) {
    clattn_profile p = {.size = sizeof(clattn_profile)};
    if (clattn_datasheet(i, &p) != CLATTN_OK || !sheet_selected(sel, p.name))
      continue;
    d->sheets = grow(d->sheets, d->n_sheets, sizeof *d->sheets);
    if (!d->sheets)
      return CLI_FAIL;
    rep_sheet *s = &d->sheets[d->n_sheets++];
    s->profile = p;
    s->pred = NULL;
  }
  if (d->n_sheets && add_bench_shapes(d))
    return CLI_FAIL;
  for (int i = 0; i < d->n_sheets; i++) {
    rep_sheet *s = &d->sheets[i];
    const clattn_profile p = s->profile;
    s->pred = calloc((size_t)d->n_shapes + 1, sizeof *s->pred);
    if (!s->pred)
      return CLI_FAIL;
    for (int k = 0; k < d->n_shapes; k++) {
      clattn_prediction pr = {.size = sizeof(clattn_prediction)};
      rep_pred *o = &s->pred[k];
      clattn_status st = clattn_model_shape(d->shapes[k].family,
                                            d->shapes[k].shape, NULL, &p, &pr);
      if (st != CLATTN_OK || !(pr.total.t_pred > 0)) {
        snprintf(o->errmsg, sizeof o->errmsg, "%s",
                 pr.errmsg[0] ? pr.errmsg : clattn_status_str(st));
        continue;
      }
      o->ok = 1;
      o->t_s = pr.total.t_pred;
      o->flops = pr.total.flops;
      o->bytes = pr.total.bytes_dram;
      COPY(o->bound, pr.total.bound == CLATTN_BOUND_MEMORY    ? "memory"
                     : pr.total.bound == CLATTN_BOUND_COMPUTE ? "compute"
                                                              : "launch");
    }
  }
  return CLI_OK;
}

int rep_load(const char *const *paths, int n, const rep_sheet_sel *sel,
             rep_data *d) {
  memset(d, 0, sizeof *d);
  d->db_paths = paths;
  d->n_dbs = n;
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm))
    strftime(d->generated, sizeof d->generated, "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (!sel->all && sel->names && check_sheet_names(sel->names))
    return CLI_USAGE;
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < n; k++)
      if (read_db(paths[k], pass, d, &d->rows, &d->n_rows))
        return CLI_FAIL;
  for (int k = 0; k < d->n_devs; k++) {
    rep_device *v = &d->devs[k];
    if (v->has_profile) {
      COPY(v->name, v->profile.name);
      COPY(v->vendor, v->profile.vendor);
      COPY(v->arch, v->profile.arch);
      COPY(v->driver, v->profile.driver);
    }
  }
  /* names of devices without a profile, for the order */
  for (int i = 0; i < d->n_rows; i++) {
    rep_device *v = find_dev(d, d->rows[i].fingerprint);
    if (!v->name[0])
      COPY(v->name, d->rows[i].device);
  }
  if (d->n_devs > 1)
    qsort(d->devs, (size_t)d->n_devs, sizeof *d->devs, dev_cmp);
  sort_devs = d->devs;
  n_sort_devs = d->n_devs;
  if (d->n_rows > 1)
    qsort(d->rows, (size_t)d->n_rows, sizeof *d->rows, row_cmp);
  /* the same row read from two databases: keep the first (newest) */
  int m = 0;
  for (int i = 0; i < d->n_rows; i++) {
    int dup = 0;
    for (int j = m - 1; !dup && j >= 0 && same_key(&d->rows[i], &d->rows[j]);
         j--)
      dup = !strcmp(d->rows[i].run, d->rows[j].run);
    if (!dup)
      d->rows[m++] = d->rows[i];
  }
  d->n_rows = m;
  for (int k = 0; k < d->n_devs; k++)
    d->devs[k].has_sheet = device_sheet(&d->devs[k], &d->devs[k].sheet);
  if (index_rows(d) || predict_sheets(sel, d)) {
    cli_err("report: out of memory");
    return CLI_FAIL;
  }
  return CLI_OK;
}

void rep_free(rep_data *d) {
  for (int k = 0; k < d->n_sheets; k++)
    free(d->sheets[k].pred);
  free(d->sheets);
  free(d->rows);
  free(d->latest);
  free(d->devs);
  free(d->runs);
  free(d->shapes);
  memset(d, 0, sizeof *d);
}

void rep_pred_figures(const rep_pred *p, rep_figures *f) {
  const double t = p->ok ? positive(p->t_s) : NAN;
  const double flops = positive(p->flops), bytes = positive(p->bytes);
  f->median_ms = f->gflops = f->gbs = f->roof_pct = f->model_err = NAN;
  f->intensity = flops / bytes;
  f->pred_ms = t * 1e3;
  f->pred_gflops = flops / t / 1e9;
}
