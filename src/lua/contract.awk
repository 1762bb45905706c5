# contract.awk: src/lua/contract as C (mode=c: src/contract.h) or as the
# names a script is written with (mode=map: "NAME<TAB>TEXT" lines, which
# embed.awk puts in place of each NAME in the text it sends, so that the
# names cost the server nothing).
# Names in C: KEY_NAME, SCRIPT_NAME (its arguments), REPLY_FIELD (upper
# case), each list ending in a __COUNT; KEY_SUFFIXES the keys' suffixes.
# Names in Lua (script=NAME): K.name the lock's keys (KEYS[i]), KEY.name
# their 0-based offsets and KEY_COUNT their number (a script on several
# locks: KEYS[base + KEY.name]), A.name the script's ARGV and A_COUNT
# their number, R_REPLY a reply's shape ({field = place, ...}, for
# reply() in lib.lua) and R_REPLY.field a field's place.
# An argument declared NAME=VALUE has a default: the client leaves it off
# when it is the last it would send and holds VALUE (script_nargs() in
# C counts what is sent), and A.NAME stands for (ARGV[i] or 'VALUE'), so
# the script reads it the same either way.  Only a run of defaults at the
# end can be left off: one without a default after them is an error.
/^#/ || NF == 0 { next }
$1 == "keys" {
	for (i = 2; i <= NF; i++) {
		n = index($i, ":")
		key[++nkeys] = substr($i, 1, n - 1)
		suffix[nkeys] = substr($i, n + 1)
	}
	next
}
$1 == "args" {
	nargs[$2] = NF - 2
	for (i = 3; i <= NF; i++) {
		n = index($i, "=")
		if (n == 0) {
			arg[$2, i - 2] = $i
			if (($2, i - 3) in dflt) {
				printf "contract:%d: %s follows an argument with a default\n", NR, $i > "/dev/stderr"
				bad = 1
				exit 1
			}
			continue
		}
		arg[$2, i - 2] = substr($i, 1, n - 1)
		dflt[$2, i - 2] = substr($i, n + 1)
		if (dflt[$2, i - 2] ~ /['\\"]/) {
			printf "contract:%d: a default with a quote: %s\n", NR, $i > "/dev/stderr"
			bad = 1
			exit 1
		}
	}
	next
}
$1 == "reply" {
	reply[++nreplies] = $2
	nfields[$2] = NF - 2
	for (i = 3; i <= NF; i++)
		field[$2, i - 2] = $i
	next
}
{
	printf "contract:%d: unknown line: %s\n", NR, $0 > "/dev/stderr"
	bad = 1
	exit 1
}
END {
	if (bad)
		exit 1
	if (mode == "c")
		c()
	else
		map()
}
function c(	i, j, s) {
	print "/* Generated from src/lua/contract by contract.awk: do not edit. */"
	print "#ifndef RLOCK_CONTRACT_H"
	print "#define RLOCK_CONTRACT_H"
	print ""
	print "#include <string.h>"
	print ""
	print "/* The keys of a lock, in the one order every script takes them. */"
	print "enum lock_key {"
	for (i = 1; i <= nkeys; i++)
		printf "\tKEY_%s,\n", toupper(key[i])
	print "\tKEY__COUNT"
	print "};"
	printf "#define KEY_SUFFIXES {"
	for (i = 1; i <= nkeys; i++)
		printf " \"%s\"%s", suffix[i], i < nkeys ? "," : " }\n"
	for (s in nargs) {
		printf "\n/* %s.lua's ARGV. */\nenum %s_arg {\n", s, s
		for (i = 1; i <= nargs[s]; i++)
			printf "\t%s_%s,\n", toupper(s), toupper(arg[s, i])
		printf "\t%s__COUNT\n};\n", toupper(s)
		c_defaults(s)
	}
	for (j = 1; j <= nreplies; j++) {
		s = reply[j]
		printf "\n/* The reply %s, its fields. */\nenum reply_%s {\n", s, s
		for (i = 1; i <= nfields[s]; i++)
			printf "\t%s_%s,\n", toupper(s), toupper(field[s, i])
		printf "\t%s__COUNT\n};\n", toupper(s)
	}
	print ""
	print "#endif"
}
# SCRIPT_DEFAULTS (each argument's default, NULL: none) and
# script_nargs(args): how many of args to send, the defaults at the end
# left off.
function c_defaults(s,	i, first) {
	first = nargs[s] + 1
	for (i = nargs[s]; i >= 1 && ((s, i) in dflt); i--)
		first = i
	if (first > nargs[s])
		return
	printf "#define %s_DEFAULTS {", toupper(s)
	for (i = 1; i <= nargs[s]; i++)
		printf " %s%s", (s, i) in dflt ? "\"" dflt[s, i] "\"" : "NULL",
		    i < nargs[s] ? "," : " }\n"
	printf "static inline int\n%s_nargs(const char *const *args)\n{\n", s
	printf "\tstatic const char *const d[] = %s_DEFAULTS;\n", toupper(s)
	printf "\tint n = %s__COUNT;\n\n", toupper(s)
	printf "\twhile (n > %d && strcmp(args[n - 1], d[n - 1]) == 0)\n", first - 1
	printf "\t\tn--;\n\treturn n;\n}\n"
}
function map(	i, j, s, shape) {
	for (i = 1; i <= nkeys; i++) {
		printf "K.%s\tKEYS[%d]\n", key[i], i
		printf "KEY.%s\t%d\n", key[i], i - 1
	}
	printf "KEY_COUNT\t%d\n", nkeys
	if (script in nargs) {
		for (i = 1; i <= nargs[script]; i++)
			if ((script, i) in dflt)
				printf "A.%s\t(ARGV[%d] or '%s')\n", arg[script, i], i, dflt[script, i]
			else
				printf "A.%s\tARGV[%d]\n", arg[script, i], i
		printf "A_COUNT\t%d\n", nargs[script]
	}
	for (j = 1; j <= nreplies; j++) {
		s = reply[j]
		shape = "{"
		for (i = 1; i <= nfields[s]; i++) {
			printf "R_%s.%s\t%d\n", toupper(s), field[s, i], i
			shape = shape sprintf("%s = %d%s", field[s, i], i,
			    i < nfields[s] ? ", " : "}")
		}
		printf "R_%s\t%s\n", toupper(s), shape
	}
}
