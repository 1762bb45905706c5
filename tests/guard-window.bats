#!/usr/bin/env bats
# guard-window.bats: the command is guarded from its first instruction.
# rlock stopped (SIGSTOP) or killed (SIGKILL) by the command itself, as the
# command starts, is the earliest any freeze or death of rlock can come: the
# guard must exist already, stop the command before its lock can expire
# (stopped rlock), or kill what the command started and give the lock back
# (killed rlock).  Each command writes a line to "log" at its start and end
# (and on SIGTERM), with the time.

load helpers
setup() { own_server_setup; }
teardown() { cont_stopped; test_teardown; }

# rlock processes a test stopped: continued, so that teardown can end them.
cont_stopped() {
	local pid
	[[ -f "$BATS_TEST_TMPDIR/stopped.pids" ]] || return 0
	while read -r pid; do
		kill -CONT "$pid" 2>/dev/null || true
	done <"$BATS_TEST_TMPDIR/stopped.pids"
}

# The one-letter state of PID ("S", "T", ...), or nothing if it is gone.
state_of() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	echo "${stat%% *}"
}

# What B's command does first: note in b-saw whether A's command (its pid
# in a.pid) had been signalled by then: any state but S (it sleeps in
# `wait` until a signal comes or its child ends, seconds later), gone, or
# with a SIGTERM pending.  When A's command writes its own "term-A" is
# the scheduler's business (its trap runs once bash gets a CPU: tens of
# milliseconds late on a loaded machine, while B's rlock and command may
# already run); that the signal was there when B's command began is
# rlock's.
B_LOOK='p=$(cat a.pid); st=$(sed "s/.*) //; s/ .*//" /proc/$p/stat 2>/dev/null); pn=$(awk "/^(ShdPnd|SigPnd):/ { printf \"%s \", \$2 }" /proc/$p/status 2>/dev/null); echo "${st:-gone} $pn" > b-saw; '

# a_signalled_before_b: fail unless b-saw shows A's command signalled.
a_signalled_before_b() {
	local st p1 p2
	read -r st p1 p2 <b-saw || fail "B's command did not look at A's"
	[[ $st != S ]] && return 0
	# SIGTERM (15) is bit 14 of the pending sets (hexadecimal).
	(((16#${p1:-0} | 16#${p2:-0}) & 0x4000)) && return 0
	fail "B's command began while A's slept unsignalled: $(cat b-saw); log: $(cat log)"
}

# events: log's words, in the order written, and sorted (the order of
# A's trap against B's start is the scheduler's).
events_sorted() {
	awk '{ print $1 }' log | sort | tr '\n' ' '
}

# stamp_of WORD: the time (seconds.microseconds) of log's line "WORD T".
stamp_of() {
	awk -v w="$1" '$1 == w { print $2; exit }' log
}

# write_a [stop] SECS: A's command, a.sh: its pid in a.pid, its start, its
# end and a SIGTERM in log, with bash's clock (a fork and exec of date in
# the trap, slow on a busy machine, would be counted as the guard's
# lateness), a sleep of SECS between (its pid in sleep.pid); with stop, it
# stops rlock, its parent, first.
write_a() {
	local first=
	if [[ $1 == stop ]]; then
		first='kill -STOP $PPID'
		shift
	fi
	printf '%s\n' "$first" >a.sh
	cat >>a.sh <<'EOF'
echo $$ > a.pid
trap 'echo "term-A $EPOCHREALTIME" >> log; exit 5' TERM
echo "start-A $EPOCHREALTIME" >> log
EOF
	echo "sleep $1 & echo \$! > sleep.pid" >>a.sh
	cat >>a.sh <<'EOF'
wait
echo "end-A $EPOCHREALTIME" >> log
EOF
}

@test "guard-window: rlock stopped by its command's first instruction: the command is stopped before the lock can expire, the next holder's never overlaps it" {
	# A: -t 2s; its command stops rlock at once, then would run 3 s.
	write_a stop 3
	bg_start A "$RLOCK" exec -t 2s job -- bash ./a.sh
	local ra=$A i
	echo "$ra" >stopped.pids
	for ((i = 0; i < 250; i++)); do
		[[ "$(state_of "$ra")" == T ]] && break
		sleep 0.02
	done
	assert_equal "$(state_of "$ra")" T
	wait_file sleep.pid 10000 || fail "A's command did not go on: $(cat A.err)"
	track_pid "$(cat sleep.pid)" sleep
	# B waits for the lock, up to 5 s; its command is over at once.
	bg_start B "$RLOCK" exec -t 1s -w 5s job -- sh -c "$B_LOOK"'echo "start-B $(date +%s.%N)" >> log; echo "end-B $(date +%s.%N)" >> log'
	bg_wait "$B" 15000 || fail "B did not finish"
	assert_equal "$BG_STATUS" 0
	# A's command was signalled before B's began (so before A's lock
	# could expire: B got it only then), and is gone.  (Not when a
	# stopped rlock left it unguarded: then it sleeps on, unsignalled,
	# until A is continued.)
	a_signalled_before_b
	wait_gone "$(cat sleep.pid)" 3000 || fail "A's command is still running after B's ran: $(cat log)"
	assert_equal "$(awk 'NR == 1 { print $1 }' log)" start-A
	assert_equal "$(events_sorted)" "end-B start-A start-B term-A "
	# The signal came at the end of A's validity, not at once: the lock
	# was taken before A's command started, for 2 s.
	local d
	d=$(awk -v a="$(stamp_of start-A)" -v t="$(stamp_of term-A)" 'BEGIN { printf "%d", (t - a) * 1000 }')
	assert_between "$d" 1000 20000 ms_from_start_to_sigterm
	assert_equal "$(state_of "$ra")" T	# all that while, A was stopped
	# Continued, A finds its lock lost and its command signalled already.
	kill -CONT "$ra"
	bg_wait "$A" 10000 || fail "A did not finish once continued"
	assert_equal "$BG_STATUS" 75
	grep -q "lock 'job' was lost" A.err || fail "no loss line: $(cat A.err)"
}

# killed_at_start NAME: rlock exec NAME whose command's first instruction
# SIGKILLs rlock, after starting a sleep that PR_SET_PDEATHSIG alone (it
# reaches sh only) would leave running; the sleep must go, and the lock
# be given back by the guard, not left to its 60 s TTL.
killed_at_start() {
	rm -f bg.pid
	bg_start R "$RLOCK" exec -t 60s "$1" -- sh ./k.sh
	wait_file bg.pid 10000 || fail "the command did not start: $(cat R.err)"
	track_pid "$(cat bg.pid)" sleep
	bg_wait "$R" 10000 || fail "rlock was not killed"
	assert_equal "$BG_STATUS" 137
	wait_gone "$(cat bg.pid)" 3000 || fail "the command's background job outlived the killed rlock ($1)"
	local i
	for ((i = 0; i < 250; i++)); do
		[[ "$(rcli EXISTS "$(lock_key "$1")")" == 0 ]] && break
		sleep 0.02
	done
	assert_lock_free "$1"
}

@test "guard-window: rlock killed by its command's first instruction: what the command started is killed, the lock given back at once" {
	cat >k.sh <<'EOF'
sleep 30 & echo $! > bg.pid; kill -KILL $PPID
sleep 5
EOF
	# Three times: the window, where there was one, was a race.
	killed_at_start job1
	killed_at_start job2
	killed_at_start job3
}

# guards_of PID: "PID ARGV" of each rlock-guard child of rlock PID, a line
# each, the arguments as /proc shows them (a guard sharing rlock's memory
# shows rlock's own; one of its own program, "rlock-guard --rlock-guard-v1").
guards_of() {
	local p
	for p in $(ps -o pid= --ppid "$1" 2>/dev/null); do
		[[ "$(cat "/proc/$p/comm" 2>/dev/null)" == rlock-guard ]] || continue
		echo "$p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
	done
}

# until_own_guard PID: poll (up to 20 s) until rlock PID has one guard and
# it runs a program of its own.
until_own_guard() {
	local i g
	for ((i = 0; i < 1000; i++)); do
		g=$(guards_of "$1")
		[[ "$g" == *" rlock-guard --rlock-guard-v1 " && "$(wc -l <<<"$g")" == 1 ]] && return 0
		sleep 0.02
	done
	fail "rlock $1's guards: $g"
}

@test "guard-window: the guard of the first moments shares rlock's memory; a command that runs on gets one of its own program in its place, and one only" {
	# (Built with AddressSanitizer, or elsewhere than x86_64 and aarch64,
	# rlock execs its guard from the start: see guard.c.)
	[[ -z ${ASAN_OPTIONS:-} ]] || skip "under AddressSanitizer the guard is exec'ed from the start"
	case $(uname -m) in
	x86_64 | aarch64) ;;
	*) skip "the shared guard is for x86_64 and aarch64" ;;
	esac
	# The command stops rlock first, so that the guard it then sees is the
	# one from before the command's first instruction.
	cat >s.sh <<'EOF2'
kill -STOP $PPID
for p in $(ps -o pid= --ppid $PPID); do
	[ "$(cat /proc/$p/comm)" = rlock-guard ] && tr '\0' ' ' </proc/$p/cmdline && echo
done >first
kill -CONT $PPID
echo ok >listed
sleep 30
EOF2
	bg_start R "$RLOCK" exec -t 60s job -- sh ./s.sh
	wait_file listed 10000 || fail "the command did not list the guards: $(cat R.err)"
	# One guard, with rlock's own arguments: a clone of rlock.
	assert_equal "$(wc -l <first)" 1
	[[ "$(cat first)" == *" exec -t 60s job -- sh ./s.sh " ]] || fail "first guard: $(cat first)"
	until_own_guard "$R"
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 1
	kill -TERM "$R"
	bg_wait "$R" 10000 || fail "rlock did not end on SIGTERM"
	assert_equal "$BG_STATUS" 143
	assert_lock_free job
}

@test "guard-window: rlock killed once its guard is a program of its own: what the command started is killed, the lock given back at once" {
	cat >k.sh <<'EOF2'
sleep 30 & echo $! > bg.pid
sleep 30
EOF2
	bg_start R "$RLOCK" exec -t 60s job -- sh ./k.sh
	wait_file bg.pid 10000 || fail "the command did not start: $(cat R.err)"
	track_pid "$(cat bg.pid)" sleep
	until_own_guard "$R"
	kill -KILL "$R"
	bg_wait "$R" 10000 || fail "rlock was not killed"
	assert_equal "$BG_STATUS" 137
	wait_gone "$(cat bg.pid)" 3000 || fail "the command's background job outlived the killed rlock"
	local i
	for ((i = 0; i < 250; i++)); do
		[[ "$(rcli EXISTS 'rlock:{job}')" == 0 ]] && break
		sleep 0.02
	done
	assert_lock_free job
}

# ------------------------------------------------- the guard's own faults

# live_guards_of PID: the pids of rlock PID's live guards, a line each.
live_guards_of() {
	local p
	for p in $(guards_of "$1" | awk '{ print $1 }'); do
		_proc_alive "$p" && echo "$p"
	done
	return 0
}

@test "guard-window: a command that exited 0 before rlock was stopped past the lock's validity is no loss: exit 0, and the history says the lock expired, not lost" {
	# The command stops rlock and ends at once: rlock is stopped before
	# its release, and resumed only once the lock's key has expired.
	bg_start R "$RLOCK" exec -t 1s job -- sh -c 'kill -STOP $PPID; exit 0'
	local r=$R i
	echo "$r" >stopped.pids
	for ((i = 0; i < 250; i++)); do
		[[ "$(state_of "$r")" == T ]] && break
		sleep 0.02
	done
	assert_equal "$(state_of "$r")" T
	for ((i = 0; i < 250; i++)); do
		[[ "$(rcli EXISTS 'rlock:{job}')" == 0 ]] && break
		sleep 0.02
	done
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	kill -CONT "$r"
	bg_wait "$R" 10000 || fail "rlock did not finish once continued"
	assert_equal "$BG_STATUS" 0
	! grep -q "lost" R.err || fail "a loss was reported: $(cat R.err)"
	run rlock log job
	assert_success
	[[ "$output" != *" lost "* ]] || fail "the history says lost: $output"
	[[ "$output" == *"expired"* ]] || fail "the history does not say the lock expired: $output"
}

@test "guard-window: with --every --retry-failed, a success whose lock expired while rlock was stopped counts: the next machine skips the period" {
	# issue 49, break 1's other half: the release found the hold gone and
	# left the schedule's outcome empty, which counts as a failure: a
	# second machine ran the job in the same period.
	bg_start R "$RLOCK" exec -t 1s --every 1h --retry-failed job -- sh -c 'kill -STOP $PPID; exit 0'
	local r=$R i
	echo "$r" >stopped.pids
	for ((i = 0; i < 250; i++)); do
		[[ "$(state_of "$r")" == T ]] && break
		sleep 0.02
	done
	assert_equal "$(state_of "$r")" T
	for ((i = 0; i < 250; i++)); do
		[[ "$(rcli EXISTS 'rlock:{job}')" == 0 ]] && break
		sleep 0.02
	done
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	kill -CONT "$r"
	bg_wait "$R" 10000 || fail "rlock did not finish once continued"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(rcli HGET 'rlock:{job}:every' x)" exit:0
	run --separate-stderr rlock exec -n --every 1h --retry-failed job -- touch second.ran
	assert_equal "$status" 1
	[[ ! -e second.ran ]] || fail "a second machine ran the job in the same period"
}

@test "guard-window: a guard killed while the command runs is replaced: rlock stopped after it, the command is still stopped before its lock can expire" {
	write_a 30
	bg_start A "$RLOCK" exec -t 2s job -- bash ./a.sh
	wait_file sleep.pid 10000 || fail "A's command did not start: $(cat A.err)"
	track_pid "$(cat sleep.pid)" sleep
	# The guard of its own program, once the shared one has retired.
	until_own_guard "$A"
	local g ng i
	g=$(live_guards_of "$A")
	[[ -n "$g" ]] || fail "no guard"
	kill -KILL $g
	# rlock starts another (bounded: where it does not, the test goes on
	# and finds the command unguarded).
	local t0
	t0=$(now_ms)
	for ((i = 0; i < 250 && $(now_ms) - t0 < 3000; i++)); do
		ng=$(live_guards_of "$A")
		[[ -n "$ng" && "$ng" != "$g" ]] && break
		sleep 0.02
	done
	kill -STOP "$A"
	echo "$A" >stopped.pids
	bg_start B "$RLOCK" exec -t 1s -w 10s job -- sh -c "$B_LOOK"'echo "start-B $(date +%s.%N)" >> log'
	bg_wait "$B" 20000 || fail "B did not finish"
	assert_equal "$BG_STATUS" 0
	a_signalled_before_b
	assert_equal "$(awk 'NR == 1 { print $1 }' log)" start-A
	assert_equal "$(events_sorted)" "start-A start-B term-A "
	kill -CONT "$A"
	bg_wait "$A" 10000 || fail "A did not finish once continued"
	assert_equal "$BG_STATUS" 75
}

@test "guard-window: rlock's retiring shared guard is never taken for a process the command left" {
	[[ -z ${ASAN_OPTIONS:-} ]] || skip "under AddressSanitizer the guard is exec'ed from the start"
	case $(uname -m) in
	x86_64 | aarch64) ;;
	*) skip "the shared guard is for x86_64 and aarch64" ;;
	esac
	# The shared guard is held stopped until the command has ended, as a
	# loaded machine can hold it between its successor's start and its own
	# exit; the command ends once the successor runs.  (rlock is stopped
	# while the command looks, so that the guard it finds is the one from
	# before its first instruction, not yet retired.)
	cat >r.sh <<'EOF2'
kill -STOP $PPID
for p in $(ps -o pid= --ppid $PPID); do
	[ "$(cat /proc/$p/comm 2>/dev/null)" = rlock-guard ] && echo $p >shared.pid
done
kill -STOP "$(cat shared.pid)"
kill -CONT $PPID
i=0
while [ $i -lt 500 ]; do
	for p in $(ps -o pid= --ppid $PPID); do
		[ "$(tr '\0' ' ' </proc/$p/cmdline 2>/dev/null)" = "rlock-guard --rlock-guard-v1 " ] && exit 0
	done
	sleep 0.02
	i=$((i + 1))
done
exit 9
EOF2
	bg_start R "$RLOCK" exec -t 60s job -- sh ./r.sh
	wait_file shared.pid 10000 || fail "the command did not find the shared guard: $(cat R.err)"
	cat shared.pid >stopped.pids
	bg_wait "$R" 10000 || fail "rlock waits for its own guard: $(cat R.err)"
	assert_equal "$BG_STATUS" 0
	! grep -q "left" R.err || fail "rlock's guard was taken for a leftover: $(cat R.err)"
	run rlock log job
	[[ "$output" != *"leftovers"* ]] || fail "log: $output"
	assert_lock_free job
	kill -CONT "$(cat shared.pid)"
	wait_gone "$(cat shared.pid)" 5000 || fail "the shared guard did not go"
}

# ------------------------------------------- the guard of an exec that waits

# An exec that waits starts its guard as its wait begins (guard_spawn), and
# tells it the lock once handed it (guard_arm): a hand-over goes from the
# wake to the command with no process started between.  Held here by an
# acquire's token, handed over by its release.

# until_guard PID: poll (up to 10 s) until rlock PID has a live guard; its
# pid in GUARD.
until_guard() {
	local i
	GUARD=
	for ((i = 0; i < 500; i++)); do
		GUARD=$(live_guards_of "$1" | head -n 1)
		[[ -n "$GUARD" ]] && return 0
		sleep 0.02
	done
	fail "rlock $1 has no guard: $(cat "$BATS_TEST_TMPDIR"/*.err 2>/dev/null | head -n 3)"
}

@test "guard-window: a waiting exec has its guard before the lock is handed over; killed while it waits, its guard just ends, and the holder keeps the lock" {
	local tok
	tok=$(rlock acquire -t 60s job) || fail "acquire: $tok"
	bg_start W "$RLOCK" exec -w 30s job -- sh -c 'echo ran > ran'
	wait_waiting || fail "the waiter is not waiting: $(cat W.err)"
	until_guard "$W"
	local g=$GUARD
	kill -KILL "$W"
	bg_wait "$W" 10000 || fail "rlock was not killed"
	assert_equal "$BG_STATUS" 137
	wait_gone "$g" 5000 || fail "the guard of a killed waiter outlived it"
	[[ ! -e ran ]] || fail "the killed waiter's command ran"
	# Nothing was given back: the lock is still the acquire's.
	run rlock status --json job
	assert_success
	[[ "$output" == *'"held":true'* ]] || fail "status: $output"
	assert_equal "$(rcli HKEYS "$(lock_key job)")" "$tok"
	rlock release --token "$tok" job
}

@test "guard-window: a waiter handed the lock stops rlock with its command's first instruction: the guard started while it waited stops the command before the lock can expire" {
	write_a stop 30
	local tok
	tok=$(rlock acquire -t 60s job) || fail "acquire: $tok"
	bg_start A "$RLOCK" exec -t 2s -w 30s job -- bash ./a.sh
	wait_waiting || fail "A is not waiting: $(cat A.err)"
	until_guard "$A"
	local g=$GUARD
	echo "$A" >stopped.pids
	rlock release --token "$tok" job
	wait_file sleep.pid 10000 || fail "A's command did not start: $(cat A.err)"
	track_pid "$(cat sleep.pid)" sleep
	assert_equal "$(state_of "$A")" T
	# The guard it had while waiting is the one that guards the command.
	assert_equal "$(live_guards_of "$A")" "$g"
	# B waits for the lock; A's command is signalled at A's validity (2 s),
	# before B can have it, by that guard (rlock is stopped throughout).
	bg_start B "$RLOCK" exec -t 1s -w 15s job -- sh -c "$B_LOOK"'echo "start-B $(date +%s.%N)" >> log'
	bg_wait "$B" 25000 || fail "B did not finish: $(cat log)"
	assert_equal "$BG_STATUS" 0
	a_signalled_before_b
	wait_gone "$(cat sleep.pid)" 3000 || fail "A's command is still running after B's ran: $(cat log)"
	assert_equal "$(events_sorted)" "start-A start-B term-A "
	assert_equal "$(state_of "$A")" T
	kill -CONT "$A"
	bg_wait "$A" 10000 || fail "A did not finish once continued"
	assert_equal "$BG_STATUS" 75
}

@test "guard-window: a waiter handed the lock is killed by its command's first instruction: the guard started while it waited kills what the command started and gives the lock back at once" {
	cat >k.sh <<'EOF2'
sleep 30 & echo $! > bg.pid; kill -KILL $PPID
sleep 5
EOF2
	local tok
	tok=$(rlock acquire -t 60s job) || fail "acquire: $tok"
	bg_start R "$RLOCK" exec -t 60s -w 30s job -- sh ./k.sh
	wait_waiting || fail "R is not waiting: $(cat R.err)"
	until_guard "$R"
	local g=$GUARD
	rlock release --token "$tok" job
	wait_file bg.pid 10000 || fail "the command did not start: $(cat R.err)"
	track_pid "$(cat bg.pid)" sleep
	bg_wait "$R" 10000 || fail "rlock was not killed"
	assert_equal "$BG_STATUS" 137
	wait_gone "$(cat bg.pid)" 3000 || fail "the command's background job outlived the killed rlock"
	local i
	for ((i = 0; i < 250; i++)); do
		[[ "$(rcli EXISTS "$(lock_key job)")" == 0 ]] && break
		sleep 0.02
	done
	assert_lock_free job
	wait_gone "$g" 5000 || fail "the guard outlived its release"
	run rlock log job
	[[ "$output" == *"rlock was killed"* ]] || fail "log: $output"
}
