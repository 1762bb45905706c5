#!/usr/bin/python3
"""manrefs.py PAGE...: every .Sx in each mdoc PAGE names a section or
subsection of that same page.  Prints "PAGE:LINE: .Sx TARGET" for each one
that does not, and exits 1 if there is any."""
import re
import sys

MACROS = {"Ns", "No", "Pq", "Ql", "Sx", "Xr", "Fl", "Ar", "Cm", "Li", "Ev",
          "Pa", "Dq", "Sy", "Em", "Op", "Oo", "Oc", "Po", "Pc", "Dv", "Nm"}
PUNCT = re.compile(r"^[.,:;()\[\]?!|]+$")


def targets(line):
    words = line.lstrip(".").split()
    for i, w in enumerate(words):
        if w != "Sx":
            continue
        t = []
        for x in words[i + 1:]:
            if PUNCT.match(x) or x in MACROS:
                break
            t.append(x)
        yield " ".join(t)


bad = 0
for page in sys.argv[1:]:
    lines = open(page, encoding="utf-8").read().split("\n")
    heads = {l[4:].strip() for l in lines if l.startswith((".Sh ", ".Ss "))}
    for n, l in enumerate(lines, 1):
        if not l.startswith(".") or " Sx " not in " " + l[1:] + " ":
            continue
        for t in targets(l):
            if t not in heads:
                print("%s:%d: .Sx %s" % (page, n, t))
                bad += 1
sys.exit(1 if bad else 0)
