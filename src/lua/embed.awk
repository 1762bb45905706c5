# embed.awk: one src/lua/NAME.lua script, as the server will see it: the
# helpers of lib.lua (the first file), then the script's own body (the
# second) as the function main, run by lib.lua's run(main), which turns
# any error into one reply the client can put in words.
# mode=body prints the script without its comment lines (-- ...), which is
# what is sent and hashed; mode=c prints it as a C struct script, with
# -v name=NAME -v sha=SHA1-OF-BODY.
FILENAME != ARGV[1] && !opened { opened = 1; emit("local function main()") }
/^[ \t]*--/ { next }
{ emit($0) }
END {
	emit("end")
	emit("return run(main)")
	if (mode == "c")
		printf "struct script script_%s = {\n\t.name = \"%s\",\n\t.sha = \"%s\",\n\t.body =\n%s};\n\n", name, name, sha, body
}
function emit(line) {
	if (mode == "body") {
		print line
		return
	}
	gsub(/\\/, "\\\\", line)
	gsub(/"/, "\\\"", line)
	body = body "\t\"" line "\\n\"\n"
}
