#!/bin/bash
# tests/python.sh SOURCE_DIR BUILD_DIR - the Python package clattn as a user
# gets it: a venv over Debian's interpreter and its packages
# (BUILD/python-venv, --system-site-packages), the checkout installed into
# it with docs/PYTHON.md's one pip line, then pytest on python/tests from
# outside the source tree, so that the installed package (its own
# libclattn.so beside the bindings) is what the tests import.
#
# Needs Debian's python3-numpy, python3-pyopencl, python3-cffi,
# python3-pytest, python3-mesonpy and python3-venv (.ci/deps); without one
# it prints "skipped: ..." naming them and exits 77 (meson's skip; CI
# counts the skip of this tier as a failure, tests/run.sh).
#
# meson-python builds in BUILD/python-build, so a rerun recompiles only what
# changed.  pytest writes its JUnit report to BUILD/python-junit.xml; each
# test it skipped is printed last as a TAP line ("ok - ID # SKIP REASON"),
# which tests/summary.py names as it names Criterion's skips.  Exits with
# pytest's status.
set -u
src=${1:?usage: python.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: python.sh SOURCE_DIR BUILD_DIR}
src=$(cd "$src" && pwd)
build=$(cd "$build" && pwd)
python=/usr/bin/python3
venv=$build/python-venv
pybuild=$build/python-build
junit=$build/python-junit.xml

# Debian's interpreter: the pyenv or other python3 first on PATH may lack
# the packages.  ensurepip is what python3-venv adds to Debian's Python.
if [ ! -x "$python" ]; then
  echo "skipped: $python not found (Debian: python3)"
  exit 77
fi
missing=$("$python" - <<'EOF'
import importlib.util
debian = {"numpy": "python3-numpy", "pyopencl": "python3-pyopencl",
          "cffi": "python3-cffi", "pytest": "python3-pytest",
          "mesonpy": "python3-mesonpy", "ensurepip": "python3-venv"}
print(" ".join(pkg for mod, pkg in debian.items()
               if importlib.util.find_spec(mod) is None))
EOF
)
if [ -n "$missing" ]; then
  echo "skipped: $python lacks the Debian packages $missing (.ci/deps)"
  exit 77
fi

# The caches and settings of the other tiers (tests/meson.build's test_env)
# when run alone; meson test sets them.
export CLATTN_CACHE_DIR=${CLATTN_CACHE_DIR:-$build/tests/clattn-cache}
export CLATTN_DB=${CLATTN_DB:-$build/tests/no-such-tuning.db}
export CLATTN_PARAMS=${CLATTN_PARAMS-}
export CLATTN_SHIPPED=${CLATTN_SHIPPED:-0}
# The package's own library, not a developer's override (clattn/_lib.py).
unset CLATTN_PYTHON_LIBRARY
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

if [ ! -x "$venv/bin/python" ]; then
  echo "== venv $venv [${SECONDS} s]"
  "$python" -m venv --system-site-packages "$venv" || exit 1
fi
# meson-python 0.12 passes --reconfigure whenever its native file in the
# source tree names this interpreter already, and a build directory that
# was never configured refuses that; without the file it configures anew.
if [ ! -e "$pybuild/meson-private/coredata.dat" ]; then
  rm -f "$src/.mesonpy-native-file.ini"
fi
echo "== pip install $src [${SECONDS} s]"
"$venv/bin/pip" install --no-build-isolation --no-deps \
  --config-settings=builddir="$pybuild" "$src" || exit 1

# From outside the source tree: python -m puts the working directory first
# on sys.path, and the checkout's python/clattn has no library beside it.
cd "$build" || exit 1
echo "== the installed package [${SECONDS} s]"
"$venv/bin/python" - "$venv" <<'EOF' || exit 1
import os, sys
import clattn
venv = os.path.realpath(sys.argv[1])
here = os.path.dirname(os.path.realpath(clattn.__file__))
print("clattn", clattn.__version__, "from", clattn.__file__)
libs = {line.split(None, 5)[-1].strip() for line in open("/proc/self/maps")
        if "libclattn" in line}
print("libclattn loaded:", ", ".join(sorted(libs)) or "none")
if not here.startswith(venv + os.sep):
    sys.exit("python.sh: clattn imported from %s, not from the venv %s" % (here, venv))
if libs != {os.path.join(here, "libclattn.so")}:
    sys.exit("python.sh: expected only %s/libclattn.so loaded" % here)
EOF

echo "== pytest [${SECONDS} s]"
rm -f "$junit"
# No .pytest_cache in the checkout (pytest puts it at the rootdir).
"$venv/bin/python" -m pytest -rs -p no:cacheprovider --durations=5 \
  --junitxml="$junit" "$src/python/tests"
status=$?
echo "== done [${SECONDS} s]"
# Each skipped test as a TAP line for tests/summary.py (pytest's -rs
# summary above groups skips by place, not by test).
if [ -f "$junit" ]; then
  "$python" - "$junit" <<'EOF'
import sys
import xml.etree.ElementTree as ET
for case in ET.parse(sys.argv[1]).iter("testcase"):
    for skip in case.findall("skipped"):
        name = "%s::%s" % (case.get("classname", "?"), case.get("name", "?"))
        why = " ".join((skip.get("message") or "no reason given").split())
        if skip.get("type") == "pytest.xfail":
            why = "expected to fail: " + why
        print("ok - %s # SKIP %s" % (name, why))
EOF
fi
exit "$status"
