/* fuzz_shape.c - the text parsers of a call: clattn_params_parse (the
 * tuning database's and $CLATTN_PARAMS' field text) and every family's
 * shape text (the CLI's flags, `clattn tune`/`model` SHAPE), through the
 * registry and through clattn_model_shape.
 *
 * Input: byte 0 picks the family, byte 1 the datasheet profile; the rest
 * is the shape text, then after the first newline the params text.
 * Checked: no crash or undefined behaviour; a refusal has a message;
 * params text that parses formats back to text that parses to the same
 * params; a prediction that succeeds has finite, non-negative times. */
#include "fuzz_util.h"

#include "family/family.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void check_prediction(const char *what, const clattn_prediction *p) {
  if (p->n_kernels < 0 || p->n_kernels > CLATTN_MODEL_MAX_KERNELS)
    fuzz_fail("%s: %d kernels", what, p->n_kernels);
  const clattn_cost *c = &p->total;
  if (!isfinite(c->t_pred) || c->t_pred < 0 || !isfinite(c->t_memory) ||
      !isfinite(c->t_compute) || c->t_memory < 0 || c->t_compute < 0)
    fuzz_fail("%s: t_pred %g t_memory %g t_compute %g", what, c->t_pred,
              c->t_memory, c->t_compute);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  const clattn__family *F = clattn__family_at(data[0] % clattn__family_count());
  clattn_profile prof = {.size = sizeof(clattn_profile)};
  if (clattn_datasheet(data[1] % clattn_datasheet_count(), &prof))
    fuzz_fail("clattn_datasheet failed");
  char *text = malloc(size - 2 + 1);
  if (text == NULL)
    return 0;
  memcpy(text, data + 2, size - 2);
  text[size - 2] = '\0';
  char *params_text = strchr(text, '\n');
  if (params_text)
    *params_text++ = '\0';

  clattn_params p = {.size = sizeof(clattn_params)},
                p2 = {.size = sizeof(clattn_params)};
  const clattn_params *pp = NULL;
  if (params_text) {
    if (clattn_params_parse(params_text, &p) == CLATTN_OK) {
      char a[512], b[512];
      clattn_params_format(&p, a, sizeof a);
      if (clattn_params_parse(a, &p2) != CLATTN_OK)
        fuzz_fail("params \"%s\" do not parse back", a);
      clattn_params_format(&p2, b, sizeof b);
      if (strcmp(a, b) != 0)
        fuzz_fail("params round trip: \"%s\" -> \"%s\"", a, b);
      pp = &p;
    }
  }

  _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
  char why[256] = "";
  memset(desc, 0, sizeof desc);
  clattn_status rc = F->parse_shape(text, desc, why, sizeof why);
  if (rc != CLATTN_OK && !why[0])
    fuzz_fail("%s: parse_shape refused \"%s\" without a message", F->name,
              text);
  int predict = 1;
  if (rc == CLATTN_OK) {
    why[0] = '\0';
    if (F->check(desc, why, sizeof why) == CLATTN_OK) {
      char cls[128];
      clattn__buf_spec bufs[CLATTN__MAX_BUFS];
      F->shape_class(desc, cls, sizeof cls);
      F->buffers(desc, bufs);
      for (int i = 0; i < F->nbufs; i++)
        if (bufs[i].elems == 0 || bufs[i].elems > FUZZ_MODEL_MAX_ELEMS)
          predict = 0;
    } else if (!why[0]) {
      fuzz_fail("%s: check refused a parsed shape without a message", F->name);
    }
  }

  clattn_prediction pred = {.size = sizeof(clattn_prediction)};
  if (predict) {
    rc = clattn_model_shape(F->name, text, pp, &prof, &pred);
    if (rc != CLATTN_OK && !pred.errmsg[0])
      fuzz_fail("%s: clattn_model_shape failed (%d) without a message", F->name,
                (int)rc);
    if (rc == CLATTN_OK)
      check_prediction(F->name, &pred);
  }
  free(text);
  return 0;
}
