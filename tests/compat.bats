#!/usr/bin/env bats
# compat.bats: the server-compatibility subset, each area of rlock once and
# quickly, against the redis-server, redis-cli and redis-sentinel first on
# PATH: scripts/matrix.sh runs it once for each server of the matrix.  A
# test's name starts with its area (the matrix's rows): commands, shared,
# limit, fifo, deploy, max-runtime, every, history, doctor, tls, quorum, sentinel,
# cluster.

load helpers
load tls-helpers
load dist-helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { file_server_setup; }
teardown() { test_teardown; }

# The major version of the server started as VAR (default REDIS).
major_of() {
	rcli_as "${1:-REDIS}" INFO server | tr -d '\r' |
		sed -n 's/^redis_version:\([0-9]*\)\..*/\1/p'
}

# script_calls NODE...: EVAL and EVALSHA calls on these cluster nodes.
script_calls() {
	local i total=0 c
	for i in "$@"; do
		c=$(ccli "$i" INFO commandstats | tr -d '\r' |
			sed -n 's/^cmdstat_\(eval\|evalsha\):calls=\([0-9]*\),.*/\2/p' |
			awk '{ s += $1 } END { print s + 0 }')
		total=$((total + c))
	done
	echo "$total"
}

# in_line N: N waiters are in the --fifo line of job.
in_line() {
	[[ "$(rcli ZCARD 'rlock:{job}:queue')" == "$1" ]]
}

# until_bounded MS CMD...: poll CMD every 20 ms until it succeeds, MS at most.
until_bounded() {
	local ms=$1 i
	shift
	for ((i = 0; i < ms / 20; i++)); do
		"$@" && return 0
		sleep 0.02
	done
	"$@"
}

@test "commands: acquire, status, extend, release, release --force and exec" {
	local tok
	run --separate-stderr rlock acquire -t 10s job
	assert_success
	assert_output --regexp "$UUID_RE"
	tok=$output
	run --separate-stderr rlock status job
	assert_success
	assert_output --regexp '^job: held by .+ fence [0-9]+$'
	run --separate-stderr rlock --json status
	assert_success
	json_check 'len(d) == 1 and d[0]["name"] == "job" and d[0]["held"]' <<<"$output"
	run --separate-stderr rlock extend --token "$tok" -t 60s job
	assert_success
	assert_between "$(rcli PTTL 'rlock:{job}')" 10001 60000 pttl
	run --separate-stderr rlock -n exec job -- true
	assert_equal "$status" 1
	run --separate-stderr rlock release --token "$tok" job
	assert_success
	run --separate-stderr rlock status job
	assert_equal "$status" 1
	run --separate-stderr rlock exec job -- sh -c 'echo "$RLOCK_NAME $RLOCK_FENCE"'
	assert_success
	assert_output --regexp '^job [0-9]+$'
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	rlock acquire job >/dev/null
	run --separate-stderr rlock release --force job
	assert_success
	assert_output --regexp '^removed job: held by '
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "commands: a full server (maxmemory, noeviction): a release frees the lock, an acquire and an exec are refused as out of memory, in words, nothing left" {
	local t
	t=$(rlock acquire -t 60s full)
	bg_start E "$RLOCK" exec -t 60s fx -- sh -c 'until [ -e go ]; do sleep 0.02; done'
	until_bounded 10000 eval '[[ $(rcli EXISTS "rlock:{fx}") == 1 ]]' ||
		fail "exec never took fx"
	rcli CONFIG SET maxmemory-policy noeviction >/dev/null
	rcli CONFIG SET maxmemory 1 >/dev/null
	run --separate-stderr rlock release --token "$t" full
	local rel=$status
	touch go
	bg_wait "$E"
	run --separate-stderr rlock acquire -n fresh
	local acq=$status acq_err=$stderr
	run --separate-stderr rlock exec -n fresh -- touch ran
	local ex=$status ex_err=$stderr
	rcli CONFIG SET maxmemory 0 >/dev/null
	assert_equal "$rel" 0
	assert_equal "$BG_STATUS" 0
	assert_equal "$(rcli EXISTS 'rlock:{full}' 'rlock:{fx}' 'rlock:{fresh}' 'rlock:{fresh}:fence')" 0
	assert_equal "$acq" 69
	[[ $acq_err == *"the server is out of memory"*"maxmemory"* && $acq_err != *OOM* ]] ||
		fail "acquire: $acq_err"
	assert_equal "$ex" 69
	[[ $ex_err == *"the server is out of memory"* ]] || fail "exec: $ex_err"
	[[ ! -e ran ]] || fail "the command ran"
}

@test "commands: a server demoted to a replica is told in words (READONLY), not as a script's failure" {
	start_redis_as A
	start_redis_as B
	local a="redis://127.0.0.1:$A_PORT" tok
	tok=$(rlock -u "$a" acquire -t 30s job)
	rcli_as A REPLICAOF 127.0.0.1 "$B_PORT" >/dev/null
	wait_role A slave 5000 || fail "A never became a replica"
	run --separate-stderr rlock -u "$a" extend --token "$tok" job
	assert_equal "$status" 69
	[[ $stderr == *"the server is a replica now (READONLY)"* ]] || fail "extend: $stderr"
	[[ $stderr != *"script failed"* ]] || fail "extend: $stderr"
	run --separate-stderr rlock -u "$a" acquire -n other
	assert_equal "$status" 69
	[[ $stderr == *"the server is a replica now (READONLY)"* ]] || fail "acquire: $stderr"
}

@test "shared: two --shared holders run at once; an exclusive one is refused until they end" {
	# Each reader says it runs, then waits (at most 10 s) for the go.
	local wait='i=0; while [ ! -e go ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done'
	bg_start R1 "$RLOCK" exec --shared -t 10s job -- sh -c "echo 1 >r1; $wait"
	bg_start R2 "$RLOCK" exec --shared -t 10s job -- sh -c "echo 2 >r2; $wait"
	wait_file r1 10000 || fail "reader 1 did not run: $(cat R1.err)"
	wait_file r2 10000 || fail "reader 2 did not run: $(cat R2.err)"
	run --separate-stderr rlock -n exec job -- true
	assert_equal "$status" 1
	run --separate-stderr rlock -n exec --shared job -- true
	assert_success
	touch go
	bg_wait "$R1" 15000 || fail "reader 1 did not end"
	assert_equal "$BG_STATUS" 0
	bg_wait "$R2" 15000 || fail "reader 2 did not end"
	assert_equal "$BG_STATUS" 0
	run --separate-stderr rlock -n exec job -- true
	assert_success
}

@test "limit: --limit 2 lets two hold at once, the third waits for a slot" {
	local a b
	a=$(rlock acquire --limit 2 -t 10s job)
	b=$(rlock acquire --limit 2 -t 10s job)
	[[ -n "$a" && -n "$b" && "$a" != "$b" ]] || fail "two holders: '$a' '$b'"
	run --separate-stderr rlock acquire --limit 2 -n job
	assert_equal "$status" 1
	run --separate-stderr rlock release --token "$a" job
	assert_success
	run --separate-stderr rlock exec --limit 2 -n job -- true
	assert_success
	run --separate-stderr rlock release --token "$b" job
	assert_success
}

@test "fifo: --fifo waiters get a released lock in the order they came" {
	local holder n
	holder=$(rlock acquire -t 30s job)
	for n in 1 2; do
		bg_start "W$n" "$RLOCK" exec --fifo -w 20s job -- sh -c "echo $n >>order.log"
		until_bounded 10000 in_line "$n" ||
			fail "waiter $n never got in line"
	done
	rlock release --token "$holder" job
	bg_wait "$W1" 20000 || fail "waiter 1 still waits"
	assert_equal "$BG_STATUS" 0
	bg_wait "$W2" 20000 || fail "waiter 2 still waits"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(tr '\n' ' ' <order.log)" "1 2 "
}

# until_waiters N: N processes wait on job (its waiters hash).
until_waiters() {
	[[ "$(rcli HLEN 'rlock:{job}:waiters')" == "$1" ]]
}

@test "deploy: --pending 1 supersedes the older waiter (36, its command not run); --replace stops the holder (37) and runs" {
	local holder
	holder=$(rlock acquire -t 30s job)
	bg_start P1 "$RLOCK" exec --pending 1 -w 20s job -- sh -c 'echo 1 >>ran'
	until_bounded 10000 until_waiters 1 || fail "the first waiter never listed"
	bg_start P2 "$RLOCK" exec --pending 1 -w 20s job -- sh -c 'echo 2 >>ran'
	bg_wait "$P1" 10000 || fail "the superseded waiter still waits"
	assert_equal "$BG_STATUS" 36
	rlock release --token "$holder" job
	bg_wait "$P2" 20000 || fail "the newest waiter still waits"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat ran)" 2
	# --replace: the running holder's command is stopped, its rlock
	# exits 37, the newcomer runs after it.
	bg_start H "$RLOCK" exec -t 2s job -- sh -c 'echo started >h.log; trap "echo term >>h.log; exit 0" TERM; while :; do sleep 0.05; done'
	until_bounded 10000 test -s h.log || fail "the holder never started"
	run --separate-stderr rlock exec --replace -w 20s job -- sh -c 'echo new >>h.log'
	assert_success
	bg_wait "$H" 10000 || fail "the replaced holder still runs"
	assert_equal "$BG_STATUS" 37
	assert_equal "$(tr '\n' ' ' <h.log)" "started term new "
}

@test "max-runtime: exec --max-runtime stops the command, exits 124 and releases" {
	local t0
	t0=$(now_ms)
	run --separate-stderr rlock exec --max-runtime 300ms --kill-after 1s job -- sleep 20
	assert_equal "$status" 124
	assert_between $(($(now_ms) - t0)) 0 5000 ms
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "every: --every lets one start a period in, refuses the next quiet, counts a success only with --retry-failed, and status shows the schedule" {
	run --separate-stderr rlock exec --every 1h job -- true
	assert_success
	run --separate-stderr rlock exec --every 1h job -- touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$status" 1
	assert_equal "$stderr" ""
	[[ ! -e "$BATS_TEST_TMPDIR/ran" ]] || fail "a second start in the period ran"
	run --separate-stderr rlock exec --every 1h --retry-failed job2 -- false
	assert_equal "$status" 1
	run --separate-stderr rlock exec --every 1h --retry-failed job2 -- touch "$BATS_TEST_TMPDIR/ran"
	assert_success
	[[ -e "$BATS_TEST_TMPDIR/ran" ]] || fail "a failed run was not retried"
	run --separate-stderr rlock exec --every 1h --retry-failed job2 -- true
	assert_equal "$status" 1
	run --separate-stderr rlock --json status job job2	# (free: exits 1)
	json_check 'all(x["every_ms"] == 3600000 and x["last_exit_status"] == 0 and not x["overdue"] for x in d)' <<<"$output"
	run --separate-stderr rlock status --overdue
	assert_success
	assert_output ""
}

@test "schedule: slots, a declared schedule, a pause (exit 38) and resume, --cron, the failures' record" {
	run --separate-stderr rlock schedule declare job --every 1h --grace 10m
	assert_success
	run --separate-stderr rlock schedule pause job
	assert_success
	run --separate-stderr rlock exec --every 1h job -- touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$status" 38
	run --separate-stderr rlock schedule resume job
	assert_success
	run --separate-stderr rlock exec --every 1h job -- false
	assert_equal "$status" 1
	run --separate-stderr rlock exec --cron '0 0 1 1 *' cron -- touch "$BATS_TEST_TMPDIR/ran"
	assert_success
	run --separate-stderr rlock exec --cron '0 0 1 1 *' cron -- true
	assert_equal "$status" 1
	run --separate-stderr rlock --json status job cron	# (free: exits 1)
	json_check 'd[0]["failures"] == 1 and d[0]["grace_ms"] == 600000 and d[1]["cron"] == "0 0 1 1 *" and d[1]["failures"] == 0' <<<"$output"
	run --separate-stderr rlock status --failing
	assert_equal "$status" 1
	assert_equal "$(rcli PTTL 'rlock:{job}:every' | tr -d '\r')" -1
	run --separate-stderr rlock schedule remove job
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{job}:every' | tr -d '\r')" 0
}

@test "history: watch follows the events, log and the openmetrics status show them" {
	bg_start WATCH "$RLOCK" watch job
	until_bounded 10000 eval "rcli CLIENT LIST | grep -q 'cmd=xread'" ||
		fail "watch never blocked: $(cat WATCH.err)"
	run --separate-stderr rlock exec job -- sh -c 'exit 3'
	assert_equal "$status" 3
	until_bounded 10000 eval '(( $(wc -l <WATCH.out) >= 2 ))' ||
		fail "watch printed: $(cat WATCH.out)"
	run cat WATCH.out
	assert_line --index 0 --regexp " job acquired by "
	assert_line --index 1 --regexp " job released by .*: exit 3, fence "
	kill -TERM "$WATCH"
	run --separate-stderr rlock log job
	assert_success
	assert_line --index 0 --regexp " job released by .*: exit 3, fence "
	run --separate-stderr rlock log
	assert_success
	assert_equal "${#lines[@]}" 2
	run --separate-stderr rlock status --format openmetrics
	assert_success
	assert_line 'rlock_last_run_exit_status{name="job"} 3'
	assert_line '# EOF'
}

@test "history: trimmed a node at a time, to near its cap" {
	local i n
	for ((i = 0; i < 300; i++)); do
		printf 'XADD rlock:{job}:log * e acquired h old\n'
	done | rcli >/dev/null
	for i in 1 2 3; do
		rlock exec --history-length 5 job -- true
	done
	n=$(rcli XLEN 'rlock:{job}:log')
	assert_between "$n" 5 105 "length of the history (cap 5)"
	run --separate-stderr rlock log -n 1 job
	assert_line --index 0 --partial 'job released'
}

@test "doctor: the server's version is supported and nothing is an error" {
	run --separate-stderr rlock doctor
	# A plain test server: a persistence warning, so 1.
	assert_equal "$status" 1
	assert_line --regexp '^ok +[^ ]+: version: '
	assert_line --regexp '^ok +[^ ]+: scripts: '
	refute_line --regexp '^error '
}

@test "tls: acquire, exec, status and release over rediss:// with a client certificate" {
	make_test_pki "$BATS_TEST_TMPDIR/pki"
	start_tls_redis_as TLS yes
	local t=(-u "$TLS_URL" --tls-ca "$TLS_CA" --tls-cert "$TLS_CLIENT_CRT" --tls-key "$TLS_CLIENT_KEY")
	run --separate-stderr rlock "${t[@]}" acquire job
	assert_success
	local tok=$output
	assert_equal "$(tcli TLS HKEYS 'rlock:{job}')" "$tok"
	run --separate-stderr rlock "${t[@]}" status job
	assert_success
	run --separate-stderr rlock "${t[@]}" release --token "$tok" job
	assert_success
	run --separate-stderr rlock "${t[@]}" exec job -- true
	assert_success
	assert_equal "$(tcli TLS EXISTS 'rlock:{job}')" 0
}

@test "quorum: three servers: acquire writes a majority, status shows it, exec and release clear them" {
	start_quorum 3
	run --separate-stderr rlockq acquire job
	assert_success
	local tok=$output
	# A majority at least: a straggler on a busy machine may be left out.
	assert_between "$(nodes_with_token job "$tok")" 2 3 "servers with the token"
	run --separate-stderr rlockq status job
	assert_success
	assert_output --regexp '^job: held by '
	run --separate-stderr rlockq release --token "$tok" job
	assert_success
	assert_equal "$(nodes_with_key 'rlock:{job}')" 0
	run --separate-stderr rlockq exec job -- true
	assert_success
	assert_equal "$(nodes_with_key 'rlock:{job}')" 0
}

@test "sentinel: locks go to the master the sentinel names, before and after a failover" {
	start_sentinel_group
	run --separate-stderr rlock -u "$SENT_URL" acquire job
	assert_success
	local tok=$output
	assert_equal "$(rcli_as SM HKEYS 'rlock:{job}')" "$tok"
	run --separate-stderr rlock -u "$SENT_URL" release --token "$tok" job
	assert_success
	run scli SS SENTINEL FAILOVER mm
	assert_output OK
	wait_master_change SS mm "$SM_PORT" 15000 >/dev/null ||
		fail "the sentinel never switched masters"
	wait_role SR master 10000 || fail "the replica was never promoted"
	run --separate-stderr rlock -u "$SENT_URL" exec job -- sh -c 'echo "$RLOCK_TOKEN"'
	assert_success
	run --separate-stderr rlock -u "$SENT_URL" acquire job
	assert_success
	assert_equal "$(rcli_as SR HKEYS 'rlock:{job}')" "$output"
}

@test "cluster: locks on every master via one node; the listing, status and log of several via the others" {
	start_cluster
	# (Not "i": bats's run clobbers a global i.)
	local n1 n2 n3 nm k more=()
	n1=$(name_on_node 1 a)
	n2=$(name_on_node 2 b)
	n3=$(name_on_node 3 c)
	for nm in "$n1" "$n2" "$n3"; do
		run --separate-stderr rlock -u "$C1_URL" exec "$nm" -- true
		assert_success
		run --separate-stderr rlock -u "$C1_URL" acquire -t 60s "$nm"
		assert_success
	done
	# Two locks a master: a listing of one call a lock would show.
	for k in 1 2 3; do
		more+=("$(name_on_node "$k" x)")
		rlock -u "$C1_URL" acquire -t 60s "${more[-1]}" >/dev/null
	done
	assert_equal "$(ccli 1 EXISTS "rlock:{$n1}")" 1
	assert_equal "$(ccli 2 EXISTS "rlock:{$n2}")" 1
	assert_equal "$(ccli 3 EXISTS "rlock:{$n3}")" 1
	for k in 1 2 3; do ccli "$k" CONFIG RESETSTAT >/dev/null; done
	# Each master's locks in one call (after one try of all at once):
	# Redis 7 with the allow-cross-slot-keys flag; Redis 6, which has no
	# flags and no such check, without it, once its compiler refused the
	# flag's line (one call a lock before: 10 calls here).
	run --separate-stderr rlock -u "$C2_URL" status
	assert_success
	assert_equal "${#lines[@]}" 6
	assert_line --regexp "^$n1: held by "
	assert_line --regexp "^$n2: held by "
	assert_line --regexp "^$n3: held by "
	if (($(major_of C1) >= 7)); then
		assert_between "$(script_calls 1 2 3)" 3 5 "script calls (one a master)"
	else
		assert_between "$(script_calls 1 2 3)" 4 7 "script calls (one a master, each after its refused try)"
	fi
	run --separate-stderr rlock -u "$C3_URL" --json status "$n1" "$n2" "$n3"
	assert_success
	json_check 'len(d) == 3 and all(x["held"] for x in d)' <<<"$output"
	run --separate-stderr rlock -u "$C2_URL" log
	assert_success
	assert_equal "${#lines[@]}" 12
	run --separate-stderr rlock -u "$C3_URL" log "$n1" "$n2" "$n3"
	assert_success
	assert_equal "${#lines[@]}" 9
	for nm in "$n1" "$n2" "$n3" "${more[@]}"; do
		run --separate-stderr rlock -u "$C3_URL" release --force "$nm"
		assert_success
	done
	run --separate-stderr rlock -u "$C1_URL" status
	assert_success
	assert_output ''
}
