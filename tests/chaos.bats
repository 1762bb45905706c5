#!/usr/bin/env bats
# chaos.bats: the randomized fault checker (tests/chaos/README.md) in CI:
# fixed seeds for about two minutes in all (single server 60 s, quorum and
# Cluster 30 s each) must find no violation, no stuck lock and no leftover;
# and the checker must be able to fail: a stand-in that takes no lock, and
# a real rlock told to ignore its losses (--on-lost ignore) under a
# partition, are both caught.  Each run starts and stops its own servers,
# proxies and processes (by PID); the default server is not used.

load helpers
setup() { own_server_setup; }
teardown() { test_teardown; }

CHAOS="$BATS_TEST_DIRNAME/chaos/run.sh"

# chaos_run ARGS...: the checker on the binary under test; its output (the
# summary) is shown when a test fails.
chaos_run() {
	# The logs (kept when a run fails, as the sabotaged ones must) go in a
	# short directory of the test's (Unix socket paths), removed with the
	# test's servers' directories in teardown (helpers.bash stop_listed).
	CHAOS_TMP=$(mktemp -d /tmp/rlk.XXXXXX) || return 1
	echo "$CHAOS_TMP" >>"$BATS_TEST_TMPDIR/.redis-dirs"
	export CHAOS_TMP
	run --separate-stderr "$CHAOS" --rlock "$RLOCK" "$@"
	echo "$output"
	echo "$stderr" | tail -20
}

# chaos_passed: the run passed; else its kept logs are copied out of the
# test's directories, which teardown removes, to chaos-failed.* in the
# directory bats was started from (CI's build directory, beside the test
# logs), so that a rare failure can be read afterwards, and it fails.
chaos_passed() {
	local kept dest
	[[ $status -eq 0 ]] && return 0
	kept=$(printf '%s\n%s\n' "$output" "$stderr" |
		sed -n 's/^chaos: logs kept in //p' | tail -n 1)
	if [[ -n "$kept" && -d "$kept" ]]; then
		dest=$(mktemp -d "${BATS_CWD:-$PWD}/chaos-failed.XXXXXX") &&
			cp -r "$kept" "$dest/" &&
			echo "the failed run's logs: $dest"
	fi
	fail "the checker failed (exit $status)"
}

@test "chaos: single server, every mode and fault, 60 s: no violation, no loss invented, nothing stuck or left" {
	chaos_run --seed 101 --seconds 60 --mode single
	chaos_passed
	assert_line --partial "violations 0"
	# No loss invented, judged on runs that surely held to their end.
	assert_line --regexp "^  false losses 0 .*'exec': [1-9]"
	assert_line "  stuck locks 0"
	assert_line "  leftovers 0"
	assert_line "  result PASS"
}

@test "chaos: quorum of three servers, 30 s: no violation, nothing stuck or left" {
	chaos_run --seed 202 --seconds 30 --mode quorum
	chaos_passed
	assert_line "  result PASS"
}

@test "chaos: Cluster of three masters, 30 s: no violation, nothing stuck or left" {
	chaos_run --seed 303 --seconds 30 --mode cluster
	chaos_passed
	assert_line "  result PASS"
}

@test "chaos: a stand-in rlock that takes no lock is caught (exclusion and fences)" {
	chaos_run --seed 404 --seconds 8 --mode single \
		--rlock "$BATS_TEST_DIRNAME/chaos/standin.sh"
	assert_failure
	assert_line --regexp '^    exclusion: '
	assert_line --regexp '^    fence: '
	assert_line "  result FAIL"
}

@test "chaos: --on-lost ignore under a partition is caught (a holder runs on past its lost lock)" {
	chaos_run --seed 505 --seconds 25 --mode single --sabotage on-lost-ignore
	assert_failure
	assert_line --regexp '^    (exclusion|capacity): .*lost=True'
	assert_line "  result FAIL"
}
