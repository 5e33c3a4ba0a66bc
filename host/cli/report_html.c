/* report_html.c - `clattn report`'s page: one self-contained HTML file
 * (inline CSS and SVG, no script, no network). */
#include "cli.h"
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_FAMILIES = 64, MAX_BASELINES = 8 };

static void html_ascii(FILE *f, int c) {
  switch (c) {
  case '&':
    fputs("&amp;", f);
    break;
  case '<':
    fputs("&lt;", f);
    break;
  case '>':
    fputs("&gt;", f);
    break;
  case '"':
    fputs("&quot;", f);
    break;
  case '\'':
    fputs("&#39;", f);
    break;
  default:
    fputc(c, f);
  }
}

void rep_html_text(FILE *f, const char *s) {
  cli_put_text(f, s, html_ascii, 0);
}

/* A number cell: data-v the full value, the text `digits` significant
 * (pct: a percentage with one decimal); "n/a" when not finite. */
static void num(FILE *f, const char *key, double v, const char *fmt) {
  fputs("<td data-k=\"", f);
  rep_html_text(f, key);
  if (!isfinite(v)) {
    fputs("\" class=\"na\">n/a</td>", f);
    return;
  }
  fprintf(f, "\" data-v=\"%.17g\">", v);
  /* %g would write large figures as 1.2e+04 */
  if (!strcmp(fmt, "%.4g") && fabs(v) >= 1e4)
    fmt = "%.0f";
  fprintf(f, fmt, v);
  fputs("</td>", f);
}

static void text_cell(FILE *f, const char *s) {
  fputs("<td class=\"t\">", f);
  rep_html_text(f, s && *s ? s : "");
  fputs("</td>", f);
}

static void shape_cell(FILE *f, const char *s) {
  fputs("<td class=\"t shape\">", f);
  rep_html_text(f, s);
  fputs("</td>", f);
}

static const char css[] =
    "body{font-family:sans-serif;max-width:1100px;margin:1em auto;padding:0 "
    "1em;color:#222}\n"
    "table{border-collapse:collapse;margin:.5em 0 1.2em;font-size:13px}\n"
    "th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}\n"
    "th{background:#f2f2f2}td.t,th.t{text-align:left}\n"
    "td:first-child{text-align:left}td.na{color:#999}\n"
    "div.wide{overflow-x:auto;max-width:100%}td.shape{min-width:16em}\n"
    "td[data-k]{white-space:nowrap}\n"
    "section.device{border-top:3px solid #888;margin-top:2em}\n"
    "svg.roofline{max-width:100%;height:auto;display:block}\n"
    ".note{color:#555;font-size:13px}\n";

static void profile_row(FILE *f, const char *label, const char *key,
                        const rep_device *v, double m, double s,
                        const char *fmt) {
  char k[64];
  fprintf(f, "<tr><td>%s</td>", label);
  snprintf(k, sizeof k, "measured.%s", key);
  if (v->has_profile)
    num(f, k, m, fmt);
  else
    fputs("<td class=\"na\">not probed</td>", f);
  snprintf(k, sizeof k, "datasheet.%s", key);
  if (v->has_sheet)
    num(f, k, s, fmt);
  else
    fputs("<td class=\"na\">no datasheet</td>", f);
  fputs("</tr>\n", f);
}

static double val(double x) { return x > 0 ? x : NAN; }

static void profile_table(FILE *f, const rep_device *v) {
  const clattn_profile *p = &v->profile, *s = &v->sheet;
  fputs("<table class=\"profile\"><tr><th class=\"t\"></th><th>measured "
        "(clattn probe)</th><th>datasheet</th></tr>\n",
        f);
  fputs("<tr><td>name</td>", f);
  text_cell(f, v->name);
  text_cell(f, v->has_sheet ? s->name : "no datasheet");
  fputs("</tr>\n<tr><td>vendor / arch</td>", f);
  char buf[160];
  snprintf(buf, sizeof buf, "%s%s%s", v->vendor, v->arch[0] ? " / " : "",
           v->arch);
  text_cell(f, buf);
  snprintf(buf, sizeof buf, "%s%s%s", s->vendor, s->arch[0] ? " / " : "",
           s->arch);
  text_cell(f, v->has_sheet ? buf : "");
  fputs("</tr>\n<tr><td>driver</td>", f);
  text_cell(f, v->driver);
  text_cell(f, "");
  fputs("</tr>\n", f);
  profile_row(f, "compute units", "compute_units", v, val(p->compute_units),
              val(s->compute_units), "%.0f");
  profile_row(f, "clock (MHz)", "clock_mhz", v, val(p->clock_mhz),
              val(s->clock_mhz), "%.0f");
  profile_row(f, "read (GB/s)", "bw_read_gbs", v, val(p->bw_read_gbs),
              val(s->bw_read_gbs), "%.4g");
  profile_row(f, "copy (GB/s)", "bw_copy_gbs", v, val(p->bw_copy_gbs),
              val(s->bw_copy_gbs), "%.4g");
  profile_row(f, "triad (GB/s)", "bw_triad_gbs", v, val(p->bw_triad_gbs),
              val(s->bw_triad_gbs), "%.4g");
  profile_row(f, "FP32 (GFLOP/s)", "fp32_gflops", v, val(p->fp32_gflops),
              val(s->fp32_gflops), "%.4g");
  profile_row(f, "FP16 (GFLOP/s)", "fp16_gflops", v, val(p->fp16_gflops),
              val(s->fp16_gflops), "%.4g");
  profile_row(f, "launch (us)", "launch_us", v, val(p->launch_us),
              val(s->launch_us), "%.4g");
  fputs("</table>\n", f);
}

static int series_of(const char *const *fams, int n, const char *family) {
  for (int k = 0; k < n; k++)
    if (!strcmp(fams[k], family))
      return k;
  return 0;
}

static void chart_note(FILE *f, int skipped, int bw, int peak) {
  if (skipped)
    fprintf(f,
            "<p class=\"note\">%d kernel%s not plotted: FLOPs, bytes or "
            "times zero or absent in the rows.</p>\n",
            skipped, skipped == 1 ? "" : "s");
  if (!bw || !peak)
    fprintf(f,
            "<p class=\"note\">No %s roof: the profile has no such "
            "ceiling.</p>\n",
            !bw && !peak ? "memory or compute"
            : !bw        ? "memory"
                         : "compute");
}

static int device_chart(FILE *f, const rep_data *d, int k,
                        const char *const *fams, int nf) {
  const rep_device *v = &d->devs[k];
  rep_plot_point *pts = calloc((size_t)v->n + 1, sizeof *pts);
  int n = 0;
  if (!pts)
    return -1;
  for (int i = v->first; i < v->first + v->n; i++) {
    const clattn_bench_entry *r = &d->rows[i];
    if (!d->latest[i] || strcmp(r->impl, "clattn"))
      continue;
    rep_figures g;
    rep_derive(r, &g);
    rep_plot_point *p = &pts[n++];
    p->intensity = g.intensity;
    p->measured = g.gflops;
    p->predicted = g.pred_gflops;
    p->series = series_of(fams, nf, r->family);
    snprintf(p->title, sizeof p->title,
             "%s %s: %.4g ms, %.4g GFLOP/s at %.4g FLOP/byte; predicted "
             "%.4g ms, %.4g GFLOP/s",
             r->family, r->shape, g.median_ms, g.gflops, g.intensity, g.pred_ms,
             g.pred_gflops);
  }
  char id[64];
  snprintf(id, sizeof id, "roof-dev%d", k);
  const double bw = v->has_profile ? v->profile.bw_read_gbs : 0;
  const double peak = v->has_profile ? v->profile.fp32_gflops : 0;
  rep_chart c = {id, bw, peak, "measured", fams, nf, pts, n};
  int skipped = rep_svg_roofline(f, &c);
  chart_note(f, skipped, bw > 0, peak > 0);
  free(pts);
  return 0;
}

static void family_table(FILE *f, const rep_data *d, int k,
                         const char *family) {
  const rep_device *v = &d->devs[k];
  const char *base[MAX_BASELINES];
  const int nb = rep_baselines(d, k, family, base, MAX_BASELINES);
  fputs("<h4>", f);
  rep_html_text(f, family);
  fputs("</h4>\n<div class=\"wide\"><table class=\"family\"><tr><th "
        "class=\"t\">shape</th>"
        "<th>time (ms)</th><th>GFLOP/s</th><th>GB/s</th><th>% of roofline"
        "</th><th>bound</th><th class=\"t\">params</th><th class=\"t\">"
        "from</th><th>predicted (ms)</th><th>model error</th><th>max error"
        "</th>",
        f);
  for (int b = 0; b < nb; b++) {
    fputs("<th>", f);
    rep_html_text(f, base[b]);
    fputs(" (ms)</th><th>", f);
    rep_html_text(f, base[b]);
    fputs(" / clattn</th>", f);
  }
  fputs("<th class=\"t\">run</th></tr>\n", f);
  for (int i = v->first; i < v->first + v->n; i++) {
    const clattn_bench_entry *r = &d->rows[i];
    if (!d->latest[i] || strcmp(r->impl, "clattn") || strcmp(r->family, family))
      continue;
    rep_figures g;
    rep_derive(r, &g);
    fputs("<tr data-family=\"", f);
    rep_html_text(f, r->family);
    fputs("\" data-shape=\"", f);
    rep_html_text(f, r->shape);
    fputs("\">", f);
    shape_cell(f, r->shape);
    num(f, "median_ms", g.median_ms, "%.4g");
    num(f, "gflops", g.gflops, "%.4g");
    num(f, "gbs", g.gbs, "%.4g");
    num(f, "roof_pct", g.roof_pct, "%.1f");
    text_cell(f, r->bound);
    fputs("<td class=\"t\">", f);
    rep_html_text(f, r->params);
    fputs("</td><td class=\"t\">", f);
    rep_html_text(f, r->params_source);
    if (r->params_device[0]) {
      fputs(" (", f);
      rep_html_text(f, r->params_device);
      fputs(")", f);
    }
    fputs("</td>", f);
    num(f, "pred_ms", g.pred_ms, "%.4g");
    num(f, "model_err", g.model_err, "%+.3f");
    num(f, "max_err", r->max_err, "%.2g");
    for (int b = 0; b < nb; b++) {
      const int j = rep_find_baseline(d, i, base[b]);
      const double t = j >= 0 ? d->rows[j].median_s * 1e3 : NAN;
      const double ratio =
          j >= 0 ? rep_ratio(d->rows[j].median_s, r->median_s) : NAN;
      char k[64];
      snprintf(k, sizeof k, "base_ms.%s", base[b]);
      num(f, k, t, "%.4g");
      snprintf(k, sizeof k, "base_ratio.%s", base[b]);
      num(f, k, ratio, "%.3g");
    }
    fputs("<td class=\"t\">", f);
    rep_html_text(f, r->run);
    fputs("</td></tr>\n", f);
  }
  fputs("</table></div>\n", f);
}

static int device_section(FILE *f, const rep_data *d, int k,
                          const char *const *fams, int nf) {
  const rep_device *v = &d->devs[k];
  fputs("<section class=\"device\" data-kind=\"measured\" "
        "data-fingerprint=\"",
        f);
  rep_html_text(f, v->fingerprint);
  fprintf(f, "\" id=\"dev%d\">\n<h2>", k);
  rep_html_text(f, v->name[0] ? v->name : "(unnamed device)");
  fputs("</h2>\n<p class=\"note\">fingerprint ", f);
  rep_html_text(f, v->fingerprint);
  fprintf(f, "; %d tuning row%s in the databases (%d ok)</p>\n", v->n_tune,
          v->n_tune == 1 ? "" : "s", v->n_tune_ok);
  profile_table(f, v);
  if (v->has_profile && v->profile.note[0]) {
    fputs("<p class=\"note\">probe: ", f);
    rep_html_text(f, v->profile.note);
    fputs("</p>\n", f);
  }
  fputs("<h3>Roofline</h3>\n", f);
  if (device_chart(f, d, k, fams, nf))
    return -1;
  fputs("<h3>Kernels</h3>\n", f);
  int any = 0;
  for (int q = 0; q < nf; q++)
    if (rep_find_any(d, k, fams[q])) {
      family_table(f, d, k, fams[q]);
      any = 1;
    }
  if (!any)
    fputs("<p class=\"note\">No bench rows for this device (run "
          "<code>clattn bench</code>).</p>\n",
          f);
  fputs("</section>\n", f);
  return 0;
}

static void cross_table(FILE *f, const rep_data *d) {
  fputs("<h2>Across devices</h2>\n<p class=\"note\">Times of the newest "
        "clattn row of each device; speed-up = the first device's time / "
        "this device's time; datasheet columns are the model's "
        "predictions.</p>\n<div class=\"wide\"><table class=\"cross\"><tr><th "
        "class=\"t\">"
        "family</th><th class=\"t\">shape</th>",
        f);
  for (int k = 0; k < d->n_devs; k++) {
    fputs("<th>", f);
    rep_html_text(f, d->devs[k].name);
    fputs(" (ms)</th>", f);
    if (k)
      fputs("<th>speed-up</th>", f);
  }
  for (int s = 0; s < d->n_sheets; s++) {
    fputs("<th>", f);
    rep_html_text(f, d->sheets[s].profile.name);
    fputs(" predicted (ms)</th>", f);
  }
  fputs("</tr>\n", f);
  for (int q = 0; q < d->n_shapes; q++) {
    const rep_shape *sh = &d->shapes[q];
    fputs("<tr data-family=\"", f);
    rep_html_text(f, sh->family);
    fputs("\" data-shape=\"", f);
    rep_html_text(f, sh->shape);
    fputs("\">", f);
    text_cell(f, sh->family);
    shape_cell(f, sh->shape);
    for (int k = 0; k < d->n_devs; k++) {
      double ms, speedup;
      rep_cross(d, k, q, &ms, &speedup);
      num(f, "median_ms", ms, "%.4g");
      if (k)
        num(f, "speedup_first", speedup, "%.3g");
    }
    for (int s = 0; s < d->n_sheets; s++) {
      rep_figures g;
      rep_pred_figures(&d->sheets[s].pred[q], &g);
      num(f, "pred_ms", g.pred_ms, "%.4g");
    }
    fputs("</tr>\n", f);
  }
  fputs("</table></div>\n", f);
}

/* Speed-ups of shapes that differ only in kv-heads against kv-heads ==
 * heads, measured and predicted, per device. */
static void kv_table(FILE *f, const rep_data *d) {
  int header = 0;
  for (int pass = 0; pass < 2; pass++) {
    const int n = pass ? d->n_sheets : d->n_devs;
    for (int k = 0; k < n; k++)
      for (int q = 0; q < d->n_shapes; q++) {
        const rep_shape *sh = &d->shapes[q];
        int rq;
        double meas, pred;
        if (!rep_kv_speedup(d, pass ? -1 : k, pass ? k : -1, q, &rq, &meas,
                            &pred))
          continue;
        if (!header) {
          fputs("<h2>Fewer key/value heads</h2>\n<p class=\"note\">Calls of "
                "one family whose shapes differ only in kv-heads: speed-up "
                "= time with kv-heads = heads / time with fewer "
                "(measured: medians; predicted: the model).</p>\n<table "
                "class=\"kv-speedups\"><tr><th class=\"t\">device</th><th "
                "class=\"t\">family</th><th class=\"t\">shape</th><th "
                "class=\"t\">against</th><th>measured speed-up</th><th>"
                "predicted speed-up</th></tr>\n",
                f);
          header = 1;
        }
        fputs("<tr data-family=\"", f);
        rep_html_text(f, sh->family);
        fputs("\" data-shape=\"", f);
        rep_html_text(f, sh->shape);
        fputs("\">", f);
        text_cell(f, pass ? d->sheets[k].profile.name : d->devs[k].name);
        text_cell(f, sh->family);
        shape_cell(f, sh->shape);
        shape_cell(f, d->shapes[rq].shape);
        num(f, "kv_speedup", meas, "%.3g");
        num(f, "kv_speedup_pred", pred, "%.3g");
        fputs("</tr>\n", f);
      }
  }
  if (header)
    fputs("</table>\n", f);
}

static int sheet_section(FILE *f, const rep_data *d, int s,
                         const char *const *fams, int nf) {
  const rep_sheet *sh = &d->sheets[s];
  const clattn_profile *p = &sh->profile;
  fprintf(f,
          "<section class=\"device\" data-kind=\"datasheet\" "
          "data-fingerprint=\"\" id=\"sheet%d\">\n<h2>",
          s);
  rep_html_text(f, p->name);
  fputs(" <small>(datasheet, predicted only)</small></h2>\n<p class=\"note"
        "\">",
        f);
  rep_html_text(f, p->vendor);
  fputs(" ", f);
  rep_html_text(f, p->arch);
  fprintf(f,
          "; %u compute units, %u MHz; %.0f GB/s, FP32 %.0f GFLOP/s, "
          "FP16 %.0f GFLOP/s. Sources: ",
          p->compute_units, p->clock_mhz, p->bw_read_gbs, p->fp32_gflops,
          p->fp16_gflops);
  rep_html_text(f, p->note);
  fputs("</p>\n", f);
  rep_plot_point *pts = calloc((size_t)d->n_shapes + 1, sizeof *pts);
  int n = 0;
  if (!pts)
    return -1;
  for (int q = 0; q < d->n_shapes; q++) {
    rep_figures g;
    rep_pred_figures(&sh->pred[q], &g);
    rep_plot_point *pt = &pts[n++];
    pt->intensity = g.intensity;
    pt->measured = NAN;
    pt->predicted = g.pred_gflops;
    pt->series = series_of(fams, nf, d->shapes[q].family);
    snprintf(pt->title, sizeof pt->title,
             "%s %s: predicted %.4g ms, %.4g "
             "GFLOP/s at %.4g FLOP/byte",
             d->shapes[q].family, d->shapes[q].shape, g.pred_ms, g.pred_gflops,
             g.intensity);
  }
  char id[64];
  snprintf(id, sizeof id, "roof-sheet%d", s);
  rep_chart c = {id, p->bw_read_gbs, p->fp32_gflops, "datasheet", fams, nf, pts,
                 n};
  chart_note(f, rep_svg_roofline(f, &c), p->bw_read_gbs > 0,
             p->fp32_gflops > 0);
  free(pts);
  fputs("<table class=\"predicted\"><tr><th class=\"t\">family</th><th "
        "class=\"t\">shape</th><th>predicted (ms)</th><th>predicted "
        "GFLOP/s</th><th>bound</th></tr>\n",
        f);
  for (int q = 0; q < d->n_shapes; q++) {
    rep_figures g;
    rep_pred_figures(&sh->pred[q], &g);
    fputs("<tr data-family=\"", f);
    rep_html_text(f, d->shapes[q].family);
    fputs("\" data-shape=\"", f);
    rep_html_text(f, d->shapes[q].shape);
    fputs("\">", f);
    text_cell(f, d->shapes[q].family);
    shape_cell(f, d->shapes[q].shape);
    num(f, "pred_ms", g.pred_ms, "%.4g");
    num(f, "pred_gflops", g.pred_gflops, "%.4g");
    text_cell(f, sh->pred[q].ok ? sh->pred[q].bound : sh->pred[q].errmsg);
    fputs("</tr>\n", f);
  }
  fputs("</table>\n</section>\n", f);
  return 0;
}

int rep_write_html(FILE *f, const rep_data *d) {
  const char *fams[MAX_FAMILIES];
  const int nf = rep_families(d, fams, MAX_FAMILIES);
  fprintf(f,
          "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8"
          "\">\n<meta name=\"viewport\" content=\"width=device-width\">\n"
          "<title>clattn device report</title>\n<style>\n%s</style></head>"
          "\n<body>\n<h1>clattn device report</h1>\n<p class=\"meta\">"
          "Generated <time>%s</time> by clattn %s from %d database%s:</p>"
          "\n<ul class=\"dbs\">\n",
          css, d->generated, clattn_version(), d->n_dbs,
          d->n_dbs == 1 ? "" : "s");
  for (int k = 0; k < d->n_dbs; k++) {
    fputs("<li>", f);
    rep_html_text(f, d->db_paths[k]);
    fputs("</li>\n", f);
  }
  fputs("</ul>\n", f);
  if (d->n_runs) {
    fputs("<table class=\"runs\"><tr><th class=\"t\">run</th><th class=\"t"
          "\">first row</th><th class=\"t\">last row</th><th class=\"t\">"
          "library</th><th>rows</th></tr>"
          "\n",
          f);
    for (int k = 0; k < d->n_runs; k++) {
      fputs("<tr>", f);
      text_cell(f, d->runs[k].run);
      text_cell(f, d->runs[k].first);
      text_cell(f, d->runs[k].last);
      text_cell(f, d->runs[k].library_version);
      num(f, "rows", d->runs[k].n_rows, "%.0f");
      fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
  }
  if (!d->n_rows)
    fputs("<p class=\"empty\">There are no bench rows in these databases: "
          "run <code>clattn bench</code> to measure some.</p>\n",
          f);
  fputs("<p class=\"note\">Each table shows, per device, family and shape, "
        "the newest clattn row and the baselines of the same run; "
        "docs/REPORT.md says how each figure is derived.</p>\n",
        f);
  for (int k = 0; k < d->n_devs; k++)
    if (device_section(f, d, k, fams, nf))
      return -1;
  if (d->n_shapes && d->n_devs + d->n_sheets >= 2)
    cross_table(f, d);
  kv_table(f, d);
  for (int s = 0; s < d->n_sheets; s++)
    if (sheet_section(f, d, s, fams, nf))
      return -1;
  fputs("</body></html>\n", f);
  return ferror(f) ? -1 : 0;
}
