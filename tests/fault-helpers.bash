# fault-helpers.bash: helpers for faults.bats.
#
# Loaded after helpers.bash (the test file's setup, file_server_setup, loads
# exec-helpers.bash: stopper_script uses its make_script). It puts
# faultproxy.py (a loopback TCP proxy that delays, blackholes, resets or
# cuts traffic on command) between rlock and a real redis-server. Every proxy
# belongs to one test: it is started in the test, recorded by PID and stopped
# by PID in teardown (and it exits by itself after --max-seconds anyway).
# Its control socket lives in a short /tmp directory (sun_path is small).

FAULTPROXY="$BATS_TEST_DIRNAME/faultproxy.py"

# start_proxy VAR TARGET_PORT: start a proxy in front of 127.0.0.1:TARGET_PORT
# on a free loopback port. Sets and exports VAR_PORT, VAR_URL, VAR_CTL (its
# control socket) and VAR_PID. Waits (bounded: 10 s) until it has printed its
# port, which it does only once both its sockets accept connections.
start_proxy() {
	local var=$1 target=$2 dir pid port i
	dir=$(mktemp -d /tmp/rlp.XXXXXX)
	echo "$dir" >>"$BATS_TEST_TMPDIR/.proxy-dirs"
	python3 "$FAULTPROXY" --listen 127.0.0.1:0 --target "127.0.0.1:$target" \
		--control "$dir/ctl" --max-seconds 120 \
		</dev/null >"$dir/port" 2>"$dir/err" 3>&- &
	pid=$!
	echo "$pid" >>"$BATS_TEST_TMPDIR/.proxy-pids"
	for ((i = 0; i < 500; i++)); do
		[[ -s "$dir/port" ]] && break
		_proc_alive "$pid" || break
		sleep 0.02
	done
	port=$(head -n 1 "$dir/port" 2>/dev/null)
	if ! [[ "$port" =~ ^[0-9]+$ ]]; then
		echo "start_proxy: the proxy did not start: $(cat "$dir/err")" >&2
		return 1
	fi
	printf -v "${var}_PORT" '%s' "$port"
	printf -v "${var}_URL" '%s' "redis://127.0.0.1:$port"
	printf -v "${var}_CTL" '%s' "$dir/ctl"
	printf -v "${var}_PID" '%s' "$pid"
	export "${var}_PORT" "${var}_URL" "${var}_CTL" "${var}_PID"
}

# proxy VAR WORDS...: send a control command (pass | delay MS | blackhole |
# drop | cut [TEXT] | stats) to the proxy started as VAR. The reply, which
# comes only once the change is in force, is left in PROXY_REPLY; fails the
# test's step unless it starts with "ok".
proxy() {
	local var=$1
	shift
	local ctlv="${var}_CTL"
	PROXY_REPLY=$(python3 "$FAULTPROXY" --control "${!ctlv}" --send "$*" 2>&1) || {
		echo "proxy $var $*: $PROXY_REPLY" >&2
		return 1
	}
}

# reply_field KEY: a KEY=VALUE field of the last PROXY_REPLY (e.g. "at", the
# proxy's wall-clock ms when the change took effect; "accepted", "cuts",
# "closed").
reply_field() {
	local w
	for w in $PROXY_REPLY; do
		if [[ "$w" == "$1="* ]]; then
			echo "${w#*=}"
			return 0
		fi
	done
	return 1
}

# proxy_stat VAR KEY: one counter of the proxy started as VAR, right now.
proxy_stat() {
	proxy "$1" stats && reply_field "$2"
}

# Stop every proxy of this test by PID, then remove their directories.
stop_all_proxies() {
	stop_listed "$BATS_TEST_TMPDIR/.proxy-pids" "$BATS_TEST_TMPDIR/.proxy-dirs" /tmp/rlp.
}

# wait_key_gone_on PORT KEY [MAX_MS]: wait (bounded, 20 ms steps) until KEY
# no longer exists on the real server at PORT; returns 1 on time-out.
wait_key_gone_on() {
	local port=$1 key=$2 max_ms=${3:-5000} i
	for ((i = 0; i < max_ms / 20; i++)); do
		[[ "$(redis-cli -h 127.0.0.1 -p "$port" EXISTS "$key")" == 0 ]] && return 0
		sleep 0.02
	done
	[[ "$(redis-cli -h 127.0.0.1 -p "$port" EXISTS "$key")" == 0 ]]
}

# stopper_script [EXIT]: ./stopper.sh, a command that writes its pid and
# token, says it is ready, and runs for at most 30 s. On SIGTERM it writes the
# time (ms since the epoch) to the file "stopped"; then it exits with EXIT,
# or with no EXIT it keeps running (a later TERM changes nothing) so that only
# SIGKILL ends it. Its short sleeps run in the background under `wait`, so
# the trap runs the moment the signal arrives (the TERM sent to the process
# group also kills the current sleep; the loop goes on). Its own stderr
# goes to child.err.
stopper_script() {
	local on_term="[ -e stopped ] || date +%s%3N > stopped"
	if [[ -n "${1:-}" ]]; then on_term+="; exit $1"; fi
	make_script stopper.sh "exec 2>>child.err
trap '$on_term' TERM
echo \$\$ > pid
echo \"\$RLOCK_TOKEN\" > token
echo ready > ready
i=0
while [ \$i -lt 300 ]; do sleep 0.1 & wait \$!; i=\$((i + 1)); done
echo finished > finished" >/dev/null
}
