#!/usr/bin/env bash
# NATS JetStream beside `nsqr-bench replicated`: 3 nats-server nodes with JetStream on
# 127.0.0.1 (file storage, one cluster, routes between all), a stream of --replicas (3) and
# `nats bench` (natscli) publishing --size (200) B messages asynchronously in batches of
# --batch (200) from 1 and 4 publishers, then pull consumers reading them. Every node's CPU
# (utime + stime from /proc/PID/stat) is summed around each run: server CPU per message.
#
#   crates/nsqr-bench/scripts/jetstream-r3.sh --nats target/natscli/nats [--sync always]
#
# --sync always adds `sync_interval: always` (nats-server 2.10 and later; 2.9 refuses it).
# Everything lives in a temporary directory removed on exit; the servers are killed on exit.
set -euo pipefail

NATS_SERVER=nats-server
NATS=nats
REPLICAS=3
SIZE=200
BATCH=200
MSGS=400000
PUBS="1 4"
SUBS=4
ROUNDS=3
SYNC=""
while [ $# -gt 0 ]; do
    case "$1" in
        --nats-server) NATS_SERVER=$2; shift 2 ;;
        --nats) NATS=$2; shift 2 ;;
        --replicas) REPLICAS=$2; shift 2 ;;
        --size) SIZE=$2; shift 2 ;;
        --batch) BATCH=$2; shift 2 ;;
        --msgs) MSGS=$2; shift 2 ;;
        --pubs) PUBS=$2; shift 2 ;;
        --subs) SUBS=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --sync) SYNC=$2; shift 2 ;;
        *) echo "usage: $0 [--nats-server P] [--nats P] [--replicas N] [--size B] [--batch N] [--msgs N] [--pubs '1 4'] [--subs N] [--rounds N] [--sync always]" >&2; exit 64 ;;
    esac
done

DIR=$(mktemp -d "${TMPDIR:-/tmp}/jetstream-bench.XXXXXX")
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$DIR"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# CPU clock ticks (1/100 s) of every server so far.
cpu_ticks() {
    local t=0 p
    for p in "${PIDS[@]}"; do
        t=$((t + $(awk '{ sub(/.*\) /, ""); split($0, f, " "); printf "%d", f[12] + f[13] }' "/proc/$p/stat")))
    done
    echo "$t"
}

# The msgs/s of a `nats bench` output: its aggregated line, or a lone client's stats line.
rate_of() {
    echo "$1" | awk '/ stats: / { s = $0 }
        END { sub(/.* stats: /, "", s); sub(/ msgs\/sec.*/, "", s); gsub(",", "", s); print s }'
}

# The P50 and P99 publish-to-ack latency (ms) of a `nats bench js pub` output.
latency_of() {
    echo "$1" | awk '/ stats: / && !l { l = $0 } /latencies per operation/ { l = $0 }
        END { p50 = l; p99 = l
              sub(/.*P50:? /, "", p50); sub(/us.*/, "", p50); gsub(",", "", p50)
              sub(/.*P99:? /, "", p99); sub(/us.*/, "", p99); gsub(",", "", p99)
              printf "%.2f\t%.2f", p50 / 1000, p99 / 1000 }'
}

start_cluster() {
    PIDS=()
    local n=$1 i j p
    local client=() route=()
    for i in $(seq 1 "$n"); do client[$i]=$(free_port); route[$i]=$(free_port); done
    for i in $(seq 1 "$n"); do
        local routes=""
        for j in $(seq 1 "$n"); do
            [ "$j" = "$i" ] || routes="$routes${routes:+, }\"nats-route://127.0.0.1:${route[$j]}\""
        done
        mkdir -p "$DIR/n$i"
        {
            echo "server_name: n$i"
            echo "listen: 127.0.0.1:${client[$i]}"
            echo "jetstream { store_dir: \"$DIR/n$i\"${SYNC:+, sync_interval: $SYNC} }"
            if [ "$n" -gt 1 ]; then
                echo "cluster { name: bench, listen: 127.0.0.1:${route[$i]}, routes: [$routes ] }"
            fi
        } > "$DIR/n$i.conf"
        "$NATS_SERVER" -c "$DIR/n$i.conf" > "$DIR/n$i.log" 2>&1 &
        PIDS+=($!)
    done
    SERVERS=$(for i in $(seq 1 "$n"); do printf 'nats://127.0.0.1:%s,' "${client[$i]}"; done)
    SERVERS=${SERVERS%,}
    # Wait until the JetStream meta group has a leader (the stream can be created).
    for _ in $(seq 1 300); do
        for p in "${PIDS[@]}"; do
            if ! kill -0 "$p" 2>/dev/null; then
                echo "a nats-server exited at start:" >&2
                cat "$DIR"/n*.log >&2
                exit 1
            fi
        done
        if "$NATS" -s "$SERVERS" account info 2> "$DIR/ready.err" | grep -q "Storage"; then return 0; fi
        sleep 0.2
    done
    echo "JetStream did not become ready; logs in $DIR" >&2
    tail -n 5 "$DIR"/n*.log >&2
    exit 1
}

stop_cluster() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    PIDS=()
    rm -rf "$DIR"/n*
}

# One run: publish, then consume, on a fresh cluster; prints a result line.
run() {
    local nodes=$1 replicas=$2 pubs=$3 round=$4 out c0 c1 c2 prate srate lat
    start_cluster "$nodes"
    c0=$(cpu_ticks)
    out=$("$NATS" -s "$SERVERS" bench js pub async bench.x --create --stream bench \
        --storage file --replicas "$replicas" --clients "$pubs" --msgs "$MSGS" --size "$SIZE" \
        --batch "$BATCH" --no-progress 2>&1) || { echo "$out" >&2; exit 1; }
    c1=$(cpu_ticks)
    echo "$out" > "$DIR/pub.out"
    prate=$(rate_of "$out")
    lat=$(latency_of "$out")
    out=$("$NATS" -s "$SERVERS" bench js fetch --stream bench --clients "$SUBS" \
        --msgs "$MSGS" --size "$SIZE" --batch "$BATCH" --no-progress 2>&1) || { echo "$out" >&2; exit 1; }
    c2=$(cpu_ticks)
    echo "$out" > "$DIR/sub.out"
    srate=$(rate_of "$out")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\n' "$round" "R$replicas" "$pubs" "${SYNC:-default}" \
        "$prate" "$srate" "$lat" "$(echo "($c1 - $c0) * 10000 / $MSGS" | bc -l)" \
        "$(echo "($c2 - $c1) * 10000 / $MSGS" | bc -l)"
    stop_cluster
}

echo "$("$NATS_SERVER" --version), $("$NATS" --version 2>&1), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$MSGS x $SIZE B, async publish batches of $BATCH, $SUBS pull consumers (batch $BATCH), file storage"
printf 'round\tstream\tpubs\tsync\tpub msg/s\tsub msg/s\tpub p50 ms\tpub p99 ms\tpub CPU us/msg\tsub CPU us/msg\n'
for round in $(seq 1 "$ROUNDS"); do
    for pubs in $PUBS; do
        run 3 "$REPLICAS" "$pubs" "$round"
        run 1 1 "$pubs" "$round"
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
