# embed.awk: one src/lua/NAME.lua script, as the server will see it: the
# helpers of lib.lua (the first file), then the script's own body (the
# last) as the function main, run by lib.lua's run(main), which turns any
# error into one reply the client can put in words.  With -v map=FILE
# (contract.awk's mode=map), each contract name in the text is put in
# place of by what it stands for (K.lock by KEYS[1], ...): the names are
# the source's, the places are what is sent.
# A section between the lines "--{ early" and "--} early" comes first:
# lib.lua's (what a fast path needs), then the script's own, its fast
# path, as the function fast, run by run() too; a fast path that returns
# nothing leaves the call to main.  Its call returns before the rest of
# lib.lua's helpers are made, which each call makes anew.
# Within lib.lua's early section, a block between "--{ only NAME..." and
# "--} only" is what only those scripts' fast paths need: for any other
# script it goes with the rest of lib.lua, after its fast path (in the
# same order: nothing early may use it), so that a fast path's call does
# not make helpers it never calls (some 500 instructions each).  A
# variant of a script (-v as=NAME: embed.sh's acquire_every, say) is the
# same text, with the script's blocks and its own: a block that only the
# variant's fast path needs costs the script's common call nothing.
# A section between "--{ later" and "--} later" is a second stage: in
# lib.lua, right after its early section, the helpers a later fast path
# needs; in the script, that fast path (the function later, run by run()
# too, after lib.lua's early blocks that its early fast path does not
# need and lib.lua's later section, before the rest of lib.lua).  A call
# that the early fast path answers makes none of them; one that it leaves
# makes only them before the later fast path: a script's rarer path (a
# release that hands the lock over) without the whole of lib.lua.  What
# the early fast path read is left for the later one in passed (see
# lib.lua).
# mode=body prints the script without its comment lines (-- ...), which is
# what is sent and hashed; mode=c prints it as a C struct script, with
# -v name=NAME -v sha=SHA1-OF-BODY.
BEGIN {
	# The script's name: its file's, less .lua; and -v as=NAME, a variant
	# of it (see embed.sh), which the "only" blocks name as well: a block
	# for the script is the variant's too.
	script = ARGV[ARGC - 1]
	sub(/.*\//, "", script)
	sub(/\.lua$/, "", script)
	variant = as != "" ? as : script
	while (map != "" && (getline line < map) > 0) {
		t = index(line, "\t")
		# Dotted names first: R_X.field before R_X.
		if (index(substr(line, 1, t - 1), "."))
			from[++nmap] = substr(line, 1, t - 1)
		else
			later[++nlater] = substr(line, 1, t - 1)
		to[substr(line, 1, t - 1)] = substr(line, t + 1)
	}
	for (i = 1; i <= nlater; i++)
		from[++nmap] = later[i]
}
FILENAME == ARGV[ARGC - 1] && !opened { opened = 1; main = "local function main()\n" }
/^--[{] early/ { early = 1; if (opened) fast = fast "local function fast()\n"; next }
/^--[{] later/ { stage2 = 1; if (opened) fast2 = fast2 "local function later()\n"; next }
/^--[}] later/ {
	stage2 = 0
	if (opened)
		fast2 = fast2 "end\nlocal later_reply = run(later)\nif later_reply ~= nil then\n\treturn later_reply\nend\n"
	else
		libdone = 1
	next
}
/^--[{] only / {
	other = 1
	for (i = 3; i <= NF; i++)
		if ($i == script || $i == variant)
			other = 0
	next
}
/^--[}] only/ { other = 0; next }
/^--[}] early/ { early = 0; if (opened) fast = fast "end\nlocal fast_reply = run(fast)\nif fast_reply ~= nil then\n\treturn fast_reply\nend\n"; next }
/^[ \t]*--/ { next }
{
	if (early && opened)
		fast = fast names($0) "\n"
	else if (stage2 && opened)
		fast2 = fast2 names($0) "\n"
	else if (opened)
		main = main names($0) "\n"
	else if (early && !other)
		first = first names($0) "\n"
	else if (libdone)
		rest = rest names($0) "\n"
	else
		late = late names($0) "\n"
}
END {
	text = first fast late fast2 rest main "end\nreturn run(main)\n"
	n = split(text, lines, "\n")
	for (i = 1; i < n; i++)
		emit(lines[i])
	if (mode == "c")
		printf "struct script script_%s = {\n\t.name = \"%s\",\n\t.sha = \"%s\",\n\t.body =\n%s};\n\n", name, name, sha, body
}
# s with each contract name (a whole word: no letter, digit, _ or . on
# its left, no letter, digit or _ on its right) in place.
function names(s,	i, n, out, at, before, after) {
	for (i = 1; i <= nmap; i++) {
		n = from[i]
		if (index(s, n) == 0)
			continue
		out = ""
		while ((at = index(s, n)) > 0) {
			before = at > 1 ? substr(s, at - 1, 1) : ""
			after = substr(s, at + length(n), 1)
			if (before ~ /[A-Za-z0-9_.]/ || after ~ /[A-Za-z0-9_]/) {
				out = out substr(s, 1, at + length(n) - 1)
			} else
				out = out substr(s, 1, at - 1) to[n]
			s = substr(s, at + length(n))
		}
		s = out s
	}
	return s
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
