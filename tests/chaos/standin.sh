#!/bin/sh
# standin.sh: a sabotaged rlock for the checker's own test (chaos.bats):
# it takes no lock at all.  exec runs the command at once (fence 1 for
# every holder); acquire prints a token (JSON with --json); release
# succeeds; status says free.  The checker must catch it.
for a in "$@"; do
	case $a in
	exec|acquire|release|status) cmd=$a; break ;;
	esac
done
case $cmd in
exec)
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
	shift
	RLOCK_FENCE=1 exec "$@" ;;
acquire)
	case " $* " in
	*" --json "*) echo '{"name":"n","token":"standin","fence":1,"ttl_ms":1000}' ;;
	*) echo standin ;;
	esac ;;
release) exit 0 ;;
status) exit 1 ;;
*) exit 64 ;;
esac
