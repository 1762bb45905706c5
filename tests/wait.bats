#!/usr/bin/env bats
# wait.bats: waiting for a busy lock: --wait bounds, wake-up on release and
# on expiry, no polling, and signals while waiting.

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { default_setup; }
teardown() { cleanup_test; }

# All command calls except those the test itself makes (config, info).
all_calls_but_ours() {
	rcli INFO commandstats | tr -d '\r' |
		grep -v -e '^cmdstat_config' -e '^cmdstat_info' |
		sed -n 's/^cmdstat_[^:]*:calls=\([0-9]*\),.*/\1/p' |
		awk '{ s += $1 } END { print s + 0 }'
}

@test "wait: -w 1s on a held lock exits 1 after about a second" {
	rlock acquire job >/dev/null
	local t0 t1
	t0=$(now_ms)
	run --separate-stderr timeout 20 "$RLOCK" acquire -w 1s job
	t1=$(now_ms)
	assert_equal "$status" 1
	assert_output ""
	assert_equal "$stderr" ""
	assert_between $((t1 - t0)) 800 3000 elapsed_ms
}

@test "wait: -w with -E exits with the -E value when time runs out" {
	rlock acquire job >/dev/null
	run --separate-stderr timeout 20 "$RLOCK" acquire -w 300ms -E 9 job
	assert_equal "$status" 9
}

@test "wait: a waiter gets a released lock soon after the release" {
	local holder t_rel t_done waiter_tok
	holder=$(rlock acquire -t 30s job)
	bg_start WAITER "$RLOCK" acquire -w 10s job
	sleep 0.5
	_proc_alive "$WAITER" || fail "the waiter did not wait: $(cat "$BATS_TEST_TMPDIR/WAITER.err")"
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$holder"
	t_rel=$(now_ms)
	rlock release --token "$holder" job
	bg_wait "$WAITER" 9000 || fail "the waiter is still waiting 9 s after the release"
	t_done=$(now_ms)
	assert_equal "$BG_STATUS" 0
	assert_between $((t_done - t_rel)) 0 2000 ms_after_release
	waiter_tok=$(cat "$BATS_TEST_TMPDIR/WAITER.out")
	[[ "$waiter_tok" =~ $UUID_RE ]] || fail "waiter printed '$waiter_tok'"
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$waiter_tok"
}

@test "wait: a waiter with no --wait waits until the lock is released" {
	local holder
	holder=$(rlock acquire -t 30s job)
	bg_start WAITER "$RLOCK" acquire job
	sleep 1.5
	_proc_alive "$WAITER" || fail "the waiter gave up: $(cat "$BATS_TEST_TMPDIR/WAITER.err")"
	rlock release --token "$holder" job
	bg_wait "$WAITER" 5000 || fail "the waiter did not get the released lock"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$(cat "$BATS_TEST_TMPDIR/WAITER.out")"
}

@test "wait: a waiter gets a lock released by --force" {
	rlock acquire -t 30s job >/dev/null
	bg_start WAITER "$RLOCK" acquire -w 10s job
	sleep 0.5
	local t_rel t_done
	t_rel=$(now_ms)
	rlock release --force job >/dev/null
	bg_wait "$WAITER" 9000 || fail "the waiter did not get the lock"
	t_done=$(now_ms)
	assert_equal "$BG_STATUS" 0
	assert_between $((t_done - t_rel)) 0 2000 ms_after_release
}

@test "wait: a waiter on an expiring lock gets it soon after expiry and not before" {
	local t0 holder t_done mid
	t0=$(now_ms)
	holder=$(rlock acquire -t 3s job)
	bg_start WAITER "$RLOCK" acquire -w 15s job
	# Once the waiter waits (well within the 3 s, however busy the
	# machine), the lock is still the holder's.
	until_waiting 1 rlock status job
	mid=$(rcli HKEYS 'rlock:{job}')
	assert_equal "$mid" "$holder"
	_proc_alive "$WAITER" || fail "the waiter finished before the lock expired"
	bg_wait "$WAITER" 14000 || fail "the waiter did not get the expired lock"
	t_done=$(now_ms)
	assert_equal "$BG_STATUS" 0
	assert_between $((t_done - t0)) 2900 5000 ms_since_holder_acquired
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$(cat "$BATS_TEST_TMPDIR/WAITER.out")"
}

@test "wait: a waiter on a lock held for 3 s makes only a handful of Redis calls" {
	rlock acquire -t 3s job >/dev/null
	rcli CONFIG RESETSTAT >/dev/null
	run --separate-stderr timeout 20 "$RLOCK" acquire -w 10s job
	assert_success
	local scripts all
	scripts=$(cmd_calls evalsha eval blpop)
	all=$(all_calls_but_ours)
	assert_between "$scripts" 1 10 "evalsha+eval+blpop calls"
	# The grant records it in the history: XREVRANGE, XADD, PEXPIRE more;
	# the waiter renews its lease (an attempt of some 10 calls) every
	# 2 s; and each attempt checks the types of the keys it may write
	# first (TYPE, 6 calls: all or nothing).
	assert_between "$all" 1 60 "all calls"
}

@test "wait: a waiter woken by release makes only a handful of Redis calls" {
	local holder
	holder=$(rlock acquire -t 30s job)
	rcli CONFIG RESETSTAT >/dev/null
	bg_start WAITER "$RLOCK" acquire -w 10s job
	sleep 2
	rlock release --token "$holder" job
	bg_wait "$WAITER" 9000 || fail "the waiter did not get the lock"
	assert_equal "$BG_STATUS" 0
	# The waiter's calls plus the one release (an acquire that wins makes
	# 7-8 calls inside its script, the fence's SET to the clock among them;
	# a busy one lists the waiter for status: HSET, PTTL and PEXPIRE of
	# the list, and the winning one takes it off: HDEL).  All inside the
	# same round trips: the waiter still makes two.  The history adds
	# XREVRANGE, XADD and PEXPIRE to the grant, and HMGET, TIME, XADD and
	# PEXPIRE to the release.)  And the waiter renews its lease, an
	# attempt of some 11 calls, every 2 s: once, maybe twice by then.
	# Each script also checks the types of the keys it may write before
	# it writes (TYPE, 6-7 calls a script: all or nothing).
	assert_between "$(all_calls_but_ours)" 1 90 "all calls"
}

@test "wait: SIGTERM to a waiting rlock ends it and leaves the holder's lock unchanged" {
	local holder fence pttl
	holder=$(rlock acquire -t 30s job)
	fence=$(rcli GET 'rlock:{job}:fence')
	bg_start WAITER "$RLOCK" acquire -w 20s job
	sleep 0.5
	_proc_alive "$WAITER" || fail "the waiter did not wait"
	kill -TERM "$WAITER"
	bg_wait "$WAITER" 3000 || fail "the waiter ignored SIGTERM"
	assert_equal "$BG_STATUS" 143
	assert_equal "$(cat "$BATS_TEST_TMPDIR/WAITER.out")" ""
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$holder"
	assert_equal "$(info_field 'rlock:{job}' token)" "$holder"
	assert_equal "$(rcli GET 'rlock:{job}:fence')" "$fence"
	pttl=$(rcli PTTL 'rlock:{job}')
	assert_between "$pttl" 20000 30000 PTTL
	# The waiter holds nothing: once released, the lock is free.
	rlock release --token "$holder" job
	run --separate-stderr rlock acquire -n job
	assert_success
}

@test "wait: SIGINT to a waiting rlock ends it and leaves the holder's lock unchanged" {
	local holder fence
	holder=$(rlock acquire -t 30s job)
	fence=$(rcli GET 'rlock:{job}:fence')
	bg_start WAITER "$RLOCK" acquire -w 20s job
	sleep 0.5
	_proc_alive "$WAITER" || fail "the waiter did not wait"
	kill -INT "$WAITER"
	bg_wait "$WAITER" 3000 || fail "the waiter ignored SIGINT"
	assert_equal "$BG_STATUS" 130
	assert_equal "$(cat "$BATS_TEST_TMPDIR/WAITER.out")" ""
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$holder"
	assert_equal "$(rcli GET 'rlock:{job}:fence')" "$fence"
	rlock release --token "$holder" job
	run --separate-stderr rlock acquire -n job
	assert_success
}

@test "wait: a signalled waiter ends with the signal's status and does not take the lock later" {
	local holder i
	holder=$(rlock acquire -t 30s job)
	# (Over the Unix socket, where the broken waiter's reconnection failed
	# at once, with EAGAIN.)
	bg_start WAITER "$RLOCK" -u "unix://$REDIS_SOCK" acquire -w 20s job
	for ((i = 0; i < 250; i++)); do
		rcli CLIENT LIST | grep -q 'cmd=blpop' && break
		sleep 0.02
	done
	kill -TERM "$WAITER"
	bg_wait "$WAITER" 3000 || fail "the waiter ignored SIGTERM"
	# As killed by it (143), not an error of its own: the attempt queued
	# behind the BLPOP, given up, is no server's failure (it was taken for
	# a busy server once, and the waiter went on to fail connecting).
	assert_equal "$BG_STATUS" 143
	refute_contains "cannot connect" "$(cat "$BATS_TEST_TMPDIR/WAITER.err")"
	rlock release --token "$holder" job
	sleep 0.5
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "wait: two waiters both get the lock, one after the other" {
	local holder t1 t2
	holder=$(rlock acquire -t 30s job)
	bg_start W1 "$RLOCK" acquire -w 15s -t 30s job
	bg_start W2 "$RLOCK" acquire -w 15s -t 30s job
	sleep 0.5
	rlock release --token "$holder" job
	# Exactly one of them gets it now; release it for the other.
	local i got=
	for ((i = 0; i < 250; i++)); do
		if ! _proc_alive "$W1"; then got=W1; break; fi
		if ! _proc_alive "$W2"; then got=W2; break; fi
		sleep 0.02
	done
	[[ -n "$got" ]] || fail "no waiter got the released lock within 5 s"
	local other=W2
	[[ "$got" == W2 ]] && other=W1
	bg_wait "${!got}" 2000
	assert_equal "$BG_STATUS" 0
	t1=$(cat "$BATS_TEST_TMPDIR/$got.out")
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t1"
	_proc_alive "${!other}" || fail "both waiters finished while the lock was held"
	rlock release --token "$t1" job
	bg_wait "${!other}" 5000 || fail "the second waiter did not get the lock"
	assert_equal "$BG_STATUS" 0
	t2=$(cat "$BATS_TEST_TMPDIR/$other.out")
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t2"
}
