#!/usr/bin/python3
"""validate-json.py SCHEMA [--lines] [--invalid]: validate stdin against
doc/schema/SCHEMA (draft 2020-12, Debian 12's python3-jsonschema 4.10).

Stdin is one JSON document, or with --lines one a line (JSON Lines, as
log and watch print them; at least one).  Each schema's $ref to another
file of doc/schema (watch.json -> log.json) is resolved from that
directory, never from the network.  Exits 0 if every document is valid,
1 with each error on stderr if not.  With --invalid the other way round:
exits 0 only if some document is invalid (the check is not vacuous).
"""
import json
import os
import sys

import jsonschema


def main():
    args = sys.argv[1:]
    lines = "--lines" in args
    invalid = "--invalid" in args
    names = [a for a in args if not a.startswith("--")]
    if len(names) != 1:
        sys.exit("usage: validate-json.py SCHEMA [--lines] [--invalid]")
    here = os.path.dirname(os.path.abspath(__file__))
    sdir = os.environ.get("RLOCK_SCHEMA_DIR",
                          os.path.join(here, "..", "doc", "schema"))
    store = {}
    for f in sorted(os.listdir(sdir)):
        if f.endswith(".json"):
            with open(os.path.join(sdir, f)) as fp:
                s = json.load(fp)
            jsonschema.Draft202012Validator.check_schema(s)
            store[s["$id"]] = s
    with open(os.path.join(sdir, names[0])) as fp:
        schema = json.load(fp)
    resolver = jsonschema.RefResolver.from_schema(schema, store=store)
    v = jsonschema.Draft202012Validator(
        schema, resolver=resolver,
        format_checker=jsonschema.draft202012_format_checker)
    text = sys.stdin.read()
    if lines:
        docs = [json.loads(l) for l in text.splitlines() if l.strip()]
        if not docs:
            sys.exit("validate-json.py: no JSON line on stdin")
    else:
        docs = [json.loads(text)]
    bad = 0
    for i, d in enumerate(docs):
        for e in v.iter_errors(d):
            bad += 1
            path = "/".join(str(p) for p in e.absolute_path)
            print("%s: document %d at /%s: %s" % (names[0], i + 1, path,
                  e.message), file=sys.stderr)
    if invalid:
        sys.exit(0 if bad else 1)
    sys.exit(1 if bad else 0)


main()
