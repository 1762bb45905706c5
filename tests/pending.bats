#!/usr/bin/env bats
# pending.bats: exec --pending N, the newest waiter wins (deploy queues,
# rlock-exec(7)): at most N waiters asking --pending wait on NAME; a newer
# one supersedes the oldest beyond N, which exits 36 at once, saying which
# host and pid superseded it, and never runs its command; the release hands
# the lock to a waiter that is left.

load helpers
load exec-helpers
setup() { own_server_setup; }
teardown() { test_teardown; }

# until_pid_listed NAME PID: poll (up to 20 s) until the waiters hash of
# NAME names PID (as a waiter, or as the one that superseded a waiter).
until_pid_listed() {
	local i
	for ((i = 0; i < 1000; i++)); do
		[[ "$(rcli HVALS "rlock:{$1}:waiters")" == *"\"$2\""* ]] && return 0
		sleep 0.02
	done
	fail "pid $2 is not listed among the waiters of $1"
}

# until_file FILE: poll (up to 20 s) until FILE is not empty.
until_file() {
	wait_file "$1" 20000 || fail "$1 is still empty"
}

@test "pending: ten deploys launched 0.1 s apart run exactly two commands, the first and the last; the others exit 36 naming who superseded them" {
	local i pidv next
	bg_start D1 "$RLOCK" exec --pending 1 -w 60s deploy -- \
		sh -c 'echo 1 >>ran; while [ ! -e go ]; do sleep 0.05; done'
	until_file ran
	for ((i = 2; i <= 10; i++)); do
		bg_start "D$i" "$RLOCK" exec --pending 1 -w 60s deploy -- \
			sh -c "echo $i >>ran"
		pidv="D$i"
		until_pid_listed deploy "${!pidv}"
		sleep 0.1
	done
	# D2..D9 end while D1 still runs: superseded, not served.
	for ((i = 2; i <= 9; i++)); do
		pidv="D$i" next="D$((i + 1))"
		bg_wait "${!pidv}" 20000 || fail "deploy $i still waits"
		assert_equal "$BG_STATUS" 36
		run cat "D$i.err"
		assert_output --regexp "^rlock: deploy: superseded by a newer waiter on $(hostname) pid ${!next} \\(--pending 1\\); not running the command\$"
	done
	_proc_alive "$D10" || fail "the last deploy ended: $(cat D10.err)"
	touch go
	bg_wait "$D1" 20000 || fail "the first deploy did not end"
	assert_equal "$BG_STATUS" 0
	bg_wait "$D10" 20000 || fail "the last deploy did not get the lock"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat ran)" "$(printf '1\n10')"
	run rlock log deploy
	assert_output --partial " superseded: "
	assert_output --partial ", by $(id -un)@$(hostname) pid $D10"
	run rlock --json log deploy
	/usr/bin/python3 "$BATS_TEST_DIRNAME/validate-json.py" log.json --lines <<<"$output"
	[[ "$output" == *'"event":"superseded"'*'"by":{"host":"'* ]] || fail "$output"
	# Nothing left behind: no waiter, no mark.
	assert_equal "$(rcli EXISTS 'rlock:{deploy}:waiters' 'rlock:{deploy}')" 0
}

@test "pending: with -w the bound still holds: the newest waiter gives up at -w with the busy status" {
	local holder t0
	holder=$(rlock acquire -t 60s deploy)
	t0=$(now_ms)
	run rlock exec --pending 1 -w 1s deploy -- true
	assert_equal "$status" 1
	assert_between $(($(now_ms) - t0)) 900 10000 waited_ms
	assert_equal "$(rcli EXISTS 'rlock:{deploy}:waiters')" 0
	rlock release --token "$holder" deploy
}

@test "pending: --pending 2 keeps the two newest waiters, and they run in the order they came" {
	local holder
	holder=$(rlock acquire -t 60s deploy)
	bg_start A "$RLOCK" exec --pending 2 -w 60s deploy -- sh -c 'echo A >>ran'
	until_pid_listed deploy "$A"
	bg_start B "$RLOCK" exec --pending 2 -w 60s deploy -- sh -c 'echo B >>ran'
	until_pid_listed deploy "$B"
	bg_start C "$RLOCK" exec --pending 2 -w 60s deploy -- sh -c 'echo C >>ran'
	bg_wait "$A" 20000 || fail "the oldest waiter was not superseded"
	assert_equal "$BG_STATUS" 36
	rlock release --token "$holder" deploy
	bg_wait "$B" 20000 || fail "B did not run"
	assert_equal "$BG_STATUS" 0
	bg_wait "$C" 20000 || fail "C did not run"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat ran)" "$(printf 'B\nC')"
}

@test "pending: a waiter without --pending is neither counted nor superseded" {
	local holder
	holder=$(rlock acquire -t 60s deploy)
	bg_start P "$RLOCK" exec -w 60s deploy -- sh -c 'echo plain >>ran'
	until_pid_listed deploy "$P"
	bg_start N "$RLOCK" exec --pending 1 -w 60s deploy -- sh -c 'echo new >>ran'
	until_pid_listed deploy "$N"
	rlock release --token "$holder" deploy
	bg_wait "$P" 20000 || fail "the plain waiter did not run"
	assert_equal "$BG_STATUS" 0
	bg_wait "$N" 20000 || fail "the --pending waiter did not run"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat ran)" "$(printf 'plain\nnew')"
}

@test "pending: mixes that make no sense are refused with 64 and a reason" {
	run --separate-stderr rlock exec --pending 0 -w 1s deploy -- true
	assert_usage_error
	run --separate-stderr rlock exec --pending 1 -n deploy -- true
	assert_usage_error
	[[ "$stderr" == *--pending* ]] || fail "$stderr"
	run --separate-stderr rlock exec --pending 1 --shared -w 1s deploy -- true
	assert_usage_error
	[[ "$stderr" == *--shared* ]] || fail "$stderr"
}
