"""The live path is light (issue 16 item 6): ``import earlyeval.live.monitor``, ``Monitor.load`` and ``observe``
load neither pandas nor scikit-learn (nor the lightgbm package, whose import pulls both in), nor scipy
and pyarrow (issue 25 item 6).

Each check runs in a fresh interpreter, since this test process has long imported everything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import _paths
import pytest
from _monitor_helpers import save_tiny

HEAVY = ("pandas", "sklearn", "lightgbm", "scipy", "pyarrow")
# the package's own code above the runtime (issue 30): never loaded by a monitored process
OFFLINE = (
    "earlyeval.fitting",
    "earlyeval.evaluation",
    "earlyeval.workflows",
    "earlyeval.report",
    "earlyeval.scale",
    "earlyeval.app",
)
ROOT = _paths.REPO


def _run(code: str) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["offline"] == [], f"the runtime loaded fitting or offline code: {got['offline']}"
    return got


_REPORT = (
    "import json, sys; print(json.dumps({'heavy': [m for m in %r if m in sys.modules], 'n': len(sys.modules), "
    "'offline': sorted(m for m in sys.modules if m.startswith(%r))}))" % (HEAVY, OFFLINE)
)


def test_import_monitor_loads_no_pandas_no_sklearn():
    got = _run("import earlyeval.live.monitor\n" + _REPORT)
    assert got["heavy"] == [], got


def _observe_code(model_dir: Path, budget: str) -> str:
    return (
        f"from earlyeval.live.monitor import Monitor\n"
        f"from earlyeval.core.trajectory import Action, make_step\n"
        f"mon = Monitor.load({str(model_dir)!r}, {budget})\n"
        f"assert mon.loaded.predictor_kind == 'c-api', mon.loaded.predictor_kind\n"
        f"mon.start(task={{'task_id': 't0', 'prompt': 'fix the parser in src/app.py', 'gold_patch': None}})\n"
        f"for i in range(5):\n"
        f"    d = mon.observe(make_step(i, [Action('bash', f'python -m pytest tests/test_{{i}}.py')], observation='1 failed, 2 passed'))\n"
        f"    assert d.p_success is not None, d.reason\n" + _REPORT
    )


@pytest.mark.parametrize(
    "families", [("behaviour", "gold", "prior"), ("behaviour", "text", "gold", "prior")]
)
def test_monitor_load_and_observe_outcome_only_stay_light(tmp_path, families):
    """A model dir without budget estimators (what save_tiny writes), text family or not: the whole live loop."""
    path, *_ = save_tiny(tmp_path / "m", families=families, n=60)
    assert not (path / "extra_budget.json").exists()
    got = _run(_observe_code(path, "budget=False"))
    if (
        "text" in families
    ):  # the text family's SVD fit imports scikit-learn at its module's top (see the report)
        pytest.xfail(f"the text family module imports sklearn.decomposition: {got}")
    assert got["heavy"] == [], got


def test_monitor_with_budget_stays_light():
    """The shipped SWE-bench model with its budget estimators (earlyeval.live.remaining_budget): still no pandas/sklearn."""
    model = ROOT / "models" / "swebench"
    if not (model / "extra_budget.json").exists():
        pytest.skip("no trained models/swebench with budget estimators in this checkout")
    got = _run(_observe_code(model, ""))
    assert got["heavy"] == [], got


def test_a_pass_monitor_observe_and_audited_finish_stay_light(tmp_path):
    """issue 28: a Pass (its monitors, a graded audit finish and the certification it triggers) keeps the live path
    free of scipy and pyarrow (the binomial tails are pure math, earlyeval.model.anytime)."""
    path, *_ = save_tiny(tmp_path / "m", n=60)
    code = (
        f"from earlyeval.live.benchpass import Pass\n"
        f"from earlyeval.core.trajectory import Action, make_step\n"
        f"p = Pass.load({str(path)!r}, {str(tmp_path / 'pass.json')!r}, audit_share=1.0, budget=False)\n"
        f"mon = p.monitor('r0')\n"
        f"mon.start(task={{'task_id': 't0', 'prompt': 'fix the parser in src/app.py', 'gold_patch': None}})\n"
        f"for i in range(5):\n"
        f"    d = mon.observe(make_step(i, [Action('bash', f'python -m pytest tests/test_{{i}}.py')], observation='1 failed, 2 passed'))\n"
        f"p.finish('r0', steps=5, tokens=None, cost=None, halted=False, outcome=0)\n"
        f"assert p.history, p.state\n" + _REPORT
    )
    got = _run(code)
    assert got["heavy"] == [], got
