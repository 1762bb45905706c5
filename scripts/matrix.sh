#!/bin/sh
# matrix.sh [SRC [CACHE]]: the server-compatibility matrix.  Builds each
# server whose source tarball is in SRC (default ../shared/servers beside
# the repository; see scripts/servers.sh, which caches the builds in CACHE,
# default .servers) and runs the compatibility subset of the suite against
# each, its redis-server, redis-cli and redis-sentinel first on PATH:
# tests/compat.bats on a supported server (6.0 and later), and
# tests/oldserver.bats (refused, plainly, with nothing taken) on an older
# one.  Debian's own redis-server, the one the rest of the suite uses, is a
# column too.  Prints the matrix (area x server: ok, FAIL, or - for not
# run), the failures' TAP output, and ends with one line "N passed, N
# failed" (tests, and builds that failed); exits 1 on any failure.  Where
# SRC does not exist it says it skipped the matrix, "0 passed, 0 failed".
set -u
cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
src=${1:-$(dirname "$root")/shared/servers}
cache=${2:-$root/.servers}
rlock=${RLOCK_BIN:-$root/src/rlock}
if [ ! -d "$src" ]; then
	echo "server matrix: skipped ($src does not exist)"
	echo "0 passed, 0 failed"
	exit 0
fi
out=$root/matrix.tmp
rm -rf "$out" && mkdir -p "$out" || exit 1
results=$out/results	# "SERVER AREA ok|FAIL|skip", a line a test

# The builds (each once; a failed one is a failure of its column).
./scripts/servers.sh "$src" "$cache" >"$out/build.log" 2>&1
sed 's/^/  build: /' "$out/build.log"
columns=
while read -r name st _; do
	case $st in
	ok) echo "$name build ok" >>"$results"; columns="$columns $name" ;;
	FAILED) echo "$name build FAIL" >>"$results" ;;
	esac
done <"$out/build.log"
# Debian's redis-server, as the rest of the suite runs it.
if command -v redis-server >/dev/null 2>&1; then
	v=$(redis-server --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p')
	columns="$columns debian-${v:-unknown}"
fi

# run_server NAME: the subset against server NAME, its time in
# $out/NAME.line and its results in $out/NAME.results.
run_server() {
	name=$1
	case $name in
	debian-*) bin= ;;
	*) bin=$cache/$name/bin ;;
	esac
	v=$(${bin:+"$bin/"}redis-server --version 2>/dev/null |
	    sed -n 's/.* v=\([0-9]*\)\..*/\1/p')
	case $name in
	valkey-*) file=tests/compat.bats ;;	# Valkey began at 7.2
	*) if [ "${v:-0}" -ge 6 ]; then file=tests/compat.bats
	   else file=tests/oldserver.bats; fi ;;
	esac
	start=$(date +%s)
	# A bound for a wedged run: far above the minute it takes.
	PATH=${bin:+$bin:}$PATH RLOCK_BIN=$rlock RLOCK_OLD_SERVER_BIN=$bin \
	    BASH_ENV=$root/tests/bash-env.bash timeout -k 10 600 bats --tap "$file" >"$out/$name.tap" 2>&1
	echo "  $name: $file in $(($(date +%s) - start)) s" >"$out/$name.line"
	awk -v s="$name" '
		/^(not )?ok [0-9]+ / {
			r = $1 == "not" ? "FAIL" : / # skip/ ? "skip" : "ok"
			t = $0
			sub(/^(not )?ok [0-9]+ /, "", t)
			area = index(t, ":") ? substr(t, 1, index(t, ":") - 1) : t
			print s, area, r
			n++
		}
		END { if (n == 0) print s, "run", "FAIL" }
	' "$out/$name.tap" >"$out/$name.results"
}

# Two servers at a time (MATRIX_JOBS): each run starts servers of its own
# on free ports, and is mostly one process at a time.
jobs=${MATRIX_JOBS:-2}
n=0
for name in $columns; do
	run_server "$name" &
	n=$((n + 1))
	[ $((n % jobs)) -ne 0 ] || wait
done
wait
for name in $columns; do
	cat "$out/$name.line" 2>/dev/null || echo "  $name: did not run"
	cat "$out/$name.results" 2>/dev/null >>"$results" || echo "$name run FAIL" >>"$results"
done

# The matrix: an area a row, a server a column.
echo
echo "server matrix (ok: every test of the area passed; -: not run):"
awk '
	!($2 in seen_a) { seen_a[$2] = 1; areas[++na] = $2 }
	!($1 in seen_s) { seen_s[$1] = 1; servers[++ns] = $1 }
	{
		k = $1 SUBSEP $2
		if ($3 == "FAIL") cell[k] = "FAIL"
		else if (!(k in cell) || cell[k] == "skip") cell[k] = $3
	}
	END {
		w = 12
		for (j = 1; j <= ns; j++) if (length(servers[j]) + 1 > w) w = length(servers[j]) + 1
		printf "%-12s", "area"
		for (j = 1; j <= ns; j++) printf " %-" w "s", servers[j]
		printf "\n"
		for (i = 1; i <= na; i++) {
			printf "%-12s", areas[i]
			for (j = 1; j <= ns; j++) {
				k = servers[j] SUBSEP areas[i]
				printf " %-" w "s", (k in cell) ? cell[k] : "-"
			}
			printf "\n"
		}
	}
' "$results"

# The failures, with what bats said about them.
for tap in "$out"/*.tap; do
	[ -f "$tap" ] || continue
	grep -q '^not ok' "$tap" || grep -q '^ok ' "$tap" || {
		echo "==== $(basename "$tap" .tap): no test ran"
		head -n 30 "$tap"
		continue
	}
	grep -q '^not ok' "$tap" || continue
	echo "==== $(basename "$tap" .tap)"
	awk '/^not ok/ { p = 1; print; next } /^ok / { p = 0 } p' "$tap" | head -n 80
done
grep ' FAIL$' "$results" | grep ' build ' | while read -r name _; do
	echo "==== $name: build failed"
	tail -n 20 "$cache/$name/build.log"
done

pass=$(grep -c ' ok$' "$results")
fail=$(grep -c ' FAIL$' "$results")
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
