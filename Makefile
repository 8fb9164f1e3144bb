# polyc: `make run` builds and runs the main job; `make test` runs the whole suite.
# Both install missing system packages first (scripts/setup.sh).

CARGO ?= cargo
RELEASE_BIN := target/release/polyc

.PHONY: all setup build run test bench fmt clean

all: build

setup:
	@scripts/setup.sh

build: setup
	$(CARGO) build --release --locked

# The main job: the whole pipeline on the embedded default example (gemm).
run: build
	$(RELEASE_BIN) demo

test: setup
	$(CARGO) test --workspace --release --locked --no-fail-fast

# Benchmarks (not part of the test suite; results go to docs/performance.md by hand).
bench: setup
	$(CARGO) bench --workspace --locked

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
