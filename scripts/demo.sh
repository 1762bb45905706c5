#!/bin/sh
# demo.sh: install what is needed, build, and show rlock doing its job:
# acquire, status, a second acquire waiting, release, the hand-over, and a
# crontab line fired on three "machines" the same minute (one 3 s late)
# that runs the job once.
# Uses $RLOCK_URL if set; otherwise starts a throwaway redis-server on a
# Unix socket of its own and stops it at the end.
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh
rlock=./src/rlock

tmp=$(mktemp -d)
redis_pid=
waiter=
cleanup() {
	[ -n "$waiter" ] && kill "$waiter" 2>/dev/null
	[ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

if [ -z "${RLOCK_URL:-}" ]; then
	redis-server --port 0 --unixsocket "$tmp/redis.sock" --save '' \
	    --appendonly no --dir "$tmp" --logfile "$tmp/redis.log" &
	redis_pid=$!
	i=0
	until redis-cli -s "$tmp/redis.sock" ping >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 250 ] || { echo "redis-server did not start" >&2; exit 1; }
		sleep 0.02
	done
	RLOCK_URL="unix://$tmp/redis.sock"
	export RLOCK_URL
	echo "# started a throwaway redis-server on $RLOCK_URL"
fi

say() { printf '\n$ %s\n' "$*"; }

say 'TOKEN=$(rlock acquire -t 30s deploy)'
TOKEN=$($rlock acquire -t 30s deploy)
echo "$TOKEN"

say 'rlock status deploy'
$rlock status deploy

say 'rlock acquire -n deploy   # busy: exits 1 at once'
$rlock acquire -n deploy || echo "exit status $?"

say 'rlock acquire -w 10s deploy &   # a second holder waits...'
$rlock -v acquire -w 10s deploy >"$tmp/second" 2>"$tmp/second.err" &
waiter=$!
sleep 1

say 'rlock release --token "$TOKEN" deploy   # ...and gets it at once'
$rlock release --token "$TOKEN" deploy
wait "$waiter" && waiter=
cat "$tmp/second.err"
SECOND=$(cat "$tmp/second")

say 'rlock status --json'
$rlock status --json

$rlock release --token "$SECOND" deploy
say 'rlock status deploy'
$rlock status deploy || true

# The README's crontab line, fired the same minute on three "machines",
# the third 3 s late: one runs the job; the others are refused, quietly.
cat >"$tmp/report" <<'JOB'
#!/bin/sh
echo "report ran on $1"
JOB
chmod +x "$tmp/report"
say 'for m in web1 web2; do   # cron fires the same minute on three machines
    rlock exec -n --every 1m nightly-report -- ./report $m &
  done; sleep 3   # the cron of web3 is 3 s late
  rlock exec -n --every 1m nightly-report -- ./report web3; wait'
pids=
for m in web1 web2; do
	$rlock exec -n --every 1m nightly-report -- "$tmp/report" $m &
	pids="$pids $!"
done
sleep 3
$rlock exec -n --every 1m nightly-report -- "$tmp/report" web3 || true
for p in $pids; do wait "$p" || true; done
say 'rlock log nightly-report; rlock status   # one run this minute, whoever was late'
$rlock log nightly-report
$rlock status
