"""`earlyeval score --pass`: a folder replayed as one benchmark pass in simulated time (issue 28 item 1)."""

from __future__ import annotations

import csv
import json

import _paths  # noqa: F401
import pytest
from _monitor_helpers import both_sides, make_runs, make_tasks, quantile_thresholds, train_bundle

from earlyeval.core.decision import HALTING_CONTEXTS
from earlyeval.live.benchpass import audited, certify_pass
from earlyeval.live.monitor import Monitor
from earlyeval.model.modeldir import save_model_dir
from earlyeval.model.policy import gated_pair
from earlyeval.workflows.export import export_runs
from earlyeval.workflows.score import read_runs, run_specs, score_runs
from earlyeval.workflows.score_options import ScoreOptions
from earlyeval.workflows.score_pass import pass_order, replay_pass
from earlyeval.workflows.score_usage import usage_of


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("score_pass")
    tasks = make_tasks(12)
    bundle, _, _ = train_bundle(make_runs(80, seed=0), tasks)
    runs = make_runs(40, seed=11, agents=("agent-a",))
    bundle.thresholds = quantile_thresholds(
        bundle, runs, tasks, min_halt_step=2, need=(both_sides,)
    )
    model = save_model_dir(bundle, base / "model")
    export_runs(runs, base / "atif", fmt="atif")
    return {"model": model, "tasks": tasks, "runs": base / "atif", "base": base}


def _audit_probs(r: dict) -> list:
    """An audited run's probabilities as the pass keeps them: gated as the rule reads them (policy.gated_pair)."""
    ok = r.get("context", "full") in HALTING_CONTEXTS
    return [
        gated_pair(a, b, t, g) if ok else None
        for t, (a, b, g) in enumerate(zip(r["p_success"], r["p_failure"], r["gates"]), start=1)
    ]


@pytest.mark.parametrize("workers", [1, 8])
def test_no_statistic_used_for_run_i_reads_a_run_not_finished_before_it_started(setup, workers):
    trajs, _, _ = read_runs(run_specs(setup["runs"], "atif"))
    mon = Monitor.load(setup["model"])
    seen: dict[str, set[str]] = {}
    # a lax error target (0.8) so that ~20 audit runs move the thresholds: the check below is not vacuous
    records, p = replay_pass(
        mon,
        trajs,
        setup["tasks"],
        "",
        None,
        audit_share=0.6,
        seed=3,
        workers=workers,
        usage_of=usage_of,
        on_spawn=lambda rid, start, fin: seen.__setitem__(rid, fin),
        alpha=0.5,
        max_error=0.8,
    )
    assert set(seen) == {t.run_id for t in trajs}
    by_id = {r["run_id"]: r for r in records}
    base = [mon.rule.success, mon.rule.failure]
    moved = overlapped = 0
    for r in records:
        before = {q["run_id"] for q in records if q["pass_finish"] <= r["pass_start"]}
        # exactly the runs finished by its start time were in the Pass when its monitor was spawned
        assert seen[r["run_id"]] == before, r["run_id"]
        # and its thresholds are the certification of those runs' graded audits alone
        graded = [
            {"outcome": by_id[q]["outcome"], "probs": _audit_probs(by_id[q])}
            for q in sorted(before)
            if by_id[q]["audited"] and by_id[q]["outcome"] is not None
        ]
        want = (
            certify_pass(graded, tuple(base), mon.rule.min_halt_step, 0.5, 0.8)["pair"]
            if graded
            else base
        )
        assert r["pass_thresholds"] == pytest.approx(want, rel=1e-12), r["run_id"]
        moved += r["pass_thresholds"] != base
        # started while a run handed out earlier was still running
        overlapped += len(before) < r["pass_order"]
    assert moved > 0
    assert (overlapped > 0) == (workers > 1)
    assert p.summary()["n_finished"] == len(trajs)


def _score(setup, out, **kw):
    paths = score_runs(
        setup["model"],
        setup["runs"],
        ScoreOptions("atif", out=setup["base"] / out, **kw),
        tasks=setup["tasks"],
        progress=False,
    )
    return json.loads(paths["score"].read_text()), paths


def test_the_pass_replay_is_deterministic_and_its_audited_runs_are_never_halted(setup):
    kw = dict(pass_replay=True, audit_share=0.3, seed=5, pass_workers=8)
    rep1, paths = _score(setup, "p1", **kw)
    rep2, _ = _score(setup, "p2", **kw)
    assert rep1["pass"] == rep2["pass"] and rep1["pass"] is not None
    assert [(r["run_id"], r["pass_start"], r["halt_t"]) for r in rep1["per_run"]] == [
        (r["run_id"], r["pass_start"], r["halt_t"]) for r in rep2["per_run"]
    ]
    ids = [r["run_id"] for r in rep1["per_run"]]
    aud = [r for r in rep1["per_run"] if r["audited"]]
    assert {r["run_id"] for r in aud} == {i for i in ids if audited(5, i, 0.3)} and aud
    assert not any(r["halted"] for r in aud)
    # the same model does halt the others
    assert any(r["halted"] for r in rep1["per_run"] if not r["audited"])
    ps = rep1["pass"]
    assert (
        ps["n_audited"] == len(aud)
        and ps["workers"] == 8
        and ps["seed"] == 5
        and ps["audit_share"] == 0.3
    )
    assert rep1["policy_consistent"] is True and rep1["thresholds_source"] == "pass"
    (blk,) = rep1["agents"].values()
    assert blk["audited_runs"] == len(aud) and "warm_runs" not in blk
    # audited runs count at full cost: every one of their steps is spent
    spent = sum(r["halt_t"] if r["halted"] else r["n_steps"] for r in rep1["per_run"])
    assert ps["savings"]["steps_total"] - ps["savings"]["steps_saved"] == spent
    assert ps["savings"]["steps_total"] == sum(r["n_steps"] for r in rep1["per_run"])
    assert all(r["usage"]["cost_usd"] is None or r["usage"]["cost_usd"]["saved"] == 0 for r in aud)
    rows = list(csv.DictReader(paths["csv"].open()))
    assert {r["run_id"] for r in rows if r["audited"] == "1"} == {r["run_id"] for r in aud}
    trajs, _, _ = read_runs(run_specs(setup["runs"], "atif"))
    assert pass_order(trajs, 5) != pass_order(trajs, 6)  # the seed sets the order


def test_a_cold_pass_gives_the_halts_of_a_plain_score(setup):
    plain, _ = _score(setup, "plain")
    cold, _ = _score(setup, "cold", pass_replay=True, audit_share=0.0, pass_workers=1)
    halts = lambda rep: {r["run_id"]: (r["halt_t"], r["predicted"]) for r in rep["per_run"]}  # noqa: E731
    assert halts(cold) == halts(plain) and any(h for h, _ in halts(plain).values())
    assert cold["pass"]["n_audited"] == 0 and cold["pass"]["thresholds_history"] == []
    assert cold["n_halted"] == plain["n_halted"]


def test_the_cli_passes_the_pass_options_and_prints_the_pass_line(setup, monkeypatch):
    from typer.testing import CliRunner

    from earlyeval.app.cli import app
    from earlyeval.config import workspace
    from earlyeval.workflows import score as score_mod

    real = score_mod.score_runs
    monkeypatch.setattr(
        score_mod, "score_runs", lambda *a, **k: real(*a, **k, tasks=setup["tasks"], progress=False)
    )
    out = setup["base"] / "cli"
    try:
        r = CliRunner().invoke(
            app,
            [
                "--workspace",
                str(setup["base"] / "ws"),
                "score",
                "-m",
                str(setup["model"]),
                "--runs",
                str(setup["runs"]),
                "-f",
                "atif",
                "--out",
                str(out),
                "--pass",
                "--audit-share",
                "0.3",
                "--seed",
                "5",
                "--pass-workers",
                "8",
            ],
        )
        bad = CliRunner().invoke(
            app,
            [
                "--workspace",
                str(setup["base"] / "ws"),
                "score",
                "-m",
                str(setup["model"]),
                "--runs",
                str(setup["runs"]),
                "-f",
                "atif",
                "--out",
                str(out),
                "--force",
                "--pass",
                "--warm-start",
                "3",
            ],
        )
    finally:
        workspace.set_workspace(None)
    assert r.exit_code == 0, r.output
    ps = json.loads((out / "score.json").read_text())["pass"]
    assert (ps["seed"], ps["workers"], ps["audit_share"]) == (5, 8, 0.3)
    assert "pass: seed 5, 8 workers" in r.output and "audited runs at full cost" in r.output
    assert bad.exit_code == 2 and "--warm-start" in bad.stderr


@pytest.mark.parametrize("bad", [{"audit_share": 1.5}, {"pass_workers": 0}, {"warm_start": 2}])
def test_bad_pass_options_are_refused_before_the_read(setup, bad):
    out = setup["base"] / f"bad-{sorted(bad)[0]}"
    with pytest.raises(ValueError, match="--audit-share|--pass-workers|--warm-start"):
        _score(setup, out.name, pass_replay=True, **bad)
    assert not (out / "score.json").exists()
