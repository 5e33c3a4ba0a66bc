#!/bin/bash
# tests/rusticl.sh BUILD_DIR - portability run on Mesa's rusticl (llvmpipe):
# a second OpenCL implementation with a different compiler, OpenCL 3.0,
# 32 KiB of local memory and 1024-item work-groups.  llvmpipe compiles every
# program with LLVM, seconds to minutes each on a cold cache, so the tier is
# a subset that covers each kernel family once against its plain-C
# reference rather than the device sweeps (those run on PoCL and, shrunk,
# under Oclgrind):
#   - every registered family's small check case (its automatic plan, f32)
#     against the family's reference (test_families
#     families/check_case_on_device);
#   - prefill and decode in f16 through `clattn run ... --random --check`;
#   - test_runtime whole (status codes, misuse, events, the application's
#     queue, the program cache on this driver);
#   - the probe's copy reference, `clattn probe --quick` and `clattn model`
#     (`clattn model check` is not run: the GPU-shaped decode kernel takes
#     ~0.4 s a step on llvmpipe).
set -u
build=${1:?usage: rusticl.sh BUILD_DIR}
build=$(cd "$build" && pwd)
export RUSTICL_ENABLE=llvmpipe
export CLATTN_DEVICE=llvmpipe
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# program binaries persist in the build directory (compiles are slow here)
export CLATTN_CACHE_DIR="$build/tests/clattn-cache-rusticl"
# the built-in defaults, whatever is tuned or shipped (the probe below
# writes this database, which the model then reads)
export CLATTN_DB="$tmp/tuning.db" CLATTN_SHIPPED=0
unset CLATTN_PARAMS
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

echo "rusticl subset: families/check_case_on_device (every family, f32)," \
  "prefill and decode f16 (clattn run --check), test_runtime, probe/copy_ref," \
  "clattn probe --quick, clattn model decode"
rc=0
echo "== rusticl: test_runtime [${SECONDS} s]"
"$build/tests/test_runtime" --jobs=2 || rc=1
# Known wrong on llvmpipe, not on PoCL or an NVIDIA H200 with the same
# parameters: talking-heads' check case (variant 2, 8 x 64 heads, 45 keys)
# leaves outputs unwritten (the poison NaN stays).  The cause is Mesa's
# gallivm, not the kernel: one loop limiter a shader invocation, 65535
# iterations shared by every loop it did not unroll, after which each loop
# stops after its first iteration (LP_MAX_TGSI_LOOP_ITERATIONS), so the
# store loop at the kernel's end runs once.  It grows with n_kv as with the
# heads (4 x 64 fails too at 100 keys).  It still runs; the test fails if it
# ever matches, so that this line goes.
export CLATTN_TEST_KNOWN_WRONG=talking-heads
echo "rusticl: known wrong, run and expected to differ: $CLATTN_TEST_KNOWN_WRONG"
echo "== rusticl: test_families families/check_case_on_device [${SECONDS} s]"
"$build/tests/test_families" --filter 'families/check_case_on_device' || rc=1
# prefill and decode in f16, odd sizes, against the reference (exit 3 when
# they differ)
echo "== rusticl: clattn run attention --dtype f16 --check [${SECONDS} s]"
"$build/host/cli/clattn" run attention --random --batch 2 --seq 17 \
  --kv-seq 40 --heads 4 --kv-heads 2 --head-dim 64 --dtype f16 --causal \
  --check --out "$tmp/attention.npy" || rc=1
echo "== rusticl: clattn run decode --dtype f16 --check [${SECONDS} s]"
"$build/host/cli/clattn" run decode --random --batch 2 --kv-seq 40 \
  --heads 4 --kv-heads 2 --head-dim 64 --dtype f16 --check \
  --out "$tmp/decode.npy" || rc=1
echo "== rusticl: test_probe (the copy reference) [${SECONDS} s]"
"$build/tests/test_probe" --filter 'probe/copy_ref' || rc=1
# The probe and the model on this second implementation: the probe must
# finish and print valid JSON; the model must predict for the device.
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
