#!/usr/bin/env bats
# fence-loss.bats: fencing tokens stay strictly increasing when Redis loses
# data: a restart without persistence, an AOF (appendfsync everysec) that
# lost its last writes in a crash, a Sentinel failover to a replica that
# missed the last acquires, and a quorum whose servers all came back empty.
# Each test takes fences, makes the server forget them, and checks the next
# fence is above every one handed out before.

load helpers
load exec-helpers
load dist-helpers
load fault-helpers

setup() {
	require_rlock
	unset RLOCK_TOKEN RLOCK_PREFIX RLOCK_PASSWORD REDISCLI_AUTH RLOCK_CONFIG RLOCK_URL
	cd "$BATS_TEST_TMPDIR"
}

teardown() {
	stop_all_proxies
	exec_teardown
}

# take_fences URL N [OPTS...]: acquire and release the lock "job" N times
# through URL; prints the largest fence handed out. Fails if any fence is
# not above the one before.
take_fences() {
	local url=$1 n=$2 i out f tok prev=0
	shift 2
	for ((i = 0; i < n; i++)); do
		out=$("$RLOCK" -u "$url" "$@" --json acquire -t 10s job) || return 1
		f=$(json_eval 'd["fence"]' <<<"$out")
		tok=$(json_eval 'd["token"]' <<<"$out" | tr -d '"')
		((f > prev)) || { echo "fence $f after $prev" >&2; return 1; }
		prev=$f
		"$RLOCK" -u "$url" "$@" release --token "$tok" job || return 1
	done
	echo "$prev"
}

# next_fence URL [OPTS...]: one more acquire; prints its fence.
next_fence() {
	local url=$1
	shift
	"$RLOCK" -u "$url" "$@" --json acquire -t 10s job | json_eval 'd["fence"]'
}

@test "fence-loss: after SIGKILL and a restart with no data, the next fence is above every earlier one" {
	start_redis_as F
	local before after
	before=$(take_fences "$F_URL" 5) || fail "could not take fences"
	kill -KILL "$F_PID"
	wait_gone "$F_PID" 5000
	restart_redis_empty F || fail "could not restart the server"
	assert_equal "$(rcli_as F EXISTS 'rlock:{job}:fence')" 0
	after=$(next_fence "$F_URL")
	((after > before)) || fail "fence after the restart $after is not above $before"
	assert_equal "$(rcli_as F GET 'rlock:{job}:fence')" "$after"
}

@test "fence-loss: after an appendfsync everysec crash that lost the last acquires, the next fence is above them" {
	start_redis_as F --appendonly yes --appendfsync everysec
	local kept lost after
	kept=$(take_fences "$F_URL" 3) || fail "could not take fences"
	# What reached the disk: the AOF as it is now. The acquires after it
	# are the second of writes an everysec crash loses.
	rcli_as F BGREWRITEAOF >/dev/null
	local i
	for ((i = 0; i < 250; i++)); do
		rcli_as F INFO persistence | tr -d '\r' | grep -qx 'aof_rewrite_in_progress:0' &&
			rcli_as F INFO persistence | tr -d '\r' | grep -qx 'aof_rewrite_scheduled:0' && break
		sleep 0.02
	done
	cp -a "$F_DIR/appendonlydir" "$BATS_TEST_TMPDIR/aof-kept"
	lost=$(take_fences "$F_URL" 3) || fail "could not take fences"
	((lost > kept)) || fail "fences did not grow: $kept then $lost"
	kill -KILL "$F_PID"
	wait_gone "$F_PID" 5000
	rm -rf "$F_DIR/appendonlydir"
	cp -a "$BATS_TEST_TMPDIR/aof-kept" "$F_DIR/appendonlydir"
	restart_redis_empty F --appendonly yes --appendfsync everysec || fail "could not restart the server"
	# The server came back with the counter of before the lost writes.
	assert_equal "$(rcli_as F GET 'rlock:{job}:fence')" "$kept"
	after=$(next_fence "$F_URL")
	((after > lost)) || fail "fence after the crash $after is not above $lost (the counter came back at $kept)"
}

@test "fence-loss: after a Sentinel failover to a replica that missed the last acquires, the next fence is above them" {
	# The replica follows the master through a proxy that can stop passing
	# the replication stream, so the replica misses writes for certain.
	start_redis_as SM --repl-diskless-sync yes --repl-diskless-sync-delay 0
	start_proxy P "$SM_PORT"
	start_redis_as SR --replicaof 127.0.0.1 "$P_PORT"
	wait_replica_online SM 10000 || fail "the replica never came online"
	start_sentinel_as SS mm "$SM_PORT"
	wait_sentinel_ready SS mm "$SR_PORT" 15000 || fail "the sentinel never saw the replica"
	local url="redis-sentinel://127.0.0.1:$SS_PORT/mm" synced missed after i
	synced=$(take_fences "$url" 2) || fail "could not take fences"
	for ((i = 0; i < 250; i++)); do
		[[ "$(rcli_as SR GET 'rlock:{job}:fence')" == "$synced" ]] && break
		sleep 0.02
	done
	assert_equal "$(rcli_as SR GET 'rlock:{job}:fence')" "$synced"
	proxy P blackhole
	missed=$(take_fences "$url" 3) || fail "could not take fences"
	assert_equal "$(rcli_as SR GET 'rlock:{job}:fence')" "$synced"
	kill -KILL "$SM_PID"
	wait_gone "$SM_PID" 5000
	wait_master_change SS mm "$SM_PORT" 30000 >/dev/null || fail "the sentinel never failed over"
	wait_role SR master 15000 || fail "the replica was never promoted"
	# The new master has the counter of before the missed writes.
	assert_equal "$(rcli_as SR GET 'rlock:{job}:fence')" "$synced"
	for ((i = 0; i < 50; i++)); do
		after=$(next_fence "$url" 2>/dev/null) && break
		sleep 0.1
	done
	[[ -n "$after" ]] || fail "no acquire through the sentinel after the failover"
	((after > missed)) || fail "fence after the failover $after is not above $missed"
}

@test "fence-loss: a quorum whose servers all came back empty hands out a fence above every earlier one" {
	start_quorum 3
	local urls=() u before after i
	for u in $QUORUM_URLS; do urls+=(-u "$u"); done
	before=$(take_fences "$Q1_URL" 4 "${urls[@]:2}") || fail "could not take fences"
	for i in 1 2 3; do
		local pidv="Q${i}_PID"
		kill -KILL "${!pidv}"
		wait_gone "${!pidv}" 5000
		restart_redis_empty "Q$i" || fail "could not restart server $i"
	done
	after=$(next_fence "$Q1_URL" "${urls[@]:2}")
	((after > before)) || fail "quorum fence after the restarts $after is not above $before"
	# A majority has its counter raised to the fence (a straggler's own
	# grant may still be on its way when acquire returns).
	local same=0
	for i in 1 2 3; do
		[[ "$(qcli "$i" GET 'rlock:{job}:fence')" == "$after" ]] && same=$((same + 1))
	done
	assert_between "$same" 2 3 "servers whose counter is the fence"
}
