#!/usr/bin/env bats
# secrets.bats: what rlock leaks and what it records. A URL's password is
# masked with a fixed-length mask wherever a URL is printed or logged (a
# misplaced URL in a usage error, /proc/PID/cmdline, --verbose); a waiting
# rlock keeps its password only in memory excluded from core dumps; files
# that must be regular (password, config, TLS) are refused otherwise,
# without blocking; a config file others can write gets a warning; and exec
# records what --record / --label say of the command, never a URL's password.

load helpers
load extra-helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() {
	default_setup
	umask 077
}
teardown() { cleanup_test; }

# ------------------------------------------------------------ messages

@test "secrets: a URL given where the command goes is masked in the usage error" {
	run --separate-stderr rlock 'redis://:s3cret@10.0.0.5:6379' status
	assert_equal "$status" 64
	assert_one_error_line
	refute_contains s3cret "$stderr"
	[[ "$stderr" == *"redis://:****@10.0.0.5:6379"* ]] || fail "no mask: $stderr"
}

@test "secrets: the mask does not depend on the password's length" {
	run --separate-stderr rlock 'redis://u:x@h' status
	[[ "$stderr" == *"redis://u:****@h"* ]] || fail "no mask: $stderr"
	run --separate-stderr rlock 'redis://u:a-much-longer-password@h' status
	[[ "$stderr" == *"redis://u:****@h"* ]] || fail "no mask: $stderr"
	refute_contains a-much-longer "$stderr"
}

@test "secrets: --syslog: the misplaced URL's password reaches neither stderr nor syslog" {
	command -v strace >/dev/null || skip "strace is not installed"
	devlog_available || skip "cannot make a private /dev/log"
	local msgs=$BATS_TEST_TMPDIR/syslog.msgs
	: >"$msgs"
	run --separate-stderr with_private_devlog "$RLOCK" --syslog 'redis://:s3cret@10.0.0.5:6379' status
	assert_equal "$status" 64
	refute_contains s3cret "$stderr"
	grep -q 'unknown command' "$msgs" || fail "nothing logged: $(cat "$msgs")"
	refute_contains s3cret "$(cat "$msgs")"
	grep -qF 'redis://:****@10.0.0.5:6379' "$msgs" || fail "no mask in syslog: $(cat "$msgs")"
}

@test "secrets: an argument that is a URL is masked in other usage errors too" {
	run --separate-stderr rlock release 'job' 'redis://:s3cret@h:1'
	assert_equal "$status" 64
	refute_contains s3cret "$stderr"
}

# A running rlock, waiting for a lock held by someone else, with the
# password PW given as HOW (url or file). Sets WAITER (its PID).
start_waiter() {
	local how=$1 pw=$2 url i
	RCLI_AUTH=$pw
	start_redis_auth_as AUTH "$pw"
	rcli_as AUTH EVAL "$FAKE_HOLD" 1 "rlock:{busy}" someone-else 60000 >/dev/null
	if [[ $how == url ]]; then
		url="redis://:$pw@127.0.0.1:$AUTH_PORT"
		bg_start WAITER "$RLOCK" -v -u "$url" acquire -w 30s busy
	else
		printf '%s\n' "$pw" >"$BATS_TEST_TMPDIR/pw"
		bg_start WAITER "$RLOCK" -v -u "redis://127.0.0.1:$AUTH_PORT" \
			--password-file "$BATS_TEST_TMPDIR/pw" acquire -w 30s busy
	fi
	# Connected and authenticated: the server counts a client besides us.
	for ((i = 0; i < 500; i++)); do
		(($(rcli_as AUTH CLIENT LIST | grep -vc 'cmd=client') >= 1)) && break
		sleep 0.02
	done
	(($(rcli_as AUTH CLIENT LIST | grep -vc 'cmd=client') >= 1)) ||
		fail "the waiter never connected: $(cat "$BATS_TEST_TMPDIR/WAITER.err")"
}

@test "secrets: ps shows a fixed-length mask for a URL's password" {
	local pw=correct-horse-battery-staple
	start_waiter url "$pw"
	local cmdline
	cmdline=$(tr '\0' ' ' <"/proc/$WAITER/cmdline")
	refute_contains "$pw" "$cmdline"
	refute_contains "*****" "$cmdline"
	[[ "$cmdline" == *"redis://:****@127.0.0.1:$AUTH_PORT"* ]] || fail "no mask: $cmdline"
}

@test "secrets: --verbose never shows the password" {
	local pw=Verb0se-Pa55word
	start_waiter url "$pw"
	refute_contains "$pw" "$(cat "$BATS_TEST_TMPDIR/WAITER.err")"
}

# An AddressSanitizer build keeps copies of its own (unoptimised stack
# frames, redzones, its quarantine) that the release build does not: what
# a core dump of the shipped binary holds is the question.
require_release_build() {
	if [[ -n ${ASAN_OPTIONS:-} ]]; then
		skip "under AddressSanitizer, whose stack and quarantine hold copies the release build does not"
	fi
}

# mem_holds PID TEXT: does any part of PID's memory that a core dump would
# hold (every readable mapping not marked "dd" in smaps) contain TEXT?
mem_holds() {
	/usr/bin/python3 - "$1" "$2" <<'PY'
import re, sys
pid, needle = sys.argv[1], sys.argv[2].encode()
maps = []
cur = None
with open(f"/proc/{pid}/smaps") as f:
    for line in f:
        m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$", line)
        if m:
            cur = [int(m.group(1), 16), int(m.group(2), 16), m.group(3), m.group(4), ""]
            maps.append(cur)
        elif line.startswith("VmFlags:") and cur is not None:
            cur[4] = line.split()[1:]
found = []
with open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for lo, hi, perms, name, flags in maps:
        if "r" not in perms or "dd" in flags or name == "[vvar]" or name == "[vsyscall]":
            continue
        try:
            mem.seek(lo)
            data = mem.read(hi - lo)
        except OSError:
            continue
        if needle in data:
            found.append(f"{lo:x}-{hi:x} {perms} {name}")
if found:
    print("\n".join(found))
    sys.exit(0)
sys.exit(1)
PY
}

@test "secrets: a waiting rlock holds a --password-file password only where a core dump does not look" {
	require_release_build
	local pw=Dump-Me-Not-0123456789
	start_waiter file "$pw"
	run mem_holds "$WAITER" "$pw"
	[[ $status -eq 1 ]] || fail "the password is in dumpable memory: $output"
}

@test "secrets: a waiting rlock holds a URL's password only where a core dump does not look" {
	require_release_build
	local pw=Url-Dump-Me-Not-9876543210
	start_waiter url "$pw"
	run mem_holds "$WAITER" "$pw"
	[[ $status -eq 1 ]] || fail "the password is in dumpable memory: $output"
}

@test "secrets: a config file's URL password is held only where a core dump does not look" {
	require_release_build
	local pw=Conf-Dump-Me-Not-24680 c=$BATS_TEST_TMPDIR/rlock.conf i
	RCLI_AUTH=$pw
	start_redis_auth_as AUTH "$pw"
	rcli_as AUTH EVAL "$FAKE_HOLD" 1 "rlock:{busy}" someone-else 60000 >/dev/null
	printf 'url = redis://:%s@127.0.0.1:%s\n' "$pw" "$AUTH_PORT" >"$c"
	bg_start WAITER "$RLOCK" --config "$c" acquire -w 30s busy
	for ((i = 0; i < 500; i++)); do
		(($(rcli_as AUTH CLIENT LIST | grep -vc 'cmd=client') >= 1)) && break
		sleep 0.02
	done
	run mem_holds "$WAITER" "$pw"
	[[ $status -eq 1 ]] || fail "the password is in dumpable memory: $output"
}

@test "secrets: exec holds a URL's password only where a core dump does not look while the command runs" {
	require_release_build
	local pw=Exec-Dump-Me-Not-13579 i
	RCLI_AUTH=$pw
	start_redis_auth_as AUTH "$pw"
	bg_start JOB "$RLOCK" -u "redis://:$pw@127.0.0.1:$AUTH_PORT" exec job -- \
		sh -c 'touch "$0.started"; while [ ! -e "$0" ]; do sleep 0.02; done' "$BATS_TEST_TMPDIR/go"
	for ((i = 0; i < 500; i++)); do
		[[ -e "$BATS_TEST_TMPDIR/go.started" ]] && break
		sleep 0.02
	done
	[[ -e "$BATS_TEST_TMPDIR/go.started" ]] || fail "the command did not start: $(cat "$BATS_TEST_TMPDIR/JOB.err")"
	run mem_holds "$JOB" "$pw"
	touch "$BATS_TEST_TMPDIR/go"
	bg_wait "$JOB" 15000 || fail "the job did not end"
	[[ $status -eq 1 ]] || fail "the password is in dumpable memory: $output"
	assert_equal "$BG_STATUS" 0
}

# ---------------------------------------------------------------- files

@test "odd files: a FIFO as --password-file is refused at once, in one line" {
	mkfifo "$BATS_TEST_TMPDIR/f"
	run --separate-stderr timeout -k 2 10 "$RLOCK" --password-file "$BATS_TEST_TMPDIR/f" status
	assert_equal "$status" 64
	assert_one_error_line
	[[ "$stderr" == *"not a regular file"* ]] || fail "$stderr"
}

@test "odd files: a FIFO as --config is refused at once, in one line" {
	mkfifo "$BATS_TEST_TMPDIR/f"
	run --separate-stderr timeout -k 2 10 "$RLOCK" --config "$BATS_TEST_TMPDIR/f" status
	assert_equal "$status" 64
	assert_one_error_line
	[[ "$stderr" == *"not a regular file"* ]] || fail "$stderr"
}

@test "odd files: a FIFO as RLOCK_CONFIG or a TLS file is refused at once" {
	mkfifo "$BATS_TEST_TMPDIR/f"
	run --separate-stderr env RLOCK_CONFIG="$BATS_TEST_TMPDIR/f" timeout -k 2 10 "$RLOCK" status
	assert_equal "$status" 64
	assert_one_error_line
	local opt
	for opt in --tls-ca --tls-cert --tls-key; do
		run --separate-stderr timeout -k 2 10 "$RLOCK" -u rediss://127.0.0.1:1 $opt "$BATS_TEST_TMPDIR/f" status
		assert_equal "$status" 64
		assert_one_error_line
		[[ "$stderr" == *"not a regular file"* ]] || fail "$opt: $stderr"
	done
}

@test "odd files: a directory as --password-file is refused in one line" {
	run --separate-stderr timeout -k 2 10 "$RLOCK" --password-file "$BATS_TEST_TMPDIR" status
	assert_equal "$status" 64
	assert_one_error_line
	[[ "$stderr" == *"not a regular file"* ]] || fail "$stderr"
}

@test "odd files: a config file others can write gets a warning; the owner's does not" {
	local c=$BATS_TEST_TMPDIR/rlock.conf
	echo "url = $RLOCK_URL" >"$c"
	chmod 600 "$c"
	run --separate-stderr rlock --config "$c" status
	assert_success
	assert_equal "$stderr" ""
	chmod 666 "$c"
	run --separate-stderr rlock --config "$c" status
	assert_success
	[[ "$stderr" == "rlock: warning: "*"writable"*"chmod go-w"* ]] || fail "$stderr"
	chmod 620 "$c"
	run --separate-stderr rlock --config "$c" status
	[[ "$stderr" == "rlock: warning: "*"writable"* ]] || fail "$stderr"
}

# ------------------------------------------------- what exec records

# rdb_text: every byte the server holds, as one file (uncompressed).
rdb_text() {
	rcli CONFIG SET rdbcompression no >/dev/null
	rcli SAVE >/dev/null
	cat "$(rcli CONFIG GET dir | sed -n 2p)/$(rcli CONFIG GET dbfilename | sed -n 2p)"
}

recorded_command() {
	rlock status --json job | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["command"] or "")'
}

# run_recording ARGS...: exec job ARGS, while it runs print what status
# says of its command into $BATS_TEST_TMPDIR/recorded, then let it end.
run_recording() {
	local go=$BATS_TEST_TMPDIR/go
	rm -f "$go"
	bg_start JOB "$RLOCK" exec "$@"
	local i
	for ((i = 0; i < 500; i++)); do
		rlock status job >/dev/null 2>&1 && break
		sleep 0.02
	done
	recorded_command >"$BATS_TEST_TMPDIR/recorded"
	touch "$go"
	bg_wait "$JOB" 15000 || fail "the job did not end"
	assert_equal "$BG_STATUS" 0
}

WAITGO='while [ ! -e "$0" ]; do sleep 0.02; done'

@test "exec: by default only the command's first word is recorded, never its arguments" {
	run_recording job -- sh -c "$WAITGO" "$BATS_TEST_TMPDIR/go" --dbname=postgresql://u:SECRET@db/app
	assert_equal "$(cat "$BATS_TEST_TMPDIR/recorded")" "sh"
	refute_contains SECRET "$(rdb_text | tr -d '\0')"
	refute_contains dbname "$(rdb_text | tr -d '\0')"
}

@test "exec: --record full records the arguments, with a URL's password masked" {
	run_recording --record full job -- sh -c "$WAITGO" "$BATS_TEST_TMPDIR/go" --dbname=postgresql://u:SECRET@db/app
	[[ "$(cat "$BATS_TEST_TMPDIR/recorded")" == "sh -c "*"--dbname=postgresql://u:****@db/app" ]] ||
		fail "recorded: $(cat "$BATS_TEST_TMPDIR/recorded")"
	refute_contains SECRET "$(rdb_text | tr -d '\0')"
}

@test "exec: --record none records no command, in the lock or its history" {
	run_recording --record none job -- sh -c "$WAITGO" "$BATS_TEST_TMPDIR/go" secret-arg
	assert_equal "$(cat "$BATS_TEST_TMPDIR/recorded")" ""
	refute_contains secret-arg "$(rdb_text | tr -d '\0')"
	refute_contains "sh -c" "$(rdb_text | tr -d '\0')"
}

@test "exec: --label TEXT is recorded instead of the command" {
	run_recording --label nightly-backup job -- sh -c "$WAITGO" "$BATS_TEST_TMPDIR/go" secret-arg
	assert_equal "$(cat "$BATS_TEST_TMPDIR/recorded")" "nightly-backup"
	refute_contains secret-arg "$(rdb_text | tr -d '\0')"
	run rlock log job
	assert_output --partial nightly-backup
}

@test "exec: -c records the shell command's first word, past any VAR=value" {
	run_recording job -c "PGPASSWORD=SECRET sh -c '$WAITGO' $BATS_TEST_TMPDIR/go"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/recorded")" "sh"
	refute_contains SECRET "$(rdb_text | tr -d '\0')"
}

@test "exec: record = full in the config file; the command line wins over it" {
	local c=$BATS_TEST_TMPDIR/rlock.conf
	printf 'url = %s\nrecord = full\n' "$RLOCK_URL" >"$c"
	export RLOCK_CONFIG=$c
	run_recording job -- sh -c "$WAITGO" "$BATS_TEST_TMPDIR/go" visible-arg
	[[ "$(cat "$BATS_TEST_TMPDIR/recorded")" == *visible-arg ]] || fail "$(cat "$BATS_TEST_TMPDIR/recorded")"
	run_recording --record name job -- sh -c "$WAITGO" "$BATS_TEST_TMPDIR/go" visible-arg
	assert_equal "$(cat "$BATS_TEST_TMPDIR/recorded")" "sh"
}

@test "exec: --record with anything but full, name or none is a usage error" {
	run --separate-stderr rlock exec --record all job -- true
	assert_usage_error
	[[ "$stderr" == *"full, name or none"* ]] || fail "$stderr"
}

@test "exec: a URL's password stored by an older rlock is masked in status and log" {
	rlock acquire -t 60s job >/dev/null
	set_info_field "rlock:{job}" command "psql postgresql://u:SECRET@db/app" >/dev/null
	rcli XADD "rlock:{job}:log" '*' e acquired h web1 p 42 u alice c "psql postgresql://u:SECRET@db/app" f 1 >/dev/null
	run --separate-stderr rlock status job
	assert_success
	refute_contains SECRET "$output"
	assert_output --partial "postgresql://u:****@db/app"
	run --separate-stderr rlock --json status job
	refute_contains SECRET "$output"
	run --separate-stderr rlock log job
	refute_contains SECRET "$output"
	assert_output --partial "postgresql://u:****@db/app"
	run --separate-stderr rlock --json log job
	refute_contains SECRET "$output"
	run --separate-stderr rlock acquire -n job
	refute_contains SECRET "$stderr"
}
