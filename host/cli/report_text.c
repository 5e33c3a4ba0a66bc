/* report_text.c - `clattn report` as Markdown (the page's tables), CSV and
 * JSON (every stored bench row with its derived figures). */
#include "cli.h"
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { MAX_FAMILIES = 64, MAX_BASELINES = 8 };

/* ------------------------------------------------------------ Markdown */

/* Markdown's specials in table text: '|' escaped, HTML's specials as
 * entities (renderers pass HTML through). */
static void md_ascii(FILE *f, int c) {
  switch (c) {
  case '|':
    fputs("\\|", f);
    break;
  case '<':
    fputs("&lt;", f);
    break;
  case '>':
    fputs("&gt;", f);
    break;
  case '&':
    fputs("&amp;", f);
    break;
  case '\\':
  case '`':
  case '*':
  case '_':
  case '[':
  case ']':
    fputc('\\', f);
    fputc(c, f);
    break;
  default:
    fputc(c, f);
  }
}

/* Table text: control characters (a newline among them) and bytes that
 * are not UTF-8 replaced, Markdown's specials escaped. */
static void md_text(FILE *f, const char *s) { cli_put_text(f, s, md_ascii, 0); }

static void md_num(FILE *f, double v, const char *fmt) {
  fputs(" ", f);
  if (isfinite(v))
    fprintf(f, fmt, v);
  else
    fputs("n/a", f);
  fputs(" |", f);
}

static void md_cell(FILE *f, const char *s) {
  fputs(" ", f);
  md_text(f, s);
  fputs(" |", f);
}

static void md_device(FILE *f, const rep_data *d, int k,
                      const char *const *fams, int nf) {
  const rep_device *v = &d->devs[k];
  const clattn_profile *p = &v->profile;
  fputs("## ", f);
  md_text(f, v->name);
  fputs("\n\nfingerprint ", f);
  md_text(f, v->fingerprint);
  fputs("\n\n| | measured | datasheet |\n|---|---:|---:|\n", f);
  const struct {
    const char *label;
    double m, s;
  } rows[] = {
      {"read (GB/s)", p->bw_read_gbs, v->sheet.bw_read_gbs},
      {"copy (GB/s)", p->bw_copy_gbs, v->sheet.bw_copy_gbs},
      {"triad (GB/s)", p->bw_triad_gbs, v->sheet.bw_triad_gbs},
      {"FP32 (GFLOP/s)", p->fp32_gflops, v->sheet.fp32_gflops},
      {"FP16 (GFLOP/s)", p->fp16_gflops, v->sheet.fp16_gflops},
      {"launch (us)", p->launch_us, v->sheet.launch_us},
  };
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    fprintf(f, "| %s |", rows[r].label);
    md_num(f, v->has_profile && rows[r].m > 0 ? rows[r].m : NAN, "%.4g");
    if (v->has_sheet)
      md_num(f, rows[r].s > 0 ? rows[r].s : NAN, "%.4g");
    else
      fputs(" no datasheet |", f);
    fputs("\n", f);
  }
  for (int q = 0; q < nf; q++) {
    if (!rep_find_any(d, k, fams[q]))
      continue;
    const char *base[MAX_BASELINES];
    const int nb = rep_baselines(d, k, fams[q], base, MAX_BASELINES);
    fputs("\n### ", f);
    md_text(f, fams[q]);
    fputs("\n\n| shape | time (ms) | GFLOP/s | GB/s | % of roofline | bound "
          "| params | from | predicted (ms) | model error | max error |",
          f);
    for (int b = 0; b < nb; b++) {
      md_cell(f, base[b]);
      fputs(" ratio |", f);
    }
    fputs(" run |\n|---|---:|---:|---:|---:|---|---|---|---:|---:|---:|", f);
    for (int b = 0; b < nb; b++)
      fputs("---:|---:|", f);
    fputs("---|\n", f);
    for (int i = v->first; i < v->first + v->n; i++) {
      const clattn_bench_entry *r = &d->rows[i];
      if (!d->latest[i] || strcmp(r->impl, "clattn") ||
          strcmp(r->family, fams[q]))
        continue;
      rep_figures g;
      rep_derive(r, &g);
      fputs("|", f);
      md_cell(f, r->shape);
      md_num(f, g.median_ms, "%.4g");
      md_num(f, g.gflops, "%.4g");
      md_num(f, g.gbs, "%.4g");
      md_num(f, g.roof_pct, "%.1f");
      md_cell(f, r->bound);
      md_cell(f, r->params);
      md_cell(f, r->params_source);
      md_num(f, g.pred_ms, "%.4g");
      md_num(f, g.model_err, "%+.3f");
      md_num(f, r->max_err, "%.2g");
      for (int b = 0; b < nb; b++) {
        const int j = rep_find_baseline(d, i, base[b]);
        md_num(f, j >= 0 ? d->rows[j].median_s * 1e3 : NAN, "%.4g");
        md_num(f, j >= 0 ? rep_ratio(d->rows[j].median_s, r->median_s) : NAN,
               "%.3g");
      }
      md_cell(f, r->run);
      fputs("\n", f);
    }
  }
  fputs("\n", f);
}

/* The kv-heads speed-ups, as the page's table. */
static void md_kv(FILE *f, const rep_data *d) {
  int header = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < (pass ? d->n_sheets : d->n_devs); k++)
      for (int q = 0; q < d->n_shapes; q++) {
        int rq;
        double meas, pred;
        if (!rep_kv_speedup(d, pass ? -1 : k, pass ? k : -1, q, &rq, &meas,
                            &pred))
          continue;
        if (!header)
          fputs("\n## Fewer key/value heads\n\n| device | family | shape | "
                "against | measured speed-up | predicted speed-up |\n"
                "|---|---|---|---|---:|---:|\n",
                f);
        header = 1;
        fputs("|", f);
        md_cell(f, pass ? d->sheets[k].profile.name : d->devs[k].name);
        md_cell(f, d->shapes[q].family);
        md_cell(f, d->shapes[q].shape);
        md_cell(f, d->shapes[rq].shape);
        md_num(f, meas, "%.3g");
        md_num(f, pred, "%.3g");
        fputs("\n", f);
      }
}

int rep_write_markdown(FILE *f, const rep_data *d) {
  const char *fams[MAX_FAMILIES];
  const int nf = rep_families(d, fams, MAX_FAMILIES);
  fprintf(f, "# clattn device report\n\nGenerated %s by clattn %s from:\n\n",
          d->generated, clattn_version());
  for (int k = 0; k < d->n_dbs; k++) {
    fputs("- ", f);
    md_text(f, d->db_paths[k]);
    fputs("\n", f);
  }
  if (d->n_runs) {
    fputs("\n| run | first row | last row | library | rows |\n"
          "|---|---|---|---|---:|\n",
          f);
    for (int k = 0; k < d->n_runs; k++) {
      fputs("|", f);
      md_cell(f, d->runs[k].run);
      md_cell(f, d->runs[k].first);
      md_cell(f, d->runs[k].last);
      md_cell(f, d->runs[k].library_version);
      fprintf(f, " %d |\n", d->runs[k].n_rows);
    }
  }
  if (!d->n_rows)
    fputs("\nThere are no bench rows in these databases: run `clattn "
          "bench` to measure some.\n",
          f);
  fputs("\n", f);
  for (int k = 0; k < d->n_devs; k++)
    md_device(f, d, k, fams, nf);
  /* a datasheet device alone still gets its column of predictions (the
   * page's datasheet section; Markdown has none) */
  if (d->n_shapes && (d->n_devs + d->n_sheets >= 2 || d->n_sheets > 0)) {
    fputs("## Across devices\n\n| family | shape |", f);
    for (int k = 0; k < d->n_devs; k++) {
      md_cell(f, d->devs[k].name);
      if (k)
        fputs(" speed-up |", f);
    }
    for (int s = 0; s < d->n_sheets; s++) { /* one cell: a value a row */
      fputs(" ", f);
      md_text(f, d->sheets[s].profile.name);
      fputs(" predicted |", f);
    }
    fputs("\n|---|---|", f);
    for (int k = 0; k < d->n_devs; k++)
      fputs(k ? "---:|---:|" : "---:|", f);
    for (int s = 0; s < d->n_sheets; s++)
      fputs("---:|", f);
    fputs("\n", f);
    for (int q = 0; q < d->n_shapes; q++) {
      fputs("|", f);
      md_cell(f, d->shapes[q].family);
      md_cell(f, d->shapes[q].shape);
      for (int k = 0; k < d->n_devs; k++) {
        double ms, speedup;
        rep_cross(d, k, q, &ms, &speedup);
        md_num(f, ms, "%.4g");
        if (k)
          md_num(f, speedup, "%.3g");
      }
      for (int s = 0; s < d->n_sheets; s++) {
        rep_figures g;
        rep_pred_figures(&d->sheets[s].pred[q], &g);
        md_num(f, g.pred_ms, "%.4g");
      }
      fputs("\n", f);
    }
  }
  md_kv(f, d);
  return ferror(f) ? -1 : 0;
}

/* ----------------------------------------------------------------- CSV */

static void csv_ascii(FILE *f, int c) {
  if (c == '"')
    fputc('"', f);
  fputc(c, f);
}

/* A text cell, quoted; one that a spreadsheet would run as a formula
 * (starting with = + - @, a tab or a carriage return: OWASP's CSV
 * injection rule) gets a leading single quote.  Numbers are written
 * unquoted by csv_num and keep their sign. */
static void csv_text(FILE *f, const char *s) {
  fputc('"', f);
  if (s[0] && strchr("=+-@\t\r", s[0]) != NULL)
    fputc('\'', f);
  cli_put_text(f, s, csv_ascii, 0);
  fputc('"', f);
}

static void csv_num(FILE *f, double v) {
  if (isfinite(v))
    fprintf(f, ",%.17g", v);
  else
    fputs(",", f);
}

int rep_write_csv(FILE *f, const rep_data *d) {
  fputs("device,fingerprint,family,shape,impl,median_ms,gflops,gbs,roof_pct,"
        "bound,params,params_source,model_err,max_err,run,updated,latest\n",
        f);
  for (int i = 0; i < d->n_rows; i++) {
    const clattn_bench_entry *r = &d->rows[i];
    rep_figures g;
    rep_derive(r, &g);
    csv_text(f, r->device);
    const char *text[] = {r->fingerprint, r->family, r->shape, r->impl};
    for (int t = 0; t < 4; t++) {
      fputc(',', f);
      csv_text(f, text[t]);
    }
    csv_num(f, g.median_ms);
    csv_num(f, g.gflops);
    csv_num(f, g.gbs);
    csv_num(f, g.roof_pct);
    const char *text2[] = {r->bound, r->params, r->params_source};
    for (int t = 0; t < 3; t++) {
      fputc(',', f);
      csv_text(f, text2[t]);
    }
    csv_num(f, g.model_err);
    csv_num(f, isfinite(r->max_err) ? r->max_err : NAN);
    fputc(',', f);
    csv_text(f, r->run);
    fputc(',', f);
    csv_text(f, r->updated);
    fprintf(f, ",%d\n", d->latest[i] ? 1 : 0);
  }
  return ferror(f) ? -1 : 0;
}

/* ---------------------------------------------------------------- JSON */

static void json_key_str(FILE *f, const char *key, const char *s, int comma) {
  fprintf(f, "%s\"%s\": ", comma ? ", " : "", key);
  cli_json_text(f, s);
}

static void json_key_num(FILE *f, const char *key, double v) {
  if (isfinite(v))
    fprintf(f, ", \"%s\": %.17g", key, v);
  else
    fprintf(f, ", \"%s\": null", key);
}

static void json_profile(FILE *f, const clattn_profile *p) {
  json_key_str(f, "name", p->name, 0);
  json_key_str(f, "vendor", p->vendor, 1);
  json_key_str(f, "arch", p->arch, 1);
  json_key_str(f, "driver", p->driver, 1);
  json_key_num(f, "compute_units", p->compute_units);
  json_key_num(f, "clock_mhz", p->clock_mhz);
  json_key_num(f, "bw_read_gbs", p->bw_read_gbs);
  json_key_num(f, "bw_copy_gbs", p->bw_copy_gbs);
  json_key_num(f, "bw_triad_gbs", p->bw_triad_gbs);
  json_key_num(f, "fp32_gflops", p->fp32_gflops);
  json_key_num(f, "fp16_gflops", p->fp16_gflops);
  json_key_num(f, "launch_us", p->launch_us);
}

int rep_write_json(FILE *f, const rep_data *d) {
  fputs("{\"clattn_report\": 1", f);
  json_key_str(f, "library_version", clattn_version(), 1);
  json_key_str(f, "generated", d->generated, 1);
  fputs(", \"databases\": [", f);
  for (int k = 0; k < d->n_dbs; k++) {
    if (k)
      fputs(", ", f);
    cli_json_text(f, d->db_paths[k]);
  }
  fputs("],\n \"runs\": [", f);
  for (int k = 0; k < d->n_runs; k++) {
    fprintf(f, "%s\n  {", k ? "," : "");
    json_key_str(f, "run", d->runs[k].run, 0);
    json_key_str(f, "first", d->runs[k].first, 1);
    json_key_str(f, "last", d->runs[k].last, 1);
    json_key_str(f, "library_version", d->runs[k].library_version, 1);
    json_key_num(f, "rows", d->runs[k].n_rows);
    fputs("}", f);
  }
  fputs("],\n \"devices\": [", f);
  for (int k = 0; k < d->n_devs; k++) {
    const rep_device *v = &d->devs[k];
    fprintf(f, "%s\n  {", k ? "," : "");
    json_key_str(f, "fingerprint", v->fingerprint, 0);
    json_key_str(f, "name", v->name, 1);
    fputs(", \"profile\": ", f);
    if (v->has_profile) {
      fputs("{", f);
      json_profile(f, &v->profile);
      fputs("}", f);
    } else {
      fputs("null", f);
    }
    fputs(", \"datasheet\": ", f);
    if (v->has_sheet) {
      fputs("{", f);
      json_profile(f, &v->sheet);
      fputs("}", f);
    } else {
      fputs("null", f);
    }
    json_key_num(f, "tuning_rows", v->n_tune);
    fputs("}", f);
  }
  fputs("],\n \"rows\": [", f);
  for (int i = 0; i < d->n_rows; i++) {
    const clattn_bench_entry *r = &d->rows[i];
    rep_figures g;
    rep_derive(r, &g);
    fprintf(f, "%s\n  {", i ? "," : "");
    json_key_str(f, "fingerprint", r->fingerprint, 0);
    json_key_str(f, "device", r->device, 1);
    json_key_str(f, "family", r->family, 1);
    json_key_str(f, "shape", r->shape, 1);
    json_key_str(f, "impl", r->impl, 1);
    json_key_str(f, "params", r->params, 1);
    json_key_str(f, "params_source", r->params_source, 1);
    json_key_str(f, "params_device", r->params_device, 1);
    json_key_str(f, "bound", r->bound, 1);
    json_key_str(f, "run", r->run, 1);
    json_key_str(f, "updated", r->updated, 1);
    json_key_str(f, "library_version", r->library_version, 1);
    fprintf(f, ", \"latest\": %s", d->latest[i] ? "true" : "false");
    json_key_num(f, "median_s", r->median_s);
    json_key_num(f, "spread", r->spread);
    json_key_num(f, "flops", r->flops);
    json_key_num(f, "bytes", r->bytes);
    json_key_num(f, "predicted_s", r->predicted_s);
    json_key_num(f, "roof_s", r->roof_s);
    json_key_num(f, "max_err", r->max_err);
    json_key_num(f, "median_ms", g.median_ms);
    json_key_num(f, "gflops", g.gflops);
    json_key_num(f, "gbs", g.gbs);
    json_key_num(f, "intensity", g.intensity);
    json_key_num(f, "roof_pct", g.roof_pct);
    json_key_num(f, "model_err", g.model_err);
    fputs("}", f);
  }
  fputs("],\n \"datasheets\": [", f);
  for (int s = 0; s < d->n_sheets; s++) {
    fprintf(f, "%s\n  {", s ? "," : "");
    json_profile(f, &d->sheets[s].profile);
    fputs(", \"predicted\": [", f);
    for (int q = 0; q < d->n_shapes; q++) {
      const rep_pred *p = &d->sheets[s].pred[q];
      fprintf(f, "%s{", q ? ", " : "");
      json_key_str(f, "family", d->shapes[q].family, 0);
      json_key_str(f, "shape", d->shapes[q].shape, 1);
      json_key_num(f, "predicted_s", p->ok ? p->t_s : NAN);
      json_key_str(f, "bound", p->ok ? p->bound : "", 1);
      json_key_str(f, "error", p->ok ? "" : p->errmsg, 1);
      fputs("}", f);
    }
    fputs("]}", f);
  }
  fputs("]}\n", f);
  return ferror(f) ? -1 : 0;
}
