"""Issue 29 item 7: ``earlyeval score`` gives one answer wherever it runs.

The task table comes from ``--tasks`` or from the model directory's benchmark, found beside the model's
workspace (never in the current folder by default); a model that needs one with no table is refused; the
first summary line and the table count the same halts; ``--format auto`` on a mixed folder refuses and lists
the formats found instead of dropping the other format's runs."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from _monitor_helpers import scoring_fixture
from _paths import FIXTURES
from earlyeval.app.cli import app
from earlyeval.core.errors import ScoreRefusedError
from earlyeval.model.modeldir import save_model_dir
from earlyeval.report.score_table import score_table
from earlyeval.tables.store import write_tasks
from earlyeval.workflows.export import export_runs
from earlyeval.workflows.score import score_runs
from earlyeval.workflows.score_options import IN_PROCESS, ScoreOptions
from earlyeval.workflows.score_checks import detect_format


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    """A workspace: models/synth (a tiny gold+prior model) and data/synth/tasks.parquet; 36 runs elsewhere."""
    base = tmp_path_factory.mktemp("one")
    tasks, bundle, runs = scoring_fixture()
    root = base / "ws"
    model = save_model_dir(bundle, root / "models" / "synth")
    (root / "data" / "synth").mkdir(parents=True)
    write_tasks(tasks.values(), root / "data" / "synth" / "tasks.parquet")
    loose = save_model_dir(bundle, base / "loose-model")  # a model directory outside any workspace
    export_runs(runs, base / "atif", fmt="atif")
    elsewhere = base / "elsewhere"
    elsewhere.mkdir()
    return {"root": root, "model": model, "loose": loose, "runs": base / "atif", "tasks": tasks, "base": base,
            "elsewhere": elsewhere}


@pytest.fixture(autouse=True)
def _no_env_workspace(monkeypatch):
    monkeypatch.delenv("EARLYEVAL_HOME", raising=False)


def _score(ws, model, out, **kw):
    in_process = {k: kw.pop(k) for k in IN_PROCESS if k in kw}
    paths = score_runs(model, ws["runs"], ScoreOptions("atif", out=ws["base"] / out, force=True, **kw), progress=False,
                       **in_process)
    return json.loads(paths["score"].read_text())


def _halts(rep):
    return [(r["run_id"], r["halt_t"], r["predicted"]) for r in rep["per_run"]]


def test_score_from_another_folder_gives_the_same_answer(ws, monkeypatch):
    monkeypatch.chdir(ws["root"])
    here = _score(ws, ws["model"], "o-here")
    monkeypatch.chdir(ws["elsewhere"])
    there = _score(ws, ws["model"], "o-there")
    assert here["n_halted"] > 0 and there["n_halted"] == here["n_halted"] and _halts(there) == _halts(here)
    table = str(ws["root"] / "data" / "synth" / "tasks.parquet")
    assert here["task_table"] == there["task_table"] == {"source": table, "tasks": 12}


def test_a_model_that_needs_tasks_without_a_table_is_refused(ws, monkeypatch):
    monkeypatch.chdir(ws["root"])  # even from the workspace: the model directory is not in one
    with pytest.raises(ScoreRefusedError, match=r"no task table for the model's benchmark\(s\) synth: its .*gold.* --tasks"):
        _score(ws, ws["loose"], "o-none")
    assert not (ws["base"] / "o-none").exists()
    r = CliRunner().invoke(app, ["score", "-m", str(ws["loose"]), "--runs", str(ws["runs"]), "-f", "atif",
                                 "--out", str(ws["base"] / "o-none2")])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "no task table" in r.stderr, r.output


def test_the_tasks_option_gives_the_table(ws, monkeypatch):
    monkeypatch.chdir(ws["elsewhere"])
    table = ws["root"] / "data" / "synth" / "tasks.parquet"
    r = CliRunner().invoke(app, ["score", "-m", str(ws["loose"]), "--runs", str(ws["runs"]), "-f", "atif",
                                 "--out", str(ws["base"] / "o-cli"), "--tasks", str(table), "--force"])
    assert r.exit_code == 0, r.output
    rep = json.loads((ws["base"] / "o-cli" / "score.json").read_text())
    assert rep["task_table"] == {"source": str(table), "tasks": 12}
    assert _halts(rep) == _halts(_score(ws, ws["model"], "o-ref"))


def test_the_first_line_and_the_table_count_the_same_halts(ws):
    """Half the tasks are missing from the table: those runs lack their gold patch (context "partial", never
    halted). The agent block's halted fraction is the monitor's halts, the number on the first line."""
    half = {k: v for i, (k, v) in enumerate(sorted(ws["tasks"].items())) if i % 2 == 0}
    rep = _score(ws, ws["loose"], "o-half", tasks=half)
    full = _score(ws, ws["loose"], "o-full", tasks=ws["tasks"])
    off = [r for r in full["per_run"] if r["halted"] and r["task_id"] not in half]
    assert off, "the fixture must have runs that halt with their task and lose it here"
    (blk,) = rep["agents"].values()  # one agent (the folder name)
    assert blk["n_runs"] == rep["n_labelled"] == 36
    assert round(blk["halted_fraction"] * blk["n_runs"]) == rep["n_halted"] < full["n_halted"]
    assert rep["policy_consistent"] is True
    assert f"{rep['n_halted']} halted" in score_table(rep).splitlines()[0]


def _mixed(tmp_path):
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    mini = FIXTURES / "export-atif" / "mini-swe-agent" / "trajs" / "toy__repo-1" / "toy__repo-1.traj.json"
    shutil.copy(mini, mixed / "toy__repo-1.traj.json")
    (mixed / "toy__repo-2.traj.json").write_text(mini.read_text().replace("toy__repo-1", "toy__repo-2"))
    shutil.copy(FIXTURES / "swe-agent-traj" / "astropy__astropy-1.traj", mixed / "astropy__astropy-1.traj")
    return mixed


def test_format_auto_on_a_mixed_folder_refuses_and_lists_the_formats(ws, tmp_path):
    mixed = _mixed(tmp_path)
    with pytest.raises(ScoreRefusedError, match=r"several formats \(mini-swe-agent-v1: 2 sampled .*swe-agent-traj: 1 "
                                                r"sampled file\(s\), e.g. 'astropy__astropy-1.traj'\)"):
        detect_format(mixed, [])
    r = CliRunner().invoke(app, ["score", "-m", str(ws["model"]), "--runs", str(mixed), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "several formats" in r.stderr, r.output
    assert not (tmp_path / "o").exists()
