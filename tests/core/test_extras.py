"""The optional extras (issue 30 item 4): the core install is the runtime, every folder of the offline stack says
which extra it needs in one line, and ``earlyeval/core/extras.py`` agrees with pyproject.toml.

Each missing-extra case runs in a fresh interpreter with the extra's module blocked (``sys.modules[name] = None``,
which makes its import fail as an uninstalled one would); tools/smoke_installed.sh installs the core alone for real
and runs a Monitor on the shipped model there."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib

import _paths
import pytest

from earlyeval.core.errors import MissingExtraError
from earlyeval.core.extras import EXTRAS, require

REPO = _paths.REPO
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
DIST_OF = {"sklearn": "scikit-learn"}  # import name -> distribution name where they differ


def _dists(reqs: list[str]) -> set[str]:
    return {re.split(r"[=<>!~ ;\[]", r, maxsplit=1)[0].lower() for r in reqs}


def test_extras_match_pyproject_and_the_core_holds_none_of_them():
    extras = PYPROJECT["optional-dependencies"]
    for extra, modules in EXTRAS.items():
        declared = _dists(extras[extra])
        assert {DIST_OF.get(m, m) for m in modules} <= declared, (extra, modules, declared)
    core = _dists(PYPROJECT["dependencies"])
    # scipy: lightgbm's own dependency
    offline = {DIST_OF.get(m, m) for ms in EXTRAS.values() for m in ms} - {"scipy"}
    assert not core & offline, core & offline
    assert _dists(extras["all"]) == {"earlyeval"} and all(
        e in extras["all"][0] for e in ("train", "cli", "plots", "dask")
    )


def test_require_names_the_extra_and_what_needs_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(MissingExtraError) as e:
        require("train", "the thing")
    assert e.value.extra == "train" and e.value.modules == ["sklearn"]
    assert str(e.value) == (
        "the thing needs the [train] extra, which is not installed (missing: sklearn): "
        "make install, or pip install '.[train]' in the earlyeval repository"
    )
    require("cli", "the command")  # installed here: nothing raised


def _blocked(modules: tuple[str, ...], code: str) -> subprocess.CompletedProcess:
    pre = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-c", pre + code],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )


@pytest.mark.parametrize(
    "module, extra",
    [
        ("earlyeval.fitting.estimator", "train"),
        ("earlyeval.fitting.budget_quantiles", "train"),
        ("earlyeval.evaluation.evaluate", "train"),
        ("earlyeval.workflows.score", "train"),
        ("earlyeval.tables.store", "train"),
        ("earlyeval.report.reporting", "train"),
        ("earlyeval.features.text", "train"),
    ],
)
def test_the_offline_stack_without_train_is_one_error_naming_it(module, extra):
    r = _blocked(EXTRAS[extra], f"import {module}")
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert (
        last.startswith("earlyeval.core.errors.MissingExtraError: ") and f"[{extra}] extra" in last
    ), r.stderr[-800:]


def test_the_runtime_needs_no_extra(tmp_path):
    """With every extra blocked, the Monitor, the pass, the adapters' base and config, and every step reader
    (``earlyeval.steps``: the adapters build their steps with them) import."""
    blocked = tuple(m for ms in EXTRAS.values() for m in ms if m != "scipy")
    code = (
        "import importlib, pkgutil\n"
        "import earlyeval, earlyeval.live.monitor, earlyeval.live.benchpass, earlyeval.integrations.base, "
        "earlyeval.integrations.config, earlyeval.steps\n"
        "readers = [m.name for m in pkgutil.iter_modules(earlyeval.steps.__path__)]\n"
        "assert len(readers) > 10, readers\n"
        "for name in readers:\n"
        "    importlib.import_module('earlyeval.steps.' + name)\n"
        "from earlyeval import Monitor, Decision, EarlyStopper\nprint('ok')"
    )
    r = _blocked(blocked, code)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-1500:]


def test_the_command_without_cli_and_a_verb_without_train_are_one_line():
    r = _blocked(
        ("typer",),
        "import runpy; sys.argv = ['earlyeval', '--help']; runpy.run_module('earlyeval', run_name='__main__')",
    )
    assert r.returncode == 1 and r.stderr.strip() == (
        "earlyeval: the earlyeval command needs the [cli] extra, which is "
        "not installed (missing: typer): make install, or pip install '.[cli]' in the "
        "earlyeval repository"
    )
    r = _blocked(
        ("sklearn",),
        "import runpy; sys.argv = ['earlyeval', 'train', '--bench', 'swebench']; "
        "runpy.run_module('earlyeval', run_name='__main__')",
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-1500:]
    assert "[train] extra" in r.stderr and "pip install '.[train]'" in r.stderr, r.stderr[-800:]


def _guards(path) -> set[str]:
    """The extras a module's own ``require(...)`` calls at module level name."""
    out = set()
    for node in ast.parse(path.read_text()).body:
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", "") == "require"
        ):
            out.add(node.value.args[0].value)
    return out


def test_every_module_that_imports_an_extra_is_guarded_by_it():
    """A module importing an extra's package at module level calls ``require`` for that extra first, itself or in
    one of its packages' ``__init__``; so a new import of pandas in the runtime cannot slip in unannounced.
    (scipy is lightgbm's own dependency, hence in every install; dask is guarded by ``--scheduler``'s own check.)"""
    provider = {m: e for e, ms in EXTRAS.items() for m in ms if m != "scipy" and e != "dask"}
    pkg = REPO / "earlyeval"
    missing = []
    for path in sorted(pkg.rglob("*.py")):
        tops = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                tops |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                tops.add(node.module.split(".")[0])
        needed = {provider[t] for t in tops if t in provider}
        if not needed:
            continue
        have = set(_guards(path))
        for parent in path.relative_to(pkg).parents:
            init = pkg / parent / "__init__.py"
            if init.exists() and init != path:
                have |= _guards(init)
        if needed - have:
            missing.append(
                f"{path.relative_to(REPO)}: imports {sorted(t for t in tops if t in provider)}, "
                f"no require({sorted(needed - have)})"
            )
    assert not missing, "\n".join(missing)
