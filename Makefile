# The two commands: `make run` (install, build, launch) and `make test` (install, whole suite).
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
# tch (the neural crate) builds against the venv's PyPI torch.
export LIBTORCH_USE_PYTORCH := 1
export PATH := $(CURDIR)/.venv/bin:$(HOME)/.cargo/bin:$(PATH)
APP := target/debug/timbre-studio
# The reference Python (the parity tests start it dozens of times) keeps its bytecode in .venv:
# where PYTHONDONTWRITEBYTECODE is set, as on CI's VM, every start compiled torch's modules
# anew, 4.5 s of CPU each.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test setup setup-test app build-test test-rust test-ui test-e2e lint bindings bench bench-live bench-isolate bench-cover fuzz package package-test cuda-runtime-catalogue

run: setup app
	WEBKIT_DISABLE_DMABUF_RENDERER=1 $(APP)

test: setup-test test-rust test-ui test-e2e

setup:
	scripts/setup.sh

setup-test:
	scripts/timed.sh setup scripts/setup.sh --test

# The app with its UI embedded (a plain `cargo build` would load the dev server instead).
app:
	npx tauri build --debug --no-bundle

# Everything the suite runs, in one cargo invocation: the workspace's crates with all their
# targets (tests, benches, the `timbre` binary the integration tests drive, the app with its UI
# embedded, what `make app` builds). Separate invocations each resolve features their own way and
# built 400 crates twice. Clippy lints the workspace's crates in that same compilation:
# clippy-driver as rustc's wrapper for workspace members (what `cargo clippy` sets, but with code
# generated), warnings as errors, so the lint costs no second pass over the dependencies.
TEST_FEATURES := --features timbre-studio/custom-protocol
CLIPPY_BUILD := RUSTC_WORKSPACE_WRAPPER=clippy-driver CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
build-test: ui/dist/index.html
	scripts/timed.sh build env $(CLIPPY_BUILD) cargo build --workspace --all-targets $(TEST_FEATURES)

# The UI the app embeds, built again only when its sources changed (a rebuilt dist/ makes cargo
# compile the app again).
ui/dist/index.html: ui/index.html $(shell find ui/src -type f) package-lock.json vite.config.ts svelte.config.js
	scripts/timed.sh ui-build npm run build

# libtorch's OpenMP threads spin while they wait (libgomp's default); the tests run several
# libtorch processes at once on two cores (the CLI's tests two at a time, each child with a thread
# per core), and spinning threads starved the ones they waited for: the CLI's tests took 359 s
# (680 s of CPU), 167 s with waiting threads asleep (282 s).
test-rust: build-test
	scripts/timed.sh rust-tests env $(CLIPPY_BUILD) OMP_WAIT_POLICY=PASSIVE cargo test --workspace $(TEST_FEATURES)

test-ui:
	scripts/timed.sh ui-tests npm run test:ui

test-e2e: build-test
	scripts/timed.sh e2e tests/e2e/run.sh

# The .deb and the self-contained .tar.gz, with libtorch's CPU runtime inside, into
# target/package/ (a release build: about 15 minutes from a clean clone on 2 cores).
package: setup ui/dist/index.html
	scripts/package.sh

# The packages on clean Debian 12 and Ubuntu 24.04 roots made with debootstrap (as root): the
# .deb installed, its RUNPATHs and libraries, --version, doctor, a conversion, the file
# associations, the app's first window, removal; the .tar.gz from a read-only folder on both.
# Not in CI: the release build of `make package` alone takes 18 minutes on 2 cores, and CI is
# at 28 of its 30-minute budget; the test itself takes 2 minutes once the roots are cached.
package-test: package
	scripts/package_test.sh

# models/cuda-runtime.json anew from PyPI for the venv's torch (when the torch version changes).
cuda-runtime-catalogue: setup
	scripts/cuda_runtime_catalogue.py

# The UI's TypeScript types written anew from the Rust types, and the UI tests' fixture of the
# defaults commands' answers (src-tauri/src/bindings.rs).
bindings:
	TIMBRE_WRITE_BINDINGS=1 cargo test -p timbre-studio --lib bindings

# Formatting and the UI's types; Clippy runs in build-test.
lint: build-test
	scripts/timed.sh lint sh -c 'cargo fmt --all --check && npm run check'

# The conversion benchmark against the reference Python pipeline, written into
# docs/PERFORMANCE.md (about 15 minutes on 2 cores; BENCH_THREADS=N for N libtorch threads;
# BENCH_ISA=avx2 as on a CPU without AVX-512).
bench: setup
	bench/run.sh

# The live engine's per-block time against rvc-next's StreamEngine, into docs/PERFORMANCE.md.
bench-live: setup
	bench/live.sh

# Full-size random-weight BS-RoFormer and Mel-Band RoFormer separating generated audio on the
# CPU (docs/PERFORMANCE.md, "Isolation"); BENCH_SECS, BENCH_THREADS (2), BENCH_MODELS (bs,mel).
bench-isolate:
	cargo bench -p timbre-nn --bench separation

# The cover job's stage times for a 3-minute song (BENCH_SECS) with full-size random-weight models
# on the CPU (bench/cover.sh); writes its section of docs/PERFORMANCE.md. About an hour on 2 cores.
bench-cover: setup
	bench/cover.sh

# Each cargo-fuzz target of fuzz/ for FUZZ_SECONDS (60), from corpora fuzz/seed.sh fills; fails on
# the first crash (its input lands in fuzz/artifacts/<target>/). FUZZ_TARGETS picks targets.
# Built without a sanitizer: the code is safe Rust, and libtorch, which every target links,
# is not built for one.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= torch_file faiss_index roformer_config audio_decode wav_header voice_zip
fuzz:
	@cargo +nightly --version > /dev/null 2>&1 || { echo "make fuzz needs the nightly toolchain: rustup toolchain install nightly" >&2; exit 1; }
	@command -v cargo-fuzz > /dev/null || cargo install cargo-fuzz --locked
	fuzz/seed.sh
	cd fuzz && for target in $(FUZZ_TARGETS); do \
		echo "== $$target ($(FUZZ_SECONDS) s)"; \
		cargo +nightly fuzz run --sanitizer none "$$target" "corpus/$$target" -- \
			-max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096 -timeout=30 -max_len=65536 || exit 1; \
	done
