/* model_hh.c - `clattn model optimised|efficient|super`: a Hosseini &
 * Hosseini layer call predicted by clattn_model_hh_layer next to standard
 * multi-head attention of the same d_model and heads (clattn_model_layer,
 * head dims d_model/heads): parameters, FLOPs, bytes, predicted time and
 * their ratios variant/MHA on the profile the other model words use. */
#include "cli.h"
#include "model.h"

#include <stdio.h>
#include <string.h>

static void print_side_json(const char *key, const cli_layer_side *s,
                            const char *sep) {
  const clattn_cost *c = &s->pr.total;
  printf("  \"%s\": {\"name\": \"%s\", \"params\": %lld, \"flops\": %.0f, "
         "\"bytes_compulsory\": %.0f, \"bytes_dram\": %.0f, \"t_pred\": "
         "%.6g, \"bound\": \"%s\"}%s\n",
         key, s->name, s->params, c->flops, c->bytes_compulsory, c->bytes_dram,
         c->t_pred, cli_bound_name(c->bound), sep);
}

static void print_comparison(const char *what, const clattn_profile *p,
                             const cli_layer_side *v, const cli_layer_side *m,
                             int json) {
  if (json) {
    double r[CLI_COMPARE_RATIOS];
    cli_compare_ratios(v, m, r);
    printf("{\n  \"call\": \"%s\",\n  \"profile\": \"%s\",\n  \"source\": "
           "\"%s\",\n",
           what, p->name, cli_profile_source(p->source));
    print_side_json("variant", v, ",");
    print_side_json("mha", m, ",");
    printf("  \"ratio\": {");
    cli_print_ratio_json("params", r[0], ", ");
    cli_print_ratio_json("flops", r[1], ", ");
    cli_print_ratio_json("bytes_compulsory", r[2], ", ");
    cli_print_ratio_json("bytes_dram", r[3], ", ");
    cli_print_ratio_json("t_pred", r[4], "}\n}\n");
    return;
  }
  printf("%s on %s (%s profile)\n", what, p->name,
         cli_profile_source(p->source));
  char label[32];
  snprintf(label, sizeof label, "%s/MHA", v->name);
  cli_print_compare_rows(v, m, label, "GFLOP", 1e-9);
  if (p->source == CLATTN_PROFILE_REPORTED)
    printf("  (no measured ceilings: run 'clattn probe' to store them; "
           "times are 0)\n");
}

int cli_model_hh(model_opts *o, clattn_hh_variant v) {
  const char *word = cli_hh_word(v);
  if (!o->d_model || !o->heads || !o->seq) {
    cli_err("model %s needs --d-model, --heads and --seq", word);
    return CLI_USAGE;
  }
  /* the head width is d_model/heads and the cache is the layer's own, so
   * the attention core's shape options would be silently ignored */
  if (o->head_dim || o->head_dim_v || o->kv_heads || o->kv_seq ||
      o->shape_extra[0]) {
    cli_err("model %s takes --d-model, --heads, --seq, --batch, --max-len, "
            "--cache-len and --causal (head width d_model/heads)",
            word);
    return CLI_USAGE;
  }
  if (o->dtype != CLATTN_F32) {
    cli_err("model %s: the layer is float32", word);
    return CLI_USAGE;
  }
  if (o->max_len && v != CLATTN_HH_SUPER) {
    cli_err("model %s: --max-len is Super's alone (W_a's size)", word);
    return CLI_USAGE;
  }
  if (!o->batch)
    o->batch = 1;
  /* W_a just covers the cached and the new positions unless told */
  if (v == CLATTN_HH_SUPER && !o->max_len)
    o->max_len = o->cache_len + o->seq;
  const clattn_hh_layer_desc hd = {sizeof(clattn_hh_layer_desc), o->d_model,
                                   o->heads, o->max_len, 0.0f};
  const int k =
      o->heads > 0 && o->d_model % o->heads == 0 ? o->d_model / o->heads : 0;
  const clattn_layer_desc md = {
      sizeof(clattn_layer_desc), o->d_model, o->heads, o->heads, k, k, 0.0f};
  clattn_profile prof = {.size = sizeof(clattn_profile)};
  int rc = cli_model_profile(o, &prof);
  if (rc)
    return rc;
  cli_layer_side side[2] = {{word,
                             clattn_hh_layer_params(v, &hd),
                             {.size = sizeof(clattn_prediction)}},
                            {"MHA",
                             4LL * o->d_model * o->d_model,
                             {.size = sizeof(clattn_prediction)}}};
  clattn_status st = clattn_model_hh_layer(
      v, &hd, o->batch, o->seq, o->cache_len, o->causal, &prof, &side[0].pr);
  if (st)
    return cli_model_fail(st, &side[0].pr);
  st = clattn_model_layer(&md, o->batch, o->seq, o->cache_len, o->causal, &prof,
                          &side[1].pr);
  if (st)
    return cli_model_fail(st, &side[1].pr);
  char what[256];
  int w =
      snprintf(what, sizeof what,
               "%s layer b=%d n=%d cache=%d "
               "d_model=%d h=%d k=v=%d",
               word, o->batch, o->seq, o->cache_len, o->d_model, o->heads, k);
  if (v == CLATTN_HH_SUPER && w > 0 && (size_t)w < sizeof what)
    w += snprintf(what + w, sizeof what - (size_t)w, " max_len=%d", o->max_len);
  if (w > 0 && (size_t)w < sizeof what)
    snprintf(what + w, sizeof what - (size_t)w, "%s f32 vs MHA",
             o->causal ? " causal" : "");
  print_comparison(what, &prof, &side[0], &side[1], o->json);
  return CLI_OK;
}
