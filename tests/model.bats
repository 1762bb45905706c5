load helpers
setup() { own_server_setup; }
teardown() { test_teardown; }

# The SPIN model of the lock protocol (src/lua/model): it needs spin and a
# C compiler only, no server.

MODEL="$BATS_TEST_DIRNAME/../src/lua/model"

need_spin() {
	command -v spin >/dev/null 2>&1 || skip "spin is not installed (scripts/deps.sh)"
}

@test "model: the scripts are those the model mirrors" {
	run "$MODEL/check.sh" --hashes
	assert_success
}

# The new rules first: their minutes of CPU, then the old rules'
# seconds, so that what the model check leaves at the end of a CI run is short.
@test "model: the new rules hold in every configuration" {
	need_spin
	run "$MODEL/check.sh"
	assert_success
	refute_output --partial FAILED
	# quorum-w lets a given-up script run late (-DLATE), after the
	# give-back or the release that followed it.
	assert_output --partial "quorum-w     bounded"
	assert_output --partial "later (after the give-back, the release) or never"
	assert_output --partial "uplive       ok"
	# issue 52: both deploy policies, safety and liveness
	for c in pending replace plive rlive; do
		assert_output --partial "$(printf '%-12s ok: ' "$c")"
	done
}

@test "model: the old rules break 1, 3, 4, 5 and 7; the rules before issue 48 its breaks 1 and 2; issue 52's break and sabotages are caught" {
	need_spin
	run "$MODEL/check.sh" --old
	assert_success
	for b in break1 break3 break4 break5 break7; do
		assert_output --partial "$b       found"
	done
	assert_output --partial "i48-break1   found"
	assert_output --partial "i48-break2   found"
	# issue 52: the superseding answer that took the mark away, and each
	# sabotaged rule, caught by its property
	for b in i52-take i52-handold i52-oldest i52-rtake i52-rdeaf; do
		assert_output --partial "$(printf '%-12s found: ' "$b")"
	done
}
