#!/usr/bin/env bats
# handover.bats: a release gives the lock to the next waiter in its own
# script (phase-fair: every waiting reader after a writer, the oldest
# waiting writer after the last reader, else the oldest waiter), so that neither side of a --shared lock starves and a releaser
# cannot barge back in; a hand-over to a waiter that died meanwhile lasts
# no longer than the waiter's lease.

load helpers
setup() { own_server_setup; }
teardown() { test_teardown; }

# until_waiters NAME N: poll (up to 20 s) until status lists N waiters.
until_waiters() {
	local i n
	for ((i = 0; i < 1000; i++)); do
		n=$(rlock --json status "$1" | json_eval 'len(d.get("waiters", []))')
		[[ "$n" == "$2" ]] && return 0
		sleep 0.02
	done
	fail "status lists $n waiters of $1, not $2"
}

@test "handover: the release's own script gives the lock to the waiter, with its wait in the history" {
	local holder
	holder=$(rlock acquire -t 60s job)
	bg_start W "$RLOCK" acquire -w 30s -t 30s job
	until_waiters job 1
	rlock release --token "$holder" job
	bg_wait "$W" 10000 || fail "the waiter did not get the lock"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$(cat W.out)"
	# Extended to its own TTL by its attempt, not left at the lease.
	local pttl
	pttl=$(rcli PTTL 'rlock:{job}')
	assert_between "$pttl" 20000 30000 pttl_after_the_handover
	run rlock log job
	[[ "${lines[0]}" == *" acquired by "*", waited "* ]] || fail "$output"
}

@test "handover: the oldest waiter gets the lock, though a younger one blocked last" {
	local holder
	holder=$(rlock acquire -t 60s job)
	bg_start OLD "$RLOCK" acquire -w 30s -t 30s job
	until_waiters job 1
	bg_start YOUNG "$RLOCK" acquire -w 30s -t 30s job
	until_waiters job 2
	rlock release --token "$holder" job
	bg_wait "$OLD" 10000 || fail "the oldest waiter did not get the lock"
	assert_equal "$BG_STATUS" 0
	_proc_alive "$YOUNG" || fail "the younger waiter ended: $(cat YOUNG.err)"
}

@test "handover: phase-fair: a writer's release lets in the readers that wait, though a writer came first; the last reader's release lets in that writer" {
	local holder r1 r2
	holder=$(rlock acquire -t 60s mix)
	bg_start W "$RLOCK" acquire -w 30s -t 30s mix
	until_waiters mix 1
	bg_start R1 "$RLOCK" acquire --shared -w 30s -t 30s mix
	until_waiters mix 2
	bg_start R2 "$RLOCK" acquire --shared -w 30s -t 30s mix
	until_waiters mix 3
	rlock release --token "$holder" mix
	bg_wait "$R1" 10000 || fail "a reader did not get the lock after the writer"
	assert_equal "$BG_STATUS" 0
	bg_wait "$R2" 10000 || fail "a reader did not get the lock after the writer"
	assert_equal "$BG_STATUS" 0
	_proc_alive "$W" || fail "the writer ended: $(cat W.err)"
	r1=$(cat R1.out) r2=$(cat R2.out)
	rlock release --token "$r1" mix
	_proc_alive "$W" || fail "the writer ended before the last reader left"
	rlock release --token "$r2" mix
	bg_wait "$W" 10000 || fail "the writer did not get the lock after the readers"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(rcli HKEYS 'rlock:{mix}')" "$(cat W.out)"
}

@test "handover: a lock handed to a waiter that died meanwhile lapses within its lease" {
	local holder t0
	holder=$(rlock acquire -t 60s job)
	bg_start DEAD "$RLOCK" acquire -w 2m -t 60s job
	until_waiters job 1
	bg_start NEXT "$RLOCK" exec -w 2m -t 30s job -- true
	until_waiters job 2
	# Killed: its entry is still listed when the release comes.
	kill -KILL "$DEAD"
	bg_wait "$DEAD" 5000
	rlock release --token "$holder" job
	t0=$(now_ms)
	bg_wait "$NEXT" 30000 || fail "the next waiter is stuck behind the dead one"
	assert_equal "$BG_STATUS" 0
	# The lease: 2 s + --timeout + 1 s, doubled for a loaded machine.
	assert_between $(($(now_ms) - t0)) 0 10000 ms_until_the_next_ran
}

@test "handover: a waiter that gives up (its release) leaves no entry and the holder's lock alone" {
	local holder
	holder=$(rlock acquire -t 60s job)
	bg_start W "$RLOCK" acquire -w 2s job
	until_waiters job 1
	bg_wait "$W" 10000
	assert_equal "$BG_STATUS" 1
	assert_equal "$(rcli HLEN 'rlock:{job}:waiters')" 0
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$holder"
}

# fair_loop KIND ID SECONDS: run exec sections of 0.1 s on "fair" until
# SECONDS have passed (at most 400), appending "KIND ID START END" (ms)
# to fair.log.
fair_loop() {
	local kind=$1 id=$2 secs=$3 end i opt=
	[[ $kind == r ]] && opt=--shared
	end=$(($(now_ms) + secs * 1000))
	for ((i = 0; i < 400 && $(now_ms) < end; i++)); do
		# shellcheck disable=SC2016
		"$RLOCK" exec $opt -w 30s fair -- sh -c \
			's=$(date +%s%3N); sleep 0.1; echo "$0 $1 $s $(date +%s%3N)" >>fair.log' \
			"$kind" "$id" || return 1
	done
}

@test "handover: --shared is phase-fair: 4 readers and 4 writers each get 3 sections or more in 10 s, held about as long by each side" {
	local pids=() i p
	: >fair.log
	for i in 1 2 3 4; do
		fair_loop r "$i" 10 &
		pids+=("$!")
		fair_loop w "$i" 10 &
		pids+=("$!")
	done
	for p in "${pids[@]}"; do
		echo "$p" >>"$BATS_TEST_TMPDIR/.bg-pids"
	done
	for p in "${pids[@]}"; do
		bg_wait "$p" 60000 || fail "a worker did not end"
		assert_equal "$BG_STATUS" 0
	done
	run /usr/bin/python3 - fair.log <<'EOF'
import sys
secs = {}
spans = {"r": [], "w": []}
for line in open(sys.argv[1]):
    kind, wid, s, e = line.split()
    secs[(kind, wid)] = secs.get((kind, wid), 0) + 1
    spans[kind].append((int(s), int(e)))
# A writer never overlaps anyone.
for s, e in spans["w"]:
    for k in ("r", "w"):
        for s2, e2 in spans[k]:
            if (s2, e2) != (s, e) and s2 < e and s < e2:
                print("overlap: w", s, e, k, s2, e2)
                sys.exit(1)
def held(iv):
    total, end = 0, None
    for s, e in sorted(iv):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total
r, w = held(spans["r"]), held(spans["w"])
print("sections:", " ".join("%s%s=%d" % (k, i, n) for (k, i), n in sorted(secs.items())))
print("held: readers %d ms, writers %d ms" % (r, w))
low = min(secs.get((k, str(i)), 0) for k in "rw" for i in range(1, 5))
if low < 3:
    print("a worker got", low, "sections")
    sys.exit(1)
if max(r, w) > 2 * min(r, w):
    print("one side held it more than twice as long")
    sys.exit(1)
EOF
	echo "$output"
	assert_success
}

@test "handover: a semaphore's freed slot goes to the waiter, not to one who asks after the release" {
	local a
	a=$(rlock acquire --limit 2 -t 60s sem)
	rlock acquire --limit 2 -t 60s sem >/dev/null
	bg_start W "$RLOCK" acquire --limit 2 -w 30s -t 30s sem
	until_waiters sem 1
	rlock release --token "$a" sem
	run --separate-stderr rlock acquire --limit 2 -n sem
	assert_failure 1
	bg_wait "$W" 10000 || fail "the waiter did not get the slot"
	assert_equal "$BG_STATUS" 0
	run rlock status sem
	assert_line --index 0 "sem: 2 of 2 held"
	run rlock log sem
	[[ "${lines[0]}" == *" acquired by "*", waited "* ]] || fail "$output"
}

@test "handover: a fence key rlock did not write leaves the release whole: it exits 0 and the lock is free" {
	local holder
	holder=$(rlock acquire -t 60s job)
	bg_start W "$RLOCK" acquire -w 30s job
	until_waiters job 1
	rcli SET 'rlock:{job}:fence' not-a-number >/dev/null
	run --separate-stderr rlock release --token "$holder" job
	assert_success
	[[ "$(rcli HKEYS 'rlock:{job}')" != "$holder" ]]
	# The waiter, woken, finds the fence key broken too: it ends (69).
	kill -TERM "$W" 2>/dev/null || true
	bg_wait "$W" 10000 || fail "the waiter did not end"
}

# A hand-over's grant recreates the key the release deleted: it must set
# the key's expiry even when the grant ends at the very millisecond the
# released hold did (a waiter whose lease ends then; the key had that
# expiry before the release), or the key is left without one.
# hand_state X: lock job held by tokA until X (server ms) and waited for
# by tokB, listed until X, as rlock writes them.
hand_state() {
	local x=$1 now
	now=$(server_ms)
	rcli HSET 'rlock:{job}' tokA "{\"k\":\"x\",\"e\":$x,\"f\":\"100\",\"t\":$now,\"l\":30000,\"a\":\"runA\",\"h\":\"hA\",\"p\":\"1\",\"n\":\"u\",\"c\":\"c\"}" >/dev/null
	rcli PEXPIREAT 'rlock:{job}' "$x" >/dev/null
	list_waiter job tokB "$x"
}

@test "handover: a grant that ends at the released hold's very millisecond still gives the key an expiry" {
	local x
	x=$(($(server_ms) + 20000))
	hand_state "$x"
	run rlock release --token tokA job
	assert_success
	assert_equal "$(rcli HKEYS 'rlock:{job}')" tokB
	local pttl
	pttl=$(rcli PTTL 'rlock:{job}')
	assert_between "$pttl" 1 20000 pttl_of_the_granted_key
}
