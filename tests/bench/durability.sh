#!/usr/bin/env bash
# Acknowledged publish rate of nsqrd --durability=strict against the default mode and against
# nsqd with --mem-queue-size=0 --sync-every=1 (nsqd's most durable setting), for 1 and 16
# pipelining publishers, with `nsqr-bench pub` (docs/benchmarks.md, "Durability").
#
# usage: tests/bench/durability.sh [--reference /path/to/nsqd] [--rounds 3] [--duration 3s]
#
# Every measurement starts its server on a fresh data directory under $TMPDIR (so on the disk
# that directory is on) with nsqd's defaults plus the mode's flags, runs one `nsqr-bench pub`,
# and kills the server. Servers alternate within a round; the table shows medians. It also
# prints the fdatasync latency of that disk (the floor of every strict acknowledgement) before
# and after, since on a shared machine it moves with the neighbours' load.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NSQR_BENCH=${NSQR_BENCH:-$ROOT/target/release/nsqr-bench}
NSQRD=${NSQRD:-$ROOT/target/release/nsqrd}
REFERENCE=""
ROUNDS=3
DURATION=3s
while [ $# -gt 0 ]; do
  case $1 in
    --reference) REFERENCE=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 64 ;;
  esac
done
[ -x "$NSQR_BENCH" ] && [ -x "$NSQRD" ] || { echo "build first: cargo build --release -p nsqr-bench -p nsqrd" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/nsqr-durability-bench.XXXXXX")
PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM

fsync_latency() {
  python3 - "$WORK/fsync.probe" <<'EOF'
import os, sys, time
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_APPEND)
ts = []
for _ in range(200):
    os.write(fd, b"x" * 16384)
    t = time.perf_counter(); os.fdatasync(fd); ts.append(time.perf_counter() - t)
os.close(fd); os.unlink(sys.argv[1])
ts.sort()
print(f"fdatasync of 16 KiB: p50 {ts[100]*1e3:.2f} ms, p90 {ts[180]*1e3:.2f} ms")
EOF
}

# run <server binary> <bench args> -- <server args>: prints acknowledged msgs/s
run() {
  local bin=$1; shift
  local bargs=()
  while [ "$1" != "--" ]; do bargs+=("$1"); shift; done; shift
  local dir; dir=$(mktemp -d "$WORK/data.XXXX")
  "$bin" --tcp-address=127.0.0.1:0 --http-address=127.0.0.1:0 --https-address= \
    --data-path="$dir" "$@" >"$dir.log" 2>&1 &
  PID=$!
  local addr=""
  for _ in $(seq 100); do
    addr=$(sed -n 's/.*TCP: listening on \([0-9.:]*\).*/\1/p' "$dir.log" | head -1)
    [ -n "$addr" ] && break
    sleep 0.05
  done
  [ -n "$addr" ] || { echo "server did not start: $(cat "$dir.log")" >&2; exit 1; }
  "$NSQR_BENCH" pub --nsqd-tcp-address "$addr" --duration "$DURATION" "${bargs[@]}" --json \
    | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["publish"]["msgs_per_sec"]))'
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
  rm -rf "$dir" "$dir.log"
}

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

SHAPES=("--connections 1 --batch-size 1 --pipeline 256"
        "--connections 16 --batch-size 1 --pipeline 256"
        "--connections 1 --batch-size 200 --pipeline 16"
        "--connections 16 --batch-size 200 --pipeline 16")
echo "nsqrd: $("$NSQRD" --version)"
[ -n "$REFERENCE" ] && echo "reference: $("$REFERENCE" --version 2>&1 | head -1)"
echo "data on: $(df -h "$WORK" | awk 'NR==2 {print $1 " (" $NF ")"}'); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "before: $(fsync_latency)"
echo
echo "| publishers | MPUB batch x pipeline | default | strict | strict / default | nsqd mem-queue-size=0 sync-every=1 |"
echo "|---|---|---:|---:|---:|---:|"
for shape in "${SHAPES[@]}"; do
  # shellcheck disable=SC2206
  args=($shape)
  d=(); s=(); n=()
  for _ in $(seq "$ROUNDS"); do
    d+=("$(run "$NSQRD" "${args[@]}" -- --durability=default)")
    s+=("$(run "$NSQRD" "${args[@]}" -- --durability=strict)")
    if [ -n "$REFERENCE" ]; then
      n+=("$(run "$REFERENCE" "${args[@]}" -- --mem-queue-size=0 --sync-every=1)")
    fi
  done
  md=$(median "${d[@]}"); ms=$(median "${s[@]}")
  mn="-"; [ -n "$REFERENCE" ] && mn=$(median "${n[@]}")
  ratio=$(awk -v a="$ms" -v b="$md" 'BEGIN {printf "%.0f%%", 100 * a / b}')
  echo "| ${args[1]} | ${args[3]} x ${args[5]} | $md | $ms | $ratio | $mn |"
done
echo
echo "after: $(fsync_latency); load after: $(cut -d' ' -f1-3 /proc/loadavg)"
