#!/usr/bin/env bats
# wedge.bats: inputs that must not wedge a lock. In quorum mode a server
# given twice, literally or under two names (127.0.0.1 and localhost, TCP and
# its Unix socket), is refused; closed stdin, stdout or stderr never become
# the Redis connection; a TTL that cannot be held is a usage error before any
# round trip, and a grant that always comes too late ends instead of
# spinning; config and password files are read with bounds.

load helpers
load fault-helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { file_server_setup; }
teardown() {
	stop_all_proxies
	test_teardown
}

# keys_everywhere VAR...: how many of the lock's key and metadata are on
# the servers started as VAR, all told.
keys_everywhere() {
	local v n=0
	for v in "$@"; do n=$((n + $(rcli_as "$v" EXISTS 'rlock:{job}'))); done
	echo "$n"
}

# junk_replies: how many "-ERR" replies the default server sent (what text
# written into the connection by mistake would get; NOSCRIPT is not one).
junk_replies() {
	rcli INFO errorstats | tr -d '\r' | sed -n 's/^errorstat_ERR:count=//p' | grep . || echo 0
}

# ---------------------------------------------------------------------------
# A server counts once
# ---------------------------------------------------------------------------

@test "wedge: the same URL twice in a quorum is refused (64) naming both, before any round trip" {
	start_redis_as B
	local u
	for u in "$REDIS_URL" "$REDIS_URL/0" "redis://127.0.0.1:$REDIS_PORT/3"; do
		run --separate-stderr rlock -u "$REDIS_URL" -u "$u" -u "$B_URL" acquire job
		assert_usage_error
		[[ "$stderr" == *"$REDIS_URL and $u name the same server"* ]] || fail "stderr: $stderr"
	done
	# Six copies of one URL are not six votes.
	run --separate-stderr rlock -u "$B_URL" -u "$B_URL" -u "$B_URL" -u "$B_URL" -u "$B_URL" -u "$B_URL" exec job -- touch ran
	assert_equal "$status" 64
	assert_one_error_line
	[[ ! -e ran ]] || fail "the command ran"
	assert_equal "$(rcli_as B DBSIZE)" 0
	# In RLOCK_URL too, and for status.
	RLOCK_URL="$B_URL $REDIS_URL $B_URL" run --separate-stderr "$RLOCK" status
	assert_equal "$status" 64
	assert_one_error_line
}

@test "wedge: one server under two names (127.0.0.1 and localhost) is refused (64) and nothing stays held" {
	start_redis_as B
	run --separate-stderr rlock -u "$REDIS_URL" -u "redis://localhost:$REDIS_PORT" -u "$B_URL" acquire job
	assert_equal "$status" 64
	assert_one_error_line
	assert_equal "$output" ""
	[[ "$stderr" == *"$REDIS_URL and redis://localhost:$REDIS_PORT are the same server"* ]] || fail "stderr: $stderr"
	assert_equal "$(keys_everywhere REDIS B)" 0
	# A second client naming the other server twice cannot hold it either.
	run --separate-stderr rlock -u "$B_URL" -u "redis://localhost:$B_PORT" -u "$REDIS_URL" exec job -- touch ran
	assert_equal "$status" 64
	[[ ! -e ran ]] || fail "the command ran"
	assert_equal "$(keys_everywhere REDIS B)" 0
	run --separate-stderr rlock -u "$REDIS_URL" -u "redis://localhost:$REDIS_PORT" -u "$B_URL" status job
	assert_equal "$status" 64
	assert_one_error_line
}

@test "wedge: one server through TCP and its Unix socket is refused (64), also for exec and status --json" {
	start_redis_as B
	run --separate-stderr rlock -u "$REDIS_URL" -u "unix://$REDIS_SOCK" -u "$B_URL" acquire job
	assert_equal "$status" 64
	assert_one_error_line
	[[ "$stderr" == *"are the same server"* ]] || fail "stderr: $stderr"
	assert_equal "$(keys_everywhere REDIS B)" 0
	run --separate-stderr rlock -u "unix://$REDIS_SOCK" -u "$B_URL" -u "$REDIS_URL" exec job -- touch ran
	assert_equal "$status" 64
	[[ ! -e ran ]] || fail "the command ran"
	run --separate-stderr rlock --json -u "unix://$REDIS_SOCK" -u "$B_URL" -u "$REDIS_URL" status
	assert_equal "$status" 64
	# Three distinct servers are fine.
	start_redis_as C
	run --separate-stderr rlock -u "$REDIS_URL" -u "$B_URL" -u "unix://$C_SOCK" acquire job
	assert_success
	[[ "$output" =~ $UUID_RE ]] || fail "no token: $output"
}

# ---------------------------------------------------------------------------
# Descriptors 0-2
# ---------------------------------------------------------------------------

@test "wedge: acquire with stdout closed cannot print the token, releases the lock and exits 70" {
	run --separate-stderr bash -c '"$0" acquire -t 20s job >&-' "$RLOCK"
	assert_equal "$status" 70
	assert_one_error_line
	[[ "$stderr" == *"cannot write the token"*"released"* ]] || fail "stderr: $stderr"
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	assert_equal "$(junk_replies)" 0
	# status with stdout closed fails to print, too: never into the socket.
	rlock acquire -t 20s held >/dev/null
	run --separate-stderr bash -c '"$0" status held >&-' "$RLOCK"
	assert_equal "$status" 70
	assert_equal "$(junk_replies)" 0
}

@test "wedge: with stderr closed, exec -v and a failing acquire write nothing into the connection" {
	run bash -c '"$0" -v exec -t 5s job -- true 2>&-' "$RLOCK"
	assert_success
	run bash -c '"$0" -v acquire -t 5s job2 2>&-' "$RLOCK"
	assert_success
	[[ "$output" =~ $UUID_RE ]] || fail "no token: $output"
	run bash -c '"$0" -v acquire -n job2 2>&-' "$RLOCK"
	assert_equal "$status" 1
	assert_equal "$(junk_replies)" 0
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "wedge: with stdin, stdout or stderr closed, none of the command's fds 0-2 is a socket" {
	make_script fds.sh 'for f in 0 1 2; do readlink /proc/$$/fd/$f; done > "$OUT"' >/dev/null
	local redir out
	for redir in '<&-' '>&-' '2>&-'; do
		out="$BATS_TEST_TMPDIR/fds.$RANDOM"
		run bash -c "OUT=$out \"\$0\" exec job -- ./fds.sh $redir" "$RLOCK"
		assert_success
		[[ -s "$out" ]] || fail "the command did not run with $redir"
		if grep -q socket "$out"; then
			fail "with $redir the command got a socket: $(tr '\n' ' ' <"$out")"
		fi
	done
	# acquire and status with stdin closed work as usual.
	run --separate-stderr bash -c '"$0" acquire job3 <&-' "$RLOCK"
	assert_success
	run --separate-stderr bash -c '"$0" status job3 <&-' "$RLOCK"
	assert_success
	assert_equal "$(junk_replies)" 0
}

# ---------------------------------------------------------------------------
# TTLs that cannot be held
# ---------------------------------------------------------------------------

@test "wedge: a TTL below 10ms is a usage error naming the minimum, before any connect" {
	local t
	for t in 1ms 2ms 0.5ms 9ms 0.009; do
		# Port 1: nothing listens; a connect would make it 69.
		run --separate-stderr rlock -u redis://127.0.0.1:1 acquire -t "$t" job
		assert_equal "$status" 64
		assert_one_error_line
		[[ "$stderr" == *"the minimum is 10ms"* ]] || fail "-t $t: $stderr"
		run --separate-stderr rlock -u redis://127.0.0.1:1 exec -t "$t" job -- true
		assert_equal "$status" 64
		run --separate-stderr rlock -u redis://127.0.0.1:1 extend --token x -t "$t" job
		assert_equal "$status" 64
	done
	# From the config file too.
	echo "ttl = 2ms" >conf
	run --separate-stderr rlock --config conf acquire job
	assert_equal "$status" 64
	[[ "$stderr" == *"the minimum is 10ms"* ]] || fail "config: $stderr"
	# A heartbeat that cannot come inside the TTL is refused too.
	run --separate-stderr rlock exec -t 10ms --heartbeat 8ms job -- true
	assert_equal "$status" 64
	assert_equal "$(rcli DBSIZE)" 0
	# The minimum itself is held.
	run --separate-stderr rlock acquire -t 10ms job
	assert_success
}

@test "wedge: a grant that always comes after its validity ends with 69 after a few paced tries, not a hot loop" {
	start_proxy P "$REDIS_PORT"
	# 20 ms each way: every grant of a 10 ms lock arrives too late.
	proxy P delay 20
	local t0 t1
	t0=$(now_ms)
	run --separate-stderr timeout 20 "$RLOCK" -u "$P_URL" acquire -t 10ms job
	t1=$(now_ms)
	assert_equal "$status" 69
	assert_one_error_line
	[[ "$stderr" == *"granted 6 times"*"longer --ttl"* ]] || fail "stderr: $stderr"
	assert_equal "$output" ""
	# Six acquires and six give-backs, not thousands.
	local calls
	calls=$(rcli INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\).*/\1/p')
	assert_between "${calls:-0}" 6 20 "EVALSHA calls"
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	((t1 - t0 < 15000)) || fail "took $((t1 - t0)) ms"
	# -n does not turn a late grant into "busy".
	run --separate-stderr timeout 20 "$RLOCK" -u "$P_URL" acquire -n -t 10ms job
	assert_equal "$status" 69
}

@test "wedge: SIGTERM ends acquire promptly while late grants are retried" {
	start_proxy P "$REDIS_PORT"
	proxy P delay 100
	bg_start acq "$RLOCK" -u "$P_URL" acquire -t 10ms job
	# Once the first attempt reached the server.
	local i
	for ((i = 0; i < 200; i++)); do
		[[ "$(rcli INFO commandstats | grep -c 'cmdstat_eval')" -gt 0 ]] && break
		sleep 0.02
	done
	kill -TERM "$acq"
	bg_wait "$acq" 3000 || fail "acquire did not end within 3 s of SIGTERM"
	assert_equal "$BG_STATUS" 143
}

# ---------------------------------------------------------------------------
# Bounded reads
# ---------------------------------------------------------------------------

@test "wedge: --config and --password-file of /dev/zero are usage errors at once" {
	run --separate-stderr timeout 10 "$RLOCK" --config /dev/zero status
	assert_equal "$status" 64
	assert_one_error_line
	[[ "$stderr" == *"larger than"* || "$stderr" == *"not a regular file"* ]] || fail "stderr: $stderr"
	run --separate-stderr timeout 10 "$RLOCK" --password-file /dev/zero status
	assert_equal "$status" 64
	assert_one_error_line
	[[ "$stderr" == *"larger than"* || "$stderr" == *"not a regular file"* ]] || fail "stderr: $stderr"
	RLOCK_CONFIG=/dev/zero run --separate-stderr timeout 10 "$RLOCK" status
	assert_equal "$status" 64
}

@test "wedge: a 10 MB config file and a 5000-byte line are refused; a short config still works" {
	head -c 10000000 /dev/zero | tr '\0' '#' >big.conf
	run --separate-stderr timeout 10 "$RLOCK" --config big.conf status
	assert_equal "$status" 64
	assert_one_error_line
	[[ "$stderr" == *"big.conf is larger than 1024 KiB"* ]] || fail "stderr: $stderr"
	{ printf 'prefix = '; head -c 5000 /dev/zero | tr '\0' a; echo; } >long.conf
	run --separate-stderr "$RLOCK" --config long.conf status
	assert_equal "$status" 64
	[[ "$stderr" == *"long.conf:1: the line is longer than 4096 bytes"* ]] || fail "stderr: $stderr"
	printf 'ttl = 5s\n# a comment\n' >ok.conf
	run --separate-stderr rlock --config ok.conf --json acquire job
	assert_success
	json_check 'd["ttl_ms"] == 5000' <<<"$output"
}

@test "wedge: a password file that is a pipe works; an oversized one is refused without echoing it" {
	start_redis_auth_as A s3cret-pw
	run --separate-stderr bash -c '"$0" -u "$1" --password-file <(echo s3cret-pw) acquire job' "$RLOCK" "$A_URL"
	assert_success
	[[ "$output" =~ $UUID_RE ]] || fail "no token: $output"
	{ printf 's3cret-pw'; head -c 8000 /dev/zero | tr '\0' x; echo; } >pw
	chmod 600 pw
	run --separate-stderr "$RLOCK" -u "$A_URL" --password-file pw acquire job2
	assert_equal "$status" 64
	assert_one_error_line
	refute_contains s3cret "$stderr"
}
