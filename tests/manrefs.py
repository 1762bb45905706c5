#!/usr/bin/python3
"""manrefs.py PAGE...: every .Sx in each mdoc PAGE names a section or
subsection of that same page, and every pointer into another of the PAGEs,
written
    .Dq Section name
    in
    .Xr rlock 7
names a section or subsection of that page.  Prints "PAGE:LINE: TARGET"
for each one that does not, and exits 1 if there is any."""
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


def headings(lines):
    return {l[4:].strip() for l in lines if l.startswith((".Sh ", ".Ss "))}


pages = {}
for page in sys.argv[1:]:
    lines = open(page, encoding="utf-8").read().split("\n")
    m = [l.split()[1:3] for l in lines if l.startswith(".Dt ")][0]
    pages[(m[0].lower(), m[1])] = headings(lines)

bad = 0
for page in sys.argv[1:]:
    lines = open(page, encoding="utf-8").read().split("\n")
    heads = headings(lines)
    for n in range(len(lines) - 2):
        if (lines[n].startswith(".Dq ") and lines[n + 1] == "in" and
                lines[n + 2].startswith(".Xr ")):
            x = lines[n + 2].split()
            key = (x[1], x[2])
            if key in pages and lines[n][4:].strip() not in pages[key]:
                print("%s:%d: %s in %s(%s)" % (page, n + 1, lines[n][4:],
                                              x[1], x[2]))
                bad += 1
    for n, l in enumerate(lines, 1):
        if not l.startswith(".") or " Sx " not in " " + l[1:] + " ":
            continue
        for t in targets(l):
            if t not in heads:
                print("%s:%d: .Sx %s" % (page, n, t))
                bad += 1
sys.exit(1 if bad else 0)
