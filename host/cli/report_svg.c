/* report_svg.c - the roofline chart of `clattn report`: inline SVG,
 * log-log, decades from the data and the roofs, every coordinate finite. */
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum {
  W = 880,
  PLOT_H = 420,
  LEFT = 78,
  RIGHT = 24,
  TOP = 16,
  LEGEND_ROW = 20
};

static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c",
                                      "#9467bd", "#ff7f0e", "#17becf",
                                      "#8c564b", "#e377c2"};
enum { N_COLOURS = sizeof colours / sizeof colours[0], N_MARKERS = 5 };

static int usable(double x) { return isfinite(x) && x > 0; }

typedef struct axes {
  double lx0, lx1, ly0, ly1; /* log10 of the ranges */
  double px0, px1, py0, py1; /* pixels: left, right, bottom, top */
} axes;

static double sx(const axes *a, double x) {
  return a->px0 + (log10(x) - a->lx0) / (a->lx1 - a->lx0) * (a->px1 - a->px0);
}
static double sy(const axes *a, double y) {
  return a->py0 - (log10(y) - a->ly0) / (a->ly1 - a->ly0) * (a->py0 - a->py1);
}

static void widen(double *lo, double *hi, double v) {
  if (!usable(v))
    return;
  if (v < *lo)
    *lo = v;
  if (v > *hi)
    *hi = v;
}

/* Decimals for a roof's value: about four significant digits. */
static int decimals(double v) {
  return v >= 1000 ? 0 : v >= 100 ? 1 : v >= 10 ? 2 : 3;
}

/* A decade's label: 0.001 .. 1000000 written out, else 1e-5. */
static void decade_label(char *buf, size_t cap, int k) {
  if (k >= 0 && k <= 6)
    snprintf(buf, cap, "%.0f", pow(10, k));
  else if (k < 0 && k >= -3)
    snprintf(buf, cap, "%.*f", -k, pow(10, k));
  else
    snprintf(buf, cap, "1e%d", k);
}

/* Marker `shape` at (x, y): filled (measured) or hollow (predicted). */
static void marker(FILE *f, int series, double x, double y, int filled) {
  const char *c = colours[series % N_COLOURS];
  const char *fill = filled ? c : "#fff";
  const double r = 5;
  switch (series % N_MARKERS) {
  case 0:
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"", x, y, r);
    break;
  case 1:
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"",
            x - r, y - r, 2 * r, 2 * r);
    break;
  case 2:
    fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"", x,
            y - r - 1, x - r - 1, y + r, x + r + 1, y + r);
    break;
  case 3:
    fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\"", x,
            y - r - 1, x + r + 1, y, x, y + r + 1, x - r - 1, y);
    break;
  default:
    fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"", x,
            y + r + 1, x - r - 1, y - r, x + r + 1, y - r);
    break;
  }
  fprintf(f, " fill=\"%s\" stroke=\"%s\" stroke-width=\"1.5\"", fill, c);
}

static void axes_for(const rep_chart *c, axes *a) {
  double x0 = INFINITY, x1 = 0, y0 = INFINITY, y1 = 0;
  for (int i = 0; i < c->n; i++) {
    const rep_plot_point *p = &c->pts[i];
    if (!usable(p->intensity))
      continue;
    if (usable(p->measured) || usable(p->predicted))
      widen(&x0, &x1, p->intensity);
    if (usable(p->measured))
      widen(&y0, &y1, p->measured);
    if (usable(p->predicted))
      widen(&y0, &y1, p->predicted);
  }
  if (usable(c->bw_gbs) && usable(c->peak_gflops)) {
    widen(&x0, &x1, c->peak_gflops / c->bw_gbs); /* the ridge */
    widen(&y0, &y1, c->peak_gflops);
  } else if (usable(c->peak_gflops)) {
    widen(&y0, &y1, c->peak_gflops);
  }
  if (!(x1 > 0)) {
    x0 = 0.1;
    x1 = 100;
  }
  if (!(y1 > 0)) {
    y0 = 1;
    y1 = 1000;
  }
  if (usable(c->bw_gbs) && c->bw_gbs * x0 / 2 < y0)
    y0 = fmax(c->bw_gbs * x0 / 2, y0 / 100); /* show the slope's start */
  a->lx0 = floor(log10(x0 / 1.5));
  a->lx1 = ceil(log10(x1 * 1.5));
  a->ly0 = floor(log10(y0 / 1.5));
  a->ly1 = ceil(log10(y1 * 1.5));
  a->px0 = LEFT;
  a->px1 = W - RIGHT;
  a->py1 = TOP;
  a->py0 = TOP + PLOT_H;
}

static void draw_axes(FILE *f, const axes *a) {
  char lab[32];
  fprintf(f, "<g class=\"axes\" font-size=\"12\" fill=\"#333\">\n");
  for (int k = (int)a->lx0; k <= (int)a->lx1; k++) {
    const double x = sx(a, pow(10, k));
    decade_label(lab, sizeof lab, k);
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.1f\" "
            "text-anchor=\"middle\">%s</text>\n",
            x, a->py1, x, a->py0, x, a->py0 + 16, lab);
  }
  for (int k = (int)a->ly0; k <= (int)a->ly1; k++) {
    const double y = sy(a, pow(10, k));
    decade_label(lab, sizeof lab, k);
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.1f\" "
            "text-anchor=\"end\">%s</text>\n",
            a->px0, y, a->px1, y, a->px0 - 6, y + 4, lab);
  }
  fprintf(f,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
          "fill=\"none\" stroke=\"#444\"/>\n",
          a->px0, a->py1, a->px1 - a->px0, a->py0 - a->py1);
  fprintf(f,
          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
          "font-size=\"13\">arithmetic intensity (FLOP/byte, DRAM bytes "
          "of the model)</text>\n",
          (a->px0 + a->px1) / 2, a->py0 + 36);
  fprintf(f,
          "<text transform=\"translate(18,%.1f) rotate(-90)\" "
          "text-anchor=\"middle\" font-size=\"13\">performance "
          "(GFLOP/s)</text>\n</g>\n",
          (a->py0 + a->py1) / 2);
}

/* The roofs: bandwidth (slope 1) up to the ridge, then the flat peak. */
static void draw_roofs(FILE *f, const rep_chart *c, const axes *a) {
  const double xlo = pow(10, a->lx0), xhi = pow(10, a->lx1);
  const int bw = usable(c->bw_gbs), peak = usable(c->peak_gflops);
  const char *note = c->roof_note ? c->roof_note : "";
  fprintf(f,
          "<g class=\"roofs\" clip-path=\"url(#%s-clip)\" "
          "font-size=\"12\">\n",
          c->id);
  if (bw) {
    const double xe = peak ? fmin(c->peak_gflops / c->bw_gbs, xhi) : xhi;
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#000\" stroke-width=\"2\"/>\n",
            sx(a, xlo), sy(a, c->bw_gbs * xlo), sx(a, xe),
            sy(a, c->bw_gbs * xe));
    /* the label along the slope, at a third of the way to its end */
    const double xm = pow(10, a->lx0 + (log10(xe) - a->lx0) / 3);
    const double ang = -atan2((a->py0 - a->py1) / (a->ly1 - a->ly0),
                              (a->px1 - a->px0) / (a->lx1 - a->lx0)) *
                       180 / 3.14159265358979;
    fprintf(f,
            "<text transform=\"translate(%.1f,%.1f) rotate(%.1f)\">"
            "memory %.*f GB/s (%s read)</text>\n",
            sx(a, xm), sy(a, c->bw_gbs * xm) - 6, ang, decimals(c->bw_gbs),
            c->bw_gbs, note);
  }
  if (peak) {
    const double xs = bw ? fmax(c->peak_gflops / c->bw_gbs, xlo) : xlo;
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#000\" stroke-width=\"2\"/>\n",
            sx(a, xs), sy(a, c->peak_gflops), sx(a, xhi),
            sy(a, c->peak_gflops));
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">FP32 peak "
            "%.*f GFLOP/s (%s)</text>\n",
            a->px1 - 4, sy(a, c->peak_gflops) - 6, decimals(c->peak_gflops),
            c->peak_gflops, note);
  }
  fprintf(f, "</g>\n");
}

/* Does the chart draw a point of series s (its legend lists it)? */
static int series_present(const rep_chart *c, int s) {
  for (int i = 0; i < c->n; i++)
    if (c->pts[i].series == s && usable(c->pts[i].intensity) &&
        (usable(c->pts[i].measured) || usable(c->pts[i].predicted)))
      return 1;
  return 0;
}

int rep_svg_roofline(FILE *f, const rep_chart *c) {
  const int per_row = 4;
  int n_present = 0;
  for (int s = 0; s < c->n_series; s++)
    n_present += series_present(c, s);
  const int legend_rows = (n_present + per_row - 1) / per_row + 1;
  const int h = TOP + PLOT_H + 50 + legend_rows * LEGEND_ROW;
  axes a;
  int skipped = 0;
  axes_for(c, &a);
  fprintf(f,
          "<svg class=\"roofline\" xmlns=\"http://www.w3.org/2000/svg\" "
          "viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
          "font-family=\"sans-serif\">\n",
          W, h, W, h);
  fprintf(f, "<title>Roofline: GFLOP/s against FLOP/byte, log-log</title>\n");
  fprintf(f,
          "<defs><clipPath id=\"%s-clip\"><rect x=\"%.1f\" y=\"%.1f\" "
          "width=\"%.1f\" height=\"%.1f\"/></clipPath></defs>\n",
          c->id, a.px0, a.py1, a.px1 - a.px0, a.py0 - a.py1);
  draw_axes(f, &a);
  draw_roofs(f, c, &a);
  fprintf(f, "<g class=\"points\">\n");
  for (int i = 0; i < c->n; i++) {
    const rep_plot_point *p = &c->pts[i];
    const int x_ok = usable(p->intensity);
    const int m = x_ok && usable(p->measured), q = x_ok && usable(p->predicted);
    if (!m && !q) {
      skipped++;
      continue;
    }
    const double x = sx(&a, p->intensity);
    fprintf(f, "<g class=\"kernel\">");
    if (m && q)
      fprintf(f,
              "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
              "stroke=\"%s\" stroke-dasharray=\"3,3\"/>",
              x, sy(&a, p->measured), x, sy(&a, p->predicted),
              colours[p->series % N_COLOURS]);
    if (q) {
      marker(f, p->series, x, sy(&a, p->predicted), 0);
      fputs("><title>", f);
      rep_html_text(f, p->title);
      fputs(" (predicted point)</title></", f);
      fputs(p->series % N_MARKERS == 0   ? "circle>"
            : p->series % N_MARKERS == 1 ? "rect>"
                                         : "polygon>",
            f);
    }
    if (m) {
      marker(f, p->series, x, sy(&a, p->measured), 1);
      fputs("><title>", f);
      rep_html_text(f, p->title);
      fputs(" (measured point)</title></", f);
      fputs(p->series % N_MARKERS == 0   ? "circle>"
            : p->series % N_MARKERS == 1 ? "rect>"
                                         : "polygon>",
            f);
    }
    fputs("</g>\n", f);
  }
  fprintf(f, "</g>\n<g class=\"legend\" font-size=\"12\">\n");
  const double ly = a.py0 + 56;
  int shown = 0, any_measured = 0;
  for (int i = 0; i < c->n; i++)
    any_measured |= usable(c->pts[i].measured);
  for (int s = 0; s < c->n_series; s++) {
    if (!series_present(c, s))
      continue;
    const double x = LEFT + (shown % per_row) * 190.0,
                 y = ly + (shown / per_row) * LEGEND_ROW;
    shown++;
    marker(f, s, x, y - 4, 1);
    fputs("/>", f);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x + 10, y);
    rep_html_text(f, c->series[s]);
    fputs("</text>\n", f);
  }
  fprintf(f, "<text x=\"%d\" y=\"%.1f\">%s</text>\n", LEFT,
          ly + ((shown + per_row - 1) / per_row) * LEGEND_ROW,
          any_measured ? "filled: measured median; hollow: the model's "
                         "prediction; dashed: the same call"
                       : "hollow: the model's prediction (no measurement)");
  fprintf(f, "</g>\n</svg>\n");
  return skipped;
}
