#!/usr/bin/env bash
# The test command: configure and build from scratch in build-test/, run the
# whole suite (Criterion tests on PoCL, subsets on Oclgrind and rusticl, the
# libFuzzer targets and an ASan/UBSan build of a test subset) under meson,
# and end with meson's count as "N passed, N failed".
# Installs the Debian packages first when some are missing (needs root).
set -uo pipefail
cd "$(dirname "$0")/.."
need=(meson ninja-build libcriterion-dev libclblast-dev pocl-opencl-icd
      oclgrind mesa-opencl-icd ocl-icd-opencl-dev libsqlite3-dev
      clang-14 libclang-rt-14-dev llvm-14)
if ! dpkg -s "${need[@]}" >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then bash .ci/deps; else sudo bash .ci/deps; fi || exit 1
fi
build=${CLATTN_TEST_BUILD:-build-test}
rm -rf "$build"
# Warnings are errors here (the project's default leaves them warnings for
# users' compilers).
meson setup "$build" -Dwerror=true >/dev/null || exit 1
ninja -C "$build" || exit 1
log=$(mktemp)
meson test -C "$build" --print-errorlogs "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
count() { awk -v k="$1" -F: '$1 == k { gsub(/ /, "", $2); print $2 }' "$log"; }
ok=$(count Ok); fail=$(count Fail); timeout=$(count Timeout)
upass=$(count "Unexpected Pass")
rm -f "$log"
echo "$((${ok:-0})) passed, $((${fail:-0} + ${timeout:-0} + ${upass:-0})) failed"
exit "$status"
