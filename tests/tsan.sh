#!/bin/sh
# tsan.sh BUILD_ROOT - the thread tests' workers (tests/threads_main.c)
# under ThreadSanitizer on the default device (PoCL): the library and the
# test built with -fsanitize=thread in BUILD_ROOT/tsan, races inside the
# OpenCL runtime suppressed (tests/sanitizers/tsan.supp, each line with
# its reason).  Any other report fails the test.
set -eu
root=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/tsan"
# a compiler without ThreadSanitizer skips the test (meson: exit status 77)
if ! printf 'int main(void) { return 0; }\n' |
    ${CC:-cc} -fsanitize=thread -x c - -o "$root/tsan-probe" 2>/dev/null; then
  echo "skipped: the C compiler (${CC:-cc}) cannot build with -fsanitize=thread"
  exit 77
fi
# PoCL's driver alone, as in the other PoCL tiers (tests/icd_dir.sh).
sh "$src/tests/icd_dir.sh" pocl "$root/tsan-icd" || exit $?
export OCL_ICD_VENDORS="$root/tsan-icd"
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" "$src" -Db_sanitize=thread -Dbuildtype=debugoptimized \
    >"$root/tsan-setup.log" 2>&1 || { cat "$root/tsan-setup.log"; exit 1; }
fi
ninja -C "$dir" tests/threads_main >"$root/tsan-build.log" 2>&1 ||
  { tail -40 "$root/tsan-build.log"; exit 1; }
export CLATTN_CACHE_DIR="$root/tests/clattn-cache"
export CLATTN_DB="$root/tests/no-such-tuning.db"
export CLATTN_SHIPPED=0
export CLATTN_PARAMS=
# every report printed, then exit status 66
export TSAN_OPTIONS="suppressions=$src/tests/sanitizers/tsan.supp \
halt_on_error=0 exitcode=66 second_deadlock_stack=1 history_size=4"
exec "$dir/tests/threads_main"
