#!/bin/bash
# tests/cli.sh BUILD_DIR - the probe and model commands end to end on the
# default device (PoCL in CI): every command must succeed, its JSON must
# parse, and bad input must give exit status 2 with a message.  The
# database is a temporary file.
set -u
build=${1:?usage: cli.sh BUILD_DIR}
clattn="$build/host/cli/clattn"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CLATTN_DB="$tmp/tuning.db"
export CLATTN_CACHE_DIR="$build/tests/clattn-cache"
fails=0
ok() { echo "ok:   $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
run() { # run DESCRIPTION EXPECTED_STATUS CMD...
  local what=$1 want=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" = "$want" ]; then ok "$what"; else
    bad "$what: exit $got, want $want"; cat "$tmp/out" "$tmp/err"; fi
}
json() { # json DESCRIPTION: the last output parses as JSON
  if python3 -m json.tool "$tmp/out" >/dev/null 2>&1; then ok "$1 is JSON"
  else bad "$1 is not JSON"; cat "$tmp/out"; fi
}
has() { # has DESCRIPTION PATTERN [FILE]
  if grep -q -- "$2" "${3:-$tmp/out}"; then ok "$1"
  else bad "$1: no '$2'"; cat "${3:-$tmp/out}"; fi
}

run "probe --quick --json" 0 "$clattn" probe --quick --json
json "probe --quick --json"
has "probe reports the triad" triad
run "probe (default settings, stored)" 0 "$clattn" probe
has "probe says where it stored the profile" "stored in"
run "model decode --json" 0 "$clattn" model decode --kv-seq 4096 --heads 8 \
  --kv-heads 2 --head-dim 64 --json
json "model decode --json"
has "model names the decode kernel" decode_split
run "model attention on a datasheet GPU" 0 "$clattn" model attention \
  --profile a100 --seq 1024 --heads 32 --kv-heads 8 --head-dim 128 --causal \
  --dtype f16
has "A100 prefill is compute-bound" compute
run "model layer" 0 "$clattn" model layer --profile MI300X --batch 2 \
  --seq 1 --cache-len 1000 --d-model 1024 --heads 8 --head-dim 128
has "layer decode lists the GEMMs" "gemm x\*w_q"
run "model profiles" 0 "$clattn" model profiles
[ "$(grep -c -E 'NVIDIA|AMD|Intel' "$tmp/out")" -ge 12 ] &&
  ok "12 datasheet profiles" || bad "fewer than 12 datasheet profiles"
run "model mqa" 0 "$clattn" model mqa
has "MQA analysis table" "MQA (h_kv=1)"
has "present device row" "present device"
run "model --check --quick" 0 "$clattn" model --check --quick
has "check prints measured times" "meas us"
has "check stores results" "stored in"
has "check uses the measured profile" "measured profile"
run "unknown datasheet" 2 "$clattn" model decode --profile no-such-gpu \
  --kv-seq 64 --heads 8 --head-dim 64
has "unknown datasheet is named" no-such-gpu "$tmp/err"
run "bad shape" 2 "$clattn" model attention --profile a100 --seq 8 \
  --heads 6 --kv-heads 4 --head-dim 64
has "bad shape says why" multiple "$tmp/err"
run "missing shape" 2 "$clattn" model decode --profile a100
echo "cli.sh: $fails failure(s)"
[ "$fails" = 0 ]
