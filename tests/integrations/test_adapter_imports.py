"""Importing an adapter loads the runtime only (issue 44): nothing of the ingest driver, ``tables/``, ``fitting/``,
``evaluation/``, ``workflows/`` or ``app/`` (nor the budget maths, the cluster or the reports).  Before issue 44 the
mini-swe-agent adapter loaded 59 earlyeval modules, the ingest driver and ``tables.validate`` among them, to reuse
one step builder; the step readers (``earlyeval.steps``) sit below both now.

Each import runs in a fresh interpreter (this test process has long imported everything)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import _paths
import pytest
from test_layers import OFFLINE_PREFIXES

# the offline stack (the layer contract's list) and the file readers, which share a layer with features/
NOT_RUNTIME = OFFLINE_PREFIXES + ("earlyeval.ingest", "earlyeval.tables")
# adapter -> the framework its import needs (None: none)
ADAPTERS = {
    "earlyeval.integrations": None,
    "earlyeval.integrations.base": None,
    "earlyeval.integrations.config": None,
    "earlyeval.integrations.mini_swe_agent": "minisweagent",
    "earlyeval.integrations.swe_agent": None,
    "earlyeval.integrations.openhands": None,
    "earlyeval.integrations.inspect_ai": "inspect_ai",
    "earlyeval.integrations.inspect_approver": "inspect_ai",
    "earlyeval.integrations.inspect_solvers": "inspect_ai",
}


def loaded_by(module: str) -> list[str]:
    """The earlyeval modules a fresh interpreter holds after ``import module``."""
    code = (
        f"import importlib, json, sys; importlib.import_module({module!r}); "
        "print(json.dumps(sorted(m for m in sys.modules if m == 'earlyeval' or m.startswith('earlyeval.'))))"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(_paths.REPO), os.environ.get("PYTHONPATH", "")]),
    }
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=_paths.REPO
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", sorted(ADAPTERS))
def test_an_adapter_import_loads_the_runtime_only(module):
    framework = ADAPTERS[module]
    if framework is not None and importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed: {module} cannot be imported here")
    mods = loaded_by(module)
    offline = [m for m in mods if m.startswith(NOT_RUNTIME)]
    print(f"{module}: {len(mods)} earlyeval modules")
    assert module in mods
    assert offline == [], f"importing {module} loaded {offline}"


def test_the_check_sees_an_offline_module():
    """The same check on a module of the offline stack finds it (a check that can fail)."""
    mods = loaded_by("earlyeval.ingest")
    assert [m for m in mods if m.startswith(NOT_RUNTIME)]
