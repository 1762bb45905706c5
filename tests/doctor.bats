#!/usr/bin/env bats
# doctor.bats: `rlock doctor` against servers configured to trigger each of
# its findings: persistence, eviction policy, role, replicas, cluster mode,
# script permission and the commands an ACL user may run (more in
# acl.bats), reachability; its --json form; and its exit
# status (0 all well, 1 something to fix, 69 a server cannot be reached).

load helpers
load extra-helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { default_setup; }
teardown() { cleanup_test; }

# run_doctor URL [OPTIONS...]: run doctor on URL alone; sets status, output
# (stdout), stderr and lines.
run_doctor() {
	local url=$1
	shift
	run --separate-stderr rlock -u "$url" "$@" doctor
}

# assert_finding SEVERITY URL CHECK [MESSAGE-GLOB]: among $lines, exactly one
# line is the CHECK finding for URL; it has SEVERITY (padded to 8 columns)
# and, if given, a message matching MESSAGE-GLOB.
assert_finding() {
	local sev=$1 url=$2 check=$3 glob=${4:-*} line found=() want
	for line in "${lines[@]}"; do
		if [[ "$line" =~ ^(ok|info|warning|error)\ +"$url: $check: " ]]; then
			found+=("$line")
		fi
	done
	if ((${#found[@]} != 1)); then
		batslib_print_kv_single_or_multi 8 check "$check" output "$output" |
			batslib_decorate "expected exactly one '$check' finding for $url" | fail
	fi
	printf -v want '%-8s %s: %s: ' "$sev" "$url" "$check"
	if [[ "${found[0]}" != "$want"* ]]; then
		batslib_print_kv_single_or_multi 8 want "$want..." line "${found[0]}" |
			batslib_decorate "the '$check' finding has the wrong severity or form" | fail
	fi
	# shellcheck disable=SC2053 # the glob is meant to match
	if [[ "${found[0]#"$want"}" != $glob ]]; then
		batslib_print_kv_single_or_multi 8 message-glob "$glob" line "${found[0]}" |
			batslib_decorate "the '$check' finding says something else" | fail
	fi
}

# refute_finding URL CHECK: no CHECK finding for URL.
refute_finding() {
	local url=$1 check=$2 line
	for line in "${lines[@]}"; do
		if [[ "$line" == *" $url: $check: "* ]]; then
			fail "unexpected '$check' finding: $line"
		fi
	done
}

# Every stdout line is a finding: "SEVERITY URL: CHECK: MESSAGE".
assert_all_findings() {
	local line
	((${#lines[@]} > 0)) || fail "doctor printed nothing"
	for line in "${lines[@]}"; do
		[[ "$line" =~ ^(ok\ {7}|info\ {5}|warning\ {2}|error\ {4})[a-z]+://[^\ ]+:\ [a-z-]+:\ . ]] ||
			fail "not a finding line: '$line' in: $output"
	done
}

@test "doctor: a plain server gets ok lines, info about replicas and a persistence warning, exit 1" {
	run_doctor "$RLOCK_URL"
	assert_equal "$status" 1
	assert_equal "$stderr" ""
	assert_all_findings
	assert_finding ok "$RLOCK_URL" reachable
	assert_finding ok "$RLOCK_URL" version "Redis [0-9]*"
	assert_finding ok "$RLOCK_URL" role master
	assert_finding info "$RLOCK_URL" replicas "0 connected*"
	assert_finding ok "$RLOCK_URL" eviction "*noeviction*"
	assert_finding warning "$RLOCK_URL" persistence "appendonly no*"
	assert_finding ok "$RLOCK_URL" scripts "*EVAL allowed*"
	assert_finding ok "$RLOCK_URL" acl "user default may run every command rlock sends"
	refute_finding "$RLOCK_URL" cluster
	# The findings come in the documented order.
	local order
	order=$(sed -E 's/^[a-z]+ +[^ ]+ ([a-z-]+): .*/\1/' <<<"$output" | tr '\n' ' ')
	assert_equal "$order" "reachable transport auth version role replicas eviction persistence scripts busy-scripts acl locks "
	# doctor writes nothing.
	assert_equal "$(rcli DBSIZE)" 0
}

@test "doctor: appendonly yes with appendfsync everysec or always makes persistence ok" {
	local fsync
	for fsync in everysec always; do
		start_redis_as AOF --appendonly yes --appendfsync "$fsync"
		run_doctor "$AOF_URL"
		assert_finding ok "$AOF_URL" persistence "appendonly yes, appendfsync $fsync*"
		stop_redis AOF
	done
	# appendfsync no is a warning.
	start_redis_as AOF --appendonly yes --appendfsync no
	run_doctor "$AOF_URL"
	assert_equal "$status" 1
	assert_finding warning "$AOF_URL" persistence "*appendfsync no*"
}

@test "doctor: allkeys-lru with a maxmemory is an eviction warning" {
	start_redis_as EV --maxmemory 100mb --maxmemory-policy allkeys-lru
	run_doctor "$EV_URL"
	assert_equal "$status" 1
	assert_finding warning "$EV_URL" eviction "*allkeys-lru*"
}

@test "doctor: volatile-lru with a maxmemory is an eviction error, without one it is ok" {
	start_redis_as EV --maxmemory 100mb --maxmemory-policy volatile-lru
	run_doctor "$EV_URL"
	assert_equal "$status" 1
	assert_finding error "$EV_URL" eviction "*volatile-lru*"
	stop_redis EV
	# Lock keys cannot be evicted while there is no memory limit.
	start_redis_as EV --maxmemory-policy volatile-lru
	run_doctor "$EV_URL"
	assert_finding ok "$EV_URL" eviction
}

@test "doctor: a replica gets a role error and exit 1" {
	start_redis_as REP --replicaof 127.0.0.1 "$REDIS_PORT"
	run_doctor "$REP_URL"
	assert_equal "$status" 1
	assert_all_findings
	assert_finding error "$REP_URL" role "*replica cannot hold locks*"
	assert_finding ok "$REP_URL" reachable
}

@test "doctor: a master with a connected replica gets ok for replicas" {
	start_redis_as MAS
	start_redis_as REP --replicaof 127.0.0.1 "$MAS_PORT"
	wait_replica_up MAS REP
	run_doctor "$MAS_URL"
	assert_finding ok "$MAS_URL" replicas "1 connected*"
	assert_finding ok "$MAS_URL" role master
}

@test "doctor: an ACL user without +@scripting gets a scripts error" {
	rcli ACL SETUSER bob on '>bob-pw' '~*' '&*' '+@all' '-@scripting' >/dev/null
	local url="redis://bob:bob-pw@127.0.0.1:$REDIS_PORT" shown="redis://bob@127.0.0.1:$REDIS_PORT"
	run_doctor "$url"
	rcli ACL DELUSER bob >/dev/null
	assert_equal "$status" 1
	assert_finding error "$shown" scripts "*cannot run scripts*"
	assert_finding error "$shown" acl "user bob may not run EVALSHA, EVAL; the commands the scripts call were not checked (ACL SETUSER bob ~rlock:* +evalsha *)"
	assert_finding ok "$shown" reachable
	refute_contains bob-pw "$output $stderr"
}

@test "doctor: a cluster-enabled node gets info about cluster mode" {
	start_redis_as CL --cluster-enabled yes --cluster-config-file nodes.conf
	run_doctor "$CL_URL"
	assert_all_findings
	assert_finding info "$CL_URL" cluster
	assert_finding ok "$CL_URL" reachable
}

@test "doctor: an unreachable URL exits 69 with one error line" {
	local port url
	port=$(free_port)
	url="redis://127.0.0.1:$port"
	run_doctor "$url"
	assert_equal "$status" 69
	assert_equal "${#lines[@]}" 1
	assert_finding error "$url" reachable "*refused*"
	# Anything on stderr is one "rlock: " line at most.
	if [[ -n "$stderr" ]]; then
		assert_one_error_line
	fi
	# Next to a healthy server it still exits 69, and the healthy one is
	# still checked.
	run --separate-stderr rlock -u "$RLOCK_URL" -u "$url" doctor
	assert_equal "$status" 69
	assert_finding error "$url" reachable
	assert_finding ok "$RLOCK_URL" scripts
}

@test "doctor: --json is an array of findings with server, check, severity, message and remedy" {
	run_doctor "$RLOCK_URL" --json
	assert_equal "$status" 1
	echo "$output" | json_check 'isinstance(d, list) and len(d) >= 8'
	echo "$output" | json_check 'all(set(f) >= {"server","check","severity","message","remedy"} for f in d)'
	echo "$output" | json_check 'all(f["server"] == "'"$RLOCK_URL"'" for f in d)'
	echo "$output" | json_check 'all(f["severity"] in ("ok","info","warning","error") for f in d)'
	echo "$output" | json_check 'all(isinstance(f["message"], str) and f["message"] for f in d)'
	echo "$output" | json_check 'all(f["remedy"] is None or isinstance(f["remedy"], str) for f in d)'
	echo "$output" | json_check '[f["check"] for f in d] == ["reachable","transport","auth","version","role","replicas","eviction","persistence","scripts","busy-scripts","acl","locks"]'
	echo "$output" | json_check '[f for f in d if f["check"] == "persistence"][0]["severity"] == "warning"'
	echo "$output" | json_check '[f for f in d if f["check"] == "persistence"][0]["remedy"]'
	echo "$output" | json_check '[f for f in d if f["check"] == "role"][0]["remedy"] is None'
	# And for an unreachable server.
	local url
	url="redis://127.0.0.1:$(free_port)"
	run_doctor "$url" --json
	assert_equal "$status" 69
	echo "$output" | json_check 'len(d) == 1 and d[0]["check"] == "reachable" and d[0]["severity"] == "error"'
}

@test "doctor: a server with a password, appendonly, a replica and noeviction gets only ok and info lines, exit 0" {
	start_redis_auth_as GOOD good-pw --appendonly yes --appendfsync everysec --maxmemory-policy noeviction
	start_redis_auth_as REP good-pw --replicaof 127.0.0.1 "$GOOD_PORT" --masterauth good-pw
	RCLI_AUTH=good-pw wait_replica_up GOOD REP
	export RLOCK_PASSWORD=good-pw
	run_doctor "$GOOD_URL"
	assert_equal "$status" 0
	assert_equal "$stderr" ""
	assert_all_findings
	run grep -Ev '^(ok|info) ' <<<"$output"
	assert_output ""
	run_doctor "$GOOD_URL" --json
	assert_equal "$status" 0
	echo "$output" | json_check 'all(f["severity"] in ("ok","info") for f in d)'
}

@test "doctor takes no lock name" {
	run --separate-stderr rlock doctor job
	assert_usage_error
}

@test "doctor: used memory above 90% of maxmemory is a memory warning naming the figures and the remedy" {
	start_redis_as MEM --maxmemory-policy noeviction
	local used
	used=$(rcli_as MEM INFO memory | tr -d '\r' | sed -n 's/^used_memory:\([0-9]*\)$/\1/p')
	# A limit a little above what the server uses now: over 90% used.
	rcli_as MEM CONFIG SET maxmemory $((used + used / 50)) >/dev/null
	run_doctor "$MEM_URL"
	assert_equal "$status" 1
	assert_all_findings
	assert_finding warning "$MEM_URL" memory "used * of maxmemory * (*%)*noeviction*"
	[[ "$output" == *"memory: "*"maxmemory"*"("*"CONFIG SET maxmemory"* ]] || fail "the memory finding should give the remedy: $output"
	# Well under the limit: ok, with the figures.
	rcli_as MEM CONFIG SET maxmemory $((used * 10)) >/dev/null
	run_doctor "$MEM_URL"
	assert_finding ok "$MEM_URL" memory "used * of maxmemory * (*%)*"
	# Without a limit there is nothing to say.
	rcli_as MEM CONFIG SET maxmemory 0 >/dev/null
	run_doctor "$MEM_URL"
	refute_finding "$MEM_URL" memory
}

@test "doctor: the busy-script finding names the server's busy-reply-threshold and what a looping script does" {
	start_redis_as BUSY --busy-reply-threshold 3000
	run_doctor "$BUSY_URL"
	assert_all_findings
	assert_finding info "$BUSY_URL" busy-scripts "*busy-reply-threshold 3s*BUSY*SCRIPT KILL*"
	stop_redis BUSY
	# A threshold longer than --timeout: rlock stops waiting before Redis says BUSY.
	start_redis_as BUSY --busy-reply-threshold 10000
	run_doctor "$BUSY_URL"
	assert_finding info "$BUSY_URL" busy-scripts "*busy-reply-threshold 10s*--timeout 2s*"
}

# ---------------------------------------------------------------------------
# Security: how the traffic goes, and whether the server wants a password
# ---------------------------------------------------------------------------

@test "doctor: no password on the server is an auth warning with the remedy; a password makes it ok" {
	run_doctor "$RLOCK_URL"
	assert_finding warning "$RLOCK_URL" auth "a client without a password is let in* (set requirepass*--password-file)"
	assert_finding ok "$RLOCK_URL" transport "plain TCP to a loopback address"

	start_redis_auth_as PW pw-1
	RLOCK_PASSWORD=pw-1 run_doctor "$PW_URL"
	assert_equal "$stderr" ""
	assert_finding ok "$PW_URL" auth "a client without a password is refused"
	# The password is in no finding.
	[[ "$output" != *pw-1* ]] || fail "the password shows: $output"

	# The default user off, rlock an ACL user of its own: refused too.
	start_redis_as ACLD
	rcli_as ACLD ACL SETUSER locker on '>locker-pw' '~*' '+@all' >/dev/null
	rcli_as ACLD ACL SETUSER default off >/dev/null
	run_doctor "redis://locker:locker-pw@127.0.0.1:$ACLD_PORT"
	assert_finding ok "redis://locker@127.0.0.1:$ACLD_PORT" auth "a client without a password is refused"
}

@test "doctor: a password over plain TCP to localhost (loopback) is no transport warning; a Unix socket is ok" {
	start_redis_auth_as PW pw-2
	run_doctor "redis://:pw-2@localhost:$PW_PORT"
	assert_equal "$stderr" ""
	assert_finding ok "redis://localhost:$PW_PORT" transport "plain TCP to a loopback address"
	assert_finding ok "redis://localhost:$PW_PORT" auth
	run_doctor "redis://:pw-2@[::1]:$PW_PORT" --connect-timeout 1s
	# ::1 may not be bound: only the finding's logic matters when it is.
	if [[ "$output" == *"reachable: round trip"* ]]; then
		assert_finding ok "redis://[::1]:$PW_PORT" transport "plain TCP to a loopback address"
	fi
	RLOCK_PASSWORD=pw-2 run_doctor "unix://$PW_SOCK"
	assert_finding ok "unix://$PW_SOCK" transport "Unix socket*"
}

# In a network namespace of its own (unshare -rn), a non-loopback address
# (10.11.12.13 on the namespace's own lo) that no packet can leave: a
# server there with a password, and one without (protected-mode no).
@test "doctor: a password over plain TCP to a non-loopback address is a transport warning; without a password it is info" {
	unshare -rn true 2>/dev/null || skip "unshare -rn (a network namespace) is not available here"
	command -v ip >/dev/null || skip "ip(8) is not installed"
	cd "$BATS_TEST_TMPDIR"
	cat >ns.sh <<'EOF'
set -u
dir=$1 pids=$2 RLOCK=$3
ip link set lo up && ip addr add 10.11.12.13/32 dev lo || exit 90
start() {
	redis-server --port "$1" --bind 10.11.12.13 --save '' --appendonly no \
		--daemonize no --dir "$dir" "${@:2}" </dev/null >>"$dir/redis.out" 2>&1 &
	echo $! >>"$pids"
	echo $!
}
a=$(start 6390 --requirepass ns-pw)
b=$(start 6391 --protected-mode no)
for ((i = 0; i < 250; i++)); do
	redis-cli -h 10.11.12.13 -p 6390 --no-auth-warning -a ns-pw PING 2>/dev/null | grep -q PONG &&
		redis-cli -h 10.11.12.13 -p 6391 PING 2>/dev/null | grep -q PONG && break
	sleep 0.02
done
"$RLOCK" -u redis://:ns-pw@10.11.12.13:6390 doctor >"$dir/pw.out" 2>&1
"$RLOCK" -u redis://10.11.12.13:6391 doctor >"$dir/nopw.out" 2>&1
kill "$a" "$b"
wait "$a" "$b"
exit 0
EOF
	run timeout 60 unshare -rn bash ns.sh "$BATS_TEST_TMPDIR" "$BATS_TEST_TMPDIR/.redis-pids" "$RLOCK"
	assert_success
	run cat pw.out
	assert_finding warning "redis://10.11.12.13:6390" transport "the password goes in clear over plain TCP to 10.11.12.13, which is not a loopback address* (use rediss://*)"
	assert_finding ok "redis://10.11.12.13:6390" auth
	[[ "$output" != *ns-pw* ]] || fail "the password shows: $output"
	run cat nopw.out
	assert_finding info "redis://10.11.12.13:6391" transport "plain TCP to 10.11.12.13, which is not a loopback address*"
	assert_finding warning "redis://10.11.12.13:6391" auth
}
