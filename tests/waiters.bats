#!/usr/bin/env bats
# waiters.bats: who is waiting for a lock, and since when, shows in status
# (text and JSON); a waiter leaves the list when it gets the lock, gives up,
# or dies (within a bound: the holder's time left, --timeout and a second).

load helpers
setup() { own_server_setup; }
teardown() { test_teardown; }

# waiters_of NAME: how many waiters status --json lists.
waiters_of() {
	rlock --json status "$1" | json_eval 'len(d.get("waiters", []))'
}

# wait_waiters NAME N: poll (up to 10 s) until status lists N waiters.
wait_waiters() {
	local i n
	for ((i = 0; i < 500; i++)); do
		n=$(waiters_of "$1")
		[[ "$n" == "$2" ]] && return 0
		sleep 0.02
	done
	fail "status lists $n waiters of $1, not $2"
}

@test "waiters: status lists a waiting exec with host, pid, user, command and how long it has waited" {
	local holder
	holder=$(rlock acquire -t 30s job)
	bg_start W "$RLOCK" exec --record full -w 20s job -- echo ran
	wait_waiters job 1
	run --separate-stderr rlock status job
	assert_success
	assert_line --index 0 --regexp '^job: held by '
	assert_line --index 1 --regexp "^  waiting: $(id -un)@$(hostname) pid $W \\(echo ran\\) for [0-9.]+(ms|s)\$"
	rlock --json status job | json_check '(len(d["waiters"]) == 1 and
		d["waiters"][0]["pid"] == '"$W"' and d["waiters"][0]["command"] == "echo ran" and
		d["waiters"][0]["user"] and d["waiters"][0]["host"] and
		isinstance(d["waiters"][0]["waiting_ms"], int) and d["waiters"][0]["waiting_ms"] >= 0)'
	# Given the lock, it leaves the list.
	rlock release --token "$holder" job
	bg_wait "$W" 10000 || fail "the waiter did not get the lock"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(waiters_of job)" 0
	assert_equal "$(rcli EXISTS 'rlock:{job}:waiters')" 0
}

@test "waiters: several are listed, and a lock nobody waits for has no waiters in --json" {
	rlock acquire -t 30s job >/dev/null
	bg_start W1 "$RLOCK" acquire -w 20s job
	bg_start W2 "$RLOCK" exec -w 20s job -- true
	wait_waiters job 2
	run rlock status job
	assert_equal "$(grep -c '^  waiting: ' <<<"$output")" 2
	rlock --json status free-one | json_check 'd["held"] is False and "waiters" not in d'
}

@test "waiters: one that gives up (-w) leaves the list at once; -n never joins it" {
	rlock acquire -t 30s job >/dev/null
	run rlock acquire -n job
	assert_failure 1
	assert_equal "$(waiters_of job)" 0
	run rlock acquire -w 500ms job
	assert_failure 1
	assert_equal "$(waiters_of job)" 0
	assert_equal "$(rcli HLEN 'rlock:{job}:waiters')" 0
}

@test "waiters: a waiter killed with SIGKILL is dropped within the holder's time left, --timeout and a second" {
	rlock acquire -t 2s job >/dev/null
	bg_start W "$RLOCK" --timeout 500ms acquire -w 20s job
	wait_waiters job 1
	kill -KILL "$W"
	bg_wait "$W" 5000
	local t0 i n
	t0=$(now_ms)
	for ((i = 0; i < 500; i++)); do
		n=$(waiters_of job)
		[[ "$n" == 0 ]] && break
		sleep 0.02
	done
	assert_equal "$n" 0
	# The bound: PTTL (at most 2 s) + 500 ms + 1 s, with room for a slow machine.
	assert_between $(($(now_ms) - t0)) 0 8000 ms_until_dropped
}

@test "waiters: SIGTERM to a waiting acquire takes it off the list" {
	rlock acquire -t 30s job >/dev/null
	bg_start W "$RLOCK" acquire -w 20s job
	wait_waiters job 1
	kill -TERM "$W"
	bg_wait "$W" 5000 || fail "the waiter ignored SIGTERM"
	assert_equal "$BG_STATUS" 143
	assert_equal "$(waiters_of job)" 0
}

@test "waiters: in quorum mode a waiter is listed once, whichever servers list it" {
	local urls i n
	start_quorum 3
	quorum_urls
	urls=("${URLS[@]}")
	rlock "${urls[@]}" acquire -t 30s job >/dev/null
	bg_start W "$RLOCK" "${urls[@]}" acquire -w 20s job
	local n
	for ((i = 0; i < 500; i++)); do
		n=$(rlock "${urls[@]}" --json status job | json_eval 'len(d.get("waiters", []))')
		[[ "$n" == 1 ]] && break
		sleep 0.02
	done
	assert_equal "$n" 1
	run rlock "${urls[@]}" status job
	assert_equal "$(grep -c '^  waiting: ' <<<"$output")" 1
}
