# kro for Python: developer workflow. `make test` runs everything; `make run` starts kro locally.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
STAMP := $(VENV)/.installed

.PHONY: help venv lint types unit unit-quick unit-binaries e2e test testbin cluster-up cluster-down cluster-status run bench clean check-no-leaks

help:
	@echo "make test      lint + types + unit + e2e (builds/starts a local control plane as needed)"
	@echo "make unit      unit-quick (no built binary needed), then unit-binaries (helm, ...)"
	@echo "make run       the kro controller on a local control plane, with an example applied"
	@echo "make testbin   build (or reuse) the control-plane binaries"
	@echo "make cluster-up / cluster-down / cluster-status"
	@echo "make image     the controller image, with podman (a Debian 12 base made with debootstrap)"
	@echo "make image-test  that image's controller, as the chart runs it, on a local control plane"

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check kro tools tests e2e bench
	$(BIN)/lint-imports

types: $(STAMP)
	$(BIN)/mypy

# Two passes, each test in exactly one (the `needs_binaries` mark, tests/conftest.py): the tests
# that need no built binary never wait for the testbin build lock, which `.ci/run`'s background
# build holds for minutes on a fresh machine. The others build (or wait for) what they run
# through their fixtures; `make test` runs them after `testbin`, so the wait shows its progress.
unit: unit-quick unit-binaries

unit-quick: $(STAMP)
	$(BIN)/pytest tests -q -m "not needs_binaries"

unit-binaries: $(STAMP)
	$(BIN)/pytest tests -q -m needs_binaries

testbin: $(STAMP)
	$(PY) -m kro.testing.testbin ensure

RUN_DIRS := $(CURDIR)/.e2e-cluster-dirs
TEMP_BEFORE := $(CURDIR)/.e2e-temp-before

e2e: $(STAMP) testbin
	@rm -f $(RUN_DIRS)
	@$(PY) -m kro.testing.processes --record-temp $(TEMP_BEFORE)
	KRO_TEST_RUN_DIRS_FILE=$(RUN_DIRS) $(BIN)/pytest e2e -q -p no:cacheprovider; \
	  status=$$?; $(MAKE) --no-print-directory check-no-leaks || status=1; exit $$status

# After the e2e run, no control-plane process may remain (unless a cluster was reused on purpose),
# and no new kro-* entry in the temp folder (cluster data, keys, kubeconfigs): each is named.
check-no-leaks: $(STAMP)
	@if [ -n "$$KUBECONFIG$$KRO_TEST_KUBECONFIG" ]; then echo "reused an existing cluster"; \
	  $(PY) -m kro.testing.processes --temp-before $(TEMP_BEFORE) --no-processes; \
	else $(PY) -m kro.testing.processes --run-dirs-file $(RUN_DIRS) --temp-before $(TEMP_BEFORE); fi

test: lint types unit-quick testbin unit-binaries e2e

cluster-up: $(STAMP)
	$(PY) -m kro.testing.cluster up

cluster-down: $(STAMP)
	$(PY) -m kro.testing.cluster down

cluster-status: $(STAMP)
	$(PY) -m kro.testing.cluster status

# One at a time (a second one exits 1 and says who runs); RUN_ARGS passes flags, e.g.
# RUN_ARGS='--metrics-bind-address=127.0.0.1:9078' when port 8078 is taken.
run: $(STAMP)
	$(PY) -m tools.runlocal $(RUN_ARGS)

bench: $(STAMP)
	@for f in bench/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

# The controller image (tools/image.py): built with podman, on a Debian 12 base that
# debootstrap makes and ~/.cache/kro-image keeps. Not part of `make test`: it needs root and
# podman, and takes minutes. Both skip, with exit 0 and a SKIP line, where they cannot run.
.PHONY: image image-test
image: $(STAMP)
	$(PY) -m tools.image build

image-test: $(STAMP)
	$(PY) -m tools.image test

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
