# Kiln — every command a newcomer needs. `make test` and `make serve` install what they need.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
export CHROMEDRIVER ?= /usr/bin/chromedriver
export WASM_BINDGEN_TEST_TIMEOUT ?= 300
# Native tests share one llvmpipe/Vulkan device; two threads match this machine's cores.
export RUST_TEST_THREADS ?= 2
# Vulkan loaders complain when this is unset; any private directory will do.
export XDG_RUNTIME_DIR ?= /tmp/kiln-xdg-$(shell id -u)

.PHONY: types lint test test-native test-python test-browser test-fuzz test-npm test-e2e npm build-page serve setup-test setup-serve bench bench-torch clean

test: setup-test lint test-native test-python test-browser test-npm test-e2e test-fuzz
	@echo "make test: all suites passed"

# js/kiln-types.d.ts from the Rust structs (ts-rs); `make test` fails while it is stale.
types:
	KILN_WRITE_TYPES=1 cargo test --lib api::typescript

# Style and lints, natively and for the browser builds: the npm package's and the page's first
# wasm (no default features) (rustfmt.toml sets the line width).
lint: setup-test
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --target wasm32-unknown-unknown --lib -- -D warnings
	cargo clippy --target wasm32-unknown-unknown --lib --no-default-features -- -D warnings

setup-test:
	@mkdir -p -m 700 $(XDG_RUNTIME_DIR) target
	@bash scripts/setup.sh test

setup-serve:
	@bash scripts/setup.sh serve

test-native:
	cargo test --all-targets -- --nocapture 2>&1 | tee target/native-tests.log
	cargo test --doc 2>&1 | tee target/doc-tests.log
	@echo "native kernel checks: $$(grep -o 'kernel checks: [^:]*: [0-9]* passed' target/native-tests.log | awk '{s+=$$4} END {print s+0}') passed"

# Export folders checked by NumPy and the safetensors library (tests/python/check_export.py):
# a Llama and an MLP that `kiln` trains, exports and imports here, and the Transformers fixture.
test-python: setup-test
	bash scripts/check-export.sh 2>&1 | tee target/python-tests.log

test-browser:
	cargo test --target wasm32-unknown-unknown --test kernels --test gpu --test recovery --test soak --test limits -- --nocapture 2>&1 | tee target/browser-tests.log
	@echo "browser kernel checks: $$(grep -o 'kernel checks: [^:]*: [0-9]* passed' target/browser-tests.log | awk '{s+=$$4} END {print s+0}') passed"

# The npm package kiln-gpu in pkg/: wasm-bindgen --target web, wasm-opt -O (binaryen 132 from
# node_modules), js/kiln.js + kiln.d.ts, npm/package.json + README.md.
npm: setup-test
	bash scripts/build-npm.sh

# Packs pkg/, installs it into a fresh Node project (with webgpu and vite@7 from the npm
# registry) and trains there on Dawn, then in a Vite app in headless Chromium.
test-npm: npm
	node tests/npm/run.mjs 2>&1 | tee target/npm-tests.log

# Each cargo-fuzz target for FUZZ_SECONDS (default 30; FUZZ_SECONDS=600 for a longer hunt):
# checkpoint loader, config parser, URL-state decoder, CSV/text import.
test-fuzz:
	bash scripts/fuzz.sh

# Native benchmarks on the best adapter: table on stdout, JSON in target/bench-native.json.
# BENCH_ARGS=--quick keeps sizes a CPU adapter (llvmpipe) finishes in about a minute.
bench: setup-test
	cargo run --release --bin kiln -- bench $(BENCH_ARGS) --json target/bench-native.json

# The PyTorch side of the comparison (needs a Python with torch; CUDA when there is a GPU).
bench-torch:
	python3 bench/torch_reference.py --json target/bench-torch.json

serve: setup-serve
	PATH="$(CURDIR)/node_modules/.bin:$$PATH" trunk serve

# The page as `make serve` builds it, in release, into dist/: Cargo's `page` profile, then
# wasm-opt -Os from npm's binaryen 132 (first on PATH; Trunk.toml pins the version, since
# Debian's binaryen 108 breaks Rust 1.95 wasm).
build-page: setup-serve
	PATH="$(CURDIR)/node_modules/.bin:$$PATH" trunk build --release

# End-to-end tests of the playground in headless Chromium (SwiftShader WebGPU); screenshots in
# test-output/. Each file prints "e2e <suite>: N passed, M failed": the page's features, the
# user's own data (text, points, CSVs), its resilience (device loss, hidden/frozen tab, no WebGPU or adapter, insecure origin), its export and import of zipped
# folders, and the page under `trunk serve`.
test-e2e: setup-test build-page
	node tests/e2e/playground.test.mjs dist
	node tests/e2e/own-data.test.mjs dist
	node tests/e2e/resilience.test.mjs dist
	node tests/e2e/export.test.mjs dist
	PATH="$(CURDIR)/node_modules/.bin:$$PATH" node tests/e2e/serve.test.mjs

clean:
	cargo clean
	rm -rf dist pkg node_modules test-output
