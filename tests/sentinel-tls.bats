#!/usr/bin/env bats
# sentinel-tls.bats: rediss-sentinel:// — Sentinel over TLS, with the
# sentinels' own password (--sentinel-password-file, RLOCK_SENTINEL_PASSWORD)
# apart from the master's. Real servers, all TLS-only (port 0): a master, a
# replica (tls-replication yes) and three sentinels (tls-replication yes, so
# they reach the master, the replica and each other over TLS), every one
# with a password: the data nodes MPW, the sentinels SPW. Certificates are
# made in the test (tls-helpers.bash). Every wait is bounded.

load helpers
load exec-helpers
load dist-helpers
load tls-helpers

MPW=master-secret-pw
SPW=sentinel-secret-pw

# _spawn_tls VAR PORT DIR PASSWORD ARGS...: `redis-server ARGS` in the
# background, its PID recorded for stop_all_redis; wait (at most ~5 s) until
# it answers INFO over TLS on PORT with its own PID. Exports VAR_PORT,
# VAR_PID, VAR_DIR.
_spawn_tls() {
	local var=$1 port=$2 dir=$3 pw=$4 pid i
	shift 4
	redis-server "$@" </dev/null >>"$dir/stdout.log" 2>&1 3>&- &
	pid=$!
	echo "$pid" >>"$(_scope_dir)/.redis-pids"
	for ((i = 0; i < 250; i++)); do
		_proc_alive "$pid" || break
		if timeout 2 redis-cli --tls --cacert "$TLS_CA" -h 127.0.0.1 \
			-p "$port" --no-auth-warning -a "$pw" INFO server 2>/dev/null |
			tr -d '\r' | grep -qx "process_id:$pid"; then
			printf -v "${var}_PORT" '%s' "$port"
			printf -v "${var}_PID" '%s' "$pid"
			printf -v "${var}_DIR" '%s' "$dir"
			export "${var}_PORT" "${var}_PID" "${var}_DIR"
			return 0
		fi
		sleep 0.02
	done
	_kill_pid "$pid"
	return 1
}

# start_tls_data_as VAR [ARGS...]: a TLS-only data node with password MPW
# (at most 20 ports tried).
start_tls_data_as() {
	local var=$1 port dir try
	shift
	for ((try = 0; try < 20; try++)); do
		port=$((20000 + RANDOM % 40001))
		_port_free "$port" || continue
		dir=$(mktemp -d "$(_scope_dir)/tlsnode.XXXXXX")
		_spawn_tls "$var" "$port" "$dir" "$MPW" --port 0 --tls-port "$port" \
			--bind 127.0.0.1 --tls-cert-file "$TLS_SERVER_CRT" \
			--tls-key-file "$TLS_SERVER_KEY" --tls-ca-cert-file "$TLS_CA" \
			--tls-auth-clients no --tls-replication yes \
			--requirepass "$MPW" --masterauth "$MPW" \
			--repl-diskless-sync yes --repl-diskless-sync-delay 0 \
			--save '' --appendonly no --daemonize no --dir "$dir" \
			--logfile "$dir/redis.log" "$@" && return 0
	done
	echo "start_tls_data_as: could not start $var" >&2
	return 1
}

# start_tls_sentinel_as VAR MASTER_PORT: a TLS-only sentinel with password
# SPW monitoring 127.0.0.1:MASTER_PORT as "mm", quorum 2.
start_tls_sentinel_as() {
	local var=$1 mport=$2 port dir try
	for ((try = 0; try < 20; try++)); do
		port=$((20000 + RANDOM % 40001))
		_port_free "$port" || continue
		dir=$(mktemp -d "$(_scope_dir)/tlssentinel.XXXXXX")
		cat >"$dir/sentinel.conf" <<-EOF
			port 0
			tls-port $port
			bind 127.0.0.1
			daemonize no
			dir $dir
			logfile $dir/sentinel.log
			tls-cert-file $TLS_SERVER_CRT
			tls-key-file $TLS_SERVER_KEY
			tls-ca-cert-file $TLS_CA
			tls-auth-clients no
			tls-replication yes
			requirepass $SPW
			sentinel sentinel-pass $SPW
			sentinel monitor mm 127.0.0.1 $mport 2
			sentinel auth-pass mm $MPW
			sentinel down-after-milliseconds mm 1000
			sentinel failover-timeout mm 5000
		EOF
		_spawn_tls "$var" "$port" "$dir" "$SPW" "$dir/sentinel.conf" --sentinel &&
			return 0
	done
	echo "start_tls_sentinel_as: could not start $var" >&2
	return 1
}

# mcli VAR ARGS...: redis-cli over TLS to data node VAR (password MPW).
mcli() {
	local portv="${1}_PORT"
	shift
	timeout 10 redis-cli --tls --cacert "$TLS_CA" -h 127.0.0.1 \
		-p "${!portv}" --no-auth-warning -a "$MPW" "$@"
}

# stcli VAR ARGS...: redis-cli over TLS to sentinel VAR (password SPW).
stcli() {
	local portv="${1}_PORT"
	shift
	timeout 10 redis-cli --tls --cacert "$TLS_CA" -h 127.0.0.1 \
		-p "${!portv}" --no-auth-warning -a "$SPW" "$@"
}

# _sentinel_field VAR FIELD: a field of SENTINEL MASTER mm.
_sentinel_field() {
	stcli "$1" SENTINEL MASTER mm 2>/dev/null | tr -d '\r' |
		awk -v f="$2" 'prev == f { print; exit } { prev = $0 }'
}

# start_tls_sentinel_group: TM (master), TR (its replica), TS1..TS3
# (sentinels); returns once the replica is in sync and every sentinel knows
# the replica and the two other sentinels (bounded: about 30 s). Exports
# TSENT_HOSTS (the three sentinels, as a URL's host list).
start_tls_sentinel_group() {
	local i ok v
	start_tls_data_as TM || return 1
	start_tls_data_as TR --replicaof 127.0.0.1 "$TM_PORT" || return 1
	for ((i = 0; i < 200; i++)); do
		mcli TM INFO replication 2>/dev/null | grep -q '^slave0:.*state=online' && break
		sleep 0.05
	done
	((i < 200)) || { echo "the TLS replica never came online" >&2; return 1; }
	for v in TS1 TS2 TS3; do
		start_tls_sentinel_as "$v" "$TM_PORT" || return 1
	done
	for ((i = 0; i < 300; i++)); do
		ok=1
		for v in TS1 TS2 TS3; do
			[[ "$(_sentinel_field "$v" num-other-sentinels)" == 2 &&
				"$(_sentinel_field "$v" num-slaves)" == 1 ]] || ok=0
		done
		((ok)) && break
		sleep 0.1
	done
	if ((!ok)); then
		echo "the TLS sentinels never found each other and the replica" >&2
		tail -5 "$TS1_DIR/sentinel.log" >&2
		return 1
	fi
	TSENT_HOSTS="127.0.0.1:$TS1_PORT,127.0.0.1:$TS2_PORT,127.0.0.1:$TS3_PORT"
	export TSENT_HOSTS
}

setup_file() {
	make_test_pki
	start_tls_sentinel_group
}
teardown_file() { stop_all_redis; }

setup() {
	require_rlock
	unset RLOCK_TOKEN RLOCK_PREFIX RLOCK_PASSWORD REDISCLI_AUTH RLOCK_CONFIG \
		RLOCK_URL RLOCK_SENTINEL_PASSWORD
	cd "$BATS_TEST_TMPDIR"
	mcli TM FLUSHALL >/dev/null
	printf '%s\n' "$SPW" >spw
	chmod 600 spw
	TURL="rediss-sentinel://:$MPW@$TSENT_HOSTS/mm"
}
teardown() { exec_teardown; }

# ---------------------------------------------------------------------------
# Through TLS sentinels
# ---------------------------------------------------------------------------

@test "sentinel-tls: acquire, status and release through rediss-sentinel:// with the sentinels' own password" {
	run --separate-stderr rlock -u "$TURL" --tls-ca "$TLS_CA" \
		--sentinel-password-file spw acquire job
	assert_success
	assert_output --regexp "$UUID_RE"
	local tok=$output
	assert_equal "$(mcli TM HKEYS 'rlock:{job}')" "$tok"

	run --separate-stderr rlock -u "$TURL" --tls-ca "$TLS_CA" \
		--sentinel-password-file spw status job
	assert_success
	assert_output --regexp '^job: held by .+ fence [0-9]+$'

	run --separate-stderr rlock -u "$TURL" --tls-ca "$TLS_CA" \
		--sentinel-password-file spw release --token "$tok" job
	assert_success
	assert_equal "$(mcli TM EXISTS 'rlock:{job}')" 0
}

@test "sentinel-tls: RLOCK_SENTINEL_PASSWORD, --sentinel-user and the config file's keys work too" {
	RLOCK_SENTINEL_PASSWORD=$SPW run --separate-stderr rlock -u "$TURL" \
		--tls-ca "$TLS_CA" acquire env-job
	assert_success
	assert_equal "$(mcli TM HKEYS 'rlock:{env-job}')" "$output"

	# The sentinels' default user, named.
	cat >rlock.conf <<-EOF
		url = rediss-sentinel://$TSENT_HOSTS/mm
		tls-ca = $TLS_CA
		sentinel-user = default
		sentinel-password-file = $PWD/spw
	EOF
	chmod 600 rlock.conf
	RLOCK_PASSWORD=$MPW run --separate-stderr rlock --config rlock.conf acquire conf-job
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(mcli TM HKEYS 'rlock:{conf-job}')" "$output"
}

@test "sentinel-tls: without the sentinels' password: exit 69, one line naming the sentinel and the remedy" {
	run --separate-stderr rlock -u "$TURL" --tls-ca "$TLS_CA" acquire job
	assert_equal "$status" 69
	assert_equal "$(printf '%s\n' "$stderr" | wc -l)" 1
	assert_stderr_has "sentinel" "--sentinel-password-file"
	[[ "$stderr" != *"$MPW"* ]] || fail "the master's password is in the message"
	assert_equal "$(mcli TM EXISTS 'rlock:{job}')" 0
}

@test "sentinel-tls: --sentinel-user without a sentinel password is a usage error" {
	run --separate-stderr rlock -u "$TURL" --tls-ca "$TLS_CA" \
		--sentinel-user someone acquire job
	assert_equal "$status" 64
	assert_equal "$(printf '%s\n' "$stderr" | wc -l)" 1
	assert_stderr_has "--sentinel-user" "--sentinel-password-file"
}

@test "sentinel-tls: a wrong CA or none is one TLS line and exit 69" {
	run --separate-stderr rlock -u "$TURL" --tls-ca "$TLS_OTHER_CA" \
		--sentinel-password-file spw acquire job
	assert_equal "$status" 69
	assert_equal "$(printf '%s\n' "$stderr" | wc -l)" 1
	assert_stderr_has "rediss-sentinel://127.0.0.1:$TS3_PORT" "certificate"

	# No --tls-ca: the system store does not know the test CA.
	run --separate-stderr rlock -u "$TURL" --sentinel-password-file spw \
		acquire job
	assert_equal "$status" 69
	assert_equal "$(printf '%s\n' "$stderr" | wc -l)" 1
	assert_stderr_has "certificate"
	assert_equal "$(mcli TM EXISTS 'rlock:{job}')" 0
}

@test "sentinel-tls: plain redis-sentinel:// against the TLS-only sentinels fails with a clear error" {
	run --separate-stderr rlock -u "redis-sentinel://:$MPW@$TSENT_HOSTS/mm" \
		--sentinel-password-file spw --connect-timeout 3s acquire job
	assert_equal "$status" 69
	assert_equal "$(printf '%s\n' "$stderr" | wc -l)" 1
	assert_stderr_has "redis-sentinel://127.0.0.1:$TS3_PORT" "rediss-sentinel://"
	assert_equal "$(mcli TM EXISTS 'rlock:{job}')" 0
}

@test "sentinel-tls: rediss-sentinel:// speaks TLS from its first byte: a recording sentinel listed first gets a ClientHello, no password" {
	# A listener that records what it is sent for up to 2 s, then hangs up;
	# rlock's handshake with it fails and the next sentinel is asked.
	bg_start REC timeout 30 /usr/bin/python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(4)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
c.settimeout(0.2)
got = b""
end = time.time() + 2
while time.time() < end and len(got) < 65536:
    try:
        d = c.recv(4096)
    except socket.timeout:
        if got:
            break
        continue
    if not d:
        break
    got += d
open(sys.argv[1], "wb").write(got)
c.close()
' "$BATS_TEST_TMPDIR/recorded"
	wait_port_line REC
	run --separate-stderr rlock \
		-u "rediss-sentinel://:$MPW@127.0.0.1:$REC_PORT,$TSENT_HOSTS/mm" \
		--tls-ca "$TLS_CA" --sentinel-password-file spw acquire job
	assert_success
	assert_equal "$(mcli TM HKEYS 'rlock:{job}')" "$output"
	bg_wait "$REC" 10000 || fail "the recording listener did not finish"
	[[ -s recorded ]] || fail "nothing reached the recording sentinel"
	# A TLS handshake record: content type 22, version 3.x.
	assert_equal "$(head -c 2 recorded | od -An -tx1 | tr -d ' \n')" 1603
	! grep -qaF "$SPW" recorded || fail "the sentinel password went out in clear"
	! grep -qaF "$MPW" recorded || fail "the master password went out in clear"
	! grep -qaiF "SENTINEL" recorded || fail "a Sentinel command went out in clear"
}

@test "sentinel-tls: a waiter (-w) rides through a failover over TLS after the master is SIGKILLed" {
	# A group of this test's own: the master dies.
	start_tls_sentinel_group
	TURL="rediss-sentinel://:$MPW@$TSENT_HOSTS/mm"
	local a=(-u "$TURL" --tls-ca "$TLS_CA" --sentinel-password-file spw)

	run --separate-stderr rlock "${a[@]}" --ttl 4s acquire job
	assert_success
	local old=$output i
	# The replica has it before the master dies (bounded).
	for ((i = 0; i < 100; i++)); do
		[[ "$(mcli TR HKEYS 'rlock:{job}')" == "$old" ]] && break
		sleep 0.05
	done
	assert_equal "$(mcli TR HKEYS 'rlock:{job}')" "$old"

	bg_start W "$RLOCK" "${a[@]}" -w 60s acquire job
	# Until the waiter is blocked on the master.
	for ((i = 0; i < 200; i++)); do
		mcli TM CLIENT LIST 2>/dev/null | grep -q 'cmd=blpop' && break
		sleep 0.05
	done
	mcli TM CLIENT LIST | grep -q 'cmd=blpop' || fail "the waiter never waited on the master"

	kill -KILL "$TM_PID"
	bg_wait "$W" 60000 || fail "the waiter did not finish within 60 s"
	((BG_STATUS == 0)) || fail "the waiter exited $BG_STATUS: $(cat "$BATS_TEST_TMPDIR/W.err")"
	local tok
	tok=$(head -n1 "$BATS_TEST_TMPDIR/W.out")
	[[ "$tok" =~ $UUID_RE ]] || fail "no token printed: $(cat "$BATS_TEST_TMPDIR/W.err")"
	[[ "$tok" != "$old" ]] || fail "the waiter printed the old holder's token"
	# The promoted replica holds it, and every sentinel names it.
	assert_equal "$(mcli TR HKEYS 'rlock:{job}')" "$tok"
	assert_equal "$(stcli TS1 SENTINEL GET-MASTER-ADDR-BY-NAME mm | sed -n 2p)" "$TR_PORT"
}

@test "sentinel-tls: doctor finds TLS to the sentinels and the master, and a master that wants a password" {
	run --separate-stderr rlock -u "$TURL" --tls-ca "$TLS_CA" \
		--sentinel-password-file spw doctor
	local shown="rediss-sentinel://$TSENT_HOSTS/mm"
	[[ "$output" == *"ok       $shown: transport: TLS to the sentinels and to the master they name"* ]] ||
		fail "no transport ok: $output $stderr"
	[[ "$output" == *"ok       $shown: auth: a client without a password is refused"* ]] ||
		fail "no auth ok: $output $stderr"
	[[ "$output$stderr" != *"$MPW"* && "$output$stderr" != *"$SPW"* ]] || fail "a password shows"
}

@test "sentinel-tls: exec's guard gives the lock back through the TLS sentinels when rlock is SIGKILLed (the sentinels' password from the environment)" {
	export RLOCK_SENTINEL_PASSWORD=$SPW
	bg_start R "$RLOCK" -u "$TURL" --tls-ca "$TLS_CA" exec -t 60s gjob \
		-c 'echo $$ > cmd.pid; exec sleep 60'
	wait_file cmd.pid 10000 || fail "the command did not start: $(cat "$BATS_TEST_TMPDIR/R.err")"
	track_pid "$(cat cmd.pid)" sleep
	[[ -n "$(mcli TM HKEYS 'rlock:{gjob}')" ]] || fail "the lock is not held"
	local i
	for ((i = 0; i < 250; i++)); do
		pgrep -P "$R" -x rlock-guard >/dev/null && break
		sleep 0.02
	done
	pgrep -P "$R" -x rlock-guard >/dev/null || fail "no guard"
	kill -KILL "$R"
	# Well before the 60 s TTL (bounded: 10 s).
	for ((i = 0; i < 200; i++)); do
		[[ "$(mcli TM EXISTS 'rlock:{gjob}')" == 0 ]] && break
		sleep 0.05
	done
	assert_equal "$(mcli TM EXISTS 'rlock:{gjob}')" 0
	wait_gone "$(cat cmd.pid)" 5000 || fail "the command outlived rlock"
}

@test "sentinel-tls: exec's command does not see RLOCK_SENTINEL_PASSWORD" {
	RLOCK_SENTINEL_PASSWORD=$SPW run --separate-stderr rlock -u "$TURL" \
		--tls-ca "$TLS_CA" exec envjob -- sh -c 'env > cmd.env'
	assert_success
	[[ -s cmd.env ]] || fail "the command did not run"
	! grep -q "$SPW" cmd.env || fail "the command sees the sentinels' password"
	! grep -q "$MPW" cmd.env || fail "the command sees the master's password"
}

@test "sentinel-tls: a missing, empty or non-regular --sentinel-password-file is one usage line, exit 64, at once" {
	run --separate-stderr rlock -u "$TURL" --tls-ca "$TLS_CA" \
		--sentinel-password-file nosuch acquire job
	assert_equal "$status" 64
	assert_equal "$(printf '%s\n' "$stderr" | wc -l)" 1
	assert_stderr_has "--sentinel-password-file" "nosuch"
	: >empty
	run --separate-stderr rlock -u "$TURL" --tls-ca "$TLS_CA" \
		--sentinel-password-file empty acquire job
	assert_equal "$status" 64
	assert_stderr_has "--sentinel-password-file" "holds no password"
	mkfifo fifo
	run --separate-stderr timeout 10 "$RLOCK" -u "$TURL" --tls-ca "$TLS_CA" \
		--sentinel-password-file fifo acquire job
	assert_equal "$status" 64
	assert_equal "$(printf '%s\n' "$stderr" | wc -l)" 1
	assert_stderr_has "--sentinel-password-file"
	assert_equal "$(mcli TM EXISTS 'rlock:{job}')" 0
}

@test "sentinel-tls: without sentinel options, a sentinel that answers NOAUTH gets the URL's credentials (as before)" {
	local v
	for v in TS1 TS2 TS3; do
		assert_equal "$(stcli "$v" ACL SETUSER both on '>both-pw' '+@all')" OK
	done
	assert_equal "$(mcli TM ACL SETUSER both on '>both-pw' '~*' '+@all')" OK
	run --separate-stderr rlock -u "rediss-sentinel://both:both-pw@$TSENT_HOSTS/mm" \
		--tls-ca "$TLS_CA" acquire job
	local st=$status out=$output err=$stderr
	for v in TS1 TS2 TS3; do stcli "$v" ACL DELUSER both >/dev/null; done
	mcli TM ACL DELUSER both >/dev/null
	((st == 0)) || fail "exit $st: $err"
	assert_equal "$(mcli TM HKEYS 'rlock:{job}')" "$out"
}
