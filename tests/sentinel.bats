#!/usr/bin/env bats
# sentinel.bats: redis-sentinel:// URLs (a master, a replica and one
# sentinel): locking through the sentinel, unknown masters and unreachable
# sentinels, following a failover (new locks, a lock taken before it, exec
# running across it), and --wait-replicas with and without a replica;
# sentinels that do not help (frozen, stale, refusing: issue 50) cost at
# most a short stagger each and are named in the message when none helps.

load helpers
load exec-helpers
load dist-helpers

# The file's group: SM (master), SR (replica), SS (sentinel), SENT_URL.
# The failover tests start a group of their own, which shadows this one for
# that test only and is stopped in its teardown.
setup_file() { start_sentinel_group; }
teardown_file() { stop_all_redis; }

setup() {
	require_rlock
	unset RLOCK_TOKEN RLOCK_PREFIX RLOCK_PASSWORD REDISCLI_AUTH RLOCK_CONFIG RLOCK_URL
	rcli_as SM FLUSHALL >/dev/null
	# The flush reaches the replica too (bounded wait).
	local i
	for ((i = 0; i < 100; i++)); do
		[[ "$(rcli_as SR DBSIZE)" == 0 ]] && break
		sleep 0.02
	done
	cd "$BATS_TEST_TMPDIR"
}

teardown() { thaw_all; exec_teardown; }

# failover: ask the sentinel SS for a failover of "mm" and wait (bounded)
# until it names the replica SR as the master and SR says it is a master.
failover() {
	local old newp
	old=$(sentinel_master_port SS mm)
	assert_equal "$old" "$SM_PORT"
	run scli SS SENTINEL FAILOVER mm
	assert_output OK
	newp=$(wait_master_change SS mm "$old" 15000) || fail "the sentinel never switched masters"
	assert_equal "$newp" "$SR_PORT"
	wait_role SR master 10000 || fail "the replica was never promoted"
}

# ---------------------------------------------------------------------------
# Through the sentinel
# ---------------------------------------------------------------------------

# until_replicated VAR TOKEN: poll (at most 10 s) until server VAR, a
# replica, has TOKEN's hold of job.
until_replicated() {
	local i
	for ((i = 0; i < 500; i++)); do
		[[ $(rcli_as "$1" HKEYS 'rlock:{job}') == "$2" ]] && return 0
		sleep 0.02
	done
	fail "the replica never got the lock"
}

@test "sentinel: acquire, status and release work through a redis-sentinel URL" {
	run --separate-stderr rlock -u "$SENT_URL" acquire job
	assert_success
	assert_output --regexp "$UUID_RE"
	local tok=$output
	assert_equal "$(rcli_as SM HKEYS 'rlock:{job}')" "$tok"

	run --separate-stderr rlock -u "$SENT_URL" status job
	assert_success
	assert_output --regexp '^job: held by .+ fence [0-9]+$'

	run --separate-stderr rlock -u "$SENT_URL" release --token "$tok" job
	assert_success
	assert_equal "$(rcli_as SM EXISTS 'rlock:{job}')" 0

	run --separate-stderr rlock -u "$SENT_URL" status job
	assert_equal "$status" 1
}

@test "sentinel: a dead sentinel listed first is skipped for a live one" {
	local dead
	dead=$(free_port)
	run --separate-stderr rlock -u "redis-sentinel://127.0.0.1:$dead,127.0.0.1:$SS_PORT/mm" acquire job
	assert_success
	assert_equal "$(rcli_as SM HKEYS 'rlock:{job}')" "$output"
}

@test "sentinel: a master name the sentinel does not know exits 69 saying so" {
	run --separate-stderr rlock -u "redis-sentinel://127.0.0.1:$SS_PORT/nosuch" acquire job
	assert_equal "$status" 69
	assert_equal "$output" ""
	assert_one_error_line
	[[ "$stderr" == *"does not know master 'nosuch'"* ]] || fail "unexpected message: $stderr"
	assert_equal "$(rcli_as SM DBSIZE)" 0
}

@test "sentinel: no reachable sentinel exits 69 with one line on stderr" {
	local d1 d2
	d1=$(free_port)
	d2=$(free_port)
	run --separate-stderr rlock --connect-timeout 1s -u "redis-sentinel://127.0.0.1:$d1,127.0.0.1:$d2/mm" acquire job
	assert_equal "$status" 69
	assert_equal "$output" ""
	assert_one_error_line
	assert_equal "$(rcli_as SM DBSIZE)" 0
}

# ---------------------------------------------------------------------------
# Sentinels that do not help (issue 50)
# ---------------------------------------------------------------------------

# timed VAR CMD...: run CMD (bats's run, stderr apart), its wall time in ms
# into VAR.
timed() {
	local var=$1 t0
	shift
	t0=$(now_ms)
	run --separate-stderr "$@"
	printf -v "$var" '%s' $(($(now_ms) - t0))
}

@test "sentinel: a frozen sentinel listed first costs a short stagger, not --connect-timeout: acquire -n, status, release and acquire -w" {
	start_frozen_sentinel_as FZ
	local url="redis-sentinel://127.0.0.1:$FZ_PORT,127.0.0.1:$SS_PORT/mm" el tok
	timed el rlock -u "$url" acquire -n job
	assert_success
	tok=$output
	assert_equal "$(rcli_as SM HKEYS 'rlock:{job}')" "$tok"
	assert_between "$el" 0 1000 "acquire -n took (ms)"
	timed el rlock -u "$url" status job
	assert_success
	assert_between "$el" 0 1000 "status took (ms)"
	timed el rlock -u "$url" release --token "$tok" job
	assert_success
	assert_between "$el" 0 1000 "release took (ms)"
	timed el rlock -u "$url" acquire -w 8s job
	assert_success
	assert_between "$el" 0 1000 "acquire -w took (ms)"
}

@test "sentinel: exec's heartbeat follows a failover with the first sentinel frozen" {
	start_sentinel_group
	# Frozen once the command runs: the heartbeat's lookups meet it.
	start_bare_sentinel_as FZ
	local url="redis-sentinel://127.0.0.1:$FZ_PORT,127.0.0.1:$SS_PORT/mm" ex tok
	make_script child.sh 'echo "$RLOCK_TOKEN" > token
i=0
while [ ! -e stop ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
echo done > finished' >/dev/null
	# As in the failover test above: a TTL of 3s, a heartbeat of 250ms.
	bg_start ex "$RLOCK" -u "$url" -v exec -t 3s --heartbeat 250ms job -- ./child.sh
	wait_file token 5000 || fail "the command never started: $(cat ex.err)"
	tok=$(cat token)
	# Not before the replica has the lock: a failover within the first
	# second of its sync (before its first REPLCONF ACK, the master
	# streams nothing to it) loses the lock for real.
	until_replicated SR "$tok"
	freeze_var FZ
	failover
	rcli_as SM REPLICAOF 127.0.0.1 "$SR_PORT" >/dev/null
	wait_role SM slave 5000 || fail "the old master was not demoted"
	# Longer than the TTL: only extends on the new master keep it there.
	sleep 3.5
	assert_equal "$(rcli_as SR HKEYS 'rlock:{job}')" "$tok"
	_proc_alive "$ex" || fail "exec ended early: $(cat ex.err)"
	touch stop
	bg_wait "$ex" 10000 || fail "exec did not finish"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat finished)" done
}

@test "sentinel: a stale sentinel that names a replica sends rlock to the next sentinel" {
	start_stale_sentinel_as ST mm || fail "no stale sentinel"
	run --separate-stderr rlock -u "redis-sentinel://127.0.0.1:$ST_PORT,127.0.0.1:$SS_PORT/mm" acquire -n job
	assert_success
	assert_equal "$(rcli_as SM HKEYS 'rlock:{job}')" "$output"
}

@test "sentinel: when no sentinel helps, the one line names each sentinel, as a sentinel URL, and what it did" {
	start_stale_sentinel_as ST mm || fail "no stale sentinel"
	start_bare_sentinel_as BS
	local dead
	dead=$(free_port)
	run --separate-stderr rlock -u "redis-sentinel://127.0.0.1:$dead,127.0.0.1:$ST_PORT,127.0.0.1:$BS_PORT/mm" acquire -n job
	assert_equal "$status" 69
	assert_equal "$output" ""
	assert_one_error_line
	[[ "$stderr" == *"redis-sentinel://127.0.0.1:$dead"*"refused"* ]] ||
		fail "the refusing sentinel is not named: $stderr"
	[[ "$stderr" == *"redis-sentinel://127.0.0.1:$ST_PORT"*"not a master"* ]] ||
		fail "the stale sentinel is not named: $stderr"
	[[ "$stderr" == *"redis-sentinel://127.0.0.1:$BS_PORT"*"does not know master 'mm'"* ]] ||
		fail "the sentinel without the master is not named: $stderr"
	[[ "$stderr" != *"redis://"* ]] || fail "a sentinel written as redis://: $stderr"
	assert_equal "$(rcli_as SM DBSIZE)" 0
}

@test "sentinel: an ACL'd sentinel given its password but no --sentinel-user is told to name the user" {
	start_bare_sentinel_as AS
	scli AS ACL SETUSER sen on '>sen-pw' '+@all' >/dev/null
	scli AS ACL SETUSER default off resetpass >/dev/null
	printf 'sen-pw\n' >spw
	chmod 600 spw
	run --separate-stderr rlock -u "redis-sentinel://127.0.0.1:$AS_PORT/mm" --sentinel-password-file spw acquire -n job
	assert_equal "$status" 69
	assert_one_error_line
	[[ "$stderr" == *"--sentinel-user"* ]] || fail "no --sentinel-user remedy: $stderr"
	[[ "$stderr" != *sen-pw* ]] || fail "the password shows"
}

@test "sentinel: a master name with a slash (redis-sentinel://.../m/2) is a usage error" {
	run --separate-stderr rlock -u "redis-sentinel://127.0.0.1:$SS_PORT/mm/2" acquire -n job
	assert_equal "$status" 64
	assert_equal "$output" ""
	assert_one_error_line
	[[ "$stderr" == *"?db="* ]] || fail "no remedy naming ?db=: $stderr"
	assert_equal "$(rcli_as SM DBSIZE)" 0
}

# ---------------------------------------------------------------------------
# --wait-replicas
# ---------------------------------------------------------------------------

@test "sentinel: --wait-replicas 1 succeeds with the replica present, and the replica has the lock at once" {
	run --separate-stderr rlock -u "$SENT_URL" --wait-replicas 1 acquire job
	assert_success
	local tok=$output
	# WAIT returned, so the replica already has it: no waiting here.
	assert_equal "$(rcli_as SR HKEYS 'rlock:{job}')" "$tok"
	run --separate-stderr rlock -u "$SENT_URL" --wait-replicas 1 extend --token "$tok" job
	assert_success
	run --separate-stderr rlock -u "$SENT_URL" --wait-replicas 1 exec job2 -- true
	assert_success
}

@test "sentinel: --wait-replicas 1 on a master with no replica exits 69 within about one --timeout and leaves no key" {
	start_redis_as LONE
	local t0 t1
	t0=$(now_ms)
	run --separate-stderr rlock -u "$LONE_URL" --wait-replicas 1 --timeout 500ms acquire job
	t1=$(now_ms)
	assert_equal "$status" 69
	assert_equal "$output" ""
	assert_one_error_line
	[[ "$stderr" == *"--wait-replicas"* && "$stderr" == *"released"* ]] ||
		fail "unexpected message: $stderr"
	assert_between $((t1 - t0)) 0 1900 "acquire took (ms)"
	assert_equal "$(rcli_as LONE EXISTS 'rlock:{job}')" 0
	assert_equal "$(rcli_as LONE EXISTS 'rlock:{job}')" 0
}

# ---------------------------------------------------------------------------
# Failover (each test with a group of its own)
# ---------------------------------------------------------------------------

@test "sentinel: after a failover a new lock is taken on the new master" {
	start_sentinel_group
	failover
	run --separate-stderr rlock -u "$SENT_URL" acquire job
	assert_success
	assert_equal "$(rcli_as SR HKEYS 'rlock:{job}')" "$output"
}

@test "sentinel: a lock taken before a failover is still held after it and shows in status through the sentinel" {
	start_sentinel_group
	run --separate-stderr rlock -u "$SENT_URL" --wait-replicas 1 acquire job
	assert_success
	local tok=$output
	failover
	run --separate-stderr rlock -u "$SENT_URL" status job
	assert_success
	assert_output --regexp '^job: held by .+ fence [0-9]+$'
	# Nobody else can take it on the new master.
	run --separate-stderr rlock -u "$SENT_URL" acquire -n job
	assert_equal "$status" 1
	run --separate-stderr rlock -u "$SENT_URL" release --token "$tok" job
	assert_success
	assert_equal "$(rcli_as SR EXISTS 'rlock:{job}')" 0
}

@test "sentinel: exec keeps its lock across a failover and the heartbeat moves to the new master" {
	start_sentinel_group
	# The command runs until told to stop (at most 20 s).
	make_script child.sh 'echo "$RLOCK_TOKEN" > token
i=0
while [ ! -e stop ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
echo done > finished' >/dev/null
	local ex
	# The copy on the replica expires one TTL after the last extend it got
	# before the promotion; the sentinel needs about a second to switch, and
	# the first extend after that must reach the new master in time: a TTL
	# of 3s with a heartbeat of 250ms leaves over a second to spare (with
	# -t 2s and the default heartbeat of 667ms it is a race).
	bg_start ex "$RLOCK" -u "$SENT_URL" -v exec -t 3s --heartbeat 250ms job -- ./child.sh
	wait_file token 5000 || fail "the command never started: $(cat ex.err)"
	local tok
	tok=$(cat token)
	until_replicated SR "$tok"
	failover
	# The sentinel demotes the old master only after some seconds; do what
	# it will do now, so that the old master answers READONLY and rlock has
	# to ask the sentinel again.
	rcli_as SM REPLICAOF 127.0.0.1 "$SR_PORT" >/dev/null
	wait_role SM slave 5000 || fail "the old master was not demoted"
	# Longer than the TTL: only extends on the new master keep it there.
	sleep 3.5
	assert_equal "$(rcli_as SR HKEYS 'rlock:{job}')" "$tok"
	_proc_alive "$ex" || fail "exec ended early: $(cat ex.err)"
	# (The old master now answers READONLY: the key can only still be on
	# the new master, a TTL later, if the extends found their way there.)
	touch stop
	bg_wait "$ex" 10000 || fail "exec did not finish"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat finished)" done
	# And the release, like the extends, goes to the new master.
	[[ "$(rcli_as SR EXISTS 'rlock:{job}')" == 0 ]] ||
		fail "the lock was left held on the new master: $(grep -i release ex.err)"
}

@test "sentinel: doctor warns that redis-sentinel:// is plain TCP, with the remedy rediss-sentinel://" {
	run --separate-stderr rlock -u "$SENT_URL" doctor
	assert_equal "$status" 1
	[[ "$output" == *"warning  $SENT_URL: transport: redis-sentinel:// is plain TCP to the sentinels and to the master they name (use rediss-sentinel://"* ]] ||
		fail "no transport warning: $output"
	# With a password (an ACL user on the master), it says the password
	# goes in clear.
	rcli_as SM ACL SETUSER doc on '>doc-pw' '~*' '+@all' >/dev/null
	run --separate-stderr rlock -u "redis-sentinel://doc:doc-pw@127.0.0.1:$SS_PORT/mm" doctor
	[[ "$output" == *"transport: redis-sentinel:// is plain TCP to the sentinels and to the master they name: the password goes in clear"* ]] ||
		fail "no password in the transport warning: $output"
	[[ "$output$stderr" != *doc-pw* ]] || fail "the password shows"
	rcli_as SM ACL DELUSER doc >/dev/null
}
