#!/usr/bin/env bats
# release.bats: giving a lock back: owner only, tokens from the flag or the
# environment, --force, and script reloading after SCRIPT FLUSH.

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { default_setup; }
teardown() { cleanup_test; }

@test "release: --token frees the lock silently" {
	local t
	t=$(rlock acquire job)
	run --separate-stderr rlock release --token "$t" job
	assert_success
	assert_output ""
	assert_equal "$stderr" ""
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	run --separate-stderr rlock acquire -n job
	assert_success
}

@test "release: --token=VALUE works" {
	local t
	t=$(rlock acquire job)
	run --separate-stderr rlock release --token="$t" job
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "release: RLOCK_TOKEN frees the lock" {
	local t
	t=$(rlock acquire job)
	RLOCK_TOKEN=$t run --separate-stderr rlock release job
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "release: --token beats RLOCK_TOKEN" {
	local t
	t=$(rlock acquire job)
	RLOCK_TOKEN=wrong run --separate-stderr rlock release --token "$t" job
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "release: the metadata goes with the lock and the fence stays" {
	local t f
	t=$(rlock acquire job)
	f=$(rcli GET 'rlock:{job}:fence')
	rlock release --token "$t" job
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	assert_equal "$(rcli GET 'rlock:{job}:fence')" "$f"
}

@test "release: a wrong token exits 1 and keeps the lock" {
	local t
	t=$(rlock acquire job)
	run --separate-stderr rlock release --token not-the-token job
	assert_equal "$status" 1
	assert_output ""
	assert_one_error_line
	[[ "$stderr" == *"not the holder"* ]] || fail "stderr: $stderr"
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t"
	assert_equal "$(info_field 'rlock:{job}' token)" "$t"
	assert_between "$(rcli PTTL 'rlock:{job}')" 20000 30000 PTTL
}

@test "release: a wrong RLOCK_TOKEN exits 1 and keeps the lock" {
	local t
	t=$(rlock acquire job)
	RLOCK_TOKEN=nope run --separate-stderr rlock release job
	assert_equal "$status" 1
	[[ "$stderr" == *"not the holder"* ]] || fail "stderr: $stderr"
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t"
}

@test "release: an expired lock exits 1 with 'not the holder'" {
	local t
	t=$(rlock acquire -t 200ms job)
	sleep 0.5
	run --separate-stderr rlock release --token "$t" job
	assert_equal "$status" 1
	[[ "$stderr" == *"not the holder"* ]] || fail "stderr: $stderr"
}

@test "release: an expired lock taken over by someone else stays theirs" {
	local t1 t2
	t1=$(rlock acquire -t 200ms job)
	sleep 0.5
	t2=$(rlock acquire -n job)
	run --separate-stderr rlock release --token "$t1" job
	assert_equal "$status" 1
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t2"
}

@test "release: a lock that was never taken exits 1" {
	run --separate-stderr rlock release --token whatever job
	assert_equal "$status" 1
	[[ "$stderr" == *"not the holder"* ]] || fail "stderr: $stderr"
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "release: releasing twice exits 1 the second time" {
	local t
	t=$(rlock acquire job)
	run --separate-stderr rlock release --token "$t" job
	assert_success
	run --separate-stderr rlock release --token "$t" job
	assert_equal "$status" 1
}

@test "release: without a token exits 64 and keeps the lock" {
	local t
	t=$(rlock acquire job)
	run --separate-stderr rlock release job
	assert_equal "$status" 64
	assert_one_error_line
	[[ "$stderr" == *--token* && "$stderr" == *RLOCK_TOKEN* ]] || fail "stderr: $stderr"
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t"
}

@test "release: --force removes someone else's lock and prints the holder" {
	local t fence
	t=$(rlock acquire job)
	fence=$(rcli GET 'rlock:{job}:fence')
	run --separate-stderr rlock release --force job
	assert_success
	assert_equal "${#lines[@]}" 1
	assert_output --partial "removed job: held by $(id -un)@$(hostname) pid "
	assert_output --partial "fence $fence"
	refute_contains "$t" "$output$stderr"
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	run --separate-stderr rlock acquire -n job
	assert_success
}

@test "release: --force ignores RLOCK_TOKEN" {
	rlock acquire job >/dev/null
	RLOCK_TOKEN=unrelated run --separate-stderr rlock release --force job
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "release: --force on a free lock exits 1 with 'not held'" {
	run --separate-stderr rlock release --force job
	assert_equal "$status" 1
	assert_output ""
	assert_one_error_line
	[[ "$stderr" == *"not held"* ]] || fail "stderr: $stderr"
}

@test "release: --force keeps the fence counter" {
	local f
	rlock acquire job >/dev/null
	f=$(rcli GET 'rlock:{job}:fence')
	rlock release --force job >/dev/null
	assert_equal "$(rcli GET 'rlock:{job}:fence')" "$f"
	run --separate-stderr rlock --json acquire job
	json_check "d['fence'] > $f" <<<"$output"
}

@test "release: --prefix selects which lock is released" {
	local ta tb
	ta=$(rlock --prefix a: acquire job)
	tb=$(rlock --prefix b: acquire job)
	run --separate-stderr rlock --prefix a: release --token "$tb" job
	assert_equal "$status" 1
	run --separate-stderr rlock --prefix b: release --token "$tb" job
	assert_success
	assert_equal "$(rcli HKEYS 'a:{job}')" "$ta"
	assert_equal "$(rcli EXISTS 'b:{job}')" 0
}

@test "release: works after SCRIPT FLUSH between acquire and release" {
	local t
	t=$(rlock acquire job)
	rcli SCRIPT FLUSH >/dev/null
	run --separate-stderr rlock release --token "$t" job
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "release: --force works after SCRIPT FLUSH" {
	rlock acquire job >/dev/null
	rcli SCRIPT FLUSH >/dev/null
	run --separate-stderr rlock release --force job
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "release: a wrong token is still refused after SCRIPT FLUSH" {
	local t
	t=$(rlock acquire job)
	rcli SCRIPT FLUSH >/dev/null
	run --separate-stderr rlock release --token wrong job
	assert_equal "$status" 1
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t"
}

@test "release: acquire works after SCRIPT FLUSH" {
	local t f
	t=$(rlock acquire one)
	f=$(rcli GET 'rlock:{one}:fence')
	rlock release --token "$t" one
	rcli SCRIPT FLUSH >/dev/null
	run --separate-stderr rlock --json acquire one
	assert_success
	json_check "d['fence'] > $f" <<<"$output"
	run --separate-stderr rlock acquire -n one
	assert_equal "$status" 1
}

@test "release: extend works after SCRIPT FLUSH" {
	local t
	t=$(rlock acquire -t 2s job)
	rcli SCRIPT FLUSH >/dev/null
	run --separate-stderr rlock extend -t 20s --token "$t" job
	assert_success
	assert_between "$(rcli PTTL 'rlock:{job}')" 18000 20000 PTTL
}

@test "release: the scripts are called with EVALSHA once loaded" {
	local t calls
	t=$(rlock acquire one)
	rlock release --token "$t" one
	rcli CONFIG RESETSTAT >/dev/null
	t=$(rlock acquire two)
	rlock release --token "$t" two
	calls=$(rcli INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')
	assert_between "${calls:-0}" 2 100 "evalsha calls"
}
