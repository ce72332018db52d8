# reclaimlab: every target sets up what it needs in .venv; nothing is installed by hand.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)
DEPS_STAMP := $(VENV)/.deps-stamp
EXT_STAMP := $(VENV)/.ext-stamp
RUST_SRC := $(shell find crates -name '*.rs' -o -name Cargo.toml 2>/dev/null) Cargo.toml

.PHONY: all develop demo test test-rust test-python bench lint fuzz clean

all: develop

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(DEPS_STAMP): requirements-dev.txt | $(PY)
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

# The extension module reclaimlab._core, built in release mode (the simulator is the engine).
$(EXT_STAMP): $(DEPS_STAMP) $(RUST_SRC) pyproject.toml
	maturin develop --release --quiet
	touch $@

develop: $(EXT_STAMP)

demo: develop
	reclaimlab demo

test: develop test-rust test-python

test-rust:
	cargo test --workspace --exclude reclaim-py

test-python: develop
	$(PY) -m pytest -q

bench: develop
	cargo bench -p reclaim-sim --bench sim
	cargo bench -p reclaim-trace --bench parse
	reclaimlab bench
	$(PY) -m reclaimlab.tracing.bench

lint: develop
	cargo clippy --workspace --all-targets -- -D warnings
	cargo fmt --all -- --check

# Fuzz the trace parser (not part of `make test`): needs the nightly toolchain and
# cargo-fuzz (`cargo install cargo-fuzz`). FUZZ_SECONDS bounds the run.
FUZZ_SECONDS ?= 300
fuzz:
	cd fuzz && cargo +nightly fuzz run parse -- -max_total_time=$(FUZZ_SECONDS)

clean:
	rm -rf $(VENV) target
