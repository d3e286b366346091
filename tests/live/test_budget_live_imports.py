"""The live budget (``earlyeval.live.remaining_budget``) loads none of the offline stack.  Where the budget's other
modules may import from is the layer contract's (tests/test_layers.py: fitting/budget_*, evaluation/budget_*,
report/budget*)."""

from __future__ import annotations

import json
import subprocess
import sys

# The live intervals are earlyeval.live.remaining_budget, on earlyeval.model.spend and earlyeval.model.cqr; the
# estimators are fitting/budget_*, the LOAO, calibration and shipping evaluation/budget_*, budget.json and its plots
# report/budget*.
OFFLINE_EARLYEVAL = [
    "earlyeval.evaluation",
    "earlyeval.report",
    "earlyeval.workflows",
    "earlyeval.app",
    "earlyeval.fitting",
]
OFFLINE = ["pandas", "sklearn", "scipy", "matplotlib", *OFFLINE_EARLYEVAL]


def _loaded(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_live_budget_modules_load_no_offline_stack():
    """With ``earlyeval.model.fastpredict`` stubbed out (it imports lightgbm, which itself imports pandas and
    sklearn), importing the live budget loads none of pandas, sklearn, lightgbm or the offline modules."""
    mods = _loaded(
        "import sys, types\n"
        "stub = types.ModuleType('earlyeval.model.fastpredict'); stub.StackedPredictor = object\n"
        "sys.modules['earlyeval.model.fastpredict'] = stub\n"
        "import earlyeval.live.remaining_budget"
    )
    assert "earlyeval.live.remaining_budget" in mods
    bad = sorted(
        m for m in mods if any(m == b or m.startswith(b + ".") for b in [*OFFLINE, "lightgbm"])
    )
    assert bad == []


def test_live_budget_adds_nothing_heavy_beyond_lightgbm():
    """Unstubbed: whatever pandas/sklearn modules load come with ``import lightgbm`` (via fastpredict), none
    from the budget code, and no offline earlyeval module is imported."""
    base = _loaded("import lightgbm")
    mods = _loaded("import earlyeval.live.remaining_budget")
    extra = mods - base
    assert not [m for m in extra if m.split(".")[0] in ("pandas", "sklearn", "scipy", "matplotlib")]
    assert not [m for m in mods if any(m == b or m.startswith(b + ".") for b in OFFLINE_EARLYEVAL)]
