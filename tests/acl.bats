#!/usr/bin/env bats
# acl.bats: a Redis ACL user with exactly the command set that
# rlock-security(7) documents (ACL users) can run every command; the line
# lists every command the Lua scripts call; and doctor's acl check names
# each command a user lacks.

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() {
	default_setup
	rcli ACL DELUSER alice bob >/dev/null
	load_doc_line
}
teardown() {
	rcli ACL DELUSER alice bob >/dev/null 2>&1 || true
	cleanup_test
}

MAN="$BATS_TEST_DIRNAME/../man/rlock-security.7"
LUA_DIR="$BATS_TEST_DIRNAME/../src/lua"

# load_doc_line: RULES, the rules of the documented line after "ACL SETUSER
# rlock on >PASSWORD " ("~rlock:* +evalsha ..."), RULE the same as an array,
# GRANT its commands ("+evalsha" ...).  Fails unless rlock-security(7) has
# exactly one such line, granting at least 15 commands.
load_doc_line() {
	local found
	found=$(grep -c '^ACL SETUSER rlock on >PASSWORD ' "$MAN")
	[[ "$found" == 1 ]] || fail "rlock-security(7) has $found documented ACL SETUSER lines, not 1"
	RULES=$(sed -n 's/^ACL SETUSER rlock on >PASSWORD //p' "$MAN")
	read -ra RULE <<<"$RULES"
	mapfile -t GRANT < <(tr ' ' '\n' <<<"$RULES" | grep '^+')
	((${#GRANT[@]} >= 15)) || fail "the documented line grants too few commands: $RULES"
}

# set_user NAME PASSWORD RULE...: (re)create an ACL user with only these rules.
set_user() {
	local name=$1 pw=$2
	shift 2
	assert_equal "$(rcli_as "${SERVER:-REDIS}" ACL SETUSER "$name" reset on ">$pw" "$@")" OK
}

# run_doctor URL: sets status, output, stderr, lines.
run_doctor() {
	run --separate-stderr rlock -u "$1" doctor
}

# The one "acl" finding line for URL in $lines (fails unless exactly one).
acl_line() {
	local url=$1 line found=()
	for line in "${lines[@]}"; do
		if [[ "$line" == *" $url: acl: "* ]]; then
			found+=("$line")
		fi
	done
	((${#found[@]} == 1)) || fail "expected one acl finding for $url in: $output"
	echo "${found[0]}"
}

@test "acl: the documented line grants every command the scripts call and every command rlock sends" {
	local rules=" $RULES " cmd
	[[ "$rules" == " ~rlock:* +"* ]] || fail "the line does not start with ~rlock:*: $rules"
	# Every redis.call/pcall in src/lua, however the scripts change.
	local called
	called=$(grep -ohE "redis\.p?call\(['\"][A-Za-z]+" "$LUA_DIR"/*.lua |
		sed -E "s/.*['\"]//" | tr 'A-Z' 'a-z' | sort -u)
	[[ $(wc -l <<<"$called") -ge 10 ]] || fail "found too few script commands: $called"
	for cmd in $called; do
		[[ "$rules" == *" +$cmd "* ]] || fail "a script calls ${cmd^^}, the documented line lacks +$cmd"
	done
	# What the C code sends: scripts, waiting, --wait-replicas, status's
	# listing, the quorum handshake and doctor.
	for cmd in evalsha eval blpop wait scan info ping; do
		[[ "$rules" == *" +$cmd "* ]] || fail "the documented line lacks +$cmd"
	done
	# Nothing granted by category: each command by name.
	[[ "$rules" != *"@"* ]] || fail "the line grants a category: $rules"
}

@test "acl: a user with exactly the documented commands can acquire, extend, status, release, exec, log, watch and doctor" {
	# A server doctor finds nothing wrong with: append-only, a replica.
	start_redis_as GOOD --appendonly yes --appendfsync everysec
	start_redis_as REP --replicaof 127.0.0.1 "$GOOD_PORT"
	wait_replica_up GOOD REP
	SERVER=GOOD set_user alice alice-pw "${RULE[@]}"
	local url="redis://alice:alice-pw@127.0.0.1:$GOOD_PORT" shown="redis://alice@127.0.0.1:$GOOD_PORT"
	# No script cached: each goes out as EVALSHA, then as EVAL.
	rcli_as GOOD SCRIPT FLUSH >/dev/null

	run --separate-stderr rlock -u "$url" acquire job
	assert_equal "$status" 0
	[[ "$output" =~ $UUID_RE ]] || fail "acquire printed no token: $output $stderr"
	local token=$output
	run --separate-stderr rlock -u "$url" extend --token "$token" -t 1m job
	assert_equal "$status" 0
	assert_equal "$stderr" ""
	run --separate-stderr rlock -u "$url" status job
	assert_equal "$status" 0
	[[ "$output" == "job: held by "* ]] || fail "status job: $output $stderr"
	# With no name: SCAN.
	run --separate-stderr rlock -u "$url" status
	assert_equal "$status" 0
	[[ "$output" == "job: held by "* ]] || fail "status: $output $stderr"
	# A busy lock, waited for: BLPOP.  Busy is 1, never 69.
	run --separate-stderr rlock -u "$url" acquire -w 200ms job
	assert_equal "$status" 1
	run --separate-stderr rlock -u "$url" release --token "$token" job
	assert_equal "$status" 0
	assert_equal "$stderr" ""
	# --wait-replicas: WAIT.
	run --separate-stderr rlock -u "$url" acquire --wait-replicas 1 rep
	assert_equal "$status" 0
	run --separate-stderr rlock -u "$url" release --force rep
	assert_equal "$status" 0
	run --separate-stderr rlock -u "$url" exec -w 5s job -- sh -c 'echo ran'
	assert_equal "$status" 0
	assert_equal "$output" ran
	assert_equal "$(rcli_as GOOD EXISTS 'rlock:{job}')" 0
	# The history: log (a script), and watch (XREAD), here until SIGTERM.
	run --separate-stderr rlock -u "$url" log job
	assert_equal "$status" 0
	[[ "$output" == *" job released by "* ]] || fail "log: $output $stderr"
	run --separate-stderr rlock -u "$url" log
	assert_equal "$status" 0
	bg_start WATCH "$RLOCK" -u "$url" watch job
	local i
	for ((i = 0; i < 500; i++)); do
		rcli_as GOOD CLIENT LIST | grep -q 'cmd=xread' && break
		sleep 0.01
	done
	rlock -u "$url" exec job -- true
	for ((i = 0; i < 500; i++)); do
		(( $(wc -l <"$BATS_TEST_TMPDIR/WATCH.out") >= 2 )) && break
		sleep 0.01
	done
	kill -TERM "$WATCH"
	bg_wait "$WATCH" 5000
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat "$BATS_TEST_TMPDIR/WATCH.err")" ""
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/WATCH.out")" 2

	# The default user with a password too, or doctor warns that anyone
	# gets in without one.
	rcli_as GOOD CONFIG SET requirepass admin-pw >/dev/null
	run_doctor "$url"
	assert_equal "$status" 0
	assert_equal "$(acl_line "$shown")" "ok       $shown: acl: user alice may run every command rlock sends"
	# The probe left nothing behind.
	assert_equal "$(RCLI_AUTH=admin-pw rcli_as GOOD EXISTS 'rlock:{doctor}:probe')" 0
}

@test "acl: quorum mode with the documented commands on every server" {
	start_redis_as Q2
	start_redis_as Q3
	local v urls=()
	for v in REDIS Q2 Q3; do
		SERVER=$v set_user alice alice-pw "${RULE[@]}"
		local port="${v}_PORT"
		urls+=(-u "redis://alice:alice-pw@127.0.0.1:${!port}")
	done
	# Different fences on the servers: the fence script raises the low ones.
	rcli_as Q3 SET 'rlock:{job}:fence' 7 >/dev/null
	run --separate-stderr rlock "${urls[@]}" acquire job
	assert_equal "$status" 0
	local token=$output
	run --separate-stderr rlock "${urls[@]}" extend --token "$token" job
	assert_equal "$status" 0
	run --separate-stderr rlock "${urls[@]}" status job
	assert_equal "$status" 0
	run --separate-stderr rlock "${urls[@]}" release --token "$token" job
	assert_equal "$status" 0
	run --separate-stderr rlock "${urls[@]}" exec job -- true
	assert_equal "$status" 0
}

@test "acl: the old remedy (+@scripting +info +ping) cannot lock, and doctor names every missing command" {
	set_user bob bob-pw '~rlock:*' +@scripting +info +ping
	local url="redis://bob:bob-pw@127.0.0.1:$REDIS_PORT" shown="redis://bob@127.0.0.1:$REDIS_PORT"
	run --separate-stderr rlock -u "$url" acquire job
	assert_equal "$status" 69
	run_doctor "$url"
	assert_equal "$status" 1
	# The scripts check alone passes: that was the trap.
	[[ "$output" == *"ok       $shown: scripts: EVAL allowed"* ]] || fail "$output"
	local want
	want="error    $shown: acl: user bob may not run GET, SET, INCR, DEL, EXISTS, TYPE, PTTL, PEXPIRE, TIME, HGET, HMGET, HSET, HDEL, HGETALL, ZADD, ZRANGE, ZRANK, ZREM, ZREMRANGEBYSCORE, XADD, XLEN, XTRIM, XREVRANGE, XREAD, RPUSH, BLPOP, WAIT, SCAN"
	want+=" (ACL SETUSER bob $RULES)"
	assert_equal "$(acl_line "$shown")" "$want"
	refute_contains bob-pw "$output $stderr"
	# --json: the same finding, the remedy being the documented line.
	run --separate-stderr rlock -u "$url" --json doctor
	assert_equal "$status" 1
	echo "$output" | json_check '[f for f in d if f["check"] == "acl"][0]["severity"] == "error"'
	echo "$output" | json_check '"may not run GET, SET," in [f for f in d if f["check"] == "acl"][0]["message"]'
	echo "$output" | json_check '[f for f in d if f["check"] == "acl"][0]["remedy"] == "ACL SETUSER bob '"$RULES"'"'
	# Granting the remedy fixes it.
	assert_equal "$(rcli ACL SETUSER bob "${RULE[@]}")" OK
	run --separate-stderr rlock -u "$url" acquire job
	assert_equal "$status" 0
	run_doctor "$url"
	assert_equal "$(acl_line "$shown")" "ok       $shown: acl: user bob may run every command rlock sends"
}

@test "acl: a user without HGET cannot wait (its entry is read), and doctor names HGET" {
	set_user bob bob-pw "${RULE[@]}" -hget
	local url="redis://bob:bob-pw@127.0.0.1:$REDIS_PORT" shown="redis://bob@127.0.0.1:$REDIS_PORT"
	local t
	t=$(rlock acquire -t 60s job)
	run --separate-stderr rlock -u "$url" acquire -w 1s job
	assert_equal "$status" 69
	assert_equal "$(rcli EXISTS 'rlock:{job}:waiters')" 0
	assert_equal "$(rcli HKEYS 'rlock:{job}')" "$t"
	# (extend reads the holders' record with HGETALL: it needs no HGET.)
	run --separate-stderr rlock -u "$url" extend --token "$t" job
	assert_equal "$status" 0
	run_doctor "$url"
	assert_equal "$status" 1
	assert_equal "$(acl_line "$shown")" "error    $shown: acl: user bob may not run HGET (ACL SETUSER bob $RULES)"
}

@test "acl: doctor names each documented command a user lacks, one at a time" {
	local grant name
	local url="redis://bob:bob-pw@127.0.0.1:$REDIS_PORT" shown="redis://bob@127.0.0.1:$REDIS_PORT"
	for grant in "${GRANT[@]}"; do
		set_user bob bob-pw "${RULE[@]}" "-${grant#+}"
		name=${grant#+}
		name=${name^^}
		run_doctor "$url"
		assert_equal "$status" 1
		[[ "$(acl_line "$shown")" == "error    $shown: acl: user bob may not run $name"[\;\ ]* ]] ||
			fail "without $grant: $(acl_line "$shown")"
	done
}

@test "acl: keys outside the user's pattern are named; --prefix changes the pattern" {
	set_user bob bob-pw '~locks:*' "${GRANT[@]}"
	local url="redis://bob:bob-pw@127.0.0.1:$REDIS_PORT" shown="redis://bob@127.0.0.1:$REDIS_PORT"
	run_doctor "$url"
	assert_equal "$status" 1
	[[ "$(acl_line "$shown")" == "error    $shown: acl: user bob may not use the keys rlock:*; the commands the scripts call were not checked (ACL SETUSER bob ~rlock:* +evalsha "* ]] ||
		fail "$(acl_line "$shown")"
	run --separate-stderr rlock -u "$url" --prefix locks: doctor
	assert_equal "$(acl_line "$shown")" "ok       $shown: acl: user bob may run every command rlock sends"
	run --separate-stderr rlock -u "$url" --prefix locks: acquire job
	assert_equal "$status" 0
	# The remedy escapes a prefix's glob characters.
	run --separate-stderr rlock -u "$url" --prefix 'a*b:' doctor
	[[ "$(acl_line "$shown")" == *"(ACL SETUSER bob ~a\\*b:* +evalsha "* ]] || fail "$(acl_line "$shown")"
}
