#!/usr/bin/env bats
# status.bats: who holds what: one line per name, exit codes, the listing,
# --json, and the token never shown.

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { default_setup; }
teardown() { cleanup_test; }

@test "status: a held lock prints one line with holder, pid, expiry and fence, exit 0" {
	local t fence
	t=$(rlock acquire job)
	fence=$(rcli GET 'rlock:{job}:fence')
	run --separate-stderr rlock status job
	assert_success
	assert_equal "${#lines[@]}" 1
	assert_equal "$stderr" ""
	assert_output --regexp "^job: held by $(id -un)@$(hostname) pid [0-9]+ "
	assert_output --partial "expires in "
	assert_output --regexp ", fence $fence\$"
	refute_contains "$t" "$output"
}

@test "status: the held line has the documented shape" {
	rlock acquire -t 20s job >/dev/null
	run --separate-stderr rlock status job
	assert_success
	assert_output --regexp "^job: held by [^ ]+@[^ ]+ pid [0-9]+ for [^,]+, expires in [^,]+, fence [0-9]+\$"
}

@test "status: the held line shows the holder's pid" {
	local shell_pid
	shell_pid=$(bash -c '"$1" acquire job >/dev/null; echo $$' _ "$RLOCK")
	run --separate-stderr rlock status job
	assert_success
	assert_output --partial " pid $shell_pid "
}

@test "status: a free lock prints 'NAME: free' and exits 1 with nothing on stderr" {
	run --separate-stderr rlock status job
	assert_equal "$status" 1
	assert_output "job: free"
	assert_equal "$stderr" ""
}

@test "status: a released lock shows the last fence" {
	local t f
	t=$(rlock acquire job)
	f=$(rcli GET 'rlock:{job}:fence')
	rlock release --token "$t" job
	run --separate-stderr rlock status job
	assert_equal "$status" 1
	assert_output "job: free, last fence $f"
}

@test "status: an expired lock is free" {
	rlock acquire -t 200ms job >/dev/null
	sleep 0.5
	run --separate-stderr rlock status job
	assert_equal "$status" 1
	assert_output --regexp "^job: free"
}

@test "status: several held names exit 0 with one line each, in order" {
	rlock acquire b >/dev/null
	rlock acquire a >/dev/null
	run --separate-stderr rlock status b a
	assert_success
	assert_equal "${#lines[@]}" 2
	[[ "${lines[0]}" == "b: held by "* ]] || fail "line 0: ${lines[0]}"
	[[ "${lines[1]}" == "a: held by "* ]] || fail "line 1: ${lines[1]}"
}

@test "status: one free name among several makes the exit 1" {
	rlock acquire a >/dev/null
	run --separate-stderr rlock status a b
	assert_equal "$status" 1
	assert_equal "${#lines[@]}" 2
	[[ "${lines[0]}" == "a: held by "* ]] || fail "line 0: ${lines[0]}"
	assert_equal "${lines[1]}" "b: free"
	run --separate-stderr rlock status b a
	assert_equal "$status" 1
}

@test "status: the listing shows only held locks, sorted by name" {
	local t
	rlock acquire gamma >/dev/null
	rlock acquire alpha >/dev/null
	rlock acquire beta >/dev/null
	# A released lock leaves its fence counter behind: not a lock.
	t=$(rlock acquire delta)
	rlock release --token "$t" delta
	# An expired one leaves its fence too.
	rlock acquire -t 100ms epsilon >/dev/null
	# Locks under another prefix are not listed.
	rlock --prefix other: acquire zeta >/dev/null
	sleep 0.3
	run --separate-stderr rlock status
	assert_success
	assert_equal "${#lines[@]}" 3
	[[ "${lines[0]}" == "alpha: held by "* ]] || fail "line 0: ${lines[0]}"
	[[ "${lines[1]}" == "beta: held by "* ]] || fail "line 1: ${lines[1]}"
	[[ "${lines[2]}" == "gamma: held by "* ]] || fail "line 2: ${lines[2]}"
}

@test "status: the listing with --prefix shows only that prefix's locks" {
	rlock acquire alpha >/dev/null
	rlock --prefix other: acquire zeta >/dev/null
	rlock --prefix other: acquire eta >/dev/null
	run --separate-stderr rlock --prefix other: status
	assert_success
	assert_equal "${#lines[@]}" 2
	[[ "${lines[0]}" == "eta: held by "* ]] || fail "line 0: ${lines[0]}"
	[[ "${lines[1]}" == "zeta: held by "* ]] || fail "line 1: ${lines[1]}"
}

@test "status: the listing honours RLOCK_PREFIX" {
	rlock acquire alpha >/dev/null
	RLOCK_PREFIX=env: rlock acquire beta >/dev/null
	RLOCK_PREFIX=env: run --separate-stderr rlock status
	assert_success
	assert_equal "${#lines[@]}" 1
	[[ "${lines[0]}" == "beta: held by "* ]] || fail "line 0: ${lines[0]}"
}

@test "status: the listing finds every lock among many keys" {
	local i
	for i in $(seq -w 1 40); do
		rlock acquire "lock$i" >/dev/null
	done
	# Unrelated keys as well, so that SCAN has to page.
	for i in $(seq 1 60); do
		rcli SET "unrelated:$i" x >/dev/null
	done
	run --separate-stderr rlock status
	assert_success
	assert_equal "${#lines[@]}" 40
	assert_equal "${lines[0]%%:*}" lock01
	assert_equal "${lines[39]%%:*}" lock40
}

@test "status: an empty listing prints nothing and exits 0" {
	run --separate-stderr rlock status
	assert_success
	assert_output ""
	assert_equal "$stderr" ""
}

@test "status: a listing with only leftover fences prints nothing and exits 0" {
	local t
	t=$(rlock acquire job)
	rlock release --token "$t" job
	run --separate-stderr rlock status
	assert_success
	assert_output ""
}

@test "status: --json prints one object for one held name" {
	local t fence before after
	before=$(now_ms)
	t=$(rlock acquire -t 20s job)
	after=$(now_ms)
	fence=$(rcli GET 'rlock:{job}:fence')
	run --separate-stderr rlock --json status job
	assert_success
	json_check 'isinstance(d, dict)' <<<"$output"
	json_check 'd["name"] == "job" and d["held"] is True' <<<"$output"
	json_check "d['fence'] == $fence" <<<"$output"
	json_check "d['host'] == '$(hostname)' and d['user'] == '$(id -un)'" <<<"$output"
	json_check 'type(d["pid"]) is int and d["pid"] > 0' <<<"$output"
	json_check 'd["command"] in (None, "")' <<<"$output"
	json_check 'd["ttl_ms"] == 20000' <<<"$output"
	json_check '0 < d["expires_in_ms"] <= 20000 and 0 <= d["held_ms"] <= 20000' <<<"$output"
	json_check "$((before - 5000)) <= d['acquired_ms'] <= $((after + 5000))" <<<"$output"
	json_check '"token" not in d' <<<"$output"
	refute_contains "$t" "$output"
}

@test "status: --json for a free name is held false with the fence, exit 1" {
	run --separate-stderr rlock status --json job
	assert_equal "$status" 1
	json_check 'd == {"name": "job", "held": False, "fence": 0}' <<<"$output"
	local t f
	t=$(rlock acquire job)
	f=$(rcli GET 'rlock:{job}:fence')
	rlock release --token "$t" job
	run --separate-stderr rlock status --json job
	assert_equal "$status" 1
	json_check "d == {'name': 'job', 'held': False, 'fence': $f}" <<<"$output"
}

@test "status: --json for several names prints an array" {
	rlock acquire a >/dev/null
	run --separate-stderr rlock --json status a b
	assert_equal "$status" 1
	json_check 'isinstance(d, list) and len(d) == 2' <<<"$output"
	json_check 'd[0]["name"] == "a" and d[0]["held"] is True' <<<"$output"
	json_check 'd[1]["name"] == "b" and d[1]["held"] is False' <<<"$output"
}

@test "status: --json listing prints a sorted array of held locks" {
	local t
	rlock acquire b >/dev/null
	rlock acquire a >/dev/null
	t=$(rlock acquire c)
	rlock release --token "$t" c
	run --separate-stderr rlock --json status
	assert_success
	json_check '[x["name"] for x in d] == ["a", "b"]' <<<"$output"
	json_check 'all(x["held"] is True for x in d)' <<<"$output"
}

@test "status: --json listing with no locks prints []" {
	run --separate-stderr rlock --json status
	assert_success
	json_check 'd == []' <<<"$output"
}

@test "status: the token never appears, in text or JSON, single or listing" {
	local t
	t=$(rlock acquire --token SECRET-TOKEN-42 job)
	run --separate-stderr rlock status job
	refute_contains SECRET-TOKEN-42 "$output$stderr"
	run --separate-stderr rlock status
	refute_contains SECRET-TOKEN-42 "$output$stderr"
	run --separate-stderr rlock --json status job
	refute_contains SECRET-TOKEN-42 "$output$stderr"
	run --separate-stderr rlock --json status
	refute_contains SECRET-TOKEN-42 "$output$stderr"
}

@test "status: changes nothing in Redis" {
	local t before
	t=$(rlock acquire -t 10s job)
	before=$(rcli GET 'rlock:{job}:fence')
	rlock status job >/dev/null
	rlock status >/dev/null
	rlock status free-one >/dev/null || true
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t"
	assert_equal "$(rcli GET 'rlock:{job}:fence')" "$before"
	assert_equal "$(rcli EXISTS 'rlock:{free-one}')" 0
	assert_equal "$(rcli EXISTS 'rlock:{free-one}:fence')" 0
}

@test "status: ten names take one script call, a listing of 1,100 locks two, after its SCANs" {
	local i
	for ((i = 1; i <= 1100; i++)); do
		echo "HSET rlock:{l$i} t '{\"k\":\"x\",\"e\":99999999999999,\"f\":\"1\"}'"
		echo "PEXPIRE rlock:{l$i} 60000"
	done | rcli --pipe >/dev/null
	# Once, so that the script is cached (NOSCRIPT + EVAL otherwise).
	rlock status l1 >/dev/null
	rcli CONFIG RESETSTAT >/dev/null
	run --separate-stderr rlock status l1 l2 l3 l4 l5 l6 l7 l8 l9 l10
	assert_success
	assert_equal "${#lines[@]}" 10
	assert_equal "$(cmd_calls evalsha eval)" 1
	rcli CONFIG RESETSTAT >/dev/null
	run --separate-stderr rlock --json status
	assert_success
	json_check 'len(d) == 1100' <<<"$output"
	# 1,000 locks a call: two calls for 1,100, however many SCAN pages.
	assert_equal "$(cmd_calls evalsha eval)" 2
	(( $(cmd_calls scan) >= 1 )) || fail "no SCAN"
}
