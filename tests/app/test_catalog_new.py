"""``earlyeval catalog new`` (issue 42): a starter catalog from a folder of agents' runs, on the hand-written
fixtures: formats sniffed, one agent per sub-folder, label files found (with the option they need) and checked;
the catalog it writes loads and ingests with labels."""

from __future__ import annotations

import shutil

import _paths
import pytest
from typer.testing import CliRunner

from earlyeval.app.cli import app
from earlyeval.config.catalog import load_catalog
from earlyeval.ingest import ingest_catalog

FIXTURES = _paths.FIXTURES


@pytest.fixture
def runs(tmp_path):
    """runs/<agent>/ for three agents: CodeR (trailing-comma labels), Moatless (harness lists), tau2 (inline);
    plus an agent whose folder has runs and no label file."""
    r = tmp_path / "runs"
    shutil.copytree(FIXTURES / "coder-traj", r / "coder")
    shutil.copytree(FIXTURES / "moatless-transitions", r / "moatless")
    (r / "tau2").mkdir()
    shutil.copy(FIXTURES / "tau2" / "shop_2025.json", r / "tau2" / "shop_2025.json")
    (r / "nolabels" / "trajs").mkdir(parents=True)
    for f in (FIXTURES / "moatless-transitions" / "trajs").iterdir():
        shutil.copy(f, r / "nolabels" / "trajs" / f.name)
    return r


def _new(ws, *args):
    return CliRunner().invoke(app, ["--workspace", str(ws), "catalog", "new", *args])


def test_catalog_new_writes_a_catalog_that_loads_and_ingests_labelled(runs, tmp_path):
    ws = tmp_path / "ws"
    r = _new(ws, "mine", "--runs", str(runs))
    assert r.exit_code == 0, r.output
    cat = load_catalog(ws / "data" / "mine.toml")
    by = {s.agent: s for s in cat.runs}
    assert sorted(by) == ["coder", "moatless", "nolabels", "tau2"]
    assert (by["coder"].format, by["moatless"].format, by["tau2"].format) == (
        "coder-traj",
        "moatless-transitions",
        "tau2",
    )
    coder = by["coder"].labels[0]
    assert (coder.format, coder.path, coder.options) == (
        "harness-lists",
        "results.json",
        {"trailing_commas": True},
    )
    assert (by["moatless"].labels[0].format, by["moatless"].labels[0].path) == (
        "harness-lists",
        "result.json",
    )
    assert by["tau2"].labels[0].format == "inline" and not by["nolabels"].labels
    assert "no label file found for nolabels" in r.output
    trajs, reports = ingest_catalog(cat, runs, show_progress=False)
    labelled = {t.meta["run"] for t in trajs if t.outcome is not None}
    assert labelled == {"coder", "moatless", "tau2"}, [x.to_dict() for x in reports]


def test_catalog_new_refuses_what_it_cannot_write(runs, tmp_path):
    ws = tmp_path / "ws"
    assert _new(ws, "mine", "--runs", str(runs)).exit_code == 0
    again = _new(ws, "mine", "--runs", str(runs))
    assert again.exit_code == 2 and "give --force" in again.stderr
    assert _new(ws, "mine", "--runs", str(runs), "--force").exit_code == 0
    empty = tmp_path / "empty"
    (empty / "a").mkdir(parents=True)
    (empty / "a" / "notes.txt").write_text("no run here")
    r = _new(ws, "other", "--runs", str(empty))
    assert r.exit_code == 2 and "no known format reads" in r.stderr
    assert not (ws / "data" / "other.toml").exists()
    r = _new(ws, "../x", "--runs", str(runs))
    assert r.exit_code == 2 and "'NAME': '../x' is not a benchmark name" in r.stderr
    r = _new(ws, "x", "--runs", str(tmp_path / "nosuch"))
    assert r.exit_code == 2 and "no such folder" in r.stderr
