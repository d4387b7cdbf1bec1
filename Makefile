# nsqr: build, run and test nsqrd. `make test` is what CI runs (.ci/run).

CARGO ?= cargo
DATA_PATH ?= ./data

.PHONY: run build test deps lint unit conformance clean

# Build and run nsqrd in the foreground on nsqd's default addresses
# (TCP 0.0.0.0:4150, HTTP 0.0.0.0:4151), keeping its data in $(DATA_PATH).
run:
	mkdir -p $(DATA_PATH)
	$(CARGO) run --release -p nsqrd -- --data-path=$(DATA_PATH)

# Release build of nsqrd (target/release/nsqrd): the binary the conformance suite runs.
build:
	$(CARGO) build --release -p nsqrd

# Everything CI checks, in order; the first failing step fails `make test`.
test: deps lint unit conformance

# Install what the tests need: rustfmt and clippy (only if missing: rustup's default profile
# has them); Go (>= 1.20) and Python 3 (with venv) must already be installed. pynsq.sh
# installs its Python packages itself, at exact versions, under target/.
deps:
	@$(CARGO) fmt --version >/dev/null 2>&1 || rustup component add rustfmt
	@$(CARGO) clippy --version >/dev/null 2>&1 || rustup component add clippy
	@command -v go >/dev/null || { echo "make test needs Go >= 1.20 for the go-nsq conformance suite" >&2; exit 1; }
	@command -v python3 >/dev/null || { echo "make test needs python3 (with venv) for the pynsq conformance suite" >&2; exit 1; }

# Formatting and lints; clippy warnings are errors.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The workspace's unit and integration tests (debug build).
unit:
	$(CARGO) test --workspace

# go-nsq v1.1.0's own test suite, then pynsq from PyPI (plain, TLS, snappy, deflate and
# combinations), against target/release/nsqrd (see tests/conformance/*.sh).
conformance: build
	tests/conformance/go-nsq.sh
	tests/conformance/pynsq.sh

# Remove build output (./data is left alone).
clean:
	$(CARGO) clean
