#!/usr/bin/env python3
"""faultproxy.py: a loopback TCP proxy that injects network faults, for tests.

Proxy mode (runs until killed, or --max-seconds at most):

    faultproxy.py --listen 127.0.0.1:0 --target 127.0.0.1:PORT --control PATH

prints the port it listens on (one line, flushed) once both the proxy and its
control socket (a Unix socket at PATH) accept connections.

Control mode (one request, one reply, then exit):

    faultproxy.py --control PATH --send 'WORDS'

sends WORDS to a running proxy, prints its reply and exits 0 when the reply
starts with "ok" (1 otherwise). The reply is sent only once the new mode is in
force, so a test that has seen "ok" knows the fault is in place. Every "ok"
reply carries "at=MS", the proxy's wall-clock time (ms since the epoch) at
which the change took effect.

Control words:
  pass          forward both ways (the initial mode)
  delay MS      hold every chunk MS milliseconds before forwarding it, both
                directions (order is kept; chunks are delayed, not throttled)
  blackhole     stop forwarding in both directions, silently: existing
                connections stay open but nothing is read from or written to
                them; new connections are accepted but not connected on.
                What was sent meanwhile waits in the socket buffers and flows
                when the mode goes back to pass (as after a healed partition).
  drop          reset (RST) every current client connection and close its
                server side, then go back to pass
  cut [TEXT]    forward only the first half of the next server->client chunk,
                then close that connection, then pass. With TEXT, only a
                connection whose client has sent a chunk containing TEXT
                (case-insensitive) since its last reply is cut (e.g. "cut EVAL"
                cuts the reply to a script call). Arming cut leaves the
                current forwarding mode (pass or delay) as it was.
  hold TEXT     hold the next client->server chunk containing TEXT
                (case-insensitive) on its connection, unforwarded, with all
                that connection's later traffic, until "pass"; other
                connections, and those made later, are forwarded as usual
                (a request late while its client has gone on: e.g. "hold
                EVAL" holds one script call). Arming hold leaves the current
                forwarding mode as it was.
  stats         reply with counters; changes nothing

Loopback only: both --listen and --target must be loopback addresses.
Python 3 standard library only.
"""

import argparse
import asyncio
import ipaddress
import os
import signal
import socket
import struct
import sys
import time


def now_ms():
    return int(time.time() * 1000)


def parse_hostport(text, what):
    host, sep, port = text.rpartition(":")
    if not sep:
        raise SystemExit(f"faultproxy: {what} must be HOST:PORT, not {text!r}")
    host = host.strip("[]")
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        raise SystemExit(f"faultproxy: {what} host must be an IP address: {host!r}")
    if not addr.is_loopback:
        raise SystemExit(f"faultproxy: {what} must be a loopback address: {host}")
    try:
        port = int(port)
    except ValueError:
        raise SystemExit(f"faultproxy: bad {what} port: {port!r}")
    if not 0 <= port <= 65535:
        raise SystemExit(f"faultproxy: bad {what} port: {port}")
    return host, port


class Conn:
    """One proxied client connection and its server side."""

    def __init__(self, proxy, creader, cwriter):
        self.proxy = proxy
        self.creader = creader
        self.cwriter = cwriter
        self.sreader = None
        self.swriter = None
        self.tasks = []
        self.closed = False
        self.want_cut = False  # client sent the cut TEXT since its last reply
        self.go = asyncio.Event()  # cleared while held (hold TEXT)
        self.go.set()

    def close(self, reset=False):
        if self.closed:
            return
        self.closed = True
        self.proxy.conns.discard(self)
        if reset:
            sock = self.cwriter.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    struct.pack("ii", 1, 0))
                except OSError:
                    pass
            self.cwriter.transport.abort()
        else:
            self.cwriter.close()
        if self.swriter is not None:
            self.swriter.transport.abort()
        me = asyncio.current_task()
        for t in self.tasks:
            if t is not me:
                t.cancel()

    async def run(self):
        p = self.proxy
        try:
            await p.open.wait()  # not while blackholed
            if self.closed:
                return
            try:
                self.sreader, self.swriter = await asyncio.wait_for(
                    asyncio.open_connection(p.target_host, p.target_port), 5)
            except (OSError, asyncio.TimeoutError):
                self.close()
                return
            if self.closed:
                self.swriter.transport.abort()
                return
            up_q, down_q = asyncio.Queue(), asyncio.Queue()
            self.tasks = [
                asyncio.ensure_future(self.read_side(self.creader, up_q, True)),
                asyncio.ensure_future(self.write_side(up_q, self.swriter, True)),
                asyncio.ensure_future(self.read_side(self.sreader, down_q, False)),
                asyncio.ensure_future(self.write_side(down_q, self.cwriter, False)),
            ]
            await asyncio.gather(*self.tasks, return_exceptions=True)
        finally:
            self.close()

    async def read_side(self, reader, queue, upward):
        p = self.proxy
        try:
            while True:
                await p.open.wait()
                data = await reader.read(65536)
                if not data:
                    break
                due = time.monotonic() + p.delay_ms / 1000.0
                await queue.put((due, data))
        except (OSError, asyncio.IncompleteReadError):
            pass
        await queue.put((0, None))  # end of stream

    async def write_side(self, queue, writer, upward):
        p = self.proxy
        try:
            while True:
                due, data = await queue.get()
                if data is None:
                    break
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                await p.open.wait()
                if self.closed:
                    return
                if upward:
                    if p.hold_text is not None and p.hold_text in data.upper():
                        p.hold_text = None
                        p.stats["holds"] += 1
                        self.go.clear()
                    await self.go.wait()
                    if self.closed:
                        return
                    if p.cut_text is not None and p.cut_text in data.upper():
                        self.want_cut = True
                    writer.write(data)
                    await writer.drain()
                    p.stats["last_c2s_ms"] = now_ms()
                    continue
                if p.cut_armed and (p.cut_text is None or self.want_cut):
                    p.cut_armed = False
                    p.cut_text = None
                    half = len(data) // 2
                    if half:
                        writer.write(data[:half])
                        await writer.drain()
                    p.stats["cuts"] += 1
                    p.stats["cut_bytes"] = f"{half}/{len(data)}"
                    self.close()
                    return
                self.want_cut = False
                writer.write(data)
                await writer.drain()
                p.stats["last_s2c_ms"] = now_ms()
        except (OSError, ConnectionError):
            pass
        finally:
            # One side ended: end the whole connection (Redis clients do not
            # half-close), after what was queued has been written.
            self.close()


class Proxy:
    def __init__(self, target_host, target_port):
        self.target_host = target_host
        self.target_port = target_port
        self.conns = set()
        self.open = asyncio.Event()  # set unless blackholed
        self.open.set()
        self.mode = "pass"
        self.delay_ms = 0
        self.cut_armed = False
        self.cut_text = None
        self.hold_text = None
        self.stats = {"accepted": 0, "dropped": 0, "cuts": 0, "holds": 0,
                      "last_c2s_ms": 0, "last_s2c_ms": 0, "cut_bytes": "-"}

    async def on_client(self, reader, writer):
        self.stats["accepted"] += 1
        c = Conn(self, reader, writer)
        self.conns.add(c)
        await c.run()

    def set_pass(self):
        self.mode = "pass"
        self.delay_ms = 0
        self.open.set()
        for c in self.conns:
            c.go.set()

    def command(self, line):
        words = line.split()
        if not words:
            return "error empty command"
        w = words[0].lower()
        extra = ""
        if w == "pass" and len(words) == 1:
            self.set_pass()
        elif w == "delay" and len(words) == 2:
            try:
                ms = int(words[1])
            except ValueError:
                return f"error bad delay {words[1]!r}"
            if ms < 0:
                return "error negative delay"
            self.mode = f"delay {ms}"
            self.delay_ms = ms
            self.open.set()
        elif w == "blackhole" and len(words) == 1:
            self.mode = "blackhole"
            self.open.clear()
        elif w == "drop" and len(words) == 1:
            victims = list(self.conns)
            for c in victims:
                c.close(reset=True)
            self.stats["dropped"] += len(victims)
            self.set_pass()
            extra = f" closed={len(victims)}"
        elif w == "cut" and len(words) <= 2:
            self.cut_armed = True
            self.cut_text = words[1].upper().encode() if len(words) == 2 else None
            if self.mode == "blackhole":
                self.set_pass()
        elif w == "hold" and len(words) == 2:
            self.hold_text = words[1].upper().encode()
        elif w == "stats" and len(words) == 1:
            pass
        else:
            return f"error unknown command {line.strip()!r}"
        s = self.stats
        return (f"ok mode={self.mode.replace(' ', ':')} at={now_ms()}{extra}"
                f" conns={len(self.conns)} accepted={s['accepted']}"
                f" dropped={s['dropped']} cuts={s['cuts']} holds={s['holds']}"
                f" cut_armed={int(self.cut_armed)} cut_bytes={s['cut_bytes']}"
                f" last_c2s_ms={s['last_c2s_ms']} last_s2c_ms={s['last_s2c_ms']}")

    async def on_control(self, reader, writer):
        try:
            line = await asyncio.wait_for(reader.readline(), 5)
            reply = self.command(line.decode("utf-8", "replace"))
            writer.write(reply.encode() + b"\n")
            await writer.drain()
        except (OSError, asyncio.TimeoutError):
            pass
        finally:
            writer.close()


async def serve(args):
    lhost, lport = parse_hostport(args.listen, "--listen")
    thost, tport = parse_hostport(args.target, "--target")
    proxy = Proxy(thost, tport)
    try:
        os.unlink(args.control)
    except FileNotFoundError:
        pass
    ctl = await asyncio.start_unix_server(proxy.on_control, path=args.control)
    srv = await asyncio.start_server(proxy.on_client, lhost, lport)
    port = srv.sockets[0].getsockname()[1]
    sys.stdout.write(f"{port}\n")
    sys.stdout.flush()

    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, done.set)
    loop.call_later(args.max_seconds, done.set)
    await done.wait()
    srv.close()
    ctl.close()
    for c in list(proxy.conns):
        c.close()
    try:
        os.unlink(args.control)
    except OSError:
        pass


def send(path, words):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect(path)
        s.sendall(words.encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
    except OSError as e:
        print(f"faultproxy: cannot reach the proxy at {path}: {e}", file=sys.stderr)
        return 1
    finally:
        s.close()
    reply = buf.decode().strip()
    print(reply)
    return 0 if reply.startswith("ok") else 1


def main():
    ap = argparse.ArgumentParser(description="loopback TCP fault-injection proxy")
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--target")
    ap.add_argument("--control", required=True, help="control Unix socket path")
    ap.add_argument("--send", help="send this control command to a running proxy")
    ap.add_argument("--max-seconds", type=float, default=120)
    args = ap.parse_args()
    if args.send is not None:
        sys.exit(send(args.control, args.send))
    if not args.target:
        ap.error("--target is required")
    if args.max_seconds <= 0:
        ap.error("--max-seconds must be positive")
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
