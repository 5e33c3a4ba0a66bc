#!/bin/bash
# tests/rusticl.sh BUILD_DIR - portability run on Mesa's rusticl (llvmpipe):
# a second OpenCL implementation with a different compiler, OpenCL 3.0,
# 32 KiB of local memory and 1024-item work-groups.  rusticl is slow (~0.5 ms
# per launch), so test_attention / test_decode run their small subset
# (CLATTN_TEST_SUBSET=small: both kernel variants, f32/f16, causal, padded,
# zero-length sequences, split-KV decode); test_runtime runs whole (status
# codes, misuse, events, application queue, program cache on this driver).
# The layer test is skipped: CLBlast would first have to build and tune its
# kernels for llvmpipe.
set -u
build=${1:?usage: rusticl.sh BUILD_DIR}
build=$(cd "$build" && pwd)
export RUSTICL_ENABLE=llvmpipe
export CLATTN_DEVICE=llvmpipe
export CLATTN_TEST_SUBSET=small
export CLATTN_TEST_ALLOW_UNSUPPORTED_WG=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# program binaries persist in the build directory (compiles are slow here)
export CLATTN_CACHE_DIR="$build/tests/clattn-cache-rusticl"

# Is there a llvmpipe device at all?
if ! command -v clinfo >/dev/null 2>&1 || ! clinfo -l 2>/dev/null | grep -qi llvmpipe; then
  echo "rusticl.sh: no rusticl llvmpipe device; skipping"
  exit 77
fi

rc=0
for t in runtime attention decode; do
  echo "== rusticl: test_$t"
  "$build/tests/test_$t" --jobs=2 || rc=1
done
exit $rc
