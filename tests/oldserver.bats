#!/usr/bin/env bats
# oldserver.bats: a server older than rlock supports (Redis 5.0, built from
# ../shared/servers by scripts/servers.sh) is refused by every command:
# exit 69, one line naming its version and the minimum, no command run, no
# key left.  Skipped when that build is not in the cache; scripts/matrix.sh
# runs it as the 5.0 column of the matrix.

load helpers
load extra-helpers

# The bin directory of the Redis 5.0 build: $RLOCK_OLD_SERVER_BIN (the
# matrix), else the cache ($RLOCK_SERVERS, else .servers in the tree).
old_bin() {
	local d
	if [[ -n "${RLOCK_OLD_SERVER_BIN:-}" ]]; then
		echo "$RLOCK_OLD_SERVER_BIN"
		return 0
	fi
	for d in "${RLOCK_SERVERS:-$BATS_TEST_DIRNAME/../.servers}"/redis-5.*/bin; do
		if [[ -x "$d/redis-server" ]]; then
			echo "$d"
			return 0
		fi
	done
	return 1
}

setup_file() {
	local bin
	bin=$(old_bin) || return 0
	export PATH="$bin:$PATH" OLD_BIN=$bin
	start_redis
}
teardown_file() { default_teardown_file; }
setup() {
	[[ -n "${OLD_BIN:-}" ]] ||
		skip "no Redis 5.0 build in the cache (scripts/servers.sh builds it from ../shared/servers)"
	default_setup
	cd "$BATS_TEST_TMPDIR"
}
teardown() { cleanup_test; }

OLD_LINE='^rlock: .*: Redis 5\.0\.[0-9]+ is older than 6\.0, the oldest rlock supports; upgrade the server$'

# refused ARGS...: a sweep case that wants 69, one line, no key (see
# sweep_case), and also that the line names the version and the minimum.
refused() {
	local n=${#SWEEP_FAILS[@]}
	sweep_case 69 "$@"
	if ((${#SWEEP_FAILS[@]} == n)) &&
		! grep -Eq "$OLD_LINE" "$BATS_TEST_TMPDIR/sweep.err"; then
		SWEEP_FAILS+=("rlock $(_show_args "$@"): the line is not the refusal: $(head -c 300 "$BATS_TEST_TMPDIR/sweep.err")")
	fi
}

@test "refused: the server under test is Redis 5.0" {
	run rcli INFO server
	assert_line --regexp '^redis_version:5\.0\.'
}

@test "refused: every command exits 69 naming the version and 6.0, runs nothing and leaves no key" {
	sweep_reset
	refused acquire job
	refused acquire -w 1s job
	refused acquire --hold job
	refused exec job -- touch ran
	refused exec --shared job -- touch ran
	refused exec --limit 2 job -- touch ran
	refused exec --fifo -w 1s job -- touch ran
	refused exec --max-runtime 1s job -- touch ran
	refused extend --token t job
	refused release --token t job
	refused release --force job
	refused status job
	refused status
	refused --json status
	refused status --format openmetrics
	refused log
	refused log job
	refused watch
	refused watch job
	sweep_finish
	[[ ! -e ran ]] || fail "a command ran"
}

@test "refused: a lock some other client wrote is left alone" {
	rcli SET 'rlock:{job}' other >/dev/null
	run --separate-stderr rlock release --force job
	assert_equal "$status" 69
	run --separate-stderr rlock status
	assert_equal "$status" 69
	assert_equal "$(rcli GET 'rlock:{job}')" other
	assert_equal "$(rcli DBSIZE)" 1
}

@test "refused: a quorum of old servers is refused the same way" {
	start_redis_as Q2
	run --separate-stderr rlock -u "$RLOCK_URL" -u "$Q2_URL" acquire job
	assert_equal "$status" 69
	assert_one_error_line
	[[ "$stderr" == *"Redis 5.0."*" is older than 6.0"* ]] || fail "stderr: $stderr"
	assert_equal "$(rcli DBSIZE)" 0
	assert_equal "$(rcli_as Q2 DBSIZE)" 0
}

@test "refused: doctor says the server is older than 6.0" {
	run --separate-stderr rlock doctor
	assert_equal "$status" 1
	assert_line --regexp '^error +[^ ]+: version: Redis 5\.0\.[0-9]+ \(rlock needs Redis 6\.0 or later'
}
