#!/bin/sh
# run.sh SECONDS [TARGET...]: build the libFuzzer targets with clang (ASan +
# UBSan) and run each for SECONDS on its corpus under tests/fuzz/corpus/.
# Exits non-zero if a target crashes, leaks or fails to build; the crashing
# input is left in tests/fuzz/crash-* for a regression test.
set -eu
secs=${1:-10}
shift || true
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${FUZZ_OUT:-$top/tests/fuzz/.build}
targets=${*:-duration url name config resp}
mkdir -p "$out"

src=$top/src
# The scripts' C source, as the build makes it.
scripts=$out/scripts.c
sh "$src/lua/embed.sh" awk "$src/lua/embed.awk" "$src/lua/lib.lua" \
    $(ls "$src"/lua/*.lua | grep -v '/lib\.lua$') >"$scripts"
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE -std=c11 -I$src -I${FUZZ_CONFIG_DIR:-$top}"
libsrc="$src/duration.c $src/url.c $src/util.c $src/escape.c $src/conffile.c $src/err.c $src/log.c $src/output.c $src/json.c"
# The reply target links the library as the binary does, from an archive of
# its sources as Makefile.am lists them (only what is called is pulled in), so
# that a file the library gains is not missed: inspect.c began to call cron.c,
# and a list kept here by hand broke the build.
libfiles=$(sed -n '/^src_librlock_a_SOURCES *=/,/[^\\]$/p' "$top/Makefile.am" |
	tr ' \t\\' '\n\n\n' | grep '\.c$' | sed "s|^src/|$src/|")

# lib_archive: the library's sources and the scripts, compiled as the targets
# are, in $out/librlock-fuzz.a.
lib_archive() {
	[ -f "$out/librlock-fuzz.a" ] && return 0
	mkdir -p "$out/lib"
	rm -f "$out"/lib/*.o
	for f in $libfiles $scripts; do
		# shellcheck disable=SC2086
		clang $flags $(pkg-config --cflags hiredis) \
		    -c -o "$out/lib/$(basename "$f" .c).o" "$f" || return 1
	done 2>"$out/build-lib.log"
	ar rcs "$out/librlock-fuzz.a" "$out"/lib/*.o
}
rm -f "$out/librlock-fuzz.a"

status=0
for t in $targets; do
	case $t in
	resp)	if ! lib_archive; then
			echo "fuzz-$t: build failed"; cat "$out/build-lib.log"; status=1; continue
		fi
		extra="$out/librlock-fuzz.a $(pkg-config --cflags --libs hiredis uuid) -lssl -lcrypto -ldl -pthread" ;;
	*)	extra= ;;
	esac
	# shellcheck disable=SC2086
	if ! clang $flags -o "$out/fuzz-$t" "$top/tests/fuzz/fuzz-$t.c" $libsrc $extra 2>"$out/build-$t.log"; then
		echo "fuzz-$t: build failed"; cat "$out/build-$t.log"; status=1; continue
	fi
	corpus=$top/tests/fuzz/corpus/$t
	work=$out/corpus-$t
	mkdir -p "$work"
	log=$out/fuzz-$t.log
	# A reply may announce a huge array ("*1312611189"): redis-reply.c refuses
	# one over its bound before hiredis sees it, but under it hiredis asks
	# for the whole array at once.  Let such a request fail (as a ulimit
	# would) instead of calling it a crash; what happens next is tested.
	if (cd "$out" && ASAN_OPTIONS=allocator_may_return_null=1:max_allocation_size_mb=1024 \
	    "./fuzz-$t" -max_total_time="$secs" -max_len=4096 -malloc_limit_mb=65536 \
	    -artifact_prefix="$top/tests/fuzz/crash-$t-" "$work" "$corpus" \
	    >"$log" 2>&1); then
		runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$' || true)
		[ -n "$runs" ] || runs=$(grep -oE '#[0-9]+' "$log" | tail -n 1 | tr -d '#')
		echo "fuzz-$t: ok, ${runs:-?} runs in ${secs}s"
	else
		echo "fuzz-$t: FAILED"; tail -n 40 "$log"; status=1
	fi
done
exit $status
