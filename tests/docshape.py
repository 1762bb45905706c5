#!/usr/bin/python3
"""docshape.py REAL DOC...: is every example of rlock's output in DOC (the
README, the man page) shaped like something rlock really printed?

REAL is a file of lines that rlock printed in a test.  From each DOC, the
lines that look like rlock's output are taken: status lines, history lines,
doctor findings, and JSON objects (joined when an example wraps one).  A
line's shape is the line with what differs from run to run put in classes:
times, durations, tokens, user@host, URLs, commands in parentheses (left
out), and
numbers (short ones, and the 13 digits and more of epoch milliseconds and
fences: a fence shown as "fence 12" is not a shape rlock prints).  JSON is
compared by its keys and the types of their values.  Prints each example
that matches nothing real, and exits 1 if there is one.
"""
import json
import re
import sys


def unman(line):
    """A line of an mdoc literal block as a reader sees it."""
    if line.startswith(".Dl "):
        line = line[4:]
    return (line.replace("\\e", "\\").replace("\\&", "")
            .replace("\\-", "-").replace("\\(em", "--"))


def shape(line):
    s = line.rstrip()
    s = re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?Z?", "<time>", s)
    s = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
               "<token>", s)
    s = re.sub(r"\b(rediss?|unix|redis-sentinel)://[^ ,)]*?(?=:? |:?$|[,)])",
               "<url>", s)
    s = re.sub(r"\b(\d+(\.\d+)?(ms|s|m|h|d))+\b", "<dur>", s)
    s = re.sub(r"[\w.-]+@[\w.-]+", "<who>", s)
    # A command is shown when one is stored: "pid 4711 (./job.sh)".
    s = re.sub(r"(pid \d+) \([^()]*\)", r"\1", s)
    s = re.sub(r"\d{13,}", "<big>", s)
    s = re.sub(r"\d+", "<n>", s)
    # A lock's name leads a status line and follows the time in history.
    s = re.sub(r"^[^ :]+: (held|free|shared|<n> of)", r"<name>: \1", s)
    s = re.sub(r"^<time> [^ ]+ ", "<time> <name> ", s)
    s = re.sub(r"^(removed) [^ :]+:", r"\1 <name>:", s)
    return s


OUTPUT = re.compile(
    r"^(\S+: (held by|free|shared by|\d+ of \d+ held)"
    r"|  (held by|waiting:) "
    r"|removed \S+: held"
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \S+ (acquired|released|lost"
    r"|forced|expired)"
    r"|(ok|info|warning|error) +\S+://)")


def json_shape(v):
    if isinstance(v, dict):
        return "{" + ",".join(sorted(k + ":" + json_shape(x)
                                     for k, x in v.items())) + "}"
    if isinstance(v, list):
        return "[" + ",".join(sorted(set(json_shape(x) for x in v))) + "]"
    if isinstance(v, bool):
        return "bool"
    if v is None or isinstance(v, str):
        return "str"	# a command is a string or null
    if isinstance(v, int) and v >= 10 ** 12:
        return "big"
    return "num"


def examples(path):
    """(line number, kind, text) of each example of output in path."""
    lines = open(path, encoding="utf-8").read().split("\n")
    man = path.endswith((".1", ".5", ".7"))
    inblock = False
    pending = None
    for n, raw in enumerate(lines, 1):
        if man:
            if raw.startswith(".Bd -literal"):
                inblock = True
                continue
            if raw.startswith(".Ed"):
                inblock = False
                pending = None
                continue
            if not inblock and not raw.startswith(".Dl "):
                continue
            if raw.startswith(".") and not raw.startswith(".Dl "):
                continue
            line = unman(raw)
        else:
            if raw.startswith("```"):
                inblock = not inblock
                pending = None
                continue
            if not inblock:
                continue
            line = raw
        if pending is not None:
            pending = (pending[0], pending[1] + line.strip())
        elif line.lstrip("$ ").startswith(("{\"name\"", "[{\"name\"",
                                           "{\"time\"")):
            pending = (n, line.lstrip("$ "))
        if pending is not None:
            if "..." in pending[1]:
                pending = None
                continue
            try:
                yield pending[0], "json", json_shape(json.loads(pending[1]))
                pending = None
            except ValueError:
                if n - pending[0] > 8:
                    pending = None
            continue
        if OUTPUT.match(line):
            # A finding wrapped onto indented lines is one line of output.
            yield n, "text", shape(line)


def main():
    real_text, real_json = set(), set()
    for line in open(sys.argv[1], encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith(("{", "[")):
            try:
                real_json.add(json_shape(json.loads(line)))
            except ValueError:
                pass
        real_text.add(shape(line))
    bad = 0
    seen = 0
    for path in sys.argv[2:]:
        for n, kind, s in examples(path):
            seen += 1
            if kind == "json" and s in real_json:
                continue
            if kind == "text" and any(r == s or (s.startswith(("ok", "info",
                                      "warning", "error")) and
                                      r.startswith(s)) for r in real_text):
                continue
            print("%s:%d: no real output has this shape: %s" % (path, n, s))
            bad += 1
    print("%d examples checked, %d unlike rlock's output" % (seen, bad))
    return 1 if bad or seen == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
