#!/usr/bin/env bats
# cluster.bats: Redis Cluster (three masters): locks whose keys live on
# different nodes taken, shown and released through different nodes (MOVED
# followed), all keys of a lock in one slot, exec through any node, the
# listing across all masters, and fences per name.

load helpers
load exec-helpers
load dist-helpers

setup_file() { start_cluster; }
teardown_file() { stop_all_redis; }

setup() {
	require_rlock
	unset RLOCK_TOKEN RLOCK_PREFIX RLOCK_PASSWORD REDISCLI_AUTH RLOCK_CONFIG RLOCK_URL
	cflushall
	cd "$BATS_TEST_TMPDIR"
}

teardown() { exec_teardown; }

# ckey_on I KEY: does KEY exist on node I (asked directly, no redirection)?
ckey_on() {
	ccli "$1" EXISTS "$2"
}

@test "cluster: thirty locks spread over the nodes are taken via node 1, shown via node 2 and released via node 3" {
	# (Not "i": bats's run clobbers a global i.)
	local n name owner tok
	declare -A used=()
	declare -A toks=()
	for ((n = 1; n <= 30; n++)); do
		name="job-$n"
		owner=$(owner_of "$name")
		used[$owner]=1
		# Long enough for all thirty to outlive the loops on a busy machine.
		run --separate-stderr rlock -u "$C1_URL" acquire -t 10m "$name"
		assert_success
		toks[$name]=$output
		# The keys are on the node that serves the slot, and only there.
		assert_equal "$(ccli "$owner" HKEYS "rlock:{$name}")" "${toks[$name]}"
	done
	# CLUSTER KEYSLOT put them on at least two nodes (so MOVED was followed).
	assert_between "${#used[@]}" 2 3 "nodes used"

	for ((n = 1; n <= 30; n++)); do
		run --separate-stderr rlock -u "$C2_URL" status "job-$n"
		assert_success
		assert_output --regexp "^job-$n: held by .+ fence [0-9]+\$"
	done
	for ((n = 1; n <= 30; n++)); do
		name="job-$n"
		run --separate-stderr rlock -u "$C3_URL" release --token "${toks[$name]}" "$name"
		assert_success
		assert_equal "$stderr" ""
		assert_equal "$(ckey_on "$(owner_of "$name")" "rlock:{$name}")" 0
	done
}

@test "cluster: all keys of a lock live in one slot on one node" {
	local tok name=deploy owner slot k keys
	owner=$(owner_of "$name")
	slot=$(slot_of "$name")
	# Held: the lock, its fence, its metadata and its history.
	tok=$(rlock -u "$C1_URL" acquire "$name")
	keys=$(ccli "$owner" KEYS '*' | sort)
	assert_equal "$keys" "$(printf '%s\n' "rlock:{$name}" "rlock:{$name}:fence" "rlock:{$name}:log" | sort)"
	# Released: whatever the release leaves (the fence, a wake-up) too.
	rlock -u "$C2_URL" release --token "$tok" "$name"
	keys+=$'\n'$(ccli "$owner" KEYS '*')
	[[ "$keys" == *"rlock:{$name}:fence"* ]] || fail "no fence key after the release"
	while read -r k; do
		[[ -n "$k" ]] || continue
		assert_equal "$(slot_of "$k")" "$slot"
	done <<<"$keys"
	local n
	for n in 1 2 3; do
		[[ "$n" == "$owner" ]] && continue
		assert_equal "$(ccli "$n" DBSIZE)" 0
	done
}

@test "cluster: exec works through any node, with its heartbeat following MOVED" {
	local i via name owner
	for via in 1 2 3; do
		# A lock served by another node than the one named in the URL.
		name=$(name_on_node $(((via % 3) + 1)) "ex$via")
		owner=$(owner_of "$name")
		[[ "$owner" != "$via" ]] || fail "setup: $name is on node $via"
		local urlv="C${via}_URL"
		rm -f token
		run --separate-stderr rlock -u "${!urlv}" exec -t 1s "$name" -- \
			sh -c 'echo "$RLOCK_TOKEN" > token; sleep 1.6'
		assert_success
		assert_equal "$stderr" ""
		[[ -s token ]] || fail "the command did not run"
		assert_equal "$(ckey_on "$owner" "rlock:{$name}")" 0
		assert_equal "$(ckey_on "$owner" "rlock:{$name}:fence")" 1
	done

	# While it runs, past its TTL, the key is on its node with the child's token.
	name=$(name_on_node 3 held)
	local ex
	bg_start ex "$RLOCK" -u "$C1_URL" exec -t 1s "$name" -- sh -c 'echo "$RLOCK_TOKEN" > token2; sleep 2.5'
	wait_file token2 5000 || fail "the command did not start: $(cat ex.err)"
	sleep 1.5
	assert_equal "$(ccli 3 HKEYS "rlock:{$name}")" "$(cat token2)"
	bg_wait "$ex" 10000 || fail "exec did not finish"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(ckey_on 3 "rlock:{$name}")" 0
}

@test "cluster: status with no NAME via one node lists the locks living on every node" {
	local n1 n2 n3
	n1=$(name_on_node 1 a)
	n2=$(name_on_node 2 b)
	n3=$(name_on_node 3 c)
	rlock -u "$C2_URL" acquire "$n1" >/dev/null
	rlock -u "$C2_URL" acquire "$n2" >/dev/null
	rlock -u "$C2_URL" acquire "$n3" >/dev/null
	assert_equal "$(ckey_on 1 "rlock:{$n1}")" 1
	assert_equal "$(ckey_on 2 "rlock:{$n2}")" 1
	assert_equal "$(ckey_on 3 "rlock:{$n3}")" 1

	run --separate-stderr rlock -u "$C1_URL" status
	assert_success
	assert_equal "${#lines[@]}" 3
	assert_line --regexp "^$n1: held by "
	assert_line --regexp "^$n2: held by "
	assert_line --regexp "^$n3: held by "

	run --separate-stderr rlock -u "$C3_URL" --json status
	assert_success
	json_check 'sorted(x["name"] for x in d) == sorted(["'"$n1"'", "'"$n2"'", "'"$n3"'"]) and all(x["held"] for x in d)' <<<"$output"
}

@test "cluster: fences increase per name whichever node is asked" {
	local a b i via f prev=0 out tok
	a=$(name_on_node 2 fa)
	b=$(name_on_node 3 fb)
	for i in 1 2 3 4; do
		via=$(((i % 3) + 1))
		local urlv="C${via}_URL"
		out=$(rlock -u "${!urlv}" --json acquire "$a")
		f=$(json_eval 'd["fence"]' <<<"$out")
		tok=$(json_eval 'd["token"]' <<<"$out" | tr -d '"')
		((f > prev)) || fail "fence of acquire $i: $f, not above $prev"
		prev=$f
		rlock -u "${!urlv}" release --token "$tok" "$a"
	done
	assert_equal "$(ccli 2 GET "rlock:{$a}:fence")" "$prev"
	# Another name has a counter of its own, on its own node.
	ccli 2 SET "rlock:{$a}:fence" 8000000000000000 >/dev/null
	out=$(rlock -u "$C1_URL" --json acquire "$b")
	f=$(json_eval 'd["fence"]' <<<"$out")
	assert_between "$f" 1 7999999999999999 "fence of $b"
	assert_equal "$(ccli 3 GET "rlock:{$b}:fence")" "$f"
}

@test "cluster: history lives in the lock's slot; log and watch work through any node" {
	local a b
	a=$(name_on_node 2 ha)
	b=$(name_on_node 3 hb)
	rlock -u "$C1_URL" exec "$a" -- true
	rlock -u "$C1_URL" exec "$b" -- true
	assert_equal "$(ckey_on 2 "rlock:{$a}:log")" 1
	assert_equal "$(ckey_on 3 "rlock:{$b}:log")" 1
	run --separate-stderr rlock -u "$C1_URL" log
	assert_success
	assert_equal "${#lines[@]}" 4
	run --separate-stderr rlock -u "$C3_URL" log "$a"
	assert_success
	assert_line --index 0 --regexp " $a released by .*: exit 0, fence "
	# One name at a time; several in different slots are refused.
	bg_start WATCH "$RLOCK" -u "$C1_URL" watch "$a"
	local i
	for ((i = 0; i < 500; i++)); do
		ccli 2 CLIENT LIST | grep -q 'cmd=xread' && break
		sleep 0.01
	done
	rlock -u "$C3_URL" exec "$a" -- true
	for ((i = 0; i < 500; i++)); do
		(( $(wc -l <WATCH.out) >= 2 )) && break
		sleep 0.01
	done
	run cat WATCH.out
	assert_line --index 1 --regexp " $a released by "
	kill -TERM "$WATCH"
	run --separate-stderr timeout 10 "$RLOCK" -u "$C1_URL" watch "$a" "$b"
	assert_equal "$status" 64
	[[ "$stderr" == *"watch one name at a time"* ]] || fail "stderr: $stderr"
}

@test "cluster: a listing inspects the locks of each master in one call, not one a lock" {
	local n
	for ((n = 1; n <= 30; n++)); do
		rlock -u "$C1_URL" acquire -t 60s "many-$n" >/dev/null
	done
	local i
	for i in 1 2 3; do ccli "$i" CONFIG RESETSTAT >/dev/null; done
	run --separate-stderr rlock -u "$C1_URL" status
	assert_success
	assert_equal "${#lines[@]}" 30
	# One try of all at once (refused: several slots), then one call on
	# each master, side by side.
	local calls=0 c
	for i in 1 2 3; do
		c=$(ccli "$i" INFO commandstats | tr -d '\r' |
			sed -n 's/^cmdstat_\(eval\|evalsha\):calls=\([0-9]*\),.*/\2/p' |
			awk '{ s += $1 } END { print s + 0 }')
		calls=$((calls + c))
	done
	assert_between "$calls" 3 5 "script calls for 30 locks on 3 masters"
	run --separate-stderr rlock -u "$C2_URL" --json status many-1 many-2 many-3 many-4
	assert_success
	json_check 'len(d) == 4 and all(x["held"] for x in d)' <<<"$output"
}

@test "cluster: log of locks on every master reads each master once, side by side" {
	local n
	for ((n = 1; n <= 12; n++)); do
		rlock -u "$C1_URL" exec "hist-$n" -- true
	done
	local i
	for i in 1 2 3; do ccli "$i" CONFIG RESETSTAT >/dev/null; done
	run --separate-stderr rlock -u "$C2_URL" log
	assert_success
	assert_equal "${#lines[@]}" 24
	local calls=0 c
	for i in 1 2 3; do
		c=$(ccli "$i" INFO commandstats | tr -d '\r' |
			sed -n 's/^cmdstat_\(eval\|evalsha\):calls=\([0-9]*\),.*/\2/p' |
			awk '{ s += $1 } END { print s + 0 }')
		calls=$((calls + c))
	done
	assert_between "$calls" 3 5 "script calls for 12 histories on 3 masters"
	run --separate-stderr rlock -u "$C3_URL" --json log hist-1 hist-2
	assert_success
	assert_equal "${#lines[@]}" 4
}

# tryagain_count N: how many TRYAGAIN replies node N has given.
tryagain_count() {
	local v
	v=$(ccli "$1" INFO errorstats | tr -d '\r' | sed -n 's/^errorstat_TRYAGAIN:count=//p')
	echo "${v:-0}"
}

@test "cluster: while a lock's slot moves to a node that never ran rlock's scripts, log reads it there (ASKING before the EVAL too), a change waits for the move (never run on half-moved keys), then goes through" {
	local name a b slot aid bid t k keys=() i before
	name=$(name_on_node 1 ask)
	a=1 b=2
	slot=$(slot_of "rlock:{$name}")
	t=$(rlock -u "$C1_URL" acquire -t 60s "$name")
	ccli $b SCRIPT FLUSH >/dev/null
	aid=$(ccli $a CLUSTER MYID) bid=$(ccli $b CLUSTER MYID)
	ccli $b CLUSTER SETSLOT "$slot" IMPORTING "$aid" >/dev/null
	ccli $a CLUSTER SETSLOT "$slot" MIGRATING "$bid" >/dev/null
	while read -r k; do
		[[ -n $k ]] && keys+=("$k")
	done < <(ccli $a CLUSTER GETKEYSINSLOT "$slot" 100)
	ccli $a MIGRATE 127.0.0.1 "$C2_PORT" "" 0 5000 KEYS "${keys[@]}" >/dev/null
	[[ $(ccli $a EXISTS "rlock:{$name}") == ASK* ]]
	# A read goes to node 1, is asked to node 2, which has no script yet:
	# ASKING goes before the EVALSHA and before the EVAL after NOSCRIPT.
	run --separate-stderr rlock -u "$C1_URL" log "$name"
	assert_success
	assert_output --partial acquired
	refute_output --partial ASK
	# A change declares a key that is never written: refused (TRYAGAIN)
	# while the slot is half-moved, sent again within --timeout, then one
	# line in words.
	run --separate-stderr rlock -u "$C1_URL" --timeout 1s extend --token "$t" -t 60s "$name"
	assert_failure 69
	[[ $stderr == *"moving between nodes"* ]] || fail "not in words: $stderr"
	[[ $stderr != *"TRYAGAIN "* && $stderr != *"ASK "* ]] || fail "raw: $stderr"
	# One started during the move goes through once the move is done.
	before=$(tryagain_count $b)
	bg_start X "$RLOCK" -u "$C1_URL" --timeout 20s extend --token "$t" -t 60s "$name"
	for i in $(seq 1 200); do
		(( $(tryagain_count $b) > before )) && break
		sleep 0.05
	done
	(( $(tryagain_count $b) > before )) || fail "the extend was not refused by node 2"
	for i in 1 2 3; do
		ccli $i CLUSTER SETSLOT "$slot" NODE "$bid" >/dev/null
	done
	bg_wait "$X" 20000
	assert_equal "$BG_STATUS" 0
	[ "$(ccli $b PTTL "rlock:{$name}")" -gt 30000 ]
	run --separate-stderr rlock -u "$C3_URL" release --token "$t" "$name"
	assert_success
	assert_equal "$(ccli $b EXISTS "rlock:{$name}")" 0
}
