#!/usr/bin/env bash
# Server-side dead letters with a real client (queues_test.go): go-nsq v1.1.0's consumer sees
# nsqrd stop redelivering at the channel's max_attempts and the dead-letter topic receive the
# message.
#
#   tests/queues/run.sh                      # target/debug/nsqrd (built here if missing)
#   NSQRD_BIN=/path/to/nsqrd tests/queues/run.sh
#
# Needs Go >= 1.20; go-nsq v1.1.0 comes from the Go module proxy (go.sum pins it).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CARGO=${CARGO:-cargo}
export NSQRD_BIN=${NSQRD_BIN:-$ROOT/target/debug/nsqrd}

command -v go >/dev/null || { echo "queues: go not found (Go >= 1.20 is needed)" >&2; exit 1; }
if [ ! -x "$NSQRD_BIN" ]; then
    (cd "$ROOT" && "$CARGO" build -p nsqrd)
fi
echo "== queues: go-nsq against $NSQRD_BIN"
cd "$ROOT/tests/queues"
go test -count=1 -v -timeout=60s ./...
