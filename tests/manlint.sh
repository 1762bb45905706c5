#!/bin/sh
# manlint.sh: the man page passes mandoc -Tlint (TAP, one test).  The
# "outdated mandoc.db" notices speak of the machine's man database, not of
# the page, and are left out.
page=${srcdir:-.}/man/rlock.1
echo "1..1"
if ! command -v mandoc >/dev/null 2>&1; then
	echo "ok 1 - mandoc -Tlint man/rlock.1 # SKIP mandoc is not installed"
	exit 0
fi
out=$(MANPATH=/nonexistent mandoc -Tlint "$page" 2>&1 | grep -v 'outdated mandoc.db')
if [ -z "$out" ]; then
	echo "ok 1 - mandoc -Tlint man/rlock.1 reports nothing"
else
	echo "not ok 1 - mandoc -Tlint man/rlock.1 reports nothing"
	printf '%s\n' "$out" | sed 's/^/# /'
	exit 1
fi
