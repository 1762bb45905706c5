#!/usr/bin/env bats
# fifo.bats: with --fifo, waiters get the lock strictly in the order they
# came; one that dies or gives up loses its place (at once when it gives
# up, within a bound when it dies), and status shows each one's place.

load helpers
load fault-helpers
setup() { own_server_setup; }
teardown() {
	stop_all_proxies
	test_teardown
}

# in_line N: poll (up to 10 s) until the queue holds N waiters on every
# server the test uses (SERVERS: names for rcli_as; empty: the default).
in_line() {
	local n=$1 i got s
	for s in "${SERVERS[@]:-}"; do
		for ((i = 0; i < 500; i++)); do
			if [[ -z "$s" ]]; then
				got=$(rcli ZCARD 'rlock:{job}:queue')
			else
				got=$(rcli_as "$s" ZCARD 'rlock:{job}:queue')
			fi
			[[ "$got" == "$n" ]] && break
			sleep 0.02
		done
		[[ "$got" == "$n" ]] || fail "the line on ${s:-the server} holds $got waiters, not $n"
	done
}

# start_waiters N [RLOCK-OPTS...]: N exec --fifo waiters, one after another,
# each in line (on every server) before the next starts; each appends its
# number to order.log.
start_waiters() {
	local n=$1 i
	shift
	for ((i = 1; i <= n; i++)); do
		bg_start "W$i" "$RLOCK" "$@" exec --fifo -w 60s job -- \
			sh -c "echo $i >>'$BATS_TEST_TMPDIR/order.log'"
		in_line "$i"
	done
}

# wait_waiters N: every one of W1..WN exits 0 (60 s in all at most).
wait_waiters() {
	local i pidv
	for ((i = 1; i <= $1; i++)); do
		pidv="W$i"
		bg_wait "${!pidv}" 60000 || fail "waiter $i is still waiting"
		assert_equal "$BG_STATUS" 0
	done
}

@test "fifo: twenty waiters get the lock in exactly the order they came" {
	local holder
	holder=$(rlock acquire -t 60s job)
	SERVERS=()
	start_waiters 20
	rlock release --token "$holder" job
	wait_waiters 20
	assert_equal "$(tr '\n' ' ' <order.log)" "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 "
	assert_equal "$(rcli EXISTS 'rlock:{job}:queue')" 0
}

@test "fifo: status shows each waiter's place, in text and JSON" {
	rlock acquire -t 60s job >/dev/null
	SERVERS=()
	start_waiters 3
	run rlock status job
	assert_line --index 1 --regexp "^  waiting #1: .* pid $W1 "
	assert_line --index 2 --regexp "^  waiting #2: .* pid $W2 "
	assert_line --index 3 --regexp "^  waiting #3: .* pid $W3 "
	rlock --json status job | json_check '[w["place"] for w in d["waiters"]] == [1, 2, 3] and [w["pid"] for w in d["waiters"]] == ['"$W1, $W2, $W3"']'
}

@test "fifo: a waiter that gives up leaves the line at once" {
	rlock acquire -t 60s job >/dev/null
	run rlock acquire --fifo -w 300ms job
	assert_failure 1
	assert_equal "$(rcli ZCARD 'rlock:{job}:queue')" 0
	assert_equal "$(rcli HLEN 'rlock:{job}:waiters')" 0
}

@test "fifo: a waiter killed in the middle of the line holds it up no longer than its place lasts" {
	local holder t0
	# The bound: the holder's time left at the dead one's last attempt
	# (at most 2 s), --timeout (500 ms) and a second.
	holder=$(rlock acquire -t 2s job)
	SERVERS=()
	start_waiters 3 --timeout 500ms
	kill -KILL "$W2"
	bg_wait "$W2" 5000
	rlock release --token "$holder" job
	t0=$(now_ms)
	bg_wait "$W1" 20000 || fail "the first waiter is still waiting"
	bg_wait "$W3" 20000 || fail "the third waiter is stuck behind the dead one"
	assert_equal "$BG_STATUS" 0
	assert_between $(($(now_ms) - t0)) 0 10000 ms_until_the_third_ran
	assert_equal "$(tr '\n' ' ' <order.log)" "1 3 "
}

@test "fifo: quorum mode refuses --fifo with 64, before anything is sent" {
	start_quorum 3
	quorum_urls
	run --separate-stderr rlock "${URLS[@]}" acquire --fifo -w 1s job
	assert_equal "$status" 64
	[[ "$stderr" == *"--fifo needs a single server"* ]] || fail "stderr: $stderr"
	run --separate-stderr rlock "${URLS[@]}" exec --fifo job -- true
	assert_equal "$status" 64
	assert_equal "$(rcli_as Q1 EXISTS 'rlock:{job}')" 0
}

# until_ms T: poll the clock until it reads T (ms since the epoch), bounded
# by T itself: a moment of the scenario (a fault held for a while), not a
# wait for state.
until_ms() {
	local i
	for ((i = 0; i < 1000; i++)); do
		(($(now_ms) >= $1)) && return 0
		sleep 0.01
	done
}

# entry_of PID: the waiters' entry (JSON) of the waiter with that pid.
entry_of() {
	local line
	while read -r line; do
		[[ "$line" == *"\"p\":\"$1\""* ]] && { echo "$line"; return 0; }
	done < <(rcli HVALS 'rlock:{job}:waiters')
	return 0
}

# Issue 48, break 1: a waiter's place is the server's, fixed at its first
# attempt.  F's first attempt reaches the server late (a far server, a TLS
# handshake, a wait riding through an outage: here a proxy holds it 3.5 s),
# after reader R's, which began 3 s after F.  F's next attempt used to move
# its start back by its own count of the wait (from when it sent that
# attempt, before the BLPOP of 2 s it went out behind): to 2 s after F
# began, before R's start, while F kept its later place in the --fifo line.
# Once the lock was free, F deferred to R by the line and R to F by the
# start, for ever: thousands of scripts a second until -w ran out, and
# both exit 1.
@test "fifo: a --fifo writer whose first attempt came late and a reader behind it never defer to each other (break 1)" {
	local base calls t0 i first now
	rlock acquire -t 60s job >/dev/null
	start_proxy P "$REDIS_PORT"
	proxy P blackhole
	bg_start F "$RLOCK" -u "$P_URL" --timeout 10s exec --fifo -w 20s job -- \
		sh -c "echo F >>'$BATS_TEST_TMPDIR/order.log'"
	for ((i = 0; i < 500; i++)); do
		[[ "$(proxy_stat P accepted)" -ge 1 ]] && break
		sleep 0.02
	done
	t0=$(now_ms)
	until_ms $((t0 + 3000))
	bg_start R "$RLOCK" exec --shared -w 20s job -- \
		sh -c "echo R >>'$BATS_TEST_TMPDIR/order.log'"
	until_listed job 1
	until_ms $((t0 + 3500))
	proxy P pass
	# F's first attempt comes through, and its next one (the lock still
	# held) 2 s later.
	until_listed job 2
	first=$(entry_of "$F")
	[[ -n "$first" ]] || fail "F is not listed"
	for ((i = 0; i < 500; i++)); do
		now=$(entry_of "$F")
		[[ "$now" != "$first" ]] && break
		sleep 0.02
	done
	[[ "$now" != "$first" ]] || fail "F made no second attempt: $now"
	# The holder's lock ends by expiring (no release: no hand-over, no
	# wake): each waiter finds it free at its next attempt.
	base=$(cmd_calls evalsha eval)
	rcli PEXPIRE 'rlock:{job}' 1 >/dev/null
	bg_wait "$R" 25000 || fail "the reader is still waiting"
	assert_equal "$BG_STATUS" 0
	bg_wait "$F" 25000 || fail "the --fifo writer is still waiting"
	assert_equal "$BG_STATUS" 0
	# The reader was placed first, and went first.
	assert_equal "$(tr '\n' ' ' <order.log)" "R F "
	# No loop on a free lock: a handful of attempts each, not thousands.
	calls=$(($(cmd_calls evalsha eval) - base))
	[[ "$calls" -lt 100 ]] || fail "the server ran $calls scripts"
}
