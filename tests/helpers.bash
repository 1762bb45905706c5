# helpers.bash: shared setup for rlock's bats tests.
#
# Every .bats file loads this. It owns the private Redis servers the tests
# talk to (one per file, started in setup_file, plus per-test servers where a
# test needs special configuration), the background processes a test starts,
# and a few assertions that several files share. Everything it starts is
# recorded by PID and stopped by PID; every wait is bounded in count and time.

# bats-support and bats-assert, their files sourced directly: each one's
# load.bash finds its files with a $(dirname) apiece, and every test loads
# this file anew, so that was fifteen processes a test, a fifth of the
# suite's CPU time under load.
for _hf in /usr/lib/bats/bats-support/src/output.bash \
    /usr/lib/bats/bats-support/src/error.bash \
    /usr/lib/bats/bats-support/src/lang.bash /usr/lib/bats/bats-assert/src/*.bash; do
	# shellcheck disable=SC1090
	source "$_hf"
done
unset _hf

bats_require_minimum_version 1.5.0

RLOCK="${RLOCK_BIN:-$BATS_TEST_DIRNAME/../src/rlock}"

# Under the sanitizers, LeakSanitizer's check at exit only in the files
# that RLOCK_LEAK_FILES names (scripts/test.sh says why).
if [[ -n ${RLOCK_LEAK_FILES:-} && -n ${ASAN_OPTIONS:-} ]]; then
	_hf=${BATS_TEST_FILENAME##*/}
	case " ${RLOCK_LEAK_FILES//[[:space:]]/ } " in
	*" ${_hf%.bats} "*) ;;
	*) export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" ;;
	esac
	unset _hf
fi

# Debian's python3 (scripts/deps.sh installs it), not the first python3 on
# PATH: a version manager's shim there can take a second to start on a
# loaded machine, and tests that wait for a python3 listener or proxy then
# race with their own timeouts.  Through PATH, so that env, timeout,
# scripts and "#!/usr/bin/env python3" get it too.
# (The link is made once a run: every test loads this file.)
if [[ -x /usr/bin/python3 && "$(command -v python3)" != /usr/bin/python3 ]]; then
	[[ -L "$BATS_RUN_TMPDIR/python3/python3" ]] || {
		mkdir -p "$BATS_RUN_TMPDIR/python3"
		ln -sf /usr/bin/python3 "$BATS_RUN_TMPDIR/python3/python3"
	}
	PATH="$BATS_RUN_TMPDIR/python3:$PATH"
fi

# The binary under test. A function so that `run rlock ...` reads naturally.
rlock() {
	"$RLOCK" "$@"
}

# Skip (rather than fail every test obscurely) when there is no binary.
require_rlock() {
	if [[ ! -x "$RLOCK" ]]; then
		skip "rlock binary not built: $RLOCK"
	fi
}

# Milliseconds since the epoch.
now_ms() {
	# (bash's clock, in microseconds: no date(1) run in a polling loop)
	local us=${EPOCHREALTIME//[!0-9]/}
	echo $((us / 1000))
}

# ---------------------------------------------------------------------------
# Redis servers
# ---------------------------------------------------------------------------

# Where per-scope bookkeeping lives: the test's temp dir inside a test, the
# file's temp dir in setup_file/teardown_file.
_scope_dir() {
	echo "${BATS_TEST_TMPDIR:-$BATS_FILE_TMPDIR}"
}

_proc_alive() {
	local pid=$1 stat state
	[[ -n "$pid" && -e /proc/$pid ]] || return 1
	# (read, not $(cat): no process forked for a check that polls.)
	IFS= read -r stat 2>/dev/null <"/proc/$pid/stat" || return 1
	# The state follows the command name, which may contain spaces: "(...) S".
	state=${stat##*) }
	state=${state%% *}
	[[ -n "$state" && "$state" != Z ]]
}

# keeper_pids_of NAME: the pids of the live keepers of lock NAME (an
# `acquire --hold` whose argv names it) started by this test (their
# environment has this test's RLOCK_URL: another test file, or a second
# run of the suite beside this one, may hold a lock of the same name),
# found in /proc with builtins alone: a process forked a pid made each
# scan take seconds on a busy machine, and tests scan in loops.
keeper_pids_of() {
	local d a e x
	for d in /proc/[0-9]*; do
		mapfile -d '' -t a 2>/dev/null <"$d/cmdline" || continue
		[[ " ${a[*]} " == *" acquire "* && " ${a[*]} " == *" --hold "* &&
			" ${a[*]} " == *" $1 "* ]] || continue
		if [[ -n "${RLOCK_URL:-}" ]]; then
			mapfile -d '' -t e 2>/dev/null <"$d/environ" || continue
			for x in "${e[@]}" ""; do
				[[ "$x" == "RLOCK_URL=$RLOCK_URL" ]] && break
			done
			[[ -n "$x" ]] || continue
		fi
		_proc_alive "${d#/proc/}" && echo "${d#/proc/}"
	done
	return 0
}

# Wait (bounded, in 20 ms steps) until PID has gone; returns 1 on time-out.
# Usage: wait_gone PID [MAX_MS]
wait_gone() {
	local pid=$1 max_ms=${2:-5000} i
	for ((i = 0; i < max_ms / 20; i++)); do
		_proc_alive "$pid" || return 0
		sleep 0.02
	done
	! _proc_alive "$pid"
}

# wait_all_gone MAX_MS PID...: wait (at most MAX_MS in all, 50 ms steps)
# until none of the PIDs runs; returns 1 on time-out.
wait_all_gone() {
	local max_ms=$1 i pid alive
	shift
	for ((i = 0; i <= max_ms / 50; i++)); do
		alive=0
		for pid in "$@"; do
			_proc_alive "$pid" && { alive=1; break; }
		done
		((alive)) || return 0
		sleep 0.05
	done
	return 1
}

# start_redis_as VAR [redis-server args...]
#
# Start a private redis-server on a random free loopback port (20000-60000,
# at most 20 tries) and on a Unix socket in a fresh temp dir. Sets and exports
# VAR_PORT, VAR_SOCK, VAR_PID, VAR_DIR and VAR_URL. The server runs in the
# foreground of a background job (never daemonized) so that we own its PID.
start_redis_as() {
	local var=$1
	shift
	local scope dir sock port pid try
	scope=$(_scope_dir)
	dir=$(mktemp -d "$scope/redis.XXXXXX")
	# A Unix socket path must fit in sun_path (108 bytes).
	if ((${#dir} > 80)); then
		dir=$(mktemp -d "/tmp/rlk.XXXXXX")
		echo "$dir" >>"$scope/.redis-dirs"
	fi
	sock="$dir/redis.sock"
	for ((try = 0; try < 20; try++)); do
		port=$((20000 + RANDOM % 40001))
		rm -f "$sock"
		redis-server --port "$port" --bind 127.0.0.1 \
			--unixsocket "$sock" --unixsocketperm 700 \
			--save '' --appendonly no --daemonize no \
			--dir "$dir" --logfile "$dir/redis.log" \
			"$@" </dev/null >"$dir/stdout.log" 2>&1 3>&- &
		pid=$!
		echo "$pid" >>"$scope/.redis-pids"
		# The socket is ours alone, so a reply on it cannot come from
		# somebody else's server; Redis binds TCP before the socket and
		# exits if the port is taken.
		if _await_pong "$pid" redis-cli -s "$sock" --no-auth-warning \
			${_start_auth:+-a "$_start_auth"} ping; then
			printf -v "${var}_PORT" '%s' "$port"
			printf -v "${var}_SOCK" '%s' "$sock"
			printf -v "${var}_PID" '%s' "$pid"
			printf -v "${var}_DIR" '%s' "$dir"
			printf -v "${var}_URL" '%s' "redis://127.0.0.1:$port"
			export "${var}_PORT" "${var}_SOCK" "${var}_PID" "${var}_DIR" "${var}_URL"
			return 0
		fi
		_kill_pid "$pid"
	done
	_start_failed start_redis_as "redis-server" "$dir"
}

# _await_pong PID CMD...: poll (at most 250 times, 20 ms apart: about 5 s,
# more if CMD is slow) until CMD prints PONG while PID, the server, still
# runs; returns 1 if PID ends or time runs out.
_await_pong() {
	local pid=$1 i
	shift
	for ((i = 0; i < 250; i++)); do
		_proc_alive "$pid" || return 1
		if "$@" 2>/dev/null | grep -q PONG && _proc_alive "$pid"; then
			return 0
		fi
		sleep 0.02
	done
	return 1
}

# _start_failed FUNC WHAT DIR: say that FUNC could not start WHAT, with the
# end of the last try's log (in DIR); returns 1.
_start_failed() {
	echo "$1: could not start $2 after 20 tries; last log:" >&2
	tail -5 "$3/redis.log" >&2 2>/dev/null
	return 1
}

# start_redis [redis-server args...]: the default server of a file (or test).
# Exports REDIS_PORT, REDIS_SOCK, REDIS_PID, REDIS_DIR and RLOCK_URL.
start_redis() {
	start_redis_as REDIS "$@" || return 1
	RLOCK_URL="redis://127.0.0.1:$REDIS_PORT"
	export RLOCK_URL
}

# Like start_redis_as, but for a server that requires a password: the
# password is needed to see it answer.
start_redis_auth_as() {
	local var=$1 pw=$2
	shift 2
	_start_auth=$pw start_redis_as "$var" --requirepass "$pw" "$@"
}

_kill_pid() {
	local pid=$1
	[[ -n "$pid" ]] || return 0
	# A frozen (SIGSTOPped) process must be resumed to act on SIGTERM.
	kill -CONT "$pid" 2>/dev/null || true
	kill -TERM "$pid" 2>/dev/null || true
	if ! wait_gone "$pid" 5000; then
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" 2000 || true
	fi
	# Reap it if it is our child; harmless otherwise.
	wait "$pid" 2>/dev/null || true
	return 0
}

# stop_redis [VAR]: stop the server started as VAR (default REDIS) by PID.
stop_redis() {
	local var=${1:-REDIS} pidv dirv
	pidv="${var}_PID"
	dirv="${var}_DIR"
	_kill_pid "${!pidv}"
	if [[ -n "${!dirv}" && "${!dirv}" == /tmp/rlk.* ]]; then
		rm -rf -- "${!dirv}"
	fi
	unset "${var}_PID"
}

# Stop every server recorded in this scope (test or file), by PID.
stop_all_redis() {
	local scope
	scope=$(_scope_dir)
	stop_listed "$scope/.redis-pids" "$scope/.redis-dirs" /tmp/rlk.
}

# stop_listed PIDS DIRS PREFIX: stop, by PID, every process the file PIDS
# lists, then remove every directory the file DIRS lists that starts with
# PREFIX (a private /tmp directory of ours: nothing else is ever removed);
# remove both files.
stop_listed() {
	local pids=$1 dirs=$2 prefix=$3 pid d
	if [[ -f "$pids" ]]; then
		while read -r pid; do
			_kill_pid "$pid" || true
		done <"$pids"
		rm -f "$pids"
	fi
	if [[ -f "$dirs" ]]; then
		while read -r d; do
			if [[ "$d" == "$prefix"* ]]; then rm -rf -- "$d"; fi
		done <"$dirs"
		rm -f "$dirs"
	fi
}

# redis-cli, in the tests' own shell, is tests/rcli when it is built (make
# check builds it): it answers one plain command as redis-cli does into a
# pipe, at a tenth of the start of Debian's redis-cli, which loads OpenSSL
# and systemd's library for each of the suite's tens of thousands of
# questions; it runs redis-cli itself for anything else (rcli.c says what).
# Programs the tests start (timeout, scripts) run the real one.
if [[ -x "$BATS_TEST_DIRNAME/rcli" ]]; then
	redis-cli() {
		"$BATS_TEST_DIRNAME/rcli" "$@"
	}
fi

# redis-cli against the file's default server. Set RCLI_AUTH for a password.
rcli() {
	redis-cli -h 127.0.0.1 -p "$REDIS_PORT" --no-auth-warning \
		${RCLI_AUTH:+-a "$RCLI_AUTH"} "$@"
}

# redis-cli against the server started as VAR: rcli_as VAR [args...]
# server_ms: the default server's clock (TIME), in milliseconds.
server_ms() {
	local t
	t=$(rcli TIME | tr -d '\r' | tr '\n' ' ')
	set -- $t
	echo $(($1 * 1000 + $2 / 1000))
}

rcli_as() {
	local var=$1
	shift
	local portv="${var}_PORT"
	redis-cli -h 127.0.0.1 -p "${!portv}" --no-auth-warning \
		${RCLI_AUTH:+-a "$RCLI_AUTH"} "$@"
}

# The lock's one record (see rlock-protocol(7)): LOCK is a hash, a field
# per holder named by its token, whose value is its record (JSON).
# lock_token KEY: the token of its (first) holder; lock_tokens KEY: all.
# info_field KEY NAME [TOKEN]: a field of a holder's record by the names
# status uses (token host pid user command ttl_ms acquired_ms fence a
# kind end_ms), of TOKEN's or of the first holder's.  With RCLI_VAR set,
# of the server started as that variable (rcli_as).
_rcli_any() {
	if [[ -n "${RCLI_VAR:-}" ]]; then rcli_as "$RCLI_VAR" "$@"; else rcli "$@"; fi
}
# set_info_field KEY NAME VALUE: write a field of the first holder's record
# (NAME as for info_field), as another program could.
set_info_field() {
	local m
	case $2 in
	host) m=h ;; pid) m=p ;; user) m=n ;; command) m=c ;; ttl_ms) m=l ;;
	acquired_ms) m=t ;; fence) m=f ;; *) m=$2 ;;
	esac
	_rcli_any EVAL "local tok = redis.call('HKEYS', KEYS[1])[1]
		local r = cjson.decode(redis.call('HGET', KEYS[1], tok))
		r[ARGV[1]] = ARGV[2]
		return redis.call('HSET', KEYS[1], tok, cjson.encode(r))" 1 "$1" "$m" "$3"
}
# FAKE_HOLD: EVAL "$FAKE_HOLD" 1 KEY TOKEN MS: a holder that no rlock
# runs, as SET KEY TOKEN PX MS was for the textbook lock: a plain record
# without metadata, for MS milliseconds (0: no end).
FAKE_HOLD="local t = redis.call('TIME')
	local now, ms = t[1] * 1000 + math.floor(t[2] / 1000), tonumber(ARGV[2])
	redis.call('DEL', KEYS[1])
	redis.call('HSET', KEYS[1], ARGV[1], cjson.encode({k = 'x',
		e = ms > 0 and now + ms or 99999999999999, f = '1', t = now, l = ms}))
	if ms > 0 then redis.call('PEXPIRE', KEYS[1], ms) end
	return 1"
export FAKE_HOLD	# for commands run under rlock, that steal its lock
lock_token() {
	_rcli_any HKEYS "$1" | head -n 1
}
lock_tokens() {
	_rcli_any HKEYS "$1" | sort
}
info_field() {
	local key=$1 name=$2 tok=${3:-}
	[[ -n "$tok" ]] || tok=$(lock_token "$key")
	[[ -n "$tok" ]] || return 0
	_rcli_any HGET "$key" "$tok" | /usr/bin/python3 -c '
import json, sys
raw = sys.stdin.read().strip()
if not raw:
    sys.exit(0)
r = json.loads(raw)
name, tok = sys.argv[1], sys.argv[2]
m = {"host": "h", "pid": "p", "user": "n", "command": "c",
     "ttl_ms": "l", "acquired_ms": "t", "fence": "f", "a": "a",
     "kind": "k", "end_ms": "e"}
if name == "token":
    print(tok)
else:
    v = r.get(m[name], "")
    print("%d" % v if isinstance(v, (int, float)) else v)
' "$name" "$tok"
}

# A loopback port where (at the time of asking) nothing listens.
free_port() {
	local p i
	for ((i = 0; i < 50; i++)); do
		p=$((20000 + RANDOM % 40001))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# ---------------------------------------------------------------------------
# Background processes started by a test
# ---------------------------------------------------------------------------

# with_default_signals CMD [ARGS...]: run CMD with every signal at its
# default disposition.  A signal ignored when the suite started (nohup's
# SIGHUP; SIGINT and SIGQUIT of a script's background job, and of every
# background job of a non-interactive shell, bats's own included) stays
# ignored in everything the shell starts, and rlock rightly keeps it
# ignored for itself and its command; a shell cannot reset it.  So a test
# that sends a signal to rlock or its command, and expects it to act,
# starts them through this (bg_start does).
with_default_signals() {
	env --default-signal "$@"
}

# bg_start VAR CMD [ARGS...]: run CMD in the background with stdout in
# $BATS_TEST_TMPDIR/VAR.out and stderr in VAR.err; its PID goes in VAR.
# Every signal is at its default, as with_default_signals sets them (not
# called here: a function run with '&' would be a shell of its own, and VAR
# its PID rather than CMD's). Stopped by PID in teardown.
bg_start() {
	local var=$1
	shift
	env --default-signal "$@" </dev/null \
		>"$BATS_TEST_TMPDIR/$var.out" 2>"$BATS_TEST_TMPDIR/$var.err" 3>&- &
	printf -v "$var" '%s' "$!"
	echo "$!" >>"$BATS_TEST_TMPDIR/.bg-pids"
}

# bg_wait PID [MAX_MS]: wait for a background job, bounded; sets BG_STATUS
# to its exit status. Returns 1 (and leaves it running) on time-out.
bg_wait() {
	local pid=$1 max_ms=${2:-10000}
	BG_STATUS=
	if ! wait_gone "$pid" "$max_ms"; then
		return 1
	fi
	local st=0
	wait "$pid" || st=$?
	BG_STATUS=$st
	return 0
}

# wait_port_line VAR: wait for the background job VAR (bg_start) to print
# its port as the first line of its output, and set VAR_PORT.  Up to 15 s:
# python3 can start slowly on a loaded machine, and a pyenv shim is slower
# still.
wait_port_line() {
	local var=$1 i port=
	for ((i = 0; i < 750; i++)); do
		# The job opens VAR.out itself: on a loaded machine, not yet.
		port=$(head -n1 "$BATS_TEST_TMPDIR/$var.out" 2>/dev/null) || true
		[[ "$port" =~ ^[0-9]+$ ]] && break
		port=
		sleep 0.02
	done
	if [[ -z "$port" ]]; then
		echo "$var did not start; its stderr: $(head -c 2000 "$BATS_TEST_TMPDIR/$var.err" 2>/dev/null)" >&2
		return 1
	fi
	printf -v "${var}_PORT" '%s' "$port"
}

# Stop every background job of this test by PID.
stop_all_bg() {
	local pid
	[[ -f "$BATS_TEST_TMPDIR/.bg-pids" ]] || return 0
	while read -r pid; do
		if _proc_alive "$pid"; then
			kill -TERM "$pid" 2>/dev/null || true
			if ! wait_gone "$pid" 3000; then
				kill -KILL "$pid" 2>/dev/null || true
				wait_gone "$pid" 2000 || true
			fi
		fi
		wait "$pid" 2>/dev/null || true
	done <"$BATS_TEST_TMPDIR/.bg-pids"
	rm -f "$BATS_TEST_TMPDIR/.bg-pids"
}

# The default teardown of a test: background jobs, then per-test servers.
cleanup_test() {
	stop_all_bg || true
	stop_all_redis || true
}

# ---------------------------------------------------------------------------
# Shared assertions
# ---------------------------------------------------------------------------

# A lowercase UUID, as acquire prints by default.
UUID_RE='^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'

# After `run --separate-stderr`: exactly one line on stderr, starting "rlock: ".
assert_one_error_line() {
	if [[ ${#stderr_lines[@]} -ne 1 || "${stderr_lines[0]}" != "rlock: "* ]]; then
		batslib_print_kv_single_or_multi 8 stderr "$stderr" |
			batslib_decorate "expected exactly one stderr line starting 'rlock: '" |
			fail
	fi
}

# After `run --separate-stderr`: exit 64, one "rlock: " line on stderr,
# nothing on stdout, and nothing written to Redis.
assert_usage_error() {
	assert_equal "$status" 64
	assert_one_error_line
	assert_equal "$output" ""
	assert_equal "$(rcli DBSIZE)" 0
}

# Assert that the text in $2 does not contain $1 (for secrets).
refute_contains() {
	local needle=$1 hay=$2
	if [[ "$hay" == *"$needle"* ]]; then
		batslib_print_kv_single_or_multi 8 needle "$needle" text "$hay" |
			batslib_decorate "text must not contain the string" |
			fail
	fi
}

# json_eval EXPR: evaluate a Python expression over the JSON document on
# stdin (bound to d) and print the result as JSON. Fails on invalid JSON.
json_eval() {
	python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
print(json.dumps(eval(sys.argv[1])))
' "$1"
}

# json_check EXPR: succeed iff the Python expression over d is true.
json_check() {
	local doc
	doc=$(cat)
	if ! python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
sys.exit(0 if eval(sys.argv[1]) else 1)
' "$1" <<<"$doc"; then
		batslib_print_kv_single_or_multi 8 check "$1" json "$doc" |
			batslib_decorate "JSON check failed" |
			fail
	fi
}

# cmd_calls CMD...: the sum of the calls of these commands in INFO
# commandstats (of the default server).
cmd_calls() {
	local stats total=0 c n
	stats=$(rcli INFO commandstats | tr -d '\r')
	for c in "$@"; do
		n=$(sed -n "s/^cmdstat_$c:calls=\\([0-9]*\\),.*/\\1/p" <<<"$stats")
		total=$((total + ${n:-0}))
	done
	echo "$total"
}

# until_listed NAME N: poll (up to 10 s) until N waiters are listed on
# NAME (its waiters hash on the test's server).
until_listed() {
	local i
	for ((i = 0; i < 500; i++)); do
		[[ "$(rcli HLEN "rlock:{$1}:waiters")" == "$2" ]] && return 0
		sleep 0.02
	done
	fail "$(rcli HLEN "rlock:{$1}:waiters") waiters listed on $1, not $2"
}

# until_waiting N STATUS-COMMAND...: until the status command lists N
# waiters (bounded: 10 s), e.g. until_waiting 1 rlock status job.
until_waiting() {
	local n=$1 i
	shift
	for ((i = 0; i < 500; i++)); do
		(( $("$@" | grep -c '^  waiting: ') >= n )) && return 0
		sleep 0.02
	done
	echo "never $n waiters:" >&2
	"$@" >&2
	return 1
}

# assert_between VALUE LOW HIGH [LABEL]: integers, inclusive.
assert_between() {
	local v=$1 lo=$2 hi=$3 label=${4:-value}
	if ! [[ "$v" =~ ^-?[0-9]+$ ]] || ((v < lo || v > hi)); then
		batslib_print_kv_single 8 "$label" "$v" low "$lo" high "$hi" |
			batslib_decorate "value out of range" |
			fail
	fi
}

# wait_replica_up MASTER_VAR REPLICA_VAR: bounded (10 s) wait until the
# replica's link is up and the master counts it.
wait_replica_up() {
	local i
	for ((i = 0; i < 500; i++)); do
		if rcli_as "$2" INFO replication | grep -q '^master_link_status:up' &&
			rcli_as "$1" INFO replication | grep -q '^connected_slaves:1'; then
			return 0
		fi
		sleep 0.02
	done
	fail "the replica did not connect to its master within 10 s"
}

# Per-file defaults: one shared server, flushed before every test.
default_setup_file() {
	start_redis
}

default_teardown_file() {
	stop_all_redis
}

default_setup() {
	require_rlock
	unset_rlock_env
	rcli FLUSHALL >/dev/null
	rcli CONFIG RESETSTAT >/dev/null
}

# No setting of rlock's from the caller's environment (RLOCK_URL is the
# test server's).
unset_rlock_env() {
	unset RLOCK_TOKEN RLOCK_PREFIX RLOCK_PASSWORD REDISCLI_AUTH RLOCK_CONFIG
}

# A test file whose every test gets a redis-server of its own (RLOCK_URL
# names it), runs in its temporary directory and may use the exec and
# distributed helpers starts in three lines:
#
#	load helpers
#	setup() { own_server_setup; }
#	teardown() { test_teardown; }
own_server_setup() {
	load dist-helpers
	load exec-helpers
	require_rlock
	unset_rlock_env
	start_redis
	cd "$BATS_TEST_TMPDIR" || return 1
}

# The same with one server for the whole file, flushed before each test
# (cheaper where tests are many and need nothing of the server's own):
#
#	load helpers
#	setup_file() { default_setup_file; }
#	teardown_file() { default_teardown_file; }
#	setup() { file_server_setup; }
#	teardown() { test_teardown; }
file_server_setup() {
	load dist-helpers
	load exec-helpers
	default_setup
	cd "$BATS_TEST_TMPDIR" || return 1
}

# The teardown of both: stray grandchildren, tmux, background jobs, and the
# test's own servers.
test_teardown() {
	exec_teardown
}
