#!/usr/bin/python3
"""check.py: the randomized fault checker of rlock (tests/chaos/README.md).

Runs one scenario (single, quorum or cluster) against the real binary:
workers take a few shared names in every mode while a chaos thread kills and
stops rlock, its guard, keepers and commands, freezes and restarts the
servers and has proxies delay, freeze, reset and cut replies.  Then it checks
the sections that the guarded command (stamp sec) logged:

  exclusion   an exclusive holder alone, readers never with a writer, at
              most N holders of a --limit N (an overlap is excused only
              where the earlier holder's lock was lost and the later one
              entered after the earlier was told: see README.md)
  fence       fences strictly increasing along the holders of a name that
              cannot hold it together (exclusive after anything, ...)
  false-loss  no loss told of a run whose command ended by itself inside
              its TTL with no server or proxy fault on its way (break 1
              of issue 49: rlock stopped after its command's end)
  waits       a run with -w D (or -n) has entered or ended within
              D + 2 x --timeout + --connect-timeout + 1.5 s, less any time
              the checker kept rlock stopped
  stuck       once everything is over and the TTLs and waiter leases have
              run out, every name is free and takes a plain lock at once
  leftovers   no process of the run (rlock, guard, keeper, command) remains
  hung        no rlock runs past a generous bound of its own

Usage: check.py --stamp PATH --rlock PATH --dir DIR [--seed N]
                [--seconds S] [--mode single|quorum|cluster]
                [--sabotage on-lost-ignore]
       check.py --check-only DIR      (analyse the logs of a finished run)

Prints its seed first and a summary last; exits 1 on any violation, stuck
lock, leftover or hung run, 2 when the scenario could not be set up.
Standard library only.
"""

import argparse
import collections
import heapq
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAULTPROXY = os.path.join(HERE, "..", "faultproxy.py")
PY = "/usr/bin/python3"

TIMEOUT_MS = 1000          # --timeout of every run
CONNECT_MS = 1000          # --connect-timeout of every run
KILL_AFTER_MS = 2000       # exec --kill-after
WAIT_SLACK_MS = 1500       # process start-up and scheduling on a loaded host
DELTA_MS = 50              # signal delivery allowance (README: "excused")
FALSE_LOSS_MARGIN_MS = 300  # a command ended this far inside its TTL was held
LEASE_MS = 2000 + TIMEOUT_MS + 1000  # a dead waiter's entry lapses by then
TTLS = (1000, 1500, 2000)
WAITS = (None, 500, 1000, 2000, 4000)  # None: -n

ms = 1000000  # ns per ms


def now():
    return time.monotonic_ns()


# ---------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------

def proc_stat(pid):
    """(comm, state, ppid, pgrp, session, starttime) or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            s = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    l, r = s.index("("), s.rindex(")")
    rest = s[r + 2:].split()
    return (s[l + 1:r], rest[0], int(rest[1]), int(rest[2]), int(rest[3]),
            int(rest[19]))


def proc_env(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return None


def proc_argv(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def scan(marker, rlock=None):
    """Every live process of this run: dicts with pid, role, attempt.
    An rlock process is one running the binary under test (RLOCK), its
    guard the one that calls itself rlock-guard."""
    out = []
    mk = marker.encode()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        pid = int(d)
        env = proc_env(pid)
        if not env or mk not in env:
            continue
        st = proc_stat(pid)
        if st is None or st[1] in "ZX":
            continue
        argv = proc_argv(pid)
        att = "-"
        for e in env:
            if e.startswith(b"CHAOS_ATTEMPT="):
                att = e[14:].decode()
        comm = st[0]
        if comm == "rlock-guard":
            role = "guard"
        elif comm == "stamp" and len(argv) > 1 and argv[1] == "sec":
            role = "cmd"
        elif (argv and rlock and argv[0] == rlock) or comm == "rlock":
            if "--hold" in argv and st[4] == pid:
                role = "keeper"
            else:
                role = "rlock"
        else:
            role = "other"
        out.append({"pid": pid, "role": role, "attempt": att, "state": st[1],
                    "start": st[5], "argv": " ".join(argv)[:200]})
    return out


def signal_proc(p, sig, marker):
    """Signal a scanned process through a pidfd, once it is sure to be the
    same process (start time and marker), so that a reused pid is never
    hit.  Returns the pidfd (kept for a later SIGCONT) or None."""
    try:
        fd = os.pidfd_open(p["pid"])
    except OSError:
        return None
    st = proc_stat(p["pid"])
    env = proc_env(p["pid"])
    if st is None or st[5] != p["start"] or not env or marker.encode() not in env:
        os.close(fd)
        return None
    try:
        signal.pidfd_send_signal(fd, sig)
    except OSError:
        os.close(fd)
        return None
    return fd


def alive(pid):
    st = proc_stat(pid)
    return st is not None and st[1] not in "ZX"


def kill_wait(popen, sig=signal.SIGKILL, max_s=5.0):
    if popen.poll() is not None:
        return
    try:
        os.kill(popen.pid, signal.SIGCONT)
        os.kill(popen.pid, sig)
    except OSError:
        pass
    try:
        popen.wait(max_s)
    except subprocess.TimeoutExpired:
        try:
            os.kill(popen.pid, signal.SIGKILL)
        except OSError:
            pass
        popen.wait(5)


# ---------------------------------------------------------------------------
# Servers and proxies
# ---------------------------------------------------------------------------

def free_port(rng):
    for _ in range(50):
        p = rng.randint(20000, 55000)
        ok = True
        for q in (p, p + 10000):
            s = socket.socket()
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", q))
            except OSError:
                ok = False
            finally:
                s.close()
        if ok:
            return p
    raise RuntimeError("no free port")


def redis_cmd(port, *words, timeout=2.0):
    """One command over RESP; the reply's first line (enough for PING,
    INFO fields are read with info())."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    except OSError:
        return None
    try:
        req = f"*{len(words)}\r\n" + "".join(f"${len(w)}\r\n{w}\r\n" for w in words)
        s.sendall(req.encode())
        buf = b""
        while b"\r\n" not in buf:
            c = s.recv(65536)
            if not c:
                break
            buf += c
        if buf.startswith(b"$"):
            n = int(buf[1:buf.index(b"\r\n")])
            while len(buf) < buf.index(b"\r\n") + 2 + max(n, 0):
                c = s.recv(65536)
                if not c:
                    break
                buf += c
        return buf.decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        s.close()


class Redis:
    def __init__(self, run, name, cluster=False):
        self.run = run
        self.name = name
        self.dir = os.path.join(run.dir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.sock = os.path.join(self.dir, "s")
        self.port = free_port(run.setup_rng)
        self.cluster = cluster
        self.popen = None

    def args(self):
        a = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--unixsocket", self.sock, "--unixsocketperm", "700",
             "--save", "", "--appendonly", "yes", "--appendfsync", "always",
             "--daemonize", "no", "--dir", self.dir,
             "--logfile", os.path.join(self.dir, "redis.log")]
        if self.cluster:
            a += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                  "--cluster-node-timeout", "5000"]
        return a

    def start(self):
        self.popen = subprocess.Popen(self.args(), stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL,
                                      start_new_session=True)
        self.run.children.append(self.popen)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                return False
            r = redis_cmd(self.port, "PING", timeout=0.5)
            if r and r.startswith("+PONG"):
                return True
            time.sleep(0.02)
        return False

    def kill(self):
        if self.popen is not None:
            kill_wait(self.popen)

    def url(self):
        return f"redis://127.0.0.1:{self.port}"

    def unix(self):
        return f"unix://{self.sock}"


class Proxy:
    def __init__(self, run, name, target_port, seconds):
        self.run = run
        self.name = name
        d = os.path.join(run.dir, name)
        os.makedirs(d, exist_ok=True)
        self.ctl = os.path.join(d, "ctl")
        self.popen = subprocess.Popen(
            [PY, FAULTPROXY, "--listen", "127.0.0.1:0",
             "--target", f"127.0.0.1:{target_port}", "--control", self.ctl,
             "--max-seconds", str(int(seconds))],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=open(os.path.join(d, "err"), "w"), start_new_session=True)
        run.children.append(self.popen)
        line = self.popen.stdout.readline().decode().strip()
        if not line.isdigit():
            raise RuntimeError(f"proxy {name} did not start")
        self.port = int(line)

    def send(self, words):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        try:
            s.connect(self.ctl)
            s.sendall(words.encode() + b"\n")
            buf = b""
            while not buf.endswith(b"\n"):
                c = s.recv(4096)
                if not c:
                    break
                buf += c
            return buf.decode().startswith("ok")
        except OSError:
            return False
        finally:
            s.close()

    def url(self):
        return f"redis://127.0.0.1:{self.port}"


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------

EXEC, HOLD = "exec", "hold"

# (how, kind, options): kind x exclusive, s shared, l2 --limit 2.
M_PLAIN = (EXEC, "x", [])
M_FIFO = (EXEC, "x", ["--fifo"])
M_SHARED = (EXEC, "s", ["--shared"])
M_LIMIT = (EXEC, "l2", ["--limit", "2"])
M_HOLD = (HOLD, "x", [])
M_HSHARED = (HOLD, "s", ["--shared"])
M_HLIMIT = (HOLD, "l2", ["--limit", "2"])

EXCL_MODES = [M_PLAIN, M_FIFO, M_SHARED, M_HOLD, M_HSHARED]
LIMIT_MODES = [M_LIMIT, M_HLIMIT]

HOLD_SCRIPT = r'''
out=$("$CHAOS_RL" $CHAOS_G --json acquire --hold --pid $$ $CHAOS_A "$CHAOS_NAME"); rc=$?
if [ $rc -ne 0 ]; then echo "acq=$rc"; exit 0; fi
tok=${out#*\"token\":\"}; tok=${tok%%\"*}
f=${out#*\"fence\":}; f=${f%%,*}
RLOCK_FENCE=$f "$CHAOS_STAMP" sec "$CHAOS_LOG" "$CHAOS_MS"; sec=$?
"$CHAOS_RL" $CHAOS_G release --token "$tok" "$CHAOS_NAME"; rel=$?
echo "acq=0 sec=$sec rel=$rel"
'''

# Fault kinds and their weights per scenario.
PROC_FAULTS = {"kill_rlock": 1, "stop_rlock": 2, "kill_guard": 1,
               "stop_guard": 1, "kill_keeper": 0.5, "stop_keeper": 1,
               "kill_cmd": 1, "stop_cmd": 1}
SERVER_FAULTS = {"freeze_server": 1, "restart_server": 0.5}
PROXY_FAULTS = {"proxy_delay": 1, "proxy_freeze": 1, "proxy_reset": 1,
                "proxy_cut": 1, "partition": 1.5}
SUPERVISORS = {"rlock", "guard", "keeper"}


class Run:
    def __init__(self, a):
        self.a = a
        self.dir = a.dir
        os.makedirs(self.dir, exist_ok=True)
        self.seed = a.seed
        self.setup_rng = random.Random(a.seed * 7 + 1)
        self.children = []
        self.marker = f"CHAOS_RUN={os.getpid()}-{a.seed}-{int(time.time())}"
        self.log = os.path.join(self.dir, "sections.log")
        self.att_f = open(os.path.join(self.dir, "attempts.jsonl"), "w")
        self.flt_f = open(os.path.join(self.dir, "faults.jsonl"), "w")
        self.lock = threading.Lock()
        self.live = {}          # attempt -> info, while it runs
        self.sup_faulted = set()  # attempts whose rlock/guard/keeper was hit
        self.pending = []       # heap of (due_ns, seq, action)
        self.seq = 0
        self.stop_all = threading.Event()
        self.workers_done = threading.Event()
        self.servers = []
        self.proxies = []
        self.routes = {}        # route -> (global args, [proxies])
        self.server_busy = 0
        self.proxy_busy = {}
        self.fault_seq = 0

    # -- logging ----------------------------------------------------------
    def fault(self, **kw):
        with self.lock:
            self.fault_seq += 1
            kw.setdefault("t", now())
            kw["id"] = self.fault_seq
            self.flt_f.write(json.dumps(kw) + "\n")
            self.flt_f.flush()
            return self.fault_seq

    def later(self, delay_ms, action):
        with self.lock:
            self.seq += 1
            heapq.heappush(self.pending, (now() + int(delay_ms * ms), self.seq, action))

    def run_due(self, force=False):
        while True:
            with self.lock:
                if not self.pending or (not force and self.pending[0][0] > now()):
                    return
                _, _, action = heapq.heappop(self.pending)
            try:
                action()
            except Exception as e:  # a restore must never stop the others
                self.fault(kind="restore_error", err=repr(e))

    # -- set-up -------------------------------------------------------------
    def setup(self):
        a = self.a
        life = a.seconds + 600
        g = ["--timeout", f"{TIMEOUT_MS}ms", "--connect-timeout", f"{CONNECT_MS}ms"]
        if a.mode == "single":
            r = Redis(self, "redis")
            if not r.start():
                raise RuntimeError("redis-server did not start")
            self.servers = [r]
            p1 = Proxy(self, "proxy1", r.port, life)
            p2 = Proxy(self, "proxy2", r.port, life)
            self.proxies = [p1, p2]
            self.routes = {"direct": (g + ["-u", r.unix()], []),
                           "p1": (g + ["-u", p1.url()], [p1]),
                           "p2": (g + ["-u", p2.url()], [p2])}
            self.names = {"x": EXCL_MODES, "y": EXCL_MODES + [M_LIMIT],
                          "z": LIMIT_MODES}
            self.nworkers = 8
        elif a.mode == "quorum":
            rs = [Redis(self, f"redis{i}") for i in (1, 2, 3)]
            for r in rs:
                if not r.start():
                    raise RuntimeError("redis-server did not start")
            self.servers = rs
            ps = [Proxy(self, f"proxy{i}", r.port, life) for i, r in enumerate(rs, 1)]
            self.proxies = ps
            direct, prox = list(g), list(g)
            for r in rs:
                direct += ["-u", r.unix()]
            for p in ps:
                prox += ["-u", p.url()]
            self.routes = {"direct": (direct, []), "proxied": (prox, ps)}
            self.names = {"qx": [M_PLAIN, M_SHARED, M_HOLD, M_HSHARED],
                          "qy": [M_PLAIN, M_HOLD]}
            self.nworkers = 6
        else:
            rs = [Redis(self, f"node{i}", cluster=True) for i in (1, 2, 3)]
            for r in rs:
                if not r.start():
                    raise RuntimeError("cluster node did not start")
            self.servers = rs
            out = subprocess.run(
                ["redis-cli", "--cluster", "create"] +
                [f"127.0.0.1:{r.port}" for r in rs] + ["--cluster-yes"],
                stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
            if out.returncode != 0:
                raise RuntimeError("redis-cli --cluster create failed: " +
                                   out.stdout.decode()[-500:])
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                ok = all("cluster_state:ok" in (redis_cmd(r.port, "CLUSTER", "INFO") or "")
                         for r in rs)
                if ok:
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError("the cluster never became ok")
            seeds = ",".join(f"127.0.0.1:{r.port}" for r in rs)
            self.routes = {"seeds": (g + ["-u", f"redis://{seeds}"], [])}
            self.names = {"cx": EXCL_MODES, "cy": EXCL_MODES + [M_LIMIT],
                          "cz": LIMIT_MODES}
            self.nworkers = 6
        # The watch daemon (stamp watchd) logs each section's end.
        self.watch_sock = os.path.join(self.dir, "w.sock")
        self.watchd = subprocess.Popen(
            [a.stamp, "watchd", self.watch_sock, self.log, str(life)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, start_new_session=True)
        self.children.append(self.watchd)
        if self.watchd.stdout.readline().strip() != b"ready":
            raise RuntimeError("stamp watchd did not start")
        self.fault_kinds = dict(PROC_FAULTS)
        self.fault_kinds.update(SERVER_FAULTS)
        if self.proxies:
            self.fault_kinds.update(PROXY_FAULTS)
        if a.mode == "cluster":
            self.fault_kinds["restart_server"] = 0.3
        if a.sabotage and "partition" in self.fault_kinds:
            # What the sabotage breaks shows under a partition: more of them.
            self.fault_kinds["partition"] = 8

    def env(self, attempt):
        e = {k: v for k, v in os.environ.items()
             if not k.startswith("RLOCK_") and k != "REDISCLI_AUTH"}
        k, v = self.marker.split("=", 1)
        e[k] = v
        e["CHAOS_ATTEMPT"] = attempt
        e["CHAOS_WATCH"] = self.watch_sock
        return e

    # -- workers ------------------------------------------------------------
    def worker(self, wid, deadline):
        rng = random.Random(self.seed * 1000 + wid)
        # The late stops draw from a stream of their own, so that the
        # workers' runs (and what a seed showed before them) stay as they
        # were; a sabotaged run has none (its partitions show the break).
        late_rng = random.Random(self.seed * 1000 + wid + 500)
        seq = 0
        names = sorted(self.names)
        routes = sorted(self.routes)
        while now() < deadline and not self.stop_all.is_set() and seq < 100000:
            seq += 1
            name = rng.choice(names)
            how, kind, opts = rng.choice(self.names[name])
            route = rng.choice(routes)
            ttl = rng.choice(TTLS)
            wait = rng.choice(WAITS)
            x = rng.random()
            if x < 0.65:
                dur = rng.randint(10, 300)
            elif x < 0.88:
                dur = rng.randint(300, 1500)
            else:
                dur = rng.randint(int(ttl * 1.2), int(ttl * 2.5))
            # An exec that stops its own rlock at once, past its TTL,
            # running on after that: if the stop lands before the guard
            # exists, nothing may stop the command (issue 37 break 2).
            early = 0
            if how == EXEC and rng.random() < 0.04:
                early = rng.randint(int(ttl * 1.2), int(ttl * 2.5))
                dur = max(dur, early + rng.randint(200, 1000))
            # An exec whose command ends well inside its TTL and then
            # stops its rlock, before the release, past the TTL (issue 49
            # break 1): the outcome is still the command's (false-loss).
            elif how == EXEC and not self.a.sabotage and late_rng.random() < 0.04:
                early = -late_rng.randint(int(ttl * 1.2), int(ttl * 2.5))
                dur = late_rng.randint(10, ttl - FALSE_LOSS_MARGIN_MS - 200)
            self.attempt(f"w{wid}-{seq}", wid, name, how, kind, opts, route,
                         ttl, wait, dur, early)
            time.sleep(rng.random() * 0.03)

    def attempt(self, att, wid, name, how, kind, opts, route, ttl, wait, dur, early):
        a = self.a
        g, _ = self.routes[route]
        wopt = ["-n"] if wait is None else ["-w", f"{wait}ms"]
        lost_opt = ["--on-lost", "ignore"] if a.sabotage == "on-lost-ignore" else []
        env = self.env(att)
        if how == EXEC:
            argv = ([a.rlock] + g + ["exec", "-t", f"{ttl}ms"] + wopt +
                    ["--kill-after", f"{KILL_AFTER_MS}ms"] + lost_opt + opts +
                    [name, "--", a.stamp, "sec", self.log, str(dur)] +
                    ([str(early)] if early else []))
        else:
            env.update({"CHAOS_RL": a.rlock, "CHAOS_G": " ".join(g),
                        "CHAOS_A": " ".join(["-t", f"{ttl}ms"] + wopt + lost_opt + opts),
                        "CHAOS_NAME": name, "CHAOS_STAMP": a.stamp,
                        "CHAOS_LOG": self.log, "CHAOS_MS": str(dur)})
            argv = ["/bin/sh", "-c", HOLD_SCRIPT]
        if early:
            with self.lock:
                self.sup_faulted.add(att)
        # Generous: nothing legitimate takes this long.
        hang_ms = ((wait or 0) + 2 * TIMEOUT_MS + CONNECT_MS + dur + 3 * ttl +
                   KILL_AFTER_MS + abs(early) + 20000)
        rec = {"attempt": att, "worker": wid, "name": name, "how": how,
               "kind": kind, "opts": opts, "route": route, "ttl": ttl,
               "wait": wait, "dur": dur, "early": early}
        t0 = now()
        try:
            p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True)
        except OSError as e:
            rec.update(t_spawn=t0, t_end=now(), rc=None, err=repr(e))
            self.record(rec)
            return
        with self.lock:
            self.live[att] = dict(rec, pid=p.pid, t_spawn=t0)
        # A first record now: a run that never ends is still checked.
        self.record(dict(rec, t_spawn=t0, t_end=None, rc=None, pid=p.pid,
                         hung=False, out="", err="", open=True))
        hung = False
        try:
            out, err = p.communicate(timeout=hang_ms / 1000)
        except subprocess.TimeoutExpired:
            hung = True
            self.fault(kind="hung", attempt=att, pid=p.pid)
            kill_wait(p)
            try:
                out, err = p.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                out, err = b"", b"(pipes held open)"
        t1 = now()
        with self.lock:
            self.live.pop(att, None)
        rec.update(t_spawn=t0, t_end=t1, rc=p.returncode, pid=p.pid, hung=hung,
                   out=out.decode("utf-8", "replace")[-200:],
                   err=err.decode("utf-8", "replace")[-400:])
        self.record(rec)

    def record(self, rec):
        with self.lock:
            self.att_f.write(json.dumps(rec) + "\n")
            self.att_f.flush()

    # -- chaos --------------------------------------------------------------
    def chaos(self, deadline):
        rng = random.Random(self.seed * 31 + 7)
        kinds = sorted(self.fault_kinds)
        weights = [self.fault_kinds[k] for k in kinds]
        mean = 0.3 if self.a.mode == "single" else 0.4
        nxt = now() + int(rng.expovariate(1 / mean) * 1e9)
        n = 0
        # After the deadline no new fault, but the restores still come
        # when due, until the workers are done.
        while not self.stop_all.is_set() and n < 10000000:
            n += 1
            self.run_due()
            t = now()
            if t >= deadline:
                if self.workers_done.is_set():
                    break
                nxt = t + 10**9
            elif t >= nxt:
                kind = rng.choices(kinds, weights)[0]
                try:
                    self.inject(kind, rng)
                except Exception as e:
                    self.fault(kind="inject_error", what=kind, err=repr(e))
                nxt = now() + int(rng.expovariate(1 / mean) * 1e9)
            with self.lock:
                due = self.pending[0][0] if self.pending else nxt
            time.sleep(min(0.1, max(0.001, (min(nxt, due) - now()) / 1e9)))

    def inject(self, kind, rng):
        if kind in PROC_FAULTS:
            return self.proc_fault(kind, rng)
        if kind in SERVER_FAULTS:
            return self.server_fault(kind, rng)
        return self.proxy_fault(kind, rng)

    def proc_fault(self, kind, rng):
        what, role = kind.split("_")
        role = {"rlock": "rlock", "guard": "guard", "keeper": "keeper", "cmd": "cmd"}[role]
        procs = [p for p in scan(self.marker, self.a.rlock) if p["role"] == role and p["state"] != "T"]
        if role in SUPERVISORS:
            with self.lock:
                procs = [p for p in procs if p["attempt"] not in self.sup_faulted]
        if not procs:
            return
        p = rng.choice(procs)
        with self.lock:
            info = self.live.get(p["attempt"], {})
        ttl = info.get("ttl", 1500)
        if what == "kill":
            fd = signal_proc(p, signal.SIGKILL, self.marker)
            if fd is None:
                return
            os.close(fd)
            if role in SUPERVISORS:
                with self.lock:
                    self.sup_faulted.add(p["attempt"])
            self.fault(kind=kind, attempt=p["attempt"], pid=p["pid"], role=role)
            return
        if role in ("rlock", "keeper"):
            dur = rng.randint(int(ttl * 0.1), int(ttl * 2.5))
        elif role == "guard":
            dur = rng.randint(200, 3000)
        else:
            dur = rng.randint(100, 2000)
        fd = signal_proc(p, signal.SIGSTOP, self.marker)
        if fd is None:
            return
        if role in SUPERVISORS:
            with self.lock:
                self.sup_faulted.add(p["attempt"])
        fid = self.fault(kind=kind, attempt=p["attempt"], pid=p["pid"], role=role,
                         dur=dur)

        def cont():
            try:
                signal.pidfd_send_signal(fd, signal.SIGCONT)
            except OSError:
                pass
            os.close(fd)
            self.fault(kind="cont", ref=fid, attempt=p["attempt"], role=role)
        self.later(dur, cont)

    def server_fault(self, kind, rng):
        if now() < self.server_busy:
            return
        r = rng.choice(self.servers)
        if kind == "freeze_server":
            cap = 1500 if self.a.mode == "cluster" else 3000
            dur = rng.randint(100, cap)
            os.kill(r.popen.pid, signal.SIGSTOP)
            fid = self.fault(kind=kind, server=r.name, dur=dur)
            self.server_busy = now() + (dur + 200) * ms

            def thaw():
                os.kill(r.popen.pid, signal.SIGCONT)
                self.fault(kind="thaw", ref=fid, server=r.name)
            self.later(dur, thaw)
        else:
            fid = self.fault(kind=kind, server=r.name)
            r.kill()
            if r in self.servers and r.popen in self.children:
                self.children.remove(r.popen)
            ok = r.start()
            self.fault(kind="restarted", ref=fid, server=r.name, ok=ok)
            self.server_busy = now() + 500 * ms
            if not ok:
                raise RuntimeError(f"{r.name} did not restart")

    def proxy_fault(self, kind, rng):
        t = now()
        if kind == "partition":
            # The proxies (a majority of a quorum's) of a run in its
            # section with time left, past its TTL: its rlock loses the
            # lock while others, on other routes, can take it.
            with self.lock:
                cands = [i for i in self.live.values()
                         if self.routes[i["route"]][1] and i["dur"] > i["ttl"] + 300]
            inside = {p["attempt"] for p in scan(self.marker, self.a.rlock) if p["role"] == "cmd"}
            cands = [i for i in cands if i["attempt"] in inside]
            if not cands:
                return
            i = rng.choice(cands)
            ps = self.routes[i["route"]][1]
            ps = ps[:len(ps) // 2 + 1]
            if any(self.proxy_busy.get(p.name, 0) > t for p in ps):
                return
            dur = i["ttl"] + rng.randint(300, 1200)
            for p in ps:
                p.send("blackhole")
                self.proxy_busy[p.name] = t + (dur + 100) * ms
            fid = self.fault(kind=kind, attempt=i["attempt"],
                             proxies=[p.name for p in ps], dur=dur)

            def heal():
                for p in ps:
                    p.send("pass")
                self.fault(kind="heal", ref=fid)
            self.later(dur, heal)
            return
        p = rng.choice(self.proxies)
        if self.proxy_busy.get(p.name, 0) > t:
            return
        if kind == "proxy_reset":
            p.send("drop")
            self.fault(kind=kind, proxy=p.name)
            return
        if kind == "proxy_cut":
            p.send(rng.choice(["cut EVAL", "cut EVALSHA", "cut"]))
            self.fault(kind=kind, proxy=p.name)
            return
        if kind == "proxy_delay":
            d = rng.randint(20, 300)
            dur = rng.randint(500, 2000)
            p.send(f"delay {d}")
        else:
            dur = rng.randint(200, 2000)
            p.send("blackhole")
        self.proxy_busy[p.name] = t + (dur + 100) * ms
        fid = self.fault(kind=kind, proxy=p.name, dur=dur)

        def restore():
            p.send("pass")
            self.fault(kind="restore", ref=fid, proxy=p.name)
        self.later(dur, restore)

    # -- the end ------------------------------------------------------------
    def finish(self):
        """Restore everything, wait for every process of the run to end,
        then for every lock to be free; record leftovers and stuck locks."""
        self.run_due(force=True)
        for p in self.proxies:
            p.send("pass")
        for r in self.servers:
            try:
                os.kill(r.popen.pid, signal.SIGCONT)
            except OSError:
                pass
        maxttl = max(TTLS)
        settle = maxttl + LEASE_MS + KILL_AFTER_MS + 3000
        t_end = now()
        deadline = t_end + settle * ms
        left = []
        while now() < deadline:
            left = scan(self.marker, self.a.rlock)
            if not left:
                break
            time.sleep(0.05)
        res = {"leftovers": [], "stuck": [], "disagree": []}
        for p in left:
            res["leftovers"].append(p)
            fd = signal_proc(p, signal.SIGCONT, self.marker)
            if fd is not None:
                os.close(fd)
            fd = signal_proc(p, signal.SIGKILL, self.marker)
            if fd is not None:
                os.close(fd)
        # Every name free within TTL + a waiter's lease: no holder, no
        # waiter, and a plain lock taken at once.  A name that status
        # calls free while acquire is refused (a mark outliving its
        # holders, issue 37 break 5) is noted, and stuck only if that
        # lasts past the bound.
        g = self.routes[sorted(self.routes)[0]][0]
        deadline = now() + (maxttl + LEASE_MS + 2000) * ms
        res["disagree"] = []

        def rl(*words):
            return subprocess.run([self.a.rlock] + g + list(words),
                                  env=self.env("final"), capture_output=True,
                                  stdin=subprocess.DEVNULL, timeout=30)
        for name in sorted(self.names):
            n = 0
            while n < 1000:
                n += 1
                st = rl("status", name)
                txt = st.stdout.decode("utf-8", "replace")
                free = st.returncode == 1 and "waiting" not in txt
                probe = None
                if free:
                    probe = rl("acquire", "-n", "-t", "2s", name)
                    if probe.returncode == 0:
                        rl("release", "--token", probe.stdout.decode().strip(), name)
                        for d in res["disagree"]:
                            if d["name"] == name:
                                d["lasted_ms"] = (now() - d["t"]) // ms
                        break
                    if not any(d["name"] == name for d in res["disagree"]):
                        res["disagree"].append({
                            "name": name, "t": now(), "lasted_ms": None,
                            "status": txt.strip()[-200:],
                            "probe_rc": probe.returncode,
                            "probe_err": probe.stderr.decode()[-300:]})
                if now() >= deadline:
                    res["stuck"].append({
                        "name": name, "status_rc": st.returncode,
                        "status": txt[-300:],
                        "probe_rc": probe.returncode if probe else None,
                        "probe_err": probe.stderr.decode()[-300:] if probe else ""})
                    break
                time.sleep(0.1)
        with open(os.path.join(self.dir, "end.json"), "w") as f:
            json.dump(res, f)

    def stop(self):
        """Stop everything of this run (also when interrupted): the runs'
        processes (found by the marker, continued and killed), then the
        servers, proxies and the watch daemon, by PID."""
        self.stop_all.set()
        self.run_due(force=True)
        for _ in range(3):
            procs = scan(self.marker, self.a.rlock)
            if not procs:
                break
            for p in procs:
                for sig in (signal.SIGCONT, signal.SIGKILL):
                    fd = signal_proc(p, sig, self.marker)
                    if fd is not None:
                        os.close(fd)
            time.sleep(0.2)
        for c in reversed(self.children):
            kill_wait(c, signal.SIGTERM)


def run_scenario(a):
    run = Run(a)
    try:
        run.setup()
    except Exception as e:
        print(f"chaos: set-up failed: {e}", file=sys.stderr)
        run.stop()
        return None
    with open(os.path.join(a.dir, "meta.json"), "w") as f:
        json.dump({"seed": a.seed, "mode": a.mode, "seconds": a.seconds,
                   "rlock": a.rlock, "sabotage": a.sabotage,
                   "names": {n: sorted({k for _, k, _ in m}) for n, m in run.names.items()},
                   "workers": run.nworkers,
                   "routes": {r: [p.name for p in ps] for r, (_, ps) in run.routes.items()}}, f)
    try:
        deadline = now() + int(a.seconds * 1e9)
        threads = [threading.Thread(target=run.worker, args=(w, deadline), daemon=True)
                   for w in range(run.nworkers)]
        for t in threads:
            t.start()
        chaos = threading.Thread(target=run.chaos, args=(deadline,), daemon=True)
        chaos.start()
        for t in threads:
            t.join(max(1, (deadline - now()) / 1e9 + 150))
        run.workers_done.set()
        chaos.join(30)
        run.finish()
    finally:
        run.stop()
    return a.dir


# ---------------------------------------------------------------------------
# The check
# ---------------------------------------------------------------------------

COMPAT = {("s", "s"), ("l2", "l2")}


def analyse(d):
    meta = json.load(open(os.path.join(d, "meta.json")))
    atts = {}
    for line in open(os.path.join(d, "attempts.jsonl")):
        r = json.loads(line)
        if r.get("open") and r["attempt"] in atts:
            continue
        atts[r["attempt"]] = r
    t_last = max([r["t_end"] or 0 for r in atts.values()] + [0])
    unended = [a for a, r in atts.items() if r.get("open")]
    for a in unended:   # its worker never came back: the end of the run
        atts[a]["t_end"] = t_last
    faults = [json.loads(l) for l in open(os.path.join(d, "faults.jsonl"))]
    end = json.load(open(os.path.join(d, "end.json"))) if os.path.exists(
        os.path.join(d, "end.json")) else {"leftovers": [], "stuck": []}
    secs = {}
    for line in open(os.path.join(d, "sections.log"), errors="replace"):
        w = line.split()
        if len(w) < 3:
            continue
        k, t, att = w[0], int(w[1]), w[2]
        s = secs.setdefault(att, {"attempt": att})
        if k == "E":
            s["enter"] = t
            s["fence"] = int(w[4]) if len(w) > 4 and w[4].lstrip("-").isdigit() else None
        elif k == "S":
            s.setdefault("sig", t)
        elif k == "X":
            s["exit"] = t
            s["how"] = w[4] if len(w) > 4 else "?"
        elif k == "D":
            s["dead"] = t
        elif k == "P":
            s["early"] = t
            s["early_guard"] = w[5] if len(w) > 5 else "?"
        elif k == "L" and len(w) > 4 and w[4].isdigit():
            s["late"] = (t, t + int(w[4]) * ms)
    # Faults by attempt.
    by_id = {f["id"]: f for f in faults}
    cmd_stops = collections.defaultdict(list)   # attempt -> [(t0, t1)]
    sup_stops = collections.defaultdict(list)
    cmd_kill = {}
    keeper_fault = {}
    rlock_killed = {}
    for f in faults:
        if f["kind"] == "cont":
            s = by_id.get(f["ref"])
            if s is None:
                continue
            (cmd_stops if s["role"] == "cmd" else sup_stops)[s["attempt"]].append(
                (s["t"], f["t"]))
        elif f["kind"] == "kill_cmd":
            cmd_kill[f["attempt"]] = f["t"]
        elif f["kind"] in ("kill_keeper", "stop_keeper"):
            keeper_fault.setdefault(f["attempt"], f["t"])
        elif f["kind"] == "kill_rlock":
            rlock_killed[f["attempt"]] = f["t"]
    # What a server or proxy fault may cost a run: the spans during which a
    # server was frozen or restarting (every route reaches it) and each
    # proxy held, delayed, dropped or cut replies (the routes through it).
    # A cut or a reset acts on the next reply, so it counts 2 s.
    span_end = {f["ref"]: f["t"] for f in faults
                if f["kind"] in ("thaw", "restarted", "restore", "heal")}
    net_spans = []      # (t0, t1, proxies or None: every route)
    for f in faults:
        k = f["kind"]
        if k in ("freeze_server", "restart_server"):
            net_spans.append((f["t"], span_end.get(f["id"], 1 << 62), None))
        elif k in ("proxy_delay", "proxy_freeze"):
            net_spans.append((f["t"], span_end.get(f["id"], 1 << 62), {f["proxy"]}))
        elif k in ("proxy_reset", "proxy_cut"):
            net_spans.append((f["t"], f["t"] + 2000 * ms, {f["proxy"]}))
        elif k == "partition":
            net_spans.append((f["t"], span_end.get(f["id"], 1 << 62), set(f["proxies"])))
    route_proxies = {r: set(ps) for r, ps in meta.get("routes", {}).items()}

    def net_fault(r, t0, t1):
        ps = route_proxies.get(r["route"])
        return any(a < t1 and b > t0 and (who is None or ps is None or who & ps)
                   for a, b, who in net_spans)
    # A stop of rlock at its command's end (stamp's "L"): a supervisor's.
    for att, s in secs.items():
        if "late" in s:
            sup_stops[att].append(s["late"])
    # A stop never continued (should not happen): open to the end.
    for f in faults:
        if f["kind"].startswith("stop_") and not any(
                g["kind"] == "cont" and g.get("ref") == f["id"] for g in faults):
            (cmd_stops if f["role"] == "cmd" else sup_stops)[f["attempt"]].append(
                (f["t"], 1 << 62))

    res = collections.OrderedDict()
    viol = collections.defaultdict(list)
    excused = collections.Counter()
    excused_ex = []
    ung_viol = set()    # violations where a holder's rlock was stopped
                        # before its guard existed (issue 37 break 2)
    lags = []
    sections = []
    surely_held = collections.Counter()     # runs the false-loss check judged
    for att, s in secs.items():
        if "enter" not in s or att not in atts:
            continue
        r = atts[att]
        e = s["exit"] if "exit" in s else s.get("dead")
        if e is None:
            e = r["t_end"]
        if att in cmd_kill and cmd_kill[att] >= s["enter"]:
            e = min(e, cmd_kill[att])
        s["end"] = e
        raw = s.get("sig", e)
        for t0, t1 in cmd_stops.get(att, []):
            if t0 <= raw <= t1 + DELTA_MS * ms:
                raw = min(raw, t0)
        s["stop"] = raw
        rc = r.get("rc")
        if r["how"] == EXEC:
            lost = rc == 75 or "sig" in s
        else:
            # (rel=1: the release said "not the holder"; rel=137, a
            # release the checker killed, says nothing of the lock.)
            lost = (rc == -15 or "sig" in s or
                    "rel=1" in (r.get("out") or "").split())
        s["lost"] = lost
        # A loss invented (issue 49 break 1): told of a run whose command
        # ended by itself well inside its first TTL (the lock was taken
        # before the command began, and a hold lasts its TTL from then),
        # while nothing could have taken the lock from it: no server or
        # proxy fault on its route from its start to the command's end, its
        # rlock not stopped before the command began (a stop there eats
        # the validity), and a hold's keeper never faulted (its death is
        # told to the owner, as it should be, whatever the lock).  Whatever befalls rlock after the command's end
        # (a stop past the TTL, a release that cannot get through) does not
        # make the lock lost while the command ran: the outcome is the
        # command's, never 75, and a keeper's owner is not signalled.
        held = ("sig" not in s and "exit" in s and s.get("how") == "ok" and
                s["exit"] < s["enter"] + (r["ttl"] - FALSE_LOSS_MARGIN_MS) * ms and
                not any(t0 < s["enter"] for t0, _ in sup_stops.get(att, [])) and
                keeper_fault.get(att) is None and
                not net_fault(r, r["t_spawn"], s["exit"]))
        if held:
            surely_held[r["how"]] += 1
            if any(t1 > s["exit"] for _, t1 in sup_stops.get(att, [])):
                surely_held["then_stopped"] += 1
        if lost and held:
            viol["false-loss"].append(
                f"{att} ({r['how']} {r['kind']} -t {r['ttl']}ms): its command ended "
                f"{(s['exit'] - s['enter']) / ms:.0f} ms after it began, yet "
                f"rc={rc} {(r.get('out') or '').strip()[-60:]!r} {r.get('err', '')[-160:]!r}")
        s["keeper"] = keeper_fault.get(att)
        s["name"], s["kind"], s["how"] = r["name"], r["kind"], r["how"]
        sections.append(s)
        # A loss's window is bounded: the command is gone kill-after after
        # its signal (unless the checker itself kept it stopped).
        if "sig" in s and not cmd_stops.get(att):
            if e - s["sig"] > (KILL_AFTER_MS + 1000) * ms:
                viol["slow-stop"].append(f"{att}: ran {(e - s['sig']) / ms:.0f} ms after its signal")

    def excuse(A, B):
        if A["lost"] and B["enter"] >= A["stop"] - DELTA_MS * ms:
            return "after-loss"
        if A["keeper"] is not None and B["enter"] >= A["keeper"]:
            return "keeper-faulted"
        return None

    # A command that the checker holds stopped runs nothing: a section is
    # the pieces of [enter, end] outside those stops, and two sections
    # conflict where pieces of theirs meet.
    by_name = collections.defaultdict(list)
    for s in sections:
        by_name[s["name"]].append(s)
    nkind = collections.Counter()
    seen = set()
    for name, ss in sorted(by_name.items()):
        pieces = []
        for s in ss:
            nkind[s["kind"]] += 1
            t = s["enter"]
            for t0, t1 in sorted(cmd_stops.get(s["attempt"], [])):
                if t1 <= t or t0 >= s["end"]:
                    continue
                if t0 > t:
                    pieces.append((t, t0, s))
                t = max(t, t1)
            if t < s["end"]:
                pieces.append((t, s["end"], s))
        pieces.sort(key=lambda p: p[0])
        active = []
        for start, stop, B in pieces:
            active = [p for p in active if p[1] > start and p[2] is not B]
            holders = {}
            for _, _, A in active:
                first, second = (A, B) if A["enter"] <= B["enter"] else (B, A)
                why = excuse(first, second)
                if (A["kind"], B["kind"]) in COMPAT:
                    if B["kind"] == "l2" and why is None:
                        holders[A["attempt"]] = A
                    continue
                key = (first["attempt"], second["attempt"])
                if key in seen:
                    continue
                seen.add(key)
                if why:
                    excused[why] += 1
                    lags.append((min(first["end"], stop) - max(second["enter"], start)) / ms)
                    excused_ex.append(
                        f"{why}: {name}: {second['attempt']} entered "
                        f"{(first['end'] - second['enter']) / ms:.1f} ms before "
                        f"{first['attempt']} ended; its stop point "
                        f"{(first['stop'] - second['enter']) / ms:.1f} ms after that entry")
                    continue
                if first.get("early_guard") == "0":
                    ung_viol.add(key)
                viol["exclusion"].append(
                    ("[unguarded early stop] " if first.get("early_guard") == "0" else "") +
                    f"{name}: {second['attempt']} ({second['kind']}) entered "
                    f"{(second['enter'] - first['enter']) / ms:.1f} ms after "
                    f"{first['attempt']} ({first['kind']}), "
                    f"{(first['end'] - second['enter']) / ms:.1f} ms before it "
                    f"ended (lost={first['lost']}, stop-enter="
                    f"{(first['stop'] - second['enter']) / ms:.1f} ms)")
            if B["kind"] == "l2" and len(holders) + 1 > 2:
                key = ("cap", B["attempt"]) + tuple(sorted(holders))
                if key not in seen:
                    seen.add(key)
                    tag = any(A.get("early_guard") == "0" for A in holders.values())
                    if tag:
                        ung_viol.add(key)
                    viol["capacity"].append(
                        ("[unguarded early stop] " if tag else "") +
                        f"{name}: {B['attempt']} is holder {len(holders) + 1} of 2, with " +
                        ", ".join(f"{A['attempt']} (lost={A['lost']}, stop-enter="
                                  f"{(A['stop'] - B['enter']) / ms:.1f} ms)"
                                  for A in holders.values()))
            active.append((start, stop, B))
        # Fences: above every earlier holder it cannot share with.
        maxf = {}
        for B in sorted(ss, key=lambda s: s["enter"]):
            f = B.get("fence")
            m = max([maxf[k] for k in maxf if (k, B["kind"]) not in COMPAT], default=None)
            if f is None or (m is not None and f <= m[0]):
                viol["fence"].append(
                    f"{name}: {B['attempt']} fence {f} after {m[1] if m else '-'} "
                    f"fence {m[0] if m else '-'}")
            if f is not None and (B["kind"] not in maxf or f > maxf[B["kind"]][0]):
                maxf[B["kind"]] = (f, B["attempt"])
    # Waits.
    first_enter = {att: s["enter"] for att, s in secs.items() if "enter" in s}
    for att in unended:
        viol["hung"].append(f"{att}: its worker never saw it end")
    for att, r in atts.items():
        if r.get("rc") is None and not r.get("hung"):
            continue
        if r.get("hung"):
            viol["hung"].append(f"{att}: still running after its bound ({r['how']} "
                                f"{' '.join(r['opts'])} {r['name']})")
            continue
        tw = first_enter.get(att, r["t_end"])
        if att in rlock_killed and rlock_killed[att] <= tw:
            continue
        stopped = sum(min(t1, tw) - max(t0, r["t_spawn"])
                      for t0, t1 in sup_stops.get(att, []) if t0 < tw)
        bound = ((r["wait"] or 0) + 2 * TIMEOUT_MS + CONNECT_MS + WAIT_SLACK_MS) * ms + stopped
        if tw - r["t_spawn"] > bound:
            viol["late-waiter"].append(
                f"{att}: -w {r['wait']} ms took {(tw - r['t_spawn']) / ms:.0f} ms "
                f"(bound {bound / ms:.0f} ms) rc={r['rc']} {r['err'][-160:]!r}")
    res["meta"] = meta
    res["attempts"] = len(atts)
    res["sections"] = len(sections)
    res["by_kind"] = dict(nkind)
    res["exit_codes"] = dict(sorted(collections.Counter(str(r.get("rc")) for r in atts.values()).items()))
    fk = collections.Counter(f["kind"] for f in faults
                             if f["kind"] not in ("cont", "thaw", "heal", "restore", "restarted"))
    fk["early_stop"] = sum(1 for s in secs.values() if "early" in s)
    fk["late_stop"] = sum(1 for s in secs.values() if "late" in s)
    # How many of them stopped rlock before its guard existed (the
    # unguarded window of issue 37 break 2).
    fk["early_stop_unguarded"] = sum(1 for s in secs.values()
                                     if s.get("early_guard") == "0")
    res["faults"] = dict(sorted(fk.items()))
    res["losses"] = {"exec_75": sum(1 for r in atts.values() if r["how"] == EXEC and r.get("rc") == 75),
                     "hold_owner_signalled": sum(1 for r in atts.values()
                                                 if r["how"] == HOLD and r.get("rc") == -15),
                     "sections_signalled": sum(1 for s in sections if "sig" in s)}
    res["false_losses"] = len(viol.get("false-loss", []))
    res["surely_held"] = dict(surely_held)
    res["excused"] = dict(excused)
    res["excused_examples"] = excused_ex[:20]
    res["excused_max_overlap_ms"] = round(max(lags), 1) if lags else 0
    res["violations"] = {k: len(v) for k, v in sorted(viol.items())}
    res["violation_examples"] = {k: v[:5] for k, v in sorted(viol.items())}
    res["violations_after_unguarded_early_stop"] = len(ung_viol)
    res["stuck"] = end["stuck"]
    res["disagree"] = end.get("disagree", [])
    res["leftovers"] = end["leftovers"]
    return res


def summary(res):
    m = res["meta"]
    nv = sum(res["violations"].values())
    ok = nv == 0 and not res["stuck"] and not res["leftovers"]
    print(f"chaos: mode {m['mode']}, {m['seconds']} s, seed {m['seed']}, "
          f"rlock {m['rlock']}" + (f", sabotage {m['sabotage']}" if m["sabotage"] else ""))
    print(f"  attempts {res['attempts']}, sections {res['sections']} {res['by_kind']}")
    print(f"  exit codes {res['exit_codes']}")
    print(f"  faults {sum(res['faults'].values())}: " +
          " ".join(f"{k}={v}" for k, v in res["faults"].items()))
    print(f"  losses {res['losses']}")
    print(f"  false losses {res.get('false_losses', 0)} (told of runs whose command ended "
          f"inside its TTL with nothing in the way: {res.get('surely_held', {})})")
    print(f"  excused overlaps {res['excused'] or 0} (longest {res['excused_max_overlap_ms']} ms)")
    for e in res["excused_examples"][:5]:
        print(f"    {e}")
    print(f"  violations {nv} {res['violations'] or ''}" +
          (f" ({res['violations_after_unguarded_early_stop']} with a holder whose rlock "
           f"was stopped before its guard existed)"
           if res.get("violations_after_unguarded_early_stop") else ""))
    for k, ex in res["violation_examples"].items():
        for e in ex:
            print(f"    {k}: {e}")
    print(f"  stuck locks {len(res['stuck'])}")
    for s in res["stuck"]:
        print(f"    {s['name']}: status rc {s['status_rc']} probe rc {s['probe_rc']} "
              f"{s['probe_err'].strip()!r} {s['status'].strip()[-120:]!r}")
    for d in res["disagree"]:
        print(f"    (not stuck: for {d['lasted_ms']} ms after the end {d['name']}: "
              f"status {d['status']!r}, yet acquire -n exited {d['probe_rc']}: "
              f"{d['probe_err'].strip()!r})")
    print(f"  leftovers {len(res['leftovers'])}")
    for p in res["leftovers"][:10]:
        print(f"    pid {p['pid']} {p['role']} {p['attempt']} {p['state']} {p['argv'][:100]}")
    print(f"  result {'PASS' if ok else 'FAIL'}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--mode", choices=["single", "quorum", "cluster"], default="single")
    ap.add_argument("--rlock")
    ap.add_argument("--stamp")
    ap.add_argument("--dir")
    ap.add_argument("--sabotage", choices=["on-lost-ignore"])
    ap.add_argument("--check-only")
    a = ap.parse_args()
    if a.check_only:
        res = analyse(a.check_only)
        return 0 if summary(res) else 1
    if not (a.rlock and a.stamp and a.dir):
        ap.error("--rlock, --stamp and --dir are needed")
    if a.seed is None:
        a.seed = random.SystemRandom().randint(1, 2**31)
    print(f"chaos: seed {a.seed} mode {a.mode}", flush=True)
    sys.setswitchinterval(0.001)

    def on_term(sig, frame):
        raise SystemExit(3)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    if run_scenario(a) is None:
        return 2
    res = analyse(a.dir)
    with open(os.path.join(a.dir, "result.json"), "w") as f:
        json.dump(res, f, indent=1)
    return 0 if summary(res) else 1


if __name__ == "__main__":
    sys.exit(main())
