#!/bin/sh
# deps.sh: install what rlock needs to build, test and benchmark on Debian 12.
# Idempotent: installs only the packages that are missing.  With the
# argument 'build', only those that building rlock needs.
set -eu

# deps.sh build: only what building and installing needs.
BUILD="build-essential autoconf automake libtool pkg-config
libhiredis-dev uuid-dev libssl-dev"
PACKAGES="$BUILD
redis-server redis-tools bats bats-assert bats-support bash-builtins mandoc spin
openssl python3 tmux procps clang libclang-rt-14-dev
zsh fish bash-completion strace valgrind
python3-prometheus-client python3-jsonschema"

[ "${1:-}" = build ] && PACKAGES=$BUILD
missing=""
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
	SUDO=
elif command -v sudo >/dev/null 2>&1; then
	SUDO=sudo
else
	echo "deps.sh: need root (or sudo) to install:$missing" >&2
	exit 1
fi
echo "deps.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
