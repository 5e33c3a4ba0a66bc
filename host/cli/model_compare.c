/* model_compare.c - what `clattn model optimised|efficient|super` and
 * `clattn model switchhead` share: a variant layer's prediction beside a
 * dense multi-head one, as ratios variant/dense of the parameters, the
 * FLOPs, the bytes and the predicted time. */
#include "cli.h"
#include "model.h"

#include <stdio.h>

/* Ratio a/b, or -1 (printed as "-" or null) when b is 0 (no ceilings:
 * times 0). */
static double ratio(double a, double b) { return b > 0 ? a / b : -1; }

void cli_compare_ratios(const cli_layer_side *v, const cli_layer_side *m,
                        double r[CLI_COMPARE_RATIOS]) {
  const clattn_cost *a = &v->pr.total, *b = &m->pr.total;
  r[0] = ratio((double)v->params, (double)m->params);
  r[1] = ratio(a->flops, b->flops);
  r[2] = ratio(a->bytes_compulsory, b->bytes_compulsory);
  r[3] = ratio(a->bytes_dram, b->bytes_dram);
  r[4] = ratio(a->t_pred, b->t_pred);
}

static void print_ratio(double r, int width) {
  if (r < 0)
    printf(" %*s", width, "-");
  else
    printf(" %*.4g", width, r);
}

static void print_side_row(const cli_layer_side *s, double flops_unit) {
  const clattn_cost *c = &s->pr.total;
  printf("  %-16s %12lld %10.4g %10.3f %10.3f %11.1f  %s\n", s->name, s->params,
         c->flops * flops_unit, c->bytes_compulsory / 1048576.0,
         c->bytes_dram / 1048576.0, c->t_pred * 1e6, cli_bound_name(c->bound));
}

void cli_print_compare_rows(const cli_layer_side *v, const cli_layer_side *m,
                            const char *label, const char *flops_name,
                            double flops_unit) {
  double r[CLI_COMPARE_RATIOS];
  cli_compare_ratios(v, m, r);
  printf("  %-16s %12s %10s %10s %10s %11s  %s\n", "layer", "params",
         flops_name, "MiB comp", "MiB DRAM", "t_pred us", "bound");
  print_side_row(v, flops_unit);
  print_side_row(m, flops_unit);
  printf("  %-16s", label);
  print_ratio(r[0], 12);
  for (int i = 1; i < 4; i++)
    print_ratio(r[i], 10);
  print_ratio(r[4], 11);
  printf("\n");
}

void cli_print_ratio_json(const char *key, double r, const char *sep) {
  if (r < 0)
    printf("\"%s\": null%s", key, sep);
  else
    printf("\"%s\": %.6g%s", key, r, sep);
}

int cli_model_fail(clattn_status st, const clattn_prediction *pr) {
  cli_err("model: %s: %s", clattn_status_str(st), pr->errmsg);
  return st == CLATTN_ERR_SHAPE || st == CLATTN_ERR_INVALID_ARG ? CLI_USAGE
                                                                : CLI_FAIL;
}
