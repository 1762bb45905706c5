#!/usr/bin/env bats
# quorum.bats: quorum (Redlock) mode over five independent servers: writes
# on all of them, frozen minorities and majorities, locks already held on a
# minority or a majority, fences across servers with skewed counters, mutual
# exclusion under contention, exec's heartbeat and a node restarted empty,
# a loss counted from the servers the acquire won (exec's heartbeat,
# acquire --hold's keeper, exec's release and --min-hold after a
# heartbeat), releases that leave nothing behind under CPU
# load, waiters, the ways of naming several servers, and status.

load helpers
load exec-helpers
load dist-helpers
load fault-helpers

setup_file() { start_quorum 5; }
teardown_file() { stop_all_redis; }

setup() {
	require_rlock
	unset RLOCK_TOKEN RLOCK_PREFIX RLOCK_PASSWORD REDISCLI_AUTH RLOCK_CONFIG RLOCK_URL
	qflushall
	# Every test starts with no scripts cached (as after a restart).
	local i
	for ((i = 1; i <= QUORUM_N; i++)); do qcli "$i" SCRIPT FLUSH >/dev/null; done
	cd "$BATS_TEST_TMPDIR"
}

# wait_blocked_everywhere: bounded wait (150 polls) until a client is
# blocked in BLPOP (a waiter) on every server; prints on how many it is.
wait_blocked_everywhere() {
	local i j n
	for ((i = 0; i < 150; i++)); do
		n=0
		for ((j = 1; j <= QUORUM_N; j++)); do
			qcli "$j" CLIENT LIST | grep -q 'cmd=blpop' && n=$((n + 1))
		done
		((n == QUORUM_N)) && break
		sleep 0.02
	done
	echo "$n"
}

# warm_scripts: one acquire/status/extend/release cycle with every server up,
# so that the scripts are cached everywhere.
warm_scripts() {
	local tok
	tok=$(rlockq acquire warm-up) || return 1
	rlockq status warm-up >/dev/null || return 1
	rlockq extend --token "$tok" warm-up || return 1
	rlockq release --token "$tok" warm-up || return 1
}

teardown() {
	# A frozen server must never outlive its test frozen.
	thaw_all
	stop_all_proxies || true
	# A keeper of this test's own lock name, if a test failed with one up.
	local pid
	if [[ -n "${HOLD_NAME:-}" ]]; then
		for pid in $(keeper_pids_of "$HOLD_NAME"); do
			kill -KILL "$pid" 2>/dev/null || true
		done
	fi
	exec_teardown
}

# ---------------------------------------------------------------------------
# Acquire and release
# ---------------------------------------------------------------------------

@test "quorum: acquire writes the same token on all five servers and release clears all five" {
	run --separate-stderr rlockq acquire job
	assert_success
	assert_output --regexp "$UUID_RE"
	local tok=$output
	assert_quorum_token job "$tok"
	assert_equal "$(nodes_with_key 'rlock:{job}')" 5

	run --separate-stderr rlockq release --token "$tok" job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(nodes_with_key 'rlock:{job}')" 0
	assert_equal "$(nodes_with_key 'rlock:{job}')" 0
}

@test "quorum: two servers down and two that say busy do not decide it: a slow fifth is waited for, and the answer is busy, not 'only 2 of 5 answered'" {
	local tok d1 d2 i n
	d1=$(free_port) && d2=$(free_port) || fail "no free port"
	local urls=(-u "$Q1_URL" -u "$Q2_URL" -u "$Q3_URL"
		-u "redis://127.0.0.1:$d1" -u "redis://127.0.0.1:$d2")
	tok=$("$RLOCK" "${urls[@]}" acquire -t 20s job) || fail "no lock to start with"
	qcli 1 CONFIG RESETSTAT >/dev/null
	qcli 2 CONFIG RESETSTAT >/dev/null
	freeze_node 3
	# Q3 stays frozen 300 ms after Q1 and Q2 have answered (well past the
	# stragglers' grace), then thaws, well within --timeout.
	(
		for ((i = 0; i < 250; i++)); do
			n=0
			for j in 1 2; do
				qcli "$j" INFO commandstats | grep -q '^cmdstat_eval' && n=$((n + 1))
			done
			((n == 2)) && break
			sleep 0.02
		done
		sleep 0.3
		kill -CONT "$Q3_PID"
	) &
	local thaw=$!
	run --separate-stderr "$RLOCK" "${urls[@]}" acquire -n job
	wait "$thaw"
	# Busy (1): three servers answered, none granted.  Settled on the two
	# refusals and the two failures, the old rule gave the fifth a grace
	# of milliseconds and called it an error (69).
	assert_equal "$status" 1
	refute_contains "servers answered" "$stderr"
	assert_equal "$(nodes_with_token job "$tok" 1 2 3)" 3
	"$RLOCK" "${urls[@]}" release --token "$tok" job
}

@test "quorum: with two servers frozen acquire still succeeds within one --timeout, status shows 3 of 5 with 2 unreachable, and release works" {
	warm_scripts
	freeze_node 1
	freeze_node 2
	local t0 t1
	t0=$(now_ms)
	run --separate-stderr rlockq --timeout 500ms acquire job
	t1=$(now_ms)
	assert_success
	local tok=$output
	# One --timeout (500 ms) for the frozen ones, not one per server.
	assert_between $((t1 - t0)) 0 1900 "acquire took (ms)"
	assert_equal "$(nodes_with_token job "$tok" 3 4 5)" 3

	run --separate-stderr rlockq --timeout 500ms status job
	assert_success
	assert_line --index 0 --regexp '^job: held by .* \(on 3 of 5 servers\)$'
	assert_line --index 1 "  $Q1_URL: unreachable (redis://127.0.0.1:$Q1_PORT: no reply within 500ms (--timeout))"
	assert_line --index 2 --regexp "^  $Q2_URL: unreachable \(.+\)$"
	assert_line --index 3 "  $Q3_URL: holds it"
	assert_line --index 4 "  $Q4_URL: holds it"
	assert_line --index 5 "  $Q5_URL: holds it"

	run --separate-stderr rlockq --timeout 500ms --json status job
	assert_success
	json_check 'd["held"] and [s["state"] for s in d["servers"]] == ["unreachable", "unreachable", "holds", "holds", "holds"]' <<<"$output"
	json_check 'all(s.get("error") for s in d["servers"][:2]) and not any("error" in s for s in d["servers"][2:])' <<<"$output"

	run --separate-stderr rlockq --timeout 500ms release --token "$tok" job
	assert_success
	assert_equal "$(nodes_with_key 'rlock:{job}' 3 4 5)" 0
}

@test "quorum: with one server frozen acquire succeeds even when the live servers have no scripts cached" {
	# After a restart (or SCRIPT FLUSH) EVALSHA answers NOSCRIPT and rlock
	# falls back to EVAL; a frozen server must still cost only one --timeout
	# and must not make the answers of the others count as missing.
	freeze_node 3
	local t0 t1
	t0=$(now_ms)
	run --separate-stderr rlockq --timeout 500ms acquire job
	t1=$(now_ms)
	echo "stderr: $stderr"
	assert_success
	assert_equal "$stderr" ""
	assert_between $((t1 - t0)) 0 1900 "acquire took (ms)"
	assert_equal "$(nodes_with_token job "$output" 1 2 4 5)" 4
}

@test "quorum: with three servers frozen acquire exits 69 saying only 2 of 5 answered and leaves nothing held on the live two" {
	warm_scripts
	freeze_node 1
	freeze_node 2
	freeze_node 3
	run --separate-stderr rlockq --timeout 500ms acquire job
	assert_equal "$status" 69
	assert_equal "$output" ""
	assert_one_error_line
	assert_equal "${stderr_lines[0]%%:*}" "rlock"
	[[ "$stderr" == *"only 2 of 5 servers answered, and a lock needs 3"* ]] ||
		fail "unexpected message: $stderr"
	assert_equal "$(nodes_with_key 'rlock:{job}' 4 5)" 0
	assert_equal "$(nodes_with_key 'rlock:{job}' 4 5)" 0
}

@test "quorum: a minority holding the lock with another token does not block, and the status line says on 3 of 5" {
	qcli 1 EVAL "$FAKE_HOLD" 1 'rlock:{job}' other-token 30000 >/dev/null
	qcli 2 EVAL "$FAKE_HOLD" 1 'rlock:{job}' other-token 30000 >/dev/null
	run --separate-stderr rlockq acquire -n job
	assert_success
	local tok=$output
	assert_equal "$(nodes_with_token job "$tok" 3 4 5)" 3
	assert_equal "$(nodes_with_token job other-token 1 2)" 2

	run --separate-stderr rlockq status job
	assert_success
	assert_line --index 0 --regexp '^job: held by .* \(on 3 of 5 servers\)$'
	assert_line --index 1 "  $Q1_URL: holds another token"
	assert_line --index 3 "  $Q3_URL: holds it"
}

@test "quorum: a majority holding the lock with another token blocks (exit 1 with -n) and the partial writes on the other two are undone" {
	local i
	for i in 1 2 3; do qcli "$i" EVAL "$FAKE_HOLD" 1 'rlock:{job}' other-token 30000 >/dev/null; done
	run --separate-stderr rlockq acquire -n job
	assert_equal "$status" 1
	assert_equal "$output" ""
	assert_equal "$stderr" ""
	assert_equal "$(nodes_with_key 'rlock:{job}' 4 5)" 0
	assert_equal "$(nodes_with_key 'rlock:{job}' 4 5)" 0
	assert_equal "$(nodes_with_token job other-token 1 2 3)" 3

	# The lock is held (by the other token) on a majority; status knows
	# no token of ours, so the majority's token is "it".
	run --separate-stderr rlockq status job
	assert_success
	assert_line --index 0 --regexp '^job: held.*\(on 3 of 5 servers\)$'
	assert_line --index 1 "  $Q1_URL: holds it"
	assert_line --index 4 "  $Q4_URL: free"
	assert_line --index 5 "  $Q5_URL: free"
}

# ---------------------------------------------------------------------------
# Fences
# ---------------------------------------------------------------------------

@test "quorum: the servers hand out one fence, so exec costs two script calls a server and no raise" {
	rlockq exec job -- true	# the scripts cached
	local i f
	for ((i = 1; i <= QUORUM_N; i++)); do qcli "$i" CONFIG RESETSTAT >/dev/null; done
	run --separate-stderr rlockq exec job -- sh -c 'echo "$RLOCK_FENCE"'
	assert_success
	f=$output
	for ((i = 1; i <= QUORUM_N; i++)); do
		assert_equal "$(qcli "$i" GET 'rlock:{job}:fence')" "$f"
		# The acquire and the release: no fence script between them.
		assert_equal "$(qcli "$i" INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')" 2
	done
	# A second ahead of this clock (the proposed floor), and above it next time.
	assert_between "$f" "$(( ($(now_ms) - 5000) * 1000 ))" "$(( ($(now_ms) + 5000) * 1000 ))" fence_as_microseconds
	run --separate-stderr rlockq exec job -- sh -c 'echo "$RLOCK_FENCE"'
	assert_between "$output" $((f + 1)) $((f + 10000000)) "the next fence"
}

@test "quorum: fences increase across holders even when the servers' counters are skewed" {
	# Every counter above the clock's floor, each its own.  A majority
	# may answer without a straggler under load (it is given up after
	# its grace), so what is checked holds for whichever three win:
	# the fence is one more than the greatest counter among the winners,
	# and every winner is raised to it.
	local -a old=(0 8000000000000100 8000000000000005 8000000000000050
		8000000000000020 8000000000000070)
	local f1 tok i c w=0 top=0
	for i in 1 2 3 4 5; do
		qcli "$i" SET 'rlock:{job}:fence' "${old[i]}" >/dev/null
	done
	run --separate-stderr rlockq --json acquire job
	assert_success
	f1=$(json_eval 'd["fence"]' <<<"$output")
	tok=$(json_eval 'd["token"]' <<<"$output" | tr -d '"')
	# Any three of the five hold a counter of 8000000000000050 or more.
	assert_between "$f1" 8000000000000051 8000000000000101 "first fence"
	for i in 1 2 3 4 5; do
		[[ "$(qcli "$i" HKEYS 'rlock:{job}')" == "$tok" ]] || continue
		[[ "$(qcli "$i" HGET 'rlock:{job}' "$tok" | json_eval 'd["f"]' | tr -d '"')" == "$f1" ]] || continue
		w=$((w + 1))
		((old[i] < f1)) || fail "server $i's counter was ${old[i]}, not below the fence $f1"
		((old[i] + 1 > top)) && top=$((old[i] + 1))
		c=$(qcli "$i" GET 'rlock:{job}:fence')
		assert_equal "$c" "$f1"
	done
	((w >= 3)) || fail "only $w servers hold the token with the fence $f1"
	assert_equal "$f1" "$top"

	run --separate-stderr rlockq release --token "$tok" job
	assert_success
	run --separate-stderr rlockq --json acquire job
	assert_success
	local f2
	f2=$(json_eval 'd["fence"]' <<<"$output")
	assert_between "$f2" $((f1 + 1)) 8000000001000000 "second fence"

	# The holder's environment in exec gets the quorum fence too.
	tok=$(json_eval 'd["token"]' <<<"$output" | tr -d '"')
	rlockq release --token "$tok" job
	run --separate-stderr rlockq exec job -- sh -c 'echo "$RLOCK_FENCE"'
	assert_success
	assert_between "$output" $((f2 + 1)) 8000000001000000 "exec's RLOCK_FENCE"
}

# ---------------------------------------------------------------------------
# Mutual exclusion, exec
# ---------------------------------------------------------------------------

@test "quorum: four workers times fifteen exec cycles around a non-atomic increment end at exactly 60" {
	echo 0 >f
	cat >worker.sh <<-EOF
		#!/bin/bash
		for i in \$(seq 15); do
			"$RLOCK" $(for u in $QUORUM_URLS; do printf -- '-u %s ' "$u"; done) exec -w 60s -t 5s ctr -- \\
				sh -c 'n=\$(cat f); sleep 0.01; echo \$((n+1)) > f' || exit 1
		done
	EOF
	chmod +x worker.sh
	local w1 w2 w3 w4
	bg_start w1 ./worker.sh
	bg_start w2 ./worker.sh
	bg_start w3 ./worker.sh
	bg_start w4 ./worker.sh
	local p
	for p in "$w1" "$w2" "$w3" "$w4"; do
		bg_wait "$p" 50000 || fail "a worker did not finish within 50 s"
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(cat f)" 60
	assert_equal "$(nodes_with_key 'rlock:{ctr}')" 0
}

@test "quorum: exec's heartbeat keeps a 1s lock held on a majority through a 4.5s command and releases it after" {
	local ex i
	bg_start ex "$RLOCK" $(for u in $QUORUM_URLS; do printf -- '-u %s ' "$u"; done) \
		exec -t 1s job -- sh -c 'sleep 1.5; touch past; sleep 3'
	# The command says when it is past the TTL (a loaded machine's
	# redis-cli calls then still have 3 s to count, while it runs).
	for ((i = 0; i < 300; i++)); do
		[[ -e past ]] && break
		sleep 0.05
	done
	[[ -e past ]] || fail "the command did not get past 1.5 s"
	# Past the TTL: only the heartbeat can have kept the key alive.
	local held
	held=$(nodes_with_key 'rlock:{job}')
	assert_between "$held" 3 5 "servers holding the lock past its TTL"
	bg_wait "$ex" 10000 || fail "exec did not finish"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(nodes_with_key 'rlock:{job}')" 0
}

@test "quorum: twenty exec cycles with five servers under CPU load leave the key on no server" {
	# Two bounded busy loops (stopped by PID in teardown if still running)
	# keep both cores busy, so that some server often answers after the
	# majority has. With the scripts flushed before each cycle (as after a
	# restart), every server answers the release's EVALSHA with NOSCRIPT
	# and must be sent the body: a release that stopped at the majority's
	# answers left the key on the late ones.
	local b1 b2 c i left u urls=()
	for u in $QUORUM_URLS; do urls+=(-u "$u"); done
	bg_start b1 timeout 120 sh -c 'while :; do :; done'
	bg_start b2 timeout 120 sh -c 'while :; do :; done'
	for ((c = 1; c <= 20; c++)); do
		_proc_alive "$b1" && _proc_alive "$b2" || fail "cycle $c: a busy loop has ended"
		# A TTL far longer than the check: a key left behind is still there.
		run --separate-stderr timeout 60 "$RLOCK" "${urls[@]}" exec -t 20s job -- true
		assert_success
		# One redis-cli per server: count the lock's keys, flush the scripts.
		left=0
		for ((i = 1; i <= QUORUM_N; i++)); do
			run qcli "$i" <<<$'EXISTS rlock:{job}\nSCRIPT FLUSH'
			assert_success
			[[ "${lines[0]}" =~ ^[0-9]+$ ]] || fail "server $i answered: $output"
			left=$((left + lines[0]))
		done
		assert_equal "cycle $c: $left keys left" "cycle $c: 0 keys left"
	done
	_kill_pid "$b1"
	_kill_pid "$b2"
}

@test "quorum: a node killed and restarted empty mid-exec does not stop the command while the majority holds" {
	# Servers of this test only (the restarted one must not replace the file's).
	start_quorum 5
	local ex
	bg_start ex "$RLOCK" $(for u in $QUORUM_URLS; do printf -- '-u %s ' "$u"; done) \
		exec -t 1500ms job -- sh -c 'sleep 3.5; echo done > finished'
	local i
	for ((i = 0; i < 100; i++)); do
		[[ "$(nodes_with_key 'rlock:{job}')" == 5 ]] && break
		sleep 0.02
	done
	assert_equal "$(nodes_with_key 'rlock:{job}')" 5
	sleep 0.5
	kill -KILL "$Q2_PID"
	wait_gone "$Q2_PID" 3000
	restart_redis_empty Q2
	assert_equal "$(qcli 2 EXISTS 'rlock:{job}')" 0
	bg_wait "$ex" 15000 || fail "exec did not finish"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat finished)" done
	assert_equal "$(cat "$BATS_TEST_TMPDIR/ex.err")" ""
	assert_equal "$(nodes_with_key 'rlock:{job}')" 0
}

# ---------------------------------------------------------------------------
# A loss counted from the servers the acquire won
# ---------------------------------------------------------------------------

# The scenario of issue 48 (break 3): A wins Q1 and Q2, and reaches Q3 only
# through a blackholed proxy (its request never gets there); Q1 then loses
# the key, and B, which reaches every server directly, wins Q1 and Q3.  Q2
# alone, not a majority of three, can still hold A's lock: the first extend
# that hears Q1 say "not the holder" has found the loss.  A lock that did
# not know which servers its acquire won counted the silent Q3 as possibly
# holding, and said "the others that hold it did not answer in time" until
# its validity ended, its command running beside B's all the while.

@test "quorum: exec's heartbeat that hears 'not the holder' from a server it won, leaving fewer than a majority of those it won, calls the lock lost at once, not when its validity ends" {
	start_proxy P3 "$Q3_PORT"
	proxy P3 blackhole
	stopper_script 3
	local t0 tok
	bg_start A "$RLOCK" -u "$Q1_URL" -u "$Q2_URL" -u "$P3_URL" \
		exec -t 20s --heartbeat 1s job -- ./stopper.sh
	wait_file ready 10000 || fail "A did not get the lock: $(cat A.err)"
	t0=$(now_ms)
	tok=$(cat token)
	assert_equal "$(nodes_with_token job "$tok" 1 2)" 2
	assert_equal "$(qcli 3 EXISTS 'rlock:{job}')" 0
	qcli 1 DEL 'rlock:{job}' >/dev/null
	run --separate-stderr "$RLOCK" -u "$Q1_URL" -u "$Q2_URL" -u "$Q3_URL" \
		acquire -n -t 60s job
	assert_success
	local btok=$output
	# The loss is found by the first heartbeat after the DEL (within 1 s,
	# then the silent Q3's --timeout of 2 s): well before the 20 s TTL.
	bg_wait "$A" 15000 || fail "A's command still runs beside B's: $(cat A.err)"
	assert_equal "$BG_STATUS" 75
	assert_between $(($(cat stopped) - t0)) 0 10000 "A's command stopped after (ms)"
	grep -q "lost" A.err || fail "A does not say the lock was lost: $(cat A.err)"
	refute_contains "did not answer in time" "$(cat A.err)"
	# No release after a loss: B's lock is left as it was.
	assert_equal "$(nodes_with_token job "$btok" 1 3)" 2
}

@test "quorum: acquire --hold's keeper that hears 'not the holder' from a server it won, leaving fewer than a majority of those it won, signals its owner at once, not when the validity ends" {
	HOLD_NAME=qhold-$$-$RANDOM$RANDOM
	local n=$HOLD_NAME
	start_proxy P3 "$Q3_PORT"
	proxy P3 blackhole
	make_script owner.sh "trap 'date +%s%3N > got; exit 3' TERM
i=0
while [ \$i -lt 300 ]; do sleep 0.1 & wait \$!; i=\$((i + 1)); done" >/dev/null
	local o t0 tok
	bg_start O ./owner.sh
	run --separate-stderr "$RLOCK" -u "$Q1_URL" -u "$Q2_URL" -u "$P3_URL" \
		acquire --hold --pid "$O" -t 15s "$n"
	assert_success
	t0=$(now_ms)
	tok=$output
	assert_equal "$(nodes_with_token "$n" "$tok" 1 2)" 2
	assert_equal "$(qcli 3 EXISTS "rlock:{$n}")" 0
	qcli 1 DEL "rlock:{$n}" >/dev/null
	run --separate-stderr "$RLOCK" -u "$Q1_URL" -u "$Q2_URL" -u "$Q3_URL" \
		acquire -n -t 60s "$n"
	assert_success
	local btok=$output
	# The keeper extends every TTL/3 (5 s); the first extend after the
	# DEL, with the silent Q3's --timeout of 2 s, finds the loss: well
	# before the 15 s TTL.
	wait_file got 13000 || fail "the owner got no SIGTERM: $(cat O.err)"
	assert_between $(($(cat got) - t0)) 0 11000 "the owner was signalled after (ms)"
	bg_wait "$O" 5000 || fail "the owner did not end"
	assert_equal "$BG_STATUS" 3
	grep -q "held by acquire --hold was lost at .*: the lock's key is gone or holds another token" O.err ||
		fail "no loss on the owner's stderr: $(cat O.err)"
	refute_contains "did not answer in time" "$(cat O.err)"
	assert_equal "$(nodes_with_token "$n" "$btok" 1 3)" 2
	local i
	for ((i = 0; i < 100; i++)); do
		[[ -z "$(keeper_pids_of "$n")" ]] && break
		sleep 0.02
	done
	assert_equal "$(keeper_pids_of "$n")" ""
}

# wait_extended I KEY [MAX_MS]: bounded wait (in count and time) until an
# extend has reached KEY on quorum server I: its PTTL is more than a second
# above what it was at the start less the time since.
wait_extended() {
	local i=$1 key=$2 max_ms=${3:-10000} p0 t0 p j
	p0=$(qcli "$i" PTTL "$key")
	t0=$(now_ms)
	for ((j = 0; j < max_ms / 20; j++)); do
		p=$(qcli "$i" PTTL "$key")
		((p > p0 - ($(now_ms) - t0) + 1000)) && return 0
		(($(now_ms) - t0 > max_ms)) && break
		sleep 0.02
	done
	return 1
}

# q1_scripts: how many scripts Q1 has run (EVALSHA and EVAL calls).
q1_scripts() {
	local l n=0
	while IFS= read -r l; do
		l=${l%$'\r'}
		[[ $l =~ ^cmdstat_(evalsha|eval):calls=([0-9]+) ]] &&
			n=$((n + BASH_REMATCH[2]))
	done < <(qcli 1 INFO commandstats)
	echo "$n"
}

# after_heartbeat_case HOW EXEC_OPTION...: A wins all three servers, Q1
# through a proxy; Q1 loses the key, and A's first heartbeat (5 s) hears
# it say "not the holder" and extends on Q2 and Q3, a majority still.
# Then Q1 goes silent for A (the proxy blackholes), Q2 loses the key too,
# and B takes Q1 and Q2; A's command ends, and exec, with EXEC_OPTIONs,
# goes on to HOW ("its release", "the --min-hold hand-off"): Q1, silent,
# said "not the holder" at the heartbeat and cannot count as holding
# the lock, so Q3 alone is left to A: a loss, said, and exit 75.
after_heartbeat_case() {
	local how=$1 tok btok i
	shift
	start_proxy P1 "$Q1_PORT"
	make_script ender.sh 'echo ready > ready
i=0
while [ $i -lt 300 ] && [ ! -e end ]; do sleep 0.1; i=$((i + 1)); done' >/dev/null
	bg_start A "$RLOCK" -u "$P1_URL" -u "$Q2_URL" -u "$Q3_URL" \
		exec -t 30s --heartbeat 5s "$@" job -- ./ender.sh
	wait_file ready 10000 || fail "A did not get the lock: $(cat A.err)"
	# Acquire returns once a majority has granted: the third a moment on
	# (on a busy machine, perhaps Q2 itself).
	for ((i = 0; i < 150; i++)); do
		tok=$(qcli 2 HKEYS 'rlock:{job}')
		[[ -n "$tok" ]] || tok=$(qcli 3 HKEYS 'rlock:{job}')
		[[ -n "$tok" ]] && break
		sleep 0.02
	done
	for ((i = 0; i < 150; i++)); do
		[[ "$(nodes_with_token job "$tok" 1 2 3)" == 3 ]] && break
		sleep 0.02
	done
	assert_equal "$(nodes_with_token job "$tok" 1 2 3)" 3
	# A heartbeat that hears Q1 say "not the holder": one whose extend
	# reaches Q1 after the key went (not one already on its way).
	local calls
	calls=$(q1_scripts)
	qcli 1 DEL 'rlock:{job}' >/dev/null
	for ((i = 0; i < 600; i++)); do
		(($(q1_scripts) > calls)) && break
		sleep 0.02
	done
	(($(q1_scripts) > calls)) || fail "no heartbeat reached Q1"
	wait_extended 2 'rlock:{job}' 10000 || fail "no heartbeat reached Q2"
	# Well within the next heartbeat's 5 s.
	proxy P1 blackhole
	qcli 2 DEL 'rlock:{job}' >/dev/null
	run --separate-stderr "$RLOCK" -u "$Q1_URL" -u "$Q2_URL" -u "$Q3_URL" \
		acquire -n -t 60s job
	assert_success
	btok=$output
	touch end
	bg_wait "$A" 15000 || fail "exec did not end: $(cat A.err)"
	assert_equal "$BG_STATUS" 75
	grep -q "lock 'job' was lost before $how" A.err ||
		fail "A does not say the lock was lost before $how: $(cat A.err)"
	assert_equal "$(nodes_with_token job "$btok" 1 2)" 2
}

@test "quorum: exec's release after a heartbeat that heard 'not the holder' from a server counts that server out: silent at the release, it does not hide a loss" {
	after_heartbeat_case "its release"
}

@test "quorum: exec's --min-hold hand-off after a heartbeat that heard 'not the holder' from a server counts that server out: silent then, it does not hide a loss" {
	after_heartbeat_case "the --min-hold hand-off" --min-hold 60s
}

# ---------------------------------------------------------------------------
# Waiting
# ---------------------------------------------------------------------------

@test "quorum: a waiter gets a lock released by another client promptly, well under the TTL" {
	local tok
	tok=$(rlockq acquire -t 20s job)
	local wt
	bg_start wt "$RLOCK" $(for u in $QUORUM_URLS; do printf -- '-u %s ' "$u"; done) \
		acquire -w 10s job
	wait_blocked_everywhere >/dev/null
	_proc_alive "$wt" || fail "the waiter ended early: $(cat wt.err)"
	local t0 t1
	t0=$(now_ms)
	rlockq release --token "$tok" job
	bg_wait "$wt" 10000 || fail "the waiter did not get the lock"
	t1=$(now_ms)
	assert_equal "$BG_STATUS" 0
	assert_between $((t1 - t0)) 0 2000 "waiter woke after (ms)"
	local wtok
	wtok=$(cat wt.out)
	[[ "$wtok" =~ $UUID_RE ]] || fail "waiter printed '$wtok'"
	# The release may still be on its way to some servers when the waiter
	# wakes: a majority is enough.
	assert_between "$(nodes_with_token job "$wtok")" 3 5 "servers holding the waiter's lock"
}

@test "quorum: a woken waiter keeps its connections: its next attempt connects to no server again" {
	local round tok wt j n c0 c1 again=0
	for ((round = 0; round < 4; round++)); do
		tok=$(rlockq acquire -t 20s job)
		bg_start wt "$RLOCK" $(for u in $QUORUM_URLS; do printf -- '-u %s ' "$u"; done) \
			acquire -w 10s job
		n=$(wait_blocked_everywhere)
		((n == QUORUM_N)) || fail "round $round: the waiter blocked on $n servers of 5: $(cat wt.err)"
		for j in 1 2 3 4 5; do
			c0[j]=$(qcli "$j" INFO stats | tr -d '\r' | sed -n 's/^total_connections_received://p')
		done
		rlockq release --token "$tok" job
		bg_wait "$wt" 10000 || fail "the waiter did not get the lock"
		assert_equal "$BG_STATUS" 0
		# Each server since: the release's connection and this one.
		for j in 1 2 3 4 5; do
			c1=$(qcli "$j" INFO stats | tr -d '\r' | sed -n 's/^total_connections_received://p')
			again=$((again + c1 - c0[j] - 2))
		done
		rlockq release --token "$(cat wt.out)" job
	done
	# Dropping the others' BLPOPs at the first wake made it connect again
	# to most servers each time (10 to 16 seen); a busy machine may make a
	# wake miss the grace now and then.
	assert_between "$again" 0 5 "connections made again in 4 hand-overs"
}

@test "quorum: a waiter's attempt waits behind its BLPOP on every server, so a woken waiter holds with no round trip of its own" {
	local tok wt n j
	tok=$(rlockq acquire -t 20s job)
	bg_start wt "$RLOCK" $(for u in $QUORUM_URLS; do printf -- '-u %s ' "$u"; done) \
		acquire -w 10s job
	n=$(wait_blocked_everywhere)
	((n == QUORUM_N)) || fail "the waiter blocked on $n servers of 5: $(cat wt.err)"
	# The acquire script is queued on each connection behind the BLPOP:
	# the server runs it the moment the BLPOP returns (qbuf: the bytes
	# it has read and not yet run; 0 when the attempt followed the wake).
	for ((j = 1; j <= QUORUM_N; j++)); do
		qcli "$j" CLIENT LIST | grep 'cmd=blpop' | grep -q ' qbuf=[1-9]' ||
			fail "server $j: no script behind the BLPOP: $(qcli "$j" CLIENT LIST | grep blpop)"
	done
	rlockq release --token "$tok" job
	bg_wait "$wt" 10000 || fail "the waiter did not get the lock"
	assert_equal "$BG_STATUS" 0
	local wtok
	wtok=$(cat wt.out)
	[[ "$wtok" =~ $UUID_RE ]] || fail "waiter printed '$wtok'"
	assert_between "$(nodes_with_token job "$wtok")" 3 5 "servers holding the waiter's lock"
}

# ---------------------------------------------------------------------------
# Naming the servers
# ---------------------------------------------------------------------------

@test "quorum: RLOCK_URL with five URLs separated by spaces works like five -u" {
	run --separate-stderr env RLOCK_URL="$QUORUM_URLS" "$RLOCK" acquire job
	assert_success
	local tok=$output
	assert_quorum_token job "$tok"
	run --separate-stderr env RLOCK_URL="$QUORUM_URLS" "$RLOCK" status job
	assert_success
	assert_line --index 0 --regexp '\(on 5 of 5 servers\)$'
	run --separate-stderr env RLOCK_URL="$QUORUM_URLS" "$RLOCK" release --token "$tok" job
	assert_success
	assert_equal "$(nodes_with_key 'rlock:{job}')" 0
}

@test "quorum: a config file with one url line holding several URLs works like several -u" {
	printf 'url = %s\n' "$QUORUM_URLS" >rlock.conf
	chmod 600 rlock.conf
	run --separate-stderr "$RLOCK" --config rlock.conf acquire job
	assert_success
	local tok=$output
	assert_quorum_token job "$tok"
	run --separate-stderr "$RLOCK" --config rlock.conf status job
	assert_success
	assert_line --index 0 --regexp '\(on 5 of 5 servers\)$'
	run --separate-stderr "$RLOCK" --config rlock.conf release --token "$tok" job
	assert_success
	assert_equal "$(nodes_with_key 'rlock:{job}')" 0
}

# ---------------------------------------------------------------------------
# Status
# ---------------------------------------------------------------------------

@test "quorum: status --json has a servers array of five with their states" {
	local tok
	tok=$(rlockq acquire job)
	qcli 5 EVAL "$FAKE_HOLD" 1 'rlock:{job}' other-token 30000 >/dev/null
	qcli 4 DEL 'rlock:{job}' >/dev/null
	run --separate-stderr rlockq --json status job
	assert_success
	json_check 'd["name"] == "job" and d["held"] is True' <<<"$output"
	json_check 'len(d["servers"]) == 5' <<<"$output"
	json_check '[s["state"] for s in d["servers"]] == ["holds", "holds", "holds", "free", "other"]' <<<"$output"
	json_check '[s["url"] for s in d["servers"]] == "'"$QUORUM_URLS"'".split()' <<<"$output"
	json_check 'not any("error" in s for s in d["servers"])' <<<"$output"
}

@test "quorum: status with no NAME lists a lock held on every server once" {
	rlockq acquire job >/dev/null
	rlockq acquire other >/dev/null
	run --separate-stderr rlockq status
	assert_success
	local n_job n_other
	n_job=$(grep -c '^job: held' <<<"$output" || true)
	n_other=$(grep -c '^other: held' <<<"$output" || true)
	assert_equal "$n_job" 1
	assert_equal "$n_other" 1

	run --separate-stderr rlockq --json status
	assert_success
	json_check 'sorted(x["name"] for x in d) == ["job", "other"]' <<<"$output"
}
