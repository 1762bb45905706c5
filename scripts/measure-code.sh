#!/bin/bash
# measure-code.sh: the shape of src/ in figures anyone can rerun -- lines per
# file, who includes whom (and any circle), functions over 80 lines, and the
# threads a quorum exec starts (strace).  Usage:
#
#   scripts/measure-code.sh [TREE] [RLOCK]
#
# TREE is a checkout (default: this one), RLOCK the binary to trace (default
# TREE/src/rlock).  The thread count starts three throwaway redis-servers and
# a silent TCP listener on loopback, and stops them by PID.
set -u
tree=$(cd "${1:-$(dirname "$0")/..}" && pwd)
rlock=${2:-$tree/src/rlock}
cd "$tree/src" || exit 1

echo "## Lines per file"
wc -l ./*.c ./*.h | sort -n | sed 's|\./||'

echo
echo "## Includes of the project's own headers"
for f in ./*.c ./*.h; do
	printf '%s:' "${f#./}"
	sed -n 's/^#include "\([^"]*\)".*$/ \1/p' "$f" | grep -v ' config.h' | tr -d '\n'
	echo
done

echo
echo "## Include circles between a file pair (x.c or x.h includes y.h, y.c or y.h includes x.h)"
circles=0
for f in ./*.c ./*.h; do
	a=${f#./}
	a=${a%.[ch]}
	for h in $(sed -n 's/^#include "\([^"]*\)\.h".*$/\1/p' "$f"); do
		[[ "$h" == "$a" || "$h" == config ]] && continue
		if cat "$h.c" "$h.h" 2>/dev/null | grep -q "^#include \"$a.h\""; then
			[[ "$a" < "$h" ]] && { echo "$a <-> $h"; circles=$((circles + 1)); }
		fi
	done
done | sort -u
echo "(listed above; none means no circle)"

echo
echo "## Command files including a transport, TLS or redis header"
grep -l '#include "\(transport\|tls\|redis\)\.h"' cmd*.c || echo "none"

echo
echo "## Functions over 80 lines"
for f in ./*.c; do
	awk -v F="${f#./}" '
	/^[a-z_][a-z_0-9]*\(/ { name = $1; sub(/\(.*/, "", name); start = NR }
	/^}/ && start { len = NR - start + 1; if (len > 80) print F ": " name " (" len " lines)"; start = 0 }
	' "$f"
done | sort

echo
echo "## Threads a quorum exec starts (strace -f -e clone,clone3,fork,vfork)"
if ! command -v strace >/dev/null || ! command -v redis-server >/dev/null ||
    [[ ! -x "$rlock" ]]; then
	echo "skipped: needs strace, redis-server and $rlock"
	exit 0
fi
tmp=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
urls=()
for i in 1 2 3; do
	redis-server --port 0 --unixsocket "$tmp/r$i.sock" --save '' \
	    --appendonly no --daemonize no >/dev/null 2>&1 &
	pids+=($!)
	urls+=(-u "unix://$tmp/r$i.sock")
done
/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
c = []
end = time.time() + 60
while time.time() < end:
    s.settimeout(1)
    try: c.append(s.accept())
    except socket.timeout: pass
' "$tmp/silent.port" &
pids+=($!)
for ((i = 0; i < 250; i++)); do
	[[ -S "$tmp/r1.sock" && -S "$tmp/r2.sock" && -S "$tmp/r3.sock" && -s "$tmp/silent.port" ]] && break
	sleep 0.02
done
silent=$(cat "$tmp/silent.port")
trace() {	# LABEL RLOCK-ARGS...
	local label=$1
	shift
	strace -f -qq -e trace=clone,clone3,fork,vfork -o "$tmp/st" "$rlock" "$@" >/dev/null 2>&1
	printf '%-62s threads %d, processes %d\n' "$label" \
	    "$(grep -c CLONE_THREAD "$tmp/st")" \
	    "$(grep -v CLONE_THREAD "$tmp/st" | grep -c "clone\|fork")"
}
trace "3 servers, exec -- true" "${urls[@]}" exec m1 -- true
trace "3 servers, exec -t 1s -- sleep 1.5 (heartbeat)" "${urls[@]}" exec -t 1s m2 -- sleep 1.5
trace "3 + silent rediss:// + silent sentinel, exec -- true" "${urls[@]}" \
    -u "rediss://127.0.0.1:$silent" -u "redis-sentinel://127.0.0.1:$silent/m" \
    --tls-insecure --connect-timeout 2s exec m3 -- true
trace "3 + silent rediss:// + silent sentinel, exec -t 1s -- sleep 1.5" "${urls[@]}" \
    -u "rediss://127.0.0.1:$silent" -u "redis-sentinel://127.0.0.1:$silent/m" \
    --tls-insecure --connect-timeout 2s exec -t 1s m4 -- sleep 1.5
