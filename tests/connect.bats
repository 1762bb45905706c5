#!/usr/bin/env bats
# connect.bats: reaching Redis: refused connections, passwords from every
# source (and never printed), ACL users, db numbers, Unix sockets, time-outs
# against a frozen server, and error replies.

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
# Password files are made private, as they should be: a readable one gets a warning.
setup() { default_setup; umask 077; }
teardown() {
	cleanup_test
	rcli ACL DELUSER alice bob >/dev/null 2>&1 || true
}

PW=s3cret-Pa55

# A per-test server that requires $PW; sets AUTH_PORT, AUTH_URL, ...
start_auth_server() {
	start_redis_auth_as AUTH "$PW" "$@"
}

# ---------------------------------------------------------------------------
# unreachable
# ---------------------------------------------------------------------------

@test "connect: nothing listening exits 69 with one line naming the URL and 'refused'" {
	local port
	port=$(free_port)
	run --separate-stderr rlock -u "redis://127.0.0.1:$port" acquire job
	assert_equal "$status" 69
	assert_output ""
	assert_one_error_line
	[[ "$stderr" == *"redis://127.0.0.1:$port"* ]] || fail "stderr: $stderr"
	[[ "$stderr" == *refused* ]] || fail "stderr: $stderr"
}

@test "connect: release, extend and status also exit 69 when nothing listens" {
	export RLOCK_URL="redis://127.0.0.1:$(free_port)"
	run --separate-stderr rlock release --token t job
	assert_equal "$status" 69
	assert_one_error_line
	run --separate-stderr rlock release --force job
	assert_equal "$status" 69
	run --separate-stderr rlock extend --token t job
	assert_equal "$status" 69
	assert_one_error_line
	run --separate-stderr rlock status job
	assert_equal "$status" 69
	assert_one_error_line
	run --separate-stderr rlock status
	assert_equal "$status" 69
	assert_one_error_line
}

@test "connect: a waiting acquire does not wait when nothing listens" {
	run --separate-stderr timeout 20 "$RLOCK" -u "redis://127.0.0.1:$(free_port)" acquire job
	assert_equal "$status" 69
}

@test "connect: the password of a URL to a dead port is not printed" {
	local port
	port=$(free_port)
	run --separate-stderr rlock -u "redis://:TopSecret99@127.0.0.1:$port" acquire job
	assert_equal "$status" 69
	assert_one_error_line
	refute_contains TopSecret99 "$output$stderr"
	[[ "$stderr" == *"127.0.0.1:$port"* ]] || fail "stderr: $stderr"
}

@test "connect: -u beats RLOCK_URL" {
	export RLOCK_URL="redis://127.0.0.1:$(free_port)"
	run --separate-stderr rlock -u "$REDIS_URL" acquire job
	assert_success
}

@test "connect: the default URL is redis://127.0.0.1:6379" {
	if (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; then
		skip "something listens on 127.0.0.1:6379"
	fi
	unset RLOCK_URL
	run --separate-stderr rlock status job
	assert_equal "$status" 69
	[[ "$stderr" == *"127.0.0.1:6379"* ]] || fail "stderr: $stderr"
}

# ---------------------------------------------------------------------------
# passwords
# ---------------------------------------------------------------------------

@test "connect: a wrong password exits 69 and is never printed" {
	start_auth_server
	RLOCK_PASSWORD=WrongPassword7 run --separate-stderr rlock -u "$AUTH_URL" acquire job
	assert_equal "$status" 69
	assert_output ""
	assert_one_error_line
	refute_contains WrongPassword7 "$output$stderr"
	refute_contains "$PW" "$output$stderr"
	[[ "$stderr" == *"127.0.0.1:$AUTH_PORT"* ]] || fail "stderr: $stderr"
}

@test "connect: no password for a server that needs one exits 69" {
	start_auth_server
	run --separate-stderr rlock -u "$AUTH_URL" acquire job
	assert_equal "$status" 69
	assert_one_error_line
}

@test "connect: RLOCK_PASSWORD authenticates" {
	start_auth_server
	RLOCK_PASSWORD=$PW run --separate-stderr rlock -u "$AUTH_URL" acquire job
	assert_success
	assert_equal "$(RCLI_AUTH=$PW rcli_as AUTH HKEYS 'rlock:{job}')" "$output"
}

@test "connect: REDISCLI_AUTH authenticates" {
	start_auth_server
	REDISCLI_AUTH=$PW run --separate-stderr rlock -u "$AUTH_URL" acquire job
	assert_success
	assert_equal "$(RCLI_AUTH=$PW rcli_as AUTH HKEYS 'rlock:{job}')" "$output"
}

@test "connect: RLOCK_PASSWORD beats REDISCLI_AUTH" {
	start_auth_server
	RLOCK_PASSWORD=$PW REDISCLI_AUTH=wrong-one run --separate-stderr rlock -u "$AUTH_URL" acquire job
	assert_success
}

@test "connect: --password-file authenticates with the file's first line" {
	start_auth_server
	printf '%s\nsecond line\n' "$PW" >"$BATS_TEST_TMPDIR/pw"
	run --separate-stderr rlock -u "$AUTH_URL" --password-file "$BATS_TEST_TMPDIR/pw" acquire job
	assert_success
	assert_equal "$(RCLI_AUTH=$PW rcli_as AUTH HKEYS 'rlock:{job}')" "$output"
}

@test "connect: --password-file strips a CRLF line end" {
	start_auth_server
	printf '%s\r\n' "$PW" >"$BATS_TEST_TMPDIR/pw"
	run --separate-stderr rlock -u "$AUTH_URL" --password-file="$BATS_TEST_TMPDIR/pw" acquire job
	assert_success
}

@test "connect: --password-file without a trailing newline works" {
	start_auth_server
	printf '%s' "$PW" >"$BATS_TEST_TMPDIR/pw"
	run --separate-stderr rlock acquire job -u "$AUTH_URL" --password-file "$BATS_TEST_TMPDIR/pw"
	assert_success
}

@test "connect: --password-file beats RLOCK_PASSWORD and the URL" {
	start_auth_server
	printf '%s\n' "$PW" >"$BATS_TEST_TMPDIR/pw"
	RLOCK_PASSWORD=wrong-env run --separate-stderr rlock \
		-u "redis://:wrong-url@127.0.0.1:$AUTH_PORT" --password-file "$BATS_TEST_TMPDIR/pw" acquire job
	assert_success
}

@test "connect: a wrong password in --password-file exits 69 and is not printed" {
	start_auth_server
	printf 'FilePassWrong1\n' >"$BATS_TEST_TMPDIR/pw"
	run --separate-stderr rlock -u "$AUTH_URL" --password-file "$BATS_TEST_TMPDIR/pw" acquire job
	assert_equal "$status" 69
	assert_one_error_line
	refute_contains FilePassWrong1 "$output$stderr"
}

@test "connect: an unreadable --password-file exits 64 naming the file" {
	run --separate-stderr rlock --password-file "$BATS_TEST_TMPDIR/no-such-file" acquire job
	assert_usage_error
	[[ "$stderr" == *"$BATS_TEST_TMPDIR/no-such-file"* ]] || fail "stderr: $stderr"
}

@test "connect: the password in the URL authenticates and is never printed" {
	start_auth_server
	run --separate-stderr rlock -u "redis://:$PW@127.0.0.1:$AUTH_PORT" acquire job
	assert_success
	refute_contains "$PW" "$stderr"
	# A busy lock: still nothing printed.
	run --separate-stderr rlock -u "redis://:$PW@127.0.0.1:$AUTH_PORT" acquire -n job
	assert_equal "$status" 1
	refute_contains "$PW" "$output$stderr"
}

@test "connect: the URL password beats RLOCK_PASSWORD" {
	start_auth_server
	RLOCK_PASSWORD=wrong-env run --separate-stderr rlock -u "redis://:$PW@127.0.0.1:$AUTH_PORT" acquire job
	assert_success
}

@test "connect: a wrong password in the URL exits 69 and is never printed" {
	start_auth_server
	run --separate-stderr rlock -u "redis://:UrlPassWrong3@127.0.0.1:$AUTH_PORT" acquire job
	assert_equal "$status" 69
	assert_one_error_line
	refute_contains UrlPassWrong3 "$output$stderr"
	[[ "$stderr" == *"127.0.0.1:$AUTH_PORT"* ]] || fail "stderr: $stderr"
}

@test "connect: a password given to a server without one exits 69 and is not printed" {
	# Redis 7 refuses AUTH when no password is configured.
	RLOCK_PASSWORD=NeedlessPw5 run --separate-stderr rlock acquire job
	if [[ $status -eq 0 ]]; then
		skip "this rlock ignores the AUTH error of a passwordless server"
	fi
	assert_equal "$status" 69
	refute_contains NeedlessPw5 "$output$stderr"
}

# ---------------------------------------------------------------------------
# ACL users
# ---------------------------------------------------------------------------

@test "connect: an ACL user and password in the URL authenticate" {
	rcli ACL SETUSER alice on '>alice-pw' '~*' '&*' '+@all' >/dev/null
	run --separate-stderr rlock -u "redis://alice:alice-pw@127.0.0.1:$REDIS_PORT" acquire job
	assert_success
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$output"
	run --separate-stderr rlock -u "redis://alice:alice-pw@127.0.0.1:$REDIS_PORT" release --token "$output" job
	assert_success
}

@test "connect: an ACL user in the URL takes its password from RLOCK_PASSWORD" {
	rcli ACL SETUSER alice on '>alice-pw' '~*' '&*' '+@all' >/dev/null
	RLOCK_PASSWORD=alice-pw run --separate-stderr rlock -u "redis://alice@127.0.0.1:$REDIS_PORT" acquire job
	assert_success
}

@test "connect: an ACL user with a wrong password exits 69 and the password is not printed" {
	rcli ACL SETUSER alice on '>alice-pw' '~*' '&*' '+@all' >/dev/null
	run --separate-stderr rlock -u "redis://alice:AclWrongPw@127.0.0.1:$REDIS_PORT" acquire job
	assert_equal "$status" 69
	assert_one_error_line
	refute_contains AclWrongPw "$output$stderr"
	assert_equal "$(rcli DBSIZE)" 0
}

@test "connect: an ACL user without +@scripting gets an error reply: 69" {
	rcli ACL SETUSER bob on '>bob-pw' '~*' '&*' '+@all' '-@scripting' >/dev/null
	run --separate-stderr rlock -u "redis://bob:bob-pw@127.0.0.1:$REDIS_PORT" acquire job
	assert_equal "$status" 69
	assert_output ""
	assert_one_error_line
	refute_contains bob-pw "$stderr"
	assert_equal "$(rcli DBSIZE)" 0
}

# ---------------------------------------------------------------------------
# databases and Unix sockets
# ---------------------------------------------------------------------------

@test "connect: a db number in the URL puts the keys in that db" {
	run --separate-stderr rlock -u "redis://127.0.0.1:$REDIS_PORT/3" acquire job
	assert_success
	assert_equal "$(rcli -n 3 HKEYS 'rlock:{job}')" "$output"
	assert_equal "$(rcli -n 0 DBSIZE)" 0
	run --separate-stderr rlock -u "redis://127.0.0.1:$REDIS_PORT/3" status job
	assert_success
	run --separate-stderr rlock -u "redis://127.0.0.1:$REDIS_PORT" status job
	assert_equal "$status" 1
}

@test "connect: a db number with a password in the URL works" {
	start_auth_server
	run --separate-stderr rlock -u "redis://:$PW@127.0.0.1:$AUTH_PORT/4" acquire job
	assert_success
	assert_equal "$(RCLI_AUTH=$PW rcli_as AUTH -n 4 HKEYS 'rlock:{job}')" "$output"
}

@test "connect: a db number the server does not have exits 69" {
	run --separate-stderr rlock -u "redis://127.0.0.1:$REDIS_PORT/999" acquire job
	assert_equal "$status" 69
	assert_one_error_line
}

@test "connect: a Unix socket URL works" {
	run --separate-stderr rlock -u "unix://$REDIS_SOCK" acquire job
	assert_success
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$output"
	run --separate-stderr rlock -u "unix://$REDIS_SOCK" release --token "$output" job
	assert_success
}

@test "connect: a Unix socket URL with ?db=2 uses db 2" {
	run --separate-stderr rlock -u "unix://$REDIS_SOCK?db=2" acquire job
	assert_success
	assert_equal "$(rcli -n 2 HKEYS 'rlock:{job}')" "$output"
	assert_equal "$(rcli -n 0 DBSIZE)" 0
}

@test "connect: a missing Unix socket exits 69 naming the path" {
	run --separate-stderr rlock -u "unix://$BATS_TEST_TMPDIR/nope.sock" acquire job
	assert_equal "$status" 69
	assert_one_error_line
	[[ "$stderr" == *"$BATS_TEST_TMPDIR/nope.sock"* ]] || fail "stderr: $stderr"
}

# ---------------------------------------------------------------------------
# time-outs and error replies
# ---------------------------------------------------------------------------

@test "connect: --timeout bounds a round trip to a frozen server: 69" {
	start_redis_as FROZEN
	kill -STOP "$FROZEN_PID"
	local t0 t1
	t0=$(now_ms)
	run --separate-stderr timeout 30 "$RLOCK" -u "$FROZEN_URL" --timeout 500ms --connect-timeout 500ms acquire -n job
	t1=$(now_ms)
	kill -CONT "$FROZEN_PID"
	assert_equal "$status" 69
	assert_one_error_line
	[[ "$stderr" == *"no reply within 500ms"* ]] || fail "stderr: $stderr"
	assert_between $((t1 - t0)) 300 5000 elapsed_ms
}

@test "connect: --timeout alone bounds a frozen server for a waiting acquire" {
	start_redis_as FROZEN
	kill -STOP "$FROZEN_PID"
	local t0 t1
	t0=$(now_ms)
	run --separate-stderr timeout 30 "$RLOCK" -u "$FROZEN_URL" --timeout 1s acquire job
	t1=$(now_ms)
	kill -CONT "$FROZEN_PID"
	assert_equal "$status" 69
	assert_one_error_line
	# At most the default 2 s connect bound plus the 1 s round trip, with room.
	assert_between $((t1 - t0)) 500 6000 elapsed_ms
	# Nothing was left behind.
	assert_equal "$(rcli_as FROZEN DBSIZE)" 0
}

@test "connect: a server that froze during status exits 69 within --timeout" {
	start_redis_as FROZEN
	kill -STOP "$FROZEN_PID"
	local t0 t1
	t0=$(now_ms)
	run --separate-stderr timeout 30 "$RLOCK" -u "$FROZEN_URL" --timeout 500ms --connect-timeout 500ms status
	t1=$(now_ms)
	kill -CONT "$FROZEN_PID"
	assert_equal "$status" 69
	assert_between $((t1 - t0)) 300 5000 elapsed_ms
}

@test "connect: a server with EVAL and EVALSHA renamed away exits 69 with the error" {
	start_redis_as NOEVAL --rename-command EVAL "" --rename-command EVALSHA ""
	run --separate-stderr rlock -u "$NOEVAL_URL" acquire job
	assert_equal "$status" 69
	assert_output ""
	assert_one_error_line
	[[ "$stderr" == *"127.0.0.1:$NOEVAL_PORT"* ]] || fail "stderr: $stderr"
	[[ "$stderr" == *ERR* ]] || fail "stderr: $stderr"
	assert_equal "$(rcli_as NOEVAL DBSIZE)" 0
	run --separate-stderr rlock -u "$NOEVAL_URL" release --token t job
	assert_equal "$status" 69
	run --separate-stderr rlock -u "$NOEVAL_URL" extend --token t job
	assert_equal "$status" 69
}
