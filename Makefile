# reclaimlab: every target sets up what it needs in .venv; nothing is installed by hand.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)
DEPS_STAMP := $(VENV)/.deps-stamp
EXT_STAMP := $(VENV)/.ext-stamp
RUST_SRC := $(shell find crates -name '*.rs' -o -name Cargo.toml 2>/dev/null) Cargo.toml

.PHONY: all develop browser demo test test-rust test-python bench lint fuzz clean

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

# The HTML report's browser test drives Debian's Chromium through Playwright's Python API
# (installed into .venv from requirements-dev.txt). Playwright's own browser download is not
# used: the test launches $(CHROMIUM). Fonts come with it so the screenshots have text.
CHROMIUM ?= /usr/bin/chromium
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
browser: $(DEPS_STAMP)
	@test -x $(CHROMIUM) || { $(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-liberation; }

demo: develop
	reclaimlab demo

test: develop test-rust test-python

test-rust:
	cargo test --workspace --exclude reclaim-py

test-python: develop browser
	RECLAIMLAB_CHROMIUM=$(CHROMIUM) $(PY) -m pytest -q

bench: develop
	@command -v zstd >/dev/null || { $(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y zstd; }
	cargo bench -p reclaim-sim --bench sim
	cargo bench -p reclaim-trace --bench parse
	reclaimlab bench
	reclaimlab bench --swap
	reclaimlab bench --writeback
	reclaimlab bench --numa
	reclaimlab bench --highalloc
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
