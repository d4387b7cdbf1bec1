#!/usr/bin/env python3
"""Run the workspace's test binaries (what `cargo test --workspace` runs), two at a time.

`cargo test` runs its test binaries one after another, and most of their time is spent
waiting (servers starting, timeouts expiring), not computing: on a 2-core machine the
largest binary (nsqrd's integration tests) takes about as long as all the others together.
This builds them with `cargo test --no-run`, then runs the largest on its own lane and the
rest one after another on a second lane (each from its package's directory, as cargo does),
the doc tests (`cargo test --doc`) among them. Each one's output is printed whole when it
ends; the run fails if any fails or does not run.

    python3 tests/unit/run.py [--jobs N] [--test-threads N] [-- cargo test args]
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

# Binaries that each get a lane of their own, started first (the longest).
LONG = {("nsqrd", "it")}


def test_binaries(cargo, cargo_args):
    """(package, target name, command, package dir) of every test binary, built first, and the
    packages whose binaries (not test binaries) this build compiled."""
    cmd = [cargo, "test", "--workspace", "--no-run", "--message-format=json-render-diagnostics"]
    out = subprocess.run(cmd + cargo_args, stdout=subprocess.PIPE, check=True, text=True).stdout
    found, compiled_bins = [], set()
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        if not msg.get("profile", {}).get("test"):
            if not msg.get("fresh") and "bin" in msg["target"]["kind"]:
                compiled_bins.add(msg["target"]["name"])
            continue
        name = msg["target"]["name"]
        pkg_name = os.path.basename(os.path.dirname(msg["manifest_path"]))
        exe = msg["executable"]
        found.append((pkg_name, name, [exe], os.path.dirname(msg["manifest_path"])))
    return found, compiled_bins


def run_lane(lane, threads, results, lock):
    for pkg, name, cmd, cwd in lane:
        t0 = time.monotonic()
        p = subprocess.run(cmd + [f"--test-threads={threads}"], cwd=cwd,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        took = time.monotonic() - t0
        with lock:
            print(f"== {pkg} {name} ({' '.join(cmd)}): exit {p.returncode} in {took:.1f} s", flush=True)
            print(p.stdout, flush=True)
            results.append((pkg, name, p.returncode, took))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2, help="binaries run at once")
    ap.add_argument("--test-threads", type=int, default=3, help="tests at a time per binary")
    ap.add_argument("--built", default="", metavar="BIN,...",
                    help="binaries built just before (make unit builds the daemons first): "
                    "fail if the tests' build compiles them again")
    ap.add_argument("cargo_args", nargs="*")
    args = ap.parse_args()
    cargo = os.environ.get("CARGO", "cargo")

    bins, compiled_bins = test_binaries(cargo, args.cargo_args)
    again = sorted(compiled_bins & set(filter(None, args.built.split(","))))
    if again:
        print(f"FAILED: the tests' build compiled {', '.join(again)} again: a dependency gets "
              "other features in `cargo test --workspace` than in the daemons' own build "
              "(pin them in Cargo.toml's [workspace.dependencies])")
        return 1
    if not any((b[0], b[1]) in LONG for b in bins):
        print(f"FAILED: cargo listed no {sorted(LONG)} test binary ({len(bins)} found)")
        return 1
    doc = [cargo, "test", "--workspace", "--doc", *args.cargo_args, "--"]
    bins.append(("workspace", "doc tests", doc, os.getcwd()))
    long = [b for b in bins if (b[0], b[1]) in LONG]
    rest = [b for b in bins if (b[0], b[1]) not in LONG]
    lanes = [[b] for b in long] + [[] for _ in range(max(1, args.jobs - len(long)))]
    short_lanes = lanes[len(long):]
    for i, b in enumerate(rest):
        short_lanes[i % len(short_lanes)].append(b)

    results, lock = [], threading.Lock()
    threads = [threading.Thread(target=run_lane, args=(lane, args.test_threads, results, lock))
               for lane in lanes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    failed = [r for r in results if r[2] != 0]
    print(f"{len(results)} test binaries, {len(failed)} failed")
    for pkg, name, code, took in sorted(results, key=lambda r: -r[3])[:5]:
        print(f"  {took:6.1f} s  {pkg} {name}")
    for pkg, name, code, _ in failed:
        print(f"FAILED: {pkg} {name} (exit {code})")
    if len(results) != len(bins):
        print(f"FAILED: {len(bins) - len(results)} binaries did not run")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
