/* probe.c - `clattn probe`: measure the device's ceilings with
 * clattn_probe, print them as a table (or JSON) and store the measured
 * profile in the tuning database. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const int widths[CLATTN_PROBE_WIDTHS] = {1, 2, 4, 8, 16};

/* ---------------------------------------------------------------- JSON */

static void json_num(double v) {
  if (isfinite(v))
    printf("%.6g", v);
  else
    printf("null");
}

static void json_arr(const char *key, const double *v) {
  printf("  \"%s\": [", key);
  for (int i = 0; i < CLATTN_PROBE_WIDTHS; i++) {
    printf(i ? ", " : "");
    json_num(v[i]);
  }
  printf("],\n");
}

static void print_json(const clattn_profile *p, const clattn_probe_result *r,
                       const char *stored) {
  printf("{\n  \"device\": {\"name\": ");
  cli_json_str(p->name);
  printf(", \"vendor\": ");
  cli_json_str(p->vendor);
  printf(", \"platform\": ");
  cli_json_str(p->platform);
  printf(", \"driver\": ");
  cli_json_str(p->driver);
  printf(", \"arch\": ");
  cli_json_str(p->arch);
  printf(",\n    \"fingerprint\": ");
  cli_json_str(p->fingerprint);
  printf(", \"is_cpu\": %s, \"compute_units\": %u, \"clock_mhz\": %u,\n",
         p->is_cpu ? "true" : "false", p->compute_units, p->clock_mhz);
  printf("    \"wave_width\": %u, \"simds_per_cu\": %u, "
         "\"global_mem_bytes\": %llu, \"local_mem_bytes\": %llu,\n",
         p->wave_width, p->simds_per_cu, p->global_mem_bytes,
         p->local_mem_bytes);
  printf("    \"max_wg\": %zu, \"has_fp16\": %s, \"has_subgroups\": %s},\n",
         p->max_wg, p->has_fp16 ? "true" : "false",
         p->has_subgroups ? "true" : "false");
  printf("  \"widths\": [1, 2, 4, 8, 16],\n");
  json_arr("read_gbs", r->read_gbs);
  json_arr("copy_gbs", r->copy_gbs);
  json_arr("triad_gbs", r->triad_gbs);
  json_arr("fma_gflops", r->fma_gflops);
  json_arr("exp2_gops", r->exp2_gops);
  json_arr("cache_gbs", r->cache_gbs);
  json_arr("fma_wg1_gflops", r->fma_wg1_gflops);
  json_arr("exp2_wg1_gops", r->exp2_wg1_gops);
  const struct {
    const char *key;
    double v;
  } ceil[] = {
      {"bw_read_gbs", p->bw_read_gbs},
      {"bw_copy_gbs", p->bw_copy_gbs},
      {"bw_triad_gbs", p->bw_triad_gbs},
      {"fp32_gflops", p->fp32_gflops},
      {"fp16_gflops", p->fp16_gflops},
      {"local_gbs", p->local_gbs},
      {"h2d_gbs", p->h2d_gbs},
      {"d2h_gbs", p->d2h_gbs},
      {"launch_us", p->launch_us},
      {"launch_pipelined_us", p->launch_pipelined_us},
      {"launch_call_us", p->launch_call_us},
      {"exp2_gops", p->exp2_gops},
      {"cache_gbs", p->cache_gbs},
      {"barrier_ns", p->barrier_ns},
      {"unhidden", p->unhidden},
      {"fp32_wg1_gflops", p->fp32_wg1_gflops},
      {"exp2_wg1_gops", p->exp2_wg1_gops},
  };
  printf("  \"profile\": {");
  for (size_t i = 0; i < sizeof ceil / sizeof ceil[0]; i++) {
    printf("%s\"%s\": ", i ? (i % 4 ? ", " : ",\n    ") : "", ceil[i].key);
    json_num(ceil[i].v);
  }
  printf(",\n    \"probe_method\": %d, \"note\": ", p->probe_method);
  cli_json_str(p->note);
  printf("},\n  \"buffer_bytes\": %zu,\n  \"seconds\": ", r->buffer_bytes);
  json_num(r->seconds);
  printf(",\n  \"stored\": ");
  if (stored)
    cli_json_str(stored);
  else
    printf("null");
  printf("\n}\n");
}

/* --------------------------------------------------------------- table */

static void row(const char *what, const double *v, double best) {
  printf("  %-16s", what);
  for (int i = 0; i < CLATTN_PROBE_WIDTHS; i++)
    printf(" %8.1f", v[i]);
  printf(" %8.1f\n", best);
}

static void print_table(const clattn_profile *p, const clattn_probe_result *r,
                        const char *stored) {
  printf("device:       %s (%s, %s)\n", p->name, p->platform, p->vendor);
  printf("driver:       %s; %u compute units at %u MHz; wave width %u\n",
         p->driver, p->compute_units, p->clock_mhz, p->wave_width);
  printf("fingerprint:  %s\n\n", p->fingerprint);
  printf("  %-16s", "vector width");
  for (int i = 0; i < CLATTN_PROBE_WIDTHS; i++)
    printf(" %8d", widths[i]);
  printf(" %8s\n", "best");
  row("read GB/s", r->read_gbs, p->bw_read_gbs);
  row("copy GB/s", r->copy_gbs, p->bw_copy_gbs);
  row("triad GB/s", r->triad_gbs, p->bw_triad_gbs);
  row("FMA GFLOP/s", r->fma_gflops, p->fp32_gflops);
  row("FMA, wg 1", r->fma_wg1_gflops, p->fp32_wg1_gflops);
  row("exp2 G/s", r->exp2_gops, p->exp2_gops);
  row("exp2, wg 1", r->exp2_wg1_gops, p->exp2_wg1_gops);
  row("cached GB/s", r->cache_gbs, p->cache_gbs);
  printf("\n");
  if (p->has_fp16)
    printf("  %-28s %10.1f\n", "FP16 FMA GFLOP/s", r->fp16_gflops);
  else
    printf("  %-28s %10s\n", "FP16 FMA GFLOP/s", "n/a (no cl_khr_fp16)");
  printf("  %-28s %10.1f\n", "local memory GB/s", p->local_gbs);
  printf("  %-28s %10.2f\n", "host->device GB/s", p->h2d_gbs);
  printf("  %-28s %10.2f\n", "device->host GB/s", p->d2h_gbs);
  printf("  %-28s %10.1f\n", "launch us (enqueue+finish)", p->launch_us);
  printf("  %-28s %10.1f\n", "launch us (pipelined)", p->launch_pipelined_us);
  printf("  %-28s %10.1f\n", "launch us (6 buffers set)", p->launch_call_us);
  printf("  %-28s %10.1f\n", "barrier ns (a work-group)", p->barrier_ns);
  printf("  %-28s %10.2f\n", "memory/FMA overlap unhidden", p->unhidden);
  printf("  %-28s %10zu\n", "buffer MiB per array", r->buffer_bytes >> 20);
  printf("  %-28s %10.1f\n", "probe seconds", r->seconds);
  printf("  %-28s %10d\n", "probe method", p->probe_method);
  printf("\nnote:         %s\n", p->note);
  if (stored)
    printf("stored in:    %s\n", stored);
  else
    printf("stored in:    (not stored)\n");
}

/* -------------------------------------------------------------- command */

void cli_probe_opts(int quick, int thorough, clattn_probe_opts *po) {
  memset(po, 0, sizeof *po);
  po->size = sizeof *po;
  po->thorough = thorough;
  if (quick) { /* a smoke run: figures too rough to store */
    po->target_s = 0.01;
    po->repeats = 3;
    po->buffer_bytes = (size_t)16 << 20;
  }
}

int cli_probe(const cli_opts *o) {
  clattn_ctx *ctx = NULL;
  clattn_db *db = NULL;
  clattn_probe_result r = {.size = sizeof(clattn_probe_result)};
  clattn_profile r_prof = {.size = sizeof(clattn_profile)};
  clattn_probe_opts po = {.size = sizeof(clattn_probe_opts)};
  const char *stored = NULL;
  int rc = cli_ctx_create(o->device, &ctx);
  if (rc)
    return rc;
  cli_probe_opts(o->quick, o->thorough, &po);
  clattn_status st = clattn_probe(ctx, &po, &r_prof, &r);
  if (st != CLATTN_OK) {
    rc = cli_lib_fail(ctx, "clattn_probe", st);
    goto out;
  }
  if (!o->no_store && !o->quick) {
    st = clattn_db_open(o->db, &db);
    if (st != CLATTN_OK) {
      cli_err("clattn_db_open: %s: %s", clattn_status_str(st),
              clattn_db_errmsg(NULL));
      rc = CLI_FAIL;
    } else {
      st = clattn_db_put_profile(db, &r_prof);
      if (st == CLATTN_OK) {
        stored = clattn_db_path(db);
      } else {
        cli_err("clattn_db_put_profile: %s: %s", clattn_status_str(st),
                clattn_db_errmsg(db));
        rc = CLI_FAIL;
      }
    }
  }
  if (o->json)
    print_json(&r_prof, &r, stored);
  else
    print_table(&r_prof, &r, stored);
out:
  clattn_db_close(db);
  clattn_ctx_destroy(ctx);
  return rc;
}
