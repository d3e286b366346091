# earlyeval: every target takes BENCH=<catalog name> (data/<bench>.toml).
BENCH ?= swebench
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EARLYEVAL := $(BIN)/earlyeval
STAMP := $(VENV)/.installed


.PHONY: install test test-openhands ingest train evaluate sweep budget route bench score transfer clean help

help:
	@echo "make train BENCH=swebench   # install, ingest, train -> models/$(BENCH)/"
	@echo "make test                   # unit tests + bounded integration tests on ../shared/data"
	@echo "make ingest|evaluate|sweep|budget|bench BENCH=..."

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[test,mini-swe-agent,inspect]"
	touch $(STAMP)

install: $(STAMP)

data/$(BENCH)/ingest.done: $(STAMP) data/$(BENCH).toml
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

# the README's test command (CI runs exactly this): unit tests, the integration tests on a
# bounded sample of ../shared/data, then the OpenHands SDK adapter in a Python 3.12 venv
# (openhands-sdk needs Python >= 3.12; skipped with a message where no python3.12 exists)
test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not integration"
	$(BIN)/python -m pytest -q -m integration
	$(MAKE) --no-print-directory test-openhands

# a python3.12 that runs (a pyenv shim without that version active does not), else pyenv's own 3.12 build
PY312 ?= $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12; do \
	  "$$p" -c "import sys" >/dev/null 2>&1 && { echo "$$p"; break; }; done)
test-openhands:
	@set -e; if [ -z "$(PY312)" ]; then echo "test-openhands: no python3.12 here, OpenHands SDK adapter tested on stand-ins only"; else \
	  if [ ! -x .venv-openhands/bin/python ]; then rm -rf .venv-openhands; $(PY312) -m venv .venv-openhands; \
	    .venv-openhands/bin/pip install -q --upgrade pip; .venv-openhands/bin/pip install -q -e ".[test,openhands]"; fi; \
	  .venv-openhands/bin/python -m pytest -q tests/test_adapter_openhands.py tests/test_adapter_base.py; fi

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
