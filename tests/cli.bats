#!/usr/bin/env bats
# cli.bats: the command line itself: help, version, dispatch, option
# placement and forms, and every validation rule (exit 64, one line on
# stderr, nothing written to Redis).

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { default_setup; }
teardown() { cleanup_test; }

# ---------------------------------------------------------------------------
# help, version, dispatch
# ---------------------------------------------------------------------------

@test "cli: --help exits 0 and mentions every command" {
	run --separate-stderr rlock --help
	assert_success
	assert_output --partial acquire
	assert_output --partial release
	assert_output --partial extend
	assert_output --partial status
}

@test "cli: -h is the same as --help" {
	run --separate-stderr rlock -h
	assert_success
	assert_output --partial acquire
	assert_output --partial status
}

@test "cli: --version prints 'rlock 0.1.0' and exits 0" {
	run --separate-stderr rlock --version
	assert_success
	assert_output "rlock 0.1.0"
}

@test "cli: -V is the same as --version" {
	run --separate-stderr rlock -V
	assert_success
	assert_output "rlock 0.1.0"
}

@test "cli: help and version do not need Redis" {
	export RLOCK_URL="redis://127.0.0.1:$(free_port)"
	run --separate-stderr rlock --help
	assert_success
	run --separate-stderr rlock --version
	assert_success
	run --separate-stderr rlock acquire --help
	assert_success
}

@test "cli: acquire --help prints its usage and options to stdout" {
	run --separate-stderr rlock acquire --help
	assert_success
	assert_output --partial acquire
	assert_output --partial --ttl
	assert_output --partial --wait
	assert_output --partial --no-wait
	assert_output --partial --conflict-exit-code
	assert_output --partial --token
	assert_equal "$stderr" ""
	assert_equal "$(rcli DBSIZE)" 0
}

@test "cli: release --help mentions --token and --force" {
	run --separate-stderr rlock release --help
	assert_success
	assert_output --partial release
	assert_output --partial --token
	assert_output --partial --force
}

@test "cli: extend --help mentions --token and --ttl" {
	run --separate-stderr rlock extend --help
	assert_success
	assert_output --partial extend
	assert_output --partial --token
	assert_output --partial --ttl
}

@test "cli: status --help exits 0" {
	run --separate-stderr rlock status --help
	assert_success
	assert_output --partial status
}

@test "cli: an unknown command exits 64 and lists the commands" {
	run --separate-stderr rlock frobnicate job
	assert_usage_error
	# Later milestones add commands to the end of the list.
	[[ "${stderr_lines[0]}" == "rlock: unknown command 'frobnicate'; commands are: acquire, release, extend, status"* ]] ||
		fail "stderr: $stderr"
}

@test "cli: no command at all is a usage error" {
	run --separate-stderr rlock
	assert_usage_error
}

@test "cli: acquire without NAME exits 64" {
	run --separate-stderr rlock acquire
	assert_usage_error
}

@test "cli: release without NAME exits 64" {
	run --separate-stderr rlock release --token t
	assert_usage_error
}

@test "cli: extend without NAME exits 64" {
	run --separate-stderr rlock extend --token t
	assert_usage_error
}

@test "cli: acquire with an extra argument exits 64" {
	run --separate-stderr rlock acquire job other
	assert_usage_error
}

@test "cli: release with an extra argument exits 64" {
	run --separate-stderr rlock release --token t job other
	assert_usage_error
}

@test "cli: extend with an extra argument exits 64" {
	run --separate-stderr rlock extend --token t job other
	assert_usage_error
}

@test "cli: an unknown option exits 64" {
	run --separate-stderr rlock acquire --bogus job
	assert_usage_error
	run --separate-stderr rlock --bogus acquire job
	assert_usage_error
}

@test "cli: an option missing its value exits 64" {
	run --separate-stderr rlock acquire job --ttl
	assert_usage_error
	run --separate-stderr rlock acquire job -t
	assert_usage_error
}

# ---------------------------------------------------------------------------
# option placement and forms
# ---------------------------------------------------------------------------

@test "cli: -u before the command word is used" {
	export RLOCK_URL="redis://127.0.0.1:$(free_port)"
	run --separate-stderr rlock -u "redis://127.0.0.1:$REDIS_PORT" acquire job
	assert_success
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$output"
}

@test "cli: -u after the lock name is used" {
	export RLOCK_URL="redis://127.0.0.1:$(free_port)"
	run --separate-stderr rlock acquire job -u "redis://127.0.0.1:$REDIS_PORT"
	assert_success
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$output"
}

@test "cli: -u between the command word and the name is used" {
	export RLOCK_URL="redis://127.0.0.1:$(free_port)"
	run --separate-stderr rlock acquire -u "redis://127.0.0.1:$REDIS_PORT" job
	assert_success
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$output"
}

@test "cli: --url=VALUE works" {
	export RLOCK_URL="redis://127.0.0.1:$(free_port)"
	run --separate-stderr rlock --url="redis://127.0.0.1:$REDIS_PORT" acquire job
	assert_success
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$output"
}

@test "cli: --prefix works before and after the command word" {
	run --separate-stderr rlock --prefix one: acquire job
	assert_success
	run --separate-stderr rlock acquire job --prefix two:
	assert_success
	assert_equal "$(rcli EXISTS 'one:{job}')" 1
	assert_equal "$(rcli EXISTS 'two:{job}')" 1
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "cli: --ttl VALUE, --ttl=VALUE, -t VALUE and -tVALUE all set the TTL" {
	# (Not "i": bats's run changes a variable of that name.)
	local form num=0
	for form in "--ttl 10s" "--ttl=10s" "-t 10s" "-t10s"; do
		num=$((num + 1))
		# shellcheck disable=SC2086
		run --separate-stderr rlock acquire $form "job$num"
		assert_success
		assert_between "$(rcli PTTL "rlock:{job$num}")" 8000 10000 "PTTL for $form"
	done
}

@test "cli: lock options after the name work" {
	run --separate-stderr rlock acquire job -t 10s
	assert_success
	assert_between "$(rcli PTTL 'rlock:{job}')" 8000 10000 PTTL
}

@test "cli: --force does not apply to acquire" {
	run --separate-stderr rlock acquire --force job
	assert_usage_error
	assert_output ""
	[[ "$stderr" == *--force* ]]
	[[ "$stderr" == *acquire* ]]
}

@test "cli: --token does not apply to status" {
	run --separate-stderr rlock status --token abc job
	assert_usage_error
}

@test "cli: --ttl does not apply to release" {
	run --separate-stderr rlock release --ttl 5s --token abc job
	assert_usage_error
}

@test "cli: --force does not apply to extend" {
	run --separate-stderr rlock extend --force --token abc job
	assert_usage_error
}

@test "cli: --wait and --no-wait do not apply to release" {
	run --separate-stderr rlock release -n --token abc job
	assert_usage_error
	run --separate-stderr rlock release --wait 1s --token abc job
	assert_usage_error
}

@test "cli: --wait does not apply to status" {
	run --separate-stderr rlock status -w 1s job
	assert_usage_error
}

@test "cli: -E does not apply to extend" {
	run --separate-stderr rlock extend -E 3 --token abc job
	assert_usage_error
}

# ---------------------------------------------------------------------------
# durations
# ---------------------------------------------------------------------------

@test "cli: --ttl rejects garbage, empty, negative, zero and over 30 days" {
	local bad
	for bad in 5x "" -1 0 0s 0ms 31d abc 1.2.3 ms "5 s" 2592001 43201m 721h; do
		run --separate-stderr rlock acquire --ttl "$bad" job
		if [[ $status -ne 64 ]]; then
			fail "--ttl '$bad' exited $status, expected 64 (stderr: $stderr)"
		fi
		assert_usage_error
	done
}

@test "cli: --ttl=VALUE is validated too" {
	run --separate-stderr rlock acquire --ttl=5x job
	assert_usage_error
	run --separate-stderr rlock acquire --ttl= job
	assert_usage_error
}

@test "cli: --ttl accepts 250ms, 1.5s, a bare number of seconds, 2m and 1h" {
	# The TTL the script was given (a busy machine may take longer than
	# 250 ms to ask for the PTTL), and a PTTL no longer than it.
	local p
	run --separate-stderr rlock --json acquire --ttl 250ms a
	assert_success
	json_check 'd["ttl_ms"] == 250' <<<"$output"
	p=$(rcli PTTL 'rlock:{a}')
	[[ "$p" == -2 ]] || assert_between "$p" 1 250 "PTTL 250ms"
	run --separate-stderr rlock --json acquire --ttl 1.5s b
	assert_success
	json_check 'd["ttl_ms"] == 1500' <<<"$output"
	p=$(rcli PTTL 'rlock:{b}')
	[[ "$p" == -2 ]] || assert_between "$p" 1 1500 "PTTL 1.5s"
	run --separate-stderr rlock acquire --ttl 30 c
	assert_success
	assert_between "$(rcli PTTL 'rlock:{c}')" 28000 30000 "PTTL 30"
	run --separate-stderr rlock acquire --ttl 2m d
	assert_success
	assert_between "$(rcli PTTL 'rlock:{d}')" 118000 120000 "PTTL 2m"
	run --separate-stderr rlock acquire --ttl 1h e
	assert_success
	assert_between "$(rcli PTTL 'rlock:{e}')" 3598000 3600000 "PTTL 1h"
}

@test "cli: --ttl of exactly 30 days is accepted" {
	run --separate-stderr rlock acquire --ttl 720h job
	assert_success
	assert_between "$(rcli PTTL 'rlock:{job}')" 2591990000 2592000000 "PTTL 720h"
}

@test "cli: --wait rejects garbage, empty and negative values" {
	local bad
	for bad in 5x "" -1 abc 1s2; do
		run --separate-stderr rlock acquire --wait "$bad" job
		if [[ $status -ne 64 ]]; then
			fail "--wait '$bad' exited $status, expected 64 (stderr: $stderr)"
		fi
		assert_usage_error
	done
}

@test "cli: --wait 0 is accepted" {
	run --separate-stderr rlock acquire --wait 0 job
	assert_success
	assert_output --regexp "$UUID_RE"
}

@test "cli: extend --ttl is validated like acquire --ttl" {
	local bad
	for bad in 5x "" -1 0 2592001; do
		run --separate-stderr rlock extend --token abc --ttl "$bad" job
		if [[ $status -ne 64 ]]; then
			fail "extend --ttl '$bad' exited $status, expected 64 (stderr: $stderr)"
		fi
		assert_usage_error
	done
}

@test "cli: --timeout and --connect-timeout reject zero, negative and garbage" {
	local bad
	for bad in 0 -1 5x ""; do
		run --separate-stderr rlock --timeout "$bad" acquire job
		if [[ $status -ne 64 ]]; then
			fail "--timeout '$bad' exited $status, expected 64"
		fi
		assert_usage_error
		run --separate-stderr rlock --connect-timeout "$bad" acquire job
		if [[ $status -ne 64 ]]; then
			fail "--connect-timeout '$bad' exited $status, expected 64"
		fi
		assert_usage_error
	done
}

# ---------------------------------------------------------------------------
# names
# ---------------------------------------------------------------------------

@test "cli: a name with a space is rejected, naming the byte" {
	run --separate-stderr rlock acquire "a b"
	assert_usage_error
	[[ "$stderr" =~ 0x20|space ]]
}

@test "cli: a name with a newline is rejected with a one-line message" {
	run --separate-stderr rlock acquire $'a\nb'
	assert_usage_error
}

@test "cli: names with a tab or a control character are rejected" {
	local bad
	for bad in $'a\tb' $'a\x01b' $'a\x7fb' $'a\rb' $'a\x1bb'; do
		run --separate-stderr rlock acquire "$bad"
		if [[ $status -ne 64 ]]; then
			fail "name $(printf %q "$bad") exited $status, expected 64"
		fi
		assert_usage_error
	done
}

@test "cli: names with braces are rejected" {
	run --separate-stderr rlock acquire "a{b"
	assert_usage_error
	run --separate-stderr rlock acquire "a}b"
	assert_usage_error
	run --separate-stderr rlock acquire "{job}"
	assert_usage_error
}

@test "cli: an empty name is rejected" {
	run --separate-stderr rlock acquire ""
	assert_usage_error
}

@test "cli: a 256-byte name is rejected and a 255-byte name accepted" {
	local n255 n256
	n255=$(printf 'x%.0s' {1..255})
	n256="${n255}x"
	run --separate-stderr rlock acquire "$n256"
	assert_usage_error
	run --separate-stderr rlock acquire "$n255"
	assert_success
	assert_equal "$(rcli EXISTS "rlock:{$n255}")" 1
}

@test "cli: a name that is not valid UTF-8 is rejected" {
	run --separate-stderr rlock acquire $'\xff'
	assert_usage_error
	run --separate-stderr rlock acquire $'job\xc3'
	assert_usage_error
	run --separate-stderr rlock acquire $'a\xc0\xafb'
	assert_usage_error
}

@test "cli: a UTF-8 name like zürich is accepted" {
	run --separate-stderr rlock acquire "zürich"
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{zürich}')" 1
}

@test "cli: names are validated for release, extend and status too" {
	run --separate-stderr rlock release --token abc "a b"
	assert_usage_error
	run --separate-stderr rlock extend --token abc "a{b"
	assert_usage_error
	run --separate-stderr rlock status ok "a b"
	assert_usage_error
	run --separate-stderr rlock release --force ""
	assert_usage_error
}

# ---------------------------------------------------------------------------
# URLs
# ---------------------------------------------------------------------------

@test "cli: URLs with a bad scheme are rejected" {
	local bad
	# (An empty -u is no -u at all: see inputs.bats.)
	for bad in "http://127.0.0.1:$REDIS_PORT" "127.0.0.1:$REDIS_PORT" "redis:/127.0.0.1" " " "foo"; do
		run --separate-stderr rlock -u "$bad" acquire job
		if [[ $status -ne 64 ]]; then
			fail "URL '$bad' exited $status, expected 64"
		fi
		assert_usage_error
	done
}

@test "cli: URLs with a bad port are rejected" {
	local bad
	for bad in "redis://127.0.0.1:notaport" "redis://127.0.0.1:65536" "redis://127.0.0.1:99999" "redis://127.0.0.1:-1" "redis://127.0.0.1:0"; do
		run --separate-stderr rlock -u "$bad" acquire job
		if [[ $status -ne 64 ]]; then
			fail "URL '$bad' exited $status, expected 64"
		fi
		assert_usage_error
	done
}

@test "cli: URLs with a bad db are rejected" {
	local bad
	for bad in "redis://127.0.0.1:$REDIS_PORT/abc" "redis://127.0.0.1:$REDIS_PORT/-1" "redis://127.0.0.1:$REDIS_PORT/1x" \
		"unix://$REDIS_SOCK?db=x" "unix://$REDIS_SOCK?db=-1"; do
		run --separate-stderr rlock -u "$bad" acquire job
		if [[ $status -ne 64 ]]; then
			fail "URL '$bad' exited $status, expected 64"
		fi
		assert_usage_error
	done
}

@test "cli: a bad URL in RLOCK_URL is a usage error too" {
	export RLOCK_URL="http://127.0.0.1:$REDIS_PORT"
	run --separate-stderr rlock acquire job
	assert_usage_error
}

# ---------------------------------------------------------------------------
# -E and --token
# ---------------------------------------------------------------------------

@test "cli: -E outside 0..255 or not a number is rejected" {
	local bad
	for bad in 256 -1 x "" 1.5 1000; do
		run --separate-stderr rlock acquire -E "$bad" job
		if [[ $status -ne 64 ]]; then
			fail "-E '$bad' exited $status, expected 64"
		fi
		assert_usage_error
	done
	run --separate-stderr rlock acquire --conflict-exit-code 300 job
	assert_usage_error
}

@test "cli: -E 255 is accepted and used for a busy lock" {
	run --separate-stderr rlock acquire job
	assert_success
	run --separate-stderr rlock acquire -n -E 255 job
	assert_equal "$status" 255
	assert_equal "$stderr" ""
}

@test "cli: --token with whitespace or over 255 bytes is rejected" {
	local bad long
	long=$(printf 't%.0s' {1..256})
	# (An empty --token is no --token at all: see inputs.bats.)
	for bad in "a b" $'a\tb' $'a\nb' "$long"; do
		run --separate-stderr rlock acquire --token "$bad" job
		if [[ $status -ne 64 ]]; then
			fail "--token $(printf %q "$bad") exited $status, expected 64"
		fi
		assert_usage_error
	done
}

@test "cli: a bad --token is rejected by release and extend too" {
	run --separate-stderr rlock release --token "a b" job
	assert_usage_error
	run --separate-stderr rlock extend --token "" job
	assert_usage_error
}
