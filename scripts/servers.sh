#!/bin/sh
# servers.sh [SRC [CACHE]]: build each Redis-compatible server of the
# compatibility matrix once, from the source tarballs in SRC (default
# ../shared/servers beside the repository), into CACHE (default .servers in
# the build tree, gitignored).  Reused across runs: a server is built again
# only when its tarball changed.  Each lands in CACHE/NAME/bin as
# redis-server, redis-cli and redis-sentinel (Valkey's valkey-* under the
# names the tests call).  Prints one line a server, "NAME ok" or
# "NAME FAILED (see CACHE/NAME/build.log)"; exits 1 if any failed, 2 when
# SRC does not exist.
set -u
cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
src=${1:-$(dirname "$root")/shared/servers}
cache=${2:-$root/.servers}
[ -d "$src" ] || { echo "servers.sh: no $src"; exit 2; }
mkdir -p "$cache" || exit 1
jobs=$(nproc 2>/dev/null || echo 2)
failed=0

install_bin() {	# $1: the built src dir; $2: bin dir; $3: server|cli|sentinel
	if [ -x "$1/valkey-$3" ]; then
		cp -L "$1/valkey-$3" "$2/redis-$3"
	else
		cp -L "$1/redis-$3" "$2/redis-$3"
	fi
}

for tgz in "$src"/*.tar.gz; do
	[ -f "$tgz" ] || continue
	name=$(basename "$tgz" .tar.gz)
	dir=$cache/$name
	# The tarball's size and checksum: a new tarball of the same name
	# is built again.
	stamp=$(cksum <"$tgz")
	if [ -x "$dir/bin/redis-server" ] && [ -x "$dir/bin/redis-cli" ] &&
	    [ "$(cat "$dir/stamp" 2>/dev/null)" = "$stamp" ]; then
		echo "$name ok (cached)"
		continue
	fi
	rm -rf "$dir" && mkdir -p "$dir/bin" || exit 1
	start=$(date +%s)
	if {
		tar -xzf "$tgz" -C "$dir" &&
		    b=$(find "$dir" -mindepth 1 -maxdepth 1 -type d ! -name bin) &&
		    [ -n "$b" ] &&
		    make -C "$b" -j"$jobs" MALLOC=libc BUILD_TLS=yes &&
		    install_bin "$b/src" "$dir/bin" server &&
		    install_bin "$b/src" "$dir/bin" cli &&
		    install_bin "$b/src" "$dir/bin" sentinel
	} >"$dir/build.log" 2>&1; then
		# Only the binaries are kept: each source tree is ~200 MB built.
		rm -rf "$b"
		echo "$stamp" >"$dir/stamp"
		echo "$name ok (built in $(($(date +%s) - start)) s)"
	else
		rm -f "$dir/bin/redis-server"
		echo "$name FAILED (see $dir/build.log)"
		failed=1
	fi
done
exit $failed
