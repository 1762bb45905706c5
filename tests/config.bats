#!/usr/bin/env bats
# config.bats: the config file (--config, $RLOCK_CONFIG), its syntax and
# errors, precedence of every setting (flag > environment > file > default),
# where the password comes from, warnings about readable secrets, time-outs
# against a server that never answers, IPv6 and percent-encoded passwords.

load helpers
load tls-helpers

PW=c0nfig-Secret-77

setup_file() {
	make_test_pki
	start_redis                      # A: REDIS_*, RLOCK_URL
	start_redis_as B                 # B: a second plain server
	start_redis_auth_as AUTH "$PW"   # requires $PW
	start_tls_redis_as TLS optional
}
teardown_file() { stop_all_redis; }

setup() {
	default_setup
	rcli_as B FLUSHALL >/dev/null
	RCLI_AUTH=$PW rcli_as AUTH FLUSHALL >/dev/null
	tcli TLS FLUSHALL >/dev/null
	CONF=$BATS_TEST_TMPDIR/rlock.conf
	# Password files, private unless a test says otherwise.
	printf '%s\n' "$PW" >"$BATS_TEST_TMPDIR/good.pw"
	printf '%s\n' "not-the-password-1" >"$BATS_TEST_TMPDIR/bad.pw"
	chmod 600 "$BATS_TEST_TMPDIR/good.pw" "$BATS_TEST_TMPDIR/bad.pw"
	GOOD_PW=$BATS_TEST_TMPDIR/good.pw
	BAD_PW=$BATS_TEST_TMPDIR/bad.pw
}
teardown() { cleanup_test; }

# conf [FILE]: write stdin to FILE (default $CONF), mode 600.
conf() {
	local f=${1:-$CONF}
	cat >"$f"
	chmod 600 "$f"
}

# The lock key NAME on server A, B (plain) or AUTH.
on_a() { rcli EXISTS "rlock:{$1}"; }
on_b() { rcli_as B EXISTS "rlock:{$1}"; }
on_auth() { RCLI_AUTH=$PW rcli_as AUTH EXISTS "rlock:{$1}"; }

# ---------------------------------------------------------------------------
# finding the file
# ---------------------------------------------------------------------------

@test "config: --config FILE is read (its url decides the server)" {
	unset RLOCK_URL
	conf <<<"url = $B_URL"
	run --separate-stderr rlock --config "$CONF" acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(on_b job)" 1
	assert_equal "$(on_a job)" 0
}

@test "config: \$RLOCK_CONFIG names the file when --config is not given" {
	unset RLOCK_URL
	conf <<<"url = $B_URL"
	RLOCK_CONFIG=$CONF run --separate-stderr rlock acquire job
	assert_success
	assert_equal "$(on_b job)" 1
	assert_equal "$(on_a job)" 0
}

@test "config: --config beats \$RLOCK_CONFIG" {
	unset RLOCK_URL
	conf <<<"url = $B_URL"
	conf "$BATS_TEST_TMPDIR/env.conf" <<<"url = $REDIS_URL"
	RLOCK_CONFIG=$BATS_TEST_TMPDIR/env.conf run --separate-stderr rlock --config "$CONF" acquire job
	assert_success
	assert_equal "$(on_b job)" 1
	assert_equal "$(on_a job)" 0
}

@test "config: --config naming a missing file is a usage error (64)" {
	run --separate-stderr rlock --config "$BATS_TEST_TMPDIR/missing.conf" acquire job
	assert_usage_error
	assert_stderr_has "missing.conf"
}

@test "config: \$RLOCK_CONFIG naming a missing file is a usage error (64)" {
	RLOCK_CONFIG=$BATS_TEST_TMPDIR/missing.conf run --separate-stderr rlock acquire job
	assert_usage_error
	assert_stderr_has "missing.conf"
}

# /dev/null is no configuration, as for ssh -F /dev/null: known by its
# device, so a symlink to it is one too; any other device is still refused.

@test "config: \$RLOCK_CONFIG=/dev/null is no configuration: acquire and status work, without a warning" {
	RLOCK_CONFIG=/dev/null run --separate-stderr rlock -u "$B_URL" acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(on_b job)" 1
	RLOCK_CONFIG=/dev/null run --separate-stderr rlock -u "$B_URL" status job
	assert_success
	assert_equal "$stderr" ""
	[[ $output == *job* ]] || fail "status: $output"
}

@test "config: --config /dev/null (or a symlink to it) is no configuration, and beats \$RLOCK_CONFIG" {
	conf <<<"prefix = file:"
	RLOCK_CONFIG=$CONF run --separate-stderr rlock --config /dev/null acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 1
	assert_equal "$(rcli EXISTS 'file:{job}')" 0
	ln -s /dev/null "$BATS_TEST_TMPDIR/null.conf"
	run --separate-stderr rlock --config "$BATS_TEST_TMPDIR/null.conf" acquire job2
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(rcli EXISTS 'rlock:{job2}')" 1
}

@test "config: a FIFO, /dev/zero or a directory as --config or \$RLOCK_CONFIG is still refused: 64, one line" {
	local f kind
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	for f in "$BATS_TEST_TMPDIR/fifo" /dev/zero "$BATS_TEST_TMPDIR"; do
		case $f in
		*/fifo) kind=FIFO ;;
		/dev/zero) kind="character device" ;;
		*) kind=directory ;;
		esac
		run --separate-stderr timeout -k 2 10 "$RLOCK" --config "$f" status
		assert_usage_error
		assert_stderr_has "is a $kind, not a regular file"
		RLOCK_CONFIG=$f run --separate-stderr timeout -k 2 10 "$RLOCK" status
		assert_usage_error
		assert_stderr_has "is a $kind, not a regular file"
	done
	# Only the config file: a password file of /dev/null holds no password.
	run --separate-stderr timeout -k 2 10 "$RLOCK" --password-file /dev/null status
	assert_usage_error
	assert_stderr_has "is a character device, not a regular file"
}

# ---------------------------------------------------------------------------
# precedence: url
# ---------------------------------------------------------------------------

@test "config: \$RLOCK_URL beats the url in the file" {
	conf <<<"url = $REDIS_URL"
	RLOCK_URL=$B_URL run --separate-stderr rlock --config "$CONF" acquire job
	assert_success
	assert_equal "$(on_b job)" 1
	assert_equal "$(on_a job)" 0
}

@test "config: -u beats both \$RLOCK_URL and the url in the file" {
	conf <<<"url = $B_URL"
	RLOCK_URL=$B_URL run --separate-stderr rlock --config "$CONF" -u "$REDIS_URL" acquire job
	assert_success
	assert_equal "$(on_a job)" 1
	assert_equal "$(on_b job)" 0
}

@test "config: the url in the file beats the default" {
	unset RLOCK_URL
	conf <<<"url = $B_URL"
	run --separate-stderr rlock --config "$CONF" acquire job
	assert_success
	assert_equal "$(on_b job)" 1
	# Without the file (and nothing on 127.0.0.1:6379) the default is used.
	if ! (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; then
		run --separate-stderr rlock acquire job2
		assert_equal "$status" 69
		assert_stderr_has "127.0.0.1:6379"
	fi
}

# ---------------------------------------------------------------------------
# precedence: prefix, ttl
# ---------------------------------------------------------------------------

@test "config: the prefix comes from --prefix, else \$RLOCK_PREFIX, else the file, else rlock:" {
	conf <<<"prefix = file:"
	RLOCK_PREFIX=env: run rlock --config "$CONF" --prefix flag: acquire j1
	assert_success
	RLOCK_PREFIX=env: run rlock --config "$CONF" acquire j2
	assert_success
	run rlock --config "$CONF" acquire j3
	assert_success
	run rlock acquire j4
	assert_success
	assert_equal "$(rcli EXISTS 'flag:{j1}')" 1
	assert_equal "$(rcli EXISTS 'env:{j2}')" 1
	assert_equal "$(rcli EXISTS 'file:{j3}')" 1
	assert_equal "$(rcli EXISTS 'rlock:{j4}')" 1
	# Each lock: its key (the holders' record), fence and history.
	assert_equal "$(rcli DBSIZE)" 12
}

@test "config: the ttl comes from -t, else the file, else 30s" {
	conf <<<"ttl = 7s"
	run rlock --config "$CONF" -t 20s acquire j1
	assert_success
	run rlock --config "$CONF" acquire j2
	assert_success
	run rlock acquire j3
	assert_success
	assert_between "$(rcli PTTL 'rlock:{j1}')" 18000 20000 "PTTL with -t 20s"
	assert_between "$(rcli PTTL 'rlock:{j2}')" 5000 7000 "PTTL with ttl = 7s in the file"
	assert_between "$(rcli PTTL 'rlock:{j3}')" 28000 30000 "PTTL by default"
}

# ---------------------------------------------------------------------------
# precedence: password
# ---------------------------------------------------------------------------

@test "config: --password-file on the command line beats the URL, both variables and the file" {
	conf <<<"password-file = $BAD_PW"
	RLOCK_PASSWORD=wrong-2 REDISCLI_AUTH=wrong-3 run --separate-stderr rlock --config "$CONF" \
		-u "redis://:wrong-1@127.0.0.1:$AUTH_PORT" --password-file "$GOOD_PW" acquire job
	assert_success
	assert_equal "$(on_auth job)" 1
	# And the other way round: a wrong file on the command line loses
	# although the URL has the right password.
	run --separate-stderr rlock -u "redis://:$PW@127.0.0.1:$AUTH_PORT" \
		--password-file "$BAD_PW" acquire job2
	assert_equal "$status" 69
	assert_one_error_line
	refute_contains "$PW" "$output$stderr"
	refute_contains not-the-password-1 "$output$stderr"
	assert_equal "$(on_auth job2)" 0
}

@test "config: the password in the URL beats \$RLOCK_PASSWORD, \$REDISCLI_AUTH and the file" {
	conf <<<"password-file = $BAD_PW"
	RLOCK_PASSWORD=wrong-2 REDISCLI_AUTH=wrong-3 run --separate-stderr rlock --config "$CONF" \
		-u "redis://:$PW@127.0.0.1:$AUTH_PORT" acquire job
	assert_success
	assert_equal "$(on_auth job)" 1
	conf <<<"password-file = $GOOD_PW"
	RLOCK_PASSWORD=$PW REDISCLI_AUTH=$PW run --separate-stderr rlock --config "$CONF" \
		-u "redis://:wrong-1@127.0.0.1:$AUTH_PORT" acquire job2
	assert_equal "$status" 69
	assert_one_error_line
	refute_contains "$PW" "$output$stderr"
	refute_contains wrong-1 "$output$stderr"
	assert_equal "$(on_auth job2)" 0
}

@test "config: \$RLOCK_PASSWORD beats \$REDISCLI_AUTH and the file" {
	conf <<<"password-file = $BAD_PW"
	RLOCK_PASSWORD=$PW REDISCLI_AUTH=wrong-3 run --separate-stderr rlock --config "$CONF" \
		-u "$AUTH_URL" acquire job
	assert_success
	assert_equal "$(on_auth job)" 1
	conf <<<"password-file = $GOOD_PW"
	RLOCK_PASSWORD=wrong-2 REDISCLI_AUTH=$PW run --separate-stderr rlock --config "$CONF" \
		-u "$AUTH_URL" acquire job2
	assert_equal "$status" 69
	assert_one_error_line
	refute_contains "$PW" "$output$stderr"
	refute_contains wrong-2 "$output$stderr"
	assert_equal "$(on_auth job2)" 0
}

@test "config: \$REDISCLI_AUTH beats the password-file in the file" {
	conf <<<"password-file = $BAD_PW"
	REDISCLI_AUTH=$PW run --separate-stderr rlock --config "$CONF" -u "$AUTH_URL" acquire job
	assert_success
	assert_equal "$(on_auth job)" 1
	conf <<<"password-file = $GOOD_PW"
	REDISCLI_AUTH=wrong-3 run --separate-stderr rlock --config "$CONF" -u "$AUTH_URL" acquire job2
	assert_equal "$status" 69
	assert_one_error_line
	refute_contains wrong-3 "$output$stderr"
	assert_equal "$(on_auth job2)" 0
}

@test "config: the password-file in the file is used when nothing else gives a password" {
	conf <<<"password-file = $GOOD_PW"
	run --separate-stderr rlock --config "$CONF" -u "$AUTH_URL" acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(on_auth job)" 1
	conf <<<"password-file = $BAD_PW"
	run --separate-stderr rlock --config "$CONF" -u "$AUTH_URL" acquire job2
	assert_equal "$status" 69
	assert_one_error_line
	assert_equal "$(on_auth job2)" 0
}

# ---------------------------------------------------------------------------
# TLS settings from the file
# ---------------------------------------------------------------------------

@test "config: tls-ca in the file lets a rediss:// server verify" {
	unset RLOCK_URL
	conf <<-EOF
		url = $TLS_URL
		tls-ca = $TLS_CA
	EOF
	run --separate-stderr rlock --config "$CONF" acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(tcli TLS HKEYS 'rlock:{job}')" "$output"
	# Without it the same server is not trusted.
	conf <<<"url = $TLS_URL"
	run --separate-stderr timeout 20 "$RLOCK" --config "$CONF" acquire job2
	assert_equal "$status" 69
	assert_stderr_has "not trusted"
	assert_equal "$(tcli TLS EXISTS 'rlock:{job2}')" 0
}

@test "config: --tls-ca on the command line beats tls-ca in the file, both ways" {
	conf <<<"tls-ca = $TLS_OTHER_CA"
	run --separate-stderr rlock --config "$CONF" -u "$TLS_URL" --tls-ca "$TLS_CA" acquire job
	assert_success
	conf <<<"tls-ca = $TLS_CA"
	run --separate-stderr timeout 20 "$RLOCK" --config "$CONF" -u "$TLS_URL" --tls-ca "$TLS_OTHER_CA" acquire job2
	assert_equal "$status" 69
	assert_stderr_has "not trusted"
	assert_equal "$(tcli TLS EXISTS 'rlock:{job}')" 1
	assert_equal "$(tcli TLS EXISTS 'rlock:{job2}')" 0
}

# ---------------------------------------------------------------------------
# syntax
# ---------------------------------------------------------------------------

@test "config: comment lines and blank lines are ignored" {
	unset RLOCK_URL
	conf <<-EOF
		# rlock settings

		   # an indented comment = not a setting
		url = $B_URL
		  	
		# ttl = 1s
		ttl = 9s
	EOF
	run --separate-stderr rlock --config "$CONF" acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_between "$(rcli_as B PTTL 'rlock:{job}')" 7000 9000 "PTTL"
}

@test "config: a '#' inside a value is part of the value" {
	conf <<<"prefix = a#b:"
	run --separate-stderr rlock --config "$CONF" acquire job
	assert_success
	assert_equal "$(rcli EXISTS 'a#b:{job}')" 1
}

@test "config: a URL password holding '#' works from the file, raw or as %23" {
	start_redis_auth_as HASH 'pa#ss-word'
	unset RLOCK_URL
	conf <<<"url = redis://:pa%23ss-word@127.0.0.1:$HASH_PORT"
	run --separate-stderr rlock --config "$CONF" acquire job
	assert_success
	assert_equal "$stderr" ""
	conf <<<"url = redis://:pa#ss-word@127.0.0.1:$HASH_PORT"
	run --separate-stderr rlock --config "$CONF" acquire job2
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(RCLI_AUTH='pa#ss-word' rcli_as HASH EXISTS 'rlock:{job}' 'rlock:{job2}')" 2
}

@test "config: keys may be written with a leading '--' and without spaces around '='" {
	unset RLOCK_URL
	conf <<-EOF
		--url = $B_URL
		--prefix=dash:
		ttl=11s
	EOF
	run --separate-stderr rlock --config "$CONF" acquire job
	assert_success
	assert_between "$(rcli_as B PTTL 'dash:{job}')" 9000 11000 "PTTL"
}

@test "config: json = yes (and its other spellings) makes acquire print JSON" {
	local v
	for v in yes true on 1; do
		conf <<<"json = $v"
		run --separate-stderr rlock --config "$CONF" acquire "j-$v"
		assert_success
		json_check "d['name'] == 'j-$v' and d['ttl_ms'] == 30000 and d['fence'] >= 1" <<<"$output"
	done
	for v in no false off 0; do
		conf <<<"json = $v"
		run --separate-stderr rlock --config "$CONF" acquire "k-$v"
		assert_success
		[[ "$output" =~ $UUID_RE ]] || fail "json = $v printed: $output"
	done
}

@test "config: quiet = yes suppresses the --tls-insecure warning, quiet = no does not" {
	conf <<-EOF
		tls-insecure = yes
		quiet = yes
	EOF
	run --separate-stderr rlock --config "$CONF" -u "$TLS_URL" acquire job
	assert_success
	assert_equal "$stderr" ""
	conf <<-EOF
		tls-insecure = yes
		quiet = no
	EOF
	run --separate-stderr rlock --config "$CONF" -u "$TLS_URL" acquire job2
	assert_success
	assert_one_error_line
	assert_stderr_has "--tls-insecure"
	assert_equal "$(tcli TLS EXISTS 'rlock:{job}' 'rlock:{job2}')" 2
}

@test "config: options that do not apply to the command run are ignored" {
	conf <<-EOF
		ttl = 5s
		wait = 1s
		heartbeat = 1s
		conflict-exit-code = 3
	EOF
	tok=$(rlock acquire job)
	run --separate-stderr rlock --config "$CONF" status
	assert_success
	assert_equal "$stderr" ""
	assert_output --partial "job: held by"
	run --separate-stderr rlock --config "$CONF" release --token "$tok" job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(on_a job)" 0
	# The same file does apply its ttl to acquire.
	run --separate-stderr rlock --config "$CONF" acquire job2
	assert_success
	assert_between "$(rcli PTTL 'rlock:{job2}')" 3000 5000 "PTTL with ttl = 5s in the file"
}

# ---------------------------------------------------------------------------
# errors in the file
# ---------------------------------------------------------------------------

# assert_conf_error LINE: exit 64, one stderr line "rlock: $CONF:LINE: ...",
# nothing written to Redis.
assert_conf_error() {
	assert_usage_error
	[[ "$stderr" == "rlock: $CONF:$1: "* ]] ||
		fail "expected 'rlock: $CONF:$1: ...', got: $stderr"
}

@test "config: an unknown key is an error naming FILE:LINE" {
	conf <<-EOF
		# settings

		colour = blue
	EOF
	run --separate-stderr rlock --config "$CONF" acquire job
	assert_conf_error 3
	assert_stderr_has "colour"
}

@test "config: keys that are not settings (token, config, help) are unknown keys" {
	local k
	for k in token config help force command; do
		conf <<<"$k = x"
		run --separate-stderr rlock --config "$CONF" acquire job
		assert_conf_error 1
	done
}

@test "config: a line without '=' is an error naming FILE:LINE" {
	conf <<-EOF
		ttl = 5s
		json
	EOF
	run --separate-stderr rlock --config "$CONF" acquire job
	assert_conf_error 2
}

@test "config: a bad duration is an error naming FILE:LINE and the value" {
	conf <<-EOF
		prefix = x:
		ttl = 5x
	EOF
	run --separate-stderr rlock --config "$CONF" acquire job
	assert_conf_error 2
	assert_stderr_has "5x"
}

@test "config: a bad boolean is an error naming FILE:LINE and the value" {
	conf <<-EOF


		json = maybe
	EOF
	run --separate-stderr rlock --config "$CONF" acquire job
	assert_conf_error 3
	assert_stderr_has "maybe"
}

@test "config: a bad setting in the file is an error even for status" {
	conf <<<"ttl = -1s"
	run --separate-stderr rlock --config "$CONF" status
	assert_conf_error 1
}

# ---------------------------------------------------------------------------
# warnings about secrets readable by others
# ---------------------------------------------------------------------------

@test "config: a --password-file readable by others draws one warning mentioning 'readable'" {
	chmod 644 "$GOOD_PW"
	run --separate-stderr rlock -u "$AUTH_URL" --password-file "$GOOD_PW" acquire job
	assert_success
	assert_one_error_line
	assert_stderr_has "warning" "readable" "$GOOD_PW"
	assert_equal "$(on_auth job)" 1
}

@test "config: a --password-file with mode 600 draws no warning" {
	chmod 600 "$GOOD_PW"
	run --separate-stderr rlock -u "$AUTH_URL" --password-file "$GOOD_PW" acquire job
	assert_success
	assert_equal "$stderr" ""
}

@test "config: -q suppresses the readable --password-file warning" {
	chmod 644 "$GOOD_PW"
	run --separate-stderr rlock -q -u "$AUTH_URL" --password-file "$GOOD_PW" acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(on_auth job)" 1
}

@test "config: a config file with a password in its URL and mode 644 draws one warning" {
	unset RLOCK_URL
	conf <<<"url = redis://:$PW@127.0.0.1:$AUTH_PORT"
	chmod 644 "$CONF"
	run --separate-stderr rlock --config "$CONF" acquire job
	assert_success
	assert_one_error_line
	assert_stderr_has "warning" "readable" "$CONF"
	refute_contains "$PW" "$stderr"
	assert_equal "$(on_auth job)" 1
	chmod 600 "$CONF"
	run --separate-stderr rlock --config "$CONF" acquire job2
	assert_success
	assert_equal "$stderr" ""
}

# ---------------------------------------------------------------------------
# time-outs against a listener that never answers
# ---------------------------------------------------------------------------

@test "config: --timeout 500ms against a server that never answers exits 69 with 'no reply within'" {
	local t0
	start_silent_listener L
	t0=$(now_ms)
	run --separate-stderr timeout 20 "$RLOCK" -u "redis://127.0.0.1:$L_PORT" --timeout 500ms acquire job
	assert_elapsed_below "$t0" 4000
	assert_equal "$status" 69
	assert_output ""
	assert_one_error_line
	assert_stderr_has "127.0.0.1:$L_PORT" "no reply within"
}

@test "config: timeout = 500ms in the file bounds a round trip just the same" {
	local t0
	start_silent_listener L
	conf <<<"timeout = 500ms"
	t0=$(now_ms)
	run --separate-stderr timeout 20 "$RLOCK" --config "$CONF" -u "redis://127.0.0.1:$L_PORT" acquire job
	assert_elapsed_below "$t0" 4000
	assert_equal "$status" 69
	assert_stderr_has "no reply within 500ms"
}

@test "config: an AUTH that gets no reply exits 69 naming --connect-timeout" {
	local t0
	start_silent_listener L
	t0=$(now_ms)
	RLOCK_PASSWORD=whatever run --separate-stderr timeout 20 "$RLOCK" \
		-u "redis://127.0.0.1:$L_PORT" --connect-timeout 1s --timeout 500ms acquire job
	assert_elapsed_below "$t0" 5000
	assert_equal "$status" 69
	assert_output ""
	assert_one_error_line
	assert_stderr_has "127.0.0.1:$L_PORT" "--connect-timeout"
	refute_contains whatever "$stderr"
}

# ---------------------------------------------------------------------------
# URLs: IPv6, percent-encoding
# ---------------------------------------------------------------------------

@test "config: redis://[::1]:PORT reaches a server bound to the IPv6 loopback" {
	if ! python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
		skip "no ::1"
	fi
	start_redis_as V6 --bind ::1
	run --separate-stderr rlock -u "redis://[::1]:$V6_PORT" acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(redis-cli -s "$V6_SOCK" HKEYS 'rlock:{job}')" "$output"
	# The server is not on 127.0.0.1, so it was really reached over IPv6.
	run --separate-stderr rlock -u "redis://127.0.0.1:$V6_PORT" acquire job2
	assert_equal "$status" 69
	# And from the file, too.
	unset RLOCK_URL
	conf <<<"url = redis://[::1]:$V6_PORT"
	run --separate-stderr rlock --config "$CONF" acquire job3
	assert_success
	assert_equal "$(redis-cli -s "$V6_SOCK" EXISTS 'rlock:{job3}')" 1
}

@test "config: a percent-encoded password in the URL is decoded ('p@ss:w/rd')" {
	start_redis_auth_as PE 'p@ss:w/rd'
	run --separate-stderr rlock -u "redis://:p%40ss%3Aw%2Frd@127.0.0.1:$PE_PORT" acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(RCLI_AUTH='p@ss:w/rd' rcli_as PE HKEYS 'rlock:{job}')" "$output"
	# A wrong one fails and is not printed, encoded or not.
	run --separate-stderr rlock -u "redis://:n0t%40it@127.0.0.1:$PE_PORT" acquire job2
	assert_equal "$status" 69
	refute_contains 'n0t%40it' "$stderr"
	refute_contains 'n0t@it' "$stderr"
}
