#!/bin/bash
# tests/readme_example.sh BUILD_DIR - the README's embedding example as
# printed: its C block is cut out of README.md, compiled with warnings as
# errors against host/include, linked to the built shared library, and
# called by a small driver on buffers of known values (queries and keys
# zero, so every output row is the mean of the values it sees, which the
# driver checks).
set -u
build=${1:?usage: readme_example.sh BUILD_DIR}
build=$(cd "$build" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

awk '/^## Embedding/ { on = 1 } on && /^```c$/ { code = 1; next }
     code && /^```$/ { exit } code { print }' "$src/README.md" >"$tmp/example.c"
if ! grep -q 'clattn_attention' "$tmp/example.c"; then
  echo "FAIL: no C example under '## Embedding' in README.md"
  exit 1
fi
cat >"$tmp/driver.c" <<'DRIVER'
#include <clattn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int attend(cl_command_queue queue, cl_mem q, cl_mem k, cl_mem v, cl_mem o);

/* The example's shape: batch 1, 128 positions, 8 query and 2 KV heads of
 * 64, causal, BSHD. */
enum { N = 128, HQ = 8, HKV = 2, D = 64 };

int main(void) {
  clattn_ctx *host = NULL; /* only to get a queue on the default device */
  clattn_ctx_opts opts = {.size = sizeof opts};
  if (clattn_ctx_create(&opts, &host) != CLATTN_OK) {
    printf("FAIL: no context: %s\n", clattn_ctx_errmsg(NULL));
    return 1;
  }
  cl_context c = clattn_ctx_cl_context(host);
  cl_command_queue queue = clattn_ctx_queue(host);
  const size_t nq = (size_t)N * HQ * D, nkv = (size_t)N * HKV * D;
  float *zq = calloc(nq, sizeof *zq), *val = malloc(nkv * sizeof *val);
  float *out = malloc(nq * sizeof *out);
  for (size_t i = 0; i < nkv; i++) /* value of position t: t */
    val[i] = (float)(i / ((size_t)HKV * D));
  for (size_t i = 0; i < nq; i++)
    out[i] = NAN;
  cl_int err;
  const cl_mem_flags f = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR;
  cl_mem q = clCreateBuffer(c, f, nq * 4, zq, &err);
  cl_mem k = clCreateBuffer(c, f, nkv * 4, zq, &err);
  cl_mem v = clCreateBuffer(c, f, nkv * 4, val, &err);
  cl_mem o = clCreateBuffer(c, f, nq * 4, out, &err);
  int rc = attend(queue, q, k, v, o);
  clEnqueueReadBuffer(queue, o, CL_TRUE, 0, nq * 4, out, 0, NULL, NULL);
  int bad = 0;
  for (size_t i = 0; i < nq && rc == 0; i++) {
    const double t = (double)(i / ((size_t)HQ * D)); /* query position */
    if (fabs(out[i] - t / 2.0) > 1e-3) /* mean of 0 .. t */
      bad++;
  }
  printf("attend: %d, %d wrong outputs\n", rc, bad);
  clReleaseMemObject(q), clReleaseMemObject(k), clReleaseMemObject(v);
  clReleaseMemObject(o);
  clattn_ctx_destroy(host);
  free(zq), free(val), free(out);
  return rc == 0 && bad == 0 ? 0 : 1;
}
DRIVER
cc=${CC:-cc}
if ! $cc -std=c11 -Wall -Wextra -Werror -DCL_TARGET_OPENCL_VERSION=120 \
  -I"$src/host/include" "$tmp/example.c" "$tmp/driver.c" -o "$tmp/app" \
  -L"$build/host" -lclattn -lOpenCL -lm 2>"$tmp/err"; then
  echo "FAIL: the README's example does not compile as printed:"
  cat "$tmp/err" "$tmp/example.c"
  exit 1
fi
LD_LIBRARY_PATH="$build/host${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/app"
