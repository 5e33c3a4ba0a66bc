/* report.h - the writers of `clattn report` (HTML with its SVG charts,
 * Markdown, CSV, JSON); every figure they print comes from report_data. */
#ifndef CLATTN_CLI_REPORT_H
#define CLATTN_CLI_REPORT_H

#include "report_data.h"

#include <stdio.h>

/* Each returns 0, or -1 when writing failed (ferror). */
int rep_write_html(FILE *f, const rep_data *d);
int rep_write_markdown(FILE *f, const rep_data *d);
int rep_write_csv(FILE *f, const rep_data *d);
int rep_write_json(FILE *f, const rep_data *d);

/* Text with &, <, >, " and ' as HTML entities, control characters and
 * bytes that are not UTF-8 as U+FFFD (cli_put_text). */
void rep_html_text(FILE *f, const char *s);

/* One kernel in a roofline chart: x = intensity (FLOP/byte), measured and
 * predicted GFLOP/s (NAN: none, as is any value not finite and > 0). */
typedef struct rep_plot_point {
  double intensity, measured, predicted;
  int series;      /* index into the chart's series names */
  char title[640]; /* the hover text */
} rep_plot_point;

typedef struct rep_chart {
  const char *id;        /* unique in the page (the clip path's id) */
  double bw_gbs;         /* the memory roof (0: none) */
  double peak_gflops;    /* the compute roof (0: none) */
  const char *roof_note; /* e.g. "measured" or "datasheet" */
  const char *const *series;
  int n_series;
  const rep_plot_point *pts;
  int n;
} rep_chart;

/* One <svg class="roofline">; returns how many points had nothing to
 * draw (intensity, or both GFLOP/s, 0 or absent). */
int rep_svg_roofline(FILE *f, const rep_chart *c);

#endif
