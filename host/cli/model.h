/* model.h - shared pieces of `clattn model` (model.c, model_mqa.c,
 * model_check.c, model_hh.c, model_sh.c). */
#ifndef CLATTN_CLI_MODEL_H
#define CLATTN_CLI_MODEL_H

#include "clattn_tools.h"
#include "options.h"

typedef struct model_opts {
  const char *profile, *device, *db;
  const char *families; /* model check: the families of its second table
                           (comma-separated; NULL: all) */
  int json, no_device, no_store, quick, causal, probe;
  int paper; /* model switchhead: the paper's accounting */
  int batch, seq, kv_seq, heads, kv_heads, head_dim, head_dim_v, d_model;
  int cache_len;
  int max_len; /* the Super layer's W_a size (0: cache_len + seq) */
  clattn_dtype dtype;
  clattn_params params;
  /* "--KEY VALUE" options that are no common SHAPE flag, as "KEY=VALUE"
   * words: a family's own shape keys (--heads-k), checked against the
   * family's keys by cli_shape_text. */
  char shape_extra[CLI_KEYS_CAP];
} model_opts;

/* The profile --profile names (a datasheet), else the present device's. */
int cli_model_profile(const model_opts *o, clattn_profile *p);
/* The best profile of a present device (clattn_profile_for with the
 * database at dbpath, NULL: the default one); prints failures. */
int cli_present_profile(const char *device, const char *dbpath,
                        clattn_profile *p);
const char *cli_profile_source(clattn_profile_source s);
/* A prediction as `clattn model FAMILY|layer` prints it: the profile's
 * ceilings, the parameters, a row per kernel and the total; or one JSON
 * object. */
/* Whether the flags set any of params' fields (--variant ..., --params). */
int cli_params_given(const clattn_params *p);
/* "name=value ..." text as the members of a JSON object, "name": value. */
void cli_print_params_json(const char *text);
void cli_print_prediction(const char *what, const clattn_profile *p,
                          const clattn_prediction *pr, int json);
/* One cost as a JSON object (4 spaces in), then sep. */
void cli_print_cost_json(const clattn_cost *c, const clattn_core *k,
                         const char *sep);
const char *cli_bound_name(clattn_bound b);

/* One side of a layer comparison (model_compare.c): its name, its
 * parameter count and its prediction. */
typedef struct cli_layer_side {
  const char *name;
  long long params;
  clattn_prediction pr;
} cli_layer_side;

/* The ratios v/m of params, FLOPs, compulsory bytes, DRAM bytes and
 * predicted time; -1 where m's is 0. */
enum { CLI_COMPARE_RATIOS = 5 };
void cli_compare_ratios(const cli_layer_side *v, const cli_layer_side *m,
                        double r[CLI_COMPARE_RATIOS]);
/* The two sides' rows and the ratio row (labelled `label`), FLOPs shown
 * times flops_unit under the heading flops_name ("GFLOP": 1e-9). */
void cli_print_compare_rows(const cli_layer_side *v, const cli_layer_side *m,
                            const char *label, const char *flops_name,
                            double flops_unit);
/* "key": r (null when r < 0), then sep. */
void cli_print_ratio_json(const char *key, double r, const char *sep);
/* A failed model call's message; CLI_USAGE for a bad shape, else
 * CLI_FAIL. */
int cli_model_fail(clattn_status st, const clattn_prediction *pr);

/* The subcommands of model, tune and explain (cli_option.scope bits). */
enum {
  M_FAM = 1,
  M_LAYER = 2,
  M_HH = 4,
  M_MQA = 8,
  M_SH = 16,
  M_PROF = 32,
  M_CHECK = 64,
  T_FAM = 128,
  T_GEMM = 256,
  T_ALL = 512,
  E_FAM = 1024
};
/* The option table of the model, tune or explain subcommand `scope` into
 * buf (at most cap): the model_opts options it takes, at `base` +
 * offsetof(model_opts, field) in the caller's struct; for a kernel family
 * fam >= 0, the common SHAPE options its shape keys name and its own keys
 * as CLI_KEY options.  Returns the count, -1 when over cap. */
int cli_model_options(unsigned scope, int fam, size_t base, cli_option *buf,
                      int cap);
/* Fill a shape's defaults (batch 1, kv heads = heads, ...) and check it;
 * 0 or CLI_USAGE. */
int cli_shape_defaults(model_opts *o, int need_seq);

/* Whether key is one of the blank-separated words of keys. */
int cli_has_word(const char *keys, const char *key);
/* The registry index of a family word (`attention` names prefill; a
 * former name its family's), -1 if none. */
int cli_family(const char *word);
/* The shape text (clattn_tune_shape) of o's SHAPE for family fam: its
 * defaults filled (cli_shape_defaults), the keys the family reads; 0 or
 * CLI_USAGE. */
int cli_shape_text(model_opts *o, int fam, char *buf, size_t cap);
/* Whether any SHAPE flag was given (a shape of its own, never the standard
 * shapes with the flag ignored). */
int cli_shape_flags_given(const model_opts *o);
/* The shape of a family's command `name` (bench, tune, explain): its text
 * as the one operand a (the family's keys, "batch=1 seq=64 window=16"),
 * else the flags' (cli_shape_text), else "" when neither; both is a usage
 * error.  0 or CLI_USAGE. */
int cli_shape_arg(const char *name, model_opts *o, int fam, const cli_args *a,
                  char *buf, size_t cap);

int cli_model_mqa(const model_opts *o);
/* `clattn model optimised|efficient|super`: the layer against MHA. */
int cli_model_hh(model_opts *o, clattn_hh_variant v);
int cli_model_check(const model_opts *o);
/* `clattn model check`'s second table (model_check_families.c): every
 * family selected by o->families at shapes of its own, measured between
 * two copies of ref (NULL: unpaired) and predicted on prof scaled to them;
 * rows stored in db (NULL: not) unless o->no_store. */
int cli_model_check_families(clattn_ctx *ctx, clattn_db *db,
                             const clattn_profile *prof, clattn_copy_ref *ref,
                             const model_opts *o);
/* 0, or CLI_USAGE naming a word of --families that is no family. */
int cli_check_families_valid(const char *list);
/* `clattn model switchhead` (model_sh.c). */
int cli_model_sh(const model_opts *o);

/* Whether a shape key is a flag of the commands (--causal): shape text's
 * causal=1 is written --causal. */
int cli_shape_key_is_flag(const char *key);

#endif
