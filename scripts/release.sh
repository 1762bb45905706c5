#!/bin/sh
# release.sh: what a release manager runs, on a Debian 12 amd64 machine, to
# make the files of a release in dist/ from a clean checkout: the static
# binaries for x86_64 and aarch64, an RPM of each, the .deb, the source
# tarball, and SHA256SUMS over them.  CI (scripts/test.sh) builds and checks
# the same binaries and packages on every run; this adds what CI does not
# keep: files built from a committed tree, the tarball and the checksums.
# Before publishing, run dist/rlock-linux-aarch64 once on an aarch64 host:
# CI runs it under qemu-aarch64-static only (see README, Installing).
set -eu
cd "$(dirname "$0")/.."

if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	echo "release.sh: the work tree has uncommitted changes" >&2
	exit 1
fi
./scripts/deps.sh
rm -f dist/rlock-linux-x86_64 dist/rlock-linux-aarch64 dist/*.rpm \
    dist/*.deb dist/*.tar.gz dist/SHA256SUMS
./scripts/static.sh
./scripts/build.sh
bats tests/static.bats
./scripts/rpm.sh x86_64
./scripts/rpm.sh aarch64
./scripts/deb.sh
make -s dist >/dev/null
mv rlock-*.tar.gz dist/
cd dist
sha256sum rlock-linux-x86_64 rlock-linux-aarch64 rlock-*.rpm rlock_*.deb \
    rlock-*.tar.gz >SHA256SUMS
cat SHA256SUMS
