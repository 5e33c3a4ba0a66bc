#!/usr/bin/env bash
# The test command: configure and build from scratch in build-test/, run the
# whole suite (Criterion tests on PoCL, subsets on Oclgrind and rusticl, the
# libFuzzer targets, an ASan/UBSan build of a test subset and the Python
# package's pytest tests, tests/python.sh) under meson,
# then name each failed and skipped test and end with meson's count,
# "N passed, N failed, N skipped" (tests/summary.py).  With CI=true a skip
# of a tier CI must run (ci_tiers below) counts as a failure.  The exit
# status is 0 only when nothing failed.
#
# Each driver tier loads its own OpenCL driver alone (tests/icd_dir.sh):
# PoCL's here, for the Criterion tests and every test on the default
# device; the rusticl, Oclgrind and sanitizer tiers make their own.
#
# CLATTN_TEST_COLD=1 starts PoCL's and Mesa's kernel caches empty, inside
# the build directory (clattn's own caches are there already), for timing
# a cold run; otherwise the drivers' caches are theirs ($POCL_CACHE_DIR,
# $MESA_SHADER_CACHE_DIR, else $XDG_CACHE_HOME or ~/.cache).
# Installs the Debian packages of .ci/deps first when some are missing
# (needs root).
set -uo pipefail
cd "$(dirname "$0")/.."
ci_tiers=oclgrind,rusticl,asan,tsan,fuzz,report_browser,python
mapfile -t need < <(bash .ci/deps --list)
if ! dpkg -s "${need[@]}" >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then bash .ci/deps; else sudo bash .ci/deps; fi || exit 1
fi
build=${CLATTN_TEST_BUILD:-build-test}
rm -rf "$build"
# Warnings are errors here (the project's default leaves them warnings for
# users' compilers).
meson setup "$build" -Dwerror=true >/dev/null || exit 1
ninja -C "$build" || exit 1
build=$(cd "$build" && pwd)
sh tests/icd_dir.sh pocl "$build/icd-pocl" || {
  echo "run.sh: the Criterion tests need PoCL's ICD (pocl-opencl-icd)"
  exit 1
}
export OCL_ICD_VENDORS="$build/icd-pocl"
if [ -n "${CLATTN_TEST_COLD:-}" ]; then
  export POCL_CACHE_DIR="$build/pocl-cache"
  export MESA_SHADER_CACHE_DIR="$build/mesa-cache"
  mkdir -p "$POCL_CACHE_DIR" "$MESA_SHADER_CACHE_DIR"
fi
cache_home=${XDG_CACHE_HOME:-${HOME:-}/.cache}
echo "kernel caches: PoCL ${POCL_CACHE_DIR:-$cache_home/pocl}," \
  "Mesa ${MESA_SHADER_CACHE_DIR:-$cache_home/mesa_shader_cache}," \
  "clattn $build/tests/clattn-cache*"
start=$SECONDS
meson test -C "$build" --print-errorlogs "$@"
status=$?
echo "meson test: $((SECONDS - start)) s"
must=()
# The whole suite under CI: the tiers it must run may not be skipped.
[ "${CI:-}" = true ] && [ $# = 0 ] && must=(--must-run "$ci_tiers")
python3 tests/summary.py "$build/meson-logs/testlog.json" "${must[@]}" ||
  status=1
exit "$status"
