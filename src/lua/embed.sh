#!/bin/sh
# embed.sh AWK EMBED.AWK LIB.lua FILE.lua...: write the C source of the
# scripts, each LIB.lua's helpers then FILE.lua, with the contract's names
# (contract.awk, from the contract beside LIB.lua) put in place, each
# body's SHA1 computed here, at build time, for EVALSHA: the binary then
# needs no hashing code (and no crypto library) to call them.
set -eu
awk=$1 prog=$2 lib=$3
shift 3
echo "/* Generated from src/lua by embed.sh: do not edit. */"
echo "#include \"scripts.h\""
echo
dir=$(dirname "$lib")
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# acquire and release have a variant each for exec --every (NAME_every:
# the same text, whose fast path makes the schedule's helpers; see "only"
# in embed.awk), which the client sends when it runs a schedule: the
# common call makes none of them.
names=
for f in "$@"; do
	name=$(basename "$f" .lua)
	"$awk" -v mode=map -v script="$name" -f "$dir/contract.awk" \
	    "$dir/contract" >"$tmp"
	case $name in
	acquire | release) as="$name ${name}_every" ;;
	*) as=$name ;;
	esac
	for v in $as; do
		sha=$("$awk" -v mode=body -v map="$tmp" -v as="$v" -f "$prog" \
		    "$lib" "$f" | sha1sum | cut -c1-40)
		"$awk" -v mode=c -v map="$tmp" -v as="$v" -v name="$v" \
		    -v sha="$sha" -f "$prog" "$lib" "$f"
		names="$names $v"
	done
done
echo "struct script *scripts_all[] = {"
for n in $names; do
	printf '\t&script_%s,\n' "$n"
done
printf '\t0\n};\n'
