#!/bin/bash
# tests/report_browser.sh BUILD_DIR - `clattn report`'s page as a reader
# sees it: a quick real `clattn probe` and `clattn bench` (one small shape
# of each family kind) into a database of its own, `clattn report` to HTML,
# then headless Chromium renders the page to a PNG and the test fails on
# any console message of the page (the page has no JavaScript, so every
# message is the browser's error or warning: "attribute d: Expected
# number" for a NaN in an SVG path), on a PNG that is not the requested
# size or is blank, and unless every section.device holds exactly one
# svg.roofline that the browser lays out (a non-zero getBBox).  The DOM is
# read from a COPY of the page with a small script and a Content Security
# Policy injected: the script writes the count per section into the DOM
# (--dump-dom), the policy turns any load from outside the page (a
# stylesheet, an image, a font) into a console error.
#
# Before the real page the checks prove themselves on the fixtures in
# tests/data: report_fixture.html passes, and each broken page fails the
# one check meant to catch it (report_bad_svg.html: the console;
# report_empty_chart.html: the DOM count; report_blank.html: the PNG;
# report_external.html: the console, through the policy).
#
# Chromium (Debian package `chromium`, .ci/deps) is required: without it
# the test fails, it does not skip.  $CHROMIUM names another binary.
set -euo pipefail
build=${1:?usage: report_browser.sh BUILD_DIR}
build=$(cd "$build" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
clattn=$build/host/cli/clattn
data=$src/tests/data
width=1280
height=1000

fail() {
  echo "FAIL: $*"
  exit 1
}

chromium=${CHROMIUM:-chromium}
command -v "$chromium" >/dev/null 2>&1 ||
  fail "'$chromium' not found: install the Debian package chromium (.ci/deps)"
[ -x "$clattn" ] || fail "$clattn is not built"
command -v python3 >/dev/null 2>&1 || fail "python3 not found"

tmp=$(mktemp -d)
probe_pid=
trap '[ -z "$probe_pid" ] || kill "$probe_pid" 2>/dev/null; rm -rf "$tmp"' EXIT

# A root container has no user namespaces for Chromium's sandbox.
sandbox=()
[ "$(id -u)" = 0 ] && sandbox=(--no-sandbox)
# --headless=new first; older Chromiums know only --headless.
modes=(--headless=new --headless)
runs=0

# chromium_run OUTFILE LOG ACTION URL: one headless run with a fresh
# profile and verbose logging on LOG, stdout into OUTFILE; tries the
# headless modes in turn until one produces output.
chromium_run() {
  local out=$1 log=$2 action=$3 url=$4 mode
  for mode in "${modes[@]}"; do
    runs=$((runs + 1))
    rm -f "$out.png"
    if timeout 60 "$chromium" "$mode" "${sandbox[@]}" --disable-gpu \
         --user-data-dir="$tmp/profile-$runs" --no-first-run \
         --disable-extensions --disable-background-networking \
         --disable-component-update --hide-scrollbars \
         --force-device-scale-factor=1 --window-size="$width,$height" \
         --enable-logging=stderr --v=1 "$action" "$url" \
         >"$out" 2>"$log"; then
      if { [ "$action" = --dump-dom ] && [ -s "$out" ]; } ||
         { [ "$action" != --dump-dom ] && [ -s "$out.png" ]; }; then
        modes=("$mode") # keep the mode that works
        return 0
      fi
    fi
  done
  echo "chromium produced nothing for $url (modes tried: ${modes[*]});" \
       "the end of its log:"
  tail -n 20 "$log"
  return 1
}

# The console messages of a run: Chromium logs them as INFO:CONSOLE lines.
console_of() {
  grep -a 'CONSOLE' "$1" | sed 's/^\[[^]]*\] *//' || true
}

# check_png FILE: the PNG signature, IHDR of width x height, and not blank
# (some pixels not white, from the decoded scanlines).
check_png() {
  python3 - "$1" "$width" "$height" <<'EOF'
import struct, sys, zlib
path, want_w, want_h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = open(path, 'rb').read()
if data[:8] != b'\x89PNG\r\n\x1a\n':
    sys.exit('not a PNG (signature %r)' % data[:8])
pos, idat, ihdr = 8, b'', None
while pos + 8 <= len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR':
        ihdr = struct.unpack('>IIBBBBB', body)
    elif kind == b'IDAT':
        idat += body
    elif kind == b'IEND':
        break
    pos += 12 + n
if ihdr is None:
    sys.exit('no IHDR chunk')
w, h, depth, ctype, _, _, interlace = ihdr
if (w, h) != (want_w, want_h):
    sys.exit('IHDR size %dx%d, asked for %dx%d' % (w, h, want_w, want_h))
channels = {2: 3, 6: 4}.get(ctype)
if depth != 8 or channels is None or interlace:
    sys.exit('unexpected PNG format: depth %d, colour type %d, interlace %d'
             % (depth, ctype, interlace))
raw = zlib.decompress(idat)
stride = w * channels
if len(raw) != h * (stride + 1):
    sys.exit('decoded %d bytes, expected %d' % (len(raw), h * (stride + 1)))
# Undo the filters row by row; "Up", the most common, adds two rows bytewise
# as big integers (SWAR, no carry across bytes), the others byte by byte.
low7 = int.from_bytes(b'\x7f' * stride, 'big')
high = int.from_bytes(b'\x80' * stride, 'big')
# a pixel is ink (not white) when one of its colour channels is below 240
ink_table = bytes(1 if v < 240 else 0 for v in range(256))
prev = bytes(stride)
inked = 0
for y in range(h):
    f = raw[y * (stride + 1)]
    row = raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
    if f == 0:
        line = row
    elif f == 2:
        a, b = int.from_bytes(row, 'big'), int.from_bytes(prev, 'big')
        line = (((a & low7) + (b & low7)) ^ ((a ^ b) & high)).to_bytes(
            stride, 'big')
    elif f in (1, 3, 4):
        line = bytearray(row)
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            else:
                c = prev[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 255
        line = bytes(line)
    else:
        sys.exit('bad filter type %d on row %d' % (f, y))
    ink = 0
    for k in range(3):  # R, G, B: each channel's 0/1 flags, OR-ed
        ink |= int.from_bytes(line[k::channels].translate(ink_table), 'big')
    inked += bin(ink).count('1')
    prev = line
# report_fixture.html's title, tables and chart ink some 44,000 pixels,
# report_blank.html's one rule across the page some 2,400
if inked < 8000:
    sys.exit('blank: %d of %d pixels are not white' % (inked, w * h))
print('png %dx%d, %d pixels not white' % (w, h, inked))
EOF
}

# A copy of the page with the policy after <head> and the counting
# script before </body>.
instrument() {
  python3 - "$1" "$2" <<'EOF'
import re, sys
page = open(sys.argv[1], encoding='utf-8').read()
csp = ('<meta http-equiv="Content-Security-Policy" content="default-src '
       "'none'; img-src data:; font-src data:; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'\">")
script = '''<script>
(function () {
  var lines = [];
  document.querySelectorAll('section.device').forEach(function (s) {
    var charts = s.querySelectorAll('svg.roofline'), drawn = 0;
    charts.forEach(function (c) {
      var b = c.getBBox();
      if (b.width > 0 && b.height > 0) drawn++;
    });
    lines.push([s.getAttribute('data-kind') || '-',
                s.getAttribute('data-fingerprint') || '-',
                charts.length, drawn].join(' '));
  });
  var pre = document.createElement('pre');
  pre.id = 'report-browser-count';
  pre.textContent = 'sections ' + lines.length + '\\n' + lines.join('\\n');
  document.body.appendChild(pre);
})();
</script>'''
m = re.search(r'<head[^>]*>', page, re.I)
if not m:
    sys.exit('the page has no <head>')
page = page[:m.end()] + csp + page[m.end():]
end = page.lower().rfind('</body>')
if end < 0:
    sys.exit('the page has no </body>')
page = page[:end] + script + page[end:]
open(sys.argv[2], 'w', encoding='utf-8').write(page)
EOF
}

# check_dom DUMP: one line per section, "kind fingerprint charts drawn";
# at least one measured section, each of a known kind, a measured one with
# its device's fingerprint (a datasheet GPU has none), exactly one chart,
# and that chart drawn.
check_dom() {
  python3 - "$1" <<'EOF'
import html, re, sys
dom = open(sys.argv[1], encoding='utf-8', errors='replace').read()
m = re.search(r'<pre id="report-browser-count">(.*?)</pre>', dom, re.S)
if not m:
    sys.exit('the counting script left no result in the DOM')
lines = html.unescape(m.group(1)).split('\n')
n = int(lines[0].split()[1])
rows = [l.split(' ') for l in lines[1:] if l]
if n == 0 or len(rows) != n:
    sys.exit('no section.device in the page')
bad = []
for kind, fp, charts, drawn in rows:
    if kind not in ('measured', 'datasheet'):
        bad.append('section %s: data-kind %r' % (fp, kind))
    if kind == 'measured' and fp == '-':
        bad.append('a measured section without a fingerprint')
    if charts != '1' or drawn != '1':
        bad.append('section %s (%s): %s svg.roofline, %s drawn (want 1, 1)'
                   % (fp, kind, charts, drawn))
if not any(r[0] == 'measured' for r in rows):
    bad.append('no measured section')
if bad:
    sys.exit('; '.join(bad))
print('dom: %d sections, one drawn roofline each' % n)
EOF
}

# check_page PAGE NAME: every check on PAGE; prints what failed and
# writes the failed checks' names (console png dom) into $tmp/NAME.failed.
check_page() {
  local page=$1 name=$2 failed="" msg
  local dir=$tmp/$name
  mkdir -p "$dir"
  : >"$tmp/$name.failed"
  if grep -qi '<script' "$page"; then
    echo "$name: the page holds a <script> (the report has no JavaScript)"
    failed="$failed script"
  fi
  chromium_run "$dir/shot" "$dir/shot.log" --screenshot="$dir/shot.png" \
    "file://$page" || fail "$name: chromium could not render the page"
  instrument "$page" "$dir/copy.html" || fail "$name: cannot instrument"
  chromium_run "$dir/dom.html" "$dir/dom.log" --dump-dom \
    "file://$dir/copy.html" || fail "$name: chromium could not dump the DOM"
  msg=$( { console_of "$dir/shot.log"; console_of "$dir/dom.log"; } )
  if [ -n "$msg" ]; then
    echo "$name: console messages:"
    printf '%s\n' "$msg" | sed 's/^/  /'
    failed="$failed console"
  fi
  if ! msg=$(check_png "$dir/shot.png" 2>&1); then
    echo "$name: PNG: $msg"
    failed="$failed png"
  fi
  if ! msg=$(check_dom "$dir/dom.html" 2>&1); then
    echo "$name: DOM: $msg"
    failed="$failed dom"
  fi
  echo "$failed" >"$tmp/$name.failed"
  [ -z "$failed" ]
}

# expect_caught PAGE CHECK: the broken fixture must fail CHECK, and only it.
expect_caught() {
  local name; name=$(basename "$1" .html)
  if check_page "$1" "$name" >"$tmp/$name.out"; then
    cat "$tmp/$name.out"
    fail "$name: every check passed on a broken page (want: $2)"
  fi
  local got; got=$(tr -s ' ' <"$tmp/$name.failed" | sed 's/^ //')
  [ "$got" = "$2" ] || {
    cat "$tmp/$name.out"
    fail "$name: failed checks '$got', want exactly '$2'"
  }
  echo "ok: $name is caught by the $2 check"
}

start=$SECONDS
# The probe (some 30 s) runs while the fixtures are checked: its figures
# only have to be plausible here, for the roofs the report draws.
db=$tmp/report.db
"$clattn" probe --db "$db" >"$tmp/probe.out" 2>&1 &
probe_pid=$!
echo "== the checks on the fixtures"
check_page "$data/report_fixture.html" fixture ||
  fail "the good fixture page fails"
echo "ok: report_fixture.html passes"
expect_caught "$data/report_bad_svg.html" console
expect_caught "$data/report_external.html" console
expect_caught "$data/report_empty_chart.html" dom
expect_caught "$data/report_blank.html" png

echo "== a real report: probe, bench, report"
run() {
  echo "\$ clattn $*"
  local rc=0
  "$clattn" "$@" >"$tmp/cmd.out" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    cat "$tmp/cmd.out"
    fail "clattn $* (exit $rc)"
  fi
}
echo "\$ clattn probe --db $db (begun with the fixtures)"
probe_rc=0
wait "$probe_pid" || probe_rc=$?
probe_pid=
if [ "$probe_rc" != 0 ]; then
  cat "$tmp/probe.out"
  fail "clattn probe --db $db (exit $probe_rc)"
fi
# one small shape of each family kind (prefill, decode, append)
run bench prefill --seq 64 --heads 2 --head-dim 32 --causal --db "$db" --quiet
run bench decode --kv-seq 256 --heads 4 --kv-heads 1 --head-dim 32 \
  --db "$db" --quiet
run bench append --kv-seq 256 --heads 4 --kv-heads 1 --head-dim 32 --new 4 \
  --db "$db" --quiet
run report "$db" -o "$tmp/report.html"
[ -s "$tmp/report.html" ] || fail "clattn report wrote no page"
check_page "$tmp/report.html" report || fail "the report fails in Chromium"
echo "ok: clattn report's page ($((SECONDS - start)) s, $runs chromium runs)"
