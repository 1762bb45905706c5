# exec-helpers.bash: helpers for exec.bats, exec-loss.bats and exec-signals.bats.
#
# Loaded after helpers.bash. It adds what only the exec tests need: small
# child scripts written into the test's temp dir, bounded waits for the files
# those children write, processes that are not our children (grandchildren,
# orphans) recorded by PID and stopped by PID in teardown, a private tmux
# server for the terminal tests, and Redis restarted on the same port.

# The key of lock NAME under the default prefix.
lock_key() {
	echo "rlock:{$1}"
}

# Wait (bounded) until the lock NAME is held, i.e. the command is about to run.
wait_held() {
	local i
	for ((i = 0; i < 250; i++)); do
		[[ "$(rcli EXISTS "$(lock_key "$1")")" == 1 ]] && return 0
		sleep 0.02
	done
	return 1
}

# Wait (bounded, 10 s) until a waiter is blocked on the server (its BLPOP
# shows in CLIENT LIST).
wait_waiting() {
	local i
	for ((i = 0; i < 500; i++)); do
		rcli CLIENT LIST | grep -q ' cmd=blpop ' && return 0
		sleep 0.02
	done
	return 1
}

# list_waiter NAME TOKEN UNTIL: an exclusive waiter TOKEN listed for lock
# NAME until UNTIL (server ms), its first attempt now, its entry as rlock
# writes it: a waiter that no rlock process stands behind, for a release's
# grant to be looked at alone.
list_waiter() {
	local now
	now=$(server_ms)
	rcli HSET "$(lock_key "$1"):waiters" "$2" "{\"s\":$now,\"u\":$3,\"k\":\"x\",\"o\":\"${now}000\",\"h\":\"h$2\",\"p\":\"2\",\"n\":\"u\",\"c\":\"c\"}" >/dev/null
	rcli PEXPIRE "$(lock_key "$1"):waiters" 60000 >/dev/null
}

# make_script NAME BODY: write an executable /bin/sh script into the test's
# temp dir and print its path.
make_script() {
	local path="$BATS_TEST_TMPDIR/$1"
	printf '#!/bin/sh\n%s\n' "$2" >"$path"
	chmod +x "$path"
	echo "$path"
}

# wait_file FILE [MAX_MS]: wait (bounded, 20 ms steps) until FILE exists and
# is not empty; returns 1 on time-out.
wait_file() {
	local f=$1 max_ms=${2:-5000} i
	for ((i = 0; i < max_ms / 20; i++)); do
		[[ -s "$f" ]] && return 0
		sleep 0.02
	done
	[[ -s "$f" ]]
}

# wait_file_content FILE TEXT [MAX_MS]: wait until FILE's content is TEXT.
wait_file_content() {
	local f=$1 want=$2 max_ms=${3:-5000} i got
	# (read, not $(cat): no process forked a poll; newlines at the end
	# dropped, as $(...) drops them)
	for ((i = 0; i <= max_ms / 20; i++)); do
		if [[ -s "$f" ]]; then
			IFS= read -r -d '' got <"$f" || true
			[[ "${got%"${got##*[!$'\n']}"}" == "$want" ]] && return 0
		fi
		((i < max_ms / 20)) && sleep 0.02
	done
	return 1
}

# assert_lock_free NAME: status says free (exit 1) and the key is absent.
assert_lock_free() {
	local name=$1 st=0 out
	out=$(rlock status "$name" 2>&1) || st=$?
	if [[ $st -ne 1 ]]; then
		batslib_print_kv_single_or_multi 8 status "$st" output "$out" |
			batslib_decorate "lock '$name' should be free (status exits 1)" |
			fail
	fi
	assert_equal "$(rcli EXISTS "$(lock_key "$name")")" 0
}

# track_pid PID COMM: remember a process that is not our child (so bg_start
# cannot stop it) so that teardown stops it if a test left it running. COMM
# is its expected /proc/PID/comm, checked before killing, so that a PID reused
# by somebody else is never signalled.
track_pid() {
	[[ "$1" =~ ^[0-9]+$ ]] || return 0
	echo "$1 $2" >>"$BATS_TEST_TMPDIR/.exec-pids"
}

_pid_is() {
	local pid=$1 comm=$2 c
	_proc_alive "$pid" || return 1
	IFS= read -r c 2>/dev/null <"/proc/$pid/comm" || return 1
	[[ "$c" == "$comm" ]]
}

stop_tracked_pids() {
	local pid comm
	[[ -f "$BATS_TEST_TMPDIR/.exec-pids" ]] || return 0
	while read -r pid comm; do
		_pid_is "$pid" "$comm" || continue
		kill -CONT "$pid" 2>/dev/null || true
		kill -TERM "$pid" 2>/dev/null || true
		if ! wait_gone "$pid" 2000 && _pid_is "$pid" "$comm"; then
			kill -KILL "$pid" 2>/dev/null || true
			wait_gone "$pid" 2000 || true
		fi
	done <"$BATS_TEST_TMPDIR/.exec-pids"
	rm -f "$BATS_TEST_TMPDIR/.exec-pids"
}

# ---------------------------------------------------------------------------
# A private tmux server (its socket in a short /tmp dir: sun_path is small)
# ---------------------------------------------------------------------------

# tmux_start COMMAND: start a detached session "t" running COMMAND (given to
# the shell), 150x20, kept on screen after COMMAND ends. Sets TMUX_SOCK.
tmux_start() {
	command -v tmux >/dev/null || skip "tmux is not installed"
	TMUX_DIR=$(mktemp -d /tmp/rlx.XXXXXX)
	TMUX_SOCK="$TMUX_DIR/tmux.sock"
	echo "$TMUX_DIR" >>"$BATS_TEST_TMPDIR/.tmux-dirs"
	tmux -S "$TMUX_SOCK" -f /dev/null new-session -d -s t -x 150 -y 20 "$1"
	tmux -S "$TMUX_SOCK" set-option -t t remain-on-exit on >/dev/null
}

# tty_wrapper ARGS...: write run.sh, which runs rlock with ARGS on the pane's
# terminal, stderr to rlock.err, then records "exit:N" in the file "status".
# It ignores nothing: a trap (not SIG_IGN, which rlock would inherit) keeps
# the wrapper alive through a Ctrl-C.
tty_wrapper() {
	{
		printf '#!/bin/bash\ntrap : INT\ncd %q\n' "$BATS_TEST_TMPDIR"
		printf '%q ' "$RLOCK" -u "$RLOCK_URL" "$@"
		printf '2>rlock.err\necho "exit:$?" > status\n'
	} >run.sh
	chmod +x run.sh
}

tmux_cmd() {
	tmux -S "$TMUX_SOCK" "$@"
}

# tmux_wait_screen REGEX [MAX_MS]: wait until the pane shows a line matching
# REGEX (grep -E); returns 1 on time-out. The last capture is in TMUX_SCREEN.
tmux_wait_screen() {
	local re=$1 max_ms=${2:-5000} i
	for ((i = 0; i < max_ms / 50; i++)); do
		TMUX_SCREEN=$(tmux_cmd capture-pane -p -t t 2>/dev/null)
		grep -Eq -- "$re" <<<"$TMUX_SCREEN" && return 0
		sleep 0.05
	done
	return 1
}

# check_reads_terminal [OPTION...]: on a pane's terminal, `rlock exec
# OPTION... job` runs a command that reads a line typed there and prints it;
# rlock exits 0 and releases.
check_reads_terminal() {
	tty_wrapper exec "$@" job -- sh -c 'read a; echo "got:$a"'
	tmux_start "$BATS_TEST_TMPDIR/run.sh"
	wait_held job || fail "the lock was never taken: $(cat rlock.err 2>/dev/null)"
	tmux_cmd send-keys -t t hello Enter
	tmux_wait_screen '^got:hello$' 10000 || fail "no got:hello on the terminal: $TMUX_SCREEN"
	wait_file status 10000 || fail "rlock did not finish: $(cat rlock.err 2>/dev/null)"
	assert_equal "$(cat status)" exit:0
	assert_lock_free job
}

stop_tmux() {
	local d
	[[ -f "$BATS_TEST_TMPDIR/.tmux-dirs" ]] || return 0
	while read -r d; do
		if [[ -S "$d/tmux.sock" ]]; then
			tmux -S "$d/tmux.sock" kill-server 2>/dev/null || true
		fi
		if [[ "$d" == /tmp/rlx.* ]]; then rm -rf -- "$d"; fi
	done <"$BATS_TEST_TMPDIR/.tmux-dirs"
	rm -f "$BATS_TEST_TMPDIR/.tmux-dirs"
}

# ---------------------------------------------------------------------------
# Redis restarted empty on the same port
# ---------------------------------------------------------------------------

# restart_redis_empty VAR [ARGS...]: stop the server started as VAR and start
# a fresh one (no data, unless ARGS such as --appendonly yes load some from
# its dir) on the same port, socket and dir; updates VAR_PID. The new PID is
# recorded like start_redis_as's, so stop_all_redis stops it.
restart_redis_empty() {
	local var=$1 portv="${1}_PORT" sockv="${1}_SOCK" dirv="${1}_DIR" pidv="${1}_PID"
	local port=${!portv} sock=${!sockv} dir=${!dirv} pid try i
	shift
	_kill_pid "${!pidv}"
	for ((try = 0; try < 10; try++)); do
		rm -f "$sock"
		redis-server --port "$port" --bind 127.0.0.1 \
			--unixsocket "$sock" --unixsocketperm 700 \
			--save '' --appendonly no --daemonize no \
			--dir "$dir" --logfile "$dir/redis-restart.log" "$@" \
			</dev/null >>"$dir/stdout.log" 2>&1 3>&- &
		pid=$!
		echo "$pid" >>"$(_scope_dir)/.redis-pids"
		for ((i = 0; i < 250; i++)); do
			_proc_alive "$pid" || break
			if [[ -S "$sock" ]] && redis-cli -s "$sock" ping 2>/dev/null | grep -q PONG; then
				printf -v "$pidv" '%s' "$pid"
				# shellcheck disable=SC2163 # export the variable named by pidv
				export "$pidv"
				return 0
			fi
			sleep 0.02
		done
		_kill_pid "$pid"
		sleep 0.1
	done
	echo "restart_redis_empty: could not restart redis-server on port $port" >&2
	return 1
}

# The teardown of every exec test: stray grandchildren, tmux, then the
# shared cleanup (background jobs, per-test servers).
exec_teardown() {
	stop_tracked_pids || true
	stop_tmux || true
	cleanup_test
}
