#!/usr/bin/env bats
# exec-signals.bats: signals sent to rlock exec reach the command, rlock
# waits for it and exits with its status; a killed rlock takes the command
# with it; process groups with and without --foreground; --foreground with
# a terminal (under a private tmux server).

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { file_server_setup; }
teardown() { test_teardown; }

# A child that traps SIG: the trap writes SIG to the file "got", stops the
# child's background sleep and exits 0. Without the signal it would wait 30 s
# for the sleep and exit 9.
sig_script() {
	make_script sig.sh 'exec 2>>child.err
sig=$1
sleep 30 &
sp=$!
echo "$sp" > spid
trap "echo $sig > got; kill $sp 2>/dev/null; exit 0" "$sig"
echo $$ > ready
wait $sp
exit 9' >/dev/null
}

# check_forwarded SIG: send SIG to rlock (its PID only; the child is in its
# own process group, so only rlock can pass it on) and expect the child's
# trap to see it, rlock to exit 0 and the lock to be released.
check_forwarded() {
	local sig=$1
	sig_script
	bg_start R "$RLOCK" exec job -- ./sig.sh "$sig"
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	track_pid "$(cat spid)" sleep
	kill -"$sig" "$R"
	bg_wait "$R" 10000 || fail "rlock still running 10 s after SIG$sig"
	assert_equal "$(cat got 2>/dev/null)" "$sig"
	assert_equal "$BG_STATUS" 0
	assert_lock_free job
}

@test "exec-signals: SIGINT sent to rlock reaches the command, rlock exits 0 and releases" {
	check_forwarded INT
}

@test "exec-signals: SIGTERM sent to rlock reaches the command, rlock exits 0 and releases" {
	check_forwarded TERM
}

@test "exec-signals: SIGHUP sent to rlock reaches the command, rlock exits 0 and releases" {
	check_forwarded HUP
}

@test "exec-signals: SIGQUIT sent to rlock reaches the command, rlock exits 0 and releases" {
	check_forwarded QUIT
}

@test "exec-signals: SIGUSR1 sent to rlock reaches the command, rlock exits 0 and releases" {
	check_forwarded USR1
}

@test "exec-signals: SIGUSR2 sent to rlock reaches the command, rlock exits 0 and releases" {
	check_forwarded USR2
}

@test "exec-signals: a command killed by a forwarded SIGTERM makes rlock exit 143 and release" {
	make_script plain.sh 'echo $$ > ready
exec sleep 30' >/dev/null
	bg_start R "$RLOCK" exec job -- ./plain.sh
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	track_pid "$(cat ready)" sleep
	kill -TERM "$R"
	bg_wait "$R" 10000 || fail "rlock still running 10 s after SIGTERM"
	assert_equal "$BG_STATUS" 143
	assert_lock_free job
}

@test "exec-signals: a second SIGTERM does not make rlock abandon the command" {
	# The child counts TERMs; after the first it runs on for about 1 s (the
	# second arrives meanwhile) and then exits 5.
	make_script twice.sh 'exec 2>>child.err
n=0
trap "n=\$((n + 1)); echo \$n > count" TERM
echo $$ > ready
i=0
while [ $n -eq 0 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
i=0
while [ $i -lt 10 ]; do sleep 0.1; i=$((i + 1)); done
exit 5' >/dev/null
	bg_start R "$RLOCK" exec job -- ./twice.sh
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	kill -TERM "$R"
	wait_file_content count 1 5000 || fail "the first SIGTERM did not reach the command"
	kill -TERM "$R"
	bg_wait "$R" 10000 || fail "rlock still running 10 s after two SIGTERMs"
	assert_equal "$BG_STATUS" 5
	# The second one was passed on too.
	assert_equal "$(cat count)" 2
	assert_lock_free job
}

@test "exec-signals: SIGKILL of rlock takes the command down with it" {
	make_script victim.sh 'echo $$ > cpid
exec sleep 30' >/dev/null
	bg_start R "$RLOCK" exec -t 5s job -- ./victim.sh
	wait_file cpid 10000 || fail "the command did not start: $(cat R.err)"
	local c
	c=$(cat cpid)
	track_pid "$c" sleep
	_proc_alive "$c" || fail "the command $c is not running"
	kill -KILL "$R"
	bg_wait "$R" 5000 || fail "rlock survived SIGKILL"
	assert_equal "$BG_STATUS" 137
	wait_gone "$c" 5000 || fail "the command $c still runs after rlock was killed"
}

@test "exec-signals: SIGTERM while waiting for a busy lock exits by the signal without running the command" {
	local t
	t=$(rlock acquire job)
	bg_start R "$RLOCK" exec -w 30s job -- touch marker
	# Let it get to waiting (it cannot get the lock either way).
	sleep 0.5
	kill -TERM "$R"
	bg_wait "$R" 5000 || fail "rlock still waiting 5 s after SIGTERM"
	assert_equal "$BG_STATUS" 143
	[[ ! -e marker ]] || fail "the command ran without the lock"
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t"
}

# ---------------------------------------------------------------------------
# Process groups
# ---------------------------------------------------------------------------

pg_script() {
	make_script pg.sh 'echo $$ > cpid
i=0
while [ ! -e stop ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done' >/dev/null
}

pgid_of() {
	ps -o pgid= -p "$1" | tr -d ' '
}

@test "exec-signals: the command runs in its own process group" {
	pg_script
	bg_start R "$RLOCK" exec job -- ./pg.sh
	wait_file cpid 10000 || fail "the command did not start: $(cat R.err)"
	local c cg rg
	c=$(cat cpid)
	cg=$(pgid_of "$c")
	rg=$(pgid_of "$R")
	touch stop
	assert_equal "$cg" "$c"
	[[ -n "$rg" && "$cg" != "$rg" ]] || fail "command pgid $cg, rlock pgid $rg"
	bg_wait "$R" 10000 || fail "rlock did not finish"
	assert_equal "$BG_STATUS" 0
}

@test "exec-signals: with --foreground the command runs in rlock's process group" {
	pg_script
	# Its own session, so that rlock's group holds nothing of the test's.
	bg_start R setsid "$RLOCK" exec --foreground job -- ./pg.sh
	wait_file cpid 10000 || fail "the command did not start: $(cat R.err)"
	local c cg rg
	c=$(cat cpid)
	cg=$(pgid_of "$c")
	rg=$(pgid_of "$R")
	touch stop
	[[ -n "$rg" ]] || fail "no pgid for rlock $R"
	assert_equal "$cg" "$rg"
	bg_wait "$R" 10000 || fail "rlock did not finish"
	assert_equal "$BG_STATUS" 0
}

@test "exec-signals: with --foreground a signal sent to rlock's pid is passed to the command" {
	make_script count.sh 'exec 2>>child.err
trap "echo USR1 >> got" USR1
echo $$ > ready
i=0
while [ ! -s got ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
i=0
while [ $i -lt 5 ]; do sleep 0.1; i=$((i + 1)); done
exit 0' >/dev/null
	bg_start R setsid "$RLOCK" exec --foreground job -- ./count.sh
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	kill -USR1 "$R"
	bg_wait "$R" 10000 || fail "rlock still running 10 s after SIGUSR1"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat got 2>/dev/null)" USR1
	assert_lock_free job
}

# ---------------------------------------------------------------------------
# A terminal (private tmux server)
# ---------------------------------------------------------------------------

@test "exec-signals: --foreground lets the command read the terminal" {
	check_reads_terminal --foreground
}

@test "exec-signals: Ctrl-C with --foreground reaches the command once, not twice" {
	command -v python3 >/dev/null || skip "python3 is needed for the counting child"
	# The child counts SIGINTs in a handler (one line each), then runs on for
	# a second to let a duplicate arrive, and exits 0.
	cat >count.py <<'EOF'
import os, signal, time
def on_int(signum, frame):
    with open("ints", "a") as f:
        f.write("INT\n")
signal.signal(signal.SIGINT, on_int)
with open("ready", "w") as f:
    f.write(str(os.getpid()))
end = time.monotonic() + 30
while not os.path.exists("ints") and time.monotonic() < end:
    time.sleep(0.02)
end = time.monotonic() + 1
while time.monotonic() < end:
    time.sleep(0.02)
EOF
	tty_wrapper -v exec --foreground job -- python3 count.py
	tmux_start "$BATS_TEST_TMPDIR/run.sh"
	wait_file ready 10000 || fail "the command did not start: $(cat rlock.err 2>/dev/null)"
	tmux_cmd send-keys -t t C-c
	wait_file status 10000 || fail "rlock did not finish: $(cat rlock.err 2>/dev/null)"
	assert_equal "$(cat status)" exit:0
	assert_equal "$(cat ints)" INT
	# The terminal already signalled the whole group; rlock must not pass
	# the same SIGINT on again.
	if grep -q 'forwarding SIGINT' rlock.err; then
		fail "rlock forwarded the terminal's SIGINT: $(cat rlock.err)"
	fi
	assert_lock_free job
}

# ---------------------------------------------------------------------------
# The suite under nohup
# ---------------------------------------------------------------------------

@test "exec-signals: the forwarding tests pass started under nohup, SIGINT and SIGQUIT ignored too" {
	# As `nohup ./scripts/test.sh &` from a script starts them: SIGHUP
	# ignored by nohup, SIGINT and SIGQUIT by the non-interactive shell's
	# '&'.  The tests must set the dispositions they rely on themselves.
	local bats=bats
	[[ -x ${BATS_ROOT:-}/bin/bats ]] && bats=$BATS_ROOT/bin/bats
	run --separate-stderr env -u BATS_TEST_FILTER --ignore-signal=INT,QUIT \
		nohup "$bats" --tap -f '^exec-signals: SIG[A-Z0-9]+ sent to rlock reaches the command' \
		"$BATS_TEST_DIRNAME/exec-signals.bats" </dev/null
	[[ $status -eq 0 ]] || fail "under nohup (status $status):"$'\n'"$output"$'\n'"$stderr"
	assert_line "1..6"
	assert_line --regexp '^ok [0-9]+ exec-signals: SIGHUP sent to rlock'
	refute_line --regexp '^not ok'
}
