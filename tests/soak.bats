#!/usr/bin/env bats
# soak.bats: a reduced soak (well under a minute in all). Several workers
# hammer one lock with `rlock exec` around a non-atomic read-modify-write and
# nothing is lost; then workers run timed critical sections while a killer
# SIGKILLs the rlock of whichever worker is inside, and the log of the
# sections shows that no two overlapped (a killed holder's lock is only taken
# again after its TTL) and that no command outlived its killed rlock.

load helpers
load exec-helpers
load extra-helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() {
	default_setup
	# The name the kernel gives rlock's processes (/proc/PID/comm).
	RLOCK_COMM=$(basename "$RLOCK")
	RLOCK_COMM=${RLOCK_COMM:0:15}
}
teardown() { exec_teardown; }

@test "soak: 4 workers x up to 100 exec'd read-modify-writes of a counter lose no increment" {
	local d=$BATS_TEST_TMPDIR w total=0 n
	echo 0 >"$d/f"
	# A counter above the clock's floor counts acquires one by one.
	rcli SET 'rlock:{ctr}:fence' 8000000000000000 >/dev/null
	for w in 1 2 3 4; do
		# Each worker: 100 runs, or as many as a 50 s deadline allows (a
		# busy machine under the sanitizers manages about half); every
		# run's exit status goes to its own file.
		# shellcheck disable=SC2016 # the worker script expands its own arguments
		bg_start "W$w" bash -c '
			rl=$1 d=$2 w=$3
			deadline=$((SECONDS + 50))
			for ((i = 0; i < 100 && SECONDS < deadline; i++)); do
				st=0
				"$rl" exec -w 60s -t 5s ctr -- sh -c "n=\$(cat $d/f); echo \$((n+1)) > $d/f" || st=$?
				echo "$st" >>"$d/status.$w"
			done' worker "$RLOCK" "$d" "$w"
	done
	for w in 1 2 3 4; do
		local v="W$w"
		bg_wait "${!v}" 120000 || fail "worker $w did not finish within 120 s"
		assert_equal "$BG_STATUS" 0
	done
	for w in 1 2 3 4; do
		n=$(wc -l <"$d/status.$w")
		# Enough contention for the count to mean something.
		assert_between "$n" 20 100 "runs of worker $w"
		assert_equal "$(grep -cvx 0 "$d/status.$w")" 0
		total=$((total + n))
	done
	# Every run incremented once, none was lost to an overlap.
	assert_equal "$(cat "$d/f")" "$total"
	assert_lock_free ctr
	# Every run took the lock once: the fence counter moved on by as many.
	assert_equal "$(rcli GET 'rlock:{ctr}:fence')" $((8000000000000000 + total))
}

# check_sections LOG: read "start NS ID", "end NS ID" and "kill NS RLOCKPID
# CHILDPID" lines and check that critical sections never overlapped: each
# section starts after the previous one's end, or, when the previous one has
# no end (its rlock was killed), after that kill: the guard kills the command
# before it gives the lock back (and without a guard yet, the lock expires at
# its TTL, later still). Also:
# a section without an end must be a killed one, and no killed command wrote
# its end after the kill. Prints a summary; exits 1 listing the violations.
check_sections() {
	/usr/bin/python3 - "$1" <<'EOF'
import sys
starts, ends, kills, dead = {}, {}, {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 3:
        continue
    if f[0] == "start":
        starts[f[2]] = int(f[1])
    elif f[0] == "end":
        ends[f[2]] = int(f[1])
    elif f[0] == "kill" and len(f) >= 4:
        kills[f[3]] = int(f[1])      # keyed by the child's pid = section id
    elif f[0] == "dead" and len(f) >= 4:
        dead[f[3]] = int(f[1])       # when the killed rlock was seen dead
bad = []
order = sorted(starts, key=lambda i: starts[i])
for a, b in zip(order, order[1:]):
    if a in ends:
        if ends[a] > starts[b]:
            bad.append("section %s (ended %d) overlaps section %s (started %d): %.3f s"
                       % (a, ends[a], b, starts[b], (ends[a] - starts[b]) / 1e9))
    elif a in kills and starts[b] < kills[a]:
        bad.append("section %s has no end and section %s started %.3f s before its rlock was killed"
                   % (a, b, (kills[a] - starts[b]) / 1e9))
for i in starts:
    if i not in ends and i not in kills:
        bad.append("section %s has no end but its rlock was not killed" % i)
# The command dies when its rlock's death reaches it (PR_SET_PDEATHSIG), not
# when the kill is sent: the kernel first tears the process down. So an end
# stamped after the kill is a violation only when it is later than the
# moment the rlock was seen dead (a zombie, or gone), plus 50 ms.
for i, k in kills.items():
    d = dead.get(i, k)
    if i in ends and ends[i] > d + 50_000_000:
        bad.append("the command of killed rlock (child %s) wrote its end %.3f s after the kill, %.3f s after its rlock was seen dead"
                   % (i, (ends[i] - k) / 1e9, (ends[i] - d) / 1e9))
killed_inside = sum(1 for i in kills if i in starts)
print("sections=%d ended=%d kills=%d killed_inside=%d" % (len(starts), len(ends), len(kills), killed_inside))
for b in bad:
    print("VIOLATION: " + b)
sys.exit(1 if bad else 0)
EOF
}

@test "soak: critical sections never overlap while rlocks are SIGKILLed, and killed commands die" {
	local d=$BATS_TEST_TMPDIR log=$BATS_TEST_TMPDIR/log w
	: >"$log"
	# The critical section: stamp its start, work 0.5 s, stamp its end. The
	# section's id is the pid of the sh that rlock runs. Half a second, so
	# that the killer finds a run inside it even on a busy machine, where
	# each of its looks (pgrep, cat, grep) can take a tenth of a second.
	local crit
	crit=$(make_script crit "echo \"start \$(date +%s%N) \$\$\" >>'$log'
sleep 0.5
echo \"end \$(date +%s%N) \$\$\" >>'$log'")
	for w in 1 2 3; do
		# Up to 60 runs each, until the killer says stop, and 50 s at most
		# (a busy machine's killer needs that long for its kills; a quiet
		# one's is done in seconds, and stops them).
		# shellcheck disable=SC2016 # the worker script expands its own arguments
		bg_start "W$w" bash -c '
			rl=$1 d=$2 w=$3 crit=$4
			deadline=$((SECONDS + 50))
			for ((i = 0; i < 60 && SECONDS < deadline; i++)); do
				[[ -e $d/stop ]] && break
				st=0
				"$rl" exec -w 30s -t 1s crit -- "$crit" || st=$?
				echo "$st" >>"$d/status.$w"
			done' worker "$RLOCK" "$d" "$w" "$crit"
	done

	# The killer: 4 kills, each of the rlock of a worker that is inside its
	# critical section (it has a child that has stamped its start), at
	# random moments. Bounded: at most 60 attempts and 45 s, each attempt
	# at most 100 looks 20 ms apart.
	local kills=0 attempt look wp rp cp c ts victims=() until=$((SECONDS + 45))
	for ((attempt = 0; attempt < 60 && kills < 4 && SECONDS < until; attempt++)); do
		sleep "0.$((1 + RANDOM % 4))"
		rp=
		for ((look = 0; look < 100; look++)); do
			for w in $(shuf -e 1 2 3); do
				local v="W$w"
				wp=${!v}
				for c in $(pgrep -P "$wp"); do
					[[ "$(cat "/proc/$c/comm" 2>/dev/null)" == "$RLOCK_COMM" ]] || continue
					# rlock's children: its guard and the command.
					for cp in $(pgrep -P "$c"); do
						if grep -q "^start .* $cp\$" "$log"; then
							rp=$c
							break 4
						fi
					done
				done
			done
			sleep 0.02
		done
		[[ -n "$rp" ]] || continue
		# Sometimes kill at once, sometimes a little into the section.
		sleep "0.0$((RANDOM % 4))"
		# Stopped first, so that it cannot end between the look and the
		# kill (a kill that lands on an rlock already exiting is no kill
		# inside a section): only then is the section checked unfinished.
		kill -STOP "$rp" 2>/dev/null || continue
		if ! _pid_is "$rp" "$RLOCK_COMM" || grep -q "^end .* $cp\$" "$log"; then
			kill -CONT "$rp" 2>/dev/null || true
			continue
		fi
		ts=$(date +%s%N)
		if kill -KILL "$rp" 2>/dev/null; then
			echo "kill $ts $rp $cp" >>"$log"
			# When the killed rlock's exit reaches its children (the
			# kernel sends PR_SET_PDEATHSIG's signal as the process
			# turns zombie, after it has torn its memory down: tens of
			# milliseconds under ASan on a loaded machine): seen by
			# polling its state, bounded by 20000 looks and 5 s.
			# (_proc_alive reads /proc with builtins: no fork.)
			local t0=${EPOCHREALTIME/./} n
			for ((n = 0; n < 20000; n++)); do
				_proc_alive "$rp" || break
				((${EPOCHREALTIME/./} - t0 < 5000000)) || break
			done
			echo "dead ${EPOCHREALTIME/./}000 $rp $cp" >>"$log"
			kills=$((kills + 1))
			victims+=("$cp")
			track_pid "$cp" sh
		fi
	done
	# Let the others run on for a moment after the last kill, then stop.
	sleep 2.5
	touch "$d/stop"
	for w in 1 2 3; do
		local v="W$w"
		bg_wait "${!v}" 70000 || fail "worker $w did not finish"
		assert_equal "$BG_STATUS" 0
	done

	((kills >= 3)) || fail "the killer managed only $kills kills in $attempt attempts"
	# No killed command outlived its rlock (PR_SET_PDEATHSIG): each sh is
	# gone, long before its 0.5 s section could have ended by itself.
	for cp in "${victims[@]}"; do
		! _pid_is "$cp" sh || fail "the command $cp survived its killed rlock"
	done
	# Every run either succeeded or was one of the killed ones (137 = 128+9).
	cat "$d"/status.* >"$d/statuses"
	assert_equal "$(grep -cx 137 "$d/statuses")" "$kills"
	assert_equal "$(grep -cvxE '0|137' "$d/statuses")" 0
	run check_sections "$log"
	echo "$output"
	assert_success
	# Enough happened for the check to mean something.
	[[ "$output" =~ sections=([0-9]+) ]] && ((BASH_REMATCH[1] >= 8)) || fail "too few sections: $output"
	[[ "$output" =~ killed_inside=([0-9]+) ]] && ((BASH_REMATCH[1] >= 3)) || fail "too few kills inside a section: $output"
	assert_lock_free crit
}

@test "soak: a command whose rlock is SIGKILLed dies with it and the guard gives its lock back" {
	local sp i
	bg_start RL "$RLOCK" exec -t 30s job -- sleep 30
	for ((i = 0; i < 250; i++)); do
		sp=$(pgrep -P "$RL" -x sleep) && break
		sleep 0.02
	done
	[[ -n "$sp" ]] || fail "the sleep did not start"
	track_pid "$sp" sleep
	# The guard is forked a few milliseconds after the command.
	for ((i = 0; i < 250; i++)); do
		pgrep -P "$RL" -x rlock-guard >/dev/null && break
		sleep 0.02
	done
	kill -KILL "$RL"
	wait_gone "$sp" 2000 || fail "sleep $sp survived its killed rlock"
	# Given back by the guard: well before the 30 s TTL.
	run --separate-stderr rlock exec -w 5s job -- true
	assert_success
	assert_lock_free job
	run rlock log job
	[[ "$output" == *"rlock was killed"* ]] || fail "log: $output"
}
