"""Issue 29 item 7: ``earlyeval score`` gives one answer wherever it runs.

The task table comes from ``--tasks`` or from the model directory's benchmark, found beside the model's
workspace (never in the current folder by default); a model that needs one with no table is refused; the
first summary line and the table count the same halts; ``--format auto`` on a mixed folder scores each run
with its own format, says how many of each, and names the files no format reads: nothing is dropped silently."""

from __future__ import annotations

import csv
import json
import shutil

import pytest
from _monitor_helpers import scoring_fixture
from _paths import FIXTURES
from typer.testing import CliRunner

from earlyeval.app.cli import app
from earlyeval.core.errors import ScoreRefusedError
from earlyeval.model.modeldir import save_model_dir
from earlyeval.report.score_table import score_table
from earlyeval.tables.store import write_tasks
from earlyeval.workflows.export import export_runs
from earlyeval.workflows.score import score_runs
from earlyeval.workflows.score_checks import detect_format
from earlyeval.workflows.score_options import IN_PROCESS, ScoreOptions


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
    return {
        "root": root,
        "model": model,
        "loose": loose,
        "runs": base / "atif",
        "tasks": tasks,
        "base": base,
        "elsewhere": elsewhere,
    }


@pytest.fixture(autouse=True)
def _no_env_workspace(monkeypatch):
    monkeypatch.delenv("EARLYEVAL_HOME", raising=False)


def _score(ws, model, out, **kw):
    in_process = {k: kw.pop(k) for k in IN_PROCESS if k in kw}
    paths = score_runs(
        model,
        ws["runs"],
        ScoreOptions("atif", out=ws["base"] / out, force=True, **kw),
        progress=False,
        **in_process,
    )
    return json.loads(paths["score"].read_text())


def _halts(rep):
    return [(r["run_id"], r["halt_t"], r["predicted"]) for r in rep["per_run"]]


def test_score_from_another_folder_gives_the_same_answer(ws, monkeypatch):
    monkeypatch.chdir(ws["root"])
    here = _score(ws, ws["model"], "o-here")
    monkeypatch.chdir(ws["elsewhere"])
    there = _score(ws, ws["model"], "o-there")
    assert (
        here["n_halted"] > 0
        and there["n_halted"] == here["n_halted"]
        and _halts(there) == _halts(here)
    )
    table = str(ws["root"] / "data" / "synth" / "tasks.parquet")
    assert here["task_table"] == there["task_table"] == {"source": table, "tasks": 12}


def test_a_model_that_needs_tasks_without_a_table_is_refused(ws, monkeypatch):
    monkeypatch.chdir(ws["root"])  # even from the workspace: the model directory is not in one
    with pytest.raises(
        ScoreRefusedError,
        match=r"no task table for the model's benchmark\(s\) synth: its .*gold.* --tasks",
    ):
        _score(ws, ws["loose"], "o-none")
    assert not (ws["base"] / "o-none").exists()
    r = CliRunner().invoke(
        app,
        [
            "score",
            "-m",
            str(ws["loose"]),
            "--runs",
            str(ws["runs"]),
            "-f",
            "atif",
            "--out",
            str(ws["base"] / "o-none2"),
        ],
    )
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "no task table" in r.stderr, r.output


def test_the_tasks_option_gives_the_table(ws, monkeypatch):
    monkeypatch.chdir(ws["elsewhere"])
    table = ws["root"] / "data" / "synth" / "tasks.parquet"
    r = CliRunner().invoke(
        app,
        [
            "score",
            "-m",
            str(ws["loose"]),
            "--runs",
            str(ws["runs"]),
            "-f",
            "atif",
            "--out",
            str(ws["base"] / "o-cli"),
            "--tasks",
            str(table),
            "--force",
        ],
    )
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
    mini = (
        FIXTURES
        / "export-atif"
        / "mini-swe-agent"
        / "trajs"
        / "toy__repo-1"
        / "toy__repo-1.traj.json"
    )
    shutil.copy(mini, mixed / "toy__repo-1.traj.json")
    (mixed / "toy__repo-2.traj.json").write_text(
        mini.read_text().replace("toy__repo-1", "toy__repo-2")
    )
    shutil.copy(
        FIXTURES / "swe-agent-traj" / "astropy__astropy-1.traj", mixed / "astropy__astropy-1.traj"
    )
    return mixed


def test_format_auto_on_a_mixed_folder_scores_each_run_with_its_own_format(ws, tmp_path):
    """2 mini-swe-agent files and 1 SWE-agent file (whose glob, *.traj*, lists the mini files too) plus a file
    no format reads: all 3 runs are scored, each as its own format, and the stray file is skipped by name."""
    mixed = _mixed(tmp_path)
    (mixed / "notes.traj.json").write_text('{"hello": 1}')
    r = CliRunner().invoke(
        app, ["score", "-m", str(ws["model"]), "--runs", str(mixed), "--out", str(tmp_path / "o")]
    )
    assert r.exit_code == 0, r.output
    rep = json.loads((tmp_path / "o" / "score.json").read_text())
    assert (
        rep["format"] == "mixed" and rep["format_detected"] is True and rep["n_trajectories"] == 3
    )
    assert rep["formats"] == {"mini-swe-agent-v1": 2, "swe-agent-traj": 1}
    by_task = {x["task_id"]: x["format"] for x in rep["per_run"]}
    assert by_task == {
        "toy__repo-1": "mini-swe-agent-v1",
        "toy__repo-2": "mini-swe-agent-v1",
        "astropy__astropy-1": "swe-agent-traj",
    }
    # nothing else dropped: the three runs are read, the stray file is named
    (stray,) = rep["skipped"]
    assert (
        stray["file"].endswith("notes.traj.json") and "no format recognises it" in stray["reason"]
    )
    assert rep["format_detection"]["run_files"] == {"mini-swe-agent-v1": 2, "swe-agent-traj": 1}
    with (tmp_path / "o" / "per_run.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert sorted(x["format"] for x in rows) == [
        "mini-swe-agent-v1",
        "mini-swe-agent-v1",
        "swe-agent-traj",
    ]
    first, second = r.stdout.splitlines()[:2]
    assert (
        first.startswith("3 runs (")
        and "mini-swe-agent-v1 2, swe-agent-traj 1" in first
        and "1 files skipped" in first
    )
    assert (
        second
        == "format: mixed (--format auto): mini-swe-agent-v1 2 runs, swe-agent-traj 1 run, each read as its own format"
    )
    with pytest.raises(
        ScoreRefusedError,
        match=r"several formats \(mini-swe-agent-v1: 2 file\(s\).*swe-agent-traj: 1 ",
    ):
        # a caller that reads one format is told, not handed the majority's
        detect_format(mixed, [])


def test_format_auto_sniffs_every_file_however_few_of_the_other_format(ws, tmp_path):
    """11 mini-swe-agent files and 1 SWE-agent file: all 12 sniffed (no sample) and scored, each as its own format."""
    mixed = _mixed(tmp_path)
    mini = (mixed / "toy__repo-1.traj.json").read_text()
    for i in range(3, 12):
        (mixed / f"toy__repo-{i}.traj.json").write_text(
            mini.replace("toy__repo-1", f"toy__repo-{i}")
        )
    paths = score_runs(ws["model"], mixed, ScoreOptions("auto", out=tmp_path / "o"), progress=False)
    rep = json.loads(paths["score"].read_text())
    assert (
        rep.get("formats") == {"mini-swe-agent-v1": 11, "swe-agent-traj": 1}
        and rep["skipped"] == []
    )
    assert sorted(x["task_id"] for x in rep["per_run"] if x["task_id"].startswith("astropy")) == [
        "astropy__astropy-1"
    ]
    from earlyeval.workflows.score_checks import (
        detect_formats,  # new with the sniffing: here, so the rest runs before it
    )

    found = detect_formats(mixed, [])
    assert {f: len(u) for f, u in found.units.items()} == {
        "mini-swe-agent-v1": 11,
        "swe-agent-traj": 1,
    }
    assert found.files_sniffed == 12 and found.skipped == []
