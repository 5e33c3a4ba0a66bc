#!/usr/bin/env python3
"""tests/t4_check.py FILE - check a `clattn db export --format t4` file
against Kernel Tuner's T4 results schema 1.0.0, without the jsonschema
module: the schema's types, its required keys and its enum, as written in
kernel_tuner/schema/T4/1.0.0/results-schema.json
(https://github.com/KernelTuner/kernel_tuner, Apache License 2.0; see
tests/data/t4-results-schema.md).  Exit 0 when valid, else 1 with every
problem printed."""
import json
import re
import sys

INVALIDITY = {"timeout", "compile", "runtime", "correctness", "constraints",
              "correct"}
REQUIRED = ("configuration", "times", "invalidity", "correctness")


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check(doc):
    bad = []
    if not isinstance(doc, dict):
        return ["the document is not an object"]
    v = doc.get("schema_version")
    if not isinstance(v, str) or not re.search(r"^[0-9]{1,}.[0-9]{1,}.[0-9]{1,}$", v):
        bad.append("schema_version: not a major.minor.patch string: %r" % (v,))
    if "metadata" in doc and not isinstance(doc["metadata"], dict):
        bad.append("metadata is not an object")
    results = doc.get("results")
    if not isinstance(results, list):
        return bad + ["results is not an array"]
    for i, r in enumerate(results):
        at = "results[%d]" % i
        if not isinstance(r, dict):
            bad.append(at + ": not an object")
            continue
        for k in REQUIRED:
            if k not in r:
                bad.append("%s: lacks required %s" % (at, k))
        if "timestamp" in r and not isinstance(r["timestamp"], str):
            bad.append(at + ".timestamp: not a string")
        if "configuration" in r and not isinstance(r["configuration"], dict):
            bad.append(at + ".configuration: not an object")
        if "objectives" in r and not isinstance(r["objectives"], list):
            bad.append(at + ".objectives: not an array")
        t = r.get("times")
        if t is not None:
            if not isinstance(t, dict):
                bad.append(at + ".times: not an object")
            else:
                for k in ("compilation_time", "framework", "search_algorithm",
                          "validation"):
                    if k in t and not is_num(t[k]):
                        bad.append("%s.times.%s: not a number" % (at, k))
                if "runtimes" in t and not isinstance(t["runtimes"], list):
                    bad.append(at + ".times.runtimes: not an array")
        if "invalidity" in r and r["invalidity"] not in INVALIDITY:
            bad.append("%s.invalidity: %r not in the enum" % (at, r["invalidity"]))
        if "correctness" in r and not is_num(r["correctness"]):
            bad.append(at + ".correctness: not a number")
        m = r.get("measurements")
        if m is not None:
            if not isinstance(m, list):
                bad.append(at + ".measurements: not an array")
                continue
            for j, x in enumerate(m):
                mat = "%s.measurements[%d]" % (at, j)
                if not isinstance(x, dict):
                    bad.append(mat + ": not an object")
                    continue
                if "name" in x and not isinstance(x["name"], str):
                    bad.append(mat + ".name: not a string")
                if "unit" in x and not isinstance(x["unit"], str):
                    bad.append(mat + ".unit: not a string")
                if "value" in x and not (is_num(x["value"]) or
                                         isinstance(x["value"], (str, list))):
                    bad.append(mat + ".value: not a number, string or array")
    return bad


def main():
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    bad = check(doc)
    for b in bad:
        print("t4_check: " + b)
    if not bad:
        print("t4_check: %d results valid" % len(doc["results"]))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
