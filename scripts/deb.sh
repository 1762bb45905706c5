#!/bin/sh
# deb.sh: build the Debian package from a clean copy of the tree, check it
# with lintian, install it into a scratch root and run it from there.
# Prints the path of the .deb.  Needs no network beyond Debian's packages.
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)

need="debhelper dpkg-dev lintian fakeroot man-db"
# shellcheck disable=SC2086
./scripts/apt-install.sh $need
./scripts/deps.sh

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A clean copy: what git tracks, nothing built.
git -C "$top" archive --format=tar --prefix=rlock-0.1.0/ HEAD | tar -x -C "$work"
(cd "$work/rlock-0.1.0" && autoreconf -fi >/dev/null 2>&1 &&
    dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1) || {
	tail -40 "$work/build.log"; exit 1; }
deb=$(ls "$work"/rlock_*.deb)
lintian --fail-on error "$deb"

root=$work/root
dpkg -x "$deb" "$root"
"$root/usr/bin/rlock" --version
MANPATH=$root/usr/share/man man -w rlock
MANPATH=$root/usr/share/man man -w 5 rlock.conf
for m in rlock rlock-protocol rlock-exec rlock-schedules rlock-distribution rlock-security \
    rlock-operations; do
	MANPATH=$root/usr/share/man man -w 7 "$m"
done
for f in usr/share/bash-completion/completions/rlock \
    usr/share/zsh/site-functions/_rlock \
    usr/share/fish/vendor_completions.d/rlock.fish \
    usr/share/doc/rlock/examples/rlock.conf \
    usr/share/rlock/schema/log.json usr/share/rlock/schema/status.json; do
	[ -f "$root/$f" ] || { echo "missing $f"; exit 1; }
done
# The README, which dh_compress may have gzipped.
ls "$root"/usr/share/doc/rlock/README.md* >/dev/null ||
    { echo "missing usr/share/doc/rlock/README.md"; exit 1; }
mkdir -p "$top/dist"
cp "$deb" "$top/dist/"
echo "dist/$(basename "$deb")"
