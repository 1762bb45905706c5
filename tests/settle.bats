#!/usr/bin/env bats
# settle.bats: a release whose outcome is unknown (its reply lost after the
# server ran it) is settled, never taken for a loss (issue 37, break 6):
# `rlock release` of an acquire --hold lock exits 0, the history says
# released, and the keeper neither writes `lost` nor signals the owner;
# exec whose own final release loses its reply exits with the command's
# status, not 75.  Through faultproxy.py, which cuts the release's reply
# (half of it forwarded, then the connection closed) after the real
# redis-server behind it has run the script.  And a first copy that
# reaches the server late, after the copy sent again ended the hold and
# another took the lock, records no loss either (issue 48): the proxy holds
# it (hold EVAL) while the settle's new connection passes.

load helpers
setup() { own_server_setup; }
teardown() {
	stop_all_proxies || true
	test_teardown
}

load fault-helpers

# The pids of the live keepers of lock $1 (their argv names it).
keeper_pids() { keeper_pids_of "$1"; }

# keeper_of NAME: the pid of the one keeper of NAME, recorded for teardown
# to stop by PID if a test leaves it running; fails if there is none.
keeper_of() {
	local pid
	pid=$(keeper_pids "$1")
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	track_pid "$pid" rlock
	echo "$pid"
}

# warm_release: the scripts cached on the real server (an acquire and a
# release straight to it), so that the release through the proxy is one
# EVALSHA whose reply comes from running the script, not a NOSCRIPT.
warm_release() {
	local tok
	tok=$(rlock -u "$RLOCK_URL" acquire warm) || return 1
	rlock -u "$RLOCK_URL" release --token "$tok" warm
}

# events NAME: the events of NAME's history, newest first, one a line.
events() {
	rlock -u "$RLOCK_URL" --json log -n 20 "$1" |
		/usr/bin/python3 -c 'import json, sys
for line in sys.stdin: print(json.loads(line)["event"])'
}

@test "settle: a release of an acquire --hold lock whose reply is cut exits 0 and records released; the keeper signals no one" {
	warm_release || fail "cannot warm the scripts"
	start_proxy P "$REDIS_PORT"
	# The owner: takes the lock through the proxy, waits for "go", releases
	# through the proxy, then runs on until "stop" (bounded loops).
	make_script owner.sh "trap 'echo TERM >got; exit 3' TERM
T=\$(\"$RLOCK\" -u \"$P_URL\" acquire --hold -t 60s held) || { echo \$? >failed; exit 9; }
echo \"\$T\" >token
i=0; while [ \$i -lt 600 ] && [ ! -e go ]; do sleep 0.05; i=\$((i + 1)); done
\"$RLOCK\" -u \"$P_URL\" release --token \"\$T\" held 2>release.err; echo \$? >released
i=0; while [ \$i -lt 300 ] && [ ! -e stop ]; do sleep 0.1; i=\$((i + 1)); done" >/dev/null
	bg_start S ./owner.sh
	wait_file token 10000 || fail "no lock: $(cat S.err failed 2>/dev/null)"
	local kp
	kp=$(keeper_of held) || fail "not one keeper: $(keeper_pids held)"
	# The next reply to a script call is cut: the release's.
	proxy P cut EVAL
	touch go
	wait_file released 15000 || fail "the release did not end: $(cat release.err)"
	proxy P stats
	assert_equal "$(reply_field cuts)" 1
	assert_equal "$(cat released)" 0
	assert_equal "$(rcli EXISTS 'rlock:{held}')" 0
	# The keeper has gone, and quietly.
	wait_gone "$kp" 5000 || fail "the keeper ($kp) is still running"
	touch stop
	bg_wait "$S" 10000 || fail "the owner did not end"
	[[ ! -e got ]] || fail "the owner was signalled: $(cat S.err release.err)"
	assert_equal "$BG_STATUS" 0
	! grep -q lost release.err || fail "release spoke of a loss: $(cat release.err)"
	run events held
	assert_success
	assert_line --index 0 released
	refute_line lost
}

@test "settle: exec whose final release reply is cut exits with the command's status, not 75" {
	warm_release || fail "cannot warm the scripts"
	start_proxy P "$REDIS_PORT"
	make_script cmd.sh 'echo ready >ready
i=0; while [ $i -lt 600 ] && [ ! -e go ]; do sleep 0.05; i=$((i + 1)); done
exit 0' >/dev/null
	# A long TTL: no heartbeat's extend comes between the cut and the release.
	bg_start R "$RLOCK" -v -u "$P_URL" exec -t 60s ex -- ./cmd.sh
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	proxy P cut EVAL
	touch go
	bg_wait "$R" 15000 || fail "rlock still running 15 s after the command ended"
	proxy P stats
	assert_equal "$(reply_field cuts)" 1
	assert_equal "$BG_STATUS" 0
	! grep -q lost R.err || fail "rlock reported a loss: $(cat R.err)"
	# Settled: said released, not "the release failed".
	! grep -q 'release failed' R.err || fail "the release was not settled: $(cat R.err)"
	grep -q 'released ex' R.err || fail "no release said: $(cat R.err)"
	assert_equal "$(rcli EXISTS 'rlock:{ex}')" 0
	run events ex
	assert_success
	assert_line --index 0 released
	refute_line lost
}

@test "settle: exec whose release is cut before it ran (a NOSCRIPT reply cut) sends it again: released at once, exit 0" {
	# The release script is not cached: the first reply to it is the
	# server's NOSCRIPT, and that is the one cut, so the release never ran.
	start_proxy P "$REDIS_PORT"
	make_script cmd.sh 'echo ready >ready
i=0; while [ $i -lt 600 ] && [ ! -e go ]; do sleep 0.05; i=$((i + 1)); done
exit 0' >/dev/null
	bg_start R "$RLOCK" -v -u "$P_URL" exec -t 60s ex -- ./cmd.sh
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	proxy P cut EVAL
	touch go
	bg_wait "$R" 15000 || fail "rlock still running 15 s after the command ended"
	proxy P stats
	assert_equal "$(reply_field cuts)" 1
	assert_equal "$BG_STATUS" 0
	! grep -q 'release failed' R.err || fail "the release was not settled: $(cat R.err)"
	# Given back at once, not left to its 60 s TTL.
	assert_equal "$(rcli EXISTS 'rlock:{ex}')" 0
	run events ex
	assert_success
	assert_line --index 0 released
	refute_line lost
}

@test "settle: a release that cannot be settled (the server silent) exits 69; its keeper stops at once, without an extend, a signal or a loss" {
	start_proxy P "$REDIS_PORT"
	# A TTL long enough that the keeper's first extend (at a third of it)
	# comes after the release: only the release meets the blackhole.
	make_script owner.sh "trap 'echo TERM >got; exit 3' TERM
T=\$(\"$RLOCK\" -u \"$P_URL\" acquire --hold -t 30s held) || { echo \$? >failed; exit 9; }
echo \"\$T\" >token
i=0; while [ \$i -lt 600 ] && [ ! -e go ]; do sleep 0.05; i=\$((i + 1)); done
\"$RLOCK\" -u \"$P_URL\" --timeout 300ms release --token \"\$T\" held 2>release.err; echo \$? >released
i=0; while [ \$i -lt 600 ] && [ ! -e stop ]; do sleep 0.1; i=\$((i + 1)); done" >/dev/null
	bg_start S ./owner.sh
	wait_file token 10000 || fail "no lock: $(cat S.err failed 2>/dev/null)"
	local kp
	kp=$(keeper_of held) || fail "not one keeper: $(keeper_pids held)"
	proxy P blackhole
	touch go
	wait_file released 10000 || fail "the release did not end: $(cat release.err)"
	assert_equal "$(cat released)" 69
	# Told that the outcome is unknown, the keeper stops: no extend (one
	# would block in the blackhole, and then find the key gone, or not,
	# and call the lock lost).
	wait_gone "$kp" 5000 || fail "the keeper ($kp) is still running"
	# The network back: the release that waited in the blackhole may run
	# now, late; nothing takes it for a loss.
	proxy P pass
	[[ ! -e got ]] || fail "the owner was signalled: $(cat S.err release.err)"
	touch stop
	bg_wait "$S" 10000 || fail "the owner did not end"
	assert_equal "$BG_STATUS" 0
	run events held
	assert_success
	refute_line lost
}

# late_copy_test NAME [USERINFO]: exec through the proxy whose final release is held
# there (its first copy), times out, and is settled: a settling copy on a
# new connection ends the hold, exit 0.  Then B takes NAME straight from
# the server, and the held first copy is let through: it runs late, the
# token no longer holding.  Leaves A's token in A_TOKEN, B's in B_TOKEN,
# and in MARKS the settled marks of NAME found before the late copy ran,
# each with its TTL.  USERINFO ("user:password@"): A and B connect as
# that user.
late_copy_test() {
	local name=$1 who=${2:-} before i k
	warm_release || fail "cannot warm the scripts"
	start_proxy P "$REDIS_PORT"
	make_script cmd.sh 'echo "$RLOCK_TOKEN" >token
echo ready >ready
i=0; while [ $i -lt 600 ] && [ ! -e go ]; do sleep 0.05; i=$((i + 1)); done
exit 0' >/dev/null
	# A long TTL: no heartbeat's extend comes between the hold and the
	# release.  --timeout 1s: the first copy times out, and the settle
	# (twice that) has time to reconnect, ask and send it again.
	bg_start R "$RLOCK" -v -u "redis://${who}127.0.0.1:$P_PORT" --timeout 1s exec -t 60s "$name" -- \
		./cmd.sh
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	# The next script call (the release) waits in the proxy, on its
	# connection; the settle's new connection passes.
	proxy P hold EVAL
	touch go
	bg_wait "$R" 15000 || fail "rlock still running 15 s after the command ended"
	proxy P stats
	assert_equal "$(reply_field holds)" 1
	assert_equal "$BG_STATUS" 0
	! grep -q 'release failed' R.err || fail "the release was not settled: $(cat R.err)"
	assert_equal "$(rcli EXISTS "rlock:{$name}")" 0
	A_TOKEN=$(cat token)
	MARKS=()
	for k in $(rcli --scan --pattern "rlock:{$name}:settled:*"); do
		MARKS+=("$k $(rcli PTTL "$k")")
	done
	B_TOKEN=$(rlock -u "redis://${who}127.0.0.1:$REDIS_PORT" acquire -t 60s \
		"$name") ||
		fail "B could not take the lock"
	# The first copy, late: let through, and waited for until it has run
	# (the server counts a call once it has run it; nothing else calls a
	# script meanwhile).
	before=$(cmd_calls evalsha eval)
	proxy P pass
	for ((i = 0; i < 500; i++)); do
		(($(cmd_calls evalsha eval) > before)) && break
		sleep 0.02
	done
	(($(cmd_calls evalsha eval) > before)) ||
		fail "the held release never reached the server"
}

@test "settle: a first release copy that runs late, after the settling copy ended the hold and B took the lock, records no loss (issue 48)" {
	late_copy_test late
	# B's hold is untouched.
	assert_equal "$(rcli HKEYS 'rlock:{late}')" "$B_TOKEN"
	run events late
	assert_success
	refute_line lost
	# A's run: acquired, released (by the settling copy); then B's.
	assert_equal "$(echo "$output" | tr '\n' ' ')" "acquired released acquired "
	run rlock -u "$RLOCK_URL" log late
	assert_success
	refute_output --partial lost
	# What kept it out: the settling copy's mark, one for A's run, for as
	# long as the history (30 days by default); taken by the late copy.
	assert_equal "${#MARKS[@]}" 1
	local ttl=${MARKS[0]##* }
	((ttl > 29 * 86400000 && ttl <= 30 * 86400000)) || fail "its TTL: $ttl"
	# The mark was taken by the late copy, once: a later release of A's
	# token that finds it gone is a loss again, and said so.
	assert_equal "$(rcli --scan --pattern 'rlock:{late}:settled:*')" ""
	run rlock -u "$RLOCK_URL" release --token "$A_TOKEN" late
	assert_failure 1
	run events late
	assert_success
	assert_line --index 0 lost
}

@test "settle: as an ACL user with exactly the documented commands, a late first release copy records no loss" {
	local rules
	rules=$(sed -n 's/^ACL SETUSER rlock on >PASSWORD //p' \
		"$BATS_TEST_DIRNAME/../man/rlock-security.7")
	[[ -n "$rules" ]] || fail "no documented ACL line in rlock-security(7)"
	# shellcheck disable=SC2086 # the rules, one word each
	assert_equal "$(rcli ACL SETUSER alice reset on '>s3cret' $rules)" OK
	late_copy_test acl alice:s3cret@
	run events acl
	assert_success
	refute_line lost
	assert_equal "$(echo "$output" | tr '\n' ' ')" "acquired released acquired "
	assert_equal "${#MARKS[@]}" 1
	assert_equal "$(rcli --scan --pattern 'rlock:{acl}:settled:*')" ""
}
