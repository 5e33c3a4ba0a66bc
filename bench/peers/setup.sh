#!/bin/sh
# setup.sh - install the peer (PyTorch, CPU) that clattn-bench's
# talking-heads section compares against, into a venv under the build
# directory, so the system's Python stays as it is.
#
#   bench/peers/setup.sh [BUILD_DIR]      (default: build)
#
# The CPU wheel index is tried first (no CUDA libraries to fetch); where it
# cannot be reached, PyPI's wheel, which runs on the CPU as well.  Where
# neither can be reached the script says so and exits 1; the bench then
# prints "peer: torch unavailable".
set -eu
build=${1:-build}
venv="$build/bench/peers-venv"
py=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ]; then
  mkdir -p "$build/bench"
  "$py" -m venv "$venv"
fi
if "$venv/bin/python" -c 'import torch' 2>/dev/null; then
  echo "torch already in $venv"
  exit 0
fi
cpu_index=https://download.pytorch.org/whl/cpu
if "$venv/bin/python" -m pip index versions torch --index-url "$cpu_index" \
    >/dev/null 2>&1; then
  "$venv/bin/python" -m pip install torch numpy --index-url "$cpu_index" \
      --extra-index-url https://pypi.org/simple
elif "$venv/bin/python" -m pip index versions torch >/dev/null 2>&1; then
  echo "setup.sh: $cpu_index unreachable; installing PyPI's torch" >&2
  "$venv/bin/python" -m pip install torch numpy
else
  echo "setup.sh: no package index reachable: peer: torch unavailable" >&2
  exit 1
fi
"$venv/bin/python" -c 'import torch; print("torch", torch.__version__, "in '"$venv"'")'
