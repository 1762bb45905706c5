#!/usr/bin/env bats
# tls.bats: rediss:// — verifying the server against a CA, by IP and DNS
# SAN, --tls-server-name, --tls-insecure, client certificates, bad
# certificate files, plain/TLS mismatches, exec's heartbeat, ACL users and
# waiting over TLS. Servers are real redis-server processes with TLS, on
# loopback ports, started once per file.

load helpers
load tls-helpers

setup_file() {
	make_test_pki
	# TLS with optional client certificates, TLS requiring one, and a
	# plain server (the file's default, REDIS_*).
	start_tls_redis_as TLS optional
	start_tls_redis_as TLSM yes
	start_redis
}
teardown_file() { stop_all_redis; }

setup() {
	default_setup
	tcli TLS FLUSHALL >/dev/null
	tcli TLSM FLUSHALL >/dev/null
	IP_URL="rediss://127.0.0.1:$TLS_PORT"
	HOST_URL="rediss://localhost:$TLS_PORT"
	M_URL="rediss://127.0.0.1:$TLSM_PORT"
}
teardown() {
	cleanup_test
	tcli TLS ACL DELUSER alice >/dev/null 2>&1 || true
}

# ---------------------------------------------------------------------------
# verification
# ---------------------------------------------------------------------------

@test "tls: acquire against 127.0.0.1 verifies through the certificate's IP SAN with --tls-ca" {
	run --separate-stderr rlock -u "$IP_URL" --tls-ca "$TLS_CA" acquire job
	assert_success
	assert_equal "$stderr" ""
	[[ "$output" =~ $UUID_RE ]] || fail "not a token: $output"
	assert_equal "$(tcli TLS GET 'rlock:{job}')" "$output"
}

@test "tls: acquire against localhost verifies through the certificate's DNS SAN with --tls-ca" {
	run --separate-stderr rlock -u "$HOST_URL" --tls-ca "$TLS_CA" acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(tcli TLS GET 'rlock:{job}')" "$output"
}

@test "tls: a server whose CA is not in the system store is refused with 69 and a hint at --tls-ca" {
	run --separate-stderr timeout 20 "$RLOCK" -u "$IP_URL" acquire job
	assert_equal "$status" 69
	assert_output ""
	assert_one_error_line
	assert_stderr_has "$IP_URL" "not trusted" "--tls-ca"
	assert_no_locks TLS
}

@test "tls: a server signed by another CA than --tls-ca is refused with 69 and a hint at --tls-ca" {
	run --separate-stderr timeout 20 "$RLOCK" -u "$IP_URL" --tls-ca "$TLS_OTHER_CA" acquire job
	assert_equal "$status" 69
	assert_output ""
	assert_one_error_line
	assert_stderr_has "$IP_URL" "not trusted" "--tls-ca"
	assert_no_locks TLS
}

@test "tls: --tls-server-name naming a name the certificate lacks is refused with 69 'does not match'" {
	run --separate-stderr timeout 20 "$RLOCK" -u "$IP_URL" --tls-ca "$TLS_CA" \
		--tls-server-name wrong.example acquire job
	assert_equal "$status" 69
	assert_output ""
	assert_one_error_line
	assert_stderr_has "$IP_URL" "does not match" "wrong.example"
	assert_no_locks TLS
}

@test "tls: --tls-server-name localhost lets a connection to 127.0.0.1 verify by DNS name" {
	run --separate-stderr rlock -u "$IP_URL" --tls-ca "$TLS_CA" \
		--tls-server-name localhost acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(tcli TLS GET 'rlock:{job}')" "$output"
}

@test "tls: --tls-insecure connects to an untrusted server and warns in exactly one line" {
	run --separate-stderr rlock -u "$IP_URL" --tls-insecure acquire job
	assert_success
	[[ "$output" =~ $UUID_RE ]] || fail "not a token: $output"
	assert_one_error_line
	assert_stderr_has "warning" "--tls-insecure"
	assert_equal "$(tcli TLS GET 'rlock:{job}')" "$output"
}

# ---------------------------------------------------------------------------
# client certificates
# ---------------------------------------------------------------------------

@test "tls: a server that requires a client certificate refuses one not given, with 69 naming it" {
	run --separate-stderr timeout 20 "$RLOCK" -u "$M_URL" --tls-ca "$TLS_CA" acquire job
	assert_equal "$status" 69
	assert_output ""
	assert_one_error_line
	assert_stderr_has "$M_URL" "client certificate"
	assert_no_locks TLSM
}

@test "tls: a server that requires a client certificate accepts --tls-cert and --tls-key" {
	run --separate-stderr rlock -u "$M_URL" --tls-ca "$TLS_CA" \
		--tls-cert "$TLS_CLIENT_CRT" --tls-key "$TLS_CLIENT_KEY" acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(tcli TLSM GET 'rlock:{job}')" "$output"
}

@test "tls: a --tls-cert file that does not exist is a usage error (64) naming the option" {
	run --separate-stderr rlock -u "$M_URL" --tls-ca "$TLS_CA" \
		--tls-cert "$BATS_TEST_TMPDIR/nope.crt" --tls-key "$TLS_CLIENT_KEY" acquire job
	assert_equal "$status" 64
	assert_output ""
	assert_one_error_line
	assert_stderr_has "--tls-cert" "nope.crt"
	assert_no_locks TLSM
}

@test "tls: a --tls-key that does not belong to --tls-cert is a usage error (64)" {
	run --separate-stderr rlock -u "$M_URL" --tls-ca "$TLS_CA" \
		--tls-cert "$TLS_CLIENT_CRT" --tls-key "$TLS_OTHER_CA_KEY" acquire job
	assert_equal "$status" 64
	assert_output ""
	assert_one_error_line
	assert_stderr_has "--tls-key"
	assert_no_locks TLSM
}

@test "tls: a --tls-ca file that does not exist is a usage error (64)" {
	run --separate-stderr rlock -u "$IP_URL" --tls-ca "$BATS_TEST_TMPDIR/nope.pem" acquire job
	assert_equal "$status" 64
	assert_one_error_line
	assert_stderr_has "--tls-ca"
	assert_no_locks TLS
}

# ---------------------------------------------------------------------------
# plain vs TLS mismatches
# ---------------------------------------------------------------------------

@test "tls: plain redis:// to the TLS port fails with 69 within a bounded time" {
	local t0
	t0=$(now_ms)
	run --separate-stderr timeout 20 "$RLOCK" -u "redis://127.0.0.1:$TLS_PORT" \
		--connect-timeout 1s --timeout 1s acquire job
	assert_elapsed_below "$t0" 6000
	assert_equal "$status" 69
	assert_output ""
	assert_one_error_line
	assert_stderr_has "127.0.0.1:$TLS_PORT"
	assert_no_locks TLS
}

@test "tls: rediss:// to a plain port fails with 69 saying the TLS handshake timed out" {
	local t0
	t0=$(now_ms)
	run --separate-stderr timeout 20 "$RLOCK" -u "rediss://127.0.0.1:$REDIS_PORT" \
		--tls-ca "$TLS_CA" --connect-timeout 1s acquire job
	assert_elapsed_below "$t0" 6000
	assert_equal "$status" 69
	assert_output ""
	assert_one_error_line
	assert_stderr_has "rediss://127.0.0.1:$REDIS_PORT" "handshake timed out"
	assert_equal "$(rcli DBSIZE)" 0
}

# ---------------------------------------------------------------------------
# commands over TLS
# ---------------------------------------------------------------------------

@test "tls: acquire, status and release all work over TLS" {
	local tok
	run --separate-stderr rlock -u "$IP_URL" --tls-ca "$TLS_CA" acquire -t 20s job
	assert_success
	tok=$output
	run --separate-stderr rlock -u "$IP_URL" --tls-ca "$TLS_CA" status job
	assert_success
	assert_output --partial "job: held by"
	run --separate-stderr rlock -u "$IP_URL" --tls-ca "$TLS_CA" --json status
	assert_success
	json_check 'len(d) == 1 and d[0]["name"] == "job" and d[0]["held"]' <<<"$output"
	run --separate-stderr rlock -u "$IP_URL" --tls-ca "$TLS_CA" extend --token "$tok" job
	assert_success
	run --separate-stderr rlock -u "$IP_URL" --tls-ca "$TLS_CA" release --token "$tok" job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(tcli TLS EXISTS 'rlock:{job}')" 0
	run --separate-stderr rlock -u "$IP_URL" --tls-ca "$TLS_CA" status job
	assert_equal "$status" 1
	assert_output --partial "job: free"
}

@test "tls: exec with a 1s TTL keeps the lock through a 2.5s command by extending over TLS" {
	bg_start EX "$RLOCK" -u "$IP_URL" --tls-ca "$TLS_CA" exec -t 1s job -- sleep 2.5
	# 1.8 s in, a lock that was never extended would have expired.
	sleep 1.8
	assert_equal "$(tcli TLS EXISTS 'rlock:{job}')" 1
	bg_wait "$EX" 15000 || fail "exec did not finish within 15s"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat "$BATS_TEST_TMPDIR/EX.err")" ""
	assert_equal "$(tcli TLS EXISTS 'rlock:{job}')" 0
	assert_equal "$(tcli TLS EXISTS 'rlock:{job}:info')" 0
}

@test "tls: an ACL user in a rediss:// URL authenticates over TLS" {
	assert_equal "$(tcli TLS ACL SETUSER alice on '>alice-pw-9' '~*' '&*' '+@all')" OK
	run --separate-stderr rlock -u "rediss://alice:alice-pw-9@127.0.0.1:$TLS_PORT" \
		--tls-ca "$TLS_CA" acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(tcli TLS GET 'rlock:{job}')" "$output"
}

@test "tls: an ACL user with the wrong password over TLS gets 69 and the password is never printed" {
	assert_equal "$(tcli TLS ACL SETUSER alice on '>alice-pw-9' '~*' '&*' '+@all')" OK
	run --separate-stderr timeout 20 "$RLOCK" \
		-u "rediss://alice:Wr0ngPassXyz@127.0.0.1:$TLS_PORT" --tls-ca "$TLS_CA" acquire job
	assert_equal "$status" 69
	assert_output ""
	assert_one_error_line
	refute_contains Wr0ngPassXyz "$output$stderr"
	refute_contains alice-pw-9 "$output$stderr"
	assert_no_locks TLS
	# Verbose output does not show it either.
	run --separate-stderr timeout 20 "$RLOCK" -v \
		-u "rediss://alice:Wr0ngPassXyz@127.0.0.1:$TLS_PORT" --tls-ca "$TLS_CA" acquire job
	assert_equal "$status" 69
	refute_contains Wr0ngPassXyz "$output$stderr"
	assert_no_locks TLS
}

@test "tls: a waiter over TLS gets a lock promptly when another client releases it" {
	local tok i t0 t1 blocked=0
	tok=$(rlock -u "$IP_URL" --tls-ca "$TLS_CA" acquire -t 30s job)
	[[ -n "$tok" ]] || fail "first acquire failed"
	bg_start W "$RLOCK" -u "$IP_URL" --tls-ca "$TLS_CA" acquire -w 20s job
	# Wait (at most 5 s) until the waiter is blocked in BLPOP on the server.
	for ((i = 0; i < 100; i++)); do
		if tcli TLS CLIENT LIST | grep -q 'cmd=blpop'; then
			blocked=1
			break
		fi
		sleep 0.05
	done
	((blocked)) || fail "the waiter never blocked: $(cat "$BATS_TEST_TMPDIR/W.err")"
	t0=$(now_ms)
	run rlock -u "$IP_URL" --tls-ca "$TLS_CA" release --token "$tok" job
	assert_success
	bg_wait "$W" 10000 || fail "the waiter did not get the lock within 10s"
	t1=$(now_ms)
	assert_equal "$BG_STATUS" 0
	assert_between $((t1 - t0)) 0 1500 "ms from release to the waiter's exit"
	assert_equal "$(tcli TLS GET 'rlock:{job}')" "$(cat "$BATS_TEST_TMPDIR/W.out")"
}

@test "tls: a busy lock over TLS exits 1 and leaves the holder's lock alone" {
	local tok
	tok=$(rlock -u "$IP_URL" --tls-ca "$TLS_CA" acquire job)
	run --separate-stderr rlock -u "$IP_URL" --tls-ca "$TLS_CA" acquire -n job
	assert_equal "$status" 1
	assert_equal "$(tcli TLS GET 'rlock:{job}')" "$tok"
}
