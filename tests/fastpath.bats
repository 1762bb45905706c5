#!/usr/bin/env bats
# fastpath.bats: what makes the common cases quick, held to the behaviour it
# must keep.  A waiter's next attempt travels with its BLPOP (no round trip
# after a wake-up), without costing validity, fences or --min-hold; a
# quorum's connections are made side by side, AUTH and SELECT included, and
# a silent server costs one --connect-timeout however many there are.

load helpers
load tls-helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { file_server_setup; }
teardown() {
	thaw_all
	test_teardown
}

# calls CMD: the calls of one command since the last RESETSTAT.
calls() {
	rcli INFO commandstats | tr -d '\r' |
		sed -n "s/^cmdstat_$1:calls=\\([0-9]*\\),.*/\\1/p" | grep . || echo 0
}

# The client blocked in BLPOP on the wake list, as CLIENT LIST shows it.
blocked_waiter() {
	rcli CLIENT LIST | tr -d '\r' | grep ' cmd=blpop '
}

# pw_servers PREFIX N: start N servers that require the password "pw", as
# PREFIX1..PREFIXN, and set URLS to a -u option for each.
pw_servers() {
	local prefix=$1 n=$2 i portv
	URLS=()
	for ((i = 1; i <= n; i++)); do
		start_redis_auth_as "$prefix$i" pw || return 1
		portv="$prefix${i}_PORT"
		URLS+=(-u "redis://:pw@127.0.0.1:${!portv}")
	done
}

# make_holder PORT...: ./holder.sh, a command that writes "ready", runs
# for 4 s, then writes to "held" how many of the servers on the PORTs
# (password "pw") still hold its lock with its token.
make_holder() {
	make_script holder.sh "echo ready > ready
sleep 4
n=0
for p in $*; do
	[ \"\$(redis-cli -p \"\$p\" -a pw --no-auth-warning HKEYS \"\$RLOCK_KEY\")\" = \"\$RLOCK_TOKEN\" ] && n=\$((n + 1))
done
echo \$n > held" >/dev/null
}

# start_slow_proxy VAR TARGET_PORT DELAY: a loopback TCP proxy to TARGET_PORT
# whose accept queue is full, and never drained, for its first DELAY
# seconds: the kernel drops the SYNs of connects made then, which complete
# only when the SYN is sent again after the queue drains (a second or more
# later), as to a server far away.  With a DELAY past the test, no connect
# to it ever succeeds or fails (as across a network partition).  Gone after
# 60 s at most; stopped by PID in teardown.  Sets VAR_PORT.
start_slow_proxy() {
	local var=$1 target=$2 delay=$3
	bg_start "$var" timeout 60 python3 -c '
import socket, sys, threading, time
target, delay = int(sys.argv[1]), float(sys.argv[2])
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(0)
fill = []
for _ in range(2):
    c = socket.socket()
    c.setblocking(False)
    try:
        c.connect(s.getsockname())
    except BlockingIOError:
        pass
    fill.append(c)
time.sleep(0.2)
print(s.getsockname()[1], flush=True)
time.sleep(delay)
mine = {c.getsockname() for c in fill}
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for x in (a, b):
        try:
            x.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
deadline = time.time() + 55
while time.time() < deadline:
    s.settimeout(max(0.1, deadline - time.time()))
    try:
        c, peer = s.accept()
    except socket.timeout:
        continue
    if peer in mine:
        c.close()
        continue
    u = socket.create_connection(("127.0.0.1", target))
    threading.Thread(target=pump, args=(c, u), daemon=True).start()
    threading.Thread(target=pump, args=(u, c), daemon=True).start()
' "$target" "$delay"
	wait_port_line "$var"
}

@test "fastpath: a blocked waiter's next attempt is already queued on the server behind its BLPOP" {
	local holder line qbuf i
	# Both scripts cached, so that each attempt is one call.
	rlock release --token "$(rlock acquire warm-up)" warm-up
	holder=$(rlock acquire -t 30s job)
	rcli CONFIG RESETSTAT >/dev/null
	bg_start W "$RLOCK" acquire -w 10s job
	for ((i = 0; i < 250; i++)); do
		line=$(blocked_waiter) && break
		sleep 0.02
	done
	[[ -n "$line" ]] || fail "no client blocked in BLPOP: $(rcli CLIENT LIST)"
	# The acquire script waits, unparsed, in the blocked client's buffer.
	qbuf=$(sed -n 's/.* qbuf=\([0-9]*\) .*/\1/p' <<<"$line")
	assert_between "$qbuf" 100 100000 "bytes queued behind the BLPOP"

	rlock release --token "$holder" job
	bg_wait "$W" 9000 || fail "the waiter did not get the lock"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$(cat W.out)"
	# The waiter: one attempt, one BLPOP, the attempt queued behind it; the
	# release: one more script.  No attempt of its own after the wake-up.
	assert_equal "$(calls blpop)" 1
	assert_equal "$(( $(calls evalsha) + $(calls eval) ))" 3
}

@test "fastpath: a waiter with a TTL shorter than the holder's time left takes the lock once, with the next fence" {
	local f0
	# A counter above the clock's floor counts acquires one by one.
	rcli SET 'rlock:{job}:fence' 8000000000000000 >/dev/null
	rlock acquire -t 2500ms job >/dev/null
	f0=$(rcli GET 'rlock:{job}:fence')
	make_script cmd.sh 'echo "$RLOCK_FENCE" > fence
[ "$(redis-cli -p "$REDIS_PORT" HKEYS "$RLOCK_KEY")" = "$RLOCK_TOKEN" ] && echo held > held' >/dev/null
	run --separate-stderr env REDIS_PORT="$REDIS_PORT" \
		"$RLOCK" -v exec -t 1s -w 10s job -- ./cmd.sh
	assert_success
	# One acquisition: a wait longer than the TTL must not spend the lock
	# it wins (given back and taken again, it would be two fences on).
	assert_equal "$(cat fence)" "$((f0 + 1))"
	assert_equal "$(cat held)" held
	refute_contains lost "$stderr"
}

@test "fastpath: --min-hold counts from when the lock was granted, not from when the wait began" {
	rlock acquire -t 1500ms job >/dev/null
	run --separate-stderr "$RLOCK" exec --min-hold 2s -w 10s job -- true
	assert_success
	# Waited about 1.5 s, then granted: the lock stays about 2 s from then.
	assert_between "$(rcli PTTL 'rlock:{job}')" 1000 2000 "PTTL after --min-hold 2s"
}

@test "fastpath: five servers with a password and a db number each get AUTH and SELECT, and the lock lands in that db" {
	local i urls=() tok
	for ((i = 1; i <= 5; i++)); do
		start_redis_auth_as "A$i" 's3cr#t' || fail "server $i did not start"
		local portv="A${i}_PORT"
		urls+=(-u "redis://:s3cr%23t@127.0.0.1:${!portv}/3")
	done
	run --separate-stderr "$RLOCK" "${urls[@]}" acquire job
	assert_success
	assert_equal "$stderr" ""
	tok=$output
	for ((i = 1; i <= 5; i++)); do
		assert_equal "$(RCLI_AUTH='s3cr#t' rcli_as "A$i" -n 3 HKEYS 'rlock:{job}')" "$tok"
		assert_equal "$(RCLI_AUTH='s3cr#t' rcli_as "A$i" -n 0 EXISTS 'rlock:{job}')" 0
	done
	run --separate-stderr "$RLOCK" "${urls[@]}" release --token "$tok" job
	assert_success
}

@test "fastpath: a quorum with a wrong password on three of five exits 69 naming the failure, never the password" {
	local i urls=() pw
	for ((i = 1; i <= 5; i++)); do
		start_redis_auth_as "B$i" 'right-pw' || fail "server $i did not start"
		local portv="B${i}_PORT"
		pw=right-pw
		((i <= 3)) && pw=wrong-pw
		urls+=(-u "redis://:$pw@127.0.0.1:${!portv}")
	done
	run --separate-stderr "$RLOCK" "${urls[@]}" acquire job
	assert_equal "$status" 69
	assert_one_error_line
	# (Two answer, but three refusals decide it: a busy machine may have
	# heard one of the two, or neither (a CI run under ASan), by the end
	# of the stragglers' grace.)
	[[ "$stderr" == *"only "[012]" of 5 servers answered, and a lock needs 3"* ]] ||
		fail "unexpected message: $stderr"
	[[ "$stderr" == *"authentication failed"* ]] || fail "no reason: $stderr"
	refute_contains wrong-pw "$stderr"
	refute_contains right-pw "$stderr"
	for ((i = 4; i <= 5; i++)); do
		assert_equal "$(RCLI_AUTH=right-pw rcli_as "B$i" EXISTS 'rlock:{job}')" 0
	done
}

@test "fastpath: two silent servers in a quorum of five cost the acquire no --connect-timeout: the majority decides" {
	local i urls t0 t1
	pw_servers C 3 || fail "the servers did not start"
	urls=("${URLS[@]}")
	# Silent listeners accept the connection and never answer the AUTH.
	start_silent_listener S1 || fail "no silent listener"
	start_silent_listener S2 || fail "no silent listener"
	urls+=(-u "redis://:pw@127.0.0.1:$S1_PORT" -u "redis://:pw@127.0.0.1:$S2_PORT")
	t0=$(now_ms)
	run --separate-stderr "$RLOCK" "${urls[@]}" --connect-timeout 1500ms acquire job
	t1=$(now_ms)
	assert_success
	assert_equal "$stderr" ""
	# Their AUTH replies are read with the script's, side by side: the
	# three that answer settle it well before --connect-timeout.
	assert_between $((t1 - t0)) 0 1400 "acquire took (ms)"
	for ((i = 1; i <= 3; i++)); do
		assert_equal "$(RCLI_AUTH=pw rcli_as "C$i" HKEYS 'rlock:{job}')" "$output"
	done
}

@test "fastpath: exec runs a command that does not exist as before: 127, one line, nothing held, no child left" {
	run -127 --separate-stderr "$RLOCK" exec job -- ./no-such-command
	assert_one_error_line
	[[ "$stderr" == *"cannot run './no-such-command'"* ]] || fail "unexpected: $stderr"
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	run --separate-stderr "$RLOCK" exec job -- /etc/passwd
	assert_equal "$status" 126
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "fastpath: a quorum server frozen behind AUTH mid-exec costs the heartbeat nothing: a 2s lock is kept with the defaults" {
	local i urls
	pw_servers D 3 || fail "the servers did not start"
	urls=("${URLS[@]}")
	make_holder "$D2_PORT" "$D3_PORT"
	bg_start R "$RLOCK" "${urls[@]}" -v exec -t 2s job -- ./holder.sh
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	sleep 0.3
	# A stopped server still completes TCP connects (the kernel does), but
	# answers nothing: each new connection's AUTH goes unanswered.
	echo "$D1_PID" >>"$BATS_TEST_TMPDIR/.frozen"
	kill -STOP "$D1_PID"
	bg_wait "$R" 15000 || fail "rlock still running 15 s after the freeze"
	! grep -q lost R.err || fail "rlock reported a loss (exit $BG_STATUS): $(cat R.err)"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat held)" 2
	thaw_all
	for ((i = 2; i <= 3; i++)); do
		assert_equal "$(RCLI_AUTH=pw rcli_as "D$i" EXISTS 'rlock:{job}')" 0
	done
}

@test "fastpath: a quorum server that drops connects (a partition) costs neither the acquire nor the heartbeat a --connect-timeout" {
	local i urls t0 t1
	pw_servers E 2 || fail "the servers did not start"
	urls=("${URLS[@]}")
	start_slow_proxy X "$E1_PORT" 120 || fail "no SYN dropper"
	urls+=(-u "redis://:pw@127.0.0.1:$X_PORT")
	make_holder "$E1_PORT" "$E2_PORT"
	t0=$(now_ms)
	# Defaults: --connect-timeout 2s, as long as the whole TTL.
	bg_start R "$RLOCK" "${urls[@]}" -v exec -t 2s job -- ./holder.sh
	wait_file ready 10000 || fail "the command did not start: $(cat R.err)"
	t1=$(now_ms)
	assert_between $((t1 - t0)) 0 1500 "the command started after (ms)"
	bg_wait "$R" 15000 || fail "rlock still running 15 s after the start"
	! grep -q lost R.err || fail "rlock reported a loss (exit $BG_STATUS): $(cat R.err)"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat held)" 2
	for ((i = 1; i <= 2; i++)); do
		assert_equal "$(RCLI_AUTH=pw rcli_as "E$i" EXISTS 'rlock:{job}')" 0
	done
}

@test "fastpath: a quorum server whose connect completes late still gets AUTH and SELECT before the listing's commands" {
	local i urls=() tok
	for ((i = 1; i <= 3; i++)); do
		start_redis_auth_as "F$i" pw || fail "server $i did not start"
		local portv="F${i}_PORT"
		RCLI_AUTH=pw rcli_as "F$i" -n 2 EVAL "$FAKE_HOLD" 1 'rlock:{listed}' x 0 >/dev/null
	done
	urls=(-u "redis://:pw@127.0.0.1:$F1_PORT/2" -u "redis://:pw@127.0.0.1:$F2_PORT/2")
	start_slow_proxy SP "$F3_PORT" 0.5 || fail "no proxy"
	urls+=(-u "redis://:pw@127.0.0.1:$SP_PORT/2")
	# The connect to the proxy is still under way when the servers are
	# opened; the listing must finish it (AUTH, SELECT 2) before its SCAN.
	run --separate-stderr "$RLOCK" "${urls[@]}" --connect-timeout 5s status
	echo "stderr: $stderr"
	assert_success
	assert_equal "$stderr" ""
	# Found in db 2 of all three, the proxied one included.
	assert_line --index 0 --regexp '^listed: .*\(on 3 of 3 servers\)$'
	assert_line --index 3 "  redis://127.0.0.1:$SP_PORT/2: holds it"
	# Nothing reached it before its AUTH (a command sent on the bare
	# connection would have been refused with NOAUTH, and quietly so).
	run --separate-stderr env RCLI_AUTH=pw redis-cli -p "$F3_PORT" -a pw \
		--no-auth-warning INFO errorstats
	refute_contains NOAUTH "$output"
}

# The calls a script made on the server since the last RESETSTAT (all but
# the script calls themselves, and INFO / CONFIG of the test's own).
script_calls() {
	rcli INFO commandstats | tr -d '\r' | grep -v -E \
	    '^cmdstat_(evalsha|eval|fcall|fcall_ro|info|config[|a-z]*):' |
		sed -n 's/^cmdstat_[^:]*:calls=\([0-9]*\),.*/\1/p' |
		awk '{ n += $1 } END { print n + 0 }'
}

@test "fastpath: an uncontended exec cycle costs the server 12 calls from its scripts (14 at most), in every mode but --every, with history and a fence" {
	local mode most n
	for mode in "" --shared "--limit 2" --fifo; do
		n=cy${mode// /}
		# shellcheck disable=SC2086
		rlock exec $mode "$n" -- true
		rcli CONFIG RESETSTAT >/dev/null
		# shellcheck disable=SC2086
		rlock exec $mode "$n" -- true
		assert_equal "$(calls evalsha)" 2
		# The scripts' fast paths (their early sections): EXISTS,
		# GET fence, TIME, SET fence, XADD, PEXPIRE log, HSET,
		# PEXPIRE; HGETALL, EXISTS of the waiters, DEL, XADD (the
		# log's expiry already reaches past it); and an XLEN after one
		# XADD in eight (see record() in lib.lua).  A mode but plain
		# asks whether anybody waits on acquire too (a plain ask takes
		# a free name whoever waits).  (21 before the fast paths, 38
		# before a TYPE for each key went.)
		most=13
		[ -z "$mode" ] || most=14
		echo "mode '$mode': $(script_calls) calls"
		[ "$(script_calls)" -le "$most" ]
		assert_equal "$(calls rpush)" 0
		assert_equal "$(calls del)" 1
		assert_equal "$(rcli EXISTS "rlock:{$n}" "rlock:{$n}:wake")" 0
		# The history and the fence are as they were.
		run rlock log "$n"
		assert_output --partial "$n released"
		assert_output --partial "$n acquired"
		[ "$(rcli GET "rlock:{$n}:fence")" -gt 1000000000000000 ]
		[ "$(rcli PTTL "rlock:{$n}:fence")" -gt 0 ]
	done
}

@test "fastpath: a release that hands a plain lock to its lone waiter takes the later fast path: one TYPE, the hold read once, the grant as the full script writes it" {
	local holder x
	holder=$(rlock acquire -t 60s hx)
	# The waiter: an entry as rlock writes it, with no process behind it
	# whose renewals or claim the counts would take in.
	x=$(($(server_ms) + 20000))
	list_waiter hx tokW "$x"
	rcli CONFIG RESETSTAT >/dev/null
	run rlock release --token "$holder" hx
	assert_success
	# The later fast path asks the line's type (the waiters' is their
	# HGETALL's) and reads the hold once; the full script asks both
	# types and reads the hold twice (its early fast path's read, then
	# its own).
	assert_equal "$(calls type)" 1
	assert_equal "$(calls hgetall)" 2	# the hold, the waiters
	# Granted: the waiter's hold until its lease's end, the next fence,
	# woken on its own list, its entry gone, 'acquired' after 'released'.
	assert_equal "$(rcli HKEYS 'rlock:{hx}')" tokW
	assert_between "$(rcli PTTL 'rlock:{hx}')" 1 20000 pttl_of_the_grant
	assert_equal "$(rcli LLEN 'rlock:{hx}:wake:tokW')" 1
	assert_equal "$(rcli EXISTS 'rlock:{hx}:waiters')" 0
	run rlock log hx
	[[ "${lines[0]}" == *" acquired by u@htokW "*", waited "* ]] || fail "$output"
	[[ "${lines[1]}" == *" released "* ]] || fail "$output"
}

# monitor_start: the server's MONITOR into MON.out (ready when it
# answers OK); monitor_stop: ended by PID once all before it is written.  inner_calls: the inner
# commands of each script call in it, one line a script call
# ("EXISTS TIME ..."), in order.
monitor_start() {
	local i
	bg_start MON redis-cli -h 127.0.0.1 -p "$REDIS_PORT" MONITOR
	for ((i = 0; i < 250; i++)); do
		grep -q '^OK' MON.out 2>/dev/null && return 0
		sleep 0.02
	done
	fail "MONITOR never answered"
}
monitor_stop() {
	local i
	# PING's line marks the end of what came before: stopped once
	# redis-cli has written it (a loaded machine may lag), not before.
	rcli PING >/dev/null
	for ((i = 0; i < 500; i++)); do
		grep -q '"PING"' MON.out && break
		sleep 0.02
	done
	kill "$MON" 2>/dev/null
	bg_wait "$MON" 5000 || true
	grep -q '"PING"' MON.out || fail "MONITOR never showed the PING"
}
inner_calls() {
	awk '/"(EVALSHA|EVAL)"/ { if (l != "") print l; l = "-"; next }
	    / \[[0-9]+ lua\] / { if (l != "") { split($4, c, "\""); l = l " " c[2] } next }
	    { if (l != "") print l; l = "" }
	    END { if (l != "") print l }' MON.out
}

@test "fastpath: a plain ask that a plain holder refuses takes the early fast path, nothing written; a waiter it lists is placed as the full script places it" {
	local holder keys1 keys2
	holder=$(rlock acquire -t 60s rx)
	monitor_start
	run rlock exec -n rx -- true
	assert_failure 1
	monitor_stop
	# The key, then whether anybody waits, the hold, the clock: the
	# early section's order (the full script asks the clock first, and
	# runs its whole prelude first: about 1.8 times the server's work).
	assert_equal "$(inner_calls)" "- EXISTS EXISTS HGETALL TIME"
	assert_equal "$(rcli EXISTS 'rlock:{rx}:waiters' 'rlock:{rx}:queue')" 0
	assert_equal "$(rcli HKEYS 'rlock:{rx}')" "$holder"
	# The first waiter is listed by the fast path (its entry, and the
	# key's expiry set, which it just made: no PTTL), the second by the
	# full script: the same fields, and the first in the one order gets
	# the lock first.
	monitor_start
	bg_start W1 "$RLOCK" acquire -w 30s -t 30s rx
	until_listed rx 1
	monitor_stop
	assert_equal "$(inner_calls | head -1)" \
		"- EXISTS EXISTS HGETALL TIME HSET PEXPIRE"
	bg_start W2 "$RLOCK" acquire -w 30s -t 30s rx
	until_listed rx 2
	keys1=$(rcli HGET 'rlock:{rx}:waiters' "$(rcli HKEYS 'rlock:{rx}:waiters' | head -1)" |
		/usr/bin/python3 -c 'import json, sys; print(sorted(json.load(sys.stdin)))')
	keys2=$(rcli HGET 'rlock:{rx}:waiters' "$(rcli HKEYS 'rlock:{rx}:waiters' | tail -1)" |
		/usr/bin/python3 -c 'import json, sys; print(sorted(json.load(sys.stdin)))')
	assert_equal "$keys1" "['c', 'h', 'k', 'n', 'o', 'p', 's', 'u']"
	assert_equal "$keys2" "$keys1"
	[ "$(rcli PTTL 'rlock:{rx}:waiters')" -gt 0 ]
	rlock release --token "$holder" rx
	bg_wait "$W1" 10000 || fail "the first waiter did not get the lock"
	assert_equal "$BG_STATUS" 0
	_proc_alive "$W2" || fail "the second waiter ended: $(cat W2.err)"
	rlock release --token "$(cat W1.out)" rx
	bg_wait "$W2" 10000 || fail "the second waiter did not get the lock"
	assert_equal "$BG_STATUS" 0
}
