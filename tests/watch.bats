#!/usr/bin/env bats
# watch.bats: rlock watch follows the locks' history streams with a
# blocking read and prints each event as it comes; it ends cleanly on
# SIGINT, SIGTERM and a closed pipe.

load helpers
setup() { own_server_setup; }
teardown() { test_teardown; }

# wait_lines FILE N [MS]: until FILE has N lines (bounded, default 10 s).
wait_lines() {
	local i
	for ((i = 0; i < ${3:-10000} / 10; i++)); do
		(( $(wc -l <"$1") >= $2 )) && return 0
		sleep 0.01
	done
	echo "$1 has $(wc -l <"$1") lines, not $2:" >&2
	cat "$1" >&2
	return 1
}

# start_watch ARGS...: rlock ARGS in the background (WATCH.out, WATCH.err),
# returning once its first XREAD is blocked on the server.
start_watch() {
	bg_start WATCH "$RLOCK" "$@"
	local i
	for ((i = 0; i < 500; i++)); do
		rcli CLIENT LIST | grep -q 'cmd=xread' && return 0
		sleep 0.01
	done
	fail "watch never blocked in XREAD"
}

@test "watch: an acquire made elsewhere shows within a second, then its release" {
	rlock exec job -- true	# old events are not shown again
	start_watch watch job
	local t0 dt
	rlock acquire -t 30s job >token
	t0=$(now_ms)
	wait_lines WATCH.out 1 5000
	dt=$(($(now_ms) - t0))
	# A blocking read, not a poll: this is milliseconds on a quiet machine.
	assert_between "$dt" 0 1000 ms_until_watch_printed_the_acquire
	rlock release --token "$(cat token)" job
	wait_lines WATCH.out 2
	run cat WATCH.out
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp " job acquired by [^ ]+@[^ ]+ pid [0-9]+, fence [0-9]+$"
	assert_line --index 1 --regexp " job released by .*: by rlock release, fence "
	kill -INT "$WATCH"
	bg_wait "$WATCH" 5000 || fail "watch is still running after SIGINT"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat WATCH.err)" ""
}

@test "watch: an expiry shows before the next acquire, though the stream has no entry for it" {
	local i
	# Taken before watch starts: its first read judges the next acquire.
	rlock acquire -t 300ms job >/dev/null
	start_watch watch job
	for i in 1 2; do
		local j
		for ((j = 0; j < 500; j++)); do
			[[ "$(rcli EXISTS 'rlock:{job}')" == 0 ]] && break
			sleep 0.01
		done
		rlock acquire -t 300ms job >/dev/null
	done
	wait_lines WATCH.out 4
	run cat WATCH.out
	assert_equal "${#lines[@]}" 4
	assert_line --index 0 --regexp " job expired: [^ ]+@[^ ]+ pid [0-9]+ was never released, fence [0-9]+$"
	assert_line --index 1 --regexp " job acquired by "
	# The hold it saw taken, live, expired too.
	assert_line --index 2 --regexp " job expired: .* was never released, fence "
	assert_line --index 3 --regexp " job acquired by "
	run rcli XRANGE 'rlock:{job}:log' - +
	refute_output --partial expired
	kill -TERM "$WATCH"
	bg_wait "$WATCH" 5000 || fail "watch is still running after SIGTERM"
	assert_equal "$(cat WATCH.err)" ""
}

@test "watch: SIGTERM and SIGINT end it at once with status 0 and nothing on stderr" {
	local sig
	for sig in TERM INT; do
		start_watch watch job
		kill -"$sig" "$WATCH"
		local t0
		t0=$(now_ms)
		bg_wait "$WATCH" 5000 || fail "watch is still running after SIG$sig"
		assert_equal "$BG_STATUS" 0
		assert_between $(($(now_ms) - t0)) 0 3000 ms_to_end_on_SIG$sig
		assert_equal "$(cat WATCH.err)" ""
	done
}

@test "watch: a closed pipe ends it (rlock watch | head -1)" {
	bash -c '"$0" watch job | head -n 1 >first.out; echo done >pipeline.done' "$RLOCK" &
	local p=$! i
	for ((i = 0; i < 500; i++)); do
		rcli CLIENT LIST | grep -q 'cmd=xread' && break
		sleep 0.01
	done
	rlock exec job -- true
	for ((i = 0; i < 1000; i++)); do
		[[ -e pipeline.done ]] && break
		sleep 0.01
	done
	[[ -e pipeline.done ]] || { kill "$p"; fail "watch kept running after head exited"; }
	run cat first.out
	assert_output --regexp " job acquired by "
	wait "$p"
}

@test "watch: --json prints one object a line, as log does" {
	start_watch --json watch job
	rlock exec job -- sh -c 'exit 4' || true
	wait_lines WATCH.out 2
	run /usr/bin/python3 -c '
import json
d = [json.loads(l) for l in open("WATCH.out")]
assert [e["event"] for e in d] == ["acquired", "released"], d
assert d[1]["exit_status"] == 4 and d[1]["name"] == "job" and d[0]["fence"] == d[1]["fence"], d
print("ok")'
	assert_output ok
	kill -TERM "$WATCH"
}

@test "watch: with no NAME it follows every lock, one that appears later too" {
	rlock exec old -- true
	start_watch watch
	rlock exec old -- true
	wait_lines WATCH.out 2
	# A lock with no history yet: found by the next scan (every 2 s).
	rlock exec new -- true
	wait_lines WATCH.out 4 10000
	run cat WATCH.out
	assert_line --index 0 --regexp " old acquired "
	assert_line --index 2 --regexp " new acquired "
	assert_line --index 3 --regexp " new released "
	kill -TERM "$WATCH"
}

@test "watch: in quorum mode it follows one server, and the next when that one stops" {
	start_quorum 3
	bg_start WATCH "$RLOCK" $(for u in $QUORUM_URLS; do echo -u "$u"; done) watch job
	local i
	for ((i = 0; i < 500; i++)); do
		rcli_as Q1 CLIENT LIST | grep -q 'cmd=xread' && break
		sleep 0.01
	done
	rlockq exec job -- true
	wait_lines WATCH.out 2
	stop_redis Q1
	rlockq exec job -- true
	wait_lines WATCH.out 4 15000
	run cat WATCH.out
	assert_equal "${#lines[@]}" 4
	assert_line --index 3 --regexp " job released by "
	kill -TERM "$WATCH"
}

@test "watch: a bad name is a usage error, and nothing is left running" {
	run --separate-stderr rlock watch 'a{b'
	assert_equal "$status" 64
	run --separate-stderr rlock watch --since 1s job
	assert_equal "$status" 64
}
