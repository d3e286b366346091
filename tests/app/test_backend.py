"""One backend interface (issue 31 item 3): the stages call ``workflows.backend.Backend`` and never ask which one they
have; ``InProcess`` and ``scale.backend.DaskBackend`` both implement it, with the protocol's parameters."""

from __future__ import annotations

import ast
import inspect

import _paths
import pytest

from earlyeval.workflows.backend import Backend, InProcess

STAGES = (
    *sorted(
        str(p.relative_to(_paths.REPO))
        for d in ("stages", "verbs")
        for p in (_paths.REPO / "earlyeval" / "app" / d).glob("*.py")
    ),
    "earlyeval/evaluation/evaluate.py",
    "earlyeval/evaluation/fold_runner.py",
    "earlyeval/evaluation/holdout_groups.py",
    "earlyeval/evaluation/loao_report.py",
    "earlyeval/evaluation/protocols.py",
    "earlyeval/app/cli.py",
    "earlyeval/app/scale_bench.py",
    "earlyeval/app/scale_measure.py",
    "earlyeval/app/scale_report.py",
)


def _methods(cls: type) -> dict[str, list[str]]:
    return {
        n: list(inspect.signature(f).parameters)
        for n, f in vars(cls).items()
        if callable(f) and not n.startswith("_")
    }


def test_both_backends_implement_the_protocol_with_its_parameters():
    want = {n: p for n, p in _methods(Backend).items()}
    assert set(want) == {
        "ingest",
        "dataset",
        "featurize",
        "featurized",
        "runners",
        "train_runner",
        "shipped_budget",
        "replay",
    }
    assert isinstance(InProcess(), Backend)
    assert {n: p for n, p in _methods(InProcess).items() if n in want} == want
    pytest.importorskip("distributed")
    from earlyeval.scale.backend import DaskBackend

    got = _methods(DaskBackend)
    assert {n: got[n] for n in want} == want


def test_the_stages_never_ask_which_backend_they_have():
    """No ``cluster``/``backend``/``runners`` compared with None, and no ``cluster`` parameter, in the stages (the
    nine ``if cluster is None`` branches of issue 31 are gone); a planted one is caught."""

    def branches(src: str) -> list[int]:
        out = []
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Compare) and any(
                isinstance(o, (ast.Is, ast.IsNot)) for o in node.ops
            ):
                names = [n for n in [node.left, *node.comparators] if isinstance(n, ast.Name)]
                if any(n.id in ("cluster", "backend", "runners", "cl", "back") for n in names):
                    out.append(node.lineno)
            if isinstance(node, ast.arg) and node.arg == "cluster":
                out.append(node.lineno)
        return out

    found = {f: branches((_paths.REPO / f).read_text()) for f in STAGES}
    assert not any(found.values()), found
    assert branches("def f(ds, cluster=None):\n    return 1 if cluster is None else 2\n") == [1, 2]
