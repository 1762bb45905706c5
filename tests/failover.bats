#!/usr/bin/env bats
# failover.bats: a wait rides through.  With -w DUR, a server that cannot
# be reached, closes the connection, does not answer in time or is being
# failed over by Sentinel is tried again, with backoff, until the lock is
# granted or DUR runs out; -n still fails at once; a wait without an end
# rides through only a server that answered it first.

load helpers
load exec-helpers
load dist-helpers

setup() {
	require_rlock
	unset RLOCK_TOKEN RLOCK_PREFIX RLOCK_PASSWORD REDISCLI_AUTH RLOCK_CONFIG RLOCK_URL
	cd "$BATS_TEST_TMPDIR"
}
teardown() {
	# A frozen server is thawed before it is stopped.
	[[ -n ${FROZEN:-} ]] && kill -CONT "$FROZEN" 2>/dev/null
	exec_teardown
}

# until_exists VAR KEY: poll (at most 10 s) until server VAR has KEY.
until_exists() {
	local i
	for ((i = 0; i < 500; i++)); do
		[[ $(rcli_as "$1" EXISTS "$2") == 1 ]] && return 0
		sleep 0.02
	done
	fail "$2 never appeared"
}

@test "failover: -w rides through a server that is down at the start and comes up" {
	local port
	port=$(free_port)
	bg_start W "$RLOCK" -v -u "redis://127.0.0.1:$port" acquire -w 20s -t 30s job
	# It is trying (and saying so with -v) before the server exists.
	local i
	for ((i = 0; i < 500; i++)); do
		grep -q 'connection refused; trying again' "$BATS_TEST_TMPDIR/W.err" && break
		sleep 0.02
	done
	grep -q 'connection refused; trying again' "$BATS_TEST_TMPDIR/W.err"
	start_redis_as LATE --port "$port" || skip "the port was taken meanwhile"
	bg_wait "$W" 20000
	assert_equal "$BG_STATUS" 0
	assert_equal "$(redis-cli -p "$port" HKEYS 'rlock:{job}')" "$(cat "$BATS_TEST_TMPDIR/W.out")"
}

@test "failover: -w ends with 69 and the last error when the server never comes back; -n fails at once" {
	local port t0
	port=$(free_port)
	t0=$(now_ms)
	run --separate-stderr rlock -u "redis://127.0.0.1:$port" acquire -w 1s job
	assert_equal "$status" 69
	assert_one_error_line
	[[ "$stderr" == *refused* ]]
	[ $(($(now_ms) - t0)) -ge 900 ]
	t0=$(now_ms)
	run --separate-stderr rlock -u "redis://127.0.0.1:$port" acquire -n job
	assert_equal "$status" 69
	[ $(($(now_ms) - t0)) -lt 900 ]
}

@test "failover: a frozen server during -w: the waiter gets the lock once it thaws" {
	start_redis_as FZ
	local t
	t=$(rlock -u "$FZ_URL" acquire -t 2s job)
	bg_start W "$RLOCK" -v -u "$FZ_URL" --timeout 500ms acquire -w 30s -t 30s job
	until_waiting 1 rlock -u "$FZ_URL" status job
	kill -STOP "$FZ_PID"
	FROZEN=$FZ_PID
	# Frozen until the waiter has timed out on it twice.
	local i
	for ((i = 0; i < 1000; i++)); do
		(( $(grep -c 'trying again' "$BATS_TEST_TMPDIR/W.err") >= 2 )) && break
		sleep 0.02
	done
	(( $(grep -c 'trying again' "$BATS_TEST_TMPDIR/W.err") >= 2 ))
	kill -CONT "$FZ_PID"
	FROZEN=
	bg_wait "$W" 30000
	assert_equal "$BG_STATUS" 0
	assert_equal "$(rcli_as FZ HKEYS 'rlock:{job}')" "$(cat "$BATS_TEST_TMPDIR/W.out")"
	[[ $(cat "$BATS_TEST_TMPDIR/W.out") != "$t" ]]
}

@test "failover: a server restarted under a waiter without an end: the wait goes on and gets the lock" {
	start_redis_as RS
	local port=$RS_PORT
	rlock -u "$RS_URL" acquire -t 60s job >/dev/null
	bg_start W "$RLOCK" -u "$RS_URL" acquire -t 30s job
	until_waiting 1 rlock -u "$RS_URL" status job
	# The server goes (and the lock with it: no persistence), and comes back.
	kill -KILL "$RS_PID"
	wait_gone "$RS_PID" 5000
	start_redis_as RS2 --port "$port" || skip "the port was taken meanwhile"
	bg_wait "$W" 20000
	assert_equal "$BG_STATUS" 0
	assert_equal "$(redis-cli -p "$port" HKEYS 'rlock:{job}')" "$(cat "$BATS_TEST_TMPDIR/W.out")"
}

@test "failover: a Sentinel failover with the master SIGKILLed during -w: the waiter gets the lock on the new master" {
	start_sentinel_group
	local t
	t=$(rlock -u "$SENT_URL" --wait-replicas 1 acquire -t 3s job)
	bg_start W "$RLOCK" -u "$SENT_URL" exec -w 40s -t 10s job -- sh -c 'echo "$RLOCK_FENCE"'
	until_waiting 1 rlock -u "$SENT_URL" status job
	kill -KILL "$SM_PID"
	bg_wait "$W" 45000
	assert_equal "$BG_STATUS" 0
	# It ran on the promoted replica.
	[[ $(cat "$BATS_TEST_TMPDIR/W.out") =~ ^[0-9]+$ ]]
	assert_equal "$(rcli_as SR ROLE | head -n 1)" master
}

# A master demoted under a holder (a failover, or REPLICAOF by hand) may
# have no copy of the lock for a while: its data is flushed for the sync
# with the new master, which may never have had it.  It answers as a
# replica; it is no witness that the lock is gone.
@test "failover: a server demoted to a replica is no witness of a loss: extend and release exit 69 (READONLY), exec's heartbeat does not call the lock lost" {
	start_redis_as A
	start_redis_as B
	local a="redis://127.0.0.1:$A_PORT" tok ex
	run --separate-stderr rlock -u "$a" acquire -t 30s job
	assert_success
	tok=$output
	# A becomes a replica of B, which has no lock: A's copy is flushed.
	rcli_as A REPLICAOF 127.0.0.1 "$B_PORT" >/dev/null
	wait_role A slave 5000 || fail "A never became a replica"
	local i
	for ((i = 0; i < 250; i++)); do
		[[ $(rcli_as A EXISTS 'rlock:{job}') == 0 ]] && break
		sleep 0.02
	done
	assert_equal "$(rcli_as A EXISTS 'rlock:{job}')" 0
	run --separate-stderr rlock -u "$a" extend --token "$tok" job
	assert_equal "$status" 69
	[[ $stderr == *READONLY* ]] || fail "extend: $stderr"
	[[ $stderr != *"not the holder"* ]] || fail "extend: $stderr"
	run --separate-stderr rlock -u "$a" release --token "$tok" job
	assert_equal "$status" 69
	[[ $stderr == *READONLY* ]] || fail "release: $stderr"

	# exec: its heartbeat meets the demoted server; it is told nothing
	# of a loss it cannot know, and holds on until its validity ends.
	rcli_as A REPLICAOF NO ONE >/dev/null
	wait_role A master 5000 || fail "A never became a master again"
	bg_start ex "$RLOCK" -u "$a" -v exec -t 2s --heartbeat 200ms job2 -- sleep 30
	for ((i = 0; i < 250; i++)); do
		[[ $(rcli_as A EXISTS 'rlock:{job2}') == 1 ]] && break
		sleep 0.02
	done
	rcli_as A REPLICAOF 127.0.0.1 "$B_PORT" >/dev/null
	bg_wait "$ex" 15000 || fail "exec did not end"
	assert_equal "$BG_STATUS" 75
	grep -q READONLY ex.err || fail "exec: $(cat ex.err)"
	! grep -q "key is gone" ex.err || fail "exec took a replica's empty copy for a loss: $(cat ex.err)"
}
