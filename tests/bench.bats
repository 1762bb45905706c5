#!/usr/bin/env bats
# bench.bats: the benchmark harness's time bound (bench/bound.bash), which
# scripts/test.sh's smoke runs depend on: a run the bound stops says so,
# exits 124 and leaves no process and no temp directory behind, and no
# bench script keeps a trap on TERM (bash 5.2, running one while it expands
# a $(...), dies: "trap: line 2: unexpected EOF while looking for matching
# `)'", then spins or "reader_loop: bad jump", its clean-up never run).
# The release tarball has no bench/: there, these skip.

load helpers

BENCH="$BATS_TEST_DIRNAME/../bench"

# No server of the file's own: the bench starts its own.
setup() {
	[[ -x $BENCH/interleaved ]] || skip "no bench/ here (a release tarball)"
}

@test "bench: no bench script traps TERM, and each bounds its run with bench/bound.bash" {
	local f bad=
	for f in "$BENCH"/run "$BENCH"/interleaved "$BENCH"/fleet "$BENCH"/floors "$BENCH"/instr "$BENCH"/deploy; do
		grep -nE "^[[:space:]]*trap [^-].*[[:space:]]TERM([[:space:]]|$)" "$f" && bad+=" ${f##*/}"
		grep -q 'bound_run ' "$f" || bad+=" ${f##*/}(no bound_run)"
		grep -q 'exec timeout' "$f" && bad+=" ${f##*/}(exec timeout)"
	done
	[[ -z $bad ]] || fail "bench scripts with a TERM trap or their own timeout:$bad"
}

@test "bench: a smoke run stopped by its time bound says so, exits 124, and leaves no process and no temp directory" {
	local c
	for c in redis-server redis-cli openssl cc flock setsid timeout; do
		command -v "$c" >/dev/null || skip "$c is not installed"
	done
	mkdir "$BATS_TEST_TMPDIR/tmp"
	# 6 s: past the servers' start, inside the measurements, on any machine.
	run --separate-stderr env TMPDIR="$BATS_TEST_TMPDIR/tmp" BENCH_TIME_LIMIT=6 \
		RLOCK="$RLOCK" timeout 120 "$BENCH/interleaved" --smoke
	assert_equal "$status" 124
	[[ $stderr == *"terminated (a signal, or the time bound: 6 s, BENCH_TIME_LIMIT)"* ]] ||
		fail "no line saying the bound ended it: $stderr"
	[[ $stderr != *"unexpected EOF"* && $stderr != *"bad jump"* ]] || fail "bash died: $stderr"
	local left
	left=$(ls -A "$BATS_TEST_TMPDIR/tmp")
	[[ -z $left ]] || fail "left behind in TMPDIR: $left"
	local i
	for ((i = 0; i < 100; i++)); do
		pgrep -f "$BATS_TEST_TMPDIR/tmp" >/dev/null || break
		sleep 0.05
	done
	left=$(pgrep -af "$BATS_TEST_TMPDIR/tmp") || true
	[[ -z $left ]] || fail "processes left running: $left"
}
