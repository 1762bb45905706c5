#!/usr/bin/env bats
# exec.bats: running a command under the lock: the command's exit status,
# its argv passed untouched, -c, usage errors, the child's environment, busy
# locks, status while it runs, the heartbeat, --min-hold, and mutual
# exclusion under contention. Lock loss is in exec-loss.bats, signals and
# process groups in exec-signals.bats.

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { file_server_setup; }
teardown() { test_teardown; }

# ---------------------------------------------------------------------------
# Exit status
# ---------------------------------------------------------------------------

@test "exec: a command that exits 0 makes rlock exit 0 and releases the lock" {
	run --separate-stderr rlock exec job -- sh -c 'echo ran > marker; exit 0'
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(cat marker)" ran
	assert_lock_free job
}

@test "exec: a command that exits 3 makes rlock exit 3 and releases the lock" {
	run --separate-stderr rlock exec job -- sh -c 'exit 3'
	assert_equal "$status" 3
	assert_lock_free job
}

@test "exec: the command's stdout and stderr pass through" {
	run --separate-stderr rlock exec job -- sh -c 'echo to-out; echo to-err >&2'
	assert_success
	assert_output to-out
	assert_equal "$stderr" to-err
}

@test "exec: a command that kills itself with SIGTERM makes rlock exit 143 and releases the lock" {
	run --separate-stderr with_default_signals "$RLOCK" exec job -- sh -c 'kill -TERM $$; sleep 5; exit 9'
	assert_equal "$status" 143
	assert_lock_free job
}

@test "exec: a command that kills itself with SIGUSR1 makes rlock exit 138 and releases the lock" {
	# rlock blocks signals for itself: the child must get them unblocked and
	# at their defaults, or it would survive this and exit 9.
	run --separate-stderr with_default_signals "$RLOCK" exec job -- sh -c 'kill -USR1 $$; sleep 5; exit 9'
	assert_equal "$status" 138
	assert_lock_free job
}

@test "exec: a command that dies of SIGKILL makes rlock exit 137 and releases the lock" {
	run --separate-stderr rlock exec job -- sh -c 'kill -KILL $$; exit 9'
	assert_equal "$status" 137
	assert_lock_free job
}

@test "exec: a file that is not executable exits 126 with one message and releases the lock" {
	printf '#!/bin/sh\necho ran > marker\n' >notexec.sh
	chmod 644 notexec.sh
	run --separate-stderr rlock exec job -- ./notexec.sh
	assert_equal "$status" 126
	assert_one_error_line
	assert_equal "$output" ""
	[[ ! -e marker ]] || fail "the non-executable file ran"
	assert_lock_free job
}

@test "exec: a command that is not found exits 127 with one message naming it and releases the lock" {
	run -127 --separate-stderr rlock exec job -- no-such-command-rlock-test arg
	assert_equal "$status" 127
	assert_one_error_line
	assert_equal "$stderr" "rlock: cannot run 'no-such-command-rlock-test': No such file or directory"
	assert_lock_free job
}

@test "exec: a path that does not exist exits 127 and releases the lock" {
	run -127 --separate-stderr rlock exec job -- ./missing/prog
	assert_equal "$status" 127
	assert_one_error_line
	assert_lock_free job
}

@test "exec: an unreachable Redis exits 69 without running the command" {
	local port
	port=$(free_port)
	run --separate-stderr rlock exec -u "redis://127.0.0.1:$port" job -- sh -c 'echo ran > marker'
	assert_equal "$status" 69
	assert_one_error_line
	[[ ! -e marker ]] || fail "the command ran without the lock"
}

# ---------------------------------------------------------------------------
# argv
# ---------------------------------------------------------------------------

args_script() {
	make_script args.sh 'for a in "$@"; do printf "[%s]\n" "$a"; done'
}

@test "exec: arguments with spaces, leading dashes and empty strings reach the command untouched" {
	args_script >/dev/null
	run --separate-stderr rlock exec job -- ./args.sh "a b" -x "" --long=v -- '  two  spaces ' '*'
	assert_success
	assert_equal "${#lines[@]}" 7
	assert_equal "${lines[0]}" "[a b]"
	assert_equal "${lines[1]}" "[-x]"
	assert_equal "${lines[2]}" "[]"
	assert_equal "${lines[3]}" "[--long=v]"
	assert_equal "${lines[4]}" "[--]"
	assert_equal "${lines[5]}" "[  two  spaces ]"
	assert_equal "${lines[6]}" "[*]"
}

@test "exec: -- after NAME is optional" {
	args_script >/dev/null
	run --separate-stderr rlock exec job ./args.sh one "two three"
	assert_success
	assert_equal "$output" "$(printf '[one]\n[two three]')"
}

@test "exec: the command's own options are not taken as rlock's (rlock exec job ls -l style)" {
	args_script >/dev/null
	run --separate-stderr rlock exec job ./args.sh -l -t 5 -n -c x --ttl=1s -- -v
	assert_success
	assert_equal "$output" "$(printf '[-l]\n[-t]\n[5]\n[-n]\n[-c]\n[x]\n[--ttl=1s]\n[--]\n[-v]')"
	assert_equal "$stderr" ""
}

@test "exec: options between NAME and -- apply to the lock (rlock exec job -t 5s -- printf ...)" {
	run --separate-stderr rlock exec job -t 5s -- sh -c 'redis-cli -p "$REDIS_PORT" PTTL "$RLOCK_KEY"; printf "%s|" "$@"' sh a -b
	assert_success
	assert_equal "${#lines[@]}" 2
	assert_between "${lines[0]}" 3000 5000 "PTTL with -t 5s"
	assert_equal "${lines[1]}" "a|-b|"
}

@test "exec: options between NAME and the command apply without --" {
	run --separate-stderr rlock exec job -t 5s printf '%s\n' x -t 60s
	assert_success
	assert_equal "$output" "$(printf 'x\n-t\n60s')"
	run --separate-stderr rlock exec job -t 5s sh -c 'redis-cli -p "$REDIS_PORT" PTTL "$RLOCK_KEY"'
	assert_success
	assert_between "$output" 3000 5000 "PTTL with -t 5s"
}

@test "exec: global options may follow the exec word" {
	run --separate-stderr env -u RLOCK_URL "$RLOCK" exec -u "redis://127.0.0.1:$REDIS_PORT" job -- printf ok
	assert_success
	assert_output ok
}

@test "exec: -c runs the string with sh -c and passes its exit status" {
	run --separate-stderr rlock exec job -c 'echo "$RLOCK_NAME" | tr a-z A-Z; for w in a "b c"; do echo "<$w>"; done; exit 4'
	assert_equal "$status" 4
	assert_equal "$output" "$(printf 'JOB\n<a>\n<b c>')"
	assert_lock_free job
}

@test "exec: -c placed before NAME works too" {
	run --separate-stderr rlock exec -c 'echo via-c' job
	assert_success
	assert_output via-c
}

@test "exec: -c together with a command exits 64 and runs nothing" {
	run --separate-stderr rlock exec job -c 'echo ran > marker' touch marker2
	assert_usage_error
	[[ ! -e marker && ! -e marker2 ]] || fail "something ran"
}

@test "exec: no command exits 64" {
	run --separate-stderr rlock exec job
	assert_usage_error
	run --separate-stderr rlock exec job --
	assert_usage_error
}

@test "exec: no NAME exits 64" {
	run --separate-stderr rlock exec
	assert_usage_error
}

# ---------------------------------------------------------------------------
# The child's environment
# ---------------------------------------------------------------------------

@test "exec: the child gets RLOCK_NAME, RLOCK_KEY and RLOCK_FENCE" {
	run --separate-stderr rlock exec job -- sh -c 'printf "%s\n" "${RLOCK_NAME-unset}" "${RLOCK_KEY-unset}" "${RLOCK_FENCE-unset}"'
	assert_success
	assert_equal "${lines[0]}" job
	assert_equal "${lines[1]}" 'rlock:{job}'
	assert_equal "${lines[2]}" "$(rcli GET 'rlock:{job}:fence')"
	[[ "${lines[2]}" =~ ^[1-9][0-9]*$ ]] || fail "RLOCK_FENCE: ${lines[2]}"
}

@test "exec: RLOCK_FENCE grows from one run to the next" {
	local f1 f2
	f1=$(rlock exec job -- sh -c 'echo "$RLOCK_FENCE"')
	f2=$(rlock exec job -- sh -c 'echo "$RLOCK_FENCE"')
	[[ "$f1" =~ ^[0-9]+$ && "$f2" =~ ^[0-9]+$ ]] || fail "fences: '$f1' '$f2'"
	((f2 > f1)) || fail "fence did not grow: $f1 then $f2"
}

@test "exec: RLOCK_TOKEN equals the value stored at the key while the command runs" {
	run --separate-stderr rlock exec job -- sh -c 'echo "$RLOCK_TOKEN"; redis-cli -p "$REDIS_PORT" HKEYS "$RLOCK_KEY"'
	assert_success
	assert_equal "${#lines[@]}" 2
	[[ "${lines[0]}" =~ $UUID_RE ]] || fail "RLOCK_TOKEN is not a UUID: '${lines[0]}'"
	assert_equal "${lines[1]}" "${lines[0]}"
}

@test "exec: --token sets the token the child sees and the key holds" {
	run --separate-stderr rlock exec --token my-tok-1 job -- sh -c 'echo "$RLOCK_TOKEN"; redis-cli -p "$REDIS_PORT" HKEYS "$RLOCK_KEY"'
	assert_success
	assert_equal "$output" "$(printf 'my-tok-1\nmy-tok-1')"
}

@test "exec: RLOCK_KEY follows --prefix" {
	run --separate-stderr rlock exec --prefix app: job -- sh -c 'echo "$RLOCK_KEY"; redis-cli -p "$REDIS_PORT" EXISTS "$RLOCK_KEY"'
	assert_success
	assert_equal "$output" "$(printf 'app:{job}\n1')"
}

@test "exec: RLOCK_PASSWORD and REDISCLI_AUTH are not passed to the child" {
	local pw='pw-Sekr1t-exec'
	start_redis_auth_as AUTH "$pw"
	# The password matters: without it the server refuses.
	run --separate-stderr env -u RLOCK_PASSWORD -u REDISCLI_AUTH RLOCK_URL="$AUTH_URL" "$RLOCK" exec job -- true
	assert_equal "$status" 69

	run --separate-stderr env RLOCK_URL="$AUTH_URL" RLOCK_PASSWORD="$pw" REDISCLI_AUTH="$pw" \
		"$RLOCK" exec job -- sh -c 'env > child.env; echo "${RLOCK_PASSWORD-unset} ${REDISCLI_AUTH-unset}"'
	assert_success
	assert_output "unset unset"
	refute_contains "$pw" "$(cat child.env)"
	grep -q '^RLOCK_NAME=job$' child.env || fail "child env lacks RLOCK_NAME: $(cat child.env)"
	refute_contains "$pw" "$stderr"

	run --separate-stderr env -u RLOCK_PASSWORD RLOCK_URL="$AUTH_URL" REDISCLI_AUTH="$pw" \
		"$RLOCK" exec job -- sh -c 'env > child2.env'
	assert_success
	refute_contains "$pw" "$(cat child2.env)"
	if grep -q '^REDISCLI_AUTH=' child2.env; then fail "REDISCLI_AUTH reached the child"; fi
}

@test "exec: a password in RLOCK_URL is removed from the child's RLOCK_URL" {
	local pw='pw-InUrl-9x'
	start_redis_auth_as AUTH "$pw"
	run --separate-stderr env -u RLOCK_PASSWORD -u REDISCLI_AUTH \
		RLOCK_URL="redis://:$pw@127.0.0.1:$AUTH_PORT" \
		"$RLOCK" exec job -- sh -c 'env > child.env; echo "${RLOCK_URL-unset}"'
	assert_success
	refute_contains "$pw" "$(cat child.env)"
	refute_contains "$pw" "$output"
	# Still usable by the child to find the server (minus the password).
	assert_output --partial "127.0.0.1:$AUTH_PORT"
	# The lock really was taken on that server and released.
	RCLI_AUTH=$pw run rcli_as AUTH EXISTS 'rlock:{job}:fence'
	assert_output 1
}

# ---------------------------------------------------------------------------
# A busy lock
# ---------------------------------------------------------------------------

@test "exec: -n with a busy lock exits 1 silently and does not run the command" {
	rlock acquire job >/dev/null
	run --separate-stderr rlock exec -n job -- touch marker
	assert_equal "$status" 1
	assert_equal "$stderr" ""
	[[ ! -e marker ]] || fail "the command ran without the lock"
}

@test "exec: -w 0 with a busy lock exits 1 and does not run the command" {
	rlock acquire job >/dev/null
	run --separate-stderr rlock exec -w 0 job -- touch marker
	assert_equal "$status" 1
	[[ ! -e marker ]] || fail "the command ran without the lock"
}

@test "exec: -E 7 with a busy lock exits 7 and does not run the command" {
	rlock acquire job >/dev/null
	run --separate-stderr rlock exec -n -E 7 job -- touch marker
	assert_equal "$status" 7
	[[ ! -e marker ]] || fail "the command ran without the lock"
	run --separate-stderr rlock exec -w 0 --conflict-exit-code 7 job -- touch marker
	assert_equal "$status" 7
	[[ ! -e marker ]] || fail "the command ran without the lock"
}

@test "exec: -w 1s with a lock busy throughout exits 1 and does not run the command" {
	local t0 t1
	rlock acquire -t 30s job >/dev/null
	t0=$(now_ms)
	run --separate-stderr rlock exec -w 1s job -- touch marker
	t1=$(now_ms)
	assert_equal "$status" 1
	[[ ! -e marker ]] || fail "the command ran without the lock"
	assert_between $((t1 - t0)) 900 20000 "ms waited"
}

@test "exec: a busy lock is not disturbed by a failed exec" {
	local t
	t=$(rlock acquire job)
	run rlock exec -n job -- true
	assert_equal "$status" 1
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t"
}

# ---------------------------------------------------------------------------
# While the command runs
# ---------------------------------------------------------------------------

# A child that says it is running, then waits (bounded, 30 s) for a stop file.
waiter_script() {
	make_script waiter.sh 'echo ready > ready
i=0
while [ ! -e stop ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
exit 0'
}

@test "exec: status while the command runs shows the command line (--record full) and rlock's pid" {
	waiter_script >/dev/null
	bg_start R "$RLOCK" exec --record full job -- ./waiter.sh --flag "two words"
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	run --separate-stderr rlock status job
	assert_success
	assert_output --partial " pid $R "
	assert_output --partial "(./waiter.sh --flag two words)"
	touch stop
	bg_wait "$R" 10000 || fail "rlock did not finish"
	assert_equal "$BG_STATUS" 0
	assert_lock_free job
}

@test "exec: --record full: status shows a long command line truncated with ..." {
	waiter_script >/dev/null
	local long
	long=$(printf 'x%.0s' {1..300})
	bg_start R "$RLOCK" exec --record full job -- ./waiter.sh "$long"
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	run --separate-stderr rlock status job
	assert_success
	[[ "$output" =~ \((\./waiter\.sh\ x+\.\.\.)\) ]] || fail "no truncated command in: $output"
	local shown=${BASH_REMATCH[1]}
	((${#shown} <= 210)) || fail "command shown is ${#shown} bytes long"
	((${#shown} >= 150)) || fail "command shown is only ${#shown} bytes long"
	touch stop
	bg_wait "$R" 10000 || fail "rlock did not finish"
	assert_equal "$BG_STATUS" 0
}

@test "exec: the heartbeat keeps a 1s-TTL lock through a 3s command and others cannot take it" {
	# The child itself tries to take the lock at 1.5 s and 2.7 s, well past
	# the 1 s TTL: both attempts must find it busy (exit 1).
	run --separate-stderr rlock exec -t 1s job -- sh -c '
		sleep 1.5; "$1" acquire -n job >/dev/null 2>&1; r1=$?
		sleep 1.2; "$1" acquire -n job >/dev/null 2>&1; r2=$?
		echo "$r1 $r2"' sh "$RLOCK"
	assert_success
	assert_output "1 1"
	assert_lock_free job
}

@test "exec: the lock's expiry stays close to the TTL while the command runs" {
	run --separate-stderr rlock exec -t 2s job -- sh -c '
		sleep 2.5; redis-cli -p "$REDIS_PORT" PTTL "$RLOCK_KEY"'
	assert_success
	assert_between "$output" 1 2000 "PTTL after 2.5 s with -t 2s"
}

# ---------------------------------------------------------------------------
# --min-hold
# ---------------------------------------------------------------------------

@test "exec: --min-hold 5s with a quick command exits at once with its status and leaves the lock to expire" {
	local t0 t1 pttl
	t0=$(now_ms)
	run --separate-stderr rlock exec --min-hold 5s job -- sh -c 'exit 3'
	pttl=$(rcli PTTL 'rlock:{job}')
	t1=$(now_ms)
	assert_equal "$status" 3
	assert_between "$pttl" 2500 5000 "PTTL after --min-hold 5s"
	assert_between $((t1 - t0)) 0 2500 "ms until rlock exited"
	run rlock status job
	assert_success
}

@test "exec: --min-hold shorter than the command releases the lock as usual" {
	run --separate-stderr rlock exec --min-hold 200ms job -- sleep 0.6
	assert_success
	assert_lock_free job
}

# ---------------------------------------------------------------------------
# Mutual exclusion
# ---------------------------------------------------------------------------

@test "exec: 4 workers x 15 cycles of a read-modify-write under exec count exactly 60" {
	local w
	echo 0 >f
	# A counter above the clock's floor counts acquires one by one.
	rcli SET 'rlock:{ctr}:fence' 8000000000000000 >/dev/null
	local pids=()
	for w in 1 2 3 4; do
		bash -c '
			for i in $(seq 15); do
				"$1" exec -w 60s -t 5s ctr -- sh -c '\''n=$(cat f); sleep 0.01; n=$((n+1)); echo $n > f'\'' ||
					{ echo "cycle $i: exit $?" >>failures; }
			done' worker "$RLOCK" </dev/null >/dev/null 2>>workers.err 3>&- &
		pids+=("$!")
		echo "$!" >>.bg-pids
	done
	wait_all_gone 120000 "${pids[@]}" || fail "workers still running after 120 s"
	for w in "${pids[@]}"; do
		wait "$w"
	done
	[[ ! -s failures ]] || fail "failures: $(cat failures); stderr: $(cat workers.err)"
	assert_equal "$(cat f)" 60
	assert_equal "$(rcli GET 'rlock:{ctr}:fence')" 8000000000000060
	assert_lock_free ctr
}
