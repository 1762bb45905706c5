set -u
dir=$1 pids=$2 RLOCK=$3
ip link set lo up && ip addr add 10.11.12.13/32 dev lo || exit 90
start() {
	redis-server --port "$1" --bind 10.11.12.13 --save '' --appendonly no \
		--daemonize no --dir "$dir" "${@:2}" </dev/null >>"$dir/redis.out" 2>&1 &
	echo $! >>"$pids"
	echo $!
}
a=$(start 6390 --requirepass ns-pw)
b=$(start 6391 --protected-mode no)
for ((i = 0; i < 250; i++)); do
	redis-cli -h 10.11.12.13 -p 6390 --no-auth-warning -a ns-pw PING 2>/dev/null | grep -q PONG &&
		redis-cli -h 10.11.12.13 -p 6391 PING 2>/dev/null | grep -q PONG && break
	sleep 0.02
done
"$RLOCK" -u redis://:ns-pw@10.11.12.13:6390 doctor >"$dir/pw.out" 2>&1
"$RLOCK" -u redis://10.11.12.13:6391 doctor >"$dir/nopw.out" 2>&1
kill "$a" "$b"
wait "$a" "$b"
exit 0
