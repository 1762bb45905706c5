#!/usr/bin/env bats
# exec-leftovers.bats: nothing the command started runs on without the lock.
# A forced stop (--max-runtime, a SIGTERM sent to rlock, a lost lock) stops
# every process the command started -- its group and those that left it with
# setsid -- before the lock goes; processes left running by a normal exit are
# reported and, as --leftovers says, waited for (the default, as flock's
# inherited descriptor), stopped, or left running; and a SIGKILLed rlock's
# guard gives the lock back once the command is dead.

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() {
	file_server_setup
	# The leftover: it ignores SIGTERM (so does the sleep it runs), says
	# its pid, and runs until the file "go" appears (at most 20 s).  If it
	# lives that long it writes "stamp": "held" if the lock was still the
	# run's then, "free" if not.  It is one process, or two while its
	# sleep runs: rlock counts both.  Its stdout is not bats's pipe, which
	# \`run\` would read until the leftover ends.
	make_script left.sh 'exec >/dev/null 2>>left.err
trap "" TERM
echo $$ > left.pid
i=0
while [ $i -lt 200 ] && [ ! -e go ]; do sleep 0.1; i=$((i + 1)); done
if [ "$(redis-cli -p "$REDIS_PORT" HKEYS "$RLOCK_KEY")" = "$RLOCK_TOKEN" ]; then
	echo held > stamp
else
	echo free > stamp
fi' >/dev/null
}
teardown() {
	if [[ -s left.pid ]]; then track_pid "$(cat left.pid)" left.sh; fi
	test_teardown
}

# wait_leftover: the leftover has started (its pid file is written).
wait_leftover() {
	wait_file left.pid 10000 || fail "the leftover did not start"
	track_pid "$(cat left.pid)" left.sh
}

# assert_leftover_dead: the leftover is gone (so it can write no stamp).
assert_leftover_dead() {
	if _proc_alive "$(cat left.pid)"; then
		touch go
		fail "the leftover still runs after rlock returned"
	fi
	[[ ! -e stamp ]] || fail "the leftover ran on: $(cat stamp)"
}

# wait_stderr FILE REGEX: FILE (rlock's stderr) matches REGEX (grep -E;
# bounded, 10 s).
wait_stderr() {
	local i
	for ((i = 0; i < 500; i++)); do
		grep -qE -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.02
	done
	fail "$1 does not say '$2': $(cat "$1" 2>/dev/null)"
}

# ------------------------------------------------------------ forced stops

max_runtime_stop() {
	run --separate-stderr rlock exec "$@" --max-runtime 1s --kill-after 1s \
		mr -c './left.sh & exec sleep 30'
	assert_equal "$status" 124
	wait_leftover
	assert_leftover_dead
	assert_lock_free mr
}

@test "exec-leftovers: a TERM-ignoring leftover is killed after --max-runtime before the release" {
	max_runtime_stop
}

@test "exec-leftovers: a TERM-ignoring leftover is killed after --max-runtime before the release, --foreground" {
	max_runtime_stop --foreground
}

@test "exec-leftovers: a setsid leftover is killed after --max-runtime before the release" {
	run --separate-stderr rlock exec --max-runtime 1s --kill-after 1s \
		mr -c 'setsid ./left.sh & exec sleep 30'
	assert_equal "$status" 124
	wait_leftover
	assert_leftover_dead
	assert_lock_free mr
}

sigterm_stop() {
	bg_start R "$RLOCK" exec "$@" --kill-after 1s job -c './left.sh & sleep 30; exit 0'
	wait_leftover
	wait_held job || fail "the lock is not held"
	kill -TERM "$R"
	bg_wait "$R" 15000 || fail "rlock did not end"
	assert_equal "$BG_STATUS" 143
	assert_leftover_dead
	assert_lock_free job
}

@test "exec-leftovers: a TERM-ignoring leftover is killed after a SIGTERM to rlock before the release" {
	sigterm_stop
}

@test "exec-leftovers: a TERM-ignoring leftover is killed after a SIGTERM to rlock before the release, --foreground" {
	sigterm_stop --foreground
}

@test "exec-leftovers: the main command ignoring SIGTERM too is killed --kill-after later: 137" {
	bg_start R "$RLOCK" exec --kill-after 1s job -c 'trap "" TERM; ./left.sh & while :; do sleep 0.1; done'
	wait_leftover
	kill -TERM "$R"
	bg_wait "$R" 15000 || fail "rlock did not end"
	assert_equal "$BG_STATUS" 137
	assert_leftover_dead
	assert_lock_free job
}

loss_stop() {
	local how=$1
	shift
	run --separate-stderr rlock exec "$@" -t 2s --kill-after 1s job \
		-c "$how"' ./left.sh & redis-cli -p "$REDIS_PORT" DEL "$RLOCK_KEY" >/dev/null; exec sleep 30'
	assert_equal "$status" 75
	wait_leftover
	assert_leftover_dead
}

@test "exec-leftovers: a setsid leftover is killed after a loss before rlock exits" {
	loss_stop setsid
}

@test "exec-leftovers: a TERM-ignoring leftover is killed after a loss before rlock exits, --foreground" {
	loss_stop "" --foreground
}

# ------------------------------------------------------ after a normal exit

wait_for_leftover() {
	bg_start R "$RLOCK" exec "$@" job -c './left.sh & exit 0'
	wait_leftover
	local pid
	pid=$(cat left.pid)
	wait_stderr R.err "left [12] process(es)? running \(pids? $pid[ )]"
	# The lock is still this run's while the leftover runs: busy for others.
	run rlock exec -n job -- true
	assert_equal "$status" 1
	_proc_alive "$R" || fail "rlock returned before its leftover ended"
	touch go
	bg_wait "$R" 15000 || fail "rlock did not end after its leftover"
	assert_equal "$BG_STATUS" 0
	wait_file stamp 5000 || fail "the leftover did not finish"
	assert_equal "$(cat stamp)" held
	assert_lock_free job
	run rlock log job
	assert_success
	[[ "$output" =~ "leftovers by ".*"left "[12]" process".*" running (pid".*"$pid".*"waited for" ]] ||
		fail "log: $output"
}

@test "exec-leftovers: by default rlock keeps the lock until a leftover ends, and says so" {
	wait_for_leftover
}

@test "exec-leftovers: by default rlock keeps the lock until a leftover ends, --foreground" {
	wait_for_leftover --foreground
}

@test "exec-leftovers: --leftovers wait keeps the lock for a setsid leftover too" {
	bg_start R "$RLOCK" exec --leftovers wait job -c 'setsid ./left.sh & exit 0'
	wait_leftover
	wait_stderr R.err "left [12] process(es)? running"
	run rlock exec -n job -- true
	assert_equal "$status" 1
	touch go
	bg_wait "$R" 15000 || fail "rlock did not end after its leftover"
	assert_equal "$BG_STATUS" 0
	wait_file stamp 5000 || fail "the leftover did not finish"
	assert_equal "$(cat stamp)" held
}

kill_leftover() {
	run --separate-stderr rlock exec "$@" --leftovers kill --kill-after 1s job \
		-c './left.sh & while [ ! -s left.pid ]; do sleep 0.02; done; exit 3'
	assert_equal "$status" 3
	wait_leftover
	assert_leftover_dead
	[[ "$stderr" =~ "left "[12]" process".*"$(cat left.pid)".*"--leftovers kill" ]] || fail "stderr: $stderr"
	assert_lock_free job
	run rlock log job
	[[ "$output" =~ "left "[12]" process".*"stopped with SIGTERM, then SIGKILL" ]] || fail "log: $output"
}

@test "exec-leftovers: --leftovers kill stops a leftover before the release, keeping the command's status" {
	kill_leftover
}

@test "exec-leftovers: --leftovers kill stops a leftover before the release, --foreground" {
	kill_leftover --foreground
}

@test "exec-leftovers: --leftovers kill stops a setsid leftover too" {
	run --separate-stderr rlock exec --leftovers kill --kill-after 1s job \
		-c 'setsid ./left.sh & while [ ! -s left.pid ]; do sleep 0.02; done; exit 0'
	assert_success
	wait_leftover
	assert_leftover_dead
}

leave_leftover() {
	run --separate-stderr rlock exec "$@" --leftovers leave job \
		-c './left.sh & while [ ! -s left.pid ]; do sleep 0.02; done; exit 0'
	assert_success
	wait_leftover
	_proc_alive "$(cat left.pid)" || fail "the leftover was stopped"
	[[ "$stderr" =~ "left "[12]" process".*"$(cat left.pid)".*"--leftovers leave" ]] || fail "stderr: $stderr"
	assert_lock_free job
	touch go
	wait_file stamp 5000 || fail "the leftover did not finish"
	assert_equal "$(cat stamp)" free
}

@test "exec-leftovers: --leftovers leave releases at once and leaves the leftover running, said on stderr" {
	leave_leftover
}

@test "exec-leftovers: --leftovers leave releases at once, --foreground" {
	leave_leftover --foreground
}

@test "exec-leftovers: a command that leaves nothing behind says nothing" {
	run --separate-stderr rlock exec job -c 'sleep 0.1 & wait'
	assert_success
	assert_equal "$stderr" ""
}

@test "exec-leftovers: --leftovers with an unknown value is a usage error" {
	run rlock exec --leftovers stay job -- true
	assert_equal "$status" 64
	[[ "$output" == *"--leftovers"* ]] || fail "output: $output"
}

# --------------------------------------------------------- a killed rlock

@test "exec-leftovers: a SIGKILLed rlock's guard releases its lock: a waiter starts within 2 s, not at the 60 s TTL" {
	bg_start R "$RLOCK" exec -t 60s job -c 'echo $$ > cmd.pid; exec sleep 60'
	wait_file cmd.pid 10000 || fail "the command did not start"
	wait_held job || fail "the lock is not held"
	# The guard is forked a few milliseconds after the command.
	local i
	for ((i = 0; i < 250; i++)); do
		pgrep -P "$R" -x rlock-guard >/dev/null && break
		sleep 0.02
	done
	bg_start W "$RLOCK" exec -w 30s job -- sh -c 'echo started > waiter'
	wait_waiting || fail "the waiter is not waiting"
	local t0
	t0=$(now_ms)
	kill -KILL "$R"
	bg_wait "$W" 10000 || fail "the waiter did not get the lock"
	assert_equal "$BG_STATUS" 0
	assert_between $(($(now_ms) - t0)) 0 2000 waited_ms
	wait_gone "$(cat cmd.pid)" 5000 || fail "the command outlived rlock"
	run rlock log job
	[[ "$output" == *"rlock was killed"* ]] || fail "log: $output"
}

# kill_rlock_when_waited: start `rlock exec ARGS...` in the background as R,
# with a waiter W behind it, SIGKILL R once the guard runs and W waits, and
# check that W gets the lock within 2 s (the TTL is 60 s).
kill_rlock_when_waited() {
	bg_start R "$RLOCK" exec -t 60s "$@"
	wait_file cmd.pid 10000 || fail "the command did not start: $(cat R.err)"
	wait_held job || fail "the lock is not held"
	local i
	for ((i = 0; i < 250; i++)); do
		pgrep -P "$R" -x rlock-guard >/dev/null && break
		sleep 0.02
	done
	bg_start W "$RLOCK" exec -w 30s job -- sh -c 'echo started > waiter'
	wait_waiting || fail "the waiter is not waiting"
	local t0
	t0=$(now_ms)
	kill -KILL "$R"
	bg_wait "$W" 10000 || fail "the waiter did not get the lock"
	assert_equal "$BG_STATUS" 0
	assert_between $(($(now_ms) - t0)) 0 2000 waited_ms
}

# With --foreground there is no guard (the command shares rlock's process
# group, which the guard could not hold): a SIGKILLed rlock's lock expires
# at its TTL, as the man page says; so no --foreground twin for these.

@test "exec-leftovers: a SIGKILLed rlock waiting for a setsid leftover: the guard kills it, then releases" {
	kill_rlock_when_waited job -c 'setsid ./left.sh & echo $$ > cmd.pid; while [ ! -s left.pid ]; do sleep 0.02; done; exit 0'
	wait_leftover
	# The guard knew it (rlock had found it) and killed it before the release.
	assert_leftover_dead
}

@test "exec-leftovers: a SIGKILLed rlock's guard releases with rlock's password from RLOCK_PASSWORD" {
	local pw=s3cret-$$
	start_redis_auth_as AUTH "$pw"
	export RLOCK_URL="redis://127.0.0.1:$AUTH_PORT" RLOCK_PASSWORD=$pw
	REDIS_PORT=$AUTH_PORT RCLI_AUTH=$pw
	kill_rlock_when_waited job -c 'echo $$ > cmd.pid; exec sleep 60'
	run rlock log job
	[[ "$output" == *"rlock was killed"* ]] || fail "log: $output"
}

@test "exec-leftovers: a SIGKILLed rlock's guard releases with rlock's --password-file" {
	local pw=s3cret-$$
	start_redis_auth_as AUTH "$pw"
	(umask 077 && echo "$pw" >pw.txt)
	# The waiter's password; the release never sees the environment's.
	export RLOCK_URL="redis://127.0.0.1:$AUTH_PORT" RLOCK_PASSWORD=$pw
	REDIS_PORT=$AUTH_PORT RCLI_AUTH=$pw
	kill_rlock_when_waited --password-file pw.txt job -c 'echo $$ > cmd.pid; exec sleep 60'
}

@test "exec-leftovers: a SIGKILLed rlock's guard releases through rlock's Unix socket, database and prefix from the environment" {
	# The release runs without RLOCK_*: each reaches it through the guard.
	export RLOCK_URL="unix://$REDIS_SOCK?db=3" RLOCK_PREFIX=sock:
	bg_start R "$RLOCK" exec -t 60s job -c 'echo $$ > cmd.pid; exec sleep 60'
	wait_file cmd.pid 10000 || fail "the command did not start: $(cat R.err)"
	local i
	for ((i = 0; i < 250; i++)); do
		[[ "$(rcli -n 3 EXISTS 'sock:{job}')" == 1 ]] && break
		sleep 0.02
	done
	assert_equal "$(rcli -n 3 EXISTS 'sock:{job}')" 1
	for ((i = 0; i < 250; i++)); do
		pgrep -P "$R" -x rlock-guard >/dev/null && break
		sleep 0.02
	done
	pgrep -P "$R" -x rlock-guard >/dev/null || fail "no guard"
	kill -KILL "$R"
	# Well before the 60 s TTL (bounded: 10 s).
	for ((i = 0; i < 200; i++)); do
		[[ "$(rcli -n 3 EXISTS 'sock:{job}')" == 0 ]] && break
		sleep 0.05
	done
	assert_equal "$(rcli -n 3 EXISTS 'sock:{job}')" 0
	wait_gone "$(cat cmd.pid)" 5000 || fail "the command outlived rlock"
	run rlock log job
	[[ "$output" == *"rlock was killed"* ]] || fail "log: $output"
}

@test "exec-leftovers: leftovers = leave in the config file, and --leftovers on the command line wins" {
	printf 'leftovers = leave\n' >rlock.conf
	run --separate-stderr rlock exec --config rlock.conf job \
		-c './left.sh & while [ ! -s left.pid ]; do sleep 0.02; done; exit 0'
	assert_success
	wait_leftover
	[[ "$stderr" == *"--leftovers leave"* ]] || fail "stderr: $stderr"
	assert_lock_free job
	touch go
	wait_file stamp 5000 || fail "the leftover did not finish"
	rm -f left.pid stamp go
	run --separate-stderr rlock exec --config rlock.conf --leftovers kill --kill-after 500ms job \
		-c './left.sh & while [ ! -s left.pid ]; do sleep 0.02; done; exit 0'
	assert_success
	wait_leftover
	assert_leftover_dead
}
