#!/bin/sh
# hash.sh: record the sha1 of each script the model mirrors in hashes
# ("sha1  path" lines, paths from the top of the tree), after the model has
# been brought up to date with them.
#   hash.sh          write hashes
#   hash.sh --check  fail, naming each script whose hash differs
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
SCRIPTS="src/lua/acquire.lua src/lua/release.lua src/lua/extend.lua
src/lua/lib.lua src/lua/force.lua src/lua/fence.lua src/lua/inspect.lua"
if [ "${1:-}" != --check ]; then
	(cd "$top" && sha1sum $SCRIPTS) >"$here/hashes"
	exit 0
fi
bad=0
for f in $SCRIPTS; do
	want=$(awk -v f="$f" '$2 == f { print $1 }' "$here/hashes")
	have=$(cd "$top" && sha1sum "$f" | cut -c1-40)
	if [ "$want" != "$have" ]; then
		echo "script $f changed: update the model and its hashes" >&2
		bad=1
	fi
done
[ "$bad" = 0 ] && echo "hashes: the model's scripts are unchanged"
exit $bad
