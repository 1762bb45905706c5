#!/usr/bin/env bats
# exec-loss.bats: what exec does when the lock is lost while the command
# runs: the key deleted or taken over, Redis frozen (SIGSTOP) or restarted
# empty. The command gets --on-lost, then SIGKILL after --kill-after, its
# whole process group goes, and rlock exits 75 with one line on stderr.

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { file_server_setup; }
teardown() {
	# A frozen server must never outlive its test frozen.
	if [[ -n "${FZ_PID:-}" ]]; then kill -CONT "$FZ_PID" 2>/dev/null || true; fi
	test_teardown
}

# loss_script NAME SIG: a child that traps SIG (writing its name to the file
# "got" and exiting 3), says it is ready, deletes its own lock key, and then
# runs for at most 20 s before writing "finished". Its own stderr (the shell
# reporting its killed sleep) goes to child.err, leaving rlock's alone.
loss_script() {
	make_script "$1" "exec 2>>child.err
trap 'echo $2 > got; exit 3' $2
echo ready > ready
redis-cli -p \"\$REDIS_PORT\" DEL \"\$RLOCK_KEY\" >/dev/null
i=0
while [ \$i -lt 200 ]; do sleep 0.1; i=\$((i + 1)); done
echo finished > finished"
}

# A child that traps TERM (file "got") and otherwise runs for at most 30 s.
runner_script() {
	make_script runner.sh "exec 2>>child.err
trap 'echo TERM > got; exit 3' TERM
echo ready > ready
i=0
while [ \$i -lt 300 ]; do sleep 0.1; i=\$((i + 1)); done
echo finished > finished"
}

@test "exec-loss: deleting the key sends TERM to the command and rlock exits 75 saying the lock was lost" {
	loss_script loss.sh TERM >/dev/null
	run --separate-stderr rlock exec -t 2s job -- ./loss.sh
	assert_equal "$status" 75
	assert_equal "$(cat got 2>/dev/null)" TERM
	[[ ! -e finished ]] || fail "the command ran to its end after the loss"
	assert_one_error_line
	[[ "$stderr" == *"lost"* ]] || fail "stderr does not say lost: $stderr"
	[[ "$stderr" == *"'job'"* ]] || fail "stderr does not name the lock: $stderr"
	[[ "$stderr" == *TERM* ]] || fail "stderr does not name the signal: $stderr"
}

@test "exec-loss: the exit is 75 whatever status the signalled command exits with" {
	# This child has no trap: it dies of the SIGTERM (which alone would be 143).
	make_script die.sh 'echo ready > ready
redis-cli -p "$REDIS_PORT" DEL "$RLOCK_KEY" >/dev/null
i=0
while [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
exit 0' >/dev/null
	run --separate-stderr rlock exec -t 2s job -- ./die.sh
	assert_equal "$status" 75
}

@test "exec-loss: a lock taken over by another holder is lost and left to the new holder" {
	make_script thief.sh 'trap "echo TERM > got; exit 0" TERM
echo ready > ready
redis-cli -p "$REDIS_PORT" DEL "$RLOCK_KEY" >/dev/null
"$RLOCK_TEST_BIN" acquire -t 60s --token thief-token "$RLOCK_NAME" > acquired
i=0
while [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
echo finished > finished' >/dev/null
	RLOCK_TEST_BIN=$RLOCK run --separate-stderr rlock exec -t 2s job -- ./thief.sh
	assert_equal "$status" 75
	assert_equal "$(cat acquired)" thief-token
	assert_equal "$(cat got 2>/dev/null)" TERM
	[[ "$stderr" == *"lost"* ]] || fail "stderr does not say lost: $stderr"
	# No release after the loss: the new holder keeps its lock.
	assert_equal "$(rcli HKEYS 'rlock:{job}')" thief-token
}

@test "exec-loss: --on-lost USR1 sends USR1 instead of TERM" {
	loss_script loss.sh USR1 >/dev/null
	run --separate-stderr rlock exec -t 2s --on-lost USR1 job -- ./loss.sh
	assert_equal "$status" 75
	assert_equal "$(cat got 2>/dev/null)" USR1
	[[ "$stderr" == *"lost"* ]] || fail "stderr does not say lost: $stderr"
	[[ "$stderr" == *USR1* ]] || fail "stderr does not name the signal: $stderr"
}

@test "exec-loss: --on-lost accepts a SIG-prefixed lowercase name" {
	loss_script loss.sh USR2 >/dev/null
	run --separate-stderr rlock exec -t 2s --on-lost sigusr2 job -- ./loss.sh
	assert_equal "$status" 75
	assert_equal "$(cat got 2>/dev/null)" USR2
}

@test "exec-loss: --on-lost with an unknown signal is a usage error" {
	run --separate-stderr rlock exec --on-lost NOSUCHSIG job -- touch marker
	assert_usage_error
	[[ ! -e marker ]] || fail "the command ran"
}

@test "exec-loss: a command that ignores TERM is killed with SIGKILL after --kill-after 1s" {
	make_script stubborn.sh 'trap "" TERM
echo ready > ready
redis-cli -p "$REDIS_PORT" DEL "$RLOCK_KEY" >/dev/null
sleep 20
echo finished > finished' >/dev/null
	local t0 t1
	t0=$(now_ms)
	run --separate-stderr rlock exec -t 2s --kill-after 1s job -- ./stubborn.sh
	t1=$(now_ms)
	assert_equal "$status" 75
	[[ ! -e finished ]] || fail "the command finished its sleep"
	# At least the 1 s grace after TERM; far less than the 20 s sleep.
	assert_between $((t1 - t0)) 1000 12000 "ms until rlock exited"
	[[ "$stderr" == *"lost"* ]] || fail "stderr does not say lost: $stderr"
}

@test "exec-loss: a background grandchild of the command is stopped on loss" {
	make_script parent.sh 'sleep 30 &
echo $! > gpid
trap "echo TERM > got; exit 0" TERM
echo ready > ready
redis-cli -p "$REDIS_PORT" DEL "$RLOCK_KEY" >/dev/null
i=0
while [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done' >/dev/null
	run --separate-stderr rlock exec -t 2s job -- ./parent.sh
	local g
	g=$(cat gpid)
	track_pid "$g" sleep
	assert_equal "$status" 75
	wait_gone "$g" 5000 || fail "grandchild $g (sleep 30) still running after rlock exited"
}

@test "exec-loss: a grandchild that ignores TERM is stopped too once the command has gone" {
	make_script parent.sh 'sh -c "trap \"\" TERM; exec sleep 30" &
echo $! > gpid
trap "echo TERM > got; exit 0" TERM
echo ready > ready
redis-cli -p "$REDIS_PORT" DEL "$RLOCK_KEY" >/dev/null
i=0
while [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done' >/dev/null
	run --separate-stderr rlock exec -t 2s job -- ./parent.sh
	local g
	g=$(cat gpid)
	track_pid "$g" sleep
	assert_equal "$status" 75
	assert_equal "$(cat got 2>/dev/null)" TERM
	wait_gone "$g" 5000 || fail "grandchild $g (sleep 30, TERM ignored) still running after rlock exited"
}

@test "exec-loss: Redis frozen with SIGSTOP makes rlock signal the command and exit 75 within about the TTL" {
	start_redis_as FZ
	runner_script >/dev/null
	bg_start R "$RLOCK" exec -u "$FZ_URL" -t 2s job -- ./runner.sh
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	# Let a heartbeat or two go through first.
	sleep 0.8
	local t0 t1
	t0=$(now_ms)
	kill -STOP "$FZ_PID"
	bg_wait "$R" 15000 || fail "rlock still running 15 s after Redis froze"
	t1=$(now_ms)
	kill -CONT "$FZ_PID"
	assert_equal "$BG_STATUS" 75
	assert_equal "$(cat got 2>/dev/null)" TERM
	[[ ! -e finished ]] || fail "the command ran to its end"
	# Not before the last confirmed extend (at most a heartbeat, 2/3 s, before
	# the freeze) plus the TTL minus the drift; not much after it.
	assert_between $((t1 - t0)) 1000 6000 "ms from the freeze to rlock's exit"
	grep -q lost R.err || fail "stderr does not say lost: $(cat R.err)"
}

@test "exec-loss: Redis restarted empty on the same port makes rlock signal the command and exit 75" {
	start_redis_as RS
	runner_script >/dev/null
	bg_start R "$RLOCK" exec -u "$RS_URL" -t 3s job -- ./runner.sh
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	assert_equal "$(rcli_as RS EXISTS 'rlock:{job}')" 1
	restart_redis_empty RS
	# (Not DBSIZE: the heartbeat may already have found the loss and
	# written it to the history.  An extend never writes the lock key.)
	assert_equal "$(rcli_as RS EXISTS 'rlock:{job}')" 0
	bg_wait "$R" 15000 || fail "rlock still running 15 s after the restart"
	assert_equal "$BG_STATUS" 75
	assert_equal "$(cat got 2>/dev/null)" TERM
	[[ ! -e finished ]] || fail "the command ran to its end"
	grep -q lost R.err || fail "stderr does not say lost: $(cat R.err)"
}

@test "exec-loss: --on-lost ignore lets the command finish, says lost, and exits 75" {
	make_script finish.sh 'trap "echo TERM > got; exit 3" TERM
redis-cli -p "$REDIS_PORT" DEL "$RLOCK_KEY" >/dev/null
sleep 2
echo finished > finished
exit 0' >/dev/null
	# --kill-after 0: a SIGKILL sent in spite of "ignore" would come at once.
	run --separate-stderr rlock exec -t 1s --on-lost ignore --kill-after 0 job -- ./finish.sh
	assert_equal "$status" 75
	assert_equal "$(cat finished 2>/dev/null)" finished
	[[ ! -e got ]] || fail "the command was sent TERM"
	assert_one_error_line
	[[ "$stderr" == *"lost"* ]] || fail "stderr does not say lost: $stderr"
}

# ---------------------------------------------------------------------------
# A loss found after the command ended: at release, at the --min-hold
# hand-off.  Loud, and 75, whoever finds it (heartbeat or release).
# ---------------------------------------------------------------------------

@test "exec-loss: a lock taken over during a quick command is found at release: one line naming the lock, exit 75" {
	run --separate-stderr rlock exec -t 10s job -- \
		sh -c 'redis-cli -p "$REDIS_PORT" EVAL "$FAKE_HOLD" 1 "$RLOCK_KEY" other 5000 >/dev/null; exit 0'
	assert_equal "$status" 75
	assert_one_error_line
	[[ "$stderr" == "rlock: lock 'job' was lost before its release"* ]] ||
		fail "unexpected stderr: $stderr"
	# The other holder keeps what it has.
	assert_equal "$(rcli HKEYS "$(lock_key job)")" other
}

@test "exec-loss: a loss found at release keeps a failing command's own status, and still says so" {
	run --separate-stderr rlock exec -t 10s job -- \
		sh -c 'redis-cli -p "$REDIS_PORT" DEL "$RLOCK_KEY" >/dev/null; exit 3'
	assert_equal "$status" 3
	assert_one_error_line
	[[ "$stderr" == "rlock: lock 'job' was lost before its release"*"the command's status"* ]] ||
		fail "unexpected stderr: $stderr"
}

@test "exec-loss: --min-hold with the key deleted during the command says lost and exits 75, even without -v" {
	run --separate-stderr rlock exec --min-hold 5s job -- \
		sh -c 'redis-cli -p "$REDIS_PORT" DEL "$RLOCK_KEY" >/dev/null; exit 0'
	assert_equal "$status" 75
	assert_one_error_line
	[[ "$stderr" == "rlock: lock 'job' was lost before the --min-hold hand-off"* ]] ||
		fail "unexpected stderr: $stderr"
	assert_equal "$(rcli EXISTS "$(lock_key job)")" 0
}

@test "exec-loss: --min-hold with the lock taken over leaves the new holder alone and exits 75" {
	run --separate-stderr rlock exec --min-hold 5s job -- \
		sh -c 'redis-cli -p "$REDIS_PORT" EVAL "$FAKE_HOLD" 1 "$RLOCK_KEY" other 30000 >/dev/null; exit 0'
	assert_equal "$status" 75
	assert_one_error_line
	[[ "$stderr" == *"'job' was lost"* ]] || fail "unexpected stderr: $stderr"
	# The hand-off did not stretch the other holder's TTL to 5 s.
	local pttl
	pttl=$(rcli PTTL "$(lock_key job)")
	(( pttl > 5000 )) || fail "the other holder's lock was touched: PTTL $pttl"
}

@test "exec-loss: --on-lost ignore with a loss found at release exits 75 with one line" {
	run --separate-stderr rlock exec -t 10s --on-lost ignore job -- \
		sh -c 'redis-cli -p "$REDIS_PORT" DEL "$RLOCK_KEY" >/dev/null; exit 0'
	assert_equal "$status" 75
	assert_one_error_line
	[[ "$stderr" == *"'job' was lost"* ]] || fail "unexpected stderr: $stderr"
}

@test "exec-loss: --on-lost ignore keeps a failing command's status after a heartbeat loss" {
	make_script fail3.sh 'redis-cli -p "$REDIS_PORT" DEL "$RLOCK_KEY" >/dev/null
i=0
while [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
exit 3' >/dev/null
	run --separate-stderr rlock exec -t 1s --on-lost ignore job -- ./fail3.sh
	assert_equal "$status" 3
	assert_one_error_line
	[[ "$stderr" == *"'job' was lost"*"--on-lost ignore"* ]] || fail "unexpected stderr: $stderr"
}
