# nsqr: build, run and test nsqrd. `make test` is what CI runs (.ci/run).

CARGO ?= cargo
DATA_PATH ?= ./data

.PHONY: run build install test deps lint fmt clippy unit docs example metrics keyspace redis-py cluster faults queues conformance transports fuzz clean

TEST_THREADS ?= 3

# Python venv for the test scripts (prometheus_client and redis-py from PyPI).
VENV ?= target/venv
PROMETHEUS_CLIENT ?= prometheus_client==0.26.0
REDIS_PY_VERSION ?= 8.1.0

# Build and run nsqrd in the foreground on nsqd's default ports, on loopback only
# (TCP 127.0.0.1:4150, HTTP 127.0.0.1:4151; LISTEN=0.0.0.0 serves every interface), keeping
# its data in $(DATA_PATH), with the Redis-protocol keyspace on 127.0.0.1:6379 (try it with
# redis-cli). ARGS adds flags, e.g. make run ARGS="--kv-events-topic=kv-changes"; a flag
# given twice takes its last value, so ARGS also overrides the ones above.
LISTEN ?= 127.0.0.1
ARGS ?=
RUN_FLAGS = --tcp-address=$(LISTEN):4150 --http-address=$(LISTEN):4151 --kv-address=127.0.0.1:6379
run:
	mkdir -p $(DATA_PATH)
	$(CARGO) run --release -p nsqrd -- --data-path=$(DATA_PATH) $(RUN_FLAGS) $(ARGS)

# Release build of nsqrd (target/release/nsqrd): what the conformance scripts run by default.
build:
	$(CARGO) build --release -p nsqrd

# Release builds of nsqrd, nsqrlookupd and the nsqr tools, installed in $(PREFIX)/bin
# (docs/operations.md): make install PREFIX=$$HOME/.local needs no root.
PREFIX ?= /usr/local
install:
	for c in nsqrd nsqrlookupd nsqr; do \
		$(CARGO) install --locked --path crates/$$c --root $(PREFIX) || exit 1; \
	done

# Everything CI checks; the first failing step fails `make test`. The first steps run in
# order (docs needs make run's ports; redis-py runs its two protocols at once), the rest two at
# a time, longest first: the fault suite mostly waits on its nodes' elections while the others
# run clients or a compiler, and none of them uses a port another one does (the fault suite's
# nodes take ports in 20000-32767, conformance 4150-4152, the rest ephemeral ones). Clippy is
# one of those: it compiles the workspace again (in check mode, so it shares nothing with the
# debug build), which costs least beside suites that wait; formatting is checked first.
test: deps fmt unit docs redis-py
	$(MAKE) -j2 --output-sync=target faults clippy conformance queues transports keyspace cluster example metrics

# Install what the tests need: rustfmt and clippy (only if missing: rustup's default profile
# has them) and a venv with prometheus_client and redis-py; Go (>= 1.20) and Python 3 (with venv) must
# already be installed. pynsq.sh installs its own Python packages, at exact versions, under
# target/.
deps:
	@$(CARGO) fmt --version >/dev/null 2>&1 || rustup component add rustfmt
	@$(CARGO) clippy --version >/dev/null 2>&1 || rustup component add clippy
	@command -v go >/dev/null || { echo "make test needs Go >= 1.20 for the go-nsq tests" >&2; exit 1; }
	@command -v python3 >/dev/null || { echo "make test needs python3 (with venv) for the /metrics and pynsq tests" >&2; exit 1; }
	@test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	@$(VENV)/bin/python -c 'import prometheus_client' 2>/dev/null || $(VENV)/bin/pip install -q '$(PROMETHEUS_CLIENT)'
	@$(VENV)/bin/python -c 'import redis, sys; sys.exit(redis.__version__ != "$(REDIS_PY_VERSION)")' 2>/dev/null || $(VENV)/bin/pip install -q 'redis==$(REDIS_PY_VERSION)'

# Formatting and lints; clippy warnings are errors.
lint: fmt clippy

fmt:
	$(CARGO) fmt --all -- --check

# Clippy's check builds go to a target directory of their own (target/clippy), so the debug
# builds of the steps that run beside it in `make test` do not wait for its lock on target/.
CLIPPY = CARGO_TARGET_DIR=target/clippy $(CARGO) clippy
clippy:
	$(CLIPPY) --workspace --all-targets -- -D warnings

# The workspace's unit and integration tests (debug build): what `cargo test --workspace` runs,
# with two test binaries at a time (nsqrd's black-box tests on one lane, every other binary and
# the doc tests on the other; tests/unit/run.py) and TEST_THREADS tests at a time per binary:
# most tests wait on the daemons they start, so this finishes sooner on two cores than cargo's
# one binary after another. The daemons and the nsqr tools are built first, as later steps run
# them: the tests of nsqr-client and nsqr start the daemons too (nsqr_testkit::daemon_bin,
# which then finds them built instead of building them while a test waits). The tests' build
# reuses what that build compiled: every shared dependency gets the same features in both
# (Cargo.toml pins them), and run.py fails if the tests' build compiles those binaries again.
# The three are built together: `-p nsqr` alone resolves other features (serde's, bytes's...)
# and would compile half the workspace again.
unit:
	$(CARGO) build -p nsqrd -p nsqrlookupd -p nsqr
	CARGO=$(CARGO) python3 tests/unit/run.py --test-threads=$(TEST_THREADS) --built=nsqrd,nsqrlookupd,nsqr

# The shell blocks of README.md and docs/*.md marked `<!-- checked: ... -->`, run as written
# against the debug nsqrd started with make run's flags (its ports must be free), the debug
# binaries on the PATH as nsqrd, nsqrlookupd and nsqr (tests/docs/check_snippets.py). The
# Rust programs of docs/client.md and docs/library.md are doctests, run by `make unit`.
docs:
	$(CARGO) build -p nsqrd -p nsqrlookupd -p nsqr
	python3 tests/docs/check_snippets.py --bin-dir target/debug -- $(RUN_FLAGS)

# The broker embedded in a program (crates/nsqr-broker/examples/embedded.rs): it publishes,
# consumes and checks what it receives; a failed check exits non-zero. Built with the whole
# workspace selected, the example is the one `make unit` built (`-p nsqr-broker` alone would
# resolve other features and compile the broker again).
example:
	$(CARGO) build -q --workspace --example embedded
	timeout 300 target/debug/examples/embedded

# GET /metrics parsed by prometheus_client's parser after a known workload (debug nsqrd).
metrics: deps
	$(CARGO) build -p nsqrd
	$(VENV)/bin/python tests/metrics/check_metrics.py target/debug/nsqrd

# The keyspace through redis-py (RESP2 and RESP3): every command, pub/sub and keyspace events,
# TTLs, eviction, restart, strict-mode SIGKILL, the change feed, hostile input (debug nsqrd).
keyspace: deps
	$(CARGO) build -p nsqrd
	NSQRD_BIN=target/debug/nsqrd $(VENV)/bin/python -m unittest discover -s tests/keyspace -p 'test_*.py'

# redis-py's own test suite (its PyPI sdist's tests/, pinned in tests/redis-py/run.py) against
# the debug nsqrd, RESP2 and RESP3: every test listed in tests/redis-py/passing-resp*.txt must
# pass. `python3 tests/redis-py/run.py --all` runs the whole of its files and prints the counts.
redis-py:
	$(CARGO) build -p nsqrd
	NSQRD_BIN=target/debug/nsqrd python3 tests/redis-py/run.py

# 3 nsqrd + 2 nsqrlookupd with a go-nsq consumer (tests/cluster/run.sh; LOOKUPD_BIN overrides
# the lookupd, default target/debug/nsqrlookupd).
cluster:
	$(CARGO) build -p nsqrd -p nsqrlookupd
	tests/cluster/run.sh

# The fault-injection suite's short run (crates/nsqr-faults, docs/reliability.md): 3 debug
# nsqrd nodes with a replicated topic on ephemeral 127.0.0.1 ports, publishers and consumers,
# every nemesis once (kills, pauses, partitions through its proxy, a wiped node, a full disk on
# each node's own tmpfs, named as skipped where it cannot mount); fails if an acknowledged
# message is lost or out of order on the ordered channel, a stale leader delivers beyond its
# bound, a node whose disk was full does not catch up or a node crashes. `timeout` ends a
# stuck run with SIGTERM, on which it
# kills its nodes.
faults:
	$(CARGO) build -p nsqrd -p nsqr-faults
	timeout 900 target/debug/nsqr-faults --nsqrd target/debug/nsqrd

# Server-side dead letters with go-nsq v1.1.0's consumer (tests/queues/run.sh, debug nsqrd).
queues:
	$(CARGO) build -p nsqrd
	tests/queues/run.sh

# The transport matrix against libzmq (`nsqr-bench transports`, docs/benchmarks.md), shown
# working: nsqr-bench (debug) with the `libzmq` feature, which compiles libzmq 4.3.4 from
# source once (zeromq-src, cached in target/), runs every cell over tcp and unix (the debug
# nsqrd) and inproc with tiny counts, once each; any cell without exactly its messages fails.
# Also checks the feature's lints. Figures from a debug build on tiny counts mean nothing.
transports:
	$(CARGO) build -p nsqrd
	$(CARGO) clippy -p nsqr-bench --all-targets --features libzmq -- -D warnings
	$(CARGO) build -p nsqr-bench --features libzmq
	timeout 600 target/debug/nsqr-bench transports --nsqrd target/debug/nsqrd \
		--counts 200,100,50,20 --fanout-count 100 --reps 1 --cell-timeout 60s

# go-nsq v1.1.0's own test suite, then pynsq from PyPI (plain, TLS, snappy, deflate and
# combinations), against the debug nsqrd (see tests/conformance/*.sh; they default to
# target/release/nsqrd, from `make build`, when run by hand). The debug build is the one every
# other step already built; a fat-LTO release build would cost minutes and test the same code.
conformance:
	$(CARGO) build -p nsqrd
	NSQD_BIN=target/debug/nsqrd tests/conformance/go-nsq.sh
	NSQD_BIN=target/debug/nsqrd tests/conformance/pynsq.sh

# Fuzz every target in fuzz/ for FUZZ_TIME seconds each, on nightly with cargo-fuzz
# (docs/fuzzing.md). New inputs go to target/fuzz-corpus/<target>; a crash stops the run and
# leaves its input in fuzz/artifacts/<target>/. Not part of `make test`, which replays the
# saved corpus and regressions on stable instead.
FUZZ_TIME ?= 60
fuzz:
	@command -v cargo-fuzz >/dev/null || { echo "make fuzz needs cargo-fuzz: cargo install cargo-fuzz" >&2; exit 1; }
	@$(CARGO) +nightly --version >/dev/null 2>&1 || { echo "make fuzz needs the nightly toolchain: rustup toolchain install nightly" >&2; exit 1; }
	cd fuzz && for t in $$($(CARGO) +nightly fuzz list); do \
		mkdir -p ../target/fuzz-corpus/$$t && \
		$(CARGO) +nightly fuzz run -O -a $$t ../target/fuzz-corpus/$$t corpus/$$t -- \
			-max_total_time=$(FUZZ_TIME) -timeout=10 -print_final_stats=1 || exit 1; \
	done

# Remove build output (./data is left alone).
clean:
	$(CARGO) clean
