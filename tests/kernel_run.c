/* kernel_run.c - run one call of tests/model_cases.h on the default device
 * (random inputs) and exit: 0 on success, 1 on a library failure (message
 * on stderr), 2 on bad usage.  tests/test_model.c runs it under Oclgrind's
 * instruction counter; it checks nothing itself.  Each launch's local size
 * is printed with the counts, as "clattn-lws KERNEL ITEMS" (the work-items a
 * work-group, 0 when the library passes none): meson links it with
 * clattn__launch wrapped, so the size is the one the family passes, before
 * the runtime fills one in for a CPU device.
 *
 *   kernel_run INDEX */
#include "call/call.h"
#include "device/probe.h"
#include "model_cases.h"
#include "runtime/runtime.h"

#include <stdio.h>
#include <stdlib.h>

clattn_status __real_clattn__launch(clattn_ctx *ctx, cl_kernel k, cl_uint dims,
                                    const size_t *gws, const size_t *lws,
                                    cl_uint num_wait, const cl_event *wait,
                                    cl_event *out);
clattn_status __wrap_clattn__launch(clattn_ctx *ctx, cl_kernel k, cl_uint dims,
                                    const size_t *gws, const size_t *lws,
                                    cl_uint num_wait, const cl_event *wait,
                                    cl_event *out);

clattn_status __wrap_clattn__launch(clattn_ctx *ctx, cl_kernel k, cl_uint dims,
                                    const size_t *gws, const size_t *lws,
                                    cl_uint num_wait, const cl_event *wait,
                                    cl_event *out) {
  char name[128] = "?";
  clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
  size_t items = lws != NULL;
  for (cl_uint i = 0; lws != NULL && i < dims; i++)
    items *= lws[i];
  printf("clattn-lws %s %zu\n", name, items);
  fflush(stdout); /* whole lines, between Oclgrind's reports */
  return __real_clattn__launch(ctx, k, dims, gws, lws, num_wait, wait, out);
}

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
  cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                            h, err);
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
  if (mc->family == NULL) {
    st = clattn__probe_launch(ctx, (clattn__probe_kernel)mc->probe, mc->vw,
                              (size_t)mc->items, (size_t)mc->lws);
    int rc = st ? die(ctx, mc->name, st) : 0;
    clattn_ctx_destroy(ctx);
    return rc;
  }
  const clattn__family *F = NULL;
  _Alignas(16) unsigned char d[CLATTN__DESC_MAX];
  clattn__buf_spec spec[CLATTN__MAX_BUFS];
  cl_mem bufs[CLATTN__MAX_BUFS] = {NULL};
  cl_int err = CL_SUCCESS;
  clattn__params values;
  if ((st = model_case_desc(mc, &F, d, &values))) {
    clattn_ctx_destroy(ctx);
    return die(NULL, mc->name, st);
  }
  cl_context c = clattn_ctx_cl_context(ctx);
  F->buffers(d, spec);
  for (int i = 0; i < F->nbufs && err == CL_SUCCESS; i++) {
    const clattn__buf_spec *b = &spec[i];
    if (b->role != CLATTN__BUF_INTS) {
      bufs[i] = random_buffer(c, b->elems, clattn_dtype_size(b->dtype), &err);
    } else if (F->fill_ints) {
      /* a table the family makes from the case's values (NULL: its full
       * call's) */
      cl_int *x = malloc(b->elems * sizeof *x);
      if (x == NULL) {
        err = CL_OUT_OF_HOST_MEMORY;
        break;
      }
      F->fill_ints(d, i, mc->ints[0] >= 0 ? mc->ints : NULL, F->full_int(d), x);
      bufs[i] = clCreateBuffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                               b->elems * sizeof(cl_int), x, &err);
      free(x);
    } else if (mc->ints[0] >= 0 || !b->optional) {
      cl_int v[2] = {mc->ints[0], mc->ints[1]};
      for (int k = 0; k < 2 && mc->ints[0] < 0; k++)
        v[k] = F->full_int(d);
      bufs[i] = clCreateBuffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                               b->elems * sizeof(cl_int), v, &err);
    }
  }
  if (err == CL_SUCCESS)
    st = clattn__call(ctx, F, d, &values, bufs, NULL);
  int rc = 0;
  if (err) {
    fprintf(stderr, "kernel_run: clCreateBuffer: %s\n", clattn_cl_errstr(err));
    rc = 1;
  } else if (st) {
    rc = die(ctx, mc->name, st);
  } else if ((err = clFinish(clattn_ctx_queue(ctx))) != CL_SUCCESS) {
    fprintf(stderr, "kernel_run: clFinish: %s\n", clattn_cl_errstr(err));
    rc = 1;
  }
  for (int i = 0; i < CLATTN__MAX_BUFS; i++)
    if (bufs[i])
      clReleaseMemObject(bufs[i]);
  clattn_ctx_destroy(ctx);
  return rc;
}
