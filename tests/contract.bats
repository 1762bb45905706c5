#!/usr/bin/env bats
# contract.bats: src/lua/contract declares the scripts' keys, arguments
# and replies once; the C enums (src/contract.h) and each script's Lua
# names are made from it at build time.  These check that the two sides
# cannot drift: the scripts name what they take, the generated sides
# agree, and a contract whose key order struct lock does not follow does
# not compile.

load helpers

LUA="$BATS_TEST_DIRNAME/../src/lua"
TOP="$BATS_TEST_DIRNAME/.."

setup() { cd "$BATS_TEST_TMPDIR" || return 1; }

@test "contract: no script takes a key or an argument by its place, but by the contract's name" {
	# (inspect takes several locks' keys, KEY_COUNT each, by KEY.name;
	# note's entry fields follow its A_COUNT arguments; log takes streams.)
	run grep -n -E 'KEYS\[[0-9]+\]|ARGV\[[0-9]+\]' "$LUA"/acquire.lua \
	    "$LUA"/release.lua "$LUA"/extend.lua "$LUA"/fence.lua \
	    "$LUA"/force.lua "$LUA"/inspect.lua "$LUA"/note.lua "$LUA"/log.lua
	refute_output --regexp '^[^:]*:[0-9]+:[^-]*(KEYS|ARGV)\['
}

@test "contract: the C enums and the names each script is written with come from the same lines" {
	local c map body
	c=$(awk -v mode=c -f "$LUA/contract.awk" "$LUA/contract")
	map=$(awk -v mode=map -v script=acquire -f "$LUA/contract.awk" "$LUA/contract")
	# The key order: C's enum, the Lua names' places, the suffixes.
	[[ "$c" == *$'KEY_LOCK,\n\tKEY_FENCE,\n\tKEY_WAKE,\n\tKEY_WAITERS,\n\tKEY_QUEUE,\n\tKEY_LOG,\n\tKEY_EVERY,\n\tKEY_NONE,\n\tKEY__COUNT'* ]] || fail "$c"
	[[ "$c" == *'#define KEY_SUFFIXES { "", ":fence", ":wake", ":waiters", ":queue", ":log", ":every", ":none" }'* ]] || fail "$c"
	[[ "$map" == *$'K.lock\tKEYS[1]\n'*$'K.fence\tKEYS[2]\n'*$'K.none\tKEYS[8]\n'* ]] || fail "$map"
	[[ "$map" == *$'A.token\tARGV[1]\n'*$'A.run\tARGV[7]\nA.every\t(ARGV[8] or \'0\')\nA.slack_ms\t(ARGV[9] or \'0\')\nA.history_len\t(ARGV[10] or \'100\')\n'*$'A.no_replace\t(ARGV[22] or \'0\')\nA.fired\t(ARGV[23] or \'0\')\nA.slots\t(ARGV[24] or \'\')\nA.cron\t(ARGV[25] or \'\')\nA.cron_tz\t(ARGV[26] or \'\')\nA_COUNT\t26'* ]] || fail "$map"
	[[ "$c" == *$'ACQUIRE_TOKEN,\n\tACQUIRE_TTL_MS,'* && "$c" == *$'ACQUIRE_NO_REPLACE,\n\tACQUIRE_FIRED,\n\tACQUIRE_SLOTS,\n\tACQUIRE_CRON,\n\tACQUIRE_CRON_TZ,\n\tACQUIRE__COUNT'* ]] || fail "$c"
	# A reply's fields: C's 0-based enum, Lua's 1-based places.
	[[ "$map" == *$'R_ACQUIRE_BUSY.pttl_ms\t2\n'* ]] || fail "$map"
	[[ "$c" == *$'ACQUIRE_BUSY_CODE,\n\tACQUIRE_BUSY_PTTL_MS,\n\tACQUIRE_BUSY_HOST,'* ]] || fail "$c"
	# What is sent has the places, not the names: no table is built for
	# them on each call.
	awk -v mode=map -v script=acquire -f "$LUA/contract.awk" "$LUA/contract" >map
	body=$(awk -v mode=body -v map=map -f "$LUA/embed.awk" "$LUA/lib.lua" "$LUA/acquire.lua")
	[[ "$body" == *"local token, ttl = ARGV[1], tonumber(ARGV[2])"* ]] || fail "the names are not in place"
	! grep -qE '(^|[^A-Za-z0-9_.])(K|A|KEY)\.[a-z_]+' <<<"$body" || fail "a name left: $(grep -E '(^|[^A-Za-z0-9_.])(K|A|KEY)\.[a-z_]+' <<<"$body" | head -3)"
	# The built header is the contract's.
	assert_equal "$(cat "$TOP/src/contract.h")" "$c"
}

@test "contract: the arguments at the end that hold their defaults are left off, and read as their defaults" {
	command -v gcc >/dev/null || skip "no gcc"
	# C: acquire_nargs() counts what is sent, up to the last argument
	# that differs from its default (none before run, which has none).
	cat >n.c <<-'EOF'
	#include <stdio.h>
	#include "contract.h"
	int
	main(void)
	{
		const char *a[] = ACQUIRE_DEFAULTS, *r[] = RELEASE_DEFAULTS;
		int i;

		for (i = 0; i < ACQUIRE__COUNT; i++)
			if (a[i] == NULL)
				a[i] = "x";
		for (i = 0; i < RELEASE__COUNT; i++)
			if (r[i] == NULL)
				r[i] = "x";
		printf("%d", acquire_nargs(a));
		a[ACQUIRE_EVERY] = "60000";
		r[RELEASE_EVERY] = "1";
		printf(" %d %d", acquire_nargs(a), release_nargs(r));
		a[ACQUIRE_EVERY] = "0";
		r[RELEASE_EVERY] = "0";
		a[ACQUIRE_SLACK_MS] = "5000";
		printf(" %d", acquire_nargs(a));
		a[ACQUIRE_CRON_TZ] = "UTC";
		printf(" %d", acquire_nargs(a));
		printf(" %d", release_nargs(r));
		r[RELEASE_HAND_OVER] = "0";
		printf(" %d\n", release_nargs(r));
		return 0;
	}
	EOF
	gcc -std=gnu11 -Wall -Werror -I"$TOP/src" -o n n.c
	# (An exec --every's calls send little more than a plain one's:
	# every is the first argument with a default.)
	assert_equal "$(./n)" "7 8 6 9 26 5 9"
	# Lua: a default's name stands for the argument or its default.
	awk -v mode=map -v script=release -f "$LUA/contract.awk" "$LUA/contract" >map
	grep -qx $'A.hand_over\t(ARGV\[9\] or \'1\')' map || fail "$(cat map)"
	# An argument without a default after one with a default could never
	# be left off: the contract is refused.
	printf 'args x a b=0 c\n' >bad
	run awk -v mode=c -f "$LUA/contract.awk" bad
	assert_failure
	assert_output --partial 'contract:1: c follows an argument with a default'
}

@test "contract: a line it does not know stops the build, naming the line" {
	printf 'keys lock:\nkey fence :fence\n' >bad
	run awk -v mode=c -f "$LUA/contract.awk" bad
	assert_failure
	assert_output --partial 'contract:2: unknown line: key fence :fence'
}

@test "contract: a key order that struct lock's names do not follow does not compile" {
	command -v gcc >/dev/null || skip "no gcc"
	# A copy of the sources with the header of a contract whose fence and
	# wake are swapped (a header beside the .c is the one it includes).
	mkdir src
	cp "$TOP"/src/*.[ch] src/
	sed 's/^keys lock: fence::fence wake::wake /keys lock: wake::wake fence::fence /' \
	    "$LUA/contract" >swapped
	! cmp -s "$LUA/contract" swapped || fail "the contract's key line has changed: update this test"
	awk -v mode=c -f "$LUA/contract.awk" swapped >src/contract.h
	run gcc -std=gnu11 -D_GNU_SOURCE -fsyntax-only -I"$TOP" \
	    -I/usr/include/hiredis src/lock.c
	assert_failure
	assert_output --partial "fence_key is not the contract"
	# and the contract as it is compiles.
	run gcc -std=gnu11 -D_GNU_SOURCE -fsyntax-only -I"$TOP/src" -I"$TOP" \
	    -I/usr/include/hiredis "$TOP/src/lock.c"
	assert_success
}
