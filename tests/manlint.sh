#!/bin/sh
# manlint.sh: the man pages pass mandoc -Tlint (TAP, one test a page):
# rlock(1), rlock.conf(5) and every page of section 7 (rlock(7) and the
# pages it maps).  The "outdated mandoc.db" notices speak of the machine's
# man database, not of the pages, and are left out; so are the notices that
# one rlock page names another (rlock(1), rlock.conf(5), rlock(7),
# rlock-protocol(7) ...), which mandoc looks for among the installed
# manuals.
pages="rlock.1 rlock.conf.5 $(cd "${srcdir:-.}/man" && ls rlock.7 rlock-*.7)"
# shellcheck disable=SC2086
set -- $pages
echo "1..$#"
n=0
for p in $pages; do
	n=$((n + 1))
	if ! command -v mandoc >/dev/null 2>&1; then
		echo "ok $n - mandoc -Tlint man/$p # SKIP mandoc is not installed"
		continue
	fi
	out=$(MANPATH=/nonexistent mandoc -Tlint "${srcdir:-.}/man/$p" 2>&1 |
	    grep -v -e 'outdated mandoc.db' \
	        -e 'referenced manual not found: Xr rlock 1' \
	        -e 'referenced manual not found: Xr rlock 7' \
	        -e 'referenced manual not found: Xr rlock-[a-z]* 7' \
	        -e 'referenced manual not found: Xr rlock.conf 5')
	if [ -z "$out" ]; then
		echo "ok $n - mandoc -Tlint man/$p reports nothing"
	else
		echo "not ok $n - mandoc -Tlint man/$p reports nothing"
		printf '%s\n' "$out" | sed 's/^/# /'
		fail=1
	fi
done
exit ${fail:-0}
