#!/usr/bin/env bats
# limit.bats: --limit N makes a lock a semaphore: never more than N holders,
# each with its own token, TTL, fence and metadata; a crashed holder frees
# its slot after its TTL; limits are never mixed on one name; quorum mode
# refuses it.

load helpers
setup() { own_server_setup; }
teardown() { test_teardown; }

@test "limit: 8 workers under --limit 3 never overlap more than 3, and 3 do overlap" {
	local w k
	for ((w = 1; w <= 8; w++)); do
		bg_start "W$w" bash -c '
			for ((k = 0; k < 6; k++)); do
				"$0" exec --limit 3 -w 60s sem -- sh -c \
					"echo \"\$(date +%s%N) +\" >>sections.log; sleep 0.15; echo \"\$(date +%s%N) -\" >>sections.log" || exit 1
			done' "$RLOCK"
	done
	for ((w = 1; w <= 8; w++)); do
		k="W$w"
		bg_wait "${!k}" 120000 || fail "worker $w is still running"
		assert_equal "$BG_STATUS" 0
	done
	# Sweep the starts and ends in time order: the most inside at once.
	run /usr/bin/python3 -c '
ev = sorted((int(t), 1 if s == "+" else -1) for t, s in (l.split() for l in open("sections.log")))
now = most = 0
for _, d in sorted(ev, key=lambda e: (e[0], e[1])):
    now += d
    most = max(most, now)
print(len(ev) // 2, most)'
	assert_output "48 3"
	assert_equal "$(rcli EXISTS 'rlock:{sem}')" 0
}

@test "limit: each holder has its own token and fence; status shows N of M held; release and extend are per token" {
	local a b c
	a=$(rlock acquire --limit 2 -t 20s sem)
	b=$(rlock acquire --limit 2 -t 20s sem)
	[[ "$a" != "$b" ]] || fail "the same token twice"
	run rlock acquire --limit 2 -n sem
	assert_failure 1
	run rlock status sem
	assert_success
	assert_line --index 0 "sem: 2 of 2 held"
	assert_equal "${#lines[@]}" 3
	rlock --json status sem | json_check 'd["held"] and d["limit"] == 2 and len(d["holders"]) == 2 and d["holders"][0]["fence"] < d["holders"][1]["fence"]'
	run rlock extend --token "$a" -t 30s sem
	assert_success
	run rlock release --token not-a-holder sem
	assert_failure 1
	run rlock release --token "$a" sem
	assert_success
	run rlock status sem
	assert_line --index 0 "sem: 1 of 2 held"
	c=$(rlock acquire --limit 2 -n sem)
	[[ -n "$c" ]] || fail "the freed slot was not taken"
	rlock release --token "$b" sem
	rlock release --token "$c" sem
	run rlock status sem
	assert_failure 1
	assert_equal "$(rcli EXISTS 'rlock:{sem}')" 0
}

@test "limit: a SIGKILLed holder's slot frees itself after its TTL" {
	rlock acquire --limit 2 -t 30s sem >/dev/null
	bg_start H "$RLOCK" exec --limit 2 -t 1s sem -- sleep 30
	local i
	for ((i = 0; i < 500; i++)); do
		[[ "$(rlock status sem | head -1)" == "sem: 2 of 2 held" ]] && break
		sleep 0.02
	done
	kill -KILL "$H"
	bg_wait "$H" 5000
	local t0
	t0=$(now_ms)
	run rlock acquire --limit 2 -w 10s sem
	assert_success
	assert_between $(($(now_ms) - t0)) 0 5000 ms_until_the_slot_was_free
}

@test "limit: mixed limits on one name are refused with 64, and nothing changes" {
	rlock acquire --limit 2 -t 20s sem >/dev/null
	run --separate-stderr rlock acquire --limit 3 -n sem
	assert_equal "$status" 64
	[[ "$stderr" == *"sem is held with --limit 2, and this asks with --limit 3"* ]] || fail "stderr: $stderr"
	run --separate-stderr rlock acquire -n sem
	assert_equal "$status" 64
	run --separate-stderr rlock exec -n sem -- true
	assert_equal "$status" 64
	rlock acquire -t 20s plain >/dev/null
	run --separate-stderr rlock acquire --limit 2 -n plain
	assert_equal "$status" 64
	[[ "$stderr" == *"plain is held with no --limit"* ]] || fail "stderr: $stderr"
	assert_equal "$(rcli KEYS 'rlock:{plain}:holder*')" ""
}

@test "limit: quorum mode refuses --limit 2 with 64, before anything is sent" {
	start_quorum 3
	quorum_urls
	run --separate-stderr rlock "${URLS[@]}" acquire --limit 2 sem
	assert_equal "$status" 64
	[[ "$stderr" == *"quorum mode"* ]] || fail "stderr: $stderr"
	run --separate-stderr rlock "${URLS[@]}" exec --limit 1 sem -- true
	assert_success
	run --separate-stderr rlock acquire --limit 0 sem
	assert_equal "$status" 64
}

@test "limit: the listing shows a semaphore beside plain locks" {
	rlock acquire --limit 3 -t 20s sem >/dev/null
	rlock acquire -t 20s plain >/dev/null
	run rlock status
	assert_success
	assert_line --index 0 --regexp '^plain: held by '
	assert_line --regexp '^sem: 1 of 3 held$'
}
