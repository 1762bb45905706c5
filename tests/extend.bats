#!/usr/bin/env bats
# extend.bats: pushing a lock's expiry out: owner only, default and explicit
# TTL, fence and metadata kept.

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { default_setup; }
teardown() { cleanup_test; }

@test "extend: pushes the expiry out, silently" {
	local t
	t=$(rlock acquire -t 2s job)
	sleep 1
	run --separate-stderr rlock extend --token "$t" job
	assert_success
	assert_output ""
	assert_equal "$stderr" ""
	assert_between "$(rcli PTTL 'rlock:{job}')" 1501 2000 PTTL
}

@test "extend: RLOCK_TOKEN is used when --token is not given" {
	local t
	t=$(rlock acquire -t 2s job)
	sleep 1
	RLOCK_TOKEN=$t run --separate-stderr rlock extend job
	assert_success
	assert_between "$(rcli PTTL 'rlock:{job}')" 1501 2000 PTTL
}

@test "extend: the default is the TTL the lock was acquired with" {
	local t
	t=$(rlock acquire -t 4s job)
	sleep 1.2
	run --separate-stderr rlock extend --token "$t" job
	assert_success
	# Not the 2.8 s left, not the 30 s default: 4 s from now.
	assert_between "$(rcli PTTL 'rlock:{job}')" 3500 4000 PTTL
}

@test "extend: -t sets the new TTL counted from now" {
	local t
	t=$(rlock acquire -t 5s job)
	run --separate-stderr rlock extend -t 20s --token "$t" job
	assert_success
	assert_between "$(rcli PTTL 'rlock:{job}')" 18000 20000 PTTL
	run --separate-stderr rlock extend --ttl=500ms --token "$t" job
	assert_success
	assert_between "$(rcli PTTL 'rlock:{job}')" 1 500 PTTL
}

@test "extend: the lock key follows the new expiry" {
	local t
	t=$(rlock acquire -t 2s job)
	run --separate-stderr rlock extend -t 20s --token "$t" job
	assert_success
	assert_between "$(rcli PTTL 'rlock:{job}')" 18000 20000 "info PTTL"
}

@test "extend: after extending, the lock outlives its first TTL" {
	local t
	t=$(rlock acquire -t 600ms job)
	rlock extend -t 3s --token "$t" job
	sleep 1
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t"
	run --separate-stderr rlock acquire -n job
	assert_equal "$status" 1
}

@test "extend: a wrong token exits 1 and leaves the PTTL alone" {
	local t
	t=$(rlock acquire -t 5s job)
	run --separate-stderr rlock extend -t 60s --token wrong job
	assert_equal "$status" 1
	assert_output ""
	assert_one_error_line
	[[ "$stderr" == *"not the holder"* ]] || fail "stderr: $stderr"
	assert_between "$(rcli PTTL 'rlock:{job}')" 1 5000 PTTL
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t"
}

@test "extend: an expired lock exits 1 and is not brought back" {
	local t
	t=$(rlock acquire -t 200ms job)
	sleep 0.5
	run --separate-stderr rlock extend --token "$t" job
	assert_equal "$status" 1
	[[ "$stderr" == *"not the holder"* ]] || fail "stderr: $stderr"
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "extend: a lock that was never taken exits 1" {
	run --separate-stderr rlock extend --token whatever job
	assert_equal "$status" 1
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "extend: someone else's lock exits 1 and stays theirs" {
	local t1 t2
	t1=$(rlock acquire -t 200ms job)
	sleep 0.5
	t2=$(rlock acquire -t 5s job)
	run --separate-stderr rlock extend -t 60s --token "$t1" job
	assert_equal "$status" 1
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t2"
	assert_between "$(rcli PTTL 'rlock:{job}')" 1 5000 PTTL
}

@test "extend: the fence is unchanged" {
	local t f
	run --separate-stderr rlock --json acquire job
	t=$(json_eval 'd["token"]' <<<"$output")
	t=${t//\"/}
	f=$(json_eval 'd["fence"]' <<<"$output")
	run --separate-stderr rlock extend --token "$t" job
	assert_success
	run --separate-stderr rlock extend -t 10s --token "$t" job
	assert_success
	assert_equal "$(rcli GET 'rlock:{job}:fence')" "$f"
	assert_equal "$(info_field 'rlock:{job}' fence)" "$f"
}

@test "extend: the token and holder metadata are unchanged" {
	local t pid host
	t=$(rlock acquire job)
	pid=$(info_field 'rlock:{job}' pid)
	host=$(info_field 'rlock:{job}' host)
	rlock extend -t 10s --token "$t" job
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t"
	assert_equal "$(info_field 'rlock:{job}' pid)" "$pid"
	assert_equal "$(info_field 'rlock:{job}' host)" "$host"
}

@test "extend: without a token exits 64 and leaves the lock alone" {
	local t
	t=$(rlock acquire -t 5s job)
	run --separate-stderr rlock extend -t 60s job
	assert_equal "$status" 64
	assert_one_error_line
	assert_between "$(rcli PTTL 'rlock:{job}')" 1 5000 PTTL
}

@test "extend: --prefix selects which lock is extended" {
	local t
	t=$(rlock --prefix p: acquire -t 2s job)
	run --separate-stderr rlock extend -t 20s --token "$t" job
	assert_equal "$status" 1
	run --separate-stderr rlock --prefix p: extend -t 20s --token "$t" job
	assert_success
	assert_between "$(rcli PTTL 'p:{job}')" 18000 20000 PTTL
}
