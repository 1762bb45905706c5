#!/usr/bin/env bats
# loop.bats: every server of a quorum is one connection in one poll loop, so
# a server that never answers -- a TLS port that never finishes the
# handshake, a sentinel that never replies -- holds up no other: acquire and
# exec's heartbeat go at the speed of the servers that do answer.  And a host
# name with several addresses is connected to side by side, so an address
# that swallows connects costs a fraction of --connect-timeout, not all of it.

load helpers
load tls-helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { file_server_setup; }
teardown() { test_teardown; }

# no_lock_keys: none of Q1..Q3 holds a lock key (rlock:{NAME}).
no_lock_keys() {
	local i sock keys
	for i in 1 2 3; do
		sock="Q${i}_SOCK"
		keys=$(redis-cli -s "${!sock}" --scan --pattern 'rlock:{*}' | grep -v '}:' || true)
		[[ -z "$keys" ]] || fail "Q$i still holds: $keys"
	done
}

@test "loop: a silent TLS server in a quorum does not slow acquire: the other three decide" {
	make_test_pki
	start_quorum 3
	quorum_urls
	start_silent_listener S
	local t0
	t0=$(now_ms)
	run --separate-stderr rlock "${URLS[@]}" -u "rediss://127.0.0.1:$S_PORT" \
		--tls-ca "$TLS_CA" --connect-timeout 10s acquire -t 30s job
	assert_success
	# Waiting for the handshake would take the whole 10 s.
	assert_elapsed_below "$t0" 5000
	assert_output --regexp "$UUID_RE"
	run rlock "${URLS[@]}" status job
	assert_success
}

@test "loop: a silent Sentinel in a quorum does not slow acquire: the other three decide" {
	start_quorum 3
	quorum_urls
	start_silent_listener S
	local t0
	t0=$(now_ms)
	run --separate-stderr rlock "${URLS[@]}" \
		-u "redis-sentinel://127.0.0.1:$S_PORT/mymaster" \
		--connect-timeout 10s acquire -t 30s job
	assert_success
	assert_elapsed_below "$t0" 5000
	run rlock "${URLS[@]}" status job
	assert_success
}

@test "loop: exec beside a silent TLS server and a silent Sentinel extends at its rhythm and exits promptly" {
	make_test_pki
	start_quorum 3
	quorum_urls
	start_silent_listener S1
	start_silent_listener S2
	local t0
	t0=$(now_ms)
	# Five servers, majority three: the silent two must cost nothing.  A
	# stall of --connect-timeout (10 s) per extend would lose the 2 s lock.
	run --separate-stderr rlock "${URLS[@]}" -u "rediss://127.0.0.1:$S1_PORT" \
		-u "redis-sentinel://127.0.0.1:$S2_PORT/mymaster" --tls-ca "$TLS_CA" \
		--connect-timeout 10s -v exec -t 2s --heartbeat 200ms job -- sleep 3
	assert_success
	local extends
	extends=$(grep -c 'extended job' <<<"$stderr" || true)
	((extends >= 5)) || fail "only $extends extends in 3 s: $stderr"
	# The release does not wait for servers the acquire never reached.
	assert_elapsed_below "$t0" 9000
	no_lock_keys
}

@test "loop: a quorum with a silent TLS server has no thread but the heartbeat's" {
	command -v strace >/dev/null || skip "no strace"
	make_test_pki
	start_quorum 3
	quorum_urls
	start_silent_listener S
	# LeakSanitizer cannot work under ptrace: in the sanitizer build, leaks
	# are the rest of the suite's to find.
	run --separate-stderr env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -e trace=clone,clone3 -o "$BATS_TEST_TMPDIR/st" \
		"$RLOCK" "${URLS[@]}" -u "rediss://127.0.0.1:$S_PORT" --tls-ca "$TLS_CA" \
		--connect-timeout 10s exec -t 3s job -- sleep 3.5
	assert_success
	assert_equal "$(grep -c CLONE_THREAD "$BATS_TEST_TMPDIR/st")" 1
}

# A private /etc/hosts naming rlockmulti twice, for a command run inside a
# mount namespace of its own (nothing outside sees it).
with_multi_hosts() {
	printf '127.0.0.1 localhost\n127.0.0.2 rlockmulti\n127.0.0.1 rlockmulti\n' \
		>"$BATS_TEST_TMPDIR/hosts"
	unshare -m --propagation private bash -c \
		'mount --bind "$1" /etc/hosts && shift && exec "$@"' \
		_ "$BATS_TEST_TMPDIR/hosts" "$@"
}

# drop_syns_at VAR ADDR PORT: a listener on ADDR:PORT whose accept queue is
# full, so the kernel drops every further SYN (a connect hangs, as behind a
# firewall); stopped by PID in teardown.
drop_syns_at() {
	local var=$1 addr=$2 port=$3
	bg_start "$var" timeout 60 python3 -c '
import socket, sys, time
addr, port = sys.argv[1], int(sys.argv[2])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((addr, port))
s.listen(0)
held = []
for i in range(3):
    c = socket.socket()
    c.setblocking(False)
    try:
        c.connect((addr, port))
    except BlockingIOError:
        pass
    held.append(c)
time.sleep(0.2)
print(port, flush=True)
time.sleep(55)
' "$addr" "$port"
	# Up to 15 s for it to say it is ready; at once if it died (port taken).
	local i pid=${!var}
	for ((i = 0; i < 750; i++)); do
		[[ -s "$BATS_TEST_TMPDIR/$var.out" ]] && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.02
	done
	cat "$BATS_TEST_TMPDIR/$var.err" >&2
	return 1
}

@test "loop: a host whose first address swallows connects is reached through its second within --connect-timeout" {
	unshare -m --propagation private true 2>/dev/null || skip "needs unshare -m"
	local order first second t0
	mapfile -t order < <(with_multi_hosts getent ahosts rlockmulti | awk '$2 == "STREAM" { print $1 }')
	assert_equal "${#order[@]}" 2
	first=${order[0]} second=${order[1]}
	# The resolver may sort the two; the silent one goes where it puts first.
	# Its port may be some other socket's on the first address (a busy
	# machine's outgoing connections): then both move to another port.
	local try
	for ((try = 0; try < 5; try++)); do
		start_redis_as M --bind "$second"
		drop_syns_at D "$first" "$M_PORT" 2>/dev/null && break
		stop_redis M
	done
	((try < 5)) || fail "no port free on both $first and $second"
	run timeout 3 bash -c "exec 3<>/dev/tcp/$first/$M_PORT"
	assert_equal "$status" 124
	t0=$(now_ms)
	run --separate-stderr with_multi_hosts "$RLOCK" -u "redis://rlockmulti:$M_PORT" \
		--connect-timeout 3s acquire -t 30s job
	assert_success
	assert_elapsed_below "$t0" 2500
	assert_equal "$(redis-cli -s "$M_SOCK" EXISTS 'rlock:{job}')" 1
}

@test "loop: a connect that never completes costs one --connect-timeout, and nothing is given back to a server never reached" {
	local t0
	start_redis_as M
	drop_syns_at D 127.0.0.2 "$M_PORT" 2>/dev/null || skip "port $M_PORT taken on 127.0.0.2"
	t0=$(now_ms)
	run --separate-stderr rlock -u "redis://127.0.0.2:$M_PORT" --connect-timeout 2s acquire job
	assert_equal "$status" 69
	assert_one_error_line
	assert_stderr_has "127.0.0.2:$M_PORT" "timed out after 2s"
	# A give-back would connect again: a second 2 s.
	assert_elapsed_below "$t0" 3500
}

@test "loop: SIGINT during a connect that never completes ends rlock at once" {
	start_redis_as M
	drop_syns_at D 127.0.0.2 "$M_PORT" 2>/dev/null || skip "port $M_PORT taken on 127.0.0.2"
	bg_start R "$RLOCK" -u "redis://127.0.0.2:$M_PORT" --connect-timeout 20s acquire job
	# Wait until its connect is under way (a SYN_SENT socket of its own).
	local i
	for ((i = 0; i < 500; i++)); do
		ls -l "/proc/$R/fd" 2>/dev/null | grep -q socket && break
		sleep 0.02
	done
	local t0
	t0=$(now_ms)
	kill -INT "$R"
	bg_wait "$R" 10000 || fail "rlock still runs 10 s after SIGINT"
	assert_equal "$BG_STATUS" 130
	assert_elapsed_below "$t0" 5000
}
