#!/usr/bin/env bash
# Runs go-nsq v1.1.0's own test suite against an nsqd-compatible server.
#
#   tests/conformance/go-nsq.sh                           # target/release/nsqrd (make build)
#   NSQD_BIN=/path/to/nsqd tests/conformance/go-nsq.sh
#   CONFORMANCE_SKIP=none CONFORMANCE_TLS=1 NSQD_BIN=/path/to/nsqd tests/conformance/go-nsq.sh
#
# Environment:
#   NSQD_BIN          server binary (default: target/release/nsqrd)
#   CONFORMANCE_SKIP  `go test -skip` regex; unset = SKIP_TESTS below; "none" or "" = skip nothing
#   CONFORMANCE_TLS   1 = start the server with go-nsq's TLS flags, 0 = without; unset = TLS_DEFAULT
#
# The server is started the way go-nsq's test.sh starts nsqd
#   nsqd --data-path=/tmp --lookupd-tcp-address=127.0.0.1:4160 \
#        --tls-cert=./test/server.pem --tls-key=./test/server.key --tls-root-ca-file=./test/ca.pem
# except that it listens on 127.0.0.1 only, gets a fresh temporary --data-path, and gets no
# --lookupd-tcp-address (no go-nsq test talks to nsqlookupd; test.sh only runs one alongside).
# Needs: Go >= 1.20 (for `go test -skip`), curl, access to the Go module proxy.
set -euo pipefail

GO_NSQ_MODULE=github.com/nsqio/go-nsq@v1.1.0

# Nothing is skipped, and the server gets go-nsq's TLS flags, as test.sh gives nsqd.
SKIP_TESTS=''
TLS_DEFAULT=1

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
NSQD_BIN=${NSQD_BIN:-$ROOT/target/release/nsqrd}
TCP_ADDR=127.0.0.1:4150
HTTP_ADDR=127.0.0.1:4151

die() {
    echo "go-nsq.sh: $*" >&2
    exit 1
}

# --- preconditions ---------------------------------------------------------------------------
[ -x "$NSQD_BIN" ] || die "server binary not found or not executable: $NSQD_BIN (run 'make build' or set NSQD_BIN)"
command -v go >/dev/null || die "go not found (Go >= 1.20 is needed)"
command -v curl >/dev/null || die "curl not found"
go_minor=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
{ [ -n "$go_minor" ] && [ "$go_minor" -ge 20 ]; } ||
    die "Go >= 1.20 is needed for 'go test -skip' (found $(go env GOVERSION))"
for addr in "$TCP_ADDR" "$HTTP_ADDR"; do
    if (exec 3<>"/dev/tcp/${addr%:*}/${addr#*:}") 2>/dev/null; then
        die "$addr is already in use; stop whatever listens there (another nsqd?) and retry"
    fi
done

skip=${CONFORMANCE_SKIP-$SKIP_TESTS}
[ "$skip" = none ] && skip=
tls=${CONFORMANCE_TLS:-$TLS_DEFAULT}

# --- temp dir, and cleanup on any exit -------------------------------------------------------
work=$(mktemp -d -t nsqr-go-nsq.XXXXXX)
server_pid=
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- go-nsq sources (the module cache is read-only, so test from a writable copy) ------------
echo "== fetching $GO_NSQ_MODULE"
mod_json=$(cd "$work" && go mod download -json "$GO_NSQ_MODULE") ||
    die "go mod download $GO_NSQ_MODULE failed: $mod_json"
mod_dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$mod_json")
{ [ -n "$mod_dir" ] && [ -d "$mod_dir" ]; } || die "no module directory in: $mod_json"
src=$work/go-nsq
cp -R "$mod_dir" "$src"
chmod -R u+w "$src"
(cd "$src" && go mod download) || die "go mod download of go-nsq's dependencies failed"

# --- server ----------------------------------------------------------------------------------
data_dir=$work/data
server_log=$work/server.log
mkdir "$data_dir"
server_args=(--tcp-address="$TCP_ADDR" --http-address="$HTTP_ADDR" --data-path="$data_dir")
if [ "$tls" = 1 ]; then
    # test.sh's TLS flags, with absolute paths; HTTPS (opened once TLS is set) kept on loopback.
    server_args+=(
        --tls-cert="$src/test/server.pem"
        --tls-key="$src/test/server.key"
        --tls-root-ca-file="$src/test/ca.pem"
        --https-address=127.0.0.1:4152
    )
fi
echo "== starting $NSQD_BIN ${server_args[*]}"
"$NSQD_BIN" "${server_args[@]}" >"$server_log" 2>&1 &
server_pid=$!

up=0
for _ in $(seq 100); do
    if curl -sf -o /dev/null "http://$HTTP_ADDR/ping"; then
        up=1
        break
    fi
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
done
if [ "$up" != 1 ]; then
    if kill -0 "$server_pid" 2>/dev/null; then
        echo "go-nsq.sh: server did not answer http://$HTTP_ADDR/ping within 10 s; its log:" >&2
    else
        status=0
        wait "$server_pid" || status=$?
        server_pid=
        echo "go-nsq.sh: server exited (status $status) before answering /ping; its log:" >&2
    fi
    cat "$server_log" >&2
    exit 1
fi

# --- go-nsq's tests --------------------------------------------------------------------------
test_args=(test -v -count=1 -timeout=120s)
[ -n "$skip" ] && test_args+=(-skip "$skip")
echo "== go ${test_args[*]} ./...   (in $GO_NSQ_MODULE)"
# go-nsq's own mock-server tests: they run a fake nsqd inside the test and never talk to the
# server under test. One of them (TestConsumerBackoffDisconnect) can panic on current Go with
# "Log in goroutine after ... has completed", which also aborts every test after it.
MOCK_TESTS='^(TestConsumerBackoff|TestConsumerRequeueNoBackoff|TestConsumerBackoffDisconnect|TestConsumerPause)$'
run_suite() {
    local rc=0
    (cd "$src" && go "${test_args[@]}" ./...) 2>&1 | tee "$work/test.log" || rc=$?
    return "$rc"
}
# The tests that failed or panicked in the last run, one per line.
failed_tests() {
    {
        grep -oE '^--- FAIL: [A-Za-z0-9_]+' "$work/test.log" | awk '{print $3}'
        grep -oE 'Log in goroutine after [A-Za-z0-9_]+' "$work/test.log" | awk '{print $5}'
    } | sort -u
}
start=$SECONDS
rc=0
run_suite || rc=$?
retried=""
if [ "$rc" != 0 ]; then
    bad=$(failed_tests)
    if [ -n "$bad" ] && ! echo "$bad" | grep -qvE "$MOCK_TESTS"; then
        retried=$(echo "$bad" | tr '\n' ' ')
        echo "== only go-nsq's mock-server tests failed ($retried); they do not use the server under test: running the suite once more"
        rc=0
        run_suite || rc=$?
    fi
fi
elapsed=$((SECONDS - start))

passed=$(grep -c '^--- PASS' "$work/test.log" || true)
failed=$(grep -c '^--- FAIL' "$work/test.log" || true)
if [ "$rc" != 0 ]; then
    echo "== server log (tail):"
    tail -n 50 "$server_log"
fi
[ -n "$retried" ] && echo "== note: the suite was run twice; the first run's mock-server failures: $retried"
echo "== go-nsq conformance: $passed passed, $failed failed, skipped: ${skip:-nothing}," \
    "tls: $([ "$tls" = 1 ] && echo on || echo off), ${elapsed}s, server: $NSQD_BIN" \
    "-> $([ "$rc" = 0 ] && echo PASS || echo FAIL)"
exit "$rc"
