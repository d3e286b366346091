# earlyeval: every target takes BENCH=<catalog name> (earlyeval/catalogs/<bench>.toml).
BENCH ?= swebench
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EARLYEVAL := $(BIN)/earlyeval
STAMP := $(VENV)/.installed
# exact versions and hashes of every dependency, Python 3.11 and 3.12 (make lock rewrites it)
LOCK := requirements.lock
CATALOG := earlyeval/catalogs/$(BENCH).toml

.PHONY: install install-sweagent lock docs lint test test-unit test-integration test-openhands test-floors ingest train evaluate sweep budget route bench bench-scale score transfer clean help

# every target with a `## ...` comment on its rule line is listed, in file order (tests/test_docs.py checks that
# each .PHONY target is)
help:  ## this list
	@echo "make TARGET [BENCH=$(BENCH)]   (BENCH: a catalog, earlyeval/catalogs/<bench>.toml)"
	@awk 'BEGIN {FS = ":[^#]*## "} /^[a-zA-Z0-9_.-]+:.*## / {printf "  make %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# the venv gets exactly the lock (hash-checked, no resolution), then the package itself without dependencies
$(STAMP): pyproject.toml $(LOCK)
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --require-hashes --no-deps -r $(LOCK)
	$(BIN)/pip install -q --no-deps -e .
	$(BIN)/pip check
	touch $(STAMP)

install: $(STAMP)  ## .venv from requirements.lock (hash-checked), the package editable

# SWE-agent 1.1.0 is on no package index (PyPI's `sweagent` is a 2024 placeholder): its source is vendored beside
# the data, in ../shared/vendor.  Its dependencies are in the lock (`make lock` resolves them together with the
# rest); the package itself is checked against its sha256, unpacked to .vendor/ and installed there editable,
# without dependencies, so that it finds its config/ and tools/ folders as in a checkout (docs/integrations.md).
SHARED ?= ../shared
SWEAGENT_TARBALL ?= $(SHARED)/vendor/SWE-agent-1.1.0-src.tar.gz
SWEAGENT_SHA256 := a452fae0d86fde4308722aa1bd2379506bd308f8358592c8a97cc8a7a6fc5f16
SWEAGENT_SRC := .vendor/SWE-agent-1.1.0
SWEAGENT_STAMP := $(VENV)/.sweagent-installed
# the test stages install it when the tarball is there (CI: always); without it the SWE-agent tests skip, saying so
SWEAGENT_DEP := $(if $(wildcard $(SWEAGENT_TARBALL)),$(SWEAGENT_STAMP),)

$(SWEAGENT_STAMP): $(STAMP) $(SWEAGENT_TARBALL)
	echo "$(SWEAGENT_SHA256)  $(SWEAGENT_TARBALL)" | sha256sum -c --quiet -
	rm -rf $(SWEAGENT_SRC) && mkdir -p .vendor && tar -xzf $(SWEAGENT_TARBALL) -C .vendor
	mkdir -p $(SWEAGENT_SRC)/trajectories
	$(BIN)/pip install -q --no-deps -e $(SWEAGENT_SRC)
	$(BIN)/pip check
	touch $@

install-sweagent: $(SWEAGENT_STAMP)  ## SWE-agent 1.1.0 from the vendored tarball, editable in .vendor/

# one universal lock for Python >= 3.11 (3.11 and 3.12 resolved together), from pyproject.toml's ranges and the
# vendored SWE-agent's own requirements (the package itself is not emitted: it installs from the tarball)
UV_VENV ?= .venv-uv
lock:  ## rewrite requirements.lock from pyproject.toml (uv, Python 3.11 and 3.12, hashes)
	[ -x $(UV_VENV)/bin/uv ] || { $(PY) -m venv $(UV_VENV) && $(UV_VENV)/bin/pip install -q uv==0.13.9; }
	[ -f $(SWEAGENT_TARBALL) ] || { echo "make lock: $(SWEAGENT_TARBALL) missing (SWE-agent's requirements are locked from it)"; exit 1; }
	echo "sweagent @ file:$(abspath $(SWEAGENT_TARBALL))" | $(UV_VENV)/bin/uv pip compile pyproject.toml - --universal \
	  --python-version 3.11 --generate-hashes --no-emit-package sweagent \
	  --extra train --extra cli --extra plots --extra test --extra lint --extra mini-swe-agent --extra inspect --extra openhands --extra dask --extra docs -o $(LOCK)

data/$(BENCH)/ingest.done: $(STAMP) $(CATALOG)
	$(EARLYEVAL) ingest --bench $(BENCH)

ingest: $(STAMP)  ## read the catalog's runs -> data/$(BENCH)/, reports/$(BENCH)/ingest.json
	$(EARLYEVAL) ingest --bench $(BENCH)

train: data/$(BENCH)/ingest.done  ## install, ingest (if needed), train -> models/$(BENCH)/
	$(EARLYEVAL) train --bench $(BENCH)

evaluate: data/$(BENCH)/ingest.done  ## leave-one-agent-out -> reports/$(BENCH)/loao.json
	$(EARLYEVAL) evaluate --bench $(BENCH)

sweep: data/$(BENCH)/ingest.done  ## threshold frontier -> reports/$(BENCH)/sweep.csv
	$(EARLYEVAL) sweep --bench $(BENCH)

budget: data/$(BENCH)/ingest.done  ## remaining-budget intervals -> reports/$(BENCH)/budget.json
	$(EARLYEVAL) budget --bench $(BENCH)

bench: data/$(BENCH)/ingest.done  ## Monitor latency -> reports/$(BENCH)/latency.json
	$(EARLYEVAL) bench --bench $(BENCH)

# time and memory per stage at FACTORS x the runs (replicated copies in a temp dir outside the repository),
# in-process against a LocalCluster of WORKERS processes, side by side (docs/scale.md); niced: a shared machine
FACTORS ?= 1,10,100
WORKERS ?= 2
bench-scale: $(STAMP)  ## scaling benchmark: in-process vs a LocalCluster on replicated runs (FACTORS=, WORKERS=)
	nice -n 10 $(EARLYEVAL) bench-scale --bench $(BENCH) --factors $(FACTORS) --workers $(WORKERS)

# one self-contained HTML page from whichever reports/$(BENCH)/ reports exist (run evaluate/sweep/budget/route/bench first)
.PHONY: report
docs: $(STAMP)  ## the API reference from the docstrings (mkdocs + mkdocstrings, strict: a warning fails) -> site/
	$(BIN)/python -m mkdocs build --strict --site-dir site

report: $(STAMP)  ## one HTML page from the reports -> reports/$(BENCH)/report.html
	$(EARLYEVAL) report --bench $(BENCH)

# the README's test command (CI runs exactly this): the lint gate, unit tests, the integration tests on a bounded
# sample of ../shared/data, then the unit tests again in a Python 3.12 venv from the same lock, where the
# OpenHands SDK adapter tests run for real (openhands-sdk needs Python >= 3.12). Every stage runs even when an earlier one fails; a summary names each, and the
# target fails if any stage did.
# the lint gate (make test's first stage): ruff's pyflakes and isort rules and its formatter over the package, the
# tests and the tools (pyproject.toml [tool.ruff]), mypy strict on the runtime (core/, model/, live/ and
# integrations/base.py: pyproject.toml [tool.mypy]), and no new bare ValueError/RuntimeError beside earlyeval/core/errors.py's
# tree (tools/bare_raises.py: a ceiling per folder, which only shrinks)
LINTED := earlyeval tests tools
lint: $(STAMP)  ## ruff (pyflakes, isort, format --check) over the package, tests and tools; mypy strict on the runtime; no new bare raise ValueError/RuntimeError (tools/bare_raises.py)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy
	$(BIN)/python tools/bare_raises.py

test: $(STAMP)  ## lint, unit, integration and OpenHands stages, each reported (what CI runs)
	@status=""; fail=0; \
	for stage in lint test-unit test-integration test-openhands; do \
	  echo "==> $$stage"; \
	  if $(MAKE) --no-print-directory $$stage; then status="$$status\n  $$stage: passed"; \
	  else status="$$status\n  $$stage: FAILED"; fail=1; fi; \
	done; \
	printf "==> make test summary:$$status\n"; exit $$fail

test-unit: $(STAMP) $(SWEAGENT_DEP)  ## unit tests (no data)
	$(BIN)/python -m pytest -q -m "not integration"

test-integration: $(STAMP) $(SWEAGENT_DEP)  ## integration tests on a bounded sample of ../shared/data
	$(BIN)/python -m pytest -q -m integration

# a python3.12 that runs (a pyenv shim without that version active does not), else pyenv's own 3.12 build
PY312 ?= $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12; do \
	  "$$p" -c "import sys" >/dev/null 2>&1 && { echo "$$p"; break; }; done)
OH_VENV := .venv-openhands
# The 3.12 stage runs only what needs Python 3.12: the unit tests marked `openhands` (pyproject.toml), i.e. those
# that drive the real openhands-sdk, plus tests/core and tests/live as a 3.12 smoke of the runtime (the lock resolves
# other numpy/lightgbm builds on 3.12); the rest of the unit tier already ran in test-unit. tests/conftest.py fails
# an unmarked unit test that skips for want of the SDK, so none can fall between the two stages.
test-openhands:  ## the OpenHands SDK unit tests (marker `openhands`) in a Python 3.12 venv
	@set -e; if [ -z "$(PY312)" ]; then echo "test-openhands: no python3.12 here: Python 3.12 and the OpenHands SDK adapter not tested"; else \
	  if [ ! -f $(OH_VENV)/.installed ] || [ $(LOCK) -nt $(OH_VENV)/.installed ]; then rm -rf $(OH_VENV); $(PY312) -m venv $(OH_VENV); \
	    $(OH_VENV)/bin/pip install -q --require-hashes --no-deps -r $(LOCK); \
	    $(OH_VENV)/bin/pip install -q --no-deps -e .; $(OH_VENV)/bin/pip check; touch $(OH_VENV)/.installed; fi; \
	  $(OH_VENV)/bin/python -m pytest -q -m "not integration" tests/core tests/live; \
	  $(OH_VENV)/bin/python -m pytest -q -m "openhands and not integration"; fi

# the unit and integration tests against the oldest versions pyproject.toml declares (checked by hand, not in CI:
# see docs/install.md); FLOORS_VENV is rebuilt each time
FLOORS_VENV ?= .venv-floors
test-floors:  ## unit + integration tests at the oldest declared versions
	rm -rf $(FLOORS_VENV); $(PY) -m venv $(FLOORS_VENV)
	$(FLOORS_VENV)/bin/pip install -q -r requirements-floors.txt
	$(FLOORS_VENV)/bin/pip install -q --no-deps -e .
	$(FLOORS_VENV)/bin/pip check
	$(FLOORS_VENV)/bin/python -m pytest -q -m "not integration"
	$(FLOORS_VENV)/bin/python -m pytest -q -m integration

clean:  ## remove data/, features/, models/, reports/ outputs
	rm -rf data/*/ features/*/ models/*/ reports/*/

# routing simulator (earlyeval route): escalate instead of only stopping, on pairs of SWE-bench Lite
# agents where the strong agent resolves more; each pair merges into reports/$(BENCH)/routing.json
# and draws reports/$(BENCH)/routing_<cheap>_<strong>.png.  ROUTE_BUDGET is the budget B of one pass (USD).
ROUTE_PAIRS ?= swe-agent-0.x__gpt-4:moatless-0623__claude-3.5-sonnet moatless-0609__gpt-4o:coder__gpt-4 \
	swe-agent-0.x__gpt-4:coder__gpt-4 moatless-0617__gpt-4o:moatless-0623__claude-3.5-sonnet
ROUTE_BUDGET ?= 100
route: data/$(BENCH)/ingest.done  ## routing simulator over ROUTE_PAIRS -> reports/$(BENCH)/routing.json
	@for p in $(ROUTE_PAIRS); do \
		$(EARLYEVAL) route --bench $(BENCH) --cheap $${p%%:*} --strong $${p##*:} --budget $(ROUTE_BUDGET) || exit 1; \
	done

# score someone else's runs with the trained model: make score RUNS=path/to/runs [FORMAT=auto] [AS_OF=YYYY-MM-DD]
RUNS ?=
FORMAT ?= auto
AS_OF ?=
score: $(STAMP)  ## score RUNS=<folder> with models/$(BENCH) -> reports/score/<folder name>/
	@[ -n "$(RUNS)" ] || { echo "make score: give RUNS=<a folder of runs> (FORMAT=auto, AS_OF=YYYY-MM-DD optional)"; exit 2; }
	$(EARLYEVAL) score --model models/$(BENCH) --runs "$(RUNS)" --format $(FORMAT) $(if $(AS_OF),--as-of $(AS_OF))

# cross-benchmark transfer table (reports/transfer/transfer.md); needs the benchmarks ingested
transfer: $(STAMP)  ## cross-benchmark transfer table -> reports/transfer/
	$(EARLYEVAL) ingest --bench swebench
	$(EARLYEVAL) ingest --bench tau2
	$(EARLYEVAL) ingest --bench toolathlon
	$(EARLYEVAL) transfer --train swebench --test toolathlon
	$(EARLYEVAL) transfer --train swebench --test tau2
	$(EARLYEVAL) transfer --train tau2 --test toolathlon
	$(EARLYEVAL) transfer --train toolathlon --test tau2
	$(EARLYEVAL) transfer --train tau2 --test swebench
	$(EARLYEVAL) transfer --train toolathlon --test swebench
