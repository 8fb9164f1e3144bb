# polyc: `make run` builds and runs the main job; `make test` runs the whole suite.
# Both install missing system packages first (scripts/setup.sh).

CARGO ?= cargo
RELEASE_BIN := target/release/polyc

.PHONY: all setup build run test bench bench-setup fmt clean

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
# The CPU comparison needs Polly (clang-16, libpolly-16-dev, libomp-16-dev) and OpenBLAS.
BENCH_PACKAGES := clang-16 libpolly-16-dev libomp-16-dev libopenblas-dev

bench-setup:
	@scripts/setup.sh $(BENCH_PACKAGES)

bench: bench-setup
	$(CARGO) bench --workspace --locked
	$(CARGO) build --release --locked
	OMP_NUM_THREADS=$$(nproc) $(RELEASE_BIN) bench examples/polybench/*.pk

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
