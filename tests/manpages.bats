#!/usr/bin/env bats
# manpages.bats: the manual is rlock(1), the commands and options;
# rlock.conf(5), the configuration file; rlock(7), how it works and what it
# guarantees: the map of the section 7 pages that tell it by topic
# (rlock-protocol(7), rlock-exec(7), rlock-distribution(7), rlock-security(7),
# rlock-operations(7)).  rlock(1) and each section 7 page stay short enough
# to read at the terminal.  Each page passes mandoc -Tlint, names rlock(1),
# rlock.conf(5) and rlock(7), points only at its own sections with .Sx and
# at another page's only at sections it has, and says nothing another page
# says too; rlock(7) names every other page; every option that
# `rlock --help` or `rlock CMD --help` lists is described in rlock(1);
# `make install` and the .deb install them all so that `man rlock`,
# `man 5 rlock.conf`, `man 7 rlock` and `man 7 rlock-protocol` ... find them.

load helpers
load completion-helpers

MAN="$BATS_TEST_DIRNAME/../man"
# The section 7 pages: rlock(7), the map, and the pages it names.
MAN7=("$MAN"/rlock.7 "$MAN"/rlock-*.7)
PAGES=("$MAN/rlock.1" "$MAN/rlock.conf.5" "${MAN7[@]}")

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

@test "manpages: each section 7 page renders in at most 700 lines at 80 columns" {
	need_man
	local p n
	((${#MAN7[@]} >= 6)) || fail "only ${#MAN7[@]} section 7 pages: ${MAN7[*]}"
	for p in "${MAN7[@]}"; do
		n=$(MANWIDTH=80 man -l "$p" 2>/dev/null | wc -l)
		echo "${p##*/}: $n lines"
		((n > 50)) || fail "$p renders in only $n lines: is man working?"
		((n <= 700)) || fail "$p renders in $n lines, more than 700"
	done
}

@test "manpages: rlock(7) names every other section 7 page, and make installs each" {
	local p name
	for p in "$MAN"/rlock-*.7; do
		name=${p##*/}
		name=${name%.7}
		grep -q "^\.It Xr $name 7\$" "$MAN/rlock.7" ||
			fail "rlock(7) does not say what $name(7) covers (.It Xr $name 7)"
		grep -q "^\.Xr $name 7\b" "$MAN/rlock.7" ||
			fail "rlock(7) SEE ALSO does not name $name(7)"
		tr -d '\\\n' <"$BATS_TEST_DIRNAME/../Makefile.am" |
			grep -qE "dist_man7_MANS = [^=]*man/$name\.7" ||
			fail "Makefile.am: $name.7 is not in dist_man7_MANS"
	done
}

@test "manpages: each page passes mandoc -Tlint" {
	command -v mandoc >/dev/null 2>&1 || skip "mandoc is not installed"
	run env srcdir="$BATS_TEST_DIRNAME/.." sh "$BATS_TEST_DIRNAME/manlint.sh"
	echo "$output"
	assert_success
	[[ $(grep -c '^ok .* reports nothing$' <<<"$output") == "${#PAGES[@]}" ]]
}

@test "manpages: each page names rlock(1), rlock.conf(5) and rlock(7) with .Xr, and is named as it is installed" {
	grep -qx '.Dt RLOCK 1' "$MAN/rlock.1"
	grep -qx '.Dt RLOCK.CONF 5' "$MAN/rlock.conf.5"
	local p name
	for p in "${MAN7[@]}"; do
		name=${p##*/}
		name=${name%.7}
		grep -qx ".Dt ${name^^} 7" "$p" || fail "$p: not .Dt ${name^^} 7"
		grep -qx ".Nm $name" "$p" || fail "$p: not .Nm $name"
	done
	for p in "${PAGES[@]}"; do
		[[ $p == */rlock.1 ]] || grep -q '^\.Xr rlock 1\b' "$p" || fail "$p does not name rlock(1)"
		[[ $p == */rlock.conf.5 ]] || grep -q '^\.Xr rlock.conf 5\b' "$p" || fail "$p does not name rlock.conf(5)"
		[[ $p == */rlock.7 ]] || grep -q '^\.Xr rlock 7\b' "$p" || fail "$p does not name rlock(7)"
	done
}

@test "manpages: every .Sx names a section of its own page, every \"SECTION\" in PAGE(7) one of that page" {
	run /usr/bin/python3 "$BATS_TEST_DIRNAME/manrefs.py" "${PAGES[@]}"
	echo "$output"
	assert_success
}

@test "manpages: no paragraph appears twice across the pages" {
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

@test "manpages: make install puts every page where man finds it" {
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
	local p name
	for p in "${MAN7[@]}"; do
		name=${p##*/}
		name=${name%.7}
		[[ $(MANPATH=$mandir man -w 7 "$name") == "$mandir/man7/$name.7" ]] ||
			fail "man -w 7 $name: $(MANPATH=$mandir man -w 7 "$name" 2>&1)"
	done
	MANPATH=$mandir MANWIDTH=80 man 7 rlock 2>/dev/null | grep -q 'how rlock works and what it guarantees'
	MANPATH=$mandir MANWIDTH=80 man 5 rlock.conf 2>/dev/null | grep -q 'configuration file for rlock'
}

@test "manpages: the .deb installs every page (scripts/deb.sh; RLOCK_TEST_DEB=1)" {
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
	local p name
	for p in "${MAN7[@]}"; do
		name=${p##*/}
		[[ $output == *"/usr/share/man/man7/$name"* ]] || fail "the .deb lacks $name"
	done
}
