#!/usr/bin/python3
"""manparas.py PAGE...: no paragraph appears twice across the mdoc PAGEs.

A paragraph is the source text between two of .Pp, .Sh, .Ss, .It, .Bl, .El,
.Bd, .Ed, with whitespace squeezed; those of MIN characters or more (short
ones, such as "Default: 30s.", may well repeat) must each appear once.
Prints "PAGE:LINE and PAGE:LINE: TEXT" for each repeat; exits 1 if any."""
import sys

MIN = 100
BREAKS = (".Pp", ".Sh", ".Ss", ".It", ".Bl", ".El", ".Bd", ".Ed", ".Dl")

seen = {}
bad = 0
for page in sys.argv[1:]:
    para, start = [], 0
    lines = open(page, encoding="utf-8").read().split("\n") + [".Pp"]
    for n, line in enumerate(lines, 1):
        if line.startswith(BREAKS):
            text = " ".join(" ".join(para).split())
            if len(text) >= MIN:
                if text in seen:
                    print("%s and %s:%d: %s" % (seen[text], page, start,
                                                text[:120]))
                    bad += 1
                else:
                    seen[text] = "%s:%d" % (page, start)
            para, start = [], n + 1
        else:
            para.append(line)
sys.exit(1 if bad else 0)
