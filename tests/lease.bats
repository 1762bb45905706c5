#!/usr/bin/env bats
# lease.bats: a waiter's entry -- its place in a --fifo line, its line in
# status, an exclusive waiter's mark that keeps new readers out -- is a
# lease of its own, renewed by the waiter's blocking read's time-out: it
# lapses within seconds of the waiter's death, however long the holder's
# TTL.  And how long a waiter has waited is counted from its first
# attempt, however often its entry is renewed.

load helpers
setup() { own_server_setup; }
teardown() { test_teardown; }

# The lease: renewed every 2 s, it lasts that, --timeout (2 s by default)
# and a second; the tests allow twice that, for a loaded machine, which is
# still far below the holder's 60 s.
LEASE_BOUND_MS=10000

# waiters_of NAME [URL-ARGS...]: how many waiters status --json lists.
waiters_of() {
	local name=$1
	shift
	rlock "$@" --json status "$name" | json_eval 'len(d.get("waiters", []))'
}

# until_waiters NAME N [URL-ARGS...]: poll (up to 20 s) until status lists
# N waiters of NAME; prints how long that took, in ms.
until_waiters() {
	local name=$1 want=$2 i n t0
	shift 2
	t0=$(now_ms)
	for ((i = 0; i < 1000; i++)); do
		n=$(waiters_of "$name" "$@")
		[[ "$n" == "$want" ]] && { echo $(($(now_ms) - t0)); return 0; }
		sleep 0.02
	done
	echo "status still lists $n waiters of $name, not $want" >&2
	return 1
}

@test "lease: a SIGKILLed waiter leaves status within seconds, though the holder's TTL is 60 s" {
	local ms
	rlock acquire -t 60s job >/dev/null
	bg_start W "$RLOCK" acquire -w 2m job
	until_waiters job 1 >/dev/null
	kill -KILL "$W"
	bg_wait "$W" 5000
	ms=$(until_waiters job 0) || fail "the dead waiter is still listed"
	assert_between "$ms" 0 "$LEASE_BOUND_MS" ms_until_dropped
}

@test "lease: a waiter SIGKILLed in the middle of a --fifo line holds it up for seconds, not the holder's TTL" {
	local holder t0
	holder=$(rlock acquire -t 60s job)
	bg_start W1 "$RLOCK" acquire --fifo -w 2m -t 30s job
	until_waiters job 1 >/dev/null
	bg_start W2 "$RLOCK" exec --fifo -w 2m -t 30s job -- true
	until_waiters job 2 >/dev/null
	kill -KILL "$W1"
	bg_wait "$W1" 5000
	rlock release --token "$holder" job
	t0=$(now_ms)
	bg_wait "$W2" 30000 || fail "the second waiter is stuck behind the dead one"
	assert_equal "$BG_STATUS" 0
	assert_between $(($(now_ms) - t0)) 0 "$LEASE_BOUND_MS" ms_until_the_second_ran
}

@test "lease: a dead exclusive waiter keeps new readers of a --shared lock out for seconds only" {
	local t0
	rlock acquire --shared -t 60s data >/dev/null
	bg_start X "$RLOCK" acquire -w 2m data
	until_waiters data 1 >/dev/null
	kill -KILL "$X"
	bg_wait "$X" 5000
	t0=$(now_ms)
	run --separate-stderr rlock acquire --shared -w 30s data
	assert_success
	assert_between $(($(now_ms) - t0)) 0 "$LEASE_BOUND_MS" ms_until_a_new_reader_got_in
}

@test "lease: in quorum mode a SIGKILLed waiter leaves status within seconds too" {
	local ms
	start_quorum 3
	quorum_urls
	rlock "${URLS[@]}" acquire -t 60s job >/dev/null
	bg_start W "$RLOCK" "${URLS[@]}" acquire -w 2m job
	until_waiters job 1 "${URLS[@]}" >/dev/null
	kill -KILL "$W"
	bg_wait "$W" 5000
	ms=$(until_waiters job 0 "${URLS[@]}") || fail "the dead waiter is still listed"
	assert_between "$ms" 0 "$LEASE_BOUND_MS" ms_until_dropped
}

@test "lease: a live waiter stays listed across renewals, longer than a lease" {
	rlock acquire -t 60s job >/dev/null
	bg_start W "$RLOCK" acquire -w 2m job
	until_waiters job 1 >/dev/null
	# Listed at every look, for longer than a lapsed lease would be.
	local t0 n
	t0=$(now_ms)
	while (($(now_ms) - t0 < LEASE_BOUND_MS)); do
		n=$(waiters_of job)
		assert_equal "$n" 1
		sleep 0.2
	done
}

# waited_ms NAME: how long status says the first waiter of NAME has waited.
waited_ms() {
	rlock --json status "$1" | json_eval 'd["waiters"][0]["waiting_ms"]'
}

@test "lease: status and the history count a waiter's wait from its first attempt, across renewals" {
	local t0 shown elapsed
	rlock acquire -t 9s wt >/dev/null
	# A TTL of 4 s: its attempts block 2 s at most, so its entry is
	# rewritten every 2 s even before leases.
	bg_start W "$RLOCK" exec -t 4s -w 1m wt -- true
	until_waiters wt 1 >/dev/null
	# From here on the waiter has waited at least as long as the test has.
	t0=$(now_ms)
	while (($(now_ms) - t0 < 6000)); do sleep 0.2; done
	shown=$(waited_ms wt)
	elapsed=$(($(now_ms) - t0))
	((shown >= elapsed - 1000)) || fail "status shows ${shown} ms waited after at least ${elapsed} ms"
	bg_wait "$W" 30000 || fail "the waiter never got the lock"
	assert_equal "$BG_STATUS" 0
	# The newest 'acquired' event is the waiter's.
	shown=$(rlock log --json wt | grep -m1 '"event":"acquired"' |
		json_eval 'd["waited_ms"]')
	((shown >= 6000 - 1000)) || fail "the history says ${shown} ms waited, after at least 6000 ms"
}
