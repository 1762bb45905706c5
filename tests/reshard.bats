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
RAW='MOVED [0-9]|ASK [0-9]|TRYAGAIN [A-Z]|CLUSTERDOWN [A-Z]|non local key'

# refute_raw: fail if stdin has raw redirect or cluster error text (a bare
# "! grep" would not fail a bats test).
refute_raw() {
	local text
	text=$(cat)
	if grep -Eq "$RAW" <<<"$text"; then
		echo "raw error text: $text" >&2
		return 1
	fi
}

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
	# The target first, then the others, as redis-cli does.
	for i in "$b" 1 2 3; do
		ccli "$i" CLUSTER SETSLOT "$slot" NODE "$bid" >/dev/null
	done
}

@test "reshard: a slot left MIGRATING with the keys half-moved: extend, status, acquire -n and release retry within --timeout, then exit 69 in words (-w offered to acquire only); they succeed once the move ends" {
	local name slot a=1 b=2 aid bid t t0 el before i fence
	name=$(name_on_node 1 mig)
	slot=$(slot_of "rlock:{$name}")
	t=$(rlock -u "$C1_URL" acquire -t 60s "$name")
	fence=$(ccli $a GET "rlock:{$name}:fence")
	aid=$(ccli $a CLUSTER MYID) bid=$(ccli $b CLUSTER MYID)
	ccli $b CLUSTER SETSLOT "$slot" IMPORTING "$aid" >/dev/null
	ccli $a CLUSTER SETSLOT "$slot" MIGRATING "$bid" >/dev/null
	# Only the lock's history has moved: the lock and its fence are here.
	ccli $a MIGRATE 127.0.0.1 "$C2_PORT" "" 0 5000 KEYS "rlock:{$name}:log" >/dev/null
	[[ $(ccli $a EXISTS "rlock:{$name}:log") == ASK* ]]
	[ "$(ccli $a EXISTS "rlock:{$name}")" = 1 ]

	for cmd in "extend --token $t -t 60s $name" "status $name" "acquire -n $name" \
		"release --token $t $name"; do
		before=$(tryagains $a)
		t0=$(now_ms)
		# shellcheck disable=SC2086
		run --separate-stderr rlock -u "$C1_URL" --timeout 1s $cmd
		el=$(($(now_ms) - t0))
		echo "$cmd: $status after ${el}ms: $stderr"
		assert_equal "$status" 69
		assert_one_error_line
		[[ "$stderr" == *"slot is moving between nodes"* ]]
		refute_raw <<<"$stderr$output"
		# The remedy is one the command has: only acquire takes -w.
		if [[ $cmd == acquire* ]]; then
			[[ $stderr == *"give -w to wait through it"* ]] || fail "$cmd: $stderr"
		else
			[[ $stderr != *" -w "* && $stderr != *"--wait"* ]] || fail "$cmd offers -w: $stderr"
			[[ $stderr == *"try again once the slot has moved"* ]] || fail "$cmd: $stderr"
		fi
		# Sent again until --timeout ran out, not once.
		[ "$el" -ge 900 ]
		[ $(($(tryagains $a) - before)) -ge 3 ]
	done
	# Nothing was written by the refused requests: the fence is where it was.
	assert_equal "$(ccli $a GET "rlock:{$name}:fence")" "$fence"
	assert_equal "$(ccli $a HKEYS "rlock:{$name}")" "$t"

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
	[[ $BG_STATUS == 0 ]] || fail "the extend exited $BG_STATUS: $(cat "$BATS_TEST_TMPDIR/X.err")"
	refute_raw <"$BATS_TEST_TMPDIR/X.err"
	[ "$(ccli $b PTTL "rlock:{$name}")" -gt 60000 ]
	run --separate-stderr rlock -u "$C1_URL" status "$name"
	assert_success
	run --separate-stderr rlock -u "$C3_URL" release --token "$t" "$name"
	assert_success
	assert_equal "$(ccli $b EXISTS "rlock:{$name}")" 0
}

# moveds N: how many MOVED replies node N has given.
moveds() {
	ccli "$1" INFO errorstats | tr -d '\r' |
		sed -n 's/^errorstat_MOVED:count=\([0-9]*\).*/\1/p' | grep . || echo 0
}

@test "reshard: nodes that send a request back and forth (the end of a move not yet known to both) pause and send it again within --timeout; it goes through once they agree" {
	local name slot a=1 b=2 aid bid t before i k keys=()
	name=$(name_on_node 1 pong)
	slot=$(slot_of "rlock:{$name}")
	t=$(rlock -u "$C1_URL" acquire -t 60s "$name")
	aid=$(ccli $a CLUSTER MYID) bid=$(ccli $b CLUSTER MYID)
	ccli $b CLUSTER SETSLOT "$slot" IMPORTING "$aid" >/dev/null
	ccli $a CLUSTER SETSLOT "$slot" MIGRATING "$bid" >/dev/null
	while read -r k; do
		[[ -n $k ]] && keys+=("$k")
	done < <(ccli $a CLUSTER GETKEYSINSLOT "$slot" 100)
	ccli $a MIGRATE 127.0.0.1 "$C2_PORT" "" 0 5000 KEYS "${keys[@]}" >/dev/null
	# The source gives the slot away; the target does not know it yet:
	# node 1 says MOVED to node 2, node 2 (importing) MOVED back to 1.
	ccli $a CLUSTER SETSLOT "$slot" NODE "$bid" >/dev/null
	before=$(moveds $b)
	bg_start X "$RLOCK" -u "$C1_URL" --timeout 20s extend --token "$t" -t 90s "$name"
	for ((i = 0; i < 500; i++)); do
		(($(moveds $b) > before + 5)) && break
		_proc_alive "$X" || break
		sleep 0.02
	done
	_proc_alive "$X" || fail "the extend gave up: $(cat "$BATS_TEST_TMPDIR/X.err")"
	(($(moveds $b) > before + 5)) || fail "no back and forth seen"
	ccli $b CLUSTER SETSLOT "$slot" NODE "$bid" >/dev/null
	ccli 3 CLUSTER SETSLOT "$slot" NODE "$bid" >/dev/null
	bg_wait "$X" 20000
	[[ $BG_STATUS == 0 ]] || fail "the extend exited $BG_STATUS: $(cat "$BATS_TEST_TMPDIR/X.err")"
	refute_raw <"$BATS_TEST_TMPDIR/X.err"
	[ "$(ccli $b PTTL "rlock:{$name}")" -gt 60000 ]
	run --separate-stderr rlock -u "$C3_URL" release --token "$t" "$name"
	assert_success
}

# reshard_slot FROM TO: `redis-cli --cluster reshard` of FROM's lowest
# slot to TO (it takes a source's slots in ascending order).
reshard_slot() {
	local fid tid
	fid=$(ccli "$1" CLUSTER MYID) tid=$(ccli "$2" CLUSTER MYID)
	timeout 60 redis-cli --cluster reshard "127.0.0.1:$C1_PORT" \
		--cluster-from "$fid" --cluster-to "$tid" --cluster-slots 1 \
		--cluster-yes </dev/null >>"$BATS_TEST_TMPDIR/reshard.log" 2>&1 || {
		cat "$BATS_TEST_TMPDIR/reshard.log" >&2
		return 1
	}
}

@test "reshard: a live redis-cli --cluster reshard of the lock's slot (three moves) while a holder heartbeats, six contenders wait and status polls: no overlap, no raw error, every contender served, fences increasing, status never 69" {
	local name slot d=$BATS_TEST_TMPDIR i k pids=() st p n
	slot=$(lowest_slot 1)
	name=$(name_at_slot "$slot" live)
	[ "$(owner_of "$name")" = 1 ]
	# A section: mkdir is the overlap check (it fails if another is in).
	cat >"$d/sec.sh" <<'SH'
#!/bin/sh
d=$1
mkdir "$d/in" 2>/dev/null || echo "overlap $$" >>"$d/overlaps"
echo "$RLOCK_FENCE" >>"$d/fences"
if [ "${2:-}" = hold ]; then
	n=0
	while [ ! -e "$d/stop" ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done
else
	sleep 0.3
fi
rmdir "$d/in"
SH
	chmod +x "$d/sec.sh"
	# 3,000 keys of no lock in the slot: each move takes a while (MIGRATE
	# goes 10 keys at a time), a window where the lock's keys are partly
	# moved and every request for them is refused with TRYAGAIN.
	for ((i = 0; i < 3000; i++)); do
		echo "SET fill{$name}:$i x"
	done | ccli 1 >/dev/null
	# A status poller, without a wait, all along: each call rides through
	# the moves within its --timeout (0 held, 1 free; never 69).
	cat >"$d/poll.sh" <<'SH'
#!/bin/sh
n=0
while [ ! -e "$1/pstop" ] && [ $n -lt 3000 ]; do
	"$2" -u "$3" --timeout 10s status "$4" >/dev/null 2>>"$1/P.err"
	echo $? >>"$1/poll-codes"
	n=$((n + 1))
done
SH
	chmod +x "$d/poll.sh"
	bg_start P "$d/poll.sh" "$d" "$RLOCK" "$C3_URL" "$name"
	bg_start H "$RLOCK" -u "$C1_URL" exec -t 3s "$name" -- "$d/sec.sh" "$d" hold
	for ((i = 0; i < 500; i++)); do
		[[ -d $d/in ]] && break
		sleep 0.02
	done
	[[ -d $d/in ]]
	for k in 1 2 3 4 5 6; do
		bg_start "C$k" "$RLOCK" -u "$C1_URL" exec -w 30s -t 3s "$name" -- "$d/sec.sh" "$d"
		p="C$k"
		pids+=("${!p}")
	done
	until_waiting 6 rlock -u "$C1_URL" status "$name"
	# The first move while the holder heartbeats (-t 3s: every second),
	# across at least one heartbeat.
	reshard_slot 1 2
	[ "$(owner_of "$name")" = 2 ]
	# A heartbeat renews the lease on the new owner (PTTL goes up).
	p=$(ccli 2 PTTL "rlock:{$name}")
	for ((i = 0; i < 500; i++)); do
		n=$(ccli 2 PTTL "rlock:{$name}")
		((n > p)) && break
		p=$n
		sleep 0.02
	done
	((n > p))
	touch "$d/stop"
	# The contenders take turns while the slot moves twice more.
	reshard_slot 2 3
	reshard_slot 3 1
	[ "$(owner_of "$name")" = 1 ]
	touch "$d/pstop"
	bg_wait "$P" 30000
	assert_equal "$BG_STATUS" 0
	if grep -qvx '[01]' "$d/poll-codes"; then
		sort "$d/poll-codes" | uniq -c
		cat "$d/P.err"
		false
	fi
	bg_wait "$H" 30000
	assert_equal "$BG_STATUS" 0
	for p in "${pids[@]}"; do
		bg_wait "$p" 35000
		assert_equal "$BG_STATUS" 0
	done
	for k in H C1 C2 C3 C4 C5 C6 P; do
		if grep -Eq "$RAW" "$d/$k.err"; then
			cat "$d/$k.err"
			false
		fi
	done
	[[ ! -e $d/overlaps ]]
	assert_equal "$(wc -l <"$d/fences")" 7
	# Fences strictly increasing in the order the sections ran.
	sort -n -c -u "$d/fences" || { cat "$d/fences"; false; }
}

# start_hostile MODE: tests/hostileserver.py on a Unix socket (HOSTILE_URL).
start_hostile() {
	local i
	HOSTILE_URL=unix://$BATS_TEST_TMPDIR/hostile-$1.sock
	rm -f "$BATS_TEST_TMPDIR/HOSTILE.out"
	bg_start HOSTILE /usr/bin/python3 "$BATS_TEST_DIRNAME/hostileserver.py" \
		--socket "$BATS_TEST_TMPDIR/hostile-$1.sock" --mode "$1" --max-seconds 120
	for ((i = 0; i < 750; i++)); do
		[[ "$(head -n 1 "$BATS_TEST_TMPDIR/HOSTILE.out" 2>/dev/null)" == ready ]] && return 0
		sleep 0.02
	done
	fail "the hostile server did not start: $(head -c 2000 "$BATS_TEST_TMPDIR/HOSTILE.err")"
}

@test "reshard: a script stopped by a key not on the node (Redis's 'non local key') is sent again like TRYAGAIN, and worded, never raw" {
	local t0 el
	start_hostile nonlocal3
	run --separate-stderr rlock -u "$HOSTILE_URL" --timeout 5s acquire -n -t 60s job
	assert_success
	start_hostile nonlocal
	t0=$(now_ms)
	run --separate-stderr rlock -u "$HOSTILE_URL" --timeout 1s acquire -n -t 60s job
	el=$(($(now_ms) - t0))
	assert_equal "$status" 69
	assert_one_error_line
	[[ "$stderr" == *"slot is moving between nodes (TRYAGAIN)"* ]]
	refute_raw <<<"$stderr"
	[[ "$stderr" != *user_script* ]]
	[ "$el" -ge 900 ]
}
