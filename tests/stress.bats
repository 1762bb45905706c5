#!/usr/bin/env bats
# stress.bats: mutual exclusion under contention: several processes doing a
# non-atomic read-modify-write of a file under the lock never lose an update,
# and the fence seen inside the critical section only grows.

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { default_setup; }
teardown() { cleanup_test; }

# One worker: CYCLES times, take the lock, bump the counter file the slow
# way, note the fence, give the lock back. Failures are counted in a file.
worker() {
	local cycles=$1 dir=$2 i tok n fence
	for ((i = 0; i < cycles; i++)); do
		if tok=$("$RLOCK" acquire -w 30s -t 10s ctr); then
			n=$(cat "$dir/count")
			fence=$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" GET 'rlock:{ctr}:fence')
			echo "$fence" >>"$dir/fences"
			n=$((n + 1))
			echo "$n" >"$dir/count"
			"$RLOCK" release --token "$tok" ctr || echo "release $i" >>"$dir/failures"
		else
			echo "acquire $i" >>"$dir/failures"
		fi
	done
}

@test "stress: 4 workers x 25 cycles of read-modify-write under the lock count exactly 100" {
	local dir=$BATS_TEST_TMPDIR w
	echo 0 >"$dir/count"
	: >"$dir/fences"
	# A counter above the clock's floor counts acquires one by one.
	rcli SET 'rlock:{ctr}:fence' 8000000000000000 >/dev/null
	local pids=()
	for w in 1 2 3 4; do
		worker 25 "$dir" </dev/null >/dev/null 2>>"$dir/worker.err" 3>&- &
		pids+=("$!")
		echo "$!" >>"$dir/.bg-pids"
	done
	wait_all_gone 60000 "${pids[@]}" || fail "workers still running after 60 s"
	for w in "${pids[@]}"; do
		wait "$w"
	done
	if [[ -s "$dir/failures" ]]; then
		fail "failures: $(cat "$dir/failures"); stderr: $(cat "$dir/worker.err")"
	fi
	assert_equal "$(cat "$dir/count")" 100
	# The fences seen inside the critical section grow strictly.
	run awk 'NR > 1 && $1 <= prev { print "line " NR ": " $1 " after " prev; bad = 1 } { prev = $1 } END { exit bad }' "$dir/fences"
	assert_success
	assert_equal "$(wc -l <"$dir/fences")" 100
	assert_equal "$(rcli GET 'rlock:{ctr}:fence')" 8000000000000100
	assert_equal "$(rcli EXISTS 'rlock:{ctr}')" 0
}

@test "stress: 10 concurrent waiters on a held lock all get it in turn" {
	local dir=$BATS_TEST_TMPDIR holder w
	rcli SET 'rlock:{q}:fence' 8000000000000000 >/dev/null
	holder=$(rlock acquire -t 30s q)
	local pids=()
	for w in $(seq 1 10); do
		bash -c 'tok=$("$1" acquire -w 20s -t 10s q) && "$1" release --token "$tok" q' _ "$RLOCK" \
			</dev/null >/dev/null 2>>"$dir/waiter.err" 3>&- &
		pids+=("$!")
		echo "$!" >>"$dir/.bg-pids"
	done
	sleep 0.5
	rlock release --token "$holder" q
	wait_all_gone 15000 "${pids[@]}" || fail "waiters still waiting 15 s after the release"
	local failed=0
	for w in "${pids[@]}"; do
		wait "$w" || failed=$((failed + 1))
	done
	assert_equal "$failed" 0
	assert_equal "$(rcli GET 'rlock:{q}:fence')" 8000000000000011
	assert_equal "$(rcli EXISTS 'rlock:{q}')" 0
}
