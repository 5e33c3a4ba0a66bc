#!/bin/bash
# tests/cli.sh BUILD_DIR - the probe, model, db, tune, explain, bench and
# run commands end to end on the default device (PoCL in CI): every command
# must succeed, its JSON must parse, and bad input must give exit status 2
# with a message.  The database is a temporary file.
set -u
build=${1:?usage: cli.sh BUILD_DIR}
clattn="$build/host/cli/clattn"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CLATTN_DB="$tmp/tuning.db"
export CLATTN_SHIPPED=0 # the sources below are the database's
export CLATTN_CACHE_DIR="$build/tests/clattn-cache"
fails=0
ok() { echo "ok:   $*"; }
failed=() # repeated at the end: a long log's tail still names them
bad() { echo "FAIL: $*"; fails=$((fails + 1)); failed+=("$*"); }
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
run "model talking-heads --json" 0 "$clattn" model talking-heads --seq 512 \
  --heads 1 --heads-k 8 --heads-v 8 --head-dim 64 --json
json "model talking-heads --json"
has "one logit head: one pass" '"scheme": 1'
run "model talking-heads, 8 logit heads" 0 "$clattn" model talking-heads \
  --profile h100 --seq 512 --heads 8 --heads-k 8 --head-dim 64
has "eight logit heads: two passes" "scheme=2"
# the append family under its former talking-heads name, with that
# family's keys
run "model talking-heads-append (append's former name)" 0 "$clattn" model \
  talking-heads-append --profile h100 --kv-seq 20 --new 3 --heads-k 2 \
  --heads 5 --heads-v 3 --head-dim 16 --head-dim-v 8 --dtype bf16
has "the former name models the append kernel" kv_append
run "a family's own key elsewhere" 2 "$clattn" model attention --seq 8 \
  --heads 8 --head-dim 64 --heads-k 8
has "names the unknown key" "unknown option '--heads-k'" "$tmp/err"
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
# cold decode cannot read K/V much faster than a copy streams (a pass that
# ran on empty caches, lens 0, read hundreds of GB/s); the bound is the
# run's fastest copy, since one round's copy can land in a slow moment
awk '/^  decode b=/ { n++; gbs[n] = $(NF-3); if ($NF > top) top = $NF }
     END { for (i = 1; i <= n; i++) if (gbs[i] > 2 * top || gbs[i] <= 0) bad++
           exit !(n == 6 && top > 0 && bad == 0) }' "$tmp/out" &&
  ok "check: 6 decode rows, each within 2x of the run's fastest copy" ||
  bad "check: decode GB/s implausible against the copy: $(grep '^  decode' "$tmp/out")"
run "model check --probe --quick" 0 "$clattn" model check --probe --quick \
  --no-store
has "check --probe predicts from ceilings measured in the run" \
  "measured profile probed in this run"
# the second table: a row per registered family (--quick: its first
# shape), each with a finite, positive predicted and measured time
"$clattn" families | awk '/^[a-z]/ { print $1 }' >"$tmp/families"
awk 'NR == FNR { want[$1] = 1; next }
     /shape run$/ || /shape run / { table = 1; next }
     table && ($1 in want) && $3 + 0 > 0 && $4 + 0 > 0 &&
       $3 !~ /nan|inf/ && $4 !~ /nan|inf/ { seen[$1] = 1 }
     END { for (f in want) if (!(f in seen)) { print "missing: " f; bad = 1 }
           exit bad }' "$tmp/families" "$tmp/out" >"$tmp/missing" &&
  [ -s "$tmp/families" ] &&
  ok "check: every family ($(wc -l <"$tmp/families")) with a finite predicted and measured time" ||
  { bad "check: families without a timed row: $(cat "$tmp/missing")"; cat "$tmp/out"; }
run "model check --families with an unknown family" 2 "$clattn" model check \
  --families decode,no-such-family --no-store
has "the unknown family is named" no-such-family "$tmp/err"
run "unknown datasheet" 2 "$clattn" model decode --profile no-such-gpu \
  --kv-seq 64 --heads 8 --head-dim 64
has "unknown datasheet is named" no-such-gpu "$tmp/err"
run "bad shape" 2 "$clattn" model attention --profile a100 --seq 8 \
  --heads 6 --kv-heads 4 --head-dim 64
has "bad shape says why" multiple "$tmp/err"
run "missing shape" 2 "$clattn" model decode --profile a100

# clattn model switchhead --paper: the paper's per-layer accounting, every
# count of spec 10 exact and rounding to the figure the paper prints.
run "model switchhead --paper" 0 "$clattn" model switchhead --paper
for v in 453,427,200 5,368,709,120 1,610,612,736 170,364,928 202,506,240 \
    1,955,627,008 2,358,116,352 709,296,128 560,906,240 6,442,450,944 \
    285,618,176 4,212,719,616 3,461,120 1,363,968 20,971,520 8,388,608 \
    6,291,456 10,485,760 762,880 2,924,544 5,578,752 2,793,472 6,082,560 \
    37,748,736 1,315,840 18,432,000; do
  grep -q -- " $v " "$tmp/out" || bad "model switchhead --paper: no $v"
done
[ "$(grep -c -E '^ +[0-9]+ .* yes +[0-9]+\*? ' "$tmp/out")" = 15 ] &&
  ok "model switchhead --paper: 15 rows, each the paper's figure" ||
  { bad "model switchhead --paper: not 15 matching rows"; cat "$tmp/out"; }
has "47M WT103: 170,364,928 MACs, 0.376 of dense" \
  "WT103 .*47M .*SwitchHead-XL .* 170,364,928 .*170.4M .* 0.376 "
has "Eq. 13, 47M" "Eq. 13 instead: SH WT103 47M gives 200,318,976"
has "Eq. 13, 262M" "2,819,489,792 MACs"
run "model switchhead --paper --json" 0 "$clattn" model switchhead --paper \
  --json
json "model switchhead --paper --json"
has "JSON: 47M WT103's exact MACs" '"macs": 170364928,'
run "model switchhead (the 47M layer against its dense match)" 0 \
  "$clattn" model switchhead --profile h100
has "the 47M layer against MHA h=10" "E=5 k=3 f32 vs MHA h=10 k=v=41"
has "the ratio row" "^  SwitchHead/MHA"
run "model switchhead, 262M decode --json" 0 "$clattn" model switchhead \
  --profile h100 --d-model 1024 --heads 4 --head-dim 112 --experts 4 \
  --topk 2 --seq 1 --cache-len 511 --causal --dense-heads 16 --json
json "model switchhead --json"
has "JSON: the ratios" '"ratio": {"params"'
run "model switchhead, an unknown key" 2 "$clattn" model switchhead \
  --profile h100 --expert 4
has "names the unknown key" "unknown option '--expert'" "$tmp/err"
run "model switchhead --paper with a shape" 2 "$clattn" model switchhead \
  --paper --heads 4
has "the refusal says why" "takes no shape" "$tmp/err"

# clattn db: import a hand-written file (a quote, a newline and a non-ASCII
# name, a faster row of an older tuning method), list, export, re-import
# into a second database, bad files.
cat >"$tmp/in.json" <<'JSON'
{"clattn_tuning": 1, "entries": [
 {"fingerprint": "fpA", "device": "GPU \"A\" \u00e9", "kernel": "decode",
  "shape_class": "f32 k64 v64 g8 bh1 m4096 bhsd", "params": "rows=8 wg=128",
  "status": "ok", "median_s": 3.9e-05, "spread": 0.02,
  "message": "line1\nline2", "updated": "2025-01-01T00:00:00Z",
  "tune_method": 2},
 {"fingerprint": "fpA", "device": "GPU \"A\" \u00e9", "kernel": "decode",
  "shape_class": "f32 k64 v64 g8 bh1 m4096 bhsd", "params": "rows=4 wg=64",
  "status": "ok", "median_s": 2.1e-05, "updated": "2025-01-01T00:00:00Z",
  "tune_method": 1},
 {"fingerprint": "fpA", "device": "GPU \"A\" \u00e9", "kernel": "decode",
  "shape_class": "f32 k64 v64 g8 bh1 m4096 bhsd", "params": "rows=16 wg=256",
  "status": "wrong", "median_s": 0.1, "updated": "2025-01-01T00:00:00Z"}
]}
JSON
run "db path" 0 "$clattn" db path
has "db path is \$CLATTN_DB" "$CLATTN_DB"
run "db path without HOME" 1 env -u CLATTN_DB -u XDG_DATA_HOME -u HOME \
  "$clattn" db path
has "db path names what is unset" "HOME are all unset" "$tmp/err"
# only the default database's own directory is made; a named path's
# directory must exist
run "tune --db in a missing directory" 1 "$clattn" tune decode \
  --db "$tmp/nodir2/a/b/c.db" --budget 1s
has "tune names the missing directory" "directory $tmp/nodir2/a/b does not" \
  "$tmp/err"
[ ! -e "$tmp/nodir2" ] && ok "tune created no tree of directories" ||
  bad "tune created $tmp/nodir2"
mkdir "$tmp/home"
run "the default database under HOME" 0 env -u CLATTN_DB -u XDG_DATA_HOME \
  HOME="$tmp/home" "$clattn" db import "$tmp/in.json"
[ -f "$tmp/home/.local/share/clattn/tuning.db" ] &&
  ok "the default database's directories are made" ||
  bad "no $tmp/home/.local/share/clattn/tuning.db"
run "a default database below a missing HOME" 1 env -u CLATTN_DB \
  -u XDG_DATA_HOME HOME="$tmp/nohome" "$clattn" db import "$tmp/in.json"
[ ! -e "$tmp/nohome" ] && ok "a missing HOME is not created" ||
  bad "db import created HOME $tmp/nohome"
# Readers create nothing: not the file, not its directories.
run "db path of a missing database" 0 "$clattn" db path --db "$tmp/nodir/x.db"
has "db path names it" "$tmp/nodir/x.db"
run "db list of a missing database" 1 "$clattn" db list --db "$tmp/nodir/x.db"
has "db list says there is none" "no database" "$tmp/err"
run "db export of a missing database" 1 "$clattn" db export \
  --db "$tmp/nodir/x.db" "$tmp/never.json"
[ ! -e "$tmp/nodir" ] && [ ! -e "$tmp/never.json" ] &&
  ok "db path, list and export created nothing" ||
  bad "a reader created $tmp/nodir or the export file"
run "db import" 0 "$clattn" db import "$tmp/in.json"
has "db import counts" "3 added, 0 updated, 0 unchanged"
run "db import again" 0 "$clattn" db import "$tmp/in.json"
has "db import again adds nothing" "0 added, 0 updated, 3 unchanged"
run "db list --all-devices" 0 "$clattn" db list --all-devices
has "db list shows the shape class" "m4096 bhsd"
has "db list shows the best params" "rows=8 wg=128"
has "db list shows the median" "39.0 us"
grep -q "rows=4 wg=64" "$tmp/out" && bad "db list shows an older method's row" ||
  ok "db list passes over the older method's faster row"
grep "m4096 bhsd" "$tmp/out" | grep -Eq " 3 +1 +2\$" &&
  ok "db list counts 3 rows, 1 rejected, 2 of another method (1, unknown)" ||
  bad "db list counts: $(grep 'm4096 bhsd' "$tmp/out")"
run "db list --json" 0 "$clattn" db list --all-devices --json
json "db list --json"
[ "$(grep -c '"fingerprint"' "$tmp/out")" = 3 ] && ok "db list --json: 3 rows" ||
  bad "db list --json: not 3 rows"
run "db list --kernel prefill" 0 "$clattn" db list --all-devices \
  --kernel prefill
has "db list --kernel filters" "no tuning entries"
run "db list (present device)" 0 "$clattn" db list
# a link planted at the old predictable temporary's name is not followed
echo "victim" >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/out.json.tmp"
run "db export" 0 "$clattn" db export "$tmp/out.json"
[ "$(cat "$tmp/victim")" = victim ] && ok "db export follows no planted link" ||
  bad "db export wrote through the link at out.json.tmp"
rm -f "$tmp/out.json.tmp" "$tmp/victim"
[ -z "$(ls "$tmp" | grep '\.tmp')" ] && ok "db export leaves no temporary" ||
  bad "db export left a temporary: $(ls "$tmp" | grep '\.tmp')"
# Output files (tests/cli.sh's report section too): never an input, a
# device written through, a link's target written on purpose.
cp "$CLATTN_DB" "$tmp/before.db"
run "db export over its own database" 1 "$clattn" db export "$CLATTN_DB"
has "names the database as an input" "is an input" "$tmp/err"
ln -s "$CLATTN_DB" "$tmp/db-link.json"
run "db export through a link to its database" 1 "$clattn" db export \
  "$tmp/db-link.json"
has "names the link and the database" "is the same file as" "$tmp/err"
cmp -s "$CLATTN_DB" "$tmp/before.db" && ok "the database is byte-for-byte kept" ||
  bad "db export changed the database it read"
run "db export to /dev/null" 0 "$clattn" db export /dev/null
[ -c /dev/null ] && ok "/dev/null is still a character device" ||
  bad "db export replaced /dev/null"
# (the line after the document says where it went)
"$clattn" db export /dev/stdout 2>"$tmp/err" | head -n -1 |
  python3 -m json.tool >/dev/null 2>&1 &&
  ok "db export /dev/stdout into a pipe is JSON" ||
  bad "db export /dev/stdout: $(cat "$tmp/err")"
mkfifo "$tmp/fifo"
# (the reader gives up after a minute: a writer that never opens the FIFO
# fails the test rather than hanging it)
timeout 60 python3 -c 'import json, sys; json.load(open(sys.argv[1]))' \
  "$tmp/fifo" &
reader=$!
run "db export to a FIFO" 0 "$clattn" db export "$tmp/fifo"
wait $reader && ok "the FIFO's reader got JSON" || bad "the FIFO's reader failed"
[ -p "$tmp/fifo" ] && ok "the FIFO is still a FIFO" || bad "db export replaced the FIFO"
echo "old" >"$tmp/target.json"
ln -s target.json "$tmp/link.json"
run "db export through a link" 0 "$clattn" db export "$tmp/link.json"
[ -L "$tmp/link.json" ] && python3 -m json.tool "$tmp/target.json" \
  >/dev/null 2>&1 && ok "db export wrote the link's target, kept the link" ||
  bad "db export replaced the link or left its target"
ln -s nowhere.json "$tmp/dangling.json"
run "db export through a link to nothing" 1 "$clattn" db export \
  "$tmp/dangling.json"
has "names the link to nothing" "symbolic link to a missing file" "$tmp/err"
run "db export to a directory" 1 "$clattn" db export "$tmp"
has "names the directory" "is a directory" "$tmp/err"
python3 -m json.tool "$tmp/out.json" >/dev/null 2>&1 &&
  ok "db export is JSON" || bad "db export is not JSON"
run "db export -" 0 "$clattn" db export -
json "db export -"
run "db import into a second database" 0 "$clattn" db import \
  "$tmp/out.json" --db "$tmp/second.db"
has "second database gets all three rows" "3 added"
"$clattn" db export "$tmp/out2.json" --db "$tmp/second.db" >/dev/null
if python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
sys.exit(0 if a["entries"] == b["entries"] and len(a["entries"]) == 3 and
         any(e["message"] == "line1\nline2" for e in a["entries"]) and
         sorted(e["tune_method"] for e in a["entries"]) == [0, 1, 2] else 1)
' "$tmp/out.json" "$tmp/out2.json"; then ok "db export/import round trip"
else bad "db export/import differ"; fi
sed 's/"spread": 0.02/"spread": "x"/' "$tmp/in.json" >"$tmp/bad.json"
run "db import of a malformed file" 2 "$clattn" db import "$tmp/bad.json" \
  --db "$tmp/third.db"
has "malformed file: file, line and what" "bad.json:4:.*expected a number" \
  "$tmp/err"
run "db list after the failed import" 0 "$clattn" db list --all-devices \
  --db "$tmp/third.db"
has "failed import imported nothing" "no tuning entries"
run "db import of a missing file" 1 "$clattn" db import "$tmp/none.json"
has "missing file is named" none.json "$tmp/err"
run "db without action" 2 "$clattn" db
run "db unknown action" 2 "$clattn" db frobnicate
run "db export without FILE" 2 "$clattn" db export
run "db export --json (list only)" 2 "$clattn" db export x --json

# clattn tune / explain: a tiny prefill class, then what the library picks.
shape=(--batch 1 --seq 64 --heads 2 --head-dim 32 --causal)
run "tune prefill (3 candidates)" 0 "$clattn" tune prefill "${shape[@]}" \
  --max 3 --strategy random
has "tune prints the best" "  best     variant="
has "tune counts the candidates" "3 of [0-9]* candidates evaluated"
[ ! -s "$tmp/err" ] && ok "tune is quiet in a pipe" ||
  { bad "tune wrote progress into a pipe"; cat "$tmp/err"; }
best=$(sed -n 's/^  best     \(variant=.*\)  [0-9.]* ms.*/\1/p' "$tmp/out")
run "tune again resumes" 0 "$clattn" tune prefill "${shape[@]}" --max 3 \
  --strategy random
has "the rerun measures nothing" "(0 measured now, 3 from the database)"
run "explain attention" 0 "$clattn" explain attention "${shape[@]}"
has "explain: the tuned entry" "source       tuned"
has "explain: the tuned params" "params       $best"
# rows of an older tuning method: passed over at run time, measured again
python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("UPDATE tuning SET tune_method = 0 WHERE kernel = \"prefill\"")
c.commit()' "$CLATTN_DB"
run "explain with stale rows" 0 "$clattn" explain attention "${shape[@]}"
has "explain: stale rows passed over" \
  "([1-3] of an older tuning method passed over"
grep -q "source       tuned" "$tmp/out" && bad "explain used a stale row" ||
  ok "explain: a stale row is not used"
run "tune after stale rows" 0 "$clattn" tune prefill "${shape[@]}" --max 3 \
  --strategy random
has "tune: stale rows counted" \
  "3 stored rows of an older tuning method (clattn_tune_method) were not"
has "tune: stale rows measured again" "(3 measured now, 0 from the database)"
run "explain after the rerun" 0 "$clattn" explain attention "${shape[@]}"
has "explain: the tuned entry again" "source       tuned"
# The projection family: its own m n k keys, CLBlast without tuning rows,
# and both schemes among the tuned candidates.
run "explain projection (untuned)" 0 "$clattn" explain projection --m 24 \
  --n 40 --k 36
has "explain projection: the shape class" "projection f32 m32 n40 in36"
has "explain projection: CLBlast by default" "resolved .* scheme=2"
run "tune projection" 0 "$clattn" tune projection --m 24 --n 40 --k 36 \
  --strategy exhaustive --max 4
has "tune projection: a best entry" "  best     variant="
run "explain projection (tuned)" 0 "$clattn" explain projection --m 24 \
  --n 40 --k 36
has "explain projection: the tuned entry" "source       tuned"
run "explain attention --json" 0 "$clattn" explain attention "${shape[@]}" \
  --json
json "explain --json"
run "explain with caller params" 0 "$clattn" explain attention \
  "${shape[@]}" --variant 1 --rows 2
has "explain: caller first" "source       caller"
run "explain with --params" 0 "$clattn" explain attention \
  "${shape[@]}" --params "variant=1 rows=2"
has "explain --params: caller first" "source       caller"
has "explain --params: resolved in the family's names" "resolved     variant=1 rows=2"
run "explain --params, another family's tunable" 2 "$clattn" explain \
  attention "${shape[@]}" --params "splits=2"
has "another family's tunable is named" \
  "splits: the prefill family has no such tunable" "$tmp/err"
run "families lists each family's tunables" 0 "$clattn" families
has "families: decode's splits" "tunable splits=1.."
CLATTN_PARAMS="decode: keys=16 splits=2" run "explain under CLATTN_PARAMS" 0 \
  "$clattn" explain decode --kv-seq 500 --heads 2 --head-dim 32
has "explain: the environment's override" "source       override"
has "explain: override resolved" "keys=16 splits=2"
CLATTN_PARAMS="decode: bogus=2" run "bad CLATTN_PARAMS" 1 "$clattn" \
  explain decode --kv-seq 500 --heads 2 --head-dim 32
has "bad CLATTN_PARAMS is named" CLATTN_PARAMS "$tmp/err"
run "explain bad shape" 2 "$clattn" explain attention --seq 8 --heads 6 \
  --kv-heads 4 --head-dim 64
run "tune bad strategy" 2 "$clattn" tune prefill "${shape[@]}" \
  --strategy bogus
run "tune bad budget" 2 "$clattn" tune prefill "${shape[@]}" --budget 5x
run "tune all with a shape" 2 "$clattn" tune all "${shape[@]}"
# two tuners on one database at once: both finish, no row lost
"$clattn" tune decode --kv-seq 700 --heads 4 --kv-heads 2 --head-dim 32 \
  --max 3 --strategy random --db "$tmp/two.db" >"$tmp/two1" 2>&1 &
p1=$!
"$clattn" tune prefill "${shape[@]}" --max 3 --strategy random \
  --db "$tmp/two.db" >"$tmp/two2" 2>&1 &
p2=$!
wait "$p1"; s1=$?
wait "$p2"; s2=$?
n=$(python3 -c 'import sqlite3,sys
print(sqlite3.connect(sys.argv[1]).execute("select count(*) from tuning").fetchone()[0])' "$tmp/two.db")
[ "$s1" = 0 ] && [ "$s2" = 0 ] && [ "$n" = 6 ] &&
  ok "two tuners on one database: 6 rows" ||
  { bad "two tuners: exit $s1/$s2, $n rows"; cat "$tmp/two1" "$tmp/two2"; }
# Ctrl-C: stops after the running candidate, everything saved, exit 130,
# and the database stays readable
"$clattn" tune decode --kv-seq 2048 --heads 4 --kv-heads 1 --head-dim 64 \
  --strategy exhaustive --budget 5m --db "$tmp/int.db" >"$tmp/out" \
  2>"$tmp/err" &
pid=$!
for _ in $(seq 600); do
  n=$(python3 -c 'import sqlite3,sys
try: print(sqlite3.connect(sys.argv[1]).execute("select count(*) from tuning").fetchone()[0])
except Exception: print(0)' "$tmp/int.db")
  [ "$n" -ge 2 ] && break
  sleep 0.2
done
kill -INT "$pid"
wait "$pid"
st=$?
[ "$st" = 130 ] && ok "Ctrl-C: exit 130" || bad "Ctrl-C: exit $st, want 130"
has "Ctrl-C: says results are saved" "stopped by Ctrl-C"
has "Ctrl-C: the run reports stop" "stopped: stop"
n2=$(python3 -c 'import sqlite3,sys
print(sqlite3.connect(sys.argv[1]).execute("select count(*) from tuning").fetchone()[0])' "$tmp/int.db")
[ "$n2" -ge "$n" ] && ok "Ctrl-C: $n2 rows saved" || bad "Ctrl-C: rows lost"
run "Ctrl-C: db list reads the database" 0 "$clattn" db list --all-devices \
  --db "$tmp/int.db"
has "Ctrl-C: db list shows the decode class" "^decode"

# clattn run talking-heads: random inputs checked against the reference,
# the saved inputs read back as a prefill then decode steps, a bad shape
th=(--seq 6 --d-model 16 --heads-k 3 --heads 5 --head-dim 4)
run "run talking-heads --random --check" 0 "$clattn" run talking-heads \
  --random --batch 2 "${th[@]}" --heads-v 2 --head-dim-v 5 --causal --check \
  --save-inputs "$tmp/th"
has "talking-heads: check passes" "check talking-heads: .*PASS"
run "run talking-heads --in --decode-from" 0 "$clattn" run talking-heads \
  --in "$tmp/th" --out "$tmp/th_y.npy" --decode-from 2 --check
has "talking-heads: prefill + decode check passes" "(prefill + decode).*PASS"
cp "$tmp/th/x.npy" "$tmp/x-before.npy"
run "run --out one of its inputs" 1 "$clattn" run talking-heads \
  --in "$tmp/th" --out "$tmp/th/x.npy"
has "run --out: the input is named" "x.npy is an input" "$tmp/err"
cmp -s "$tmp/th/x.npy" "$tmp/x-before.npy" && ok "run --out kept its input" ||
  bad "run --out overwrote its input x.npy"
run "run --save-inputs in a missing directory" 1 "$clattn" run \
  talking-heads --random "${th[@]}" --heads-v 2 --save-inputs \
  "$tmp/nodir3/a/th"
has "--save-inputs: the parent is named" "parent directory does not exist" \
  "$tmp/err"
[ ! -e "$tmp/nodir3" ] && ok "--save-inputs created no tree" ||
  bad "--save-inputs created $tmp/nodir3"
"$clattn" run talking-heads --random "${th[@]}" --heads-v 3 \
  --save-inputs "$tmp/th3" >/dev/null 2>&1
cp "$tmp/th3/p_w.npy" "$tmp/th/p_w.npy"
run "run talking-heads with p_w of other value heads" 2 "$clattn" run \
  talking-heads --in "$tmp/th" --out "$tmp/th_y.npy"
has "talking-heads: the bad shape is named" "w_v.npy: shape" "$tmp/err"

# clattn run optimised|efficient|super (Hosseini & Hosseini): random
# weights checked against the reference, a prefill then decode steps, saved
# inputs read back (x rewritten as [n, d]), Super's max_len and w_a's shape
# refused, and the model's comparison with MHA.
npy_f32() { # npy_f32 FILE ROWS COLS: a float32 .npy of small values
  python3 - "$@" <<'PY'
import struct, sys
path, r, c = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
head = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (r, c)
head += " " * (63 - (10 + len(head)) % 64) + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
    f.write(struct.pack("<%df" % (r * c), *[(i % 7 - 3) / 8 for i in range(r * c)]))
PY
}
hh=(--d-model 16 --heads 4 --seq 6)
run "run efficient --random --check" 0 "$clattn" run efficient --random \
  --batch 2 "${hh[@]}" --check
has "efficient: check passes" "check efficient: .*PASS"
run "run super --random --causal --decode-from --check" 0 "$clattn" run \
  super --random "${hh[@]}" --max-len 8 --causal --decode-from 2 --check \
  --save-inputs "$tmp/super"
has "super: prefill + decode check passes" \
  "check super (prefill + decode).*PASS"
run "run optimised --random --save-inputs" 0 "$clattn" run optimised \
  --random "${hh[@]}" --save-inputs "$tmp/opt"
npy_f32 "$tmp/opt/x.npy" 6 16
run "run optimised --in --check (x [n, d])" 0 "$clattn" run optimised \
  --in "$tmp/opt" --out "$tmp/opt_y.npy" --heads 4 --causal --check
has "optimised: check passes" "check optimised: .*PASS"
head -c 80 "$tmp/opt_y.npy" | grep -aq "'shape': (6, 16)" &&
  ok "optimised: y has x's shape [n, d]" || bad "optimised: y's shape"
run "run super --seq over --max-len" 2 "$clattn" run super --random \
  --d-model 16 --heads 4 --seq 9 --max-len 8
has "super: the refusal names max_len" "exceeds max_len 8" "$tmp/err"
npy_f32 "$tmp/super/w_a.npy" 8 7
run "run super with a w_a of the wrong shape" 2 "$clattn" run super \
  --in "$tmp/super" --out "$tmp/super_y.npy" --heads 4 --causal
has "super: the bad w_a is named" "w_a.npy: shape \[8, 7\]" "$tmp/err"
run "run efficient --heads not dividing d_model" 2 "$clattn" run efficient \
  --random --d-model 16 --heads 3 --seq 4
run "model efficient" 0 "$clattn" model efficient --profile h100 \
  --d-model 512 --heads 8 --seq 1024
grep -Eq "^  efficient/MHA +0\.5 " "$tmp/out" &&
  ok "model efficient: half MHA's parameters" ||
  { bad "model efficient: parameter ratio not 0.5"; cat "$tmp/out"; }
run "model optimised --json" 0 "$clattn" model optimised --profile h100 \
  --d-model 512 --heads 8 --seq 1 --cache-len 300 --causal --json
json "model optimised --json"
has "model optimised: 3/4 of MHA's parameters" '"params": 0.75,'
run "model super, max_len = d_model" 0 "$clattn" model super --profile h100 \
  --d-model 256 --heads 4 --seq 256 --max-len 256 --causal
grep -Eq "^  super/MHA +0\.75 " "$tmp/out" &&
  ok "model super: 3/4 of MHA's parameters when max_len = d_model" ||
  { bad "model super: parameter ratio not 0.75"; cat "$tmp/out"; }
run "model efficient-prefill (the K == V family)" 0 "$clattn" model \
  efficient-prefill --profile h100 --seq 64 --heads 2 --head-dim 32
has "the efficient-prefill family's prediction" "^efficient-prefill dtype=f32"

# clattn run switchhead: random weights checked against the reference (top
# 2 of 3 experts, batch 2), the saved inputs read back with w_v and w_o as
# [H*E, ..] as a prefill then decode steps, one expert without w_s, and a
# top-k above the experts and a bad w_d refused.
npy_reshape() { # npy_reshape FILE "(a, b, c)": the same data, another shape
  python3 - "$@" <<'PY'
import struct, sys
path, shape = sys.argv[1], sys.argv[2]
raw = open(path, "rb").read()
data = raw[10 + struct.unpack("<H", raw[8:10])[0]:]
head = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape
head += " " * (63 - (10 + len(head)) % 64) + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
    f.write(data)
PY
}
sh=(--seq 6 --d-model 13 --heads 2 --head-dim 5)
run "run switchhead --random --check" 0 "$clattn" run switchhead --random \
  --batch 2 "${sh[@]}" --experts 3 --topk 2 --check --save-inputs "$tmp/sh"
has "switchhead: check passes" "check switchhead: .*PASS"
npy_reshape "$tmp/sh/w_v.npy" "(6, 13, 5)"
npy_reshape "$tmp/sh/w_o.npy" "(6, 5, 13)"
run "run switchhead --in --decode-from --check ([H*E, ..] experts)" 0 \
  "$clattn" run switchhead --in "$tmp/sh" --out "$tmp/sh_y.npy" --heads 2 \
  --topk 2 --decode-from 2 --check
has "switchhead: prefill + decode check passes" \
  "check switchhead (prefill + decode).*PASS"
head -c 80 "$tmp/sh_y.npy" | grep -aq "'shape': (2, 6, 13)" &&
  ok "switchhead: y has x's shape" || bad "switchhead: y's shape"
run "run switchhead, one expert, --random --causal --check" 0 "$clattn" run \
  switchhead --random "${sh[@]}" --experts 1 --topk 1 --causal --check \
  --save-inputs "$tmp/sh1"
[ ! -e "$tmp/sh1/w_s.npy" ] && ok "switchhead: one expert saves no w_s" ||
  bad "switchhead: one expert saved a w_s"
run "run switchhead --in, one expert without w_s" 0 "$clattn" run \
  switchhead --in "$tmp/sh1" --out "$tmp/sh1_y.npy" --heads 2 --topk 1 \
  --check
has "switchhead: one expert check passes" "check switchhead: .*PASS"
run "run switchhead --topk above the experts" 2 "$clattn" run switchhead \
  --in "$tmp/sh1" --out "$tmp/sh1_y.npy" --heads 2 --topk 2
has "switchhead: the refusal names the experts" "exceeds the 1 experts" \
  "$tmp/err"
npy_f32 "$tmp/sh/w_d.npy" 13 5
run "run switchhead with a w_d of the wrong shape" 2 "$clattn" run \
  switchhead --in "$tmp/sh" --out "$tmp/sh_y.npy" --heads 2 --topk 2
has "switchhead: the bad w_d is named" "w_d.npy: shape \[13, 5\]" "$tmp/err"
run "run switchhead --random without --topk" 2 "$clattn" run switchhead \
  --random "${sh[@]}" --experts 3

# clattn run attention and run decode with the attention options (issue
# 35): each option alone and all combined, in both layouts and f16, checked
# against the reference; then bad input, each refused with exit 2 and a
# message naming it, and nothing written to --out.
npy_make() { # npy_make FILE DESCR SHAPE EXPR: EXPR (Python) of flat index i
  python3 - "$@" <<'PY'
import math, struct, sys
path, descr, shape, expr = sys.argv[1:5]
dims = eval(shape)
n = math.prod(dims)
env = {"math": math, "inf": math.inf, "nan": math.nan}
vals = [eval(expr, dict(env, i=i)) for i in range(n)]
head = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
head += " " * (63 - (10 + len(head)) % 64) + "\n"
fmt = {"<f4": "f", "<f2": "e", "<i4": "i"}[descr]
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
    f.write(struct.pack("<%d%s" % (n, fmt), *vals))
PY
}
# q, k, v of small values in DIR (shapes that divide no tile): attention
# b=2 n=7 m=11 hq=4 hkv=2 k=16 v=8 with kv_lens 11 and 9; decode the same
# heads over a cache of capacity 13 with lengths 13 and 6, BSHD and BHSD
qkv() { # qkv DIR DESCR QSHAPE KSHAPE VSHAPE LENS
  mkdir -p "$1"
  npy_make "$1/q.npy" "$2" "$3" "math.sin(0.7 * i + 1)"
  npy_make "$1/k.npy" "$2" "$4" "math.cos(1.3 * i)"
  npy_make "$1/v.npy" "$2" "$5" "math.sin(2.1 * i + 0.5)"
  npy_make "$1/kv_lens.npy" "<i4" "(2,)" "$6[i]"
}
qkv "$tmp/att" "<f4" "(2, 7, 4, 16)" "(2, 11, 2, 16)" "(2, 11, 2, 8)" "[11, 9]"
qkv "$tmp/att16" "<f2" "(2, 7, 4, 16)" "(2, 11, 2, 16)" "(2, 11, 2, 8)" \
  "[11, 9]"
qkv "$tmp/dec" "<f4" "(2, 1, 4, 16)" "(2, 13, 2, 16)" "(2, 13, 2, 8)" "[13, 6]"
qkv "$tmp/dec_bhsd" "<f4" "(2, 1, 4, 16)" "(2, 2, 13, 16)" "(2, 2, 13, 8)" \
  "[13, 6]"
qkv "$tmp/dec16" "<f2" "(2, 1, 4, 16)" "(2, 13, 2, 16)" "(2, 13, 2, 8)" \
  "[13, 6]"
o=$tmp/opt
mkdir -p "$o"
npy_make "$o/slopes.npy" "<f4" "(4,)" "[0.5, 0.25, 0.125, 0.0625][i]"
npy_make "$o/sinks.npy" "<f4" "(4,)" "[0.5, -inf, 1.5, -1.0][i]" # -inf: none
all=(--window 4 --softcap 2 --alibi "$o/slopes.npy" --sinks "$o/sinks.npy"
  --scale 0.3)
for c in "--causal --window 3" "--window 4" "--softcap 1.5" \
  "--alibi $o/slopes.npy" "--sinks $o/sinks.npy"; do
  # shellcheck disable=SC2086
  run "run attention $c --check" 0 "$clattn" run attention --in "$tmp/att" \
    --out "$tmp/att_o.npy" $c --check
  has "run attention $c: check passes" "check attention: .*PASS"
done
run "run attention, every option, --causal --check" 0 "$clattn" run \
  attention --in "$tmp/att" --out "$tmp/att_o.npy" --causal "${all[@]}" \
  --check
has "run attention, every option: check passes" "check attention: .*PASS"
has "run attention: the timing line names the options" \
  "causal window=4 softcap=2 alibi sinks on" "$tmp/err"
run "run attention, every option, --layout bhsd --check" 0 "$clattn" run \
  attention --in "$tmp/att" --out "$tmp/att_o.npy" --causal "${all[@]}" \
  --layout bhsd --check
has "run attention, every option, bhsd: check passes" "check attention: .*PASS"
run "run attention f16, every option, --check" 0 "$clattn" run attention \
  --in "$tmp/att16" --out "$tmp/att_o.npy" --causal "${all[@]}" --check
has "run attention f16, every option: check passes" "check attention: .*PASS"
run "run decode --check (no option)" 0 "$clattn" run decode --in "$tmp/dec" \
  --out "$tmp/dec_o.npy" --check
has "run decode: check passes" "check decode: .*PASS"
head -c 80 "$tmp/dec_o.npy" | grep -aq "'descr': '<f4'.*'shape': (2, 1, 4, 8)" &&
  ok "run decode: o is f32 [batch, 1, heads, head_dim_v]" ||
  bad "run decode: o's header: $(head -c 80 "$tmp/dec_o.npy")"
for c in "--window 4" "--softcap 1.5" "--alibi $o/slopes.npy" \
  "--sinks $o/sinks.npy"; do
  # shellcheck disable=SC2086
  run "run decode $c --check" 0 "$clattn" run decode --in "$tmp/dec" \
    --out "$tmp/dec_o.npy" $c --check
  has "run decode $c: check passes" "check decode: .*PASS"
done
run "run decode, every option, --causal --check" 0 "$clattn" run decode \
  --in "$tmp/dec" --out "$tmp/dec_o.npy" --causal "${all[@]}" --check
has "run decode, every option: check passes" "check decode: .*PASS"
run "run decode, every option, a BHSD cache --check" 0 "$clattn" run decode \
  --in "$tmp/dec_bhsd" --out "$tmp/dec_o.npy" --layout bhsd "${all[@]}" \
  --check
has "run decode, every option, bhsd: check passes" "check decode: .*PASS"
run "run decode f16, every option, --check" 0 "$clattn" run decode \
  --in "$tmp/dec16" --out "$tmp/dec_o.npy" "${all[@]}" --check
has "run decode f16, every option: check passes" "check decode: .*PASS"
head -c 80 "$tmp/dec_o.npy" | grep -aq "'descr': '<f2'" &&
  ok "run decode f16: o is f16" || bad "run decode f16: o's dtype"
run "run decode --random --window --check (GQA, BHSD)" 0 "$clattn" run \
  decode --random --batch 3 --kv-seq 37 --heads 6 --kv-heads 2 \
  --head-dim 24 --head-dim-v 8 --layout bhsd --window 5 --check \
  --save-inputs "$tmp/dec_rand"
has "run decode --random: check passes" "check decode: .*PASS"
run "run decode --in the saved inputs --check" 0 "$clattn" run decode \
  --in "$tmp/dec_rand" --out "$tmp/dec_o.npy" --layout bhsd --window 5 \
  --check
has "run decode, the saved inputs: check passes" "check decode: .*PASS"

# Bad input: exit 2, one message naming the problem, no --out written.
refused() { # refused DESCRIPTION PATTERN CMD...: exit 2, PATTERN on stderr
  local what=$1 pattern=$2
  shift 2
  rm -f "$tmp/bad_o.npy"
  run "$what" 2 "$@"
  has "$what: named" "$pattern" "$tmp/err"
  [ ! -e "$tmp/bad_o.npy" ] && ok "$what: nothing written" ||
    bad "$what: --out written"
}
npy_make "$o/slopes3.npy" "<f4" "(3,)" "0.5"
npy_make "$o/slopes16.npy" "<f2" "(4,)" "0.5"
npy_make "$o/slopes_nan.npy" "<f4" "(4,)" "[0.5, nan, 0.1, 0.1][i]"
npy_make "$o/slopes_inf.npy" "<f4" "(4,)" "[0.5, 0.1, 0.1, -inf][i]"
npy_make "$o/sinks22.npy" "<f4" "(2, 2)" "0.5"
npy_make "$o/sinks_i4.npy" "<i4" "(4,)" "1"
npy_make "$o/sinks_nan.npy" "<f4" "(4,)" "[0.5, 1.0, nan, 0.0][i]"
npy_make "$o/sinks_inf.npy" "<f4" "(4,)" "[inf, 1.0, 0.0, 0.0][i]"
for k in attention decode; do
  d=$tmp/att
  [ "$k" = decode ] && d=$tmp/dec
  r=("$clattn" run "$k" --in "$d" --out "$tmp/bad_o.npy")
  refused "run $k --window 0" "--window: expected an integer >= 1" \
    "${r[@]}" --window 0
  refused "run $k --window -3" "--window: expected an integer >= 1" \
    "${r[@]}" --window -3
  for c in 0 -2 nan inf; do
    refused "run $k --softcap $c" "--softcap: expected a finite number > 0" \
      "${r[@]}" --softcap "$c"
  done
  refused "run $k --alibi of 3 slopes for 4 heads" \
    "--alibi $o/slopes3.npy: shape \[3\] is not \[4\]" "${r[@]}" \
    --alibi "$o/slopes3.npy"
  refused "run $k --alibi float16" \
    "--alibi $o/slopes16.npy: dtype '<f2' is not float32" "${r[@]}" \
    --alibi "$o/slopes16.npy"
  refused "run $k --alibi, a missing file" "$o/none.npy" "${r[@]}" \
    --alibi "$o/none.npy"
  refused "run $k --sinks [2, 2]" \
    "--sinks $o/sinks22.npy: shape \[2, 2\] is not \[4\]" "${r[@]}" \
    --sinks "$o/sinks22.npy"
  refused "run $k --sinks int32" \
    "--sinks $o/sinks_i4.npy: dtype '<i4' is not float32" "${r[@]}" \
    --sinks "$o/sinks_i4.npy"
  # the values are the library's to check (CLATTN_ERR_INVALID_ARG)
  refused "run $k, a NaN slope" "alibi_slopes\[1\] (nan) is not finite" \
    "${r[@]}" --alibi "$o/slopes_nan.npy"
  refused "run $k, a -inf slope" "alibi_slopes\[3\] (-inf) is not finite" \
    "${r[@]}" --alibi "$o/slopes_inf.npy"
  refused "run $k, a NaN sink" "sinks\[2\] (nan) must be finite" \
    "${r[@]}" --sinks "$o/sinks_nan.npy"
  refused "run $k, a +inf sink" "sinks\[0\] (inf) must be finite" \
    "${r[@]}" --sinks "$o/sinks_inf.npy"
done
refused "run gqa --window (a layer run takes no options)" \
  "unknown option '--window'" "$clattn" run gqa --random --seq 4 \
  --d-model 16 --heads 2 --head-dim 8 --window 2 --out "$tmp/bad_o.npy"
# q, k, v and kv_lens that disagree
bad_in() { # bad_in FROM TO FILE DESCR SHAPE [EXPR]: FROM's inputs, FILE
  rm -rf "$2"   # replaced by one of SHAPE filled with EXPR (default 0.25)
  cp -r "$1" "$2"
  npy_make "$2/$3" "$4" "$5" "${6:-0.25}"
}
bad_in "$tmp/dec" "$tmp/bad" q.npy "<f4" "(2, 2, 4, 16)"
refused "run decode, q of two queries a sequence" \
  "q.npy: shape \[2, 2, 4, 16\]: a decode step has one query" "$clattn" run \
  decode --in "$tmp/bad" --out "$tmp/bad_o.npy"
bad_in "$tmp/dec" "$tmp/bad" k.npy "<f4" "(3, 13, 2, 16)"
refused "run decode, k of another batch" \
  "k.npy: shape \[3, 13, 2, 16\] does not match q.npy" "$clattn" run decode \
  --in "$tmp/bad" --out "$tmp/bad_o.npy"
bad_in "$tmp/dec" "$tmp/bad" v.npy "<f4" "(2, 12, 2, 8)"
refused "run decode, v of another capacity" \
  "v.npy: shape \[2, 12, 2, 8\] does not match k.npy" "$clattn" run decode \
  --in "$tmp/bad" --out "$tmp/bad_o.npy"
refused "run decode, a BSHD cache read as BHSD" \
  "not a multiple of the 13 KV heads" "$clattn" run decode --in "$tmp/dec" \
  --out "$tmp/bad_o.npy" --layout bhsd
bad_in "$tmp/dec" "$tmp/bad" v.npy "<f2" "(2, 13, 2, 8)"
refused "run decode, v of another dtype" \
  "v.npy: dtype '<f2' differs from q.npy's '<f4'" "$clattn" run decode \
  --in "$tmp/bad" --out "$tmp/bad_o.npy"
bad_in "$tmp/dec" "$tmp/bad" kv_lens.npy "<i4" "(3,)" 5
refused "run decode, kv_lens of 3 for a batch of 2" \
  "kv_lens.npy: expected '<i4' \[2\]" "$clattn" run decode --in "$tmp/bad" \
  --out "$tmp/bad_o.npy"
bad_in "$tmp/dec" "$tmp/bad" kv_lens.npy "<f4" "(2,)"
refused "run decode, float kv_lens" "kv_lens.npy: expected '<i4' \[2\]" \
  "$clattn" run decode --in "$tmp/bad" --out "$tmp/bad_o.npy"
rm "$tmp/bad/kv_lens.npy"
refused "run decode without kv_lens.npy" "kv_lens.npy" "$clattn" run decode \
  --in "$tmp/bad" --out "$tmp/bad_o.npy"
bad_in "$tmp/att" "$tmp/bad" kv_lens.npy "<i4" "(1,)" 5
refused "run attention, kv_lens of 1 for a batch of 2" \
  "kv_lens.npy: expected '<i4' \[2\]" "$clattn" run attention \
  --in "$tmp/bad" --out "$tmp/bad_o.npy"
bad_in "$tmp/att" "$tmp/bad" k.npy "<f4" "(2, 11, 2, 12)"
refused "run attention, k of another head dim" \
  "k.npy: shape \[2, 11, 2, 12\] does not match q.npy" "$clattn" run \
  attention --in "$tmp/bad" --out "$tmp/bad_o.npy"
refused "run decode --random without --kv-seq" "--random needs --kv-seq" \
  "$clattn" run decode --random --heads 2 --head-dim 8 --out "$tmp/bad_o.npy"
refused "run decode --seq (one query a sequence)" "unknown option '--seq'" \
  "$clattn" run decode --random --kv-seq 8 --heads 2 --head-dim 8 --seq 2 \
  --out "$tmp/bad_o.npy"

# clattn run decode --paged and run attention --varlen (issue 36): inputs
# made with --random --save-inputs (lengths around the page size, page
# sizes 1, 8, 16 and 256, an int8 cache, a chunked prefill), run from the
# saved files with --check and read back; then bad input, each refused with
# exit 2 and a message naming the file, an existing --out kept byte for
# byte.  The files are saved before any kernel runs, so the refusals the
# command checks itself pass whatever the families do.
p=$tmp/paged
mkdir -p "$p"
hdr() { # hdr DESCRIPTION FILE PATTERN: the .npy header of FILE matches
  head -c 128 "$2" | grep -aq -- "$3" && ok "$1" ||
    bad "$1: header $(head -c 80 "$2" | tr -d '\0')"
}
pg=(--heads 4 --kv-heads 2 --head-dim 16 --head-dim-v 8)
run "run decode --paged --random --save-inputs --check" 0 "$clattn" run \
  decode --paged --random --kv-lens 1,15,16,17,40 "${pg[@]}" --page-size 16 \
  --save-inputs "$p/f32" --check
has "run decode --paged --random: check passes" "check paged: .*PASS"
for f in q k_cache v_cache block_table kv_lens; do
  [ -e "$p/f32/$f.npy" ] && ok "--paged --save-inputs wrote $f.npy" ||
    bad "--paged --save-inputs did not write $f.npy"
done
hdr "--paged: k_cache [pages, page_size, kv_heads, dk]" "$p/f32/k_cache.npy" \
  "'<f4'.*'shape': (13, 16, 2, 16)"
hdr "--paged: block_table [batch, max_blocks]" "$p/f32/block_table.npy" \
  "'<i4'.*'shape': (5, 3)"
run "run decode --paged --in (the saved inputs) --check" 0 "$clattn" run \
  decode --paged --in "$p/f32" --out "$p/o.npy" --check
has "run decode --paged --in: check passes" "check paged: .*PASS"
hdr "run decode --paged: o is f32 [batch, n_q, heads, dv]" "$p/o.npy" \
  "'<f4'.*'shape': (5, 1, 4, 8)"
run "run decode --paged, every option, --causal --check" 0 "$clattn" run \
  decode --paged --in "$p/f32" --out "$p/o.npy" --causal "${all[@]}" --check
has "run decode --paged, every option: check passes" "check paged: .*PASS"
run "run decode --paged int8 f16, a chunk of 3 (prefill), --save-inputs" 0 \
  "$clattn" run decode --paged --random --kv-lens 2,7,8,9,30 "${pg[@]}" \
  --page-size 8 --new 3 --cache-dtype int8 --dtype f16 --causal \
  --save-inputs "$p/i8" --check
has "run decode --paged int8: check passes" "check paged: .*PASS"
hdr "--paged int8: k_cache is '|i1'" "$p/i8/k_cache.npy" "'|i1'"
hdr "--paged int8: k_scale [pages, page_size, kv_heads]" "$p/i8/k_scale.npy" \
  "'<f4'.*'shape': (14, 8, 2)"
run "run decode --paged --in (int8, the saved inputs) --check" 0 "$clattn" \
  run decode --paged --in "$p/i8" --out "$p/o.npy" --causal --window 5 --check
has "run decode --paged --in int8: check passes" "check paged: .*PASS"
hdr "run decode --paged int8: o is f16 [batch, 3, heads, dv]" "$p/o.npy" \
  "'<f2'.*'shape': (5, 3, 4, 8)"
for ps in 1 256; do
  run "run decode --paged --page-size $ps --check" 0 "$clattn" run decode \
    --paged --random --kv-lens 1,3,17 "${pg[@]}" --page-size "$ps" --new 2 \
    --check
  has "run decode --paged --page-size $ps: check passes" "check paged: .*PASS"
done
run "run attention --varlen --random --save-inputs --check" 0 "$clattn" run \
  attention --varlen --random --kv-lens 1,7,16,3 --seq 5 "${pg[@]}" --causal \
  --save-inputs "$p/vl" --check
has "run attention --varlen --random: check passes" "check varlen: .*PASS"
hdr "--varlen: cu_seqlens_q [batch + 1]" "$p/vl/cu_seqlens_q.npy" \
  "'<i4'.*'shape': (5,)"
run "run attention --varlen --in (the saved inputs), every option --check" 0 \
  "$clattn" run attention --varlen --in "$p/vl" --out "$p/o.npy" --causal \
  "${all[@]}" --check
has "run attention --varlen --in: check passes" "check varlen: .*PASS"
hdr "run attention --varlen: o is [total_q, heads, dv]" "$p/o.npy" \
  "'<f4'.*'shape': (14, 4, 8)"
run "run attention --varlen f16, not causal --check" 0 "$clattn" run \
  attention --varlen --random --batch 3 --seq 9 --kv-seq 20 "${pg[@]}" \
  --dtype f16 --check
has "run attention --varlen f16: check passes" "check varlen: .*PASS"

run "run --help (paged and varlen)" 0 "$clattn" run --help
has "run --help describes run decode --paged" "^run decode --paged: "
has "run --help describes run attention --varlen" "^run attention --varlen: "

kept() { # kept DESCRIPTION PATTERN CMD...: exit 2 naming it, --out kept
  local what=$1 pattern=$2
  shift 2
  printf 'an earlier output\n' >"$p/kept.npy"
  cp "$p/kept.npy" "$p/kept.orig"
  run "$what" 2 "$@" --out "$p/kept.npy"
  has "$what: named" "$pattern" "$tmp/err"
  cmp -s "$p/kept.npy" "$p/kept.orig" && ok "$what: --out kept" ||
    bad "$what: --out changed"
}
rp=("$clattn" run decode --paged --in "$p/bad")
rv=("$clattn" run attention --varlen --in "$p/bad")
# the shapes between the files, checked by the command
bad_in "$p/f32" "$p/bad" k_cache.npy "<f4" "(13, 12, 2, 16)"
npy_make "$p/bad/v_cache.npy" "<f4" "(13, 12, 2, 8)" 0.25
kept "run decode --paged, a page of 12 positions" \
  "k_cache.npy: page size 12 .* is not a power of two in 1 .. 256" "${rp[@]}"
bad_in "$p/f32" "$p/bad" k_cache.npy "<f4" "(1, 512, 2, 16)"
npy_make "$p/bad/v_cache.npy" "<f4" "(1, 512, 2, 8)" 0.25
kept "run decode --paged, a page of 512 positions" \
  "k_cache.npy: page size 512 .* is not a power of two in 1 .. 256" "${rp[@]}"
bad_in "$p/i8" "$p/bad" q.npy "<f2" "(5, 3, 4, 16)"
rm "$p/bad/k_scale.npy"
kept "run decode --paged, an int8 cache without k_scale.npy" \
  "k_scale.npy: missing: an int8 cache" "${rp[@]}"
bad_in "$p/i8" "$p/bad" v_scale.npy "<f4" "(13, 8, 4)"
kept "run decode --paged, v_scale of another kv heads" \
  "v_scale.npy: expected '<f4' \[num_blocks, page_size, kv_heads\]" \
  "${rp[@]}"
bad_in "$p/f32" "$p/bad" k_scale.npy "<f4" "(13, 16, 2)"
kept "run decode --paged, scales for a float cache" \
  "k_scale.npy: scales go with an int8 cache" "${rp[@]}"
bad_in "$p/f32" "$p/bad" v_cache.npy "<f2" "(13, 16, 2, 8)"
kept "run decode --paged, v_cache of another dtype" \
  "v_cache.npy: dtype '<f2' differs from k_cache.npy's '<f4'" "${rp[@]}"
bad_in "$p/f32" "$p/bad" k_cache.npy "<i4" "(13, 16, 2, 16)" 1
kept "run decode --paged, an int32 k_cache" \
  "k_cache.npy: dtype '<i4' is neither q.npy's '<f4' nor int8" "${rp[@]}"
bad_in "$p/f32" "$p/bad" v_cache.npy "<f4" "(12, 16, 2, 8)"
kept "run decode --paged, v_cache of another pool" \
  "v_cache.npy: shape \[12, 16, 2, 8\] does not match k_cache.npy" "${rp[@]}"
bad_in "$p/f32" "$p/bad" k_cache.npy "<f4" "(13, 16, 2, 12)"
kept "run decode --paged, k_cache of another head dim" \
  "k_cache.npy: shape \[13, 16, 2, 12\] does not match q.npy" "${rp[@]}"
bad_in "$p/f32" "$p/bad" block_table.npy "<i4" "(4, 3)" 0
kept "run decode --paged, a block table of 4 rows for a batch of 5" \
  "block_table.npy: expected '<i4' \[batch of q.npy, max_blocks\]" "${rp[@]}"
bad_in "$p/f32" "$p/bad" kv_lens.npy "<f4" "(5,)"
kept "run decode --paged, float lengths" \
  "kv_lens.npy: expected '<i4' \[batch of q.npy\]" "${rp[@]}"
rm "$p/bad/block_table.npy"
kept "run decode --paged without block_table.npy" "block_table.npy" "${rp[@]}"
bad_in "$p/vl" "$p/bad" cu_seqlens_q.npy "<i4" "(5,)" "[0, 1, 6, 11, 13][i]"
kept "run attention --varlen, cu_seqlens_q short of total_q" \
  "cu_seqlens_q.npy: ends at 13, but q.npy holds 14 rows" "${rv[@]}"
bad_in "$p/vl" "$p/bad" cu_seqlens_k.npy "<i4" "(4,)" "[0, 1, 8, 27][i]"
kept "run attention --varlen, cu_seqlens_k of another batch" \
  "cu_seqlens_k.npy: expected '<i4' \[batch + 1 of cu_seqlens_q\]" "${rv[@]}"
bad_in "$p/vl" "$p/bad" k.npy "<f4" "(27, 2, 12)"
kept "run attention --varlen, k of another head dim" \
  "k.npy: shape \[27, 2, 12\] does not match q.npy" "${rv[@]}"
bad_in "$p/vl" "$p/bad" v.npy "<f2" "(27, 2, 8)"
kept "run attention --varlen, v of another dtype" \
  "v.npy: dtype '<f2' differs from q.npy's '<f4'" "${rv[@]}"
bad_in "$p/vl" "$p/bad" q.npy "<f4" "(1, 14, 4, 16)"
kept "run attention --varlen, a batched q" "q.npy: expected rank 3" \
  "${rv[@]}"
kept "run decode --paged --random --page-size 12" \
  "--page-size 12: not a power of two" "$clattn" run decode --paged \
  --random --kv-seq 8 "${pg[@]}" --page-size 12
kept "run decode --page-size without --paged" "only valid with --paged" \
  "$clattn" run decode --random --kv-seq 8 "${pg[@]}" --page-size 16
kept "run decode --paged --layout" "--layout does not apply to --paged" \
  "${rp[@]}" --layout bhsd
kept "run attention --varlen --kv-lens, a bad list" \
  "--kv-lens '3,x': expected lengths >= 0" "$clattn" run attention \
  --varlen --random --kv-lens 3,x "${pg[@]}"
# the tables' contents, checked by the library (CLATTN_ERR_SHAPE naming the
# entry); lengths 1,15,16,17,40 of page 16 need 1,1,1,2,3 of 13 pages
table() { # table ROWS: block_table.npy [5, 3] of p/bad
  npy_make "$p/bad/block_table.npy" "<i4" "(5, 3)" "$1[i]"
}
bad_in "$p/f32" "$p/bad" kv_lens.npy "<i4" "(5,)" "[1, 15, 16, 17, 40][i]"
table "[0, 99, -7, 1, 1 << 30, -1, 2, 12, 12, 3, 4, -1, 5, 6, 7]"
run "run decode --paged, garbage past the lengths is never read" 0 \
  "${rp[@]}" --out "$p/o.npy" --check
has "run decode --paged, garbage past the lengths: check passes" \
  "check paged: .*PASS"
table "[0, -1, -1, 1, -1, -1, 2, -1, -1, 3, 4, -1, 5, 6, 13]"
kept "run decode --paged, a page outside the pool" \
  "block_table\[4\]\[2\] = 13" "${rp[@]}"
table "[0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 5, 6, 7]"
kept "run decode --paged, a negative page a length needs" \
  "block_table\[3\]\[1\] = -1" "${rp[@]}"
table "[0, -1, -1, 1, -1, -1, 2, -1, -1, 3, 4, -1, 5, 6, 7]"
npy_make "$p/bad/kv_lens.npy" "<i4" "(5,)" "[1, 15, 16, 17, 49][i]"
kept "run decode --paged, a length over the table's capacity" \
  "kv_lens\[4\] = 49" "${rp[@]}"
npy_make "$p/bad/kv_lens.npy" "<i4" "(5,)" "[-1, 15, 16, 17, 40][i]"
kept "run decode --paged, a negative length" "kv_lens\[0\] = -1" "${rp[@]}"
bad_in "$p/vl" "$p/bad" cu_seqlens_q.npy "<i4" "(5,)" "[0, 1, 6, 4, 14][i]"
kept "run attention --varlen, cu_seqlens_q decreasing" "cu_seqlens_q\[3\]" \
  "${rv[@]}"
bad_in "$p/vl" "$p/bad" cu_seqlens_k.npy "<i4" "(5,)" "[1, 1, 8, 24, 27][i]"
kept "run attention --varlen, cu_seqlens_k not starting at 0" \
  "cu_seqlens_k\[0\]" "${rv[@]}"

# the options' shape keys reach the families' parse_shape: explain, as
# flags and as shape text, shows them in the shape class
run "explain prefill --window (flag)" 0 "$clattn" explain prefill --seq 64 \
  --heads 2 --head-dim 32 --causal --window 64
has "explain: the window in the shape class" "^shape class  prefill .* c1 w64$"
run "explain prefill \"... window=64\" (shape text)" 0 "$clattn" explain \
  prefill "batch=1 seq=64 heads=2 head-dim=32 causal=1 window=64"
has "explain, shape text: the window in the shape class" \
  "^shape class  prefill .* c1 w64$"
run "explain prefill, every option as shape text" 0 "$clattn" explain \
  prefill "seq=64 heads=2 head-dim=32 window=100 softcap=30 alibi=1 sinks=1"
has "explain: every option in the shape class" " w128 sc alibi sinks$"
run "explain decode \"... window=16\" (shape text)" 0 "$clattn" explain \
  decode "kv-seq=500 heads=2 head-dim=32 window=16"
has "explain decode: the window in the shape class" "^shape class  decode .* w16"
run "explain, shape text and flags" 2 "$clattn" explain prefill \
  "seq=64 heads=2 head-dim=32" --heads 2
has "explain: text and flags refused" "as text or as flags, not both" \
  "$tmp/err"
run "explain prefill window=-1 (shape text)" 2 "$clattn" explain prefill \
  "seq=64 heads=2 head-dim=32 window=-1"

# Kernel compiler warnings stay off stderr (the library builds with -w)
# unless CLATTN_KERNEL_WARNINGS=1: PoCL on AVX2 prints "N warnings
# generated." for the float16 calling convention.  Cold caches both times.
for w in 1 0; do
  rm -rf "$tmp/pocl$w" "$tmp/kc$w"
  POCL_CACHE_DIR="$tmp/pocl$w" CLATTN_CACHE_DIR="$tmp/kc$w" \
    CLATTN_KERNEL_WARNINGS=$w "$clattn" run attention --random --batch 1 \
    --seq 5 --heads 2 --head-dim 16 --check >/dev/null 2>"$tmp/warn$w"
done
if grep -q 'warning' "$tmp/warn1"; then
  if grep -q 'warning' "$tmp/warn0"; then
    bad "kernel warnings reach stderr without CLATTN_KERNEL_WARNINGS=1"
    cat "$tmp/warn0"
  else ok "kernel warnings only with CLATTN_KERNEL_WARNINGS=1"; fi
else
  echo "note: this device's compiler printed no warnings; -w not exercised"
fi

# usage texts are printed as they are (no printf): no "%%" may show
for c in probe model tune db devices run; do
  "$clattn" "$c" --help >"$tmp/out" 2>&1
  if grep -q '%%' "$tmp/out"; then bad "$c --help shows '%%'"
  else ok "$c --help has no stray '%%'"; fi
done

# The command line (docs/CLI.md): --help on every command and subcommand
# (stdout, exit 0), one line on stderr and exit 2 for a usage error.
families=$("$clattn" families | awk '/^[a-z]/ { print $1 }')
# the layer kinds, as the library's registry lists them (clattn layers):
# `clattn run` has a runner for each and its usage names them all
kinds=$("$clattn" layers | awk '/^[a-z]/ { print $1 }')
[ "$(echo "$kinds" | wc -w)" -ge 6 ] && ok "clattn layers lists the kinds" ||
  bad "clattn layers lists $(echo "$kinds" | wc -w) kinds"
run "run --help" 0 "$clattn" run --help
has "run --help lists the registry's kinds" \
  "clattn run attention|decode|$(echo $kinds | tr ' ' '|')\$"
cmds=("" devices families layers run probe model tune explain db "db path"
  "db list" "db export" "db import" "model layer" "model mqa"
  "model switchhead" "model profiles" "model check" "tune all" "tune gemm")
for k in attention decode $kinds; do
  cmds+=("run $k")
done
for k in optimised efficient super; do cmds+=("model $k"); done
for f in attention $families; do
  cmds+=("model $f" "tune $f" "explain $f")
done
helps=0 unknowns=0
for c in "${cmds[@]}"; do
  # shellcheck disable=SC2086
  "$clattn" $c --help >"$tmp/out" 2>"$tmp/err"; st=$?
  if [ "$st" = 0 ] && grep -q "^usage: clattn" "$tmp/out" &&
     [ ! -s "$tmp/err" ]; then helps=$((helps + 1))
  else bad "'clattn $c --help': exit $st"; cat "$tmp/out" "$tmp/err"; fi
  [ -z "$c" ] && continue
  # shellcheck disable=SC2086
  "$clattn" $c --no-such-option >"$tmp/out" 2>"$tmp/err"; st=$?
  if [ "$st" = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
     grep -q "no-such-option.*; see 'clattn .* --help'" "$tmp/err" &&
     [ ! -s "$tmp/out" ]; then unknowns=$((unknowns + 1))
  else bad "'clattn $c --no-such-option': exit $st"; cat "$tmp/err"; fi
done
ok "--help exits 0 with a usage on $helps commands"
# every example `clattn families` prints runs as printed
examples=0
while read -r line; do
  # shellcheck disable=SC2086
  if "$clattn" ${line#clattn } >"$tmp/out" 2>"$tmp/err"; then
    examples=$((examples + 1))
  else bad "families' example '$line' failed"; cat "$tmp/err"; fi
done < <("$clattn" families | sed -n 's/^ *e\.g\. //p')
[ "$examples" -gt 5 ] && ok "the $examples examples of 'clattn families' run" ||
  bad "only $examples examples of 'clattn families' ran"
ok "an unknown option: exit 2, one line naming it, on $unknowns commands"
run "clattn -h" 0 "$clattn" -h
run "run attention -h" 0 "$clattn" run attention -h
has "run attention -h lists --kv-seq" "--kv-seq M"
for k in attention decode; do
  run "run $k --help" 0 "$clattn" run "$k" --help
  for f in "--causal" "--scale S" "--window W" "--softcap C" \
    "--alibi SLOPES.npy" "--sinks SINKS.npy"; do
    has "run $k --help lists $f" "^  $f "
  done
done
run "clattn --help" 0 "$clattn" --help
has "clattn --help names run decode" "clattn run attention|decode"
has "clattn --help describes run decode" "^run decode: "
for f in "--window W (W >= 1" "--softcap C (C > 0" "--alibi SLOPES.npy" \
  "--sinks SINKS.npy"; do
  has "clattn --help describes $f" "$f"
done
run "model attention --help (not a value)" 0 "$clattn" model attention \
  --help
has "model attention --help lists the family's keys" "--kv-layout V"
# --x=v and --x v are one option
m=(--profile a100 --seq 64 --heads 2 --head-dim 32)
"$clattn" model attention "${m[@]}" --budget 1s >/dev/null 2>"$tmp/err"
grep -q "unknown option '--budget'" "$tmp/err" &&
  ok "model refuses the tuner's --budget" || bad "model took --budget"
"$clattn" model attention "${m[@]}" >"$tmp/a" 2>&1
"$clattn" model attention --profile=a100 --seq=64 --heads=2 \
  --head-dim=32 >"$tmp/b" 2>&1
cmp -s "$tmp/a" "$tmp/b" && ok "--x=v is --x v" ||
  { bad "--x=v differs from --x v"; diff "$tmp/a" "$tmp/b"; }
run "tune --budget=1s accepted" 2 "$clattn" tune prefill --budget=1s \
  --strategy=bogus
has "tune --strategy=bogus: the values" \
  "expected auto|exhaustive|random|anneal|model" "$tmp/err"
# a repeated option is an error naming it (never last-wins)
run "repeated --seq" 2 "$clattn" model attention "${m[@]}" --seq=8
has "repeated --seq is named" "clattn model attention: --seq given twice" \
  "$tmp/err"
run "repeated --causal" 2 "$clattn" run attention --random --seq 4 \
  --heads 2 --head-dim 8 --causal --causal
has "repeated --causal is named" "--causal given twice" "$tmp/err"
# options a subcommand does not read are refused, not ignored
run "model mqa --json" 2 "$clattn" model mqa --json
has "model mqa --json names --json" "unknown option '--json'" "$tmp/err"
run "model decode --seq (decode has no seq)" 2 "$clattn" model decode \
  --profile a100 --kv-seq 64 --heads 2 --head-dim 32 --seq 8
run "model layer --dtype (the layer is f32)" 2 "$clattn" model layer \
  --profile a100 --seq 1 --d-model 64 --heads 2 --head-dim 32 --dtype f16
run "tune prefill --rows (explain's)" 2 "$clattn" tune prefill "${m[@]:2}" \
  --rows 4
run "tune decode --dtype f16 alone (no silent standard shapes)" 2 "$clattn" \
  tune decode --dtype f16 --db "$tmp/none.db"
has "tune: the missing shape is named" "SHAPE needs --heads" "$tmp/err"
run "a misspelt option (getopt's prefix)" 2 "$clattn" model switchhead \
  --profile h100 --expert 4
has "the misspelling is named" "unknown option '--expert'" "$tmp/err"
run "model super-values --max-len (the family's key)" 0 "$clattn" model \
  super-values --profile h100 --seq 64 --heads 2 --head-dim 32 --max-len 64
# a shape the library's validation refuses is a usage error (2)
run "tune projection, a bad shape" 2 "$clattn" tune projection --m 0 \
  --n 4 --k 4
run "tune decode, heads not a multiple" 2 "$clattn" tune decode \
  --kv-seq 64 --heads 6 --kv-heads 4 --head-dim 32 --max 1
run "run talking-heads, head counts the layer refuses" 2 "$clattn" run \
  talking-heads --random --seq 4 --d-model 16 --heads 2 --heads-k 2000 \
  --heads-v 2 --head-dim 4
has "the refused shape says why" "head counts must be" "$tmp/err"
# --out is checked before anything runs: exit 1 (a file problem), at once
t0=$(date +%s%N)
run "--out in a missing directory" 1 "$clattn" run attention --random \
  --seq 4096 --heads 16 --head-dim 64 --check --out /nonexistent/dir/y.npy
t1=$(date +%s%N)
has "--out: the directory is named" "directory /nonexistent/dir does not" \
  "$tmp/err"
grep -q "[0-9] ms\|check attention" "$tmp/out" "$tmp/err" &&
  bad "--out: the attention ran before the check" ||
  ok "--out: nothing computed"
[ $(((t1 - t0) / 1000000)) -lt 1000 ] && ok "--out: refused in under 1 s" ||
  bad "--out: refused after $(((t1 - t0) / 1000000)) ms"
run "--out a directory" 1 "$clattn" run attention --random --seq 4 \
  --heads 2 --head-dim 8 --out "$tmp"
# The progress line: drawn on a terminal only, within its width, no
# parameter cut (script(1) gives the tuner a terminal of 60 columns)
if command -v script >/dev/null; then
  script -qec "stty cols 60 rows 20; '$clattn' tune prefill --seq 64 \
    --heads 2 --head-dim 32 --max 4 --strategy random --fresh \
    --db '$tmp/tty.db'" /dev/null >"$tmp/tty" 2>&1
  tr '\r' '\n' <"$tmp/tty" | sed 's/\x1b\[K//g' >"$tmp/lines"
  if grep -q "^prefill .*: [0-9]*/[0-9]* (space" "$tmp/lines"; then
    ok "progress: drawn on a terminal"
    awk '/\(space/ && length($0) > 59 { n++ } END { exit n > 0 }' \
      "$tmp/lines" && ok "progress: within 59 columns" ||
      bad "progress: wider than the terminal: $(awk 'length($0) > 59' "$tmp/lines")"
    grep "(space" "$tmp/lines" | grep -Eq '[a-z]=( |,|$)' &&
      bad "progress: a parameter cut: $(grep '(space' "$tmp/lines")" ||
      ok "progress: no key=value cut"
  else bad "progress: no line on a terminal"; cat "$tmp/tty"; fi
else
  echo "note: no script(1); the progress line is checked by test_cli_options"
fi

# clattn bench: small shapes into the temporary database (its profile is
# the probe's above), the rows stored under the run's name; bad input: 2
run "bench prefill" 0 "$clattn" bench prefill --seq 40 --kv-seq 53 \
  --heads 4 --kv-heads 2 --head-dim 16 --causal --repeats 2 --run cli-run
has "bench prints the unfused baseline's ratio" "unfused [0-9.]*x"
has "bench prints the roofline fraction" "% roof"
run "bench decode as shape text, JSON" 0 "$clattn" bench decode \
  "batch=1 kv-seq=300 heads=4 kv-heads=1 head-dim=32" --repeats 2 \
  --run cli-run --json
json "bench decode --json"
has "bench JSON has the copy row" '"impl": "copy"'
n=$(python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(c.execute("SELECT count(*) FROM bench WHERE run = ?",
                ("cli-run",)).fetchone()[0])' "$CLATTN_DB" 2>&1)
[ "$n" = 5 ] && ok "bench stored 5 rows (clattn, unfused, copy; clattn, copy)" ||
  bad "bench stored '$n' rows, want 5"
# --db's tuning rows pick the parameters (the tuned prefill class above),
# whatever $CLATTN_DB says
main_db=$CLATTN_DB
CLATTN_DB=$tmp/elsewhere.db run "bench with --db" 0 "$clattn" bench prefill \
  "${shape[@]}" --db "$main_db" --no-baselines --repeats 1 --no-store --json
has "bench takes --db's tuned row" '"params_source": "tuned"'
run "bench --no-store" 0 "$clattn" bench decode \
  "batch=1 kv-seq=64 heads=2 head-dim=16" --repeats 1 --no-store \
  --no-baselines --run cli-nostore
n=$(python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(c.execute("SELECT count(*) FROM bench WHERE run = ?",
                ("cli-nostore",)).fetchone()[0])' "$CLATTN_DB" 2>&1)
[ "$n" = 0 ] && ok "bench --no-store stored nothing" ||
  bad "bench --no-store stored '$n' rows"
run "bench of an unknown family" 2 "$clattn" bench nosuch
has "bench names the unknown family" "unknown 'nosuch'" "$tmp/err"
run "bench of a bad shape" 2 "$clattn" bench decode "batch=1 bogus=2"
has "bench names the bad key" "bogus" "$tmp/err"
run "bench all with a shape flag" 2 "$clattn" bench all --heads 3
# db export's formats and filters (tests/t4_check.py: Kernel Tuner's T4
# results schema).
run "db export --format shipped" 0 "$clattn" db export "$tmp/shipped.json" \
  --format shipped
if python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
keys = [(e["fingerprint"], e["kernel"], e["shape_class"]) for e in d["entries"]]
sys.exit(0 if d["clattn_tuning"] == 1 and keys and len(keys) == len(set(keys))
         and all(e["status"] == "ok" for e in d["entries"]) else 1)
' "$tmp/shipped.json"; then ok "db export --format shipped: one ok row per key"
else bad "db export --format shipped: not one ok row per key"; fi
run "shipped export imports" 0 "$clattn" db import "$tmp/shipped.json" \
  --db "$tmp/shipped.db"
run "db export --format t4" 0 "$clattn" db export "$tmp/t4.json" --format t4
run "t4 export passes the schema check" 0 python3 \
  "$(dirname "$0")/t4_check.py" "$tmp/t4.json"
run "db export --kernel prefill" 0 "$clattn" db export - --kernel prefill
python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d["entries"] and all(e["kernel"] == "prefill"
                                   for e in d["entries"]) else 1)
' <"$tmp/out" && ok "db export --kernel filters" ||
  bad "db export --kernel: other kernels or none"
run "db export --device (present)" 0 "$clattn" db export - --device 0 \
  --format t4
json "db export --device --format t4"
run "db export --format bogus" 2 "$clattn" db export - --format bogus
run "db export --device with --all-devices" 2 "$clattn" db export - \
  --device 0 --all-devices
run "db export --class (not its option)" 2 "$clattn" db export - --class x

# clattn report's output file: never one of its databases, a device
# written through (tests/test_report.c checks the formats themselves)
cp "$CLATTN_DB" "$tmp/before.db"
run "report -o its own database" 1 "$clattn" report "$CLATTN_DB" \
  --datasheets none -o "$CLATTN_DB"
has "report names the database as an input" "is an input" "$tmp/err"
cmp -s "$CLATTN_DB" "$tmp/before.db" && ok "report kept the database" ||
  bad "report -o overwrote the database it read"
run "report -o /dev/null" 0 "$clattn" report "$CLATTN_DB" --datasheets none \
  --markdown -o /dev/null
[ -c /dev/null ] && ok "report kept /dev/null a device" ||
  bad "report replaced /dev/null"
"$clattn" report "$CLATTN_DB" --datasheets none --json -o /dev/stdout \
  2>"$tmp/err" | head -n -1 | python3 -m json.tool >/dev/null 2>&1 &&
  ok "report -o /dev/stdout into a pipe is JSON" ||
  bad "report -o /dev/stdout: $(cat "$tmp/err")"
# at most 8 databases: the message says so
dbs=()
for k in 1 2 3 4 5 6 7 8 9; do dbs+=("$CLATTN_DB"); done
run "report of 9 databases" 2 "$clattn" report "${dbs[@]}"
has "report names its limit" "at most 8 databases" "$tmp/err"
# A database is clattn's own (docs/TUNING.md): another application's file
# is refused by db import and by tune, named, and left byte for byte as it
# was (an import once added clattn's tables to it and set its version).
foreign=$tmp/foreign.db
for version in 0 7; do
  rm -f "$foreign"
  python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
c.execute("INSERT INTO notes (text) VALUES (?)", ("mine",))
c.execute("PRAGMA user_version = %d" % int(sys.argv[2]))
c.commit()' "$foreign" "$version"
  sum=$(sha256sum <"$foreign")
  run "db import into another application's file (user_version $version)" 1 \
    "$clattn" db import "$tmp/in.json" --db "$foreign"
  has "db import: not a clattn database, named" \
    "$foreign is not a clattn database" "$tmp/err"
  run "tune on another application's file (user_version $version)" 1 \
    "$clattn" tune prefill "${shape[@]}" --max 1 --db "$foreign"
  has "tune: not a clattn database, named" \
    "$foreign is not a clattn database" "$tmp/err"
  [ "$(sha256sum <"$foreign")" = "$sum" ] &&
    ok "the foreign file is byte for byte as it was (user_version $version)" ||
    bad "the foreign file changed (user_version $version)"
done
# tune --fresh keeps each candidate's better row: every candidate timing
# out (--timeout 1ms) leaves the ok rows as they were; --replace overwrites
fresh_db=$tmp/fresh.db
ok_rows() { # the ok rows: params and time
  python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(" ".join("%s:%r" % r for r in c.execute(
    "SELECT params, median_s FROM tuning WHERE status = ? ORDER BY params",
    ("ok",))))' "$1"
}
run "tune into a new database" 0 "$clattn" tune prefill "${shape[@]}" \
  --max 3 --strategy random --seed 7 --db "$fresh_db"
before=$(ok_rows "$fresh_db")
run "tune --fresh --timeout 1ms" 0 "$clattn" tune prefill "${shape[@]}" \
  --max 3 --strategy random --seed 7 --fresh --timeout 1ms --db "$fresh_db"
has "tune --fresh measured again" "(3 measured now, 0 from the database)"
has "tune --fresh: every candidate timed out" "3 rejected"
after=$(ok_rows "$fresh_db")
[ -n "$before" ] && [ "$after" = "$before" ] &&
  ok "tune --fresh: the ok rows kept" ||
  bad "tune --fresh: ok rows '$before' became '$after'"
run "tune --replace --timeout 1ms" 0 "$clattn" tune prefill "${shape[@]}" \
  --max 3 --strategy random --seed 7 --replace --timeout 1ms --db "$fresh_db"
[ -z "$(ok_rows "$fresh_db")" ] && ok "tune --replace: the rows overwritten" ||
  bad "tune --replace kept ok rows: $(ok_rows "$fresh_db")"
# A read-only filesystem is named as such, not "unable to open database
# file" (a read-only bind mount in a mount namespace of its own)
mkdir -p "$tmp/ro"
unshare -rm sh -c 'mount --bind "$1" "$1" &&
  mount -o remount,bind,ro "$1" || exit 100
  exec "$2" db import "$3" --db "$1/t.db"' sh "$tmp/ro" "$clattn" \
  "$tmp/in.json" >"$tmp/out" 2>"$tmp/err"
st=$?
if [ "$st" = 100 ] || ! unshare -rm true 2>/dev/null; then
  echo "skip: read-only filesystem message (no mount namespace here)"
elif [ "$st" = 1 ] && grep -q "directory $tmp/ro: Read-only file system" \
  "$tmp/err" && ! grep -q "unable to open" "$tmp/err"; then
  ok "db import on a read-only filesystem: named as such"
else
  bad "db import on a read-only filesystem: exit $st"; cat "$tmp/err"
fi

for f in "${failed[@]}"; do echo "failed: ${f:0:200}"; done
echo "cli.sh: $fails failure(s)"
[ "$fails" = 0 ]
