#!/usr/bin/env bats
# inputs.bats: every setting gets the same checks wherever it comes from (a
# flag, the environment, the config file), an empty value means unset from
# every source, and an error reply to the blocking read of a waiter (a
# wrong-typed wake list) is an error that backs off and ends in one clear
# line, not a spin.

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { file_server_setup; }
teardown() { test_teardown; }

# The holders of a --limit lock that status lists.
holders() {
	rlock status "$1" | grep -c '^  held by ' || true
}

# ---------------------------------------------------------------------------
# RLOCK_TOKEN: checked as --token is
# ---------------------------------------------------------------------------

@test "inputs: an RLOCK_TOKEN of 256 bytes is refused as --token is: 64, one line naming RLOCK_TOKEN, the semaphore intact" {
	rlock acquire --limit 2 sem >/dev/null
	rlock acquire --limit 2 sem >/dev/null
	assert_equal "$(holders sem)" 2
	local mark long
	long=$(printf 'x%.0s' {1..256})
	mark=$(rcli HKEYS 'rlock:{sem}')
	run --separate-stderr rlock release --token "$long" sem
	assert_equal "$status" 64
	assert_one_error_line
	RLOCK_TOKEN=$long run --separate-stderr rlock release sem
	assert_equal "$status" 64
	assert_one_error_line
	[[ "$stderr" == "rlock: RLOCK_TOKEN: "* ]] || fail "the line should name RLOCK_TOKEN: $stderr"
	assert_equal "$(rcli HKEYS 'rlock:{sem}')" "$mark"
	assert_equal "$(holders sem)" 2
	# extend too.
	RLOCK_TOKEN=$long run --separate-stderr rlock extend sem
	assert_equal "$status" 64
	assert_one_error_line
	[[ "$stderr" == "rlock: RLOCK_TOKEN: "* ]] || fail "the line should name RLOCK_TOKEN: $stderr"
	# A third holder is still refused.
	run --separate-stderr rlock acquire --limit 2 -n sem
	assert_equal "$status" 1
}

@test "inputs: a RLOCK_TOKEN over 255 bytes is refused (64), not cut to 255" {
	local t255 t256
	t255=$(printf 't%.0s' {1..255})
	t256="${t255}x"
	run --separate-stderr rlock acquire --token "$t255" job
	assert_success
	RLOCK_TOKEN=$t256 run --separate-stderr rlock release job
	assert_equal "$status" 64
	assert_one_error_line
	[[ "$stderr" == "rlock: RLOCK_TOKEN: "*255* ]] || fail "the line should name RLOCK_TOKEN and the bound: $stderr"
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t255"
	RLOCK_TOKEN=$t256 run --separate-stderr rlock extend job
	assert_equal "$status" 64
	# The right one still releases.
	RLOCK_TOKEN=$t255 run --separate-stderr rlock release job
	assert_success
}

@test "inputs: a RLOCK_TOKEN with whitespace or a control byte is refused, naming RLOCK_TOKEN" {
	local bad
	rlock acquire --token good job >/dev/null
	for bad in "a b" $'a\tb' $'a\x01b'; do
		RLOCK_TOKEN=$bad run --separate-stderr rlock release job
		assert_equal "$status" 64
		assert_one_error_line
		[[ "$stderr" == "rlock: RLOCK_TOKEN: "* ]] || fail "the line should name RLOCK_TOKEN: $stderr"
	done
	assert_equal "$(rcli HKEYS 'rlock:{job}')" good
}

# ---------------------------------------------------------------------------
# The prefix: an empty one is the default; checked as --prefix is
# ---------------------------------------------------------------------------

@test "inputs: an empty RLOCK_PREFIX is the default prefix, and other programs' keys stay out of reach" {
	rcli SET '{cart}' 'not a lock' >/dev/null
	RLOCK_PREFIX= run --separate-stderr rlock acquire -n job
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 1
	assert_equal "$(rcli EXISTS '{job}')" 0
	RLOCK_PREFIX= run --separate-stderr rlock status cart
	assert_equal "$status" 1
	RLOCK_PREFIX= run --separate-stderr rlock release --force cart
	assert_equal "$(rcli GET '{cart}')" 'not a lock'
}

@test "inputs: an empty --prefix and an empty prefix in the config file are the default prefix too" {
	run --separate-stderr rlock --prefix '' acquire -n a
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{a}')" 1
	run --separate-stderr rlock --prefix= acquire -n b
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{b}')" 1
	printf 'prefix =\n' >rlock.conf
	run --separate-stderr rlock --config rlock.conf acquire -n c
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{c}')" 1
	# Empty is unset: the next source in line wins, as if the flag were not there.
	RLOCK_PREFIX=env: run --separate-stderr rlock --prefix '' acquire -n d
	assert_success
	assert_equal "$(rcli EXISTS 'env:{d}')" 1
	printf 'prefix = file:\n' >rlock.conf
	RLOCK_PREFIX= run --separate-stderr rlock --config rlock.conf acquire -n e
	assert_success
	assert_equal "$(rcli EXISTS 'file:{e}')" 1
	assert_equal "$(rcli DBSIZE)" "$(rcli KEYS '*' | grep -c '^\(rlock\|env\|file\):{')"
}

@test "inputs: a bad RLOCK_PREFIX is refused as --prefix is, naming RLOCK_PREFIX" {
	run --separate-stderr rlock --prefix 'a{b' acquire job
	assert_usage_error
	RLOCK_PREFIX='a{b' run --separate-stderr rlock acquire job
	assert_usage_error
	[[ "$stderr" == "rlock: RLOCK_PREFIX: "* ]] || fail "the line should name RLOCK_PREFIX: $stderr"
	printf 'prefix = a b\n' >rlock.conf
	run --separate-stderr rlock --config rlock.conf acquire job
	assert_usage_error
	[[ "$stderr" == "rlock: rlock.conf:1: "* ]] || fail "the line should name the file and line: $stderr"
}

# ---------------------------------------------------------------------------
# Every other setting: empty is unset, whatever the source
# ---------------------------------------------------------------------------

@test "inputs: an empty URL, token, file or word from a flag or the config file means unset" {
	# -u '' falls back to RLOCK_URL; --token '' to a random token.
	run --separate-stderr rlock -u '' acquire --token '' -n a
	assert_success
	assert_output --regexp "$UUID_RE"
	cat >rlock.conf <<-EOF
	url =
	tls-ca =
	tls-cert =
	tls-key =
	tls-server-name =
	password-file =
	on-lost =
	leftovers =
	foreground =
	no-history =
	EOF
	run --separate-stderr rlock --config rlock.conf exec --min-hold 0 -n b -- true
	assert_success
	assert_equal "$stderr" ""
	run --separate-stderr rlock --tls-ca '' --password-file '' --on-lost '' exec --leftovers '' --min-hold 0 -n c -- true
	assert_success
	assert_equal "$stderr" ""
	# An empty RLOCK_URL beside a url in the file: the file's.
	printf 'url = %s\n' "$RLOCK_URL" >rlock.conf
	RLOCK_URL= run --separate-stderr rlock --config rlock.conf acquire -n d
	assert_success
	# --config '' is unset too: RLOCK_CONFIG's file is read.
	printf 'prefix = cfg:\n' >rlock.conf
	RLOCK_CONFIG=rlock.conf run --separate-stderr rlock --config '' acquire -n e
	assert_success
	assert_equal "$(rcli EXISTS 'cfg:{e}')" 1
}

@test "inputs: an empty duration or number is a usage error from the config file as from the flag" {
	local key
	for key in ttl wait timeout connect-timeout kill-after conflict-exit-code history-length; do
		printf '%s =\n' "$key" >rlock.conf
		run --separate-stderr rlock --config rlock.conf acquire job
		assert_usage_error
		[[ "$stderr" == "rlock: rlock.conf:1: "* ]] || fail "$key: the line should name the file and line: $stderr"
		run --separate-stderr rlock "--$key=" acquire job
		assert_usage_error
	done
}

# ---------------------------------------------------------------------------
# An error reply to the blocking read
# ---------------------------------------------------------------------------

# A lock held by someone else whose wake list is a string.
break_wake() {
	rcli EVAL "$FAKE_HOLD" 1 "rlock:{$1}" tok "$2" >/dev/null
	rcli SET "rlock:{$1}:wake" x >/dev/null
}

@test "inputs: a wrong-typed wake list backs off (under 50 BLPOPs in 2 s) and ends in one line naming the key and the remedy, 69" {
	break_wake w 4000
	local blpops scripts
	run --separate-stderr rlock -u "unix://$REDIS_SOCK" acquire -w 2s w
	blpops=$(cmd_calls blpop)
	scripts=$(cmd_calls evalsha eval)
	assert_equal "$status" 69
	assert_equal "$output" ""
	assert_one_error_line
	[[ "$stderr" == *"rlock:{w}:wake"* ]] || fail "the line should name the key: $stderr"
	[[ "$stderr" == *"holds a string, not a list"* ]] || fail "the line should say what is wrong: $stderr"
	[[ "$stderr" == *"rlock release --force w"* && "$stderr" == *"DEL"* ]] || fail "the line should give the remedy: $stderr"
	refute_contains WRONGTYPE "$stderr"
	refute_contains user_script "$stderr"
	assert_between "$blpops" 1 49 "BLPOPs in 2 s"
	assert_between "$scripts" 1 60 "scripts in 2 s"
	# The lock is still the holder's, the wake list untouched.
	assert_equal "$(rcli HKEYS 'rlock:{w}')" tok
	assert_equal "$(rcli TYPE 'rlock:{w}:wake')" string
}

@test "inputs: with -v the blocking read's error is said once, with the backoff" {
	break_wake w 4000
	run --separate-stderr rlock -v acquire -w 1500ms w
	assert_equal "$status" 69
	local said
	said=$(grep -c 'rlock:{w}:wake' <<<"$stderr" || true)
	# Once as it happens (verbose), once as the final error.
	assert_equal "$said" 2
	refute_contains WRONGTYPE "$stderr"
}

@test "inputs: a waiter on a wrong-typed wake list still gets the lock when it expires" {
	break_wake w 300
	run --separate-stderr rlock acquire -w 5s w
	assert_success
	assert_output --regexp "$UUID_RE"
	assert_equal "$(rcli HKEYS 'rlock:{w}')" "$output"
}

@test "inputs: a wrong-typed own wake list (wake:TOKEN) is named the same way" {
	rcli EVAL "$FAKE_HOLD" 1 'rlock:{w}' tok 4000 >/dev/null
	rcli HSET 'rlock:{w}:wake:mine' a b >/dev/null
	run --separate-stderr rlock acquire --token mine -w 1s w
	assert_equal "$status" 69
	assert_one_error_line
	[[ "$stderr" == *"rlock:{w}:wake:mine"*"holds a hash, not a list"* ]] || fail "the line should name the key and its type: $stderr"
	assert_between "$(cmd_calls blpop)" 1 49 "BLPOPs in 1 s"
}

@test "inputs: in quorum mode a wrong-typed wake list backs off too and ends in the same line" {
	start_redis_as Q2
	start_redis_as Q3
	local u
	for u in "$REDIS_SOCK" "$Q2_SOCK" "$Q3_SOCK"; do
		redis-cli -s "$u" EVAL "$FAKE_HOLD" 1 'rlock:{w}' tok 4000 >/dev/null
		redis-cli -s "$u" SET 'rlock:{w}:wake' x >/dev/null
	done
	run --separate-stderr rlock -u "$RLOCK_URL" -u "$Q2_URL" -u "$Q3_URL" acquire -w 2s w
	assert_equal "$status" 69
	assert_one_error_line
	[[ "$stderr" == *"rlock:{w}:wake"*"holds a string, not a list"* ]] || fail "the line should name the key: $stderr"
	refute_contains WRONGTYPE "$stderr"
	assert_between "$(cmd_calls blpop)" 1 49 "BLPOPs in 2 s"
}
