#!/bin/sh
# build.sh: configure (once) and build rlock in the source tree.
# Extra arguments go to ./configure.
set -eu
cd "$(dirname "$0")/.."
[ -x configure ] || autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
[ -f Makefile ] || ./configure --enable-werror "$@" >/dev/null
make -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
