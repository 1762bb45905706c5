#!/usr/bin/env bats
# schedule.bats: rlock schedule declare|list|pause|resume|remove, a
# schedule's life as one noun (issue 51).  A schedule is kept until a
# person removes it (no expiry), can be declared before its first run (a
# job that never started is overdue), records its last success and its
# failed runs in a row (status, --json, openmetrics, status --failing),
# and can be paused for the whole fleet: every machine's start is refused
# with status 38, its alerts are silenced, status shows by whom and until
# when.

load helpers
setup() { own_server_setup; }
teardown() { test_teardown; }

# wait_server_ms MS: until the server's clock has passed MS (bounded: 30 s).
wait_server_ms() {
	local i
	for ((i = 0; i < 3000; i++)); do
		(($(server_ms) >= $1)) && return 0
		sleep 0.01
	done
	return 1
}

@test "schedule: declared before its first run, a job that never started is overdue a period and its grace later; --grace sets how late" {
	local t0
	t0=$(server_ms)
	run rlock schedule declare job --every 2s
	assert_success
	assert_output ""
	run rlock schedule declare other --every 2s --grace 1h
	assert_success
	run rlock status job
	assert_line --regexp '^  every 2s: declared .* ago, never started$'
	run rlock --json status job
	json_check 'd["every_ms"] == 2000 and d["last_outcome"] == "never-started" and d["grace_ms"] == 1000 and d["overdue"] is False and d["declared_ms"] >= '"$t0" <<<"$output"
	run rlock schedule list
	assert_success
	assert_line "job: free"
	assert_line "other: free"
	run rlock status --overdue
	assert_success
	# More than 3 s after the declaration: job overdue, other in its grace.
	wait_server_ms $((t0 + 3200)) || fail "the server's clock stands still"
	run rlock status --overdue
	assert_equal "$status" 1
	assert_line "job: free"
	refute_output --partial "other"
	run rlock schedule list --overdue
	assert_equal "$status" 1
	assert_line --regexp '^  every 2s: declared .* ago, never started; overdue$'
	run rlock status --format openmetrics
	assert_line 'rlock_overdue{name="job"} 1'
	assert_line 'rlock_overdue{name="other"} 0'
	# Its first start: no longer overdue.
	run rlock exec --every 2s job -- true
	assert_success
	run rlock status --overdue job
	assert_success
}

@test "schedule: a schedule never expires: its keys' old expiry passed, it is still overdue, until rlock schedule remove" {
	# Before, the schedule expired with the history (here 1 s) and never
	# sooner than three periods (3 s): then --overdue said nothing.
	run rlock --history-expiry 1s exec --every 1s job -- true
	assert_success
	assert_equal "$(rcli PTTL 'rlock:{job}:every' | tr -d '\r')" -1
	local s0
	s0=$(rcli HGET 'rlock:{job}:every' s | tr -d '\r')
	wait_server_ms $((s0 + 3500)) || fail "the server's clock stands still"
	run rlock status --overdue
	assert_equal "$status" 1
	assert_line --partial "job: free"
	run rlock status --format openmetrics
	assert_line 'rlock_overdue{name="job"} 1'
	run rlock -v schedule remove job
	assert_success
	assert_output --partial "job: removed"
	assert_equal "$(rcli EXISTS 'rlock:{job}:every' | tr -d '\r')" 0
	run rlock status --overdue
	assert_success
	assert_output ""
	run rlock -v schedule remove job
	assert_success
	assert_output --partial "job: had no schedule"
}

@test "schedule: failed runs in a row and the last success, in status, --json, openmetrics and status --failing" {
	run rlock exec --every 1s job -- false
	assert_equal "$status" 1
	run rlock status --failing
	assert_equal "$status" 1
	assert_line --regexp '^  every 1s: started .* ago on .* pid [0-9]+, exit 1; 1 failed in a row, no success yet$'
	local s0
	s0=$(rcli HGET 'rlock:{job}:every' c | tr -d '\r')
	wait_server_ms $((s0 + 600)) || fail "the server's clock stands still"
	run rlock exec --every 1s job -- sh -c 'exit 3'
	assert_equal "$status" 3
	run rlock --json status job
	json_check 'd["failures"] == 2 and d["failing"] is True and d["last_success_ms"] is None and d["last_exit_status"] == 3' <<<"$output"
	RLOCK_SCHEMA_DIR="$BATS_TEST_DIRNAME/../doc/schema" /usr/bin/python3 "$BATS_TEST_DIRNAME/validate-json.py" status.json <<<"$output" ||
		fail "not the schema's: $output"
	run rlock status --format openmetrics
	assert_line 'rlock_schedule_failures{name="job"} 2'
	assert_line 'rlock_failing{name="job"} 1'
	refute_line --partial 'rlock_last_success_timestamp_seconds{name="job"}'
	# A success: the row ends, the time is kept.
	s0=$(rcli HGET 'rlock:{job}:every' c | tr -d '\r')
	wait_server_ms $((s0 + 600)) || fail "the server's clock stands still"
	run rlock exec --every 1s job -- true
	assert_success
	run rlock status --failing
	assert_success
	assert_output ""
	run rlock --json status job
	json_check 'd["failures"] == 0 and d["failing"] is False and d["last_success_ms"] > 0' <<<"$output"
	run rlock status --format openmetrics
	assert_line 'rlock_schedule_failures{name="job"} 0'
	assert_line --regexp '^rlock_last_success_timestamp_seconds\{name="job"\} [0-9.]+$'
}

@test "schedule: pause refuses every machine's start with status 38 and silences the alerts; status says by whom and until when; resume lets the next in" {
	run rlock exec --every 1s job -- false
	run rlock -v schedule pause job
	assert_success
	assert_output --partial "job: paused until resumed"
	run rlock status job
	assert_line --regexp '^  every 1s: started .* ago on .* pid [0-9]+, exit 1; 1 failed in a row, no success yet; paused by [^ ]+@[^ ]+ until resumed$'
	run rlock --json status job
	json_check 'd["paused"] is True and "@" in d["paused_by"] and d["paused_until_ms"] is None and d["failing"] is False and d["overdue"] is False and d["next_due_ms"] is None' <<<"$output"
	# Three machines fire, well past the slot: each refused with 38.
	local s0 m
	s0=$(rcli HGET 'rlock:{job}:every' c | tr -d '\r')
	wait_server_ms $((s0 + 2000)) || fail "the server's clock stands still"
	for m in 1 2 3; do
		run --separate-stderr rlock exec -n --every 1s job -- touch "ran.$m"
		assert_equal "$status" 38
		assert_equal "$stderr" ""
	done
	run --separate-stderr rlock -v exec -w 5s -E 3 --every 1s job -- touch ran.4
	assert_equal "$status" 38
	[[ "$stderr" == *"job: its schedule is paused by "*" until resumed; not running the command (rlock schedule resume job)"* ]] ||
		fail "$stderr"
	ls ran.* 2>/dev/null && fail "a paused schedule ran"
	# Silenced: neither overdue nor failing while paused.
	run rlock status --overdue
	assert_success
	run rlock status --failing
	assert_success
	run rlock status --format openmetrics
	assert_line 'rlock_paused{name="job"} 1'
	assert_line 'rlock_overdue{name="job"} 0'
	assert_line 'rlock_failing{name="job"} 0'
	run rlock -v schedule resume job
	assert_success
	assert_output --partial "job: resumed"
	run rlock exec -n --every 1s job -- touch ran.5
	assert_success
	[[ -e ran.5 ]] || fail "the first start after resume did not run"
	# A pause for a while ends by itself.
	run rlock schedule pause job --for 1s
	assert_success
	run rlock --json status job
	json_check 'd["paused"] is True and d["paused_until_ms"] > 0' <<<"$output"
	run rlock status job
	assert_line --regexp '; paused by [^ ]+@[^ ]+ for [0-9.]+m?s more$'
	local until
	until=$(rlock --json status job | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["paused_until_ms"])')
	wait_server_ms $((until + 1)) || fail "the server's clock stands still"
	run rlock exec -n --every 1s job -- touch ran.6
	assert_success
	[[ -e ran.6 ]] || fail "the pause did not end"
}

@test "schedule: pause and resume across a quorum of three, machines on each" {
	start_quorum 3
	quorum_urls
	run rlock "${URLS[@]}" schedule pause job
	assert_success
	local i
	for i in 1 2 3; do
		assert_equal "$(qcli "$i" HGET 'rlock:{job}:every' z | tr -d '\r')" r
		run rlock "${URLS[@]}" exec -n --every 1s job -- touch "ran.$i"
		assert_equal "$status" 38
	done
	run rlock "${URLS[@]}" schedule resume job
	assert_success
	run rlock "${URLS[@]}" exec -n --every 1s job -- touch ran.4
	assert_success
	[[ -e ran.4 ]] || fail "did not run after resume"
	ls ran.[123] 2>/dev/null && fail "a paused start ran" || true
}

@test "schedule: bad input is a usage error that leaves nothing behind" {
	run --separate-stderr rlock schedule
	assert_usage_error
	run --separate-stderr rlock schedule frobnicate job
	assert_usage_error
	[[ "$stderr" == *"unknown action 'frobnicate'"* ]] || fail "$stderr"
	run --separate-stderr rlock schedule declare job
	assert_usage_error
	[[ "$stderr" == *"--every PERIOD"* ]] || fail "$stderr"
	run --separate-stderr rlock schedule pause
	assert_usage_error
	run --separate-stderr rlock schedule declare job --every 1m --for 1h
	assert_usage_error
	[[ "$stderr" == *"--for does not apply to schedule declare"* ]] || fail "$stderr"
	run --separate-stderr rlock schedule list job
	assert_usage_error
	run --separate-stderr rlock status --grace 1s
	assert_usage_error
	assert_equal "$(rcli DBSIZE | tr -d '\r')" 0
}

@test "schedule: doctor warns of an overdue schedule with the slots it was idle for, a failing one, a start recorded ahead of the clock, and says a pause" {
	local now
	now=$(server_ms)
	run rlock exec --every 1h failing -- false
	run rlock exec --every 1h paused -- true
	run rlock schedule pause paused
	# Overdue: its last slot three hours and a half ago (faked).
	run rlock exec --every 1h idle -- true
	rcli HSET 'rlock:{idle}:every' s $((now - 12600000)) c $((now - 12600000)) >/dev/null
	# Its last start recorded two hours ahead of the server's clock.
	run rlock exec --every 1h ahead -- true
	rcli HSET 'rlock:{ahead}:every' s $((now + 7200000)) c $((now + 7200000)) >/dev/null
	run rlock doctor
	assert_line --regexp 'warning .*: schedules: idle is overdue: idle for 3 slots of 1h, last started 3h30m.* ago \(see why'
	assert_line --regexp 'warning .*: schedules: failing failed its last 1 run \(see how its runs ended: rlock log NAME\)'
	assert_line --regexp "warning .*: schedules: ahead's last start is recorded 1h5[0-9]m.* ahead of the server's clock"
	assert_line --regexp 'info .*: schedules: paused is paused by [^ ]+@[^ ]+ \(rlock schedule resume paused\)'
	# The start ahead does not refuse the next: the slots are placed anew.
	run rlock exec -n --every 1h ahead -- touch ran
	assert_success
	[[ -e ran ]] || fail "a start ahead of the clock refused the next"
}

@test "schedule: who paused it, as the server holds it, reaches the terminal through the escaping rule (log.c), never a raw control byte" {
	run --separate-stderr rlock schedule declare --every 1h job
	assert_success
	run --separate-stderr rlock schedule pause job
	assert_success
	# Anyone who can write the server can put any bytes there.
	rcli HSET 'rlock:{job}:every' zb $'mallory\e[2J' >/dev/null
	run --separate-stderr rlock -v exec -n --every 1h job -- true
	assert_equal "$status" 38
	[[ $stderr != *$'\e'* ]] || fail "a raw ESC reached stderr: $(printf %q "$stderr")"
	[[ $stderr == *'paused by mallory\x1b[2J'* || $stderr == *'paused by mallory\e[2J'* ]] ||
		fail "the pauser is not shown escaped: $(printf %q "$stderr")"
}

@test "schedule: a start given back (a quorum's run that won too few servers) leaves a declared schedule declared: its period stays, never started, still overdue" {
	start_quorum 3
	quorum_urls
	run rlock "${URLS[@]}" schedule declare job --every 1s
	assert_success
	# Another holds it on two servers: the run wins one and gives it back.
	local i
	for i in 2 3; do qcli "$i" EVAL "$FAKE_HOLD" 1 'rlock:{job}' other 30000 >/dev/null; done
	run rlock "${URLS[@]}" exec -n --every 1s job -- touch ran
	assert_equal "$status" 1
	[[ ! -e ran ]] || fail "the command ran"
	assert_equal "$(qcli 1 EXISTS 'rlock:{job}')" 0
	assert_equal "$(qcli 1 HGET 'rlock:{job}:every' p | tr -d '\r')" 1000
	assert_equal "$(qcli 1 HEXISTS 'rlock:{job}:every' s | tr -d '\r')" 0
	run rlock -u "$Q1_URL" status job
	assert_line --partial "never started"
	# A period and its grace after the declaration: overdue.
	wait_server_ms "$(($(qcli 1 HGET 'rlock:{job}:every' d | tr -d '\r') + 1600))" ||
		fail "the server's clock did not move"
	run rlock -u "$Q1_URL" status --overdue
	assert_equal "$status" 1
	assert_output --partial "job:"
}
