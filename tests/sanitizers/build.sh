#!/bin/bash
# tests/sanitizers/build.sh BUILD_DIR TARGET... - configure (once) and build
# the sanitizer build inside BUILD_DIR, BUILD_DIR/sanitize-build: clang,
# ASan + UBSan, and libFuzzer's coverage instrumentation (which costs the
# plain tests little), shared by tests/fuzz/run.sh and
# tests/sanitizers/asan.sh so the library is compiled once for both; only
# the named ninja targets are built.  Prints the sanitize build's path.
# Exits 77 (skipped) when clang or its libFuzzer runtime is missing.
set -u
build=${1:?usage: build.sh BUILD_DIR TARGET...}
shift
src=$(cd "$(dirname "$0")/../.." && pwd)
sb=$(cd "$build" && pwd)/sanitize-build
cc=${CLATTN_SANITIZE_CC:-}
if [ -z "$cc" ]; then
  cc=clang
  command -v clang >/dev/null || cc=clang-14
fi
if ! command -v "$cc" >/dev/null; then
  echo "skipped: $cc not found (Debian: clang-14, libclang-rt-14-dev)" >&2
  exit 77
fi
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
    "$cc" -x c -fsanitize=fuzzer,address,undefined -o /dev/null - 2>/dev/null; then
  echo "skipped: $cc cannot link -fsanitize=fuzzer,address,undefined (Debian: libclang-rt-14-dev)" >&2
  exit 77
fi
if [ ! -f "$sb/build.ninja" ]; then
  # werror off: this build hunts run-time findings, not clang's warnings.
  CC=$cc meson setup "$sb" "$src" -Dwerror=false \
    -Db_sanitize=address,undefined -Db_lundef=false \
    -Dc_args=-fsanitize=fuzzer-no-link -Ddefault_library=static \
    >"$build/sanitize-setup.log" 2>&1 || {
    cat "$build/sanitize-setup.log" >&2
    rm -rf "$sb"
    exit 1
  }
fi
ninja -C "$sb" "$@" >&2 || exit 1
echo "$sb"
