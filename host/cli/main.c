/* main.c - the clattn command: parse the command line and dispatch.
 *
 *   clattn devices [--verbose]
 *   clattn run attention (--in DIR | --random SHAPE...) [options]
 *   clattn run gqa       (--in DIR | --random SHAPE...) [options]
 *   clattn run talking-heads (--in DIR | --random SHAPE...) [options]
 *   clattn run optimised|efficient|super (--in DIR | --random SHAPE...)
 *   clattn run switchhead (--in DIR | --random SHAPE...) --heads H --topk K
 *   clattn probe [--device D] [--json] [--thorough] [--db PATH] [--no-store]
 *   clattn tune ... / clattn explain ... (tune.c)
 *   clattn db path | list [...] | export FILE | import FILE  [--db PATH]
 *
 * Exit status: 0 success, 1 library/OpenCL/output failure, 2 usage error or
 * bad input file, 3 --check error above the tolerance. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CLATTN_CLI_VERSION /* set by meson from the project version */
#define CLATTN_CLI_VERSION "0.1.0"
#endif

static const char usage_text[] =
  "usage: clattn devices [--verbose]\n"
  "       clattn families\n"
  "       clattn run attention (--in DIR | --random SHAPE) [OPTIONS]\n"
  "       clattn run gqa (--in DIR | --random SHAPE) [OPTIONS]\n"
  "       clattn run talking-heads (--in DIR | --random SHAPE) [OPTIONS]\n"
  "       clattn run optimised|efficient|super (--in DIR | --random SHAPE)\n"
  "                  [OPTIONS]\n"
  "       clattn run switchhead (--in DIR | --random SHAPE) --heads H\n"
  "                  --topk K [OPTIONS]\n"
  "       clattn model FAMILY|layer|mqa|switchhead|profiles|check ...\n"
  "         (roofline model; 'clattn model help' for its options)\n"
  "       clattn probe [--device SEL] [--json] [--thorough | --quick]\n"
  "                    [--db PATH] [--no-store]\n"
  "       clattn tune [FAMILY|gemm|all] [SHAPE] [--budget T] ...\n"
  "       clattn explain FAMILY SHAPE [--db PATH]\n"
  "         (autotuner; 'clattn tune help' for its options)\n"
  "       clattn db path | list [--kernel K] [--class C] [--all-devices]\n"
  "                 [--json] | export FILE | import FILE  [--db PATH]\n"
  "         (tuning database; 'clattn db help' for details)\n"
  "       clattn help | --help | --version\n"
  "\n"
  "run attention: DIR holds q.npy [b,n,h_q,k], k.npy [b,m,h_kv,k],\n"
  "  v.npy [b,m,h_kv,v] ('<f4' or '<f2', all alike) and optionally\n"
  "  kv_lens.npy ('<i4' [b]); writes --out FILE.npy [b,n,h_q,v].\n"
  "  SHAPE: --batch B --seq N [--kv-seq M] --heads H [--kv-heads G]\n"
  "         --head-dim K [--head-dim-v V] [--dtype f32|f16]\n"
  "  --causal, --scale S (0: 1/sqrt(k)), --layout bshd|bhsd (device\n"
  "  layout; files are always [b,seq,heads,dim])\n"
  "run gqa: DIR holds x.npy [b,n,d], w_q.npy [d,H*k], w_k.npy [d,G*k],\n"
  "  w_v.npy [d,G*v], w_o.npy [H*v,d] ('<f4'); --heads H is required,\n"
  "  --kv-heads G is derived (checked if given); writes [b,n,d].\n"
  "  SHAPE: --batch B --seq N --d-model D --heads H [--kv-heads G]\n"
  "         --head-dim K [--head-dim-v V]\n"
  "  --causal, --scale S, --decode-from P (prefill P positions into a KV\n"
  "  cache, then decode the rest one at a time; implies --causal)\n"
  "run talking-heads: DIR holds x.npy [b,n,d] or [n,d], w_q.npy and\n"
  "  w_k.npy [d,Hk*k], w_v.npy [d,Hv*v], w_o.npy [Hv*v,d], p_l.npy\n"
  "  [Hk,H], p_w.npy [H,Hv] ('<f4'); head counts from p_l and p_w, head\n"
  "  dims from w_q and w_v; writes y with x's shape.\n"
  "  SHAPE: --batch B --seq N --d-model D --heads-k Hk --heads H\n"
  "         --heads-v Hv --head-dim K [--head-dim-v V]\n"
  "  --causal, --scale S, --decode-from P (as for run gqa)\n"
  "run optimised|efficient|super (Hosseini & Hosseini layers, head i\n"
  "  reading x's channel slice i): DIR holds x.npy [b,n,d] or [n,d],\n"
  "  w_q.npy [d,d], w_k.npy [d,d] (optimised), w_a.npy [l,l] (super:\n"
  "  l = max_len >= n), w_o.npy [d,d] ('<f4'); --heads H is required;\n"
  "  writes y with x's shape.\n"
  "  SHAPE: --batch B --seq N --d-model D --heads H [--max-len L]\n"
  "         (super; default N)\n"
  "  --causal, --scale S, --decode-from P (as for run gqa)\n"
  "run switchhead (SwitchHead: V and output mixtures of E experts a head,\n"
  "  the top K by sigmoid gates): DIR holds x.npy [b,n,d] or [n,d],\n"
  "  w_q.npy and w_k.npy [d,H*k], w_v.npy [H,E,d,k] or [H*E,d,k], w_o.npy\n"
  "  [H,E,k,d] or [H*E,k,d], w_s.npy and w_d.npy [d,H*E] (w_s optional\n"
  "  with E = 1) ('<f4'); --heads H and --topk K are required; head_dim\n"
  "  and E come from the files; writes y with x's shape.\n"
  "  SHAPE: --batch B --seq N --d-model D --heads H --head-dim K\n"
  "         --experts E\n"
  "  --causal, --scale S, --decode-from P (as for run gqa)\n"
  "common: --out FILE.npy (required with --in), --device SEL ('P:D', 'D'\n"
  "  or a name substring; default $CLATTN_DEVICE), --check (compare with\n"
  "  the reference; fails above rel. error 1e-4 for f32, 1e-3 for f16),\n"
  "  --seed S, --save-inputs DIR (with --random), --repeat N,\n"
  "  --verbose\n"
  "probe: measure the device's ceilings (memory bandwidth per vector\n"
  "  width, FMA peak, local memory, transfers, launch latency; under 30 s\n"
  "  by default, longer with --thorough) and store them in the tuning\n"
  "  database (--db PATH, default $CLATTN_DB, else\n"
  "  $XDG_DATA_HOME/clattn/tuning.db or ~/.local/share/clattn/tuning.db)\n"
  "  unless --no-store.  --json prints JSON.  --quick: small buffers and\n"
  "  short timings, a smoke test only (implies --no-store).\n"
  "families: the kernel families (FAMILY above; `attention` names\n"
  "  prefill), their calls and the shape keys their SHAPE may give.\n"
  "exit status: 0 ok, 1 library/OpenCL failure, 2 usage or input error,\n"
  "  3 --check failed\n";

static int usage(const char *why)
{
  if (why)
    cli_err("%s", why);
  fputs(usage_text, stderr);
  return CLI_USAGE;
}

/* Which command accepts an option. */
enum { ATT = 1, GQA = 2, DEV = 4, PRB = 8, TH = 16, HHO = 32, HHE = 64,
       HHS = 128, HH = HHO | HHE | HHS, SH = 256 };

enum opt_id {
  O_IN, O_OUT, O_DEVICE, O_SAVE, O_CAUSAL, O_CHECK, O_RANDOM, O_VERBOSE,
  O_LAYOUT, O_DTYPE, O_SCALE, O_BATCH, O_SEQ, O_KV_SEQ, O_HEADS, O_KV_HEADS,
  O_HEAD_DIM, O_HEAD_DIM_V, O_D_MODEL, O_HEADS_K, O_HEADS_V, O_MAX_LEN,
  O_EXPERTS, O_TOPK, O_DECODE_FROM,
  O_REPEAT, O_SEED,
  O_JSON, O_THOROUGH, O_QUICK, O_DB, O_NO_STORE,
  O_COUNT
};

static const struct opt {
  const char *name;
  int has_arg, cmds;
} opts[O_COUNT] = {
  [O_IN] = {"in", 1, ATT | GQA | TH | HH | SH},
  [O_OUT] = {"out", 1, ATT | GQA | TH | HH | SH},
  [O_DEVICE] = {"device", 1, ATT | GQA | TH | HH | SH | PRB},
  [O_SAVE] = {"save-inputs", 1, ATT | GQA | TH | HH | SH},
  [O_CAUSAL] = {"causal", 0, ATT | GQA | TH | HH | SH},
  [O_CHECK] = {"check", 0, ATT | GQA | TH | HH | SH},
  [O_RANDOM] = {"random", 0, ATT | GQA | TH | HH | SH},
  [O_VERBOSE] = {"verbose", 0, ATT | GQA | TH | HH | SH | DEV},
  [O_LAYOUT] = {"layout", 1, ATT},
  [O_DTYPE] = {"dtype", 1, ATT},
  [O_SCALE] = {"scale", 1, ATT | GQA | TH | HH | SH},
  [O_BATCH] = {"batch", 1, ATT | GQA | TH | HH | SH},
  [O_SEQ] = {"seq", 1, ATT | GQA | TH | HH | SH},
  [O_KV_SEQ] = {"kv-seq", 1, ATT},
  [O_HEADS] = {"heads", 1, ATT | GQA | TH | HH | SH},
  [O_KV_HEADS] = {"kv-heads", 1, ATT | GQA},
  [O_HEAD_DIM] = {"head-dim", 1, ATT | GQA | TH | SH},
  [O_HEAD_DIM_V] = {"head-dim-v", 1, ATT | GQA | TH},
  [O_D_MODEL] = {"d-model", 1, GQA | TH | HH | SH},
  [O_HEADS_K] = {"heads-k", 1, TH},
  [O_HEADS_V] = {"heads-v", 1, TH},
  [O_MAX_LEN] = {"max-len", 1, HHS},
  [O_EXPERTS] = {"experts", 1, SH},
  [O_TOPK] = {"topk", 1, SH},
  [O_DECODE_FROM] = {"decode-from", 1, GQA | TH | HH | SH},
  [O_REPEAT] = {"repeat", 1, ATT | GQA | TH | HH | SH},
  [O_SEED] = {"seed", 1, ATT | GQA | TH | HH | SH},
  [O_JSON] = {"json", 0, PRB},
  [O_THOROUGH] = {"thorough", 0, PRB},
  [O_QUICK] = {"quick", 0, PRB},
  [O_DB] = {"db", 1, PRB},
  [O_NO_STORE] = {"no-store", 0, PRB},
};

/* Strict integer in [lo, hi]; -1 on error (message printed). */
static int parse_int(const char *name, const char *s, long lo, long hi,
                     int *out)
{
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    cli_err("--%s: expected an integer in [%ld, %ld], got '%s'", name, lo,
            hi, s);
    return -1;
  }
  *out = (int)v;
  return 0;
}

/* Apply one option; returns 0 or CLI_USAGE. */
static int apply(cli_opts *o, enum opt_id id, const char *v, int *given)
{
  const char *name = opts[id].name;
  char *end;
  given[id] = 1;
  switch (id) {
  case O_IN: o->in = v; return 0;
  case O_OUT: o->out = v; return 0;
  case O_DEVICE: o->device = v; return 0;
  case O_SAVE: o->save_inputs = v; return 0;
  case O_CAUSAL: o->causal = 1; return 0;
  case O_CHECK: o->check = 1; return 0;
  case O_RANDOM: o->random = 1; return 0;
  case O_VERBOSE: o->verbose = 1; return 0;
  case O_JSON: o->json = 1; return 0;
  case O_THOROUGH: o->thorough = 1; return 0;
  case O_QUICK: o->quick = 1; return 0;
  case O_DB: o->db = v; return 0;
  case O_NO_STORE: o->no_store = 1; return 0;
  case O_LAYOUT:
    if (!strcmp(v, "bshd"))
      o->layout = CLATTN_BSHD;
    else if (!strcmp(v, "bhsd"))
      o->layout = CLATTN_BHSD;
    else
      return usage("--layout: expected bshd or bhsd");
    return 0;
  case O_DTYPE:
    if (!strcmp(v, "f32"))
      o->dtype = CLATTN_F32;
    else if (!strcmp(v, "f16"))
      o->dtype = CLATTN_F16;
    else
      return usage("--dtype: expected f32 or f16");
    return 0;
  case O_SCALE:
    errno = 0;
    o->scale = strtof(v, &end);
    if (errno || end == v || *end || !(o->scale >= 0))
      return usage("--scale: expected a number >= 0");
    return 0;
  case O_SEED:
    errno = 0;
    o->seed = strtoull(v, &end, 0);
    if (errno || end == v || *end || *v == '-')
      return usage("--seed: expected a non-negative integer");
    return 0;
  case O_DECODE_FROM:
    return parse_int(name, v, 0, INT_MAX, &o->decode_from) ? usage(NULL)
                                                           : 0;
  default: break;
  }
  int *dst = id == O_BATCH ? &o->batch : id == O_SEQ ? &o->seq
           : id == O_KV_SEQ ? &o->kv_seq : id == O_HEADS ? &o->heads
           : id == O_KV_HEADS ? &o->kv_heads : id == O_HEAD_DIM ? &o->head_dim
           : id == O_HEAD_DIM_V ? &o->head_dim_v : id == O_D_MODEL ? &o->d_model
           : id == O_HEADS_K ? &o->heads_k : id == O_HEADS_V ? &o->heads_v
           : id == O_MAX_LEN ? &o->max_len : id == O_EXPERTS ? &o->experts
           : id == O_TOPK ? &o->topk : &o->repeat;
  return parse_int(name, v, 1, INT_MAX, dst) ? usage(NULL) : 0;
}

static int parse(int argc, char **argv, int cmd, cli_opts *o, int *given)
{
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *val = NULL;
    if (!strcmp(a, "-v"))
      a = "--verbose";
    if (strncmp(a, "--", 2) != 0) {
      cli_err("unexpected argument '%s'", a);
      return usage(NULL);
    }
    a += 2;
    size_t n = strcspn(a, "=");
    int id = -1;
    for (int j = 0; j < O_COUNT; j++)
      if (strlen(opts[j].name) == n && !strncmp(a, opts[j].name, n))
        id = j;
    if (id < 0 || !(opts[id].cmds & cmd)) {
      cli_err("unknown option '--%.*s' for this command", (int)n, a);
      return usage(NULL);
    }
    if (a[n] == '=')
      val = a + n + 1;
    if (opts[id].has_arg && !val) {
      if (i + 1 >= argc) {
        cli_err("--%s needs a value", opts[id].name);
        return usage(NULL);
      }
      val = argv[++i];
    } else if (!opts[id].has_arg && val) {
      cli_err("--%s takes no value", opts[id].name);
      return usage(NULL);
    }
    if (given[id]) {
      cli_err("--%s given twice", opts[id].name);
      return usage(NULL);
    }
    int rc = apply(o, (enum opt_id)id, val, given);
    if (rc)
      return rc;
  }
  return 0;
}

/* Cross-option rules shared by the run commands. */
static int validate(int cmd, cli_opts *o, const int *given)
{
  static const enum opt_id shape_opts[] = {
    O_BATCH, O_SEQ, O_KV_SEQ, O_KV_HEADS, O_HEAD_DIM, O_HEAD_DIM_V,
    O_D_MODEL, O_DTYPE, O_SEED, O_SAVE, O_HEADS, O_HEADS_K, O_HEADS_V,
    O_MAX_LEN, O_EXPERTS};
  if (o->in && o->random)
    return usage("--in and --random are exclusive");
  if (!o->in && !o->random)
    return usage("one of --in DIR or --random is required");
  if (o->in) {
    /* gqa takes --heads/--kv-heads with --in too, the Hosseini layers
     * --heads; nothing else */
    size_t n = sizeof shape_opts / sizeof shape_opts[0];
    for (size_t i = 0; i < n; i++) {
      enum opt_id id = shape_opts[i];
      if (cmd == GQA && (id == O_HEADS || id == O_KV_HEADS))
        continue;
      if ((cmd & (HH | SH)) && id == O_HEADS)
        continue;
      if (given[id]) {
        cli_err("--%s is only valid with --random", opts[id].name);
        return usage(NULL);
      }
    }
    if (!o->out)
      return usage("--out FILE.npy is required with --in");
    if (cmd == GQA && !given[O_HEADS])
      return usage("run gqa: --heads H is required");
    if ((cmd & HH) && !given[O_HEADS])
      return usage("run optimised|efficient|super: --heads H is required");
    if (cmd == SH && (!given[O_HEADS] || !given[O_TOPK]))
      return usage("run switchhead: --heads H and --topk K are required");
    return 0;
  }
  if (cmd == SH) {
    if (!given[O_SEQ] || !given[O_D_MODEL] || !given[O_HEADS] ||
        !given[O_HEAD_DIM] || !given[O_EXPERTS] || !given[O_TOPK])
      return usage("--random needs --seq, --d-model, --heads, --head-dim, "
                   "--experts, --topk");
    if (!given[O_BATCH])
      o->batch = 1;
    /* x [b, n, d], w_q [d, H*k] and the experts' w_v [H, E, d, k] */
    double x = (double)o->batch * o->seq * o->d_model;
    double w = (double)o->d_model * o->heads * o->head_dim * o->experts;
    if ((x > w ? x : w) > 17179869184.0)
      return usage("--random: tensors of more than 2^34 elements");
    return 0;
  }
  if (cmd & HH) {
    if (!given[O_SEQ] || !given[O_D_MODEL] || !given[O_HEADS])
      return usage("--random needs --seq, --d-model, --heads");
    if (!given[O_BATCH])
      o->batch = 1;
    if (cmd == HHS && !given[O_MAX_LEN])
      o->max_len = o->seq;
    /* as below: x [b, n, d], the [d, d] weights and W_a [l, l] */
    double x = (double)o->batch * o->seq * o->d_model;
    double w = (double)o->d_model * o->d_model;
    double wa = (double)o->max_len * o->max_len;
    double big = x > w ? x : w;
    big = big > wa ? big : wa;
    if (big > 17179869184.0)
      return usage("--random: tensors of more than 2^34 elements");
    return 0;
  }
  if (cmd == TH && (!given[O_SEQ] || !given[O_D_MODEL] ||
                    !given[O_HEADS_K] || !given[O_HEADS] ||
                    !given[O_HEADS_V] || !given[O_HEAD_DIM]))
    return usage("--random needs --seq, --d-model, --heads-k, --heads, "
                 "--heads-v, --head-dim");
  if (!given[O_SEQ] || !given[O_HEADS] || !given[O_HEAD_DIM] ||
      (cmd == GQA && !given[O_D_MODEL]))
    return usage(cmd == GQA
                     ? "--random needs --seq, --d-model, --heads, --head-dim"
                     : "--random needs --seq, --heads, --head-dim");
  if (!given[O_BATCH])
    o->batch = 1;
  if (!given[O_KV_SEQ])
    o->kv_seq = o->seq;
  if (!given[O_KV_HEADS])
    o->kv_heads = o->heads;
  if (!given[O_HEAD_DIM_V])
    o->head_dim_v = o->head_dim;
  if (o->heads % o->kv_heads)
    return usage("--heads must be a multiple of --kv-heads");
  /* Refuse sizes whose element counts could overflow size_t arithmetic
   * (computed in double; 2^34 elements is already 64 GiB of float). */
  double hd = o->head_dim > o->head_dim_v ? o->head_dim : o->head_dim_v;
  double seq = o->seq > o->kv_seq ? o->seq : o->kv_seq;
  /* the widest projection's heads: query heads, or for talking-heads the
   * larger of key and value heads (the library checks the counts) */
  double heads = o->heads;
  if (cmd == TH)
    heads = o->heads_k > o->heads_v ? o->heads_k : o->heads_v;
  double big = (double)o->batch * seq * heads * hd;
  if (cmd != ATT) {
    double w = (double)o->d_model * heads * hd;
    double x = (double)o->batch * o->seq * o->d_model;
    big = big > w ? big : w;
    big = big > x ? big : x;
  }
  if (big > 17179869184.0)
    return usage("--random: tensors of more than 2^34 elements");
  return 0;
}

int main(int argc, char **argv)
{
  if (argc < 2)
    return usage("missing command");
  const char *c = argv[1];
  if (!strcmp(c, "--help") || !strcmp(c, "-h") || !strcmp(c, "help")) {
    fputs(usage_text, stdout);
    return CLI_OK;
  }
  if (!strcmp(c, "--version")) {
    printf("clattn %s (library %s)\n", CLATTN_CLI_VERSION, clattn_version());
    return CLI_OK;
  }

  cli_opts o;
  int given[O_COUNT] = {0};
  memset(&o, 0, sizeof o);
  o.layout = CLATTN_BSHD;
  o.dtype = CLATTN_F32;
  o.decode_from = -1;
  o.repeat = 1;
  o.seed = 1;

  if (!strcmp(c, "devices")) {
    int rc = parse(argc - 2, argv + 2, DEV, &o, given);
    return rc ? rc : cli_devices(o.verbose);
  }
  if (!strcmp(c, "families"))
    return argc > 2 ? usage("families takes no arguments") : cli_families();
  if (!strcmp(c, "model"))
    return cli_model(argc - 2, argv + 2);
  if (!strcmp(c, "tune"))
    return cli_tune(argc - 2, argv + 2);
  if (!strcmp(c, "explain"))
    return cli_explain(argc - 2, argv + 2);
  if (!strcmp(c, "db"))
    return cli_db(argc - 2, argv + 2);
  if (!strcmp(c, "probe")) {
    int rc = parse(argc - 2, argv + 2, PRB, &o, given);
    if (!rc && o.thorough && o.quick)
      rc = usage("--thorough and --quick are exclusive");
    return rc ? rc : cli_probe(&o);
  }
  if (strcmp(c, "run") != 0) {
    cli_err("unknown command '%s'", c);
    return usage(NULL);
  }
  if (argc < 3)
    return usage("run: missing kernel (attention, gqa, talking-heads, "
                 "optimised, efficient, super or switchhead)");
  const int hh = cli_hh_variant(argv[2]);
  int cmd = !strcmp(argv[2], "attention")       ? ATT
            : !strcmp(argv[2], "gqa")           ? GQA
            : !strcmp(argv[2], "talking-heads") ? TH
            : hh == CLATTN_HH_OPTIMISED         ? HHO
            : hh == CLATTN_HH_EFFICIENT         ? HHE
            : hh == CLATTN_HH_SUPER             ? HHS
            : !strcmp(argv[2], "switchhead")    ? SH
                                                : 0;
  if (!cmd) {
    cli_err("run: unknown kernel '%s' (expected attention, gqa, "
            "talking-heads, optimised, efficient, super or switchhead)",
            argv[2]);
    return usage(NULL);
  }
  int rc = parse(argc - 3, argv + 3, cmd, &o, given);
  if (!rc)
    rc = validate(cmd, &o, given);
  if (rc)
    return rc;
  return cmd == ATT   ? cli_run_attention(&o)
         : cmd == GQA ? cli_run_gqa(&o)
         : cmd == TH  ? cli_run_th(&o)
         : cmd == SH  ? cli_run_sh(&o)
                      : cli_run_hh(&o, (clattn_hh_variant)hh);
}
