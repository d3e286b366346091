"""The budget package's structure: the live path loads none of it, the modules form a strict order, no lazy imports."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import earlyeval.budget

PKG = Path(earlyeval.budget.__file__).parent
# the budget maths, bottom to top (docs/architecture.md lists them): a module may import only modules before it.
# The live intervals are earlyeval.live.budget, on earlyeval.model.budget and earlyeval.model.cqr (the runtime
# imports nothing of this package); the LOAO, calibration and shipping earlyeval.evaluation.budget*; budget.json
# and its plots earlyeval.report.budget*.
ORDER = ["config", "targets", "quantiles", "baseline", "stopping", "online"]
OFFLINE_EARLYEVAL = [
    "earlyeval.evaluation",
    "earlyeval.report",
    "earlyeval.workflows",
    "earlyeval.app",
    "earlyeval.budget",
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
        "import earlyeval.live.budget"
    )
    assert "earlyeval.live.budget" in mods
    bad = sorted(
        m for m in mods if any(m == b or m.startswith(b + ".") for b in [*OFFLINE, "lightgbm"])
    )
    assert bad == []


def test_live_budget_adds_nothing_heavy_beyond_lightgbm():
    """Unstubbed: whatever pandas/sklearn modules load come with ``import lightgbm`` (via fastpredict), none
    from the budget code, and no offline earlyeval module is imported."""
    base = _loaded("import lightgbm")
    mods = _loaded("import earlyeval.live.budget")
    extra = mods - base
    assert not [m for m in extra if m.split(".")[0] in ("pandas", "sklearn", "scipy", "matplotlib")]
    assert not [m for m in mods if any(m == b or m.startswith(b + ".") for b in OFFLINE_EARLYEVAL)]


def _imports(path: Path) -> tuple[list[str], list[int]]:
    """(modules of earlyeval.budget imported at module level, line numbers of imports inside functions)."""
    tree = ast.parse(path.read_text())
    top, nested = [], []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            top.append((node.module or "").split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "earlyeval.budget."
        ):
            top.append(node.module.split(".")[2])
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nested += [
                n.lineno for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))
            ]
    return top, nested


def test_budget_modules_import_only_downwards_and_never_lazily():
    files = sorted(p.stem for p in PKG.glob("*.py") if p.stem != "__init__")
    assert sorted(ORDER) == files, (
        "a new budget module must be placed in ORDER (and the package docstring)"
    )
    for i, m in enumerate(ORDER):
        top, nested = _imports(PKG / f"{m}.py")
        assert nested == [], f"budget/{m}.py imports inside a function at lines {nested}"
        upward = [t for t in top if t not in ORDER[:i]]
        assert upward == [], f"budget/{m}.py imports {upward}, which are not below it"
        src = (PKG / f"{m}.py").read_text()
        assert (
            "earlyeval.app" not in src
            and "earlyeval.live" not in src
            and "earlyeval.evaluation" not in src
        )
    # the check reads real imports: stopping imports targets, quantiles imports config and targets
    assert _imports(PKG / "quantiles.py")[0] and "targets" in _imports(PKG / "stopping.py")[0]
    body = ast.parse((PKG / "__init__.py").read_text()).body
    imported = [n.module for n in body if isinstance(n, ast.ImportFrom)]
    assert imported == ["earlyeval.core.extras"] and not [
        n for n in body if isinstance(n, ast.Import)
    ], (
        "budget/__init__.py is its docstring and its extra's check only (imports none of its modules)"
    )


def test_every_budget_module_is_under_500_lines():
    from test_layers import LONG_MODULES  # the package's one list of modules allowed past 500 lines

    assert {
        p.name: n
        for p in PKG.glob("*.py")
        if (n := len(p.read_text().splitlines())) > 500
        and f"earlyeval.budget.{p.stem}" not in LONG_MODULES
    } == {}
