#!/usr/bin/env python3
"""The shell blocks of README.md and docs/*.md marked `<!-- checked: ... -->` (the line right
before the fence), run as written against nsqrd started as `make run` starts it.

    check_snippets.py --bin-dir target/debug [--root .] -- <make run's flags>

nsqrd (from --bin-dir) listens where `make run` listens, with its data in a temporary
directory; those ports must be free. The project's binaries are first on the PATH under
their installed names (nsqrd, nsqrlookupd, nsqr), as after `make install`. The checked blocks
of one page run in one bash session, in page order (a variable set in one block is seen by
the next), under `set -euo pipefail`, in a scratch directory; a block that fails, or a page
that takes longer than its time limit, fails the check. No checked block at all fails it too.
"""

import argparse
import os
import pathlib
import queue
import re
import socket
import subprocess
import sys
import tempfile
import threading

MARKER = re.compile(r"^<!-- checked: .* -->\s*$")
PAGE_LIMIT_S = 120
START_LIMIT_S = 60


def checked_blocks(path):
    """The bodies of the marked ```sh blocks of a Markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if MARKER.match(lines[i]) and i + 1 < len(lines) and lines[i + 1].strip() == "```sh":
            j = i + 2
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            blocks.append((i + 3, "\n".join(lines[i + 2 : j])))
            i = j
        i += 1
    return blocks


def ports_of(flags):
    """The loopback ports `make run`'s flags listen on."""
    return [int(m.group(1)) for f in flags for m in [re.search(r"address=[^:]*:(\d+)$", f)] if m]


def port_free(port):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def start_nsqrd(bin_dir, data, flags):
    """nsqrd with make run's flags; returns it once every listener has logged its address."""
    proc = subprocess.Popen(
        [str(bin_dir / "nsqrd"), f"--data-path={data}", *flags],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = queue.Queue()

    def read():
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    wanted = {"TCP: listening on", "HTTP: listening on"}
    if any(f.startswith("--kv-address=") and f != "--kv-address=" for f in flags):
        wanted.add("KV: listening on")
    seen = []
    while wanted:
        try:
            line = lines.get(timeout=START_LIMIT_S)
        except queue.Empty:
            line = None
        if line is None:
            proc.kill()
            sys.exit("nsqrd did not start:\n" + "".join(seen))
        seen.append(line)
        wanted = {w for w in wanted if w not in line}
    return proc


def run_page(path, blocks, env, scratch):
    script = "set -euo pipefail\n" + "\n".join(body for _, body in blocks) + "\nwait\n"
    try:
        r = subprocess.run(
            ["bash", "-c", script],
            cwd=scratch,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=PAGE_LIMIT_S,
        )
    except subprocess.TimeoutExpired:
        return f"{path}: not done within {PAGE_LIMIT_S} s"
    if r.returncode != 0:
        where = ", ".join(f"line {line}" for line, _ in blocks)
        return f"{path} (blocks at {where}): exit {r.returncode}\n{r.stdout}{r.stderr}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", required=True, type=pathlib.Path)
    ap.add_argument("--root", default=".", type=pathlib.Path)
    ap.add_argument("flags", nargs="*", help="make run's flags (after --)")
    args = ap.parse_args()
    bin_dir = args.bin_dir.resolve()
    pages = [args.root / "README.md", *sorted((args.root / "docs").glob("*.md"))]
    checked = [(p, b) for p in pages for b in [checked_blocks(p)] if b]
    if not checked:
        sys.exit("no checked block found: the marker is `<!-- checked: ... -->` before ```sh")
    busy = [p for p in ports_of(args.flags) if not port_free(p)]
    if busy:
        sys.exit(f"ports {busy} are in use: make run's ports must be free for the docs check")
    with tempfile.TemporaryDirectory(prefix="nsqr-docs-") as tmp:
        tmp = pathlib.Path(tmp)
        shims, data, scratch = tmp / "bin", tmp / "data", tmp / "work"
        for d in (shims, data, scratch):
            d.mkdir()
        for name in ("nsqrd", "nsqrlookupd", "nsqr"):
            (shims / name).symlink_to(bin_dir / name)
        env = dict(os.environ, PATH=f"{shims}:{os.environ.get('PATH', '')}")
        nsqrd = start_nsqrd(bin_dir, data, args.flags)
        try:
            failures = [f for p, b in checked for f in [run_page(p, b, env, scratch)] if f]
        finally:
            nsqrd.terminate()
            try:
                nsqrd.wait(timeout=30)
            except subprocess.TimeoutExpired:
                nsqrd.kill()
    for f in failures:
        print(f"FAIL {f}", file=sys.stderr)
    total = sum(len(b) for _, b in checked)
    print(f"docs: {total} checked blocks on {len(checked)} pages, {len(failures)} pages failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
