/* model_sh.c - `clattn model switchhead`: a SwitchHead layer call
 * predicted per kernel by clattn_model_switchhead_layer, beside its
 * parameter-matched dense MHA layer (clattn_model_layer) with the ratios;
 * and with --paper the SwitchHead paper's per-layer MACs and training
 * memory (clattn_model_switchhead_paper, its paper/common.py accounting)
 * for every configuration of spec 10, beside the figures its Tables 1, 2
 * and 7 print and the ratio against the parameter-matched dense model, and
 * Eq. 13, which the tables do not follow (spec 6.3). */
#include "cli.h"
#include "model.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One configuration of spec 10 (Table 9's hyperparameters) and the figures
 * the paper prints for it (spec 6.4, and section 10's "paper" column). */
typedef struct paper_row {
  const char *dataset, *size, *model;
  clattn_switchhead_paper c; /* H, d_h, D, T, cb, E, k, rope */
  const char *paper_macs, *paper_mem;
  int dense; /* the row of its parameter-matched dense model */
} paper_row;

enum { R_XL47, R_XL262 = 2, R_XL41 = 5, R_ROPE45 = 11, R_ROPE244 };

static const paper_row rows[] = {
    {"C4,WT103",
     "47M",
     "Transformer-XL",
     {sizeof(clattn_switchhead_paper), 10, 41, 412, 256, 1, 0, 0, 0},
     "453.4M",
     "3.5M",
     R_XL47},
    {"C4",
     "47M",
     "Transformer-XL",
     {sizeof(clattn_switchhead_paper), 2, 205, 412, 256, 1, 0, 0, 0},
     "453M",
     "1.4M",
     R_XL47},
    {"C4,WT103,peS2o",
     "262M",
     "Transformer-XL",
     {sizeof(clattn_switchhead_paper), 16, 64, 1024, 512, 1, 0, 0, 0},
     "5.4G",
     "21.0M",
     R_XL262},
    {"C4",
     "262M",
     "Transformer-XL",
     {sizeof(clattn_switchhead_paper), 4, 256, 1024, 512, 1, 0, 0, 0},
     "5.4G",
     "8.4M",
     R_XL262},
    {"-",
     "262M",
     "Transformer-XL",
     {sizeof(clattn_switchhead_paper), 2, 512, 1024, 512, 1, 0, 0, 0},
     "5.4G",
     "6.3M",
     R_XL262},
    {"Enwik8",
     "41M",
     "Transformer-XL",
     {sizeof(clattn_switchhead_paper), 8, 64, 512, 512, 1, 0, 0, 0},
     "1.6G",
     "10M",
     R_XL41},
    {"WT103",
     "47M",
     "SwitchHead-XL",
     {sizeof(clattn_switchhead_paper), 2, 76, 412, 256, 1, 5, 2, 0},
     "170.4M",
     "0.8M",
     R_XL47},
    {"C4",
     "47M",
     "SwitchHead-XL",
     {sizeof(clattn_switchhead_paper), 2, 76, 412, 256, 1, 5, 3, 0},
     "203M",
     "0.8M",
     R_XL47},
    {"WT103",
     "262M",
     "SwitchHead-XL",
     {sizeof(clattn_switchhead_paper), 2, 132, 1024, 512, 1, 8, 4, 0},
     "2.0G",
     "2.9M",
     R_XL262},
    {"C4,peS2o",
     "262M",
     "SwitchHead-XL",
     {sizeof(clattn_switchhead_paper), 4, 112, 1024, 512, 1, 4, 2, 0},
     "2.4G",
     "5.6M",
     R_XL262},
    {"Enwik8",
     "41M",
     "SwitchHead-XL",
     {sizeof(clattn_switchhead_paper), 2, 112, 512, 512, 1, 4, 2, 0},
     "709M",
     "2.8M",
     R_XL41},
    {"WT103",
     "45M",
     "Transformer RoPE",
     {sizeof(clattn_switchhead_paper), 10, 41, 412, 512, 0, 0, 0, 1},
     "560.9M",
     "6.1M",
     R_ROPE45},
    {"WT103",
     "244M",
     "Transformer RoPE",
     {sizeof(clattn_switchhead_paper), 16, 64, 1024, 1024, 0, 0, 0, 1},
     "6.4G",
     "37.7M",
     R_ROPE244},
    {"WT103",
     "45M",
     "SwitchHead RoPE",
     {sizeof(clattn_switchhead_paper), 2, 64, 412, 512, 0, 5, 3, 1},
     "285.6M",
     "1.3M",
     R_ROPE45},
    /* trained with an XL cache, unlike its dense match (spec 6.5) */
    {"WT103",
     "243M",
     "SwitchHead RoPE",
     {sizeof(clattn_switchhead_paper), 4, 100, 1024, 1024, 1, 4, 2, 1},
     "4.2G",
     "18.4M",
     R_ROPE244},
};
enum {
  N_ROWS = sizeof rows / sizeof rows[0],
  R_SH47 = 6,
  R_SH262 = 9,
  R_ROPE243 = 14
};
_Static_assert(N_ROWS == 15, "spec 10 has 15 configurations");

typedef struct paper_fig {
  long long macs, mem;
  int matches; /* both round to the paper's printed figures */
} paper_fig;

/* "1,234,567" */
static const char *grouped(long long v, char *buf, size_t cap) {
  char digits[32];
  int n = snprintf(digits, sizeof digits, "%lld", v);
  size_t o = 0;
  for (int i = 0; i < n && o + 2 < cap; i++) {
    if (i > 0 && digits[i - 1] != '-' && (n - i) % 3 == 0)
      buf[o++] = ',';
    buf[o++] = digits[i];
  }
  buf[o] = '\0';
  return buf;
}

/* Whether v, written with the printed figure's unit (M or G) and number
 * of decimals, is that figure: how the paper rounds its counts. */
static int rounds_to(long long v, const char *printed) {
  const char *dot = strchr(printed, '.');
  const size_t len = strlen(printed);
  const char unit = printed[len - 1];
  const double scale = unit == 'G' ? 1e9 : unit == 'M' ? 1e6 : 0;
  if (scale == 0)
    return 0;
  const int decimals = dot ? (int)(printed + len - 1 - dot - 1) : 0;
  char mine[32];
  snprintf(mine, sizeof mine, "%.*f%c", decimals, (double)v / scale, unit);
  return strcmp(mine, printed) == 0;
}

/* Eq. 13 (spec 6.3): H (2 T d_h D + 2 T k d_h (D+1) + 2 C T^2 d_h
 * + 2 C T d_h D), C = cb + 1; the table's shapes are far from overflow. */
static long long eq13_macs(const clattn_switchhead_paper *c) {
  const long long H = c->heads, dh = c->head_dim, D = c->d_model;
  const long long T = c->seq_len, k = c->topk, C = c->context_blocks + 1LL;
  return H * (2 * T * dh * D + 2 * T * k * dh * (D + 1) + 2 * C * T * T * dh +
              2 * C * T * dh * D);
}

/* The tables' accounting with SwitchHead's positional projection over
 * the C T positions the code projects (discrepancy (b) of spec 6.3). */
static long long positional_c_macs(const clattn_switchhead_paper *c,
                                   long long macs) {
  return macs + 2LL * c->heads * c->d_model * c->seq_len * c->head_dim *
                    c->context_blocks;
}

static void print_text(const paper_fig *f) {
  char a[32], b[32];
  printf("SwitchHead: MACs and training memory (floats) of one attention "
         "layer and one sequence,\nas the paper's tables count them "
         "(RobertCsordas/moe_attention paper/common.py;\nspec 6.3, 10), "
         "beside the figures its Tables 1, 2 and 7 print\n");
  printf("  %2s %-14s %-4s %-16s %3s %4s %5s %5s %2s %2s %2s %15s %7s "
         "%12s %6s %3s %3s %7s %7s\n",
         "#", "dataset", "size", "model", "H", "d_h", "D", "T", "cb", "k", "E",
         "MACs", "paper", "mem floats", "paper", "=", "vs", "MACs/d", "mem/d");
  for (int i = 0; i < N_ROWS; i++) {
    const paper_row *r = &rows[i];
    const clattn_switchhead_paper *c = &r->c;
    char k[8] = "-", e[8] = "-";
    if (c->experts) {
      snprintf(k, sizeof k, "%d", c->topk);
      snprintf(e, sizeof e, "%d", c->experts);
    }
    printf(
        "  %2d %-14s %-4s %-16s %3d %4d %5d %5d %2d %2s %2s %15s %7s "
        "%12s %6s %3s %2d%s %7.3f %7.3f\n",
        i + 1, r->dataset, r->size, r->model, c->heads, c->head_dim, c->d_model,
        c->seq_len, c->context_blocks, k, e, grouped(f[i].macs, a, sizeof a),
        r->paper_macs, grouped(f[i].mem, b, sizeof b), r->paper_mem,
        f[i].matches ? "yes" : "NO", r->dense + 1, i == R_ROPE243 ? "*" : " ",
        (double)f[i].macs / (double)f[r->dense].macs,
        (double)f[i].mem / (double)f[r->dense].mem);
  }
  printf("  =: the exact count, rounded to the unit and decimals of the "
         "paper's figure, is that figure.\n"
         "  vs: the row of the parameter-matched dense model of the same "
         "dataset and size; MACs/d\n  and mem/d are the ratios against it. "
         " The spec names no dataset for row 5.\n");
  printf("  * The 243M RoPE SwitchHead was trained with an XL cache (cb = 1: "
         "its sweep leaves\n    context_blocks at the default, spec 6.5), "
         "its 244M dense match without (cb = 0):\n    not an "
         "apples-to-apples no-cache comparison.\n");
  printf("  RoPE rows: no positional projection, in the MACs or in the "
         "memory.\n");
  printf("  Abstract, 262M C4: %.3f of the dense compute and %.3f of its "
         "memory (\"44%%\", \"27%%\").\n",
         (double)f[R_SH262].macs / (double)f[R_XL262].macs,
         (double)f[R_SH262].mem / (double)f[R_XL262].mem);
  const long long q47 = eq13_macs(&rows[R_SH47].c);
  const long long q262 = eq13_macs(&rows[R_SH262].c);
  printf("  With the paper's Eq. 13 instead: SH WT103 47M gives %s and SH "
         "C4 262M gives\n  %s MACs.\n",
         grouped(q47, a, sizeof a), grouped(q262, b, sizeof b));
  const long long p47 = positional_c_macs(&rows[R_SH47].c, f[R_SH47].macs);
  const long long p262 = positional_c_macs(&rows[R_SH262].c, f[R_SH262].macs);
  printf("  The tables' accounting differs from Eq. 13 (spec 6.3): (a) it "
         "counts the selection\n  as 2 E D C T, not the 2 H E D C T of "
         "W_s's [H E, D] (negligible); (b) it counts\n  SwitchHead's "
         "positional projection over T positions, not the C T the code\n"
         "  projects.  Over C T: SH WT103 47M %s MACs (%.3f of dense), SH C4 "
         "262M\n  %s (%.3f).\n",
         grouped(p47, a, sizeof a),
         (double)p47 / (double)f[rows[R_SH47].dense].macs,
         grouped(p262, b, sizeof b),
         (double)p262 / (double)f[rows[R_SH262].dense].macs);
}

static void print_json(const paper_fig *f) {
  printf("{\n  \"rows\": [\n");
  for (int i = 0; i < N_ROWS; i++) {
    const paper_row *r = &rows[i];
    const clattn_switchhead_paper *c = &r->c;
    printf(
        "    {\"dataset\": \"%s\", \"size\": \"%s\", \"model\": \"%s\", "
        "\"heads\": %d, \"head_dim\": %d, \"d_model\": %d, \"seq_len\": "
        "%d, \"context_blocks\": %d, \"topk\": %d, \"experts\": %d, "
        "\"rope\": %d, \"macs\": %lld, \"paper_macs\": \"%s\", "
        "\"mem_floats\": %lld, \"paper_mem\": \"%s\", \"matches\": %s, "
        "\"dense_row\": %d, \"macs_ratio\": %.6g, \"mem_ratio\": %.6g}"
        "%s\n",
        r->dataset, r->size, r->model, c->heads, c->head_dim, c->d_model,
        c->seq_len, c->context_blocks, c->topk, c->experts, c->rope, f[i].macs,
        r->paper_macs, f[i].mem, r->paper_mem, f[i].matches ? "true" : "false",
        r->dense + 1, (double)f[i].macs / (double)f[r->dense].macs,
        (double)f[i].mem / (double)f[r->dense].mem, i + 1 < N_ROWS ? "," : "");
  }
  printf("  ],\n  \"eq13_macs\": {\"sh_wt103_47m\": %lld, \"sh_c4_262m\": "
         "%lld},\n",
         eq13_macs(&rows[R_SH47].c), eq13_macs(&rows[R_SH262].c));
  printf("  \"positional_over_ct_macs\": {\"sh_wt103_47m\": %lld, "
         "\"sh_c4_262m\": %lld}\n}\n",
         positional_c_macs(&rows[R_SH47].c, f[R_SH47].macs),
         positional_c_macs(&rows[R_SH262].c, f[R_SH262].macs));
}

static int model_paper(const model_opts *o) {
  paper_fig f[N_ROWS];
  int all = 1;
  for (int i = 0; i < N_ROWS; i++) {
    clattn_status st =
        clattn_model_switchhead_paper(&rows[i].c, &f[i].macs, &f[i].mem);
    if (st) {
      cli_err("model switchhead --paper: row %d: %s", i + 1,
              clattn_status_str(st));
      return CLI_FAIL;
    }
    f[i].matches = rounds_to(f[i].macs, rows[i].paper_macs) &&
                   rounds_to(f[i].mem, rows[i].paper_mem);
    all &= f[i].matches;
  }
  if (o->json)
    print_json(f);
  else
    print_text(f);
  if (!all) {
    cli_err("model switchhead --paper: a count does not round to the "
            "paper's figure");
    return CLI_FAIL;
  }
  return CLI_OK;
}

/* ------------------------------------------------ one layer call */

/* The paper's 47M SwitchHead (WT103 selects k = 2, C4 k = 3) and its
 * parameter-matched dense model (spec 6.2, 6.4). */
enum {
  L_D = 412,
  L_H = 2,
  L_DH = 76,
  L_E = 5,
  L_K = 3,
  L_N = 256,
  L_DENSE_H = 10,
  L_DENSE_DH = 41
};

/* The layer's own keys, passed as --KEY V ("KEY=V" words of
 * o->shape_extra): experts, topk, dense-heads, dense-head-dim. */
typedef struct sh_keys {
  int experts, topk, dense_heads, dense_head_dim;
} sh_keys;

static int parse_keys(const char *extra, sh_keys *k) {
  static const struct {
    const char *name;
    size_t off;
  } keys[] = {
      {"experts", offsetof(sh_keys, experts)},
      {"topk", offsetof(sh_keys, topk)},
      {"dense-heads", offsetof(sh_keys, dense_heads)},
      {"dense-head-dim", offsetof(sh_keys, dense_head_dim)},
  };
  /* cli_parse (CLI_KEY) wrote each as "KEY=VALUE", neither with '=' or ' ' */
  const char *w = extra;
  while (*w) {
    const char *eq = strchr(w, '='), *end = strchr(w, ' ');
    if (end == NULL)
      end = w + strlen(w);
    if (eq == NULL || eq > end)
      eq = end;
    const size_t len = (size_t)(eq - w), n = sizeof keys / sizeof keys[0];
    size_t i = 0;
    while (i < n &&
           !(strlen(keys[i].name) == len && strncmp(w, keys[i].name, len) == 0))
      i++;
    if (i == n || eq == end) {
      cli_err("model switchhead: unknown option '--%.*s' (the layer's "
              "keys: --experts, --topk, --dense-heads, --dense-head-dim)",
              (int)len, w);
      return CLI_USAGE;
    }
    char *stop;
    errno = 0;
    long v = strtol(eq + 1, &stop, 10);
    if (errno || stop != end || v < 1 || v > INT_MAX) {
      cli_err("--%s: expected an integer >= 1, got '%.*s'", keys[i].name,
              (int)(end - eq - 1), eq + 1);
      return CLI_USAGE;
    }
    *(int *)((char *)k + keys[i].off) = (int)v;
    w = *end ? end + 1 : end;
  }
  return CLI_OK;
}

static void print_side_json(const char *key, const cli_layer_side *s,
                            const char *sep) {
  const clattn_prediction *pr = &s->pr;
  printf("  \"%s\": {\"name\": \"%s\", \"params\": %lld, \"macs\": %.0f, "
         "\"kernels\": [\n",
         key, s->name, s->params, pr->total.flops / 2);
  for (int i = 0; i < pr->n_kernels; i++)
    cli_print_cost_json(&pr->kernel[i], &pr->core[i],
                        i + 1 < pr->n_kernels ? "," : "");
  printf("  ], \"total\":\n");
  cli_print_cost_json(&pr->total, &pr->core_total, "");
  printf("  }%s\n", sep);
}

/* The SwitchHead layer, and the dense one beside it (m: NULL if none). */
static void print_layer(const char *what, const clattn_profile *p,
                        const cli_layer_side *v, const cli_layer_side *m,
                        int json) {
  if (!json) {
    cli_print_prediction(what, p, &v->pr, 0);
    if (m == NULL)
      return;
  }
  double r[CLI_COMPARE_RATIOS];
  if (m != NULL)
    cli_compare_ratios(v, m, r);
  if (json) {
    printf("{\n  \"call\": \"%s\",\n  \"profile\": \"%s\",\n  \"source\": "
           "\"%s\",\n",
           what, p->name, cli_profile_source(p->source));
    print_side_json("switchhead", v, m ? "," : "");
    if (m) {
      print_side_json("dense", m, ",");
      printf("  \"ratio\": {");
      cli_print_ratio_json("params", r[0], ", ");
      cli_print_ratio_json("macs", r[1], ", ");
      cli_print_ratio_json("bytes_compulsory", r[2], ", ");
      cli_print_ratio_json("bytes_dram", r[3], ", ");
      cli_print_ratio_json("t_pred", r[4], "}\n");
    }
    printf("}\n");
    return;
  }
  printf("  against the parameter-matched dense MHA layer (clattn_model_"
         "layer):\n");
  cli_print_compare_rows(v, m, "SwitchHead/MHA", "MMAC", 0.5e-6);
  printf("  (params: the attention layer's alone; the paper matches "
         "them with the FFN, spec 6.2)\n");
}

static int model_layer(const model_opts *o) {
  if (o->kv_heads || o->head_dim_v || o->kv_seq || o->max_len ||
      cli_params_given(&o->params) || o->dtype != CLATTN_F32) {
    cli_err("model switchhead takes --d-model, --heads, --head-dim, "
            "--experts, --topk, --batch, --seq, --cache-len, --causal, "
            "--dense-heads, --dense-head-dim (float32)");
    return CLI_USAGE;
  }
  sh_keys k = {0, 0, 0, 0};
  int rc = parse_keys(o->shape_extra, &k);
  if (rc)
    return rc;
  if (k.dense_head_dim && !k.dense_heads) {
    cli_err("model switchhead: --dense-head-dim needs --dense-heads");
    return CLI_USAGE;
  }
  /* an unset key takes the 47M model's value; the dense side shows with
   * --dense-heads, or by default for the 47M model itself */
  const int paper47 =
      !o->d_model && !o->heads && !o->head_dim && !k.experts && !k.topk;
  const clattn_switchhead_layer_desc d = {sizeof(clattn_switchhead_layer_desc),
                                          o->d_model ? o->d_model : L_D,
                                          o->heads ? o->heads : L_H,
                                          o->head_dim ? o->head_dim : L_DH,
                                          k.experts ? k.experts : L_E,
                                          k.topk ? k.topk : L_K,
                                          0.0f};
  const int b = o->batch ? o->batch : 1, n = o->seq ? o->seq : L_N;
  int dh = 0, dd = 0;
  if (k.dense_heads) {
    dh = k.dense_heads;
    dd = k.dense_head_dim ? k.dense_head_dim : d.d_model / dh;
    if (dd < 1) {
      cli_err("model switchhead: --dense-heads %d above d_model %d", dh,
              d.d_model);
      return CLI_USAGE;
    }
  } else if (paper47) {
    dh = L_DENSE_H;
    dd = L_DENSE_DH;
  }
  clattn_profile prof = {.size = sizeof(clattn_profile)};
  if ((rc = cli_model_profile(o, &prof)))
    return rc;
  cli_layer_side side[2] = {
      {"SwitchHead",
       clattn_switchhead_layer_params(&d),
       {.size = sizeof(clattn_prediction)}},
      {"MHA", 4LL * d.d_model * dh * dd, {.size = sizeof(clattn_prediction)}}};
  clattn_status st = clattn_model_switchhead_layer(
      &d, b, n, o->cache_len, o->causal, &prof, &side[0].pr);
  if (st)
    return cli_model_fail(st, &side[0].pr);
  char mha[32] = "";
  if (dh) {
    const clattn_layer_desc md = {
        sizeof(clattn_layer_desc), d.d_model, dh, dh, dd, dd, 0.0f};
    st = clattn_model_layer(&md, b, n, o->cache_len, o->causal, &prof,
                            &side[1].pr);
    if (st)
      return cli_model_fail(st, &side[1].pr);
    snprintf(mha, sizeof mha, " vs MHA h=%d k=v=%d", dh, dd);
  }
  char what[256];
  snprintf(what, sizeof what,
           "switchhead layer b=%d n=%d cache=%d "
           "d_model=%d h=%d d_h=%d E=%d k=%d%s f32%s",
           b, n, o->cache_len, d.d_model, d.heads, d.head_dim, d.experts,
           d.topk, o->causal ? " causal" : "", mha);
  print_layer(what, &prof, &side[0], dh ? &side[1] : NULL, o->json);
  return CLI_OK;
}

int cli_model_sh(const model_opts *o) {
  if (!o->paper)
    return model_layer(o);
  if (o->profile || o->device || o->db || o->causal || o->batch || o->seq ||
      o->kv_seq || o->heads || o->kv_heads || o->head_dim || o->head_dim_v ||
      o->d_model || o->cache_len || o->max_len || o->shape_extra[0] ||
      o->dtype != CLATTN_F32 || o->no_device || o->no_store || o->quick ||
      o->probe || cli_params_given(&o->params)) {
    cli_err("model switchhead --paper takes no shape or device: its "
            "configurations are the paper's (--json only)");
    return CLI_USAGE;
  }
  return model_paper(o);
}
