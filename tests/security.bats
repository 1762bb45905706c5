#!/usr/bin/env bats
# security.bats: secrets stay secret and tokens are unguessable. A password
# given in a URL is scrubbed from rlock's command line (ps, /proc/PID/cmdline);
# the command run by exec never sees a password in its environment; no
# message, verbose line, JSON document or doctor report shows a password,
# whether authentication fails or succeeds; tokens are distinct UUIDv4s; and
# a password file readable by anyone draws a warning.

load helpers
load exec-helpers
load extra-helpers

# The file's server requires this password.
PW='Zq7-Secret-Pw'
# A wrong password, which must not show either.
BADPW='Wrong-Pw-9x3'

setup_file() {
	start_redis_auth_as REDIS "$PW"
	export RLOCK_URL="redis://127.0.0.1:$REDIS_PORT"
}
teardown_file() { default_teardown_file; }
setup() {
	RCLI_AUTH=$PW
	default_setup
	umask 077
	AURL="redis://:$PW@127.0.0.1:$REDIS_PORT"
	BURL="redis://:$BADPW@127.0.0.1:$REDIS_PORT"
}
teardown() { exec_teardown; }

# refute_secrets TEXT: TEXT contains neither password (nor their first 8
# characters, which catches a truncated or partly masked password).
refute_secrets() {
	refute_contains "$PW" "$1"
	refute_contains "$BADPW" "$1"
	refute_contains "${PW:0:8}" "$1"
	refute_contains "${BADPW:0:8}" "$1"
}

# A child for exec that says it has started, then waits (bounded: 10 s) for
# the test to create the file "go".
waiting_child() {
	make_script waiter "echo started >'$BATS_TEST_TMPDIR/started'
i=0
while [ ! -e '$BATS_TEST_TMPDIR/go' ] && [ \$i -lt 200 ]; do sleep 0.05; i=\$((i+1)); done"
}

# ---------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------

@test "security: a URL password on the command line is masked in ps and /proc/PID/cmdline" {
	local child form cmdline args
	child=$(waiting_child)
	for form in "-u" "--url=" "-u-user"; do
		rm -f "$BATS_TEST_TMPDIR/started" "$BATS_TEST_TMPDIR/go"
		case $form in
		-u) bg_start RL "$RLOCK" -u "$AURL" exec job -- "$child" ;;
		--url=) bg_start RL "$RLOCK" --url="$AURL" exec job -- "$child" ;;
		-u-user) bg_start RL "$RLOCK" exec -u "redis://default:$PW@127.0.0.1:$REDIS_PORT" job "$child" ;;
		esac
		wait_file "$BATS_TEST_TMPDIR/started" 10000 || fail "the command did not start ($form): $(cat "$BATS_TEST_TMPDIR/RL.err")"
		cmdline=$(tr '\0' ' ' <"/proc/$RL/cmdline")
		args=$(ps -o args= -p "$RL")
		touch "$BATS_TEST_TMPDIR/go"
		bg_wait "$RL" 15000 || fail "rlock did not finish ($form)"
		assert_equal "$BG_STATUS" 0
		refute_secrets "$cmdline"
		refute_secrets "$args"
		# The password is replaced by four asterisks whatever its length (see
		# secrets.bats), the rest is intact.
		[[ "$cmdline" =~ redis://(default)?:\*{4}@127\.0\.0\.1:$REDIS_PORT ]] ||
			fail "cmdline should show the URL with the password masked ($form): $cmdline"
		[[ "$args" =~ redis://(default)?:\*{4}@127\.0\.0\.1:$REDIS_PORT ]] ||
			fail "ps should show the URL with the password masked ($form): $args"
		[[ "$cmdline" == *" job "* ]] || fail "the rest of the command line should be intact: $cmdline"
		RLOCK_PASSWORD=$PW assert_lock_free job
	done
}

# ---------------------------------------------------------------------------
# the child's environment
# ---------------------------------------------------------------------------

@test "security: the command run by exec finds no password in its environment" {
	local envfile=$BATS_TEST_TMPDIR/child.env
	# The password comes from the URL on the command line, and is also in
	# RLOCK_PASSWORD and REDISCLI_AUTH.
	run --separate-stderr env RLOCK_PASSWORD="$PW" REDISCLI_AUTH="$PW" \
		"$RLOCK" -u "$AURL" exec job -- sh -c "cat /proc/self/environ | tr '\\0' '\\n' >'$envfile'"
	assert_success
	assert_equal "$stderr" ""
	grep -q '^RLOCK_TOKEN=' "$envfile" || fail "the child should have RLOCK_TOKEN: $(cat "$envfile")"
	refute_secrets "$(cat "$envfile")"
	run grep -E '^(RLOCK_PASSWORD|REDISCLI_AUTH)=' "$envfile"
	assert_failure

	# The password comes in RLOCK_URL itself: the child gets the URL
	# without it.
	rm -f "$envfile"
	run --separate-stderr env RLOCK_URL="$AURL" RLOCK_PASSWORD="$PW" REDISCLI_AUTH="$PW" \
		"$RLOCK" exec job -- sh -c "env >'$envfile'"
	assert_success
	refute_secrets "$(cat "$envfile")"
	if grep -q '^RLOCK_URL=' "$envfile"; then
		assert_equal "$(grep '^RLOCK_URL=' "$envfile")" "RLOCK_URL=redis://127.0.0.1:$REDIS_PORT"
	fi

	# The password comes from RLOCK_PASSWORD only (the URL has none).
	rm -f "$envfile"
	run --separate-stderr env RLOCK_PASSWORD="$PW" "$RLOCK" exec job -c "env >'$envfile'"
	assert_success
	refute_secrets "$(cat "$envfile")"
	grep -q '^RLOCK_NAME=job$' "$envfile" || fail "the child should have RLOCK_NAME: $(cat "$envfile")"

	# And from REDISCLI_AUTH only.
	rm -f "$envfile"
	run --separate-stderr env REDISCLI_AUTH="$PW" "$RLOCK" exec job -c "env >'$envfile'"
	assert_success
	refute_secrets "$(cat "$envfile")"
	RLOCK_PASSWORD=$PW assert_lock_free job
}

# ---------------------------------------------------------------------------
# messages
# ---------------------------------------------------------------------------

@test "security: no message, verbose line or report shows the password when authentication succeeds" {
	local all='' token pwfile=$BATS_TEST_TMPDIR/pw
	printf '%s\n' "$PW" >"$pwfile"
	# Each way of giving the password.
	local -a auth_ways=("-u $AURL" "--password-file $pwfile" "env:RLOCK_PASSWORD" "env:REDISCLI_AUTH")
	local way
	for way in "${auth_ways[@]}"; do
		local -a pre=() opts=()
		case $way in
		env:*) pre=(env "${way#env:}=$PW") ;;
		*) read -ra opts <<<"$way" ;;
		esac
		run --separate-stderr "${pre[@]}" "$RLOCK" "${opts[@]}" -v acquire -t 20s job
		assert_success
		token=$output
		all+="$output $stderr "
		run --separate-stderr "${pre[@]}" "$RLOCK" "${opts[@]}" -v extend --token "$token" job
		assert_success
		all+="$output $stderr "
		run --separate-stderr "${pre[@]}" "$RLOCK" "${opts[@]}" -v status job
		assert_success
		all+="$output $stderr "
		run --separate-stderr "${pre[@]}" "$RLOCK" "${opts[@]}" -v --json status job
		assert_success
		all+="$output $stderr "
		run --separate-stderr "${pre[@]}" "$RLOCK" "${opts[@]}" -v --json status
		assert_success
		all+="$output $stderr "
		run --separate-stderr "${pre[@]}" "$RLOCK" "${opts[@]}" -v --json acquire -n other
		assert_success
		all+="$output $stderr "
		run --separate-stderr "${pre[@]}" "$RLOCK" "${opts[@]}" -v release --token "$token" job
		assert_success
		all+="$output $stderr "
		run --separate-stderr "${pre[@]}" "$RLOCK" "${opts[@]}" -v release --force other
		assert_success
		all+="$output $stderr "
		run --separate-stderr "${pre[@]}" "$RLOCK" "${opts[@]}" -v exec -t 3s --heartbeat 200ms job -- sleep 0.5
		assert_success
		[[ "$stderr" == *"extended job"* ]] || fail "-v should report extends: $stderr"
		all+="$output $stderr "
		# A busy lock with -v, and not-the-holder errors.
		"${pre[@]}" "$RLOCK" "${opts[@]}" acquire -t 20s busy >/dev/null
		run --separate-stderr "${pre[@]}" "$RLOCK" "${opts[@]}" -v acquire -n busy
		assert_failure 1
		all+="$output $stderr "
		run --separate-stderr "${pre[@]}" "$RLOCK" "${opts[@]}" -v release --token nope busy
		assert_failure 1
		all+="$output $stderr "
		run --separate-stderr "${pre[@]}" "$RLOCK" "${opts[@]}" -v release --force busy
		assert_success
		all+="$output $stderr "
		run --separate-stderr "${pre[@]}" "$RLOCK" "${opts[@]}" -v doctor
		all+="$output $stderr "
		[[ "$output" == *"scripts"* ]] || fail "doctor should have reached the server: $output $stderr"
		run --separate-stderr "${pre[@]}" "$RLOCK" "${opts[@]}" -v --json doctor
		all+="$output $stderr "
		python3 -c 'import json,sys; json.loads(sys.argv[1])' "$output" || fail "doctor --json is not JSON: $output"
	done
	refute_secrets "$all"
	assert_equal "$(rcli --raw KEYS 'rlock:{job}')" ""
}

@test "security: no message, verbose line or report shows the password when authentication fails" {
	local all='' pwfile=$BATS_TEST_TMPDIR/badpw cmd
	printf '%s\n' "$BADPW" >"$pwfile"
	local -a cmds=(
		"acquire -n job" "acquire -w 1s job" "--json acquire -n job" "extend --token t job"
		"release --token t job" "release --force job" "status job" "--json status job"
		"status" "--json status" "exec -n job -- true" "doctor" "--json doctor"
	)
	local -a ways=("-u $BURL" "--password-file $pwfile" "env:RLOCK_PASSWORD" "env:REDISCLI_AUTH" "-u redis://default:$BADPW@127.0.0.1:$REDIS_PORT")
	local way
	for way in "${ways[@]}"; do
		local -a pre=() opts=()
		case $way in
		env:*) pre=(env "${way#env:}=$BADPW") ;;
		*) read -ra opts <<<"$way" ;;
		esac
		for cmd in "${cmds[@]}"; do
			local -a c
			read -ra c <<<"$cmd"
			run --separate-stderr "${pre[@]}" "$RLOCK" "${opts[@]}" -v "${c[@]}"
			assert_equal "$status" 69
			all+="$output $stderr "
			[[ "$output $stderr" == *"WRONGPASS"* || "$output $stderr" == *"auth"* ]] ||
				fail "the failure should say it is about authentication ($way $cmd): $output $stderr"
		done
	done
	refute_secrets "$all"
	assert_equal "$(rcli DBSIZE)" 0
}

# ---------------------------------------------------------------------------
# tokens
# ---------------------------------------------------------------------------

@test "security: 60 acquires give 60 distinct lowercase UUIDv4 tokens" {
	local i tokens=$BATS_TEST_TMPDIR/tokens t bad=
	local v4='^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'
	: >"$tokens"
	for ((i = 0; i < 60; i++)); do
		t=$(rlock -u "$AURL" -n -t 60s acquire "tok-$((i % 20))-$i") || fail "acquire $i failed"
		echo "$t" >>"$tokens"
	done
	assert_equal "$(wc -l <"$tokens")" 60
	while read -r t; do
		[[ ${#t} -eq 36 && "$t" =~ $v4 ]] || bad+=" $t"
	done <"$tokens"
	[[ -z "$bad" ]] || fail "tokens that are not 36-char lowercase UUIDv4s:$bad"
	assert_equal "$(sort -u "$tokens" | wc -l)" 60
	# Each token is what the server stores for its lock.
	assert_equal "$(rcli HKEYS 'rlock:{tok-7-27}')" "$(sed -n 28p "$tokens")"
	# The tokens handed to exec'd commands are UUIDv4s too, and fresh each time.
	for ((i = 0; i < 5; i++)); do
		# shellcheck disable=SC2016 # expanded by the child's shell
		rlock -u "$AURL" exec job -c 'echo "$RLOCK_TOKEN"' >>"$BATS_TEST_TMPDIR/exec-tokens"
	done
	while read -r t; do
		[[ "$t" =~ $v4 ]] || fail "exec token is not a UUIDv4: $t"
	done <"$BATS_TEST_TMPDIR/exec-tokens"
	assert_equal "$(sort -u "$BATS_TEST_TMPDIR/exec-tokens" "$tokens" | wc -l)" 65
}

# ---------------------------------------------------------------------------
# file permissions
# ---------------------------------------------------------------------------

@test "security: a password file readable by anyone draws one warning, a private one none" {
	local f=$BATS_TEST_TMPDIR/pw-file
	printf '%s\n' "$PW" >"$f"
	chmod 644 "$f"
	run --separate-stderr rlock --password-file "$f" status job
	assert_equal "$status" 1
	assert_output --regexp '^job: free'
	assert_one_error_line
	[[ "$stderr" == "rlock: warning: --password-file $f holds a password and is readable by anyone"* ]] ||
		fail "unexpected warning: $stderr"
	[[ "$stderr" == *"chmod o-r"* ]] || fail "the warning should say how to fix it: $stderr"
	refute_secrets "$stderr"
	# The warning does not change what the command does.
	run --separate-stderr rlock --password-file "$f" -n acquire job
	assert_success
	assert_output --regexp "$UUID_RE"
	[[ "$stderr" == "rlock: warning: "* ]] || fail "expected the warning: $stderr"
	rcli DEL 'rlock:{job}' >/dev/null
	# -q silences it.
	run --separate-stderr rlock -q --password-file "$f" status job
	assert_equal "$status" 1
	assert_equal "$stderr" ""

	for mode in 600 640 400; do
		chmod "$mode" "$f"
		run --separate-stderr rlock --password-file "$f" status job
		assert_equal "$status" 1
		assert_output --regexp '^job: free'
		[[ -z "$stderr" ]] || fail "mode $mode should draw no warning: $stderr"
	done
}

@test "security: a config file holding a URL password readable by anyone draws a warning" {
	local f=$BATS_TEST_TMPDIR/rlock.conf
	printf 'url = %s\n' "$AURL" >"$f"
	chmod 644 "$f"
	run --separate-stderr env -u RLOCK_URL "$RLOCK" --config "$f" status job
	assert_equal "$status" 1
	assert_one_error_line
	[[ "$stderr" == "rlock: warning: the config file $f holds a password"* ]] || fail "unexpected warning: $stderr"
	refute_secrets "$stderr"
	chmod 600 "$f"
	run --separate-stderr env -u RLOCK_URL "$RLOCK" --config "$f" status job
	assert_equal "$status" 1
	assert_equal "$stderr" ""
}
