#!/usr/bin/env bats
# history.bats: each lock keeps a capped, expiring history in the stream
# PREFIX{NAME}:log, written by the scripts themselves; rlock log shows it
# newest first, in text and JSON.

load helpers
setup() { own_server_setup; }
teardown() { test_teardown; }

# jlog NAME EXPR: rlock --json log NAME parsed as a list `d` (newest
# first), EXPR checked as json_check does.
jlog() {
	local name=$1
	shift
	rlock --json log -n 100 "$name" |
		/usr/bin/python3 -c 'import json,sys; d=[json.loads(l) for l in sys.stdin]; r=eval(sys.argv[1]); print(r); sys.exit(0 if r is True else 1)' "$1"
}

@test "history: exec's runs are recorded with their outcome, newest first (text and JSON)" {
	rlock exec job -- true
	run rlock exec job -- sh -c 'exit 3'
	assert_equal "$status" 3
	run rlock exec job -- sh -c 'kill -KILL $$'
	assert_equal "$status" 137
	run rlock exec --max-runtime 200ms job -- sleep 10
	assert_equal "$status" 124
	run rlock log job
	assert_success
	assert_equal "${#lines[@]}" 8
	assert_line --index 0 --regexp "^[0-9-]+ [0-9:.]+ job released by [^ ]+@[^ ]+ pid [0-9]+ \(sleep\) after [0-9.]+m?s: stopped at --max-runtime, fence [0-9]+$"
	assert_line --index 1 --regexp " job acquired by .* \(sleep\), fence [0-9]+$"
	assert_line --index 2 --regexp ": killed by SIGKILL, fence "
	assert_line --index 4 --regexp ": exit 3, fence "
	assert_line --index 6 --regexp "\(true\) after .*: exit 0, fence "
	jlog job '[e["event"] for e in d] == ["released", "acquired"] * 4'
	jlog job '[e.get("exit_status", e.get("signal", e.get("reason"))) for e in d if e["event"] == "released"] == ["max-runtime", "SIGKILL", 3, 0]'
	jlog job 'all("outcome" not in e for e in d)'
	jlog job 'all(e["host"] and e["pid"] > 0 and e["user"] and e["fence"] > 0 for e in d)'
	jlog job 'all(e["held_ms"] >= 0 for e in d if e["event"] == "released") and d[0]["held_ms"] >= 150'
	# A release and its acquire carry one fence; later runs larger ones.
	jlog job 'd[0]["fence"] == d[1]["fence"] > d[2]["fence"] == d[3]["fence"]'
}

@test "history: acquire and release, a wait, a force and an expiry are recorded" {
	local t1 t2
	t1=$(rlock acquire -t 30s job)
	bg_start W "$RLOCK" acquire -w 20s -t 30s job
	until_waiting 1 rlock status job
	local i
	rlock release --token "$t1" job
	bg_wait "$W" 10000 || fail "the waiter is still waiting"
	run rlock release --force job
	assert_success
	t2=$(rlock acquire -t 300ms job)
	for ((i = 0; i < 500; i++)); do
		[[ "$(rcli EXISTS 'rlock:{job}')" == 0 ]] && break
		sleep 0.01
	done
	rlock acquire -t 30s job >/dev/null
	run rlock log job
	assert_success
	assert_line --index 0 --regexp " job acquired by "
	assert_line --index 1 --regexp " job expired: .* was never released, fence [0-9]+$"
	assert_line --index 3 --regexp " job forced by [^ ]+@[^ ]+ pid [0-9]+: removed "
	assert_line --index 5 --regexp " job released by .*: by rlock release, fence "
	jlog job '[e["event"] for e in d] == ["acquired", "expired", "acquired", "forced", "acquired", "released", "acquired"]'
	jlog job 'd[4]["waited_ms"] > 0 and d[6]["waited_ms"] == 0'
	jlog job 'd[3]["by"]["pid"] > 0 and d[3]["removed"] == 1 and d[3]["fence"] == d[4]["fence"]'
	jlog job 'd[1]["fence"] == d[2]["fence"]'
	jlog job 'd[5]["reason"] == "release"'
}

# gone_within MS CLI...: until the lock job's key is gone on the server CLI
# talks to (bounded).
gone_within() {
	local ms=$1 i
	shift
	for ((i = 0; i < ms / 10; i++)); do
		[[ "$("$@" EXISTS 'rlock:{job}')" == 0 ]] && return 0
		sleep 0.01
	done
	fail "the lock job never expired"
}

@test "history: an expiry is no entry of the stream: log shows it before the next acquire, in a --count window and within --since" {
	local t1_ms t2_ms now_ms i t
	rlock acquire -t 1s job >/dev/null
	gone_within 5000 rcli
	rlock acquire -t 30s job >/dev/null
	# The scripts record what happened: two holders taken, nothing else.
	assert_equal "$(rcli XLEN 'rlock:{job}:log')" 2
	run rcli XRANGE 'rlock:{job}:log' - +
	refute_output --partial expired
	run rlock log job
	assert_success
	assert_equal "${#lines[@]}" 3
	assert_line --index 0 --regexp " job acquired by "
	assert_line --index 1 --regexp " job expired: [^ ]+@[^ ]+ pid [0-9]+ was never released, fence [0-9]+$"
	assert_line --index 2 --regexp " job acquired by "
	jlog job '[e["event"] for e in d] == ["acquired", "expired", "acquired"]'
	jlog job 'd[1]["time_ms"] == d[0]["time_ms"] and d[1]["fence"] == d[2]["fence"] < d[0]["fence"]'
	jlog job 'all(d[1][k] == d[2][k] for k in ("host", "pid", "user")) and "kind" not in d[1] and "waited_ms" not in d[1]'
	# --count: the event before the window's oldest is read, never shown.
	run rlock log -n 1 job
	assert_equal "${#lines[@]}" 1
	assert_line --index 0 --regexp " job acquired by "
	run rlock log -n 2 job
	assert_equal "${#lines[@]}" 2
	assert_line --index 1 --regexp " job expired: "
	# --since: the hold that expired was taken before the window (over a
	# second before the second acquire), its expiry is shown in it; the
	# window reaches 900 ms behind the second acquire, however slowly log
	# starts (up to 0.9 s).
	t1_ms=$(rlock --json log -n 3 job | tail -n 1 | json_eval 'd["time_ms"]')
	t2_ms=$(rlock --json log -n 1 job | json_eval 'd["time_ms"]')
	(( t2_ms - t1_ms >= 1000 )) || fail "the second acquire came $((t2_ms - t1_ms)) ms after the first"
	t=$(rcli TIME | tr '\n' ' ')
	read -r i now_ms <<<"$t"
	now_ms=$((i * 1000 + now_ms / 1000))
	run rlock log --since "$((now_ms - t2_ms + 900))ms" job
	assert_success
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp " job acquired by "
	assert_line --index 1 --regexp " job expired: .* was never released, fence "
	# A stream an older rlock wrote has its own entry: shown once.
	rcli DEL 'rlock:{job}:log' >/dev/null
	rcli XADD 'rlock:{job}:log' '*' e acquired h a p 1 u u c c f 7 r r1 k '' >/dev/null
	rcli XADD 'rlock:{job}:log' '*' e expired h a p 1 u u c c f 7 r r1 >/dev/null
	rcli XADD 'rlock:{job}:log' '*' e acquired h b p 2 u u c c f 8 r r2 k '' >/dev/null
	jlog job '[e["event"] for e in d] == ["acquired", "expired", "acquired"]'
	# A hand-over's acquired follows the release, a reader's has a kind.
	rcli DEL 'rlock:{job}:log' >/dev/null
	rcli XADD 'rlock:{job}:log' '*' e acquired h a p 1 u u c c f 7 r r1 k shared >/dev/null
	rcli XADD 'rlock:{job}:log' '*' e acquired h b p 2 u u c c f 8 r r2 k shared >/dev/null
	rcli XADD 'rlock:{job}:log' '*' e released h b p 2 u u c c f 8 r r2 k shared >/dev/null
	rcli XADD 'rlock:{job}:log' '*' e acquired h c p 3 u u c c f 9 r r3 k '' >/dev/null
	jlog job '"expired" not in [e["event"] for e in d]'
	# A plain hold's leftovers, then another's acquire: it expired.
	rcli XADD 'rlock:{job}:log' '*' e leftovers h c p 3 u u c c f 9 r r3 y 'left 1' >/dev/null
	rcli XADD 'rlock:{job}:log' '*' e acquired h d p 4 u u c c f 10 r r4 k '' >/dev/null
	jlog job '[e["event"] for e in d][:3] == ["acquired", "expired", "leftovers"] and d[1]["pid"] == 3 and d[1]["fence"] == 9'
}

@test "history: a lock lost under exec is recorded as lost, with why and the command's outcome" {
	run rlock exec -t 1s --heartbeat 300ms job -- sh -c 'redis-cli -h 127.0.0.1 -p "$0" DEL "rlock:{job}" >/dev/null; sleep 5' "$REDIS_PORT"
	assert_equal "$status" 75
	run rlock log job
	assert_line --index 0 --regexp " job lost by .* after .*: the lock's key is gone or holds another token; the command: killed by SIGTERM, fence [0-9]+$"
	jlog job 'd[0]["event"] == "lost" and d[0]["signal"] == "SIGTERM" and d[0]["fence"] == d[1]["fence"]'
	# A release that finds it gone says so too.
	local t
	t=$(rlock acquire job)
	rcli DEL 'rlock:{job}' >/dev/null
	run rlock release --token "$t" job
	assert_failure 1
	jlog job 'd[0]["event"] == "lost" and d[0]["reason"] == "release"'
}

@test "history: shared holders and a semaphore's are recorded with their kind" {
	rlock exec --shared rw -- true
	rlock exec --limit 3 sem -- true
	run rlock log rw sem
	assert_success
	assert_equal "${#lines[@]}" 4
	assert_line --regexp " rw released by .* \(true\) \(shared\) after "
	assert_line --regexp " sem acquired by .* \(true\) \(--limit 3\), fence "
	jlog rw 'd[0]["kind"] == "shared"'
}

# the stream's length is at least $1 (the cap) and at most a node more
assert_capped() {
	local n
	n=$(rcli XLEN 'rlock:{job}:log')
	assert_between "$n" "$1" $(($1 + 100)) "length of the history (cap $1)"
}

@test "history: the cap holds after many cycles, and the newest events are the ones kept" {
	local i
	# 200 old events (written here: 100 exec cycles cost the sanitizers'
	# run half a minute and prove no more), then 5 cycles.
	for ((i = 0; i < 200; i++)); do
		printf 'XADD rlock:{job}:log * e released h old\n'
	done | rcli >/dev/null
	for ((i = 0; i < 5; i++)); do
		rlock exec job -- true || fail "cycle $i failed"
	done
	assert_capped 100
	# Trimmed a node at a time: whole nodes went.
	[[ "$(rcli XLEN 'rlock:{job}:log')" -lt 210 ]] || fail "nothing was trimmed"
	# The newest: the last cycle's release is the last entry, its acquire
	# the one before.
	run rlock log -n 2 job
	assert_line --index 0 --partial 'job released'
	assert_line --index 1 --partial 'job acquired'
	rlock exec --history-length 10 job -- true
	assert_capped 10
	printf 'history-length = 4\n' >rlock.conf
	RLOCK_CONFIG=$PWD/rlock.conf rlock exec job -- true
	assert_capped 4
	run rlock log -n 3 job
	assert_equal "${#lines[@]}" 3
	assert_line --index 0 --partial 'job released'
}

@test "history: a server whose stream nodes are unbounded still keeps it near its cap" {
	# Both limits 0: one node for ever, which MAXLEN ~ never frees; the
	# scripts' exact trim, looked at on one event in 8 (by the entry's
	# millisecond), cuts it back.  The old entries carry a millisecond a
	# multiple of 8 an hour ahead, so that the server gives the new ones
	# the same (a sequence number up): every one is looked at.
	rcli CONFIG SET stream-node-max-entries 0 >/dev/null
	rcli CONFIG SET stream-node-max-bytes 0 >/dev/null
	local i ms
	ms=$(( ($(now_ms) + 3600000) / 8 * 8 ))
	for ((i = 1; i <= 300; i++)); do
		printf 'XADD rlock:{job}:log %s-%s e released h old\n' "$ms" "$i"
	done | rcli >/dev/null
	assert_equal "$(rcli XLEN 'rlock:{job}:log')" 300
	rlock exec --history-length 5 job -- true
	assert_capped 5
	run rlock log -n 1 job
	assert_line --index 0 --partial 'job released'
}

@test "history: it outlives the lock, and expires --history-expiry after its last event" {
	rlock exec job -- true
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	local pttl
	pttl=$(rcli PTTL 'rlock:{job}:log')
	# (and up to the hold's TTL more, set by its acquire: see
	# rlock-protocol(7), History)
	assert_between "$pttl" $((29 * 86400000)) $((30 * 86400000 + 30000)) pttl_of_the_history
	rlock exec --history-expiry 1s job -- true
	run rlock log job
	assert_equal "${#lines[@]}" 4
	local i
	for ((i = 0; i < 500; i++)); do
		[[ "$(rcli EXISTS 'rlock:{job}:log')" == 0 ]] && break
		sleep 0.01
	done
	assert_equal "$(rcli EXISTS 'rlock:{job}:log')" 0
	run rlock log job
	assert_success
	assert_output ""
}

@test "history: --no-history, history-length 0 and no-history in the config write nothing" {
	rlock exec --no-history job -- true
	t=$(rlock acquire --no-history job)
	rlock release --no-history --token "$t" job
	rlock exec --history-length 0 job -- true
	printf 'no-history = yes\n' >rlock.conf
	RLOCK_CONFIG=$PWD/rlock.conf rlock exec job -- true
	assert_equal "$(rcli EXISTS 'rlock:{job}:log')" 0
	run rlock log job
	assert_success
	assert_output ""
}

@test "history: log with no NAME shows every lock's events; --since keeps the recent ones" {
	rlock exec a -- true
	rlock exec b -- true
	run rlock log
	assert_success
	assert_equal "${#lines[@]}" 4
	assert_line --index 0 --regexp " b released "
	assert_line --index 3 --regexp " a acquired "
	run rlock log -n 1
	assert_equal "${#lines[@]}" 2
	# Events older than --since are left out (by the server's clock).
	# b's last event is over a second older than c's first; --since
	# reaches 900 ms behind c's first as the server's clock stood after
	# c: c's events are in however slowly log starts (up to 0.9 s), b's
	# never.
	local i b_ms c_ms now_ms t
	b_ms=$(rlock --json log -n 1 b | json_eval 'd["time_ms"]')
	for ((i = 0; i < 500; i++)); do
		(( $(rcli TIME | head -1) * 1000 > b_ms + 1000 )) && break
		sleep 0.01
	done
	rlock exec c -- true
	c_ms=$(rlock --json log c | tail -n 1 | json_eval 'd["time_ms"]')
	# Seconds and microseconds of one TIME (two calls may straddle a second).
	t=$(rcli TIME | tr '\n' ' ')
	read -r i now_ms <<<"$t"
	now_ms=$((i * 1000 + now_ms / 1000))
	run rlock log --since "$((now_ms - c_ms + 900))ms"
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp " c released "
	run --separate-stderr rlock log --count 0 a
	assert_equal "$status" 64
	run --separate-stderr rlock log 'bad{name'
	assert_equal "$status" 64
}

@test "history: in quorum mode every server keeps it, and log shows each event once" {
	start_quorum 3
	rlockq exec job -- true
	local n
	for n in 1 2 3; do
		assert_equal "$(rcli_as "Q$n" XLEN 'rlock:{job}:log')" 2
	done
	run rlockq log job
	assert_success
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp " job released by .*: exit 0, fence [0-9]+ \[on 3 of 3 servers\]$"
	stop_redis Q3
	rlockq exec job -- true
	run rlockq log job
	assert_equal "${#lines[@]}" 4
	assert_line --index 0 --regexp "\[on 2 of 3 servers\]$"
	assert_line --index 3 --regexp "\[on 2 of 3 servers\]$"
}

# om_check EXPR: the openmetrics text on stdin parsed by the Prometheus
# client's own OpenMetrics parser (strict: a malformed line fails), then
# EXPR checked with `m` the {(family, name label): value} of every sample.
om_check() {
	/usr/bin/python3 -c '
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse
m = {}
for fam in parse(sys.stdin.read()):
    for s in fam.samples:
        m[(s.name, s.labels["name"])] = s.value
r = eval(sys.argv[1])
print(r if r is True else m)
sys.exit(0 if r is True else 1)' "$1"
}

@test "history: in quorum mode an expiry the servers' streams imply is shown once, with the servers that imply it" {
	start_quorum 3
	local n
	rlockq acquire -t 300ms job >/dev/null
	for n in 1 2 3; do
		gone_within 5000 rcli_as "Q$n"
	done
	rlockq acquire -t 30s job >/dev/null
	for n in 1 2 3; do
		assert_equal "$(rcli_as "Q$n" XLEN 'rlock:{job}:log')" 2
	done
	run rlockq log job
	assert_success
	assert_equal "${#lines[@]}" 3
	assert_line --index 1 --regexp " job expired: .* was never released, fence [0-9]+ \[on 3 of 3 servers\]$"
	# A server whose stream lost the first hold implies nothing.
	rlockq release --force job >/dev/null
	rlockq acquire -t 300ms job >/dev/null
	for n in 1 2 3; do
		gone_within 5000 rcli_as "Q$n"
	done
	rcli_as Q3 DEL 'rlock:{job}:log' >/dev/null
	rlockq acquire -t 30s job >/dev/null
	run rlockq log -n 2 job
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp " job acquired by .* \[on 3 of 3 servers\]$"
	assert_line --index 1 --regexp " job expired: .* \[on 2 of 3 servers\]$"
}

@test "history: status --format openmetrics passes the OpenMetrics parser and reports holders, waiters and the last run" {
	run rlock exec nightly -- sh -c 'exit 2'
	assert_equal "$status" 2
	rlock exec --shared rw -- true
	local t
	t=$(rlock acquire -t 30s busy)
	bg_start W "$RLOCK" acquire -w 20s busy
	until_waiting 1 rlock status busy
	run --separate-stderr rlock status --format openmetrics
	assert_success
	assert_equal "${lines[-1]}" "# EOF"
	om_check 'm[("rlock_held", "busy")] == 1 and m[("rlock_holders", "busy")] == 1 and m[("rlock_waiters", "busy")] == 1' <<<"$output"
	om_check 'm[("rlock_held", "nightly")] == 0 and m[("rlock_last_run_exit_status", "nightly")] == 2' <<<"$output"
	om_check 'm[("rlock_last_run_duration_seconds", "nightly")] >= 0 and m[("rlock_last_run_end_timestamp_seconds", "nightly")] > 1.7e9' <<<"$output"
	om_check 'm[("rlock_last_run_exit_status", "rw")] == 0 and m[("rlock_lost_events", "nightly")] == 0' <<<"$output"
	om_check '("rlock_last_run_exit_status", "busy") not in m and m[("rlock_fence", "busy")] > 0' <<<"$output"
	# Named locks only; a name with a quote and a backslash is escaped.
	rlock exec 'odd"na\me' -- sh -c 'exit 0'
	run --separate-stderr rlock status --format openmetrics nightly 'odd"na\me'
	assert_success
	om_check 'set(k[1] for k in m) == {"nightly", "odd\"na\\me"}' <<<"$output"
	run --separate-stderr rlock status --format yaml
	assert_equal "$status" 64
	rlock release --token "$t" busy
	bg_wait "$W" 10000
}

@test "history: openmetrics counts losses and a run stopped at --max-runtime" {
	run rlock exec -t 1s --heartbeat 300ms job -- sh -c 'redis-cli -h 127.0.0.1 -p "$0" DEL "rlock:{job}" >/dev/null; sleep 5' "$REDIS_PORT"
	assert_equal "$status" 75
	run --separate-stderr rlock status --format openmetrics job
	om_check 'm[("rlock_lost_events", "job")] == 1 and m[("rlock_last_run_exit_status", "job")] == 75' <<<"$output"
	run rlock exec --max-runtime 200ms job -- sleep 10
	assert_equal "$status" 124
	run --separate-stderr rlock status --format openmetrics job
	om_check 'm[("rlock_last_run_exit_status", "job")] == 124 and m[("rlock_last_run_duration_seconds", "job")] >= 0.2' <<<"$output"
}

@test "history: a run that leaves the lock to expire at --min-hold is recorded as released, not expired" {
	rlock exec --min-hold 300ms job -- true
	run rlock log job
	assert_line --index 0 --regexp " job released by .*\(true\) after .*: exit 0 \(left to expire at --min-hold\), fence "
	local i
	for ((i = 0; i < 500; i++)); do
		[[ "$(rcli EXISTS 'rlock:{job}')" == 0 ]] && break
		sleep 0.01
	done
	rlock exec job -- true
	jlog job '[e["event"] for e in d] == ["released", "acquired", "released", "acquired"]'
}

@test "history: log of many locks, and openmetrics, take a script call for them all" {
	local i
	for ((i = 1; i <= 12; i++)); do rlock exec "m$i" -- true; done
	rlock log m1 >/dev/null	# the script cached
	rcli CONFIG RESETSTAT >/dev/null
	run --separate-stderr rlock log
	assert_success
	assert_equal "${#lines[@]}" 24
	assert_equal "$(cmd_calls evalsha eval)" 1
	rlock status m1 >/dev/null || true
	rcli CONFIG RESETSTAT >/dev/null
	run --separate-stderr rlock status --format openmetrics
	assert_success
	# One inspect call and one log call, whatever the number of locks.
	assert_equal "$(cmd_calls evalsha eval)" 2
}
