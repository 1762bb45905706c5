#!/usr/bin/env bats
# tty.bats: the waiting line. When standard error is a terminal (and -q is
# not given), a blocked `acquire -w` or `exec -w` keeps one status line on
# stderr, rewritten in place about every second ("\r\033[K" + text), and
# clears it when the lock is taken or the wait ends. Nothing of it reaches a
# file or a pipe, and -q hides it.
#
# The terminals are panes of a private tmux server (one per test, with its
# own socket name, killed in teardown). Each pane runs a small script that
# records the PID of the rlock it runs, prints "RC=<status>" when rlock has
# exited, and then sleeps so that the screen can still be captured. Every PID
# goes to the helpers' background list and is stopped by PID in teardown.

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }

setup() {
	default_setup
	command -v tmux >/dev/null || skip "tmux is not installed"
	TSOCK="rlock-tty-$$-${BATS_TEST_NUMBER}-$RANDOM"
	TSERVER_PID=
}

teardown() {
	# rlock in the panes, the pane scripts and the holders, by PID.
	stop_all_bg || true
	if [[ -n "$TSOCK" ]]; then
		tmux -L "$TSOCK" kill-server 2>/dev/null || true
	fi
	if [[ -n "$TSERVER_PID" ]] && ! wait_gone "$TSERVER_PID" 3000; then
		kill -KILL "$TSERVER_PID" 2>/dev/null || true
		wait_gone "$TSERVER_PID" 2000 || true
	fi
	cleanup_test
}

tm() {
	tmux -L "$TSOCK" "$@"
}

# pane_start NAME [--stderr FILE] CMD [ARGS...]: run CMD in a new 200x20
# tmux session NAME, its stdin, stdout and stderr on the pane's terminal (or
# stderr to FILE). CMD's PID is written to $BATS_TEST_TMPDIR/NAME.pid.
pane_start() {
	local name=$1
	shift
	local errfile=
	if [[ "$1" == --stderr ]]; then
		errfile=$2
		shift 2
	fi
	local script="$BATS_TEST_TMPDIR/$name.sh" pidfile="$BATS_TEST_TMPDIR/$name.pid"
	local redir='' i pid panepid
	[[ -n "$errfile" ]] && redir="2>$(printf '%q' "$errfile")"
	{
		echo '#!/bin/bash'
		printf 'export RLOCK_URL=%q\n' "$RLOCK_URL"
		echo 'unset RLOCK_TOKEN RLOCK_PREFIX RLOCK_PASSWORD REDISCLI_AUTH RLOCK_CONFIG'
		printf 'bash -c '\''echo $$ >"$0"; exec "$@"'\'' %q' "$pidfile"
		printf ' %q' "$@"
		echo " $redir"
		echo 'echo "RC=$?"'
		echo 'exec sleep 120'
	} >"$script"
	rm -f "$pidfile"
	if [[ -z "$TSERVER_PID" ]]; then
		tm -f /dev/null new-session -d -s "$name" -x 200 -y 20 "bash $(printf '%q' "$script")"
		TSERVER_PID=$(tm display-message -p -t "=$name:" '#{pid}')
	else
		tm new-session -d -s "$name" -x 200 -y 20 "bash $(printf '%q' "$script")"
	fi
	panepid=$(tm display-message -p -t "=$name:" '#{pane_pid}')
	# At most 5 s for the pane to start its command.
	for ((i = 0; i < 250; i++)); do
		[[ -s "$pidfile" ]] && break
		sleep 0.02
	done
	pid=$(cat "$pidfile" 2>/dev/null)
	[[ -n "$pid" ]] || {
		echo "pane $name did not start its command" >&2
		return 1
	}
	# The command first, then the script that runs it.
	echo "$pid" >>"$BATS_TEST_TMPDIR/.bg-pids"
	echo "$panepid" >>"$BATS_TEST_TMPDIR/.bg-pids"
}

# The pane's screen, trailing blank lines dropped.
pane_text() {
	tm capture-pane -p -t "=$1:" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
}

# pane_wait NAME REGEX [MAX_MS]: wait (bounded, 100 ms steps) until the
# pane's screen matches the extended REGEX; PANE holds the last capture.
pane_wait() {
	local name=$1 re=$2 max_ms=${3:-8000} i
	for ((i = 0; i <= max_ms / 100; i++)); do
		PANE=$(pane_text "$name")
		if grep -Eq -- "$re" <<<"$PANE"; then
			return 0
		fi
		sleep 0.1
	done
	batslib_print_kv_single_or_multi 8 pane "$name" regex "$re" screen "$PANE" |
		batslib_decorate "pane never matched" >&2
	return 1
}

# The "waited" value of the waiting line in $1, in milliseconds.
waited_ms() {
	local v
	v=$(grep -Eo 'waited [0-9.]+(ms|s|m)' <<<"$1" | tail -1 | sed 's/^waited //')
	case "$v" in
	*ms) echo "${v%ms}" | cut -d. -f1 ;;
	*s) awk -v s="${v%s}" 'BEGIN { printf "%d\n", s * 1000 }' ;;
	*m) awk -v s="${v%m}" 'BEGIN { printf "%d\n", s * 60000 }' ;;
	*) echo -1 ;;
	esac
}

# Wait (bounded) until the lock NAME is held in Redis.
wait_held() {
	local i
	for ((i = 0; i < 250; i++)); do
		[[ "$(rcli EXISTS "rlock:{$1}")" == 1 ]] && return 0
		sleep 0.02
	done
	echo "lock $1 never became held" >&2
	return 1
}

# Fail unless no line of $2 contains $1 (the text is named in the message).
refute_text() {
	local needle=$1 hay=$2 what=${3:-text}
	if [[ "$hay" == *"$needle"* ]]; then
		batslib_print_kv_single_or_multi 8 needle "$needle" "$what" "$hay" |
			batslib_decorate "$what must not contain the string" |
			fail
	fi
}

# Fail if FILE holds a carriage return or an escape character.
refute_control_chars() {
	if LC_ALL=C grep -q $'[\r\033]' "$1"; then
		batslib_print_kv_single 8 file "$1" bytes "$(od -c "$1" | head -5)" |
			batslib_decorate "file holds terminal control characters" |
			fail
	fi
}

@test "tty: a blocked acquire shows one waiting line that it rewrites in place" {
	bg_start HOLDER "$RLOCK" exec tty-a -- sleep 30
	wait_held tty-a

	pane_start waiter "$RLOCK" acquire -w 20s tty-a
	# About two seconds into the wait.
	pane_wait waiter 'waited [2-9](\.[0-9]+)?s' 8000
	local first=$PANE
	assert_regex "$first" "rlock: waiting for tty-a: held by [^ ]+ pid $HOLDER \\(sleep\\) for [0-9.]+m?s, expires in [0-9.]+m?s; waited [0-9.]+m?s, [0-9.]+m?s left"
	[[ "$first" == *"waiting for tty-a"* && "$first" == *"held by"* &&
		"$first" == *"waited"* && "$first" == *" left"* ]]
	# One line, rewritten in place: not a new line per update.
	assert_equal "$(grep -c 'waiting for' <<<"$first")" 1
	assert_equal "$(grep -c . <<<"$first")" 1

	local w1 w2 i
	w1=$(waited_ms "$first")
	assert_between "$w1" 1500 9000 waited_ms
	# A later capture shows the wait advanced (bounded: at most 5 s).
	for ((i = 0; i < 50; i++)); do
		sleep 0.1
		PANE=$(pane_text waiter)
		w2=$(waited_ms "$PANE")
		((w2 > w1)) && break
	done
	((w2 > w1)) || fail "waited did not advance: $w1 ms, then $w2 ms; screen: $PANE"
	assert_equal "$(grep -c 'waiting for' <<<"$PANE")" 1
	assert_equal "$(grep -c . <<<"$PANE")" 1
	_proc_alive "$(cat "$BATS_TEST_TMPDIR/waiter.pid")"
}

@test "tty: the waiting line is cleared when the lock is taken (acquire)" {
	bg_start HOLDER "$RLOCK" exec tty-b -- sleep 30
	wait_held tty-b

	pane_start waiter "$RLOCK" acquire -w 20s tty-b
	pane_wait waiter 'waiting for tty-b: held by .*waited [1-9](\.[0-9]+)?s, .* left' 8000

	# The holder releases: SIGTERM goes to its sleep, then it lets go.
	kill -TERM "$HOLDER"
	bg_wait "$HOLDER" 10000
	pane_wait waiter '^RC=' 8000

	# The token is alone on the first line: the waiting line was cleared
	# (a bare "\r" would leave its tail after the token).
	local -a lines
	mapfile -t lines <<<"$PANE"
	assert_regex "${lines[0]}" "$UUID_RE"
	assert_equal "${lines[1]}" "RC=0"
	refute_text "waiting for" "$PANE" screen
	refute_text "held by" "$PANE" screen
	# The token on screen is the one that holds the lock now.
	assert_equal "$(rcli HKEYS 'rlock:{tty-b}')" "${lines[0]}"
}

@test "tty: exec shows the waiting line and clears it before the command runs" {
	local token
	token=$(rlock acquire -t 30s tty-e)
	[[ "$token" =~ $UUID_RE ]]

	pane_start waiter "$RLOCK" exec -w 20s tty-e -- echo ran-under-lock
	pane_wait waiter 'waiting for tty-e: held by .*waited [1-9](\.[0-9]+)?s, .* left' 8000
	assert_equal "$(grep -c 'waiting for' <<<"$PANE")" 1
	refute_text "ran-under-lock" "$PANE" screen

	rlock release --token "$token" tty-e
	pane_wait waiter '^RC=' 8000
	local -a lines
	mapfile -t lines <<<"$PANE"
	assert_equal "${lines[0]}" "ran-under-lock"
	assert_equal "${lines[1]}" "RC=0"
	refute_text "waiting for" "$PANE" screen
	refute_text "held by" "$PANE" screen
}

@test "tty: stderr to a file or a pipe gets no waiting line" {
	bg_start HOLDER "$RLOCK" exec tty-c -- sleep 30
	wait_held tty-c

	# stdout on the terminal, stderr to a file.
	pane_start tofile --stderr "$BATS_TEST_TMPDIR/tofile.err" \
		"$RLOCK" acquire -w 4s tty-c
	# No terminal at all: stderr to a file.
	bg_start NOTTY "$RLOCK" acquire -w 4s tty-c
	# stderr to a pipe.
	bg_start PIPED bash -c '"$0" acquire -w 4s tty-c 2>&1 | cat' "$RLOCK"
	# The control: the same wait with stderr on a terminal does show it.
	pane_start control "$RLOCK" acquire -w 4s tty-c

	pane_wait control 'waiting for tty-c: held by .*waited [2-9](\.[0-9]+)?s, .* left' 8000
	# By now the others have been waiting two seconds as well.
	local f
	for f in "$BATS_TEST_TMPDIR/tofile.err" "$BATS_TEST_TMPDIR/NOTTY.err" \
		"$BATS_TEST_TMPDIR/NOTTY.out" "$BATS_TEST_TMPDIR/PIPED.out"; do
		refute_text "waiting for" "$(cat "$f")" "$f"
		refute_control_chars "$f"
	done
	refute_text "waiting for" "$(pane_text tofile)" "tofile screen"

	# The waits end busy (exit 1); still nothing, on any of them.
	pane_wait tofile '^RC=1$' 8000
	refute_text "waiting for" "$PANE" "tofile screen"
	bg_wait "$NOTTY" 8000
	assert_equal "$BG_STATUS" 1
	bg_wait "$PIPED" 8000
	assert_equal "$BG_STATUS" 0 # cat's status
	for f in "$BATS_TEST_TMPDIR/tofile.err" "$BATS_TEST_TMPDIR/NOTTY.err" \
		"$BATS_TEST_TMPDIR/NOTTY.out" "$BATS_TEST_TMPDIR/PIPED.out"; do
		refute_text "waiting for" "$(cat "$f")" "$f"
		refute_control_chars "$f"
	done
	assert_equal "$(cat "$BATS_TEST_TMPDIR/tofile.err")" ""
	assert_equal "$(cat "$BATS_TEST_TMPDIR/NOTTY.err")" ""
	assert_equal "$(cat "$BATS_TEST_TMPDIR/PIPED.out")" ""
}

@test "tty: -q at a terminal shows nothing; without -q the line is cleared when the wait ends" {
	bg_start HOLDER "$RLOCK" exec tty-d -- sleep 30
	wait_held tty-d

	pane_start quiet "$RLOCK" -q acquire -w 4s tty-d
	pane_start exec-quiet "$RLOCK" exec -q -w 4s tty-d -- echo must-not-run
	pane_start loud "$RLOCK" acquire -w 4s tty-d

	# The control shows its line two seconds in; the quiet ones show nothing.
	pane_wait loud 'waiting for tty-d: held by .*waited [2-9](\.[0-9]+)?s, .* left' 8000
	assert_equal "$(pane_text quiet)" ""
	assert_equal "$(pane_text exec-quiet)" ""

	# All give up busy (exit 1). The loud one has cleared its line: the
	# "RC=1" the script prints next is alone on the first line.
	pane_wait loud '^RC=' 8000
	assert_equal "$PANE" "RC=1"
	pane_wait quiet '^RC=' 8000
	assert_equal "$PANE" "RC=1"
	pane_wait exec-quiet '^RC=' 8000
	assert_equal "$PANE" "RC=1"
}

@test "tty: watch at a terminal redraws who holds what and the newest events" {
	rlock exec tty-w -- true
	pane_start watcher "$RLOCK" watch tty-w
	pane_wait watcher '^rlock watch: 1 lock, '
	pane_wait watcher '^tty-w: free'
	bg_start HOLDER "$RLOCK" exec tty-w -- sleep 30
	wait_held tty-w
	# Redrawn in place: the status line changes, the event is listed.
	pane_wait watcher "^tty-w: held by [^ ]+ pid $HOLDER \\(sleep\\)"
	pane_wait watcher '^  [0-9-]+ [0-9:.]+ tty-w acquired by .*\(sleep\)'
	assert_equal "$(grep -c '^rlock watch: ' <<<"$PANE")" 1
	assert_equal "$(grep -c '^tty-w: ' <<<"$PANE")" 1
	kill -TERM "$HOLDER"
	pane_wait watcher '^  .* tty-w released by .*\(sleep\) .*: killed by SIGTERM'
	pane_wait watcher '^tty-w: free'
	# Ctrl-C ends it cleanly.
	tm send-keys -t "=watcher:" C-c
	pane_wait watcher 'RC=0$'
}
