# embed.awk: one src/lua/NAME.lua script, as the server will see it.
# mode=body prints the script without its comment lines (-- ...), which is
# what is sent and hashed; mode=c prints it as a C struct script, with
# -v name=NAME -v sha=SHA1-OF-BODY.
/^[ \t]*--/ { next }
mode == "body" { print; next }
{
	line = $0
	gsub(/\\/, "\\\\", line)
	gsub(/"/, "\\\"", line)
	body = body "\t\"" line "\\n\"\n"
}
END {
	if (mode == "c")
		printf "struct script script_%s = {\n\t.name = \"%s\",\n\t.sha = \"%s\",\n\t.body =\n%s};\n\n", name, name, sha, body
}
