"""`earlyeval score` a user can trust: refuses when nothing was read, flags runs the model trained on,
reports tokens and dollars (unknown stays None), writes a per-run CSV, explains its columns, and its
what-if frontier is the one policy and metric set."""

from __future__ import annotations

import csv
import dataclasses
import json
import logging
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from _monitor_helpers import make_runs, scoring_fixture
from typer.testing import CliRunner

from earlyeval.app.cli import app
from earlyeval.app.stages.train import training_identity
from earlyeval.config.catalog import data_root
from earlyeval.core.errors import NothingScoredError
from earlyeval.core.trajectory import Action, Trajectory, make_step
from earlyeval.fitting.metrics import apply_policy, outcome_metrics
from earlyeval.fitting.warm import halting_policy, runset_of
from earlyeval.model.modeldir import save_model_dir
from earlyeval.model.overlap import training_overlap
from earlyeval.report.score_table import score_table
from earlyeval.workflows.export import export_runs
from earlyeval.workflows.score import read_runs, run_specs, score_runs
from earlyeval.workflows.score_csv import CSV_COLUMNS
from earlyeval.workflows.score_options import ScoreOptions
from earlyeval.workflows.score_usage import usage_of

SWE_AGENT_RUNS = "swebench/runs/lite__swe-agent__gpt4"  # 275 real SWE-agent runs
LIVE_RUNS = "swebench/runs/verified__live-swe-agent__mini-v1.14.2__gpt-5-mini__mas-evaluation"  # 15 real runs


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("trust")
    tasks, bundle, runs = scoring_fixture()
    model = save_model_dir(bundle, base / "model")
    export_runs(runs, base / "atif", fmt="atif")
    return {"model": model, "bundle": bundle, "tasks": tasks, "runs": base / "atif", "base": base}


def _score(setup, out, **kw):
    paths = score_runs(
        setup["model"],
        setup["runs"],
        ScoreOptions("atif", out=setup["base"] / out, **kw),
        tasks=setup["tasks"],
        progress=False,
    )
    return json.loads(paths["score"].read_text()), paths


def _cli(args, monkeypatch=None, setup=None):
    if (
        monkeypatch is not None
    ):  # the tiny model's tasks are not an ingested benchmark: hand them in
        from earlyeval.workflows import score as score_mod

        real = score_mod.score_runs
        monkeypatch.setattr(
            score_mod,
            "score_runs",
            lambda *a, **k: real(*a, **k, tasks=setup["tasks"], progress=False),
        )
    return CliRunner().invoke(app, args)


# ------------------------------------------------------------ nothing scored


def _previous_report(out: Path, runs: Path, fmt: str) -> bytes:
    """An earlier scoring of the same runs (one of other runs is refused before the read: test_score_checks)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "score.json").write_text(
        json.dumps({"previous": True, "runs_path": str(runs.resolve()), "format": fmt})
    )
    return (out / "score.json").read_bytes()


def test_empty_folder_is_an_error_and_overwrites_nothing(setup, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "out"
    before = _previous_report(out, empty, "atif")
    with pytest.raises(NothingScoredError, match="no runs read .* no file matches"):
        score_runs(setup["model"], empty, ScoreOptions("atif", out=out), progress=False)
    assert (out / "score.json").read_bytes() == before and not (out / "per_run.csv").exists()
    r = _cli(
        ["score", "-m", str(setup["model"]), "--runs", str(empty), "-f", "atif", "--out", str(out)]
    )
    assert r.exit_code == 2
    assert (
        r.stderr.count("\n") == 1
        and r.stderr.startswith("error: no runs read")
        and "Traceback" not in r.output
    )
    assert (out / "score.json").read_bytes() == before


def test_wrong_format_on_a_real_folder_is_an_error(setup, tmp_path):
    folder = data_root() / SWE_AGENT_RUNS
    if not folder.exists():
        pytest.skip(f"real data absent: {folder}")
    out = tmp_path / "out"
    before = _previous_report(out, folder, "tau2")
    r = _cli(
        [
            "score",
            "-m",
            str(setup["model"]),
            "--runs",
            str(folder),
            "--format",
            "tau2",
            "--out",
            str(out),
        ]
    )
    assert r.exit_code == 2, r.output
    # names the valid ones
    assert (
        r.stderr.count("\n") == 1
        and "as --format tau2" in r.stderr
        and "swe-agent-traj" in r.stderr
    )
    assert "0 runs" not in r.stdout and (out / "score.json").read_bytes() == before


def test_missing_runs_is_a_usage_error(setup, tmp_path):
    r = _cli(["score", "-m", str(setup["model"]), "-f", "atif"])
    assert (
        r.exit_code == 2 and "Missing option '--runs'" in r.output and "Traceback" not in r.output
    )
    r = _cli(["score", "-m", str(setup["model"]), "-f", "atif", "--runs", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "no such file or folder" in r.output
    r = _cli(["score", "-m", str(tmp_path / "nomodel"), "-f", "atif", "--runs", str(setup["runs"])])
    assert r.exit_code == 2 and "not a model directory" in r.output


# ------------------------------------------------------------ training overlap


def test_overlap_by_name_identity_and_run_id(setup):
    runs = make_runs(10, seed=3, agents=("agent-a",))
    bundle = dataclasses.replace(
        setup["bundle"],
        training={
            "agents": dict(Counter(t.agent for t in runs[:5])),
            "agent_identity": training_identity(runs[:5]),
            "run_ids": sorted(t.run_id for t in runs[:5]),
        },
    )
    ov = training_overlap(bundle, runs)
    assert ov["overlap"] and ov["identity_source"] == "manifest"
    a = ov["agents"]["agent-a"]
    assert (
        a["by"] == ["agent name", "run id", "scaffold x model"]
        and a["run_ids_in_training"] == 5
        and a["runs"] == 10
    )
    # another name, same scaffold x model (compared without case and punctuation): still flagged
    renamed = [
        dataclasses.replace(
            t, agent="new-name", run_id="x/" + t.run_id, meta={**t.meta, "scaffold": "Agent_A"}
        )
        for t in runs
    ]
    ov2 = training_overlap(bundle, renamed)
    assert (
        ov2["agents"]["new-name"]["by"] == ["scaffold x model"]
        and "new-name = training agent agent-a" in ov2["warning"]
    )
    other = [
        dataclasses.replace(
            t, agent="other", run_id="o/" + t.run_id, meta={**t.meta, "scaffold": "other"}
        )
        for t in runs
    ]
    assert training_overlap(bundle, other) == {
        "overlap": False,
        "agents": {},
        "identity_source": "manifest",
        "run_ids_recorded": True,
        "content_checked": False,
        "warning": None,
    }


def test_training_identity_is_sorted_and_deterministic():
    runs = make_runs(6, seed=0, agents=("b-agent", "a-agent"))
    ident = training_identity(runs)
    assert list(ident) == ["a-agent", "b-agent"] and ident["a-agent"] == {
        "scaffold": ["a-agent"],
        "model": ["m"],
    }
    assert training_identity(list(reversed(runs))) == ident


def test_scoring_a_training_agents_real_runs_warns(setup, tmp_path, caplog):
    """A tiny model 'trained' on the real live-swe-agent runs (its manifest as train_bench records it):
    scoring them again, even under another agent name, warns on stderr and flags score.json."""
    folder = data_root() / LIVE_RUNS
    if not folder.exists():
        pytest.skip(f"real data absent: {folder}")
    trajs, _, _ = read_runs(run_specs(folder, "mini-swe-agent-v1"))
    assert len(trajs) == 15
    bundle = dataclasses.replace(
        setup["bundle"],
        training={
            "benchmarks": ["synth"],
            "agents": dict(Counter(t.agent for t in trajs)),
            "agent_identity": training_identity(trajs),
            "run_ids": sorted(t.run_id for t in trajs),
        },
    )
    mdir = save_model_dir(bundle, tmp_path / "model")
    with caplog.at_level(logging.WARNING, logger="earlyeval.workflows.score"):
        rep = json.loads(
            score_runs(
                mdir,
                folder,
                ScoreOptions("mini-swe-agent-v1", out=tmp_path / "o", agent="renamed"),
                progress=False,
                tasks={},
            )["score"].read_text()
        )
    ov = rep["training_overlap"]
    assert ov["overlap"] and ov["agents"]["renamed"]["by"] == ["run id", "scaffold x model"]
    assert ov["agents"]["renamed"]["training_agents"] == ["live-swe-agent__gpt-5-mini"]
    assert any("overlap the model's training data" in r.getMessage() for r in caplog.records)
    assert (
        "warning: in-sample: these runs overlap the model's training data (renamed"
        in score_table(rep)
    )
    # dollars: every real run carries its instance cost
    c = rep["savings"]["cost_usd"]
    assert c["runs_known"] == 15 and c["total"] == pytest.approx(
        sum(t.meta["instance_cost"] for t in trajs)
    )


def test_no_overlap_on_the_tiny_model(setup):
    rep, _ = _score(setup, "noov")
    assert (
        rep["training_overlap"]["overlap"] is False and rep["training_overlap"]["warning"] is None
    )


# ------------------------------------------------------------ usage and CSV


def _run(steps_kw, meta=None):
    steps = [
        make_step(k, [Action("bash", "ls")], observation="x", **kw) for k, kw in enumerate(steps_kw)
    ]
    return Trajectory("r/1", "a", "b", "t", steps, 1, meta or {})


def test_usage_unknown_stays_none_and_totals_are_split():
    t = _run(
        [
            {"input_tokens": 10, "output_tokens": 1, "cost_usd": 0.5},
            {"input_tokens": 20, "output_tokens": None, "cost_usd": 0.25},
            {"input_tokens": 30, "output_tokens": 3, "cost_usd": 0.25},
        ]
    )
    u = usage_of(t, 1)
    assert u["input_tokens"] == {"total": 60.0, "spent": 10.0, "saved": 50.0}
    assert u["output_tokens"] is None  # one step without a count: unknown, never 0
    assert u["cost_usd"] == {"total": 1.0, "spent": 0.5, "saved": 0.5, "source": "per-step"}
    assert usage_of(t, None)["cost_usd"]["saved"] == 0.0
    bare = _run([{}, {}, {}, {}])
    assert usage_of(bare, 2) == {"input_tokens": None, "output_tokens": None, "cost_usd": None}
    pro = usage_of(_run([{}, {}, {}, {}], {"instance_cost": 2.0}), 1)["cost_usd"]
    assert pro["source"] == "instance-total-pro-rata" and pro["saved"] == pytest.approx(1.5)


def test_savings_and_csv(setup):
    rep, paths = _score(setup, "csv")
    sv = rep["savings"]
    halted = [r for r in rep["per_run"] if r["halted"]]
    assert halted and sv["cost_usd"]["runs_known"] == 36 and sv["input_tokens"]["runs_known"] == 36
    assert (
        sv["cost_usd"]["saved"]
        == pytest.approx(sum(r["usage"]["cost_usd"]["saved"] for r in halted))
        and sv["cost_usd"]["saved"] > 0
    )
    assert "36/36 runs have costs" in score_table(rep)
    with open(paths["csv"]) as f:
        rows = list(csv.DictReader(f))
    assert (
        tuple(rows[0]) == CSV_COLUMNS
        and len(rows) == 36
        and rep["per_run_csv"] == str(paths["csv"])
    )
    by = {r["run_id"]: r for r in rep["per_run"]}
    for row in rows:
        r = by[row["run_id"]]
        assert row["halted_step"] == (str(r["halt_t"]) if r["halted"] else "")
        assert row["true_label"] == {1: "success", 0: "failure"}[r["outcome"]]
        assert row["recorded_outcome"] == (r["predicted"] if r["halted"] else row["true_label"])
        assert float(row["cost_usd_saved"]) == pytest.approx(r["usage"]["cost_usd"]["saved"])
    other = setup["base"] / "elsewhere.csv"
    _, p2 = _score(setup, "csv2", csv=other)
    assert p2["csv"] == other and other.exists()


# ------------------------------------------------------------ thresholds, what-if, table


def test_thresholds_are_recorded_with_their_source(setup):
    rep, _ = _score(setup, "th-model")
    assert (
        rep["thresholds_source"] == "model"
        and rep["thresholds"]["success"] == setup["bundle"].thresholds["success"]
    )
    rep2, _ = _score(setup, "th-over", thresholds=(0.95, 0.99))
    assert rep2["thresholds_source"] == "override" and (
        rep2["thresholds"]["success"],
        rep2["thresholds"]["failure"],
    ) == (0.95, 0.99)
    assert rep2["model_thresholds"] == rep["model_thresholds"] and rep2["policy_consistent"] is True
    (blk,) = rep2["agents"].values()
    assert blk["thresholds"] == {"success": 0.95, "failure": 0.99}
    assert "(override)" in score_table(rep2).splitlines()[0]


def test_what_if_is_the_policy_and_metrics_at_each_point(setup):
    rep, _ = _score(setup, "whatif", what_if_taus=[0.6, 0.7, 0.8, 0.9, 10.0])
    w = rep["what_if"]
    assert len(w["grid"]) == 25 and w["runs"] == 36
    trajs, _, _ = read_runs(run_specs(setup["runs"], "atif"))
    order = {t.run_id: t for t in trajs}
    recs = {r["run_id"]: r for r in rep["per_run"]}
    ts = [order[r] for r in recs]
    rs = runset_of(
        ts,
        [
            dict(
                recs[t.run_id],
                p_success=[np.nan if x is None else x for x in recs[t.run_id]["p_success"]],
                p_failure=[np.nan if x is None else x for x in recs[t.run_id]["p_failure"]],
            )
            for t in ts
        ],
        halting_policy(setup["bundle"]),
    )
    for row in w["grid"]:
        t_halt, pred = apply_policy(rs, row["tau_s"], row["tau_f"], 1)
        m = outcome_metrics(rs.y, rs.T, t_halt, pred, rs.in_tokens, rs.out_tokens)
        for k in (
            "halted_accuracy",
            "steps_saved",
            "steps_saved_task_skip",
            "steps_saved_in_run",
            "resolve_rate_shift_pp",
        ):
            assert row[k] == pytest.approx(m[k]) if m[k] is not None else row[k] is None, k
    never = next(r for r in w["grid"] if r["tau_s"] == 10.0 and r["tau_f"] == 10.0)
    assert (
        never["halted_fraction"] == 0 and never["steps_saved"] == 0 and never["cost_usd_saved"] == 0
    )
    f = w["frontier"]
    assert f and all(a["steps_saved"] <= b["steps_saved"] for a, b in zip(f, f[1:]))
    assert all(a["outcome_accuracy"] >= b["outcome_accuracy"] for a, b in zip(f, f[1:]))
    assert "what-if: savings/accuracy frontier" in score_table(rep)


def test_what_if_at_the_model_thresholds_equals_the_report(setup):
    th = setup["bundle"].thresholds
    rep, _ = _score(setup, "whatif2", what_if_taus=[th["success"], th["failure"]])
    row = next(
        r
        for r in rep["what_if"]["grid"]
        if r["tau_s"] == th["success"] and r["tau_f"] == th["failure"]
    )
    (blk,) = rep["agents"].values()
    for k in (
        "halted_fraction",
        "halted_accuracy",
        "outcome_accuracy",
        "steps_saved",
        "steps_saved_task_skip",
        "steps_saved_in_run",
    ):
        assert row[k] == pytest.approx(blk[k]), k


def test_legend_explains_every_column(setup):
    rep, _ = _score(setup, "legend")
    text = score_table(rep)
    hdr = next(l for l in text.splitlines() if l.startswith("agent "))
    cols = hdr.split()[1:]
    assert {"hAcc%", "oAcc%", "skip%", "inrun%"} <= set(cols)
    legend = next(l for l in text.splitlines() if l.startswith("columns:"))
    for c in cols:
        assert re.search(rf"(: |; ){re.escape(c)} = [a-zA-Z(]", legend), c


def test_loao_table_has_a_legend_too():
    from earlyeval.report.reporting import loao_table

    blk = {
        "n_runs": 10,
        "resolve_rate": 0.5,
        "auroc_success": 0.8,
        "halted_fraction": 0.2,
        "halted_accuracy": 1.0,
        "outcome_accuracy": 1.0,
        "steps_saved": 0.1,
        "resolve_rate_shift_pp": 0.0,
    }
    text = loao_table(
        {"agents": {"a": {**blk, "thresholds": {"success": 0.9, "failure": 0.95}}}, "pooled": blk}
    )
    hdr = text.splitlines()[0]
    legend = next(l for l in text.splitlines() if l.startswith("columns:"))
    for c in hdr.split()[1:]:
        assert f"{c} = " in legend, c


def test_cli_json_thresholds_and_what_if(setup, monkeypatch):
    out = setup["base"] / "cli-json"
    r = _cli(
        [
            "score",
            "-m",
            str(setup["model"]),
            "--runs",
            str(setup["runs"]),
            "-f",
            "atif",
            "--out",
            str(out),
            "--json",
            "--thresholds",
            "0.95,0.99",
            "--what-if-grid",
            "0.7,0.9,10",
        ],
        monkeypatch,
        setup,
    )
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep == json.loads((out / "score.json").read_text())
    assert rep["thresholds_source"] == "override" and len(rep["what_if"]["grid"]) == 9
    r = _cli(
        [
            "score",
            "-m",
            str(setup["model"]),
            "--runs",
            str(setup["runs"]),
            "-f",
            "atif",
            "--out",
            str(out),
            "--what-if",
        ]
    )
    assert r.exit_code == 0, r.output
    from earlyeval.evaluation.evaluate import GRID

    n = len(GRID)  # the tiny model records no selection grid: evaluate's default one
    assert f"what-if: savings/accuracy frontier over {n}x{n} thresholds" in r.stdout
    for bad in (["--thresholds", "0.4,0.9"], ["--thresholds", "x"], ["--what-if-grid", "0.2,0.9"]):
        r = _cli(
            [
                "score",
                "-m",
                str(setup["model"]),
                "--runs",
                str(setup["runs"]),
                "-f",
                "atif",
                "--out",
                str(out),
                *bad,
            ]
        )
        assert (
            r.exit_code == 2
            and "Error: Invalid value for" in r.output
            and "Traceback" not in r.output
        ), bad
