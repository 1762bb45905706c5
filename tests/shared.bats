#!/usr/bin/env bats
# shared.bats: --shared makes a reader/writer lock: any number of shared
# holders, or one exclusive holder, never both; a waiting exclusive holder
# stops new shared ones; a crashed reader frees its place after its TTL;
# it works in quorum mode too.  Overlaps are read from logs of monotonic
# section starts and ends, not from sleeps.

load helpers
setup() { own_server_setup; }
teardown() { test_teardown; }

# The section a worker runs: "NS KIND+" then "NS KIND-" in sections.log.
SECTION='echo "$(date +%s%N) $K+" >>sections.log; sleep $S; echo "$(date +%s%N) $K-" >>sections.log'

# sweep: from sections.log, "SECTIONS MOST_READERS WRITER_OVERLAPS": how
# many sections ran, the most readers inside at once, and how often a
# writer was inside together with anyone else.
sweep() {
	/usr/bin/python3 -c '
ev = sorted((int(t), k[1], k[0]) for t, k in (l.split() for l in open("sections.log")))
r = w = most = bad = 0
for _, d, kind in sorted(ev, key=lambda e: (e[0], e[1] == "+")):
    if d == "+":
        if kind == "R": r += 1
        else: w += 1
        bad += w > 1 or (w == 1 and r > 0)
        most = max(most, r)
    else:
        if kind == "R": r -= 1
        else: w -= 1
print(len(ev) // 2, most, bad)'
}

@test "shared: readers overlap, and a writer never overlaps anyone" {
	local w k
	for ((w = 1; w <= 6; w++)); do
		bg_start "R$w" env K=R S=0.2 SECTION="$SECTION" bash -c '
			for ((k = 0; k < 5; k++)); do
				"$0" exec --shared -w 60s rw -- sh -c "$SECTION" || exit 1
			done' "$RLOCK"
	done
	for ((w = 1; w <= 2; w++)); do
		bg_start "W$w" env K=W S=0.1 SECTION="$SECTION" bash -c '
			for ((k = 0; k < 5; k++)); do
				"$0" exec -w 60s rw -- sh -c "$SECTION" || exit 1
			done' "$RLOCK"
	done
	for k in R1 R2 R3 R4 R5 R6 W1 W2; do
		bg_wait "${!k}" 120000 || fail "worker $k is still running"
		assert_equal "$BG_STATUS" 0
	done
	run sweep
	read -r sections most bad <<<"$output"
	assert_equal "$sections" 40
	assert_equal "$bad" 0
	(( most >= 2 )) || fail "readers never overlapped (at most $most at once)"
	assert_equal "$(rcli EXISTS 'rlock:{rw}')" 0
}

@test "shared: a writer behind a stream of readers gets in while they keep coming" {
	local w k t0 waited
	# Four readers whose sections overlap: without writer preference the
	# lock is never free until they stop (their loops are bounded).
	for ((w = 1; w <= 4; w++)); do
		bg_start "R$w" env K=R S=0.3 SECTION="$SECTION" bash -c '
			for ((k = 0; k < 60; k++)); do
				[[ -e stop ]] && exit 0
				"$0" exec --shared -w 60s rw -- sh -c "$SECTION" || exit 1
			done' "$RLOCK"
	done
	for ((k = 0; k < 500; k++)); do
		[[ "$(rlock status rw | head -1)" == "rw: shared by "[234] ]] && break
		sleep 0.02
	done
	t0=$(now_ms)
	run rlock exec -w 60s rw -- sh -c 'K=W S=0.05; '"$SECTION"
	assert_success
	waited=$(($(now_ms) - t0))
	touch stop
	for k in R1 R2 R3 R4; do
		bg_wait "${!k}" 120000 || fail "reader $k is still running"
		assert_equal "$BG_STATUS" 0
	done
	run sweep
	read -r sections most bad <<<"$output"
	assert_equal "$bad" 0
	# The readers were still coming: 4 x 60 sections is their cap.
	(( sections < 241 )) || fail "the writer only got in once the readers stopped"
	# The documented bound: the readers inside when it came finish.
	assert_between "$waited" 0 10000 ms_the_writer_waited
}

@test "shared: a waiting writer keeps new readers out; the last reader out wakes it at once" {
	local r1 r2 t0
	r1=$(rlock acquire --shared -t 30s rw)
	r2=$(rlock acquire -s -t 30s rw)
	bg_start W "$RLOCK" acquire -w 30s -t 30s rw
	until_waiting 1 rlock status rw
	run rlock status rw
	assert_line --index 0 "rw: shared by 2"
	assert_line --regexp '^  waiting: '
	# A new reader may not enter now, though only readers hold it.
	run rlock acquire --shared -n rw
	assert_failure 1
	rlock release --token "$r1" rw
	run rlock status rw
	assert_line --index 0 "rw: shared by 1"
	t0=$(now_ms)
	rlock release --token "$r2" rw
	bg_wait "$W" 10000 || fail "the writer is still waiting"
	assert_equal "$BG_STATUS" 0
	# Woken by name, not by its PTTL (30 s).
	assert_between $(($(now_ms) - t0)) 0 5000 ms_until_the_writer_had_it
	run rlock status rw
	assert_line --index 0 --regexp '^rw: held by '
	run rlock acquire --shared -n rw
	assert_failure 1
}

@test "shared: a free name that a writer waits for is the writer's turn: a new reader is told to wait (the acquire's fast path asks who waits)" {
	rlock acquire -t 30s rw >/dev/null
	bg_start W "$RLOCK" acquire -w 30s -t 30s rw
	until_waiting 1 rlock status rw
	# The writer, listed, stopped before its next attempt (its entry
	# lasts 5 s from its last attempt); the holder's key goes, as its
	# expiry would take it.
	kill -STOP "$W"
	rcli DEL 'rlock:{rw}' >/dev/null
	run rlock acquire --shared -n rw
	kill -CONT "$W"
	assert_failure 1
	bg_wait "$W" 10000 || fail "the writer is still waiting"
	assert_equal "$BG_STATUS" 0
}

@test "shared: readers waiting behind a writer all come in when it leaves" {
	local t w k
	t=$(rlock acquire -t 30s rw)
	for ((w = 1; w <= 5; w++)); do
		bg_start "R$w" "$RLOCK" exec --shared -w 30s rw -- sh -c 'echo in >>in.log; sleep 2'
	done
	until_waiting 5 rlock status rw
	rlock release --token "$t" rw
	# The writer's release lets them all in at once (phase-fair); each
	# holds 2 s, so that a status as slow as a busy machine makes it still
	# finds the five together.
	for ((k = 0; k < 500; k++)); do
		[[ "$(rlock status rw | head -1)" == "rw: shared by 5" ]] && break
		sleep 0.01
	done
	assert_equal "$(rlock status rw | head -1)" "rw: shared by 5"
	for ((w = 1; w <= 5; w++)); do
		k="R$w"
		bg_wait "${!k}" 20000 || fail "reader $w is still running"
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(rcli EXISTS 'rlock:{rw}')" 0
}

@test "shared: each reader has its own token and fence; release and extend are per token; status and JSON list them" {
	local a b
	a=$(rlock acquire --shared -t 20s rw)
	b=$(rlock acquire --shared -t 20s rw)
	[[ "$a" != "$b" ]] || fail "the same token twice"
	run rlock status rw
	assert_success
	assert_line --index 0 "rw: shared by 2"
	assert_equal "${#lines[@]}" 3
	rlock --json status rw | json_check 'd["held"] and d["shared"] is True and len(d["holders"]) == 2 and "limit" not in d and d["holders"][0]["fence"] != d["holders"][1]["fence"]'
	run rlock extend --token "$a" -t 40s rw
	assert_success
	run rlock --json status rw
	json_check 'max(h["expires_in_ms"] for h in d["holders"]) > 30000' <<<"$output"
	run rlock release --token not-a-holder rw
	assert_failure 1
	run rlock release --token "$a" rw
	assert_success
	run rlock release --token "$a" rw
	assert_failure 1
	run rlock status rw
	assert_line --index 0 "rw: shared by 1"
	run rlock status
	assert_line --regexp '^rw: shared by 1$'
	rlock release --token "$b" rw
	run rlock status rw
	assert_failure 1
	assert_output --regexp '^rw: free'
	# Only the counter and the history stay: with nobody waiting, no
	# release pushed a wake.
	assert_equal "$(rcli KEYS 'rlock:{rw}*' | grep -v ':fence$' | grep -v ':log$')" ""
}

@test "shared: a lone reader asking for an exclusive hold with its token upgrades; another reader blocks that" {
	local a b
	a=$(rlock acquire --shared -t 20s rw)
	b=$(rlock acquire --shared -t 20s rw)
	run rlock acquire --token "$a" -n rw
	assert_failure 1
	rlock release --token "$b" rw
	run rlock acquire --token "$a" -n rw
	assert_success
	run rlock status rw
	assert_line --index 0 --regexp '^rw: held by '
	run rlock acquire --shared -n rw
	assert_failure 1
	rlock release --token "$a" rw
	assert_equal "$(rcli EXISTS 'rlock:{rw}')" 0
}

# Issue 48, break 2: two readers that both upgrade would each wait for the
# other to stop reading, and everyone else with them, for ever.  While one
# upgrade waits, a second is refused at once, as fcntl(2) answers EDEADLK:
# status 35, one line saying why and what to do; the refused reader still
# reads, and once it leaves, the first upgrade gets in.
@test "shared: a second reader's upgrade while one waits is refused at once with 35; it still reads; the first gets in when it leaves (break 2)" {
	local a b
	a=$(rlock acquire --shared -t 30s rw)
	b=$(rlock acquire --shared -t 30s rw)
	bg_start A "$RLOCK" acquire --token "$a" -w 10s -t 30s rw
	until_listed rw 1
	run --separate-stderr rlock acquire --token "$b" -w 10s -t 30s rw
	assert_equal "$status" 35
	assert_equal "${#stderr_lines[@]}" 1
	[[ "$stderr" == *"cannot upgrade rw: another reader"*"already waiting to upgrade"*"release this shared hold"* ]] ||
		fail "stderr: $stderr"
	# Nothing changed but the refused ask: both still read, the first
	# upgrade still waits, and keeps new readers out.
	run rlock status rw
	assert_line --index 0 "rw: shared by 2"
	assert_equal "$(rcli HLEN 'rlock:{rw}:waiters')" 1
	run rlock acquire --shared -n rw
	assert_failure 1
	rlock release --token "$b" rw
	bg_wait "$A" 10000 || fail "the first upgrade is still waiting"
	assert_equal "$BG_STATUS" 0
	run rlock status rw
	assert_line --index 0 --regexp '^rw: held by '
	assert_equal "$(rcli EXISTS 'rlock:{rw}:waiters')" 0
	assert_equal "$(lock_tokens 'rlock:{rw}')" "$a"
	assert_equal "$(info_field 'rlock:{rw}' kind)" x
	rlock release --token "$a" rw
}

# A pending upgrade is woken when the last other reader leaves, not at its
# next look: its attempt after the first goes out behind a BLPOP of at
# least 2 s (WAITER_RENEW_MS, the lock's 30 s being longer), so an upgrade
# taken less than 2 s after its first attempt (both by the server's clock)
# was woken.  (Judged only when the release came in that time.)
@test "shared: a pending upgrade is woken when the last other reader leaves" {
	local a b first rel took
	a=$(rlock acquire --shared -t 30s rw)
	b=$(rlock acquire --shared -t 30s rw)
	bg_start A "$RLOCK" acquire --token "$a" -w 10s -t 30s rw
	until_listed rw 1
	[[ "$(rcli HGET 'rlock:{rw}:waiters' "$a")" =~ \"s\":([0-9]+) ]] ||
		fail "no first attempt in the upgrade's entry"
	first=${BASH_REMATCH[1]}
	rlock release --token "$b" rw
	rel=$(rcli EVAL "local t = redis.call('TIME') return t[1] * 1000 + math.floor(t[2] / 1000)" 0)
	bg_wait "$A" 10000 || fail "the upgrade is still waiting"
	assert_equal "$BG_STATUS" 0
	took=$(info_field 'rlock:{rw}' acquired_ms)
	if ((rel < first + 2000)); then
		((took < first + 2000)) || fail "the upgrade came $((took - first)) ms after its first attempt: at its next look, not woken by the release"
	fi
	rlock release --token "$a" rw
}

@test "shared: a SIGKILLed reader frees its place after its TTL; a writer gets in" {
	bg_start H "$RLOCK" exec --shared -t 1s rw -- sleep 30
	local i t0
	for ((i = 0; i < 500; i++)); do
		[[ "$(rlock status rw | head -1)" == "rw: shared by 1" ]] && break
		sleep 0.02
	done
	kill -KILL "$H"
	bg_wait "$H" 5000
	t0=$(now_ms)
	run rlock acquire -w 10s rw
	assert_success
	assert_between $(($(now_ms) - t0)) 0 5000 ms_until_the_reader_lapsed
	# The writer's record alone: the lapsed reader's has gone.
	assert_equal "$(lock_tokens 'rlock:{rw}')" "$output"
	assert_equal "$(info_field 'rlock:{rw}' kind)" x
}

@test "shared: exec --shared runs the command, releases, and keeps the command's status" {
	run rlock exec --shared rw -- sh -c '"$0" status rw | head -1; exit 3' "$RLOCK"
	assert_equal "$status" 3
	assert_output "rw: shared by 1"
	assert_equal "$(rcli EXISTS 'rlock:{rw}')" 0
}

@test "shared: --shared with --limit or --fifo, and a semaphore asked --shared, are refused with 64; a token 'shared' is a token" {
	run --separate-stderr rlock acquire --shared --limit 2 rw
	assert_equal "$status" 64
	[[ "$stderr" == *"--shared and --limit do not go together"* ]] || fail "stderr: $stderr"
	run --separate-stderr rlock exec --shared --fifo rw -- true
	assert_equal "$status" 64
	rlock acquire --limit 2 -t 20s sem >/dev/null
	run --separate-stderr rlock acquire --shared -n sem
	assert_equal "$status" 64
	[[ "$stderr" == *"sem is held with --limit 2, and this asks with --shared"* ]] || fail "stderr: $stderr"
	rlock acquire --shared -t 20s rw >/dev/null
	run --separate-stderr rlock acquire --limit 2 -n rw
	assert_equal "$status" 64
	[[ "$stderr" == *"rw is held with --shared"* ]] || fail "stderr: $stderr"
	# No token looks like anything but a holder's: one record for every
	# mode (rlock-protocol(7)).
	run --separate-stderr rlock release --token shared rw
	assert_equal "$status" 1
	run rlock status rw
	assert_line --index 0 "rw: shared by 1"
	run rlock acquire --token limit:2 -t 20s other
	assert_success
	assert_output limit:2
	rlock release --token limit:2 other
}

@test "shared: in quorum mode readers share, a writer waits for them, and status counts servers" {
	start_quorum 3
	local a b
	a=$(rlockq acquire --shared -t 20s rw)
	b=$(rlockq acquire --shared -t 20s rw)
	run rlockq status rw
	assert_success
	assert_line --index 0 "rw: shared by 2 (on 3 of 3 servers)"
	run rlockq acquire -n rw
	assert_failure 1
	bg_start W "$RLOCK" $(for u in $QUORUM_URLS; do echo -u "$u"; done) acquire -w 20s rw
	until_waiting 1 rlockq status rw
	# The waiting writer keeps new readers out on every server.
	run rlockq acquire --shared -n rw
	assert_failure 1
	rlockq release --token "$a" rw
	rlockq release --token "$b" rw
	bg_wait "$W" 15000 || fail "the writer is still waiting"
	assert_equal "$BG_STATUS" 0
	# On a majority at least: a server where the last release came after
	# the writer's attempt stays free (it was busy there then).
	run rlockq status rw
	assert_line --index 0 --regexp '^rw: held by .* \(on [23] of 3 servers\)$'
}

@test "shared: in quorum mode a second reader's upgrade is refused with 35 and leaves no entry on any server" {
	start_quorum 3
	local a b i s
	a=$(rlockq acquire --shared -t 20s rw)
	b=$(rlockq acquire --shared -t 20s rw)
	bg_start A "$RLOCK" $(for u in $QUORUM_URLS; do echo -u "$u"; done) acquire --token "$a" -w 20s -t 20s rw
	# Listed on every server (status shows a quorum's waiters by server).
	for s in Q1 Q2 Q3; do
		for ((i = 0; i < 500; i++)); do
			[[ "$(rcli_as "$s" HLEN 'rlock:{rw}:waiters')" == 1 ]] && break
			sleep 0.02
		done
	done
	run --separate-stderr rlockq acquire --token "$b" -w 10s rw
	assert_equal "$status" 35
	[[ "$stderr" == *"cannot upgrade rw"* ]] || fail "stderr: $stderr"
	# Only the first upgrade is listed, on every server.
	for s in Q1 Q2 Q3; do
		assert_equal "$(rcli_as "$s" HLEN 'rlock:{rw}:waiters')" 1
	done
	rlockq release --token "$b" rw
	bg_wait "$A" 15000 || fail "the first upgrade is still waiting"
	assert_equal "$BG_STATUS" 0
	run rlockq status rw
	assert_line --index 0 --regexp '^rw: held by .* \(on 3 of 3 servers\)$'
}

@test "shared: in quorum mode a reader holds on a majority with one server down" {
	start_quorum 3
	stop_redis Q3
	local a
	a=$(rlockq acquire --shared -t 20s rw)
	run rlockq status rw
	assert_line --index 0 "rw: shared by 1 (on 2 of 3 servers)"
	run rlockq acquire -n rw
	assert_failure 1
	run rlockq release --token "$a" rw
	assert_success
	run rlockq acquire -n rw
	assert_success
}
