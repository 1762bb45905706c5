# extra-helpers.bash: helpers for hostile.bats, security.bats, soak.bats,
# doctor.bats and syslog.bats.
#
# Loaded after helpers.bash (and, where needed, exec-helpers.bash). It adds a
# table runner for bad-input sweeps, a check that a server holds no keys, and
# a private /dev/log (in a private mount namespace) for the syslog tests.

# ---------------------------------------------------------------------------
# Table-driven bad-input sweeps
# ---------------------------------------------------------------------------

# The failures of the current sweep, one description per entry.
SWEEP_FAILS=()

# sweep_reset: start a new sweep.
sweep_reset() {
	SWEEP_FAILS=()
	SWEEP_COUNT=0
	SWEEP_FD=
}

# _sweep_keys: SWEEP_KEYS := how many keys the file's server holds, asked
# on a connection of bash's own (/dev/tcp, opened once a sweep), not by a
# redis-cli a case; -1 if that connection cannot ask (it is closed then, so
# that no reply left unread answers the next question).
_sweep_keys() {
	local line LC_ALL=C
	SWEEP_KEYS=-1
	if [[ -z $SWEEP_FD ]]; then
		exec {SWEEP_FD}<>"/dev/tcp/127.0.0.1/$REDIS_PORT" || { SWEEP_FD=; return; }
		if [[ -n ${RCLI_AUTH:-} ]]; then
			printf '*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n' "${#RCLI_AUTH}" \
				"$RCLI_AUTH" >&"$SWEEP_FD"
			IFS= read -r -t 10 line <&"$SWEEP_FD" && [[ $line == +OK* ]] ||
				{ _sweep_close; return; }
		fi
	fi
	# Inline, one line: bash's printf writes a line at a time, and a
	# request in three writes waited out the server's delayed ACK (40 ms
	# a case, Nagle).  (The AUTH above is once a sweep.)
	printf 'DBSIZE\r\n' >&"$SWEEP_FD" &&
		IFS= read -r -t 10 line <&"$SWEEP_FD" || { _sweep_close; return; }
	line=${line%$'\r'}
	[[ $line =~ ^:[0-9]+$ ]] || { _sweep_close; return; }
	SWEEP_KEYS=${line#:}
}

_sweep_close() {
	[[ -z ${SWEEP_FD:-} ]] || exec {SWEEP_FD}>&-
	SWEEP_FD=
}

# A printable form of an argument list (binary bytes escaped), for messages.
_show_args() {
	local a s=
	for a in "$@"; do
		s+=" $(printf '%q' "$a")"
	done
	# A 10000-byte name would drown the report.
	if ((${#s} > 300)); then
		s="${s:0:300}...(${#s} chars)"
	fi
	echo "${s# }"
}

# sweep_case WANT ARGS...: run rlock ARGS (bounded to 20 s, stdin from
# /dev/null) and check that it exits WANT with nothing on stdout, exactly one
# stderr line starting "rlock: " (so no sanitizer report, no stray warning),
# no crash (exit >= 128), and that the file's server holds no key afterwards.
# A failure is recorded, not raised, so that one test reports every bad case
# of its table; call sweep_finish at the end. SWEEP_NOTE (e.g. the
# environment a case ran with) is put before the command in the report.
sweep_case() {
	local want=$1
	shift
	local out="$BATS_TEST_TMPDIR/sweep.out" err="$BATS_TEST_TMPDIR/sweep.err"
	local st=0 keys why='' lines=() all
	SWEEP_COUNT=$((SWEEP_COUNT + 1))
	timeout -k 5 20 "$RLOCK" "$@" </dev/null >"$out" 2>"$err" || st=$?
	# mapfile counts a last line without a newline as a line too.
	mapfile -t lines <"$err"
	all=${lines[*]}
	if ((st == 124)); then
		why+=" [timed out after 20 s]"
	elif ((st >= 128)); then
		why+=" [crashed: exit $st]"
	elif ((st != want)); then
		why+=" [exit $st, want $want]"
	fi
	if [[ "$all" == *Sanitizer* || "$all" == *"runtime error:"* ]]; then
		why+=" [sanitizer report]"
	fi
	if ((${#lines[@]} != 1)) || [[ "${lines[0]}" != "rlock: "* ]]; then
		why+=" [want one 'rlock: ' line on stderr, got ${#lines[@]} line(s)]"
	fi
	if [[ -s "$out" ]]; then
		why+=" [stdout not empty: $(head -c 60 "$out" | cat -v | tr '\n' ' ')]"
	fi
	_sweep_keys
	keys=
	((SWEEP_KEYS == 0)) || keys=$(rcli --raw KEYS '*')
	if [[ -n "$keys" ]]; then
		why+=" [server holds keys afterwards: $(tr '\n' ' ' <<<"$keys" | head -c 200)]"
		rcli FLUSHALL >/dev/null
	fi
	if [[ -n "$why" ]]; then
		SWEEP_FAILS+=("${SWEEP_NOTE:+$SWEEP_NOTE }rlock $(_show_args "$@"):$why; stderr: $(head -c 300 "$err" | cat -v)")
	fi
	return 0
}

# sweep_finish: fail, listing every bad case, if any case of the sweep failed;
# also fail if the sweep ran no case at all (an empty table checks nothing).
sweep_finish() {
	local f
	_sweep_close
	if ((SWEEP_COUNT == 0)); then
		fail "the sweep ran no case"
	fi
	if ((${#SWEEP_FAILS[@]} > 0)); then
		{
			echo "${#SWEEP_FAILS[@]} of $SWEEP_COUNT cases failed:"
			for f in "${SWEEP_FAILS[@]}"; do
				echo "  - $f"
			done
		} | fail
	fi
}

# assert_no_keys: the file's server holds no key at all.
assert_no_keys() {
	local keys
	keys=$(rcli --raw KEYS '*')
	if [[ -n "$keys" ]]; then
		batslib_print_kv_single_or_multi 8 keys "$keys" |
			batslib_decorate "the server should hold no key" |
			fail
	fi
}

# ---------------------------------------------------------------------------
# A private /dev/log
# ---------------------------------------------------------------------------

# The machine may have no syslog daemon (no /dev/log), and a test must not
# create one for everybody. with_private_devlog runs a command in a private
# mount namespace whose /dev is a fresh tmpfs (null, zero, full, random,
# urandom and tty copied in) with a datagram listener bound at /dev/log that
# appends every message it receives, one a line, to $BATS_TEST_TMPDIR/syslog.msgs.
# Usage: with_private_devlog CMD [ARGS...]; returns CMD's exit status.
# Needs unshare(1) and the right to mount (root); devlog_available says so.
devlog_available() {
	command -v unshare >/dev/null || return 1
	unshare -m --propagation private true 2>/dev/null || return 1
	command -v python3 >/dev/null || return 1
}

with_private_devlog() {
	local wrap="$BATS_TEST_TMPDIR/devlog-wrap.sh"
	cat >"$wrap" <<'EOF'
#!/bin/bash
# Runs inside `unshare -m`: nothing here is seen outside the namespace.
D=$1
shift
mkdir -p "$D/olddev" || exit 90
mount --bind /dev "$D/olddev" || exit 90
mount -t tmpfs -o mode=755 rlock-test-dev /dev || exit 90
for n in null zero full random urandom tty; do
	cp -a "$D/olddev/$n" /dev/ 2>/dev/null || true
done
ln -s /proc/self/fd /dev/fd
umount "$D/olddev" 2>/dev/null || true
rm -f "$D/listener.ready"
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
out = open(sys.argv[1], "ab", buffering=0)
open(sys.argv[2], "w").close()
while True:
    m = s.recv(65536)
    out.write(m.replace(b"\n", b" ") + b"\n")
' "$D/syslog.msgs" "$D/listener.ready" </dev/null >/dev/null 2>"$D/listener.err" &
lp=$!
for ((i = 0; i < 250; i++)); do
	[[ -e "$D/listener.ready" && -S /dev/log ]] && break
	sleep 0.02
done
if ! [[ -S /dev/log ]]; then
	kill "$lp" 2>/dev/null
	exit 91
fi
st=0
"$@" || st=$?
# Let the listener write what it has received.
sleep 0.1
kill "$lp" 2>/dev/null
wait "$lp" 2>/dev/null
exit "$st"
EOF
	chmod +x "$wrap"
	touch "$BATS_TEST_TMPDIR/syslog.msgs"
	unshare -m --propagation private "$wrap" "$BATS_TEST_TMPDIR" "$@"
}
