#!/usr/bin/env bats
# cluster-doors.bats: one Redis Cluster named by several seed nodes
# (redis://h1:p1,h2:p2,h3:p3): any live node is a door.  A first seed that
# was never up (or whose name does not resolve) is passed by; the seed that
# owns the lock's slot SIGKILLed or frozen (its replica promoted) stops
# neither exec -w, acquire, status and release through the seed list, nor
# exec's heartbeat, and no raw MOVED/ASK/CLUSTERDOWN is ever printed; bad
# seed lists are usage errors (64).  One cluster for the file: three
# masters, each with a replica, cluster-node-timeout 1 s; a test that kills
# or freezes a master picks a lock whose master still has a live replica,
# so the tests run in any order or alone.

load helpers
load exec-helpers
load dist-helpers

setup_file() { start_cluster_replicas; }
teardown_file() { stop_all_redis; }

setup() {
	require_rlock
	unset RLOCK_TOKEN RLOCK_PREFIX RLOCK_PASSWORD REDISCLI_AUTH RLOCK_CONFIG RLOCK_URL
	cd "$BATS_TEST_TMPDIR"
}

teardown() {
	thaw_all
	exec_teardown
}

# No raw redirection or cluster error in $1.
refute_raw_cluster_error() {
	refute_contains "MOVED " "$1"
	refute_contains "ASK " "$1"
	refute_contains "CLUSTERDOWN The" "$1"
	refute_contains "TRYAGAIN Multiple" "$1"
}

# assert_seed_usage_error: exit 64, one "rlock: " line, nothing on stdout.
assert_seed_usage_error() {
	assert_equal "$status" 64
	assert_one_error_line
	assert_equal "$output" ""
}

@test "doors: a seed list whose first seed was never up (connection refused) works at once through the second" {
	local dead url tok
	dead=$(free_port)
	url="redis://127.0.0.1:$dead,127.0.0.1:$CR1_PORT,127.0.0.1:$CR2_PORT"
	run --separate-stderr rlock -u "$url" acquire -t 1m door-a
	assert_success
	tok=$output
	[[ "$tok" =~ $UUID_RE ]]
	run --separate-stderr rlock -u "$url" status door-a
	assert_success
	assert_line --regexp "^door-a: held by "
	run --separate-stderr rlock -u "$url" release --token "$tok" door-a
	assert_success
	refute_raw_cluster_error "$stderr"
	# A first seed whose name does not resolve (.invalid never does).
	url="redis://no-such-node.invalid:7000,127.0.0.1:$CR2_PORT"
	run --separate-stderr rlock -u "$url" acquire -t 1m door-a
	assert_success
	run --separate-stderr rlock -u "$url" release --token "$output" door-a
	assert_success
}

@test "doors: with every seed but the last never up, status and log list the locks of every master" {
	local d1 d2 url n k
	d1=$(free_port)
	d2=$(free_port)
	url="redis://127.0.0.1:$d1,127.0.0.1:$d2,127.0.0.1:$CR3_PORT"
	for n in la lb lc ld le lf; do
		run --separate-stderr rlock -u "$url" acquire -t 1m "$n"
		assert_success
	done
	run --separate-stderr rlock -u "$url" status
	assert_success
	for n in la lb lc ld le lf; do assert_line --regexp "^$n: held by "; done
	run --separate-stderr rlock -u "$url" log la lf
	assert_success
	for n in la lb lc ld le lf; do
		rlock -u "$url" release --force "$n" >/dev/null
	done
}

@test "doors: the password of a seed list never shows; every seed dead is exit 69 with one line" {
	local d1 d2 url
	d1=$(free_port)
	d2=$(free_port)
	url="redis://:s3cr3tpw@127.0.0.1:$d1,127.0.0.1:$d2"
	run --separate-stderr rlock -u "$url" acquire door-b
	assert_equal "$status" 69
	assert_one_error_line
	refute_contains "s3cr3tpw" "$stderr"
	run --separate-stderr rlock -u "$url" -v acquire door-b
	refute_contains "s3cr3tpw" "$stderr"
}

@test "doors: bad seed lists are one-line usage errors (64)" {
	local p=$CR1_PORT
	run --separate-stderr rlock -u "redis://127.0.0.1:$p,,127.0.0.1:$p" acquire x
	assert_seed_usage_error
	assert_equal "${stderr_lines[0]}" "rlock: invalid --url: empty host in the seed list (write redis://h1:7000,h2:7000,h3:7000)"
	run --separate-stderr rlock -u "redis://,127.0.0.1:$p" acquire x
	assert_seed_usage_error
	run --separate-stderr rlock -u "redis://127.0.0.1:$p," acquire x
	assert_seed_usage_error
	run --separate-stderr rlock -u "redis://127.0.0.1:$p,:7001" acquire x
	assert_seed_usage_error
	run --separate-stderr rlock -u "unix:///tmp/a.sock,/tmp/b.sock" acquire x
	assert_seed_usage_error
	[[ "${stderr_lines[0]}" == *"one socket"* ]]
	run --separate-stderr rlock -u "redis://127.0.0.1:$p,rediss://127.0.0.1:$p" acquire x
	assert_seed_usage_error
	[[ "${stderr_lines[0]}" == *"one scheme"* ]]
	run --separate-stderr rlock -u "redis://127.0.0.1:$p,127.0.0.1:$p" acquire x
	assert_seed_usage_error
	[[ "${stderr_lines[0]}" == *"twice"* ]]
	# A seed list is one cluster, not a quorum.
	run --separate-stderr rlock -u "redis://127.0.0.1:$CR1_PORT,127.0.0.1:$CR2_PORT" -u "redis://127.0.0.1:$CR3_PORT" acquire x
	assert_seed_usage_error
	[[ "${stderr_lines[0]}" == *"one cluster"* ]]
}

@test "doors: doctor with a seed list checks the first live seed" {
	local dead
	dead=$(free_port)
	run --separate-stderr rlock -u "redis://127.0.0.1:$dead,127.0.0.1:$CR2_PORT" doctor
	# Findings (warnings: no persistence), never a usage error or a crash.
	[[ "$status" -eq 0 || "$status" -eq 1 ]]
	assert_output --partial "cluster"
}

@test "doors: the seed owning the lock's slot SIGKILLed: exec -w 30s, acquire, status and release go through the other seeds once its replica is promoted" {
	local name owner others url ovar opid tok m
	name=$(cr_name_replicated doorkill)
	owner=$(crport_owner "$name")
	[[ "$owner" =~ ^[0-9]+$ ]]
	others=()
	for m in $(cr_masters); do [[ "$m" == "$owner" ]] || others+=("$m"); done
	assert_equal "${#others[@]}" 2
	url="redis://127.0.0.1:$owner,127.0.0.1:${others[0]},127.0.0.1:${others[1]}"

	# Through the seed list, before: the first seed serves it.
	run --separate-stderr rlock -u "$url" acquire -t 1m "$name"
	assert_success
	tok=$output
	run --separate-stderr rlock -u "$url" release --token "$tok" "$name"
	assert_success

	ovar=$(crvar_of_port "$owner")
	opid="${ovar}_PID"
	opid=${!opid}
	kill -KILL "$opid"
	wait_gone "$opid" 5000

	# Waits through the failover: the replica is promoted within seconds.
	run --separate-stderr rlock -v -u "$url" exec -w 30s -t 5s "$name" -- echo ran
	assert_success
	assert_output "ran"
	refute_raw_cluster_error "$stderr"

	run --separate-stderr rlock -u "$url" acquire -t 1m "$name"
	assert_success
	tok=$output
	[[ "$tok" =~ $UUID_RE ]]
	run --separate-stderr rlock -u "$url" status "$name"
	assert_success
	assert_line --regexp "^$name: held by "
	run --separate-stderr rlock -u "$url" status
	assert_success
	assert_line --regexp "^$name: held by "
	run --separate-stderr rlock -u "$url" release --token "$tok" "$name"
	assert_success
	refute_raw_cluster_error "$stderr"

	# The owner is now a former replica: it is not the dead port.
	[[ "$(crport_owner "$name")" != "$owner" ]]
}

@test "doors: exec's heartbeat through a seed list rides through its slot owner's SIGKILL: the lock is kept and the command ends with 0" {
	local name owner others url ovar opid m ex
	name=$(cr_name_replicated beat)
	owner=$(crport_owner "$name")
	[[ "$owner" =~ ^[0-9]+$ ]]
	others=()
	for m in $(cr_masters); do [[ "$m" == "$owner" ]] || others+=("$m"); done
	url="redis://127.0.0.1:$owner,127.0.0.1:${others[0]},127.0.0.1:${others[1]}"

	bg_start ex "$RLOCK" -v -u "$url" exec -t 10s "$name" -- sh -c 'echo "$RLOCK_TOKEN" > token; sleep 12'
	wait_file token 10000 || fail "the command did not start: $(cat ex.err)"
	ovar=$(crvar_of_port "$owner")
	opid="${ovar}_PID"
	opid=${!opid}
	kill -KILL "$opid"
	wait_gone "$opid" 5000

	bg_wait "$ex" 40000 || fail "exec did not finish: $(cat ex.err)"
	assert_equal "$BG_STATUS" 0
	refute_raw_cluster_error "$(cat ex.err)"
	# Released on the promoted replica: the lock is free.
	run --separate-stderr rlock -u "$url" status "$name"
	refute_line --regexp "^$name: held by "
}

@test "doors: the seed owning the lock's slot frozen (SIGSTOP): exec -w 30s through the seed list gets the lock once its replica is promoted" {
	local name owner others url ovar opid m
	name=$(cr_name_replicated frozen)
	owner=$(crport_owner "$name")
	[[ "$owner" =~ ^[0-9]+$ ]]
	others=()
	for m in $(cr_masters); do [[ "$m" == "$owner" ]] || others+=("$m"); done
	url="redis://127.0.0.1:$owner,127.0.0.1:${others[0]},127.0.0.1:${others[1]}"

	ovar=$(crvar_of_port "$owner")
	opid="${ovar}_PID"
	opid=${!opid}
	echo "$opid" >>"$BATS_TEST_TMPDIR/.frozen"
	kill -STOP "$opid"

	run --separate-stderr rlock -v -u "$url" --timeout 1s exec -w 30s -t 5s "$name" -- echo ran
	assert_success
	assert_output "ran"
	refute_raw_cluster_error "$stderr"
	[[ "$(crport_owner "$name")" != "$owner" ]]
}
