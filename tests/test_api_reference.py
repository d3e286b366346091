"""`make docs`: the API reference builds from the docstrings with no warning (mkdocs strict mode), names every
public entry point, and a planted bad docstring fails the build (so a warning-free build means something)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from _error_classes import FLOW_SIGNALS, exception_classes
from _paths import REPO

PUBLIC = [
    "earlyeval.live.monitor.Monitor",
    "earlyeval.core.decision.Decision",
    "earlyeval.workflows.score_api.score",
    "earlyeval.integrations.base.EarlyStopper",
    "earlyeval.integrations.base.ToolCall",
    "earlyeval.integrations.base.build_step",
    "earlyeval.core.trajectory.Step",
    "earlyeval.core.errors",
    "earlyeval.live.benchpass.Pass",
    "earlyeval.ingest.one_run.read_run",
]


def _build(root: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_api_reference_builds_without_a_warning(tmp_path):
    r = _build(REPO, tmp_path / "site")
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "WARNING" not in out, out[-3000:]
    pages = "\n".join(p.read_text() for p in (REPO / "docs" / "api").glob("*.md"))
    assert [n for n in PUBLIC if f"::: {n}" not in pages] == []
    html = (tmp_path / "site" / "score" / "index.html").read_text()
    # the numpydoc sections were rendered
    assert "DataFrame" in html and "NothingScoredError" in html
    errors = (tmp_path / "site" / "errors" / "index.html").read_text()
    classes = [c for c in exception_classes() if c.__qualname__ not in FLOW_SIGNALS]
    assert len(classes) >= 19
    assert [
        c.__qualname__ for c in classes if f'id="{c.__module__}.{c.__qualname__}"' not in errors
    ] == []


def test_the_facade_exports_the_public_types():
    """`from earlyeval import Decision, EarlyStopper, ToolCall, EarlyEvalError`: the very classes the reference
    documents; `import earlyeval` still loads neither the live stack nor the integrations."""
    probe = (
        "import sys, earlyeval; from earlyeval.core.decision import Decision; from earlyeval.core.errors import "
        "EarlyEvalError; assert earlyeval.Decision is Decision and earlyeval.EarlyEvalError is EarlyEvalError; "
        "print(sorted(m for m in sys.modules if m.startswith(('earlyeval.live', 'earlyeval.integrations'))))"
    )
    r = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr
    import earlyeval
    from earlyeval.integrations.base import EarlyStopper, ToolCall
    from earlyeval.live.benchpass import Pass

    assert (
        earlyeval.EarlyStopper is EarlyStopper
        and earlyeval.ToolCall is ToolCall
        and earlyeval.Pass is Pass
    )
    assert {
        "Decision",
        "EarlyStopper",
        "ToolCall",
        "EarlyEvalError",
        "Monitor",
        "Pass",
        "score",
    } <= set(earlyeval.__all__)
    assert all(hasattr(earlyeval, n) for n in earlyeval.__all__)


def test_a_bad_docstring_fails_the_build(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(REPO / "docs" / "api", root / "docs" / "api")
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(
        REPO / "earlyeval", root / "earlyeval", ignore=shutil.ignore_patterns("__pycache__")
    )
    api = root / "earlyeval" / "workflows" / "score_api.py"
    # a parameter documented that the signature does not have: griffe warns, strict mode fails
    api.write_text(
        api.read_text().replace("    runs : str or Path\n", "    runz : str or Path\n", 1)
    )
    r = _build(root, tmp_path / "site")
    assert r.returncode != 0 and "runz" in r.stdout + r.stderr
