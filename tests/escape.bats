#!/usr/bin/env bats
# escape.bats: whatever came from outside (Redis fields and keys, server
# and URL texts) reaches a terminal, a log or a scrape with its control
# characters and invalid UTF-8 escaped visibly (\xHH, \uHHHH); JSON keeps
# its own escaping; a key whose name rlock could not have written is
# reported in one line, not printed; and names with invisible format or
# bidirectional control characters are refused, naming the code point.

load helpers
load extra-helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { file_server_setup; }
teardown() { test_teardown; }

EVIL=$'\e[2J\e[31mEVIL\a'
# How it must read once escaped.
SHOWN='\x1b[2J\x1b[31mEVIL\x07'

# Fail if the text in $1 holds a byte that could steer a terminal: C0
# controls but newline, DEL, and bytes that are not UTF-8 (0xff, 0x9b...).
refute_raw() {
	local what=${2:-text}
	if printf '%s' "$1" | LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]'; then
		batslib_print_kv_single_or_multi 8 "$what" "$(printf '%s' "$1" | od -c | head -20)" |
			batslib_decorate "$what holds raw control characters" | fail
	fi
	if ! printf '%s' "$1" | iconv -f UTF-8 -t UTF-8 >/dev/null 2>&1; then
		batslib_print_kv_single_or_multi 8 "$what" "$(printf '%s' "$1" | od -c | head -20)" |
			batslib_decorate "$what is not valid UTF-8" | fail
	fi
}

# Hold the lock esc with a command whose argument is $EVIL (in the
# background, until teardown).
hold_evil() {
	bg_start HOLDER "$RLOCK" exec --record full esc -- sh -c 'sleep 30' "$EVIL"
	local i
	for ((i = 0; i < 250; i++)); do
		[[ "$(rcli EXISTS 'rlock:{esc}')" == 1 ]] && return 0
		sleep 0.02
	done
	fail "the lock esc was never held"
}

# ------------------------------------------------------------- text output

@test "escape: status shows a holder's command with its escapes visible (NAME and listing)" {
	hold_evil
	run --separate-stderr rlock status esc
	assert_success
	refute_raw "$output" stdout
	assert_output --partial "$SHOWN"
	run --separate-stderr rlock status
	assert_success
	refute_raw "$output" stdout
	assert_output --partial "$SHOWN"
	# JSON keeps the bytes, escaped its own way.
	rlock status --format json esc | json_check 'd["command"].endswith("\x1b[2J\x1b[31mEVIL\x07")'
}

@test "escape: a holder's host and user fields, invalid UTF-8 and C1 controls included, are escaped in text and valid in JSON" {
	hold_evil
	# The holder's hash: write outside bytes into its host field.
	assert_equal "$(rcli HLEN 'rlock:{esc}')" 1
	set_info_field 'rlock:{esc}' host $'h\xff\xc2\x9b2J\r\nforged 1' >/dev/null
	run --separate-stderr rlock status esc
	assert_success
	refute_raw "$output" stdout
	assert_output --partial 'h\xff\u009B2J\x0d\x0aforged 1'
	refute_line --regexp '^forged'
	run rlock status --format json esc
	assert_success
	printf '%s' "$output" | iconv -f UTF-8 -t UTF-8 >/dev/null
	json_check 'd["host"] == "h\ufffd\u009b2J\r\nforged 1"' <<<"$output"
}

@test "escape: log shows the history's command escaped; log --json keeps it" {
	rlock exec --record full esc -- sh -c 'true' "$EVIL"
	run --separate-stderr rlock log esc
	assert_success
	refute_raw "$output" stdout
	assert_output --partial "$SHOWN"
	run --separate-stderr rlock log
	assert_success
	refute_raw "$output" stdout
	assert_output --partial "$SHOWN"
	rlock --json log esc | head -n 1 | json_check 'd["command"].endswith("\x1b[2J\x1b[31mEVIL\x07")'
}

@test "escape: watch prints each event escaped" {
	bg_start WATCH "$RLOCK" watch esc
	# watch reads from the newest entry: make sure it has started.
	local i
	for ((i = 0; i < 250; i++)); do
		[[ -n "$(rcli CLIENT LIST | grep 'cmd=xread')" ]] && break
		sleep 0.02
	done
	rlock exec --record full esc -- sh -c 'true' "$EVIL"
	for ((i = 0; i < 500; i++)); do
		grep -q ' esc released ' "$BATS_TEST_TMPDIR/WATCH.out" && break
		sleep 0.02
	done
	run cat "$BATS_TEST_TMPDIR/WATCH.out"
	assert_line --partial ' esc released '
	refute_raw "$output" "watch's output"
	assert_output --partial "$SHOWN"
}

@test "escape: watch at a terminal redraws with the escapes visible" {
	hold_evil
	tty_wrapper watch esc
	tmux_start "./run.sh"
	tmux_wait_screen 'rlock watch: 1 lock' 8000 || fail "no view: $TMUX_SCREEN"
	tmux_wait_screen 'EVIL' 8000 || fail "no holder line: $TMUX_SCREEN"
	# Raw, the sequence clears the screen and leaves only a red EVIL.
	[[ "$TMUX_SCREEN" == *"$SHOWN"* ]] || fail "not escaped on screen: $TMUX_SCREEN"
}

@test "escape: acquire's waiting line shows the holder's command escaped" {
	hold_evil
	{
		printf '#!/bin/bash\ncd %q\n' "$BATS_TEST_TMPDIR"
		printf '%q ' "$RLOCK" -u "$RLOCK_URL" acquire -w 20s esc
		printf '\necho "exit:$?" > status\n'
	} >run.sh
	chmod +x run.sh
	tmux_start "./run.sh"
	tmux_wait_screen 'waiting for esc: held by' 8000 || fail "no waiting line: $TMUX_SCREEN"
	[[ "$TMUX_SCREEN" == *'\x1b[2J'* ]] || fail "not escaped on screen: $TMUX_SCREEN"
}

# --------------------------------------------------------- stderr, syslog

@test "escape: a URL's user name with an escape is shown escaped in an error message" {
	local port
	port=$(free_port)
	run --separate-stderr rlock -u "redis://%1B%5B2J%C2%9B:pw@127.0.0.1:$port/" status
	assert_equal "$status" 69
	assert_one_error_line
	refute_raw "$stderr" stderr
	[[ "$stderr" == *'\x1b[2J\u009B'* ]] || fail "not escaped: $stderr"
	# --json: errors stay lines, escaped the same way.
	run --separate-stderr rlock --json -u "redis://%1B%5B2J:pw@127.0.0.1:$port/" status
	assert_equal "$status" 69
	refute_raw "$stderr" stderr
}

@test "escape: syslog gets the same message escaped" {
	command -v strace >/dev/null || skip "strace is not installed"
	devlog_available || skip "cannot make a private /dev/log"
	local port msgs=$BATS_TEST_TMPDIR/syslog.msgs
	port=$(free_port)
	: >"$msgs"
	run --separate-stderr with_private_devlog \
		"$RLOCK" --syslog -u "redis://%1B%5B2J:pw@127.0.0.1:$port/" status
	[[ $status -ne 90 && $status -ne 91 ]] || fail "no private /dev/log"
	assert_equal "$status" 69
	local i
	for ((i = 0; i < 100; i++)); do
		grep -q 'cannot connect' "$msgs" && break
		sleep 0.02
	done
	run cat "$msgs"
	assert_output --partial 'cannot connect'
	assert_output --partial '\x1b[2J@127.0.0.1'
	refute_raw "$output" syslog
}

# ------------------------------------------------------ names from a SCAN

BAD_KEY=$'rlock:{a"b\\c\nrlock_held 1\r\xff\e[2J}'

@test "escape: a key whose name rlock refuses is reported in one line, and openmetrics stays valid" {
	rlock exec good -- true
	rlock acquire -t 30s good >/dev/null
	rcli EVAL 'redis.call("SET", ARGV[1], "x")' 0 "$BAD_KEY" >/dev/null
	assert_equal "$(rcli --raw EXISTS "$BAD_KEY")" 1

	run --separate-stderr rlock status --format openmetrics
	refute_raw "$output" openmetrics
	/usr/bin/python3 -c '
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse
names = set()
for fam in parse(sys.stdin.read()):
    for s in fam.samples:
        names.add(s.labels["name"])
assert names == {"good"}, names
' <<<"$output"
	assert_one_error_line
	refute_raw "$stderr" stderr
	[[ "$stderr" == *'\x0arlock_held 1\x0d\xff\x1b[2J'* ]] || fail "key not named: $stderr"

	run --separate-stderr rlock status
	# Left out, as a damaged lock is: the listing is not whole.
	assert_equal "$status" 69
	refute_raw "$output" stdout
	refute_line --regexp '^rlock_held'
	assert_line --regexp '^good: held by '
	assert_one_error_line
	refute_raw "$stderr" stderr

	run --separate-stderr rlock status --format json
	json_check '[x["name"] for x in d] == ["good"]' <<<"$output"
	assert_one_error_line
}

@test "escape: a history stream under a refused name is reported by log and by watch, once" {
	rcli EVAL 'redis.call("XADD", ARGV[1], "*", "e", "acquired")' 0 \
		$'rlock:{bad\e[2J\u202e}:log' >/dev/null
	run --separate-stderr rlock log
	refute_raw "$output" stdout
	assert_one_error_line
	refute_raw "$stderr" stderr
	[[ "$stderr" == *'\x1b[2J\u202E'* ]] || fail "key not named: $stderr"

	bg_start WATCH "$RLOCK" watch
	local i
	for ((i = 0; i < 500; i++)); do
		grep -q 'x1b' "$BATS_TEST_TMPDIR/WATCH.err" && break
		sleep 0.02
	done
	# A lock that appears later is found by a later scan...
	rlock exec later -- true
	for ((i = 0; i < 500; i++)); do
		grep -q ' later released ' "$BATS_TEST_TMPDIR/WATCH.out" && break
		sleep 0.02
	done
	grep -q ' later released ' "$BATS_TEST_TMPDIR/WATCH.out" || fail "watch never saw later"
	# ...and the bad one was said once only.
	assert_equal "$(grep -c 'x1b' "$BATS_TEST_TMPDIR/WATCH.err")" 1
	refute_raw "$(cat "$BATS_TEST_TMPDIR/WATCH.err")" "watch's stderr"
}

# ----------------------------------------------------------------- names

@test "escape: names with invisible format or bidirectional controls are refused, naming the code point and byte" {
	local -a cases=(
		$'deploy\u200b' 'U+200B' 7
		$'a\u202eb' 'U+202E' 2
		$'\ufeffx' 'U+FEFF' 1
		$'so\u00adft' 'U+00AD' 3
		$'x\u2066y' 'U+2066' 2
		$'x\u061cy' 'U+061C' 2
		$'x\u180ey' 'U+180E' 2
		$'x\u2060y' 'U+2060' 2
		$'x\u034fy' 'U+034F' 2
		$'x\ufe0fy' 'U+FE0F' 2
		$'x\U000e0001y' 'U+E0001' 2
	)
	local c
	for ((c = 0; c < ${#cases[@]}; c += 3)); do
		run --separate-stderr rlock acquire "${cases[c]}"
		assert_usage_error
		refute_raw "$stderr" stderr
		[[ "$stderr" == *"byte ${cases[c + 2]} is ${cases[c + 1]}"* ]] ||
			fail "no code point and byte: $stderr"
		# Never echoed raw.
		[[ "$stderr" == *"${cases[c]}"* ]] && fail "echoed raw: $stderr"
	done
	true
}

@test "escape: a refused name is never echoed raw (U+0085, U+2028, 0xff, ESC)" {
	local n
	for n in $'a\u0085b' $'a\u2028b' $'a\xffb' $'a\e[2Jb' $'a\u2029b'; do
		run --separate-stderr rlock acquire "$n"
		assert_usage_error
		refute_raw "$stderr" stderr
		[[ "$stderr" == *"$n"* ]] && fail "echoed raw: $stderr"
	done
	true
}

@test "escape: every Unicode format character (Cf) is refused; look-alike-free names pass" {
	local cps
	cps=$(/usr/bin/python3 -c '
import sys, unicodedata
print(" ".join("%X" % c for c in range(0x80, 0x110000) if unicodedata.category(chr(c)) == "Cf"))')
	local cp name bad=
	for cp in $cps; do
		name=$(printf "x\\U$(printf %08X 0x$cp)y")
		if rlock acquire "$name" >/dev/null 2>&1; then bad="$bad $cp"; fi
	done
	[[ -z "$bad" ]] || fail "accepted:$bad"
	# Printable names still pass, quotes and backslashes included.
	for name in 'café' '日本' 'a"b\c' 'x-y_z.1' '🔒'; do
		run rlock acquire -t 30s "$name"
		assert_success
	done
}
