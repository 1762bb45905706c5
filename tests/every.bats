#!/usr/bin/env bats
# every.bats: exec --every PERIOD, a crontab line for a fleet.  At most one
# start of a name a period across every machine, judged on the server's
# clock (a start less than half a period after the last is refused, quiet,
# the busy status); --retry-failed counts only a success; a name whose
# runs stop is overdue in status, --json, openmetrics and --overdue after
# one and a half periods; --splay spreads starts.  "Machines" are
# processes, each firing the same line as cron would.

load helpers
setup() { own_server_setup; }
teardown() { test_teardown; }

# wait_line FILE TEXT [MAX_MS]: until FILE has a line with TEXT (bounded).
wait_line() {
	local i
	for ((i = 0; i < ${3:-5000} / 20; i++)); do
		grep -qF -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.02
	done
	return 1
}

# fleet_ran PERIODS: what fleet's machines did, by the rule: every start
# was let in at least half a period (1 s) after the one before it, by the
# server's clock (its fences, less 50 ms for the time a reply takes), and
# no period went without one (none more than a period and the machines'
# spread, with room for a busy machine, after the one before); every
# machine exited 0 (it ran) or 1 (refused), quietly.  A machine that a
# busy host made later than half a period is the next period's start, as
# the rule says; on a quiet machine there is exactly one run a period.
fleet_ran() {
	local periods=$1 prev=0 f n
	n=$(wc -l <runs)
	echo "$n runs in $periods periods: $(awk '{ printf "%s ", $2 }' runs)"
	((n >= periods)) || fail "$n runs in $periods periods"
	for f in $(awk '{ print $2 }' runs | sort -n); do
		if ((prev > 0)); then
			((f - prev >= 950000)) || fail "two starts $(((f - prev) / 1000)) ms apart"
			((f - prev <= 3300000)) || fail "no start for $(((f - prev) / 1000)) ms: a period was skipped"
		fi
		prev=$f
	done
	assert_equal "$(grep -cx 0 st.all)" "$n"
	[[ "$(grep -cvx '[01]' st.all)" == 0 ]] ||
		fail "exit statuses: $(tr '\n' ' ' <st.all); stderr: $(cat err.*)"
	assert_equal "$(cat err.* | wc -c)" 0
}

# The start the schedule of NAME records, in server ms (0: none).
last_start() {
	local s
	s=$(rcli HGET "rlock:{$1}:every" s | tr -d '\r')
	echo "${s:-0}"
}

# fleet PERIODS PERIOD_S NAME [RLOCK-ARGS...]: PERIODS periods of PERIOD_S
# seconds; in each, three machines fire `rlock RLOCK-ARGS exec --every
# PERIOD_S NAME` 0, 0.4 and 0.8 s after the period's start (their clocks
# and crons disagree by that much).  Each run writes "start FENCE" to
# runs: its fence, the server's clock in microseconds when the lock was
# taken (a quorum's: the client's, a second ahead); each machine's exit
# status goes to st.all.  With the array FLEET_U set, machine M talks to
# the server ${FLEET_U[M]}.
fleet() {
	local periods=$1 period=$2 name=$3 k m t0 at now
	shift 3
	t0=${EPOCHREALTIME/./}
	for ((k = 0; k < periods; k++)); do
		for m in 0 1 2; do
			# When this machine's cron fires, by the test's clock.
			at=$((t0 + k * period * 1000000 + m * 400000))
			now=${EPOCHREALTIME/./}
			((at > now)) && sleep "$(awk -v d=$((at - now)) 'BEGIN { printf "%.6f", d / 1e6 }')"
			"$RLOCK" ${FLEET_U+-u "${FLEET_U[m]}"} "$@" exec --every "${period}s" "$name" -- \
			    sh -c 'echo "start $RLOCK_FENCE" >>runs' \
			    >/dev/null 2>"err.$k.$m" &
			echo $! >>fleet.pids
		done
	done
	local pid st
	while read -r pid; do
		st=0
		wait "$pid" || st=$?
		echo "$st" >>st.all
	done <fleet.pids
}

@test "every: three machines firing the same --every 2s line, 0.8 s apart, run it once a period for 10 periods" {
	fleet 10 2 job
	fleet_ran 10
	# The lock itself is free; the schedule stays with the name.
	assert_lock_free job
	run rlock status
	assert_success
	assert_line --partial "job: free"
	# (Overdue too when a busy machine ran this status over 3 s after the
	# last start.)
	assert_line --regexp '^  every 2s: started .* ago on .* pid [0-9]+, exit 0(; overdue)?$'
}

@test "every: a machine firing 0.9 s into a 2 s period is refused, quiet, with -E's status and a line with -v; the next period's is let in" {
	# Refused at once: 1, nothing on stderr; -E 3; -v says why.  (A
	# period of its own, long enough for a busy machine's three runs.)
	run rlock exec --every 20s soon -- true
	assert_success
	run --separate-stderr rlock exec --every 20s soon -- touch ran
	assert_equal "$status" 1
	assert_equal "$stderr" ""
	[[ ! -e ran ]] || fail "the command ran"
	run --separate-stderr rlock exec -E 3 --every 20s soon -- touch ran
	assert_equal "$status" 3
	run --separate-stderr rlock -v exec --every 20s soon -- touch ran
	assert_equal "$status" 1
	[[ "$stderr" == *"soon: this slot's run started "*" ago on "*" (--every 20s); not running the command"* ]] ||
		fail "no -v line: $stderr"
	[[ ! -e ran ]] || fail "the command ran"
	run rlock exec --every 2s job -- true
	assert_success
	local s0
	s0=$(last_start job)
	# 0.9 s after that start by the server's clock: refused, unless this
	# machine was slower still and its start came after the half period
	# (then it is the next period's, and recorded as such).
	local i
	for ((i = 0; i < 500; i++)); do
		(($(server_ms) - s0 >= 900)) && break
		sleep 0.01
	done
	run rlock exec --every 2s job -- touch ran
	if [[ -e ran ]]; then
		assert_success
		(($(last_start job) - s0 >= 1000)) || fail "let in $(($(last_start job) - s0)) ms after the last start"
	else
		assert_equal "$status" 1
		assert_equal "$(last_start job)" "$s0"
	fi
	# The next slot's start, let in: slots stay on the first start's grid
	# (centres s0, s0 + 2 s, ...), so the next one opens at s0 + 1 s, or
	# at s0 + 3 s when a slow machine's start above was let in as the
	# second slot's (a second after that start is still its slot).
	local next=$((s0 + 1000))
	[[ -e ran ]] && next=$((s0 + 3000))
	for ((i = 0; i < 700; i++)); do
		(($(server_ms) >= next)) && break
		sleep 0.01
	done
	rm -f ran
	run rlock exec --every 2s job -- touch ran
	assert_success
	[[ -e ran ]] || fail "the next period's start did not run"
}

@test "every: a job longer than its period keeps the next period's start out by the lock; -w waits for it" {
	bg_start A "$RLOCK" exec --every 1s job -- sh -c 'echo 1 >a.started; sleep 3; touch a.done'
	wait_file a.started 10000 || fail "A did not start: $(cat A.err)"
	local s0 i
	s0=$(last_start job)
	for ((i = 0; i < 500; i++)); do
		(($(server_ms) - s0 >= 600)) && break
		sleep 0.01
	done
	# The next period: the schedule lets it in, the lock does not.
	run --separate-stderr rlock exec -n --every 1s job -- touch b.ran
	assert_equal "$status" 1
	[[ ! -e b.ran ]] || fail "B ran beside A"
	# Waiting: it runs once A is over.
	run --separate-stderr rlock exec -w 20s --every 1s job -- sh -c '[ -e a.done ] && touch b.ran'
	assert_success
	[[ -e b.ran ]] || fail "B did not run after A: $stderr"
	bg_wait "$A" 10000
	assert_equal "$BG_STATUS" 0
}

@test "every: --retry-failed: a failed run is retried once, by the first waiter; those behind a success skip" {
	# A fails after a moment; B and C wait for it (B first).
	bg_start A "$RLOCK" exec --every 20s --retry-failed job -- sh -c 'echo 1 >a.started; sleep 1; exit 2'
	wait_file a.started 10000 || fail "A did not start: $(cat A.err)"
	bg_start B "$RLOCK" exec -w 20s --every 20s --retry-failed job -- sh -c 'echo B >>runs'
	until_waiting 1 rlock status job
	bg_start C "$RLOCK" exec -w 20s --every 20s --retry-failed job -- sh -c 'echo C >>runs'
	until_waiting 2 rlock status job
	bg_wait "$A" 15000 || fail "A did not end"
	assert_equal "$BG_STATUS" 2
	bg_wait "$B" 15000 || fail "B did not end"
	assert_equal "$BG_STATUS" 0
	bg_wait "$C" 15000 || fail "C did not end"
	assert_equal "$BG_STATUS" 1
	assert_equal "$(cat runs)" "B"
	# The history says whose run counted: A's ended 2, B's 0.
	run rlock log job
	assert_output --partial "exit 2"
	assert_output --partial "exit 0"
	# A success in this period: no more runs, with or without waiting.
	run rlock exec --every 20s --retry-failed job -- sh -c 'echo D >>runs'
	assert_equal "$status" 1
	assert_equal "$(cat runs)" "B"
}

@test "every: without --retry-failed a failed run counts; a success keeps its waiters out at once" {
	run rlock exec --every 20s job -- false
	assert_equal "$status" 1	# false's own status
	run rlock exec --every 20s job -- touch ran
	assert_equal "$status" 1
	[[ ! -e ran ]] || fail "a failed run did not count"
	# --retry-failed on a name whose last run failed, without it: counted.
	run rlock exec --every 20s --retry-failed job -- touch ran
	assert_equal "$status" 1
	[[ ! -e ran ]] || fail "the failed run's period was reopened"
	# A successful run with --retry-failed, a waiter behind it: refused as
	# soon as the run ends, not at its -w.
	bg_start A "$RLOCK" exec --every 20s --retry-failed job2 -- sh -c 'echo 1 >a.started; sleep 1'
	wait_file a.started 10000 || fail "A did not start: $(cat A.err)"
	bg_start B "$RLOCK" exec -w 30s --every 20s --retry-failed job2 -- touch b.ran
	until_waiting 1 rlock status job2
	bg_wait "$A" 15000
	assert_equal "$BG_STATUS" 0
	bg_wait "$B" 10000 || fail "B still waits after A's success"
	assert_equal "$BG_STATUS" 1
	[[ ! -e b.ran ]] || fail "B ran after a success"
}

@test "every: a name whose runs stop is overdue after one and a half periods, in status, --json, openmetrics and --overdue, and not before" {
	run rlock exec --every 4s job -- true
	assert_success
	run rlock exec --every 1h other -- true
	assert_success
	local s0
	s0=$(last_start job)
	# Not yet.
	run rlock status --overdue
	assert_success
	assert_output ""
	run rlock --json status job	# (free: exits 1)
	json_check 'd["every_ms"] == 4000 and d["overdue"] is False and d["last_exit_status"] == 0 and d["last_outcome"] == "exit:0" and d["last_start_ms"] > 0' <<<"$output"
	# (A period of 4 s: these few calls fit in the 6 s before it is due,
	# on a busy machine too.)
	# More than 6 s after its last start, by the server's clock.
	local i
	for ((i = 0; i < 2000; i++)); do
		(($(server_ms) - s0 > 6000)) && break
		sleep 0.01
	done
	run rlock status --overdue
	assert_equal "$status" 1
	assert_line --partial "job: free"
	assert_line --partial "; overdue"
	refute_output --partial "other"
	run rlock status --overdue other
	assert_success
	assert_output ""
	run rlock --json status job
	json_check 'd["overdue"] is True' <<<"$output"
	run rlock status --format openmetrics
	assert_success
	assert_line 'rlock_every_seconds{name="job"} 4'
	assert_line 'rlock_overdue{name="job"} 1'
	assert_line 'rlock_overdue{name="other"} 0'
	assert_line --regexp '^rlock_last_start_timestamp_seconds\{name="job"\} [0-9.]+$'
	assert_line 'rlock_last_run_exit_status{name="job"} 0'
	run rlock doctor
	assert_output --partial "job"
	assert_output --partial "overdue"
	# A new start: no longer overdue.
	run rlock exec --every 4s job -- true
	assert_success
	run rlock status --overdue
	assert_success
}

@test "every: --splay spreads 20 starts over its window, each below it; a signal during the splay ends it cleanly" {
	local n
	for ((n = 0; n < 20; n++)); do
		"$RLOCK" -v exec --splay 2s "job$n" -- true 2>"splay.$n" &
		echo $! >>pids
	done
	local pid
	while read -r pid; do wait "$pid"; done <pids
	# Each slept what it says, in [0, 2 s); together they fill the window.
	cat splay.* | sed -n 's/.*sleeping \([0-9.]*\)\(m\?s\) first (--splay 2s).*/\1 \2/p' |
		awk '{ print ($2 == "ms" ? $1 : $1 * 1000) }' >ms
	assert_equal "$(wc -l <ms)" 20
	run awk 'NR == 1 || $1 < lo { lo = $1 } $1 > hi { hi = $1 }
		{ q[int($1 / 500)] = 1 }
		END { n = 0; for (k in q) n++; print lo, hi, n }' ms
	local lo hi quarters
	read -r lo hi quarters <<<"$output"
	awk -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(lo >= 0 && hi < 2000 && hi - lo >= 800) }' ||
		fail "splays from $lo to $hi ms: $(tr '\n' ' ' <ms)"
	((quarters >= 3)) || fail "splays in $quarters of the window's quarters: $(tr '\n' ' ' <ms)"
	# A signal while it sleeps: it ends as it would while waiting, with
	# nothing taken and nothing run.
	bg_start S "$RLOCK" -v exec --splay 10m job -- touch ran
	wait_line S.err "first (--splay" 10000 || fail "no splay line: $(cat S.err)"
	kill -TERM "$S"
	bg_wait "$S" 5000 || fail "still sleeping after SIGTERM"
	assert_equal "$BG_STATUS" 143
	[[ ! -e ran ]] || fail "the command ran"
	assert_lock_free job
}

@test "every: bad combinations are usage errors that leave nothing behind" {
	run --separate-stderr rlock exec --retry-failed job -- true
	assert_usage_error
	[[ "$stderr" == *"--retry-failed goes with --every"* ]] || fail "$stderr"
	run --separate-stderr rlock exec --every 1m --shared job -- true
	assert_usage_error
	run --separate-stderr rlock exec --every 1m --limit 2 job -- true
	assert_usage_error
	run --separate-stderr rlock exec --every 1m --min-hold 10s job -- true
	assert_usage_error
	[[ "$stderr" == *"drop --min-hold"* ]] || fail "$stderr"
	run --separate-stderr rlock exec --every 1m --splay 30s job -- true
	assert_usage_error
	[[ "$stderr" == *"--splay 30s is not less than half of --every 1m"* ]] || fail "$stderr"
	run --separate-stderr rlock acquire --every 1m job
	assert_usage_error
	run --separate-stderr rlock exec --every 1m --splay 29s job -- touch ran
	assert_success
	[[ -e ran ]] || fail "a splay under half the period was refused"
	assert_equal "$(rcli EXISTS 'rlock:{job}:every')" 1
}

@test "every: a quorum of three: three machines, three periods, one run each; a server down changes nothing" {
	start_quorum 3
	quorum_urls
	fleet 3 2 job "${URLS[@]}"
	fleet_ran 3
	# Each server recorded the period's start with the lock.
	local i
	for i in 1 2 3; do
		assert_equal "$(qcli "$i" HGET 'rlock:{job}:every' p | tr -d '\r')" 2000
	done
	stop_redis Q3
	rm -f runs st.all fleet.pids err.*
	fleet 2 2 job "${URLS[@]}"
	fleet_ran 2
}

@test "every: a Cluster: three machines through three different nodes, three periods, one run each" {
	start_cluster
	local FLEET_U=("$C1_URL" "$C2_URL" "$C3_URL")
	fleet 3 2 job
	fleet_ran 3
	# The schedule is on the node that serves the name's slot.
	run rlock -u "$C2_URL" --json status job
	json_check 'd["every_ms"] == 2000' <<<"$output"
}

@test "every: a start costs no round trip of its own: as many commands sent as a plain exec's (--cron too)" {
	run rlock exec warm -- true
	run rlock exec --every 1h warm2 -- true
	local plain every
	rcli CONFIG RESETSTAT >/dev/null
	run rlock exec plain -- true
	assert_success
	plain=$(cmd_calls evalsha eval blpop)
	rcli CONFIG RESETSTAT >/dev/null
	run rlock exec --every 1h sched -- true
	assert_success
	every=$(cmd_calls evalsha eval blpop)
	assert_equal "$every" "$plain"
	assert_equal "$plain" 2	# acquire, release
	# --cron too: its times go with the acquire.
	run rlock exec --cron '0 0 1 1 *' warm3 -- true
	rcli CONFIG RESETSTAT >/dev/null
	run rlock exec --cron '0 0 1 1 *' cron -- true
	assert_success
	assert_equal "$(cmd_calls evalsha eval blpop)" "$plain"
}

# wait_server_ms MS: until the server's clock has passed MS (bounded: 30 s).
wait_server_ms() {
	local i
	for ((i = 0; i < 3000; i++)); do
		(($(server_ms) >= $1)) && return 0
		sleep 0.01
	done
	return 1
}

@test "every: slots: one machine firing every 0.5 s with --every 4s starts once per 4 s slot, for 5 slots" {
	# The slots are a grid of 4 s placed around the first start; each gets
	# one start, however often the machine fires (the crontab idiom "fire
	# often, run once a period": catch-up after a reboot).
	local t0 k at now
	t0=${EPOCHREALTIME/./}
	for ((k = 0; k < 42; k++)); do
		at=$((t0 + k * 500000))
		now=${EPOCHREALTIME/./}
		((at > now)) && sleep "$(awk -v d=$((at - now)) 'BEGIN { printf "%.6f", d / 1e6 }')"
		st=0
		"$RLOCK" exec -n --every 4s job -- sh -c 'echo "$RLOCK_FENCE" >>runs' 2>>err || st=$?
		[[ "$st" == [01] ]] || fail "exit $st: $(cat err)"
	done
	assert_equal "$(cat err | wc -c)" 0
	# Each start's slot, from the first start (its fence: the server's
	# clock in microseconds): one start in each, none skipped, slots 0 to 4
	# at least (42 firings cover 20.5 s).  In whole milliseconds, as the
	# script judges a firing: a start 1999.6 ms after the first by the
	# microseconds is 2000 ms after it by the milliseconds, the next slot's.
	run awk 'NR == 1 { c = int($1 / 1000) } { printf "%d\n", int((int($1 / 1000) - c + 2000) / 4000) }' runs
	echo "starts: $(tr '\n' ' ' <runs); slots: $(echo $output)"
	local slots
	slots=$(echo $output)
	[[ "$slots" == "0 1 2 3 4" || "$slots" == "0 1 2 3 4 5" ]] ||
		fail "starts by slot: $slots (one a slot wanted)"
}

@test "every: slots: --retry-failed -w: a waiter that fired in the slot of a success longer than half the slot is refused, and the next slot runs" {
	# A runs past half its 6 s slot and exits 0; B fired 0.3 s into the
	# slot and waits: it belongs to A's slot, which has had its success.
	bg_start A "$RLOCK" exec --every 6s --retry-failed job -- sh -c 'echo A >>runs; i=0; while [ ! -e a.go ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i + 1)); done'
	wait_file runs 10000 || fail "A did not start: $(cat A.err)"
	local s0
	s0=$(last_start job)
	wait_server_ms $((s0 + 300)) || fail "the server's clock stands still"
	bg_start B "$RLOCK" exec -w 30s --every 6s --retry-failed job -- sh -c 'echo B >>runs'
	until_waiting 1 rlock status job
	(($(server_ms) < s0 + 3000)) || skip "B fired past half A's slot (a machine too busy for this test)"
	# A ends past half the slot.
	wait_server_ms $((s0 + 3300)) || fail "the server's clock stands still"
	touch a.go
	bg_wait "$A" 15000 || fail "A did not end"
	assert_equal "$BG_STATUS" 0
	bg_wait "$B" 15000 || fail "B still waits after A's success"
	assert_equal "$BG_STATUS" 1
	assert_equal "$(cat runs | tr '\n' ' ')" "A "
	# The next slot (3 s to 9 s after A's start): its firing runs.
	wait_server_ms $((s0 + 6000)) || fail "the server's clock stands still"
	run --separate-stderr rlock exec -n --every 6s --retry-failed job -- sh -c 'echo C >>runs'
	assert_success
	assert_equal "$(cat runs | tr '\n' ' ')" "A C "
}

@test "every: a run that ended without a release is shown so, in text and JSON, never running while the lock is free" {
	# Running: it holds the lock.
	bg_start A "$RLOCK" exec --every 1h job -- sh -c 'echo 1 >a.started; i=0; while [ ! -e a.go ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i + 1)); done'
	wait_file a.started 10000 || fail "A did not start: $(cat A.err)"
	run rlock status job
	assert_line --regexp '^  every 1h: started .* ago on .* pid [0-9]+, running$'
	run rlock --json status job
	json_check 'd["last_outcome"] == "running" and d["last_exit_status"] is None' <<<"$output"
	touch a.go
	bg_wait "$A" 10000
	# A run that died without a word: its schedule says it runs (no
	# release wrote its outcome), and the lock is free.
	rcli HSET 'rlock:{job}:every' x '' >/dev/null
	run rlock status job
	assert_line --regexp '^  every 1h: started .* ago on .* pid [0-9]+, ended without a release$'
	refute_output --partial "running"
	run rlock --json status job
	json_check 'd["last_outcome"] == "ended-without-release" and d["last_exit_status"] is None' <<<"$output"
	RLOCK_SCHEMA_DIR="$BATS_TEST_DIRNAME/../doc/schema" /usr/bin/python3 "$BATS_TEST_DIRNAME/validate-json.py" status.json <<<"$output" ||
		fail "not the schema's"
}

@test "every: slots: a firing belongs to its slot however long its --splay slept: six machines firing 1 s into a 4 s slot with --splay 1.9s are all refused" {
	run rlock exec --every 4s job -- true
	assert_success
	local s0 m
	s0=$(last_start job)
	wait_server_ms $((s0 + 1000)) || fail "the server's clock stands still"
	# Each attempts up to 1.9 s later: past the slot's edge (2 s after its
	# start) for about half of them, but each fired in the slot that ran.
	for m in 1 2 3 4 5 6; do
		"$RLOCK" -v exec --every 4s --splay 1900ms job -- sh -c 'echo ran >>runs' 2>"splay.$m" &
		echo $! >>pids
	done
	local fired pid st
	fired=$(server_ms)
	while read -r pid; do
		st=0
		wait "$pid" || st=$?
		echo "$st" >>st.all
	done <pids
	((fired - s0 < 1900)) || skip "the machines fired too late (a machine too busy for this test)"
	assert_equal "$(sort -u st.all | tr '\n' ' ')" "1 "
	[[ ! -e runs ]] || fail "a splayed firing of the slot that ran ran again: $(cat splay.*)"
}
