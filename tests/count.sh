#!/bin/bash
# tests/count.sh - the suite's count hides nothing: tests/summary.py on
# made-up meson logs (a pass, a failure, a tier's skip with its reason, a
# Criterion or pytest test skipped inside a passing executable) counts and names each
# one, and under --must-run (CI=true in tests/run.sh) a skipped or missing
# tier is a failure; tests/icd_dir.sh makes a vendors folder with only the
# named driver's .icd, and skips (77, with a reason) when it is missing.
# No device, no build.
set -u
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
fail() {
  echo "FAIL: $*"
  rc=$((rc + 1))
}

# A meson testlog.json line per test.
entry() { # NAME RESULT STDOUT STDERR
  python3 -c 'import json, sys
print(json.dumps({"name": sys.argv[1], "result": sys.argv[2],
                  "stdout": sys.argv[3], "stderr": sys.argv[4],
                  "duration": 1.0, "returncode": 0}))' "$@"
}
log=$tmp/testlog.json
{
  entry runtime OK $'ok - runtime::a  (0.01s)\nok - runtime::b  # SKIP the device reports no arch\n' \
    '[====] Synthesis: Tested: 1 | Passing: 1 | Failing: 0 | Crashing: 0'
  entry attention FAIL '' '[FAIL] attention::x'
  entry oclgrind SKIP $'== start\nskipped: /usr/lib/oclgrind/x.so not found\n' ''
  entry fuzz SKIP '' $'skipped: clang-14 not found\n'
  entry tsan SKIP $'no marker, last line only\n' ''
  entry db_valid EXPECTEDFAIL '' ''
  entry faults TIMEOUT '' ''
} >"$log"

# expect WHAT STATUS SUMMARY-ARGS...: the exit status, then the output
# lines that must be there (read from stdin, one a line, in order).
expect() {
  local what=$1 want=$2
  shift 2
  local before=$rc
  python3 "$here/summary.py" "$@" >"$tmp/out" 2>&1
  local got=$?
  [ "$got" = "$want" ] || fail "$what: exit $got, want $want"
  while IFS= read -r line; do
    grep -qxF -- "$line" "$tmp/out" || fail "$what: no line '$line'"
  done
  if [ "$rc" = "$before" ]; then echo "ok: $what"; else cat "$tmp/out"; fi
}

expect "a failure, skips and their reasons" 1 "$log" <<'EOF'
skipped inside runtime: runtime::b (the device reports no arch)
failed: attention (FAIL)
skipped: oclgrind (/usr/lib/oclgrind/x.so not found)
skipped: fuzz (clang-14 not found)
skipped: tsan (no marker, last line only)
failed: faults (TIMEOUT)
2 passed, 2 failed, 3 skipped
EOF
[ "$(tail -n 1 "$tmp/out")" = "2 passed, 2 failed, 3 skipped" ] ||
  fail "the count is not the last line: $(tail -n 1 "$tmp/out")"

expect "CI: a skipped or absent tier is a failure" 1 "$log" \
  --must-run oclgrind,fuzz,rusticl <<'EOF'
failed: oclgrind was skipped (/usr/lib/oclgrind/x.so not found), and CI must run it
failed: fuzz was skipped (clang-14 not found), and CI must run it
failed: rusticl did not run, and CI must run it
skipped: tsan (no marker, last line only)
2 passed, 5 failed, 1 skipped
EOF

grep -v -e '"FAIL"' -e '"TIMEOUT"' "$log" >"$tmp/green.json"
expect "skips alone leave the status 0" 0 "$tmp/green.json" <<'EOF'
2 passed, 0 failed, 3 skipped
EOF
expect "no log is a failure" 1 "$tmp/absent.json" <<'EOF'
0 passed, 1 failed, 0 skipped
EOF

# pytest's skips inside the python tier, as tests/python.sh prints them
# (a parameter id may hold spaces), named like Criterion's.
entry python OK $'4 passed, 2 skipped in 1.00s\nok - python.tests.test_torch::test_sdpa[f16-a b] # SKIP torch is not importable\nok - python.tests.test_x::test_y # SKIP expected to fail: a known bug\n' '' \
  >"$tmp/python.json"
expect "pytest's skips inside the python tier" 0 "$tmp/python.json" <<'EOF2'
skipped inside python: python.tests.test_torch::test_sdpa[f16-a b] (torch is not importable)
skipped inside python: python.tests.test_x::test_y (expected to fail: a known bug)
1 passed, 0 failed, 0 skipped
EOF2

# tests/icd_dir.sh on a vendors folder of its own.
vendors=$tmp/vendors
mkdir -p "$vendors" "$tmp/icd"
echo libpocl.so.2 >"$vendors/pocl.icd"
echo libRusticlOpenCL.so.1 >"$vendors/rusticl.icd"
echo stale >"$tmp/icd/mesa.icd"
if OPENCL_VENDOR_PATH=$vendors sh "$here/icd_dir.sh" pocl "$tmp/icd"; then
  [ "$(ls "$tmp/icd")" = pocl.icd ] ||
    fail "icd_dir.sh pocl: the folder holds $(ls "$tmp/icd" | tr '\n' ' ')"
  cmp -s "$vendors/pocl.icd" "$tmp/icd/pocl.icd" ||
    fail "icd_dir.sh pocl: not a copy of pocl.icd"
else
  fail "icd_dir.sh pocl failed"
fi
out=$(OPENCL_VENDOR_PATH=$vendors sh "$here/icd_dir.sh" oclgrind "$tmp/none")
st=$?
[ "$st" = 77 ] && [ "${out#skipped: }" != "$out" ] ||
  fail "icd_dir.sh on a missing driver: exit $st, '$out' (want 77, 'skipped: ...')"
lib=$tmp/liboclgrind-rt-icd.so
: >"$lib"
sh "$here/icd_dir.sh" "$lib" "$tmp/lib" &&
  [ "$(cat "$tmp/lib/liboclgrind-rt-icd.icd")" = "$lib" ] ||
  fail "icd_dir.sh LIBRARY: no .icd naming $lib"
[ "$rc" = 0 ] && echo "ok: icd_dir.sh"
[ "$rc" = 0 ]
