#!/usr/bin/env bash
# The cluster tests: cluster_test.go, 3 nsqrd + 2 lookupds on loopback, a go-nsq consumer
# through ConnectToNSQLookupds, lookup/tombstone/delete behaviours; replicated_test.go, a
# replicated topic on a 3-node cluster with go-nsq's producer and consumer (through lookupd)
# working through a SIGKILL of the topic's leader.
#
#   tests/cluster/run.sh                                   # project binaries (debug build)
#   LOOKUPD_BIN=/path/to/nsqlookupd tests/cluster/run.sh   # e.g. an upstream nsqlookupd
#
# Environment:
#   NSQRD_BIN    default target/debug/nsqrd (built here if missing)
#   LOOKUPD_BIN  default target/debug/nsqrlookupd (built here if the crate exists)
# Needs Go >= 1.20; go-nsq v1.1.0 comes from the Go module proxy (go.sum pins it).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CARGO=${CARGO:-cargo}
export NSQRD_BIN=${NSQRD_BIN:-$ROOT/target/debug/nsqrd}
export LOOKUPD_BIN=${LOOKUPD_BIN:-$ROOT/target/debug/nsqrlookupd}

command -v go >/dev/null || { echo "cluster: go not found (Go >= 1.20 is needed)" >&2; exit 1; }
if [ ! -x "$NSQRD_BIN" ]; then
    (cd "$ROOT" && "$CARGO" build -p nsqrd)
fi
if [ ! -x "$LOOKUPD_BIN" ]; then
    if [ -d "$ROOT/crates/nsqrlookupd" ]; then
        (cd "$ROOT" && "$CARGO" build -p nsqrlookupd)
    else
        # Until the nsqrlookupd crate lands there is no project lookupd to run against.
        echo "== cluster: SKIPPED: no $LOOKUPD_BIN and no crates/nsqrlookupd; set LOOKUPD_BIN to an nsqlookupd"
        exit 0
    fi
fi
echo "== cluster: nsqrd=$NSQRD_BIN lookupd=$LOOKUPD_BIN"
cd "$ROOT/tests/cluster"
go test -count=1 -v -timeout=180s ./...
