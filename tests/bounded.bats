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
	# A server started before in this test said "ready" there too.
	rm -f "$HOSTILE_SOCK" "$BATS_TEST_TMPDIR/HOSTILE.out"
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

# Memory: rlock's own is a few MiB, and a reply cut at --timeout adds what
# came until then; 256 MiB leaves room for a sanitizer build's quarantine of
# freed memory. Before the bounds, these cases took gigabytes.
MAX_KIB=262144

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

@test "bounded: a script answered +OK is a wrong shape: exit 69 naming the server, never busy or free, and -w does not spin" {
	start_hostile ok
	local what
	bounded 69 10 "$MAX_KIB" -n acquire job
	assert_equal "$stderr" "rlock: $HOSTILE_URL: the acquire script was answered with a status of a shape rlock's script never gives; is it a Redis server, with nothing in between?"
	# Not "busy" (1) after waiting: at once.
	bounded 69 1.5 "$MAX_KIB" -w 5s acquire job
	bounded 69 10 "$MAX_KIB" exec -w 5s job -- touch "$BATS_TEST_TMPDIR/ran"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	# Not "free" (1), not "not the holder" (1).
	for what in "status job" "--json status job" "release --token t job" \
		"release --force job" "extend --token t job"; do
		# shellcheck disable=SC2086
		bounded 69 10 "$MAX_KIB" $what
		[[ "$stderr" == *"script was answered with a status of a shape"* ]] ||
			fail "rlock $what: $stderr"
	done
}

@test "bounded: a SCAN whose cursor never comes back to 0 ends the listing (status, log) with 69" {
	local what
	start_hostile scanloop
	for what in status log "--json status" "status --format openmetrics"; do
		# shellcheck disable=SC2086
		bounded 69 30 "$MAX_KIB" $what
		assert_equal "$stderr" "rlock: $HOSTILE_URL: SCAN did not end within 10000 pages (10000 keys each); is it a Redis server, with nothing in between?"
	done
	# A new key on each page: the same bound, in bounded memory.
	stop_all_bg
	start_hostile scanmany
	bounded 69 30 "$MAX_KIB" status
	bounded 69 30 "$MAX_KIB" log
}

@test "bounded: extreme integers are bounded before any arithmetic" {
	# Busy with a PTTL of 2^63-1: the wait still ends at -w (exit 1, no
	# message), with no sanitizer report.
	start_hostile busymax
	run --separate-stderr timeout -s KILL 60 "$RLOCK" -u "$HOSTILE_URL" -w 1s acquire job
	assert_equal "$status" 1
	assert_equal "$stderr" ""
	assert_equal "$output" ""
	run --separate-stderr timeout -s KILL 60 "$RLOCK" -u "$HOSTILE_URL" -v -w 300ms acquire job
	assert_equal "$status" 1
	refute_contains "runtime error" "$stderr"
	stop_all_bg
	# An extend answered with a TTL of 2^63-1: not a TTL rlock gives.
	start_hostile extendmax
	bounded 69 10 "$MAX_KIB" extend --token t job
	assert_equal "$stderr" "rlock: $HOSTILE_URL: the extend script was answered with an array of a shape rlock's script never gives; is it a Redis server, with nothing in between?"
	stop_all_bg
	# -2^63, the least integer RESP can carry: read, and refused as a fence.
	start_hostile negative
	bounded 69 10 "$MAX_KIB" -n acquire job
	[[ "$stderr" == *"the acquire script was answered with an array of a shape"* ]] || fail "$stderr"
	bounded 69 10 "$MAX_KIB" extend --token t job
}

@test "bounded: log NAME: a history answered with a wrong shape is exit 69 naming the server, never an empty history" {
	local mode what
	# +OK, an integer, and {now, {{1}}}: an entry that is no entry.
	for mode in ok int almost; do
		start_hostile "$mode"
		for what in "log job" "--json log job" "log job other"; do
			# shellcheck disable=SC2086
			bounded 69 10 "$MAX_KIB" $what
			[[ "$stderr" == *"the log script was answered with "*" of a shape rlock's script never gives"* ]] ||
				fail "$mode: rlock $what: $stderr"
		done
		stop_all_bg
	done
}

@test "bounded: watch NAME: a history or an XREAD answered with a wrong shape is exit 69 naming the server, never a spin" {
	local mode
	for mode in ok int almost; do
		start_hostile "$mode"
		bounded 69 10 "$MAX_KIB" watch job
		[[ "$stderr" == *"the log script was answered with "*" of a shape rlock's script never gives"* ]] ||
			fail "$mode: $stderr"
		stop_all_bg
	done
	# The history's newest entry read right, then XREAD {{KEY, {1}}}.
	start_hostile xread
	bounded 69 10 "$MAX_KIB" watch job
	assert_equal "$stderr" "rlock: $HOSTILE_URL: XREAD was answered with an array of a shape Redis never gives; is it a Redis server, with nothing in between?"
	bounded 69 10 "$MAX_KIB" --json watch job
}

# doctor_bounded MODE: doctor against the hostile server in MODE exits 69
# in bounded time, with an error finding naming the server and a reply of
# the wrong shape, and one line on stderr naming the server.
doctor_bounded() {
	start_hostile "$1"
	run --separate-stderr timeout -s KILL 60 "$RLOCK" -u "$HOSTILE_URL" doctor
	[[ "$status" == 69 ]] || fail "$1: doctor exited $status: $output $stderr"
	assert_one_error_line
	[[ "$stderr" == *"$HOSTILE_URL"* ]] || fail "$1: $stderr"
	[[ "$stderr" != *"runtime error"* ]] || fail "$1: sanitizer: $stderr"
	[[ "$output" == *"error    $HOSTILE_URL: "*"of a shape Redis never gives; is it a Redis server, with nothing in between?"* ]] ||
		fail "$1: no error finding: $output"
	run --separate-stderr timeout -s KILL 60 "$RLOCK" -u "$HOSTILE_URL" --json doctor
	[[ "$status" == 69 ]] || fail "$1: doctor --json exited $status"
	printf '%s' "$output" | /usr/bin/python3 -c 'import json, sys; json.load(sys.stdin)' ||
		fail "$1: doctor --json: not JSON: $output"
	stop_all_bg
}

@test "bounded: doctor: PING, INFO, CONFIG GET and the probe script answered with wrong shapes are exit 69 naming the server, never a crash" {
	# PING answered +OK, and :1.
	doctor_bounded ok
	doctor_bounded int
	# INFO answered with an array, CONFIG GET with {1, 1}, the probe script
	# with {1, {{1}}}.
	doctor_bounded almost
	# A master with appendonly on, and CONFIG GET appendfsync {NAME, 1}:
	# this one crashed.
	doctor_bounded configint
	# EVAL of "return 1" answered +OK; the probe script answered {1}.
	doctor_bounded evalok
	doctor_bounded probe
}

@test "bounded: a history with extreme entry ids and times is shown, with no arithmetic past them" {
	# Two events of one run 2^64 ms apart, held -2^63 and 2^63-1 ms: the
	# check for copies of one event from several servers subtracted them.
	start_hostile logextreme
	run --separate-stderr timeout -s KILL 60 "$RLOCK" -u "$HOSTILE_URL" log job
	assert_equal "$status" 0
	refute_contains "runtime error" "$stderr"
	assert_equal "$stderr" ""
	assert_equal "$(printf '%s\n' "$output" | wc -l)" 2
	run --separate-stderr timeout -s KILL 60 "$RLOCK" -u "$HOSTILE_URL" --json log job
	assert_equal "$status" 0
	refute_contains "runtime error" "$stderr"
	printf '%s\n' "$output" | /usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    json.loads(line)'
}

@test "bounded: a server's error text is shown escaped: no OSC, screen clear, bell, line break or raw byte reaches stderr" {
	local what
	start_hostile evilerr
	for what in "status job" "-n acquire job" "status" "log job" \
		"release --token t job" "--json status job" "watch job"; do
		# shellcheck disable=SC2086
		bounded 69 10 "$MAX_KIB" $what
		assert_equal "$stderr" "rlock: $HOSTILE_URL: ERR \\x1b]0;pwned\\x07\\x1b[2J\\xff\\x85 (forged\\x0aline)"
	done
	run --separate-stderr timeout -s KILL 60 "$RLOCK" -u "$HOSTILE_URL" doctor
	assert_equal "$status" 69
	[[ "$output" == *'ERR \x1b]0;pwned\x07\x1b[2J\xff\x85 (forged\x0aline)'* ]] || fail "$output"
	[[ "$output$stderr" != *$'\e'* && "$output$stderr" != *$'\a'* ]] || fail "raw: $output$stderr"
}

@test "bounded: watch against a server whose XREAD answers 'nothing' at once, not after its BLOCK, does not spin" {
	local n
	start_hostile xreadnil
	# Interrupted after 3 s: a clean end (0). Reads paced at BLOCK (1 s)
	# make 3 or 4 of them; a loop on the answers, thousands.
	run --separate-stderr timeout --preserve-status -s INT 3 "$RLOCK" -u "$HOSTILE_URL" watch job
	assert_equal "$status" 0
	assert_equal "$stderr" ""
	n=$(grep -c '^XREAD$' "$BATS_TEST_TMPDIR/HOSTILE.out" || true)
	((n >= 1 && n <= 6)) || fail "$n XREADs in 3 s"
}
