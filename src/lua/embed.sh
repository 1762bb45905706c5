#!/bin/sh
# embed.sh AWK EMBED.AWK LIB.lua FILE.lua...: write the C source of the
# scripts, each one LIB.lua's helpers followed by FILE.lua, with each
# body's SHA1 computed here, at build time, for EVALSHA: the binary then
# needs no hashing code (and no crypto library) to call them.
set -eu
awk=$1 prog=$2 lib=$3
shift 3
echo "/* Generated from src/lua by embed.sh: do not edit. */"
echo "#include \"scripts.h\""
echo
names=
for f in "$@"; do
	name=$(basename "$f" .lua)
	sha=$("$awk" -v mode=body -f "$prog" "$lib" "$f" | sha1sum | cut -c1-40)
	"$awk" -v mode=c -v name="$name" -v sha="$sha" -f "$prog" "$lib" "$f"
	names="$names $name"
done
echo "struct script *scripts_all[] = {"
for n in $names; do
	printf '\t&script_%s,\n' "$n"
done
printf '\t0\n};\n'
