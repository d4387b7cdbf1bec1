#!/usr/bin/env bash
# pynsq (the official Python client, from PyPI) against an nsqd-compatible server: a Writer and
# a Reader exchange messages in plain, TLS, snappy, deflate, TLS+deflate and TLS+snappy modes
# (pynsq_check.py), with the test certificates of crates/nsqrd/tests/fixtures/tls.
#
#   tests/conformance/pynsq.sh                        # target/release/nsqrd (make build)
#   NSQD_BIN=/path/to/nsqd tests/conformance/pynsq.sh
#   PYNSQ_MODES="plain tls" tests/conformance/pynsq.sh
#
# The client side is installed from PyPI, at exact versions, into a venv under target/.
# pynsq 0.9.1's compressed-socket wrappers race with the server's upgrade `OK` (seen against
# upstream nsqd 1.3 as well, most often for snappy and TLS+snappy); pynsq_check.py gives each
# mode three tries and prints every failed one.
# Needs: python3 with venv, access to PyPI.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
NSQD_BIN=${NSQD_BIN:-$ROOT/target/release/nsqrd}
MODES=${PYNSQ_MODES:-plain tls snappy deflate tls_deflate tls_snappy}
VENV=$ROOT/target/pynsq-venv
REQUIREMENTS=(pynsq==0.9.1 tornado==6.4.2 python-snappy==0.7.3 cramjam==2.14.0)

die() {
    echo "pynsq.sh: $*" >&2
    exit 1
}

[ -x "$NSQD_BIN" ] || die "server binary not found or not executable: $NSQD_BIN (run 'make build' or set NSQD_BIN)"
command -v python3 >/dev/null || die "python3 not found"

stamp=$VENV/.requirements
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "${REQUIREMENTS[*]}" ]; then
    echo "== installing ${REQUIREMENTS[*]} into $VENV"
    rm -rf "$VENV"
    python3 -m venv "$VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "${REQUIREMENTS[@]}" ||
        die "pip install failed"
    echo "${REQUIREMENTS[*]}" >"$stamp"
fi

echo "== pynsq conformance: $NSQD_BIN, modes: $MODES"
# shellcheck disable=SC2086 # MODES is a word list
exec "$VENV/bin/python" -W ignore::DeprecationWarning "$ROOT/tests/conformance/pynsq_check.py" \
    "$NSQD_BIN" "$ROOT/crates/nsqrd/tests/fixtures/tls" $MODES
