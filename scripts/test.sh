#!/bin/sh
# test.sh: install what is missing, build, run the whole test suite, and end
# with one line "N passed, N failed".  Exits non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
./scripts/deps.sh || exit 1
./scripts/build.sh || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }

jobs=$(nproc 2>/dev/null || echo 2)
make -j"$jobs" check >/dev/null 2>&1
check=$?

# The release tarball must build and pass the unit tests on its own
# (the bats suite has just run above; running it twice would double CI).
make -j"$jobs" distcheck TESTS=tests/unit >distcheck.log 2>&1
distcheck=$?

pass=$(cat tests/*.trs 2>/dev/null | grep -c '^:test-result: \(PASS\|XFAIL\)')
fail=$(cat tests/*.trs 2>/dev/null | grep -c '^:test-result: \(FAIL\|XPASS\|ERROR\)')
if [ "$check" -ne 0 ] && [ "$fail" -eq 0 ]; then
	fail=1	# make check failed without a failing test: say so
fi
for t in tests/*.trs; do
	grep -q '^:test-result: \(FAIL\|XPASS\|ERROR\)' "$t" 2>/dev/null || continue
	echo "==== ${t%.trs}.log"
	grep -v '^ok ' "${t%.trs}.log"
done
if [ "$distcheck" -eq 0 ]; then
	pass=$((pass + 1))
	echo "make distcheck: ok"
else
	fail=$((fail + 1))
	echo "make distcheck: FAILED"; tail -30 distcheck.log
fi
echo "$pass passed, $fail failed"
[ "$check" -eq 0 ] && [ "$distcheck" -eq 0 ] && [ "$fail" -eq 0 ]
