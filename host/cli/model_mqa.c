/* model_mqa.c - `clattn model mqa`: Shazeer's memory-over-arithmetic
 * analysis of incremental decoding (spec 2.4, 3.4, 4.3) next to the same
 * ratio counted by the model, and the model's predicted decode speed-up of
 * MQA and GQA over MHA on every datasheet GPU and the present device. */
#include "cli.h"
#include "model.h"

#include <stdio.h>
#include <string.h>

/* The paper's WMT14 model: d_model 1024, h = 8, k = v = 128; incremental
 * decoding of n = 128 target positions (spec 3.5). */
enum { P_D = 1024, P_H = 8, P_K = 128, P_N = 128 };

/* Memory elements per multiply-add over n incremental steps of one
 * self-attention layer, as the model counts them: every step's compulsory
 * bytes (weights once per step, shared by the batch; x, q, o, y; the
 * K/V cache read; the appended row) over its FLOPs / 2. */
static int model_ratio(int b, int hkv, const clattn_profile *prof,
                       double *ratio) {
  const clattn_layer_desc d = {
      sizeof(clattn_layer_desc), P_D, P_H, hkv, P_K, P_K, 0.0f};
  double bytes = 0, flops = 0;
  for (int t = 0; t < P_N; t++) {
    clattn_prediction pr = {.size = sizeof(clattn_prediction)};
    clattn_status st = clattn_model_layer(&d, b, 1, t, 1, prof, &pr);
    if (st) {
      cli_err("model: %s", pr.errmsg);
      return CLI_FAIL;
    }
    bytes += pr.total.bytes_compulsory;
    flops += pr.total.flops;
  }
  *ratio = (bytes / 4.0) / (flops / 2.0);
  return CLI_OK;
}

/* Shazeer's Theta-ratio with the constants set to 1: MHA n/d + 1/b
 * (h_kv = h), MQA 1/d + n/(d h) + 1/b (h_kv = 1), GQA-G in between
 * 1/d + n G/(d h) + 1/b (spec 4.3, our generalisation). */
static double theta_ratio(int b, int hkv) {
  const double n = P_N, d = P_D, h = P_H;
  if (hkv == P_H)
    return n / d + 1.0 / b;
  return 1.0 / d + n * hkv / (d * h) + 1.0 / b;
}

static int analysis(void) {
  clattn_profile prof = {
      .size =
          sizeof(clattn_profile)}; /* the counts do not depend on the device */
  memset(&prof, 0, sizeof prof);
  prof.size = sizeof prof;
  prof.is_cpu = 0;
  prof.compute_units = 1;
  prof.max_wg = 256;
  prof.local_mem_bytes = 49152;
  static const int hkvs[3] = {P_H, 2, 1};
  static const char *names[3] = {"MHA (h_kv=8)", "GQA-2 (h_kv=2)",
                                 "MQA (h_kv=1)"};
  printf("Incremental decoding, memory over arithmetic (Shazeer 2019 §2.4, "
         "§3.1; GQA: spec 4.3)\n");
  printf("  paper shapes: d=%d, h=%d, k=v=%d, n=%d steps; model: elements "
         "moved per multiply-add\n  over the n steps of one self-attention "
         "layer (compulsory traffic: weights once per\n  step, the KV cache "
         "read each step); formula: the Theta terms with constants 1.\n",
         P_D, P_H, P_K, P_N);
  printf("  %-16s %5s %12s %12s %14s %14s\n", "variant", "b", "formula",
         "model", "formula/MHA", "model/MHA");
  for (int bi = 0; bi < 3; bi++) {
    const int b = bi == 0 ? 1 : bi == 1 ? 8 : 128;
    double mha_t = 0, mha_m = 0;
    for (int v = 0; v < 3; v++) {
      double r, t = theta_ratio(b, hkvs[v]);
      int rc = model_ratio(b, hkvs[v], &prof, &r);
      if (rc)
        return rc;
      if (v == 0) {
        mha_t = t;
        mha_m = r;
      }
      printf("  %-16s %5d %12.5f %12.5f %14.3f %14.3f\n", names[v], b, t, r,
             t / mha_t, r / mha_m);
    }
  }
  printf("  Reading: with b = 1 the 1/b term (weights) dominates every "
         "variant; as b grows MHA\n  keeps the n/d KV term and MQA divides "
         "it by h (\"reduced the offensive n/d by a\n  factor of h\").\n\n");
  return CLI_OK;
}

/* One decode step (core kernels) of each variant on one profile. */
typedef struct speed_shape {
  const char *name;
  int b, h, gqa_kv, k, m;
  clattn_dtype dt;
} speed_shape;

static const speed_shape shapes[2] = {
    {"paper WMT decoder self-attn: b=128 h=8 k=128 m=128 f16", 128, 8, 2, 128,
     128, CLATTN_F16},
    {"7B-class: b=1 h=32 k=128 m=4096 f16", 1, 32, 8, 128, 4096, CLATTN_F16},
};

static int speedup_row(const clattn_profile *p, const speed_shape *s) {
  const int hkv[3] = {s->h, s->gqa_kv, 1};
  double t[3];
  clattn_bound bound[3];
  for (int v = 0; v < 3; v++) {
    const clattn_decode_desc d = {sizeof(clattn_decode_desc),
                                  s->b,
                                  s->m,
                                  s->h,
                                  hkv[v],
                                  s->k,
                                  s->k,
                                  s->dt,
                                  CLATTN_BHSD,
                                  0.0f,
                                  NULL};
    clattn_prediction pr = {.size = sizeof(clattn_prediction)};
    if (clattn_model_decode(&d, NULL, p, &pr) != CLATTN_OK) {
      cli_err("model: %s", pr.errmsg);
      return CLI_FAIL;
    }
    t[v] = pr.total.t_pred;
    bound[v] = pr.total.bound;
  }
  if (t[0] <= 0) {
    printf("  %-46.46s  (no ceilings: run 'clattn probe')\n", p->name);
    return CLI_OK;
  }
  printf("  %-46.46s %9.1f %9.1f %9.1f %7.2fx %7.2fx  %s/%s\n", p->name,
         t[0] * 1e6, t[1] * 1e6, t[2] * 1e6, t[0] / t[1], t[0] / t[2],
         cli_bound_name(bound[0]), cli_bound_name(bound[2]));
  return CLI_OK;
}

int cli_model_mqa(const model_opts *o) {
  int rc = analysis();
  if (rc)
    return rc;
  clattn_profile present = {.size = sizeof(clattn_profile)};
  int have_present = 0;
  if (!o->no_device) {
    rc = cli_present_profile(o->device, o->db, &present);
    if (rc)
      return rc;
    have_present = 1;
  }
  for (int si = 0; si < 2; si++) {
    const speed_shape *s = &shapes[si];
    printf("Predicted decode step (attention core) and speed-up over MHA: "
           "%s\n",
           s->name);
    printf("  %-46s %9s %9s %9s %8s %8s  %s\n", "device (profile)", "MHA us",
           "GQA us", "MQA us", "GQA", "MQA", "bound MHA/MQA");
    printf("  (GQA has h_kv=%d; datasheet = theoretical peaks, measured = "
           "'clattn probe')\n",
           s->gqa_kv);
    for (int i = 0; i < clattn_datasheet_count(); i++) {
      clattn_profile p = {.size = sizeof(clattn_profile)};
      if (clattn_datasheet(i, &p) == CLATTN_OK && (rc = speedup_row(&p, s)))
        return rc;
    }
    if (have_present) {
      printf("  present device (%s profile):\n",
             cli_profile_source(present.source));
      if ((rc = speedup_row(&present, s)))
        return rc;
    }
    printf("\n");
  }
  return CLI_OK;
}
