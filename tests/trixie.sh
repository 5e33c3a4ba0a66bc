#!/bin/bash
# tests/trixie.sh BUILD_DIR - the Criterion tests' reference checks on
# Debian 13's PoCL 6.0, whose CPU device reports cl_khr_subgroups (Debian
# 12's PoCL 3.1 does not), run inside a Debian 13 folder: the test
# executables built here run in a chroot of it, against its glibc, ICD
# loader, PoCL, Criterion, CLBlast and SQLite, and find libclattn through
# their rpath in the build directory, bind-mounted at the same path.
#
# The folder: $CLATTN_TRIXIE_DIR, default /var/cache/clattn/trixie, kept
# between runs.  When it is absent the tier makes it with debootstrap from
# $CLATTN_TRIXIE_MIRROR (default http://deb.debian.org/debian) into a
# temporary name beside it and renames it into place, so the final path
# never holds a half-made folder; a failed download is a skip (77) that
# names why.  A folder this tier made (it holds .clattn-trixie, the list
# of packages) that lacks a package of the list below is made again.
#
# Needs root (chroot, mounts).  The whole run is in a private mount
# namespace (unshare -m): the mounts of /proc, /sys, /dev, the source and
# the build directory vanish with it, whatever ends the run; they are also
# unmounted on exit, and the run fails when any is left behind.
#
# One driver per tier: OCL_ICD_VENDORS names a folder holding only the
# chroot's pocl.icd (tests/icd_dir.sh).  A driver that does not report
# cl_khr_subgroups fails the tier: testing the subgroup kernels is what it
# is for.
set -u

# The tests run in the chroot, one "EXECUTABLE FILTER" a line: each runs
# `BUILD/tests/EXECUTABLE --filter FILTER` (Criterion's glob on
# SUITE/TEST), and a filter that matches no test fails the tier.
trixie_tests=(
  "test_attention sweep/case"      # the sampled sweep against the reference
  "test_attention attention/*"     # NaN padding, determinism
  "test_decode decode/case"        # decode against the reference
  "test_decode decode/splits_agree"
  "test_decode decode/options"
  "test_decode decode/subgroup*"   # variant 3 (subgroups) and its refusal
  "test_efficient efficient/subgroup*"
)
# Small shapes (CLATTN_TEST_SUBSET, CLATTN_TEST_CASES: docs/TESTING.md).
export CLATTN_TEST_SUBSET=small
export CLATTN_TEST_CASES=2
# What the chroot's Debian 13 must hold: PoCL, clinfo, and the shared
# libraries the test executables and libclattn link (ldd in the chroot).
packages=(pocl-opencl-icd clinfo libcriterion3 libsqlite3-0 libclblast1
  ocl-icd-libopencl1)

build=${1:?usage: trixie.sh BUILD_DIR}
build=$(cd "$build" && pwd) || exit 1
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/.." && pwd)
root=$(readlink -m "${CLATTN_TRIXIE_DIR:-/var/cache/clattn/trixie}")
mirror=${CLATTN_TRIXIE_MIRROR:-http://deb.debian.org/debian}
stamp=.clattn-trixie

skip() {
  echo "skipped: $*"
  exit 77
}

if [ "$(id -u)" != 0 ]; then
  skip "the trixie tier needs root (debootstrap, chroot, mounts)"
fi
for tool in unshare chroot findmnt flock; do
  command -v "$tool" >/dev/null 2>&1 ||
    skip "$tool not found (Debian: util-linux, coreutils)"
done

# The mount points in this namespace under folder $1 or a temporary one
# beside it ($1.making.*, $1.old.*).
mounts_under() {
  findmnt -rn -o TARGET | awk -v d="$1" \
    'index($0, d "/") == 1 || index($0, d ".making.") == 1 ||
     index($0, d ".old.") == 1'
}

# The parent: run the tier in a private mount namespace, then check that
# no mount under the folder is left in this one.
if [ -z "${CLATTN_TRIXIE_INSIDE:-}" ]; then
  # root without CAP_SYS_ADMIN (a default container) has no mount namespace
  unshare --mount --propagation private true 2>/dev/null ||
    skip "unshare --mount is refused here (no CAP_SYS_ADMIN): no chroot with mounts"
  CLATTN_TRIXIE_INSIDE=1 unshare --mount --propagation private \
    bash "$0" "$build"
  rc=$?
  left=$(mounts_under "$root")
  if [ -n "$left" ]; then
    echo "FAIL: mounts left behind under $root:"
    echo "$left"
    exit 1
  fi
  exit "$rc"
fi

# ---------------------------------------------------------------- mounts
# What the exit undoes: the mounts, a folder debootstrap was making, the
# log of a test run.
mounted=()
making=
log=
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[i]}" 2>/dev/null || umount -R -l "${mounted[i]}"
  done
  mounted=()
  [ -z "$making" ] || remove_folder "$making" "$making.log"
  [ -z "$log" ] || rm -f "$log"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
mount_in() { # TYPE_OPTION SOURCE TARGET
  mkdir -p "$3" && mount "$1" "$2" "$3" || return 1
  mounted+=("$3")
}

# --------------------------------------------------------------- folder
# Which packages of the list the folder lacks.
missing_packages() {
  local p status
  for p in "${packages[@]}"; do
    status=$(chroot "$root" dpkg-query -W -f '${db:Status-Status}' "$p" \
      2>/dev/null)
    [ "$status" = installed ] || echo "$p"
  done
}

# Remove a folder, after debootstrap's own mounts in it (this namespace's);
# refuse when anything else stays mounted under it (a bind mount of the
# build directory would otherwise be emptied with it).
remove_folder() { # FOLDER [FILE...]
  mounts_under "$1" | sort -r | xargs -r -n1 umount -l
  if [ -n "$(mounts_under "$1")" ]; then
    echo "FAIL: not removing $1: something is mounted under it"
    return 1
  fi
  rm -rf --one-file-system "$@"
}

# Make the folder into a temporary name beside it, then rename it into
# place (over an older folder of this tier's own).  Status 77 (after
# "skipped: ...") when debootstrap could not download.
make_folder() {
  command -v debootstrap >/dev/null 2>&1 ||
    skip "debootstrap not found (Debian: debootstrap, .ci/deps)"
  local tmp boot_log include old stale
  # what a run that was killed left half-made or half-removed (this run
  # holds the lock, so no other is making one)
  for stale in "$root".making.* "$root".old.*; do
    [ ! -e "$stale" ] || remove_folder "$stale" || return 1
  done
  tmp=$(mktemp -d "$root.making.XXXXXX") || return 1
  making=$tmp
  boot_log=$tmp.log
  include=$(IFS=,; echo "${packages[*]}")
  echo "== trixie: debootstrap --variant=minbase --include=$include trixie" \
    "$tmp $mirror [${SECONDS} s]"
  if ! debootstrap --variant=minbase --include="$include" trixie "$tmp" \
      "$mirror" >"$boot_log" 2>&1; then
    tail -n 15 "$boot_log"
    remove_folder "$tmp" && making=
    local why
    why=$(grep -m1 -E "Failed getting release|Couldn't download" \
      "$boot_log")
    rm -f "$boot_log"
    if [ -n "$why" ]; then
      echo "skipped: cannot make the Debian 13 folder $root: debootstrap" \
        "could not download it from $mirror (no network or mirror down:" \
        "${why#E: })"
      return 77
    fi
    echo "FAIL: debootstrap failed (its log's last lines above)"
    return 1
  fi
  rm -f "$boot_log"
  chmod 755 "$tmp" && printf '%s\n' "${packages[@]}" >"$tmp/$stamp" ||
    return 1
  old=
  if [ -e "$root" ]; then
    old=$(mktemp -u "$root.old.XXXXXX")
    mv -T "$root" "$old" || return 1
  fi
  mv -T "$tmp" "$root" || return 1
  making=
  echo "== trixie: made $root [${SECONDS} s]"
  [ -z "$old" ] || remove_folder "$old"
}

# One run makes or replaces the folder at a time (exclusive lock); runs
# that use it hold the lock shared, so none is replaced under them.
mkdir -p "$(dirname "$root")" || exit 1
exec 9>"$root.lock" || exit 1
# another run making the folder takes minutes, not more
flock -w 900 -x 9 || { echo "FAIL: $root.lock held for 15 minutes"; exit 1; }
if [ ! -d "$root" ]; then
  make_folder || exit $?
else
  missing=$(missing_packages | tr '\n' ' ')
  if [ -n "$missing" ]; then
    if [ ! -f "$root/$stamp" ]; then
      echo "FAIL: $root lacks ${missing% } (not made by this tier, so left" \
        "as it is: install them in it, or use another CLATTN_TRIXIE_DIR)"
      exit 1
    fi
    echo "== trixie: $root lacks ${missing% }: making it again"
    make_folder || exit $?
  else
    echo "== trixie: $root (kept from an earlier run)"
  fi
fi
missing=$(missing_packages | tr '\n' ' ')
if [ -n "$missing" ]; then
  echo "FAIL: $root lacks ${missing% } after debootstrap"
  exit 1
fi
# shared from here on; flock(1) converts the lock in two steps, so a run
# waiting for it exclusively may get it in between, and finds the folder
# complete (it was just checked), which it then leaves as it is
flock -w 900 -s 9 || { echo "FAIL: $root.lock held for 15 minutes"; exit 1; }

# ----------------------------------------------------------- the chroot
# The source and build directories at their own paths (shorter first, so
# that a build directory inside the source one is not hidden), the kernel
# file systems, and /dev's own mounts (/dev/shm, /dev/pts) with it.
for dir in $(printf '%s\n' "$source_dir" "$build" | sort -u); do
  mount_in --bind "$dir" "$root$dir" || exit 1
done
mount_in "-tproc" proc "$root/proc" || exit 1
mount_in --rbind /sys "$root/sys" || exit 1
mount_in --rbind /dev "$root/dev" || exit 1

# PoCL's .icd alone, from the chroot's vendors folder, in the build
# directory (so the same path inside the chroot).
OPENCL_VENDOR_PATH=$root/etc/OpenCL/vendors \
  sh "$here/icd_dir.sh" pocl "$build/icd-trixie" || exit $?
export OCL_ICD_VENDORS="$build/icd-trixie"
export POCL_CACHE_DIR="$build/pocl-cache-trixie"
export CLATTN_CACHE_DIR="$build/tests/clattn-cache-trixie"
mkdir -p "$POCL_CACHE_DIR" "$CLATTN_CACHE_DIR" || exit 1
in_root() { chroot "$root" "$@"; }

# Every shared library the executables need, found in the chroot.
exes=$(printf '%s\n' "${trixie_tests[@]}" | awk '{print $1}' | sort -u)
unresolved=$(for e in $exes; do in_root ldd "$build/tests/$e"; done |
  grep "not found" | sort -u)
unresolved+=$(in_root ldd "$build/host/cli/clattn" | grep "not found")
if [ -n "$unresolved" ]; then
  echo "FAIL: libraries the tests need are not in $root:"
  echo "$unresolved"
  exit 1
fi

# The driver and what it reports, from the build's own command.
echo "== trixie: $(in_root dpkg-query -W -f '${Package} ${Version}' \
  pocl-opencl-icd), clattn devices --verbose [${SECONDS} s]"
devices=$(in_root "$build/host/cli/clattn" devices --verbose 2>&1)
echo "$devices"
extensions=$(grep -m1 "^ *extensions:" <<<"$devices")
if [ -z "$extensions" ]; then
  echo "FAIL: clattn devices --verbose listed no device's extensions"
  exit 1
fi
echo "subgroup extensions: $(grep -oE '\bcl_[a-z_]*subgroup[a-z_]*' \
  <<<"$extensions" | tr '\n' ' ')"
if ! grep -qw cl_khr_subgroups <<<"$extensions"; then
  echo "FAIL: the driver in $root does not report cl_khr_subgroups"
  exit 1
fi

log=$(mktemp) || exit 1
rc=0
for entry in "${trixie_tests[@]}"; do
  read -r exe filter <<<"$entry"
  echo "== trixie: $exe --filter '$filter' [${SECONDS} s]"
  in_root "$build/tests/$exe" --jobs=2 \
    --filter "$filter" 2>&1 | tee "$log"
  if [ "${PIPESTATUS[0]}" != 0 ]; then
    rc=1
  elif grep -q "Synthesis: Tested: 0 " "$log"; then
    echo "FAIL: '$filter' matches no test of $exe"
    rc=1
  fi
done
echo "== trixie: done [${SECONDS} s]"
exit $rc
