#!/usr/bin/env bats
# tls.bats: rediss:// — verifying the server against a CA, by IP and DNS
# SAN, --tls-server-name, --tls-insecure, client certificates, bad
# certificate files, plain/TLS mismatches, exec's heartbeat, ACL users,
# waiting over TLS, and the sessions kept between runs. Servers are real redis-server processes with TLS, on
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
	# Each test's TLS sessions are its own (see "session cache" below).
	export XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/xdg
	unset XDG_CACHE_HOME
	mkdir -m 700 "$XDG_RUNTIME_DIR"
	SESS_DIR=$XDG_RUNTIME_DIR/rlock/tls-sessions
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
	assert_equal "$(tcli TLS HKEYS 'rlock:{job}')" "$output"
}

@test "tls: acquire against localhost verifies through the certificate's DNS SAN with --tls-ca" {
	run --separate-stderr rlock -u "$HOST_URL" --tls-ca "$TLS_CA" acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(tcli TLS HKEYS 'rlock:{job}')" "$output"
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
	assert_equal "$(tcli TLS HKEYS 'rlock:{job}')" "$output"
}

@test "tls: --tls-insecure connects to an untrusted server and warns in exactly one line" {
	run --separate-stderr rlock -u "$IP_URL" --tls-insecure acquire job
	assert_success
	[[ "$output" =~ $UUID_RE ]] || fail "not a token: $output"
	assert_one_error_line
	assert_stderr_has "warning" "--tls-insecure"
	assert_equal "$(tcli TLS HKEYS 'rlock:{job}')" "$output"
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
	assert_equal "$(tcli TLSM HKEYS 'rlock:{job}')" "$output"
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

@test "tls: an encrypted --tls-key (PKCS#8 or the old PEM way) is a usage error (64) saying so, with no passphrase asked" {
	local k=$BATS_TEST_TMPDIR/enc
	openssl pkcs8 -topk8 -in "$TLS_CLIENT_KEY" -passout pass:sekret -out "$k.p8"
	openssl ec -in "$TLS_CLIENT_KEY" -aes128 -passout pass:sekret -out "$k.pem" 2>/dev/null
	grep -q '^DEK-Info: AES-128-CBC' "$k.pem"
	for f in "$k.p8" "$k.pem"; do
		run --separate-stderr timeout 20 "$RLOCK" -u "$M_URL" --tls-ca "$TLS_CA" \
			--tls-cert "$TLS_CLIENT_CRT" --tls-key "$f" acquire job </dev/null
		assert_equal "$status" 64
		assert_output ""
		assert_one_error_line
		assert_stderr_has "--tls-key $f" "encrypted" "openssl pkey"
		[[ $stderr != *"pass phrase"* ]]
	done
	assert_no_locks TLSM
	# Decrypted, the same key is taken.
	openssl pkey -in "$k.p8" -passin pass:sekret -out "$k.plain"
	run --separate-stderr rlock -u "$M_URL" --tls-ca "$TLS_CA" \
		--tls-cert "$TLS_CLIENT_CRT" --tls-key "$k.plain" acquire job
	assert_success
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

@test "tls: exec with a 2s TTL keeps the lock through a 6s command by extending over TLS" {
	bg_start EX "$RLOCK" -u "$IP_URL" --tls-ca "$TLS_CA" exec -t 2s job -- sleep 6
	# Once it is held (on a loaded machine the start alone may take a
	# second), 3 s on: a lock never extended would have expired.
	local i
	for ((i = 0; i < 500; i++)); do
		[[ $(tcli TLS EXISTS 'rlock:{job}') == 1 ]] && break
		sleep 0.02
	done
	((i < 500)) || fail "exec never took the lock: $(cat "$BATS_TEST_TMPDIR/EX.err")"
	sleep 3
	assert_equal "$(tcli TLS EXISTS 'rlock:{job}')" 1
	bg_wait "$EX" 30000 || fail "exec did not finish within 30s"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat "$BATS_TEST_TMPDIR/EX.err")" ""
	assert_equal "$(tcli TLS EXISTS 'rlock:{job}')" 0
	assert_equal "$(tcli TLS EXISTS 'rlock:{job}')" 0
}

# kill_guarded_exec [rlock options...]: start `rlock OPTIONS exec` on
# 'tlsguard:{job}' on TLSM (its settings from the options and rlock.conf),
# SIGKILL it once the guard runs, and check that the guard gives the lock
# back well before the 60 s TTL (bounded: 10 s), with the history's
# "rlock was killed".  EDIT, if set, runs once the lock is held.
kill_guarded_exec() {
	RLOCK_CONFIG=$PWD/rlock.conf bg_start R "$RLOCK" "$@" exec -t 60s job \
		-c 'echo $$ > cmd.pid; exec sleep 60'
	local i
	for ((i = 0; i < 500; i++)); do
		[[ -s cmd.pid && $(tcli TLSM EXISTS 'tlsguard:{job}') == 1 ]] && break
		sleep 0.02
	done
	((i < 500)) || fail "exec never took the lock: $(cat "$BATS_TEST_TMPDIR/R.err")"
	for ((i = 0; i < 250; i++)); do
		pgrep -P "$R" -x rlock-guard >/dev/null && break
		sleep 0.02
	done
	pgrep -P "$R" -x rlock-guard >/dev/null || fail "no guard"
	[[ -z "${EDIT:-}" ]] || eval "$EDIT"
	kill -KILL "$R"
	for ((i = 0; i < 200; i++)); do
		[[ $(tcli TLSM EXISTS 'tlsguard:{job}') == 0 ]] && break
		sleep 0.05
	done
	assert_equal "$(tcli TLSM EXISTS 'tlsguard:{job}')" 0
	wait_gone "$(cat cmd.pid)" 5000 || fail "the command outlived rlock"
}

# Every connection setting reaches the guard's release (it runs without the
# environment's RLOCK_* and without the config file rlock read): a client
# certificate, a server name, an ACL user in the URL, all from the file.
@test "tls: a SIGKILLed exec's guard gives the lock back with the config file's client certificate, server name and ACL user" {
	assert_equal "$(tcli TLSM ACL SETUSER alice on '>alice-pw-9' '~*' '&*' '+@all')" OK
	cd "$BATS_TEST_TMPDIR"
	unset RLOCK_URL
	cat >rlock.conf <<-EOF
		url = rediss://alice:alice-pw-9@127.0.0.1:$TLSM_PORT
		tls-ca = $TLS_CA
		tls-cert = $TLS_CLIENT_CRT
		tls-key = $TLS_CLIENT_KEY
		tls-server-name = localhost
		prefix = tlsguard:
	EOF
	chmod 600 rlock.conf
	kill_guarded_exec
	run rlock --config rlock.conf log job
	[[ "$output" == *"rlock was killed"* ]] || fail "log: $output"
	tcli TLSM ACL DELUSER alice >/dev/null
}

# The guard is handed the held lock's target as rlock settled it, not
# settings to read again: a config file rewritten after the start (another
# server, prefix and user) changes nothing, and a setting no config file
# can say (a key file whose name ends in a blank, which config lines trim)
# reaches the release all the same.
@test "tls: a SIGKILLed exec's guard gives the lock back as it was taken: its config file rewritten since, a --tls-key whose name ends in a blank" {
	assert_equal "$(tcli TLSM ACL SETUSER alice on '>alice-pw-9' '~*' '&*' '+@all')" OK
	cd "$BATS_TEST_TMPDIR"
	unset RLOCK_URL
	cp "$TLS_CLIENT_KEY" "client.key "
	chmod 600 "client.key "
	cat >rlock.conf <<-EOF
		url = rediss://alice:alice-pw-9@127.0.0.1:$TLSM_PORT
		tls-ca = $TLS_CA
		tls-cert = $TLS_CLIENT_CRT
		tls-server-name = localhost
		prefix = tlsguard:
	EOF
	chmod 600 rlock.conf
	EDIT='printf "url = redis://bob:wrong@127.0.0.1:1\nprefix = elsewhere:\n" >rlock.conf' \
		kill_guarded_exec --tls-key "$PWD/client.key "
	run rlock --url "rediss://alice:alice-pw-9@127.0.0.1:$TLSM_PORT" \
		--tls-ca "$TLS_CA" --tls-cert "$TLS_CLIENT_CRT" \
		--tls-key "$TLS_CLIENT_KEY" --tls-server-name localhost \
		--prefix tlsguard: log job
	[[ "$output" == *"rlock was killed"* ]] || fail "log: $output"
	tcli TLSM ACL DELUSER alice >/dev/null
}

@test "tls: an ACL user in a rediss:// URL authenticates over TLS" {
	assert_equal "$(tcli TLS ACL SETUSER alice on '>alice-pw-9' '~*' '&*' '+@all')" OK
	run --separate-stderr rlock -u "rediss://alice:alice-pw-9@127.0.0.1:$TLS_PORT" \
		--tls-ca "$TLS_CA" acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(tcli TLS HKEYS 'rlock:{job}')" "$output"
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
	assert_equal "$(tcli TLS HKEYS 'rlock:{job}')" "$(cat "$BATS_TEST_TMPDIR/W.out")"
}

@test "tls: a busy lock over TLS exits 1 and leaves the holder's lock alone" {
	local tok
	tok=$(rlock -u "$IP_URL" --tls-ca "$TLS_CA" acquire job)
	run --separate-stderr rlock -u "$IP_URL" --tls-ca "$TLS_CA" acquire -n job
	assert_equal "$status" 1
	assert_equal "$(tcli TLS HKEYS 'rlock:{job}')" "$tok"
}

# ---------------------------------------------------------------------------
# session cache: a run resumes the TLS session of the run before
# ---------------------------------------------------------------------------

# tls_status VAR ARGS...: `rlock -v ARGS status job` into $status/$stderr.
tls_status() {
	run --separate-stderr timeout 20 "$RLOCK" -v "$@" status job
}

# The number of entries in the session cache.
sess_count() {
	local f n=0
	for f in "$SESS_DIR"/*; do [[ -f $f ]] && n=$((n + 1)); done
	echo "$n"
}

assert_resumed() {
	assert_equal "$status" 1 # status of a free lock
	assert_stderr_has "TLS session resumed"
}

assert_not_resumed() {
	assert_equal "$status" 1
	refute_contains "TLS session resumed" "$stderr"
}

@test "tls: the second run resumes the first's session, kept 0600 in a 0700 directory until the ticket's lifetime" {
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA"
	assert_not_resumed
	assert_equal "$(sess_count)" 1
	assert_equal "$(stat -c %a "$XDG_RUNTIME_DIR/rlock")" 700
	assert_equal "$(stat -c %a "$SESS_DIR")" 700
	local f=("$SESS_DIR"/*)
	assert_equal "$(stat -c %a "${f[0]}")" 600
	# The entry's mtime is when it expires: within the server's ticket
	# lifetime (Redis's tls-session-cache-timeout, 300 s by default).
	assert_between $(($(stat -c %Y "${f[0]}") - $(date +%s))) 1 301 "s to expiry"
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA"
	assert_resumed
	# An exec resumes too, and the lock works as ever.
	run --separate-stderr timeout 20 "$RLOCK" -v -u "$IP_URL" --tls-ca "$TLS_CA" exec job -- true
	assert_success
	assert_stderr_has "TLS session resumed"
	assert_equal "$(sess_count)" 1
	assert_equal "$(tcli TLS EXISTS 'rlock:{job}')" 0
}

@test "tls: a session is used again only with the same CA file, server name and client certificate" {
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA"
	assert_not_resumed
	# The same CA with another beside it: it verifies, but is another set.
	cat "$TLS_CA" "$TLS_OTHER_CA" >"$BATS_TEST_TMPDIR/two-cas.crt"
	tls_status -u "$IP_URL" --tls-ca "$BATS_TEST_TMPDIR/two-cas.crt"
	assert_not_resumed
	# The same server checked for another name (and sent it as SNI).
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA" --tls-server-name localhost
	assert_not_resumed
	# With a client certificate.
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA" --tls-cert "$TLS_CLIENT_CRT" --tls-key "$TLS_CLIENT_KEY"
	assert_not_resumed
	# The same server by another host name.
	tls_status -u "$HOST_URL" --tls-ca "$TLS_CA"
	assert_not_resumed
	assert_equal "$(sess_count)" 5
	# Each has its own entry, which the next run with it resumes.
	tls_status -u "$IP_URL" --tls-ca "$BATS_TEST_TMPDIR/two-cas.crt"
	assert_resumed
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA" --tls-server-name localhost
	assert_resumed
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA" --tls-cert "$TLS_CLIENT_CRT" --tls-key "$TLS_CLIENT_KEY"
	assert_resumed
	# A CA file whose contents changed under the same name is another set.
	cp "$TLS_CA" "$BATS_TEST_TMPDIR/ca.crt"
	tls_status -u "$IP_URL" --tls-ca "$BATS_TEST_TMPDIR/ca.crt"
	assert_not_resumed
	cat "$TLS_OTHER_CA" >>"$BATS_TEST_TMPDIR/ca.crt"
	tls_status -u "$IP_URL" --tls-ca "$BATS_TEST_TMPDIR/ca.crt"
	assert_not_resumed
}

@test "tls: --tls-insecure neither keeps nor uses a session" {
	tls_status -u "$IP_URL" --tls-insecure
	assert_not_resumed
	tls_status -u "$IP_URL" --tls-insecure
	assert_not_resumed
	assert_equal "$(sess_count)" 0
	# Nor does it resume one a verified run kept.
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA"
	tls_status -u "$IP_URL" --tls-insecure
	assert_not_resumed
}

@test "tls: a corrupt, expired, foreign or unreadable session entry is ignored (said at -v) and the command succeeds" {
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA"
	local f=("$SESS_DIR"/*)
	# (An entry's mtime is its expiry: each damage below keeps it ahead.)
	local later=@$(($(date +%s) + 3600))
	head -c 200 /dev/urandom >"${f[0]}"
	touch -d "$later" "${f[0]}"
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA"
	assert_not_resumed
	assert_stderr_has "not a session"
	# The run replaced it with a good one.
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA"
	assert_resumed
	# Empty, then past its time.
	: >"${f[0]}"
	touch -d "$later" "${f[0]}"
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA"
	assert_not_resumed
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA"
	assert_resumed
	touch -d '1 minute ago' "${f[0]}"
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA"
	assert_not_resumed
	assert_stderr_has "expired"
	# Readable by others: not used.
	chmod 644 "${f[0]}"
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA"
	assert_not_resumed
	assert_stderr_has "not a private file"
	# A directory others may read: neither used nor written to.
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA"
	chmod 755 "$SESS_DIR"
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA"
	assert_not_resumed
	assert_stderr_has "not a private directory"
	chmod 700 "$SESS_DIR"
	# A symlink in its place is not followed.
	rm -rf "$SESS_DIR"
	mkdir -m 700 "$BATS_TEST_TMPDIR/elsewhere"
	ln -s "$BATS_TEST_TMPDIR/elsewhere" "$SESS_DIR"
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA"
	assert_not_resumed
	tls_status -u "$IP_URL" --tls-ca "$TLS_CA"
	assert_not_resumed
	assert_equal "$(ls -A "$BATS_TEST_TMPDIR/elsewhere")" ""
	# No cache at all (nowhere to keep one): runs as ever, quietly.
	run --separate-stderr env -u XDG_RUNTIME_DIR -u HOME "$RLOCK" -u "$IP_URL" --tls-ca "$TLS_CA" status job
	assert_equal "$status" 1
	assert_equal "$stderr" ""
}

@test "tls: without XDG_RUNTIME_DIR sessions are kept in ~/.cache/rlock/tls-sessions" {
	local home=$BATS_TEST_TMPDIR/home
	mkdir -m 755 "$home"
	run --separate-stderr env -u XDG_RUNTIME_DIR HOME="$home" "$RLOCK" -v -u "$IP_URL" --tls-ca "$TLS_CA" status job
	assert_not_resumed
	run --separate-stderr env -u XDG_RUNTIME_DIR HOME="$home" "$RLOCK" -v -u "$IP_URL" --tls-ca "$TLS_CA" status job
	assert_resumed
	assert_equal "$(stat -c %a "$home/.cache/rlock/tls-sessions")" 700
	[[ ! -e "$XDG_RUNTIME_DIR/rlock" ]] || fail "the XDG_RUNTIME_DIR cache was used"
}

@test "tls: nothing is made in a directory of another user's (sudo with that user's HOME)" {
	[[ $(id -u) == 0 ]] || skip "needs root, to give a directory away"
	local home=$BATS_TEST_TMPDIR/bob
	mkdir -m 755 "$home"
	chown 65534 "$home"
	run --separate-stderr env -u XDG_RUNTIME_DIR HOME="$home" "$RLOCK" -v -u "$IP_URL" --tls-ca "$TLS_CA" status job
	assert_equal "$status" 1
	assert_stderr_has "is not this user's"
	assert_equal "$(ls -A "$home")" ""
}

# restart_tls_as VAR CERT KEY: stop VAR's TLS server (by PID) and start a new
# one on the same port with CERT and KEY; the PID is recorded as ever.
restart_tls_as() {
	local var=$1 crt=$2 key=$3 portv="${1}_PORT" dirv="${1}_DIR" pidv="${1}_PID" pid
	_kill_pid "${!pidv}"
	redis-server --port 0 --tls-port "${!portv}" --bind 127.0.0.1 \
		--tls-cert-file "$crt" --tls-key-file "$key" \
		--tls-ca-cert-file "$TLS_CA" --tls-auth-clients optional \
		--save '' --appendonly no --daemonize no \
		--dir "${!dirv}" --logfile "${!dirv}/redis.log" \
		</dev/null >/dev/null 2>&1 3>&- &
	pid=$!
	echo "$pid" >>"$(_scope_dir)/.redis-pids"
	printf -v "$pidv" '%s' "$pid"
	# Any answer to a TLS hello (even a refusal) says it listens.
	local i
	for ((i = 0; i < 250; i++)); do
		_proc_alive "$pid" || fail "the restarted server exited"
		(exec 3<>"/dev/tcp/127.0.0.1/${!portv}") 2>/dev/null && return 0
		sleep 0.02
	done
	fail "the restarted server does not listen"
}

@test "tls: with a session kept, a server restarted with another CA's certificate is still refused, and with its own is verified again" {
	start_tls_redis_as RS optional
	local url="rediss://127.0.0.1:$RS_PORT"
	tls_status -u "$url" --tls-ca "$TLS_CA"
	tls_status -u "$url" --tls-ca "$TLS_CA"
	assert_resumed
	# Restarted with the same certificate: the new process has new ticket
	# keys, so it wants a full handshake, and the CA is loaded for it.
	restart_tls_as RS "$TLS_SERVER_CRT" "$TLS_SERVER_KEY"
	tls_status -u "$url" --tls-ca "$TLS_CA"
	assert_not_resumed
	assert_stderr_has "did not resume"
	tls_status -u "$url" --tls-ca "$TLS_CA"
	assert_resumed
	# Restarted with a certificate from another CA, for the same names.
	local d=$BATS_TEST_TMPDIR
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/o.key"
	openssl req -config "${TLS_CA%/*}/openssl.cnf" -new -key "$d/o.key" \
		-subj "/CN=impostor" -out "$d/o.csr"
	openssl x509 -req -in "$d/o.csr" -CA "$TLS_OTHER_CA" -CAkey "$TLS_OTHER_CA_KEY" \
		-CAcreateserial -CAserial "$d/o.srl" -days 3 -extfile "${TLS_CA%/*}/openssl.cnf" \
		-extensions server -out "$d/o.crt"
	restart_tls_as RS "$d/o.crt" "$d/o.key"
	run --separate-stderr timeout 20 "$RLOCK" -u "$url" --tls-ca "$TLS_CA" acquire job
	assert_equal "$status" 69
	assert_one_error_line
	assert_stderr_has "not trusted" "--tls-ca"
	tls_status -u "$url" --tls-ca "$TLS_CA"
	assert_equal "$status" 69
	refute_contains "TLS session resumed" "$stderr"
}

# ---------------------------------------------------------------------------
# the system's store, and the checks every handshake keeps
# ---------------------------------------------------------------------------

# hashed_ca_dir DIR CA...: DIR holding the CAs under the names `openssl
# rehash` gives them (HASH.0 links), as /etc/ssl/certs holds the system's.
hashed_ca_dir() {
	local d=$1 c
	shift
	mkdir -p "$d"
	for c in "$@"; do cp "$c" "$d/"; done
	openssl rehash "$d" 2>/dev/null || c_rehash "$d" >/dev/null
	ls "$d" | grep -qE '^[0-9a-f]{8}\.0$' || fail "openssl rehash made no link in $d"
}

# The OpenSSL directory's default bundle and hashed directory (what
# SSL_CTX_set_default_verify_paths reads when nothing is set).
openssl_default_paths() {
	local d
	d=$(openssl version -d | sed -n 's/^OPENSSLDIR: "\(.*\)"$/\1/p')
	[[ -n $d ]] || fail "openssl version -d names no directory"
	DEFAULT_FILE=$d/cert.pem
	DEFAULT_DIR=$d/certs
}

@test "tls: without --tls-ca, a CA in a hashed directory (SSL_CERT_DIR) verifies the server on a first run" {
	hashed_ca_dir "$BATS_TEST_TMPDIR/certs" "$TLS_CA"
	unset SSL_CERT_FILE
	SSL_CERT_DIR=$BATS_TEST_TMPDIR/certs run --separate-stderr timeout 20 "$RLOCK" -u "$IP_URL" acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(tcli TLS HKEYS 'rlock:{job}')" "$output"
}

@test "tls: without --tls-ca, a hashed directory that lacks the server's CA is refused with 69 and a hint at --tls-ca" {
	hashed_ca_dir "$BATS_TEST_TMPDIR/certs" "$TLS_OTHER_CA"
	unset SSL_CERT_FILE
	SSL_CERT_DIR=$BATS_TEST_TMPDIR/certs run --separate-stderr timeout 20 "$RLOCK" -u "$IP_URL" acquire job
	assert_equal "$status" 69
	assert_output ""
	assert_one_error_line
	assert_stderr_has "not trusted" "--tls-ca"
	assert_no_locks TLS
}

@test "tls: SSL_CERT_FILE naming a bundle of its own is read, as OpenSSL reads it" {
	mkdir "$BATS_TEST_TMPDIR/empty"
	SSL_CERT_FILE=$TLS_CA SSL_CERT_DIR=$BATS_TEST_TMPDIR/empty \
		run --separate-stderr timeout 20 "$RLOCK" -u "$IP_URL" acquire job
	assert_success
	assert_equal "$(tcli TLS HKEYS 'rlock:{job}')" "$output"
}

@test "tls: a first run without --tls-ca reads no CA bundle where the system's hashed directory is (unset or set to the default bundle)" {
	command -v strace >/dev/null || skip "strace is not installed"
	openssl_default_paths
	ls "$DEFAULT_DIR" 2>/dev/null | grep -qE '^[0-9a-f]{8}\.[0-9]+$' ||
		skip "$DEFAULT_DIR is not a hashed directory here"
	[[ -r $DEFAULT_FILE ]] || skip "no default bundle $DEFAULT_FILE here"
	local real
	real=$(readlink -f "$DEFAULT_FILE")
	hashed_ca_dir "$BATS_TEST_TMPDIR/certs" "$TLS_CA"
	local file set
	for file in unset "$real"; do
		rm -rf "$XDG_RUNTIME_DIR/rlock" # a first run: the CAs are loaded
		set=(-u SSL_CERT_FILE)
		[[ $file == unset ]] || set=("SSL_CERT_FILE=$file")
		# (LeakSanitizer cannot work under ptrace.)
		run --separate-stderr env "${set[@]}" SSL_CERT_DIR="$BATS_TEST_TMPDIR/certs" \
			ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
			timeout 60 strace -f -qq -e trace=open,openat \
			-o "$BATS_TEST_TMPDIR/strace.out" "$RLOCK" -u "$IP_URL" status job
		assert_equal "$status" 1 # a free lock: verified, connected
		grep -q 'openssl.cnf\|libssl' "$BATS_TEST_TMPDIR/strace.out" ||
			fail "strace saw no open of OpenSSL's files: $(head -c 2000 "$BATS_TEST_TMPDIR/strace.out")"
		if grep -E "\"($DEFAULT_FILE|$real)\"" "$BATS_TEST_TMPDIR/strace.out"; then
			fail "SSL_CERT_FILE='$file': the bundle was read"
		fi
	done
}

# A CA is trusted as the copy the server sent when its bytes are those of
# a trusted file (tls-ca.c): never by its name alone.
@test "tls: a server that sends a CA named as the trusted one but not that certificate is refused, through --tls-ca and through a hashed directory; the real CA sent is trusted" {
	local d=$BATS_TEST_TMPDIR cnf=${TLS_CA%/*}/openssl.cnf
	# An impostor: the test CA's name, another key; the server's request
	# signed by it, and sent with it.
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/fake-ca.key"
	openssl req -config "$cnf" -x509 -new -key "$d/fake-ca.key" -days 3 \
		-subj "/CN=rlock test CA" -extensions v3ca -out "$d/fake-ca.crt"
	openssl x509 -req -in "${TLS_CA%/*}/server.csr" -CA "$d/fake-ca.crt" \
		-CAkey "$d/fake-ca.key" -CAcreateserial -CAserial "$d/fake.srl" -days 3 \
		-extfile "$cnf" -extensions server -out "$d/fake.crt"
	cat "$d/fake.crt" "$d/fake-ca.crt" >"$d/fake-chain.crt"
	cat "$TLS_SERVER_CRT" "$TLS_CA" >"$d/chain.crt"
	hashed_ca_dir "$d/certs" "$TLS_CA"
	unset SSL_CERT_FILE
	start_tls_redis_as FK optional
	restart_tls_as FK "$d/fake-chain.crt" "$TLS_SERVER_KEY"
	run --separate-stderr timeout 20 "$RLOCK" -u "$FK_URL" --tls-ca "$TLS_CA" acquire job
	assert_equal "$status" 69
	assert_one_error_line
	assert_stderr_has "not trusted" "--tls-ca"
	SSL_CERT_DIR=$d/certs run --separate-stderr timeout 20 "$RLOCK" -u "$FK_URL" acquire job
	assert_equal "$status" 69
	assert_one_error_line
	assert_stderr_has "not trusted" "--tls-ca"
	# The same server name, the real CA sent after the certificate.
	restart_tls_as FK "$d/chain.crt" "$TLS_SERVER_KEY"
	assert_no_locks FK
	run --separate-stderr timeout 20 "$RLOCK" -u "$FK_URL" --tls-ca "$TLS_CA" acquire job
	assert_success
	rm -rf "$XDG_RUNTIME_DIR/rlock"
	SSL_CERT_DIR=$d/certs run --separate-stderr timeout 20 "$RLOCK" -u "$FK_URL" acquire job2
	assert_success
	assert_equal "$stderr" ""
}

@test "tls: a --tls-ca of several CAs verifies, and a CA written with OpenSSL's trust settings keeps them (trusted, or rejected for servers: refused), from --tls-ca and from a hashed directory" {
	local d=$BATS_TEST_TMPDIR
	cat "$TLS_OTHER_CA" "$TLS_CA" >"$d/bundle.pem"
	openssl x509 -in "$TLS_CA" -addtrust serverAuth -out "$d/trusted.pem"
	openssl x509 -in "$TLS_CA" -addreject serverAuth -out "$d/rejected.pem"
	grep -q "BEGIN TRUSTED CERTIFICATE" "$d/rejected.pem" || fail "openssl wrote no trust settings"
	run --separate-stderr timeout 20 "$RLOCK" -u "$IP_URL" --tls-ca "$d/bundle.pem" acquire job
	assert_success
	run --separate-stderr timeout 20 "$RLOCK" -u "$IP_URL" --tls-ca "$d/trusted.pem" acquire job2
	assert_success
	run --separate-stderr timeout 20 "$RLOCK" -u "$IP_URL" --tls-ca "$d/rejected.pem" acquire job3
	assert_equal "$status" 69
	assert_one_error_line
	assert_stderr_has "failed verification" "rejected"
	hashed_ca_dir "$d/certs" "$d/rejected.pem"
	unset SSL_CERT_FILE
	SSL_CERT_DIR=$d/certs run --separate-stderr timeout 20 "$RLOCK" -u "$IP_URL" acquire job3
	assert_equal "$status" 69
	assert_stderr_has "failed verification" "rejected"
}

# rlock loads libssl with RTLD_DEEPBIND (tls-openssl.c) only when nothing
# is preloaded: a preloaded library stands in for OpenSSL's calls too.
@test "tls: a clock preloaded with LD_PRELOAD (as libfaketime) is the clock OpenSSL checks a certificate's dates by" {
	command -v cc >/dev/null || skip "no C compiler"
	if grep -q __asan_init "$RLOCK" 2>/dev/null; then
		skip "a sanitizer build: its run-time must be loaded first"
	fi
	local d=$BATS_TEST_TMPDIR
	cat >"$d/later.c" <<-'EOF2'
		#include <time.h>
		/* 2100-01-01, long after the test certificates expire. */
		time_t time(time_t *t) { if (t != NULL) *t = 4102444800; return 4102444800; }
	EOF2
	cc -shared -fPIC -o "$d/later.so" "$d/later.c" || fail "cannot build the preload"
	run --separate-stderr timeout 20 "$RLOCK" -u "$IP_URL" --tls-ca "$TLS_CA" acquire job
	assert_success
	rm -rf "$XDG_RUNTIME_DIR/rlock"
	LD_PRELOAD=$d/later.so run --separate-stderr timeout 20 "$RLOCK" -u "$IP_URL" --tls-ca "$TLS_CA" status job
	assert_equal "$status" 69
	assert_stderr_has "failed verification" "expired"
}

@test "tls: a server whose certificate has expired is refused with 69 saying so" {
	local d=$BATS_TEST_TMPDIR/ca
	mkdir -p "$d" && : >"$d/index.txt" && echo 1000 >"$d/serial"
	cat >"$d/ca.cnf" <<-EOF2
		[ca]
		default_ca = d
		[d]
		database = $d/index.txt
		new_certs_dir = $d
		serial = $d/serial
		default_md = sha256
		policy = p
		[p]
		commonName = supplied
	EOF2
	openssl ca -batch -config "$d/ca.cnf" -cert "$TLS_CA" -keyfile "$TLS_CA_KEY" \
		-in "${TLS_CA%/*}/server.csr" -out "$d/expired.crt" -notext \
		-startdate 20200101000000Z -enddate 20200102000000Z \
		-extfile "${TLS_CA%/*}/openssl.cnf" -extensions server 2>"$d/ca.log" ||
		fail "openssl ca: $(cat "$d/ca.log")"
	# Started with a good certificate (its start is checked with a ping,
	# which an expired one would fail), then with the expired one.
	start_tls_redis_as EXP optional
	restart_tls_as EXP "$d/expired.crt" "$TLS_SERVER_KEY"
	run --separate-stderr timeout 20 "$RLOCK" -u "$EXP_URL" --tls-ca "$TLS_CA" acquire job
	assert_equal "$status" 69
	assert_one_error_line
	assert_stderr_has "failed verification" "expired"
}

# start_sni_server VAR: a TLS server (python3's ssl, the test PKI's
# certificate) that prints the SNI name of each handshake ("SNI None" when
# none was sent), then closes the connection. VAR_PORT is its port.
start_sni_server() {
	bg_start "$1" timeout 60 /usr/bin/python3 -c '
import socket, ssl, sys, time
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
ctx.sni_callback = lambda sock, name, c: print("SNI", name, flush=True)
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
deadline = time.time() + 55
while time.time() < deadline:
    s.settimeout(max(0.1, deadline - time.time()))
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.settimeout(10)
    try:
        ctx.wrap_socket(c, server_side=True).close()
    except (OSError, ssl.SSLError):
        c.close()
' "$TLS_SERVER_CRT" "$TLS_SERVER_KEY"
	wait_port_line "$1"
}

# sni_seen VAR N: the N-th SNI line of the server VAR (bounded wait).
sni_seen() {
	local i line
	for ((i = 0; i < 250; i++)); do
		line=$(grep '^SNI ' "$BATS_TEST_TMPDIR/$1.out" | sed -n "$2p")
		[[ -n $line ]] && { echo "$line"; return 0; }
		sleep 0.02
	done
	echo "(no SNI line $2)"
}

@test "tls: the name checked is sent as SNI (the URL's host or --tls-server-name), and no IP address is" {
	start_sni_server SNI
	local u=127.0.0.1:$SNI_PORT
	# The server closes after the handshake: the runs fail, having said
	# their name.
	run timeout 20 "$RLOCK" -u "rediss://localhost:$SNI_PORT" --tls-ca "$TLS_CA" status job
	assert_equal "$status" 69
	assert_equal "$(sni_seen SNI 1)" "SNI localhost"
	run timeout 20 "$RLOCK" -u "rediss://$u" --tls-ca "$TLS_CA" status job
	assert_equal "$status" 69
	assert_equal "$(sni_seen SNI 2)" "SNI None"
	run timeout 20 "$RLOCK" -u "rediss://$u" --tls-server-name localhost --tls-ca "$TLS_CA" status job
	assert_equal "$status" 69
	assert_equal "$(sni_seen SNI 3)" "SNI localhost"
}
