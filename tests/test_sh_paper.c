/* test_sh_paper.c - the SwitchHead paper's accounting
 * (clattn_model_switchhead_paper): every exact integer of spec section 10,
 * which the paper's Tables 1, 2 and 7 print rounded, and the refusal of
 * bad and overflowing descriptions.  Public API only, no device. */
#include "clattn_tools.h"

#include <criterion/criterion.h>
#include <limits.h>

typedef struct sh_case {
  const char *name;
  clattn_switchhead_paper c; /* H, d_h, D, T, cb, E, k, rope */
  long long macs, mem;
} sh_case;

/* Spec section 10, in its order. */
static const sh_case cases[] = {
    {"dense XL 47M",
     {sizeof(clattn_switchhead_paper), 10, 41, 412, 256, 1, 0, 0, 0},
     453427200,
     3461120},
    {"dense XL 47M, 2 heads",
     {sizeof(clattn_switchhead_paper), 2, 205, 412, 256, 1, 0, 0, 0},
     453427200,
     1363968},
    {"dense XL 262M",
     {sizeof(clattn_switchhead_paper), 16, 64, 1024, 512, 1, 0, 0, 0},
     5368709120LL,
     20971520},
    {"dense XL 262M, 4 heads",
     {sizeof(clattn_switchhead_paper), 4, 256, 1024, 512, 1, 0, 0, 0},
     5368709120LL,
     8388608},
    {"dense XL 262M, 2 heads",
     {sizeof(clattn_switchhead_paper), 2, 512, 1024, 512, 1, 0, 0, 0},
     5368709120LL,
     6291456},
    {"dense XL Enwik8 41M",
     {sizeof(clattn_switchhead_paper), 8, 64, 512, 512, 1, 0, 0, 0},
     1610612736,
     10485760},
    {"SH WT103 47M",
     {sizeof(clattn_switchhead_paper), 2, 76, 412, 256, 1, 5, 2, 0},
     170364928,
     762880},
    {"SH C4 47M",
     {sizeof(clattn_switchhead_paper), 2, 76, 412, 256, 1, 5, 3, 0},
     202506240,
     762880},
    {"SH WT103 262M",
     {sizeof(clattn_switchhead_paper), 2, 132, 1024, 512, 1, 8, 4, 0},
     1955627008,
     2924544},
    {"SH C4 262M",
     {sizeof(clattn_switchhead_paper), 4, 112, 1024, 512, 1, 4, 2, 0},
     2358116352LL,
     5578752},
    {"SH Enwik8 41M",
     {sizeof(clattn_switchhead_paper), 2, 112, 512, 512, 1, 4, 2, 0},
     709296128,
     2793472},
    {"dense RoPE 45M",
     {sizeof(clattn_switchhead_paper), 10, 41, 412, 512, 0, 0, 0, 1},
     560906240,
     6082560},
    {"dense RoPE 244M",
     {sizeof(clattn_switchhead_paper), 16, 64, 1024, 1024, 0, 0, 0, 1},
     6442450944LL,
     37748736},
    {"SH RoPE 45M",
     {sizeof(clattn_switchhead_paper), 2, 64, 412, 512, 0, 5, 3, 1},
     285618176,
     1315840},
    /* trained with an XL cache (spec 6.5): cb = 1 */
    {"SH RoPE 243M",
     {sizeof(clattn_switchhead_paper), 4, 100, 1024, 1024, 1, 4, 2, 1},
     4212719616LL,
     18432000},
};

Test(sh_paper, spec10_exact) {
  cr_assert_eq(sizeof cases / sizeof cases[0], 15);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const sh_case *t = &cases[i];
    long long macs = -1, mem = -1;
    cr_assert_eq(clattn_model_switchhead_paper(&t->c, &macs, &mem), CLATTN_OK,
                 "%s", t->name);
    cr_expect_eq(macs, t->macs, "%s: MACs %lld, want %lld", t->name, macs,
                 t->macs);
    cr_expect_eq(mem, t->mem, "%s: mem %lld, want %lld", t->name, mem, t->mem);
  }
}

/* topk and experts: the MACs grow by (2 D + 2) H d_h T per extra expert
 * selected and memory does not ("not affected by k", Eq. 12); topk is
 * unused by the dense model. */
Test(sh_paper, topk_and_dense) {
  clattn_switchhead_paper c = {
      sizeof(clattn_switchhead_paper), 2, 76, 412, 256, 1, 5, 1, 0};
  long long m1, f1, m5, f5, md, fd;
  cr_assert_eq(clattn_model_switchhead_paper(&c, &m1, &f1), CLATTN_OK);
  c.topk = 5;
  cr_assert_eq(clattn_model_switchhead_paper(&c, &m5, &f5), CLATTN_OK);
  cr_expect_eq(m5 - m1, 4LL * (2 * 412 + 2) * 2 * 76 * 256);
  cr_expect_eq(f5, f1);
  c.experts = 0;
  cr_assert_eq(clattn_model_switchhead_paper(&c, &md, &fd), CLATTN_OK);
  c.topk = -7;
  cr_assert_eq(clattn_model_switchhead_paper(&c, &m1, &f1), CLATTN_OK);
  cr_expect(m1 == md && f1 == fd);
}

Test(sh_paper, bad_input) {
  const clattn_switchhead_paper ok = {
      sizeof(clattn_switchhead_paper), 2, 76, 412, 256, 1, 5, 2, 0};
  long long macs = 7, mem = 7;
  cr_expect_eq(clattn_model_switchhead_paper(NULL, &macs, &mem),
               CLATTN_ERR_INVALID_ARG);
  cr_expect(macs == 0 && mem == 0, "outputs cleared on failure");
  cr_expect_eq(clattn_model_switchhead_paper(&ok, NULL, &mem),
               CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_model_switchhead_paper(&ok, &macs, NULL),
               CLATTN_ERR_INVALID_ARG);
  static const struct {
    const char *what;
    clattn_switchhead_paper c;
  } bad[] = {
      {"heads 0",
       {sizeof(clattn_switchhead_paper), 0, 76, 412, 256, 1, 5, 2, 0}},
      {"head_dim 0",
       {sizeof(clattn_switchhead_paper), 2, 0, 412, 256, 1, 5, 2, 0}},
      {"d_model -1",
       {sizeof(clattn_switchhead_paper), 2, 76, -1, 256, 1, 5, 2, 0}},
      {"seq_len 0",
       {sizeof(clattn_switchhead_paper), 2, 76, 412, 0, 1, 5, 2, 0}},
      {"context_blocks -1",
       {sizeof(clattn_switchhead_paper), 2, 76, 412, 256, -1, 5, 2, 0}},
      {"experts -1",
       {sizeof(clattn_switchhead_paper), 2, 76, 412, 256, 1, -1, 1, 0}},
      {"topk 0",
       {sizeof(clattn_switchhead_paper), 2, 76, 412, 256, 1, 5, 0, 0}},
      {"topk > experts",
       {sizeof(clattn_switchhead_paper), 2, 76, 412, 256, 1, 5, 6, 0}},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    macs = mem = 7;
    cr_expect_eq(clattn_model_switchhead_paper(&bad[i].c, &macs, &mem),
                 CLATTN_ERR_SHAPE, "%s", bad[i].what);
    cr_expect(macs == 0 && mem == 0, "%s: outputs cleared", bad[i].what);
  }
}

/* Counts beyond long long are refused, not wrapped: one product past it
 * (INT_MAX^2 T^2 ...), and a sum past it whose terms each fit. */
Test(sh_paper, overflow) {
  long long macs = 7, mem = 7;
  const clattn_switchhead_paper big = {sizeof(clattn_switchhead_paper),
                                       INT_MAX,
                                       INT_MAX,
                                       INT_MAX,
                                       INT_MAX,
                                       INT_MAX,
                                       INT_MAX,
                                       INT_MAX,
                                       0};
  cr_expect_eq(clattn_model_switchhead_paper(&big, &macs, &mem),
               CLATTN_ERR_SHAPE);
  cr_expect(macs == 0 && mem == 0);
  /* T = 2^16: 2 d_h T^2 = 2^63 - 2^33 alone fits with d_h = 2^30 - 1, the
   * projections' 4 d_h T push the sum over */
  const clattn_switchhead_paper sum = {sizeof(clattn_switchhead_paper),
                                       1,
                                       (1 << 30) - 1,
                                       1,
                                       1 << 16,
                                       0,
                                       0,
                                       0,
                                       1};
  cr_expect_eq(clattn_model_switchhead_paper(&sum, &macs, &mem),
               CLATTN_ERR_SHAPE);
  /* half the head width fits: 2^62 + 2^47 */
  const clattn_switchhead_paper fits = {
      sizeof(clattn_switchhead_paper), 1, 1 << 29, 1, 1 << 16, 0, 0, 0, 1};
  cr_expect_eq(clattn_model_switchhead_paper(&fits, &macs, &mem), CLATTN_OK);
  cr_expect_eq(macs, (1LL << 62) + (1LL << 47));
  cr_expect_eq(mem, (1LL << 33) + (1LL << 47));
}
