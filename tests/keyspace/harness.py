"""What the keyspace suite shares: starting nsqrd with the keyspace on, raw sockets, and an NSQ
consumer for the change feed.

The server is the binary named by NSQRD_BIN (default target/debug/nsqrd), started on ephemeral
loopback ports with a temporary data directory; every test class starts its own and stops it
(SIGTERM, or SIGKILL for crash tests). Only the standard library and redis-py are used.
"""

import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("NSQRD_BIN", os.path.join(ROOT, "target", "debug", "nsqrd"))
TIMEOUT = 20.0
# redis-py retries failed connections (an AUTH refusal is one) with a backoff of seconds.
NO_RETRY = Retry(NoBackoff(), 0)


class Server:
    """nsqrd with `--kv-address`; `restart()` reuses its data directory."""

    def __init__(self, *flags, data=None):
        self.flags = list(flags)
        self.data = data or tempfile.mkdtemp(prefix="nsqr-keyspace-")
        self.log = []
        self._start()

    def _start(self):
        args = [
            BINARY,
            "--tcp-address=127.0.0.1:0",
            "--http-address=127.0.0.1:0",
            "--https-address=",
            "--broadcast-address=127.0.0.1",
            "--kv-address=127.0.0.1:0",
            "--data-path=" + self.data,
        ] + self.flags
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        addrs = {}

        def read():
            for line in self.proc.stderr:
                self.log.append(line)
                for kind in ("KV", "TCP"):
                    m = re.search(kind + r": listening on (\S+)", line)
                    if m:
                        addrs[kind] = m.group(1)

        threading.Thread(target=read, daemon=True).start()
        deadline = time.time() + TIMEOUT
        while len(addrs) < 2:
            if time.time() > deadline or self.proc.poll() is not None:
                self.proc.kill()
                raise RuntimeError("nsqrd did not start:\n" + "".join(self.log))
            time.sleep(0.02)
        host, port = addrs["KV"].rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.tcp = addrs["TCP"]

    def client(self, protocol=2, **kw):
        return redis.Redis(host=self.host, port=self.port, protocol=protocol, socket_timeout=TIMEOUT, **kw)

    def raw(self):
        return socket.create_connection((self.host, self.port), timeout=TIMEOUT)

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def alive(self):
        return self.proc.poll() is None

    def terminate(self):
        """SIGTERM and wait: the keyspace writes its snapshot."""
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=TIMEOUT)
        if code != 0:
            raise RuntimeError(f"nsqrd exited with {code}:\n" + "".join(self.log))

    def kill(self):
        """SIGKILL: a crash."""
        self.proc.kill()
        self.proc.wait(timeout=TIMEOUT)

    def restart(self):
        self.proc.stderr.close()
        self._start()

    def stop(self, remove=True):
        if self.alive():
            self.proc.kill()
            self.proc.wait(timeout=TIMEOUT)
        self.proc.stderr.close()
        if remove:
            shutil.rmtree(self.data, ignore_errors=True)


class SharedServer:
    """A test class's one server and redis-py client (`PROTOCOL`, decoded replies), flushed
    before each test; `FLAGS` are nsqrd's extra flags."""

    PROTOCOL = 2
    FLAGS = ()

    @classmethod
    def setUpClass(cls):
        cls.srv = Server(*cls.FLAGS)
        cls.r = cls.srv.client(protocol=cls.PROTOCOL, decode_responses=True)

    @classmethod
    def tearDownClass(cls):
        cls.r.close()
        cls.srv.stop()

    def setUp(self):
        self.r.flushdb()


class AcrossRestarts:
    """A type's keys kept across a graceful restart and, in strict mode, a SIGKILL. A subclass
    (with unittest.TestCase) writes them in `fill(r)`, which returns what it read back, and
    checks the restarted server in `check(r, before)`. DECODE is the clients' decode_responses."""

    DECODE = True

    def run_with(self, flags, stop):
        srv = Server(*flags)
        try:
            before = self.fill(srv.client(decode_responses=self.DECODE))
            stop(srv)
            srv.restart()
            self.check(srv.client(decode_responses=self.DECODE), before)
        finally:
            srv.stop()

    def test_graceful_restart(self):
        self.run_with([], lambda srv: srv.terminate())

    def test_strict_mode_survives_sigkill(self):
        self.run_with(["--durability=strict"], lambda srv: srv.kill())


def read_until_closed(sock, limit=1 << 20):
    """Everything the server sends until it closes (or resets) the connection."""
    out = b""
    try:
        while len(out) < limit:
            d = sock.recv(65536)
            if not d:
                break
            out += d
    except (ConnectionResetError, BrokenPipeError):
        pass
    return out


def wait_for(pred, timeout=TIMEOUT, step=0.005):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


class NsqConsumer:
    """A raw NSQ V2 consumer: SUB, RDY, read message bodies, FIN them."""

    def __init__(self, addr, topic, channel):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=TIMEOUT)
        self.s.sendall(b"  V2")
        self.s.sendall(f"SUB {topic} {channel}\n".encode())
        assert self.frame() == (0, b"OK")
        self.s.sendall(b"RDY 1000\n")

    def read_exact(self, n):
        buf = b""
        while len(buf) < n:
            d = self.s.recv(n - len(buf))
            if not d:
                raise EOFError("nsqd closed the connection")
            buf += d
        return buf

    def frame(self):
        size, kind = struct.unpack(">ii", self.read_exact(8))
        return kind, self.read_exact(size - 4)

    def next(self):
        while True:
            kind, body = self.frame()
            if kind == 0 and body == b"_heartbeat_":
                self.s.sendall(b"NOP\n")
                continue
            assert kind == 2, (kind, body)
            self.s.sendall(b"FIN " + body[10:26] + b"\n")
            return body[26:]

    def close(self):
        self.s.close()
