"""`earlyeval score`: replaying runs through the Monitor gives the offline evaluation's numbers."""

from __future__ import annotations

import json
from pathlib import Path

import _paths
import numpy as np
import pytest
from _monitor_helpers import HEADLINE, both_sides, offline_policy, scoring_fixture

from earlyeval.fitting.metrics import apply_policy
from earlyeval.model.modeldir import save_model_dir
from earlyeval.report.score_table import score_table
from earlyeval.workflows.export import export_runs
from earlyeval.workflows.score import read_runs, run_specs, score_runs
from earlyeval.workflows.score_options import ScoreOptions

FIXTURES = _paths.FIXTURES


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("score")
    # both sides halt, by construction
    tasks, bundle, runs = scoring_fixture(min_halt_step=2, need=(both_sides,))
    model = save_model_dir(bundle, base / "model")
    export_runs(runs, base / "atif", fmt="atif")
    bad = base / "atif" / "broken__trial" / "agent"
    bad.mkdir(parents=True)
    (bad / "trajectory.json").write_text("{ not json")
    return {"model": model, "bundle": bundle, "tasks": tasks, "runs": base / "atif", "base": base}


def test_replay_equals_offline_evaluation(setup):
    paths = score_runs(
        setup["model"],
        setup["runs"],
        ScoreOptions("atif", out=setup["base"] / "out"),
        tasks=setup["tasks"],
        progress=False,
    )
    rep = json.loads(paths["score"].read_text())
    th = rep["thresholds"]
    assert (
        rep["n_trajectories"] == 36 and rep["n_labelled"] == 36 and rep["policy_consistent"] is True
    )
    trajs, _, _ = read_runs(run_specs(setup["runs"], "atif"))
    rs, off = offline_policy(setup["bundle"], trajs, setup["tasks"], th)
    ((agent, blk),) = rep["agents"].items()
    for k in HEADLINE:
        if off[k] is None:
            assert blk[k] is None, k
        else:
            assert blk[k] == pytest.approx(off[k], abs=1e-12), k
    assert (
        0 < blk["halted_fraction"] < 1 and blk["halted_as_success"] + blk["halted_as_failure"] > 0
    )
    t_halt, pred = apply_policy(rs, th["success"], th["failure"], th["min_halt_step"])
    by_id = {r["run_id"]: r for r in rep["per_run"]}
    for rid, t, p, a in zip(rs.run_ids, t_halt, pred, rs.p_s):
        r = by_id[rid]
        assert (r["halt_t"] or 0) == t
        assert r["predicted"] == (None if not t else ("success" if p == 1 else "failure"))
        np.testing.assert_allclose(r["p_success"], a, atol=1e-12, rtol=0)


def test_skipped_files_are_listed_with_reasons(setup):
    paths = score_runs(
        setup["model"],
        setup["runs"],
        ScoreOptions("atif", out=setup["base"] / "out2"),
        tasks=setup["tasks"],
        progress=False,
    )
    rep = json.loads(paths["score"].read_text())
    assert any("broken__trial" in s["file"] and s["reason"] for s in rep["skipped"])
    text = score_table(rep)
    assert "skipped" in text and "atif" in text and "saved%" in text  # agent = the folder name


def test_unlabelled_runs_then_labels_from_a_label_file(setup):
    out = setup["base"] / "swe"
    # the model's own task table (a model that needs one is refused without it, issue 29): the fixture's tasks are not in it
    rep = json.loads(
        score_runs(
            setup["model"],
            FIXTURES / "swe-agent-traj",
            ScoreOptions("swe-agent-traj", out=out),
            progress=False,
            tasks=setup["tasks"],
        )["score"].read_text()
    )
    assert rep["n_trajectories"] == 2 and rep["n_labelled"] == 0 and "agents" not in rep
    assert len(rep["skipped"]) == 4 and all(s["reason"] for s in rep["skipped"])
    assert all(r["p_success"] and r["outcome"] is None for r in rep["per_run"])
    assert "no labels" in score_table(rep)
    rep2 = json.loads(
        score_runs(
            setup["model"],
            FIXTURES / "swe-agent-traj",
            ScoreOptions(
                "swe-agent-traj",
                out=out,
                labels="resolved-list:final_report.json",
                agent="my-agent",
            ),
            progress=False,
            tasks=setup["tasks"],
        )["score"].read_text()
    )
    assert rep2["n_labelled"] == 2 and list(rep2["agents"]) == ["my-agent"]
    # the fixture's tasks are not in the model's benchmark
    assert any("no gold patch" in w for w in rep2["warnings"])


def test_cli_score_prints_table_and_path(setup, monkeypatch):
    from typer.testing import CliRunner

    from earlyeval.app.cli import app
    from earlyeval.workflows import score as score_mod

    real = score_mod.score_runs
    monkeypatch.setattr(
        score_mod, "score_runs", lambda *a, **k: real(*a, **k, tasks=setup["tasks"], progress=False)
    )
    out = setup["base"] / "cli"
    r = CliRunner().invoke(
        app,
        [
            "score",
            "--model",
            str(setup["model"]),
            "--runs",
            str(setup["runs"]),
            "--format",
            "atif",
            "--out",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "atif" in r.output and "saved%" in r.output and str(out / "score.json") in r.output


def test_unknown_format_is_refused(setup):
    from earlyeval.core.errors import IngestError

    with pytest.raises(IngestError, match="unknown format"):
        score_runs(
            setup["model"],
            setup["runs"],
            ScoreOptions("no-such-format", out=setup["base"] / "x"),
            progress=False,
        )


def test_halt_on_failure_scores_what_a_live_adapter_saves(setup):
    """--halt-on failure: the predicted-failure halts of the default (both) and none of its success halts;
    score.json records the mode and its metrics are the policy's under policy.halting_pair."""
    both = json.loads(
        score_runs(
            setup["model"],
            setup["runs"],
            ScoreOptions("atif", out=setup["base"] / "both"),
            tasks=setup["tasks"],
            progress=False,
        )["score"].read_text()
    )
    fail = json.loads(
        score_runs(
            setup["model"],
            setup["runs"],
            ScoreOptions("atif", out=setup["base"] / "fail", halt_on="failure"),
            tasks=setup["tasks"],
            progress=False,
        )["score"].read_text()
    )
    assert (
        both["halt_on"] == "both"
        and fail["halt_on"] == "failure"
        and fail["policy_consistent"] is True
    )
    pb = {r["run_id"]: r for r in both["per_run"]}
    pf = {r["run_id"]: r for r in fail["per_run"]}
    # the fixture has success halts to drop
    assert any(r["predicted"] == "success" for r in pb.values())
    assert all(r["predicted"] in (None, "failure") for r in pf.values())
    for rid, r in pf.items():
        if pb[rid]["predicted"] == "failure":
            assert (r["halt_t"], r["predicted"]) == (pb[rid]["halt_t"], "failure")
    ((a, blk),) = fail["agents"].items()
    assert (
        blk["halted_as_success"] == 0
        and blk["halted_as_failure"] >= both["agents"][a]["halted_as_failure"]
    )


def test_cli_halt_on_is_checked(setup):
    from typer.testing import CliRunner

    from earlyeval.app.cli import app

    r = CliRunner().invoke(
        app,
        [
            "score",
            "--model",
            str(setup["model"]),
            "--runs",
            str(setup["runs"]),
            "--format",
            "atif",
            "--halt-on",
            "sometimes",
        ],
    )
    assert (
        r.exit_code == 2
        and "--halt-on: 'sometimes' is not one of failure, success, both" in r.output
    )


def test_the_public_batch_entry_point_returns_one_row_per_run(setup):
    """earlyeval.score(...) -> DataFrame: the rows of per_run.csv, unknowns NaN, paths in attrs."""
    import earlyeval

    frame = earlyeval.score(
        setup["model"],
        setup["runs"],
        format="atif",
        out=setup["base"] / "api",
        tasks=setup["tasks"],
    )
    rep = json.loads(Path(frame.attrs["score_json"]).read_text())
    assert len(frame) == rep["n_trajectories"] == 36 and list(frame["run_id"]) == [
        r["run_id"] for r in rep["per_run"]
    ]
    by_id = {r["run_id"]: r for r in rep["per_run"]}
    for row in frame.itertuples():
        r = by_id[row.run_id]
        assert row.steps == r["n_steps"]
        assert np.isnan(row.halted_step) if not r["halted"] else row.halted_step == r["halt_t"]
        assert row.true_label == {1: "success", 0: "failure"}[r["outcome"]]
    assert frame["halted_step"].notna().any() and frame["halted_step"].isna().any()
    assert frame["steps"].dtype.kind in "if" and Path(frame.attrs["per_run_csv"]).exists()


def test_shadow_mode_halts_nothing_and_lists_the_would_be_wrong_halts(setup):
    """score --mode shadow: the same decisions as halting, step by step, but nothing halted; its metrics are what
    halting would have done, and every would-be halt whose prediction contradicts the graded outcome is listed
    under its agent (issue 41 item 5)."""

    def scored(name, **kw):
        paths = score_runs(
            setup["model"],
            setup["runs"],
            ScoreOptions("atif", out=setup["base"] / name, **kw),
            tasks=setup["tasks"],
            progress=False,
        )
        return json.loads(paths["score"].read_text())

    live, shadow = scored("live", mode="halt"), scored("shadow", mode="shadow")
    assert live["mode"] == "halt" and shadow["mode"] == "shadow"
    assert shadow["n_halted"] == 0 and shadow["n_would_halt"] == live["n_halted"] > 0
    assert shadow["savings"] is None and shadow["would_have_saved"]["runs"] == 36
    by_id = {r["run_id"]: r for r in live["per_run"]}
    wrong = set()
    for r in shadow["per_run"]:
        l = by_id[r["run_id"]]
        assert (r["halt_t"], r["predicted"], r["p_success"]) == (
            l["halt_t"],
            l["predicted"],
            l["p_success"],
        )
        assert r["shadow"] is r["halted"]  # a halt in shadow mode is a would-be halt, flagged
        if r["halted"] and (r["predicted"] == "success") != bool(r["outcome"]):
            wrong.add(r["run_id"])
    ((agent, blk),) = shadow["shadow"]["agents"].items()
    assert {w["run_id"] for w in blk["wrong"]} == wrong and blk["n_wrong"] == len(wrong)
    assert blk["would_halt"] == live["n_halted"] and blk["labelled_runs"] == 36
    assert shadow["agents"][agent]["halted_accuracy"] == live["agents"][agent]["halted_accuracy"]
    assert "shadow mode: nothing halted" in score_table(shadow)
    with pytest.raises(ValueError, match="--mode"):
        ScoreOptions("atif", mode="maybe")
    with pytest.raises(ValueError, match="shadow"):
        ScoreOptions("atif", mode="shadow", pass_replay=True)
