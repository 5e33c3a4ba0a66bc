/* model.c - `clattn model`: the roofline model's predictions, the MQA
 * paper's memory/arithmetic analysis, datasheet predictions, and --check
 * (predicted against measured on the present device).
 *
 *   clattn model FAMILY|layer SHAPE [--profile NAME|--device D]
 *   clattn model optimised|efficient|super SHAPE (model_hh.c)
 *   clattn model mqa [--device D | --no-device]
 *   clattn model switchhead [SHAPE] | --paper (model_sh.c)
 *   clattn model profiles
 *   clattn model check [--device D] [--db PATH] [--no-store] [--quick]
 *                      [--probe] [--families LIST] */
#include "cli.h"
#include "model.h"
#include "options.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char model_usage[] =
    "usage: clattn model FAMILY|layer SHAPE [OPTIONS]\n"
    "  (FAMILY: attention, decode, append, ...: clattn families)\n"
    "       clattn model optimised|efficient|super --d-model D --heads H\n"
    "         --seq N [--batch B] [--max-len L] [--cache-len C] [--causal]\n"
    "         [OPTIONS]  (a Hosseini & Hosseini layer against MHA of the\n"
    "         same D and H: parameters, FLOPs, bytes, time and ratios)\n"
    "       clattn model mqa [--device D | --no-device]\n"
    "       clattn model switchhead [--d-model D] [--heads H] [--head-dim K]\n"
    "         [--experts E] [--topk K] [--seq N] [--batch B] [--cache-len C]\n"
    "         [--causal] [--dense-heads H [--dense-head-dim K]] [OPTIONS]\n"
    "         (a SwitchHead layer per kernel against its parameter-matched\n"
    "         dense MHA layer; unset: the paper's 47M model, D=412 H=2\n"
    "         d_h=76 E=5 k=3 n=256, against H=10 d_h=41)\n"
    "       clattn model switchhead --paper [--json]  (the SwitchHead paper's\n"
    "         per-layer MACs and memory, its printed figures beside them,\n"
    "         and the ratios against the matched dense models)\n"
    "       clattn model profiles\n"
    "       clattn model check|--check [--device D] [--db PATH] [--no-store]\n"
    "         [--quick] [--probe] [--families LIST]\n"
    "SHAPE: --batch B --seq N [--kv-seq M] --heads H [--kv-heads G]\n"
    "  --head-dim K [--head-dim-v V]; decode: --kv-seq M is the cache\n"
    "  length; layer: --d-model D [--cache-len P] (decode: --seq 1);\n"
    "  any other key of the family's shape as --KEY V (talking-heads:\n"
    "  --heads-k A --heads-v U; see 'clattn families')\n"
    "OPTIONS: --dtype f32|f16|bf16, --causal, --variant 1|2, --rows R,\n"
    "  --keys K, --wg W, --splits S, --prefetch 1|2 (off|on), --scheme N\n"
    "  (talking-heads: 1 one pass, 2 two passes, 3 two passes with the\n"
    "  logits kept in local memory) (default: what the library picks),\n"
    "  --profile NAME (a datasheet GPU, see 'clattn model profiles') or\n"
    "  --device D (a present device: its measured profile from the database\n"
    "  when 'clattn probe' stored one, else what it reports), --db PATH,\n"
    "  --json\n"
    "check: --probe measures the device's ceilings first (as 'clattn probe',\n"
    "  stored unless --no-store or --quick) and predicts from them, so the\n"
    "  predictions and the measurements come from one run; each decode\n"
    "  and append pass (at least 32 calls in a stream, cold caches) follows\n"
    "  a copy (clattn_copy_ref) and is predicted at that copy's bandwidth\n"
    "  (column err@prof: at the stored profile's); then every family\n"
    "  (--families LIST: those) at its standard shapes (--quick: the first),\n"
    "  each call timed cold between two copies and predicted at their mean\n";

static int model_usage_err(const char *why) {
  return cli_usage_error("model", "%s", why);
}

static int parse_model_dtype(const char *v, void *field) {
  clattn_dtype *d = field;
  if (!strcmp(v, "f32"))
    *d = CLATTN_F32;
  else if (!strcmp(v, "f16"))
    *d = CLATTN_F16;
  else if (!strcmp(v, "bf16"))
    *d = CLATTN_BF16;
  else
    return -1;
  return 0;
}

/* The kernel families' subcommands; GATED marks the common SHAPE options,
 * which a family takes only when its shape keys name them. */
enum {
  KEYED = M_FAM | T_FAM | E_FAM,
  GATED = 1u << 20,
  FAMS = GATED | KEYED,
  PRESENT = M_FAM | M_LAYER | M_HH | M_SH,
  ANY_TUNE = T_FAM | T_GEMM | T_ALL
};

#define MOFF(f) offsetof(model_opts, f)
static const cli_option model_options[] = {
    {"batch", CLI_INT, MOFF(batch), 1, NULL, FAMS | M_LAYER | M_HH | M_SH, "B",
     "SHAPE: batch (default 1)"},
    {"seq", CLI_INT, MOFF(seq), 1, NULL, FAMS | M_LAYER | M_HH | M_SH, "N",
     "SHAPE: query positions"},
    {"kv-seq", CLI_INT, MOFF(kv_seq), 1, NULL, FAMS, "M",
     "SHAPE: key positions (decode: the cache length)"},
    {"heads", CLI_INT, MOFF(heads), 1, NULL, FAMS | M_LAYER | M_HH | M_SH, "H",
     "SHAPE: query heads"},
    {"kv-heads", CLI_INT, MOFF(kv_heads), 1, NULL, FAMS | M_LAYER, "G",
     "SHAPE: key/value heads (default H)"},
    {"head-dim", CLI_INT, MOFF(head_dim), 1, NULL, FAMS | M_LAYER | M_SH, "K",
     "SHAPE: key head width"},
    {"head-dim-v", CLI_INT, MOFF(head_dim_v), 1, NULL, FAMS | M_LAYER, "V",
     "SHAPE: value head width (default K)"},
    {"dtype", CLI_FN, MOFF(dtype), 0, parse_model_dtype, FAMS, "f32|f16|bf16",
     "element type (default f32)"},
    {"causal", CLI_FLAG, MOFF(causal), 0, NULL, FAMS | M_LAYER | M_HH | M_SH,
     NULL, "causal mask"},
    {"d-model", CLI_INT, MOFF(d_model), 1, NULL, M_LAYER | M_HH | M_SH, "D",
     "model width"},
    {"cache-len", CLI_INT, MOFF(cache_len), 0, NULL, M_LAYER | M_HH | M_SH, "C",
     "positions already cached"},
    {"max-len", CLI_INT, MOFF(max_len), 1, NULL, M_HH, "L",
     "super: W_a's size (default cache-len + seq)"},
    {"experts", CLI_KEY, MOFF(shape_extra), 0, NULL, M_SH, "E",
     "experts a head"},
    {"topk", CLI_KEY, MOFF(shape_extra), 0, NULL, M_SH, "K",
     "experts chosen a position"},
    {"dense-heads", CLI_KEY, MOFF(shape_extra), 0, NULL, M_SH, "H",
     "the dense MHA layer's heads"},
    {"dense-head-dim", CLI_KEY, MOFF(shape_extra), 0, NULL, M_SH, "K",
     "the dense MHA layer's head width"},
    {"paper", CLI_FLAG, MOFF(paper), 0, NULL, M_SH, NULL,
     "the SwitchHead paper's accounting (with --json only)"},
    {"variant", CLI_INT, MOFF(params.variant), 0, NULL, M_FAM | E_FAM, "1|2",
     "params: kernel variant (0: the library's)"},
    {"rows", CLI_INT, MOFF(params.rows), 0, NULL, M_FAM | E_FAM, "R",
     "params: rows a work-group"},
    {"keys", CLI_INT, MOFF(params.keys), 0, NULL, M_FAM | E_FAM, "K",
     "params: keys a tile"},
    {"wg", CLI_INT, MOFF(params.wg), 0, NULL, M_FAM | E_FAM, "W",
     "params: work-group size"},
    {"splits", CLI_INT, MOFF(params.splits), 0, NULL, M_FAM | E_FAM, "S",
     "params: KV splits"},
    {"prefetch", CLI_INT, MOFF(params.prefetch), 0, NULL, M_FAM | E_FAM, "1|2",
     "params: prefetch off|on"},
    {"scheme", CLI_INT, MOFF(params.scheme), 0, NULL, M_FAM | E_FAM, "N",
     "params: scheme"},
    {"params", CLI_STR, MOFF(params.text), 0, NULL, M_FAM | E_FAM,
     "\"NAME=N ...\"",
     "params: any of the family's tunables (`clattn families`)"},
    {"profile", CLI_STR, MOFF(profile), 0, NULL, PRESENT, "NAME",
     "a datasheet GPU (clattn model profiles)"},
    {"device", CLI_STR, MOFF(device), 0, NULL,
     PRESENT | M_MQA | M_CHECK | ANY_TUNE | E_FAM, "SEL",
     "a present device (default $CLATTN_DEVICE)"},
    {"db", CLI_STR, MOFF(db), 0, NULL,
     PRESENT | M_MQA | M_CHECK | ANY_TUNE | E_FAM, "PATH",
     "the tuning database (default $CLATTN_DB)"},
    {"json", CLI_FLAG, MOFF(json), 0, NULL, PRESENT | E_FAM, NULL,
     "print JSON"},
    {"no-device", CLI_FLAG, MOFF(no_device), 0, NULL, M_MQA, NULL,
     "no present-device row"},
    {"no-store", CLI_FLAG, MOFF(no_store), 0, NULL, M_CHECK, NULL,
     "do not store the results"},
    {"quick", CLI_FLAG, MOFF(quick), 0, NULL, M_CHECK, NULL,
     "a smoke run (implies --no-store)"},
    {"probe", CLI_FLAG, MOFF(probe), 0, NULL, M_CHECK, NULL,
     "measure the device's ceilings first"},
    {"families", CLI_STR, MOFF(families), 0, NULL, M_CHECK, "LIST",
     "the families of the second table (comma-separated; default all)"},
};

int cli_shape_key_is_flag(const char *key) {
  for (size_t i = 0; i < sizeof model_options / sizeof model_options[0]; i++)
    if (!strcmp(model_options[i].name, key))
      return model_options[i].kind == CLI_FLAG;
  return 0;
}

int cli_model_options(unsigned scope, int fam, size_t base, cli_option *buf,
                      int cap) {
  const char *keys = fam >= 0 ? clattn_family_shape_keys(fam) : NULL;
  int n = 0;
  for (size_t i = 0; i < sizeof model_options / sizeof model_options[0]; i++) {
    cli_option o = model_options[i];
    if (!(o.scope & scope))
      continue;
    /* a family takes the common shape options its keys name */
    if ((scope & KEYED) && (o.scope & GATED) && !cli_has_word(keys, o.name))
      continue;
    if (n >= cap)
      return -1;
    o.offset += base;
    o.scope = 0;
    buf[n++] = o;
  }
  /* the family's own keys (--heads-k, --m ...) as KEY=VALUE words */
  static char key_names[CLI_MAX_OPTIONS][40];
  for (const char *w = keys; w && *w;) {
    while (*w == ' ')
      w++;
    const size_t len = strcspn(w, " ");
    char key[40];
    snprintf(key, sizeof key, "%.*s", (int)(len < 39 ? len : 39), w);
    w += len;
    int dup = 0;
    for (int k = 0; k < n; k++)
      dup |= !strcmp(buf[k].name, key);
    if (!key[0] || dup || !strcmp(key, "dtype") || !strcmp(key, "causal"))
      continue;
    /* the registry's keys are one string: each name is copied where it
     * outlives this call */
    if (n >= cap || n >= CLI_MAX_OPTIONS)
      return -1;
    snprintf(key_names[n], sizeof key_names[n], "%s", key);
    buf[n] = (cli_option){key_names[n],
                          CLI_KEY,
                          base + MOFF(shape_extra),
                          0,
                          NULL,
                          0,
                          "V",
                          "a shape key of the family (clattn families)"};
    n++;
  }
  return n;
}
/* The profile of a present device: the measured one in the database if
 * there is one, else a datasheet whose name matches, else the reported. */
int cli_present_profile(const char *device, const char *dbpath,
                        clattn_profile *p) {
  clattn_ctx *ctx = NULL;
  int rc = cli_ctx_create(device, &ctx);
  if (rc)
    return rc;
  clattn_db *db = NULL;
  if (clattn_db_open_readonly(dbpath, &db) != CLATTN_OK) {
    cli_err("note: no tuning database (%s); using the device's reported "
            "profile",
            clattn_db_errmsg(NULL));
    db = NULL;
  }
  clattn_status st = clattn_profile_for(ctx, db, p);
  clattn_db_close(db);
  if (st)
    rc = cli_lib_fail(ctx, "clattn_profile_for", st);
  else if (p->source == CLATTN_PROFILE_REPORTED && p->note[0])
    cli_err("note: %s", p->note);
  clattn_ctx_destroy(ctx);
  return rc;
}

int cli_model_profile(const model_opts *o, clattn_profile *p) {
  if (o->profile) {
    if (clattn_datasheet_find(o->profile, p) != CLATTN_OK) {
      cli_err("--profile '%s': no such datasheet profile (see 'clattn model "
              "profiles')",
              o->profile);
      return CLI_USAGE;
    }
    return CLI_OK;
  }
  return cli_present_profile(o->device, o->db, p);
}

const char *cli_profile_source(clattn_profile_source s) {
  return s == CLATTN_PROFILE_MEASURED    ? "measured"
         : s == CLATTN_PROFILE_DATASHEET ? "datasheet"
                                         : "reported (no ceilings)";
}

const char *cli_bound_name(clattn_bound b) {
  return b == CLATTN_BOUND_MEMORY    ? "memory"
         : b == CLATTN_BOUND_COMPUTE ? "compute"
                                     : "launch";
}

static void print_cost_row(const clattn_cost *c) {
  printf("  %-18s %3d %9.4f %8.3f %9.3f %9.3f %9.3f %9.3f %7.2f %10.1f "
         "%10.1f %10.1f  %s\n",
         c->kernel, c->launches, c->flops * 1e-9, c->exp2_issued * 1e-6,
         c->bytes_read / 1048576.0, c->bytes_written / 1048576.0,
         c->bytes_compulsory / 1048576.0, c->bytes_dram / 1048576.0,
         c->intensity, c->t_memory * 1e6, c->t_compute * 1e6, c->t_pred * 1e6,
         cli_bound_name(c->bound));
}

void cli_print_cost_json(const clattn_cost *c, const clattn_core *k,
                         const char *sep) {
  printf("    {\"kernel\": \"%s\", \"launches\": %d, \"flops\": %.0f, "
         "\"softmax_ops\": %.0f, \"fma_issued\": %.0f, \"fma_spilled\": "
         "%.0f, \"exp2_issued\": %.0f, \"bytes_read\": %.0f, "
         "\"bytes_written\": %.0f, \"bytes_compulsory\": %.0f, "
         "\"bytes_dram\": %.0f, \"local_bytes\": %.0f, \"intensity\": "
         "%.6g, \"t_memory\": %.6g, \"t_compute\": %.6g, \"t_launch\": "
         "%.6g, \"t_pred\": %.6g, \"bound\": \"%s\",\n"
         "     \"core\": {\"barriers\": %.0f, \"cached_bytes\": %.0f, "
         "\"fma_gflops\": %.6g, \"t_fma\": %.6g, \"t_exp2\": %.6g, "
         "\"t_cache\": %.6g, \"t_local\": %.6g, \"t_barrier\": %.6g, "
         "\"t_core\": %.6g, \"t_data\": %.6g, \"t_busy\": %.6g}}%s\n",
         c->kernel, c->launches, c->flops, c->softmax_ops, c->fma_issued,
         c->fma_spilled, c->exp2_issued, c->bytes_read, c->bytes_written,
         c->bytes_compulsory, c->bytes_dram, c->local_bytes, c->intensity,
         c->t_memory, c->t_compute, c->t_launch, c->t_pred,
         cli_bound_name(c->bound), k->barriers, k->cached_bytes, k->fma_gflops,
         k->t_fma, k->t_exp2, k->t_cache, k->t_local, k->t_barrier, k->t_core,
         k->t_data, k->t_busy, sep);
}

/* A kernel's in-core term, in us. */
static void print_core_row(const char *kernel, const clattn_core *k,
                           double t_memory, double t_launch) {
  printf("  %-18s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f "
         "%9.1f\n",
         kernel, k->t_fma * 1e6, k->t_exp2 * 1e6, k->t_cache * 1e6,
         k->t_local * 1e6, t_memory * 1e6, k->t_core * 1e6, k->t_data * 1e6,
         k->t_barrier * 1e6, k->t_busy * 1e6, t_launch * 1e6);
}

int cli_params_given(const clattn_params *p) {
  return p->variant || p->rows || p->keys || p->wg || p->splits ||
         p->prefetch || p->scheme || p->text != NULL;
}

void cli_print_params_json(const char *text) {
  int n = 0;
  for (const char *s = text; *s;) {
    int used = 0, value = 0;
    char name[32];
    if (sscanf(s, " %31[a-z_0-9-]=%d%n", name, &value, &used) != 2)
      break;
    printf("%s\"%s\": %d", n++ ? ", " : "", name, value);
    s += used;
  }
}

void cli_print_prediction(const char *what, const clattn_profile *p,
                          const clattn_prediction *pr, int json) {
  if (json) {
    printf("{\n  \"call\": \"%s\",\n  \"profile\": \"%s\",\n  \"source\": "
           "\"%s\",\n  \"ridge\": %.6g,\n  \"params\": {",
           what, p->name, cli_profile_source(p->source), pr->ridge);
    cli_print_params_json(pr->params);
    printf("},\n  \"kernels\": [\n");
    for (int i = 0; i < pr->n_kernels; i++)
      cli_print_cost_json(&pr->kernel[i], &pr->core[i],
                          i + 1 < pr->n_kernels ? "," : "");
    printf("  ],\n  \"total\":\n");
    cli_print_cost_json(&pr->total, &pr->core_total, "");
    printf("}\n");
    return;
  }
  printf("%s on %s (%s profile)\n", what, p->name,
         cli_profile_source(p->source));
  printf("  ceilings: read %.1f GB/s, copy %.1f GB/s, FP32 %.1f GFLOP/s, "
         "cache %.1f MiB, launch %.1f us; ridge %.2f FLOP/B\n",
         p->bw_read_gbs, p->bw_copy_gbs, p->fp32_gflops,
         (double)p->cache_bytes / 1048576.0,
         p->launch_call_us > 0        ? p->launch_call_us
         : p->launch_pipelined_us > 0 ? p->launch_pipelined_us
                                      : p->launch_us,
         pr->ridge);
  printf("  params: %s\n", pr->params);
  printf("  %-18s %3s %9s %8s %9s %9s %9s %9s %7s %10s %10s %10s  %s\n",
         "kernel", "n", "GFLOP", "Mexp2", "MiB read", "MiB wr", "MiB comp",
         "MiB DRAM", "FLOP/B", "t_mem us", "t_comp us", "t_pred us", "bound");
  for (int i = 0; i < pr->n_kernels; i++)
    print_cost_row(&pr->kernel[i]);
  print_cost_row(&pr->total);
  printf("  in-core term (us): exp2 %.2f G/s, cached loads %.1f GB/s, local "
         "%.1f GB/s, barrier %.1f ns; busy = max(core, data) + %.2f x "
         "min(core, memory) + barrier\n",
         p->exp2_gops, p->cache_gbs, p->local_gbs, p->barrier_ns, p->unhidden);
  printf("  %-18s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "kernel", "fma",
         "exp2", "cached", "local", "memory", "core", "data", "barrier", "busy",
         "launch");
  for (int i = 0; i < pr->n_kernels; i++)
    print_core_row(pr->kernel[i].kernel, &pr->core[i], pr->kernel[i].t_memory,
                   pr->kernel[i].t_launch);
  print_core_row("total", &pr->core_total, pr->total.t_memory,
                 pr->total.t_launch);
  if (p->source == CLATTN_PROFILE_REPORTED)
    printf("  (no measured ceilings: run 'clattn probe' to store them; "
           "times are 0)\n");
}

int cli_shape_defaults(model_opts *o, int need_seq) {
  if (!o->heads || !o->head_dim || (need_seq && !o->seq)) {
    cli_err("SHAPE needs --heads, --head-dim%s", need_seq ? " and --seq" : "");
    return CLI_USAGE;
  }
  if (!o->batch)
    o->batch = 1;
  if (!o->kv_heads)
    o->kv_heads = o->heads;
  if (!o->head_dim_v)
    o->head_dim_v = o->head_dim;
  if (!o->kv_seq)
    o->kv_seq = o->seq ? o->seq : 1;
  return 0;
}

static int model_call(const char *kind, model_opts *o) {
  clattn_profile prof = {.size = sizeof(clattn_profile)};
  clattn_prediction pr = {.size = sizeof(clattn_prediction)};
  clattn_status st;
  char what[640];
  int rc;
  const int fam = cli_family(kind);
  if (fam >= 0) {
    char shape[512];
    const int caller = cli_params_given(&o->params);
    if ((rc = cli_shape_text(o, fam, shape, sizeof shape)) ||
        (rc = cli_model_profile(o, &prof)))
      return rc;
    o->params.size = sizeof o->params; /* the flags fill its fields */
    st = clattn_model_shape(clattn_family_name(fam), shape,
                            caller ? &o->params : NULL, &prof, &pr);
    snprintf(what, sizeof what, "%s %s", kind, shape);
  } else {
    if ((rc = cli_shape_defaults(o, 1)))
      return rc;
    if (!o->d_model)
      return cli_usage_error("model layer", "--d-model is required");
    const clattn_layer_desc d = {sizeof(clattn_layer_desc),
                                 o->d_model,
                                 o->heads,
                                 o->kv_heads,
                                 o->head_dim,
                                 o->head_dim_v,
                                 0.0f};
    if ((rc = cli_model_profile(o, &prof)))
      return rc;
    st = clattn_model_layer(&d, o->batch, o->seq, o->cache_len, o->causal,
                            &prof, &pr);
    snprintf(what, sizeof what,
             "layer b=%d n=%d cache=%d d_model=%d h=%d h_kv=%d k=%d v=%d f32",
             o->batch, o->seq, o->cache_len, o->d_model, o->heads, o->kv_heads,
             o->head_dim, o->head_dim_v);
  }
  if (st) {
    cli_err("model: %s: %s", clattn_status_str(st), pr.errmsg);
    return st == CLATTN_ERR_SHAPE || st == CLATTN_ERR_INVALID_ARG ? CLI_USAGE
                                                                  : CLI_FAIL;
  }
  cli_print_prediction(what, &prof, &pr, o->json);
  return CLI_OK;
}

static int model_profiles(void) {
  printf("%-52s %-7s %5s %6s %9s %10s %10s %8s\n", "datasheet profile",
         "vendor", "CUs", "MHz", "BW GB/s", "FP32 GF/s", "FP16 GF/s",
         "LLC MiB");
  for (int i = 0; i < clattn_datasheet_count(); i++) {
    clattn_profile p = {.size = sizeof(clattn_profile)};
    if (clattn_datasheet(i, &p) != CLATTN_OK)
      continue;
    printf("%-52s %-7s %5u %6u %9.1f %10.0f %10.0f %8.1f\n", p.name, p.vendor,
           p.compute_units, p.clock_mhz, p.bw_read_gbs, p.fp32_gflops,
           p.fp16_gflops, (double)p.cache_bytes / 1048576.0);
  }
  return CLI_OK;
}

/* The subcommand a word names, its scope bit; 0 for none. */
static unsigned model_scope(const char *kind) {
  return cli_hh_variant(kind)          ? M_HH
         : !strcmp(kind, "switchhead") ? M_SH
         : cli_family(kind) >= 0       ? M_FAM
         : !strcmp(kind, "layer")      ? M_LAYER
         : !strcmp(kind, "profiles")   ? M_PROF
         : !strcmp(kind, "mqa")        ? M_MQA
         : !strcmp(kind, "check")      ? M_CHECK
                                       : 0;
}

int cli_model(int argc, char **argv) {
  if (argc < 1)
    return model_usage_err("missing what (a family, layer, mqa, "
                           "switchhead, profiles or check)");
  model_opts o;
  memset(&o, 0, sizeof o);
  o.dtype = CLATTN_F32;
  /* `clattn model --check` is `clattn model check` */
  const char *kind = !strcmp(argv[0], "--check") ? "check" : argv[0];
  if (!strcmp(kind, "--help") || !strcmp(kind, "-h") || !strcmp(kind, "help")) {
    fputs(model_usage, stdout);
    fputs("(a subcommand's options: clattn model WHAT --help)\n", stdout);
    return CLI_OK;
  }
  const unsigned scope = model_scope(kind);
  if (!scope)
    return cli_usage_error("model",
                           "unknown '%.40s' (a family, layer, mqa, "
                           "switchhead, profiles or check)",
                           kind);
  cli_option table[CLI_MAX_OPTIONS];
  const int fam = scope == M_FAM ? cli_family(kind) : -1;
  const int n = cli_model_options(scope, fam, 0, table, CLI_MAX_OPTIONS);
  char name[64];
  snprintf(name, sizeof name, "model %s", kind);
  const cli_command cmd = {name, model_usage, table, n, scope, 0, NULL};
  cli_args a;
  if (n < 0)
    return cli_usage_error(name, "too many shape keys");
  int rc = cli_parse_cmd(&cmd, argc - 1, argv + 1, &o, &a);
  if (rc)
    return rc < 0 ? CLI_OK : rc;
  if (o.profile && o.device)
    return cli_usage_error(name, "--profile and --device are exclusive");
  const int hh = cli_hh_variant(kind);
  if (hh)
    return cli_model_hh(&o, (clattn_hh_variant)hh);
  switch (scope) {
  case M_SH:
    return cli_model_sh(&o);
  case M_FAM:
  case M_LAYER:
    return model_call(kind, &o);
  case M_PROF:
    return model_profiles();
  case M_MQA:
    return cli_model_mqa(&o);
  default:
    return cli_model_check(&o);
  }
}
