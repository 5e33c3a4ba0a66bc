/* report_data.h - what `clattn report` shows: the rows of one or more
 * databases merged per device, and the figures derived from them (the one
 * place that computes a figure; the writers only format). */
#ifndef CLATTN_CLI_REPORT_DATA_H
#define CLATTN_CLI_REPORT_DATA_H

#include "clattn_tools.h"

#include <stdio.h>

/* Figures of one bench row; NAN where a field they need is 0 (absent). */
typedef struct rep_figures {
  double median_ms;   /* median_s * 1e3 */
  double gflops;      /* flops / median_s / 1e9 */
  double gbs;         /* bytes / median_s / 1e9 */
  double intensity;   /* flops / bytes (FLOP/byte) */
  double roof_pct;    /* 100 * roof_s / median_s */
  double model_err;   /* predicted_s / median_s - 1 */
  double pred_ms;     /* predicted_s * 1e3 */
  double pred_gflops; /* flops / predicted_s / 1e9 */
} rep_figures;

void rep_derive(const clattn_bench_entry *e, rep_figures *f);
/* a / b, NAN unless both are finite and > 0. */
double rep_ratio(double a, double b);

/* A model prediction of a (family, shape) on a datasheet device. */
typedef struct rep_pred {
  int ok; /* 0: the model refused it (errmsg) */
  double t_s, flops, bytes;
  char bound[16];
  char errmsg[256];
} rep_pred;

/* A (family, shape) that some device measured with impl "clattn", or,
 * with datasheet devices in the report, a registered family's bench
 * shape (clattn_family_bench_shape), which they are predicted on. */
typedef struct rep_shape {
  char family[32];
  char shape[256];
} rep_shape;

/* A device: a stored measured profile, or a fingerprint with bench rows. */
typedef struct rep_device {
  char fingerprint[40];
  char name[128], vendor[64], arch[64], driver[64];
  int has_profile;
  clattn_profile profile;
  int has_sheet; /* a datasheet whose name matches */
  clattn_profile sheet;
  int first, n;          /* its rows: data->rows[first .. first+n) */
  int n_tune, n_tune_ok; /* its tuning rows in the databases */
} rep_device;

typedef struct rep_run {
  char run[48];
  char first[32], last[32]; /* the oldest and newest row's date */
  char library_version[16]; /* of its newest row */
  int n_rows;
} rep_run;

/* A datasheet device drawn predicted-only: pred[k] for shapes[k]. */
typedef struct rep_sheet {
  clattn_profile profile;
  rep_pred *pred;
} rep_sheet;

typedef struct rep_data {
  const char *const *db_paths;
  int n_dbs;
  char generated[32]; /* UTC, ISO 8601 */
  /* Every row of every database, duplicates of (fingerprint, family,
   * shape, impl, run) dropped (the newest kept), ordered by device (as
   * devs), family, shape, impl, then newest first. */
  clattn_bench_entry *rows;
  int n_rows;
  /* latest[i]: rows[i] is what the tables show for its (device, family,
   * shape, impl): the clattn row with the newest date, and the baselines
   * of that row's run. */
  unsigned char *latest;
  rep_device *devs;
  int n_devs;
  rep_run *runs;
  int n_runs;
  /* (family, shape) of the clattn rows, and with datasheet devices every
   * family's bench shapes: families in the registry's order, a family's
   * bench shapes in theirs, then its other shapes by text */
  rep_shape *shapes;
  int n_shapes;
  rep_sheet *sheets; /* --datasheets' devices */
  int n_sheets;
} rep_data;

/* Which datasheet devices: all, none, or those a comma-separated list of
 * name substrings matches. */
typedef struct rep_sheet_sel {
  int all;
  const char *names; /* NULL with all = 0: none */
} rep_sheet_sel;

/* Read and merge the databases; on failure prints the problem and returns
 * CLI_FAIL (a missing file, not a database, ...), else CLI_OK. */
int rep_load(const char *const *paths, int n, const rep_sheet_sel *sel,
             rep_data *d);
void rep_free(rep_data *d);

/* The index of the latest clattn row of (device dev, family, shape), -1
 * when none; and of a baseline row in that row's run (-1 none). */
int rep_find(const rep_data *d, int dev, const char *family, const char *shape);
int rep_find_baseline(const rep_data *d, int clattn_row, const char *impl);

/* Does device dev have a latest clattn row of family? */
int rep_find_any(const rep_data *d, int dev, const char *family);

/* The baseline names of the latest rows of a family on a device, in order
 * of first appearance: up to cap into names; returns the count. */
int rep_baselines(const rep_data *d, int dev, const char *family,
                  const char **names, int cap);

/* The families in the report, in order of first appearance (cap). */
int rep_families(const rep_data *d, const char **names, int cap);

/* Speed-ups among shapes that differ only in their kv-heads value: for
 * row i (a latest clattn row), the row it is compared with (kv-heads ==
 * heads, or no kv-heads), -1 when it has none or is that row itself. */
int rep_kv_reference(const rep_data *d, int i);
/* The same for shapes[k] among the report's shapes (datasheet devices). */
int rep_kv_reference_shape(const rep_data *d, int k);

/* Across devices, shapes[q] on device dev: its newest clattn time (ms)
 * and the speed-up over device 0 (device 0's time / this one's); NAN
 * where a row is absent. */
void rep_cross(const rep_data *d, int dev, int q, double *ms, double *speedup);

/* The kv-heads speed-up of shapes[q] on measured device dev (sheet < 0)
 * or datasheet device sheet: time of the kv-heads == heads shape / time
 * of this one, measured (medians; NAN for a datasheet) and predicted
 * (predicted_s, or the model's time); *ref the reference's index in
 * shapes.  0 when there is nothing to compare (no reference shape, or the
 * device has no row of this shape or of its reference). */
int rep_kv_speedup(const rep_data *d, int dev, int sheet, int q, int *ref,
                   double *measured, double *predicted);

/* The kv-heads and heads values of a shape text (kv-heads absent: heads;
 * 0 when a value is absent). */
void rep_kv_heads(const char *shape, int *heads, int *kv_heads);

/* The figures of a datasheet prediction: intensity, pred_ms, pred_gflops
 * (the measured ones NAN). */
void rep_pred_figures(const rep_pred *p, rep_figures *f);

/* The index of (family, shape) in d->shapes, -1 when absent. */
int rep_shape_index(const rep_data *d, const char *family, const char *shape);

#endif
