#!/usr/bin/env bats
# json.bats: every --json output parses, and has the documented fields:
# acquire, status (one, several, the listing), doctor, and the event lines
# that -v writes on stderr with --json.

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { default_setup; }
teardown() { cleanup_test; }

# json_check PYTHON-EXPR: evaluate EXPR with `d` bound to stdin parsed as
# JSON; fail unless it is true.
json_check() {
	python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if eval(sys.argv[1]) else 1)' "$1" || fail "JSON check failed: $1"
}

@test "json: acquire prints one object with name, token, fence and ttl_ms" {
	run --separate-stderr rlock --json acquire -t 5s job
	assert_success
	json_check 'set(d) == {"name", "token", "fence", "ttl_ms"} and d["name"] == "job" and d["ttl_ms"] == 5000' <<<"$output"
}

@test "json: status of one, several and all locks has the documented shapes" {
	rlock acquire -t 5s a >/dev/null
	run --separate-stderr rlock --json status a
	json_check 'd["held"] is True and {"host","pid","user","command","acquired_ms","held_ms","expires_in_ms","ttl_ms","fence"} <= set(d)' <<<"$output"
	run --separate-stderr rlock --json status a b
	json_check 'isinstance(d, list) and [x["name"] for x in d] == ["a", "b"] and d[1]["held"] is False' <<<"$output"
	run --separate-stderr rlock --json status
	json_check 'isinstance(d, list) and [x["name"] for x in d] == ["a"]' <<<"$output"
}

@test "json: doctor prints an array of findings with server, check, severity, message and remedy" {
	run --separate-stderr rlock --json doctor
	json_check 'isinstance(d, list) and d and all(set(x) == {"server","check","severity","message","remedy"} for x in d) and all(x["severity"] in ("ok","info","warning","error") for x in d)' <<<"$output"
}

@test "json: with -v, exec's event lines on stderr are JSON objects with time, level and message" {
	run --separate-stderr rlock --json -v exec -t 1s job -- sleep 0.8
	assert_success
	[[ -n "$stderr" ]] || fail "no event lines"
	local line n=0
	while IFS= read -r line; do
		json_check 'set(d) == {"time","level","message"} and d["level"] in ("info","notice") and d["time"].endswith("Z")' <<<"$line"
		n=$((n + 1))
	done <<<"$stderr"
	# acquired, at least one extend, released.
	[[ $n -ge 3 ]] || fail "only $n event lines: $stderr"
	grep -q '"message":"acquired job' <<<"$stderr" || fail "no acquired event: $stderr"
	grep -q '"message":"extended job' <<<"$stderr" || fail "no extend event: $stderr"
	grep -q '"message":"released job' <<<"$stderr" || fail "no release event: $stderr"
}

@test "json: errors stay one plain 'rlock:' line even with --json" {
	run --separate-stderr rlock --json -u redis://127.0.0.1:1 acquire job
	assert_equal "$status" 69
	assert_one_error_line
}
