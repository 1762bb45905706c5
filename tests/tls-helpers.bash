# tls-helpers.bash: a throwaway PKI and TLS Redis servers for tls.bats and
# config.bats. Load it after helpers.bash (it uses _scope_dir, _proc_alive and
# the .redis-pids bookkeeping there, so stop_all_redis stops these servers
# too). Every wait is bounded in count and time; servers are stopped by PID.

# make_test_pki [DIR]: in DIR (default $BATS_FILE_TMPDIR/pki) create
#   ca.crt/ca.key            the test CA
#   server.crt/server.key    signed by it, SANs DNS:localhost and IP:127.0.0.1
#   client.crt/client.key    signed by it, for clientAuth
#   other-ca.crt/other-ca.key  a second, unrelated CA
# and export TLS_DIR, TLS_CA, TLS_CA_KEY, TLS_SERVER_CRT, TLS_SERVER_KEY,
# TLS_CLIENT_CRT, TLS_CLIENT_KEY, TLS_OTHER_CA, TLS_OTHER_CA_KEY.
make_test_pki() {
	local d=${1:-$BATS_FILE_TMPDIR/pki}
	mkdir -p "$d" || return 1
	cat >"$d/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[v3ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
authorityKeyIdentifier = keyid
[client]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
EOF
	local k
	for k in ca other-ca server client; do
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
			-out "$d/$k.key" 2>"$d/openssl.log" || { cat "$d/openssl.log" >&2; return 1; }
		chmod 600 "$d/$k.key"
	done
	openssl req -config "$d/openssl.cnf" -x509 -new -key "$d/ca.key" -days 3 \
		-subj "/CN=rlock test CA" -extensions v3ca -out "$d/ca.crt" \
		2>>"$d/openssl.log" || { cat "$d/openssl.log" >&2; return 1; }
	openssl req -config "$d/openssl.cnf" -x509 -new -key "$d/other-ca.key" -days 3 \
		-subj "/CN=some other CA" -extensions v3ca -out "$d/other-ca.crt" \
		2>>"$d/openssl.log" || { cat "$d/openssl.log" >&2; return 1; }
	for k in server client; do
		openssl req -config "$d/openssl.cnf" -new -key "$d/$k.key" \
			-subj "/CN=rlock test $k" -out "$d/$k.csr" 2>>"$d/openssl.log" ||
			{ cat "$d/openssl.log" >&2; return 1; }
		openssl x509 -req -in "$d/$k.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
			-CAcreateserial -days 3 -extfile "$d/openssl.cnf" -extensions "$k" \
			-out "$d/$k.crt" 2>>"$d/openssl.log" || { cat "$d/openssl.log" >&2; return 1; }
	done
	# The chain must verify, or every test below would fail obscurely.
	openssl verify -CAfile "$d/ca.crt" "$d/server.crt" "$d/client.crt" >/dev/null ||
		return 1
	export TLS_DIR=$d
	export TLS_CA=$d/ca.crt TLS_CA_KEY=$d/ca.key
	export TLS_SERVER_CRT=$d/server.crt TLS_SERVER_KEY=$d/server.key
	export TLS_CLIENT_CRT=$d/client.crt TLS_CLIENT_KEY=$d/client.key
	export TLS_OTHER_CA=$d/other-ca.crt TLS_OTHER_CA_KEY=$d/other-ca.key
}

# start_tls_redis_as VAR AUTH_CLIENTS [redis-server args...]
#
# Start a TLS-only redis-server (--port 0) on a random free loopback TLS
# port, with --tls-auth-clients AUTH_CLIENTS (optional|yes|no); at most 20
# ports are tried. Sets and exports VAR_PORT, VAR_PID, VAR_DIR and VAR_URL
# (rediss://127.0.0.1:PORT). The PID is recorded with the other servers of
# the scope, so stop_all_redis stops it.
start_tls_redis_as() {
	local var=$1 auth=$2
	shift 2
	local scope dir port pid try
	scope=$(_scope_dir)
	dir=$(mktemp -d "$scope/tlsredis.XXXXXX")
	for ((try = 0; try < 20; try++)); do
		port=$((20000 + RANDOM % 40001))
		redis-server --port 0 --tls-port "$port" --bind 127.0.0.1 \
			--tls-cert-file "$TLS_SERVER_CRT" --tls-key-file "$TLS_SERVER_KEY" \
			--tls-ca-cert-file "$TLS_CA" --tls-auth-clients "$auth" \
			--save '' --appendonly no --daemonize no \
			--dir "$dir" --logfile "$dir/redis.log" \
			"$@" </dev/null >"$dir/stdout.log" 2>&1 3>&- &
		pid=$!
		echo "$pid" >>"$scope/.redis-pids"
		# 2 s per ping, should a foreign listener on that port swallow
		# it. Redis exits at once if the port is taken, so "still alive
		# after a PONG" means it is ours.
		if _await_pong "$pid" timeout 2 redis-cli --tls --cacert "$TLS_CA" \
			--cert "$TLS_CLIENT_CRT" --key "$TLS_CLIENT_KEY" \
			-h 127.0.0.1 -p "$port" --no-auth-warning \
			${_start_auth:+-a "$_start_auth"} ping; then
			printf -v "${var}_PORT" '%s' "$port"
			printf -v "${var}_PID" '%s' "$pid"
			printf -v "${var}_DIR" '%s' "$dir"
			printf -v "${var}_URL" '%s' "rediss://127.0.0.1:$port"
			export "${var}_PORT" "${var}_PID" "${var}_DIR" "${var}_URL"
			return 0
		fi
		_kill_pid "$pid"
	done
	_start_failed start_tls_redis_as "a TLS redis-server" "$dir"
}

# tcli VAR [redis-cli args...]: redis-cli over TLS (with the client
# certificate, so it also works where one is required) to the server
# started as VAR. Bounded to 10 s. Set RCLI_AUTH for a password.
tcli() {
	local var=$1
	shift
	local portv="${var}_PORT"
	timeout 10 redis-cli --tls --cacert "$TLS_CA" \
		--cert "$TLS_CLIENT_CRT" --key "$TLS_CLIENT_KEY" \
		-h 127.0.0.1 -p "${!portv}" --no-auth-warning \
		${RCLI_AUTH:+-a "$RCLI_AUTH"} "$@"
}

# assert_no_locks VAR: no key under rlock: on the TLS server VAR.
assert_no_locks() {
	local keys
	keys=$(tcli "$1" KEYS 'rlock:*')
	if [[ -n "$keys" ]]; then
		batslib_print_kv_single_or_multi 8 keys "$keys" |
			batslib_decorate "expected no rlock:* keys on $1" |
			fail
	fi
}

# assert_elapsed_below START_MS MAX_MS [LABEL]
assert_elapsed_below() {
	local start=$1 max=$2 label=${3:-elapsed ms} el
	el=$(($(now_ms) - start))
	assert_between "$el" 0 "$max" "$label"
}

# assert_stderr_has TEXT...: every TEXT occurs in $stderr.
assert_stderr_has() {
	local t
	for t in "$@"; do
		if [[ "$stderr" != *"$t"* ]]; then
			batslib_print_kv_single_or_multi 8 expected "$t" stderr "$stderr" |
				batslib_decorate "stderr lacks the expected text" |
				fail
			return
		fi
	done
}

# start_silent_listener VAR: a loopback TCP listener that accepts one
# connection and never answers (gone after 60 s at most; stopped by PID in
# teardown). Sets VAR to its PID and VAR_PORT to its port.
start_silent_listener() {
	local var=$1
	bg_start "$var" timeout 60 python3 -c '
import socket, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
conns = []
deadline = time.time() + 55
while time.time() < deadline:
    s.settimeout(max(0.1, deadline - time.time()))
    try:
        conns.append(s.accept())
    except socket.timeout:
        pass
'
	wait_port_line "$var"
}
