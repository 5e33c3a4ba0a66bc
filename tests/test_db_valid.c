/* test_db_valid.c - the row checks against the tuner: every candidate of
 * every family's tuning space (its standard shapes, and the same with one
 * size set small, on a CPU and a GPU target) is a row that
 * clattn__tune_entry_check accepts, so the checks never refuse what the
 * tuner stores; and a field no family takes is refused by each.  Internal
 * API, no device. */
#include "db/db.h"
#include "family/family.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static clattn_tune_entry row(const clattn__family *F, const char *params) {
  clattn_tune_entry e = {.size = sizeof(clattn_tune_entry)};
  snprintf(e.fingerprint, sizeof e.fingerprint, "f");
  snprintf(e.kernel, sizeof e.kernel, "%s", F->name);
  snprintf(e.shape_class, sizeof e.shape_class, "c");
  snprintf(e.status, sizeof e.status, "ok");
  snprintf(e.updated, sizeof e.updated, "2025-01-01T00:00:00Z");
  snprintf(e.params, sizeof e.params, "%s", params);
  e.median_s = 1e-3;
  return e;
}

/* Every candidate of F's space for shape text on three targets. */
static int check_space(const clattn__family *F, const char *text) {
  static const clattn__target targets[3] = {
      {1, 1, 16, 32, 16, 4096, 1 << 20, 0}, /* AVX-512 CPU */
      {1, 1, 8, 16, 4, 4096, 32768, 0},     /* AVX2 CPU */
      {0, 0, 1, 0, 80, 1024, 49152, 0}};    /* GPU */
  _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
  char why[512];
  int n = 0;
  if (F->parse_shape(text, desc, why, sizeof why) != CLATTN_OK)
    return 0;
  for (int k = 0; k < 3; k++) {
    clattn__space s;
    memset(&s, 0, sizeof s);
    cr_assert_eq(F->space(&targets[k], desc, &s), CLATTN_OK);
    for (int i = 0; i < s.n; i++, n++) {
      clattn_tune_entry e = row(F, "");
      clattn__space_format(&s, i, e.params, sizeof e.params);
      cr_expect_eq(clattn__tune_entry_check(&e, 1, why, sizeof why), CLATTN_OK,
                   "%s [%s] candidate %s refused: %s", F->name, text, e.params,
                   why);
    }
    clattn__space_free(&s);
  }
  return n;
}

/* text with key's value replaced by 1 ("" when text lacks the key). */
static void small_variant(const char *text, const char *key, char *out,
                          size_t cap) {
  char k[48];
  snprintf(k, sizeof k, "%s=", key);
  const char *at = strstr(text, k);
  while (at && at != text && at[-1] != ' ')
    at = strstr(at + 1, k);
  out[0] = '\0';
  if (at == NULL)
    return;
  const char *end = at + strlen(k);
  end += strcspn(end, " ");
  snprintf(out, cap, "%.*s%s1%s", (int)(at - text), text, k, end);
}

Test(db_valid, every_tuner_candidate_is_a_valid_row) {
  int total = 0;
  for (int f = 0; f < clattn__family_count(); f++) {
    const clattn__family *F = clattn__family_at(f);
    for (int i = 0; F->standard_shapes && F->standard_shapes[i]; i++) {
      const char *text = F->standard_shapes[i];
      total += check_space(F, text);
      char variant[512];
      small_variant(text, "seq", variant, sizeof variant);
      if (variant[0])
        total += check_space(F, variant);
      small_variant(text, "m", variant, sizeof variant);
      if (variant[0])
        total += check_space(F, variant);
    }
  }
  cr_expect_gt(total, 1000, "only %d candidates checked", total);
}

Test(db_valid, params_no_family_takes_are_refused) {
  char why[512];
  for (int f = 0; f < clattn__family_count(); f++) {
    const clattn__family *F = clattn__family_at(f);
    if (!F->standard_shapes)
      continue; /* ignores its params */
    clattn_tune_entry e = row(F, "variant=9");
    cr_expect_eq(clattn__tune_entry_check(&e, 1, why, sizeof why),
                 CLATTN_ERR_INVALID_ARG, "%s took variant=9", F->name);
    cr_expect(strstr(why, "\"params\"") != NULL, "%s: %s", F->name, why);
    e = row(F, "variant=1 rows=-3");
    cr_expect_eq(clattn__tune_entry_check(&e, 1, why, sizeof why),
                 CLATTN_ERR_INVALID_ARG, "%s took rows=-3", F->name);
  }
}
