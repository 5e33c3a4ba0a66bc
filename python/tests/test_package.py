"""The installed package: its version, the library it loaded, and cffi's
view of the public structs against the C compiler's."""

import importlib.metadata
import os
import re
import shutil
import subprocess

import pytest

import clattn
from clattn import ffi

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADERS = [os.path.join(SOURCE, "host", "include", h) for h in ("clattn.h", "clattn_tools.h")]
PACKAGE_DIR = os.path.dirname(os.path.realpath(clattn.__file__))

# The versioned structs the calls pass most, which the headers' scan below
# must find (so an empty scan cannot pass).
EXPECTED_STRUCTS = {"clattn_attn_desc", "clattn_decode_desc", "clattn_ctx_opts",
                    "clattn_events", "clattn_params", "clattn_choice",
                    "clattn_tune_opts", "clattn_th_desc", "clattn_layer_desc"}


def _project_version():
    with open(os.path.join(SOURCE, "meson.build"), encoding="utf-8") as f:
        found = re.search(r"^project\(.*?version\s*:\s*'([^']+)'", f.read(), re.S | re.M)
    assert found, "meson.build: no project version"
    return found.group(1)


def _public_structs():
    """Every struct with a body that the public headers typedef."""
    names = []
    for path in HEADERS:
        with open(path, encoding="utf-8") as f:
            names += re.findall(r"^typedef struct (clattn_\w+) \{", f.read(), re.M)
    return sorted(set(names))


def test_imported_from_outside_the_checkout():
    # tests/python.sh runs pytest outside the source tree so that the
    # installed package, not python/clattn, is what this file tests.
    assert PACKAGE_DIR != os.path.realpath(os.path.join(SOURCE, "python", "clattn"))
    assert os.path.isfile(os.path.join(PACKAGE_DIR, "libclattn.so"))
    assert os.path.isfile(os.path.join(PACKAGE_DIR, "_cdef.h"))


def test_version_is_the_projects():
    want = _project_version()
    assert clattn.__version__ == want
    assert importlib.metadata.version("clattn") == want


def test_loaded_library_is_the_packages():
    if os.environ.get("CLATTN_PYTHON_LIBRARY"):
        pytest.skip("$CLATTN_PYTHON_LIBRARY loads another library than the package's")
    if not os.path.exists("/proc/self/maps"):
        pytest.skip("no /proc/self/maps to read the loaded libraries from")
    with open("/proc/self/maps", encoding="utf-8") as f:
        loaded = {line.split(None, 5)[-1].strip() for line in f if "libclattn" in line}
    assert loaded == {os.path.join(PACKAGE_DIR, "libclattn.so")}


def test_struct_sizes_agree_with_the_compiler(tmp_path):
    compiler = os.environ.get("CC", "cc")
    if shutil.which(compiler) is None:
        pytest.skip("no C compiler (%s) to compare the structs' sizes with" % compiler)
    structs = _public_structs()
    assert EXPECTED_STRUCTS <= set(structs), "headers' scan missed %s" % (
        EXPECTED_STRUCTS - set(structs))
    program = tmp_path / "sizes.c"
    program.write_text(
        "#define CL_TARGET_OPENCL_VERSION 120\n"
        "#include <stdio.h>\n#include <stdalign.h>\n"
        "#include \"clattn.h\"\n#include \"clattn_tools.h\"\n"
        "int main(void) {\n"
        + "".join('  printf("%s %%zu %%zu\\n", sizeof(%s), alignof(%s));\n' % (s, s, s)
                  for s in structs)
        + "  return 0;\n}\n")
    exe = tmp_path / "sizes"
    subprocess.run([compiler, "-std=c11", "-I", os.path.join(SOURCE, "host", "include"),
                    str(program), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    compiled = {name: (int(size), int(align))
                for name, size, align in (line.split() for line in out.splitlines())}
    assert sorted(compiled) == structs
    differ = {s: (compiled[s], (ffi.sizeof(s), ffi.alignof(s)))
              for s in structs if compiled[s] != (ffi.sizeof(s), ffi.alignof(s))}
    assert not differ, "(sizeof, alignof) C against cffi: %s" % differ


def test_header_constants_reach_the_package():
    # make_cdef.py carries each integer #define of the public headers into
    # the declarations; compare with the headers' text itself.
    found = {}
    for header in ("clattn.h", "clattn_tools.h"):
        with open(os.path.join(SOURCE, "host", "include", header), encoding="utf-8") as f:
            found.update(re.findall(r"^#define (CLATTN_[A-Z0-9_]+) (-?[0-9]+)$", f.read(), re.M))
    assert "CLATTN_MAX_HEAD_DIM" in found and "CLATTN_TH_MAX_HEADS" in found
    for name, value in found.items():
        assert getattr(clattn.lib, name) == int(value), name
