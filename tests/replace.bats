#!/usr/bin/env bats
# replace.bats: exec --replace (deploy queues, rlock-exec(7)): the newcomer
# asks the running holder to stop; the holder's rlock sees the request at
# its next extend, stops its command as at --max-runtime (the --on-lost
# signal, SIGKILL after --kill-after), releases and exits 37; the newcomer
# is handed the lock and runs only after the old command is gone.  A
# holder started with --no-replace is waited for; one whose rlock cannot
# answer (stopped) is stopped by its guard and its lock's expiry, never
# overlapped.

load helpers
setup() {
	own_server_setup
	# The old deploy: says when it started and when SIGTERM came.
	cat >old.sh <<'SH'
trap 'echo "old-term $(date +%s%N)" >>log; exit 143' TERM
echo "old-start $(date +%s%N)" >>log
while :; do sleep 0.05; done
SH
	cat >new.sh <<'SH'
echo "new-start $(date +%s%N)" >>log
SH
}
teardown() { test_teardown; }

# until_logged WORD: poll (up to 30 s) until log has a line starting WORD.
until_logged() {
	local i
	for ((i = 0; i < 1500; i++)); do
		grep -q "^$1 " log 2>/dev/null && return 0
		sleep 0.02
	done
	fail "log has no '$1' line: $(cat log 2>/dev/null)"
}

# stamp WORD: the time on log's WORD line (ns).
stamp() {
	sed -n "s/^$1 //p" log
}

@test "replace: --replace stops a running deploy (SIGTERM, exit 37) and starts the new one after it stopped" {
	local t0
	bg_start OLD "$RLOCK" exec -t 3s deploy -- sh old.sh
	until_logged old-start
	t0=$(now_ms)
	bg_start NEW "$RLOCK" exec --replace -w 30s deploy -- sh new.sh
	bg_wait "$OLD" 20000 || fail "the old deploy was not stopped"
	assert_equal "$BG_STATUS" 37
	run cat OLD.err
	assert_line --regexp "^rlock: deploy: replaced by $(hostname) pid $NEW \\(--replace\\); the command was stopped \\(SIGTERM\\)\$"
	bg_wait "$NEW" 20000 || fail "the new deploy did not run"
	assert_equal "$BG_STATUS" 0
	# The old command saw SIGTERM before the new one started.
	[[ -n "$(stamp old-term)" ]] || fail "the old command never got SIGTERM: $(cat log)"
	(($(stamp old-term) <= $(stamp new-start))) || fail "overlap: $(cat log)"
	# Within a heartbeat (1 s) and a hand-over, with room for a loaded machine.
	assert_between $(($(stamp new-start) / 1000000 - t0)) 0 10000 replaced_in_ms
	run rlock log deploy
	assert_output --partial " replaced: "
	assert_output --partial ": stopped at a newcomer's --replace, fence "
}

@test "replace: a holder started with --no-replace is waited for, its command left alone" {
	bg_start OLD "$RLOCK" exec -t 3s --no-replace deploy -- sh -c 'echo "old-start 0" >>log; while [ ! -e go ]; do sleep 0.05; done; echo "old-end $(date +%s%N)" >>log'
	until_logged old-start
	bg_start NEW "$RLOCK" exec --replace -w 30s deploy -- sh new.sh
	until_listed deploy 1
	# Two heartbeats of the holder pass: it goes on.
	local pttl i
	for ((i = 0; i < 250; i++)); do
		pttl=$(rcli PTTL 'rlock:{deploy}')
		((pttl > 2500)) && break
		sleep 0.02
	done
	_proc_alive "$OLD" || fail "the --no-replace holder ended: $(cat OLD.err)"
	touch go
	bg_wait "$OLD" 20000 || fail "the old deploy did not end"
	assert_equal "$BG_STATUS" 0
	bg_wait "$NEW" 20000 || fail "the new deploy did not run"
	assert_equal "$BG_STATUS" 0
	(($(stamp old-end) <= $(stamp new-start))) || fail "overlap: $(cat log)"
}

@test "replace: a holder whose rlock is stopped (SIGSTOP) is stopped by its guard and its lock's expiry, never overlapped" {
	bg_start OLD "$RLOCK" exec -t 2s deploy -- sh old.sh
	until_logged old-start
	kill -STOP "$OLD"
	bg_start NEW "$RLOCK" exec --replace -w 30s deploy -- sh new.sh
	bg_wait "$NEW" 30000 || fail "the new deploy did not run"
	assert_equal "$BG_STATUS" 0
	[[ -n "$(stamp old-term)" ]] || fail "the old command never got SIGTERM: $(cat log)"
	(($(stamp old-term) <= $(stamp new-start))) || fail "overlap: $(cat log)"
	kill -CONT "$OLD"
	bg_wait "$OLD" 20000 || fail "the old rlock did not end"
}

@test "replace: mixes that make no sense are refused with 64 and a reason" {
	run --separate-stderr rlock exec --replace -n deploy -- true
	assert_usage_error
	run --separate-stderr rlock exec --replace --shared -w 1s deploy -- true
	assert_usage_error
	run --separate-stderr rlock exec --replace --limit 2 -w 1s deploy -- true
	assert_usage_error
	run --separate-stderr rlock exec --replace --no-replace -w 1s deploy -- true
	assert_usage_error
}

@test "replace: status shows a holder being replaced and by whom, in text, --json (schema) and openmetrics" {
	local holder
	holder=$(rlock acquire -t 60s deploy)
	bg_start NEW "$RLOCK" exec --replace -w 30s deploy -- true
	until_listed deploy 1
	run rlock status deploy
	assert_line --index 0 --regexp "^deploy: held by .*, being replaced by $(hostname) pid $NEW\$"
	run rlock --json status deploy
	assert_output --partial "\"replaced_by\":{\"host\":\"$(hostname)\",\"pid\":$NEW}"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/validate-json.py" status.json <<<"$output"
	run rlock status --format openmetrics deploy
	assert_line 'rlock_replace_requested{name="deploy"} 1'
	rlock release --token "$holder" deploy
	bg_wait "$NEW" 20000 || fail "the newcomer did not run"
	assert_equal "$BG_STATUS" 0
	run rlock status --format openmetrics deploy
	assert_line 'rlock_replace_requested{name="deploy"} 0'
}

@test "replace: rlock watch shows who superseded whom and who replaced whom, as they happen" {
	local holder i
	rlock exec deploy -- true	# old events are not shown again
	bg_start WATCH "$RLOCK" watch deploy
	for ((i = 0; i < 500; i++)); do
		rcli CLIENT LIST | grep -q 'cmd=xread' && break
		sleep 0.01
	done
	holder=$(rlock acquire -t 60s deploy)
	bg_start A "$RLOCK" exec --pending 1 -w 30s deploy -- true
	until_listed deploy 1
	bg_start B "$RLOCK" exec --pending 1 --replace -w 30s deploy -- true
	bg_wait "$A" 20000 || fail "A was not superseded"
	assert_equal "$BG_STATUS" 36
	for ((i = 0; i < 1000; i++)); do
		grep -q " deploy replaced: " WATCH.out && break
		sleep 0.02
	done
	rlock release --token "$holder" deploy
	bg_wait "$B" 20000 || fail "B did not run"
	assert_equal "$BG_STATUS" 0
	run cat WATCH.out
	assert_line --regexp " deploy superseded: [^ ]+@[^ ]+ pid $A \\(true\\), by [^ ]+@$(hostname) pid $B\$"
	assert_line --regexp " deploy replaced: [^ ]+@[^ ]+ pid [0-9]+, by [^ ]+@$(hostname) pid $B, fence [0-9]+\$"
	kill -INT "$WATCH"
	bg_wait "$WATCH" 5000 || fail "watch is still running"
}

@test "replace: a holder kept by acquire --hold is replaced: its owner gets SIGTERM, the keeper gives the lock back once it ended, the newcomer runs after" {
	cat >owner.sh <<SH
trap 'echo "owner-term \$(date +%s%N)" >>log; exit 143' TERM
T=\$("$RLOCK" acquire --hold -t 3s deploy) || exit 1
echo "owner-start \$(date +%s%N)" >>log
while :; do sleep 0.05; done
SH
	bg_start OWNER sh owner.sh
	until_logged owner-start
	bg_start NEW "$RLOCK" exec --replace -w 30s deploy -- sh new.sh
	bg_wait "$OWNER" 20000 || fail "the owner was not stopped"
	assert_equal "$BG_STATUS" 143
	run cat OWNER.err
	assert_output --regexp "rlock: lock 'deploy' held by acquire --hold is replaced by $(hostname) pid $NEW \\(--replace\\); pid $OWNER was sent SIGTERM"
	bg_wait "$NEW" 20000 || fail "the new deploy did not run"
	assert_equal "$BG_STATUS" 0
	(($(stamp owner-term) <= $(stamp new-start))) || fail "overlap: $(cat log)"
}

@test "replace: acquire --hold --no-replace is waited for, its owner left alone" {
	local tok
	bg_start OWNER sleep 60
	tok=$(rlock acquire --hold --pid "$OWNER" --no-replace -t 3s deploy)
	bg_start NEW "$RLOCK" exec --replace -w 30s deploy -- sh new.sh
	until_listed deploy 1
	local i pttl
	for ((i = 0; i < 250; i++)); do
		pttl=$(rcli PTTL 'rlock:{deploy}')
		((pttl > 2500)) && break
		sleep 0.02
	done
	_proc_alive "$NEW" || fail "the newcomer ended: $(cat NEW.err)"
	_proc_alive "$OWNER" || fail "the owner was stopped"
	assert_equal "$(rcli HGET 'rlock:{deploy}' "$tok" | grep -c '"qh"')" 0
	rlock release --token "$tok" deploy
	bg_wait "$NEW" 20000 || fail "the new deploy did not run"
	assert_equal "$BG_STATUS" 0
}

@test "replace: a replaced run with --min-hold lets go at once, not at --min-hold" {
	bg_start OLD "$RLOCK" exec -t 3s --min-hold 1h deploy -- sh old.sh
	until_logged old-start
	bg_start NEW "$RLOCK" exec --replace -w 30s deploy -- sh new.sh
	bg_wait "$OLD" 20000 || fail "the old deploy was not stopped"
	assert_equal "$BG_STATUS" 37
	bg_wait "$NEW" 20000 || fail "the new deploy did not run"
	assert_equal "$BG_STATUS" 0
}
