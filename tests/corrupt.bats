#!/usr/bin/env bats
# corrupt.bats: keys rlock did not write.  Each key of each kind of lock
# (plain, --limit, --shared, --fifo) damaged in each way, and every command
# run against it: no crash, no hang, at most one line on stderr in words
# (never a raw script error), nothing left held by a command that failed,
# the healthy lock beside it still listed, and `release --force` able to
# clean up whatever is there.  Then the cases one by one: a script that
# fails leaves no write behind, a full server, a value that would loop.

load helpers

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { file_server_setup; }
teardown() { test_teardown; }

K='rlock:{c}'

# What holds lock c now: its holders' tokens (or the lock key's value, if
# it is a string).  (One redis-cli, not one a key: the matrix below calls
# this twice a check.)
holders_of() {
	rcli EVAL "local t = redis.call('TYPE', KEYS[1]).ok
		if t == 'hash' then return redis.call('HKEYS', KEYS[1]) end
		if t == 'string' then return {redis.call('GET', KEYS[1])} end
		return {}" 1 "$K"
}

# A record of lock c's holder RLOCK_TOKEN changed by a Lua statement on r
# (its decoded record), or another holder's record added (tok: other).
record_edit() {
	rcli EVAL "local r = cjson.decode(redis.call('HGET', KEYS[1], ARGV[1]))
		local tok = ARGV[1]
		$1
		redis.call('HSET', KEYS[1], tok, cjson.encode(r))" 1 "$K" "$RLOCK_TOKEN"
}

# damage HOW: one key of lock c made into what rlock never writes.
damage() {
	case $1 in
	lock-string) rcli DEL "$K" >/dev/null; rcli SET "$K" x ;;
	lock-list) rcli DEL "$K" >/dev/null; rcli RPUSH "$K" a ;;
	record-junk) rcli HSET "$K" "$RLOCK_TOKEN" x ;;
	record-huge) record_edit "r.k = 'l:3000000'" ;;
	record-zero) record_edit "r.k = 'l:0'" ;;
	record-mixed) record_edit "tok = 'other'; r.k = (r.k == 's' and 'x' or 's')" ;;
	record-ttl0) record_edit "r.l = 0; r.t = 'abc'" ;;
	fence-abc) rcli SET "$K:fence" abc ;;
	fence-hash) rcli DEL "$K:fence" >/dev/null; rcli HSET "$K:fence" a b ;;
	log-string) rcli DEL "$K:log" >/dev/null; rcli SET "$K:log" x ;;
	log-maxid) rcli DEL "$K:log" >/dev/null
		rcli XADD "$K:log" 18446744073709551615-18446744073709551615 e x ;;
	waiters-string) rcli DEL "$K:waiters" >/dev/null; rcli SET "$K:waiters" x ;;
	queue-string) rcli DEL "$K:queue" >/dev/null; rcli SET "$K:queue" x ;;
	every-string) rcli DEL "$K:every" >/dev/null; rcli SET "$K:every" x ;;
	wake-string) rcli DEL "$K:wake" >/dev/null; rcli SET "$K:wake" x ;;
	esac >/dev/null
}

# matrix KIND-FLAGS DAMAGE...: for each damage and each command, a fresh
# lock c held with FLAGS (its token in T), a healthy lock ok beside it,
# the damage, the command; every broken promise is collected and printed.
matrix() {
	local flags=$1 d c out err rc before after bad="" n=0 om lines l
	shift
	local cmds=(
		"acquire -n -t 5s $flags c"
		"acquire -w 300ms -t 5s $flags c"
		"exec -n $flags c -- true"
		"exec -n --every 1m $flags c -- true"
		"release c"
		"extend c"
		"extend -t 30s c"
		"status c"
		"status"
		"status --format openmetrics"
		"--json status"
		"log c"
		"log"
		"release --force c"
	)
	rcli FLUSHALL >/dev/null
	rlock acquire -t 1h ok >/dev/null
	# Lock c once (the acquire writes c's history, fence and metadata:
	# every key a damage below can hit), and keep a copy of its keys on
	# the server (snap:KEY, their TTLs in snap:ttl) to put back before
	# each check: one redis-cli a check, not an rlock and a redis-cli, in
	# the suite's longest file.  (ok stays throughout.)
	export RLOCK_TOKEN
	RLOCK_TOKEN=$(rlock acquire -t 1h $flags c) || fail "setup: acquire failed"
	rcli EVAL "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
		redis.call('RESTORE', 'snap:' .. k, 0, redis.call('DUMP', k))
		redis.call('HSET', 'snap:ttl', k, redis.call('PTTL', k)) end" 0 "$K*" >/dev/null
	local token=$RLOCK_TOKEN
	for d in "$@"; do
		for c in "${cmds[@]}"; do
			n=$((n + 1))
			# Lock c as it was taken.
			rcli EVAL "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
				redis.call('DEL', k) end
				for _, s in ipairs(redis.call('KEYS', 'snap:' .. ARGV[1])) do
				local k = string.sub(s, 6)
				local t = tonumber(redis.call('HGET', 'snap:ttl', k))
				redis.call('RESTORE', k, math.max(t, 0),
					redis.call('DUMP', s)) end" 0 "$K*" >/dev/null
			export RLOCK_TOKEN=$token
			damage "$d"
			before=$(holders_of)
			rc=0
			# shellcheck disable=SC2086
			timeout 15 "$RLOCK" $c >out 2>err || rc=$?
			# (No cat, no grep: a check is a few processes, and the
			# matrix makes some eight hundred.)
			out=$(<out) err=$(<err)
			lines=0
			while IFS= read -r l || [[ -n $l ]]; do
				[[ -z $l ]] || lines=$((lines + 1))
			done <err
			after=$(holders_of)
			unset RLOCK_TOKEN
			if [[ $rc -eq 124 || $rc -eq 70 || $rc -ge 128 ]]; then
				bad+="[$d] $c: exit $rc: $err"$'\n'
			fi
			if [[ $err == *user_script* || $err == *"ERR Error"* ||
			    $err == *WRONGTYPE* || $err == *"script:"* ||
			    $err == *"attempt to"* ]]; then
				bad+="[$d] $c: a raw error: $err"$'\n'
			fi
			if [[ $lines -gt 1 ]]; then
				bad+="[$d] $c: more than one line on stderr: $err"$'\n'
			fi
			if [[ $rc -ne 0 && $rc -ne 1 && $c == acquire* || $rc -ne 0 && $rc -ne 1 && $c == exec* ]] &&
			    [[ $before != "$after" ]]; then
				bad+="[$d] $c: failed (exit $rc) yet changed the holders: '$before' -> '$after'"$'\n'
			fi
			if [[ $c == status || $c == "--json status" ]] && [[ $out != *ok* ]]; then
				bad+="[$d] $c: the healthy lock is not listed: $out $err"$'\n'
			fi
			# Kept, and parsed all at once after the loop.
			if [[ $c == "status --format openmetrics" ]]; then
				cp out "om.$d"
			fi
			if [[ $c == "release --force c" ]]; then
				if [[ $rc -ne 0 ]]; then
					bad+="[$d] $c: exit $rc: $err"$'\n'
				elif ! timeout 10 "$RLOCK" acquire -n -t 5s $flags c >/dev/null 2>err2; then
					bad+="[$d] after release --force, c cannot be taken: $(cat err2)"$'\n'
				fi
			fi
		done
	done
	# Each openmetrics output through the Prometheus parser, in one
	# python3 (its start is a tenth of a second).
	om=$(/usr/bin/python3 -c 'import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as p
for f in sys.argv[1:]:
	try:
		list(p(open(f).read()))
	except Exception as e:
		print("[%s] status --format openmetrics: not valid OpenMetrics: %s" % (f[3:], e))
' om.*) || bad+="the OpenMetrics parser did not run"$'\n'
	[[ -z $om ]] || bad+="$om"$'\n'
	echo "$n runs"
	if [[ -n $bad ]]; then
		printf '%s' "$bad"
		return 1
	fi
}

@test "corrupt: a plain lock, each key damaged, every command" {
	matrix "" lock-string lock-list record-junk record-ttl0 record-mixed \
		fence-abc fence-hash log-string log-maxid waiters-string \
		queue-string every-string wake-string
}

@test "corrupt: a --limit lock, each key damaged, every command" {
	matrix "--limit 2" record-huge record-zero lock-string record-junk \
		record-mixed fence-abc log-string waiters-string wake-string
}

@test "corrupt: a --shared lock, each key damaged, every command" {
	matrix "--shared" lock-string record-junk record-mixed fence-abc \
		log-string waiters-string wake-string
}

@test "corrupt: a --fifo lock, each key damaged, every command" {
	matrix "--fifo" queue-string waiters-string fence-abc log-string \
		record-junk
}

@test "corrupt: a script that fails leaves nothing: a bad fence takes no slot" {
	rcli SET 'rlock:{sm}:fence' abc >/dev/null
	run --separate-stderr rlock acquire --limit 2 -t 60s sm
	assert_equal "$status" 69
	assert_one_error_line
	assert_equal "${stderr_lines[0]}" "rlock: $RLOCK_URL: the lock sm is damaged: rlock:{sm}:fence holds \"abc\", not a fence number, which rlock never writes (another program or a person did); \`rlock release --force sm\` removes what its keys hold"
	assert_equal "$(rcli EXISTS 'rlock:{sm}')" 0
	run rlock release --force sm
	assert_success
	assert_output 'removed rlock:{sm}:fence ("abc", not a fence number)'
	run rlock acquire --limit 2 -t 60s sm
	assert_success
}

@test "corrupt: a history that cannot be written costs the history, not the lock" {
	rcli SET 'rlock:{k3}:log' x >/dev/null
	run --separate-stderr rlock acquire -n k3
	assert_success
	T=$output
	run rlock status k3
	assert_success
	assert_output --regexp "^k3: held by [^?]+@[^?]+ pid [1-9]"
	run rlock release --token "$T" k3
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{k3}')" 0
	# A stream whose last entry has the largest ID: the same.
	rcli DEL 'rlock:{k3}:log' >/dev/null
	rcli XADD 'rlock:{k3}:log' 18446744073709551615-18446744073709551615 e x >/dev/null
	run rlock exec -n k3 -- true
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{k3}')" 0
}

@test "corrupt: extend with a damaged record changes nothing, and a stored TTL of 0 is not used" {
	rcli HSET 'rlock:{px}' tok x >/dev/null
	rcli PEXPIRE 'rlock:{px}' 5000 >/dev/null
	run --separate-stderr rlock extend --token tok -t 60s px
	assert_equal "$status" 69
	assert_one_error_line
	[[ "${stderr_lines[0]}" == *'rlock:{px} holds "x" for a holder, not a holder'"'"'s record'* ]]
	[ "$(rcli PTTL 'rlock:{px}')" -le 5000 ]
	rcli EVAL "local t = redis.call('TIME')
		local now = t[1] * 1000 + math.floor(t[2] / 1000)
		redis.call('HSET', KEYS[1], 'tok', cjson.encode({k = 'x',
			e = now + 5000, f = '7', t = 'abc', l = 0}))
		redis.call('PEXPIRE', KEYS[1], 5000)" 1 'rlock:{px}' >/dev/null
	run rlock extend --token tok px
	assert_success
	refute_output --partial "by 0ms"
	[ "$(rcli PTTL 'rlock:{px}')" -gt 5000 ]
	# A holding time that is no number: the release still frees it.
	run rlock release --token tok px
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{px}')" 0
}

@test "corrupt: a limit that would loop a hundred million times is one line, at once, and the server stays free" {
	rcli HSET 'rlock:{big}' t '{"k":"l:100000000","e":99999999999999,"f":"1"}' >/dev/null
	rlock acquire -t 60s fine >/dev/null
	local t0
	t0=$(now_ms)
	run --separate-stderr rlock status
	assert_equal "$status" 69
	assert_one_error_line
	assert_output --partial "fine: held by"
	[[ "${stderr_lines[0]}" == *'rlock:{big} holds "{\"k\":\"l:100000000\",'*'for a holder, not a holder'"'"'s record'* ]]
	[ $(($(now_ms) - t0)) -lt 2000 ]
	assert_equal "$(rcli PING)" PONG
	run rlock release --force big
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{big}')" 0
}

@test "corrupt: one bad key leaves log, openmetrics and watch for the others" {
	rlock exec good -- true
	rcli SET 'rlock:{k3}:log' x >/dev/null
	rcli HSET 'rlock:{m}' a b >/dev/null
	run --separate-stderr rlock log
	assert_equal "$status" 69
	assert_output --partial "good released"
	assert_one_error_line
	[[ "${stderr_lines[0]}" == *"rlock:{k3}:log holds a string, not a stream"* ]]
	run --separate-stderr rlock status --format openmetrics
	assert_equal "$status" 69
	assert_output --partial 'rlock_last_run_exit_status{name="good"}'
	refute_output --partial 'name="m"'
	[ "${#stderr_lines[@]}" -eq 2 ]
	/usr/bin/python3 -c 'import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as p
list(p(sys.stdin.read()))' <<<"$output"
	# watch follows the others, and says so once.
	bg_start W "$RLOCK" watch good k3
	local i
	for ((i = 0; i < 500; i++)); do
		grep -q 'is damaged' "$BATS_TEST_TMPDIR/W.err" && break
		sleep 0.02
	done
	rlock exec good -- true
	for ((i = 0; i < 500; i++)); do
		[[ $(grep -c 'good released' "$BATS_TEST_TMPDIR/W.out") -ge 1 ]] && break
		sleep 0.02
	done
	kill -INT "$W"
	bg_wait "$W"
	assert_equal "$(grep -c 'good released' "$BATS_TEST_TMPDIR/W.out")" 1
	assert_equal "$(grep -c . "$BATS_TEST_TMPDIR/W.err")" 1
	grep -q 'rlock:{k3}:log holds a string, not a stream' "$BATS_TEST_TMPDIR/W.err"
}

@test "corrupt: release --force removes whatever a lock's keys hold, and says what" {
	rcli SET 'rlock:{f}' x >/dev/null
	rcli SET 'rlock:{f}:waiters' x >/dev/null
	rcli HSET 'rlock:{f}:log' a b >/dev/null
	run --separate-stderr rlock release --force f
	assert_success
	assert_line 'removed rlock:{f} (a string, not a hash)'
	assert_line 'removed rlock:{f}:waiters (a string, not a hash)'
	assert_line 'removed rlock:{f}:log (a hash, not a stream)'
	assert_equal "$(rcli EXISTS 'rlock:{f}' 'rlock:{f}:waiters')" 0
	run rlock exec -n f -- true
	assert_success
}

@test "corrupt: a full server takes a lock back, and refuses a new one in words, leaving no key" {
	local t
	t=$(rlock acquire -t 60s full)
	rlock exec other -- true
	rcli CONFIG SET maxmemory-policy noeviction >/dev/null
	rcli CONFIG SET maxmemory 1 >/dev/null
	run --separate-stderr rlock release --token "$t" full
	assert_success
	assert_equal "$(rcli EXISTS 'rlock:{full}')" 0
	run --separate-stderr rlock acquire -n fresh
	assert_equal "$status" 69
	assert_one_error_line
	[[ "${stderr_lines[0]}" == *"the server is out of memory"*"maxmemory"* ]]
	refute_output --partial OOM
	assert_equal "$(rcli EXISTS 'rlock:{fresh}' 'rlock:{fresh}:fence')" 0
	run --separate-stderr rlock exec -n fresh -- true
	assert_equal "$status" 69
	assert_one_error_line
	assert_equal "$(rcli EXISTS 'rlock:{fresh}')" 0
	rcli CONFIG SET maxmemory 0 >/dev/null
}

@test "corrupt: exec's release on a full server frees the lock" {
	bg_start E "$RLOCK" exec -t 60s fx -- sh -c 'until [ -e go ]; do sleep 0.02; done'
	local i
	for ((i = 0; i < 500; i++)); do
		[[ $(rcli EXISTS 'rlock:{fx}') == 1 ]] && break
		sleep 0.01
	done
	rcli CONFIG SET maxmemory-policy noeviction >/dev/null
	rcli CONFIG SET maxmemory 1 >/dev/null
	touch go
	bg_wait "$E"
	assert_equal "$BG_STATUS" 0
	assert_equal "$(rcli EXISTS 'rlock:{fx}')" 0
	rcli CONFIG SET maxmemory 0 >/dev/null
}

@test "corrupt: doctor names each damaged lock, and says none when none is" {
	rlock acquire -t 60s fine >/dev/null
	run rlock doctor
	assert_line --regexp "^ok +$RLOCK_URL: locks: 1 lock, none damaged$"
	rcli HSET 'rlock:{m}' a b >/dev/null
	rcli SET 'rlock:{k3}:log' x >/dev/null
	run rlock doctor
	assert_equal "$status" 1
	assert_line --regexp "^warning +$RLOCK_URL: locks: the lock m is damaged: rlock:\{m\} holds \"b\" for a holder, not a holder's record"
	assert_line --regexp "^warning +$RLOCK_URL: locks: the lock k3 is damaged: rlock:\{k3\}:log holds a string, not a stream"
}

# A schedule's keys, as one line: the schedule's fields (sorted) and
# expiry, the lock's key and fence.  What a command that failed must
# leave as it found.
sched_state() {
	rcli EVAL "local t = redis.call('TYPE', KEYS[1]).ok
		local out = {t, tostring(redis.call('PTTL', KEYS[1])),
			tostring(redis.call('EXISTS', KEYS[2])),
			tostring(redis.call('GET', KEYS[3]))}
		if t == 'hash' then
			local all = redis.call('HGETALL', KEYS[1])
			local f = {}
			for i = 1, #all, 2 do f[#f + 1] = all[i] .. '=' .. all[i + 1] end
			table.sort(f)
			for _, v in ipairs(f) do out[#out + 1] = v end
		end
		return table.concat(out, ' ')" 3 "$K:every" "$K" "$K:fence"
}

# sched_matrix CASE...: each CASE "FIELD VALUE" (or "every-string",
# "every-list": the key of another type) put into lock c's schedule, as
# a healthy one left it (declared with a grace, one run ended, paused and
# resumed), then every command that reads a schedule: exit 69 (a listing:
# the healthy lock ok still listed), one line on stderr saying the
# damage in words (the key, the field and what it holds), no command
# run, nothing changed.  Then the remedies: rlock schedule remove, and
# release --force saying what it removed; after either, c runs again.
sched_matrix() {
	local cmds=(
		"exec -n --every 1m c -- touch ran"
		"exec -n --cron * * * * * c -- touch ran"
		"exec -w 300ms --every 1m c -- touch ran"
		"status c"
		"--json status c"
		"status"
		"status --format openmetrics"
		"status --overdue"
		"schedule list"
		"schedule declare c --every 1m"
		"schedule pause c"
		"schedule resume c"
		"release --token x c"
	)
	local cs c f v before after rc out err bad="" n=0 lines l
	local -a argv
	rcli FLUSHALL >/dev/null
	rlock acquire -t 1h ok >/dev/null
	rlock schedule declare c --every 1m --grace 10s || fail "setup: declare"
	rlock exec -n --every 1m c -- true || fail "setup: exec"
	rlock schedule pause c --for 1h && rlock schedule resume c ||
		fail "setup: pause"
	rcli EVAL "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
		redis.call('RESTORE', 'snap:' .. k, 0, redis.call('DUMP', k)) end" \
		0 "$K*" >/dev/null
	for cs in "$@"; do
		for c in "${cmds[@]}" remove force; do
			n=$((n + 1))
			rcli EVAL "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
				redis.call('DEL', k) end
				for _, s in ipairs(redis.call('KEYS', 'snap:' .. ARGV[1])) do
				redis.call('RESTORE', string.sub(s, 6), 0,
					redis.call('DUMP', s)) end" 0 "$K*" >/dev/null
			rm -f ran
			f=${cs%% *} v=${cs#* }
			case $cs in
			every-string) rcli DEL "$K:every" >/dev/null
				rcli SET "$K:every" x >/dev/null; f='' ;;
			every-list) rcli DEL "$K:every" >/dev/null
				rcli RPUSH "$K:every" x >/dev/null; f='' ;;
			*) rcli HSET "$K:every" "$f" "$v" >/dev/null ;;
			esac
			before=$(sched_state)
			# (The --cron expression is one word of the command.)
			case $c in
			*--cron*) argv=(exec -n --cron '* * * * *' c -- touch ran) ;;
			remove) argv=(schedule remove c) ;;
			force) argv=(release --force c) ;;
			*) read -ra argv <<<"$c" ;;
			esac
			rc=0
			timeout 15 "$RLOCK" "${argv[@]}" >out 2>err || rc=$?
			out=$(<out) err=$(<err)
			lines=0
			while IFS= read -r l || [[ -n $l ]]; do
				[[ -z $l ]] || lines=$((lines + 1))
			done <err
			after=$(sched_state)
			case $c in
			remove)
				[[ $rc -eq 0 && $(rcli EXISTS "$K:every") == 0 ]] ||
					bad+="[$cs] schedule remove: exit $rc, $err"$'\n'
				;;
			force)
				[[ $rc -eq 0 && $out == *"removed $K:every ("* &&
				    $(rcli EXISTS "$K:every") == 0 ]] ||
					bad+="[$cs] release --force: exit $rc: $out $err"$'\n'
				;;
			*)
				[[ $rc -eq 69 ]] ||
					bad+="[$cs] $c: exit $rc, not 69: $out $err"$'\n'
				[[ $lines -eq 1 && $err == *"the lock c is damaged: $K:every holds "* ]] ||
					bad+="[$cs] $c: not the damage in one line: $err"$'\n'
				[[ -z $f || $err == *" in $f, not "* ]] ||
					bad+="[$cs] $c: the field is not named: $err"$'\n'
				[[ $before == "$after" ]] ||
					bad+="[$cs] $c: changed '$before' -> '$after'"$'\n'
				[[ ! -e ran ]] || bad+="[$cs] $c: the command ran"$'\n'
				[[ $c != status && $c != "status --format openmetrics" ]] ||
				    [[ $out == *ok* ]] ||
					bad+="[$cs] $c: the healthy lock is not listed: $out"$'\n'
				;;
			esac
			if [[ $err == *user_script* || $err == *"ERR Error"* ||
			    $err == *WRONGTYPE* || $err == *"script:"* ||
			    $err == *"attempt to"* ]]; then
				bad+="[$cs] $c: a raw error: $err"$'\n'
			fi
			# After a remedy, c runs again.
			if [[ $c == remove || $c == force ]] &&
			    ! timeout 15 "$RLOCK" exec -n --every 1m c -- touch ran 2>err2; then
				bad+="[$cs] after $c, c does not run: $(cat err2)"$'\n'
			fi
		done
	done
	echo "$n runs"
	if [[ -n $bad ]]; then
		printf '%s' "$bad"
		return 1
	fi
}

@test "corrupt: a schedule whose numbers are no numbers: every command that reads it says so in words and changes nothing; remove and release --force clean up" {
	sched_matrix "p abc" "p 0" "p -60000" "p 1e5" "s abc" "s 1.5" \
		"c abc" "c inf" "g abc" "g 0" "d abc" "z abc" "z 1e99" \
		"zs abc" "ok abc" "nf abc" "nf -1" "i abc"
}

@test "corrupt: a schedule's other fields and key: a flag, an expression, a zone, the start before, another type" {
	sched_matrix "f yes" "e abc" "e 1 2 3" "e @every" "tz ../../etc/passwd" \
		"tz /etc/localtime" "tz a b" "o x" 'o [1,2]' \
		'o ["abc","","","","","","","",""]' \
		'o ["60000","x","h","1","r","a","","",""]' \
		'o ["60000","","","","","","","2",""]' every-string every-list
}

@test "corrupt: a --cron schedule whose expression has the form but not the values, or whose zone this machine lacks: status, list and doctor say it, never a schedule silently not overdue; schedule remove cleans up" {
	rlock acquire -t 1h ok >/dev/null
	rlock exec -n --cron '*/5 * * * *' c -- true
	rcli HSET "$K:every" e '99 * * * *' >/dev/null
	run --separate-stderr rlock status c
	assert_equal "$status" 69
	assert_one_error_line
	assert_equal "${stderr_lines[0]}" "rlock: the lock c is damaged: $K:every holds \"99 * * * *\" in e, not a crontab expression (minute 99 is out of range: give 0 to 59), which rlock never writes (another program or a person did); \`rlock schedule remove c\` removes the schedule"
	run --separate-stderr rlock status --overdue
	assert_equal "$status" 69
	run --separate-stderr rlock schedule list
	assert_equal "$status" 69
	assert_one_error_line
	run --separate-stderr rlock doctor
	assert_line --regexp "^warning +$RLOCK_URL: schedules: the lock c is damaged: .* in e, not a crontab expression"
	refute_line --partial "none overdue or failing"
	# A zone of the right form that this machine has no files for.
	rcli HSET "$K:every" e '*/5 * * * *' tz Mars/Olympus >/dev/null
	run --separate-stderr rlock status c
	assert_equal "$status" 69
	assert_one_error_line
	[[ "${stderr_lines[0]}" == *"the schedule of c is in the time zone Mars/Olympus, which this machine does not know"* ]] ||
		fail "${stderr_lines[0]}"
	run --separate-stderr rlock status
	assert_equal "$status" 69
	assert_output --partial "ok: held by"
	run rlock schedule remove c
	assert_success
	assert_equal "$(rcli EXISTS "$K:every")" 0
	run rlock status c
	assert_equal "$status" 1
}

@test "corrupt: exec --every's release on a full server frees the lock and records the outcome" {
	bg_start E "$RLOCK" exec -t 60s --every 1m fe -- sh -c 'until [ -e go ]; do sleep 0.02; done'
	local i
	for ((i = 0; i < 500; i++)); do
		[[ $(rcli EXISTS 'rlock:{fe}') == 1 ]] && break
		sleep 0.01
	done
	rcli CONFIG SET maxmemory-policy noeviction >/dev/null
	rcli CONFIG SET maxmemory 1 >/dev/null
	touch go
	bg_wait "$E"
	rcli CONFIG SET maxmemory 0 >/dev/null
	assert_equal "$BG_STATUS" 0
	assert_equal "$(rcli EXISTS 'rlock:{fe}')" 0
	assert_equal "$(rcli HGET 'rlock:{fe}:every' x)" exit:0
}
