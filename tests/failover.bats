#!/usr/bin/env bats
# failover.bats: a wait rides through.  With -w DUR, a server that cannot
# be reached, closes the connection, does not answer in time or is being
# failed over by Sentinel is tried again, with backoff, until the lock is
# granted or DUR runs out; -n still fails at once; a wait without an end
# rides through only a server that answered it first.

load helpers
load exec-helpers
load dist-helpers
load fault-helpers

setup() {
	require_rlock
	unset RLOCK_TOKEN RLOCK_PREFIX RLOCK_PASSWORD REDISCLI_AUTH RLOCK_CONFIG RLOCK_URL
	cd "$BATS_TEST_TMPDIR"
}
teardown() {
	# A frozen server is thawed before it is stopped.
	[[ -n ${FROZEN:-} ]] && kill -CONT "$FROZEN" 2>/dev/null
	stop_all_proxies 2>/dev/null || true
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

# A scheduled run's outcome, written at its release, lost in a failover:
# the replica had the start (--wait-replicas 1 acknowledged it), but its
# link to the master (through the test's proxy) was cut when the release
# wrote the outcome, which --wait-replicas says; the master is then
# SIGKILLed, the link's proxy stopped (what it held never arrives), and
# the replica promoted by the sentinel.  What status
# and doctor show after is what rlock-schedules(7) says: the run shows
# as running while its lock lives on the new master, then as ended
# without a release; the slot keeps its one start (a machine firing later
# in it is refused), but with --retry-failed the forgotten success is run
# again; the next slot's start counts the lost run as a failed one (a
# failing alert, though it succeeded) and the one after clears it.
@test "failover: a --every run's outcome lost in a failover: --wait-replicas said so; status, doctor and the next starts do as rlock-schedules(7) says" {
	start_redis_as SM --repl-diskless-sync yes --repl-diskless-sync-delay 0
	start_proxy P "$SM_PORT"
	start_redis_as SR --replicaof 127.0.0.1 "$P_PORT"
	wait_replica_online SM 10000 || fail "the replica never came online"
	start_sentinel_as SS mm "$SM_PORT"
	wait_sentinel_ready SS mm "$SR_PORT" 10000 || fail "the sentinel never saw the replica"
	local s="redis-sentinel://127.0.0.1:$SS_PORT/mm" i
	# --timeout bounds each WAIT: long enough for the replica's
	# acknowledgement of the start on a loaded machine under the
	# sanitizers (500 ms was not, in a CI run beside another), short
	# enough that the outcome's, blackholed, leaves most of the slot.
	bg_start A "$RLOCK" -u "$s" --timeout 1500ms exec --every 20s -t 2s --wait-replicas 1 job -- \
		sh -c 'touch started.A; until [ -e go ]; do sleep 0.02; done'
	bg_start B "$RLOCK" -u "$s" --timeout 1500ms exec --every 20s -t 2s --retry-failed --wait-replicas 1 job2 -- \
		sh -c 'touch started.B; until [ -e go ]; do sleep 0.02; done; touch ran.B'
	# Both started: their starts acknowledged by the replica.
	for ((i = 0; i < 500; i++)); do
		[[ -e started.A && -e started.B ]] && break
		sleep 0.02
	done
	[[ -e started.A && -e started.B ]] || fail "not started: $(cat A.err B.err)"
	assert_equal "$(rcli_as SR EXISTS 'rlock:{job}' 'rlock:{job2}')" 2
	local c
	c=$(rcli_as SR HGET 'rlock:{job}:every' c)
	proxy P blackhole
	touch go
	bg_wait "$A" 10000 || fail "A did not end"
	assert_equal "$BG_STATUS" 0
	bg_wait "$B" 10000 || fail "B did not end"
	assert_equal "$BG_STATUS" 0
	grep -qE "job: fewer than 1 replica acknowledged the run's outcome within (1500ms|1\.5s) \(--wait-replicas\): a failover now would forget it" A.err ||
		fail "A: $(cat A.err)"
	grep -q "job2: fewer than 1 replica acknowledged the run's outcome" B.err ||
		fail "B: $(cat B.err)"
	assert_equal "$(rcli_as SM HGET 'rlock:{job}:every' x)" exit:0
	# The master dies, and what the link held with it.
	kill -KILL "$SM_PID"
	kill "$P_PID"
	wait_master_change SS mm "$SM_PORT" 20000 >/dev/null || fail "no failover"
	wait_role SR master 10000 || fail "the replica was not promoted"
	assert_equal "$(rcli_as SR HGET 'rlock:{job}:every' x)" ""
	# Running while the lock it never released lives (its TTL), then
	# ended without a release.
	for ((i = 0; i < 250; i++)); do
		run rlock -u "$s" status job
		[[ $output == *"ended without a release"* ]] && break
		[[ $output == *running* ]] || fail "neither running nor ended: $output"
		sleep 0.02
	done
	assert_output --partial "ended without a release"
	refute_output --partial "failed in a row"
	run rlock -u "$s" --json status job
	[[ $output == *'"last_outcome":"ended-without-release"'* ]] || fail "$output"
	[[ $output == *'"failures":0'* ]] || fail "$output"
	# Not yet a failure: doctor has nothing to say of it.
	run rlock -u "$s" doctor
	assert_line --regexp "schedules: 2 schedules, none overdue or failing$"
	# Later in the slot: job's one start is kept (refused); job2's
	# success, forgotten, is run again (--retry-failed).
	(($(rcli_as SR TIME | head -n 1) * 1000 < c + 9000)) ||
		fail "the failover took most of the slot"
	run rlock -u "$s" exec -n --every 20s job -- touch ran.again
	assert_equal "$status" 1
	[[ ! -e ran.again ]] || fail "job ran twice in its slot"
	rm -f ran.B
	run rlock -u "$s" exec -w 5s --every 20s --retry-failed job2 -- touch ran.B
	assert_success
	[[ -e ran.B ]] || fail "job2's forgotten success was not run again"
	# The next slot's start counts the lost run as failed.
	for ((i = 0; i < 1500; i++)); do
		(($(rcli_as SR TIME | head -n 1) * 1000 > c + 10500)) && break
		sleep 0.01
	done
	# (What status and doctor say while that start's run goes on.)
	run rlock -u "$s" exec -n --every 20s job -- sh -c '"$0" -u "$1" --json status job >st.json
		"$0" -u "$1" doctor >doctor.out; true' "$RLOCK" "$s"
	assert_success
	grep -q '"failures":1' st.json || fail "$(cat st.json)"
	grep -q '"failing":true' st.json || fail "$(cat st.json)"
	grep -q 'schedules: job failed its last 1 run' doctor.out || fail "$(cat doctor.out)"
	# Its success clears it.
	run rlock -u "$s" --json status job
	[[ $output == *'"failures":0'* ]] || fail "after a success: $output"
}
