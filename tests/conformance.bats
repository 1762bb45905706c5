#!/usr/bin/env bats
# conformance.bats: the model checks what the scripts do (issue 48, item
# 7).  Random traces of the SPIN model (src/lua/model/rlock.pml, -DTRACE,
# one server, every mode) are replayed against the real scripts on a real
# redis-server by src/lua/model/conform.py: each step's reply and the
# server's state after it must be the model's.  A script sabotaged in a
# copy of src/lua must be caught, at the step that shows it.

load helpers
setup() { own_server_setup; }
teardown() { test_teardown; }

MODEL="$BATS_TEST_DIRNAME/../src/lua/model"
LUA="$BATS_TEST_DIRNAME/../src/lua"

need_spin() {
	command -v spin >/dev/null 2>&1 || skip "spin is not installed (scripts/deps.sh)"
}

# conform ARGS...: the replayer on this test's server, within 100 s.
conform() {
	timeout 100 /usr/bin/python3 "$MODEL/conform.py" --port "$REDIS_PORT" \
	    --max-seconds 90 "$@"
}

# steps_of OUTPUT: the number of steps its last line says agreed.
steps_of() {
	sed -n 's/^conform: \([0-9]*\) script steps.*/\1/p' <<<"$1" | tail -1
}

@test "conformance: the mixed modes (plain, shared, limit 2, fifo, the upgrade, -n/-w) agree with the scripts" {
	need_spin
	run conform --config mix --config mix-upgrade --config mix-limit \
	    --config mix-fifo --seeds 1-16
	assert_success
	refute_output --partial MISMATCH
	for c in mix mix-upgrade mix-limit mix-fifo; do
		assert_output --regexp "$c +seeds 1-16: [0-9]+ script steps agree"
	done
	[ "$(steps_of "$output")" -ge 1500 ] || fail "too few steps: $output"
}

@test "conformance: two --fifo writers looping beside a waiter, and two readers upgrading, agree with the scripts" {
	need_spin
	run conform --config fifo --seeds 1-30
	assert_success
	local fifo
	fifo=$(steps_of "$output")
	run conform --config uplive --seeds 1-10
	assert_success
	refute_output --partial MISMATCH
	# 10,000 steps at least, with the mixed modes' test
	[ "$((fifo + $(steps_of "$output")))" -ge 8500 ] ||
		fail "too few steps: $fifo and $output"
}

# A waiter whose lease lapsed while its entry stayed in the hash (until
# status or the hash's expiry drops it) is placed anew at the back when it
# comes again, as the model places it: not in the place it had.
@test "conformance: a lapsed entry left in the hash gives its waiter no old place back" {
	need_spin
	# c1 holds; c0 waits, and its entry lapses (kept in the hash); c2
	# waits; c0 comes again: behind c2 (wo: c0 2, c2 1), in the model and
	# on the server.  (acquire.lua gave it its old place back before.)
	printf '%s\n' 'TRR 1 0' 'TRO 0 1 1 0 0 0 2' \
	    'TRS 0 1 0 0 1 0 0 0 0 0 0 0 0 0 0' 'TRR 0 0' 'TRO 0 0 1 0 2 0 4' \
	    'TRS 0 1 0 0 1 0 1 0 0 0 0 0 1 0 0' 'TRE 2 0' \
	    'TRS 0 1 0 0 1 0 0 0 0 0 0 0 0 0 0' 'TRR 2 0' 'TRO 0 2 1 0 2 0 4' \
	    'TRS 0 1 0 0 1 0 0 0 1 0 0 0 0 0 1' 'TRO 0 0 1 0 2 0 4' \
	    'TRS 0 1 0 0 1 0 1 0 1 0 0 0 2 0 1' >lapse.tr
	run conform --trace lapse.tr --lapse keep
	assert_success
	refute_output --partial MISMATCH
	local d
	d=$(sabotage "local place = own and (tonumber(own.u) or 0) > now and place_of(own) or" \
	    "local place = own and place_of(own) or")
	run conform --lua "$d" --trace lapse.tr --lapse keep
	assert_failure 1
	assert_output --partial "wo[0] model 2, server 1"
	# and the random traces, kept lapsed entries and all
	run conform --config mix-fifo --config mix --seeds 1-24 --lapse keep
	assert_success
	refute_output --partial MISMATCH
}

# sabotage FROM TO [SCRIPT]: a copy of src/lua whose SCRIPT.lua (acquire
# unless said) has FROM (a line that must be there) replaced by TO; its
# directory on stdout.
sabotage() {
	local d="$BATS_TEST_TMPDIR/lua" f=${3:-acquire}.lua
	mkdir -p "$d"
	cp "$LUA"/*.lua "$LUA"/embed.awk "$LUA"/contract "$LUA"/contract.awk "$d/"
	grep -qF -- "$1" "$d/$f" || return 1
	FROM=$1 TO=$2 /usr/bin/python3 -c '
import os, sys
p = sys.argv[1]
s = open(p).read()
open(p, "w").write(s.replace(os.environ["FROM"], os.environ["TO"], 1))
' "$d/$f"
	! cmp -s "$LUA/$f" "$d/$f" || return 1
	echo "$d"
}

@test "conformance: an acquire.lua whose early busy path does not list its waiter is caught, at the step that shows it" {
	need_spin
	local d
	d=$(sabotage "		local due = tonumber(A.slack_ms)
		if due > 0 then
			redis.call('HSET', K.waiters, A.token," \
	    "		local due = 0
		if due > 0 then
			redis.call('HSET', K.waiters, A.token,")
	run conform --lua "$d" --config mix --seeds 1-16
	assert_failure 1
	assert_output --regexp "^MISMATCH mix seed [0-9]+, step [0-9]+ \(TRO .*acquire plain -w"
	assert_output --regexp "wk\[[0-9]\] model 1, server 0"
}

@test "conformance: an acquire.lua without the --fifo deference is caught, at the step that shows it" {
	need_spin
	local d
	d=$(sabotage "if A.fifo == '1' and not mine and not nobody then" \
	    "if false and A.fifo == '1' and not mine and not nobody then")
	run conform --lua "$d" --config fifo --seeds 1-10
	assert_failure 1
	# the configuration, its seed, the step, the trace line, what each said
	assert_output --regexp "^MISMATCH fifo seed [0-9]+, step [0-9]+ \(TRO 0 [0-9] .*c[0-9] acquire plain --fifo"
	assert_output --partial "the model says busy"
	# and the same scripts unsabotaged pass that seed
	local seed
	seed=$(sed -n 's/^MISMATCH fifo seed \([0-9]*\),.*/\1/p' <<<"$output")
	run conform --config fifo --seeds "$seed"
	assert_success
}

@test "conformance: an acquire.lua that lets a second reader's upgrade wait instead of refusing it is caught" {
	need_spin
	local d
	d=$(sabotage "local up = mine and not nobody and upgrader(K.waiters, now," \
	    "local up = false and upgrader(K.waiters, now,")
	run conform --lua "$d" --config uplive --seeds 1-30
	assert_failure 1
	assert_output --regexp "^MISMATCH uplive seed [0-9]+, step [0-9]+ .*acquire of c[0-9]: the model says upgrade refused, the script busy"
}

# The trace of a superseding (the model's -DNEWEST, exec --pending 1): c1
# holds; c0 waits; c2 waits and supersedes c0 (c0's entry goes); c0's
# next attempt is answered superseded and it gives back; c1's release
# hands the lock to c2.
supersede_trace() {
	printf '%s\n' 'TRR 1 0' 'TRO 0 1 1 0 0 0 2' \
	    'TRS 0 1 0 0 1 0 0 0 0 0 0 0 0 0 0' 'TRR 0 0' 'TRO 0 0 1 0 2 0 4' \
	    'TRS 0 1 0 0 1 0 1 0 0 0 0 0 1 0 0' 'TRR 2 0' 'TRO 0 2 1 0 2 0 4' \
	    'TRS 0 1 0 0 1 0 0 0 1 0 0 0 0 0 1' 'TRO 0 0 1 0 2 0 8' \
	    'TRS 0 1 0 0 1 0 0 0 1 0 0 0 0 0 1' 'TRO 3 0 1 0 2 0 0' \
	    'TRS 0 1 0 0 1 0 0 0 1 0 0 0 0 0 1' 'TRO 1 1 1 0 0 0 1' \
	    'TRS 0 0 1 0 0 2 0 0 0 0 0 0 0 0 0' >supersede.tr
}

@test "conformance: newest waiter wins (--pending 1): the model's superseding agrees with the scripts, in a trace and in random ones" {
	need_spin
	supersede_trace
	run conform --trace supersede.tr --pending
	assert_success
	assert_output --partial "conform: 6 script steps in 1 traces agree"
	run conform --config pending --seeds 1-16
	assert_success
	refute_output --partial MISMATCH
}

@test "conformance: an acquire.lua whose newcomer does not supersede is caught, at the step that shows it" {
	need_spin
	local d
	d=$(sabotage "if pending > 0 and not (own and" \
	    "if false and pending > 0 and not (own and")
	supersede_trace
	run conform --lua "$d" --trace supersede.tr --pending
	assert_failure 1
	assert_output --regexp "^MISMATCH supersede.tr, step 6 \(TRO 0 2 1 0 2 0 4: c2 acquire plain -w \(unbounded\)\): state after it: wk\[0\] model 0, server 1"
}

# The model's P_SUPER, found with one lost reply: c0's answer "superseded"
# is lost, and it sends the attempt again, which must be told the same
# (acquire.lua keeps the mark until the give-back).  Before, the answer
# took the mark away: the attempt sent again was listed anew as the
# newest and superseded c2 in turn (pending-loss.bats: on a real server,
# through a proxy that cuts the reply).
@test "conformance: a superseded waiter's attempt sent again after a lost reply is told the same; an acquire.lua whose answer takes the mark away is caught" {
	need_spin
	supersede_trace
	sed '/^TRO 3 0 /i TRO 0 0 1 0 2 0 8\nTRS 0 1 0 0 1 0 0 0 1 0 0 0 0 0 1' \
	    supersede.tr >lost.tr
	[ "$(grep -c '^TRO 0 0 1 0 2 0 8$' lost.tr)" = 2 ] || fail "$(cat lost.tr)"
	run conform --trace lost.tr --pending
	assert_success
	assert_output --partial "conform: 7 script steps in 1 traces agree"
	local d
	d=$(sabotage "-- same, never listed anew as the newest (the model's P_SUPER)." \
	    "redis.call('HDEL', K.waiters, token)")
	run conform --lua "$d" --trace lost.tr --pending
	assert_failure 1
	assert_output --regexp "^MISMATCH lost.tr, step 8 \(TRO 0 0 1 0 2 0 8: c0 acquire plain -w \(unbounded\)\): acquire of c0: the model says superseded, the script busy \(holder\)"
}

# The trace of a replacing (the model's -DREPLACE, exec --replace and
# --no-replace; TRO gains rp, TRS qh[0..2] and nr[0..2]): c0 holds; c1
# asks with --replace: busy, and c0's record is asked to stop (qh); c0's
# extend says so (2) and c0 releases, which hands the lock to c1; c1
# claims it and releases; c2 holds with --no-replace (nr); c0's
# --replace waits without asking it (no qh), and c2's extend says nothing.
replace_trace() {
	printf '%s\n' 'TRR 0 0' 'TRO 0 0 1 0 2 0 2 0' \
	    'TRS 1 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0' 'TRR 1 0' \
	    'TRO 0 1 1 0 2 0 4 1' \
	    'TRS 1 0 0 1 0 0 0 1 0 0 0 0 0 1 0 1 0 0 0 0 0' \
	    'TRO 2 0 1 0 2 0 2 0' \
	    'TRS 1 0 0 1 0 0 0 1 0 0 0 0 0 1 0 1 0 0 0 0 0' \
	    'TRO 1 0 1 0 2 0 1 0' \
	    'TRS 0 1 0 0 2 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0' \
	    'TRO 0 1 1 0 2 0 1 1' \
	    'TRS 0 1 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0' \
	    'TRO 1 1 1 0 2 0 1 1' \
	    'TRS 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0' 'TRR 2 0' \
	    'TRO 0 2 1 0 2 0 2 2' \
	    'TRS 0 0 1 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1' 'TRR 0 0' \
	    'TRO 0 0 1 0 2 0 4 1' \
	    'TRS 0 0 1 0 0 1 1 0 0 0 0 0 1 0 0 0 0 0 0 0 1' \
	    'TRO 2 2 1 0 2 0 1 2' \
	    'TRS 0 0 1 0 0 1 1 0 0 0 0 0 1 0 0 0 0 0 0 0 1' >replace.tr
}

@test "conformance: replacing the holder (--replace, --no-replace): the model's steps agree with the scripts, in a trace and in random ones" {
	need_spin
	replace_trace
	run conform --trace replace.tr
	assert_success
	assert_output --partial "conform: 9 script steps in 1 traces agree"
	run conform --config replace --seeds 1-16
	assert_success
	refute_output --partial MISMATCH
	assert_output --regexp "replace +seeds 1-16: [0-9]+ script steps agree"
}

@test "conformance: an acquire.lua that does not ask the holder to stop, or an extend.lua that does not say it was asked, is caught" {
	need_spin
	local d
	replace_trace
	d=$(sabotage "if A.replace == '1' and not r.nr and not r.qh then" \
	    "if false and A.replace == '1' and not r.nr and not r.qh then")
	run conform --lua "$d" --trace replace.tr
	assert_failure 1
	assert_output --regexp "^MISMATCH replace.tr, step 4 \(TRO 0 1 1 0 2 0 4 1: c1 acquire plain --replace -w \(unbounded\)\): state after it: qh\[0\] model 1, server 0"
	d=$(sabotage "ttl_ms = ttl, replace_host = r.qh and tostring(r.qh)," \
	    "ttl_ms = ttl, replace_host = nil," extend)
	run conform --lua "$d" --trace replace.tr
	assert_failure 1
	assert_output --regexp "^MISMATCH replace.tr, step 5 \(TRO 2 0 1 0 2 0 2 0: c0 extend\): extend of c0: the model says 2, the script 1"
}
