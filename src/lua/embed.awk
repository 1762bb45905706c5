# embed.awk: turn src/lua/NAME.lua files into C strings: struct script script_NAME.
# Comment lines (starting with --) are dropped so the server sees only code.
FNR == 1 {
	if (name != "")
		finish()
	name = FILENAME
	sub(/.*\//, "", name)
	sub(/\.lua$/, "", name)
	if (NR == 1)
		print "/* Generated from the src/lua scripts by embed.awk: do not edit. */\n#include \"scripts.h\"\n"
	names[++count] = name
	printf "struct script script_%s = { .name = \"%s\", .body =\n", name, name
}
/^[ \t]*--/ { next }
{
	line = $0
	gsub(/\\/, "\\\\", line)
	gsub(/"/, "\\\"", line)
	printf "\t\"%s\\n\"\n", line
}
function finish() {
	print "};\n"
}
END {
	if (name != "")
		finish()
	print "struct script *scripts_all[] = {"
	for (i = 1; i <= count; i++)
		printf "\t&script_%s,\n", names[i]
	print "\t0\n};"
}
