#!/bin/bash
# tests/gpu_pack.sh BUILD_DIR - the GPU pack (gpu/pack, docs/GPU.md) end to
# end on PoCL: packed from this build, run with a stripped environment
# (env -i: nothing but what the pack's run script sets), every step of it
# run within its budget, its results read back; then its refusals and a
# budget too small for most steps, which must still end cleanly.
set -u
build=${1:?usage: gpu_pack.sh BUILD_DIR}
build=$(cd "$build" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
fail() {
  echo "FAIL: $*"
  rc=1
}
vendors=${OPENCL_VENDOR_PATH:-/etc/OpenCL/vendors}
pocl=$(cat "$vendors/pocl.icd" 2>/dev/null)
case $pocl in
/*) ;;
"") echo "skipped: no pocl.icd in $vendors (pocl-opencl-icd is not installed)"; exit 77 ;;
*)
  for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do
    [ -e "$d/$pocl" ] && { pocl=$d/$pocl; break; }
  done
  ;;
esac
[ -f "$pocl" ] || { echo "skipped: PoCL's library ($pocl) not found"; exit 77; }

echo "== gpu/pack --build $build"
"$src/gpu/pack" --build "$build" --out "$tmp/pack" || { echo "FAIL: gpu/pack"; exit 1; }
pack=$tmp/pack
for f in run MANIFEST bin/clattn icd/nvidia.icd lib/libclattn.so.1 \
  lib/libOpenCL.so.1 tests/test_paged_append; do
  [ -e "$pack/$f" ] || fail "the pack has no $f"
done
[ "$(cat "$pack/icd/nvidia.icd")" = libnvidia-opencl.so.1 ] ||
  fail "icd/nvidia.icd: '$(cat "$pack/icd/nvidia.icd")'"
# nothing in the pack may need this checkout or build
if env -i LD_LIBRARY_PATH="$pack/lib" ldd "$pack/bin/clattn" | grep -q "$build"; then
  fail "the packed clattn loads a library from $build"
fi

budget=180
echo "== env -i run --driver $pocl --budget ${budget}s (one test, one family)"
t0=$SECONDS
env -i "$pack/run" --driver "$pocl" --budget ${budget}s --cases 1 \
  --tests test_paged_append --families decode --out "$tmp/out" >"$tmp/stdout" 2>&1
code=$?
took=$((SECONDS - t0))
cat "$tmp/out/summary.txt" 2>/dev/null
[ $code = 0 ] || fail "run exited $code: $(tail -5 "$tmp/stdout")"
# the budget, plus the kill grace of one step and the fixed report steps
[ $took -le $((budget + 60)) ] || fail "run took ${took}s for a budget of ${budget}s"
for s in "devices" "test test_paged_append" "probe" "model check" "tune decode" \
  "bench decode" "report" "report (markdown)" "export"; do
  line=$(grep -F "$s: " "$tmp/out/summary.txt" | head -1)
  case $line in
  "$s: ok"* | "$s: stopped at its budget"*) ;;
  *) fail "step '$s' did not run to its end or its budget: '${line:-no line}'" ;;
  esac
done
grep -q "Synthesis: Tested: [1-9]" "$tmp/out/summary.txt" ||
  fail "no test count in summary.txt"
grep -q "Failing: [1-9]\|Crashing: [1-9]" "$tmp/out/summary.txt" &&
  fail "a correctness test failed on PoCL through the pack"
for f in run.log devices.txt tuning.db report.html report.md shipped.json; do
  [ -s "$tmp/out/$f" ] || fail "no $f in the results"
done
[ -e "$tmp/out/tuning.db-wal" ] && fail "tuning.db-wal left beside the database"
grep -q "cpu\|pthread" "$tmp/out/devices.txt" || fail "devices.txt names no PoCL device"
python3 - "$tmp/out/tuning.db" "$tmp/out/shipped.json" <<'PY' || fail "the results' database or export"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n = {t: db.execute(f"select count(*) from {t}").fetchone()[0]
     for t in ("profiles", "tuning", "bench")}
print("rows:", n)
assert all(v > 0 for v in n.values()), n
entries = json.load(open(sys.argv[2]))["entries"]
assert entries, "shipped.json holds no entry"
PY
grep -q "<svg\|<table" "$tmp/out/report.html" || fail "report.html has no table or plot"

echo "== the smallest budget, too small for most steps: every step has its line, none fails, the run ends cleanly"
t0=$SECONDS
env -i "$pack/run" --driver "$pocl" --budget 60s --tests test_decode \
  --families decode --out "$tmp/small" >"$tmp/stdout" 2>&1
code=$?
cat "$tmp/small/summary.txt"
[ $code = 0 ] || fail "run --budget 60s exited $code"
# the budget, plus the kill grace of one step and the fixed report steps
[ $((SECONDS - t0)) -le 150 ] || fail "run --budget 60s took $((SECONDS - t0))s"
for s in "probe" "tune decode" "bench decode" "report"; do
  grep -q "^$s" "$tmp/small/summary.txt" || fail "--budget 60s: no line for $s"
done
grep -q "not run: the budget is spent" "$tmp/small/summary.txt" ||
  fail "--budget 60s: no step said it was not run"
grep ": failed" "$tmp/small/summary.txt" && fail "--budget 60s: a step failed"

echo "== refusals"
expect() { # WANT_EXIT WHAT MESSAGE_PART ARGS...
  local want=$1 what=$2 part=$3
  shift 3
  env -i "$pack/run" "$@" >"$tmp/o" 2>&1
  local got=$?
  [ $got = "$want" ] || fail "$what: exit $got (want $want): $(head -3 "$tmp/o")"
  grep -rqF -- "$part" "$tmp/o" "$tmp/r/summary.txt" 2>/dev/null ||
    fail "$what: no '$part' in: $(cat "$tmp/o" "$tmp/r/summary.txt" 2>/dev/null | head -3)"
}
expect 2 "a bad budget" "--budget 'soon'" --budget soon --out "$tmp/r"
expect 2 "a budget below the minimum" "at least 60s" --budget 30s --out "$tmp/r"
expect 2 "a bad case count" "--cases '0'" --cases 0 --out "$tmp/r"
expect 2 "an unknown argument" "unknown argument" --fast --out "$tmp/r"
rm -rf "$tmp/r"
expect 3 "a missing driver" "not found" --driver /nonexistent/libx.so --out "$tmp/r"
# no NVIDIA driver on this machine: the run says so and stops
if ! /sbin/ldconfig -p | grep -q libnvidia-opencl.so.1 &&
  [ ! -e /usr/local/nvidia/lib64/libnvidia-opencl.so.1 ]; then
  rm -rf "$tmp/r"
  expect 3 "no NVIDIA driver" "libnvidia-opencl.so.1 is missing" --out "$tmp/r"
fi
[ $rc = 0 ] && echo "gpu_pack: all checks passed"
exit $rc
