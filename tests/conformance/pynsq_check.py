"""pynsq (from PyPI) against an nsqd-compatible server: a Writer and a Reader exchange messages
in each connection mode, and /stats must show the mode really was negotiated.

    python pynsq_check.py SERVER_BIN FIXTURES_DIR MODE [MODE...]

Modes: plain, tls, snappy, deflate, tls_deflate, tls_snappy. Prints one line per mode and a
closing 'N passed, N failed' line; exits non-zero if any mode failed. Run by pynsq.sh.

A mode gets up to ATTEMPTS tries: pynsq 0.9.1's snappy/deflate socket wrappers lose data when
the server's compressed `OK` arrives in the same read as the IDENTIFY reply, a client-side race
that shows against upstream nsqd too (see pynsq.sh). Every failed try is printed.
"""

import json
import os
import random
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

import nsq
import tornado.ioloop

MESSAGES = 20
ATTEMPTS = 3
TIMEOUT = 15.0


def free_port():
    """A port nothing listens on, below the kernel's ephemeral range (32768-60999 by default)
    so that no socket bound to port 0 elsewhere can take it before the daemon binds it."""
    for _ in range(1000):
        port = random.randrange(20000, 32768)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port in 20000-32767 after 1000 tries")


def start_server(binary, fixtures):
    data = tempfile.mkdtemp(prefix="nsqr-pynsq-")
    tcp, http = free_port(), free_port()
    args = [
        binary,
        f"--tcp-address=127.0.0.1:{tcp}",
        f"--http-address=127.0.0.1:{http}",
        "--https-address=",
        f"--data-path={data}",
        f"--tls-cert={fixtures}/server.pem",
        f"--tls-key={fixtures}/server.key",
        f"--tls-root-ca-file={fixtures}/ca.pem",
    ]
    log = open(os.path.join(data, "server.log"), "w")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{http}/ping", timeout=1).read()
            return proc, tcp, http, data
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start; log in " + data)


def options(mode, fixtures):
    o = {}
    if mode.startswith("tls"):
        o["tls_v1"] = True
        o["tls_options"] = {
            "cert_reqs": ssl.CERT_REQUIRED,
            "ca_certs": f"{fixtures}/ca.pem",
        }
    if mode.endswith("snappy"):
        o["snappy"] = True
    if mode.endswith("deflate"):
        o["deflate"] = True
    return o


def stats_flags(http, topic):
    """(tls, snappy, deflate) of the consumer on topic/ch as /stats shows it."""
    raw = urllib.request.urlopen(f"http://127.0.0.1:{http}/stats?format=json&topic={topic}").read()
    s = json.loads(raw)
    for t in s.get("topics") or []:
        for c in t.get("channels") or []:
            for cl in c.get("clients") or []:
                return (cl["tls"], cl["snappy"], cl["deflate"])
    return None


def run_mode(mode, tcp, http, fixtures):
    topic = f"pynsq_{mode}_{int(time.time() * 1000)}"
    addr = f"127.0.0.1:{tcp}"
    opts = options(mode, fixtures)
    loop = tornado.ioloop.IOLoop.current()
    got = []
    seen_flags = []
    result = {"error": None}

    def handler(msg):
        got.append(msg.body)
        if not seen_flags:
            seen_flags.append(stats_flags(http, topic))
        if len(got) >= MESSAGES:
            loop.stop()
        return True

    writer = nsq.Writer([addr], **opts)
    reader = nsq.Reader(
        topic=topic, channel="ch", message_handler=handler,
        nsqd_tcp_addresses=[addr], max_in_flight=10, **opts)

    sent = [0]

    def publish():
        if sent[0] >= MESSAGES:
            return
        if not writer.conns:
            loop.call_later(0.1, publish)
            return

        def done(conn, data):
            if isinstance(data, nsq.Error):
                result["error"] = f"publish failed: {data}"
                loop.stop()
                return
            sent[0] += 1
            publish()

        writer.pub(topic, f"{mode} message {sent[0]}".encode(), callback=done)

    def give_up():
        result["error"] = result["error"] or f"timed out with {len(got)}/{MESSAGES} messages"
        loop.stop()

    loop.call_later(0.5, publish)
    timer = loop.call_later(TIMEOUT, give_up)
    loop.start()
    loop.remove_timeout(timer)
    reader.close()
    for conn in list(writer.conns.values()):
        conn.close()
    if result["error"] is None and len(got) < MESSAGES:
        result["error"] = f"got {len(got)}/{MESSAGES} messages"
    if result["error"] is None:
        expect = (mode.startswith("tls"), mode.endswith("snappy"), mode.endswith("deflate"))
        if not seen_flags or seen_flags[0] != expect:
            result["error"] = f"/stats shows (tls, snappy, deflate) = {seen_flags}, want {expect}"
    return result["error"]


def main():
    binary, fixtures, modes = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3:]
    proc, tcp, http, data = start_server(binary, fixtures)
    passed = failed = 0
    try:
        for mode in modes:
            for attempt in range(1, ATTEMPTS + 1):
                err = run_mode(mode, tcp, http, fixtures)
                if err is None:
                    break
                print(f"try {attempt} of pynsq {mode} failed: {err}", flush=True)
            if err is None:
                passed += 1
                print(f"PASS pynsq {mode}", flush=True)
            else:
                failed += 1
                print(f"FAIL pynsq {mode}: {err}", flush=True)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if failed:
            print("server log:\n" + open(os.path.join(data, "server.log")).read()[-3000:])
        shutil.rmtree(data, ignore_errors=True)
    print(f"pynsq: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
