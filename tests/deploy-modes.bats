#!/usr/bin/env bats
# deploy-modes.bats: exec --pending and --replace (deploy queues,
# rlock-exec(7)) beside the other modes (--fifo, --limit, --every), and on
# a quorum of three servers, Sentinel and a Cluster, as on one server.

load helpers
load exec-helpers
setup() { own_server_setup; }
teardown() { test_teardown; }

# until_pid_in VAR... -- NAME PID: poll (up to 20 s) until the waiters hash
# of NAME names PID on each server (rcli_as VAR; none: the default).
until_pid_in() {
	local vars=() i v got
	while [[ $1 != -- ]]; do vars+=("$1"); shift; done
	shift
	for v in "${vars[@]:-}"; do
		for ((i = 0; i < 1000; i++)); do
			if [[ -z "$v" ]]; then
				got=$(rcli HVALS "rlock:{$1}:waiters")
			else
				got=$(rcli_as "$v" HVALS "rlock:{$1}:waiters")
			fi
			[[ "$got" == *"\"$2\""* ]] && break
			sleep 0.02
		done
		[[ "$got" == *"\"$2\""* ]] || fail "pid $2 is not listed on ${v:-the server}"
	done
}

# until_file FILE: poll (up to 20 s) until FILE is not empty.
until_file() {
	wait_file "$1" 20000 || fail "$1 is still empty"
}

@test "deploy modes: --pending with --fifo keeps the newest waiters, served in the order they came" {
	local holder
	holder=$(rlock acquire -t 60s deploy)
	bg_start A "$RLOCK" exec --fifo --pending 2 -w 60s deploy -- sh -c 'echo A >>ran'
	until_pid_in -- deploy "$A"
	bg_start B "$RLOCK" exec --fifo --pending 2 -w 60s deploy -- sh -c 'echo B >>ran'
	until_pid_in -- deploy "$B"
	bg_start C "$RLOCK" exec --fifo --pending 2 -w 60s deploy -- sh -c 'echo C >>ran'
	bg_wait "$A" 20000 || fail "A was not superseded"
	assert_equal "$BG_STATUS" 36
	assert_equal "$(rcli ZCARD 'rlock:{deploy}:queue')" 2
	rlock release --token "$holder" deploy
	bg_wait "$B" 20000 && bg_wait "$C" 20000 || fail "B or C did not run"
	assert_equal "$(cat ran)" "$(printf 'B\nC')"
}

@test "deploy modes: --pending with --limit counts the semaphore's waiters; a freed slot goes to the one kept" {
	local h1 h2
	h1=$(rlock acquire --limit 2 -t 60s pool)
	h2=$(rlock acquire --limit 2 -t 60s pool)
	bg_start A "$RLOCK" exec --limit 2 --pending 1 -w 60s pool -- sh -c 'echo A >>ran'
	until_pid_in -- pool "$A"
	bg_start B "$RLOCK" exec --limit 2 --pending 1 -w 60s pool -- sh -c 'echo B >>ran'
	bg_wait "$A" 20000 || fail "A was not superseded"
	assert_equal "$BG_STATUS" 36
	rlock release --token "$h1" pool
	bg_wait "$B" 20000 || fail "B did not run"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat ran)" B
	rlock release --token "$h2" pool
}

@test "deploy modes: --pending with --every --retry-failed: the superseded start exits 36, the one kept is refused behind the period's successful run" {
	bg_start R "$RLOCK" exec --every 1h --retry-failed -w 60s job -- sh -c 'echo R >>ran; while [ ! -e go ]; do sleep 0.05; done'
	until_file ran
	bg_start A "$RLOCK" exec --every 1h --retry-failed --pending 1 -w 60s job -- sh -c 'echo A >>ran'
	until_pid_in -- job "$A"
	bg_start B "$RLOCK" exec --every 1h --retry-failed --pending 1 -w 60s job -- sh -c 'echo B >>ran'
	bg_wait "$A" 20000 || fail "A was not superseded"
	assert_equal "$BG_STATUS" 36
	touch go
	bg_wait "$R" 20000 || fail "the period's run did not end"
	assert_equal "$BG_STATUS" 0
	bg_wait "$B" 20000 || fail "B was not refused"
	assert_equal "$BG_STATUS" 1
	assert_equal "$(cat ran)" R
}

@test "deploy modes: --replace does not go with --every (64, a reason, nothing written)" {
	run --separate-stderr rlock exec --replace --every 1h -w 1s job -- true
	assert_usage_error
	[[ "$stderr" == *--every* ]] || fail "$stderr"
}

@test "deploy modes: on a quorum of three, ten deploys behind a running one run the first and the last, and --replace stops it with no overlap" {
	start_quorum 3
	local i pidv
	bg_start D1 "$RLOCK" -u "$Q1_URL" -u "$Q2_URL" -u "$Q3_URL" exec --pending 1 -w 60s deploy -- \
		sh -c 'echo 1 >>ran; while [ ! -e go ]; do sleep 0.05; done'
	until_file ran
	for ((i = 2; i <= 10; i++)); do
		bg_start "D$i" "$RLOCK" -u "$Q1_URL" -u "$Q2_URL" -u "$Q3_URL" \
			exec --pending 1 -w 60s deploy -- sh -c "echo $i >>ran"
		pidv="D$i"
		until_pid_in Q1 Q2 Q3 -- deploy "${!pidv}"
		sleep 0.1
	done
	for ((i = 2; i <= 9; i++)); do
		pidv="D$i"
		bg_wait "${!pidv}" 20000 || fail "deploy $i still waits"
		assert_equal "$BG_STATUS" 36
	done
	touch go
	bg_wait "$D10" 20000 || fail "the last deploy did not run"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat ran)" "$(printf '1\n10')"

	# --replace, the old deploy on one "machine", the new on another.
	cat >old.sh <<'SH'
trap 'echo "old-term $(date +%s%N)" >>log; exit 143' TERM
echo "old-start $(date +%s%N)" >>log
while :; do sleep 0.05; done
SH
	bg_start OLD "$RLOCK" -u "$Q1_URL" -u "$Q2_URL" -u "$Q3_URL" exec -t 3s deploy -- sh old.sh
	for ((i = 0; i < 1000; i++)); do
		grep -q '^old-start ' log 2>/dev/null && break
		sleep 0.02
	done
	bg_start NEW "$RLOCK" -u "$Q3_URL" -u "$Q2_URL" -u "$Q1_URL" exec --replace -w 30s deploy -- \
		sh -c 'echo "new-start $(date +%s%N)" >>log'
	bg_wait "$OLD" 20000 || fail "the old deploy was not stopped"
	assert_equal "$BG_STATUS" 37
	bg_wait "$NEW" 20000 || fail "the new deploy did not run"
	assert_equal "$BG_STATUS" 0
	(($(sed -n 's/^old-term //p' log) <= $(sed -n 's/^new-start //p' log))) ||
		fail "overlap: $(cat log)"
}

@test "deploy modes: on a Cluster, --pending supersedes and --replace stops the holder" {
	start_cluster
	local url="redis://127.0.0.1:$C1_PORT,127.0.0.1:$C2_PORT" holder
	holder=$("$RLOCK" -u "$url" acquire -t 60s deploy)
	bg_start A "$RLOCK" -u "$url" exec --pending 1 -w 60s deploy -- sh -c 'echo A >>ran'
	local i
	for ((i = 0; i < 1000; i++)); do
		"$RLOCK" -u "$url" status deploy | grep -q "waiting: .* pid $A " && break
		sleep 0.02
	done
	bg_start B "$RLOCK" -u "$url" exec --pending 1 -w 60s deploy -- sh -c 'echo B >>ran'
	bg_wait "$A" 20000 || fail "A was not superseded"
	assert_equal "$BG_STATUS" 36
	"$RLOCK" -u "$url" release --token "$holder" deploy
	bg_wait "$B" 20000 || fail "B did not run"
	assert_equal "$BG_STATUS" 0
	bg_start OLD "$RLOCK" -u "$url" exec -t 3s deploy -- sh -c 'echo old >>ran; while :; do sleep 0.05; done'
	for ((i = 0; i < 1000; i++)); do
		grep -q '^old$' ran && break
		sleep 0.02
	done
	bg_start NEW "$RLOCK" -u "$url" exec --replace -w 30s deploy -- sh -c 'echo new >>ran'
	bg_wait "$OLD" 20000 || fail "the old deploy was not stopped"
	assert_equal "$BG_STATUS" 37
	bg_wait "$NEW" 20000 || fail "the new deploy did not run"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat ran)" "$(printf 'B\nold\nnew')"
}

@test "deploy modes: through Sentinel, --pending supersedes and --replace stops the holder" {
	start_sentinel_group
	local holder i
	holder=$("$RLOCK" -u "$SENT_URL" acquire -t 60s deploy)
	bg_start A "$RLOCK" -u "$SENT_URL" exec --pending 1 -w 60s deploy -- sh -c 'echo A >>ran'
	until_pid_in SM -- deploy "$A"
	bg_start B "$RLOCK" -u "$SENT_URL" exec --pending 1 -w 60s deploy -- sh -c 'echo B >>ran'
	bg_wait "$A" 20000 || fail "A was not superseded"
	assert_equal "$BG_STATUS" 36
	"$RLOCK" -u "$SENT_URL" release --token "$holder" deploy
	bg_wait "$B" 20000 || fail "B did not run"
	assert_equal "$BG_STATUS" 0
	bg_start OLD "$RLOCK" -u "$SENT_URL" exec -t 3s deploy -- sh -c 'echo old >>ran; while :; do sleep 0.05; done'
	for ((i = 0; i < 1000; i++)); do
		grep -q '^old$' ran && break
		sleep 0.02
	done
	bg_start NEW "$RLOCK" -u "$SENT_URL" exec --replace -w 30s deploy -- sh -c 'echo new >>ran'
	bg_wait "$OLD" 20000 || fail "the old deploy was not stopped"
	assert_equal "$BG_STATUS" 37
	bg_wait "$NEW" 20000 || fail "the new deploy did not run"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat ran)" "$(printf 'B\nold\nnew')"
}
