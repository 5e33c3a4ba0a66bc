#!/bin/bash
# tests/survey.sh BUILD_DIR - what ./survey reads and refuses, without
# running it: `clattn devices --list` (a line per device of `clattn
# devices`, four tab-separated fields, with rusticl's device too when
# RUSTICL_ENABLE asks for it) and the survey's command-line errors, which
# stop it before it installs or builds anything (exit 2).
set -u
build=${1:?usage: survey.sh BUILD_DIR}
build=$(cd "$build" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
clattn=$build/host/cli/clattn
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
# Every installed driver, as the survey sees them on a user's machine (not
# the PoCL-only folder tests/run.sh sets for the tests on PoCL).
unset OCL_ICD_VENDORS

fail() {
  echo "FAIL: $*"
  rc=1
}

echo "== clattn devices --list"
for env in "" "RUSTICL_ENABLE=llvmpipe"; do
  if ! env $env "$clattn" devices --list >"$tmp/list" 2>"$tmp/err"; then
    fail "devices --list ($env) exited non-zero: $(cat "$tmp/err")"
    continue
  fi
  [ -s "$tmp/err" ] && fail "devices --list ($env) wrote on stderr: $(cat "$tmp/err")"
  # every line: P:D, a type, a platform and a device name
  bad=$(awk -F'\t' 'NF != 4 || $1 !~ /^[0-9]+:[0-9]+$/ ||
        $2 !~ /^(CPU|GPU|ACCEL|OTHER)$/ || $3 == "" || $4 == ""' "$tmp/list")
  [ -z "$bad" ] || fail "devices --list ($env): malformed lines: $bad"
  # the same devices, in the same order, as the human-readable listing
  env $env "$clattn" devices | sed -n 's/^  \[\([0-9]*:[0-9]*\)\] .*/\1/p' \
    >"$tmp/want"
  cut -f1 "$tmp/list" >"$tmp/got"
  cmp -s "$tmp/want" "$tmp/got" ||
    fail "devices --list ($env) lists $(tr '\n' ' ' <"$tmp/got"), devices $(tr '\n' ' ' <"$tmp/want")"
  [ -s "$tmp/got" ] || fail "devices --list ($env): no device"
  cat "$tmp/list"
done
# rusticl's llvmpipe device appears with RUSTICL_ENABLE, where Mesa's
# OpenCL driver is installed
if [ -f /etc/OpenCL/vendors/rusticl.icd ]; then
  RUSTICL_ENABLE=llvmpipe "$clattn" devices --list |
    awk -F'\t' '$3 == "rusticl" && $4 ~ /llvmpipe/ { found = 1 }
                END { exit !found }' ||
    fail "devices --list: no rusticl llvmpipe line with RUSTICL_ENABLE=llvmpipe"
fi

expect_usage() { # WHAT COMMAND...: exit 2 and a message on stderr
  local what=$1 code
  shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  code=$?
  if [ "$code" != 2 ] || [ ! -s "$tmp/err" ] || [ -s "$tmp/out" ]; then
    fail "$what: exit $code (want 2), stdout '$(cat "$tmp/out")', stderr '$(cat "$tmp/err")'"
  else
    echo "ok: $what: $(head -n 1 "$tmp/err")"
  fi
}
expect_usage "devices --list --verbose" "$clattn" devices --list --verbose
expect_usage "devices --list twice" "$clattn" devices --list --list

echo "== ./survey's command line"
survey=$src/survey
[ -x "$survey" ] || fail "$survey is not executable"
"$survey" --help >"$tmp/help" 2>&1 && grep -q -- '--budget' "$tmp/help" ||
  fail "survey --help: $(cat "$tmp/help")"
expect_usage "survey --budget 0" "$survey" --budget 0 --out "$tmp/o"
expect_usage "survey --budget 5x" "$survey" --budget 5x --out "$tmp/o"
expect_usage "survey --budget (no value)" "$survey" --out "$tmp/o" --budget
expect_usage "survey --frob" "$survey" --frob
# a parameter override would make the survey bench what it forces
CLATTN_PARAMS="decode: wg=64" "$survey" --out "$tmp/o" >"$tmp/out" 2>"$tmp/err"
code=$?
[ "$code" = 1 ] && grep -q CLATTN_PARAMS "$tmp/err" ||
  fail "survey with CLATTN_PARAMS set: exit $code, '$(cat "$tmp/err")'"
# a link planted at the log's name: refused before anything is installed,
# and the file it points at left as it was
mkdir -p "$tmp/planted"
echo "precious" >"$tmp/precious"
ln -s "$tmp/precious" "$tmp/planted/survey.log"
"$survey" --no-install --out "$tmp/planted" >"$tmp/out" 2>"$tmp/err"
code=$?
[ "$code" = 1 ] && grep -q "not a regular file" "$tmp/err" &&
  [ "$(cat "$tmp/precious")" = precious ] && echo "ok: a link at survey.log" ||
  fail "survey with a link at survey.log: exit $code, '$(cat "$tmp/err")', target now '$(cat "$tmp/precious")'"
exit $rc
