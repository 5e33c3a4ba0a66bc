#!/bin/bash
# tests/sanitizers/asan.sh BUILD_DIR - the library and a subset of its
# tests under AddressSanitizer, LeakSanitizer and UBSan on PoCL: the
# sanitizer build (tests/sanitizers/build.sh, clang) of the tests that
# cover the library's paths in a few minutes (the runtime and program
# cache, the tuning database and its JSON, the datasheets, the model,
# prefill, decode and KV append, talking heads, the cvmm routing, the
# layers with their KV caches and CLBlast or own GEMMs, the paged and
# ragged caches' families and the layer over a paged pool, the families'
# registry, the probe), the device sweeps cut to CLATTN_TEST_SUBSET=small.
# Not here: test_tune and tests/cli.sh (minutes of tuning runs; the CLI's
# .npy reader is fuzzed instead) and test_model (Oclgrind).
#
# Criterion runs every test in a child process and does not fail a test
# whose child reports a leak at exit, so every sanitizer report goes to a
# log file (log_path) and any file there fails the run (and is printed).
# UBSan halts on its first report.  The OpenCL runtimes' own leaks are
# suppressed by tests/sanitizers/lsan.supp, each entry explained there.
set -u
build=${1:?usage: asan.sh BUILD_DIR}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tests=(runtime tunedb datasheet sh_paper probe families attention decode
       talking_heads th_decode efficient super_values cvmm projection
       tune_gemm layer th_layer hh_layer sh_layer paged_decode paged_prefill
       paged_append varlen paged_layer)
sb=$(bash "$here/build.sh" "$build" $(printf 'tests/test_%s ' "${tests[@]}"))
rc=$?
[ $rc -eq 0 ] || exit $rc
# Readable stacks in reports (Debian's llvm-14 has no unversioned name).
sym=/usr/lib/llvm-14/bin/llvm-symbolizer
[ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && [ -x "$sym" ] &&
  export ASAN_SYMBOLIZER_PATH=$sym
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
asan_opts="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
ubsan_opts="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export CLATTN_TEST_SUBSET=small
# PoCL's ICD alone: ocl-icd otherwise loads Mesa's too, whose gallium pipe
# module (unloaded before exit, so no suppression can name it) leaks a
# block in every process on some machines; the tests run on PoCL anyway.
sh "$here/../icd_dir.sh" pocl "$logs/icd" || exit $?
export OCL_ICD_VENDORS="$logs/icd"
# The main build's kernel binaries (the same sources and options): the
# sanitizers watch the host code, and a warm cache keeps the run short.
export CLATTN_CACHE_DIR="$build/tests/clattn-cache"
export CLATTN_DB="$logs/no-such-tuning.db"
export CLATTN_SHIPPED=0
export CLATTN_PARAMS=
unset CLATTN_DEVICE
# LeakSanitizer's tracer, which stops the process's threads with ptrace
# to scan them, itself crashes now and then ("LeakSanitizer has
# encountered a fatal error", no report of a leak): that is no finding, so
# such a test runs once more, and fails if it happens again.
tracer_crash_only() {
  grep -q 'LeakSanitizer has encountered a fatal error' "$1"/report* &&
    ! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer: detected)|runtime error' \
      "$1"/report*
}
rc=0
for t in "${tests[@]}"; do
  for attempt in 1 2; do
    dir="$logs/$t.$attempt"
    mkdir -p "$dir"
    export ASAN_OPTIONS="$asan_opts:log_path=$dir/report"
    export UBSAN_OPTIONS="$ubsan_opts:log_path=$dir/report"
    start=$SECONDS
    out=$("$sb/tests/test_$t" --jobs=2 2>&1)
    st=$?
    echo "== asan: test_$t: $(echo "$out" | tail -n 1) ($((SECONDS - start)) s)"
    if [ $attempt = 1 ] && compgen -G "$dir/report*" >/dev/null &&
       tracer_crash_only "$dir"; then
      echo "== asan: test_$t: LeakSanitizer's tracer crashed; once more"
      rm -rf "$dir"
      continue
    fi
    break
  done
  if [ $st -ne 0 ]; then
    echo "$out" | tail -n 40
    rc=1
  fi
done
if compgen -G "$logs/*/report*" >/dev/null; then
  echo "asan: sanitizer reports:"
  cat "$logs"/*/report*
  rc=1
fi
exit $rc
