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
# shellcheck disable=SC2086
exec "$(dirname "$0")/apt-install.sh" $PACKAGES
