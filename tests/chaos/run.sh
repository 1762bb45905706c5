#!/bin/bash
# run.sh: the randomized fault checker (tests/chaos/README.md).
#
#   tests/chaos/run.sh [--seed N] [--seconds S] [--mode single|quorum|cluster|all]
#                      [--rlock PATH] [--sabotage on-lost-ignore] [--keep]
#
# Compiles stamp.c into a temporary directory, runs check.py for the mode
# (all: single for S seconds, then quorum and cluster for S/2 each, with
# seeds N, N+1, N+2), prints the seed first and each scenario's summary, and
# exits non-zero on any violation, stuck lock or leftover.  The logs of a
# failed scenario are kept (their directory is printed); --keep keeps all.
set -u
here=$(cd "$(dirname "$0")" && pwd)
seed= seconds=60 mode=single rlock="$here/../../src/rlock" sabotage= keep=0
while (($#)); do
	case $1 in
	--seed) seed=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--mode) mode=$2; shift 2 ;;
	--rlock) rlock=$2; shift 2 ;;
	--sabotage) sabotage=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	*) echo "usage: run.sh [--seed N] [--seconds S] [--mode single|quorum|cluster|all] [--rlock PATH] [--sabotage on-lost-ignore] [--keep]" >&2; exit 64 ;;
	esac
done
[[ -n "$seed" ]] || seed=$(( (RANDOM << 15 | RANDOM) + 1 ))
case $mode in single|quorum|cluster|all) ;; *) echo "run.sh: bad --mode $mode" >&2; exit 64 ;; esac
[[ "$seed" =~ ^[0-9]+$ ]] || { echo "run.sh: bad --seed $seed" >&2; exit 64; }
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "run.sh: bad --seconds $seconds" >&2; exit 64; }
[[ -x "$rlock" ]] || { echo "run.sh: no rlock binary at $rlock" >&2; exit 64; }
rlock=$(cd "$(dirname "$rlock")" && pwd)/$(basename "$rlock")
echo "chaos: seed $seed"

# A short directory (Unix socket paths must fit in 108 bytes): under
# $CHAOS_TMP if set (chaos.bats: the test's own, removed with it), else /tmp.
tmp=$(mktemp -d "${CHAOS_TMP:-/tmp}/chaos.XXXXXX") || exit 70
pid=
cleanup() {
	# Stop the checker (it stops everything it started, by PID).
	if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null
		for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
	fi
	if ((failed == 0 && keep == 0)); then rm -rf -- "$tmp"; else echo "chaos: logs kept in $tmp"; fi
}
failed=0
trap cleanup EXIT
trap 'failed=1; exit 130' INT TERM HUP

cc -std=c11 -O2 -Wall -Wextra -o "$tmp/stamp" "$here/stamp.c" || { failed=1; exit 70; }

one() {
	local m=$1 s=$2 sd=$3 rc
	mkdir -p "$tmp/$m"
	/usr/bin/python3 "$here/check.py" --seed "$sd" --seconds "$s" --mode "$m" \
		--rlock "$rlock" --stamp "$tmp/stamp" --dir "$tmp/$m" \
		${sabotage:+--sabotage "$sabotage"} </dev/null &
	pid=$!
	wait "$pid"
	rc=$?
	pid=
	((rc == 0)) || failed=1
	return "$rc"
}

status=0
if [[ $mode == all ]]; then
	half=$(( (seconds + 1) / 2 ))
	one single "$seconds" "$seed" || status=1
	one quorum "$half" $((seed + 1)) || status=1
	one cluster "$half" $((seed + 2)) || status=1
else
	one "$mode" "$seconds" "$seed" || status=$?
fi
exit "$status"
