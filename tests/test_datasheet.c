/* test_datasheet.c - the shipped vendor datasheet profiles
 * (host/data/datasheets.txt) and their strict parser.  No device needed.
 *
 * The FP32 and bandwidth cross-checks live in the parser itself (a bad
 * line fails to load); the tests below re-check them on the parsed entries
 * through the internal header, and feed broken texts to the parser to see
 * the errors and their line numbers. */
#include "clattn_tools.h"
#include "device/datasheet.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_SHEETS 64

typedef struct sheets {
  int n;
  clattn__sheet s[MAX_SHEETS];
} sheets;

static void collect(const clattn__sheet *s, void *ud) {
  sheets *all = ud;
  if (all->n < MAX_SHEETS)
    all->s[all->n] = *s;
  all->n++;
}

/* Every entry of the embedded file (the test fails on a parse error). */
static sheets *embedded(void) {
  static sheets all; /* one test per process under Criterion */
  char err[256];
  int line = -1, count = -1;
  memset(&all, 0, sizeof all);
  clattn_status st = clattn__datasheet_parse(
      clattn__datasheets_txt, clattn__datasheets_txt_len, collect, &all, &count,
      &line, err, sizeof err);
  cr_assert_eq(st, CLATTN_OK, "datasheets.txt: %s", err);
  cr_assert_eq(line, 0);
  cr_assert_str_eq(err, "");
  cr_assert_eq(count, all.n);
  cr_assert_leq(all.n, MAX_SHEETS);
  return &all;
}

/* Parse a test text; returns the status, fills line and err. */
static clattn_status parse_text(const char *text, int *count, int *line,
                                char *err, size_t errlen) {
  return clattn__datasheet_parse(text, strlen(text), NULL, NULL, count, line,
                                 err, errlen);
}

/* ------------------------------------------------------- embedded file */

Test(datasheet, embedded_parses) {
  sheets *all = embedded();
  cr_expect_geq(all->n, 12, "only %d datasheets", all->n);
  cr_expect_eq(clattn_datasheet_count(), all->n);
}

Test(datasheet, per_vendor) {
  sheets *all = embedded();
  const char *vendors[] = {"AMD", "Intel", "NVIDIA"};
  for (int v = 0; v < 3; v++) {
    int n = 0;
    for (int i = 0; i < all->n; i++)
      n += strcmp(all->s[i].p.vendor, vendors[v]) == 0;
    cr_expect_geq(n, 4, "%s: %d datasheets", vendors[v], n);
  }
  for (int i = 0; i < all->n; i++) {
    const char *v = all->s[i].p.vendor;
    cr_expect(strcmp(v, "AMD") == 0 || strcmp(v, "Intel") == 0 ||
                  strcmp(v, "NVIDIA") == 0,
              "%s: vendor '%s'", all->s[i].p.name, v);
  }
}

Test(datasheet, fields) {
  sheets *all = embedded();
  for (int i = 0; i < all->n; i++) {
    const clattn_profile *p = &all->s[i].p;
    const char *nm = p->name;
    cr_expect_eq(p->source, CLATTN_PROFILE_DATASHEET, "%s", nm);
    cr_expect_str_eq(p->fingerprint, "", "%s", nm);
    cr_expect(nm[0] != '\0');
    cr_expect(p->arch[0] != '\0', "%s: arch", nm);
    cr_expect_eq(p->is_cpu, 0, "%s", nm);
    cr_expect_gt(p->compute_units, 0, "%s", nm);
    cr_expect_gt(p->clock_mhz, 0, "%s", nm);
    cr_expect(p->wave_width == 8 || p->wave_width == 16 ||
                  p->wave_width == 32 || p->wave_width == 64,
              "%s: wave_width %u", nm, p->wave_width);
    cr_expect_gt(p->simds_per_cu, 0, "%s", nm);
    cr_expect_geq(p->local_mem_bytes, 32768, "%s", nm);
    cr_expect(p->max_wg >= 256 && p->max_wg <= 1024, "%s: max_wg %zu", nm,
              p->max_wg);
    /* Only integrated GPUs (Xe-LP here) have no memory of their own. */
    if (strstr(p->arch, "Xe-LP") == NULL)
      cr_expect_geq(p->global_mem_bytes, 4ull << 30, "%s", nm);
    /* every shipped entry names its last-level cache (the model uses it) */
    cr_expect(p->cache_bytes >= (1ull << 20) && p->cache_bytes <= (1ull << 30),
              "%s: cache %llu", nm, p->cache_bytes);
    cr_expect_gt(p->bw_read_gbs, 0.0, "%s", nm);
    cr_expect(p->bw_copy_gbs == p->bw_read_gbs &&
                  p->bw_triad_gbs == p->bw_read_gbs,
              "%s: bandwidth fields differ", nm);
    cr_expect_gt(p->fp32_gflops, 0.0, "%s", nm);
    cr_expect_eq(p->has_fp16, p->fp16_gflops > 0.0, "%s", nm);
    if (p->fp16_gflops > 0.0)
      cr_expect_geq(p->fp16_gflops, p->fp32_gflops, "%s", nm);
    /* Unknown ceilings stay 0. */
    cr_expect(p->local_gbs == 0.0 && p->h2d_gbs == 0.0 && p->d2h_gbs == 0.0 &&
                  p->launch_us == 0.0 && p->launch_pipelined_us == 0.0,
              "%s: unknown ceilings not 0", nm);
    cr_expect(strncmp(p->note, "http", 4) == 0, "%s: note '%s'", nm, p->note);
    cr_expect(all->s[i].line > 0, "%s", nm);
  }
}

Test(datasheet, fp32_cross_check) {
  sheets *all = embedded();
  for (int i = 0; i < all->n; i++) {
    const clattn__sheet *s = &all->s[i];
    double want = 2.0 * s->p.compute_units * s->fp32_lanes_per_cu *
                  s->p.clock_mhz / 1000.0;
    cr_expect_leq(fabs(s->p.fp32_gflops - want), 0.03 * want,
                  "%s: fp32 %.1f vs 2 x %u x %u x %u MHz = %.1f", s->p.name,
                  s->p.fp32_gflops, s->p.compute_units, s->fp32_lanes_per_cu,
                  s->p.clock_mhz, want);
    double bw = s->mem_bus_bits / 8.0 * s->mem_gbps;
    cr_expect_leq(fabs(s->p.bw_read_gbs - bw), 0.03 * bw,
                  "%s: bandwidth %.1f vs %u bits x %.3f Gbit/s = %.1f",
                  s->p.name, s->p.bw_read_gbs, s->mem_bus_bits, s->mem_gbps,
                  bw);
  }
}

Test(datasheet, sources_are_urls) {
  sheets *all = embedded();
  for (int i = 0; i < all->n; i++) {
    const char *note = all->s[i].p.note;
    /* "url; url; ..." - every part an http(s) URL */
    const char *part = note;
    int parts = 0;
    while (part) {
      cr_expect(strncmp(part, "http://", 7) == 0 ||
                    strncmp(part, "https://", 8) == 0,
                "%s: source '%s'", all->s[i].p.name, part);
      parts++;
      part = strstr(part, "; ");
      if (part)
        part += 2;
    }
    cr_expect_geq(parts, 1);
  }
}

Test(datasheet, names_unique) {
  sheets *all = embedded();
  for (int i = 0; i < all->n; i++)
    for (int j = 0; j < i; j++)
      cr_expect_str_neq(all->s[i].p.name, all->s[j].p.name);
}

/* ------------------------------------------------------------ public API */

Test(datasheet, by_index) {
  sheets *all = embedded();
  clattn_profile p = {.size = sizeof(clattn_profile)};
  for (int i = 0; i < all->n; i++) {
    memset(&p, 0xab, sizeof p);
    p.size = sizeof p;
    cr_assert_eq(clattn_datasheet(i, &p), CLATTN_OK, "index %d", i);
    const clattn_profile *q = &all->s[i].p;
    cr_expect_str_eq(p.name, q->name, "index %d", i);
    cr_expect_str_eq(p.vendor, q->vendor);
    cr_expect_str_eq(p.arch, q->arch);
    cr_expect_str_eq(p.note, q->note);
    cr_expect_str_eq(p.fingerprint, "");
    cr_expect(p.compute_units == q->compute_units &&
                  p.clock_mhz == q->clock_mhz &&
                  p.wave_width == q->wave_width &&
                  p.simds_per_cu == q->simds_per_cu &&
                  p.local_mem_bytes == q->local_mem_bytes &&
                  p.global_mem_bytes == q->global_mem_bytes &&
                  p.max_wg == q->max_wg && p.has_fp16 == q->has_fp16 &&
                  p.fp32_gflops == q->fp32_gflops &&
                  p.fp16_gflops == q->fp16_gflops &&
                  p.bw_triad_gbs == q->bw_triad_gbs && p.h2d_gbs == 0.0,
              "index %d: fields differ", i);
  }
  memset(&p, 0xab, sizeof p);
  p.size = sizeof p;
  cr_expect_eq(clattn_datasheet(all->n, &p), CLATTN_ERR_NOT_FOUND);
  cr_expect_eq(p.name[0], '\0', "out not cleared on NOT_FOUND");
  cr_expect_eq(clattn_datasheet(-1, &p), CLATTN_ERR_NOT_FOUND);
  cr_expect_eq(clattn_datasheet(1 << 30, &p), CLATTN_ERR_NOT_FOUND);
  cr_expect_eq(clattn_datasheet(0, NULL), CLATTN_ERR_INVALID_ARG);
}

Test(datasheet, find) {
  struct {
    const char *query;
    const char *vendor;
    const char *name_has;
  } cases[] = {
      {"a100", "NVIDIA", "A100"},    {"A100-SXM4", "NVIDIA", "A100"},
      {"h100", "NVIDIA", "H100"},    {"rtx 4090", "NVIDIA", "4090"},
      {"t4", "NVIDIA", "T4"},        {"MI300", "AMD", "MI300X"},
      {"mi210", "AMD", "MI210"},     {"7900 XTX", "AMD", "7900"},
      {"6800 xt", "AMD", "6800"},    {"arc a770", "Intel", "A770"},
      {"ARC B580", "Intel", "B580"}, {"max 1550", "Intel", "1550"},
      {"iris xe", "Intel", "Iris"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    clattn_profile p = {.size = sizeof(clattn_profile)};
    clattn_status st = clattn_datasheet_find(cases[i].query, &p);
    cr_expect_eq(st, CLATTN_OK, "find '%s': %s", cases[i].query,
                 clattn_status_str(st));
    if (st != CLATTN_OK)
      continue;
    cr_expect_str_eq(p.vendor, cases[i].vendor, "find '%s'", cases[i].query);
    cr_expect(strstr(p.name, cases[i].name_has) != NULL, "find '%s' gave '%s'",
              cases[i].query, p.name);
    cr_expect_eq(p.source, CLATTN_PROFILE_DATASHEET);
  }
  /* The first match wins: "nvidia" is the first NVIDIA entry. */
  clattn_profile first = {.size = sizeof(clattn_profile)},
                 p = {.size = sizeof(clattn_profile)};
  cr_assert_eq(clattn_datasheet_find("NVIDIA", &p), CLATTN_OK);
  sheets *all = embedded();
  int k = 0;
  while (k < all->n && strcmp(all->s[k].p.vendor, "NVIDIA") != 0)
    k++;
  cr_assert_lt(k, all->n);
  cr_assert_eq(clattn_datasheet(k, &first), CLATTN_OK);
  cr_expect_str_eq(p.name, first.name);
}

Test(datasheet, find_errors) {
  clattn_profile p = {.size = sizeof(clattn_profile)};
  memset(&p, 0xab, sizeof p);
  p.size = sizeof p;
  cr_expect_eq(clattn_datasheet_find("no such gpu 9000", &p),
               CLATTN_ERR_NOT_FOUND);
  cr_expect_eq(p.name[0], '\0', "out not cleared on NOT_FOUND");
  cr_expect_eq(clattn_datasheet_find(NULL, &p), CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_datasheet_find("a100", NULL), CLATTN_ERR_INVALID_ARG);
  cr_expect_eq(clattn_datasheet_find("", &p), CLATTN_ERR_INVALID_ARG);
}

/* ---------------------------------------------------------------- parser */

/* A valid entry; the broken texts below edit it. */
#define GOOD_ENTRY                                                             \
  "[Test GPU 1]\n"                                                             \
  "vendor = NVIDIA\n"                                                          \
  "arch = Test\n"                                                              \
  "compute_units = 10\n"                                                       \
  "clock_mhz = 1000\n"                                                         \
  "wave_width = 32\n"                                                          \
  "simds_per_cu = 4\n"                                                         \
  "fp32_lanes_per_cu = 64\n"                                                   \
  "local_mem = 48 KiB\n"                                                       \
  "max_wg = 1024\n"                                                            \
  "global_mem = 8 GiB\n"                                                       \
  "mem_bus_bits = 256\n"                                                       \
  "mem_gbps = 16\n"                                                            \
  "bandwidth_gbs = 512\n"                                                      \
  "fp32_gflops = 1280\n"                                                       \
  "fp16_gflops = 2560\n"                                                       \
  "source = https://example.com/a#frag\n"

Test(parser, good_text) {
  const char *text = "# comment\n\n" GOOD_ENTRY
                     "source = http://example.com/b   # trailing comment\n"
                     "\n[  Second  ]\r\n"
                     "vendor = AMD\narch = X\ncompute_units = 1\n"
                     "clock_mhz = 1000\nwave_width = 64\nsimds_per_cu = 4\n"
                     "fp32_lanes_per_cu = 64\nlocal_mem = 65536\n"
                     "max_wg = 256\nglobal_mem = 0\nmem_bus_bits = 64\n"
                     "mem_gbps = 1.5\nbandwidth_gbs = 12\nfp32_gflops = 128\n"
                     "fp16_gflops = 0\nsource = https://example.org\n";
  sheets all;
  memset(&all, 0, sizeof all);
  char err[256];
  int count = -1, line = -1;
  clattn_status st = clattn__datasheet_parse(text, strlen(text), collect, &all,
                                             &count, &line, err, sizeof err);
  cr_assert_eq(st, CLATTN_OK, "%s", err);
  cr_expect_eq(count, 2);
  cr_expect_eq(line, 0);
  const clattn_profile *p = &all.s[0].p;
  cr_expect_str_eq(p->name, "Test GPU 1");
  cr_expect_eq(all.s[0].line, 3);
  cr_expect_eq(p->local_mem_bytes, 48u * 1024u);
  cr_expect_eq(p->global_mem_bytes, 8ull << 30);
  cr_expect_eq(p->max_wg, 1024);
  cr_expect_eq(p->bw_read_gbs, 512.0);
  cr_expect_eq(p->has_fp16, 1);
  cr_expect_str_eq(p->note, "https://example.com/a#frag; http://example.com/b");
  p = &all.s[1].p;
  cr_expect_str_eq(p->name, "Second");
  cr_expect_eq(p->has_fp16, 0);
  cr_expect_eq(p->global_mem_bytes, 0);
  cr_expect_eq(all.s[1].mem_gbps, 1.5);
  cr_expect_eq(p->local_mem_bytes, 65536);
  /* Empty text: no entries, no error. */
  int n = -1;
  cr_expect_eq(parse_text("", &n, &line, err, sizeof err), CLATTN_OK);
  cr_expect_eq(n, 0);
}

/* One broken text, the line the error must name, and a word of the
 * message. */
typedef struct broken {
  const char *text;
  int line;
  const char *msg;
} broken;

Test(parser, errors_name_the_line) {
  broken cases[] = {
      /* unknown key, line 18 (after the 17 good lines) */
      {GOOD_ENTRY "boost_mhz = 1000\n", 18, "unknown key 'boost_mhz'"},
      /* repeated key */
      {GOOD_ENTRY "clock_mhz = 1000\n", 18, "repeated key 'clock_mhz'"},
      /* malformed numbers */
      {GOOD_ENTRY "[B]\nvendor = AMD\ncompute_units = 1x\n", 20,
       "not an unsigned integer"},
      {"[B]\nclock_mhz = -5\n", 2, "not an unsigned integer"},
      {"[B]\nclock_mhz = 99999999999\n", 2, "not an unsigned integer"},
      {"[B]\nmem_gbps = 1.2.3\n", 2, "not a decimal number"},
      {"[B]\nmem_gbps = 1e3\n", 2, "not a decimal number"},
      {"[B]\nmem_gbps = .5\n", 2, "not a decimal number"},
      {"[B]\nlocal_mem = 48 KB\n", 2, "not a byte count"},
      {"[B]\ncompute_units = 0\n", 2, "greater than 0"},
      /* missing key: reported at the entry's header */
      {"# x\n[B]\nvendor = AMD\n", 2, "missing key 'arch'"},
      {GOOD_ENTRY "\n[C]\n", 19, "missing key 'vendor'"},
      /* syntax */
      {"vendor = AMD\n", 1, "outside an [entry]"},
      {"[B\n", 1, "expected '[name]'"},
      {"[ ]\n", 1, "empty entry name"},
      {"[B]\njust words\n", 2, "expected '[name]' or 'key = value'"},
      {"[B]\nvendor =\n", 2, "has no value"},
      {"[B]\nsource = ftp://x\n", 2, "not one http(s) URL"},
      {"[B]\nsource = http://a b\n", 2, "not one http(s) URL"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char err[256];
    int line = -1, count = -1;
    clattn_status st =
        parse_text(cases[i].text, &count, &line, err, sizeof err);
    cr_expect_eq(st, CLATTN_ERR_DB, "case %zu parsed", i);
    cr_expect_eq(line, cases[i].line, "case %zu: line %d, want %d (%s)", i,
                 line, cases[i].line, err);
    char want[32];
    snprintf(want, sizeof want, "line %d: ", cases[i].line);
    cr_expect(strncmp(err, want, strlen(want)) == 0, "case %zu: '%s'", i, err);
    cr_expect(strstr(err, cases[i].msg) != NULL, "case %zu: '%s', want '%s'", i,
              err, cases[i].msg);
  }
}

Test(parser, cross_checks) {
  /* 2 x 10 CUs x 64 lanes x 1000 MHz = 1280 GFLOP/s; 4% off fails. */
  const char *fp32 =
      GOOD_ENTRY "[Bad FP32]\nvendor = AMD\narch = X\ncompute_units = 10\n"
                 "clock_mhz = 1000\nwave_width = 64\nsimds_per_cu = 4\n"
                 "fp32_lanes_per_cu = 64\nlocal_mem = 64 KiB\nmax_wg = 1024\n"
                 "global_mem = 1 GiB\nmem_bus_bits = 256\nmem_gbps = 16\n"
                 "bandwidth_gbs = 512\nfp32_gflops = 1332\n"
                 "fp16_gflops = 0\nsource = https://x.org\n";
  char err[256];
  int line = -1, count = -1;
  cr_expect_eq(parse_text(fp32, &count, &line, err, sizeof err), CLATTN_ERR_DB);
  cr_expect_eq(line, 18, "%s", err);
  cr_expect(strstr(err, "fp32_gflops") != NULL, "%s", err);
  cr_expect_eq(count, 1, "the good entry before still counts");

  /* 2% off passes. */
  char ok[2048];
  snprintf(ok, sizeof ok, "%s", fp32);
  char *at = strstr(ok, "fp32_gflops = 1332");
  cr_assert_not_null(at);
  memcpy(at, "fp32_gflops = 1305", 18);
  cr_expect_eq(parse_text(ok, &count, &line, err, sizeof err), CLATTN_OK, "%s",
               err);

  /* bandwidth: 256 bits x 16 Gbit/s = 512 GB/s; 600 fails. */
  at = strstr(ok, "bandwidth_gbs = 512\nfp32_gflops = 1305");
  cr_assert_not_null(at);
  memcpy(at, "bandwidth_gbs = 600", 19);
  cr_expect_eq(parse_text(ok, &count, &line, err, sizeof err), CLATTN_ERR_DB);
  cr_expect(strstr(err, "bandwidth_gbs") != NULL, "%s", err);

  /* fp16 below fp32 fails. */
  const char *fp16 = "[H]\nvendor = AMD\narch = X\ncompute_units = 10\n"
                     "clock_mhz = 1000\nwave_width = 64\nsimds_per_cu = 4\n"
                     "fp32_lanes_per_cu = 64\nlocal_mem = 64 KiB\n"
                     "max_wg = 1024\nglobal_mem = 1 GiB\nmem_bus_bits = 256\n"
                     "mem_gbps = 16\nbandwidth_gbs = 512\n"
                     "fp32_gflops = 1280\nfp16_gflops = 640\n"
                     "source = https://x.org\n";
  cr_expect_eq(parse_text(fp16, &count, &line, err, sizeof err), CLATTN_ERR_DB);
  cr_expect_eq(line, 1);
  cr_expect(strstr(err, "fp16_gflops") != NULL, "%s", err);
}

Test(parser, limits) {
  char err[256];
  int line = -1, count = -1;
  /* A name longer than the profile's field. */
  char text[1200];
  memset(text, 0, sizeof text);
  text[0] = '[';
  memset(text + 1, 'x', 200);
  memcpy(text + 201, "]\n", 2);
  cr_expect_eq(parse_text(text, &count, &line, err, sizeof err), CLATTN_ERR_DB);
  cr_expect(strstr(err, "name is longer") != NULL, "%s", err);
  /* A line longer than the parser's buffer. */
  memset(text, 'y', 1100);
  text[1100] = '\n';
  text[1101] = '\0';
  cr_expect_eq(parse_text(text, &count, &line, err, sizeof err), CLATTN_ERR_DB);
  cr_expect_eq(line, 1);
  /* A NUL byte inside the given length. */
  const char nul[] = "[B]\nvendor = A\0D\n";
  cr_expect_eq(clattn__datasheet_parse(nul, sizeof nul - 1, NULL, NULL, &count,
                                       &line, err, sizeof err),
               CLATTN_ERR_DB);
  cr_expect_eq(line, 2);
  /* Tiny and absent error buffers are fine. */
  char tiny[4];
  cr_expect_eq(parse_text("[B\n", &count, &line, tiny, sizeof tiny),
               CLATTN_ERR_DB);
  cr_expect_eq(strlen(tiny), 3);
  cr_expect_eq(parse_text("[B\n", NULL, NULL, NULL, 0), CLATTN_ERR_DB);
  cr_expect_eq(
      clattn__datasheet_parse(NULL, 0, NULL, NULL, &count, NULL, NULL, 0),
      CLATTN_OK);
  cr_expect_eq(
      clattn__datasheet_parse(NULL, 5, NULL, NULL, &count, NULL, NULL, 0),
      CLATTN_ERR_INVALID_ARG);
}
