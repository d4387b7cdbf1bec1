"""redis-py's own test suite against nsqrd's keyspace, in RESP2 and RESP3.

The suite is the `tests/` directory that redis-py's source distribution on PyPI ships, at the
version pinned below; it is downloaded once into target/redis-py/. nsqrd (NSQRD_BIN, default
target/debug/nsqrd) is started on an ephemeral loopback port with a temporary data directory.

Every test named in passing-resp2.txt / passing-resp3.txt (beside this script) must pass: the
lists are what nsqrd passes today, so a change that breaks one fails `make test`. With
`--all`, the whole of FILES is run instead and the counts are printed (and, with `--write`,
the lists rewritten from that run): the way to see how far the keyspace is from the suite, and
to add newly passing tests to the lists.

Usage: run.py [--all [--write]]
"""

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

REDIS_PY = "6.4.0"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORK = os.path.join(ROOT, "target", "redis-py")
SUITE = os.path.join(WORK, f"redis-{REDIS_PY}")
VENV = os.path.join(WORK, "venv")
PYTHON = os.path.join(VENV, "bin", "python")
# What the suite's files need, pinned (the client itself is installed from the same sdist).
PACKAGES = ["pytest==9.2.0", "pytest-timeout==2.4.0", "packaging==26.4"]
BINARY = os.environ.get("NSQRD_BIN", os.path.join(ROOT, "target", "debug", "nsqrd"))
# The suite's files about a single server's commands and client behaviour (cluster, sentinel,
# modules, TLS and asyncio duplicates left out).
FILES = [
    "tests/test_commands.py",
    "tests/test_pipeline.py",
    "tests/test_pubsub.py",
    "tests/test_connection.py",
    "tests/test_encoding.py",
    "tests/test_lock.py",
    "tests/test_scripting.py",
    "tests/test_function.py",
    "tests/test_helpers.py",
    "tests/test_command_parser.py",
]


def fetch_suite():
    """The sdist (its tests and its client) and a venv to run them, once."""
    os.makedirs(WORK, exist_ok=True)
    if not os.path.isdir(os.path.join(SUITE, "tests")):
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
             "-d", WORK, f"redis=={REDIS_PY}"],
            check=True,
        )
        with tarfile.open(os.path.join(WORK, f"redis-{REDIS_PY}.tar.gz")) as t:
            t.extractall(WORK, filter="data")
    if not os.path.exists(os.path.join(VENV, "ok")):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([PYTHON, "-m", "pip", "install", "-q", *PACKAGES, SUITE], check=True)
        open(os.path.join(VENV, "ok"), "w").close()


def start_nsqrd(data):
    args = [BINARY, "--tcp-address=127.0.0.1:0", "--http-address=127.0.0.1:0",
            "--https-address=", "--kv-address=127.0.0.1:0", "--data-path=" + data]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = {}
    log = []

    def read():
        for line in proc.stderr:
            log.append(line)
            m = re.search(r"KV: listening on (\S+)", line)
            if m:
                found["addr"] = m.group(1)

    threading.Thread(target=read, daemon=True).start()
    deadline = time.time() + 30
    while "addr" not in found:
        if time.time() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError("nsqrd did not start:\n" + "".join(log))
        time.sleep(0.02)
    return proc, found["addr"]


def node_id(classname, name):
    """A JUnit test case as pytest's node id (tests/test_x.py::Class::test_y)."""
    parts = classname.split(".")
    for i in range(1, len(parts) + 1):
        path = "/".join(parts[:i]) + ".py"
        if os.path.exists(os.path.join(SUITE, path)):
            return "::".join([path] + parts[i:] + [name])
    return classname + "::" + name


def passed_tests(report):
    """Tests that passed whole: no failure, no error (in setup or teardown either), not
    skipped."""
    root = ET.parse(report).getroot()
    return [
        node_id(case.get("classname", ""), case.get("name", ""))
        for case in root.iter("testcase")
        if not any(child.tag in ("failure", "error", "skipped") for child in case)
    ]


def pytest(addr, protocol, targets, report):
    """Runs pytest on `targets`; returns the node ids that passed and its last line. A run
    that ends without writing its report (pytest-timeout ends the process when a test hangs)
    passed nothing: the report of an earlier run is removed first, never read."""
    cmd = [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout=120", "--tb=line",
           f"--redis-url=redis://{addr}", f"--protocol={protocol}",
           "-o", "junit_family=xunit2", f"--junitxml={report}"] + targets
    if os.path.exists(report):
        os.remove(report)
    out = subprocess.run(cmd, cwd=SUITE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=3000)
    lines = out.stdout.strip().splitlines()
    last = lines[-1] if lines else "(no output)"
    if not os.path.exists(report):
        return [], f"no report (exit status {out.returncode}): {last}", out.stdout
    return passed_tests(report), last, out.stdout


def listed(protocol):
    with open(os.path.join(HERE, f"passing-resp{protocol}.txt")) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def run_protocol(protocol, run_all, write):
    """One protocol's run against its own nsqrd; returns (failed, what to print)."""
    data = tempfile.mkdtemp(prefix="nsqr-redis-py-")
    proc, addr = start_nsqrd(data)
    lines = []
    failed = False
    try:
        targets = FILES if run_all else listed(protocol)
        report = os.path.join(WORK, f"report-resp{protocol}.xml")
        passed, summary, text = pytest(addr, protocol, targets, report)
        lines.append(f"RESP{protocol} (pytest): {summary}")
        if run_all:
            lines.append(f"RESP{protocol}: {len(passed)} tests of {', '.join(FILES)} pass")
            if write:
                with open(os.path.join(HERE, f"passing-resp{protocol}.txt"), "w") as f:
                    f.write(f"# redis-py {REDIS_PY}'s tests that pass against nsqrd in RESP{protocol} (run.py --all --write)\n")
                    f.write("\n".join(sorted(passed)) + "\n")
        else:
            missing = sorted(set(targets) - set(passed))
            if missing:
                failed = True
                lines.append(f"RESP{protocol}: {len(missing)} listed tests did not pass:")
                lines.extend("  " + m for m in missing)
                lines.append(text[-20000:])
            lines.append(f"RESP{protocol}: {len(passed)} passed, {len(missing)} failed")
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()
        shutil.rmtree(data, ignore_errors=True)
    return failed, lines


def main():
    """Both protocols at once, each against its own nsqrd: the suite mostly waits on round
    trips, so two runs take little longer than one."""
    run_all = "--all" in sys.argv
    write = "--write" in sys.argv
    fetch_suite()
    results = {}

    def run(protocol):
        try:
            results[protocol] = run_protocol(protocol, run_all, write)
        except Exception as e:  # reported below as a failure of this protocol
            results[protocol] = (True, [f"RESP{protocol}: {e!r}"])

    threads = [threading.Thread(target=run, args=(p,)) for p in (2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = False
    for protocol in (2, 3):
        proto_failed, lines = results.get(protocol, (True, [f"RESP{protocol}: no result"]))
        failed |= proto_failed
        print("\n".join(lines))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
