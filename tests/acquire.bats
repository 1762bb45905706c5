#!/usr/bin/env bats
# acquire.bats: taking a lock: the token, the keys, TTL, --json, busy locks,
# --token and idempotent re-acquire, fencing, holder metadata, prefixes and
# a failing stdout.

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { default_setup; }
teardown() { cleanup_test; }

@test "acquire: prints a 36-character lowercase token alone on one line" {
	run --separate-stderr rlock acquire job
	assert_success
	assert_equal "${#lines[@]}" 1
	assert_equal "${#output}" 36
	assert_output --regexp "$UUID_RE"
	assert_equal "$stderr" ""
}

@test "acquire: the output ends with exactly one newline" {
	rlock acquire job >"$BATS_TEST_TMPDIR/out"
	[[ "$(tail -c 1 "$BATS_TEST_TMPDIR/out" | od -An -tx1)" == *0a* ]]
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/out")" 1
	assert_equal "$(wc -c <"$BATS_TEST_TMPDIR/out")" 37
}

@test "acquire: the key PREFIX{NAME} holds the printed token" {
	run --separate-stderr rlock acquire job
	assert_success
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$output"
}

@test "acquire: two acquires of different names give different tokens" {
	local t1 t2
	t1=$(rlock acquire one)
	t2=$(rlock acquire two)
	[[ "$t1" =~ $UUID_RE && "$t2" =~ $UUID_RE ]]
	[[ "$t1" != "$t2" ]]
}

@test "acquire: the default TTL is 30 seconds" {
	run --separate-stderr rlock acquire job
	assert_success
	assert_between "$(rcli PTTL 'rlock:{job}')" 28000 30000 PTTL
}

@test "acquire: -t sets the TTL" {
	run --separate-stderr rlock acquire -t 5s job
	assert_success
	assert_between "$(rcli PTTL 'rlock:{job}')" 3000 5000 PTTL
	run --separate-stderr rlock acquire --ttl 90s job2
	assert_success
	assert_between "$(rcli PTTL 'rlock:{job2}')" 88000 90000 PTTL
}

@test "acquire: --json prints name, token, fence and ttl_ms" {
	run --separate-stderr rlock --json acquire -t 12s job
	assert_success
	assert_equal "${#lines[@]}" 1
	json_check 'set(d) == {"name", "token", "fence", "ttl_ms"}' <<<"$output"
	json_check 'd["name"] == "job"' <<<"$output"
	json_check 'type(d["fence"]) is int and d["fence"] >= 1' <<<"$output"
	json_check 'd["ttl_ms"] == 12000 and type(d["ttl_ms"]) is int' <<<"$output"
	local token fence
	token=$(json_eval 'd["token"]' <<<"$output")
	fence=$(json_eval 'd["fence"]' <<<"$output")
	assert_equal "$token" "\"$(rcli HKEYS 'rlock:{job}')\""
	assert_equal "$fence" "$(rcli GET 'rlock:{job}:fence')"
}

@test "acquire: --json after the command word works and escapes the name" {
	run --separate-stderr rlock acquire 'we"ird\na' --json
	assert_success
	json_check 'd["name"] == "we\"ird\\na"' <<<"$output"
	json_check 'd["ttl_ms"] == 30000' <<<"$output"
}

@test "acquire: a busy lock exits 1 with nothing on stdout or stderr" {
	rlock acquire job >/dev/null
	run --separate-stderr rlock acquire -n job
	assert_equal "$status" 1
	assert_equal "$output" ""
	assert_equal "$stderr" ""
}

@test "acquire: a busy lock is left with its holder's token" {
	local t
	t=$(rlock acquire job)
	run --separate-stderr rlock acquire -n job
	assert_equal "$status" 1
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t"
}

@test "acquire: -E 7 makes a busy lock exit 7" {
	rlock acquire job >/dev/null
	run --separate-stderr rlock acquire -n -E 7 job
	assert_equal "$status" 7
	assert_equal "$stderr" ""
	run --separate-stderr rlock acquire -w 0 --conflict-exit-code=7 job
	assert_equal "$status" 7
}

@test "acquire: -E does not change the exit status of a successful acquire" {
	run --separate-stderr rlock acquire -n -E 7 job
	assert_success
}

@test "acquire: -n behaves like -w 0 on a free and on a busy lock" {
	run --separate-stderr rlock acquire -n a
	assert_success
	run --separate-stderr rlock acquire -w 0 b
	assert_success
	local t0 t1
	t0=$(now_ms)
	run --separate-stderr rlock acquire -n a
	assert_equal "$status" 1
	run --separate-stderr rlock acquire -w 0 b
	assert_equal "$status" 1
	t1=$(now_ms)
	# Neither waited for the 30 s lock.
	assert_between $((t1 - t0)) 0 5000 elapsed_ms
}

@test "acquire: --token stores and prints the given token" {
	run --separate-stderr rlock acquire --token my-token-1 job
	assert_success
	assert_output "my-token-1"
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "my-token-1"
}

@test "acquire: re-acquiring with the holder's --token succeeds and keeps the fence" {
	run --separate-stderr rlock --json acquire --token T1 -t 2s job
	assert_success
	local f1
	f1=$(json_eval 'd["fence"]' <<<"$output")
	run --separate-stderr rlock --json acquire --token T1 -t 20s job
	assert_success
	json_check "d['fence'] == $f1 and d['token'] == 'T1'" <<<"$output"
	assert_equal "$(rcli GET 'rlock:{job}:fence')" "$f1"
	assert_equal "$(info_field 'rlock:{job}' fence)" "$f1"
	# The TTL and the metadata were refreshed.
	assert_between "$(rcli PTTL 'rlock:{job}')" 18000 20000 PTTL
	assert_equal "$(info_field 'rlock:{job}' ttl_ms)" 20000
}

@test "acquire: another --token on a held lock is busy" {
	rlock acquire --token T1 job >/dev/null
	run --separate-stderr rlock acquire -n --token T2 job
	assert_equal "$status" 1
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "T1"
}

@test "acquire: the fence grows strictly across acquire and release" {
	local prev=0 f t i
	for i in 1 2 3 4; do
		run --separate-stderr rlock --json acquire job
		assert_success
		f=$(json_eval 'd["fence"]' <<<"$output")
		t=$(json_eval 'd["token"]' <<<"$output")
		t=${t//\"/}
		((f > prev)) || fail "fence $f is not greater than $prev"
		prev=$f
		run --separate-stderr rlock release --token "$t" job
		assert_success
	done
}

@test "acquire: the fence grows across expiry" {
	local f1 f2
	run --separate-stderr rlock --json acquire -t 200ms job
	assert_success
	f1=$(json_eval 'd["fence"]' <<<"$output")
	sleep 0.5
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	run --separate-stderr rlock --json acquire -n job
	assert_success
	f2=$(json_eval 'd["fence"]' <<<"$output")
	((f2 > f1)) || fail "fence after expiry $f2 is not greater than $f1"
}

@test "acquire: the fence counter expires 10 s after the longer of the TTL and the history's expiry" {
	local p
	rlock --history-expiry 1m acquire -t 5s job >/dev/null
	p=$(rcli PTTL 'rlock:{job}:fence')
	((p > 60000 && p <= 70000)) || fail "fence PTTL $p, not within (60 s, 70 s]"
	rlock --no-history acquire -t 2m job2 >/dev/null
	p=$(rcli PTTL 'rlock:{job2}:fence')
	((p > 120000 && p <= 130000)) || fail "fence PTTL $p, not within (120 s, 130 s]"
}

@test "acquire: the fences of different names are independent" {
	local fb
	# a's counter far ahead (as after many acquires) does not move b's.
	rcli SET 'rlock:{a}:fence' 8000000000000000 >/dev/null
	rlock acquire a >/dev/null
	fb=$(rlock --json acquire b | json_eval 'd["fence"]')
	assert_equal "$(rcli GET 'rlock:{a}:fence')" 8000000000000001
	assert_equal "$(rcli GET 'rlock:{b}:fence')" "$fb"
	assert_between "$fb" 1 7999999999999999 "b's fence"
}

@test "acquire: the holder's record has token, host, pid, user, ttl_ms, acquired_ms and fence" {
	local before after t
	before=$(now_ms)
	t=$(rlock acquire -t 15s job)
	after=$(now_ms)
	assert_equal "$(info_field 'rlock:{job}' token)" "$t"
	assert_equal "$(info_field 'rlock:{job}' host)" "$(hostname)"
	assert_equal "$(info_field 'rlock:{job}' user)" "$(id -un)"
	assert_equal "$(info_field 'rlock:{job}' ttl_ms)" 15000
	assert_equal "$(info_field 'rlock:{job}' fence)" "$(rcli GET 'rlock:{job}:fence')"
	[[ "$(info_field 'rlock:{job}' pid)" =~ ^[1-9][0-9]*$ ]]
	assert_between "$(info_field 'rlock:{job}' acquired_ms)" $((before - 5000)) $((after + 5000)) acquired_ms
}

@test "acquire: the stored pid is the calling shell's, not rlock's" {
	local shell_pid
	# bash does not exec the first of two commands, so it is rlock's parent.
	shell_pid=$(bash -c '"$1" acquire job >/dev/null; echo $$' _ "$RLOCK")
	assert_equal "$(info_field 'rlock:{job}' pid)" "$shell_pid"
}

@test "acquire: the stored command is empty" {
	rlock acquire job >/dev/null
	assert_equal "$(info_field 'rlock:{job}' command)" ""
}

@test "acquire: all keys of a lock share the {NAME} hash tag" {
	local t key
	t=$(rlock acquire job)
	rlock release --token "$t" job
	rlock acquire job >/dev/null
	run rcli --scan
	assert_success
	[[ ${#lines[@]} -ge 3 ]] || fail "expected at least 3 keys, got: $output"
	for key in "${lines[@]}"; do
		[[ "$key" == 'rlock:{job}' || "$key" == 'rlock:{job}:'* ]] ||
			fail "key '$key' is not under rlock:{job}"
	done
}

@test "acquire: --prefix changes the keys" {
	run --separate-stderr rlock --prefix app: acquire job
	assert_success
	assert_equal "$(rcli HKEYS 'app:{job}')" "$output"
	assert_equal "$(rcli EXISTS 'app:{job}:fence')" 1
	assert_equal "$(rcli EXISTS 'app:{job}')" 1
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "acquire: RLOCK_PREFIX changes the keys" {
	RLOCK_PREFIX=env: run --separate-stderr rlock acquire job
	assert_success
	assert_equal "$(rcli HKEYS 'env:{job}')" "$output"
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "acquire: --prefix beats RLOCK_PREFIX" {
	RLOCK_PREFIX=env: run --separate-stderr rlock --prefix flag: acquire job
	assert_success
	assert_equal "$(rcli EXISTS 'flag:{job}')" 1
	assert_equal "$(rcli EXISTS 'env:{job}')" 0
}

@test "acquire: the same name under two prefixes is two locks" {
	run --separate-stderr rlock --prefix a: acquire job
	assert_success
	run --separate-stderr rlock --prefix b: acquire -n job
	assert_success
}

@test "acquire: writing the token to a full stdout exits 70 and leaves the lock free" {
	run --separate-stderr bash -c '"$1" acquire job >/dev/full' _ "$RLOCK"
	assert_equal "$status" 70
	assert_one_error_line
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	run --separate-stderr rlock acquire -n job
	assert_success
}

@test "acquire: --json to a full stdout exits 70 and leaves the lock free" {
	run --separate-stderr bash -c '"$1" --json acquire job >/dev/full' _ "$RLOCK"
	assert_equal "$status" 70
	assert_one_error_line
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "acquire: the metadata expires with the lock" {
	rlock acquire -t 300ms job >/dev/null
	assert_between "$(rcli PTTL 'rlock:{job}')" 1 300 "info PTTL"
	sleep 0.7
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
	# The fence counter stays.
	assert_equal "$(rcli EXISTS 'rlock:{job}:fence')" 1
}

@test "acquire: RLOCK_URL selects the server" {
	run --separate-stderr env RLOCK_URL="redis://127.0.0.1:$REDIS_PORT/5" "$RLOCK" acquire job
	assert_success
	assert_equal "$(rcli -n 5 HKEYS 'rlock:{job}')" "$output"
	assert_equal "$(rcli -n 0 EXISTS 'rlock:{job}')" 0
}
