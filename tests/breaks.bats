#!/usr/bin/env bats
# breaks.bats: the breaks of issue 37, each reproduced from outside with
# rlock's own commands (redis-cli only puts a contender's token on a server,
# lists keys and their TTLs, and deletes the fence counter as if expired;
# servers are frozen with SIGSTOP), and the right behaviour asserted: a
# failed attempt gives back only what it took (breaks 1 and 9), --fifo
# waiters starve nobody (3), a quorum writer keeps its place while one
# server is down (4), a shared or semaphore mark outlives no holder (5), a
# quorum lock is lost only when no majority can still hold it (7), and
# every key rlock writes expires, the fence counter too (item 7).  No test
# reads the keys whose names the fix changes (holders, readers, slots).

load helpers
setup() { own_server_setup; }
teardown() { thaw_all; test_teardown; }

# until_free NAME: poll (at most 500 times, 20 ms apart) until `status
# NAME` exits 1: nothing holds NAME.
until_free() {
	local i st
	for ((i = 0; i < 500; i++)); do
		st=0
		rlock status "$1" >/dev/null 2>&1 || st=$?
		((st == 1)) && return 0
		sleep 0.02
	done
	fail "$1 is still held: $(rlock status "$1" 2>&1)"
}

# until_lines FILE N [MAX_MS]: poll until FILE has at least N lines.
until_lines() {
	local f=$1 n=$2 max_ms=${3:-10000} i
	for ((i = 0; i < max_ms / 20; i++)); do
		[[ -f "$f" ]] && (($(wc -l <"$f") >= n)) && return 0
		sleep 0.02
	done
	fail "$f never had $n lines (it has $(wc -l <"$f" 2>/dev/null || echo 0))"
}

# loop_script NAME: write a bash script that runs its arguments as a
# command again and again, for at most 40 rounds or 14 s, until the file
# "stop" appears in the test's temp dir; print its path.
loop_script() {
	local path="$BATS_TEST_TMPDIR/$1"
	cat >"$path" <<-EOF
		#!/bin/bash
		end=\$((SECONDS + 14))
		for ((i = 0; i < 40 && SECONDS < end; i++)); do
			[[ -e '$BATS_TEST_TMPDIR/stop' ]] && break
			"\$@"
		done
	EOF
	chmod +x "$path"
	echo "$path"
}

# until_grep FILE REGEX: poll (at most 10 s) until a line of FILE matches.
until_grep() {
	local i
	for ((i = 0; i < 500; i++)); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.02
	done
	fail "no line of $1 matched $2 within 10 s"
}

# assert_no_overlap LOG: enter/exit lines (WHO enter|exit) show no section
# of an exclusive holder ('W...') beside any other section.
assert_no_overlap() {
	local out
	out=$(awk '
		$2 == "enter" { if (w || ($1 ~ /^W/ && n)) bad = bad " " NR; n++; if ($1 ~ /^W/) w = 1 }
		$2 == "exit" { n--; if ($1 ~ /^W/) w = 0 }
		END { print bad }' "$1")
	[[ -z "$out" ]] || fail "an exclusive section ran beside another (lines$out): $(tr '\n' ' ' <"$1")"
}

# ---------------------------------------------------------------------------
# Break 1: a failed upgrade
# ---------------------------------------------------------------------------

@test "break 1: a failed upgrade (acquire --token of a shared holder, -w 1s) keeps the caller's shared hold" {
	# issue 37, break 1: the give-back of a wait that ran out deleted every hold of the token.
	local t1 t2
	t1=$(rlock acquire --shared -t 60s job)
	t2=$(rlock acquire --shared -t 60s job)

	run --separate-stderr rlock acquire --token "$t1" -w 1s job
	assert_equal "$status" 1

	run --separate-stderr rlock --json status job
	assert_success
	json_check 'd["held"] and len(d["holders"]) == 2' <<<"$output"
	run --separate-stderr rlock extend --token "$t1" job
	[[ $status == 0 ]] || fail "T1's extend exited $status: $stderr"

	# T1 still holds once T2 has gone: no writer gets in.
	rlock release --token "$t2" job
	run --separate-stderr rlock acquire -n job
	assert_equal "$status" 1
	run --separate-stderr rlock release --token "$t1" job
	assert_success
}

@test "break 1: exec form: a reader's command whose upgrade fails never runs beside a waiting writer's command" {
	# issue 37, break 1 (exec form): the reader's command tries the upgrade with -w 500ms while a writer waits.
	local t2 reader
	t2=$(rlock acquire --shared -t 60s job)
	# $1: rlock, $2: the test's temp dir.  Enter, wait for "go", try the
	# upgrade, record its status, wait for "go2", exit.
	reader=$(make_script reader.sh '
echo "R enter" >>"$2/log"
i=0; while [ ! -e "$2/go" ] && [ $i -lt 750 ]; do sleep 0.02; i=$((i + 1)); done
"$1" acquire --token "$RLOCK_TOKEN" -w 500ms job >/dev/null 2>"$2/upgrade.err"
echo $? >"$2/upgrade"
i=0; while [ ! -e "$2/go2" ] && [ $i -lt 750 ]; do sleep 0.02; i=$((i + 1)); done
echo "R exit" >>"$2/log"')
	bg_start R "$RLOCK" exec --shared -t 60s job -- "$reader" "$RLOCK" "$BATS_TEST_TMPDIR"
	until_lines log 1
	bg_start W "$RLOCK" exec -t 60s -w 20s job -- \
		sh -c 'echo "W enter" >>log; sleep 0.3; echo "W exit" >>log'
	until_waiting 1 rlock status job

	touch go
	wait_file upgrade 10000 || fail "the reader's upgrade never ended"
	assert_equal "$(cat upgrade)" 1

	# The other reader leaves: the reader whose upgrade failed still holds,
	# and the writer still waits.
	rlock release --token "$t2" job
	run --separate-stderr rlock --json status job
	json_check 'd["held"] and len(d["holders"]) == 1 and len(d.get("waiters", [])) == 1' <<<"$output"

	touch go2
	bg_wait "$R" 20000 || fail "the reader's exec never ended"
	assert_equal "$BG_STATUS" 0
	bg_wait "$W" 20000 || fail "the writer's exec never ended"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(tr '\n' ' ' <log)" "R enter R exit W enter W exit "
}

# ---------------------------------------------------------------------------
# Break 3: --fifo writers starve readers and plain writers
# ---------------------------------------------------------------------------

@test "break 3: two --fifo writers looping on a name starve neither a reader (-w 8s) nor a plain writer (-w 4s)" {
	# issue 37, break 3: a release with a --fifo line handed the lock only to the line's head.
	local loop
	loop=$(loop_script fifo-loop.sh)
	bg_start F1 "$loop" "$RLOCK" exec --fifo -t 30s -w 5s job -- \
		sh -c 'echo "W1 enter" >>log; sleep 0.2; echo "W1 exit" >>log'
	bg_start F2 "$loop" "$RLOCK" exec --fifo -t 30s -w 5s job -- \
		sh -c 'echo "W2 enter" >>log; sleep 0.2; echo "W2 exit" >>log'
	# The two loops have taken turns a few times (about 1 s in).
	until_lines log 8

	bg_start RD "$RLOCK" exec --shared -t 30s -w 8s job -- \
		sh -c 'echo "R enter" >>log; echo "R exit" >>log'
	bg_start PW "$RLOCK" exec -t 30s -w 4s job -- \
		sh -c 'echo "WP enter" >>log; echo "WP exit" >>log'
	bg_wait "$RD" 15000 || fail "the reader's exec never ended"
	local rd=$BG_STATUS
	bg_wait "$PW" 15000 || fail "the plain writer's exec never ended"
	local pw=$BG_STATUS
	touch stop
	wait_all_gone 10000 "$F1" "$F2" || fail "the --fifo loops did not stop"
	assert_equal "reader $rd, plain writer $pw" "reader 0, plain writer 0"
	assert_no_overlap log
}

# ---------------------------------------------------------------------------
# Break 4: quorum with one server down, a writer behind readers
# ---------------------------------------------------------------------------

@test "break 4: quorum with one of three servers frozen: a writer (-w 6s) gets in between four looping readers" {
	# issue 37, break 4: each partial attempt's give-back deleted the writer's own waiter entry.
	start_quorum 3
	freeze_node 3
	local loop i
	loop=$(loop_script reader-loop.sh)
	for i in 1 2 3 4; do
		bg_start "RD$i" "$loop" "$RLOCK" -u "$Q1_URL" -u "$Q2_URL" -u "$Q3_URL" \
			--timeout 200ms exec --shared -t 30s -w 10s job -- \
			sh -c "echo 'R$i enter' >>log; sleep 0.5; echo 'R$i exit' >>log"
		# Staggered: each reader starts once the previous one is in.
		until_grep log "^R$i enter"
	done

	run --separate-stderr rlockq --timeout 200ms exec -t 30s -w 6s job -- \
		sh -c 'echo "W enter" >>log; echo "W exit" >>log'
	touch stop
	local st=$status err=$stderr
	wait_all_gone 15000 "$RD1" "$RD2" "$RD3" "$RD4" || fail "the readers did not stop"
	[[ $st == 0 ]] || fail "the writer exited $st, not 0: $err"
	assert_no_overlap log
}

@test "break 4: quorum with one of three servers frozen: while a writer waits, a new reader is kept out" {
	# issue 37, break 4 (the mechanism): the writer's waiter entry must stay listed between its attempts.
	start_quorum 3
	freeze_node 3
	# (k, not i: bats's run --separate-stderr may change a global i.)
	local r1 k t0
	r1=$(rlockq --timeout 200ms acquire --shared -t 30s job)
	bg_start W "$RLOCK" -u "$Q1_URL" -u "$Q2_URL" -u "$Q3_URL" --timeout 200ms \
		acquire -t 30s -w 15s job
	# Listed as waiting: bounded by time (each status pays the frozen
	# server's --timeout).
	t0=$(now_ms)
	until rlockq --timeout 200ms status job | grep -q '^  waiting: '; do
		(($(now_ms) - t0 < 8000)) || fail "the writer was never listed as waiting within 8 s"
		sleep 0.05
	done
	for ((k = 0; k < 5; k++)); do
		run --separate-stderr rlockq --timeout 200ms acquire --shared -n job
		[[ $status == 1 ]] || fail "reader $k exited $status (not 1: busy) while a writer waited: $output $stderr"
	done
	rlockq --timeout 200ms release --token "$r1" job
	bg_wait "$W" 15000 || fail "the writer still waits"
	assert_equal "$BG_STATUS" 0
}

# ---------------------------------------------------------------------------
# Break 5: a mark that outlives its holders
# ---------------------------------------------------------------------------

@test "break 5: once every --limit or --shared holder is released or expired, the name takes any kind" {
	# issue 37, break 5: the limit:N or shared mark kept the longest TTL ever given and refused on its own.
	local a st_lim st_shr tok_lim tok_shr
	# A semaphore: A (1 h) released, B (2 s) abandoned, never released.
	a=$(rlock acquire --limit 2 -t 1h lim)
	rlock acquire --limit 2 -t 2s lim >/dev/null
	rlock release --token "$a" lim
	# A shared lock: the same with two readers.
	a=$(rlock acquire --shared -t 1h shr)
	rlock acquire --shared -t 2s shr >/dev/null
	rlock release --token "$a" shr
	# Once the abandoned holders' TTLs have passed, nothing holds either.
	until_free lim
	until_free shr

	run --separate-stderr rlock acquire -n lim
	st_lim=$status tok_lim=$output
	run --separate-stderr rlock acquire --limit 2 -n shr
	st_shr=$status tok_shr=$output
	assert_equal "plain on lim: $st_lim, --limit 2 on shr: $st_shr" \
		"plain on lim: 0, --limit 2 on shr: 0"
	rlock release --token "$tok_lim" lim
	rlock release --token "$tok_shr" shr
}

# ---------------------------------------------------------------------------
# Break 7: quorum, a lock held on a majority called lost
# ---------------------------------------------------------------------------

# won_on_two NAME: three quorum servers, a contender's token for NAME on
# the third, so that NAME taken next is won on the first two only.  Sets
# URLS (a -u for each server) for rlock run under timeout(1): a release or
# extend whose outcome is unknown may be settled by asking again, but the
# test bounds it.
won_on_two() {
	start_quorum 3 || return 1
	quorum_urls
	qcli 3 EVAL "$FAKE_HOLD" 1 "rlock:{$1}" othertoken 60000 >/dev/null
}

@test "break 7: quorum: a release, and exec's release, with one of the two winners frozen succeed" {
	# issue 37, break 7: a server that never held the token ("not the holder") was taken as proof of loss.
	won_on_two job
	qcli 3 EVAL "$FAKE_HOLD" 1 'rlock:{job2}' othertoken 60000 >/dev/null
	local tok st_rel err_rel
	tok=$(rlockq --timeout 200ms acquire -t 30s job)
	assert_equal "$(nodes_with_token job "$tok" 1 2)" 2
	freeze_node 1
	run --separate-stderr timeout 20 "$RLOCK" "${URLS[@]}" --timeout 200ms release --token "$tok" job
	st_rel=$status err_rel=$stderr
	thaw_all
	assert_equal "$(nodes_with_token job "$tok" 2)" 0

	# exec's form: the command freezes server 1 and exits 0; teardown
	# (thaw_all) resumes it if the test does not get there.
	echo "$Q1_PID" >>"$BATS_TEST_TMPDIR/.frozen"
	run --separate-stderr timeout 20 "$RLOCK" "${URLS[@]}" --timeout 200ms exec -t 30s job2 -- \
		sh -c "kill -STOP $Q1_PID"
	thaw_all
	assert_equal "release: $st_rel, exec: $status" "release: 0, exec: 0" ||
		fail "release said: $err_rel; exec said: $stderr"
	refute_contains "was lost" "$stderr"
}

@test "break 7: quorum: exec's heartbeat with one of its two winners frozen does not SIGTERM the command" {
	# issue 37, break 7 (heartbeat): a late answer counted as not extended, so the lock was called lost.
	won_on_two job
	echo "$Q1_PID" >>"$BATS_TEST_TMPDIR/.frozen"
	# Server 1 frozen for 1.5 s (five heartbeats); its key (6 s) outlives
	# the freeze, and a majority (1 and 2) holds the lock throughout.
	run --separate-stderr timeout 20 "$RLOCK" "${URLS[@]}" --timeout 200ms exec -t 6s --heartbeat 300ms job -- \
		sh -c "kill -STOP $Q1_PID; sleep 1.5; kill -CONT $Q1_PID; sleep 0.7; echo done >done"
	thaw_all
	[[ $status == 0 ]] || fail "exec exited $status, not 0: $stderr"
	refute_contains "was lost" "$stderr"
	assert_equal "$(cat done 2>/dev/null)" done
}

# ---------------------------------------------------------------------------
# Break 9: --wait-replicas
# ---------------------------------------------------------------------------

@test "break 9: a re-acquire whose --wait-replicas is not acknowledged keeps the hold the token had" {
	# issue 37, break 9: the failed confirmation's give-back released a hold the attempt had not taken.
	# The replica's first sync at once (not after the default 5 s delay).
	rcli CONFIG SET repl-diskless-sync yes >/dev/null
	rcli CONFIG SET repl-diskless-sync-delay 0 >/dev/null
	start_redis_as REP --replicaof 127.0.0.1 "$REDIS_PORT"
	wait_replica_up REDIS REP
	local t fence
	t=$(rlock acquire -t 60s wr)
	fence=$(rlock --json status wr | json_eval 'd["fence"]')

	run --separate-stderr rlock --timeout 500ms acquire --token "$t" --wait-replicas 3 wr
	assert_equal "$status" 69

	run --separate-stderr rlock extend --token "$t" wr
	[[ $status == 0 ]] || fail "the holder's extend exited $status: $stderr"
	run --separate-stderr rlock --json status wr
	json_check "d['held'] and d['fence'] == $fence" <<<"$output"
}

# ---------------------------------------------------------------------------
# Item 7: nothing rlock writes lives forever
# ---------------------------------------------------------------------------

@test "item 7: every key that acquire and release leave has an expiry, and a fence counter gone (as expired) does not set the fence back" {
	# issue 37, item 7: the fence counter (PREFIX{NAME}:fence) was written with no TTL.
	local t f1 f2 k n=0 none=()
	t=$(rlock --json acquire fresh)
	f1=$(json_eval 'd["fence"]' <<<"$t")
	rlock release --token "$(json_eval 'd["token"]' <<<"$t" | tr -d '"')" fresh
	while read -r k; do
		[[ -n "$k" ]] || continue
		n=$((n + 1))
		[[ "$(rcli PTTL "$k")" == -1 ]] && none+=("$k")
	done < <(rcli --scan --pattern 'rlock:*')
	((n > 0)) || fail "acquire and release left no key at all (not even the history)"
	((${#none[@]} == 0)) || fail "keys with no expiry: ${none[*]}"

	# The counter may expire: the fence is floored at the server's clock.
	rcli DEL 'rlock:{fresh}:fence' >/dev/null
	t=$(rlock --json acquire fresh)
	f2=$(json_eval 'd["fence"]' <<<"$t")
	((f2 > f1)) || fail "fence $f2 after the counter's expiry is not above $f1"
}
