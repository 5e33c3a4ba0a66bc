#!/bin/bash
# tests/packaging.sh SOURCE_DIR BUILD_DIR - what a distribution packaging
# clattn relies on: the shared library's versioned SONAME (and an
# application linked through pkg-config recording it), the pkg-config file,
# a public header that leaves the OpenCL target version to the application,
# the LICENSE file, and a library-only build (-Dtests=disabled
# -Dbench=disabled) that needs neither Criterion nor OpenMP and does not
# turn warnings into errors.  Compiles only; needs no device.
set -u
src=${1:?usage: packaging.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: packaging.sh SOURCE_DIR BUILD_DIR}
src=$(cd "$src" && pwd)
build=$(cd "$build" && pwd)
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok:   $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# ------------------------------------------------------------- installed
# The build installed as a package would be (DESTDIR), then used from there.
dest="$tmp/dest"
if meson install -C "$build" --no-rebuild --destdir "$dest" >"$tmp/install.log" 2>&1
then ok "meson install --destdir"
else bad "meson install --destdir failed"; tail -5 "$tmp/install.log"; fi
version=$(meson introspect --projectinfo "$build" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
lib=$(find "$dest" -name libclattn.so | head -1)
libdir=$(dirname "${lib:-/nonexistent/x}")
soname=$(readelf -d "$lib" 2>/dev/null |
  sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [ "$soname" = libclattn.so.1 ]; then ok "SONAME is libclattn.so.1"
else bad "SONAME of the installed libclattn.so is '$soname', want libclattn.so.1"; fi
if [ -f "$libdir/libclattn.so.$version" ] &&
  [ "$(readlink "$libdir/libclattn.so.1")" = "libclattn.so.$version" ] &&
  [ "$(readlink "$libdir/libclattn.so")" = libclattn.so.1 ]
then ok "installed libclattn.so -> libclattn.so.1 -> libclattn.so.$version"
else bad "no installed libclattn.so -> .so.1 -> .so.$version chain"
  ls -l "$libdir" | grep libclattn; fi
for f in include/clattn.h share/doc/clattn/LICENSE; do
  if [ -n "$(find "$dest" -path "*/$f")" ]; then ok "installed $f"
  else bad "$f not installed"; fi
done

# ------------------------------------------------------------- pkg-config
pc=$(find "$dest" -name clattn.pc | head -1)
if [ -n "$pc" ] && pkg-config --validate "$pc"; then ok "clattn.pc is valid"
else bad "no valid clattn.pc installed"; pc=/dev/null; fi
pcfield() { sed -n "s/^$1: *//p" "$pc"; }
[ "$(pcfield Version)" = "$version" ] && ok "pkg-config Version $version" ||
  bad "pkg-config Version '$(pcfield Version)', want $version"
[ "$(pcfield Libs)" = '-L${libdir} -lclattn' ] && ok "pkg-config Libs" ||
  bad "pkg-config Libs: '$(pcfield Libs)'"
[ "$(pcfield Requires)" = OpenCL ] && ok "pkg-config Requires OpenCL" ||
  bad "pkg-config Requires: '$(pcfield Requires)', want OpenCL (clattn.h includes CL/cl.h)"
[ "$(pcfield Requires.private)" = "clblast, sqlite3" ] &&
  ok "pkg-config Requires.private clblast, sqlite3" ||
  bad "pkg-config Requires.private: '$(pcfield Requires.private)'"
[ "$(pcfield Cflags)" = '-I${includedir}' ] && ok "pkg-config Cflags" ||
  bad "pkg-config Cflags: '$(pcfield Cflags)'"
# the .pc's prefix, moved to where DESTDIR put it
prefix=$(pkg-config --variable=prefix "$pc")
pcflags() { PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config \
  --define-variable=prefix="$dest$prefix" "$@" clattn; }
static=$(pcflags --static --libs)
case "$static" in *-lclattn*-lclblast*-lsqlite3*) ok "pkg-config --static --libs: $static" ;;
  *) bad "pkg-config --static --libs lacks clattn, clblast or sqlite3: $static" ;; esac

# The README's example, compiled and linked through pkg-config against the
# installed files: the application records the versioned SONAME.
cat >"$tmp/app.c" <<'EOF'
#include <clattn.h>
#include <stdio.h>
int main(void) {
  clattn_ctx *ctx = NULL;
  printf("%s %s\n", clattn_version(), clattn_status_str(CLATTN_OK));
  clattn_ctx_destroy(ctx);
  return 0;
}
EOF
if flags=$(pcflags --cflags --libs) &&
  $cc -std=c11 -Wall -Wextra -Werror -DCL_TARGET_OPENCL_VERSION=300 \
    "$tmp/app.c" -o "$tmp/app" $flags 2>"$tmp/err"; then
  needed=$(readelf -d "$tmp/app" | sed -n 's/.*(NEEDED).*\[\(libclattn.*\)\].*/\1/p')
  if [ "$needed" = libclattn.so.1 ]; then ok "an application records libclattn.so.1"
  else bad "an application records '$needed', want libclattn.so.1"; fi
  if out=$(LD_LIBRARY_PATH="$libdir" "$tmp/app") &&
    [ "$out" = "$version success" ]; then ok "and runs: $out"
  else bad "the application printed '$out'"; fi
else
  bad "an application does not build with pkg-config's flags: $flags"
  cat "$tmp/err"
fi

# ------------------------------------------------------------- the header
# clattn.h first, then the application's own OpenCL (2.0 and later) calls:
# the header must leave CL_TARGET_OPENCL_VERSION to the application.
cl_cflags=$(pkg-config --cflags OpenCL)
compile() { # compile NAME FLAGS... < source: 0 when $hcc compiles it cleanly
  local name=$1
  shift
  cat >"$tmp/$name.c"
  $hcc -std=c11 -Wall -Wextra -Wpedantic -Werror -I"$src/host/include" \
    $cl_cflags "$@" -c "$tmp/$name.c" -o "$tmp/$name.o" 2>"$tmp/$name.err"
}
queue_app='#include <clattn.h>
#include <CL/cl.h>
cl_command_queue make_queue(cl_context c, cl_device_id d) {
  cl_queue_properties props[] = {CL_QUEUE_PROPERTIES,
                                 CL_QUEUE_PROFILING_ENABLE, 0};
  cl_int err = CL_SUCCESS;
  return clCreateCommandQueueWithProperties(c, d, props, &err);
}
size_t desc_size(void) { return sizeof(clattn_attn_desc); }'
compilers=$cc
command -v clang >/dev/null && compilers="$compilers clang"
for hcc in $compilers; do
  for v in 200 300; do
    if compile "queue_cmdline_$v" -DCL_TARGET_OPENCL_VERSION=$v <<<"$queue_app"
    then ok "$hcc: clattn.h first, -DCL_TARGET_OPENCL_VERSION=$v: 2.0 API declared"
    else bad "$hcc: clattn.h first, -DCL_TARGET_OPENCL_VERSION=$v"
      cat "$tmp/queue_cmdline_$v.err"; fi
    if compile "queue_define_$v" <<EOF
#define CL_TARGET_OPENCL_VERSION $v
$queue_app
EOF
    then ok "$hcc: #define CL_TARGET_OPENCL_VERSION $v, clattn.h first: 2.0 API declared"
    else bad "$hcc: #define CL_TARGET_OPENCL_VERSION $v, clattn.h first"
      cat "$tmp/queue_define_$v.err"; fi
  done
  # The application names its version after clattn.h: no redefinition.
  if compile queue_after <<EOF
#include <clattn.h>
#define CL_TARGET_OPENCL_VERSION 300
$queue_app
EOF
  then ok "$hcc: CL_TARGET_OPENCL_VERSION defined after clattn.h: no conflict"
  else bad "$hcc: CL_TARGET_OPENCL_VERSION defined after clattn.h"
    cat "$tmp/queue_after.err"; fi
  # No version at all: the OpenCL headers' default (3.0) and exactly what
  # <CL/cl.h> alone says about it (a note from cl_version.h, not a warning
  # with GCC); nothing of clattn.h's own.
  if compile queue_default <<<"$queue_app"; then
    ok "$hcc: no CL_TARGET_OPENCL_VERSION: compiles with -Werror, the 2.0 API declared"
  else bad "$hcc: no CL_TARGET_OPENCL_VERSION"; cat "$tmp/queue_default.err"; fi
  compile cl_only <<<'#include <CL/cl.h>
int unused_;'
  strip_diag() { grep -v -e '^In file included from' -e '^ *from ' \
    -e '^ *|' -e '^ *[0-9]* |' "$1" | sed 's/^[^ ]*\.[ch]:[0-9]*:[0-9]*: //'; }
  if grep -E 'clattn\.h:[0-9]+:[0-9]+: (warning|error|note)' \
    "$tmp/queue_default.err" >/dev/null; then
    bad "$hcc: clattn.h itself says something when no version is set"
    cat "$tmp/queue_default.err"
  elif [ "$(strip_diag "$tmp/queue_default.err")" != \
    "$(strip_diag "$tmp/cl_only.err")" ]; then
    bad "$hcc: clattn.h changes what <CL/cl.h> says when no version is set"
    cat "$tmp/queue_default.err" "$tmp/cl_only.err"
  else ok "$hcc: no version: the same diagnostics as <CL/cl.h> alone"; fi
  # Whatever version the application chose, the header (1.2 types only)
  # compiles, in C and in C++.
  for v in 100 110 120 200 210 220 300; do
    for h in clattn clattn_tools; do
      if compile "header_${h}_$v" -DCL_TARGET_OPENCL_VERSION=$v <<<"#include <$h.h>
int unused_;"
      then ok "$hcc: $h.h with CL_TARGET_OPENCL_VERSION=$v"
      else bad "$hcc: $h.h with CL_TARGET_OPENCL_VERSION=$v"
        cat "$tmp/header_${h}_$v.err"; fi
    done
  done
done
if command -v c++ >/dev/null; then
  printf '#include <clattn_tools.h>\nint unused_;\n' >"$tmp/header.cc"
  if c++ -Wall -Wextra -Werror -DCL_TARGET_OPENCL_VERSION=300 \
    -I"$src/host/include" $cl_cflags -c "$tmp/header.cc" -o "$tmp/header_cc.o" \
    2>"$tmp/header_cc.err"
  then ok "clattn.h and clattn_tools.h in C++"
  else bad "clattn.h and clattn_tools.h in C++"; cat "$tmp/header_cc.err"; fi
fi

# ------------------------------------------------------------- LICENSE
if [ -f "$src/LICENSE" ] && grep -q '^MIT License' "$src/LICENSE" &&
  grep -q 'Copyright (c) 2026 the clattn authors' "$src/LICENSE" &&
  grep -q 'WITHOUT WARRANTY OF ANY KIND' "$src/LICENSE" &&
  grep -q "license : 'MIT'" "$src/meson.build"
then ok "LICENSE holds the MIT licence meson.build declares"
else bad "no LICENSE with the MIT text meson.build declares"; fi

# ------------------------------------------------------------- library only
# A library-only configuration: no Criterion, no OpenMP among its
# dependencies, no test or bench target, and warnings not errors.
lo="$tmp/library-only"
if meson setup "$lo" "$src" -Dtests=disabled -Dbench=disabled \
  >"$tmp/setup.log" 2>&1; then
  ok "meson setup -Dtests=disabled -Dbench=disabled"
  deps=$(meson introspect --dependencies "$lo" |
    python3 -c 'import json,sys; print(" ".join(sorted({d["name"] for d in json.load(sys.stdin)})))')
  case " $deps " in
    *criterion* | *openmp*) bad "library-only build depends on: $deps" ;;
    *) ok "library-only dependencies: $deps" ;; esac
  targets=$(meson introspect --targets "$lo" |
    python3 -c 'import json,sys; print(" ".join(sorted(t["name"] for t in json.load(sys.stdin))))')
  case " $targets " in
    *" test_"* | *clattn-bench*) bad "library-only build has test or bench targets: $targets" ;;
    *) ok "library-only targets: $targets" ;; esac
  werror=$(meson introspect --buildoptions "$lo" |
    python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="werror"][0])')
  [ "$werror" = False ] && ok "werror is off by default (CI passes -Dwerror=true)" ||
    bad "werror is $werror by default"
else
  bad "meson setup -Dtests=disabled -Dbench=disabled failed"; tail -5 "$tmp/setup.log"
fi

# The default configuration (auto) where Criterion is not installed: the
# pkg-config search path holds only the library's own dependencies.
pcdir="$tmp/pkgconfig"
mkdir -p "$pcdir"
for dep in OpenCL OpenCL-Headers clblast sqlite3; do
  d=$(pkg-config --variable=pcfiledir "$dep" 2>/dev/null) &&
    ln -sf "$d/$dep.pc" "$pcdir/$dep.pc"
done
nc="$tmp/no-criterion"
if PKG_CONFIG_LIBDIR="$pcdir" PKG_CONFIG_PATH= meson setup "$nc" "$src"   -Dbench=disabled >"$tmp/setup-nc.log" 2>&1; then
  if grep -q 'Dependency criterion.*NO\|Run-time dependency criterion found: NO' \
    "$tmp/setup-nc.log" &&
    ! meson introspect --targets "$nc" | grep -q '"test_runtime"'
  then ok "without Criterion: configures, no tests"
  else bad "without Criterion: Criterion found or tests configured"
    grep -i criterion "$tmp/setup-nc.log"; fi
else
  bad "meson setup without Criterion (tests=auto) failed"; tail -5 "$tmp/setup-nc.log"
fi
if PKG_CONFIG_LIBDIR="$pcdir" PKG_CONFIG_PATH= meson setup "$tmp/nc-enabled" \
  "$src" -Dtests=enabled -Dbench=disabled >"$tmp/setup-nce.log" 2>&1
then bad "-Dtests=enabled without Criterion configured anyway"
else ok "-Dtests=enabled without Criterion: refused"; fi

echo "packaging: $fails failed"
[ "$fails" = 0 ]
