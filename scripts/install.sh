#!/bin/sh
# install.sh: install what rlock needs to build, build it, and install it in
# /usr/local (the binary, its manual, the bash, zsh and fish completions),
# with the group rlock (for a password file the crontabs of its members can
# read) and a commented /etc/rlock.conf when there is none.  Run it as root,
# or as a user who may sudo: only the steps that need root use sudo.
# Extra arguments go to ./configure (e.g. --prefix=/opt/rlock).
set -eu
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then
	as_root() { "$@"; }
elif command -v sudo >/dev/null 2>&1; then
	as_root() { sudo "$@"; }
else
	echo "install.sh: run it as root, or install sudo" >&2
	exit 1
fi

./scripts/deps.sh build
./scripts/build.sh "$@"
as_root make install >/dev/null
getent group rlock >/dev/null || as_root groupadd --system rlock
if [ ! -e /etc/rlock.conf ]; then
	as_root install -m 644 examples/rlock.conf /etc/rlock.conf
	echo "install.sh: wrote a commented /etc/rlock.conf"
fi
bin=$(sed -n 's/^prefix = //p' Makefile)/bin/rlock
echo "install.sh: installed $bin ($("$bin" --version)); next: /etc/rlock.conf (README.md, step 2)"
