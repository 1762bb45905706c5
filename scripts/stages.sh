# stages.sh: sourced by test.sh.  Each stage of the test command says when
# it starts and how it ended, with the time since the start of the run, and
# the table of stages and their times comes before the closing count.

T0=$(date +%s)
STAGES=

# clock [SECONDS]: minutes and seconds (default: since the start of the run).
clock() {
	_s=${1:-$(( $(date +%s) - T0 ))}
	printf '%d:%02d' $((_s / 60)) $((_s % 60))
}

# begin NAME [WHAT]: NAME starts now.
begin() {
	eval "began_$1=\$(date +%s)"
	printf '[%s] %s: started%s\n' "$(clock)" "$1" "${2:+ ($2)}"
}

# finish NAME STATUS [DETAIL]: NAME ended (STATUS 0: ok); it goes into the
# table.
finish() {
	eval "_b=\$began_$1"
	_d=$(( $(date +%s) - _b ))
	if [ "$2" -eq 0 ]; then _r=ok; else _r=FAILED; fi
	printf '[%s] %s: %s in %s%s\n' "$(clock)" "$1" "$_r" "$(clock "$_d")" \
	    "${3:+, $3}"
	ROW=$(printf '%-12s %-7s %6s' "$1" "$_r" "$(clock "$_d")")
	STAGES="$STAGES$ROW
"
}

# lane STAGE...: in the background (its pid in $lane_pid), each STAGE in
# turn: test.sh's function stage_STAGE, begun and finished as above, its
# status and its row of the table left in .stages/ for reap.
lane() {
	(
		for _s in "$@"; do
			begin "$_s"
			"stage_$_s"
			_st=$?
			finish "$_s" "$_st"
			echo "$_st" >".stages/$_s"
			echo "$ROW" >".stages/$_s.row"
		done
	) &
	lane_pid=$!
}

# reap STAGE...: once their lanes have ended, each STAGE's status in the
# variable of its name (1 if it never ended) and its row in the table.
reap() {
	for _s in "$@"; do
		_st=$(cat ".stages/$_s" 2>/dev/null) || _st=1
		eval "$_s=\$_st"
		STAGES="$STAGES$(cat ".stages/$_s.row" 2>/dev/null || printf '%-12s %-7s' "$_s" FAILED)
"
	done
}

# tests_so_far LOG: "N tests, M failed" from the output of a make check
# (its lines "PASS: ...", "FAIL: ...", one a test, as they come).
tests_so_far() {
	_n=$(grep -c '^\(PASS\|FAIL\|XFAIL\|XPASS\|SKIP\): ' "$1" 2>/dev/null)
	_f=$(grep -c '^\(FAIL\|XPASS\|ERROR\): ' "$1" 2>/dev/null)
	echo "${_n:-0} tests, ${_f:-0} failed"
}

# watch NAME LOG PID [LOG2]: until PID ends, every minute a line with the
# count of tests so far in LOG (and in LOG2, a run beside it); then PID's
# status in $watched.  (Bounded by PID, which make's own limits end.)
watch() {
	_i=0
	while kill -0 "$3" 2>/dev/null; do
		sleep 2
		_i=$((_i + 1))
		[ $((_i % 30)) -eq 0 ] &&
		    printf '[%s] %s: %s%s\n' "$(clock)" "$1" "$(tests_so_far "$2")" \
		    "${4:+; beside it $(tests_so_far "$4")}"
	done
	wait "$3"
	watched=$?
}

# failed_tests LOG...: the failed tests in the output of make checks (its
# lines "FAIL: file N name"), each named once, at most 30, so that the end
# of a run names them.
failed_tests() {
	for _l in "$@"; do
		grep -h '^\(FAIL\|XPASS\|ERROR\): ' "$_l" 2>/dev/null |
		    sed "s|^|$_l: |" | cut -c 1-150
	done | head -n 30
}

# table: the stages and their times.
table() {
	printf '%-12s %-7s %6s\n' stage result time
	printf '%s' "$STAGES"
	printf '%-12s %-7s %6s\n' total "" "$(clock)"
}
