#!/usr/bin/env bats
# every-loss.bats: exec --every when a reply is lost.  The reply to an
# acquire that recorded the slot's start is cut (faultproxy.py, the test's
# own proxy: half of it forwarded, then the connection closed, after the
# real redis-server behind it ran the script): with -n too, the run tries
# again within --timeout, finds the start its own, and runs; the other
# machines, refused by that start, leave the slot to it, so the slot has
# its one run, not none.  And --wait-replicas covers the run's outcome
# written at its release, as it covers its start: a replica that did not
# acknowledge it is said.

load helpers
setup() { own_server_setup; }
teardown() {
	[[ -z "${REP_PID:-}" ]] || kill -CONT "$REP_PID" 2>/dev/null || true
	stop_all_proxies || true
	test_teardown
}

load fault-helpers

# The acquire and release scripts cached on the real server, so that the
# acquire through the proxy is one EVALSHA that runs the script.
warm() {
	rlock -u "$RLOCK_URL" exec --every 1h warm -- true
}

@test "every-loss: -n --every whose acquire reply is cut tries its own run again and runs it; the fleet's other machines are refused: one run in the slot" {
	warm || fail "cannot warm the scripts"
	start_proxy P "$REDIS_PORT"
	proxy P cut EVAL
	run --separate-stderr rlock -u "$P_URL" exec -n --every 20s job -- sh -c 'echo A >>runs'
	proxy P stats
	assert_equal "$(reply_field cuts)" 1
	assert_equal "$status" 0
	assert_equal "$(cat runs 2>/dev/null | tr '\n' ' ')" "A "
	# B and C, later in the slot: refused.
	run rlock -u "$RLOCK_URL" exec -n --every 20s job -- sh -c 'echo B >>runs'
	assert_equal "$status" 1
	run rlock -u "$RLOCK_URL" exec -n --every 20s job -- sh -c 'echo C >>runs'
	assert_equal "$status" 1
	assert_equal "$(cat runs | tr '\n' ' ')" "A "
	assert_equal "$(rcli HGET 'rlock:{job}:every' x | tr -d '\r')" "exit:0"
}

@test "every-loss: -n --every whose server stays away gives up within --timeout, and gives its start back" {
	warm || fail "cannot warm the scripts"
	start_proxy P "$REDIS_PORT"
	proxy P blackhole
	local t0=${EPOCHREALTIME/./}
	run --separate-stderr rlock -u "$P_URL" --timeout 500ms exec -n --every 20s job -- touch ran
	local took=$(((${EPOCHREALTIME/./} - t0) / 1000))
	assert_equal "$status" 69
	[[ ! -e ran ]] || fail "the command ran"
	# One round trip and one more --timeout to try again in, and the
	# give-back's: well under 5 s.
	((took < 5000)) || fail "took $took ms"
	proxy P pass
	# Nothing was recorded: the next machine runs.
	run rlock -u "$RLOCK_URL" exec -n --every 20s job -- touch ran
	assert_success
	[[ -e ran ]] || fail "the next machine did not run"
}

@test "every-loss: --wait-replicas covers the run's outcome: a replica that does not acknowledge the release's write is said, the run's status kept" {
	# The replica's first sync at once (not after the default 5 s delay).
	rcli CONFIG SET repl-diskless-sync yes >/dev/null
	rcli CONFIG SET repl-diskless-sync-delay 0 >/dev/null
	start_redis_as REP --replicaof 127.0.0.1 "$REDIS_PORT"
	wait_replica_up REDIS REP
	# Acknowledged: the replica has the outcome when rlock exits.
	run --separate-stderr rlock --timeout 2s exec --every 20s --wait-replicas 1 job -- true
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(redis-cli -p "$REP_PORT" HGET 'rlock:{job}:every' x | tr -d '\r')" "exit:0"
	# The replica frozen while the command runs: its start was
	# acknowledged, its outcome is not.
	run --separate-stderr rlock --timeout 500ms exec --every 20s --wait-replicas 1 job2 -- \
		sh -c "kill -STOP $REP_PID; exit 0"
	kill -CONT "$REP_PID"
	assert_success
	[[ "$stderr" == *"job2: fewer than 1 replica acknowledged the run's outcome within 500ms (--wait-replicas): a failover now would forget it"* ]] ||
		fail "not said: $stderr"
}
