"""tools/structure.py, the structure numbers of issue 44: the static counts read a checkout's own layer table and
see a planted upward import and a planted cycle; the walk records each package function at its first call only,
skips module-level code, and counts a return for every stay in a module the walk already left."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

from _paths import REPO


def _tool():
    spec = importlib.util.spec_from_file_location("structure_tool", REPO / "tools" / "structure.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _checkout(root: Path, files: dict[str, str]) -> Path:
    """A checkout with this repository's layer contract and a tiny ``earlyeval`` package."""
    (root / "tests").mkdir(parents=True)
    shutil.copy(REPO / "tests" / "test_layers.py", root / "tests" / "test_layers.py")
    for rel, text in {
        "earlyeval/__init__.py": "",
        "earlyeval/core/__init__.py": "",
        "earlyeval/config/__init__.py": "",
        **files,
    }.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_static_numbers_of_a_clean_tree_and_of_planted_faults(tmp_path):
    st = _tool()
    clean = {
        "earlyeval/core/a.py": "X = 1\n",
        "earlyeval/config/b.py": "from earlyeval.core.a import X\n",
    }
    n = st.static_numbers(_checkout(tmp_path / "clean", clean))
    assert (n["files"], n["folders"], n["module_arrows"], n["folder_arrows"]) == (5, 2, 1, 1)
    assert n["upward_arrows"] == 0 and n["cycles"] == 0
    assert n["layers"] == len(st._layer_contract(REPO).LAYERS)
    bad = {
        **clean,
        "earlyeval/core/c.py": "def f():\n    from earlyeval.config import b\n",  # core imports config
        "earlyeval/core/d.py": "from earlyeval.core import e\n",
        "earlyeval/core/e.py": "from earlyeval.core import d\n",
    }
    n = st.static_numbers(_checkout(tmp_path / "bad", bad))
    assert n["upward_arrows"] == 1 and n["cycles"] == 1 and n["module_arrows"] == 4


def test_the_real_package_has_no_upward_arrow_and_no_cycle():
    n = _tool().static_numbers(REPO)
    assert n["upward_arrows"] == 0 and n["cycles"] == 0 and n["files"] > 100


def test_walk_counts_stays_and_returns():
    st = _tool()
    walk = st.walk_of(["a", "a", "b", "a", "c", "c", "b"])
    assert walk == ["a", "b", "a", "c", "b"]
    assert st.walk_numbers(walk) == {
        "visits": 5,
        "modules": 3,
        "returns": 2,
        "returns_share": 0.4,
    }
    assert st.return_pairs(walk) == {("b", "a"): 1, ("c", "b"): 1}
    assert st.walk_numbers(["a", "b", "c"])["returns"] == 0  # straight down


def test_first_calls_records_each_function_once_and_skips_module_code(tmp_path):
    st = _tool()
    pkg = tmp_path / "walkpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "low.py").write_text("def one():\n    return 1\n\ndef two():\n    return 2\n")
    (pkg / "high.py").write_text(
        "from walkpkg import low\n\n"
        "def run():\n"
        "    for _ in range(3):\n"
        "        low.one()\n"
        "    import walkpkg.late  # module code run on the way: not part of the walk\n"
        "    low.two()\n"
        "    return walkpkg.late.three()\n"
    )
    (pkg / "late.py").write_text("def three():\n    return 3\n\nTHREE = three()\n")
    sys.path.insert(0, str(tmp_path))
    try:
        from walkpkg import high

        rec = st.FirstCalls(pkg, lambda rel: rel.removesuffix(".py").replace("/", "."))
        assert rec.run(high.run) == 3
    finally:
        sys.path.remove(str(tmp_path))
        for m in [m for m in sys.modules if m.startswith("walkpkg")]:
            del sys.modules[m]
    # run (high), one (low), two (low), three (late: its call during the import is module code, skipped)
    assert rec.modules == ["walkpkg.high", "walkpkg.low", "walkpkg.low", "walkpkg.late"]
    assert st.walk_of(rec.modules) == ["walkpkg.high", "walkpkg.low", "walkpkg.late"]
