#!/usr/bin/env bats
# hold.bats: `rlock acquire --hold [--pid PID] NAME`: a keeper process holds
# the lock for as long as its owner (the script that ran rlock, or PID)
# lives.  Scripts in bash and dash: the token returned at once by $(...), the
# lock kept past its TTL, given back at once when the script ends whatever
# ended it, released by `rlock release` (and the keeper gone), the owner
# signalled on a loss, --pid, --shared and --limit, a quorum with a server
# down, the owner's SIGHUP; and no keeper left behind in every case.

load helpers
load exec-helpers
load dist-helpers
load tls-helpers
load extra-helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() {
	default_setup
	cd "$BATS_TEST_TMPDIR"
	export RLOCK
	# A name of this test's own: the keeper is found by it in /proc.
	N=hold-$$-$RANDOM$RANDOM
	export N
}
teardown() {
	stop_keepers
	exec_teardown
}

# The pids of the live keepers of lock $N (their argv names it).
keeper_pids() { keeper_pids_of "$N"; }

# A test that fails must not leave a keeper behind: stopped by PID.
stop_keepers() {
	local pid
	for pid in $(keeper_pids); do
		kill -KILL "$pid" 2>/dev/null || true
	done
}

# wait_no_keeper [MAX_MS]: bounded wait until no keeper of $N is left.
wait_no_keeper() {
	local max_ms=${1:-1000} i
	for ((i = 0; i <= max_ms / 20; i++)); do
		[[ -z "$(keeper_pids)" ]] && return 0
		sleep 0.02
	done
	fail "a keeper of $N is still running after ${max_ms}ms: $(keeper_pids)"
}

# wait_reaped PID...: bounded (5 s) wait until each PID is gone entirely,
# not even a zombie: the keeper's parent is init (or a subreaper), which
# may reap it a second or so later.
wait_reaped() {
	local pid i
	for pid in "$@"; do
		for ((i = 0; i < 250; i++)); do
			[[ -e /proc/$pid ]] || break
			sleep 0.02
		done
		[[ ! -e /proc/$pid ]] || fail "keeper $pid is still there (state $(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null))"
	done
}

# wait_key_gone [MAX_MS]: bounded wait until lock $N's key is gone; prints
# how long it took (ms).
wait_key_gone() {
	local max_ms=${1:-2000} i start
	start=$(now_ms)
	for ((i = 0; i < max_ms / 10 + 100; i++)); do
		if [[ "$(rcli EXISTS "$(lock_key "$N")")" == 0 ]]; then
			echo $(($(now_ms) - start))
			return 0
		fi
		(($(now_ms) - start > max_ms)) && break
		sleep 0.01
	done
	echo "never"
	return 1
}

# hold_script FILE SHELL BODY: a script for SHELL that takes lock $N with
# --hold (extra acquire options in $HOLD_OPTS), writes how long $(...)
# took to "took", its token to "token" and "ready", then runs BODY.  Its
# stderr goes to FILE.err.  BODY's waits are bounded loops.
hold_script() {
	local file=$1 sh=$2 body=$3
	cat >"$BATS_TEST_TMPDIR/$file" <<EOF
#!$sh
exec 2>>"$BATS_TEST_TMPDIR/$file.err"
cd "$BATS_TEST_TMPDIR/${HOLD_DIR:-.}"
s=\$(date +%s%N)
T=\$("\$RLOCK" acquire --hold $HOLD_OPTS "\$N") || { echo "acquire: \$?" >failed; exit 9; }
e=\$(date +%s%N)
echo \$(( (e - s) / 1000000 )) >took
echo "\$T" >token
echo \$\$ >ready
$body
EOF
	chmod +x "$BATS_TEST_TMPDIR/$file"
}

# Run for at most 30 s, until the file "stop" appears.
RUN_ON='i=0; while [ $i -lt 300 ] && [ ! -e stop ]; do sleep 0.1; i=$((i + 1)); done'

@test "hold: a script holding with -t 3s for 12 s keeps the lock, and \$(...) returns at once (bash and dash)" {
	local sh pids=() p
	for sh in /bin/bash /bin/dash; do
		[[ -x $sh ]] || skip "$sh is not installed"
	done
	# Both shells at once, each under its own name.
	for sh in bash dash; do
		HOLD_DIR=$sh HOLD_OPTS="-t 3s" hold_script "$sh.sh" "/bin/$sh" "
i=0; while [ \$i -lt 120 ]; do sleep 0.1; i=\$((i + 1)); done
[ \"\$(redis-cli -p $REDIS_PORT HKEYS 'rlock:{'\$N'}')\" = \"\$T\" ] && echo held >after
\"\$RLOCK\" release --token \"\$T\" \"\$N\"; echo \$? >released"
		mkdir "$sh"
		N=$N-$sh bg_start "P$sh" "$BATS_TEST_TMPDIR/$sh.sh"
	done
	for sh in bash dash; do
		local pv="P$sh"
		bg_wait "${!pv}" 25000 || fail "the $sh script did not end"
		assert_equal "$BG_STATUS" 0
		[[ -s $sh.sh.err ]] && fail "$sh: stderr: $(cat "$sh.sh.err")"
		assert_between "$(cat "$sh/took")" 0 1000 "$sh: \$(rlock acquire --hold) took (ms)"
		assert_equal "$(cat "$sh/after")" held
		assert_equal "$(cat "$sh/released")" 0
	done
	N=$N-bash wait_no_keeper 1000
	N=$N-dash wait_no_keeper 1000
}

@test "hold: status shows the owner's pid and command, and that a keeper holds it" {
	hold_script s.sh /bin/bash "$RUN_ON"
	bg_start S "$BATS_TEST_TMPDIR/s.sh"
	wait_file ready 10000 || fail "no lock: $(cat s.sh.err)"
	run --separate-stderr rlock --json status "$N"
	assert_success
	json_check "d['pid'] == $(cat ready) and 's.sh' in d['command'] and '--hold' in d['command']" <<<"$output"
	run rlock status "$N"
	assert_success
	assert_output --partial "pid $(cat ready)"
	assert_output --partial "--hold"
	touch stop
	bg_wait "$S" 10000
	wait_key_gone 1000 >/dev/null || fail "the lock was not given back"
	wait_no_keeper 1000
}

@test "hold: SIGKILL of the script frees the lock within 2 s, with a 60 s TTL (bash and dash)" {
	local sh took k
	for sh in bash dash; do
		rm -f ready
		HOLD_OPTS="-t 60s" hold_script "$sh.sh" "/bin/$sh" "$RUN_ON"
		bg_start S "$BATS_TEST_TMPDIR/$sh.sh"
		wait_file ready 10000 || fail "no lock: $(cat "$sh.sh.err")"
		k=$(keeper_pids)
		[[ -n "$k" ]] || fail "no keeper"
		kill -KILL "$S"
		took=$(wait_key_gone 2000) || fail "$sh: the lock was still held 2 s after SIGKILL"
		assert_between "$took" 0 2000 "$sh: freed after (ms)"
		wait_no_keeper 1000
		wait_reaped $k
		bg_wait "$S" 1000 || true
	done
	run rlock log "$N"
	assert_success
	assert_line --index 0 --regexp " $N released by .*: the owner .*ended"
}

@test "hold: a plain exit without a release frees the lock at once, with a 60 s TTL (bash and dash)" {
	local sh took
	for sh in bash dash; do
		HOLD_OPTS="-t 60s" hold_script "$sh.sh" "/bin/$sh" "exit 0"
		run "$BATS_TEST_TMPDIR/$sh.sh"
		assert_success
		took=$(wait_key_gone 1000) || fail "$sh: the lock was still held 1 s after the exit"
		wait_no_keeper 1000
	done
}

@test "hold: rlock release frees the lock and no keeper remains within 1 s; the owner gets no signal" {
	hold_script s.sh /bin/bash "trap 'echo TERM >got; exit 3' TERM
export RLOCK_TOKEN=\$T
\"\$RLOCK\" release \"\$N\"; echo \$? >released
$RUN_ON"
	bg_start S "$BATS_TEST_TMPDIR/s.sh"
	wait_file released 10000 || fail "no release: $(cat s.sh.err)"
	assert_equal "$(cat released)" 0
	assert_equal "$(rcli EXISTS "$(lock_key "$N")")" 0
	wait_no_keeper 1000
	# The lock is free for others at once.
	run rlock acquire -n "$N"
	assert_success
	touch stop
	bg_wait "$S" 10000
	assert_equal "$BG_STATUS" 0
	[[ ! -e got ]] || fail "the owner was signalled"
	run rlock --json log -n 10 "$N"
	assert_success
	assert_line --index 1 --partial '"reason":"release"'
}

# The inodes of the Unix sockets PID listens on under an abstract name
# starting with rlock-keeper- (from /proc/net/unix), one a line.
keeper_listening() {
	local fd ino
	for fd in /proc/"$1"/fd/*; do
		ino=$(readlink "$fd" 2>/dev/null) || continue
		[[ $ino == socket:\[*\] ]] || continue
		ino=${ino#socket:[}
		ino=${ino%]}
		awk -v ino="$ino" '$7 == ino && $6 == "01" && $8 ~ /^@rlock-keeper-/ { print ino }' /proc/net/unix
	done
}

@test "hold: the keeper listens before acquire --hold returns, so a release run at once is announced, never taken for a loss" {
	local t pid k
	# Listening when the token is printed: bound before the fork.
	local me=$BASHPID
	t=$(rlock acquire --hold --pid "$me" "$N")
	pid=$(keeper_pids)
	[[ -n $pid ]] || fail "no keeper"
	[[ -n "$(keeper_listening "$pid")" ]] || fail "keeper $pid was not listening when acquire returned"
	RLOCK_TOKEN=$t run rlock release "$N"
	assert_success
	wait_no_keeper 2000
	# And so, every time: an owner that releases at once is never signalled.
	hold_script s.sh /bin/sh "trap 'echo TERM >got; exit 3' TERM
\"\$RLOCK\" release --token \"\$T\" \"\$N\" || exit 6
k=0; while [ \$k -lt 20 ]; do
	T=\$(\"\$RLOCK\" acquire --hold \"\$N\") || exit 8
	RLOCK_TOKEN=\$T \"\$RLOCK\" release \"\$N\" || exit 7
	k=\$((k + 1))
done
echo 20 >looped
$RUN_ON"
	bg_start S "$BATS_TEST_TMPDIR/s.sh"
	wait_file looped 60000 || fail "the loop did not end: $(cat s.sh.err)"
	# No keeper left: none took its release for a loss (it would still be
	# there, waiting to extend, or have signalled the owner already).
	wait_no_keeper 2000
	touch stop
	bg_wait "$S" 10000
	assert_equal "$BG_STATUS" 0
	[[ ! -e got ]] || fail "the owner was signalled: $(cat s.sh.err)"
	! grep -q "lost" s.sh.err || fail "a release was taken for a loss: $(cat s.sh.err)"
}

@test "hold: a lock taken away (DEL) gets the owner SIGTERM before its TTL would have run out; release then exits 1" {
	HOLD_OPTS="-t 3s" hold_script s.sh /bin/bash "trap '\"\$RLOCK\" release --token \"\$T\" \"\$N\" 2>relerr; echo \$? >relst; echo TERM >got; exit 3' TERM
$RUN_ON"
	bg_start S "$BATS_TEST_TMPDIR/s.sh"
	wait_file ready 10000 || fail "no lock: $(cat s.sh.err)"
	local start
	start=$(now_ms)
	rcli DEL "$(lock_key "$N")" >/dev/null
	wait_file got 3000 || fail "the owner got no SIGTERM within the TTL"
	assert_between $(($(now_ms) - start)) 0 3000 "signalled after (ms)"
	bg_wait "$S" 10000
	assert_equal "$BG_STATUS" 3
	assert_equal "$(cat relst)" 1
	grep -q "lost" s.sh.err || fail "no loss on the owner's stderr: $(cat s.sh.err)"
	wait_no_keeper 1000
}

@test "hold: a lock taken over by another token gets the owner SIGTERM, and the other's lock stays" {
	HOLD_OPTS="-t 3s" hold_script s.sh /bin/dash "trap 'echo TERM >got; exit 3' TERM
$RUN_ON"
	bg_start S "$BATS_TEST_TMPDIR/s.sh"
	wait_file ready 10000 || fail "no lock: $(cat s.sh.err)"
	rcli EVAL "$FAKE_HOLD" 1 "$(lock_key "$N")" someone-else 60000 >/dev/null
	wait_file got 3000 || fail "the owner got no SIGTERM within the TTL"
	bg_wait "$S" 10000
	wait_no_keeper 1000
	assert_equal "$(rcli HKEYS "$(lock_key "$N")")" someone-else
}

@test "hold: --on-lost ignore sends nothing; a frozen server gets the owner --on-lost's signal before the TTL runs out" {
	# The trap runs as the signal comes (bash interrupts a wait for it,
	# not a foreground command) and notes the time.
	HOLD_OPTS="-t 3s --on-lost USR1" hold_script s.sh /bin/bash "trap 'date +%s%N >got; kill \$sp; exit 4' USR1
sleep 30 & sp=\$!
wait \$sp"
	bg_start S "$BATS_TEST_TMPDIR/s.sh"
	wait_file ready 10000 || fail "no lock: $(cat s.sh.err)"
	FZ_PID=$REDIS_PID
	local start
	start=$(date +%s%N)
	kill -STOP "$REDIS_PID"
	wait_file got 4000 || { kill -CONT "$REDIS_PID"; fail "the owner got no SIGUSR1"; }
	kill -CONT "$REDIS_PID"
	# The last extend was before the freeze, and the server's TTL runs
	# out 3 s after it at the latest: the signal comes before, at the TTL
	# less the drift margin (a loaded machine may be a little late).
	assert_between $((($(cat got) - start) / 1000000)) 0 3250 "signalled after (ms)"
	grep -q "no extend was confirmed" s.sh.err || fail "no loss on the owner's stderr: $(cat s.sh.err)"
	bg_wait "$S" 10000
	assert_equal "$BG_STATUS" 4
	wait_no_keeper 1000

	rm -f ready got stop
	N=$N-i
	HOLD_OPTS="-t 3s --on-lost ignore" hold_script i.sh /bin/bash "trap 'echo TERM >got; exit 3' TERM
$RUN_ON"
	bg_start S "$BATS_TEST_TMPDIR/i.sh"
	wait_file ready 10000 || fail "no lock: $(cat i.sh.err)"
	rcli DEL "$(lock_key "$N")" >/dev/null
	wait_no_keeper 3000
	[[ ! -e got ]] || fail "the owner was signalled with --on-lost ignore"
	touch stop
	bg_wait "$S" 10000
	assert_equal "$BG_STATUS" 0
}

@test "hold: --pid holds for another process, and gives the lock back when it ends" {
	bg_start P sleep 30
	run --separate-stderr rlock acquire --hold --pid "$P" -t 2s "$N"
	assert_success
	assert_output --regexp "$UUID_RE"
	run --separate-stderr rlock --json status "$N"
	json_check "d['pid'] == $P" <<<"$output"
	# Past the TTL: the keeper extends it.
	local i
	for ((i = 0; i < 4; i++)); do
		sleep 1
		assert_equal "$(rcli EXISTS "$(lock_key "$N")")" 1
	done
	local k
	k=$(keeper_pids)
	kill -KILL "$P"
	wait_key_gone 2000 >/dev/null || fail "the lock outlived its owner"
	wait_no_keeper 1000
	wait_reaped $k
}

@test "hold: bad input is one line and exit 64, with nothing held: --pid without --hold, a dead or malformed --pid" {
	run --separate-stderr rlock acquire --pid $$ "$N"
	assert_usage_error
	run --separate-stderr rlock acquire --hold --pid 0 "$N"
	assert_usage_error
	run --separate-stderr rlock acquire --hold --pid abc "$N"
	assert_usage_error
	run --separate-stderr rlock acquire --on-lost TERM "$N"
	assert_usage_error
	# A pid that is surely free: above the kernel's pid_max.
	run --separate-stderr rlock acquire --hold --pid "$(($(cat /proc/sys/kernel/pid_max) + 1))" "$N"
	assert_usage_error
	run --separate-stderr rlock exec --hold "$N" -- true
	assert_usage_error
	wait_no_keeper 200
}

@test "hold: --shared and --limit holders are each kept by their own keeper" {
	bg_start P1 sleep 30
	bg_start P2 sleep 30
	rlock acquire --hold --pid "$P1" --shared -t 2s "$N" >/dev/null
	rlock acquire --hold --pid "$P2" --shared -t 2s "$N" >/dev/null
	sleep 2.5
	run --separate-stderr rlock --json status "$N"
	json_check "len(d['holders']) == 2" <<<"$output"
	kill -KILL "$P1"
	local i
	for ((i = 0; i < 100; i++)); do
		rlock --json status "$N" | json_eval "len(d['holders'])" | grep -qx 1 && break
		sleep 0.02
	done
	rlock --json status "$N" | json_check "[h['pid'] for h in d['holders']] == [$P2]"
	kill -KILL "$P2"
	wait_key_gone 2000 >/dev/null || fail "the shared lock outlived its owners"
	wait_no_keeper 1000

	N=$N-limit
	bg_start P1 sleep 30
	bg_start P2 sleep 30
	rlock acquire --hold --pid "$P1" --limit 2 -t 2s "$N" >/dev/null
	rlock acquire --hold --pid "$P2" --limit 2 -t 2s "$N" >/dev/null
	run rlock acquire -n --limit 2 "$N"
	assert_equal "$status" 1
	kill -KILL "$P1"
	run rlock acquire -w 2s --limit 2 -t 5s "$N"
	assert_success
	kill -KILL "$P2"
	wait_no_keeper 2000
}

@test "hold: a quorum of three with one server down keeps the lock past its TTL and frees it on exit" {
	start_quorum 3
	stop_redis Q3
	local u urls=()
	for u in $QUORUM_URLS; do urls+=(-u "$u"); done
	bg_start P sleep 30
	run --separate-stderr rlock "${urls[@]}" acquire --hold --pid "$P" -t 2s "$N"
	assert_success
	local tok=$output i
	for ((i = 0; i < 4; i++)); do
		sleep 1
		assert_equal "$(nodes_with_token "$N" "$tok" 1 2)" 2
	done
	kill -KILL "$P"
	for ((i = 0; i < 100; i++)); do
		[[ "$(nodes_with_key "rlock:{$N}" 1 2)" == 0 ]] && break
		sleep 0.02
	done
	assert_equal "$(nodes_with_key "rlock:{$N}" 1 2)" 0
	wait_no_keeper 1000
}

@test "hold: the keeper survives the owner's SIGHUP (its terminal closing) and keeps the lock" {
	HOLD_OPTS="-t 2s" hold_script s.sh /bin/bash "trap 'echo HUP >>hups' HUP
$RUN_ON"
	bg_start S setsid "$BATS_TEST_TMPDIR/s.sh"
	wait_file ready 10000 || fail "no lock: $(cat s.sh.err)"
	# The whole session of the script, as a closing terminal does.
	kill -HUP -- "-$(cat ready)"
	wait_file hups 5000 || fail "the script saw no SIGHUP"
	local i
	for ((i = 0; i < 3; i++)); do
		sleep 1
		assert_equal "$(rcli HKEYS "$(lock_key "$N")")" "$(cat token)"
	done
	[[ -n "$(keeper_pids)" ]] || fail "the keeper is gone"
	touch stop
	bg_wait "$S" 10000
	wait_key_gone 1000 >/dev/null || fail "the lock outlived its owner"
	wait_no_keeper 1000
}

@test "hold: a script that guards a section releases in the middle and runs on unguarded" {
	hold_script s.sh /bin/dash "RLOCK_TOKEN=\$T; export RLOCK_TOKEN
echo guarded >steps
\"\$RLOCK\" release \"\$N\" || exit 5
echo after >>steps
[ \"\$(redis-cli -p $REDIS_PORT EXISTS 'rlock:{'\$N'}')\" = 0 ] && echo free >free"
	run "$BATS_TEST_TMPDIR/s.sh"
	assert_success
	assert_equal "$(cat free)" free
	wait_no_keeper 1000
}

@test "hold: a script that locks itself at its top runs once, and a second copy finds it busy" {
	cat >self.sh <<'EOF'
#!/bin/sh
[ -n "$RLOCK_TOKEN" ] || exec "$RLOCK" exec -n "$(basename "$0")-$N" -- "$0" "$@"
echo "$RLOCK_NAME" >name
i=0; while [ $i -lt 300 ] && [ ! -e stop ]; do sleep 0.1; i=$((i + 1)); done
EOF
	chmod +x self.sh
	bg_start S ./self.sh
	wait_file name 10000 || fail "the script did not start"
	assert_equal "$(cat name)" "self.sh-$N"
	run ./self.sh
	assert_equal "$status" 1
	touch stop
	bg_wait "$S" 10000
	assert_equal "$BG_STATUS" 0
}

@test "hold: over TLS the keeper connects afresh, keeps the lock past its TTL, and gives it back when the owner ends" {
	make_test_pki
	start_tls_redis_as TLS optional
	local tls=(-u "$TLS_URL" --tls-ca "$TLS_CA") tok i
	bg_start P sleep 30
	tok=$(rlock "${tls[@]}" acquire --hold --pid "$P" -t 2s "$N")
	for ((i = 0; i < 4; i++)); do
		sleep 1
		assert_equal "$(tcli TLS HKEYS "rlock:{$N}")" "$tok"
	done
	# The release path too: a second holder, released by its token.
	bg_start P2 sleep 30
	local tok2
	tok2=$(rlock "${tls[@]}" acquire --hold --pid "$P2" -t 2s "$N-2")
	rlock "${tls[@]}" release --token "$tok2" "$N-2"
	kill -KILL "$P"
	for ((i = 0; i < 100; i++)); do
		[[ "$(tcli TLS EXISTS "rlock:{$N}")" == 0 ]] && break
		sleep 0.02
	done
	assert_equal "$(tcli TLS EXISTS "rlock:{$N}")" 0
	wait_no_keeper 1000
	N=$N-2 wait_no_keeper 1000
}

@test "hold: a keeper stopped by SIGTERM signals its owner and leaves the lock to expire with its TTL" {
	HOLD_OPTS="-t 2s" hold_script s.sh /bin/bash "trap 'echo TERM >got; exit 3' TERM
$RUN_ON"
	bg_start S "$BATS_TEST_TMPDIR/s.sh"
	wait_file ready 10000 || fail "no lock: $(cat s.sh.err)"
	local k
	k=$(keeper_pids)
	[[ -n "$k" ]] || fail "no keeper"
	kill -TERM "$k"
	wait_file got 3000 || fail "the owner was not signalled"
	wait_no_keeper 1000
	bg_wait "$S" 10000
	grep -q "stopped by SIGTERM" s.sh.err || fail "nothing on the owner's stderr: $(cat s.sh.err)"
	# Not released: it expires with its TTL.
	wait_key_gone 3000 >/dev/null || fail "the lock did not expire"
	run rlock log "$N"
	assert_line --index 0 --regexp " $N (expired|lost)"
}

# RUN_ON, with each sleep waited for by bash's wait, which a trapped signal
# interrupts: the trap runs at once, not when the sleep ends.
RUN_ON_TRAPPED='i=0; while [ $i -lt 300 ] && [ ! -e stop ]; do sleep 0.1 & wait $!; i=$((i + 1)); done'

@test "hold: a SIGKILLed keeper does not leave its owner unwatched: the owner gets SIGTERM and a line before the lock can expire, and the next holder never overlaps it" {
	HOLD_OPTS="-t 3s" hold_script s.sh /bin/bash "trap 'echo \"term-A \$EPOCHREALTIME\" >>log; exit 3' TERM
echo \"start-A \$EPOCHREALTIME\" >>log
$RUN_ON_TRAPPED
echo \"end-A \$EPOCHREALTIME\" >>log"
	bg_start S "$BATS_TEST_TMPDIR/s.sh"
	wait_file ready 10000 || fail "no lock: $(cat s.sh.err)"
	local k
	k=$(keeper_pids)
	[[ -n "$k" ]] || fail "no keeper"
	kill -KILL $k
	bg_start B "$RLOCK" exec -t 1s -w 10s "$N" -- sh -c 'echo "start-B $(date +%s.%N)" >>log'
	bg_wait "$B" 20000 || fail "B did not finish"
	assert_equal "$BG_STATUS" 0
	touch stop
	bg_wait "$S" 10000 || fail "the owner did not end"
	local order
	order=$(awk '{ printf "%s ", $1 }' log)
	assert_equal "$order" "start-A term-A start-B "
	grep -q "^rlock: lock '$N' held by acquire --hold: its keeper (pid $k) died at .*; the lock expires with its TTL; pid $(cat ready) was sent SIGTERM$" s.sh.err ||
		fail "no line on the owner's stderr: $(cat s.sh.err)"
}

@test "hold: a SIGSTOPped keeper does not leave its owner unwatched: the owner gets SIGTERM before the lock can expire" {
	HOLD_OPTS="-t 2s" hold_script s.sh /bin/bash "trap 'echo \"term-A \$EPOCHREALTIME\" >>log; exit 3' TERM
echo \"start-A \$EPOCHREALTIME\" >>log
$RUN_ON_TRAPPED
echo \"end-A \$EPOCHREALTIME\" >>log"
	bg_start S "$BATS_TEST_TMPDIR/s.sh"
	wait_file ready 10000 || fail "no lock: $(cat s.sh.err)"
	local k
	k=$(keeper_pids)
	[[ -n "$k" ]] || fail "no keeper"
	kill -STOP $k
	bg_start B "$RLOCK" exec -t 1s -w 10s "$N" -- sh -c 'echo "start-B $(date +%s.%N)" >>log'
	bg_wait "$B" 20000 || fail "B did not finish"
	touch stop
	kill -CONT $k
	assert_equal "$BG_STATUS" 0
	bg_wait "$S" 10000 || fail "the owner did not end"
	local order
	order=$(awk '{ printf "%s ", $1 }' log)
	assert_equal "$order" "start-A term-A start-B "
	wait_no_keeper 3000
	# Told once, though the keeper, continued, finds the lock lost too.
	assert_equal "$(grep -c "^rlock: lock '$N' held by acquire --hold" s.sh.err)" 1
}

# kept_then_freed URL-ARGS...: a --hold lock with -t 2s, held for a sleeper,
# is still held 4 s later (status), and free within 2 s of the sleeper's
# SIGKILL; no keeper is left.
kept_then_freed() {
	local i
	bg_start P sleep 30
	run --separate-stderr rlock "$@" acquire --hold --pid "$P" -t 2s "$N"
	assert_success
	for ((i = 0; i < 4; i++)); do
		sleep 1
		rlock "$@" status "$N" >/dev/null || fail "the lock was not kept past its TTL"
	done
	kill -KILL "$P"
	for ((i = 0; i < 100; i++)); do
		rlock "$@" status "$N" >/dev/null || break
		sleep 0.02
	done
	run rlock "$@" status "$N"
	assert_equal "$status" 1
	wait_no_keeper 1000
}

@test "hold: in a Redis Cluster the keeper keeps the lock past its TTL and frees it when the owner ends" {
	start_cluster
	kept_then_freed -u "redis://127.0.0.1:$C1_PORT"
}

@test "hold: through Sentinel the keeper keeps the lock past its TTL and frees it when the owner ends" {
	start_sentinel_group
	kept_then_freed -u "$SENT_URL"
}

@test "hold: an owner that execs another program keeps the lock until that program ends" {
	hold_script s.sh /bin/dash 'exec /bin/sh -c "echo \$\$ >exec-pid; i=0; while [ \$i -lt 300 ] && [ ! -e stop ]; do sleep 0.1; i=\$((i + 1)); done"'
	bg_start S "$BATS_TEST_TMPDIR/s.sh"
	wait_file exec-pid 10000 || fail "no exec: $(cat s.sh.err)"
	assert_equal "$(cat exec-pid)" "$(cat ready)"
	assert_equal "$(rcli HKEYS "$(lock_key "$N")")" "$(cat token)"
	touch stop
	bg_wait "$S" 10000
	wait_key_gone 1000 >/dev/null || fail "the lock outlived the exec'd program"
	wait_no_keeper 1000
}

@test "hold: an owner that the loss signal kills still gets the line on its stderr" {
	HOLD_OPTS="-t 2s" hold_script s.sh /bin/bash "$RUN_ON"
	bg_start S "$BATS_TEST_TMPDIR/s.sh"
	wait_file ready 10000 || fail "no lock: $(cat s.sh.err)"
	rcli DEL "$(lock_key "$N")" >/dev/null
	bg_wait "$S" 5000 || fail "the owner was not signalled"
	assert_equal "$BG_STATUS" 143
	wait_no_keeper 1000
	grep -q "^rlock: lock '$N' held by acquire --hold was lost at .*: the lock's key is gone or holds another token; pid $(cat ready) was sent SIGTERM$" s.sh.err ||
		fail "no loss line on the owner's stderr: $(cat s.sh.err)"
}

@test "hold: with --syslog a loss goes to syslog too" {
	devlog_available || skip "cannot make a private /dev/log (needs unshare -m and python3)"
	# The whole script runs beside a private /dev/log, and waits (bounded)
	# for its keeper to be gone before it ends, which ends the listener.
	HOLD_OPTS="--syslog -t 2s" hold_script s.sh /bin/bash "trap 'echo TERM >got' TERM
redis-cli -p $REDIS_PORT DEL 'rlock:{'\$N'}' >/dev/null
i=0; while [ \$i -lt 100 ] && [ ! -e got ]; do sleep 0.05; i=\$((i + 1)); done
i=0; while [ \$i -lt 100 ] && pgrep -f -- \"--hold.* \$N\\$\" >/dev/null; do sleep 0.02; i=\$((i + 1)); done"
	run with_private_devlog "$BATS_TEST_TMPDIR/s.sh"
	assert_success
	[[ -e got ]] || fail "the owner got no SIGTERM: $(cat s.sh.err)"
	grep -Eq "rlock\[[0-9]+\]: lock '$N' held by acquire --hold was lost at .*: the lock's key is gone or holds another token; pid [0-9]+ was sent SIGTERM" syslog.msgs ||
		fail "no loss in syslog: $(cat syslog.msgs)"
	wait_no_keeper 1000
}

@test "hold: without a pidfd (pidfd_open failing, as on an old kernel) the owner's end is still seen at once" {
	command -v strace >/dev/null || skip "strace is not installed"
	bg_start P sleep 30
	# strace follows the keeper and fails its pidfd_open with ENOSYS; it
	# exits with it.  (LeakSanitizer cannot work under ptrace.)
	bg_start T env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -o "$BATS_TEST_TMPDIR/strace.out" -e trace=pidfd_open \
		-e inject=pidfd_open:error=ENOSYS "$RLOCK" acquire --hold --pid "$P" -t 2s "$N"
	wait_held "$N" || fail "no lock: $(cat T.err)"
	local k i
	for ((i = 0; i < 100; i++)); do
		k=$(keeper_pids)
		[[ -n "$k" ]] && break
		sleep 0.02
	done
	[[ -n "$k" ]] || fail "no keeper"
	grep -q 'pidfd_open.*ENOSYS' strace.out || fail "pidfd_open was not failed: $(cat strace.out)"
	for ((i = 0; i < 3; i++)); do
		sleep 1
		assert_equal "$(rcli EXISTS "$(lock_key "$N")")" 1
	done
	kill -KILL "$P"
	wait_key_gone 2000 >/dev/null || fail "the lock outlived its owner"
	wait_no_keeper 1000
	bg_wait "$T" 5000 || fail "strace did not end"
}
