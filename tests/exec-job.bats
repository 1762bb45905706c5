#!/usr/bin/env bats
# exec-job.bats: the command never runs without the lock -- under job
# control (SIGTSTP, SIGSTOP, Ctrl-Z and fg), at a terminal (a command that
# reads it, Ctrl-C), when rlock is SIGKILLed (the whole process tree goes
# with it), and under nohup (signals ignored at start stay ignored).
#
# The terminal cases run in a private tmux server: either a script on the
# pane's terminal (no job control, rlock in the terminal's foreground
# group), or an interactive bash that runs the job, for Ctrl-Z and fg.
# Ticking commands append a line to the file "ticks" every 100 ms; "the
# command did not run" is checked as "ticks did not grow".

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { file_server_setup; }
teardown() { test_teardown; }

# The one-letter state of PID ("S", "T", ...), or nothing if it is gone.
proc_state() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	echo "${stat%% *}"
}

# wait_state PID STATE [MAX_MS]: wait (bounded) until PID is in STATE.
wait_state() {
	local pid=$1 want=$2 max_ms=${3:-5000} i
	for ((i = 0; i < max_ms / 20; i++)); do
		[[ "$(proc_state "$pid")" == "$want" ]] && return 0
		sleep 0.02
	done
	return 1
}

# wait_guard PGID: wait (bounded, 5 s) until rlock's guard has joined the
# process group PGID, which it does once the command has run 10 ms; sets
# GUARD to its pid.
wait_guard() {
	local i
	for ((i = 0; i < 250; i++)); do
		GUARD=$(ps -e -o pid=,pgid=,comm= | awk -v g="$1" '$2 == g && $3 == "rlock-guard" { print $1 }')
		[[ -n "$GUARD" ]] && return 0
		sleep 0.02
	done
	return 1
}

# A command that writes its pid to "cpid", then appends a tick to "ticks"
# every 100 ms, until the file "stop" appears (at most 60 s).  It records a
# SIGTERM in "got" and exits 5.
ticker() {
	make_script tick.sh 'trap "echo TERM >> got; exit 5" TERM
echo $$ > cpid
i=0
while [ ! -e stop ] && [ $i -lt 600 ]; do
	echo $i >> ticks
	i=$((i + 1))
	sleep 0.1
done' >/dev/null
}

ticks() {
	wc -l <ticks 2>/dev/null | tr -d ' ' || echo 0
}

# wait_ticks_past N [MAX_MS]: wait until ticks has grown past N lines.
wait_ticks_past() {
	local n=$1 max_ms=${2:-5000} i
	for ((i = 0; i < max_ms / 20; i++)); do
		(( $(ticks) > n )) && return 0
		sleep 0.02
	done
	return 1
}

# assert_still N: ticks holds N lines and still does half a second later
# (five ticks' time: a running ticker would have added some).
assert_still() {
	assert_equal "$(ticks)" "$1"
	sleep 0.5
	assert_equal "$(ticks)" "$1"
}

# wait_taken_by_other NAME [MAX_MS]: poll until another client can acquire
# NAME (the first holder's lock has expired); sets OTHER_TOKEN.
wait_taken_by_other() {
	local i
	for ((i = 0; i < ${2:-15000} / 50; i++)); do
		if OTHER_TOKEN=$(rlock acquire -n -t 30s "$1" 2>/dev/null); then
			return 0
		fi
		sleep 0.05
	done
	return 1
}

# ---------------------------------------------------------------------------
# SIGKILL: the whole tree goes
# ---------------------------------------------------------------------------

@test "exec-job: SIGKILL of rlock takes a three-level process tree down within a second" {
	# tree.sh -> sh -> sleep, and a second sleep under tree.sh itself.
	make_script tree.sh 'echo $$ > p1
sh -c '\''echo $$ > p2; sleep 101 & echo $! > p3; wait'\'' &
sleep 102 & echo $! > p4
wait' >/dev/null
	bg_start R "$RLOCK" exec -t 30s job -- ./tree.sh
	local f
	for f in p1 p2 p3 p4; do
		wait_file "$f" 10000 || fail "the tree did not start ($f): $(cat R.err)"
	done
	track_pid "$(cat p1)" tree.sh
	track_pid "$(cat p2)" sh
	track_pid "$(cat p3)" sleep
	track_pid "$(cat p4)" sleep
	wait_guard "$(cat p1)" || fail "no guard in the command's group"
	kill -KILL "$R"
	bg_wait "$R" 5000 || fail "rlock survived SIGKILL"
	for f in p1 p2 p3 p4; do
		wait_gone "$(cat "$f")" 1000 ||
			fail "$f ($(cat "$f")) still runs a second after rlock was killed"
	done
}

@test "exec-job: the command leads its own group, which holds rlock's guard until the command ends" {
	ticker
	bg_start R "$RLOCK" exec job -- ./tick.sh
	wait_file cpid 10000 || fail "the command did not start: $(cat R.err)"
	local c g
	c=$(cat cpid)
	assert_equal "$(ps -o pgid= -p "$c" | tr -d ' ')" "$c"
	wait_guard "$c" || fail "no rlock-guard in the command's group $c: $(ps -e -o pid,pgid,comm)"
	g=$GUARD
	assert_equal "$(ps -o ppid= -p "$g" | tr -d ' ')" "$R"
	touch stop
	bg_wait "$R" 10000 || fail "rlock did not finish"
	assert_equal "$BG_STATUS" 0
	wait_gone "$g" 2000 || fail "the guard $g outlived rlock"
}

# ---------------------------------------------------------------------------
# SIGSTOP and SIGTSTP sent to rlock (no terminal)
# ---------------------------------------------------------------------------

@test "exec-job: SIGSTOP of rlock: the command is signalled when the lock's validity ends; continued, rlock exits 75" {
	ticker
	bg_start R "$RLOCK" exec -t 2s job -- ./tick.sh
	wait_file cpid 10000 || fail "the command did not start: $(cat R.err)"
	track_pid "$(cat cpid)" tick.sh
	wait_guard "$(cat cpid)" || fail "no guard in the command's group"
	kill -STOP "$R"
	# Not stopped, the command would tick on for 60 s.
	wait_file got 10000 || fail "the command was not signalled while rlock was stopped"
	assert_equal "$(cat got)" TERM
	wait_gone "$(cat cpid)" 2000 || fail "the command outlived its lock"
	kill -CONT "$R"
	bg_wait "$R" 10000 || fail "rlock did not finish once continued"
	assert_equal "$BG_STATUS" 75
	grep -q "lock 'job' was lost" R.err || fail "no loss line: $(cat R.err)"
}

# bg_job VAR CMD...: bg_start CMD in a process group of its own, as a shell
# with job control starts a job.  The kernel discards SIGTSTP sent to a
# process in an orphaned group (none of its members has a parent in
# another group of the session: nobody could continue it), which the
# test's own group may well be under make and CI; this one has bats's
# shell for a parent.
bg_job() {
	local var=$1
	shift
	bg_start "$var" python3 -c 'import os, sys
os.setpgid(0, 0)
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

# suspend_ticker TTL [killed-ok]: run the ticker under rlock exec -t TTL
# (as R), then send rlock SIGTSTP and wait until both are stopped.  Sets C
# (the command's pid) and N (its ticks when stopped).  With killed-ok, a
# command already killed is as good as stopped: under a TTL shorter than a
# busy machine's polling, rlock's guard may have killed the stopped command
# at the lock's end before the test saw it stopped (a CI run under ASan
# saw it a zombie, rlock being stopped); it never runs again either way.
suspend_ticker() {
	local st
	ticker
	bg_job R "$RLOCK" exec -t "$1" job -- ./tick.sh
	wait_file cpid 10000 || fail "the command did not start: $(cat R.err)"
	C=$(cat cpid)
	track_pid "$C" tick.sh
	kill -TSTP "$R"
	wait_state "$R" T || fail "rlock did not stop: $(proc_state "$R")"
	if ! wait_state "$C" T; then
		st=$(proc_state "$C")
		[[ ${2:-} == killed-ok && ($st == Z || -z $st) ]] ||
			fail "the command was not suspended with rlock: $st"
	fi
	N=$(ticks)
}

@test "exec-job: SIGTSTP to rlock suspends the command too; continued within the TTL it goes on" {
	suspend_ticker 10s
	local n=$N
	assert_still "$n"
	kill -CONT "$R"
	wait_ticks_past "$n" 5000 || fail "the command did not go on once rlock was continued"
	touch stop
	bg_wait "$R" 10000 || fail "rlock did not finish"
	assert_equal "$BG_STATUS" 0
	assert_lock_free job
}

@test "exec-job: suspended past the TTL, the command never runs again, another holder gets the lock, rlock exits 75" {
	suspend_ticker 1s killed-ok
	local c=$C n=$N
	wait_taken_by_other job || fail "the lock never expired while rlock was stopped"
	# Two holders now, on paper: the first one's command must not run.
	assert_still "$n"
	kill -CONT "$R"
	bg_wait "$R" 10000 || fail "rlock did not finish once continued"
	assert_equal "$BG_STATUS" 75
	assert_equal "$(ticks)" "$n"
	wait_gone "$c" 2000 || fail "the command is still there"
	[[ ! -e got ]] || fail "the command ran a TERM handler after losing its lock"
	grep -q "lock 'job' was lost.*suspended" R.err || fail "no loss line: $(cat R.err)"
	# The other holder keeps the lock.
	assert_equal "$(rcli HKEYS "$(lock_key job)")" "$OTHER_TOKEN"
}

# ---------------------------------------------------------------------------
# nohup and inherited ignored signals
# ---------------------------------------------------------------------------

@test "exec-job: under nohup, SIGHUP while waiting does not end rlock; it runs the command once the lock is free" {
	local t
	t=$(rlock acquire -t 30s job)
	bg_start R nohup "$RLOCK" exec -w 30s job -- sh -c 'echo ran > ran'
	wait_waiting || fail "rlock never waited: $(cat R.err)"
	kill -HUP "$R"
	rlock release --token "$t" job
	bg_wait "$R" 10000 || fail "rlock did not finish"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat ran 2>/dev/null)" ran
	assert_lock_free job
}

@test "exec-job: under nohup, SIGHUP while the command runs is not passed on" {
	# The command sets its own HUP handler (nohup's SIG_IGN would otherwise
	# hide a forwarded HUP) and records one in "got".
	cat >hup.py <<'EOF'
import os, signal, time
signal.signal(signal.SIGHUP, lambda *a: open("got", "a").write("HUP\n"))
open("ready", "w").write(str(os.getpid()))
end = time.monotonic() + 30
while not os.path.exists("stop") and time.monotonic() < end:
    time.sleep(0.02)
EOF
	bg_start R nohup "$RLOCK" exec job -- python3 hup.py
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	kill -HUP "$R"
	# rlock is still there, holding the lock, and passed nothing on.
	wait_state "$R" S 2000 || fail "rlock is not running: $(proc_state "$R")"
	assert_equal "$(rlock status job >/dev/null; echo $?)" 0
	touch stop
	bg_wait "$R" 10000 || fail "rlock did not finish"
	assert_equal "$BG_STATUS" 0
	[[ ! -e got ]] || fail "the command got SIGHUP: $(cat got)"
}

@test "exec-job: a background job's ignored SIGINT stays ignored while rlock waits" {
	local t
	t=$(rlock acquire -t 30s job)
	bg_start R bash -c 'trap "" INT QUIT; exec "$@"' _ "$RLOCK" exec -w 30s job -- sh -c 'echo ran > ran'
	wait_waiting || fail "rlock never waited: $(cat R.err)"
	kill -INT "$R"
	kill -QUIT "$R"
	rlock release --token "$t" job
	bg_wait "$R" 10000 || fail "rlock did not finish"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat ran 2>/dev/null)" ran
}

@test "exec-job: acquire -w under nohup survives SIGHUP and prints the token" {
	local t
	t=$(rlock acquire -t 30s job)
	bg_start R nohup "$RLOCK" acquire -w 30s job
	wait_waiting || fail "rlock never waited: $(cat R.err)"
	kill -HUP "$R"
	rlock release --token "$t" job
	bg_wait "$R" 10000 || fail "rlock did not finish"
	assert_equal "$BG_STATUS" 0
	[[ "$(cat R.out)" =~ $UUID_RE ]] || fail "no token: $(cat R.out)"
}

# ---------------------------------------------------------------------------
# At a terminal, without job control (a script on the pane's terminal)
# ---------------------------------------------------------------------------

# on_tty ARGS...: run rlock ARGS on a pane's terminal (tty_wrapper).
on_tty() {
	tty_wrapper "$@"
	tmux_start "$BATS_TEST_TMPDIR/run.sh"
}

@test "exec-job: at a terminal the command reads what is typed, without --foreground" {
	check_reads_terminal
}

@test "exec-job: Ctrl-C at the terminal while the command reads ends it; rlock exits 130 and releases" {
	on_tty exec job -- sh -c 'echo reading; read a; echo "got:$a"'
	tmux_wait_screen '^reading$' 10000 || fail "the command did not start: $TMUX_SCREEN"
	wait_held job || fail "the lock was never taken"
	tmux_cmd send-keys -t t C-c
	wait_file status 10000 || fail "rlock did not finish after Ctrl-C: $(cat rlock.err 2>/dev/null)"
	assert_equal "$(cat status)" exit:130
	assert_lock_free job
}

@test "exec-job: a command that reads the terminal gets it with Ctrl-C reaching it and still the group on loss" {
	# After the hand-over, a loss must still reach the whole group.
	make_script readloss.sh 'read a
echo "got:$a"
sleep 101 & echo $! > gpid
redis-cli -p "$REDIS_PORT" DEL "$RLOCK_KEY" >/dev/null
wait' >/dev/null
	on_tty exec -t 1s job -- ./readloss.sh
	wait_held job || fail "the lock was never taken"
	tmux_cmd send-keys -t t go Enter
	tmux_wait_screen '^got:go$' 10000 || fail "the command did not read: $TMUX_SCREEN"
	wait_file gpid 5000 || fail "no grandchild"
	track_pid "$(cat gpid)" sleep
	wait_file status 10000 || fail "rlock did not finish: $(cat rlock.err 2>/dev/null)"
	assert_equal "$(cat status)" exit:75
	wait_gone "$(cat gpid)" 2000 || fail "the grandchild outlived the loss"
}

# ---------------------------------------------------------------------------
# Ctrl-Z and fg in an interactive bash
# ---------------------------------------------------------------------------

# interactive [--pipe 'SHELL CODE'] ARGS...: an interactive bash in the
# pane; job.sh runs rlock ARGS (stderr to rlock.err, stdout piped to the
# code if given) and records rlock's "exit:N" in "status".  The test types
# "./job.sh" at the prompt.
interactive() {
	local pipe=
	if [[ "$1" == --pipe ]]; then
		pipe=$2
		shift 2
	fi
	{
		printf '#!/bin/bash\ncd %q\n' "$BATS_TEST_TMPDIR"
		printf '%q ' "$RLOCK" -u "$RLOCK_URL" "$@"
		printf '2>rlock.err'
		[[ -z "$pipe" ]] || printf ' | %s' "$pipe"
		printf '\necho "exit:${PIPESTATUS[0]}" > status\n'
	} >job.sh
	chmod +x job.sh
	tmux_start "cd $(printf '%q' "$BATS_TEST_TMPDIR") && PS1='$ ' exec bash --norc --noprofile -i"
	tmux_wait_screen '^\$' 10000 || fail "no prompt: $TMUX_SCREEN"
}

# ctrl_z: type Control-Z and wait for the shell to say the job stopped;
# N is then the number of ticks.
ctrl_z() {
	tmux_cmd send-keys -t t C-z
	tmux_wait_screen 'Stopped' 20000 || fail "the shell did not see the job stop: $TMUX_SCREEN"
	N=$(ticks)
}

# fg_goes_on: type fg and wait for the command to tick past N again.
fg_goes_on() {
	tmux_cmd send-keys -t t fg Enter
	wait_ticks_past "$N" 5000 || fail "the command did not go on after fg: $TMUX_SCREEN"
}

@test "exec-job: Ctrl-Z at a terminal suspends the command; fg within the TTL lets it go on" {
	ticker
	interactive exec -t 10s job -- ./tick.sh
	tmux_cmd send-keys -t t ./job.sh Enter
	wait_file cpid 10000 || fail "the command did not start: $TMUX_SCREEN"
	wait_ticks_past 2 || fail "no ticks"
	ctrl_z
	wait_state "$(cat cpid)" T 5000 || fail "the command was not suspended"
	assert_still "$N"
	fg_goes_on
	touch stop
	wait_file status 10000 || fail "rlock did not finish: $(cat rlock.err)"
	assert_equal "$(cat status)" exit:0
	assert_lock_free job
}

@test "exec-job: Ctrl-Z past the TTL: after fg the command is killed without running again, rlock exits 75" {
	ticker
	interactive exec -t 1s job -- ./tick.sh
	tmux_cmd send-keys -t t ./job.sh Enter
	wait_file cpid 10000 || fail "the command did not start: $TMUX_SCREEN"
	track_pid "$(cat cpid)" tick.sh
	wait_ticks_past 2 || fail "no ticks"
	ctrl_z
	local n=$N
	wait_taken_by_other job || fail "the lock never expired while suspended"
	assert_still "$n"
	tmux_cmd send-keys -t t fg Enter
	wait_file status 10000 || fail "rlock did not finish after fg: $(cat rlock.err)"
	assert_equal "$(cat status)" exit:75
	assert_equal "$(ticks)" "$n"
	grep -q "lock 'job' was lost" rlock.err || fail "no loss line: $(cat rlock.err)"
	assert_equal "$(rcli HKEYS "$(lock_key job)")" "$OTHER_TOKEN"
}

@test "exec-job: Ctrl-Z while the command has the terminal; fg gives it back, and it reads again" {
	make_script rw.sh 'echo $$ > cpid
read a
echo "got:$a"
i=0
while [ ! -e stop ] && [ $i -lt 600 ]; do echo $i >> ticks; i=$((i + 1)); sleep 0.1; done
read b
echo "again:$b"' >/dev/null
	interactive exec -t 10s job -- ./rw.sh
	tmux_cmd send-keys -t t ./job.sh Enter
	wait_file cpid 10000 || fail "the command did not start: $TMUX_SCREEN"
	tmux_cmd send-keys -t t one Enter
	tmux_wait_screen '^got:one$' 10000 || fail "the command did not read: $TMUX_SCREEN"
	wait_ticks_past 2 || fail "no ticks"
	ctrl_z
	assert_still "$N"
	fg_goes_on
	touch stop
	tmux_cmd send-keys -t t two Enter
	tmux_wait_screen '^again:two$' 10000 || fail "the command could not read after fg: $TMUX_SCREEN"
	wait_file status 10000 || fail "rlock did not finish: $(cat rlock.err)"
	assert_equal "$(cat status)" exit:0
	assert_lock_free job
}

@test "exec-job: in a pipeline, a reader after rlock (a pager) keeps the terminal" {
	interactive --pipe '{ read -r l; read -r k </dev/tty; echo "pager:$l:$k"; }' \
		exec job -- echo out
	tmux_cmd send-keys -t t ./job.sh Enter
	tmux_cmd send-keys -t t key Enter
	tmux_wait_screen '^pager:out:key$' 10000 || fail "the reader after rlock could not read: $TMUX_SCREEN"
	wait_file status 10000 || fail "rlock did not finish: $(cat rlock.err 2>/dev/null)"
	assert_equal "$(cat status)" exit:0
}

@test "exec-job: in a pipeline, a command that reads the terminal is handed it when it asks" {
	interactive --pipe cat exec job -- sh -c 'read a </dev/tty; echo "got:$a"'
	tmux_cmd send-keys -t t ./job.sh Enter
	wait_held job || fail "the lock was never taken: $TMUX_SCREEN"
	tmux_cmd send-keys -t t hello Enter
	tmux_wait_screen '^got:hello$' 10000 || fail "the command could not read: $TMUX_SCREEN"
	wait_file status 10000 || fail "rlock did not finish: $(cat rlock.err)"
	assert_equal "$(cat status)" exit:0
	assert_lock_free job
}
