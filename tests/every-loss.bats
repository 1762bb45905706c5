#!/usr/bin/env bats
# every-loss.bats: exec --every when a reply is lost.  The reply to an
# acquire that recorded the slot's start is cut (faultproxy.py, the test's
# own proxy: half of it forwarded, then the connection closed, after the
# real redis-server behind it ran the script): with -n too, the run tries
# again within --timeout, finds the start its own, and runs; the other
# machines, refused by that start, leave the slot to it, so the slot has
# its one run, not none.

load helpers
setup() { own_server_setup; }
teardown() {
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
