/* attn_opts.c - the attention options of `clattn run attention` and
 * `clattn run decode` (--window, --softcap, --alibi, --sinks): the
 * per-head arrays read from their files, checked for what only the command
 * knows (the file's dtype and length); their values are the library's to
 * check (clattn_attention and clattn_decode refuse a non-finite slope and
 * a NaN or +inf sink, naming it). */
#include "attn_run.h"

#include <stdio.h>
#include <string.h>

/* One per-head array: float32 [heads]. */
static int load_heads(const char *option, const char *path, int heads,
                      npy_array *a) {
  char s[96];
  int rc = cli_load(NULL, path, 0, a);
  if (rc)
    return rc;
  if (a->dtype != NPY_F32) {
    cli_err("--%s %s: dtype '%s' is not float32 (expected '<f4' [%d], a "
            "value per query head)",
            option, path, npy_dtype_descr(a->dtype), heads);
    return CLI_USAGE;
  }
  if (a->ndim != 1 || a->shape[0] != (size_t)heads) {
    cli_err("--%s %s: shape %s is not [%d] (a value per query head)", option,
            path, npy_shape_str(a->ndim, a->shape, s, sizeof s), heads);
    return CLI_USAGE;
  }
  return CLI_OK;
}

int cli_attn_opts_load(const cli_opts *o, int heads, cli_attn_opts *ao) {
  memset(ao, 0, sizeof *ao);
  ao->window = o->window;
  ao->softcap = o->softcap;
  int rc = CLI_OK;
  if (o->alibi)
    rc = load_heads("alibi", o->alibi, heads, &ao->alibi);
  if (!rc && o->sinks)
    rc = load_heads("sinks", o->sinks, heads, &ao->sinks);
  return rc;
}

void cli_attn_opts_free(cli_attn_opts *ao) {
  npy_free(&ao->alibi);
  npy_free(&ao->sinks);
}

ref_opts cli_attn_opts_ref(const cli_attn_opts *ao) {
  return (ref_opts){.window = ao->window,
                    .softcap = ao->softcap,
                    .alibi = ao->alibi.data,
                    .sinks = ao->sinks.data};
}

void cli_attn_opts_text(const cli_attn_opts *ao, char *buf, size_t cap) {
  int n = snprintf(buf, cap, "%s", "");
  if (ao->window > 0 && n >= 0 && (size_t)n < cap)
    n += snprintf(buf + n, cap - (size_t)n, " window=%d", ao->window);
  if (ao->softcap > 0 && n >= 0 && (size_t)n < cap)
    n += snprintf(buf + n, cap - (size_t)n, " softcap=%g", ao->softcap);
  if (ao->alibi.data && n >= 0 && (size_t)n < cap)
    n += snprintf(buf + n, cap - (size_t)n, " alibi");
  if (ao->sinks.data && n >= 0 && (size_t)n < cap)
    snprintf(buf + n, cap - (size_t)n, " sinks");
}
