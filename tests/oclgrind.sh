#!/bin/bash
# tests/oclgrind.sh BUILD_DIR - run a small-shape subset of the attention,
# decode, talking-heads, super-values, cvmm and gemm tests with Oclgrind as
# the OpenCL
# driver (not the `oclgrind` wrapper), checking data races (incl.
# equal-value write-write races), uninitialised reads, OpenCL API misuse
# and out-of-bounds accesses under GPU-like limits (48 KiB local memory,
# 256 work-items per group).
#
# Also test_layer, test_hh_layer, test_sh_layer and test_paged_layer (without the
# uninitialised-value check; see below), and
# every call of tests/model_cases.h through tests/kernel_run (all kernels
# in the tree, the probe's microkernels included).
#
# The subset: CLATTN_TEST_SUBSET=small makes test_attention / test_attn_options / test_decode /
# test_th_decode / test_super_values / test_cvmm / test_projection /
# test_paged_append / test_varlen
# replace their sweeps by a few small shapes that still cover both kernel
# variants (1 and 2, several tile/work-group choices), f32 and f16, causal
# and padded kv_lens, zero-length sequences and split-KV decode, routed
# and dense GEMMs in both modes.
#
# Oclgrind exits 0 even when it reports errors, and opens OCLGRIND_LOG with
# truncation in every process (Criterion runs each test in its own process),
# so the log is a FIFO drained into one file by a single reader; the script
# fails when that file is not empty (and prints it).
set -u
build=${1:?usage: oclgrind.sh BUILD_DIR}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
catpid=
cleanup() {
  exec 3>&- 2>/dev/null
  [ -n "$catpid" ] && wait "$catpid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# Oclgrind alone (it installs no .icd; tests/icd_dir.sh writes one).
sh "$here/icd_dir.sh" /usr/lib/oclgrind/liboclgrind-rt-icd.so "$tmp/icd" ||
  exit $?
mkfifo "$tmp/fifo"
: > "$tmp/log"
cat "$tmp/fifo" >> "$tmp/log" &
catpid=$!
exec 3> "$tmp/fifo" # keeps the reader alive between test processes

export OCL_ICD_VENDORS="$tmp/icd"
export OCLGRIND_DATA_RACES=1
export OCLGRIND_UNINITIALIZED=1
# Oclgrind 21.10's uninitialised-value plugin aborts on LLVM's `freeze`
# instruction ("Unsupported instruction: freeze"), which its optimiser emits
# for these kernels: build them unoptimised so the plugin can run.
export OCLGRIND_BUILD_OPTIONS="${OCLGRIND_BUILD_OPTIONS:--cl-opt-disable}"
export OCLGRIND_CHECK_API=1
export OCLGRIND_UNIFORM_WRITES=1
export OCLGRIND_LOCAL_MEM_SIZE=49152
export OCLGRIND_MAX_WGSIZE=256
export OCLGRIND_LOG="$tmp/fifo"
export CLATTN_TEST_SUBSET=small
export CLATTN_TEST_ALLOW_UNSUPPORTED_WG=1
# program binaries persist in the build directory (compiles are slow here)
export CLATTN_CACHE_DIR="$build/tests/clattn-cache-oclgrind"
unset CLATTN_DEVICE CLATTN_PARAMS
export CLATTN_DB="$tmp/no-tuning.db" # the built-in defaults, whatever is tuned
export CLATTN_SHIPPED=0

rc=0
for t in attention attn_options decode talking_heads th_decode super_values cvmm \
  paged_append varlen paged_prefill paged_decode; do
  echo "== oclgrind: test_$t (CLATTN_TEST_SUBSET=small) [${SECONDS} s]"
  "$build/tests/test_$t" --jobs=2 || rc=1
done
echo "== oclgrind: test_nonfinite nonfinite/prefill (CLATTN_TEST_SUBSET=small) [${SECONDS} s]"
"$build/tests/test_nonfinite" --filter 'nonfinite/prefill' || rc=1
echo "== oclgrind: test_projection projection/own_kernel (CLATTN_TEST_SUBSET=small) [${SECONDS} s]"
"$build/tests/test_projection" --filter 'projection/own_kernel' || rc=1
# The layer (CLBlast's GEMMs around the kernels, the KV cache, decode
# steps): races, API use and bounds, but not uninitialised values.  Oclgrind
# 21.10 leaves memory written by clEnqueueFillBuffer marked uninitialised
# (a kernel branching on a 4-int buffer reports it when the buffer was
# filled, not when it was written), and the layer fills its cache
# positions and lengths that way: every kv_append and cached attention
# call would report.
echo "== oclgrind: test_layer (CLATTN_TEST_SUBSET=small, no uninitialised-value check) [${SECONDS} s]"
env -u OCLGRIND_UNINITIALIZED "$build/tests/test_layer" --jobs=2 || rc=1
echo "== oclgrind: test_hh_layer (CLATTN_TEST_SUBSET=small, no uninitialised-value check) [${SECONDS} s]"
env -u OCLGRIND_UNINITIALIZED "$build/tests/test_hh_layer" --jobs=2 || rc=1
echo "== oclgrind: test_sh_layer (CLATTN_TEST_SUBSET=small, no uninitialised-value check) [${SECONDS} s]"
env -u OCLGRIND_UNINITIALIZED "$build/tests/test_sh_layer" --jobs=2 || rc=1
echo "== oclgrind: test_paged_layer (CLATTN_TEST_SUBSET=small, no uninitialised-value check) [${SECONDS} s]"
env -u OCLGRIND_UNINITIALIZED "$build/tests/test_paged_layer" --jobs=2 || rc=1
# The projection family's CLBlast scheme zero-fills its GEMV rows the same way.
echo "== oclgrind: test_projection projection/clblast, projection/events (no uninitialised-value check) [${SECONDS} s]"
for f in clblast events; do
  env -u OCLGRIND_UNINITIALIZED "$build/tests/test_projection" --filter "projection/$f" ||
    rc=1
done
# Every call of tests/model_cases.h, the probe's microkernels included
# (kernel_run exits 2 past the last case).
echo "== oclgrind: kernel_run on every model case [${SECONDS} s]"
i=0
while :; do
  "$build/tests/kernel_run" "$i" 2>"$tmp/kr.err"
  st=$?
  if [ "$st" = 2 ]; then break; fi
  if [ "$st" != 0 ]; then
    echo "kernel_run $i failed ($st):"; cat "$tmp/kr.err"; rc=1
  fi
  i=$((i + 1))
done
echo "$i cases run"

exec 3>&-
wait "$catpid"
catpid=
if [ -s "$tmp/log" ]; then
  echo "== Oclgrind reported problems: [${SECONDS} s]"
  cat "$tmp/log"
  rc=1
else
  echo "== Oclgrind log is empty [${SECONDS} s]"
fi
exit $rc
