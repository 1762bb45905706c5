#!/usr/bin/python3
"""conform.py: the model checks what the scripts do (issue 48, item 7).

Random traces of rlock.pml (spin's simulation, -DTRACE, one server) are
replayed against the real scripts on a running redis-server: each script
step is sent as src/lock.c sends it (EVALSHA of the script's text as
embed.awk makes it, the same KEYS and ARGV), its reply is compared with
the model's result, and the server's keys, read back, with the model's
abstract state of the server.  env's steps that change the server (a hold
expires, an entry lapses) become real expiries.  README.md, "Conformance",
says what is compared and what is left out.

    conform.py --port P [--config NAME]... [--seeds A-B] [--steps N]
               [--lua DIR] [--trace FILE] [-v]

It starts no server: it is given one (--port, on 127.0.0.1).  Exit 0 when
every step agreed, 1 on the first mismatch (named: configuration, seed,
step, the trace line, model and server side by side), 2 on a usage or
setup error.  Python 3's standard library only.
"""

import argparse
import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LUA = os.path.dirname(HERE)

# The one-server configurations: check.sh's MIX ones, and the liveness
# ones (FIFO, UPLIVE), which loop; -DRUNS/-DFAULTS lengthen a trace,
# -DCRASHES bounds its crashes (see TRACE in rlock.pml).
PLAIN = "-DFS0=1 -DFS1=1 -DFS2=1"
CONFIGS = {
    # every mode, every client: plain, shared, limit 2, fifo, -n/-w, c0
    # may upgrade
    "mix": "-DMIX -DRUNS=6 -DFAULTS=3",
    "mix-upgrade": "-DMIX -DKS0=4 -DKS1=4 -DKS2=2 " + PLAIN +
                   " -DWS0=2 -DWS1=2 -DRUNS=6 -DFAULTS=3",
    "mix-limit": "-DMIX -DKS0=8 -DKS1=8 -DKS2=6 " + PLAIN +
                 " -DUP0=0 -DRUNS=6 -DFAULTS=3",
    "mix-fifo": "-DMIX -DKS0=2 -DKS1=12 -DKS2=6 -DFS0=2 -DFS1=3 -DFS2=1"
                " -DUP0=0 -DWS0=2 -DRUNS=6 -DFAULTS=3",
    "fifo": "-DFIFO -DCRASHES=0 -DFAULTS=3",
    # exec --pending 1 (-DNEWEST): plain asks, --fifo or not, -n/-w
    "pending": "-DMIX -DNEWEST -DKS0=2 -DKS1=2 -DKS2=2 -DFS0=3 -DFS1=3"
               " -DFS2=1 -DUP0=0 -DWS0=2 -DWS1=2 -DWS2=3 -DRUNS=6"
               " -DFAULTS=3",
    "uplive": "-DUPLIVE -DFAULTS=2",
    # exec --replace and --no-replace (-DREPLACE): plain asks, -n/-w; the
    # holders extend, and an extend that says "asked to stop" is answered
    # by a release
    "replace": "-DMIX -DREPLACE -DKS0=2 -DKS1=2 -DKS2=2 " + PLAIN +
               " -DUP0=0 -DWS0=2 -DWS1=3 -DWS2=3 -DRS0=5 -DRS1=3 -DRS2=7"
               " -DRUNS=6 -DFAULTS=3",
}

X, S, L = 1, 2, 3
A_OLD, A_RUN, A_G = 0, 1, 2
R_KEEP, R_NEW, R_UP, R_BUSYH, R_BUSYW, R_USAGE, R_DEADLK, R_SUPER = \
    range(1, 9)
R_NAME = {R_KEEP: "kept", R_NEW: "new", R_UP: "upgraded",
          R_BUSYH: "busy (holder)", R_BUSYW: "busy (waiter's turn)",
          R_USAGE: "usage", R_DEADLK: "upgrade refused",
          R_SUPER: "superseded"}
OPS = {0: "acquire", 1: "release", 2: "extend", 3: "give-back"}
EVENTS = {1: "a hold expires", 2: "an entry lapses",
          3: "a finished run's hold goes", 4: "a crash"}

TTL = "600000"          # a hold's: it never runs out during a replay
SLACK = "600000"        # a waiter's lease: likewise
HIST_LEN, HIST_TTL = "100", "60000"


class Mismatch(Exception):
    pass


# ------------------------------------------------------------- RESP

class Redis:
    def __init__(self, port, host="127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=10)
        self.buf = b""

    @staticmethod
    def _enc(args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if not isinstance(a, bytes):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def _line(self):
        while b"\r\n" not in self.buf:
            d = self.sock.recv(65536)
            if not d:
                raise ConnectionError("server closed the connection")
            self.buf += d
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _bulk(self, n):
        while len(self.buf) < n + 2:
            d = self.sock.recv(65536)
            if not d:
                raise ConnectionError("server closed the connection")
            self.buf += d
        v, self.buf = self.buf[:n], self.buf[n + 2:]
        return v

    def _reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._bulk(n).decode()
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RuntimeError("bad reply %r" % line)

    def pipe(self, cmds):
        self.sock.sendall(b"".join(self._enc(c) for c in cmds))
        return [self._reply() for _ in cmds]

    def call(self, *args):
        r = self.pipe([args])[0]
        if isinstance(r, RuntimeError):
            raise r
        return r


# ------------------------------------------------------------- scripts

def script_text(luadir, name):
    """The script as the client sends it (embed.sh: lib.lua, the script,
    the contract's names put in place; embed.awk, mode=body)."""
    names = subprocess.run(
        ["awk", "-v", "mode=map", "-v", "script=" + name,
         "-f", os.path.join(luadir, "contract.awk"),
         os.path.join(luadir, "contract")],
        check=True, capture_output=True, text=True).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".map") as t:
        t.write(names)
        t.flush()
        return subprocess.run(
            ["awk", "-v", "mode=body", "-v", "map=" + t.name, "-f",
             os.path.join(luadir, "embed.awk"),
             os.path.join(luadir, "lib.lua"),
             os.path.join(luadir, name + ".lua")],
            check=True, capture_output=True, text=True).stdout


# Each script's ARGV (src/lua/contract): its names in order, each with
# its default (None: none).  main() reads them.
ARGS = {}


def contract_args(luadir):
    out = {}
    with open(os.path.join(luadir, "contract")) as fh:
        for ln in fh:
            f = ln.split()
            if f and f[0] == "args":
                out[f[1]] = [tuple(x.split("=", 1)) if "=" in x else (x, None)
                             for x in f[2:]]
    return out


def argv(script, **named):
    """script's ARGV by the contract's names, in its order, the defaults
    at the end left off, as the client sends them."""
    spec, vals = ARGS[script], []
    for name, default in spec:
        v = named.pop(name, default)
        if v is None:
            raise Mismatch("%s: no value for its argument %s" % (script, name))
        vals.append(str(v))
    if named:
        raise Mismatch("%s takes no %s" % (script, ", ".join(named)))
    while vals and spec[len(vals) - 1][1] == vals[-1]:
        vals.pop()
    return vals


# ------------------------------------------------------------- traces

SPIN_DIR = None


def spin_dir():
    """A directory of this run's own with the model: spin writes its
    preprocessed copy into the directory it runs in, and two replays in
    one tree at once (the suite against two servers) read each other's."""
    global SPIN_DIR
    if SPIN_DIR is None:
        SPIN_DIR = tempfile.mkdtemp(prefix="conform-spin.")
        atexit.register(shutil.rmtree, SPIN_DIR, True)
        with open(os.path.join(HERE, "rlock.pml")) as src, \
                open(os.path.join(SPIN_DIR, "rlock.pml"), "w") as dst:
            dst.write(src.read())
    return SPIN_DIR


def spin_trace(config, seed, steps):
    """The model's TR lines of one random run."""
    flags = CONFIGS[config].split()
    p = subprocess.run(["spin", "-n%d" % seed, "-u%d" % steps, "-DTRACE"] +
                       flags + ["rlock.pml"], cwd=spin_dir(),
                       capture_output=True, text=True, timeout=120)
    lines = [ln.strip() for ln in p.stdout.splitlines()]
    bad = [ln for ln in lines if "Error" in ln or "assertion violated" in ln]
    if bad:
        raise Mismatch("the model itself stopped: %s" % bad[0])
    return [ln for ln in lines if ln.startswith("TR")]


def parse(lines):
    """(line, kind, fields, state) tuples: each TRO/TRE with its TRS."""
    out, i = [], 0
    while i < len(lines):
        ln = lines[i]
        f = [int(x) for x in ln.split()[1:]]
        if ln.startswith("TRR"):
            out.append((ln, "run", f, None))
            i += 1
            continue
        if not (ln.startswith("TRO") or ln.startswith("TRE")):
            raise Mismatch("trace: unexpected line %r" % ln)
        st = lines[i + 1] if i + 1 < len(lines) else ""
        if not st.startswith("TRS"):
            raise Mismatch("trace: %r without its state" % ln)
        s = [int(x) for x in st.split()[1:]]
        state = {"hk": s[0:3], "ha": s[3:6], "wk": s[6:9], "wf": s[9:12],
                 "wo": s[12:15]}
        if len(s) >= 21:
            # -DREPLACE: who is asked to stop (qh), who may not be (nr)
            state["qh"], state["nr"] = s[15:18], s[18:21]
        out.append((ln, "op" if ln.startswith("TRO") else "ev", f, state))
        i += 2
    return out


# ------------------------------------------------------------- replay

class Replay:
    def __init__(self, r, shas, name, verbose=False, lapse="status"):
        self.r, self.shas, self.v = r, shas, verbose
        self.lapse_mode = lapse
        k = "rlock:{%s}" % name
        self.lock = k
        self.keys = {x: "%s:%s" % (k, x) for x in
                     ("fence", "wake", "waiters", "queue", "log", "every",
                      "none")}
        # Every script's KEYS, in the contract's one order
        # (src/lua/contract).
        self.all = [k] + [self.keys[x] for x in
                          ("fence", "wake", "waiters", "queue", "log",
                           "every", "none")]
        self.tok = ["conform-%s-c%d" % (name, c) for c in range(3)]
        self.run = ["", "", ""]
        self.runs = 0
        self.listed = [0, 0, 0]
        # The pending configuration's clients ask with --pending 1.
        self.pending = "1" if name.startswith("pending") else "0"
        # An acquire's --replace (1) or --no-replace (2), from the trace.
        self.rp = 0
        self.pre = None

    # The server's state, abstracted as the model's, and what else a step
    # needs to judge its reply (the holds' fences, a live holder).
    def state(self):
        K, T = self.keys, self.tok
        cmds = [("TIME",), ("HGETALL", self.lock),
                ("HGETALL", K["waiters"]), ("ZRANGE", K["queue"], 0, -1)]
        rep = self.r.pipe(cmds)
        for x in rep:
            if isinstance(x, RuntimeError):
                raise x
        tm, hall, wh, q = rep
        now = int(tm[0]) * 1000 + int(tm[1]) // 1000
        # The lock's one record: a field per holder (lib.lua).
        rec = {}
        for i in range(0, len(hall), 2):
            rec[hall[i]] = json.loads(hall[i + 1])
        st = {"hk": [0] * 3, "ha": [0] * 3, "wk": [0] * 3, "wf": [0] * 3,
              "wo": [0] * 3, "qh": [0] * 3, "nr": [0] * 3,
              "fence": [None] * 3, "now": now, "rec": rec}
        for c, t in enumerate(T):
            r = rec.get(t)
            if r is None or float(r["e"]) <= now:
                continue
            st["hk"][c] = {"x": X, "s": S}.get(r["k"], L)
            st["fence"][c] = r["f"]
            st["qh"][c] = 1 if r.get("qh") else 0
            st["nr"][c] = 1 if r.get("nr") else 0
            a = r.get("a")
            st["ha"][c] = (A_G if a == "g" else
                           A_RUN if a == self.run[c] else A_OLD)
        places = []
        for i in range(0, len(wh), 2):
            if wh[i] not in T:
                continue
            c = T.index(wh[i])
            try:
                e = json.loads(wh[i + 1])
            except ValueError:
                continue
            if float(e.get("u", 0)) <= now:
                continue            # lapsed: as waiting() sees it
            if "sh" in e:
                continue            # superseded: a mark, not a waiter
            st["wk"][c] = {"x": X, "s": S, "l:2": L}.get(e.get("k"), 9)
            st["wf"][c] = 1 if wh[i] in q else 0
            o = float(e["o"]) if "o" in e else float(e.get("s", 0)) * 1000
            places.append((o, wh[i], c))
        for n, (_, _, c) in enumerate(sorted(places)):
            st["wo"][c] = n + 1
        return st

    def acquire(self, c, k, fifo, wt):
        K = self.keys
        keys = self.all
        args = argv("acquire", token=self.tok[c], ttl_ms=TTL,
                    host="conform", pid="c%d" % c, user="u", command="cmd",
                    slack_ms=SLACK if wt else "0",
                    fifo="1" if fifo and wt else "0",
                    limit="2" if k == L else "1",
                    listed="1" if self.listed[c] else "0",
                    shared="1" if k == S else "0", history_len=HIST_LEN,
                    history_ttl_ms=HIST_TTL, run=self.run[c],
                    pending=self.pending,
                    replace="1" if self.rp == 1 else "0",
                    no_replace="1" if self.rp == 2 else "0")
        return self.r.pipe([["EVALSHA", self.shas["acquire"], len(keys)] + keys +
                            args])[0]

    def release(self, c, give_back, keep):
        K = self.keys
        keys = self.all
        args = argv("release", token=self.tok[c],
                    outcome="" if give_back else "release",
                    history_len=HIST_LEN, history_ttl_ms=HIST_TTL,
                    host="conform", pid="c%d" % c, user="u", hand_over="1",
                    run=self.run[c] if give_back else "",
                    keep_listed="1" if keep else "0")
        return self.r.pipe([["EVALSHA", self.shas["release"], len(keys)] + keys +
                            args])[0]

    def extend(self, c):
        keys = self.all
        return self.r.pipe([["EVALSHA", self.shas["extend"], len(keys)] + keys +
                            [self.tok[c], TTL, TTL]])[0]

    # env: a hold of c expires (its TTL, or a grant's lease, has passed):
    # its record's end passes; the key goes with its last live holder, as
    # its expiry (hold_write() in lib.lua keeps it at the latest end)
    # takes it.
    def expire(self, c):
        st, t = self.pre, self.tok[c]
        if not st["hk"][c]:
            return
        if not any(st["hk"][d] for d in range(3) if d != c):
            self.r.call("PEXPIREAT", self.lock, 1)
            return
        r = dict(st["rec"][t])
        r["e"] = st["now"] - 1
        self.r.call("HSET", self.lock, t, json.dumps(r))

    # env: c's waiter lease lapses: its entry's u passes; then (lapse
    # "status", the default) status runs, inspect.lua, which drops every
    # lapsed entry, as the model's does at once.  With lapse "keep" the
    # entry stays in the hash, as it does until status or the hash's own
    # expiry: the waiter's next attempt then finds its old place (o),
    # where the model places it anew at the back (README.md,
    # "Conformance").
    def lapse(self, c):
        t = self.tok[c]
        raw = self.r.call("HGET", self.keys["waiters"], t)
        if raw is None:
            return
        e = json.loads(raw)
        e["u"] = self.pre["now"] - 1
        self.r.call("HSET", self.keys["waiters"], t, json.dumps(e))
        if self.lapse_mode == "status":
            K = self.keys
            r = self.r.call("EVALSHA", self.shas["inspect"], len(self.all),
                            *self.all)
            if not isinstance(r, list) or not isinstance(r[0], list):
                raise Mismatch("status (inspect.lua) failed: %r" % (r,))

    def result(self, op, c, k, reply):
        """The model's result code for a real reply."""
        if isinstance(reply, RuntimeError):
            raise Mismatch("the script failed: %s" % reply)
        if op in (1, 3):
            return reply
        if op == 2:
            # extended, and asked to stop (replace_host): 2
            if reply[0] == 1 and reply[3] not in (None, False):
                return 2
            return reply[0]
        code = reply[0]
        if code == 1:
            pk, pf = self.pre["hk"][c], self.pre["fence"][c]
            if pk == S and k == X:
                return R_UP
            if pk and str(reply[1]) == str(pf):
                return R_KEEP
            return R_NEW
        if code == 0:
            return R_BUSYH if reply[2] is not None else R_BUSYW
        if code == -1:
            return R_USAGE
        if code == -3:
            return R_DEADLK
        if code == -4:
            return R_SUPER
        raise Mismatch("unexpected reply %r" % (reply,))

    def step(self, line, kind, f, model):
        if kind == "run":
            c, up = f
            self.runs += 1
            self.run[c] = "run%d.c%d" % (self.runs, c)
            # lock.c starts a run unlisted; but the model's client keeps
            # one token across its runs, and an entry that an earlier run
            # left (its give-back lost) is the new run's own there: as
            # listed, so that a grant takes it off as the model's does.
            self.listed[c] = 1 if self.pre["wk"][c] else 0
            # A finished run's mark (its give-back lost) is no new run's:
            # in rlock each run has a token of its own (the model drops
            # it at the run's start).
            raw = self.r.call("HGET", self.keys["waiters"], self.tok[c])
            if raw is not None and "sh" in json.loads(raw):
                self.r.call("HDEL", self.keys["waiters"], self.tok[c])
            return
        if kind == "ev":
            what, c = f
            if what in (1, 3):
                self.expire(c)
            elif what == 2:
                self.lapse(c)
        else:
            op, c, k, fifo, wt, keep, mr = f[:7]
            self.rp = f[7] if len(f) > 7 else 0
            if op == 0:
                reply = self.acquire(c, k, fifo, wt)
            elif op == 2:
                reply = self.extend(c)
            else:
                reply = self.release(c, op == 3, keep)
            got = self.result(op, c, k, reply)
            ok = got == mr
            # A waiter's turn (model) that a live holder's metadata
            # comes with (script): a reader deferring to a writer is
            # shown the reader that holds it.
            if (op == 0 and mr == R_BUSYW and got == R_BUSYH and
                    any(self.pre["hk"])):
                ok = True
            if not ok:
                name = (lambda x: R_NAME.get(x, x)) if op == 0 else str
                raise Mismatch("%s of c%d: the model says %s, the script "
                               "%s (reply %r)" % (OPS[op], c, name(mr),
                                                  name(got), reply))
            if op == 0:
                if mr in (R_KEEP, R_NEW, R_UP, R_USAGE, R_DEADLK,
                          R_SUPER):
                    self.listed[c] = 0
                elif wt:
                    self.listed[c] = 1
            elif not (op == 3 and keep):
                self.listed[c] = 0
        real = self.state()
        diff = []
        for c in range(3):
            for fld in ("hk", "wk"):
                if real[fld][c] != model[fld][c]:
                    diff.append("%s[%d] model %d, server %d" % (
                        fld, c, model[fld][c], real[fld][c]))
            if model["hk"][c] and real["ha"][c] != model["ha"][c]:
                diff.append("ha[%d] model %d, server %d" % (
                    c, model["ha"][c], real["ha"][c]))
            if model["hk"][c] and "qh" in model:
                for fld in ("qh", "nr"):
                    if real[fld][c] != model[fld][c]:
                        diff.append("%s[%d] model %d, server %d" % (
                            fld, c, model[fld][c], real[fld][c]))
            if model["wk"][c]:
                for fld in ("wf", "wo"):
                    if real[fld][c] != model[fld][c]:
                        diff.append("%s[%d] model %d, server %d" % (
                            fld, c, model[fld][c], real[fld][c]))
        if diff:
            raise Mismatch("state after it: " + "; ".join(diff))
        self.pre = real

    def cleanup(self):
        keys = [self.lock, self.lock + ":holders"] + list(self.keys.values())
        keys += ["%s:holder:%s" % (self.lock, t) for t in self.tok]
        keys += ["%s:%s" % (self.keys["wake"], t) for t in self.tok]
        self.r.call("DEL", *keys)


def describe(line, kind, f):
    if kind == "run":
        return "c%d starts a run%s" % (f[0], " (an upgrade)" if f[1] else "")
    if kind == "ev":
        return "env: c%d: %s" % (f[1], EVENTS.get(f[0], f[0]))
    op, c, k, fifo, wt, keep, r = f[:7]
    mode = {X: "plain", S: "--shared", L: "--limit 2"}.get(k, "?")
    rp = f[7] if len(f) > 7 else 0
    if op == 0:
        return "c%d acquire %s%s%s %s" % (
            c, mode, " --fifo" if fifo else "",
            ["", " --replace", " --no-replace"][rp],
            ["-n", "-w (bounded)", "-w (unbounded)"][wt])
    return "c%d %s%s" % (c, OPS[op], " (keeps its entry)" if keep and op == 3
                         else "")


def replay(r, shas, name, steps, label, verbose, lapse):
    rp = Replay(r, shas, name, verbose, lapse)
    rp.cleanup()
    rp.pre = rp.state()
    n = 0
    try:
        for i, (line, kind, f, model) in enumerate(steps):
            if verbose:
                print("  %s  %s" % (label, describe(line, kind, f)))
            try:
                rp.step(line, kind, f, model)
            except Mismatch as m:
                raise Mismatch("MISMATCH %s, step %d (%s: %s): %s" % (
                    label, i + 1, line, describe(line, kind, f), m))
            n += kind == "op"
    finally:
        rp.cleanup()
    return n


def seeds_of(text):
    a, _, b = text.partition("-")
    return range(int(a), int(b or a) + 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--config", action="append",
                    help="one of: " + ", ".join(CONFIGS) + " (default: all)")
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--steps", type=int, default=30000,
                    help="spin's -u: the depth of each random run")
    ap.add_argument("--lua", default=LUA,
                    help="the scripts' directory (default: src/lua)")
    ap.add_argument("--trace", help="replay this file of TR lines instead")
    ap.add_argument("--lapse", choices=("status", "keep"), default="status",
                    help="a lapsed entry: dropped by status (default), or "
                    "kept in the hash")
    ap.add_argument("--pending", action="store_true",
                    help="with --trace: its clients ask with --pending 1")
    ap.add_argument("--max-seconds", type=float, default=600)
    ap.add_argument("-v", action="store_true")
    o = ap.parse_args()
    configs = o.config or list(CONFIGS)
    for c in configs:
        if c not in CONFIGS:
            ap.error("unknown configuration %r" % c)
    try:
        ARGS.update(contract_args(o.lua))
        r = Redis(o.port)
        shas = {n: r.call("SCRIPT", "LOAD", script_text(o.lua, n))
                for n in ("acquire", "release", "extend", "inspect")}
    except (OSError, RuntimeError, subprocess.CalledProcessError,
            Mismatch) as e:
        print("conform.py: %s" % e, file=sys.stderr)
        return 2
    start, total, traces = time.monotonic(), 0, 0
    try:
        if o.trace:
            with open(o.trace) as fh:
                lines = [ln.strip() for ln in fh if ln.strip().startswith("TR")]
            total = replay(r, shas, "pending-file" if o.pending else
                           "file", parse(lines), o.trace, o.v, o.lapse)
            traces = 1
        else:
            for cfg in configs:
                n0 = total
                for seed in seeds_of(o.seeds):
                    if time.monotonic() - start > o.max_seconds:
                        print("conform.py: out of time (--max-seconds)",
                              file=sys.stderr)
                        return 2
                    steps = parse(spin_trace(cfg, seed, o.steps))
                    total += replay(r, shas, "%s-%d" % (cfg, seed), steps,
                                    "%s seed %d" % (cfg, seed), o.v,
                                    o.lapse)
                    traces += 1
                print("%-12s seeds %s: %d script steps agree" % (
                    cfg, o.seeds, total - n0))
    except Mismatch as m:
        print(m)
        return 1
    print("conform: %d script steps in %d traces agree (%.1fs)" % (
        total, traces, time.monotonic() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
