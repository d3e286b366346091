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

.PHONY: install lock test test-unit test-integration test-openhands test-floors ingest train evaluate sweep budget route bench bench-scale score transfer clean help

help:
	@echo "make train BENCH=swebench   # install, ingest, train -> models/$(BENCH)/"
	@echo "make test                   # unit tests + bounded integration tests on ../shared/data"
	@echo "make ingest|evaluate|sweep|budget|bench BENCH=..."

# the venv gets exactly the lock (hash-checked, no resolution), then the package itself without dependencies
$(STAMP): pyproject.toml $(LOCK)
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --require-hashes --no-deps -r $(LOCK)
	$(BIN)/pip install -q --no-deps -e .
	$(BIN)/pip check
	touch $(STAMP)

install: $(STAMP)

# one universal lock for Python >= 3.11 (3.11 and 3.12 resolved together), from pyproject.toml's ranges
UV_VENV ?= .venv-uv
lock:
	[ -x $(UV_VENV)/bin/uv ] || { $(PY) -m venv $(UV_VENV) && $(UV_VENV)/bin/pip install -q uv==0.13.9; }
	$(UV_VENV)/bin/uv pip compile pyproject.toml --universal --python-version 3.11 --generate-hashes \
	  --extra test --extra mini-swe-agent --extra inspect --extra openhands --extra dask -o $(LOCK)

data/$(BENCH)/ingest.done: $(STAMP) $(CATALOG)
	$(EARLYEVAL) ingest --bench $(BENCH)

ingest: $(STAMP)
	$(EARLYEVAL) ingest --bench $(BENCH)

train: data/$(BENCH)/ingest.done
	$(EARLYEVAL) train --bench $(BENCH)

evaluate: data/$(BENCH)/ingest.done
	$(EARLYEVAL) evaluate --bench $(BENCH)

sweep: data/$(BENCH)/ingest.done
	$(EARLYEVAL) sweep --bench $(BENCH)

budget: data/$(BENCH)/ingest.done
	$(EARLYEVAL) budget --bench $(BENCH)

bench: data/$(BENCH)/ingest.done
	$(EARLYEVAL) bench --bench $(BENCH)

# time and memory per stage at FACTORS x the runs (replicated copies in a temp dir outside the repository),
# in-process against a LocalCluster of WORKERS processes, side by side (docs/scale.md); niced: a shared machine
FACTORS ?= 1,10,100
WORKERS ?= 2
bench-scale: $(STAMP)
	nice -n 10 $(EARLYEVAL) bench-scale --bench $(BENCH) --factors $(FACTORS) --workers $(WORKERS)

# one self-contained HTML page from whichever reports/$(BENCH)/ reports exist (run evaluate/sweep/budget/route/bench first)
.PHONY: report
report: $(STAMP)
	$(EARLYEVAL) report --bench $(BENCH)

# the README's test command (CI runs exactly this): unit tests, the integration tests on a bounded
# sample of ../shared/data, then the unit tests again in a Python 3.12 venv from the same lock, where the
# OpenHands SDK adapter tests run for real (openhands-sdk needs Python >= 3.12). Every stage runs even when an earlier one fails; a summary names each, and the
# target fails if any stage did.
test: $(STAMP)
	@status=""; fail=0; \
	for stage in test-unit test-integration test-openhands; do \
	  echo "==> $$stage"; \
	  if $(MAKE) --no-print-directory $$stage; then status="$$status\n  $$stage: passed"; \
	  else status="$$status\n  $$stage: FAILED"; fail=1; fi; \
	done; \
	printf "==> make test summary:$$status\n"; exit $$fail

test-unit: $(STAMP)
	$(BIN)/python -m pytest -q -m "not integration"

test-integration: $(STAMP)
	$(BIN)/python -m pytest -q -m integration

# a python3.12 that runs (a pyenv shim without that version active does not), else pyenv's own 3.12 build
PY312 ?= $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12; do \
	  "$$p" -c "import sys" >/dev/null 2>&1 && { echo "$$p"; break; }; done)
OH_VENV := .venv-openhands
test-openhands:
	@set -e; if [ -z "$(PY312)" ]; then echo "test-openhands: no python3.12 here: Python 3.12 and the OpenHands SDK adapter not tested"; else \
	  if [ ! -f $(OH_VENV)/.installed ] || [ $(LOCK) -nt $(OH_VENV)/.installed ]; then rm -rf $(OH_VENV); $(PY312) -m venv $(OH_VENV); \
	    $(OH_VENV)/bin/pip install -q --require-hashes --no-deps -r $(LOCK); \
	    $(OH_VENV)/bin/pip install -q --no-deps -e .; $(OH_VENV)/bin/pip check; touch $(OH_VENV)/.installed; fi; \
	  $(OH_VENV)/bin/python -m pytest -q -m "not integration"; fi

# the unit and integration tests against the oldest versions pyproject.toml declares (checked by hand, not in CI:
# see docs/install.md); FLOORS_VENV is rebuilt each time
FLOORS_VENV ?= .venv-floors
test-floors:
	rm -rf $(FLOORS_VENV); $(PY) -m venv $(FLOORS_VENV)
	$(FLOORS_VENV)/bin/pip install -q -r requirements-floors.txt
	$(FLOORS_VENV)/bin/pip install -q --no-deps -e .
	$(FLOORS_VENV)/bin/pip check
	$(FLOORS_VENV)/bin/python -m pytest -q -m "not integration"
	$(FLOORS_VENV)/bin/python -m pytest -q -m integration

clean:
	rm -rf data/*/ features/*/ models/*/ reports/*/

# routing simulator (earlyeval route): escalate instead of only stopping, on pairs of SWE-bench Lite
# agents where the strong agent resolves more; each pair merges into reports/$(BENCH)/routing.json
# and draws reports/$(BENCH)/routing_<cheap>_<strong>.png.  ROUTE_BUDGET is the budget B of one pass (USD).
ROUTE_PAIRS ?= swe-agent-0.x__gpt-4:moatless-0623__claude-3.5-sonnet moatless-0609__gpt-4o:coder__gpt-4 \
	swe-agent-0.x__gpt-4:coder__gpt-4 moatless-0617__gpt-4o:moatless-0623__claude-3.5-sonnet
ROUTE_BUDGET ?= 100
route: data/$(BENCH)/ingest.done
	@for p in $(ROUTE_PAIRS); do \
		$(EARLYEVAL) route --bench $(BENCH) --cheap $${p%%:*} --strong $${p##*:} --budget $(ROUTE_BUDGET) || exit 1; \
	done

# cross-benchmark transfer table (reports/transfer/transfer.md); needs the benchmarks ingested
transfer: $(STAMP)
	$(EARLYEVAL) ingest --bench swebench
	$(EARLYEVAL) ingest --bench tau2
	$(EARLYEVAL) ingest --bench toolathlon
	$(EARLYEVAL) transfer --train swebench --test toolathlon
	$(EARLYEVAL) transfer --train swebench --test tau2
	$(EARLYEVAL) transfer --train tau2 --test toolathlon
	$(EARLYEVAL) transfer --train toolathlon --test tau2
	$(EARLYEVAL) transfer --train tau2 --test swebench
	$(EARLYEVAL) transfer --train toolathlon --test swebench
