#!/usr/bin/env bats
# reshard.bats: a lock's slot moved between the masters of a real cluster.
# A request that meets the slot half-moved (TRYAGAIN: some of the lock's
# keys here, some already there) is sent again within --timeout, for every
# command, not only under -w; when the move outlasts it, the exit is 69
# with words, never the raw redirect or cluster error.  A live
# `redis-cli --cluster reshard` of the lock's slot, with a holder
# heartbeating and contenders waiting, gives no overlap and serves every
# contender within its wait.

load helpers
load exec-helpers
load dist-helpers

setup_file() { start_cluster; }
teardown_file() { stop_all_redis; }

setup() {
	require_rlock
	unset RLOCK_TOKEN RLOCK_PREFIX RLOCK_PASSWORD REDISCLI_AUTH RLOCK_CONFIG RLOCK_URL
	cd "$BATS_TEST_TMPDIR"
}

teardown() { exec_teardown; }

# Raw redirect or cluster error text, as the server says it.
RAW='MOVED [0-9]|ASK [0-9]|TRYAGAIN [A-Z]|CLUSTERDOWN [A-Z]|non local key|do not belong'

# name_at_slot SLOT [PREFIX]: a lock name whose keys hash to SLOT (CRC16,
# as Redis Cluster; bounded to 200000 candidates).
name_at_slot() {
	/usr/bin/python3 - "$1" "${2:-rs}" <<'PY'
import sys
want, pre = int(sys.argv[1]), sys.argv[2]
def crc16(b):
    c = 0
    for x in b:
        c ^= x << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else c << 1
            c &= 0xffff
    return c
for n in range(200000):
    name = "%s-%d" % (pre, n)
    if crc16(name.encode()) % 16384 == want:
        print(name)
        sys.exit(0)
sys.exit(1)
PY
}

# lowest_slot I: the lowest slot node I serves.
lowest_slot() {
	local id
	id=$(ccli "$1" CLUSTER MYID)
	ccli 1 CLUSTER NODES | tr -d '\r' | awk -v id="$id" '$1 == id {
		lo = -1
		for (i = 9; i <= NF; i++) {
			if ($i ~ /^\[/) continue
			split($i, r, "-")
			if (lo < 0 || r[1] + 0 < lo) lo = r[1] + 0
		}
		print lo
	}'
}

# tryagains I: how many TRYAGAIN replies node I gave so far.
tryagains() {
	ccli "$1" INFO errorstats | tr -d '\r' |
		sed -n 's/^errorstat_TRYAGAIN:count=\([0-9]*\).*/\1/p' | grep . || echo 0
}

# finish_move SLOT A B: move what is left of SLOT from node A to node B and
# make B its owner everywhere.
finish_move() {
	local slot=$1 a=$2 b=$3 bid k keys=() i portv
	bid=$(ccli "$b" CLUSTER MYID)
	while read -r k; do
		[[ -n $k ]] && keys+=("$k")
	done < <(ccli "$a" CLUSTER GETKEYSINSLOT "$slot" 1000)
	portv="C${b}_PORT"
	if ((${#keys[@]})); then
		ccli "$a" MIGRATE 127.0.0.1 "${!portv}" "" 0 5000 KEYS "${keys[@]}" >/dev/null
	fi
	for i in 1 2 3; do
		ccli "$i" CLUSTER SETSLOT "$slot" NODE "$bid" >/dev/null
	done
}

@test "reshard: a slot left MIGRATING with the keys half-moved: extend, status and acquire -n retry within --timeout, then exit 69 in words; they succeed once the move ends" {
	local name slot a=1 b=2 aid bid t t0 el before i fence
	name=$(name_on_node 1 mig)
	slot=$(slot_of "rlock:{$name}")
	t=$(rlock -u "$C1_URL" acquire -t 60s "$name")
	fence=$(ccli $a GET "rlock:{$name}:fence")
	aid=$(ccli $a CLUSTER MYID) bid=$(ccli $b CLUSTER MYID)
	ccli $b CLUSTER SETSLOT "$slot" IMPORTING "$aid" >/dev/null
	ccli $a CLUSTER SETSLOT "$slot" MIGRATING "$bid" >/dev/null
	# Only the lock's info has moved: the lock and its fence are here.
	ccli $a MIGRATE 127.0.0.1 "$C2_PORT" "" 0 5000 KEYS "rlock:{$name}:info" >/dev/null
	[[ $(ccli $a EXISTS "rlock:{$name}:info") == ASK* ]]
	[ "$(ccli $a EXISTS "rlock:{$name}")" = 1 ]

	for cmd in "extend --token $t -t 60s $name" "status $name" "acquire -n $name"; do
		before=$(tryagains $a)
		t0=$(now_ms)
		# shellcheck disable=SC2086
		run --separate-stderr rlock -u "$C1_URL" --timeout 1s $cmd
		el=$(($(now_ms) - t0))
		echo "$cmd: $status after ${el}ms: $stderr"
		assert_equal "$status" 69
		assert_one_error_line
		[[ "$stderr" == *"slot is moving between nodes"* ]]
		! grep -Eq "$RAW" <<<"$stderr$output"
		# Sent again until --timeout ran out, not once.
		[ "$el" -ge 900 ]
		[ $(($(tryagains $a) - before)) -ge 3 ]
	done
	# Nothing was written by the refused requests: the fence is where it was.
	assert_equal "$(ccli $a GET "rlock:{$name}:fence")" "$fence"
	assert_equal "$(ccli $a GET "rlock:{$name}")" "$t"

	# An extend that starts while the slot is half-moved succeeds once
	# the move ends within its --timeout.
	before=$(tryagains $a)
	bg_start X "$RLOCK" -u "$C1_URL" --timeout 20s extend --token "$t" -t 90s "$name"
	for ((i = 0; i < 500; i++)); do
		(($(tryagains $a) > before)) && break
		sleep 0.02
	done
	(($(tryagains $a) > before))
	finish_move "$slot" $a $b
	bg_wait "$X" 20000
	assert_equal "$BG_STATUS" 0
	! grep -Eq "$RAW" "$BATS_TEST_TMPDIR/X.err"
	[ "$(ccli $b PTTL "rlock:{$name}")" -gt 60000 ]
	run --separate-stderr rlock -u "$C1_URL" status "$name"
	assert_success
	run --separate-stderr rlock -u "$C3_URL" release --token "$t" "$name"
	assert_success
	assert_equal "$(ccli $b EXISTS "rlock:{$name}")" 0
}
