#!/usr/bin/env bats
# hostile.bats: a table-driven sweep of bad input. One test per family of
# bad input (over-long names, binary bytes, huge and odd numbers, malformed
# durations, odd URLs, junk config files, awkward passwords); each test loops
# over its table and checks, for every case, the documented exit status (64
# for usage, 69 for a valid URL that cannot be reached), exactly one stderr
# line starting "rlock: ", nothing on stdout, no crash or sanitizer report,
# and no key left on the server. Every failing case of a table is reported.

load helpers
load extra-helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { default_setup; umask 077; }
teardown() { cleanup_test; }

# Every way a NAME reaches rlock. Each is run with the name appended (or, for
# exec, the name and a harmless command).
name_commands() {
	local name=$1
	sweep_case 64 -n acquire "$name"
	sweep_case 64 exec -n "$name" -- true
	sweep_case 64 exec -n "$name" -c true
	sweep_case 64 release --token t "$name"
	sweep_case 64 release --force "$name"
	sweep_case 64 extend --token t "$name"
	sweep_case 64 status "$name"
	sweep_case 64 status ok-name "$name"
	sweep_case 64 --json status "$name"
}

@test "hostile: over-long lock names are usage errors for every command" {
	local len name
	sweep_reset
	for len in 256 257 1000 10000; do
		name=$(head -c "$len" /dev/zero | tr '\0' a)
		name_commands "$name"
		# Multi-byte characters: 86 x 3 bytes = 258 bytes but 86 characters.
		name=$(for ((i = 0; i < len / 3 + 1; i++)); do printf '\xe2\x82\xac'; done)
		name_commands "$name"
	done
	sweep_finish
	# The limit itself is allowed (the sweep is not rejecting everything).
	name=$(head -c 255 /dev/zero | tr '\0' a)
	run --separate-stderr rlock -n acquire "$name"
	assert_success
	assert_output --regexp "$UUID_RE"
	run rlock release --token "$output" "$name"
	assert_success
}

@test "hostile: control bytes, DEL, 0xff and invalid UTF-8 in names are usage errors" {
	local b names=() name
	sweep_reset
	# Every C0 control byte (NUL cannot be passed in argv), at the start,
	# in the middle and at the end of a name.
	for ((b = 1; b <= 0x1f; b++)); do
		printf -v name '%b' "\\x$(printf '%02x' "$b")"
		names+=("$name" "a${name}b" "ab${name}")
	done
	names+=(
		$'\x7f' $'a\x7fb'                 # DEL
		$'\xff' $'a\xffb' $'\xfe'         # never valid in UTF-8
		$'a\x80b'                         # lone continuation byte
		$'a\xc3\x28b'                     # bad continuation
		$'a\xe2\x82' $'a\xf0\x9f\x98'     # truncated sequences at the end
		$'a\xc0\xafb' $'a\xe0\x80\xafb'   # overlong encodings of '/'
		$'a\xed\xa0\x80b'                 # UTF-16 surrogate
		$'a\xf4\x90\x80\x80b'             # beyond U+10FFFF
		$'a\xf8\x88\x80\x80\x80b'         # 5-byte form
		$'a\xc2\x85b'                     # U+0085, a C1 control / next line
		$'a\xc2\xa0b' $'a\xe3\x80\x80b'   # non-breaking and ideographic spaces
		' ' 'a b' 'a{b' 'a}b' '{job}'     # whitespace and braces
		''                                # empty
	)
	# Every command with a name of each kind, and every name through the
	# two doors a name comes in by (a command's one name, and a status's
	# list): one check of a name serves every command, and 1,100 runs of
	# the whole product cost the sanitizers' run four minutes.
	for name in $'\x01' $'a\x1bb' $'ab\x1f' $'a\x7fb' $'a\xffb' \
	    $'a\xc0\xafb' $'a\xed\xa0\x80b' $'a\xc2\x85b' 'a b' '{job}' ''; do
		name_commands "$name"
	done
	for name in "${names[@]}"; do
		sweep_case 64 -n acquire "$name"
		sweep_case 64 status ok-name "$name"
	done
	sweep_finish
}

@test "hostile: huge, negative and fractional numbers are usage errors" {
	local v
	sweep_reset
	for v in 99999999999999999999 18446744073709551617 4294967297 256 -1 -0.5 1.5 1e2 0x1 '' abc 1x; do
		sweep_case 64 -E "$v" -n acquire job
		sweep_case 64 exec -E "$v" -n job -- true
		sweep_case 64 --conflict-exit-code="$v" -n acquire job
	done
	for v in -1 1e9 1001 99999999999999999999 1.5 '' abc 0x2; do
		sweep_case 64 --wait-replicas "$v" -n acquire job
		sweep_case 64 --wait-replicas="$v" exec -n job -- true
	done
	for v in 99999999999999999999s 99999999999999999999 99999999999999999999ms 9223372036854775807ms 721h 43201m 2592001 2592000001ms 1e309; do
		sweep_case 64 -t "$v" -n acquire job
		sweep_case 64 exec -t "$v" -n job -- true
		sweep_case 64 -t "$v" extend --token t job
	done
	for v in 99999999999999999999s 9223372036854775807ms 1e309; do
		sweep_case 64 -w "$v" -n acquire job
		sweep_case 64 --timeout "$v" status job
		sweep_case 64 --connect-timeout "$v" status job
	done
	sweep_finish
}

@test "hostile: malformed durations are usage errors for every duration option" {
	local opt d
	sweep_reset
	for opt in --ttl -w --timeout --connect-timeout --heartbeat --kill-after --min-hold; do
		for d in 1e3 0x10 inf nan -inf '1 s' '' -0 -1 -1s ' 1' '1s ' 1.5.5 . s ms 1w 1sec 5x '1,5s' '+-1' $'1\n' $'\x01'; do
			sweep_case 64 exec "$opt" "$d" -n job -- true
			sweep_case 64 exec "$opt=$d" -n job -- true
		done
	done
	# Zero is an error for a TTL and the time-outs (--wait accepts it).
	for opt in --ttl --timeout --connect-timeout; do
		sweep_case 64 "$opt" 0 -n acquire job
		sweep_case 64 "$opt" 0ms -n acquire job
	done
	sweep_finish
}

@test "hostile: malformed URLs are usage errors, from -u and from RLOCK_URL" {
	local u
	local urls=(
		'redis://h:0' 'redis://h:65536' 'redis://h:-1' 'redis://h:99999999999999999999'
		'redis://h:' 'redis://h:x' 'redis://h:6379x'
		'redis://[::1' 'redis://[::1]x' 'redis://[zz]:1' 'redis://::1:6379'
		'redis://%zz@h' 'redis://u:%zz@h' 'redis://u:%4@h' 'redis://%@h'
		'redis://h:6379/x' 'redis://h:6379/-1' 'redis://h:6379/99999999999' 'redis://h:6379/1/2'
		'unix://relative' 'unix:relative' 'unix://' 'unix:///tmp/s?db=x' 'unix:///tmp/s?db=-1'
		'rediss://' 'redis://' 'redis:' 'redis' '' '://h' 'http://h' 'REDIS-X://h'
		'redis-sentinel://h/' 'redis-sentinel://' 'redis-sentinel://h:1/' 'redis-sentinel://h:0/m'
		$'redis://h\x01:1' 'redis://h h:1'
	)
	# (A trailing newline is whitespace, which separates URLs by design:
	# RLOCK_URL=$(cat urls.txt) must work.  So $'redis://h:1\n' is one
	# well-formed URL, not a usage error.)
	sweep_reset
	for u in "${urls[@]}"; do
		# An empty URL counts as unset, from a flag as from the
		# environment (see inputs.bats).
		[[ -n "$u" ]] || continue
		sweep_case 64 -u "$u" -n acquire job
		sweep_case 64 --url="$u" status job
		RLOCK_URL=$u SWEEP_NOTE="RLOCK_URL=$(printf '%q' "$u")" sweep_case 64 -n acquire job
	done
	sweep_finish
}

@test "hostile: well-formed URLs nobody answers exit 69 with one line and no password" {
	local port u
	port=$(free_port)
	local urls=(
		"redis://127.0.0.1:$port"
		"redis://127.0.0.1:$port/15"
		"redis://[::1]:$port"
		"redis://:Hidden-Pw-1@127.0.0.1:$port"
		"redis://alice:Hidden-Pw-1@127.0.0.1:$port"
		"redis://alice:Hidden%40Pw-1@127.0.0.1:$port"
		"rediss://127.0.0.1:$port"
		"unix://$BATS_TEST_TMPDIR/no-such-dir/redis.sock"
		"unix://$BATS_TEST_TMPDIR/no-such-dir/redis.sock?db=3"
		"redis-sentinel://127.0.0.1:$port/mymaster"
	)
	sweep_reset
	# The password must not show in the message of any case.
	no_password_shown() {
		if grep -q Hidden "$BATS_TEST_TMPDIR/sweep.err"; then
			SWEEP_FAILS+=("a password shows in the message for $u: $(cat "$BATS_TEST_TMPDIR/sweep.err")")
		fi
	}
	for u in "${urls[@]}"; do
		sweep_case 69 -u "$u" -n acquire job
		no_password_shown
		sweep_case 69 -u "$u" exec -n job -- true
		no_password_shown
		sweep_case 69 -u "$u" status job
		no_password_shown
		RLOCK_URL=$u SWEEP_NOTE="RLOCK_URL=$u" sweep_case 69 release --token t job
		no_password_shown
	done
	sweep_finish
}

@test "hostile: config files with binary junk, a NUL byte or a 1 MB line are usage errors" {
	local d=$BATS_TEST_TMPDIR f
	# 4 KB of fixed pseudo-random bytes, and every byte value in order.
	python3 -c 'import random,sys; r=random.Random(7); sys.stdout.buffer.write(bytes(r.randrange(256) for _ in range(4096)))' >"$d/junk-random"
	python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 4)' >"$d/junk-all-bytes"
	printf 'ttl = 5s\n\x01\x02\x03\n' >"$d/junk-line"
	printf '\xff\xfe = 1\n' >"$d/junk-key"
	printf 'ttl = 5\xff\n' >"$d/junk-value"
	# A NUL byte anywhere: inside a value, before a key, at the end of a
	# line, alone on a line. The file is not text; rlock must not read it
	# as if the line stopped at the NUL.
	printf 'ttl = 5\x00s\n' >"$d/nul-in-value"
	printf 'ttl = 5\x009999\n' >"$d/nul-before-digits"
	printf '\x00ttl = 5s\n' >"$d/nul-at-start"
	printf 'ttl = 5s\x00\n' >"$d/nul-at-end"
	printf 'ttl = 5s\n\x00\n' >"$d/nul-line"
	printf '\x00' >"$d/nul-only"
	# 1 MB lines.
	{ printf 'ttl = '; head -c 1048576 /dev/zero | tr '\0' 1; printf '\n'; } >"$d/mb-value"
	{ head -c 1048576 /dev/zero | tr '\0' x; printf '\n'; } >"$d/mb-word"
	{ head -c 1048576 /dev/zero | tr '\0' x; printf ' = 1\n'; } >"$d/mb-key"
	{ printf 'prefix = '; head -c 1048576 /dev/zero | tr '\0' p; printf '\n'; } >"$d/mb-prefix"
	sweep_reset
	for f in junk-random junk-all-bytes junk-line junk-key junk-value \
		nul-in-value nul-before-digits nul-at-start nul-at-end nul-line nul-only \
		mb-value mb-word mb-key mb-prefix; do
		sweep_case 64 -u "$RLOCK_URL" --config "$d/$f" -n acquire job
		sweep_case 64 -u "$RLOCK_URL" --config "$d/$f" status job
		RLOCK_CONFIG="$d/$f" SWEEP_NOTE="RLOCK_CONFIG=$f" sweep_case 64 -u "$RLOCK_URL" exec -n job -- true
	done
	sweep_finish

	# Not everything long is wrong: a 4000-byte comment line (under the
	# 4096-byte limit on a line) before a valid setting is read past, and
	# the setting after it applies.
	{ printf '# '; head -c 4000 /dev/zero | tr '\0' x; printf '\nttl = 7s\n'; } >"$d/mb-comment"
	run --separate-stderr rlock -u "$RLOCK_URL" --config "$d/mb-comment" -n acquire job
	assert_success
	assert_equal "$stderr" ""
	assert_between "$(rcli PTTL 'rlock:{job}')" 5000 7000 "PTTL after ttl = 7s"
	rcli FLUSHALL >/dev/null
}

@test "hostile: a password with spaces and quotes read from --password-file authenticates" {
	local pw d=$BATS_TEST_TMPDIR f token
	pw='a b"c'"'"'d'
	start_redis_auth_as PWS "$pw"
	local url="redis://127.0.0.1:$PWS_PORT"
	printf '%s\n' "$pw" >"$d/pw-newline"
	printf '%s' "$pw" >"$d/pw-bare"
	printf '%s\r\n' "$pw" >"$d/pw-crlf"
	printf '%s\nsecond line is ignored\n' "$pw" >"$d/pw-two-lines"
	for f in pw-newline pw-bare pw-crlf pw-two-lines; do
		run --separate-stderr rlock -u "$url" --password-file "$d/$f" -n acquire "job-$f"
		assert_success
		assert_equal "$stderr" ""
		assert_output --regexp "$UUID_RE"
		token=$output
		assert_equal "$(RCLI_AUTH=$pw rcli_as PWS HKEYS "rlock:{job-$f}")" "$token"
		run --separate-stderr rlock -u "$url" --password-file "$d/$f" release --token "$token" "job-$f"
		assert_success
		assert_equal "$(RCLI_AUTH=$pw rcli_as PWS EXISTS "rlock:{job-$f}")" 0
	done

	# Near misses are refused (69, one line, no password shown, no lock):
	# surrounding spaces are part of the password, and so is a missing quote.
	printf ' %s \n' "$pw" >"$d/pw-padded"
	printf '%s\n' 'a b"cd' >"$d/pw-no-quote"
	printf '%s\n' "'$pw'" >"$d/pw-shell-quoted"
	sweep_reset
	for f in pw-padded pw-no-quote pw-shell-quoted; do
		sweep_case 69 -u "$url" --password-file "$d/$f" -n acquire job-bad
		if grep -qF 'b"c' "$BATS_TEST_TMPDIR/sweep.err"; then
			SWEEP_FAILS+=("the password shows in the message for $f: $(cat "$BATS_TEST_TMPDIR/sweep.err")")
		fi
	done
	sweep_finish
	assert_equal "$(RCLI_AUTH=$pw rcli_as PWS --raw KEYS '*job-bad*')" ""
}
