#!/bin/sh
# test.sh: install what is missing, build, and run everything that checks
# rlock: the whole test suite (once, under ASan+UBSan, with the files that
# are the shipped build's own run on it beside), make distcheck, each fuzz target briefly, the benchmark harness in its smoke
# mode, the static binaries (x86_64, and aarch64 under qemu), the Debian
# package and RPM builds, the server-compatibility matrix and the model of
# the protocol.  Each stage says when it starts and how it ended (the
# suites every minute how many tests have run); the table of stages and
# their times comes last but one, then one line "N passed, N failed".
# Exits non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
. ./scripts/stages.sh
begin build
./scripts/deps.sh >deps.log 2>&1 && ./scripts/build.sh >build.log 2>&1
build=$?
finish build "$build"
if [ "$build" -ne 0 ]; then
	tail -n 30 deps.log build.log; echo "build failed"; echo "0 passed, 1 failed"; exit 1
fi

jobs=$(nproc 2>/dev/null || echo 2)
# The bats files run one more at a time than there are cores: many of them
# spend much of their time waiting (a TTL to pass, a server to fail over).
tjobs=$((jobs + 1))

# What is slow to build and changes seldom (the static binaries' OpenSSL
# and musl, the servers of the matrix) is kept outside the tree, so that a
# fresh clone on the same machine finds it: $RLOCK_CACHE, else
# ~/.cache/rlock.  A cold cache costs the first run some minutes.
cache=${RLOCK_CACHE:-${XDG_CACHE_HOME:-${HOME:-$(pwd)}/.cache}/rlock}
mkdir -p "$cache" 2>/dev/null || cache=$(pwd)/.cache
RLOCK_STATIC_CACHE=${RLOCK_STATIC_CACHE:-$cache/static}
RLOCK_SERVERS=${RLOCK_SERVERS:-$cache/servers}
export RLOCK_STATIC_CACHE RLOCK_SERVERS

# The model of the lock protocol (tests/model.bats: SPIN, no server, some
# minutes of CPU), in the background from the start, at the lowest
# priority: it takes the time the builds and the suites leave idle.
rm -f model.tap
begin model "in the background"
nice -n 19 bats --tap tests/model.bats >model.tap 2>&1 &
model_pid=$!

# The static binaries, which tests/static.bats (in the suite just below)
# runs over TCP and TLS, aarch64 under qemu.  Cold, building OpenSSL and
# musl for both takes 3 minutes on 2 idle cores, 7.5 on busy ones; from the
# cache, under a minute.
begin static
rm -f dist/rlock-linux-x86_64 dist/rlock-linux-aarch64
./scripts/static.sh >static.log 2>&1
static=$?
finish static "$static" "$(grep -c '^dist/rlock-linux-' static.log) built"

# The servers of the compatibility matrix, built once into the cache from
# ../shared/servers when it is there: the matrix below runs against them,
# and tests/oldserver.bats (in the suite) against the Redis
# 5.0 among them.
begin servers
./scripts/servers.sh ../shared/servers "$RLOCK_SERVERS" >servers.log 2>&1
servers=$?
finish servers 0 "$(ls -d "$RLOCK_SERVERS"/*/bin 2>/dev/null | wc -l) ready"

# Debian's awk (mawk) buffers what automake's TAP driver prints, so the
# count would move file by file; unbuffered, it moves test by test.
tap_awk=awk
awk -W version 2>/dev/null | grep -q mawk && tap_awk="mawk -W interactive"

# The release tarball must build and pass the unit tests on its own; the
# build under the sanitizers below is made from it.
begin distcheck
make -j"$jobs" distcheck TESTS=tests/unit >distcheck.log 2>&1
distcheck=$?
finish distcheck "$distcheck"

# The suite runs once, built from that tarball with AddressSanitizer and
# UndefinedBehaviorSanitizer: any report fails the test that hit it.  It
# is every bats file but those that are the shipped build's (below).
# LeakSanitizer's check at exit costs each process some 40 ms here (it
# stops the process to scan it), so it runs in the unit tests and in the
# files of the paths that live long or loop (RLOCK_LEAK_FILES): the
# others' processes make a few calls and exit.
#
# Beside it, at the same time, the build that ships (this tree's) runs
# what the sanitizer build cannot show or does differently: the unit tests
# and the man page lint; the guard that shares rlock's memory (compiled
# out under ASan, which exec's its guard instead), and the nine breaks the
# guard and the protocol close; memcheck (valgrind.bats); the completion
# scripts; the static binaries; the benchmark harness's time bound (bench:
# the tarball has no bench/); the fault checker's fixed seeds (chaos:
# minutes of real time, little CPU); the compatibility subset, which the
# matrix below runs against every other server.  The model of the
# protocol (model.bats) runs in the background, from the start.
plain_tests="tests/guard-window.bats tests/breaks.bats tests/valgrind.bats
	tests/completions.bats tests/static.bats tests/chaos.bats tests/compat.bats
	tests/bench.bats"
# The bats files in Makefile.am's order (longest first), then any other.
san_tests=$({ sed -n '/^BATS_TESTS = /,/^$/s/^[[:space:]]*\(tests\/[^ ]*\.bats\).*/\1/p' Makefile.am
	ls tests/*.bats; } | awk '!seen[$0]++' |
	grep -v '/\(completions\|static\|compat\|model\|chaos\|valgrind\|breaks\|bench\)\.bats$' |
	tr '\n' ' ')
begin suite "under ASan+UBSan, $tjobs files at a time; the shipped build's own files beside it"
rm -rf .sanitize sanitize.log && mkdir .sanitize &&
    tar -xzf "$(ls -t rlock-*.tar.gz | head -n 1)" -C .sanitize --strip-components=1 &&
    (cd .sanitize && ./configure --enable-werror --enable-sanitizers >/dev/null &&
    make -j"$jobs" >/dev/null 2>&1) &&
    # A bats file the tarball lacks (not in BATS_TESTS) would stop make
    # check there with no failing test: name it, and fail.
    for f in $san_tests; do
	[ -f ".sanitize/$f" ] && continue
	echo "FAIL: $f is not in the release tarball: add it to BATS_TESTS in Makefile.am" | tee -a sanitize.log
	exit 1
    done &&
    (cd .sanitize &&
    ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:exitcode=86 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    RLOCK_LEAK_FILES="exec hold soak wait quorum sentinel cluster tls watch
	exec-loss exec-signals exec-runtime history shared limit fifo handover
	settle reshard failover loop lease" \
    make -j"$tjobs" check AWK="$tap_awk" AM_BATS_LOG_FLAGS="--tap --timing" \
    TESTS="tests/unit $san_tests" >../sanitize.log 2>&1) &
san_pid=$!
# shellcheck disable=SC2086 # the list of files, split
make -j2 check AWK="$tap_awk" AM_BATS_LOG_FLAGS="--tap --timing" \
    TESTS="tests/unit tests/manlint.sh $(echo $plain_tests)" >check.log 2>&1 &
check_pid=$!
watch suite sanitize.log "$san_pid" check.log
sanitize=$watched
wait "$check_pid"
check=$?
# Each file's time (the sum of its tests', from bats --timing), the
# longest first: what to make cheaper when the suite grows.
for l in .sanitize/tests/*.log tests/*.log; do
	sed -n 's/^ok .* in \([0-9]*\)ms$/\1/p' "$l" 2>/dev/null |
	    awk -v f="$l" '{ t += $1 } END { if (NR) printf "%8.1f s %4d tests  %s\n", t / 1000, NR, f }'
done | sort -rn >timings.log
finish suite "$((sanitize + check))" "$(tests_so_far sanitize.log) under the sanitizers, $(tests_so_far check.log) on the shipped build"

# After the suite, the rest runs in three lanes side by side, each stage
# saying when it starts and ends: the fuzz targets, then the Debian
# package and the RPMs; the benchmark harness's smoke runs (mostly
# waiting); the server matrix.  Each is mostly one process at a time, and
# the model still runs beside them.
#
# Each fuzz target for a bounded time (FUZZ_SECONDS, default 10).
stage_fuzz() { ./tests/fuzz/run.sh "${FUZZ_SECONDS:-10}" >fuzz.log 2>&1; }
# The benchmark harness, in its 10-second smoke mode, so it cannot rot;
# and its latency, scale, interleaved, floors and instr modes, as briefly.
stage_bench() {
	{
		RLOCK=$(pwd)/src/rlock ./bench/run --smoke &&
		RLOCK=$(pwd)/src/rlock ./bench/run --latency 5 --smoke &&
		RLOCK=$(pwd)/src/rlock ./bench/run --scale --smoke &&
		RLOCK=$(pwd)/src/rlock ./bench/run --interleaved --smoke &&
		RLOCK=$(pwd)/src/rlock ./bench/run --floors --smoke &&
		RLOCK=$(pwd)/src/rlock ./bench/run --instr --smoke
	} >bench.log 2>&1
}
# The Debian package builds, passes lintian, and runs from a scratch root.
stage_deb() { ./scripts/deb.sh >deb.log 2>&1; }
# The static binaries built, and an RPM of each, unpacked and run.
stage_rpm() {
	if [ "$static" -ne 0 ]; then
		echo "static.sh failed" >rpm.log; return 1
	fi
	{ ./scripts/rpm.sh x86_64 && ./scripts/rpm.sh aarch64; } >rpm.log 2>&1
}
# The server-compatibility matrix (scripts/matrix.sh): the compatibility
# subset of the suite against each server built above, its table, and its
# counts added to ours.
stage_matrix() { ./scripts/matrix.sh ../shared/servers "$RLOCK_SERVERS" >matrix.log 2>&1; }
rm -rf .stages && mkdir .stages
lane fuzz deb rpm
lane_a=$lane_pid
lane bench
lane_b=$lane_pid
lane matrix
wait "$lane_a" "$lane_b" "$lane_pid"
reap fuzz deb rpm bench matrix

fuzz_pass=$(grep -c ': ok,' fuzz.log)
fuzz_fail=$(grep -c ': \(FAILED\|build failed\)' fuzz.log)
count() {	# $1: a directory with tests/*.trs; $2: the results to count
	cat "$1"/tests/*.trs 2>/dev/null | grep -c "^:test-result: \($2\)"
}
report() {	# print the logs of failed tests under $1
	for t in "$1"/tests/*.trs; do
		grep -q '^:test-result: \(FAIL\|XPASS\|ERROR\)' "$t" 2>/dev/null || continue
		echo "==== ${t%.trs}.log"
		grep -v '^ok ' "${t%.trs}.log"
	done
}
pass=$(( $(count . 'PASS\|XFAIL') + $(count .sanitize 'PASS\|XFAIL') ))
fail=$(( $(count . 'FAIL\|XPASS\|ERROR') + $(count .sanitize 'FAIL\|XPASS\|ERROR') ))
if { [ "$check" -ne 0 ] || [ "$sanitize" -ne 0 ]; } && [ "$fail" -eq 0 ]; then
	fail=1	# a suite failed without a failing test: say so
fi
report .
report .sanitize
if [ "$bench" -eq 0 ]; then
	pass=$((pass + 1)); echo "bench smoke: ok"
else
	fail=$((fail + 1)); echo "bench smoke: FAILED"; tail -n 30 bench.log
fi
if [ "$deb" -eq 0 ]; then
	pass=$((pass + 1)); echo "debian package: ok ($(tail -n 1 deb.log))"
else
	fail=$((fail + 1)); echo "debian package: FAILED"; tail -n 30 deb.log
fi
if [ "$static" -eq 0 ]; then
	pass=$((pass + 1)); echo "static binaries: ok ($(grep -c '^dist/rlock-linux-' static.log) built)"
else
	fail=$((fail + 1)); echo "static binaries: FAILED"; tail -n 30 static.log
fi
if [ "$rpm" -eq 0 ]; then
	pass=$((pass + 1)); echo "rpm packages: ok ($(grep '^dist/' rpm.log | tr '\n' ' '| sed 's/ $//'))"
else
	fail=$((fail + 1)); echo "rpm packages: FAILED"; tail -n 30 rpm.log
fi
sed '$d' matrix.log
m=$(tail -n 1 matrix.log)
case $m in
*" passed, "*" failed")
	pass=$((pass + ${m%% passed*}))
	m=${m#*passed, }
	fail=$((fail + ${m%% failed*})) ;;
*)	fail=$((fail + 1)) ;;
esac
[ "$matrix" -eq 0 ] || [ "$fail" -gt 0 ] || fail=$((fail + 1))

# The model's check, started at the beginning.
wait "$model_pid"
model=$?
finish model "$model"
model_pass=$(grep -c '^ok ' model.tap)
model_fail=$(grep -c '^not ok ' model.tap)
echo "model (SPIN): $model_pass passed, $model_fail failed"
[ "$model_fail" -eq 0 ] || grep -v '^ok ' model.tap | head -n 60
pass=$((pass + model_pass))
fail=$((fail + model_fail))
[ "$model" -eq 0 ] || [ "$model_fail" -gt 0 ] || fail=$((fail + 1))

grep -v '^ *#' fuzz.log | head -n 60
pass=$((pass + fuzz_pass))
fail=$((fail + fuzz_fail))
[ "$fuzz" -eq 0 ] || [ "$fuzz_fail" -gt 0 ] || fail=$((fail + 1))
if [ "$distcheck" -eq 0 ]; then
	pass=$((pass + 1))
	echo "make distcheck: ok"
else
	fail=$((fail + 1))
	echo "make distcheck: FAILED"; tail -30 distcheck.log
fi
echo
if [ "$fail" -gt 0 ]; then
	echo "failed:"
	failed_tests check.log sanitize.log
	echo
fi
table
echo "$pass passed, $fail failed"
[ "$check" -eq 0 ] && [ "$distcheck" -eq 0 ] && [ "$sanitize" -eq 0 ] &&
    [ "$fuzz" -eq 0 ] && [ "$deb" -eq 0 ] && [ "$bench" -eq 0 ] &&
    [ "$static" -eq 0 ] && [ "$rpm" -eq 0 ] && [ "$matrix" -eq 0 ] &&
    [ "$model" -eq 0 ] && [ "$fail" -eq 0 ]
