#!/usr/bin/env bats
# static.bats: the static binaries scripts/static.sh leaves in dist/.
#
# Each of dist/rlock-linux-x86_64 and dist/rlock-linux-aarch64 that exists
# is run (the other architecture's under qemu-user-static) against loopback
# servers: over TCP by the names /etc/hosts gives, and over TLS with a
# certificate made here, verified by name, with a client certificate.  A
# binary that is absent skips its tests: scripts/static.sh builds them
# (RLOCK_STATIC_DIR: look elsewhere than dist/).

load helpers
load tls-helpers

STATIC_DIR=${RLOCK_STATIC_DIR:-$BATS_TEST_DIRNAME/../dist}

setup_file() {
	start_redis
	make_test_pki
	start_tls_redis_as TLS yes
}

teardown_file() {
	stop_all_redis
}

teardown() {
	cleanup_test
}

static_bin() {
	echo "$STATIC_DIR/rlock-linux-$1"
}

# need_static ARCH: skip unless that binary exists and can run here.
need_static() {
	[[ -x "$(static_bin "$1")" ]] ||
		skip "no $(static_bin "$1") (scripts/static.sh $1 builds it)"
	if [[ "$1" != "$(uname -m)" ]]; then
		command -v "qemu-$1-static" >/dev/null ||
			skip "qemu-$1-static is not installed (qemu-user-static)"
	fi
}

# srun ARCH ARGS...: the static binary of ARCH, under qemu if need be.
# Emulated, a TLS handshake takes up to a second on a busy machine: the
# time bounds are widened there, not the behaviour under test.
srun() {
	local arch=$1
	shift
	if [[ "$arch" == "$(uname -m)" ]]; then
		"$(static_bin "$arch")" "$@"
	else
		"qemu-$arch-static" "$(static_bin "$arch")" \
			--connect-timeout 10s --timeout 10s "$@"
	fi
}

# stls ARCH ARGS...: srun with the test PKI for the TLS server.
stls() {
	local arch=$1
	shift
	srun "$arch" --tls-ca "$TLS_CA" --tls-cert "$TLS_CLIENT_CRT" \
		--tls-key "$TLS_CLIENT_KEY" "$@"
}

# A name other than localhost that /etc/hosts gives to 127.0.0.1, if any.
hosts_name() {
	awk '$1 == "127.0.0.1" { for (i = 2; i <= NF; i++)
		if ($i != "localhost" && $i !~ /^#/) { print $i; exit } }' /etc/hosts
}

# --------------------------------------------------------------- checks

check_version() {
	need_static "$1"
	run --separate-stderr srun "$1" --version
	assert_success
	assert_output --regexp "^rlock [0-9.]+ \\(static $1 build, musl [0-9.]+; TLS: OpenSSL [0-9]+\\.[0-9]+\\.[0-9]+[^)]*\\)\$"
}

check_static() {
	need_static "$1"
	run readelf -l "$(static_bin "$1")"
	assert_success
	refute_output --partial INTERP
	run readelf -d "$(static_bin "$1")"
	refute_output --partial NEEDED
}

# acquire, status, release by a host name, over TCP.
check_tcp() {
	local arch=$1 host=$2 token url
	need_static "$arch"
	url="redis://$host:$REDIS_PORT"
	run --separate-stderr srun "$arch" -u "$url" acquire -t 30s "st-$arch-$host"
	assert_success
	token=$output
	[[ "$token" =~ $UUID_RE ]]
	assert_equal "$(rcli HKEYS "rlock:{st-$arch-$host}")" "$token"
	run --separate-stderr srun "$arch" -u "$url" status "st-$arch-$host"
	assert_success
	assert_output --partial "st-$arch-$host"
	run --separate-stderr srun "$arch" -u "$url" acquire -n "st-$arch-$host"
	assert_equal "$status" 1
	run --separate-stderr srun "$arch" -u "$url" release --token "$token" "st-$arch-$host"
	assert_success
	assert_equal "$(rcli EXISTS "rlock:{st-$arch-$host}")" 0
	run --separate-stderr srun "$arch" -u "$url" status "st-$arch-$host"
	assert_equal "$status" 1
}

# exec holds the lock while the command runs, over TCP.
check_exec() {
	local arch=$1
	need_static "$arch"
	run --separate-stderr srun "$arch" -u "redis://127.0.0.1:$REDIS_PORT" \
		exec "st-exec-$arch" -- sh -c \
		'echo "$RLOCK_NAME $RLOCK_FENCE"; exit 3'
	assert_equal "$status" 3
	assert_output --regexp "^st-exec-$arch [0-9]+\$"
	assert_equal "$(rcli EXISTS "rlock:{st-exec-$arch}")" 0
}

# acquire, status, exec and release over TLS, the server verified by name.
check_tls() {
	local arch=$1 token url
	need_static "$arch"
	url="rediss://localhost:$TLS_PORT"
	run --separate-stderr stls "$arch" -u "$url" acquire "st-tls-$arch"
	assert_success
	token=$output
	[[ "$token" =~ $UUID_RE ]]
	run --separate-stderr stls "$arch" -u "$url" status "st-tls-$arch"
	assert_success
	run --separate-stderr stls "$arch" -u "$url" release --token "$token" "st-tls-$arch"
	assert_success
	run --separate-stderr stls "$arch" -u "$url" exec "st-tls-$arch" -- \
		sh -c 'echo "held $RLOCK_NAME"'
	assert_success
	assert_output "held st-tls-$arch"
	assert_equal "$(tcli TLS EXISTS "rlock:{st-tls-$arch}")" 0
}

# The heartbeat thread extends the lock over its own TLS connection: musl
# gives a thread a smaller stack than glibc, and OpenSSL runs on it.
check_tls_heartbeat() {
	local arch=$1
	need_static "$arch"
	run --separate-stderr stls "$arch" -u "rediss://localhost:$TLS_PORT" -v \
		exec -t 5s --heartbeat 500ms "st-hb-$arch" -- sleep 2
	assert_success
	assert_stderr_has "extended st-hb-$arch"
	assert_equal "$(tcli TLS EXISTS "rlock:{st-hb-$arch}")" 0
}

# Without --tls-ca the test CA is unknown to the system store the built-in
# OpenSSL reads; SSL_CERT_FILE names another store, as with any OpenSSL.
check_tls_store() {
	local arch=$1
	need_static "$arch"
	run --separate-stderr srun "$arch" --tls-cert "$TLS_CLIENT_CRT" \
		--tls-key "$TLS_CLIENT_KEY" -u "rediss://localhost:$TLS_PORT" \
		acquire "st-store-$arch"
	assert_equal "$status" 69
	assert_one_error_line
	assert_stderr_has "not trusted"
	SSL_CERT_FILE=$TLS_CA run --separate-stderr srun "$arch" \
		--tls-cert "$TLS_CLIENT_CRT" --tls-key "$TLS_CLIENT_KEY" \
		-u "rediss://localhost:$TLS_PORT" status "st-store-$arch"
	assert_equal "$status" 1
	assert_equal "$stderr" ""
	assert_equal "$(tcli TLS EXISTS "rlock:{st-store-$arch}")" 0
}

# ---------------------------------------------------------------- x86_64

@test "static x86_64: --version says static, musl and the OpenSSL it carries" {
	check_version x86_64
}

@test "static x86_64: no program interpreter, no shared library" {
	check_static x86_64
}

@test "static x86_64: acquire, status, release over TCP to localhost" {
	check_tcp x86_64 localhost
}

@test "static x86_64: a name from /etc/hosts resolves as in the dynamic build" {
	local name
	name=$(hosts_name)
	[[ -n "$name" ]] || skip "/etc/hosts names no other host at 127.0.0.1"
	run rlock -u "redis://$name:$REDIS_PORT" status
	assert_success
	check_tcp x86_64 "$name"
}

@test "static x86_64: exec runs the command under the lock and passes its status" {
	check_exec x86_64
}

@test "static x86_64: acquire, status, release, exec over TLS with a client certificate" {
	check_tls x86_64
}

@test "static x86_64: exec's heartbeat extends the lock over TLS" {
	check_tls_heartbeat x86_64
}

@test "static x86_64: TLS without --tls-ca uses the system store, or SSL_CERT_FILE" {
	check_tls_store x86_64
}

# --------------------------------------------------------------- aarch64

@test "static aarch64: --version says static, musl and the OpenSSL it carries" {
	check_version aarch64
}

@test "static aarch64: no program interpreter, no shared library" {
	check_static aarch64
}

@test "static aarch64: acquire, status, release over TCP to localhost" {
	check_tcp aarch64 localhost
}

@test "static aarch64: a name from /etc/hosts resolves" {
	local name
	name=$(hosts_name)
	[[ -n "$name" ]] || skip "/etc/hosts names no other host at 127.0.0.1"
	check_tcp aarch64 "$name"
}

@test "static aarch64: exec runs the command under the lock and passes its status" {
	check_exec aarch64
}

@test "static aarch64: acquire, status, release, exec over TLS with a client certificate" {
	check_tls aarch64
}

@test "static aarch64: exec's heartbeat extends the lock over TLS" {
	check_tls_heartbeat aarch64
}

@test "static aarch64: TLS without --tls-ca uses the system store, or SSL_CERT_FILE" {
	check_tls_store aarch64
}
