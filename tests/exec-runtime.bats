#!/usr/bin/env bats
# exec-runtime.bats: --max-runtime stops the command as timeout(1) would --
# --on-lost's signal, SIGKILL after --kill-after -- releases the lock, and
# exits 124; a command that ends in time keeps its own status.

load helpers
load exec-helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() {
	default_setup
	start_redis
	cd "$BATS_TEST_TMPDIR"
}
teardown() {
	exec_teardown
}

# gone PID: the process has ended (polled up to 5 s).
gone() {
	wait_gone "$1" 5000 || fail "process $1 is still running"
}

@test "exec-runtime: a sleep 30 under --max-runtime 1s ends in about a second with 124, the lock released" {
	local t0
	t0=$(now_ms)
	run --separate-stderr rlock exec --max-runtime 1s job -c 'echo $$ >cmd.pid; exec sleep 30'
	assert_equal "$status" 124
	assert_between $(($(now_ms) - t0)) 800 8000 elapsed_ms
	gone "$(cat cmd.pid)"
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	[[ "$stderr" == *"job: --max-runtime 1s ran out"*"SIGTERM"* ]] || fail "stderr: $stderr"
	assert_equal "$(grep -c . <<<"$stderr")" 1
}

@test "exec-runtime: a command that ignores SIGTERM is killed after --kill-after: 124" {
	run --separate-stderr rlock exec --max-runtime 500ms --kill-after 1s job \
		-c 'trap "" TERM; echo $$ >cmd.pid; while :; do sleep 0.1; done'
	assert_equal "$status" 124
	gone "$(cat cmd.pid)"
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "exec-runtime: a command that ends in time keeps its own status" {
	run rlock exec --max-runtime 20s job -- true
	assert_success
	run rlock exec --max-runtime 20s job -c 'exit 3'
	assert_equal "$status" 3
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "exec-runtime: --on-lost ignore still stops the command at the limit, with SIGTERM" {
	run --separate-stderr rlock exec --on-lost ignore --max-runtime 500ms job -c 'echo $$ >cmd.pid; exec sleep 30'
	assert_equal "$status" 124
	gone "$(cat cmd.pid)"
	[[ "$stderr" == *"SIGTERM"* ]] || fail "stderr: $stderr"
}

@test "exec-runtime: --on-lost INT is the signal the limit sends" {
	# 2 s: the shell must have set its trap before the limit strikes,
	# however loaded the machine (the limit counts from its start).  With
	# SIGINT at its default: a suite started in the background has it
	# ignored, and an ignored signal stays ignored for the command.
	run --separate-stderr with_default_signals "$RLOCK" exec --on-lost INT --max-runtime 2s job \
		-c 'trap "echo got-int >sig; exit 9" INT; echo $$ >cmd.pid; while :; do sleep 0.1; done'
	assert_equal "$status" 124
	assert_equal "$(cat sig)" got-int
}

@test "exec-runtime: a stopped command past its limit is continued, signalled and gone: 124" {
	bg_start R "$RLOCK" exec --max-runtime 1s --kill-after 2s job -c 'echo $$ >cmd.pid; exec sleep 30'
	local i
	for ((i = 0; i < 250; i++)); do
		[[ -s cmd.pid ]] && break
		sleep 0.02
	done
	kill -STOP "$(cat cmd.pid)"
	bg_wait "$R" 10000 || fail "rlock did not end"
	assert_equal "$BG_STATUS" 124
	gone "$(cat cmd.pid)"
}

@test "exec-runtime: max-runtime in a config file works like the flag; -q says nothing" {
	printf 'max-runtime = 500ms\n' >rlock.conf
	run --separate-stderr rlock --config rlock.conf -q exec job -- sleep 30
	assert_equal "$status" 124
	assert_equal "$stderr" ""
}

@test "exec-runtime: a bad --max-runtime is a usage error naming it, with nothing held" {
	local v
	for v in 0 abc -1s; do
		run --separate-stderr rlock exec --max-runtime "$v" job -- true
		assert_equal "$status" 64
		[[ "$stderr" == *"--max-runtime"* ]] || fail "stderr for '$v': $stderr"
	done
	run --separate-stderr rlock acquire --max-runtime 1s job
	assert_equal "$status" 64
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}
