#!/usr/bin/env bats
# cron.bats: exec --cron 'EXPR' (crontab(5)'s five fields, in the
# machine's time zone or --cron-tz's): a schedule's slots are the
# expression's times, a firing belongs to the nearest, and each gets one
# start across machines; status shows the next due time, and a schedule
# is overdue only when one of its times and its grace passed with no
# start (an expression with days off is not overdue on them).  The days
# are faked through the expression and the recorded slot, never the
# clock.

load helpers
setup() { own_server_setup; }
teardown() { test_teardown; }

# cron_fleet MINUTES [RLOCK-ARGS...]: around each of the next MINUTES
# minute boundaries (by the server's clock), three machines fire `rlock
# RLOCK-ARGS exec -n --cron '* * * * *' job`, 0.3 s before, at, and 0.5 s
# after it (their clocks disagree by that much); machine M talks to
# ${FLEET_U[M]} when FLEET_U is set.  Each run's fence goes to runs.
cron_fleet() {
	local minutes=$1 now next k m at i
	shift
	now=$(server_ms)
	next=$(((now / 60000 + 1) * 60000))
	# Too near the boundary to place a firing before it: the one after.
	((next - now < 1500)) && next=$((next + 60000))
	for ((k = 0; k < minutes; k++)); do
		i=0
		for m in -300 0 500; do
			at=$((next + k * 60000 + m))
			now=$(server_ms)
			((at > now)) && sleep "$(awk -v d=$((at - now)) 'BEGIN { printf "%.3f", d / 1000 }')"
			"$RLOCK" ${FLEET_U+-u "${FLEET_U[i]}"} "$@" exec -n --cron '* * * * *' --cron-tz UTC job -- \
			    sh -c 'echo "$RLOCK_FENCE" >>runs' >/dev/null 2>>err &
			echo $! >>pids
			i=$((i + 1))
		done
	done
	local pid st
	while read -r pid; do
		st=0
		wait "$pid" || st=$?
		[[ "$st" == [01] ]] || fail "exit $st: $(cat err)"
	done <pids
	assert_equal "$(cat err | wc -c)" 0
	echo "starts: $(tr '\n' ' ' <runs)"
	assert_equal "$(wc -l <runs)" "$minutes"
}

@test "cron: three machines firing '* * * * *' around two minute boundaries, 0.8 s apart, run it once a minute" {
	cron_fleet 2
	# One in each minute: their slots a minute apart.
	run awk 'NR == 1 { a = $1 } NR == 2 { print int(($1 - a) / 1000000) }' runs
	((output >= 58 && output <= 62)) || fail "starts $output s apart"
	run rlock status job
	assert_line --regexp "^  cron '\* \* \* \* \*' UTC: started .* ago on .* pid [0-9]+, exit 0; next due in [0-9.]+m?s$"
	run rlock --json status job
	json_check 'd["cron"] == "* * * * *" and d["cron_tz"] == "UTC" and d["every_ms"] == 60000 and d["next_due_ms"] % 60000 == 0 and d["overdue"] is False' <<<"$output"
}

# fake_last_start NAME MS: the schedule of NAME records its last start, a
# success, in the slot of MS (as a start then would have).
fake_last_start() {
	rcli HSET "rlock:{$1}:every" s "$2" c "$2" x exit:0 h elsewhere i 1 \
		r x a x f '' >/dev/null
}

@test "cron: a quorum of three, and a Cluster through three nodes: three machines around a minute boundary run it once" {
	start_quorum 3
	quorum_urls
	cron_fleet 1 "${URLS[@]}"
	local i
	for i in 1 2 3; do
		assert_equal "$(qcli "$i" HGET 'rlock:{job}:every' e | tr -d '\r')" '* * * * *'
	done
	rm -f runs pids err
	start_cluster
	local FLEET_U=("$C1_URL" "$C2_URL" "$C3_URL")
	cron_fleet 1
	run rlock -u "$C2_URL" --json status job
	json_check 'd["cron"] == "* * * * *"' <<<"$output"
}

@test "cron: an expression with days off is not overdue on them; one due every day is" {
	# Two days ago at 17:00 UTC: the last slot of an expression that runs
	# on that weekday only (five days off follow), and of one that runs
	# daily.  The daily one missed yesterday's: overdue.  (Today's weekday
	# and those dates come from the server's clock.)
	local now day date last
	now=$(server_ms)
	day=$(date -u -d "@$((now / 1000 - 2 * 86400))" +%w)
	date=$(date -u -d "@$((now / 1000 - 2 * 86400))" +%Y-%m-%d)
	last=$(($(date -u -d "$date 17:00" +%s) * 1000))
	run rlock schedule declare weekly --cron "0 17 * * $day" --cron-tz UTC
	assert_success
	run rlock schedule declare daily --cron '0 17 * * *' --cron-tz UTC
	assert_success
	fake_last_start weekly "$last"
	fake_last_start daily "$last"
	run rlock status --overdue
	assert_equal "$status" 1
	assert_line --partial "daily: free"
	refute_output --partial "weekly"
	run rlock --json status weekly
	json_check 'd["overdue"] is False and d["next_due_ms"] == '"$((last + 7 * 86400000))"' and d["grace_ms"] == 7 * 86400000 // 2' <<<"$output"
	run rlock --json status daily
	json_check 'd["overdue"] is True and d["next_due_ms"] == '"$((last + 86400000))" <<<"$output"
	run rlock status weekly
	assert_line --regexp "^  cron '0 17 \* \* $day' UTC: started .* ago on elsewhere pid 1, exit 0; next due in .*$"
}

@test "cron: a declared expression never started is due at its next time, and not overdue before" {
	# Every minute: due at the next minute (overdue 30 s after it).
	local t0
	t0=$(server_ms)
	run rlock schedule declare job --cron '* * * * *'
	assert_success
	run rlock --json status job
	json_check 'd["last_outcome"] == "never-started" and d["next_due_ms"] % 60000 == 0 and d["next_due_ms"] > '"$t0"' and d["overdue"] is False' <<<"$output"
}

@test "cron: bad input is a usage error that leaves nothing behind" {
	run --separate-stderr rlock exec --cron '61 * * * *' job -- touch ran
	assert_usage_error
	[[ "$stderr" == *"--cron '61 * * * *': minute 61 is out of range: give 0 to 59"* ]] || fail "$stderr"
	run --separate-stderr rlock exec --cron '* * * *' job -- touch ran
	assert_usage_error
	[[ "$stderr" == *"has 4 fields, not 5"* ]] || fail "$stderr"
	run --separate-stderr rlock exec --cron '* * * * *' --cron-tz Nowhere/Zone job -- touch ran
	assert_usage_error
	[[ "$stderr" == *"--cron-tz Nowhere/Zone is no time zone this machine knows"* ]] || fail "$stderr"
	run --separate-stderr rlock exec --cron '* * * * *' --every 1m job -- touch ran
	assert_usage_error
	run --separate-stderr rlock exec --cron-tz UTC job -- touch ran
	assert_usage_error
	run --separate-stderr rlock exec --cron '* * * * *' --splay 40s job -- touch ran
	assert_usage_error
	run --separate-stderr rlock schedule declare job --cron '* * 32 * *'
	assert_usage_error
	[[ ! -e ran ]] || fail "the command ran"
	assert_equal "$(rcli DBSIZE | tr -d '\r')" 0
}
