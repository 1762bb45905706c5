#!/usr/bin/python3
"""hostileserver.py: a server that speaks RESP the way a hostile or broken
Redis might, for tests. Not a Redis: it reads each command a client sends
and answers it as its mode says, on a Unix socket.

    hostileserver.py --socket PATH --mode MODE [--max-seconds N]

prints "ready" (one line, flushed) once PATH accepts connections, and runs
until killed (or --max-seconds at most). Each connection has a thread.

Modes (what every command is answered with, but those named):
  bigbulk      "$9000000000000000000" and then bytes for as long as the
               client reads them
  bigarray     "*2147483647" and then ":1" for as long as the client reads
  manyarray    "*4000000" (under rlock's bound) and then ":1" for ever
  slowbulk     "$60000000" and then its bytes, 64 KiB each 5 ms (the reply
               would take about 5 s)
  longline     "+" and then "a" for as long as the client reads
  deep         arrays nested 100 deep
  badint       ":99999999999999999999"
  ok           "+OK" to everything
  scanloop     SCAN: always cursor "1" and the same key rlock:{job};
               CLUSTER: an error (no cluster); anything else "+OK"
  scanmany     SCAN: always cursor "1" and a new key each page
  nonlocal     a script: the error Redis 7 gives a script that meets a key
               of a slot being migrated ("... non local key ...")
  nonlocal3    the same for a connection's first 3 scripts, then
               {1, 7, 60000} (granted)
  busymax      a script: {0, 9223372036854775807} (busy, an extreme PTTL);
               release: 1
  extendmax    a script: {1, 9223372036854775807, 9223372036854775807}
               (granted, extreme fence and TTL)
  negative     a script: {1, -9223372036854775808, -9223372036854775808}
  int          ":1" to everything
  almost       shapes that are nearly right: PING "+PONG"; a script
               {1, {{1}}} (the log script's, with an entry that is no
               entry); XREAD {{KEY, {1}}}; INFO an array, not a string;
               CONFIG GET {1, 1}; SCAN an empty last page; else "+OK"
  xread        a script {1, {{}}} (an empty history, as the log script
               gives it); XREAD as in almost; else as in almost
  configint    PING "+PONG"; INFO a master with appendonly on; CONFIG GET
               {NAME, 1} (an integer where the value goes); SCAN an empty
               last page; a script {}; else "+OK"
  probe        as configint, but CONFIG GET {} (unknown); EVAL of "return 1"
               ":1", and any other script {1} (not the probe's shape)
  logextreme   a script: a history of two events of one run, their entry
               ids -9223372036854775808-0 and 9223372036854775807-0, with
               held and waited times as extreme
  evilerr      an error to everything, its text with an OSC title, a screen
               clear, a bell, a line break and a byte that is not UTF-8
  xreadnil     a script {1, {{}}} (an empty history); XREAD nil at once,
               not after its BLOCK, with a line "XREAD" on stdout each time
  evalok       as probe, but EVAL of "return 1" answered "+OK"

Python 3 standard library only.
"""

import argparse
import os
import signal
import socket
import sys
import threading
import time


def read_command(f):
    """One command (an array of bulk strings) as a list of bytes, or None."""
    line = f.readline()
    if not line:
        return None
    if not line.startswith(b"*"):
        return line.split()
    n = int(line[1:])
    args = []
    for _ in range(n):
        hdr = f.readline()
        if not hdr.startswith(b"$"):
            return None
        size = int(hdr[1:])
        data = f.read(size + 2)
        args.append(data[:size])
    return args


def endless(conn, head, chunk, pause=0.0):
    conn.sendall(head)
    while True:
        conn.sendall(chunk)
        if pause:
            time.sleep(pause)


def bulk(b):
    return b"$%d\r\n%s\r\n" % (len(b), b)


def answer(conn, mode, args, state):
    word = args[0].upper() if args else b""
    is_script = word in (b"EVALSHA", b"EVAL")
    if mode == "bigbulk":
        endless(conn, b"$9000000000000000000\r\n", b"x" * 65536)
    elif mode == "bigarray":
        endless(conn, b"*2147483647\r\n", b":1\r\n" * 16384)
    elif mode == "manyarray":
        endless(conn, b"*4000000\r\n", b":1\r\n" * 16384)
    elif mode == "slowbulk":
        endless(conn, b"$60000000\r\n", b"x" * 65536, 0.005)
    elif mode == "longline":
        endless(conn, b"+", b"a" * 65536)
    elif mode == "deep":
        conn.sendall(b"*1\r\n" * 100 + b":1\r\n")
    elif mode == "badint":
        conn.sendall(b":99999999999999999999\r\n")
    elif mode in ("scanloop", "scanmany") and word == b"SCAN":
        state["page"] = state.get("page", 0) + 1
        key = b"rlock:{job}" if mode == "scanloop" else \
            b"rlock:{job%d}" % state["page"]
        conn.sendall(b"*2\r\n" + bulk(b"1") + b"*1\r\n" + bulk(key))
    elif mode in ("scanloop", "scanmany") and word == b"CLUSTER":
        conn.sendall(b"-ERR This instance has cluster support disabled\r\n")
    elif mode in ("nonlocal", "nonlocal3") and is_script:
        state["scripts"] = state.get("scripts", 0) + 1
        if mode == "nonlocal3" and state["scripts"] > 3:
            conn.sendall(b"*3\r\n:1\r\n:7\r\n:60000\r\n")
        else:
            conn.sendall(b"-ERR Script attempted to access a non local key "
                         b"in a cluster node script: 0123abcd, on "
                         b"@user_script:1.\r\n")
    elif mode == "busymax" and is_script:
        conn.sendall(b"*2\r\n:0\r\n:9223372036854775807\r\n")
    elif mode == "extendmax" and is_script:
        conn.sendall(b"*3\r\n:1\r\n:9223372036854775807\r\n"
                     b":9223372036854775807\r\n")
    elif mode == "negative" and is_script:
        conn.sendall(b"*3\r\n:1\r\n:-9223372036854775808\r\n"
                     b":-9223372036854775808\r\n")
    elif mode == "evilerr":
        conn.sendall(b"-ERR \x1b]0;pwned\x07\x1b[2J\xff\x85 (forged\nline)"
                     b"\r\n")
    elif mode == "int":
        conn.sendall(b":1\r\n")
    elif mode in ("probe", "evalok") and word == b"CONFIG":
        conn.sendall(b"*0\r\n")
    elif mode in ("probe", "evalok") and is_script and args[1:2] == [b"return 1"]:
        conn.sendall(b":1\r\n" if mode == "probe" else b"+OK\r\n")
    elif mode in ("probe", "evalok") and is_script:
        conn.sendall(b"*1\r\n:1\r\n")
    elif mode in ("almost", "configint", "xread", "xreadnil", "probe",
                  "evalok") and word == b"PING":
        conn.sendall(b"+PONG\r\n")
    elif mode in ("almost", "configint", "xread", "xreadnil") and \
            word == b"SCAN":
        conn.sendall(b"*2\r\n" + bulk(b"0") + b"*0\r\n")
    elif mode == "logextreme" and is_script:
        def entry(i):
            f = [b"e", b"released", b"h", b"web1", b"p", b"1", b"u", b"u",
                 b"r", b"run", b"x", b"exit:0", b"d", i, b"w", i]
            return (b"*2\r\n" + bulk(i + b"-0") + b"*%d\r\n" % len(f) +
                    b"".join(bulk(x) for x in f))
        conn.sendall(b"*2\r\n:1\r\n*1\r\n*2\r\n" +
                     entry(b"-9223372036854775808") +
                     entry(b"9223372036854775807"))
    elif mode == "xreadnil" and word == b"XREAD":
        print("XREAD", flush=True)
        conn.sendall(b"*-1\r\n")
    elif mode in ("xread", "xreadnil") and is_script:
        conn.sendall(b"*2\r\n:1\r\n*1\r\n*0\r\n")
    elif mode == "almost" and is_script:
        conn.sendall(b"*2\r\n:1\r\n*1\r\n*1\r\n:1\r\n")
    elif mode in ("almost", "xread") and word == b"XREAD":
        key = args[args.index(b"STREAMS") + 1] if b"STREAMS" in args \
            else b"k"
        conn.sendall(b"*1\r\n*2\r\n" + bulk(key) + b"*1\r\n:1\r\n")
    elif mode == "almost" and word == b"INFO":
        conn.sendall(b"*1\r\n:1\r\n")
    elif mode == "almost" and word == b"CONFIG":
        conn.sendall(b"*2\r\n:1\r\n:1\r\n")
    elif mode in ("configint", "probe", "evalok") and word == b"INFO":
        conn.sendall(bulk(b"# Server\r\nredis_version:7.2.0\r\n"
                          b"run_id:0123456789abcdef0123456789abcdef01234567\r\n"
                          b"role:master\r\nconnected_slaves:0\r\n"
                          b"maxmemory:0\r\nmaxmemory_policy:noeviction\r\n"
                          b"aof_enabled:1\r\n"))
    elif mode == "configint" and word == b"CONFIG":
        name = args[2] if len(args) > 2 else b"x"
        conn.sendall(b"*2\r\n" + bulk(name) + b":1\r\n")
    elif mode == "configint" and is_script:
        conn.sendall(b"*0\r\n")
    elif mode == "busymax" and word == b"BLPOP":
        conn.sendall(b"*-1\r\n")
    else:
        conn.sendall(b"+OK\r\n")


def serve(conn, mode):
    state = {}
    f = conn.makefile("rb")
    try:
        while True:
            args = read_command(f)
            if args is None:
                break
            answer(conn, mode, args, state)
    except (OSError, ValueError):
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--mode", required=True)
    ap.add_argument("--max-seconds", type=float, default=300)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGALRM, lambda *_: os._exit(0))
    signal.setitimer(signal.ITIMER_REAL, a.max_seconds)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(a.socket)
    s.listen(16)
    print("ready", flush=True)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve, args=(conn, a.mode),
                         daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
