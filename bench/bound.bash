# bench/bound.bash: the time bound of a bench script (sourced by run,
# interleaved, fleet and floors).
#
# Each script re-runs itself under timeout(1), so that a run is bounded
# however the machine behaves: bound_run BASE "$0" ARGS... in the outer
# invocation.  The bound is BASE seconds (what an idle machine needs, with
# room) times the load per core when the run starts, at least 1 and at
# most 4: a smoke run beside a full test run, on busy cores, is given the
# time the load takes from it instead of failing for it
# (BENCH_TIME_LIMIT, when set, is the bound as given).
#
# The run itself keeps no trap on TERM.  When timeout(1) ends it, it
# signals the run's process group, and bash 5.2 running a trap while it
# expands a $(...) loses its parser's state: "trap: line 2: unexpected EOF
# while looking for matching `)'", then "reader_loop: bad jump", and the
# run's clean-up never runs.  Without the trap bash just ends, as does
# everything else in the group; what is not in it (the processes the run
# started with setsid) and its temp directory, the outer invocation, which
# is not in that group, stops and removes, from the list the run keeps in
# $BENCH_STATE (bound_track, bound_tmp).  A process is stopped only if it
# is the one recorded: its PID and its start time (/proc/PID/stat) both.

# bound_limit BASE: the bound in seconds.
bound_limit() {
	if [ -n "${BENCH_TIME_LIMIT:-}" ]; then
		echo "$BENCH_TIME_LIMIT"
		return
	fi
	awk -v b="$1" -v n="$(nproc 2>/dev/null || echo 1)" '
		{ f = $1 / (n > 0 ? n : 1) }
		END { if (f < 1) f = 1; if (f > 4) f = 4; printf "%d\n", b * f + 0.5 }' \
		/proc/loadavg 2>/dev/null || echo "$1"
}

# bound_run BASE SCRIPT [ARG...]: run SCRIPT under its bound, with
# BENCH_INNER set (the script's sign that it is the inner run) and
# BENCH_LIMIT the bound; stop what it left if it did not end by itself;
# exit with its status.  timeout(1) puts the run in a process group of its
# own, which a terminal's ^C does not reach: a signal to this invocation
# is passed on (as TERM, which timeout passes to the run's group).
bound_run() {
	local base=$1 limit load pid st how rc=
	shift
	limit=$(bound_limit "$base")
	load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null)
	BENCH_STATE=$(mktemp -d "${TMPDIR:-/tmp}/bench-state.XXXXXX") || exit 70
	export BENCH_INNER=1 BENCH_LIMIT=$limit BENCH_STATE
	timeout --kill-after=15 "$limit" "$@" <&0 &
	pid=$!
	trap 'kill -TERM "$pid" 2>/dev/null' INT HUP TERM
	# wait returns early when a trap ran: wait again until pid is gone.
	while [ -z "$rc" ]; do
		wait "$pid"
		st=$?
		kill -0 "$pid" 2>/dev/null || rc=$st
	done
	trap - INT HUP TERM
	if [ "$rc" -eq 124 ] || [ "$rc" -gt 128 ]; then
		if [ -n "${BENCH_TIME_LIMIT:-}" ]; then
			how="BENCH_TIME_LIMIT"
		else
			how="$base s scaled by the load $load on $(nproc) cores"
		fi
		printf '[%s] %s: terminated (a signal, or the time bound: %s s, %s); stopping what it left\n' \
			"$(date +%T)" "$(basename "$1")" "$limit" "$how" >&2
		bound_reap
	fi
	rm -rf "$BENCH_STATE"
	exit "$rc"
}

# bound_started PID: its start time (field 22 of /proc/PID/stat), or nothing.
bound_started() {
	sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20
}

# bound_track PID KIND: the run started PID (KIND "group": with setsid, the
# leader of its own process group).
bound_track() {
	[ -n "${BENCH_STATE:-}" ] || return 0
	echo "$1 $2 $(bound_started "$1")" >>"$BENCH_STATE/pids"
}

# bound_tmp DIR: the run's temp directory, removed if the run cannot.
bound_tmp() {
	[ -n "${BENCH_STATE:-}" ] || return 0
	echo "$1" >"$BENCH_STATE/tmp"
}

# bound_reap: stop what the run recorded and is still the same process,
# TERM then (after up to 2 s) KILL; remove its temp directory.
bound_reap() {
	local p kind start i alive d sig
	[ -f "$BENCH_STATE/pids" ] || : >"$BENCH_STATE/pids"
	for sig in TERM KILL; do
		alive=0
		while read -r p kind start; do
			[ -n "$start" ] && [ "$(bound_started "$p")" = "$start" ] || continue
			alive=1
			[ "$kind" = group ] && kill "-$sig" -- "-$p" 2>/dev/null
			kill "-$sig" "$p" 2>/dev/null
		done <"$BENCH_STATE/pids"
		[ "$alive" = 1 ] || break
		[ "$sig" = KILL ] && break
		for ((i = 0; i < 40; i++)); do
			alive=0
			while read -r p kind start; do
				[ -n "$start" ] && [ "$(bound_started "$p")" = "$start" ] && alive=1
			done <"$BENCH_STATE/pids"
			[ "$alive" = 1 ] || break
			sleep 0.05
		done
	done
	if [ -z "${BENCH_KEEP_TMP:-}" ] && [ -f "$BENCH_STATE/tmp" ]; then
		read -r d <"$BENCH_STATE/tmp"
		case $d in /*) rm -rf "$d" ;; esac
	fi
}
