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
 *                      [--probe] */
#include "cli.h"
#include "model.h"

#include <errno.h>
#include <limits.h>
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
  "         [--quick] [--probe]\n"
  "SHAPE: --batch B --seq N [--kv-seq M] --heads H [--kv-heads G]\n"
  "  --head-dim K [--head-dim-v V]; decode: --kv-seq M is the cache\n"
  "  length; layer: --d-model D [--cache-len P] (decode: --seq 1);\n"
  "  any other key of the family's shape as --KEY V (talking-heads:\n"
  "  --heads-k A --heads-v U; see 'clattn families')\n"
  "OPTIONS: --dtype f32|f16|bf16, --causal, --variant 1|2, --rows R,\n"
  "  --keys K, --wg W, --splits S, --prefetch 1|2 (off|on), --scheme 1|2\n"
  "  (talking-heads: one pass|two passes) (default: what the library\n"
  "  picks),\n"
  "  --profile NAME (a datasheet GPU, see 'clattn model profiles') or\n"
  "  --device D (a present device: its measured profile from the database\n"
  "  when 'clattn probe' stored one, else what it reports), --db PATH,\n"
  "  --json\n"
  "check: --probe measures the device's ceilings first (as 'clattn probe',\n"
  "  stored unless --no-store or --quick) and predicts from them, so the\n"
  "  predictions and the measurements come from one run; each decode\n"
  "  and append pass (at least 32 calls in a stream, cold caches) follows\n"
  "  a copy (clattn_copy_ref) and is predicted at that copy's bandwidth\n"
  "  (column err@prof: at the stored profile's)\n";

static int model_usage_err(const char *why) {
  if (why)
    cli_err("%s", why);
  fputs(model_usage, stderr);
  return CLI_USAGE;
}

static int int_arg(const char *name, const char *v, int lo, int *out) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > INT_MAX) {
    cli_err("--%s: expected an integer >= %d, got '%s'", name, lo, v);
    return -1;
  }
  *out = (int)x;
  return 0;
}

int cli_model_parse(int argc, char **argv, model_opts *o) {
  static const struct {
    const char *name;
    size_t off;
    int lo;
  } ints[] = {
      {"batch", offsetof(model_opts, batch), 1},
      {"seq", offsetof(model_opts, seq), 1},
      {"kv-seq", offsetof(model_opts, kv_seq), 1},
      {"heads", offsetof(model_opts, heads), 1},
      {"kv-heads", offsetof(model_opts, kv_heads), 1},
      {"head-dim", offsetof(model_opts, head_dim), 1},
      {"head-dim-v", offsetof(model_opts, head_dim_v), 1},
      {"d-model", offsetof(model_opts, d_model), 1},
      {"cache-len", offsetof(model_opts, cache_len), 0},
      {"max-len", offsetof(model_opts, max_len), 1},
      {"variant", offsetof(model_opts, params.variant), 0},
      {"rows", offsetof(model_opts, params.rows), 0},
      {"keys", offsetof(model_opts, params.keys), 0},
      {"wg", offsetof(model_opts, params.wg), 0},
      {"splits", offsetof(model_opts, params.splits), 0},
      {"prefetch", offsetof(model_opts, params.prefetch), 0},
      {"scheme", offsetof(model_opts, params.scheme), 0},
  };
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strncmp(a, "--", 2) != 0)
      return model_usage_err("unexpected argument");
    a += 2;
    int *flag = !strcmp(a, "json")        ? &o->json
                : !strcmp(a, "no-device") ? &o->no_device
                : !strcmp(a, "no-store")  ? &o->no_store
                : !strcmp(a, "quick")     ? &o->quick
                : !strcmp(a, "probe")     ? &o->probe
                : !strcmp(a, "causal")    ? &o->causal
                : !strcmp(a, "paper")     ? &o->paper
                                          : NULL;
    if (flag) {
      *flag = 1;
      continue;
    }
    if (i + 1 >= argc) {
      cli_err("--%s needs a value", a);
      return model_usage_err(NULL);
    }
    const char *v = argv[++i];
    if (!strcmp(a, "profile")) {
      o->profile = v;
    } else if (!strcmp(a, "device")) {
      o->device = v;
    } else if (!strcmp(a, "db")) {
      o->db = v;
    } else if (!strcmp(a, "dtype")) {
      if (!strcmp(v, "f32"))
        o->dtype = CLATTN_F32;
      else if (!strcmp(v, "f16"))
        o->dtype = CLATTN_F16;
      else if (!strcmp(v, "bf16"))
        o->dtype = CLATTN_BF16;
      else
        return model_usage_err("--dtype: expected f32, f16 or bf16");
    } else {
      size_t k = 0, n = sizeof ints / sizeof ints[0];
      while (k < n && strcmp(a, ints[k].name) != 0)
        k++;
      if (k == n) {
        /* a family's own shape key: cli_shape_text checks the name */
        size_t used = strlen(o->shape_extra);
        int w = snprintf(o->shape_extra + used, sizeof o->shape_extra - used,
                         "%s%s=%s", used ? " " : "", a, v);
        if (w < 0 || (size_t)w >= sizeof o->shape_extra - used ||
            strpbrk(a, "= ") || strpbrk(v, "= ")) {
          cli_err("option '--%s %s' is malformed or too long", a, v);
          return model_usage_err(NULL);
        }
        continue;
      }
      if (int_arg(a, v, ints[k].lo, (int *)((char *)o + ints[k].off)))
        return model_usage_err(NULL);
    }
  }
  if (o->profile && o->device)
    return model_usage_err("--profile and --device are exclusive");
  return 0;
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
  if (clattn_db_open(dbpath, &db) != CLATTN_OK) {
    cli_err("note: no tuning database (%s); using the device's reported "
            "profile", clattn_db_errmsg(NULL));
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
              "profiles')", o->profile);
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
         c->intensity, c->t_memory * 1e6, c->t_compute * 1e6,
         c->t_pred * 1e6, cli_bound_name(c->bound));
}

void cli_print_cost_json(const clattn_cost *c, const char *sep) {
  printf("    {\"kernel\": \"%s\", \"launches\": %d, \"flops\": %.0f, "
         "\"softmax_ops\": %.0f, \"fma_issued\": %.0f, \"fma_spilled\": "
         "%.0f, \"exp2_issued\": %.0f, \"bytes_read\": %.0f, "
         "\"bytes_written\": %.0f, \"bytes_compulsory\": %.0f, "
         "\"bytes_dram\": %.0f, \"local_bytes\": %.0f, \"intensity\": "
         "%.6g, \"t_memory\": %.6g, \"t_compute\": %.6g, \"t_launch\": "
         "%.6g, \"t_pred\": %.6g, \"bound\": \"%s\"}%s\n",
         c->kernel, c->launches, c->flops, c->softmax_ops, c->fma_issued,
         c->fma_spilled, c->exp2_issued, c->bytes_read, c->bytes_written,
         c->bytes_compulsory, c->bytes_dram, c->local_bytes, c->intensity,
         c->t_memory, c->t_compute, c->t_launch, c->t_pred,
         cli_bound_name(c->bound), sep);
}

void cli_print_prediction(const char *what, const clattn_profile *p,
                          const clattn_prediction *pr, int json) {
  if (json) {
    printf("{\n  \"call\": \"%s\",\n  \"profile\": \"%s\",\n  \"source\": "
           "\"%s\",\n  \"ridge\": %.6g,\n  \"params\": {\"variant\": %d, "
           "\"rows\": %d, \"keys\": %d, \"wg\": %d, \"splits\": %d, "
           "\"prefetch\": %d, \"scheme\": %d},\n"
           "  \"kernels\": [\n",
           what, p->name, cli_profile_source(p->source), pr->ridge,
           pr->params.variant, pr->params.rows, pr->params.keys,
           pr->params.wg, pr->params.splits, pr->params.prefetch,
           pr->params.scheme);
    for (int i = 0; i < pr->n_kernels; i++)
      cli_print_cost_json(&pr->kernel[i], i + 1 < pr->n_kernels ? "," : "");
    printf("  ],\n  \"total\":\n");
    cli_print_cost_json(&pr->total, "");
    printf("}\n");
    return;
  }
  printf("%s on %s (%s profile)\n", what, p->name, cli_profile_source(p->source));
  printf("  ceilings: read %.1f GB/s, copy %.1f GB/s, FP32 %.1f GFLOP/s, "
         "cache %.1f MiB, launch %.1f us; ridge %.2f FLOP/B\n",
         p->bw_read_gbs, p->bw_copy_gbs, p->fp32_gflops,
         (double)p->cache_bytes / 1048576.0,
         p->launch_pipelined_us > 0 ? p->launch_pipelined_us : p->launch_us,
         pr->ridge);
  char params[160];
  clattn_params_format(&pr->params, params, sizeof params);
  printf("  params: %s\n", params);
  printf("  %-18s %3s %9s %8s %9s %9s %9s %9s %7s %10s %10s %10s  %s\n",
         "kernel", "n", "GFLOP", "Mexp2", "MiB read", "MiB wr", "MiB comp",
         "MiB DRAM", "FLOP/B", "t_mem us", "t_comp us", "t_pred us",
         "bound");
  for (int i = 0; i < pr->n_kernels; i++)
    print_cost_row(&pr->kernel[i]);
  print_cost_row(&pr->total);
  if (p->source == CLATTN_PROFILE_REPORTED)
    printf("  (no measured ceilings: run 'clattn probe' to store them; "
           "times are 0)\n");
}

int cli_shape_defaults(model_opts *o, int need_seq) {
  if (!o->heads || !o->head_dim || (need_seq && !o->seq))
    return model_usage_err("SHAPE needs --heads, --head-dim and --seq");
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
  clattn_profile prof;
  clattn_prediction pr;
  clattn_status st;
  char what[640];
  int rc;
  const int fam = cli_family(kind);
  if (o->max_len)
    return model_usage_err("--max-len is the Super layer's (clattn model "
                           "super)");
  if (fam >= 0) {
    char shape[512];
    const int caller = o->params.variant || o->params.rows ||
                       o->params.keys || o->params.wg || o->params.splits ||
                       o->params.prefetch || o->params.scheme;
    if ((rc = cli_shape_text(o, fam, shape, sizeof shape)) ||
        (rc = cli_model_profile(o, &prof)))
      return rc;
    st = clattn_model_shape(clattn_family_name(fam), shape,
                            caller ? &o->params : NULL, &prof, &pr);
    snprintf(what, sizeof what, "%s %s", kind, shape);
  } else {
    if ((rc = cli_shape_defaults(o, 1)))
      return rc;
    if (o->shape_extra[0]) {
      cli_err("unknown option(s) for 'clattn model layer': %s", o->shape_extra);
      return model_usage_err(NULL);
    }
    if (!o->d_model)
      return model_usage_err("model layer needs --d-model");
    const clattn_layer_desc d = {o->d_model, o->heads, o->kv_heads,
                                 o->head_dim, o->head_dim_v, 0.0f};
    if ((rc = cli_model_profile(o, &prof)))
      return rc;
    st = clattn_model_layer(&d, o->batch, o->seq, o->cache_len, o->causal,
                            &prof, &pr);
    snprintf(what, sizeof what,
             "layer b=%d n=%d cache=%d d_model=%d h=%d h_kv=%d k=%d v=%d f32",
             o->batch, o->seq, o->cache_len, o->d_model, o->heads,
             o->kv_heads, o->head_dim, o->head_dim_v);
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
    clattn_profile p;
    if (clattn_datasheet(i, &p) != CLATTN_OK)
      continue;
    printf("%-52s %-7s %5u %6u %9.1f %10.0f %10.0f %8.1f\n", p.name,
           p.vendor, p.compute_units, p.clock_mhz, p.bw_read_gbs,
           p.fp32_gflops, p.fp16_gflops, (double)p.cache_bytes / 1048576.0);
  }
  return CLI_OK;
}

int cli_model(int argc, char **argv) {
  if (argc < 1)
    return model_usage_err("model: missing what (attention, decode, layer, "
                           "mqa, profiles or check)");
  model_opts o;
  memset(&o, 0, sizeof o);
  o.dtype = CLATTN_F32;
  /* `clattn model --check` is `clattn model check` */
  const char *kind = !strcmp(argv[0], "--check") ? "check" : argv[0];
  if (!strcmp(kind, "--help") || !strcmp(kind, "help")) {
    fputs(model_usage, stdout);
    return CLI_OK;
  }
  int rc = cli_model_parse(argc - 1, argv + 1, &o);
  if (rc)
    return rc;
  const int hh = cli_hh_variant(kind);
  if (hh)
    return cli_model_hh(&o, (clattn_hh_variant)hh);
  if (!strcmp(kind, "switchhead"))
    return cli_model_sh(&o);
  if (cli_family(kind) >= 0 || !strcmp(kind, "layer"))
    return model_call(kind, &o);
  if (!strcmp(kind, "profiles"))
    return model_profiles();
  if (!strcmp(kind, "mqa"))
    return cli_model_mqa(&o);
  if (!strcmp(kind, "check"))
    return cli_model_check(&o);
  cli_err("model: unknown '%s'", kind);
  return model_usage_err(NULL);
}
