#!/usr/bin/env python3
"""Checks nsqrd's GET /metrics with a real Prometheus text parser.

Starts nsqrd on ephemeral loopback ports, runs a known workload (HTTP publishes, a deferred
publish, a raw TCP consumer that finishes, requeues and holds messages), then parses /metrics
with prometheus_client's parser and asserts the series and their values.

    tests/metrics/check_metrics.py [path/to/nsqrd]     # default: target/debug/nsqrd

Needs prometheus_client (`make metrics` installs it in a venv under target/).
Prints 'N passed, N failed' and exits non-zero on any failure.
"""

import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start(binary, data):
    args = [
        binary,
        "--tcp-address=127.0.0.1:0",
        "--http-address=127.0.0.1:0",
        "--https-address=",
        "--broadcast-address=127.0.0.1",
        "--data-path=" + data,
        "--e2e-processing-latency-percentile=0.99,0.5",
    ]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    addrs = {}
    deadline = time.time() + 20
    log = []

    def read():
        for line in proc.stderr:
            log.append(line)
            for kind in ("TCP", "HTTP"):
                m = re.search(kind + r": listening on (\S+)", line)
                if m:
                    addrs[kind] = m.group(1)

    threading.Thread(target=read, daemon=True).start()
    while len(addrs) < 2:
        if time.time() > deadline or proc.poll() is not None:
            proc.kill()
            sys.exit("nsqrd did not start:\n" + "".join(log))
        time.sleep(0.02)
    return proc, addrs["TCP"], addrs["HTTP"]


def http(base, method, path, body=b""):
    req = urllib.request.Request(base + path, data=body if method != "GET" else None, method=method)
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, dict(r.headers), r.read()


class Consumer:
    """A raw V2 connection: SUB, RDY, read messages, FIN / REQ."""

    def __init__(self, addr, topic, channel):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=10)
        self.s.sendall(b"  V2")
        self.s.sendall(f"SUB {topic} {channel}\n".encode())
        assert self.frame() == (0, b"OK")

    def read_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def frame(self):
        size, kind = struct.unpack(">ii", self.read_exact(8))
        return kind, self.read_exact(size - 4)

    def message(self):
        while True:
            kind, data = self.frame()
            if kind == 0 and data == b"_heartbeat_":
                self.s.sendall(b"NOP\n")
                continue
            assert kind == 2, (kind, data)
            return data[10:26].decode(), data[26:]

    def send(self, line):
        self.s.sendall(line.encode() + b"\n")


def wait(cond, what, timeout=5):
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.02)


def scrape(base):
    status, headers, body = http(base, "GET", "/metrics")
    assert status == 200, status
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    samples = {}
    for f in families.values():
        for s in f.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return headers, families, samples


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "debug", "nsqrd")
    data = tempfile.mkdtemp(prefix="nsqr-metrics-")
    proc, tcp, http_addr = start(binary, data)
    base = "http://" + http_addr
    passed, failed = 0, 0

    def check(name, got, want):
        nonlocal passed, failed
        if got == want:
            passed += 1
        else:
            failed += 1
            print(f"FAIL {name}: got {got!r}, want {want!r}")

    try:
        http(base, "POST", "/topic/create?topic=m")
        http(base, "POST", "/channel/create?topic=m&channel=c2")
        c = Consumer(tcp, "m", "c1")
        for i in range(5):
            http(base, "POST", "/pub?topic=m", b"body%d" % i)
        http(base, "POST", "/pub?topic=m&defer=600000", b"later")
        c.send("RDY 5")
        ids = [c.message()[0] for _ in range(5)]
        for i in ids[:3]:
            c.send("FIN " + i)
        c.send(f"REQ {ids[3]} 0")
        again, _ = c.message()
        check("requeued message comes back", again, ids[3])

        def ch(name, channel):
            return (name, (("channel", channel), ("topic", "m")))

        wait(lambda: scrape(base)[2].get(ch("nsq_channel_e2e_processing_latency_samples", "c1")) == 3,
             "three FINs in the e2e window")
        headers, families, s = scrape(base)
        check("content type", headers.get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
        topic = (("topic", "m"),)
        check("topic messages", s.get(("nsq_topic_messages_total", topic)), 6.0)
        check("topic bytes", s.get(("nsq_topic_message_bytes_total", topic)), 5 * 5.0 + 5.0)
        check("topic depth", s.get(("nsq_topic_depth", topic)), 0.0)
        check("topic backend depth", s.get(("nsq_topic_backend_depth", topic)), 0.0)
        check("topic paused", s.get(("nsq_topic_paused", topic)), 0.0)
        for name, c1, c2 in [
            ("nsq_channel_depth", 0.0, 5.0),
            ("nsq_channel_backend_depth", 0.0, 0.0),
            ("nsq_channel_in_flight", 2.0, 0.0),
            ("nsq_channel_deferred", 1.0, 1.0),
            ("nsq_channel_clients", 1.0, 0.0),
            ("nsq_channel_messages_total", 6.0, 6.0),
            ("nsq_channel_requeued_total", 1.0, 0.0),
            ("nsq_channel_timed_out_total", 0.0, 0.0),
            ("nsq_channel_paused", 0.0, 0.0),
        ]:
            check(name + " c1", s.get(ch(name, "c1")), c1)
            check(name + " c2", s.get(ch(name, "c2")), c2)
        for fam in ["nsq_topic_messages", "nsq_channel_messages", "nsq_channel_requeued",
                    "nsq_channel_timed_out", "process_cpu_seconds"]:
            check(fam + " is a counter", families[fam].type if fam in families else None, "counter")
        check("nsq_channel_depth is a gauge", families["nsq_channel_depth"].type, "gauge")
        for q in ("0.99", "0.5"):
            key = ("nsq_channel_e2e_processing_latency_seconds",
                   (("channel", "c1"), ("quantile", q), ("topic", "m")))
            v = s.get(key)
            check("e2e c1 q" + q + " in (0, 60s)", v is not None and 0 < v < 60, True)
            key = ("nsq_topic_e2e_processing_latency_seconds", (("quantile", q), ("topic", "m")))
            check("e2e topic q" + q + " present", key in s, True)
        check("c2 has no e2e samples", s.get(ch("nsq_channel_e2e_processing_latency_samples", "c2")), 0.0)
        check("tcp connections", s.get(("nsq_tcp_connections", ())), 1.0)
        check("topics", s.get(("nsq_topics", ())), 1.0)
        check("channels", s.get(("nsq_channels", ())), 2.0)
        check("healthy", s.get(("nsq_healthy", ())), 1.0)
        rss = s.get(("process_resident_memory_bytes", ()))
        check("resident memory plausible", rss is not None and 1e6 < rss < 1e10, True)
        check("open fds plausible", (s.get(("process_open_fds", ())) or 0) > 3, True)
        info = [k for k in s if k[0] == "nsq_info"]
        check("nsq_info version label", len(info) == 1 and ("version", "1.3.0") in info[0][1], True)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(data, ignore_errors=True)
    print(f"metrics: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
