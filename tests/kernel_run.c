/* kernel_run.c - run one call of tests/model_cases.h on the default device
 * (random inputs) and exit: 0 on success, 1 on a library failure (message
 * on stderr), 2 on bad usage.  tests/test_model.c runs it under Oclgrind's
 * instruction counter; it checks nothing itself.
 *
 *   kernel_run INDEX */
#include "model_cases.h"
#include "device/probe.h"

#include <stdio.h>
#include <stdlib.h>

static int die(clattn_ctx *ctx, const char *what, clattn_status st) {
  fprintf(stderr, "kernel_run: %s: %s: %s\n", what, clattn_status_str(st),
          ctx ? clattn_ctx_errmsg(ctx) : clattn_ctx_errmsg(NULL));
  return 1;
}

/* A buffer of n elements of `es` bytes with pseudo-random bits that are
 * finite small numbers in every storage type (as f32: the upper half of
 * the bits is a bf16/f16-safe pattern). */
static cl_mem random_buffer(cl_context c, size_t n, size_t es, cl_int *err) {
  size_t bytes = n * es > 0 ? n * es : 1;
  unsigned short *h = malloc(bytes + 2);
  if (h == NULL) {
    *err = CL_OUT_OF_HOST_MEMORY;
    return NULL;
  }
  unsigned x = 12345u;
  for (size_t i = 0; i < bytes / 2 + 1; i++) {
    x = x * 1103515245u + 12345u;
    /* sign, exponent 0x3c..0x3e (f16 ~0.25..1), small mantissa: also a
     * small bf16 and, paired, a small f32 */
    h[i] = (unsigned short)((x >> 16 & 0x8000u) | 0x3800u | (x >> 8 & 0x3ffu));
  }
  cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            bytes, h, err);
  free(h);
  return m;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: kernel_run INDEX (0..%d)\n", MODEL_CASES - 1);
    return 2;
  }
  const int idx = atoi(argv[1]);
  if (idx < 0 || idx >= MODEL_CASES) {
    fprintf(stderr, "kernel_run: no case %s\n", argv[1]);
    return 2;
  }
  const model_case *mc = &model_cases[idx];
  clattn_ctx *ctx = NULL;
  clattn_status st = clattn_ctx_create(NULL, &ctx);
  if (st)
    return die(NULL, "clattn_ctx_create", st);
  if (mc->kind == MC_PROBE) {
    st = clattn__probe_launch(ctx, (clattn__probe_kernel)mc->probe, mc->vw,
                              (size_t)mc->items, (size_t)mc->lws);
    int rc = st ? die(ctx, mc->name, st) : 0;
    clattn_ctx_destroy(ctx);
    return rc;
  }
  cl_context c = clattn_ctx_cl_context(ctx);
  const size_t es = clattn_dtype_size(mc->dtype);
  const size_t B = (size_t)mc->batch;
  cl_int err = CL_SUCCESS, e2 = CL_SUCCESS, e3 = CL_SUCCESS, e4 = CL_SUCCESS;
  cl_mem bufs[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
  cl_mem lens = NULL;
  if (mc->lens[0] >= 0) {
    cl_int l[2] = {mc->lens[0], mc->lens[1]};
    lens = clCreateBuffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                          B * sizeof(cl_int), l, &err);
  } else if (mc->kind == MC_DECODE) {
    cl_int l[2] = {mc->m, mc->m};
    lens = clCreateBuffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                          B * sizeof(cl_int), l, &err);
  }
  if (err != CL_SUCCESS) {
    fprintf(stderr, "kernel_run: clCreateBuffer: %s\n", clattn_cl_errstr(err));
    clattn_ctx_destroy(ctx);
    return 1;
  }
  const size_t hq = (size_t)mc->hq, hkv = (size_t)mc->hkv;
  const size_t dk = (size_t)mc->dk, dv = (size_t)mc->dv;
  if (mc->kind == MC_ATTENTION) {
    const size_t n = (size_t)mc->n, m = (size_t)mc->m;
    bufs[0] = random_buffer(c, B * n * hq * dk, es, &err);
    bufs[1] = random_buffer(c, B * m * hkv * dk, es, &e2);
    bufs[2] = random_buffer(c, B * m * hkv * dv, es, &e3);
    bufs[3] = random_buffer(c, B * n * hq * dv, es, &e4);
    if (!err && !e2 && !e3 && !e4) {
      const clattn_attn_desc d = {mc->batch, mc->n, mc->m, mc->hq, mc->hkv,
                                  mc->dk, mc->dv, mc->dtype, mc->layout,
                                  mc->layout, 0.0f, mc->causal, &mc->params};
      st = clattn_attention(ctx, &d, bufs[0], bufs[1], bufs[2], lens,
                            bufs[3], NULL);
    }
  } else {
    const size_t cap = (size_t)mc->m;
    const clattn_decode_desc d = {mc->batch, mc->m, mc->hq, mc->hkv,
                                  mc->dk, mc->dv, mc->dtype, mc->layout,
                                  0.0f, &mc->params};
    bufs[0] = random_buffer(c, B * cap * hkv * dk, es, &err);
    bufs[1] = random_buffer(c, B * cap * hkv * dv, es, &e2);
    if (mc->kind == MC_DECODE) {
      bufs[2] = random_buffer(c, B * hq * dk, es, &e3);
      bufs[3] = random_buffer(c, B * hq * dv, es, &e4);
      if (!err && !e2 && !e3 && !e4)
        st = clattn_decode(ctx, &d, bufs[2], bufs[0], bufs[1], lens, bufs[3],
                           NULL);
    } else {
      const size_t nn = (size_t)mc->n;
      bufs[2] = random_buffer(c, B * nn * hkv * dk, es, &e3);
      bufs[3] = random_buffer(c, B * nn * hkv * dv, es, &e4);
      if (!err && !e2 && !e3 && !e4)
        st = clattn_kv_append(ctx, &d, mc->n, bufs[2], bufs[3], lens,
                              bufs[0], bufs[1], NULL);
    }
  }
  int rc = 0;
  if (err || e2 || e3 || e4) {
    fprintf(stderr, "kernel_run: clCreateBuffer failed\n");
    rc = 1;
  } else if (st) {
    rc = die(ctx, mc->name, st);
  } else if ((err = clFinish(clattn_ctx_queue(ctx))) != CL_SUCCESS) {
    fprintf(stderr, "kernel_run: clFinish: %s\n", clattn_cl_errstr(err));
    rc = 1;
  }
  for (int i = 0; i < 6; i++)
    if (bufs[i])
      clReleaseMemObject(bufs[i]);
  if (lens)
    clReleaseMemObject(lens);
  clattn_ctx_destroy(ctx);
  return rc;
}
