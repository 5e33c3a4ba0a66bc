#!/bin/bash
# tests/rusticl.sh BUILD_DIR - portability run on Mesa's rusticl (llvmpipe):
# a second OpenCL implementation with a different compiler, OpenCL 3.0,
# 32 KiB of local memory and 1024-item work-groups.  rusticl is slow (~0.5 ms
# per launch), so test_attention / test_attn_options / test_decode /
# test_talking_heads / test_paged_append / test_paged_prefill run
# their small subset (CLATTN_TEST_SUBSET=small: both kernel variants,
# f32/f16, causal, padded, zero-length sequences, split-KV decode, both
# talking-heads schemes); test_efficient (the K == V families),
# test_super_values, test_cvmm (its subset too), test_projection's own kernel
# and test_runtime run whole (status
# codes, misuse, events, application queue, program cache on this driver).
# The layer test is skipped: CLBlast would first have to build and tune its
# kernels for llvmpipe.  `clattn probe --quick` and `clattn model` run too
# (`clattn model check` is not: the GPU-shaped decode kernel takes ~0.4 s a
# step on llvmpipe).
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
# rusticl alone (tests/icd_dir.sh), not beside PoCL and clover, which load
# the same libLLVM-15.
sh "$(dirname "$0")/icd_dir.sh" rusticl "$tmp/icd" || exit $?
export OCL_ICD_VENDORS="$tmp/icd"
# No glibc free-perturbation here (meson sets a random MALLOC_PERTURB_ for
# each test): Debian 12's SPIR-V translator, which rusticl compiles
# OpenCL C with, reads an LLVM instruction after freeing it (valgrind), and
# with some perturbation bytes (1 to 3) that read crashes every build of
# probe.cl for 2-wide vectors (docs/TESTING.md).  The host code runs
# perturbed on PoCL and under ASan.
export MALLOC_PERTURB_=0

# Is there a llvmpipe device at all?
if ! command -v clinfo >/dev/null 2>&1; then
  echo "skipped: clinfo not found (Debian: clinfo), which finds the llvmpipe device"
  exit 77
fi
if ! clinfo -l 2>/dev/null | grep -qi llvmpipe; then
  echo "skipped: rusticl lists no llvmpipe device (RUSTICL_ENABLE=llvmpipe)"
  exit 77
fi

rc=0
for t in runtime attention attn_options decode talking_heads th_decode efficient \
    super_values cvmm paged_append paged_prefill; do
  echo "== rusticl: test_$t [${SECONDS} s]"
  "$build/tests/test_$t" --jobs=2 || rc=1
done
# the paged decode and the ragged prefill: their first two small reference
# cases (every case is several programs, each compiled for seconds here)
for t in paged_decode varlen; do
  echo "== rusticl: test_$t $t/against_reference, 2 cases [${SECONDS} s]"
  CLATTN_TEST_CASES=2 "$build/tests/test_$t" --jobs=2 \
    --filter "$t/against_reference" || rc=1
done
# the projection family's own kernel (its CLBlast scheme is skipped as the layer
# test is)
for f in own_kernel misuse model; do
  echo "== rusticl: test_projection projection/$f [${SECONDS} s]"
  "$build/tests/test_projection" --filter "projection/$f" || rc=1
done
echo "== rusticl: test_probe (the copy reference) [${SECONDS} s]"
"$build/tests/test_probe" --filter 'probe/copy_ref' || rc=1
# The probe and the model on this second implementation: the probe must
# finish and print valid JSON; the model must predict for the device.
export CLATTN_DB="$tmp/tuning.db"
echo "== rusticl: clattn probe --quick --json [${SECONDS} s]"
if "$build/host/cli/clattn" probe --quick --json >"$tmp/probe.json" &&
   python3 -m json.tool "$tmp/probe.json" >/dev/null; then
  echo "ok"
else
  echo "FAIL: clattn probe on rusticl"; cat "$tmp/probe.json"; rc=1
fi
echo "== rusticl: clattn model decode --json [${SECONDS} s]"
if "$build/host/cli/clattn" model decode --kv-seq 4096 --heads 8 \
     --kv-heads 2 --head-dim 64 --json >"$tmp/model.json" &&
   python3 -m json.tool "$tmp/model.json" >/dev/null &&
   grep -q llvmpipe "$tmp/model.json"; then
  echo "ok"
else
  echo "FAIL: clattn model on rusticl"; cat "$tmp/model.json"; rc=1
fi
echo "== rusticl: done [${SECONDS} s]"
exit $rc
