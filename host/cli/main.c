/* main.c - the clattn command: parse the command line and dispatch.
 *
 *   clattn devices [--verbose | --list]
 *   clattn run attention|decode (--in DIR | --random SHAPE...) [options]
 *   clattn run KIND (--in DIR | --random SHAPE...) [options], KIND a
 *     registered layer kind (clattn layers: gqa, talking-heads, ...)
 *   clattn families | clattn layers
 *   clattn probe [--device D] [--json] [--thorough] [--db PATH] [--no-store]
 *   clattn tune ... / clattn explain ... (tune.c)
 *   clattn bench ... (bench.c)
 *   clattn db path | list [...] | export FILE [--format F] | import FILE
 *     [--db PATH]
 *   clattn report DB [DB ...] [-o FILE] [--html|--markdown|--csv|--json]
 *
 * Options: one parser for all (options.c); exit statuses: docs/CLI.md
 * (0 success, 1 run-time failure, 2 usage error, bad shape or input file,
 * 3 --check error above the tolerance, 130 interrupted). */
#include "cli.h"
#include "options.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CLATTN_CLI_VERSION /* set by meson from the project version */
#define CLATTN_CLI_VERSION "0.1.0"
#endif

/* The top usage, around its line of the layer kinds (print_top_help). */
static const char usage_head[] =
    "usage: clattn devices [--verbose | --list]\n"
    "       clattn families | layers\n"
    "       clattn run attention|decode (--in DIR | --random SHAPE) "
    "[OPTIONS]\n"
    "       clattn run KIND (--in DIR | --random SHAPE) [OPTIONS]\n";
static const char usage_text[] =
    "       clattn model FAMILY|layer|mqa|switchhead|profiles|check ...\n"
    "         (roofline model; 'clattn model help' for its options)\n"
    "       clattn probe [--device SEL] [--json] [--thorough | --quick]\n"
    "                    [--db PATH] [--no-store]\n"
    "       clattn tune [FAMILY|gemm|all] [SHAPE] [--budget T] ...\n"
    "       clattn explain FAMILY SHAPE [--db PATH]\n"
    "         (autotuner; 'clattn tune help' for its options)\n"
    "       clattn bench [FAMILY|all] [SHAPE] [--db PATH] [--repeats N] ...\n"
    "         (the library against its baselines, stored for the report)\n"
    "       clattn db path | list [--kernel K] [--class C] [--all-devices]\n"
    "                 [--json] | export FILE [--format json|shipped|t4]\n"
    "                 | import FILE  [--db PATH]\n"
    "         (tuning database; 'clattn db help' for details)\n"
    "       clattn report DB [DB ...] [-o FILE] [--html | --markdown | --csv\n"
    "                     | --json] [--datasheets all|none|NAME,...]\n"
    "       clattn help | --help | --version\n"
    "  ('clattn COMMAND --help': a command's own help and options;\n"
    "  docs/CLI.md: the option rules and exit statuses)\n";

static const char run_text[] =
    "run attention: DIR holds q.npy [b,n,h_q,k], k.npy [b,m,h_kv,k],\n"
    "  v.npy [b,m,h_kv,v] ('<f4' or '<f2', all alike) and optionally\n"
    "  kv_lens.npy ('<i4' [b]); writes --out FILE.npy [b,n,h_q,v].\n"
    "  SHAPE: --batch B --seq N [--kv-seq M] --heads H [--kv-heads G]\n"
    "         --head-dim K [--head-dim-v V] [--dtype f32|f16]\n"
    "  --causal, --scale S (0: 1/sqrt(k)), --layout bshd|bhsd (device\n"
    "  layout; files are always [b,seq,heads,dim])\n"
    "  the attention options (clattn.h): --window W (W >= 1: the W most\n"
    "  recent positions up to the query's own), --softcap C (C > 0: logits\n"
    "  C tanh(s/C)), --alibi SLOPES.npy and --sinks SINKS.npy ('<f4'\n"
    "  [h_q]: an ALiBi slope and a sink logit per query head; a -inf sink\n"
    "  is no sink)\n"
    "run decode: one step, a query per sequence against a KV cache: DIR\n"
    "  holds q.npy [b,1,h_q,k], k.npy [b,c,h_kv,k] and v.npy [b,c,h_kv,v]\n"
    "  (the cache of capacity c; with --layout bhsd [b,h_kv,c,k] and\n"
    "  [b,h_kv,c,v]) ('<f4' or '<f2', all alike) and kv_lens.npy ('<i4'\n"
    "  [b], the valid rows; the query sits at the last); writes --out\n"
    "  FILE.npy [b,1,h_q,v].\n"
    "  SHAPE: --batch B --kv-seq C (the capacity) --heads H [--kv-heads G]\n"
    "         --head-dim K [--head-dim-v V] [--dtype f32|f16]; lengths\n"
    "         drawn in 1..C\n"
    "  --scale S, --layout bshd|bhsd, the attention options as for run\n"
    "  attention (--causal is accepted: the query is already the last)\n"
    "run decode --paged: a paged KV cache (docs/PAGED.md): DIR holds q.npy\n"
    "  [b,n_q,h_q,k], k_cache.npy [pages,page_size,h_kv,k], v_cache.npy\n"
    "  [pages,page_size,h_kv,v] (q's dtype, or int8 '|i1' with k_scale.npy\n"
    "  and v_scale.npy '<f4' [pages,page_size,h_kv]), block_table.npy '<i4'\n"
    "  [b,max_blocks], kv_lens.npy '<i4' [b] (the lengths with the n_q new\n"
    "  positions); writes [b,n_q,h_q,v].\n"
    "  SHAPE: --kv-seq M (lengths drawn in 1..M) or --kv-lens L1,L2,...\n"
    "         --heads H [--kv-heads G] --head-dim K [--head-dim-v V]\n"
    "         [--page-size P] [--new N] [--cache-dtype int8] [--dtype f16]\n"
    "  --causal, --scale S, the attention options\n"
    "run attention --varlen: packed sequences: DIR holds q.npy\n"
    "  [total_q,h_q,k], k.npy [total_k,h_kv,k], v.npy [total_k,h_kv,v],\n"
    "  cu_seqlens_q.npy and cu_seqlens_k.npy '<i4' [b+1]; writes\n"
    "  [total_q,h_q,v].\n"
    "  SHAPE: --seq N (queries a sequence at most) and/or --kv-seq M or\n"
    "         --kv-lens L1,L2,... (the key lengths), --heads, --head-dim...\n"
    "  --causal, --scale S, the attention options\n"
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
    "  --verbose\n";

static const char probe_text[] =
    "probe: measure the device's ceilings (memory bandwidth per vector\n"
    "  width, FMA peak, local memory, transfers, launch latency; under 30 s\n"
    "  by default, longer with --thorough) and store them in the tuning\n"
    "  database (--db PATH, default $CLATTN_DB, else\n"
    "  $XDG_DATA_HOME/clattn/tuning.db or ~/.local/share/clattn/tuning.db)\n"
    "  unless --no-store.  --json prints JSON.  --quick: small buffers and\n"
    "  short timings, a smoke test only (implies --no-store).\n";

static const char families_text[] =
    "families: the kernel families (FAMILY above; `attention` names\n"
    "  prefill), their calls and the shape keys their SHAPE may give.\n";

static const char layers_text[] =
    "layers: the layer kinds (KIND above), each a line: what it computes\n"
    "  and the call that creates it.\n";

static const char exit_text[] =
    "exit status: 0 ok, 1 run-time failure (device, file, database), 2 usage\n"
    "  or input error (a bad option, shape or file), 3 --check failed,\n"
    "  130 interrupted (Ctrl-C)\n";

/* The subcommands' bits in cli_option.scope. */
enum {
  ATT = 1,
  GQA = 2,
  DEV = 4,
  PRB = 8,
  TH = 16,
  HHO = 32,
  HHE = 64,
  HHS = 128,
  HH = HHO | HHE | HHS,
  SH = 256,
  DEC = 512,
  RUN = ATT | GQA | TH | HH | SH | DEC
};

enum opt_id {
  O_IN,
  O_OUT,
  O_DEVICE,
  O_SAVE,
  O_CAUSAL,
  O_CHECK,
  O_RANDOM,
  O_VERBOSE,
  O_LAYOUT,
  O_DTYPE,
  O_SCALE,
  O_BATCH,
  O_SEQ,
  O_KV_SEQ,
  O_HEADS,
  O_KV_HEADS,
  O_HEAD_DIM,
  O_HEAD_DIM_V,
  O_D_MODEL,
  O_HEADS_K,
  O_HEADS_V,
  O_MAX_LEN,
  O_EXPERTS,
  O_TOPK,
  O_DECODE_FROM,
  O_WINDOW,
  O_SOFTCAP,
  O_ALIBI,
  O_SINKS,
  O_PAGED,
  O_VARLEN,
  O_PAGE_SIZE,
  O_CACHE_DTYPE,
  O_NEW,
  O_KV_LENS,
  O_REPEAT,
  O_SEED,
  O_JSON,
  O_THOROUGH,
  O_QUICK,
  O_DB,
  O_NO_STORE,
  O_LIST,
  O_COUNT
};

static int parse_layout(const char *v, void *field) {
  int *l = field;
  *l = !strcmp(v, "bshd") ? CLATTN_BSHD : !strcmp(v, "bhsd") ? CLATTN_BHSD : -1;
  return *l < 0 ? -1 : 0;
}

static int parse_run_dtype(const char *v, void *field) {
  int *d = field;
  *d = !strcmp(v, "f32") ? CLATTN_F32 : !strcmp(v, "f16") ? CLATTN_F16 : -1;
  return *d < 0 ? -1 : 0;
}

/* --cache-dtype: the tensors' own type (0) or int8. */
static int parse_cache_dtype(const char *v, void *field) {
  int *d = field;
  *d = !strcmp(v, "int8") ? CLATTN_I8 : !strcmp(v, "same") ? 0 : -1;
  return *d < 0 ? -1 : 0;
}

static int parse_scale(const char *v, void *field) {
  char *end;
  errno = 0;
  float x = strtof(v, &end);
  if (errno || end == v || *end || !(x >= 0) || isinf(x))
    return -1;
  *(float *)field = x;
  return 0;
}

/* Any number; validate() says why one that is not finite and > 0 is
 * refused (0 would be the library's "none"). */
static int parse_float(const char *v, void *field) {
  char *end;
  errno = 0;
  float x = strtof(v, &end);
  if (errno == EINVAL || end == v || *end)
    return -1;
  *(float *)field = x;
  return 0;
}

static int parse_seed(const char *v, void *field) {
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 0);
  if (errno || end == v || *end || *v == '-')
    return -1;
  *(unsigned long long *)field = x;
  return 0;
}

#define OFF(f) offsetof(cli_opts, f)
#define INT_OPT(n, f, lo, sc, a, h)                                            \
  { n, CLI_INT, OFF(f), lo, NULL, sc, a, h }
#define STR_OPT(n, f, sc, a, h)                                                \
  { n, CLI_STR, OFF(f), 0, NULL, sc, a, h }
#define FLAG_OPT(n, f, sc, h)                                                  \
  { n, CLI_FLAG, OFF(f), 0, NULL, sc, NULL, h }
#define FN_OPT(n, f, fn, sc, a, h)                                             \
  { n, CLI_FN, OFF(f), 0, fn, sc, a, h }

/* Every option of devices, probe and run, indexed by opt_id. */
static const cli_option opts[O_COUNT] = {
    [O_IN] = STR_OPT("in", in, RUN, "DIR", "read the inputs from DIR/*.npy"),
    [O_OUT] = STR_OPT("out", out, RUN, "FILE",
                      "write the output .npy "
                      "(required with --in; its directory is checked first)"),
    [O_DEVICE] = STR_OPT("device", device, RUN | PRB, "SEL",
                         "'P:D', 'D' or a name substring "
                         "(default $CLATTN_DEVICE)"),
    [O_SAVE] = STR_OPT("save-inputs", save_inputs, RUN, "DIR",
                       "with --random: write the inputs to DIR"),
    [O_CAUSAL] = FLAG_OPT("causal", causal, RUN, "causal mask"),
    [O_CHECK] = FLAG_OPT("check", check, RUN,
                         "compare with the reference "
                         "(exit 3 above the tolerance)"),
    [O_RANDOM] = FLAG_OPT("random", random, RUN, "random inputs of SHAPE"),
    [O_VERBOSE] = FLAG_OPT("verbose", verbose, RUN | DEV, "more detail (-v)"),
    [O_LAYOUT] = FN_OPT("layout", layout, parse_layout, ATT | DEC, "bshd|bhsd",
                        "the device layout (decode: the cache files' too)"),
    [O_DTYPE] = FN_OPT("dtype", dtype, parse_run_dtype, ATT | DEC, "f32|f16",
                       "with --random: the element type"),
    [O_SCALE] = FN_OPT("scale", scale, parse_scale, RUN, "S",
                       "softmax scale >= 0 (0: 1/sqrt(head dim))"),
    [O_BATCH] = INT_OPT("batch", batch, 1, RUN, "B", "SHAPE: batch"),
    [O_SEQ] = INT_OPT("seq", seq, 1, RUN & ~DEC, "N", "SHAPE: query positions"),
    [O_KV_SEQ] = INT_OPT("kv-seq", kv_seq, 1, ATT | DEC, "M",
                         "SHAPE: key positions (default N; decode: the "
                         "cache's capacity)"),
    [O_HEADS] = INT_OPT("heads", heads, 1, RUN, "H", "query heads"),
    [O_KV_HEADS] = INT_OPT("kv-heads", kv_heads, 1, ATT | GQA | DEC, "G",
                           "key/value heads (default H)"),
    [O_HEAD_DIM] = INT_OPT("head-dim", head_dim, 1, ATT | GQA | TH | SH | DEC,
                           "K", "SHAPE: key head width"),
    [O_HEAD_DIM_V] = INT_OPT("head-dim-v", head_dim_v, 1, ATT | GQA | TH | DEC,
                             "V", "SHAPE: value head width (default K)"),
    [O_D_MODEL] = INT_OPT("d-model", d_model, 1, GQA | TH | HH | SH, "D",
                          "SHAPE: model width"),
    [O_HEADS_K] = INT_OPT("heads-k", heads_k, 1, TH, "Hk", "SHAPE: key heads"),
    [O_HEADS_V] =
        INT_OPT("heads-v", heads_v, 1, TH, "Hv", "SHAPE: value heads"),
    [O_MAX_LEN] = INT_OPT("max-len", max_len, 1, HHS, "L",
                          "SHAPE: W_a's size (default N)"),
    [O_EXPERTS] =
        INT_OPT("experts", experts, 1, SH, "E", "SHAPE: experts a head"),
    [O_TOPK] = INT_OPT("topk", topk, 1, SH, "K", "experts chosen a position"),
    [O_DECODE_FROM] = INT_OPT("decode-from", decode_from, 0, GQA | TH | HH | SH,
                              "P", "prefill P positions, decode the rest"),
    [O_WINDOW] = INT_OPT("window", window, 1, ATT | DEC, "W",
                         "sliding window: the W most recent positions up to "
                         "the query's own"),
    [O_SOFTCAP] = FN_OPT("softcap", softcap, parse_float, ATT | DEC, "C",
                         "logit soft-cap C > 0: s becomes C tanh(s / C)"),
    [O_ALIBI] = STR_OPT("alibi", alibi, ATT | DEC, "SLOPES.npy",
                        "ALiBi slopes, float32 [query heads]"),
    [O_SINKS] = STR_OPT("sinks", sinks, ATT | DEC, "SINKS.npy",
                        "sink logits, float32 [query heads] (-inf: none)"),
    [O_PAGED] = FLAG_OPT("paged", paged, DEC,
                         "a paged KV cache: a pool of pages and a block table "
                         "(docs/PAGED.md)"),
    [O_VARLEN] = FLAG_OPT("varlen", varlen, ATT,
                          "ragged (packed) sequences with cu_seqlens "
                          "(docs/PAGED.md)"),
    [O_PAGE_SIZE] = INT_OPT("page-size", page_size, 1, DEC, "P",
                            "with --paged --random: positions a page (a "
                            "power of two, 1 .. 256; default 16)"),
    [O_CACHE_DTYPE] =
        FN_OPT("cache-dtype", cache_dtype, parse_cache_dtype, DEC, "same|int8",
               "with --paged --random: the cache's storage "
               "(int8: with float32 scales)"),
    [O_NEW] = INT_OPT("new", new_rows, 1, DEC, "N",
                      "with --paged --random: new queries a sequence "
                      "(default 1; more: a chunked prefill)"),
    [O_KV_LENS] = STR_OPT("kv-lens", kv_lens, ATT | DEC, "L1,L2,...",
                          "with --paged/--varlen --random: the sequences' "
                          "lengths (sets the batch; default drawn)"),
    [O_REPEAT] = INT_OPT("repeat", repeat, 1, RUN, "N", "run N times"),
    [O_SEED] =
        FN_OPT("seed", seed, parse_seed, RUN, "S", "with --random: the seed"),
    [O_JSON] = FLAG_OPT("json", json, PRB, "print JSON"),
    [O_THOROUGH] = FLAG_OPT("thorough", thorough, PRB, "longer timings"),
    [O_QUICK] = FLAG_OPT("quick", quick, PRB,
                         "a smoke run, not stored (implies --no-store)"),
    [O_DB] = STR_OPT("db", db, PRB, "PATH", "the tuning database"),
    [O_NO_STORE] =
        FLAG_OPT("no-store", no_store, PRB, "do not store the profile"),
    [O_LIST] = FLAG_OPT("list", list, DEV,
                        "a line per device for scripts: "
                        "P:D, CPU|GPU|ACCEL|OTHER, platform, name "
                        "(tab-separated)"),
};

/* A run's output paths, checked before anything is computed: --out's
 * directory must exist and be writable (a file there, writable), and
 * --save-inputs is created.  CLI_FAIL (a file problem) or 0. */
static int check_outputs(const cli_opts *o) {
  if (o->out) {
    struct stat st;
    if (stat(o->out, &st) == 0) {
      if (S_ISDIR(st.st_mode) || access(o->out, W_OK) != 0) {
        cli_err("--out %s: %s", o->out,
                S_ISDIR(st.st_mode) ? "is a directory" : strerror(errno));
        return CLI_FAIL;
      }
    } else {
      char dir[PATH_MAX];
      const char *slash = strrchr(o->out, '/');
      if (!slash)
        snprintf(dir, sizeof dir, ".");
      else if (slash == o->out)
        snprintf(dir, sizeof dir, "/");
      else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - o->out), o->out);
      if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
          access(dir, W_OK | X_OK) != 0) {
        cli_err("--out %s: directory %s %s", o->out, dir,
                stat(dir, &st) != 0    ? "does not exist"
                : !S_ISDIR(st.st_mode) ? "is not a directory"
                                       : "is not writable");
        return CLI_FAIL;
      }
    }
  }
  if (o->save_inputs) {
    if (cli_mkdir(o->save_inputs))
      return CLI_FAIL;
    if (access(o->save_inputs, W_OK | X_OK) != 0) {
      cli_err("--save-inputs %s: %s", o->save_inputs, strerror(errno));
      return CLI_FAIL;
    }
  }
  return CLI_OK;
}

/* The rules of run decode --paged and run attention --varlen: no device
 * layout (theirs is fixed), and with --random a shape (the lengths given
 * or drawn up to --kv-seq (--seq for varlen), heads and head dims; the
 * page size a power of two up to 256).  The lengths' text is read by the
 * run itself. */
static int validate_ragged(const char *name, cli_opts *o,
                           const unsigned char *given) {
  const char *flag = o->paged ? "--paged" : "--varlen";
  if (given[O_LAYOUT])
    return cli_usage_error(name,
                           "--layout does not apply to %s (its layout "
                           "is fixed: docs/PAGED.md)",
                           flag);
  if (!o->random)
    return 0;
  if (given[O_BATCH] && given[O_KV_LENS])
    return cli_usage_error(name, "--batch and --kv-lens are exclusive (the "
                                 "lengths set the batch)");
  if (!given[O_HEADS] || !given[O_HEAD_DIM] ||
      !(given[O_KV_LENS] || given[o->paged ? O_KV_SEQ : O_SEQ]))
    return cli_usage_error(name,
                           "%s --random needs --heads, --head-dim and %s or "
                           "--kv-lens",
                           flag,
                           o->paged ? "--kv-seq (the longest length)"
                                    : "--seq (the longest sequence)");
  if (!given[O_BATCH])
    o->batch = 1;
  if (!given[O_KV_HEADS])
    o->kv_heads = o->heads;
  if (!given[O_HEAD_DIM_V])
    o->head_dim_v = o->head_dim;
  if (!given[O_PAGE_SIZE])
    o->page_size = 16;
  if (!given[O_NEW])
    o->new_rows = 1;
  if (o->heads % o->kv_heads)
    return cli_usage_error(name, "--heads must be a multiple of --kv-heads");
  if (o->page_size > 256 || (o->page_size & (o->page_size - 1)))
    return cli_usage_error(
        name, "--page-size %d: not a power of two in 1 .. 256", o->page_size);
  /* the run's own tensors stay small: each under 2^30 elements a dim */
  double hd = o->head_dim > o->head_dim_v ? o->head_dim : o->head_dim_v;
  double m = o->kv_seq > o->seq ? o->kv_seq : o->seq;
  if ((double)o->batch * m * o->heads * hd > 17179869184.0)
    return cli_usage_error(name, "--random: tensors of more than 2^34 "
                                 "elements");
  return 0;
}

/* Cross-option rules shared by the run commands. */
static int validate(const char *name, int cmd, cli_opts *o,
                    const unsigned char *given) {
  static const enum opt_id shape_opts[] = {
      O_BATCH,      O_SEQ,         O_KV_SEQ,  O_KV_HEADS, O_HEAD_DIM,
      O_HEAD_DIM_V, O_D_MODEL,     O_DTYPE,   O_SEED,     O_SAVE,
      O_HEADS,      O_HEADS_K,     O_HEADS_V, O_MAX_LEN,  O_EXPERTS,
      O_PAGE_SIZE,  O_CACHE_DTYPE, O_NEW,     O_KV_LENS};
  if (given[O_SOFTCAP] && !(o->softcap > 0 && isfinite(o->softcap)))
    return cli_usage_error(name,
                           "--softcap: expected a finite number > 0, got "
                           "%g",
                           o->softcap);
  if (o->in && o->random)
    return cli_usage_error(name, "--in and --random are exclusive");
  if (o->paged || o->varlen) {
    int rc = validate_ragged(name, o, given);
    if (rc || o->random)
      return rc;
  } else {
    static const enum opt_id ragged_opts[] = {O_PAGE_SIZE, O_CACHE_DTYPE, O_NEW,
                                              O_KV_LENS};
    for (size_t i = 0; i < sizeof ragged_opts / sizeof ragged_opts[0]; i++)
      if (given[ragged_opts[i]])
        return cli_usage_error(name, "--%s is only valid with %s",
                               opts[ragged_opts[i]].name,
                               cmd == DEC ? "--paged" : "--varlen");
  }
  if (!o->in && !o->random)
    return cli_usage_error(name, "one of --in DIR or --random is required");
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
      if (given[id])
        return cli_usage_error(name, "--%s is only valid with --random",
                               opts[id].name);
    }
    if (!o->out)
      return cli_usage_error(name, "--out FILE.npy is required with --in");
    if (cmd == GQA && !given[O_HEADS])
      return cli_usage_error(name, "--heads H is required");
    if ((cmd & HH) && !given[O_HEADS])
      return cli_usage_error(name, "--heads H is required");
    if (cmd == SH && (!given[O_HEADS] || !given[O_TOPK]))
      return cli_usage_error(name, "--heads H and --topk K are required");
    return 0;
  }
  if (cmd == DEC) {
    if (!given[O_KV_SEQ] || !given[O_HEADS] || !given[O_HEAD_DIM])
      return cli_usage_error(name, "--random needs --kv-seq (the cache's "
                                   "capacity), --heads, --head-dim");
    if (!given[O_BATCH])
      o->batch = 1;
    if (!given[O_KV_HEADS])
      o->kv_heads = o->heads;
    if (!given[O_HEAD_DIM_V])
      o->head_dim_v = o->head_dim;
    if (o->heads % o->kv_heads)
      return cli_usage_error(name, "--heads must be a multiple of --kv-heads");
    /* the caches [b, capacity, kv heads, head dim] are the largest */
    double hd = o->head_dim > o->head_dim_v ? o->head_dim : o->head_dim_v;
    double big = (double)o->batch * o->kv_seq * o->kv_heads * hd;
    big = fmax(big, (double)o->batch * o->heads * hd);
    if (big > 17179869184.0)
      return cli_usage_error(name, "--random: tensors of more than 2^34 "
                                   "elements");
    return 0;
  }
  if (cmd == SH) {
    if (!given[O_SEQ] || !given[O_D_MODEL] || !given[O_HEADS] ||
        !given[O_HEAD_DIM] || !given[O_EXPERTS] || !given[O_TOPK])
      return cli_usage_error(name, "--random needs --seq, --d-model, "
                                   "--heads, --head-dim, --experts, --topk");
    if (!given[O_BATCH])
      o->batch = 1;
    /* x [b, n, d], w_q [d, H*k] and the experts' w_v [H, E, d, k] */
    double x = (double)o->batch * o->seq * o->d_model;
    double w = (double)o->d_model * o->heads * o->head_dim * o->experts;
    if ((x > w ? x : w) > 17179869184.0)
      return cli_usage_error(name, "--random: tensors of more than 2^34 "
                                   "elements");
    return 0;
  }
  if (cmd & HH) {
    if (!given[O_SEQ] || !given[O_D_MODEL] || !given[O_HEADS])
      return cli_usage_error(name, "--random needs --seq, --d-model, "
                                   "--heads");
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
      return cli_usage_error(name, "--random: tensors of more than 2^34 "
                                   "elements");
    return 0;
  }
  if (cmd == TH && (!given[O_SEQ] || !given[O_D_MODEL] || !given[O_HEADS_K] ||
                    !given[O_HEADS] || !given[O_HEADS_V] || !given[O_HEAD_DIM]))
    return cli_usage_error(name, "--random needs --seq, --d-model, "
                                 "--heads-k, --heads, --heads-v, --head-dim");
  if (!given[O_SEQ] || !given[O_HEADS] || !given[O_HEAD_DIM] ||
      (cmd == GQA && !given[O_D_MODEL]))
    return cli_usage_error(
        name, "%s",
        cmd == GQA ? "--random needs --seq, --d-model, --heads, --head-dim"
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
    return cli_usage_error(name, "--heads must be a multiple of --kv-heads");
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
    return cli_usage_error(name, "--random: tensors of more than 2^34 "
                                 "elements");
  return 0;
}

/* The registered layer kinds' names joined by sep ("gqa|talking-heads|
 * ..."), the words `clattn run` takes besides attention. */
static const char *kind_words(char *buf, size_t cap, const char *sep) {
  size_t n = 0;
  buf[0] = '\0';
  for (int i = 0; i < clattn_layer_kind_count() && n < cap; i++) {
    int w = snprintf(buf + n, cap - n, "%s%s", i ? sep : "",
                     clattn_layer_kind_name(i));
    n = w < 0 ? cap : n + (size_t)w;
  }
  return buf;
}

static void print_top_help(FILE *f) {
  char kinds[256];
  fputs(usage_head, f);
  fprintf(f, "         (KIND: %s; clattn layers)\n",
          kind_words(kinds, sizeof kinds, "|"));
  fputs(usage_text, f);
  fputs("\n", f);
  fputs(run_text, f);
  fputs(probe_text, f);
  fputs(families_text, f);
  fputs(layers_text, f);
  fputs(exit_text, f);
}

/* The runners of `clattn run`: the attention and decode calls and, by
 * registry name, the layer kinds this command reads files for, with their
 * scope bits.  A registered kind missing here is named as such
 * (tests/cli.sh runs every kind `clattn layers` lists). */
static const struct {
  const char *word;
  int scope;
} kernels[] = {
    {"attention", ATT},    {"decode", DEC},    {"gqa", GQA},
    {"talking-heads", TH}, {"optimised", HHO}, {"efficient", HHE},
    {"super", HHS},        {"switchhead", SH},
};

static int run_command(int argc, char **argv, cli_opts *o) {
  char name[40], kinds[256];
  cli_args a;
  kind_words(kinds, sizeof kinds, ", ");
  if (argc < 1)
    return cli_usage_error("run",
                           "missing kernel (attention, decode or a layer "
                           "kind: %s)",
                           kinds);
  if (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h") ||
      !strcmp(argv[0], "help")) {
    printf("usage: clattn run attention|decode|%s\n"
           "         (--in DIR | --random SHAPE) [OPTIONS]\n",
           kind_words(kinds, sizeof kinds, "|"));
    fputs(run_text, stdout);
    fputs("(each kernel's options: clattn run KERNEL --help; the layer "
          "kinds: clattn layers)\n",
          stdout);
    return CLI_OK;
  }
  int cmd = 0,
      registered = !strcmp(argv[0], "attention") || !strcmp(argv[0], "decode");
  for (int i = 0; i < clattn_layer_kind_count(); i++)
    registered |= !strcmp(argv[0], clattn_layer_kind_name(i));
  for (size_t k = 0; registered && k < sizeof kernels / sizeof kernels[0]; k++)
    if (!strcmp(argv[0], kernels[k].word))
      cmd = kernels[k].scope;
  if (!registered)
    return cli_usage_error("run",
                           "unknown kernel '%.40s' (expected "
                           "attention, decode or a layer kind: %s)",
                           argv[0], kinds);
  if (!cmd)
    return cli_usage_error("run",
                           "layer kind '%.40s' has no runner in "
                           "this command",
                           argv[0]);
  snprintf(name, sizeof name, "run %s", argv[0]);
  char usage[160];
  snprintf(usage, sizeof usage,
           "usage: clattn %s (--in DIR | --random "
           "SHAPE) [OPTIONS]\n  (details: clattn run --help)\n",
           name);
  const cli_command c = {name, usage, opts, O_COUNT, (unsigned)cmd, 0, NULL};
  int rc = cli_parse_cmd(&c, argc - 1, argv + 1, o, &a);
  if (rc)
    return rc < 0 ? CLI_OK : rc;
  if ((rc = validate(name, cmd, o, a.given)) || (rc = check_outputs(o)))
    return rc;
  const int hh = cli_hh_variant(argv[0]);
  return cmd == ATT   ? (o->varlen ? cli_run_varlen(o) : cli_run_attention(o))
         : cmd == DEC ? (o->paged ? cli_run_paged(o) : cli_run_decode(o))
         : cmd == GQA ? cli_run_gqa(o)
         : cmd == TH  ? cli_run_th(o)
         : cmd == SH  ? cli_run_sh(o)
                      : cli_run_hh(o, (clattn_hh_variant)hh);
}

int main(int argc, char **argv) {
  if (argc < 2)
    return cli_usage_error(NULL, "missing command");
  const char *c = argv[1];
  if (!strcmp(c, "--help") || !strcmp(c, "-h") || !strcmp(c, "help")) {
    print_top_help(stdout);
    return CLI_OK;
  }
  if (!strcmp(c, "--version")) {
    printf("clattn %s (library %s)\n", CLATTN_CLI_VERSION, clattn_version());
    return CLI_OK;
  }

  cli_opts o;
  cli_args a;
  memset(&o, 0, sizeof o);
  o.layout = CLATTN_BSHD;
  o.dtype = CLATTN_F32;
  o.decode_from = -1;
  o.repeat = 1;
  o.seed = 1;

  if (!strcmp(c, "devices")) {
    const cli_command cmd = {"devices",
                             "usage: clattn devices [--verbose "
                             "| --list]\n  the OpenCL devices and their "
                             "limits\n",
                             opts,
                             O_COUNT,
                             DEV,
                             0,
                             NULL};
    int rc = cli_parse_cmd(&cmd, argc - 2, argv + 2, &o, &a);
    if (!rc && o.verbose && o.list)
      rc = cli_usage_error("devices", "--verbose and --list are exclusive");
    return rc       ? (rc < 0 ? CLI_OK : rc)
           : o.list ? cli_devices_list()
                    : cli_devices(o.verbose);
  }
  if (!strcmp(c, "families")) {
    const cli_command cmd = {
        "families", "usage: clattn families\n", opts, 0, 0, 0, NULL};
    int rc = cli_parse_cmd(&cmd, argc - 2, argv + 2, &o, &a);
    if (rc < 0)
      fputs(families_text, stdout);
    return rc ? (rc < 0 ? CLI_OK : rc) : cli_families();
  }
  if (!strcmp(c, "layers")) {
    const cli_command cmd = {"layers", "usage: clattn layers\n", opts, 0, 0, 0,
                             NULL};
    int rc = cli_parse_cmd(&cmd, argc - 2, argv + 2, &o, &a);
    if (rc < 0)
      fputs(layers_text, stdout);
    return rc ? (rc < 0 ? CLI_OK : rc) : cli_layers();
  }
  if (!strcmp(c, "model"))
    return cli_model(argc - 2, argv + 2);
  if (!strcmp(c, "tune"))
    return cli_tune(argc - 2, argv + 2);
  if (!strcmp(c, "bench"))
    return cli_bench(argc - 2, argv + 2);
  if (!strcmp(c, "explain"))
    return cli_explain(argc - 2, argv + 2);
  if (!strcmp(c, "db"))
    return cli_db(argc - 2, argv + 2);
  if (!strcmp(c, "report"))
    return cli_report(argc - 2, argv + 2);
  if (!strcmp(c, "probe")) {
    char usage[1024];
    snprintf(usage, sizeof usage,
             "usage: clattn probe [--device SEL] "
             "[--json] [--thorough | --quick] [--db PATH] [--no-store]\n%s",
             probe_text);
    const cli_command cmd = {"probe", usage, opts, O_COUNT, PRB, 0, NULL};
    int rc = cli_parse_cmd(&cmd, argc - 2, argv + 2, &o, &a);
    if (!rc && o.thorough && o.quick)
      rc = cli_usage_error("probe", "--thorough and --quick are exclusive");
    return rc ? (rc < 0 ? CLI_OK : rc) : cli_probe(&o);
  }
  if (!strcmp(c, "run"))
    return run_command(argc - 2, argv + 2, &o);
  return cli_usage_error(NULL, "unknown command '%.40s'", c);
}
