#!/usr/bin/env bats
# bounded.bats: a hostile or broken server (tests/hostileserver.py, on a Unix
# socket of the test's own) cannot make rlock take unbounded memory or time,
# nor have an answer of the wrong shape read as "busy" or "free". Each case
# checks the exit status, exactly one stderr line naming the server, nothing
# on stdout, and the time and peak memory the run took.

load helpers

setup() {
	require_rlock
	unset RLOCK_URL RLOCK_TOKEN RLOCK_PREFIX RLOCK_PASSWORD REDISCLI_AUTH RLOCK_CONFIG
}
teardown() { cleanup_test; }

# start_hostile MODE: the hostile server in MODE, listening on this test's
# Unix socket, in HOSTILE_URL. Stopped by PID in teardown.
start_hostile() {
	local i
	HOSTILE_SOCK=$BATS_TEST_TMPDIR/hostile.sock
	HOSTILE_URL=unix://$HOSTILE_SOCK
	rm -f "$HOSTILE_SOCK"
	bg_start HOSTILE /usr/bin/python3 "$BATS_TEST_DIRNAME/hostileserver.py" \
		--socket "$HOSTILE_SOCK" --mode "$1" --max-seconds 300
	for ((i = 0; i < 750; i++)); do
		[[ "$(head -n 1 "$BATS_TEST_TMPDIR/HOSTILE.out" 2>/dev/null)" == ready ]] && return 0
		sleep 0.02
	done
	fail "the hostile server did not start: $(head -c 2000 "$BATS_TEST_TMPDIR/HOSTILE.err")"
}

# bounded STATUS MAX_SECONDS MAX_KIB ARGS...: rlock ARGS against the hostile
# server (killed after 60 s whatever happens) exits STATUS with one stderr
# line that names the server, nothing on stdout, within MAX_SECONDS and
# MAX_KIB of peak memory (/usr/bin/time's maximum resident set size).
bounded() {
	local want=$1 max_s=$2 max_kib=$3 kib secs
	shift 3
	run --separate-stderr timeout -s KILL 60 /usr/bin/time -f '%M %e' \
		-o "$BATS_TEST_TMPDIR/usage" "$RLOCK" -u "$HOSTILE_URL" "$@"
	read -r kib secs < <(tail -n 1 "$BATS_TEST_TMPDIR/usage")
	if [[ "$status" != "$want" ]]; then
		fail "rlock $* exited $status, not $want; stderr: $stderr"
	fi
	assert_one_error_line
	assert_equal "$output" ""
	[[ "$stderr" == *"$HOSTILE_URL"* ]] ||
		fail "rlock $*: the message does not name the server: $stderr"
	[[ "$stderr" != *"runtime error"* ]] || fail "sanitizer: $stderr"
	((kib <= max_kib)) ||
		fail "rlock $* took $kib KiB at its peak (at most $max_kib): $stderr"
	awk -v s="$secs" -v m="$max_s" 'BEGIN { exit !(s <= m) }' ||
		fail "rlock $* took ${secs}s (at most ${max_s}s): $stderr"
}

# Memory: rlock's own is a few MiB; 128 MiB leaves room for a sanitizer build.
MAX_KIB=131072

@test "bounded: a string announced as 9000000000000000000 bytes is refused at once" {
	start_hostile bigbulk
	bounded 69 10 "$MAX_KIB" -n acquire job
	assert_equal "$stderr" "rlock: $HOSTILE_URL: the server announced a string of 9000000000000000000 bytes; rlock takes at most 64 MiB in one reply"
	bounded 69 10 "$MAX_KIB" status job
	bounded 69 10 "$MAX_KIB" exec -n job -- touch "$BATS_TEST_TMPDIR/ran"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "bounded: an array announced as 2147483647 elements, then endless elements, is refused at once" {
	start_hostile bigarray
	bounded 69 10 "$MAX_KIB" -n acquire job
	assert_equal "$stderr" "rlock: $HOSTILE_URL: the server announced an array of 2147483647 elements; rlock takes at most 4194304 in one reply"
	bounded 69 10 "$MAX_KIB" status job
	bounded 69 10 "$MAX_KIB" release --token t job
}

@test "bounded: a status line that never ends is refused past 64 KiB" {
	start_hostile longline
	bounded 69 10 "$MAX_KIB" -n acquire job
	assert_equal "$stderr" "rlock: $HOSTILE_URL: the server sent a line of more than 65536 bytes"
}

@test "bounded: a reply that keeps coming and never ends is cut at --timeout" {
	# 60 MB at about 13 MB/s: within the size bound, past the time bound.
	start_hostile slowbulk
	bounded 69 8 "$MAX_KIB" --timeout 1s status job
	assert_equal "$stderr" "rlock: $HOSTILE_URL: no reply within 1s (--timeout)"
	# acquire gives back what it may have taken: two round trips at most.
	bounded 69 8 "$MAX_KIB" --timeout 1s -n acquire job
}

@test "bounded: arrays nested too deep and integers out of range are protocol errors" {
	start_hostile deep
	bounded 69 10 "$MAX_KIB" -n acquire job
	assert_equal "$stderr" "rlock: $HOSTILE_URL: protocol error: arrays nested more than 7 deep"
	stop_all_bg
	start_hostile badint
	bounded 69 10 "$MAX_KIB" release --token t job
	assert_equal "$stderr" "rlock: $HOSTILE_URL: protocol error: ':' followed by no number, or one out of range"
}
