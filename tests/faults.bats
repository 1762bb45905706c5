#!/usr/bin/env bats
# faults.bats: rlock against a real redis-server seen through faultproxy.py,
# a loopback proxy that blackholes, delays, resets or cuts the traffic on
# command: exec loses its lock in time when the network goes silent, rides
# out delays under the TTL and connection resets, a reply cut mid-way leaves
# nothing held, and the same in quorum mode with one proxy per server.
#
# Timing bounds are wide on purpose (the machine is small and shared): they
# tell "in time" from "a TTL too late" or "never", not milliseconds apart.

load helpers
load fault-helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { file_server_setup; }
teardown() {
	stop_all_proxies || true
	test_teardown
}

# track_stopper: have teardown stop stopper.sh if a test left it running.
track_stopper() {
	track_pid "$(cat pid 2>/dev/null)" stopper.sh
}

# The time (ms since the epoch) of rlock -v's "lock lost" line in FILE:
# "rlock: 2026-11-22T02:38:34.875Z lock lost: ...".
lost_line_ms() {
	local line when
	line=$(grep -m 1 'lock lost' "$1") || return 1
	when=${line#rlock: }
	when=${when%%Z *}
	date -u -d "${when/T/ }" +%s%3N
}

# ---------------------------------------------------------------------------
# One server
# ---------------------------------------------------------------------------

@test "faults: a blackhole after acquire makes exec send TERM, then KILL, before the lock can expire, and exit 75" {
	start_proxy P "$REDIS_PORT"
	stopper_script # ignores TERM: only the KILL after --kill-after ends it
	# (--kill-after 1500ms: the command's TERM trap forks date(1) to say
	# when it came, which at a load of 8 under ASan took over 500 ms: the
	# KILL then came first, and no time was written.)
	bg_start R "$RLOCK" -v -u "$P_URL" exec -t 2s --kill-after 1500ms job -- ./stopper.sh
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	track_stopper
	local child
	child=$(cat pid)
	# Let a heartbeat or two through (every 2/3 s by default).
	sleep 1
	proxy P blackhole
	local t0 expiry
	t0=$(reply_field at)
	# No extend gets through any more: this is when the lock expires on the
	# server (ms since the epoch, the server's clock, which is ours).
	expiry=$(rcli PEXPIRETIME 'rlock:{job}')
	((expiry > t0)) || fail "the lock was not held on the server when the blackhole began ($expiry)"

	bg_wait "$R" 15000 || fail "rlock still running 15 s after the blackhole"
	local t_exit ts lost
	t_exit=$(now_ms)
	assert_equal "$BG_STATUS" 75
	wait_file stopped 1000 || fail "the command never got SIGTERM"
	ts=$(cat stopped)
	# TTL 2 s, heartbeat 2/3 s: the last confirmed extend was sent at most
	# about 0.7 s before the blackhole, so the TERM comes between ~1.3 s and
	# ~2 s after it.
	assert_between $((ts - t0)) 1000 2500 "ms from the blackhole to the command's SIGTERM"
	# rlock decided the lock was lost before it expired on the server.  On
	# a busy machine rlock itself may not run at that moment (a CI run
	# under ASan saw it: "extending failed ... retrying" 21 ms before the
	# end): then its guard signals the command, and rlock says so after;
	# the command's SIGTERM is the decision, and it too must come first.
	if lost=$(lost_line_ms R.err); then
		((lost < expiry)) ||
			fail "rlock declared the loss at $lost, $((lost - expiry)) ms after the lock expired on the server ($expiry)"
	elif grep -q "its guard signalled the command" R.err; then
		((ts < expiry)) ||
			fail "the guard signalled the command at $ts, $((ts - expiry)) ms after the lock expired on the server ($expiry)"
	else
		fail "no 'lock lost' line in rlock -v's stderr, nor the guard's: $(cat R.err)"
	fi
	# The TERM was ignored: the KILL 1500 ms later ended the command, and
	# rlock exited once it had.
	assert_between $((t_exit - t0)) 2000 5000 "ms from the blackhole to rlock's exit"
	assert_between $((t_exit - ts)) 1400 3500 "ms from the SIGTERM to rlock's exit (--kill-after 1500ms)"
	wait_gone "$child" 2000 || fail "the command ($child) is still running"
	[[ ! -e finished ]] || fail "the command ran to its end"
	grep -q "was lost" R.err || fail "stderr does not say the lock was lost: $(cat R.err)"
	# Nothing released it (the network was gone); it expires on its own.
	wait_key_gone_on "$REDIS_PORT" 'rlock:{job}' 3000 ||
		fail "the lock is still on the server: PTTL $(rcli PTTL 'rlock:{job}')"
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "faults: 300 ms of delay each way under a 3 s TTL lets a 5 s command finish holding the lock, with no false loss" {
	start_proxy P "$REDIS_PORT"
	proxy P delay 300
	make_script holder.sh 'sleep 5
redis-cli -p "$REDIS_PORT" HKEYS "$RLOCK_KEY" > held
echo "$RLOCK_TOKEN" > token' >/dev/null
	run --separate-stderr rlock -v -u "$P_URL" exec -t 3s job -- ./holder.sh
	assert_equal "$status" 0
	[[ "$stderr" != *lost* ]] || fail "rlock reported a loss: $stderr"
	# The delay was really there: acquiring took at least one delayed round trip.
	local ms
	ms=$(grep -o 'acquired job in [0-9]*ms' <<<"$stderr" | grep -o '[0-9]*ms' | tr -d ms)
	assert_between "${ms:-0}" 550 3000 "ms to acquire through the delay"
	# After 5 s (well past the 3 s TTL) the command still held its own lock.
	assert_equal "$(cat held)" "$(cat token)"
	# And rlock released it at the end.
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "faults: connections reset mid-exec are reopened by the heartbeat and the command finishes holding the lock" {
	start_proxy P "$REDIS_PORT"
	make_script holder.sh 'echo ready > ready
sleep 4
redis-cli -p "$REDIS_PORT" HKEYS "$RLOCK_KEY" > held
echo "$RLOCK_TOKEN" > token' >/dev/null
	bg_start R "$RLOCK" -v -u "$P_URL" exec -t 2s job -- ./holder.sh
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	sleep 0.5
	local before closed
	before=$(proxy_stat P accepted)
	proxy P drop
	closed=$(reply_field closed)
	((closed >= 1)) || fail "there was no connection to reset: $PROXY_REPLY"
	sleep 1
	proxy P drop

	bg_wait "$R" 15000 || fail "rlock still running 15 s after the resets"
	assert_equal "$BG_STATUS" 0
	! grep -q lost R.err || fail "rlock reported a loss: $(cat R.err)"
	# The heartbeat came back through the proxy on a new connection ...
	local after
	after=$(proxy_stat P accepted)
	((after > before)) || fail "no new connection after the reset: $PROXY_REPLY"
	# ... and kept the lock alive for 4 s (twice the TTL) across both resets.
	assert_equal "$(cat held)" "$(cat token)"
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

# warm_scripts: one acquire and release on the real server, so that the
# scripts are cached there and the next acquire is a single EVALSHA whose
# reply actually comes from running the script.
warm_scripts() {
	local tok
	tok=$(rlock -u "$REDIS_URL" acquire job) || return 1
	rlock -u "$REDIS_URL" release --token "$tok" job || return 1
	[[ -n "$(rcli GET 'rlock:{job}:fence')" ]]
}

# assert_nothing_held NAME: neither the lock nor its metadata is on the
# real server (the fence counter may stay: it never expires).
assert_nothing_held() {
	local keys
	keys=$(rcli KEYS '*' | tr '\n' ' ')
	[[ "$(rcli EXISTS "rlock:{$1}")" == 0 && "$(rcli EXISTS "rlock:{$1}")" == 0 ]] ||
		fail "lock '$1' is held on the server after the failure; keys: $keys; PTTL $(rcli PTTL "rlock:{$1}")"
}

@test "faults: a reply cut mid-way on acquire exits 69 with one line and leaves nothing held on the server" {
	local f0
	start_proxy P "$REDIS_PORT"
	warm_scripts || fail "could not warm the scripts up"
	f0=$(rcli GET 'rlock:{job}:fence')
	proxy P cut EVAL
	run --separate-stderr rlock -u "$P_URL" acquire job
	assert_equal "$(proxy_stat P cuts)" 1
	# The script ran on the server (the fence moved on) before its reply was cut.
	(($(rcli GET 'rlock:{job}:fence') > f0)) || fail "the fence did not move on"
	assert_equal "$status" 69
	assert_one_error_line
	assert_equal "$output" ""
	assert_nothing_held job
}

@test "faults: a reply cut mid-way on exec's acquire exits 69 without running the command and leaves nothing held" {
	start_proxy P "$REDIS_PORT"
	local f0
	warm_scripts || fail "could not warm the scripts up"
	f0=$(rcli GET 'rlock:{job}:fence')
	proxy P cut EVAL
	run --separate-stderr rlock -u "$P_URL" exec job -- touch ran
	assert_equal "$(proxy_stat P cuts)" 1
	(($(rcli GET 'rlock:{job}:fence') > f0)) || fail "the fence did not move on"
	assert_equal "$status" 69
	assert_one_error_line
	[[ ! -e ran ]] || fail "the command ran without the lock"
	assert_nothing_held job
}

@test "faults: acquire through a blackhole with --timeout 500ms exits 69 within a few seconds and holds nothing" {
	start_proxy P "$REDIS_PORT"
	proxy P blackhole
	local t0 t1
	t0=$(now_ms)
	run --separate-stderr rlock -u "$P_URL" --timeout 500ms acquire job
	t1=$(now_ms)
	assert_equal "$status" 69
	assert_one_error_line
	assert_equal "$output" ""
	assert_between $((t1 - t0)) 400 3000 "ms until acquire gave up"
	assert_equal "$(rcli DBSIZE)" 0
}

# ---------------------------------------------------------------------------
# Quorum: three servers, each behind its own proxy
# ---------------------------------------------------------------------------

# start_proxied_quorum: servers Q1..Q3, proxies P1..P3 in front of them;
# QP_ARGS holds "-u URL" for each of the three proxies.
start_proxied_quorum() {
	start_quorum 3 || return 1
	start_proxy P1 "$Q1_PORT" || return 1
	start_proxy P2 "$Q2_PORT" || return 1
	start_proxy P3 "$Q3_PORT" || return 1
	QP_ARGS=(-u "$P1_URL" -u "$P2_URL" -u "$P3_URL")
}

@test "faults: in quorum mode one blackholed server of three does not stop exec, which finishes holding a majority" {
	start_proxied_quorum
	make_script holder.sh 'echo ready > ready
sleep 4
n=0
for p in "$Q1_PORT" "$Q2_PORT" "$Q3_PORT"; do
	[ "$(redis-cli -p "$p" HKEYS "$RLOCK_KEY")" = "$RLOCK_TOKEN" ] && n=$((n + 1))
done
echo $n > held' >/dev/null
	bg_start R "$RLOCK" "${QP_ARGS[@]}" --timeout 500ms exec -t 2s job -- ./holder.sh
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	sleep 0.5
	proxy P1 blackhole

	bg_wait "$R" 15000 || fail "rlock still running 15 s after the blackhole"
	assert_equal "$BG_STATUS" 0
	! grep -q lost R.err || fail "rlock reported a loss: $(cat R.err)"
	# 4 s in (twice the TTL), the two reachable servers still had the lock.
	assert_between "$(cat held)" 2 3 "servers holding the lock at the end"
	# Released where it could be.
	assert_equal "$(nodes_with_key 'rlock:{job}' 2 3)" 0
}

@test "faults: in quorum mode one blackholed server of three does not stop exec with the default --timeout either" {
	# The same with nothing tuned: --timeout (2 s) is not below the TTL, so an
	# extend round cannot wait for the silent server and still be in time;
	# a majority answers within milliseconds, and that must be enough.
	start_proxied_quorum
	make_script holder.sh 'echo ready > ready
sleep 4
n=0
for p in "$Q1_PORT" "$Q2_PORT" "$Q3_PORT"; do
	[ "$(redis-cli -p "$p" HKEYS "$RLOCK_KEY")" = "$RLOCK_TOKEN" ] && n=$((n + 1))
done
echo $n > held' >/dev/null
	bg_start R "$RLOCK" "${QP_ARGS[@]}" -v exec -t 2s job -- ./holder.sh
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	sleep 0.5
	proxy P1 blackhole

	bg_wait "$R" 15000 || fail "rlock still running 15 s after the blackhole"
	! grep -q lost R.err || fail "rlock reported a loss (exit $BG_STATUS): $(cat R.err)"
	assert_equal "$BG_STATUS" 0
	assert_between "$(cat held)" 2 3 "servers holding the lock at the end"
}

@test "faults: in quorum mode two blackholed servers of three make exec stop the command within the TTL and exit 75" {
	start_proxied_quorum
	stopper_script 3
	bg_start R "$RLOCK" "${QP_ARGS[@]}" --timeout 500ms exec -t 2s job -- ./stopper.sh
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	track_stopper
	sleep 0.8
	proxy P1 blackhole
	proxy P2 blackhole
	local t0 ts
	t0=$(reply_field at) # the majority is gone from here on

	bg_wait "$R" 15000 || fail "rlock still running 15 s after the blackholes"
	assert_equal "$BG_STATUS" 75
	wait_file stopped 1000 || fail "the command never got SIGTERM"
	ts=$(cat stopped)
	assert_between $((ts - t0)) 700 2500 "ms from losing the majority to the command's SIGTERM"
	[[ ! -e finished ]] || fail "the command ran to its end"
	grep -q "was lost" R.err || fail "stderr does not say the lock was lost: $(cat R.err)"
	# It expires on every server shortly after.
	local i
	for i in 1 2 3; do
		local portv="Q${i}_PORT"
		wait_key_gone_on "${!portv}" 'rlock:{job}' 3000 ||
			fail "the lock is still on server $i: PTTL $(qcli "$i" PTTL 'rlock:{job}')"
	done
}
