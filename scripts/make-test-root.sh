#!/usr/bin/env bash
# Makes the clean Debian 12 root the package tests install gpuscope's .deb into (debootstrap, minbase, plus
# systemd to boot it with systemd-nspawn and man-db for systemd-analyze verify's man page check), once per
# machine, as a tarball in ${GPUSCOPE_PEERS_CACHE:-$HOME/.cache/gpuscope/peers}/debian-root-<suite>-<key>/
# (outside the repository; the key changes with the suite, the mirror and the package list). A root already
# there is left alone. Needs root. The suite and mirror are pinned in scripts/versions.env.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=versions.env
. "$root/scripts/versions.env"
cache=${GPUSCOPE_PEERS_CACHE:-$HOME/.cache/gpuscope/peers}
key=$(printf '%s %s %s' "$DEBIAN_TEST_ROOT_SUITE" "$DEBIAN_TEST_ROOT_MIRROR" "$DEBIAN_TEST_ROOT_PACKAGES" |
  sha256sum | cut -c1-12)
dir=$cache/debian-root-$DEBIAN_TEST_ROOT_SUITE-$key
if [ -f "$dir/root.tar" ]; then
  echo "make-test-root: cached in $dir"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "make-test-root: debootstrap needs root" >&2
  exit 1
fi
start=$(date +%s)
work=$(mktemp -d -t gpuscope-root.XXXXXX)
trap 'umount -R "$work/root/proc" 2>/dev/null || true; rm -rf "$work"' EXIT
debootstrap --variant=minbase --include="$DEBIAN_TEST_ROOT_PACKAGES" "$DEBIAN_TEST_ROOT_SUITE" "$work/root" \
  "$DEBIAN_TEST_ROOT_MIRROR" >"$work/debootstrap.log" 2>&1 || {
  tail -20 "$work/debootstrap.log" >&2
  echo "make-test-root: debootstrap failed" >&2
  exit 1
}
# The package lists, so that apt can resolve the package's dependencies in the tests.
cat >"$work/root/etc/apt/sources.list" <<SOURCES
deb $DEBIAN_TEST_ROOT_MIRROR $DEBIAN_TEST_ROOT_SUITE main
SOURCES
mount -t proc proc "$work/root/proc"
chroot "$work/root" apt-get update -qq
umount "$work/root/proc"
chroot "$work/root" apt-get clean
mkdir -p "$dir.tmp"
tar -C "$work/root" --numeric-owner -cf "$dir.tmp/root.tar" .
rm -rf "$dir"
mv "$dir.tmp" "$dir"
echo "make-test-root: made $dir ($(($(date +%s) - start)) s)"
