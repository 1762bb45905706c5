#!/usr/bin/env bats
# manpages.bats: the manual is three pages -- rlock(1), the commands and
# options; rlock.conf(5), the configuration file; rlock(7), how it works and
# what it guarantees -- and rlock(1) stays short enough to read at the
# terminal.  Each page passes mandoc -Tlint, names the other two, points only
# at its own sections with .Sx, and says nothing another page says too;
# every option that `rlock --help` or `rlock CMD --help` lists is described
# in rlock(1); `make install` and the .deb install all three so that
# `man rlock`, `man 5 rlock.conf` and `man 7 rlock` find them.

load helpers
load completion-helpers

MAN="$BATS_TEST_DIRNAME/../man"
PAGES=("$MAN/rlock.1" "$MAN/rlock.conf.5" "$MAN/rlock.7")

teardown() { cleanup_test; }

need_man() {
	command -v man >/dev/null 2>&1 || skip "man (man-db) is not installed"
}

@test "manpages: rlock(1) renders in at most 700 lines at 80 columns" {
	need_man
	local n
	n=$(MANWIDTH=80 man -l "$MAN/rlock.1" 2>/dev/null | wc -l)
	echo "rlock(1): $n lines"
	((n > 100)) || fail "rlock(1) renders in only $n lines: is man working?"
	((n <= 700)) || fail "rlock(1) renders in $n lines, more than 700"
}

@test "manpages: each page passes mandoc -Tlint" {
	command -v mandoc >/dev/null 2>&1 || skip "mandoc is not installed"
	run env srcdir="$BATS_TEST_DIRNAME/.." sh "$BATS_TEST_DIRNAME/manlint.sh"
	echo "$output"
	assert_success
	[[ $(grep -c '^ok .* reports nothing$' <<<"$output") == 3 ]]
}

@test "manpages: each page names the other two with .Xr, and is named as it is installed" {
	grep -qx '.Dt RLOCK 1' "$MAN/rlock.1"
	grep -qx '.Dt RLOCK.CONF 5' "$MAN/rlock.conf.5"
	grep -qx '.Dt RLOCK 7' "$MAN/rlock.7"
	local p
	for p in "${PAGES[@]}"; do
		[[ $p == */rlock.1 ]] || grep -q '^\.Xr rlock 1\b' "$p" || fail "$p does not name rlock(1)"
		[[ $p == */rlock.conf.5 ]] || grep -q '^\.Xr rlock.conf 5\b' "$p" || fail "$p does not name rlock.conf(5)"
		[[ $p == */rlock.7 ]] || grep -q '^\.Xr rlock 7\b' "$p" || fail "$p does not name rlock(7)"
	done
}

@test "manpages: every .Sx names a section of its own page, every \"SECTION\" in rlock(7) one of rlock(7)" {
	run /usr/bin/python3 "$BATS_TEST_DIRNAME/manrefs.py" "${PAGES[@]}"
	echo "$output"
	assert_success
}

@test "manpages: no paragraph appears twice across the three pages" {
	run /usr/bin/python3 "$BATS_TEST_DIRNAME/manparas.py" "${PAGES[@]}"
	echo "$output"
	assert_success
}

@test "manpages: every option of rlock --help and of each command's --help is described in rlock(1) OPTIONS" {
	require_rlock
	local cmd o missing=()
	for cmd in "" "${RLOCK_COMMANDS[@]}"; do
		# shellcheck disable=SC2086
		for o in $(help_long_options $cmd) $(help_short_options $cmd); do
			grep -qE -- "^\.It .*Fl ${o#-}( |$)" "$MAN/rlock.1" ||
				missing+=("${cmd:-(global)} $o")
		done
	done
	((${#missing[@]} == 0)) || fail "not described in rlock(1): ${missing[*]}"
}

@test "manpages: make install puts the three pages where man finds them" {
	need_man
	local build root mandir
	build=$(cd "$(dirname "$RLOCK")/.." && pwd)
	[[ -f $build/Makefile ]] || skip "no Makefile in $build (configure first)"
	root=$BATS_TEST_TMPDIR/root
	make -s -C "$build" install-man DESTDIR="$root" >/dev/null
	mandir=$(dirname "$(find "$root" -path '*/man1/rlock.1' | head -1)")
	mandir=${mandir%/man1}
	[[ -f $mandir/man1/rlock.1 && -f $mandir/man5/rlock.conf.5 && -f $mandir/man7/rlock.7 ]] ||
		fail "installed: $(cd "$root" && find . -type f)"
	[[ $(MANPATH=$mandir man -w rlock) == "$mandir/man1/rlock.1" ]]
	[[ $(MANPATH=$mandir man -w 5 rlock.conf) == "$mandir/man5/rlock.conf.5" ]]
	[[ $(MANPATH=$mandir man -w 7 rlock) == "$mandir/man7/rlock.7" ]]
	MANPATH=$mandir MANWIDTH=80 man 7 rlock 2>/dev/null | grep -q 'how rlock works and what it guarantees'
	MANPATH=$mandir MANWIDTH=80 man 5 rlock.conf 2>/dev/null | grep -q 'configuration file for rlock'
}

@test "manpages: the .deb installs the three pages (scripts/deb.sh; RLOCK_TEST_DEB=1)" {
	[[ ${RLOCK_TEST_DEB:-} == 1 ]] ||
		skip "builds the whole package from a clean copy: set RLOCK_TEST_DEB=1"
	local t
	for t in dpkg-buildpackage lintian fakeroot man; do
		command -v "$t" >/dev/null 2>&1 || skip "$t is not installed"
	done
	run "$BATS_TEST_DIRNAME/../scripts/deb.sh"
	echo "$output"
	assert_success
	# deb.sh prints where man -w found each page in the unpacked package.
	[[ $output =~ /usr/share/man/man1/rlock\.1 ]]
	[[ $output =~ /usr/share/man/man5/rlock\.conf\.5 ]]
	[[ $output =~ /usr/share/man/man7/rlock\.7 ]]
}
