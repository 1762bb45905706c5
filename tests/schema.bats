#!/usr/bin/env bats
# schema.bats: every --json output is valid against its JSON Schema in
# doc/schema (acquire, status, log, watch, doctor, and the progress lines
# of -v on stderr), checked on real output of a real server with Debian's
# python3-jsonschema (tests/validate-json.py); a wrong document fails, so
# the check is not vacuous; and the history's end of a run is in fields
# of its own (exit_status, signal, reason) that jq can select on.

load helpers
load dist-helpers
load exec-helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() {
	default_setup
	/usr/bin/python3 -c 'import jsonschema' 2>/dev/null ||
		fail "python3-jsonschema is missing: run scripts/deps.sh"
	cd "$BATS_TEST_TMPDIR"
}
teardown() {
	exec_teardown
}

SCHEMAS="$BATS_TEST_DIRNAME/../doc/schema"
export RLOCK_SCHEMA_DIR=$SCHEMAS

# valid SCHEMA [--lines]: stdin is valid against doc/schema/SCHEMA.
valid() {
	local doc
	doc=$(cat)
	[[ -n $doc ]] || fail "nothing to validate against $1"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/validate-json.py" "$@" <<<"$doc" ||
		fail "not valid against $1: $doc"
}

# invalid SCHEMA [--lines]: stdin is NOT valid against it.
invalid() {
	local doc
	doc=$(cat)
	/usr/bin/python3 "$BATS_TEST_DIRNAME/validate-json.py" --invalid "$@" \
		<<<"$doc" 2>/dev/null || fail "wrongly valid against $1: $doc"
}

# jlog NAME EXPR: rlock --json log NAME as the list d (newest first), EXPR
# true of it.
jlog() {
	rlock --json log -n 100 "$1" |
		/usr/bin/python3 -c 'import json,sys; d=[json.loads(l) for l in sys.stdin]; r=eval(sys.argv[1]); sys.exit(0 if r is True else 1)' "$2" ||
		fail "log of $1: $2: $(rlock --json log -n 100 "$1")"
}

@test "schema: each file is a valid 2020-12 schema, every field described, every object's extra fields decided" {
	local f n=0
	for f in acquire status log watch doctor progress; do
		[[ -f "$SCHEMAS/$f.json" ]] || fail "no doc/schema/$f.json"
		n=$((n + 1))
	done
	run /usr/bin/python3 - "$SCHEMAS" <<'EOF'
import json, os, sys
import jsonschema
d = sys.argv[1]
bad = []
def walk(s, where):
    if isinstance(s, dict):
        if s.get("type") == "object":
            if "additionalProperties" not in s:
                bad.append(where + ": additionalProperties not decided")
            for k, v in s.get("properties", {}).items():
                if "description" not in v and "$ref" not in v:
                    bad.append(where + "/" + k + ": no description")
        for k, v in s.items():
            walk(v, where + "/" + k)
    elif isinstance(s, list):
        for i, v in enumerate(s):
            walk(v, where + "/" + str(i))
for f in sorted(os.listdir(d)):
    s = json.load(open(os.path.join(d, f)))
    jsonschema.Draft202012Validator.check_schema(s)
    if s.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
        bad.append(f + ": not draft 2020-12")
    if not s.get("description"):
        bad.append(f + ": no description")
    walk(s, f)
print("\n".join(bad) if bad else "ok")
EOF
	assert_success
	assert_output ok
}

@test "schema: a wrong document fails validation (the check is not vacuous)" {
	# A field missing, a string for a number, a field nobody promised.
	invalid acquire.json <<<'{"name":"a","token":"t","fence":1}'
	invalid acquire.json <<<'{"name":"a","token":"t","fence":"1","ttl_ms":5}'
	invalid acquire.json <<<'{"name":"a","token":"t","fence":1,"ttl_ms":5,"x":1}'
	invalid status.json <<<'{"name":"a","held":true,"fence":1}'
	invalid status.json <<<'[{"name":"a","held":false,"fence":1,"host":"h"}]'
	invalid status.json <<<'{"name":"a","held":false,"fence":0,"servers":[{"url":"u","state":"gone"}]}'
	# The old form of the outcome, and a release that says nothing of it.
	invalid log.json --lines <<<'{"name":"a","time_ms":1,"event":"released","outcome":"exit:57"}'
	invalid log.json --lines <<<'{"name":"a","time_ms":1,"event":"released"}'
	invalid log.json --lines <<<'{"name":"a","time_ms":1,"event":"released","exit_status":"57"}'
	invalid log.json --lines <<<'{"name":"a","time_ms":1,"event":"released","exit_status":1,"signal":"SIGTERM"}'
	invalid log.json --lines <<<'{"name":"a","time_ms":1,"event":"acquired","signal":"TERM"}'
	invalid watch.json --lines <<<'{"name":"a","time_ms":1,"event":"held"}'
	invalid doctor.json <<<'[{"server":"s","check":"c","severity":"fine","message":"m","remedy":null}]'
	invalid doctor.json <<<'{"server":"s","check":"c","severity":"ok","message":"m","remedy":null}'
	invalid progress.json --lines <<<'{"time":"yesterday","level":"info","message":"m"}'
	# And the right ones pass.
	valid acquire.json <<<'{"name":"a","token":"t","fence":1,"ttl_ms":5}'
	valid log.json --lines <<<'{"name":"a","time_ms":1,"event":"released","exit_status":57}'
}

@test "schema: acquire --json, exclusive, shared and --limit" {
	rlock --json acquire -t 30s a | valid acquire.json
	rlock --json acquire --shared -t 30s s | valid acquire.json
	rlock --json acquire --limit 3 -t 30s m | valid acquire.json
}

@test "schema: status --json: free, never taken, held with waiters, shared, a semaphore, several, the listing" {
	local t i
	rlock --json status never | valid status.json
	t=$(rlock acquire -t 30s job)
	bg_start W "$RLOCK" acquire -w 20s -t 30s job
	bg_start F "$RLOCK" acquire --fifo -w 20s -t 30s job
	for ((i = 0; i < 500; i++)); do
		(($(rlock status job | grep -c '^  waiting') >= 2)) && break
		sleep 0.02
	done
	run --separate-stderr rlock --json status job
	assert_success
	valid status.json <<<"$output"
	json_check 'd["held"] and len(d["waiters"]) == 2 and any("place" in w for w in d["waiters"])' <<<"$output"
	kill -TERM "$W" "$F"
	bg_wait "$W" 10000 || fail "the waiter is still waiting"
	bg_wait "$F" 10000 || fail "the --fifo waiter is still waiting"
	rlock release --token "$t" job
	rlock acquire --shared -t 30s sh >/dev/null
	rlock acquire --shared -t 30s sh >/dev/null
	rlock acquire --limit 3 -t 30s sem >/dev/null
	run --separate-stderr rlock --json status sh
	valid status.json <<<"$output"
	json_check 'd["shared"] is True and len(d["holders"]) == 2' <<<"$output"
	run --separate-stderr rlock --json status sem
	valid status.json <<<"$output"
	run --separate-stderr rlock --json status sh sem never job
	valid status.json <<<"$output"
	json_check 'len(d) == 4' <<<"$output"
	run --separate-stderr rlock --json status
	assert_success
	valid status.json <<<"$output"
	json_check 'isinstance(d, list) and [l["name"] for l in d] == ["sem", "sh"]' <<<"$output"
	# Free again, after a release: the last fence.
	rlock --json status never job | valid status.json
}

@test "schema: status --json with a damaged lock beside a healthy one: stdout still valid" {
	rlock acquire -t 30s ok >/dev/null
	rcli HSET 'rlock:{bad}' a b >/dev/null
	run --separate-stderr rlock --json status
	assert_equal "$status" 69
	valid status.json <<<"$output"
	json_check '[l["name"] for l in d] == ["ok"]' <<<"$output"
}

@test "schema: status and log --json in quorum mode, a server down" {
	start_quorum 3
	rlockq exec -t 30s q -- true
	rlockq acquire -t 30s q >/dev/null
	stop_redis Q3
	run --separate-stderr rlockq --json status q
	valid status.json <<<"$output"
	json_check 'len(d["servers"]) == 3 and d["servers"][2]["state"] == "unreachable" and d["servers"][2]["error"] and d["servers"][0]["state"] == "holds"' <<<"$output"
	run --separate-stderr rlockq --json log q
	assert_success
	valid log.json --lines <<<"$output"
	run /usr/bin/python3 -c 'import json,sys; d=[json.loads(l) for l in sys.stdin]; print(all(e["servers"] == 2 for e in d))' <<<"$output"
	assert_output True
}

@test "schema: status and log --json against a Redis Cluster, locks on every node" {
	start_cluster
	local n
	for ((n = 1; n <= 6; n++)); do
		run rlock -u "$C1_URL" exec "c$n" -- sh -c "exit $n"
		assert_equal "$status" "$n"
		rlock -u "$C2_URL" acquire --limit 2 -t 30s "c$n" >/dev/null
	done
	rlock -u "$C3_URL" acquire --shared -t 30s r >/dev/null
	run --separate-stderr rlock -u "$C2_URL" --json status
	assert_success
	valid status.json <<<"$output"
	json_check 'len(d) == 7' <<<"$output"
	rlock -u "$C3_URL" --json status c1 r | valid status.json
	run --separate-stderr rlock -u "$C1_URL" --json log
	assert_success
	valid log.json --lines <<<"$output"
	run /usr/bin/python3 -c 'import json,sys; print(sorted(e["exit_status"] for e in map(json.loads, sys.stdin) if "exit_status" in e))' <<<"$output"
	assert_output '[1, 2, 3, 4, 5, 6]'
}

@test "schema: log --json: exit 0, exit 57, a signal, max-runtime, a release, --reason, lost, forced, expired, leftovers, kinds" {
	local t i
	rlock exec job -- true
	run rlock exec job -- sh -c 'exit 57'
	assert_equal "$status" 57
	run rlock exec job -- sh -c 'kill -KILL $$'
	assert_equal "$status" 137
	run rlock exec --max-runtime 200ms job -- sleep 10
	assert_equal "$status" 124
	t=$(rlock acquire -t 30s job)
	rlock release --token "$t" job
	t=$(rlock acquire -t 30s job)
	rlock release --reason 'rlock was killed' --token "$t" job
	# Lost under exec: the command was stopped with SIGTERM.
	run rlock exec -t 1s --heartbeat 300ms job -- sh -c 'redis-cli -h 127.0.0.1 -p "$0" DEL "rlock:{job}" >/dev/null; sleep 5' "$REDIS_PORT"
	assert_equal "$status" 75
	# Lost, found by a release.
	t=$(rlock acquire job)
	rcli DEL 'rlock:{job}' >/dev/null
	run rlock release --token "$t" job
	assert_failure 1
	rlock acquire -t 30s job >/dev/null
	rlock release --force job >/dev/null
	rlock acquire -t 200ms job >/dev/null
	for ((i = 0; i < 500; i++)); do
		[[ "$(rcli EXISTS 'rlock:{job}')" == 0 ]] && break
		sleep 0.01
	done
	rlock exec --leftovers kill --kill-after 2s job -- sh -c 'sleep 30 & exit 0'
	rlock exec --shared job -- true
	rlock exec --limit 2 job2 -- true
	rlock --json log -n 100 job | valid log.json --lines
	rlock --json log -n 100 job2 | valid log.json --lines
	run rlock --json log -n 100
	valid log.json --lines <<<"$output"
	# Each end in its own field.
	jlog job '[e.get("exit_status", e.get("signal", e.get("reason"))) for e in d if e["event"] in ("released", "lost")] == [0, 0, "release", "SIGTERM", "rlock was killed", "release", "max-runtime", "SIGKILL", 57, 0]'
	jlog job '[e["event"] for e in d][:4] == ["released", "acquired", "released", "leftovers"]'
	jlog job 'all("outcome" not in e for e in d)'
	jlog job 'any(e["event"] == "expired" for e in d) and any(e["event"] == "forced" and e["by"]["pid"] > 0 for e in d)'
	jlog job 'd[1]["kind"] == "shared"'
	# And a script selects on them without parsing a string.
	if command -v jq >/dev/null; then
		run sh -c '"$0" --json log -n 100 job | jq -c "select(.exit_status > 0) | .exit_status"' "$RLOCK"
		assert_success
		assert_output 57
		run sh -c '"$0" --json log -n 100 job | jq -r "select(.signal) | .signal"' "$RLOCK"
		assert_output $'SIGTERM\nSIGKILL'
	else
		jlog job '[e["exit_status"] for e in d if e.get("exit_status")] == [57]'
		jlog job '[e["signal"] for e in d if "signal" in e] == ["SIGTERM", "SIGKILL"]'
	fi
	# The text is what it was.
	run rlock log -n 100 job
	assert_output --regexp ": exit 57, fence "
	assert_output --regexp ": killed by SIGKILL, fence "
	assert_output --regexp ": stopped at --max-runtime, fence "
	assert_output --regexp ": rlock was killed, fence "
}

@test "schema: watch --json lines are valid, as log's" {
	bg_start WATCH "$RLOCK" --json watch job
	local i
	for ((i = 0; i < 500; i++)); do
		rcli CLIENT LIST | grep -q 'cmd=xread' && break
		sleep 0.01
	done
	run rlock exec job -- sh -c 'exit 57'
	run rlock exec job -- sh -c 'kill -KILL $$'
	for ((i = 0; i < 1000; i++)); do
		(($(wc -l <WATCH.out) >= 4)) && break
		sleep 0.01
	done
	valid watch.json --lines <WATCH.out
	run /usr/bin/python3 -c 'import json; d=[json.loads(l) for l in open("WATCH.out")]; print([e.get("exit_status", e.get("signal")) for e in d if e["event"] == "released"])'
	assert_output "[57, 'SIGKILL']"
	kill -TERM "$WATCH"
}

@test "schema: doctor --json, with findings of each severity it can give here" {
	start_redis_as D
	rcli_as D CONFIG SET maxmemory-policy allkeys-lru >/dev/null
	rcli_as D CONFIG SET appendonly no >/dev/null
	run --separate-stderr rlock -u "$D_URL" --json doctor
	assert_equal "$status" 1
	valid doctor.json <<<"$output"
	json_check 'any(f["severity"] == "warning" and f["remedy"] for f in d) and any(f["severity"] == "ok" for f in d)' <<<"$output"
	# A server that is not there: an error finding, still the schema's.
	stop_redis D
	run --separate-stderr rlock -u "$D_URL" --json doctor
	assert_equal "$status" 69
	valid doctor.json <<<"$output"
	json_check 'd[0]["severity"] == "error"' <<<"$output"
}

@test "schema: the progress lines of --json -v on stderr" {
	run --separate-stderr rlock --json -v exec job -- true
	assert_success
	grep '^{' <<<"$stderr" | valid progress.json --lines
}

@test "schema: each stored outcome as its field: given back, a loss with none, an unnamed signal, one rlock never writes, release --reason exit:N" {
	# Entries as the scripts write them (src/lua/release.lua, note.lua),
	# each of a run of its own (r: events of one run are shown once).
	local k='rlock:{g}:log'
	rcli XADD "$k" '*' r run1 e released h vm p 7 u root c '' f 5 d 3 x '' >/dev/null
	rcli XADD "$k" '*' r run2 e lost h vm p 7 u root c '' f 5 d 3 x '' y 'the extend was refused' >/dev/null
	rcli XADD "$k" '*' r run3 e released h vm p 7 u root c sh f 6 d 3 x signal:34 >/dev/null
	rcli XADD "$k" '*' r run4 e released h vm p 7 u root c sh f 7 d 3 x exit:999 >/dev/null
	rcli XADD "$k" '*' r run5 e released h vm p 7 u root c sh f 8 d 3 x exit:-1 >/dev/null
	rcli XADD "$k" '*' r run6 e leftovers h vm p 7 u root c sh f 8 d 3 x '' y 'left 1 process' >/dev/null
	rlock --json log g | valid log.json --lines
	jlog g '[e.get("exit_status", e.get("signal", e.get("reason"))) for e in d] == [None, "exit:-1", "exit:999", "SIG34", "lost", "given-back"]'
	run rlock log g
	assert_line --index 3 --partial ': killed by SIG34, fence 6'
	# A script's own command, its end recorded as exec's.
	local t
	t=$(rlock acquire s)
	sh -c 'exit 3' || rlock release --reason "exit:$?" --token "$t" s
	t=$(rlock acquire s)
	rlock release --reason signal:TERM --token "$t" s
	rlock --json log s | valid log.json --lines
	jlog s '[e.get("exit_status", e.get("signal")) for e in d if e["event"] == "released"] == ["SIGTERM", 3]'
	assert_line --index 5 --partial ': given back, fence 5'
}
