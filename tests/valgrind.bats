#!/usr/bin/env bats
# valgrind.bats: memcheck over a representative set of runs -- acquire,
# status, extend, release, exec with a heartbeat, a failing connection, and
# TLS -- with zero errors and no definite or indirect leaks.  (The
# sanitizer pass covers the whole suite; this catches what ASan may miss,
# such as reads of uninitialised memory.)

load helpers
load tls-helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() {
	default_setup
	command -v valgrind >/dev/null || skip "valgrind is not installed"
	# An ASan build (the second CI pass) cannot run under valgrind; that
	# pass has its own checks.
	if grep -q __asan_init "$RLOCK" 2>/dev/null; then
		skip "a sanitizer build: valgrind does not apply"
	fi
}
teardown() { cleanup_test; }

# Time under memcheck is 20 to 50 times rlock's own, and a loaded machine
# (a full test run beside another) multiplies that again: no bound here may
# be what makes a run pass.  Every lock lives minutes, not seconds, and
# every round trip may take a minute; a run that must wait says so itself.
VG_SLOW=(--connect-timeout 60s --timeout 60s)

# vg ARGS...: run rlock under memcheck; fail on any error or leak report.
vg() {
	local log=$BATS_TEST_TMPDIR/vg.$$.$RANDOM
	# (A forked child that fails to exec leaves through _exit() with the
	# parent's heap: not a leak, so children are not reported.)
	run --separate-stderr valgrind -q --leak-check=full \
	    --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
	    --trace-children=no --child-silent-after-fork=yes \
	    --log-file="$log" "$RLOCK" "${VG_SLOW[@]}" "$@"
	if [[ $status -eq 99 ]] || [[ -s $log ]]; then
		fail "valgrind reported on rlock $*: $(cat "$log")"
	fi
}

@test "valgrind: acquire, status, extend and release run clean" {
	# (A 10 s TTL ran out under load before the extend: exit 1.)
	vg acquire -t 10m job
	assert_success
	local tok=$output
	vg status job
	assert_success
	vg --json status
	assert_success
	vg extend --token "$tok" -t 20m job
	assert_success
	vg release --token "$tok" job
	assert_success
	vg release --token "$tok" job
	assert_equal "$status" 1
}

@test "valgrind: exec with heartbeats and a forwarded signal runs clean" {
	# A TTL that valgrind's pace on a busy machine leaves room in, and a
	# heartbeat that extends it every half second all the same.
	vg exec -t 10m --heartbeat 500ms job -- sh -c 'sleep 2.5; exit 3'
	assert_equal "$status" 3
	assert_equal "$(rcli EXISTS 'rlock:{job}')" 0
}

@test "valgrind: a busy lock, a waiter and a forced release run clean" {
	local tok
	tok=$(rlock acquire -t 10m job)
	vg acquire -n job
	assert_equal "$status" 1
	vg acquire -w 300ms job
	assert_equal "$status" 1
	vg release --force job
	assert_success
	[[ -n "$tok" ]]
}

@test "valgrind: usage errors and an unreachable server run clean" {
	vg acquire 'bad name'
	assert_equal "$status" 64
	vg -u redis://127.0.0.1:1 acquire job
	assert_equal "$status" 69
	vg exec job -- /nonexistent/command
	assert_equal "$status" 127	# (bats's BW01 warning: expected)
}

@test "valgrind: doctor runs clean" {
	vg doctor
	[[ $status -eq 0 || $status -eq 1 ]]
}

@test "valgrind: TLS (libssl loaded at run time) runs clean" {
	command -v openssl >/dev/null || skip "openssl is not installed"
	make_test_pki "$BATS_TEST_TMPDIR/pki"
	start_tls_redis_as VT optional
	# The handshake's public-key work under memcheck, on a busy machine,
	# takes seconds (the default 2 s gave up, 69): VG_SLOW.
	vg -u "$VT_URL" --tls-ca "$TLS_CA" acquire -t 10m tjob
	assert_success
	vg -u "$VT_URL" --tls-ca "$TLS_CA" release --token "$output" tjob
	assert_success
}
