#!/bin/sh
# tests/icd_dir.sh DRIVER DIR - make DIR an OpenCL vendors folder that holds
# DRIVER's .icd and nothing else, for OCL_ICD_VENDORS=DIR: each driver tier
# loads its own driver alone (tests/run.sh: PoCL for the Criterion tests;
# tests/rusticl.sh, tests/oclgrind.sh, tests/tsan.sh,
# tests/sanitizers/asan.sh), so that no other installed driver runs its
# initialisation, its compiler or its leaks inside a test process (PoCL,
# rusticl and clover all load the one libLLVM-15; docs/TESTING.md).
#
# DRIVER is the name of an installed .icd (pocl, rusticl: DRIVER.icd in
# $OPENCL_VENDOR_PATH, else /etc/OpenCL/vendors), or the absolute path of a
# driver library that installs no .icd (Oclgrind's).  When it is not
# installed, prints "skipped: REASON" and exits 77 (meson's skip), which a
# tier passes on:  sh tests/icd_dir.sh rusticl "$tmp/icd" || exit $?
set -u
driver=${1:?usage: icd_dir.sh DRIVER DIR}
dir=${2:?usage: icd_dir.sh DRIVER DIR}
vendors=${OPENCL_VENDOR_PATH:-/etc/OpenCL/vendors}
case $driver in
/*)
  if [ ! -e "$driver" ]; then
    echo "skipped: $driver not found (its package is not installed)"
    exit 77
  fi
  icd=$(basename "$driver" .so).icd
  ;;
*)
  icd=$driver.icd
  if [ ! -f "$vendors/$icd" ]; then
    echo "skipped: no $icd in $vendors (its package is not installed)"
    exit 77
  fi
  ;;
esac
mkdir -p "$dir" || exit 1
# A folder used before keeps no other driver's file.
for f in "$dir"/*.icd; do
  [ -e "$f" ] && [ "$(basename "$f")" != "$icd" ] && { rm -f "$f" || exit 1; }
done
case $driver in
/*) echo "$driver" >"$dir/$icd" || exit 1 ;;
*) cp "$vendors/$icd" "$dir/$icd" || exit 1 ;;
esac
