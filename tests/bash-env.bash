# bash-env.bash: the suite's BASH_ENV (Makefile.am, scripts/matrix.sh).
#
# bats runs every test in a bash of its own, which runs mkdir twice, rm
# once and date twice around the test, each a process; the tests' own
# waits run sleep, a process a poll.  On CI's busy two cores a process
# costs some 10 ms, most of it the kernel's, and a CI run started 97,000:
# it was CPU-bound throughout.  In bats's own processes (and so in every
# test's shell), mkdir, rm, mktemp and sleep are bash's loadable builtins
# (Debian's bash-builtins), and date +%s%N, bats's clock, is read from
# $EPOCHREALTIME.  Any other bash, a script or a command a test runs,
# gets nothing from here: what it runs is what it would run anywhere.
case $0 in
*/bats-core/*) ;;
*) return 0 ;;
esac
for _be in mkdir rm mktemp sleep; do
	[[ -f /usr/lib/bash/$_be ]] && enable -f "/usr/lib/bash/$_be" "$_be" 2>/dev/null
done
unset _be
date() {
	if [[ $# -eq 1 && $1 == +%s%N ]]; then
		printf '%s000\n' "${EPOCHREALTIME//[!0-9]/}"
	else
		command date "$@"
	fi
}
