#!/bin/sh
# test-under-load.sh [COMMAND...]: run the test suite (default: the README's
# test command, ./scripts/test.sh) beside two CPU burners, as on a shared CI
# machine.  The burners are busy shell loops (no stress-ng needed), one per
# core of a two-core machine, each bounded by LOAD_SECONDS (default 3600)
# and stopped by PID when the suite ends.  Exits with the suite's status.
# Not part of CI: run it by hand before resolving anything timing-related.
set -u
cd "$(dirname "$0")/.."
burners=${LOAD_BURNERS:-2}
seconds=${LOAD_SECONDS:-3600}
pids=
i=0
while [ "$i" -lt "$burners" ]; do
	timeout "$seconds" sh -c 'while :; do :; done' &
	pids="$pids $!"
	i=$((i + 1))
done
stop() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
}
trap 'stop; exit 130' INT TERM
echo "test-under-load: $burners busy loops (pids$pids), at most ${seconds}s"
if [ "$#" -eq 0 ]; then
	set -- ./scripts/test.sh
fi
"$@"
rc=$?
stop
echo "test-under-load: exit $rc"
exit "$rc"
