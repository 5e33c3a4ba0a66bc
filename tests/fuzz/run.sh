#!/bin/bash
# tests/fuzz/run.sh BUILD_DIR - build the libFuzzer targets (clang, ASan,
# UBSan; tests/sanitizers/build.sh), replay every kept crash
# (tests/fuzz/regressions/TARGET/: libFuzzer runs given files once), then
# fuzz each target for a short while from its seed corpus
# (tests/fuzz/corpus/TARGET/).  Fails on any crash, leak, sanitizer report
# or broken invariant; a new crash is left in BUILD_DIR/fuzz-artifacts/.
#
# CLATTN_FUZZ_SECONDS (default 20) bounds each target's run, CLATTN_FUZZ_JOBS
# (default: the cores) how many run at a time; run one target longer by
# hand as docs/TESTING.md shows.
set -u
build=${1:?usage: run.sh BUILD_DIR}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
targets=(fuzz_npy fuzz_json_import fuzz_shape fuzz_calls fuzz_options)
sb=$(bash "$here/../sanitizers/build.sh" "$build" \
       $(printf 'tests/fuzz/%s ' "${targets[@]}"))
rc=$?
[ $rc -eq 0 ] || exit $rc
# Readable stacks in reports (Debian's llvm-14 has no unversioned name).
sym=/usr/lib/llvm-14/bin/llvm-symbolizer
[ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && [ -x "$sym" ] &&
  export ASAN_SYMBOLIZER_PATH=$sym
seconds=${CLATTN_FUZZ_SECONDS:-20}
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}
art="$build/fuzz-artifacts"
# The targets' scratch files (tmpfs when there is one), gone afterwards.
CLATTN_FUZZ_TMP=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
export CLATTN_FUZZ_TMP
trap 'rm -rf "$CLATTN_FUZZ_TMP"' EXIT
mkdir -p "$art"
# fuzz_one TARGET: replay its kept crashes, then fuzz it; its report on
# stdout, status 1 on any failure.
fuzz_one() {
  local t=$1 exe="$sb/tests/fuzz/$1" reg="$here/regressions/$1" rc=0
  if compgen -G "$reg/*" >/dev/null; then
    echo "== fuzz: $t: replaying $(ls "$reg" | wc -l) regression inputs"
    "$exe" -rss_limit_mb=2048 -timeout=10 "$reg"/* >"$art/$t-replay.log" 2>&1 || {
      rc=1
      tail -n 40 "$art/$t-replay.log"
    }
  fi
  # A scratch copy of the seeds: libFuzzer adds what it finds to the first
  # corpus directory, and the source tree stays as it is.
  local work="$art/$t-corpus"
  rm -rf "$work"
  mkdir -p "$work"
  echo "== fuzz: $t: ${seconds}s from $(ls "$here/corpus/$t" | wc -l) seeds"
  "$exe" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -max_len=4096 -print_final_stats=1 -artifact_prefix="$art/$t-" \
    "$work" "$here/corpus/$t" >"$art/$t.log" 2>&1 || {
    tail -n 60 "$art/$t.log"
    echo "fuzz: $t failed; the input is kept in $art/ (add it to" \
      "tests/fuzz/regressions/$t/ with the fix)"
    return 1
  }
  grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$art/$t.log" |
    tail -n 2
  return $rc
}
# Each libFuzzer process runs on one core: as many targets at a time as
# there are cores (CLATTN_FUZZ_JOBS), each for its full time; the reports
# are printed in the targets' order.
at_once=${CLATTN_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
pids=()
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$at_once" ]; do wait -n; done
  fuzz_one "$t" >"$art/$t.report" 2>&1 &
  pids+=($!)
done
rc=0
for i in "${!targets[@]}"; do
  wait "${pids[$i]}" || rc=1
  cat "$art/${targets[$i]}.report"
done
exit $rc
