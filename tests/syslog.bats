#!/usr/bin/env bats
# syslog.bats: --syslog (and `syslog = yes` in a config file). rlock is run
# under strace, in a private mount namespace whose /dev/log is a listener of
# the test's own (the machine's /dev/log, if any, is never touched), and the
# test checks what goes to /dev/log: errors, the notice for an acquire that
# had to wait, the notice for a forced release, and nothing at all for a
# quiet success.

load helpers
load extra-helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() {
	command -v strace >/dev/null || skip "strace is not installed"
	devlog_available || skip "cannot make a private /dev/log (needs unshare -m and python3)"
	default_setup
	umask 077
	STRACE_OUT=$BATS_TEST_TMPDIR/strace.out
	MSGS=$BATS_TEST_TMPDIR/syslog.msgs
}
teardown() { cleanup_test; }

# (LeakSanitizer cannot work under ptrace: in the sanitizer build, leaks are
# left to the other tests and only ASan's and UBSan's own checks run here.)
# syslog_run RLOCK-ARGS...: run rlock under strace (connect and sendto, long
# strings) with a private /dev/log; sets status, output, stderr. The trace is
# in $STRACE_OUT, the messages /dev/log received in $MSGS.
syslog_run() {
	rm -f "$STRACE_OUT"
	: >"$MSGS"
	run --separate-stderr with_private_devlog \
		env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		timeout -k 5 30 strace -f -qq -e trace=connect,sendto -s 300 -o "$STRACE_OUT" "$RLOCK" "$@"
	# 90/91: the private /dev/log could not be set up.
	if [[ $status -eq 90 || $status -eq 91 ]]; then
		fail "could not set up the private /dev/log (status $status)"
	fi
	[[ -e "$STRACE_OUT" ]] || fail "strace did not run: $stderr"
}

# assert_logged REGEX: rlock connected to /dev/log, and a sendto in the trace
# carries a message "rlock[PID]: ..." matching REGEX (grep -E, on the text
# after "rlock[PID]: "), and the listener received it.
assert_logged() {
	local re=$1
	grep -Eq 'connect\([0-9]+, \{sa_family=AF_UNIX, sun_path="/dev/log"\}, [0-9]+\) = 0' "$STRACE_OUT" ||
		fail "rlock did not connect to /dev/log: $(cat "$STRACE_OUT")"
	grep -Eq "sendto\([0-9]+, \"<[0-9]+>.*rlock\[[0-9]+\]: $re" "$STRACE_OUT" ||
		fail "no message matching '$re' was sent to /dev/log; trace: $(grep -v AF_INET "$STRACE_OUT")"
	grep -Eq "rlock\[[0-9]+\]: $re" "$MSGS" ||
		fail "the /dev/log listener got no message matching '$re': $(cat "$MSGS")"
}

# assert_priority PRI REGEX: the message matching REGEX went with syslog
# priority PRI (facility daemon = 3: 3*8 + severity).
assert_priority() {
	grep -Eq "^<$1>.*rlock\[[0-9]+\]: $2" "$MSGS" ||
		fail "no message '<$1>...rlock[PID]: $2' in: $(cat "$MSGS")"
}

# assert_nothing_logged: rlock never connected to /dev/log and sent nothing.
assert_nothing_logged() {
	if grep -q '/dev/log' "$STRACE_OUT" || grep -q 'rlock\[' "$STRACE_OUT"; then
		fail "rlock used /dev/log: $(grep -v AF_INET "$STRACE_OUT")"
	fi
	[[ ! -s "$MSGS" ]] || fail "/dev/log received: $(cat "$MSGS")"
}

# hold_until_waited NAME: take NAME for 30 s, and give it back from the
# background once a waiter is blocked on it (CLIENT LIST shows its BLPOP;
# at most 20 s).  The waiter -- rlock under strace, whose start takes
# however long it takes on a loaded machine -- is then sure to have waited.
hold_until_waited() {
	local t
	t=$(rlock acquire -t 30s "$1") || return 1
	bg_start HOLDER bash -c '
		for ((i = 0; i < 1000; i++)); do
			redis-cli -h 127.0.0.1 -p "$1" CLIENT LIST | grep -q " cmd=blpop " && break
			sleep 0.02
		done
		exec "$2" release --token "$3" "$4"' _ "$REDIS_PORT" "$RLOCK" "$t" "$1"
}

@test "syslog: a failing run sends its error line to /dev/log" {
	local port
	port=$(free_port)
	syslog_run --syslog -u "redis://127.0.0.1:$port" acquire -n job
	assert_equal "$status" 69
	# stderr is unchanged by --syslog.
	assert_one_error_line
	assert_equal "$stderr" "rlock: cannot connect to redis://127.0.0.1:$port: connection refused"
	assert_logged "cannot connect to redis://127\\.0\\.0\\.1:$port: connection refused"
	# LOG_DAEMON | LOG_ERR
	assert_priority 27 "cannot connect"
	# The pid in "rlock[PID]" is rlock's own.
	local pid
	pid=$(grep -E 'sendto\(.*rlock\[' "$STRACE_OUT" | head -n 1 | awk '{print $1}')
	grep -q "rlock\[$pid\]: " "$MSGS" || fail "rlock[PID] should carry rlock's pid $pid: $(cat "$MSGS")"
}

@test "syslog: usage errors are logged too, whichever option or argument is wrong" {
	syslog_run --syslog release job
	assert_equal "$status" 64
	assert_one_error_line
	assert_logged "release needs the lock's token"
	syslog_run --syslog -u redis://h:0 acquire job
	assert_equal "$status" 64
	assert_logged "invalid --url"
	# A cron job with a typo in an option or a name must leave a trace too.
	syslog_run --syslog -t 5x acquire job
	assert_equal "$status" 64
	assert_one_error_line
	assert_logged "invalid duration '5x' for --ttl"
	syslog_run --syslog acquire 'a b'
	assert_equal "$status" 64
	assert_logged "invalid lock name 'a b'"
	assert_equal "$(rcli DBSIZE)" 0
}

@test "syslog: an acquire that had to wait sends a notice 'acquired NAME in ...'" {
	hold_until_waited job
	syslog_run --syslog acquire -w 25s job
	assert_success
	assert_output --regexp "$UUID_RE"
	# Without -v the notice is not on stderr.
	assert_equal "$stderr" ""
	assert_logged "acquired job in [0-9.]+m?s"
	# LOG_DAEMON | LOG_NOTICE
	assert_priority 29 "acquired job in"
}

@test "syslog: a forced release sends a notice naming the holder it removed" {
	rlock acquire -t 30s job >/dev/null
	syslog_run --syslog release --force job
	assert_success
	assert_output --regexp '^removed job: held by '
	assert_equal "$stderr" ""
	assert_logged "release --force: removed job: held by [^ ]+@[^ ]+ pid [0-9]+"
	assert_priority 29 "release --force"
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "syslog: a quiet successful acquire that did not wait sends nothing to /dev/log" {
	syslog_run --syslog acquire -n job
	assert_success
	assert_output --regexp "$UUID_RE"
	assert_equal "$stderr" ""
	assert_nothing_logged
	# Nor do a release, a status, an extend or an exec that did not wait.
	local token=$output
	syslog_run --syslog extend --token "$token" job
	assert_success
	assert_nothing_logged
	syslog_run --syslog status job
	assert_success
	assert_nothing_logged
	syslog_run --syslog release --token "$token" job
	assert_success
	assert_nothing_logged
	syslog_run --syslog exec -n --min-hold 0 job -- true
	assert_success
	assert_nothing_logged
}

@test "syslog: a cron job's exec -n that ends at once without --min-hold is warned about in syslog" {
	syslog_run --syslog exec -n job -- true
	assert_success
	assert_logged 'warning: job: the command ended .* --min-hold 30s'
	assert_priority 28 'warning: job: the command ended'
}

@test "syslog: without --syslog a failing run sends nothing to /dev/log" {
	syslog_run -u "redis://127.0.0.1:$(free_port)" acquire -n job
	assert_equal "$status" 69
	assert_one_error_line
	assert_nothing_logged
}

@test "syslog: 'syslog = yes' in a config file behaves like --syslog" {
	local conf=$BATS_TEST_TMPDIR/rlock.conf port
	port=$(free_port)
	printf 'syslog = yes\n' >"$conf"
	# A failing run.
	syslog_run --config "$conf" -u "redis://127.0.0.1:$port" acquire -n job
	assert_equal "$status" 69
	assert_one_error_line
	assert_logged "cannot connect to redis://127\\.0\\.0\\.1:$port: connection refused"
	# A quiet acquire that did not wait.
	syslog_run --config "$conf" acquire -n job
	assert_success
	assert_nothing_logged
	rcli DEL 'rlock:{job}' >/dev/null
	# An acquire that had to wait, with the config from RLOCK_CONFIG.
	hold_until_waited job
	RLOCK_CONFIG=$conf syslog_run acquire -w 25s job
	assert_success
	assert_logged "acquired job in [0-9.]+m?s"
	# A forced release.
	syslog_run --config "$conf" release --force job
	assert_success
	assert_logged "release --force: removed job"
	# 'syslog = no' turns it off.
	printf 'syslog = no\n' >"$conf"
	syslog_run --config "$conf" -u "redis://127.0.0.1:$port" acquire -n job
	assert_equal "$status" 69
	assert_nothing_logged
}

@test "syslog: a lock lost while exec runs is logged as an error" {
	# The command deletes its own lock; the next extend finds it gone.
	syslog_run --syslog exec -t 2s --heartbeat 200ms job -- \
		sh -c "redis-cli -p $REDIS_PORT DEL 'rlock:{job}' >/dev/null; sleep 5"
	assert_equal "$status" 75
	assert_one_error_line
	[[ "$stderr" == "rlock: lock 'job' was lost"* ]] || fail "unexpected stderr: $stderr"
	assert_logged "lock 'job' was lost"
	assert_priority 27 "lock 'job' was lost"
}
