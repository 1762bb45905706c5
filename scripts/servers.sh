#!/bin/sh
# servers.sh [SRC [CACHE]]: build each Redis-compatible server of the
# compatibility matrix once, from the source tarballs in SRC (default
# ../shared/servers beside the repository), into CACHE (default .servers in
# the build tree, gitignored).  Reused across runs: a server is built
# again only when its tarball (or the recipe) changed.  Each lands in
# CACHE/NAME/bin as redis-server, redis-cli and redis-sentinel (Valkey's
# valkey-* under the names the tests call).  Prints one line a server, "NAME ok" or
# "NAME FAILED (see CACHE/NAME/build.log)"; exits 1 if any failed, 2 when
# SRC does not exist.
set -u
cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
src=${1:-$(dirname "$root")/shared/servers}
cache=${2:-$root/.servers}
[ -d "$src" ] || { echo "servers.sh: no $src"; exit 2; }
mkdir -p "$cache" || exit 1
# One run at a time in a cache: two test runs side by side share it, and
# a server that is built is first removed; the second waits (an instant
# when every server is built), at most 30 minutes.
exec 9>"$cache/.lock" || exit 1
flock -w 1800 9 || { echo "servers.sh: another run has held $cache/.lock for 30 minutes"; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)
failed=0

# Only the server and redis-cli are built, without optimisation: test
# servers need no speed, and Redis 7's default -O3 -flto takes four times
# the CPU.  redis-sentinel is the server under another name.
install_bin() {	# $1: the built src dir; $2: bin dir; $3: redis|valkey
	cp "$1/$3-server" "$2/redis-server" &&
	    cp "$1/$3-cli" "$2/redis-cli" &&
	    ln -s redis-server "$2/redis-sentinel"
}

for tgz in "$src"/*.tar.gz; do
	[ -f "$tgz" ] || continue
	name=$(basename "$tgz" .tar.gz)
	dir=$cache/$name
	case $name in
	valkey-*) eng=valkey ;;
	*) eng=redis ;;
	esac
	# The tarball's size and checksum, and how it is built: a new
	# tarball of the same name, or a new recipe, is built again.
	stamp="$(cksum <"$tgz") -O0 $eng-server $eng-cli"
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
		    make -C "$b/src" -j"$jobs" MALLOC=libc BUILD_TLS=yes \
		    OPTIMIZATION=-O0 "$eng-server" "$eng-cli" &&
		    install_bin "$b/src" "$dir/bin" "$eng"
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
