#!/usr/bin/env python3
"""make_cdef.py OUTPUT HEADER -- CC [ARGS...]: the declarations cffi reads
(python/meson.build): HEADER preprocessed by the C compiler with the stub
system headers beside this script, then the public headers' integer
constants (#define CLATTN_... N), which preprocessing consumes and cffi
takes as `#define NAME N` lines."""

import os
import re
import subprocess
import sys


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        sys.exit("usage: make_cdef.py OUTPUT HEADER -- CC [ARGS...]")
    output, header, cc = argv[0], argv[1], argv[3:]
    stubs = os.path.dirname(os.path.abspath(__file__))
    base = cc + ["-nostdinc", "-I", stubs]
    decls = subprocess.run(base + ["-E", "-P", header], check=True,
                           capture_output=True, text=True).stdout
    macros = subprocess.run(base + ["-E", "-dM", header], check=True,
                            capture_output=True, text=True).stdout
    constants = sorted(m.group(0) for m in re.finditer(
        r"^#define CLATTN_[A-Z0-9_]+ -?[0-9]+$", macros, re.MULTILINE))
    with open(output, "w", encoding="utf-8") as f:
        f.write(decls)
        f.write("\n".join(constants) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
