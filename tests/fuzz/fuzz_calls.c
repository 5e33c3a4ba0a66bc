/* fuzz_calls.c - call validation without a device: every registered
 * family's check, buffers, shape class, tuning space and model on a
 * description built from the input, and the public model functions
 * (clattn_model_attention, _decode, _kv_append, _layer, _hh_layer,
 * _switchhead_layer, _switchhead_paper, clattn_hh_layer_params, the shape
 * classes) on descriptors built from it.  They validate: each returns a
 * status (with a message when it refuses), never crashes, never overflows
 * (UBSan), and a prediction that succeeds has finite, non-negative times.
 *
 * Input: byte 0 picks what is called, byte 1 the datasheet profile; then
 * the fields in declaration order, each drawn by next_int (mostly small
 * values, some raw), one statement each so the order is defined. */
#include "fuzz_util.h"

#include "base/target.h"
#include "family/family.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct input {
  const uint8_t *p, *end;
} input;

static unsigned next_byte(input *in) { return in->p < in->end ? *in->p++ : 0; }

/* Small values most of the time (the sizes that pass the checks and reach
 * the planning), 16-bit ones, or any 32-bit pattern. */
static int next_int(input *in) {
  unsigned b = next_byte(in);
  if (b < 200)
    return (int)b - 4;
  if (b < 240)
    return (int)(next_byte(in) | next_byte(in) << 8);
  uint32_t v = 0;
  for (int i = 0; i < 4; i++)
    v |= (uint32_t)next_byte(in) << (8 * i);
  int r;
  memcpy(&r, &v, sizeof r);
  return r;
}

static float next_float(input *in) {
  unsigned b = next_byte(in);
  if (b < 128)
    return 0.0f;
  if (b < 192)
    return (float)(b - 128) / 16.0f;
  int v = next_int(in);
  float f;
  memcpy(&f, &v, sizeof f);
  return f;
}

static const clattn_params *next_params(input *in, clattn_params *p) {
  if (next_byte(in) < 128)
    return NULL;
  p->variant = next_int(in);
  p->rows = next_int(in);
  p->keys = next_int(in);
  p->wg = next_int(in);
  p->splits = next_int(in);
  p->prefetch = next_int(in);
  p->scheme = next_int(in);
  return p;
}

/* Host copies of the INTS buffers (lengths, positions) for calls of at
 * most this many sequences; larger ones get NULL. */
enum { MAX_INTS = 64 };

static const int *next_ints(input *in, int n, int *buf) {
  if (n < 1 || n > MAX_INTS || next_byte(in) < 64)
    return NULL;
  for (int i = 0; i < n; i++)
    buf[i] = next_int(in);
  return buf;
}

static void check_result(const char *what, clattn_status rc,
                         const clattn_prediction *p) {
  if (rc != CLATTN_OK) {
    if (!p->errmsg[0])
      fuzz_fail("%s: status %d without a message", what, (int)rc);
    return;
  }
  if (p->n_kernels < 0 || p->n_kernels > CLATTN_MODEL_MAX_KERNELS)
    fuzz_fail("%s: %d kernels", what, p->n_kernels);
  const clattn_cost *c = &p->total;
  if (!isfinite(c->t_pred) || c->t_pred < 0 || !isfinite(c->t_memory) ||
      !isfinite(c->t_compute) || c->t_memory < 0 || c->t_compute < 0)
    fuzz_fail("%s: t_pred %g t_memory %g t_compute %g", what, c->t_pred,
              c->t_memory, c->t_compute);
}

/* A family's operations on a description whose every 4-byte field (ints,
 * enums, floats) comes from the input, the attention options' arrays
 * excepted, and its params read as a public call reads them. */
static void fuzz_family(const clattn__family *F, input *in,
                        const clattn_profile *prof) {
  _Alignas(16) unsigned char raw[CLATTN__DESC_MAX], desc[CLATTN__DESC_MAX];
  int ints[MAX_INTS];
  clattn_params params = {.size = sizeof(clattn_params)};
  memset(raw, 0, sizeof raw);
  for (size_t o = 0; o + sizeof(int) <= F->desc_size; o += sizeof(int)) {
    int v = next_int(in);
    memcpy(raw + o, &v, sizeof v);
  }
  /* the options' scalars from the input; their arrays are host pointers,
   * which no input can make up (the unit tests check their values) */
  if (F->set_options != NULL) {
    const int window = next_int(in), softcap = next_int(in);
    float cap;
    memcpy(&cap, &softcap, sizeof cap);
    F->set_options(raw, (clattn__opts){window, cap, NULL, NULL});
  }
  memcpy(desc, raw, sizeof desc);
  /* the params as a public call reads them: refused ones never plan */
  clattn__params values;
  char why[256] = "";
  const int given = clattn__params_in(F, next_params(in, &params), &values, why,
                                      sizeof why) == CLATTN_OK;
  if (!given && !why[0])
    fuzz_fail("%s: params refused without a message", F->name);
  clattn_status rc = F->check(desc, why, sizeof why);
  if (rc == CLATTN_OK) {
    char cls[128];
    clattn__buf_spec bufs[CLATTN__MAX_BUFS];
    F->shape_class(desc, cls, sizeof cls);
    F->buffers(desc, bufs);
    size_t n_ints = 0, largest = 0;
    for (int i = 0; i < F->nbufs; i++) {
      if (bufs[i].role == CLATTN__BUF_INTS) /* the model reads them all,
                                                one after the other */
        n_ints += bufs[i].elems;
      if (bufs[i].elems > largest || bufs[i].elems == 0)
        largest = bufs[i].elems ? bufs[i].elems : SIZE_MAX;
    }
    if (largest > FUZZ_MODEL_MAX_ELEMS)
      return;
    const int *host_ints =
        n_ints <= MAX_INTS ? next_ints(in, (int)n_ints, ints) : NULL;
    clattn_prediction pred = {.size = sizeof(clattn_prediction)};
    rc = clattn__model(F, desc, given ? &values : NULL, host_ints, prof, &pred);
    check_result(F->name, rc, &pred);
    if (next_byte(in) >= 192) {
      const clattn__target t = clattn__target_of_profile(prof);
      clattn__space s;
      memset(&s, 0, sizeof s);
      if (F->space(&t, desc, &s) == CLATTN_OK &&
          (s.n < 0 || s.def >= s.n || s.pruned < 0))
        fuzz_fail("%s: space of %d candidates, default %d", F->name, s.n,
                  s.def);
      clattn__space_free(&s);
    }
  } else if (!why[0]) {
    fuzz_fail("%s: check refused without a message", F->name);
  }
}

/* Whether a call of batch sequences of len positions of heads heads each
 * is small enough to predict (FUZZ_MODEL_MAX_ELEMS); the model's loops
 * run over all three. */
static int small_enough(long batch, long len, long heads) {
  return batch <= 0 || len <= 0 || heads <= 0 ||
         (double)batch * (double)len * (double)heads <=
             (double)FUZZ_MODEL_MAX_ELEMS;
}

static void fuzz_public(unsigned which, input *in, const clattn_profile *prof) {
  clattn_prediction pred = {.size = sizeof(clattn_prediction)};
  clattn_params params = {.size = sizeof(clattn_params)};
  int ints[MAX_INTS];
  char cls[128];
  clattn_status rc;
  switch (which % 8) {
  case 0: {
    clattn_attn_desc d = {.size = sizeof(clattn_attn_desc)};
    d.batch = next_int(in);
    d.n_q = next_int(in);
    d.n_kv = next_int(in);
    d.heads_q = next_int(in);
    d.heads_kv = next_int(in);
    d.head_dim_k = next_int(in);
    d.head_dim_v = next_int(in);
    d.dtype = (clattn_dtype)next_int(in);
    d.q_layout = (clattn_layout)next_int(in);
    d.kv_layout = (clattn_layout)next_int(in);
    d.scale = next_float(in);
    d.causal = next_int(in);
    d.params = next_params(in, &params);
    clattn_shape_class_attention(&d, cls, sizeof cls);
    if (!small_enough(d.batch, (long)d.n_q + d.n_kv, d.heads_q))
      break;
    rc = clattn_model_attention(&d, next_ints(in, d.batch, ints), prof, &pred);
    check_result("clattn_model_attention", rc, &pred);
    break;
  }
  case 1:
  case 2: {
    clattn_decode_desc d = {.size = sizeof(clattn_decode_desc)};
    d.batch = next_int(in);
    d.capacity = next_int(in);
    d.heads_q = next_int(in);
    d.heads_kv = next_int(in);
    d.head_dim_k = next_int(in);
    d.head_dim_v = next_int(in);
    d.dtype = (clattn_dtype)next_int(in);
    d.cache_layout = (clattn_layout)next_int(in);
    d.scale = next_float(in);
    d.params = next_params(in, &params);
    clattn_shape_class_decode(&d, cls, sizeof cls);
    if (!small_enough(d.batch, d.capacity, d.heads_q))
      break;
    if (which % 8 == 1) {
      rc = clattn_model_decode(&d, next_ints(in, d.batch, ints), prof, &pred);
      check_result("clattn_model_decode", rc, &pred);
    } else {
      int n_new = next_int(in);
      rc = clattn_model_kv_append(&d, n_new, next_ints(in, d.batch, ints), prof,
                                  &pred);
      check_result("clattn_model_kv_append", rc, &pred);
    }
    break;
  }
  case 3: {
    clattn_layer_desc d = {.size = sizeof(clattn_layer_desc)};
    d.d_model = next_int(in);
    d.heads_q = next_int(in);
    d.heads_kv = next_int(in);
    d.head_dim_k = next_int(in);
    d.head_dim_v = next_int(in);
    d.scale = next_float(in);
    int batch = next_int(in), n = next_int(in), cache = next_int(in);
    int causal = next_int(in);
    if (!small_enough(batch, (long)n + cache, d.heads_q))
      break;
    rc = clattn_model_layer(&d, batch, n, cache, causal, prof, &pred);
    check_result("clattn_model_layer", rc, &pred);
    break;
  }
  case 4: {
    clattn_hh_layer_desc d = {.size = sizeof(clattn_hh_layer_desc)};
    d.d_model = next_int(in);
    d.heads = next_int(in);
    d.max_len = next_int(in);
    d.scale = next_float(in);
    clattn_hh_variant v = (clattn_hh_variant)next_int(in);
    int batch = next_int(in), n = next_int(in), cache = next_int(in);
    int causal = next_int(in);
    (void)clattn_hh_layer_params(v, &d);
    if (!small_enough(batch, (long)n + cache, d.heads))
      break;
    rc = clattn_model_hh_layer(v, &d, batch, n, cache, causal, prof, &pred);
    check_result("clattn_model_hh_layer", rc, &pred);
    break;
  }
  case 5: {
    clattn_switchhead_layer_desc d = {.size =
                                          sizeof(clattn_switchhead_layer_desc)};
    d.d_model = next_int(in);
    d.heads = next_int(in);
    d.head_dim = next_int(in);
    d.experts = next_int(in);
    d.topk = next_int(in);
    d.scale = next_float(in);
    int batch = next_int(in), n = next_int(in), cache = next_int(in);
    int causal = next_int(in);
    if (!small_enough(batch, (long)n + cache, (long)d.heads * d.experts))
      break;
    rc =
        clattn_model_switchhead_layer(&d, batch, n, cache, causal, prof, &pred);
    check_result("clattn_model_switchhead_layer", rc, &pred);
    break;
  }
  case 6: {
    clattn_switchhead_paper c = {.size = sizeof(clattn_switchhead_paper)};
    c.heads = next_int(in);
    c.head_dim = next_int(in);
    c.d_model = next_int(in);
    c.seq_len = next_int(in);
    c.context_blocks = next_int(in);
    c.experts = next_int(in);
    c.topk = next_int(in);
    c.rope = next_int(in);
    long long macs = -1, mem = -1;
    rc = clattn_model_switchhead_paper(&c, &macs, &mem);
    if (rc != CLATTN_OK && (macs || mem))
      fuzz_fail("clattn_model_switchhead_paper failed with outputs %lld %lld",
                macs, mem);
    if (rc == CLATTN_OK && (macs < 0 || mem < 0))
      fuzz_fail("clattn_model_switchhead_paper: %lld MACs, %lld floats", macs,
                mem);
    break;
  }
  default: {
    /* The NULL arguments every model function refuses. */
    clattn_attn_desc d = {.size = sizeof(clattn_attn_desc)};
    if (clattn_model_attention(NULL, NULL, prof, &pred) == CLATTN_OK ||
        clattn_model_attention(&d, NULL, NULL, &pred) == CLATTN_OK ||
        clattn_model_attention(&d, NULL, prof, NULL) == CLATTN_OK)
      fuzz_fail("clattn_model_attention accepted a NULL argument");
    break;
  }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in = {data, data + size};
  unsigned which = next_byte(&in);
  clattn_profile prof = {.size = sizeof(clattn_profile)};
  if (clattn_datasheet((int)(next_byte(&in) % clattn_datasheet_count()), &prof))
    fuzz_fail("clattn_datasheet failed");
  if (which < 128)
    fuzz_family(clattn__family_at((int)(which % clattn__family_count())), &in,
                &prof);
  else
    fuzz_public(which - 128, &in, &prof);
  return 0;
}
