#!/usr/bin/env python3
"""tests/summary.py TESTLOG.json [--must-run NAME,...] - the suite's count
from meson's log (BUILD/meson-logs/testlog.json), for tests/run.sh.

Prints a line per failed test ("failed: NAME (RESULT)"), per skipped test
with the reason its script gave ("skipped: NAME (REASON)": the last line
of its output that starts with "skipped: ", else its last line), per
test skipped inside a passing executable: Criterion's (cr_skip_test; read
from the TAP report each Criterion executable writes on its stdout,
tests/meson.build) and pytest's in the python tier (tests/python.sh
prints a TAP line per skip from pytest's JUnit report), then the last
line "N passed, N failed, N skipped": passed counts meson's Ok and
Expected Fail, failed its Fail, Timeout, Unexpected Pass, Error and
Interrupt, skipped its Skipped.

--must-run names the tests that may not be skipped (CI's tiers): each one
skipped, or absent from the log, counts as failed, with the reason.

Exit status 0 when nothing failed, 1 otherwise (and when the log is
missing or unreadable).
"""
import argparse
import json
import re
import sys

PASSED = {"OK", "EXPECTEDFAIL"}
FAILED = {"FAIL", "TIMEOUT", "UNEXPECTEDPASS", "ERROR", "INTERRUPT"}
SKIPPED = {"SKIP"}
# "ok [N] - NAME # SKIP REASON"; a pytest NAME may hold spaces (its
# parameters' ids).
TAP_SKIP = re.compile(r"^ok\b[^-\n]*-\s*(.+?)\s+# SKIP\b\s*(.*)$", re.M)


def skip_reason(test):
    out = (test.get("stdout") or "") + "\n" + (test.get("stderr") or "")
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    marked = [l[len("skipped:"):].strip() for l in lines
              if l.startswith("skipped:")]
    if marked:
        return marked[-1]
    return lines[-1] if lines else "no reason given"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--must-run", default="")
    args = ap.parse_args()
    must = [n for n in args.must_run.split(",") if n]
    try:
        with open(args.log, encoding="utf-8", errors="replace") as f:
            tests = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        print("summary: cannot read meson's log %s: %s" % (args.log, e))
        print("0 passed, 1 failed, 0 skipped")
        return 1
    passed = failed = skipped = 0
    seen = set()
    for t in tests:
        name, result = t.get("name", "?"), t.get("result", "?")
        seen.add(name)
        if result in PASSED:
            passed += 1
            for case, why in TAP_SKIP.findall(t.get("stdout") or ""):
                print("skipped inside %s: %s (%s)"
                      % (name, case, why.strip() or "no reason given"))
        elif result in SKIPPED:
            why = skip_reason(t)
            if name in must:
                failed += 1
                print("failed: %s was skipped (%s), and CI must run it"
                      % (name, why))
            else:
                skipped += 1
                print("skipped: %s (%s)" % (name, why))
        else:
            failed += 1
            print("failed: %s (%s)" % (name, result))
    for name in must:
        if name not in seen:
            failed += 1
            print("failed: %s did not run, and CI must run it" % name)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
