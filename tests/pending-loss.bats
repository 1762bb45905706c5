#!/usr/bin/env bats
# pending-loss.bats: exec --pending when the reply that says "superseded"
# is lost (found by the model, src/lua/model: P_SUPER, one lost reply).
# The reply to the superseded waiter's attempt is cut (faultproxy.py, the
# test's own proxy: half of it forwarded, then the connection closed,
# after the real redis-server behind it ran the script): its rlock tries
# again, and that attempt must be answered "superseded" too.  Before, the
# first answer took the mark away: the retry found nothing of the waiter,
# listed it anew as the newest, and it superseded the newer waiter in
# turn and ran its command: the oldest deploy won.

load helpers
load exec-helpers
setup() { own_server_setup; }
teardown() {
	stop_all_proxies || true
	test_teardown
}

load fault-helpers

# until_waiters NAME TEXT: poll (up to 20 s) until the waiters hash of NAME
# has TEXT in one of its entries.
until_waiters() {
	local i
	for ((i = 0; i < 1000; i++)); do
		[[ "$(rcli HVALS "rlock:{$1}:waiters")" == *"$2"* ]] && return 0
		sleep 0.02
	done
	fail "no waiter entry of $1 has $2: $(rcli HVALS "rlock:{$1}:waiters")"
}

# until_one_ends PID PID: poll (up to 20 s) until one of them has ended.
until_one_ends() {
	local i
	for ((i = 0; i < 1000; i++)); do
		_proc_alive "$1" && _proc_alive "$2" || return 0
		sleep 0.02
	done
	fail "neither $1 nor $2 ended"
}

@test "pending-loss: a superseded waiter whose 'superseded' reply is cut is told again when it tries again: it exits 36 and never runs; the newer one runs" {
	local holder
	# The scripts cached on the server: each attempt is one EVALSHA.
	rlock exec -n --min-hold 0 warm -- true
	holder=$(rlock acquire -t 60s deploy)
	start_proxy P "$REDIS_PORT"
	bg_start OLD "$RLOCK" -u "$P_URL" --timeout 10s exec --pending 1 \
		-w 60s deploy -- sh -c 'echo old >>ran'
	until_waiters deploy "\"p\":\"$OLD\""
	# Its next attempt (BLPOP and the script, one chunk, within a
	# renewal of its lease) is held at the proxy, unforwarded.
	proxy P hold EVAL
	local i
	for ((i = 0; i < 500; i++)); do
		[[ "$(proxy_stat P holds)" == 1 ]] && break
		sleep 0.02
	done
	assert_equal "$(proxy_stat P holds)" 1
	# The newer waiter supersedes it: its entry becomes the mark.
	bg_start NEW "$RLOCK" exec --pending 1 -w 60s deploy -- \
		sh -c 'echo new >>ran'
	until_waiters deploy "\"sp\":\"$NEW\""
	# The held attempt goes on, finds the mark; its reply is cut.
	proxy P cut EVAL
	proxy P pass
	until_one_ends "$OLD" "$NEW"
	assert_equal "$(proxy_stat P cuts)" 1
	_proc_alive "$NEW" || fail "the newer waiter ended: $(cat "$BATS_TEST_TMPDIR/NEW.err")"
	bg_wait "$OLD" 1000 || fail "the superseded waiter still runs"
	assert_equal "$BG_STATUS" 36
	run cat "$BATS_TEST_TMPDIR/OLD.err"
	assert_output --partial "superseded by a newer waiter on $(hostname) pid $NEW (--pending 1)"
	rlock release --token "$holder" deploy
	bg_wait "$NEW" 20000 || fail "the newer waiter did not get the lock"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat ran)" "new"
	# Nothing left behind: no waiter, no mark.
	assert_equal "$(rcli EXISTS 'rlock:{deploy}:waiters' 'rlock:{deploy}')" 0
}
